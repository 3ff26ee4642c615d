// Communication in the studio: the two communication-aware methods (grouter, routepack+comm) in the
// method boxes, the comparison table and chart and the costs view; the comparison's communication
// columns; the "communication" tab (node-by-node dispatch matrix, expert co-activation ordered by
// node) and its Qt-free helpers (views/plan/comm_data.h) on hand-computed cases. Plans are real plans of
// planted windows with per-token routes: two families of samples that each use their own half of the
// experts (the planted case of tst_comm), on one node, on two nodes, and on two nodes without routes.
#include "core/import/import.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/plan/score/placement.h"
#include "tests/comm_testutil.h"
#include "tests/gui_testutil.h"
#include "tests/testutil.h"
#include "tests/views_testaccess.h"
#include "views/dialogs/topology_editor.h"
#include "views/plan/comm_data.h"
#include "views/plan/comm_panel.h"
#include "views/plan/convergence_panel.h"
#include "views/plan/costs_panel.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/gain_explanation.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_models.h"
#include "views/plan/plan_views.h"
#include "views/plan/row_heatmap_panel.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChartView>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QLocale>
#include <QSpinBox>
#include <QStyleFactory>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <random>

using namespace routepack;
using namespace routepack::views;
using i64 = std::int64_t;

using test::family;
using test::kFamilyA;
using test::kFamilyB;
using test::sample_of;
using test::tiny_model;

namespace {

const char* kStages = R"("attention_stages": [{"name": "a", "alpha": 1, "beta": 1}])";

/// The planted window (4 samples of family A, 4 of family B, 8 tokens each, E = 8, top-2, 2 MoE
/// layers) on P = 4, D = 4, C = 20; `nodes` 2 = 2 GPUs per node, 1 = one node.
PlanInput planted_input(int nodes) {
    const ModelDescription m = tiny_model(2, 8, 2);
    PlanInput in;
    in.window.model = m;
    for (int k = 0; k < 4; ++k) {
        in.window.append(sample_of("a" + std::to_string(k), m, family(kFamilyA, k)));
        in.window.append(sample_of("b" + std::to_string(k), m, family(kFamilyB, k)));
    }
    in.trace_name = "planted";
    in.window_name = "all";
    in.topology = parse_topology(std::string(R"({"ep_ranks": 4, "dp_slots": 4, "token_cap": 20, )") +
                                     (nodes > 1 ? R"("gpus_per_node": 2, "comm_weight": 1, )" : "") + kStages + "}",
                                 "t");
    in.budgets.workers = 1;
    return in;
}

/// A larger window for the screenshots: 4 families over 32 experts, 4 MoE layers, top-4, 64 samples
/// of 24..80 tokens; a token takes its family's 8 experts with probability 0.85, else any expert.
/// EP8 / DP8 with 2 GPUs per node: 4 nodes.
PlanInput families_input() {
    const int L = 4, E = 32, K = 4;
    const ModelDescription m = tiny_model(L, E, K);
    std::mt19937_64 rng(7);
    PlanInput in;
    in.window.model = m;
    for (int i = 0; i < 64; ++i) {
        const int fam = i % 4;
        const int T = 24 + static_cast<int>(rng() % 57);
        std::vector<std::vector<std::vector<int>>> routes(L);
        for (int l = 0; l < L; ++l)
            for (int t = 0; t < T; ++t) {
                std::vector<int> top;
                while (static_cast<int>(top.size()) < K) {
                    // Family f's experts at layer l: 8 ids spread by a per-layer stride.
                    const int e = (rng() % 100 < 85) ? ((fam * 8 + static_cast<int>(rng() % 8)) * (2 * l + 1)) % E
                                                     : static_cast<int>(rng() % E);
                    if (std::find(top.begin(), top.end(), e) == top.end()) top.push_back(e);
                }
                routes[static_cast<std::size_t>(l)].push_back(top);
            }
        in.window.append(sample_of("s" + std::to_string(i), m, routes));
    }
    in.trace_name = "families";
    in.window_name = "all";
    in.topology = parse_topology(std::string(R"({"ep_ranks": 8, "dp_slots": 8, "token_cap": 256, )"
                                             R"("edp_shards": [[0, 1, 2, 3], [4, 5, 6, 7]], "gpus_per_node": 2, )") +
                                     kStages + "}",
                                 "t");
    in.budgets.workers = 1;
    in.budgets.annealing.levels = 4;
    in.budgets.annealing.steps = 200;
    return in;
}

} // namespace

class TestStudioComm : public QObject {
    Q_OBJECT
private:
    std::shared_ptr<const PlanResult> one_, two_, noRoutes_;
    std::shared_ptr<const Trace> window_, windowNoRoutes_;
    QString shots_;
    QTemporaryDir tmp_;
    void shoot(QWidget* w, const QString& name) { QVERIFY2(test::save_screenshot(w, shots_, name), qPrintable(name)); }

private Q_SLOTS:
    void initTestCase() {
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        QVERIFY(tmp_.isValid());
        shots_ = test::screenshot_dir(tmp_.filePath(QStringLiteral("screens")));
        PlanInput two = planted_input(2);
        window_ = std::make_shared<const Trace>(two.window);
        two_ = std::make_shared<const PlanResult>(plan_window(two));
        one_ = std::make_shared<const PlanResult>(plan_window(planted_input(1)));
        two.window.routes.clear(); // a library imported before routes were kept
        windowNoRoutes_ = std::make_shared<const Trace>(two.window);
        noRoutes_ = std::make_shared<const PlanResult>(plan_window(two));
        QCOMPARE(two_->comm.nodes, 2);
        QVERIFY(two_->comm.available && two_->comm.grouter && two_->comm.routepack_comm);
        QCOMPARE(one_->comm.nodes, 1);
        QCOMPARE(noRoutes_->comm.nodes, 2);
        QVERIFY(!noRoutes_->comm.available && !noRoutes_->comm.grouter);
        // The planted minimum: grouter and routepack+comm send nothing between nodes, routepack does.
        QCOMPARE(two_->comm.grouter->comm->inter_total, i64(0));
        QCOMPARE(two_->comm.routepack_comm->comm->inter_total, i64(0));
        QVERIFY(two_->routepack.comm->inter_total > 0);
    }

    void methodsOfAPlan() {
        QCOMPARE(plan_methods(*one_),
                 (std::vector<Method>{Method::Baseline, Method::Reorder, Method::KarmarkarKarp, Method::RoutePack}));
        QCOMPARE(plan_methods(*two_), (std::vector<Method>{Method::Baseline, Method::Reorder, Method::KarmarkarKarp,
                                                           Method::RoutePack, Method::Grouter, Method::RoutePackComm}));
        QCOMPARE(plan_methods(*noRoutes_),
                 (std::vector<Method>{Method::Baseline, Method::Reorder, Method::KarmarkarKarp, Method::RoutePack}));
        QCOMPARE(std::string(method_key(Method::Grouter)), std::string("grouter"));
        QCOMPARE(std::string(method_key(Method::RoutePackComm)), std::string("routepack+comm"));
        QCOMPARE(std::string(method_label(Method::RoutePackComm)), std::string("RoutePack+comm"));
        QCOMPARE(&method_of(*two_, Method::Grouter), &*two_->comm.grouter);
        QCOMPARE(&placement_of(*two_, Method::Grouter), &two_->comm.grouter_placement);
        QCOMPARE(&placement_of(*two_, Method::RoutePackComm), &two_->comm.comm_placement);
        QCOMPARE(&placement_of(*two_, Method::Baseline), &two_->placement.identity);
        QCOMPARE(&placement_of(*two_, Method::RoutePack), &two_->placement.lpt);
        bool threw = false;
        try {
            (void)method_of(*one_, Method::Grouter);
        } catch (const std::out_of_range& e) {
            threw = true;
            QCOMPARE(std::string(e.what()),
                     std::string("method_of: the plan has no grouter method (one node or no routes)"));
        }
        QVERIFY(threw);
        QCOMPARE(grouped_count(1286301), std::string("1,286,301"));
        QCOMPARE(grouped_count(-42), std::string("-42"));
        QCOMPARE(grouped_count(0), std::string("0"));
        QCOMPARE(grouped_count(-100000), std::string("-100,000"));
        QCOMPARE(comm_figure_text(*one_, i64(5)), std::string());
        QCOMPARE(comm_figure_text(*noRoutes_, std::nullopt), std::string("n/a (re-import the trace)"));
        QCOMPARE(comm_figure_text(*two_, i64(1234)), std::string("1,234"));
    }

    void compareTableOneNodeUnchanged() {
        CompareTableModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setRuns({one_}, {QStringLiteral("one")});
        QCOMPARE(m.rowCount(), 4);
        QCOMPARE(m.columnCount(), int(CompareTableModel::ColumnCount));
        QCOMPARE(int(CompareTableModel::ColumnCount), 17);
        QVERIFY(!ui::hasCommColumns(&m));
        for (int r = 0; r < 4; ++r)
            QCOMPARE(m.rawValue(r, CompareTableModel::Method).toString(),
                     QString::fromLatin1(method_key(method_at(r))));
        QVERIFY(!m.headerData(CompareTableModel::InterCopies, Qt::Horizontal).isValid());
    }

    void compareTableCommColumns() {
        CompareTableModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setRuns({one_, two_, noRoutes_}, {QStringLiteral("one"), QStringLiteral("two"), QStringLiteral("old")});
        QCOMPARE(m.rowCount(), 4 + 6 + 4);
        QCOMPARE(m.columnCount(), int(CompareTableModel::CommColumnCount));
        QCOMPARE(m.headerData(CompareTableModel::InterCopies, Qt::Horizontal).toString(),
                 QStringLiteral("inter-node copies"));
        QCOMPARE(m.headerData(CompareTableModel::InterVsRoutepack, Qt::Horizontal).toString(),
                 QStringLiteral("copies vs routepack"));
        auto text = [&](int row, int col) { return m.data(m.index(row, col)).toString(); };
        // Run "one" (rows 0-3): no communication figures.
        for (int r = 0; r < 4; ++r)
            for (int c = CompareTableModel::InterCopies; c < CompareTableModel::CommColumnCount; ++c) {
                QVERIFY(!m.rawValue(r, c).isValid());
                QCOMPARE(text(r, c), QStringLiteral("\u2014"));
            }
        // Run "two" (rows 4-9): the six methods with their exact figures.
        const i64 rpInter = two_->routepack.comm->inter_total;
        for (int k = 0; k < 6; ++k) {
            const int row = 4 + k;
            QCOMPARE(m.rowRun(row), 1);
            QCOMPARE(m.rowMethod(row), method_at(k));
            const MethodResult& r = method_of(*two_, method_at(k));
            QCOMPARE(m.rawValue(row, CompareTableModel::Method).toString(),
                     QString::fromLatin1(method_key(method_at(k))));
            QCOMPARE(m.rawValue(row, CompareTableModel::Joint).toDouble(), r.metrics.score.max_u);
            QCOMPARE(m.rawValue(row, CompareTableModel::InterCopies).toLongLong(), r.comm->inter_total);
            QCOMPARE(m.rawValue(row, CompareTableModel::IntraCopies).toLongLong(), r.comm->intra_total);
            QCOMPARE(m.rawValue(row, CompareTableModel::BusiestCopies).toLongLong(), r.comm->busiest_total);
            QCOMPARE(text(row, CompareTableModel::InterCopies), QLocale().toString(r.comm->inter_total));
            QCOMPARE(m.rawValue(row, CompareTableModel::InterVsRoutepack).toDouble(),
                     100.0 * static_cast<double>(r.comm->inter_total - rpInter) / static_cast<double>(rpInter));
        }
        QCOMPARE(text(4 + 3, CompareTableModel::InterVsRoutepack), QStringLiteral("0.00 %"));
        QCOMPARE(text(4 + 4, CompareTableModel::InterCopies), QStringLiteral("0"));
        QCOMPARE(text(4 + 4, CompareTableModel::InterVsRoutepack), QStringLiteral("-100.00 %"));
        QCOMPARE(text(4 + 5, CompareTableModel::InterVsRoutepack), QStringLiteral("-100.00 %"));
        QCOMPARE(text(4 + 4, CompareTableModel::Method), QStringLiteral("Grouter"));
        QCOMPARE(text(4 + 5, CompareTableModel::Method), QStringLiteral("RoutePack+comm"));
        // The planted case: every token stays on its family's node, 8 samples x 8 tokens x 2 layers.
        QCOMPARE(m.rawValue(4 + 4, CompareTableModel::IntraCopies).toLongLong(), i64(128));
        // Run "old" (rows 10-13): on two nodes without routes, never zero.
        for (int r = 10; r < 14; ++r)
            for (int c = CompareTableModel::InterCopies; c < CompareTableModel::CommColumnCount; ++c) {
                QVERIFY(!m.rawValue(r, c).isValid());
                QCOMPARE(text(r, c), QStringLiteral("n/a (re-import the trace)"));
            }
    }

    void savedRunShowsTheSame() {
        // A run saved in the library is shown from its plan JSON (restore_plan): the comparison holds
        // the same six rows and every value, the communication figures included.
        const PlanFile f = parse_plan(plan_to_json(*two_), "run.json");
        const auto back = std::make_shared<const PlanResult>(restore_plan(f, *window_, "run.json"));
        CompareTableModel a, b;
        a.setRuns({two_}, {QStringLiteral("run")});
        b.setRuns({back}, {QStringLiteral("run")});
        QCOMPARE(b.rowCount(), 6);
        QCOMPARE(b.columnCount(), a.columnCount());
        for (int r = 0; r < a.rowCount(); ++r)
            for (int c = 0; c < a.columnCount(); ++c)
                QCOMPARE(b.data(b.index(r, c)).toString(), a.data(a.index(r, c)).toString());
        PlanView view;
        view.setPlan(back, window_);
        ui::commPanel(&view)->setMethod(Method::RoutePackComm);
        QCOMPARE(ui::dispatchMap(ui::commPanel(&view))->value(0, 1), 0.0);
        QCOMPARE(ui::dispatchMap(ui::commPanel(&view))->value(1, 0), 0.0);
    }

    void compareChartSixMethods() {
        CompareView cv;
        cv.resize(1100, 700);
        cv.setRuns({one_, two_}, {QStringLiteral("one node"), QStringLiteral("two nodes")});
        auto* view = qobject_cast<QChartView*>(cv.chartWidget());
        QVERIFY(view);
        auto* bars = qobject_cast<QBarSeries*>(view->chart()->series().first());
        QVERIFY(bars);
        QCOMPARE(bars->barSets().size(), 2);
        auto* x = qobject_cast<QBarCategoryAxis*>(view->chart()->axes(Qt::Horizontal).first());
        QCOMPARE(x->count(), 6);
        QCOMPARE(x->at(4), QStringLiteral("Grouter"));
        QCOMPARE(x->at(5), QStringLiteral("RoutePack+comm"));
        for (int meth = 0; meth < 6; ++meth)
            QCOMPARE(bars->barSets().at(1)->at(meth), method_of(*two_, method_at(meth)).metrics.score.max_u);
        QCOMPARE(bars->barSets().at(0)->at(4), 0.0);
        QCOMPARE(compareBarToolTip(*one_, Method::Grouter, QStringLiteral("one node")),
                 QStringLiteral("<b>one node</b>: Grouter did not run (one node, or no per-token routes)"));
        QVERIFY(compareBarToolTip(*two_, Method::RoutePackComm, QStringLiteral("two"))
                    .startsWith(QStringLiteral("<b>two</b>: RoutePack+comm<br>max_g U = ")));
        // One run on one node: four categories, as before.
        cv.setRuns({one_}, {QStringLiteral("one node")});
        x = qobject_cast<QBarCategoryAxis*>(view->chart()->axes(Qt::Horizontal).first());
        QCOMPARE(x->count(), 4);
        QCOMPARE(cv.model()->columnCount(), int(CompareTableModel::ColumnCount));
    }

    void methodBoxesListSixMethods() {
        PlanView view;
        view.resize(1200, 720);
        view.setPlan(two_, window_);
        for (QComboBox* box : view.gridPanel()->findChildren<QComboBox*>())
            if (box->toolTip() == QStringLiteral("Method whose layout is shown")) QCOMPARE(box->count(), 6);
        QCOMPARE(view.gridPanel()->method(), Method::RoutePack);
        view.gridPanel()->setMethod(Method::Grouter);
        QCOMPARE(view.gridPanel()->method(), Method::Grouter);
        QCOMPARE(ui::method(ui::model(view.gridPanel())), Method::Grouter);
        const Layout& g = two_->comm.grouter->layout;
        for (int r = 0; r < g.rows; ++r)
            for (int d = 0; d < g.dp_slots; ++d) {
                i64 tokens = 0;
                for (int i : g.cell(g.cell_index(r, d)))
                    tokens += two_->samples[static_cast<std::size_t>(i)].length;
                QCOMPARE(ui::model(view.gridPanel())->index(r, d).data(RawValueRole).toLongLong(), tokens);
            }
        // Costs of routepack+comm at its own placement: max_g U is the method's joint cost.
        ui::costsPanel(&view)->setMethod(Method::RoutePackComm);
        QCOMPARE(ui::costsPanel(&view)->method(), Method::RoutePackComm);
        QBarSet* totals = ui::shardTotalSet(ui::costsPanel(&view));
        QVERIFY(totals);
        double maxU = 0;
        for (int k = 0; k < totals->count(); ++k)
            maxU = std::max(maxU, totals->at(k));
        QCOMPARE(maxU, two_->comm.routepack_comm->metrics.score.max_u);
        QVERIFY(ui::costsPanel(&view)->headingText().contains(QStringLiteral("RoutePack+comm")) ||
                ui::rowChartView(ui::costsPanel(&view))->chart()->title().contains(QStringLiteral("RoutePack+comm")));
        ui::costsPanel(&view)->setMethod(Method::Grouter);
        maxU = 0;
        for (int k = 0; k < ui::shardTotalSet(ui::costsPanel(&view))->count(); ++k)
            maxU = std::max(maxU, ui::shardTotalSet(ui::costsPanel(&view))->at(k));
        QCOMPARE(maxU, two_->comm.grouter->metrics.score.max_u);
        ui::rowHeatmapPanel(&view)->setMethod(Method::RoutePackComm);
        QCOMPARE(ui::rowHeatmapPanel(&view)->method(), Method::RoutePackComm);
        // A one-node plan: back to the four methods, the shown method falls back to routepack.
        view.setPlan(one_, nullptr);
        QCOMPARE(view.gridPanel()->method(), Method::RoutePack);
        QCOMPARE(ui::costsPanel(&view)->method(), Method::RoutePack);
        view.gridPanel()->setMethod(Method::Reorder);
        QCOMPARE(view.gridPanel()->method(), Method::Reorder);
        view.gridPanel()->setMethod(Method::Grouter); // not in the list: ignored
        QCOMPARE(view.gridPanel()->method(), Method::Reorder);
    }

    void coactivationByHand() {
        // E = 4, one MoE layer, top-2. Sample s0: tokens {0,1}, {0,1}, {2,3}; s1: {1,2}, {3,3} (named
        // twice: counts once), {-1,0} (one missing route).
        const ModelDescription m = tiny_model(1, 4, 2);
        Trace w;
        w.model = m;
        w.append(sample_of("s0", m, {{{0, 1}, {0, 1}, {2, 3}}}));
        w.append(sample_of("s1", m, {{{1, 2}, {3, 3}, {-1, 0}}}));
        const std::vector<i64> got = coactivation_matrix(w, 0);
        const std::vector<i64> want = {3, 2, 0, 0, //
                                       2, 3, 1, 0, //
                                       0, 1, 2, 1, //
                                       0, 0, 1, 2};
        QCOMPARE(got, want);
        bool threw = false;
        try {
            (void)coactivation_matrix(w, 1);
        } catch (const std::invalid_argument& e) {
            threw = true;
            QCOMPARE(std::string(e.what()), std::string("coactivation_matrix: MoE layer index out of range"));
        }
        QVERIFY(threw);
        Trace bare = w;
        bare.routes.clear();
        threw = false;
        try {
            (void)coactivation_matrix(bare, 0);
        } catch (const std::invalid_argument& e) {
            threw = true;
            QCOMPARE(std::string(e.what()),
                     std::string("coactivation_matrix: the window's samples carry no per-token routes"));
        }
        QVERIFY(threw);
    }

    void expertOrderAndDispatchByHand() {
        // P = 4 EP ranks of 2 slots, 2 GPUs per node: ranks 0-1 (slots 0-3) on node 0, ranks 2-3 on
        // node 1. Experts 1, 3, 5, 7 sit on slots 0-3 (node 0), experts 0, 2, 4, 6 on slots 4-7.
        const Topology topo = parse_topology(
            std::string(R"({"ep_ranks": 4, "dp_slots": 2, "token_cap": 10, "gpus_per_node": 2, )") + kStages + "}",
            "t");
        Placement pi;
        pi.layers = 1;
        pi.experts = 8;
        pi.ep_ranks = 4;
        pi.slot = {4, 0, 5, 1, 6, 2, 7, 3};
        const ExpertNodeOrder o = experts_by_node(topo, pi, 0);
        QCOMPARE(o.experts, (std::vector<int>{1, 3, 5, 7, 0, 2, 4, 6}));
        QCOMPARE(o.node, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
        QCOMPARE(o.boundaries, std::vector<int>{4});
        CommCost c;
        c.layers = 2;
        c.nodes = 2;
        c.matrix = {1, 2, 3, 4, 10, 20, 30, 40};
        QCOMPARE(dispatch_matrix(c, -1), (std::vector<i64>{11, 22, 33, 44}));
        QCOMPARE(dispatch_matrix(c, 1), (std::vector<i64>{10, 20, 30, 40}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, dispatch_matrix(c, 2));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, experts_by_node(topo, pi, 1));
    }

    void commPanelShowsTheTraffic() {
        PlanView view;
        view.resize(1280, 760);
        view.setPlan(two_, window_);
        CommPanel* p = ui::commPanel(&view);
        QVERIFY(p);
        QCOMPARE(view.viewWidget(QStringLiteral("communication")), p);
        QCOMPARE(ui::methodCombo(p)->count(), 6);
        QCOMPARE(ui::layerCombo(p)->count(), 3); // sum + 2 MoE layers
        QCOMPARE(p->method(), Method::RoutePack);
        QCOMPARE(p->layer(), -1);
        HeatmapWidget* d = ui::dispatchMap(p);
        QVERIFY(ui::diagonalMarked(d));
        QCOMPARE(d->rowCount(), 2);
        QCOMPARE(d->columnCount(), 2);
        // routepack, summed over layers: off-diagonal = inter-node copies, diagonal = intra pairs.
        const CommCost& rp = *two_->routepack.comm;
        QCOMPARE(d->value(0, 1) + d->value(1, 0), static_cast<double>(rp.inter_total));
        QCOMPARE(d->value(0, 0) + d->value(1, 1), static_cast<double>(rp.intra_total));
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
                QCOMPARE(d->value(a, b), static_cast<double>(rp.matrix[static_cast<std::size_t>(a) * 2 + b] +
                                                             rp.matrix[static_cast<std::size_t>(4 + a * 2 + b)]));
        QVERIFY(d->toolTipFor(0, 1).contains(QString::fromStdString(grouped_count(rp.matrix[1] + rp.matrix[5])) +
                                             QStringLiteral(" token copies")));
        QVERIFY(p->headingText().contains(
            QStringLiteral("<b>%1</b> inter-node copies").arg(QString::fromStdString(grouped_count(rp.inter_total)))));
        QCOMPARE(ui::affinityMap(p)->rowCount(), 0); // the sum: pick a layer
        // Layer 1 of grouter: nothing crosses nodes; the affinity map puts each family in one block.
        p->setMethod(Method::Grouter);
        p->setLayer(1);
        QCOMPARE(d->value(0, 1), 0.0);
        QCOMPARE(d->value(1, 0), 0.0);
        QCOMPARE(d->value(0, 0) + d->value(1, 1), 64.0); // 8 samples x 8 tokens at one layer
        QVERIFY(d->toolTipFor(1, 1).contains(QStringLiteral("intra-node")));
        // The co-activation is counted on a worker thread; until it arrives the map says so.
        QVERIFY(p->coactivationPending());
        QCOMPARE(ui::affinityMap(p)->rowCount(), 0);
        QTRY_VERIFY(!p->coactivationPending());
        HeatmapWidget* a = ui::affinityMap(p);
        QCOMPARE(a->rowCount(), 8);
        QCOMPARE(ui::columnBoundaries(a), std::vector<int>{4});
        QCOMPARE(ui::rowBoundaries(a), std::vector<int>{4});
        const ExpertNodeOrder o = experts_by_node(two_->topology, two_->comm.grouter_placement, 1);
        const std::vector<i64> co = coactivation_matrix(*window_, 1);
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 8; ++j) {
                const int e = o.experts[static_cast<std::size_t>(i)], f = o.experts[static_cast<std::size_t>(j)];
                QCOMPARE(a->value(i, j), static_cast<double>(co[static_cast<std::size_t>(e) * 8 + f]));
                // The planted families never share a token: the off-block entries are zero.
                if ((i < 4) != (j < 4)) QCOMPARE(a->value(i, j), 0.0);
            }
        // Family A's layer-1 experts {0,1,2,3} form one block: each is used by 4 samples x 4 tokens.
        std::vector<int> block(o.experts.begin(), o.experts.begin() + 4);
        std::sort(block.begin(), block.end());
        QVERIFY(block == (std::vector<int>{0, 1, 2, 3}) || block == (std::vector<int>{4, 5, 6, 7}));
        for (int i = 0; i < 8; ++i)
            QCOMPARE(a->value(i, i), 16.0);
        QVERIFY(a->toolTipFor(0, 0).contains(QStringLiteral("16 tokens route to it")));
        QVERIFY(a->toolTipFor(0, 1).contains(QStringLiteral("(same node: one copy serves both)")));
        // Counted once per layer of the window: back on layer 1 it shows at once.
        p->setLayer(-1);
        QCOMPARE(a->rowCount(), 0);
        p->setLayer(1);
        QVERIFY(!p->coactivationPending());
        QCOMPARE(a->rowCount(), 8);
        // One node and no routes: the empty states.
        view.setPlan(one_, nullptr);
        QVERIFY(p->headingText().startsWith(QStringLiteral("The plan is on one node")));
        QCOMPARE(d->rowCount(), 0);
        QVERIFY(!ui::methodCombo(p)->isEnabled());
        view.setPlan(noRoutes_, windowNoRoutes_);
        QVERIFY(p->headingText().startsWith(QStringLiteral("Communication figures: n/a (re-import the trace).")));
        QCOMPARE(d->rowCount(), 0);
        QCOMPARE(a->rowCount(), 0);
        view.setPlan(two_, nullptr); // no window: the matrix, no co-activation
        p->setLayer(0);
        QCOMPARE(d->rowCount(), 2);
        QCOMPARE(a->rowCount(), 0);
    }

    void topologyEditorKeepsNodeAndCommFields() {
        // gpus_per_node 8 and comm_weight 0.5 (the shipped 2-node topology, weighted): loaded into the
        // editor and taken back, the JSON is the same, field for field.
        Topology t = known_topology("deepseek-v2-lite-ep16-dp8-2nodes");
        QCOMPARE(t.gpus_per_node, 8);
        t.comm_weight = 0.5;
        t.comm_load_tolerance = 0.05;
        const std::string json = topology_to_json(t);
        QVERIFY(json.find("\"gpus_per_node\":8") != std::string::npos);
        QVERIFY(json.find("\"comm_weight\":0.5") != std::string::npos);
        QVERIFY(json.find("\"comm_load_tolerance\":0.05") != std::string::npos);
        TopologyEditor ed;
        ed.setTopology(QStringLiteral("two-nodes"), parse_topology(json, "two-nodes.json"));
        QString why;
        const auto back = ed.topology(&why);
        QVERIFY2(back.has_value(), qPrintable(why));
        QCOMPARE(topology_to_json(*back), json);
        QCOMPARE(back->nodes(), 2);
        QCOMPARE(back->comm_weight, 0.5);
        QCOMPARE(back->comm_load_tolerance, 0.05);
        // The fields edit: weight 2, tolerance back to its default 0.02 (then left out of the JSON).
        auto* weight = ed.findChild<QDoubleSpinBox*>(QStringLiteral("commWeight"));
        auto* tolerance = ed.findChild<QDoubleSpinBox*>(QStringLiteral("commLoadTolerance"));
        QVERIFY(weight && tolerance);
        QCOMPARE(weight->value(), 0.5);
        QCOMPARE(weight->text(), QStringLiteral("0.5"));
        QCOMPARE(tolerance->text(), QStringLiteral("0.05"));
        weight->setValue(2);
        tolerance->setValue(0.02);
        const std::string edited = topology_to_json(*ed.topology());
        QVERIFY(edited.find("\"comm_weight\":2") != std::string::npos);
        QVERIFY(edited.find("comm_load_tolerance") == std::string::npos);
        // Explicit node lists round-trip and edit; with gpus_per_node too they are refused.
        Topology lists = parse_topology(std::string(R"({"ep_ranks": 4, "dp_slots": 3, "token_cap": 10, )"
                                                    R"("ep_rank_nodes": [0, 1, 1, 0], "dp_slot_nodes": [1, 0, 1], )") +
                                            kStages + "}",
                                        "lists.json");
        ed.setTopology(QStringLiteral("lists"), lists);
        auto* ep = ed.findChild<QLineEdit*>(QStringLiteral("epRankNodes"));
        auto* dp = ed.findChild<QLineEdit*>(QStringLiteral("dpSlotNodes"));
        QVERIFY(ep && dp);
        QCOMPARE(ep->text(), QStringLiteral("0, 1, 1, 0"));
        QCOMPARE(dp->text(), QStringLiteral("1, 0, 1"));
        QCOMPARE(topology_to_json(*ed.topology()), topology_to_json(lists));
        dp->setText(QStringLiteral("0 0 1"));
        QCOMPARE(ed.topology()->dp_slot_nodes, (std::vector<int>{0, 0, 1}));
        dp->setText(QStringLiteral("0, x, 1"));
        QVERIFY(!ed.topology(&why));
        QCOMPARE(why, QStringLiteral("DP slot nodes: 'x' is not a node id (an integer in 0..65535)"));
        dp->setText(QStringLiteral("1, 0, 1"));
        QCOMPARE(parseNodeListText(QStringLiteral(""), "EP rank nodes"), std::vector<int>{});
        QCOMPARE(nodeListText({}), QString());
        // A one-node topology keeps its JSON exactly (no node or comm fields written).
        const Topology one = known_topology("deepseek-v2-lite-ep8-dp4");
        ed.setTopology(QStringLiteral("one"), one);
        QCOMPARE(topology_to_json(*ed.topology()), topology_to_json(one));
        QCOMPARE(ep->text(), QString());
    }

    void screenshots() {
        const PlanInput in = families_input();
        const auto plan = std::make_shared<const PlanResult>(plan_window(in));
        QCOMPARE(plan->comm.nodes, 4);
        QVERIFY(plan->comm.routepack_comm);
        qInfo("families window: routepack %lld inter-node copies, grouter %lld, routepack+comm %lld",
              static_cast<long long>(plan->routepack.comm->inter_total),
              static_cast<long long>(plan->comm.grouter->comm->inter_total),
              static_cast<long long>(plan->comm.routepack_comm->comm->inter_total));
        PlanView view;
        view.resize(1280, 760);
        view.setPlan(plan, std::make_shared<const Trace>(in.window));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setCurrentWidget(ui::commPanel(&view));
        ui::commPanel(&view)->setMethod(Method::RoutePackComm);
        ui::commPanel(&view)->setLayer(0);
        QTRY_VERIFY(!ui::commPanel(&view)->coactivationPending());
        QCoreApplication::processEvents();
        shoot(&view, QStringLiteral("plan-communication"));
        ui::commPanel(&view)->setMethod(Method::RoutePack);
        ui::commPanel(&view)->setLayer(-1);
        QCoreApplication::processEvents();
        shoot(&view, QStringLiteral("plan-communication-sum"));
        CompareView cv;
        cv.resize(1840, 700);
        cv.setRuns({plan}, {QStringLiteral("families, 4 nodes")});
        cv.show();
        QVERIFY(QTest::qWaitForWindowExposed(&cv));
        shoot(&cv, QStringLiteral("compare-communication"));
    }

    void realDeepSeekOnTwoNodes() {
        // The first 64 samples of the real DeepSeek-V2-Lite trace (numeric id order) on the shipped
        // 2-node topology: the views show the plan's own figures, the co-activation map's diagonal
        // is each expert's token count at that layer (top-6 names 6 distinct experts per token), and
        // the screenshot of the tab for docs/studio.md.
        ROUTEPACK_REQUIRE_SHARED(ds, "traces/deepseek-v2-lite");
        std::vector<std::filesystem::path> files;
        for (const auto& f : std::filesystem::directory_iterator(ds))
            if (f.path().extension() == ".csv") files.push_back(f.path());
        std::sort(files.begin(), files.end(),
                  [](const auto& a, const auto& b) { return natural_less(a.stem().string(), b.stem().string()); });
        files.resize(std::min<std::size_t>(files.size(), 64));
        ImportOptions opt;
        opt.model = known_model("deepseek-v2-lite");
        PlanInput in;
        in.window = import_trace_to_memory(files, opt);
        QCOMPARE(in.window.size(), std::size_t(64));
        QVERIFY(in.window.has_routes());
        in.trace_name = "deepseek-v2-lite";
        in.window_name = "first-64";
        in.topology = known_topology("deepseek-v2-lite-ep16-dp8-2nodes");
        in.budgets.workers = 1;
        in.budgets.annealing.levels = 6;
        in.budgets.annealing.steps = 300;
        const auto plan = std::make_shared<const PlanResult>(plan_window(in));
        const auto window = std::make_shared<const Trace>(in.window);
        QCOMPARE(plan->comm.nodes, 2);
        QVERIFY(plan->comm.grouter && plan->comm.routepack_comm);
        qInfo("DeepSeek first 64, ep16-dp8-2nodes: inter-node copies routepack %lld, grouter %lld, routepack+comm "
              "%lld; joint %.4f, %.4f, %.4f",
              static_cast<long long>(plan->routepack.comm->inter_total),
              static_cast<long long>(plan->comm.grouter->comm->inter_total),
              static_cast<long long>(plan->comm.routepack_comm->comm->inter_total), plan->routepack.metrics.score.max_u,
              plan->comm.grouter->metrics.score.max_u, plan->comm.routepack_comm->metrics.score.max_u);
        PlanView view;
        view.resize(1280, 760);
        view.setPlan(plan, window);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setCurrentWidget(ui::commPanel(&view));
        CommPanel* p = ui::commPanel(&view);
        p->setMethod(Method::RoutePackComm);
        p->setLayer(0);
        QTRY_VERIFY(!p->coactivationPending());
        QCoreApplication::processEvents();
        const CommCost& c = *plan->comm.routepack_comm->comm;
        HeatmapWidget* d = ui::dispatchMap(p);
        QCOMPARE(d->value(0, 1), static_cast<double>(c.matrix[1]));
        QCOMPARE(d->value(1, 0), static_cast<double>(c.matrix[2]));
        QCOMPARE(d->value(0, 0) + d->value(1, 1), static_cast<double>(c.intra_per_layer[0]));
        QCOMPARE(d->value(0, 1) + d->value(1, 0), static_cast<double>(c.inter_per_layer[0]));
        HeatmapWidget* a = ui::affinityMap(p);
        QCOMPARE(a->rowCount(), 64);
        QCOMPARE(ui::columnBoundaries(a), std::vector<int>{32}); // EP ranks 0-7 hold 32 of the 64 experts
        const auto loads = aggregate_expert_loads(window->counts, window->size(), window->model.num_moe_layers(),
                                                  window->model.experts);
        const ExpertNodeOrder o = experts_by_node(plan->topology, plan->comm.comm_placement, 0);
        for (int k = 0; k < 64; ++k)
            QCOMPARE(a->value(k, k), static_cast<double>(loads[static_cast<std::size_t>(o.experts[k])]));
        shoot(&view, QStringLiteral("real-ds-communication"));
        CompareView cv;
        cv.resize(1840, 700);
        cv.setRuns({plan}, {QStringLiteral("DeepSeek first 64, 2 nodes")});
        auto* m = qobject_cast<CompareTableModel*>(cv.model());
        QCOMPARE(m->rowCount(), 6);
        QCOMPARE(m->rawValue(5, CompareTableModel::InterCopies).toLongLong(), c.inter_total);
        cv.show();
        QVERIFY(QTest::qWaitForWindowExposed(&cv));
        shoot(&cv, QStringLiteral("real-ds-compare-communication"));
    }
};

QTEST_MAIN(TestStudioComm)
#include "tst_studio_comm.moc"
