#include "storage/sqlite_util.h"

#include "core/util/errors.h"
#include "core/util/text.h"
#include "storage/library.h"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace routepack::storage::detail {

void throw_sqlite(sqlite3* db, int rc, const std::filesystem::path& file, std::string_view what) {
    const std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    const std::string prefix = file.string() + ": ";
    switch (rc & 0xff) {
    case SQLITE_NOTADB:
        throw InputError(prefix + "not a RoutePack library (file is not an SQLite database)");
    case SQLITE_READONLY:
        throw LibraryReadOnly(file);
    case SQLITE_CORRUPT:
        throw InputError(prefix + "library is damaged (" + detail + ") while " + std::string(what));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        throw LibraryBusy(prefix + "library is in use by another process (" + detail + ") while " + std::string(what) +
                          "; try again");
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_NOMEM:
    case SQLITE_AUTH:
        throw InputError(prefix + std::string(what) + ": " + detail);
    default:
        throw std::runtime_error(prefix + std::string(what) + ": " + detail);
    }
}

void exec(sqlite3* db, const std::filesystem::path& file, const char* sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
    if (err) sqlite3_free(err); // sqlite3_errmsg(db) still holds the message
    if (rc != SQLITE_OK) throw_sqlite(db, rc, file, statement_purpose(sql));
}

std::string statement_purpose(std::string_view sql) {
    // The first keyword says what the statement does; SQL text itself never reaches a user.
    std::size_t i = 0;
    while (i < sql.size() && (sql[i] == ' ' || sql[i] == '\n' || sql[i] == '\t'))
        ++i;
    std::string word;
    while (i < sql.size() && std::isalpha(static_cast<unsigned char>(sql[i])))
        word.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i++]))));
    if (word == "SELECT" || word == "PRAGMA" || word == "WITH") return "reading the library";
    if (word == "BEGIN") return "starting a transaction";
    if (word == "COMMIT") return "committing";
    if (word == "ROLLBACK") return "rolling back";
    return "writing the library";
}

Statement::Statement(sqlite3* db, const std::filesystem::path& file, std::string_view sql)
    : db_(db), file_(file), purpose_(statement_purpose(sql)) {
    const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) throw_sqlite(db, rc, file, purpose_ + " (preparing a statement)");
}

Statement::~Statement() {
    sqlite3_finalize(stmt_);
}

namespace {
void check_bind(sqlite3* db, int rc, const std::filesystem::path& file) {
    if (rc != SQLITE_OK) throw_sqlite(db, rc, file, "binding a parameter");
}
} // namespace

Statement& Statement::bind(int index, std::int64_t value) {
    check_bind(db_, sqlite3_bind_int64(stmt_, index, value), file_);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    check_bind(db_, sqlite3_bind_double(stmt_, index, value), file_);
    return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
    check_bind(db_, sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8), file_);
    return *this;
}

Statement& Statement::bind(int index, const std::optional<std::int64_t>& value) {
    return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
    check_bind(db_, sqlite3_bind_null(stmt_, index), file_);
    return *this;
}

Statement& Statement::bind_blob(int index, std::span<const std::uint8_t> bytes) {
    static const std::uint8_t empty = 0;
    const void* data = bytes.empty() ? &empty : bytes.data();
    check_bind(db_, sqlite3_bind_blob64(stmt_, index, data, bytes.size(), SQLITE_TRANSIENT), file_);
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_sqlite(db_, rc, file_, purpose_);
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::int64_t Statement::int64(int column) const {
    return sqlite3_column_int64(stmt_, column);
}
double Statement::real(int column) const {
    return sqlite3_column_double(stmt_, column);
}

std::string Statement::text(int column) const {
    const auto* p = sqlite3_column_text(stmt_, column);
    const int n = sqlite3_column_bytes(stmt_, column);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

std::span<const std::uint8_t> Statement::blob(int column) const {
    const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt_, column));
    const int n = sqlite3_column_bytes(stmt_, column);
    if (!p) return {};
    return {p, static_cast<std::size_t>(n)};
}

Transaction::Transaction(sqlite3* db, const std::filesystem::path& file) : db_(db), file_(file) {
    exec(db_, file_, "BEGIN IMMEDIATE");
    open_ = true;
}

Transaction::~Transaction() {
    // Errors are ignored: when ROLLBACK fails the connection rolls back on close anyway, and a
    // killed process leaves an uncommitted WAL tail that the next open discards.
    if (open_ && !sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    exec(db_, file_, "COMMIT");
    open_ = false;
}

std::string shown(const std::string& s) {
    return util::printable(s);
}

void require_utf8_name(const char* kind, const std::string& name) {
    const std::size_t bad = util::utf8_invalid_at(name);
    if (bad == std::string::npos) return;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(name[bad]));
    throw InputError(std::string(kind) + " name '" + util::printable(name) + "' is not valid UTF-8 (byte " + byte +
                     " at index " + std::to_string(bad) + ")");
}

std::string utc_now_iso8601() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

} // namespace routepack::storage::detail
