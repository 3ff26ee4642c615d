#pragma once
// What the studio's Run view shows: a trace's windows as the steps of a training run, each with one
// saved run's joint cost per method, its gain against the baseline and the placement churn against
// the previous step, grouped by topology. These are the numbers `routepack sweep` prints for the
// runs it saves (app/cmd_sweep.cpp), gain and churn from the same function (summarize_steps,
// core/plan/run_steps.h): joint cost = max_g U (eq. 15) of each method, gain = 100 x (routepack -
// baseline) / baseline, churn = slots whose expert changes against the previous step, summed over MoE
// layers. Plain C++ (no widgets), computed on a worker thread.
#include "core/model/topology.h"
#include "core/plan/sweep_table.h"
#include "storage/library.h"
#include "views/plan_data.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace routepack::views {

/// One step of a run: a window and the saved run shown for it.
struct RunStep {
    std::string window;      ///< window name
    std::size_t samples = 0; ///< samples of the window
    std::int64_t run = 0;    ///< the saved run shown (the newest finished or cancelled run on the topology)
    int runs = 0;            ///< finished or cancelled runs of the window on the topology (>= 1)
    std::string status;      ///< "finished" or "cancelled"
    /// max_g U (eq. 15, tokens) per method: the paper's four, and on more than one node grouter and
    /// routepack+comm (the stored plan's metrics; 0 for a method the plan lacks, see `has`).
    PerMethod<double> cost;
    /// Whether the stored plan has method m (the four always; grouter and routepack+comm when they ran).
    PerMethod<bool> has;
    /// Inter-node token copies of method m (the plan's communication figures, `routepack sweep
    /// --json`'s inter_node_copies); -1 on one node, without per-token routes or for a missing method.
    PerMethod<std::int64_t> inter_copies{{-1, -1, -1, -1, -1, -1}};
    int nodes = 1; ///< nodes of the run's topology
    /// 100 x (routepack - baseline) / baseline in percent (negative: routepack is cheaper; 0 when the
    /// baseline is 0): `routepack sweep`'s routepack_vs_baseline_pct.
    double gain_pct = 0;
    int rows = 0;           ///< R*
    bool certified = false; ///< R* certified
    double planner_s = 0;   ///< the run's planner time ("total" timing), seconds
    std::string previous;   ///< window of the previous step ("" for the first step)
    /// Physical slots whose logical expert changes against the previous step's placement, summed
    /// over MoE layers (placement_slot_changes); -1 for the first step.
    std::int64_t churn = -1;
    /// Experts moved: experts on another EP rank than at the previous step, summed over MoE layers
    /// (placement_moves, summarize_steps); -1 for the first step.
    std::int64_t moves = -1;
    /// The MoE layer (its decoder layer number, ModelDescription::moe_layers) with the most changed
    /// slots, the first on ties (-1: nothing changed or first step).
    int churn_layer = -1;
    std::int64_t churn_layer_slots = 0; ///< changed slots of that layer
};

/// The steps of one topology: every window of the trace (in natural name order, as `routepack sweep`
/// plans them) that has a finished or cancelled run on it. Churn is against the previous listed step.
struct RunSeries {
    std::string topology;    ///< topology name of the runs
    Topology topology_value; ///< the topology the runs used
    std::int64_t slots = 0;  ///< slots of one placement, MoE layers x experts (churn's upper bound)
    std::vector<RunStep> steps;
    /// The methods some step has, in Method order: the paper's four, and the two communication
    /// methods on several nodes.
    std::vector<Method> methods;
    /// The steps as `routepack sweep`'s table (sweep_line of each stored plan, sweep_link; no expert
    /// bytes): what File > Export writes as CSV (sweep_csv).
    std::vector<SweepLine> table;
};

/// Every run series of one trace.
struct RunSeriesSet {
    std::string trace;
    std::size_t windows = 0;           ///< windows of the trace
    std::size_t windows_with_runs = 0; ///< windows with a finished or cancelled run (any topology)
    /// Topologies with runs in at least two windows: the most steps first, ties broken by the newest
    /// run (highest id) first.
    std::vector<RunSeries> series;
    std::string error; ///< why reading failed, in the studio's words (guiErrorText); then `series` is empty
};

/// Reads every saved run of `trace` and builds its series from the stored plans (Library::runs,
/// run_plan_json, parse_plan; summarize_steps for gain and churn). Windows without runs are left out; a window
/// with several runs on one topology shows the newest (highest id). Failed runs (no plan) are
/// skipped. Errors (an unknown trace, a damaged plan) land in RunSeriesSet::error in words; `cancel`
/// (polled between runs) stops early with error "cancelled". Cost: one plan JSON parse per run shown
/// plus O(L x E) per step.
RunSeriesSet compute_run_series(const storage::Library& lib, const std::string& trace,
                                const std::atomic<bool>* cancel = nullptr);

/// One bin of the gain distribution: gains in [lo, hi) percent and the steps (indices into
/// RunSeries::steps) that fall in it.
struct GainBin {
    double lo = 0, hi = 0;
    std::vector<int> steps;
};

/// Histogram of the steps' gain_pct: bins on multiples of the smallest round width (1, 2 or 5 x 10^k
/// percent, at least 0.1) that covers min..max in at most `max_bins` (>= 1) bins; bin lo = floor(gain
/// / width) x width (nice_scale.h round_step, bins_holding). Empty bins inside the range are kept; no
/// steps, or a gain that is not finite: no bins.
std::vector<GainBin> gain_histogram(const RunSeries& series, int max_bins = 8);

/// What the Run view's heading says of a series: routepack against the baseline over its steps
/// (RunStep::gain_pct, percent) and the placement churn.
struct RunSeriesSummary {
    double mean_gain_pct = 0;      ///< mean of gain_pct
    double median_gain_pct = 0;    ///< the middle gain_pct (the mean of the two middle ones for an even count)
    double best_gain_pct = 0;      ///< the lowest gain_pct (the cheapest against the baseline)
    double worst_gain_pct = 0;     ///< the highest gain_pct
    std::int64_t churn_total = 0;  ///< sum of RunStep::churn over the steps that have one (not the first)
    std::int64_t most_changed = 0; ///< the largest churn or moves of one step (0 when none)
};

/// The summary of `series`; all zero for a series without steps. E.g. gains {-4, -1, -2, -3} percent:
/// mean -2.5, median -2.5, best -4, worst -1.
RunSeriesSummary summarize_series(const RunSeries& series);

} // namespace routepack::views
