#pragma once
// Internal to routepack_storage: the numbered schema migrations compiled into the library.
// The schema version of a file is PRAGMA user_version (0 = empty file, N = migrations 1..N
// applied); PRAGMA application_id marks the file as a RoutePack library.
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <span>

namespace routepack::storage::detail {

/// PRAGMA application_id of every RoutePack library: 'RPck' in ASCII.
inline constexpr std::int32_t kApplicationId = 0x5250436B;

/// One migration: running `sql` on a file at version `version - 1` brings it to `version`.
struct Migration {
    int version;
    const char* summary; ///< one line, for logs and reports
    const char* sql;
};

/// All migrations in ascending order (versions 1..N, no gaps).
std::span<const Migration> migrations();

/// The newest version (the last migration's number).
int latest_schema_version();

/// Applies every migration newer than the file's user_version in ONE transaction (BEGIN
/// IMMEDIATE; the version is re-read inside it, so two processes opening the same new file do not
/// both migrate), sets user_version (and application_id) and commits; rolls back on any error.
/// Expects foreign_keys already configured. Returns the version after migrating. Throws
/// InputError naming `file` when the file is newer than this build, std::runtime_error when a
/// migration's SQL fails.
int apply_migrations(sqlite3* db, const std::filesystem::path& file);

} // namespace routepack::storage::detail
