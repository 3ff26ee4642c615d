#include "core/plan/budgets_json.h"

#include "core/plan/budget_table.h"

#include "core/util/errors.h"
#include "core/util/json.h"

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
        std::visit([&](const auto* p) { j[row.key] = *p; }, row.field(copy));
    return j.dump();
}

namespace {

struct Reader {
    const nlohmann::json& j;
    const std::string& origin;

    /// Reads integer `key` into `out` (true), or false when absent; InputError when not an integer
    /// in lo..hi.
    bool integer(const char* key, std::int64_t& out, std::int64_t lo, std::int64_t hi) const {
        if (!j.contains(key)) return false;
        const auto& v = j[key];
        if (!v.is_number_integer()) throw InputError(origin + ": budget '" + key + "' must be an integer");
        const bool is_unsigned = v.is_number_unsigned();
        const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
        if (is_unsigned && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
            throw InputError(origin + ": budget '" + key + "' must be in " + range + " (got " +
                             std::to_string(v.get<std::uint64_t>()) + ")");
        const std::int64_t x = is_unsigned ? static_cast<std::int64_t>(v.get<std::uint64_t>()) : v.get<std::int64_t>();
        if (x < lo || x > hi)
            throw InputError(origin + ": budget '" + key + "' must be in " + range + " (got " + std::to_string(x) +
                             ")");
        out = x;
        return true;
    }
    /// Reads number `key` into `out` (true), or false when absent; InputError when not a finite
    /// number in the range (an end excluded when lo_open / hi_open).
    bool real(const char* key, double& out, double lo, double hi, bool lo_open, bool hi_open) const {
        if (!j.contains(key)) return false;
        const auto& v = j[key];
        if (!v.is_number()) throw InputError(origin + ": budget '" + key + "' must be a number");
        const double x = v.get<double>();
        if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo) || (hi_open && x == hi))
            throw InputError(origin + ": budget '" + key + "' is out of range (got " + v.dump() + ")");
        out = x;
        return true;
    }
};

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
    PlannerBudgets b;
    const Reader r{j, origin};
    const double inf = std::numeric_limits<double>::max();
    if (j.contains("seed")) {
        if (!j["seed"].is_number_unsigned() && !(j["seed"].is_number_integer() && j["seed"].get<std::int64_t>() >= 0))
            throw InputError(origin + ": budget 'seed' must be an integer in 0..2^64-1");
        b.seed = j["seed"].get<std::uint64_t>();
    }
    for (const BudgetRow& row : budget_table()) {
        switch (row.kind) {
        case BudgetKind::Int:
        case BudgetKind::Int64: {
            std::int64_t v = 0;
            if (r.integer(row.key, v, static_cast<std::int64_t>(row.lo), static_cast<std::int64_t>(row.hi)))
                set_budget_int(row, b, v);
            break;
        }
        case BudgetKind::Double: {
            double v = 0;
            if (r.real(row.key, v, row.lo, row.json_defers_hi ? inf : row.hi, row.lo_open, row.hi_open))
                set_budget_double(row, b, v);
            break;
        }
        case BudgetKind::Bool:
            if (j.contains(row.key)) {
                if (!j[row.key].is_boolean())
                    throw InputError(origin + ": budget '" + row.key + "' must be true or false");
                set_budget_int(row, b, j[row.key].get<bool>() ? 1 : 0);
            }
            break;
        }
    }
    check_planner_budgets(b, origin, false);
    return b;
}

} // namespace routepack
