// Topologies and planner runs of a library (storage/library.h, schema migration 2): save_topology,
// save_run / save_failed_run, runs, run_plan_json.
#include "storage/library.h"

#include "core/plan/budgets.h"
#include "core/plan/method.h"
#include "core/plan/plan_file.h"
#include "core/plan/score/metrics_json.h"
#include "core/util/errors.h"
#include "core/util/json_field.h"
#include "core/util/text.h"
#include "storage/library_internal.h"
#include "storage/sqlite_util.h"

#include <nlohmann/json.hpp>
#include <tbb/task_arena.h>

#include <sqlite3.h>

#include <algorithm>
#include <cmath>

namespace routepack::storage {

using detail::shown;
using detail::Statement;
using detail::Transaction;

namespace {

void require_writable(bool read_only, const std::filesystem::path& file) {
    if (read_only) throw LibraryReadOnly(file);
}

/// The `definition` column of a topology: topology_to_json plus, when given, the budgets under
/// "planner_budgets" (read_topology_row takes that key out before parse_topology).
std::string topology_definition(const Topology& t, const std::optional<PlannerBudgets>& budgets) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(topology_to_json(t));
    if (budgets) j["planner_budgets"] = nlohmann::ordered_json::parse(planner_budgets_to_json(*budgets));
    return j.dump();
}

/// A `definition` column (topology_definition) read back: the topology, and the budgets into
/// *budgets when the column holds them. InputError "<origin>: damaged definition" when it is not a
/// JSON object; parse_topology's and parse_planner_budgets' errors otherwise.
Topology read_topology_definition(const std::string& def, const std::string& origin,
                                  std::optional<PlannerBudgets>* budgets) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(def);
    } catch (const nlohmann::json::exception&) {
        throw InputError(origin + ": damaged definition");
    }
    if (!j.is_object()) throw InputError(origin + ": damaged definition");
    // Printed back to text below: refuse first what the (recursive) printer cannot take.
    util::check_json_depth(j, origin);
    if (j.contains("planner_budgets")) {
        if (budgets) *budgets = parse_planner_budgets(j["planner_budgets"].dump(), origin);
        j.erase("planner_budgets"); // the library's own key; the rest is a topology file's text
    }
    return parse_topology(j.dump(), origin);
}

TopologyEntry read_topology_row(const Statement& st, const std::filesystem::path& file) {
    TopologyEntry e;
    e.id = st.int64(0);
    e.name = st.text(1);
    e.topology = read_topology_definition(st.text(2), file.string() + ": topology '" + shown(e.name) + "'", &e.budgets);
    e.created_at = st.text(3);
    return e;
}

constexpr const char* kTopologyColumns = "SELECT id, name, definition, created_at FROM topologies ";

/// Finds or inserts the topologies row for a run (see Library::save_run). Inside a transaction.
std::int64_t topology_for_run(sqlite3* db, const std::filesystem::path& file, const std::string& name,
                              const Topology& t) {
    const std::string base = name.empty() ? std::string("topology") : name;
    {
        Statement st(db, file, std::string(kTopologyColumns) + "WHERE name = ?1");
        st.bind(1, base);
        if (st.step() && read_topology_row(st, file).topology == t) return st.int64(0);
    }
    {
        Statement st(db, file, std::string(kTopologyColumns) + "ORDER BY id");
        while (st.step())
            if (read_topology_row(st, file).topology == t) return st.int64(0);
    }
    std::string chosen = base;
    Statement taken(db, file, "SELECT 1 FROM topologies WHERE name = ?1");
    for (int k = 2;; ++k) {
        taken.bind(1, chosen);
        const bool used = taken.step();
        taken.reset();
        if (!used) break;
        chosen = base + " (" + std::to_string(k) + ")";
    }
    Statement ins(db, file,
                  "INSERT INTO topologies (name, ep_ranks, dp_slots, cap_tokens, min_rows, definition, created_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    ins.bind(1, chosen).bind(2, t.ep_ranks).bind(3, t.dp_slots).bind(4, t.token_cap).bind(5, t.min_rows);
    ins.bind(6, topology_definition(t, std::nullopt)).bind(7, detail::utc_now_iso8601());
    ins.run();
    return sqlite3_last_insert_rowid(db);
}

std::int64_t window_row(sqlite3* db, const std::filesystem::path& file, const std::string& trace,
                        const std::string& window) {
    if (window.empty())
        throw InputError("runs are saved per window: the plan of trace '" + shown(trace) +
                         "' was not made on a named window");
    Statement st(db, file,
                 "SELECT w.id FROM windows w JOIN traces t ON t.id = w.trace_id WHERE t.name = ?1 AND w.name = ?2");
    st.bind(1, trace).bind(2, window);
    if (!st.step())
        throw InputError("trace '" + shown(trace) + "' has no window named '" + shown(window) + "' in " +
                         file.string());
    return st.int64(0);
}

int effective_workers(int workers) {
    return workers > 0 ? workers : std::max(1, tbb::this_task_arena::max_concurrency());
}

/// run_results.method of method m: its key (core/plan/method.h), hyphenated as the schema's CHECK
/// constraint spells it ("karmarkar-karp").
std::string schema_method(Method m) {
    return m == Method::KarmarkarKarp ? std::string("karmarkar-karp") : std::string(method_key(m));
}
/// The method key of a run_results.method value (schema_method read back).
std::string method_of_schema(const std::string& stored) {
    return stored == "karmarkar-karp" ? std::string(method_key(Method::KarmarkarKarp)) : stored;
}
/// Report order of a method key: its position in the method table (a name outside it last).
int method_order(const std::string& key) {
    const std::optional<Method> m = method_from_key(key);
    return m ? method_index(*m) : kMethodCount;
}

std::string metrics_json(const LayoutMetrics& m) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    write_layout_metrics(m, j);
    return j.dump();
}

/// Reads a run_results.metrics value (metrics_json; the score is in its own columns):
/// InputError "<origin>: damaged metrics" for text that is no JSON, read_layout_metrics' errors
/// ("<origin>: cap_violations is 1e+300, not an integer in 0..2147483647") otherwise.
LayoutMetrics parse_metrics(const std::string& text, const std::string& origin) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        throw InputError(origin + ": damaged metrics");
    }
    return read_layout_metrics(util::JsonField(j, origin));
}

std::string timings_json(const std::map<std::string, double>& t) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& [k, v] : t)
        j[k] = v;
    return j.dump();
}

/// Inserts the runs row; returns its id.
std::int64_t insert_run(sqlite3* db, const std::filesystem::path& file, std::int64_t window_id,
                        std::int64_t topology_id, std::int64_t plan_id, const PlannerBudgets& b,
                        const std::string& status, const std::string& message, const std::string& started_at,
                        const std::map<std::string, double>* timings) {
    Statement st(
        db, file,
        "INSERT INTO runs (window_id, topology_id, plan_id, budgets, seed, workers, status, message, started_at, "
        "finished_at, timings) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    st.bind(1, window_id).bind(2, topology_id);
    if (plan_id > 0)
        st.bind(3, plan_id);
    else
        st.bind_null(3);
    st.bind(4, planner_budgets_to_json(b));
    st.bind(5, static_cast<std::int64_t>(b.seed)); // SQLite INTEGER is signed: stored as the same 64 bits
    st.bind(6, effective_workers(b.workers)).bind(7, status).bind(8, message);
    st.bind(9, started_at.empty() ? detail::utc_now_iso8601() : started_at).bind(10, detail::utc_now_iso8601());
    if (timings)
        st.bind(11, timings_json(*timings));
    else
        st.bind_null(11);
    st.run();
    return sqlite3_last_insert_rowid(db);
}

/// The columns read_run reads, for a library at `schema` (a read-only open of a library older than
/// migration 5 has no runs.name: every run reads as unnamed).
std::string run_columns(int schema) {
    return std::string(
               "SELECT r.id, t.name, w.name, tp.name, tp.definition, r.plan_id, r.budgets, r.workers, r.status, "
               "r.message, r.started_at, r.finished_at, r.timings, p.fingerprint, p.rows, p.certified, p.score_max_u, "
               "p.score_sum_u, p.score_max_j, ") +
           (schema >= 5 ? "r.name " : "'' ") +
           "FROM runs r JOIN windows w ON w.id = r.window_id JOIN traces t ON t.id = w.trace_id "
           "JOIN topologies tp ON tp.id = r.topology_id LEFT JOIN plans p ON p.id = r.plan_id ";
}

RunEntry read_run(sqlite3* db, const Statement& st, const std::filesystem::path& file) {
    RunEntry r;
    r.id = st.int64(0);
    const std::string origin = file.string() + ": run " + std::to_string(r.id);
    r.trace = st.text(1);
    r.window = st.text(2);
    r.topology = st.text(3);
    r.topology_value = read_topology_definition(st.text(4), origin + " topology", nullptr);
    r.plan_id = st.is_null(5) ? 0 : st.int64(5);
    r.budgets = parse_planner_budgets(st.text(6), origin + " budgets");
    r.workers = static_cast<int>(st.int64(7));
    r.status = st.text(8);
    r.message = st.text(9);
    r.started_at = st.text(10);
    r.name = st.text(19);
    r.finished_at = st.is_null(11) ? std::string() : st.text(11);
    if (!st.is_null(12)) {
        nlohmann::json t;
        try {
            t = nlohmann::json::parse(st.text(12));
        } catch (const nlohmann::json::exception&) {
            throw InputError(origin + ": damaged timings");
        }
        const util::JsonField timings(t, origin + " timings");
        timings.object();
        for (const auto& [k, v] : t.items())
            r.timings[k] = timings[k].number();
    }
    if (r.plan_id > 0) {
        r.fingerprint = st.text(13);
        r.rows = static_cast<int>(st.int64(14));
        r.certified = st.int64(15) != 0;
        r.score = Score{st.real(16), st.real(17), st.real(18)};
    }
    Statement res(
        db, file,
        "SELECT method, rows, score_max_u, score_sum_u, score_max_j, metrics FROM run_results WHERE run_id = ?1");
    res.bind(1, r.id);
    while (res.step()) {
        RunMethodEntry m;
        m.method = method_of_schema(res.text(0));
        m.rows = static_cast<int>(res.int64(1));
        m.metrics = parse_metrics(res.text(5), origin + " " + m.method + " metrics");
        m.metrics.score = Score{res.real(2), res.real(3), res.real(4)};
        r.results.push_back(std::move(m));
    }
    std::sort(r.results.begin(), r.results.end(), [](const RunMethodEntry& a, const RunMethodEntry& b) {
        return method_order(a.method) < method_order(b.method);
    });
    Statement lv(db, file,
                 "SELECT level, temperature, proposed, accepted, energy, best_max_u, best_sum_u, best_max_j "
                 "FROM annealing_history WHERE run_id = ?1 AND chain = 0 ORDER BY level");
    lv.bind(1, r.id);
    while (lv.step()) {
        LevelStats s;
        s.level = static_cast<int>(lv.int64(0));
        s.temperature = lv.real(1);
        s.proposals = lv.int64(2);
        const std::int64_t accepted = lv.int64(3);
        s.acceptance = s.proposals > 0 ? static_cast<double>(accepted) / static_cast<double>(s.proposals) : 0.0;
        s.mean_energy = lv.real(4);
        s.best = Score{lv.real(5), lv.real(6), lv.real(7)};
        r.levels.push_back(s);
    }
    return r;
}

} // namespace

TopologyEntry Library::save_topology(const std::string& name, const Topology& topology,
                                     const std::optional<PlannerBudgets>& budgets) {
    require_writable(read_only_, path_);
    if (name.empty()) throw InputError("", {"topology_name", "", "topology name"}, " must not be empty");
    detail::require_utf8_name("topology", name);
    // Validate through the file format (the same rules as a topology file).
    const Topology checked = parse_topology(topology_to_json(topology), "topology '" + shown(name) + "'");
    Transaction tx(db_, path_);
    const std::string def = topology_definition(checked, budgets);
    std::int64_t id = 0;
    {
        Statement st(db_, path_, std::string(kTopologyColumns) + "WHERE name = ?1");
        st.bind(1, name);
        if (st.step()) {
            id = st.int64(0);
            if (!(read_topology_row(st, path_).topology == checked)) {
                Statement used(db_, path_,
                               "SELECT (SELECT COUNT(*) FROM runs WHERE topology_id = ?1) + "
                               "(SELECT COUNT(*) FROM plans WHERE topology_id = ?1 AND id NOT IN "
                               "(SELECT plan_id FROM runs WHERE plan_id IS NOT NULL))");
                used.bind(1, id);
                used.step();
                if (const std::int64_t n = used.int64(0); n > 0)
                    throw InputError("topology '" + shown(name) + "' is used by " + std::to_string(n) +
                                     " saved run(s); save the change under another name");
            }
        }
    }
    if (id > 0) {
        Statement up(
            db_, path_,
            "UPDATE topologies SET ep_ranks = ?2, dp_slots = ?3, cap_tokens = ?4, min_rows = ?5, definition = ?6 "
            "WHERE id = ?1");
        up.bind(1, id).bind(2, checked.ep_ranks).bind(3, checked.dp_slots).bind(4, checked.token_cap);
        up.bind(5, checked.min_rows).bind(6, def);
        up.run();
    } else {
        Statement ins(db_, path_,
                      "INSERT INTO topologies (name, ep_ranks, dp_slots, cap_tokens, min_rows, definition, created_at) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
        ins.bind(1, name).bind(2, checked.ep_ranks).bind(3, checked.dp_slots).bind(4, checked.token_cap);
        ins.bind(5, checked.min_rows).bind(6, def).bind(7, detail::utc_now_iso8601());
        ins.run();
        id = sqlite3_last_insert_rowid(db_);
    }
    tx.commit();
    Statement st(db_, path_, std::string(kTopologyColumns) + "WHERE id = ?1");
    st.bind(1, id);
    st.step();
    return read_topology_row(st, path_);
}

std::vector<TopologyEntry> Library::topologies() const {
    Statement st(db_, path_, std::string(kTopologyColumns) + "ORDER BY name");
    std::vector<TopologyEntry> out;
    while (st.step())
        out.push_back(read_topology_row(st, path_));
    return out;
}

TopologyEntry Library::topology(const std::string& name) const {
    Statement st(db_, path_, std::string(kTopologyColumns) + "WHERE name = ?1");
    st.bind(1, name);
    if (!st.step()) throw InputError("no topology named '" + shown(name) + "' in " + path_.string());
    return read_topology_row(st, path_);
}

namespace {

/// Inserts one finished or cancelled run (plan, run row, results, convergence) inside the caller's
/// transaction; returns its run id (see Library::save_run).
std::int64_t insert_finished_run(sqlite3* db_, const std::filesystem::path& path_, const PlanResult& r,
                                 const std::string& plan_json, const std::string& topology_name,
                                 const std::string& started_at) {
    const std::int64_t window_id = window_row(db_, path_, r.trace_name, r.window_name);
    const std::int64_t topology_id = topology_for_run(db_, path_, topology_name, r.topology);
    const int workers = effective_workers(r.budgets.workers);
    const Score& s = r.routepack.metrics.score;
    Statement plan(
        db_, path_,
        "INSERT INTO plans (window_id, topology_id, fingerprint, seed, workers, rows, certified, score_max_u, "
        "score_sum_u, score_max_j, plan_json, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    plan.bind(1, window_id)
        .bind(2, topology_id)
        .bind(3, r.fingerprint)
        .bind(4, static_cast<std::int64_t>(r.budgets.seed));
    plan.bind(5, workers).bind(6, r.rows.rows).bind(7, r.rows.certified ? 1 : 0);
    plan.bind(8, s.max_u).bind(9, s.sum_u).bind(10, s.max_j).bind(11, plan_json).bind(12, detail::utc_now_iso8601());
    plan.run();
    const std::int64_t plan_id = sqlite3_last_insert_rowid(db_);
    const std::string message = r.cancelled        ? "cancelled: best valid plan so far"
                                : r.time_limit_hit ? "time limit hit: best valid plan so far"
                                                   : "";
    const std::int64_t run_id = insert_run(db_, path_, window_id, topology_id, plan_id, r.budgets,
                                           r.cancelled ? "cancelled" : "finished", message, started_at, &r.timings);
    Statement res(db_, path_,
                  "INSERT INTO run_results (run_id, method, rows, score_max_u, score_sum_u, score_max_j, metrics) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    for (const MethodResult* m : r.methods()) {
        const Score& ms = m->metrics.score;
        res.bind(1, run_id).bind(2, schema_method(m->method)).bind(3, std::max(1, m->layout.rows));
        res.bind(4, ms.max_u).bind(5, ms.sum_u).bind(6, ms.max_j).bind(7, metrics_json(m->metrics));
        res.run();
    }
    Statement lv(
        db_, path_,
        "INSERT INTO annealing_history (run_id, level, chain, temperature, proposed, accepted, energy, best_max_u, "
        "best_sum_u, best_max_j) VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    for (const LevelStats& x : r.search.convergence) {
        const auto accepted = static_cast<std::int64_t>(std::llround(x.acceptance * static_cast<double>(x.proposals)));
        lv.bind(1, run_id).bind(2, x.level).bind(3, x.temperature).bind(4, x.proposals).bind(5, accepted);
        lv.bind(6, x.mean_energy).bind(7, x.best.max_u).bind(8, x.best.sum_u).bind(9, x.best.max_j);
        lv.run();
    }
    return run_id;
}

} // namespace

RunEntry Library::save_run(const PlanResult& r, const std::string& topology_name, const std::string& started_at) {
    require_writable(read_only_, path_);
    const std::string plan_json = plan_to_json(r); // before the transaction: pure work
    Transaction tx(db_, path_);
    const std::int64_t run_id = insert_finished_run(db_, path_, r, plan_json, topology_name, started_at);
    tx.commit();
    return run(run_id);
}

std::vector<std::int64_t> Library::save_runs(const std::vector<const PlanResult*>& results,
                                             const std::string& topology_name,
                                             const std::function<void(const std::vector<std::int64_t>&)>& before_commit,
                                             const WholeRunSpec* whole, std::int64_t* whole_run_id) {
    require_writable(read_only_, path_);
    std::vector<std::string> plan_json;
    plan_json.reserve(results.size());
    for (const PlanResult* r : results)
        plan_json.push_back(plan_to_json(*r)); // before the transaction: pure work
    Transaction tx(db_, path_);
    std::vector<std::int64_t> ids;
    ids.reserve(results.size());
    for (std::size_t k = 0; k < results.size(); ++k)
        ids.push_back(insert_finished_run(db_, path_, *results[k], plan_json[k], topology_name, {}));
    if (whole) {
        const std::int64_t id = detail::insert_whole_run(db_, path_, *whole, ids);
        if (whole_run_id) *whole_run_id = id;
    }
    if (before_commit) before_commit(ids);
    tx.commit();
    return ids;
}

RunEntry Library::save_failed_run(const std::string& trace, const std::string& window, const std::string& topology_name,
                                  const Topology& topology, const PlannerBudgets& budgets, const std::string& message,
                                  const std::string& started_at) {
    require_writable(read_only_, path_);
    // runs() reads every row's budgets with their ranges: a row it would refuse is never written.
    check_planner_budgets(budgets, path_.string() + ": failed run's budgets", false);
    Transaction tx(db_, path_);
    const std::int64_t window_id = window_row(db_, path_, trace, window);
    const std::int64_t topology_id = topology_for_run(db_, path_, topology_name, topology);
    const std::int64_t run_id =
        insert_run(db_, path_, window_id, topology_id, 0, budgets, "failed", message, started_at, nullptr);
    tx.commit();
    return run(run_id);
}

std::vector<RunEntry> Library::runs(const std::string& trace, const std::string& window) const {
    Statement check(db_, path_, "SELECT 1 FROM traces WHERE name = ?1");
    check.bind(1, trace);
    if (!check.step()) throw InputError("no trace named '" + shown(trace) + "' in " + path_.string());
    const std::int64_t window_id = window_row(db_, path_, trace, window);
    Statement st(db_, path_, run_columns(schema_version()) + "WHERE r.window_id = ?1 ORDER BY r.id");
    st.bind(1, window_id);
    std::vector<RunEntry> out;
    while (st.step())
        out.push_back(read_run(db_, st, path_));
    return out;
}

RunEntry Library::run(std::int64_t run_id) const {
    Statement st(db_, path_, run_columns(schema_version()) + "WHERE r.id = ?1");
    st.bind(1, run_id);
    if (!st.step()) throw InputError("no run " + std::to_string(run_id) + " in " + path_.string());
    return read_run(db_, st, path_);
}

std::string Library::run_plan_json(std::int64_t run_id) const {
    Statement st(db_, path_,
                 "SELECT r.plan_id, p.plan_json FROM runs r LEFT JOIN plans p ON p.id = r.plan_id WHERE r.id = ?1");
    st.bind(1, run_id);
    if (!st.step()) throw InputError("no run " + std::to_string(run_id) + " in " + path_.string());
    if (st.is_null(0) || st.is_null(1))
        throw InputError("run " + std::to_string(run_id) + " in " + path_.string() + " produced no plan");
    return st.text(1);
}

} // namespace routepack::storage
