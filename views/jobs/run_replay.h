#pragma once
// The studio's run replay: the plans made or restored in this session, by run id, and the restores of
// runs saved in an earlier session that are on their way. A restore replays a saved run exactly from
// its stored plan JSON on the planner queue (PlanJobRequest::restoreRun: the window, its placements
// and baselines are recomputed; nothing is searched or written), so that selecting a saved run, or
// comparing every saved run of a window, never plans again.
#include "core/model/trace.h"
#include "core/plan/planner.h"
#include "storage/library.h"

#include <QString>

#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace routepack::views {

class PlanJobQueue;

/// Session cache of plans by run id plus the pending restores. Ids: a saved run's id (> 0), or -1,
/// -2, ... for plans that were not saved (a read-only library, a failed save), in the order they
/// arrived. GUI thread only.
class RunReplay {
public:
    /// A cached plan and the window it was planned on (for the cost views); both never null.
    struct Entry {
        std::shared_ptr<const routepack::PlanResult> plan;
        std::shared_ptr<const routepack::Trace> window;
    };
    /// A restore on its way: the saved run it shows and whether to show it when it arrives.
    struct Restore {
        qint64 run = 0;   ///< the saved run's id
        bool show = true; ///< false: only add it to the comparison
    };

    /// The cached plan of run `id` (nullptr when absent).
    const Entry* find(qint64 id) const;
    bool contains(qint64 id) const { return cache_.count(id) != 0; }
    /// Every cached plan, by ascending id (unsaved ones first, newest first).
    const std::map<qint64, Entry>& entries() const { return cache_; }
    /// Caches a plan under `id`, or under the next unsaved id (-1, -2, ...) when `id` is 0 (replacing
    /// what `id` held); returns the id used.
    qint64 store(qint64 id, std::shared_ptr<const routepack::PlanResult> plan,
                 std::shared_ptr<const routepack::Trace> window);

    /// Queues a restore of saved run `run` of `library` on `jobs`, labelled `label` in the status bar;
    /// returns the planner job id. When a restore of the same run is already on its way, queues
    /// nothing and returns that job's id (its `show` stays as first asked).
    quint64 restore(PlanJobQueue& jobs, const QString& library, const storage::RunEntry& run, bool show,
                    const QString& label);
    /// Removes and returns the restore that planner job `job` is (nullopt when it is none): call it
    /// once the job finished, failed, was dropped as stale or was removed from the queue.
    std::optional<Restore> takeRestore(quint64 job);
    /// The restore that planner job `job` is, left in place (nullptr when it is none).
    const Restore* findRestore(quint64 job) const {
        const auto it = restores_.find(job);
        return it == restores_.end() ? nullptr : &it->second;
    }
    /// Restores on their way.
    int pendingRestores() const { return static_cast<int>(restores_.size()); }

    /// Forgets every plan and restore (another library was opened: its run ids mean other runs).
    /// Unsaved ids keep counting down, so that they stay unique in the session.
    void clear();
    /// Forgets the cached plans (saved or not) for which `which(id, plan)` holds, e.g. those of a
    /// deleted or renamed trace or window. Returns how many went.
    int forget(const std::function<bool(qint64 id, const routepack::PlanResult& plan)>& which);

private:
    std::map<qint64, Entry> cache_;
    std::map<quint64, Restore> restores_; ///< planner job -> the saved run it restores
    qint64 nextUnsaved_ = -1;
};

} // namespace routepack::views
