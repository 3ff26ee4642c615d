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
#include "views/plan/plan_data.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace routepack::views {

/// One step of a run: a window and the saved run shown for it.
struct RunStep {
    std::string window;      ///< window name
    std::size_t samples = 0; ///< samples of the window
    std::int64_t run = 0;    ///< the saved run shown (the newest finished or cancelled run on the topology)
    std::string run_name;    ///< its name (storage::RunEntry::name; "" when unnamed)
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
    /// The measured step of method m's layout, seconds (run_measured_seconds of views/plan/measured_data.h:
    /// the latest measured step the library links to it); empty when not measured.
    PerMethod<std::optional<double>> measured;
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
    /// routepack's placement of each step (the plan's "placement"): step k+1's previous placement,
    /// the start of step k+1's frontier (compute_step_frontier).
    std::vector<Placement> placements;
    /// A cluster run's chain: each step's plan file and the step's file or folder as the sweep read
    /// it (ClusterRunStep::plan_file, step_path); empty for the library's saved runs.
    std::vector<std::string> plan_files, step_paths;
    /// A cluster run's chain: its failed steps, "window (stage): the importer's or planner's message".
    std::vector<std::string> failed;
};

/// True when some step of `series` carries what applying it costs in seconds: its plan has a
/// previous placement and a resolved migration cost model (SweepLine::compute_s and
/// materialization_s; the Run view's "applying the run" chart).
bool has_migration_costs(const RunSeries& series);

/// Every run series of one trace.
struct RunSeriesSet {
    std::string trace;
    std::size_t windows = 0;           ///< windows of the trace
    std::size_t windows_with_runs = 0; ///< windows with a finished or cancelled run (any topology)
    /// Topologies with runs in at least two windows: the most steps first, ties broken by the newest
    /// run (highest id) first.
    std::vector<RunSeries> series;
    std::string error; ///< why reading failed, in the studio's words (guiErrorText); then `series` is empty
    /// > 0: the series are the chains of this imported cluster run (compute_cluster_run_series);
    /// `trace` is then the run's trace name (the plans' inputs.trace), `windows` its steps per chain.
    std::int64_t cluster_run = 0;
    std::string cluster_out; ///< the cluster run's output folder OUT
    /// > 0: the one series is whole run `whole_run` (compute_whole_run_series).
    std::int64_t whole_run = 0;
};

/// Reads every saved run of `trace` and builds its series from the stored plans (Library::runs,
/// run_plan_json, parse_plan; summarize_steps for gain and churn). Windows without runs are left out; a window
/// with several runs on one topology shows the newest (highest id). Failed runs (no plan) are
/// skipped. Errors (an unknown trace, a damaged plan) land in RunSeriesSet::error in words; `cancel`
/// (polled between runs) stops early with error "cancelled". Cost: one plan JSON parse per run shown
/// plus O(L x E) per step.
RunSeriesSet compute_run_series(const storage::Library& lib, const std::string& trace,
                                const std::atomic<bool>* cancel = nullptr);

/// The series of an imported cluster run (Library::cluster_run, cluster_run_steps; docs/cluster-runs.md):
/// one series per chain, in the summary's chain order, its planned steps in run order, each read from
/// its plan file in OUT (parse_plan) as compute_run_series reads a saved run's plan (RunStep::run 0,
/// status "planned", planner_s the summary's planner seconds); failed steps are listed in
/// RunSeries::failed and left out of the charts. A chain with no planned step is left out. Errors
/// (an unknown run, a plan file that is gone or damaged) land in RunSeriesSet::error; `cancel` as
/// compute_run_series.
RunSeriesSet compute_cluster_run_series(const storage::Library& lib, std::int64_t cluster_run,
                                        const std::atomic<bool>* cancel = nullptr);

/// The series of whole run `whole_run` (Library::whole_run; schema migration 7): one series, its steps
/// in run order. A sweep's or studio run's steps are its saved runs (read as compute_run_series reads
/// them; a step whose run lost its plan is left out); a cluster run's chain is read from its plan files
/// as compute_cluster_run_series reads it (`cluster_out` set). Errors (an unknown whole run, a plan
/// file that is gone or damaged) land in RunSeriesSet::error; `cancel` as compute_run_series.
RunSeriesSet compute_whole_run_series(const storage::Library& lib, std::int64_t whole_run,
                                      const std::atomic<bool>* cancel = nullptr);

/// One step's frontier (compute_step_frontier): routepack's max_g U planned within each move budget
/// of kFrontierFractions from the step's previous placement, the figures `routepack sweep --frontier`
/// reports for that step.
struct StepFrontier {
    std::string window;
    int step = -1;                     ///< index into RunSeries::steps
    std::int64_t experts = 0;          ///< L x E experts of one placement (the budgets' 100 %)
    std::vector<FrontierPoint> points; ///< kFrontierFractions order
    double saved_max_u = 0;            ///< routepack's max_g U of the saved plan of the step
    std::int64_t saved_moves = 0;      ///< experts it moved (sweep's experts_moved)
    std::string error;                 ///< why there is no frontier, in the studio's words
};

/// The frontier of step k of `series` (of trace `trace`, saved runs of `lib`): the step's window
/// loaded from the library (Library::load_window), its saved run's topology and budgets
/// (Library::run), from the previous step's placement (RunSeries::placements[k-1]; the identity for
/// the first step, as `routepack sweep --frontier` starts it) planned at every budget of
/// kFrontierFractions (move_frontier on `workers` workers, each plan single-worker: the same for a
/// seed whatever `workers`). For a cluster run's series (its steps have no saved run) error says
/// that the step's counts are in its step file and must be imported first ("it plans the step again
/// from its counts, kept in the step's file (PATH): import it (routepack import) first"). Cost: 8 plans of the
/// window. Errors (and a cancel: "cancelled") land in `error`.
StepFrontier compute_step_frontier(const storage::Library& lib, const std::string& trace, const RunSeries& series,
                                   int k, int workers, const std::atomic<bool>* cancel = nullptr);

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

/// Routepack against the baseline measured beside modelled, over the steps whose baseline and
/// routepack layouts were both measured (RunStep::measured).
struct MeasuredRunSummary {
    int steps = 0;                    ///< steps with both measured
    double mean_measured_pct = 0;     ///< mean of 100 x (measured routepack - measured baseline) / measured baseline
    double mean_modelled_pct = 0;     ///< mean of RunStep::gain_pct over the same steps
    double measured_seconds = 0;      ///< sum of the measured routepack steps
    double measured_base_seconds = 0; ///< sum of the measured baseline steps
};

/// The measured summary of `series` (steps 0 when no step has both). E.g. one step measured at
/// baseline 2 s and routepack 1.5 s, modelled gain -50 %: steps 1, measured -25 %, modelled -50 %.
MeasuredRunSummary summarize_measured(const RunSeries& series);

} // namespace routepack::views
