// Layer-wise expert placement (paper section 3.3, Algorithm 1, eqs. 10 and 22).
#include "core/plan/score/placement.h"

#include "core/util/index.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace routepack {

namespace {

__extension__ typedef unsigned __int128 u128;

void check_shape(int L, int E, int P, const char* who) {
    if (L < 0 || E < 1 || P < 1)
        throw std::invalid_argument(std::string(who) + ": need L >= 0, E >= 1, P >= 1 (got L=" + std::to_string(L) +
                                    ", E=" + std::to_string(E) + ", P=" + std::to_string(P) + ")");
    if (E % P != 0)
        throw std::invalid_argument(std::string(who) + ": " + std::to_string(E) + " experts are not divisible by " +
                                    std::to_string(P) + " EP ranks");
}

} // namespace

/// L[l][e] = sum_i a[i][l][e] (the aggregate of section 3.3). `counts` is [n][L][E] row-major (the
/// Trace layout); the result is [L][E] in 64-bit so that any window sums without overflow.
/// std::invalid_argument when counts.size() != n*L*E.
std::vector<std::uint64_t> aggregate_expert_loads(std::span<const std::uint32_t> counts, std::size_t n, int L, int E) {
    if (L < 0 || E < 0) throw std::invalid_argument("aggregate_expert_loads: negative L or E");
    const std::size_t stride = idx(L) * idx(E);
    if (counts.size() != n * stride)
        throw std::invalid_argument("aggregate_expert_loads: counts hold " + std::to_string(counts.size()) +
                                    " values, expected n*L*E = " + std::to_string(n * stride));
    if (stride == 0 || n == 0) return std::vector<std::uint64_t>(stride, 0);
    // Blocks of samples summed in parallel, each into its own [L][E] partial, streaming the counts
    // in memory order; the partials are added together. Integer sums, so the result does not depend
    // on the split or the worker count.
    using Acc = std::vector<std::uint64_t>;
    return tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, n, 32), Acc(),
        [&](const tbb::blocked_range<std::size_t>& range, Acc acc) {
            if (acc.empty()) acc.assign(stride, 0);
            for (std::size_t i = range.begin(); i != range.end(); ++i) {
                const std::uint32_t* a = counts.data() + i * stride;
                for (std::size_t k = 0; k < stride; ++k)
                    acc[k] += a[k];
            }
            return acc;
        },
        [](Acc a, const Acc& b) {
            if (a.empty()) return b;
            for (std::size_t k = 0; k < b.size(); ++k)
                a[k] += b[k];
            return a;
        });
}

/// pi_l(e) = e for every layer (the `baseline` placement). std::invalid_argument when E % P != 0
/// or a dimension is out of range.
Placement identity_placement(int L, int E, int P) {
    check_shape(L, E, P, "identity_placement");
    Placement pi;
    pi.layers = L;
    pi.experts = E;
    pi.ep_ranks = P;
    pi.slot.resize(idx(L) * E);
    for (int l = 0; l < L; ++l)
        for (int e = 0; e < E; ++e)
            pi.slot[idx(l) * E + e] = e;
    return pi;
}

/// Algorithm 1, applied independently to every MoE layer (layers in parallel). Per layer: experts
/// in argsort(-L[l][e], e) order (heaviest first, ties by smaller logical id); each goes to
/// p = argmin over ranks with n_p < H of (G[l][p], p) and takes slot p*H + n_p (the paper's
/// 1-based slot(p, n_p + 1)); then G[l][p] += L[l][e], n_p += 1. The open ranks are kept in a
/// binary heap on (G_p, p), so a layer costs O(E log E + E log P). `loads` is [L][E]; the result does
/// not depend on the worker count. std::invalid_argument when E % P != 0 or loads.size() != L*E.
Placement lpt_placement(std::span<const std::uint64_t> loads, int L, int E, int P) {
    check_shape(L, E, P, "lpt_placement");
    if (loads.size() != idx(L) * E)
        throw std::invalid_argument("lpt_placement: loads hold " + std::to_string(loads.size()) +
                                    " values, expected L*E = " + std::to_string(idx(L) * E));
    const int H = E / P;
    Placement pi;
    pi.layers = L;
    pi.experts = E;
    pi.ep_ranks = P;
    pi.slot.assign(idx(L) * E, -1);
    tbb::parallel_for(tbb::blocked_range<int>(0, L), [&](const tbb::blocked_range<int>& range) {
        std::vector<int> order(E);
        std::vector<int> filled(P);
        // Open ranks as a binary min-heap on (G_p, p): the argmin over open ranks in O(log P).
        struct Open {
            std::uint64_t g;
            int p;
        };
        std::vector<Open> heap;
        heap.reserve(idx(P));
        const auto after = [](const Open& a, const Open& b) { return a.g != b.g ? a.g > b.g : a.p > b.p; };
        for (int l = range.begin(); l != range.end(); ++l) {
            const std::uint64_t* Ll = loads.data() + idx(l) * E;
            std::iota(order.begin(), order.end(), 0);
            // argsort(-L, e): descending load, ties by ascending logical id (a strict total order).
            std::sort(order.begin(), order.end(), [Ll](int a, int b) {
                if (Ll[a] != Ll[b]) return Ll[a] > Ll[b];
                return a < b;
            });
            std::fill(filled.begin(), filled.end(), 0);
            heap.clear();
            for (int p = 0; p < P; ++p)
                heap.push_back(Open{0, p}); // ascending p with equal G: already a valid heap
            int* out = pi.slot.data() + idx(l) * E;
            for (int e : order) {
                std::pop_heap(heap.begin(), heap.end(), after);
                Open& best = heap.back();
                out[e] = best.p * H + filled[best.p];
                best.g += Ll[e];
                if (++filled[best.p] < H)
                    std::push_heap(heap.begin(), heap.end(), after);
                else
                    heap.pop_back(); // the rank is full
            }
        }
    });
    return pi;
}

/// G[l][p] = sum_{e: owner(pi_l(e)) = p} L[l][e] (eq. 10). `loads` is [L][E] of the placement's
/// L and E; result [L][P]. std::invalid_argument on a size mismatch or a slot out of range.
std::vector<std::uint64_t> rank_loads(std::span<const std::uint64_t> loads, const Placement& pi) {
    const int L = pi.layers, E = pi.experts, P = pi.ep_ranks;
    check_shape(L, E, P, "rank_loads");
    const std::size_t LE = idx(L) * E;
    if (loads.size() != LE || pi.slot.size() != LE)
        throw std::invalid_argument("rank_loads: loads (" + std::to_string(loads.size()) + ") and placement (" +
                                    std::to_string(pi.slot.size()) + ") must both hold L*E = " + std::to_string(LE) +
                                    " values");
    std::vector<std::uint64_t> G(idx(L) * P, 0);
    for (int l = 0; l < L; ++l)
        for (int e = 0; e < E; ++e) {
            const int v = pi.at(l, e);
            if (v < 0 || v >= E)
                throw std::invalid_argument("rank_loads: layer " + std::to_string(l) + " expert " + std::to_string(e) +
                                            " has slot " + std::to_string(v) + " outside 0.." + std::to_string(E - 1));
            G[idx(l) * P + pi.owner(v)] += loads[idx(l) * E + e];
        }
    return G;
}

/// CV_global (eq. 22) = (1/L) sum_l sqrt((1/P) sum_p (G[l][p] - Gbar_l)^2) / Gbar_l with Gbar_l
/// from eq. 21; dimensionless. Computed per layer as sqrt(P * sum G^2 - (sum G)^2) / sum G with
/// the integer part exact in 128 bits (so a perfectly balanced layer gives exactly 0). A layer with
/// zero load contributes 0; L == 0 gives 0. `G` is [L][P]; std::invalid_argument on a size mismatch.
double cv_global(std::span<const std::uint64_t> G, int L, int P) {
    if (L < 0 || P < 1) throw std::invalid_argument("cv_global: need L >= 0 and P >= 1");
    if (G.size() != idx(L) * P)
        throw std::invalid_argument("cv_global: G holds " + std::to_string(G.size()) +
                                    " values, expected L*P = " + std::to_string(idx(L) * P));
    if (L == 0) return 0.0;
    double total = 0.0;
    for (int l = 0; l < L; ++l) {
        const std::uint64_t* g = G.data() + idx(l) * P;
        u128 sum = 0, sumsq = 0;
        bool exact = true;
        for (int p = 0; p < P; ++p) {
            if (g[p] >= (std::uint64_t{1} << 52)) exact = false; // keep P * sum g^2 inside 128 bits
            sum += g[p];
            sumsq += static_cast<u128>(g[p]) * g[p];
        }
        if (sum == 0) continue;
        double cv;
        if (exact) {
            const u128 num = static_cast<u128>(P) * sumsq - sum * sum; // >= 0 by Cauchy-Schwarz
            cv = std::sqrt(static_cast<double>(num)) / static_cast<double>(sum);
        } else {
            long double mean = 0;
            for (int p = 0; p < P; ++p)
                mean += static_cast<long double>(g[p]);
            mean /= P;
            long double var = 0;
            for (int p = 0; p < P; ++p) {
                const long double d = static_cast<long double>(g[p]) - mean;
                var += d * d;
            }
            var /= P;
            cv = static_cast<double>(std::sqrt(var) / mean);
        }
        total += cv;
    }
    return total / L;
}

PlacementComparison compare_placements(std::span<const std::uint64_t> loads, int L, int E, int P) {
    PlacementComparison c;
    c.identity = identity_placement(L, E, P);
    c.lpt = lpt_placement(loads, L, E, P);
    c.rank_loads_identity = rank_loads(loads, c.identity);
    c.rank_loads_lpt = rank_loads(loads, c.lpt);
    c.cv_identity = cv_global(c.rank_loads_identity, L, P);
    c.cv_lpt = cv_global(c.rank_loads_lpt, L, P);
    return c;
}

/// logical[l*E + v] = e with pi_l(e) = v, [L][E] (the physical_to_logical map of serving stacks).
/// std::invalid_argument when some pi_l is not a permutation of 0..E-1.
std::vector<int> physical_to_logical(const Placement& pi) {
    const int L = pi.layers, E = pi.experts;
    if (L < 0 || E < 0 || pi.slot.size() != idx(L) * E)
        throw std::invalid_argument("physical_to_logical: placement holds " + std::to_string(pi.slot.size()) +
                                    " slots, expected L*E");
    std::vector<int> logical(pi.slot.size(), -1);
    for (int l = 0; l < L; ++l)
        for (int e = 0; e < E; ++e) {
            const int v = pi.at(l, e);
            if (v < 0 || v >= E)
                throw std::invalid_argument("physical_to_logical: layer " + std::to_string(l) + " expert " +
                                            std::to_string(e) + " has slot " + std::to_string(v) + " outside 0.." +
                                            std::to_string(E - 1));
            int& dst = logical[idx(l) * E + v];
            if (dst >= 0)
                throw std::invalid_argument("physical_to_logical: layer " + std::to_string(l) + " slot " +
                                            std::to_string(v) + " holds experts " + std::to_string(dst) + " and " +
                                            std::to_string(e));
            dst = e;
        }
    return logical;
}

/// max_p G[l][p] / ((1/P) sum_p G[l][p]) per layer; 1 for a layer with zero load.
std::vector<double> rank_max_over_mean(std::span<const std::uint64_t> G, int L, int P) {
    if (L < 0 || P < 1) throw std::invalid_argument("rank_max_over_mean: need L >= 0 and P >= 1");
    if (G.size() != idx(L) * P)
        throw std::invalid_argument("rank_max_over_mean: G holds " + std::to_string(G.size()) +
                                    " values, expected L*P = " + std::to_string(idx(L) * P));
    std::vector<double> out(L, 1.0);
    for (int l = 0; l < L; ++l) {
        const std::uint64_t* g = G.data() + idx(l) * P;
        std::uint64_t mx = 0;
        long double sum = 0;
        for (int p = 0; p < P; ++p) {
            mx = std::max(mx, g[p]);
            sum += static_cast<long double>(g[p]);
        }
        if (sum > 0) out[l] = static_cast<double>(static_cast<long double>(mx) * P / sum);
    }
    return out;
}

namespace {

/// Throws unless both placements have one shape (`who` names the caller in the message).
void check_same_shape(const Placement& next, const Placement& previous, const char* who) {
    if (next.layers != previous.layers || next.experts != previous.experts || next.ep_ranks != previous.ep_ranks)
        throw std::invalid_argument(std::string(who) + ": placements differ in shape (" + std::to_string(next.layers) +
                                    " layers x " + std::to_string(next.experts) + " experts on " +
                                    std::to_string(next.ep_ranks) + " EP ranks vs " + std::to_string(previous.layers) +
                                    " x " + std::to_string(previous.experts) + " on " +
                                    std::to_string(previous.ep_ranks) + ")");
}

} // namespace

/// For every layer, compares physical_to_logical of both placements slot by slot; a differing slot
/// v yields {v, next's expert at v, previous slot of that expert, previous expert at v}.
std::vector<std::vector<SlotMove>> placement_slot_changes(const Placement& next, const Placement& previous) {
    check_same_shape(next, previous, "placement_slot_changes");
    const int L = next.layers, E = next.experts;
    const std::vector<int> now = physical_to_logical(next);
    const std::vector<int> before = physical_to_logical(previous);
    std::vector<std::vector<SlotMove>> moves(idx(L));
    for (int l = 0; l < L; ++l) {
        const std::size_t row = idx(l) * E;
        for (int v = 0; v < E; ++v) {
            const int e = now[row + v];
            if (e == before[row + v]) continue;
            moves[l].push_back(SlotMove{v, e, previous.at(l, e), before[row + v]});
        }
    }
    return moves;
}

/// Checks both placements (physical_to_logical proves each a permutation), then lists per layer the
/// experts e with owner(next(e)) != owner(previous(e)).
std::vector<std::vector<ExpertMove>> placement_moves(const Placement& next, const Placement& previous) {
    check_same_shape(next, previous, "placement_moves");
    physical_to_logical(next);
    physical_to_logical(previous);
    std::vector<std::vector<ExpertMove>> moves(idx(next.layers));
    for (int l = 0; l < next.layers; ++l)
        for (int e = 0; e < next.experts; ++e) {
            const int to = next.rank_of(l, e), from = previous.rank_of(l, e);
            if (to != from) moves[l].push_back(ExpertMove{e, from, to, previous.at(l, e), next.at(l, e)});
        }
    return moves;
}

std::int64_t moved_experts(const Placement& next, const Placement& previous) {
    check_same_shape(next, previous, "placement_moves");
    physical_to_logical(next);
    physical_to_logical(previous);
    std::int64_t n = 0;
    for (int l = 0; l < next.layers; ++l)
        for (int e = 0; e < next.experts; ++e)
            n += next.rank_of(l, e) != previous.rank_of(l, e) ? 1 : 0;
    return n;
}

/// Per layer: staying experts copy their previous slot; freed slots (previous slots of leaving
/// experts) are collected per rank in ascending order, and the arriving experts, visited in
/// ascending order of their next slot, take them in turn. O(L E).
Placement keep_previous_slots(const Placement& next, const Placement& previous) {
    check_same_shape(next, previous, "keep_previous_slots");
    const std::vector<int> now = physical_to_logical(next);
    physical_to_logical(previous);
    const int L = next.layers, E = next.experts, P = next.ep_ranks;
    Placement out = next;
    std::vector<std::vector<int>> freed(static_cast<std::size_t>(P));
    std::vector<std::size_t> taken(static_cast<std::size_t>(P));
    for (int l = 0; l < L; ++l) {
        for (auto& f : freed)
            f.clear();
        std::fill(taken.begin(), taken.end(), 0);
        std::vector<int> before_slot_order(idx(E));
        for (int e = 0; e < E; ++e)
            before_slot_order[idx(previous.at(l, e))] = e;
        for (int v = 0; v < E; ++v) { // ascending previous slot
            const int e = before_slot_order[idx(v)];
            if (next.rank_of(l, e) != previous.owner(v)) freed[idx(previous.owner(v))].push_back(v);
        }
        for (int v = 0; v < E; ++v) { // ascending next slot
            const int e = now[idx(l) * E + v];
            const int p = next.owner(v);
            int& dst = out.slot[idx(l) * E + e];
            if (previous.rank_of(l, e) == p)
                dst = previous.at(l, e);
            else
                dst = freed[idx(p)][taken[idx(p)]++];
        }
    }
    return out;
}

} // namespace routepack
