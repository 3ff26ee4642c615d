// Plan-inspection and compare views (views/plan/plan_views.h) on a real plan of a synthetic window:
// every number a view shows is checked against an independent computation from the window's
// counts, the placements and the layouts (or against the planner's own metrics), every model runs
// under QAbstractItemModelTester, exports are read back, and every view is written as a screenshot
// (light and dark palette, and 2x) to $ROUTEPACK_SCREENSHOT_DIR or a temporary folder.
#include "core/plan/planner.h"
#include "core/plan/score/packing.h"
#include "core/plan/score/score.h"
#include "core/synth/synth.h"
#include "tests/gui_testutil.h"
#include "tests/views_testaccess.h"
#include "views/plan/convergence_panel.h"
#include "views/plan/costs_panel.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/gain_explanation.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_models.h"
#include "views/plan/plan_views.h"
#include "views/plan/row_heatmap_panel.h"
#include "views/widgets/file_export.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QHelpEvent>
#include <QLineSeries>
#include <QScatterSeries>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QStyleFactory>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolTip>
#include <QValueAxis>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>

using namespace routepack;
using namespace routepack::views;

namespace {

Topology test_topology() {
    Topology t;
    t.ep_ranks = 8;
    t.dp_slots = 4;
    t.edp_shards = {{0, 1}, {2, 3}};
    t.token_cap = 4096;
    t.attention_stages = {AttentionStage{"mla", 27.0, 27.0}, AttentionStage{"kda", 10.0, 0.0}};
    return t;
}

/// The synthetic window `window_seed` (64 samples, 11 MoE layers, 32 experts) planned with `seed`.
PlanInput test_input(std::uint64_t window_seed, std::uint64_t seed) {
    SynthConfig c;
    c.groups = 8;
    c.group_size = 8;
    c.seed = window_seed;
    PlanInput in;
    in.window = synth_trace(c);
    in.trace_name = "synth";
    in.window_name = "all";
    in.topology = test_topology();
    in.budgets.annealing.levels = 6;
    in.budgets.annealing.steps = 300;
    in.budgets.seeding.candidates = 8;
    in.budgets.seeding.population = 4;
    in.budgets.workers = 2;
    in.budgets.seed = seed;
    return in;
}

/// G[l][p] straight from the counts and a placement (eq. 10).
std::vector<std::uint64_t> independent_rank_loads(const Trace& w, const Placement& pi) {
    const int L = w.model.num_moe_layers(), E = w.model.experts, P = pi.ep_ranks;
    std::vector<std::uint64_t> G(static_cast<std::size_t>(L) * P, 0);
    for (std::size_t i = 0; i < w.size(); ++i)
        for (int l = 0; l < L; ++l)
            for (int e = 0; e < E; ++e)
                G[static_cast<std::size_t>(l) * P + pi.rank_of(l, e)] += w.count(i, l, e);
    return G;
}

/// Independent per-row-shard costs (eqs. 11-14) of a layout: A, E [R][G], peaks [R][G][L].
struct Costs {
    std::vector<double> A, E;
    std::vector<std::int64_t> peak;
};
Costs independent_costs(const Trace& w, const Topology& t, const Placement& pi, const Layout& x) {
    const int L = w.model.num_moe_layers(), E = w.model.experts, P = pi.ep_ranks, G = t.shards(), R = x.rows;
    const double C = static_cast<double>(t.token_cap);
    Costs out;
    out.A.assign(static_cast<std::size_t>(R) * G, 0);
    out.E.assign(static_cast<std::size_t>(R) * G, 0);
    out.peak.assign(static_cast<std::size_t>(R) * G * L, 0);
    for (int r = 0; r < R; ++r)
        for (int g = 0; g < G; ++g) {
            for (const auto& st : t.attention_stages) {
                double worst = 0;
                for (int d : t.edp_shards[static_cast<std::size_t>(g)]) {
                    std::int64_t s = 0, s2 = 0;
                    for (int i : x.cell(x.cell_index(r, d))) {
                        const std::int64_t len = w.samples[static_cast<std::size_t>(i)].length;
                        s += len;
                        s2 += len * len;
                    }
                    worst = std::max(worst, st.alpha * (static_cast<double>(s) / C) +
                                                st.beta * (static_cast<double>(s2) / (C * C)));
                }
                out.A[static_cast<std::size_t>(r) * G + g] += worst;
            }
            std::int64_t peakSum = 0;
            for (int l = 0; l < L; ++l) {
                std::vector<std::int64_t> W(static_cast<std::size_t>(P), 0);
                for (int d : t.edp_shards[static_cast<std::size_t>(g)])
                    for (int i : x.cell(x.cell_index(r, d)))
                        for (int e = 0; e < E; ++e)
                            W[static_cast<std::size_t>(pi.rank_of(l, e))] += w.count(static_cast<std::size_t>(i), l, e);
                const std::int64_t pk = *std::max_element(W.begin(), W.end());
                out.peak[(static_cast<std::size_t>(r) * G + g) * L + l] = pk;
                peakSum += pk;
            }
            out.E[static_cast<std::size_t>(r) * G + g] = static_cast<double>(peakSum) / C;
        }
    return out;
}

bool close(double a, double b, double rel = 1e-12) {
    return std::abs(a - b) <= rel * std::max({1.0, std::abs(a), std::abs(b)});
}

QPalette darkPalette() {
    return routepack::test::dark_palette();
}

/// A plan with hand-set metrics only (for exact CSV text and percentage changes).
std::shared_ptr<PlanResult> tiny_plan() {
    auto p = std::make_shared<PlanResult>();
    auto set = [](MethodResult& m, Method method, double maxU, double sumU, double maxJ, double cv, std::int64_t sep,
                  std::int64_t tep, double eta, double att, int viol) {
        m.method = method;
        m.layout = Layout::from_cells(2, 1, {{0}, {1}});
        m.metrics.score = Score{maxU, sumU, maxJ};
        m.metrics.cv_global = cv;
        m.metrics.ep_peak_sum = sep;
        m.metrics.ep_tail_peak = tep;
        m.metrics.ep_balance_efficiency = eta;
        m.metrics.attention_sum = att;
        m.metrics.cap_violations = viol;
    };
    set(p->baseline, Method::Baseline, 300, 500, 80, 0.25, 1000, 90, 0.5, 12.5, 0);
    set(p->reorder, Method::Reorder, 200, 400, 70, 0.125, 900, 80, 0.75, 12.5, 0);
    set(p->karmarkar_karp, Method::KarmarkarKarp, 250, 450, 75, 0.125, 950, 85, 0.625, 11, 1);
    set(p->routepack, Method::RoutePack, 150, 350, 60, 0.125, 800, 70, 0.875, 13, 0);
    return p;
}

} // namespace

class TestViewsPlan : public QObject {
    Q_OBJECT
private:
    std::shared_ptr<const PlanResult> plan_, plan2_;
    std::shared_ptr<const Trace> window_;
    QString shots_;
    QTemporaryDir tmp_;
    void shoot(QWidget* w, const QString& name) { QVERIFY2(test::save_screenshot(w, shots_, name), qPrintable(name)); }

private Q_SLOTS:
    void initTestCase() {
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        QVERIFY(tmp_.isValid());
        shots_ = test::screenshot_dir(tmp_.filePath(QStringLiteral("screens")));
        const PlanInput in = test_input(7, 1);
        window_ = std::make_shared<const Trace>(in.window);
        plan_ = std::make_shared<const PlanResult>(plan_window(in));
        plan2_ = std::make_shared<const PlanResult>(plan_window(test_input(8, 2))); // another step
        QVERIFY(plan_->rows.rows >= 2);
        QVERIFY(!plan_->search.convergence.empty());
    }

    void epHeatmap() {
        PlanView view;
        view.resize(1280, 760);
        view.setPlan(plan_, window_);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCOMPARE(view.viewNames(),
                 (QStringList{QStringLiteral("ep-heatmap"), QStringLiteral("row-heatmap"), QStringLiteral("costs"),
                              QStringLiteral("grid"), QStringLiteral("convergence"), QStringLiteral("communication"),
                              QStringLiteral("measured")}));
        QCOMPARE(view.viewWidget(QStringLiteral("ep-heatmap")), static_cast<QWidget*>(ui::epHeatmapPanel(&view)));
        QCOMPARE(view.viewWidget(QStringLiteral("nope")), nullptr);
        const int L = plan_->model.num_moe_layers(), P = plan_->topology.ep_ranks;
        for (bool planned : {false, true}) {
            const Placement& pi = planned ? plan_->placement.lpt : plan_->placement.identity;
            const auto G = independent_rank_loads(*window_, pi);
            QCOMPARE(G, planned ? plan_->placement.rank_loads_lpt : plan_->placement.rank_loads_identity);
            HeatmapWidget* map = ui::epHeatmapPanel(&view)->map(planned);
            QCOMPARE(map->rowCount(), L);
            QCOMPARE(map->columnCount(), P);
            const QImage shot = map->grab().toImage();
            double cvSum = 0;
            for (int l = 0; l < L; ++l) {
                std::uint64_t sum = 0;
                for (int p = 0; p < P; ++p)
                    sum += G[static_cast<std::size_t>(l) * P + p];
                const double mean = static_cast<double>(sum) / P;
                double var = 0;
                for (int p = 0; p < P; ++p) {
                    const std::uint64_t g = G[static_cast<std::size_t>(l) * P + p];
                    QVERIFY2(close(map->value(l, p), static_cast<double>(g) / mean),
                             qPrintable(QStringLiteral("l %1 p %2").arg(l).arg(p)));
                    var += (static_cast<double>(g) - mean) * (static_cast<double>(g) - mean);
                    // The tooltip names the absolute layer and the exact load.
                    const QString tip = map->toolTipFor(l, p);
                    QVERIFY2(tip.contains(QStringLiteral("G = %1 tokens").arg(g)), qPrintable(tip));
                    QVERIFY(tip.contains(
                        QStringLiteral("<b>Layer %1</b>").arg(plan_->model.moe_layers[static_cast<std::size_t>(l)])));
                    // The painted pixel at the cell centre has the cell's colour.
                    const QRect cell = map->cellRect(l, p);
                    QCOMPARE(QColor(shot.pixel(cell.center())), map->colourFor(map->value(l, p)));
                }
                const double cv = std::sqrt(var / P) / mean;
                QVERIFY(close(ui::epHeatmapPanel(&view)->layerCv(planned)[static_cast<std::size_t>(l)], cv, 1e-9));
                QCOMPARE(
                    ui::sideColumn(map).at(l),
                    QString::number(ui::epHeatmapPanel(&view)->layerCv(planned)[static_cast<std::size_t>(l)], 'f', 4));
                cvSum += cv;
            }
            // Mean of the per-layer CVs is the planner's CV_global (eq. 22).
            QVERIFY(close(cvSum / L, planned ? plan_->placement.cv_lpt : plan_->placement.cv_identity, 1e-9));
            // Both maps share one scale centred on the layer mean.
            QCOMPARE(ui::rangeLow(map), ui::rangeLow(ui::epHeatmapPanel(&view)->map(!planned)));
            QCOMPARE(ui::rangeHigh(map), ui::rangeHigh(ui::epHeatmapPanel(&view)->map(!planned)));
        }
        // LPT flattens the layers: its CV_global is below identity's.
        QVERIFY(plan_->placement.cv_lpt < plan_->placement.cv_identity);
        // Tooltip through the event path: the hovered cell's text.
        HeatmapWidget* map = ui::epHeatmapPanel(&view)->map(false);
        const QPoint pos = map->cellRect(2, 3).center();
        QCOMPARE(map->cellAt(pos), QPoint(3, 2));
        QHelpEvent help(QEvent::ToolTip, pos, map->mapToGlobal(pos));
        QApplication::sendEvent(map, &help);
        QTRY_COMPARE(QToolTip::text(), map->toolTipFor(2, 3));
        QCOMPARE(map->cellAt(QPoint(1, 1)), QPoint(-1, -1));
    }

    void rowHeatmapAndCosts() {
        PlanView view;
        view.resize(1280, 760);
        view.setPlan(plan_, window_);
        const Topology& t = plan_->topology;
        const int L = plan_->model.num_moe_layers(), G = t.shards();
        RowHeatmapPanel* rows = ui::rowHeatmapPanel(&view);
        CostsPanel* costs = ui::costsPanel(&view);
        QCOMPARE(rows->method(), Method::RoutePack);
        QCOMPARE(ui::shardCombo(rows)->count(), G);
        for (int m = 0; m < kPaperMethodCount; ++m) {
            const MethodResult& mr = method_of(*plan_, method_at(m));
            const Placement& pi = plan_->placement_of(mr.placement);
            const Costs ind = independent_costs(*window_, t, pi, mr.layout);
            const int R = mr.layout.rows;
            // The core's breakdown on the planner's own problem.
            const CostBreakdown cb = cost_breakdown(mr.layout, make_packing_problem(*window_, t, pi));
            QCOMPARE(cb.peak, ind.peak);
            rows->setMethod(method_at(m));
            for (int g = 0; g < G; ++g) {
                rows->setShard(g);
                QCOMPARE(ui::map(rows)->rowCount(), R);
                QCOMPARE(ui::map(rows)->columnCount(), L);
                for (int r = 0; r < R; ++r)
                    for (int l = 0; l < L; ++l)
                        QCOMPARE(ui::map(rows)->value(r, l),
                                 static_cast<double>(ind.peak[(static_cast<std::size_t>(r) * G + g) * L + l]));
            }
            costs->setMethod(method_at(m));
            QCOMPARE(ui::attentionSet(costs)->count(), R * G);
            QCOMPARE(ui::shardTotalSet(costs)->count(), G);
            for (int k = 0; k < R * G; ++k) {
                QCOMPARE(ui::attentionSet(costs)->at(k), cb.A[static_cast<std::size_t>(k)]);
                QCOMPARE(ui::expertSet(costs)->at(k), cb.E[static_cast<std::size_t>(k)]);
                QVERIFY(close(cb.A[static_cast<std::size_t>(k)], ind.A[static_cast<std::size_t>(k)]));
                QVERIFY(close(cb.E[static_cast<std::size_t>(k)], ind.E[static_cast<std::size_t>(k)]));
            }
            int straggler = 0;
            double maxU = -1, sumU = 0;
            for (int g = 0; g < G; ++g) {
                double u = 0;
                for (int r = 0; r < R; ++r)
                    u += ind.A[static_cast<std::size_t>(r) * G + g] + ind.E[static_cast<std::size_t>(r) * G + g];
                QVERIFY(close(ui::shardTotalSet(costs)->at(g), u));
                if (u > maxU) maxU = u, straggler = g;
                sumU += u;
            }
            QCOMPARE(ui::stragglerShard(costs), straggler);
            QVERIFY(ui::shardTotalSet(costs)->isBarSelected(straggler));
            // The planner's metrics: joint = max_g U, sum U (bitwise: same integer sums, same fold).
            QCOMPARE(ui::shardTotalSet(costs)->at(straggler), mr.metrics.score.max_u);
            QVERIFY(close(sumU, mr.metrics.score.sum_u));
            QCOMPARE(ui::categories(costs).size(), R * G);
            QCOMPARE(ui::categories(costs).first(), QStringLiteral("r0 g0"));
            // The plan's lower bound (at the LPT placement) and this method's gap to it.
            const QString bound = QStringLiteral(" Lower bound on max_g U at this placement (any layout): %1, gap %2%.")
                                      .arg(plan_->bound.value, 0, 'f', 4)
                                      .arg(100.0 * (mr.metrics.score.max_u / plan_->bound.value - 1.0), 0, 'f', 2);
            QVERIFY(plan_->bound.value > 0);
            QCOMPARE(costs->headingText().endsWith(bound), mr.placement != PlacementKind::Identity);
        }
        // Without the window, the two views that need counts say so instead of guessing.
        view.setPlan(plan_);
        QVERIFY(!view.window());
        QCOMPARE(ui::attentionSet(costs), nullptr);
        QCOMPARE(ui::map(rows)->rowCount(), 0);
        QCOMPARE(ui::epHeatmapPanel(&view)->map(true)->rowCount(), plan_->model.num_moe_layers());
        // A window that is not the plan's is refused.
        auto other = std::make_shared<Trace>(*window_);
        other->samples.pop_back();
        other->counts.resize(other->samples.size() * other->stride());
        view.setPlan(plan_, other);
        QVERIFY(!view.window());
    }

    void costsTallestBarAndSideBySide() {
        // The tallest row-shard: tallestRowShard on hand-made costs, lowest index on ties.
        CostBreakdown hand;
        hand.J = {1.0, 3.0, 3.0, 2.0};
        QCOMPARE(tallestRowShard(hand), 1);
        QCOMPARE(tallestRowShard(CostBreakdown{}), -1);

        PlanView view;
        view.resize(1400, 760);
        view.setPlan(plan_, window_);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setCurrentWidget(ui::costsPanel(&view));
        CostsPanel* costs = ui::costsPanel(&view);
        const Topology& t = plan_->topology;
        const int G = t.shards();
        QVERIFY(!costs->sideBySide());
        QVERIFY(!ui::baselineChartView(costs)->isVisible());
        QCOMPARE(ui::baselineAttentionSet(costs), nullptr);
        for (int m = 0; m < kPaperMethodCount; ++m) {
            costs->setMethod(method_at(m));
            const MethodResult& mr = method_of(*plan_, method_at(m));
            const Costs ind = independent_costs(*window_, t, plan_->placement_of(mr.placement), mr.layout);
            // The tallest bar, found here from the independent A + E: its J is the score's max J.
            int tallest = 0;
            for (std::size_t k = 1; k < ind.A.size(); ++k)
                if (ind.A[k] + ind.E[k] >
                    ind.A[static_cast<std::size_t>(tallest)] + ind.E[static_cast<std::size_t>(tallest)] + 1e-9)
                    tallest = static_cast<int>(k);
            QCOMPARE(ui::tallestBar(costs), tallest);
            const double J = ui::attentionSet(costs)->at(tallest) + ui::expertSet(costs)->at(tallest);
            QVERIFY(close(J, mr.metrics.score.max_j));
            QScatterSeries* marker = ui::tallestMarker(costs);
            QVERIFY(marker);
            QCOMPARE(marker->count(), 1);
            QCOMPARE(marker->at(0).x(), static_cast<double>(tallest));
            QCOMPARE(marker->at(0).y(), mr.metrics.score.max_j);
            const QString where = QStringLiteral("r%1 g%2").arg(tallest / G).arg(tallest % G);
            QCOMPARE(marker->name(),
                     QStringLiteral("tallest: %1, J = %2").arg(where).arg(mr.metrics.score.max_j, 0, 'f', 4));
            QVERIFY(marker->pointLabelsVisible());
            QCOMPARE(marker->pointLabelsFormat(), QStringLiteral("J = @yPoint"));
            const QString tip = costs->rowBarToolTip(tallest);
            QVERIFY2(tip.endsWith(QStringLiteral("J = A + E = %1<br>the tallest row-shard (max J)")
                                      .arg(mr.metrics.score.max_j, 0, 'f', 4)),
                     qPrintable(tip));
            QVERIFY(!costs->rowBarToolTip(tallest == 0 ? 1 : 0).contains(QStringLiteral("tallest")));
            QVERIFY2(costs->headingText().contains(QStringLiteral("max J = %1 (%2, the tallest bar, marked)")
                                                       .arg(mr.metrics.score.max_j, 0, 'f', 4)
                                                       .arg(where)),
                     qPrintable(costs->headingText()));
        }

        // Side by side: the baseline's chart left of routepack's, on the same y-axis; the shard
        // totals chart holds both methods' U[g].
        costs->setMethod(Method::RoutePack);
        costs->setSideBySide(true);
        QVERIFY(ui::sideBySideBox(costs)->isChecked());
        QVERIFY(ui::baselineChartView(costs)->isVisible());
        QTRY_VERIFY(ui::baselineChartView(costs)->x() < ui::rowChartView(costs)->x()); // after the splitter laid out
        const CostBreakdown base =
            cost_breakdown(plan_->baseline.layout, make_packing_problem(*window_, t, plan_->placement.identity));
        const CostBreakdown rp =
            cost_breakdown(plan_->routepack.layout, make_packing_problem(*window_, t, plan_->placement.lpt));
        QCOMPARE(ui::baselineAttentionSet(costs)->count(), base.rows * G);
        for (int k = 0; k < base.rows * G; ++k) {
            QCOMPARE(ui::baselineAttentionSet(costs)->at(k), base.A[static_cast<std::size_t>(k)]);
            QCOMPARE(ui::baselineExpertSet(costs)->at(k), base.E[static_cast<std::size_t>(k)]);
        }
        for (int k = 0; k < rp.rows * G; ++k)
            QCOMPARE(ui::expertSet(costs)->at(k), rp.E[static_cast<std::size_t>(k)]);
        QCOMPARE(ui::baselineTallestMarker(costs)->at(0).y(), plan_->baseline.metrics.score.max_j);
        QVERIFY(ui::baselineChartView(costs)->chart()->title().startsWith(QStringLiteral("Baseline: row")));
        QVERIFY(ui::rowChartView(costs)->chart()->title().startsWith(QStringLiteral("RoutePack: row")));
        auto axisMax = [](QChartView* v) {
            const auto axes = v->chart()->axes(Qt::Vertical);
            return axes.isEmpty() ? -1.0 : qobject_cast<QValueAxis*>(axes.front())->max();
        };
        QCOMPARE(axisMax(ui::baselineChartView(costs)), axisMax(ui::rowChartView(costs)));
        QVERIFY(axisMax(ui::rowChartView(costs)) >= plan_->baseline.metrics.score.max_j);
        QCOMPARE(ui::baselineShardTotalSet(costs)->label(), QStringLiteral("Baseline U[g]"));
        QCOMPARE(ui::shardTotalSet(costs)->label(), QStringLiteral("RoutePack U[g]"));
        for (int g = 0; g < G; ++g) {
            QCOMPARE(ui::baselineShardTotalSet(costs)->at(g), base.U[static_cast<std::size_t>(g)]);
            QCOMPARE(ui::shardTotalSet(costs)->at(g), rp.U[static_cast<std::size_t>(g)]);
        }
        QCOMPARE(costs->shardBarToolTip(0, Method::Baseline).left(22), QStringLiteral("<b>Baseline: EDP shard"));
        QCOMPARE(costs->rowBarToolTip(0, Method::Baseline).left(19), QStringLiteral("<b>Baseline: row 0,"));
        QTest::qWait(150); // the charts repaint at their new widths before the grab
        shoot(&view, QStringLiteral("plan-costs-side-by-side"));
        view.setPalette(darkPalette());
        QTest::qWait(150);
        shoot(&view, QStringLiteral("plan-costs-side-by-side-dark"));
        view.setPalette(QPalette());
        // The baseline itself is shown alone; unticking goes back to one chart.
        costs->setMethod(Method::Baseline);
        QVERIFY(!ui::baselineChartView(costs)->isVisible());
        QCOMPARE(ui::baselineAttentionSet(costs), nullptr);
        costs->setMethod(Method::RoutePack);
        QVERIFY(ui::baselineChartView(costs)->isVisible());
        costs->setSideBySide(false);
        QVERIFY(!ui::baselineChartView(costs)->isVisible());
        QCOMPARE(ui::baselineShardTotalSet(costs), nullptr);
        QCOMPARE(ui::shardTotalSet(costs)->label(), QStringLiteral("U[g] = sum_r J[r][g]"));
    }

    void heatmapZoom() {
        // 94 MoE layers x 64 EP ranks in a HeatmapView of 640 x 480: zoom by levels of 1.25x.
        const int rows = 94, cols = 64;
        std::vector<double> v(static_cast<std::size_t>(rows) * cols);
        for (int l = 0; l < rows; ++l)
            for (int p = 0; p < cols; ++p)
                v[static_cast<std::size_t>(l) * cols + p] =
                    1.0 + 0.4 * std::sin(0.21 * l) * std::cos(0.37 * p) + (p % 9 == 4 ? 0.5 : 0.0);
        auto* map = new HeatmapWidget;
        map->setColourMap(HeatmapWidget::ColourMap::Diverging);
        map->setData(rows, cols, v, {}, {});
        map->setRange(0.4, 1.9, 1.0);
        map->setTitle(QStringLiteral("94 MoE layers x 64 EP ranks"));
        map->setLegendTitle(QStringLiteral("G / mean"));
        map->setAxisTitles(QStringLiteral("MoE layer"), QStringLiteral("EP rank"));
        HeatmapView area(map);
        area.resize(640, 480);
        area.show();
        QVERIFY(QTest::qWaitForWindowExposed(&area));
        QCOMPARE(ui::map(&area), map);
        QCOMPARE(area.zoomLevel(), 0);
        QCOMPARE(area.zoom(), 1.0);
        QCOMPARE(map->size(), QSize(640, 480)); // fit: exactly the viewport, no scroll bars
        QVERIFY(!area.horizontalScrollBar()->isVisible());
        const int stride0 = map->columnLabelStride();
        const int cell0 = map->cellRect(0, 0).width();
        QSignalSpy zoomed(&area, &HeatmapView::zoomChanged);
        area.zoomIn();
        area.zoomIn();
        area.zoomIn();
        QCOMPARE(zoomed.count(), 3);
        QCOMPARE(area.zoomLevel(), 3);
        QCOMPARE(area.zoom(), 1.953125);
        QCOMPARE(map->size(), QSize(1250, 938)); // 640 x 1.953125, 480 x 1.953125 (rounded)
        QVERIFY(map->cellRect(0, 0).width() >= 2 * cell0 - 1);
        QVERIFY2(map->columnLabelStride() < stride0,
                 qPrintable(QStringLiteral("%1 -> %2").arg(stride0).arg(map->columnLabelStride())));
        QVERIFY(area.horizontalScrollBar()->maximum() > 0);
        // Clamped at both ends.
        for (int k = 0; k < 20; ++k)
            area.zoomIn();
        QCOMPARE(area.zoomLevel(), HeatmapView::kMaxZoomLevel);
        area.resetZoom();
        QCOMPARE(area.zoomLevel(), 0);
        QCOMPARE(map->size(), QSize(640, 480));
        area.zoomOut();
        QCOMPARE(area.zoomLevel(), 0);

        // Ctrl + wheel: one level per notch around the mouse; the cell under it stays under it.
        area.setZoomLevel(2);
        const QPoint at(400, 300); // viewport coordinates
        const QPoint cellBefore = map->cellAt(map->mapFrom(area.viewport(), at));
        QVERIFY(cellBefore.x() >= 0);
        auto wheel = [&](Qt::KeyboardModifiers mods, int delta) {
            QWheelEvent e(QPointF(at), QPointF(area.viewport()->mapToGlobal(at)), QPoint(), QPoint(0, delta),
                          Qt::NoButton, mods, Qt::NoScrollPhase, false);
            QApplication::sendEvent(area.viewport(), &e);
        };
        wheel(Qt::ControlModifier, 120);
        QCOMPARE(area.zoomLevel(), 3);
        QCOMPARE(map->cellAt(map->mapFrom(area.viewport(), at)), cellBefore);
        wheel(Qt::ControlModifier, 60); // half a notch: nothing yet
        QCOMPARE(area.zoomLevel(), 3);
        wheel(Qt::ControlModifier, 60);
        QCOMPARE(area.zoomLevel(), 4);
        wheel(Qt::ControlModifier, -240);
        QCOMPARE(area.zoomLevel(), 2);
        // A plain wheel scrolls, it does not zoom.
        const int before = area.verticalScrollBar()->value();
        wheel(Qt::NoModifier, -120);
        QCOMPARE(area.zoomLevel(), 2);
        QVERIFY(area.verticalScrollBar()->value() > before);
        // Screenshots: fit and zoomed 4 levels (2.44x) into the middle, light and dark.
        for (bool dark : {false, true}) {
            area.setPalette(dark ? darkPalette() : QPalette());
            area.resetZoom();
            QCoreApplication::processEvents();
            shoot(&area, QStringLiteral("heatmap-94x64-fit%1").arg(dark ? QStringLiteral("-dark") : QString()));
            area.setZoomLevel(4);
            QCoreApplication::processEvents();
            QCOMPARE(map->columnLabelStride(), 1); // every rank labelled at 2.44x
            shoot(&area, QStringLiteral("heatmap-94x64-zoom%1").arg(dark ? QStringLiteral("-dark") : QString()));
        }
        area.setPalette(QPalette());

        // Zoomed and scrolled into the middle, the axis labels stay at the viewport's left and
        // bottom edges: their bands show no cell colour (text is grey, cells are saturated), the
        // cells between them do, and a click on a band hits no cell.
        area.setZoomLevel(4);
        QCoreApplication::processEvents();
        QScrollBar* hbar = area.horizontalScrollBar();
        QScrollBar* vbar = area.verticalScrollBar();
        QCOMPARE(map->pinnedLabelOffset(),
                 QPoint(hbar->value(), vbar->value() + area.viewport()->height() - map->height()));
        hbar->setValue(hbar->maximum() / 2);
        vbar->setValue(vbar->maximum() / 3);
        QCoreApplication::processEvents();
        const QPoint pin = map->pinnedLabelOffset();
        QCOMPARE(pin, QPoint(hbar->maximum() / 2, vbar->maximum() / 3 + area.viewport()->height() - map->height()));
        QVERIFY(pin.x() > 0 && pin.y() < 0);
        const QImage shot = area.viewport()->grab().toImage();
        const QRect cells0 = map->cellRect(0, 0);
        const int labelsW = cells0.left() - 4; // width of the row-label band (viewport coordinates)
        // Viewport y where the column-label band begins: as far above the viewport's bottom as the
        // cells' bottom edge is above the map's.
        const int labelsTop = map->cellRect(93, 0).bottom() + 1 + pin.y() - vbar->value();
        QCOMPARE(labelsTop, map->cellRect(93, 0).bottom() + 1 - (map->height() - area.viewport()->height()));
        auto saturated = [&](const QRect& r) {
            int count = 0;
            for (int y = std::max(0, r.top()); y <= std::min(shot.height() - 1, r.bottom()); ++y)
                for (int x = std::max(0, r.left()); x <= std::min(shot.width() - 1, r.right()); ++x)
                    if (shot.pixelColor(x, y).hsvSaturation() > 80) ++count;
            return count;
        };
        QCOMPARE(saturated(QRect(0, 0, labelsW, labelsTop - 2)), 0);
        QCOMPARE(
            saturated(QRect(labelsW + 8, labelsTop + 3, shot.width() - labelsW - 8, shot.height() - labelsTop - 3)), 0);
        QVERIFY(saturated(QRect(labelsW + 8, 0, shot.width() - labelsW - 8, labelsTop - 2)) > 1000);
        QCOMPARE(map->cellAt(map->mapFrom(area.viewport(), QPoint(labelsW / 2, 100))), QPoint(-1, -1));
        QCOMPARE(map->cellAt(map->mapFrom(area.viewport(), QPoint(300, shot.height() - 5))), QPoint(-1, -1));
        QVERIFY(map->cellAt(map->mapFrom(area.viewport(), QPoint(300, 100))).x() >= 0);
        shoot(&area, QStringLiteral("heatmap-94x64-zoom-scrolled"));
        area.resetZoom();
        QCoreApplication::processEvents(); // the scroll bars go once the layout settles
        QCOMPARE(map->pinnedLabelOffset(), QPoint(0, 0));
    }

    void planViewZoomsMapsTogether() {
        // In a plan view the EP-rank maps zoom and scroll together; a tab without maps has none.
        PlanView view;
        view.resize(1280, 760);
        view.setPlan(plan_, window_);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setCurrentWidget(ui::epHeatmapPanel(&view));
        QCOMPARE(view.zoomHeatmaps(1), 2);
        auto views = ui::epHeatmapPanel(&view)->findChildren<HeatmapView*>();
        QCOMPARE(views.size(), 2);
        for (HeatmapView* h : views)
            QCOMPARE(h->zoomLevel(), 1);
        QCOMPARE(view.zoomHeatmaps(2), 2);
        for (HeatmapView* h : views)
            QCOMPARE(h->zoomLevel(), 3);
        views[0]->horizontalScrollBar()->setValue(37);
        QCOMPARE(views[1]->horizontalScrollBar()->value(), 37);
        QCOMPARE(view.zoomHeatmaps(0), 2);
        for (HeatmapView* h : views)
            QCOMPARE(h->zoomLevel(), 0);
        view.setCurrentWidget(ui::costsPanel(&view));
        QCOMPARE(view.zoomHeatmaps(1), 0);
        view.setCurrentWidget(ui::rowHeatmapPanel(&view));
        QCOMPARE(view.zoomHeatmaps(1), 1);
        QCOMPARE(ui::rowHeatmapPanel(&view)->findChild<HeatmapView*>()->zoomLevel(), 1);
    }

    void executionGrid() {
        PlanView view;
        view.resize(1280, 760);
        view.setPlan(plan_, window_);
        view.setCurrentWidget(view.viewWidget(QStringLiteral("grid")));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        ExecutionGridModel* model = ui::model(view.gridPanel());
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        for (int m = 0; m < kPaperMethodCount; ++m) {
            view.gridPanel()->setMethod(method_at(m));
            const Layout& x = method_of(*plan_, method_at(m)).layout;
            QCOMPARE(model->rowCount(), x.rows);
            QCOMPARE(model->columnCount(), plan_->topology.dp_slots);
            for (int r = 0; r < x.rows; ++r)
                for (int d = 0; d < x.dp_slots; ++d) {
                    const std::span<const int> cell = x.cell(x.cell_index(r, d));
                    qint64 tokens = 0;
                    QList<int> idx;
                    for (int i : cell)
                        tokens += window_->samples[static_cast<std::size_t>(i)].length, idx.append(i);
                    const QModelIndex mi = model->index(r, d);
                    QCOMPARE(mi.data(RawValueRole).toLongLong(), tokens);
                    QCOMPARE(mi.data(FillRole).toDouble(), static_cast<double>(tokens) / 4096.0);
                    QCOMPARE(mi.data(SampleCountRole).toInt(), static_cast<int>(cell.size()));
                    QCOMPARE(mi.data(SampleIndicesRole).value<QList<int>>(), idx);
                    const QString tip = mi.data(Qt::ToolTipRole).toString();
                    for (int i : cell)
                        QVERIFY(tip.contains(
                            QStringLiteral("%1 &mdash; %2 tokens")
                                .arg(QString::fromStdString(window_->samples[static_cast<std::size_t>(i)].id))
                                .arg(window_->samples[static_cast<std::size_t>(i)].length)));
                }
        }
        QCOMPARE(model->headerData(1, Qt::Horizontal).toString(), QStringLiteral("DP 1 (g0)"));
        QCOMPARE(model->headerData(2, Qt::Horizontal).toString(), QStringLiteral("DP 2 (g1)"));
        // Click -> cellActivated with the cell's samples in window order.
        view.gridPanel()->setMethod(Method::RoutePack);
        QSignalSpy spy(&view, &PlanView::cellActivated);
        QTableView* table = view.gridPanel()->view();
        const QModelIndex target = model->index(1, 2);
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(target).center());
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.at(0).at(0).toInt(), 1);
        QCOMPARE(spy.at(0).at(1).toInt(), 2);
        QList<int> expected;
        for (int i : plan_->routepack.layout.cell(plan_->routepack.layout.cell_index(1, 2)))
            expected.append(i);
        QCOMPARE(spy.at(0).at(2).value<QList<int>>(), expected);

        // Karmarkar-Karp may overfill cells: the grid shows exactly the cells the metrics count.
        view.setPlan(plan2_);
        view.gridPanel()->setMethod(Method::KarmarkarKarp);
        int over = 0;
        for (int r = 0; r < model->rowCount(); ++r)
            for (int d = 0; d < model->columnCount(); ++d)
                over += model->index(r, d).data(FillRole).toDouble() > 1.0;
        QCOMPARE(over, plan2_->karmarkar_karp.metrics.cap_violations);
        QVERIFY(over > 0); // this window is one where KK breaks the cap (a real finding about that packer)
        QCoreApplication::processEvents();
        shoot(&view, QStringLiteral("plan-grid-karmarkar-karp-over-cap"));
    }

    void convergence() {
        PlanView view;
        view.setPlan(plan_, window_);
        ConvergencePanel* c = ui::convergencePanel(&view);
        const auto& levels = plan_->search.convergence;
        auto check = [&](int n) {
            QCOMPARE(ui::bestSeries(c)->count(), n);
            QCOMPARE(ui::energySeries(c)->count(), n);
            QCOMPARE(ui::acceptanceSeries(c)->count(), n);
            for (int k = 0; k < n; ++k) {
                const LevelStats& s = levels[static_cast<std::size_t>(k)];
                QCOMPARE(ui::bestSeries(c)->at(k), QPointF(s.level, s.best.max_u));
                QCOMPARE(ui::energySeries(c)->at(k), QPointF(s.level, s.mean_energy));
                QCOMPARE(ui::acceptanceSeries(c)->at(k), QPointF(s.level, s.acceptance));
            }
        };
        check(static_cast<int>(levels.size()));
        // The last level's incumbent is never better than the final routepack score's joint.
        QVERIFY(levels.back().best.max_u >= plan_->routepack.metrics.score.max_u);
        view.clearConvergence();
        check(0);
        for (std::size_t k = 0; k < levels.size(); ++k) {
            view.addConvergenceLevel(levels[k]);
            check(static_cast<int>(k) + 1);
        }
        view.setPlan(nullptr);
        check(0);
        QCOMPARE(ui::model(view.gridPanel())->rowCount(), 0);
        QCOMPARE(ui::epHeatmapPanel(&view)->map(false)->rowCount(), 0);
        QCOMPARE(view.plan(), nullptr);
    }

    void compareTable() {
        CompareView cv;
        QAbstractItemModelTester tester(cv.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        cv.setRuns({plan_, nullptr, plan2_},
                   {QStringLiteral("step 7"), QStringLiteral("skipped"), QStringLiteral("step 8")});
        QAbstractItemModel* m = cv.model();
        QCOMPARE(m->rowCount(), 8);
        QCOMPARE(m->columnCount(), int(CompareTableModel::ColumnCount));
        const std::shared_ptr<const PlanResult> runs[] = {plan_, plan2_};
        for (int k = 0; k < 2; ++k)
            for (int meth = 0; meth < kPaperMethodCount; ++meth) {
                const int row = k * kPaperMethodCount + meth;
                const MethodResult& mr = method_of(*runs[k], method_at(meth));
                const LayoutMetrics& x = mr.metrics;
                auto raw = [&](int col) { return m->index(row, col).data(RawValueRole); };
                QCOMPARE(raw(CompareTableModel::Run).toString(),
                         k == 0 ? QStringLiteral("step 7") : QStringLiteral("step 8"));
                QCOMPARE(raw(CompareTableModel::Method).toString(), QString::fromLatin1(mr.key()));
                QCOMPARE(raw(CompareTableModel::Rows).toLongLong(), runs[k]->rows.rows);
                QCOMPARE(raw(CompareTableModel::Joint).toDouble(), x.score.max_u);
                QCOMPARE(raw(CompareTableModel::SumU).toDouble(), x.score.sum_u);
                QCOMPARE(raw(CompareTableModel::MaxJ).toDouble(), x.score.max_j);
                QCOMPARE(raw(CompareTableModel::CvGlobal).toDouble(), x.cv_global);
                QCOMPARE(raw(CompareTableModel::EpPeakSum).toLongLong(), x.ep_peak_sum);
                QCOMPARE(raw(CompareTableModel::EpTailPeak).toLongLong(), x.ep_tail_peak);
                QCOMPARE(raw(CompareTableModel::EpBalance).toDouble(), x.ep_balance_efficiency);
                QCOMPARE(raw(CompareTableModel::Attention).toDouble(), x.attention_sum);
                QCOMPARE(raw(CompareTableModel::CapViolations).toLongLong(), x.cap_violations);
                const double vsReorder = 100.0 * (x.score.max_u - runs[k]->reorder.metrics.score.max_u) /
                                         runs[k]->reorder.metrics.score.max_u;
                QCOMPARE(raw(CompareTableModel::JointVsReorder).toDouble(), vsReorder);
            }
        // routepack never regresses below its reorder seed.
        QVERIFY(m->index(3, CompareTableModel::JointVsReorder).data(RawValueRole).toDouble() <= 0);
        QCOMPARE(m->index(1, CompareTableModel::JointVsReorder).data(RawValueRole).toDouble(), 0.0);

        // Hand-checked percentages on the tiny plan: joints baseline 300, reorder 200, KK 250, routepack 150.
        cv.setRuns({tiny_plan()}, {QStringLiteral("tiny")});
        auto pct = [&](int row, int col) { return m->index(row, col).data(RawValueRole).toDouble(); };
        QCOMPARE(pct(0, CompareTableModel::JointVsReorder), 50.0);
        QCOMPARE(pct(0, CompareTableModel::JointVsKarmarkarKarp), 20.0);
        QCOMPARE(pct(2, CompareTableModel::JointVsReorder), 25.0);
        QCOMPARE(pct(3, CompareTableModel::JointVsReorder), -25.0);
        QCOMPARE(pct(3, CompareTableModel::JointVsKarmarkarKarp), -40.0);
        QCOMPARE(m->index(3, CompareTableModel::JointVsReorder).data().toString(), QStringLiteral("-25.00 %"));
        QCOMPARE(m->index(0, CompareTableModel::JointVsReorder).data().toString(), QStringLiteral("+50.00 %"));
        // One run: each method's gain against the baseline under its name; tooltips with the exact
        // numbers (baseline 300, reorder 200, KK 250, routepack 150).
        {
            auto* axis = qobject_cast<QBarCategoryAxis*>(
                qobject_cast<QChartView*>(cv.chartWidget())->chart()->axes(Qt::Horizontal).value(0));
            QVERIFY(axis);
            QCOMPARE(axis->categories(),
                     (QStringList{QStringLiteral("Baseline"), QStringLiteral("Reorder (-33.3 %)"),
                                  QStringLiteral("Karmarkar-Karp (-16.7 %)"), QStringLiteral("RoutePack (-50.0 %)")}));
            QCOMPARE(chartTitleText(qobject_cast<QChartView*>(cv.chartWidget())->chart()),
                     QStringLiteral("Joint cost per method (eq. 15); in brackets: against the baseline"));
            QCOMPARE(compareBarToolTip(*tiny_plan(), Method::RoutePack, QStringLiteral("tiny <1>")),
                     QStringLiteral("<b>tiny &lt;1&gt;</b>: RoutePack<br>max_g U = 150.0000<br>-50.00 % vs baseline, "
                                    "-25.00 % vs reorder"));
            QCOMPARE(
                compareBarToolTip(*tiny_plan(), Method::Baseline, QStringLiteral("t")),
                QStringLiteral("<b>t</b>: Baseline<br>max_g U = 300.0000<br>+0.00 % vs baseline, +50.00 % vs reorder"));
        }

        // The raw sort role orders numerically through a proxy.
        cv.setRuns({plan_, plan2_}, {QStringLiteral("a"), QStringLiteral("b")});
        QSortFilterProxyModel proxy;
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        proxy.setSourceModel(m);
        proxy.setSortRole(RawValueRole);
        proxy.sort(CompareTableModel::Joint, Qt::AscendingOrder);
        for (int r = 1; r < proxy.rowCount(); ++r)
            QVERIFY(proxy.index(r - 1, CompareTableModel::Joint).data(RawValueRole).toDouble() <=
                    proxy.index(r, CompareTableModel::Joint).data(RawValueRole).toDouble());

        // The chart: one bar set per run, joint per method.
        auto* chart = qobject_cast<QChartView*>(cv.chartWidget());
        QVERIFY(chart);
        const auto series = chart->chart()->series();
        QCOMPARE(series.size(), 1);
        auto* bars = qobject_cast<QAbstractBarSeries*>(series.first());
        QVERIFY(bars);
        QCOMPARE(bars->count(), 2);
        for (int k = 0; k < 2; ++k)
            for (int meth = 0; meth < kPaperMethodCount; ++meth)
                QCOMPARE(bars->barSets().at(k)->at(meth), method_of(*runs[k], method_at(meth)).metrics.score.max_u);
        QVERIFY(bars->isLabelsVisible()); // two runs: the values fit on the bars
        cv.setRuns({plan_, plan2_, plan_}, {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")});
        bars = qobject_cast<QAbstractBarSeries*>(chart->chart()->series().first());
        QVERIFY(!bars->isLabelsVisible()); // three: they would run into each other; tooltips carry them
        QCOMPARE(chartTitleText(chart->chart()), QStringLiteral("Joint cost per method (eq. 15), one bar per run"));
        auto other = std::make_shared<PlanResult>(*plan2_);
        other->topology.ep_ranks *= 2;
        cv.setRuns({plan_, other}, {QStringLiteral("a"), QStringLiteral("b")});
        QVERIFY2(chartTitleText(chart->chart()).contains(QStringLiteral("runs on 2 topologies (EP")),
                 qPrintable(chart->chart()->title()));
    }

    void csvExport() {
        // RFC 4180 quoting on a generic model (no raw role: edit values).
        QStandardItemModel sm(2, 3);
        sm.setHorizontalHeaderLabels({QStringLiteral("name"), QStringLiteral("a,b"), QStringLiteral("q\"x")});
        sm.setItem(0, 0, new QStandardItem(QStringLiteral("plain")));
        sm.setItem(0, 1, new QStandardItem(QStringLiteral("with, comma")));
        sm.setItem(0, 2, new QStandardItem(QStringLiteral("say \"hi\"")));
        sm.setItem(1, 0, new QStandardItem(QStringLiteral("two\nlines")));
        auto* num = new QStandardItem;
        num->setData(0.1, Qt::EditRole);
        sm.setItem(1, 1, num);
        const QString f1 = tmp_.filePath(QStringLiteral("generic.csv"));
        QString error;
        QVERIFY2(exportModelCsv(sm, f1, &error), qPrintable(error));
        QFile in1(f1);
        QVERIFY(in1.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(in1.readAll()),
                 QStringLiteral(
                     "name,\"a,b\",\"q\"\"x\"\r\nplain,\"with, comma\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",0.1,\r\n"));

        // The compare table of the tiny plan, exact text.
        CompareView cv;
        cv.setRuns({tiny_plan()}, {QStringLiteral("tiny, run")});
        // Measured steps of its baseline (2 s) and routepack (1.5 s) layouts: -25 % measured beside -50 % modelled.
        PerMethod<std::optional<double>> measured;
        measured[Method::Baseline] = 2.0;
        measured[Method::RoutePack] = 1.5;
        cv.setMeasured({{QStringLiteral("tiny, run"), measured}, {QStringLiteral("another run"), measured}});
        QCOMPARE(cv.model()->index(3, CompareTableModel::MeasuredSeconds).data().toString(), QStringLiteral("1.5 s"));
        QCOMPARE(cv.model()->index(3, CompareTableModel::MeasuredVsBaseline).data().toString(),
                 QStringLiteral("-25.00 %"));
        QCOMPARE(cv.model()->index(1, CompareTableModel::MeasuredSeconds).data().toString(), QStringLiteral("\u2014"));
        const QString f2 = tmp_.filePath(QStringLiteral("compare.csv"));
        QVERIFY2(cv.exportTableCsv(f2, &error), qPrintable(error));
        QFile in2(f2);
        QVERIFY(in2.open(QIODevice::ReadOnly));
        QCOMPARE(
            QString::fromUtf8(in2.readAll()),
            QStringLiteral(
                "run,method,rows,max U (joint),vs baseline,measured s,measured vs baseline,sum U,max J,CV_global,S_EP,"
                "T_EP,eta_EP,attention,over cap,vs reorder,vs KK\r\n"
                "\"tiny, run\",baseline,2,300,0,2,0,500,80,0.25,1000,90,0.5,12.5,0,50,20\r\n"
                "\"tiny, run\",reorder,2,200,-33.333333333333336,,,400,70,0.125,900,80,0.75,12.5,0,0,-20\r\n"
                "\"tiny, run\",karmarkar_karp,2,250,-16.666666666666668,,,450,75,0.125,950,85,0.625,11,"
                "1,25,0\r\n"
                "\"tiny, run\",routepack,2,150,-50,1.5,-25,350,60,0.125,800,70,0.875,13,0,-25,-40\r\n"));

        // Real plan: every double reads back bit for bit.
        cv.setRuns({plan_}, {QStringLiteral("real")});
        const QString f3 = tmp_.filePath(QStringLiteral("real.csv"));
        QVERIFY(cv.exportTableCsv(f3));
        QFile in3(f3);
        QVERIFY(in3.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(in3.readAll()).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 1 + kPaperMethodCount);
        for (int meth = 0; meth < kPaperMethodCount; ++meth) {
            const QStringList f = lines[meth + 1].split(QLatin1Char(','));
            QCOMPARE(f.size(), int(CompareTableModel::ColumnCount));
            const LayoutMetrics& x = method_of(*plan_, method_at(meth)).metrics;
            QCOMPARE(f[CompareTableModel::Joint].toDouble(), x.score.max_u);
            QCOMPARE(f[CompareTableModel::SumU].toDouble(), x.score.sum_u);
            QCOMPARE(f[CompareTableModel::CvGlobal].toDouble(), x.cv_global);
            QCOMPARE(f[CompareTableModel::EpPeakSum].toLongLong(), x.ep_peak_sum);
        }
        // A folder that does not exist: false with a message.
        QVERIFY(!cv.exportTableCsv(tmp_.filePath(QStringLiteral("no/such/dir/x.csv")), &error));
        QVERIFY(error.contains(QStringLiteral("Cannot write")));
    }

    void imageExport() {
        PlanView view;
        view.resize(1200, 720);
        view.setPlan(plan_, window_);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QString error;
        for (const QString& name : view.viewNames()) {
            view.setCurrentWidget(view.viewWidget(name));
            QWidget* w = view.viewWidget(name);
            const QString png = tmp_.filePath(name + QStringLiteral(".png"));
            const QString svg = tmp_.filePath(name + QStringLiteral(".svg"));
            QVERIFY2(view.exportView(name, png, &error), qPrintable(error));
            QVERIFY2(view.exportView(name, svg, &error), qPrintable(error));
            QImage img(png);
            QVERIFY(!img.isNull());
            QCOMPARE(img.size(), w->size() * w->devicePixelRatio());
            QFile s(svg);
            QVERIFY(s.open(QIODevice::ReadOnly));
            const QByteArray head = s.read(64);
            QVERIFY2(head.startsWith("<?xml") || head.startsWith("<svg"), head.constData());
            QVERIFY(s.size() > 1000);
        }
        // A tab that is not shown exports at the size of the shown one.
        view.setCurrentWidget(view.viewWidget(QStringLiteral("ep-heatmap")));
        QVERIFY(view.exportView(QStringLiteral("costs"), tmp_.filePath(QStringLiteral("hidden.png")), &error));
        QCOMPARE(QImage(tmp_.filePath(QStringLiteral("hidden.png"))).size(),
                 view.currentWidget()->size() * view.currentWidget()->devicePixelRatio());
        QVERIFY(!view.exportView(QStringLiteral("nope"), tmp_.filePath(QStringLiteral("x.png")), &error));
        QVERIFY(error.contains(QStringLiteral("nope")));
        QVERIFY(!view.exportView(QStringLiteral("grid"), tmp_.filePath(QStringLiteral("x.jpg")), &error));
        QVERIFY(error.contains(QStringLiteral(".png or .svg")));
        QVERIFY(!exportWidgetImage(nullptr, tmp_.filePath(QStringLiteral("x.png")), &error));

        CompareView cv;
        cv.resize(900, 600);
        cv.setRuns({plan_, plan2_}, {QStringLiteral("step 7"), QStringLiteral("step 8")});
        cv.show();
        QVERIFY(QTest::qWaitForWindowExposed(&cv));
        QVERIFY(cv.exportChart(tmp_.filePath(QStringLiteral("compare.png")), &error));
        QVERIFY(cv.exportChart(tmp_.filePath(QStringLiteral("compare.svg")), &error));
        QVERIFY(!QImage(tmp_.filePath(QStringLiteral("compare.png"))).isNull());
    }

    void screenshots() {
        PlanView view;
        view.resize(1280, 760);
        view.setPlan(plan_, window_);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        for (bool dark : {false, true}) {
            if (dark) view.setPalette(darkPalette());
            for (const QString& name : view.viewNames()) {
                view.setCurrentWidget(view.viewWidget(name));
                QCoreApplication::processEvents();
                shoot(&view, QStringLiteral("plan-%1%2").arg(name, dark ? QStringLiteral("-dark") : QString()));
            }
        }
        // 2x device pixel ratio: render the heatmaps into a 2x image; cells keep their colours.
        view.setPalette(QPalette());
        view.setCurrentWidget(view.viewWidget(QStringLiteral("ep-heatmap")));
        QCoreApplication::processEvents();
        QImage hi(view.size() * 2, QImage::Format_ARGB32_Premultiplied);
        hi.setDevicePixelRatio(2);
        hi.fill(Qt::transparent);
        view.render(&hi);
        QVERIFY(hi.save(shots_ + QStringLiteral("/plan-ep-heatmap-2x.png")));
        HeatmapWidget* map = ui::epHeatmapPanel(&view)->map(false);
        const QPoint c = map->mapTo(&view, map->cellRect(1, 1).center());
        QCOMPARE(QColor(hi.pixel(c * 2)), map->colourFor(map->value(1, 1)));

        CompareView cv;
        cv.resize(1100, 700);
        cv.setRuns({plan_, plan2_}, {QStringLiteral("step 7"), QStringLiteral("step 8")});
        cv.show();
        QVERIFY(QTest::qWaitForWindowExposed(&cv));
        shoot(&cv, QStringLiteral("compare"));
        cv.setPalette(darkPalette());
        QCoreApplication::processEvents();
        shoot(&cv, QStringLiteral("compare-dark"));
    }

    /// A larger step (256 samples, 27 MoE layers, 64 experts, 16 EP ranks, 8 DP slots in 4 shards):
    /// labels thin out instead of overlapping; the numbers still match the core.
    void largerPlanScreenshots() {
        SynthConfig c;
        c.groups = 32;
        c.group_size = 8;
        c.num_hidden_layers = 28;
        c.experts = 64;
        c.top_k = 6;
        c.max_length = 8192;
        c.seed = 11;
        PlanInput in;
        in.window = synth_trace(c);
        in.topology = test_topology();
        in.topology.ep_ranks = 16;
        in.topology.dp_slots = 8;
        in.topology.edp_shards = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
        in.topology.token_cap = 8192;
        in.budgets.annealing.levels = 3;
        in.budgets.annealing.steps = 100;
        in.budgets.seeding.candidates = 4;
        in.budgets.seeding.population = 2;
        in.budgets.workers = 2;
        auto window = std::make_shared<const Trace>(in.window);
        auto plan = std::make_shared<const PlanResult>(plan_window(in));
        PlanView view;
        view.resize(1400, 860);
        view.setPlan(plan, window);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const CostBreakdown cb =
            cost_breakdown(plan->routepack.layout, make_packing_problem(*window, plan->topology, plan->placement.lpt));
        QCOMPARE(ui::categories(ui::costsPanel(&view)).size(), cb.rows * cb.shards);
        for (int k = 0; k < cb.rows * cb.shards; ++k)
            QCOMPARE(ui::expertSet(ui::costsPanel(&view))->at(k), cb.E[static_cast<std::size_t>(k)]);
        QCOMPARE(ui::epHeatmapPanel(&view)->map(true)->rowCount(), 27);
        QCOMPARE(ui::epHeatmapPanel(&view)->map(true)->columnCount(), 16);
        for (const QString& name : view.viewNames()) {
            view.setCurrentWidget(view.viewWidget(name));
            QCoreApplication::processEvents();
            shoot(&view, QStringLiteral("large-%1").arg(name));
        }
    }
};

QTEST_MAIN(TestViewsPlan)
#include "tst_views_plan.moc"
