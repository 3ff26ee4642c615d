// Placement across the steps of a run (core/plan/search/migration.h).
#include "core/plan/search/migration.h"

#include "core/plan/score/assignment.h"

#include "core/model/trace.h"
#include "core/util/errors.h"
#include "core/util/grid.h"
#include "core/util/index.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace routepack {

namespace {

/// Minimum-cost assignment of rows to columns of the square matrix `cost` [n][n];
/// result[row] = column (min_cost_assignment).
std::vector<int> assignment(const Grid<std::int64_t>& cost, int n) {
    return min_cost_assignment<std::int64_t>(n, [&](int i, int j) { return cost(i, j); });
}

/// One option of a layer: `moves` moved experts with busiest-rank load `peak`; reached by replaying
/// the first `steps` swaps of the layer's trajectory, or (steps -1) by taking the target's layer.
struct LayerOption {
    std::int64_t moves = 0;
    std::int64_t peak = 0;
    int steps = 0;
};

/// A layer's greedy trajectory from the previous placement: its swaps (expert pairs) and options.
struct Trajectory {
    std::vector<std::pair<int, int>> swaps;
    std::vector<LayerOption> options; ///< options[k]: after the first k swaps
};

/// The four busiest ranks of one group (value, rank), v1 >= v2 >= v3 >= v4; rank -1 = none.
struct Top4 {
    std::int64_t v[4] = {0, 0, 0, 0};
    int p[4] = {-1, -1, -1, -1};
};

Top4 top4(const std::int64_t* w, int P) {
    Top4 t;
    for (int p = 0; p < P; ++p) {
        const std::int64_t x = w[p];
        int k = 4;
        while (k > 0 && (t.p[k - 1] < 0 || x > t.v[k - 1]))
            --k;
        for (int j = 3; j > k; --j)
            t.v[j] = t.v[j - 1], t.p[j] = t.p[j - 1];
        if (k < 4) t.v[k] = x, t.p[k] = p;
    }
    return t;
}

/// Largest load of a group over the ranks other than a, b and c (0 when there are none; c = -1 for
/// two ranks).
std::int64_t max_except(const Top4& t, int a, int b, int c = -1) {
    for (int k = 0; k < 4; ++k)
        if (t.p[k] >= 0 && t.p[k] != a && t.p[k] != b && t.p[k] != c) return t.v[k];
    return 0;
}

/// One layer's measure state: per group the rank loads W[g][p] and their top three.
struct LayerState {
    int P = 0, E = 0, groups = 0;
    const std::int64_t* we = nullptr; ///< [groups][E]
    Grid<std::int64_t> W;             ///< [groups][P]
    std::vector<Top4> top;            ///< [groups]
    std::vector<char> peak;           ///< [P] rank is the busiest of some group
    std::int64_t F = 0;               ///< sum over groups of the busiest rank's load
    /// With `transposed` (swap_delta): we as [E][groups], W as [P][groups], and per rank pair a < b
    /// the largest load of each group over the other ranks, [P][P][groups] (filled only for the
    /// pairs with a busiest rank, the only ones a scan reads).
    bool transposed = false;
    std::vector<std::int64_t> weT, Wt, others;

    void refresh() {
        std::fill(peak.begin(), peak.end(), 0);
        F = 0;
        for (int g = 0; g < groups; ++g) {
            Top4& t = top[idx(g)];
            t = top4(W.row(g).data(), P);
            peak[idx(t.p[0])] = 1;
            F += t.v[0];
        }
        if (!transposed) return;
        for (int p = 0; p < P; ++p)
            for (int g = 0; g < groups; ++g)
                Wt[idx(p) * groups + g] = W(g, p);
        for (int a = 0; a < P; ++a)
            for (int b = a + 1; b < P; ++b) {
                if (!peak[idx(a)] && !peak[idx(b)]) continue; // no scan reads the pair
                std::int64_t* m = others.data() + (idx(a) * P + b) * groups;
                for (int g = 0; g < groups; ++g)
                    m[g] = max_except(top[idx(g)], a, b);
            }
    }
    /// Change of F when e1 (rank a) and e2 (rank b) trade ranks: sum over groups of the largest of the
    /// other ranks' peak, W[a] + x and W[b] - x (x = we[e2] - we[e1]), minus F; from the transposed
    /// arrays, contiguous per group.
    std::int64_t swap_delta(int e1, int e2, int a, int b) const {
        const std::int64_t* m = others.data() + (idx(std::min(a, b)) * P + std::max(a, b)) * groups;
        const std::int64_t* wa = Wt.data() + idx(a) * groups;
        const std::int64_t* wb = Wt.data() + idx(b) * groups;
        const std::int64_t* x1 = weT.data() + idx(e1) * groups;
        const std::int64_t* x2 = weT.data() + idx(e2) * groups;
        std::int64_t d = 0;
        for (int g = 0; g < groups; ++g) {
            const std::int64_t x = x2[g] - x1[g];
            d += std::max(std::max(m[g], wa[g] + x), wb[g] - x);
        }
        return d - F;
    }
    /// Change of F when e1 (rank a) goes to rank b, e2 (rank b) to rank c and e3 (rank c) to rank a.
    std::int64_t delta_cycle(int e1, int e2, int e3, int a, int b, int c) const {
        std::int64_t d = 0;
        for (int g = 0; g < groups; ++g) {
            const std::span<const std::int64_t> w = W.row(g);
            const std::int64_t* x = we + idx(g) * E;
            const Top4& t = top[idx(g)];
            d += std::max({max_except(t, a, b, c), w[a] - x[e1] + x[e3], w[b] - x[e2] + x[e1], w[c] - x[e3] + x[e2]}) -
                 t.v[0];
        }
        return d;
    }
    void apply(int e1, int e2, int a, int b) {
        for (int g = 0; g < groups; ++g) {
            const std::span<std::int64_t> w = W.row(g);
            const std::int64_t x = we[idx(g) * E + e2] - we[idx(g) * E + e1];
            w[a] += x;
            w[b] -= x;
        }
        refresh();
    }
};

LayerState layer_state(const std::int64_t* we, int groups, int E, int P, const std::vector<int>& rank,
                       bool transposed = false) {
    LayerState st;
    st.P = P, st.E = E, st.groups = groups, st.we = we;
    st.transposed = transposed;
    if (transposed) {
        st.weT.resize(idx(E) * groups);
        for (int g = 0; g < groups; ++g)
            for (int e = 0; e < E; ++e)
                st.weT[idx(e) * groups + g] = we[idx(g) * E + e];
        st.Wt.resize(idx(P) * groups);
        st.others.resize(idx(P) * P * groups);
    }
    st.W.assign(groups, P, 0);
    st.top.resize(idx(groups));
    st.peak.assign(idx(P), 0);
    for (int g = 0; g < groups; ++g)
        for (int e = 0; e < E; ++e)
            st.W(g, rank[idx(e)]) += we[idx(g) * E + e];
    st.refresh();
    return st;
}

/// Largest search for a relocation chain, in (expert on a busiest rank, expert, expert, group) tuples.
constexpr std::int64_t kChainSearchLimit = std::int64_t{1} << 25;

/// The experts on each EP rank (ascending) and, per rank, how many of them have each home rank:
/// what the pruned scans bound a rank pair or triple with.
struct RankMembers {
    int P = 0;
    std::vector<std::vector<int>> on; ///< [P] experts on each rank, ascending
    std::vector<int> home_count;      ///< [P][P] experts on rank a whose home is rank h

    void build(const std::vector<int>& rank, const std::vector<int>& home, int ranks) {
        P = ranks;
        on.resize(idx(P));
        for (std::vector<int>& m : on)
            m.clear();
        home_count.assign(idx(P) * P, 0);
        for (std::size_t e = 0; e < rank.size(); ++e) {
            on[idx(rank[e])].push_back(static_cast<int>(e));
            ++home_count[idx(rank[e]) * P + home[e]];
        }
    }
    /// The fewest moved experts one expert on rank a adds by going to rank b: -1 (it goes home), 0
    /// (it is away from home and stays away) or +1 (it leaves home).
    int least_added(int a, int b) const {
        if (home_count[idx(a) * P + b] > 0) return -1;
        const int elsewhere = static_cast<int>(on[idx(a)].size()) - home_count[idx(a) * P + a];
        return elsewhere > 0 ? 0 : 1;
    }
};

/// The least a group can hold after a load-preserving exchange among k ranks whose loads sum to s:
/// ceil(s / k).
std::int64_t even_share(std::int64_t s, int k) {
    return s >= 0 ? (s + k - 1) / k : s / k;
}

/// The chain a relocation takes: e1 (on a busiest rank a) to b, e2 (on b) to c, e3 (on c) to a; the
/// most gain per added move; e1 = -1 when no chain lowers the measure.
struct ChainPick {
    double value = 0;
    int e1 = -1, e2 = -1, e3 = -1, dc = 0;

    /// Take (e1, e2, e3) when it is worth more, or as much and earlier in the order e1, e2, e3.
    void offer(double v, int x1, int x2, int x3, int x_dc) {
        if (v > value || (v == value && e1 >= 0 && std::tie(x1, x2, x3) < std::tie(e1, e2, e3)))
            value = v, e1 = x1, e2 = x2, e3 = x3, dc = x_dc;
    }
};

/// Moved experts a chain adds (e1 a -> b, e2 b -> c, e3 c -> a; homes h1, h2, h3).
int chain_added_moves(int a, int b, int c, int h1, int h2, int h3) {
    return (b != h1) - (a != h1) + (c != h2) - (b != h2) + (a != h3) - (c != h3);
}

/// The chain from every tuple (e1 on a busiest rank, e2, e3 on two other ranks).
ChainPick chain_all(const LayerState& st, const std::vector<int>& rank, const std::vector<int>& home) {
    const int E = st.E;
    ChainPick best;
    for (int e1 = 0; e1 < E; ++e1) {
        const int a = rank[idx(e1)];
        if (!st.peak[idx(a)]) continue;
        for (int e2 = 0; e2 < E; ++e2) {
            const int b = rank[idx(e2)];
            if (b == a) continue;
            for (int e3 = 0; e3 < E; ++e3) {
                const int c = rank[idx(e3)];
                if (c == a || c == b) continue;
                const std::int64_t d = st.delta_cycle(e1, e2, e3, a, b, c);
                if (d >= 0) continue;
                const int dc = chain_added_moves(a, b, c, home[idx(e1)], home[idx(e2)], home[idx(e3)]);
                const double value = static_cast<double>(-d) / std::max(0.25, static_cast<double>(dc));
                if (value > best.value) best = ChainPick{value, e1, e2, e3, dc};
            }
        }
    }
    return best;
}

/// The same chain as chain_all, from the rank triples (a, b, c) whose bound can still beat the best
/// so far: per group the three ranks keep at least max(others, ceil((W[a] + W[b] + W[c]) / 3)), and
/// the chain adds at least the least each of its experts can (RankMembers::least_added). Triples in
/// descending bound; the first below the best so far ends the scan.
ChainPick chain_pruned(const LayerState& st, const std::vector<int>& rank, const std::vector<int>& home,
                       RankMembers& rm) {
    const int P = st.P, G = st.groups;
    rm.build(rank, home, P);
    struct TripleBound {
        double value = 0;
        int a = 0, b = 0, c = 0;
    };
    std::vector<TripleBound> bounds;
    std::vector<std::int64_t> others(idx(G)), load_b(idx(G));
    std::vector<std::pair<std::int64_t, int>> sorted_c; // rank c's experts (load with one group, expert)
    for (int a = 0; a < P; ++a) {
        if (!st.peak[idx(a)] || rm.on[idx(a)].empty()) continue;
        for (int b = 0; b < P; ++b) {
            if (b == a || rm.on[idx(b)].empty()) continue;
            for (int c = 0; c < P; ++c) {
                if (c == a || c == b || rm.on[idx(c)].empty()) continue;
                std::int64_t floor_sum = 0;
                for (int g = 0; g < G; ++g) {
                    const std::span<const std::int64_t> w = st.W.row(g);
                    floor_sum += std::max(max_except(st.top[idx(g)], a, b, c), even_share(w[a] + w[b] + w[c], 3));
                }
                const std::int64_t gain = st.F - floor_sum;
                if (gain <= 0) continue;
                const int dc = rm.least_added(a, b) + rm.least_added(b, c) + rm.least_added(c, a);
                bounds.push_back(
                    TripleBound{static_cast<double>(gain) / std::max(0.25, static_cast<double>(dc)), a, b, c});
            }
        }
    }
    std::sort(bounds.begin(), bounds.end(), [](const TripleBound& x, const TripleBound& y) {
        if (x.value != y.value) return x.value > y.value;
        return std::tie(x.a, x.b, x.c) < std::tie(y.a, y.b, y.c);
    });
    ChainPick best;
    for (const TripleBound& tb : bounds) {
        if (tb.value < best.value) break;
        const int least_c = rm.least_added(tb.c, tb.a);
        for (int g = 0; g < G; ++g) {
            others[idx(g)] = max_except(st.top[idx(g)], tb.a, tb.b, tb.c);
            load_b[idx(g)] = st.W(g, tb.b);
        }
        sorted_c.clear();
        for (const int e3 : rm.on[idx(tb.c)])
            sorted_c.emplace_back(G == 1 ? st.we[e3] : 0, e3);
        if (G == 1) std::sort(sorted_c.begin(), sorted_c.end());
        for (const int e1 : rm.on[idx(tb.a)])
            for (const int e2 : rm.on[idx(tb.b)]) {
                // With e1 and e2 chosen rank b's load is final: each group keeps at least
                // max(others, W[b] - x[e2] + x[e1]), and e3 adds at least least_c moves.
                std::int64_t floor_sum = 0;
                for (int g = 0; g < G; ++g) {
                    const std::int64_t* x = st.we + idx(g) * st.E;
                    floor_sum += std::max(others[idx(g)], load_b[idx(g)] - x[e2] + x[e1]);
                }
                const std::int64_t gain = st.F - floor_sum;
                if (gain <= 0) continue;
                const int dc12 = (tb.b != home[idx(e1)]) - (tb.a != home[idx(e1)]) + (tb.c != home[idx(e2)]) -
                                 (tb.b != home[idx(e2)]);
                if (static_cast<double>(gain) / std::max(0.25, static_cast<double>(dc12 + least_c)) < best.value)
                    continue;
                // One group: the chain lowers the measure exactly when rank a's new load W[a] - x[e1] +
                // x[e3] and rank c's W[c] - x[e3] + x[e2] both stay under F, an open interval of
                // x[e3]; c's experts sorted by load give it by binary search.
                auto first = sorted_c.cbegin(), last = sorted_c.cend();
                if (G == 1) {
                    const std::int64_t* x = st.we;
                    const std::int64_t above = x[e2] + st.W(0, tb.c) - st.F, below = x[e1] + st.F - st.W(0, tb.a);
                    first = std::upper_bound(sorted_c.cbegin(), sorted_c.cend(), std::pair{above, st.E});
                    last = std::lower_bound(first, sorted_c.cend(), std::pair{below, -1});
                }
                for (auto it = first; it != last; ++it) {
                    const int e3 = it->second;
                    const std::int64_t d = st.delta_cycle(e1, e2, e3, tb.a, tb.b, tb.c);
                    if (d >= 0) continue;
                    const int dc = chain_added_moves(tb.a, tb.b, tb.c, home[idx(e1)], home[idx(e2)], home[idx(e3)]);
                    best.offer(static_cast<double>(-d) / std::max(0.25, static_cast<double>(dc)), e1, e2, e3, dc);
                }
            }
    }
    return best;
}

/// The relocation chain that lowers the layer's measure when no swap does: e1 leaves a busiest rank a
/// for rank b, e2 leaves b for c, e3 leaves c for a (three ranks, each keeping its expert count), the
/// most gain per added move (ties: lower e1, e2, e3). Applied to `st` and `rank` and recorded in `t`
/// as the two swaps (e1, e2), (e2, e3) with one option after both; false when no chain lowers it or
/// the search would exceed kChainSearchLimit tuples. `rm` is scratch for the pruned scan
/// (chain_pruned; chain_all with `exhaustive`).
bool relocation_chain(LayerState& st, std::vector<int>& rank, const std::vector<int>& home, Trajectory& t,
                      std::int64_t& moved, bool exhaustive, RankMembers& rm) {
    const int E = st.E;
    std::int64_t on_peaks = 0;
    for (int e = 0; e < E; ++e)
        on_peaks += st.peak[idx(rank[idx(e)])] ? 1 : 0;
    if (on_peaks * E * E * st.groups > kChainSearchLimit) return false;
    const ChainPick pick = exhaustive ? chain_all(st, rank, home) : chain_pruned(st, rank, home, rm);
    if (pick.e1 < 0) return false;
    const int b1 = pick.e1, b2 = pick.e2, b3 = pick.e3;
    const int a = rank[idx(b1)], b = rank[idx(b2)], c = rank[idx(b3)];
    for (int g = 0; g < st.groups; ++g) {
        const std::span<std::int64_t> w = st.W.row(g);
        const std::int64_t* x = st.we + idx(g) * E;
        w[a] += x[b3] - x[b1];
        w[b] += x[b1] - x[b2];
        w[c] += x[b2] - x[b3];
    }
    st.refresh();
    rank[idx(b1)] = b;
    rank[idx(b2)] = c;
    rank[idx(b3)] = a;
    moved += pick.dc;
    t.swaps.emplace_back(b1, b2);
    t.swaps.emplace_back(b2, b3);
    t.options.push_back(LayerOption{moved, st.F, static_cast<int>(t.swaps.size())});
    return true;
}

/// The swap a trajectory step takes: the most gain per added move, value = gain / max(0.25, dc)
/// with dc the moved experts it adds; e1 = -1 when no swap lowers the layer's measure.
struct SwapPick {
    double value = 0;
    int e1 = -1, e2 = -1, dc = 0;

    /// Take (e1 < e2) when it is worth more, or as much with a lower (e1, e2): the first of the
    /// best in the order e1, then e2.
    void offer(double v, int x1, int x2, int x_dc) {
        if (v > value || (v == value && e1 >= 0 && (x1 < e1 || (x1 == e1 && x2 < e2))))
            value = v, e1 = x1, e2 = x2, dc = x_dc;
    }
};

/// Moved experts a swap adds: e1 from rank a to b and e2 from b to a, against their homes h1, h2.
int swap_added_moves(int a, int b, int h1, int h2) {
    return (b != h1) - (a != h1) + (a != h2) - (b != h2);
}

/// The greedy swaps of one layer (budgeted_placement), resumable: extend(m) continues the trajectory
/// until m moved experts (-1: no limit), so a longer trajectory extends a shorter one's steps.
/// `home` [E] previous rank; `we` [groups][E]; relocation chains only with `chains`.
struct TrajectoryRun {
    std::vector<int> home, rank;
    LayerState st;
    Trajectory t;
    std::int64_t moved = 0;
    int step = 0;
    bool done = false, chains = true;
    bool exhaustive = false; ///< scan every expert pair (the reference the pruned scan equals)

    TrajectoryRun(const std::int64_t* we, int groups, const std::vector<int>& h, int P, bool with_chains,
                  bool exhaustive_scan = false)
        : home(h), rank(h), st(layer_state(we, groups, static_cast<int>(h.size()), P, h, true)), chains(with_chains),
          exhaustive(exhaustive_scan) {
        t.options.push_back(LayerOption{0, st.F, 0});
        done = P <= 1;
    }

    /// The step's swap from every pair of experts on different ranks, one of them a busiest rank.
    SwapPick scan_all() const {
        const int E = st.E;
        SwapPick best;
        for (int e1 = 0; e1 < E; ++e1) {
            for (int e2 = e1 + 1; e2 < E; ++e2) {
                const int a = rank[idx(e1)], b = rank[idx(e2)];
                if (a == b || (!st.peak[idx(a)] && !st.peak[idx(b)])) continue;
                const std::int64_t d = st.swap_delta(e1, e2, a, b);
                if (d >= 0) continue;
                const int dc = swap_added_moves(a, b, home[idx(e1)], home[idx(e2)]);
                const double value = static_cast<double>(-d) / std::max(0.25, static_cast<double>(dc));
                if (value > best.value) best = SwapPick{value, e1, e2, dc};
            }
        }
        return best;
    }

    /// The same swap as scan_all, from the rank pairs whose bound can still beat the best so far.
    /// A swap between ranks a and b leaves each group at least max(others, ceil((W[a] + W[b]) / 2)),
    /// so its gain is at most F minus their sum; its added moves are at least the least any expert
    /// of a and any of b can add (an expert adds -1 going home, 0 going elsewhere, +1 leaving home).
    /// Rank pairs in descending bound; a pair whose bound is below the best so far, and every one
    /// after it, is skipped.
    SwapPick scan_pruned() {
        const int P = st.P, G = st.groups;
        rm.build(rank, home, P);
        bounds.clear();
        for (int a = 0; a < P; ++a)
            for (int b = a + 1; b < P; ++b) {
                if (!st.peak[idx(a)] && !st.peak[idx(b)]) continue;
                if (rm.on[idx(a)].empty() || rm.on[idx(b)].empty()) continue;
                const std::int64_t* m = st.others.data() + (idx(a) * P + b) * G;
                const std::int64_t* wa = st.Wt.data() + idx(a) * G;
                const std::int64_t* wb = st.Wt.data() + idx(b) * G;
                std::int64_t floor_sum = 0;
                for (int g = 0; g < G; ++g)
                    floor_sum += std::max(m[g], even_share(wa[g] + wb[g], 2));
                const std::int64_t gain = st.F - floor_sum;
                if (gain <= 0) continue;
                const int dc = rm.least_added(a, b) + rm.least_added(b, a);
                bounds.push_back(PairBound{static_cast<double>(gain) / std::max(0.25, static_cast<double>(dc)), a, b});
            }
        std::sort(bounds.begin(), bounds.end(), [](const PairBound& x, const PairBound& y) {
            if (x.value != y.value) return x.value > y.value;
            return x.a != y.a ? x.a < y.a : x.b < y.b;
        });
        SwapPick best;
        for (const PairBound& pb : bounds) {
            if (pb.value < best.value) break;
            for (const int x : rm.on[idx(pb.a)])
                for (const int y : rm.on[idx(pb.b)]) {
                    const int e1 = std::min(x, y), e2 = std::max(x, y);
                    const int a = rank[idx(e1)], b = rank[idx(e2)];
                    const std::int64_t d = st.swap_delta(e1, e2, a, b);
                    if (d >= 0) continue;
                    const int dc = swap_added_moves(a, b, home[idx(e1)], home[idx(e2)]);
                    best.offer(static_cast<double>(-d) / std::max(0.25, static_cast<double>(dc)), e1, e2, dc);
                }
        }
        return best;
    }

    void extend(std::int64_t max_moves) {
        const int E = st.E;
        for (; !done && step < 2 * E + 4 && (max_moves < 0 || moved < max_moves); ++step) {
            const SwapPick pick = exhaustive ? scan_all() : scan_pruned();
            if (pick.e1 < 0) {
                if (!chains || !relocation_chain(st, rank, home, t, moved, exhaustive, rm)) {
                    done = true;
                    break;
                }
                ++step; // a chain is two swaps
                continue;
            }
            const int b1 = pick.e1, b2 = pick.e2;
            const int a = rank[idx(b1)], b = rank[idx(b2)];
            st.apply(b1, b2, a, b);
            rank[idx(b1)] = b;
            rank[idx(b2)] = a;
            moved += pick.dc;
            t.swaps.emplace_back(b1, b2);
            t.options.push_back(LayerOption{moved, st.F, static_cast<int>(t.swaps.size())});
        }
    }

    /// The options a run stopped at `max_moves` would hold: up to the first at or past it.
    std::vector<LayerOption> options_until(std::int64_t max_moves) const {
        std::vector<LayerOption> out;
        for (const LayerOption& o : t.options) {
            out.push_back(o);
            if (max_moves >= 0 && o.moves >= max_moves) break;
        }
        return out;
    }

private:
    /// A rank pair's bound on the value of any swap between them (scan_pruned).
    struct PairBound {
        double value = 0;
        int a = 0, b = 0;
    };
    RankMembers rm;
    std::vector<PairBound> bounds;
};

/// The options no other option beats: ascending moves, strictly descending peak (ties: fewer
/// moves, then fewer steps).
std::vector<LayerOption> staircase(std::vector<LayerOption> all) {
    std::stable_sort(all.begin(), all.end(), [](const LayerOption& x, const LayerOption& y) {
        if (x.moves != y.moves) return x.moves < y.moves;
        return x.peak < y.peak;
    });
    std::vector<LayerOption> out;
    for (const LayerOption& o : all)
        if (out.empty() || o.peak < out.back().peak) out.push_back(o);
    return out;
}

/// The upper convex hull of a staircase (gain per move non-increasing along it): indices into it.
std::vector<int> hull(const std::vector<LayerOption>& s) {
    std::vector<int> h;
    for (int k = 0; k < static_cast<int>(s.size()); ++k) {
        while (h.size() >= 2) {
            const LayerOption& a = s[idx(h[h.size() - 2])];
            const LayerOption& b = s[idx(h.back())];
            const LayerOption& c = s[idx(k)];
            // b is under the chord a-c when (gain a->b)/(moves a->b) <= (gain a->c)/(moves a->c).
            const double ab = static_cast<double>(a.peak - b.peak) * static_cast<double>(c.moves - a.moves);
            const double ac = static_cast<double>(a.peak - c.peak) * static_cast<double>(b.moves - a.moves);
            if (ab <= ac)
                h.pop_back();
            else
                break;
        }
        h.push_back(k);
    }
    return h;
}

/// Per-rank materialization seconds of one layer's moves (migration_figures without the max).
void add_layer_seconds(const std::vector<int>& from, const std::vector<int>& to, const MigrationCost& c,
                       std::vector<double>& sec, double sign) {
    for (std::size_t e = 0; e < from.size(); ++e) {
        const int a = from[e], b = to[e];
        if (a == b) continue;
        const bool intra = c.node_of_rank[idx(a)] == c.node_of_rank[idx(b)];
        const double s = sign * c.expert_bytes / ((intra ? c.intra_node_GBps : c.inter_node_GBps) * 1e9);
        sec[idx(a)] += s;
        sec[idx(b)] += s;
    }
}

} // namespace

MigrationFigures migration_figures(const Placement& next, const Placement& previous, const MigrationCost& cost) {
    const auto moves = placement_moves(next, previous);
    const int P = next.ep_ranks;
    const bool costed = cost.expert_bytes > 0;
    if (costed && cost.node_of_rank.size() != static_cast<std::size_t>(P))
        throw std::invalid_argument("migration_figures: node_of_rank holds " +
                                    std::to_string(cost.node_of_rank.size()) + " ranks, expected " + std::to_string(P));
    MigrationFigures f;
    std::vector<double> intra(idx(P), 0), inter(idx(P), 0);
    for (const auto& layer : moves)
        for (const ExpertMove& m : layer) {
            ++f.moved;
            const bool same = !costed || cost.node_of_rank[idx(m.from_rank)] == cost.node_of_rank[idx(m.to_rank)];
            (same ? f.intra_moves : f.inter_moves) += 1;
            auto& side = same ? intra : inter;
            side[idx(m.from_rank)] += cost.expert_bytes;
            side[idx(m.to_rank)] += cost.expert_bytes;
        }
    f.bytes = static_cast<double>(f.moved) * cost.expert_bytes;
    if (!costed || f.moved == 0) return f;
    for (int p = 0; p < P; ++p) {
        const auto k = idx(p);
        const double s = intra[k] / (cost.intra_node_GBps * 1e9) + inter[k] / (cost.inter_node_GBps * 1e9);
        if (f.busiest_rank < 0 || s > f.seconds) {
            f.busiest_rank = p;
            f.seconds = s;
            f.busiest_intra_bytes = intra[k];
            f.busiest_inter_bytes = inter[k];
        }
    }
    return f;
}

Placement relabel_to_previous(const Placement& next, const Placement& previous) {
    moved_experts(next, previous); // shape and permutation checks
    const int L = next.layers, E = next.experts, P = next.ep_ranks, H = next.slots_per_rank();
    Placement out = next;
    Grid<std::int64_t> cost(P, P);
    for (int l = 0; l < L; ++l) {
        cost.fill(0);
        for (int e = 0; e < E; ++e) // minimizing -(experts of next's group q that were on rank p)
            cost(next.rank_of(l, e), previous.rank_of(l, e)) -= 1;
        const std::vector<int> label = assignment(cost, P);
        const std::vector<int> logical = physical_to_logical(next);
        std::vector<int> filled(idx(P), 0);
        for (int v = 0; v < E; ++v) {
            const int e = logical[idx(l) * E + v];
            const int p = label[idx(next.owner(v))];
            out.slot[idx(l) * E + e] = p * H + filled[idx(p)]++;
        }
    }
    return keep_previous_slots(out, previous);
}

namespace {

/// The layers' options (trajectory points and the target's layer) as staircases, layers in parallel.
struct LayerChoices {
    std::vector<Trajectory> trajectories;
    std::vector<std::vector<LayerOption>> stairs;
};

/// The target's layer as an option (steps -1): its moves from previous and its measure.
LayerOption target_option(const GroupLoads& loads, const Placement& prev, const Placement& target, int l) {
    const int E = prev.experts;
    std::vector<int> rank(idx(E));
    std::int64_t moved = 0;
    for (int e = 0; e < E; ++e) {
        rank[idx(e)] = target.rank_of(l, e);
        moved += target.rank_of(l, e) != prev.rank_of(l, e) ? 1 : 0;
    }
    const std::int64_t* we = loads.w.data() + idx(l) * loads.groups * E;
    return LayerOption{moved, layer_state(we, loads.groups, E, prev.ep_ranks, rank).F, -1};
}

std::vector<int> previous_ranks(const Placement& prev, int l) {
    std::vector<int> home(idx(prev.experts));
    for (int e = 0; e < prev.experts; ++e)
        home[idx(e)] = prev.rank_of(l, e);
    return home;
}

/// The choices of the layers' runs stopped at `max_moves`, extending each first.
LayerChoices choices_of(std::vector<TrajectoryRun>& runs, const GroupLoads& loads, const Placement& prev,
                        const Placement* target, std::int64_t max_moves) {
    const int L = prev.layers;
    LayerChoices c;
    c.trajectories.resize(idx(L));
    c.stairs.resize(idx(L));
    tbb::parallel_for(tbb::blocked_range<int>(0, L, 1), [&](const tbb::blocked_range<int>& range) {
        for (int l = range.begin(); l < range.end(); ++l) {
            TrajectoryRun& run = runs[idx(l)];
            run.extend(max_moves);
            std::vector<LayerOption> all = run.options_until(max_moves);
            if (target) all.push_back(target_option(loads, prev, *target, l));
            c.stairs[idx(l)] = staircase(std::move(all));
            c.trajectories[idx(l)] = run.t;
        }
    });
    return c;
}

std::vector<TrajectoryRun> trajectory_runs(const GroupLoads& loads, const Placement& prev, bool chains,
                                           bool exhaustive_scan) {
    std::vector<TrajectoryRun> runs;
    runs.reserve(idx(prev.layers));
    for (int l = 0; l < prev.layers; ++l)
        runs.emplace_back(loads.w.data() + idx(l) * loads.groups * prev.experts, loads.groups, previous_ranks(prev, l),
                          prev.ep_ranks, chains, exhaustive_scan);
    return runs;
}

LayerChoices layer_choices(const GroupLoads& loads, const Placement& prev, const Placement* target,
                           std::int64_t max_moves, bool chains, bool exhaustive_scan) {
    std::vector<TrajectoryRun> runs = trajectory_runs(loads, prev, chains, exhaustive_scan);
    return choices_of(runs, loads, prev, target, max_moves);
}

/// One hull segment of a layer: from stair point `from` to `to`.
struct Segment {
    int layer = 0, from = 0, to = 0;
    std::int64_t moves = 0, gain = 0;
};

/// The layer at stair point `o`: replayed swaps or the target's layer; its ranks into `rank`.
void layer_at(const LayerOption& o, const Trajectory& t, const Placement& prev, const Placement* target, int l,
              std::vector<int>& rank) {
    const int E = prev.experts;
    for (int e = 0; e < E; ++e)
        rank[idx(e)] = o.steps < 0 ? target->rank_of(l, e) : prev.rank_of(l, e);
    for (int k = 0; k < std::max(0, o.steps); ++k) {
        const auto [e1, e2] = t.swaps[idx(k)];
        std::swap(rank[idx(e1)], rank[idx(e2)]);
    }
}

/// Every layer's upper-hull segments in descending gain per move (a segment of no moves first);
/// stable: lower layer, then earlier.
std::vector<Segment> sorted_segments(const LayerChoices& ch) {
    std::vector<Segment> segments;
    for (int l = 0; l < static_cast<int>(ch.stairs.size()); ++l) {
        const auto& s = ch.stairs[idx(l)];
        const std::vector<int> h = hull(s);
        for (std::size_t k = 1; k < h.size(); ++k) {
            const LayerOption &a = s[idx(h[k - 1])], &b = s[idx(h[k])];
            segments.push_back(Segment{l, h[k - 1], h[k], b.moves - a.moves, a.peak - b.peak});
        }
    }
    std::stable_sort(segments.begin(), segments.end(), [](const Segment& x, const Segment& y) {
        return static_cast<double>(x.gain) * static_cast<double>(std::max<std::int64_t>(y.moves, 0)) >
               static_cast<double>(y.gain) * static_cast<double>(std::max<std::int64_t>(x.moves, 0));
    });
    return segments;
}

/// The busiest-rank load of each row-shard of layer l when the layer's experts sit on `rank`.
void layer_peaks(const GroupLoads& loads, int l, const std::vector<int>& rank, int P, std::int64_t* out) {
    const int E = loads.experts, RS = loads.groups;
    std::vector<std::int64_t> w(idx(P));
    for (int rs = 0; rs < RS; ++rs) {
        std::fill(w.begin(), w.end(), 0);
        const std::int64_t* x = loads.w.data() + (idx(l) * RS + rs) * E;
        for (int e = 0; e < E; ++e)
            w[idx(rank[idx(e)])] += x[e];
        out[rs] = *std::max_element(w.begin(), w.end());
    }
}

void check_loads(const GroupLoads& loads, const Placement& pi, const char* who) {
    if (loads.layers != pi.layers || loads.experts != pi.experts || loads.groups < 1 ||
        loads.w.size() != static_cast<std::size_t>(pi.layers) * loads.groups * pi.experts)
        throw std::invalid_argument(std::string(who) + ": the loads are not " + std::to_string(pi.layers) +
                                    " MoE layers x " + std::to_string(pi.experts) + " experts");
}

} // namespace

namespace {

std::vector<MoveStep> sequence_of(const LayerChoices& ch, const Placement& previous, const Placement* target) {
    std::vector<MoveStep> out;
    std::int64_t moves = 0;
    for (const Segment& sg : sorted_segments(ch)) {
        const auto& s = ch.stairs[idx(sg.layer)];
        MoveStep st;
        st.layer = sg.layer;
        moves += sg.moves;
        st.moves = moves;
        st.rank.resize(idx(previous.experts));
        layer_at(s[idx(sg.to)], ch.trajectories[idx(sg.layer)], previous, target, sg.layer, st.rank);
        out.push_back(std::move(st));
    }
    return out;
}

} // namespace

struct MoveSequencer::State {
    GroupLoads loads;
    Placement previous, target;
    bool has_target = false;
    std::vector<TrajectoryRun> runs;
};

MoveSequencer::MoveSequencer(GroupLoads loads, const Placement& previous, const Placement* target, bool exhaustive_scan)
    : state_(std::make_unique<State>()) {
    check_loads(loads, previous, "move_sequence");
    physical_to_logical(previous);
    State& st = *state_;
    st.loads = std::move(loads);
    st.previous = previous;
    if (target) st.target = relabel_to_previous(*target, previous);
    st.has_target = target != nullptr;
    st.runs = trajectory_runs(st.loads, st.previous, true, exhaustive_scan);
}

MoveSequencer::~MoveSequencer() = default;

std::vector<MoveStep> MoveSequencer::sequence(std::int64_t trajectory_moves) {
    State& st = *state_;
    const Placement* tg = st.has_target ? &st.target : nullptr;
    return sequence_of(choices_of(st.runs, st.loads, st.previous, tg, trajectory_moves), st.previous, tg);
}

std::vector<MoveStep> move_sequence(const GroupLoads& loads, const Placement& previous, const Placement* target,
                                    std::int64_t trajectory_moves) {
    return MoveSequencer(loads, previous, target).sequence(trajectory_moves);
}

Placement sequence_placement(const std::vector<MoveStep>& seq, std::size_t steps, const Placement& previous) {
    if (steps > seq.size())
        throw std::invalid_argument("sequence_placement: " + std::to_string(steps) + " steps of a sequence of " +
                                    std::to_string(seq.size()));
    const int L = previous.layers, E = previous.experts, P = previous.ep_ranks, H = previous.slots_per_rank();
    std::vector<const MoveStep*> last(idx(L), nullptr);
    for (std::size_t k = 0; k < steps; ++k)
        last[idx(seq[k].layer)] = &seq[k];
    Placement out = previous;
    for (int l = 0; l < L; ++l) {
        if (!last[idx(l)]) continue;
        std::vector<int> filled(idx(P), 0);
        for (int e = 0; e < E; ++e) {
            const int p = last[idx(l)]->rank[idx(e)];
            out.slot[idx(l) * E + e] = p * H + filled[idx(p)]++;
        }
    }
    return keep_previous_slots(out, previous);
}

std::vector<std::int64_t> row_shard_peak_sums(const GroupLoads& loads, const Placement& pi) {
    check_loads(loads, pi, "row_shard_peak_sums");
    const int L = pi.layers, E = pi.experts, RS = loads.groups;
    std::vector<std::int64_t> sum(idx(RS), 0), peaks(idx(RS));
    std::vector<int> rank(idx(E));
    for (int l = 0; l < L; ++l) {
        for (int e = 0; e < E; ++e)
            rank[idx(e)] = pi.rank_of(l, e);
        layer_peaks(loads, l, rank, pi.ep_ranks, peaks.data());
        for (int rs = 0; rs < RS; ++rs)
            sum[idx(rs)] += peaks[idx(rs)];
    }
    return sum;
}

std::vector<std::vector<std::int64_t>> sequence_peak_sums(const GroupLoads& loads, const std::vector<MoveStep>& seq,
                                                          const Placement& previous, std::int64_t max_moves) {
    check_loads(loads, previous, "sequence_peak_sums");
    const int L = previous.layers, E = previous.experts, RS = loads.groups;
    Grid<std::int64_t> peak(L, RS);
    std::vector<int> rank(idx(E));
    std::vector<std::int64_t> sum(idx(RS), 0);
    for (int l = 0; l < L; ++l) {
        for (int e = 0; e < E; ++e)
            rank[idx(e)] = previous.rank_of(l, e);
        layer_peaks(loads, l, rank, previous.ep_ranks, peak.row(l).data());
        for (int rs = 0; rs < RS; ++rs)
            sum[idx(rs)] += peak(l, rs);
    }
    std::vector<std::vector<std::int64_t>> out{sum};
    std::vector<std::int64_t> fresh(idx(RS));
    for (const MoveStep& st : seq) {
        if (st.moves > max_moves) break;
        layer_peaks(loads, st.layer, st.rank, previous.ep_ranks, fresh.data());
        for (int rs = 0; rs < RS; ++rs) {
            sum[idx(rs)] += fresh[idx(rs)] - peak(st.layer, rs);
            peak(st.layer, rs) = fresh[idx(rs)];
        }
        out.push_back(sum);
    }
    return out;
}

GroupLoads aggregate_group_loads(std::span<const std::uint64_t> loads, int L, int E) {
    if (loads.size() != static_cast<std::size_t>(L) * E)
        throw std::invalid_argument("aggregate_group_loads: loads hold " + std::to_string(loads.size()) +
                                    " values, expected L*E = " + std::to_string(static_cast<std::size_t>(L) * E));
    GroupLoads g{L, E, 1, std::vector<std::int64_t>(loads.size())};
    for (std::size_t k = 0; k < loads.size(); ++k)
        g.w[k] = static_cast<std::int64_t>(loads[k]);
    return g;
}

GroupLoads row_shard_group_loads(std::span<const std::uint32_t> counts, std::size_t n, int L, int E,
                                 std::span<const int> row_shard, int row_shards) {
    const std::size_t stride = static_cast<std::size_t>(L) * E;
    if (counts.size() != n * stride || row_shard.size() != n || row_shards < 1)
        throw std::invalid_argument("row_shard_group_loads: counts, row-shard ids and samples disagree");
    GroupLoads g{L, E, row_shards, std::vector<std::int64_t>(stride * row_shards, 0)};
    for (std::size_t i = 0; i < n; ++i) {
        const int rs = row_shard[i];
        if (rs < 0 || rs >= row_shards)
            throw std::invalid_argument("row_shard_group_loads: row-shard id " + std::to_string(rs) + " is not in 0.." +
                                        std::to_string(row_shards - 1));
        const std::uint32_t* a = counts.data() + i * stride;
        for (int l = 0; l < L; ++l) {
            std::int64_t* dst = g.w.data() + (idx(l) * row_shards + rs) * E;
            for (int e = 0; e < E; ++e)
                dst[e] += a[idx(l) * E + e];
        }
    }
    return g;
}

namespace {

/// budgeted_placement's shape checks; the previous placement's permutation check.
void check_request(const GroupLoads& loads, const MoveRequest& rq) {
    if (!rq.previous) throw std::invalid_argument("budgeted_placement: no previous placement");
    const Placement& prev = *rq.previous;
    const int L = prev.layers, E = prev.experts;
    if (loads.layers != L || loads.experts != E || loads.groups < 1 ||
        loads.w.size() != static_cast<std::size_t>(L) * loads.groups * E)
        throw std::invalid_argument("budgeted_placement: the loads are not " + std::to_string(L) + " MoE layers x " +
                                    std::to_string(E) + " experts");
    physical_to_logical(prev);
}

/// Where a request's trajectories stop: its budget (none with a cost), capped by trajectory_moves.
std::int64_t trajectory_stop(const MoveRequest& rq) {
    std::int64_t stop_at = rq.cost ? -1 : rq.max_moves;
    if (rq.trajectory_moves >= 0) stop_at = stop_at < 0 ? rq.trajectory_moves : std::min(stop_at, rq.trajectory_moves);
    return stop_at;
}

/// budgeted_placement from the layers' choices: the hull's segments taken while the budget (and the
/// cost model) allows, the chosen points as a placement from previous.
MovePlan take_segments(const LayerChoices& ch, const MoveRequest& rq, const Placement* target) {
    const Placement& prev = *rq.previous;
    const int L = prev.layers, E = prev.experts, P = prev.ep_ranks;
    const std::vector<Segment> segments = sorted_segments(ch);
    std::vector<int> at(idx(L), 0); // chosen stair point per layer
    std::vector<char> closed(idx(L), 0);
    std::int64_t used = 0;
    const bool limited = rq.max_moves >= 0;
    std::vector<double> sec(idx(P), 0);
    std::vector<int> home(idx(E)), before(idx(E)), after(idx(E));
    for (const Segment& sg : segments) {
        const auto l = idx(sg.layer);
        if (closed[l] || at[l] != sg.from) continue;
        if (limited && used + sg.moves > rq.max_moves) {
            closed[l] = 1;
            continue;
        }
        const auto& s = ch.stairs[l];
        if (rq.cost) {
            layer_at(s[idx(sg.from)], ch.trajectories[l], prev, target, sg.layer, before);
            layer_at(s[idx(sg.to)], ch.trajectories[l], prev, target, sg.layer, after);
            for (int e = 0; e < E; ++e)
                home[idx(e)] = prev.rank_of(sg.layer, e);
            std::vector<double> next_sec = sec;
            add_layer_seconds(home, before, *rq.cost, next_sec, -1.0);
            add_layer_seconds(home, after, *rq.cost, next_sec, 1.0);
            const double growth = step_overhead_seconds(*rq.cost, *std::max_element(next_sec.begin(), next_sec.end())) -
                                  step_overhead_seconds(*rq.cost, *std::max_element(sec.begin(), sec.end()));
            const double saving = rq.cost->seconds_per_U * static_cast<double>(sg.gain) / rq.tokens_per_U;
            if (!(saving > growth)) {
                closed[l] = 1;
                continue;
            }
            sec = std::move(next_sec);
        }
        at[l] = sg.to;
        used += sg.moves;
    }

    MovePlan out;
    out.placement = prev;
    out.layer_moves.assign(idx(L), 0);
    std::vector<int> rank(idx(E));
    for (int l = 0; l < L; ++l) {
        const auto& s = ch.stairs[idx(l)];
        const LayerOption& o = s[idx(at[idx(l)])];
        out.peak_before += ch.trajectories[idx(l)].options.front().peak;
        out.peak_after += o.peak;
        out.layer_moves[idx(l)] = o.moves;
        layer_at(o, ch.trajectories[idx(l)], prev, target, l, rank);
        // Ranks to slots: stayers keep their slot, arrivals take the freed slots (keep_previous_slots).
        const int H = prev.slots_per_rank();
        std::vector<int> filled(idx(P), 0);
        for (int e = 0; e < E; ++e) {
            const int p = rank[idx(e)];
            out.placement.slot[idx(l) * E + e] = p * H + filled[idx(p)]++;
        }
    }
    out.placement = keep_previous_slots(out.placement, prev);
    return out;
}

} // namespace

MovePlan budgeted_placement(const GroupLoads& loads, const MoveRequest& rq) {
    check_request(loads, rq);
    Placement relabeled;
    if (rq.target) relabeled = relabel_to_previous(*rq.target, *rq.previous);
    const Placement* target = rq.target ? &relabeled : nullptr;
    const LayerChoices ch =
        layer_choices(loads, *rq.previous, target, trajectory_stop(rq), rq.relocation_chains, rq.exhaustive_scan);
    return take_segments(ch, rq, target);
}

struct TrajectoryCache::State {
    GroupLoads loads;
    Placement previous, target, relabeled;
    bool has_target = false, chains = true, exhaustive = false, valid = false;
    std::vector<TrajectoryRun> runs;
    std::int64_t reused = 0, calls = 0;
};

TrajectoryCache::TrajectoryCache() : state_(std::make_unique<State>()) {}
TrajectoryCache::~TrajectoryCache() = default;
std::int64_t TrajectoryCache::reused() const {
    return state_->reused;
}
std::int64_t TrajectoryCache::calls() const {
    return state_->calls;
}

MovePlan budgeted_placement(const GroupLoads& loads, const MoveRequest& rq, TrajectoryCache& cache) {
    check_request(loads, rq);
    TrajectoryCache::State& st = *cache.state_;
    ++st.calls;
    const bool same_placements = st.valid && st.has_target == (rq.target != nullptr) &&
                                 (!rq.target || st.target == *rq.target) && st.previous == *rq.previous;
    const bool same = same_placements && st.chains == rq.relocation_chains && st.exhaustive == rq.exhaustive_scan &&
                      st.loads.layers == loads.layers && st.loads.experts == loads.experts &&
                      st.loads.groups == loads.groups && st.loads.w == loads.w;
    if (same) {
        ++st.reused;
    } else {
        st.valid = false;
        st.loads = loads;
        if (!same_placements) { // the relabeled target depends only on the target and previous
            st.previous = *rq.previous;
            st.has_target = rq.target != nullptr;
            if (rq.target) {
                st.target = *rq.target;
                st.relabeled = relabel_to_previous(*rq.target, *rq.previous);
            }
        }
        st.chains = rq.relocation_chains;
        st.exhaustive = rq.exhaustive_scan;
        st.runs = trajectory_runs(st.loads, st.previous, st.chains, st.exhaustive);
        st.valid = true;
    }
    const Placement* target = st.has_target ? &st.relabeled : nullptr;
    const LayerChoices ch = choices_of(st.runs, st.loads, st.previous, target, trajectory_stop(rq));
    return take_segments(ch, rq, target);
}

MovePlan place_from_previous(std::span<const std::uint64_t> loads, const Placement& lpt, const MoveRequest& rq) {
    if (!rq.previous) throw std::invalid_argument("place_from_previous: no previous placement");
    MoveRequest r = rq;
    r.target = &lpt;
    return budgeted_placement(aggregate_group_loads(loads, lpt.layers, lpt.experts), r);
}

std::vector<std::int64_t> layer_moves(const Placement& next, const Placement& previous) {
    std::vector<std::int64_t> out;
    for (const auto& layer : placement_moves(next, previous))
        out.push_back(static_cast<std::int64_t>(layer.size()));
    return out;
}

std::vector<std::int64_t> layer_move_allowance(const std::vector<std::int64_t>& layer_moves, std::int64_t max_moves,
                                               int experts, bool no_extra) {
    std::vector<std::int64_t> out = layer_moves;
    // A budget of every expert of every layer cannot bind: it is unlimited.
    if (max_moves >= static_cast<std::int64_t>(layer_moves.size()) * experts) max_moves = -1;
    if (max_moves < 0) {
        if (!no_extra) std::fill(out.begin(), out.end(), -1);
        return out;
    }
    if (no_extra || out.empty()) return out;
    std::int64_t sum = 0;
    for (const std::int64_t m : layer_moves)
        sum += m;
    const std::int64_t left = std::max<std::int64_t>(0, max_moves - sum);
    const auto L = static_cast<std::int64_t>(out.size());
    for (std::int64_t l = 0; l < L; ++l)
        out[idx(l)] += left / L + (l < left % L ? 1 : 0);
    return out;
}

RunHistory fold_history(const RunHistory* before, std::span<const std::uint64_t> loads, int L, int E, double decay) {
    if (!(decay >= 0 && decay <= 1)) throw std::invalid_argument("fold_history: decay outside [0, 1]");
    const std::size_t n = static_cast<std::size_t>(L) * static_cast<std::size_t>(E);
    if (L <= 0 || E <= 0 || loads.size() != n) throw std::invalid_argument("fold_history: loads are not L x E");
    if (before && (before->layers != L || before->experts != E || before->loads.size() != n))
        throw std::invalid_argument("fold_history: the history is not L x E");
    RunHistory h;
    h.layers = L;
    h.experts = E;
    h.decay = decay;
    h.steps = before ? before->steps + 1 : 1;
    h.weight = before ? decay * before->weight + 1 : 1;
    h.loads.resize(n);
    for (std::size_t i = 0; i < n; ++i)
        h.loads[i] = (before ? decay * before->loads[i] : 0.0) + static_cast<double>(loads[i]);
    return h;
}

std::vector<std::uint64_t> history_mean_loads(const RunHistory& h) {
    std::vector<std::uint64_t> out(h.loads.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::uint64_t>(std::llround(h.loads[i] / h.weight));
    return out;
}

std::string placement_fingerprint(const Placement& pi) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const std::int32_t x : {pi.layers, pi.experts, pi.ep_ranks})
        h = fnv1a64(&x, sizeof x, h);
    for (const int v : pi.slot) {
        const std::int32_t x = v;
        h = fnv1a64(&x, sizeof x, h);
    }
    return hex64(h);
}

MigrationCost resolve_migration_cost(const Topology& topology, const ModelDescription& model) {
    const MigrationModel& m = topology.migration;
    std::int64_t params = m.expert_parameters > 0 ? m.expert_parameters : model.expert_params;
    if (params <= 0) {
        for (const std::string& name : known_model_names())
            if (name == model.name) params = known_model(name).expert_params;
    }
    if (params <= 0)
        throw InputError("topology: migration: the expert parameters of model '" + model.name +
                         "' are unknown; give migration.expert_parameters");
    MigrationCost c;
    c.expert_bytes = m.state_bytes_per_param * static_cast<double>(params);
    c.intra_node_GBps = m.intra_node_GBps;
    c.inter_node_GBps = m.inter_node_GBps;
    c.seconds_per_U = m.seconds_per_U > 0 ? m.seconds_per_U
                                          : 6.0 * static_cast<double>(topology.token_cap) *
                                                static_cast<double>(params) / (m.achieved_TFLOPs * 1e12);
    if (!std::isfinite(c.seconds_per_U) || !(c.seconds_per_U > 0) || !std::isfinite(c.expert_bytes))
        throw InputError("topology: migration: seconds_per_U derived as 6 x token_cap " +
                         std::to_string(topology.token_cap) + " x expert parameters " + std::to_string(params) +
                         " / (achieved_TFLOPs x 1e12) is not a finite number > 0; give migration.seconds_per_U");
    c.node_of_rank = topology.node_of_rank();
    c.plan_seconds = m.plan_seconds;
    c.overlap_planning = m.overlap_planning;
    return c;
}

double step_overhead_seconds(const MigrationCost& cost, double moves_seconds) {
    return cost.overlap_planning ? std::max(cost.plan_seconds, moves_seconds) : cost.plan_seconds + moves_seconds;
}

} // namespace routepack
