#pragma once
// Internal to routepack_storage: a thin RAII layer over the SQLite3 C API. Every SQLite error
// becomes an exception carrying sqlite3_errmsg and the library file: InputError for what the user
// can act on (damaged or foreign file, locked, disk full, read-only), std::runtime_error for broken
// contracts (SQL errors, constraint violations our own code should have prevented).
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace routepack::storage::detail {

/// Throws the exception for SQLite result code `rc` (extended codes allowed): "<file>: <what>:
/// <sqlite3_errmsg>" (LibraryReadOnly "<file>: library is read-only (cannot write)" for
/// SQLITE_READONLY; LibraryBusy for SQLITE_BUSY / SQLITE_LOCKED). `db` may
/// be null (then sqlite3_errstr(rc) is used). `what` describes the operation, never SQL text.
[[noreturn]] void throw_sqlite(sqlite3* db, int rc, const std::filesystem::path& file, std::string_view what);

/// Runs one or more SQL statements without results (sqlite3_exec); throws on error.
void exec(sqlite3* db, const std::filesystem::path& file, const char* sql);

/// What a statement does, for error messages ("reading the library", "writing the library",
/// "committing", ...): messages never quote SQL text.
std::string statement_purpose(std::string_view sql);

/// One prepared statement. Bind indices are 1-based, column indices 0-based (as in SQLite).
class Statement {
public:
    Statement(sqlite3* db, const std::filesystem::path& file, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, double value);
    /// Text is copied by SQLite (SQLITE_TRANSIENT).
    Statement& bind(int index, std::string_view text);
    Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
    Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Statement& bind(int index, const std::optional<std::int64_t>& value);
    Statement& bind_null(int index);
    /// Binds bytes as a BLOB (copied; an empty span binds a zero-length blob, not NULL).
    Statement& bind_blob(int index, std::span<const std::uint8_t> bytes);

    /// Advances: true when a row is available, false when done. Throws on error.
    bool step();
    /// Steps a statement that must not return rows (INSERT/UPDATE/DELETE), then resets it.
    void run();
    /// Resets for another execution and clears the bindings.
    void reset();

    bool is_null(int column) const;
    std::int64_t int64(int column) const;
    double real(int column) const;
    std::string text(int column) const;
    /// Bytes of a BLOB column, valid until the next step/reset.
    std::span<const std::uint8_t> blob(int column) const;

private:
    sqlite3* db_;
    std::filesystem::path file_;
    std::string purpose_;
    sqlite3_stmt* stmt_ = nullptr;
};

/// BEGIN IMMEDIATE ... COMMIT; the destructor rolls back unless commit() succeeded, so every
/// exception (InputError, Cancelled, an injected test failure) leaves the file as before.
class Transaction {
public:
    Transaction(sqlite3* db, const std::filesystem::path& file);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    sqlite3* db_;
    std::filesystem::path file_;
    bool open_ = false;
};

/// Names (traces, windows, topologies) are UTF-8 text, as plan files, tables and Python strings need:
/// InputError "<kind> name '<name, escaped>' is not valid UTF-8 (byte 0xNN at index I)" otherwise.
void require_utf8_name(const char* kind, const std::string& name);

/// A name or id as messages echo it: one line, at most 80 characters (util::printable).
std::string shown(const std::string& s);

/// Current UTC time as ISO-8601 ("2025-01-31T12:34:56Z").
std::string utc_now_iso8601();

} // namespace routepack::storage::detail
