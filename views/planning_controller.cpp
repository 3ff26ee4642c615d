#include "views/planning_controller.h"

#include "core/plan/budgets.h"
#include "views/jobs/job_tracker.h"
#include "views/jobs/stage_progress.h"
#include "views/library/library_pane.h"
#include "views/widgets/gui_text.h"

#include <QTimer>

namespace routepack::views {

PlanningController::PlanningController(LibraryPane* library, QObject* parent)
    : QObject(parent), library_(library), jobs_(new PlanJobQueue(this)),
      stepOpen_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)), progressTick_(new QTimer(this)) {
    jobs_->setObjectName(QStringLiteral("planJobs"));
    progressTick_->setInterval(250);
    connectPlanJobs();
    connectRunJobs();
}

PlanningController::~PlanningController() {
    stepOpen_->shutdown();
}

void PlanningController::shutdown() {
    stepOpen_->shutdown();
}

void PlanningController::connectPlanJobs() {
    connect(jobs_, &PlanJobQueue::jobStarted, this, [this](quint64 job, const QString& label) {
        jobClock_.start();
        progressTick_->start();
        lastProgress_ = {job, QString(), 0.0};
        runProgress_ = {0, 0, 0, 0.0};
        Q_EMIT jobStarted();
        if (const RunReplay::Restore* restore = replay_.findRestore(job)) {
            Q_EMIT status(tr("Loading saved run %1…").arg(restore->run), false);
        } else {
            followLiveJob(job);
            Q_EMIT status(tr("Planning a new run of %1…").arg(label), false);
        }
    });
    connect(jobs_, &PlanJobQueue::progress, this, [this](quint64 job, const QString& stage, double fraction) {
        Q_EMIT progressChanged(static_cast<int>(1000 * fraction));
        lastProgress_ = {job, stage, fraction};
        showProgress();
    });
    // Between the planner's events the elapsed time goes on.
    connect(progressTick_, &QTimer::timeout, this, [this] {
        if (jobs_->isBusy() && !std::get<1>(lastProgress_).isEmpty()) showProgress();
    });
    connect(jobs_, &PlanJobQueue::finished, this, &PlanningController::onFinished);
    connect(jobs_, &PlanJobQueue::failed, this, [this](quint64 job, const QString& message) {
        replay_.takeRestore(job);
        liveJobs_.erase(job);
        library_->refresh();
        Q_EMIT status(tr("Planner failed: %1").arg(message), true);
    });
    connect(jobs_, &PlanJobQueue::staleDropped, this, [this](quint64 job, const QString& library) {
        replay_.takeRestore(job);
        if (library_->isOpen(library)) {
            // Queued before this library was opened again: its run (if it saved one) is here.
            library_->refresh();
            Q_EMIT status(tr("Job %1 was queued before this library was opened again; its result was not shown (a "
                             "saved run is in the library tree).")
                              .arg(job),
                          false);
            return;
        }
        Q_EMIT status(
            tr("Job %1 belonged to the previous library; its result was not shown (it is saved there).").arg(job),
            false);
    });
    connect(jobs_, &PlanJobQueue::cancelledQueued, this, [this](quint64 job) {
        const auto restore = replay_.takeRestore(job);
        Q_EMIT status(restore ? tr("Loading saved run %1 cancelled.").arg(restore->run)
                              : tr("The queued new run of %1 removed.").arg(liveLabel(job)),
                      false);
        liveJobs_.erase(job);
    });
    connect(jobs_, &PlanJobQueue::idle, this, [this] {
        progressTick_->stop();
        Q_EMIT idle();
    });
}

void PlanningController::onFinished(const PlanJobResult& r) {
    // A run that planned to the end measured its stages: the next job's progress uses its shares,
    // and a job of the same setup may show a time left.
    if (!replay_.findRestore(r.job) && !r.plan->cancelled && !r.plan->time_limit_hit) {
        jobs_->setStageWeights(stage_weights_from(r.plan->timings, jobs_->stageWeights(r.plan->budgets)),
                               r.plan->budgets);
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
        show = restore->show && library_->selectedRunId() == id;
        compared = !restore->show;
        note = savedPlanNote(id, *r.plan);
    }
    id = replay_.store(id, r.plan, r.window);
    if (r.runId > 0) library_->refresh(); // the saved run joins the tree
    if (!show) {
        Q_EMIT compareChanged();
        if (compared) Q_EMIT status(tr("Added to the comparison: %1").arg(note), false);
        return;
    }
    Q_EMIT planReady(r.plan, r.window, id);
    if (r.runId > 0) library_->setCurrentQuietly(library_->model()->runIndex(r.runId));
    if (!r.saveError.isEmpty()) {
        Q_EMIT status(tr("Planned, but the run was not saved: %1").arg(r.saveError), true);
    } else if (!note.isEmpty()) {
        Q_EMIT savedPlanShown(id, note);
    } else {
        Q_EMIT status(tr("Run %1 %2 in %3 s: max U %4, R* = %5%6")
                          .arg(r.runId)
                          .arg(r.plan->cancelled ? tr("cancelled (best valid plan so far)") : tr("finished"))
                          .arg(r.seconds, 0, 'f', 2)
                          .arg(r.plan->routepack.metrics.score.max_u, 0, 'f', 4)
                          .arg(r.plan->rows.rows)
                          .arg(r.plan->rows.certified ? tr(" (certified)") : QString()),
                      false);
    }
}

void PlanningController::connectRunJobs() {
    connect(jobs_, &PlanJobQueue::runProgress, this,
            [this](quint64 job, int index, int count, const QString& stage, double window, double overall) {
                Q_EMIT progressChanged(static_cast<int>(1000 * overall));
                lastProgress_ = {job, stage, overall};
                runProgress_ = {job, index, count, window};
                showProgress();
            });
    connect(jobs_, &PlanJobQueue::runStepFinished, this,
            [this](quint64 job, int index, int count, const QString& window, qint64 runId, double maxU) {
                // The saved step joins the tree, and the Run view reads the series again.
                if (runId > 0) library_->refresh();
                Q_EMIT status(tr("Run job %1: window %2 of %3 (%4) planned: max U %5%6")
                                  .arg(job)
                                  .arg(index + 1)
                                  .arg(count)
                                  .arg(window)
                                  .arg(maxU, 0, 'f', 4)
                                  .arg(runId > 0 ? tr(", saved as run %1").arg(runId) : QString()),
                              false);
            });
    connect(jobs_, &PlanJobQueue::runFinished, this, [this](const RunPlanResult& r) {
        library_->refresh();
        Q_EMIT runFinished();
        QString runs;
        if (!r.runIds.empty() && r.runIds.front() > 0)
            runs = tr(", runs %1..%2").arg(r.runIds.front()).arg(r.runIds.back());
        if (!r.error.isEmpty()) {
            Q_EMIT status(tr("Run of %1 stopped after %2 of %3 windows%4: %5")
                              .arg(r.trace)
                              .arg(r.finishedWindows())
                              .arg(r.windows.size())
                              .arg(runs, r.error),
                          true);
            return;
        }
        const bool kept = !r.plans.empty() && r.plans.back()->cancelled;
        const QString keptText =
            kept ? tr("; window %1 keeps its best valid plan so far%2")
                       .arg(QString::fromStdString(r.plans.back()->window_name),
                            r.runIds.back() > 0 ? tr(" (run %1, cancelled)").arg(r.runIds.back()) : QString())
                 : QString();
        Q_EMIT status(tr("Run of %1 %2: %3 of %4 windows planned in %5 s%6%7")
                          .arg(r.trace)
                          .arg(r.cancelled ? tr("cancelled (the finished windows are kept)") : tr("finished"))
                          .arg(r.finishedWindows())
                          .arg(r.windows.size())
                          .arg(r.seconds, 0, 'f', 2)
                          .arg(runs, keptText),
                      false);
    });
}

quint64 PlanningController::plan(const PlanJobRequest& request) {
    // The queue may start the job (jobStarted) before enqueue returns its id.
    pendingLive_ = {request.trace, request.window};
    const quint64 id = jobs_->enqueue(request);
    liveJobs_.try_emplace(id, pendingLive_);
    pendingLive_ = {};
    liveSetups_[id] = setupKey(request);
    if (jobs_->currentJob() != id)
        Q_EMIT status(tr("A new run of %1 queued (%2 waiting).").arg(liveLabel(id)).arg(jobs_->queuedCount()), false);
    return id;
}

quint64 PlanningController::planRun(const RunPlanRequest& request) {
    const quint64 id = jobs_->enqueueRun(request);
    if (jobs_->currentJob() != id)
        Q_EMIT status(tr("Job %1 queued (%2 waiting).").arg(id).arg(jobs_->queuedCount()), false);
    return id;
}

void PlanningController::cancel() {
    if (!jobs_->isBusy()) return;
    const quint64 job = jobs_->currentJob();
    jobs_->cancelCurrent();
    if (const RunReplay::Restore* restore = replay_.findRestore(job))
        Q_EMIT status(tr("Cancelling the loading of saved run %1…").arg(restore->run), false);
    else
        Q_EMIT status(tr("Cancelling the new run of %1: keeping the best valid plan so far…").arg(liveLabel(job)),
                      false);
}

quint64 PlanningController::restoreRun(const storage::RunEntry& run, bool show) {
    // A run saved in an earlier session: show exactly its stored plan, rebuilt on the worker thread
    // (the window, its placements and baselines are recomputed; nothing is searched or written).
    return replay_.restore(*jobs_, library_->libraryPath(), run, show, tr("saved run %1").arg(run.id));
}

void PlanningController::libraryOpened(bool same) {
    if (same) return;
    jobs_->invalidate(); // results of jobs for the previous library are no longer shown
    replay_.clear();     // run ids of another library
}

bool PlanningController::mayEditLibrary(const QString& what) {
    // Restores of saved runs only read: they are dropped (a plan of what changes would be stale). A
    // planner job would save its run into what changes: the change waits for it.
    const int jobs = (jobs_->currentJob() != 0 ? 1 : 0) + jobs_->queuedCount();
    if (jobs_->isBusy() && jobs > replay_.pendingRestores()) {
        Q_EMIT status(tr("A job is running: wait for it or cancel it (Esc) before you %1.").arg(what), true);
        return false;
    }
    if (jobs > 0) jobs_->invalidate();
    return true;
}

void PlanningController::forgetPlans(const QString& trace, const QString& window, qint64 run) {
    const std::string t = trace.toStdString(), w = window.toStdString();
    replay_.forget([&](qint64 id, const PlanResult& p) {
        return run > 0 ? id == run : p.trace_name == t && (w.empty() || p.window_name == w);
    });
}

quint64 PlanningController::openClusterStep(const ClusterStepRef& step) {
    if (library_->libraryPath().isEmpty()) {
        Q_EMIT status(tr("Open the library of the cluster run first."), true);
        return 0;
    }
    Q_EMIT status(
        tr("Reading step %1 of cluster run %2 (%3)…").arg(step.window).arg(step.clusterRun).arg(step.planFile), false);
    const std::string file = library_->libraryPath().toStdString(), plan = step.planFile.toStdString();
    return stepOpen_->start<ClusterStepPlan>(
        [file, plan](JobContext& ctx) {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly); // this thread's own
            return open_cluster_step(*lib, plan, ctx.cancelFlag());
        },
        [this, step](quint64, const std::shared_ptr<const ClusterStepPlan>& opened) {
            Q_EMIT stepOpened(step, *opened);
        },
        [this, step](quint64, const JobFailure& failure) {
            Q_EMIT status(tr("Step %1 of cluster run %2: %3").arg(step.window).arg(step.clusterRun).arg(failure.text),
                          true);
        });
}

std::string PlanningController::setupKey(const PlanJobRequest& rq) {
    PlannerBudgets b = rq.budgets;
    b.seed = 0; // the seed moves no stage's share
    return (rq.trace + QLatin1Char('/') + rq.window).toStdString() + '\n' + topology_to_json(rq.topology) + '\n' +
           planner_budgets_to_json(b);
}

void PlanningController::showProgress() {
    const auto& [job, stage, fraction] = lastProgress_;
    const int queued = jobs_->queuedCount();
    const QString more = queued > 0 ? tr(", %1 more queued").arg(queued) : QString();
    // A restore shows a saved run: it is named by the run's id. A new run's time left is shown only
    // when the stage shares were measured on the same window, topology and budgets (else the
    // fraction is a guess, and only the elapsed time is honest).
    if (std::get<0>(runProgress_) == job) {
        // A run-planning job: its window and the whole run (the time left from this job's own pace).
        const auto& [unused, index, count, window] = runProgress_;
        Q_EMIT status(tr("Run job %1: window %2 of %3, %4 (%5%), run %6% (%7)%8")
                          .arg(job)
                          .arg(index + 1)
                          .arg(count)
                          .arg(stage)
                          .arg(static_cast<int>(100 * window))
                          .arg(static_cast<int>(100 * fraction))
                          .arg(progressTimeText(static_cast<double>(jobClock_.elapsed()) / 1000.0, fraction))
                          .arg(more),
                      false);
        return;
    }
    const RunReplay::Restore* restore = replay_.findRestore(job);
    const auto setup = liveSetups_.find(job);
    const bool honest = restore || (setup != liveSetups_.end() && setup->second == weightsSetup_);
    Q_EMIT status(tr("%1: %2 (%3%, %4)%5")
                      .arg(restore ? tr("Saved run %1").arg(restore->run) : tr("New run of %1").arg(liveLabel(job)))
                      .arg(stage)
                      .arg(static_cast<int>(100 * fraction))
                      .arg(progressTimeText(static_cast<double>(jobClock_.elapsed()) / 1000.0, honest ? fraction : 0.0))
                      .arg(more),
                  false);
}

QString PlanningController::savedPlanNote(qint64 runId, const PlanResult& plan) {
    return tr("Run %1: the saved plan (max U %2, R* = %3%4)")
        .arg(runId)
        .arg(plan.routepack.metrics.score.max_u, 0, 'f', 4)
        .arg(plan.rows.rows)
        .arg(plan.cancelled ? tr(", cancelled: best valid plan at the time") : QString());
}

QString PlanningController::liveLabel(quint64 job) const {
    const auto it = liveJobs_.find(job);
    return it == liveJobs_.end() ? tr("a window") : it->second.first + QLatin1Char('/') + it->second.second;
}

void PlanningController::followLiveJob(quint64 job) {
    // The tree shows what is being planned: the job's window, not a run planned before.
    if (!pendingLive_.first.isEmpty()) liveJobs_.try_emplace(job, pendingLive_);
    const auto it = liveJobs_.find(job);
    if (it == liveJobs_.end()) return;
    library_->setCurrentQuietly(library_->model()->windowIndex(it->second.first, it->second.second));
}

} // namespace routepack::views
