// Deleting and renaming traces, windows and saved runs from the studio (the library tree's context
// menu, F2): a question names what goes, the library changes in one transaction
// (storage/library_edit.cpp) - a deletion as a background job on a connection of its own, a rename
// on the GUI thread (one row) - and the views drop what they showed of it.
#include "views/studio_window.h"

#include "views/library/library_tree_model.h"
#include "views/library/sample_pane.h"
#include "views/plan/plan_views.h"
#include "views/widgets/gui_text.h"

#include <QAction>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QTreeView>

namespace routepack::views {

namespace {

/// "2 windows, 3 saved runs (3 plans), 16 samples": what a delete removes besides the node itself.
QString removalText(const storage::Removal& r) {
    QStringList parts;
    const auto count = [](std::size_t n, const QString& one, const QString& many) {
        return n == 1 ? one : many.arg(n);
    };
    if (r.windows > 0) parts << count(r.windows, QObject::tr("1 window"), QObject::tr("%1 windows"));
    if (r.runs > 0) parts << count(r.runs, QObject::tr("1 saved run"), QObject::tr("%1 saved runs"));
    if (r.samples > 0) parts << count(r.samples, QObject::tr("1 sample"), QObject::tr("%1 samples"));
    return parts.isEmpty() ? QObject::tr("nothing else") : parts.join(QStringLiteral(", "));
}

} // namespace

bool StudioWindow::deletionRunning(const QString& what) {
    if (deletions_->runningCount() + deletions_->pendingCount() == 0) return false;
    setStatus(tr("A deletion is running: wait for it before you %1.").arg(what), true);
    return true;
}

bool StudioWindow::libraryEditable(const QString& what) {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return false;
    }
    if (lib_->read_only()) {
        setStatus(tr("This library is read-only: cannot %1.").arg(what), true);
        return false;
    }
    if (deletionRunning(what)) return false;
    // Restores of saved runs only read: they are dropped (a plan of what changes would be stale). A
    // planner job would save its run into what changes: the change waits for it.
    const int jobs = (jobs_->currentJob() != 0 ? 1 : 0) + jobs_->queuedCount();
    if (jobs_->isBusy() && jobs > replay_.pendingRestores()) {
        setStatus(tr("A job is running: wait for it or cancel it (Esc) before you %1.").arg(what), true);
        return false;
    }
    if (jobs > 0) jobs_->invalidate();
    return true;
}

void StudioWindow::libraryEdited(const QString& trace, const QString& window) {
    clearPlan();
    samplePane_->reset();
    refreshLibrary();
    QModelIndex target = window.isEmpty() ? tree_->traceIndex(trace) : tree_->windowIndex(trace, window);
    const auto& snap = tree_->snapshot();
    if (!target.isValid() && !snap.windows.empty())
        target = tree_->windowIndex(QString::fromStdString(snap.windows.front().trace),
                                    QString::fromStdString(snap.windows.front().name));
    if (!target.isValid() && !snap.traces.empty())
        target = tree_->traceIndex(QString::fromStdString(snap.traces.front().name));
    if (!target.isValid()) {
        samplePane_->setHeadingText(tr("Select a trace or a window in the library."));
        updateRunView();
        updateActions();
        return;
    }
    {
        const QSignalBlocker block(treeView_->selectionModel());
        treeView_->setCurrentIndex(target);
    }
    onTreeSelection();
}

quint64 StudioWindow::startDeletion(const QString& what, std::function<storage::Removal(storage::Library&)> work,
                                    std::function<void(const storage::Removal&)> done) {
    const QString file = libraryPath();
    setStatus(tr("Deleting %1…").arg(what));
    jobProgress_->setRange(0, 0); // busy: a deletion reports no progress
    jobProgress_->show();
    auto ended = [this] {
        jobProgress_->setRange(0, 1000);
        if (!jobs_->isBusy()) jobProgress_->hide();
    };
    return deletions_->start<storage::Removal>(
        [file, work = std::move(work)](JobContext&) {
            const auto lib = storage::Library::open(file.toStdString(), storage::OpenMode::ReadWrite);
            return work(*lib);
        },
        [this, file, ended, done = std::move(done)](quint64, const std::shared_ptr<const storage::Removal>& removed) {
            ended();
            if (libraryPath() == file) done(*removed);
        },
        [this, file, what, ended](quint64, const JobFailure& failure) {
            ended();
            if (libraryPath() != file) return;
            setStatus(tr("Cannot delete %1: %2").arg(what, failure.text), true);
            refreshLibrary();
        });
}

quint64 StudioWindow::deleteTrace(const QString& trace, bool confirm) {
    if (!libraryEditable(tr("delete trace %1").arg(trace))) return 0;
    const std::string name = trace.toStdString();
    try {
        const storage::Removal r = lib_->trace_removal(name);
        if (confirm && QMessageBox::question(this, tr("Delete trace"),
                                             tr("Delete trace %1 from %2 with %3? This cannot be undone.")
                                                 .arg(trace, QFileInfo(libraryPath()).fileName(), removalText(r))) !=
                           QMessageBox::Yes)
            return 0;
    } catch (const std::exception& e) {
        setStatus(tr("Cannot delete trace %1: %2").arg(trace, guiErrorText(e)), true);
        return 0;
    }
    return startDeletion(
        tr("trace %1").arg(trace), [name](storage::Library& lib) { return lib.delete_trace(name); },
        [this, trace, name](const storage::Removal& done) {
            replay_.forget([&](qint64, const PlanResult& p) { return p.trace_name == name; });
            libraryEdited({}, {});
            setStatus(tr("Deleted trace %1 with %2.").arg(trace, removalText(done)));
        });
}

quint64 StudioWindow::deleteWindow(const QString& trace, const QString& window, bool confirm) {
    if (!libraryEditable(tr("delete window %1").arg(window))) return 0;
    const std::string t = trace.toStdString(), w = window.toStdString();
    try {
        storage::Removal r = lib_->window_removal(t, w);
        r.windows = 0; // what goes besides the window
        if (confirm && QMessageBox::question(this, tr("Delete window"),
                                             tr("Delete window %1 of trace %2 with %3? The trace's samples stay. "
                                                "This cannot be undone.")
                                                 .arg(window, trace, removalText(r))) != QMessageBox::Yes)
            return 0;
    } catch (const std::exception& e) {
        setStatus(tr("Cannot delete window %1: %2").arg(window, guiErrorText(e)), true);
        return 0;
    }
    return startDeletion(
        tr("window %1").arg(window), [t, w](storage::Library& lib) { return lib.delete_window(t, w); },
        [this, trace, window, t, w](storage::Removal done) {
            done.windows = 0;
            replay_.forget([&](qint64, const PlanResult& p) { return p.trace_name == t && p.window_name == w; });
            libraryEdited(trace, {});
            setStatus(tr("Deleted window %1 of trace %2 with %3.").arg(window, trace, removalText(done)));
        });
}

quint64 StudioWindow::deleteRun(qint64 runId, bool confirm) {
    if (!libraryEditable(tr("delete run %1").arg(runId))) return 0;
    storage::RunEntry run;
    try {
        run = lib_->run(runId);
        if (confirm &&
            QMessageBox::question(this, tr("Delete run"),
                                  tr("Delete run %1 of %2/%3 (%4) with its plan? This cannot be undone.")
                                      .arg(runId)
                                      .arg(QString::fromStdString(run.trace), QString::fromStdString(run.window),
                                           QString::fromStdString(run.status))) != QMessageBox::Yes)
            return 0;
    } catch (const std::exception& e) {
        setStatus(tr("Cannot delete run %1: %2").arg(runId).arg(guiErrorText(e)), true);
        return 0;
    }
    const QString trace = QString::fromStdString(run.trace), window = QString::fromStdString(run.window);
    return startDeletion(
        tr("run %1").arg(runId), [runId](storage::Library& lib) { return lib.delete_run(runId); },
        [this, runId, trace, window](const storage::Removal&) {
            replay_.forget([&](qint64 id, const PlanResult&) { return id == runId; });
            libraryEdited(trace, window);
            setStatus(tr("Deleted run %1 of %2/%3.").arg(runId).arg(trace, window));
        });
}

bool StudioWindow::renameTrace(const QString& trace, const QString& newName) {
    if (!libraryEditable(tr("rename trace %1").arg(trace))) return false;
    QString name = newName;
    if (name.isEmpty()) {
        bool ok = false;
        name = QInputDialog::getText(this, tr("Rename trace"), tr("New name of trace %1:").arg(trace),
                                     QLineEdit::Normal, trace, &ok)
                   .trimmed();
        if (!ok || name.isEmpty() || name == trace) return false;
    }
    const std::string old = trace.toStdString();
    try {
        lib_->rename_trace(old, name.toStdString());
    } catch (const std::exception& e) {
        setStatus(tr("Cannot rename trace %1: %2").arg(trace, guiErrorText(e)), true);
        return false;
    }
    replay_.forget([&](qint64, const PlanResult& p) { return p.trace_name == old; });
    libraryEdited(name, {});
    setStatus(tr("Trace %1 renamed to %2 (its saved plans name it so too).").arg(trace, name));
    return true;
}

bool StudioWindow::renameWindow(const QString& trace, const QString& window, const QString& newName) {
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
    const std::string t = trace.toStdString(), old = window.toStdString();
    try {
        lib_->rename_window(t, old, name.toStdString());
    } catch (const std::exception& e) {
        setStatus(tr("Cannot rename window %1: %2").arg(window, guiErrorText(e)), true);
        return false;
    }
    replay_.forget([&](qint64, const PlanResult& p) { return p.trace_name == t && p.window_name == old; });
    libraryEdited(trace, name);
    setStatus(tr("Window %1 of trace %2 renamed to %3 (its saved plans name it so too).").arg(window, trace, name));
    return true;
}

bool StudioWindow::renameRun(qint64 runId, const QString& newName) {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return false;
    }
    if (lib_->read_only()) {
        setStatus(tr("This library is read-only: cannot %1.").arg(tr("rename run %1").arg(runId)), true);
        return false;
    }
    if (deletionRunning(tr("rename run %1").arg(runId))) return false;
    QString name = newName.trimmed();
    if (newName.isEmpty()) {
        QString old;
        for (const auto& r : tree_->snapshot().runs)
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
        setStatus(tr("Cannot rename run %1: %2").arg(runId).arg(guiErrorText(e)), true);
        return false;
    }
    refreshLibrary();
    updateCompare();
    setStatus(tr("Run %1 renamed to %2.").arg(runId).arg(name));
    return true;
}

void StudioWindow::renameCurrentNode() {
    const QModelIndex index = treeView_->currentIndex();
    if (!index.isValid() || !lib_) return;
    const int kind = index.data(KindRole).toInt();
    if (kind == LibraryTreeModel::TraceNode)
        renameTrace(index.data(TraceRole).toString());
    else if (kind == LibraryTreeModel::WindowNode)
        renameWindow(index.data(TraceRole).toString(), index.data(WindowRole).toString());
    else if (kind == LibraryTreeModel::RunNode)
        renameRun(index.data(RunIdRole).toLongLong());
}

QList<QAction*> StudioWindow::libraryActions(const QModelIndex& index, QObject* parent) {
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

} // namespace routepack::views
