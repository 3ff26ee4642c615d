// Deleting and renaming traces, windows and saved runs from the studio (the library tree's context
// menu): a question names what goes, the library changes in one transaction
// (storage/library_edit.cpp), and the views drop what they showed of it.
#include "views/studio_window.h"

#include "views/gui_text.h"
#include "views/library_tree_model.h"
#include "views/plan_views.h"
#include "views/sample_pane.h"

#include <QAction>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QMessageBox>
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

bool StudioWindow::libraryEditable(const QString& what) {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return false;
    }
    if (lib_->read_only()) {
        setStatus(tr("This library is read-only: cannot %1.").arg(what), true);
        return false;
    }
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

bool StudioWindow::deleteTrace(const QString& trace, bool confirm) {
    if (!libraryEditable(tr("delete trace %1").arg(trace))) return false;
    const std::string name = trace.toStdString();
    try {
        const storage::Removal r = lib_->trace_removal(name);
        if (confirm && QMessageBox::question(this, tr("Delete trace"),
                                             tr("Delete trace %1 from %2 with %3? This cannot be undone.")
                                                 .arg(trace, QFileInfo(libraryPath()).fileName(), removalText(r))) !=
                           QMessageBox::Yes)
            return false;
        const storage::Removal done = lib_->delete_trace(name);
        replay_.forget([&](qint64, const PlanResult& p) { return p.trace_name == name; });
        libraryEdited({}, {});
        setStatus(tr("Deleted trace %1 with %2.").arg(trace, removalText(done)));
        return true;
    } catch (const std::exception& e) {
        setStatus(tr("Cannot delete trace %1: %2").arg(trace, guiErrorText(e)), true);
        return false;
    }
}

bool StudioWindow::deleteWindow(const QString& trace, const QString& window, bool confirm) {
    if (!libraryEditable(tr("delete window %1").arg(window))) return false;
    const std::string t = trace.toStdString(), w = window.toStdString();
    try {
        storage::Removal r = lib_->window_removal(t, w);
        r.windows = 0; // what goes besides the window
        if (confirm && QMessageBox::question(this, tr("Delete window"),
                                             tr("Delete window %1 of trace %2 with %3? The trace's samples stay. "
                                                "This cannot be undone.")
                                                 .arg(window, trace, removalText(r))) != QMessageBox::Yes)
            return false;
        storage::Removal done = lib_->delete_window(t, w);
        done.windows = 0;
        replay_.forget([&](qint64, const PlanResult& p) { return p.trace_name == t && p.window_name == w; });
        libraryEdited(trace, {});
        setStatus(tr("Deleted window %1 of trace %2 with %3.").arg(window, trace, removalText(done)));
        return true;
    } catch (const std::exception& e) {
        setStatus(tr("Cannot delete window %1: %2").arg(window, guiErrorText(e)), true);
        return false;
    }
}

bool StudioWindow::deleteRun(qint64 runId, bool confirm) {
    if (!libraryEditable(tr("delete run %1").arg(runId))) return false;
    try {
        const storage::RunEntry run = lib_->run(runId);
        if (confirm &&
            QMessageBox::question(this, tr("Delete run"),
                                  tr("Delete run %1 of %2/%3 (%4) with its plan? This cannot be undone.")
                                      .arg(runId)
                                      .arg(QString::fromStdString(run.trace), QString::fromStdString(run.window),
                                           QString::fromStdString(run.status))) != QMessageBox::Yes)
            return false;
        lib_->delete_run(runId);
        replay_.forget([&](qint64 id, const PlanResult&) { return id == runId; });
        libraryEdited(QString::fromStdString(run.trace), QString::fromStdString(run.window));
        setStatus(tr("Deleted run %1 of %2/%3.")
                      .arg(runId)
                      .arg(QString::fromStdString(run.trace), QString::fromStdString(run.window)));
        return true;
    } catch (const std::exception& e) {
        setStatus(tr("Cannot delete run %1: %2").arg(runId).arg(guiErrorText(e)), true);
        return false;
    }
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
        add(tr("Delete run…"), [this, run] { deleteRun(run); });
    }
    return out;
}

} // namespace routepack::views
