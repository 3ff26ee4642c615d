#pragma once
// The studio's "Run" view: a whole training run, not one step. For the selected trace's windows with
// saved runs (those `routepack sweep` stores), per step the joint cost of every method, the
// distribution of routepack's gain against the baseline, and the placement churn against the
// previous step (views/run_series.h). The series are gathered on a worker thread (a JobTracker,
// latest request wins); clicking a step asks the studio to show that step's run.
#include "views/run_series.h"

#include <QString>
#include <QWidget>

#include <memory>

class QBarCategoryAxis;
class QBarSet;
class QChartView;
class QComboBox;
class QLabel;
class QLineSeries;
class QStackedWidget;

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
public:
    explicit RunView(QWidget* parent = nullptr);
    /// Stops the worker (its result is dropped).
    ~RunView() override;

    /// Shows the saved runs of `trace` in library file `library` ("" for either: the empty state).
    /// The series are read on a worker thread with its own read-only connection; `updated` follows.
    /// Nothing is read again when library, trace and `revision` (e.g. the trace's run ids) are what
    /// is already shown or on its way.
    void setSource(const QString& library, const QString& trace, const QString& revision = {});
    /// Reads the shown source again (after runs were saved elsewhere).
    void reload();
    /// The trace shown (or being read).
    QString trace() const { return trace_; }
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
    /// The charts' ids for exportChart: "run-costs", "run-gains", "run-churn".
    static QStringList chartNames();
    /// Chart `name` (chartNames) as ".png" or ".svg" by the file's suffix (exportWidgetImage). False
    /// with `error` set on an unknown name, the empty state or a write failure.
    bool exportChart(const QString& name, const QString& file, QString* error = nullptr) const;

    QChartView* costChartView() const { return costView_; }
    QChartView* gainChartView() const { return gainView_; }
    QChartView* churnChartView() const { return churnView_; }
    /// The cost line of method m (nullptr in the empty state and for a method no step of the series
    /// has). Its points are the steps that have it.
    QLineSeries* costSeries(routepack::Method m) const;
    /// Bars of the churn chart (one per step; the first step's is 0) and of the gain histogram.
    QBarSet* churnSet() const { return churnSet_; }
    /// Bars of the experts moved (placement_moves) per step, beside the churn (the first step's is 0).
    QBarSet* movesSet() const { return movesSet_; }
    QBarSet* gainSet() const { return gainSet_; }
    /// The gain histogram's bins (gain_histogram of the shown series).
    const std::vector<GainBin>& gainBins() const { return bins_; }

Q_SIGNALS:
    /// A new result is shown (or the empty state).
    void updated();
    /// The user clicked step `window` of the shown series: its saved run `runId`.
    void stepActivated(qint64 runId, const QString& trace, const QString& window);

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
    void showEmpty(const QString& text);

    JobTracker* tracker_ = nullptr;
    QString library_, trace_, revision_;
    bool loading_ = false;
    std::shared_ptr<const RunSeriesSet> data_;
    int series_ = -1;
    std::vector<GainBin> bins_;
    QStackedWidget* stack_ = nullptr;
    QLabel* empty_ = nullptr;
    QLabel* heading_ = nullptr;
    QLabel* topologyLabel_ = nullptr;
    QComboBox* topologyBox_ = nullptr;
    QChartView* costView_ = nullptr;
    QChartView* gainView_ = nullptr;
    QChartView* churnView_ = nullptr;
    routepack::PerMethod<QLineSeries*> cost_;
    QBarSet* churnSet_ = nullptr;
    QBarSet* movesSet_ = nullptr;
    QBarSet* gainSet_ = nullptr;
};

} // namespace routepack::views
