#pragma once
// The studio's "Run" view: a whole training run, not one step. For the selected trace's windows with
// saved runs (those `routepack sweep` stores), per step the joint cost of every method, the
// distribution of routepack's gain against the baseline, and the placement churn against the
// previous step (views/run/run_series.h). The series are gathered on a worker thread (a JobTracker,
// latest request wins); clicking a step asks the studio to show that step's run.
#include "views/run/run_series.h"

#include <QString>
#include <QWidget>

#include <memory>

class QBarCategoryAxis;
class QBarSet;
class QChartView;
class QComboBox;
class QLabel;
class QLineSeries;
class QPushButton;
class QScatterSeries;
class QStackedWidget;
class QTabWidget;

namespace routepack::views {

class JobTracker;

/// Run view. Shows the series of one topology at a time (a box picks it when several topologies have
/// runs in two or more windows); the cost chart (x = step, y = max_g U per method: the four, and on
/// several nodes grouter and routepack+comm dashed, RunSeries::methods), the gain histogram
/// (x = 100 x (routepack - baseline) / baseline, y = steps) and the churn chart (x = step, y = changed
/// slots) share the hover tooltip of a step (stepToolTip). A click on a step in the cost or churn
/// chart emits stepActivated. With no trace, a load-only trace, a read error or fewer than two
/// windows with saved runs it shows an explicit empty state (emptyText).
class RunView : public QWidget {
    Q_OBJECT
    friend struct RunViewTestAccess;

public:
    explicit RunView(QWidget* parent = nullptr);
    /// Stops the worker (its result is dropped).
    ~RunView() override;

    /// Shows the saved runs of `trace` in library file `library` ("" for either: the empty state).
    /// The series are read on a worker thread with its own read-only connection; `updated` follows.
    /// Nothing is read again when library, trace and `revision` (e.g. the trace's run ids) are what
    /// is already shown or on its way.
    void setSource(const QString& library, const QString& trace, const QString& revision = {});
    /// Shows imported cluster run `clusterRun` of library file `library` (compute_cluster_run_series:
    /// one series per chain, read from the plan files in its OUT folder) the way saved runs are shown.
    /// Nothing is read again when library, run and `revision` are what is shown or on its way.
    void setClusterSource(const QString& library, qint64 clusterRun, const QString& revision = {});
    /// The cluster run shown (0 when the saved runs of a trace are shown).
    qint64 clusterRun() const { return clusterRun_; }
    /// Reads the shown source again (after runs were saved elsewhere).
    void reload();
    /// True while a read is on its way.
    bool isLoading() const;

    /// What was read (nullptr before the first result).
    const RunSeriesSet* seriesSet() const { return data_.get(); }
    /// The series shown (nullptr in the empty state).
    const RunSeries* currentSeries() const;
    /// Index into seriesSet()->series of the series shown (-1 in the empty state).
    int seriesIndex() const;
    void setSeriesIndex(int index);
    /// True when the empty state is shown; its text.
    bool isEmptyState() const;
    QString emptyText() const;
    /// The heading above the charts (trace, topology, steps, gain summary, churn total).
    QString headingText() const;

    /// Tooltip of step k of the shown series: window, run, samples, R*, the exact joint cost of every
    /// method of the series ("Grouter: max_g U = 16.4090 (-3.12 % vs baseline), 115,566 inter-node
    /// copies" for the communication-aware methods; "did not run" where the step lacks one; inter-node
    /// copies on every method of a multi-node run with routes), the gain against baseline and reorder,
    /// the churn against the previous step (and its busiest MoE layer) and the planner time. Empty
    /// for an invalid k.
    QString stepToolTip(int k) const;
    /// Tooltip of gain bin k (range and its steps with their exact gains).
    QString gainBinToolTip(int k) const;
    /// The step under view-local position `pos` of the cost or churn chart view (-1 when none).
    int stepAt(QChartView* view, const QPoint& pos) const;
    /// Emits stepActivated for step k of the shown series (what a click does); false for an invalid k.
    bool activateStep(int k);

    /// The shown series' steps as `routepack sweep`'s sweep.csv text (sweep_csv of RunSeries::table,
    /// CRLF-ended lines); "" in the empty state.
    std::string tableCsv() const;
    /// The charts' ids for exportChart: "run-costs", "run-gains", "run-churn", "run-apply" (compute and
    /// materialization per step), "run-frontier" (the selected step's frontier).
    static QStringList chartNames();
    /// Chart `name` (chartNames) as ".png" or ".svg" by the file's suffix (exportWidgetImage). False
    /// with `error` set on an unknown name, the empty state, "run-apply" of a series without migration
    /// costs ("the run shown carries no migration cost model"), "run-frontier" before a frontier is
    /// shown ("no frontier is shown: pick a step and Compute") or a write failure.
    bool exportChart(const QString& name, const QString& file, QString* error = nullptr) const;

    /// The step the frontier is for (the box above the chart; a click on a step of the cost, churn or
    /// apply chart selects it), -1 in the empty state.
    int frontierStep() const;
    void setFrontierStep(int k);
    /// Plans the frontier of step k of the shown series on a worker thread (compute_step_frontier on
    /// the planner's default workers; the latest request wins); frontierUpdated follows. False for an
    /// invalid k.
    bool computeFrontier(int k);
    /// The frontier shown (nullptr before one arrived or after the series changed).
    const StepFrontier* frontier() const { return frontier_.get(); }
    /// The note under the frontier box: what to do, the job's state or why there is no frontier.
    QString frontierNote() const;
    /// Tooltip of frontier point i: the budget (fraction, experts), the experts moved and max_g U
    /// against the full re-placement (the 100 % budget) and keeping the placement (0 %).
    QString frontierPointToolTip(int i) const;
    /// The cost line of method m (nullptr in the empty state and for a method no step of the series
    /// has). Its points are the steps that have it.
    QLineSeries* costSeries(routepack::Method m) const;

Q_SIGNALS:
    /// A new result is shown (or the empty state).
    void updated();
    /// The user clicked step `window` of the shown series: its saved run `runId`.
    void stepActivated(qint64 runId, const QString& trace, const QString& window);
    /// The user clicked step `window` of a cluster run's chain: its plan file in OUT and the step's
    /// file or folder (the counts the plan's views need).
    void clusterStepActivated(const QString& planFile, const QString& stepPath, const QString& window);
    /// A frontier arrived (or failed; frontier()->error says why).
    void frontierUpdated();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void changeEvent(QEvent* e) override;

private:
    void start();
    void showResult(std::shared_ptr<const RunSeriesSet> set);
    void rebuild();
    /// An x axis of the steps of `s`: window names (`names`, while they fit) or step numbers.
    QBarCategoryAxis* stepAxis(const RunSeries& s, const QString& title, bool names) const;
    /// The cost chart: one line per method of `s`.
    void fillCostChart(const RunSeries& s);
    /// The churn chart: experts moved and changed slots per step.
    void fillChurnChart(const RunSeries& s, const RunSeriesSummary& summary);
    /// The gain histogram (gain_histogram of `s`).
    void fillGainChart(const RunSeries& s);
    /// The apply chart: compute and materialization seconds per step, stacked.
    void fillApplyChart(const RunSeries& s);
    /// The frontier chart of frontier_ (empty axes without one).
    void fillFrontierChart();
    QWidget* buildFrontierPane();
    void showEmpty(const QString& text);

    JobTracker* tracker_ = nullptr;
    JobTracker* frontierTracker_ = nullptr;
    QString library_, trace_, revision_; ///< trace_: the trace shown (or being read)
    qint64 clusterRun_ = 0;
    bool frontierLoading_ = false;
    std::shared_ptr<const StepFrontier> frontier_;
    QComboBox* frontierBox_ = nullptr;
    QPushButton* frontierButton_ = nullptr;
    QLabel* frontierNote_ = nullptr;
    /// What applying the run costs per step, stacked: compute (seconds_per_U x max_g U) and
    /// materialization of the step's moves (migration_figures), seconds; hidden when the series has
    /// no migration costs (has_migration_costs). Its bars: computeSet_, materializationSet_ (0 for a
    /// step without them).
    QChartView* applyView_ = nullptr;
    /// The frontier chart: x = experts moved, y = routepack's max_g U, one point per move budget of
    /// kFrontierFractions (frontierLine_), and the saved plan of the step (frontierSaved_).
    QChartView* frontierView_ = nullptr;
    /// The lower charts' tabs: 0 "Gains and moves" (gain histogram, churn), 1 "Applying the run"
    /// (apply chart, frontier). computeFrontier and exportChart bring their chart's tab forward.
    QTabWidget* chartTabs_ = nullptr;
    QBarSet* computeSet_ = nullptr;
    QBarSet* materializationSet_ = nullptr;
    QLineSeries* frontierLine_ = nullptr;
    QScatterSeries* frontierSaved_ = nullptr;
    bool loading_ = false;
    std::shared_ptr<const RunSeriesSet> data_;
    int series_ = -1;
    std::vector<GainBin> bins_; ///< the gain histogram's bins (gain_histogram of the shown series)
    QStackedWidget* stack_ = nullptr;
    QLabel* empty_ = nullptr;
    QLabel* heading_ = nullptr;
    QLabel* topologyLabel_ = nullptr;
    QComboBox* topologyBox_ = nullptr;
    QChartView* costView_ = nullptr;
    QChartView* gainView_ = nullptr;
    QChartView* churnView_ = nullptr;
    routepack::PerMethod<QLineSeries*> cost_;
    /// Bars of the churn chart (one per step; the first step's is 0), of the experts moved
    /// (placement_moves) per step beside it (the first step's is 0), and of the gain histogram.
    QBarSet* churnSet_ = nullptr;
    QBarSet* movesSet_ = nullptr;
    QBarSet* gainSet_ = nullptr;
};

} // namespace routepack::views
