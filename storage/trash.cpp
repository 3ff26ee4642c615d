// Deletions kept for undo (storage/library.h "Deleting and renaming"): before delete_trace,
// delete_window or delete_run removes its rows, they are copied into a trash file (an SQLite file of
// the caller's, attached as schema "trash" for the call), one item per deletion; restore_deleted
// copies an item's rows back in one transaction, parents before children, with their ids.
#include "storage/library.h"

#include "core/util/errors.h"
#include "core/util/text.h"
#include "storage/library_internal.h"
#include "storage/sqlite_util.h"

#include <sqlite3.h>

#include <string>
#include <vector>

namespace routepack::storage {

using detail::shown;
using detail::Statement;
using detail::Transaction;

namespace {

/// How a trashed table's rows go back.
enum class Back {
    Insert,       ///< inserted with their ids
    InsertIgnore, ///< inserted unless a row with the key is there (a shared model, a whole run that kept steps)
    Relink        ///< measured_plans unlinked by ON DELETE SET NULL: their run_id set again
};

/// One table of a deletion: the rows it removes (WHERE over ?1, the trace, window or run id).
struct TrashTable {
    const char* table;
    std::string where;
    Back back = Back::Insert;
};

/// The rows of windows `ws` (a subquery of window ids over ?1) and everything below them, in restore
/// order (parents first).
std::vector<TrashTable> window_tables(const std::string& ws) {
    const std::string runs = "SELECT id FROM runs WHERE window_id IN (" + ws + ")";
    return {{"windows", "id IN (" + ws + ")"},
            {"window_samples", "window_id IN (" + ws + ")"},
            {"plans", "window_id IN (" + ws + ")"},
            {"runs", "window_id IN (" + ws + ")"},
            {"run_results", "run_id IN (" + runs + ")"},
            {"annealing_history", "run_id IN (" + runs + ")"},
            {"whole_runs", "id IN (SELECT whole_run FROM whole_run_steps WHERE run_id IN (" + runs + "))",
             Back::InsertIgnore},
            {"whole_run_steps", "run_id IN (" + runs + ")"},
            {"measured_steps", "window_id IN (" + ws + ")"},
            {"measured_plans", "measured_id IN (SELECT id FROM measured_steps WHERE window_id IN (" + ws + "))"}};
}

std::vector<TrashTable> tables_of(const std::string& kind) {
    if (kind == "run")
        return {{"plans",
                 "id IN (SELECT plan_id FROM runs WHERE id = ?1) AND id NOT IN (SELECT plan_id FROM runs WHERE id <> "
                 "?1 AND plan_id IS NOT NULL)"},
                {"runs", "id = ?1"},
                {"run_results", "run_id = ?1"},
                {"annealing_history", "run_id = ?1"},
                {"whole_runs", "id IN (SELECT whole_run FROM whole_run_steps WHERE run_id = ?1)", Back::InsertIgnore},
                {"whole_run_steps", "run_id = ?1"},
                {"measured_plans", "run_id = ?1", Back::Relink}};
    if (kind == "window") return window_tables("SELECT ?1");
    std::vector<TrashTable> t = {
        {"models",
         "id IN (SELECT model_id FROM traces WHERE id = ?1) AND id NOT IN (SELECT model_id FROM traces WHERE id <> ?1)",
         Back::InsertIgnore},
        {"traces", "id = ?1"},
        {"source_files", "trace_id = ?1"},
        {"samples", "trace_id = ?1"},
        {"sample_routes", "sample_ref IN (SELECT id FROM samples WHERE trace_id = ?1)"},
        {"aggregate_totals", "trace_id = ?1"}};
    for (TrashTable& w : window_tables("SELECT id FROM windows WHERE trace_id = ?1"))
        t.push_back(std::move(w));
    return t;
}

/// The columns of main table `table`, comma-separated and quoted.
std::string columns_of(sqlite3* db, const std::filesystem::path& file, const std::string& table) {
    Statement st(db, file, "SELECT name FROM pragma_table_info(?1, 'main') ORDER BY cid");
    st.bind(1, table);
    std::string cols;
    while (st.step())
        cols += (cols.empty() ? "\"" : ", \"") + st.text(0) + "\"";
    return cols;
}

} // namespace

namespace detail {

TrashAttachment::TrashAttachment(sqlite3* db, const std::filesystem::path& file, const std::filesystem::path& trash)
    : db_(db), file_(file) {
    if (trash.empty()) return;
    // ATTACH opens with the library connection's flags, which need not allow creating a file.
    if (!std::filesystem::exists(trash)) {
        sqlite3* created = nullptr;
        const int rc = sqlite3_open_v2(trash.c_str(), &created, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
        sqlite3_close(created);
        if (rc != SQLITE_OK) throw InputError(trash.string() + ": cannot create the trash file");
    }
    Statement at(db, file, "ATTACH DATABASE ?1 AS trash");
    at.bind(1, trash.string());
    at.run();
    attached_ = true;
    exec(db, file,
         "CREATE TABLE IF NOT EXISTS trash.items (id INTEGER PRIMARY KEY AUTOINCREMENT, library TEXT NOT NULL, kind "
         "TEXT NOT "
         "NULL, entity INTEGER NOT NULL, what TEXT NOT NULL, deleted_at TEXT NOT NULL)");
}

TrashAttachment::~TrashAttachment() {
    if (attached_) sqlite3_exec(db_, "DETACH DATABASE trash", nullptr, nullptr, nullptr);
}

std::int64_t trash_rows(sqlite3* db, const std::filesystem::path& file, const std::string& kind, std::int64_t entity,
                        const std::string& what) {
    Statement item(db, file,
                   "INSERT INTO trash.items (library, kind, entity, what, deleted_at) VALUES (?1, ?2, ?3, ?4, ?5)");
    item.bind(1, std::filesystem::absolute(file).lexically_normal().string()).bind(2, kind).bind(3, entity);
    item.bind(4, what).bind(5, utc_now_iso8601());
    item.run();
    const std::int64_t id = sqlite3_last_insert_rowid(db);
    for (const TrashTable& t : tables_of(kind)) {
        const std::string table = t.table;
        exec(db, file,
             ("CREATE TABLE IF NOT EXISTS trash.\"" + table + "\" AS SELECT 0 AS trash_item, * FROM main.\"" + table +
              "\" WHERE 0")
                 .c_str());
        Statement copy(db, file,
                       "INSERT INTO trash.\"" + table + "\" SELECT ?2, * FROM main.\"" + table + "\" WHERE " + t.where);
        copy.bind(1, entity).bind(2, id);
        copy.run();
    }
    return id;
}

} // namespace detail

std::string Library::restore_deleted(const std::filesystem::path& trash, std::int64_t item) {
    if (read_only_) throw LibraryReadOnly(path_);
    detail::TrashAttachment attached(db_, path_, trash);
    Transaction tx(db_, path_);
    std::string kind, what;
    {
        Statement st(db_, path_, "SELECT library, kind, what FROM trash.items WHERE id = ?1");
        st.bind(1, item);
        if (!st.step())
            throw InputError("nothing to restore: item " + std::to_string(item) + " is not in " + trash.string());
        if (st.text(0) != std::filesystem::absolute(path_).lexically_normal().string())
            throw InputError("cannot restore " + st.text(2) + ": it was deleted from " + st.text(0) + ", not " +
                             path_.string());
        kind = st.text(1);
        what = st.text(2);
    }
    try {
        for (const TrashTable& t : tables_of(kind)) {
            const std::string table = t.table, cols = columns_of(db_, path_, table);
            const std::string from = "FROM trash.\"" + table + "\" WHERE trash_item = ?1";
            std::string sql;
            if (t.back == Back::Relink)
                sql = "UPDATE main.measured_plans SET run_id = t.run_id FROM (SELECT measured_id, position, run_id " +
                      from +
                      ") AS t WHERE measured_plans.measured_id = t.measured_id AND measured_plans.position = "
                      "t.position";
            else
                sql = std::string(t.back == Back::InsertIgnore ? "INSERT OR IGNORE" : "INSERT") + " INTO main.\"" +
                      table + "\" (" + cols + ") SELECT " + cols + " " + from;
            Statement st(db_, path_, sql);
            st.bind(1, item);
            st.run();
        }
    } catch (const InputError&) {
        throw;
    } catch (const std::exception& e) {
        throw InputError("cannot restore " + what + ": the library changed since it was deleted (" + e.what() + ")");
    }
    for (const TrashTable& t : tables_of(kind)) {
        Statement del(db_, path_, std::string("DELETE FROM trash.\"") + t.table + "\" WHERE trash_item = ?1");
        del.bind(1, item);
        del.run();
    }
    Statement del(db_, path_, "DELETE FROM trash.items WHERE id = ?1");
    del.bind(1, item);
    del.run();
    tx.commit();
    return what;
}

} // namespace routepack::storage
