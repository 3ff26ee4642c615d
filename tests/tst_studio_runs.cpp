// The studio's Run view and the split of the window dialog, offscreen: a synthetic trace cut into 3
// consecutive windows, each planned with a fixed seed and saved as a run (what `routepack sweep`
// does); the view's costs, gains and churn against the planner's results and placement_moves
// computed directly; a click on a step in the chart selects that step's run in the main window; the
// empty state; the dialog's split creates the same windows (names, sample ids, definitions) as
// `routepack window --split`. Screenshots (light and dark) into $ROUTEPACK_SCREENSHOT_DIR or a
// temporary folder.
#include "core/model/model.h"
#include "core/model/window_select.h"
#include "core/plan/planner.h"
#include "core/plan/score/placement.h"
#include "core/synth/synth.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/window_dialog.h"
#include "views/library/library_tree_model.h"
#include "views/library/sample_table_model.h"
#include "views/plan/plan_views.h"
#include "views/run/run_view.h"
#include "views/studio_window.h"

#include <QAction>
#include <QApplication>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QProcess>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTimer>
#include <QTreeView>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {
constexpr auto& q = test::qpath; // a path as QString

PlannerBudgets fixed_budgets(std::uint64_t seed) {
    PlannerBudgets b;
    b.annealing.levels = 4;
    b.annealing.steps = 150;
    b.seeding.candidates = 6;
    b.seeding.population = 4;
    b.workers = 1;
    b.seed = seed;
    return b;
}

/// A run step holding only its gain (the histogram reads nothing else).
RunStep gain_step(double gain_pct) {
    RunStep step;
    step.gain_pct = gain_pct;
    return step;
}

} // namespace

class TestStudioRuns : public test::StudioTestBase {
    Q_OBJECT

    fs::path lib_;
    std::vector<PlanResult> plans_; ///< the three windows' plans, in run order
    std::vector<std::int64_t> runIds_;

    /// A synthetic trace "syn" (6 GRPO groups x 8 samples, 48 samples).
    fs::path importSynth(const fs::path& dir) {
        SynthConfig c;
        c.groups = 6;
        c.group_size = 8;
        c.seed = 3;
        write_synth(c, TraceFormat::VLLM, dir / "syn");
        fs::path file = dir / "lib.routepack";
        auto lib = storage::Library::open(file);
        ImportOptions o;
        o.model = synth_model(c);
        lib->import_trace("syn", {dir / "syn"}, o);
        return file;
    }

    /// Screenshots `name` of `w` as it is and `name`-dark under Fusion with the dark palette (the
    /// application's style and palette restored afterwards).
    void shotLightAndDark(QWidget* w, const QString& name) {
        QTest::qWait(300);
        shot(w, name);
        const QPalette light = QApplication::palette();
        const QString style = QApplication::style()->name();
        QApplication::setStyle(QStringLiteral("Fusion"));
        QApplication::setPalette(test::dark_palette());
        QTest::qWait(100);
        shot(w, name + QStringLiteral("-dark"));
        QApplication::setPalette(light);
        QApplication::setStyle(style);
    }

private Q_SLOTS:
    void initTestCase() {
        initStudioTest(QStringLiteral("tst_studio_runs"), QStringLiteral("studio-runs"));

        // Three consecutive windows of 16 samples, each planned with its own fixed seed and saved, as
        // `routepack sweep` does (one planner worker per window), plus a window without a run.
        fs::create_directories(tmp_ / "run");
        lib_ = importSynth(tmp_ / "run");
        auto lib = storage::Library::open(lib_);
        const auto parts = split_consecutive(lib->samples("syn"), 16, "syn");
        QCOMPARE(parts.size(), std::size_t(3));
        const auto names = split_window_names("step", parts.size());
        std::vector<storage::Library::WindowSpec> specs;
        for (std::size_t k = 0; k < parts.size(); ++k)
            specs.push_back({names[k], parts[k].ids, parts[k].definition});
        lib->create_windows("syn", specs);
        lib->create_window("syn", "unplanned", parts[0].ids, "first 16 again");
        const Topology topo = known_topology("synthetic-demo-ep8-dp4");
        for (std::size_t k = 0; k < names.size(); ++k) {
            PlanInput in;
            in.window = lib->load_window("syn", names[k]);
            in.trace_name = "syn";
            in.window_name = names[k];
            in.topology = topo;
            in.budgets = fixed_budgets(11 + k);
            plans_.push_back(plan_window(in));
            runIds_.push_back(lib->save_run(plans_.back(), "demo-ep8").id);
        }
    }

    void cleanupTestCase() {
        QSettings(options_.settingsOrganization, options_.settingsApplication).clear();
        fs::remove_all(tmp_);
    }

    void seriesEqualDirectComputation() {
        auto lib = storage::Library::open(lib_, storage::OpenMode::ReadOnly);
        const RunSeriesSet set = compute_run_series(*lib, "syn");
        QVERIFY2(set.error.empty(), set.error.c_str());
        QCOMPARE(set.windows, std::size_t(4));
        QCOMPARE(set.windows_with_runs, std::size_t(3));
        QCOMPARE(set.series.size(), std::size_t(1));
        const RunSeries& s = set.series[0];
        QCOMPARE(s.topology, std::string("demo-ep8"));
        QCOMPARE(s.steps.size(), std::size_t(3));
        QCOMPARE(s.slots, std::int64_t(plans_[0].placement.lpt.layers) * plans_[0].placement.lpt.experts);
        for (std::size_t k = 0; k < 3; ++k) {
            const RunStep& st = s.steps[k];
            const PlanResult& p = plans_[k];
            QCOMPARE(st.window, p.window_name);
            QCOMPARE(st.run, runIds_[k]);
            QCOMPARE(st.samples, std::size_t(16));
            QCOMPARE(st.cost[Method::Baseline], p.baseline.metrics.score.max_u);
            QCOMPARE(st.cost[Method::Reorder], p.reorder.metrics.score.max_u);
            QCOMPARE(st.cost[Method::KarmarkarKarp], p.karmarkar_karp.metrics.score.max_u);
            QCOMPARE(st.cost[Method::RoutePack], p.routepack.metrics.score.max_u);
            const double base = p.baseline.metrics.score.max_u;
            QCOMPARE(st.gain_pct, 100.0 * (p.routepack.metrics.score.max_u - base) / base);
            QVERIFY(st.gain_pct <= 0); // routepack never loses to the baseline here
            QCOMPARE(st.rows, p.rows.rows);
            if (k == 0) {
                QCOMPARE(st.churn, std::int64_t(-1));
                QCOMPARE(st.previous, std::string());
                continue;
            }
            // Churn: experts that change slot against the previous window, summed over MoE layers (the
            // number `routepack sweep` prints), counted here slot by slot from the two placements.
            std::int64_t changed = 0;
            for (std::size_t v = 0; v < p.placement.lpt.slot.size(); ++v)
                changed += p.placement.lpt.slot[v] != plans_[k - 1].placement.lpt.slot[v] ? 1 : 0;
            std::int64_t moves = 0;
            for (const auto& layer : placement_slot_changes(p.placement.lpt, plans_[k - 1].placement.lpt))
                moves += static_cast<std::int64_t>(layer.size());
            QCOMPARE(st.churn, moves);
            QCOMPARE(st.churn, changed);
            // Experts moved: those on another EP rank than at the previous step (placement_moves).
            QCOMPARE(st.moves, moved_experts(p.placement.lpt, plans_[k - 1].placement.lpt));
            QCOMPARE(st.previous, plans_[k - 1].window_name);
        }
        // The histogram holds every step once, in bins of a round width covering the gains.
        const auto bins = gain_histogram(s);
        QVERIFY(!bins.empty());
        std::size_t held = 0;
        for (const auto& b : bins) {
            QVERIFY(b.hi > b.lo);
            for (int i : b.steps) {
                QVERIFY(s.steps[static_cast<std::size_t>(i)].gain_pct >= b.lo - 1e-9);
                QVERIFY(s.steps[static_cast<std::size_t>(i)].gain_pct < b.hi + 1e-9);
            }
            held += b.steps.size();
        }
        QCOMPARE(held, std::size_t(3));
        QVERIFY(bins.size() <= 8);
    }

    void seriesSummaryByHand() {
        // The Run view's heading: gains {-4, -1, -2, -3} % -> mean -2.5, median (-3 + -2) / 2, best
        // -4, worst -1; churn 5 + 0 + 7 (the first step has none); the most changed in one step: 9
        // experts moved.
        RunSeries s;
        const double gains[] = {-4, -1, -2, -3};
        const std::int64_t churn[] = {-1, 5, 0, 7}, moves[] = {-1, 2, 9, 1};
        for (int k = 0; k < 4; ++k) {
            RunStep st = gain_step(gains[k]);
            st.churn = churn[k];
            st.moves = moves[k];
            s.steps.push_back(st);
        }
        const RunSeriesSummary sum = summarize_series(s);
        QCOMPARE(sum.mean_gain_pct, -2.5);
        QCOMPARE(sum.median_gain_pct, -2.5);
        QCOMPARE(sum.best_gain_pct, -4.0);
        QCOMPARE(sum.worst_gain_pct, -1.0);
        QCOMPARE(sum.churn_total, std::int64_t(12));
        QCOMPARE(sum.most_changed, std::int64_t(9));
        s.steps.pop_back(); // three steps: the middle one
        QCOMPARE(summarize_series(s).median_gain_pct, -2.0);
        const RunSeriesSummary none = summarize_series(RunSeries{});
        QCOMPARE(none.mean_gain_pct, 0.0);
        QCOMPARE(none.churn_total, std::int64_t(0));
    }

    void gainHistogramHandCases() {
        RunSeries s;
        for (double g : {-12.3, -10.0, -4.9, -4.1})
            s.steps.push_back(gain_step(g));
        // Range 8.2 %: width 1 needs 10 bins (-13..-4), width 2 needs 5 (-14..-4).
        const auto bins = gain_histogram(s, 8);
        QCOMPARE(bins.size(), std::size_t(5));
        QCOMPARE(bins.front().lo, -14.0);
        QCOMPARE(bins.back().hi, -4.0);
        QCOMPARE(bins[0].steps, std::vector<int>({0}));
        QCOMPARE(bins[2].steps, std::vector<int>({1}));
        QCOMPARE(bins[4].steps, std::vector<int>({2, 3}));
        RunSeries same;
        same.steps.push_back(gain_step(-3.0));
        same.steps.push_back(gain_step(-3.0));
        const auto one = gain_histogram(same, 8);
        QCOMPARE(one.size(), std::size_t(1));
        QCOMPARE(one[0].steps.size(), std::size_t(2));
        QVERIFY(one[0].lo <= -3.0 && one[0].hi > -3.0);
    }

    void runViewInTheStudioAndClickThrough() {
        StudioWindow w(options_);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QString err;
        QVERIFY2(w.openLibrary(q(lib_), false, &err), qPrintable(err));
        RunView* rv = ui::runView(w);
        QVERIFY(rv);
        QVERIFY(w.selectTrace(QStringLiteral("syn")));
        ui::resultTabs(w)->setCurrentWidget(rv);
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->currentSeries(), 30000);
        QVERIFY(!rv->isEmptyState());
        const RunSeries* s = rv->currentSeries();
        QCOMPARE(s->steps.size(), std::size_t(3));
        // One node: the four methods, no inter-node figures.
        QCOMPARE(s->methods,
                 std::vector<Method>({Method::Baseline, Method::Reorder, Method::KarmarkarKarp, Method::RoutePack}));
        QCOMPARE(rv->costSeries(Method::Grouter), nullptr);
        QCOMPARE(rv->costSeries(Method::RoutePackComm), nullptr);
        QCOMPARE(s->steps[0].nodes, 1);
        QCOMPARE(s->steps[0].inter_copies[Method::RoutePack], std::int64_t(-1));
        // The charts hold the numbers: one point per step and method, one churn bar per step.
        for (int i = 0; i < kPaperMethodCount; ++i) {
            QLineSeries* line = rv->costSeries(method_at(i));
            QVERIFY(line);
            QCOMPARE(line->count(), 3);
            for (std::size_t k = 0; k < 3; ++k)
                QCOMPARE(line->at(static_cast<int>(k)).y(), s->steps[k].cost[method_at(i)]);
        }
        QCOMPARE(ui::churnSet(rv)->count(), 3);
        QCOMPARE(ui::churnSet(rv)->at(0), 0.0);
        QCOMPARE(ui::churnSet(rv)->at(2), static_cast<double>(s->steps[2].churn));
        QCOMPARE(ui::movesSet(rv)->count(), 3);
        QCOMPARE(ui::movesSet(rv)->at(2), static_cast<double>(s->steps[2].moves));
        QCOMPARE(ui::gainSet(rv)->count(), static_cast<int>(ui::gainBins(rv).size()));
        // Tooltips give the exact values.
        const QString tip = rv->stepToolTip(1);
        QVERIFY2(tip.contains(QStringLiteral("step 1: step-001")), qPrintable(tip));
        QVERIFY2(tip.contains(
                     QStringLiteral("RoutePack: max_g U = %1").arg(plans_[1].routepack.metrics.score.max_u, 0, 'f', 4)),
                 qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("churn vs step-000: %1 of %2 slots").arg(s->steps[1].churn).arg(s->slots)),
                 qPrintable(tip));
        QVERIFY2(tip.contains(QString::asprintf("routepack vs baseline %+.2f %%", s->steps[1].gain_pct)),
                 qPrintable(tip));
        QVERIFY(rv->stepToolTip(3).isEmpty());
        QVERIFY(rv->headingText().contains(QStringLiteral("3 steps of 4 windows")));

        // Light and dark screenshots of the Run view in the real window.
        QTest::qWait(100);
        shot(&w, QStringLiteral("studio-run"));
        shot(rv, QStringLiteral("studio-run-view"));
        const QPalette light = QApplication::palette();
        const QString style = QApplication::style()->name();
        QApplication::setStyle(QStringLiteral("Fusion"));
        QApplication::setPalette(test::dark_palette());
        QTest::qWait(100);
        shot(&w, QStringLiteral("studio-run-dark"));
        shot(rv, QStringLiteral("studio-run-view-dark"));
        QApplication::setPalette(light);
        QApplication::setStyle(style);
        QTest::qWait(50);

        // A real click on step 2 of the cost chart selects step 2's run and shows its plan.
        QChartView* view = ui::costChartView(rv);
        QChart* chart = view->chart();
        const QPointF at =
            chart->mapToPosition(QPointF(2, s->steps[2].cost[Method::RoutePack]), rv->costSeries(Method::RoutePack));
        const QPoint pos = view->mapFromScene(chart->mapToScene(at));
        QCOMPARE(rv->stepAt(view, pos), 2);
        QSignalSpy activated(rv, &RunView::stepActivated);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, pos);
        QCOMPARE(activated.count(), 1);
        QCOMPARE(activated.at(0).at(0).toLongLong(), runIds_[2]);
        QCOMPARE(activated.at(0).at(2).toString(), QStringLiteral("step-002"));
        QCOMPARE(ui::resultTabs(w)->currentWidget(), static_cast<QWidget*>(ui::planView(w)));
        const QModelIndex cur = ui::libraryView(w)->currentIndex();
        QCOMPARE(cur.data(RunIdRole).toLongLong(), runIds_[2]);
        QTRY_COMPARE_WITH_TIMEOUT(w.shownRunId(), qint64(runIds_[2]), 60000);
        QVERIFY(ui::planView(w)->plan());
        QCOMPARE(ui::planView(w)->plan()->window_name, std::string("step-002"));
        QCOMPARE(ui::planView(w)->plan()->routepack.metrics.score.max_u, plans_[2].routepack.metrics.score.max_u);
        // A click on the churn chart's first bar selects step 0's run.
        QChartView* cv = ui::churnChartView(rv);
        ui::resultTabs(w)->setCurrentWidget(rv);
        QTest::qWait(50);
        const QRectF plot = cv->chart()->plotArea();
        const QPoint p0 =
            cv->mapFromScene(cv->chart()->mapToScene(QPointF(plot.left() + plot.width() / 6.0, plot.bottom() - 4)));
        QCOMPARE(rv->stepAt(cv, p0), 0);
        QTest::mouseClick(cv->viewport(), Qt::LeftButton, {}, p0);
        QCOMPARE(activated.count(), 2);
        QCOMPARE(activated.at(1).at(0).toLongLong(), runIds_[0]);
        QTRY_COMPARE_WITH_TIMEOUT(w.shownRunId(), qint64(runIds_[0]), 60000);
        // A named run: the Run view reads the series again and the step's tooltip names the run after
        // its id.
        QVERIFY(!rv->stepToolTip(1).contains(QStringLiteral("\u00b7")));
        QVERIFY(ui::libraryPane(w)->renameRun(runIds_[1], QStringLiteral("second step")));
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->stepToolTip(1).contains(
                                                         QStringLiteral("run %1 \u00b7 second step (").arg(runIds_[1])),
                                 30000);
        w.close();
    }

    void dialogSplitEqualsCli() {
        // The same trace split by the studio's window dialog and by `routepack window --split`
        // (and --split-groups): the same windows, names, sample ids and definitions.
        fs::create_directories(tmp_ / "split");
        const fs::path studioLib = importSynth(tmp_ / "split");
        const fs::path cliLib = tmp_ / "split" / "cli.routepack";
        fs::copy_file(studioLib, cliLib);
        for (const QStringList& args : {QStringList{QStringLiteral("--split"), QStringLiteral("20"),
                                                    QStringLiteral("--name"), QStringLiteral("run")},
                                        QStringList{QStringLiteral("--split-groups"), QStringLiteral("4"),
                                                    QStringLiteral("--name"), QStringLiteral("grp")}}) {
            QProcess cli;
            cli.start(QStringLiteral(ROUTEPACK_CLI),
                      QStringList{QStringLiteral("window"), QStringLiteral("--db"), q(cliLib),
                                  QStringLiteral("--trace"), QStringLiteral("syn")} +
                          args);
            QVERIFY(cli.waitForFinished(60000));
            QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
        }

        {
            // The dialog alone: the names, the remainder marked, the errors in words.
            auto lib = storage::Library::open(studioLib, storage::OpenMode::ReadOnly);
            WindowDialog dlg(QStringLiteral("syn"), lib->samples("syn"), {});
            dlg.setMode(WindowDialog::Split);
            QVERIFY(dlg.isSplit());
            dlg.setWindowName(QString());
            QString why;
            QVERIFY(!dlg.splitWindows(&why));
            QCOMPARE(why, QStringLiteral("give the windows a name (it prefixes the split windows' names)"));
            dlg.setWindowName(QStringLiteral("run"));
            dlg.setSplitCount(20);
            const auto w = dlg.splitWindows(&why);
            QVERIFY2(w, qPrintable(why));
            QCOMPARE(w->size(), std::size_t(3));
            QCOMPARE(w->at(2).name, QStringLiteral("run-002"));
            QCOMPARE(w->at(2).selection.ids.size(), std::size_t(8));
            QCOMPARE(w->at(2).selection.definition, std::string("split 20: samples 41-48 of 48, remainder of 8"));
            QVERIFY(!dlg.selection(&why));
            QCOMPARE(why, QStringLiteral("a split defines several windows"));
            dlg.show();
            QVERIFY(QTest::qWaitForWindowExposed(&dlg));
            shot(&dlg, QStringLiteral("studio-window-split"));
        }

        StudioWindow w(options_);
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QString err;
        QVERIFY2(w.openLibrary(q(studioLib), false, &err), qPrintable(err));
        QVERIFY(w.selectTrace(QStringLiteral("syn")));
        QAction* define = nullptr;
        for (QAction* a : w.findChildren<QAction*>())
            if (a->text() == QStringLiteral("Define &window…")) define = a;
        QVERIFY(define);
        auto split = [&](WindowDialog::Mode mode, const QString& name, int count) {
            bool seen = false;
            QTimer::singleShot(0, &w, [&] {
                auto* dlg = qobject_cast<WindowDialog*>(QApplication::activeModalWidget());
                if (!dlg) return;
                seen = true;
                dlg->setMode(mode);
                dlg->setWindowName(name);
                if (mode == WindowDialog::Split)
                    dlg->setSplitCount(count);
                else
                    dlg->setSplitGroupCount(count);
                dlg->accept();
            });
            QVERIFY(define->isEnabled());
            define->trigger();
            QVERIFY(seen);
        };
        split(WindowDialog::Split, QStringLiteral("run"), 20);
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Trace syn split into 3 windows, run-000 .. run-002")),
                 qPrintable(w.statusText()));
        QVERIFY(w.selectTrace(QStringLiteral("syn")));
        split(WindowDialog::SplitGroups, QStringLiteral("grp"), 4);
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Trace syn split into 2 windows, grp-000 .. grp-001")),
                 qPrintable(w.statusText()));
        w.close();

        auto a = storage::Library::open(studioLib, storage::OpenMode::ReadOnly);
        auto b = storage::Library::open(cliLib, storage::OpenMode::ReadOnly);
        const auto wa = a->windows("syn"), wb = b->windows("syn");
        QCOMPARE(wa.size(), std::size_t(5));
        QCOMPARE(wa.size(), wb.size());
        for (std::size_t k = 0; k < wa.size(); ++k) {
            QCOMPARE(wa[k].name, wb[k].name);
            QCOMPARE(wa[k].definition, wb[k].definition);
            QCOMPARE(wa[k].samples, wb[k].samples);
            QCOMPARE(a->window_sample_ids("syn", wa[k].name), b->window_sample_ids("syn", wb[k].name));
        }
        QCOMPARE(wa[4].name, std::string("grp-001"));
        QCOMPARE(wa[4].definition, std::string("split-groups 4: groups 5-6 of 6, remainder of 2"));
    }

    void realDeepSeekSweepInRunView() {
        // The real DeepSeek trace cut into windows of 128 and swept by the CLI on EP 8 / DP 4 (seed
        // 7): the Run view shows exactly what `routepack sweep --json` printed.
        ROUTEPACK_REQUIRE_SHARED(ds, "traces/deepseek-v2-lite");
        fs::create_directories(tmp_ / "real");
        const fs::path file = tmp_ / "real" / "real.routepack";
        {
            auto lib = storage::Library::open(file);
            ImportOptions o;
            o.model = known_model("deepseek-v2-lite");
            lib->import_trace("ds", {ds}, o);
        }
        auto cli = [&](const QStringList& args) {
            QProcess p;
            p.start(QStringLiteral(ROUTEPACK_CLI), args);
            p.waitForFinished(600000);
            if (p.exitCode() != 0) qWarning("%s", p.readAllStandardError().constData());
            return p.exitCode() == 0 ? p.readAllStandardOutput().toStdString() : std::string();
        };
        QVERIFY(!cli({QStringLiteral("window"), QStringLiteral("--db"), q(file), QStringLiteral("--trace"),
                      QStringLiteral("ds"), QStringLiteral("--name"), QStringLiteral("ds"), QStringLiteral("--split"),
                      QStringLiteral("128")})
                     .empty());
        const std::string out =
            cli({QStringLiteral("sweep"), QStringLiteral("--db"), q(file), QStringLiteral("--trace"),
                 QStringLiteral("ds"), QStringLiteral("--topology"), QStringLiteral("deepseek-v2-lite-ep8-dp4"),
                 QStringLiteral("--seed"), QStringLiteral("7"), QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY(!out.empty());
        const nlohmann::json sweep = nlohmann::json::parse(out);
        QCOMPARE(sweep.size(), std::size_t(5)); // 4 x 128 + 87

        StudioWindow w(options_);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QString err;
        QVERIFY2(w.openLibrary(q(file), false, &err), qPrintable(err));
        QVERIFY(w.selectTrace(QStringLiteral("ds")));
        RunView* rv = ui::runView(w);
        ui::resultTabs(w)->setCurrentWidget(rv);
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->currentSeries(), 60000);
        const RunSeries& s = *rv->currentSeries();
        QCOMPARE(s.steps.size(), std::size_t(5));
        QCOMPARE(s.slots, std::int64_t(1664)); // 26 MoE layers x 64 experts
        for (std::size_t k = 0; k < 5; ++k) {
            const auto& row = sweep[k];
            const RunStep& st = s.steps[k];
            QCOMPARE(st.window, row["window"].get<std::string>());
            QCOMPARE(st.run, row["run"].get<std::int64_t>());
            QCOMPARE(st.samples, row["samples"].get<std::size_t>());
            QCOMPARE(st.cost[Method::Baseline], row["baseline"].get<double>());
            QCOMPARE(st.cost[Method::Reorder], row["reorder"].get<double>());
            QCOMPARE(st.cost[Method::KarmarkarKarp], row["karmarkar_karp"].get<double>());
            QCOMPARE(st.cost[Method::RoutePack], row["routepack"].get<double>());
            QCOMPARE(st.gain_pct, row["routepack_vs_baseline_pct"].get<double>());
            QCOMPARE(st.churn,
                     row["churn_slots"].is_null() ? std::int64_t(-1) : row["churn_slots"].get<std::int64_t>());
            qInfo("%s: baseline %.4f routepack %.4f (%+.2f%%), churn %lld", st.window.c_str(),
                  st.cost[Method::Baseline], st.cost[Method::RoutePack], st.gain_pct, static_cast<long long>(st.churn));
        }
        QTRY_COMPARE_WITH_TIMEOUT(ui::sampleModel(w)->rowCount(), 599, 60000);
        shotLightAndDark(&w, QStringLiteral("real-ds-run"));

        // The same windows swept on two nodes (seed 7, 4 levels x 200 steps): every step has six
        // methods, and the Run view shows grouter's and routepack+comm's costs and every method's
        // inter-node copies exactly as `routepack sweep --json` printed them.
        const std::string out2 = cli(
            {QStringLiteral("sweep"), QStringLiteral("--db"), q(file), QStringLiteral("--trace"), QStringLiteral("ds"),
             QStringLiteral("--topology"), QStringLiteral("deepseek-v2-lite-ep16-dp8-2nodes"), QStringLiteral("--seed"),
             QStringLiteral("7"), QStringLiteral("--levels"), QStringLiteral("4"), QStringLiteral("--steps"),
             QStringLiteral("200"), QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY(!out2.empty());
        const nlohmann::json sweep2 = nlohmann::json::parse(out2);
        QCOMPARE(sweep2.size(), std::size_t(5));
        rv->reload();
        QTRY_VERIFY_WITH_TIMEOUT(!rv->isLoading() && rv->seriesSet() && rv->seriesSet()->series.size() == 2, 60000);
        // Both topologies have 5 steps; the newer runs (two nodes) come first.
        QCOMPARE(rv->seriesIndex(), 0);
        const RunSeries& s2 = *rv->currentSeries();
        QCOMPARE(s2.topology, std::string("deepseek-v2-lite-ep16-dp8-2nodes"));
        QCOMPARE(s2.methods, std::vector<Method>({Method::Baseline, Method::Reorder, Method::KarmarkarKarp,
                                                  Method::RoutePack, Method::Grouter, Method::RoutePackComm}));
        QCOMPARE(s2.steps.size(), std::size_t(5));
        for (std::size_t k = 0; k < 5; ++k) {
            const auto& row = sweep2[k];
            const RunStep& st = s2.steps[k];
            QCOMPARE(st.window, row["window"].get<std::string>());
            QCOMPARE(st.run, row["run"].get<std::int64_t>());
            QCOMPARE(st.nodes, 2);
            QCOMPARE(st.cost[Method::Baseline], row["baseline"].get<double>());
            QCOMPARE(st.cost[Method::RoutePack], row["routepack"].get<double>());
            QVERIFY(st.has[Method::Grouter] && st.has[Method::RoutePackComm]);
            QCOMPARE(st.cost[Method::Grouter], row["grouter"].get<double>());
            QCOMPARE(st.cost[Method::RoutePackComm], row["routepack+comm"].get<double>());
            for (const MethodRow& m : kMethodTable)
                QCOMPARE(st.inter_copies[m.method], row["inter_node_copies"][m.key].get<std::int64_t>());
            // The chart's lines hold the same numbers, and the tooltip names them.
            for (const MethodRow& m : kMethodTable) {
                QLineSeries* line = rv->costSeries(m.method);
                QVERIFY(line);
                QCOMPARE(line->count(), 5);
                QCOMPARE(line->at(static_cast<int>(k)).y(), st.cost[m.method]);
            }
            const QString tip = rv->stepToolTip(static_cast<int>(k));
            const double base = st.cost[Method::Baseline];
            QVERIFY2(
                tip.contains(QStringLiteral("Grouter: max_g U = %1 (%2 vs baseline), %3 inter-node copies")
                                 .arg(st.cost[Method::Grouter], 0, 'f', 4)
                                 .arg(QString::asprintf("%+.2f %%", 100.0 * (st.cost[Method::Grouter] - base) / base))
                                 .arg(QString::fromStdString(grouped_count(st.inter_copies[Method::Grouter])))),
                qPrintable(tip));
            QVERIFY2(
                tip.contains(
                    QStringLiteral("RoutePack+comm: max_g U = %1 (").arg(st.cost[Method::RoutePackComm], 0, 'f', 4)),
                qPrintable(tip));
            QVERIFY2(tip.contains(QStringLiteral("RoutePack: max_g U = %1, %2 inter-node copies")
                                      .arg(st.cost[Method::RoutePack], 0, 'f', 4)
                                      .arg(QString::fromStdString(grouped_count(st.inter_copies[Method::RoutePack])))),
                     qPrintable(tip));
            qInfo("2 nodes %s: baseline %.4f routepack %.4f grouter %.4f routepack+comm %.4f; inter-node copies "
                  "routepack %lld grouter %lld routepack+comm %lld",
                  st.window.c_str(), st.cost[Method::Baseline], st.cost[Method::RoutePack], st.cost[Method::Grouter],
                  st.cost[Method::RoutePackComm], static_cast<long long>(st.inter_copies[Method::RoutePack]),
                  static_cast<long long>(st.inter_copies[Method::Grouter]),
                  static_cast<long long>(st.inter_copies[Method::RoutePackComm]));
        }
        // The dashed communication-aware lines in the legend, light and dark.
        QCOMPARE(rv->costSeries(Method::Grouter)->pen().style(), Qt::DashLine);
        QCOMPARE(rv->costSeries(Method::RoutePack)->pen().style(), Qt::SolidLine);
        shotLightAndDark(&w, QStringLiteral("real-ds-run-2nodes"));
        // The one-node series is still there: four lines again.
        rv->setSeriesIndex(1);
        QCOMPARE(rv->currentSeries()->topology, std::string("deepseek-v2-lite-ep8-dp4"));
        QCOMPARE(rv->costSeries(Method::RoutePackComm), nullptr);
        QVERIFY(rv->costSeries(Method::RoutePack));
        w.close();
    }

    void emptyStates() {
        // A trace whose runs cover one window: the explicit empty state, with what to do.
        fs::create_directories(tmp_ / "one");
        const fs::path lib = importSynth(tmp_ / "one");
        {
            auto l = storage::Library::open(lib);
            const auto parts = split_consecutive(l->samples("syn"), 24, "syn");
            const auto names = split_window_names("w", parts.size());
            std::vector<storage::Library::WindowSpec> specs;
            for (std::size_t k = 0; k < parts.size(); ++k)
                specs.push_back({names[k], parts[k].ids, parts[k].definition});
            l->create_windows("syn", specs);
            PlanInput in;
            in.window = l->load_window("syn", "w-000");
            in.trace_name = "syn";
            in.window_name = "w-000";
            in.topology = known_topology("synthetic-demo-ep8-dp4");
            in.budgets = fixed_budgets(5);
            l->save_run(plan_window(in), "demo-ep8");
            const RunSeriesSet set = compute_run_series(*l, "syn");
            QVERIFY(set.error.empty());
            QCOMPARE(set.windows, std::size_t(2));
            QCOMPARE(set.windows_with_runs, std::size_t(1));
            QVERIFY(set.series.empty());
            QCOMPARE(compute_run_series(*l, "nope").error, "no trace named 'nope' in " + lib.string());
        }
        RunView rv;
        rv.resize(900, 700);
        QVERIFY(rv.isEmptyState());
        QCOMPARE(rv.emptyText(), QStringLiteral("Select a trace in the library to see its whole run."));
        QSignalSpy updated(&rv, &RunView::updated);
        rv.setSource(q(lib), QStringLiteral("syn"));
        QTRY_COMPARE_WITH_TIMEOUT(updated.count(), 1, 30000);
        QVERIFY(rv.isEmptyState());
        QVERIFY(!rv.currentSeries());
        QVERIFY(!rv.activateStep(0));
        QVERIFY2(rv.emptyText().startsWith(QStringLiteral(
                     "Trace syn has saved runs in 1 of its 2 windows, and no topology has runs in two or more.")),
                 qPrintable(rv.emptyText()));
        QVERIFY(rv.emptyText().contains(QStringLiteral("Split into consecutive windows")));
        QVERIFY(rv.costSeries(Method::Baseline) == nullptr);
        // Same source again: nothing is read again.
        rv.setSource(q(lib), QStringLiteral("syn"));
        QVERIFY(!rv.isLoading());
        // An unknown trace: the error in words.
        rv.setSource(q(lib), QStringLiteral("nope"));
        QTRY_COMPARE_WITH_TIMEOUT(updated.count(), 2, 30000);
        QCOMPARE(rv.emptyText(),
                 QStringLiteral("Cannot read the runs of trace nope: no trace named 'nope' in ") + q(lib));
        rv.show();
        QVERIFY(QTest::qWaitForWindowExposed(&rv));
        rv.setSource(q(lib), QStringLiteral("syn"));
        QTRY_COMPARE_WITH_TIMEOUT(updated.count(), 3, 30000);
        shot(&rv, QStringLiteral("studio-run-empty"));
    }
};

QTEST_MAIN(TestStudioRuns)
#include "tst_studio_runs.moc"
