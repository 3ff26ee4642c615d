#include "core/plan/search/placement_refine.h"

#include "core/util/grid.h"
#include "core/util/index.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace routepack {
namespace {

/// The three busiest ranks of one row-shard (value, rank), v1 >= v2 >= v3; rank -1 = none.
struct Top3 {
    std::int64_t v[3] = {0, 0, 0};
    int p[3] = {-1, -1, -1};
};

Top3 top3(const std::int64_t* w, int P) {
    Top3 t;
    for (int p = 0; p < P; ++p) {
        const std::int64_t x = w[p];
        if (t.p[0] < 0 || x > t.v[0]) {
            t.v[2] = t.v[1], t.p[2] = t.p[1];
            t.v[1] = t.v[0], t.p[1] = t.p[0];
            t.v[0] = x, t.p[0] = p;
        } else if (t.p[1] < 0 || x > t.v[1]) {
            t.v[2] = t.v[1], t.p[2] = t.p[1];
            t.v[1] = x, t.p[1] = p;
        } else if (t.p[2] < 0 || x > t.v[2]) {
            t.v[2] = x, t.p[2] = p;
        }
    }
    return t;
}

/// Largest load of a row-shard over the ranks other than a and b (0 when there are none: loads are
/// non-negative, so 0 never exceeds the two swapped ranks' new loads).
std::int64_t max_except(const Top3& t, int a, int b) {
    for (int k = 0; k < 3; ++k)
        if (t.p[k] >= 0 && t.p[k] != a && t.p[k] != b) return t.v[k];
    return 0;
}

/// What refine_layer reads: refine_placement's checked arguments and one MoE layer's start.
struct LayerInput {
    const Trace& window;
    int layer = 0;                          ///< l
    std::span<const int> slot;              ///< [E] the start placement's physical slots of layer l
    int slots_per_rank = 0;                 ///< H = E / P
    int ep_ranks = 0;                       ///< P
    std::span<const int> row_shard;         ///< [n] row-shard id of each window sample, 0..row_shards-1
    int row_shards = 0;                     ///< RS
    int max_passes = 0;                     ///< passes at most (refine_placement's max_passes)
    const StopToken& stop;                  ///< polled before every pass
    const std::vector<int>* home = nullptr; ///< [E] previous EP rank of each expert, or nullptr: no move limit
    std::int64_t allowance = -1;            ///< moved experts against `home` at most (-1: no limit)
};

/// What refine_layer found for its layer. Token sums F_l = sum_rs max_p W[rs][l][p].
struct LayerResult {
    std::vector<int> slot;        ///< [E] the refined physical slots of layer l
    std::int64_t before = 0;      ///< F_l at the start (tokens)
    std::int64_t after = 0;       ///< F_l at the end (tokens), <= before
    std::int64_t swaps = 0;       ///< expert swaps kept
    std::int64_t evaluations = 0; ///< swaps evaluated
};

/// One layer's local search (refine_placement's contract, for layer in.layer).
LayerResult refine_layer(const LayerInput& in) {
    const Trace& window = in.window;
    const int l = in.layer, H = in.slots_per_rank, P = in.ep_ranks, RS = in.row_shards;
    const std::vector<int>* home = in.home;
    const int E = window.model.experts;
    const std::size_t n = window.size();
    LayerResult res;
    res.slot.assign(in.slot.begin(), in.slot.end());
    std::vector<int>& slot = res.slot;
    // we[rs][e]: layer-l tokens of row-shard rs routed to logical expert e.
    Grid<std::int64_t> we(RS, E, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t* a = window.sample_counts(i).data() + idx(l) * E;
        const std::span<std::int64_t> dst = we.row(in.row_shard[i]);
        for (int e = 0; e < E; ++e)
            dst[e] += a[e];
    }
    std::vector<int> rank(idx(E));
    for (int e = 0; e < E; ++e)
        rank[idx(e)] = slot[idx(e)] / H;
    // W[rs][p]: layer-l load of EP rank p in row-shard rs (eq. 13); weT and Wt hold we and W
    // transposed ([E][RS], [P][RS]) so a swap's row-shard loop reads contiguous memory.
    Grid<std::int64_t> W(RS, P, 0);
    for (int rs = 0; rs < RS; ++rs)
        for (int e = 0; e < E; ++e)
            W(rs, rank[idx(e)]) += we(rs, e);
    Grid<std::int64_t> weT(E, RS, 0), Wt(P, RS, 0);
    for (int rs = 0; rs < RS; ++rs) {
        for (int e = 0; e < E; ++e)
            weT(e, rs) = we(rs, e);
        for (int p = 0; p < P; ++p)
            Wt(p, rs) = W(rs, p);
    }
    std::vector<Top3> top(idx(RS));
    std::vector<char> peak(idx(P), 0); // rank is the busiest of some row-shard
    std::int64_t F = 0;
    auto refresh = [&] {
        std::fill(peak.begin(), peak.end(), 0);
        F = 0;
        for (int rs = 0; rs < RS; ++rs) {
            Top3& t = top[idx(rs)];
            t = top3(W.row(rs).data(), P);
            peak[idx(t.p[0])] = 1;
            F += t.v[0];
        }
    };
    refresh();
    res.before = F;
    // A swap between ranks a and b leaves each row-shard at least max(others, ceil((W[a] + W[b]) / 2)):
    // when those sum to F or more, no swap between them lowers F and their expert pairs are skipped.
    // Per rank pair, the state (kept swaps) its answer was computed at, and the answer.
    std::vector<std::int64_t> pair_state(idx(P) * P, -1);
    std::vector<char> pair_can_gain(idx(P) * P, 0);
    auto can_gain = [&](int a, int b) {
        const std::size_t k = idx(std::min(a, b)) * P + std::max(a, b);
        if (pair_state[k] != res.swaps) {
            std::int64_t floor_sum = 0;
            const std::span<const std::int64_t> wa = Wt.row(a), wb = Wt.row(b);
            for (int rs = 0; rs < RS; ++rs) {
                const std::int64_t s = wa[rs] + wb[rs];
                floor_sum += std::max(max_except(top[idx(rs)], a, b), s >= 0 ? (s + 1) / 2 : s / 2);
            }
            pair_state[k] = res.swaps;
            pair_can_gain[k] = floor_sum < F ? 1 : 0;
        }
        return pair_can_gain[k] != 0;
    };
    // Moved experts of the layer against `home` (the previous placement's ranks) when limited.
    std::int64_t moved = 0;
    if (home)
        for (int e = 0; e < E; ++e)
            moved += rank[idx(e)] != (*home)[idx(e)] ? 1 : 0;
    for (int pass = 0; pass < in.max_passes && P > 1; ++pass) {
        if (in.stop.stop_requested()) break;
        bool kept = false;
        for (int e1 = 0; e1 < E; ++e1) {
            for (int e2 = e1 + 1; e2 < E; ++e2) {
                const int a = rank[idx(e1)], b = rank[idx(e2)];
                if (a == b || (!peak[idx(a)] && !peak[idx(b)])) continue;
                int dc = 0;
                if (home) {
                    const int h1 = (*home)[idx(e1)], h2 = (*home)[idx(e2)];
                    dc = (b != h1) - (a != h1) + (a != h2) - (b != h2);
                    if (in.allowance >= 0 && moved + dc > in.allowance) continue;
                }
                ++res.evaluations;
                if (!can_gain(a, b)) continue;
                // Moving e1 from a to b and e2 from b to a changes a by +d and b by -d per row-shard.
                const std::span<const std::int64_t> x1 = weT.row(e1), x2 = weT.row(e2);
                const std::span<const std::int64_t> wa = Wt.row(a), wb = Wt.row(b);
                std::int64_t delta = 0;
                for (int rs = 0; rs < RS; ++rs) {
                    const std::int64_t d = x2[rs] - x1[rs];
                    const Top3& t = top[idx(rs)];
                    const std::int64_t m = std::max({max_except(t, a, b), wa[rs] + d, wb[rs] - d});
                    delta += m - t.v[0];
                }
                if (delta >= 0) continue;
                for (int rs = 0; rs < RS; ++rs) {
                    const std::int64_t d = x2[rs] - x1[rs];
                    W(rs, a) += d;
                    W(rs, b) -= d;
                    Wt(a, rs) += d;
                    Wt(b, rs) -= d;
                }
                std::swap(rank[idx(e1)], rank[idx(e2)]);
                std::swap(slot[idx(e1)], slot[idx(e2)]);
                refresh();
                moved += dc;
                ++res.swaps;
                kept = true;
            }
        }
        if (!kept) break;
    }
    res.after = F;
    return res;
}

} // namespace

PlacementRefinement refine_placement(const Trace& window, const Placement& start, std::span<const int> row_shard,
                                     int row_shards, int max_passes, const StopToken& stop,
                                     const RefineMoveLimit* limit) {
    const int L = window.model.num_moe_layers(), E = window.model.experts;
    if (start.layers != L || start.experts != E || start.ep_ranks < 1 || E % start.ep_ranks != 0 ||
        start.slot.size() != static_cast<std::size_t>(L) * E)
        throw std::invalid_argument("refine_placement: the placement is not " + std::to_string(L) + " MoE layers x " +
                                    std::to_string(E) + " experts");
    if (row_shard.size() != window.size())
        throw std::invalid_argument("refine_placement: " + std::to_string(row_shard.size()) + " row-shard ids for " +
                                    std::to_string(window.size()) + " samples");
    if (row_shards < 1) throw std::invalid_argument("refine_placement: no row-shards");
    for (const int rs : row_shard)
        if (rs < 0 || rs >= row_shards)
            throw std::invalid_argument("refine_placement: row-shard id " + std::to_string(rs) + " is not in 0.." +
                                        std::to_string(row_shards - 1));
    if (max_passes < 0) throw std::invalid_argument("refine_placement: max_passes < 0");
    if (limit && (!limit->previous ||
                  !(limit->previous->layers == L && limit->previous->experts == E &&
                    limit->previous->ep_ranks == start.ep_ranks) ||
                  limit->allowance.size() != static_cast<std::size_t>(L)))
        throw std::invalid_argument("refine_placement: the move limit does not have the placement's shape");

    PlacementRefinement out;
    out.placement = start;
    const int P = start.ep_ranks, H = start.slots_per_rank();
    std::vector<LayerResult> layers(idx(L));
    tbb::parallel_for(tbb::blocked_range<int>(0, L, 1), [&](const tbb::blocked_range<int>& range) {
        for (int l = range.begin(); l < range.end(); ++l) {
            const std::span<int> layer_slots = std::span<int>(out.placement.slot).subspan(idx(l) * E, idx(E));
            std::vector<int> home;
            if (limit) {
                home.resize(idx(E));
                for (int e = 0; e < E; ++e)
                    home[idx(e)] = limit->previous->rank_of(l, e);
            }
            LayerResult& res = layers[idx(l)];
            res = refine_layer(LayerInput{.window = window,
                                          .layer = l,
                                          .slot = layer_slots,
                                          .slots_per_rank = H,
                                          .ep_ranks = P,
                                          .row_shard = row_shard,
                                          .row_shards = row_shards,
                                          .max_passes = max_passes,
                                          .stop = stop,
                                          .home = limit ? &home : nullptr,
                                          .allowance = limit ? limit->allowance[idx(l)] : -1});
            std::copy(res.slot.begin(), res.slot.end(), layer_slots.begin());
        }
    });
    for (const LayerResult& res : layers) {
        out.peak_sum_before += res.before;
        out.peak_sum_after += res.after;
        out.swaps += res.swaps;
        out.evaluations += res.evaluations;
    }
    return out;
}

} // namespace routepack
