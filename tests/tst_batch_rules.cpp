// The stacks' batch rules (Topology::batch: samples_per_dp_slot, samples_per_cell, max_samples_per_cell,
// oversize): the topology fields and their refusals, validate_layout's count checks, the row count
// under the counts against brute force, the count-keeping packers (FixedRowFFD, Karmarkar-Karp), moves
// that keep every count with an incremental score equal to a full rescore, the whole planner on
// synthetic windows (every method keeps the counts, the same plan for any worker count, the
// constrained optimum of tiny windows), and oversize samples alone in their cells.
#include "core/import/import.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/plan/score/metrics.h"
#include "core/plan/score/packing.h"
#include "core/plan/score/score.h"
#include "core/plan/search/rowcount.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "core/util/rng.h"
#include "tests/bench/stack_balancers.h"
#include "tests/comm_testutil.h"
#include "tests/testutil.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <numeric>

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

BatchRules rules(int per_slot, int per_cell, int max_per_cell, Oversize o = Oversize::Refuse) {
    BatchRules b;
    b.samples_per_dp_slot = per_slot;
    b.samples_per_cell = per_cell;
    b.max_samples_per_cell = max_per_cell;
    b.oversize = o;
    return b;
}

Topology topo(int P, int D, std::int64_t C, const BatchRules& b) {
    Topology t;
    t.ep_ranks = P;
    t.dp_slots = D;
    t.edp_shards = {std::vector<int>(static_cast<std::size_t>(D))};
    std::iota(t.edp_shards[0].begin(), t.edp_shards[0].end(), 0);
    if (D >= 2 && D % 2 == 0) {
        t.edp_shards = {{}, {}};
        for (int d = 0; d < D; ++d)
            t.edp_shards[static_cast<std::size_t>(d * 2 / D)].push_back(d);
    }
    t.token_cap = C;
    t.attention_stages = {AttentionStage{"mla", 27.0, 27.0}, AttentionStage{"kda", 10.0, 0.0}};
    t.batch = b;
    return t;
}

/// A window of the given lengths on a 2-layer, 4-expert model (top-1): sample i routes its tokens to
/// expert (i * 3 + l) % 4 at MoE layer l.
Trace lengths_window(const std::vector<std::int64_t>& lengths) {
    Trace w;
    w.model.name = "tiny";
    w.model.num_hidden_layers = 2;
    w.model.experts = 4;
    w.model.top_k = 1;
    w.model.moe_layers = {0, 1};
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        SampleInfo s;
        s.id = "s" + std::to_string(i);
        s.length = lengths[i];
        s.routed_rows = lengths[i];
        w.samples.push_back(s);
        for (int l = 0; l < 2; ++l)
            for (int e = 0; e < 4; ++e)
                w.counts.push_back(e == static_cast<int>((i * 3 + l) % 4) ? static_cast<std::uint32_t>(lengths[i])
                                                                          : 0u);
    }
    return w;
}

PlanInput small_budgets(PlanInput in) {
    in.budgets.annealing.levels = 4;
    in.budgets.annealing.steps = 300;
    in.budgets.seeding.candidates = 8;
    in.budgets.seeding.population = 4;
    in.budgets.polish_evaluations = 4000;
    return in;
}

PlanInput synth_input(int groups, std::uint64_t seed, const BatchRules& b, std::int64_t C = 4096) {
    SynthConfig c;
    c.groups = groups;
    c.group_size = 8;
    c.seed = seed;
    PlanInput in;
    in.window = synth_trace(c);
    in.trace_name = "synth";
    in.window_name = "all";
    in.topology = topo(8, 4, C, b);
    return small_budgets(in);
}

/// Counts of a layout checked without validate_layout: per cell and per DP slot.
QString count_violation(const Layout& x, const BatchRules& b) {
    std::vector<int> slot(static_cast<std::size_t>(x.dp_slots), 0);
    for (int k = 0; k < x.cell_count(); ++k) {
        const int size = x.cell_size(k);
        if (size < 1) return QStringLiteral("empty cell %1").arg(k);
        if (b.samples_per_cell > 0 && size != b.samples_per_cell)
            return QStringLiteral("cell %1 size %2").arg(k).arg(size);
        if (b.max_samples_per_cell > 0 && size > b.max_samples_per_cell)
            return QStringLiteral("cell %1 size %2 > max").arg(k).arg(size);
        slot[static_cast<std::size_t>(k % x.dp_slots)] += size;
    }
    if (b.samples_per_dp_slot > 0)
        for (int d = 0; d < x.dp_slots; ++d)
            if (slot[static_cast<std::size_t>(d)] != b.samples_per_dp_slot)
                return QStringLiteral("slot %1 holds %2").arg(d).arg(slot[static_cast<std::size_t>(d)]);
    return {};
}

/// Every assignment of n samples to K = R*D cells (K^n of them) that keeps the counts and the cap:
/// calls `visit` with each as a Layout (cells' members ascending) until it returns false.
void for_each_layout(const std::vector<std::int64_t>& len, std::int64_t C, int R, int D, const BatchRules& b,
                     const std::function<bool(const Layout&)>& visit) {
    const int n = static_cast<int>(len.size()), K = R * D;
    std::vector<int> cell(static_cast<std::size_t>(n), 0);
    std::vector<std::vector<int>> cells(static_cast<std::size_t>(K));
    std::vector<std::int64_t> sum(static_cast<std::size_t>(K));
    while (true) {
        for (auto& c : cells)
            c.clear();
        std::fill(sum.begin(), sum.end(), 0);
        for (int i = 0; i < n; ++i) {
            const auto k = static_cast<std::size_t>(cell[static_cast<std::size_t>(i)]);
            cells[k].push_back(i);
            sum[k] += len[static_cast<std::size_t>(i)];
        }
        bool ok = true;
        for (std::size_t k = 0; k < cells.size() && ok; ++k)
            ok = !cells[k].empty() && (sum[k] <= C || (cells[k].size() == 1 && b.oversize == Oversize::Alone));
        if (ok) {
            const Layout x = Layout::from_cells(R, D, cells);
            if (count_violation(x, b).isEmpty() && !visit(x)) return;
        }
        int i = 0;
        while (i < n && ++cell[static_cast<std::size_t>(i)] == K)
            cell[static_cast<std::size_t>(i++)] = 0;
        if (i == n) return;
    }
}

/// Smallest R with a layout keeping the counts (brute force), or 0 when none up to n / D.
int brute_rows(const std::vector<std::int64_t>& len, std::int64_t C, int D, const BatchRules& b) {
    for (int R = 1; R * D <= static_cast<int>(len.size()); ++R) {
        bool any = false;
        for_each_layout(len, C, R, D, b, [&](const Layout&) {
            any = true;
            return false; // one is enough
        });
        if (any) return R;
    }
    return 0;
}

} // namespace

class TestBatchRules : public QObject {
    Q_OBJECT
private Q_SLOTS:
    /// The four fields read and written; a topology of the defaults writes none of them, and token_cap
    /// may be absent only with samples_per_cell.
    void topology_fields() {
        const std::string base = R"({"ep_ranks": 8, "dp_slots": 4, "token_cap": 4096,
            "attention_stages": [{"name": "mla", "alpha": 1, "beta": 0}])";
        const Topology plain = parse_topology(base + "}", "t.json");
        QVERIFY(plain.batch.free());
        QVERIFY(topology_to_json(plain).find("samples") == std::string::npos);
        QVERIFY(topology_to_json(plain).find("oversize") == std::string::npos);
        const Topology t = parse_topology(base + R"(, "samples_per_dp_slot": 128, "max_samples_per_cell": 4,
            "oversize": "alone"})",
                                          "t.json");
        QCOMPARE(t.batch.samples_per_dp_slot, 128);
        QCOMPARE(t.batch.max_samples_per_cell, 4);
        QCOMPARE(t.batch.samples_per_cell, 0);
        QVERIFY(t.batch.oversize == Oversize::Alone);
        QVERIFY(parse_topology(topology_to_json(t), "again") == t);
        const Topology s = parse_topology(R"({"ep_ranks": 8, "dp_slots": 4, "samples_per_cell": 2,
            "attention_stages": []})",
                                          "s.json");
        QCOMPARE(s.token_cap, std::int64_t{0});
        QCOMPARE(s.batch.samples_per_cell, 2);
        QVERIFY(topology_to_json(s).find("token_cap") == std::string::npos);
        QVERIFY(parse_topology(topology_to_json(s), "again") == s);
        // C without a cap: the two longest samples' sum.
        QCOMPARE(effective_token_cap(s, {5, 9, 3, 7}), std::int64_t{16});
        QCOMPARE(effective_token_cap(t, {5, 9, 3, 7}), std::int64_t{4096});
    }

    void refusals_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("message");
        const QString head =
            QStringLiteral(R"({"ep_ranks": 8, "dp_slots": 4, "token_cap": 100, "attention_stages": [], )");
        QTest::newRow("cell over max") << head + R"("samples_per_cell": 4, "max_samples_per_cell": 2})"
                                       << "t.json: samples_per_cell 4 exceeds max_samples_per_cell 2";
        QTest::newRow("cell not dividing slot") << head + R"("samples_per_cell": 3, "samples_per_dp_slot": 128})"
                                                << "t.json: samples_per_cell 3 does not divide samples_per_dp_slot 128";
        QTest::newRow("fixed rows below min_rows")
            << head + R"("samples_per_cell": 4, "samples_per_dp_slot": 128, "min_rows": 40})"
            << "t.json: samples_per_dp_slot 128 with samples_per_cell 4 fixes R = 32 rows, below min_rows 40";
        QTest::newRow("fixed rows not a multiple")
            << head + R"("samples_per_cell": 4, "samples_per_dp_slot": 128, "row_multiple": 3})"
            << "t.json: samples_per_dp_slot 128 with samples_per_cell 4 fixes R = 32 rows, not a multiple of "
               "row_multiple 3";
        QTest::newRow("slot below min_rows")
            << head + R"("samples_per_dp_slot": 8, "min_rows": 10})"
            << "t.json: samples_per_dp_slot 8 allows at most 8 rows (every cell non-empty), below min_rows 10";
        QTest::newRow("slot below row_multiple")
            << head + R"("samples_per_dp_slot": 8, "row_multiple": 16})"
            << "t.json: samples_per_dp_slot 8 allows at most 8 rows (every cell non-empty), and no multiple of "
               "row_multiple 16 is among 1..8";
        QTest::newRow("oversize word") << head + R"("oversize": "split"})"
                                       << R"(t.json: oversize is "split", not "refuse" or "alone")";
        QTest::newRow("negative count") << head + R"("samples_per_cell": -1})"
                                        << "t.json: samples_per_cell is -1, not an integer in 0..1073741824";
        QTest::newRow("no cap") << R"({"ep_ranks": 8, "dp_slots": 4, "attention_stages": []})"
                                << "t.json: token_cap is missing";
    }
    void refusals() {
        QFETCH(QString, json);
        QFETCH(QString, message);
        QCOMPARE(input_error_of([&] { parse_topology(json.toStdString(), "t.json"); }), message);
    }

    /// Window refusals name the numbers; an oversize sample with `refuse` keeps today's text.
    void window_refusals() {
        Topology t = topo(1, 3, 100, rules(171, 0, 0));
        QCOMPARE(input_error_of([&] { check_batch_window(t, 512); }),
                 QStringLiteral("512 samples cannot fill 3 DP slots with 171 each"));
        t = topo(1, 4, 100, rules(0, 4, 0));
        QCOMPARE(input_error_of([&] { check_batch_window(t, 510); }),
                 QStringLiteral("510 samples cannot fill cells of 4 samples on 4 DP slots: 510 is not a multiple of "
                                "4 x 4 = 16"));
        t.min_rows = 40;
        QCOMPARE(
            input_error_of([&] { check_batch_window(t, 512); }),
            QStringLiteral("samples_per_cell 4 on 4 DP slots fixes R = 32 rows for 512 samples, below min_rows 40"));
        t.min_rows = 0;
        t.row_multiple = 3;
        QCOMPARE(input_error_of([&] { check_batch_window(t, 512); }),
                 QStringLiteral("samples_per_cell 4 on 4 DP slots fixes R = 32 rows for 512 samples, not a multiple "
                                "of row_multiple 3"));
        const Trace w = lengths_window({12, 3, 4, 5});
        const Placement pi = identity_placement(2, 4, 1);
        QCOMPARE(input_error_of([&] { make_packing_problem(w, topo(1, 2, 10, rules(0, 0, 0)), pi); }),
                 QStringLiteral("sample 's0' has 12 tokens, more than the cap C = 10"));
        QCOMPARE(input_error_of([&] { make_packing_problem(w, topo(1, 2, 10, rules(0, 0, 0, Oversize::Alone)), pi); }),
                 QStringLiteral("no error"));
        // Two per cell: pairing the longest with the shortest is the best pairing, so its failure proves it.
        QCOMPARE(input_error_of([&] {
                     minimum_rows_under_rules({8, 7, 3, 3, 3, 3, 3, 3}, 10, topo(1, 2, 10, rules(0, 2, 0)), 1000);
                 }),
                 QStringLiteral("no rectangular layout exists: with samples_per_cell 2 the best pairing (longest "
                                "with shortest) puts 11 tokens in a cell, above the cap 10"));
        // No R <= S keeps a layout: the free bound proves it.
        QCOMPARE(input_error_of([&] {
                     minimum_rows_under_rules({9, 9, 9, 9, 9, 9}, 10, topo(1, 2, 10, rules(0, 3, 0)), 1000);
                 }),
                 QStringLiteral("no rectangular layout exists: samples_per_cell 3 allows at most 1 rows, but the "
                                "samples need at least 3 rows at cap 10"));
    }

    /// validate_layout names the broken count.
    void validate_counts() {
        PackingProblem p;
        p.n = 6;
        p.D = 2;
        p.C = 100;
        p.length = {1, 2, 3, 4, 5, 6};
        const Layout x = Layout::from_cells(2, 2, {{0, 1, 2}, {3}, {4}, {5}});
        p.rules = rules(0, 2, 0);
        QCOMPARE(QString::fromStdString(validate_layout(x, p)),
                 QStringLiteral("cell (0, 0) holds 3 samples, samples_per_cell is 2"));
        p.rules = rules(0, 0, 2);
        QCOMPARE(QString::fromStdString(validate_layout(x, p)),
                 QStringLiteral("cell (0, 0) holds 3 samples, max_samples_per_cell is 2"));
        p.rules = rules(3, 0, 0);
        QCOMPARE(QString::fromStdString(validate_layout(x, p)),
                 QStringLiteral("DP slot 0 holds 4 samples, samples_per_dp_slot is 3"));
        p.rules = rules(0, 0, 3);
        QCOMPARE(QString::fromStdString(validate_layout(x, p)), QString());
        // Oversize: a cell over C is valid only alone with `alone`.
        p.C = 5;
        p.rules = rules(0, 0, 0, Oversize::Alone);
        const Layout y = Layout::from_cells(2, 2, {{0, 1}, {2}, {5}, {3, 4}});
        QCOMPARE(QString::fromStdString(validate_layout(y, p)), QStringLiteral("cell (1, 1) holds 9 tokens > cap 5"));
        PackingProblem q = p;
        q.n = 5;
        q.length = {1, 2, 3, 4, 6};
        const Layout ok = Layout::from_cells(2, 2, {{0, 1}, {2}, {4}, {3}});
        QCOMPARE(QString::fromStdString(validate_layout(ok, q)), QString());
        QCOMPARE(oversize_cells(ok, q), std::vector<int>({2}));
        q.rules.oversize = Oversize::Refuse;
        QCOMPARE(QString::fromStdString(validate_layout(ok, q)), QStringLiteral("cell (1, 0) holds 6 tokens > cap 5"));
    }

    /// Karmarkar-Karp under the counts: equal-size parts worked by hand, and every count kept.
    void karmarkar_karp_counts() {
        // 8..1 into 2 parts of 4: chunks {8,7} {6,5} {4,3} {2,1} -> {8+5, 7+6}, {4+1, 3+2} -> 18 and 18.
        const std::vector<std::int64_t> len = {8, 7, 6, 5, 4, 3, 2, 1};
        std::vector<int> all(8);
        std::iota(all.begin(), all.end(), 0);
        const auto parts = equal_size_kk(len, all, 2);
        QCOMPARE(parts, (std::vector<std::vector<int>>{{0, 3, 5, 6}, {1, 2, 4, 7}}));
        const Layout cellwise = karmarkar_karp_layout(len, 2, 2, rules(0, 2, 0));
        QCOMPARE(count_violation(cellwise, rules(0, 2, 0)), QString());
        const Layout slotwise = karmarkar_karp_layout(len, 2, 2, rules(4, 0, 0));
        QCOMPARE(count_violation(slotwise, rules(4, 0, 0)), QString());
        // Slot 0 = {8, 5, 3, 2} (18) split by KK into two rows: {5, 3, 2} (10) in row 0, {8} in row 1.
        QCOMPARE(test::cells_of(slotwise)[0], std::vector<int>({3, 5, 6}));
        QCOMPARE(test::cells_of(slotwise)[2], std::vector<int>({0}));
        Rng rng(7);
        for (int trial = 0; trial < 50; ++trial) {
            const int D = 1 + static_cast<int>(rng.below(4)), c = 1 + static_cast<int>(rng.below(3));
            const int R = 1 + static_cast<int>(rng.below(4));
            std::vector<std::int64_t> l(static_cast<std::size_t>(R * D * c));
            for (auto& v : l)
                v = 1 + static_cast<std::int64_t>(rng.below(100));
            QCOMPARE(count_violation(karmarkar_karp_layout(l, R, D, rules(0, c, 0)), rules(0, c, 0)), QString());
            QCOMPARE(count_violation(karmarkar_karp_layout(l, R, D, rules(R * c, 0, 0)), rules(R * c, 0, 0)),
                     QString());
        }
    }

    /// R* under the counts on random tiny windows against brute force over every layout: never below
    /// the true minimum, equal to it when certified, its layout keeping every count.
    void row_count_brute_force() {
        Rng rng(11);
        int certified = 0;
        for (int trial = 0; trial < 150; ++trial) {
            const int D = 1 + static_cast<int>(rng.below(2));
            const int n = D * (2 + static_cast<int>(rng.below(3))); // 2..6 samples, a multiple of D
            const std::int64_t C = 10;
            std::vector<std::int64_t> len(static_cast<std::size_t>(n));
            for (auto& v : len)
                v = 1 + static_cast<std::int64_t>(rng.below(10));
            BatchRules b;
            switch (trial % 4) {
            case 0:
                b = rules(n / D, 0, 0);
                break;
            case 1:
                b = rules(0, 0, 2);
                break;
            case 2:
                b = rules(n / D, 0, 2);
                break;
            default:
                b = rules(0, n % (2 * D) == 0 ? 2 : 1, 0);
                break;
            }
            const Topology t = topo(1, D, C, b);
            const int truth = brute_rows(len, C, D, b);
            RowCount rc;
            const QString err = input_error_of([&] { rc = minimum_rows_under_rules(len, C, t, 100000); });
            if (truth == 0) {
                QVERIFY2(err != QStringLiteral("no error"), qPrintable(QStringLiteral("trial %1").arg(trial)));
                continue;
            }
            QVERIFY2(err == QStringLiteral("no error"), qPrintable(err));
            QVERIFY(rc.rows >= truth);
            if (rc.certified) {
                QCOMPARE(rc.rows, truth);
                ++certified;
            }
            QVERIFY(rc.lower_bound <= truth);
            PackingProblem p;
            p.n = n;
            p.D = D;
            p.C = C;
            p.length = len;
            p.rules = b;
            QCOMPARE(QString::fromStdString(validate_layout(rc.layout, p)), QString());
        }
        QVERIFY(certified > 100);
    }

    /// Random moves through IncrementalScorer under each rule: every feasible move keeps every count,
    /// and the incremental score equals a full rescore after each.
    void moves_keep_counts() {
        for (const BatchRules& b : {rules(32, 0, 0), rules(0, 2, 0), rules(0, 0, 3), rules(32, 0, 4)}) {
            const PlanInput in = synth_input(16, 3, b);
            const PackingProblem p =
                make_packing_problem(in.window, in.topology,
                                     identity_placement(in.window.model.num_moe_layers(), in.window.model.experts, 8));
            const RowCount rc = minimum_rows_under_rules(p.length, p.C, in.topology, 10000);
            QCOMPARE(QString::fromStdString(validate_layout(rc.layout, p)), QString());
            IncrementalScorer sc(p, rc.layout);
            Rng rng(5);
            int applied = 0;
            for (int step = 0; step < 4000; ++step) {
                const int i = static_cast<int>(rng.below(static_cast<std::uint64_t>(p.n)));
                const int k = static_cast<int>(rng.below(static_cast<std::uint64_t>(sc.cell_count())));
                if (rng.uniform() < 0.5) {
                    if (!sc.relocate_feasible(i, k)) continue;
                    sc.apply_relocate(i, k);
                } else {
                    const std::span<const int> cell = sc.cell(k);
                    const int j = cell[rng.below(cell.size())];
                    if (!sc.swap_feasible(i, j)) continue;
                    sc.apply_swap(i, j);
                }
                ++applied;
                if (rng.uniform() < 0.3) sc.undo();
                if (step % 97 == 0) {
                    const Layout x = sc.layout();
                    QCOMPARE(QString::fromStdString(validate_layout(x, p)), QString());
                    QCOMPARE(sc.score(), score_layout(x, p));
                }
            }
            const Layout x = sc.layout();
            QCOMPARE(QString::fromStdString(validate_layout(x, p)), QString());
            QCOMPARE(sc.score(), score_layout(x, p));
            QVERIFY(applied > 100);
        }
    }

    /// The planner on synthetic windows under each rule: every method's layout keeps the counts, the
    /// population after seeding and the result of every stage do (validate_layout checks the counts
    /// inside annealing and polish), and the plan is the same for 1 and 3 workers.
    void planner_keeps_counts_data() {
        QTest::addColumn<int>("per_slot");
        QTest::addColumn<int>("per_cell");
        QTest::addColumn<int>("max_per_cell");
        QTest::newRow("verl: n / D per DP slot") << 32 << 0 << 0;
        QTest::newRow("slime: 2 per cell") << 0 << 2 << 0;
        QTest::newRow("slime: 4 per cell, no cap") << 0 << 4 << 0;
        QTest::newRow("megatron: at most 3 per cell") << 0 << 0 << 3;
        QTest::newRow("n / D per slot, at most 4 per cell") << 32 << 0 << 4;
    }
    void planner_keeps_counts() {
        QFETCH(int, per_slot);
        QFETCH(int, per_cell);
        QFETCH(int, max_per_cell);
        const BatchRules b = rules(per_slot, per_cell, max_per_cell);
        // Two per cell at cap 4096 is infeasible on this window (longest with shortest, the best pairing,
        // exceeds it): cap 6000 there.
        PlanInput in = synth_input(16, 9, b, per_cell == 4 ? 0 : per_cell == 2 ? 6000 : 4096);
        in.budgets.workers = 1;
        const PlanResult r = plan_window(in);
        for (const MethodResult* m : r.methods()) {
            // Karmarkar-Karp does not know max_samples_per_cell: reported, not kept.
            const BatchRules kept = m->method == Method::KarmarkarKarp ? rules(per_slot, per_cell, 0) : b;
            QCOMPARE(count_violation(m->layout, kept), QString());
        }
        QVERIFY(!(r.reorder.metrics.score < r.routepack.metrics.score));
        QVERIFY(r.routepack.metrics.score < r.reorder.metrics.score);
        in.budgets.workers = 3;
        const PlanResult r3 = plan_window(in);
        QCOMPARE(r3.routepack.layout, r.routepack.layout);
        QCOMPARE(r3.routepack.metrics.score, r.routepack.metrics.score);
        // The plan file carries the rules and reads back.
        const std::string text = plan_to_json(r);
        const PlanFile f = parse_plan(text, "plan.json");
        QVERIFY(f.topology.batch == b);
        QCOMPARE(nlohmann::json::parse(text)["version"].get<int>(), 10);
        QCOMPARE(QString::fromStdString(rescore_plan(f, in.window)), QString());
    }

    /// Tiny windows where the constrained optimum is known by brute force over every layout at R*.
    void constrained_optimum_data() {
        QTest::addColumn<int>("per_slot");
        QTest::addColumn<int>("per_cell");
        QTest::addColumn<int>("max_per_cell");
        QTest::newRow("3 per slot") << 3 << 0 << 0;
        QTest::newRow("1 per cell") << 0 << 1 << 0;
        QTest::newRow("at most 2 per cell") << 0 << 0 << 2;
    }
    void constrained_optimum() {
        QFETCH(int, per_slot);
        QFETCH(int, per_cell);
        QFETCH(int, max_per_cell);
        const BatchRules b = rules(per_slot, per_cell, max_per_cell);
        const std::vector<std::int64_t> len = {9, 2, 7, 3, 5, 4};
        PlanInput in;
        in.window = lengths_window(len);
        in.trace_name = "tiny";
        in.window_name = "all";
        in.topology = topo(2, 2, 12, b);
        in.budgets.workers = 1;
        const PlanResult r = plan_window(in);
        const PackingProblem p = make_packing_problem(in.window, in.topology, r.placement.routepack);
        Score best{1e300, 1e300, 1e300};
        for_each_layout(len, 12, r.rows.rows, 2, b, [&](const Layout& x) {
            best = std::min(best, score_layout(x, p));
            return true;
        });
        QCOMPARE(r.routepack.metrics.score, best);
        QCOMPARE(count_violation(r.routepack.layout, b), QString());
        QCOMPARE(r.rows.rows, brute_rows(len, 12, 2, b));
    }

    /// Oversize `alone`: the sample longer than C stands alone, is scored as it is (T > 1), is marked
    /// in the plan file, and no move puts another sample beside it.
    void oversize_alone() {
        const std::vector<std::int64_t> len = {30, 2, 7, 3, 5, 4, 6, 1};
        PlanInput in;
        in.window = lengths_window(len);
        in.trace_name = "tiny";
        in.window_name = "all";
        in.topology = topo(2, 2, 12, rules(0, 0, 0, Oversize::Alone));
        in.budgets.workers = 1;
        const PlanResult r = plan_window(in);
        const Layout& x = r.routepack.layout;
        int alone = -1;
        for (int k = 0; k < x.cell_count(); ++k)
            if (std::find(x.cell(k).begin(), x.cell(k).end(), 0) != x.cell(k).end()) alone = k;
        QCOMPARE(x.cell_size(alone), 1);
        const PackingProblem p = make_packing_problem(in.window, in.topology, r.placement.routepack);
        QCOMPARE(r.routepack.metrics.score, score_layout(x, p));
        IncrementalScorer sc(p, x);
        for (int i = 1; i < p.n; ++i)
            QVERIFY(!sc.relocate_feasible(i, alone));
        const std::string text = plan_to_json(r);
        const auto j = nlohmann::json::parse(text);
        QCOMPARE(j["oversize_cells"],
                 nlohmann::json::parse("[[" + std::to_string(alone / 2) + ", " + std::to_string(alone % 2) + "]]"));
        const PlanFile f = parse_plan(text, "plan.json");
        QCOMPARE(f.oversize_cells, std::vector<int>({alone}));
        auto wrong = j;
        wrong["oversize_cells"] = nlohmann::json::array();
        QVERIFY(input_error_of([&] {
                    parse_plan(wrong.dump(), "plan.json");
                }).startsWith(QStringLiteral("plan.json: oversize_cells lists [] but the cells over C are [[")));
        // Alone cannot hold with two samples in every cell.
        in.topology.batch.samples_per_cell = 2;
        QCOMPARE(input_error_of([&] { plan_window(in); }),
                 QStringLiteral("sample 's0' has 30 tokens, more than the cap C = 12: oversize alone needs a cell of "
                                "its own, but samples_per_cell puts 2 samples in every cell"));
        in.topology.batch.samples_per_cell = 0;
        // The same window with `refuse` is refused with today's text.
        in.topology.batch.oversize = Oversize::Refuse;
        QCOMPARE(input_error_of([&] { plan_window(in); }),
                 QStringLiteral("sample 's0' has 30 tokens, more than the cap C = 12"));
    }

    /// On two nodes grouter and routepack+comm keep the counts too (a node packing that breaks them is
    /// not used): a routed window of 64 samples, S = 16 on 4 DP slots, 2 nodes.
    void comm_methods_keep_counts() {
        const ModelDescription m = test::tiny_model(2, 8, 2);
        Trace w;
        w.model = m;
        Rng rng(21);
        for (int i = 0; i < 64; ++i) {
            const int T = 5 + static_cast<int>(rng.below(40));
            std::vector<std::vector<std::vector<int>>> routes(2);
            for (int l = 0; l < 2; ++l)
                for (int t = 0; t < T; ++t) {
                    const int a = static_cast<int>(rng.below(8)), b = (a + 1 + static_cast<int>(rng.below(7))) % 8;
                    routes[static_cast<std::size_t>(l)].push_back({a, b});
                }
            w.append(test::sample_of("s" + std::to_string(i), m, routes));
        }
        PlanInput in;
        in.window = w;
        in.trace_name = "routed";
        in.window_name = "all";
        in.topology = topo(4, 4, 200, rules(16, 0, 4));
        in.topology.gpus_per_node = 2;
        in = small_budgets(in);
        in.budgets.workers = 1;
        const PlanResult r = plan_window(in);
        QCOMPARE(r.methods().size(), std::size_t{6});
        // Karmarkar-Karp keeps the DP slots' counts; it does not know max_samples_per_cell (as the
        // stacks' own balancers do not).
        for (const MethodResult* x : r.methods()) {
            const BatchRules kept = x->method == Method::KarmarkarKarp ? rules(16, 0, 0) : rules(16, 0, 4);
            QVERIFY2(
                count_violation(x->layout, kept).isEmpty(),
                qPrintable(QString::fromStdString(x->key()) + QStringLiteral(": ") + count_violation(x->layout, kept)));
        }
    }

    /// A tight max_samples_per_cell (cells x limit close to n): first fit fills the first cells with
    /// short samples to their limit and leaves a long one nowhere; the least-loaded construction
    /// balances tokens under the counts and meets the lower bound.
    void max_samples_per_cell_tight() {
        // Hand case: K = 2 cells of at most 3 samples, C = 10. First fit: {6, 4}, {5, 1, 1}, and the
        // last 1 fits nowhere (10 + 1 > C, the other cell full). Least-loaded: {6, 1, 1} and {5, 4, 1}.
        const std::vector<std::int64_t> len = {1, 6, 1, 5, 4, 1};
        BatchRules b;
        b.max_samples_per_cell = 3;
        QVERIFY(!fixed_row_ffd_counts(len, 10, 1, 2, b, nullptr));
        Layout x;
        std::string by;
        QVERIFY(layout_under_counts(len, 10, 1, 2, b, &x, &by));
        QCOMPARE(by, std::string("longest first into the least-loaded cell"));
        QCOMPARE(test::cells_of(x), (std::vector<std::vector<int>>{{1, 0, 2}, {3, 4, 5}}));
        const RowCount rc = minimum_rows_under_rules(len, 10, topo(1, 2, 10, b), 1000);
        QCOMPARE(rc.rows, 1);
        QVERIFY(rc.certified);
        // The real DeepSeek window (first 128 samples, EP 8 / DP 4, cap 4096): 4 cells of 32 samples
        // of about 2,270 tokens each fit one row. It used to be "R* = 2 best-known (not certified)".
        ROUTEPACK_REQUIRE_SHARED(dir, "traces/deepseek-v2-lite");
        ImportOptions opt;
        opt.model = known_model("deepseek-v2-lite");
        const Trace all = import_trace_to_memory({dir}, opt);
        const std::vector<std::size_t> order = test::natural_id_order(all);
        std::vector<std::int64_t> lengths;
        for (int k = 0; k < 128; ++k)
            lengths.push_back(all.samples[order[static_cast<std::size_t>(k)]].length);
        for (const int limit : {32, 33, 34}) {
            b.max_samples_per_cell = limit;
            const RowCount r = minimum_rows_under_rules(lengths, 4096, topo(8, 4, 4096, b), 100000);
            QVERIFY2(r.rows == 1 && r.certified, r.how.c_str());
            for (int k = 0; k < r.layout.cell_count(); ++k)
                QVERIFY(static_cast<int>(r.layout.cell(k).size()) <= limit);
        }
    }

    /// The CLI's flags replace the topology's rules; their refusals name the flag and the numbers.
    void cli_flags() {
        const auto tmp = test::temp_dir(QStringLiteral("batch-cli"));
        test::CliRun r = test::run_cli({QStringLiteral("synth"), QStringLiteral("--out"), test::qpath(tmp / "syn"),
                                        QStringLiteral("--groups"), QStringLiteral("3"), QStringLiteral("--group-size"),
                                        QStringLiteral("4"), QStringLiteral("--seed"), QStringLiteral("5")});
        QCOMPARE(r.code, 0);
        const QStringList plan = {QStringLiteral("plan"),
                                  QStringLiteral("--input"),
                                  test::qpath(tmp / "syn"),
                                  QStringLiteral("--experts"),
                                  QStringLiteral("32"),
                                  QStringLiteral("--top-k"),
                                  QStringLiteral("4"),
                                  QStringLiteral("--layers"),
                                  QStringLiteral("12"),
                                  QStringLiteral("--moe-layers"),
                                  QStringLiteral("1-11"),
                                  QStringLiteral("--topology"),
                                  QStringLiteral("synthetic-demo-ep8-dp4"),
                                  QStringLiteral("--quiet")};
        const QString out = test::qpath(tmp / "p.json");
        r = test::run_cli(plan + QStringList{QStringLiteral("--samples-per-dp-slot"), QStringLiteral("3"),
                                             QStringLiteral("--out"), out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto j = nlohmann::json::parse(test::read_file(tmp / "p.json"));
        QCOMPARE(j["topology"]["samples_per_dp_slot"].get<int>(), 3);
        for (std::size_t d = 0; d < 4; ++d) {
            std::size_t count = 0;
            for (const auto& row : j["rows"])
                count += row[d].size();
            QCOMPARE(count, std::size_t{3});
        }
        auto err = [&](const QStringList& extra) {
            return test::run_cli(plan + extra + QStringList{QStringLiteral("--out"), out}).err;
        };
        QCOMPARE(err({QStringLiteral("--samples-per-dp-slot"), QStringLiteral("5")}),
                 QStringLiteral("routepack: error: 12 samples cannot fill 4 DP slots with 5 each\n"));
        QCOMPARE(err({QStringLiteral("--samples-per-cell"), QStringLiteral("-1")}),
                 QStringLiteral("routepack: error: plan: --samples-per-cell must be in 0..1073741824 (got -1)\n"));
        QCOMPARE(err({QStringLiteral("--oversize"), QStringLiteral("maybe")}),
                 QStringLiteral("routepack: error: plan: --oversize must be refuse or alone (got maybe)\n"));
        QCOMPARE(err({QStringLiteral("--samples-per-cell"), QStringLiteral("4"),
                      QStringLiteral("--max-samples-per-cell"), QStringLiteral("2")}),
                 QStringLiteral("routepack: error: plan: --samples-per-cell, --max-samples-per-cell: samples_per_cell "
                                "4 exceeds max_samples_per_cell 2\n"));
        // An empty --oversize is refused as "oversize": "" is, not taken as the topology's.
        QCOMPARE(err({QStringLiteral("--oversize="), QString()}),
                 QStringLiteral("routepack: error: plan: --oversize must be refuse or alone (got )\n"));
        // The topology file's rules: a refusal names the file and the field.
        const std::string base =
            R"("ep_ranks": 8, "dp_slots": 4, "attention_stages": [{"name": "a", "alpha": 1, "beta": 1}])";
        test::write_file(tmp / "t.json", "{" + base + R"(, "token_cap": 4096, "samples_per_dp_slot": 5})");
        QStringList with_file = plan;
        with_file[with_file.indexOf(QStringLiteral("synthetic-demo-ep8-dp4"))] = test::qpath(tmp / "t.json");
        r = test::run_cli(with_file + QStringList{QStringLiteral("--out"), out});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + test::qpath(tmp / "t.json") +
                            QStringLiteral(": samples_per_dp_slot: 12 samples cannot fill 4 DP slots with 5 each\n"));
        // token_cap 0 with samples_per_cell (docs/batch-rules.md): the cap is the count's.
        test::write_file(tmp / "t.json", "{" + base + R"(, "token_cap": 0, "samples_per_cell": 3})");
        r = test::run_cli(with_file + QStringList{QStringLiteral("--out"), out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(!nlohmann::json::parse(test::read_file(tmp / "p.json"))["topology"].contains("token_cap"));
        test::write_file(tmp / "t.json", "{" + base + R"(, "token_cap": 0})");
        r = test::run_cli(with_file + QStringList{QStringLiteral("--out"), out});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + test::qpath(tmp / "t.json") +
                            QStringLiteral(": token_cap is 0, not an integer in 1..1099511627776\n"));
    }

    /// With every rule at its default the packers are today's.
    void defaults_unchanged() {
        const std::vector<std::int64_t> len = {9, 2, 7, 3, 5, 4, 8, 1, 6};
        Layout a, b;
        QVERIFY(fixed_row_ffd(len, 12, 2, 2, &a));
        QVERIFY(fixed_row_ffd_counts(len, 12, 2, 2, BatchRules{}, &b));
        QCOMPARE(a, b);
        QCOMPARE(karmarkar_karp_layout(len, 2, 2, BatchRules{}), karmarkar_karp_layout(len, 2, 2));
        const RowCount free = minimum_rows(len, 12, 2, 0, 1000);
        const RowCount same = minimum_rows_under_rules(len, 12, topo(1, 2, 12, BatchRules{}), 1000);
        QCOMPARE(same.rows, free.rows);
        QCOMPARE(same.layout, free.layout);
        QCOMPARE(same.how, free.how);
    }

    /// The stacks' layouts of bench_batch_rules (tests/bench/stack_balancers.h) on hand cases.
    void stack_balancers() {
        using namespace routepack::stacks;
        // verl's equal-size differencing of t = {4, 7, 1, 5, 2, 6} into 2 parts: the tuples (1, 2),
        // (4, 5), (6, 7) (as (t, t), samples (2, 4), (0, 3), (5, 1)) all have spread 1, so those with
        // the larger top merge first: {6, 5} and {7, 4} (11 each; the larger item list, sample 5 before
        // sample 1, goes first), then (1, 2) joins them crosswise: {2, 7, 4} = 13 and {1, 6, 5} = 12.
        const std::vector<std::int64_t> t = {4, 7, 1, 5, 2, 6};
        QCOMPARE(verl_karmarkar_karp(t, 2, true), (std::vector<std::vector<int>>{{4, 1, 0}, {2, 5, 3}}));
        QCOMPARE(verl_balanced_partitions(t, 2, true), (std::vector<std::vector<int>>{{0, 1, 4}, {2, 3, 5}}));
        // Without equal sizes: {7} | {6} and {5} | {4} (spread 1 each); 2 (spread 2) merges first with
        // the spread-1 state of the larger top: {2, 6} = 8 | {7}; then that one with {5} | {4}:
        // {2, 6, 4} = 12 | {7, 5} = 12; last 1 joins the part of 7 and 5: {7, 5, 1} = 13 | {2, 6, 4} = 12.
        QCOMPARE(verl_karmarkar_karp(t, 2, false), (std::vector<std::vector<int>>{{2, 1, 3}, {4, 5, 0}}));
        QCOMPARE(verl_balanced_partitions(t, 2, false), (std::vector<std::vector<int>>{{1, 2, 3}, {0, 4, 5}}));
        QCOMPARE(verl_workload(4), 98320);
        QCOMPARE(slime_flops_deepseek_v2_lite(2), 9791602688LL + 552960LL);
        // verl's whole layout on 2 DP ranks, max_token_len 8. Workloads 24576 t + t^2 keep the order of
        // t; the equal-size partition is {5, 2, 6} (samples 3, 4, 5) and {4, 7, 1} (0, 1, 2); each rank
        // orders its samples small/large: rank 0 is 4, 5, 3 (t 2, 6, 5), rank 1 is 2, 1, 0 (t 1, 7, 4).
        // R = max(ceil(13 / 8), ceil(12 / 8)) = 2. Rank 0's differencing: {6} against {5} first, then
        // {2} joins the smaller: {2, 5} (workload 172061) and {6}; rank 1: {7} and {4, 1}. Micro-batches
        // in descending workload, then the even ones reversed before the odd ones.
        const Layout v = verl_layout(t, 2, 8);
        QCOMPARE(v, Layout::from_cells(2, 2, {{4, 3}, {1}, {5}, {2, 0}}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, verl_layout(t, 2, 6));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, verl_layout(t, 4, 8));
        // slime's static micro-batches of 2 on 2 ranks: micro-batches {0, 1} (t 1 + 1), {2, 3} (4 + 4),
        // {4, 5} (2 + 2), {6, 7} (3 + 3). Balanced by FLOPs f(t) = a t + b t^2: the tuple (micro-batch 3,
        // 1) has the larger spread (2(a + 7b) > 2(a + 3b)) and takes (0, 2) reversed: {1, 0} against
        // {3, 2}; rank 0 runs micro-batches 0, 1, rank 1 runs 2, 3. Round-robin: 0, 2 and 1, 3.
        const std::vector<std::int64_t> s = {1, 1, 4, 4, 2, 2, 3, 3};
        QCOMPARE(slime_static_layout(s, 2, 2, true, slime_flops_deepseek_v2_lite),
                 Layout::from_cells(2, 2, {{0, 1}, {4, 5}, {2, 3}, {6, 7}}));
        QCOMPARE(slime_static_layout(s, 2, 2, false, slime_flops_deepseek_v2_lite),
                 Layout::from_cells(2, 2, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, slime_static_layout(s, 3, 2, false, verl_workload));
    }
};

QTEST_GUILESS_MAIN(TestBatchRules)
#include "tst_batch_rules.moc"
