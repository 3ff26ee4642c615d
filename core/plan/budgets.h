#pragma once
// The planner budgets: the PlannerBudgets struct, its table (one row per budget: JSON key, CLI flag,
// studio label, default, range, help), the one range check and the budgets JSON codec. The JSON
// reader and writer, check_planner_budgets, the plan file's planner.budgets, the CLI flags of
// plan/compare/sweep, the Python module's `budgets` dict, the studio's budget editor and
// docs/budgets.md (checked against it by a test) all read the table; adding a budget is one field
// and one row.
#include "core/plan/search/annealing.h"
#include "core/plan/search/seeding.h"
#include "core/util/errors.h"

#include <cstdint>
#include <span>
#include <string>
#include <variant>

namespace routepack {

// Every budget's upper bound (the rows of budget_table() read them).

/// Largest accepted SeedingSettings values (the budget table's ranges). Seeding
/// keeps every candidate (layout, signature, sketch, co-assignment profile: about 20 bytes per sample)
/// until the selection, so M is bounded with the window size in mind: 4096 candidates of an 8192-sample
/// window hold about 0.7 GB; plan_window refuses M x n above kMaxSeedingBytes up front (core/plan/planner.h).
inline constexpr int kMaxSeedCandidates = 4096;
inline constexpr int kMaxPopulation = 256;      ///< P_pop: each annealing chain holds two scorers
inline constexpr int kMaxChoiceWidth = 1024;    ///< w: O(n w) per WindowShuffle; a buffer of w entries
inline constexpr int kMaxProjections = 256;     ///< q: the sketch holds q x R doubles per candidate
inline constexpr int kMaxPairCandidates = 4096; ///< EDPAwarePair's ranked buffer of this many entries

/// Largest accepted AnnealingSettings values (the budget table's ranges): at
/// most kMaxLevels x kMaxStepsPerLevel = 1e11 proposals per chain; the time limit and the cancel flag
/// stop it within 256 proposals of any chain (polled).
inline constexpr int kMaxLevels = 1000;
inline constexpr int kMaxStepsPerLevel = 100000000;

/// Largest node budget of the exact row-count search: on a window whose R* is hard to certify the
/// search runs linearly in it (about 2e-8 s per node: 1e9 nodes are 20 s); it polls the cancel flag and
/// the time limit every 4096 nodes.
inline constexpr std::int64_t kMaxRowNodes = 1000000000;
/// Largest work of the final pass (PlannerBudgets::polish_evaluations): 1e9 scored moves, polled for
/// cancel and time limit every 256 (or every sample visit).
inline constexpr std::int64_t kMaxPolishEvaluations = 1000000000;
/// Most random moves per kick of the final pass (each move is one scored evaluation).
inline constexpr int kMaxPolishKickMoves = 1000000;

/// Largest move budget (10^9 moved experts; a placement of 64 layers x 2^20 experts holds fewer).
inline constexpr std::int64_t kMaxMoves = 1000000000;
/// Longest planner time limit: one year, in seconds.
inline constexpr double kMaxTimeLimitSeconds = 365.0 * 24 * 3600;
/// Most rounds of the final pass (each may rebuild the [n][L][P] demand at a refined placement).
inline constexpr int kMaxPlacementRounds = 1000;

/// Every search budget. All are counted in work (nodes, proposals, candidates), so the same inputs,
/// seed and worker count give the same plan; `time_limit_s` > 0 adds a wall-clock stop whose firing is
/// recorded (and then the plan may differ). With `anytime` the final pass keeps kicking and descending
/// until the deadline instead of stopping after polish_evaluations: along one run more time never
/// gives a worse plan, and the plan depends on timing.
struct PlannerBudgets {
    SeedingSettings seeding;
    AnnealingSettings annealing;
    std::int64_t row_nodes = 1000000; ///< node budget of the exact row-count search
    /// Work of the final exact improvement pass (iterated_straggler_search, core/plan/search/polish.h: moves
    /// scored exactly plus ranked sample visits) on the annealing's best; 0 = no pass.
    std::int64_t polish_evaluations = 40000;
    /// Random moves per kick of that pass (0 = one guided descent, no kicks).
    int polish_kick_moves = 4;
    /// Rounds of the final pass with a placement refinement after each (refine_placement,
    /// core/plan/search/placement_refine.h: the LPT placement adapted to the layout by expert swaps between
    /// EP ranks, kept when the exact score of eq. 15 drops); the pass's evaluations are split evenly
    /// over the rounds. 0 = routepack keeps the LPT placement (Algorithm 1) and the pass runs once.
    int placement_rounds = 2;
    double time_limit_s = 0; ///< 0 = none
    /// Anytime mode: the final pass runs until `time_limit_s` (which must then be > 0).
    bool anytime = false;
    /// Moved experts (placement_moves against PlanInput::previous) summed over MoE layers at most;
    /// -1 = unlimited. Without a previous placement it is ignored (with a note).
    std::int64_t max_moves = -1;
    /// Run-level base placement (docs/migration.md "A placement for the run"): the weight of each
    /// earlier step of the run per step back in the loads that choose a step's moves, H_k = d x H_(k-1)
    /// + G_k (the run's history, PlanInput::history); 0 = the step's own loads alone (the per-step plan).
    double history_decay = 0;
    int workers = 0;        ///< worker threads (0 = all cores)
    std::uint64_t seed = 1; ///< master seed; seeding and annealing streams derive from it
};

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
    /// One line for --help (where the CLI follows it with default_value and the range) and the
    /// studio's tool tip; it spells neither the default nor the range.
    const char* help = "";
    /// The value of a default PlannerBudgets (PlannerBudgets{}), filled by budget_table(): the
    /// default that --help, the studio and docs/budgets.md show.
    double default_value = 0;
    /// A run setting stored beside the seed (plan file "planner.workers"), not in planner.budgets,
    /// and a separate argument of the Python module's plan() rather than a `budgets` dict key.
    bool run_setting = false;
    /// The JSON reader takes any finite value >= lo and leaves the upper bound to
    /// check_planner_budgets, whose message states the rule (time_limit_s).
    bool json_defers_hi = false;
    /// A negative value means "not set" (max_moves: unlimited): written to no JSON, so plans and
    /// budget files without it read as before.
    bool unset_below_zero = false;
    /// Written to no JSON at its default value (history_decay 0), so plans and budget files that
    /// leave it at the default read and write as before.
    bool omit_at_default = false;
};

/// Every budget, in the order of the budgets JSON (planner_budgets_to_json after "seed") and of the
/// plan file's planner.budgets: workers, seeds_M, population, choice_width, eta, projections,
/// pair_candidates, levels, t0, cooling, steps_per_level, p_guide, rho, p_straggler, row_nodes,
/// polish_evaluations, polish_kick_moves, placement_rounds, max_moves (written only when set),
/// history_decay (written only when not 0), time_limit_s, anytime. The row for
/// `workers` has hi = 4096 (what a stored file may hold); check_planner_budgets bounds it by
/// max_planner_workers() on this machine.
std::span<const BudgetRow> budget_table();

/// Whether the budgets JSON and the plan file write the row's value for `b`: not when it is unset
/// (unset_below_zero and negative) or at its default where the row is omit_at_default.
bool budget_written(const BudgetRow& row, const PlannerBudgets& b);

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

/// The row's range as the errors word it after "must be ": its `rule`, or "in lo..hi" for an
/// integer row without one ("in 1..4096").
std::string budget_rule(const BudgetRow& row);

/// A budget's value as the budgets JSON writes it: integers in decimal, doubles in the shortest
/// text that reads back as the same double ("0.01"), bools "true" / "false".
std::string budget_value_text(const BudgetRow& row, const PlannerBudgets& b);

/// True when `v` is in the row's range (finite, ends as lo_open / hi_open say).
bool budget_in_range(const BudgetRow& row, double v);

/// The budget as the Setting of an InputError about it: key row.key, no value, named
/// "budget '<key>'" in the library's own text (what()).
Setting budget_setting(const BudgetRow& row);

/// Largest planner worker count on this machine: 4 x the cores this process may use
/// (tbb::info::default_concurrency()).
int max_planner_workers();

/// {"seed", then every key of budget_table() in table order: "workers", "seeds_M", "population",
/// "choice_width", "eta", "projections", "pair_candidates", "levels", "t0", "cooling", "steps_per_level",
/// "p_guide", "rho", "p_straggler", "row_nodes", "polish_evaluations", "polish_kick_moves",
/// "placement_rounds", "history_decay", "time_limit_s", "anytime"} (compact JSON; doubles with round-trip precision).
/// The annealing and seeding seeds/workers are derived by the planner and are not part of it.
std::string planner_budgets_to_json(const PlannerBudgets& b);

/// The one validation of planner budgets, shared by the CLI, the studio and the planner
/// (plan_window checks its input with origin "planner"). Every range is a row of budget_table()
/// (budget_rule). InputError "<origin>: budget 'key' must be <rule> (got <value>)",
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
