#pragma once
// Layer-wise expert placement (paper section 3.3, Algorithm 1, eqs. 10 and 22).
#include <cstdint>
#include <span>
#include <vector>

namespace routepack {

/// pi_l for every MoE layer: slot[l*E + e] = physical slot v (0..E-1) of logical expert e at MoE
/// layer index l (0..L-1, in the model's moe_layers order). owner(v) = v / H, H = E / P.
struct Placement {
    int layers = 0;        ///< L
    int experts = 0;       ///< E
    int ep_ranks = 0;      ///< P
    std::vector<int> slot; ///< [L][E]

    int slots_per_rank() const { return experts / ep_ranks; }
    int owner(int v) const { return v / slots_per_rank(); }
    int at(int l, int e) const { return slot[static_cast<std::size_t>(l) * experts + e]; }
    /// EP rank holding logical expert e at layer l.
    int rank_of(int l, int e) const { return owner(at(l, e)); }
    bool operator==(const Placement&) const = default;
};

/// Aggregate expert loads L[l][e] = sum_i a[i][l][e] over a window. `counts` is [n][L][E].
std::vector<std::uint64_t> aggregate_expert_loads(std::span<const std::uint32_t> counts, std::size_t n, int L, int E);

/// Identity placement pi_l(e) = e.
Placement identity_placement(int L, int E, int P);

/// Algorithm 1 for every layer (layers in parallel with oneTBB): experts in argsort(-L[l][e], e)
/// order, each to argmin over ranks with open slots of (G[l][p], p), taking that rank's next slot
/// slot(p, n_p) = p*H + n_p. `loads` is [L][E]. Requires E % P == 0 (std::invalid_argument otherwise).
Placement lpt_placement(std::span<const std::uint64_t> loads, int L, int E, int P);

/// Aggregate physical-rank loads G[l][p] = sum_{e: owner(pi_l(e)) = p} L[l][e] (eq. 10), [L][P].
std::vector<std::uint64_t> rank_loads(std::span<const std::uint64_t> loads, const Placement& pi);

/// CV_global (eq. 22): mean over MoE layers of the population std / mean of G[l][.] over ranks
/// (a layer with zero load contributes 0). `G` is [L][P].
double cv_global(std::span<const std::uint64_t> G, int L, int P);

/// The placement comparison of a window or of expert totals alone: the identity placement against
/// LPT (Algorithm 1), with the rank loads G[l][p] (eq. 10, [L][P]) and CV_global (eq. 22) of each.
struct PlacementComparison {
    Placement identity, lpt;
    std::vector<std::uint64_t> rank_loads_identity, rank_loads_lpt; ///< G[l][p] (eq. 10), [L][P]
    double cv_identity = 0, cv_lpt = 0;                             ///< eq. 22
};

/// identity_placement and lpt_placement of `loads` ([L][E] expert totals, aggregate_expert_loads),
/// with rank_loads and cv_global of both. std::invalid_argument as lpt_placement (E % P != 0,
/// loads.size() != L*E).
PlacementComparison compare_placements(std::span<const std::uint64_t> loads, int L, int E, int P);

/// Per-layer max/mean of the rank loads G[l][.] (1 = perfectly balanced; a layer with zero load
/// gives 1). `G` is [L][P]; result [L]. std::invalid_argument on a size mismatch.
std::vector<double> rank_max_over_mean(std::span<const std::uint64_t> G, int L, int P);

/// One physical slot whose expert changes between two placements of the same shape: slot v of MoE
/// layer index l now holds logical expert `expert`, which `previous` kept in slot `from_slot`
/// (on EP rank from_slot / H); v held `previous_expert` before. A trainer copies the state of
/// `expert` (weights, master weights, both Adam moments, FP8 scales) from `from_slot` to `slot`.
struct SlotMove {
    int slot = 0;            ///< physical slot v in 0..E-1
    int expert = 0;          ///< logical expert now at v
    int from_slot = 0;       ///< slot of `expert` in the previous placement
    int previous_expert = 0; ///< logical expert at v in the previous placement
    bool operator==(const SlotMove&) const = default;
};

/// The slot changes from `previous` to `next`: the slots whose logical expert changes, per MoE layer
/// index ([L] lists, each in ascending slot order). A slot change inside one EP rank is a local copy;
/// only the slot changes of moved experts (placement_moves) cross GPUs. Both placements must have the
/// same L, E and P and be permutations (std::invalid_argument naming the mismatch or the layer
/// otherwise: "placement_slot_changes: placements differ in shape (...)").
std::vector<std::vector<SlotMove>> placement_slot_changes(const Placement& next, const Placement& previous);

/// A move: a logical expert whose EP rank differs from the previous placement's, so its state
/// (weights, master weights, both Adam moments, FP8 scales) crosses GPUs before the step starts (the
/// paper's state-consistent materialization, section 4.2).
struct ExpertMove {
    int expert = 0;    ///< logical expert e
    int from_rank = 0; ///< EP rank of e in the previous placement
    int to_rank = 0;   ///< EP rank of e in the next placement (!= from_rank)
    int from_slot = 0; ///< slot of e in the previous placement
    int to_slot = 0;   ///< slot of e in the next placement
    bool operator==(const ExpertMove&) const = default;
};

/// The moves from `previous` to `next` (the one definition of a move in the project): per MoE layer
/// index, the logical experts whose EP rank changes, in ascending expert order ([L] lists). The
/// order of the experts within a rank's slots is free and never a move. Both placements must have
/// the same L, E and P and be permutations (std::invalid_argument: "placement_moves: placements
/// differ in shape (1 layers x 4 experts on 2 EP ranks vs 1 x 4 on 4)", or naming the layer).
std::vector<std::vector<ExpertMove>> placement_moves(const Placement& next, const Placement& previous);

/// Number of moves from `previous` to `next` summed over MoE layers (placement_moves, counted
/// without building the lists). Same errors as placement_moves.
std::int64_t moved_experts(const Placement& next, const Placement& previous);

/// `next` with the previous slot kept for every expert that stays on its EP rank: per layer and
/// rank p, an expert on p in both placements keeps its slot of `previous`; the experts arriving on
/// p take the slots its leaving experts freed, in ascending slot order, the arriving experts in
/// ascending order of their slot in `next`. Ranks, and so the score (eqs. 10-15), are those of
/// `next`; a placement that keeps every expert's rank becomes `previous` slot for slot. Same errors
/// as placement_moves.
Placement keep_previous_slots(const Placement& next, const Placement& previous);

/// Inverse map: logical[l*E + v] = e with pi_l(e) = v (the physical_to_logical shape serving
/// stacks load).
std::vector<int> physical_to_logical(const Placement& pi);

} // namespace routepack
