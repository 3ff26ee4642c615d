#pragma once
// The studio's main window: it arranges the panes and docks and wires their signals. The library dock
// (views/library/library_pane.h) lists and edits the library; below it the topology and budgets form;
// the sample pane in the centre; the result tabs (views/results_pane.h) on the right; the status bar
// (views/studio_status.h). The planner queue, the session's plans, progress and cancel belong to
// views/planning_controller.h; every long job runs on a worker thread (JobTracker) and results arrive
// as immutable values.
#include "storage/library.h"
#include "views/dialogs/exports.h"
#include "views/widgets/theme.h"

#include <QList>
#include <QMainWindow>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

class QAction;
class QDialog;
class QMenu;
class QSettings;

namespace routepack::views {

class ImportDialog;
class MeasuredImportDialog;
class LibraryPane;
class PlanningController;
class ResultsPane;
class RewriteDialog;
class SamplePane;
class SetupPane;
class StudioStatus;
struct ClusterStepPlan;
struct ClusterStepRef;

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
    /// The open library's file ("" when none).
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
    /// File > Import measured step…: opens the measured-step import dialog of the library (nullptr with
    /// the reason in the status line without a writable library). An import refreshes the library and
    /// the shown run's measured tab.
    MeasuredImportDialog* showMeasuredImportDialog();
    /// Whether the open library takes imports; the reason in the status line when it does not.
    bool mayImport();
    /// Opens step `window` of the cluster run shown in the Run view in the plan views: its plan file
    /// `planFile` (in the run's OUT) read on a worker thread (open_cluster_step, views/run/cluster_step.h),
    /// with the step's counts when the library holds its samples; otherwise the views that need the
    /// counts say so and the plan views' "Import step…" button (object name "importStep") offers to
    /// import `stepPath`. Returns the job id; the status line says what is shown when it arrives.
    quint64 openClusterStep(const QString& planFile, const QString& stepPath, const QString& window);
    /// The import dialog for the shown cluster step's file: its path, the plan's model and a trace
    /// name "<trace>-<window>" filled in; once imported, the step opens again with its counts.
    /// nullptr (reason in the status line) when no step without counts is shown, its file is not
    /// recorded, or the library cannot import.
    ImportDialog* importShownStep();
    /// Opens the checkpoint rewrite dialog (modeless) with the shown plan: a saved run's stored plan
    /// JSON (Library::run_plan_json), else plan_to_json of the unsaved plan. While a rewrite runs the
    /// dialog keeps its plan. nullptr (with the reason in the status bar) when no plan is shown.
    RewriteDialog* showRewriteDialog();

    /// Text of the status line (job stage, errors): the whole message, also where the line shows it
    /// elided at its end (its tooltip holds it too).
    QString statusText() const;
    /// Shows `text` in the status line (`error`: white on red until the next action that succeeds)
    /// and adds it to statusMessages(). Put what must stay readable first: the line elides the end.
    void setStatus(const QString& text, bool error = false);
    /// The session's status messages, oldest first, the last kStatusLogSize: "HH:mm:ss  <message>"
    /// ("HH:mm:ss  error: <message>" for errors); a message repeated at once is listed once.
    QStringList statusMessages() const;
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
    bool statusIsError() const;
    /// Run id of the plan shown (0 when none or not saved).
    qint64 shownRunId() const;

    /// View > Theme: Fusion with a light or dark palette (views/widgets/theme.h), on the whole application,
    /// kept in the settings ("view/theme") and applied again when the next studio window starts.
    /// Without a kept theme the studio leaves the application's palette as it found it.
    void setTheme(Theme theme);
    /// The theme set (Light when none is kept).
    Theme theme() const;
    /// Help > Guide to the views: docs/studio-views.md (embedded as :/docs/studio-views.md) in a
    /// HelpDialog (contents and search, views/widgets/help_dialog.h). Opened modeless; the same
    /// dialog is raised again.
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
    /// Reaches what no object name reaches (the exports) in the tests.
    friend struct StudioWindowTestAccess;
    /// The actions that updateActions enables or disables.
    struct Actions {
        QAction *run = nullptr, *runPlan = nullptr, *cancel = nullptr, *import = nullptr, *window = nullptr;
        QAction* importMeasured = nullptr;
        QList<QAction*> plan;     ///< those that need a plan shown
        QList<QAction*> fullPlan; ///< of plan: those that need a complete plan (not one read from its file alone)
    };

    std::unique_ptr<QSettings> settings() const;
    void buildUi();
    /// What the panes' and the controller's signals change in the others.
    void connectPanes();
    void buildActions();
    void buildViewMenu();
    void buildThemeMenu(QMenu* view);
    void buildHelpMenu();
    /// Context menus and Ctrl+C of the sample, comparison and grid tables.
    void installTableMenus();
    /// After a delete or rename: the plan views emptied, the tree read again, `trace` (and `window`)
    /// selected when given, else the first window or trace, as if clicked.
    void libraryEdited(const QString& trace, const QString& window);
    /// The sample pane's line while nothing is selected: how to fill an empty library (import,
    /// drop), else "Select a trace or a window in the library."
    QString nothingSelectedText() const;
    void onTreeSelection();
    /// Empties the plan views and the comparison (nothing selected has a plan shown yet).
    void clearPlan();
    /// What the open plan-file job delivered (openClusterStep): shown with or without counts.
    void showClusterStep(const ClusterStepRef& step, const ClusterStepPlan& opened);
    /// For a load-only (aggregate) trace: shows its identity vs LPT placement views on the editor's
    /// topology (PlanView::setPlacement). Does nothing for a trace with samples.
    void showPlacementIfLoadOnly(const QString& trace);
    void loadSamples(const QString& trace, const QString& window);
    void defineWindow();
    /// Shows what an export did in the status line (nothing when it was cancelled).
    void showExport(const std::optional<ExportResult>& result);
    void updateActions();
    /// Clears the status line when it shows an error (an action succeeded since).
    void clearStaleError();

    StudioOptions options_;
    std::unique_ptr<storage::Library> lib_;
    LibraryPane* library_ = nullptr;         ///< the library dock
    PlanningController* planning_ = nullptr; ///< jobs, the session's plans, progress and cancel
    ResultsPane* results_ = nullptr;         ///< the plan views, the comparison, the Run view
    SamplePane* samplePane_ = nullptr;       ///< the sample table and length histogram
    SetupPane* setup_ = nullptr;             ///< the topology and budgets form
    StudioStatus* status_ = nullptr;         ///< the status bar and its log
    std::unique_ptr<StudioExports> exports_; ///< File > Export (its start folder kept across sessions)
    Actions actions_;
    ImportDialog* importDialog_ = nullptr;
    RewriteDialog* rewriteDialog_ = nullptr;
    QDialog* helpDialog_ = nullptr;
    std::unique_ptr<ClusterStepRef> reopenStep_; ///< imported from importShownStep: open again when done
    qint64 keptEditsRun_ = 0; ///< the selected run whose setup the form did not take (its edits kept)
};

} // namespace routepack::views
