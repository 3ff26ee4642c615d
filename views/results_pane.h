#pragma once
// The studio's result tabs: the plan views (PlanView), the comparison of the runs of the shown plan's
// window (CompareView) and the Run view (RunView). It keeps what is shown (a saved run, an unsaved
// plan, or a cluster run's step without its counts) and which runs the comparison holds; the plans
// come from the planning controller's run replay, the runs from the library tree's snapshot.
#include "views/planning_controller.h"

#include <QList>
#include <QString>
#include <QTabWidget>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

class QMenu;
class QToolButton;

namespace routepack::views {

class CompareView;
class LibraryPane;
class PlanView;
class RunView;
class WholeRunsView;

/// The tabs "Plan", "Compare runs", "Run" and "Whole runs" (object name "resultTabs"; the pages "planView",
/// "compareView", "runView", "wholeRunsView"; the plan views' "Import step…" button "importStep"). GUI thread only.
class JobTracker;
class MeasuredImportDialog;

class ResultsPane : public QTabWidget {
    Q_OBJECT
public:
    /// `library` and `planning` outlive the pane (not owned).
    ResultsPane(LibraryPane* library, PlanningController* planning, QWidget* parent = nullptr);
    /// Stops the measured-plans read (JobTracker::shutdown).
    ~ResultsPane() override;

    /// The pages: the plan views, the comparison and the Run view (owned by the pane).
    PlanView* planView() const { return plan_; }
    CompareView* compareView() const { return compare_; }
    RunView* runView() const { return run_; }
    /// The "Whole runs" tab: the library's whole runs overlaid and differenced.
    WholeRunsView* wholeRunsView() const { return wholeRuns_; }
    /// Run id of the plan shown (0 when none or not saved; < 0 for an unsaved plan of this session).
    qint64 shownRun() const { return shownRun_; }
    /// The cluster step shown without counts (nullopt: none).
    const std::optional<ClusterStepRef>& shownStep() const { return shownStep_; }

    /// Adds View's entries for the tabs to `view`: the result tabs by number (Alt+1..4), the next
    /// and previous plan view (Ctrl+PgDown, Ctrl+PgUp), and the heatmap zoom of the shown plan view
    /// (Ctrl+=, Ctrl+-, Ctrl+0; the status line says the zoom, or that the view has no heatmap).
    void addViewActions(QMenu* view);
    /// Shows `plan` (and its window, for the cost views) in the plan views, as run `runId`, and the
    /// runs of its window in the comparison. For a saved run (runId > 0) the measured plans the
    /// library links to it are read on a worker thread and given to the measured tab when they
    /// arrive, while the run is still shown.
    void showPlan(std::shared_ptr<const routepack::PlanResult> plan, std::shared_ptr<const routepack::Trace> window,
                  qint64 runId);
    /// Empties the plan views and the comparison.
    void clearPlan();
    /// Reads the shown saved run's measured plans again (after an import).
    void reloadMeasured();
    /// Shows File > Import measured step…'s dialog for library file `library` (created on first use;
    /// measuredImported follows each import).
    MeasuredImportDialog* showMeasuredImport(const QString& library);
    /// Closes that dialog (another library was opened).
    void closeMeasuredImport();
    /// Shows step `step` read from its plan file without the step's counts (`opened.window` null): the
    /// views that need them say why, and the "Import step…" button offers the step's file.
    void showStepWithoutCounts(const ClusterStepRef& step, const ClusterStepPlan& opened);
    /// Fills the comparison with the session's plans of the shown plan's window (less the runs
    /// unchecked in its "Runs" menu) and offers the window's saved runs.
    void updateCompare();
    /// Adds every saved run of the shown plan's window to the comparison, restoring those not in the
    /// session (nothing is planned again), and shows the Compare tab. Returns the restores queued (0
    /// with the reason in the status line when no plan is shown).
    int compareSavedRuns();
    /// Points the Run view at the tree's current trace or cluster run (its saved runs as of the
    /// tree's snapshot, so that a new run reads the series again).
    void updateRunView();

Q_SIGNALS:
    /// What the status line shows (`error`: in red).
    void status(const QString& text, bool error);
    /// A click in the plan views picked samples of trace `trace`: the sample table keeps `ids` under
    /// the filter line `label` (with `tokens`, one per id, under the column `tokensHeader`).
    void samplesPicked(const QString& trace, const std::vector<std::string>& ids, const QString& label,
                       const std::vector<qint64>& tokens, const QString& tokensHeader);
    /// The "Import step…" button was clicked.
    void importStepRequested();
    /// The measured-step dialog stored a measured step: the library changed (its summary follows in
    /// status()).
    void measuredImported();

private:
    /// A run of the Compare tab's "Runs" menu checked or unchecked: a run not in the session is
    /// restored for the comparison.
    void toggleCompared(qint64 id, bool on);
    /// Reads the measured plans linked to saved run `runId` of `trace`/`window` on a worker thread
    /// (nothing for an unsaved plan, without a library, or when the library tree's snapshot links no
    /// measured step to the run).
    void loadMeasured(const std::string& trace, const std::string& window, qint64 runId);

    /// Records the cluster step shown without counts and shows or hides the Import step… button.
    void setShownStep(std::optional<ClusterStepRef> step);
    void onCellActivated(int row, int slot, const QList<int>& sampleIndices);
    void onRankActivated(int layer, int rank, const QList<int>& samples, const QString& description,
                         const QList<qint64>& tokens);

    LibraryPane* library_;
    PlanningController* planning_;
    PlanView* plan_;
    CompareView* compare_;
    RunView* run_;
    WholeRunsView* wholeRuns_;
    QToolButton* importStep_;
    qint64 shownRun_ = 0;
    std::optional<ClusterStepRef> shownStep_;
    std::set<qint64> compareLeftOut_;                ///< runs unchecked in the Compare tab's "Runs" menu
    JobTracker* measuredLoad_;                       ///< reads the shown run's measured plans (latest request wins)
    MeasuredImportDialog* measuredImport_ = nullptr; ///< showMeasuredImport
};

} // namespace routepack::views
