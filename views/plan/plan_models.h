#pragma once
// Table models of the plan views: the execution grid of one method and the run comparison table.
// Both answer RawValueRole (views/widgets/roles.h) with raw numbers and pass QAbstractItemModelTester.
#include "core/plan/planner.h"
#include "views/widgets/roles.h"

#include <QAbstractTableModel>
#include <QList>
#include <QStringList>

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace routepack::views {

/// The R x D execution grid of one method of a plan: row r = execution row, column d = DP slot.
/// Per cell: DisplayRole "tokens / C" and the sample count, RawValueRole token sum (qint64; sum of
/// t_i of the cell's samples), FillRole tokens / C, SampleCountRole, SampleIndicesRole (window
/// order indices, in the layout's cell order), ToolTipRole the sample ids and their t_i.
/// Headers: "row r" and "DP d (g)" with the EDP shard of the slot.
class ExecutionGridModel : public QAbstractTableModel {
    Q_OBJECT
    friend struct ExecutionGridModelTestAccess;

public:
    explicit ExecutionGridModel(QObject* parent = nullptr);

    /// Shows method `method` (RoutePack when the plan lacks it) of `plan`; nullptr empties the model.
    void setPlan(std::shared_ptr<const routepack::PlanResult> plan, routepack::Method method);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const routepack::PlanResult> plan_;
    routepack::Method method_ = routepack::Method::RoutePack;
    int rows_ = 0, cols_ = 0;
    qint64 cap_ = 0;                   ///< cap C of the shown plan (0 when empty)
    std::vector<std::int64_t> tokens_; // [R*D]
};

/// One row per (run, method): runs in the order given, each with its methods in report order
/// (plan_methods: baseline, reorder, karmarkar_karp, routepack, and on several nodes grouter and
/// routepack+comm). Columns (Column enum) hold LayoutMetrics of that method (core/plan/score/metrics.h): R*
/// rows, joint = max_g U (Score::max_u, eq. 15), sum_g U, max J, CV_global (eq. 22), S_EP and T_EP
/// (tokens), eta_EP (eq. 23), attention sum_{r,g} A, cap violations, and the percentage change of
/// the joint cost against the same run's reorder and karmarkar_karp: 100 * (joint - ref) / ref
/// (negative = better; no value when ref is 0). When at least one run is on more than one node, four
/// communication columns follow (CommCost, core/plan/comm/comm.h): inter-node token copies
/// (inter_total), intra-node (token, node) pairs (intra_total), the busiest node's copies summed
/// over rows and layers (busiest_total), and 100 * (inter - routepack's inter) / routepack's inter;
/// a multi-node run without per-token routes shows kCommUnavailable there, a one-node run no value.
/// On one node the table has exactly ColumnCount columns. RawValueRole: QString for Run/Method,
/// qint64 for counts and tokens, double otherwise (an invalid QVariant where there is no value).
class CompareTableModel : public QAbstractTableModel {
    Q_OBJECT
    friend struct CompareTableModelTestAccess;

public:
    enum Column {
        Run,
        Method,
        Rows,
        Joint,
        JointVsBaseline,
        MeasuredSeconds,    ///< the measured step of the method's layout (setMeasured), seconds
        MeasuredVsBaseline, ///< its change against the same run's measured baseline, percent
        SumU,
        MaxJ,
        CvGlobal,
        EpPeakSum,
        EpTailPeak,
        EpBalance,
        Attention,
        CapViolations,
        JointVsReorder,
        JointVsKarmarkarKarp,
        ColumnCount, ///< columns when every run is on one node
        InterCopies = ColumnCount,
        IntraCopies,
        BusiestCopies,
        InterVsRoutepack,
        CommColumnCount ///< columns when a run is on more than one node
    };
    explicit CompareTableModel(QObject* parent = nullptr);

    /// Replaces every run (null entries skipped; missing names become "run k").
    void setRuns(const QList<std::shared_ptr<const routepack::PlanResult>>& runs, const QStringList& runNames);
    /// Measured step seconds per run name (as given to setRuns) and method: the measured plans the
    /// library links to each saved run (the latest measured step per method). Runs and methods not
    /// in the map show no measured value.
    void setMeasured(std::map<QString, routepack::PerMethod<std::optional<double>>> measured);
    int runCount() const { return static_cast<int>(runs_.size()); }
    QString runName(int run) const { return names_.value(run); }
    const routepack::PlanResult& run(int k) const { return *runs_[static_cast<std::size_t>(k)]; }
    /// The run (index into the runs) and method of table row `row`.
    int rowRun(int row) const { return rows_.at(static_cast<std::size_t>(row)).first; }
    routepack::Method rowMethod(int row) const { return rows_.at(static_cast<std::size_t>(row)).second; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

    /// The raw value of (row, column) (what RawValueRole returns).
    QVariant rawValue(int row, int column) const;

private:
    std::vector<std::shared_ptr<const routepack::PlanResult>> runs_;
    QStringList names_;
    std::vector<std::pair<int, routepack::Method>> rows_; // (run, method) per table row
    bool comm_ = false; ///< whether the communication columns are shown (a run is on several nodes)
    std::map<QString, routepack::PerMethod<std::optional<double>>> measured_; ///< setMeasured
};

} // namespace routepack::views
