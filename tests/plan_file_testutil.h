#pragma once
// Field-by-field comparison of two PlanFile values (tests of plan_file_of against parse_plan).
#include "core/plan/budgets.h"
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
        a.row_lower_bound != b.row_lower_bound || a.row_count_how != b.row_count_how ||
        a.baseline_is_fixed_row_ffd != b.baseline_is_fixed_row_ffd)
        return "row_count";
    if (!(a.layout == b.layout)) return "layout";
    if (!(a.score == b.score)) return "score";
    if (a.has_bound != b.has_bound || a.bound.value != b.bound.value || a.bound.mean != b.bound.mean ||
        a.bound.sample != b.bound.sample)
        return "bound";
    for (const MethodRow& m : kMethodTable) {
        const auto &x = a.metrics[m.method], &y = b.metrics[m.method];
        if (x.has_value() != y.has_value() ||
            (x && (x->placement != y->placement || !same_metrics(x->metrics, y->metrics))))
            return std::string("metrics.") + m.key;
    }
    const PlanFileComm &c = a.comm, &d = b.comm;
    if (c.nodes != d.nodes || c.available != d.available || c.note != d.note || c.weight != d.weight ||
        c.load_tolerance != d.load_tolerance)
        return "comm";
    for (const MethodRow& m : kMethodTable) {
        const auto &x = c.figures[m.method], &y = d.figures[m.method];
        if (x.has_value() != y.has_value() ||
            (x && (x->inter != y->inter || x->intra != y->intra || x->busiest != y->busiest ||
                   x->inter_per_layer != y->inter_per_layer)))
            return std::string("comm.figures.") + m.key;
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
    if (plan_migration_json(a.migration) != plan_migration_json(b.migration)) return "migration";
    const PlanFileSearch &s = a.search, &t = b.search;
    if (s.population != t.population || s.proposals != t.proposals || s.accepted != t.accepted ||
        s.polish_evaluations != t.polish_evaluations || s.polish_improvements != t.polish_improvements ||
        s.polish_kicks != t.polish_kicks || s.polish_kicks_kept != t.polish_kicks_kept ||
        s.polish_local_optimum != t.polish_local_optimum || s.convergence.size() != t.convergence.size())
        return "search";
    for (std::size_t k = 0; k < s.convergence.size(); ++k) {
        const LevelStats &x = s.convergence[k], &y = t.convergence[k];
        if (x.level != y.level || x.temperature != y.temperature || !(x.best == y.best) ||
            x.mean_energy != y.mean_energy || x.acceptance != y.acceptance || x.proposals != y.proposals)
            return "search.convergence";
    }
    if (a.cancelled != b.cancelled || a.time_limit_hit != b.time_limit_hit) return "cancelled, time_limit_hit";
    if (a.timings != b.timings) return "timings";
    return {};
}

} // namespace routepack::test
