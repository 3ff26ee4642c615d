#pragma once
// The plan file: the contract with training jobs (docs/topology-and-plan.md "Plan file",
// resources/schema/plan.schema.json).
#include "core/plan/method.h"
#include "core/plan/planner.h"

#include <map>
#include <optional>

#include <span>
#include <string>
#include <string_view>

namespace routepack {

/// Plan file version written by plan_to_json. Version 2 added "max_u_lower_bound"; version 3 changed
/// `inputs.fingerprint` to window_fingerprint (chunked, parallel) from window_fingerprint_fnv and
/// added the final search's budgets and counts (budgets.polish_kick_moves, budgets.anytime,
/// polish.kicks, polish.kicks_kept); version 4 writes `topology.row_multiple` always (the row count
/// is a multiple of it; topology files leave it out when it is 1).
/// Version 5 adds "communication" (null on one node; else the node map, comm_weight, tolerance and,
/// with routes, every method's inter-node figures and the grouter / routepack+comm placements and rows)
/// and the metrics of those two methods.
/// Version 6: "placement" is routepack's placement, the LPT placement refined for its layout
/// (PlanResult::placement.routepack; equal to LPT when no refinement was kept), the bound and the
/// routepack metrics are taken at it, and the planner section adds budgets.placement_rounds and
/// placement_refinement {rounds_kept, swaps, refined}.
/// Version 7: the topology may carry the batch rules (samples_per_dp_slot, samples_per_cell,
/// max_samples_per_cell, oversize; token_cap absent with samples_per_cell), and "oversize_cells" lists
/// the [row, dp_slot] cells holding one sample longer than C (written only when there is one); a plan
/// of the default rules differs from version 6 in the version number only.
/// Version 8 adds the optional "migration" section (a plan with a previous placement: the previous
/// placement's fingerprint, the move budget, the cost model, the moves, bytes and seconds; "placement"
/// is then routepack's placement from the previous one, not LPT refined) and the topology's optional
/// "migration" cost model; a plan without a previous placement differs from version 7 in the version
/// number only.
/// Version 9 adds the topology's optional "expert_invocation_tokens" (a fixed cost per expert
/// invocation in tokens; the score, metrics and bound are then taken with W' = W + a K); a plan of a
/// topology without it differs from version 8 in the version number only.
/// Version 10 adds the budget history_decay (written when not 0) and the optional "history" section
/// (the run's decayed expert loads after this step, RunHistory: decay, steps, weight, loads [L][E]),
/// written when history_decay > 0; a plan without it differs from version 9 in the version number only.
/// parse_plan reads versions 1 to 10 (version 1 has no bound; versions 1 to 3 have no row_multiple,
/// read as 1) and rescore_plan checks each file's fingerprint with the function of its version.
constexpr int kPlanVersion = 10;

/// The plan file's "migration" cost model (PlanMigration::cost): present when the expert size is known.
struct PlanFileCostModel {
    std::int64_t expert_parameters = 0; ///< expert_bytes / state_bytes_per_param, rounded
    double state_bytes_per_param = 0;   ///< bytes of weights and optimizer state per parameter
    double expert_bytes = 0;            ///< bytes moved per expert
    double intra_node_GBps = 0;         ///< 1e9 B/s between two ranks of one node
    double inter_node_GBps = 0;         ///< 1e9 B/s between nodes
    double seconds_per_U = 0;           ///< seconds of step compute per unit of max_g U
    bool seconds_per_U_derived = false; ///< derived from the model (not the topology's number)
    bool from_topology = false;         ///< the topology has a migration section
    double plan_seconds = 0;            ///< T_plan (plan version 10; older files: 0)
    bool overlap_planning = true;       ///< "planning": "overlapped" or "serial" (older files: overlapped)
};

/// The plan file's "migration" section (version 8, plans with a previous placement; PlanMigration).
/// Sections written before the move counts per node kind, the busiest rank's bytes and the peak sums
/// existed read them as 0 (busiest_rank -1).
struct PlanFileMigration {
    bool present = false;
    std::string previous_fingerprint;      ///< placement_fingerprint of the previous placement
    std::int64_t max_moves = -1;           ///< -1: unlimited
    bool costed = false;                   ///< the topology's migration section chose the moves (modelled time)
    std::optional<PlanFileCostModel> cost; ///< absent when the expert size is unknown
    std::int64_t moves = 0;                ///< experts moved over all MoE layers
    std::int64_t intra_node_moves = 0, inter_node_moves = 0;
    std::vector<std::int64_t> layer_moves; ///< [L]
    double bytes = 0;                      ///< moved state bytes (0 when the expert size is unknown)
    int busiest_rank = -1;                 ///< the EP rank with the most bytes in and out (-1: none moved)
    double busiest_intra_bytes = 0, busiest_inter_bytes = 0; ///< that rank's bytes inside / across nodes
    double seconds = -1;                ///< materialization seconds (-1: no cost model could be resolved)
    double compute_seconds = -1;        ///< seconds_per_U x max_g U (-1: none)
    std::int64_t peak_sum_previous = 0; ///< sum_l max_p G[l][p] at the previous placement (tokens)
    std::int64_t peak_sum_start = 0;    ///< the same at the placement the search started from
};

/// One method's inter-node figures as the plan file holds them (token copies, core/plan/comm/comm.h).
struct CommFigures {
    std::int64_t inter = 0, intra = 0, busiest = 0;
    std::vector<std::int64_t> inter_per_layer; ///< [L]
};

/// The plan file's "communication" section (version 5, more than one node).
struct PlanFileComm {
    int nodes = 1;
    bool available = false; ///< false: no routes (note says why)
    std::string note;
    double weight = 0, load_tolerance = 0.02;
    PerMethod<std::optional<CommFigures>> figures; ///< per method, where computed
    bool has_grouter = false, grouter_fitted = true;
    Placement grouter_placement;
    Layout grouter_layout;
    std::vector<int> grouter_off_node; ///< sample indices
    bool has_comm_method = false;
    Placement comm_placement;
    Layout comm_layout;
    Score comm_search_score;
};

/// One method's entry of the plan file's "metrics": the placement it ran on and its Table 3-4 metrics.
struct PlanFileMethod {
    PlacementKind placement = PlacementKind::Identity;
    LayoutMetrics metrics;
};

/// The plan file's "planner" record of the search (PlanSearch; versions before 3 lack the kicks):
/// absent fields read as empty or 0.
struct PlanFileSearch {
    std::vector<std::string> population; ///< origin of each population member
    std::int64_t proposals = 0, accepted = 0;
    std::int64_t polish_evaluations = 0, polish_improvements = 0;
    int polish_kicks = 0, polish_kicks_kept = 0;
    bool polish_local_optimum = false;
    /// Per annealing level: level, temperature, best, mean_energy, acceptance, proposals (the
    /// infeasible and state_copies counts are not in the file: 0).
    std::vector<LevelStats> convergence;
};

/// The top-level fields a plan file may hold (plan_to_json writes them; older versions a subset);
/// parse_plan refuses any other before it builds the document.
std::span<const std::string_view> plan_file_fields();

/// A plan as its file holds it: the one serialized form of a plan. plan_file_of builds it from a
/// planner result, parse_plan from a file's text, plan_file_to_json writes it.
struct PlanFile {
    std::string trace_name, window_name, fingerprint;
    ModelDescription model; ///< name, num_hidden_layers, experts, top_k, moe_layers
    Topology topology;
    Placement placement;                 ///< routepack's placement (LPT, refined for the layout from version 6)
    std::vector<std::string> sample_ids; ///< window order
    std::vector<std::int64_t> lengths;   ///< window order
    int row_count = 0;
    bool row_count_certified = false;
    int row_lower_bound = 0;
    std::string row_count_how;             ///< how R* was found, in words ("" in files without it)
    bool baseline_is_fixed_row_ffd = true; ///< false: the length-only layouts are the row-count stage's
    Layout layout;                         ///< rows as sample indices (window order)
    /// Cells k = r*D + d holding one sample longer than C (oversize Alone; version 7), ascending.
    std::vector<int> oversize_cells;
    Score score;
    int version = kPlanVersion; ///< the file's format version (1 to 10; a plan built in memory: current)
    /// "max_u_lower_bound" (versions 2 to 4; absent in version 1 files: has_bound false).
    bool has_bound = false;
    MaxULowerBound bound;
    /// baseline, reorder, karmarkar_karp, routepack; grouter and routepack+comm when they ran (version 5)
    PerMethod<std::optional<PlanFileMethod>> metrics;
    PlanFileComm comm; ///< version 5 on more than one node (nodes 1 otherwise)
    std::uint64_t seed = 0;
    int workers = 0;
    /// planner.budgets, read and range-checked by parse_planner_budgets (core/plan/budgets.h);
    /// absent keys (older versions) keep their defaults; seed and workers as above.
    PlannerBudgets budgets;
    /// planner.time_limit_hit: the search stopped at budgets.time_limit_s (false when absent).
    bool time_limit_hit = false;
    /// planner.placement_refinement (version 6; older versions: false, 0, 0, false).
    bool placement_refined = false;
    int placement_rounds_kept = 0;
    std::int64_t placement_swaps = 0;
    bool placement_refinement_skipped = false;
    PlanFileMigration migration;           ///< version 8, with a previous placement
    std::optional<RunHistory> history;     ///< version 10, with budgets.history_decay > 0
    PlanFileSearch search;                 ///< planner.population, proposals, accepted, polish, convergence
    bool cancelled = false;                ///< planner.cancelled: the plan is the best found before the stop
    std::map<std::string, double> timings; ///< seconds per planner stage and "total" (not a function of the inputs)

    /// The metrics of method m; InputError "plan: no metrics of method '<key>'" when the plan lacks it.
    const LayoutMetrics& metrics_of(Method m) const;
    /// Whether the plan has method m's metrics.
    bool has(Method m) const { return metrics[m].has_value(); }
};

/// Serializes a plan file (format "routepack-plan", version kPlanVersion whatever `f.version` says) to
/// JSON text (2-space indent, no final newline). Every field but "timings" is a function of inputs,
/// seed, budgets and worker count. The one writer of plans: plan_to_json is
/// plan_file_to_json(plan_file_of(r)).
std::string plan_file_to_json(const PlanFile& f);

/// Serializes a planner result: plan_file_to_json(plan_file_of(r)).
std::string plan_to_json(const PlanResult& r);

/// The "migration" section of a plan with a previous placement (PlanMigration), as JSON text:
/// {"previous_fingerprint", "max_moves" (null: unlimited), "objective" ("score" or "modelled time"),
/// "cost_model" (null when the expert size is unknown; else expert_parameters, state_bytes_per_param,
/// expert_bytes, intra_node_GBps, inter_node_GBps, seconds_per_U, seconds_per_U_derived, from_topology),
/// "moves", "intra_node_moves", "inter_node_moves", "layer_moves" [L], "bytes", "busiest_rank",
/// "busiest_intra_node_bytes", "busiest_inter_node_bytes", "materialization_seconds",
/// "compute_seconds", "modelled_seconds" (the last three null without a cost model),
/// "peak_sum_previous", "peak_sum_start"}; "null" without a previous placement.
std::string plan_migration_json(const PlanResult& r);
/// The same section of a plan file ("null" when !m.present), the writer plan_file_to_json uses.
std::string plan_migration_json(const PlanFileMigration& m);

/// The section's modelled step time, seconds: compute_seconds + step_overhead_seconds of the
/// materialization seconds with the cost model's plan_seconds and planning (eq. 19; the file's
/// "modelled_seconds"). std::invalid_argument without a cost model (the file writes null then).
double plan_modelled_seconds(const PlanFileMigration& m);

/// The plan file of a planner result without its text: exactly what parse_plan(plan_to_json(r), origin)
/// reads back (version kPlanVersion), so a caller that only reads the rows does not pay for the JSON.
PlanFile plan_file_of(const PlanResult& r);

/// Parses and checks a plan's structure alone: format/version (1 to 10), every layer's placement a permutation
/// of 0..E-1 with E % P == 0, topology valid, R x D non-empty cells, every sample exactly once, cell
/// token sums <= C (from the plan's own lengths; C is effective_token_cap) or one oversize sample alone
/// with oversize "alone", every count of the topology's batch rules, "oversize_cells" listing exactly
/// the cells over C ("<origin>: oversize_cells lists [[0, 1]] but the cells over C are [[0, 2]]"), row_count a multiple
/// of topology.row_multiple
/// ("<origin>: row_count 6 is not a multiple of topology.row_multiple 4"), score == metrics.routepack.score, and
/// (version 2 on) a bound with value <= score[0] and gap == score[0] / value - 1, (version 5) a
/// communication section whose node count matches the topology's and whose grouter / routepack+comm
/// placements and rows pass the same checks, planner.budgets an object within the budget reader's
/// ranges (parse_planner_budgets: "<origin>: planner.budgets: levels is -5, not an integer in
/// 0..1000"), and (version 6) planner.placement_refinement holding exactly refined, rounds_kept,
/// swaps and skipped, with rounds_kept <= budgets.placement_rounds and a refined placement only with
/// placement_rounds >= 1, and (version 10) a history of the plan's L x E loads in [0, 1e18], weight in
/// [1, steps] and decay equal to budgets.history_decay ("<origin>: history.loads has 10 rows, not 11 (one
/// per MoE layer)"). InputError naming `origin` and the field path, fields read by
/// util::JsonField ("<origin>: samples[3].length is 0, not an integer in 1..4096").
PlanFile parse_plan(const std::string& json_text, const std::string& origin);

/// Rescores a parsed plan against its window (samples in the plan's order, with counts): lengths
/// must match, the fingerprint must match, (version 6) placement_refinement.refined must say whether
/// the placement differs from the window's LPT placement (recomputed; versions 1 to 5 hold LPT's
/// placement only), the recomputed routepack metrics must equal the stored ones exactly, the lower
/// bound included (version 2 on), and the baselines (baseline, reorder, karmarkar_karp: the planner's
/// stages 1-3 rerun with the plan's seed, workers and row_nodes) must have the plan's row count and
/// its stored metrics, field by field. Returns "" when they agree, else the first difference in words.
std::string rescore_plan(const PlanFile& plan, const Trace& window);

/// Rebuilds everything the views show for a saved plan without searching again: the window's
/// placements, rank loads, R* and the three baselines are recomputed (deterministic and cheap: the
/// planner's stages 1-3, no seeding or annealing), the routepack layout and placement are the
/// plan's own, and every method's metrics are the plan's stored ones, so the views, the comparison
/// and the numbers are exactly what was saved. The caller adds what the plan file does not hold
/// (convergence levels, timings, cancelled) from the run record. `window` must be the plan's window
/// (rescore_plan agrees); otherwise InputError "<origin>: the saved plan does not match its window
/// (<difference>)". Shapes: as PlanResult; no threads beyond the planner's own arena of
/// `plan.workers` (1 when 0).
PlanResult restore_plan(const PlanFile& plan, const Trace& window, const std::string& origin);

/// Everything of a saved plan that its file alone holds, for showing a plan whose window is not at
/// hand (a cluster run's step whose counts are not in a library): the model, topology, budgets
/// (seed and workers included), trace and window names, samples (ids and lengths, window order),
/// fingerprint, R* (rows, certified, lower bound), routepack's layout, placement (placement.routepack;
/// placement.lpt the same unless the file says the placement was refined, then empty) and score, the
/// bound, every method's stored metrics, and the communication methods' layouts and placements. What
/// needs the routing counts stays empty: the rank loads and CV of every placement, the three
/// baselines' layouts (Layout with 0 rows: only their metrics are known), the communication figures
/// (PlanComm::available false) and the search's convergence levels. The migration section is not
/// carried. Never throws for a PlanFile that parse_plan returned.
PlanResult plan_of_file(const PlanFile& plan);

} // namespace routepack
