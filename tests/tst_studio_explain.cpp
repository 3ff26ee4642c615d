// What the plan views explain, offscreen: the Qt-free numbers behind them (views/plan/plan_explain.h:
// experts on a rank, layers one expert bounds, the samples that load a rank most, a row-shard's rank
// loads, colour positions and round ticks, label strides, and views/plan/plan_explain_gain.h: the split of
// the gain into LPT, packing and refinement, attention and expert, with the moved shards, rows, layers
// and EP ranks) on hand-computed cases, with its invariants on the demo and a real DeepSeek window;
// the tooltips with exact values (EP cell with its experts and the bound, row peaks with the peak
// rank, cost and shard bars); the colour-scale switch; and the linked selection in the studio: a
// click on an EP-rank cell outlines it in every plan view, lists the rank's experts and filters the
// sample table to the 20 samples that load it most, a click on a grid cell filters the table to that
// cell's samples. Screenshots via QWidget::grab into $ROUTEPACK_SCREENSHOT_DIR or a temporary folder.
#include "core/import/import.h"
#include "core/model/model.h"
#include "core/plan/score/packing.h"
#include "core/plan/score/placement.h"
#include "core/plan/score/score.h"
#include "core/synth/synth.h"
#include "storage/demo.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/topology_editor.h"
#include "views/library/sample_data.h"
#include "views/library/sample_pane.h"
#include "views/library/sample_table_model.h"
#include "views/plan/convergence_panel.h"
#include "views/plan/costs_panel.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/gain_explanation.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_explain.h"
#include "views/plan/plan_explain_gain.h"
#include "views/plan/plan_models.h"
#include "views/plan/plan_views.h"
#include "views/plan/row_heatmap_panel.h"
#include "views/run/run_series.h"
#include "views/studio_window.h"
#include "views/widgets/nice_scale.h"
#include "views/widgets/roles.h"

#include <QApplication>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineSeries>
#include <QSettings>
#include <QStandardPaths>
#include <QTableView>
#include <QToolButton>
#include <QValueAxis>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {
constexpr auto& q = test::qpath; // a path as QString

/// One MoE layer (absolute id 3), 4 experts, 4 samples; counts a[i][0][e]:
///   s0 {1, 0, 5, 5}, s1 {4, 2, 0, 0}, s2 {0, 0, 9, 0}, s3 {3, 3, 0, 0}; lengths 10, 20, 30, 40.
Trace handTrace() {
    Trace t;
    t.model.name = "hand";
    t.model.num_hidden_layers = 4;
    t.model.experts = 4;
    t.model.top_k = 1;
    t.model.moe_layers = {3};
    const std::vector<std::vector<std::uint32_t>> counts = {{1, 0, 5, 5}, {4, 2, 0, 0}, {0, 0, 9, 0}, {3, 3, 0, 0}};
    for (std::size_t i = 0; i < counts.size(); ++i) {
        SampleRecord r;
        r.info.id = "s" + std::to_string(i);
        r.info.length = 10 * static_cast<std::int64_t>(i + 1);
        r.counts = counts[i];
        t.append(std::move(r));
    }
    return t;
}

/// Two MoE layers (ids 3, 5), 4 experts, 2 EP ranks. Expert loads L[l][e]: layer 0 {10, 1, 1, 0}
/// (expert 0's 10 tokens exceed the mean rank load 12 / 2 = 6: bounded), layer 1 {3, 3, 3, 3}.
/// Identity: rank 0 = e0, e1; LPT (slots {0, 2, 3, 1}, {0, 2, 1, 3}): rank 0 = e0, e3 at layer 0.
std::shared_ptr<PlanResult> handPlacement() {
    auto p = std::make_shared<PlanResult>();
    p->model.name = "hand";
    p->model.num_hidden_layers = 6;
    p->model.experts = 4;
    p->model.top_k = 1;
    p->model.moe_layers = {3, 5};
    p->topology.ep_ranks = 2;
    p->topology.dp_slots = 1;
    p->topology.edp_shards = {{0}};
    p->topology.token_cap = 100;
    p->placement.identity = identity_placement(2, 4, 2);
    p->placement.lpt = p->placement.identity;
    p->placement.lpt.slot = {0, 2, 3, 1, 0, 2, 1, 3};
    const std::vector<std::uint64_t> loads = {10, 1, 1, 0, 3, 3, 3, 3};
    p->placement.rank_loads_identity = rank_loads(loads, p->placement.identity);
    p->placement.rank_loads_lpt = rank_loads(loads, p->placement.lpt);
    p->placement.cv_identity = cv_global(p->placement.rank_loads_identity, 2, 2);
    p->placement.cv_lpt = cv_global(p->placement.rank_loads_lpt, 2, 2);
    return p;
}

/// A hand-built plan whose gain splits by hand (one MoE layer, id 3; E = 4 experts on P = 2 EP ranks; D
/// = 2 DP slots, each its own EDP shard; R = 1 row; C = 100; one attention stage alpha 1, beta 0, so
/// A = tokens / C). Samples (counts e0..e3, t_i their sum): s0 {0,5,5,20} 30, s1 {10,5,15,15} 45,
/// s2 {5,0,5,0} 10, s3 {5,5,15,5} 30. Placements: identity (rank 0 = e0, e1), LPT on the loads {20, 15,
/// 40, 40} (rank 0 = e2, e0; slots {1,3,0,2}), refined (rank 0 = e0, e3; slots {0,2,3,1}). Layouts:
/// baseline, reorder and karmarkar_karp [s0 s1 | s2 s3], routepack [s0 s3 | s1 s2].
/// Rank demands q (rank 0, rank 1): identity s0 (5,25) s1 (15,30) s2 (5,5) s3 (10,20); LPT s0 (5,25)
/// s1 (25,20) s2 (10,0) s3 (20,10); refined s0 (20,10) s1 (25,20) s2 (5,5) s3 (10,20). Shard costs U =
/// A + max_p W / C:
///   baseline  g0 0.75 + 55/100 = 1.30, g1 0.40 + 25/100 = 0.65
///   reorder   g0 0.75 + 45/100 = 1.20, g1 0.40 + 30/100 = 0.70
///   rp at LPT g0 0.60 + 35/100 = 0.95, g1 0.55 + 35/100 = 0.90
///   routepack g0 0.60 + 30/100 = 0.90, g1 0.55 + 30/100 = 0.85
std::pair<std::shared_ptr<PlanResult>, std::shared_ptr<const Trace>> handGainPlan() {
    auto w = std::make_shared<Trace>();
    w->model.name = "hand";
    w->model.num_hidden_layers = 4;
    w->model.experts = 4;
    w->model.top_k = 1;
    w->model.moe_layers = {3};
    const std::vector<std::vector<std::uint32_t>> counts = {
        {0, 5, 5, 20}, {10, 5, 15, 15}, {5, 0, 5, 0}, {5, 5, 15, 5}};
    for (std::size_t i = 0; i < counts.size(); ++i) {
        SampleRecord r;
        r.info.id = "s" + std::to_string(i);
        for (auto c : counts[i])
            r.info.length += c;
        r.info.routed_rows = r.info.length;
        r.counts = counts[i];
        w->append(std::move(r));
    }
    auto p = std::make_shared<PlanResult>();
    p->model = w->model;
    p->trace_name = "hand";
    p->window_name = "all";
    p->topology.ep_ranks = 2;
    p->topology.dp_slots = 2;
    p->topology.edp_shards = {{0}, {1}};
    p->topology.token_cap = 100;
    p->topology.attention_stages = {AttentionStage{"a", 1.0, 0.0}};
    for (const auto& s : w->samples)
        p->samples.push_back(s);
    p->rows.rows = 1;
    p->placement.identity = identity_placement(1, 4, 2);
    p->placement.lpt = p->placement.identity;
    p->placement.lpt.slot = {1, 3, 0, 2};
    p->placement.routepack = p->placement.identity;
    p->placement.routepack.slot = {0, 2, 3, 1};
    const std::vector<std::uint64_t> loads = aggregate_expert_loads(w->counts, w->size(), 1, 4);
    p->placement.rank_loads_identity = rank_loads(loads, p->placement.identity);
    p->placement.rank_loads_lpt = rank_loads(loads, p->placement.lpt);
    p->placement.rank_loads_routepack = rank_loads(loads, p->placement.routepack);
    const Layout x1 = Layout::from_cells(1, 2, {{0, 1}, {2, 3}});
    const Layout x2 = Layout::from_cells(1, 2, {{0, 3}, {1, 2}});
    auto method = [&](Method m, PlacementKind k, const Layout& x, const Placement& pi) {
        MethodResult r;
        r.method = m;
        r.placement = k;
        r.layout = x;
        r.metrics.score = score_layout(x, make_packing_problem(*w, p->topology, pi));
        return r;
    };
    p->baseline = method(Method::Baseline, PlacementKind::Identity, x1, p->placement.identity);
    p->reorder = method(Method::Reorder, PlacementKind::Lpt, x1, p->placement.lpt);
    p->karmarkar_karp = method(Method::KarmarkarKarp, PlacementKind::Lpt, x1, p->placement.lpt);
    p->routepack = method(Method::RoutePack, PlacementKind::Refined, x2, p->placement.routepack);
    LevelStats level;
    level.level = 0;
    level.best.max_u = 1.0;
    p->search.convergence = {level, level};
    p->search.convergence[1].level = 1;
    p->search.convergence[1].best.max_u = 0.97;
    return {p, w};
}

/// The ids of the samples the sample table shows, sorted.
QStringList shown_sample_ids(StudioWindow& w) {
    QStringList out;
    for (int r = 0; r < ui::sampleProxy(w)->rowCount(); ++r)
        out << ui::sampleProxy(w)->index(r, SampleTableModel::Id).data().toString();
    out.sort();
    return out;
}

/// The costs panel's row and shard bars against the plan: exact tooltips, the straggler named, one
/// y-axis for every method that fits the largest J and U of any method. Leaves RoutePack shown.
void check_cost_bars(CostsPanel* costs, const PlanResult& p) {
    const PlanResult* plan = &p;
    const QString bar = costs->rowBarToolTip(0);
    QVERIFY2(bar.startsWith(QStringLiteral("<b>RoutePack: row 0, EDP shard g0</b>")), qPrintable(bar));
    QVERIFY2(bar.contains(QStringLiteral("J = A + E = %1")
                              .arg(ui::attentionSet(costs)->at(0) + ui::expertSet(costs)->at(0), 0, 'f', 4)),
             qPrintable(bar));
    const int G = plan->topology.shards();
    for (int g = 0; g < G; ++g) {
        const QString s = costs->shardBarToolTip(g);
        QVERIFY2(s.contains(QStringLiteral("U = sum_r J[r][g] = %1").arg(ui::shardTotalSet(costs)->at(g), 0, 'f', 4)),
                 qPrintable(s));
        QCOMPARE(s.contains(QStringLiteral("the straggler: U = max_g U, the joint cost")),
                 g == ui::stragglerShard(costs));
        if (g != ui::stragglerShard(costs))
            QVERIFY2(s.contains(QStringLiteral("below the straggler g%1").arg(ui::stragglerShard(costs))),
                     qPrintable(s));
    }
    QVERIFY(costs->shardBarToolTip(G).isEmpty());
    // One y-axis for every method: the largest J (and U) of any method fits in it.
    auto axisMax = [](QChartView* v) {
        const auto axes = v->chart()->axes(Qt::Vertical);
        return axes.isEmpty() ? -1.0 : qobject_cast<QValueAxis*>(axes.front())->max();
    };
    const double rowTop = axisMax(ui::rowChartView(costs)), shardTop = axisMax(ui::shardChartView(costs));
    double maxJ = 0, maxU = 0;
    for (const MethodResult* mr : {&plan->baseline, &plan->reorder, &plan->karmarkar_karp, &plan->routepack}) {
        maxJ = std::max(maxJ, mr->metrics.score.max_j);
        maxU = std::max(maxU, mr->metrics.score.max_u);
    }
    QVERIFY2(rowTop >= maxJ * 1.05 - 1e-9 && shardTop >= maxU * 1.1 - 1e-9,
             qPrintable(QStringLiteral("%1 %2 %3 %4").arg(rowTop).arg(maxJ).arg(shardTop).arg(maxU)));
    for (int m = 0; m < kPaperMethodCount; ++m) {
        costs->setMethod(method_at(m));
        QCOMPARE(axisMax(ui::rowChartView(costs)), rowTop);
        QCOMPARE(axisMax(ui::shardChartView(costs)), shardTop);
    }
    costs->setMethod(Method::RoutePack);
}

} // namespace

class TestStudioExplain : public test::StudioTestBase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { initStudioTest(QStringLiteral("tst_studio_explain"), QStringLiteral("studio-explain")); }

    void cleanupTestCase() { clearStudioSettings(); }

    // --- The numbers, by hand ---

    void expertsOnRank() {
        const std::vector<std::uint64_t> loads = {10, 1, 1, 0};
        const Placement id = identity_placement(1, 4, 2);
        auto pairs = [](const std::vector<ExpertTokens>& v) {
            std::vector<std::pair<int, std::uint64_t>> out;
            out.reserve(v.size());
            for (const auto& x : v)
                out.emplace_back(x.expert, x.tokens);
            return out;
        };
        using V = std::vector<std::pair<int, std::uint64_t>>;
        QCOMPARE(pairs(experts_on_rank(loads, id, 0, 0)), (V{{0, 10}, {1, 1}}));
        QCOMPARE(pairs(experts_on_rank(loads, id, 0, 1)), (V{{2, 1}, {3, 0}}));
        // Slots {2, 0, 3, 1}: e0 -> slot 2 (rank 1), e1 -> 0 (rank 0), e2 -> 3 (rank 1), e3 -> 1 (rank 0).
        Placement pi = id;
        pi.slot = {2, 0, 3, 1};
        QCOMPARE(pairs(experts_on_rank(loads, pi, 0, 0)), (V{{1, 1}, {3, 0}}));
        QCOMPARE(pairs(experts_on_rank(loads, pi, 0, 1)), (V{{0, 10}, {2, 1}}));
        // Ties: lower expert first.
        QCOMPARE(pairs(experts_on_rank(std::vector<std::uint64_t>{5, 5, 5, 7}, id, 0, 1)), (V{{3, 7}, {2, 5}}));
        QCOMPARE(pairs(experts_on_rank(std::vector<std::uint64_t>{5, 5, 0, 0}, id, 0, 0)), (V{{0, 5}, {1, 5}}));
        QCOMPARE(test::error_text([&] { experts_on_rank(loads, id, 1, 0); }),
                 QStringLiteral("experts_on_rank: MoE layer index out of range"));
        QCOMPARE(test::error_text([&] { experts_on_rank(loads, id, 0, 2); }),
                 QStringLiteral("experts_on_rank: EP rank out of range"));
        QCOMPARE(test::error_text([&] {
                     experts_on_rank(std::vector<std::uint64_t>{1, 2}, id, 0, 0);
                 }),
                 QStringLiteral("experts_on_rank: loads must hold L*E values"));
    }

    void expertBoundedLayers() {
        // Layer 0: 10 > 12 / 2 (bounded). Layer 1: 3 <= 12 / 2. Layer 2: 7 = 14 / 2 is not above the
        // mean (not bounded). Layer 3: the Maverick case, 34485 of 34517 tokens.
        const std::vector<std::uint64_t> loads = {10, 1, 1, 0, 3, 3, 3, 3, 0, 7, 7, 0, 0, 32, 34485, 0};
        const auto b = expert_bounded_layers(loads, 4, 4, 2);
        QCOMPARE(b.size(), std::size_t{2});
        QCOMPARE(b[0].layer, 0);
        QCOMPARE(b[0].expert, 0);
        QCOMPARE(b[0].tokens, std::uint64_t{10});
        QCOMPARE(b[0].total, std::uint64_t{12});
        QCOMPARE(b[0].mean_rank_load, 6.0);
        QCOMPARE(b[1].layer, 3);
        QCOMPARE(b[1].expert, 2);
        QCOMPARE(b[1].tokens, std::uint64_t{34485});
        QCOMPARE(b[1].total, std::uint64_t{34517});
        QCOMPARE(b[1].mean_rank_load, 17258.5);
        // On one rank every load is the mean: nothing is bounded.
        QVERIFY(expert_bounded_layers(loads, 4, 4, 1).empty());
        QCOMPARE(test::error_text([&] { expert_bounded_layers(loads, 3, 4, 2); }),
                 QStringLiteral("expert_bounded_layers: loads must hold L*E values (E, P >= 1)"));
    }

    void topSamplesAndRowShardLoads() {
        const Trace t = handTrace();
        const Placement id = identity_placement(1, 4, 2);
        // Rank 0 = e0, e1: s0 1, s1 6, s2 0, s3 6.
        auto pairs = [](const std::vector<SampleTokens>& v) {
            std::vector<std::pair<int, std::uint64_t>> out;
            out.reserve(v.size());
            for (const auto& x : v)
                out.emplace_back(x.sample, x.tokens);
            return out;
        };
        using V = std::vector<std::pair<int, std::uint64_t>>;
        QCOMPARE(pairs(top_samples_on_rank(t, id, 0, 0, 2)), (V{{1, 6}, {3, 6}}));
        QCOMPARE(pairs(top_samples_on_rank(t, id, 0, 0, 10)), (V{{1, 6}, {3, 6}, {0, 1}}));
        // Rank 1 = e2, e3: s0 10, s2 9.
        QCOMPARE(pairs(top_samples_on_rank(t, id, 0, 1, 20)), (V{{0, 10}, {2, 9}}));
        QVERIFY(top_samples_on_rank(t, id, 0, 1, 0).empty());
        QCOMPARE(test::error_text([&] { top_samples_on_rank(t, identity_placement(2, 4, 2), 0, 0, 1); }),
                 QStringLiteral("top_samples_on_rank: the placement does not match the window's L and E"));
        QCOMPARE(test::error_text([&] { top_samples_on_rank(t, id, 0, 0, -1); }),
                 QStringLiteral("top_samples_on_rank: k must be >= 0"));

        // Two rows x 2 DP slots in one EDP shard: row 0 = s0 | s1, row 1 = s2 | s3.
        Topology topo;
        topo.ep_ranks = 2;
        topo.dp_slots = 2;
        topo.edp_shards = {{0, 1}};
        const Layout x = Layout::from_cells(2, 2, {{0}, {1}, {2}, {3}});
        QCOMPARE(row_shard_rank_loads(t, topo, id, x, 0, 0, 0), (std::vector<std::uint64_t>{7, 10}));
        QCOMPARE(row_shard_rank_loads(t, topo, id, x, 1, 0, 0), (std::vector<std::uint64_t>{6, 9}));
        // Two shards of one slot each: row 1, shard 1 = s3 alone.
        topo.edp_shards = {{0}, {1}};
        QCOMPARE(row_shard_rank_loads(t, topo, id, x, 1, 1, 0), (std::vector<std::uint64_t>{6, 0}));
        QCOMPARE(test::error_text([&] { row_shard_rank_loads(t, topo, id, x, 2, 0, 0); }),
                 QStringLiteral("row_shard_rank_loads: row or EDP shard out of range"));
    }

    void colourPositions() {
        ColourMapping m;
        m.lo = 0.1;
        m.hi = 10;
        m.scale = ColourScale::Log;
        QCOMPARE(colour_position(1.0, m), 0.5);
        QCOMPARE(colour_position(0.1, m), 0.0);
        QCOMPARE(colour_position(10.0, m), 1.0);
        QCOMPARE(colour_position(100.0, m), 1.0); // clamped
        QCOMPARE(colour_position(0.0, m), 0.0);   // below the floor
        QVERIFY(std::isnan(colour_position(std::nan(""), m)));
        m.scale = ColourScale::Linear;
        QVERIFY(std::abs(colour_position(1.0, m) - 0.9 / 9.9) < 1e-15);
        m.scale = ColourScale::PerLayer; // linear in the range it is given
        QVERIFY(std::abs(colour_position(1.0, m) - 0.9 / 9.9) < 1e-15);
        // Log from 0: the floor is hi / 1000 = 0.01; 0.1 sits at (-1 - -2) / (1 - -2) = 1/3.
        QCOMPARE(log_floor(0, 10), 0.01);
        QCOMPARE(log_floor(0, 0), 1.0);
        m = {};
        m.lo = 0;
        m.hi = 10;
        m.scale = ColourScale::Log;
        QVERIFY(std::abs(colour_position(0.1, m) - 1.0 / 3.0) < 1e-12);
        // Diverging around 1: linear halves [0, 1] and [1, 3]; log halves [0.25, 1] and [1, 4].
        m = {};
        m.lo = 0;
        m.hi = 3;
        m.diverging = true;
        m.centre = 1;
        QCOMPARE(colour_position(0.5, m), 0.25);
        QCOMPARE(colour_position(2.0, m), 0.75);
        m.lo = 0.25;
        m.hi = 4;
        m.scale = ColourScale::Log;
        QVERIFY(std::abs(colour_position(0.5, m) - 0.25) < 1e-12);
        QVERIFY(std::abs(colour_position(2.0, m) - 0.75) < 1e-12);
        // A neutral band of 0.1: 1.05 is the centre; the upper half starts at 1.1.
        m.band = 0.1;
        QCOMPARE(colour_position(1.05, m), 0.5);
        QVERIFY(std::abs(colour_position(4.0, m) - 1.0) < 1e-12);
        QVERIFY(std::abs(colour_position(2.0, m) - (0.5 + 0.5 * std::log10(2.0 / 1.1) / std::log10(4.0 / 1.1))) <
                1e-12);
    }

    void roundTicks() {
        using V = std::vector<double>;
        QCOMPARE(round_ticks(0, 2.3, ColourScale::Linear, 6), (V{0, 0.5, 1, 1.5, 2}));
        QCOMPARE(round_ticks(0.9, 16.3, ColourScale::Linear, 7), (V{5, 10, 15}));
        QCOMPARE(round_ticks(1.2, 1.8, ColourScale::PerLayer, 5), (V{1.2, 1.4, 1.6, 1.8}));
        QCOMPARE(round_ticks(0.1, 10, ColourScale::Log, 8), (V{0.1, 0.2, 0.5, 1, 2, 5, 10}));
        // From 0 the floor is 16 / 1000: 0.02 .. 10 in {1, 2, 5} is 9 ticks, too many: powers of ten.
        QCOMPARE(round_ticks(0, 16, ColourScale::Log, 8), (V{0.1, 1, 10}));
        QCOMPARE(round_ticks(0.001, 1e6, ColourScale::Log, 6), (V{0.001, 0.1, 10, 1000, 100000}));
        // Inside one decade: the linear ticks.
        QCOMPARE(round_ticks(1.2, 1.8, ColourScale::Log, 5), (V{1.2, 1.4, 1.6, 1.8}));
        QVERIFY(round_ticks(1, 1, ColourScale::Linear, 5).empty());
        QCOMPARE(round_ticks(-1, 1, ColourScale::Linear, 3), (V{-1, 0, 1}));
    }

    void roundStepsShared() {
        // The one search for a round step m x 10^k: decades ascending, mantissas in the order given,
        // the first that fits.
        auto atMost = [](double lo, double hi, double n) {
            return [=](const RoundStep& r) { return multiples_within(lo, hi, r.step) <= n; };
        };
        const auto four = round_step({1.0, 2.0, 5.0}, -1, 3, atMost(0, 2.3, 4));
        QVERIFY(four.has_value());
        QCOMPARE(four->step, 1.0);
        QCOMPARE(four->mantissa, 1.0);
        QCOMPARE(four->exponent, 0);
        const auto five = round_step({1.0, 2.0, 5.0}, -1, 3, atMost(0, 2.3, 5));
        QCOMPARE(five->step, 0.5);
        QCOMPARE(five->exponent, -1);
        QVERIFY(!round_step({1.0, 2.0, 5.0}, 0, 1, [](const RoundStep&) { return false; }).has_value());
        QVERIFY(!round_step({1.0}, 2, 1, [](const RoundStep&) { return true; }).has_value());
        // The three counts, by hand.
        QCOMPARE(multiples_within(0, 2.3, 0.5), 5.0);     // 0, 0.5, 1, 1.5, 2
        QCOMPARE(multiples_within(0.1, 0.3, 0.1), 3.0);   // 0.3 / 0.1 = 2.9999999999999996: the slack keeps 0.3
        QCOMPARE(multiples_within(0.31, 0.39, 0.1), 0.0); // no multiple inside
        QCOMPARE(bins_holding(-3.5, 2, 1), 7.0);          // [-4, -3) .. [2, 3): 2 starts a bin
        QCOMPARE(bins_covering(100, 390, 100), 3.0);      // [100, 200) [200, 300) [300, 400]
        // Every user keeps its values (the GUI tests check them at length): the colour bar's ticks,
        // the Run view's gain bins, the sample lengths' linear bins and the convergence chart's level
        // ticks (1, 2, 5, ..., 1000 for at most 12 labels, 1000 however many levels).
        QCOMPARE(round_ticks(0, 2.3, ColourScale::Linear, 6), (std::vector<double>{0, 0.5, 1, 1.5, 2}));
        RunSeries run;
        for (double g : {-12.3, -10.0, -4.9, -4.1}) {
            RunStep st;
            st.gain_pct = g;
            run.steps.push_back(st);
        }
        const auto bins = gain_histogram(run, 8); // width 2: -14 .. -4
        QCOMPARE(bins.size(), std::size_t(5));
        QCOMPARE(bins.front().lo, -14.0);
        const LengthHistogram lin = lengthHistogram({103, 180, 260, 390}, 4); // step 100: 100 .. 400
        QCOMPARE(lin.edges, (std::vector<double>{100, 200, 300, 400}));
        ConvergencePanel conv;
        auto interval = [&conv](int levels) {
            std::vector<LevelStats> v(static_cast<std::size_t>(levels) + 1);
            for (int k = 0; k <= levels; ++k) {
                v[static_cast<std::size_t>(k)].level = k;
                v[static_cast<std::size_t>(k)].best.max_u = 100.0 - k * 1e-3;
            }
            conv.setLevels(v);
            return qobject_cast<QValueAxis*>(ui::chartView(&conv)->chart()->axes(Qt::Horizontal).value(0))
                ->tickInterval();
        };
        QCOMPARE(interval(12), 1.0);
        QCOMPARE(interval(13), 2.0);
        QCOMPARE(interval(30), 5.0);
        QCOMPARE(interval(240), 20.0);
        QCOMPARE(interval(30000), 1000.0);
    }

    void labelStrides() {
        QCOMPARE(axis_label_stride(16, 3, 14, 16), 1);  // every rank up to EP16
        QCOMPARE(axis_label_stride(64, 5, 14, 16), 4);  // 4 x 5 px >= 14 + 6
        QCOMPARE(axis_label_stride(32, 12, 14, 16), 2); // 2 x 12 >= 20
        QCOMPARE(axis_label_stride(64, 30, 14, 16), 1);
    }

    void gainSplitByHand() {
        // handGainPlan(): baseline 1.30 -> reorder 1.20 -> routepack's layout at LPT 0.95 -> routepack 0.90.
        const auto [plan, window] = handGainPlan();
        const auto costs = plan_costs(*plan, *window);
        QVERIFY(costs);
        const GainSplit g = split_gain(*plan, *window, *costs);
        auto near = [](double a, double b) { return std::abs(a - b) < 1e-12; };
        QVERIFY(g.refined);
        QCOMPARE(g.cap, std::int64_t{100});
        const double maxU[] = {1.30, 1.20, 0.95, 0.90}, att[] = {0.75, 0.75, 0.60, 0.60};
        const std::int64_t layer[] = {55, 45, 35, 30};
        for (int k = 0; k < 4; ++k) {
            const GainState& s = g.states[static_cast<std::size_t>(k)];
            QVERIFY2(near(s.max_u, maxU[k]) && near(s.attention, att[k]) && near(s.expert, maxU[k] - att[k]),
                     qPrintable(QString::number(k)));
            QCOMPARE(s.straggler, 0);
            QCOMPARE(s.layer, std::vector<std::int64_t>{layer[k]});
        }
        QCOMPARE(g.states[0].max_u, plan->baseline.metrics.score.max_u);
        QCOMPARE(g.states[3].max_u, plan->routepack.metrics.score.max_u);
        // Peak rank of the straggler's one row-shard: rank 1 (55, 45, 35 tokens), then rank 0 on the
        // 30-30 tie of the refined placement.
        QCOMPARE(g.states[0].rank, (std::vector<std::int64_t>{0, 55}));
        QCOMPARE(g.states[2].rank, (std::vector<std::int64_t>{0, 35}));
        QCOMPARE(g.states[3].rank, (std::vector<std::int64_t>{30, 0}));
        // Steps: LPT -0.10 (expert), packing -0.25 (attention -0.15, expert -0.10), refinement -0.05.
        const GainStep& lpt = g.steps[0];
        const GainStep& pack = g.steps[1];
        const GainStep& ref = g.steps[2];
        QVERIFY(near(lpt.change(), -0.10) && near(lpt.attention, 0) && near(lpt.expert, -0.10));
        QVERIFY(near(pack.change(), -0.25) && near(pack.attention, -0.15) && near(pack.expert, -0.10));
        QVERIFY(near(ref.change(), -0.05) && near(ref.attention, 0) && near(ref.expert, -0.05));
        QVERIFY(near(g.placement(), -0.15) && near(g.packing(), -0.25) && near(g.total(), -0.40));
        QVERIFY(near(g.percent(g.total()), -400.0 / 13.0));
        QCOMPARE(lpt.method, Method::Reorder);
        QCOMPARE(ref.method, Method::RoutePack);
        // Shards: g0 -0.10 before g1 +0.05; packing g0 -0.25 before g1 +0.20.
        QCOMPARE(lpt.shards.size(), std::size_t{2});
        QCOMPARE(lpt.shards[0].index, 0);
        QVERIFY(near(lpt.shards[1].change(), 0.05));
        QCOMPARE(pack.shards[0].index, 0);
        QVERIFY(near(pack.shards[1].change(), 0.20));
        // One row, one layer: their changes are the step's (row) and C x its expert change (layer).
        QCOMPARE(pack.rows.size(), std::size_t{1});
        QVERIFY(near(pack.rows[0].change(), -0.25));
        QCOMPARE(pack.layers[0].change(), -10.0);
        // Ranks: the refinement moves the peak from rank 1 (35 -> 0) to rank 0 (0 -> 30).
        QCOMPARE(ref.ranks.size(), std::size_t{2});
        QCOMPARE(ref.ranks[0].rank, 1);
        QCOMPARE(ref.ranks[0].change(), -35.0);
        QCOMPARE(ref.ranks[1].rank, 0);
        QCOMPARE(ref.ranks[1].change(), 30.0);
        QCOMPARE(lpt.ranks.size(), std::size_t{1});
        QCOMPARE(lpt.ranks[0].change(), -10.0);

        const QString text = gainExplanationText(g, *plan);
        for (const char* part :
             {"max_g U goes from 1.3000 (baseline) to 0.9000 (RoutePack), -0.4000 (-30.77 %) = placement -0.1500 "
              "(-11.54 %: LPT -0.1000, then refined for the layout -0.0500) + packing -0.2500 (-19.23 %); by part, "
              "attention -0.1500 + expert -0.2500",
              "shard <a href=\"shard:0:reorder\">g0</a> (U -0.1000)", "row <a href=\"row:0:0:routepack\">r0</a>",
              "MoE layer <a href=\"layer:0:0:routepack\">3</a> (-10 tokens)",
              "EP rank <a href=\"rank:0:1\">1 of layer 3</a> (-35 tokens)"})
            QVERIFY2(text.contains(QString::fromUtf8(part)), qPrintable(text));
        QVERIFY(!text.contains(QStringLiteral("fell")));
        // Links parse back; anything else is no link.
        const ExplainLink row = parseExplainLink(QStringLiteral("row:0:1:routepack"));
        QCOMPARE(row.kind, ExplainLink::Row);
        QCOMPARE(row.a, 0);
        QCOMPARE(row.b, 1);
        QCOMPARE(row.method, Method::RoutePack);
        QCOMPARE(parseExplainLink(QStringLiteral("rank:2:5")).kind, ExplainLink::Rank);
        QCOMPARE(parseExplainLink(QStringLiteral("shard:0:nope")).kind, ExplainLink::None);
        QCOMPARE(parseExplainLink(QStringLiteral("rank:-1:2")).kind, ExplainLink::None);

        // The convergence chart ends at the plan: the final search at LPT (0.95), then the refinement (0.90).
        const auto tail = convergence_tail(*plan, costs.get());
        QCOMPARE(tail.size(), std::size_t{2});
        QVERIFY(near(tail[0].max_u, 0.95));
        QCOMPARE(tail[1].max_u, plan->routepack.metrics.score.max_u);
        QCOMPARE(convergence_tail(*plan, nullptr).size(), std::size_t{1});
        ConvergencePanel conv;
        conv.setLevels(plan->search.convergence);
        conv.setTail(tail);
        QCOMPARE(ui::tailSeries(&conv)->count(), 3); // from the last level (x 1) through x 2 and 3
        QCOMPARE(ui::tailSeries(&conv)->at(2), QPointF(3, 0.9));
        QVERIFY2(conv.summaryText().endsWith(
                     QStringLiteral("Then final search 0.9500, placement refined for the layout 0.9000 (the plan's "
                                    "cost).")),
                 qPrintable(conv.summaryText()));
        // A plan made in this session has its final pass round by round: every round is drawn.
        {
            PlanResult rounds = *plan;
            rounds.search.final_rounds = {{0.97, 0.95}, {0.93, 0.9}};
            const auto t = convergence_tail(rounds, costs.get());
            QCOMPARE(t.size(), std::size_t{4});
            QCOMPARE(t[0].label, std::string("final search 1"));
            QCOMPARE(t[0].max_u, 0.97);
            QCOMPARE(t[1].label, std::string("placement refinement 1"));
            QCOMPARE(t[1].max_u, 0.95);
            QCOMPARE(t[2].label, std::string("final search 2"));
            QCOMPARE(t[3].label, std::string("placement refinement 2"));
            QCOMPARE(t[3].max_u, 0.9);
            rounds.search.final_rounds = {{0.9, std::nullopt}};
            const auto one = convergence_tail(rounds, nullptr);
            QCOMPARE(one.size(), std::size_t{1});
            QCOMPARE(one[0].label, std::string("final search"));
            QCOMPARE(one[0].max_u, 0.9);
        }

        // The costs tab shows the text; its links open the views.
        PlanView view;
        view.resize(1366, 768);
        view.setPlan(plan, window);
        QCOMPARE(ui::costsPanel(&view)->gainText(), text);
        QVERIFY(view.openExplainLink(QStringLiteral("layer:0:1:routepack")));
        QCOMPARE(view.currentWidget(), static_cast<QWidget*>(ui::rowHeatmapPanel(&view)));
        QCOMPARE(ui::rowHeatmapPanel(&view)->shard(), 1);
        QSignalSpy ranks(&view, &PlanView::rankActivated);
        QVERIFY(view.openExplainLink(QStringLiteral("rank:0:1")));
        QCOMPARE(view.currentWidget(), static_cast<QWidget*>(ui::epHeatmapPanel(&view)));
        QCOMPARE(ranks.count(), 1);
        QCOMPARE(ranks.front().at(1).toInt(), 1);
        // Rank 1 of the refined placement holds e1, e2: s1 20 tokens, s3 20, s0 10, s2 5.
        QCOMPARE(ranks.front().at(3).value<QList<int>>(), (QList<int>{1, 3, 0, 2}));
        QCOMPARE(ranks.front().at(5).value<QList<qint64>>(), (QList<qint64>{20, 20, 10, 5}));
        QVERIFY(view.openExplainLink(QStringLiteral("row:0:0:routepack")));
        QCOMPARE(view.currentWidget(), static_cast<QWidget*>(view.gridPanel()));
        QVERIFY(!view.openExplainLink(QStringLiteral("rank:0:2"))); // rank out of range
        view.setCurrentWidget(ui::costsPanel(&view));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        shot(&view, QStringLiteral("explain-gain-hand"));
    }

    void gainSplitRealWindow() {
        // 256 DeepSeek-V2-Lite samples (numeric id order) on the shipped two-node EP16/DP8 topology: every
        // part of the split adds up, and the chain's ends are the plan's baseline and routepack.
        ROUTEPACK_REQUIRE_SHARED(dir, "traces/deepseek-v2-lite");
        ImportOptions opt;
        opt.model = known_model("deepseek-v2-lite");
        const Trace all = import_trace_to_memory({dir}, opt);
        std::vector<std::size_t> order(all.size());
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return natural_less(all.samples[a].id, all.samples[b].id); });
        PlanInput in;
        in.window.model = all.model;
        for (std::size_t k = 0; k < 256; ++k) {
            SampleRecord rec;
            rec.info = all.samples[order[k]];
            const auto c = all.sample_counts(order[k]);
            rec.counts.assign(c.begin(), c.end());
            in.window.append(std::move(rec));
        }
        in.trace_name = "deepseek-v2-lite";
        in.window_name = "first-256";
        in.topology = known_topology("deepseek-v2-lite-ep16-dp8-2nodes");
        in.budgets.annealing.levels = 4;
        in.budgets.annealing.steps = 200;
        in.budgets.seeding.candidates = 8;
        in.budgets.seeding.population = 4;
        in.budgets.workers = 2;
        const PlanResult plan = plan_window(in);
        const auto costs = plan_costs(plan, in.window);
        QVERIFY(costs);
        const GainSplit g = split_gain(plan, in.window, *costs);
        QCOMPARE(g.states[0].max_u, plan.baseline.metrics.score.max_u);
        QCOMPARE(g.states[1].max_u, plan.reorder.metrics.score.max_u);
        QCOMPARE(g.states[3].max_u, plan.routepack.metrics.score.max_u);
        const double tol = 1e-9 * g.states[0].max_u;
        QVERIFY(std::abs(g.placement() + g.packing() - g.total()) <= tol);
        const double C = static_cast<double>(g.cap);
        for (const GainState& s : g.states) {
            QVERIFY(std::abs(s.attention + s.expert - s.max_u) <= tol);
            double rows = 0;
            for (double j : s.row_j)
                rows += j;
            QVERIFY(std::abs(rows - s.max_u) <= tol);
            std::int64_t tokens = 0;
            const int P = in.topology.ep_ranks;
            for (std::size_t l = 0; l < s.layer.size(); ++l) {
                std::int64_t ranks = 0;
                for (int p = 0; p < P; ++p)
                    ranks += s.rank[l * static_cast<std::size_t>(P) + static_cast<std::size_t>(p)];
                QCOMPARE(ranks, s.layer[l]); // the layer's peaks credited to the ranks, exactly
                tokens += s.layer[l];
            }
            QVERIFY(std::abs(static_cast<double>(tokens) / C - s.expert) <= tol);
        }
        for (const GainStep& st : g.steps) {
            QVERIFY(std::abs(st.attention + st.expert - st.change()) <= tol);
            double rows = 0, layers = 0;
            for (const auto& m : st.rows)
                rows += m.change();
            for (const auto& m : st.layers)
                layers += m.change();
            QVERIFY(std::abs(rows - st.change()) <= tol);
            QVERIFY(std::abs(layers / C - st.expert) <= tol);
        }
        qInfo("deepseek 256, EP16/DP8 on 2 nodes: %.4f -> %.4f (%+.2f %%): LPT %+.4f, packing %+.4f, refinement %+.4f; "
              "attention %+.4f, expert %+.4f",
              g.states[0].max_u, g.states[3].max_u, g.percent(g.total()), g.steps[0].change(), g.steps[1].change(),
              g.steps[2].change(), g.steps[0].attention + g.steps[1].attention + g.steps[2].attention,
              g.steps[0].expert + g.steps[1].expert + g.steps[2].expert);
        qInfo("%s", qPrintable(gainExplanationText(g, plan)));
    }

    void demoGainSplit() {
        // The embedded demo (the studio's first start): the split adds up and ends at the plan's costs;
        // the costs tab at both window sizes.
        const storage::DemoBuild demo = storage::build_demo(tmp_ / "demo");
        auto lib = storage::Library::open(demo.library, storage::OpenMode::ReadOnly);
        auto window = std::make_shared<const Trace>(lib->load_window(storage::kDemoTrace, demo.window.name));
        auto plan = std::make_shared<const PlanResult>(demo.plan);
        const auto costs = plan_costs(*plan, *window);
        QVERIFY(costs);
        const GainSplit g = split_gain(*plan, *window, *costs);
        QCOMPARE(g.states[0].max_u, plan->baseline.metrics.score.max_u);
        QCOMPARE(g.states[3].max_u, plan->routepack.metrics.score.max_u);
        QVERIFY(std::abs(g.placement() + g.packing() - g.total()) <= 1e-9 * g.states[0].max_u);
        for (const GainStep& st : g.steps)
            QVERIFY(std::abs(st.attention + st.expert - st.change()) <= 1e-9 * g.states[0].max_u);
        qInfo("demo: %.4f -> %.4f (%+.2f %%): LPT %+.4f, packing %+.4f, refinement %+.4f; attention %+.4f, "
              "expert %+.4f",
              g.states[0].max_u, g.states[3].max_u, g.percent(g.total()), g.steps[0].change(), g.steps[1].change(),
              g.steps[2].change(), g.steps[0].attention + g.steps[1].attention + g.steps[2].attention,
              g.steps[0].expert + g.steps[1].expert + g.steps[2].expert);
        qInfo("%s", qPrintable(gainExplanationText(g, *plan)));
        PlanView view;
        view.setPlan(plan, window);
        view.setCurrentWidget(ui::costsPanel(&view));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        for (const QSize size : {QSize(1600, 1000), QSize(1366, 768)}) {
            view.resize(size);
            QTest::qWait(30);
            shot(&view, QStringLiteral("explain-costs-demo-%1x%2").arg(size.width()).arg(size.height()));
        }
        view.setCurrentWidget(ui::convergencePanel(&view));
        QTest::qWait(30);
        // The final pass round by round (the demo's budgets: 2 rounds, each with a refinement); the best
        // only falls from the last level on and ends at the plan's cost.
        const auto& rounds = plan->search.final_rounds;
        QCOMPARE(rounds.size(), std::size_t(plan->budgets.placement_rounds));
        int points = 1; // the last level
        double best = plan->search.convergence.back().best.max_u;
        for (const FinalRound& r : rounds) {
            QVERIFY(r.searched_max_u <= best);
            QVERIFY(r.refined_max_u && *r.refined_max_u <= r.searched_max_u);
            best = *r.refined_max_u;
            points += 2;
        }
        QCOMPARE(best, plan->routepack.metrics.score.max_u);
        qInfo("demo final pass: %s", qPrintable(ui::convergencePanel(&view)->summaryText()));
        QCOMPARE(ui::tailSeries(ui::convergencePanel(&view))->count(), points);
        QCOMPARE(ui::tailSeries(ui::convergencePanel(&view))
                     ->at(ui::tailSeries(ui::convergencePanel(&view))->count() - 1)
                     .y(),
                 plan->routepack.metrics.score.max_u);
        shot(&view, QStringLiteral("explain-convergence-demo"));
    }

    void sampleTableRankTokens() {
        // A rank filter shows each listed sample's tokens on that (layer, rank) and sorts by them.
        SamplePane pane;
        auto data = buildSampleTable(handTrace(), QStringLiteral("hand"));
        pane.model()->setData(data);
        QVERIFY(pane.view()->isColumnHidden(SampleTableModel::SelectedTokens));
        pane.filterSamples({"s0", "s2", "s3"}, QStringLiteral("Top 3"), {5, 9, 3}, QStringLiteral("Tokens on L3/EP1"));
        QVERIFY(!pane.view()->isColumnHidden(SampleTableModel::SelectedTokens));
        QCOMPARE(pane.model()->headerData(SampleTableModel::SelectedTokens, Qt::Horizontal).toString(),
                 QStringLiteral("Tokens on L3/EP1"));
        QCOMPARE(pane.proxy()->rowCount(), 3);
        QStringList ids;
        QList<qint64> tokens;
        for (int r = 0; r < pane.proxy()->rowCount(); ++r) {
            ids << pane.proxy()->index(r, SampleTableModel::Id).data().toString();
            tokens << pane.proxy()->index(r, SampleTableModel::SelectedTokens).data(RawValueRole).toLongLong();
        }
        QCOMPARE(ids, (QStringList{QStringLiteral("s2"), QStringLiteral("s0"), QStringLiteral("s3")}));
        QCOMPARE(tokens, (QList<qint64>{9, 5, 3}));
        QCOMPARE(pane.model()->index(1, SampleTableModel::SelectedTokens).data().toString(), QString()); // s1 unlisted
        QCOMPARE(pane.model()->index(1, SampleTableModel::SelectedTokens).data(RawValueRole).toLongLong(), -1);
        pane.clearFilter();
        QVERIFY(pane.view()->isColumnHidden(SampleTableModel::SelectedTokens));
        QVERIFY(!pane.model()->hasSelectedTokens());
    }

    // --- The heatmap widget's scales, marks and labels ---

    void heatmapScales() {
        HeatmapWidget h;
        h.resize(420, 240);
        h.setColourMap(HeatmapWidget::ColourMap::Sequential);
        h.setData(2, 3, {1, 2, 3, 10, 20, 30}, {}, {});
        QCOMPARE(ui::rangeLow(&h), 1.0);
        QCOMPARE(ui::rangeHigh(&h), 30.0);
        // Linear: 3 and 10 differ; per layer: each row spans the whole bar.
        QVERIFY(h.cellColour(0, 2) != h.cellColour(1, 2));
        h.setColourScale(ColourScale::PerLayer);
        for (int c = 0; c < 3; ++c)
            QCOMPARE(h.cellColour(0, c), h.cellColour(1, c));
        QCOMPARE(h.mapping(1).lo, 10.0);
        QCOMPARE(h.mapping(1).hi, 30.0);
        QVERIFY(h.legendTicks().empty());
        // Log: 1 .. 30, the cell colour is the LUT colour at colour_position.
        h.setColourScale(ColourScale::Log);
        ColourMapping m;
        m.lo = 1;
        m.hi = 30;
        m.scale = ColourScale::Log;
        QCOMPARE(h.mapping().scale, ColourScale::Log);
        QCOMPARE(h.cellColour(0, 2), h.colourFor(3.0));
        QVERIFY(std::abs(colour_position(10, m) - 1 / std::log10(30.0)) < 1e-12);
        h.show();
        QVERIFY(QTest::qWaitForWindowExposed(&h));
        const QImage img = h.grab().toImage();
        QCOMPARE(QColor(img.pixel(h.cellRect(1, 0).center())), h.cellColour(1, 0));
        const auto ticks = h.legendTicks();
        QVERIFY(!ticks.empty());
        for (double t : ticks) // {1, 2, 5} x 10^k
            QVERIFY2(t == 1 || t == 2 || t == 5 || t == 10 || t == 20, qPrintable(QString::number(t)));
        // Marks and selection.
        h.setRowMarks({false, true});
        QCOMPARE(ui::rowMarks(&h), (std::vector<bool>{false, true}));
        h.setSelection(-1, 2);
        QCOMPARE(ui::selectedRow(&h), -1);
        QCOMPARE(ui::selectedColumn(&h), 2);
        h.setSelection(5, 5);
        QCOMPARE(ui::selectedColumn(&h), -1);
        // Column labels: every one of 16 ranks; a power-of-two stride at 64 in the same width.
        HeatmapWidget r;
        r.resize(420, 240);
        r.setData(1, 16, std::vector<double>(16, 1.0), {}, {});
        QCOMPARE(r.columnLabelStride(), 1);
        r.setData(1, 64, std::vector<double>(64, 1.0), {}, {});
        const int s = r.columnLabelStride();
        QVERIFY2(s == 2 || s == 4 || s == 8, qPrintable(QString::number(s)));
        // The smallest power of two whose span holds the widest label ("63") and 6 px.
        const double cw = (r.cellRect(0, 63).right() + 1 - r.cellRect(0, 0).left()) / 64.0;
        const int label = QFontMetrics(r.font()).horizontalAdvance(QStringLiteral("63"));
        QVERIFY2(s * cw >= label + 6 - 0.5 && (s / 2.0) * cw < label + 6 + 0.5,
                 qPrintable(QStringLiteral("stride %1, cell %2 px, label %3 px").arg(s).arg(cw).arg(label)));
    }

    // --- Tooltips and selection on a hand placement ---

    void epTooltipsNameExpertsAndBound() {
        const auto plan = handPlacement();
        PlanView view;
        view.resize(1100, 600);
        view.setPlacement(plan, std::make_shared<const std::vector<std::uint64_t>>(
                                    std::vector<std::uint64_t>{10, 1, 1, 0, 3, 3, 3, 3}));
        EpHeatmapPanel* ep = ui::epHeatmapPanel(&view);
        QCOMPARE(ui::boundedLayers(ep).size(), std::size_t{1});
        QCOMPARE(ui::boundedLayers(ep)[0].layer, 0);
        for (bool planned : {false, true})
            QCOMPARE(ui::rowMarks(ep->map(planned)), (std::vector<bool>{true, false}));
        // Identity rank 0 of layer 3: e0 10, e1 1 = 11 tokens; the mean is 6.
        const QString tip = ep->map(false)->toolTipFor(0, 0);
        QVERIFY2(tip.contains(QStringLiteral("G = 11 tokens")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("= 1.8333 x layer mean (6.0 tokens)")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("Experts on this rank (tokens): e0 10, e1 1")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral(
                     "bounded by expert 0 (10 of 12 tokens): no placement can lower this layer's peak below 10")),
                 qPrintable(tip));
        // LPT rank 0 of layer 3 holds e0 and e3 (slots 0, 1); layer 5 is not bounded.
        QVERIFY(ep->map(true)->toolTipFor(0, 0).contains(QStringLiteral("e0 10, e3 0")));
        const QString plain = ep->map(true)->toolTipFor(1, 1);
        QVERIFY2(plain.contains(QStringLiteral("e1 3, e3 3")), qPrintable(plain));
        QVERIFY(!plain.contains(QStringLiteral("bounded")));
        // A click on a cell selects it on both maps and lists its experts (no window: no samples).
        QSignalSpy spy(ep, &EpHeatmapPanel::rankActivated);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QTest::mouseClick(ep->map(true), Qt::LeftButton, {}, ep->map(true)->cellRect(0, 1).center());
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.front().at(0).toInt(), 0);
        QCOMPARE(spy.front().at(1).toInt(), 1);
        QCOMPARE(spy.front().at(2).toBool(), true);
        QVERIFY(spy.front().at(3).value<QList<int>>().isEmpty());
        for (bool planned : {false, true}) {
            QCOMPARE(ui::selectedRow(ep->map(planned)), 0);
            QCOMPARE(ui::selectedColumn(ep->map(planned)), 1);
        }
        QCOMPARE(ep->selectionText(),
                 QStringLiteral("<b>Layer 3, EP rank 1</b> (LPT placement): G = 2 tokens on 2 experts: e1 1, e2 1. "
                                "This layer is bounded by expert 0 (10 of 12 tokens): no placement can lower this "
                                "layer's peak below 10."));
        // The colour scale switch reaches both maps.
        ep->setColourScale(ColourScale::Log);
        QCOMPARE(ui::colourScale(ep->map(false)), ColourScale::Log);
        QCOMPARE(ui::colourScale(ep->map(true)), ColourScale::Log);
        QCOMPARE(ui::scaleCombo(ep)->currentText(), QStringLiteral("Log"));
        shot(&view, QStringLiteral("explain-ep-bounded-log"));
        ep->setColourScale(ColourScale::PerLayer);
        QCOMPARE(ui::colourScale(ep->map(true)), ColourScale::PerLayer);
    }

    // --- Many ranks stay readable ---

    void wideHeatmapsLabelEveryRankToSixteen() {
        // 48 MoE layers x 128 experts, loads within a factor of 2 of each other (fixed seed), but layer
        // 45 carries one expert with 34485 of 34517 tokens (the Maverick case): bounded on every
        // topology, and the only layer that is.
        const int L = 48, E = 128;
        std::mt19937_64 rng(7);
        std::vector<std::uint64_t> loads(static_cast<std::size_t>(L) * E);
        for (int l = 0; l < L; ++l)
            for (int e = 0; e < E; ++e)
                loads[static_cast<std::size_t>(l) * E + e] = 900 + (e % 5) * 60 + rng() % 300;
        for (int e = 0; e < E; ++e)
            loads[45 * E + e] = 0;
        loads[45 * E + 40] = 34485;
        loads[45 * E + 3] = 32;
        for (const int P : {16, 64}) {
            auto plan = std::make_shared<PlanResult>();
            plan->model.name = "wide";
            plan->model.num_hidden_layers = L;
            plan->model.experts = E;
            plan->model.top_k = 1;
            for (int l = 0; l < L; ++l)
                plan->model.moe_layers.push_back(l);
            plan->topology.ep_ranks = P;
            plan->topology.dp_slots = 1;
            plan->topology.edp_shards = {{0}};
            plan->topology.token_cap = 1000;
            plan->placement.identity = identity_placement(L, E, P);
            plan->placement.lpt = lpt_placement(loads, L, E, P);
            plan->placement.rank_loads_identity = rank_loads(loads, plan->placement.identity);
            plan->placement.rank_loads_lpt = rank_loads(loads, plan->placement.lpt);
            plan->placement.cv_identity = cv_global(plan->placement.rank_loads_identity, L, P);
            plan->placement.cv_lpt = cv_global(plan->placement.rank_loads_lpt, L, P);
            PlanView view;
            view.resize(1400, 820);
            view.setPlacement(plan, std::make_shared<const std::vector<std::uint64_t>>(loads));
            view.show();
            QVERIFY(QTest::qWaitForWindowExposed(&view));
            EpHeatmapPanel* ep = ui::epHeatmapPanel(&view);
            ep->setColourScale(ColourScale::Log);
            QTest::qWait(20);
            bool found = false;
            for (const ExpertBound& bd : ui::boundedLayers(ep))
                if (bd.layer == 45) {
                    found = true;
                    QCOMPARE(bd.expert, 40);
                    QCOMPARE(bd.tokens, std::uint64_t{34485});
                    QCOMPARE(bd.total, std::uint64_t{34517});
                }
            QVERIFY(found);
            QCOMPARE(ui::boundedLayers(ep).size(), std::size_t{1});
            HeatmapWidget* m = ep->map(true);
            QVERIFY(ui::rowMarks(m)[45]);
            const QString tip = m->toolTipFor(45, P - 1);
            QVERIFY2(tip.contains(QStringLiteral("<b>EP rank %1</b>").arg(P - 1)), qPrintable(tip));
            QVERIFY2(tip.contains(QStringLiteral("bounded by expert 40 (34485 of 34517 tokens): no placement can "
                                                 "lower this layer's peak below 34485")),
                     qPrintable(tip));
            if (P == 16) {
                QCOMPARE(m->columnLabelStride(), 1);
            } else {
                const int s = m->columnLabelStride();
                QVERIFY2(s > 1 && (s & (s - 1)) == 0, qPrintable(QString::number(s)));
            }
            // Log legend ticks are round: {1, 2, 5} x 10^k.
            for (double t : m->legendTicks()) {
                const double mant = t / std::pow(10.0, std::floor(std::log10(t) + 1e-9));
                QVERIFY2(std::abs(mant - 1) < 1e-9 || std::abs(mant - 2) < 1e-9 || std::abs(mant - 5) < 1e-9,
                         qPrintable(QString::number(t)));
            }
            shot(&view, QStringLiteral("explain-ep%1-log").arg(P));
            if (P == 64) {
                view.setPalette(routepack::test::dark_palette());
                ep->setColourScale(ColourScale::PerLayer);
                QTest::qWait(20);
                shot(&view, QStringLiteral("explain-ep64-per-layer-dark"));
            }
        }
    }

    // --- The real Maverick trace: one expert bounds layer 45 ---

    void realMaverickLayerBoundedByOneExpert() {
        ROUTEPACK_REQUIRE_SHARED(mav, "traces/llama4-maverick");
        ImportOptions o;
        o.model = known_model("llama4-maverick");
        const Trace t = import_trace_to_memory({mav}, o);
        const int L = t.model.num_moe_layers(), E = t.model.experts, P = 16;
        QCOMPARE(L, 24);
        QCOMPARE(E, 128);
        const auto loads = aggregate_expert_loads(t.counts, t.size(), L, E);
        const int l45 = t.model.moe_index(45);
        QVERIFY(l45 >= 0);
        const auto bounded = expert_bounded_layers(loads, L, E, P);
        const auto it =
            std::find_if(bounded.begin(), bounded.end(), [&](const ExpertBound& b) { return b.layer == l45; });
        QVERIFY(it != bounded.end());
        QCOMPARE(it->expert, 40);
        QCOMPARE(it->tokens, std::uint64_t{34485});
        QCOMPARE(it->total, std::uint64_t{34517});
        QStringList names;
        for (const ExpertBound& b : bounded)
            names << QStringLiteral("layer %1: e%2 %3 of %4")
                         .arg(t.model.moe_layers[static_cast<std::size_t>(b.layer)])
                         .arg(b.expert)
                         .arg(b.tokens)
                         .arg(b.total);
        qInfo("bounded at EP%d: %s", P, qPrintable(names.join(QStringLiteral("; "))));
        // At EP16 the mean rank load is 34517 / 16 = 2157.3 tokens: every layer but 47 has a hotter
        // expert; layer 45's takes nearly all.
        QCOMPARE(bounded.size(), std::size_t{23});
        QVERIFY(std::none_of(bounded.begin(), bounded.end(),
                             [&](const ExpertBound& b) { return b.layer == t.model.moe_index(47); }));
        // The EP heatmaps of the whole trace on 16 ranks (the placement views of a load-only trace).
        auto plan = std::make_shared<PlanResult>();
        plan->model = t.model;
        plan->topology.ep_ranks = P;
        plan->topology.dp_slots = 1;
        plan->topology.edp_shards = {{0}};
        plan->topology.token_cap = 8192;
        plan->placement.identity = identity_placement(L, E, P);
        plan->placement.lpt = lpt_placement(loads, L, E, P);
        plan->placement.rank_loads_identity = rank_loads(loads, plan->placement.identity);
        plan->placement.rank_loads_lpt = rank_loads(loads, plan->placement.lpt);
        plan->placement.cv_identity = cv_global(plan->placement.rank_loads_identity, L, P);
        plan->placement.cv_lpt = cv_global(plan->placement.rank_loads_lpt, L, P);
        PlanView view;
        view.resize(1400, 820);
        view.setPlacement(plan, std::make_shared<const std::vector<std::uint64_t>>(loads));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        EpHeatmapPanel* ep = ui::epHeatmapPanel(&view);
        QCOMPARE(ui::boundedLayers(ep).size(), bounded.size());
        QVERIFY(ui::rowMarks(ep->map(true))[static_cast<std::size_t>(l45)]);
        const int hotRank = plan->placement.lpt.rank_of(l45, 40);
        QVERIFY2(ep->map(true)
                     ->toolTipFor(l45, hotRank)
                     .contains(QStringLiteral("bounded by expert 40 (34485 of 34517 tokens): no placement can lower "
                                              "this layer's peak below 34485")),
                 qPrintable(ep->map(true)->toolTipFor(l45, hotRank)));
        // The heading names the most bounded layer first.
        view.setCurrentWidget(ep);
        const QString heading = ep->findChild<QLabel*>()->text();
        QVERIFY2(heading.contains(QStringLiteral("23 layers bounded by one expert</b>")), qPrintable(heading));
        QVERIFY2(heading.contains(QStringLiteral("below them): layer 45 (e40, 34485 of 34517 tokens), ")),
                 qPrintable(heading));
        ep->setColourScale(ColourScale::Log);
        ep->selectCell(l45, hotRank, true);
        QTest::qWait(20);
        shot(&view, QStringLiteral("explain-maverick-ep16-log"));
    }

    // --- The linked selection in the studio ---

    void linkedSelectionFiltersSamples() {
        // 32 samples, so that the top 20 of a rank leave some out.
        const auto dir = test::temp_dir(QStringLiteral("explain-linked"));
        test::synth_library(dir, 4, 8);
        StudioWindow w(options_);
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.openLibrary(q(dir / "lib.routepack")));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
        PlannerBudgets b;
        b.annealing.levels = 2;
        b.annealing.steps = 50;
        b.seeding.candidates = 2;
        b.seeding.population = 2;
        b.workers = 1;
        ui::topologyEditor(w)->setBudgets(b);
        QVERIFY(w.runPlanner() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        w.resize(1560, 960);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const auto plan = ui::planView(w)->plan();
        const auto window = ui::planView(w)->window();
        QVERIFY(plan && window);
        QCOMPARE(static_cast<int>(plan->samples.size()), 32);
        QCOMPARE(ui::sampleProxy(w)->rowCount(), 32);
        QCOMPARE(ui::samplePane(w)->filterText(), QString());

        auto shownIds = [&] { return shown_sample_ids(w); };

        // Click EP rank 1 of the third MoE layer on the LPT map.
        ui::planView(w)->setCurrentWidget(ui::epHeatmapPanel(ui::planView(w)));
        QTest::qWait(50);
        const int l = 2, p = 1;
        HeatmapWidget* lpt = ui::epHeatmapPanel(ui::planView(w))->map(true);
        QTest::mouseClick(lpt, Qt::LeftButton, {}, lpt->cellRect(l, p).center());
        // Independently: tokens of every sample on rank p at layer l under LPT, the 20 largest
        // (ties: lower index first).
        std::vector<std::pair<std::uint64_t, int>> tokens;
        for (std::size_t i = 0; i < window->size(); ++i) {
            std::uint64_t t = 0;
            for (int e = 0; e < window->model.experts; ++e)
                if (plan->placement.lpt.rank_of(l, e) == p) t += window->count(i, l, e);
            tokens.emplace_back(t, static_cast<int>(i));
        }
        std::stable_sort(tokens.begin(), tokens.end(),
                         [](const auto& a, const auto& b2) { return a.first > b2.first; });
        QVERIFY(tokens[19].first > 0);
        QStringList expected;
        for (int k = 0; k < 20; ++k)
            expected << QString::fromStdString(plan->samples[static_cast<std::size_t>(tokens[k].second)].id);
        expected.sort();
        QCOMPARE(shownIds(), expected);
        const QString layerId = QString::number(plan->model.moe_layers[static_cast<std::size_t>(l)]);
        // Their tokens on (l, p) in their own column, the table sorted by it, most first.
        QVERIFY(!ui::sampleView(w)->isColumnHidden(SampleTableModel::SelectedTokens));
        QCOMPARE(ui::sampleModel(w)->headerData(SampleTableModel::SelectedTokens, Qt::Horizontal).toString(),
                 QStringLiteral("Tokens on L%1/EP1").arg(layerId));
        for (int k = 0; k < 20; ++k)
            QCOMPARE(ui::sampleProxy(w)->index(k, SampleTableModel::SelectedTokens).data(RawValueRole).toLongLong(),
                     static_cast<qint64>(tokens[static_cast<std::size_t>(k)].first));
        QCOMPARE(ui::samplePane(w)->filterText(),
                 QStringLiteral("Top 20 samples by tokens on EP rank 1 of MoE layer %1 (refined LPT placement)")
                     .arg(layerId));
        QVERIFY(ui::clearFilterButton(w)->isVisible());
        // The other views follow: both EP maps outline (l, p), the row-peak view layer l.
        for (bool planned : {false, true}) {
            QCOMPARE(ui::selectedRow(ui::epHeatmapPanel(ui::planView(w))->map(planned)), l);
            QCOMPARE(ui::selectedColumn(ui::epHeatmapPanel(ui::planView(w))->map(planned)), p);
        }
        QCOMPARE(ui::selectedColumn(ui::map(ui::rowHeatmapPanel(ui::planView(w)))), l);
        ui::planView(w)->setCurrentWidget(ui::rowHeatmapPanel(ui::planView(w)));
        QTest::qWait(50);
        shot(ui::planView(w), QStringLiteral("explain-row-peaks-selected"));
        ui::planView(w)->setCurrentWidget(ui::epHeatmapPanel(ui::planView(w)));
        QTest::qWait(50);
        // The experts of the rank, with their tokens, under the maps.
        const QString list = ui::epHeatmapPanel(ui::planView(w))->selectionText();
        const int P = plan->topology.ep_ranks;
        QVERIFY2(list.startsWith(
                     QStringLiteral("<b>Layer %1, EP rank 1</b> (refined LPT placement): G = %2 tokens on %3 experts: ")
                         .arg(layerId)
                         .arg(plan->placement.rank_loads_routepack[static_cast<std::size_t>(l) * P + p])
                         .arg(plan->model.experts / P)),
                 qPrintable(list));
        shot(&w, QStringLiteral("explain-linked-ep"));
        ui::clearFilterButton(w)->click();
        QCOMPARE(ui::sampleProxy(w)->rowCount(), 32);
        QCOMPARE(ui::samplePane(w)->filterText(), QString());
        QVERIFY(!ui::clearFilterButton(w)->isVisible());
        QVERIFY(ui::sampleView(w)->isColumnHidden(SampleTableModel::SelectedTokens));

        // The row-peak tooltip names the peak rank.
        RowHeatmapPanel* rows = ui::rowHeatmapPanel(ui::planView(w));
        const MethodResult& rp = plan->routepack;
        const auto W = row_shard_rank_loads(*window, plan->topology, plan->placement.lpt, rp.layout, 0, 0, l);
        const auto top = std::max_element(W.begin(), W.end());
        const QString rowTip = ui::map(rows)->toolTipFor(0, l);
        QVERIFY2(rowTip.contains(QStringLiteral("peak on EP rank %1 (%2 tokens;").arg(top - W.begin()).arg(*top)),
                 qPrintable(rowTip));
        QVERIFY2(rowTip.contains(QStringLiteral("max_p W = %1 tokens").arg(*top)), qPrintable(rowTip));

        CostsPanel* costs = ui::costsPanel(ui::planView(w));
        check_cost_bars(costs, *plan);
        if (QTest::currentTestFailed()) return;
        // The "why it gains" paragraph, from this plan's numbers.
        const QString gain = costs->gainText();
        QVERIFY2(gain.contains(QStringLiteral("max_g U goes from %1 (baseline) to %2 (RoutePack)")
                                   .arg(plan->baseline.metrics.score.max_u, 0, 'f', 4)
                                   .arg(plan->routepack.metrics.score.max_u, 0, 'f', 4)),
                 qPrintable(gain));
        QVERIFY2(gain.contains(QStringLiteral("%1 &rarr; %2")
                                   .arg(plan->baseline.metrics.score.max_u, 0, 'f', 4)
                                   .arg(plan->reorder.metrics.score.max_u, 0, 'f', 4)),
                 qPrintable(gain));
        ui::planView(w)->setCurrentWidget(costs);
        QTest::qWait(50);
        shot(&w, QStringLiteral("explain-costs-why"));

        // A grid cell: the table keeps exactly that cell's samples.
        ui::planView(w)->setCurrentWidget(ui::planView(w)->gridPanel());
        QTest::qWait(50);
        QTableView* grid = ui::planView(w)->gridPanel()->view();
        const QModelIndex cell = grid->model()->index(0, 1);
        QTest::mouseClick(grid->viewport(), Qt::LeftButton, {}, grid->visualRect(cell).center());
        QStringList cellIds;
        for (int i : rp.layout.cell(rp.layout.cell_index(0, 1)))
            cellIds << QString::fromStdString(plan->samples[static_cast<std::size_t>(i)].id);
        cellIds.sort();
        QVERIFY(!cellIds.isEmpty());
        QCOMPARE(shownIds(), cellIds);
        QCOMPARE(ui::samplePane(w)->filterText(),
                 QStringLiteral("Row 0, DP slot 1 of the RoutePack layout: %1 %2")
                     .arg(cellIds.size())
                     .arg(cellIds.size() == 1 ? QStringLiteral("sample") : QStringLiteral("samples")));
        shot(&w, QStringLiteral("explain-linked-grid"));
        ui::samplePane(w)->clearFilter();
        QCOMPARE(ui::sampleProxy(w)->rowCount(), 32);
        // A plan shown again (or another one): the filter goes with the plan it was made from.
        ui::samplePane(w)->filterSamples({plan->samples[0].id, plan->samples[5].id}, QStringLiteral("two"));
        QCOMPARE(shownIds(), (QStringList{QString::fromStdString(plan->samples[0].id),
                                          QString::fromStdString(plan->samples[5].id)}));
        QCOMPARE(ui::samplePane(w)->filterText(), QStringLiteral("two"));
        w.showPlan(plan, window, w.shownRunId());
        QCOMPARE(ui::sampleProxy(w)->rowCount(), 32);
        QCOMPARE(ui::samplePane(w)->filterText(), QString());
    }
};

QTEST_MAIN(TestStudioExplain)
#include "tst_studio_explain.moc"
