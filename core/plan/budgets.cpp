#include "core/plan/budgets.h"

#include "core/util/errors.h"
#include "core/util/json_field.h"

#include <nlohmann/json.hpp>

#include <tbb/info.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <variant>

namespace routepack {

namespace {

/// The shortest text that reads back as v (31536001, not %g's 3.1536e+07, which looks like the
/// limit itself); inf and nan as such.
std::string number_text(double v) {
    if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

constexpr double kFinite = std::numeric_limits<double>::max();

BudgetRow row(const char* key, const char* flag, const char* label, BudgetKind kind,
              BudgetRef (*field)(PlannerBudgets&), double lo, double hi, const char* help) {
    BudgetRow r{key, flag, label, kind, field, lo, hi};
    r.help = help;
    return r;
}

BudgetRow real(const char* key, const char* flag, const char* label, BudgetRef (*field)(PlannerBudgets&), double lo,
               double hi, bool lo_open, const char* rule, const char* help) {
    BudgetRow r = row(key, flag, label, BudgetKind::Double, field, lo, hi, help);
    r.lo_open = lo_open;
    r.rule = rule;
    return r;
}

std::array<BudgetRow, 22> make_table() {
    using K = BudgetKind;
    BudgetRow workers = row(
        "workers", "--threads", "Workers", K::Int, [](PlannerBudgets& b) -> BudgetRef { return &b.workers; }, 0, 4096,
        "worker threads (0 = all cores)");
    workers.run_setting = true;
    BudgetRow time_limit = real(
        "time_limit_s", "--time-limit", "Time limit (s)",
        [](PlannerBudgets& b) -> BudgetRef { return &b.time_limit_s; }, 0, kMaxTimeLimitSeconds, false,
        "finite seconds in 0..31536000 (one year; 0 = no limit)",
        "wall-clock limit in seconds (recorded when it fires)");
    time_limit.json_defers_hi = true;
    BudgetRow anytime = row(
        "anytime", "--anytime", "Anytime", K::Bool, [](PlannerBudgets& b) -> BudgetRef { return &b.anytime; }, 0, 1,
        "keep improving the plan until the time limit (the plan then depends on timing)");
    anytime.rule = "used with a time limit > 0";
    BudgetRow max_moves = row(
        "max_moves", "--max-moves", "Max moves", K::Int64, [](PlannerBudgets& b) -> BudgetRef { return &b.max_moves; },
        -1, static_cast<double>(kMaxMoves),
        "experts moved from the previous placement, summed over MoE layers, at most (-1 = unlimited; used "
        "with a previous placement)");
    max_moves.rule = "in 0..1000000000, or -1 (unlimited)";
    max_moves.unset_below_zero = true;
    BudgetRow history_decay = real(
        "history_decay", "--history-decay", "History decay",
        [](PlannerBudgets& b) -> BudgetRef { return &b.history_decay; }, 0, 1, false, "in [0, 1]",
        "run-level base placement: a step's moves are chosen on the run's expert loads so far, each earlier "
        "step weighted by this factor per step back (0 = the step's own loads alone; 1 = every step alike; "
        "the history comes from the previous plan)");
    history_decay.omit_at_default = true;
    return {{
        workers,
        row(
            "seeds_M", "--seeds", "Seeds M", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.seeding.candidates; }, 1, kMaxSeedCandidates,
            "M: fixed-row seed candidates"),
        row(
            "population", "--population", "Population P_pop", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.seeding.population; }, 1, kMaxPopulation,
            "P_pop: annealing chains"),
        row(
            "choice_width", "--choice-width", "Choice width w", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.seeding.choice_width; }, 1, kMaxChoiceWidth,
            "w: seeding choice width"),
        real(
            "eta", "--eta", "Diversity weight eta", [](PlannerBudgets& b) -> BudgetRef { return &b.seeding.eta; }, 0,
            kFinite, false, "a finite number >= 0", "diversity weight"),
        row(
            "projections", nullptr, "Projections q", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.seeding.projections; }, 1, kMaxProjections,
            "q: random projections of each seed candidate's sketch"),
        row(
            "pair_candidates", nullptr, "Pair candidates", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.seeding.pair_candidates; }, 1, kMaxPairCandidates,
            "ranked pair candidates of the EDP-aware pairing"),
        row(
            "levels", "--levels", "Temperature levels N_T", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.annealing.levels; }, 0, kMaxLevels,
            "N_T: temperature levels"),
        real(
            "t0", "--t0", "T_0", [](PlannerBudgets& b) -> BudgetRef { return &b.annealing.t0; }, 0, kFinite, true,
            "a finite number > 0", "T_0 on the normalized energy delta"),
        real(
            "cooling", "--cooling", "Cooling", [](PlannerBudgets& b) -> BudgetRef { return &b.annealing.cooling; }, 0,
            1, true, "in (0, 1]", "geometric cooling factor"),
        row(
            "steps_per_level", "--steps", "Steps K per level", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.annealing.steps; }, 0, kMaxStepsPerLevel,
            "K: proposals per chain per level"),
        real(
            "p_guide", "--p-guide", "p_guide", [](PlannerBudgets& b) -> BudgetRef { return &b.annealing.p_guide; }, 0,
            1, false, "in [0, 1]", "probability of a guided proposal"),
        real(
            "rho", "--rho", "Relocation rho", [](PlannerBudgets& b) -> BudgetRef { return &b.annealing.rho; }, 0, 1,
            false, "in [0, 1]", "relocation probability"),
        real(
            "p_straggler", "--p-straggler", "Straggler share p_straggler",
            [](PlannerBudgets& b) -> BudgetRef { return &b.annealing.p_straggler; }, 0, 1, false, "in [0, 1]",
            "share of guided proposals aimed at the straggler EDP shard"),
        row(
            "row_nodes", "--row-nodes", "Row-count nodes", K::Int64,
            [](PlannerBudgets& b) -> BudgetRef { return &b.row_nodes; }, 0, static_cast<double>(kMaxRowNodes),
            "node budget of the exact row-count search"),
        row(
            "polish_evaluations", "--polish", "Polish evaluations", K::Int64,
            [](PlannerBudgets& b) -> BudgetRef { return &b.polish_evaluations; }, 0,
            static_cast<double>(kMaxPolishEvaluations),
            "work of the final exact improvement pass on the straggler shard: scored moves plus ranked "
            "sample visits (0 = none)"),
        row(
            "polish_kick_moves", "--polish-kicks", "Polish kick moves", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.polish_kick_moves; }, 0, kMaxPolishKickMoves,
            "random moves per kick of the final pass (0 = one guided descent, no kicks)"),
        row(
            "placement_rounds", "--placement-rounds", "Placement rounds", K::Int,
            [](PlannerBudgets& b) -> BudgetRef { return &b.placement_rounds; }, 0, kMaxPlacementRounds,
            "rounds of the final pass, each followed by refining the LPT placement for the layout "
            "(expert swaps between EP ranks, kept when the score drops; 0 = keep the LPT placement)"),
        max_moves,
        history_decay,
        time_limit,
        anytime,
    }};
}

} // namespace

std::span<const BudgetRow> budget_table() {
    static const std::array<BudgetRow, 22> table = [] {
        std::array<BudgetRow, 22> rows = make_table();
        const PlannerBudgets defaults;
        for (BudgetRow& r : rows)
            r.default_value = budget_double(r, defaults);
        return rows;
    }();
    return table;
}

bool budget_written(const BudgetRow& row, const PlannerBudgets& b) {
    if (row.unset_below_zero && budget_int(row, b) < 0) return false;
    return !(row.omit_at_default && budget_double(row, b) == row.default_value);
}

const BudgetRow* find_budget(const std::string& key) {
    for (const BudgetRow& r : budget_table())
        if (key == r.key) return &r;
    return nullptr;
}

std::int64_t budget_int(const BudgetRow& row, const PlannerBudgets& b) {
    // The accessor only forms a pointer; nothing is written through it here.
    const BudgetRef ref = row.field(const_cast<PlannerBudgets&>(b));
    return std::visit([](auto* p) { return static_cast<std::int64_t>(*p); }, ref);
}

double budget_double(const BudgetRow& row, const PlannerBudgets& b) {
    const BudgetRef ref = row.field(const_cast<PlannerBudgets&>(b));
    return std::visit([](auto* p) { return static_cast<double>(*p); }, ref);
}

namespace {

/// Stores `v` into the budget `row` names: bools as v != 0, other kinds converted to their type.
template <class V> void set_budget(const BudgetRow& row, PlannerBudgets& b, V v) {
    std::visit(
        [v](auto* p) {
            using T = std::remove_pointer_t<decltype(p)>;
            if constexpr (std::is_same_v<T, bool>)
                *p = v != 0;
            else
                *p = static_cast<T>(v);
        },
        row.field(b));
}

} // namespace

void set_budget_int(const BudgetRow& row, PlannerBudgets& b, std::int64_t v) {
    set_budget(row, b, v);
}

void set_budget_double(const BudgetRow& row, PlannerBudgets& b, double v) {
    set_budget(row, b, v);
}

bool budget_in_range(const BudgetRow& row, double v) {
    if (!std::isfinite(v) || v < row.lo || v > row.hi) return false;
    if (row.lo_open && v == row.lo) return false;
    if (row.hi_open && v == row.hi) return false;
    return true;
}

std::string budget_rule(const BudgetRow& row) {
    if (row.rule) return row.rule;
    return "in " + std::to_string(static_cast<std::int64_t>(row.lo)) + ".." +
           std::to_string(static_cast<std::int64_t>(row.hi));
}

std::string budget_value_text(const BudgetRow& row, const PlannerBudgets& b) {
    switch (row.kind) {
    case BudgetKind::Double:
        return number_text(budget_double(row, b));
    case BudgetKind::Bool:
        return budget_int(row, b) ? "true" : "false";
    default:
        return std::to_string(budget_int(row, b));
    }
}

Setting budget_setting(const BudgetRow& row) {
    return {row.key, "", "budget '" + std::string(row.key) + "'"};
}

std::string planner_budgets_to_json(const PlannerBudgets& b) {
    nlohmann::ordered_json j;
    j["seed"] = b.seed;
    PlannerBudgets copy = b;
    for (const BudgetRow& row : budget_table())
        if (budget_written(row, b)) std::visit([&](const auto* p) { j[row.key] = *p; }, row.field(copy));
    return j.dump();
}

int max_planner_workers() {
    return 4 * std::max(1, tbb::info::default_concurrency());
}

void check_planner_budgets(const PlannerBudgets& b, const std::string& origin, bool check_workers) {
    auto bad = [&](const BudgetRow& row, const std::string& rule, const std::string& got) {
        throw InputError(origin + ": ", budget_setting(row), " must be " + rule + " (got " + got + ")");
    };
    // Checked first, in this order: the worker count (bounded by this machine, not by the row), the
    // time limit, then anytime (whose rule depends on the time limit); then every other row in table
    // order.
    const BudgetRow& workers = *find_budget("workers");
    const BudgetRow& time_limit = *find_budget("time_limit_s");
    const BudgetRow& anytime = *find_budget("anytime");
    const int max_workers = max_planner_workers();
    if (b.workers < 0 || (check_workers && b.workers > max_workers))
        bad(workers,
            "0 (all cores) or in 1.." + std::to_string(max_workers) + " = 4 x " + std::to_string(max_workers / 4) +
                " cores",
            std::to_string(b.workers));
    if (!budget_in_range(time_limit, b.time_limit_s)) bad(time_limit, time_limit.rule, number_text(b.time_limit_s));
    if (b.anytime && !(b.time_limit_s > 0)) bad(anytime, anytime.rule, "time limit " + number_text(b.time_limit_s));
    for (const BudgetRow& row : budget_table()) {
        if (&row == &workers || &row == &time_limit || &row == &anytime) continue;
        if (row.kind == BudgetKind::Double) {
            const double v = budget_double(row, b);
            if (!budget_in_range(row, v)) bad(row, row.rule, number_text(v));
        } else {
            const std::int64_t v = budget_int(row, b);
            if (v < static_cast<std::int64_t>(row.lo) || v > static_cast<std::int64_t>(row.hi))
                bad(row, budget_rule(row), std::to_string(v));
        }
    }
}

PlannerBudgets parse_planner_budgets(const std::string& json_text, const std::string& origin) {
    nlohmann::json j;
    try {
        j = util::parse_json_strict(json_text, origin);
    } catch (const nlohmann::json::exception&) {
        throw InputError(origin + ": malformed budgets JSON");
    }
    if (!j.is_object()) throw InputError(origin + ": budgets must be a JSON object");
    const util::JsonField doc(j, origin);
    PlannerBudgets b;
    if (doc["seed"].exists()) b.seed = doc["seed"].unsigned_integer();
    for (const BudgetRow& row : budget_table()) {
        const util::JsonField f = doc[row.key];
        if (!f.exists()) continue;
        switch (row.kind) {
        case BudgetKind::Int:
        case BudgetKind::Int64:
            set_budget_int(row, b, f.integer(static_cast<std::int64_t>(row.lo), static_cast<std::int64_t>(row.hi)));
            break;
        case BudgetKind::Double:
            set_budget_double(row, b,
                              f.number(row.lo, row.json_defers_hi ? std::numeric_limits<double>::max() : row.hi,
                                       row.lo_open, row.hi_open));
            break;
        case BudgetKind::Bool:
            set_budget_int(row, b, f.boolean() ? 1 : 0);
            break;
        }
    }
    check_planner_budgets(b, origin, false);
    return b;
}

} // namespace routepack
