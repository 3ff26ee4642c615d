// The trace library (storage/library.h): open + migrate + check, atomic imports, queries, windows.
#include "storage/library.h"

#include "core/util/errors.h"
#include "core/util/json_field.h"
#include "core/util/text.h"
#include "storage/counts_codec.h"
#include "storage/library_internal.h"
#include "storage/migrations.h"
#include "storage/sqlite_util.h"

#include <nlohmann/json.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>

namespace routepack::storage {

using detail::shown;
using detail::Statement;
using detail::Transaction;

int supported_schema_version() {
    return detail::latest_schema_version();
}

namespace {

constexpr int kBusyTimeoutMs = 5000;

[[noreturn]] void not_sqlite(const std::filesystem::path& file) {
    throw InputError(file.string() + ": not a RoutePack library (file is not an SQLite database)");
}

/// Refuses an existing non-empty file whose first 16 bytes are not the SQLite header, before
/// SQLite (and its WAL/SHM side files) ever touch it.
void check_sqlite_header(const std::filesystem::path& file) {
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec))
        throw InputError(file.string() + ": is a folder, not a RoutePack library file");
    const auto size = std::filesystem::file_size(file, ec);
    if (ec || size == 0) return; // unreadable: SQLite reports it; empty: a new library
    static constexpr char kMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                        'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
    std::ifstream in(file, std::ios::binary);
    char head[16] = {};
    in.read(head, sizeof head);
    if (in.gcount() != static_cast<std::streamsize>(sizeof head) || !std::equal(head, head + 16, kMagic))
        not_sqlite(file);
}

int pragma_int(sqlite3* db, const std::filesystem::path& file, const char* pragma) {
    Statement st(db, file, std::string("PRAGMA ") + pragma);
    return st.step() ? static_cast<int>(st.int64(0)) : 0;
}

std::string hex32(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}

/// `file` as the path part of an SQLite URI ("file:<path>?..."): every byte outside the
/// unreserved set and '/' percent-encoded.
std::string uri_path(const std::filesystem::path& file) {
    static constexpr char hex[] = "0123456789ABCDEF";
    const std::string p = std::filesystem::absolute(file).string();
    std::string out;
    for (const char ch : p) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(ch);
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

/// Identifies the file before anything is written to it: newer schema, another program's
/// application id or tables.
void check_identity(sqlite3* db, const std::filesystem::path& file) {
    const int version = pragma_int(db, file, "user_version");
    const int app_id = pragma_int(db, file, "application_id");
    if (version < 0)
        throw InputError(file.string() + ": not a RoutePack library (SQLite schema version " + std::to_string(version) +
                         " is negative; RoutePack libraries count 1, 2, ...)");
    if (version > detail::latest_schema_version())
        throw InputError(file.string() + ": library schema version " + std::to_string(version) +
                         " is newer than this build supports (" + std::to_string(detail::latest_schema_version()) +
                         "); use a newer RoutePack Studio");
    if (app_id != 0 && app_id != detail::kApplicationId)
        throw InputError(file.string() + ": not a RoutePack library (SQLite application id " +
                         hex32(static_cast<std::uint32_t>(app_id)) + " belongs to another program)");
    if (version > 0 && app_id == 0)
        throw InputError(file.string() + ": not a RoutePack library (SQLite database with schema version " +
                         std::to_string(version) + " but no RoutePack application id)");
    if (version == 0) {
        Statement st(db, file,
                     "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                     "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name");
        std::string names;
        int n = 0;
        while (st.step()) {
            if (n < 5) names += (n ? ", " : "") + st.text(0);
            ++n;
        }
        if (n > 0) {
            if (n > 5) names += ", ...";
            throw InputError(file.string() + ": not a RoutePack library (SQLite database with " + std::to_string(n) +
                             " tables of another program: " + names + ")");
        }
    }
}

[[noreturn]] void refuse_wal(const std::filesystem::path& file, const std::string& inner) {
    std::string why = inner;
    if (why.rfind(file.string() + ": ", 0) == 0) why.erase(0, file.string().size() + 2);
    throw InputError(file.string() + ": cannot be read with the write-ahead log beside it (" + file.string() +
                     "-wal): " + why +
                     "; nothing was changed (if that -wal file belongs to another database, move it "
                     "away)");
}

/// Opens `file` read-only through the -wal beside it and checks its identity (check_identity);
/// refuse_wal when that fails. Changes no file.
void probe_through_wal(const std::filesystem::path& file) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
    struct Closer {
        sqlite3* db;
        ~Closer() { sqlite3_close_v2(db); }
    } closer{raw};
    if (rc != SQLITE_OK) return; // the read-write open reports it
    sqlite3_extended_result_codes(raw, 1);
    sqlite3_db_config(raw, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    sqlite3_busy_timeout(raw, kBusyTimeoutMs);
    try {
        check_identity(raw, file);
    } catch (const LibraryBusy&) {
        throw;
    } catch (const InputError& e) {
        refuse_wal(file, e.what());
    }
}

/// The writers' lock file beside a library: "<file>-lock". SQLite never opens it, so closing its
/// descriptor never drops SQLite's own POSIX locks on the library (closing any descriptor of the
/// library file itself would).
std::filesystem::path writer_lock_path(const std::filesystem::path& file) {
    // One lock per library file, whatever path names it: symlinks and relative paths are resolved
    // first (the last component too, when it is a symlink), so that every writer meets one lock.
    std::error_code ec;
    std::filesystem::path real = std::filesystem::weakly_canonical(file, ec);
    if (ec) real = std::filesystem::absolute(file, ec);
    return real.string() + "-lock";
}

/// Takes flock(`op`: LOCK_SH or LOCK_EX) on the writers' lock file of `file`, creating the lock
/// file when absent. Waits up to `timeout_ms` for a holder of a conflicting lock (polling, so
/// that a connection of this very process can never wait forever), then LibraryBusy. Retries
/// when the lock file it locked was removed or replaced meanwhile (the last writer removes it on
/// close). Returns the descriptor.
int take_writer_lock(const std::filesystem::path& file, int op, int timeout_ms) {
    const std::filesystem::path path = writer_lock_path(file);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        // Never through a symlink; a lock file made by another user may be read-only to us, and
        // flock works on a read-only descriptor.
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0 && errno == EACCES) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            throw InputError(file.string() + ": cannot take the library's writer lock (" + path.string() + ": " +
                             (errno == ELOOP ? std::string("is a symbolic link") : std::strerror(errno)) + ")");
        bool locked = false;
        while (!(locked = ::flock(fd, op | LOCK_NB) == 0) && (errno == EWOULDBLOCK || errno == EINTR) &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (!locked) {
            const int err = errno;
            ::close(fd);
            if (err == EWOULDBLOCK || err == EINTR)
                throw LibraryBusy(file.string() + ": library is in use by another process (its writer lock " +
                                  path.string() + " is held) while opening it; try again");
            throw InputError(file.string() + ": cannot take the library's writer lock (" + path.string() + ": " +
                             std::strerror(err) + ")");
        }
        struct stat held {};
        struct stat named {};
        if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino)
            return fd;
        ::close(fd); // removed or replaced while we waited: lock the file that is there now
    }
}

/// Releases a writer lock taken by take_writer_lock; the last holder removes the lock file (it can
/// only take the lock exclusively when no other writer holds it).
void release_writer_lock(const std::filesystem::path& file, int fd) {
    if (fd < 0) return;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(writer_lock_path(file).c_str());
    ::close(fd);
}

void quick_check(sqlite3* db, const std::filesystem::path& file) {
    Statement st(db, file, "PRAGMA quick_check");
    std::vector<std::string> problems;
    try {
        while (st.step()) {
            std::string line = st.text(0);
            if (line != "ok") problems.push_back(std::move(line));
        }
    } catch (const InputError&) {
        // A damaged page can stop quick_check itself (SQLITE_CORRUPT) instead of being reported.
        if ((sqlite3_errcode(db) & 0xff) != SQLITE_CORRUPT) throw;
        problems.emplace_back(sqlite3_errmsg(db));
    }
    if (!problems.empty()) {
        std::string msg = file.string() + ": library is damaged (quick_check: " + problems.front();
        if (problems.size() > 1) msg += "; " + std::to_string(problems.size() - 1) + " more problems";
        throw InputError(msg + ")");
    }
}

/// Integer column `col` in lo..hi, never narrowed: InputError "<file>: <where>: damaged <row>
/// (<field> = <v> is outside lo..hi)".
std::int64_t checked_int(const Statement& st, int col, std::int64_t lo, std::int64_t hi,
                         const std::filesystem::path& file, const std::string& where, const char* row,
                         const char* field) {
    const std::int64_t v = st.int64(col);
    if (v < lo || v > hi)
        throw InputError(file.string() + ": " + where + ": damaged " + row + " (" + field + " = " + std::to_string(v) +
                         " is outside " + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    return v;
}

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

ModelDescription read_model(const Statement& st, int col, const std::filesystem::path& file, const std::string& trace) {
    ModelDescription m;
    const std::string where = "trace '" + shown(trace) + "'";
    m.name = st.text(col);
    m.num_hidden_layers =
        static_cast<int>(checked_int(st, col + 1, 1, kIntMax, file, where, "model row", "num_hidden_layers"));
    m.experts = static_cast<int>(checked_int(st, col + 2, 1, kIntMax, file, where, "model row", "experts"));
    m.top_k = static_cast<int>(checked_int(st, col + 3, 0, kIntMax, file, where, "model row", "top_k"));
    nlohmann::json layers;
    try {
        layers = nlohmann::json::parse(st.text(col + 4));
    } catch (const nlohmann::json::exception& e) {
        throw InputError(file.string() + ": trace '" + shown(trace) + "': damaged model row (moe_layers: " + e.what() +
                         ")");
    }
    const util::JsonField f(layers, file.string() + ": trace '" + shown(trace) + "' model row", "moe_layers");
    const std::size_t n = f.list("a list of layer ids");
    for (std::size_t i = 0; i < n; ++i)
        m.moe_layers.push_back(static_cast<int>(f[i].integer(0, kIntMax)));
    m.source = st.text(col + 5);
    return m;
}

constexpr const char* kTraceColumns =
    "SELECT t.id, t.name, t.format, t.load_only, t.sample_count, t.fingerprint, t.imported_at, t.notes, "
    "m.name, m.num_hidden_layers, m.experts, m.top_k, m.moe_layers, m.source "
    "FROM traces t JOIN models m ON m.id = t.model_id ";

TraceEntry read_trace_entry(const Statement& st, const std::filesystem::path& file) {
    TraceEntry t;
    t.id = st.int64(0);
    t.name = st.text(1);
    t.format = st.text(2);
    t.load_only = st.int64(3) != 0;
    t.samples = static_cast<std::size_t>(checked_int(st, 4, 0, std::numeric_limits<std::int64_t>::max(), file,
                                                     "trace '" + shown(t.name) + "'", "trace row", "sample_count"));
    t.fingerprint = st.text(5);
    t.imported_at = st.text(6);
    try {
        t.notes = nlohmann::json::parse(st.text(7)).get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
        throw InputError(file.string() + ": trace '" + shown(t.name) + "': damaged notes (" + e.what() + ")");
    }
    t.model = read_model(st, 8, file, t.name);
    return t;
}

TraceEntry find_trace(sqlite3* db, const std::filesystem::path& file, const std::string& name) {
    Statement st(db, file, std::string(kTraceColumns) + "WHERE t.name = ?1");
    st.bind(1, name);
    if (!st.step()) throw InputError("no trace named '" + shown(name) + "' in " + file.string());
    return read_trace_entry(st, file);
}

void require_samples(const TraceEntry& t, const std::filesystem::path& file, const std::string& what) {
    if (t.load_only)
        throw InputError("trace '" + shown(t.name) + "' in " + file.string() +
                         " is load-only (per-layer expert totals, no samples): " + what);
}

/// Columns of a sample row, in the order read_sample expects (prefix with the table alias s).
constexpr const char* kSampleColumns =
    "s.sample_id, s.length, s.routed_rows, s.prompt_len, s.request_id, s.group_id, s.source_file, "
    "s.length_rule, s.missing_routes, s.counts";

/// "SELECT <kSampleColumns>, <routes> FROM <from>": the routes column is the sample's sample_routes blob
/// (NULL when it has none), or NULL throughout in a library older than schema version 3 (opened
/// read-only as it is). `from` names the samples table s.
std::string select_samples(int schema_version, const std::string& from, RouteLoading routes = RouteLoading::Load) {
    if (schema_version < 3 || routes == RouteLoading::Skip)
        return std::string("SELECT ") + kSampleColumns + ", NULL FROM " + from;
    return std::string("SELECT ") + kSampleColumns + ", r.routes FROM " + from +
           " LEFT JOIN sample_routes r ON r.sample_ref = s.id";
}

/// Reads one sample row (select_samples) into trace.samples, appends its counts and, when the row has
/// them, its routes (trace.routes stays empty while no sample has routes).
void read_sample(const Statement& st, Trace& trace, const std::filesystem::path& file, const std::string& name) {
    SampleInfo info;
    info.id = st.text(0);
    info.length = st.int64(1);
    info.routed_rows = st.int64(2);
    if (!st.is_null(3)) info.prompt_len = st.int64(3);
    info.request_id = st.text(4);
    info.group = st.text(5);
    info.source_file = st.text(6);
    const std::string rule = st.text(7);
    if (!detail::parse_length_rule_key(rule, info.length_rule))
        throw InputError(file.string() + ": trace '" + shown(name) + "' sample '" + shown(info.id) +
                         "': unknown length rule '" + shown(rule) + "'");
    info.missing_routes = st.int64(8);
    // Plans, tables and Python strings are UTF-8: a sample stored by an older import from a file
    // name that was not is refused here, before any planning.
    const std::pair<const char*, const std::string*> texts[] = {
        {"id", &info.id}, {"request_id", &info.request_id}, {"group", &info.group}, {"source_file", &info.source_file}};
    for (const auto& [field, text] : texts)
        if (routepack::util::utf8_invalid_at(*text) != std::string::npos)
            throw InputError(file.string() + ": trace '" + shown(name) + "' sample '" + shown(info.id) + "': " + field +
                             " is not valid UTF-8 (an older import took it from a file name that is not UTF-8); "
                             "re-import the trace from renamed files");
    const std::size_t stride = trace.stride();
    const std::size_t at = trace.counts.size();
    trace.counts.resize(at + stride);
    try {
        detail::decode_counts(st.blob(9), std::span<std::uint32_t>(trace.counts.data() + at, stride));
    } catch (const detail::BlobError& e) {
        throw InputError(file.string() + ": trace '" + shown(name) + "' sample '" + shown(info.id) +
                         "': damaged counts (" + e.what() + ")");
    }
    if (!st.is_null(10)) {
        SampleRoutes routes;
        try {
            routes = detail::decode_routes(st.blob(10), info.routed_rows, trace.model.num_moe_layers(),
                                           trace.model.top_k, trace.model.experts);
        } catch (const detail::BlobError& e) {
            throw InputError(file.string() + ": trace '" + shown(name) + "' sample '" + shown(info.id) +
                             "': damaged routes (" + e.what() + ")");
        }
        trace.routes.resize(trace.samples.size());
        trace.routes.push_back(std::move(routes));
    } else if (!trace.routes.empty()) {
        trace.routes.emplace_back();
    }
    trace.samples.push_back(std::move(info));
}

Trace empty_trace(const TraceEntry& t) {
    Trace trace;
    trace.model = t.model;
    trace.format = t.format;
    return trace;
}

std::int64_t find_window_id(sqlite3* db, const std::filesystem::path& file, const TraceEntry& t,
                            const std::string& window) {
    Statement st(db, file, "SELECT id FROM windows WHERE trace_id = ?1 AND name = ?2");
    st.bind(1, t.id).bind(2, window);
    if (!st.step())
        throw InputError("trace '" + shown(t.name) + "' has no window named '" + shown(window) + "' in " +
                         file.string());
    return st.int64(0);
}

} // namespace

Library::Library(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}

Library::~Library() {
    if (db_) sqlite3_close_v2(db_);
    release_writer_lock(path_, writer_lock_fd_);
}

void Library::remove_unused(const std::filesystem::path& file) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(file, ec))) return;
    const int fd = take_writer_lock(file, LOCK_EX, kBusyTimeoutMs);
    for (const char* side : {"", "-wal", "-shm"})
        std::filesystem::remove(file.string() + side, ec);
    ::unlink(writer_lock_path(file).c_str());
    ::close(fd);
}

bool Library::discard_if_created_and_empty() {
    if (!created_ || !db_ || writer_lock_fd_ < 0) return false;
    // Exclusive only when no other writer, of this process or another, has the library open.
    if (::flock(writer_lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        ::flock(writer_lock_fd_, LOCK_SH); // a conversion that failed may have dropped the shared lock
        return false;
    }
    bool empty = false;
    try {
        Statement st(db_, path_,
                     "SELECT (SELECT count(*) FROM traces) + (SELECT count(*) FROM topologies) + "
                     "(SELECT count(*) FROM runs) + (SELECT count(*) FROM cluster_runs)");
        empty = st.step() && st.int64(0) == 0;
    } catch (const std::exception&) {
        empty = false; // unreadable now: keep it
    }
    if (!empty) {
        ::flock(writer_lock_fd_, LOCK_SH);
        return false;
    }
    sqlite3_close_v2(db_);
    db_ = nullptr;
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    const char* sides[] = {"-wal", "-shm"};
    for (int k = 0; k < 2; ++k)
        if (!side_files_existed_[k]) std::filesystem::remove(path_.string() + sides[k], ec);
    ::unlink(writer_lock_path(path_).c_str());
    ::close(writer_lock_fd_);
    writer_lock_fd_ = -1;
    return true;
}

void Library::set_busy_timeout_ms(int ms) {
    busy_timeout_ms_ = std::max(0, ms);
    sqlite3_busy_timeout(db_, busy_timeout_ms_);
}

std::unique_ptr<Library> Library::open(const std::filesystem::path& file, bool create) {
    return open(file, create ? OpenMode::Create : OpenMode::ReadWrite);
}

std::unique_ptr<Library> Library::open(const std::filesystem::path& file, OpenMode mode) {
    const bool in_memory = file == ":memory:";
    const bool writable = mode != OpenMode::ReadOnly;
    std::error_code ec;
    if (in_memory && !writable)
        throw InputError(":memory:: an in-memory library has nothing to read; give a library file");
    if (!in_memory && writable) {
        // Refuse before SQLite touches anything: a read-only file opens silently read-only and
        // a read-only folder cannot hold the -wal/-shm files; both would fail at the first
        // write and leave side files behind.
        const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
        const bool exists = std::filesystem::exists(file, ec);
        if (exists && ::access(file.c_str(), W_OK) != 0) throw LibraryReadOnly(file);
        if (::access(dir.c_str(), W_OK) != 0) {
            if (exists) throw LibraryReadOnly(file);
            if (::access(dir.c_str(), F_OK) != 0)
                throw InputError(file.string() + ": cannot create library (no folder " + dir.string() + ")");
            throw InputError(file.string() + ": cannot create library (folder " + dir.string() + " is read-only)");
        }
    }
    // Writers hold the writer lock shared for the connection's life; the one open that creates
    // the file holds it exclusively until the schema is in place, so that no other writer sees a
    // half-made library and no check-then-create or check-then-remove can race.
    int lock_fd = -1;
    bool created = false;
    bool sides_existed[2] = {};
    struct LockGuard {
        const std::filesystem::path& file;
        int& fd;
        bool& created;
        bool* sides_existed;
        bool armed = true;
        ~LockGuard() {
            if (!armed || fd < 0) return;
            if (created) { // a file this open made and could not turn into a library: remove it
                std::error_code rec;
                std::filesystem::remove(file, rec);
                const char* sides[] = {"-wal", "-shm"};
                for (int k = 0; k < 2; ++k)
                    if (!sides_existed[k]) std::filesystem::remove(file.string() + sides[k], rec);
            }
            release_writer_lock(file, fd);
        }
    } lock_guard{file, lock_fd, created, sides_existed};
    if (!in_memory && writable) {
        if (mode == OpenMode::Create && !std::filesystem::exists(std::filesystem::symlink_status(file, ec))) {
            lock_fd = take_writer_lock(file, LOCK_EX, kBusyTimeoutMs);
            sides_existed[0] = std::filesystem::exists(file.string() + "-wal", ec) || ec;
            sides_existed[1] = std::filesystem::exists(file.string() + "-shm", ec) || ec;
            const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd >= 0) {
                created = true;
                ::close(fd); // nothing of SQLite's is open on this new file yet
            } else if (errno != EEXIST) {
                throw InputError(file.string() + ": cannot create library (" + std::strerror(errno) + ")");
            } else if (::flock(lock_fd, LOCK_SH) != 0) { // another process made it first: a writer like any other
                throw InputError(file.string() + ": cannot take the library's writer lock (" + std::strerror(errno) +
                                 ")");
            }
        } else {
            lock_fd = take_writer_lock(file, LOCK_SH, kBusyTimeoutMs);
        }
    }
    if (!in_memory) {
        if (!std::filesystem::exists(file, ec)) {
            if (mode != OpenMode::Create) throw MissingFileError(file.string() + ": no such library", file);
        } else {
            check_sqlite_header(file);
            if (!std::filesystem::is_regular_file(file, ec))
                throw InputError(file.string() + ": not a regular file, not a RoutePack library file");
            // Only Create turns an empty file into a library: opening one that exists is never a
            // way to make a library by accident (e.g. a file truncated by a full disk).
            if (mode != OpenMode::Create && std::filesystem::file_size(file, ec) == 0 && !ec)
                throw InputError(file.string() + ": not a RoutePack library (empty file)");
        }
    }
    if (writable && !in_memory && std::filesystem::exists(file.string() + "-wal", ec) &&
        std::filesystem::file_size(file, ec) > 0 && !ec) {
        // A read-write connection replays and checkpoints the -wal beside the file into it; when
        // that -wal belongs to another database the library would be overwritten. Look through a
        // read-only connection first (which changes nothing) and refuse what does not read as a
        // RoutePack library.
        probe_through_wal(file);
    }
    std::string open_name = file.string();
    int flags = SQLITE_OPEN_READWRITE | (mode == OpenMode::Create ? SQLITE_OPEN_CREATE : 0);
    const std::filesystem::path wal = file.string() + "-wal";
    bool through_wal = false; // a read-only open that reads the -wal file beside the library
    if (!writable && !in_memory) {
        // Reads only, through a read-only connection: it never writes the library file (a
        // read-write connection, even with query_only, checkpoints the -wal beside it into the
        // file at close, and that -wal may belong to another database). Without a -wal file the
        // file holds every committed change and is read as immutable, so that SQLite creates no
        // -wal/-shm (and needs none in a read-only folder); with one (another connection is
        // open, or one died) it is read through that -wal, whose -shm SQLite may create.
        std::error_code wec;
        through_wal = std::filesystem::exists(std::filesystem::symlink_status(wal, wec));
        flags = SQLITE_OPEN_READONLY;
        if (!through_wal) {
            open_name = "file:" + uri_path(file) + "?immutable=1";
            flags |= SQLITE_OPEN_URI;
        }
    }
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(open_name.c_str(), &raw, flags, nullptr);
    std::unique_ptr<Library> lib(new Library(raw, file)); // closes `raw` on every error below
    if (rc != SQLITE_OK) detail::throw_sqlite(raw, rc, file, "cannot open library");
    lib->read_only_ = !writable;
    sqlite3_extended_result_codes(raw, 1);
    lib->set_busy_timeout_ms(kBusyTimeoutMs);
    if (writable && sqlite3_db_readonly(raw, "main") == 1) throw LibraryReadOnly(file);

    if (!writable) {
        // Belt and braces: never checkpoint at close, whatever the connection believes it may do.
        sqlite3_db_config(raw, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
        try {
            check_identity(raw, file);
            detail::exec(raw, file, "PRAGMA foreign_keys = ON");
            detail::exec(raw, file, "PRAGMA query_only = ON"); // every write fails: "library is read-only"
            if (pragma_int(raw, file, "user_version") == 0)
                throw InputError(file.string() +
                                 ": not a RoutePack library yet (no schema: nothing was ever imported)");
            quick_check(raw, file);
        } catch (const LibraryBusy&) {
            throw;
        } catch (const InputError& e) {
            if (!through_wal) throw;
            refuse_wal(file, e.what());
        }
        return lib;
    }
    check_identity(raw, file); // nothing written to a foreign/newer file
    detail::exec(raw, file, "PRAGMA foreign_keys = ON");
    {
        Statement journal(raw, file, "PRAGMA journal_mode = WAL"); // "memory" for :memory:
        while (journal.step()) {
        }
    }
    quick_check(raw, file);
    detail::apply_migrations(raw, file);
    if (created && ::flock(lock_fd, LOCK_SH) != 0)
        throw InputError(file.string() + ": cannot take the library's writer lock (" + std::strerror(errno) + ")");
    lib->created_ = created;
    lib->writer_lock_fd_ = lock_fd;
    std::copy(sides_existed, sides_existed + 2, lib->side_files_existed_);
    lock_guard.armed = false;
    return lib;
}

int Library::schema_version() const {
    return pragma_int(db_, path_, "user_version");
}

ImportSummary Library::import_trace(const std::string& name, const std::vector<std::filesystem::path>& inputs,
                                    const ImportOptions& options, const ImportProgressFn& progress,
                                    const std::atomic<bool>* cancel) {
    if (read_only_) throw LibraryReadOnly(path_);
    if (name.empty()) throw InputError("", {"trace_name", "", "trace name"}, " must not be empty");
    detail::require_utf8_name("trace", name);
    detail::ImportHooks hooks;
    hooks.fail_after_samples = fail_after_;
    if (const char* env = std::getenv("ROUTEPACK_TEST_EXIT_AFTER_SAMPLES"))
        hooks.exit_after_samples = static_cast<std::size_t>(std::strtoull(env, nullptr, 10));

    Transaction tx(db_, path_); // BEGIN IMMEDIATE: one writer; readers keep the last commit (WAL)
    {
        Statement exists(db_, path_, "SELECT 1 FROM traces WHERE name = ?1");
        exists.bind(1, name);
        if (exists.step()) throw InputError("trace '" + shown(name) + "' already exists in " + path_.string());
    }
    const std::vector<std::filesystem::path> files = collect_trace_files(inputs);
    detail::TraceWriter writer(db_, path_, name, hooks, cancel);
    ImportSummary summary = routepack::import_trace(files, options, writer, progress, cancel);
    if (cancel && cancel->load()) throw Cancelled();
    writer.finish(summary, files);
    {
        Statement dup(db_, path_, "SELECT name FROM traces WHERE fingerprint = ?1 AND id <> ?2 ORDER BY id LIMIT 1");
        dup.bind(1, hex64(summary.fingerprint)).bind(2, writer.trace_id());
        if (dup.step()) throw InputError("these files were already imported as trace '" + shown(dup.text(0)) + "'");
    }
    tx.commit();
    return summary;
}

std::vector<TraceEntry> Library::traces() const {
    Statement st(db_, path_, std::string(kTraceColumns) + "ORDER BY t.id");
    std::vector<TraceEntry> out;
    while (st.step())
        out.push_back(read_trace_entry(st, path_));
    return out;
}

TraceEntry Library::trace(const std::string& name) const {
    return find_trace(db_, path_, name);
}

std::vector<SampleInfo> Library::samples(const std::string& trace) const {
    const TraceEntry t = find_trace(db_, path_, trace);
    Statement st(db_, path_,
                 "SELECT sample_id, length, routed_rows, prompt_len, request_id, group_id, source_file, length_rule, "
                 "missing_routes FROM samples WHERE trace_id = ?1 ORDER BY position");
    st.bind(1, t.id);
    std::vector<SampleInfo> out;
    out.reserve(t.samples);
    while (st.step()) {
        SampleInfo info;
        info.id = st.text(0);
        info.length = st.int64(1);
        info.routed_rows = st.int64(2);
        if (!st.is_null(3)) info.prompt_len = st.int64(3);
        info.request_id = st.text(4);
        info.group = st.text(5);
        info.source_file = st.text(6);
        const std::string rule = st.text(7);
        if (!detail::parse_length_rule_key(rule, info.length_rule))
            throw InputError(path_.string() + ": trace '" + shown(trace) + "' sample '" + shown(info.id) +
                             "': unknown length rule '" + shown(rule) + "'");
        info.missing_routes = st.int64(8);
        out.push_back(std::move(info));
    }
    return out;
}

Trace Library::load_trace(const std::string& trace, RouteLoading routes) const {
    const TraceEntry t = find_trace(db_, path_, trace);
    require_samples(t, path_, "it cannot be loaded as samples");
    Trace out = empty_trace(t);
    out.samples.reserve(t.samples);
    out.counts.reserve(t.samples * out.stride());
    Statement st(db_, path_,
                 select_samples(schema_version(), "samples s", routes) + " WHERE s.trace_id = ?1 ORDER BY s.position");
    st.bind(1, t.id);
    while (st.step())
        read_sample(st, out, path_, trace);
    return out;
}

Trace Library::load_samples(const std::string& trace, const std::vector<std::string>& sample_ids,
                            RouteLoading routes) const {
    const TraceEntry t = find_trace(db_, path_, trace);
    require_samples(t, path_, "it cannot be loaded as samples");
    Trace out = empty_trace(t);
    out.samples.reserve(sample_ids.size());
    out.counts.reserve(sample_ids.size() * out.stride());
    Statement st(db_, path_,
                 select_samples(schema_version(), "samples s", routes) + " WHERE s.trace_id = ?1 AND s.sample_id = ?2");
    for (const std::string& id : sample_ids) {
        st.bind(1, t.id).bind(2, id);
        if (!st.step()) throw InputError("trace '" + shown(trace) + "' has no sample '" + shown(id) + "'");
        read_sample(st, out, path_, trace);
        st.reset();
    }
    return out;
}

std::vector<std::uint64_t> Library::layer_totals(const std::string& trace) const {
    const TraceEntry t = find_trace(db_, path_, trace);
    const std::size_t stride = static_cast<std::size_t>(t.model.num_moe_layers()) * t.model.experts;
    std::vector<std::uint64_t> totals(stride, 0);
    Statement st(db_, path_, "SELECT totals FROM aggregate_totals WHERE trace_id = ?1");
    st.bind(1, t.id);
    if (st.step()) {
        try {
            detail::decode_totals(st.blob(0), totals);
        } catch (const detail::BlobError& e) {
            throw InputError(path_.string() + ": trace '" + shown(trace) + "': damaged layer totals (" + e.what() +
                             ")");
        }
        return totals;
    }
    // No stored totals (not written by this build): sum the samples.
    require_samples(t, path_, "its layer totals are missing");
    Statement rows(db_, path_, "SELECT sample_id, counts FROM samples WHERE trace_id = ?1");
    rows.bind(1, t.id);
    std::vector<std::uint32_t> counts(stride);
    while (rows.step()) {
        try {
            detail::decode_counts(rows.blob(1), counts);
        } catch (const detail::BlobError& e) {
            throw InputError(path_.string() + ": trace '" + shown(trace) + "' sample '" + shown(rows.text(0)) +
                             "': damaged counts (" + e.what() + ")");
        }
        for (std::size_t k = 0; k < stride; ++k)
            totals[k] += counts[k];
    }
    return totals;
}

WindowEntry Library::create_window(const std::string& trace, const std::string& name,
                                   const std::vector<std::string>& sample_ids, const std::string& definition) {
    return create_windows(trace, {WindowSpec{name, sample_ids, definition}}).front();
}

std::vector<WindowEntry> Library::create_windows(const std::string& trace, const std::vector<WindowSpec>& windows) {
    if (read_only_) throw LibraryReadOnly(path_);
    Transaction tx(db_, path_);
    const TraceEntry t = find_trace(db_, path_, trace);
    require_samples(t, path_, "windows need samples");
    std::vector<WindowEntry> out;
    for (const WindowSpec& spec : windows) {
        const std::string& name = spec.name;
        const std::vector<std::string>& sample_ids = spec.sample_ids;
        const std::string& definition = spec.definition;
        if (name.empty())
            throw InputError("", {"window_name", "", "window name"},
                             " must not be empty (trace '" + shown(trace) + "')");
        detail::require_utf8_name("window", name);
        if (sample_ids.empty())
            throw InputError("window '" + shown(name) + "' of trace '" + shown(trace) + "' lists no samples");
        {
            Statement st(db_, path_, "SELECT 1 FROM windows WHERE trace_id = ?1 AND name = ?2");
            st.bind(1, t.id).bind(2, name);
            if (st.step())
                throw InputError("trace '" + shown(trace) + "' already has a window named '" + shown(name) + "' in " +
                                 path_.string());
        }
        {
            std::unordered_map<std::string, std::size_t> first;
            first.reserve(sample_ids.size());
            for (std::size_t k = 0; k < sample_ids.size(); ++k) {
                const auto [it, fresh] = first.emplace(sample_ids[k], k);
                if (!fresh)
                    throw InputError("window '" + shown(name) + "' of trace '" + shown(trace) + "' lists sample '" +
                                     shown(sample_ids[k]) + "' twice (entries " + std::to_string(it->second + 1) +
                                     " and " + std::to_string(k + 1) + ")");
            }
        }
        Statement insert(db_, path_,
                         "INSERT INTO windows (trace_id, name, definition, sample_count, created_at) "
                         "VALUES (?1, ?2, ?3, ?4, ?5)");
        insert.bind(1, t.id).bind(2, name).bind(3, definition).bind(4, static_cast<std::int64_t>(sample_ids.size()));
        insert.bind(5, detail::utc_now_iso8601());
        insert.run();
        const std::int64_t window_id = sqlite3_last_insert_rowid(db_);

        Statement find(db_, path_, "SELECT id FROM samples WHERE trace_id = ?1 AND sample_id = ?2");
        Statement member(db_, path_,
                         "INSERT INTO window_samples (window_id, position, sample_ref) VALUES (?1, ?2, ?3)");
        for (std::size_t k = 0; k < sample_ids.size(); ++k) {
            find.bind(1, t.id).bind(2, sample_ids[k]);
            if (!find.step())
                throw InputError("window '" + shown(name) + "': trace '" + shown(trace) + "' has no sample '" +
                                 shown(sample_ids[k]) + "'");
            const std::int64_t ref = find.int64(0);
            find.reset();
            member.bind(1, window_id).bind(2, static_cast<std::int64_t>(k)).bind(3, ref);
            member.run();
        }
        WindowEntry w;
        w.id = window_id;
        w.trace = trace;
        w.name = name;
        w.definition = definition;
        w.samples = sample_ids.size();
        out.push_back(std::move(w));
    }
    tx.commit();
    return out;
}

std::vector<WindowEntry> Library::windows(const std::string& trace) const {
    std::string sql = "SELECT w.id, t.name, w.name, w.definition, w.sample_count FROM windows w JOIN traces "
                      "t ON t.id = w.trace_id ";
    std::int64_t trace_id = 0;
    if (!trace.empty()) {
        trace_id = find_trace(db_, path_, trace).id;
        sql += "WHERE w.trace_id = ?1 ";
    }
    sql += "ORDER BY t.id, w.id";
    Statement st(db_, path_, sql);
    if (!trace.empty()) st.bind(1, trace_id);
    std::vector<WindowEntry> out;
    while (st.step()) {
        WindowEntry w;
        w.id = st.int64(0);
        w.trace = st.text(1);
        w.name = st.text(2);
        w.definition = st.text(3);
        w.samples = static_cast<std::size_t>(st.int64(4));
        out.push_back(std::move(w));
    }
    return out;
}

std::vector<std::string> Library::window_sample_ids(const std::string& trace, const std::string& window) const {
    const TraceEntry t = find_trace(db_, path_, trace);
    const std::int64_t window_id = find_window_id(db_, path_, t, window);
    Statement st(db_, path_,
                 "SELECT s.sample_id FROM window_samples ws JOIN samples s ON s.id = ws.sample_ref "
                 "WHERE ws.window_id = ?1 ORDER BY ws.position");
    st.bind(1, window_id);
    std::vector<std::string> out;
    while (st.step())
        out.push_back(st.text(0));
    return out;
}

Trace Library::load_window(const std::string& trace, const std::string& window, RouteLoading routes) const {
    const TraceEntry t = find_trace(db_, path_, trace);
    const std::int64_t window_id = find_window_id(db_, path_, t, window);
    Trace out = empty_trace(t);
    Statement st(db_, path_,
                 select_samples(schema_version(), "window_samples ws JOIN samples s ON s.id = ws.sample_ref", routes) +
                     " WHERE ws.window_id = ?1 ORDER BY ws.position");
    st.bind(1, window_id);
    while (st.step())
        read_sample(st, out, path_, trace);
    return out;
}

} // namespace routepack::storage
