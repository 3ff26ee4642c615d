// Whole runs (storage/library.h schema 7, views/run/run_compare.h, the Whole runs tab, routepack-studio
// --compare-runs) on the real DeepSeek-V2-Lite trace: three windows of 128 samples swept twice with
// `routepack sweep` at seed 7, unlimited and with --max-moves 166 --name b166. What the library
// stores, what `routepack info` prints, the figures compared against the saved runs and the sweeps'
// own totals, the CSV, the tab driven by keys, a sweep while the studio is open, and the headless
// rendering. Screenshots into $ROUTEPACK_SCREENSHOT_DIR or a temporary folder.
#include "core/model/topology.h"
#include "core/plan/plan_file.h"
#include "core/plan/sweep_table.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/jobs/jobs_panel.h"
#include "views/jobs/plan_jobs.h"
#include "views/run/run_compare.h"
#include "views/run/whole_runs_view.h"
#include "views/studio_window.h"

#include <QChartView>
#include <QComboBox>
#include <QDockWidget>
#include <QImage>
#include <QLineSeries>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTreeWidget>
#include <QtTest>

#include <nlohmann/json.hpp>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QString text(const char* s) {
    return QString::fromUtf8(s);
}
QString text(const QString& s) {
    return s;
}
/// A QStringList of C strings and QStrings.
template <class... A> QStringList args(const A&... a) {
    return QStringList{text(a)...};
}

/// The integer after `prefix` in `text` (-1 when absent).
long long number_after(const QString& text, const QString& prefix) {
    const auto m = QRegularExpression(QRegularExpression::escape(prefix) + QStringLiteral("(\\d+)")).match(text);
    return m.hasMatch() ? m.captured(1).toLongLong() : -1;
}

} // namespace

class TestStudioWholeRuns : public test::StudioTestBase {
    Q_OBJECT

    fs::path lib_;            ///< trace "ds", windows ds-000..ds-004; whole runs 1 (unlimited) and 2 ('b166')
    QString sweepA_, sweepB_; ///< what the two sweeps printed

    fs::path copyLibrary(const std::string& name) {
        const fs::path to = tmp_ / name;
        fs::copy_file(lib_, to, fs::copy_options::overwrite_existing);
        return to;
    }

    test::CliRun cli(const QStringList& a) {
        const test::CliRun r = test::run_cli(a);
        if (r.code != 0) qWarning("routepack %s: %s", qPrintable(a.join(QLatin1Char(' '))), qPrintable(r.err));
        return r;
    }

private Q_SLOTS:
    void initTestCase() {
        initStudioTest(QStringLiteral("tst_studio_wholeruns"), QStringLiteral("wholeruns"));
        QString skip;
        const fs::path trace = test::shared_path("traces/deepseek-v2-lite", &skip);
        if (trace.empty()) QSKIP(qPrintable(skip));
        lib_ = tmp_ / "runs.routepack";
        const QString db = test::qpath(lib_);
        QCOMPARE(
            cli(args("import", "--db", db, "--name", "ds", "--model", "deepseek-v2-lite", test::qpath(trace))).code, 0);
        QCOMPARE(cli(args("window", "--db", db, "--trace", "ds", "--name", "ds", "--split", "128")).code, 0);
        const QStringList sweep = args("sweep", "--db", db, "--trace", "ds", "--windows", "ds-00[0-2]", "--topology",
                                       "deepseek-v2-lite-ep8-dp4", "--seed", "7", "--quiet");
        const test::CliRun a = cli(sweep);
        QCOMPARE(a.code, 0);
        const test::CliRun b = cli(sweep + args("--max-moves", "166", "--name", "b166"));
        QCOMPARE(b.code, 0);
        sweepA_ = a.out;
        sweepB_ = b.out;
        QVERIFY2(sweepA_.contains(QStringLiteral("saved as runs 1..3 (whole run 1)")), qPrintable(sweepA_));
        QVERIFY2(sweepB_.contains(QStringLiteral("saved as runs 4..6 (whole run 2)")), qPrintable(sweepB_));
    }
    void cleanupTestCase() { clearStudioSettings(); }

    void sweepsAreStoredAsWholeRuns() {
        auto lib = storage::Library::open(lib_, storage::OpenMode::ReadOnly);
        const auto runs = lib->whole_runs();
        QCOMPARE(runs.size(), std::size_t{2});
        const storage::WholeRunEntry &a = runs[0], &b = runs[1];
        QCOMPARE(a.id, std::int64_t{1});
        QCOMPARE(q(a.name), QString());
        QVERIFY(a.source == storage::WholeRunSource::Sweep);
        QCOMPARE(q(a.trace), QStringLiteral("ds"));
        QCOMPARE(q(a.topology), QStringLiteral("deepseek-v2-lite-ep8-dp4"));
        QCOMPARE(a.topology_value.ep_ranks, 8);
        QCOMPARE(a.steps, std::size_t{3});
        QCOMPARE(a.runs, (std::vector<std::int64_t>{1, 2, 3}));
        QCOMPARE(a.settings.seed, std::uint64_t{7});
        QCOMPARE(a.settings.budgets.max_moves, std::int64_t{-1});
        QCOMPARE(q(a.settings.start), QStringLiteral("identity"));
        QVERIFY(a.settings.chained);
        QCOMPARE(a.cluster_run, std::int64_t{0});
        QCOMPARE(b.id, std::int64_t{2});
        QCOMPARE(q(b.name), QStringLiteral("b166"));
        QCOMPARE(b.runs, (std::vector<std::int64_t>{4, 5, 6}));
        QCOMPARE(b.settings.budgets.max_moves, std::int64_t{166});
        // Each step's run is the window's, in run order.
        QCOMPARE(q(lib->run(b.runs[2]).window), QStringLiteral("ds-002"));

        const test::CliRun info = cli(args("info", "--db", test::qpath(lib_)));
        QCOMPARE(info.code, 0);
        QVERIFY2(info.out.contains(QStringLiteral(
                     "whole run 1: sweep of trace 'ds' on deepseek-v2-lite-ep8-dp4 (EP8/DP4), 3 steps, seed 7, "
                     "chained from identity; runs 1..3\n")),
                 qPrintable(info.out));
        QVERIFY2(info.out.contains(QStringLiteral(
                     "whole run 2 'b166': sweep of trace 'ds' on deepseek-v2-lite-ep8-dp4 (EP8/DP4), 3 steps, seed 7, "
                     "max_moves 166, chained from identity; runs 4..6\n")),
                 qPrintable(info.out));
        const test::CliRun json = cli(args("info", "--db", test::qpath(lib_), "--json"));
        const auto j = nlohmann::json::parse(json.out.toStdString());
        QCOMPARE(j["whole_runs"].size(), std::size_t{2});
        QCOMPARE(q(j["whole_runs"][1]["budgets"].dump()), QStringLiteral("{\"max_moves\":166}"));
        QCOMPARE(q(j["whole_runs"][0]["budgets"].dump()), QStringLiteral("{}"));
        QCOMPARE(q(j["whole_runs"][1]["runs"].dump()), QStringLiteral("[4,5,6]"));
    }

    void namesAndStepsAreChecked() {
        const fs::path file = copyLibrary("names.routepack");
        auto lib = storage::Library::open(file);
        const std::string f = file.string();
        storage::WholeRunSpec spec;
        QCOMPARE(q(test::error_of<InputError>([&] { lib->save_whole_run(spec, {}); })),
                 QStringLiteral("a whole run needs at least one step"));
        QCOMPARE(q(test::error_of<InputError>([&] { lib->save_whole_run(spec, {1, 99}); })), q("no run 99 in " + f));
        spec.name = " x";
        QCOMPARE(q(test::error_of<InputError>([&] { lib->save_whole_run(spec, {1}); })),
                 QStringLiteral("whole run name ' x' must not begin or end with white space"));
        QCOMPARE(q(test::error_of<InputError>([&] { lib->rename_whole_run(1, std::string(81, 'a')); })),
                 QStringLiteral("whole run name is 81 characters long, more than 80"));
        QCOMPARE(q(test::error_of<InputError>([&] { lib->rename_whole_run(9, "x"); })), q("no whole run 9 in " + f));
        lib->rename_whole_run(1, "base");
        QCOMPARE(q(lib->whole_run(1).name), QStringLiteral("base"));
        lib->rename_whole_run(1, "");
        QCOMPARE(q(lib->whole_run(1).name), QString());
        // A whole run of saved runs: studio source, settings kept as given.
        spec.name = "pair";
        spec.source = storage::WholeRunSource::Studio;
        spec.settings.seed = 3;
        spec.settings.budgets.max_moves = 5;
        spec.settings.chained = false;
        const std::int64_t id = lib->save_whole_run(spec, {5, 6});
        QCOMPARE(id, std::int64_t{3});
        const storage::WholeRunEntry w = lib->whole_run(id);
        QVERIFY(w.source == storage::WholeRunSource::Studio);
        QCOMPARE(w.runs, (std::vector<std::int64_t>{5, 6}));
        QCOMPARE(w.settings.seed, std::uint64_t{3});
        QCOMPARE(w.settings.budgets.max_moves, std::int64_t{5});
        QVERIFY(!w.settings.chained);
        // The sweep refuses a bad name before planning.
        const test::CliRun bad = test::run_cli(args("sweep", "--db", test::qpath(file), "--trace", "ds", "--topology",
                                                    "deepseek-v2-lite-ep8-dp4", "--name", "a\tb"));
        QVERIFY(bad.code != 0);
        QCOMPARE(bad.err.trimmed(), QStringLiteral("routepack: error: whole run name 'a\\tb' must not contain "
                                                   "control characters"));
        QCOMPARE(lib->whole_runs().size(), std::size_t{3});
        // Read-only libraries refuse.
        auto ro = storage::Library::open(file, storage::OpenMode::ReadOnly);
        QCOMPARE(q(test::error_of<storage::LibraryReadOnly>([&] { ro->rename_whole_run(1, "x"); })),
                 q(f + ": library is read-only (cannot write)"));
    }

    void deletingItsStepsDropsAWholeRun() {
        const fs::path file = copyLibrary("delete.routepack");
        auto lib = storage::Library::open(file);
        lib->delete_run(2);
        QCOMPARE(lib->whole_run(1).runs, (std::vector<std::int64_t>{1, 3}));
        QCOMPARE(lib->whole_run(1).steps, std::size_t{2});
        lib->delete_run(1);
        lib->delete_run(3);
        QCOMPARE(q(test::error_of<InputError>([&] { lib->whole_run(1); })), q("no whole run 1 in " + file.string()));
        QCOMPARE(lib->whole_runs().size(), std::size_t{1});
        // Deleting a window takes its steps out of every whole run.
        lib->delete_window("ds", "ds-000");
        QCOMPARE(lib->whole_run(2).runs, (std::vector<std::int64_t>{5, 6}));
    }

    void comparisonFigures() {
        auto lib = storage::Library::open(lib_, storage::OpenMode::ReadOnly);
        const RunComparison c = compare_whole_runs(*lib, {1, 2});
        QVERIFY2(c.error.empty(), c.error.c_str());
        QCOMPARE(c.runs.size(), std::size_t{2});
        QCOMPARE(c.windows, (std::vector<std::string>{"ds-000", "ds-001", "ds-002"}));
        QCOMPARE(q(c.runs[0].label), QStringLiteral("whole run 1 · unlimited moves · chained"));
        QCOMPARE(q(c.runs[1].label), QStringLiteral("whole run 2 'b166' · max moves 166 · chained"));
        // Step by step: routepack's max_g U of the saved run, and the experts its plan moved.
        std::int64_t moved[2] = {0, 0};
        for (std::size_t r = 0; r < 2; ++r)
            for (std::size_t k = 0; k < 3; ++k) {
                const std::int64_t run = c.runs[r].entry.runs[k];
                const PlanFile plan = parse_plan(lib->run_plan_json(run), "run");
                QCOMPARE(*compare_value(c.runs[r], c.windows[k], CompareMetric::MaxU), lib->run(run).score.max_u);
                QCOMPARE(*compare_value(c.runs[r], c.windows[k], CompareMetric::ExpertsMoved),
                         static_cast<double>(plan.migration.moves));
                moved[r] += plan.migration.moves;
            }
        // The totals are the sweeps' own ("experts moved over the run: N").
        QCOMPARE(moved[0], number_after(sweepA_, QStringLiteral("experts moved over the run: ")));
        QCOMPARE(moved[1], number_after(sweepB_, QStringLiteral("experts moved over the run: ")));
        QCOMPARE(*compare_total(c.runs[1], CompareMetric::ExpertsMoved), static_cast<double>(moved[1]));
        QCOMPARE(*compare_total_difference(c, 1, CompareMetric::ExpertsMoved),
                 static_cast<double>(moved[1] - moved[0]));
        QVERIFY(moved[1] <= 3 * 166);
        const auto modelled = [](const QString& out) {
            return QRegularExpression(QStringLiteral("= ([0-9.]+) s\\n")).match(out).captured(1);
        };
        QCOMPARE(QString::asprintf("%.4f", *compare_total(c.runs[0], CompareMetric::ModelledSeconds)),
                 modelled(sweepA_));
        QCOMPARE(QString::asprintf("%.4f", *compare_total(c.runs[1], CompareMetric::ModelledSeconds)),
                 modelled(sweepB_));
        // The gain total is the mean; a difference at a step is B - A.
        double mean = 0;
        for (const RunStep& st : c.runs[0].series.steps)
            mean += st.gain_pct / 3;
        QCOMPARE(*compare_total(c.runs[0], CompareMetric::GainPct), mean);
        QCOMPARE(*compare_difference(c, 1, "ds-001", CompareMetric::MaxU),
                 c.runs[1].series.steps[1].cost[Method::RoutePack] - c.runs[0].series.steps[1].cost[Method::RoutePack]);
        QCOMPARE(*compare_difference(c, 0, "ds-001", CompareMetric::MaxU), 0.0);
        QVERIFY(!compare_value(c.runs[0], "ds-004", CompareMetric::MaxU));

        const std::string csv = comparison_csv(c);
        const QStringList lines = q(csv).split(QStringLiteral("\r\n"));
        QCOMPARE(lines.size(), 6); // header, 3 steps, total, and the empty text after the last CRLF
        QCOMPARE(lines[0],
                 QStringLiteral("step,window,run1_max_u,run1_vs_baseline_pct,run1_experts_moved,run1_migration_bytes,"
                                "run1_modelled_s,run2_max_u,run2_vs_baseline_pct,run2_experts_moved,"
                                "run2_migration_bytes,run2_modelled_s,run2_minus_run1_max_u,"
                                "run2_minus_run1_vs_baseline_pct,run2_minus_run1_experts_moved,"
                                "run2_minus_run1_migration_bytes,run2_minus_run1_modelled_s"));
        const QStringList step1 = lines[2].split(QLatin1Char(','));
        QCOMPARE(step1.size(), 17);
        QCOMPARE(step1[0], QStringLiteral("1"));
        QCOMPARE(step1[1], QStringLiteral("ds-001"));
        QCOMPARE(step1[2].toDouble(), c.runs[0].series.steps[1].cost[Method::RoutePack]); // %.17g reads back
        const QStringList total = lines[4].split(QLatin1Char(','));
        QCOMPARE(total[0], QStringLiteral("total"));
        QCOMPARE(total[1], QString());
        QCOMPARE(total[4].toLongLong(), moved[0]);
        QCOMPARE(total[14].toLongLong(), moved[1] - moved[0]);
        QVERIFY(lines[5].isEmpty());
    }

    void comparisonErrors() {
        auto lib = storage::Library::open(lib_, storage::OpenMode::ReadOnly);
        QCOMPARE(q(compare_whole_runs(*lib, {1}).error), QStringLiteral("compare at least two whole runs"));
        QCOMPARE(q(compare_whole_runs(*lib, {1, 2, 1}).error), QStringLiteral("whole run 1 is named twice"));
        QCOMPARE(q(compare_whole_runs(*lib, {1, 7}).error), q("no whole run 7 in " + lib_.string()));
        QVERIFY(compare_whole_runs(*lib, {1, 7}).runs.empty());
        // The CSV's text fields (RFC 4180, the writer sweep.csv uses too).
        QCOMPARE(csv_field("ds-001"), std::string("ds-001"));
        QCOMPARE(csv_field("a,b"), std::string("\"a,b\""));
        QCOMPARE(csv_field("say \"hi\""), std::string("\"say \"\"hi\"\"\""));
        QCOMPARE(csv_field("a\r\nb"), std::string("\"a\r\nb\""));
        // Labels name what differs: here the seed and the move budget.
        storage::WholeRunEntry a = lib->whole_run(1), b = lib->whole_run(2);
        b.settings.seed = 8;
        b.settings.budgets.annealing.levels = 40;
        QCOMPARE(q(whole_run_labels({a, b})[1]),
                 QStringLiteral("whole run 2 'b166' · seed 8 · levels 40 · max moves 166 · chained"));
    }

    void tabComparesTheCheckedRuns() {
        WholeRunsView view;
        view.resize(1366, 768);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QSignalSpy listed(&view, &WholeRunsView::listUpdated);
        view.setLibrary(test::qpath(lib_));
        QTRY_VERIFY_WITH_TIMEOUT(!listed.isEmpty(), 30000);
        QCOMPARE(view.listed(), (QList<qint64>{1, 2}));
        QVERIFY2(view.noteText().startsWith(QStringLiteral("Check two or more whole runs")),
                 qPrintable(view.noteText()));
        // The user checks run 2, then run 1, with the keyboard: run 2 is the one measured against.
        auto* list = view.findChild<QListWidget*>(QStringLiteral("wholeRunList"));
        QVERIFY(list);
        list->setFocus();
        list->setCurrentRow(1);
        QTest::keyClick(list, Qt::Key_Space);
        QCOMPARE(view.compared(), (QList<qint64>{2}));
        list->setCurrentRow(0);
        QTest::keyClick(list, Qt::Key_Space);
        QCOMPARE(view.compared(), (QList<qint64>{2, 1}));
        QTRY_VERIFY_WITH_TIMEOUT(!view.isLoading() && view.comparison(), 60000);
        const RunComparison& c = *view.comparison();
        QCOMPARE(c.runs.front().entry.id, std::int64_t{2});
        QCOMPARE(view.tableRows(), 4);
        QCOMPARE(view.tableText(3, 0), QStringLiteral("total"));
        QCOMPARE(view.tableText(1, 0), QStringLiteral("ds-001"));
        QCOMPARE(view.tableText(1, 1), QString::asprintf("%.4f", c.runs[0].series.steps[1].cost[Method::RoutePack]));
        QCOMPARE(view.tableText(3, 3),
                 QString::asprintf("%+.4f", *compare_total_difference(c, 1, CompareMetric::MaxU)));
        auto* overlay = view.findChild<QChartView*>(QStringLiteral("compareOverlay"));
        QVERIFY(overlay);
        const auto lines = overlay->chart()->series();
        QCOMPARE(lines.size(), 2);
        QCOMPARE(lines[0]->name(), QStringLiteral("whole run 2 'b166' · max moves 166 · chained"));
        QCOMPARE(static_cast<QLineSeries*>(lines[1])->count(), 3);
        // The figure box: experts moved, with the sweeps' totals.
        auto* box = view.findChild<QComboBox*>(QStringLiteral("compareMetric"));
        box->setFocus();
        QTest::keyClick(box, Qt::Key_Down);
        QTest::keyClick(box, Qt::Key_Down);
        QCOMPARE(view.metric(), CompareMetric::ExpertsMoved);
        const long long a = number_after(sweepA_, QStringLiteral("experts moved over the run: "));
        const long long b = number_after(sweepB_, QStringLiteral("experts moved over the run: "));
        QCOMPARE(view.tableText(3, 1), QLocale(QLocale::English).toString(b));
        QCOMPARE(view.tableText(3, 3), QStringLiteral("+") + QLocale(QLocale::English).toString(a - b));
        QVERIFY2(view.noteText().contains(
                     QStringLiteral("experts moved +%1").arg(QLocale(QLocale::English).toString(a - b))),
                 qPrintable(view.noteText()));
        // Unchecking leaves one run: no comparison, the note says what to do.
        list->setCurrentRow(1);
        QTest::keyClick(list, Qt::Key_Space);
        QCOMPARE(view.compared(), (QList<qint64>{1}));
        QVERIFY(!view.comparison());
        QCOMPARE(view.tableRows(), 0);
        view.setCompared({1, 2});
        QTRY_VERIFY_WITH_TIMEOUT(!view.isLoading() && view.comparison(), 60000);
        QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete); // the axes replaced above
        const QString png = test::qpath(tmp_ / "overlay.png");
        QString why;
        QVERIFY2(view.exportChart(QStringLiteral("overlay"), png, &why), qPrintable(why));
        QVERIFY(!QImage(png).isNull());
        QVERIFY(!view.exportChart(QStringLiteral("pie"), png, &why));
        QCOMPARE(why, QStringLiteral("no comparison chart named pie"));
        shot(&view, QStringLiteral("studio-whole-runs-1366x768"));
    }

    void aSweepWhileTheStudioIsOpenAppears() {
        const fs::path file = copyLibrary("live.routepack");
        auto w = std::make_unique<StudioWindow>(options_);
        w->resize(1600, 1000);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QString err;
        QVERIFY2(w->openLibrary(test::qpath(file), false, &err), qPrintable(err));
        WholeRunsView* view = test::ui::wholeRunsView(*w);
        QVERIFY(view);
        QTabWidget* tabs = test::ui::resultTabs(*w);
        QCOMPARE(tabs->tabText(3), QStringLiteral("Whole runs"));
        QTRY_COMPARE_WITH_TIMEOUT(view->listed(), (QList<qint64>{1, 2}), 30000);
        view->setCompared({1, 2});
        QTRY_VERIFY_WITH_TIMEOUT(!view->isLoading() && view->comparison(), 60000);
        const test::CliRun r =
            cli(args("sweep", "--db", test::qpath(file), "--trace", "ds", "--windows", "ds-00[0-1]", "--topology",
                     "deepseek-v2-lite-ep8-dp4", "--seed", "3", "--name", "third", "--quiet"));
        QCOMPARE(r.code, 0);
        QTRY_COMPARE_WITH_TIMEOUT(view->listed(), (QList<qint64>{1, 2, 3}), 30000);
        QCOMPARE(view->compared(), (QList<qint64>{1, 2})); // the checked runs stay checked
        tabs->setCurrentWidget(view);
        // View > Jobs shows the jobs panel, hidden at first.
        auto* dock = w->findChild<QDockWidget*>(QStringLiteral("jobsDock"));
        QVERIFY(dock && !dock->isVisible());
        QCOMPARE(dock->toggleViewAction()->text(), QStringLiteral("Jobs"));
        dock->toggleViewAction()->trigger();
        QVERIFY(dock->isVisible());
        QTest::qWait(200);
        // Shown, it is short: the charts above keep at least their minimum height.
        QVERIFY2(dock->height() <= 260, qPrintable(QString::number(dock->height())));
        auto* difference = view->findChild<QChartView*>(QStringLiteral("compareDifference"));
        QVERIFY2(difference->height() >= difference->minimumHeight(),
                 qPrintable(QString::number(difference->height())));
        shot(w.get(), QStringLiteral("studio-whole-runs-live"));
    }

    void jobsPanelFollowsEveryJob() {
        const fs::path file = copyLibrary("jobs.routepack");
        PlanJobQueue queue;
        JobsPanel panel(&queue);
        panel.resize(1000, 300);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        RunPlanRequest run;
        run.library = test::qpath(file);
        run.trace = QStringLiteral("ds");
        run.windows = QStringList{QStringLiteral("ds-001"), QStringLiteral("ds-000")};
        run.topologyName = QStringLiteral("deepseek-v2-lite-ep8-dp4");
        run.topology = known_topology("deepseek-v2-lite-ep8-dp4");
        run.budgets.seed = 7;
        run.budgets.workers = 1;
        const quint64 a = queue.enqueueRun(run);
        PlanJobRequest one;
        one.library = run.library;
        one.trace = run.trace;
        one.window = QStringLiteral("ds-002");
        one.topologyName = run.topologyName;
        one.topology = run.topology;
        one.budgets = run.budgets;
        const quint64 b = queue.enqueue(one);
        QCOMPARE(panel.jobs().size(), std::size_t{2});
        QCOMPARE(panel.job(b)->state, QStringLiteral("queued"));
        QCOMPARE(panel.lineText(b, 1), QStringLiteral("ds/ds-002"));
        // The user picks the queued job (the newest, listed first) and presses Cancel job.
        auto* list = panel.findChild<QTreeWidget*>(QStringLiteral("jobsList"));
        auto* cancel = panel.findChild<QPushButton*>(QStringLiteral("jobsCancel"));
        QVERIFY(list && cancel);
        list->setFocus();
        QTest::keyClick(list, Qt::Key_Home);
        QCOMPARE(list->currentItem()->text(0), QString::number(b));
        QVERIFY(cancel->isEnabled());
        QTest::mouseClick(cancel, Qt::LeftButton);
        QCOMPARE(panel.job(b)->state, QStringLiteral("removed"));
        QCOMPARE(panel.lineText(b, 6), QStringLiteral("cancelled before it started"));
        QTRY_COMPARE_WITH_TIMEOUT(panel.job(a)->state, QStringLiteral("finished"), 300000);
        // The copy held runs 1..6 and whole runs 1, 2: the two windows are runs 7, 8 and whole run 3.
        QCOMPARE(panel.lineText(a, 1), QStringLiteral("ds: 2 windows"));
        QCOMPARE(panel.lineText(a, 3), QStringLiteral("100 %"));
        QCOMPARE(panel.lineText(a, 6), QStringLiteral("2 of 2 windows, runs 7..8, whole run 3"));
        QVERIFY(panel.job(a)->started.isValid() && panel.job(a)->ended >= panel.job(a)->started);
        auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
        QCOMPARE(lib->whole_run(3).runs, (std::vector<std::int64_t>{7, 8}));
        QCOMPARE(q(lib->run(7).window), QStringLiteral("ds-000"));
        auto* clear = panel.findChild<QPushButton*>(QStringLiteral("jobsClear"));
        QVERIFY(clear->isEnabled());
        QTest::mouseClick(clear, Qt::LeftButton);
        QVERIFY(panel.jobs().empty());
        QCOMPARE(list->topLevelItemCount(), 0);
    }

    void headlessCompareRuns() {
        // docs/studio-runs.md's command, in the folder that holds the library.
        const QString out = test::qpath(tmp_ / "compared");
        QProcess p;
        p.setWorkingDirectory(test::qpath(tmp_));
        p.start(QStringLiteral(ROUTEPACK_STUDIO),
                args("--headless-out", "compared", "--db", "runs.routepack", "--compare-runs", "1,2"));
        QVERIFY(p.waitForFinished(300000));
        const QString stdoutText = QString::fromUtf8(p.readAllStandardOutput());
        QCOMPARE(p.exitCode(), 0);
        QStringList expected{QStringLiteral("routepack-studio: whole runs 1,2 compared in %1").arg(out),
                             QStringLiteral("  compare-runs.csv")};
        for (const char* key : {"max_u", "vs_baseline_pct", "experts_moved", "migration_bytes", "modelled_s"})
            expected << QStringLiteral("  compare-%1-overlay.png").arg(QLatin1String(key))
                     << QStringLiteral("  compare-%1-difference.png").arg(QLatin1String(key));
        QCOMPARE(stdoutText, expected.join(QLatin1Char('\n')) + QLatin1Char('\n'));
        auto lib = storage::Library::open(lib_, storage::OpenMode::ReadOnly);
        QCOMPARE(q(test::read_file(tmp_ / "compared" / "compare-runs.csv")),
                 q(comparison_csv(compare_whole_runs(*lib, {1, 2}))));
        QVERIFY(!QImage(out + QStringLiteral("/compare-modelled_s-difference.png")).isNull());

        const auto fails = [&](const QStringList& args, int code, const QString& error) {
            QProcess e;
            e.start(QStringLiteral(ROUTEPACK_STUDIO), args);
            QVERIFY(e.waitForFinished(120000));
            QCOMPARE(e.exitCode(), code);
            QCOMPARE(QString::fromUtf8(e.readAllStandardError()),
                     QStringLiteral("routepack-studio: error: ") + error + QLatin1Char('\n'));
        };
        const QString db = test::qpath(lib_);
        fails(args("--headless-out", out, "--db", db, "--compare-runs", "1"), 2,
              QStringLiteral("--compare-runs needs at least two whole run ids (got '1')"));
        fails(args("--headless-out", out, "--db", db, "--compare-runs", "1,x"), 2,
              QStringLiteral("--compare-runs must list whole run ids, positive integers separated by commas (got "
                             "'1,x')"));
        fails(args("--headless-out", out, "--db", db, "--compare-runs", "1,2", "--run", "1"), 2,
              QStringLiteral("--compare-runs renders whole runs: give it without --run, --cluster-run, --trace and "
                             "--window"));
        fails(args("--headless-out", out, "--db", db, "--compare-runs", "1,9"), 1,
              q("no whole run 9 in " + lib_.string()));
        QProcess help;
        help.start(QStringLiteral(ROUTEPACK_STUDIO), args("--help"));
        QVERIFY(help.waitForFinished(60000));
        QVERIFY(
            QString::fromUtf8(help.readAllStandardOutput())
                .contains(QStringLiteral("routepack-studio --headless-out DIR --db LIBRARY --compare-runs A,B[,...]")));
    }
};

QTEST_MAIN(TestStudioWholeRuns)
#include "tst_studio_wholeruns.moc"
