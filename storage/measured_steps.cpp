// Measured steps stored beside their windows (schema migration 6; docs/measure.md "In the library"):
// a measured file, or torch.profiler traces with the plan they ran, linked to the saved runs whose
// layouts they measured.
#include "core/model/trace.h"
#include "core/plan/measured.h"
#include "core/plan/method.h"
#include "core/plan/plan_file.h"
#include "core/util/errors.h"
#include "core/util/text.h"
#include "storage/library.h"
#include "storage/sqlite_util.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

namespace routepack::storage {

using detail::shown;
using detail::Statement;
using detail::Transaction;

namespace {

/// The id of window `window` of trace `trace`, or 0.
std::int64_t window_id_of(sqlite3* db, const std::filesystem::path& file, const std::string& trace,
                          const std::string& window) {
    Statement st(db, file,
                 "SELECT w.id FROM windows w JOIN traces t ON t.id = w.trace_id WHERE t.name = ?1 AND w.name = ?2");
    st.bind(1, trace).bind(2, window);
    return st.step() ? st.int64(0) : 0;
}

/// `t` with its token cap resolved for the window (effective_token_cap), as the plans' costs use it.
Topology resolved_topology(Topology t, const Trace& window) {
    std::vector<std::int64_t> lengths;
    for (const SampleInfo& s : window.samples)
        lengths.push_back(s.length);
    t.token_cap = effective_token_cap(t, lengths);
    return t;
}

/// The saved run and method of the window whose layout each plan measured ({0, ""} where none):
/// runs on the same topology, newest first, the paper's four methods and the communication ones.
std::vector<std::pair<std::int64_t, std::string>> link_runs(const Library& lib, const MeasuredStep& m,
                                                            const Trace& window) {
    std::vector<std::pair<std::int64_t, std::string>> out(m.plans.size());
    const Topology measured = resolved_topology(m.topology, window);
    const std::string topology = topology_to_json(measured);
    std::vector<RunEntry> runs = lib.runs(m.trace, m.window);
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->plan_id == 0 || topology_to_json(resolved_topology(it->topology_value, window)) != topology) continue;
        const std::string origin = lib.path().string() + ": run " + std::to_string(it->id);
        PlanResult r;
        try {
            r = restore_plan(parse_plan(lib.run_plan_json(it->id), origin), window, origin);
        } catch (const InputError&) {
            continue; // a run whose plan no longer restores measures nothing here
        }
        for (const MethodResult* mr : r.methods()) {
            const MeasuredPlan layout =
                layout_pieces(window, mr->layout, r.placement_of(mr->placement), measured, mr->key());
            for (std::size_t k = 0; k < m.plans.size(); ++k)
                if (out[k].first == 0 && same_pieces(m.plans[k], layout)) out[k] = {it->id, mr->key()};
        }
    }
    return out;
}

MeasuredStepEntry read_entry(sqlite3* db, const std::filesystem::path& file, Statement& st) {
    MeasuredStepEntry e;
    e.id = st.int64(0);
    e.trace = st.text(1);
    e.window = st.text(2);
    e.source = st.text(3);
    for (const auto& f : nlohmann::json::parse(st.text(4)))
        e.files.push_back(f.get<std::string>());
    e.fingerprint = st.text(5);
    e.topology = parse_topology(st.text(6), file.string() + ": measured step " + std::to_string(e.id));
    e.imported_at = st.text(7);
    Statement pl(db, file,
                 "SELECT name, rows, step_seconds, modelled_max_u, run_id, method FROM measured_plans "
                 "WHERE measured_id = ?1 ORDER BY position");
    pl.bind(1, e.id);
    while (pl.step()) {
        MeasuredPlanEntry p;
        p.name = pl.text(0);
        p.rows = static_cast<int>(pl.int64(1));
        p.step_seconds = pl.real(2);
        if (!pl.is_null(3)) p.modelled_max_u = pl.real(3);
        if (!pl.is_null(4)) {
            p.run_id = pl.int64(4);
            p.method = pl.text(5);
        }
        e.plans.push_back(std::move(p));
    }
    return e;
}

constexpr const char* kStepColumns =
    "SELECT m.id, t.name, w.name, m.source, m.files, m.fingerprint, m.topology, m.imported_at FROM measured_steps m "
    "JOIN windows w ON w.id = m.window_id JOIN traces t ON t.id = w.trace_id ";

} // namespace

MeasuredImport Library::import_measured(const std::string& text, const std::filesystem::path& file) {
    if (read_only_) throw LibraryReadOnly(path_);
    const MeasuredStep probe = parse_measured(text, file.string());
    const std::int64_t window_id = window_id_of(db_, path_, probe.trace, probe.window);
    if (window_id == 0)
        throw InputError(file.string() + ": window '" + shown(probe.trace) + "/" + shown(probe.window) +
                         "' is not in " + path_.string() + " (import its trace and make the window first)");
    // Routes when the runs it may have measured span nodes: their plans restore with them.
    const Trace window = load_window(probe.trace, probe.window, routes_for(probe.topology));
    const MeasuredStep m = parse_measured(text, file.string(), window_fingerprint(window));
    return store_measured(m, text, window, window_id, "measured", {std::filesystem::absolute(file)});
}

MeasuredImport Library::import_profiler(const std::string& plan_text, const std::filesystem::path& plan_file,
                                        const std::string& method, const std::string& step,
                                        const std::vector<ProfilerTraceFile>& traces,
                                        const std::vector<std::filesystem::path>& trace_files) {
    if (read_only_) throw LibraryReadOnly(path_);
    const std::optional<Method> which = method_from_key(method);
    if (!which)
        throw InputError("unknown method '" + shown(method) +
                         "' (baseline, reorder, karmarkar_karp, routepack, grouter or routepack+comm)");
    const PlanFile plan = parse_plan(plan_text, plan_file.string());
    const std::int64_t window_id = window_id_of(db_, path_, plan.trace_name, plan.window_name);
    if (window_id == 0)
        throw InputError(plan_file.string() + ": window '" + shown(plan.trace_name) + "/" + shown(plan.window_name) +
                         "' is not in " + path_.string() + " (import its trace and make the window first)");
    const Trace window = load_window(plan.trace_name, plan.window_name, routes_for(plan.topology));
    const PlanResult r = restore_plan(plan, window, plan_file.string());
    const MethodResult* mr = r.method(*which);
    if (!mr) throw InputError(plan_file.string() + ": the plan has no " + method + " layout");
    Topology capped = plan.topology;
    std::vector<std::int64_t> lengths;
    for (const SampleInfo& s : window.samples)
        lengths.push_back(s.length);
    capped.token_cap = effective_token_cap(plan.topology, lengths);
    MeasuredPlan measured =
        layout_pieces(window, mr->layout, r.placement_of(mr->placement), capped, step.empty() ? method : step);
    measured.modelled_max_u = mr->metrics.score.max_u;
    const ProfilerTiming timing =
        fill_from_profiler(measured, traces, plan.fingerprint, plan.topology, window.model.moe_layers);
    MeasuredStep m;
    m.trace = plan.trace_name;
    m.window = plan.window_name;
    m.fingerprint = plan.fingerprint;
    m.samples = static_cast<std::int64_t>(window.samples.size());
    m.experts = window.model.experts;
    m.moe_layers = window.model.moe_layers;
    m.topology = capped;
    m.shapes = "null";
    m.timing = nlohmann::ordered_json{
        {"clock", timing.device ? "torch.profiler device ranges" : "torch.profiler host ranges"},
        {"warmup", 0},
        {"repeats", timing.repeats},
        {"statistic",
         "median"}}.dump();
    m.plans.push_back(std::move(measured));
    const std::string text = measured_to_json(m);
    std::vector<std::filesystem::path> files{std::filesystem::absolute(plan_file)};
    for (const auto& f : trace_files)
        files.push_back(std::filesystem::absolute(f));
    // Stored as the one reader reads it back.
    return store_measured(parse_measured(text, plan_file.string(), plan.fingerprint), text, window, window_id,
                          "profiler", files);
}

MeasuredImport Library::store_measured(const MeasuredStep& m, const std::string& text, const Trace& window,
                                       std::int64_t window_id, const char* source,
                                       const std::vector<std::filesystem::path>& files) {
    const std::string fingerprint = hex64(fnv1a64(text.data(), text.size()));
    const auto links = link_runs(*this, m, window);
    Transaction tx(db_, path_);
    MeasuredImport result;
    {
        Statement st(db_, path_, "SELECT id FROM measured_steps WHERE window_id = ?1 AND fingerprint = ?2");
        st.bind(1, window_id).bind(2, fingerprint);
        if (st.step()) {
            result.unchanged = true;
            result.step = measured_entry(st.int64(0));
            return result; // nothing written: the transaction rolls back
        }
    }
    nlohmann::json names = nlohmann::json::array();
    for (const auto& f : files)
        names.push_back(f.string());
    Statement ins(db_, path_,
                  "INSERT INTO measured_steps (window_id, source, files, fingerprint, topology, document, imported_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    ins.bind(1, window_id).bind(2, std::string(source)).bind(3, names.dump()).bind(4, fingerprint);
    ins.bind(5, topology_to_json(m.topology)).bind(6, text).bind(7, detail::utc_now_iso8601());
    ins.run();
    const std::int64_t id = sqlite3_last_insert_rowid(db_);
    Statement pl(db_, path_,
                 "INSERT INTO measured_plans (measured_id, position, name, rows, step_seconds, modelled_max_u, run_id, "
                 "method) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    for (std::size_t k = 0; k < m.plans.size(); ++k) {
        const MeasuredPlan& p = m.plans[k];
        pl.bind(1, id).bind(2, static_cast<std::int64_t>(k)).bind(3, p.name).bind(4, p.rows).bind(5, p.step_seconds);
        if (p.modelled_max_u) pl.bind(6, *p.modelled_max_u);
        if (links[k].first != 0) pl.bind(7, links[k].first).bind(8, links[k].second);
        pl.run(); // resets and clears the bindings: unbound columns are NULL
    }
    result.step = measured_entry(id);
    tx.commit();
    return result;
}

MeasuredStepEntry Library::measured_entry(std::int64_t id) const {
    if (schema_version() >= 6) {
        Statement st(db_, path_, std::string(kStepColumns) + "WHERE m.id = ?1");
        st.bind(1, id);
        if (st.step()) return read_entry(db_, path_, st);
    }
    throw InputError("no measured step " + std::to_string(id) + " in " + path_.string());
}

std::vector<MeasuredStepEntry> Library::measured_steps(const std::string& trace, const std::string& window) const {
    std::vector<MeasuredStepEntry> out;
    if (schema_version() < 6) return out; // a read-only open of an older library
    Statement st(db_, path_,
                 std::string(kStepColumns) +
                     "WHERE (?1 = '' OR t.name = ?1) AND (?2 = '' OR w.name = ?2) ORDER BY m.id");
    st.bind(1, trace).bind(2, window);
    while (st.step())
        out.push_back(read_entry(db_, path_, st));
    return out;
}

MeasuredStep Library::measured_step(std::int64_t id) const {
    if (schema_version() >= 6) {
        Statement st(db_, path_, "SELECT document FROM measured_steps WHERE id = ?1");
        st.bind(1, id);
        if (st.step()) return parse_measured(st.text(0), path_.string() + ": measured step " + std::to_string(id));
    }
    throw InputError("no measured step " + std::to_string(id) + " in " + path_.string());
}

} // namespace routepack::storage
