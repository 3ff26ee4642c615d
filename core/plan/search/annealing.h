#pragma once
// Fixed-row population annealing (paper section 4.1.2-4.1.3, Algorithm 3).
#include "core/plan/search/seeding.h"

#include "core/util/stop.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace routepack {

/// Budgets of Algorithm 3 (defaults justified by tests/bench/bench_planner and listed in docs/planner.md).
struct AnnealingSettings {
    int levels = 12;      ///< N_T temperature levels
    double t0 = 0.01;     ///< T_0 on the normalized energy delta of line 9
    double cooling = 0.5; ///< geometric factor: T_{n+1} = cooling * T_n
    int steps = 1000;     ///< K proposals per chain per level
    double p_guide = 0.8; ///< probability of a guided proposal
    double rho = 0.3;     ///< relocation probability (else swap)
    /// Probability that a guided proposal is aimed at the straggler shard (source row-shard in the
    /// shard with U = max_g U, target in another shard); needs G > 1.
    double p_straggler = 0.0;
};

/// The settings of one run of Algorithm 3 plus the seed of its chain streams (the planner derives
/// it from the master seed: seeds::planner_stage(seed, seeds::Stage::Annealing)). Threads are not a budget of the
/// stage: the chains run on the calling thread's TBB arena (the planner's, sized by PlannerBudgets::workers), and the
/// result does not depend on its size.
struct AnnealingBudget : AnnealingSettings {
    std::uint64_t seed = 1;
};

/// Per-level convergence record (for the convergence chart).
struct LevelStats {
    int level = 0;
    double temperature = 0;
    Score best;             ///< incumbent x* after the level
    double mean_energy = 0; ///< mean E(z_j) of terminal states
    double acceptance = 0;  ///< accepted / proposed over the level's chains (infeasible proposals count as proposed)
    std::int64_t proposals = 0;
    std::int64_t infeasible = 0; ///< proposals skipped at line 6 (cap, empty source, same cell)
    int state_copies = 0;        ///< chain states copied by the resampling after this level (ResampleReuse)
};

struct AnnealResult {
    Layout best;
    Score score;
    Score initial_best; ///< best seed score (non-regression reference)
    std::vector<LevelStats> levels;
    std::int64_t proposals = 0;
    std::int64_t accepted = 0;
    bool cancelled = false; ///< the stop token (cancel flag or deadline) stopped it early (best valid so far returned)
    bool time_limit_hit = false;
};

/// Algorithm 3 on population P0: chains in parallel on the calling thread's TBB arena (each chain
/// has its own RNG stream seeded from (seed, level, member), so the result depends only on inputs,
/// seed and budgets, not on scheduling), GuidedProposal (p_guide: source biased toward large J,
/// a share p_straggler of them inside the straggler shard with the target outside it, target toward
/// small J; else uniform; relocation with probability rho), acceptance when the score
/// tuple improves or u < exp(-max(Delta, 0)/T_n) with Delta = (E(y') - E(y)) / max(|E(y)|, 1),
/// trajectory-best archive, systematic resampling between levels with weights
/// exp(-(1/T_{n+1} - 1/T_n) E~_j), E~_j = (E(z_j) - E_min) / max(|E_min|, 1). Validates the result
/// and asserts non-regression (std::logic_error if violated). `on_level` is called after each level
/// on the calling thread. `stop` is polled before each level and every 256 proposals inside each
/// chain; when it fires, the run stops at once and returns the best valid x* so far (trajectory
/// bests of the interrupted level included) with cancelled = true (and time_limit_hit when the first
/// chain to see it saw the deadline, not the cancel flag); the interrupted level gets no LevelStats. Budgets out of
/// range: InputError; an empty population or an invalid member: std::invalid_argument. Proposal details:
/// core/plan/search/annealing.cpp.
AnnealResult population_anneal(const PackingProblem& p, const std::vector<SeedMember>& population,
                               const AnnealingBudget& b, const std::function<void(const LevelStats&)>& on_level = {},
                               const StopToken& stop = {});

/// How resampled members get their chain states without rebuilding them. Every member m holds its
/// state in pool object obj[m]; after resampling member m needs the terminal state of pick[m]:
///  - a member that picked itself keeps its object (nothing copied);
///  - the first member (in member order) that picks a source whose object is still unclaimed takes
///    that object (nothing copied);
///  - every other member gets the object of a member nobody picked (in member order) and a copy of
///    its source's state into it: copies = P - (distinct values in pick), the fewest possible.
struct ResampleReuse {
    std::vector<int> obj;                    ///< [P] new object of member m
    std::vector<std::pair<int, int>> copies; ///< (destination object, source object)
    std::vector<char> claimed, is_source;    ///< scratch ([P])
};
/// Fills `out` (reusing its storage) for `pick` (systematic_resample's result) and the current
/// member -> object map `obj` (a permutation of 0..P-1). std::invalid_argument when sizes differ or
/// a pick is out of range.
void plan_resample_reuse(const std::vector<int>& pick, const std::vector<int>& obj, ResampleReuse& out);

/// Systematic resampling between levels (Algorithm 3 lines 15-18, paper section 4.1.3): with
/// E~_j = (E_j - E_min) / max(|E_min|, 1), w^_j = exp(-(1/t_next - 1/t_now) E~_j), w_j = w^_j / sum_h w^_h,
/// F_j = sum_{h<=j} w_h and u_m = u0 + m/P (u0 in [0, 1/P), P = energies.size()), returns for every
/// m = 0..P-1 the index min{j : F_j >= u_m} (the last index when rounding leaves F_{P-1} < u_m).
/// std::invalid_argument when u0 is outside [0, 1/P] or a temperature is not positive.
std::vector<int> systematic_resample(const std::vector<double>& energies, double t_now, double t_next, double u0);

} // namespace routepack
