// The planner facade end to end (core/plan/planner.h): topology parsing, bad input, determinism,
// cancellation, time limit, non-regression, the plan file round trip and its validation, and plans
// on windows of the real traces in ../shared/traces.
#include "app/cli_errors.h"
#include "core/import/import.h"
#include "core/plan/budgets.h"
#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "core/plan/plan_stage.h"
#include "core/plan/planner.h"
#include "core/plan/score/bound.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "tests/plan_file_testutil.h"
#include "tests/testutil.h"

#include <QtTest>

#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include <tbb/task_arena.h>

#include <nlohmann/json.hpp>

using namespace routepack;

namespace {

/// The InputError `f` throws in the CLI's words (cli::cli_error_text), or what happened instead.
template <typename F> std::string cli_text(F&& f) {
    try {
        f();
    } catch (const InputError& e) {
        return cli::cli_error_text(e);
    }
    return "<no InputError>";
}

Topology topo(int P, int D, std::vector<std::vector<int>> shards, std::int64_t C) {
    Topology t;
    t.ep_ranks = P;
    t.dp_slots = D;
    t.edp_shards = std::move(shards);
    t.token_cap = C;
    t.attention_stages = {AttentionStage{"mla", 27.0, 27.0}, AttentionStage{"kda", 10.0, 0.0}};
    return t;
}

/// A placement whose slots are a uniform shuffle of each layer's (Fisher-Yates, Rng(seed)).
Placement shuffled_placement(int L, int E, int P, std::uint64_t seed) {
    Placement pi = identity_placement(L, E, P);
    Rng rng(seed);
    for (int l = 0; l < L; ++l)
        for (int e = E - 1; e > 0; --e)
            std::swap(pi.slot[static_cast<std::size_t>(l) * E + e],
                      pi.slot[static_cast<std::size_t>(l) * E + rng.below(static_cast<std::uint64_t>(e) + 1)]);
    return pi;
}

PlanInput synth_input(int groups, std::uint64_t seed) {
    SynthConfig c;
    c.groups = groups;
    c.group_size = 8;
    c.seed = seed;
    PlanInput in;
    in.window = synth_trace(c);
    in.trace_name = "synth";
    in.window_name = "all";
    in.topology = topo(8, 4, {{0, 1}, {2, 3}}, 4096);
    in.budgets.annealing.levels = 4;
    in.budgets.annealing.steps = 300;
    in.budgets.seeding.candidates = 8;
    in.budgets.seeding.population = 4;
    return in;
}

/// The plan JSON without its timings object (the only part allowed to differ between runs).
std::string without_timings(const std::string& text) {
    auto j = nlohmann::json::parse(text);
    j.erase("timings");
    return j.dump();
}

/// A window of the given lengths on a 2-layer, 4-expert model (top-1): sample i routes all of its
/// tokens to expert i % 4 at both layers.
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
                w.counts.push_back(e == static_cast<int>(i % 4) ? static_cast<std::uint32_t>(lengths[i]) : 0u);
    }
    return w;
}

/// A window whose R* the exact row-count search cannot certify within 10^6 nodes: 41 lengths in
/// 251..499 (at most three per cell), cap 1000, 2 DP slots; the search runs linearly in its budget.
PlanInput hard_rows_input() {
    Rng rng(12);
    std::vector<std::int64_t> lengths;
    for (int i = 0; i < 41; ++i)
        lengths.push_back(251 + static_cast<std::int64_t>(rng.below(249)));
    PlanInput in;
    in.window = lengths_window(lengths);
    in.trace_name = "hard";
    in.window_name = "all";
    in.topology = topo(2, 2, {{0}, {1}}, 1000);
    in.budgets.annealing.levels = 2;
    in.budgets.annealing.steps = 100;
    in.budgets.seeding.candidates = 4;
    in.budgets.seeding.population = 2;
    in.budgets.polish_evaluations = 1000;
    return in;
}

QString plan_error(const PlanInput& in) {
    try {
        plan_window(in);
    } catch (const InputError& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("(no error)");
}

} // namespace

class TestPlanner : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void topologyParsing() {
        const auto t = parse_topology(R"({"ep_ranks": 8, "experts_per_layer": 64, "dp_slots": 4,
            "edp_shards": [[0, 1], [3, 2]], "token_cap": 4096,
            "attention_stages": [{"name": "mla", "alpha": 27.0, "beta": 27.0}]})",
                                      "t.json");
        QCOMPARE(t.ep_ranks, 8);
        QCOMPARE(t.shards(), 2);
        QCOMPARE(t.edp_shards[1], (std::vector<int>{2, 3}));
        QCOMPARE(t.shard_of_slot(), (std::vector<int>{0, 0, 1, 1}));
        QCOMPARE(parse_topology(topology_to_json(t), "again"), t);
        const auto single =
            parse_topology(R"({"ep_ranks": 2, "dp_slots": 3, "token_cap": 10, "attention_stages": []})", "s");
        QCOMPARE(single.edp_shards, (std::vector<std::vector<int>>{{0, 1, 2}}));
        QCOMPARE(single.row_multiple, 1);
        // row_multiple: read, written only when it is not 1 (a topology without it serializes as before).
        QVERIFY(topology_to_json(single).find("row_multiple") == std::string::npos);
        const auto rm = parse_topology(
            R"({"ep_ranks": 2, "dp_slots": 3, "token_cap": 10, "min_rows": 5, "row_multiple": 4, "attention_stages": []})",
            "s");
        QCOMPARE(rm.row_multiple, 4);
        QCOMPARE(rm.min_rows, 5);
        QVERIFY(topology_to_json(rm).find("\"row_multiple\":4") != std::string::npos);
        QCOMPARE(parse_topology(topology_to_json(rm), "again"), rm);
    }
    void topologyErrors_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("error");
        const QString st = QStringLiteral(R"("attention_stages": [{"name": "a", "alpha": 1, "beta": 1}])");
        QTest::newRow("not partition")
            << R"({"ep_ranks": 2, "dp_slots": 4, "edp_shards": [[0, 1], [2]], "token_cap": 10, )" + st + "}"
            << "t.json: DP slot 3 is in no EDP shard; edp_shards must partition 0..3";
        QTest::newRow("overlap")
            << R"({"ep_ranks": 2, "dp_slots": 2, "edp_shards": [[0, 1], [1]], "token_cap": 10, )" + st + "}"
            << "t.json: DP slot 1 is in edp_shards[0] and edp_shards[1]; shards must partition the DP slots";
        QTest::newRow("outside") << R"({"ep_ranks": 2, "dp_slots": 2, "edp_shards": [[0, 5]], "token_cap": 10, )" + st +
                                        "}"
                                 << "t.json: edp_shards[0][1] is 5, not an integer in 0..1";
        QTest::newRow("negative alpha")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "attention_stages": [{"name": "a", "alpha": -1, "beta": 1}]})"
            << "t.json: attention_stages[0].alpha is -1, not a number in [0, 1e+12]";
        QTest::newRow("zero cap") << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 0, )" + st + "}"
                                  << "t.json: token_cap is 0, not an integer in 1..1099511627776";
        QTest::newRow("infinite beta")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "attention_stages": [{"name": "a", "alpha": 1, "beta": 1e999}]})"
            << "t.json: malformed JSON: number overflow parsing '1e999' (field attention_stages[0].beta)";
        QTest::newRow("unknown field")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "gpus_per_nod": 1, )" + st + "}"
            << "t.json: unknown field 'gpus_per_nod' (known: ep_ranks, dp_slots, token_cap, experts_per_layer, "
               "min_rows, row_multiple, gpus_per_node, ep_rank_nodes, dp_slot_nodes, comm_weight, "
               "comm_load_tolerance, expert_invocation_tokens, edp_shards, attention_stages, samples_per_dp_slot, "
               "samples_per_cell, max_samples_per_cell, oversize, migration)";
        QTest::newRow("invocation tokens out of range")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "expert_invocation_tokens": 1048577, )" + st + "}"
            << "t.json: expert_invocation_tokens is 1048577, not an integer in 0..1048576";
        QTest::newRow("invocation tokens fractional")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "expert_invocation_tokens": 2.5, )" + st + "}"
            << "t.json: expert_invocation_tokens is 2.5, not an integer in 0..1048576";
        QTest::newRow("comm_weight a list")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "comm_weight": [[1]], )" + st + "}"
            << "t.json: comm_weight is a list, not a number in [0, 1e+06]";
        QTest::newRow("unknown stage field")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "attention_stages": [{"name": "a", "alpha": 1, "beta": 1, "gamma": 2}]})"
            << "t.json: attention_stages[0]: unknown field 'gamma' (known: name, alpha, beta)";
        QTest::newRow("missing") << R"({"ep_ranks": 2, "token_cap": 3, )" + st + "}"
                                 << "t.json: dp_slots is missing";
        QTest::newRow("row_multiple 0") << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "row_multiple": 0, )" +
                                               st + "}"
                                        << "t.json: row_multiple is 0, not an integer in 1..1048576";
        QTest::newRow("row_multiple huge")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "row_multiple": 1048577, )" + st + "}"
            << "t.json: row_multiple is 1048577, not an integer in 1..1048576";
        QTest::newRow("row_multiple not integer")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "row_multiple": 2.5, )" + st + "}"
            << "t.json: row_multiple is 2.5, not an integer in 1..1048576";
        QTest::newRow("row_multiple past the largest R")
            << R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 10, "min_rows": 1073741824, "row_multiple": 3, )" + st +
                   "}"
            << "t.json: min_rows 1073741824 rounded up to a multiple of row_multiple 3 is 1073741826 rows, above the "
               "largest row count 1073741824";
    }
    void topologyErrors() {
        QFETCH(QString, json);
        QFETCH(QString, error);
        try {
            parse_topology(json.toStdString(), "t.json");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()), error);
        }
    }

    void badInput() {
        PlanInput in = synth_input(2, 3);
        in.topology.ep_ranks = 6; // 32 experts
        QCOMPARE(plan_error(in), QStringLiteral("topology: 32 experts are not divisible by 6 EP ranks"));
        in = synth_input(2, 3);
        in.topology.token_cap = 100;
        QVERIFY2(plan_error(in).contains(QStringLiteral("tokens, more than the cap C = 100")),
                 qPrintable(plan_error(in)));
        in = synth_input(2, 3);
        in.topology.dp_slots = 32; // 16 samples
        in.topology.edp_shards = {{}};
        for (int d = 0; d < 32; ++d)
            in.topology.edp_shards[0].push_back(d);
        QVERIFY2(plan_error(in).startsWith(QStringLiteral("no rectangular layout exists: ")),
                 qPrintable(plan_error(in)));
        in = synth_input(2, 3);
        in.window.samples.clear();
        in.window.counts.clear();
        QCOMPARE(plan_error(in), QStringLiteral("the window is empty"));
    }

    void planIsValidAndNeverWorseThanReorder() {
        for (std::uint64_t seed : {1, 2, 3}) {
            const PlanInput in = synth_input(8, seed);
            const PlanResult r = plan_window(in);
            QCOMPARE(r.routepack.layout.rows, r.rows.rows);
            QCOMPARE(r.baseline.layout, r.reorder.layout); // same FixedRowFFD layout, other placement
            QVERIFY(!(r.reorder.metrics.score < r.routepack.metrics.score));
            QVERIFY(r.placement.cv_lpt <= r.placement.cv_identity);
            QCOMPARE(r.routepack.metrics.cap_violations, 0);
            QCOMPARE(r.routepack.metrics.empty_cells, 0);
            QVERIFY(!r.search.convergence.empty());
            QCOMPARE(int(r.search.convergence.size()), in.budgets.annealing.levels);
        }
    }

    void determinism() {
        PlanInput in = synth_input(8, 5);
        in.budgets.workers = 2;
        const std::string a = without_timings(plan_to_json(plan_window(in)));
        const std::string b = without_timings(plan_to_json(plan_window(in)));
        QCOMPARE(a, b);
        in.budgets.workers = 1;
        const std::string c = without_timings(plan_to_json(plan_window(in)));
        // workers is recorded in the plan; apart from it the plan is the same for 1 and 2 workers.
        auto ja = nlohmann::json::parse(a), jc = nlohmann::json::parse(c);
        ja["planner"].erase("workers");
        jc["planner"].erase("workers");
        QCOMPARE(ja.dump(), jc.dump());
        in.budgets.seed = 99;
        QVERIFY(without_timings(plan_to_json(plan_window(in))) != c);
        // A shared window (a Python Window planned in place) plans as the same window held by value,
        // and the planner reads the shared one: the value left empty is not looked at.
        PlanInput shared = in;
        shared.shared_window = std::make_shared<const Trace>(in.window);
        shared.window = Trace{};
        QCOMPARE(&shared.trace(), shared.shared_window.get());
        QCOMPARE(without_timings(plan_to_json(plan_window(shared))), without_timings(plan_to_json(plan_window(in))));
    }

    void planWindowsMatchesSingleWorkerPlans() {
        // A run of three windows on two workers: each plan is exactly plan_window's single-worker
        // plan of its window; a bad window reports its error without stopping the others; a set
        // cancel flag plans nothing.
        std::vector<PlanInput> inputs = {synth_input(4, 1), synth_input(5, 2), synth_input(4, 3)};
        for (auto& in : inputs)
            in.budgets.workers = 2;       // forced to 1 per window
        inputs[1].topology.token_cap = 8; // shorter than its samples
        std::vector<int> done(inputs.size(), 0);
        const auto out = plan_windows(inputs, 2, [&](std::size_t k) { ++done[k]; });
        QCOMPARE(out.size(), std::size_t(3));
        for (std::size_t k : {std::size_t(0), std::size_t(2)}) {
            PlanInput one = inputs[k];
            one.budgets.workers = 1;
            QVERIFY(out[k].started);
            QCOMPARE(QString::fromStdString(out[k].error), QString());
            QCOMPARE(without_timings(plan_to_json(out[k].plan)), without_timings(plan_to_json(plan_window(one))));
            QCOMPARE(done[k], 1);
        }
        QVERIFY(out[1].started);
        QCOMPARE(QString::fromStdString(out[1].error), plan_error(inputs[1]));
        QVERIFY(!out[1].error.empty());
        std::atomic<bool> cancel{true};
        for (const auto& w : plan_windows(inputs, 2, {}, &cancel))
            QVERIFY(!w.started);
    }

    void progressAndCancellation() {
        PlanInput in = synth_input(8, 7);
        std::vector<std::string> stages;
        std::atomic<bool> cancel{false};
        const PlanResult r = plan_window(
            in,
            [&](const PlanEvent& e) {
                stages.push_back(e.stage);
                if (e.level) cancel.store(true); // cancel after the first annealing level
            },
            &cancel);
        QVERIFY(r.cancelled);
        QCOMPARE(r.search.convergence.size(), std::size_t(1));
        QVERIFY(std::find(stages.begin(), stages.end(), "placement") != stages.end());
        QVERIFY(std::find(stages.begin(), stages.end(), "seeding") != stages.end());
        // The best valid plan so far comes back.
        QVERIFY(!(r.reorder.metrics.score < r.routepack.metrics.score));
        QCOMPARE(r.routepack.layout.cell_count(), r.rows.rows * in.topology.dp_slots);
    }

    /// Rank demand is int32: a window where t_i * top_k, or a layer's routed total, reaches 2^31 is
    /// refused with the sample's name instead of wrapping.
    void int32DemandGuard() {
        const PlanInput in = synth_input(2, 5);
        const Trace& w = in.window;
        const int L = w.model.num_moe_layers(), E = w.model.experts, k = w.model.top_k;
        const Placement pi = identity_placement(L, E, in.topology.ep_ranks);
        Topology t = in.topology;
        Trace big = w;
        const std::int64_t len = (std::int64_t{1} << 31) / k; // t * k = 2^31 exactly
        big.samples[1].length = len;
        t.token_cap = len;
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { make_packing_problem(big, t, pi); })),
            QString::fromStdString("sample '" + w.samples[1].id + "': t_i * top_k = " + std::to_string(len) + " * " +
                                   std::to_string(k) + " does not fit the int32 rank demand (must stay below 2^31)"));
        big.samples[1].length = len - 1; // (2^31 / k - 1) * k < 2^31: accepted
        QCOMPARE(make_packing_problem(big, t, pi).length[1], len - 1);
        Trace heavy = w;
        heavy.counts[heavy.stride() * 2 + 0] = 0x7fffffffu; // sample 2, MoE layer 0: 2^31 - 1 + more
        heavy.counts[heavy.stride() * 2 + 1] = 5;
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { make_packing_problem(heavy, t, pi); })),
            QString::fromStdString("sample '" + w.samples[2].id + "': MoE layer " +
                                   std::to_string(w.model.moe_layers[0]) +
                                   " routes 2^31 or more tokens, beyond the int32 rank demand"));
    }

    /// q[i][l][p] = sum of the counts of the experts EP rank p holds at layer l (eq. 5), against a
    /// direct sum over every (l, e) on a synthetic window with a shuffled placement; a placement that
    /// is not a permutation is refused instead of writing past a rank's slots.
    void demandIsTheRankSumOfCounts() {
        const PlanInput in = synth_input(3, 11);
        const Trace& w = in.window;
        const int L = w.model.num_moe_layers(), E = w.model.experts, P = in.topology.ep_ranks;
        Placement pi = shuffled_placement(L, E, P, 5);
        const PackingProblem p = make_packing_problem(w, in.topology, pi);
        std::vector<std::int32_t> want(static_cast<std::size_t>(p.n) * L * P, 0);
        for (int i = 0; i < p.n; ++i)
            for (int l = 0; l < L; ++l)
                for (int e = 0; e < E; ++e)
                    want[(static_cast<std::size_t>(i) * L + l) * P + pi.rank_of(l, e)] +=
                        static_cast<std::int32_t>(w.counts[i * w.stride() + static_cast<std::size_t>(l) * E + e]);
        QCOMPARE(p.demand.size(), want.size());
        QVERIFY(std::equal(p.demand.begin(), p.demand.end(), want.begin()));
        QVERIFY(std::any_of(want.begin(), want.end(), [](std::int32_t v) { return v > 0; }));
        // Layer 0: expert 1 moved into the slot of an expert on another rank, which now holds H + 1.
        int other = 0;
        while (pi.rank_of(0, other) == pi.rank_of(0, 1))
            ++other;
        const int full = pi.rank_of(0, other);
        pi.slot[1] = pi.slot[static_cast<std::size_t>(other)];
        QCOMPARE(QString::fromStdString(routepack::test::error_of<std::invalid_argument>(
                     [&] { make_packing_problem(w, in.topology, pi); })),
                 QStringLiteral("make_packing_problem: the placement of MoE layer index 0 gives EP rank %1 more than "
                                "its %2 slots")
                     .arg(full)
                     .arg(E / P));
    }

    /// The metrics of a layout straight from the counts (no demand array: how the planner measures
    /// the baseline and grouter) equal layout_metrics on the full problem, field for field and bit for
    /// bit, for every method's layout of a plan under the identity and a shuffled placement (the
    /// karmarkar-karp layout has cells over C); a shape-only problem has no demand to score from.
    void metricsFromCountsEqualTheDemandPath() {
        const PlanInput in = synth_input(3, 17);
        const Trace& w = in.window;
        const PlanResult r = plan_window(in);
        const int L = w.model.num_moe_layers(), E = w.model.experts, P = in.topology.ep_ranks;
        const Placement shuffled = shuffled_placement(L, E, P, 9);
        int compared = 0;
        for (const Placement* pi : std::vector<const Placement*>{&r.placement.identity, &r.placement.lpt, &shuffled}) {
            const PackingProblem full = make_packing_problem(w, in.topology, *pi);
            const PackingProblem shape = make_packing_shape(w, in.topology, *pi);
            QVERIFY(shape.demand.empty());
            QCOMPARE(shape.length, full.length);
            for (const MethodResult* m : r.methods()) {
                const LayoutMetrics a = layout_metrics(m->layout, full, 0.25);
                const LayoutMetrics b = layout_metrics_from_counts(m->layout, shape, w, *pi, 0.25);
                QCOMPARE(b.score.max_u, a.score.max_u);
                QCOMPARE(b.score.sum_u, a.score.sum_u);
                QCOMPARE(b.score.max_j, a.score.max_j);
                QCOMPARE(b.ep_peak_sum, a.ep_peak_sum);
                QCOMPARE(b.ep_tail_peak, a.ep_tail_peak);
                QCOMPARE(b.ep_balance_efficiency, a.ep_balance_efficiency);
                QCOMPARE(b.attention_sum, a.attention_sum);
                QCOMPARE(b.joint, a.joint);
                QCOMPARE(b.cap_violations, a.cap_violations);
                QCOMPARE(b.empty_cells, a.empty_cells);
                QCOMPARE(b.cv_global, 0.25);
                // And the score equals the full path's (cost_breakdown over the demand).
                QCOMPARE(a.score.max_u, cost_breakdown(m->layout, full).score.max_u);
                ++compared;
            }
            QCOMPARE(QString::fromStdString(routepack::test::error_of<std::invalid_argument>(
                         [&] { layout_metrics(r.reorder.layout, shape, 0.0); })),
                     QStringLiteral("score: demand is not [n][L][P]"));
        }
        QCOMPARE(compared, 12);
        // The planner's own baseline figures are these.
        QCOMPARE(r.baseline.metrics.score.max_u,
                 layout_metrics(r.baseline.layout, make_packing_problem(w, in.topology, r.placement.identity), 0)
                     .score.max_u);
        QCOMPARE(r.baseline.metrics.ep_peak_sum,
                 layout_metrics(r.baseline.layout, make_packing_problem(w, in.topology, r.placement.identity), 0)
                     .ep_peak_sum);
        // A window that is not the problem's is refused.
        const PlanInput other = synth_input(2, 17);
        QCOMPARE(QString::fromStdString(routepack::test::error_of<std::invalid_argument>([&] {
                     layout_metrics_from_counts(r.reorder.layout, make_packing_shape(w, in.topology, r.placement.lpt),
                                                other.window, r.placement.lpt, 0.0);
                 })),
                 QStringLiteral("layout_metrics_from_counts: window, placement and problem shapes differ"));
    }

    /// The expert invocation term through the planner: make_packing_problem's expert lists are the
    /// window's nonzero counts in rank order, every method's metrics (demand path and counts path)
    /// equal the full score, the plan is no worse than reorder, and a = 0 written out plans exactly as
    /// a topology without the field.
    void invocationTermThroughThePlanner() {
        PlanInput in = synth_input(3, 17);
        in.topology.expert_invocation_tokens = 25;
        const Trace& w = in.window;
        const PlanResult r = plan_window(in);
        QVERIFY(!(r.reorder.metrics.score < r.routepack.metrics.score));
        const int L = w.model.num_moe_layers(), E = w.model.experts, P = in.topology.ep_ranks;
        const PackingProblem full = make_packing_problem(w, in.topology, r.placement.routepack);
        QVERIFY(full.has_invocation_term());
        QCOMPARE(full.E, E);
        // The lists: sample 0's entries are its nonzero counts, in the rank order of experts_by_rank.
        const std::vector<int> by_rank = experts_by_rank(r.placement.routepack);
        const auto a0 = w.sample_counts(0);
        std::vector<std::tuple<int, int, int>> want;
        for (int l = 0; l < L; ++l)
            for (int s = 0; s < E; ++s)
                if (const auto c = a0[static_cast<std::size_t>(l * E + by_rank[static_cast<std::size_t>(l * E + s)])])
                    want.emplace_back(l * E + s, static_cast<int>(c), l * P + s / (E / P));
        std::vector<std::tuple<int, int, int>> got;
        for (auto o = full.slot_offsets[0]; o < full.slot_offsets[1]; ++o)
            got.emplace_back(full.slot_index[o], full.slot_count[o], full.slot_rank[o]);
        QCOMPARE(got, want);
        QVERIFY(!want.empty());
        const PackingProblem shape = make_packing_shape(w, in.topology, r.placement.routepack);
        for (const MethodResult* m : {&r.reorder, &r.karmarkar_karp, &r.routepack}) {
            const LayoutMetrics a = layout_metrics(m->layout, full, 0);
            const LayoutMetrics b = layout_metrics_from_counts(m->layout, shape, w, r.placement.routepack, 0);
            QCOMPARE(b.score.max_u, a.score.max_u);
            QCOMPARE(b.ep_peak_sum, a.ep_peak_sum);
            QCOMPARE(a.score.max_u, score_layout(m->layout, full).max_u);
        }
        QCOMPARE(r.routepack.metrics.score.max_u, score_layout(r.routepack.layout, full).max_u);
        // The term raises every layout's score above the linear one.
        PackingProblem linear = full;
        linear.invocation_tokens = 0;
        QVERIFY(score_layout(r.routepack.layout, linear).max_u < r.routepack.metrics.score.max_u);
        // a = 0 is no term: the same plan as without the field, text for text but for the timings.
        PlanInput zero = synth_input(3, 17);
        const std::string plain = without_timings(plan_to_json(plan_window(zero)));
        nlohmann::json zj = nlohmann::json::parse(topology_to_json(zero.topology));
        zj["expert_invocation_tokens"] = 0;
        zero.topology = parse_topology(zj.dump(), "zero.json");
        QCOMPARE(without_timings(plan_to_json(plan_window(zero))), plain);
    }

    /// The demand's storage: a large block starts on a 2 MiB boundary (huge-page advice needs it),
    /// a small one is an ordinary block, and both keep what is written into them.
    void demandStorage() {
        DemandVector big;
        big.resize(std::size_t{3} << 20); // 12 MiB of int32
        QCOMPARE(reinterpret_cast<std::uintptr_t>(big.data()) % (std::uintptr_t{2} << 20), std::uintptr_t{0});
        for (std::size_t k = 0; k < big.size(); k += 4099)
            big[k] = static_cast<std::int32_t>(k);
        QCOMPARE(big[4099 * 700], 4099 * 700);
        DemandVector small;
        small.assign(10, 7);
        QCOMPARE(small.size(), std::size_t{10});
        QVERIFY(std::all_of(small.begin(), small.end(), [](std::int32_t v) { return v == 7; }));
        small.resize(20, 0);
        QCOMPARE(small[19], 0);
        QCOMPARE(small[9], 7);
    }

    /// Every budget has an upper bound, checked before any work, with the key (or the CLI flag) and the
    /// range in the message; the JSON reader and the planner say the same.
    void budgetUpperBounds_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<qint64>("value");
        QTest::addColumn<QString>("expected");
        QTest::newRow("seeds_M") << "seeds_M" << qint64(10000000)
                                 << "planner: budget 'seeds_M' must be in 1..4096 (got 10000000)";
        QTest::newRow("population") << "population" << qint64(257)
                                    << "planner: budget 'population' must be in 1..256 (got 257)";
        QTest::newRow("choice_width") << "choice_width" << qint64(1025)
                                      << "planner: budget 'choice_width' must be in 1..1024 (got 1025)";
        QTest::newRow("projections") << "projections" << qint64(257)
                                     << "planner: budget 'projections' must be in 1..256 (got 257)";
        QTest::newRow("pair_candidates") << "pair_candidates" << qint64(4097)
                                         << "planner: budget 'pair_candidates' must be in 1..4096 (got 4097)";
        QTest::newRow("levels") << "levels" << qint64(1001) << "planner: budget 'levels' must be in 0..1000 (got 1001)";
        QTest::newRow("steps_per_level") << "steps_per_level" << qint64(100000001)
                                         << "planner: budget 'steps_per_level' must be in 0..100000000 (got 100000001)";
        QTest::newRow("row_nodes") << "row_nodes" << qint64(std::numeric_limits<qint64>::max())
                                   << "planner: budget 'row_nodes' must be in 0..1000000000 (got 9223372036854775807)";
        QTest::newRow("polish_evaluations")
            << "polish_evaluations" << qint64(1000000001)
            << "planner: budget 'polish_evaluations' must be in 0..1000000000 (got 1000000001)";
        QTest::newRow("polish_kick_moves") << "polish_kick_moves" << qint64(1000001)
                                           << "planner: budget 'polish_kick_moves' must be in 0..1000000 (got 1000001)";
    }
    void budgetUpperBounds() {
        QFETCH(QString, key);
        QFETCH(qint64, value);
        QFETCH(QString, expected);
        PlanInput in = synth_input(2, 3);
        // The JSON reader refuses the value with the same range, in the field reader's words...
        const std::string json = "{\"" + key.toStdString() + "\": " + std::to_string(value) + "}";
        const QString range = QRegularExpression(QStringLiteral("in (\\d+\\.\\.\\d+) ")).match(expected).captured(1);
        QCOMPARE(QString::fromStdString(
                     routepack::test::error_of<InputError>([&] { parse_planner_budgets(json, "planner"); })),
                 QStringLiteral("planner: %1 is %2, not an integer in %3").arg(key).arg(value).arg(range));
        // ... and the planner refuses it when set directly (the largest accepted value passes the check).
        auto set = [&](PlannerBudgets& b, std::int64_t v) {
            const std::string k = key.toStdString();
            if (k == "seeds_M") b.seeding.candidates = static_cast<int>(v);
            if (k == "population") b.seeding.population = static_cast<int>(v);
            if (k == "choice_width") b.seeding.choice_width = static_cast<int>(v);
            if (k == "projections") b.seeding.projections = static_cast<int>(v);
            if (k == "pair_candidates") b.seeding.pair_candidates = static_cast<int>(v);
            if (k == "levels") b.annealing.levels = static_cast<int>(v);
            if (k == "steps_per_level") b.annealing.steps = static_cast<int>(std::min<std::int64_t>(v, INT_MAX));
            if (k == "row_nodes") b.row_nodes = v;
            if (k == "polish_evaluations") b.polish_evaluations = v;
            if (k == "polish_kick_moves") b.polish_kick_moves = static_cast<int>(v);
        };
        set(in.budgets, value);
        QCOMPARE(plan_error(in), expected);
        PlannerBudgets ok = in.budgets;
        const QRegularExpressionMatch hi = QRegularExpression(QStringLiteral("\\.\\.(\\d+) ")).match(expected);
        QVERIFY(hi.hasMatch());
        set(ok, hi.captured(1).toLongLong());
        check_planner_budgets(ok, "planner");
        // The CLI names the flag where the budget has one.
        if (key == "seeds_M") {
            QCOMPARE(QString::fromStdString(cli_text([&] { check_planner_budgets(in.budgets, "plan"); })),
                     QStringLiteral("plan: --seeds must be in 1..4096 (got 10000000)"));
        }
    }

    /// docs/budgets.md's table is the budget table's key, flag, default and range word for word, one
    /// line per row in table order, and no other row: a budget added, a default or a range changed
    /// without its page fails here. Hand-held values pin the default column's formatting.
    void budgetsPageMatchesTable() {
        using routepack::BudgetRow;
        QCOMPARE(routepack::budget_value_text(*routepack::find_budget("t0"), PlannerBudgets{}), std::string("0.01"));
        QCOMPARE(routepack::budget_value_text(*routepack::find_budget("anytime"), PlannerBudgets{}),
                 std::string("false"));
        QCOMPARE(routepack::budget_value_text(*routepack::find_budget("max_moves"), PlannerBudgets{}),
                 std::string("-1"));
        QCOMPARE(routepack::find_budget("levels")->default_value, 12.0);
        QCOMPARE(routepack::budget_rule(*routepack::find_budget("levels")), std::string("in 0..1000"));
        QFile page(QStringLiteral(ROUTEPACK_SOURCE_DIR "/docs/budgets.md"));
        QVERIFY(page.open(QIODevice::ReadOnly));
        std::vector<std::string> lines;
        for (const QByteArray& l : page.readAll().split('\n'))
            if (l.startsWith("| `")) lines.push_back(l.toStdString());
        const auto table = routepack::budget_table();
        QCOMPARE(lines.size(), table.size());
        for (std::size_t i = 0; i < table.size(); ++i) {
            const BudgetRow& row = table[i];
            const std::string want = "| `" + std::string(row.key) + "` | " +
                                     (row.flag ? "`" + std::string(row.flag) + "`" : std::string("(none)")) + " | `" +
                                     routepack::budget_value_text(row, PlannerBudgets{}) + "` | " +
                                     routepack::budget_rule(row) + " |";
            QVERIFY2(lines[i].rfind(want, 0) == 0, ("docs/budgets.md line " + std::to_string(i + 1) +
                                                    " of the table: " + lines[i] + "\nwant it to start with: " + want)
                                                       .c_str());
        }
    }

    /// The budget table (core/plan/budgets.h), row by row: every key round-trips through the
    /// budgets JSON at its upper bound, lo and hi are accepted, the values just outside are refused with
    /// the key (or the CLI flag) in the message, and the table covers every key the writer emits.
    void budgetTableWalk() {
        using routepack::budget_table;
        using routepack::BudgetKind;
        using routepack::BudgetRow;
        const auto table = budget_table();
        QVERIFY(table.size() >= 19);
        const nlohmann::json written = nlohmann::json::parse(planner_budgets_to_json(PlannerBudgets{}));
        // Every row but those not written at their default (max_moves: -1, unlimited; history_decay 0), + "seed".
        std::size_t unset = 0;
        for (const BudgetRow& row : table)
            unset += routepack::budget_written(row, PlannerBudgets{}) ? 0 : 1;
        QCOMPARE(unset, std::size_t{2});
        QCOMPARE(written.size(), table.size() - unset + 1);
        std::set<std::string> keys, flags, labels;
        for (const BudgetRow& row : table) {
            const std::string key = row.key;
            QVERIFY2(keys.insert(key).second, row.key);
            QVERIFY2(written.contains(key) == routepack::budget_written(row, PlannerBudgets{}), row.key);
            QVERIFY2(!row.flag || flags.insert(row.flag).second, row.key);
            QVERIFY2(labels.insert(row.label).second, row.key);
            QVERIFY2(std::string(row.help).size() > 5, row.key);
            QVERIFY2(row.lo <= row.hi && row.hi <= std::numeric_limits<double>::max(), row.key); // an upper bound
            QCOMPARE(routepack::find_budget(key), &row);
            // The budgets around the row's value: anytime needs a time limit.
            auto with = [&](double v) {
                PlannerBudgets b;
                if (key == "anytime") b.time_limit_s = 1;
                if (row.kind == BudgetKind::Double)
                    routepack::set_budget_double(row, b, v);
                else
                    routepack::set_budget_int(row, b, static_cast<std::int64_t>(v));
                return b;
            };
            auto json_of = [&](double v) {
                nlohmann::json j = nlohmann::json::object();
                if (key == "anytime") j["time_limit_s"] = 1;
                if (row.kind == BudgetKind::Double)
                    j[key] = v;
                else if (row.kind == BudgetKind::Bool)
                    j[key] = v != 0;
                else
                    j[key] = static_cast<std::int64_t>(v);
                return j.dump();
            };
            const double lo = row.lo_open ? std::nextafter(row.lo, row.hi) : row.lo;
            const double hi = row.hi_open ? std::nextafter(row.hi, row.lo) : row.hi;
            for (const double v : {lo, hi}) {
                // Accepted by the check, and round-trips through the JSON text unchanged.
                const PlannerBudgets b = with(v);
                check_planner_budgets(b, "planner", false);
                const std::string text = planner_budgets_to_json(b);
                const PlannerBudgets back = parse_planner_budgets(text, "t");
                QCOMPARE(routepack::budget_double(row, back), routepack::budget_double(row, b));
                QCOMPARE(planner_budgets_to_json(back), text);
                QCOMPARE(routepack::budget_double(row, parse_planner_budgets(json_of(v), "t")),
                         routepack::budget_double(row, b));
            }
            if (row.kind == BudgetKind::Bool) {
                // The only rule of a flag: anytime without a time limit, and JSON true/false only.
                PlannerBudgets b;
                routepack::set_budget_int(row, b, 1);
                const std::string e =
                    routepack::test::error_of<InputError>([&] { check_planner_budgets(b, "planner"); });
                QVERIFY2(e.starts_with("planner: budget '" + key + "' must be "), e.c_str());
                QCOMPARE(
                    routepack::test::error_of<InputError>([&] { parse_planner_budgets("{\"" + key + "\": 2}", "t"); }),
                    "t: " + key + " is 2, not true or false");
                continue;
            }
            const bool integer = row.kind != BudgetKind::Double;
            const double below = integer ? row.lo - 1 : (row.lo_open ? row.lo : std::nextafter(row.lo, -HUGE_VAL));
            const double above = integer ? row.hi + 1 : (row.hi_open ? row.hi : std::nextafter(row.hi, HUGE_VAL));
            for (const double v : {below, above}) {
                if (key == "workers" && v > row.hi && max_planner_workers() > row.hi) continue; // a huge machine
                const PlannerBudgets b = with(v);
                const std::string by_key =
                    routepack::test::error_of<InputError>([&] { check_planner_budgets(b, "planner"); });
                QVERIFY2(by_key.starts_with("planner: budget '" + key + "' must be "), by_key.c_str());
                // The same error in the CLI's words: the budget's flag (its key when it has none).
                const std::string by_flag = cli_text([&] { check_planner_budgets(b, "plan"); });
                const std::string name = row.flag ? row.flag : row.key;
                QVERIFY2(by_flag.starts_with("plan: " + name + " must be "), by_flag.c_str());
                QCOMPARE(by_flag.substr(by_flag.find(" must be ")), by_key.substr(by_key.find(" must be ")));
                if (!std::isfinite(v)) continue; // no JSON number for it
                const std::string by_json =
                    routepack::test::error_of<InputError>([&] { parse_planner_budgets(json_of(v), "t"); });
                // The field reader's words, but for a bound the reader leaves to the check (time_limit_s).
                const bool deferred = row.json_defers_hi && v > row.hi;
                QVERIFY2(by_json.starts_with(deferred ? "t: budget '" + key + "' must be " : "t: " + key + " is "),
                         by_json.c_str());
            }
        }
    }

    /// Seeding keeps every candidate until the selection: seeds_M x samples beyond 8 GiB is refused
    /// before any work, with the numbers and the largest seeds_M that fits.
    void seedingMemoryRefusedUpFront() {
        std::vector<std::int64_t> lengths(200000, 1);
        PlanInput in;
        in.window = lengths_window(lengths);
        in.topology = topo(2, 8, {{0, 1, 2, 3, 4, 5, 6, 7}}, 64);
        in.budgets.seeding.candidates = 4096;
        QCOMPARE(plan_error(in),
                 QStringLiteral("planner: budget 'seeds_M' = 4096 would hold about 29.0 GiB of seeding candidates "
                                "for 200000 samples (limit 8 GiB); use seeds_M <= 1130 for this window"));
    }

    /// The row count stops at the time limit and on cancel: on a window whose R* is hard to certify,
    /// the largest node budget would run for about 20 s; the plan comes back with R* best-known and
    /// the stop recorded, the nodes spent far below the budget.
    void rowCountStops() {
        PlanInput in = hard_rows_input();
        const PlanResult base = plan_window(in); // the default budget: 10^6 nodes, not certified
        QVERIFY(!base.rows.certified);
        QVERIFY(!base.rows.stopped);
        QCOMPARE(base.rows.nodes, std::int64_t{1000000});
        in.budgets.row_nodes = kMaxRowNodes;
        in.budgets.time_limit_s = 0.2;
        const PlanResult r = plan_window(in);
        QVERIFY(r.time_limit_hit);
        QVERIFY(!r.cancelled);
        QVERIFY(r.rows.stopped);
        QVERIFY(!r.rows.certified);
        QVERIFY(r.rows.nodes < kMaxRowNodes);
        QVERIFY2(QString::fromStdString(r.rows.how).contains(QStringLiteral("was stopped (cancelled or out of time)")),
                 r.rows.how.c_str());
        QCOMPARE(r.routepack.layout.cell_count(), r.rows.rows * 2);
        QCOMPARE(validate_layout(r.routepack.layout, make_packing_shape(in.window, in.topology, r.placement.lpt)),
                 std::string());
        // Cancel (the CLI's SIGINT, Python's progress returning False) during the row count.
        in.budgets.time_limit_s = 0;
        std::atomic<bool> cancel{false};
        const PlanResult c = plan_window(
            in,
            [&](const PlanEvent& e) {
                if (e.stage == "row count") cancel.store(true);
            },
            &cancel);
        QVERIFY(c.cancelled);
        QVERIFY(c.rows.stopped);
        QVERIFY(c.rows.nodes <= 4096); // the first poll saw the flag
        // minimum_rows itself: the token is polled every 4096 nodes, the first time before the first
        // node, so a flag set beforehand (or a deadline already passed) stops every exact search at
        // once; the incumbent is FixedRowFFD's.
        std::vector<std::int64_t> t;
        for (const auto& sm : in.window.samples)
            t.push_back(sm.length);
        const std::atomic<bool> set{true};
        for (const StopToken& stop : {StopToken(&set), StopToken(nullptr, StopToken::Clock::now())}) {
            const RowCount rc = minimum_rows(t, 1000, 2, 0, kMaxRowNodes, 1, stop);
            QVERIFY(rc.stopped);
            QCOMPARE(rc.nodes, std::int64_t{0});
            QCOMPARE(rc.rows, base.rows.rows);
            QCOMPARE(rc.how, std::string("R* = 9 best-known (not certified): lower bound 8, exact search at R = 8 was "
                                         "stopped (cancelled or out of time) after 0 of 1000000000 nodes; layout by "
                                         "FixedRowFFD"));
        }
    }

    void timeLimit() {
        PlanInput in = synth_input(8, 7);
        in.budgets.time_limit_s = 1e-9;
        in.budgets.annealing.steps = 100000;
        const PlanResult r = plan_window(in);
        QVERIFY(r.time_limit_hit);
        QVERIFY(!r.cancelled);
        const auto j = nlohmann::json::parse(plan_to_json(r));
        QCOMPARE(j["planner"]["time_limit_hit"].get<bool>(), true);
        // The plan file reads it back (absent: false), and a non-boolean is refused naming the field.
        QVERIFY(parse_plan(plan_to_json(r), "p.json").time_limit_hit);
        auto absent = j;
        absent["planner"].erase("time_limit_hit");
        QVERIFY(!parse_plan(absent.dump(), "p.json").time_limit_hit);
        auto bad = j;
        bad["planner"]["time_limit_hit"] = 1;
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { parse_plan(bad.dump(), "p.json"); })),
            QStringLiteral("p.json: planner.time_limit_hit is 1, not true or false"));
    }

    /// window_fingerprint against an independent implementation of its documented algorithm (Python:
    /// FNV-1a 64 over the int64 lengths, chunks of 65,536 counts with four multiply-xorshift lanes,
    /// folded with splitmix64): two chunks, a tail that is not a multiple of 8 counts,
    /// and the same value in arenas of 1 and 2 workers; one changed count changes it.
    void windowFingerprint() {
        Trace w;
        w.samples.resize(2);
        w.samples[0].length = 3;
        w.samples[1].length = 5;
        const std::size_t n = 2 * 40003;
        w.counts.resize(n);
        for (std::size_t k = 0; k < n; ++k)
            w.counts[k] = static_cast<std::uint32_t>(k * 2654435761u) ^ static_cast<std::uint32_t>(k >> 3);
        std::string one, two;
        tbb::task_arena(1).execute([&] { one = window_fingerprint(w); });
        tbb::task_arena(2).execute([&] { two = window_fingerprint(w); });
        QCOMPARE(one, std::string("abe0d60abd787579"));
        QCOMPARE(two, one);
        w.counts[70000] += 1;
        QVERIFY(window_fingerprint(w) != one);
        Trace empty;
        empty.samples.resize(1);
        empty.samples[0].length = 7;
        QCOMPARE(window_fingerprint(empty), std::string("fe793e3ce142343a"));
    }

    /// Anytime mode extends the default run's final pass along the same trajectory (same seed, same
    /// kicks), so once the annealing is done within the limit it is never worse than the default
    /// plan; the polish events report strictly better scores, the last one the plan's.
    void anytimeNeverWorseThanDefault() {
        PlanInput in = synth_input(6, 4);
        in.budgets.polish_evaluations = 3000;
        const PlanResult base = plan_window(in);
        QVERIFY(base.search.polish_kicks > 0);
        in.budgets.time_limit_s = 0.3;
        in.budgets.anytime = true;
        std::vector<Score> polish;
        const PlanResult any = plan_window(in, [&](const PlanEvent& e) {
            if (e.best) polish.push_back(*e.best);
        });
        QCOMPARE(any.search.convergence.size(), base.search.convergence.size()); // annealing finished before the limit
        QVERIFY(any.time_limit_hit);
        QVERIFY(!(base.routepack.metrics.score < any.routepack.metrics.score));
        QVERIFY(any.search.polish_evaluations >= base.search.polish_evaluations);
        QVERIFY(any.search.polish_kicks >= base.search.polish_kicks);
        for (std::size_t k = 1; k < polish.size(); ++k)
            QVERIFY(polish[k] < polish[k - 1]);
        QVERIFY(!polish.empty());
        QVERIFY(any.routepack.metrics.score == polish.back());
        // Anytime needs a time limit.
        in.budgets.time_limit_s = 0;
        QCOMPARE(plan_error(in), QStringLiteral("planner: budget 'anytime' must be used with a time limit > 0 (got "
                                                "time limit 0)"));
        const auto j = nlohmann::json::parse(plan_to_json(any));
        QCOMPARE(j["planner"]["budgets"]["anytime"].get<bool>(), true);
        QCOMPARE(j["planner"]["polish"]["kicks"].get<int>(), any.search.polish_kicks);
    }

    /// Anytime with rounds: no final search when its budget is 0, and without kicks the rounds stop
    /// once one neither improves nor refines (a deterministic descent would only repeat itself), so
    /// neither runs to the limit.
    void anytimeRoundsStop() {
        PlanInput in = synth_input(6, 4);
        in.budgets.time_limit_s = 60;
        in.budgets.anytime = true;
        in.budgets.polish_evaluations = 0;
        const PlanResult none = plan_window(in);
        QCOMPARE(none.search.polish_evaluations, std::int64_t{0});
        QVERIFY(!none.time_limit_hit);
        in.budgets.polish_evaluations = 3000;
        in.budgets.polish_kick_moves = 0;
        const PlanResult descent = plan_window(in);
        QVERIFY(!descent.time_limit_hit);
        QCOMPARE(descent.search.polish_kicks, 0);
        QVERIFY(descent.search.polish_evaluations > 0);
    }

    /// A problem whose refinement would exceed the size limit keeps the LPT placement and says so:
    /// 8 MoE layers x 256 experts, R = 10 rows x 2 shards: 8 * 256 * 255 / 2 * 20 = 5,222,400 > 5e6.
    void refinementSkippedForSize() {
        Trace w;
        w.model.num_hidden_layers = 8;
        w.model.experts = 256;
        w.model.top_k = 1;
        for (int l = 0; l < 8; ++l)
            w.model.moe_layers.push_back(l);
        Rng rng(5);
        for (int i = 0; i < 40; ++i) {
            SampleRecord rec;
            rec.info.id = std::to_string(i);
            rec.info.length = 100;
            rec.counts.assign(static_cast<std::size_t>(8) * 256, 0);
            for (int l = 0; l < 8; ++l)
                for (int t = 0; t < 100; ++t)
                    ++rec.counts[static_cast<std::size_t>(l) * 256 + rng.below(256)];
            w.append(std::move(rec));
        }
        PlanInput in;
        in.window = w;
        in.topology = topo(8, 4, {{0, 1}, {2, 3}}, 100);
        in.budgets.polish_evaluations = 500;
        const PlanResult r = plan_window(in);
        QCOMPARE(r.rows.rows, 10);
        QVERIFY(r.placement.refinement_skipped);
        QCOMPARE(r.placement.routepack, r.placement.lpt);
        QCOMPARE(r.routepack.placement, PlacementKind::Lpt);
        const auto j = nlohmann::json::parse(plan_to_json(r));
        QCOMPARE(j["planner"]["placement_refinement"].dump(),
                 std::string(R"({"refined":false,"rounds_kept":0,"skipped":true,"swaps":0})"));
        // The same window at 5 rows fits the limit (2,611,200) and is not skipped.
        in.topology = topo(8, 4, {{0, 1}, {2, 3}}, 200);
        const PlanResult fits = plan_window(in);
        QCOMPARE(fits.rows.rows, 5);
        QVERIFY(!fits.placement.refinement_skipped);
    }

    void methodTable() {
        // Every key round-trips, in report order, with its label; other text names no method.
        const std::vector<std::string> keys = {"baseline",  "reorder", "karmarkar_karp",
                                               "routepack", "grouter", "routepack+comm"};
        const std::vector<std::string> labels = {"Baseline",  "Reorder", "Karmarkar-Karp",
                                                 "RoutePack", "Grouter", "RoutePack+comm"};
        QCOMPARE(kMethodCount, 6);
        QCOMPARE(kPaperMethodCount, 4);
        for (int i = 0; i < kMethodCount; ++i) {
            const Method m = method_at(i);
            QCOMPARE(method_index(m), i);
            QCOMPARE(std::string(method_key(m)), keys[static_cast<std::size_t>(i)]);
            QCOMPARE(std::string(method_label(m)), labels[static_cast<std::size_t>(i)]);
            QVERIFY(method_from_key(keys[static_cast<std::size_t>(i)]) == m);
            QCOMPARE(is_comm_method(m), i >= kPaperMethodCount);
        }
        QCOMPARE(method_index(Method::RoutePack), 3);
        for (const char* other : {"karmarkar-karp", "RoutePack", "", "routepack "})
            QVERIFY(!method_from_key(other));
        QCOMPARE(test::error_of<std::out_of_range>([] { (void)method_at(6); }),
                 std::string("method index 6 outside 0..5"));
        QCOMPARE(test::error_of<std::out_of_range>([] { (void)method_at(-1); }),
                 std::string("method index -1 outside 0..5"));
        const std::vector<std::pair<PlacementKind, std::string>> kinds = {{PlacementKind::Identity, "identity"},
                                                                          {PlacementKind::Lpt, "lpt"},
                                                                          {PlacementKind::Refined, "refined"},
                                                                          {PlacementKind::Grouter, "grouter"},
                                                                          {PlacementKind::Comm, "comm"}};
        for (const auto& [kind, key] : kinds)
            QCOMPARE(std::string(placement_key(kind)), key);
        // A plan names its methods by the table, in report order, and the plan file's metrics use the keys.
        const PlanResult r = plan_window(synth_input(8, 11));
        std::vector<std::string> got;
        for (const MethodResult* m : r.methods()) {
            got.emplace_back(m->key());
            QCOMPARE(r.method(m->method), m);
        }
        QCOMPARE(got, std::vector<std::string>(keys.begin(), keys.begin() + 4));
        QVERIFY(r.method(Method::Grouter) == nullptr && r.method(Method::RoutePackComm) == nullptr);
        QCOMPARE(r.baseline.placement, PlacementKind::Identity);
        QCOMPARE(r.reorder.placement, PlacementKind::Lpt);
        QCOMPARE(r.karmarkar_karp.placement, PlacementKind::Lpt);
        const auto j = nlohmann::json::parse(plan_to_json(r));
        for (const std::string& key : std::vector<std::string>(keys.begin(), keys.begin() + 4))
            QVERIFY(j["metrics"].contains(key));
        QCOMPARE(j["metrics"].size(), std::size_t{4});
        QCOMPARE(j["metrics"]["baseline"]["placement"].get<std::string>(), std::string("identity"));
    }

    void placementRefinedHand() {
        // One layer, 4 experts on 2 EP ranks (H = 2): LPT puts experts 0, 2 on rank 0 and 1, 3 on rank 1.
        PlanResult r;
        r.placement.identity = identity_placement(1, 4, 2);
        r.placement.lpt = Placement{1, 4, 2, {0, 2, 1, 3}};
        r.placement.routepack = r.placement.lpt;
        QVERIFY(!r.placement_refined());
        QCOMPARE(&r.placement_of(PlacementKind::Lpt), &r.placement.lpt);
        QCOMPARE(&r.placement_of(PlacementKind::Refined), &r.placement.routepack);
        QCOMPARE(&r.placement_of(PlacementKind::Identity), &r.placement.identity);
        QCOMPARE(&r.placement_of(PlacementKind::Grouter), &r.comm.grouter_placement);
        QCOMPARE(&r.placement_of(PlacementKind::Comm), &r.comm.comm_placement);
        // Swapping experts 1 and 2 between the ranks refines it; exchanging the slots of experts 0 and 2
        // on rank 0 does too (a different placement, though every rank holds the same experts).
        r.placement.routepack = Placement{1, 4, 2, {0, 1, 2, 3}};
        QVERIFY(r.placement_refined());
        r.placement.routepack = Placement{1, 4, 2, {1, 2, 0, 3}};
        QVERIFY(r.placement_refined());
        r.placement.routepack = r.placement.lpt;
        QVERIFY(!r.placement_refined());
    }

    void stagesFollowTheStageTable() {
        // plan_window opens its stages in kPlanStages order with the table's names and fractions, times
        // each under its name, and ends with kPlanDone at 1 (one node: no communication stage).
        const PlanInput in = synth_input(2, 3);
        std::vector<std::pair<std::string, double>> opened;
        const PlanResult r = plan_window(in, [&](const PlanEvent& e) {
            if (!e.level && !e.best && (opened.empty() || opened.back().first != e.stage))
                opened.emplace_back(e.stage, e.fraction);
        });
        std::vector<std::pair<std::string, double>> expected;
        for (const PlanStageRow& row : kPlanStages)
            if (row.stage != PlanStage::Communication) {
                expected.emplace_back(row.name, row.progress);
                QVERIFY2(r.timings.count(row.name), row.name);
            }
        expected.emplace_back(kPlanDone, 1.0);
        QCOMPARE(opened, expected);
        QVERIFY(!r.timings.count("communication"));
        for (int s = 0; s < kPlanStageCount; ++s) {
            QCOMPARE(static_cast<int>(kPlanStages[static_cast<std::size_t>(s)].stage), s);
            QCOMPARE(plan_stage_from_name(kPlanStages[static_cast<std::size_t>(s)].name),
                     std::optional(kPlanStages[static_cast<std::size_t>(s)].stage));
        }
        QCOMPARE(plan_stage_from_name("bound"), std::optional<PlanStage>());
    }

    void planFileOfMatchesItsText() {
        // plan_file_of(r) holds exactly what parse_plan reads back from plan_to_json(r): a plain plan,
        // one without placement refinement, and one cancelled before the search; and the file read
        // back writes the same text, byte for byte (one writer for made and read plans).
        PlanInput in = synth_input(8, 11);
        const PlanResult r = plan_window(in);
        const std::string text = plan_to_json(r);
        QCOMPARE(test::plan_file_difference(plan_file_of(r), parse_plan(text, "p.json")), std::string());
        QCOMPARE(plan_file_to_json(parse_plan(text, "p.json")), text);
        QVERIFY(!parse_plan(text, "p.json").timings.empty());
        QCOMPARE(parse_plan(text, "p.json").search.convergence.size(), r.search.convergence.size());
        in.budgets.placement_rounds = 0;
        const PlanResult plain = plan_window(in);
        QCOMPARE(test::plan_file_difference(plan_file_of(plain), parse_plan(plan_to_json(plain), "p.json")),
                 std::string());
        const std::atomic<bool> stop{true};
        const PlanResult cancelled = plan_window(in, {}, &stop);
        QVERIFY(cancelled.cancelled);
        QCOMPARE(test::plan_file_difference(plan_file_of(cancelled), parse_plan(plan_to_json(cancelled), "p.json")),
                 std::string());
        QVERIFY(parse_plan(plan_to_json(cancelled), "p.json").cancelled);
        QCOMPARE(plan_file_to_json(parse_plan(plan_to_json(cancelled), "p.json")), plan_to_json(cancelled));
        // The difference helper sees a changed field.
        PlanFile other = plan_file_of(r);
        other.metrics[Method::Reorder].value().metrics.joint += 1;
        QCOMPARE(test::plan_file_difference(other, plan_file_of(r)), std::string("metrics.reorder"));
    }

    void planFileRoundTrip() {
        const PlanInput in = synth_input(8, 11);
        const PlanResult r = plan_window(in);
        const std::string text = plan_to_json(r);
        const PlanFile f = parse_plan(text, "p.json");
        QCOMPARE(f.score, r.routepack.metrics.score);
        QCOMPARE(f.layout, r.routepack.layout);
        QCOMPARE(f.placement, r.placement.routepack);
        QCOMPARE(f.row_count, r.rows.rows);
        QCOMPARE(rescore_plan(f, in.window), std::string());
        // Schema fields the training job relies on.
        const auto j = nlohmann::json::parse(text);
        QCOMPARE(j["format"].get<std::string>(), std::string("routepack-plan"));
        QCOMPARE(j["version"].get<int>(), 10);
        QVERIFY(j["communication"].is_null()); // one node: no communication section
        QCOMPARE(j["planner"]["budgets"]["placement_rounds"].get<int>(), 2);
        QCOMPARE(j["planner"]["placement_refinement"]["refined"].get<bool>(), r.placement_refined());
        QCOMPARE(j["planner"]["placement_refinement"]["swaps"].get<std::int64_t>(), r.placement.swaps);
        QCOMPARE(j["planner"]["placement_refinement"]["rounds_kept"].get<int>(), r.placement.rounds_kept);
        QCOMPARE(j["topology"]["row_multiple"].get<int>(), 1);
        QCOMPARE(j["inputs"]["fingerprint"].get<std::string>(), window_fingerprint(in.window));
        // The lower bound: recomputed from the window (core/plan/score/bound.h) and below the plan's max_g U.
        const PackingProblem pl = make_packing_problem(in.window, in.topology, r.placement.routepack);
        const MaxULowerBound want = max_u_lower_bound(pl);
        QCOMPARE(j["max_u_lower_bound"]["value"].get<double>(), want.value);
        QCOMPARE(j["max_u_lower_bound"]["mean"].get<double>(), want.mean);
        QCOMPARE(j["max_u_lower_bound"]["sample"].get<double>(), want.sample);
        QCOMPARE(j["max_u_lower_bound"]["gap"].get<double>(), r.routepack.metrics.score.max_u / want.value - 1.0);
        QVERIFY(want.value > 0 && want.value <= r.routepack.metrics.score.max_u);
        QCOMPARE(f.version, 10);
        QVERIFY(f.has_bound);
        QCOMPARE(f.bound.value, want.value);
        checkOlderPlanVersionsAndBound(in, r, j, f);
        if (QTest::currentTestFailed()) return;
        checkPlacementRefinementAndCommunication(in, r, j, f, want);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(j["placement"].size(), std::size_t(in.window.model.num_moe_layers()));
        QCOMPARE(j["moe_layers"][0].get<int>(), in.window.model.moe_layers[0]);
        for (const char* k : {"baseline", "reorder", "karmarkar_karp", "routepack"})
            QVERIFY(j["metrics"].contains(k));

        checkTamperedPlanFilesAreRefused(in, j, f);
    }

    void rowMultiple() {
        // The synthetic window (64 samples, D = 4): its plain R*, then row_multiple 3 and 4 give the
        // smallest multiples >= it, certified, with exactly that many rows of 4 non-empty cells, the
        // same plan for 1 and 2 workers, and a plan file that records and checks the multiple.
        PlanInput in = synth_input(8, 11);
        const PlanResult plain = plan_window(in);
        QVERIFY(plain.rows.certified);
        for (int m : {3, 4}) {
            in.topology.row_multiple = m;
            in.budgets.workers = 1;
            const PlanResult r = plan_window(in);
            const int want = (plain.rows.rows + m - 1) / m * m;
            QCOMPARE(r.rows.rows, want);
            QVERIFY(r.rows.certified);
            QCOMPARE(r.rows.lower_bound, want);
            for (const MethodResult* x : {&r.baseline, &r.reorder, &r.karmarkar_karp, &r.routepack}) {
                QCOMPARE(x->layout.rows, want);
                QCOMPARE(x->metrics.empty_cells, 0);
                QCOMPARE(x->metrics.cap_violations, 0);
            }
            in.budgets.workers = 2;
            const PlanResult r2 = plan_window(in);
            const std::string text = plan_to_json(r);
            auto one = nlohmann::json::parse(without_timings(text));
            auto two = nlohmann::json::parse(without_timings(plan_to_json(r2)));
            QCOMPARE(two["planner"]["workers"].get<int>(), 2);
            two["planner"]["workers"] = 1;
            QCOMPARE(two.dump(), one.dump());
            const PlanFile f = parse_plan(text, "p.json");
            QCOMPARE(f.topology.row_multiple, m);
            QCOMPARE(f.row_count, want);
            QCOMPARE(rescore_plan(f, in.window), std::string());
            auto j = nlohmann::json::parse(text);
            QCOMPARE(j["topology"]["row_multiple"].get<int>(), m);
            j["topology"]["row_multiple"] = want + 1;
            QCOMPARE(
                QString::fromStdString(routepack::test::error_of<InputError>([&] { parse_plan(j.dump(), "p.json"); })),
                QStringLiteral("p.json: row_count %1 is not a multiple of topology.row_multiple %2")
                    .arg(want)
                    .arg(want + 1));
        }
        // A multiple beyond n / D = 16 rows is refused by the row count, naming the reason.
        in.topology.row_multiple = 17;
        QCOMPARE(plan_error(in), QStringLiteral("no rectangular layout exists: row_multiple 17 rounds the lower bound "
                                                "%1 up to 17 rows of 4 = 68 non-empty cells, but there are only 64 "
                                                "samples")
                                     .arg(plain.rows.lower_bound));
    }

    void expertMaps() {
        // Model: 4 decoder layers, MoE layers 1 and 3, E = 4, P = 2. Layer-1 placement is a 3-cycle plus a
        // fixed point (not its own inverse): pi(0)=1, pi(1)=2, pi(2)=0, pi(3)=3 -> p2l = [2, 0, 1, 3].
        ModelDescription m;
        m.num_hidden_layers = 4;
        m.experts = 4;
        m.top_k = 2;
        m.moe_layers = {1, 3};
        Placement pi;
        pi.layers = 2;
        pi.experts = 4;
        pi.ep_ranks = 2;
        pi.slot = {1, 2, 0, 3, /* layer 3: */ 3, 2, 1, 0};
        const auto v = nlohmann::json::parse(expert_map_json(pi, m, ExpertMapFormat::VLLM));
        QCOMPARE(v["physical_to_logical_map"].dump(), std::string("[[2,0,1,3],[3,2,1,0]]"));
        const auto s = nlohmann::json::parse(expert_map_json(pi, m, ExpertMapFormat::SGLang));
        // Rows = absolute decoder layers; dense layers 0 and 2 get the trivial map.
        QCOMPARE(s["physical_to_logical_map"].dump(), std::string("[[0,1,2,3],[2,0,1,3],[0,1,2,3],[3,2,1,0]]"));
        const auto r = nlohmann::json::parse(expert_map_json(pi, m, ExpertMapFormat::RoutePack));
        QCOMPARE(r["placement"][0].dump(), std::string("[1,2,0,3]"));
        QCOMPARE(r["moe_layers"].dump(), std::string("[1,3]"));
        QCOMPARE(r["slots_per_rank"].get<int>(), 2);
        pi.slot[1] = 1; // slot 1 used twice
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expert_map_json(pi, m, ExpertMapFormat::VLLM));
        try {
            parse_expert_map_format("deepep");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()),
                     QStringLiteral("unknown expert-map format 'deepep' (valid: routepack, sglang, vllm)"));
        }
    }

    void realWindows_data() {
        QTest::addColumn<QString>("set");
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("samples");
        QTest::addColumn<int>("P");
        QTest::addColumn<int>("D");
        QTest::addColumn<int>("cap");
        QTest::newRow("deepseek csv 512, ep8 dp4") << "traces/deepseek-v2-lite"
                                                   << "deepseek-v2-lite" << 512 << 8 << 4 << 4096;
        QTest::newRow("deepseek csv 512, ep16 dp8") << "traces/deepseek-v2-lite"
                                                    << "deepseek-v2-lite" << 512 << 16 << 8 << 4096;
        QTest::newRow("maverick json all, ep8 dp4") << "traces/llama4-maverick"
                                                    << "llama4-maverick" << 235 << 8 << 4 << 2048;
    }
    void realWindows() {
        QFETCH(QString, set);
        QFETCH(QString, model);
        QFETCH(int, samples);
        QFETCH(int, P);
        QFETCH(int, D);
        QFETCH(int, cap);
        ROUTEPACK_REQUIRE_SHARED(dir, set.toStdString());
        ImportOptions opt;
        opt.model = known_model(model.toStdString());
        Trace all = import_trace_to_memory({dir}, opt);
        // The first `samples` in numeric-aware id order.
        std::vector<std::size_t> order(all.size());
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return natural_less(all.samples[a].id, all.samples[b].id); });
        PlanInput in;
        in.window.model = all.model;
        for (int k = 0; k < samples; ++k) {
            SampleRecord rec;
            rec.info = all.samples[order[static_cast<std::size_t>(k)]];
            const auto c = all.sample_counts(order[static_cast<std::size_t>(k)]);
            rec.counts.assign(c.begin(), c.end());
            in.window.append(std::move(rec));
        }
        std::vector<std::vector<int>> shards(2);
        for (int d = 0; d < D; ++d)
            shards[static_cast<std::size_t>(d * 2 / D)].push_back(d);
        in.topology = topo(P, D, shards, cap);
        in.trace_name = set.toStdString();
        const PlanResult r = plan_window(in);
        QVERIFY(r.rows.certified);
        QVERIFY(r.placement.cv_lpt < r.placement.cv_identity);
        // At default budgets RoutePack beats both reorder and karmarkar-karp on the joint score.
        QVERIFY2(r.routepack.metrics.score < r.reorder.metrics.score, "routepack must beat reorder");
        QVERIFY2(r.routepack.metrics.score < r.karmarkar_karp.metrics.score, "routepack must beat karmarkar-karp");
        const PlanFile f = parse_plan(plan_to_json(r), "real.json");
        QCOMPARE(rescore_plan(f, in.window), std::string());
        // The final pass refined the LPT placement for routepack's layout on every real window: the
        // plan's placement is the refined one, every rank keeps H slots, routepack's score and bound
        // are those at it, and a saved plan restores it (reorder and karmarkar-karp stay on LPT).
        QCOMPARE(r.routepack.placement, PlacementKind::Refined);
        QVERIFY(r.placement_refined());
        QVERIFY(r.placement.swaps > 0 && r.placement.rounds_kept > 0);
        QCOMPARE(r.reorder.placement, PlacementKind::Lpt);
        const PackingProblem at = make_packing_problem(in.window, in.topology, r.placement.routepack);
        QCOMPARE(score_layout(r.routepack.layout, at), r.routepack.metrics.score);
        QCOMPARE(max_u_lower_bound(at).value, r.bound.value);
        QVERIFY(r.bound.value <= r.routepack.metrics.score.max_u);
        QCOMPARE(f.placement, r.placement.routepack);
        const PlanResult back = restore_plan(f, in.window, "real.json");
        QCOMPARE(back.routepack.placement, PlacementKind::Refined);
        QCOMPARE(back.placement.lpt, r.placement.lpt);
        QCOMPARE(back.placement.cv_routepack, r.placement.cv_routepack);
        QCOMPARE(back.bound.value, r.bound.value);
        QCOMPARE(back.placement.swaps, r.placement.swaps);
        QCOMPARE(back.placement.rounds_kept, r.placement.rounds_kept);
        // placement_rounds 0: routepack keeps the LPT placement.
        in.budgets.placement_rounds = 0;
        const PlanResult plain = plan_window(in);
        QCOMPARE(plain.placement.routepack, plain.placement.lpt);
        QCOMPARE(plain.routepack.placement, PlacementKind::Lpt);
        QCOMPARE(plain.placement.swaps, std::int64_t{0});
    }

private:
    /// planFileRoundTrip: older plan versions still read; a wrong lower bound or an unknown version is refused.
    static void checkOlderPlanVersionsAndBound(const PlanInput& in, const PlanResult& r, const nlohmann::json& j,
                                               const PlanFile& f) {
        // A version 1 file (no bound) still reads; a bound above the score or a wrong gap does not.
        // Versions 1 and 2 carry the FNV-1a fingerprint and are rescored with it.
        auto v1 = j;
        v1["version"] = 1;
        v1.erase("max_u_lower_bound");
        v1["inputs"]["fingerprint"] = window_fingerprint_fnv(in.window);
        const PlanFile old = parse_plan(v1.dump(), "p.json");
        QVERIFY(!old.has_bound);
        QCOMPARE(rescore_plan(old, in.window), std::string());
        auto v2 = j;
        v2["version"] = 2;
        v2["inputs"]["fingerprint"] = window_fingerprint_fnv(in.window);
        QCOMPARE(rescore_plan(parse_plan(v2.dump(), "p.json"), in.window), std::string());
        v2["inputs"]["fingerprint"] = window_fingerprint(in.window); // a version 3 hash in a version 2 file
        QCOMPARE(QString::fromStdString(rescore_plan(parse_plan(v2.dump(), "p.json"), in.window)),
                 QStringLiteral("routing counts differ from the plan's inputs (fingerprint %1 != %2)")
                     .arg(QString::fromStdString(window_fingerprint_fnv(in.window)),
                          QString::fromStdString(window_fingerprint(in.window))));
        auto high = j;
        high["max_u_lower_bound"]["value"] = r.routepack.metrics.score.max_u * 2;
        QVERIFY(QString::fromStdString(routepack::test::error_of<InputError>([&] {
                    parse_plan(high.dump(), "p.json");
                })).startsWith(QStringLiteral("p.json: max_u_lower_bound: value ")));
        auto gap = j;
        gap["max_u_lower_bound"]["gap"] = 0.5;
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { parse_plan(gap.dump(), "p.json"); })),
            QStringLiteral("p.json: max_u_lower_bound: gap 0.5 differs from score[0] / value - 1"));
        auto missing = j;
        missing.erase("max_u_lower_bound");
        QCOMPARE(QString::fromStdString(
                     routepack::test::error_of<InputError>([&] { parse_plan(missing.dump(), "p.json"); })),
                 QStringLiteral("p.json: max_u_lower_bound is missing"));
        // A version 3 file has no row_multiple: read as 1.
        auto v3 = j;
        v3["version"] = 3;
        v3["topology"].erase("row_multiple");
        const PlanFile three = parse_plan(v3.dump(), "p.json");
        QCOMPARE(three.version, 3);
        QCOMPARE(three.topology.row_multiple, 1);
        QCOMPARE(three.layout, f.layout);
        QCOMPARE(rescore_plan(three, in.window), std::string());
        auto v9 = j;
        v9["version"] = 11;
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { parse_plan(v9.dump(), "p.json"); })),
            QStringLiteral("p.json: plan version 11 is not supported (expected 1 to 10)"));
        v9["version"] = 0;
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { parse_plan(v9.dump(), "p.json"); })),
            QStringLiteral("p.json: plan version 0 is not supported (expected 1 to 10)"));
    }

    /// planFileRoundTrip: the placement_refinement and communication sections, and a lower bound the
    /// rescoring does not recompute.
    static void checkPlacementRefinementAndCommunication(const PlanInput& in, const PlanResult& r,
                                                         const nlohmann::json& j, const PlanFile& f,
                                                         const MaxULowerBound& want) {
        // Version 6's placement_refinement: present, typed, consistent, and (rescored) telling the
        // truth about whether the placement is the window's LPT placement.
        auto pr = j;
        pr["planner"].erase("placement_refinement");
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { parse_plan(pr.dump(), "p.json"); })),
            QStringLiteral("p.json: planner.placement_refinement is missing"));
        pr = j;
        pr["planner"]["placement_refinement"]["refined"] = "yes";
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { parse_plan(pr.dump(), "p.json"); })),
            QStringLiteral("p.json: planner.placement_refinement.refined is \"yes\", not true or false"));
        pr = j;
        pr["planner"]["placement_refinement"] = {
            {"refined", true}, {"rounds_kept", 0}, {"swaps", 3}, {"skipped", false}};
        QCOMPARE(
            QString::fromStdString(routepack::test::error_of<InputError>([&] { parse_plan(pr.dump(), "p.json"); })),
            QStringLiteral("p.json: planner.placement_refinement: refined true, rounds_kept 0, swaps 3 and "
                           "skipped false disagree"));
        pr["planner"]["placement_refinement"]["swaps"] = -1;
        QVERIFY(QString::fromStdString(routepack::test::error_of<InputError>([&] {
                    parse_plan(pr.dump(), "p.json");
                })).startsWith(QStringLiteral("p.json: planner.placement_refinement")));
        const bool refined = r.placement_refined();
        pr = j;
        pr["planner"]["placement_refinement"] = {
            {"refined", !refined}, {"rounds_kept", refined ? 0 : 1}, {"swaps", refined ? 0 : 1}, {"skipped", false}};
        QCOMPARE(QString::fromStdString(rescore_plan(parse_plan(pr.dump(), "p.json"), in.window)),
                 refined ? QStringLiteral("placement_refinement.refined is false but the placement is not the "
                                          "window's LPT placement")
                         : QStringLiteral("placement_refinement.refined is true but the placement is the window's "
                                          "LPT placement"));
        // Version 4 has no communication section; version 5 must have one.
        auto four = j;
        four["version"] = 4;
        four.erase("communication");
        QCOMPARE(parse_plan(four.dump(), "p.json").layout, f.layout);
        auto no_comm = j;
        no_comm.erase("communication");
        QCOMPARE(QString::fromStdString(
                     routepack::test::error_of<InputError>([&] { parse_plan(no_comm.dump(), "p.json"); })),
                 QStringLiteral("p.json: communication is missing"));
        auto comm_on_one_node = j;
        comm_on_one_node["communication"] = {{"nodes", 1}};
        QCOMPARE(QString::fromStdString(
                     routepack::test::error_of<InputError>([&] { parse_plan(comm_on_one_node.dump(), "p.json"); })),
                 QStringLiteral("p.json: communication must be null: the topology has one node"));
        auto lower = j;
        lower["max_u_lower_bound"]["value"] = want.value / 2;
        lower["max_u_lower_bound"]["gap"] = r.routepack.metrics.score.max_u / (want.value / 2) - 1.0;
        QVERIFY(QString::fromStdString(rescore_plan(parse_plan(lower.dump(), "p.json"), in.window))
                    .startsWith(QStringLiteral("recomputed max_u_lower_bound differs")));
    }

    /// planFileRoundTrip: tampered files, numbers that do not fit and a foreign format are refused.
    static void checkTamperedPlanFilesAreRefused(const PlanInput& in, const nlohmann::json& j, const PlanFile& f) {
        // Tampering is caught: structure (sample twice) and rescoring (counts changed).
        auto bad = j;
        bad["rows"][0][1][0] = bad["rows"][0][0][0]; // one sample twice, another missing
        try {
            parse_plan(bad.dump(), "p.json");
            QFAIL("no error");
        } catch (const InputError& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(QStringLiteral("appears twice")), e.what());
        }
        auto swapped = j;
        std::swap(swapped["placement"][0][0], swapped["placement"][0][1]);
        const PlanFile g = parse_plan(swapped.dump(), "p.json");
        QVERIFY(!rescore_plan(g, in.window).empty());
        Trace other = in.window;
        other.counts[0] += 1;
        QVERIFY(QString::fromStdString(rescore_plan(f, other)).contains(QStringLiteral("fingerprint")));
        // Numbers that do not fit are refused, never wrapped or truncated (2^32 + 16 is not 16, 1.7 is not 1).
        const std::pair<std::function<void(nlohmann::json&)>, QString> wraps[] = {
            {[](nlohmann::json& x) { x["model"]["experts"] = (1LL << 32) + 16; },
             QStringLiteral("p.json: model.experts is 4294967312, not an integer in 0..2147483647")},
            {[](nlohmann::json& x) { x["model"]["num_hidden_layers"] = (1LL << 32) + 3; },
             QStringLiteral("p.json: model.num_hidden_layers is 4294967299, not an integer in 0..2147483647")},
            {[](nlohmann::json& x) { x["moe_layers"][0] = 1.7; },
             QStringLiteral("p.json: moe_layers[0] is 1.7, not an integer in 0..2147483647")},
            {[](nlohmann::json& x) { x["moe_layers"][1] = (1LL << 32) + 2; },
             QStringLiteral("p.json: moe_layers[1] is 4294967298, not an integer in 0..2147483647")},
            {[](nlohmann::json& x) { x["moe_layers"][0] = "1"; },
             QStringLiteral("p.json: moe_layers[0] is \"1\", not an integer in 0..2147483647")},
            {[](nlohmann::json& x) { x["planner"]["seed"] = -1; },
             QStringLiteral("p.json: planner.seed is -1, not an integer in 0..18446744073709551615")},
            {[](nlohmann::json& x) { x["planner"]["proposals"] = -3; },
             QStringLiteral("p.json: planner.proposals is -3, not an integer in 0..9223372036854775807")},
            {[](nlohmann::json& x) { x["planner"]["convergence"][0]["acceptance"] = "high"; },
             QStringLiteral("p.json: planner.convergence[0].acceptance is \"high\", not a finite number")},
            {[](nlohmann::json& x) { x["metrics"]["routepack"]["placement"] = "bogus"; },
             QStringLiteral("p.json: metrics.routepack.placement is 'bogus', not identity, lpt, refined, grouter or "
                            "comm")},
            {[](nlohmann::json& x) { x["timings"]["total"] = -1; },
             QStringLiteral("p.json: timings.total is -1, not seconds >= 0")},
        };
        for (const auto& [edit, want] : wraps) {
            auto w = j;
            edit(w);
            try {
                parse_plan(w.dump(), "p.json");
                QFAIL(qPrintable(QStringLiteral("no error, expected ") + want));
            } catch (const InputError& e) {
                QCOMPARE(QString::fromStdString(e.what()), want);
            }
        }
        try {
            parse_plan(R"({"format": "something-else"})", "x.json");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()),
                     QStringLiteral("x.json: not a RoutePack plan (format must be \"routepack-plan\")"));
        }
    }
};

QTEST_GUILESS_MAIN(TestPlanner)
#include "tst_planner.moc"
