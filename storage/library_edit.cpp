// Deleting and renaming traces, windows and saved runs (storage/library.h): one transaction per
// call; foreign keys (ON DELETE CASCADE, migrations 1-3) remove what belongs to the deleted row. A
// run's name is its own column (migration 5): renaming a run touches no plan.
#include "storage/library.h"

#include "core/util/errors.h"
#include "core/util/text.h"
#include "storage/library_internal.h"
#include "storage/sqlite_util.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <sqlite3.h>

namespace routepack::storage {

using detail::shown;
using detail::Statement;
using detail::Transaction;

namespace {

std::int64_t trace_id(sqlite3* db, const std::filesystem::path& file, const std::string& trace) {
    Statement st(db, file, "SELECT id FROM traces WHERE name = ?1");
    st.bind(1, trace);
    if (!st.step()) throw InputError("no trace named '" + shown(trace) + "' in " + file.string());
    return st.int64(0);
}

std::int64_t window_id(sqlite3* db, const std::filesystem::path& file, const std::string& trace,
                       const std::string& window) {
    const std::int64_t t = trace_id(db, file, trace);
    Statement st(db, file, "SELECT id FROM windows WHERE trace_id = ?1 AND name = ?2");
    st.bind(1, t).bind(2, window);
    if (!st.step())
        throw InputError("trace '" + shown(trace) + "' has no window named '" + shown(window) + "' in " +
                         file.string());
    return st.int64(0);
}

void require_run(sqlite3* db, const std::filesystem::path& file, std::int64_t run_id) {
    Statement st(db, file, "SELECT 1 FROM runs WHERE id = ?1");
    st.bind(1, run_id);
    if (!st.step()) throw InputError("no run " + std::to_string(run_id) + " in " + file.string());
}

std::size_t count(sqlite3* db, const std::filesystem::path& file, const char* sql, std::int64_t id) {
    Statement st(db, file, sql);
    st.bind(1, id);
    return st.step() ? static_cast<std::size_t>(st.int64(0)) : 0;
}

Removal count_trace(sqlite3* db, const std::filesystem::path& file, std::int64_t trace, bool measured) {
    Removal r;
    if (measured) // schema 6 on
        r.measured = count(db, file,
                           "SELECT COUNT(*) FROM measured_steps m JOIN windows w ON w.id = m.window_id "
                           "WHERE w.trace_id = ?1",
                           trace);
    r.traces = 1;
    r.windows = count(db, file, "SELECT COUNT(*) FROM windows WHERE trace_id = ?1", trace);
    r.runs = count(db, file, "SELECT COUNT(*) FROM runs r JOIN windows w ON w.id = r.window_id WHERE w.trace_id = ?1",
                   trace);
    r.plans = count(db, file, "SELECT COUNT(*) FROM plans p JOIN windows w ON w.id = p.window_id WHERE w.trace_id = ?1",
                    trace);
    r.samples = count(db, file, "SELECT COUNT(*) FROM samples WHERE trace_id = ?1", trace);
    return r;
}

Removal count_window(sqlite3* db, const std::filesystem::path& file, std::int64_t window, bool measured) {
    Removal r;
    if (measured) r.measured = count(db, file, "SELECT COUNT(*) FROM measured_steps WHERE window_id = ?1", window);
    r.windows = 1;
    r.runs = count(db, file, "SELECT COUNT(*) FROM runs WHERE window_id = ?1", window);
    r.plans = count(db, file, "SELECT COUNT(*) FROM plans WHERE window_id = ?1", window);
    return r;
}

/// The plan a run holds alone (no other run refers to it) is removed with it.
constexpr const char* kOwnPlanOfRun = "SELECT COUNT(*) FROM runs r WHERE r.id = ?1 AND r.plan_id IS NOT NULL AND "
                                      "NOT EXISTS (SELECT 1 FROM runs o WHERE o.plan_id = r.plan_id AND o.id <> r.id)";

Removal count_run(sqlite3* db, const std::filesystem::path& file, std::int64_t run) {
    Removal r;
    r.runs = 1;
    r.plans = count(db, file, kOwnPlanOfRun, run);
    return r;
}

void require_new_name(const char* kind, const std::string& name) {
    if (name.empty())
        throw InputError("", {std::string(kind) + "_name", "", std::string(kind) + " name"}, " must not be empty");
    detail::require_utf8_name(kind, name);
}

/// Number of UTF-8 characters of valid UTF-8 `s` (bytes that do not continue a sequence).
std::size_t utf8_length(const std::string& s) {
    std::size_t n = 0;
    for (const char c : s)
        n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    return n;
}

} // namespace

/// Refuses a run name rename_run does not store (library.h lists the texts); `kind` "run" or
/// "whole run" names the setting ("<kind> name", key "<kind>_name" with '_' for ' ').
void check_run_name(const std::string& name, const std::string& kind) {
    std::string key = kind + "_name";
    std::replace(key.begin(), key.end(), ' ', '_');
    const std::string words = kind + " name";
    const Setting empty{key, "", words};
    if (name.empty()) throw InputError("", empty, " must not be empty");
    detail::require_utf8_name(kind.c_str(), name);
    const Setting named{key, "'" + shown(name) + "'", words + " '" + shown(name) + "'"};
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    if (space(name.front()) || space(name.back()))
        throw InputError("", named, " must not begin or end with white space");
    for (const char c : name)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
            throw InputError("", named, " must not contain control characters");
    if (const std::size_t n = utf8_length(name); n > Library::kMaxRunNameLength)
        throw InputError("", empty,
                         " is " + std::to_string(n) + " characters long, more than " +
                             std::to_string(Library::kMaxRunNameLength));
}

namespace {

/// Sets inputs.<key> = value in every stored plan that `select` (bound to `id`) lists as (plan id,
/// plan_json). The JSON is read and written back in its key order with the indent plan_to_json
/// uses, so only that value changes. InputError "<file>: plan P is damaged (...)" when a plan does
/// not read as a JSON object with an "inputs" object.
void rename_in_plans(sqlite3* db, const std::filesystem::path& file, const char* select, std::int64_t id,
                     const char* key, const std::string& value) {
    std::vector<std::pair<std::int64_t, std::string>> rewritten;
    {
        Statement st(db, file, select);
        st.bind(1, id);
        while (st.step()) {
            const std::int64_t plan = st.int64(0);
            nlohmann::ordered_json j;
            try {
                j = nlohmann::ordered_json::parse(st.text(1));
            } catch (const nlohmann::json::exception& e) {
                throw InputError(file.string() + ": plan " + std::to_string(plan) + " is damaged (" + e.what() +
                                 "); nothing was renamed");
            }
            if (!j.is_object() || !j.contains("inputs") || !j["inputs"].is_object())
                throw InputError(file.string() + ": plan " + std::to_string(plan) +
                                 " is damaged (no inputs object); nothing was renamed");
            j["inputs"][key] = value;
            rewritten.emplace_back(plan, j.dump(2));
        }
    }
    Statement up(db, file, "UPDATE plans SET plan_json = ?1 WHERE id = ?2");
    for (const auto& [plan, json] : rewritten) {
        up.bind(1, json).bind(2, plan);
        up.run();
    }
}

} // namespace

Removal Library::trace_removal(const std::string& trace) const {
    return count_trace(db_, path_, trace_id(db_, path_, trace), schema_version() >= 6);
}

Removal Library::window_removal(const std::string& trace, const std::string& window) const {
    return count_window(db_, path_, window_id(db_, path_, trace, window), schema_version() >= 6);
}

Removal Library::run_removal(std::int64_t run_id) const {
    require_run(db_, path_, run_id);
    return count_run(db_, path_, run_id);
}

Removal Library::delete_trace(const std::string& trace, const std::filesystem::path& trash) {
    if (read_only_) throw LibraryReadOnly(path_);
    const detail::TrashAttachment attached(db_, path_, trash);
    Transaction tx(db_, path_);
    const std::int64_t id = trace_id(db_, path_, trace);
    Removal r = count_trace(db_, path_, id, schema_version() >= 6);
    if (attached.attached()) r.trash_item = detail::trash_rows(db_, path_, "trace", id, "trace '" + shown(trace) + "'");
    Statement del(db_, path_, "DELETE FROM traces WHERE id = ?1");
    del.bind(1, id);
    del.run();
    detail::exec(db_, path_, "DELETE FROM models WHERE id NOT IN (SELECT model_id FROM traces)");
    tx.commit();
    return r;
}

Removal Library::delete_window(const std::string& trace, const std::string& window,
                               const std::filesystem::path& trash) {
    if (read_only_) throw LibraryReadOnly(path_);
    const detail::TrashAttachment attached(db_, path_, trash);
    Transaction tx(db_, path_);
    const std::int64_t id = window_id(db_, path_, trace, window);
    Removal r = count_window(db_, path_, id, schema_version() >= 6);
    if (attached.attached())
        r.trash_item = detail::trash_rows(db_, path_, "window", id,
                                          "window '" + shown(window) + "' of trace '" + shown(trace) + "'");
    Statement del(db_, path_, "DELETE FROM windows WHERE id = ?1");
    del.bind(1, id);
    del.run();
    tx.commit();
    return r;
}

Removal Library::delete_run(std::int64_t run_id, const std::filesystem::path& trash) {
    if (read_only_) throw LibraryReadOnly(path_);
    const detail::TrashAttachment attached(db_, path_, trash);
    Transaction tx(db_, path_);
    require_run(db_, path_, run_id);
    Removal r = count_run(db_, path_, run_id);
    if (attached.attached())
        r.trash_item = detail::trash_rows(db_, path_, "run", run_id, "run " + std::to_string(run_id));
    std::optional<std::int64_t> plan;
    {
        Statement st(db_, path_, "SELECT plan_id FROM runs WHERE id = ?1");
        st.bind(1, run_id);
        if (st.step() && !st.is_null(0)) plan = st.int64(0);
    }
    Statement del(db_, path_, "DELETE FROM runs WHERE id = ?1");
    del.bind(1, run_id);
    del.run();
    if (plan && r.plans > 0) {
        Statement dp(db_, path_, "DELETE FROM plans WHERE id = ?1");
        dp.bind(1, *plan);
        dp.run();
    }
    tx.commit();
    return r;
}

void Library::rename_trace(const std::string& trace, const std::string& new_name) {
    if (read_only_) throw LibraryReadOnly(path_);
    require_new_name("trace", new_name);
    Transaction tx(db_, path_);
    const std::int64_t id = trace_id(db_, path_, trace);
    if (new_name == trace) return;
    {
        Statement taken(db_, path_, "SELECT 1 FROM traces WHERE name = ?1");
        taken.bind(1, new_name);
        if (taken.step()) throw InputError("trace '" + shown(new_name) + "' already exists in " + path_.string());
    }
    Statement up(db_, path_, "UPDATE traces SET name = ?1 WHERE id = ?2");
    up.bind(1, new_name).bind(2, id);
    up.run();
    rename_in_plans(db_, path_,
                    "SELECT p.id, p.plan_json FROM plans p JOIN windows w ON w.id = p.window_id WHERE w.trace_id = ?1",
                    id, "trace", new_name);
    tx.commit();
}

void Library::rename_window(const std::string& trace, const std::string& window, const std::string& new_name) {
    if (read_only_) throw LibraryReadOnly(path_);
    require_new_name("window", new_name);
    Transaction tx(db_, path_);
    const std::int64_t id = window_id(db_, path_, trace, window);
    if (new_name == window) return;
    {
        Statement taken(
            db_, path_,
            "SELECT 1 FROM windows WHERE name = ?1 AND trace_id = (SELECT trace_id FROM windows WHERE id = ?2)");
        taken.bind(1, new_name).bind(2, id);
        if (taken.step())
            throw InputError("trace '" + shown(trace) + "' already has a window named '" + shown(new_name) + "' in " +
                             path_.string());
    }
    Statement up(db_, path_, "UPDATE windows SET name = ?1 WHERE id = ?2");
    up.bind(1, new_name).bind(2, id);
    up.run();
    rename_in_plans(db_, path_, "SELECT id, plan_json FROM plans WHERE window_id = ?1", id, "window", new_name);
    tx.commit();
}

void Library::rename_run(std::int64_t run_id, const std::string& new_name) {
    if (read_only_) throw LibraryReadOnly(path_);
    check_run_name(new_name, "run");
    Transaction tx(db_, path_);
    require_run(db_, path_, run_id);
    Statement up(db_, path_, "UPDATE runs SET name = ?1 WHERE id = ?2");
    up.bind(1, new_name).bind(2, run_id);
    up.run();
    tx.commit();
}

} // namespace routepack::storage
