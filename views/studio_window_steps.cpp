// StudioWindow: a cluster run's step opened in the plan views from its plan file, and the import of
// the step's file when the library lacks its counts.
#include "core/model/model.h"
#include "views/dialogs/import_dialog.h"
#include "views/plan/plan_views.h"
#include "views/run/run_view.h"
#include "views/studio_window.h"
#include "views/widgets/gui_text.h"

#include <QFileInfo>
#include <QTabWidget>
#include <QToolButton>

namespace routepack::views {

quint64 StudioWindow::openClusterStep(const QString& planFile, const QString& stepPath, const QString& window) {
    return openStep({runView_->clusterRun(), planFile, stepPath, window});
}

quint64 StudioWindow::openStep(const ClusterStepRef& step) {
    if (!lib_) {
        setStatus(tr("Open the library of the cluster run first."), true);
        return 0;
    }
    setStatus(tr("Reading step %1 of cluster run %2 (%3)…").arg(step.window).arg(step.clusterRun).arg(step.planFile));
    const std::string file = libraryPath().toStdString(), plan = step.planFile.toStdString();
    return stepOpen_->start<ClusterStepPlan>(
        [file, plan](JobContext& ctx) {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly); // this thread's own
            return open_cluster_step(*lib, plan, ctx.cancelFlag());
        },
        [this, step](quint64, const std::shared_ptr<const ClusterStepPlan>& opened) { showClusterStep(step, *opened); },
        [this, step](quint64, const JobFailure& failure) {
            setStatus(tr("Step %1 of cluster run %2: %3").arg(step.window).arg(step.clusterRun).arg(failure.text),
                      true);
        });
}

void StudioWindow::showClusterStep(const ClusterStepRef& step, const ClusterStepPlan& opened) {
    resultTabs_->setCurrentWidget(planView_);
    if (opened.window) {
        showPlan(opened.plan, opened.window, 0);
        setStatus(tr("Step %1 of cluster run %2: plan %3, with the counts of trace %4.")
                      .arg(step.window)
                      .arg(step.clusterRun)
                      .arg(step.planFile, QString::fromStdString(opened.counts_trace)));
        return;
    }
    clearSampleFilter();
    shownRun_ = 0;
    const QString why = QString::fromStdString(opened.why_no_counts);
    const QString offer =
        step.stepPath.isEmpty()
            ? tr("the cluster run did not record the step's file: import it (File > Import) "
                 "and open the step again")
            : tr("Import step… (top right) imports %1; the step then opens with every view").arg(step.stepPath);
    planView_->setPlanWithoutCounts(
        opened.plan, tr("Step %1 of cluster run %2 was read from its plan file %3. This view needs the step's "
                        "routing counts, which the library does not hold (%4): %5.")
                         .arg(step.window)
                         .arg(step.clusterRun)
                         .arg(step.planFile, why, offer));
    setShownStep(step);
    updateCompare();
    updateActions();
    setStatus(tr("Step %1 of cluster run %2: plan %3, without counts (%4).")
                  .arg(step.window)
                  .arg(step.clusterRun)
                  .arg(step.planFile, why));
}

void StudioWindow::setShownStep(std::optional<ClusterStepRef> step) {
    shownStep_ = std::move(step);
    if (!importStepButton_) return;
    importStepButton_->setVisible(shownStep_.has_value() && !shownStep_->stepPath.isEmpty());
    if (shownStep_) importStepButton_->setToolTip(tr("Import %1 into the library").arg(shownStep_->stepPath));
}

ImportDialog* StudioWindow::importShownStep() {
    if (!shownStep_ || shownStep_->stepPath.isEmpty()) {
        setStatus(tr("No cluster step without counts is shown: click a step of a cluster run in the Run tab."), true);
        return nullptr;
    }
    const auto plan = planView_->plan();
    ImportDialog* dlg = showImportDialog();
    if (!dlg || !plan) return dlg;
    dlg->setInputs({shownStep_->stepPath});
    dlg->setTraceName(QString::fromStdString(plan->trace_name) + QLatin1Char('-') + shownStep_->window);
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
    reopenStep_ = shownStep_;
    return dlg;
}

} // namespace routepack::views
