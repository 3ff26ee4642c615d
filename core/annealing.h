#pragma once
// Fixed-row population annealing (paper section 4.1.2-4.1.3, Algorithm 3).
#include "core/seeding.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace routepack {

/// Budgets of Algorithm 3 (defaults justified by tests/bench/bench_planner and listed in README).
struct AnnealingBudget {
    int levels = 12;            ///< N_T temperature levels
    double t0 = 0.02;           ///< T_0 on the normalized energy delta of line 9
    double cooling = 0.6;       ///< geometric factor: T_{n+1} = cooling * T_n
    int steps = 2000;           ///< K proposals per chain per level
    double p_guide = 0.8;       ///< probability of a guided proposal
    double rho = 0.3;           ///< relocation probability (else swap)
    int workers = 0;            ///< TBB arena size; 0 = all cores
    std::uint64_t seed = 1;
};

/// Per-level convergence record (for the convergence chart).
struct LevelStats {
    int level = 0;
    double temperature = 0;
    Score best;                 ///< incumbent x* after the level
    double mean_energy = 0;     ///< mean E(z_j) of terminal states
    double acceptance = 0;      ///< accepted / proposed over the level's chains
    std::int64_t proposals = 0;
};

struct AnnealResult {
    Layout best;
    Score score;
    Score initial_best;         ///< best seed score (non-regression reference)
    std::vector<LevelStats> levels;
    std::int64_t proposals = 0;
    std::int64_t accepted = 0;
    bool cancelled = false;     ///< cancel flag or deadline stopped it early (best valid so far returned)
    bool time_limit_hit = false;
};

/// Algorithm 3 on population P0: chains in parallel on a TBB arena of `workers` threads (each chain
/// has its own RNG stream seeded from (seed, level, member), so the result depends only on inputs,
/// seed and budgets, not on scheduling), GuidedProposal (p_guide: source biased toward large J,
/// target toward small J; else uniform; relocation with probability rho), acceptance when the score
/// tuple improves or u < exp(-max(Delta, 0)/T_n) with Delta = (E(y') - E(y)) / max(|E(y)|, 1),
/// trajectory-best archive, systematic resampling between levels with weights
/// exp(-(1/T_{n+1} - 1/T_n) E~_j), E~_j = (E(z_j) - E_min) / max(|E_min|, 1). Validates the result
/// and asserts non-regression (std::logic_error if violated). `on_level` is called after each level
/// on the calling thread. Cancellation / deadline are checked between proposal batches.
AnnealResult population_anneal(const PackingProblem& p, const std::vector<SeedMember>& population,
                               const AnnealingBudget& b, const std::function<void(const LevelStats&)>& on_level = {},
                               const std::atomic<bool>* cancel = nullptr,
                               std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

}  // namespace routepack
