// Run planning in the studio, offscreen: five consecutive windows of a synthetic trace selected in the
// library tree (and, for the cancel, the whole trace) planned as one chained job; every step's plan
// and saved run against `routepack sweep --json` on a copy of the same library with the same seed and
// budgets; a cancel after the second step keeps the two finished runs and saves nothing else.
// Screenshots into $ROUTEPACK_SCREENSHOT_DIR or a temporary folder.
#include "core/model/model.h"
#include "core/model/window_select.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/synth/synth.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/exports.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/jobs/plan_jobs.h"
#include "views/jobs/stage_progress.h"
#include "views/library/library_tree_model.h"
#include "views/library/sample_pane.h"
#include "views/plan/comm_panel.h"
#include "views/plan/convergence_panel.h"
#include "views/plan/costs_panel.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_views.h"
#include "views/plan/row_heatmap_panel.h"
#include "views/run/run_compare.h"
#include "views/run/run_series.h"
#include "views/run/run_view.h"
#include "views/studio_app.h"
#include "views/studio_window.h"
#include "views/widgets/item_actions.h"

#include <QApplication>
#include <QBarSet>
#include <QChartView>
#include <QComboBox>
#include <QFileInfo>
#include <QImage>
#include <QItemSelectionModel>
#include <QLineSeries>
#include <QProcess>
#include <QProcessEnvironment>
#include <QScatterSeries>
#include <QTabWidget>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <set>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {
constexpr auto& q = test::qpath; // a path as QString
constexpr const char* kTopology = "synthetic-demo-ep8-dp4";
/// Two nodes of 4 GPUs with a migration cost model (a million parameters per expert, 1 ms per unit of U).
constexpr const char* kMigrationTopology =
    R"({"ep_ranks": 8, "experts_per_layer": 32, "dp_slots": 4, "edp_shards": [[0, 1], [2, 3]],
 "token_cap": 8192, "attention_stages": [{"name": "mla", "alpha": 27.0, "beta": 27.0}], "gpus_per_node": 4,
 "migration": {"expert_parameters": 1000000, "seconds_per_U": 0.001}})";

/// The budgets of both front ends: the CLI flags below give the same.
PlannerBudgets run_budgets(std::uint64_t seed, int steps) {
    PlannerBudgets b;
    b.annealing.levels = 4;
    b.annealing.steps = steps;
    b.seeding.candidates = 6;
    b.seeding.population = 4;
    b.workers = 1;
    b.seed = seed;
    return b;
}

/// `routepack ARGS` output (stdout); "" with the error as a warning when it exits non-zero.
std::string cli(const QStringList& args) {
    QProcess p;
    p.start(QStringLiteral(ROUTEPACK_CLI), args);
    p.waitForFinished(600000);
    if (p.exitCode() != 0) qWarning("%s", p.readAllStandardError().constData());
    return p.exitCode() == 0 ? p.readAllStandardOutput().toStdString() : std::string();
}

/// A plan JSON without its wall-clock fields (timings, seconds), which differ between two runs of one plan.
nlohmann::json untimed(const nlohmann::json& j) {
    if (j.is_array()) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& v : j)
            out.push_back(untimed(v));
        return out;
    }
    if (!j.is_object()) return j;
    static const std::set<std::string> timed = {"timings", "seconds", "elapsed_s",  "created",
                                                "wall_s",  "time_s",  "created_at", "planner_s"};
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items())
        if (!timed.count(k)) out[k] = untimed(v);
    return out;
}

} // namespace

class TestStudioRunPlan : public test::StudioTestBase {
    Q_OBJECT

    fs::path lib_; ///< trace "syn" cut into step-000..step-004, no runs

    /// A copy of the run-free library at `name` in the scratch folder.
    fs::path copyLibrary(const std::string& name) {
        const fs::path to = tmp_ / name;
        fs::copy_file(lib_, to, fs::copy_options::overwrite_existing);
        return to;
    }

    /// A studio on `file` with the synthetic topology and `budgets` in the editor.
    std::unique_ptr<StudioWindow> studio(const fs::path& file, const PlannerBudgets& budgets) {
        auto w = std::make_unique<StudioWindow>(options_);
        w->resize(1600, 1000);
        w->show();
        if (!QTest::qWaitForWindowExposed(w.get())) return nullptr;
        QString err;
        if (!w->openLibrary(q(file), false, &err)) return nullptr;
        ui::topologyEditor(*w)->setTopology(QString::fromLatin1(kTopology), known_topology(kTopology));
        ui::topologyEditor(*w)->setBudgets(budgets);
        return w;
    }

    /// Two nodes of 4 GPUs with a migration cost model: the communication and migration columns.
    fs::path migrationTopology() {
        const fs::path topo = tmp_ / "two-nodes.json";
        test::write_file(topo, kMigrationTopology);
        return topo;
    }

    /// `routepack sweep` of trace "syn" in `file` on `topology`, seed 3, 3 levels of 100 steps, one
    /// thread, with `extra` flags; its --json output (null when it failed).
    nlohmann::json sweep(const fs::path& file, const QString& topology, const QStringList& extra) {
        const std::string out =
            cli(QStringList{QStringLiteral("sweep"), QStringLiteral("--db"), q(file), QStringLiteral("--trace"),
                            QStringLiteral("syn"), QStringLiteral("--topology"), topology, QStringLiteral("--seed"),
                            QStringLiteral("3"), QStringLiteral("--levels"), QStringLiteral("3"),
                            QStringLiteral("--steps"), QStringLiteral("100"), QStringLiteral("--threads"),
                            QStringLiteral("1"), QStringLiteral("--json"), QStringLiteral("--quiet")} +
                extra);
        return out.empty() ? nlohmann::json() : nlohmann::json::parse(out);
    }

    /// A cluster run's OUT folder at `out`, written here from `routepack sweep --out` on a copy of
    /// the library (its plan files, their summary lines; step-002 failed reading) on the migration
    /// topology, chain "two-nodes"; the sweep's --json lines.
    nlohmann::json writeClusterOut(const fs::path& file, const fs::path& out) {
        const fs::path sweepOut = out.string() + "-sweep";
        const nlohmann::json sw = sweep(file, q(migrationTopology()), {QStringLiteral("--out"), q(sweepOut)});
        if (sw.size() != 5) return nlohmann::json();
        fs::remove_all(out);
        nlohmann::ordered_json run = {{"format", "routepack-cluster-run"},
                                      {"version", 1},
                                      {"trace", "syn-run"},
                                      {"model", "synthetic"},
                                      {"topologies", {{"two-nodes", nlohmann::json::parse(kMigrationTopology)}}},
                                      {"seed", 3},
                                      {"threads", 1},
                                      {"budgets", nlohmann::json::object()},
                                      {"previous", "identity"},
                                      {"read_format", "auto"}};
        nlohmann::ordered_json lines = nlohmann::ordered_json::array(), failed = nlohmann::ordered_json::array();
        for (std::size_t k = 0; k < 5; ++k) {
            const auto& l = sw[k];
            const std::string window = l["window"].get<std::string>();
            const std::string path = "/data/syn-run/" + window + ".jsonl";
            if (k == 2) {
                lines.push_back({{"topology", "two-nodes"},
                                 {"window", window},
                                 {"path", path},
                                 {"status", "failed"},
                                 {"error", window + ".jsonl: line 3: not JSON"},
                                 {"stage", "read"}});
                failed.push_back({{"topology", "two-nodes"},
                                  {"window", window},
                                  {"path", path},
                                  {"error", window + ".jsonl: line 3: not JSON"}});
                continue;
            }
            fs::create_directories(out / "two-nodes");
            fs::copy_file(sweepOut / l["plan_file"].get<std::string>(),
                          out / "two-nodes" / l["plan_file"].get<std::string>());
            nlohmann::ordered_json line = {{"topology", "two-nodes"},
                                           {"window", window},
                                           {"path", path},
                                           {"status", "planned"},
                                           {"error", nullptr}};
            for (const char* key : {"samples",
                                    "rows",
                                    "certified",
                                    "baseline",
                                    "reorder",
                                    "karmarkar_karp",
                                    "routepack",
                                    "grouter",
                                    "routepack+comm",
                                    "routepack_vs_baseline_pct",
                                    "routepack_vs_reorder_pct",
                                    "lower_bound",
                                    "planner_s",
                                    "time_limit_hit",
                                    "experts_moved",
                                    "migration_bytes",
                                    "materialization_seconds",
                                    "compute_seconds",
                                    "modelled_seconds",
                                    "plan_file"})
                line[key] = l.contains(key) ? l[key] : nlohmann::json(nullptr);
            line["worker"] = "tcp://127.0.0.1:4000" + std::to_string(k);
            line["task_seconds"] = 0.5;
            // The last planned step before (step 2 is the failed one), as the runner records it.
            const std::size_t from = k == 3 ? 1 : k - 1;
            line["previous_from"] = k == 0 ? std::string("identity") : sw[from]["window"].get<std::string>();
            lines.push_back(line);
        }
        test::write_file(out / "run.json", run.dump(2) + "\n");
        test::write_file(out / "summary.json", nlohmann::ordered_json({{"format", "routepack-cluster-summary"},
                                                                       {"version", 1},
                                                                       {"steps", 5},
                                                                       {"topologies", {"two-nodes"}},
                                                                       {"lines", lines},
                                                                       {"failed", failed}})
                                                       .dump(2) +
                                                   "\n");
        return sw;
    }

private Q_SLOTS:
    void initTestCase() {
        initStudioTest(QStringLiteral("tst_studio_runplan"), QStringLiteral("studio-runplan"));
        SynthConfig c;
        c.groups = 6;
        c.group_size = 8;
        c.seed = 5;
        write_synth(c, TraceFormat::VLLM, tmp_ / "syn");
        lib_ = tmp_ / "base.routepack";
        auto lib = storage::Library::open(lib_);
        ImportOptions o;
        o.model = synth_model(c);
        lib->import_trace("syn", {tmp_ / "syn"}, o);
        const auto parts = split_consecutive(lib->samples("syn"), 10, "syn");
        QCOMPARE(parts.size(), std::size_t(5)); // 4 x 10 + 8
        const auto names = split_window_names("step", parts.size());
        std::vector<storage::Library::WindowSpec> specs;
        for (std::size_t k = 0; k < parts.size(); ++k)
            specs.push_back({names[k], parts[k].ids, parts[k].definition});
        lib->create_windows("syn", specs);
    }

    void cleanupTestCase() {
        clearStudioSettings();
        fs::remove_all(tmp_);
    }

    void fiveWindowsEqualSweep() {
        const fs::path cliLib = copyLibrary("cli.routepack");
        const std::string out = cli({QStringLiteral("sweep"),
                                     QStringLiteral("--db"),
                                     q(cliLib),
                                     QStringLiteral("--trace"),
                                     QStringLiteral("syn"),
                                     QStringLiteral("--topology"),
                                     QString::fromLatin1(kTopology),
                                     QStringLiteral("--seed"),
                                     QStringLiteral("17"),
                                     QStringLiteral("--levels"),
                                     QStringLiteral("4"),
                                     QStringLiteral("--steps"),
                                     QStringLiteral("150"),
                                     QStringLiteral("--seeds"),
                                     QStringLiteral("6"),
                                     QStringLiteral("--population"),
                                     QStringLiteral("4"),
                                     QStringLiteral("--threads"),
                                     QStringLiteral("1"),
                                     QStringLiteral("--json"),
                                     QStringLiteral("--quiet")});
        QVERIFY(!out.empty());
        const nlohmann::json sweep = nlohmann::json::parse(out);
        QCOMPARE(sweep.size(), std::size_t(5));

        const fs::path file = copyLibrary("studio.routepack");
        auto w = studio(file, run_budgets(17, 150));
        QVERIFY(w);
        // A window shown first: its samples stay shown through the run (never "Loading" again).
        QVERIFY(w->selectWindow(QStringLiteral("syn"), QStringLiteral("step-004")));
        const QString shown = QStringLiteral("Window step-004 of trace syn: 8 samples, ");
        QTRY_VERIFY_WITH_TIMEOUT(ui::samplePane(*w)->headingText().startsWith(shown), 30000);
        // The five windows selected in the tree, in reverse order (the run is in natural name order).
        QTreeView* tv = ui::libraryView(*w);
        auto* sel = tv->selectionModel();
        sel->clearSelection();
        for (int k = 4; k >= 0; --k)
            sel->select(ui::libraryModel(*w)->windowIndex(QStringLiteral("syn"), QStringLiteral("step-00%1").arg(k)),
                        QItemSelectionModel::Select | QItemSelectionModel::Rows);
        std::optional<RunPlanResult> result;
        std::vector<int> steps;
        std::vector<double> overall;
        connect(ui::jobs(*w), &PlanJobQueue::runFinished, this, [&](const RunPlanResult& r) { result = r; });
        connect(ui::jobs(*w), &PlanJobQueue::runStepFinished, this,
                [&](quint64, int index, int count, const QString&, qint64, double) {
                    QCOMPARE(count, 5);
                    steps.push_back(index);
                });
        connect(ui::jobs(*w), &PlanJobQueue::runProgress, this,
                [&](quint64, int, int, const QString&, double, double all) { overall.push_back(all); });
        const quint64 job = w->planSelectedRun();
        QVERIFY2(job > 0, qPrintable(w->statusText()));
        QTRY_VERIFY_WITH_TIMEOUT(result.has_value(), 300000);
        QCOMPARE(result->job, job);
        QVERIFY(!result->cancelled);
        QVERIFY2(result->error.isEmpty(), qPrintable(result->error));
        QCOMPARE(steps, std::vector<int>({0, 1, 2, 3, 4}));
        QVERIFY(!overall.empty());
        QVERIFY(std::is_sorted(overall.begin(), overall.end()));
        QVERIFY(overall.back() <= 1.0);
        QCOMPARE(result->plans.size(), std::size_t(5));
        QVERIFY2(w->statusText().contains(QStringLiteral("5 of 5 windows planned")), qPrintable(w->statusText()));
        QTRY_VERIFY_WITH_TIMEOUT(ui::samplePane(*w)->trace() == QStringLiteral("syn") &&
                                     !ui::samplePane(*w)->headingText().startsWith(QStringLiteral("Loading")),
                                 30000);
        QVERIFY2(ui::samplePane(*w)->headingText().startsWith(shown), qPrintable(ui::samplePane(*w)->headingText()));

        auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
        auto cliRuns = storage::Library::open(cliLib, storage::OpenMode::ReadOnly);
        for (std::size_t k = 0; k < 5; ++k) {
            const auto& row = sweep[k];
            const PlanResult& p = *result->plans[k];
            QCOMPARE(p.window_name, row["window"].get<std::string>());
            QCOMPARE(p.rows.rows, row["rows"].get<int>());
            QCOMPARE(p.baseline.metrics.score.max_u, row["baseline"].get<double>());
            QCOMPARE(p.reorder.metrics.score.max_u, row["reorder"].get<double>());
            QCOMPARE(p.karmarkar_karp.metrics.score.max_u, row["karmarkar_karp"].get<double>());
            QCOMPARE(p.routepack.metrics.score.max_u, row["routepack"].get<double>());
            QCOMPARE(p.migration.figures.moved, row["experts_moved"].get<std::int64_t>());
            // The saved runs: the same plan file as the sweep's (rows, placement, layouts, scores).
            const qint64 run = result->runIds[k];
            QVERIFY(run > 0);
            QCOMPARE(lib->run(run).window, row["window"].get<std::string>());
            QCOMPARE(lib->run(run).status, std::string("finished"));
            const nlohmann::json mine = untimed(nlohmann::json::parse(lib->run_plan_json(run)));
            const nlohmann::json theirs =
                untimed(nlohmann::json::parse(cliRuns->run_plan_json(row["run"].get<std::int64_t>())));
            QVERIFY2(mine == theirs, row["window"].get<std::string>().c_str());
            QCOMPARE(parse_plan(lib->run_plan_json(run), "studio run").row_count, p.rows.rows);
        }
        // The five saved runs are one whole run of the library, as the studio planned it.
        QVERIFY(result->wholeRunId > 0);
        const storage::WholeRunEntry whole = lib->whole_run(result->wholeRunId);
        QVERIFY(whole.source == storage::WholeRunSource::Studio);
        QCOMPARE(whole.runs, std::vector<std::int64_t>(result->runIds.begin(), result->runIds.end()));
        QCOMPARE(whole.trace, std::string("syn"));
        QCOMPARE(whole.settings.seed, result->plans[0]->budgets.seed);
        QCOMPARE(planner_budgets_to_json(whole.settings.budgets),
                 planner_budgets_to_json(lib->run(result->runIds[0]).budgets));
        // The Run view shows the five steps (it read them as they were saved).
        RunView* rv = ui::runView(*w);
        QCOMPARE(ui::resultTabs(*w)->currentWidget(), static_cast<QWidget*>(rv));
        w->selectTrace(QStringLiteral("syn"));
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->currentSeries() && rv->currentSeries()->steps.size() == 5,
                                 30000);
        for (std::size_t k = 0; k < 5; ++k)
            QCOMPARE(rv->currentSeries()->steps[k].cost[Method::RoutePack], sweep[k]["routepack"].get<double>());
        shot(w.get(), QStringLiteral("studio-runplan-finished"));
    }

    void exportedCsvEqualsSweep_data() {
        QTest::addColumn<QString>("topology");
        QTest::newRow("one node") << QString::fromLatin1(kTopology);
        QTest::newRow("two nodes, migration") << q(migrationTopology());
    }

    void exportedCsvEqualsSweep() {
        // `routepack sweep --out` writes sweep.csv; the Run view of the runs it saved exports the same bytes.
        QFETCH(QString, topology);
        const std::string tag = QTest::currentDataTag();
        const fs::path file = copyLibrary("export-" + std::to_string(tag.size()) + ".routepack");
        const fs::path out = tmp_ / ("sweep-out-" + std::to_string(tag.size()));
        QVERIFY(!cli({QStringLiteral("sweep"), QStringLiteral("--db"), q(file), QStringLiteral("--trace"),
                      QStringLiteral("syn"), QStringLiteral("--topology"), topology, QStringLiteral("--seed"),
                      QStringLiteral("3"), QStringLiteral("--levels"), QStringLiteral("3"), QStringLiteral("--steps"),
                      QStringLiteral("100"), QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--out"),
                      q(out), QStringLiteral("--quiet")})
                     .empty());
        auto w = studio(file, run_budgets(3, 100));
        QVERIFY(w);
        QVERIFY(w->selectTrace(QStringLiteral("syn")));
        RunView* rv = ui::runView(*w);
        ui::resultTabs(*w)->setCurrentWidget(rv);
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->currentSeries(), 30000);
        QCOMPARE(rv->currentSeries()->table.size(), std::size_t(5));
        const QString csv = q(tmp_ / "studio-sweep.csv");
        const ExportResult r = writeRunCsv(*rv, csv);
        QVERIFY2(!r.error, qPrintable(r.message));
        QCOMPARE(r.message, QStringLiteral("Run steps written to %1.").arg(csv));
        const std::string expected = test::read_file(out / "sweep.csv");
        QVERIFY(expected.size() > 400);
        if (tag != "one node") // the migration columns are filled from the second step on
            QVERIFY2(expected.find(",,,,,") == std::string::npos, expected.c_str());
        QCOMPARE(test::read_file(csv.toStdString()), expected);
        // Ctrl+E on the Run tab exports the same table: the save question (askSaveFile) gets the file name.
        const QString keyed = q(tmp_ / ("ctrl-e-" + std::to_string(tag.size()) + ".csv"));
        QFile::remove(keyed);
        QString asked;
        setSaveFileAskerForTesting([&](QWidget*, const QString& title, const QString&, const QString&, QString*) {
            asked = title;
            return keyed;
        });
        w->activateWindow();
        QTest::keyClick(w.get(), Qt::Key_E, Qt::ControlModifier);
        setSaveFileAskerForTesting({});
        QCOMPARE(asked, QStringLiteral("Export run steps"));
        QCOMPARE(test::read_file(keyed.toStdString()), expected);
        QVERIFY2(w->statusText().contains(QStringLiteral("Run steps written to %1.").arg(keyed)),
                 qPrintable(w->statusText()));
        if (tag != "one node") {
            // What applying the run costs: in the step's tooltip and the heading, as sweep's columns.
            const SweepLine& l = rv->currentSeries()->table[1];
            QVERIFY(l.compute_s && l.materialization_s);
            QVERIFY2(rv->stepToolTip(1).contains(QStringLiteral("modelled time: compute %1 s + materialization %2 s")
                                                     .arg(*l.compute_s, 0, 'f', 4)
                                                     .arg(*l.materialization_s, 0, 'f', 4)),
                     qPrintable(rv->stepToolTip(1)));
            QVERIFY2(rv->headingText().contains(QStringLiteral("applying the run: %1 experts moved")
                                                    .arg(rv->currentSeries()->table[4].moves_total)),
                     qPrintable(rv->headingText()));
        }
        // Every chart as PNG and SVG; what applying the run costs only with a cost model, and the
        // frontier once one is shown.
        QCOMPARE(RunView::chartNames().size(), 5);
        for (const QString& name : RunView::chartNames()) {
            const bool apply = name == QStringLiteral("run-apply");
            if ((apply && tag == "one node") || name == QStringLiteral("run-frontier")) {
                const ExportResult none = writeRunChart(*rv, name, q(tmp_ / "none.png"));
                QVERIFY(none.error);
                QCOMPARE(none.message, apply ? QStringLiteral("the run shown carries no migration cost model")
                                             : QStringLiteral("no frontier is shown: pick a step and Compute"));
                continue;
            }
            for (const char* suffix : {".png", ".svg"}) {
                const QString f = q(tmp_ / (name.toStdString() + suffix));
                const ExportResult c = writeRunChart(*rv, name, f);
                QVERIFY2(!c.error, qPrintable(c.message));
                QVERIFY(QFileInfo(f).size() > 1000);
            }
            QVERIFY(!QImage(q(tmp_ / (name.toStdString() + ".png"))).isNull());
        }
        const ExportResult bad = writeRunChart(*rv, QStringLiteral("pie"), q(tmp_ / "pie.png"));
        QVERIFY(bad.error);
        QCOMPARE(bad.message, QStringLiteral("no Run view chart named pie"));
        shot(w.get(), QStringLiteral("studio-runplan-export-%1").arg(tag.size()));
    }

    void applyChartAndFrontierEqualSweep() {
        // `routepack sweep --frontier` on the two-node topology with a cost model: every step's compute and
        // materialization seconds and, for one step, max_g U at every move budget. The Run view of the
        // runs it saved shows the same seconds stacked per step, and plans the same frontier for that step.
        const fs::path file = copyLibrary("frontier.routepack");
        const nlohmann::json sw = sweep(file, q(migrationTopology()), {QStringLiteral("--frontier")});
        QCOMPARE(sw.size(), std::size_t(5));
        auto w = studio(file, run_budgets(3, 100));
        QVERIFY(w);
        QVERIFY(w->selectTrace(QStringLiteral("syn")));
        RunView* rv = ui::runView(*w);
        ui::resultTabs(*w)->setCurrentWidget(rv);
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->currentSeries(), 30000);
        QVERIFY(has_migration_costs(*rv->currentSeries()));
        QVERIFY(!ui::applyChartView(rv)->isHidden());
        ui::chartTabs(rv)->setCurrentIndex(1);
        QVERIFY(ui::applyChartView(rv)->isVisible());
        QCOMPARE(ui::computeSet(rv)->count(), 5);
        QCOMPARE(ui::materializationSet(rv)->count(), 5);
        double materialization = 0;
        for (int k = 0; k < 5; ++k) {
            const auto& line = sw[static_cast<std::size_t>(k)];
            QCOMPARE(ui::computeSet(rv)->at(k), line["compute_seconds"].get<double>());
            QCOMPARE(ui::materializationSet(rv)->at(k), line["materialization_seconds"].get<double>());
            // Compute is seconds_per_U x routepack's max_g U (1 ms per unit here).
            QCOMPARE(ui::computeSet(rv)->at(k), 0.001 * line["routepack"].get<double>());
            materialization += ui::materializationSet(rv)->at(k);
        }
        QVERIFY2(materialization > 0, "no step moved an expert: the stacked chart shows compute alone");
        // The first step starts from the identity; the frontier box offers every step, the second first.
        QCOMPARE(rv->frontierStep(), 1);
        QVERIFY(!rv->frontier());
        const int k = 2;
        QSignalSpy arrived(rv, &RunView::frontierUpdated);
        QVERIFY(rv->computeFrontier(k));
        QVERIFY(ui::isFrontierLoading(rv));
        QVERIFY2(rv->frontierNote().startsWith(QStringLiteral("Planning the step")), qPrintable(rv->frontierNote()));
        QTRY_COMPARE_WITH_TIMEOUT(arrived.count(), 1, 120000);
        const StepFrontier* f = rv->frontier();
        QVERIFY(f);
        QVERIFY2(f->error.empty(), f->error.c_str());
        QCOMPARE(f->step, k);
        QCOMPARE(f->window, std::string("step-002"));
        const nlohmann::json& theirs = sw[static_cast<std::size_t>(k)]["frontier"];
        QCOMPARE(f->points.size(), theirs.size());
        QCOMPARE(f->points.size(), std::size(kFrontierFractions));
        QCOMPARE(ui::frontierLine(rv)->count(), static_cast<int>(theirs.size()));
        for (std::size_t i = 0; i < theirs.size(); ++i) {
            QCOMPARE(f->points[i].max_moves, theirs[i]["max_moves"].get<std::int64_t>());
            QCOMPARE(f->points[i].moves, theirs[i]["moves"].get<std::int64_t>());
            QCOMPARE(f->points[i].max_u, theirs[i]["max_u"].get<double>());
            QCOMPARE(
                ui::frontierLine(rv)->at(static_cast<int>(i)),
                QPointF(static_cast<double>(theirs[i]["moves"].get<std::int64_t>()), theirs[i]["max_u"].get<double>()));
        }
        // Budget 0 keeps the previous placement: no move. The saved plan is the step's point.
        QCOMPARE(f->points.front().moves, std::int64_t(0));
        QCOMPARE(f->saved_max_u, sw[static_cast<std::size_t>(k)]["routepack"].get<double>());
        QCOMPARE(f->saved_moves, sw[static_cast<std::size_t>(k)]["experts_moved"].get<std::int64_t>());
        QCOMPARE(ui::frontierSaved(rv)->at(0), QPointF(static_cast<double>(f->saved_moves), f->saved_max_u));
        QCOMPARE(f->experts, rv->currentSeries()->slots);
        QVERIFY2(rv->frontierNote().contains(QStringLiteral("full re-placement %1 (%2 moved)")
                                                 .arg(f->points.back().max_u, 0, 'f', 4)
                                                 .arg(f->points.back().moves)),
                 qPrintable(rv->frontierNote()));
        for (const char* suffix : {".png", ".svg"}) {
            const QString out = q(tmp_ / (std::string("frontier") + suffix));
            const ExportResult r = writeRunChart(*rv, QStringLiteral("run-frontier"), out);
            QVERIFY2(!r.error, qPrintable(r.message));
            QVERIFY(QFileInfo(out).size() > 1000);
        }
        shot(w.get(), QStringLiteral("studio-run-apply-1600x1000"));
        w->resize(1366, 768);
        QTest::qWait(50);
        QCOMPARE(w->width(), 1366);
        shot(w.get(), QStringLiteral("studio-run-apply-1366x768"));
    }

    void clusterRunShownLikeSavedRuns() {
        // A cluster run's OUT folder, written here from `routepack sweep --out` (its plan files, their
        // summary lines; step-002 failed reading), imported with `routepack import-run`: the tree lists
        // it and the Run view shows its chain with the plans' numbers.
        const fs::path file = copyLibrary("cluster.routepack");
        const fs::path out = tmp_ / "cluster-out";
        const nlohmann::json sw = writeClusterOut(copyLibrary("cluster-sweep.routepack"), out);
        QCOMPARE(sw.size(), std::size_t(5));
        QVERIFY(!cli({QStringLiteral("import-run"), q(out), QStringLiteral("--db"), q(file)}).empty());
        // Headless: the Run view of the cluster run as CSV and PNG; an unknown one is named.
        HeadlessOutput shots;
        QString err;
        QVERIFY2(runHeadlessClusterRun(q(tmp_ / "cluster-shots"), q(file), 1, &shots, &err), qPrintable(err));
        QCOMPARE(shots.run, qint64(1));
        QCOMPARE(shots.files, (QStringList{QStringLiteral("run.csv"), QStringLiteral("run-costs.png"),
                                           QStringLiteral("run-gains.png"), QStringLiteral("run-churn.png"),
                                           QStringLiteral("run-apply.png")}));
        for (const QString& f : shots.files.mid(1)) {
            const QImage img(q(tmp_ / "cluster-shots") + QLatin1Char('/') + f);
            QVERIFY2(img.width() > 400 && img.height() > 200, qPrintable(f));
        }
        QVERIFY(!runHeadlessClusterRun(q(tmp_ / "cluster-shots-9"), q(file), 9, &shots, &err));
        QCOMPARE(err, QStringLiteral("no cluster run 9 in ") + q(file));
        QVERIFY(!fs::exists(tmp_ / "cluster-shots-9"));

        auto w = studio(file, run_budgets(3, 100));
        QVERIFY(w);
        const QModelIndex node = ui::libraryModel(*w)->clusterRunIndex(1);
        QVERIFY(node.isValid());
        QCOMPARE(node.data().toString(), QStringLiteral("cluster run 1: syn-run"));
        QCOMPARE(node.sibling(node.row(), 1).data().toString(),
                 QStringLiteral("5 steps x 1 chain(s), 4 planned, 1 failed"));
        ui::libraryView(*w)->setCurrentIndex(node);
        RunView* rv = ui::runView(*w);
        QCOMPARE(ui::resultTabs(*w)->currentWidget(), static_cast<QWidget*>(rv));
        QCOMPARE(rv->clusterRun(), qint64(1));
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->currentSeries(), 30000);
        const RunSeries& s = *rv->currentSeries();
        QCOMPARE(s.topology, std::string("two-nodes"));
        QCOMPARE(s.steps.size(), std::size_t(4));
        QCOMPARE(s.failed, std::vector<std::string>({"step-002 (read): step-002.jsonl: line 3: not JSON"}));
        const std::size_t from[] = {0, 1, 3, 4};
        for (std::size_t i = 0; i < 4; ++i) {
            const auto& l = sw[from[i]];
            QCOMPARE(s.steps[i].window, l["window"].get<std::string>());
            QCOMPARE(s.steps[i].run, std::int64_t(0));
            QCOMPARE(s.steps[i].cost[Method::Baseline], l["baseline"].get<double>());
            QCOMPARE(s.steps[i].cost[Method::RoutePack], l["routepack"].get<double>());
            QCOMPARE(s.table[i].moves, l["experts_moved"].get<std::int64_t>());
            QCOMPARE(ui::computeSet(rv)->at(static_cast<int>(i)), l["compute_seconds"].get<double>());
            QCOMPARE(ui::materializationSet(rv)->at(static_cast<int>(i)), l["materialization_seconds"].get<double>());
        }
        QCOMPARE(test::read_file(tmp_ / "cluster-shots" / "run.csv"), rv->tableCsv());
        QVERIFY2(rv->headingText().contains(QStringLiteral("<b>Cluster run 1</b> (syn-run, ")),
                 qPrintable(rv->headingText()));
        QVERIFY2(rv->headingText().contains(QStringLiteral("1 failed step(s): step-002 (read)")),
                 qPrintable(rv->headingText()));
        // A step opens its plan file in the plan views; this library holds the step's samples (trace
        // syn, which the sweep planned), so with their counts: every view, the plan's own numbers.
        QSignalSpy opened(rv, &RunView::clusterStepActivated);
        QVERIFY(rv->activateStep(2));
        QCOMPARE(opened.count(), 1);
        const QString planFile = q(fs::canonical(out) / "two-nodes" / "step-003.plan.json");
        QCOMPARE(opened.at(0).at(0).toString(), planFile);
        QCOMPARE(opened.at(0).at(1).toString(), QStringLiteral("/data/syn-run/step-003.jsonl"));
        QTRY_VERIFY_WITH_TIMEOUT(ui::planView(*w)->plan() != nullptr, 30000);
        QCOMPARE(ui::resultTabs(*w)->currentWidget(), static_cast<QWidget*>(ui::planView(*w)));
        QCOMPARE(
            w->statusText(),
            QStringLiteral("Step step-003 of cluster run 1: plan %1, with the counts of trace syn.").arg(planFile));
        QVERIFY(ui::planView(*w)->window() != nullptr);
        QVERIFY(ui::planView(*w)->countsNote().isEmpty());
        // The centre pane shows the step's own samples, not the window shown before.
        const std::size_t stepSamples = ui::planView(*w)->window()->samples.size();
        qint64 stepTokens = 0;
        for (const auto& sample : ui::planView(*w)->window()->samples)
            stepTokens += sample.length;
        QTRY_COMPARE_WITH_TIMEOUT(
            ui::samplePane(*w)->headingText(),
            QStringLiteral("Step step-003 of cluster run 1 (samples of trace syn): %1 samples, %2 tokens")
                .arg(stepSamples)
                .arg(stepTokens),
            30000);
        QCOMPARE(ui::sampleModel(*w)->rowCount(), static_cast<int>(stepSamples));
        QCOMPARE(ui::sampleModel(*w)->sampleId(0).toStdString(), ui::planView(*w)->window()->samples[0].id);
        QCOMPARE(ui::planView(*w)->plan()->routepack.metrics.score.max_u, sw[3]["routepack"].get<double>());
        QCOMPARE(ui::planView(*w)->plan()->baseline.metrics.score.max_u, sw[3]["baseline"].get<double>());
        QVERIFY(!ui::importStepButton(*w)->isVisible());
        ui::resultTabs(*w)->setCurrentWidget(rv);
        // Its frontier would plan the step again: the counts are in the step's file.
        QSignalSpy arrived(rv, &RunView::frontierUpdated);
        QVERIFY(rv->computeFrontier(1));
        QTRY_COMPARE_WITH_TIMEOUT(arrived.count(), 1, 30000);
        QCOMPARE(QString::fromStdString(rv->frontier()->error),
                 QStringLiteral("it plans the step again from its counts, kept in the step's file "
                                "(/data/syn-run/step-001.jsonl): import it (routepack import) first"));
        shot(w.get(), QStringLiteral("studio-run-cluster"));
        // Back to the trace (no saved runs in this library): its own state again, no chain of the cluster run.
        QVERIFY(w->selectTrace(QStringLiteral("syn")));
        // The sample table too: the whole trace again, not the step's samples of it.
        QTRY_VERIFY_WITH_TIMEOUT(ui::samplePane(*w)->headingText().startsWith(QStringLiteral("Trace syn: ")), 30000);
        QVERIFY(ui::sampleModel(*w)->rowCount() > static_cast<int>(stepSamples));
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->clusterRun() == 0, 30000);
        QVERIFY(rv->isEmptyState());
        QVERIFY2(rv->emptyText().startsWith(QStringLiteral("Trace syn has saved runs in 0 of its 5 windows")),
                 qPrintable(rv->emptyText()));
    }

    void clusterStepWithoutCountsOffersItsImport() {
        // A library that holds none of the step's samples: the plan opens from its file alone (the
        // grid shows its rows; the views that need counts say so), and Import step… imports the
        // step's entry, after which the step opens with its counts.
        const fs::path out = tmp_ / "cluster-out-nocounts";
        const nlohmann::json sw = writeClusterOut(copyLibrary("cluster-sweep-2.routepack"), out);
        QCOMPARE(sw.size(), std::size_t(5));
        // Step step-003's entry is a real folder holding its samples (the synthetic trace's files).
        std::string summary = test::read_file(out / "summary.json");
        const std::string fake = "/data/syn-run/step-003.jsonl", real = (tmp_ / "syn").string();
        summary.replace(summary.find(fake), fake.size(), real);
        test::write_file(out / "summary.json", summary);
        const fs::path file = tmp_ / "no-counts.routepack";
        fs::remove(file);
        storage::Library::open(file); // an empty library
        QVERIFY(!cli({QStringLiteral("import-run"), q(out), QStringLiteral("--db"), q(file)}).empty());

        auto w = studio(file, run_budgets(3, 100));
        QVERIFY(w);
        ui::libraryView(*w)->setCurrentIndex(ui::libraryModel(*w)->clusterRunIndex(1));
        RunView* rv = ui::runView(*w);
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->currentSeries(), 30000);
        QVERIFY(rv->activateStep(2));
        QTRY_VERIFY_WITH_TIMEOUT(ui::planView(*w)->plan() != nullptr, 30000);
        PlanView* pv = ui::planView(*w);
        const auto plan = pv->plan();
        const QString planFile = q(fs::canonical(out) / "two-nodes" / "step-003.plan.json");
        QCOMPARE(w->statusText(),
                 QStringLiteral("Step step-003 of cluster run 1: plan %1, without counts (no trace of the library "
                                "holds the step's %2 samples).")
                     .arg(planFile)
                     .arg(sw[3]["samples"].get<int>()));
        QVERIFY(pv->window() == nullptr);
        QCOMPARE(ui::samplePane(*w)->headingText(),
                 QStringLiteral("Step step-003 of cluster run 1: the library holds no counts of its samples (Import "
                                "step… imports them)."));
        QCOMPARE(ui::sampleModel(*w)->rowCount(), 0);
        const QString note = pv->countsNote();
        QCOMPARE(note, QStringLiteral("Step step-003 of cluster run 1 was read from its plan file %1. This view "
                                      "needs the step's routing counts, which the library does not hold (no trace "
                                      "of the library holds the step's %2 samples): Import step… (top right) "
                                      "imports %3; the step then opens with every view.")
                           .arg(planFile)
                           .arg(sw[3]["samples"].get<int>())
                           .arg(q(tmp_ / "syn")));
        // The file's own numbers; the baselines keep their metrics, not their rows.
        QCOMPARE(plan->routepack.metrics.score.max_u, sw[3]["routepack"].get<double>());
        QCOMPARE(plan->baseline.metrics.score.max_u, sw[3]["baseline"].get<double>());
        QCOMPARE(plan->rows.rows, sw[3]["rows"].get<int>());
        QCOMPARE(plan->samples.size(), sw[3]["samples"].get<std::size_t>());
        QCOMPARE(plan->baseline.layout.rows, 0);
        // The grid lists the methods whose rows the file holds, and shows routepack's.
        QComboBox* methods = pv->gridPanel()->findChild<QComboBox*>();
        QVERIFY(methods);
        QStringList listed;
        for (int i = 0; i < methods->count(); ++i)
            listed << methods->itemText(i);
        QCOMPARE(listed, QStringList({QStringLiteral("RoutePack"), QStringLiteral("Grouter"),
                                      QStringLiteral("RoutePack+comm")}));
        QVERIFY2(pv->gridPanel()->summaryText().startsWith(
                     QStringLiteral("RoutePack: R = %1 rows").arg(sw[3]["rows"].get<int>())),
                 qPrintable(pv->gridPanel()->summaryText()));
        // Every view that needs the counts says so, word for word.
        QCOMPARE(ui::epHeatmapPanel(pv)->summaryText(), note);
        for (HeatmapWidget* h : ui::epHeatmapPanel(pv)->findChildren<HeatmapWidget*>())
            QCOMPARE(ui::emptyText(h), QStringLiteral("No routing counts for this plan"));
        QCOMPARE(ui::emptyText(ui::map(ui::rowHeatmapPanel(pv))), note);
        QCOMPARE(ui::costsPanel(pv)->headingText(), note);
        QCOMPARE(ui::commPanel(pv)->headingText(), note);
        QCOMPARE(ui::convergencePanel(pv)->summaryText(),
                 QStringLiteral("The plan file holds no annealing levels (they are in a library's saved run only)."));
        QVERIFY(ui::importStepButton(*w)->isVisible());
        shot(w.get(), QStringLiteral("studio-cluster-step-without-counts"));

        // Import step… with a real click: the dialog holds the step's entry, its model and a name.
        QTest::mouseClick(ui::importStepButton(*w), Qt::LeftButton);
        ImportDialog* dlg = w->findChild<ImportDialog*>();
        QVERIFY(dlg && dlg->isVisible());
        QCOMPARE(dlg->inputs(), QStringList({q(tmp_ / "syn")}));
        QCOMPARE(dlg->traceName(), QStringLiteral("syn-step-003"));
        QCOMPARE(dlg->modelSource(), ImportDialog::Fields);
        QVERIFY(dlg->startImport());
        // Once imported, the step opens again with its counts: every view, the same plan.
        QTRY_VERIFY_WITH_TIMEOUT(pv->window() != nullptr, 60000);
        QVERIFY(pv->countsNote().isEmpty());
        QVERIFY(!ui::importStepButton(*w)->isVisible());
        QCOMPARE(pv->plan()->trace_name, std::string("syn-step-003"));
        QCOMPARE(pv->plan()->routepack.metrics.score.max_u, sw[3]["routepack"].get<double>());
        QCOMPARE(pv->plan()->routepack.layout, plan->routepack.layout);
        QCOMPARE(w->statusText(),
                 QStringLiteral("Step step-003 of cluster run 1: plan %1, with the counts of trace syn-step-003.")
                     .arg(planFile));
        QVERIFY(ui::costsPanel(pv)->headingText() != note);
        // The cluster run again: no plan goes with it; its step now opens with the imported counts.
        ui::libraryView(*w)->setCurrentIndex(ui::libraryModel(*w)->clusterRunIndex(1));
        QVERIFY(pv->plan() == nullptr);
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->currentSeries(), 30000);
        QVERIFY(rv->activateStep(2));
        QTRY_VERIFY_WITH_TIMEOUT(pv->plan() != nullptr, 30000);
        QVERIFY(pv->window() != nullptr);
        QVERIFY(!ui::importStepButton(*w)->isVisible());
    }

    void docCommandsRun() {
        // Every command of docs/studio-runs.md, run as written in a folder holding what they name: the
        // library (trace "syn"), the topology file and a cluster run's OUT.
        const fs::path dir = tmp_ / "doc";
        fs::remove_all(dir);
        fs::create_directories(dir);
        fs::copy_file(lib_, dir / "runs.routepack");
        test::write_file(dir / "two-nodes.json", kMigrationTopology);
        QCOMPARE(writeClusterOut(copyLibrary("doc-sweep.routepack"), dir / "cluster-out").size(), std::size_t(5));
        const QString doc =
            QString::fromStdString(test::read_file(fs::path(ROUTEPACK_SOURCE_DIR) / "docs/studio-runs.md"));
        QStringList commands;
        for (const QString& block : doc.split(QStringLiteral("```sh\n")).mid(1))
            for (const QString& line : block.section(QStringLiteral("```"), 0, 0).split(QLatin1Char('\n')))
                if (!line.trimmed().isEmpty()) commands << line.trimmed();
        QCOMPARE(commands.size(), 4);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        env.insert(QStringLiteral("PATH"), QFileInfo(QStringLiteral(ROUTEPACK_CLI)).absolutePath() + QLatin1Char(':') +
                                               QFileInfo(QStringLiteral(ROUTEPACK_STUDIO)).absolutePath() +
                                               QLatin1Char(':') + env.value(QStringLiteral("PATH")));
        QStringList outputs;
        for (const QString& c : commands) {
            QProcess p;
            p.setProcessEnvironment(env);
            p.setWorkingDirectory(q(dir));
            p.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), c});
            QVERIFY(p.waitForFinished(300000));
            QVERIFY2(p.exitCode() == 0,
                     qPrintable(c + QStringLiteral(": ") + QString::fromUtf8(p.readAllStandardError())));
            outputs << QString::fromUtf8(p.readAllStandardOutput());
        }
        const nlohmann::json sw = nlohmann::json::parse(outputs[0].toStdString());
        QCOMPARE(sw.size(), std::size_t(5));
        QCOMPARE(sw[2]["frontier"].size(), std::size(kFrontierFractions));
        auto lib = storage::Library::open(dir / "runs.routepack", storage::OpenMode::ReadOnly);
        QCOMPARE(lib->cluster_runs().size(), std::size_t(1));
        QCOMPARE(lib->cluster_run_steps(1).size(), std::size_t(5));
        QCOMPARE(test::read_file(dir / "shots" / "plan.json"), lib->run_plan_json(1) + "\n");
        // The sweep (whole run 1) beside the cluster run's chain (whole run 2), compared.
        QCOMPARE(lib->whole_runs().size(), std::size_t(2));
        QCOMPARE(outputs[2].section(QLatin1Char('\n'), 0, 0),
                 QStringLiteral("routepack-studio: whole runs 1,2 compared in ") + q(dir / "compared"));
        QCOMPARE(test::read_file(dir / "compared" / "compare-runs.csv"),
                 comparison_csv(compare_whole_runs(*lib, {1, 2})));
    }

    void cancelledRunTellsTheTruthAboutCommunication() {
        // A two-node plan of a window with per-token routes, cancelled before its communication stage:
        // the figures were not counted, and the trace needs no re-import.
        auto lib = storage::Library::open(lib_, storage::OpenMode::ReadOnly);
        PlanInput in;
        in.window = lib->load_window("syn", "step-001", storage::RouteLoading::Load);
        in.trace_name = "syn";
        in.window_name = "step-001";
        in.topology = parse_topology(kMigrationTopology, "two-nodes.json");
        in.budgets = run_budgets(3, 100);
        const std::atomic<bool> cancel{true};
        auto window = std::make_shared<const Trace>(in.window);
        auto plan = std::make_shared<const PlanResult>(plan_window(in, {}, &cancel));
        QVERIFY(plan->cancelled);
        QCOMPARE(plan->comm.nodes, 2);
        QVERIFY(plan->comm.available);
        QVERIFY(!plan->routepack.comm);
        QCOMPARE(comm_figure_text(*plan, std::nullopt), std::string("n/a (not computed: the plan was cancelled)"));
        CommPanel panel;
        panel.setPlan(plan, window);
        QCOMPARE(panel.headingText(),
                 QStringLiteral("Communication figures: n/a (not computed: the plan was cancelled). The run was "
                                "cancelled before its communication stage; plan the window again to count the traffic "
                                "between nodes."));
        // Without routes the re-import is what helps.
        PlanInput bare = in;
        bare.window = lib->load_window("syn", "step-001", storage::RouteLoading::Skip);
        auto unrouted = std::make_shared<const PlanResult>(plan_window(bare, {}, &cancel));
        QVERIFY(!unrouted->comm.available);
        QCOMPARE(comm_figure_text(*unrouted, std::nullopt), std::string("n/a (re-import the trace)"));
        panel.setPlan(unrouted, nullptr);
        QVERIFY2(
            panel.headingText().endsWith(QStringLiteral("re-import the trace to count the traffic between nodes.")),
            qPrintable(panel.headingText()));
    }

    void communicationStageReportsItsLevels() {
        // On two nodes the communication stage reports each annealing level of routepack+comm's search
        // (after routepack's own levels, which alone feed the convergence chart's "annealing" stage).
        auto lib = storage::Library::open(lib_, storage::OpenMode::ReadOnly);
        PlanInput in;
        in.window = lib->load_window("syn", "step-001", storage::RouteLoading::Load);
        in.trace_name = "syn";
        in.window_name = "step-001";
        in.topology = parse_topology(kMigrationTopology, "two-nodes.json");
        in.budgets = run_budgets(3, 100);
        std::vector<int> annealing, communication;
        std::vector<double> fractions;
        StageProgress progress(StageWeights::defaults(), in.budgets.annealing.levels, true);
        const PlanResult plan = plan_window(in, [&](const PlanEvent& e) {
            if (e.level && e.stage == "annealing") annealing.push_back(e.level->level);
            if (e.level && e.stage == "communication") communication.push_back(e.level->level);
            fractions.push_back(progress.update(e));
        });
        QVERIFY(plan.comm.routepack_comm.has_value());
        QCOMPARE(annealing, std::vector<int>({0, 1, 2, 3}));
        QCOMPARE(communication, std::vector<int>({0, 1, 2, 3}));
        // The bar moves through the communication stage: its last level ends the stage.
        const int comm = planner_stage_index("communication");
        QVERIFY(std::is_sorted(fractions.begin(), fractions.end()));
        QVERIFY(std::count_if(fractions.begin(), fractions.end(),
                              [&](double f) { return f > progress.stageStart(comm) + 1e-9 && f < 1.0 - 1e-9; }) >= 3);
    }

    void noCellOutlineOutlivesItsRun() {
        // A cell selected on one run's EP map is gone when the next run's plan is shown (same shape).
        auto lib = storage::Library::open(lib_, storage::OpenMode::ReadOnly);
        std::vector<std::shared_ptr<const PlanResult>> plans;
        std::vector<std::shared_ptr<const Trace>> windows;
        for (const char* window : {"step-000", "step-001"}) {
            PlanInput in;
            in.window = lib->load_window("syn", window);
            windows.push_back(std::make_shared<const Trace>(in.window));
            in.trace_name = "syn";
            in.window_name = window;
            in.topology = known_topology(kTopology);
            in.budgets = run_budgets(3, 100);
            plans.push_back(std::make_shared<const PlanResult>(plan_window(in)));
        }
        PlanView view;
        view.resize(1200, 800);
        view.setPlan(plans[0], windows[0]);
        EpHeatmapPanel* ep = ui::epHeatmapPanel(&view);
        ep->selectCell(1, 2, true);
        QCOMPARE(ui::selectedRow(ep->map(true)), 1);
        QCOMPARE(ui::selectedColumn(ep->map(false)), 2);
        QVERIFY(!ep->selectionText().isEmpty());
        view.setPlan(plans[1], windows[1]);
        for (bool planned : {false, true}) {
            QCOMPARE(ui::selectedRow(ep->map(planned)), -1);
            QCOMPARE(ui::selectedColumn(ep->map(planned)), -1);
        }
        QVERIFY(ep->selectionText().isEmpty());
    }

    void headlessRendersSavedRun() {
        // Two saved runs of step-001 (seeds 1 and 2): --run renders the one named, --trace/--window the latest.
        const fs::path file = copyLibrary("headless.routepack");
        std::vector<std::int64_t> ids;
        {
            auto lib = storage::Library::open(file);
            for (std::uint64_t seed : {1, 2}) {
                PlanInput in;
                in.window = lib->load_window("syn", "step-001");
                in.trace_name = "syn";
                in.window_name = "step-001";
                in.topology = known_topology(kTopology);
                in.budgets = run_budgets(seed, 100);
                ids.push_back(lib->save_run(plan_window(in), kTopology).id);
            }
        }
        auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
        auto studio = [](const QStringList& args, QString* err = nullptr) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.remove(QStringLiteral("QT_QPA_PLATFORM"));
            p.setProcessEnvironment(env);
            p.start(QStringLiteral(ROUTEPACK_STUDIO), args);
            p.waitForFinished(300000);
            if (err) *err = QString::fromUtf8(p.readAllStandardError());
            return std::make_pair(p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()));
        };
        PlanView views;
        QStringList pngs;
        for (const QString& name : views.viewNames())
            // One node, and no measured step of the run: neither of those two views.
            if (name != QStringLiteral("communication") && name != QStringLiteral("measured"))
                pngs << QStringLiteral("plan-%1.png").arg(name);
        for (int k = 0; k < 2; ++k) {
            const fs::path out = tmp_ / ("headless-" + std::to_string(k));
            const QStringList args = k == 0 ? QStringList{QStringLiteral("--headless-out"), q(out),
                                                          QStringLiteral("--db"),           q(file),
                                                          QStringLiteral("--run"),          QString::number(ids[0])}
                                            : QStringList{QStringLiteral("--headless-out"), q(out),
                                                          QStringLiteral("--db"),           q(file),
                                                          QStringLiteral("--trace"),        QStringLiteral("syn"),
                                                          QStringLiteral("--window"),       QStringLiteral("step-001")};
            QString err;
            const auto [status, text] = studio(args, &err);
            QVERIFY2(status == 0, qPrintable(err));
            const std::int64_t run = ids[static_cast<std::size_t>(k)];
            const QStringList lines = text.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
            QCOMPARE(lines.value(0), QStringLiteral("routepack-studio: run %1 written to %2").arg(run).arg(q(out)));
            QCOMPARE(lines.value(1), QStringLiteral("  plan.json"));
            QCOMPARE(lines.size(), 2 + pngs.size());
            QCOMPARE(test::read_file(out / "plan.json"), lib->run_plan_json(run) + "\n");
            for (const QString& f : pngs) {
                QVERIFY2(lines.contains(QStringLiteral("  ") + f), qPrintable(text));
                const QImage img(q(out) + QLatin1Char('/') + f);
                QVERIFY2(img.width() > 400 && img.height() > 300, qPrintable(f));
            }
            if (k == 0) {
                QFile::remove(shots_ + QStringLiteral("/headless-run-plan-costs.png"));
                QFile::copy(q(out / "plan-costs.png"), shots_ + QStringLiteral("/headless-run-plan-costs.png"));
            }
        }
        // A window without runs, an unknown run, the options without an output folder, and a file as
        // the output folder (named for what it was to hold).
        QString err;
        test::write_file(tmp_ / "h-file", "keep\n");
        auto f = studio({QStringLiteral("--headless-out"), q(tmp_ / "h-file"), QStringLiteral("--db"), q(file),
                         QStringLiteral("--run"), QString::number(ids[0])},
                        &err);
        QCOMPARE(f.first, 1);
        QCOMPARE(err, QStringLiteral("routepack-studio: error: %1: is a file, not a folder (--headless-out names the "
                                     "folder to write the saved run into)\n")
                          .arg(q(tmp_ / "h-file")));
        QCOMPARE(test::read_file(tmp_ / "h-file"), std::string("keep\n"));
        auto r = studio({QStringLiteral("--headless-out"), q(tmp_ / "h-none"), QStringLiteral("--db"), q(file),
                         QStringLiteral("--trace"), QStringLiteral("syn"), QStringLiteral("--window"),
                         QStringLiteral("step-003")},
                        &err);
        QCOMPARE(r.first, 1);
        QCOMPARE(
            err.trimmed(),
            QStringLiteral("routepack-studio: error: window 'step-003' of trace 'syn' has no saved run with a plan"));
        r = studio({QStringLiteral("--headless-out"), q(tmp_ / "h-none"), QStringLiteral("--db"), q(file),
                    QStringLiteral("--run"), QStringLiteral("99")},
                   &err);
        QCOMPARE(r.first, 1);
        QVERIFY2(err.contains(QStringLiteral("no run 99 in")), qPrintable(err));
        r = studio({QStringLiteral("--db"), q(file), QStringLiteral("--run"), QStringLiteral("1")}, &err);
        QCOMPARE(r.first, 2);
        QCOMPARE(err.trimmed(), QStringLiteral("routepack-studio: error: --db, --run, --trace and --window render a "
                                               "saved run: they need --headless-out DIR"));
        r = studio({QStringLiteral("--headless-out"), q(tmp_ / "h-none"), QStringLiteral("--db"), q(file),
                    QStringLiteral("--run"), QStringLiteral("x")},
                   &err);
        QCOMPARE(r.first, 2);
        QCOMPARE(err.trimmed(),
                 QStringLiteral("routepack-studio: error: --run must be a run id, a positive integer (got 'x')"));
    }

    void cancelKeepsFinishedWindows() {
        const fs::path file = copyLibrary("cancel.routepack");
        auto w = studio(file, run_budgets(23, 100));
        QVERIFY(w);
        QVERIFY(w->selectTrace(QStringLiteral("syn"))); // "Plan every window"
        std::optional<RunPlanResult> result;
        connect(ui::jobs(*w), &PlanJobQueue::runFinished, this, [&](const RunPlanResult& r) { result = r; });
        // The cancel lands exactly after the second window was saved, before the third starts
        // (whatever the machine's speed): the job's own cancel flag, set by the stop hook.
        std::vector<int> asked;
        ui::jobs(*w)->setRunStopForTesting([&asked](int finished) {
            asked.push_back(finished);
            return finished == 2;
        });
        bool shotTaken = false;
        connect(ui::jobs(*w), &PlanJobQueue::runProgress, this,
                [&](quint64, int index, int, const QString&, double, double) {
                    if (index == 1 && !shotTaken) {
                        shotTaken = true;
                        shot(w.get(), QStringLiteral("studio-runplan-progress"));
                    }
                });
        QVERIFY(w->planSelectedRun() > 0);
        QTRY_VERIFY_WITH_TIMEOUT(result.has_value(), 600000);
        QVERIFY(result->cancelled);
        QVERIFY2(result->error.isEmpty(), qPrintable(result->error));
        QCOMPARE(result->windows.size(), 5);
        QCOMPARE(result->plans.size(), std::size_t(2));
        QCOMPARE(asked, std::vector<int>({1, 2}));
        QVERIFY2(w->statusText().contains(QStringLiteral("cancelled (the finished windows are kept): 2 of 5")),
                 qPrintable(w->statusText()));
        auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
        std::vector<std::string> saved;
        for (const auto& name : split_window_names("step", 5))
            for (const auto& r : lib->runs("syn", name)) {
                saved.push_back(r.window);
                QCOMPARE(r.status, std::string("finished"));
            }
        QCOMPARE(saved, std::vector<std::string>({"step-000", "step-001"}));
        for (std::size_t k = 0; k < 2; ++k) {
            const PlanFile f = parse_plan(lib->run_plan_json(result->runIds[k]), "saved");
            QCOMPARE(f.row_count, result->plans[k]->rows.rows);
            QCOMPARE(f.score.max_u, result->plans[k]->routepack.metrics.score.max_u);
        }
        shot(w.get(), QStringLiteral("studio-runplan-cancelled"));
    }

    void cancelInAWindowKeepsItsBestPlan() {
        // Ctrl+. pressed while the third window anneals: the two windows before it stay finished runs, the
        // third keeps its best valid plan so far as a run marked cancelled, the later windows are not planned.
        const fs::path file = copyLibrary("cancel-mid.routepack");
        auto w = studio(file, run_budgets(29, 100000));
        QVERIFY(w);
        w->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(w.get()));
        QVERIFY(w->selectTrace(QStringLiteral("syn")));
        std::optional<RunPlanResult> result;
        connect(ui::jobs(*w), &PlanJobQueue::runFinished, this, [&](const RunPlanResult& r) { result = r; });
        bool pressed = false;
        connect(ui::jobs(*w), &PlanJobQueue::runProgress, this,
                [&](quint64, int index, int, const QString& stage, double, double) {
                    if (index != 2 || stage != QStringLiteral("annealing") || pressed) return;
                    pressed = true;
                    QTest::keyClick(w.get(), Qt::Key_Period, Qt::ControlModifier);
                });
        QVERIFY(w->planSelectedRun() > 0);
        QTRY_VERIFY_WITH_TIMEOUT(result.has_value(), 600000);
        QVERIFY(pressed);
        QVERIFY(result->cancelled);
        QVERIFY2(result->error.isEmpty(), qPrintable(result->error));
        QCOMPARE(result->plans.size(), std::size_t(3));
        QCOMPARE(result->finishedWindows(), std::size_t(2));
        QVERIFY(!result->plans[1]->cancelled);
        QVERIFY(result->plans[2]->cancelled);
        QCOMPARE(result->plans[2]->window_name, std::string("step-002"));
        QCOMPARE(w->statusText(), QStringLiteral("Run of syn cancelled (the finished windows are kept): 2 of 5 windows "
                                                 "planned in %1 s, runs %2..%3; window step-002 keeps its best valid "
                                                 "plan so far (run %3, cancelled)")
                                      .arg(result->seconds, 0, 'f', 2)
                                      .arg(result->runIds.front())
                                      .arg(result->runIds.back()));
        // The library holds it as the plan shows it: status cancelled, the same score and rows.
        auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
        std::vector<std::string> statuses;
        for (const auto& name : split_window_names("step", 5))
            for (const auto& r : lib->runs("syn", name))
                statuses.push_back(r.window + " " + r.status);
        QCOMPARE(statuses, (std::vector<std::string>{"step-000 finished", "step-001 finished", "step-002 cancelled"}));
        const storage::RunEntry kept = lib->run(result->runIds[2]);
        QCOMPARE(kept.score, result->plans[2]->routepack.metrics.score);
        QCOMPARE(kept.rows, result->plans[2]->rows.rows);
        QCOMPARE(kept.message, std::string("cancelled: best valid plan so far"));
        // The whole run holds the three saved runs, the cancelled one last.
        QCOMPARE(lib->whole_run(result->wholeRunId).runs,
                 std::vector<std::int64_t>(result->runIds.begin(), result->runIds.end()));
        QCOMPARE(result->runIds.size(), std::size_t(3));
        // Its layout is valid for its window.
        const PlanFile f = parse_plan(lib->run_plan_json(result->runIds[2]), "saved");
        QCOMPARE(f.row_count, result->plans[2]->rows.rows);
    }
};

QTEST_MAIN(TestStudioRunPlan)
#include "tst_studio_runplan.moc"
