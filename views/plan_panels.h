#pragma once
// The five tab pages of PlanView (views/plan_views.h). Each panel only paints values prepared at
// setPlan time (views/plan_data.h); accessors expose what they show, for tests and exports.
#include "core/plan/annealing.h"
#include "core/plan/planner.h"
#include "views/plan_data.h"

#include <QWidget>

#include <memory>
#include <vector>

class QChart;
class QChartView;
class QBarSet;
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

/// "ep-heatmap": per MoE layer x EP rank G[l][p] / mean_p G[l][p] (eq. 10), identity placement
/// left and LPT placement right, one shared diverging colour scale centred on 1 (the layer mean),
/// per-layer CV in a side column of each map, exact G in the tooltip.
class EpHeatmapPanel : public QWidget {
    Q_OBJECT
public:
    explicit EpHeatmapPanel(QWidget* parent = nullptr);
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan);
    /// The identity (planned = false) or LPT (planned = true) map; rows = MoE layers, cols = ranks.
    HeatmapWidget* map(bool planned) const { return planned ? lpt_ : identity_; }
    /// Per-layer CV shown beside a map ([L]).
    const std::vector<double>& layerCv(bool planned) const { return planned ? cvLpt_ : cvIdentity_; }

private:
    std::shared_ptr<const routepack::PlanResult> plan_;
    QLabel* summary_ = nullptr;
    HeatmapWidget* identity_ = nullptr;
    HeatmapWidget* lpt_ = nullptr;
    std::vector<double> cvIdentity_, cvLpt_;
};

/// "row-heatmap": rows x MoE layers of max_p W[r][g][l][p] (tokens, eq. 13) for one EDP shard g of
/// one method (default routepack); a fixed colour scale 0..max over all shards of that method;
/// side column E[r][g] (eq. 14).
class RowHeatmapPanel : public QWidget {
    Q_OBJECT
public:
    explicit RowHeatmapPanel(QWidget* parent = nullptr);
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan, std::shared_ptr<const PlanCosts> costs);
    void setShard(int g);
    void setMethod(int method);
    int shard() const;
    int method() const;
    QComboBox* shardCombo() const { return shardBox_; }
    HeatmapWidget* map() const { return map_; }

private:
    void refresh();
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const PlanCosts> costs_;
    QComboBox* methodBox_ = nullptr;
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
/// rows outer, shards inner), and a second chart of U[g]; the straggler shard argmax_g U[g] is
/// highlighted (selected bars in both charts, and named in the heading). In the U[g] chart the
/// shards tied with the straggler (tiedShards, kShardTieTolerance) are selected and red like it,
/// the others green; when every shard is tied, all are one neutral grey and the heading says they
/// are balanced (a 0.01-token difference is no straggler).
class CostsPanel : public QWidget {
    Q_OBJECT
public:
    explicit CostsPanel(QWidget* parent = nullptr);
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan, std::shared_ptr<const PlanCosts> costs);
    void setMethod(int method);
    int method() const;
    /// Straggler shard of the shown method (-1 when nothing is shown).
    int stragglerShard() const { return straggler_; }
    QBarSet* attentionSet() const { return attention_; }
    QBarSet* expertSet() const { return expert_; }
    QBarSet* shardTotalSet() const { return total_; }
    QStringList categories() const { return categories_; }
    QChartView* rowChartView() const { return rowView_; }
    QChartView* shardChartView() const { return shardView_; }
    /// The straggler heading: U, sum U, max J, and (LPT methods) the plan's lower bound and gap.
    QString headingText() const;

protected:
    void changeEvent(QEvent* e) override;

private:
    void refresh();
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const PlanCosts> costs_;
    QComboBox* methodBox_ = nullptr;
    QLabel* heading_ = nullptr;
    QChartView* rowView_ = nullptr;
    QChartView* shardView_ = nullptr;
    QBarSet* attention_ = nullptr;
    QBarSet* expert_ = nullptr;
    QBarSet* total_ = nullptr;
    QStringList categories_;
    int straggler_ = -1;
};

/// "grid": the R x D execution grid of one method (default routepack) in a QTableView over an
/// ExecutionGridModel; each cell shows its token fill against C as a bar (red above C), the token
/// sum and the sample count. Clicking a cell emits cellActivated.
class GridPanel : public QWidget {
    Q_OBJECT
public:
    explicit GridPanel(QWidget* parent = nullptr);
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan);
    void setMethod(int method);
    int method() const;
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
