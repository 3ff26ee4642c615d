#pragma once
// Diverse fixed-row population initialization (paper section 4.1.1, Algorithm 2; costs in the
// complexity paragraph after Algorithm 3). Notation: n samples, R = R* rows, D DP slots, B = R*D
// cells, G EDP shards, L MoE layers, P EP ranks; token quantities in tokens unless said otherwise.
#include "core/plan/score/score.h"
#include "core/util/rng.h"

#include "core/util/stop.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace routepack {

/// Budgets of Algorithm 2.
struct SeedingSettings {
    int candidates = 32;      ///< M: fixed-row candidates tried (including FixedRowFFD and its pairing)
    int population = 8;       ///< P_pop: members returned
    int choice_width = 4;     ///< w: WindowShuffle prefix / RandomizedBestFit / EDPAwarePair top-w
    double eta = 0.5;         ///< diversity weight on the normalized primary-score gap
    int projections = 8;      ///< q: sliced-Wasserstein projections
    int pair_candidates = 64; ///< bound on partially filled row-shards examined per cell by EDPAwarePair (B^2 cap)
};

/// The settings of one run of Algorithm 2 plus the seed of its random streams (the planner derives
/// it from the master seed: seeds::planner_stage(seed, seeds::Stage::Seeding)).
struct SeedingBudget : SeedingSettings {
    std::uint64_t seed = 1;
};

/// One population member with its exact score and where it came from ("ffd", "ffd+pair", "shuffle#7").
struct SeedMember {
    Layout layout;
    Score score;
    std::string origin;
};

/// WindowShuffle: perturbs `order` (nonincreasing length order) by repeatedly drawing uniformly from
/// the first min(w, remaining) items. Always a permutation; w <= 1 returns `order` (no draws). O(n w).
std::vector<int> window_shuffle(const std::vector<int>& order, int w, Rng& rng);

/// EDPAwarePair (Algorithm 2 lines 2 and 9): orders the completed cells by routed-token peak
/// (sum_l max_p of the cell's own load, descending; ties by token sum descending, then input index)
/// and maps each to an empty position (r, d), chosen by the insertion key (increase of the sum of
/// layer-wise EDP-rank peaks sum_l max_p W[r][g][l][p] of its row-shard, then the largest such peak
/// max_l, then the position index r*D + d; all in tokens, smaller is better) with rank-decaying
/// top-w sampling (rank j chosen with weight 2^-j). All empty slots of one row-shard share the key,
/// so candidates are row-shards and the slot taken is the lowest empty d in D_g. Row-shards that are
/// still empty share one key too and cost O(1); partially filled ones cost O(L*P) each (pruned once
/// the running increase exceeds the w-th best). At most `max_candidates` partially filled row-shards
/// are examined per cell (a uniform random subset drawn from `rng` when more are open), which bounds
/// the paper's O(B^2 G L P) pairing term by O(B * max_candidates * L * P) at B = R*D = 8192 cells.
/// `cells` holds the completed cells (input index = its cell index k) as a well-formed layout of at
/// least one row and D = p.D DP slots (std::invalid_argument otherwise); returns the layout of the
/// same R x D shape with those cells at new positions (cell contents and in-cell order unchanged).
Layout edp_aware_pair(const Layout& cells, const PackingProblem& p, int w, Rng& rng, int max_candidates = 64);

/// Canonicalize: sample ids sorted in each cell, exchangeable cells sorted within each D_g of a row,
/// rows sorted. Returns the canonical signature (equal for layouts equal up to those permutations):
/// [R, D, then per row in sorted order: per shard g = 0..G-1 its sorted cells, each cell's ids
/// followed by -1, the shard closed by -2; the row closed by -3]. O(n log n + B log B).
std::vector<int> canonical_signature(const Layout& x, const PackingProblem& p);

/// Sliced-Wasserstein sketch of a layout: q fixed projections u_k of the normalized row-feature
/// matrix H(x) in R^{R x F}, phi_k = sort(H u_k). F = 3 + L dimensionless features per row, each about 1
/// on a balanced layout: row tokens / (sum t / R); row sum t^2 / (sum t^2 / R); sum_g max_{d in D_g}
/// cell tokens / (G sum t / (R D)) (the attention-max proxy); and per layer l, sum_g max_p W[r][g][l][p]
/// / (sum_i sum_p q[i][l][p] / (R P)) / sqrt(L) (the EDP-rank peak; 1/sqrt(L) keeps the L expert
/// columns from swamping the token columns). u_k: Gaussian directions from a fixed-seed Rng,
/// normalized (independent of the budget seed). Invariant under row order and within-shard cell
/// order. O(n L P + q R (F + log R)).
struct Sketch {
    std::vector<double> phi; ///< [q][R]
};
Sketch sketch_layout(const Layout& x, const PackingProblem& p, int projections);
/// d(x, y) = (1/q) sum_k ||phi_k(x) - phi_k(y)||_1 / R* (row-permutation invariant); +infinity when
/// the sketches have different shapes.
double sketch_distance(const Sketch& a, const Sketch& b, int projections);

/// Algorithm 2 on the fixed row count R* = ffd.rows: `ffd` is the caller's FixedRowFFD layout (the
/// `reorder` seed; it must be valid, std::invalid_argument otherwise) and is always a candidate, so the
/// first member is never worse than it. Then x_paired = minScore{ffd, EDPAwarePair(cells(ffd))}, then
/// M-2 trials (WindowShuffle of argsort(-t) + RandomizedBestFit + EDPAwarePair, aborted when
/// infeasible; each with its own RNG stream derived from (seed, trial), run in parallel with oneTBB),
/// CanonicalMap (lowest exact score per signature, ties to the earlier candidate),
/// QualityDiversitySelect (start from the exact-score winner, then maximize min distance - eta *
/// normalized primary gap) to P_pop members, cycling when fewer distinct seeds exist. Members[0] is
/// the exact-score winner.
///   RandomizedBestFit ranks the feasible cells F_i by (token occupancy descending, cardinality
/// ascending, index ascending) and takes rank j of the leading w with weight 2^-j (the plain best fit
/// half of the time: trials stay feasible at a tight R* while every choice can deviate).
///   QualityDiversitySelect maximizes min_{y in P} d(x, y) - eta * delta0(x), delta0 = (s0(x) -
/// s0_best) / max(|s0_best|, 1e-12), with d = 0.5 d_co + 0.5 d_sw / d_ref: d_co in [0, 1] is the O(n)
/// co-assignment distance (mean over the cell and row-shard levels of the fraction of samples whose
/// cyclic successor among their mates, in id order, differs), d_sw the sketch distance and d_ref =
/// max_x d_sw(x, winner). Ties go to the better exact score, then the earlier candidate.
///   Cost per trial: O(n w + n log B) construction, EDPAwarePair O(B (w + pair_candidates) L P) plus
/// one pass over the demand (two when the B x L x P cell loads exceed 64 MiB), one exact score;
/// selection O(M P_pop (n + q R)). Deterministic for a given problem, ffd and budget, independent of the
/// number of TBB threads. Stops adding trials once `stop` fires (polled before each trial; never
/// returns fewer than one member; then the result depends on timing).
std::vector<SeedMember> diverse_population(const PackingProblem& p, const Layout& ffd, const SeedingBudget& b,
                                           const StopToken& stop = {});

} // namespace routepack
