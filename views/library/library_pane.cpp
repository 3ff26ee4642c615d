// The library dock: the tree and its filter line, deleting and renaming what it lists (a question
// names what goes, the library changes in one transaction, storage/library_edit.cpp: a deletion as a
// background job on a connection of its own, a rename on the GUI thread), and the recent libraries.
#include "views/library/library_pane.h"

#include "storage/demo.h"
#include "views/jobs/job_tracker.h"
#include "views/library/library_watch.h"
#include "views/widgets/gui_text.h"
#include "views/widgets/item_actions.h"

#include <QAction>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QSignalBlocker>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTreeView>
#include <QVBoxLayout>

namespace routepack::views {

namespace {

/// How many libraries File > Open Recent lists.
constexpr int kRecentLibraries = 10;

const QString kRecentKey = QStringLiteral("library/recent");

/// Esc in a line edit with text clears it (and is not the studio's Cancel job); in an empty one it
/// goes on to the window's shortcuts.
class EscClears : public QObject {
public:
    using QObject::QObject;
    bool eventFilter(QObject* watched, QEvent* e) override {
        auto* edit = qobject_cast<QLineEdit*>(watched);
        if (!edit || (e->type() != QEvent::ShortcutOverride && e->type() != QEvent::KeyPress))
            return QObject::eventFilter(watched, e);
        auto* k = static_cast<QKeyEvent*>(e);
        if (k->key() != Qt::Key_Escape || k->modifiers() != Qt::NoModifier || edit->text().isEmpty())
            return QObject::eventFilter(watched, e);
        if (e->type() == QEvent::KeyPress) edit->clear();
        e->accept();
        return true;
    }
};

/// "2 windows, 3 saved runs (3 plans), 16 samples": what a delete removes besides the node itself.
QString removalText(const storage::Removal& r) {
    QStringList parts;
    const auto count = [](std::size_t n, const QString& one, const QString& many) {
        return n == 1 ? one : many.arg(n);
    };
    if (r.windows > 0) parts << count(r.windows, QObject::tr("1 window"), QObject::tr("%1 windows"));
    if (r.runs > 0) parts << count(r.runs, QObject::tr("1 saved run"), QObject::tr("%1 saved runs"));
    if (r.samples > 0) parts << count(r.samples, QObject::tr("1 sample"), QObject::tr("%1 samples"));
    if (r.measured > 0) parts << count(r.measured, QObject::tr("1 measured step"), QObject::tr("%1 measured steps"));
    return parts.isEmpty() ? QObject::tr("nothing else") : parts.join(QStringLiteral(", "));
}

} // namespace

LibraryPane::LibraryPane(const QString& settingsOrganization, const QString& settingsApplication, QWidget* parent)
    : QWidget(parent), organization_(settingsOrganization), application_(settingsApplication),
      model_(new LibraryTreeModel(this)), view_(new QTreeView(this)), filter_(new QLineEdit(this)),
      deletions_(new JobTracker(JobTracker::Policy::EveryResult, 1, false, this)),
      demoBuild_(new JobTracker(JobTracker::Policy::EveryResult, 1, false, this)) {
    setObjectName(QStringLiteral("libraryPane"));
    model_->setObjectName(QStringLiteral("libraryModel"));
    deletions_->setObjectName(QStringLiteral("deletionJobs"));
    view_->setObjectName(QStringLiteral("libraryTree"));
    view_->setModel(model_);
    view_->setUniformRowHeights(true);
    // Several windows (or a trace) at once: Plan > Plan run plans them as the steps of one run.
    view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    view_->header()->setStretchLastSection(true);
    view_->setColumnWidth(LibraryTreeModel::Name, 150);
    connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this] { Q_EMIT currentChanged(); });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    filter_->setObjectName(QStringLiteral("libraryFilter"));
    filter_->setPlaceholderText(tr("Filter traces, windows, runs (Ctrl+F)"));
    filter_->setClearButtonEnabled(true);
    filter_->setToolTip(tr("Keeps the rows whose name or details contain this text (any case), with their "
                           "traces and windows; Esc clears it"));
    connect(filter_, &QLineEdit::textChanged, this, [this] {
        applyTreeFilter(view_, filter_->text());
        dropHiddenSelection();
    });
    filter_->installEventFilter(new EscClears(filter_));
    layout->addWidget(filter_);
    layout->addWidget(view_);
    installTableActions(view_,
                        [this](QMenu* menu, const QPoint& pos) { return libraryActions(view_->indexAt(pos), menu); });
    auto* rename = new QAction(tr("Rename"), view_);
    rename->setShortcut(Qt::Key_F2);
    rename->setShortcutContext(Qt::WidgetShortcut);
    connect(rename, &QAction::triggered, this, &LibraryPane::renameCurrentNode);
    view_->addAction(rename);
    watch_ = new LibraryWatch(1000, this);
    connect(watch_, &LibraryWatch::changed, this, &LibraryPane::refresh);
    reload_ = new QAction(tr("&Reload library"), this);
    reload_->setObjectName(QStringLiteral("reloadLibrary"));
    reload_->setShortcut(QKeySequence::Refresh);
    reload_->setToolTip(tr("Read the library again (what other programs stored appears by itself within a second)"));
    connect(reload_, &QAction::triggered, this, [this] {
        refresh();
        Q_EMIT status(tr("Library %1 read again.").arg(libraryPath()), false);
    });
    undoDelete_ = new QAction(tr("&Undo delete"), this);
    undoDelete_->setObjectName(QStringLiteral("undoDelete"));
    undoDelete_->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_Z));
    connect(undoDelete_, &QAction::triggered, this, [this] { undoDelete(); });
    updateUndo();
}

LibraryPane::~LibraryPane() {
    demoBuild_->shutdown();
    deletions_->shutdown();
}

std::unique_ptr<QSettings> LibraryPane::settings() const {
    return std::make_unique<QSettings>(organization_, application_);
}

void LibraryPane::setLibrary(storage::Library* lib) {
    lib_ = lib;
    watch_->setFile(libraryPath());
    deleted_.clear();
    trash_.reset();
    if (lib_ && !lib_->read_only()) {
        trash_ = std::make_unique<QTemporaryDir>();
        if (!trash_->isValid()) trash_.reset(); // deletes then cannot be undone; they still work
    }
    updateUndo();
}

QStringList LibraryPane::deletedItems() const {
    QStringList out;
    for (const auto& d : deleted_)
        out << d.second;
    return out;
}

void LibraryPane::updateUndo() {
    undoDelete_->setEnabled(!deleted_.empty());
    undoDelete_->setText(deleted_.empty() ? tr("&Undo delete") : tr("&Undo delete of %1").arg(deleted_.back().second));
}

quint64 LibraryPane::undoDelete() {
    if (deleted_.empty()) {
        Q_EMIT status(tr("Nothing to undo: no deletion of this library is kept."), true);
        return 0;
    }
    const auto [item, what] = deleted_.back();
    if (!libraryEditable(tr("restore %1").arg(what))) return 0;
    deleted_.pop_back();
    updateUndo();
    const QString file = libraryPath();
    const std::filesystem::path trash = trash_->filePath(QStringLiteral("trash.sqlite")).toStdString();
    Q_EMIT status(tr("Restoring %1…").arg(what), false);
    Q_EMIT busyChanged(true);
    return deletions_->start<std::string>(
        [file, trash, item = item](JobContext&) {
            return storage::Library::open(file.toStdString(), storage::OpenMode::ReadWrite)
                ->restore_deleted(trash, item);
        },
        [this, file](quint64, const std::shared_ptr<const std::string>& restored) {
            Q_EMIT busyChanged(false);
            if (libraryPath() != file) return;
            Q_EMIT edited({}, {});
            Q_EMIT status(tr("Restored %1.").arg(QString::fromStdString(*restored)), false);
        },
        [this, file, what = what](quint64, const JobFailure& failure) {
            Q_EMIT busyChanged(false);
            if (libraryPath() != file) return;
            Q_EMIT status(tr("Cannot restore %1: %2").arg(what, failure.text), true);
            refresh();
        });
}

QString LibraryPane::libraryPath() const {
    return lib_ ? QString::fromStdString(lib_->path().string()) : QString();
}

bool LibraryPane::isOpen(const QString& file) const {
    if (!lib_ || file.isEmpty()) return false;
    const QFileInfo a(file), b(libraryPath());
    const QString ca = a.canonicalFilePath(), cb = b.canonicalFilePath();
    if (!ca.isEmpty() && !cb.isEmpty()) return ca == cb;
    return a.absoluteFilePath() == b.absoluteFilePath();
}

void LibraryPane::setEditGuard(std::function<bool(const QString& what)> guard) {
    guard_ = std::move(guard);
}

QModelIndex LibraryPane::currentIndex() const {
    return view_->currentIndex();
}

QModelIndexList LibraryPane::selectedRows() const {
    return view_->selectionModel()->selectedRows();
}

qint64 LibraryPane::selectedRunId() const {
    const QModelIndex cur = view_->currentIndex();
    if (!cur.isValid() || cur.data(KindRole).toInt() != LibraryTreeModel::RunNode) return 0;
    const storage::RunEntry* run = model_->runAt(cur.sibling(cur.row(), 0));
    return run ? run->id : 0;
}

void LibraryPane::refresh() {
    if (!lib_) return;
    // Keep the selection across the reset.
    const QModelIndex cur = view_->currentIndex();
    const int kind = cur.isValid() ? cur.data(KindRole).toInt() : -1;
    const QString trace = cur.data(TraceRole).toString();
    const QString window = cur.data(WindowRole).toString();
    const qint64 run = cur.data(RunIdRole).toLongLong();
    const qint64 cluster = cur.data(ClusterRunRole).toLongLong();
    try {
        model_->setSnapshot(readLibrarySnapshot(*lib_));
    } catch (const std::exception& e) {
        Q_EMIT status(tr("Cannot read the library: %1").arg(guiErrorText(e)), true);
        return;
    }
    view_->expandAll();
    for (int c = 0; c < LibraryTreeModel::ColumnCount; ++c)
        view_->resizeColumnToContents(c);
    applyTreeFilter(view_, filter_->text());
    QModelIndex again;
    if (kind == LibraryTreeModel::RunNode)
        again = model_->runIndex(run);
    else if (kind == LibraryTreeModel::WindowNode)
        again = model_->windowIndex(trace, window);
    else if (kind == LibraryTreeModel::TraceNode)
        again = model_->traceIndex(trace);
    else if (kind == LibraryTreeModel::ClusterRunNode)
        again = model_->clusterRunIndex(cluster);
    if (again.isValid()) {
        QSignalBlocker block(view_->selectionModel());
        view_->setCurrentIndex(again);
    }
    dropHiddenSelection();
    Q_EMIT refreshed();
}

bool LibraryPane::selectTrace(const QString& trace) {
    const QModelIndex i = model_->traceIndex(trace);
    if (i.isValid()) view_->setCurrentIndex(i);
    return i.isValid();
}

bool LibraryPane::selectWindow(const QString& trace, const QString& window) {
    const QModelIndex i = model_->windowIndex(trace, window);
    if (i.isValid()) view_->setCurrentIndex(i);
    return i.isValid();
}

bool LibraryPane::selectRun(qint64 runId) {
    const QModelIndex i = model_->runIndex(runId);
    if (i.isValid()) view_->setCurrentIndex(i);
    return i.isValid();
}

void LibraryPane::setCurrentQuietly(const QModelIndex& index) {
    if (!index.isValid() || view_->currentIndex() == index) return;
    const QSignalBlocker block(view_->selectionModel());
    view_->setCurrentIndex(index);
    view_->viewport()->update();
}

bool LibraryPane::selectAfterEdit(const QString& trace, const QString& window) {
    refresh();
    QModelIndex target = window.isEmpty() ? model_->traceIndex(trace) : model_->windowIndex(trace, window);
    const auto& snap = model_->snapshot();
    if (!target.isValid() && !snap.windows.empty())
        target = model_->windowIndex(QString::fromStdString(snap.windows.front().trace),
                                     QString::fromStdString(snap.windows.front().name));
    if (!target.isValid() && !snap.traces.empty())
        target = model_->traceIndex(QString::fromStdString(snap.traces.front().name));
    if (!target.isValid()) return false;
    const QSignalBlocker block(view_->selectionModel());
    view_->setCurrentIndex(target);
    return true;
}

void LibraryPane::focusFilter() {
    filter_->setFocus(Qt::ShortcutFocusReason);
    filter_->selectAll();
}

void LibraryPane::openDemo() {
    if (demoBuild_->runningCount() > 0) return;
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/demo");
    const QString file = dir + QLatin1Char('/') + QString::fromLatin1(storage::kDemoLibraryFile);
    if (QFileInfo::exists(file)) {
        try {
            if (!storage::Library::open(file.toStdString(), storage::OpenMode::ReadOnly)
                     ->runs(storage::kDemoTrace, storage::kDemoWindow)
                     .empty()) {
                Q_EMIT demoReady(file);
                return;
            }
        } catch (const std::exception&) {
            // Incomplete or damaged: build it again below.
        }
    }
    Q_EMIT status(tr("Building the demo library in %1 (synthetic GRPO window: synth, import, window, plan)…").arg(dir),
                  false);
    Q_EMIT busyChanged(true);
    demoBuild_->start<bool>(
        [dir](JobContext&) {
            storage::build_demo(dir.toStdString());
            return true;
        },
        [this, file](quint64, const std::shared_ptr<const bool>&) {
            Q_EMIT busyChanged(false);
            Q_EMIT demoReady(file);
        },
        [this](quint64, const JobFailure& failure) {
            Q_EMIT busyChanged(false);
            Q_EMIT status(tr("Could not build the demo library: %1").arg(failure.text), true);
        });
}

// --- Deleting and renaming ---

bool LibraryPane::deletionRunning(const QString& what) {
    if (deletions_->runningCount() + deletions_->pendingCount() == 0) return false;
    Q_EMIT status(tr("A deletion is running: wait for it before you %1.").arg(what), true);
    return true;
}

bool LibraryPane::libraryEditable(const QString& what) {
    if (!lib_) {
        Q_EMIT status(tr("Open a library first."), true);
        return false;
    }
    if (lib_->read_only()) {
        Q_EMIT status(tr("This library is read-only: cannot %1.").arg(what), true);
        return false;
    }
    if (deletionRunning(what)) return false;
    return !guard_ || guard_(what);
}

quint64
LibraryPane::startDeletion(const QString& what,
                           std::function<storage::Removal(storage::Library&, const std::filesystem::path& trash)> work,
                           std::function<void(const storage::Removal&)> done) {
    const QString file = libraryPath();
    const std::filesystem::path trash =
        trash_ ? std::filesystem::path(trash_->filePath(QStringLiteral("trash.sqlite")).toStdString())
               : std::filesystem::path();
    Q_EMIT status(tr("Deleting %1…").arg(what), false);
    Q_EMIT busyChanged(true); // a deletion reports no progress
    return deletions_->start<storage::Removal>(
        [file, trash, work = std::move(work)](JobContext&) {
            const auto lib = storage::Library::open(file.toStdString(), storage::OpenMode::ReadWrite);
            return work(*lib, trash);
        },
        [this, file, what, done = std::move(done)](quint64, const std::shared_ptr<const storage::Removal>& removed) {
            Q_EMIT busyChanged(false);
            if (libraryPath() != file) return;
            if (removed->trash_item > 0) {
                deleted_.emplace_back(removed->trash_item, what);
                updateUndo();
            }
            done(*removed);
        },
        [this, file, what](quint64, const JobFailure& failure) {
            Q_EMIT busyChanged(false);
            if (libraryPath() != file) return;
            Q_EMIT status(tr("Cannot delete %1: %2").arg(what, failure.text), true);
            refresh();
        });
}

quint64 LibraryPane::deleteTrace(const QString& trace, bool confirm) {
    if (!libraryEditable(tr("delete trace %1").arg(trace))) return 0;
    const std::string name = trace.toStdString();
    try {
        const storage::Removal r = lib_->trace_removal(name);
        if (confirm &&
            QMessageBox::question(
                this, tr("Delete trace"),
                tr("Delete trace %1 from %2 with %3? Edit > Undo delete brings it back while this library is open.")
                    .arg(trace, QFileInfo(libraryPath()).fileName(), removalText(r))) != QMessageBox::Yes)
            return 0;
    } catch (const std::exception& e) {
        Q_EMIT status(tr("Cannot delete trace %1: %2").arg(trace, guiErrorText(e)), true);
        return 0;
    }
    return startDeletion(
        tr("trace %1").arg(trace),
        [name](storage::Library& lib, const std::filesystem::path& t) { return lib.delete_trace(name, t); },
        [this, trace](const storage::Removal& done) {
            Q_EMIT plansRemoved(trace, {}, 0);
            Q_EMIT edited({}, {});
            Q_EMIT status(tr("Deleted trace %1 with %2.").arg(trace, removalText(done)), false);
        });
}

quint64 LibraryPane::deleteWindow(const QString& trace, const QString& window, bool confirm) {
    if (!libraryEditable(tr("delete window %1").arg(window))) return 0;
    const std::string t = trace.toStdString(), w = window.toStdString();
    try {
        storage::Removal r = lib_->window_removal(t, w);
        r.windows = 0; // what goes besides the window
        if (confirm && QMessageBox::question(this, tr("Delete window"),
                                             tr("Delete window %1 of trace %2 with %3? The trace's samples stay. "
                                                "Edit > Undo delete brings it back while this library is open.")
                                                 .arg(window, trace, removalText(r))) != QMessageBox::Yes)
            return 0;
    } catch (const std::exception& e) {
        Q_EMIT status(tr("Cannot delete window %1: %2").arg(window, guiErrorText(e)), true);
        return 0;
    }
    return startDeletion(
        tr("window %1").arg(window),
        [t, w](storage::Library& lib, const std::filesystem::path& bin) { return lib.delete_window(t, w, bin); },
        [this, trace, window](storage::Removal done) {
            done.windows = 0;
            Q_EMIT plansRemoved(trace, window, 0);
            Q_EMIT edited(trace, {});
            Q_EMIT status(tr("Deleted window %1 of trace %2 with %3.").arg(window, trace, removalText(done)), false);
        });
}

quint64 LibraryPane::deleteRun(qint64 runId, bool confirm) {
    if (!libraryEditable(tr("delete run %1").arg(runId))) return 0;
    storage::RunEntry run;
    try {
        run = lib_->run(runId);
        if (confirm &&
            QMessageBox::question(this, tr("Delete run"),
                                  tr("Delete run %1 of %2/%3 (%4) with its plan? Edit > Undo delete brings it back "
                                     "while this library is open.")
                                      .arg(runId)
                                      .arg(QString::fromStdString(run.trace), QString::fromStdString(run.window),
                                           QString::fromStdString(run.status))) != QMessageBox::Yes)
            return 0;
    } catch (const std::exception& e) {
        Q_EMIT status(tr("Cannot delete run %1: %2").arg(runId).arg(guiErrorText(e)), true);
        return 0;
    }
    const QString trace = QString::fromStdString(run.trace), window = QString::fromStdString(run.window);
    return startDeletion(
        tr("run %1").arg(runId),
        [runId](storage::Library& lib, const std::filesystem::path& t) { return lib.delete_run(runId, t); },
        [this, runId, trace, window](const storage::Removal&) {
            Q_EMIT plansRemoved(trace, window, runId);
            Q_EMIT edited(trace, window);
            Q_EMIT status(tr("Deleted run %1 of %2/%3.").arg(runId).arg(trace, window), false);
        });
}

bool LibraryPane::renameTrace(const QString& trace, const QString& newName) {
    if (!libraryEditable(tr("rename trace %1").arg(trace))) return false;
    QString name = newName;
    if (name.isEmpty()) {
        bool ok = false;
        name = QInputDialog::getText(this, tr("Rename trace"), tr("New name of trace %1:").arg(trace),
                                     QLineEdit::Normal, trace, &ok)
                   .trimmed();
        if (!ok || name.isEmpty() || name == trace) return false;
    }
    try {
        lib_->rename_trace(trace.toStdString(), name.toStdString());
    } catch (const std::exception& e) {
        Q_EMIT status(tr("Cannot rename trace %1: %2").arg(trace, guiErrorText(e)), true);
        return false;
    }
    Q_EMIT plansRemoved(trace, {}, 0);
    Q_EMIT edited(name, {});
    Q_EMIT status(tr("Trace %1 renamed to %2 (its saved plans name it so too).").arg(trace, name), false);
    return true;
}

bool LibraryPane::renameWindow(const QString& trace, const QString& window, const QString& newName) {
    if (!libraryEditable(tr("rename window %1").arg(window))) return false;
    QString name = newName;
    if (name.isEmpty()) {
        bool ok = false;
        name = QInputDialog::getText(this, tr("Rename window"),
                                     tr("New name of window %1 of trace %2:").arg(window, trace), QLineEdit::Normal,
                                     window, &ok)
                   .trimmed();
        if (!ok || name.isEmpty() || name == window) return false;
    }
    try {
        lib_->rename_window(trace.toStdString(), window.toStdString(), name.toStdString());
    } catch (const std::exception& e) {
        Q_EMIT status(tr("Cannot rename window %1: %2").arg(window, guiErrorText(e)), true);
        return false;
    }
    Q_EMIT plansRemoved(trace, window, 0);
    Q_EMIT edited(trace, name);
    Q_EMIT status(tr("Window %1 of trace %2 renamed to %3 (its saved plans name it so too).").arg(window, trace, name),
                  false);
    return true;
}

bool LibraryPane::renameRun(qint64 runId, const QString& newName) {
    if (!lib_) {
        Q_EMIT status(tr("Open a library first."), true);
        return false;
    }
    if (lib_->read_only()) {
        Q_EMIT status(tr("This library is read-only: cannot %1.").arg(tr("rename run %1").arg(runId)), true);
        return false;
    }
    if (deletionRunning(tr("rename run %1").arg(runId))) return false;
    QString name = newName.trimmed();
    if (newName.isEmpty()) {
        QString old;
        for (const auto& r : model_->snapshot().runs)
            if (r.id == runId) old = QString::fromStdString(r.name);
        bool ok = false;
        name = QInputDialog::getText(this, tr("Rename run"),
                                     tr("Name of run %1 (shown beside its id; at most %2 characters):")
                                         .arg(runId)
                                         .arg(storage::Library::kMaxRunNameLength),
                                     QLineEdit::Normal, old, &ok)
                   .trimmed();
        if (!ok || name == old) return false;
    }
    try {
        lib_->rename_run(runId, name.toStdString());
    } catch (const std::exception& e) {
        Q_EMIT status(tr("Cannot rename run %1: %2").arg(runId).arg(guiErrorText(e)), true);
        return false;
    }
    refresh();
    Q_EMIT runRenamed(runId);
    Q_EMIT status(tr("Run %1 renamed to %2.").arg(runId).arg(name), false);
    return true;
}

bool LibraryPane::rowShown(const QModelIndex& index) const {
    for (QModelIndex i = index; i.isValid(); i = i.parent())
        if (view_->isRowHidden(i.row(), i.parent())) return false;
    return index.isValid();
}

void LibraryPane::dropHiddenSelection() {
    QItemSelectionModel* sel = view_->selectionModel();
    for (const QModelIndex& i : sel->selectedRows())
        if (!rowShown(i)) sel->select(i, QItemSelectionModel::Deselect | QItemSelectionModel::Rows);
}

void LibraryPane::renameCurrentNode() {
    const QModelIndex index = view_->currentIndex();
    if (!index.isValid() || !lib_) return;
    if (!rowShown(index)) {
        Q_EMIT status(tr("The selected row is hidden by the filter: clear the filter (Esc) or select a shown row."),
                      true);
        return;
    }
    const int kind = index.data(KindRole).toInt();
    if (kind == LibraryTreeModel::TraceNode)
        renameTrace(index.data(TraceRole).toString());
    else if (kind == LibraryTreeModel::WindowNode)
        renameWindow(index.data(TraceRole).toString(), index.data(WindowRole).toString());
    else if (kind == LibraryTreeModel::RunNode)
        renameRun(index.data(RunIdRole).toLongLong());
}

QList<QAction*> LibraryPane::libraryActions(const QModelIndex& index, QObject* parent) {
    QList<QAction*> out;
    if (!index.isValid() || !lib_) return out;
    const int kind = index.data(KindRole).toInt();
    const QString trace = index.data(TraceRole).toString();
    const QString window = index.data(WindowRole).toString();
    const bool writable = !lib_->read_only();
    auto add = [&](const QString& text, std::function<void()> f) {
        auto* a = new QAction(text, parent);
        a->setEnabled(writable);
        connect(a, &QAction::triggered, this, std::move(f));
        out << a;
    };
    if (kind == LibraryTreeModel::TraceNode) {
        add(tr("Rename trace…"), [this, trace] { renameTrace(trace); });
        add(tr("Delete trace…"), [this, trace] { deleteTrace(trace); });
    } else if (kind == LibraryTreeModel::WindowNode) {
        add(tr("Rename window…"), [this, trace, window] { renameWindow(trace, window); });
        add(tr("Delete window…"), [this, trace, window] { deleteWindow(trace, window); });
    } else if (kind == LibraryTreeModel::RunNode) {
        const qint64 run = index.data(RunIdRole).toLongLong();
        add(tr("Rename run…"), [this, run] { renameRun(run); });
        add(tr("Delete run…"), [this, run] { deleteRun(run); });
    }
    return out;
}

// --- File > Open Recent ---

QStringList LibraryPane::recentLibraries() const {
    auto s = settings();
    const QStringList kept = s->value(kRecentKey).toStringList();
    QStringList out;
    for (const QString& f : kept)
        if (!f.isEmpty() && QFileInfo(f).isFile() && !out.contains(f)) out << f;
    if (out != kept) s->setValue(kRecentKey, out);
    return out;
}

void LibraryPane::rememberRecent(const QString& file) {
    QStringList list = recentLibraries();
    list.removeAll(file);
    list.prepend(file);
    while (list.size() > kRecentLibraries)
        list.removeLast();
    settings()->setValue(kRecentKey, list);
    fillRecentMenu();
}

void LibraryPane::setRecentMenu(QMenu* menu) {
    recentMenu_ = menu;
    connect(recentMenu_, &QMenu::aboutToShow, this, &LibraryPane::fillRecentMenu);
    fillRecentMenu();
}

void LibraryPane::fillRecentMenu() {
    if (!recentMenu_) return;
    recentMenu_->clear();
    const QStringList list = recentLibraries();
    for (int i = 0; i < list.size(); ++i) {
        const QString f = list[i];
        QAction* a =
            recentMenu_->addAction((i < 9 ? QStringLiteral("&%1 ").arg(i + 1) : QString()) + QFileInfo(f).fileName() +
                                   QStringLiteral(" — ") + QFileInfo(f).absolutePath());
        a->setData(f);
        a->setToolTip(f);
        connect(a, &QAction::triggered, this, [this, f] { Q_EMIT openRequested(f); });
    }
    if (list.isEmpty()) recentMenu_->addAction(tr("(no library opened yet)"))->setEnabled(false);
    recentMenu_->addSeparator();
    QAction* clear = recentMenu_->addAction(tr("Clear the list"));
    clear->setEnabled(!list.isEmpty());
    connect(clear, &QAction::triggered, this, [this] {
        settings()->remove(kRecentKey);
        fillRecentMenu();
    });
}

} // namespace routepack::views
