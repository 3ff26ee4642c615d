#include "views/run/cluster_step.h"

#include "core/plan/plan_file.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"

#include <algorithm>

namespace routepack::views {

namespace {

/// The library traces that may hold the plan's samples: the plan's own trace name first, then every
/// other trace of its model with enough samples, in the library's order.
std::vector<std::string> candidate_traces(const storage::Library& lib, const PlanFile& plan) {
    std::vector<std::string> out;
    const auto traces = lib.traces();
    auto fits = [&](const storage::TraceEntry& t) {
        return !t.load_only && t.model.experts == plan.model.experts && t.model.moe_layers == plan.model.moe_layers &&
               t.samples >= plan.sample_ids.size();
    };
    for (const auto& t : traces)
        if (t.name == plan.trace_name && fits(t)) out.push_back(t.name);
    for (const auto& t : traces)
        if (t.name != plan.trace_name && fits(t)) out.push_back(t.name);
    return out;
}

} // namespace

ClusterStepPlan open_cluster_step(const storage::Library& lib, const std::filesystem::path& plan_file,
                                  const std::atomic<bool>* cancel) {
    const std::string origin = plan_file.string();
    const PlanFile plan = parse_plan(read_input_file(plan_file, input_files::kPlan), origin);
    ClusterStepPlan out;
    std::string last_difference;
    for (const std::string& trace : candidate_traces(lib, plan)) {
        if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
        Trace window;
        try {
            window = lib.load_samples(trace, plan.sample_ids);
        } catch (const InputError&) {
            continue; // the trace lacks some of the step's samples
        }
        try {
            PlanResult r = restore_plan(plan, window, origin);
            r.trace_name = trace;
            out.plan = std::make_shared<const PlanResult>(std::move(r));
            out.window = std::make_shared<const Trace>(std::move(window));
            out.counts_trace = trace;
            return out;
        } catch (const InputError& e) {
            last_difference = "trace " + trace + ": " + e.what();
        }
    }
    out.plan = std::make_shared<const PlanResult>(plan_of_file(plan));
    out.why_no_counts =
        last_difference.empty()
            ? "no trace of the library holds the step's " + std::to_string(plan.sample_ids.size()) + " samples"
            : "the library's samples of the step are not the ones it was planned on (" + last_difference + ")";
    return out;
}

} // namespace routepack::views
