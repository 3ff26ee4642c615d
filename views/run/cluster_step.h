#pragma once
// A cluster run's step opened in the plan views: its plan file read from the run's output folder,
// with the step's routing counts when the library holds its samples.
#include "core/model/trace.h"
#include "core/plan/planner.h"
#include "storage/library.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

namespace routepack::views {

/// A cluster run's step as open_cluster_step found it.
struct ClusterStepPlan {
    std::shared_ptr<const routepack::PlanResult> plan; ///< never null
    /// The step's samples, in the plan's order, with their counts (and routes) from the library;
    /// null when the library does not hold them.
    std::shared_ptr<const routepack::Trace> window;
    std::string counts_trace;  ///< the library trace the counts came from ("" without counts)
    std::string why_no_counts; ///< without counts: why, in words (e.g. "no trace of the library holds ...")
};

/// Opens a cluster run step's plan file (OUT/<chain>/<window>.plan.json, ClusterRunStep::plan_file).
/// The counts are looked up in `lib`: first in the trace named like the plan's inputs.trace, then in
/// every other trace of the plan's model (same E and MoE layers, not load-only, at least as many
/// samples), as the plan's sample ids in plan order (Library::load_samples); the first trace whose
/// samples restore the plan exactly (restore_plan: lengths and fingerprint agree) gives a full plan
/// (plan->trace_name is then that trace, so the sample table links to it). Without such a trace the
/// plan is plan_of_file's (core/plan/plan_file.h): the views that need counts say so.
/// InputError "<file>: ..." for an unreadable or invalid plan file (read_input_file, parse_plan);
/// Cancelled when `cancel` is set between traces. Reads only; runs on a worker thread.
ClusterStepPlan open_cluster_step(const storage::Library& lib, const std::filesystem::path& plan_file,
                                  const std::atomic<bool>* cancel = nullptr);

} // namespace routepack::views
