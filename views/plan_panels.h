#pragma once
// The five tab pages of PlanView (views/plan_views.h). Each panel only paints values prepared at
// setPlan time (views/plan_data.h); accessors expose what they show, for tests and exports.
#include "core/plan/annealing.h"
#include "core/plan/planner.h"
#include "views/plan_data.h"
#include "views/plan_explain.h"

#include <QList>
#include <QWidget>

#include <memory>
#include <vector>

class QChart;
class QChartView;
class QBarSet;
class QCheckBox;
class QScatterSeries;
class QSplitter;
class QLineSeries;
class QValueAxis;
class QComboBox;
class QLabel;
class QTableView;
class QPalette;

namespace routepack::views {

class HeatmapWidget;
class ExecutionGridModel;

/// Styles a chart from a widget palette: background (Base), text (title, legend, axis labels and
/// titles: Text), grid and axis lines (Mid). Series colours are left alone (they are chosen to
/// read on light and dark backgrounds). Call again on QEvent::PaletteChange.
void styleChart(QChart* chart, const QPalette& palette);

/// How many samples a click on an EP-rank cell keeps in the sample table: the ones that route the
/// most tokens to that (layer, rank) (top_samples_on_rank).
inline constexpr int kTopRankSamples = 20;

/// "ep-heatmap": per MoE layer x EP rank G[l][p] / mean_p G[l][p] (eq. 10), identity placement
/// left and LPT placement right, one shared diverging colour scale centred on 1 (the layer mean;
/// linear, log or per layer: scaleCombo), per-layer CV in a side column of each map. The tooltip
/// gives the exact G, the logical experts on the rank with their tokens, and for a layer bounded by
/// one expert (expert_bounded_layers; marked on the layer axis of both maps, the four with the largest
/// share on one expert named in the heading) "bounded by expert E (X of Y tokens): no placement can
/// lower this layer's peak below X". A click on a cell selects it
/// (selectCell).
class EpHeatmapPanel : public QWidget {
    Q_OBJECT
public:
    explicit EpHeatmapPanel(QWidget* parent = nullptr);
    /// `expertLoads` = L[l][e] of the plan's window ([L][E], aggregate_expert_loads): without it the
    /// tooltips name no experts and no layer is marked. `window` (the planned window, or null) gives
    /// the samples a selected rank lists.
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan,
                 std::shared_ptr<const std::vector<std::uint64_t>> expertLoads = nullptr,
                 std::shared_ptr<const routepack::Trace> window = nullptr);
    /// The identity (planned = false) or LPT (planned = true) map; rows = MoE layers, cols = ranks.
    HeatmapWidget* map(bool planned) const { return planned ? lpt_ : identity_; }
    /// Per-layer CV shown beside a map ([L]).
    const std::vector<double>& layerCv(bool planned) const { return planned ? cvLpt_ : cvIdentity_; }
    /// The layers one expert bounds (marked on both maps; empty without expert loads).
    const std::vector<ExpertBound>& boundedLayers() const { return bounded_; }
    /// Colour scale of both maps (the combo box's choice).
    void setColourScale(ColourScale scale);
    QComboBox* scaleCombo() const { return scaleBox_; }
    /// Selects cell (MoE layer index `layer`, EP rank `rank`) on both maps, as a click on the identity
    /// (planned = false) or LPT map does: lists the rank's experts with their tokens under the maps
    /// and emits rankActivated with the kTopRankSamples samples that load it most. Out of range:
    /// clears the selection.
    void selectCell(int layer, int rank, bool planned);
    /// The list under the maps: the selected rank's experts and tokens ("" when nothing is selected).
    QString selectionText() const;

Q_SIGNALS:
    /// A cell was selected: `samples` are top_samples_on_rank (window order indices, most tokens
    /// first; empty without the window), `description` says what they are for the sample table's
    /// filter line ("Top 20 samples by tokens on EP rank 3 of MoE layer 45 (LPT placement)").
    void rankActivated(int layer, int rank, bool planned, QList<int> samples, QString description);

private:
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const std::vector<std::uint64_t>> loads_;
    std::shared_ptr<const routepack::Trace> window_;
    QLabel* summary_ = nullptr;
    QComboBox* scaleBox_ = nullptr;
    QLabel* selection_ = nullptr;
    HeatmapWidget* identity_ = nullptr;
    HeatmapWidget* lpt_ = nullptr;
    std::vector<double> cvIdentity_, cvLpt_;
    std::vector<ExpertBound> bounded_;
};

/// The text of an EP-heatmap tooltip for MoE layer index `l` and rank `p` of rank loads `G` ([L][P])
/// under placement `pi`: layer (absolute id) and rank, G[l][p] in tokens and against the layer mean,
/// and with expert loads (`loads` [L][E], may be empty) the experts on the rank with their tokens and,
/// for a bounded layer, "bounded by expert E (X of Y tokens): no placement can lower this layer's peak
/// below X".
QString epCellToolTip(const routepack::PlanResult& plan, const std::vector<std::uint64_t>& G, const Placement& pi,
                      std::span<const std::uint64_t> loads, int l, int p);

/// "row-heatmap": rows x MoE layers of max_p W[r][g][l][p] (tokens, eq. 13) for one EDP shard g of
/// one method (default routepack); a fixed colour scale 0..max over all shards of that method;
/// side column E[r][g] (eq. 14).
class RowHeatmapPanel : public QWidget {
    Q_OBJECT
public:
    explicit RowHeatmapPanel(QWidget* parent = nullptr);
    /// `window`: the planned window (or null); with it the tooltip names the peak rank of the cell.
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan, std::shared_ptr<const PlanCosts> costs,
                 std::shared_ptr<const routepack::Trace> window = nullptr);
    void setShard(int g);
    /// Outlines MoE layer index `l`'s column (-1: none), kept across method and shard changes.
    void setSelectedLayer(int l);
    void setMethod(routepack::Method method);
    int shard() const;
    routepack::Method method() const;
    QComboBox* shardCombo() const { return shardBox_; }
    HeatmapWidget* map() const { return map_; }

private:
    void refresh();
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const PlanCosts> costs_;
    std::shared_ptr<const routepack::Trace> window_;
    int selectedLayer_ = -1;
    QComboBox* methodBox_ = nullptr;
    QComboBox* scaleBox_ = nullptr;
    QComboBox* shardBox_ = nullptr;
    QLabel* note_ = nullptr;
    HeatmapWidget* map_ = nullptr;
};

/// Shard totals tied with the largest: the shards g with max U - U[g] <= tolerance x max U, ascending
/// (every shard when max U <= 0). E.g. U = {178.6674, 178.66} with tolerance 0.001 ties both.
std::vector<int> tiedShards(const std::vector<double>& U, double tolerance);
/// Relative tolerance under which the costs view treats shard totals as equal: 0.1% of max_g U.
inline constexpr double kShardTieTolerance = 0.001;

/// "costs": stacked bars of A[r][g] (eq. 12) and E[r][g] (eq. 14) per (r, g) (category "r<r> g<g>",
/// rows outer, shards inner), and a second chart of U[g], each on one y-axis for all the plan's
/// methods (the four, and grouter and routepack+comm on several nodes; the method box lists those
/// the plan has) (0 .. the largest J, resp. U, of any method, rounded); the straggler shard
/// argmax_g U[g] is highlighted (selected bars in both charts, and named in the heading). In the U[g] chart the
/// shards tied with the straggler (tiedShards, kShardTieTolerance) are selected and red like it,
/// the others green; when every shard is tied, all are one neutral grey and the heading says they
/// are balanced (a 0.01-token difference is no straggler).
/// The tallest row-shard bar (max_{r,g} J, the score's third term; tallestRowShard) carries a marker
/// with its J as label, is named in the legend and the heading, and its tooltip says it is the tallest.
/// Side by side (setSideBySide, the "Baseline side by side" box): the baseline's row-shard chart left of
/// the shown method's, on the same y-axis, and the U[g] chart holds both methods' totals.
class CostsPanel : public QWidget {
    Q_OBJECT
public:
    explicit CostsPanel(QWidget* parent = nullptr);
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan, std::shared_ptr<const PlanCosts> costs);
    void setMethod(routepack::Method method);
    routepack::Method method() const;
    /// Shows the baseline's row-shard chart beside the shown method's (true), or the method alone.
    void setSideBySide(bool on);
    bool sideBySide() const;
    QCheckBox* sideBySideBox() const { return sideBox_; }
    /// Straggler shard of the shown method (-1 when nothing is shown).
    int stragglerShard() const { return straggler_; }
    /// Bar index (r * G + g) of the shown method's tallest row-shard (-1 when nothing is shown).
    int tallestBar() const { return tallest_; }
    QBarSet* attentionSet() const { return attention_; }
    QBarSet* expertSet() const { return expert_; }
    QBarSet* shardTotalSet() const { return total_; }
    /// The marker on the shown method's tallest bar (one point: x = bar index, y = its J); null when
    /// nothing is shown. Its name (the legend) is "tallest: r<r> g<g>, J = <J, 4 decimals>".
    QScatterSeries* tallestMarker() const { return tallestMarker_; }
    /// Side by side only (else null): the baseline's bar sets, its marker and its U[g] set.
    QBarSet* baselineAttentionSet() const { return baseAttention_; }
    QBarSet* baselineExpertSet() const { return baseExpert_; }
    QScatterSeries* baselineTallestMarker() const { return baseTallestMarker_; }
    QBarSet* baselineShardTotalSet() const { return baseTotal_; }
    QStringList categories() const { return categories_; }
    QChartView* rowChartView() const { return rowView_; }
    /// The baseline's row-shard chart (hidden unless side by side).
    QChartView* baselineChartView() const { return baseView_; }
    QChartView* shardChartView() const { return shardView_; }
    /// The straggler heading: U, sum U, max J and its row-shard, and (LPT methods) the plan's lower
    /// bound and gap.
    QString headingText() const;
    /// Tooltip of bar `index` (= r * G + g) of the shown method's row-shard chart: A, E and J of (r, g)
    /// exactly, and "the tallest row-shard (max J)" on the tallest bar.
    QString rowBarToolTip(int index) const;
    /// The same for method `method` ("" for a method the plan lacks).
    QString rowBarToolTip(int index, routepack::Method method) const;
    /// Tooltip of shard g's bar of the U[g] chart: U[g] exactly and its distance to the straggler.
    QString shardBarToolTip(int g) const;
    /// The same for method `method`.
    QString shardBarToolTip(int g, routepack::Method method) const;
    /// The "why it gains" paragraph under the charts (gainExplanationText; "" without costs).
    QString gainText() const;

protected:
    void changeEvent(QEvent* e) override;

private:
    /// What one row-shard chart holds.
    struct RowChart {
        QBarSet* attention = nullptr;
        QBarSet* expert = nullptr;
        QScatterSeries* tallest = nullptr;
    };
    RowChart fillRowChart(QChart* chart, routepack::Method method, double maxJ);
    void refresh();
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const PlanCosts> costs_;
    QComboBox* methodBox_ = nullptr;
    QCheckBox* sideBox_ = nullptr;
    QLabel* heading_ = nullptr;
    QLabel* gain_ = nullptr;
    QSplitter* split_ = nullptr;
    QChartView* baseView_ = nullptr;
    QChartView* rowView_ = nullptr;
    QChartView* shardView_ = nullptr;
    QBarSet* attention_ = nullptr;
    QBarSet* expert_ = nullptr;
    QBarSet* total_ = nullptr;
    QScatterSeries* tallestMarker_ = nullptr;
    QBarSet* baseAttention_ = nullptr;
    QBarSet* baseExpert_ = nullptr;
    QBarSet* baseTotal_ = nullptr;
    QScatterSeries* baseTallestMarker_ = nullptr;
    QStringList categories_;
    int straggler_ = -1;
    int tallest_ = -1;
};

/// The tallest row-shard of a cost breakdown: the bar index r * G + g of max_{r,g} J[r][g] (the
/// score's third term, eq. 15), the lowest index on ties; -1 when `costs` has no row-shards.
int tallestRowShard(const CostBreakdown& costs);

/// The costs view's plain-language "why it gains" paragraph from explain_gain: the placement gain
/// (baseline -> reorder: experts placed by load instead of in id order), the packing gain (reorder ->
/// routepack: samples packed by their routing instead of by length alone) and the whole, each with
/// both joint costs (4 decimals) and the change in percent (2 decimals); then the EDP shard and the
/// MoE layer (absolute id; summed row peaks sum_{r,g} max_p W) each step moved most.
QString gainExplanationText(const GainExplanation& g, const routepack::PlanResult& plan);

/// "grid": the R x D execution grid of one method (default routepack) in a QTableView over an
/// ExecutionGridModel; each cell shows its token fill against C as a bar (red above C), the token
/// sum and the sample count. Clicking a cell emits cellActivated.
class GridPanel : public QWidget {
    Q_OBJECT
public:
    explicit GridPanel(QWidget* parent = nullptr);
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan);
    void setMethod(routepack::Method method);
    routepack::Method method() const;
    ExecutionGridModel* model() const { return model_; }
    QTableView* view() const { return view_; }

Q_SIGNALS:
    void cellActivated(int row, int slot, QList<int> sampleIndices);

private:
    void refresh();
    std::shared_ptr<const routepack::PlanResult> plan_;
    QComboBox* methodBox_ = nullptr;
    QLabel* summary_ = nullptr;
    QTableView* view_ = nullptr;
    ExecutionGridModel* model_ = nullptr;
};

/// "convergence": per temperature level the incumbent's joint cost (LevelStats::best.max_u) and the
/// mean energy of the chains' terminal states (left axis), and the acceptance rate (right axis,
/// 0..1). x = level index.
class ConvergencePanel : public QWidget {
    Q_OBJECT
public:
    explicit ConvergencePanel(QWidget* parent = nullptr);
    void clear();
    void addLevel(const routepack::LevelStats& s);
    void setLevels(const std::vector<routepack::LevelStats>& levels);
    QLineSeries* bestSeries() const { return best_; }
    QLineSeries* energySeries() const { return energy_; }
    QLineSeries* acceptanceSeries() const { return acceptance_; }
    QChartView* chartView() const { return view_; }

protected:
    void changeEvent(QEvent* e) override;

private:
    void rescale();
    QChartView* view_ = nullptr;
    QLineSeries* best_ = nullptr;
    QLineSeries* energy_ = nullptr;
    QLineSeries* acceptance_ = nullptr;
    QValueAxis* x_ = nullptr;
    QValueAxis* y_ = nullptr;
    QValueAxis* yRate_ = nullptr;
    QLabel* summary_ = nullptr;
};

} // namespace routepack::views
