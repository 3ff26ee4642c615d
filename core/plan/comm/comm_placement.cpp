#include "core/plan/comm/comm_placement.h"

#include "core/util/grid.h"
#include "core/util/index.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace routepack {

std::vector<std::int64_t> sample_sent_copies(const CommDemand& c) {
    const auto N = idx(c.N);
    std::vector<std::int64_t> out(idx(c.n) * N, 0);
    for (int i = 0; i < c.n; ++i) {
        std::int64_t* o = out.data() + idx(i) * N;
        for (int l = 0; l < c.L; ++l) {
            const std::int64_t* t = c.at(i, l);
            std::int64_t all = 0;
            for (std::size_t m = 0; m < N; ++m)
                all += t[m];
            for (std::size_t m = 0; m < N; ++m)
                o[m] += all - t[m];
        }
    }
    return out;
}

void set_comm_term(PackingProblem& p, const CommDemand& c, const std::vector<int>& node_of_slot, double weight) {
    if (c.n != p.n) throw std::invalid_argument("set_comm_term: the node demand is for another window");
    if (node_of_slot.size() != static_cast<std::size_t>(p.D))
        throw std::invalid_argument("set_comm_term: node_of_slot is not [D]");
    for (int m : node_of_slot)
        if (m < 0 || m >= c.N) throw std::invalid_argument("set_comm_term: node id out of range");
    if (!(weight >= 0)) throw std::invalid_argument("set_comm_term: weight must be >= 0");
    p.comm_weight = weight;
    p.comm_nodes = c.N;
    p.node_of_slot = node_of_slot;
    p.comm_sent = sample_sent_copies(c);
}

std::vector<int> balanced_home_nodes(const CommDemand& c, std::span<const std::int64_t> length,
                                     const std::vector<int>& node_of_slot, double slack) {
    if (length.size() != static_cast<std::size_t>(c.n))
        throw std::invalid_argument("balanced_home_nodes: length is not [n]");
    if (node_of_slot.empty()) throw std::invalid_argument("balanced_home_nodes: no DP slot");
    const int N = c.N;
    std::vector<int> slots(idx(N), 0);
    for (int m : node_of_slot) {
        if (m < 0 || m >= N) throw std::invalid_argument("balanced_home_nodes: node id out of range");
        ++slots[idx(m)];
    }
    const std::int64_t total = std::accumulate(length.begin(), length.end(), std::int64_t{0});
    std::vector<double> room(idx(N));
    for (int m = 0; m < N; ++m)
        room[idx(m)] =
            static_cast<double>(total) * slots[idx(m)] / static_cast<double>(node_of_slot.size()) * (1.0 + slack);
    // local[i][m] = tokens of sample i with an expert on m, summed over MoE layers.
    Grid<std::int64_t> local(c.n, N, 0);
    for (int i = 0; i < c.n; ++i)
        for (int l = 0; l < c.L; ++l)
            for (int m = 0; m < N; ++m)
                local(i, m) += c.at(i, l)[m];
    std::vector<std::int64_t> margin(idx(c.n), 0);
    for (int i = 0; i < c.n; ++i) {
        std::int64_t best = -1, second = -1;
        for (int m = 0; m < N; ++m) {
            const std::int64_t v = local(i, m);
            if (v > best) {
                second = best;
                best = v;
            } else if (v > second) {
                second = v;
            }
        }
        margin[idx(i)] = N > 1 ? best - second : 0;
    }
    std::vector<int> order(idx(c.n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return margin[idx(a)] > margin[idx(b)]; });
    std::vector<double> used(idx(N), 0.0);
    std::vector<int> home(idx(c.n), 0);
    for (int i : order) {
        const auto t = static_cast<double>(length[idx(i)]);
        int pick = -1;
        for (int m = 0; m < N; ++m) {
            if (used[idx(m)] + t > room[idx(m)]) continue;
            if (pick < 0 || local(i, m) > local(i, pick)) pick = m;
        }
        if (pick < 0) {
            pick = 0;
            for (int m = 1; m < N; ++m)
                if (room[idx(m)] - used[idx(m)] > room[idx(pick)] - used[idx(pick)]) pick = m;
        }
        home[idx(i)] = pick;
        used[idx(pick)] += t;
    }
    return home;
}

Placement comm_aware_placement(const Trace& window, const Topology& topo, const Placement& lpt,
                               std::span<const std::uint64_t> loads, const std::vector<int>& home, double tolerance,
                               const StopToken& stop) {
    const int L = lpt.layers, E = lpt.experts, P = lpt.ep_ranks, N = topo.nodes();
    const std::size_t n = window.size();
    if (home.size() != n) throw std::invalid_argument("comm_aware_placement: home is not [n]");
    for (int m : home)
        if (m < 0 || m >= N) throw std::invalid_argument("comm_aware_placement: home node out of range");
    if (loads.size() != static_cast<std::size_t>(L) * static_cast<std::size_t>(E) ||
        window.stride() != static_cast<std::size_t>(L) * static_cast<std::size_t>(E))
        throw std::invalid_argument("comm_aware_placement: loads or counts are not [L][E]");
    const std::vector<int> rank_node = topo.node_of_rank();
    Placement out = lpt;
    const int H = lpt.slots_per_rank();
    tbb::parallel_for(0, L, [&](int l) {
        // M[e][m]: tokens of samples homed on node m routed to expert e at this layer.
        Grid<std::int64_t> M(E, N, 0);
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t* a = window.counts.data() + i * window.stride() + idx(l) * E;
            for (int e = 0; e < E; ++e)
                M(e, home[i]) += a[e];
        }
        int* slot = out.slot.data() + idx(l) * E;
        const std::uint64_t* ld = loads.data() + idx(l) * E;
        std::vector<std::uint64_t> rank_load(idx(P), 0);
        for (int e = 0; e < E; ++e)
            rank_load[idx(slot[e] / H)] += ld[e];
        const std::uint64_t peak = *std::max_element(rank_load.begin(), rank_load.end());
        const auto bound = static_cast<std::uint64_t>(static_cast<double>(peak) * (1.0 + tolerance));
        auto node_of = [&](int e) { return rank_node[idx(slot[e] / H)]; };
        for (int sweep = 0; sweep < 8; ++sweep) {
            if (stop.stop_requested()) break;
            bool changed = false;
            for (int e = 0; e < E; ++e) {
                const int ne = node_of(e), pe = slot[e] / H;
                std::int64_t best_gain = 0;
                int best_f = -1;
                for (int f = 0; f < E; ++f) {
                    const int nf = node_of(f);
                    if (nf == ne) continue;
                    const std::int64_t gain = M(e, nf) + M(f, ne) - M(e, ne) - M(f, nf);
                    if (gain <= best_gain) continue;
                    const int pf = slot[f] / H;
                    const std::uint64_t a = rank_load[idx(pe)] - ld[e] + ld[f];
                    const std::uint64_t b = rank_load[idx(pf)] - ld[f] + ld[e];
                    if (a > bound || b > bound) continue;
                    best_gain = gain;
                    best_f = f;
                }
                if (best_f < 0) continue;
                const int pf = slot[best_f] / H;
                rank_load[idx(pe)] = rank_load[idx(pe)] - ld[e] + ld[best_f];
                rank_load[idx(pf)] = rank_load[idx(pf)] - ld[best_f] + ld[e];
                std::swap(slot[e], slot[best_f]);
                changed = true;
            }
            if (!changed) break;
        }
    });
    return out;
}

NodePacking pack_on_home_nodes(std::span<const std::int64_t> length, std::int64_t C, int rows,
                               const std::vector<int>& node_of_slot, const std::vector<int>& home) {
    const int n = static_cast<int>(length.size());
    const int D = static_cast<int>(node_of_slot.size());
    if (home.size() != length.size()) throw std::invalid_argument("pack_on_home_nodes: home is not [n]");
    NodePacking out;
    const int K = rows * D;
    // Built cell by cell (samples move between cells below), then stored flat once, also when not
    // fitted (the partial packing, as far as it got).
    std::vector<std::vector<int>> cells(idx(std::max(K, 0)));
    auto finish = [&] {
        out.layout = Layout::from_cells(std::max(rows, 0), D, cells);
        return std::move(out);
    };
    if (rows < 1 || D < 1) return finish();
    std::vector<std::int64_t> tokens(idx(K), 0);
    std::vector<int> order(idx(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return length[idx(a)] > length[idx(b)]; });
    auto node_of_cell = [&](int k) { return node_of_slot[idx(k % D)]; };
    for (int i : order) {
        const std::int64_t t = length[idx(i)];
        int own = -1, any = -1;
        for (int k = 0; k < K; ++k) {
            if (tokens[idx(k)] + t > C) continue;
            if (node_of_cell(k) == home[idx(i)] && (own < 0 || tokens[idx(k)] < tokens[idx(own)])) own = k;
            if (any < 0 || tokens[idx(k)] < tokens[idx(any)]) any = k;
        }
        const int k = own >= 0 ? own : any;
        if (k < 0) return finish(); // fits nowhere: not fitted
        cells[idx(k)].push_back(i);
        tokens[idx(k)] += t;
    }
    for (int k = 0; k < K; ++k) {
        if (!cells[idx(k)].empty()) continue;
        int donor = -1;
        for (int pass = 0; pass < 2 && donor < 0; ++pass)
            for (int j = 0; j < K; ++j) {
                const auto& cj = cells[idx(j)];
                if (cj.size() < 2 || (pass == 0 && node_of_cell(j) != node_of_cell(k))) continue;
                if (donor < 0 || cj.size() > cells[idx(donor)].size()) donor = j;
            }
        if (donor < 0) return finish();
        auto& cd = cells[idx(donor)];
        auto shortest =
            std::min_element(cd.begin(), cd.end(), [&](int a, int b) { return length[idx(a)] < length[idx(b)]; });
        const int i = *shortest;
        cd.erase(shortest);
        tokens[idx(donor)] -= length[idx(i)];
        cells[idx(k)].push_back(i);
        tokens[idx(k)] += length[idx(i)];
    }
    for (int k = 0; k < K; ++k)
        for (int i : cells[idx(k)])
            if (node_of_cell(k) != home[idx(i)]) out.off_node.push_back(i);
    std::sort(out.off_node.begin(), out.off_node.end());
    out.fitted = true;
    return finish();
}

} // namespace routepack
