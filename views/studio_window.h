#pragma once
// The studio's main window: library tree (traces, windows, runs) on the left with the
// topology/budget editor, the sample table and length histogram in the centre, the plan views and
// the run comparison on the right, job progress with Cancel in the status bar. All long work runs
// on worker threads (JobTracker users: ImportJob, PlanJobQueue, sample loading, demo building,
// deleting traces, windows and runs);
// results arrive as immutable values and stale ones are dropped. The exports are views/dialogs/exports.h, the
// session's plans and restores of saved runs views/jobs/run_replay.h.
#include "storage/library.h"
#include "views/dialogs/exports.h"
#include "views/jobs/job_tracker.h"
#include "views/jobs/plan_jobs.h"
#include "views/jobs/run_replay.h"
#include "views/run/cluster_step.h"
#include "views/widgets/theme.h"

#include <QElapsedTimer>
#include <QMainWindow>
#include <QModelIndex>
#include <QString>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

class QAction;
class QDialog;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QSettings;
class QSplitter;
class QTabWidget;
class QTimer;
class QTableView;
class QToolButton;
class QTreeView;

namespace routepack::views {

class CompareView;
class ElidedLabel;
class ImportDialog;
class LengthHistogramView;
class LibraryTreeModel;
class PlanView;
class RewriteDialog;
class RunView;
class SamplePane;
class SampleFilterProxy;
class SampleTableModel;
class TopologyEditor;

/// Where the studio keeps its settings (QSettings organization / application): the last library,
/// window geometry, dock layout and centre split, and as of the last close the selected run (with
/// its library), the result tab and plan view tab, and the export folder. Tests pass their own names so they never
/// touch the user's.
struct StudioOptions {
    QString settingsOrganization = QStringLiteral("RoutePack");
    QString settingsApplication = QStringLiteral("RoutePack Studio");
};

/// How the studio opens a library file: `open(OpenMode::Create)` when `create`, else
/// `open(OpenMode::ReadWrite)`; when that fails with storage::LibraryReadOnly (a file or folder this
/// process may only read) and not `create`, `open(OpenMode::ReadOnly)` (no import, no saved runs).
/// Decided by the error's type: any other error propagates, whatever its message says.
std::unique_ptr<storage::Library>
openStudioLibrary(const std::function<std::unique_ptr<storage::Library>(storage::OpenMode)>& open, bool create);

/// The main window. Keyboard: Ctrl+O open library, Ctrl+N new library, Ctrl+I import trace,
/// Ctrl+D define window, Ctrl+R run the planner, Esc / Ctrl+. cancel the running job, Ctrl+Shift+W
/// rewrite a checkpoint with the shown plan, Ctrl+E export what is shown (plan view image, comparison
/// CSV or sample table CSV), Ctrl+Shift+L load the shown run's setup into the form, Ctrl+Q quit.
/// Selecting a saved run shows its plan and loads its topology and budgets into the editor, unless
/// the editor holds unsaved edits: then they stay and the status line says so.
class StudioWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit StudioWindow(const StudioOptions& options = {}, QWidget* parent = nullptr);
    ~StudioWindow() override;

    /// Opens (`create`: creating when absent) a library, remembers it as the last one, refreshes the
    /// tree and selects the first window. False with `error` set (and shown) on failure. Results of
    /// jobs started for the previous library are dropped from display (they are still saved there);
    /// opening the library that is already open (same canonical path) keeps its jobs. The GUI
    /// thread's connection has a short busy timeout (200 ms): a write while another process holds
    /// the library fails at once with "... library is in use by another process ...; try again".
    bool openLibrary(const QString& file, bool create = false, QString* error = nullptr);
    QString libraryPath() const;
    /// The library remembered in the settings ("" when none).
    QString lastLibrary() const;
    /// Opens the embedded demo library under QStandardPaths::AppDataLocation/demo, building it on
    /// a worker thread first when it is missing (storage::build_demo); emits demoReady.
    void openDemoLibrary();
    /// Re-reads traces, windows and runs (keeps the selection).
    void refreshLibrary();

    /// Selects a trace / window / run in the tree (loading its samples or showing its plan).
    bool selectTrace(const QString& trace);
    bool selectWindow(const QString& trace, const QString& window);
    bool selectRun(qint64 runId);
    /// Queues a planner run on the selected window with the editor's topology and budgets; returns
    /// the job id (0 with the reason in the status bar when no window is selected or the topology
    /// or the budgets are invalid).
    quint64 runPlanner();
    /// Edit > Load the shown run's setup: replaces the editor's form (and any unsaved edits, one
    /// Ctrl+Z away) with the shown saved run's topology and budgets. False (with the reason in the
    /// status line) when no saved run is shown.
    bool loadShownRunSetup();
    /// Queues one run-planning job (PlanJobQueue::enqueueRun) over `windows` of `trace` with the
    /// editor's topology and budgets: chained as `routepack sweep` chains them, each finished window
    /// saved as a run at once (the Run view reads them as they arrive). Returns the job id (0 with the
    /// reason in the status bar when there is no library, no window, or the topology or the budgets
    /// are invalid).
    quint64 planRun(const QString& trace, const QStringList& windows);
    /// planRun over what the library tree selects: the selected windows (and the windows of selected
    /// runs) when they belong to one trace, or every window of the selected trace ("Plan every
    /// window"). 0 with the reason in the status bar when the selection names no window or spans
    /// several traces.
    quint64 planSelectedRun();
    /// Cancels the running job (the planner keeps its best valid plan so far).
    void cancelJob();
    /// Adds every saved run of the shown plan's window to the comparison, restoring from their stored
    /// plan JSON those not shown in this session (nothing is planned again). Returns the number of
    /// restores queued.
    int compareSavedRuns();
    /// Shows a plan (and its window, for the cost views) in the plan views and the comparison.
    void showPlan(std::shared_ptr<const routepack::PlanResult> plan, std::shared_ptr<const routepack::Trace> window,
                  qint64 runId);
    /// Opens the import dialog (modeless) for the open library.
    ImportDialog* showImportDialog();
    /// Opens step `window` of the cluster run shown in the Run view in the plan views: its plan file
    /// `planFile` (in the run's OUT) read on a worker thread (open_cluster_step, views/run/cluster_step.h),
    /// with the step's counts when the library holds its samples; otherwise the views that need the
    /// counts say so and the plan views' "Import step…" button (importStepButton()) offers to import
    /// `stepPath`. Returns the job id; the status line says what is shown when it arrives.
    quint64 openClusterStep(const QString& planFile, const QString& stepPath, const QString& window);
    /// The import dialog for the shown cluster step's file: its path, the plan's model and a trace
    /// name "<trace>-<window>" filled in; once imported, the step opens again with its counts.
    /// nullptr (reason in the status line) when no step without counts is shown, its file is not
    /// recorded, or the library cannot import.
    ImportDialog* importShownStep();
    /// The plan views' "Import step…" button (visible while a cluster step without counts is shown).
    QToolButton* importStepButton() const { return importStepButton_; }
    /// Opens the checkpoint rewrite dialog (modeless) with the shown plan: a saved run's stored plan
    /// JSON (Library::run_plan_json), else plan_to_json of the unsaved plan. While a rewrite runs the
    /// dialog keeps its plan. nullptr (with the reason in the status bar) when no plan is shown.
    RewriteDialog* showRewriteDialog();
    /// The rewrite dialog, once opened (nullptr before).
    RewriteDialog* rewriteDialog() const { return rewriteDialog_; }

    PlanJobQueue* jobs() const { return jobs_; }
    LibraryTreeModel* libraryModel() const { return tree_; }
    /// The sample pane (table, filters and length histogram of the selected trace or window).
    SamplePane* samplePane() const { return samplePane_; }
    SampleTableModel* sampleModel() const;
    SampleFilterProxy* sampleProxy() const;
    QTableView* sampleView() const;
    QTreeView* libraryView() const { return treeView_; }
    LengthHistogramView* histogramView() const;
    PlanView* planView() const { return planView_; }
    CompareView* compareView() const { return compareView_; }
    /// The Run view (the selected trace's windows as the steps of a run).
    RunView* runView() const { return runView_; }
    TopologyEditor* topologyEditor() const { return editor_; }
    /// The Export menu's dialogs (their start folder is kept across sessions).
    StudioExports* exports() const { return exports_.get(); }
    QTabWidget* resultTabs() const { return resultTabs_; }
    /// The centre: the sample pane (table and length histogram) | the plan views (resultTabs()).
    QSplitter* mainSplitter() const { return mainSplit_; }
    /// The heading above the sample table (what it shows, or why it is empty).
    QString sampleHeaderText() const;
    /// Text of the status line (job stage, errors): the whole message, also where the line shows it
    /// elided at its end (its tooltip holds it too).
    QString statusText() const;
    /// The status line's label (what it shows at its width: statusText(), elided when too long).
    QLabel* statusLine() const;
    /// Shows `text` in the status line (`error`: white on red until the next action that succeeds)
    /// and adds it to statusMessages(). Put what must stay readable first: the line elides the end.
    void setStatus(const QString& text, bool error = false);
    /// The session's status messages, oldest first, the last kStatusLogSize: "HH:mm:ss  <message>"
    /// ("HH:mm:ss  error: <message>" for errors); a message repeated at once is listed once.
    QStringList statusMessages() const { return statusLog_; }
    static constexpr int kStatusLogSize = 300;
    /// View > Status messages: statusMessages() in a modeless dialog that follows new messages.
    QDialog* showStatusLog();
    /// The Help > Keyboard shortcuts text: one line per menu action with a shortcut, "<menu> >
    /// <action>: <shortcuts>" in menu order (native key names, several shortcuts joined by " or "),
    /// built from the actions themselves so it never goes stale.
    QString shortcutsText() const;
    /// True while the status line shows an error (red). An error stays until the next action that
    /// succeeds: a selection in the library tree, a valid edit of the topology and budgets, an
    /// opened dialog, or any action that reports its own outcome.
    bool statusIsError() const { return statusError_; }
    /// Run id of the plan shown (0 when none or not saved).
    qint64 shownRunId() const { return shownRun_; }
    /// The sample table's filter line: what a click in the plan views keeps in the table ("Top 20
    /// samples by tokens on EP rank 3 of MoE layer 45 (LPT placement)", "Row 1, DP slot 2 of the
    /// RoutePack layout: 4 samples"); "" while the table is not so filtered.
    QString sampleFilterText() const;
    /// Keeps only the samples with these ids in the sample table, under the filter line `label` with
    /// a "Clear filter" button. Ids the table does not hold are ignored.
    void filterSamples(const std::vector<std::string>& ids, const QString& label);
    /// Shows every sample again (the "Clear filter" button).
    void clearSampleFilter();
    QToolButton* clearFilterButton() const;

    // --- Deleting and renaming (views/studio_window_edit.cpp) ---
    // Each refuses, with the reason in the status line, without a library, on a read-only one,
    // while a deletion runs, and while a planner job runs (its result would be saved into what
    // changes; restores of saved runs are dropped instead). Afterwards the tree is read again, cached
    // plans of what changed are dropped, and the status line says what was done.

    /// Starts deleting a trace with its windows, saved runs and samples (storage::Library::
    /// delete_trace) as a background job of deletionJobs() on its own library connection: the call
    /// returns at once, the status bar shows a busy indicator and "Deleting trace T…", and when the
    /// job ends the tree is read again and the status line says what went ("Deleted trace T with
    /// ...") or why nothing did ("Cannot delete trace T: ..."). Planning and other edits wait for it.
    /// With `confirm`, a question names what goes (trace_removal) and No keeps everything. Returns the
    /// job's id, 0 when refused or declined.
    quint64 deleteTrace(const QString& trace, bool confirm = true);
    /// Deletes a window with its saved runs (the samples stay), as deleteTrace.
    quint64 deleteWindow(const QString& trace, const QString& window, bool confirm = true);
    /// Deletes a saved run with its plan, as deleteTrace.
    quint64 deleteRun(qint64 runId, bool confirm = true);
    /// The tracker of the deletion jobs (one at a time, each on its own library connection).
    JobTracker* deletionJobs() const { return deletions_; }
    /// Renames a trace (stored plans follow, Library::rename_trace). An empty `newName` asks for one
    /// (QInputDialog, the old name proposed). True when renamed; the renamed trace is selected.
    bool renameTrace(const QString& trace, const QString& newName = {});
    /// Renames a window of `trace`, as renameTrace.
    bool renameWindow(const QString& trace, const QString& window, const QString& newName = {});
    /// Names saved run `runId` (storage::Library::rename_run; the name shows beside the run's id in
    /// the tree, the Compare tab and the Run view). An empty `newName` asks for one (QInputDialog,
    /// the run's name proposed); the name is trimmed. Refused, with the reason in the status line,
    /// without a writable library or for a name rename_run refuses; jobs keep running (nothing they
    /// read or save changes). True when renamed; the plan shown stays.
    bool renameRun(qint64 runId, const QString& newName = {});
    /// F2 in the library tree: renames the current trace, window or saved run (asks for the name).
    void renameCurrentNode();
    /// The library tree's context menu entries for the node at `index` (its kind's Rename… and
    /// Delete…), besides the Copy entries every table and tree has (views/widgets/item_actions.h).
    QList<QAction*> libraryActions(const QModelIndex& index, QObject* parent);

    // --- What an analysis tool's user expects (views/studio_window_basics.cpp) ---

    /// File > Open Recent: the libraries opened last (newest first, at most 10, absolute paths),
    /// kept in the settings ("library/recent"). Files that no longer exist are dropped from the
    /// settings as the list is read.
    QStringList recentLibraries() const;
    QMenu* recentMenu() const { return recentMenu_; }
    /// View > Theme: Fusion with a light or dark palette (views/widgets/theme.h), on the whole application,
    /// kept in the settings ("view/theme") and applied again when the next studio window starts.
    /// Without a kept theme the studio leaves the application's palette as it found it.
    void setTheme(Theme theme);
    Theme theme() const { return theme_; }
    /// The filter line above the library tree: rows whose name or details contain its text (any
    /// case) stay, with their parents and children; the others are hidden. Ctrl+F focuses it.
    QLineEdit* libraryFilter() const { return libraryFilter_; }
    /// Help > Guide to the views: docs/studio-views.md (embedded as :/docs/studio-views.md) in a
    /// QTextBrowser (setMarkdown). Opened modeless; the same dialog is raised again.
    QDialog* showViewsHelp();

Q_SIGNALS:
    void libraryOpened(const QString& file);
    /// The sample table shows `trace` (or a window of it).
    void samplesLoaded(const QString& trace);
    /// A plan is shown (runId 0 when it was not saved).
    void planShown(qint64 runId);
    /// The embedded demo library is open.
    void demoReady(const QString& file);

protected:
    void closeEvent(QCloseEvent* event) override;
    /// Local files dropped on the window: one .routepack file opens that library; trace files and
    /// folders open the import dialog with them as its inputs.
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    std::unique_ptr<QSettings> settings() const;
    /// True when `file` is the open library (same canonical path).
    bool isOpenLibrary(const QString& file) const;
    void buildUi();
    void buildActions();
    /// The library dock's contents: the filter line over the tree, the tree's context menu.
    QWidget* buildLibraryPane();
    /// File > Open Recent, View > Theme, the Help menu.
    void buildRecentMenu(QMenu* file);
    /// File > Export: what is shown (Ctrl+E), the plan, maps, views, comparison, run and samples.
    void buildExportMenu(QMenu* file);
    void buildThemeMenu(QMenu* view);
    void buildHelpMenu();
    /// Context menus and Ctrl+C of the sample, comparison and grid tables.
    void installTableMenus();
    /// Adds `file` (absolute) at the top of the recent libraries.
    void rememberRecent(const QString& file);
    void fillRecentMenu();
    /// Hides the library tree's rows that do not match the filter line.
    void applyLibraryFilter();
    /// True when the library may change now; else false with the reason (`what` names the change).
    bool libraryEditable(const QString& what);
    /// True, with "A deletion is running: wait for it before you <what>." in the status line, while
    /// a deletion job runs or waits.
    bool deletionRunning(const QString& what);
    /// Runs `work` on a worker with a library connection of its own (storage::OpenMode::ReadWrite on
    /// libraryPath()): the busy indicator and "Deleting <what>…" meanwhile; then `done` with what was
    /// removed, or "Cannot delete <what>: <why>" and the tree read again. Nothing is delivered once
    /// another library is open. Returns the job id.
    quint64 startDeletion(const QString& what, std::function<storage::Removal(storage::Library&)> work,
                          std::function<void(const storage::Removal&)> done);
    /// After a delete or rename: the plan views emptied, the tree read again, `trace` (and `window`)
    /// selected when given, else the first window or trace, as if clicked.
    void libraryEdited(const QString& trace, const QString& window);
    /// What the planner job queue's signals show: progress, convergence, results, failures.
    void connectPlanJobs();
    /// What the run-planning signals show: progress per window and overall, steps as they end.
    void connectRunJobs();
    void onTreeSelection();
    /// Loads a saved run's topology and budgets into the editor as one undo step. When the form
    /// holds unsaved edits (TopologyEditor::hasUnsavedEdits) and differs from the run's setup, they
    /// are kept and false is returned, unless `force`.
    bool loadRunSetup(const storage::RunEntry& run, bool force);
    /// The status line's note that the form kept its edits instead of run `runId`'s setup.
    QString keptEditsNote(qint64 runId) const;
    /// The progress line of lastProgress_ (and of runProgress_ for a run-planning job) with the time
    /// elapsed now (the time left only when honest); the one place that words a job's progress.
    void showProgress();
    /// What a job's stage shares depend on: its window, topology and budgets (seed aside).
    static std::string setupKey(const PlanJobRequest& rq);
    /// The status line of saved run `runId` shown with `plan`: "Run 2: the saved plan (max U ..., R* = ...)".
    QString savedPlanNote(qint64 runId, const routepack::PlanResult& plan) const;
    /// "<trace>/<window>" of a planner job queued by runPlanner ("a window" for another job).
    QString liveLabel(quint64 job) const;
    /// The run selected in the library tree (0 when the selection is not a run).
    qint64 selectedRunId() const;
    /// Selects the window that planner job `job` plans in the tree (its selection signals blocked:
    /// the views keep what they show until the job's plan arrives).
    void followLiveJob(quint64 job);
    /// Queues a background restore of a saved run's stored plan (RunReplay::restore).
    quint64 restoreRun(const storage::RunEntry& run, bool show);
    /// A cluster run's step shown in the plan views (openClusterStep), or to open again once imported.
    struct ClusterStepRef {
        qint64 clusterRun = 0;
        QString planFile, stepPath, window;
    };
    /// openClusterStep of a step of cluster run step.clusterRun (whatever the Run view shows now).
    quint64 openStep(const ClusterStepRef& step);
    /// Empties the plan views and the comparison (nothing selected has a plan shown yet).
    void clearPlan();
    /// Records the cluster step shown without counts (nullopt: none) and shows or hides the plan
    /// views' Import step… button accordingly.
    void setShownStep(std::optional<ClusterStepRef> step);
    /// What the open plan-file job delivered (openClusterStep): shown with or without counts.
    void showClusterStep(const ClusterStepRef& step, const ClusterStepPlan& opened);
    /// For a load-only (aggregate) trace: shows its identity vs LPT placement views on the editor's
    /// topology (PlanView::setPlacement). Does nothing for a trace with samples.
    void showPlacementIfLoadOnly(const QString& trace);
    void loadSamples(const QString& trace, const QString& window);
    void defineWindow();
    void saveTopology();
    /// Shows what an export did in the status line (nothing when it was cancelled).
    void showExport(const std::optional<ExportResult>& result);
    void updateCompare();
    /// A run of the Compare tab's "Runs" menu checked or unchecked: a run not loaded yet is loaded
    /// from the library for the comparison.
    void toggleCompared(qint64 id, bool on);
    /// Points the Run view at the selected trace (its saved runs as of the tree's snapshot).
    void updateRunView();
    void updateActions();
    /// The topology and planner budgets of the form, or nullopt after saying in the status line
    /// which of them is not valid and why (the editor's own message).
    std::optional<std::pair<routepack::Topology, routepack::PlannerBudgets>> formSetup();
    /// Clears the status line when it shows an error (an action succeeded since).
    void clearStaleError();
    /// When the editor's topology has other experts per layer than trace `trace`'s model (it cannot
    /// plan it), selects a shipped preset of that model (the one with the same EP ranks and DP slots
    /// when there is one) and says so in the status line, naming both presets.
    void fitPresetToTrace(const QString& trace);
    void onCellActivated(int row, int slot, const QList<int>& sampleIndices);
    void onRankActivated(int layer, int rank, const QList<int>& samples, const QString& description,
                         const QList<qint64>& tokens);

    StudioOptions options_;
    std::unique_ptr<storage::Library> lib_;
    PlanJobQueue* jobs_ = nullptr;
    LibraryTreeModel* tree_ = nullptr;
    QTreeView* treeView_ = nullptr;
    SamplePane* samplePane_ = nullptr;
    PlanView* planView_ = nullptr;
    CompareView* compareView_ = nullptr;
    RunView* runView_ = nullptr;
    QTabWidget* resultTabs_ = nullptr;
    QSplitter* mainSplit_ = nullptr; ///< the sample pane | the plan views
    TopologyEditor* editor_ = nullptr;
    ElidedLabel* status_ = nullptr;
    QStringList statusLog_;
    QDialog* statusLogDialog_ = nullptr;
    QPlainTextEdit* statusLogText_ = nullptr;
    QLabel* libraryLabel_ = nullptr;
    QProgressBar* jobProgress_ = nullptr;
    QToolButton* cancelButton_ = nullptr;
    ImportDialog* importDialog_ = nullptr;
    RewriteDialog* rewriteDialog_ = nullptr;
    QAction* runAction_ = nullptr;
    QAction* runPlanAction_ = nullptr;
    QAction* cancelAction_ = nullptr;
    QAction* importAction_ = nullptr;
    QAction* windowAction_ = nullptr;
    QAction* exportAction_ = nullptr;
    QAction* rewriteAction_ = nullptr;
    QList<QAction*> planActions_;
    QList<QAction*>
        fullPlanActions_; ///< of planActions_: those that need a complete plan (not one read from its file alone)

    JobTracker* demoBuild_ = nullptr;          ///< building the demo library
    JobTracker* deletions_ = nullptr;          ///< deleting traces, windows and saved runs (deleteTrace, ...)
    JobTracker* stepOpen_ = nullptr;           ///< reading a cluster run step's plan (openClusterStep)
    std::optional<ClusterStepRef> shownStep_;  ///< shown without counts (the Import step… button)
    std::optional<ClusterStepRef> reopenStep_; ///< imported from importShownStep: open again when done
    QToolButton* importStepButton_ = nullptr;
    std::unique_ptr<StudioExports> exports_;
    RunReplay replay_; ///< plans of this session by run id, restores of saved runs on their way
    qint64 shownRun_ = 0;
    std::map<quint64, std::pair<QString, QString>> liveJobs_; ///< planner jobs queued here: trace, window
    std::pair<QString, QString> pendingLive_;   ///< the planner job being queued (runPlanner), until it has an id
    std::map<quint64, std::string> liveSetups_; ///< planner jobs queued here: setupKey
    std::string weightsSetup_;                  ///< setupKey of the run the stage shares were measured on
    std::tuple<quint64, QString, double> lastProgress_; ///< the running job's last stage and fraction
    /// A run-planning job's place (runProgress): job, window index, window count, the window's
    /// fraction; lastProgress_ then holds the stage and the whole run's fraction.
    std::tuple<quint64, int, int, double> runProgress_{0, 0, 0, 0.0};
    QTimer* progressTick_ = nullptr;  ///< re-shows the progress line between events
    std::set<qint64> compareLeftOut_; ///< runs unchecked in the Compare tab's "Runs" menu
    qint64 keptEditsRun_ = 0;         ///< the selected run whose setup the form did not take (its edits kept)
    bool statusError_ = false;
    QMenu* recentMenu_ = nullptr;
    QLineEdit* libraryFilter_ = nullptr;
    QDialog* helpDialog_ = nullptr;
    Theme theme_ = Theme::Light;
    QElapsedTimer jobClock_; ///< since the running planner job started (the progress line's times)
};

} // namespace routepack::views
