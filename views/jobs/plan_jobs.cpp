#include "views/jobs/plan_jobs.h"

#include "core/model/trace.h"
#include "core/plan/plan_file.h"
#include "core/plan/plan_stage.h"
#include "core/util/errors.h"
#include "storage/library.h"
#include "views/widgets/gui_text.h"

#include <QDateTime>
#include <QElapsedTimer>

#include <algorithm>
#include <chrono>
#include <optional>
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
    qRegisterMetaType<routepack::views::RunPlanResult>();
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
    return queue<PlanJobResult>(
        rq.label, rq.library,
        [this, rq, weights = stageWeights(rq.budgets)](JobContext& context) { return run(rq, weights, context); },
        [this](const PlanJobResult& result) { Q_EMIT finished(result); });
}

quint64 PlanJobQueue::enqueueRun(const RunPlanRequest& request) {
    RunPlanRequest rq = request;
    if (rq.label.isEmpty()) rq.label = tr("%1: %2 windows").arg(request.trace).arg(request.windows.size());
    return queue<RunPlanResult>(
        rq.label, rq.library,
        [this, rq, weights = stageWeights(rq.budgets), stop = runStop_](JobContext& context) {
            return runChain(rq, weights, stop, context);
        },
        [this](const RunPlanResult& result) { Q_EMIT runFinished(result); });
}

std::size_t RunPlanResult::finishedWindows() const {
    return plans.size() - (!plans.empty() && plans.back()->cancelled ? 1 : 0);
}

RunPlanResult PlanJobQueue::runChain(const RunPlanRequest& request, const StageWeights& weights,
                                     const std::function<bool(int)>& stop, JobContext& context) {
    RunPlanResult out;
    QElapsedTimer timer;
    timer.start();
    const quint64 id = context.id();
    out.job = id;
    out.trace = request.trace;
    std::vector<std::string> names;
    for (const QString& w : request.windows)
        names.push_back(w.toStdString());
    std::sort(names.begin(), names.end(), natural_less);
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (const auto& n : names)
        out.windows << QString::fromStdString(n);
    auto lib = storage::Library::open(request.library.toStdString(),
                                      request.saveRuns ? storage::OpenMode::ReadWrite : storage::OpenMode::ReadOnly);
    lib->set_busy_timeout_ms(kWorkerBusyTimeoutMs);
    // The inputs `routepack sweep` builds: every window on one topology with the same budgets.
    std::vector<PlanInput> inputs(names.size());
    for (std::size_t k = 0; k < names.size(); ++k) {
        inputs[k].window =
            lib->load_window(request.trace.toStdString(), names[k], storage::routes_for(request.topology));
        inputs[k].trace_name = request.trace.toStdString();
        inputs[k].window_name = names[k];
        inputs[k].topology = request.topology;
        inputs[k].budgets = request.budgets;
    }
    const int count = static_cast<int>(names.size());
    std::size_t current = names.size();
    std::optional<StageProgress> share;
    // Window k > 0 is weighted by window k-1's measured stage times (same budgets and topology; a
    // chained window's placement stage holds its moves' search, which the defaults do not know).
    StageWeights windowWeights = weights;
    auto on_event = [&](std::size_t k, const PlanEvent& e) {
        if (k != current) share.emplace(windowWeights, request.budgets.annealing.levels, request.topology.nodes() > 1);
        const bool next = k != current;
        current = k;
        const double window = share->update(e);
        if (!context.throttle().passStage(e.stage, next || e.stage == kPlanDone)) return;
        const double overall = (static_cast<double>(k) + window) / count;
        context.post([this, id, k, count, stage = QString::fromStdString(e.stage), window, overall] {
            Q_EMIT runProgress(id, static_cast<int>(k), count, stage, window, overall);
        });
    };
    // Each window that planned to its end is saved at once, so that a cancel keeps it.
    auto on_done = [&](std::size_t k, const WindowPlan& w) {
        if (!w.plan.cancelled) windowWeights = stage_weights_from(w.plan.timings, windowWeights);
        if (!w.error.empty()) {
            out.error = tr("window '%1': %2").arg(out.windows[static_cast<int>(k)], QString::fromStdString(w.error));
            return;
        }
        // A cancelled window's plan is its best valid plan so far (at the least `reorder` on the R*
        // found so far, plan_window): it is saved as a cancelled run and ends the list.
        auto plan = std::make_shared<const PlanResult>(w.plan);
        qint64 run = 0;
        if (request.saveRuns && out.error.isEmpty()) {
            try {
                run = retryWhileBusy(
                    [&] { return lib->save_runs({plan.get()}, request.topologyName.toStdString()).front(); },
                    context.shutdownFlag());
            } catch (const std::exception& e) {
                out.error = tr("the run of window '%1' was not saved: %2")
                                .arg(out.windows[static_cast<int>(k)], guiErrorText(e));
            }
            if (!out.error.isEmpty()) context.cancelFlag()->store(true); // the chain stops: a run without gaps
        }
        out.plans.push_back(plan);
        out.runIds.push_back(run);
        if (plan->cancelled) return;
        if (stop && stop(static_cast<int>(out.plans.size()))) context.cancelFlag()->store(true);
        context.post([this, id, k, count, name = out.windows[static_cast<int>(k)], run,
                      maxU = plan->routepack.metrics.score.max_u] {
            Q_EMIT runStepFinished(id, static_cast<int>(k), count, name, run, maxU);
        });
    };
    plan_chain(inputs, request.budgets.workers, on_done, context.cancelFlag(), on_event);
    out.cancelled = out.finishedWindows() < names.size() && out.error.isEmpty();
    saveWholeRun(request, *lib, out, context);
    lib.reset(); // close this thread's connection before the GUI hears of the end
    out.seconds = static_cast<double>(timer.nsecsElapsed()) / 1e9;
    return out;
}

void PlanJobQueue::saveWholeRun(const RunPlanRequest& request, storage::Library& lib, RunPlanResult& out,
                                JobContext& context) {
    std::vector<std::int64_t> ids;
    for (const qint64 id : out.runIds)
        if (id > 0) ids.push_back(id);
    if (!request.saveRuns || !out.error.isEmpty() || ids.empty()) return;
    storage::WholeRunSpec spec;
    spec.source = storage::WholeRunSource::Studio;
    spec.topology_name = request.topologyName.toStdString();
    spec.settings.seed = request.budgets.seed;
    spec.settings.budgets = request.budgets;
    try {
        out.wholeRunId = retryWhileBusy([&] { return lib.save_whole_run(spec, ids); }, context.shutdownFlag());
    } catch (const std::exception& e) {
        out.error = tr("the whole run was not saved: %1").arg(guiErrorText(e));
    }
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
        // Routepack's convergence only: the communication stage's levels are routepack+comm's search.
        if (e.level && e.stage == plan_stage(PlanStage::Annealing).name)
            context.post([this, id, level = *e.level] { Q_EMIT levelFinished(id, level); });
        const double fraction = timeShare.update(e);
        if (!context.throttle().passStage(e.stage, e.stage == kPlanDone)) return;
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

StageWeights PlanJobQueue::stageWeights(const PlannerBudgets& budgets) const {
    return weightsBudgets_ ? scale_stage_weights(weights_, *weightsBudgets_, budgets) : weights_;
}

void PlanJobQueue::setStageWeights(const StageWeights& weights, const std::optional<PlannerBudgets>& measuredWith) {
    weightsBudgets_ = measuredWith;
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
