// The studio window's planning entry points (the planner queue itself is views/planning_controller.h):
// planning the selected window or a run of windows from the form's setup, cancelling, comparing saved
// runs, a cluster run's step in the plan views and the import of its file.
#include "views/studio_window.h"

#include "core/model/model.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/setup_pane.h"
#include "views/dialogs/topology_editor.h"
#include "views/library/library_pane.h"
#include "views/library/sample_pane.h"
#include "views/plan/plan_views.h"
#include "views/planning_controller.h"
#include "views/results_pane.h"
#include "views/run/run_view.h"

#include <set>

namespace routepack::views {

quint64 StudioWindow::runPlanner() {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return 0;
    }
    if (library_->deletionRunning(tr("plan"))) return 0;
    const QModelIndex cur = library_->currentIndex();
    const int kind = cur.isValid() ? cur.data(KindRole).toInt() : -1;
    if (kind != LibraryTreeModel::WindowNode && kind != LibraryTreeModel::RunNode) {
        setStatus(tr("Select a window to plan (define one with Ctrl+D)."), true);
        return 0;
    }
    const auto setup = setup_->setup();
    if (!setup) return 0;
    PlanJobRequest rq;
    rq.library = libraryPath();
    rq.trace = cur.data(TraceRole).toString();
    rq.window = cur.data(WindowRole).toString();
    rq.topologyName = setup_->topologyName();
    rq.topology = setup->first;
    rq.budgets = setup->second;
    rq.saveRun = !lib_->read_only();
    const quint64 id = planning_->plan(rq);
    setup_->editor()->markClean(); // the form's edits are this run's setup now
    updateActions();
    return id;
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
    const auto setup = setup_->setup();
    if (!setup) return 0;
    RunPlanRequest rq;
    rq.library = libraryPath();
    rq.trace = trace;
    rq.windows = windows;
    rq.topologyName = setup_->topologyName();
    rq.topology = setup->first;
    rq.budgets = setup->second;
    rq.saveRuns = !lib_->read_only();
    results_->setCurrentWidget(results_->runView()); // the steps appear there as they are saved
    const quint64 id = planning_->planRun(rq);
    updateActions();
    return id;
}

quint64 StudioWindow::planSelectedRun() {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return 0;
    }
    if (library_->deletionRunning(tr("plan"))) return 0;
    std::set<QString> traces;
    QStringList windows;
    QString wholeTrace;
    for (const QModelIndex& i : library_->selectedRows()) {
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
        for (const auto& w : library_->snapshot().windows)
            if (QString::fromStdString(w.trace) == wholeTrace) windows << QString::fromStdString(w.name);
    }
    return planRun(*traces.begin(), windows);
}

void StudioWindow::cancelJob() {
    planning_->cancel();
}

int StudioWindow::compareSavedRuns() {
    return results_->compareSavedRuns();
}

qint64 StudioWindow::shownRunId() const {
    return results_->shownRun();
}

quint64 StudioWindow::openClusterStep(const QString& planFile, const QString& stepPath, const QString& window) {
    return planning_->openClusterStep({results_->runView()->clusterRun(), planFile, stepPath, window});
}

void StudioWindow::showClusterStep(const ClusterStepRef& step, const ClusterStepPlan& opened) {
    results_->setCurrentWidget(results_->planView());
    const QString label = tr("Step %1 of cluster run %2").arg(step.window).arg(step.clusterRun);
    const QString counts = QString::fromStdString(opened.counts_trace);
    if (opened.window) {
        samplePane_->showSamples(opened.window, counts, tr("%1 (samples of trace %2)").arg(label, counts));
        showPlan(opened.plan, opened.window, 0);
        setStatus(tr("%1: plan %2, with the counts of trace %3.").arg(label, step.planFile, counts));
        return;
    }
    samplePane_->reset(); // the samples shown were another window's
    samplePane_->setHeadingText(
        tr("%1: the library holds no counts of its samples (Import step… imports them).").arg(label));
    results_->showStepWithoutCounts(step, opened);
    updateActions();
    setStatus(tr("%1: plan %2, without counts (%3).")
                  .arg(label, step.planFile, QString::fromStdString(opened.why_no_counts)));
}

ImportDialog* StudioWindow::importShownStep() {
    const std::optional<ClusterStepRef>& shown = results_->shownStep();
    if (!shown || shown->stepPath.isEmpty()) {
        setStatus(tr("No cluster step without counts is shown: click a step of a cluster run in the Run tab."), true);
        return nullptr;
    }
    const auto plan = results_->planView()->plan();
    ImportDialog* dlg = showImportDialog();
    if (!dlg || !plan) return dlg;
    dlg->setInputs({shown->stepPath});
    dlg->setTraceName(QString::fromStdString(plan->trace_name) + QLatin1Char('-') + shown->window);
    const ModelDescription& m = plan->model;
    bool shipped = false;
    try {
        const ModelDescription k = known_model(m.name);
        shipped = k.experts == m.experts && k.top_k == m.top_k && k.moe_layers == m.moe_layers;
    } catch (const std::exception&) {
        shipped = false; // not a shipped model: give its fields
    }
    if (shipped) {
        dlg->setKnownModel(QString::fromStdString(m.name));
    } else {
        dlg->setModelFields(m.experts, m.top_k, m.num_hidden_layers,
                            QString::fromStdString(format_layer_list(m.moe_layers)));
    }
    reopenStep_ = std::make_unique<ClusterStepRef>(*shown);
    return dlg;
}

} // namespace routepack::views
