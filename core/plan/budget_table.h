#pragma once
// The planner budgets as one table: every budget of PlannerBudgets (except the master seed, a 64-bit
// text checked where it is parsed) with its JSON key, CLI flag, studio label, range and help. The JSON
// reader and writer (core/plan/budgets_json.h), check_planner_budgets, the plan file's
// planner.budgets, the CLI flags of plan/compare/sweep, the Python module's `budgets` dict and the
// studio's budget editor all iterate it; adding a budget is one row.
#include "core/plan/planner.h"
#include "core/util/errors.h"

#include <cstdint>
#include <span>
#include <string>
#include <variant>

namespace routepack {

/// The C++ type of a budget's field.
enum class BudgetKind { Int, Int64, Double, Bool };

/// Where a budget lives in a PlannerBudgets: a pointer to the field, of the row's kind.
using BudgetRef = std::variant<int*, std::int64_t*, double*, bool*>;

/// One budget.
///
/// Range: integers lo..hi (both ends included; exact in a double: every bound is below 2^53).
/// Doubles: finite and in [lo, hi], an end excluded when lo_open / hi_open ("(0, 1]" for cooling);
/// `hi` is std::numeric_limits<double>::max() where the only upper rule is "finite" (eta, t0).
/// Bools: lo = 0, hi = 1.
struct BudgetRow {
    const char* key;   ///< JSON key ("seeds_M"): budgets JSON, plan file, Python `budgets` dict
    const char* flag;  ///< CLI flag of plan/compare/sweep ("--seeds"), or nullptr when there is none
    const char* label; ///< the studio's name of the field ("Seeds M")
    BudgetKind kind;
    BudgetRef (*field)(PlannerBudgets&); ///< the field in a PlannerBudgets
    double lo, hi;
    bool lo_open = false, hi_open = false;
    /// The rule as check_planner_budgets words it after "must be " ("in 1..4096", "in (0, 1]");
    /// nullptr: "in lo..hi" for integers.
    const char* rule = nullptr;
    const char* help = ""; ///< one line for --help and the studio's tool tip
    /// A run setting stored beside the seed (plan file "planner.workers"), not in planner.budgets,
    /// and a separate argument of the Python module's plan() rather than a `budgets` dict key.
    bool run_setting = false;
    /// The JSON reader takes any finite value >= lo and leaves the upper bound to
    /// check_planner_budgets, whose message states the rule (time_limit_s).
    bool json_defers_hi = false;
    /// A negative value means "not set" (max_moves: unlimited): written to no JSON, so plans and
    /// budget files without it read as before.
    bool unset_below_zero = false;
};

/// Largest move budget (10^9 moved experts; a placement of 64 layers x 2^20 experts holds fewer).
inline constexpr std::int64_t kMaxMoves = 1000000000;

/// Every budget, in the order of the budgets JSON (planner_budgets_to_json after "seed") and of the
/// plan file's planner.budgets: workers, seeds_M, population, choice_width, eta, projections,
/// pair_candidates, levels, t0, cooling, steps_per_level, p_guide, rho, p_straggler, row_nodes,
/// polish_evaluations, polish_kick_moves, placement_rounds, max_moves (written only when set),
/// time_limit_s, anytime. The row for
/// `workers` has hi = 4096 (what a stored file may hold); check_planner_budgets bounds it by
/// max_planner_workers() on this machine.
std::span<const BudgetRow> budget_table();

/// The row of JSON key `key`, or nullptr when no budget has that key.
const BudgetRow* find_budget(const std::string& key);

/// A budget's value as an integer (Int, Int64, Bool rows; a Double row's value truncated).
std::int64_t budget_int(const BudgetRow& row, const PlannerBudgets& b);
/// A budget's value as a double (any kind).
double budget_double(const BudgetRow& row, const PlannerBudgets& b);
/// Sets an Int / Int64 / Bool budget (Bool: v != 0). No range check: see check_planner_budgets.
void set_budget_int(const BudgetRow& row, PlannerBudgets& b, std::int64_t v);
/// Sets a Double budget (an integer row gets v truncated). No range check.
void set_budget_double(const BudgetRow& row, PlannerBudgets& b, double v);

/// True when `v` is in the row's range (finite, ends as lo_open / hi_open say).
bool budget_in_range(const BudgetRow& row, double v);

/// The budget as the Setting of an InputError about it: key row.key, no value, named
/// "budget '<key>'" in the library's own text (what()).
Setting budget_setting(const BudgetRow& row);

} // namespace routepack
