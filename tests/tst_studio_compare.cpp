// The Compare tab, offscreen: each run's label (name, topology, nodes, seed, budget, how it ended), the
// "vs baseline" column, the frozen run column that stays while the others scroll, the table as the
// chart's full legend (run colours, short unique bar-set names), and every saved run of the shown
// window offered in the "Runs" menu whatever was opened this session. Screenshots at 1600x1000 and
// 1366x768 into $ROUTEPACK_SCREENSHOT_DIR or a temporary folder.
#include "core/model/topology.h"
#include "core/plan/planner.h"
#include "core/synth/synth.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/plan/compare_data.h"
#include "views/plan/plan_models.h"
#include "views/plan/plan_views.h"
#include "views/studio_window.h"
#include "views/widgets/frozen_table.h"
#include "views/widgets/roles.h"

#include <QAbstractBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLegend>
#include <QMenu>
#include <QScrollBar>
#include <QTableView>
#include <QToolButton>
#include <QtTest>

#include <atomic>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {
constexpr auto& q = test::qpath;

/// A plan with the four methods' joint costs only (baseline 300, reorder 200, karmarkar_karp 250,
/// routepack 150) on `topo`.
std::shared_ptr<PlanResult> costsOnly(const Topology& topo, bool cancelled) {
    auto p = std::make_shared<PlanResult>();
    p->topology = topo;
    p->budgets.seed = 1;
    p->budgets.annealing.levels = 12;
    p->budgets.annealing.steps = 1000;
    p->cancelled = cancelled;
    const double u[] = {300, 200, 250, 150};
    MethodResult* m[] = {&p->baseline, &p->reorder, &p->karmarkar_karp, &p->routepack};
    const Method ids[] = {Method::Baseline, Method::Reorder, Method::KarmarkarKarp, Method::RoutePack};
    for (int k = 0; k < 4; ++k) {
        m[k]->method = ids[k];
        m[k]->metrics.score.max_u = u[k];
    }
    return p;
}

PlannerBudgets quickBudgets(std::uint64_t seed) {
    PlannerBudgets b;
    b.annealing.levels = 3;
    b.annealing.steps = 100;
    b.seeding.candidates = 6;
    b.seeding.population = 4;
    b.workers = 1;
    b.seed = seed;
    return b;
}

} // namespace

class TestStudioCompare : public test::StudioTestBase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { initStudioTest(QStringLiteral("tst_studio_compare"), QStringLiteral("studio-compare")); }
    void cleanupTestCase() { clearStudioSettings(); }

    void labels() {
        Topology two = known_topology("deepseek-v2-lite-ep16-dp8-2nodes");
        QCOMPARE(two.nodes(), 2);
        Topology one = two;
        one.gpus_per_node = 0;
        QCOMPARE(one.nodes(), 1);
        QCOMPARE(compareRunLabel(compareRunFacts(11, *costsOnly(two, true))),
                 QStringLiteral("run 11 \u00b7 EP16/DP8 \u00b7 2 nodes \u00b7 seed 1 \u00b7 12x1000 steps \u00b7 "
                                "cancelled"));
        QCOMPARE(compareRunLabel(compareRunFacts(1, *costsOnly(one, false))),
                 QStringLiteral("run 1 \u00b7 EP16/DP8 \u00b7 seed 1 \u00b7 12x1000 steps"));
        QCOMPARE(compareRunName(-2), QStringLiteral("unsaved 2"));
        auto timed = costsOnly(one, false);
        timed->time_limit_hit = true;
        QVERIFY(compareRunLabel(compareRunFacts(3, *timed)).endsWith(QStringLiteral(" \u00b7 time limit")));
        // The move budget and a run-level base placement name the run; budget 0 ("keep") is a budget.
        auto budgeted = costsOnly(one, false);
        budgeted->budgets.max_moves = 200;
        QCOMPARE(compareRunLabel(compareRunFacts(4, *budgeted)),
                 QStringLiteral("run 4 \u00b7 EP16/DP8 \u00b7 seed 1 \u00b7 12x1000 steps \u00b7 max moves 200"));
        storage::RunEntry kept;
        kept.id = 6;
        kept.status = "finished";
        kept.topology_value = one;
        kept.budgets.max_moves = 0;
        kept.budgets.history_decay = 0.5;
        QCOMPARE(compareRunLabel(compareRunFacts(kept)),
                 QStringLiteral("run 6 \u00b7 EP16/DP8 \u00b7 seed 1 \u00b7 12x1000 steps \u00b7 max moves 0 \u00b7 "
                                "history decay 0.5"));
        // Saved runs: a failed one is offered disabled, ascending ids, other windows left out.
        std::vector<storage::RunEntry> runs(4);
        const char* status[] = {"finished", "failed", "cancelled", "finished"};
        const std::int64_t ids[] = {11, 2, 1, 5};
        for (int k = 0; k < 4; ++k) {
            runs[k].id = ids[k];
            runs[k].trace = "t";
            runs[k].window = k == 3 ? "other" : "w";
            runs[k].topology_value = k == 0 ? two : one;
            runs[k].status = status[k];
            runs[k].budgets.seed = 7;
        }
        runs[0].name = "long anneal"; // a named run: its name follows its id
        const QList<CompareChoice> c = compareChoices(runs, "t", "w", [](qint64 id) { return id == 11; });
        QCOMPARE(c.size(), 3);
        QCOMPARE(c[0].id, qint64{1});
        QVERIFY(c[0].label.endsWith(QStringLiteral("cancelled")));
        QVERIFY(!c[0].checked && c[0].enabled);
        QCOMPARE(c[1].id, qint64{2});
        QVERIFY(!c[1].enabled && c[1].label.endsWith(QStringLiteral("failed")));
        QVERIFY(c[2].checked && c[2].label.contains(QStringLiteral("2 nodes")));
        QVERIFY2(c[2].label.startsWith(
                     QStringLiteral("run 11 \u00b7 long anneal \u00b7 EP16/DP8 \u00b7 2 nodes \u00b7 seed 7 \u00b7 ")),
                 qPrintable(c[2].label));
        QVERIFY(c[0].label.startsWith(QStringLiteral("run 1 \u00b7 EP16/DP8"))); // unnamed: the id alone
    }

    void vsBaselineColumnAndLegend() {
        const Topology one = known_topology("synthetic-demo-ep8-dp4");
        CompareView cv;
        cv.resize(1366, 600);
        QStringList names;
        QList<std::shared_ptr<const PlanResult>> runs;
        for (int id : {1, 11}) {
            runs << costsOnly(one, id == 11);
            names << compareRunLabel(compareRunFacts(id, *runs.back()));
        }
        cv.setRuns(runs, names);
        auto* m = qobject_cast<CompareTableModel*>(cv.model());
        QVERIFY(m);
        QCOMPARE(m->headerData(CompareTableModel::JointVsBaseline, Qt::Horizontal).toString(),
                 QStringLiteral("vs baseline"));
        const double expected[] = {0.0, -100.0 / 3.0, -50.0 / 3.0, -50.0};
        for (int r = 0; r < 4; ++r) {
            QCOMPARE(m->rawValue(r, CompareTableModel::JointVsBaseline).toDouble(), expected[r]);
            QCOMPARE(m->rawValue(r + 4, CompareTableModel::JointVsBaseline).toDouble(), expected[r]);
        }
        QCOMPARE(m->index(3, CompareTableModel::JointVsBaseline).data().toString(), QStringLiteral("-50.00 %"));
        QCOMPARE(m->index(1, CompareTableModel::JointVsBaseline).data().toString(), QStringLiteral("-33.33 %"));
        // The run column is the legend: each run's colour, its full label as text and tooltip.
        QCOMPARE(m->index(4, CompareTableModel::Run).data(Qt::DecorationRole).value<QColor>(), compareRunColour(1));
        QCOMPARE(m->index(4, CompareTableModel::Run).data().toString(), names[1]);
        QVERIFY(names[1].endsWith(QStringLiteral("cancelled")));
        // The chart's bar sets carry the runs' names, unique and short, in the same colours.
        auto* series =
            qobject_cast<QAbstractBarSeries*>(qobject_cast<QChartView*>(cv.chartWidget())->chart()->series().value(0));
        QVERIFY(series);
        QCOMPARE(series->barSets().size(), 2);
        QCOMPARE(series->barSets()[0]->label(), QStringLiteral("run 1"));
        QCOMPARE(series->barSets()[1]->label(), QStringLiteral("run 11"));
        QCOMPARE(series->barSets()[1]->color(), compareRunColour(1));
        QCOMPARE(qobject_cast<QChartView*>(cv.chartWidget())->chart()->legend()->alignment(), Qt::AlignRight);
    }

    void frozenRunColumn() {
        const Topology one = known_topology("synthetic-demo-ep8-dp4");
        CompareView cv;
        cv.resize(700, 500);
        auto run = costsOnly(one, false);
        cv.setRuns({run}, {compareRunLabel(compareRunFacts(11, *run))});
        cv.show();
        QVERIFY(QTest::qWaitForWindowExposed(&cv));
        auto* table = qobject_cast<FrozenColumnTable*>(cv.tableView());
        QVERIFY(table);
        QTableView* frozen = ui::frozenView(table);
        QVERIFY(frozen->isVisible());
        QCOMPARE(frozen->model(), table->model());
        for (int c = 1; c < table->model()->columnCount(); ++c)
            QVERIFY(frozen->isColumnHidden(c));
        QCOMPARE(frozen->columnWidth(0), table->columnWidth(0));
        QCOMPARE(frozen->width(), table->columnWidth(0));
        QScrollBar* h = table->horizontalScrollBar();
        QVERIFY2(h->maximum() > 0, "the table must be wider than the view for this test");
        h->setValue(h->maximum());
        QCoreApplication::processEvents();
        // Scrolled to the end: the run column still sits at the left edge, over the scrolled columns.
        QVERIFY(table->columnViewportPosition(0) < 0);
        QCOMPARE(frozen->geometry().left(), table->frameWidth());
        QCOMPARE(frozen->indexAt(QPoint(5, 5)).data().toString(), QStringLiteral("run 11 \u00b7 EP8/DP4 \u00b7 seed 1 "
                                                                                 "\u00b7 12x1000 steps"));
        // Selection and sorting are the table's.
        table->selectRow(2);
        QVERIFY(frozen->selectionModel()->isRowSelected(2, {}));
        shot(&cv, QStringLiteral("compare-frozen-scrolled"));
    }

    void everySavedRunSelectable() {
        // One window with three saved runs: one-node, cancelled, and on two nodes. A session that shows
        // only the first still offers the other two, labelled, and adds them on a check.
        const fs::path dir = tmp_ / "lib";
        fs::create_directories(dir);
        const fs::path file = test::synth_library(dir, 4, 4);
        std::vector<qint64> ids;
        {
            auto lib = storage::Library::open(file);
            Topology one = known_topology("synthetic-demo-ep8-dp4");
            Topology two = one;
            two.gpus_per_node = 4;
            PlanInput in;
            in.window = lib->load_window("syn", "all");
            in.trace_name = "syn";
            in.window_name = "all";
            in.topology = one;
            in.budgets = quickBudgets(1);
            ids.push_back(lib->save_run(plan_window(in), "one").id);
            const std::atomic<bool> stop{true};
            in.budgets = quickBudgets(2);
            const PlanResult cancelled = plan_window(in, {}, &stop);
            QVERIFY(cancelled.cancelled);
            ids.push_back(lib->save_run(cancelled, "one").id);
            in.topology = two;
            in.budgets = quickBudgets(3);
            ids.push_back(lib->save_run(plan_window(in), "two").id);
        }
        StudioWindow w(options_);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QString err;
        QVERIFY2(w.openLibrary(q(file), false, &err), qPrintable(err));
        QVERIFY(w.selectRun(ids[0]));
        CompareView* cv = ui::compareView(w);
        QTRY_COMPARE_WITH_TIMEOUT(cv->model()->rowCount(), 4, 30000);
        QMenu* menu = cv->runsMenu();
        QCOMPARE(menu->actions().size(), 3);
        QVERIFY(menu->actions()[0]->isChecked());
        QVERIFY(!menu->actions()[1]->isChecked());
        QVERIFY2(menu->actions()[1]->text().endsWith(QStringLiteral("cancelled")),
                 qPrintable(menu->actions()[1]->text()));
        QVERIFY2(menu->actions()[2]->text().contains(QStringLiteral("EP8/DP4 \u00b7 2 nodes")),
                 qPrintable(menu->actions()[2]->text()));
        menu->actions()[1]->setChecked(true);
        QTRY_COMPARE_WITH_TIMEOUT(cv->model()->rowCount(), 8, 30000);
        cv->runsMenu()->actions()[2]->setChecked(true);
        QTRY_VERIFY_WITH_TIMEOUT(cv->model()->rowCount() > 8, 30000); // the two-node run has its comm methods
        auto* m = qobject_cast<CompareTableModel*>(cv->model());
        QStringList names;
        for (int k = 0; k < m->runCount(); ++k)
            names << m->runName(k);
        QCOMPARE(names.size(), 3);
        QVERIFY2(names.filter(QStringLiteral("cancelled")).size() == 1, qPrintable(names.join(QLatin1Char('|'))));
        QVERIFY2(names.filter(QStringLiteral("2 nodes")).size() == 1, qPrintable(names.join(QLatin1Char('|'))));
        ui::resultTabs(w)->setCurrentWidget(cv);
        QTest::qWait(50);
        shot(&w, QStringLiteral("compare-runs-1600x1000"));
        w.resize(1366, 768);
        QTest::qWait(50);
        shot(&w, QStringLiteral("compare-runs-1366x768"));
        // Unchecked, a run leaves the comparison (the shown run stays).
        cv->runsMenu()->actions()[1]->setChecked(false);
        QTRY_COMPARE_WITH_TIMEOUT(m->runCount(), 2, 30000);
        QVERIFY(cv->runsMenu()->actions()[0]->isChecked());
    }
};

QTEST_MAIN(TestStudioCompare)
#include "tst_studio_compare.moc"
