#pragma once
// The one way the studio runs background work. A JobTracker runs work functions on its own worker
// threads and hands each result back to the thread that owns the tracker (the GUI thread) as an
// immutable value (std::shared_ptr<const R>). Every job has an id (1, 2, ... per tracker) and the
// tracker's generation at its start; a result or an intermediate value (progress, a finished
// annealing level) is delivered only while the job's generation is still current, so the latest
// request wins and answers about what is no longer shown are dropped. Cancel is cooperative: a job's
// cancel flag is handed to the core functions that poll one (plan_window, import_trace,
// rewrite_checkpoint). A work function that throws ends its job with a JobFailure: the error's kind
// (from its type) and its text in the studio's words (guiErrorText, views/widgets/gui_text.h), the one
// rendering of a failed job. ProgressThrottle is the one rate limit of progress reports (50 ms).
//
// Users: PlanJobQueue (planning and restoring saved runs), ImportJob (trace import), RewriteJob
// (rewrite checks and rewrites), and the one-shot loads of the studio (sample table, demo library,
// format detection, device query). Worker code never touches widgets; it only computes values.
#include <QObject>
#include <QString>

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

class QThreadPool;

namespace routepack::views {

/// Rate limit of progress reports: at most one per kInterval (20 per second), with forced reports
/// (a stage change, the end of a stage) always passing. Used on the worker thread of one job; not
/// thread-safe.
class ProgressThrottle {
public:
    using Clock = std::chrono::steady_clock;
    /// The interval between two reports that are not forced.
    static constexpr std::chrono::milliseconds kInterval{50};

    /// True when a report should go out at `now`: the first call, a `force`d one, or one at least
    /// kInterval after the last report that went out (which `now` then becomes).
    bool pass(bool force = false, Clock::time_point now = Clock::now());
    /// pass(), where `stage` differing from the stage of the last report that went out also forces.
    bool passStage(const std::string& stage, bool force = false, Clock::time_point now = Clock::now());

private:
    bool reported_ = false;
    Clock::time_point last_{};
    std::string stage_;
};

/// Why a job ended without a result: what its work function threw, classified by the error's type
/// and worded once.
struct JobFailure {
    enum class Kind {
        Cancelled,   ///< routepack::Cancelled: the job's cancel flag stopped it
        Busy,        ///< storage::LibraryBusy: another process holds the library; the same job may succeed later
        ReadOnly,    ///< storage::LibraryReadOnly: the library cannot be written
        Input,       ///< any other InputError: bad input (a file, a field, a setting)
        OutOfMemory, ///< std::bad_alloc
        Internal,    ///< anything else: a broken contract
    };
    Kind kind = Kind::Internal;
    /// The error in the studio's words (guiErrorText: settings named by their fields' labels; "out of
    /// memory"; "cancelled"); never empty.
    QString text;

    /// The failure of exception `error` (a null pointer or a non-std::exception: Internal, "the job
    /// failed without an error message").
    static JobFailure of(const std::exception_ptr& error);
};

class JobTracker;

/// What a work function sees of its job, on the worker thread.
class JobContext {
public:
    /// The job's id (JobTracker::start's return value).
    quint64 id() const { return id_; }
    /// The job's cooperative cancel flag, set by JobTracker::cancel / cancelAll / shutdown. Hand it to
    /// the core function that polls it; a test hook may set it from the worker too.
    std::atomic<bool>* cancelFlag() const { return cancel_.get(); }
    bool cancelRequested() const { return cancel_->load(); }
    /// Set once the tracker shuts down (its owner is being destroyed): stop waiting for anything that
    /// may take long (e.g. retries while another process holds the library).
    const std::atomic<bool>& shutdownFlag() const;
    /// Runs `fn` on the tracker's thread, after everything posted before, unless the job's generation
    /// is no longer current when it gets there. `fn` must capture values only (never worker locals by
    /// reference).
    void post(std::function<void()> fn) const;
    /// The job's progress throttle (one per job).
    ProgressThrottle& throttle() { return throttle_; }

private:
    friend class JobTracker;
    JobContext(JobTracker* tracker, quint64 id, quint64 generation, std::shared_ptr<std::atomic<bool>> cancel)
        : tracker_(tracker), id_(id), generation_(generation), cancel_(std::move(cancel)) {}
    JobTracker* tracker_;
    quint64 id_;
    quint64 generation_;
    std::shared_ptr<std::atomic<bool>> cancel_;
    ProgressThrottle throttle_;
};

/// Runs jobs on a private thread pool, at most `maxThreads` at once, in the order they were started
/// (a FIFO of pending jobs waits for a free thread), and delivers their results on the tracker's
/// thread.
///
/// Lifecycle of a job: start() gives it its id and records the current generation; it is pending
/// until a thread is free, then `started(id)` is emitted (synchronously inside start() when a thread
/// is free at once) and it runs. When its work function returns, it stops counting as running and
/// `done(id, result)` runs on the tracker's thread if the job's generation is still current, else
/// `stale(id)` (when given); then the next pending job starts, or `idle()` is emitted when none runs
/// and none waits. A pending job removed by cancel() or cancelAll() never runs (`removed(id)`).
///
/// Generations: with Policy::LatestResult every start() first starts a new generation, so only the
/// latest job's values and result are delivered; with Policy::EveryResult only invalidate() does. A
/// superseded job is not cancelled: it runs to its end (its side effects, such as a saved run, still
/// happen) and only its delivery is dropped.
///
/// Errors: a work function that cannot deliver its result throws (InputError, Cancelled, ...); the
/// tracker turns what it threw into a JobFailure (JobFailure::of, on the worker thread) and calls
/// `failed(id, failure)` instead of `done` (when the generation is still current, else `stale`).
/// `done` always receives a result; a failure without a `failed` callback is dropped.
class JobTracker : public QObject {
    Q_OBJECT
public:
    enum class Policy {
        EveryResult,  ///< every job's result is delivered until invalidate()
        LatestResult, ///< start() supersedes every earlier job (latest request wins)
    };

    /// `maxThreads` jobs run at once. `keepThreads`: the worker threads never expire (a long-lived
    /// planner thread keeps its thread-local state between jobs).
    explicit JobTracker(Policy policy, int maxThreads = 1, bool keepThreads = false, QObject* parent = nullptr);
    /// shutdown().
    ~JobTracker() override;

    /// Called with a failed job's id and why it failed.
    using FailedFn = std::function<void(quint64 id, const JobFailure& failure)>;

    /// Queues `work(context)` to run on a worker thread; returns the job id (1, 2, ...). See the class
    /// doc for when `done`, `failed` and `stale` are called.
    template <class R>
    quint64 start(std::function<R(JobContext&)> work,
                  std::function<void(quint64 id, std::shared_ptr<const R> result)> done,
                  // `failed` and `stale` are moved into startErased below; the check takes that
                  // std::move, an argument of a call that depends on R, for a const use.
                  // NOLINTNEXTLINE(performance-unnecessary-value-param)
                  FailedFn failed = {},
                  // NOLINTNEXTLINE(performance-unnecessary-value-param)
                  std::function<void(quint64 id)> stale = {}) {
        return startErased(
            [work = std::move(work)](JobContext& context) -> std::shared_ptr<const void> {
                return std::make_shared<const R>(work(context));
            },
            [done = std::move(done)](quint64 id, const std::shared_ptr<const void>& result) {
                if (done) done(id, std::static_pointer_cast<const R>(result));
            },
            std::move(failed), std::move(stale));
    }

    /// Sets the cancel flag of running job `id`, or removes pending job `id` (`removed`). False for an
    /// id that neither runs nor waits.
    bool cancel(quint64 id);
    /// Sets the cancel flag of every running job; pending ones still start.
    void cancelRunning();
    /// Removes every pending job (`removed` for each, oldest first), then cancelRunning().
    void cancelAll();
    /// Starts a new generation: values and results of every job started before are dropped.
    void invalidate();
    /// The id the next start() returns (so that an owner can record what it needs about the job before
    /// `started` is emitted inside start()).
    quint64 nextId() const { return nextId_; }
    /// The current generation (1 at construction).
    quint64 generation() const { return generation_; }
    /// Ids of the running jobs (started and not yet delivered or dropped), oldest first.
    std::vector<quint64> runningJobs() const;
    /// Running jobs.
    int runningCount() const { return static_cast<int>(running_.size()); }
    /// Jobs waiting for a thread.
    int pendingCount() const { return static_cast<int>(pending_.size()); }
    /// True while job `id` runs or waits.
    bool isActive(quint64 id) const;
    /// Blocks until every running work function returned (tests and shutdown only, never in GUI code
    /// paths). Their deliveries are still queued on the tracker's thread afterwards.
    void waitForDone();
    /// Drops every pending job, cancels the running ones, sets the shutdown flag and waits for their
    /// work functions to return; nothing is delivered or started afterwards. Owners call it from their
    /// destructor.
    void shutdown();

Q_SIGNALS:
    /// Job `id` left the pending FIFO and runs now.
    void started(quint64 id);
    /// Pending job `id` was removed by cancel() or cancelAll() before it started.
    void removed(quint64 id);
    /// After a delivery: no job runs and none waits.
    void idle();

private:
    friend class JobContext;
    struct Job;
    using ErasedWork = std::function<std::shared_ptr<const void>(JobContext&)>;
    using ErasedDone = std::function<void(quint64, const std::shared_ptr<const void>&)>;
    quint64 startErased(ErasedWork work, ErasedDone done, FailedFn failed, std::function<void(quint64)> stale);
    void launchPending();
    /// On the tracker's thread: a job's result, or (null result) its failure.
    void onEnded(const std::shared_ptr<Job>& job, const std::shared_ptr<const void>& result, const JobFailure& failure);
    void postFor(quint64 generation, std::function<void()> fn);

    Policy policy_;
    int maxThreads_;
    QThreadPool* pool_ = nullptr;
    quint64 nextId_ = 1;
    quint64 generation_ = 1;
    bool shutDown_ = false;
    std::atomic<bool> shutdownFlag_{false};
    std::deque<std::shared_ptr<Job>> pending_;
    std::map<quint64, std::shared_ptr<Job>> running_; ///< by id: oldest first
};

} // namespace routepack::views
