#include "core/plan/budgets_json.h"

#include "core/util/errors.h"
#include "core/util/json.h"

#include <nlohmann/json.hpp>

#include <tbb/info.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace routepack {

std::string planner_budgets_to_json(const PlannerBudgets& b) {
    const auto& s = b.seeding;
    const auto& a = b.annealing;
    nlohmann::ordered_json j;
    j["seed"] = b.seed;
    j["workers"] = b.workers;
    j["seeds_M"] = s.candidates;
    j["population"] = s.population;
    j["choice_width"] = s.choice_width;
    j["eta"] = s.eta;
    j["projections"] = s.projections;
    j["pair_candidates"] = s.pair_candidates;
    j["levels"] = a.levels;
    j["t0"] = a.t0;
    j["cooling"] = a.cooling;
    j["steps_per_level"] = a.steps;
    j["p_guide"] = a.p_guide;
    j["rho"] = a.rho;
    j["p_straggler"] = a.p_straggler;
    j["row_nodes"] = b.row_nodes;
    j["polish_evaluations"] = b.polish_evaluations;
    j["polish_kick_moves"] = b.polish_kick_moves;
    j["placement_rounds"] = b.placement_rounds;
    j["time_limit_s"] = b.time_limit_s;
    j["anytime"] = b.anytime;
    return j.dump();
}

namespace {

struct Reader {
    const nlohmann::json& j;
    const std::string& origin;

    template <class Int>
    void integer(const char* key, Int& out, std::int64_t lo,
                 std::int64_t hi = std::numeric_limits<std::int64_t>::max()) const {
        if (!j.contains(key)) return;
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
        out = static_cast<Int>(x);
    }
    void real(const char* key, double& out, double lo, double hi, bool lo_open = false) const {
        if (!j.contains(key)) return;
        const auto& v = j[key];
        if (!v.is_number()) throw InputError(origin + ": budget '" + key + "' must be a number");
        const double x = v.get<double>();
        if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
            throw InputError(origin + ": budget '" + key + "' is out of range (got " + v.dump() + ")");
        out = x;
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

void check_planner_budgets(const PlannerBudgets& b, const std::string& origin, BudgetNames names, bool check_workers) {
    const bool flags = names == BudgetNames::Flags;
    auto bad = [&](const char* flag, const char* key, const std::string& rule, const std::string& got) {
        const std::string name = flags ? std::string(flag) : "budget '" + std::string(key) + "'";
        throw InputError(origin + ": " + name + " must be " + rule + " (got " + got + ")");
    };
    const int max_workers = max_planner_workers();
    if (b.workers < 0 || (check_workers && b.workers > max_workers))
        bad("--threads", "workers",
            "0 (all cores) or in 1.." + std::to_string(max_workers) + " = 4 x " + std::to_string(max_workers / 4) +
                " cores",
            std::to_string(b.workers));
    if (!std::isfinite(b.time_limit_s) || b.time_limit_s < 0 || b.time_limit_s > kMaxTimeLimitSeconds)
        bad("--time-limit", "time_limit_s", "finite seconds in 0..31536000 (one year; 0 = no limit)",
            number_text(b.time_limit_s));
    if (b.anytime && !(b.time_limit_s > 0))
        bad("--anytime", "anytime", "used with a time limit > 0", "time limit " + number_text(b.time_limit_s));
    const auto& s = b.seeding;
    const auto& a = b.annealing;
    auto in_range = [&](const char* flag, const char* key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
        if (v < lo || v > hi) bad(flag, key, "in " + std::to_string(lo) + ".." + std::to_string(hi), std::to_string(v));
    };
    in_range("--seeds", "seeds_M", s.candidates, 1, kMaxSeedCandidates);
    in_range("--population", "population", s.population, 1, kMaxPopulation);
    in_range("--choice-width", "choice_width", s.choice_width, 1, kMaxChoiceWidth);
    in_range("projections", "projections", s.projections, 1, kMaxProjections);
    in_range("pair_candidates", "pair_candidates", s.pair_candidates, 1, kMaxPairCandidates);
    if (!std::isfinite(s.eta) || s.eta < 0) bad("--eta", "eta", "a finite number >= 0", number_text(s.eta));
    in_range("--levels", "levels", a.levels, 0, kMaxLevels);
    in_range("--steps", "steps_per_level", a.steps, 0, kMaxStepsPerLevel);
    if (!std::isfinite(a.t0) || !(a.t0 > 0)) bad("--t0", "t0", "a finite number > 0", number_text(a.t0));
    if (!(a.cooling > 0 && a.cooling <= 1)) bad("--cooling", "cooling", "in (0, 1]", number_text(a.cooling));
    if (!(a.p_guide >= 0 && a.p_guide <= 1)) bad("--p-guide", "p_guide", "in [0, 1]", number_text(a.p_guide));
    if (!(a.rho >= 0 && a.rho <= 1)) bad("--rho", "rho", "in [0, 1]", number_text(a.rho));
    if (!(a.p_straggler >= 0 && a.p_straggler <= 1))
        bad("--p-straggler", "p_straggler", "in [0, 1]", number_text(a.p_straggler));
    in_range("--row-nodes", "row_nodes", b.row_nodes, 0, kMaxRowNodes);
    in_range("--polish", "polish_evaluations", b.polish_evaluations, 0, kMaxPolishEvaluations);
    in_range("--polish-kicks", "polish_kick_moves", b.polish_kick_moves, 0, kMaxPolishKickMoves);
    if (b.placement_rounds < 0 || b.placement_rounds > kMaxPlacementRounds)
        bad("--placement-rounds", "placement_rounds", "in 0.." + std::to_string(kMaxPlacementRounds),
            std::to_string(b.placement_rounds));
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
    r.integer("workers", b.workers, 0, 4096);
    r.integer("seeds_M", b.seeding.candidates, 1, kMaxSeedCandidates);
    r.integer("population", b.seeding.population, 1, kMaxPopulation);
    r.integer("choice_width", b.seeding.choice_width, 1, kMaxChoiceWidth);
    r.real("eta", b.seeding.eta, 0, inf);
    r.integer("projections", b.seeding.projections, 1, kMaxProjections);
    r.integer("pair_candidates", b.seeding.pair_candidates, 1, kMaxPairCandidates);
    r.integer("levels", b.annealing.levels, 0, kMaxLevels);
    r.real("t0", b.annealing.t0, 0, inf, true);
    r.real("cooling", b.annealing.cooling, 0, 1, true);
    r.integer("steps_per_level", b.annealing.steps, 0, kMaxStepsPerLevel);
    r.real("p_guide", b.annealing.p_guide, 0, 1);
    r.real("rho", b.annealing.rho, 0, 1);
    r.real("p_straggler", b.annealing.p_straggler, 0, 1);
    r.integer("row_nodes", b.row_nodes, 0, kMaxRowNodes);
    r.integer("polish_evaluations", b.polish_evaluations, 0, kMaxPolishEvaluations);
    r.integer("polish_kick_moves", b.polish_kick_moves, 0, kMaxPolishKickMoves);
    r.integer("placement_rounds", b.placement_rounds, 0, kMaxPlacementRounds);
    r.real("time_limit_s", b.time_limit_s, 0, inf);
    if (j.contains("anytime")) {
        if (!j["anytime"].is_boolean()) throw InputError(origin + ": budget 'anytime' must be true or false");
        b.anytime = j["anytime"].get<bool>();
    }
    check_planner_budgets(b, origin, BudgetNames::Keys, false);
    return b;
}

} // namespace routepack
