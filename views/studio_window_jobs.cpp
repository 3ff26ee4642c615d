// The studio window's side of the planner job queue: what its signals show, planning the selected
// window, cancelling, and restoring saved runs; the rest of StudioWindow is views/studio_window.cpp.
#include "views/studio_window.h"

#include "core/plan/budgets.h"
#include "views/dialogs/topology_editor.h"
#include "views/library/library_tree_model.h"
#include "views/plan/plan_views.h"
#include "views/widgets/gui_text.h"

#include <QItemSelectionModel>
#include <QProgressBar>
#include <QSignalBlocker>
#include <QTabWidget>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>

namespace routepack::views {

void StudioWindow::connectPlanJobs() {
    connect(jobs_, &PlanJobQueue::jobStarted, this, [this](quint64 job, const QString& label) {
        jobProgress_->setRange(0, 1000);
        jobProgress_->setValue(0);
        jobProgress_->show();
        jobClock_.start();
        progressTick_->start();
        lastProgress_ = {job, QString(), 0.0};
        runProgress_ = {0, 0, 0, 0.0};
        cancelButton_->setEnabled(true);
        planView_->clearConvergence();
        if (const RunReplay::Restore* restore = replay_.findRestore(job)) {
            setStatus(tr("Loading saved run %1…").arg(restore->run));
        } else {
            followLiveJob(job);
            setStatus(tr("Planning a new run of %1…").arg(label));
        }
        updateActions();
    });
    connect(jobs_, &PlanJobQueue::progress, this, [this](quint64 job, const QString& stage, double fraction) {
        jobProgress_->setValue(static_cast<int>(1000 * fraction));
        lastProgress_ = {job, stage, fraction};
        showProgress();
    });
    // Between the planner's events the elapsed time goes on.
    connect(progressTick_, &QTimer::timeout, this, [this] {
        if (jobs_->isBusy() && !std::get<1>(lastProgress_).isEmpty()) showProgress();
    });
    connect(jobs_, &PlanJobQueue::levelFinished, this,
            [this](quint64, const LevelStats& level) { planView_->addConvergenceLevel(level); });
    connect(jobs_, &PlanJobQueue::finished, this, [this](const PlanJobResult& r) {
        // A run that planned to the end measured its stages: the next job's progress uses its shares,
        // and a job of the same setup may show a time left.
        if (!replay_.findRestore(r.job) && !r.plan->cancelled && !r.plan->time_limit_hit) {
            jobs_->setStageWeights(stage_weights_from(r.plan->timings, jobs_->stageWeights()));
            const auto setup = liveSetups_.find(r.job);
            weightsSetup_ = setup == liveSetups_.end() ? std::string() : setup->second;
        }
        liveSetups_.erase(r.job);
        qint64 id = r.runId;
        QString note;
        bool show = true;
        bool compared = false; // a restore for the comparison only
        liveJobs_.erase(r.job);
        if (const auto restore = replay_.takeRestore(r.job)) {
            id = restore->run;
            // A run shown on request is shown only while it is still the one selected.
            show = restore->show && selectedRunId() == id;
            compared = !restore->show;
            note = savedPlanNote(id, *r.plan);
        }
        id = replay_.store(id, r.plan, r.window);
        if (r.runId > 0 && !show) refreshLibrary(); // the saved run joins the tree
        if (!show) {
            updateCompare();
            if (compared) setStatus(tr("Added to the comparison: %1").arg(note));
            return;
        }
        if (r.runId > 0) refreshLibrary();
        showPlan(r.plan, r.window, id);
        if (r.runId > 0) {
            const QModelIndex ri = tree_->runIndex(r.runId);
            if (ri.isValid()) {
                QSignalBlocker block(treeView_->selectionModel());
                treeView_->setCurrentIndex(ri);
            }
        }
        if (!r.saveError.isEmpty()) {
            setStatus(tr("Planned, but the run was not saved: %1").arg(r.saveError), true);
        } else if (!note.isEmpty()) {
            setStatus(id == keptEditsRun_ ? note + QStringLiteral(". ") + keptEditsNote(id) : note);
        } else {
            setStatus(tr("Run %1 %2 in %3 s: max U %4, R* = %5%6")
                          .arg(r.runId)
                          .arg(r.plan->cancelled ? tr("cancelled (best valid plan so far)") : tr("finished"))
                          .arg(r.seconds, 0, 'f', 2)
                          .arg(r.plan->routepack.metrics.score.max_u, 0, 'f', 4)
                          .arg(r.plan->rows.rows)
                          .arg(r.plan->rows.certified ? tr(" (certified)") : QString()));
        }
    });
    connect(jobs_, &PlanJobQueue::failed, this, [this](quint64 job, const QString& message) {
        replay_.takeRestore(job);
        liveJobs_.erase(job);
        refreshLibrary();
        setStatus(tr("Planner failed: %1").arg(message), true);
    });
    connect(jobs_, &PlanJobQueue::staleDropped, this, [this](quint64 job, const QString& library) {
        replay_.takeRestore(job);
        if (isOpenLibrary(library)) {
            // Queued before this library was opened again: its run (if it saved one) is here.
            refreshLibrary();
            setStatus(tr("Job %1 was queued before this library was opened again; its result was not shown (a saved "
                         "run is in the library tree).")
                          .arg(job));
            return;
        }
        setStatus(
            tr("Job %1 belonged to the previous library; its result was not shown (it is saved there).").arg(job));
    });
    connect(jobs_, &PlanJobQueue::cancelledQueued, this, [this](quint64 job) {
        const auto restore = replay_.takeRestore(job);
        setStatus(restore ? tr("Loading saved run %1 cancelled.").arg(restore->run)
                          : tr("The queued new run of %1 removed.").arg(liveLabel(job)));
        liveJobs_.erase(job);
    });
    connect(jobs_, &PlanJobQueue::idle, this, [this] {
        progressTick_->stop();
        jobProgress_->hide();
        cancelButton_->setEnabled(false);
        updateActions();
    });
}

std::optional<std::pair<routepack::Topology, routepack::PlannerBudgets>> StudioWindow::formSetup() {
    QString why;
    auto topo = editor_->topology(&why);
    if (!topo) {
        setStatus(tr("The topology is not valid: %1").arg(why), true);
        return std::nullopt;
    }
    auto budgets = editor_->budgets(&why);
    if (!budgets) {
        setStatus(tr("The planner budgets are not valid: %1").arg(why), true);
        return std::nullopt;
    }
    return std::make_pair(std::move(*topo), std::move(*budgets));
}

quint64 StudioWindow::runPlanner() {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return 0;
    }
    if (deletionRunning(tr("plan"))) return 0;
    const QModelIndex cur = treeView_->currentIndex();
    const int kind = cur.isValid() ? cur.data(KindRole).toInt() : -1;
    if (kind != LibraryTreeModel::WindowNode && kind != LibraryTreeModel::RunNode) {
        setStatus(tr("Select a window to plan (define one with Ctrl+D)."), true);
        return 0;
    }
    const auto setup = formSetup();
    if (!setup) return 0;
    PlanJobRequest rq;
    rq.library = libraryPath();
    rq.trace = cur.data(TraceRole).toString();
    rq.window = cur.data(WindowRole).toString();
    rq.topologyName = editor_->topologyName().isEmpty() ? QStringLiteral("topology") : editor_->topologyName();
    rq.topology = setup->first;
    rq.budgets = setup->second;
    rq.saveRun = !lib_->read_only();
    // The queue may start the job (jobStarted) before enqueue returns its id.
    pendingLive_ = {rq.trace, rq.window};
    const quint64 id = jobs_->enqueue(rq);
    liveJobs_.try_emplace(id, pendingLive_);
    pendingLive_ = {};
    liveSetups_[id] = setupKey(rq);
    editor_->markClean(); // the form's edits are this run's setup now
    if (jobs_->currentJob() != id)
        setStatus(tr("A new run of %1 queued (%2 waiting).").arg(liveLabel(id)).arg(jobs_->queuedCount()));
    updateActions();
    return id;
}

void StudioWindow::cancelJob() {
    if (!jobs_->isBusy()) return;
    const quint64 job = jobs_->currentJob();
    jobs_->cancelCurrent();
    if (const RunReplay::Restore* restore = replay_.findRestore(job))
        setStatus(tr("Cancelling the loading of saved run %1…").arg(restore->run));
    else
        setStatus(tr("Cancelling the new run of %1: keeping the best valid plan so far…").arg(liveLabel(job)));
}

std::string StudioWindow::setupKey(const PlanJobRequest& rq) {
    PlannerBudgets b = rq.budgets;
    b.seed = 0; // the seed moves no stage's share
    return (rq.trace + QLatin1Char('/') + rq.window).toStdString() + '\n' + topology_to_json(rq.topology) + '\n' +
           planner_budgets_to_json(b);
}

void StudioWindow::showProgress() {
    const auto& [job, stage, fraction] = lastProgress_;
    const int queued = jobs_->queuedCount();
    // A restore shows a saved run: it is named by the run's id. A new run's time left is shown only
    // when the stage shares were measured on the same window, topology and budgets (else the
    // fraction is a guess, and only the elapsed time is honest).
    if (std::get<0>(runProgress_) == job) {
        // A run-planning job: its window and the whole run (the time left from this job's own pace).
        const auto& [unused, index, count, window] = runProgress_;
        setStatus(tr("Run job %1: window %2 of %3, %4 (%5%), run %6% (%7)%8")
                      .arg(job)
                      .arg(index + 1)
                      .arg(count)
                      .arg(stage)
                      .arg(static_cast<int>(100 * window))
                      .arg(static_cast<int>(100 * fraction))
                      .arg(progressTimeText(static_cast<double>(jobClock_.elapsed()) / 1000.0, fraction))
                      .arg(queued > 0 ? tr(", %1 more queued").arg(queued) : QString()));
        return;
    }
    const RunReplay::Restore* restore = replay_.findRestore(job);
    const auto setup = liveSetups_.find(job);
    const bool honest = restore || (setup != liveSetups_.end() && setup->second == weightsSetup_);
    setStatus(tr("%1: %2 (%3%, %4)%5")
                  .arg(restore ? tr("Saved run %1").arg(restore->run) : tr("New run of %1").arg(liveLabel(job)))
                  .arg(stage)
                  .arg(static_cast<int>(100 * fraction))
                  .arg(progressTimeText(static_cast<double>(jobClock_.elapsed()) / 1000.0, honest ? fraction : 0.0))
                  .arg(queued > 0 ? tr(", %1 more queued").arg(queued) : QString()));
}

QString StudioWindow::savedPlanNote(qint64 runId, const PlanResult& plan) const {
    return tr("Run %1: the saved plan (max U %2, R* = %3%4)")
        .arg(runId)
        .arg(plan.routepack.metrics.score.max_u, 0, 'f', 4)
        .arg(plan.rows.rows)
        .arg(plan.cancelled ? tr(", cancelled: best valid plan at the time") : QString());
}

QString StudioWindow::liveLabel(quint64 job) const {
    const auto it = liveJobs_.find(job);
    return it == liveJobs_.end() ? tr("a window") : it->second.first + QLatin1Char('/') + it->second.second;
}

qint64 StudioWindow::selectedRunId() const {
    const QModelIndex cur = treeView_->currentIndex();
    if (!cur.isValid() || cur.data(KindRole).toInt() != LibraryTreeModel::RunNode) return 0;
    const storage::RunEntry* run = tree_->runAt(cur.sibling(cur.row(), 0));
    return run ? run->id : 0;
}

void StudioWindow::followLiveJob(quint64 job) {
    // The tree shows what is being planned: the job's window, not a run planned before.
    if (!pendingLive_.first.isEmpty()) liveJobs_.try_emplace(job, pendingLive_);
    const auto it = liveJobs_.find(job);
    if (it == liveJobs_.end()) return;
    const QModelIndex wi = tree_->windowIndex(it->second.first, it->second.second);
    if (!wi.isValid() || treeView_->currentIndex() == wi) return;
    const QSignalBlocker block(treeView_->selectionModel());
    treeView_->setCurrentIndex(wi);
    treeView_->viewport()->update();
}

quint64 StudioWindow::restoreRun(const storage::RunEntry& run, bool show) {
    // A run saved in an earlier session: show exactly its stored plan, rebuilt on the worker thread
    // (the window, its placements and baselines are recomputed; nothing is searched or written).
    return replay_.restore(*jobs_, libraryPath(), run, show, tr("saved run %1").arg(run.id));
}

int StudioWindow::compareSavedRuns() {
    const auto shown = planView_->plan();
    if (!shown) {
        setStatus(tr("Show a plan first: the comparison is per window."), true);
        return 0;
    }
    int queued = 0;
    compareLeftOut_.clear();
    for (const auto& run : tree_->snapshot().runs) {
        if (run.trace != shown->trace_name || run.window != shown->window_name || run.status == "failed") continue;
        if (replay_.contains(run.id)) continue;
        restoreRun(run, false);
        ++queued;
    }
    updateCompare();
    resultTabs_->setCurrentWidget(compareView_);
    setStatus(queued ? tr("Loading %1 saved run(s) of this window for the comparison…").arg(queued)
                     : tr("Every saved run of this window is in the comparison."));
    return queued;
}

} // namespace routepack::views
