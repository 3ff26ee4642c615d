// The SQLite trace library on real files in temporary folders: migrations, refusals, the counts
// blob codec, imports and their atomicity (failure, cancellation, a killed process), queries and
// windows.
#include "core/import/import.h"
#include "core/model/topology.h"
#include "core/util/errors.h"
#include "storage/counts_codec.h"
#include "storage/library.h"
#include "storage/library_internal.h"
#include "storage/migrations.h"
#include "tests/testutil.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QtTest>

#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

using namespace routepack;
using namespace routepack::storage;
namespace fs = std::filesystem;

using routepack::test::error_of;

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

ModelDescription tiny_model() {
    ModelDescription m;
    m.name = "tiny";
    m.num_hidden_layers = 2;
    m.experts = 4;
    m.top_k = 2;
    m.moe_layers = {0, 1};
    m.source = "tst_storage";
    return m;
}

ImportOptions nested_options() {
    ImportOptions o;
    o.format = TraceFormat::NestedJson;
    o.model = tiny_model();
    return o;
}

/// Routes of one sample [rows][2 layers][top-2], distinct experts per slot list.
using Routes = std::vector<std::array<std::array<int, 2>, 2>>;

std::vector<Routes> make_routes(int samples, std::uint32_t seed) {
    std::vector<Routes> out;
    std::uint32_t x = seed * 2654435761u + 1;
    auto next = [&x] {
        x = x * 1664525u + 1013904223u;
        return x >> 16;
    };
    for (int i = 0; i < samples; ++i) {
        Routes r(3 + next() % 9);
        for (auto& row : r)
            for (auto& slots : row) {
                slots[0] = static_cast<int>(next() % 4);
                slots[1] = static_cast<int>((slots[0] + 1 + next() % 3) % 4);
            }
        out.push_back(std::move(r));
    }
    return out;
}

/// One JSON array [rows][layers][top_k] per line (nested-JSON lines).
std::string nested_jsonl(const std::vector<Routes>& samples) {
    std::string text;
    for (const Routes& r : samples) {
        text += '[';
        for (std::size_t t = 0; t < r.size(); ++t) {
            text += t ? ",[" : "[";
            for (int l = 0; l < 2; ++l)
                text += (l ? ",[" : "[") + std::to_string(r[t][l][0]) + "," + std::to_string(r[t][l][1]) + "]";
            text += ']';
        }
        text += "]\n";
    }
    return text;
}

/// a[l][e] of one sample, [2][4].
std::vector<std::uint32_t> expected_counts(const Routes& r) {
    std::vector<std::uint32_t> c(8, 0);
    for (const auto& row : r)
        for (int l = 0; l < 2; ++l)
            for (int e : row[l])
                ++c[static_cast<std::size_t>(l) * 4 + e];
    return c;
}

/// A raw connection for checking the file behind the library's back.
struct RawDb {
    sqlite3* db = nullptr;
    explicit RawDb(const fs::path& p) {
        if (sqlite3_open_v2(p.string().c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
            qFatal("cannot open %s", p.string().c_str());
    }
    ~RawDb() { sqlite3_close_v2(db); }
    void exec(const std::string& sql) {
        char* err = nullptr;
        if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
            const std::string msg = err ? err : "?";
            sqlite3_free(err);
            qFatal("%s: %s", sql.c_str(), msg.c_str());
        }
    }
    /// All rows of a query, each as "v1|v2|..." (blobs as hex, NULL as <null>).
    std::vector<std::string> rows(const std::string& sql) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) qFatal("prepare %s", sql.c_str());
        std::vector<std::string> out;
        while (sqlite3_step(st) == SQLITE_ROW) {
            std::string line;
            for (int c = 0; c < sqlite3_column_count(st); ++c) {
                if (c) line += '|';
                switch (sqlite3_column_type(st, c)) {
                case SQLITE_NULL:
                    line += "<null>";
                    break;
                case SQLITE_BLOB: {
                    const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(st, c));
                    static const char* hex = "0123456789abcdef";
                    line += "x'";
                    for (int k = 0; k < sqlite3_column_bytes(st, c); ++k) {
                        line += hex[p[k] >> 4];
                        line += hex[p[k] & 15];
                    }
                    line += "'";
                    break;
                }
                default:
                    line += reinterpret_cast<const char*>(sqlite3_column_text(st, c));
                }
            }
            out.push_back(std::move(line));
        }
        sqlite3_finalize(st);
        return out;
    }
    std::string one(const std::string& sql) {
        const auto r = rows(sql);
        return r.empty() ? std::string("<none>") : r.front();
    }
    std::vector<std::string> tables() {
        return rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
    }
    /// Every table's rows (sorted), the schema and the version: equal dumps = equal contents.
    std::string dump() {
        std::string out = "user_version=" + one("PRAGMA user_version") + "\n";
        for (const auto& s : rows("SELECT type, name, sql FROM sqlite_master ORDER BY type, name"))
            out += s + "\n";
        for (const auto& t : tables()) {
            auto r = rows("SELECT * FROM \"" + t + "\"");
            std::sort(r.begin(), r.end());
            out += "== " + t + " (" + std::to_string(r.size()) + " rows)\n";
            for (const auto& line : r)
                out += line + "\n";
        }
        return out;
    }
    std::string counts() {
        return one("SELECT (SELECT count(*) FROM traces) || ' traces, ' || (SELECT count(*) FROM samples) || "
                   "' samples, ' || (SELECT count(*) FROM source_files) || ' files, ' || "
                   "(SELECT count(*) FROM aggregate_totals) || ' totals, ' || (SELECT count(*) FROM models) "
                   "|| ' models'");
    }
};

std::string dump_of(const fs::path& p) {
    return RawDb(p).dump();
}

const std::vector<std::string> kTables = {"aggregate_totals",
                                          "annealing_history",
                                          "cluster_run_chains",
                                          "cluster_run_steps",
                                          "cluster_runs",
                                          "measured_plans",
                                          "measured_steps",
                                          "models",
                                          "plans",
                                          "run_results",
                                          "runs",
                                          "sample_routes",
                                          "samples",
                                          "source_files",
                                          "topologies",
                                          "traces",
                                          "whole_run_steps",
                                          "whole_runs",
                                          "window_samples",
                                          "windows"};

constexpr const char* kChildLibraryEnv = "ROUTEPACK_TEST_CHILD_LIBRARY";
constexpr const char* kChildInputEnv = "ROUTEPACK_TEST_CHILD_INPUT";

} // namespace

class TstStorage : public QObject {
    Q_OBJECT

private:
    fs::path dir_;
    fs::path library_file(const std::string& name) { return dir_ / name; }

    /// Writes `samples` routes as nested-JSON lines to `name` under the temp folder.
    fs::path write_trace(const std::string& name, const std::vector<Routes>& samples) {
        fs::path p = dir_ / name;
        test::write_file(p, nested_jsonl(samples));
        return p;
    }

private Q_SLOTS:
    void initTestCase() {
        // Child mode of killedImportLeavesFileUnchanged: import until the sink _exit(3)s.
        if (const char* lib = std::getenv(kChildLibraryEnv)) {
            try {
                auto library = Library::open(lib);
                library->import_trace("killed", {fs::path(std::getenv(kChildInputEnv))}, nested_options());
            } catch (const std::exception& e) {
                std::fprintf(stderr, "child import failed: %s\n", e.what());
                ::_exit(5);
            }
            ::_exit(4); // the exit hook never fired
        }
        dir_ = test::temp_dir(QStringLiteral("storage"));
    }
    void cleanupTestCase() { fs::remove_all(dir_); }

    void migratesEmptyFileToCurrentVersion() {
        QCOMPARE(supported_schema_version(), 7);
        const fs::path f = library_file("fresh.routepack");
        {
            auto lib = Library::open(f);
            QCOMPARE(lib->schema_version(), supported_schema_version());
            QCOMPARE(lib->path(), f);
            QVERIFY(lib->traces().empty());
            QVERIFY(lib->windows().empty());
        }
        RawDb raw(f);
        QCOMPARE(q(raw.one("PRAGMA user_version")), QStringLiteral("7"));
        QCOMPARE(q(raw.one("PRAGMA application_id")), QString::number(detail::kApplicationId));
        QCOMPARE(q(raw.one("PRAGMA journal_mode")), QStringLiteral("wal"));
        QCOMPARE(raw.tables(), kTables);
        // Foreign keys are declared (spot checks).
        QCOMPARE(q(raw.one("SELECT \"table\" FROM pragma_foreign_key_list('samples')")), QStringLiteral("traces"));
        QCOMPARE(q(raw.one("SELECT \"table\" FROM pragma_foreign_key_list('window_samples') WHERE \"from\" = "
                           "'sample_ref'")),
                 QStringLiteral("samples"));
        QCOMPARE(raw.rows("SELECT \"table\" FROM pragma_foreign_key_list('plans') ORDER BY 1"),
                 (std::vector<std::string>{"topologies", "windows"}));
    }

    void migratesZeroByteFile() {
        // Only Create turns an existing 0-byte file into a library; opening one is refused and
        // leaves it as it was (no schema written, no -wal/-shm).
        const fs::path f = library_file("empty.routepack");
        test::write_file(f, "");
        QCOMPARE(q(error_of<InputError>([&] { Library::open(f, /*create=*/false); })),
                 q(f.string() + ": not a RoutePack library (empty file)"));
        QCOMPARE(q(error_of<InputError>([&] { Library::open(f, OpenMode::ReadOnly); })),
                 q(f.string() + ": not a RoutePack library (empty file)"));
        QCOMPARE(fs::file_size(f), std::uintmax_t(0));
        QVERIFY(!fs::exists(f.string() + "-wal"));
        QVERIFY(!fs::exists(f.string() + "-shm"));
        auto lib = Library::open(f, OpenMode::Create);
        QCOMPARE(lib->schema_version(), 7);
    }

    void busyLibraryFailsAfterTheBusyTimeout() {
        // Another connection holds the write lock: a write waits the connection's busy timeout,
        // then fails with LibraryBusy in words (the studio's GUI thread uses a short timeout).
        const fs::path f = library_file("busy.routepack");
        auto lib = Library::open(f);
        QCOMPARE(lib->busy_timeout_ms(), 5000);
        lib->set_busy_timeout_ms(200);
        QCOMPARE(lib->busy_timeout_ms(), 200);
        RawDb other(f);
        other.exec("BEGIN IMMEDIATE");
        QElapsedTimer timer;
        timer.start();
        std::string err;
        try {
            lib->save_topology("t", known_topology("synthetic-demo-ep8-dp4"));
        } catch (const LibraryBusy& e) {
            err = e.what();
        }
        const qint64 ms = timer.elapsed();
        QCOMPARE(q(err), q(f.string() + ": library is in use by another process (database is locked) while starting "
                                        "a transaction; try again"));
        QVERIFY2(ms < 2000, qPrintable(QString::number(ms))); // not the default 5 s
        other.exec("ROLLBACK");
        QCOMPARE(lib->save_topology("t", known_topology("synthetic-demo-ep8-dp4")).name, std::string("t"));
    }

    void migratesFromVersion1() {
        const fs::path f = library_file("v1.routepack");
        {
            RawDb raw(f);
            raw.exec(detail::migrations()[0].sql);
            raw.exec("PRAGMA application_id = " + std::to_string(detail::kApplicationId));
            raw.exec("PRAGMA user_version = 1");
            raw.exec("INSERT INTO models (name, num_hidden_layers, experts, top_k, moe_layers, source) "
                     "VALUES ('m', 1, 2, 1, '[0]', 's')");
            QCOMPARE(raw.tables().size(), std::size_t{7});
        }
        auto lib = Library::open(f, false);
        QCOMPARE(lib->schema_version(), 7);
        RawDb raw(f);
        QCOMPARE(raw.tables(), kTables);
        QCOMPARE(q(raw.one("SELECT count(*) FROM models")), QStringLiteral("1"));
    }

    void failedMigrationChangesNothing() {
        // A file at version 1 holding a table that migration 2 wants to create: migration 2 fails
        // and, all pending migrations being one transaction, nothing of it remains.
        const fs::path f = library_file("v1-conflict.routepack");
        {
            RawDb raw(f);
            raw.exec(detail::migrations()[0].sql);
            raw.exec("CREATE TABLE runs (x)");
            raw.exec("PRAGMA application_id = " + std::to_string(detail::kApplicationId));
            raw.exec("PRAGMA user_version = 1");
        }
        const std::string before = dump_of(f);
        const std::string err = error_of<std::runtime_error>([&] { Library::open(f, false); });
        QVERIFY2(err.find("schema migration 2") != std::string::npos, err.c_str());
        QCOMPARE(q(dump_of(f)), q(before));
        RawDb raw(f);
        QCOMPARE(q(raw.one("PRAGMA user_version")), QStringLiteral("1"));
        QCOMPARE(q(raw.one("SELECT count(*) FROM sqlite_master WHERE name = 'topologies'")), QStringLiteral("0"));
    }

    void refusesNewerSchema() {
        const fs::path f = library_file("newer.routepack");
        Library::open(f).reset();
        const int newer = supported_schema_version() + 1;
        RawDb(f).exec("PRAGMA user_version = " + std::to_string(newer));
        const std::string before = dump_of(f);
        QCOMPARE(q(error_of<InputError>([&] { Library::open(f); })),
                 q(f.string() + ": library schema version " + std::to_string(newer) +
                   " is newer than this build supports (" + std::to_string(supported_schema_version()) +
                   "); use a newer RoutePack Studio"));
        QCOMPARE(q(dump_of(f)), q(before));
    }

    void refusesNonSqliteFile() {
        const fs::path f = library_file("notes.txt");
        const std::string text = "these are my notes, not a database; long enough to look like a header.\n";
        test::write_file(f, text);
        QCOMPARE(q(error_of<InputError>([&] { Library::open(f); })),
                 q(f.string() + ": not a RoutePack library (file is not an SQLite database)"));
        QCOMPARE(q(test::read_file(f)), q(text));
        QVERIFY(!fs::exists(f.string() + "-wal"));
        // A short file too.
        const fs::path g = library_file("short.bin");
        test::write_file(g, "SQLite");
        QCOMPARE(q(error_of<InputError>([&] { Library::open(g, false); })),
                 q(g.string() + ": not a RoutePack library (file is not an SQLite database)"));
    }

    void refusesMissingFileWithoutCreate() {
        const fs::path f = library_file("absent.routepack");
        QCOMPARE(q(error_of<InputError>([&] { Library::open(f, false); })), q(f.string() + ": no such library"));
        QVERIFY(!fs::exists(f));
    }

    void refusesForeignSqliteDatabase() {
        const fs::path f = library_file("music.db");
        RawDb(f).exec("CREATE TABLE songs (title TEXT); CREATE TABLE albums (name TEXT); INSERT INTO songs "
                      "VALUES ('x')");
        const std::string before = dump_of(f);
        QCOMPARE(q(error_of<InputError>([&] { Library::open(f); })),
                 q(f.string() + ": not a RoutePack library (SQLite database with 2 tables of another program: "
                                "albums, songs)"));
        QCOMPARE(q(dump_of(f)), q(before));
        // Another program's application id.
        const fs::path g = library_file("other-app.db");
        RawDb(g).exec("PRAGMA application_id = 1234");
        QCOMPARE(q(error_of<InputError>([&] { Library::open(g); })),
                 q(g.string() + ": not a RoutePack library (SQLite application id 0x000004d2 belongs to another "
                                "program)"));
    }

    void refusesDamagedFile() {
        const fs::path f = library_file("damaged.routepack");
        {
            auto lib = Library::open(f);
            lib->import_trace("t", {write_trace("damaged/a.jsonl", make_routes(3000, 13))}, nested_options());
        }
        const auto pages = fs::file_size(f) / 4096;
        QVERIFY(pages > 8);
        {
            // Overwrite the b-tree page header of a page in the middle of the file.
            std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
            io.seekp(static_cast<std::streamoff>((pages / 2) * 4096));
            const char junk[8] = {0x0d, '\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff'};
            io.write(junk, sizeof junk);
        }
        const std::string err = error_of<InputError>([&] { Library::open(f, false); });
        QVERIFY2(err.rfind(f.string() + ": library is damaged (quick_check: ", 0) == 0, err.c_str());
    }

    void damagedCountsBlobNamesTheSample() {
        const fs::path f = library_file("blob.routepack");
        auto lib = Library::open(f);
        lib->import_trace("t", {write_trace("blob/a.jsonl", make_routes(3, 14))}, nested_options());
        const std::string id = lib->samples("t")[1].id;
        RawDb(f).exec("UPDATE samples SET counts = x'0105' WHERE position = 1");
        QCOMPARE(
            q(error_of<InputError>([&] { lib->load_trace("t"); })),
            q(f.string() + ": trace 't' sample '" + id + "': damaged counts (counts blob ends after 1 of 8 values)"));
    }

    void nonUtf8SampleIdNamesTheSample() {
        // Stored by an older import from a file name that was not UTF-8: refused when loaded, before
        // any planning, naming the library, trace, sample (escaped) and field.
        const fs::path f = library_file("utf8.routepack");
        auto lib = Library::open(f);
        lib->import_trace("t", {write_trace("utf8/a.jsonl", make_routes(3, 14))}, nested_options());
        RawDb(f).exec("UPDATE samples SET sample_id = CAST(x'6162ff' AS TEXT) WHERE position = 1");
        RawDb(f).exec("UPDATE samples SET source_file = CAST(x'2fff' AS TEXT) WHERE position = 2");
        QCOMPARE(q(error_of<InputError>([&] { lib->load_trace("t"); })),
                 q(f.string() + ": trace 't' sample 'ab\\xff': id is not valid UTF-8 (an older import took it from a "
                                "file name that is not UTF-8); re-import the trace from renamed files"));
        const std::string third = lib->samples("t")[2].id;
        QCOMPARE(q(error_of<InputError>([&] { lib->load_samples("t", {third}); })),
                 q(f.string() + ": trace 't' sample '" + third +
                   "': source_file is not valid UTF-8 (an older import took it from a file name that is not UTF-8); "
                   "re-import the trace from renamed files"));
        QCOMPARE(lib->load_samples("t", {lib->samples("t")[0].id}).size(), std::size_t(1));
    }

    void inMemoryLibrary() {
        auto lib = Library::open(":memory:");
        QCOMPARE(lib->schema_version(), 7);
        QVERIFY(lib->traces().empty());
    }

    void readOnlyOpen() {
        const fs::path f = library_file("read-only-mode.routepack");
        {
            auto lib = Library::open(f);
            lib->import_trace("t", {write_trace("romode/a.jsonl", make_routes(3, 21))}, nested_options());
        }
        const std::string dump = dump_of(f);
        const std::string readonly = f.string() + ": library is read-only (cannot write)";
        {
            auto ro = Library::open(f, OpenMode::ReadOnly);
            QVERIFY(ro->read_only());
            QCOMPARE(ro->traces().size(), std::size_t{1});
            QCOMPARE(ro->load_trace("t").size(), std::size_t{3});
            const std::string id = ro->samples("t")[0].id;
            QCOMPARE(q(error_of<InputError>([&] {
                         ro->import_trace("u", {write_trace("romode/b.jsonl", make_routes(2, 22))}, nested_options());
                     })),
                     q(readonly));
            QCOMPARE(q(error_of<InputError>([&] { ro->create_window("t", "w", {id}, "first 1"); })), q(readonly));
        }
        QCOMPARE(q(dump_of(f)), q(dump));
        QVERIFY(!fs::exists(f.string() + "-wal"));
        QVERIFY(!fs::exists(f.string() + "-shm"));
        // What read-only mode refuses.
        const fs::path absent = library_file("absent-ro.routepack");
        QCOMPARE(q(error_of<InputError>([&] { Library::open(absent, OpenMode::ReadOnly); })),
                 q(absent.string() + ": no such library"));
        QVERIFY(!fs::exists(absent));
        const fs::path empty = library_file("empty-ro.routepack");
        test::write_file(empty, "");
        QCOMPARE(q(error_of<InputError>([&] { Library::open(empty, OpenMode::ReadOnly); })),
                 q(empty.string() + ": not a RoutePack library (empty file)"));
        QCOMPARE(q(test::read_file(empty)), QString());
        // An SQLite file without any schema (not empty: a table came and went).
        const fs::path bare = library_file("bare-ro.routepack");
        {
            RawDb raw(bare);
            raw.exec("CREATE TABLE x (a); DROP TABLE x;");
        }
        const std::string bareBytes = test::read_file(bare);
        QVERIFY(!bareBytes.empty());
        QCOMPARE(q(error_of<InputError>([&] { Library::open(bare, OpenMode::ReadOnly); })),
                 q(bare.string() + ": not a RoutePack library yet (no schema: nothing was ever imported)"));
        QVERIFY(test::read_file(bare) == bareBytes);
        QCOMPARE(q(error_of<InputError>([&] { Library::open(":memory:", OpenMode::ReadOnly); })),
                 QStringLiteral(":memory:: an in-memory library has nothing to read; give a library file"));
        QCOMPARE(q(error_of<InputError>([&] { Library::open(dir_, OpenMode::ReadOnly); })),
                 q(dir_.string() + ": is a folder, not a RoutePack library file"));
    }

    void readOnlyFileAndFolder() {
        // A library the process may not write (file mode 0444, or a folder without write
        // permission): writable opens refuse up front with one clear line and leave no -wal/-shm
        // files; read-only opens read it. As root (whom permissions do not stop) the checks run
        // in a child process that drops to the unprivileged uid 65534.
        const fs::path base = dir_ / "perm";
        fs::create_directories(base / "rodir");
        fs::create_directories(base / "rwdir");
        const fs::path in_ro_dir = base / "rodir" / "lib.routepack", ro_file = base / "rwdir" / "lib.routepack";
        for (const fs::path& f : {in_ro_dir, ro_file}) {
            auto lib = Library::open(f);
            lib->import_trace("t", {write_trace("perm/in.jsonl", make_routes(2, 23))}, nested_options());
        }
        fs::permissions(in_ro_dir, fs::perms::all, fs::perm_options::add);
        fs::permissions(base / "rodir", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                            fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
        fs::permissions(ro_file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
        fs::permissions(base / "rwdir", fs::perms::all);
        fs::permissions(dir_, fs::perms::others_exec | fs::perms::others_read, fs::perm_options::add);
        fs::permissions(base, fs::perms::others_exec | fs::perms::others_read, fs::perm_options::add);

        int pipefd[2];
        QCOMPARE(::pipe(pipefd), 0);
        const pid_t pid = ::fork();
        QVERIFY(pid >= 0);
        if (pid == 0) {
            ::close(pipefd[0]);
            std::string out;
            if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) out = "cannot drop privileges\n";
            for (const fs::path& f : {in_ro_dir, ro_file}) {
                try {
                    Library::open(f);
                    out += "opened for writing\n";
                } catch (const std::exception& e) {
                    out += std::string(e.what()) + "\n";
                }
                try {
                    auto lib = Library::open(f, OpenMode::ReadOnly);
                    out += std::to_string(lib->traces().size()) + " trace, " +
                           std::to_string(lib->load_trace("t").size()) + " samples\n";
                } catch (const std::exception& e) {
                    out += std::string(e.what()) + "\n";
                }
            }
            [[maybe_unused]] auto n = ::write(pipefd[1], out.data(), out.size());
            ::_exit(0);
        }
        ::close(pipefd[1]);
        std::string got;
        char buf[4096];
        for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;)
            got.append(buf, static_cast<std::size_t>(n));
        ::close(pipefd[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        fs::permissions(base / "rodir", fs::perms::all);
        fs::permissions(ro_file, fs::perms::owner_read | fs::perms::owner_write);
        QCOMPARE(q(got), q(in_ro_dir.string() + ": library is read-only (cannot write)\n1 trace, 2 samples\n" +
                           ro_file.string() + ": library is read-only (cannot write)\n1 trace, 2 samples\n"));
        for (const fs::path& f : {in_ro_dir, ro_file}) {
            QVERIFY(!fs::exists(f.string() + "-wal"));
            QVERIFY(!fs::exists(f.string() + "-shm"));
        }
    }

    void errorsNeverQuoteSql() {
        QCOMPARE(q(detail::statement_purpose("  select 1")), QStringLiteral("reading the library"));
        QCOMPARE(q(detail::statement_purpose("PRAGMA quick_check")), QStringLiteral("reading the library"));
        QCOMPARE(q(detail::statement_purpose("INSERT INTO x VALUES (1)")), QStringLiteral("writing the library"));
        QCOMPARE(q(detail::statement_purpose("BEGIN IMMEDIATE")), QStringLiteral("starting a transaction"));
        QCOMPARE(q(detail::statement_purpose("COMMIT")), QStringLiteral("committing"));
        // A file whose pages after the header are junk: one line, no SQL.
        const fs::path f = library_file("junk-body.routepack");
        {
            auto lib = Library::open(f);
            lib->import_trace("t", {write_trace("junk/a.jsonl", make_routes(30, 24))}, nested_options());
        }
        std::string bytes = test::read_file(f);
        std::uint32_t x = 12345;
        for (std::size_t i = 100; i < bytes.size(); ++i) {
            x = x * 1664525u + 1013904223u;
            bytes[i] = static_cast<char>(x >> 24);
        }
        test::write_file(f, bytes);
        const std::string err = error_of<InputError>([&] { Library::open(f, false); });
        QVERIFY2(err.rfind(f.string() + ": library is damaged (", 0) == 0, err.c_str());
        for (const char* sql : {"SELECT", "PRAGMA", "INSERT", "'"})
            QVERIFY2(err.find(sql) == std::string::npos, err.c_str());
        QVERIFY(err.find('\n') == std::string::npos);
    }

    void countsBlobRoundTrip() {
        const std::vector<std::uint32_t> values = {0, 127, 128, 16383, 16384, 1, 255, 300, 4294967295u};
        const auto blob = detail::encode_counts(values);
        const std::vector<std::uint8_t> expected = {0x01, 0x00, 0x7f, 0x80, 0x01, 0xff, 0x7f, 0x80, 0x80, 0x01,
                                                    0x01, 0xff, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f};
        QCOMPARE(blob, expected);
        std::vector<std::uint32_t> back(values.size());
        detail::decode_counts(blob, back);
        QCOMPARE(back, values);
        // Empty shape, and the uint64 totals with their own tag.
        QCOMPARE(detail::encode_counts({}), std::vector<std::uint8_t>{0x01});
        const std::vector<std::uint64_t> totals = {0, 127, 128, 4294967295ull, 4294967296ull, ~0ull};
        const auto tblob = detail::encode_totals(totals);
        QCOMPARE(tblob.front(), std::uint8_t{0x02});
        QCOMPARE(tblob.size(), std::size_t{1 + 1 + 1 + 2 + 5 + 5 + 10});
        std::vector<std::uint64_t> tback(totals.size());
        detail::decode_totals(tblob, tback);
        QCOMPARE(tback, totals);
    }

    void countsBlobRejectsDamage_data() {
        QTest::addColumn<QByteArray>("blob");
        QTest::addColumn<int>("n");
        QTest::addColumn<QString>("why");
        auto b = [](std::initializer_list<int> v) {
            QByteArray a;
            for (int x : v)
                a.append(static_cast<char>(x));
            return a;
        };
        QTest::newRow("empty") << b({}) << 1 << QStringLiteral("empty counts blob");
        QTest::newRow("tag") << b({0x02, 0x00}) << 1 << QStringLiteral("unknown counts blob format tag 2 (expected 1)");
        QTest::newRow("truncated") << b({0x01, 0x05, 0x80}) << 2
                                   << QStringLiteral("counts blob ends after 1 of 2 values");
        QTest::newRow("short") << b({0x01, 0x05}) << 2 << QStringLiteral("counts blob ends after 1 of 2 values");
        QTest::newRow("trailing") << b({0x01, 0x05, 0x06}) << 1
                                  << QStringLiteral("counts blob has 1 bytes after its 1 values");
        QTest::newRow("overflow") << b({0x01, 0xff, 0xff, 0xff, 0xff, 0x1f}) << 1
                                  << QStringLiteral("entry 0 overflows 32 bits");
        QTest::newRow("too long") << b({0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}) << 1
                                  << QStringLiteral("entry 0 is too long");
        QTest::newRow("overlong") << b({0x01, 0x80, 0x00}) << 1 << QStringLiteral("entry 0 has an overlong encoding");
    }
    void countsBlobRejectsDamage() {
        QFETCH(QByteArray, blob);
        QFETCH(int, n);
        QFETCH(QString, why);
        std::vector<std::uint8_t> bytes(blob.begin(), blob.end());
        std::vector<std::uint32_t> out(static_cast<std::size_t>(n));
        QCOMPARE(q(error_of<detail::BlobError>([&] { detail::decode_counts(bytes, out); })), why);
    }

    void importAndLoadBack() {
        const fs::path f = library_file("import.routepack");
        const auto routes = make_routes(6, 1);
        const fs::path input = write_trace("in/a.jsonl", routes);
        auto lib = Library::open(f);
        std::vector<ImportProgress> seen;
        const ImportSummary s =
            lib->import_trace("t1", {input}, nested_options(), [&](const ImportProgress& p) { seen.push_back(p); });
        QCOMPARE(s.samples, std::size_t{6});
        QCOMPARE(s.files, std::size_t{1});
        QVERIFY(!seen.empty());
        QCOMPARE(seen.back().samples, std::size_t{6});

        const auto list = lib->traces();
        QCOMPARE(list.size(), std::size_t{1});
        const TraceEntry& t = list.front();
        QCOMPARE(q(t.name), QStringLiteral("t1"));
        QCOMPARE(q(t.format), QStringLiteral("nested-json"));
        QVERIFY(!t.load_only);
        QCOMPARE(t.samples, std::size_t{6});
        QVERIFY(t.model == tiny_model());
        QCOMPARE(q(t.fingerprint), q(hex64(s.fingerprint)));
        QCOMPARE(q(t.fingerprint), q(hex64(fnv1a64(test::read_file(input).data(), test::read_file(input).size()))));
        QCOMPARE(t.notes, s.notes);
        QVERIFY(t.imported_at.size() == 20 && t.imported_at.back() == 'Z');
        QCOMPARE(lib->trace("t1").id, t.id);

        // Whole trace: exact counts, metadata equal to the in-memory import of the same file.
        const Trace mem = import_trace_to_memory({input}, nested_options());
        const Trace loaded = lib->load_trace("t1");
        QVERIFY(loaded.model == tiny_model());
        QCOMPARE(q(loaded.format), QStringLiteral("nested-json"));
        QCOMPARE(loaded.size(), std::size_t{6});
        QVERIFY(loaded.samples == mem.samples);
        QCOMPARE(loaded.counts, mem.counts);
        for (std::size_t i = 0; i < routes.size(); ++i) {
            const auto c = loaded.sample_counts(i);
            QCOMPARE(std::vector<std::uint32_t>(c.begin(), c.end()), expected_counts(routes[i]));
            QCOMPARE(loaded.samples[i].routed_rows, static_cast<std::int64_t>(routes[i].size()));
        }
        QVERIFY(lib->samples("t1") == mem.samples);

        // Per-layer totals.
        std::vector<std::uint64_t> totals(8, 0);
        for (const auto& r : routes) {
            const auto c = expected_counts(r);
            for (std::size_t k = 0; k < 8; ++k)
                totals[k] += c[k];
        }
        QCOMPARE(lib->layer_totals("t1"), totals);

        // Chosen samples in the given order.
        const std::vector<std::string> ids = {mem.samples[4].id, mem.samples[0].id, mem.samples[2].id};
        const Trace some = lib->load_samples("t1", ids);
        QCOMPARE(some.size(), std::size_t{3});
        for (std::size_t k = 0; k < 3; ++k) {
            const std::size_t i = k == 0 ? 4 : k == 1 ? 0 : 2;
            QVERIFY(some.samples[k] == mem.samples[i]);
            const auto c = some.sample_counts(k);
            QCOMPARE(std::vector<std::uint32_t>(c.begin(), c.end()), expected_counts(routes[i]));
        }
        QCOMPARE(q(error_of<InputError>([&] {
                     lib->load_samples("t1", {ids[0], "nope"});
                 })),
                 QStringLiteral("trace 't1' has no sample 'nope'"));
        QCOMPARE(q(error_of<InputError>([&] { lib->trace("t9"); })), q("no trace named 't9' in " + f.string()));
        QCOMPARE(q(error_of<InputError>([&] { lib->load_trace("t9"); })), q("no trace named 't9' in " + f.string()));

        // Source files with their sizes; counts are one blob per sample.
        RawDb raw(f);
        QCOMPARE(raw.rows("SELECT position, path, size FROM source_files"),
                 (std::vector<std::string>{"0|" + input.string() + "|" + std::to_string(fs::file_size(input))}));
        QCOMPARE(q(raw.one("SELECT count(*) FROM samples")), QStringLiteral("6"));
        QCOMPARE(q(raw.one("SELECT DISTINCT hex(substr(counts, 1, 1)) FROM samples")), QStringLiteral("01"));
        QVERIFY(raw.rows("PRAGMA foreign_key_check").empty());
    }

    void reopenKeepsData() {
        const fs::path f = library_file("reopen.routepack");
        const auto routes = make_routes(5, 2);
        const fs::path input = write_trace("reopen/a.jsonl", routes);
        Trace before;
        {
            auto lib = Library::open(f);
            lib->import_trace("t", {input}, nested_options());
            before = lib->load_trace("t");
            lib->create_window("t", "w", {before.samples[1].id, before.samples[3].id}, "ids");
        }
        const std::string dump = dump_of(f);
        auto lib = Library::open(f, false);
        QCOMPARE(lib->schema_version(), 7);
        const Trace after = lib->load_trace("t");
        QVERIFY(after.samples == before.samples);
        QCOMPARE(after.counts, before.counts);
        QCOMPARE(lib->window_sample_ids("t", "w"),
                 (std::vector<std::string>{before.samples[1].id, before.samples[3].id}));
        lib.reset();
        QCOMPARE(q(dump_of(f)), q(dump));
    }

    void failedImportLeavesFileUnchanged() {
        const fs::path f = library_file("fail.routepack");
        const fs::path first = write_trace("fail/a.jsonl", make_routes(4, 3));
        const fs::path second = write_trace("fail/b.jsonl", make_routes(8, 4));
        auto lib = Library::open(f);
        lib->import_trace("kept", {first}, nested_options());
        lib->create_window("kept", "w", {lib->samples("kept")[0].id}, "first 1");
        const std::string counts = RawDb(f).counts();
        const std::string dump = dump_of(f);

        lib->set_fail_after_samples_for_testing(3);
        QCOMPARE(q(error_of<std::runtime_error>([&] { lib->import_trace("broken", {second}, nested_options()); })),
                 QStringLiteral("injected failure after 3 samples"));
        QCOMPARE(q(RawDb(f).counts()), q(counts));
        QCOMPARE(q(dump_of(f)), q(dump));
        QCOMPARE(lib->traces().size(), std::size_t{1});

        // The same connection still works, and the import succeeds without the hook.
        lib->set_fail_after_samples_for_testing(0);
        lib->import_trace("broken", {second}, nested_options());
        QCOMPARE(lib->trace("broken").samples, std::size_t{8});
        lib.reset();
        QCOMPARE(q(RawDb(f).one("PRAGMA quick_check")), QStringLiteral("ok"));
    }

    void importerErrorLeavesFileUnchanged() {
        const fs::path f = library_file("bad.routepack");
        const fs::path good = write_trace("bad/a.jsonl", make_routes(3, 5));
        const fs::path bad = dir_ / "bad/b.jsonl";
        test::write_file(bad, "[[[0,1],[2,3]]]\n[[[0,9],[2,3]]]\n"); // expert 9 >= E
        auto lib = Library::open(f);
        lib->import_trace("kept", {good}, nested_options());
        const std::string dump = dump_of(f);
        const std::string err = error_of<InputError>([&] { lib->import_trace("bad", {bad}, nested_options()); });
        QVERIFY2(err.find(bad.string()) != std::string::npos, err.c_str());
        QCOMPARE(q(dump_of(f)), q(dump));
    }

    void cancelledImportLeavesFileUnchanged() {
        const fs::path f = library_file("cancel.routepack");
        std::vector<fs::path> inputs;
        inputs.reserve(4);
        for (int k = 0; k < 4; ++k)
            inputs.push_back(write_trace("cancel/part" + std::to_string(k) + ".jsonl", make_routes(5, 10 + k)));
        auto lib = Library::open(f);
        lib->import_trace("kept", {inputs[0]}, nested_options());
        const std::string dump = dump_of(f);

        // Set before the import starts.
        std::atomic<bool> cancel{true};
        QCOMPARE(q(error_of<Cancelled>([&] { lib->import_trace("c1", {inputs[1]}, nested_options(), {}, &cancel); })),
                 QStringLiteral("cancelled"));
        QCOMPARE(q(dump_of(f)), q(dump));

        // Set from the progress callback after the first file's samples were written.
        cancel = false;
        std::size_t written = 0;
        auto progress = [&](const ImportProgress& p) {
            written = p.samples;
            cancel = true;
        };
        const std::vector<fs::path> rest(inputs.begin() + 1, inputs.end());
        QCOMPARE(q(error_of<Cancelled>([&] { lib->import_trace("c2", rest, nested_options(), progress, &cancel); })),
                 QStringLiteral("cancelled"));
        QVERIFY(written >= 5);
        QCOMPARE(q(dump_of(f)), q(dump));
    }

    void duplicateImportDetected() {
        const fs::path f = library_file("dup.routepack");
        const auto routes = make_routes(3, 6);
        const fs::path input = write_trace("dup/a.jsonl", routes);
        const fs::path copy = write_trace("dup/copy-of-a.jsonl", routes); // same bytes, other path
        auto lib = Library::open(f);
        lib->import_trace("original", {input}, nested_options());
        const std::string dump = dump_of(f);
        QCOMPARE(q(error_of<InputError>([&] { lib->import_trace("again", {copy}, nested_options()); })),
                 QStringLiteral("these files were already imported as trace 'original'"));
        QCOMPARE(q(dump_of(f)), q(dump));
        QCOMPARE(q(error_of<InputError>([&] { lib->import_trace("original", {input}, nested_options()); })),
                 q("trace 'original' already exists in " + f.string()));
        QCOMPARE(q(error_of<InputError>([&] { lib->import_trace("", {input}, nested_options()); })),
                 QStringLiteral("trace name must not be empty"));
        QCOMPARE(q(dump_of(f)), q(dump));
    }

    void duplicateImportIgnoresFileOrder() {
        const fs::path f = library_file("dup-order.routepack");
        const fs::path a = write_trace("duporder/a.jsonl", make_routes(2, 31));
        const fs::path b = write_trace("duporder/b.jsonl", make_routes(3, 32));
        auto lib = Library::open(f);
        const ImportSummary s = lib->import_trace("ab", {a, b}, nested_options());
        const std::string dump = dump_of(f);
        QCOMPARE(q(error_of<InputError>([&] {
                     lib->import_trace("ba", {b, a}, nested_options());
                 })),
                 QStringLiteral("these files were already imported as trace 'ab'"));
        QCOMPARE(q(error_of<InputError>([&] { lib->import_trace("folder", {dir_ / "duporder"}, nested_options()); })),
                 QStringLiteral("these files were already imported as trace 'ab'"));
        QCOMPARE(q(dump_of(f)), q(dump));
        // One file alone is another set of files.
        lib->import_trace("a-alone", {a}, nested_options());
        QVERIFY(lib->trace("a-alone").fingerprint != lib->trace("ab").fingerprint);
        QCOMPARE(q(lib->trace("ab").fingerprint), q(hex64(s.fingerprint)));
    }

    void echoedNamesAreOneLine() {
        const fs::path f = library_file("names.routepack");
        auto lib = Library::open(f);
        lib->import_trace("t", {write_trace("names/a.jsonl", make_routes(2, 33))}, nested_options());
        QCOMPARE(q(error_of<InputError>([&] { lib->trace("bad\nname"); })),
                 q("no trace named 'bad\\nname' in " + f.string()));
        QCOMPARE(q(error_of<InputError>(
                     [&] { lib->create_window("t", "w", {std::string("\xff\x01") + std::string(200, 'z')}, ""); })),
                 q("window 'w': trace 't' has no sample '\\xff\\x01" + std::string(78, 'z') + "...'"));
    }

    void windowsInOrder() {
        const fs::path f = library_file("windows.routepack");
        const auto routes = make_routes(8, 7);
        const auto routes2 = make_routes(3, 8);
        auto lib = Library::open(f);
        lib->import_trace("t", {write_trace("win/a.jsonl", routes)}, nested_options());
        lib->import_trace("u", {write_trace("win/b.jsonl", routes2)}, nested_options());
        const auto all = lib->samples("t");
        const std::vector<std::string> ids = {all[5].id, all[1].id, all[7].id, all[0].id};
        const WindowEntry w = lib->create_window("t", "step-1", ids, "ids chosen by hand");
        QCOMPARE(q(w.trace), QStringLiteral("t"));
        QCOMPARE(q(w.name), QStringLiteral("step-1"));
        QCOMPARE(w.samples, std::size_t{4});
        lib->create_window("t", "step-0", {all[2].id, all[3].id}, "first 2");
        lib->create_window("u", "step-0", {lib->samples("u")[0].id}, "first 1");

        const auto listed = lib->windows();
        QCOMPARE(listed.size(), std::size_t{3});
        QCOMPARE(q(listed[0].name + "/" + listed[1].name + "/" + listed[2].trace + ":" + listed[2].name),
                 QStringLiteral("step-1/step-0/u:step-0"));
        QCOMPARE(listed[0].id, w.id);
        QCOMPARE(q(listed[0].definition), QStringLiteral("ids chosen by hand"));
        QCOMPARE(lib->windows("t").size(), std::size_t{2});
        QCOMPARE(lib->windows("u").size(), std::size_t{1});

        QCOMPARE(lib->window_sample_ids("t", "step-1"), ids);
        const Trace loaded = lib->load_window("t", "step-1");
        QCOMPARE(loaded.size(), std::size_t{4});
        const std::size_t order[] = {5, 1, 7, 0};
        for (std::size_t k = 0; k < 4; ++k) {
            QVERIFY(loaded.samples[k] == all[order[k]]);
            const auto c = loaded.sample_counts(k);
            QCOMPARE(std::vector<std::uint32_t>(c.begin(), c.end()), expected_counts(routes[order[k]]));
        }
    }

    void windowErrors() {
        {
            // Several windows in one transaction: a clash in the second leaves the first uncreated.
            const fs::path f = library_file("windows-batch.routepack");
            auto lib = Library::open(f);
            const fs::path input = dir_ / "batch";
            test::write_file(input / "p.csv", "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n");
            test::write_file(input / "q.csv", "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[2, 3]\"\n");
            ImportOptions o;
            o.model.experts = 4;
            o.model.top_k = 2;
            o.model.num_hidden_layers = 2;
            o.model.moe_layers = {1};
            lib->import_trace("t", {input}, o);
            const auto ids = lib->samples("t");
            QCOMPARE(ids.size(), std::size_t(2));
            lib->create_window("t", "w-001", {ids[0].id}, "");
            QCOMPARE(q(error_of<InputError>([&] {
                         lib->create_windows("t", {{"w-000", {ids[0].id}, "a"}, {"w-001", {ids[1].id}, "b"}});
                     })),
                     q("trace 't' already has a window named 'w-001' in " + f.string()));
            QCOMPARE(lib->windows("t").size(), std::size_t(1));
            const auto made = lib->create_windows("t", {{"w-000", {ids[0].id}, "a"}, {"w-002", {ids[1].id}, "b"}});
            QCOMPARE(made.size(), std::size_t(2));
            QCOMPARE(lib->windows("t").size(), std::size_t(3));
        }

        const fs::path f = library_file("window-errors.routepack");
        auto lib = Library::open(f);
        lib->import_trace("t", {write_trace("werr/a.jsonl", make_routes(4, 9))}, nested_options());
        const auto all = lib->samples("t");
        lib->create_window("t", "w", {all[0].id}, "first 1");
        const std::string dump = dump_of(f);
        const std::string file = f.string();

        QCOMPARE(q(error_of<InputError>([&] { lib->create_window("nope", "x", {all[0].id}, ""); })),
                 q("no trace named 'nope' in " + file));
        QCOMPARE(q(error_of<InputError>([&] {
                     lib->create_window("t", "x", {all[0].id, "ghost"}, "");
                 })),
                 QStringLiteral("window 'x': trace 't' has no sample 'ghost'"));
        QCOMPARE(q(error_of<InputError>([&] {
                     lib->create_window("t", "x", {all[0].id, all[1].id, all[0].id}, "");
                 })),
                 q("window 'x' of trace 't' lists sample '" + all[0].id + "' twice (entries 1 and 3)"));
        QCOMPARE(q(error_of<InputError>([&] { lib->create_window("t", "x", {}, ""); })),
                 QStringLiteral("window 'x' of trace 't' lists no samples"));
        QCOMPARE(q(error_of<InputError>([&] { lib->create_window("t", "w", {all[1].id}, ""); })),
                 q("trace 't' already has a window named 'w' in " + file));
        QCOMPARE(q(error_of<InputError>([&] { lib->create_window("t", "", {all[1].id}, ""); })),
                 QStringLiteral("window name must not be empty (trace 't')"));
        QCOMPARE(q(error_of<InputError>([&] { lib->window_sample_ids("t", "zz"); })),
                 q("trace 't' has no window named 'zz' in " + file));
        QCOMPARE(q(error_of<InputError>([&] { lib->load_window("t", "zz"); })),
                 q("trace 't' has no window named 'zz' in " + file));
        QCOMPARE(q(error_of<InputError>([&] { lib->windows("nope"); })), q("no trace named 'nope' in " + file));
        QCOMPARE(q(dump_of(f)), q(dump));
    }

    void aggregateTraceIsLoadOnly() {
        const fs::path f = library_file("aggregate.routepack");
        const fs::path input = dir_ / "agg/counts.json";
        test::write_file(input, R"({"counts": [[1, 2, 3], [4, 5, 4294967296]], "num_layers": 2, "num_experts": 3,)"
                                R"( "src": "unit test"})");
        auto lib = Library::open(f);
        ImportOptions o;
        o.format = TraceFormat::Aggregate;
        lib->import_trace("agg", {input}, o);
        const TraceEntry t = lib->trace("agg");
        QVERIFY(t.load_only);
        QCOMPARE(t.samples, std::size_t{0});
        QCOMPARE(q(t.format), QStringLiteral("aggregate"));
        QCOMPARE(t.model.experts, 3);
        QCOMPARE(t.model.num_moe_layers(), 2);
        QCOMPARE(lib->layer_totals("agg"), (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 4294967296ull}));
        QVERIFY(lib->samples("agg").empty());
        const std::string file = f.string();
        QCOMPARE(q(error_of<InputError>([&] { lib->load_trace("agg"); })),
                 q("trace 'agg' in " + file +
                   " is load-only (per-layer expert totals, no samples): it cannot be loaded as samples"));
        QCOMPARE(
            q(error_of<InputError>([&] { lib->create_window("agg", "w", {"x"}, ""); })),
            q("trace 'agg' in " + file + " is load-only (per-layer expert totals, no samples): windows need samples"));
        QCOMPARE(q(RawDb(f).one("SELECT source FROM aggregate_totals")), QStringLiteral("unit test"));
    }

    // The loads file of `place --loads` is the importer format "loads": read straight
    // (import_expert_loads, as place reads it) and imported as a load-only trace, its values exact:
    // 2^32 + 1 stays 4294967297 (never narrowed to 1) and 2^64 - 1 stays itself.
    void loadsFileIsAnImporterFormat() {
        const fs::path input = dir_ / "loads/loads.json";
        test::write_file(input,
                         R"({"loads": [[4294967297, 0, 3], [18446744073709551615, 0, 0]], "moe_layers": [1, 3]})");
        const std::vector<std::uint64_t> want = {4294967297ull, 0, 3, 18446744073709551615ull, 0, 0};
        ImportOptions o;
        o.format = TraceFormat::Loads;
        ModelDescription m;
        QCOMPARE(import_expert_loads({input}, o, &m), want);
        QCOMPARE(m.experts, 3);
        QCOMPARE(m.moe_layers, (std::vector<int>{1, 3}));
        QCOMPARE(m.num_hidden_layers, 4);
        QCOMPARE(m.top_k, 0); // a loads file does not say
        // The object form is detected; the bare [L][E] list is read with the format named.
        o.format = TraceFormat::Auto;
        QCOMPARE(import_expert_loads({input}, o, &m), want);
        const fs::path bare = dir_ / "loads/bare.json";
        test::write_file(bare, "[[1, 2], [3.0, 4294967297]]");
        o.format = TraceFormat::Loads;
        o.model.num_hidden_layers = 5; // what the file leaves out comes from the model given
        QCOMPARE(import_expert_loads({bare}, o, &m), (std::vector<std::uint64_t>{1, 2, 3, 4294967297ull}));
        QCOMPARE(m.moe_layers, (std::vector<int>{0, 1}));
        QCOMPARE(m.num_hidden_layers, 5);

        const fs::path f = library_file("loads.routepack");
        auto lib = Library::open(f);
        o.model = {};
        lib->import_trace("l", {input}, o);
        const TraceEntry t = lib->trace("l");
        QVERIFY(t.load_only);
        QCOMPARE(q(t.format), QStringLiteral("loads"));
        QCOMPARE(t.model.moe_layers, (std::vector<int>{1, 3}));
        QCOMPARE(lib->layer_totals("l"), want);

        // Errors name the file and the field path, in the field reader's words.
        const std::pair<std::string, std::string> cases[] = {
            {R"({"loads": [[1, 2], [3, -4]]})", ": loads[1][1] is -4, not an integer in 0..18446744073709551615"},
            {R"({"loads": [[1, 2], [3, 2.5]]})", ": loads[1][1] is 2.5, not an integer in 0..18446744073709551615"},
            {R"({"loads": [[1, 2], [3, "4"]]})", ": loads[1][1] is \"4\", not an integer in 0..18446744073709551615"},
            {R"({"loads": [[1, 18446744073709551616]]})",
             ": loads[0][1] is 1.8446744073709552e+19, not an integer in 0..18446744073709551615"},
            {R"({"loads": [[1, 2], [3]]})", ": loads[1] must be a list of 2 loads (as row 0)"},
            {R"({"moe_layers": [1]})", ": loads is missing"},
            {R"({"loads": [[1, 2]], "moe_layers": [4294967297]})",
             ": moe_layers[0] is 4294967297, not an integer in 0..2147483646"},
            {R"({"loads": [[1, 2]], "num_hidden_layers": 4294967297})",
             ": num_hidden_layers is 4294967297, not an integer in 1..2147483647"},
            {R"({"loads": [[1, 2]], "moe_layer": [1]})",
             ": unknown field 'moe_layer' (known: loads, moe_layers, num_hidden_layers)"},
            {R"({"loads": [[1, 2]], "moe_layers": [1, 2]})", ": 1 rows of loads but 2 MoE layers named"},
            {R"("loads")", " is \"loads\", not a [L][E] list of lists or an object with loads"},
        };
        for (const auto& [text, err] : cases) {
            test::write_file(input, text);
            QCOMPARE(q(error_of<InputError>([&] { import_expert_loads({input}, o, &m); })), q(input.string() + err));
        }
    }

    void killedImportLeavesFileUnchanged() {
        const fs::path f = library_file("killed.routepack");
        const fs::path first = write_trace("killed/a.jsonl", make_routes(3, 11));
        // Enough samples that the child's dirty pages overflow SQLite's page cache (2 MiB by
        // default) and spill into the WAL as uncommitted frames before it dies.
        std::vector<Routes> many = make_routes(40000, 12);
        const fs::path second = write_trace("killed/b.jsonl", many);
        {
            auto lib = Library::open(f);
            lib->import_trace("kept", {first}, nested_options());
        }
        const std::string dump = dump_of(f);

        // fork() + exec of this test binary (not a bare fork: the parent already runs TBB and Qt
        // threads, which a forked child must not use). The child imports until its sink calls
        // _exit(3) after 39000 samples, inside the open transaction.
        const std::string exe = QCoreApplication::applicationFilePath().toStdString();
        const std::string env_lib = std::string(kChildLibraryEnv) + "=" + f.string();
        const std::string env_in = std::string(kChildInputEnv) + "=" + second.string();
        const std::string env_exit = "ROUTEPACK_TEST_EXIT_AFTER_SAMPLES=39000";
        std::vector<std::string> env_strings = {env_lib, env_in, env_exit};
        for (char** e = environ; *e; ++e) {
            const std::string s = *e;
            if (s.rfind("ROUTEPACK_TEST_", 0) != 0) env_strings.push_back(s);
        }
        std::vector<char*> envp;
        envp.reserve(env_strings.size() + 1);
        for (auto& s : env_strings)
            envp.push_back(s.data());
        envp.push_back(nullptr);
        std::string arg0 = exe, arg1 = "-silent"; // initTestCase runs first and never returns
        char* argv[] = {arg0.data(), arg1.data(), nullptr};

        const pid_t pid = ::fork();
        QVERIFY(pid >= 0);
        if (pid == 0) {
            const int devnull = ::open("/dev/null", O_WRONLY); // keep the child's QtTest banner quiet
            if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
            ::execve(exe.c_str(), argv, envp.data());
            ::_exit(127);
        }
        int status = 0;
        QCOMPARE(::waitpid(pid, &status, 0), pid);
        QVERIFY(WIFEXITED(status));
        QCOMPARE(WEXITSTATUS(status), 3);                         // died inside the import, not after it
        const auto wal_size = fs::file_size(f.string() + "-wal"); // the dead writer's WAL is still there
        qInfo("WAL left by the killed import: %llu bytes", static_cast<unsigned long long>(wal_size));
        QVERIFY(wal_size > 0); // uncommitted frames, which the next open must ignore

        {
            RawDb raw(f);
            QCOMPARE(q(raw.one("PRAGMA quick_check")), QStringLiteral("ok"));
        }
        QCOMPARE(q(dump_of(f)), q(dump));
        auto lib = Library::open(f, false);
        QCOMPARE(lib->traces().size(), std::size_t{1});
        QCOMPARE(q(lib->traces().front().name), QStringLiteral("kept"));
        // And the interrupted import can be redone.
        lib->import_trace("killed", {second}, nested_options());
        QCOMPARE(lib->trace("killed").samples, std::size_t{40000});
    }
};

QTEST_GUILESS_MAIN(TstStorage)
#include "tst_storage.moc"
