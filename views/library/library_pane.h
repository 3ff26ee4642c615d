#pragma once
// The studio's library dock: the filter line over the library tree (traces, windows, saved runs,
// cluster runs), the tree's context menu and F2, deleting (a background job on a library connection
// of its own) and renaming what the tree lists, and the list of File > Open Recent. The pane edits
// the library the window opened and reports through signals: the status line's text, what changed
// and what to select; the window shows it.
#include "storage/library.h"
#include "views/library/library_tree_model.h"

#include <QModelIndex>
#include <QModelIndexList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

class QAction;
class QTemporaryDir;
class QLineEdit;
class QMenu;
class QSettings;
class QTreeView;

namespace routepack::views {

class LibraryWatch;

class JobTracker;

/// The library tree with its filter line (object names "libraryTree", "libraryFilter"; its model
/// "libraryModel", the deletion jobs' tracker "deletionJobs"). GUI thread only.
class LibraryPane : public QWidget {
    Q_OBJECT
public:
    /// The recent libraries are kept in QSettings(`settingsOrganization`, `settingsApplication`)
    /// under "library/recent".
    LibraryPane(const QString& settingsOrganization, const QString& settingsApplication, QWidget* parent = nullptr);
    /// Stops the deletion jobs first (nothing is delivered afterwards).
    ~LibraryPane() override;

    /// The library the tree lists and the edits change (owned by the caller, which keeps it alive
    /// while set; nullptr: none). Reads nothing: refresh() does. The library's file is watched
    /// (LibraryWatch, views/library/library_watch.h): a commit by another process or connection
    /// reads the tree again (refresh), the current node kept.
    void setLibrary(storage::Library* lib);
    /// File > Reload library (F5): refresh() now, and says so in the status line.
    QAction* reloadAction() const { return reload_; }
    /// Edit > Undo delete (Ctrl+Alt+Z): puts back the last deletion of this library (undoDelete);
    /// disabled when there is none, its text naming what it restores ("Undo delete of run 7").
    QAction* undoDeleteAction() const { return undoDelete_; }
    /// What undoDelete would restore, newest last ("trace 'ds'", "run 7"); emptied when another
    /// library is set (the trash, a temporary file, goes with the library).
    QStringList deletedItems() const;
    /// Restores the last deletion (storage::Library::restore_deleted from this library's trash) as a
    /// background job like a deletion: then "Restored X." and the tree read again, or "Cannot
    /// restore X: why" (the item is dropped). Returns the job's id, 0 when there is nothing to undo
    /// or the library may not change now.
    quint64 undoDelete();
    /// The set library's file ("" when none).
    QString libraryPath() const;
    /// True when `file` is the set library's file (the same canonical path).
    bool isOpen(const QString& file) const;
    /// Asked before a delete or rename, after the pane's own checks (a writable library, no deletion
    /// running), with what would change ("delete trace T"): false refuses it (the guard says why in
    /// the status line). The window's guard refuses while a planner job could save into the library.
    void setEditGuard(std::function<bool(const QString& what)> guard);

    /// The tree's model (its snapshot is what the library held when last read).
    LibraryTreeModel* model() const { return model_; }
    const LibrarySnapshot& snapshot() const { return model_->snapshot(); }
    /// The tree's current node (invalid when none) and the selected rows (column 0).
    QModelIndex currentIndex() const;
    QModelIndexList selectedRows() const;
    /// The saved run that is the current node (0 when the current node is not a saved run).
    qint64 selectedRunId() const;

    /// Reads the library again into the tree (the current node kept, without currentChanged), then
    /// emits refreshed(). A read that fails says why in the status line and changes nothing.
    void refresh();
    /// Makes a trace / window / saved run the current node (currentChanged follows); false when the
    /// tree does not list it.
    bool selectTrace(const QString& trace);
    bool selectWindow(const QString& trace, const QString& window);
    bool selectRun(qint64 runId);
    /// Makes `index` the current node without currentChanged: the views keep what they show.
    void setCurrentQuietly(const QModelIndex& index);
    /// After a delete or rename: reads the library again and makes `trace` (and `window`) the
    /// current node without currentChanged, else the first window or trace. False when the library
    /// lists nothing.
    bool selectAfterEdit(const QString& trace, const QString& window);
    /// Focuses the filter line with its text selected (Edit > Find, Ctrl+F).
    void focusFilter();
    /// The embedded demo library under QStandardPaths::AppDataLocation/demo: demoReady at once when
    /// it is there with its runs, else after building it on a worker thread (storage::build_demo;
    /// busyChanged and the status line meanwhile, the reason in the status line when it fails).
    /// Nothing while a build runs.
    void openDemo();

    // Each delete and rename refuses, with the reason in the status line, without a library, on a
    // read-only one, while a deletion runs, and when the edit guard refuses. Afterwards
    // plansRemoved() names the plans that no longer hold, edited() says what to select, and the
    // status line says what was done.

    /// Starts deleting a trace with its windows, saved runs and samples (storage::Library::
    /// delete_trace) as a background job on its own library connection: busyChanged(true) and
    /// "Deleting trace T…" meanwhile; when the job ends, "Deleted trace T with ..." or "Cannot delete
    /// trace T: ..." and the tree read again. With `confirm`, a question names what goes
    /// (trace_removal) and No keeps everything. Returns the job's id, 0 when refused or declined.
    quint64 deleteTrace(const QString& trace, bool confirm = true);
    /// Deletes a window with its saved runs (the samples stay), as deleteTrace.
    quint64 deleteWindow(const QString& trace, const QString& window, bool confirm = true);
    /// Deletes a saved run with its plan, as deleteTrace.
    quint64 deleteRun(qint64 runId, bool confirm = true);
    /// Renames a trace (stored plans follow, Library::rename_trace). An empty `newName` asks for one
    /// (QInputDialog, the old name proposed). True when renamed; the renamed trace is selected.
    bool renameTrace(const QString& trace, const QString& newName = {});
    /// Renames a window of `trace`, as renameTrace.
    bool renameWindow(const QString& trace, const QString& window, const QString& newName = {});
    /// Names saved run `runId` (storage::Library::rename_run), trimmed; an empty `newName` asks for
    /// one. Jobs keep running (nothing they read or save changes): the edit guard is not asked.
    /// True when renamed; runRenamed() follows.
    bool renameRun(qint64 runId, const QString& newName = {});
    /// F2 in the tree: renames the current trace, window or saved run (asks for the name); a row the
    /// filter hides is not renamed (the status line says why).
    void renameCurrentNode();
    /// The tree's context menu entries for the node at `index` (its kind's Rename… and Delete…),
    /// besides the Copy entries every table and tree has (views/widgets/item_actions.h).
    QList<QAction*> libraryActions(const QModelIndex& index, QObject* parent);
    /// True, with "A deletion is running: wait for it before you <what>." in the status line, while
    /// a deletion job runs or waits.
    bool deletionRunning(const QString& what);

    /// The libraries opened last (newest first, at most 10, absolute paths). Files that no longer
    /// exist are dropped from the settings as the list is read.
    QStringList recentLibraries() const;
    /// Puts `file` (absolute) at the top of the recent libraries.
    void rememberRecent(const QString& file);
    /// Makes `menu` File > Open Recent: one entry per recent library (openRequested) and "Clear the
    /// list", filled again each time the menu is shown.
    void setRecentMenu(QMenu* menu);

Q_SIGNALS:
    /// The current node changed (a click, the keyboard, or selectTrace / selectWindow / selectRun).
    void currentChanged();
    /// The tree was read again (refresh).
    void refreshed();
    /// What the status line shows (`error`: in red).
    void status(const QString& text, bool error);
    /// A deletion started (true: a busy indicator) or ended (false).
    void busyChanged(bool busy);
    /// Plans of a deleted or renamed part are stale: those of `run` when it is > 0, else those of
    /// window `window` of `trace`, or of every window of `trace` when `window` is empty.
    void plansRemoved(const QString& trace, const QString& window, qint64 run);
    /// A delete or rename changed the library: the views drop what they show and select `trace`
    /// (and `window`), else the first window or trace (selectAfterEdit).
    void edited(const QString& trace, const QString& window);
    /// Saved run `runId` was renamed (the tree was read again).
    void runRenamed(qint64 runId);
    /// A recent library was chosen in File > Open Recent.
    void openRequested(const QString& file);
    /// The demo library `file` is ready to open (openDemo).
    void demoReady(const QString& file);

private:
    std::unique_ptr<QSettings> settings() const;
    void fillRecentMenu();
    /// Whether row `index` and every row above it are shown (not hidden by the filter).
    bool rowShown(const QModelIndex& index) const;
    /// Deselects the rows the filter hides, so that what acts on the selection (Plan > Plan run,
    /// F2) never acts on a row the user cannot see; the current row stays (what it shows stays).
    void dropHiddenSelection();
    /// True when the library may change now; else false with the reason (`what` names the change).
    bool libraryEditable(const QString& what);
    /// Runs `work` on a worker with a library connection of its own (storage::OpenMode::ReadWrite on
    /// libraryPath()): then `done` with what was removed, or "Cannot delete <what>: <why>" and the
    /// tree read again. Nothing is delivered once another library is set. Returns the job id.
    quint64 startDeletion(const QString& what,
                          std::function<storage::Removal(storage::Library&, const std::filesystem::path& trash)> work,
                          std::function<void(const storage::Removal&)> done);
    /// The undo action's text and state from deleted_.
    void updateUndo();

    QString organization_, application_;
    storage::Library* lib_ = nullptr;
    std::function<bool(const QString&)> guard_;
    LibraryTreeModel* model_ = nullptr;
    QTreeView* view_ = nullptr;
    QLineEdit* filter_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    LibraryWatch* watch_ = nullptr;
    QAction* reload_ = nullptr;
    QAction* undoDelete_ = nullptr;
    /// This library's trash (storage::Library::delete_* copy there what they remove), created with
    /// the library set, removed with it.
    std::unique_ptr<QTemporaryDir> trash_;
    /// Deletions that can be undone: the trash item and what it holds, oldest first.
    std::vector<std::pair<std::int64_t, QString>> deleted_;
    JobTracker* deletions_ = nullptr; ///< one deletion at a time, each on its own library connection
    JobTracker* demoBuild_ = nullptr; ///< building the demo library
};

} // namespace routepack::views
