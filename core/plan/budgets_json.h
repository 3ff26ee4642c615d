#pragma once
// Planner budgets as JSON: how the library stores a run's budgets and a topology's default budgets.
// The keys are those of the plan file's "planner.budgets" object plus "seed" and "workers".
#include "core/plan/planner.h"

#include <string>

namespace routepack {

/// {"seed", then every key of budget_table() in table order: "workers", "seeds_M", "population",
/// "choice_width", "eta", "projections", "pair_candidates", "levels", "t0", "cooling", "steps_per_level",
/// "p_guide", "rho", "p_straggler", "row_nodes", "polish_evaluations", "polish_kick_moves",
/// "placement_rounds", "time_limit_s", "anytime"} (compact JSON; doubles with round-trip precision). The annealing and
/// seeding seeds/workers are derived by the planner and are not part of it.
std::string planner_budgets_to_json(const PlannerBudgets& b);

/// Largest planner worker count on this machine: 4 x the cores this process may use
/// (tbb::info::default_concurrency()).
int max_planner_workers();
/// Longest planner time limit: one year, in seconds.
inline constexpr double kMaxTimeLimitSeconds = 365.0 * 24 * 3600;
/// Most rounds of the final pass (each may rebuild the [n][L][P] demand at a refined placement).
inline constexpr int kMaxPlacementRounds = 1000;

/// The one validation of planner budgets, shared by the CLI, the studio and the planner
/// (plan_window checks its input with origin "planner"). Every range is a row of budget_table()
/// (core/plan/budget_table.h). InputError "<origin>: budget 'key' must be <rule> (got <value>)",
/// carrying the budget as its Setting (budget_setting: the CLI names it by its flag, the studio by
/// its label), for the first budget out of range, checked in this order: workers, time_limit_s, anytime, then the other
/// rows in table order. <rule> is "in lo..hi" for integers and the row's `rule` otherwise:
///   workers          0 (all cores) or 1..max_planner_workers() (skipped when !check_workers)
///   time_limit_s     finite, 0..kMaxTimeLimitSeconds (0 = none)
///   anytime          only with time_limit_s > 0
///   eta finite, >= 0;  t0 finite, > 0;  cooling in (0, 1];  p_guide, rho, p_straggler in [0, 1]
/// (the seed is any 64-bit unsigned value; its text is checked where it is parsed).
void check_planner_budgets(const PlannerBudgets& b, const std::string& origin, bool check_workers = true);

/// Inverse of planner_budgets_to_json; reads the keys of budget_table() (plus "seed") with
/// util::JsonField. Absent keys keep their defaults (PlannerBudgets{}); a malformed text, a key of
/// the wrong type or out of its row's range ("<origin>: levels is -5, not an integer in 0..1000",
/// "<origin>: cooling is 1.5, not a number in (0, 1]", "<origin>: anytime is 1, not true or false"),
/// then any rule of check_planner_budgets except the machine's worker bound (workers are 0..4096
/// there) is an InputError naming `origin` and the key.
PlannerBudgets parse_planner_budgets(const std::string& json_text, const std::string& origin);

} // namespace routepack
