#pragma once
// Field-by-field comparison of two PlanFile values (tests of plan_file_of against parse_plan).
#include "core/plan/budgets_json.h"
#include "core/plan/plan_file.h"

#include <string>

namespace routepack::test {

/// The first field in which `a` and `b` differ ("metrics.reorder", "comm.figures.grouter", ...), or
/// "" when every field of the plan file is equal (doubles compared exactly).
inline std::string plan_file_difference(const PlanFile& a, const PlanFile& b) {
    auto same_metrics = [](const LayoutMetrics& x, const LayoutMetrics& y) {
        return x.score == y.score && x.cv_global == y.cv_global && x.ep_peak_sum == y.ep_peak_sum &&
               x.ep_tail_peak == y.ep_tail_peak && x.ep_balance_efficiency == y.ep_balance_efficiency &&
               x.attention_sum == y.attention_sum && x.joint == y.joint && x.cap_violations == y.cap_violations &&
               x.empty_cells == y.empty_cells;
    };
    if (a.version != b.version) return "version";
    if (a.trace_name != b.trace_name || a.window_name != b.window_name) return "names";
    if (a.fingerprint != b.fingerprint) return "fingerprint";
    if (!(a.model == b.model)) return "model";
    if (!(a.topology == b.topology)) return "topology";
    if (!(a.placement == b.placement)) return "placement";
    if (a.sample_ids != b.sample_ids || a.lengths != b.lengths) return "samples";
    if (a.row_count != b.row_count || a.row_count_certified != b.row_count_certified ||
        a.row_lower_bound != b.row_lower_bound)
        return "row_count";
    if (!(a.layout == b.layout)) return "layout";
    if (!(a.score == b.score)) return "score";
    if (a.has_bound != b.has_bound || a.bound.value != b.bound.value || a.bound.mean != b.bound.mean ||
        a.bound.sample != b.bound.sample)
        return "bound";
    if (a.metrics.size() != b.metrics.size()) return "metrics";
    for (const auto& [name, x] : a.metrics)
        if (!b.metrics.count(name) || !same_metrics(x, b.metrics.at(name))) return "metrics." + name;
    const PlanFileComm &c = a.comm, &d = b.comm;
    if (c.nodes != d.nodes || c.available != d.available || c.note != d.note || c.weight != d.weight ||
        c.load_tolerance != d.load_tolerance)
        return "comm";
    if (c.figures.size() != d.figures.size()) return "comm.figures";
    for (const auto& [name, x] : c.figures) {
        const auto it = d.figures.find(name);
        if (it == d.figures.end() || x.inter != it->second.inter || x.intra != it->second.intra ||
            x.busiest != it->second.busiest || x.inter_per_layer != it->second.inter_per_layer)
            return "comm.figures." + name;
    }
    if (c.has_grouter != d.has_grouter || c.grouter_fitted != d.grouter_fitted ||
        !(c.grouter_placement == d.grouter_placement) || !(c.grouter_layout == d.grouter_layout) ||
        c.grouter_off_node != d.grouter_off_node)
        return "comm.grouter";
    if (c.has_comm_method != d.has_comm_method || !(c.comm_placement == d.comm_placement) ||
        !(c.comm_layout == d.comm_layout) || !(c.comm_search_score == d.comm_search_score))
        return "comm.routepack+comm";
    if (a.seed != b.seed || a.workers != b.workers) return "seed, workers";
    if (planner_budgets_to_json(a.budgets) != planner_budgets_to_json(b.budgets)) return "budgets";
    if (a.placement_refined != b.placement_refined || a.placement_rounds_kept != b.placement_rounds_kept ||
        a.placement_swaps != b.placement_swaps || a.placement_refinement_skipped != b.placement_refinement_skipped)
        return "placement_refinement";
    return {};
}

} // namespace routepack::test
