// Runs swept on a cluster (python3 -m routepack.run sweep, docs/cluster-runs.md) in a library
// (storage/library.h, schema migration 4): read_cluster_run_folder reads and checks OUT/run.json and
// OUT/summary.json; Library::import_cluster_run stores them, cluster_runs / cluster_run /
// cluster_run_steps read them back for the studio's Run view.
#include "storage/library.h"

#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/plan/budgets.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"
#include "core/util/json_field.h"
#include "core/util/text.h"
#include "storage/library_internal.h"
#include "storage/sqlite_util.h"

#include <nlohmann/json.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

namespace routepack::storage {

using detail::Statement;
using detail::Transaction;
using util::JsonField;

namespace {

constexpr InputFileKind kRunDescription{"run description (run.json)", std::uint64_t(64) << 20};
constexpr InputFileKind kRunSummary{"run summary (summary.json)", std::uint64_t(1) << 30};
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr double kDoubleMax = std::numeric_limits<double>::max();
constexpr int kMaxThreads = 65536;

/// A string field that must equal `expected` ("format", ...): "<where> is <value>, not "<expected>"".
void require_text(const JsonField& f, const std::string& expected) {
    if (f.string() != expected) f.fail("\"" + expected + "\"");
}

/// A number >= 0 (finite): "<where> is -1, not a finite number >= 0".
double non_negative(const JsonField& f) {
    return f.number(0.0, kDoubleMax);
}

/// An optional number >= 0: null (or absent) is "not known".
std::optional<double> optional_non_negative(const JsonField& f) {
    if (!f.given()) return std::nullopt;
    return non_negative(f);
}

/// A chain's folder in OUT, or a plan file name in it: one path component, no "." or "..".
bool plain_file_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\0') == std::string::npos;
}

/// run.json's budgets as the runner took them (the Python module's `budgets` dict): every key a
/// budget of the table (core/plan/budgets.h) but workers and time_limit_s (arguments of plan()),
/// or one of the module's two old names ("seeds", "steps"), each value in its budget's range (parse_planner_budgets).
/// InputError "<where>: unknown budget 'bogus' (known: seeds_M, ...)" or the reader's range error.
void check_run_budgets(const JsonField& budgets) {
    static const std::pair<const char*, const char*> old_names[] = {{"seeds", "seeds_M"}, {"steps", "steps_per_level"}};
    nlohmann::json renamed = nlohmann::json::object();
    for (const auto& item : budgets.json().items()) {
        std::string key = item.key();
        for (const auto& [old_name, name] : old_names)
            if (key == old_name) key = name;
        const BudgetRow* row = find_budget(key);
        auto argument = [](const BudgetRow& r) { return r.run_setting || std::string(r.key) == "time_limit_s"; };
        if (!row || argument(*row)) {
            std::string known;
            for (const BudgetRow& r : budget_table())
                if (!argument(r)) known += (known.empty() ? "" : ", ") + std::string(r.key);
            throw InputError(budgets.where() + ": unknown budget '" + util::printable(item.key()) +
                             "' (known: " + known + ")");
        }
        renamed[key] = item.value();
    }
    (void)parse_planner_budgets(renamed.dump(), budgets.where()); // the planner's own reader and ranges
}

/// run.json: the settings of the run and its chains' topologies (by name; summary.json's
/// "topologies" gives their order).
ClusterRunEntry read_run_description(const std::filesystem::path& file, const std::string& text) {
    const nlohmann::json doc = util::parse_json_document(text, file.string());
    const JsonField d(doc, file.string());
    d.object();
    require_text(d["format"], "routepack-cluster-run");
    d["version"].integer(1, 1);
    ClusterRunEntry e;
    e.trace = d["trace"].string();
    e.model = d["model"].json().dump();
    e.seed = d["seed"].unsigned_integer();
    e.threads = static_cast<int>(d["threads"].integer(1, kMaxThreads));
    const JsonField budgets = d["budgets"];
    budgets.object();
    util::check_json_depth(budgets.json(), budgets.where()); // printed back to text below
    e.budgets = budgets.json().dump();
    check_run_budgets(budgets);
    e.previous = d["previous"].string();
    if (e.previous != "identity" && (e.previous.rfind("previous:", 0) != 0 || e.previous.size() == 9))
        d["previous"].fail("\"identity\" or \"previous:<file>\"");
    if (e.trace.empty()) d["trace"].fail("a trace name");
    // A shipped model's name: each chain's topology must fit it, as the planner checks it.
    const JsonField model = d["model"];
    std::optional<ModelDescription> known;
    if (model.json().is_string())
        for (const std::string& name : known_model_names())
            if (name == model.string()) known = known_model(name);
    const JsonField topologies = d["topologies"];
    topologies.object();
    for (const auto& [name, value] : topologies.json().items()) {
        if (!plain_file_name(name))
            throw InputError(file.string() + ": topologies: the chain name \"" + util::printable(name) +
                             "\" is not a folder name");
        const std::string origin = file.string() + ": topologies." + util::printable(name);
        util::check_json_depth(value, origin); // printed back to text for parse_topology
        e.chains.push_back({name, parse_topology(value.dump(), origin)});
        if (known) check_topology_for_model(e.chains.back().topology, *known, origin);
    }
    if (e.chains.empty()) topologies.fail("an object with at least one chain");
    return e;
}

/// The planned part of one summary line into `s`; the plan file must exist in OUT/<chain>.
void read_planned_line(const JsonField& line, const std::filesystem::path& chain_folder, ClusterRunStep& s) {
    s.samples = static_cast<std::size_t>(line["samples"].integer(1, kInt32Max));
    s.rows = static_cast<int>(line["rows"].integer(1, kInt32Max));
    s.certified = line["certified"].boolean();
    for (const MethodRow& m : kMethodTable) {
        const JsonField f = line[m.key];
        if (method_index(m.method) < kPaperMethodCount || f.given()) s.max_u[m.method] = non_negative(f);
    }
    s.gain_vs_baseline_pct = line["routepack_vs_baseline_pct"].number();
    s.gain_vs_reorder_pct = line["routepack_vs_reorder_pct"].number();
    s.lower_bound = non_negative(line["lower_bound"]);
    s.experts_moved = line["experts_moved"].integer(0, std::numeric_limits<std::int64_t>::max());
    s.migration_bytes = optional_non_negative(line["migration_bytes"]);
    s.materialization_seconds = optional_non_negative(line["materialization_seconds"]);
    s.compute_seconds = optional_non_negative(line["compute_seconds"]);
    s.modelled_seconds = optional_non_negative(line["modelled_seconds"]);
    s.planner_seconds = non_negative(line["planner_s"]);
    s.task_seconds = non_negative(line["task_seconds"]);
    s.time_limit_hit = line["time_limit_hit"].boolean();
    s.worker = line["worker"].string();
    s.previous_from = line["previous_from"].string();
    const JsonField plan = line["plan_file"];
    const std::string& name = plan.string();
    std::error_code ec;
    if (!plain_file_name(name) || !std::filesystem::is_regular_file(chain_folder / name, ec))
        plan.fail("a plan file in " + chain_folder.string());
    s.plan_file = chain_folder / name;
}

/// One line of summary.json: line k of chain c is step k % steps of that chain, window `window`
/// (the first chain's window of that step; "" for the first chain, which sets it).
ClusterRunStep read_summary_line(const JsonField& line, const ClusterRunEntry& run, std::size_t chain,
                                 std::size_t position, const std::string& window) {
    line.object();
    ClusterRunStep s;
    s.chain = chain;
    s.chain_name = run.chains[chain].name;
    s.position = position;
    require_text(line["topology"], s.chain_name);
    s.window = line["window"].string();
    if (s.window.empty()) line["window"].fail("a window name");
    if (!window.empty()) require_text(line["window"], window);
    if (line["path"].given()) s.step_path = line["path"].string();
    const JsonField status = line["status"];
    if (status.string() == "planned") {
        s.planned = true;
        read_planned_line(line, run.out / s.chain_name, s);
    } else if (status.string() == "failed") {
        s.error = line["error"].string();
        if (line["stage"].given()) {
            s.stage = line["stage"].string();
            if (s.stage != "read" && s.stage != "plan") line["stage"].fail("\"read\" or \"plan\"");
        }
    } else {
        status.fail("\"planned\" or \"failed\"");
    }
    return s;
}

/// The order of each chain's lines, as the runner writes them: every planned step started from the chain's previous
/// planned step (its previous_from is that step's window; the first planned step's is run.json's "previous", "identity"
/// or "previous:<file>"). A summary whose lines were swapped or edited fails here: "<where>.lines[4].previous_from is
/// "step-1", not "step-2"".
void check_step_order(const JsonField& lines, const ClusterRunEntry& run, const std::vector<ClusterRunStep>& steps) {
    for (std::size_t c = 0; c < run.chains.size(); ++c) {
        std::string last = run.previous;
        for (std::size_t k = 0; k < run.steps; ++k) {
            const std::size_t i = c * run.steps + k;
            const ClusterRunStep& s = steps[i];
            if (!s.planned) continue;
            if (s.previous_from != last) lines[i]["previous_from"].fail("\"" + util::printable(last) + "\"");
            last = s.window;
        }
    }
}

/// summary.json's lines into steps, after the header has been checked against run.json.
std::vector<ClusterRunStep> read_summary_lines(const JsonField& d, ClusterRunEntry& run) {
    const JsonField lines = d["lines"];
    const std::size_t expected = run.steps * run.chains.size();
    if (lines.list() != expected)
        lines.fail("a list of " + std::to_string(expected) + " lines (" + std::to_string(run.steps) + " steps x " +
                   std::to_string(run.chains.size()) + " chains)");
    std::vector<ClusterRunStep> steps;
    steps.reserve(expected);
    std::set<std::string> windows; // a run's steps have distinct names (the runner refuses two)
    for (std::size_t i = 0; i < expected; ++i) {
        const std::size_t chain = i / run.steps, position = i % run.steps;
        const std::string first = chain == 0 ? std::string() : steps[position].window;
        steps.push_back(read_summary_line(lines[i], run, chain, position, first));
        if (chain == 0 && !windows.insert(steps.back().window).second)
            lines[i]["window"].fail("a window not named by an earlier line of its chain");
        (steps.back().planned ? run.planned : run.failed) += 1;
    }
    const JsonField failed = d["failed"];
    if (failed.list() != run.failed) failed.fail("a list of the " + std::to_string(run.failed) + " failed lines");
    check_step_order(lines, run, steps);
    return steps;
}

/// summary.json's header (format, version, steps, topologies: each of run.json's chains once, in
/// the chains' order), then its lines.
std::vector<ClusterRunStep> read_summary(const std::filesystem::path& file, const std::string& text,
                                         ClusterRunEntry& run) {
    const nlohmann::json doc = util::parse_json_document(text, file.string());
    const JsonField d(doc, file.string());
    d.object();
    require_text(d["format"], "routepack-cluster-summary");
    d["version"].integer(1, 1);
    run.steps = static_cast<std::size_t>(d["steps"].integer(1, kInt32Max));
    // run.json's chains (an object: no order) in the order of summary.json's list.
    const JsonField topologies = d["topologies"];
    std::string known;
    for (const ClusterRunChain& c : run.chains)
        known += (known.empty() ? "" : ", ") + c.name;
    if (topologies.list() != run.chains.size())
        topologies.fail("a list of run.json's " + std::to_string(run.chains.size()) + " chains (" + known + ")");
    std::vector<ClusterRunChain> ordered;
    for (std::size_t c = 0; c < run.chains.size(); ++c) {
        const std::string& name = topologies[c].string();
        const auto it = std::find_if(run.chains.begin(), run.chains.end(),
                                     [&](const ClusterRunChain& x) { return x.name == name; });
        const bool seen =
            std::any_of(ordered.begin(), ordered.end(), [&](const ClusterRunChain& x) { return x.name == name; });
        if (it == run.chains.end() || seen) topologies[c].fail("another chain of run.json (" + known + ")");
        ordered.push_back(*it);
    }
    run.chains = std::move(ordered);
    return read_summary_lines(d, run);
}

std::filesystem::path absolute_out(const std::filesystem::path& out) {
    std::error_code ec;
    const auto status = std::filesystem::status(out, ec);
    if (!std::filesystem::exists(status)) throw MissingFileError(out.string() + ": no such folder", out);
    if (!std::filesystem::is_directory(status)) throw InputError(out.string() + ": is not a folder");
    std::filesystem::path dir = std::filesystem::weakly_canonical(std::filesystem::absolute(out), ec);
    if (ec) dir = std::filesystem::absolute(out).lexically_normal();
    if (!dir.has_filename() && dir.has_parent_path() && dir != dir.root_path()) dir = dir.parent_path();
    return dir;
}

/// FNV-1a of the files' bytes, one after the other.
std::string fingerprint_of(const std::string& run_json, const std::string& summary_json) {
    std::uint64_t h = fnv1a64(run_json.data(), run_json.size());
    h = fnv1a64(summary_json.data(), summary_json.size(), h);
    return hex64(h);
}

constexpr const char* kRunColumns =
    "SELECT id, out_path, trace, model, seed, threads, budgets, previous, step_count, planned, failed, fingerprint, "
    "imported_at FROM cluster_runs ";

ClusterRunEntry read_run_row(sqlite3* db, const std::filesystem::path& file, const Statement& st) {
    ClusterRunEntry e;
    e.id = st.int64(0);
    e.out = st.text(1);
    e.trace = st.text(2);
    e.model = st.text(3);
    e.seed = static_cast<std::uint64_t>(st.int64(4));
    e.threads = static_cast<int>(st.int64(5));
    e.budgets = st.text(6);
    e.previous = st.text(7);
    e.steps = static_cast<std::size_t>(st.int64(8));
    e.planned = static_cast<std::size_t>(st.int64(9));
    e.failed = static_cast<std::size_t>(st.int64(10));
    e.fingerprint = st.text(11);
    e.imported_at = st.text(12);
    Statement ch(db, file, "SELECT name, topology FROM cluster_run_chains WHERE run_id = ?1 ORDER BY position");
    ch.bind(1, e.id);
    while (ch.step()) {
        const std::string name = ch.text(0);
        e.chains.push_back({name, parse_topology(ch.text(1), file.string() + ": cluster run " + std::to_string(e.id) +
                                                                 " chain '" + util::printable(name) + "'")});
    }
    return e;
}

void bind_optional(Statement& st, int index, const std::optional<double>& v) {
    if (v)
        st.bind(index, *v);
    else
        st.bind_null(index);
}

/// The cluster_runs row's columns 2.. of `run` (out_path is ?1).
void bind_run_row(Statement& st, const ClusterRunEntry& run) {
    st.bind(1, run.out.string()).bind(2, run.trace).bind(3, run.model);
    st.bind(4, static_cast<std::int64_t>(run.seed)); // SQLite INTEGER is signed: the same 64 bits
    st.bind(5, run.threads).bind(6, run.budgets).bind(7, run.previous);
    st.bind(8, static_cast<std::int64_t>(run.steps)).bind(9, static_cast<std::int64_t>(run.planned));
    st.bind(10, static_cast<std::int64_t>(run.failed)).bind(11, run.fingerprint);
    st.bind(12, detail::utc_now_iso8601());
}

void insert_chains_and_steps(sqlite3* db, const std::filesystem::path& file, std::int64_t id,
                             const ClusterRunEntry& run, const std::vector<ClusterRunStep>& steps) {
    Statement ch(db, file, "INSERT INTO cluster_run_chains (run_id, position, name, topology) VALUES (?1, ?2, ?3, ?4)");
    for (std::size_t c = 0; c < run.chains.size(); ++c) {
        ch.bind(1, id).bind(2, static_cast<std::int64_t>(c)).bind(3, run.chains[c].name);
        ch.bind(4, topology_to_json(run.chains[c].topology));
        ch.run();
    }
    Statement st(db, file,
                 "INSERT INTO cluster_run_steps (run_id, chain, position, window_name, step_path, status, samples, "
                 "rows, certified, max_u_baseline, max_u_reorder, max_u_karmarkar_karp, max_u_routepack, "
                 "max_u_grouter, max_u_routepack_comm, gain_vs_baseline_pct, gain_vs_reorder_pct, lower_bound, "
                 "experts_moved, migration_bytes, materialization_seconds, compute_seconds, modelled_seconds, "
                 "planner_seconds, task_seconds, time_limit_hit, worker, previous_from, plan_file, error, stage) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
                 "?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)");
    for (const ClusterRunStep& s : steps) {
        st.bind(1, id).bind(2, static_cast<std::int64_t>(s.chain)).bind(3, static_cast<std::int64_t>(s.position));
        st.bind(4, s.window).bind(5, s.step_path.string()).bind(6, s.planned ? "planned" : "failed");
        if (s.planned) {
            st.bind(7, static_cast<std::int64_t>(s.samples)).bind(8, s.rows).bind(9, s.certified ? 1 : 0);
            for (int m = 0; m < kMethodCount; ++m)
                bind_optional(st, 10 + m, s.max_u[method_at(m)]);
            st.bind(16, s.gain_vs_baseline_pct).bind(17, s.gain_vs_reorder_pct).bind(18, s.lower_bound);
            st.bind(19, s.experts_moved);
            bind_optional(st, 20, s.migration_bytes);
            bind_optional(st, 21, s.materialization_seconds);
            bind_optional(st, 22, s.compute_seconds);
            bind_optional(st, 23, s.modelled_seconds);
            st.bind(24, s.planner_seconds).bind(25, s.task_seconds).bind(26, s.time_limit_hit ? 1 : 0);
            st.bind(27, s.worker).bind(28, s.previous_from).bind(29, s.plan_file.filename().string());
        } else {
            st.bind(30, s.error);
            if (!s.stage.empty()) st.bind(31, s.stage);
        }
        st.run(); // resets and clears the bindings: unbound columns are NULL
    }
}

std::optional<double> optional_real(const Statement& st, int column) {
    if (st.is_null(column)) return std::nullopt;
    return st.real(column);
}

ClusterRunStep read_step_row(const Statement& st, const ClusterRunEntry& run) {
    ClusterRunStep s;
    s.chain = static_cast<std::size_t>(st.int64(0));
    s.chain_name = s.chain < run.chains.size() ? run.chains[s.chain].name : std::string();
    s.position = static_cast<std::size_t>(st.int64(1));
    s.window = st.text(2);
    s.step_path = st.text(3);
    s.planned = st.text(4) == "planned";
    if (s.planned) {
        s.samples = static_cast<std::size_t>(st.int64(5));
        s.rows = static_cast<int>(st.int64(6));
        s.certified = st.int64(7) != 0;
        for (int m = 0; m < kMethodCount; ++m)
            s.max_u[method_at(m)] = optional_real(st, 8 + m);
        s.gain_vs_baseline_pct = st.real(14);
        s.gain_vs_reorder_pct = st.real(15);
        s.lower_bound = st.real(16);
        s.experts_moved = st.int64(17);
        s.migration_bytes = optional_real(st, 18);
        s.materialization_seconds = optional_real(st, 19);
        s.compute_seconds = optional_real(st, 20);
        s.modelled_seconds = optional_real(st, 21);
        s.planner_seconds = st.real(22);
        s.task_seconds = st.real(23);
        s.time_limit_hit = st.int64(24) != 0;
        s.worker = st.text(25);
        s.previous_from = st.text(26);
        s.plan_file = run.out / s.chain_name / st.text(27);
    } else {
        s.error = st.text(28);
        s.stage = st.is_null(29) ? std::string() : st.text(29);
    }
    return s;
}

} // namespace

std::pair<ClusterRunEntry, std::vector<ClusterRunStep>> read_cluster_run_folder(const std::filesystem::path& out) {
    const std::filesystem::path dir = absolute_out(out);
    const std::string description = read_input_file(dir / "run.json", kRunDescription);
    ClusterRunEntry run = read_run_description(dir / "run.json", description);
    run.out = dir;
    const std::filesystem::path summary_file = dir / "summary.json";
    const std::string summary = read_input_file(summary_file, kRunSummary);
    std::vector<ClusterRunStep> steps = read_summary(summary_file, summary, run);
    run.fingerprint = fingerprint_of(description, summary);
    return {std::move(run), std::move(steps)};
}

namespace {

/// One whole run per chain of cluster run `id` (source "cluster"; the chain's position is its key, so
/// a re-import keeps the whole runs' ids and names); whole runs of chains the run no longer has go.
void upsert_chain_whole_runs(sqlite3* db, const std::filesystem::path& file, std::int64_t id,
                             const ClusterRunEntry& run) {
    WholeRunSettings settings;
    settings.seed = run.seed;
    try {
        settings.budgets = parse_planner_budgets(run.budgets, file.string() + ": cluster run budgets");
    } catch (const std::exception&) {
        settings.budgets = PlannerBudgets{}; // read_cluster_run_folder checked the keys it stores
    }
    settings.budgets.seed = run.seed;
    settings.start = run.previous;
    const std::string settings_json = detail::whole_run_settings_json(settings);
    Statement up(db, file,
                 "INSERT INTO whole_runs (name, source, trace, topology, definition, settings, cluster_run, "
                 "cluster_chain, created_at) VALUES ('', 'cluster', ?1, ?2, ?3, ?4, ?5, ?6, "
                 "(SELECT imported_at FROM cluster_runs WHERE id = ?5)) "
                 "ON CONFLICT (cluster_run, cluster_chain) DO UPDATE SET trace = excluded.trace, topology = "
                 "excluded.topology, definition = excluded.definition, settings = excluded.settings");
    for (std::size_t c = 0; c < run.chains.size(); ++c) {
        up.bind(1, run.trace).bind(2, run.chains[c].name).bind(3, topology_to_json(run.chains[c].topology));
        up.bind(4, settings_json).bind(5, id).bind(6, static_cast<std::int64_t>(c));
        up.run();
    }
    Statement del(db, file, "DELETE FROM whole_runs WHERE cluster_run = ?1 AND cluster_chain >= ?2");
    del.bind(1, id).bind(2, static_cast<std::int64_t>(run.chains.size()));
    del.run();
}

} // namespace

ClusterRunImport Library::import_cluster_run(const std::filesystem::path& out) {
    if (read_only_) throw LibraryReadOnly(path_);
    auto [run, steps] = read_cluster_run_folder(out); // every check before the transaction
    Transaction tx(db_, path_);
    ClusterRunImport result;
    std::int64_t id = 0;
    {
        Statement st(db_, path_, "SELECT id, fingerprint FROM cluster_runs WHERE out_path = ?1");
        st.bind(1, run.out.string());
        if (st.step()) {
            id = st.int64(0);
            result.outcome = st.text(1) == run.fingerprint ? ClusterRunImport::Outcome::Unchanged
                                                           : ClusterRunImport::Outcome::Replaced;
        }
    }
    if (result.outcome == ClusterRunImport::Outcome::Unchanged) {
        result.run = cluster_run(id);
        return result; // nothing written: the transaction rolls back
    }
    if (id != 0) {
        Statement del(db_, path_, "DELETE FROM cluster_run_chains WHERE run_id = ?1"); // steps cascade
        del.bind(1, id).run();
        Statement up(db_, path_,
                     "UPDATE cluster_runs SET trace = ?2, model = ?3, seed = ?4, threads = ?5, budgets = ?6, "
                     "previous = ?7, step_count = ?8, planned = ?9, failed = ?10, fingerprint = ?11, "
                     "imported_at = ?12 WHERE out_path = ?1");
        bind_run_row(up, run);
        up.run();
    } else {
        Statement ins(db_, path_,
                      "INSERT INTO cluster_runs (out_path, trace, model, seed, threads, budgets, previous, step_count, "
                      "planned, failed, fingerprint, imported_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                      "?11, ?12)");
        bind_run_row(ins, run);
        ins.run();
        id = sqlite3_last_insert_rowid(db_);
    }
    insert_chains_and_steps(db_, path_, id, run, steps);
    upsert_chain_whole_runs(db_, path_, id, run);
    result.run = cluster_run(id);
    tx.commit();
    return result;
}

std::vector<ClusterRunEntry> Library::cluster_runs() const {
    std::vector<ClusterRunEntry> out;
    if (schema_version() < 4) return out; // a read-only open of an older library
    Statement st(db_, path_, std::string(kRunColumns) + "ORDER BY id");
    while (st.step())
        out.push_back(read_run_row(db_, path_, st));
    return out;
}

ClusterRunEntry Library::cluster_run(std::int64_t id) const {
    if (schema_version() >= 4) {
        Statement st(db_, path_, std::string(kRunColumns) + "WHERE id = ?1");
        st.bind(1, id);
        if (st.step()) return read_run_row(db_, path_, st);
    }
    throw InputError("no cluster run " + std::to_string(id) + " in " + path_.string());
}

std::vector<ClusterRunStep> Library::cluster_run_steps(std::int64_t id) const {
    const ClusterRunEntry run = cluster_run(id);
    Statement st(db_, path_,
                 "SELECT chain, position, window_name, step_path, status, samples, rows, certified, max_u_baseline, "
                 "max_u_reorder, max_u_karmarkar_karp, max_u_routepack, max_u_grouter, max_u_routepack_comm, "
                 "gain_vs_baseline_pct, gain_vs_reorder_pct, lower_bound, experts_moved, migration_bytes, "
                 "materialization_seconds, compute_seconds, modelled_seconds, planner_seconds, task_seconds, "
                 "time_limit_hit, worker, previous_from, plan_file, error, stage FROM cluster_run_steps "
                 "WHERE run_id = ?1 ORDER BY chain, position");
    st.bind(1, id);
    std::vector<ClusterRunStep> out;
    while (st.step())
        out.push_back(read_step_row(st, run));
    return out;
}

} // namespace routepack::storage
