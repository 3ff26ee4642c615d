#include "core/plan/placement_refine.h"

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

/// One layer's local search; returns (F before, F after, swaps, evaluations) through the refs.
void refine_layer(const Trace& window, int l, std::vector<int>& slot, int H, int P, std::span<const int> row_shard,
                  int RS, int max_passes, const StopToken& stop, const std::vector<int>* home, std::int64_t allowance,
                  std::int64_t& before, std::int64_t& after, std::int64_t& swaps, std::int64_t& evaluations) {
    const int E = window.model.experts;
    const std::size_t n = window.size();
    // we[rs][e]: layer-l tokens of row-shard rs routed to logical expert e.
    std::vector<std::int64_t> we(static_cast<std::size_t>(RS) * E, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t* a = window.sample_counts(i).data() + static_cast<std::size_t>(l) * E;
        std::int64_t* dst = we.data() + static_cast<std::size_t>(row_shard[i]) * E;
        for (int e = 0; e < E; ++e)
            dst[e] += a[e];
    }
    std::vector<int> rank(static_cast<std::size_t>(E));
    for (int e = 0; e < E; ++e)
        rank[static_cast<std::size_t>(e)] = slot[static_cast<std::size_t>(e)] / H;
    std::vector<std::int64_t> W(static_cast<std::size_t>(RS) * P, 0);
    for (int rs = 0; rs < RS; ++rs)
        for (int e = 0; e < E; ++e)
            W[static_cast<std::size_t>(rs) * P + rank[static_cast<std::size_t>(e)]] +=
                we[static_cast<std::size_t>(rs) * E + e];
    std::vector<Top3> top(static_cast<std::size_t>(RS));
    std::vector<char> peak(static_cast<std::size_t>(P), 0); // rank is the busiest of some row-shard
    std::int64_t F = 0;
    auto refresh = [&] {
        std::fill(peak.begin(), peak.end(), 0);
        F = 0;
        for (int rs = 0; rs < RS; ++rs) {
            top[static_cast<std::size_t>(rs)] = top3(W.data() + static_cast<std::size_t>(rs) * P, P);
            peak[static_cast<std::size_t>(top[static_cast<std::size_t>(rs)].p[0])] = 1;
            F += top[static_cast<std::size_t>(rs)].v[0];
        }
    };
    refresh();
    before = F;
    // Moved experts of the layer against `home` (the previous placement's ranks) when limited.
    std::int64_t moved = 0;
    if (home)
        for (int e = 0; e < E; ++e)
            moved += rank[static_cast<std::size_t>(e)] != (*home)[static_cast<std::size_t>(e)] ? 1 : 0;
    for (int pass = 0; pass < max_passes && P > 1; ++pass) {
        if (stop.stop_requested()) break;
        bool kept = false;
        for (int e1 = 0; e1 < E; ++e1) {
            for (int e2 = e1 + 1; e2 < E; ++e2) {
                const int a = rank[static_cast<std::size_t>(e1)], b = rank[static_cast<std::size_t>(e2)];
                if (a == b || (!peak[static_cast<std::size_t>(a)] && !peak[static_cast<std::size_t>(b)])) continue;
                int dc = 0;
                if (home) {
                    const int h1 = (*home)[static_cast<std::size_t>(e1)], h2 = (*home)[static_cast<std::size_t>(e2)];
                    dc = (b != h1) - (a != h1) + (a != h2) - (b != h2);
                    if (allowance >= 0 && moved + dc > allowance) continue;
                }
                ++evaluations;
                // Moving e1 from a to b and e2 from b to a changes a by +d and b by -d per row-shard.
                std::int64_t delta = 0;
                for (int rs = 0; rs < RS; ++rs) {
                    const std::int64_t* w = W.data() + static_cast<std::size_t>(rs) * P;
                    const std::int64_t d =
                        we[static_cast<std::size_t>(rs) * E + e2] - we[static_cast<std::size_t>(rs) * E + e1];
                    const Top3& t = top[static_cast<std::size_t>(rs)];
                    const std::int64_t m = std::max({max_except(t, a, b), w[a] + d, w[b] - d});
                    delta += m - t.v[0];
                }
                if (delta >= 0) continue;
                for (int rs = 0; rs < RS; ++rs) {
                    std::int64_t* w = W.data() + static_cast<std::size_t>(rs) * P;
                    const std::int64_t d =
                        we[static_cast<std::size_t>(rs) * E + e2] - we[static_cast<std::size_t>(rs) * E + e1];
                    w[a] += d;
                    w[b] -= d;
                }
                std::swap(rank[static_cast<std::size_t>(e1)], rank[static_cast<std::size_t>(e2)]);
                std::swap(slot[static_cast<std::size_t>(e1)], slot[static_cast<std::size_t>(e2)]);
                refresh();
                moved += dc;
                ++swaps;
                kept = true;
            }
        }
        if (!kept) break;
    }
    after = F;
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
    std::vector<std::int64_t> before(static_cast<std::size_t>(L)), after(static_cast<std::size_t>(L)),
        swaps(static_cast<std::size_t>(L)), evals(static_cast<std::size_t>(L));
    tbb::parallel_for(tbb::blocked_range<int>(0, L, 1), [&](const tbb::blocked_range<int>& range) {
        for (int l = range.begin(); l < range.end(); ++l) {
            std::vector<int> slot(out.placement.slot.begin() + static_cast<std::ptrdiff_t>(l) * E,
                                  out.placement.slot.begin() + static_cast<std::ptrdiff_t>(l + 1) * E);
            const auto k = static_cast<std::size_t>(l);
            std::vector<int> home;
            if (limit) {
                home.resize(static_cast<std::size_t>(E));
                for (int e = 0; e < E; ++e)
                    home[static_cast<std::size_t>(e)] = limit->previous->rank_of(l, e);
            }
            refine_layer(window, l, slot, H, P, row_shard, row_shards, max_passes, stop, limit ? &home : nullptr,
                         limit ? limit->allowance[k] : -1, before[k], after[k], swaps[k], evals[k]);
            std::copy(slot.begin(), slot.end(), out.placement.slot.begin() + static_cast<std::ptrdiff_t>(l) * E);
        }
    });
    for (int l = 0; l < L; ++l) {
        const auto k = static_cast<std::size_t>(l);
        out.peak_sum_before += before[k];
        out.peak_sum_after += after[k];
        out.swaps += swaps[k];
        out.evaluations += evals[k];
    }
    return out;
}

} // namespace routepack
