#pragma once
// Planner budgets as JSON: how the library stores a run's budgets and a topology's default budgets.
// The keys are those of the plan file's "planner.budgets" object plus "seed" and "workers".
#include "core/planner.h"

#include <string>

namespace routepack {

/// {"seed", "workers", "seeds_M", "population", "choice_width", "eta", "projections",
/// "pair_candidates", "levels", "t0", "cooling", "steps_per_level", "p_guide", "rho", "p_straggler", "row_nodes",
/// "polish_evaluations", "time_limit_s"} (compact JSON; doubles with round-trip precision). The annealing and seeding
/// seeds/workers are derived by the planner and are not part of it.
std::string planner_budgets_to_json(const PlannerBudgets& b);

/// Inverse of planner_budgets_to_json. Absent keys keep their defaults (PlannerBudgets{}); a key of
/// the wrong type, a malformed text or an out-of-range value (negative counts, p_guide/rho/p_straggler outside
/// [0, 1], cooling outside (0, 1], t0 <= 0, non-finite numbers) is an InputError naming `origin`
/// and the key.
PlannerBudgets parse_planner_budgets(const std::string& json_text, const std::string& origin);

} // namespace routepack
