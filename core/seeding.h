#pragma once
// Diverse fixed-row population initialization (paper section 4.1.1, Algorithm 2).
#include "core/score.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace routepack {

/// Budgets of Algorithm 2.
struct SeedingBudget {
    int candidates = 32;      ///< M: fixed-row candidates tried (including FixedRowFFD and its pairing)
    int population = 8;       ///< P_pop: members returned
    int choice_width = 4;     ///< w: WindowShuffle prefix / RandomizedBestFit / EDPAwarePair top-w
    double eta = 0.5;         ///< diversity weight on the normalized primary-score gap
    int projections = 8;      ///< q: sliced-Wasserstein projections
    int pair_candidates = 64; ///< bound on candidate slots examined per cell by EDPAwarePair (B^2 cap)
    std::uint64_t seed = 1;
};

/// One population member with its exact score and where it came from ("ffd", "ffd+pair", "shuffle#7").
struct SeedMember {
    Layout layout;
    Score score;
    std::string origin;
};

/// Deterministic PRNG used by seeding and annealing (xoshiro256**, seeded through splitmix64).
class Rng {
public:
    explicit Rng(std::uint64_t seed);
    std::uint64_t next();
    /// Uniform in [0, 1) from 53 bits.
    double uniform();
    /// Uniform integer in [0, n).
    std::uint64_t below(std::uint64_t n);
private:
    std::uint64_t s_[4];
};

/// WindowShuffle: perturbs `order` (nonincreasing length order) by repeatedly drawing uniformly from
/// the first min(w, remaining) items.
std::vector<int> window_shuffle(const std::vector<int>& order, int w, Rng& rng);

/// EDPAwarePair: orders the completed cells by routed-token peak (descending) and maps them to the
/// R x D positions, each to an empty (r, d) chosen by the insertion key (increase of the sum of
/// layer-wise EDP-rank peaks of its row-shard, largest such peak) with rank-decaying top-w sampling
/// (rank j chosen with weight 2^-j). Returns the layout with the same cells at new positions.
Layout edp_aware_pair(const std::vector<std::vector<int>>& cells, int rows, const PackingProblem& p, int w, Rng& rng);

/// Canonicalize: sample ids sorted in each cell, exchangeable cells sorted within each D_g of a row,
/// rows sorted. Returns the canonical signature (equal for layouts equal up to those permutations).
std::vector<int> canonical_signature(const Layout& x, const PackingProblem& p);

/// Sliced-Wasserstein sketch of a layout: q fixed projections u_k of the normalized row-feature
/// matrix H(x) in R^{R x F} (F = token moments + per-layer EDP-rank peaks), phi_k = sort(H u_k).
struct Sketch {
    std::vector<double> phi;  ///< [q][R]
};
Sketch sketch_layout(const Layout& x, const PackingProblem& p, int projections);
/// d(x, y) = (1/q) sum_k ||phi_k(x) - phi_k(y)||_1 / R* (row-permutation invariant).
double sketch_distance(const Sketch& a, const Sketch& b, int projections);

/// Algorithm 2: FixedRowFFD seed, its EDPAwarePair, then M-2 WindowShuffle + RandomizedBestFit +
/// EDPAwarePair trials (aborted when infeasible), CanonicalMap (lowest exact score per signature),
/// QualityDiversitySelect (start from the exact-score winner, then maximize min distance - eta *
/// normalized primary gap) to P_pop members, cycling when fewer distinct seeds exist. `extra` layouts
/// (e.g. the `reorder` layout) are always admitted as candidates. Deterministic for a given budget.
/// Stops adding trials when `cancel` is set (never returns fewer than one member).
std::vector<SeedMember> diverse_population(const PackingProblem& p, const Layout& ffd, const SeedingBudget& b,
                                           const std::atomic<bool>* cancel = nullptr);

}  // namespace routepack
