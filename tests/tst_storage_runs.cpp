// Topologies and planner runs in a library (storage/library.h, schema migration 2) on a real SQLite
// file in a temporary folder: round trips of every stored value, the topology naming rule, failed
// and cancelled runs, read-only refusals, and the embedded demo (storage/demo.h); measured steps
// (schema migration 6): a layout's pieces by hand, the measured file written and read back, a
// profiler trace's ranges, and an import linked to the saved run whose layouts it measured.
#include "core/plan/budgets.h"
#include "core/plan/measured.h"
#include "core/plan/plan_file.h"
#include "core/plan/profiler_trace.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "storage/demo.h"
#include "storage/library.h"
#include "tests/testutil.h"

#include <QtTest>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include <algorithm>

using namespace routepack;
using namespace routepack::storage;
namespace fs = std::filesystem;

using routepack::test::error_of;

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

/// A library with a 16-sample synthetic trace "syn" and window "w" (all samples).
fs::path make_library(const QString& tag) {
    const auto tmp = test::temp_dir(tag);
    SynthConfig c;
    c.groups = 4;
    c.group_size = 4;
    write_synth(c, TraceFormat::VLLM, tmp / "syn");
    auto lib = Library::open(tmp / "lib.routepack");
    ImportOptions o;
    o.model = synth_model(c);
    lib->import_trace("syn", {tmp / "syn"}, o);
    std::vector<std::string> ids;
    for (const auto& s : lib->samples("syn"))
        ids.push_back(s.id);
    lib->create_window("syn", "w", ids, "all");
    return tmp / "lib.routepack";
}

PlannerBudgets small_budgets() {
    PlannerBudgets b;
    b.annealing.levels = 4;
    b.annealing.steps = 60;
    b.seeding.candidates = 6;
    b.seeding.population = 3;
    b.workers = 1;
    b.seed = 0xFEDCBA9876543210ULL; // above 2^63: must survive SQLite's signed INTEGER
    return b;
}

PlanResult plan_of(const Library& lib, const PlannerBudgets& b, const std::atomic<bool>* cancel = nullptr) {
    PlanInput in;
    in.window = lib.load_window("syn", "w");
    in.trace_name = "syn";
    in.window_name = "w";
    in.topology = known_topology("synthetic-demo-ep8-dp4");
    in.budgets = b;
    return plan_window(in, {}, cancel);
}

void compare_metrics(const LayoutMetrics& a, const LayoutMetrics& b) {
    QCOMPARE(a.score, b.score);
    QCOMPARE(a.cv_global, b.cv_global);
    QCOMPARE(a.ep_peak_sum, b.ep_peak_sum);
    QCOMPARE(a.ep_tail_peak, b.ep_tail_peak);
    QCOMPARE(a.ep_balance_efficiency, b.ep_balance_efficiency);
    QCOMPARE(a.attention_sum, b.attention_sum);
    QCOMPARE(a.joint, b.joint);
    QCOMPARE(a.cap_violations, b.cap_violations);
    QCOMPARE(a.empty_cells, b.empty_cells);
}

/// Three samples (10, 20, 30 tokens) of one MoE layer (id 3) of four experts:
/// s0 {4, 0, 6, 0}, s1 {0, 0, 10, 10}, s2 {0, 0, 6, 24}.
Trace tiny_window() {
    Trace t;
    t.model.experts = 4;
    t.model.top_k = 2;
    t.model.num_hidden_layers = 4;
    t.model.moe_layers = {3};
    const std::int64_t lengths[] = {10, 20, 30};
    for (int i = 0; i < 3; ++i) {
        SampleInfo s;
        s.id = "s" + std::to_string(i);
        s.length = lengths[i];
        t.samples.push_back(s);
    }
    t.counts = {4, 0, 6, 0, 0, 0, 10, 10, 0, 0, 6, 24};
    return t;
}

/// Two EP ranks, two DP slots in two EDP shards, cap 100, one stage (alpha 1.5, beta 4), invocation 3 tokens.
Topology tiny_topology() {
    return parse_topology(R"({"ep_ranks": 2, "dp_slots": 2, "edp_shards": [[0], [1]], "token_cap": 100,
        "attention_stages": [{"name": "attention", "alpha": 1.5, "beta": 4.0}], "expert_invocation_tokens": 3})",
                          "tiny");
}

/// One row: cell 0 holds samples 0 and 1, cell 1 sample 2; the identity placement (rank 0: experts 0, 1).
MeasuredPlan tiny_pieces(const Placement* placement = nullptr) {
    Placement identity{1, 4, 2, {0, 1, 2, 3}};
    return layout_pieces(tiny_window(), Layout::from_cells(1, 2, {{0, 1}, {2}}), placement ? *placement : identity,
                         tiny_topology(), "p");
}

MeasuredStep tiny_step() {
    MeasuredStep m;
    m.trace = "t";
    m.window = "w";
    m.fingerprint = "0123456789abcdef";
    m.samples = 3;
    m.experts = 4;
    m.moe_layers = {3};
    m.topology = tiny_topology();
    m.shapes = "null";
    m.timing = R"({"repeats":1})";
    m.plans = {tiny_pieces()};
    return m;
}
} // namespace

class TestStorageRuns : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void shippedTopologies() {
        const auto names = known_topology_names();
        QVERIFY(names.size() >= 5);
        QVERIFY(std::is_sorted(names.begin(), names.end()));
        for (const char* n : {"deepseek-v2-lite-ep8-dp4", "deepseek-v2-lite-ep16-dp8", "llama4-maverick-ep8-dp4",
                              "llama4-maverick-ep16-dp8", "synthetic-demo-ep8-dp4"})
            QVERIFY2(std::find(names.begin(), names.end(), n) != names.end(), n);
        const Topology t = known_topology("synthetic-demo-ep8-dp4");
        QCOMPARE(t.ep_ranks, 8);
        QCOMPARE(t.dp_slots, 4);
        QCOMPARE(t.token_cap, std::int64_t(8192));
        QCOMPARE(t.attention_stages.size(), std::size_t(2));
        QCOMPARE(t.edp_shards, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
        // load_topology: a file wins, else a shipped name, else an error listing the names.
        const auto tmp = test::temp_dir(QStringLiteral("topo"));
        test::write_file(tmp / "t.json", topology_to_json(t));
        QCOMPARE(load_topology((tmp / "t.json").string()), t);
        QCOMPARE(load_topology("synthetic-demo-ep8-dp4"), t);
        QVERIFY(error_of<InputError>([] {
                    load_topology("nope");
                }).starts_with("nope: no such topology file or shipped topology (known: deepseek-v2-lite-ep16-dp8, "));
        QCOMPARE(q(error_of<InputError>([] { known_topology("nope"); })).left(38),
                 QStringLiteral("unknown topology 'nope' (known: deepse"));
    }

    void budgetsJsonRoundTrip() {
        PlannerBudgets b = small_budgets();
        b.annealing.t0 = 0.0123456789012345;
        b.annealing.cooling = 0.61;
        b.seeding.eta = 0.3;
        b.time_limit_s = 2.5;
        b.row_nodes = 12345;
        const std::string j = planner_budgets_to_json(b);
        const PlannerBudgets r = parse_planner_budgets(j, "b");
        QCOMPARE(planner_budgets_to_json(r), j);
        QCOMPARE(r.seed, b.seed);
        QCOMPARE(r.annealing.t0, b.annealing.t0);
        QCOMPARE(r.seeding.population, 3);
        QCOMPARE(r.row_nodes, std::int64_t(12345));
        QCOMPARE(q(error_of<InputError>([] { parse_planner_budgets(R"({"rho": 1.5})", "b"); })),
                 QStringLiteral("b: rho is 1.5, not a number in [0, 1]"));
        QCOMPARE(q(error_of<InputError>([] { parse_planner_budgets(R"({"levels": "x"})", "b"); })),
                 QStringLiteral("b: levels is \"x\", not an integer in 0..1000"));
        QCOMPARE(q(error_of<InputError>([] { parse_planner_budgets("[", "b"); })),
                 QStringLiteral("b: malformed budgets JSON"));
    }

    void topologyRoundTrip() {
        const auto db = make_library(QStringLiteral("topo-rt"));
        Topology t = known_topology("llama4-maverick-ep8-dp4");
        t.min_rows = 3;
        t.row_multiple = 4; // stored in the definition JSON, no column of its own
        const PlannerBudgets b = small_budgets();
        {
            auto lib = Library::open(db);
            QCOMPARE(lib->topologies().size(), std::size_t(0));
            const TopologyEntry e = lib->save_topology("mav", t, b);
            QVERIFY(e.id > 0);
            QCOMPARE(e.topology, t);
            QVERIFY(e.budgets.has_value());
            lib->save_topology("plain", known_topology("deepseek-v2-lite-ep8-dp4"));
        }
        auto lib = Library::open(db, OpenMode::ReadOnly);
        const auto all = lib->topologies();
        QCOMPARE(all.size(), std::size_t(2));
        QCOMPARE(all[0].name, std::string("mav"));
        QCOMPARE(all[0].topology, t);
        QCOMPARE(planner_budgets_to_json(*all[0].budgets), planner_budgets_to_json(b));
        QCOMPARE(all[1].name, std::string("plain"));
        QVERIFY(!all[1].budgets.has_value());
        QCOMPARE(lib->topology("plain").topology, known_topology("deepseek-v2-lite-ep8-dp4"));
        QVERIFY(error_of<InputError>([&] { lib->topology("x"); }).starts_with("no topology named 'x' in "));
        QVERIFY(error_of<InputError>([&] {
                    lib->save_topology("y", t);
                }).ends_with(": library is read-only (cannot write)"));
        lib.reset();

        // Unused: a saved topology may change; bad ones are refused with the file format's words.
        auto rw = Library::open(db);
        Topology t2 = t;
        t2.token_cap = 4096;
        QCOMPARE(rw->save_topology("mav", t2).topology.token_cap, std::int64_t(4096));
        QVERIFY(!rw->topology("mav").budgets.has_value());
        QCOMPARE(q(error_of<InputError>([&] { rw->save_topology("", t); })),
                 QStringLiteral("topology name must not be empty"));
        Topology bad = t;
        bad.edp_shards = {{0, 1}, {1, 2, 3}};
        QVERIFY(error_of<InputError>([&] { rw->save_topology("bad", bad); }).starts_with("topology 'bad': "));
        QCOMPARE(rw->topologies().size(), std::size_t(2));
    }

    void hostileTopologyDefinition() {
        // A definition edited outside the studio: an unknown field is named; one nested too deep for
        // the JSON printer (a stack overflow at ~65,000 levels) is refused before it is printed.
        const auto db = make_library(QStringLiteral("topo-hostile"));
        Library::open(db)->save_topology("t", known_topology("deepseek-v2-lite-ep8-dp4"), small_budgets());
        const std::string base = topology_to_json(known_topology("deepseek-v2-lite-ep8-dp4"));
        auto set_definition = [&](const std::string& extra) {
            sqlite3* h = nullptr;
            QCOMPARE(sqlite3_open(db.string().c_str(), &h), SQLITE_OK);
            std::string text = base;
            text.insert(text.size() - 1, extra);
            sqlite3_stmt* st = nullptr;
            QCOMPARE(sqlite3_prepare_v2(h, "UPDATE topologies SET definition = ?1", -1, &st, nullptr), SQLITE_OK);
            sqlite3_bind_text(st, 1, text.c_str(), -1, SQLITE_TRANSIENT);
            QCOMPARE(sqlite3_step(st), SQLITE_DONE);
            sqlite3_finalize(st);
            sqlite3_close(h);
        };
        auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
        const std::string where = db.string() + ": topology 't': ";
        set_definition(R"(, "zz": )" + nested(500));
        QCOMPARE(
            error_of<InputError>([&] { Library::open(db, OpenMode::ReadOnly)->topologies(); }),
            where + "unknown field 'zz' (known: ep_ranks, dp_slots, token_cap, experts_per_layer, min_rows, "
                    "row_multiple, gpus_per_node, ep_rank_nodes, dp_slot_nodes, comm_weight, "
                    "comm_load_tolerance, expert_invocation_tokens, edp_shards, attention_stages, samples_per_dp_slot, "
                    "samples_per_cell, max_samples_per_cell, oversize, migration)");
        set_definition(R"(, "zz": )" + nested(200000));
        QCOMPARE(error_of<InputError>([&] { Library::open(db, OpenMode::ReadOnly)->topologies(); }),
                 where + "JSON nested deeper than 512 levels");
    }

    void runRoundTrip() {
        const auto db = make_library(QStringLiteral("run-rt"));
        const PlannerBudgets b = small_budgets();
        PlanResult r;
        std::int64_t id = 0;
        {
            auto lib = Library::open(db);
            r = plan_of(*lib, b);
            QVERIFY(r.search.convergence.size() == 4);
            const RunEntry e = lib->save_run(r, "demo-topo", "2025-01-02T03:04:05Z");
            id = e.id;
            QVERIFY(id > 0);
            QCOMPARE(e.started_at, std::string("2025-01-02T03:04:05Z"));
        }
        auto lib = Library::open(db, OpenMode::ReadOnly); // read back from the file
        const auto runs = lib->runs("syn", "w");
        QCOMPARE(runs.size(), std::size_t(1));
        const RunEntry& e = runs[0];
        QCOMPARE(e.id, id);
        QCOMPARE(e.trace, std::string("syn"));
        QCOMPARE(e.window, std::string("w"));
        QCOMPARE(e.topology, std::string("demo-topo"));
        QCOMPARE(e.topology_value, r.topology);
        QCOMPARE(e.status, std::string("finished"));
        QCOMPARE(e.message, std::string());
        QCOMPARE(e.workers, 1);
        QCOMPARE(planner_budgets_to_json(e.budgets), planner_budgets_to_json(b));
        QCOMPARE(e.budgets.seed, 0xFEDCBA9876543210ULL);
        QVERIFY(e.plan_id > 0);
        QCOMPARE(e.fingerprint, r.fingerprint);
        QCOMPARE(e.rows, r.rows.rows);
        QCOMPARE(e.certified, r.rows.certified);
        QCOMPARE(e.score, r.routepack.metrics.score);
        QCOMPARE(e.timings, r.timings);
        QVERIFY(!e.finished_at.empty());
        QCOMPARE(e.results.size(), std::size_t(4));
        const MethodResult* methods[] = {&r.baseline, &r.reorder, &r.karmarkar_karp, &r.routepack};
        for (std::size_t k = 0; k < 4; ++k) {
            QCOMPARE(e.results[k].method, methods[k]->key());
            QCOMPARE(e.results[k].rows, methods[k]->layout.rows);
            compare_metrics(e.results[k].metrics, methods[k]->metrics);
        }
        QCOMPARE(e.levels.size(), r.search.convergence.size());
        for (std::size_t k = 0; k < e.levels.size(); ++k) {
            const LevelStats &a = e.levels[k], &x = r.search.convergence[k];
            QCOMPARE(a.level, x.level);
            QCOMPARE(a.temperature, x.temperature);
            QCOMPARE(a.best, x.best);
            QCOMPARE(a.mean_energy, x.mean_energy);
            QCOMPARE(a.acceptance, x.acceptance);
            QCOMPARE(a.proposals, x.proposals);
        }
        // The stored plan is the plan file, and it rescores against its window to the same numbers.
        const std::string json = lib->run_plan_json(id);
        QCOMPARE(json, plan_to_json(r));
        const PlanFile f = parse_plan(json, "stored plan");
        QCOMPARE(f.score, r.routepack.metrics.score);
        QCOMPARE(rescore_plan(f, lib->load_window("syn", "w")), std::string());
        QCOMPARE(lib->run(id).id, id);
        QVERIFY(error_of<InputError>([&] { lib->run(999); }).starts_with("no run 999 in "));
        QVERIFY(error_of<InputError>([&] {
                    lib->runs("syn", "nope");
                }).starts_with("trace 'syn' has no window named 'nope' in "));
        QVERIFY(
            error_of<InputError>([&] { lib->save_run(r, "x"); }).ends_with(": library is read-only (cannot write)"));
    }

    void topologyNamingRule() {
        const auto db = make_library(QStringLiteral("run-names"));
        auto lib = Library::open(db);
        const PlanResult r = plan_of(*lib, small_budgets());
        // "t" already holds another topology: the run's topology gets "t (2)".
        lib->save_topology("t", known_topology("deepseek-v2-lite-ep8-dp4"));
        QCOMPARE(lib->save_run(r, "t").topology, std::string("t (2)"));
        // The same topology again, under any name: the existing row is reused.
        QCOMPARE(lib->save_run(r, "other").topology, std::string("t (2)"));
        QCOMPARE(lib->topologies().size(), std::size_t(2));
        // A topology used by runs cannot change; its budgets can.
        Topology changed = r.topology;
        changed.token_cap = 4096;
        QCOMPARE(q(error_of<InputError>([&] { lib->save_topology("t (2)", changed); })),
                 QStringLiteral("topology 't (2)' is used by 2 saved run(s); save the change under another name"));
        QVERIFY(lib->save_topology("t (2)", r.topology, small_budgets()).budgets.has_value());
        QCOMPARE(lib->runs("syn", "w").size(), std::size_t(2));
    }

    void cancelledAndFailedRuns() {
        const auto db = make_library(QStringLiteral("run-cancel"));
        auto lib = Library::open(db);
        std::atomic<bool> cancel{true};
        const PlanResult r = plan_of(*lib, small_budgets(), &cancel);
        QVERIFY(r.cancelled);
        const RunEntry c = lib->save_run(r, "t");
        QCOMPARE(c.status, std::string("cancelled"));
        QCOMPARE(c.message, std::string("cancelled: best valid plan so far"));
        QCOMPARE(c.score, r.routepack.metrics.score);
        QCOMPARE(c.levels.size(), std::size_t(0));

        const RunEntry f = lib->save_failed_run("syn", "w", "t", r.topology, small_budgets(),
                                                "sample 'x' is longer than the cap C = 8192");
        QCOMPARE(f.status, std::string("failed"));
        QCOMPARE(f.message, std::string("sample 'x' is longer than the cap C = 8192"));
        QCOMPARE(f.plan_id, std::int64_t(0));
        QCOMPARE(f.topology, std::string("t"));
        QCOMPARE(f.results.size(), std::size_t(0));
        QCOMPARE(f.score, Score{});
        QVERIFY(error_of<InputError>([&] { lib->run_plan_json(f.id); }).ends_with(" produced no plan"));
        QCOMPARE(lib->runs("syn", "w").size(), std::size_t(2));
        QVERIFY(error_of<InputError>([&] {
                    lib->save_failed_run("syn", "", "t", r.topology, {}, "m");
                }).starts_with("runs are saved per window"));
        // Budgets that runs() would refuse to read back are refused before writing.
        PlannerBudgets bad = small_budgets();
        bad.annealing.cooling = 1.5;
        QCOMPARE(error_of<InputError>([&] { lib->save_failed_run("syn", "w", "t", r.topology, bad, "m"); }),
                 db.string() + ": failed run's budgets: budget 'cooling' must be in (0, 1] (got 1.5)");
        // Nothing of a refused run was written, and the window's runs still read.
        QCOMPARE(lib->runs("syn", "w").size(), std::size_t(2));
    }

    // A run_results.metrics value edited outside the studio (found by fuzz_library_blobs): an
    // integer field holding 1e300 or a negative count is refused by name, never converted.
    void hostileRunMetrics() {
        const auto db = make_library(QStringLiteral("run-metrics"));
        std::int64_t id = 0;
        {
            auto lib = Library::open(db);
            id = lib->save_run(plan_of(*lib, small_budgets()), "t").id;
        }
        auto set_metrics = [&](const std::string& field, const std::string& value) {
            const std::string text = "{\"cv_global\": 0.5, \"ep_peak_sum\": 3, \"ep_tail_peak\": 2, "
                                     "\"ep_balance_efficiency\": 0.9, \"attention_sum\": 1.0, \"joint\": 2.0, "
                                     "\"cap_violations\": 0, \"empty_cells\": 0, \"" +
                                     field + "\": " + value + "}";
            sqlite3* h = nullptr;
            QCOMPARE(sqlite3_open(db.string().c_str(), &h), SQLITE_OK);
            sqlite3_stmt* st = nullptr;
            QCOMPARE(sqlite3_prepare_v2(h, "UPDATE run_results SET metrics = ?1 WHERE method = 'baseline'", -1, &st,
                                        nullptr),
                     SQLITE_OK);
            sqlite3_bind_text(st, 1, text.c_str(), -1, SQLITE_TRANSIENT);
            QCOMPARE(sqlite3_step(st), SQLITE_DONE);
            sqlite3_finalize(st);
            sqlite3_close(h);
        };
        auto run_error = [&] {
            return QString::fromStdString(
                error_of<InputError>([&] { Library::open(db, OpenMode::ReadOnly)->run(id); }));
        };
        const QString where = QString::fromStdString(db.string() + ": run " + std::to_string(id) + " baseline metrics");
        // The last of a repeated key wins in nlohmann's DOM: each line overrides one field.
        set_metrics("cap_violations", "1e300");
        QCOMPARE(run_error(), where + QStringLiteral(": cap_violations is 1e+300, not an integer in 0..2147483647"));
        set_metrics("ep_peak_sum", "1e300");
        QCOMPARE(run_error(),
                 where + QStringLiteral(": ep_peak_sum is 1e+300, not an integer in 0..9223372036854775807"));
        set_metrics("empty_cells", "3000000000");
        QCOMPARE(run_error(), where + QStringLiteral(": empty_cells is 3000000000, not an integer in 0..2147483647"));
        set_metrics("ep_tail_peak", "-2");
        QCOMPARE(run_error(), where + QStringLiteral(": ep_tail_peak is -2, not an integer in 0..9223372036854775807"));
        set_metrics("joint", "\"x\"");
        QCOMPARE(run_error(), where + QStringLiteral(": joint is \"x\", not a finite number"));
        set_metrics("cap_violations", "1");
        QCOMPARE(Library::open(db, OpenMode::ReadOnly)->run(id).results.front().metrics.cap_violations, 1);
    }

    void layoutPiecesHandComputed() {
        const MeasuredPlan m = tiny_pieces();
        QCOMPARE(m.rows, 1);
        QCOMPARE(m.pieces.size(), std::size_t(6));
        // Attention: cell (0, 0) holds 10 + 20 tokens, cell (0, 1) 30.
        const MeasuredPiece& a0 = m.pieces[0];
        QVERIFY(a0.attention && a0.row == 0 && a0.dp_slot == 0 && a0.edp_shard == 0);
        QCOMPARE(std::vector<std::int64_t>({a0.samples, a0.tokens, a0.sq_tokens}),
                 std::vector<std::int64_t>({2, 30, 500}));
        QCOMPARE(a0.modelled, 1.5 * 30.0 / 100 + 4.0 * 500.0 / (100.0 * 100.0));
        const MeasuredPiece& a1 = m.pieces[1];
        QCOMPARE(std::vector<std::int64_t>({a1.dp_slot, a1.edp_shard, a1.samples, a1.tokens, a1.sq_tokens}),
                 std::vector<std::int64_t>({1, 1, 1, 30, 900}));
        // Experts: shard 0 routes {4, 0, 16, 10}, shard 1 {0, 0, 6, 24}; rank 0 holds experts 0 and 1.
        const auto experts = [](const MeasuredPiece& p) {
            return std::vector<std::int64_t>({p.edp_shard, p.moe_layer, p.ep_rank, p.experts, p.tokens});
        };
        QCOMPARE(experts(m.pieces[2]), std::vector<std::int64_t>({0, 3, 0, 1, 4}));
        QCOMPARE(experts(m.pieces[3]), std::vector<std::int64_t>({0, 3, 1, 2, 26}));
        QCOMPARE(experts(m.pieces[4]), std::vector<std::int64_t>({1, 3, 0, 0, 0}));
        QCOMPARE(experts(m.pieces[5]), std::vector<std::int64_t>({1, 3, 1, 2, 30}));
        QCOMPARE(m.pieces[2].modelled, (4.0 + 3.0) / 100);
        QCOMPARE(m.pieces[3].modelled, (26.0 + 6.0) / 100);
        QCOMPARE(m.pieces[4].modelled, 0.0);
        // Experts 0 and 2 swap slots: rank 0 now holds experts 2 and 1.
        const Placement swapped{1, 4, 2, {2, 1, 0, 3}};
        const MeasuredPlan s = tiny_pieces(&swapped);
        QCOMPARE(experts(s.pieces[2]), std::vector<std::int64_t>({0, 3, 0, 1, 16}));
        QCOMPARE(experts(s.pieces[3]), std::vector<std::int64_t>({0, 3, 1, 2, 14}));
        QCOMPARE(experts(s.pieces[4]), std::vector<std::int64_t>({1, 3, 0, 1, 6}));
        QCOMPARE(experts(s.pieces[5]), std::vector<std::int64_t>({1, 3, 1, 1, 24}));
        // The same layout whatever the seconds and order; another placement is another layout.
        MeasuredPlan timed = m;
        timed.pieces[0].seconds = 1;
        std::reverse(timed.pieces.begin(), timed.pieces.end());
        QVERIFY(same_pieces(m, timed));
        QVERIFY(!same_pieces(m, s));
    }

    void measuredFileRoundTrip() {
        MeasuredStep m = tiny_step();
        const double seconds[] = {1.0, 2.0, 0.5, 0.25, 0.0, 1.0};
        for (std::size_t k = 0; k < 6; ++k)
            m.plans[0].pieces[k].seconds = seconds[k];
        // J = (1 + max(0.5, 0.25), 2 + max(0, 1)) = (1.5, 3): the step waits for shard 1.
        QCOMPARE(compose_measured(m.plans[0], m.topology, m.moe_layers), 3.0);
        const std::string text = measured_to_json(m);
        const auto doc = nlohmann::ordered_json::parse(text);
        QCOMPARE(q(doc["plans"][0]["measured"].dump()),
                 q(R"({"step_seconds":3.0,"shard_seconds":[1.5,3.0],"row_shard_seconds":[[1.5,3.0]]})"));
        QCOMPARE(doc["shapes"].dump(), std::string("null"));
        const MeasuredStep back = parse_measured(text, "m.json", "0123456789abcdef");
        QCOMPARE(measured_to_json(back), text);
        QCOMPARE(back.plans[0].step_seconds, 3.0);
        QVERIFY(same_pieces(back.plans[0], m.plans[0]));
        QCOMPARE(error_of<InputError>([&] { parse_measured(text, "m.json", "fedcba9876543210"); }),
                 std::string("m.json: window.fingerprint is 0123456789abcdef, the window's is fedcba9876543210: a "
                             "measurement of another window"));
    }

    void profilerRangesFillThePieces() {
        const std::string step =
            R"({"ph": "X", "cat": "user_annotation", "name": "routepack:step:window=0123456789abcdef:plan=p", "ts": 0, "dur": 1000})";
        const auto range = [](const std::string& name, double ts, double dur, const char* cat = "user_annotation") {
            return nlohmann::json({{"ph", "X"}, {"cat", cat}, {"name", name}, {"ts", ts}, {"dur", dur}}).dump();
        };
        const std::string a0 = "routepack:attention:row=0:dp_slot=0", a1 = "routepack:attention:row=0:dp_slot=1";
        const std::string e00 = "routepack:experts:row=0:edp_shard=0:moe_layer=3:ep_rank=0";
        const std::string e01 = "routepack:experts:row=0:edp_shard=0:moe_layer=3:ep_rank=1";
        const std::string e11 = "routepack:experts:row=0:edp_shard=1:moe_layer=3:ep_rank=1";
        std::vector<std::string> host = {step,
                                         range(a0, 1, 10),
                                         range(a0, 20, 30),
                                         range(a0, 60, 20),
                                         range(a1, 100, 40),
                                         range(e00, 200, 8),
                                         range(e00, 210, 12),
                                         range(e01, 300, 50),
                                         range(e11, 400, 70),
                                         range(a0, 5000, 999),
                                         R"({"ph": "X", "name": "aten::mm", "ts": 1, "dur": 3})",
                                         R"({"ph": "M", "name": "process_name", "args": {}})"};
        const auto list = [](const std::vector<std::string>& events) {
            std::string out = "[";
            for (const auto& e : events)
                out += (out.size() > 1 ? ", " : "") + e;
            return out + "]";
        };
        MeasuredPlan p = tiny_pieces();
        const Topology t = tiny_topology();
        ProfilerTiming timing = fill_from_profiler(p, {{"a.json", list(host)}}, "0123456789abcdef", t, {3});
        QVERIFY(!timing.device);
        QCOMPARE(timing.repeats, 1);
        std::vector<double> got;
        for (const auto& pc : p.pieces)
            got.push_back(pc.seconds);
        QCOMPARE(got, std::vector<double>({20 / 1e6, 40 / 1e6, 10 / 1e6, 50 / 1e6, 0.0, 70 / 1e6}));
        QCOMPARE(p.step_seconds, 40 / 1e6 + 70 / 1e6);
        // Device-side ranges, when the step has them, are the ones timed.
        std::vector<std::string> both = host;
        for (const auto& [name, dur] : {std::pair{a0, 5.0}, {a1, 6.0}, {e00, 7.0}, {e01, 8.0}, {e11, 9.0}})
            both.push_back(range(name, 500, dur, "gpu_user_annotation"));
        p = tiny_pieces();
        timing =
            fill_from_profiler(p, {{"b.json", R"({"traceEvents": )" + list(both) + "}"}}, "0123456789abcdef", t, {3});
        QVERIFY(timing.device);
        QCOMPARE(p.pieces[5].seconds, 9 / 1e6);
        both.pop_back();
        QCOMPARE(error_of<InputError>([&] {
                     fill_from_profiler(p, {{"b.json", list(both)}}, "0123456789abcdef", t, {3});
                 }),
                 std::string("b.json: no device-side range " + e11 +
                             " inside routepack:step:window=0123456789abcdef:plan=p (the piece has 30 tokens)"));
        // Two files of one step (two processes): their ranges merge.
        std::vector<std::string> first(host.begin(), host.begin() + 8), second = {step, range(e11, 400, 70)};
        p = tiny_pieces();
        fill_from_profiler(p, {{"r0.json", list(first)}, {"r1.json", list(second)}}, "0123456789abcdef", t, {3});
        QCOMPARE(p.pieces[5].seconds, 70 / 1e6);
        QCOMPARE(error_of<InputError>([&] {
                     fill_from_profiler(p, {{"r0.json", list(first)}}, "0123456789abcdef", t, {3});
                 }),
                 std::string("r0.json: no range " + e11 +
                             " inside routepack:step:window=0123456789abcdef:plan=p (the piece has 30 tokens)"));
        QCOMPARE(error_of<InputError>([&] {
                     fill_from_profiler(p, {{"a.json", list(host)}}, "fedcba9876543210", t, {3});
                 }),
                 std::string("a.json: its routepack:step ranges are of window 0123456789abcdef, not the plan's "
                             "fedcba9876543210: a trace of another window"));
        QCOMPARE(error_of<InputError>([&] {
                     fill_from_profiler(p, {{"a.json", "[" + range(a0, 1, 2) + "]"}}, "0123456789abcdef", t, {3});
                 }),
                 std::string("a.json: no routepack:step range: wrap each step in "
                             "record_function(\"routepack:step:window=0123456789abcdef:plan=p\")"));
        QCOMPARE(
            error_of<InputError>([&] {
                fill_from_profiler(p, {{"a.json", list({step, range(e00 + "x", 1, 2)})}}, "0123456789abcdef", t, {3});
            }),
            std::string(
                "a.json: [1].name \"" + e00 +
                "x\" is not a routepack range (routepack:step:window=F:plan=NAME, "
                "routepack:attention:row=R:dp_slot=D or routepack:experts:row=R:edp_shard=G:moe_layer=L:ep_rank=P)"));
        QCOMPARE(q(error_of<InputError>([&] {
                     fill_from_profiler(p, {{"a.json", list({step, range(a0, 1, -2)})}}, "0123456789abcdef", t, {3});
                 })),
                 q("a.json: [1].dur is -2.0, not a finite number >= 0"));

        QCOMPARE(error_of<InputError>([&] {
                     fill_from_profiler(
                         p,
                         {{"a.json",
                           list({step, range("routepack:experts:row=0:edp_shard=0:moe_layer=2:ep_rank=0", 1, 2)})}},
                         "0123456789abcdef", t, {3});
                 }),
                 std::string("a.json: [1].name names MoE layer 2, not one of the window's MoE layers"));
        QCOMPARE(error_of<InputError>([&] {
                     fill_from_profiler(p, {{"a.json", "[" + step}}, "0123456789abcdef", t, {3});
                 }).rfind("a.json: malformed JSON", 0),
                 std::size_t(0));
    }

    void importMeasuredLinksTheRun() {
        const auto db = make_library(QStringLiteral("measured"));
        auto lib = Library::open(db);
        const PlanResult r = plan_of(*lib, small_budgets());
        const std::int64_t run = lib->save_run(r, "t").id;
        const Trace window = lib->load_window("syn", "w");
        // One plan per method, timed 1 s a piece; a fifth whose cells swap two samples of the
        // routepack layout measured no saved layout.
        MeasuredStep m;
        m.trace = "syn";
        m.window = "w";
        m.fingerprint = r.fingerprint;
        m.samples = static_cast<std::int64_t>(window.size());
        m.experts = window.model.experts;
        m.moe_layers = window.model.moe_layers;
        m.topology = r.topology;
        m.shapes = "null";
        m.timing = R"({"repeats":1})";
        for (const MethodResult* mr : r.methods()) {
            MeasuredPlan p = layout_pieces(window, mr->layout, r.placement_of(mr->placement), r.topology, mr->key());
            for (auto& pc : p.pieces)
                pc.seconds = 1;
            m.plans.push_back(std::move(p));
        }
        Layout swapped = r.routepack.layout;
        std::swap(swapped.samples[0], swapped.samples[static_cast<std::size_t>(swapped.offsets[1])]);
        m.plans.push_back(layout_pieces(window, swapped, r.placement.routepack, r.topology, "swapped"));
        const std::string text = measured_to_json(m);
        const fs::path file = db.parent_path() / "m.json";
        const MeasuredImport first = lib->import_measured(text, file);
        QVERIFY(!first.unchanged);
        QCOMPARE(first.step.source, std::string("measured"));
        QCOMPARE(first.step.files, std::vector<std::string>({file.string()}));
        QCOMPARE(first.step.fingerprint, hex64(fnv1a64(text.data(), text.size())));
        QCOMPARE(first.step.plans.size(), std::size_t(5));
        for (std::size_t k = 0; k < 4; ++k) {
            QCOMPARE(first.step.plans[k].run_id, run);
            QCOMPARE(first.step.plans[k].method, first.step.plans[k].name);
            QCOMPARE(first.step.plans[k].step_seconds, m.plans[k].rows * (1.0 + m.moe_layers.size()));
        }
        QCOMPARE(first.step.plans[4].run_id, std::int64_t(0));
        QCOMPARE(first.step.plans[4].method, std::string());
        // The same text again changes nothing; the stored file reads back.
        const MeasuredImport again = lib->import_measured(text, file);
        QVERIFY(again.unchanged);
        QCOMPARE(again.step.id, first.step.id);
        QCOMPARE(lib->measured_steps("syn", "w").size(), std::size_t(1));
        QCOMPARE(measured_to_json(lib->measured_step(first.step.id)), text);
        // Another window's measurement, a window the library lacks, a read-only library.
        MeasuredStep other = m;
        other.fingerprint = "0123456789abcdef";
        QCOMPARE(error_of<InputError>([&] { lib->import_measured(measured_to_json(other), file); }),
                 file.string() + ": window.fingerprint is 0123456789abcdef, the window's is " + r.fingerprint +
                     ": a measurement of another window");
        other = m;
        other.window = "nope";
        QCOMPARE(error_of<InputError>([&] { lib->import_measured(measured_to_json(other), file); }),
                 file.string() + ": window 'syn/nope' is not in " + db.string() +
                     " (import its trace and make the window first)");
        QCOMPARE(error_of<InputError>([&] { Library::open(db, OpenMode::ReadOnly)->import_measured(text, file); }),
                 db.string() + ": library is read-only (cannot write)");
        // Deleting the run unlinks its plans; deleting the window removes the step.
        lib->delete_run(run);
        const MeasuredStepEntry unlinked = lib->measured_entry(first.step.id);
        QCOMPARE(unlinked.plans[0].run_id, std::int64_t(0));
        QCOMPARE(unlinked.plans[0].method, std::string());
        QCOMPARE(lib->trace_removal("syn").measured, std::size_t(1));
        QCOMPARE(lib->window_removal("syn", "w").measured, std::size_t(1));
        QCOMPARE(lib->delete_window("syn", "w").measured, std::size_t(1));
        QVERIFY(lib->measured_steps().empty());
        QCOMPARE(error_of<InputError>([&] { lib->measured_step(first.step.id); }),
                 "no measured step " + std::to_string(first.step.id) + " in " + db.string());
    }

    void demoLibrary() {
        const auto tmp = test::temp_dir(QStringLiteral("demo"));
        PlannerBudgets b;
        b.workers = 2;
        const DemoBuild d = build_demo(tmp / "d", b);
        QCOMPARE(d.import.samples, std::size_t(64));
        QCOMPARE(d.window.samples, std::size_t(64));
        QVERIFY(fs::exists(d.plan_file));
        QCOMPARE(d.run.status, std::string("finished"));
        auto lib = Library::open(d.library, OpenMode::ReadOnly);
        QCOMPARE(lib->topology(kDemoTopology).topology, known_topology(kDemoTopology));
        const auto runs = lib->runs(kDemoTrace, kDemoWindow);
        QCOMPARE(runs.size(), std::size_t(1));
        QCOMPARE(runs[0].score, d.plan.routepack.metrics.score);
        const PlanFile f = parse_plan(test::read_file(d.plan_file), "plan.json");
        QCOMPARE(f.score, d.plan.routepack.metrics.score);
        lib.reset();
        // A second build in the same folder starts over (one trace, one run).
        const DemoBuild again = build_demo(tmp / "d", b);
        QCOMPARE(again.plan.routepack.metrics.score, d.plan.routepack.metrics.score);
        QCOMPARE(Library::open(again.library, OpenMode::ReadOnly)->runs(kDemoTrace, kDemoWindow).size(),
                 std::size_t(1));
    }
};

QTEST_GUILESS_MAIN(TestStorageRuns)
#include "tst_storage_runs.moc"
