// Whole runs (schema migration 7; storage/library.h): a sweep, a studio run or an imported cluster
// run's chain stored as one run with an id, a name, the settings that tell runs apart and its steps.
#include "storage/library.h"

#include "core/model/topology.h"
#include "core/plan/budgets.h"
#include "core/util/errors.h"
#include "core/util/text.h"
#include "storage/library_internal.h"
#include "storage/sqlite_util.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <string>

namespace routepack::storage {

using detail::shown;
using detail::Statement;
using detail::Transaction;

const char* whole_run_source_key(WholeRunSource s) {
    switch (s) {
    case WholeRunSource::Sweep:
        return "sweep";
    case WholeRunSource::Studio:
        return "studio";
    case WholeRunSource::Cluster:
        return "cluster";
    }
    return "sweep";
}

namespace detail {

std::string whole_run_settings_json(const WholeRunSettings& s) {
    nlohmann::ordered_json j;
    j["seed"] = s.seed;
    j["budgets"] = nlohmann::ordered_json::parse(planner_budgets_to_json(s.budgets));
    j["start"] = s.start;
    j["chained"] = s.chained;
    return j.dump();
}

} // namespace detail

namespace {

WholeRunSource source_of(const std::string& key, const std::string& origin) {
    if (key == "sweep") return WholeRunSource::Sweep;
    if (key == "studio") return WholeRunSource::Studio;
    if (key == "cluster") return WholeRunSource::Cluster;
    throw InputError(origin + ": source is '" + shown(key) + "', not sweep, studio or cluster");
}

/// The settings column read back. A cluster run's budgets are its run.json object (the keys it
/// lacks take their defaults); the seed may be stored as a signed 64-bit value (the same bits).
WholeRunSettings read_settings(const std::string& text, const std::string& origin) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        throw InputError(origin + ": damaged settings (not JSON)");
    }
    if (!j.is_object()) throw InputError(origin + ": damaged settings (not a JSON object)");
    WholeRunSettings s;
    if (const auto it = j.find("seed"); it != j.end() && it->is_number_integer())
        s.seed =
            it->is_number_unsigned() ? it->get<std::uint64_t>() : static_cast<std::uint64_t>(it->get<std::int64_t>());
    if (const auto it = j.find("budgets"); it != j.end() && it->is_object()) {
        s.budgets = parse_planner_budgets(it->dump(), origin + ": settings.budgets");
    }
    s.budgets.seed = s.seed;
    if (const auto it = j.find("start"); it != j.end() && it->is_string()) s.start = it->get<std::string>();
    if (const auto it = j.find("chained"); it != j.end() && it->is_boolean()) s.chained = it->get<bool>();
    return s;
}

constexpr const char* kWholeRunColumns =
    "SELECT w.id, w.name, w.source, w.trace, w.topology, w.definition, w.settings, w.cluster_run, "
    "w.cluster_chain, w.created_at, "
    "CASE WHEN w.cluster_run IS NULL THEN (SELECT count(*) FROM whole_run_steps s WHERE s.whole_run = w.id) "
    "ELSE (SELECT count(*) FROM cluster_run_steps c WHERE c.run_id = w.cluster_run AND c.chain = w.cluster_chain) "
    "END FROM whole_runs w ";

WholeRunEntry read_whole_run(sqlite3* db, const std::filesystem::path& file, const Statement& st) {
    WholeRunEntry e;
    e.id = st.int64(0);
    const std::string origin = file.string() + ": whole run " + std::to_string(e.id);
    e.name = st.text(1);
    e.source = source_of(st.text(2), origin);
    e.trace = st.text(3);
    e.topology = st.text(4);
    e.topology_value = parse_topology(st.text(5), origin + " topology");
    e.settings = read_settings(st.text(6), origin);
    e.cluster_run = st.is_null(7) ? 0 : st.int64(7);
    e.cluster_chain = st.is_null(8) ? 0 : static_cast<std::size_t>(st.int64(8));
    e.created_at = st.text(9);
    e.steps = static_cast<std::size_t>(st.int64(10));
    if (e.cluster_run == 0) {
        Statement steps(db, file, "SELECT run_id FROM whole_run_steps WHERE whole_run = ?1 ORDER BY position");
        steps.bind(1, e.id);
        while (steps.step())
            e.runs.push_back(steps.int64(0));
    }
    return e;
}

} // namespace

namespace detail {

std::int64_t insert_whole_run(sqlite3* db, const std::filesystem::path& file, const WholeRunSpec& spec,
                              const std::vector<std::int64_t>& run_ids) {
    if (run_ids.empty()) throw InputError("a whole run needs at least one step");
    if (!spec.name.empty()) check_run_name(spec.name, "whole run");
    std::string trace, topology, definition;
    for (const std::int64_t id : run_ids) {
        Statement st(db, file,
                     "SELECT t.name, tp.name, tp.definition FROM runs r JOIN windows w ON w.id = r.window_id "
                     "JOIN traces t ON t.id = w.trace_id JOIN topologies tp ON tp.id = r.topology_id WHERE r.id = ?1");
        st.bind(1, id);
        if (!st.step()) throw InputError("no run " + std::to_string(id) + " in " + file.string());
        if (trace.empty()) {
            trace = st.text(0);
            topology = st.text(1);
            definition = st.text(2);
        } else if (st.text(0) != trace) {
            throw InputError("run " + std::to_string(id) + " is of trace '" + shown(st.text(0)) + "', not '" +
                             shown(trace) + "'");
        }
    }
    // The stored definition may carry the topology's saved budgets: the whole run keeps the topology alone.
    nlohmann::json def;
    try {
        def = nlohmann::json::parse(definition);
    } catch (const nlohmann::json::exception&) {
        throw InputError(file.string() + ": topology '" + shown(topology) + "': damaged definition");
    }
    if (def.is_object()) def.erase("planner_budgets");
    const std::string topology_json =
        topology_to_json(parse_topology(def.dump(), file.string() + ": topology '" + shown(topology) + "'"));
    Statement ins(db, file,
                  "INSERT INTO whole_runs (name, source, trace, topology, definition, settings, created_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    ins.bind(1, spec.name).bind(2, whole_run_source_key(spec.source)).bind(3, trace).bind(4, topology);
    ins.bind(5, topology_json).bind(6, whole_run_settings_json(spec.settings)).bind(7, utc_now_iso8601());
    ins.run();
    const std::int64_t id = sqlite3_last_insert_rowid(db);
    Statement step(db, file, "INSERT INTO whole_run_steps (whole_run, position, run_id) VALUES (?1, ?2, ?3)");
    for (std::size_t k = 0; k < run_ids.size(); ++k) {
        step.reset();
        step.bind(1, id).bind(2, static_cast<std::int64_t>(k)).bind(3, run_ids[k]);
        step.run();
    }
    return id;
}

} // namespace detail

std::int64_t Library::save_whole_run(const WholeRunSpec& spec, const std::vector<std::int64_t>& run_ids) {
    if (read_only_) throw LibraryReadOnly(path_);
    Transaction tx(db_, path_);
    const std::int64_t id = detail::insert_whole_run(db_, path_, spec, run_ids);
    tx.commit();
    return id;
}

std::vector<WholeRunEntry> Library::whole_runs() const {
    std::vector<WholeRunEntry> out;
    if (schema_version() < 7) return out;
    Statement st(db_, path_, std::string(kWholeRunColumns) + "ORDER BY w.id");
    while (st.step())
        out.push_back(read_whole_run(db_, path_, st));
    return out;
}

WholeRunEntry Library::whole_run(std::int64_t id) const {
    if (schema_version() >= 7) {
        Statement st(db_, path_, std::string(kWholeRunColumns) + "WHERE w.id = ?1");
        st.bind(1, id);
        if (st.step()) return read_whole_run(db_, path_, st);
    }
    throw InputError("no whole run " + std::to_string(id) + " in " + path_.string());
}

void Library::rename_whole_run(std::int64_t id, const std::string& new_name) {
    if (read_only_) throw LibraryReadOnly(path_);
    if (!new_name.empty()) check_run_name(new_name, "whole run");
    Transaction tx(db_, path_);
    Statement up(db_, path_, "UPDATE whole_runs SET name = ?1 WHERE id = ?2");
    up.bind(1, new_name).bind(2, id);
    up.run();
    if (sqlite3_changes(db_) == 0) throw InputError("no whole run " + std::to_string(id) + " in " + path_.string());
    tx.commit();
}

} // namespace routepack::storage
