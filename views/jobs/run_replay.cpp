#include "views/jobs/run_replay.h"

#include "views/jobs/plan_jobs.h"

namespace routepack::views {

const RunReplay::Entry* RunReplay::find(qint64 id) const {
    const auto it = cache_.find(id);
    return it == cache_.end() ? nullptr : &it->second;
}

qint64 RunReplay::store(qint64 id, std::shared_ptr<const PlanResult> plan, std::shared_ptr<const Trace> window) {
    if (id == 0) id = nextUnsaved_--;
    cache_[id] = Entry{std::move(plan), std::move(window)};
    return id;
}

quint64 RunReplay::restore(PlanJobQueue& jobs, const QString& library, const storage::RunEntry& run, bool show,
                           const QString& label) {
    for (const auto& [job, r] : restores_)
        if (r.run == run.id) return job; // already on its way
    PlanJobRequest rq;
    rq.library = library;
    rq.trace = QString::fromStdString(run.trace);
    rq.window = QString::fromStdString(run.window);
    rq.topologyName = QString::fromStdString(run.topology);
    rq.topology = run.topology_value;
    rq.budgets = run.budgets;
    rq.saveRun = false;
    rq.restoreRun = run.id;
    rq.label = label;
    const quint64 job = jobs.enqueue(rq);
    restores_[job] = Restore{run.id, show};
    return job;
}

std::optional<RunReplay::Restore> RunReplay::takeRestore(quint64 job) {
    const auto it = restores_.find(job);
    if (it == restores_.end()) return std::nullopt;
    const Restore r = it->second;
    restores_.erase(it);
    return r;
}

int RunReplay::forget(const std::function<bool(qint64, const PlanResult&)>& which) {
    const auto n = std::erase_if(cache_, [&](const auto& kv) { return which(kv.first, *kv.second.plan); });
    return static_cast<int>(n);
}

void RunReplay::clear() {
    cache_.clear();
    restores_.clear();
}

} // namespace routepack::views
