#pragma once
// Plan-inspection and run-comparison views of the studio.
// Every view paints precomputed values of one immutable routepack::PlanResult; nothing here runs the
// planner. Only Qt and core value types cross this header (no TBB).
#include "core/model/trace.h"
#include "core/plan/planner.h"
#include "core/plan/search/annealing.h"
#include "views/plan/compare_data.h"
#include "views/plan/measured_data.h"
#include "views/widgets/roles.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <QTabWidget>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QAbstractItemModel;
class QMenu;
class QTableView;
class QPushButton;

namespace routepack::views {

class HeatmapWidget;
class ExecutionGridModel;
class CompareTableModel;
class CostsPanel;
class ConvergencePanel;
class EpHeatmapPanel;
class RowHeatmapPanel;
class GridPanel;
class CommPanel;
class MeasuredPanel;

/// A tab widget with every plan-inspection view; all data from one immutable PlanResult.
///
/// Tabs, in order, with the stable ids of viewNames():
/// - "ep-heatmap": per MoE layer (rows, absolute layer ids from model.moe_layers) x EP rank (columns)
///   G[l][p] / mean_p G[l][p] (eq. 10), identity and LPT placement side by side, CV of each layer's
///   G[l][.] (population std / mean, the per-layer term of eq. 22) beside each map.
/// - "row-heatmap": rows x MoE layers, max_p W[r][g][l][p] (tokens, eq. 13) of a selectable method's
///   layout (default routepack) for one EDP shard g at a time (shard combo box).
/// - "costs": stacked bars A[r][g] (eq. 12) + E[r][g] (eq. 14) per (r, g), and U[g] with the
///   straggler shard argmax_g U[g] highlighted, for a selectable method.
/// - "grid": the R x D execution grid of a selectable method (default routepack): token fill of each
///   cell against C, sample count; clicking a cell emits cellActivated().
/// - "convergence": best score max_g U (Score::max_u) and mean energy per temperature level, and
///   the acceptance rate on a second axis (LevelStats), updated live by addConvergenceLevel().
/// - "communication": the node-by-node dispatch matrix of a selectable method per MoE layer (and
///   summed) and the expert co-activation of a MoE layer ordered by the method's nodes (CommPanel,
///   views/plan/comm_panel.h); an empty-state text on one node or without per-token routes.
/// - "measured": the measured mode (MeasuredPanel, views/plan/measured_panel.h): a measured plan
///   of the shown run (setMeasured) drawn from measured seconds per MoE layer x EP rank and per
///   row-shard, the modelled values in the tooltips; a note on how to import one without.
///
/// The costs and row-heatmap views need the per-sample routing counts, which PlanResult does not
/// carry: pass the planned window (the PlanInput::window the plan came from) to the two-argument
/// setPlan(). With the one-argument form those two views show a note instead of data.
/// cost_breakdown() runs at setPlan time for every method of the plan (each at its own placement),
/// bounded: O(n*L*P + R*G*L*P) each; when n*L*E exceeds 2^26 counts it is skipped and the two views
/// say so.
class PlanView : public QTabWidget {
    Q_OBJECT
public:
    explicit PlanView(QWidget* parent = nullptr);
    ~PlanView() override;

    /// Fills every view that needs only the plan; nullptr clears all views.
    void setPlan(std::shared_ptr<const routepack::PlanResult> plan);
    /// Fills every view; `window` must be the window the plan was computed on (same sample order,
    /// counts [n][L][E]); a window that does not match (sample count, lengths, L, E) is ignored as
    /// if null.
    void setPlan(std::shared_ptr<const routepack::PlanResult> plan, std::shared_ptr<const routepack::Trace> window);
    std::shared_ptr<const routepack::PlanResult> plan() const;
    /// Shows a plan read from its file without its window's counts (a cluster run's step,
    /// plan_of_file of core/plan/plan_file.h): the execution grid shows its layouts (routepack's and
    /// the communication methods'; the baselines have none); the EP-rank, row-peak, costs and
    /// communication views show `countsNote` in place of their data, the convergence chart says the
    /// file holds no annealing levels. The next setPlan or setPlacement drops the note.
    void setPlanWithoutCounts(std::shared_ptr<const routepack::PlanResult> plan, const QString& countsNote);
    /// The note of setPlanWithoutCounts while such a plan is shown; empty otherwise.
    QString countsNote() const { return countsNote_; }
    /// Shows only the placement views of a load-only (aggregate) trace: `placement` carries model,
    /// topology, identity/LPT placements, rank loads [L][P] and CV (no rows, layouts or costs).
    /// plan() becomes nullptr; the other views show their empty state; the EP-rank tab is shown.
    /// `expertLoads` (the trace's L[l][e], [L][E], or null) names the experts in the tooltips and marks
    /// the layers one expert bounds.
    void setPlacement(const std::shared_ptr<const routepack::PlanResult>& placement,
                      std::shared_ptr<const std::vector<std::uint64_t>> expertLoads = nullptr);
    /// The window passed to setPlan (nullptr when none or when it did not match the plan).
    std::shared_ptr<const routepack::Trace> window() const;

    /// The measured plans of the shown plan's saved run (run_measured_choices of
    /// views/plan/measured_data.h; the studio loads them off the GUI thread). setPlan clears them.
    void setMeasured(std::vector<MeasuredChoice> choices);
    /// The "measured" tab.
    MeasuredPanel* measuredPanel() const { return measured_; }

    /// Empties the convergence chart (before a new run). setPlan() replaces it with plan->search.convergence.
    void clearConvergence();
    /// Appends one temperature level to the convergence chart (live, during a run; GUI thread).
    void addConvergenceLevel(const routepack::LevelStats& level);

    /// Zooms every heatmap of the shown tab (each a HeatmapView; the EP-rank maps move together):
    /// `steps` > 0 zooms in and < 0 out by that many levels (1.25x each, clamped to 0..
    /// HeatmapView::kMaxZoomLevel), 0 resets them to fit. Returns how many maps the tab has (0: a tab
    /// without heatmaps, nothing changed).
    int zoomHeatmaps(int steps);

    /// Follows a link of the costs tab's "why it gains" text (parseExplainLink): a shard or MoE layer
    /// opens the row-peak view of that shard (the layer outlined), a row selects it in the execution grid,
    /// an EP rank selects that (layer, rank) cell of the EP-rank view, which lists its samples
    /// (rankActivated). Returns false (nothing changed) for an unknown or out-of-range link.
    bool openExplainLink(const QString& link);

    /// Stable ids: "ep-heatmap", "row-heatmap", "costs", "grid", "convergence", "communication",
    /// "measured" (tab order).
    QStringList viewNames() const;
    /// The tab page of a view id; nullptr for an unknown id.
    QWidget* viewWidget(const QString& name) const;
    /// Renders a view to `file`: ".png" (QWidget::grab at the screen's device pixel ratio) or ".svg"
    /// (QSvgGenerator). False with `error` set on an unknown id, suffix or write failure.
    bool exportView(const QString& name, const QString& file, QString* error = nullptr) const;

    /// The execution grid (the studio's table actions and status bar). The other panels are the tab
    /// pages named by their view ids (viewWidget).
    GridPanel* gridPanel() const { return grid_; }

Q_SIGNALS:
    /// A cell (row r, DP slot d) of the execution grid was clicked; `sampleIndices` are the cell's
    /// samples as indices into plan->samples (window order), in the layout's cell order.
    void cellActivated(int row, int slot, QList<int> sampleIndices);
    /// An EP-rank cell (MoE layer index `layer`, rank) was clicked (EpHeatmapPanel::rankActivated):
    /// the row-peak view outlines that layer; `samples` load it most (indices into plan->samples), with
    /// their `tokens` there.
    void rankActivated(int layer, int rank, bool planned, QList<int> samples, QString description,
                       QList<qint64> tokens);

private:
    void refill();

    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const routepack::Trace> window_;
    QString countsNote_; ///< setPlanWithoutCounts
    EpHeatmapPanel* ep_ = nullptr;
    RowHeatmapPanel* rowHeat_ = nullptr;
    CostsPanel* costs_ = nullptr;
    GridPanel* grid_ = nullptr;
    ConvergencePanel* conv_ = nullptr;
    CommPanel* comm_ = nullptr;
    MeasuredPanel* measured_ = nullptr;
};

/// Compare table (+ overlaid bar chart) of methods of one or more PlanResults.
///
/// One row per (run, method) in the order runs x (baseline, reorder, karmarkar_karp, routepack, and
/// on several nodes grouter, routepack+comm); columns are CompareTableModel::Column (with the
/// communication columns when a run is on several nodes); the run column stays in place while the
/// others scroll (FrozenColumnTable) and carries each run's bar colour, so the table is the chart's
/// full legend. The chart groups bars by method with one bar set per run (joint = max_g U[g] of each
/// method; 6 categories when any run has 6 methods); its own legend, at the right, names each bar set
/// by its label's first part (before " · ", e.g. "run 11"), never elided. The "Runs" button lists the
/// saved runs of the window (setChoices), each checkable.
class CompareView : public QWidget {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);
    ~CompareView() override;

    /// The saved runs the "Runs" button offers (checkable; a disabled entry for a failed run). Empty
    /// disables the button.
    void setChoices(const QList<CompareChoice>& choices);
    /// The "Runs" button and its menu (one checkable action per choice, data = run id).
    QPushButton* runsButton() const;
    QMenu* runsMenu() const;
    /// The table view (a FrozenColumnTable).
    QTableView* tableView() const;

    /// Replaces every run. `runNames[k]` names runs[k] (missing names become "run k+1"); null
    /// entries are skipped.
    void setRuns(const QList<std::shared_ptr<const routepack::PlanResult>>& runs, const QStringList& runNames);
    /// The measured step seconds of the runs' methods, by run name (CompareTableModel::setMeasured): the
    /// table's "measured s" and "measured vs baseline" columns.
    void setMeasured(std::map<QString, routepack::PerMethod<std::optional<double>>> measured);
    /// The table model (a CompareTableModel); RawValueRole gives raw numbers for sorting.
    QAbstractItemModel* model() const;
    /// CSV of the table (exportModelCsv). False with `error` set on a write failure.
    bool exportTableCsv(const QString& file, QString* error = nullptr) const;
    /// The chart as ".png" or ".svg" (exportWidgetImage).
    bool exportChart(const QString& file, QString* error = nullptr) const;
    /// The chart's widget (a QChartView).
    QWidget* chartWidget() const;

Q_SIGNALS:
    /// A run of the "Runs" menu was checked (on) or unchecked.
    void runToggled(qint64 id, bool on);

protected:
    void changeEvent(QEvent* e) override;

private:
    struct Private;
    std::unique_ptr<Private> d_;
};

/// Tooltip of one comparison bar: run name, method, exact max_g U (eq. 15) and the change against
/// the same run's baseline and reorder in percent ("<b>step 7</b>: routepack<br>max_g U = 150.0000<br>
/// -50.00 % vs baseline, -25.00 % vs reorder"); a method the run lacks gives "<b>step 7</b>: Grouter
/// did not run (one node, or no per-token routes)".
QString compareBarToolTip(const routepack::PlanResult& run, routepack::Method method, const QString& runName);

} // namespace routepack::views
