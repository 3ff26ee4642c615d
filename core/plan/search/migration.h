#pragma once
// Placement across the steps of a run: what moving experts from the previous step's placement costs
// (the paper's state-consistent materialization, T_actor of eq. 19, section 4.2) and which moves pay
// for themselves. A move is placement_moves' (an expert on another EP rank than before).
#include "core/model/topology.h"
#include "core/plan/score/placement.h"

#include <string>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace routepack {

/// The cost of moves in seconds, resolved for one model and topology (Topology's migration section,
/// docs/migration.md): each moved expert sends `expert_bytes` over the link between its two EP
/// ranks' nodes, at intra_node_GBps inside a node and inter_node_GBps across nodes (GB/s = 1e9 B/s,
/// per GPU); `seconds_per_U` converts the paper's max_g U (eq. 15) into seconds of step compute.
struct MigrationCost {
    double expert_bytes = 0;       ///< state bytes of one expert: state_bytes_per_param x expert parameters
    double intra_node_GBps = 0;    ///< > 0
    double inter_node_GBps = 0;    ///< > 0
    double seconds_per_U = 0;      ///< > 0
    std::vector<int> node_of_rank; ///< [P] node of each EP rank (Topology::node_of_rank)
    double plan_seconds = 0;       ///< T_plan (MigrationModel::plan_seconds), >= 0
    bool overlap_planning = true;  ///< the step pays max(T_plan, moves) (eq. 19), else their sum
};

/// What planning and moving add to a step's time beside its compute (eq. 19's T_actor with the
/// planning): max(plan_seconds, moves_seconds) when overlap_planning, else plan_seconds +
/// moves_seconds. Seconds in, seconds out. The modelled step time is seconds_per_U x max_g U + this.
double step_overhead_seconds(const MigrationCost& cost, double moves_seconds);

/// The materialization of a set of moves (migration_figures).
struct MigrationFigures {
    std::int64_t moved = 0;         ///< experts moved, summed over MoE layers
    std::int64_t intra_moves = 0;   ///< of those, moves between two ranks of one node
    std::int64_t inter_moves = 0;   ///< moves across nodes
    double bytes = 0;               ///< moved x expert_bytes (each byte leaves one rank and enters one)
    int busiest_rank = -1;          ///< EP rank with the longest materialization (-1: no move)
    double busiest_intra_bytes = 0; ///< that rank's bytes in + out inside its node
    double busiest_inter_bytes = 0; ///< that rank's bytes in + out across nodes
    double seconds = 0;             ///< materialization time: the busiest rank's seconds
};

/// Materialization of the moves from `previous` to `next`: per EP rank p, seconds_p = (bytes in +
/// out over intra-node links) / intra_node_GBps + (bytes in + out across nodes) / inter_node_GBps,
/// every move adding expert_bytes to the out-bytes of its old rank and the in-bytes of its new one
/// on the link it takes; the step waits for the busiest rank, seconds = max_p seconds_p (ties: the
/// lowest p). Without a cost (expert_bytes 0) only the counts are set. std::invalid_argument as
/// placement_moves, or when node_of_rank is not [P] while expert_bytes > 0.
MigrationFigures migration_figures(const Placement& next, const Placement& previous, const MigrationCost& cost);

/// `next` with each layer's EP rank labels permuted to keep as many experts as possible on their
/// previous rank (an assignment of next's rank groups to ranks maximizing the experts that stay,
/// Hungarian algorithm, O(P^3) per layer; ties to the lowest labels), then keep_previous_slots. Every
/// rank keeps the same set of experts up to its label, so the score (eqs. 10-15, a max over ranks) is
/// unchanged and the moves are the fewest over those relabelings. Same errors as placement_moves.
Placement relabel_to_previous(const Placement& next, const Placement& previous);

/// Per MoE layer, the tokens each group of samples routes to each logical expert: w[(l * groups + g) * E
/// + e]. One group (the window's aggregate L[l][e]) measures a layer by its busiest EP rank (eq. 10);
/// a layout's row-shards as groups measure it by the sum of the row-shards' busiest-rank loads, as the
/// placement refinement does (core/plan/search/placement_refine.h, eqs. 13-14 at a fixed layout).
struct GroupLoads {
    int layers = 0, experts = 0, groups = 0;
    std::vector<std::int64_t> w; ///< [L][groups][E]
};

/// The window's aggregate loads ([L][E], aggregate_expert_loads) as one group.
GroupLoads aggregate_group_loads(std::span<const std::uint64_t> loads, int L, int E);

/// The loads of each row-shard: `row_shard` [n] names the row-shard (0..row_shards-1) of every
/// sample of `window` (whose counts are [n][L][E]). std::invalid_argument on a size mismatch or an id
/// out of range.
GroupLoads row_shard_group_loads(std::span<const std::uint32_t> counts, std::size_t n, int L, int E,
                                 std::span<const int> row_shard, int row_shards);

/// What budgeted_placement is asked for.
struct MoveRequest {
    const Placement* previous = nullptr; ///< the previous step's placement (required)
    /// A full re-placement (LPT, Algorithm 1) offered layer by layer as an alternative end point.
    const Placement* target = nullptr;
    std::int64_t max_moves = -1; ///< moved experts over all layers at most; -1 = unlimited
    /// A layer's greedy trajectory stops at this many moved experts (-1: at max_moves, the most any
    /// layer could take): a cap below it trades the layers' options for time.
    std::int64_t trajectory_moves = -1;
    /// Relocation chains where no swap helps (off: each layer's trajectory ends there, far sooner on
    /// many row-shards, where a chain search costs O(E^3 x groups)).
    bool relocation_chains = true;
    /// Each trajectory step scans every expert pair instead of only the rank pairs whose bound can
    /// still win: the same swaps, slower; the reference for tests and benchmarks.
    bool exhaustive_scan = false;
    const MigrationCost* cost = nullptr; ///< with a cost: take moves only while they pay in modelled seconds
    /// Tokens of a layer's measure (sum over groups of the busiest-rank loads) per unit of max_g U:
    /// C x G (a window's tokens spread over the G EDP shards; an estimate used only to weigh moves
    /// against seconds).
    double tokens_per_U = 1;
};

/// Outcome of budgeted_placement.
struct MovePlan {
    Placement placement;                   ///< from `previous`, previous slots kept where ranks are
    std::vector<std::int64_t> layer_moves; ///< [L] moved experts per layer
    std::int64_t peak_before = 0;          ///< sum_l sum_g max_p W[g][l][p] at previous (tokens)
    std::int64_t peak_after = 0;           ///< the same at `placement`
};

/// The placement a step starts from when it pays for its moves. Per MoE layer (layers in parallel,
/// deterministic), a greedy trajectory from previous: each step the swap of two experts on different
/// EP ranks that lowers the layer's measure, sum over groups of max_p W[g][l][p], with the most gain
/// per added move (moving an expert back home or onward costs nothing more; ties: lower e1, e2); when
/// no swap lowers it and request.relocation_chains, the relocation chain over three ranks that does
/// (an expert leaves a busiest rank a for b, one leaves b for c, one leaves c for a; the most gain
/// per added move), until neither lowers it, after 2E + 4 steps (a chain counts as two), or once
/// the layer has moved max_moves experts (without a cost; no budget could take more) or
/// request.trajectory_moves;
/// the layer's options are the trajectory's points and the target's layer (relabel_to_previous of
/// `target`), as (moved experts, busiest-rank load). The layers' options are combined by the upper
/// convex hull of each layer's best load per move count, its segments taken in descending gain per
/// move (ties: lower layer, then earlier) while the budget holds; with a cost, a segment is taken only
/// when its estimated compute saving, seconds_per_U x gain / tokens_per_U, exceeds the growth of the
/// step overhead (step_overhead_seconds of the materialization seconds, migration_figures: with
/// planning overlapped, moves whose seconds stay under plan_seconds cost nothing). max_moves 0 returns
/// previous. Cost per layer and swap
/// O(E^2 x groups) at most (only the rank pairs whose bound on a swap's gain per move can still beat
/// the best so far are scanned; each step also bounds all P^2 / 2 rank pairs in O(groups)), per relocation chain O(E^3
/// x groups) at most (its first expert on a busiest rank; no chain is searched past 2^25 such tuples).
/// std::invalid_argument on shapes that disagree or a missing previous.
MovePlan budgeted_placement(const GroupLoads& loads, const MoveRequest& request);

/// The layers' trajectories of one budgeted_placement call, kept for the next: a call with the same
/// loads, previous placement, target, relocation_chains and exhaustive_scan extends them (the greedy
/// steps do not depend on where a run stops) instead of starting again, any other call starts
/// afresh and keeps its own. The result is always the one budgeted_placement(loads, request) gives;
/// a ladder of calls on unchanged loads costs about one trajectory of the longest.
class TrajectoryCache {
public:
    TrajectoryCache();
    ~TrajectoryCache();
    TrajectoryCache(const TrajectoryCache&) = delete;
    TrajectoryCache& operator=(const TrajectoryCache&) = delete;
    /// Calls that reused the kept trajectories, and calls in all.
    std::int64_t reused() const;
    std::int64_t calls() const;

private:
    friend MovePlan budgeted_placement(const GroupLoads&, const MoveRequest&, TrajectoryCache&);
    struct State;
    std::unique_ptr<State> state_;
};

/// budgeted_placement(loads, request), extending the trajectories `cache` kept from the previous
/// call when it was on the same inputs (TrajectoryCache). Same result and errors.
MovePlan budgeted_placement(const GroupLoads& loads, const MoveRequest& request, TrajectoryCache& cache);

/// One state of a move sequence (move_sequence): layer `layer` changed to `rank`, the moves over
/// all layers counted from the previous placement once it is taken.
struct MoveStep {
    int layer = 0;
    std::int64_t moves = 0; ///< moved experts over all MoE layers after this step (>= the step before's)
    std::vector<int> rank;  ///< [E] EP rank of each logical expert of `layer` after this step
};

/// budgeted_placement's moves with no budget and no cost, in the order its hull takes them (descending
/// gain per move; ties: lower layer, then earlier), each layer's trajectory stopped at
/// `trajectory_moves` moved experts (-1: not stopped): the order in which budgeted_placement takes
/// hull segments until its budget first stops one, and it does not depend on a budget, so the
/// placements within B1 moves are among those within any B2 > B1 (the move ladder,
/// docs/migration.md "Budgets are monotone"). Same cost and errors as budgeted_placement.
std::vector<MoveStep> move_sequence(const GroupLoads& loads, const Placement& previous, const Placement* target,
                                    std::int64_t trajectory_moves = -1);

/// move_sequence for several trajectory lengths on the same loads: each layer's trajectory is
/// extended from where an earlier call stopped (the greedy steps do not depend on where a run stops),
/// so a ladder of lengths costs one trajectory of the longest. sequence(m) equals
/// move_sequence(loads, previous, target, m) for any order of calls. Errors as move_sequence.
class MoveSequencer {
public:
    /// `exhaustive_scan`: MoveRequest::exhaustive_scan.
    MoveSequencer(GroupLoads loads, const Placement& previous, const Placement* target, bool exhaustive_scan = false);
    ~MoveSequencer();
    MoveSequencer(const MoveSequencer&) = delete;
    MoveSequencer& operator=(const MoveSequencer&) = delete;
    std::vector<MoveStep> sequence(std::int64_t trajectory_moves);

private:
    struct State;
    std::unique_ptr<State> state_;
};

/// The placement after the first `steps` steps of `seq` from `previous` (slots as keep_previous_slots).
/// std::invalid_argument when steps exceeds the sequence.
Placement sequence_placement(const std::vector<MoveStep>& seq, std::size_t steps, const Placement& previous);

/// Per row-shard sums of per-layer peaks, peak_sum[rs] = sum_l max_p W[rs][l][p] (tokens; eq. 14's
/// numerator), of `pi` for the row-shard loads `loads` ([L][row_shards][E], row_shard_group_loads).
/// std::invalid_argument when the shapes disagree.
std::vector<std::int64_t> row_shard_peak_sums(const GroupLoads& loads, const Placement& pi);

/// The peak sums after each prefix of `seq` (within `max_moves` moves), from those of `previous`:
/// out[k] holds the sums after the first k steps (out[0]: previous), each [row_shards], updated one
/// layer at a time (O(row_shards x E) per step).
std::vector<std::vector<std::int64_t>> sequence_peak_sums(const GroupLoads& loads, const std::vector<MoveStep>& seq,
                                                          const Placement& previous, std::int64_t max_moves);

/// The placement of expert totals alone (no layout; `routepack place --previous`, Python place(...,
/// previous=)) from request.previous: budgeted_placement on the aggregate loads with `lpt` offered per
/// layer, also with no budget (max_moves -1, every move allowed: per layer the lowest busiest-rank
/// load among the greedy moves and LPT's relabeled layer, with the fewest moves for it). `loads` is
/// [L][E].
MovePlan place_from_previous(std::span<const std::uint64_t> loads, const Placement& lpt, const MoveRequest& request);

/// Moved experts per MoE layer index from `previous` to `next` ([L]); errors as placement_moves.
std::vector<std::int64_t> layer_moves(const Placement& next, const Placement& previous);

/// Per-layer allowance of moves for the refinement after budgeted_placement: layer_moves[l], plus
/// the budget left over (max_moves - sum) shared evenly over the layers in order (the first
/// (left % L) one more); unlimited (max_moves -1, or a budget of at least L x `experts`, which cannot
/// bind): -1 everywhere. With `no_extra` (a cost model chooses the moves) the leftover is not shared.
std::vector<std::int64_t> layer_move_allowance(const std::vector<std::int64_t>& layer_moves, std::int64_t max_moves,
                                               int experts, bool no_extra);

/// The expert loads of a run's steps so far, exponentially decayed (run-level base placement,
/// docs/migration.md "A placement for the run"): after step k, H_k = d x H_(k-1) + G_k and W_k = d x
/// W_(k-1) + 1, with G_k step k's window loads ([L][E] tokens, aggregate_expert_loads) and d the
/// budget history_decay. H_k / W_k is the decay-weighted mean loads of one step. The plan file's
/// "history" section; the next step reads it with the previous plan.
struct RunHistory {
    int layers = 0, experts = 0;
    double decay = 0;          ///< d of the last fold, in [0, 1]
    std::int64_t steps = 0;    ///< steps folded in, >= 1
    double weight = 0;         ///< W_k = sum over the steps of d^(k - j), in [1, steps]
    std::vector<double> loads; ///< [L][E] H_k, tokens (finite, >= 0)
};

/// H_k from `before` (nullptr: the run starts at this step) and this step's loads ([L][E]), decay d in
/// [0, 1]. std::invalid_argument when `before`'s shape is not L x E or d is out of range; the
/// planner checks the shape first and names the previous plan.
RunHistory fold_history(const RunHistory* before, std::span<const std::uint64_t> loads, int L, int E, double decay);

/// The mean loads of one step, H_k / W_k, rounded to whole tokens ([L][E]): what a step's moves and
/// its base placement (lpt_placement of them) are fitted to.
std::vector<std::uint64_t> history_mean_loads(const RunHistory& h);

/// Fingerprint of a placement, 16 hex digits: FNV-1a 64 over L, E, P (int32 each) and the slots
/// (int32, [L][E] order). The plan file's migration.previous_fingerprint.
std::string placement_fingerprint(const Placement& pi);

/// The cost model of `topology`'s migration section for `model` (MigrationModel): expert bytes =
/// state_bytes_per_param x expert parameters (the section's, else the model description's
/// expert_shape, else the shipped description of the model's name); seconds_per_U as given, else
/// 6 x token_cap x expert parameters / (achieved_TFLOPs x 1e12) (docs/migration.md); node_of_rank
/// from the topology's nodes. InputError "topology: migration: the expert parameters of model
/// 'NAME' are unknown; give migration.expert_parameters" when neither gives them.
MigrationCost resolve_migration_cost(const Topology& topology, const ModelDescription& model);

} // namespace routepack
