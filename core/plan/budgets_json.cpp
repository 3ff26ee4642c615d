#include "core/plan/budgets_json.h"

#include "core/plan/budget_table.h"

#include "core/util/errors.h"
#include "core/util/json_field.h"

#include <nlohmann/json.hpp>

#include <tbb/info.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <variant>

namespace routepack {

std::string planner_budgets_to_json(const PlannerBudgets& b) {
    nlohmann::ordered_json j;
    j["seed"] = b.seed;
    PlannerBudgets copy = b;
    for (const BudgetRow& row : budget_table())
        if (!(row.unset_below_zero && budget_int(row, b) < 0))
            std::visit([&](const auto* p) { j[row.key] = *p; }, row.field(copy));
    return j.dump();
}

namespace {

/// The shortest text that reads back as v (31536001, not %g's 3.1536e+07, which looks like the
/// limit itself); inf and nan as such.
std::string number_text(double v) {
    if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

} // namespace

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
            const auto lo = static_cast<std::int64_t>(row.lo), hi = static_cast<std::int64_t>(row.hi);
            if (v < lo || v > hi) bad(row, "in " + std::to_string(lo) + ".." + std::to_string(hi), std::to_string(v));
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
