#pragma once
// Execution topology of one training step: EP ranks, DP slots, EDP shards, token cap, attention
// stages (DESIGN.md "Inputs", paper section 3.1-3.4).
#include "core/model/model.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace routepack {

/// One attention stage s of eq. 12: cost alpha_s * T[r][d] + beta_s * Q[r][d] per cell. alpha and
/// beta are >= 0 and may absorb the number of layers of that type.
struct AttentionStage {
    std::string name;
    double alpha = 0;
    double beta = 0;
    bool operator==(const AttentionStage&) const = default;
};

/// What a sample longer than the token cap C gets: `Refuse` (the window is refused, naming the
/// sample) or `Alone` (a cell of its own, marked oversize in the plan and scored as it is: slime's
/// build_dp_schedule and Megatron's schedulers give such a sample a micro-batch of its own).
enum class Oversize { Refuse, Alone };

/// The stacks' batch rules (DESIGN.md "The stacks' batch contracts"), kept by every stage of the
/// planner. 0 = free for each count.
///  - samples_per_dp_slot S: every DP slot d holds exactly S samples summed over its cells (r, d)
///    (verl's dispatch hands every DP rank B / D samples: DataProto.chunk);
///  - samples_per_cell c: every cell holds exactly c samples (static micro-batches: slime's
///    micro_batch_size); R is then n / (c D). The token cap may be absent (0): the cap C is then
///    the token sum of the c longest samples of the window (effective_token_cap), which no cell can
///    exceed, so every layout is within it and C only normalizes eqs. 11 and 14;
///  - max_samples_per_cell m: every cell holds at most m samples (Megatron's max_num_seqs);
///  - oversize: see Oversize.
struct BatchRules {
    int samples_per_dp_slot = 0;
    int samples_per_cell = 0;
    int max_samples_per_cell = 0;
    Oversize oversize = Oversize::Refuse;
    /// Whether any count is constrained (the oversize policy aside).
    bool counts() const { return samples_per_dp_slot > 0 || samples_per_cell > 0 || max_samples_per_cell > 0; }
    /// Whether every rule is at its default (the paper's problem).
    bool free() const { return !counts() && oversize == Oversize::Refuse; }
    /// The most samples a cell may hold (samples_per_cell, else max_samples_per_cell; 0 = no limit).
    int cell_limit() const { return samples_per_cell > 0 ? samples_per_cell : max_samples_per_cell; }
    bool operator==(const BatchRules&) const = default;
};

/// The topology file (JSON): {"ep_ranks": P, "experts_per_layer": E (optional), "dp_slots": D,
/// "edp_shards": [[d...]...] (partition of 0..D-1; default one shard), "token_cap": C,
/// "attention_stages": [{"name", "alpha", "beta"}...], "min_rows": optional, "row_multiple": optional
/// (default 1), the batch rules, optional: "samples_per_dp_slot", "samples_per_cell",
/// "max_samples_per_cell" (integers, 0 = free) and "oversize" ("refuse" or "alone"; BatchRules), where
/// "token_cap" may be absent (0) when samples_per_cell is set, and where things run, optional: "gpus_per_node": g, or
/// "ep_rank_nodes": [P] with "dp_slot_nodes": [D]}.
///
/// Row count: the plan's R is >= min_rows and a multiple of row_multiple (virtual-pipeline stacks need
/// the micro-batch count per DP rank to be a multiple of the stage group size: Megatron-Core's
/// interleaved schedule groups micro-batches by microbatch_group_size_per_vp_stage, by default the
/// pipeline size, and verl's Megatron actor passes it to rearrange_micro_batches as
/// num_batches_divided_by).
/// Physical slot v is owned by EP rank v / H with H = E / P (rank-major slots).
///
/// Nodes (machines; traffic between them crosses the network, traffic inside one stays on NVLink):
/// - neither field: one node holds every EP rank and DP slot (no inter-node traffic);
/// - gpus_per_node g: EP rank p is GPU p, so N = P / g nodes and rank p on node p / g; the D DP slots
///   are spread over the nodes in order, D / N per node: slot d on node d * N / D (g must divide P and
///   N must divide D). EP16/DP8 with g = 8: ranks 0-7 and DP slots 0-3 on node 0, the rest on node 1;
/// - ep_rank_nodes [P] and dp_slot_nodes [D]: the node of every EP rank and DP slot, ids 0..N-1 with
///   N = 1 + the largest id; every node holds at least one EP rank and one DP slot.
/// The node fields do not enter the compute score (eqs. 11-15); plans are the same with or without.
///
/// Communication-aware planning (the `routepack+comm` method, run when there is more than one node),
/// optional: "comm_weight" w >= 0 adds w * (inter-node token copies the row-shard's DP slots send,
/// summed over MoE layers) / C to that method's row cost J (default 0: its search uses the paper's
/// score); "comm_load_tolerance" tau in 0..1 lets its placement raise a layer's busiest EP rank load
/// up to (1 + tau) times LPT's while it moves co-activated experts onto one node (default 0.02).
/// The cost model of moving experts between steps (the topology's optional "migration" object; every
/// field optional): {"state_bytes_per_param": 14 (bf16 weight, fp32 master weight, two fp32 Adam
/// moments), "expert_parameters": parameters of one routed expert (default: the model description's
/// expert_shape), "intra_node_GBps": 400, "inter_node_GBps": 50 (per GPU, 1e9 bytes/s),
/// "seconds_per_U": seconds of step compute per unit of max_g U (default: derived,
/// 6 x token_cap x expert_parameters / (achieved_TFLOPs x 1e12), docs/migration.md),
/// "achieved_TFLOPs": 400, "plan_seconds": 0 (the planning time a step waits for, T_plan of eq. 19),
/// "planning": "overlapped" (the step pays max(T_plan, moves' seconds), the paper's eq. 19) or "serial"
/// (their sum)}. Numbers finite and > 0 (plan_seconds >= 0; expert_parameters an integer in 1..2^40).
struct MigrationModel {
    double state_bytes_per_param = 14;
    std::int64_t expert_parameters = 0; ///< 0 = from the model description
    double intra_node_GBps = 400;
    double inter_node_GBps = 50;
    double seconds_per_U = 0; ///< 0 = derived from achieved_TFLOPs
    double achieved_TFLOPs = 400;
    double plan_seconds = 0;      ///< T_plan, seconds; 0 = planning costs the step nothing
    bool overlap_planning = true; ///< "planning": "overlapped" (max) or "serial" (sum)
    bool operator==(const MigrationModel&) const = default;
};

struct Topology {
    int ep_ranks = 0;                         ///< P
    int experts_per_layer = 0;                ///< E when the file states it (0 = take the trace's)
    int dp_slots = 0;                         ///< D
    std::vector<std::vector<int>> edp_shards; ///< G shards, each a list of DP slots
    std::int64_t token_cap = 0;               ///< C, tokens per cell (hard)
    std::vector<AttentionStage> attention_stages;
    int min_rows = 0;                  ///< optional lower bound on R (pipeline occupancy)
    int row_multiple = 1;              ///< R must be a multiple of it (1 = any R)
    int gpus_per_node = 0;             ///< g as written (0 = not given)
    std::vector<int> ep_rank_nodes;    ///< [P] node of each EP rank as written (empty = not given)
    std::vector<int> dp_slot_nodes;    ///< [D] node of each DP slot as written (empty = not given)
    double comm_weight = 0;            ///< w of routepack+comm's row cost term (0 = the paper's score)
    double comm_load_tolerance = 0.02; ///< tau: routepack+comm placement's max rank load <= (1 + tau) LPT's
    /// Fixed cost of one expert invocation, in tokens (0 = the paper's linear expert term): every
    /// (row-shard, MoE layer, expert) with at least one token adds this many tokens to its EP rank's
    /// load W (eq. 13), as a grouped GEMM pays a per-expert fixed cost; `routepack calibrate` fits it.
    std::int64_t expert_invocation_tokens = 0;
    BatchRules batch;           ///< the stacks' batch rules (all free by default)
    bool has_migration = false; ///< the file has a "migration" object
    MigrationModel migration;   ///< its fields (defaults when has_migration is false)

    int shards() const { return static_cast<int>(edp_shards.size()); }
    /// [D] -> shard index g of each DP slot.
    std::vector<int> shard_of_slot() const;
    /// N, the number of nodes (1 when the topology names none).
    int nodes() const;
    /// [P] -> node of each EP rank (all 0 on one node).
    std::vector<int> node_of_rank() const;
    /// [D] -> node of each DP slot (all 0 on one node).
    std::vector<int> node_of_dp_slot() const;
    bool operator==(const Topology&) const = default;
};

/// Parses a topology JSON text; `origin` (file name) prefixes every error. Fills the default single
/// shard when edp_shards is absent. InputError on a missing/ill-typed field, an integer out of range
/// (never narrowed: P and D in 1..2^20, experts_per_layer in 1..2^20, C in 1..2^40, min_rows in
/// 0..2^30, row_multiple in 1..2^20; "<origin>: field 'ep_ranks' must be at most 1048576 (got
/// 4294967304)"), a min_rows whose next multiple of row_multiple exceeds the largest row count 2^30
/// (check_row_fields), negative,
/// non-finite or larger than 1e12 alpha/beta, shards that do not partition 0..D-1 (names the slot);
/// node fields: gpus_per_node in 1..P dividing P with N = P / g dividing D; gpus_per_node together
/// with the lists; one list without the other; a list of the wrong length or with a non-integer, or
/// an id outside 0..min(P, D)-1 ("<origin>: ep_rank_nodes[3] is 9, outside 0..7"); a node below the
/// largest id that holds no EP rank or no DP slot; comm_weight not a number in 0..1e6 or
/// comm_load_tolerance not in 0..1 ("<origin>: field 'comm_weight' must be a number in 0..1e+06 (got -1)");
/// expert_invocation_tokens not an integer in 0..kMaxInvocationTokens;
/// a field it does not read, at the top level or in a stage ("<origin>: unknown field 'gpus_per_nod'
/// (known: ep_ranks, ...)", "<origin>: attention_stages[0]: unknown field 'gamma' (known: name,
/// alpha, beta)"): a misspelt optional field must not fall back to its default unnoticed.
Topology parse_topology(const std::string& json_text, const std::string& origin);
/// Largest row_multiple of a topology (2^20) and largest row count a topology may ask for (2^30:
/// min_rows and the smallest multiple of row_multiple >= min_rows).
constexpr int kMaxRowMultiple = 1 << 20;
/// Largest expert_invocation_tokens (2^20): E / P invocations of it per rank and layer stay far inside
/// the int32 per-move deltas and the int64 rank loads.
constexpr std::int64_t kMaxInvocationTokens = std::int64_t{1} << 20;
constexpr int kMaxTopologyRows = 1 << 30;

/// Checks min_rows and row_multiple of a topology built in memory (parse_topology applies the same
/// rules): InputError "<origin>: field 'row_multiple' must be >= 1 (got 0)", "... must be at most
/// 1048576 (got ...)", "<origin>: field 'min_rows' must be >= 0 (got -1)", and "<origin>: min_rows
/// 1073741824 rounded up to a multiple of row_multiple 3 is 1073741826 rows, above the largest row
/// count 1073741824".
void check_row_fields(const Topology& t, const std::string& origin);

/// Largest count of a batch rule (samples_per_dp_slot, samples_per_cell, max_samples_per_cell): 2^30.
constexpr int kMaxBatchCount = 1 << 30;

/// Checks the batch rules of a topology against each other and the row fields (parse_topology
/// applies the same rules): counts in 0..2^30; InputError "<origin>: samples_per_cell 4 exceeds
/// max_samples_per_cell 2", "<origin>: samples_per_cell 3 does not divide samples_per_dp_slot 128",
/// "<origin>: samples_per_dp_slot 128 with samples_per_cell 4 fixes R = 32 rows, below min_rows 40",
/// "<origin>: samples_per_dp_slot 128 with samples_per_cell 4 fixes R = 32 rows, not a multiple of
/// row_multiple 3", "<origin>: samples_per_dp_slot 8 allows at most 8 rows (every cell non-empty),
/// below min_rows 10", "<origin>: samples_per_dp_slot 8 allows at most 8 rows, and no multiple of
/// row_multiple 16 is among 1..8", "<origin>: token_cap 0: a token cap is needed unless
/// samples_per_cell is set".
void check_batch_fields(const Topology& t, const std::string& origin);

/// Checks the batch rules against a window of n samples on D = t.dp_slots DP slots: InputError
/// "512 samples cannot fill 3 DP slots with 171 each", "510 samples cannot fill cells of 4 samples on
/// 4 DP slots: 510 is not a multiple of 4 x 4 = 16", "samples_per_cell 4 on 4 DP slots fixes R = 32
/// rows for 512 samples, below min_rows 40" and "..., not a multiple of row_multiple 3". With an
/// `origin` (the topology file or shipped name the rules came from) the message names it and the
/// field: "t.json: samples_per_dp_slot: 512 samples cannot fill 3 DP slots with 171 each".
void check_batch_window(const Topology& t, std::int64_t n, const std::string& origin = {});

/// C of a window of lengths `length` under topology t: t.token_cap when it is set, else (only with
/// samples_per_cell c) the token sum of the c longest samples, the largest sum any cell can hold.
std::int64_t effective_token_cap(const Topology& t, const std::vector<std::int64_t>& length);

/// Serializes to the same JSON shape (edp_shards always written; the node fields only when given, so
/// a one-node topology serializes exactly as before they existed; row_multiple only when it is not 1,
/// comm_weight only when not 0, comm_load_tolerance only when not 0.02, expert_invocation_tokens only
/// when not 0, token_cap only when set, each
/// batch rule only when not free).
std::string topology_to_json(const Topology& t);
/// How messages name a topology given as `spec` (a file path or a shipped name, as --topology
/// takes it): control characters and invalid UTF-8 escaped (util::printable), never cut short, so
/// a long path stays whole. load_topology's errors and the model check's callers use it.
std::string topology_origin(const std::string& spec);

/// The smallest value a migration cost model number may take (a bandwidth of 1e-6 GB/s, 1e-6 TFLOP/s,
/// 1e-6 state bytes per parameter; seconds_per_U 1e-12): below it, a derived figure could overflow
/// to infinity (a denormal bandwidth, a TFLOP rate of 1e-300). `key` is the field's JSON name.
double migration_min_value(std::string_view key);

/// The migration cost model's numbers as a Topology holds them, checked: InputError "<origin>:
/// migration.inter_node_GBps is 0, not a number in [1e-06, 1e+15]" (seconds_per_U 0 means derived).
void check_migration_model(const MigrationModel& m, const std::string& origin);

/// MigrationModel::overlap_planning of a "planning" word: "overlapped" true, "serial" false; InputError
/// "<where> is \"later\", not \"overlapped\" or \"serial\"" otherwise (the topology's migration.planning,
/// a plan's migration.cost_model.planning).
bool planning_overlapped(const std::string& word, const std::string& where);

/// Checks the topology against a model: E % P == 0, experts_per_layer == E when given. InputError
/// prefixed by `origin` (the topology's file or shipped name): "t.json: 64 experts are not
/// divisible by 6 EP ranks".
void check_topology_for_model(const Topology& t, const ModelDescription& m, const std::string& origin = "topology");

/// Names of the shipped example topologies (resources/topologies/*.json, compiled in), sorted,
/// e.g. "deepseek-v2-lite-ep8-dp4", "synthetic-demo-ep8-dp4".
std::vector<std::string> known_topology_names();
/// A shipped topology by name; InputError listing the known names otherwise.
Topology known_topology(const std::string& name);
/// The topology named by `spec`: an existing file is read and parsed (errors name the file);
/// otherwise a shipped topology name; MissingFileError "<spec>: no such topology file or shipped
/// topology (known: ...)" when it is neither. Used by `routepack plan --topology` and the studio.
Topology load_topology(const std::string& spec);

} // namespace routepack
