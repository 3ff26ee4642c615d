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
#include "tests/testutil.h"
#include "views/exports.h"
#include "views/library_tree_model.h"
#include "views/plan_jobs.h"
#include "views/plan_views.h"
#include "views/run_series.h"
#include "views/run_view.h"
#include "views/studio_window.h"
#include "views/topology_editor.h"

#include <QApplication>
#include <QFileInfo>
#include <QImage>
#include <QItemSelectionModel>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTabWidget>
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
        w->topologyEditor()->setTopology(QString::fromLatin1(kTopology), known_topology(kTopology));
        w->topologyEditor()->setBudgets(budgets);
        return w;
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
        // The five windows selected in the tree, in reverse order (the run is in natural name order).
        QTreeView* tv = w->libraryView();
        auto* sel = tv->selectionModel();
        sel->clearSelection();
        for (int k = 4; k >= 0; --k)
            sel->select(w->libraryModel()->windowIndex(QStringLiteral("syn"), QStringLiteral("step-00%1").arg(k)),
                        QItemSelectionModel::Select | QItemSelectionModel::Rows);
        std::optional<RunPlanResult> result;
        std::vector<int> steps;
        std::vector<double> overall;
        connect(w->jobs(), &PlanJobQueue::runFinished, this, [&](const RunPlanResult& r) { result = r; });
        connect(w->jobs(), &PlanJobQueue::runStepFinished, this,
                [&](quint64, int index, int count, const QString&, qint64, double) {
                    QCOMPARE(count, 5);
                    steps.push_back(index);
                });
        connect(w->jobs(), &PlanJobQueue::runProgress, this,
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
        // The Run view shows the five steps (it read them as they were saved).
        RunView* rv = w->runView();
        QCOMPARE(w->resultTabs()->currentWidget(), static_cast<QWidget*>(rv));
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
        // Two nodes of 4 GPUs with a migration cost model: the communication and migration columns.
        const fs::path topo = tmp_ / "two-nodes.json";
        test::write_file(topo,
                         R"({"ep_ranks": 8, "experts_per_layer": 32, "dp_slots": 4, "edp_shards": [[0, 1], [2, 3]],
 "token_cap": 8192, "attention_stages": [{"name": "mla", "alpha": 27.0, "beta": 27.0}], "gpus_per_node": 4,
 "migration": {"expert_parameters": 1000000, "seconds_per_U": 0.001}})");
        QTest::newRow("two nodes, migration") << q(topo);
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
        RunView* rv = w->runView();
        w->resultTabs()->setCurrentWidget(rv);
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
        // Every chart as PNG and SVG.
        for (const QString& name : RunView::chartNames()) {
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
            if (name != QStringLiteral("communication")) pngs << QStringLiteral("plan-%1.png").arg(name);
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
        // A window without runs, an unknown run, and the options without an output folder.
        QString err;
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
        // Long windows: the third is still searching when the cancel arrives.
        auto w = studio(file, run_budgets(23, 120000));
        QVERIFY(w);
        QVERIFY(w->selectTrace(QStringLiteral("syn"))); // "Plan every window"
        std::optional<RunPlanResult> result;
        connect(w->jobs(), &PlanJobQueue::runFinished, this, [&](const RunPlanResult& r) { result = r; });
        connect(w->jobs(), &PlanJobQueue::runStepFinished, this,
                [&](quint64, int index, int, const QString&, qint64, double) {
                    if (index == 1) w->cancelJob();
                });
        bool shotTaken = false;
        connect(w->jobs(), &PlanJobQueue::runProgress, this,
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
};

QTEST_MAIN(TestStudioRunPlan)
#include "tst_studio_runplan.moc"
