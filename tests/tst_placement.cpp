// Placement (Algorithm 1, eqs. 10, 22), row count (eq. 9: bounds, FixedRowFFD, exact search) and
// metrics (eqs. 21-23, karmarkar-karp baseline): hand-worked cases with the arithmetic in comments,
// invariants on random cases with fixed seeds, and a brute-force property test of R*.
#include "core/model/route_counts.h"
#include "core/plan/run_steps.h"
#include "core/plan/score/metrics.h"
#include "core/plan/score/packing.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/placement_refine.h"
#include "core/plan/search/rowcount.h"
#include "core/util/errors.h"
#include "core/util/grid.h"
#include "core/util/index.h"
#include "core/util/rng.h"
#include "tests/testutil.h"

#include <QtTest>

#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <span>

using namespace routepack;

namespace {

QString input_error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const InputError& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("no error");
}

std::vector<std::uint64_t> peak_per_layer(const std::vector<std::uint64_t>& G, int L, int P) {
    std::vector<std::uint64_t> out(L);
    for (int l = 0; l < L; ++l)
        out[l] = *std::max_element(G.begin() + l * P, G.begin() + (l + 1) * P);
    return out;
}

/// A packing problem with one MoE layer, one EP rank, one shard and zero demand: enough for
/// validate_layout, which only looks at lengths, cap and shape.
PackingProblem lengths_problem(const std::vector<std::int64_t>& length, std::int64_t C, int D) {
    PackingProblem p;
    p.n = static_cast<int>(length.size());
    p.L = 1;
    p.P = 1;
    p.D = D;
    p.G = 1;
    p.C = C;
    p.length = length;
    p.demand.assign(length.size(), 0);
    p.shard_of_slot.assign(D, 0);
    p.shards = {std::vector<int>(D)};
    std::iota(p.shards[0].begin(), p.shards[0].end(), 0);
    p.stages = {AttentionStage{"kda", 1.0, 0.0}};
    return p;
}

/// Independent layout check (eqs. 6-8 + rectangle), not sharing code with validate_layout.
bool layout_ok(const Layout& x, const std::vector<std::int64_t>& length, std::int64_t C, int D) {
    if (x.dp_slots != D || x.rows < 1 || x.offsets.size() != static_cast<std::size_t>(x.rows) * D + 1 ||
        x.offsets.front() != 0 || x.offsets.back() != static_cast<int>(x.samples.size()))
        return false;
    std::vector<int> seen(length.size(), 0);
    for (int k = 0; k < x.cell_count(); ++k) {
        if (x.offsets[k + 1] < x.offsets[k]) return false;
        const std::span<const int> cell = x.cell(k);
        if (cell.empty()) return false;
        std::int64_t sum = 0;
        for (int i : cell) {
            if (i < 0 || i >= static_cast<int>(length.size()) || seen[i]++) return false;
            sum += length[i];
        }
        if (sum > C) return false;
    }
    return std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; });
}

/// Brute force: is there a partition of the samples into exactly K non-empty cells of at most C
/// tokens? (Cells are unlabeled here; any such partition dealt row-major is an R x D layout.)
bool exists_layout_brute(const std::vector<std::int64_t>& length, std::int64_t C, int K) {
    const int n = static_cast<int>(length.size());
    if (K < 1 || K > n) return false;
    std::vector<std::int64_t> cell;
    std::function<bool(int)> rec = [&](int j) -> bool {
        if (static_cast<int>(cell.size()) + (n - j) < K) return false; // cannot reach K non-empty cells
        if (j == n) return static_cast<int>(cell.size()) == K;
        // Indices, not a range-for: the recursion appends to `cell`, which would invalidate iterators.
        for (std::size_t c = 0; c < cell.size(); ++c) { // NOLINT(modernize-loop-convert)
            if (cell[c] + length[j] > C) continue;
            cell[c] += length[j];
            if (rec(j + 1)) return true;
            cell[c] -= length[j];
        }
        if (static_cast<int>(cell.size()) < K) {
            cell.push_back(length[j]);
            if (rec(j + 1)) return true;
            cell.pop_back();
        }
        return false;
    };
    return rec(0);
}

} // namespace

class TestPlacement : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The step summary of a run (what sweep and the Run view report), on three hand-computed steps
    // of 2 MoE layers x 4 experts on 2 EP ranks (slots 0-1 on rank 0, 2-3 on rank 1):
    //   step 0: layer 0 slots [0,1,2,3], layer 1 [0,1,2,3]
    //   step 1: layer 0 [1,0,2,3] (experts 0 and 1 swap slots inside rank 0: 2 slots change, no
    //           expert changes rank), layer 1 unchanged
    //   step 2: layer 0 [2,0,1,3] (slots 1 and 2 change: expert 0 goes to rank 1, expert 2 to rank
    //           0: 2 moves), layer 1 [1,0,3,2] (all 4 slots change, every expert stays on its rank)
    // Gains: 100 x (90 - 100) / 100 = -10; baseline 0 gives 0; 100 x (100 - 80) / 80 = +25.
    void runStepSummary() {
        auto placement = [](std::vector<int> slots) {
            Placement p;
            p.layers = 2;
            p.experts = 4;
            p.ep_ranks = 2;
            p.slot = std::move(slots);
            return p;
        };
        const Placement p0 = placement({0, 1, 2, 3, 0, 1, 2, 3});
        const Placement p1 = placement({1, 0, 2, 3, 0, 1, 2, 3});
        const Placement p2 = placement({2, 0, 1, 3, 1, 0, 3, 2});
        const std::vector<RunStepInput> steps = {{100, 90, &p0}, {0, 5, &p1}, {80, 100, &p2}};
        const std::vector<RunStepSummary> s = summarize_steps(steps);
        QCOMPARE(s.size(), std::size_t(3));
        QCOMPARE(s[0].gain_pct, -10.0);
        QCOMPARE(s[0].churn_slots, std::int64_t(-1));
        QCOMPARE(s[0].churn_layer, -1);
        QCOMPARE(s[0].churn_layer_slots, std::int64_t(0));
        QCOMPARE(s[0].moves, std::int64_t(-1));
        QCOMPARE(s[1].gain_pct, 0.0);
        QCOMPARE(s[1].churn_slots, std::int64_t(2));
        QCOMPARE(s[1].churn_layer, 0);
        QCOMPARE(s[1].churn_layer_slots, std::int64_t(2));
        QCOMPARE(s[1].moves, std::int64_t(0));
        QCOMPARE(s[2].gain_pct, 25.0);
        QCOMPARE(s[2].churn_slots, std::int64_t(6));
        QCOMPARE(s[2].churn_layer, 1);
        QCOMPARE(s[2].churn_layer_slots, std::int64_t(4));
        QCOMPARE(s[2].moves, std::int64_t(2));
        // The same placement twice: nothing changes, no churn layer.
        const std::vector<RunStepInput> same = {{1, 1, &p2}, {1, 1, &p2}};
        const auto t = summarize_steps(same);
        QCOMPARE(t[1].churn_slots, std::int64_t(0));
        QCOMPARE(t[1].churn_layer, -1);
        QCOMPARE(t[1].moves, std::int64_t(0));
        QCOMPARE(gain_pct(0, 7), 0.0);
        QCOMPARE(gain_pct(-1, 7), 0.0);
        QVERIFY(summarize_steps({}).empty());
        const std::vector<RunStepInput> missing = {{1, 1, nullptr}};
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, summarize_steps(missing));
    }
    // ---- placement -------------------------------------------------------------------------
    void aggregateLoadsHand();
    void lptIssueExample();
    void lptHandCases();
    void lptRejectsIndivisible();
    void lptRandomInvariants();
    void lptIndependentOfWorkers();
    void refineHand();
    void refineRandomInvariants();
    void refineEqualsPlainFirstImprovement();
    void refineErrors();
    void lptMatchesLinearScan();
    void aggregateLoadsRandomBlocks();
    void cvGlobalHand();
    void comparePlacementsHand();
    void physicalToLogicalInverse();
    void rankMaxOverMeanHand();
    void slotChangesHand();
    void slotChangesRandomInvariants();
    void movesHand();
    void movesRandomInvariants();
    void movesErrors();
    void routeCountsHand();
    // ---- row count ---------------------------------------------------------------------------
    void ffdHandCases();
    void ffdFailures();
    void minRowsCertifiedByVolume();
    void minRowsCertifiedByL2();
    void minRowsL2NearInt64Limit();
    void minRowsExactFindsWhatFfdMisses();
    void minRowsExactProvesInfeasible();
    void minRowsBudgetTooSmall();
    void minRowsMinRowsBound();
    void minRowsErrors();
    void minRowsRowMultiple();
    void minRowsRowMultipleBruteForce();
    void minRowsPropertyBruteForce();
    void minRowsSearchAgreesWithBruteForce();
    void minRowsRealisticWindow();
    // ---- metrics and karmarkar-karp ------------------------------------------------------------
    void kkHandTwoWay();
    void kkHandThreeWay();
    void kkEmptyParts();
    void layoutMetricsHand();
    void layoutMetricsReportsKkCapViolation();
    // ---- the numeric code's 2-D table (core/util/grid.h) ---------------------------------------
    void gridHand();
};

void TestPlacement::aggregateLoadsHand() {
    // n = 2 samples, L = 2 layers, E = 3 experts; counts [i][l][e]:
    //   sample 0: l0 (1,2,3), l1 (0,0,4);  sample 1: l0 (5,0,1), l1 (2,2,2)
    //   L[0] = (1+5, 2+0, 3+1) = (6,2,4);  L[1] = (0+2, 0+2, 4+2) = (2,2,6)
    const std::vector<std::uint32_t> counts{1, 2, 3, 0, 0, 4, 5, 0, 1, 2, 2, 2};
    QCOMPARE(aggregate_expert_loads(counts, 2, 2, 3), (std::vector<std::uint64_t>{6, 2, 4, 2, 2, 6}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, aggregate_expert_loads(counts, 3, 2, 3));
}

void TestPlacement::lptIssueExample() {
    // P = 2 ranks, H = 3 slots each, E = 6, loads L = (8, 5, 5, 6, 10, 1) for e = 0..5.
    // argsort(-L, e) = e4(10), e0(8), e3(6), e1(5), e2(5), e5(1)   (e1 before e2: tie by id)
    //   e4: G = (0, 0)   -> p0 (tie, smaller p), slot 0*3+0 = 0;  G = (10, 0),  n = (1, 0)
    //   e0: G = (10, 0)  -> p1, slot 1*3+0 = 3;                    G = (10, 8),  n = (1, 1)
    //   e3: G = (10, 8)  -> p1, slot 3+1 = 4;                      G = (10, 14), n = (1, 2)
    //   e1: G = (10, 14) -> p0, slot 0+1 = 1;                      G = (15, 14), n = (2, 2)
    //   e2: G = (15, 14) -> p1, slot 3+2 = 5;                      G = (15, 19), n = (2, 3)
    //   e5: only p0 has an open slot -> slot 0+2 = 2;              G = (16, 19), n = (3, 3)
    // pi = (3, 1, 5, 4, 0, 2); LPT peak = 19.
    // Identity: rank 0 = e0..e2 = 8+5+5 = 18, rank 1 = e3..e5 = 6+10+1 = 17; peak = 18.
    // (Greedy LPT with a cardinality limit is not optimal: here it is worse than identity.)
    const std::vector<std::uint64_t> loads{8, 5, 5, 6, 10, 1};
    const Placement lpt = lpt_placement(loads, 1, 6, 2);
    QCOMPARE(lpt.slot, (std::vector<int>{3, 1, 5, 4, 0, 2}));
    QCOMPARE(lpt.slots_per_rank(), 3);
    QCOMPARE(lpt.rank_of(0, 4), 0);
    QCOMPARE(lpt.rank_of(0, 0), 1);
    const auto G_lpt = rank_loads(loads, lpt);
    QCOMPARE(G_lpt, (std::vector<std::uint64_t>{16, 19}));
    const auto G_id = rank_loads(loads, identity_placement(1, 6, 2));
    QCOMPARE(G_id, (std::vector<std::uint64_t>{18, 17}));
    QCOMPARE(peak_per_layer(G_lpt, 1, 2)[0], std::uint64_t{19});
    QCOMPARE(peak_per_layer(G_id, 1, 2)[0], std::uint64_t{18});
}

void TestPlacement::lptHandCases() {
    // Two layers, E = 4, P = 2 (H = 2).
    // Layer 0: L = (3, 7, 7, 1): order e1(7), e2(7), e0(3), e3(1)
    //   e1 -> p0 slot 0, G = (7, 0); e2 -> p1 slot 2, G = (7, 7); e0 -> p0 (tie) slot 1, G = (10, 7);
    //   e3 -> p1 (p0 full) slot 3, G = (10, 8).  pi_0 = (1, 0, 2, 3)
    // Layer 1: all loads 5: order e0, e1, e2, e3
    //   e0 -> p0 slot 0, G = (5, 0); e1 -> p1 slot 2, G = (5, 5); e2 -> p0 (tie) slot 1, G = (10, 5);
    //   e3 -> p1 slot 3.  pi_1 = (0, 2, 1, 3)
    const std::vector<std::uint64_t> loads{3, 7, 7, 1, 5, 5, 5, 5};
    const Placement pi = lpt_placement(loads, 2, 4, 2);
    QCOMPARE(pi.slot, (std::vector<int>{1, 0, 2, 3, 0, 2, 1, 3}));
    QCOMPARE(rank_loads(loads, pi), (std::vector<std::uint64_t>{10, 8, 10, 10}));

    // P = 1: every expert on rank 0, slots in argsort(-L, e) order. L = (2, 9, 4): e1 -> 0, e2 -> 1, e0 -> 2.
    QCOMPARE(lpt_placement(std::vector<std::uint64_t>{2, 9, 4}, 1, 3, 1).slot, (std::vector<int>{2, 0, 1}));
    // H = 1 (P = E): rank p gets the (p+1)-th heaviest. L = (3, 7, 7, 1): e1 -> 0, e2 -> 1, e0 -> 2, e3 -> 3.
    QCOMPARE(lpt_placement(std::vector<std::uint64_t>{3, 7, 7, 1}, 1, 4, 4).slot, (std::vector<int>{2, 0, 1, 3}));
    // A zero-load layer: G stays (0, 0), so every argmin is the tie p0 until it is full -> identity.
    QCOMPARE(lpt_placement(std::vector<std::uint64_t>{0, 0, 0, 0}, 1, 4, 2).slot, (std::vector<int>{0, 1, 2, 3}));
    // L = 0 layers: empty placement.
    QVERIFY(lpt_placement(std::vector<std::uint64_t>{}, 0, 4, 2).slot.empty());
}

void TestPlacement::lptRejectsIndivisible() {
    const std::vector<std::uint64_t> loads(6, 1);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, lpt_placement(loads, 1, 6, 4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, identity_placement(1, 6, 4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, lpt_placement(loads, 2, 6, 2)); // size != L*E
    try {
        lpt_placement(loads, 1, 6, 4);
    } catch (const std::invalid_argument& e) {
        QVERIFY2(QString(e.what()).contains("6 experts are not divisible by 4 EP ranks"), e.what());
    }
}

/// Algorithm 1 written as the paper states it (argmin over every open rank of (G_p, p), a linear
/// scan) against lpt_placement (a heap) on random layers with many equal loads and every EP count
/// dividing E: the same slot for every expert.
void TestPlacement::lptMatchesLinearScan() {
    Rng rng(2024);
    for (int E : {8, 12, 64, 128})
        for (int P = 1; P <= E; ++P) {
            if (E % P) continue;
            const int L = 3, H = E / P;
            std::vector<std::uint64_t> loads(static_cast<std::size_t>(L) * E);
            for (auto& v : loads)
                v = rng.below(E % 3 == 0 ? 4 : 1000); // ranges 0..3 force ties
            std::vector<int> want(loads.size());
            for (int l = 0; l < L; ++l) {
                const std::uint64_t* Ll = loads.data() + static_cast<std::size_t>(l) * E;
                std::vector<int> order(static_cast<std::size_t>(E));
                std::iota(order.begin(), order.end(), 0);
                std::sort(order.begin(), order.end(),
                          [&](int a, int b) { return Ll[a] != Ll[b] ? Ll[a] > Ll[b] : a < b; });
                std::vector<std::uint64_t> G(static_cast<std::size_t>(P), 0);
                std::vector<int> n(static_cast<std::size_t>(P), 0);
                for (int e : order) {
                    int best = -1;
                    for (int p = 0; p < P; ++p)
                        if (n[p] < H && (best < 0 || G[p] < G[best])) best = p;
                    want[static_cast<std::size_t>(l) * E + e] = best * H + n[best]++;
                    G[best] += Ll[e];
                }
            }
            QCOMPARE(lpt_placement(loads, L, E, P).slot, want);
        }
}

/// Loads summed block by block in parallel equal the sequential sums (more samples than one block).
void TestPlacement::aggregateLoadsRandomBlocks() {
    Rng rng(77);
    const std::size_t n = 1000;
    const int L = 3, E = 5;
    std::vector<std::uint32_t> counts(n * L * E);
    for (auto& v : counts)
        v = static_cast<std::uint32_t>(rng.below(std::uint64_t{1} << 32));
    std::vector<std::uint64_t> want(static_cast<std::size_t>(L) * E, 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < want.size(); ++k)
            want[k] += counts[i * want.size() + k];
    QCOMPARE(aggregate_expert_loads(counts, n, L, E), want);
    QVERIFY(want[0] > (std::uint64_t{1} << 32)); // the sums do need 64 bits
}

void TestPlacement::lptRandomInvariants() {
    for (unsigned seed = 1; seed <= 60; ++seed) {
        std::mt19937_64 rng(seed);
        const int P = 1 << (rng() % 4);   // 1, 2, 4, 8
        const int H = 1 + int(rng() % 5); // 1..5
        const int E = P * H;
        const int L = 1 + int(rng() % 5);
        const int maxload = (seed % 3 == 0) ? 3 : 1000; // small range -> many ties
        std::vector<std::uint64_t> loads(static_cast<std::size_t>(L) * E);
        for (auto& v : loads)
            v = rng() % maxload;
        const Placement pi = lpt_placement(loads, L, E, P);
        QCOMPARE(pi.layers, L);
        QCOMPARE(pi.experts, E);
        QCOMPARE(pi.ep_ranks, P);
        const auto G = rank_loads(loads, pi);
        const auto G_id = rank_loads(loads, identity_placement(L, E, P));
        for (int l = 0; l < L; ++l) {
            std::vector<int> per_rank(P, 0);
            std::set<int> slots;
            std::uint64_t total = 0, gsum = 0, gsum_id = 0;
            for (int e = 0; e < E; ++e) {
                const int v = pi.at(l, e);
                QVERIFY(v >= 0 && v < E);
                slots.insert(v);
                ++per_rank[pi.owner(v)];
                total += loads[static_cast<std::size_t>(l) * E + e];
            }
            QCOMPARE(static_cast<int>(slots.size()), E); // pi_l is a permutation
            for (int p = 0; p < P; ++p)
                QCOMPARE(per_rank[p], H); // exactly H experts per rank
            for (int p = 0; p < P; ++p) {
                gsum += G[static_cast<std::size_t>(l) * P + p];
                gsum_id += G_id[static_cast<std::size_t>(l) * P + p];
            }
            QCOMPARE(gsum, total);
            QCOMPARE(gsum_id, total);
            // LPT's first P experts go one per rank, so its peak is at least the largest expert.
            QVERIFY(peak_per_layer(G, L, P)[l] >=
                    *std::max_element(loads.begin() + l * E, loads.begin() + (l + 1) * E));
        }
    }
}

namespace {

/// A window of n samples, L MoE layers, E experts; counts [n][L][E] (lengths: the counts' layer-0 sum).
Trace trace_of(int L, int E, const std::vector<std::vector<std::uint32_t>>& counts) {
    Trace t;
    t.model.num_hidden_layers = L;
    t.model.experts = E;
    t.model.top_k = 1;
    for (int l = 0; l < L; ++l)
        t.model.moe_layers.push_back(l);
    for (std::size_t i = 0; i < counts.size(); ++i) {
        SampleRecord r;
        r.info.id = std::to_string(i);
        r.counts = counts[i];
        r.info.length =
            std::max<std::int64_t>(1, std::accumulate(r.counts.begin(), r.counts.begin() + E, std::int64_t{0}));
        t.append(std::move(r));
    }
    return t;
}

/// F = sum_l sum_rs max_p W[rs][l][p], recomputed from scratch (tokens).
std::int64_t peak_sum_of(const Trace& t, const Placement& pi, const std::vector<int>& rs, int RS) {
    const int L = pi.layers, E = pi.experts, P = pi.ep_ranks;
    std::int64_t f = 0;
    for (int l = 0; l < L; ++l) {
        std::vector<std::int64_t> w(static_cast<std::size_t>(RS) * P, 0);
        for (std::size_t i = 0; i < t.size(); ++i)
            for (int e = 0; e < E; ++e)
                w[static_cast<std::size_t>(rs[i]) * P + pi.rank_of(l, e)] += t.count(i, l, e);
        for (int r = 0; r < RS; ++r)
            f += *std::max_element(w.begin() + static_cast<std::ptrdiff_t>(r) * P,
                                   w.begin() + static_cast<std::ptrdiff_t>(r + 1) * P);
    }
    return f;
}

} // namespace

void TestPlacement::refineHand() {
    // One layer, E = 4, P = 2 (H = 2). Sample 0 (row-shard 0) sends 10 tokens to e0 and e2, sample 1
    // (row-shard 1) 10 to e1 and e3. Start: e0 -> slot 0, e2 -> slot 1 (rank 0), e1 -> slot 2,
    // e3 -> slot 3 (rank 1): row-shard 0 loads (20, 0), row-shard 1 (0, 20), F = 20 + 20 = 40.
    // First pair (e0, e1), ranks 0 and 1: e0 -> rank 1, e1 -> rank 0 gives (10, 10) and (10, 10),
    // F = 20, delta -20: kept (e0 takes slot 2, e1 slot 0). No swap lowers a max of 10 any further.
    const Trace t = trace_of(1, 4, {{10, 0, 10, 0}, {0, 10, 0, 10}});
    Placement start;
    start.layers = 1;
    start.experts = 4;
    start.ep_ranks = 2;
    start.slot = {0, 2, 1, 3};
    const std::vector<int> rs{0, 1};
    const PlacementRefinement r = refine_placement(t, start, rs, 2, 8);
    QCOMPARE(r.placement.slot, (std::vector<int>{2, 0, 1, 3}));
    QCOMPARE(r.peak_sum_before, std::int64_t{40});
    QCOMPARE(r.peak_sum_after, std::int64_t{20});
    QCOMPARE(r.swaps, std::int64_t{1});
    // Pass 1 scores (e0,e1) [kept], then with ranks (1,0,0,1): (e0,e2), (e1,e3), (e2,e3); pass 2 the
    // four pairs of different ranks again. Ties keep the lower rank as the busiest, so rank 0 is every
    // row-shard's peak and no pair is skipped.
    QCOMPARE(r.evaluations, std::int64_t{8});
    // No passes: the start comes back unchanged, F measured.
    const PlacementRefinement none = refine_placement(t, start, rs, 2, 0);
    QCOMPARE(none.placement, start);
    QCOMPARE(none.peak_sum_after, std::int64_t{40});
    QCOMPARE(none.swaps, std::int64_t{0});
}

void TestPlacement::refineRandomInvariants() {
    // Random windows (fixed seeds): the result is a placement with H slots per rank, F never rises,
    // both F values match a recount, the result is a local optimum of the swap neighbourhood (no
    // single swap of two experts on different ranks lowers F_l), and 1 or 2 workers agree.
    Rng rng(20261202);
    for (int trial = 0; trial < 30; ++trial) {
        const int L = 1 + static_cast<int>(rng.below(3)), P = trial % 2 ? 2 : 4,
                  E = P * (1 + static_cast<int>(rng.below(3)));
        const int n = 2 + static_cast<int>(rng.below(10)), RS = 1 + static_cast<int>(rng.below(4));
        std::vector<std::vector<std::uint32_t>> counts(static_cast<std::size_t>(n));
        for (auto& c : counts)
            for (int k = 0; k < L * E; ++k)
                c.push_back(static_cast<std::uint32_t>(rng.below(20)));
        const Trace t = trace_of(L, E, counts);
        std::vector<int> rs(static_cast<std::size_t>(n));
        for (auto& r : rs)
            r = static_cast<int>(rng.below(static_cast<std::uint64_t>(RS)));
        const Placement start = identity_placement(L, E, P);
        PlacementRefinement one, two;
        tbb::task_arena(1).execute([&] { one = refine_placement(t, start, rs, RS, 1000); });
        tbb::task_arena(2).execute([&] { two = refine_placement(t, start, rs, RS, 1000); });
        QCOMPARE(one.placement, two.placement);
        QCOMPARE(one.swaps, two.swaps);
        const Placement& pi = one.placement;
        for (int l = 0; l < L; ++l) {
            std::vector<int> slots(pi.slot.begin() + l * E, pi.slot.begin() + (l + 1) * E);
            std::sort(slots.begin(), slots.end());
            std::vector<int> want(static_cast<std::size_t>(E));
            std::iota(want.begin(), want.end(), 0);
            QCOMPARE(slots, want);
        }
        QCOMPARE(one.peak_sum_before, peak_sum_of(t, start, rs, RS));
        QCOMPARE(one.peak_sum_after, peak_sum_of(t, pi, rs, RS));
        QVERIFY(one.peak_sum_after <= one.peak_sum_before);
        QCOMPARE(one.swaps > 0, one.peak_sum_after < one.peak_sum_before);
        const std::int64_t f = one.peak_sum_after;
        for (int l = 0; l < L; ++l)
            for (int a = 0; a < E; ++a)
                for (int b = a + 1; b < E; ++b) {
                    if (pi.rank_of(l, a) == pi.rank_of(l, b)) continue;
                    Placement q = pi;
                    std::swap(q.slot[static_cast<std::size_t>(l * E + a)], q.slot[static_cast<std::size_t>(l * E + b)]);
                    QVERIFY2(
                        peak_sum_of(t, q, rs, RS) >= f,
                        qPrintable(QStringLiteral("trial %1 layer %2 swap e%3 e%4").arg(trial).arg(l).arg(a).arg(b)));
                }
        // A stop token that has fired ends every layer before its first pass: the start, unchanged.
        const std::atomic<bool> set{true};
        const PlacementRefinement stopped = refine_placement(t, start, rs, RS, 1000, StopToken(&set));
        QCOMPARE(stopped.placement, start);
        QCOMPARE(stopped.swaps, std::int64_t{0});
        QCOMPARE(stopped.evaluations, std::int64_t{0});
        QCOMPARE(stopped.peak_sum_after, one.peak_sum_before);
    }
}

void TestPlacement::refineEqualsPlainFirstImprovement() {
    // refine_placement against the plain first-improvement search written here: per layer and pass,
    // expert pairs (e1 < e2) on different ranks in order, a swap kept when a full recount of the peak
    // sum drops, within the move allowance against a previous placement when one is given. The same
    // placements and swap counts on random windows (fixed seeds) of 1 to 6 row-shards, loads of 0..2
    // tokens (ties everywhere) and 0..1000, with and without a move limit.
    Rng rng(20261207);
    std::int64_t swaps_seen = 0;
    for (int trial = 0; trial < 60; ++trial) {
        const int L = 1 + static_cast<int>(rng.below(2)), P = trial % 3 == 0 ? 2 : trial % 3 == 1 ? 4 : 8;
        const int E = P * (1 + static_cast<int>(rng.below(3)));
        const int n = 2 + static_cast<int>(rng.below(12)), RS = 1 + static_cast<int>(rng.below(6));
        const std::uint64_t top = trial % 2 ? 3 : 1001;
        std::vector<std::vector<std::uint32_t>> counts(static_cast<std::size_t>(n));
        for (auto& c : counts)
            for (int k = 0; k < L * E; ++k)
                c.push_back(static_cast<std::uint32_t>(rng.below(top)));
        const Trace t = trace_of(L, E, counts);
        std::vector<int> rs(static_cast<std::size_t>(n));
        for (auto& r : rs)
            r = static_cast<int>(rng.below(static_cast<std::uint64_t>(RS)));
        Placement start = identity_placement(L, E, P);
        for (int l = 0; l < L; ++l)
            for (int e = E - 1; e > 0; --e)
                std::swap(start.slot[static_cast<std::size_t>(l * E + e)],
                          start.slot[static_cast<std::size_t>(
                              l * E + static_cast<int>(rng.below(static_cast<std::uint64_t>(e + 1))))]);
        const bool limited = trial % 4 >= 2;
        const Placement previous = identity_placement(L, E, P);
        RefineMoveLimit limit{&previous, std::vector<std::int64_t>(static_cast<std::size_t>(L), -1)};
        for (auto& a : limit.allowance)
            a = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(E)));
        const PlacementRefinement got = refine_placement(t, start, rs, RS, 8, StopToken(), limited ? &limit : nullptr);
        Placement want = start;
        std::int64_t swaps = 0;
        for (int l = 0; l < L; ++l) {
            const auto at = [&](int e) { return static_cast<std::size_t>(l * E + e); };
            std::int64_t moved = 0;
            for (int e = 0; e < E; ++e)
                moved += want.rank_of(l, e) != previous.rank_of(l, e) ? 1 : 0;
            std::int64_t f = peak_sum_of(t, want, rs, RS);
            for (int pass = 0; pass < 8; ++pass) {
                bool kept = false;
                for (int e1 = 0; e1 < E; ++e1)
                    for (int e2 = e1 + 1; e2 < E; ++e2) {
                        const int a = want.rank_of(l, e1), b = want.rank_of(l, e2);
                        if (a == b) continue;
                        const int h1 = previous.rank_of(l, e1), h2 = previous.rank_of(l, e2);
                        const int dc = (b != h1) - (a != h1) + (a != h2) - (b != h2);
                        if (limited && limit.allowance[static_cast<std::size_t>(l)] >= 0 &&
                            moved + dc > limit.allowance[static_cast<std::size_t>(l)])
                            continue;
                        std::swap(want.slot[at(e1)], want.slot[at(e2)]);
                        const std::int64_t g = peak_sum_of(t, want, rs, RS);
                        if (g < f) {
                            f = g;
                            moved += dc;
                            ++swaps;
                            kept = true;
                        } else {
                            std::swap(want.slot[at(e1)], want.slot[at(e2)]);
                        }
                    }
                if (!kept) break;
            }
        }
        QVERIFY2(got.placement == want, qPrintable(QStringLiteral("trial %1").arg(trial)));
        QCOMPARE(got.swaps, swaps);
        QCOMPARE(got.peak_sum_after, peak_sum_of(t, want, rs, RS));
        swaps_seen += swaps;
    }
    QVERIFY2(swaps_seen > 200, qPrintable(QString::number(swaps_seen)));
}

void TestPlacement::refineErrors() {
    const Trace t = trace_of(1, 4, {{1, 0, 0, 0}, {0, 1, 0, 0}});
    const Placement pi = identity_placement(1, 4, 2);
    auto message = [&](const std::function<void()>& fn) {
        try {
            fn();
        } catch (const std::invalid_argument& e) {
            return QString::fromStdString(e.what());
        }
        return QStringLiteral("no error");
    };
    const std::vector<int> rs{0, 1};
    QCOMPARE(message([&] { refine_placement(t, identity_placement(2, 4, 2), rs, 2, 1); }),
             QStringLiteral("refine_placement: the placement is not 1 MoE layers x 4 experts"));
    QCOMPARE(message([&] { refine_placement(t, pi, std::vector<int>{0}, 2, 1); }),
             QStringLiteral("refine_placement: 1 row-shard ids for 2 samples"));
    QCOMPARE(message([&] { refine_placement(t, pi, rs, 0, 1); }), QStringLiteral("refine_placement: no row-shards"));
    QCOMPARE(message([&] {
                 refine_placement(t, pi, std::vector<int>{0, 2}, 2, 1);
             }),
             QStringLiteral("refine_placement: row-shard id 2 is not in 0..1"));
    QCOMPARE(message([&] { refine_placement(t, pi, rs, 2, -1); }), QStringLiteral("refine_placement: max_passes < 0"));
}

void TestPlacement::lptIndependentOfWorkers() {
    std::mt19937_64 rng(42);
    const int L = 48, E = 64, P = 8;
    std::vector<std::uint64_t> loads(static_cast<std::size_t>(L) * E);
    for (auto& v : loads)
        v = rng() % 50;
    const Placement many = lpt_placement(loads, L, E, P);
    Placement one;
    tbb::task_arena arena(1);
    arena.execute([&] { one = lpt_placement(loads, L, E, P); });
    QCOMPARE(one, many);
    // Each layer equals the single-layer run on its own loads.
    for (int l = 0; l < L; l += 7) {
        const std::vector<std::uint64_t> row(loads.begin() + l * E, loads.begin() + (l + 1) * E);
        const Placement single = lpt_placement(row, 1, E, P);
        QVERIFY(std::equal(single.slot.begin(), single.slot.end(), many.slot.begin() + l * E));
    }
}

void TestPlacement::cvGlobalHand() {
    // Layer 0: G = (1, 3): mean 2, var ((1-2)^2 + (3-2)^2)/2 = 1, std 1 -> CV 0.5
    // Layer 1: G = (2, 2): CV 0.  Layer 2: G = (0, 0): no load -> 0.
    // CV_global = (0.5 + 0 + 0) / 3 = 1/6.
    QCOMPARE(cv_global(std::vector<std::uint64_t>{1, 3, 2, 2, 0, 0}, 3, 2), 1.0 / 6.0);
    // G = (0, 0, 6): mean 2, var (4 + 4 + 16)/3 = 8, std 2 sqrt 2 -> CV sqrt 2.
    QCOMPARE(cv_global(std::vector<std::uint64_t>{0, 0, 6}, 1, 3), std::sqrt(2.0));
    // Balanced layer: exactly 0 (integer path).
    QCOMPARE(cv_global(std::vector<std::uint64_t>{7, 7, 7, 7}, 1, 4), 0.0);
    QCOMPARE(cv_global(std::vector<std::uint64_t>{}, 0, 4), 0.0);
    // The issue example: LPT (16, 19): mean 17.5, std 1.5 -> 1.5/17.5 = 3/35;
    // identity (18, 17): std 0.5 -> 0.5/17.5 = 1/35.
    QVERIFY(std::abs(cv_global(std::vector<std::uint64_t>{16, 19}, 1, 2) - 3.0 / 35.0) < 1e-15);
    QVERIFY(std::abs(cv_global(std::vector<std::uint64_t>{18, 17}, 1, 2) - 1.0 / 35.0) < 1e-15);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cv_global(std::vector<std::uint64_t>{1, 2, 3}, 1, 2));
}

void TestPlacement::comparePlacementsHand() {
    // L = 2 layers, E = 4 experts on P = 2 EP ranks (H = 2). Layer 0 loads 5, 4, 1, 2: identity puts
    // 5 + 4 = 9 on rank 0 and 3 on rank 1 (CV = sqrt(((9-6)^2 + (3-6)^2) / 2) / 6 = 0.5); LPT takes
    // 5 -> rank 0, 4 -> rank 1, 2 -> rank 1 (4 < 5), 1 -> rank 0: G = 6, 6 (CV 0), slots 0, 2, 1, 3.
    // Layer 1 loads 1, 1, 1, 1: balanced either way (ties by rank: 0, 1, 0, 1 -> slots 0, 2, 1, 3).
    const std::vector<std::uint64_t> loads = {5, 4, 1, 2, 1, 1, 1, 1};
    const PlacementComparison c = compare_placements(loads, 2, 4, 2);
    QCOMPARE(c.identity.slot, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
    QCOMPARE(c.lpt.slot, (std::vector<int>{0, 2, 1, 3, 0, 2, 1, 3}));
    QCOMPARE(c.identity, identity_placement(2, 4, 2));
    QCOMPARE(c.lpt, lpt_placement(loads, 2, 4, 2));
    QCOMPARE(c.rank_loads_identity, (std::vector<std::uint64_t>{9, 3, 2, 2}));
    QCOMPARE(c.rank_loads_lpt, (std::vector<std::uint64_t>{6, 6, 2, 2}));
    QCOMPARE(c.cv_identity, 0.25); // mean of 0.5 and 0 over the two layers (eq. 22)
    QCOMPARE(c.cv_lpt, 0.0);
    QCOMPARE(test::error_of<std::invalid_argument>([&] { (void)compare_placements(loads, 2, 4, 3); }),
             std::string("identity_placement: 4 experts are not divisible by 3 EP ranks"));
}

void TestPlacement::physicalToLogicalInverse() {
    // pi = (3, 1, 5, 4, 0, 2): slot 0 holds e4, 1 e1, 2 e5, 3 e0, 4 e3, 5 e2.
    const Placement pi = lpt_placement(std::vector<std::uint64_t>{8, 5, 5, 6, 10, 1}, 1, 6, 2);
    QCOMPARE(physical_to_logical(pi), (std::vector<int>{4, 1, 5, 0, 3, 2}));
    std::mt19937_64 rng(5);
    std::vector<std::uint64_t> loads(3 * 16);
    for (auto& v : loads)
        v = rng() % 100;
    const Placement big = lpt_placement(loads, 3, 16, 4);
    const auto inv = physical_to_logical(big);
    for (int l = 0; l < 3; ++l)
        for (int e = 0; e < 16; ++e)
            QCOMPARE(inv[static_cast<std::size_t>(l) * 16 + big.at(l, e)], e);
    Placement bad = pi;
    bad.slot[1] = 3; // two experts in slot 3
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, physical_to_logical(bad));
}

void TestPlacement::rankMaxOverMeanHand() {
    // Layer 0: G = (1, 3): max 3 / mean 2 = 1.5. Layer 1: (2, 2): 1. Layer 2: (0, 0): no load -> 1.
    QCOMPARE(rank_max_over_mean(std::vector<std::uint64_t>{1, 3, 2, 2, 0, 0}, 3, 2),
             (std::vector<double>{1.5, 1.0, 1.0}));
    // (0, 0, 6): max 6 / mean 2 = 3.
    QCOMPARE(rank_max_over_mean(std::vector<std::uint64_t>{0, 0, 6}, 1, 3), (std::vector<double>{3.0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rank_max_over_mean(std::vector<std::uint64_t>{1, 2, 3}, 1, 2));
}

void TestPlacement::slotChangesHand() {
    // E = 4, P = 2, two layers. Previous: identity. Next layer 0: logical -> slot (1, 0, 2, 3), i.e.
    // experts 0 and 1 swap slots: slot 0 now holds e1 (was in slot 1), slot 1 holds e0 (was in 0).
    // Next layer 1: identity (nothing moves).
    const Placement prev = identity_placement(2, 4, 2);
    Placement next = prev;
    next.slot = {1, 0, 2, 3, 0, 1, 2, 3};
    const auto m = placement_slot_changes(next, prev);
    QCOMPARE(m.size(), std::size_t{2});
    QCOMPARE(m[0], (std::vector<SlotMove>{{0, 1, 1, 0}, {1, 0, 0, 1}}));
    QVERIFY(m[1].empty());
    // A 3-cycle on layer 1: logical -> slot (2, 0, 1, 3): slot 0 holds e1 (was slot 1), slot 1 holds
    // e2 (was slot 2), slot 2 holds e0 (was slot 0); slot 3 keeps e3.
    next.slot = {0, 1, 2, 3, 2, 0, 1, 3};
    const auto c = placement_slot_changes(next, prev);
    QVERIFY(c[0].empty());
    QCOMPARE(c[1], (std::vector<SlotMove>{{0, 1, 1, 0}, {1, 2, 2, 1}, {2, 0, 0, 2}}));
    // Nothing moves between a placement and itself.
    for (const auto& layer : placement_slot_changes(next, next))
        QVERIFY(layer.empty());
}

void TestPlacement::slotChangesRandomInvariants() {
    std::mt19937_64 rng(11);
    for (int round = 0; round < 20; ++round) {
        const int L = 1 + static_cast<int>(rng() % 4), P = 1 + static_cast<int>(rng() % 4);
        const int E = P * (1 + static_cast<int>(rng() % 5));
        std::vector<std::uint64_t> a(static_cast<std::size_t>(L) * E), b(a.size());
        for (auto& v : a)
            v = rng() % 50;
        for (auto& v : b)
            v = rng() % 50;
        const Placement pa = lpt_placement(a, L, E, P), pb = lpt_placement(b, L, E, P);
        const auto m = placement_slot_changes(pb, pa);
        const auto now = physical_to_logical(pb), before = physical_to_logical(pa);
        for (int l = 0; l < L; ++l) {
            // Exactly the slots that differ, ascending; applying the moves to `before` gives `now`.
            std::vector<int> applied(before.begin() + l * E, before.begin() + (l + 1) * E);
            int differing = 0;
            for (int v = 0; v < E; ++v)
                differing += now[l * E + v] != before[l * E + v];
            QCOMPARE(static_cast<int>(m[l].size()), differing);
            for (std::size_t i = 0; i < m[l].size(); ++i) {
                const SlotMove& mv = m[l][i];
                if (i > 0) QVERIFY(m[l][i - 1].slot < mv.slot);
                QCOMPARE(before[l * E + mv.from_slot], mv.expert); // the source slot held the expert
                QCOMPARE(mv.previous_expert, before[l * E + mv.slot]);
                QVERIFY(mv.expert != mv.previous_expert);
                applied[mv.slot] = mv.expert;
            }
            QVERIFY(std::equal(applied.begin(), applied.end(), now.begin() + l * E));
        }
    }
}

void TestPlacement::movesHand() {
    // E = 6, P = 3 (H = 2), one layer. Previous: identity (rank 0: e0 e1, rank 1: e2 e3, rank 2: e4 e5).
    // Next: e0 and e1 trade slots (same rank: no move), e2 goes to rank 2 and e4 to rank 1.
    const Placement prev = identity_placement(1, 6, 3);
    Placement next = prev;
    next.slot = {1, 0, 4, 3, 2, 5};
    QCOMPARE(placement_moves(next, prev)[0], (std::vector<ExpertMove>{{2, 1, 2, 2, 4}, {4, 2, 1, 4, 2}}));
    QCOMPARE(moved_experts(next, prev), std::int64_t{2});
    QCOMPARE(placement_slot_changes(next, prev)[0].size(), std::size_t{4});
    // Keeping the previous slots: e0, e1, e3, e5 stay where they were; e4 takes e2's old slot 2 on
    // rank 1 and e2 takes e4's old slot 4 on rank 2. The moves are the same, the slot changes only
    // those of the moved experts.
    const Placement kept = keep_previous_slots(next, prev);
    QCOMPARE(kept.slot, (std::vector<int>{0, 1, 4, 3, 2, 5}));
    QCOMPARE(placement_moves(kept, prev), placement_moves(next, prev));
    QCOMPARE(placement_slot_changes(kept, prev)[0].size(), std::size_t{2});
    // A rank-preserving placement becomes the previous one, slot for slot.
    Placement shuffled = prev;
    shuffled.slot = {1, 0, 3, 2, 5, 4};
    QCOMPARE(moved_experts(shuffled, prev), std::int64_t{0});
    QCOMPARE(keep_previous_slots(shuffled, prev), prev);
}

void TestPlacement::movesRandomInvariants() {
    std::mt19937_64 rng(12);
    for (int round = 0; round < 20; ++round) {
        const int L = 1 + static_cast<int>(rng() % 4), P = 1 + static_cast<int>(rng() % 4);
        const int E = P * (1 + static_cast<int>(rng() % 5));
        std::vector<std::uint64_t> a(static_cast<std::size_t>(L) * E), b(a.size());
        for (auto& v : a)
            v = rng() % 50;
        for (auto& v : b)
            v = rng() % 50;
        const Placement pa = lpt_placement(a, L, E, P), pb = lpt_placement(b, L, E, P);
        const Placement kept = keep_previous_slots(pb, pa);
        // Brute force: an expert moves when the rank holding it differs; keeping slots changes no rank
        // and leaves every non-moved expert in its previous slot.
        std::int64_t moved = 0;
        for (int l = 0; l < L; ++l)
            for (int e = 0; e < E; ++e) {
                const int H = E / P;
                const bool moves = pb.slot[l * E + e] / H != pa.slot[l * E + e] / H;
                moved += moves ? 1 : 0;
                QCOMPARE(kept.slot[l * E + e] / H, pb.slot[l * E + e] / H);
                if (!moves) QCOMPARE(kept.slot[l * E + e], pa.slot[l * E + e]);
            }
        QCOMPARE(moved_experts(pb, pa), moved);
        QCOMPARE(moved_experts(kept, pa), moved);
        std::int64_t listed = 0;
        for (const auto& layer : placement_moves(pb, pa))
            listed += static_cast<std::int64_t>(layer.size());
        QCOMPARE(listed, moved);
        QCOMPARE(physical_to_logical(kept).size(), kept.slot.size()); // still a permutation
    }
}

void TestPlacement::movesErrors() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             placement_moves(identity_placement(2, 4, 2), identity_placement(1, 4, 2)));
    try {
        placement_moves(identity_placement(1, 4, 2), identity_placement(1, 4, 4));
        QFAIL("no error");
    } catch (const std::invalid_argument& e) {
        QCOMPARE(QString::fromStdString(e.what()),
                 QStringLiteral(
                     "placement_moves: placements differ in shape (1 layers x 4 experts on 2 EP ranks vs 1 x 4 on 4)"));
    }
    Placement bad = identity_placement(1, 4, 2);
    bad.slot[0] = 1; // two experts in slot 1
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, placement_moves(bad, identity_placement(1, 4, 2)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, placement_slot_changes(bad, identity_placement(1, 4, 2)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, keep_previous_slots(bad, identity_placement(1, 4, 2)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moved_experts(bad, identity_placement(1, 4, 2)));
}

void TestPlacement::routeCountsHand() {
    // 3 tokens x 3 decoder layers (layer 0 dense) x top-2, E = 4, MoE layers 1 and 2.
    const std::vector<std::int16_t> routes = {9, 9, 0, 1,  3,  3, //
                                              9, 9, 1, -1, 2,  0, //
                                              9, 9, 1, 2,  -1, -1};
    const std::vector<int> moe = {1, 2};
    const auto index = route_layer_rows(3, true, moe);
    QCOMPARE(index, (std::vector<int>{-1, 0, 1}));
    std::vector<std::int32_t> out(2 * 4, 0);
    QVERIFY(add_route_counts<std::int16_t>(routes.data(), 3, 3, 2, nullptr, index, 4, out.data()).ok);
    // Layer 1: 0, 1, 1, 1, 2 (one -1 dropped) -> (1, 3, 1, 0). Layer 2: 3, 3, 2, 0 -> (1, 0, 1, 2).
    QCOMPARE(out, (std::vector<std::int32_t>{1, 3, 1, 0, 1, 0, 1, 2}));
    // Token 1 masked out: layer 1 (1, 2, 1, 0), layer 2 (0, 0, 0, 2).
    const std::vector<std::uint8_t> valid = {1, 0, 1};
    std::fill(out.begin(), out.end(), 0);
    QVERIFY(add_route_counts<std::int16_t>(routes.data(), 3, 3, 2, valid.data(), index, 4, out.data()).ok);
    QCOMPARE(out, (std::vector<std::int32_t>{1, 2, 1, 0, 0, 0, 0, 2}));
    // With layer rows = the MoE layers only, rows map one to one.
    QCOMPARE(route_layer_rows(2, false, moe), (std::vector<int>{0, 1}));
    // The dense rows hold 9 >= E, but are never read; a 4 in a MoE row is reported with its place.
    std::vector<std::int16_t> bad = routes;
    bad[2 * 6 + 3] = 4; // token 2, layer row 1, choice 1
    const RouteCountError e = add_route_counts<std::int16_t>(bad.data(), 3, 3, 2, nullptr, index, 4, out.data());
    QVERIFY(!e.ok);
    QCOMPARE(e.token, std::int64_t{2});
    QCOMPARE(e.layer_row, 1);
    QCOMPARE(e.choice, 1);
    QCOMPARE(e.value, std::int64_t{4});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, route_layer_rows(2, true, moe));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, route_layer_rows(3, false, moe));
}

void TestPlacement::ffdHandCases() {
    // lengths t = (4, 9, 2, 7, 3, 5), C = 11, K = 3.
    // order (t desc, index): 1(9), 3(7), 5(5), 0(4), 4(3), 2(2)
    // seeds: cell0 = {1} residual 2, cell1 = {3} residual 4, cell2 = {5} residual 6
    // 0(4): first cell with residual >= 4 is cell1 -> residual 0
    // 4(3): cell2 -> residual 3;  2(2): cell0 -> residual 0
    // cells: {1, 2} (11), {3, 0} (11), {5, 4} (8)
    const std::vector<std::int64_t> t{4, 9, 2, 7, 3, 5};
    Layout x;
    QVERIFY(fixed_row_ffd(t, 11, 1, 3, &x));
    QCOMPARE(x.rows, 1);
    QCOMPARE(x.dp_slots, 3);
    QCOMPARE(test::cells_of(x), (std::vector<std::vector<int>>{{1, 2}, {3, 0}, {5, 4}}));
    // Same cells dealt as 3 rows x 1 slot: cell k = (row k, slot 0).
    Layout y;
    QVERIFY(fixed_row_ffd(t, 11, 3, 1, &y));
    QCOMPARE(y.rows, 3);
    QCOMPARE(test::cells_of(y), test::cells_of(x));
    QVERIFY(validate_layout(x, lengths_problem(t, 11, 3)).empty());
    // Ties by index: t = (5, 5, 5, 5), C = 10, 1 x 2: seeds {0}, {1}; 2 -> cell0, 3 -> cell1.
    Layout z;
    QVERIFY(fixed_row_ffd({5, 5, 5, 5}, 10, 1, 2, &z));
    QCOMPARE(test::cells_of(z), (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
    // 2 x 2 with K = n: every sample alone, cell k = k-th longest: t = (1, 4, 3, 2) -> 1, 2, 3, 0.
    Layout w;
    QVERIFY(fixed_row_ffd({1, 4, 3, 2}, 4, 2, 2, &w));
    QCOMPARE(test::cells_of(w), (std::vector<std::vector<int>>{{1}, {2}, {3}, {0}}));
}

void TestPlacement::ffdFailures() {
    Layout sentinel;
    sentinel.rows = 99;
    Layout x = sentinel;
    // Seeds 9 | 7, then 5 fits nowhere (residuals 2, 4 at C = 11, K = 2).
    QVERIFY(!fixed_row_ffd({4, 9, 2, 7, 3, 5}, 11, 1, 2, &x));
    QCOMPARE(x, sentinel);
    QVERIFY(!fixed_row_ffd({1, 1}, 10, 1, 3, &x));  // n < K
    QVERIFY(!fixed_row_ffd({11, 1}, 10, 1, 2, &x)); // a sample longer than C
    QVERIFY(!fixed_row_ffd({1, 1}, 10, 0, 2, &x));  // no rows
    QCOMPARE(x, sentinel);
    QVERIFY(fixed_row_ffd({1, 1}, 10, 1, 2, nullptr)); // feasibility only
}

void TestPlacement::minRowsCertifiedByVolume() {
    // t = (6, 4, 5, 5, 3, 7), sum 30, C = 10, D = 1: volume ceil(30 / 10) = 3 rows.
    // L2: items > 5 are {7, 6}; alpha = 4: J1 = {7}, J2 = {6}, J3 = {5, 5, 4} (14):
    //   2 + ceil((14 - (10 - 6)) / 10) = 3; no alpha gives more, so L2 = 3 as well.
    // FFD at R = 3: seeds 7 | 6 | 5, then 5 -> cell2, 4 -> cell1, 3 -> cell0 (all full).
    const std::vector<std::int64_t> t{6, 4, 5, 5, 3, 7};
    const RowCount rc = minimum_rows(t, 10, 1, 0, 1000);
    QCOMPARE(rc.rows, 3);
    QVERIFY(rc.certified);
    QCOMPARE(rc.lower_bound, 3);
    QCOMPARE(rc.nodes, std::int64_t{0});
    QVERIFY2(QString::fromStdString(rc.how).contains("volume bound"), rc.how.c_str());
    QCOMPARE(test::cells_of(rc.layout), (std::vector<std::vector<int>>{{5, 4}, {0, 1}, {2, 3}}));
    QVERIFY(validate_layout(rc.layout, lengths_problem(t, 10, 1)).empty());
}

void TestPlacement::minRowsCertifiedByL2() {
    // t = (6, 6, 6, 6, 6, 1, 1, 1), sum 33, C = 10, D = 2: volume ceil(33 / 20) = 2 rows.
    // L2: five items > C/2 need five cells (alpha = 0: 5 + max(0, ceil((3 - (50 - 30)) / 10)) = 5)
    //   -> ceil(5 / 2) = 3 rows. FFD at 3 rows (K = 6): seeds 6,6,6,6,6,1 (sample 5), then samples
    //   6 and 7 go to cell 0 (6 + 1 + 1 = 8).
    const std::vector<std::int64_t> t{6, 6, 6, 6, 6, 1, 1, 1};
    const RowCount rc = minimum_rows(t, 10, 2, 0, 1000);
    QCOMPARE(rc.rows, 3);
    QVERIFY(rc.certified);
    QCOMPARE(rc.lower_bound, 3);
    QVERIFY2(QString::fromStdString(rc.how).contains("bin-packing bound L2 = 5 cells"), rc.how.c_str());
    QCOMPARE(test::cells_of(rc.layout), (std::vector<std::vector<int>>{{0, 6, 7}, {1}, {2}, {3}, {4}, {5}}));
    QVERIFY(validate_layout(rc.layout, lengths_problem(t, 10, 2)).empty());
}

/// Near the int64 limit: C = 2^62 + 2 and three items of 2^61 + 2 (> C/2) plus one token. Their
/// total (3 x 2^61 + 7) fits int64, but |J2| x C = 3 x (2^62 + 2) does not: L2 must still say 3 cells
/// (3 + max(0, ceil((1 - (3C - 3w)) / C)) = 3), so R* = 3 at D = 1, certified. A total above
/// 2^63 - 1 is refused rather than wrapped.
void TestPlacement::minRowsL2NearInt64Limit() {
    const std::int64_t C = (std::int64_t{1} << 62) + 2, w = (std::int64_t{1} << 61) + 2;
    const RowCount rc = minimum_rows({w, w, w, 1}, C, 1, 0, 1000);
    QCOMPARE(rc.rows, 3);
    QVERIFY(rc.certified);
    QVERIFY2(QString::fromStdString(rc.how).contains("bin-packing bound L2 = 3 cells"), rc.how.c_str());
    const std::int64_t big = std::int64_t{1} << 62;
    QCOMPARE(input_error_of([&] {
                 minimum_rows({big, big, big}, big, 1, 0, 100);
             }),
             QStringLiteral("row count: the samples hold more than 2^63 - 1 tokens in total"));
}

void TestPlacement::minRowsExactFindsWhatFfdMisses() {
    // t = (5, 5, 4, 3, 3), sum 20, C = 10, D = 1: volume bound 2 rows; L2 = 2.
    // FFD at R = 2 seeds the two longest apart: {5} | {5}; then 4 -> cell0 (9), 3 -> cell1 (8),
    // 3 fits nowhere (residuals 1, 2). But {5, 5} | {4, 3, 3} exists: the exact search finds it
    // (5 -> empty bin, 5 fills bin 0 exactly, 4 -> bin 1, 3 -> bin 1, 3 -> bin 1: 5 nodes).
    // Cells sorted by token sum (10 = 10) then smallest member: {0, 1} first.
    const std::vector<std::int64_t> t{5, 5, 4, 3, 3};
    QVERIFY(!fixed_row_ffd(t, 10, 2, 1, nullptr));
    const RowCount rc = minimum_rows(t, 10, 1, 0, 1000);
    QCOMPARE(rc.rows, 2);
    QVERIFY(rc.certified);
    QCOMPARE(rc.lower_bound, 2);
    QCOMPARE(rc.nodes, std::int64_t{5});
    QVERIFY2(QString::fromStdString(rc.how).contains("exact search"), rc.how.c_str());
    QCOMPARE(test::cells_of(rc.layout), (std::vector<std::vector<int>>{{0, 1}, {2, 3, 4}}));
    QVERIFY(validate_layout(rc.layout, lengths_problem(t, 10, 1)).empty());

    // Same window on D = 2 slots and 2 rows would need 4 cells from 5 samples: R = 1 (K = 2)
    // is the bound, FFD fails at K = 2 and the search finds {5,5} | {4,3,3} as one row.
    const RowCount rc2 = minimum_rows(t, 10, 2, 0, 1000);
    QCOMPARE(rc2.rows, 1);
    QVERIFY(rc2.certified);
    QCOMPARE(test::cells_of(rc2.layout), (std::vector<std::vector<int>>{{0, 1}, {2, 3, 4}}));

    // Splitting: the search packs into fewer bins than K; cells are split to exactly K.
    // t = (5, 5, 4, 3, 3, 1), C = 11, D = 3: volume ceil(21 / 33) = 1; FFD at K = 3: seeds 5 | 5 | 4,
    // 3 -> cell0 (8), 3 -> cell1 (8), 1 -> cell0 (9): FFD succeeds, so no search here; check it.
    const RowCount rc3 = minimum_rows({5, 5, 4, 3, 3, 1}, 11, 3, 0, 1000);
    QCOMPARE(rc3.rows, 1);
    QVERIFY(layout_ok(rc3.layout, {5, 5, 4, 3, 3, 1}, 11, 3));
}

void TestPlacement::minRowsExactProvesInfeasible() {
    // t = five 4s, C = 10, D = 1: volume ceil(20 / 10) = 2, L2 = 2 (no item > C/2), but a cell holds
    // at most two 4s, so 2 rows are infeasible: the search proves it and R* = 3 (FFD: 4+4 | 4+4 | 4).
    const std::vector<std::int64_t> t{4, 4, 4, 4, 4};
    const RowCount rc = minimum_rows(t, 10, 1, 0, 1000);
    QCOMPARE(rc.rows, 3);
    QVERIFY(rc.certified);
    QCOMPARE(rc.lower_bound, 3);
    QVERIFY(rc.nodes > 0);
    QVERIFY2(QString::fromStdString(rc.how).contains("exact search proved R = 2"), rc.how.c_str());
    QCOMPARE(test::cells_of(rc.layout), (std::vector<std::vector<int>>{{0, 3}, {1, 4}, {2}}));

    // No R <= n/D at all: t = (5, 4, 2, 2, 2, 2, 2), C = 5, D = 4 -> n/D = 1 row of 4 cells.
    // Volume ceil(19 / 20) = 1, L2 = 4 cells (1 row); but 5 and 4 each need a cell of their own and
    // five 2s need three cells (two per cell): 5 cells > 4.
    const QString msg = input_error_of([] { minimum_rows({5, 4, 2, 2, 2, 2, 2}, 5, 4, 0, 100000); });
    QVERIFY2(msg.startsWith("no rectangular layout exists: the exact search proved every R <= 7 / 4 = 1 infeasible"),
             qPrintable(msg));
}

void TestPlacement::minRowsBudgetTooSmall() {
    // Same windows with node_budget 0: the search cannot run, FFD succeeds one row later.
    const RowCount a = minimum_rows({4, 4, 4, 4, 4}, 10, 1, 0, 0);
    QCOMPARE(a.rows, 3);
    QVERIFY(!a.certified);
    QCOMPARE(a.lower_bound, 2);
    QCOMPARE(a.nodes, std::int64_t{0});
    QVERIFY2(QString::fromStdString(a.how).contains("best-known"), a.how.c_str());
    QVERIFY2(QString::fromStdString(a.how).contains("node budget"), a.how.c_str());
    QVERIFY(layout_ok(a.layout, {4, 4, 4, 4, 4}, 10, 1));

    // {5,5,4,3,3}: the search needs 5 nodes; with 4 it stops, and R = 3 (FFD) is best-known.
    const RowCount b = minimum_rows({5, 5, 4, 3, 3}, 10, 1, 0, 4);
    QCOMPARE(b.rows, 3);
    QVERIFY(!b.certified);
    QCOMPARE(b.nodes, std::int64_t{4});
    QVERIFY2(QString::fromStdString(b.how).contains("best-known"), b.how.c_str());
}

void TestPlacement::minRowsMinRowsBound() {
    // t = eight 1s, C = 10, D = 2: volume 1 row, but min_rows = 3 -> R* = 3 (6 cells), certified.
    const std::vector<std::int64_t> t(8, 1);
    const RowCount rc = minimum_rows(t, 10, 2, 3, 1000);
    QCOMPARE(rc.rows, 3);
    QVERIFY(rc.certified);
    QVERIFY2(QString::fromStdString(rc.how).contains("min_rows 3"), rc.how.c_str());
    QVERIFY(layout_ok(rc.layout, t, 10, 2));
}

void TestPlacement::minRowsErrors() {
    QCOMPARE(input_error_of([] {
                 minimum_rows({1, 1, 1}, 10, 4, 0, 100);
             }),
             QStringLiteral("no rectangular layout exists: 3 samples cannot fill 4 DP slots"));
    QCOMPARE(input_error_of([] { minimum_rows(std::vector<std::int64_t>(12, 1), 10, 4, 5, 100); }),
             QStringLiteral("no rectangular layout exists: min_rows 5 needs 5 x 4 = 20 non-empty cells but the "
                            "window has only 12 samples"));
    // Volume: 50 tokens at C = 10 need 5 cells -> 3 rows of 2 = 6 cells > 5 samples.
    QCOMPARE(input_error_of([] {
                 minimum_rows({10, 10, 10, 10, 10}, 10, 2, 0, 100);
             }),
             QStringLiteral("no rectangular layout exists: 50 tokens at cap 10 need at least 3 rows of 2 cells = 6 "
                            "non-empty cells, but there are only 5 samples"));
    // L2: five 6s (volume 30 / 20 -> 2 rows) need five cells -> 3 rows of 2 = 6 > 5 samples.
    QCOMPARE(input_error_of([] {
                 minimum_rows({6, 6, 6, 6, 6}, 10, 2, 0, 100);
             }),
             QStringLiteral("no rectangular layout exists: the samples need at least 5 cells of cap 10 (bin-packing "
                            "bound L2), i.e. 3 rows of 2 = 6 non-empty cells, but there are only 5 samples"));
    QCOMPARE(input_error_of([] {
                 minimum_rows({3, 12, 1}, 10, 1, 0, 100);
             }),
             QStringLiteral("sample 1 has length 12 > token cap 10; it fits in no cell"));
    QCOMPARE(input_error_of([] {
                 minimum_rows({3, 2, 0}, 10, 1, 0, 100);
             }),
             QStringLiteral("sample 2 has length 0; every sample needs >= 1 token"));
    QCOMPARE(input_error_of([] { minimum_rows({}, 10, 1, 0, 100); }),
             QStringLiteral("no rectangular layout exists: 0 samples cannot fill 1 DP slots"));
    QVERIFY(input_error_of([] { minimum_rows({1}, 10, 0, 0, 100); }).startsWith("row count:"));
}

void TestPlacement::minRowsRowMultiple() {
    // t = five 9s and five 1s, C = 10, D = 1: volume ceil(50 / 10) = 5 rows, met by FixedRowFFD
    // (9 + 1 per cell), so the plain R* is 5, certified.
    const std::vector<std::int64_t> t{9, 9, 9, 9, 9, 1, 1, 1, 1, 1};
    const RowCount plain = minimum_rows(t, 10, 1, 0, 1000);
    QCOMPARE(plain.rows, 5);
    QVERIFY(plain.certified);
    // row_multiple 4: the smallest multiple of 4 >= 5 is 8, certified (no multiple below 8 is >= 5).
    // FixedRowFFD at 8: the 8 longest (samples 0..7) seed cells 0..7, then 8 -> cell 0 (residual 1),
    // 9 -> cell 1.
    const RowCount m4 = minimum_rows(t, 10, 1, 0, 1000, 4);
    QCOMPARE(m4.rows, 8);
    QVERIFY(m4.certified);
    QCOMPARE(m4.lower_bound, 8);
    QCOMPARE(m4.nodes, std::int64_t{0});
    QCOMPARE(QString::fromStdString(m4.how),
             QStringLiteral("R* = 8 certified: volume bound ceil(50 / (10 x 1)) = 5, rounded up to the multiple 8 "
                            "of row_multiple 4 met by FixedRowFFD"));
    QCOMPARE(test::cells_of(m4.layout), (std::vector<std::vector<int>>{{0, 8}, {1, 9}, {2}, {3}, {4}, {5}, {6}, {7}}));
    QVERIFY(validate_layout(m4.layout, lengths_problem(t, 10, 1)).empty());
    QCOMPARE(minimum_rows(t, 10, 1, 0, 1000, 3).rows, 6);
    // A multiple that R* already is: the plain result, text included.
    const RowCount m5 = minimum_rows(t, 10, 1, 0, 1000, 5);
    QCOMPARE(m5.rows, 5);
    QCOMPARE(m5.how, plain.how);
    QCOMPARE(m5.layout, plain.layout);
    // 11 rows of one cell need 11 samples; the window has 10.
    QCOMPARE(input_error_of([&] { minimum_rows(t, 10, 1, 0, 1000, 11); }),
             QStringLiteral("no rectangular layout exists: row_multiple 11 rounds the lower bound 5 up to 11 rows of "
                            "1 = 11 non-empty cells, but there are only 10 samples"));
    QCOMPARE(input_error_of([&] { minimum_rows(t, 10, 1, 0, 1000, 0); }),
             QStringLiteral("row count: row_multiple must be >= 1 (got 0)"));

    // The exact search at multiples only: five 4s, C = 10, D = 1, row_multiple 2. The bound is 2; FFD
    // fails at 2 and the search proves 2 infeasible (a cell holds two 4s); the next multiple, 4, is met
    // by FFD (4+4 | 4 | 4 | 4), certified: 3 would be feasible but is no multiple of 2.
    const std::vector<std::int64_t> fours{4, 4, 4, 4, 4};
    const RowCount e = minimum_rows(fours, 10, 1, 0, 1000, 2);
    QCOMPARE(e.rows, 4);
    QVERIFY(e.certified);
    QCOMPARE(e.lower_bound, 4);
    QVERIFY(e.nodes > 0);
    QVERIFY2(QString::fromStdString(e.how).startsWith("R* = 4 certified: exact search proved R = 2 (so every smaller "
                                                      "R) infeasible"),
             e.how.c_str());
    QCOMPARE(test::cells_of(e.layout), (std::vector<std::vector<int>>{{0, 4}, {1}, {2}, {3}}));
    // Without a node budget the proof is missing: 4 is best-known over the bound 2.
    const RowCount u = minimum_rows(fours, 10, 1, 0, 0, 2);
    QCOMPARE(u.rows, 4);
    QVERIFY(!u.certified);
    QCOMPARE(u.lower_bound, 2);

    // min_rows with a multiple: eight 1s, C = 10, D = 2, min_rows 3, row_multiple 2 -> 4 rows of 2.
    const RowCount mr = minimum_rows(std::vector<std::int64_t>(8, 1), 10, 2, 3, 1000, 2);
    QCOMPARE(mr.rows, 4);
    QVERIFY(mr.certified);
    QCOMPARE(QString::fromStdString(mr.how),
             QStringLiteral("R* = 4 certified: min_rows 3, rounded up to the multiple 4 of row_multiple 2 met by "
                            "FixedRowFFD"));
    QVERIFY(layout_ok(mr.layout, std::vector<std::int64_t>(8, 1), 10, 2));
}

void TestPlacement::minRowsRowMultipleBruteForce() {
    // Tiny windows: with row_multiple m the certified R* is the smallest multiple of m >= max(1,
    // min_rows) that admits a layout (brute force), which is the plain R* rounded up to a multiple.
    int multiples = 0, errors = 0;
    for (unsigned seed = 1; seed <= 200; ++seed) {
        std::mt19937_64 rng(seed * 104729);
        const int n = 1 + int(rng() % 10);
        const int D = 1 + int(rng() % 3);
        const std::int64_t C = 5 + std::int64_t(rng() % 26);
        const int min_rows = (seed % 4 == 0) ? int(rng() % 3) : 0;
        const int m = 1 + int(rng() % 4);
        std::vector<std::int64_t> t(n);
        for (auto& v : t) {
            const std::int64_t lo = seed % 2 == 0 ? 1 : C / 5;
            v = std::max<std::int64_t>(1, lo + std::int64_t(rng() % (C - lo + 1)));
        }
        const QString what =
            QString("seed %1: n=%2 D=%3 C=%4 min_rows=%5 m=%6").arg(seed).arg(n).arg(D).arg(C).arg(min_rows).arg(m);
        int truth = -1;
        for (int R = m; R * D <= n && truth < 0; R += m)
            if (R >= std::max(1, min_rows) && exists_layout_brute(t, C, R * D)) truth = R;
        RowCount rc;
        try {
            rc = minimum_rows(t, C, D, min_rows, 100000, m);
        } catch (const InputError& e) {
            ++errors;
            QVERIFY2(truth < 0, qPrintable(what + ": refused but R = " + QString::number(truth) + " admits a layout"));
            QVERIFY2(QString(e.what()).startsWith("no rectangular layout exists: "),
                     qPrintable(what + ": " + e.what()));
            continue;
        }
        QVERIFY2(rc.certified, qPrintable(what));
        QCOMPARE(rc.rows, truth);
        QCOMPARE(rc.rows % m, 0);
        QCOMPARE(rc.layout.rows, rc.rows);
        QVERIFY2(validate_layout(rc.layout, lengths_problem(t, C, D)).empty(), qPrintable(what));
        const RowCount plain = minimum_rows(t, C, D, min_rows, 100000);
        QCOMPARE(rc.rows, (plain.rows + m - 1) / m * m);
        if (m > 1 && plain.rows % m != 0) ++multiples;
    }
    QVERIFY(multiples >= 20);
    QVERIFY(errors > 0);
    qInfo("row_multiple vs brute force: %d windows rounded up, %d refused", multiples, errors);
}

void TestPlacement::minRowsPropertyBruteForce() {
    int certified = 0, searched = 0, errors = 0;
    for (unsigned seed = 1; seed <= 200; ++seed) {
        std::mt19937_64 rng(seed * 7919);
        const int n = 1 + int(rng() % 10);
        const int D = 1 + int(rng() % 3);
        const std::int64_t C = 5 + std::int64_t(rng() % 26);
        const int min_rows = (seed % 5 == 0) ? int(rng() % 3) : 0;
        std::vector<std::int64_t> t(n);
        // One third uniform in 1..C, one third in C/4..C, one third in C/5..C/2+1: the last two make
        // FixedRowFFD fail at the bound now and then, so the exact search runs.
        for (auto& v : t) {
            const std::int64_t lo = seed % 3 == 0 ? 1 : seed % 3 == 1 ? C / 4 : C / 5;
            const std::int64_t hi = seed % 3 == 2 ? C / 2 + 1 : C;
            v = std::max<std::int64_t>(1, lo + std::int64_t(rng() % (hi - lo + 1)));
        }
        const QString what =
            QString("seed %1: n=%2 D=%3 C=%4 min_rows=%5").arg(seed).arg(n).arg(D).arg(C).arg(min_rows);
        const int first = std::max(1, min_rows);
        RowCount rc;
        try {
            rc = minimum_rows(t, C, D, min_rows, 100000);
        } catch (const InputError& e) {
            ++errors;
            QVERIFY2(QString(e.what()).startsWith("no rectangular layout exists: "),
                     qPrintable(what + ": " + e.what()));
            for (int R = first; R * D <= n; ++R)
                QVERIFY2(!exists_layout_brute(t, C, R * D),
                         qPrintable(what + ": a layout exists at R=" + QString::number(R)));
            continue;
        }
        QVERIFY2(layout_ok(rc.layout, t, C, D), qPrintable(what));
        const std::string v = validate_layout(rc.layout, lengths_problem(t, C, D));
        QVERIFY2(v.empty(), qPrintable(what + ": " + QString::fromStdString(v)));
        QCOMPARE(rc.layout.rows, rc.rows);
        QVERIFY(rc.rows >= first);
        QVERIFY(rc.lower_bound <= rc.rows);
        if (rc.nodes > 0) ++searched;
        // The lower bound is valid: no R below it admits a layout.
        for (int R = first; R < rc.lower_bound; ++R)
            QVERIFY2(!exists_layout_brute(t, C, R * D), qPrintable(what + ": bound too high"));
        if (rc.certified) {
            ++certified;
            QCOMPARE(rc.lower_bound, rc.rows);
            for (int R = first; R < rc.rows; ++R)
                QVERIFY2(!exists_layout_brute(t, C, R * D), qPrintable(what + ": certified R* not minimal"));
        }
    }
    // With a generous budget on tiny windows everything is certified or an error.
    QCOMPARE(certified + errors, 200);
    QVERIFY(searched > 0);
    qInfo("property: %d certified, %d with exact search nodes, %d errors", certified, searched, errors);
}

void TestPlacement::minRowsSearchAgreesWithBruteForce() {
    // Windows of medium samples (C/5 .. C/2 + 1) where FixedRowFFD's seeding often fails at the bound:
    // with a generous budget R* is certified and equals the brute-force minimum.
    int searched = 0;
    for (unsigned seed = 1; seed <= 300; ++seed) {
        std::mt19937_64 rng(seed);
        const int n = 4 + int(rng() % 9);
        const int D = 1 + int(rng() % 4);
        const std::int64_t C = 10 + std::int64_t(rng() % 30);
        std::vector<std::int64_t> t(n);
        for (auto& v : t)
            v = std::max<std::int64_t>(1, C / 5 + std::int64_t(rng() % (C / 2 - C / 5 + 2)));
        if (n < D) continue;
        int truth = -1;
        for (int R = 1; R * D <= n && truth < 0; ++R)
            if (exists_layout_brute(t, C, R * D)) truth = R;
        const QString what = QString("seed %1").arg(seed);
        if (truth < 0) {
            QVERIFY2(
                input_error_of([&] { minimum_rows(t, C, D, 0, 1000000); }).startsWith("no rectangular layout exists: "),
                qPrintable(what));
            continue;
        }
        const RowCount rc = minimum_rows(t, C, D, 0, 1000000);
        QVERIFY2(rc.certified, qPrintable(what));
        QCOMPARE(rc.rows, truth);
        QVERIFY2(validate_layout(rc.layout, lengths_problem(t, C, D)).empty(), qPrintable(what));
        if (rc.nodes > 0) ++searched;
    }
    QVERIFY(searched >= 10);
    qInfo("search vs brute force: %d of 300 windows needed the exact search", searched);
}

void TestPlacement::minRowsRealisticWindow() {
    // The paper's shape: 512 samples, cap 8192, 8 DP slots; long-tailed lengths.
    std::mt19937_64 rng(2024);
    std::lognormal_distribution<double> len(6.5, 0.9);
    std::vector<std::int64_t> t(512);
    for (auto& v : t)
        v = std::clamp<std::int64_t>(std::llround(len(rng)), 16, 8192);
    const RowCount rc = minimum_rows(t, 8192, 8, 0, 200000);
    QVERIFY(layout_ok(rc.layout, t, 8192, 8));
    QVERIFY(rc.certified);
    const std::int64_t total = std::accumulate(t.begin(), t.end(), std::int64_t{0});
    qInfo("512 samples, %lld tokens: R* = %d (%s)", static_cast<long long>(total), rc.rows, rc.how.c_str());
}

void TestPlacement::kkHandTwoWay() {
    // t = (8, 7, 6, 5, 4), K = 2 (1 row x 2 slots). Tuples as (parts){members}, diff = max - min:
    //   pop 8{0}, 7{1}:   (8{0} + 0, 0 + 7{1}) = (8{0}, 7{1}), diff 1
    //   pop 6{2}, 5{3}:   (6{2}, 5{3}), diff 1
    //   pop 4{4} (diff 4), then (8,7) (diff 1, smallest member 0 beats 2):
    //     4{4} + 7{1} = 11{1,4};  0 + 8{0} = 8{0}  -> (11, 8), diff 3
    //   pop (11, 8) (diff 3), (6, 5): 11 + 5 = 16{1,3,4}; 8 + 6 = 14{0,2}
    // cells: sum desc -> {1, 3, 4} (16), {0, 2} (14). (Optimal would be 15 | 15.)
    const Layout x = karmarkar_karp_layout({8, 7, 6, 5, 4}, 1, 2);
    QCOMPARE(x.rows, 1);
    QCOMPARE(x.dp_slots, 2);
    QCOMPARE(test::cells_of(x), (std::vector<std::vector<int>>{{1, 3, 4}, {0, 2}}));
    // Same partition dealt as 2 rows x 1 slot.
    QCOMPARE(test::cells_of(karmarkar_karp_layout({8, 7, 6, 5, 4}, 2, 1)), test::cells_of(x));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, karmarkar_karp_layout({1}, 0, 2));
}

void TestPlacement::kkHandThreeWay() {
    // t = (6, 5, 4, 3), K = 3 (1 row x 3 slots); a tuple with fewer than 3 non-empty parts has min 0.
    //   pop 6{0}, 5{1}: (6{0}, 5{1}, 0), diff 6
    //   pop (6,5,0) (diff 6, member 0), 4{2} (diff 4): (6 + 0, 5 + 0, 0 + 4) = (6, 5, 4), diff 2
    //   pop 3{3} (diff 3), then (6, 5, 4): 3 + 4 = 7{2,3}, 0 + 5 = 5{1}, 0 + 6 = 6{0}
    // cells by sum: {2, 3} (7), {0} (6), {1} (5).
    QCOMPARE(karmarkar_karp_layout({6, 5, 4, 3}, 1, 3), Layout::from_cells(1, 3, {{2, 3}, {0}, {1}}));
    // K = 1: everything in one cell.
    QCOMPARE(karmarkar_karp_layout({2, 9, 4}, 1, 1), Layout::from_cells(1, 1, {{0, 1, 2}}));
}

void TestPlacement::kkEmptyParts() {
    // n = 2 < K = 4: (3{0}, 0, 0, 0) + (0, 0, 0, 1{1}) -> two parts, two empty cells (last).
    const Layout x = karmarkar_karp_layout({3, 1}, 2, 2);
    QCOMPARE(test::cells_of(x), (std::vector<std::vector<int>>{{0}, {1}, {}, {}}));
    QCOMPARE(karmarkar_karp_layout({}, 1, 2), Layout::from_cells(1, 2, {{}, {}}));
    // Large random case: a partition of all samples into K parts; determinism.
    std::mt19937_64 rng(11);
    std::vector<std::int64_t> t(3000);
    for (auto& v : t)
        v = 1 + std::int64_t(rng() % 8000);
    const Layout a = karmarkar_karp_layout(t, 16, 8);
    QCOMPARE(a, karmarkar_karp_layout(t, 16, 8));
    std::vector<int> seen(t.size(), 0);
    std::int64_t lo = INT64_MAX, hi = 0, prev = INT64_MAX;
    for (int k = 0; k < a.cell_count(); ++k) {
        const std::span<const int> cell = a.cell(k);
        std::int64_t s = 0;
        for (int i : cell) {
            ++seen[i];
            s += t[i];
        }
        QVERIFY(s <= prev); // dealt by token sum descending
        prev = s;
        lo = std::min(lo, s);
        hi = std::max(hi, s);
    }
    QVERIFY(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    QVERIFY2(hi - lo < 8000, qPrintable(QString("spread %1").arg(hi - lo))); // LDM balances tightly
}

namespace {

/// 4 samples, L = 2, P = 2, D = 2, shards {0} and {1}, C = 10, one KDA-like stage (alpha 1, beta 0).
PackingProblem tiny_problem() {
    PackingProblem p;
    p.n = 4;
    p.L = 2;
    p.P = 2;
    p.D = 2;
    p.G = 2;
    p.C = 10;
    p.length = {4, 2, 5, 1};
    // q[i][l][p]:   sample 0: l0 (3,1) l1 (0,4);  sample 1: l0 (2,2) l1 (1,1)
    //               sample 2: l0 (0,5) l1 (2,3);  sample 3: l0 (1,0) l1 (1,0)
    p.demand = {3, 1, 0, 4, 2, 2, 1, 1, 0, 5, 2, 3, 1, 0, 1, 0};
    p.shard_of_slot = {0, 1};
    p.shards = {{0}, {1}};
    p.stages = {AttentionStage{"kda", 1.0, 0.0}};
    return p;
}

} // namespace

void TestPlacement::layoutMetricsHand() {
    // Layout 2 x 2: row 0 = ({0}, {1}), row 1 = ({2}, {3}); each shard is one DP slot.
    // W[r][g][l][p]:
    //   row 0: g0 = sample 0: l0 (3,1), l1 (0,4);   g1 = sample 1: l0 (2,2), l1 (1,1)
    //   row 1: g0 = sample 2: l0 (0,5), l1 (2,3);   g1 = sample 3: l0 (1,0), l1 (1,0)
    // S_EP = sum_{r,l} max_{g,p} W = (3 + 4) + (5 + 3) = 15;  T_EP = 5
    // eta numerator sum_{r,l} max_g (1/2) sum_p W:
    //   row 0: l0 max(4, 4)/2 = 2, l1 max(4, 2)/2 = 2;  row 1: l0 max(5, 1)/2 = 2.5, l1 max(5, 1)/2 = 2.5
    //   = 9 -> eta_EP = 9 / 15 = 0.6
    // Cost (C = 10, alpha 1): A = t/10: r0 (0.4, 0.2), r1 (0.5, 0.1) -> attention sum 1.2
    //   E = (1/10) sum_l max_p W: r0 g0 (3+4)/10 = 0.7, r0 g1 (2+1)/10 = 0.3, r1 g0 (5+3)/10 = 0.8,
    //   r1 g1 (1+1)/10 = 0.2; J: 1.1, 0.5, 1.3, 0.3; U = (2.4, 0.8) -> joint 2.4, sum 3.2, max J 1.3.
    const PackingProblem p = tiny_problem();
    const Layout x = Layout::from_cells(2, 2, {{0}, {1}, {2}, {3}});
    QVERIFY(validate_layout(x, p).empty());
    const LayoutMetrics m = layout_metrics(x, p, 0.25);
    QCOMPARE(m.ep_peak_sum, std::int64_t{15});
    QCOMPARE(m.ep_tail_peak, std::int64_t{5});
    QCOMPARE(m.ep_balance_efficiency, 0.6);
    QCOMPARE(m.cv_global, 0.25);
    QCOMPARE(m.cap_violations, 0);
    QCOMPARE(m.empty_cells, 0);
    QVERIFY(std::abs(m.attention_sum - 1.2) < 1e-12);
    QVERIFY(std::abs(m.joint - 2.4) < 1e-12);
    QVERIFY(std::abs(m.score.max_u - 2.4) < 1e-12);
    QVERIFY(std::abs(m.score.sum_u - 3.2) < 1e-12);
    QVERIFY(std::abs(m.score.max_j - 1.3) < 1e-12);
    QCOMPARE(m.score, score_layout(x, p));

    // One shard holding both slots: row 0 W = (5,3) at l0, (1,5) at l1; row 1 (1,5), (3,3).
    // S_EP = (5 + 5) + (5 + 3) = 18; T_EP = 5; eta = ((8 + 6) + (6 + 6)) / 2 / 18 = 13 / 18.
    PackingProblem one = p;
    one.G = 1;
    one.shard_of_slot = {0, 0};
    one.shards = {{0, 1}};
    const LayoutMetrics m1 = layout_metrics(x, one, 0.0);
    QCOMPARE(m1.ep_peak_sum, std::int64_t{18});
    QCOMPARE(m1.ep_tail_peak, std::int64_t{5});
    QCOMPARE(m1.ep_balance_efficiency, 13.0 / 18.0);
}

void TestPlacement::layoutMetricsReportsKkCapViolation() {
    // t = (4, 2, 5, 1) into K = 2 (1 x 2): pop 5{2}, 4{0} -> (5{2}, 4{0}) diff 1; pop 2{1} (diff 2),
    // 1{3} (diff 1 with member 3 vs (5,4) diff 1 member 0 -> (5,4) first): 2 + 4 = 6{0,1}, 0 + 5 = 5{2}
    // -> (6, 5) diff 1; pop (6,5) (member 0) and 1{3}: 6 + 0 = 6{0,1}, 5 + 1 = 6{2,3}.
    // cells {0, 1} (6), {2, 3} (6). With cap 5 both cells are over the cap.
    PackingProblem p = tiny_problem();
    const Layout x = karmarkar_karp_layout(p.length, 1, 2);
    QCOMPARE(test::cells_of(x), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
    p.C = 5;
    LayoutMetrics m = layout_metrics(x, p, 0.0);
    QCOMPARE(m.cap_violations, 2);
    QCOMPARE(m.empty_cells, 0);
    QVERIFY(!validate_layout(x, p).empty());
    // Empty cells: 2 x 2 cells for 3 samples.
    PackingProblem q = tiny_problem();
    const Layout y = karmarkar_karp_layout({4, 2, 5}, 2, 2); // 3 samples: (5{2}, 4{0}, 2{1}, 0) -> one empty
    q.n = 3;
    q.length = {4, 2, 5};
    q.demand.assign(3 * 4, 0);
    QCOMPARE(test::cells_of(y), (std::vector<std::vector<int>>{{2}, {0}, {1}, {}}));
    m = layout_metrics(y, q, 0.0);
    QCOMPARE(m.empty_cells, 1);
    QCOMPARE(m.cap_violations, 0);
}

void TestPlacement::gridHand() {
    // A 2 x 3 grid of 7s, row-major: element (i, j) sits at data()[i * 3 + j].
    Grid<int> g(2, 3, 7);
    QCOMPARE(g.rows(), std::size_t(2));
    QCOMPARE(g.cols(), std::size_t(3));
    QCOMPARE(g.size(), std::size_t(6));
    QVERIFY(!g.empty());
    QCOMPARE(std::vector<int>(g.begin(), g.end()), std::vector<int>(6, 7));
    // Writes through operator() land at i * 3 + j, whatever the index types.
    g(0, 2) = 5;                            // data[0 * 3 + 2] = data[2]
    g(1, 0) = -1;                           // data[1 * 3 + 0] = data[3]
    g(std::size_t{1}, std::int64_t{2}) = 9; // data[1 * 3 + 2] = data[5]
    QCOMPARE(g.data()[2], 5);
    QCOMPARE(g.data()[3], -1);
    QCOMPARE(g.data()[5], 9);
    // Row 1 = data[3..6) = (-1, 7, 9); a write through the span shows in operator().
    const std::span<int> r1 = g.row(1);
    QCOMPARE(r1.size(), std::size_t(3));
    QCOMPARE(std::vector<int>(r1.begin(), r1.end()), (std::vector<int>{-1, 7, 9}));
    r1[1] = 4;
    QCOMPARE(g(1, 1), 4);
    const Grid<int>& cg = g;
    const std::span<const int> r0 = cg.row(0);
    QCOMPARE(std::vector<int>(r0.begin(), r0.end()), (std::vector<int>{7, 7, 5}));
    QCOMPARE(cg(1, 2), 9);
    QCOMPARE(std::vector<int>(g.begin(), g.end()), (std::vector<int>{7, 7, 5, -1, 4, 9}));
    // Equality compares the shape and every element: 2 x 3 and 3 x 2 zeros hold the same six values.
    Grid<int> h = g;
    QVERIFY(h == g);
    h(0, 0) = 8;
    QVERIFY(!(h == g));
    QVERIFY(Grid<int>(2, 3) == Grid<int>(2, 3, 0));
    QVERIFY(!(Grid<int>(2, 3) == Grid<int>(3, 2)));
    // fill keeps the shape; assign reshapes: 3 x 1 of 2s.
    h.fill(3);
    QCOMPARE(h.rows(), std::size_t(2));
    QCOMPARE(h.cols(), std::size_t(3));
    QCOMPARE(std::vector<int>(h.begin(), h.end()), std::vector<int>(6, 3));
    h.assign(3, 1, 2);
    QCOMPARE(h.rows(), std::size_t(3));
    QCOMPARE(h.cols(), std::size_t(1));
    QCOMPARE(h.size(), std::size_t(3));
    QCOMPARE(h(2, 0), 2);
    QCOMPARE(h.row(2).size(), std::size_t(1));
    QVERIFY(h == Grid<int>(3, 1, 2));
    // A default grid is 0 x 0; a grid with no columns has empty rows.
    const Grid<double> none;
    QVERIFY(none.empty());
    QCOMPARE(none.rows(), std::size_t(0));
    QCOMPARE(none.cols(), std::size_t(0));
    const Grid<double> flat(4, 0);
    QVERIFY(flat.empty());
    QCOMPARE(flat.rows(), std::size_t(4));
    QCOMPARE(flat.row(3).size(), std::size_t(0));
    // idx: the same value as the cast, for any integer type.
    QCOMPARE(idx(5), std::size_t(5));
    QCOMPARE(idx(std::int64_t{1} << 40), std::size_t{1} << 40);
    QCOMPARE(idx(std::uint16_t{65535}), std::size_t(65535));
}

QTEST_GUILESS_MAIN(TestPlacement)
#include "tst_placement.moc"
