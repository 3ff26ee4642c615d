#pragma once
// The planner facade: runs the placement comparison (identity vs LPT), the lower bound, the row count
// R*, the baselines, then routepack's search (seeding, population annealing, the final exact pass on
// the straggler with placement refinement rounds) and, on more than one node with routes, the
// communication figures and the grouter / routepack+comm methods, on one window with progress events,
// cooperative cancellation, a time limit and a fixed seed (DESIGN.md "Pipeline"). The only place in
// core that owns threads (a oneTBB arena of `workers`).
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/plan/budgets.h"
#include "core/plan/comm/comm.h"
#include "core/plan/method.h"
#include "core/plan/score/bound.h"
#include "core/plan/score/metrics.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/annealing.h"
#include "core/plan/search/migration.h"
#include "core/plan/search/polish.h"
#include "core/plan/search/rowcount.h"
#include "core/plan/search/seeding.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace routepack {

/// Most bytes the seeding's candidates may hold together, estimated before seeding as
/// seeds_M x (24 n + 8 R (L + q) + 4 R D) bytes (layout, signature, co-assignment profile, sketch,
/// row peaks); plan_window refuses a larger product with an InputError naming seeds_M and the numbers.
inline constexpr double kMaxSeedingBytes = 8.0 * (1 << 30);

/// One compared method: its placement and layout, and the Table 3-4 metrics.
struct MethodResult {
    Method method = Method::Baseline;
    /// The placement it runs on (PlanResult::placement_of): identity for baseline, LPT for reorder
    /// and karmarkar_karp, LPT or refined for routepack, grouter and comm for the communication methods.
    PlacementKind placement = PlacementKind::Identity;
    Layout layout;
    LayoutMetrics metrics; ///< the paper's score and metrics (without any communication term)
    /// Inter-node traffic of the layout at its placement (core/plan/comm/comm.h); set when the topology has
    /// more than one node and the window has per-token routes.
    std::optional<CommCost> comm;
    /// routepack+comm: the score its search minimized (communication term of weight
    /// Topology::comm_weight included); unset for the other methods.
    std::optional<Score> comm_score;

    /// method_key(method): the plan file's metrics key.
    const char* key() const { return method_key(method); }
};

/// A progress event: stage name, overall fraction in [0, 1], and for the annealing stage the level
/// statistics for the convergence chart.
struct PlanEvent {
    std::string stage;
    double fraction = 0;
    std::optional<LevelStats> level;
    /// The final pass's new best score (stage "polish"), when it improved.
    std::optional<Score> best;
};
using PlanProgressFn = std::function<void(const PlanEvent&)>;

/// What a plan needs: the window (samples in window order, with counts), names for provenance,
/// topology and budgets.
struct PlanInput {
    Trace window;
    /// A window shared with its owner instead of `window` (read-only: a Python Window planned in
    /// place, its counts and routes not copied); the planner reads trace().
    std::shared_ptr<const Trace> shared_window;
    /// The window the planner reads: shared_window when set, else window.
    const Trace& trace() const { return shared_window ? *shared_window : window; }
    std::string trace_name;
    std::string window_name;
    Topology topology;
    PlannerBudgets budgets;
    /// The placement the previous step ran on (a run's chain: core/plan/search/migration.h); without it every
    /// plan is the paper's. Its shape must be the window's L x E on the topology's P ranks.
    std::optional<Placement> previous;
    /// The run's expert loads before this step (RunHistory, the previous plan's "history"); used when
    /// budgets.history_decay > 0, which folds this window's loads in (PlanResult::history). Absent: the
    /// run's history starts at this step. Its shape must be the window's L x E.
    std::optional<RunHistory> history;
};

/// The placements of a plan: identity against LPT (compare_placements), and routepack's placement,
/// the LPT placement refined for routepack's layout (PlannerBudgets::placement_rounds), or LPT itself
/// when no refinement lowered the score. The plan file's "placement", the expert map and the
/// rewrite follow `routepack`.
struct PlanPlacements : PlacementComparison {
    Placement routepack;
    std::vector<std::uint64_t> rank_loads_routepack; ///< G[l][p] (eq. 10) at `routepack`
    double cv_routepack = 0;                         ///< eq. 22 at `routepack`
    std::int64_t swaps = 0;                          ///< expert swaps of the refinements that were kept
    int rounds_kept = 0;                             ///< refinements that lowered the score
    /// The refinement did not run: one pass over every layer's expert pairs would exceed the
    /// planner's size limit (docs/topology-and-plan.md "Placement refined for the layout").
    bool refinement_skipped = false;
};

/// One round of the final exact pass: routepack's joint max_g U (eq. 15, tokens) after its search
/// segment (iterated_straggler_search) and, when the round ended with a placement refinement, after
/// it (the same value when the refinement was not kept).
struct FinalRound {
    double searched_max_u = 0;
    std::optional<double> refined_max_u; ///< absent: no refinement in this round (none asked, or stopped)
};

/// What routepack's search did: annealing levels and counts, the seeding's population, and the
/// final exact pass's counts (iterated_straggler_search, core/plan/search/polish.h).
struct PlanSearch {
    std::vector<LevelStats> convergence;
    /// The final pass round by round (one round without placement rounds), in order; recorded as the
    /// search runs, it changes nothing of the plan. Not in the plan file: a plan read back (a saved
    /// run) has none.
    std::vector<FinalRound> final_rounds;
    std::vector<std::string> origins; ///< origin of each population member (SeedMember::origin)
    std::int64_t proposals = 0, accepted = 0;
    std::int64_t polish_evaluations = 0, polish_improvements = 0;
    int polish_kicks = 0, polish_kicks_kept = 0;
    bool polish_local_optimum = false;
};

/// Communication (docs/topology-and-plan.md "Communication between nodes"): N = topology.nodes(); `available` when
/// every sample has per-token routes. With N > 1 and routes, every method's `comm` is set and the two
/// communication-aware methods run on the same window and R*.
struct PlanComm {
    int nodes = 1;
    bool available = false;
    std::optional<MethodResult> grouter, routepack_comm;
    Placement grouter_placement, comm_placement;
    double cv_grouter = 0, cv_comm = 0; ///< eq. 22 at those placements
    std::vector<int> grouter_home;      ///< [n] Grouter's node of each sample (most local tokens)
    std::vector<int> grouter_off_node;  ///< samples grouter's layout could not keep on their node
    bool grouter_fitted = true;         ///< false: the node packing failed and grouter uses the FFD layout
};

/// Moves from the previous step's placement (PlanInput::previous) to routepack's, and what they cost.
/// The four cases: no previous placement, the paper's plan (budget and cost model ignored, `note`
/// says so when either was given); previous with budgets.max_moves and no migration section: the
/// paper's score within the budget; previous with the topology's migration section: the modelled
/// step time, seconds_per_U x max_g U + materialization seconds (within the budget when given);
/// previous alone: unlimited moves, the paper's score (the plan's placement relabeled to move the
/// fewest experts).
struct PlanMigration {
    bool has_previous = false;
    Placement previous;
    std::string previous_fingerprint; ///< placement_fingerprint(previous)
    std::int64_t max_moves = -1;      ///< the budget applied (-1 unlimited)
    bool costed = false;              ///< the topology's migration section chose the moves
    bool seconds_per_U_derived = false;
    MigrationCost cost;                 ///< resolved when the topology has a migration section
    MigrationFigures figures;           ///< routepack's placement against previous
    double compute_seconds = 0;         ///< seconds_per_U x routepack's max_g U (costed)
    std::int64_t peak_sum_previous = 0; ///< sum_l max_p G[l][p] at previous (tokens, the window's loads)
    std::int64_t peak_sum_start = 0;    ///< the same at the placement routepack's search started from
    /// Run-level base placement (budgets.history_decay > 0, after a first step): the LPT placement
    /// (lpt_placement) of the run's mean step loads (history_mean_loads), offered per layer as the
    /// moves' end point; the moves and peak_sum_* are then measured on those loads, not the window's.
    std::optional<Placement> base;
    std::string note; ///< why a budget or cost model was ignored; empty otherwise
};

/// Everything the plan file, the CLI comparison and the views show: the inputs, R*, the compared
/// methods, and the placement, search and communication parts.
struct PlanResult {
    ModelDescription model;
    Topology topology;
    PlannerBudgets budgets;
    std::string trace_name, window_name;
    std::vector<SampleInfo> samples; ///< window order
    std::string fingerprint;         ///< window_fingerprint (16 hex digits)
    RowCount rows;
    MethodResult baseline, reorder, karmarkar_karp, routepack;
    /// Certified lower bound on routepack's max_g U at its placement (placement.routepack), over every
    /// layout (core/plan/score/bound.h); the plan's gap is routepack.metrics.score.max_u / bound.value - 1.
    MaxULowerBound bound;
    /// Certified lower bound on max_g U over every layout and every placement of the window
    /// (max_u_lower_bound_any_placement): no plan of this window, at any placement, does better.
    MaxULowerBound bound_any_placement;
    PlanPlacements placement;
    PlanSearch search;
    PlanComm comm;
    PlanMigration migration;
    /// With budgets.history_decay > 0: the run's history after this step (fold_history of
    /// PlanInput::history and the window's loads), what the next step's plan starts from.
    std::optional<RunHistory> history;
    bool cancelled = false;
    bool time_limit_hit = false;
    /// FixedRowFFD could not fill R* rows (the exact search found a layout it misses); the length-only
    /// layout of `baseline`/`reorder` is then the row-count stage's layout, and this says so.
    bool baseline_not_ffd = false;
    std::map<std::string, double> timings; ///< seconds per stage, and "total"

    /// The compared methods in report order: the four of the paper, then grouter and routepack+comm
    /// when they ran.
    std::vector<const MethodResult*> methods() const;
    /// Method m of the plan; nullptr when the plan lacks it (grouter and routepack+comm on one node
    /// or without routes).
    const MethodResult* method(Method m) const;
    /// The placement of kind k: placement.identity, placement.lpt, placement.routepack (Refined),
    /// comm.grouter_placement, comm.comm_placement.
    const Placement& placement_of(PlacementKind k) const;
    /// Whether routepack's placement is LPT refined for its layout (placement.routepack differs
    /// from placement.lpt): the plan file's placement_refinement.refined.
    bool placement_refined() const { return !(placement.routepack == placement.lpt); }
};

/// Relative gap of a max_g U above its lower bound: max_u / bound - 1 (0 when bound <= 0).
double bound_gap(double max_u, double bound);

/// Fingerprint of a window's lengths and counts, 16 hex digits (the plan's `inputs.fingerprint`
/// from plan version 3): FNV-1a 64 over the lengths (int64, sample order), then the [N][L][E] counts
/// in chunks of 65,536 values, each hashed with four interleaved 64-bit multiply-xorshift lanes and
/// the chunk hashes folded in order with splitmix64 (seeds::mix64). Chunks are hashed in parallel
/// (the caller's TBB arena); the value does not depend on the worker count. About 20x faster than
/// byte-serial FNV-1a on the counts (0.7 s for 512 MiB on one core).
std::string window_fingerprint(const Trace& window);
/// The fingerprint of plan versions 1 and 2: hex FNV-1a 64 over the lengths, then the counts' bytes.
std::string window_fingerprint_fnv(const Trace& window);

/// Runs the whole planner. InputError for bad input (budgets out of range, as check_planner_budgets
/// with origin "planner" and JSON key names: "planner: budget 'workers' must be ..."; sample longer than C, fewer
/// samples than D, E not divisible by P, no rectangular layout, empty window, ...), naming the sample or field.
/// `cancel` and budgets.time_limit_s (from the call's start) form the one StopToken (core/util/stop.h) that
/// every stage polls, Grouter's grouping included. When `cancel` is set, returns the best valid plan found so
/// far (at worst `reorder`) with cancelled = true; when the time limit passes, with time_limit_hit = true.
PlanResult plan_window(const PlanInput& in, const PlanProgressFn& progress = {},
                       const std::atomic<bool>* cancel = nullptr);

/// One window's outcome in plan_windows.
struct WindowPlan {
    PlanResult plan;
    std::string error;    ///< what() of the exception that stopped it; empty when planned
    bool started = false; ///< false when `cancel` was set before the window began
};

/// Plans many windows (the steps of a training run) on one TBB arena of `workers` threads (0 = all
/// cores): windows run in parallel, each planned exactly as plan_window(inputs[k]) with
/// budgets.workers forced to 1, so every plan is the single-worker plan of its window whatever
/// `workers` is. Result k belongs to inputs[k]. `on_done(k)` is called (on a worker thread) when
/// window k finished or failed. Once `cancel` is set, windows not yet started are skipped and
/// running ones return their best plan so far (cancelled = true). Errors of one window (InputError
/// and the like) are caught into its `error`; the others still run.
std::vector<WindowPlan> plan_windows(const std::vector<PlanInput>& inputs, int workers,
                                     const std::function<void(std::size_t)>& on_done = {},
                                     const std::atomic<bool>* cancel = nullptr);

/// The move budgets of a frontier, as fractions of a placement's L x E experts.
inline constexpr double kFrontierFractions[] = {0.0, 0.01, 0.02, 0.05, 0.10, 0.25, 0.50, 1.0};

/// The move ladder's budgets (docs/migration.md "How the moves are chosen"): kFrontierFractions of
/// the L x E `experts`, rounded, without 0 and repeats; ascending, the last L x E (none for 0 experts).
std::vector<std::int64_t> ladder_points(std::int64_t experts);

/// A layer's trajectory length (moved experts) at ladder budget b: four times an even share of b
/// over the L `layers`, at least 16 (the hull rarely gives a layer more: on the real DeepSeek and
/// Maverick windows on EP8 the frontier's plans were the same with trajectories stopped only at b).
std::int64_t ladder_trajectory_moves(std::int64_t b, int layers);

/// One point of a step's frontier: the lowest routepack max_g U (eq. 15) among the plans within
/// max_moves = round(fraction x L x E) moved experts from the step's previous placement, and the
/// moves of that plan. A plan of a smaller budget is also within a larger one, so the point is the
/// best of the plans at every budget up to `fraction` (`planned_fraction` names the budget that
/// planned it; equal to `fraction` unless a smaller budget's plan was better), and max_u never rises
/// with the budget.
struct FrontierPoint {
    double fraction = 0;
    std::int64_t max_moves = 0;
    double max_u = 0;
    std::int64_t moves = 0;
    double planned_fraction = 0;
};

/// The frontier of every step: steps[k] (its `previous` set; InputError when not) planned at each
/// budget of kFrontierFractions, each point the best plan of its budget and the smaller ones. The plans are independent
/// and run in parallel (plan_windows on `workers`, each plan single-worker, so the same for a seed whatever the worker
/// count); result [k][point]. A plan that fails throws its error as an InputError naming the window.
std::vector<std::vector<FrontierPoint>> move_frontier(const std::vector<PlanInput>& steps, int workers,
                                                      const std::atomic<bool>* cancel = nullptr);

/// Plans the windows of a run in order as a chain (core/plan/search/migration.h): window k starts from the
/// final placement of window k-1 (PlanResult::placement.routepack, after every refinement) and its
/// run history (PlanResult::history); window 0 from inputs[0].previous and inputs[0].history when
/// set, else the identity placement (the checkpoint's order). The
/// chain is sequential; each window runs plan_window with budgets.workers = `workers` (0 = all
/// cores), so the parallelism is inside the windows. `on_done(k, plan)` is called after window k
/// with its outcome (a run saves each step there as it ends). A
/// window that fails (its `error` set) ends the chain: the later ones are not started. Once `cancel`
/// is set, the running window returns its best plan so far and the later ones are not started.
/// `on_event(k, event)`, when given, receives window k's planner events (plan_window's progress) on
/// the calling thread; it never changes a plan.
std::vector<WindowPlan> plan_chain(const std::vector<PlanInput>& inputs, int workers,
                                   const std::function<void(std::size_t, const WindowPlan&)>& on_done = {},
                                   const std::atomic<bool>* cancel = nullptr,
                                   const std::function<void(std::size_t, const PlanEvent&)>& on_event = {});

} // namespace routepack
