#pragma once
// The sweep table: one line per step of a run (a window planned in a chain), the columns of
// `routepack sweep`'s sweep.csv and sweep.json. Built from planner results (the sweep itself) or
// from saved plan files (the studio's Run view), with the same gains and churn (summarize_steps,
// core/plan/run_steps.h), so both front ends write one table.
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace routepack {

/// One window's line of the sweep table.
struct SweepLine {
    std::string window;
    std::size_t samples = 0;
    int rows = 0; ///< R*
    bool certified = false;
    /// max_g U (eq. 15, tokens) of each method the plan has: the paper's four always, grouter and
    /// routepack+comm on more than one node with routes.
    PerMethod<std::optional<double>> max_u;
    /// routepack's gains against baseline and reorder (gain_pct).
    double vs_baseline_pct = 0, vs_reorder_pct = 0;
    double lower_bound = 0; ///< the bound on max_g U
    double planner_s = 0;   ///< the plan's "total" timing, seconds
    bool time_limit_hit = false;
    std::int64_t run = 0;          ///< the saved run's id
    std::string plan_file;         ///< the plan's file in the sweep's folder ("" without one)
    std::int64_t churn_slots = -1; ///< summarize_steps' churn against the previous window (-1: the first)
    std::int64_t churn_bytes = -1; ///< churn_slots x expert bytes (-1: the first window, or no expert bytes)
    /// Experts moved from the previous placement (the previous window's; for the first window the
    /// identity or the given previous one), and their cost (PlanMigration); nullopt where the expert
    /// size is unknown.
    std::int64_t moves = 0;
    std::optional<double> migration_bytes, materialization_s, compute_s;
    /// The modelled step: compute + step_overhead_seconds of the materialization (planning included).
    std::optional<double> modelled_s;
    std::int64_t moves_total = 0;           ///< moves summed over this and the earlier windows
    std::optional<double> modelled_s_total; ///< modelled_s summed likewise
    std::vector<FrontierPoint> frontier;    ///< this step at every move budget (empty when not asked for)
    /// More than one node: each method's inter-node copies (nullopt where not computed or not run);
    /// comm_unavailable when the window has no routes.
    bool multi_node = false;
    PerMethod<std::optional<std::int64_t>> inter_copies;
    bool comm_unavailable = false;

    /// max_g U of method m (0 when the plan lacks it).
    double cost(Method m) const { return max_u[m].value_or(0); }
};

/// The line of a plan file: its own figures (no gains against the run, no churn, no totals:
/// sweep_link adds them), run 0, no plan file; `planner_s` the run's "total" timing.
SweepLine sweep_line(const PlanFile& plan, double planner_s);
/// The line of one planned window: sweep_line(plan_file_of(plan), its "total" timing).
SweepLine sweep_line(const PlanResult& plan);

/// Completes the lines of a run, in run order: routepack's gain against the baseline and churn
/// against the previous step (summarize_steps over `placements`, routepack's placement of each step,
/// one shape), churn bytes = churn x `expert_bytes` (when > 0), and the running totals of moves and
/// modelled seconds. `placements` has one entry per line.
void sweep_link(std::vector<SweepLine>& lines, const std::vector<const Placement*>& placements,
                std::int64_t expert_bytes);

/// sweep.csv's text: a header and one CRLF-ended line per window (RFC 4180): window, samples, rows,
/// certified, the four methods' max_g U, both gains (%.6f), lower_bound, planner_s, time_limit_hit,
/// churn_slots, churn_bytes, run, the communication columns (empty on one node), experts_moved and
/// the migration columns (empty without an expert size); costs as %.17g.
std::string sweep_csv(const std::vector<SweepLine>& lines);

/// One CSV field (RFC 4180): `v` as it is, or quoted with its quotes doubled when it holds a comma,
/// a quote, CR or LF ("a,b" -> "\"a,b\"", "say \"hi\"" -> "\"say \"\"hi\"\"\"").
std::string csv_field(const std::string& v);

} // namespace routepack
