// Runs swept on a cluster in a library (storage/library.h, schema migration 4) on a real SQLite file:
// an output folder OUT (run.json, summary.json, plan files) written here by hand, imported with
// Library::import_cluster_run and read back with cluster_runs / cluster_run_steps (every stored
// value); re-importing (unchanged, replaced), atomicity under a failure mid-import, read-only
// libraries, and the exact error of every kind of bad field.
#include "core/model/topology.h"
#include "core/plan/budgets.h"
#include "core/util/errors.h"
#include "storage/library.h"
#include "storage/migrations.h"
#include "tests/testutil.h"

#include <QtTest>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

using namespace routepack;
using namespace routepack::storage;
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

using routepack::test::error_of;

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

/// run.json of a run of two chains: "wide" (8 ranks on 2 nodes) listed before "narrow" in the
/// summary, although an object sorts them the other way.
json run_json() {
    return json{{"format", "routepack-cluster-run"},
                {"version", 1},
                {"trace", "run-7"},
                {"model", "deepseek-v2-lite"},
                {"topologies",
                 {{"wide",
                   {{"ep_ranks", 8},
                    {"dp_slots", 2},
                    {"token_cap", 512},
                    {"gpus_per_node", 4},
                    {"attention_stages", {{{"name", "mla"}, {"alpha", 1.0}, {"beta", 1.0}}}}}},
                  {"narrow",
                   {{"ep_ranks", 4},
                    {"dp_slots", 4},
                    {"token_cap", 256},
                    {"attention_stages", {{{"name", "attn"}, {"alpha", 1.0}, {"beta", 2.0}}}}}}}},
                {"seed", 18446744073709551615ULL}, // 2^64 - 1: survives SQLite's signed INTEGER
                {"threads", 2},
                {"budgets", {{"max_moves", 3}}},
                {"previous", "identity"},
                {"read_format", "auto"}};
}

/// A planned summary line with hand-picked values (`k` varies them).
json planned_line(const std::string& chain, const std::string& window, int k) {
    return json{{"topology", chain},
                {"window", window},
                {"path", "/data/run-7/" + window + ".npz"},
                {"status", "planned"},
                {"error", nullptr},
                {"samples", 64 + k},
                {"rows", 2},
                {"certified", k % 2 == 0},
                {"baseline", 4.5},
                {"reorder", 3.25},
                {"karmarkar_karp", 2.125},
                {"routepack", 2.0 + k},
                {"grouter", nullptr},
                {"routepack+comm", nullptr},
                {"routepack_vs_baseline_pct", -55.5},
                {"routepack_vs_reorder_pct", -38.5},
                {"lower_bound", 1.875},
                {"planner_s", 0.5},
                {"time_limit_hit", false},
                {"experts_moved", 3 * k},
                {"migration_bytes", nullptr},
                {"materialization_seconds", nullptr},
                {"compute_seconds", nullptr},
                {"modelled_seconds", nullptr},
                {"plan_file", window + ".plan.json"},
                {"worker", "tcp://10.0.0.2:4000" + std::to_string(k)},
                {"task_seconds", 0.75},
                {"previous_from", k == 0 ? std::string("identity") : "step-" + std::to_string(k)}};
}

/// summary.json: 3 steps x 2 chains; "wide" has the communication methods and migration figures
/// on step-1; "narrow"'s step-2 failed reading.
json summary_json() {
    json lines = json::array();
    for (const std::string chain : {"wide", "narrow"})
        for (int k = 0; k < 3; ++k)
            lines.push_back(planned_line(chain, "step-" + std::to_string(k + 1), k));
    lines[0]["grouter"] = 2.5;
    lines[0]["routepack+comm"] = 2.25;
    lines[0]["migration_bytes"] = 1.5e9;
    lines[0]["materialization_seconds"] = 0.25;
    lines[0]["compute_seconds"] = 1.0;
    lines[0]["modelled_seconds"] = 1.25;
    lines[0]["time_limit_hit"] = true;
    lines[4] = json{{"topology", "narrow"},
                    {"window", "step-2"},
                    {"path", "/data/run-7/step-2.npz"},
                    {"status", "failed"},
                    {"error", "bad.npz: not a valid .npz (zip) archive"},
                    {"stage", "read"}};
    lines[5]["previous_from"] = "step-1"; // narrow's step-3 starts from its last planned step
    return json{{"format", "routepack-cluster-summary"},
                {"version", 1},
                {"steps", 3},
                {"topologies", {"wide", "narrow"}},
                {"lines", lines},
                {"failed",
                 {{{"topology", "narrow"},
                   {"window", "step-2"},
                   {"path", "/data/run-7/step-2.npz"},
                   {"error", "bad.npz: not a valid .npz (zip) archive"}}}}};
}

/// Writes OUT: run.json, summary.json and a plan file for every planned line.
void write_out(const fs::path& out, const json& run, const json& summary) {
    test::write_file(out / "run.json", run.dump(2) + "\n");
    test::write_file(out / "summary.json", summary.dump(2) + "\n");
    for (const auto& line : summary["lines"])
        if (line.value("status", "") == "planned" && line.contains("plan_file") && line["plan_file"].is_string() &&
            line.contains("topology") && line["topology"].is_string())
            test::write_file(out / line["topology"].get<std::string>() / line["plan_file"].get<std::string>(), "{}\n");
}

/// Every table's rows, in order: equal dumps = equal contents.
std::string dump_of(const fs::path& db) {
    sqlite3* h = nullptr;
    sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
    std::string out;
    for (const char* t : {"cluster_runs", "cluster_run_chains", "cluster_run_steps"}) {
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(h, (std::string("SELECT * FROM ") + t + " ORDER BY 1, 2, 3").c_str(), -1, &st, nullptr);
        out += std::string("== ") + t + "\n";
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); ++c) {
                const unsigned char* v = sqlite3_column_text(st, c);
                out += (v ? reinterpret_cast<const char*>(v) : "NULL") + std::string("|");
            }
            out += "\n";
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return out;
}

void raw_exec(const fs::path& db, const std::string& sql) {
    sqlite3* h = nullptr;
    QCOMPARE(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
    const std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(h);
    QVERIFY2(rc == SQLITE_OK, msg.c_str());
}

/// Rows of badFieldsAreRefusedWithTheirPlace: the summary's own fields and its chains.
void add_summary_header_rows() {
    const QString rm = QStringLiteral("<remove>");
    QTest::newRow("summary format") << "summary"
                                    << "/format"
                                    << "\"x\""
                                    << "format is \"x\", not \"routepack-cluster-summary\"";
    QTest::newRow("summary version") << "summary"
                                     << "/version"
                                     << "2"
                                     << "version is 2, not an integer in 1..1";
    QTest::newRow("steps 0") << "summary"
                             << "/steps"
                             << "0"
                             << "steps is 0, not an integer in 1..2147483647";
    QTest::newRow("steps missing") << "summary"
                                   << "/steps" << rm << "steps is missing";
    QTest::newRow("too few lines") << "summary"
                                   << "/steps"
                                   << "4"
                                   << "lines is a list, not a list of 8 lines (4 steps x 2 chains)";
    QTest::newRow("unknown chain") << "summary"
                                   << "/topologies/1"
                                   << "\"tall\""
                                   << "topologies[1] is \"tall\", not another chain of run.json (narrow, wide)";
    QTest::newRow("chain twice") << "summary"
                                 << "/topologies/1"
                                 << "\"wide\""
                                 << "topologies[1] is \"wide\", not another chain of run.json (narrow, wide)";
    QTest::newRow("line of another chain") << "summary"
                                           << "/lines/3/topology"
                                           << "\"wide\""
                                           << "lines[3].topology is \"wide\", not \"narrow\"";
    QTest::newRow("windows differ") << "summary"
                                    << "/lines/5/window"
                                    << "\"step-9\""
                                    << "lines[5].window is \"step-9\", not \"step-3\"";
}

/// Rows of badFieldsAreRefusedWithTheirPlace: the fields of the summary's lines and its failed list.
void add_summary_line_rows() {
    const QString rm = QStringLiteral("<remove>");
    QTest::newRow("status") << "summary"
                            << "/lines/1/status"
                            << "\"done\""
                            << "lines[1].status is \"done\", not \"planned\" or \"failed\"";
    QTest::newRow("samples 0") << "summary"
                               << "/lines/1/samples"
                               << "0"
                               << "lines[1].samples is 0, not an integer in 1..2147483647";
    QTest::newRow("samples float") << "summary"
                                   << "/lines/1/samples"
                                   << "64.5"
                                   << "lines[1].samples is 64.5, not an integer in 1..2147483647";
    QTest::newRow("rows huge") << "summary"
                               << "/lines/1/rows"
                               << "3000000000"
                               << "lines[1].rows is 3000000000, not an integer in 1..2147483647";
    QTest::newRow("certified") << "summary"
                               << "/lines/1/certified"
                               << "1"
                               << "lines[1].certified is 1, not true or false";
    QTest::newRow("baseline missing") << "summary"
                                      << "/lines/2/baseline" << rm << "lines[2].baseline is missing";
    QTest::newRow("routepack negative") << "summary"
                                        << "/lines/2/routepack"
                                        << "-1"
                                        << "lines[2].routepack is -1, not a finite number >= 0";
    QTest::newRow("grouter text") << "summary"
                                  << "/lines/0/grouter"
                                  << "\"2\""
                                  << "lines[0].grouter is \"2\", not a finite number >= 0";
    QTest::newRow("gain huge")
        << "summary"
        << "/lines/0/routepack_vs_baseline_pct"
        << "1e999"
        << "malformed JSON: number overflow parsing '1e999' (field lines[0].routepack_vs_baseline_pct)";
    QTest::newRow("moves negative") << "summary"
                                    << "/lines/0/experts_moved"
                                    << "-3"
                                    << "lines[0].experts_moved is -3, not an integer in 0..9223372036854775807";
    QTest::newRow("bytes negative") << "summary"
                                    << "/lines/0/migration_bytes"
                                    << "-1.5"
                                    << "lines[0].migration_bytes is -1.5, not a finite number >= 0";
    QTest::newRow("planner seconds") << "summary"
                                     << "/lines/0/planner_s"
                                     << "null"
                                     << "lines[0].planner_s is null, not a finite number >= 0";
    QTest::newRow("time limit") << "summary"
                                << "/lines/0/time_limit_hit" << rm << "lines[0].time_limit_hit is missing";
    QTest::newRow("worker") << "summary"
                            << "/lines/0/worker"
                            << "7"
                            << "lines[0].worker is 7, not a string";
    QTest::newRow("plan file outside") << "summary"
                                       << "/lines/1/plan_file"
                                       << "\"../run.json\""
                                       << "lines[1].plan_file is \"../run.json\", not a plan file in <OUT>/wide";
    QTest::newRow("plan file absent") << "summary"
                                      << "/lines/1/plan_file"
                                      << "\"step-9.plan.json\""
                                      << "lines[1].plan_file is \"step-9.plan.json\", not a plan file in <OUT>/wide";
    QTest::newRow("failed error") << "summary"
                                  << "/lines/4/error"
                                  << "null"
                                  << "lines[4].error is null, not a string";
    QTest::newRow("failed stage") << "summary"
                                  << "/lines/4/stage"
                                  << "\"write\""
                                  << "lines[4].stage is \"write\", not \"read\" or \"plan\"";
    QTest::newRow("failed list") << "summary"
                                 << "/failed"
                                 << "[]"
                                 << "failed is [], not a list of the 1 failed lines";
}

/// Rows of badFieldsAreRefusedWithTheirPlace: run.json's own fields.
void add_run_header_rows() {
    const QString rm = QStringLiteral("<remove>");
    QTest::newRow("run format") << "run"
                                << "/format"
                                << "\"routepack-cluster-summary\""
                                << "format is \"routepack-cluster-summary\", not \"routepack-cluster-run\"";
    QTest::newRow("run version") << "run"
                                 << "/version"
                                 << "\"1\""
                                 << "version is \"1\", not an integer in 1..1";
    QTest::newRow("seed negative") << "run"
                                   << "/seed"
                                   << "-1"
                                   << "seed is -1, not an integer in 0..18446744073709551615";
    QTest::newRow("threads 0") << "run"
                               << "/threads"
                               << "0"
                               << "threads is 0, not an integer in 1..65536";
    QTest::newRow("budgets list") << "run"
                                  << "/budgets"
                                  << "[]"
                                  << "budgets is [], not an object";
    QTest::newRow("trace missing") << "run"
                                   << "/trace" << rm << "trace is missing";
    QTest::newRow("model missing") << "run"
                                   << "/model" << rm << "model is missing";
    QTest::newRow("no chains") << "run"
                               << "/topologies"
                               << "{}"
                               << "topologies is {}, not an object with at least one chain";
}

/// Rows of badFieldsAreRefusedWithTheirPlace: lines out of their chain's order.
void add_step_order_rows() {
    // Lines swapped (wide's step-2 and step-3): each planned step starts from the one before it.
    QTest::newRow("swapped lines") << "summary"
                                   << "/lines/1/previous_from"
                                   << "\"step-2\""
                                   << "lines[1].previous_from is \"step-2\", not \"step-1\"";
    QTest::newRow("first step's start") << "summary"
                                        << "/lines/3/previous_from"
                                        << "\"step-1\""
                                        << "lines[3].previous_from is \"step-1\", not \"identity\"";
    QTest::newRow("window twice") << "summary"
                                  << "/lines/1/window"
                                  << "\"step-1\""
                                  << "lines[1].window is \"step-1\", not a window not named by an earlier "
                                     "line of its chain";
}

/// Rows of badFieldsAreRefusedWithTheirPlace: run.json's budgets, previous, trace and topologies.
void add_run_setting_rows() {
    QTest::newRow("budget out of range") << "run"
                                         << "/budgets/max_moves"
                                         << "-7"
                                         << "budgets: max_moves is -7, not an integer in -1..1000000000";
    QTest::newRow("budget unknown")
        << "run"
        << "/budgets/bogus"
        << "1"
        << "budgets: unknown budget 'bogus' (known: seeds_M, population, choice_width, eta, projections, "
           "pair_candidates, levels, t0, cooling, steps_per_level, p_guide, rho, "
           "p_straggler, row_nodes, polish_evaluations, polish_kick_moves, "
           "placement_rounds, max_moves, history_decay, anytime)";
    QTest::newRow("old budget name") << "run"
                                     << "/budgets/seeds"
                                     << "\"x\""
                                     << "budgets: seeds_M is \"x\", not an integer in 1..4096";
    QTest::newRow("previous label") << "run"
                                    << "/previous"
                                    << "\"yesterday\""
                                    << "previous is \"yesterday\", not \"identity\" or \"previous:<file>\"";
    QTest::newRow("trace empty") << "run"
                                 << "/trace"
                                 << "\"\""
                                 << "trace is \"\", not a trace name";
    QTest::newRow("topology off the model") << "run"
                                            << "/topologies/narrow/ep_ranks"
                                            << "3"
                                            << "topologies.narrow: 64 experts are not divisible by 3 EP ranks";
    QTest::newRow("bad topology") << "run"
                                  << "/topologies/narrow/ep_ranks"
                                  << "0"
                                  << "topologies.narrow: ep_ranks is 0, not an integer in 1..1048576";
}

} // namespace

class TstStorageClusterRuns : public QObject {
    Q_OBJECT

private:
    fs::path dir_;

private Q_SLOTS:
    void initTestCase() { dir_ = test::temp_dir(QStringLiteral("storage-cluster")); }
    void cleanupTestCase() { fs::remove_all(dir_); }

    void importStoresEverySummaryField() {
        const fs::path out = dir_ / "out";
        write_out(out, run_json(), summary_json());
        auto lib = Library::open(dir_ / "lib.routepack");
        QCOMPARE(lib->schema_version(), 7);
        QVERIFY(lib->cluster_runs().empty());
        const ClusterRunImport r = lib->import_cluster_run(dir_ / "." / "out" / ""); // the same OUT
        QVERIFY(r.outcome == ClusterRunImport::Outcome::Imported);
        QCOMPARE(r.run.id, std::int64_t{1});
        const auto runs = lib->cluster_runs();
        QCOMPARE(runs.size(), std::size_t{1});
        const ClusterRunEntry& e = runs[0];
        QCOMPARE(e.id, std::int64_t{1});
        QCOMPARE(q(e.out.string()), q(fs::canonical(out).string()));
        QCOMPARE(q(e.trace), QStringLiteral("run-7"));
        QCOMPARE(q(e.model), QStringLiteral("\"deepseek-v2-lite\""));
        QCOMPARE(e.seed, std::uint64_t{18446744073709551615ULL});
        QCOMPARE(e.threads, 2);
        QCOMPARE(q(e.budgets), QStringLiteral("{\"max_moves\":3}"));
        QCOMPARE(q(e.previous), QStringLiteral("identity"));
        QCOMPARE(e.chains.size(), std::size_t{2});
        QCOMPARE(q(e.chains[0].name), QStringLiteral("wide")); // the summary's order
        QCOMPARE(e.chains[0].topology.ep_ranks, 8);
        QCOMPARE(e.chains[0].topology.nodes(), 2);
        QCOMPARE(q(e.chains[1].name), QStringLiteral("narrow"));
        QCOMPARE(e.chains[1].topology.dp_slots, 4);
        QCOMPARE(e.steps, std::size_t{3});
        QCOMPARE(e.planned, std::size_t{5});
        QCOMPARE(e.failed, std::size_t{1});
        QCOMPARE(e.fingerprint.size(), std::size_t{16});
        QCOMPARE(e.imported_at.size(), std::size_t{20});

        const auto steps = lib->cluster_run_steps(1);
        QCOMPARE(steps.size(), std::size_t{6});
        const ClusterRunStep& a = steps[0];
        QCOMPARE(a.chain, std::size_t{0});
        QCOMPARE(q(a.chain_name), QStringLiteral("wide"));
        QCOMPARE(a.position, std::size_t{0});
        QCOMPARE(q(a.window), QStringLiteral("step-1"));
        QCOMPARE(q(a.step_path.string()), QStringLiteral("/data/run-7/step-1.npz"));
        QVERIFY(a.planned);
        QCOMPARE(a.samples, std::size_t{64});
        QCOMPARE(a.rows, 2);
        QVERIFY(a.certified);
        QCOMPARE(*a.max_u[Method::Baseline], 4.5);
        QCOMPARE(*a.max_u[Method::Reorder], 3.25);
        QCOMPARE(*a.max_u[Method::KarmarkarKarp], 2.125);
        QCOMPARE(*a.max_u[Method::RoutePack], 2.0);
        QCOMPARE(*a.max_u[Method::Grouter], 2.5);
        QCOMPARE(*a.max_u[Method::RoutePackComm], 2.25);
        QCOMPARE(a.gain_vs_baseline_pct, -55.5);
        QCOMPARE(a.gain_vs_reorder_pct, -38.5);
        QCOMPARE(a.lower_bound, 1.875);
        QCOMPARE(a.experts_moved, std::int64_t{0});
        QCOMPARE(*a.migration_bytes, 1.5e9);
        QCOMPARE(*a.materialization_seconds, 0.25);
        QCOMPARE(*a.compute_seconds, 1.0);
        QCOMPARE(*a.modelled_seconds, 1.25);
        QCOMPARE(a.planner_seconds, 0.5);
        QCOMPARE(a.task_seconds, 0.75);
        QVERIFY(a.time_limit_hit);
        QCOMPARE(q(a.worker), QStringLiteral("tcp://10.0.0.2:40000"));
        QCOMPARE(q(a.previous_from), QStringLiteral("identity"));
        QCOMPARE(q(a.plan_file.string()), q((fs::canonical(out) / "wide" / "step-1.plan.json").string()));
        QVERIFY(fs::is_regular_file(a.plan_file));
        QVERIFY(a.error.empty() && a.stage.empty());
        const ClusterRunStep& b = steps[2];
        QCOMPARE(q(b.window), QStringLiteral("step-3"));
        QCOMPARE(b.samples, std::size_t{66});
        QVERIFY(b.certified);
        QCOMPARE(*b.max_u[Method::RoutePack], 4.0);
        QVERIFY(!b.max_u[Method::Grouter] && !b.max_u[Method::RoutePackComm]);
        QVERIFY(!b.migration_bytes && !b.materialization_seconds && !b.compute_seconds && !b.modelled_seconds);
        QCOMPARE(b.experts_moved, std::int64_t{6});
        QCOMPARE(q(b.previous_from), QStringLiteral("step-2"));
        const ClusterRunStep& f = steps[4];
        QCOMPARE(f.chain, std::size_t{1});
        QCOMPARE(q(f.chain_name), QStringLiteral("narrow"));
        QCOMPARE(f.position, std::size_t{1});
        QVERIFY(!f.planned);
        QCOMPARE(q(f.error), QStringLiteral("bad.npz: not a valid .npz (zip) archive"));
        QCOMPARE(q(f.stage), QStringLiteral("read"));
        QVERIFY(f.plan_file.empty() && f.samples == 0 && !f.max_u[Method::Baseline]);
        QCOMPARE(q(f.step_path.string()), QStringLiteral("/data/run-7/step-2.npz"));
        QCOMPARE(q(steps[5].chain_name + " " + steps[5].window), QStringLiteral("narrow step-3"));

        QCOMPARE(q(lib->cluster_run(1).trace), QStringLiteral("run-7"));
        // Each chain is a whole run: its settings from run.json, its steps the chain's lines.
        const auto whole = lib->whole_runs();
        QCOMPARE(whole.size(), std::size_t{2});
        for (std::size_t c = 0; c < 2; ++c) {
            const WholeRunEntry& w = whole[c];
            QCOMPARE(w.id, static_cast<std::int64_t>(c + 1));
            QVERIFY(w.source == WholeRunSource::Cluster);
            QCOMPARE(q(storage::whole_run_source_key(w.source)), QStringLiteral("cluster"));
            QCOMPARE(w.cluster_run, std::int64_t{1});
            QCOMPARE(w.cluster_chain, c);
            QCOMPARE(q(w.topology), c == 0 ? QStringLiteral("wide") : QStringLiteral("narrow"));
            QCOMPARE(w.topology_value.ep_ranks, c == 0 ? 8 : 4);
            QCOMPARE(q(w.trace), QStringLiteral("run-7"));
            QCOMPARE(w.settings.seed, std::uint64_t{18446744073709551615ULL});
            QCOMPARE(w.settings.budgets.seed, std::uint64_t{18446744073709551615ULL});
            QCOMPARE(w.settings.budgets.max_moves, std::int64_t{3});
            QCOMPARE(q(w.settings.start), QStringLiteral("identity"));
            QVERIFY(w.settings.chained);
            QCOMPARE(w.steps, std::size_t{3}); // planned and failed lines alike
            QVERIFY(w.runs.empty());
        }
        const std::string file = (dir_ / "lib.routepack").string();
        QCOMPARE(q(error_of<InputError>([&] { lib->whole_run(9); })), q("no whole run 9 in " + file));
        QCOMPARE(q(error_of<InputError>([&] { lib->cluster_run(9); })), q("no cluster run 9 in " + file));
        QCOMPARE(q(error_of<InputError>([&] { lib->cluster_run_steps(9); })), q("no cluster run 9 in " + file));
        // A library holding only a cluster run is not empty: discard keeps it.
        QVERIFY(!lib->discard_if_created_and_empty());
        QVERIFY(fs::exists(dir_ / "lib.routepack"));
    }

    void reimportSaysUnchangedOrReplaces() {
        const fs::path out = dir_ / "again";
        write_out(out, run_json(), summary_json());
        const fs::path db = dir_ / "again.routepack";
        auto lib = Library::open(db);
        QVERIFY(lib->import_cluster_run(out).outcome == ClusterRunImport::Outcome::Imported);
        lib->rename_whole_run(2, "narrow chain");
        const std::string first = dump_of(db);
        // The same bytes: nothing written, not even imported_at.
        const ClusterRunImport same = lib->import_cluster_run(out);
        QVERIFY(same.outcome == ClusterRunImport::Outcome::Unchanged);
        QCOMPARE(same.run.id, std::int64_t{1});
        QCOMPARE(q(dump_of(db)), q(first));
        // A resumed run: the failed step planned now. Its rows replace the old ones, same id.
        json s = summary_json();
        s["lines"][4] = planned_line("narrow", "step-2", 1);
        s["lines"][5]["previous_from"] = "step-2"; // step-3 planned again from it (its start changed)
        s["failed"] = json::array();
        write_out(out, run_json(), s);
        const ClusterRunImport replaced = lib->import_cluster_run(out);
        QVERIFY(replaced.outcome == ClusterRunImport::Outcome::Replaced);
        QCOMPARE(replaced.run.id, std::int64_t{1});
        QCOMPARE(replaced.run.planned, std::size_t{6});
        QCOMPARE(replaced.run.failed, std::size_t{0});
        QCOMPARE(lib->cluster_runs().size(), std::size_t{1});
        const auto steps = lib->cluster_run_steps(1);
        QCOMPARE(steps.size(), std::size_t{6});
        QVERIFY(steps[4].planned);
        QCOMPARE(steps[4].samples, std::size_t{65});
        // The chains' whole runs keep their ids and names.
        QCOMPARE(lib->whole_runs().size(), std::size_t{2});
        QCOMPARE(q(lib->whole_run(2).name), QStringLiteral("narrow chain"));
        QCOMPARE(lib->whole_run(2).cluster_chain, std::size_t{1});
        // Another OUT is another run.
        const fs::path other = dir_ / "other";
        write_out(other, run_json(), summary_json());
        QCOMPARE(lib->import_cluster_run(other).run.id, std::int64_t{2});
        QCOMPARE(lib->cluster_runs().size(), std::size_t{2});
        QCOMPARE(lib->cluster_run_steps(2).size(), std::size_t{6});
        QCOMPARE(lib->whole_run(3).cluster_run, std::int64_t{2});
        QCOMPARE(lib->whole_run(4).cluster_chain, std::size_t{1});
        // A chain the run no longer has takes its whole run with it.
        json one = run_json();
        one["topologies"].erase("narrow");
        json lines = json::array();
        json s1 = summary_json();
        for (const auto& l : s1["lines"])
            if (l["topology"] == "wide") lines.push_back(l);
        s1["lines"] = lines;
        s1["topologies"] = {"wide"};
        s1["failed"] = json::array();
        write_out(other, one, s1);
        QVERIFY(lib->import_cluster_run(other).outcome == ClusterRunImport::Outcome::Replaced);
        QCOMPARE(lib->whole_runs().size(), std::size_t{3});
        QCOMPARE(q(error_of<InputError>([&] { lib->whole_run(4); })), q("no whole run 4 in " + db.string()));
    }

    void olderClusterRunsBecomeWholeRuns() {
        // A library at schema 6 holding a cluster run: migration 7 makes each chain a whole run, with
        // the settings an import stores now.
        const fs::path out = dir_ / "v6-out";
        write_out(out, run_json(), summary_json());
        const fs::path db = dir_ / "v6.routepack";
        std::vector<WholeRunEntry> imported;
        {
            auto lib = Library::open(db);
            lib->import_cluster_run(out);
            imported = lib->whole_runs();
        }
        raw_exec(db, "DROP TRIGGER whole_run_emptied; DROP TABLE whole_run_steps; DROP TABLE whole_runs; "
                     "PRAGMA user_version = 6;");
        auto lib = Library::open(db);
        QCOMPARE(lib->schema_version(), 7);
        const auto migrated = lib->whole_runs();
        QCOMPARE(migrated.size(), imported.size());
        for (std::size_t i = 0; i < migrated.size(); ++i) {
            const WholeRunEntry &m = migrated[i], &e = imported[i];
            QCOMPARE(m.id, e.id);
            QCOMPARE(q(m.topology), q(e.topology));
            QCOMPARE(q(topology_to_json(m.topology_value)), q(topology_to_json(e.topology_value)));
            QCOMPARE(m.cluster_run, e.cluster_run);
            QCOMPARE(m.cluster_chain, e.cluster_chain);
            QCOMPARE(m.settings.seed, e.settings.seed);
            QCOMPARE(q(planner_budgets_to_json(m.settings.budgets)), q(planner_budgets_to_json(e.settings.budgets)));
            QCOMPARE(q(m.settings.start), q(e.settings.start));
            QCOMPARE(m.steps, e.steps);
            QCOMPARE(q(m.created_at), q(lib->cluster_run(1).imported_at));
        }
    }

    void failureMidImportChangesNothing() {
        // A trigger fails the fifth step's insert: the run, its chains and its first steps are rolled
        // back with it, and a replacing import leaves the old rows as they were.
        const fs::path out = dir_ / "atomic";
        write_out(out, run_json(), summary_json());
        const fs::path db = dir_ / "atomic.routepack";
        Library::open(db).reset();
        raw_exec(db, "CREATE TRIGGER fail_fifth AFTER INSERT ON cluster_run_steps WHEN NEW.chain = 1 AND "
                     "NEW.position = 1 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;");
        auto lib = Library::open(db);
        const std::string empty = dump_of(db);
        QVERIFY(error_of<std::runtime_error>([&] { lib->import_cluster_run(out); }).find("injected failure") !=
                std::string::npos);
        QCOMPARE(q(dump_of(db)), q(empty));
        raw_exec(db, "DROP TRIGGER fail_fifth");
        QVERIFY(lib->import_cluster_run(out).outcome == ClusterRunImport::Outcome::Imported);
        const std::string stored = dump_of(db);
        json s = summary_json();
        s["lines"][0]["samples"] = 99;
        write_out(out, run_json(), s);
        raw_exec(db, "CREATE TRIGGER fail_fifth AFTER INSERT ON cluster_run_steps WHEN NEW.chain = 1 AND "
                     "NEW.position = 1 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;");
        QVERIFY(error_of<std::runtime_error>([&] { lib->import_cluster_run(out); }).find("injected failure") !=
                std::string::npos);
        QCOMPARE(q(dump_of(db)), q(stored));
    }

    void readOnlyAndOlderLibraries() {
        const fs::path out = dir_ / "ro-out";
        write_out(out, run_json(), summary_json());
        const fs::path db = dir_ / "ro.routepack";
        Library::open(db).reset();
        auto ro = Library::open(db, OpenMode::ReadOnly);
        QCOMPARE(q(error_of<LibraryReadOnly>([&] { ro->import_cluster_run(out); })),
                 q(db.string() + ": library is read-only (cannot write)"));
        // A version-3 library: read-only opens list no cluster run; a writable open migrates it.
        const fs::path v3 = dir_ / "v3.routepack";
        {
            std::string sql;
            for (const auto& m : detail::migrations())
                if (m.version <= 3) sql += m.sql;
            raw_exec(v3, sql + "PRAGMA application_id = " + std::to_string(detail::kApplicationId) +
                             "; PRAGMA user_version = 3;");
        }
        auto old = Library::open(v3, OpenMode::ReadOnly);
        QCOMPARE(old->schema_version(), 3);
        QVERIFY(old->cluster_runs().empty());
        QCOMPARE(q(error_of<InputError>([&] { old->cluster_run(1); })), q("no cluster run 1 in " + v3.string()));
        old.reset();
        auto lib = Library::open(v3, OpenMode::ReadWrite);
        QCOMPARE(lib->schema_version(), 7);
        QCOMPARE(lib->import_cluster_run(out).run.planned, std::size_t{5});
    }

    void badFieldsAreRefusedWithTheirPlace_data() {
        QTest::addColumn<QString>("file");  // "run" or "summary": which document is edited
        QTest::addColumn<QString>("edit");  // a JSON pointer
        QTest::addColumn<QString>("value"); // its new JSON value ("<remove>" removes the member)
        QTest::addColumn<QString>("error"); // after "<OUT>/<file>.json: "
        add_summary_header_rows();
        add_summary_line_rows();
        add_run_header_rows();
        add_step_order_rows();
        add_run_setting_rows();
    }

    void badFieldsAreRefusedWithTheirPlace() {
        QFETCH(QString, file);
        QFETCH(QString, edit);
        QFETCH(QString, value);
        QFETCH(QString, error);
        static int case_number = 0;
        const fs::path out = dir_ / ("bad-" + std::to_string(++case_number));
        json run = run_json(), summary = summary_json();
        json& doc = file == QStringLiteral("run") ? run : summary;
        const json::json_pointer ptr(edit.toStdString());
        if (value == QStringLiteral("<remove>"))
            doc[ptr.parent_pointer()].erase(ptr.back());
        else
            doc[ptr] = value == QStringLiteral("1e999") ? json(0) : json::parse(value.toStdString());
        write_out(out, run_json(), summary_json()); // every plan file, then the edited document
        std::string text = doc.dump(2) + "\n";
        if (value == QStringLiteral("1e999")) { // no JSON value holds it: written into the text
            const std::string from = "\"routepack_vs_baseline_pct\": 0";
            text.replace(text.find(from), from.size(), "\"routepack_vs_baseline_pct\": 1e999");
        }
        test::write_file(out / (file.toStdString() + ".json"), text);
        const fs::path db = dir_ / "bad.routepack";
        auto lib = Library::open(db);
        const std::string before = dump_of(db);
        const std::string canonical = fs::canonical(out).string();
        QString expected = q(canonical + "/" + file.toStdString() + ".json: ") + error;
        expected.replace(QStringLiteral("<OUT>"), q(canonical));
        QCOMPARE(q(error_of<InputError>([&] { lib->import_cluster_run(out); })), expected);
        QCOMPARE(q(dump_of(db)), q(before));
    }

    void missingFilesAndFolders() {
        auto lib = Library::open(dir_ / "missing.routepack");
        const fs::path none = dir_ / "no-such-out";
        QCOMPARE(q(error_of<InputError>([&] { lib->import_cluster_run(none); })),
                 q(none.string() + ": no such folder"));
        test::write_file(dir_ / "a-file", "x");
        QCOMPARE(q(error_of<InputError>([&] { lib->import_cluster_run(dir_ / "a-file"); })),
                 q((dir_ / "a-file").string() + ": is not a folder"));
        const fs::path out = dir_ / "half";
        fs::create_directories(out);
        const std::string c = fs::canonical(out).string();
        QCOMPARE(q(error_of<InputError>([&] { lib->import_cluster_run(out); })),
                 q(c + "/run.json: no such run description (run.json)"));
        test::write_file(out / "run.json", run_json().dump());
        QCOMPARE(q(error_of<InputError>([&] { lib->import_cluster_run(out); })),
                 q(c + "/summary.json: no such run summary (summary.json)"));
        test::write_file(out / "summary.json", "{\"format\": ");
        QCOMPARE(q(error_of<InputError>([&] { lib->import_cluster_run(out); })),
                 q(c + "/summary.json: malformed JSON at byte 12"));
        QVERIFY(lib->cluster_runs().empty());
    }
};

QTEST_GUILESS_MAIN(TstStorageClusterRuns)
#include "tst_storage_cluster_runs.moc"
