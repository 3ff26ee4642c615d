// The studio window's run planning: several windows of a trace planned as one chained job
// (PlanJobQueue::enqueueRun, as `routepack sweep` plans them), its progress per window and overall,
// and the Run view following the steps as they are saved.
#include "views/studio_window.h"

#include "views/dialogs/topology_editor.h"
#include "views/library/library_tree_model.h"
#include "views/run/run_view.h"
#include "views/widgets/gui_text.h"

#include <QItemSelectionModel>
#include <QProgressBar>
#include <QTabWidget>
#include <QToolButton>
#include <QTreeView>

#include <set>

namespace routepack::views {

void StudioWindow::connectRunJobs() {
    connect(jobs_, &PlanJobQueue::runProgress, this,
            [this](quint64 job, int index, int count, const QString& stage, double window, double overall) {
                jobProgress_->setValue(static_cast<int>(1000 * overall));
                lastProgress_ = {job, stage, overall};
                runProgress_ = {job, index, count, window};
                showProgress();
            });
    connect(jobs_, &PlanJobQueue::runStepFinished, this,
            [this](quint64 job, int index, int count, const QString& window, qint64 runId, double maxU) {
                // The saved step joins the tree, and the Run view reads the series again.
                if (runId > 0) refreshLibrary();
                setStatus(tr("Run job %1: window %2 of %3 (%4) planned: max U %5%6")
                              .arg(job)
                              .arg(index + 1)
                              .arg(count)
                              .arg(window)
                              .arg(maxU, 0, 'f', 4)
                              .arg(runId > 0 ? tr(", saved as run %1").arg(runId) : QString()));
            });
    connect(jobs_, &PlanJobQueue::runFinished, this, [this](const RunPlanResult& r) {
        refreshLibrary();
        resultTabs_->setCurrentWidget(runView_);
        QString runs;
        if (!r.runIds.empty() && r.runIds.front() > 0)
            runs = tr(", runs %1..%2").arg(r.runIds.front()).arg(r.runIds.back());
        if (!r.error.isEmpty()) {
            setStatus(tr("Run of %1 stopped after %2 of %3 windows%4: %5")
                          .arg(r.trace)
                          .arg(r.plans.size())
                          .arg(r.windows.size())
                          .arg(runs, r.error),
                      true);
            return;
        }
        setStatus(tr("Run of %1 %2: %3 of %4 windows planned in %5 s%6")
                      .arg(r.trace)
                      .arg(r.cancelled ? tr("cancelled (the finished windows are kept)") : tr("finished"))
                      .arg(r.plans.size())
                      .arg(r.windows.size())
                      .arg(r.seconds, 0, 'f', 2)
                      .arg(runs));
    });
}

quint64 StudioWindow::planRun(const QString& trace, const QStringList& windows) {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return 0;
    }
    if (windows.isEmpty()) {
        setStatus(tr("Trace %1 has no window to plan (define windows with Ctrl+D).").arg(trace), true);
        return 0;
    }
    const auto setup = formSetup();
    if (!setup) return 0;
    RunPlanRequest rq;
    rq.library = libraryPath();
    rq.trace = trace;
    rq.windows = windows;
    rq.topologyName = editor_->topologyName().isEmpty() ? QStringLiteral("topology") : editor_->topologyName();
    rq.topology = setup->first;
    rq.budgets = setup->second;
    rq.saveRuns = !lib_->read_only();
    resultTabs_->setCurrentWidget(runView_); // the steps appear there as they are saved
    const quint64 id = jobs_->enqueueRun(rq);
    if (jobs_->currentJob() != id) setStatus(tr("Job %1 queued (%2 waiting).").arg(id).arg(jobs_->queuedCount()));
    updateActions();
    return id;
}

quint64 StudioWindow::planSelectedRun() {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return 0;
    }
    if (deletionRunning(tr("plan"))) return 0;
    std::set<QString> traces;
    QStringList windows;
    QString wholeTrace;
    for (const QModelIndex& i : treeView_->selectionModel()->selectedRows()) {
        const int kind = i.data(KindRole).toInt();
        if (kind == LibraryTreeModel::ClusterRunNode) continue; // swept elsewhere: nothing to plan here
        traces.insert(i.data(TraceRole).toString());
        if (kind == LibraryTreeModel::TraceNode)
            wholeTrace = i.data(TraceRole).toString();
        else if (!windows.contains(i.data(WindowRole).toString()))
            windows << i.data(WindowRole).toString();
    }
    if (traces.size() != 1) {
        setStatus(traces.empty() ? tr("Select windows (or a trace) to plan as a run.")
                                 : tr("Select windows of one trace to plan as a run."),
                  true);
        return 0;
    }
    if (!wholeTrace.isEmpty()) {
        // "Plan every window": the trace's windows as of the tree's snapshot.
        windows.clear();
        for (const auto& w : tree_->snapshot().windows)
            if (QString::fromStdString(w.trace) == wholeTrace) windows << QString::fromStdString(w.name);
    }
    return planRun(*traces.begin(), windows);
}

} // namespace routepack::views
