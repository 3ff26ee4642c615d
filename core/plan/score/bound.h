#pragma once
// A certified lower bound on the slowest EDP shard's work max_g U_g (paper eqs. 11-15) over every
// layout of a window at a fixed placement.
#include "core/plan/score/packing.h"

#include <cstdint>
#include <span>
#include <vector>

namespace routepack {

/// The lower bound and its two parts (cost units of eq. 15: tokens / C).
struct MaxULowerBound {
    /// Mean bound: LB_mean = ( (1/C) sum_l max_p L[l][p] + sum_s (alpha_s sum_i t_i / C +
    /// beta_s sum_i (t_i / C)^2) / max_g |D_g| ) / G, with L[l][p] = sum_i q[i][l][p] (eq. 5 summed
    /// over the window, i.e. the rank loads of eq. 10 under the problem's placement pi).
    double mean = 0;
    /// Sample bound: LB_sample = max_i ( (1/C) sum_l max_p q[i][l][p] + sum_s (alpha_s t_i / C +
    /// beta_s (t_i / C)^2) ): the row-shard that holds sample i costs at least that much alone.
    double sample = 0;
    /// max(mean, sample), rounded down by a relative 1e-12 so that the rounding of the double
    /// arithmetic here and in the score (a left fold over up to R rows) cannot lift it above a
    /// computed score: value <= score_layout(x, p).max_u for every valid layout x, every row count.
    double value = 0;
};

/// Lower bound on max_g U_g = s0 of Score (eq. 15) that holds for every valid layout of `p` (any
/// row count R, every cell within C), at the placement `p` was built with. Why it holds:
///  - sum_g U_g = sum_{r,g} (A[r][g] + E[r][g]) (eq. 15), and max_g U_g >= (sum_g U_g) / G;
///  - E (eq. 14): sum_{r,g} max_p W[r][g][l][p] >= max_p sum_{r,g} W[r][g][l][p] = max_p L[l][p],
///    since a max over ranks is subadditive across row-shards (eq. 13 sums to L over all cells);
///  - A (eq. 12): max_{d in D_g} c[r][d][s] >= mean_{d in D_g} c[r][d][s] >= (1 / max_g |D_g|)
///    sum_{d in D_g} c[r][d][s] as c >= 0 (alpha_s, beta_s >= 0), and summing c over all cells gives
///    alpha_s sum_i t_i / C + beta_s sum_i t_i^2 / C^2 (eq. 11 is linear in the cell's sums);
///  - every row-shard's J bounds its shard's U from below, and W[r][g] >= q[i] for the i it holds.
/// Integer sums (int64) are formed first, doubles only from them. Cost O(n*L*P + n*S).
/// Samples in parallel on the calling oneTBB arena (the same value for any worker count).
/// `per_sample` (optional) receives each sample's own bound (the LB_sample term of sample i), [n].
/// std::invalid_argument when the problem has no shards, samples or a negative alpha/beta.
MaxULowerBound max_u_lower_bound(const PackingProblem& p, std::vector<double>* per_sample = nullptr);

/// Lower bound on max_g U_g over every layout *and every placement* of the window (the bound above
/// holds at one placement only): the same two parts with the rank loads bounded for any placement.
/// Per MoE layer the busiest of P ranks of H = E / P slots carries at least the mean rank load,
/// ceil(sum_e x[e] / P), and at least the heaviest expert plus the H - 1 lightest (the rank holding
/// the heaviest expert holds H - 1 others); x is the window's loads L[l][e] for the mean part and a
/// sample's counts a[i][l][e] for the sample part. `p` supplies the lengths, C, stages and shards;
/// `counts` is the window's [n][L][E]. A sample's bound at p's placement (max_u_lower_bound's
/// per-sample term, from p's demand when it has one) is at least its bound at any placement, so
/// samples are evaluated in decreasing order of the former until none left can exceed the largest
/// found (without a demand, all are). O(n L E) at most for H - 1 <= 8 (one pass per sample and
/// layer, the lightest summed only when fewer than H - 1 counts are zero), in parallel on the
/// calling oneTBB arena; the same value for any worker count and either way.
/// std::invalid_argument as max_u_lower_bound, or when counts is not n x L x E with E % P == 0.
MaxULowerBound max_u_lower_bound_any_placement(const PackingProblem& p, std::span<const std::uint32_t> counts, int E);

/// The same with the window's loads L[l][e] = sum_i a[i][l][e] given ([L][E],
/// aggregate_expert_loads) and the samples' bounds at p's placement (max_u_lower_bound's
/// `per_sample`, [n]; empty: every sample is evaluated), as the planner has them;
/// std::invalid_argument also when the loads are not L x E.
MaxULowerBound max_u_lower_bound_any_placement(const PackingProblem& p, std::span<const std::uint32_t> counts, int E,
                                               std::span<const std::uint64_t> loads,
                                               std::span<const double> at_placement);

} // namespace routepack
