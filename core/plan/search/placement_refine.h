#pragma once
// Placement refined for a packing: per MoE layer, expert swaps between EP ranks that lower the sum
// over row-shards of the busiest rank's load (paper eqs. 13-14 at a fixed layout).
#include "core/model/trace.h"
#include "core/plan/score/placement.h"
#include "core/util/stop.h"

#include <cstdint>
#include <span>
#include <vector>

namespace routepack {

/// Outcome of refine_placement. Token sums are F = sum_l sum_rs max_p W[rs][l][p] (eq. 13 summed
/// over each row-shard's cells; C * F is sum_{r,g} E[r][g] of eq. 14).
struct PlacementRefinement {
    Placement placement;              ///< the refined placement (the start when nothing improved)
    std::int64_t peak_sum_before = 0; ///< F at the start placement (tokens)
    std::int64_t peak_sum_after = 0;  ///< F at the refined placement (tokens), <= peak_sum_before
    std::int64_t swaps = 0;           ///< expert swaps kept, over all layers
    std::int64_t evaluations = 0;     ///< swaps evaluated, over all layers
};

/// Moves a refinement may make against a previous step's placement (core/plan/search/migration.h): a swap is
/// considered only while layer l's moved experts (placement_moves against `previous`) stay at most
/// allowance[l] (-1: no limit at that layer).
struct RefineMoveLimit {
    const Placement* previous = nullptr;
    std::vector<std::int64_t> allowance; ///< [L]
};

/// Refines `start` for a fixed assignment of samples to row-shards: for every MoE layer l
/// independently (layers in parallel on the caller's TBB arena), a first-improvement local search
/// over swaps of two logical experts held by different EP ranks (each takes the other's physical
/// slot, so every rank keeps its H = E / P slots and the rest of pi_l is unchanged). A swap is kept
/// when it strictly lowers F_l = sum_rs max_p W[rs][l][p], W[rs][l][p] = sum over the samples i of
/// row-shard rs of the counts a[i][l][e] of the experts e on rank p (eq. 13 with q from eq. 5).
/// Pairs are visited e1 < e2 in ascending order; a swap is skipped without scoring when neither of
/// its ranks is the busiest of any row-shard (it cannot lower any max), or when its rank pair (a, b)
/// cannot lower F_l at all: every row-shard keeps at least the larger of the other ranks' peak and
/// ceil((W[rs][l][a] + W[rs][l][b]) / 2), and those sum to F_l or more (the pair's answer is kept
/// until the next kept swap; such pairs still count as evaluated). A layer stops after a full
/// pass without a kept swap or after `max_passes` passes. Deterministic: the result depends only on
/// the inputs (not on the worker count). Cost per pass and layer O(E^2 * row_shards) at most, plus
/// one pass over the window's counts.
/// `row_shard` is [n]: the row-shard (any id in 0..row_shards-1) of each window sample.
/// `stop` is polled before every pass of every layer (from the worker threads); once it fires the
/// layers stop where they are (the result is still a valid placement, F no higher than at the start,
/// but then depends on timing).
/// With `limit`, swaps that would take a layer past its allowance of moves are skipped.
/// std::invalid_argument when the shapes disagree (placement vs the window's L and E, row_shard
/// size or ids out of range, max_passes < 0, a limit whose previous or allowance has another shape).
PlacementRefinement refine_placement(const Trace& window, const Placement& start, std::span<const int> row_shard,
                                     int row_shards, int max_passes, const StopToken& stop = {},
                                     const RefineMoveLimit* limit = nullptr);

} // namespace routepack
