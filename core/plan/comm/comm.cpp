#include "core/plan/comm/comm.h"

#include "core/util/errors.h"
#include "core/util/index.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace routepack {

bool comm_available(const Trace& window) {
    return window.has_routes();
}

namespace {

/// Logical expert of route slot k of a layer's ids stored `width` bytes each (little-endian), -1
/// for the missing marker (the width's all-ones value).
inline std::int32_t route_id(const std::uint8_t* p, std::size_t k, int width) {
    if (width == 1) return p[k] == 0xff ? -1 : p[k];
    if (width == 2) {
        const std::uint32_t v = p[2 * k] | (std::uint32_t(p[2 * k + 1]) << 8);
        return v == 0xffff ? -1 : static_cast<std::int32_t>(v);
    }
    const std::uint8_t* q = p + 4 * k;
    const std::uint32_t v =
        q[0] | (std::uint32_t(q[1]) << 8) | (std::uint32_t(q[2]) << 16) | (std::uint32_t(q[3]) << 24);
    return v == 0xffffffffu ? -1 : static_cast<std::int32_t>(v);
}

/// One layer of one sample under one placement: out[m] += tokens whose routes reach node m
/// (node_of[e] the node of logical expert e), each token once per node. A token's nodes form a bit
/// mask: with at most 8 nodes the tokens are counted per mask (256 bins) and the bins added to their
/// nodes afterwards; with at most 64 each token adds to its nodes; else `stamp` de-duplicates
/// (stamp[m] == stamp_no when node m already counted the token).
template <int Width>
void count_layer(const std::uint8_t* p, std::int64_t tokens, int K, const int* node_of, std::int64_t* out, int N,
                 std::vector<std::int64_t>& stamp, std::int64_t& stamp_no, std::vector<std::uint32_t>& bins) {
    auto token_mask = [&](std::int64_t t) {
        std::uint64_t mask = 0;
        const std::size_t base = static_cast<std::size_t>(t) * static_cast<std::size_t>(K);
        for (int s = 0; s < K; ++s) {
            const std::int32_t id = route_id(p, base + static_cast<std::size_t>(s), Width);
            if (id >= 0) mask |= std::uint64_t{1} << node_of[id];
        }
        return mask;
    };
    if (N <= 8) {
        bins.assign(256, 0);
        for (std::int64_t t = 0; t < tokens; ++t)
            ++bins[token_mask(t)];
        for (unsigned mask = 1; mask < 256; ++mask)
            if (const std::uint32_t c = bins[mask])
                for (unsigned bits = mask; bits; bits &= bits - 1)
                    out[std::countr_zero(bits)] += c;
        return;
    }
    if (N <= 64) {
        for (std::int64_t t = 0; t < tokens; ++t)
            for (std::uint64_t mask = token_mask(t); mask; mask &= mask - 1)
                ++out[std::countr_zero(mask)];
        return;
    }
    for (std::int64_t t = 0; t < tokens; ++t, ++stamp_no) {
        const std::size_t base = static_cast<std::size_t>(t) * static_cast<std::size_t>(K);
        for (int s = 0; s < K; ++s) {
            const std::int32_t id = route_id(p, base + static_cast<std::size_t>(s), Width);
            if (id < 0) continue;
            const int m = node_of[id];
            if (stamp[idx(m)] == stamp_no) continue;
            stamp[idx(m)] = stamp_no;
            ++out[m];
        }
    }
}

/// Up to 8 placements on up to 8 nodes at once: `table[e]` holds, in byte k, the bit of the node
/// of logical expert e under placement k, so that one OR over a token's ids forms its node mask
/// under every placement; the tokens are counted per (placement, mask) in `bins` [P][256] and the
/// bins added to out[k][m] (out[k] [N]) afterwards. The same counts as count_layer per placement.
template <int Width>
void count_layer_packed(const std::uint8_t* p, std::int64_t tokens, int K, const std::uint64_t* table, std::size_t P,
                        std::int64_t* const* out, std::vector<std::uint32_t>& bins) {
    bins.assign(P * 256, 0);
    for (std::int64_t t = 0; t < tokens; ++t) {
        std::uint64_t mask = 0;
        const std::size_t base = static_cast<std::size_t>(t) * static_cast<std::size_t>(K);
        for (int s = 0; s < K; ++s) {
            const std::int32_t id = route_id(p, base + static_cast<std::size_t>(s), Width);
            if (id >= 0) mask |= table[id];
        }
        for (std::size_t k = 0; k < P; ++k)
            ++bins[k * 256 + ((mask >> (8 * k)) & 0xffu)];
    }
    for (std::size_t k = 0; k < P; ++k)
        for (unsigned mask = 1; mask < 256; ++mask)
            if (const std::uint32_t c = bins[k * 256 + mask])
                for (unsigned bits = mask; bits; bits &= bits - 1)
                    out[k][std::countr_zero(bits)] += c;
}

} // namespace

CommDemand make_comm_demand(const Trace& window, const Topology& topo, const Placement& pi) {
    const Placement* one[] = {&pi};
    return std::move(make_comm_demands(window, topo, one).front());
}

std::vector<CommDemand> make_comm_demands(const Trace& window, const Topology& topo,
                                          std::span<const Placement* const> placements) {
    if (!comm_available(window))
        throw InputError("the window's samples carry no per-token routes; re-import the trace");
    const int L = window.model.num_moe_layers(), E = window.model.experts, K = window.model.top_k;
    const std::vector<int> rank_node = topo.node_of_rank();
    const std::size_t P = placements.size();
    // node_of_expert[k][l*E + e]: the node of the EP rank holding logical expert e at layer l under
    // placement k.
    std::vector<std::vector<int>> node_of_expert(P, std::vector<int>(idx(L) * idx(E)));
    for (std::size_t k = 0; k < P; ++k) {
        const Placement& pi = *placements[k];
        if (pi.layers != L || pi.experts != E || pi.ep_ranks != topo.ep_ranks ||
            pi.slot.size() != static_cast<std::size_t>(L) * static_cast<std::size_t>(E))
            throw std::invalid_argument("make_comm_demand: placement is " + std::to_string(pi.layers) + " x " +
                                        std::to_string(pi.experts) + " on " + std::to_string(pi.ep_ranks) +
                                        " EP ranks, the window and topology say " + std::to_string(L) + " x " +
                                        std::to_string(E) + " on " + std::to_string(topo.ep_ranks));
        for (int l = 0; l < L; ++l)
            for (int e = 0; e < E; ++e) {
                const int v = pi.at(l, e);
                if (v < 0 || v >= E)
                    throw std::invalid_argument("make_comm_demand: slot out of range at layer " + std::to_string(l));
                node_of_expert[k][idx(l) * E + e] = rank_node[idx(pi.owner(v))];
            }
    }
    for (std::size_t i = 0; i < window.size(); ++i) {
        const SampleRoutes& r = window.routes[i];
        if (r.layers != L || r.top_k != K || r.tokens != window.samples[i].routed_rows)
            throw std::invalid_argument("make_comm_demand: sample " + window.samples[i].id + " has routes of " +
                                        std::to_string(r.tokens) + " tokens x " + std::to_string(r.layers) +
                                        " layers x top-" + std::to_string(r.top_k) + ", expected " +
                                        std::to_string(window.samples[i].routed_rows) + " x " + std::to_string(L) +
                                        " x top-" + std::to_string(K));
    }
    std::vector<CommDemand> out(P);
    for (CommDemand& c : out) {
        c.n = static_cast<int>(window.size());
        c.L = L;
        c.N = topo.nodes();
        c.tokens.assign(idx(c.n) * idx(L) * idx(c.N), 0);
    }
    const int N = topo.nodes();
    // Up to 8 placements on up to 8 nodes: every placement's node bit of each expert in one word
    // (byte k for placement k), per layer.
    const bool packed = N <= 8 && P <= 8;
    std::vector<std::uint64_t> table(packed ? idx(L) * idx(E) : 0, 0);
    if (packed)
        for (std::size_t k = 0; k < P; ++k)
            for (std::size_t x = 0; x < table.size(); ++x)
                table[x] |= std::uint64_t{1} << (8 * k + static_cast<std::size_t>(node_of_expert[k][x]));
    // One pass over the routes: each token's ids are read once for every placement.
    tbb::parallel_for(
        tbb::blocked_range<int>(0, static_cast<int>(window.size())), [&](const tbb::blocked_range<int>& range) {
            std::vector<std::int64_t> stamp(idx(N), -1);
            std::vector<std::uint32_t> bins;
            std::vector<std::int64_t*> outs(P);
            std::int64_t stamp_no = 0;
            for (int i = range.begin(); i != range.end(); ++i) {
                const SampleRoutes& r = window.routes[idx(i)];
                for (int l = 0; l < L; ++l) {
                    const std::uint8_t* p = r.bytes.data() + r.index(l, 0, 0) * static_cast<std::size_t>(r.width);
                    if (packed) {
                        for (std::size_t k = 0; k < P; ++k)
                            outs[k] = out[k].tokens.data() + (idx(i) * L + l) * idx(N);
                        const std::uint64_t* t = table.data() + idx(l) * idx(E);
                        if (r.width == 1)
                            count_layer_packed<1>(p, r.tokens, K, t, P, outs.data(), bins);
                        else if (r.width == 2)
                            count_layer_packed<2>(p, r.tokens, K, t, P, outs.data(), bins);
                        else
                            count_layer_packed<4>(p, r.tokens, K, t, P, outs.data(), bins);
                        continue;
                    }
                    for (std::size_t k = 0; k < P; ++k) {
                        const int* node_of = node_of_expert[k].data() + idx(l) * E;
                        std::int64_t* counts = out[k].tokens.data() + (idx(i) * L + l) * idx(N);
                        if (r.width == 1)
                            count_layer<1>(p, r.tokens, K, node_of, counts, N, stamp, stamp_no, bins);
                        else if (r.width == 2)
                            count_layer<2>(p, r.tokens, K, node_of, counts, N, stamp, stamp_no, bins);
                        else
                            count_layer<4>(p, r.tokens, K, node_of, counts, N, stamp, stamp_no, bins);
                    }
                }
            }
        });
    return out;
}

CommCost comm_cost(const Layout& x, const CommDemand& c, const std::vector<int>& node_of_dp_slot) {
    if (static_cast<int>(node_of_dp_slot.size()) != x.dp_slots)
        throw std::invalid_argument("comm_cost: node map has " + std::to_string(node_of_dp_slot.size()) +
                                    " DP slots, the layout " + std::to_string(x.dp_slots));
    for (int m : node_of_dp_slot)
        if (m < 0 || m >= c.N)
            throw std::invalid_argument("comm_cost: DP slot node " + std::to_string(m) + " outside 0.." +
                                        std::to_string(c.N - 1));
    if (x.offsets.size() != static_cast<std::size_t>(x.cell_count()) + 1)
        throw std::invalid_argument("comm_cost: layout has " +
                                    std::to_string(x.offsets.empty() ? 0 : x.offsets.size() - 1) + " cells, expected " +
                                    std::to_string(x.cell_count()));
    if (!x.well_formed())
        throw std::invalid_argument("comm_cost: the layout's cell offsets do not split its " +
                                    std::to_string(x.samples.size()) + " samples");
    CommCost k;
    k.rows = x.rows;
    k.layers = c.L;
    k.nodes = c.N;
    const int L = c.L, N = c.N;
    const std::size_t rln = idx(x.rows) * L * N;
    k.sent.assign(rln, 0);
    k.received.assign(rln, 0);
    k.intra.assign(rln, 0);
    k.busiest.assign(idx(x.rows) * L, 0);
    k.matrix.assign(idx(L) * N * N, 0);
    k.inter_per_layer.assign(idx(L), 0);
    k.intra_per_layer.assign(idx(L), 0);
    for (int r = 0; r < x.rows; ++r)
        for (int d = 0; d < x.dp_slots; ++d) {
            const int src = node_of_dp_slot[idx(d)];
            for (int i : x.cell(x.cell_index(r, d))) {
                if (i < 0 || i >= c.n)
                    throw std::invalid_argument("comm_cost: cell (" + std::to_string(r) + ", " + std::to_string(d) +
                                                ") names sample " + std::to_string(i) + ", outside 0.." +
                                                std::to_string(c.n - 1));
                for (int l = 0; l < L; ++l) {
                    const std::int64_t* q = c.at(i, l);
                    std::int64_t* mat = k.matrix.data() + (idx(l) * N + src) * N;
                    for (int m = 0; m < N; ++m) {
                        const std::int64_t v = q[m];
                        if (v == 0) continue;
                        mat[m] += v;
                        if (m == src) {
                            k.intra[k.rln(r, l, m)] += v;
                        } else {
                            k.sent[k.rln(r, l, src)] += v;
                            k.received[k.rln(r, l, m)] += v;
                        }
                    }
                }
            }
        }
    for (int r = 0; r < x.rows; ++r)
        for (int l = 0; l < L; ++l) {
            std::int64_t busiest = 0;
            for (int m = 0; m < N; ++m) {
                const std::size_t at = k.rln(r, l, m);
                busiest = std::max({busiest, k.sent[at], k.received[at]});
                k.inter_per_layer[idx(l)] += k.sent[at];
                k.intra_per_layer[idx(l)] += k.intra[at];
            }
            k.busiest[idx(r) * L + l] = busiest;
            k.busiest_total += busiest;
        }
    for (int l = 0; l < L; ++l) {
        k.inter_total += k.inter_per_layer[idx(l)];
        k.intra_total += k.intra_per_layer[idx(l)];
    }
    return k;
}

std::optional<CommCost> comm_cost_if_available(const Layout& x, const Trace& window, const Topology& topo,
                                               const Placement& pi) {
    if (!comm_available(window)) return std::nullopt;
    return comm_cost(x, make_comm_demand(window, topo, pi), topo.node_of_dp_slot());
}

} // namespace routepack
