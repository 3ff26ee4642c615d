// Hostile and careless input, as a user or a script would give it: a foreign -wal file beside a
// library, FIFOs and devices where files belong, out-of-range numbers in flags and files. Each case
// asserts the exact message and that no file changed.
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/plan/budgets.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "gpu/safetensors/safetensors.h"
#include "storage/library.h"
#include "tests/rewrite_testutil.h"
#include "tests/testutil.h"

#include <QtTest>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <functional>

#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace routepack;
using routepack::test::error_of;
using routepack::test::read_file;
using routepack::test::temp_dir;
using routepack::test::write_file;

namespace {

using Run = routepack::test::CliRun;
QString q(const fs::path& p) {
    return routepack::test::qpath(p);
}
QString qs(const std::string& s) {
    return QString::fromStdString(s);
}
Run cli(const QStringList& args) {
    return routepack::test::run_cli(args);
}

/// A tiny library with one trace imported through the CLI (nested JSON, 4 experts, top-2).
fs::path make_library(const fs::path& dir) {
    write_file(dir / "in" / "a.jsonl", "[[[0, 1], [2, 3]], [[1, 2], [3, 0]]]\n[[[3, 1], [0, 2]]]\n");
    fs::path lib = dir / "lib.routepack";
    const Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(lib), QStringLiteral("--name"),
                       QStringLiteral("t"), QStringLiteral("--format"), QStringLiteral("nested-json"),
                       QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("2"),
                       QStringLiteral("--layers"), QStringLiteral("2"), q(dir / "in")});
    if (r.code != 0) qFatal("import failed: %s", qPrintable(r.err));
    return lib;
}

/// The -wal file of another SQLite database (one table "other", one row), taken while that
/// database is still open so that its frames were never checkpointed.
std::string foreign_wal(const fs::path& dir) {
    const fs::path other = dir / "other.db";
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(other.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
        qFatal("cannot create %s", other.c_str());
    const char* sql = "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE other (a); "
                      "INSERT INTO other VALUES (1);";
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) qFatal("%s", sqlite3_errmsg(db));
    std::string wal = read_file(other.string() + "-wal");
    sqlite3_close_v2(db);
    if (wal.empty()) qFatal("no WAL frames");
    return wal;
}

/// Runs one SQL text on a library file behind the program's back (tampering, as a test of damage).
void tamper(const fs::path& file, const std::string& sql) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) qFatal("cannot open");
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) qFatal("%s: %s", sql.c_str(), err);
    sqlite3_close_v2(db);
}

/// One process killed with SIGKILL from outside at a point named by `reached` (polled every
/// millisecond while the process runs): returns true when the kill landed in a running process,
/// false when the process ended before the point was seen (the caller then starts over).
bool kill_when(const QStringList& args, const std::function<bool()>& reached) {
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    p.start(QStringLiteral(ROUTEPACK_CLI), args);
    if (!p.waitForStarted(10000)) qFatal("cannot start the CLI");
    while (p.state() == QProcess::Running && !reached())
        p.waitForFinished(1);
    if (p.state() != QProcess::Running) return false;
    p.kill(); // SIGKILL: no handler, no unwinding, no cleanup in the process
    p.waitForFinished(10000);
    return p.exitStatus() == QProcess::CrashExit;
}

std::uintmax_t size_or_zero(const fs::path& p) {
    std::error_code ec;
    const auto n = fs::file_size(p, ec);
    return ec ? 0 : n;
}

/// Folders in `dir` whose name starts with `prefix`.
int folders_starting(const fs::path& dir, const std::string& prefix) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) ++n;
    return n;
}

QString err_line(const QString& what) {
    return QStringLiteral("routepack: error: ") + what + QStringLiteral("\n");
}

const char* kTopologyOk = R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 100,
    "attention_stages": [{"name": "a", "alpha": 1, "beta": 1}]})";

} // namespace

class TestCliHostile : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        // A read that blocks (a FIFO opened without O_NONBLOCK) must fail this test, not hang it.
        ::alarm(600);
    }

    void readOnlyCommandsLeaveAForeignWalAndTheLibraryAlone() {
        const auto tmp = temp_dir(QStringLiteral("hostile-wal"));
        const fs::path lib = make_library(tmp);
        QVERIFY(!fs::exists(lib.string() + "-wal"));
        const std::string bytes = read_file(lib);
        // Every read-only command on the clean library leaves its bytes as they were and no side files.
        for (const QStringList& args :
             {QStringList{QStringLiteral("info"), QStringLiteral("--db"), q(lib)},
              QStringList{QStringLiteral("info"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                          QStringLiteral("t"), QStringLiteral("--json")}}) {
            const Run r = cli(args);
            QVERIFY2(r.code == 0, qPrintable(r.err));
            QVERIFY(read_file(lib) == bytes);
            QVERIFY(!fs::exists(lib.string() + "-wal"));
            QVERIFY(!fs::exists(lib.string() + "-shm"));
        }
        // Another database's WAL beside it: refused, and neither file changes.
        const std::string wal = foreign_wal(tmp);
        write_file(lib.string() + "-wal", wal);
        const QString expected = q(lib) + QStringLiteral(": cannot be read with the write-ahead log beside it (") +
                                 q(lib) +
                                 QStringLiteral("-wal): not a RoutePack library (SQLite database with 1 tables of "
                                                "another program: other); nothing was changed (if that -wal file "
                                                "belongs to another database, move it away)");
        Run r = cli({QStringLiteral("info"), QStringLiteral("--db"), q(lib)});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + expected + QStringLiteral("\n"));
        QVERIFY(read_file(lib) == bytes);
        QVERIFY(read_file(lib.string() + "-wal") == wal);
        r = cli({QStringLiteral("compare"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                 QStringLiteral("t"), QStringLiteral("--topology"), QStringLiteral("synthetic-demo-ep8-dp4")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + expected + QStringLiteral("\n"));
        QVERIFY(read_file(lib) == bytes);
        QCOMPARE(qs(error_of<InputError>([&] { storage::Library::open(lib, storage::OpenMode::ReadOnly); })), expected);
        QVERIFY(read_file(lib) == bytes);
        QVERIFY(read_file(lib.string() + "-wal") == wal);
        // A writing command looks first too: a read-write connection would checkpoint that -wal
        // into the library and lose it.
        write_file(tmp / "in2" / "b.jsonl", "[[[3, 1], [2, 0]]]\n");
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(lib), QStringLiteral("--name"),
                 QStringLiteral("u"), QStringLiteral("--format"), QStringLiteral("nested-json"),
                 QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("2"),
                 QStringLiteral("--layers"), QStringLiteral("2"), q(tmp / "in2")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, err_line(expected));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                 QStringLiteral("t"), QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--first"),
                 QStringLiteral("1")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, err_line(expected));
        QVERIFY(read_file(lib) == bytes);
        QVERIFY(read_file(lib.string() + "-wal") == wal);
        // Moved away, the library reads as before.
        fs::remove(lib.string() + "-wal");
        fs::remove(lib.string() + "-shm");
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), q(lib)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("library ") + q(lib) + QStringLiteral(": 1 trace(s)")),
                 qPrintable(r.out));
        QVERIFY(read_file(lib) == bytes);
    }

    void everyReadOnlyCommandLeavesTheLibraryBytesAlone() {
        const auto tmp = temp_dir(QStringLiteral("hostile-readonly"));
        const fs::path lib = make_library(tmp);
        write_file(tmp / "topology.json", kTopologyOk);
        Run r = cli({QStringLiteral("window"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                     QStringLiteral("t"), QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--first"),
                     QStringLiteral("2")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const std::string bytes = read_file(lib);
        QVERIFY(!fs::exists(lib.string() + "-wal"));
        const QString db = q(lib), topo = q(tmp / "topology.json"), plan = q(tmp / "plan.json");
        const QString t = QStringLiteral("t"), w = QStringLiteral("w");
        const QList<QStringList> commands = {
            {QStringLiteral("info"), QStringLiteral("--db"), db},
            {QStringLiteral("info"), QStringLiteral("--db"), db, QStringLiteral("--trace"), t,
             QStringLiteral("--json")},
            {QStringLiteral("plan"), QStringLiteral("--db"), db, QStringLiteral("--trace"), t,
             QStringLiteral("--window"), w, QStringLiteral("--topology"), topo, QStringLiteral("--threads"),
             QStringLiteral("1"), QStringLiteral("--out"), plan},
            {QStringLiteral("validate"), plan, QStringLiteral("--db"), db, QStringLiteral("--trace"), t},
            {QStringLiteral("compare"), QStringLiteral("--db"), db, QStringLiteral("--trace"), t,
             QStringLiteral("--topology"), topo, QStringLiteral("--threads"), QStringLiteral("1"),
             QStringLiteral("--json")},
            {QStringLiteral("place"), QStringLiteral("--db"), db, QStringLiteral("--trace"), t,
             QStringLiteral("--window"), w, QStringLiteral("--ep-ranks"), QStringLiteral("2"), QStringLiteral("--out"),
             q(tmp / "map.json")},
            {QStringLiteral("export-map"), QStringLiteral("--plan"), plan, QStringLiteral("--out"),
             q(tmp / "sgl.json")},
        };
        for (const QStringList& args : commands) {
            r = cli(args);
            QVERIFY2(r.code == 0, qPrintable(args.join(QLatin1Char(' ')) + QStringLiteral(": ") + r.err));
            QVERIFY2(read_file(lib) == bytes, qPrintable(args.first()));
            QVERIFY2(!fs::exists(lib.string() + "-wal") && !fs::exists(lib.string() + "-shm"),
                     qPrintable(args.first()));
        }
        // The failing forms of the same commands leave it alone too.
        r = cli({QStringLiteral("plan"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("nope"),
                 QStringLiteral("--topology"), topo, QStringLiteral("--out"), q(tmp / "p2.json")});
        QCOMPARE(r.code, 1);
        QVERIFY(read_file(lib) == bytes);
        QVERIFY(!fs::exists(tmp / "p2.json"));
    }

    void importKilledFromOutsideLeavesTheLibraryAsItWas() {
        const auto tmp = temp_dir(QStringLiteral("hostile-kill-import"));
        const fs::path lib = make_library(tmp);
        // 192 synthetic samples (~20 MB of vLLM JSON): an import of about a second, long enough to be
        // killed while it parses and while it writes its transaction.
        Run r = cli({QStringLiteral("synth"), QStringLiteral("--out"),
                     q(tmp / "big"),          QStringLiteral("--format"),
                     QStringLiteral("vllm"),  QStringLiteral("--groups"),
                     QStringLiteral("12"),    QStringLiteral("--group-size"),
                     QStringLiteral("16"),    QStringLiteral("--layers"),
                     QStringLiteral("8"),     QStringLiteral("--dense-layers"),
                     QStringLiteral("1"),     QStringLiteral("--experts"),
                     QStringLiteral("64"),    QStringLiteral("--top-k"),
                     QStringLiteral("4"),     QStringLiteral("--prompt-mean"),
                     QStringLiteral("200"),   QStringLiteral("--response-mean"),
                     QStringLiteral("1500"),  QStringLiteral("--max-length"),
                     QStringLiteral("4096"),  QStringLiteral("--seed"),
                     QStringLiteral("5")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const std::string bytes = read_file(lib);
        const QStringList import = {
            QStringLiteral("import"),   QStringLiteral("--db"),    q(lib),
            QStringLiteral("--name"),   QStringLiteral("big"),     QStringLiteral("--experts"),
            QStringLiteral("64"),       QStringLiteral("--top-k"), QStringLiteral("4"),
            QStringLiteral("--layers"), QStringLiteral("8"),       QStringLiteral("--moe-layers"),
            QStringLiteral("1-7"),      QStringLiteral("--quiet"), q(tmp / "big")};
        const std::string wal = lib.string() + "-wal";
        // The points: at once (arguments not yet parsed), when the transaction's first pages reach
        // the write-ahead log, and when it holds more than 1 MiB of them.
        const std::vector<std::pair<const char*, std::function<bool()>>> points = {
            {"at start", [] { return true; }},
            {"first WAL pages", [&] { return size_or_zero(wal) > 0; }},
            {"1 MiB of WAL", [&] { return size_or_zero(wal) > (1U << 20); }},
        };
        auto restore = [&] {
            fs::remove(wal);
            fs::remove(lib.string() + "-shm");
            write_file(lib, bytes);
        };
        int killed = 0;
        for (const auto& [name, reached] : points) {
            const bool landed = kill_when(import, reached);
            const bool untouched = read_file(lib) == bytes;
            r = cli({QStringLiteral("info"), QStringLiteral("--db"), q(lib)});
            QVERIFY2(r.code == 0, qPrintable(QString::fromLatin1(name) + QStringLiteral(": ") + r.err));
            if (!landed || r.out.contains(QStringLiteral(": 2 trace(s)"))) {
                // The process ended, or the kill came after the commit (on a loaded machine the poll
                // can see the point late): then the whole trace is there, never a part of it.
                QVERIFY2(r.out.contains(QStringLiteral(": 2 trace(s)")), qPrintable(r.out));
                QVERIFY2(r.out.contains(QRegularExpression(QStringLiteral("samples\\s+192\\b"))), qPrintable(r.out));
                restore();
                continue;
            }
            ++killed;
            // WAL mode: an uncommitted transaction never reaches the library file itself.
            QVERIFY2(untouched, name);
            QVERIFY2(r.out.contains(QStringLiteral(": 1 trace(s)")), qPrintable(r.out));
            QVERIFY2(read_file(lib) == bytes, name);
        }
        qInfo("import killed at %d of %d points", killed, static_cast<int>(points.size()));
        QVERIFY2(killed >= 2, "the import ended before the kill points; make its input larger");
        // The name is free and the next import commits as if nothing had happened.
        r = cli(import);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), q(lib)});
        QVERIFY2(r.out.contains(QStringLiteral(": 2 trace(s)")), qPrintable(r.out));
    }

    void rewriteKilledFromOutsideLeavesNoOutput() {
        const auto tmp = temp_dir(QStringLiteral("hostile-kill-rewrite"));
        Run r =
            cli({QStringLiteral("synth-checkpoint"), QStringLiteral("--out"), q(tmp / "ck"), QStringLiteral("--hidden"),
                 QStringLiteral("256"), QStringLiteral("--max-shard-bytes"), QStringLiteral("4194304")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        write_file(tmp / "plan.json", test::plan_json_for_model(known_model("deepseek-v2-lite")));
        const fs::path out = tmp / "out";
        const QStringList rewrite = {QStringLiteral("rewrite"),
                                     QStringLiteral("--plan"),
                                     q(tmp / "plan.json"),
                                     QStringLiteral("--input"),
                                     q(tmp / "ck"),
                                     QStringLiteral("--output"),
                                     q(out),
                                     QStringLiteral("--device"),
                                     QStringLiteral("cpu"),
                                     QStringLiteral("--verify"),
                                     QStringLiteral("--quiet")};
        const std::string partial = ".out.routepack-partial-";
        auto first_shard_written = [&] {
            for (const auto& e : fs::directory_iterator(tmp)) {
                if (e.path().filename().string().rfind(partial, 0) != 0) continue;
                std::error_code ec;
                for (const auto& f : fs::directory_iterator(e.path(), ec))
                    if (f.path().extension() == ".safetensors" && size_or_zero(f.path()) > 0) return true;
            }
            return false;
        };
        const std::vector<std::pair<const char*, std::function<bool()>>> points = {
            {"at start", [] { return true; }},
            {"partial folder created", [&] { return folders_starting(tmp, partial) > 0; }},
            {"first shard written", first_shard_written},
        };
        int killed = 0;
        for (const auto& [name, reached] : points) {
            const bool landed = kill_when(rewrite, reached);
            if (!landed || fs::exists(out)) {
                // The process ended, or the kill came after the final rename (a loaded machine can
                // see the point late): then the output is whole, never a part of it.
                QVERIFY2(fs::exists(out / "model.safetensors.index.json"), name);
                QVERIFY2(!fs::exists(out / ".routepack-partial"), name);
                fs::remove_all(out); // start the next point from no output
                continue;
            }
            ++killed;
            QVERIFY2(!fs::exists(out), name);
        }
        qInfo("rewrite killed at %d of %d points", killed, static_cast<int>(points.size()));
        QVERIFY2(killed >= 2, "the rewrite ended before the kill points; make the checkpoint larger");
        // The next rewrite of that output removes the killed runs' partial folders and completes.
        r = cli(rewrite);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(fs::exists(out / "model.safetensors.index.json"));
        QCOMPARE(folders_starting(tmp, partial), 0);
    }

    void planFieldsOfTheWrongKindNameTheField() {
        const auto tmp = temp_dir(QStringLiteral("hostile-plan-kinds"));
        const fs::path lib = make_library(tmp);
        write_file(tmp / "topology.json", kTopologyOk);
        const Run r =
            cli({QStringLiteral("plan"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"), QStringLiteral("t"),
                 QStringLiteral("--topology"), q(tmp / "topology.json"), QStringLiteral("--threads"),
                 QStringLiteral("1"), QStringLiteral("--out"), q(tmp / "plan.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto good = nlohmann::json::parse(read_file(tmp / "plan.json"));
        (void)parse_plan(good.dump(), "p.json");
        auto error_with = [&](const std::function<void(nlohmann::json&)>& change) {
            nlohmann::json j = good;
            change(j);
            return qs(error_of<InputError>([&] { parse_plan(j.dump(), "p.json"); }));
        };
        QCOMPARE(error_with([](nlohmann::json& j) { j["metrics"]["reorder"]["cv_global"] = "0.5"; }),
                 QStringLiteral("p.json: metrics.reorder.cv_global is \"0.5\", not a finite number"));
        QCOMPARE(error_with([](nlohmann::json& j) { j["metrics"]["routepack"]["joint"] = nullptr; }),
                 QStringLiteral("p.json: metrics.routepack.joint is null, not a finite number"));
        QCOMPARE(error_with([](nlohmann::json& j) { j["inputs"]["trace"] = 5; }),
                 QStringLiteral("p.json: inputs.trace is 5, not a string"));
        QCOMPARE(error_with([](nlohmann::json& j) { j["inputs"] = nlohmann::json::array(); }),
                 QStringLiteral("p.json: inputs is [], not an object"));
        QCOMPARE(error_with([](nlohmann::json& j) { j["model"]["name"] = nlohmann::json::object(); }),
                 QStringLiteral("p.json: model.name is {}, not a string"));
        QCOMPARE(error_with([](nlohmann::json& j) { j["format"] = 7; }),
                 QStringLiteral("p.json: not a RoutePack plan (format must be \"routepack-plan\")"));
        // A row with the wrong cell count is refused before the row_count x D cells are allocated.
        QCOMPARE(error_with([](nlohmann::json& j) { j["rows"][0] = nlohmann::json::array({nlohmann::json::array()}); }),
                 QStringLiteral("p.json: rows[0] must hold D = 2 cells"));
        // A number no double holds (found by fuzz_plan_file) is the plan's error, not the JSON library's.
        QCOMPARE(
            qs(error_of<InputError>([] { parse_plan(R"({"format": "routepack-plan", "version": 1e400})", "p.json"); })),
            QStringLiteral("p.json: malformed JSON: number overflow parsing '1e400' (field version)"));
        // A topology nested deeper than the JSON printer's recursion takes (200,000 levels crashed
        // it) is refused before it is printed; a shallow unknown field is named.
        std::string deep = good.dump();
        const std::size_t at = deep.find("\"topology\":{");
        QVERIFY(at != std::string::npos);
        deep.insert(at + 12, "\"zz\":" + std::string(200000, '[') + std::string(200000, ']') + ",");
        QCOMPARE(qs(error_of<InputError>([&] { parse_plan(deep, "p.json"); })),
                 QStringLiteral("p.json: topology: JSON nested deeper than 512 levels"));
        QVERIFY(error_with([](nlohmann::json& j) {
                    j["topology"]["zz"] = nlohmann::json::array({1});
                }).startsWith(QStringLiteral("p.json: topology: unknown field 'zz' (known: ep_ranks,")));
    }

    void readOnlyOpenReadsThroughAGenuineWal() {
        // A -wal holding committed changes of this very library (its writer is still open) is read,
        // not checkpointed: the reader sees the new trace and the library file keeps its bytes.
        const auto tmp = temp_dir(QStringLiteral("hostile-wal-own"));
        const fs::path lib = make_library(tmp);
        const std::string before = read_file(lib);
        auto writer = storage::Library::open(lib, storage::OpenMode::ReadWrite);
        write_file(tmp / "in2" / "b.json", "[[[3, 1], [2, 0]]]");
        ImportOptions opt;
        opt.format = TraceFormat::NestedJson;
        opt.model.experts = 4;
        opt.model.top_k = 2;
        opt.model.num_hidden_layers = 2;
        opt.model.moe_layers = {0, 1};
        opt.model.source = "flags";
        writer->import_trace("u", {tmp / "in2"}, opt);
        QVERIFY(fs::file_size(lib.string() + "-wal") > 0);
        const std::string main_bytes = read_file(lib);
        {
            auto ro = storage::Library::open(lib, storage::OpenMode::ReadOnly);
            QCOMPARE(ro->traces().size(), std::size_t{2});
            QCOMPARE(ro->load_trace("u").size(), std::size_t{1});
        }
        QVERIFY(read_file(lib) == main_bytes);
        QVERIFY(fs::exists(lib.string() + "-wal"));
        writer.reset();
        QVERIFY(read_file(lib) != before); // the writer's own close checkpoints, as it should
    }

    void oneReaderRefusesFifosDevicesFoldersAndHugeFiles() {
        const auto tmp = temp_dir(QStringLiteral("hostile-reader"));
        const fs::path fifo = tmp / "pipe.json";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QCOMPARE(qs(error_of<InputError>([&] { read_input_file(fifo, input_files::kTopology); })),
                 q(fifo) + QStringLiteral(": is a pipe (FIFO), not a topology file"));
        QCOMPARE(qs(error_of<InputError>([&] { read_input_file("/dev/zero", input_files::kPlan); })),
                 QStringLiteral("/dev/zero: is a device, not a plan file"));
        QCOMPARE(qs(error_of<InputError>([&] { read_input_file(tmp, input_files::kIdList); })),
                 q(tmp) + QStringLiteral(": is a folder, not an id list"));
        QCOMPARE(
            qs(error_of<MissingFileError>([&] { read_input_file(tmp / "absent.json", input_files::kModelConfig); })),
            q(tmp / "absent.json") + QStringLiteral(": no such model config (config.json)"));
        // Only an absent file is a MissingFileError (the Python module's FileNotFoundError), naming its path.
        try {
            read_input_file(tmp / "absent.json", input_files::kPlan);
            QFAIL("an absent file was read");
        } catch (const MissingFileError& e) {
            QVERIFY(e.path() == tmp / "absent.json");
        }
        QCOMPARE(qs(error_of<MissingFileError>([&] { read_input_file(fifo, input_files::kTopology); })),
                 QStringLiteral("<other exception: ") + q(fifo) +
                     QStringLiteral(": is a pipe (FIFO), not a topology file>"));
        QCOMPARE(qs(error_of<MissingFileError>(
                     [&] { storage::Library::open(tmp / "absent.routepack", storage::OpenMode::ReadOnly); })),
                 q(tmp / "absent.routepack") + QStringLiteral(": no such library"));
        const fs::path big = tmp / "big.json";
        write_file(big, "{}");
        fs::resize_file(big, (1 << 20) + 1); // sparse: the cap is checked before a byte is read
        QCOMPARE(qs(error_of<InputError>([&] { read_input_file(big, input_files::kTopology); })),
                 q(big) + QStringLiteral(": too large for a topology file: 1048577 bytes, the limit is 1048576 bytes"));
        fs::resize_file(big, 1 << 20);
        QCOMPARE(read_input_file(big, input_files::kTopology).size(), std::size_t{1} << 20);
        write_file(tmp / "small.json", "{\"a\": 1}\n");
        QCOMPARE(qs(read_input_file(tmp / "small.json", input_files::kTopology)), QStringLiteral("{\"a\": 1}\n"));
        QCOMPARE(check_input_file(tmp / "small.json", input_files::kTopology), std::uint64_t{9});
        QCOMPARE(qs(error_of<InputError>([&] { check_input_file(fifo, input_files::kTopology); })),
                 q(fifo) + QStringLiteral(": is a pipe (FIFO), not a topology file"));
        // A shard that is a FIFO is refused by the safetensors reader, without waiting for a writer.
        const fs::path shard = tmp / "model-00001-of-00002.safetensors";
        QCOMPARE(::mkfifo(shard.c_str(), 0600), 0);
        QCOMPARE(qs(error_of<InputError>([&] { gpu::SafetensorsFile::open(shard); })),
                 q(shard) + QStringLiteral(": IoError: not a regular file"));
    }

    void commandsRefuseFifosAndDevicesWhereFilesBelong() {
        const auto tmp = temp_dir(QStringLiteral("hostile-fifo-cli"));
        const fs::path fifo = tmp / "fifo";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        const fs::path lib = make_library(tmp);
        const std::string bytes = read_file(lib);
        const QStringList plan_src{QStringLiteral("--db"), q(lib), QStringLiteral("--trace"), QStringLiteral("t")};
        struct Case {
            QStringList args;
            QString err;
        };
        const Case cases[] = {
            {QStringList{QStringLiteral("compare")} + plan_src +
                 QStringList{QStringLiteral("--topology"), QStringLiteral("/dev/zero")},
             QStringLiteral("/dev/zero: is a device, not a topology file")},
            {QStringList{QStringLiteral("compare")} + plan_src + QStringList{QStringLiteral("--topology"), q(fifo)},
             q(fifo) + QStringLiteral(": is a pipe (FIFO), not a topology file")},
            {{QStringLiteral("validate"), QStringLiteral("/dev/zero")},
             QStringLiteral("/dev/zero: is a device, not a plan file")},
            {{QStringLiteral("validate"), q(fifo)}, q(fifo) + QStringLiteral(": is a pipe (FIFO), not a plan file")},
            {{QStringLiteral("export-map"), QStringLiteral("--plan"), QStringLiteral("/dev/zero"),
              QStringLiteral("--out"), q(tmp / "map.json")},
             QStringLiteral("/dev/zero: is a device, not a plan file")},
            {{QStringLiteral("window"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"), QStringLiteral("t"),
              QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--ids"), q(fifo)},
             q(fifo) + QStringLiteral(": is a pipe (FIFO), not an id list")},
            {{QStringLiteral("import"), QStringLiteral("--db"), q(lib), QStringLiteral("--name"), QStringLiteral("u"),
              QStringLiteral("--model-config"), q(fifo), q(tmp / "in")},
             q(fifo) + QStringLiteral(": is a pipe (FIFO), not a model config (config.json)")},
        };
        for (const Case& c : cases) {
            const Run r = cli(c.args);
            QCOMPARE(r.code, 1);
            QCOMPARE(r.err, err_line(c.err));
        }
        QVERIFY(!fs::exists(tmp / "map.json"));
        QVERIFY(read_file(lib) == bytes);
    }

    void previousPlacementsOneReaderOneVerdict() {
        // --previous reads a plan or an expert map through the one checked reader, and the same
        // verdict on MoE layers and EP ranks for every shape (the Python module shares both).
        const auto tmp = temp_dir(QStringLiteral("hostile-previous"));
        const fs::path fifo = tmp / "fifo";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        fs::create_directories(tmp / "folder");
        const fs::path lib = make_library(tmp);
        write_file(tmp / "t2.json", kTopologyOk);
        write_file(tmp / "t4.json", R"({"ep_ranks": 4, "dp_slots": 2, "token_cap": 100,
            "attention_stages": [{"name": "a", "alpha": 1, "beta": 1}]})");
        const QStringList plan{QStringLiteral("plan"),    QStringLiteral("--db"), q(lib),
                               QStringLiteral("--trace"), QStringLiteral("t"),    QStringLiteral("--quiet"),
                               QStringLiteral("--out")};
        auto run = [&](const fs::path& out, const fs::path& topo, const QStringList& extra) {
            return cli(plan + QStringList{q(out), QStringLiteral("--topology"), q(topo)} + extra);
        };
        QCOMPARE(run(tmp / "p4.json", tmp / "t4.json", {}).code, 0);
        QCOMPARE(run(tmp / "p2.json", tmp / "t2.json", {}).code, 0);
        auto padded = nlohmann::json::parse(read_file(tmp / "p2.json"));
        padded["pad"] = std::string(1000, 'x');
        write_file(tmp / "padded.json", padded.dump());
        write_file(tmp / "layers.json", R"({"moe_layers": [1, 2], "placement": [[0, 1, 2, 3], [0, 1, 2, 3]]})");
        write_file(tmp / "ranks.json", R"({"format": "routepack-expert-map", "version": 1, "layer_axis": "moe_layers",
            "moe_layers": [0, 1], "num_hidden_layers": 2, "experts": 4, "ep_ranks": 4, "slots_per_rank": 1,
            "placement": [[0, 1, 2, 3], [0, 1, 2, 3]]})");
        write_file(tmp / "cut.json", R"({"physical_to_logical_map": [[0, 1)");
        const std::string kind = ", not a placement file (plan or expert map)";
        const std::pair<fs::path, std::string> cases[] = {
            {"/dev/zero", "/dev/zero: is a device" + kind},
            {"/dev/null", "/dev/null: is a device" + kind},
            {fifo, fifo.string() + ": is a pipe (FIFO)" + kind},
            {tmp / "folder", (tmp / "folder").string() + ": is a folder" + kind},
            {tmp / "none.json", (tmp / "none.json").string() + ": no such placement file (plan or expert map)"},
            {tmp / "layers.json", (tmp / "layers.json").string() + ": the map has MoE layers 1-2, the window 0-1"},
            {tmp / "ranks.json", (tmp / "ranks.json").string() + ": the map is on 4 EP ranks, the topology has 2"},
            {tmp / "p4.json", (tmp / "p4.json").string() + ": the plan is on 4 EP ranks, the topology has 2"},
            {tmp / "cut.json", (tmp / "cut.json").string() +
                                   ": malformed JSON at byte 35: syntax error while parsing array - "
                                   "unexpected end of input; expected ']'"},
        };
        const std::string bytes = read_file(lib);
        for (const auto& [file, err] : cases) {
            const Run r = run(tmp / "out.json", tmp / "t2.json", {QStringLiteral("--previous"), q(file)});
            QCOMPARE(r.code, 1);
            QCOMPARE(r.err, err_line(qs(err)));
            QVERIFY(!fs::exists(tmp / "out.json"));
        }
        const Run r = run(tmp / "out.json", tmp / "t2.json", {QStringLiteral("--previous"), q(tmp / "padded.json")});
        QCOMPARE(r.code, 1);
        QVERIFY2(
            r.err.startsWith(
                err_line(q(tmp / "padded.json") + QStringLiteral(": unknown field 'pad' (a plan holds ")).chopped(1)),
            qPrintable(r.err));
        QVERIFY(read_file(lib) == bytes);
        // The plan of the same topology is taken: budget 0 keeps its placement.
        QCOMPARE(
            run(tmp / "out.json", tmp / "t2.json",
                {QStringLiteral("--previous"), q(tmp / "p2.json"), QStringLiteral("--max-moves"), QStringLiteral("0")})
                .code,
            0);
        QCOMPARE(nlohmann::json::parse(read_file(tmp / "out.json"))["placement"],
                 nlohmann::json::parse(read_file(tmp / "p2.json"))["placement"]);
    }

    void budgetFlagsAreRangeChecked() {
        // Checked before anything is read: the library named here does not even exist.
        const int maxw = max_planner_workers();
        const QString workers = QStringLiteral("0 (all cores) or in 1..%1 = 4 x %2 cores").arg(maxw).arg(maxw / 4);
        const QStringList base{QStringLiteral("compare"),
                               QStringLiteral("--db"),
                               QStringLiteral("/nonexistent/lib"),
                               QStringLiteral("--trace"),
                               QStringLiteral("t"),
                               QStringLiteral("--topology"),
                               QStringLiteral("synthetic-demo-ep8-dp4")};
        const std::pair<QStringList, QString> cases[] = {
            {{QStringLiteral("--threads"), QStringLiteral("2147483647")},
             QStringLiteral("compare: --threads must be ") + workers + QStringLiteral(" (got 2147483647)")},
            {{QStringLiteral("--threads"), QString::number(maxw + 1)},
             QStringLiteral("compare: --threads must be ") + workers + QStringLiteral(" (got %1)").arg(maxw + 1)},
            {{QStringLiteral("--threads=-1")},
             QStringLiteral("compare: --threads must be ") + workers + QStringLiteral(" (got -1)")},
            {{QStringLiteral("--time-limit"), QStringLiteral("1e308")},
             QStringLiteral(
                 "compare: --time-limit must be finite seconds in 0..31536000 (one year; 0 = no limit) (got 1e+308)")},
            {{QStringLiteral("--time-limit=-1")},
             QStringLiteral(
                 "compare: --time-limit must be finite seconds in 0..31536000 (one year; 0 = no limit) (got -1)")},
            {{QStringLiteral("--time-limit"), QStringLiteral("nan")},
             QStringLiteral("compare: --time-limit must be a decimal number (got 'nan')")},
            {{QStringLiteral("--time-limit="), QString()},
             QStringLiteral("compare: --time-limit must be a decimal number (got '')")},
            {{QStringLiteral("--time-limit"), QStringLiteral("0x1p3")},
             QStringLiteral("compare: --time-limit must be a decimal number (got '0x1p3')")},
            {{QStringLiteral("--time-limit"), QStringLiteral(" 1")},
             QStringLiteral("compare: --time-limit must be a decimal number (got ' 1')")},
            {{QStringLiteral("--p-guide"), QStringLiteral("1e400")},
             QStringLiteral("compare: --p-guide must be a decimal number (got '1e400')")},
            {{QStringLiteral("--seed=-1")},
             QStringLiteral("compare: --seed must be an integer in 0..18446744073709551615 (got '-1')")},
            {{QStringLiteral("--seed="), QString()},
             QStringLiteral("compare: --seed must be an integer in 0..18446744073709551615 (got '')")},
            {{QStringLiteral("--time-limit"), QStringLiteral("31536001")},
             QStringLiteral("compare: --time-limit must be finite seconds in 0..31536000 (one year; 0 = no limit) (got "
                            "31536001)")},
            {{QStringLiteral("--seed"), QStringLiteral("18446744073709551616")},
             QStringLiteral(
                 "compare: --seed must be an integer in 0..18446744073709551615 (got '18446744073709551616')")},
            {{QStringLiteral("--seeds=-5")}, QStringLiteral("compare: --seeds must be in 1..4096 (got -5)")},
            {{QStringLiteral("--population=-1")}, QStringLiteral("compare: --population must be in 1..256 (got -1)")},
            {{QStringLiteral("--row-nodes=-1")},
             QStringLiteral("compare: --row-nodes must be in 0..1000000000 (got -1)")},
            {{QStringLiteral("--eta"), QStringLiteral("nan")},
             QStringLiteral("compare: --eta must be a decimal number (got 'nan')")},
            {{QStringLiteral("--eta"), QStringLiteral("-0.5e-1")},
             QStringLiteral("compare: --eta must be a finite number >= 0 (got -0.05)")},
            {{QStringLiteral("--placement-rounds"), QStringLiteral("1001")},
             QStringLiteral("compare: --placement-rounds must be in 0..1000 (got 1001)")},
            {{QStringLiteral("--placement-rounds=-1")},
             QStringLiteral("compare: --placement-rounds must be in 0..1000 (got -1)")},
        };
        for (const auto& [extra, err] : cases) {
            const Run r = cli(base + extra);
            QCOMPARE(r.code, 2); // a usage error
            QCOMPARE(r.err, err_line(err));
        }
        // The same rules in the planner itself (the studio's path) and in stored budgets.
        PlanInput in;
        in.budgets.workers = 100000;
        QCOMPARE(qs(error_of<InputError>([&] { plan_window(in); })),
                 QStringLiteral("planner: budget 'workers' must be ") + workers + QStringLiteral(" (got 100000)"));
        in.budgets.workers = 1;
        in.budgets.time_limit_s = std::numeric_limits<double>::infinity();
        QCOMPARE(
            qs(error_of<InputError>([&] { plan_window(in); })),
            QStringLiteral("planner: budget 'time_limit_s' must be finite seconds in 0..31536000 (one year; 0 = no "
                           "limit) (got inf)"));
        QCOMPARE(qs(error_of<InputError>([] { parse_planner_budgets(R"({"population": 0})", "lib"); })),
                 QStringLiteral("lib: population is 0, not an integer in 1..256"));
        QCOMPARE(qs(error_of<InputError>([] { parse_planner_budgets(R"({"time_limit_s": 1e300})", "lib"); })),
                 QStringLiteral("lib: budget 'time_limit_s' must be finite seconds in 0..31536000 (one year; 0 = no "
                                "limit) (got 1e+300)"));
        QCOMPARE(qs(error_of<InputError>([] { parse_planner_budgets(R"({"placement_rounds": 1001})", "lib"); })),
                 QStringLiteral("lib: placement_rounds is 1001, not an integer in 0..1000"));
        QCOMPARE(parse_planner_budgets(R"({"placement_rounds": 0})", "lib").placement_rounds, 0);
        // A value past the key's range that JSON reads as unsigned is named with the same rule.
        QCOMPARE(qs(error_of<InputError>([] { parse_planner_budgets(R"({"population": 3000000000})", "lib"); })),
                 QStringLiteral("lib: population is 3000000000, not an integer in 1..256"));
        QCOMPARE(parse_planner_budgets(R"({"workers": 4096})", "lib").workers, 4096); // another machine's run
    }

    void integersAreNeverNarrowed() {
        auto topo = [](const std::string& fields) {
            return qs(error_of<InputError>([&] {
                parse_topology("{" + fields + R"(, "attention_stages": [{"name": "a", "alpha": 1, "beta": 1}]})",
                               "t.json");
            }));
        };
        QCOMPARE(topo(R"("ep_ranks": 4294967304, "dp_slots": 4, "token_cap": 100)"),
                 QStringLiteral("t.json: ep_ranks is 4294967304, not an integer in 1..1048576"));
        QCOMPARE(topo(R"("ep_ranks": 4294967295, "dp_slots": 4, "token_cap": 100)"),
                 QStringLiteral("t.json: ep_ranks is 4294967295, not an integer in 1..1048576"));
        QCOMPARE(topo(R"("ep_ranks": 8, "dp_slots": 4294967300, "token_cap": 100)"),
                 QStringLiteral("t.json: dp_slots is 4294967300, not an integer in 1..1048576"));
        QCOMPARE(topo(R"("ep_ranks": 8, "dp_slots": 2147483648, "token_cap": 100)"),
                 QStringLiteral("t.json: dp_slots is 2147483648, not an integer in 1..1048576"));
        QCOMPARE(topo(R"("ep_ranks": 8, "experts_per_layer": 4294967328, "dp_slots": 4, "token_cap": 100)"),
                 QStringLiteral("t.json: experts_per_layer is 4294967328, not an integer in 1..1048576"));
        QCOMPARE(topo(R"("ep_ranks": 8, "dp_slots": 4, "token_cap": 9223372036854775807)"),
                 QStringLiteral("t.json: token_cap is 9223372036854775807, not an integer in 1..1099511627776"));
        QCOMPARE(topo(R"("ep_ranks": 8, "dp_slots": 4, "token_cap": 18446744073709551615)"),
                 QStringLiteral("t.json: token_cap is 18446744073709551615, not an integer in 1..1099511627776"));
        QCOMPARE(topo(R"("ep_ranks": 8, "dp_slots": 4, "token_cap": 100, "min_rows": 2147483648)"),
                 QStringLiteral("t.json: min_rows is 2147483648, not an integer in 0..1073741824"));
        QCOMPARE(topo(R"("ep_ranks": 8, "dp_slots": 4, "token_cap": 100, "row_multiple": 4294967297)"),
                 QStringLiteral("t.json: row_multiple is 4294967297, not an integer in 1..1048576"));
        QCOMPARE(qs(error_of<InputError>([] {
                     parse_topology(R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 100,
                                        "attention_stages": [{"name": "a", "alpha": 1e308, "beta": 1}]})",
                                    "t.json");
                 })),
                 QStringLiteral("t.json: attention_stages[0].alpha is 1e+308, not a number in [0, 1e+12]"));
        QCOMPARE(parse_topology(kTopologyOk, "t.json").ep_ranks, 2);
        std::string stages;
        for (int s = 0; s < 65; ++s)
            stages += std::string(s ? "," : "") + R"({"alpha": 1, "beta": 1})";
        QCOMPARE(qs(error_of<InputError>([&] {
                     parse_topology(R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 100, "attention_stages": [)" +
                                        stages + "]}",
                                    "t.json");
                 })),
                 QStringLiteral("t.json: attention_stages lists 65 stages, at most 64 are allowed"));
        QCOMPARE(qs(error_of<InputError>([] {
                     parse_topology(R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 100,
                                        "attention_stages": [{"name": 7, "alpha": 1, "beta": 1}]})",
                                    "t.json");
                 })),
                 QStringLiteral("t.json: attention_stages[0].name is 7, not a string"));
    }

    void planIntegersAreNeverNarrowed() {
        const auto tmp = temp_dir(QStringLiteral("hostile-plan"));
        const fs::path lib = make_library(tmp);
        write_file(tmp / "topo.json", kTopologyOk);
        const fs::path plan = tmp / "plan.json";
        Run r = cli({QStringLiteral("plan"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                     QStringLiteral("t"), QStringLiteral("--topology"), q(tmp / "topo.json"),
                     QStringLiteral("--levels"), QStringLiteral("2"), QStringLiteral("--steps"), QStringLiteral("20"),
                     QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--out"), q(plan)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const nlohmann::json good = nlohmann::json::parse(read_file(plan));
        r = cli({QStringLiteral("validate"), q(plan)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const std::pair<std::function<void(nlohmann::json&)>, QString> cases[] = {
            {[](nlohmann::json& j) { j["row_count"] = (1ull << 32) + 1; },
             QStringLiteral(": row_count is 4294967297, not an integer in 1..2")},
            {[](nlohmann::json& j) { j["topology"]["min_rows"] = 1ull << 31; },
             QStringLiteral(": topology: min_rows is 2147483648, not an integer in 0..1073741824")},
            {[](nlohmann::json& j) { j["topology"]["row_multiple"] = (1ull << 32) + 2; },
             QStringLiteral(": topology: row_multiple is 4294967298, not an integer in 1..1048576")},
            {[](nlohmann::json& j) { j["metrics"]["routepack"]["cap_violations"] = 1ull << 40; },
             QStringLiteral(": metrics.routepack.cap_violations is 1099511627776, not an integer in 0..2147483647")},
            {[](nlohmann::json& j) { j["topology"]["ep_ranks"] = 4294967295ull; },
             QStringLiteral(": topology: ep_ranks is 4294967295, not an integer in 1..1048576")},
            {[](nlohmann::json& j) { j["planner"]["workers"] = 1ull << 63; },
             QStringLiteral(": planner.workers is 9223372036854775808, not an integer in 0..4096")},
            // Wrong types are named with the field, not in the JSON library's words.
            {[](nlohmann::json& j) {
                 j["rows"][0][0] = nlohmann::json::object({{"a", 1}});
             },
             QStringLiteral(": rows[0][0] is an object, not a list of sample ids")},
            {[](nlohmann::json& j) { j["samples"][0]["id"] = 5; },
             QStringLiteral(": samples[0].id is 5, not a string")},
            {[](nlohmann::json& j) { j["row_count_certified"] = "yes"; },
             QStringLiteral(": row_count_certified is \"yes\", not true or false")},
            {[](nlohmann::json& j) {
                 j["rows"][0][0] = nlohmann::json::array({nlohmann::json::array({1, 2})});
             },
             QStringLiteral(": rows[0][0] names a list, not a sample of the plan")},
        };
        for (const auto& [change, err] : cases) {
            nlohmann::json bad = good;
            change(bad);
            write_file(tmp / "bad.json", bad.dump());
            r = cli({QStringLiteral("validate"), q(tmp / "bad.json")});
            QCOMPARE(r.code, 1);
            QCOMPARE(r.err, err_line(q(tmp / "bad.json") + err));
        }
    }

    void libraryIntegersAreNeverNarrowed() {
        const auto tmp = temp_dir(QStringLiteral("hostile-lib-int"));
        const fs::path lib = make_library(tmp);
        tamper(lib, "UPDATE models SET experts = 4294967328");
        QCOMPARE(qs(error_of<InputError>([&] { storage::Library::open(lib, storage::OpenMode::ReadOnly)->traces(); })),
                 q(lib) +
                     QStringLiteral(": trace 't': damaged model row (experts = 4294967328 is outside 1..2147483647)"));
        tamper(lib, "UPDATE models SET experts = 4; PRAGMA user_version = -1");
        QCOMPARE(qs(error_of<InputError>([&] { storage::Library::open(lib, storage::OpenMode::ReadOnly); })),
                 q(lib) + QStringLiteral(": not a RoutePack library (SQLite schema version -1 is negative; RoutePack "
                                         "libraries count 1, 2, ...)"));
        const std::string bytes = read_file(lib);
        QCOMPARE(qs(error_of<InputError>([&] { storage::Library::open(lib, storage::OpenMode::ReadWrite); })),
                 q(lib) + QStringLiteral(": not a RoutePack library (SQLite schema version -1 is negative; RoutePack "
                                         "libraries count 1, 2, ...)"));
        QVERIFY(read_file(lib) == bytes);
    }

    void planOutIntoAFolderLeavesNothing() {
        const auto tmp = temp_dir(QStringLiteral("hostile-out"));
        const fs::path lib = make_library(tmp);
        write_file(tmp / "topo.json", kTopologyOk);
        fs::create_directories(tmp / "outdir");
        const Run r =
            cli({QStringLiteral("plan"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"), QStringLiteral("t"),
                 QStringLiteral("--topology"), q(tmp / "topo.json"), QStringLiteral("--out"), q(tmp / "outdir")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, err_line(q(tmp / "outdir") + QStringLiteral(": is a folder (--out names the file to write)")));
        QVERIFY(!fs::exists(tmp / "outdir.tmp"));
        QVERIFY(fs::is_empty(tmp / "outdir"));
        // place writes its map the same way: a folder is refused before any work, nothing is left.
        write_file(tmp / "loads.json", "[[3, 1], [2, 2]]");
        const Run p =
            cli({QStringLiteral("place"), QStringLiteral("--loads"), q(tmp / "loads.json"),
                 QStringLiteral("--ep-ranks"), QStringLiteral("2"), QStringLiteral("--out"), q(tmp / "outdir")});
        QCOMPARE(p.code, 1);
        QCOMPARE(p.err, err_line(q(tmp / "outdir") + QStringLiteral(": is a folder (--out names the file to write)")));
        QVERIFY(!fs::exists(tmp / "outdir.tmp"));
        QVERIFY(fs::is_empty(tmp / "outdir"));
        // ... and never over its own input.
        const Run same =
            cli({QStringLiteral("place"), QStringLiteral("--loads"), q(tmp / "loads.json"),
                 QStringLiteral("--ep-ranks"), QStringLiteral("2"), QStringLiteral("--out"), q(tmp / "loads.json")});
        QCOMPARE(same.code, 1);
        QCOMPARE(same.err,
                 err_line(q(tmp / "loads.json") +
                          QStringLiteral(": is the --loads file itself (--out names a new expert map file)")));
        QCOMPARE(QString::fromStdString(read_file(tmp / "loads.json")), QStringLiteral("[[3, 1], [2, 2]]"));
    }
    void duplicateKeysAndControlCharactersAreRefused() {
        QCOMPARE(qs(error_of<InputError>([] {
                     parse_topology(R"({"ep_ranks": 2, "ep_ranks": 4, "dp_slots": 2, "token_cap": 100,
                                        "attention_stages": []})",
                                    "t.json");
                 })),
                 QStringLiteral("t.json: malformed JSON: duplicate key 'ep_ranks' in one object"));
        QCOMPARE(qs(error_of<InputError>([] { parse_planner_budgets(R"({"eta": 1, "eta": 2})", "lib"); })),
                 QStringLiteral("lib: malformed JSON: duplicate key 'eta' in one object"));
        QCOMPARE(qs(error_of<InputError>([] {
                     model_from_hf_config(R"({"num_hidden_layers": 2, "num_experts": 8, "num_experts": 4,
                                              "num_experts_per_tok": 2})",
                                          "config.json");
                 })),
                 QStringLiteral("config.json: malformed JSON: duplicate key 'num_experts' in one object"));
        const auto tmp = temp_dir(QStringLiteral("hostile-index"));
        const fs::path index = tmp / "model.safetensors.index.json";
        write_file(index, R"({"weight_map": {"a": "model-00001-of-00001.safetensors"}, "weight_map": {}})");
        QCOMPARE(qs(error_of<InputError>([&] { gpu::read_index(tmp); })),
                 q(index) + QStringLiteral(": malformed JSON: duplicate key 'weight_map' in one object"));
        write_file(index, R"({"weight_map": {}})");
        QCOMPARE(qs(error_of<InputError>([&] { gpu::read_index(tmp); })),
                 q(index) +
                     QStringLiteral(": InvalidIndex: weight_map: empty (it must name the shard of every tensor)"));
        write_file(index, "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\\u0000x\"}}");
        QCOMPARE(qs(error_of<InputError>([&] { gpu::read_index(tmp); })),
                 q(index) +
                     QStringLiteral(": InvalidIndex: weight_map 'a': shard 'model-00001-of-00002.safetensors\\x00x' "
                                    "is not a plain file name"));
        write_file(index, "{\"weight_map\": {\"a\\u001b[31m\": \"s\\n\"}}");
        QCOMPARE(qs(error_of<InputError>([&] { gpu::read_index(tmp); })),
                 q(index) +
                     QStringLiteral(": InvalidIndex: weight_map 'a\\x1b[31m': shard 's\\n' is not a plain file name"));
        // A number no double holds is the index's error, not the JSON library's.
        write_file(index, R"({"metadata": {"total_size": 1e400}, "weight_map": {"a": "s.safetensors"}})");
        QCOMPARE(qs(error_of<InputError>([&] { gpu::read_index(tmp); })),
                 q(index) + QStringLiteral(": InvalidIndex: not valid JSON (number overflow parsing '1e400' (field "
                                           "metadata.total_size))"));
    }

    void namesAreEchoedPrintable() {
        // A trace name with a line break and a terminal escape is stored whole, shown escaped, and
        // a long one is cut at 80 characters.
        const auto tmp = temp_dir(QStringLiteral("hostile-names"));
        write_file(tmp / "in" / "a.jsonl", "[[[0, 1], [2, 3]]]\n[[[3, 1], [0, 2]]]\n");
        const fs::path lib = tmp / "lib.routepack";
        const QString name = QStringLiteral("red\x1b[31m\nname");
        Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(lib), QStringLiteral("--name"), name,
                     QStringLiteral("--format"), QStringLiteral("nested-json"), QStringLiteral("--experts"),
                     QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("2"), QStringLiteral("--layers"),
                     QStringLiteral("2"), q(tmp / "in")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("imported trace 'red\\x1b[31m\\nname' into ") + q(lib) +
                                  QStringLiteral(": 2 samples")),
                 qPrintable(r.out));
        QVERIFY(!r.out.contains(QChar(0x1b)));
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), q(lib)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains(QStringLiteral("\ntrace red\\x1b[31m\\nname  (nested-json)\n")), qPrintable(r.out));
        QVERIFY(!r.out.contains(QChar(0x1b)));
        QCOMPARE(storage::Library::open(lib, storage::OpenMode::ReadOnly)->traces().front().name, name.toStdString());
        const QString longName(100000, QLatin1Char('n'));
        write_file(tmp / "in2" / "b.jsonl", "[[[1, 0], [2, 3]]]\n");
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(lib), QStringLiteral("--name"), longName,
                 QStringLiteral("--format"), QStringLiteral("nested-json"), QStringLiteral("--experts"),
                 QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("2"), QStringLiteral("--layers"),
                 QStringLiteral("2"), q(tmp / "in2")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("imported trace '") + QString(80, QLatin1Char('n')) +
                                  QStringLiteral("...' into ")),
                 qPrintable(r.out.left(200)));
    }
    void checkpointFifosAndHugeNumbersAreRefused() {
        const auto tmp = temp_dir(QStringLiteral("hostile-ckpt"));
        const fs::path ck = tmp / "ck";
        Run r = cli({QStringLiteral("synth-checkpoint"), QStringLiteral("--out"), q(ck)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        fs::path shard;
        for (const auto& de : fs::directory_iterator(ck))
            if (de.path().extension() == ".safetensors" && (shard.empty() || de.path() < shard)) shard = de.path();
        QVERIFY(!shard.empty());
        fs::remove(shard);
        QCOMPARE(::mkfifo(shard.c_str(), 0600), 0);
        r = cli({QStringLiteral("synth-checkpoint"), QStringLiteral("--check"), q(ck)});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, err_line(q(shard) + QStringLiteral(": IoError: not a regular file")));
        // A number beyond double in a header is the file's fault, named as such.
        const std::string header = R"({"t": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}})";
        std::string bytes(8, '\0');
        for (int b = 0; b < 8; ++b)
            bytes[b] = static_cast<char>((header.size() >> (8 * b)) & 0xff);
        write_file(tmp / "big.safetensors", bytes + header + std::string(4, '\0'));
        QCOMPARE(qs(error_of<InputError>([&] { gpu::SafetensorsFile::open(tmp / "big.safetensors"); })),
                 q(tmp / "big.safetensors") +
                     QStringLiteral(": InvalidHeaderDeserialization: header: not valid JSON (number overflow parsing "
                                    "'1e400')"));
    }

    void windowSplitEchoesNamesPrintable() {
        const auto tmp = temp_dir(QStringLiteral("hostile-split"));
        const fs::path lib = make_library(tmp);
        Run r = cli({QStringLiteral("window"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                     QStringLiteral("t"), QStringLiteral("--name"), QStringLiteral("red\x1b[31m\nw"),
                     QStringLiteral("--split"), QStringLiteral("1")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(!r.out.contains(QChar(0x1b)));
        const QStringList lines = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 2); // one line per window: the name's line break is escaped
        QVERIFY2(lines[0].startsWith(QStringLiteral("window 'red\\x1b[31m\\nw-000' of trace 't': 1 samples (")),
                 qPrintable(lines[0]));
        QVERIFY2(lines[1].startsWith(QStringLiteral("window 'red\\x1b[31m\\nw-001' of trace 't': 1 samples (")),
                 qPrintable(lines[1]));
        // The windows keep their names whole.
        const auto windows = storage::Library::open(lib, storage::OpenMode::ReadOnly)->windows("t");
        QCOMPARE(windows.size(), std::size_t(2));
        QCOMPARE(windows[0].name, std::string("red\x1b[31m\nw-000"));
        // A 5,000-character name is cut at 80 characters on the terminal.
        const QString longName(5000, QLatin1Char('n'));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                 QStringLiteral("t"), QStringLiteral("--name"), longName, QStringLiteral("--split"),
                 QStringLiteral("2")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(r.out.left(95),
                 QStringLiteral("window '") + QString(80, QLatin1Char('n')) + QStringLiteral("...' of"));
        QCOMPARE(r.out.count(QLatin1Char('\n')), 1);
    }

    void integerFlagsAreDecimalRangeCheckedAndNeverEmpty() {
        // One reader for every integer flag: checked while the command line is parsed, before
        // anything is read (the library named here does not exist).
        const QStringList base{QStringLiteral("compare"),
                               QStringLiteral("--db"),
                               QStringLiteral("/nonexistent/lib"),
                               QStringLiteral("--trace"),
                               QStringLiteral("t"),
                               QStringLiteral("--topology"),
                               QStringLiteral("synthetic-demo-ep8-dp4")};
        const std::pair<QStringList, QString> cases[] = {
            {{QStringLiteral("--threads"), QStringLiteral("0x10")},
             QStringLiteral("compare: --threads must be an integer in 0..4096 (got '0x10')")},
            {{QStringLiteral("--threads"), QString()},
             QStringLiteral("compare: --threads must be an integer in 0..4096 (got '')")},
            {{QStringLiteral("--levels"), QStringLiteral("+5")},
             QStringLiteral("compare: --levels must be an integer in 0..1000 (got '+5')")},
            {{QStringLiteral("--steps"), QStringLiteral("1e3")},
             QStringLiteral("compare: --steps must be an integer in 0..100000000 (got '1e3')")},
            {{QStringLiteral("--row-nodes"), QStringLiteral("9223372036854775808")},
             QStringLiteral("compare: --row-nodes must be an integer in 0..1000000000 (got '9223372036854775808')")},
            {{QStringLiteral("--polish"), QStringLiteral("-99999999999999999999")},
             QStringLiteral("compare: --polish must be an integer in 0..1000000000 (got '-99999999999999999999')")},
            {{QStringLiteral("--placement-rounds"), QStringLiteral("2147483648")},
             QStringLiteral("compare: --placement-rounds must be an integer in 0..1000 (got '2147483648')")},
            {{QStringLiteral("--row-multiple"), QStringLiteral(" 4")},
             QStringLiteral("compare: --row-multiple must be an integer in 1..") + QString::number(kMaxRowMultiple) +
                 QStringLiteral(" (got ' 4')")},
            {{QStringLiteral("--experts"), QStringLiteral("0x8")},
             QStringLiteral("compare: --experts must be an integer in 1..1048576 (got '0x8')")},
            {{QStringLiteral("--max-moves"), QStringLiteral("0x10")},
             QStringLiteral(
                 "compare: --max-moves must be an integer in 0..1000000000, or -1 (unlimited) (got '0x10')")},
        };
        for (const auto& [extra, err] : cases) {
            const Run r = cli(base + extra);
            QCOMPARE(r.code, 2); // a usage error
            QCOMPARE(r.err, err_line(err));
        }
        // Every subcommand's integer flags go through the same reader.
        const std::pair<QStringList, QString> others[] = {
            {{QStringLiteral("window"), QStringLiteral("--db"), QStringLiteral("/nonexistent/lib"),
              QStringLiteral("--trace"), QStringLiteral("t"), QStringLiteral("--name"), QStringLiteral("w"),
              QStringLiteral("--first"), QStringLiteral("0x10")},
             QStringLiteral("window: --first must be a decimal integer (got '0x10')")},
            {{QStringLiteral("window"), QStringLiteral("--db"), QStringLiteral("/nonexistent/lib"),
              QStringLiteral("--trace"), QStringLiteral("t"), QStringLiteral("--name"), QStringLiteral("w"),
              QStringLiteral("--split"), QString()},
             QStringLiteral("window: --split must be a decimal integer (got '')")},
            {{QStringLiteral("synth"), QStringLiteral("--out"), QStringLiteral("/nonexistent/x"),
              QStringLiteral("--seed"), QStringLiteral("18446744073709551616")},
             QStringLiteral(
                 "synth: --seed must be an integer in 0..18446744073709551615 (got '18446744073709551616')")},
            {{QStringLiteral("synth"), QStringLiteral("--out"), QStringLiteral("/nonexistent/x"),
              QStringLiteral("--groups"), QStringLiteral("0x10")},
             QStringLiteral("synth: --groups must be a decimal integer (got '0x10')")},
            {{QStringLiteral("synth-checkpoint"), QStringLiteral("--out"), QStringLiteral("/nonexistent/x"),
              QStringLiteral("--max-shard-bytes"), QString()},
             QStringLiteral("synth-checkpoint: --max-shard-bytes must be a positive integer (got '')")},
            {{QStringLiteral("place"), QStringLiteral("--loads"), QStringLiteral("/nonexistent/l.json"),
              QStringLiteral("--ep-ranks"), QStringLiteral("0"), QStringLiteral("--out"),
              QStringLiteral("/nonexistent/m.json")},
             QStringLiteral("place: --ep-ranks must be an integer in 1..1048576 (got '0')")},
            {{QStringLiteral("rewrite"), QStringLiteral("--map"), QStringLiteral("/nonexistent/m.json"),
              QStringLiteral("--input"), QStringLiteral("/nonexistent/ck"), QStringLiteral("--output"),
              QStringLiteral("/nonexistent/out"), QStringLiteral("--workers"), QStringLiteral("010x")},
             QStringLiteral("rewrite: --workers must be an integer in 0..1024 (got '010x')")},
        };
        for (const auto& [args, err] : others) {
            const Run r = cli(args);
            QCOMPARE(r.code, 2);
            QCOMPARE(r.err, err_line(err));
        }
        // Decimal, as --seed always was: "010" is ten, never octal eight.
        const auto tmp = temp_dir(QStringLiteral("hostile-intflags"));
        const fs::path lib = make_library(tmp);
        write_file(tmp / "topo.json", kTopologyOk);
        const fs::path plan = tmp / "plan.json";
        const Run r =
            cli({QStringLiteral("plan"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"), QStringLiteral("t"),
                 QStringLiteral("--topology"), q(tmp / "topo.json"), QStringLiteral("--levels"), QStringLiteral("010"),
                 QStringLiteral("--steps"), QStringLiteral("0020"), QStringLiteral("--seed"), QStringLiteral("010"),
                 QStringLiteral("--threads"), QStringLiteral("01"), QStringLiteral("--out"), q(plan)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const nlohmann::json j = nlohmann::json::parse(read_file(plan));
        QCOMPARE(j["planner"]["budgets"]["levels"].get<int>(), 10);
        QCOMPARE(j["planner"]["budgets"]["steps_per_level"].get<int>(), 20);
        QCOMPARE(j["planner"]["seed"].get<std::uint64_t>(), std::uint64_t(10));
        QCOMPARE(j["planner"]["workers"].get<int>(), 1);
    }

    void validateChecksBudgetsRefinementAndBaselines() {
        const auto tmp = temp_dir(QStringLiteral("hostile-validate"));
        const fs::path lib = make_library(tmp);
        write_file(tmp / "topo.json", kTopologyOk);
        const fs::path plan = tmp / "plan.json";
        Run r = cli({QStringLiteral("plan"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                     QStringLiteral("t"), QStringLiteral("--topology"), q(tmp / "topo.json"),
                     QStringLiteral("--levels"), QStringLiteral("2"), QStringLiteral("--steps"), QStringLiteral("20"),
                     QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--out"), q(plan)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const nlohmann::json good = nlohmann::json::parse(read_file(plan));
        r = cli({QStringLiteral("validate"), q(plan), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                 QStringLiteral("t")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        auto refined = [](nlohmann::json& j, int kept) {
            j["planner"]["placement_refinement"] = {
                {"refined", true}, {"rounds_kept", kept}, {"swaps", 3}, {"skipped", false}};
        };
        const std::pair<std::function<void(nlohmann::json&)>, QString> cases[] = {
            {[&](nlohmann::json& j) { refined(j, 5); },
             QStringLiteral(": planner.placement_refinement: rounds_kept 5 is more than "
                            "planner.budgets.placement_rounds 2")},
            {[&](nlohmann::json& j) {
                 refined(j, 1);
                 j["planner"]["budgets"]["placement_rounds"] = 0;
             },
             QStringLiteral(": planner.placement_refinement: rounds_kept 1 is more than "
                            "planner.budgets.placement_rounds 0")},
            {[](nlohmann::json& j) { j["planner"]["budgets"]["placement_rounds"] = 1001; },
             QStringLiteral(": planner.budgets: placement_rounds is 1001, not an integer in 0..1000")},
            {[](nlohmann::json& j) { j["planner"]["budgets"]["placement_rounds"] = "2"; },
             QStringLiteral(": planner.budgets: placement_rounds is \"2\", not an integer in 0..1000")},
            {[](nlohmann::json& j) { j["planner"]["budgets"].erase("placement_rounds"); },
             QStringLiteral(": planner.budgets.placement_rounds is missing")},
            {[](nlohmann::json& j) { j["planner"]["budgets"] = "x"; },
             QStringLiteral(": planner.budgets is \"x\", not an object")},
            {[](nlohmann::json& j) { j["planner"]["budgets"]["levels"] = -5; },
             QStringLiteral(": planner.budgets: levels is -5, not an integer in 0..1000")},
            {[](nlohmann::json& j) { j["planner"]["budgets"]["cooling"] = 5; },
             QStringLiteral(": planner.budgets: cooling is 5, not a number in (0, 1]")},
            {[](nlohmann::json& j) { j["planner"]["placement_refinement"]["rounds_kpet"] = 0; },
             QStringLiteral(": planner.placement_refinement: unknown field 'rounds_kpet' (known: refined, rounds_kept, "
                            "swaps, skipped)")},
        };
        for (const auto& [change, err] : cases) {
            nlohmann::json bad = good;
            change(bad);
            write_file(tmp / "bad.json", bad.dump());
            const std::string before = read_file(tmp / "bad.json");
            r = cli({QStringLiteral("validate"), q(tmp / "bad.json")});
            QCOMPARE(r.code, 1);
            QCOMPARE(r.err, err_line(q(tmp / "bad.json") + err));
            QCOMPARE(read_file(tmp / "bad.json"), before); // read-only
        }
        // A lower bound on the row count above the row count itself.
        {
            nlohmann::json bad = good;
            const int rows = good["row_count"].get<int>();
            bad["row_lower_bound"] = rows + 1;
            write_file(tmp / "bad.json", bad.dump());
            r = cli({QStringLiteral("validate"), q(tmp / "bad.json")});
            QCOMPARE(r.err, err_line(q(tmp / "bad.json") +
                                     QStringLiteral(": row_lower_bound %1 is more than row_count %2 (a lower bound on "
                                                    "the row count cannot exceed a row count that exists)")
                                         .arg(rows + 1)
                                         .arg(rows)));
        }
        // Anytime adds rounds (and refinements) until the time limit: more kept than
        // placement_rounds is what such a plan records, and it validates.
        {
            nlohmann::json anytime = good;
            refined(anytime, 6);
            anytime["planner"]["budgets"]["anytime"] = true;
            anytime["planner"]["budgets"]["time_limit_s"] = 2;
            write_file(tmp / "anytime.json", anytime.dump());
            r = cli({QStringLiteral("validate"), q(tmp / "anytime.json")});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            anytime["planner"]["budgets"]["placement_rounds"] = 0;
            write_file(tmp / "anytime.json", anytime.dump());
            r = cli({QStringLiteral("validate"), q(tmp / "anytime.json")});
            QCOMPARE(r.err, err_line(q(tmp / "anytime.json") +
                                     QStringLiteral(": planner.placement_refinement: rounds_kept 6 is more than "
                                                    "planner.budgets.placement_rounds 0")));
        }
        // Against the trace: a version-5 plan holds LPT's placement (refined ones came with
        // version 6), and the baselines' stored metrics are rescored too.
        auto against_trace = [&](const nlohmann::json& j) {
            write_file(tmp / "bad.json", j.dump());
            return cli({QStringLiteral("validate"), q(tmp / "bad.json"), QStringLiteral("--db"), q(lib),
                        QStringLiteral("--trace"), QStringLiteral("t")});
        };
        nlohmann::json v5 = good;
        v5["version"] = 5;
        v5["planner"].erase("placement_refinement");
        r = against_trace(v5);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        auto& layer0 = v5["placement"][0];
        std::swap(layer0[0], layer0[1]); // still a permutation, no longer LPT's
        r = against_trace(v5);
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, err_line(q(tmp / "bad.json") +
                                 QStringLiteral(": does not match its trace: the placement is not the window's LPT "
                                                "placement (plan version 5 has no refined placement; refined "
                                                "placements came with version 6)")));
        for (const char* method : {"baseline", "reorder", "karmarkar_karp"}) {
            nlohmann::json bad = good;
            const std::int64_t peak = good["metrics"][method]["ep_peak_sum"].get<std::int64_t>();
            bad["metrics"][method]["ep_peak_sum"] = peak + 1;
            r = against_trace(bad);
            QCOMPARE(r.code, 1);
            QCOMPARE(r.err,
                     err_line(q(tmp / "bad.json") + QStringLiteral(": does not match its trace: metrics.") +
                              QString::fromLatin1(method) +
                              QStringLiteral(".ep_peak_sum is %1 in the plan, %2 recomputed").arg(peak + 1).arg(peak)));
        }
        nlohmann::json bad = good;
        bad["metrics"]["baseline"]["cv_global"] = 0.5;
        r = against_trace(bad);
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, err_line(q(tmp / "bad.json") +
                                 QStringLiteral(": does not match its trace: metrics.baseline.cv_global is 0.5 in the "
                                                "plan, ") +
                                 QString::fromStdString(good["metrics"]["baseline"]["cv_global"].dump()) +
                                 QStringLiteral(" recomputed")));
    }

    void placeLoadsFilesAreStrict() {
        const auto tmp = temp_dir(QStringLiteral("hostile-loads"));
        const fs::path loads = tmp / "loads.json", out = tmp / "map.json";
        auto place = [&](const std::string& text) {
            write_file(loads, text);
            return cli({QStringLiteral("place"), QStringLiteral("--loads"), q(loads), QStringLiteral("--ep-ranks"),
                        QStringLiteral("2"), QStringLiteral("--out"), q(out)});
        };
        const std::pair<std::string, QString> cases[] = {
            {R"({"loads": [[1, 2]], "loads": [[3, 4]]})",
             QStringLiteral(": malformed JSON: duplicate key 'loads' in one object")},
            {R"({"loads": [[1, 2]], "moe_layer": [1]})",
             QStringLiteral(": unknown field 'moe_layer' (known: loads, moe_layers, num_hidden_layers)")},
            {R"({"loads": [[1, 1e400]]})",
             QStringLiteral(": malformed JSON: number overflow parsing '1e400' (field loads[0][1])")},
            {R"({"loads": [[1, 2], [18446744073709551615, 18446744073709551615]]})",
             QStringLiteral(": loads[1][1]: the layer's loads sum above 2^64 - 1 = 18446744073709551615 here (its "
                            "rank loads would wrap)")},
            {R"({"loads": [[1, 2], [3, -4]]})",
             QStringLiteral(": loads[1][1] is -4, not an integer in 0..18446744073709551615")},
            {R"({"loads": [[1, 2]], "moe_layers": [4294967297]})",
             QStringLiteral(": moe_layers[0] is 4294967297, not an integer in 0..2147483646")},
            {R"({"loads": [[1, 2]], "num_hidden_layers": 4294967297})",
             QStringLiteral(": num_hidden_layers is 4294967297, not an integer in 1..2147483647")},
            {R"("loads")", QStringLiteral(" is \"loads\", not a [L][E] list of lists or an object with loads")},
        };
        for (const auto& [text, err] : cases) {
            const Run r = place(text);
            QCOMPARE(r.code, 1);
            QCOMPARE(r.err, err_line(q(loads) + err));
            QVERIFY(!fs::exists(out));
        }
        // The largest load that fits, alone in its layer: placed, not wrapped.
        const Run r = place(R"({"loads": [[18446744073709551615, 0], [0, 0]], "moe_layers": [1, 3]})");
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const nlohmann::json map = nlohmann::json::parse(read_file(out));
        QCOMPARE(map["moe_layers"], nlohmann::json::parse("[1, 3]"));
        // 2^32 + 1 is read as itself, never narrowed to 1: LPT (4 experts on 2 ranks of 2 slots)
        // puts expert 0 first, on rank 0 with expert 3; as a load of 1 it would go last, beside
        // expert 1.
        fs::remove(out);
        const Run big = place("[[4294967297, 3, 2, 2]]");
        QVERIFY2(big.code == 0, qPrintable(big.err));
        QCOMPARE(nlohmann::json::parse(read_file(out))["placement"], nlohmann::json::parse("[[0, 2, 3, 1]]"));
        fs::remove(out);
        const Run one = place("[[1, 3, 2, 2]]");
        QVERIFY2(one.code == 0, qPrintable(one.err));
        QCOMPARE(nlohmann::json::parse(read_file(out))["placement"], nlohmann::json::parse("[[1, 0, 2, 3]]"));
    }

    void edpShardSlotsAreShownAsWritten() {
        auto topo = [](const std::string& shard) {
            return qs(error_of<InputError>([&] {
                parse_topology(R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 100, "edp_shards": [[0, )" + shard +
                                   R"(]], "attention_stages": [{"name": "a", "alpha": 1, "beta": 1}]})",
                               "t.json");
            }));
        };
        QCOMPARE(topo("18446744073709551615"),
                 QStringLiteral("t.json: edp_shards[0][1] is 18446744073709551615, not an integer in 0..1"));
        QCOMPARE(topo("9223372036854775808"),
                 QStringLiteral("t.json: edp_shards[0][1] is 9223372036854775808, not an integer in 0..1"));
        QCOMPARE(topo("-3"), QStringLiteral("t.json: edp_shards[0][1] is -3, not an integer in 0..1"));
        QCOMPARE(parse_topology(R"({"ep_ranks": 2, "dp_slots": 2, "token_cap": 100, "edp_shards": [[1], [0]],
                                    "attention_stages": [{"name": "a", "alpha": 1, "beta": 1}]})",
                                "t.json")
                     .edp_shards.size(),
                 std::size_t(2));
    }

    void studioHeadlessOutIntoAFileIsRefused() {
        const auto tmp = temp_dir(QStringLiteral("hostile-studio"));
        write_file(tmp / "file.txt", "keep me\n");
        for (const QStringList& args : {QStringList{QStringLiteral("--headless-out"), q(tmp / "file.txt")},
                                        QStringList{QStringLiteral("--headless-out=") + q(tmp / "file.txt")}}) {
            QProcess p;
            p.start(QStringLiteral(ROUTEPACK_STUDIO), args);
            QVERIFY(p.waitForFinished(120000));
            QCOMPARE(p.exitCode(), 1);
            QCOMPARE(QString::fromUtf8(p.readAllStandardError()),
                     QStringLiteral("routepack-studio: error: ") + q(tmp / "file.txt") +
                         QStringLiteral(": is a file, not a folder (--headless-out names the folder to write the "
                                        "demo into)\n"));
        }
        QProcess p;
        p.start(QStringLiteral(ROUTEPACK_STUDIO), {QStringLiteral("--headless-out"), q(tmp / "file.txt" / "sub")});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 1);
        QCOMPARE(QString::fromUtf8(p.readAllStandardError()),
                 QStringLiteral("routepack-studio: error: ") + q(tmp / "file.txt" / "sub") +
                     QStringLiteral(": cannot be created (") + q(tmp / "file.txt") +
                     QStringLiteral(" is not a folder)\n"));
        QCOMPARE(read_file(tmp / "file.txt"), std::string("keep me\n"));
        // An empty folder name is refused, never the working directory.
        for (const QStringList& args : {QStringList{QStringLiteral("--headless-out"), QString()},
                                        QStringList{QStringLiteral("--headless-out=")}}) {
            QProcess e;
            e.setWorkingDirectory(q(tmp));
            e.start(QStringLiteral(ROUTEPACK_STUDIO), args);
            QVERIFY(e.waitForFinished(120000));
            QCOMPARE(e.exitCode(), 1);
            QCOMPARE(QString::fromUtf8(e.readAllStandardError()),
                     QStringLiteral("routepack-studio: error: --headless-out must name a folder (got '')\n"));
        }
        QVERIFY(!fs::exists(tmp / "plan.json"));
    }

    void synthOnAFullDiskLeavesNoFolder() {
        // A file size limit stands in for a full disk: the first write past 512 bytes fails (EFBIG;
        // SIGXFSZ ignored so that the write returns the error).
        const auto tmp = temp_dir(QStringLiteral("hostile-synth"));
        const fs::path out = tmp / "syn";
        QProcess p;
        p.start(QStringLiteral("/bin/sh"),
                {QStringLiteral("-c"), QStringLiteral("trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\""),
                 QStringLiteral(ROUTEPACK_CLI), QStringLiteral("synth"), QStringLiteral("--out"), q(out),
                 QStringLiteral("--groups"), QStringLiteral("2"), QStringLiteral("--group-size"), QStringLiteral("2")});
        QVERIFY(p.waitForFinished(120000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(
            err.startsWith(QStringLiteral("routepack: error: synth: cannot write ") + q(out) + QStringLiteral("/")),
            qPrintable(err));
        QVERIFY2(err.endsWith(QStringLiteral("; nothing was written\n")), qPrintable(err));
        QVERIFY(!fs::exists(out));
        QCOMPARE(std::distance(fs::directory_iterator(tmp), fs::directory_iterator()), std::ptrdiff_t(0));
        // An empty folder given as --out stays as it was too, and a full run fills it whole.
        fs::create_directories(out);
        p.start(QStringLiteral("/bin/sh"),
                {QStringLiteral("-c"), QStringLiteral("trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\""),
                 QStringLiteral(ROUTEPACK_CLI), QStringLiteral("synth"), QStringLiteral("--out"), q(out)});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 1);
        QVERIFY(fs::is_directory(out) && fs::is_empty(out));
        QCOMPARE(std::distance(fs::directory_iterator(tmp), fs::directory_iterator()), std::ptrdiff_t(1));
        const Run r = cli({QStringLiteral("synth"), QStringLiteral("--out"), q(out), QStringLiteral("--groups"),
                           QStringLiteral("2"), QStringLiteral("--group-size"), QStringLiteral("2")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(std::distance(fs::directory_iterator(out), fs::directory_iterator()), std::ptrdiff_t(2));
        QCOMPARE(std::distance(fs::directory_iterator(tmp), fs::directory_iterator()), std::ptrdiff_t(1));
    }
};

QTEST_GUILESS_MAIN(TestCliHostile)
#include "tst_cli_hostile.moc"
