#include "views/plan_jobs.h"

#include "core/plan/plan_file.h"
#include "core/util/errors.h"
#include "storage/library.h"
#include "views/gui_text.h"

#include <QDateTime>
#include <QElapsedTimer>

#include <algorithm>
#include <chrono>
#include <thread>

namespace routepack::views {

namespace {

/// The worker's library connection waits this long for another writer's lock per attempt ...
constexpr int kWorkerBusyTimeoutMs = 1000;
/// ... and a save that still finds the library busy is tried again, with growing pauses, until
/// this much time has passed since the first attempt (on the worker, never on the GUI thread).
constexpr auto kSaveRetryFor = std::chrono::seconds(60);

/// Runs `save` (a write to the library) and, while another process holds the library
/// (storage::LibraryBusy), runs it again after 100 ms, 200 ms, ... (at most 2 s apart) until
/// kSaveRetryFor has passed or `stop` is set; then the last LibraryBusy propagates.
template <class Fn> auto retryWhileBusy(Fn&& save, const std::atomic<bool>& stop) {
    const auto deadline = std::chrono::steady_clock::now() + kSaveRetryFor;
    auto pause = std::chrono::milliseconds(100);
    for (;;) {
        try {
            return save();
        } catch (const storage::LibraryBusy&) {
            if (stop.load() || std::chrono::steady_clock::now() + pause >= deadline) throw;
        }
        // Sleep in short slices so that shutting the queue down is not held up.
        const auto until = std::chrono::steady_clock::now() + pause;
        while (!stop.load() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(2000));
    }
}

} // namespace

PlanJobQueue::PlanJobQueue(QObject* parent)
    : QObject(parent), tracker_(new JobTracker(JobTracker::Policy::EveryResult, 1, true, this)) {
    qRegisterMetaType<routepack::LevelStats>();
    qRegisterMetaType<routepack::views::PlanJobResult>();
    connect(tracker_, &JobTracker::started, this, [this](quint64 job) { Q_EMIT jobStarted(job, jobs_[job].first); });
    connect(tracker_, &JobTracker::removed, this, [this](quint64 job) {
        jobs_.erase(job);
        Q_EMIT cancelledQueued(job);
    });
    connect(tracker_, &JobTracker::idle, this, &PlanJobQueue::idle);
}

PlanJobQueue::~PlanJobQueue() {
    tracker_->shutdown();
}

quint64 PlanJobQueue::enqueue(const PlanJobRequest& request) {
    PlanJobRequest rq = request;
    if (rq.label.isEmpty()) rq.label = request.trace + QLatin1Char('/') + request.window;
    // The id the tracker will hand out: jobStarted is emitted inside start() when nothing runs.
    const quint64 id = tracker_->nextId();
    jobs_[id] = {rq.label, rq.library};
    const quint64 started = tracker_->start<PlanJobResult>(
        [this, rq, weights = weights_](JobContext& context) { return run(rq, weights, context); },
        [this](quint64 job, const std::shared_ptr<const PlanJobResult>& result) {
            forget(job);
            Q_EMIT finished(*result);
        },
        [this](quint64 job, const JobFailure& failure) {
            forget(job);
            Q_EMIT failed(job, failure.text);
        },
        [this](quint64 job) { Q_EMIT staleDropped(job, forget(job)); });
    Q_ASSERT(started == id);
    return started;
}

PlanJobResult PlanJobQueue::run(const PlanJobRequest& request, const StageWeights& weights, JobContext& context) {
    PlanJobResult out;
    QElapsedTimer timer;
    timer.start();
    const quint64 id = context.id();
    const std::string started = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    // Progress in proportion to time (each stage by its share of the run), throttled here on the
    // worker: only values cross to the GUI thread.
    StageProgress timeShare(weights, request.budgets.annealing.levels, request.topology.nodes() > 1);
    auto on_event = [&](const PlanEvent& e) {
        if (e.level) context.post([this, id, level = *e.level] { Q_EMIT levelFinished(id, level); });
        const double fraction = timeShare.update(e);
        if (!context.throttle().passStage(e.stage, e.stage == "done")) return;
        context.post(
            [this, id, stage = QString::fromStdString(e.stage), fraction] { Q_EMIT progress(id, stage, fraction); });
    };
    std::unique_ptr<storage::Library> lib;
    try {
        const bool writes = request.saveRun && request.restoreRun <= 0;
        lib = storage::Library::open(request.library.toStdString(),
                                     writes ? storage::OpenMode::ReadWrite : storage::OpenMode::ReadOnly);
        lib->set_busy_timeout_ms(kWorkerBusyTimeoutMs);
        PlanInput in;
        in.window = lib->load_window(request.trace.toStdString(), request.window.toStdString(),
                                     storage::routes_for(request.topology));
        in.trace_name = request.trace.toStdString();
        in.window_name = request.window.toStdString();
        in.topology = request.topology;
        in.budgets = request.budgets;
        std::shared_ptr<PlanResult> plan;
        if (request.restoreRun > 0) {
            const std::string origin = "run " + std::to_string(request.restoreRun);
            const storage::RunEntry run = lib->run(request.restoreRun);
            const PlanFile file = parse_plan(lib->run_plan_json(request.restoreRun), origin);
            plan = std::make_shared<PlanResult>(restore_plan(file, in.window, origin));
            plan->budgets = run.budgets;
            plan->search.convergence = run.levels;
            plan->timings = run.timings;
            plan->cancelled = run.status == "cancelled";
            plan->time_limit_hit = file.time_limit_hit;
        } else {
            plan = std::make_shared<PlanResult>(plan_window(in, on_event, context.cancelFlag()));
        }
        out.window = std::make_shared<const Trace>(std::move(in.window));
        out.plan = plan;
        if (request.saveRun && request.restoreRun <= 0) {
            try {
                // Another process (an import, a second studio) may hold the library for a
                // while: keep the finished plan and try again before giving up.
                out.runId =
                    retryWhileBusy([&] { return lib->save_run(*plan, request.topologyName.toStdString(), started).id; },
                                   context.shutdownFlag());
            } catch (const std::exception& e) {
                out.saveError = guiErrorText(e);
            }
        }
    } catch (const std::exception& e) {
        // Record the failed run (in the library's words), then let the tracker report the error.
        if (request.saveRun && request.restoreRun <= 0 && lib) {
            try {
                retryWhileBusy(
                    [&] {
                        return lib->save_failed_run(request.trace.toStdString(), request.window.toStdString(),
                                                    request.topologyName.toStdString(), request.topology,
                                                    request.budgets, e.what(), started);
                    },
                    context.shutdownFlag());
            } catch (const std::exception&) {
                // The failure itself is what the user needs to see; a record of it is secondary.
            }
        }
        throw; // the connection closes while the exception leaves: before the GUI hears of the end
    }
    lib.reset(); // close this thread's connection before the GUI hears of the end
    out.job = id;
    out.seconds = static_cast<double>(timer.nsecsElapsed()) / 1e9;
    return out;
}

QString PlanJobQueue::forget(quint64 job) {
    const auto it = jobs_.find(job);
    if (it == jobs_.end()) return {};
    const QString library = it->second.second;
    jobs_.erase(it);
    return library;
}

bool PlanJobQueue::cancel(quint64 id) {
    return tracker_->cancel(id);
}

void PlanJobQueue::cancelCurrent() {
    tracker_->cancelRunning();
}

void PlanJobQueue::cancelAll() {
    tracker_->cancelAll();
}

void PlanJobQueue::setStageWeights(const StageWeights& weights) {
    weights_ = weights;
}

void PlanJobQueue::invalidate() {
    tracker_->invalidate();
}

quint64 PlanJobQueue::generation() const {
    return tracker_->generation();
}

quint64 PlanJobQueue::currentJob() const {
    const auto running = tracker_->runningJobs();
    return running.empty() ? 0 : running.front();
}

int PlanJobQueue::queuedCount() const {
    return tracker_->pendingCount();
}

bool PlanJobQueue::isBusy() const {
    return tracker_->runningCount() > 0;
}

void PlanJobQueue::waitForIdle() {
    tracker_->waitForDone();
}

} // namespace routepack::views
