#include "views/plan_jobs.h"

#include "core/util/errors.h"
#include "core/plan/plan_file.h"
#include "storage/library.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QMetaObject>
#include <QThreadPool>

#include <algorithm>
#include <chrono>
#include <thread>

namespace routepack::views {

namespace {

/// Throttle interval of progress events: at most 20 per second.
constexpr std::int64_t kProgressIntervalMs = 50;

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

QString describe(const std::exception& e) {
    if (dynamic_cast<const std::bad_alloc*>(&e)) return QStringLiteral("out of memory while planning");
    return QString::fromStdString(e.what());
}

} // namespace

struct PlanJobQueue::Job {
    quint64 id = 0;
    quint64 generation = 0;
    PlanJobRequest request;
    std::atomic<bool> cancel{false};
    std::atomic<bool> shutdown{false}; ///< the queue is being destroyed: stop waiting for a busy library
    // Written by the worker, read on the GUI thread after the worker posted its end.
    PlanJobResult result;
    QString error;
    bool ok = false;
};

PlanJobQueue::PlanJobQueue(QObject* parent) : QObject(parent), pool_(new QThreadPool(this)) {
    qRegisterMetaType<routepack::LevelStats>();
    qRegisterMetaType<routepack::views::PlanJobResult>();
    pool_->setMaxThreadCount(1);
    pool_->setExpiryTimeout(-1);
}

PlanJobQueue::~PlanJobQueue() {
    queue_.clear();
    if (current_) {
        current_->cancel.store(true);
        current_->shutdown.store(true);
    }
    pool_->waitForDone();
}

quint64 PlanJobQueue::enqueue(const PlanJobRequest& request) {
    auto job = std::make_shared<Job>();
    job->id = nextId_++;
    job->generation = generation_;
    job->request = request;
    if (job->request.label.isEmpty()) job->request.label = request.trace + QLatin1Char('/') + request.window;
    queue_.push_back(job);
    if (!current_) startNext();
    return job->id;
}

bool PlanJobQueue::cancel(quint64 id) {
    if (current_ && current_->id == id) {
        current_->cancel.store(true);
        return true;
    }
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        if ((*it)->id == id) {
            queue_.erase(it);
            Q_EMIT cancelledQueued(id);
            return true;
        }
    }
    return false;
}

void PlanJobQueue::cancelCurrent() {
    if (current_) current_->cancel.store(true);
}

void PlanJobQueue::cancelAll() {
    while (!queue_.empty()) {
        const quint64 id = queue_.front()->id;
        queue_.pop_front();
        Q_EMIT cancelledQueued(id);
    }
    cancelCurrent();
}

void PlanJobQueue::invalidate() {
    ++generation_;
}

quint64 PlanJobQueue::currentJob() const {
    return current_ ? current_->id : 0;
}

void PlanJobQueue::waitForIdle() {
    pool_->waitForDone();
}

void PlanJobQueue::startNext() {
    if (queue_.empty()) {
        Q_EMIT idle();
        return;
    }
    current_ = queue_.front();
    queue_.pop_front();
    std::shared_ptr<Job> job = current_;
    Q_EMIT jobStarted(job->id, job->request.label);
    pool_->start([this, job] {
        QElapsedTimer timer;
        timer.start();
        const PlanJobRequest& rq = job->request;
        const std::string started = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
        // Progress, throttled here on the worker: only values cross to the GUI thread.
        std::string last_stage;
        auto last_emit = std::chrono::steady_clock::now() - std::chrono::seconds(1);
        auto on_event = [&](const PlanEvent& e) {
            if (e.level) {
                const LevelStats level = *e.level;
                QMetaObject::invokeMethod(
                    this,
                    [this, job, level] {
                        if (job->generation == generation_) Q_EMIT levelFinished(job->id, level);
                    },
                    Qt::QueuedConnection);
            }
            const auto now = std::chrono::steady_clock::now();
            const bool must = e.stage != last_stage || e.stage == "done";
            if (!must && now - last_emit < std::chrono::milliseconds(kProgressIntervalMs)) return;
            last_stage = e.stage;
            last_emit = now;
            const QString stage = QString::fromStdString(e.stage);
            const double fraction = e.fraction;
            QMetaObject::invokeMethod(
                this,
                [this, job, stage, fraction] {
                    if (job->generation == generation_) Q_EMIT progress(job->id, stage, fraction);
                },
                Qt::QueuedConnection);
        };
        std::unique_ptr<storage::Library> lib;
        try {
            const bool writes = rq.saveRun && rq.restoreRun <= 0;
            lib = storage::Library::open(rq.library.toStdString(),
                                         writes ? storage::OpenMode::ReadWrite : storage::OpenMode::ReadOnly);
            lib->set_busy_timeout_ms(kWorkerBusyTimeoutMs);
            PlanInput in;
            in.window = lib->load_window(rq.trace.toStdString(), rq.window.toStdString());
            in.trace_name = rq.trace.toStdString();
            in.window_name = rq.window.toStdString();
            in.topology = rq.topology;
            in.budgets = rq.budgets;
            std::shared_ptr<PlanResult> plan;
            if (rq.restoreRun > 0) {
                const std::string origin = "run " + std::to_string(rq.restoreRun);
                const storage::RunEntry run = lib->run(rq.restoreRun);
                plan = std::make_shared<PlanResult>(
                    restore_plan(parse_plan(lib->run_plan_json(rq.restoreRun), origin), in.window, origin));
                plan->budgets = run.budgets;
                plan->convergence = run.levels;
                plan->timings = run.timings;
                plan->cancelled = run.status == "cancelled";
                plan->time_limit_hit = run.message.find("time limit") != std::string::npos;
            } else {
                plan = std::make_shared<PlanResult>(plan_window(in, on_event, &job->cancel));
            }
            job->result.window = std::make_shared<const Trace>(std::move(in.window));
            job->result.plan = plan;
            job->ok = true;
            if (rq.saveRun && rq.restoreRun <= 0) {
                try {
                    // Another process (an import, a second studio) may hold the library for a
                    // while: keep the finished plan and try again before giving up.
                    job->result.runId = retryWhileBusy(
                        [&] { return lib->save_run(*plan, rq.topologyName.toStdString(), started).id; },
                        job->shutdown);
                } catch (const std::exception& e) {
                    job->result.saveError = describe(e);
                }
            }
        } catch (const std::exception& e) {
            job->error = describe(e);
            if (rq.saveRun && rq.restoreRun <= 0 && lib) {
                try {
                    retryWhileBusy(
                        [&] {
                            return lib->save_failed_run(rq.trace.toStdString(), rq.window.toStdString(),
                                                        rq.topologyName.toStdString(), rq.topology, rq.budgets,
                                                        job->error.toStdString(), started);
                        },
                        job->shutdown);
                } catch (const std::exception&) {
                    // The failure itself is what the user needs to see; a record of it is secondary.
                }
            }
        }
        lib.reset(); // close this thread's connection before the GUI hears of the end
        job->result.job = job->id;
        job->result.seconds = static_cast<double>(timer.nsecsElapsed()) / 1e9;
        QMetaObject::invokeMethod(
            this, [this, job] { onJobEnded(job); }, Qt::QueuedConnection);
    });
}

void PlanJobQueue::onJobEnded(const std::shared_ptr<Job>& job) {
    if (current_ == job) current_.reset();
    if (job->generation != generation_) {
        Q_EMIT staleDropped(job->id, job->request.library);
    } else if (job->ok) {
        Q_EMIT finished(job->result);
    } else {
        Q_EMIT failed(job->id, job->error);
    }
    if (!current_) startNext();
}

} // namespace routepack::views
