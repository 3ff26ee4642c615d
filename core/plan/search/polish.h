#pragma once
// Exact local search on the straggler after annealing: cyclic first-improvement descent and its
// iterated (kick-and-descend) form, on IncrementalScorer (paper eq. 15 score, exact).
#include "core/plan/score/score.h"

#include "core/util/stop.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace routepack {

/// Budgets of iterated_straggler_search. All counted in work, so the result depends only on the
/// inputs, the seed and these numbers (never on timing, unless a deadline fires).
struct PolishSettings {
    /// Work per replica: moves scored exactly (descents and kick moves) plus, in the guided
    /// descent, ceil(n / 1024) per sample visit whose moves were ranked (a visit ranks about n
    /// moves), and one per kick that found no feasible move; 0 = no pass.
    std::int64_t evaluations = 20000;
    /// Independent replicas (each from the same start, own RNG stream), run in parallel on the
    /// caller's TBB arena; the best in replica order wins. Replica 0 starts with a plain descent.
    int replicas = 1;
    /// Random moves of one kick (each a relocation or swap of a straggler-shard sample, applied
    /// whatever its score); 0 = plain descent only.
    int kick_moves = 4;
    /// Guided descent: moves ranked by a linear estimate, this many best scored exactly per visit
    /// (0 = plain cyclic first-improvement descent).
    int verify = 8;
    /// Largest table of peak demands ([R*G][n] int64, rows x samples) the guided descent stores,
    /// and never more than the window's demands q[n][L][P] (int32) take, 1 MiB at least; above it
    /// each value is formed when needed (same result, O(L) per value instead of O(1)), so memory
    /// stays linear in the window. Default 128 MiB: the 8192-sample scale point needs 64 MiB (its q
    /// takes 128 MiB).
    std::int64_t guide_table_bytes = std::int64_t{128} << 20;
};

/// Outcome of cyclic_descent / iterated_straggler_search.
struct PolishResult {
    Layout layout;
    Score score;
    std::int64_t evaluations = 0;  ///< scored moves over all replicas (kick moves included)
    std::int64_t improvements = 0; ///< moves kept by the descents
    int kicks = 0;                 ///< kicks over all replicas
    int kicks_kept = 0;            ///< kicks whose descent beat the replica's best
    bool local_optimum = false;    ///< the returned layout is a local optimum of the descent neighborhood
    bool cancelled = false;        ///< the stop token (cancel flag or deadline) stopped it
};

/// Iterated straggler search (kick and descend) from layout x. The descent (verify > 0, guided):
/// samples are visited in the cyclic order 0, 1, ..., n-1, 0, ...; a visit of a sample i of the
/// current straggler shard g* (the first with U = s0) ranks every feasible relocation of i (source
/// kept non-empty, target within C) and every cap-feasible swap of i with a sample of another cell
/// by an optimistic linear estimate of the new (max_g U, sum_g U) (per row-shard and MoE layer the
/// peak EP rank of W, eq. 13, held fixed: removing i lowers E by at most sum_l q[i][l][peak_l] / C,
/// adding j raises it by at least sum_l q[j][l][peak_l] / C, because max over ranks is convex;
/// attention, eq. 12, from the cells' integer sums), drops the moves whose estimate does not beat
/// the current score, and scores the best `verify` exactly (IncrementalScorer) in estimate order;
/// the first strictly better tuple (eq. 15, lexicographic) is kept. A sample whose visit found
/// nothing is skipped until its row-shard changes or the straggler shard does (don't-look bits);
/// the descent ends at a local optimum (n consecutive visits without a kept move). With verify = 0
/// the descent is the plain cyclic first-improvement one (every move scored exactly, relocations
/// first, then swaps with partners ascending). Each replica descends from x, then repeatedly applies a kick of
/// `kick_moves` random feasible moves to its best layout (sample drawn uniformly among the straggler shard's, target
/// cell uniform among the others, relocation or swap with a uniform cap-feasible partner in that cell, half and half)
/// and descends again, keeping the result when it is strictly better than the replica's best, until the replica spent
/// `evaluations` scored moves. Replica r draws from an Rng seeded by seeds::annealing_chain(seed,
/// 0, r); replicas run in parallel on the calling thread's TBB arena and the best is chosen in
/// replica order, so the result does not depend on the arena's size. `stop` (polled every 256
/// evaluations, and before every visit of the guided descent) stops every replica; the best valid layout so far is
/// returned with cancelled = true. The layout must be valid for `p` (std::invalid_argument otherwise); the result is
/// never worse than x and its score equals score_layout(result.layout, p). Budgets out of range (evaluations < 0,
/// replicas < 1, kick_moves < 0, verify < 0): InputError. `on_improve`, when set, is called with a replica's new best
/// score each time it improves (on that replica's thread; the caller serializes).
PolishResult iterated_straggler_search(const PackingProblem& p, const Layout& x, const PolishSettings& s,
                                       std::uint64_t seed, const StopToken& stop = {},
                                       const std::function<void(const Score&)>& on_improve = {});

/// Result of straggler_descent.
struct DescentResult {
    Layout layout;
    Score score;
    std::int64_t evaluations = 0;  ///< moves applied to the scorer and scored (kept or undone)
    std::int64_t improvements = 0; ///< moves kept (each strictly improves the score tuple)
    bool local_optimum = false;    ///< a full scan found no improving move (else the budget ran out)
    bool cancelled = false;        ///< the stop token (cancel flag or deadline) stopped it
};

/// The plain straggler descent (the final pass before iterated_straggler_search; kept for the
/// benchmark's previous-default baseline and its tests): first-improvement descent on the exact score tuple (eq. 15)
/// with moves aimed at the straggler. Repeatedly, g* = the first shard with U = max_g U (s0); its row- shards in
/// decreasing J; for each of their samples i (cell order): every relocation of i to another cell that keeps the source
/// non-empty and the target within C, then every cap-feasible swap of i with a sample j of another cell (j ascending);
/// the first move whose score is strictly lower (lexicographically, so s0 may stay equal while s1 or s2 drop) is kept
/// and the scan restarts at the new straggler. Stops at a local optimum of that neighborhood (a full scan of g* without
/// improvement), after `max_evaluations` scored moves, or when `stop` fires (polled every 256 evaluations). Serial
/// and RNG-free: the result depends only on the inputs and the budget. The layout must be valid for `p`
/// (std::invalid_argument otherwise); the result is never worse than x. Cost per evaluation O(L*P + R + G)
/// (IncrementalScorer).
DescentResult straggler_descent(const PackingProblem& p, const Layout& x, std::int64_t max_evaluations,
                                const StopToken& stop = {});

} // namespace routepack
