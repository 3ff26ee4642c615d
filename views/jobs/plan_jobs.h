#pragma once
// The studio's planner job queue, a JobTracker user (views/jobs/job_tracker.h): one job at a time on a
// worker thread, several can queue; throttled progress with the stage name; live annealing levels;
// cooperative cancel that keeps the best valid plan so far; generation ids so that results of a
// superseded library are dropped; results as immutable values.
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/plan/planner.h"
#include "core/plan/search/annealing.h"
#include "views/jobs/job_tracker.h"
#include "views/jobs/stage_progress.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <map>
#include <memory>

namespace routepack::storage {
class Library;
}

namespace routepack::views {

/// What one planning job needs. The worker opens its own connection to `library` (one SQLite
/// connection per thread), loads window `window` of trace `trace`, plans it with `topology` and
/// `budgets`, and, when `saveRun`, saves the finished (or cancelled, or failed) run there. While
/// another process holds the library's write lock the worker tries the save again, with growing
/// pauses, for up to 60 s before it reports PlanJobResult::saveError.
struct PlanJobRequest {
    QString library; ///< library file
    QString trace;
    QString window;
    QString topologyName; ///< name the run's topology is saved under (Library::save_run rule)
    routepack::Topology topology;
    routepack::PlannerBudgets budgets;
    bool saveRun = true; ///< false for jobs that write nothing (showing a saved run)
    /// > 0: show this saved run instead of planning: its stored plan JSON is rebuilt against the
    /// window (restore_plan) with the run's convergence, timings, budgets and status; nothing is
    /// searched and nothing is written (saveRun is ignored).
    qint64 restoreRun = 0;
    QString label; ///< shown in the status bar; default "<trace>/<window>"
};

/// The outcome of a finished job, handed to the GUI thread as an immutable value.
struct PlanJobResult {
    quint64 job = 0;                                   ///< PlanJobQueue::enqueue's id
    std::shared_ptr<const routepack::PlanResult> plan; ///< never null
    std::shared_ptr<const routepack::Trace> window;    ///< the planned window (for the cost views)
    qint64 runId = 0;                                  ///< saved run id (0 when not saved)
    QString saveError;                                 ///< why saving failed, if it did (the plan is still good)
    double seconds = 0;                                ///< wall time of the job
};

/// What one run-planning job needs: windows of one trace planned as the steps of a run, in natural
/// name order (natural_less), chained as `routepack sweep` chains them (plan_chain: window k starts
/// from window k-1's final placement, window 0 from the identity), every window with `topology` and
/// `budgets` (the same seed), the chain on budgets.workers workers. When `saveRuns`, every window that
/// planned to its end is saved as a run the moment it ends (Library::save_runs, as `sweep` saves its
/// runs; retried while another process holds the library, as PlanJobRequest's save).
struct RunPlanRequest {
    QString library; ///< library file
    QString trace;
    QStringList windows;  ///< windows of `trace` (any order; planned in natural name order)
    QString topologyName; ///< name the runs' topology is saved under
    routepack::Topology topology;
    routepack::PlannerBudgets budgets;
    bool saveRuns = true;
    QString label; ///< shown in the status bar; default "<trace>: N windows"
};

/// The outcome of a run-planning job: the windows that planned, in run order. A cancelled job keeps
/// those finished before the cancel and the running window's best valid plan so far (last in `plans`,
/// its PlanResult::cancelled set; saved as a run with status "cancelled", as a cancelled single plan is).
struct RunPlanResult {
    quint64 job = 0;
    QString trace;
    QStringList windows;                                             ///< every requested window, in run order
    std::vector<std::shared_ptr<const routepack::PlanResult>> plans; ///< the windows' plans, in order
    std::vector<qint64> runIds;                                      ///< their saved runs (0 when not saved)
    /// The whole run the saved runs form (Library::save_whole_run, source "studio"); 0 when nothing was saved.
    qint64 wholeRunId = 0;
    bool cancelled = false; ///< the job was cancelled before the last window ended
    /// The plans of windows that planned to their end (`plans` less a cancelled window's last one).
    std::size_t finishedWindows() const;
    QString error;      ///< a window that failed ("window 'w': why") or a save that failed; "" when none
    double seconds = 0; ///< wall time of the job
};

/// FIFO of planning jobs run one at a time on a private worker thread (a JobTracker with one thread
/// that never expires; the planner's own oneTBB arena does the parallel work). All signals are emitted on the
/// thread that owns the queue (the GUI thread); values are copied there from the worker.
///
/// Progress is throttled by ProgressThrottle: at most one `progress` per 50 ms per job (a stage
/// change and the final "done" always pass); every finished annealing level is delivered by `levelFinished`.
/// Each job records the queue's generation when it was enqueued; invalidate() starts a new
/// generation, after which older jobs still run to completion (the worker never blocks the GUI)
/// but their results are dropped (`staleDropped`) instead of being delivered.
class PlanJobQueue : public QObject {
    Q_OBJECT
public:
    explicit PlanJobQueue(QObject* parent = nullptr);
    /// Cancels every job and waits for the running one to stop (the planner stops within one
    /// check interval: 256 proposals per chain).
    ~PlanJobQueue() override;

    /// Queues a job; returns its id (1, 2, ...). It starts at once when nothing runs.
    quint64 enqueue(const PlanJobRequest& request);
    /// Queues a run-planning job (RunPlanRequest) in the same FIFO; returns its id. It reports
    /// `runProgress`, `runStepFinished` for each window that ends, then `runFinished` (or `failed`
    /// when the library or a window cannot be read).
    quint64 enqueueRun(const RunPlanRequest& request);
    /// Cancels the running job (it returns the best valid plan so far, delivered as `finished` with
    /// plan->cancelled) or, for a queued id, removes it (`cancelledQueued`). False for an unknown id.
    bool cancel(quint64 id);
    /// Cancels the running job, if any.
    void cancelCurrent();
    /// Cancels the running job and removes every queued one.
    void cancelAll();
    /// Starts a new generation: results of every job enqueued before are dropped (see class doc).
    void invalidate();
    /// The stage weights of the jobs enqueued from now on (StageProgress: `progress` reports the
    /// fraction of the expected wall time, each planner stage weighted by its share), as measured
    /// with budgets `measuredWith`: each job weights its stages by scale_stage_weights to its own
    /// budgets. Without `measuredWith` the weights are taken as they are for every job. Default:
    /// StageWeights::defaults(), measured with PlannerBudgets{}. The studio passes each finished
    /// run's measured shares (stage_weights_from of PlanResult::timings) and budgets.
    void setStageWeights(const StageWeights& weights,
                         const std::optional<routepack::PlannerBudgets>& measuredWith = std::nullopt);
    /// The stage weights a job with budgets `budgets` is given.
    StageWeights stageWeights(const routepack::PlannerBudgets& budgets) const;

    quint64 generation() const;
    /// Id of the running job, 0 when idle.
    quint64 currentJob() const;
    /// Jobs waiting behind the running one.
    int queuedCount() const;
    /// A job runs (false while the end of one is being delivered, before the next starts).
    bool isBusy() const;
    /// Blocks until the running job ended (tests and shutdown only; never in GUI code paths).
    void waitForIdle();
    /// Test hook: run-planning jobs enqueued from now on ask `stop` (on the worker) after each window
    /// that planned to its end and was saved, with the count of such windows; true cancels the job
    /// there, exactly as Cancel does, before the next window starts. Empty: never.
    void setRunStopForTesting(std::function<bool(int finished)> stop) { runStop_ = std::move(stop); }

Q_SIGNALS:
    /// Job `job` was queued (before jobStarted, which follows at once when nothing runs).
    void jobQueued(quint64 job, const QString& label);
    void jobStarted(quint64 job, const QString& label);
    /// Stage name of PlanEvent ("placement", "row count", "baselines", "seeding", "annealing",
    /// "polish", "validate", "communication", "done") and the overall fraction in [0, 1] in
    /// proportion to the expected time (StageProgress over the job's stage weights, the annealing
    /// levels of its budgets, communication on more than one node).
    void progress(quint64 job, const QString& stage, double fraction);
    /// One finished temperature level of the running job (live convergence).
    void levelFinished(quint64 job, const routepack::LevelStats& level);
    void finished(const routepack::views::PlanJobResult& result);
    /// The planner (or loading the window) failed; `message` is the error in the studio's words
    /// (JobFailure::text: budgets named by their fields' labels).
    void failed(quint64 job, const QString& message);
    /// Run-planning job `job` is at window `index` of `count` (0-based), in planner stage `stage`:
    /// `window` the fraction of that window (StageProgress: window 0 by the queue's stage weights for
    /// the run's budgets, window k > 0 by window k-1's measured stage times), `overall` of the whole
    /// run ((index + window) / count). Throttled like `progress`.
    void runProgress(quint64 job, int index, int count, const QString& stage, double window, double overall);
    /// Window `index` of run-planning job `job` planned to its end and was saved as run `runId` (0 when
    /// not saved); `maxU` its routepack max_g U.
    void runStepFinished(quint64 job, int index, int count, const QString& window, qint64 runId, double maxU);
    void runFinished(const routepack::views::RunPlanResult& result);
    /// A queued job was removed by cancel() before it started.
    void cancelledQueued(quint64 job);
    /// A job of an older generation ended; its result was dropped. `library`: the job's library
    /// file (PlanJobRequest::library), where its run was saved.
    void staleDropped(quint64 job, const QString& library);
    /// No job runs and none waits.
    void idle();

private:
    /// The worker's part: opens its own library connection, plans (or restores) and saves. Throws
    /// what planning threw (after saving the failed run when the job saves runs).
    PlanJobResult run(const PlanJobRequest& request, const StageWeights& weights, JobContext& context);
    /// The worker's part of a run-planning job (`stop`: setRunStopForTesting's hook).
    RunPlanResult runChain(const RunPlanRequest& request, const StageWeights& weights,
                           const std::function<bool(int)>& stop, JobContext& context);
    /// Stores a run-planning job's saved runs (out.runIds, those > 0) as one whole run (source
    /// "studio"), into out.wholeRunId; a failure lands in out.error. Nothing when the job saves no
    /// runs, failed, or saved none.
    static void saveWholeRun(const RunPlanRequest& request, storage::Library& lib, RunPlanResult& out,
                             JobContext& context);
    /// Drops the ended job's entry of jobs_; returns its library file ("" when unknown).
    QString forget(quint64 job);
    /// Queues `work` (JobContext& -> Result, on the worker) under `label` and `library`; its result
    /// goes to `deliver` on the GUI thread, a failure to `failed`, a stale result to `staleDropped`.
    /// Returns the job's id (what jobStarted names: it is emitted inside the tracker's start when
    /// nothing runs).
    template <class Result, class Work, class Deliver>
    quint64 queue(const QString& label, const QString& library, Work&& work, Deliver&& deliver) {
        const quint64 id = tracker_->nextId();
        jobs_[id] = {label, library};
        Q_EMIT jobQueued(id, label);
        const quint64 started = tracker_->start<Result>(
            std::forward<Work>(work),
            [this, deliver = std::forward<Deliver>(deliver)](quint64 job, const std::shared_ptr<const Result>& r) {
                forget(job);
                deliver(*r);
            },
            [this](quint64 job, const JobFailure& failure) {
                forget(job);
                Q_EMIT failed(job, failure.text);
            },
            [this](quint64 job) { Q_EMIT staleDropped(job, forget(job)); });
        Q_ASSERT(started == id);
        return started;
    }

    JobTracker* tracker_ = nullptr;
    StageWeights weights_ = StageWeights::defaults();
    std::optional<routepack::PlannerBudgets> weightsBudgets_ = routepack::PlannerBudgets{};
    std::function<bool(int)> runStop_;
    /// Label (PlanJobRequest::label) and library of every job that runs or waits.
    std::map<quint64, std::pair<QString, QString>> jobs_;
};

} // namespace routepack::views

Q_DECLARE_METATYPE(routepack::LevelStats)
Q_DECLARE_METATYPE(routepack::views::PlanJobResult)
Q_DECLARE_METATYPE(routepack::views::RunPlanResult)
