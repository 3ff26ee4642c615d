// Concurrent writers of one library: real `routepack` processes and Library connections at the
// interleavings where a check-then-create or a check-then-remove used to race. Nothing another
// writer committed is ever removed; two creators of one new library both land.
#include "core/model/topology.h"
#include "core/util/errors.h"
#include "core/util/output_folder.h"
#include "storage/library.h"
#include "testutil.h"

#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

#include <csignal>
#include <filesystem>
#include <memory>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace routepack;
using routepack::test::temp_dir;
using routepack::test::write_file;

namespace {

QString q(const fs::path& p) {
    return routepack::test::qpath(p);
}

/// Arguments of `routepack import` of nested-JSON input `in` (4 experts, top-2, 2 layers) as `name`.
QStringList import_args(const fs::path& db, const QString& name, const fs::path& in) {
    return {QStringLiteral("import"),
            QStringLiteral("--db"),
            q(db),
            QStringLiteral("--name"),
            name,
            QStringLiteral("--format"),
            QStringLiteral("nested-json"),
            QStringLiteral("--experts"),
            QStringLiteral("4"),
            QStringLiteral("--top-k"),
            QStringLiteral("2"),
            QStringLiteral("--layers"),
            QStringLiteral("2"),
            QStringLiteral("--quiet"),
            q(in)};
}

/// A folder of good nested-JSON samples (`files` files of 2 samples each) and, when `bad_last`,
/// a last file that does not parse, so that its import fails after reading everything else.
fs::path make_input(const fs::path& dir, int files, bool bad_last) {
    for (int f = 0; f < files; ++f) {
        char name[32];
        std::snprintf(name, sizeof name, "s%05d.jsonl", f);
        write_file(dir / name,
                   "[[[0, 1], [2, 3]], [[1, 2], [3, " + std::to_string(f % 3) + "]]]\n[[[3, 1], [0, 2]]]\n");
    }
    if (bad_last) write_file(dir / "zz-bad.jsonl", "[[[0, 1], [2, 3]], [[1, 2], [3\n");
    return dir;
}

/// Starts the CLI with `args` (no wait).
std::unique_ptr<QProcess> start(const QStringList& args) {
    auto p = std::make_unique<QProcess>();
    p->start(QStringLiteral(ROUTEPACK_CLI), args);
    if (!p->waitForStarted(10000)) qFatal("cannot start the CLI");
    return p;
}

int finish(QProcess& p, QString* err = nullptr) {
    p.waitForFinished(120000);
    if (err) *err = QString::fromUtf8(p.readAllStandardError());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

/// Trace names in the library, read through a read-only connection.
std::vector<std::string> trace_names(const fs::path& db) {
    std::vector<std::string> out;
    for (const auto& t : storage::Library::open(db, storage::OpenMode::ReadOnly)->traces())
        out.push_back(t.name);
    return out;
}

/// Runs the CLI to the end (10 minutes at most): exit status, stderr.
int cli(const QStringList& args, QString* err = nullptr) {
    auto p = start(args);
    return finish(*p, err);
}

/// Saved runs of trace `trace`, over all its windows.
std::size_t saved_runs(const fs::path& db, const std::string& trace) {
    auto lib = storage::Library::open(db, storage::OpenMode::ReadOnly);
    std::size_t n = 0;
    for (const auto& w : lib->windows(trace))
        n += lib->runs(trace, w.name).size();
    return n;
}

/// Entries of `dir` whose name holds `part`.
int entries_with(const fs::path& dir, const std::string& part) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().find(part) != std::string::npos) ++n;
    return n;
}

bool present(const fs::path& p) {
    std::error_code ec;
    return fs::exists(fs::symlink_status(p, ec));
}

} // namespace

class TestLibraryWriters : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // A creates a new library and fails later; B, another process, imported into that file
    // before A's clean-up: A keeps the file, B's trace stays.
    void aTraceCommittedByAnotherProcessIsNeverRemoved() {
        const auto tmp = temp_dir(QStringLiteral("writers-committed"));
        const fs::path db = tmp / "f.db";
        const fs::path in = make_input(tmp / "in", 1, false);
        auto a = storage::Library::open(db, storage::OpenMode::Create);
        QVERIFY(a->created());
        QVERIFY(present(tmp / "f.db-lock"));
        auto b = start(import_args(db, QStringLiteral("small"), in));
        QString err;
        QCOMPARE(finish(*b, &err), 0);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QVERIFY(!a->discard_if_created_and_empty());
        a.reset();
        QCOMPARE(trace_names(db), std::vector<std::string>{"small"});
        QVERIFY(!present(tmp / "f.db-lock")); // the last writer removed the lock file
    }

    // While another writer has the library open (another connection, even of this process), the
    // creator's clean-up keeps the file; once it is closed, an empty new library is removed whole.
    void aLibraryAnotherWriterHoldsOpenIsKept() {
        const auto tmp = temp_dir(QStringLiteral("writers-open"));
        const fs::path db = tmp / "f.db";
        auto a = storage::Library::open(db, storage::OpenMode::Create);
        QVERIFY(a->created());
        auto b = storage::Library::open(db, storage::OpenMode::ReadWrite);
        QVERIFY(!b->created());
        QVERIFY(!b->discard_if_created_and_empty()); // not its file to remove
        QVERIFY(!a->discard_if_created_and_empty()); // b holds it
        QVERIFY(present(db));
        b.reset();
        QVERIFY(a->discard_if_created_and_empty());
        a.reset();
        for (const char* side : {"", "-wal", "-shm", "-lock"})
            QVERIFY2(!present(db.string() + side), side);
        QVERIFY(fs::is_empty(tmp));
    }

    // The same with B a real process in the middle of its import when A cleans up.
    void aLibraryAnotherProcessIsImportingIntoIsKept() {
        const auto tmp = temp_dir(QStringLiteral("writers-importing"));
        const fs::path db = tmp / "f.db";
        const fs::path in = make_input(tmp / "in", 3000, false);
        auto a = storage::Library::open(db, storage::OpenMode::Create);
        std::error_code ec;
        const auto wal_after_create = fs::file_size(db.string() + "-wal", ec);
        auto b = start(import_args(db, QStringLiteral("big"), in));
        // B has the library open once its samples reach the -wal.
        while (b->state() == QProcess::Running && fs::file_size(db.string() + "-wal", ec) <= wal_after_create)
            b->waitForFinished(1);
        const bool overlapped = b->state() == QProcess::Running;
        QVERIFY(!a->discard_if_created_and_empty());
        a.reset();
        QString err;
        QCOMPARE(finish(*b, &err), 0);
        QCOMPARE(trace_names(db), std::vector<std::string>{"big"});
        qInfo("clean-up ran while the other import ran: %s", overlapped ? "yes" : "no (it had finished)");
    }

    // Two real processes: A imports into a new path and fails at its last file, B imports good
    // files into the same path at the same moment. B's trace is always there afterwards.
    void failingAndSucceedingImportsOnOneNewLibrary() {
        const auto tmp = temp_dir(QStringLiteral("writers-race"));
        const fs::path bad = make_input(tmp / "bad", 60, true);
        const fs::path good = make_input(tmp / "good", 1, false);
        for (int round = 0; round < 6; ++round) {
            const fs::path db = tmp / ("f" + std::to_string(round) + ".db");
            // Rounds alternate who starts first.
            auto first = start(
                import_args(db, round % 2 ? QStringLiteral("small") : QStringLiteral("fails"), round % 2 ? good : bad));
            auto second = start(
                import_args(db, round % 2 ? QStringLiteral("fails") : QStringLiteral("small"), round % 2 ? bad : good));
            QString err_first, err_second;
            const int code_first = finish(*first, &err_first), code_second = finish(*second, &err_second);
            const int code_good = round % 2 ? code_first : code_second;
            const int code_bad = round % 2 ? code_second : code_first;
            const QString& err_good = round % 2 ? err_first : err_second;
            const QString& err_bad = round % 2 ? err_second : err_first;
            QVERIFY2(code_good == 0, qPrintable(QStringLiteral("round %1: %2").arg(round).arg(err_good)));
            QCOMPARE(code_bad, 1);
            QVERIFY2(err_bad.contains(QStringLiteral("zz-bad.jsonl")), qPrintable(err_bad));
            QCOMPARE(trace_names(db), std::vector<std::string>{"small"});
            QVERIFY(!present(db.string() + "-lock"));
        }
    }

    // Two imports that create one new library at the same moment both land.
    void twoCreatorsOfOneNewLibraryBothLand() {
        const auto tmp = temp_dir(QStringLiteral("writers-create"));
        const fs::path in1 = make_input(tmp / "in1", 20, false);
        const fs::path in2 = make_input(tmp / "in2", 21, false);
        for (int round = 0; round < 6; ++round) {
            const fs::path db = tmp / ("f" + std::to_string(round) + ".db");
            auto a = start(import_args(db, QStringLiteral("a"), in1));
            auto b = start(import_args(db, QStringLiteral("b"), in2));
            QString err_a, err_b;
            QVERIFY2(finish(*a, &err_a) == 0, qPrintable(QStringLiteral("round %1: %2").arg(round).arg(err_a)));
            QVERIFY2(finish(*b, &err_b) == 0, qPrintable(QStringLiteral("round %1: %2").arg(round).arg(err_b)));
            auto names = trace_names(db);
            std::sort(names.begin(), names.end());
            QCOMPARE(names, (std::vector<std::string>{"a", "b"}));
        }
    }

    // A failed import into a new path leaves nothing behind (library, side files, lock file).
    void aFailedImportIntoANewPathLeavesNothing() {
        const auto tmp = temp_dir(QStringLiteral("writers-failed"));
        const fs::path in = make_input(tmp / "in", 2, true);
        const fs::path out = tmp / "out";
        fs::create_directories(out);
        auto p = start(import_args(out / "f.db", QStringLiteral("t"), in));
        QString err;
        QCOMPARE(finish(*p, &err), 1);
        QVERIFY2(err.contains(QStringLiteral("zz-bad.jsonl")), qPrintable(err));
        QVERIFY(fs::is_empty(out));
    }

    // Writers naming one library through a symlink or a relative path meet the same lock: the
    // creator's clean-up keeps a library another writer opened under another name.
    void oneLockWhateverPathNamesTheLibrary() {
        const auto tmp = temp_dir(QStringLiteral("writers-symlink"));
        const fs::path db = tmp / "lib.db";
        auto a = storage::Library::open(db, storage::OpenMode::Create);
        fs::create_symlink("lib.db", tmp / "link.db");
        auto b = storage::Library::open(tmp / "link.db", storage::OpenMode::ReadWrite);
        QVERIFY(!a->discard_if_created_and_empty());
        QVERIFY(present(db));
        QVERIFY(!present(tmp / "link.db-lock"));
        b.reset();
        // A symlink where the lock file belongs is refused, never followed.
        fs::create_symlink("elsewhere", tmp / "x.db-lock");
        const std::string e = routepack::test::error_of<InputError>(
            [&] { storage::Library::open(tmp / "x.db", storage::OpenMode::Create); });
        QCOMPARE(e, (tmp / "x.db").string() + ": cannot take the library's writer lock (" +
                        (fs::weakly_canonical(tmp) / "x.db-lock").string() + ": is a symbolic link)");
        QVERIFY(!present(tmp / "elsewhere"));
        QVERIFY(!present(tmp / "x.db"));
    }

    // Replacing a library whole (the demo) waits for its writers and then refuses: nothing another
    // process is writing is removed.
    void replacingALibraryRespectsItsWriters() {
        const auto tmp = temp_dir(QStringLiteral("writers-replace"));
        const fs::path db = tmp / "lib.db";
        auto a = storage::Library::open(db, storage::OpenMode::Create);
        const std::string e =
            routepack::test::error_of<storage::LibraryBusy>([&] { storage::Library::remove_unused(db); });
        QCOMPARE(e, db.string() + ": library is in use by another process (its writer lock " +
                        fs::weakly_canonical(db).string() + "-lock is held) while opening it; try again");
        QVERIFY(present(db));
        a.reset();
        storage::Library::remove_unused(db);
        QVERIFY(fs::is_empty(tmp));
        storage::Library::remove_unused(db); // absent: nothing to do
    }

    // Names are UTF-8 text: a trace, window or topology name that is not is refused up front.
    void namesMustBeUtf8() {
        const auto tmp = temp_dir(QStringLiteral("writers-names"));
        auto lib = storage::Library::open(tmp / "lib.db", storage::OpenMode::Create);
        QCOMPARE(routepack::test::error_of<InputError>(
                     [&] { lib->save_topology("t\xff", routepack::known_topology("synthetic-demo-ep8-dp4")); }),
                 std::string("topology name 't\\xff' is not valid UTF-8 (byte 0xff at index 1)"));
        ImportOptions opt;
        opt.format = TraceFormat::NestedJson;
        opt.model.experts = 4;
        opt.model.top_k = 2;
        opt.model.num_hidden_layers = 2;
        const fs::path in = make_input(tmp / "in", 2, false);
        QCOMPARE(routepack::test::error_of<InputError>([&] { lib->import_trace("ds\xff", {in}, opt); }),
                 std::string("trace name 'ds\\xff' is not valid UTF-8 (byte 0xff at index 2)"));
        lib->import_trace("ds", {in}, opt);
        std::vector<std::string> all;
        for (const auto& x : lib->samples("ds"))
            all.push_back(x.id);
        QCOMPARE(routepack::test::error_of<InputError>([&] { lib->create_window("ds", "w\xfe", all, "all"); }),
                 std::string("window name 'w\\xfe' is not valid UTF-8 (byte 0xfe at index 1)"));
        QCOMPARE(lib->windows("ds").size(), std::size_t(0));
    }

    // A lock file left by a killed writer is taken over and removed by the next writer.
    void aStaleLockFileIsHarmless() {
        const auto tmp = temp_dir(QStringLiteral("writers-stale"));
        const fs::path db = tmp / "f.db";
        write_file(tmp / "f.db-lock", "");
        auto a = storage::Library::open(db, storage::OpenMode::Create);
        QVERIFY(a->created());
        a.reset();
        QVERIFY(present(db));
        QVERIFY(!present(tmp / "f.db-lock"));
        QCOMPARE(trace_names(db).size(), std::size_t{0});
    }

    // A sweep is all or nothing: stopped by SIGINT, SIGTERM or SIGHUP at any point it saves no run
    // and writes no output folder (exit 130), or it finished first and everything is there; a
    // SIGKILL leaves at most a hidden partial folder that the next sweep of that output removes.
    void anInterruptedSweepLeavesNoHalfRun() {
        const auto tmp = temp_dir(QStringLiteral("writers-sweep"));
        const fs::path db = tmp / "lib.db";
        QString err;
        QCOMPARE(cli({QStringLiteral("synth"), QStringLiteral("--out"), q(tmp / "syn"), QStringLiteral("--groups"),
                      QStringLiteral("6"), QStringLiteral("--group-size"), QStringLiteral("4"),
                      QStringLiteral("--seed"), QStringLiteral("5")},
                     &err),
                 0);
        QCOMPARE(
            cli({QStringLiteral("import"), QStringLiteral("--db"), q(db), QStringLiteral("--name"),
                 QStringLiteral("syn"), QStringLiteral("--experts"), QStringLiteral("32"), QStringLiteral("--top-k"),
                 QStringLiteral("4"), QStringLiteral("--layers"), QStringLiteral("12"), QStringLiteral("--moe-layers"),
                 QStringLiteral("1-11"), QStringLiteral("--quiet"), q(tmp / "syn")},
                &err),
            0);
        QCOMPARE(cli({QStringLiteral("window"), QStringLiteral("--db"), q(db), QStringLiteral("--trace"),
                      QStringLiteral("syn"), QStringLiteral("--name"), QStringLiteral("step"),
                      QStringLiteral("--split"), QStringLiteral("4")},
                     &err),
                 0);
        const std::size_t windows = 6; // of 4 samples: about 0.25 s of sweep on 2 cores
        const fs::path out = tmp / "out";
        const QStringList sweep = {QStringLiteral("sweep"),
                                   QStringLiteral("--db"),
                                   q(db),
                                   QStringLiteral("--trace"),
                                   QStringLiteral("syn"),
                                   QStringLiteral("--topology"),
                                   QStringLiteral("synthetic-demo-ep8-dp4"),
                                   QStringLiteral("--seed"),
                                   QStringLiteral("3"),
                                   QStringLiteral("--out"),
                                   q(out),
                                   QStringLiteral("--quiet"),
                                   QStringLiteral("--threads"),
                                   QStringLiteral("1")};
        std::size_t runs = 0;
        int stopped = 0, finished = 0;
        const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGKILL};
        for (int round = 0; round < 12; ++round) {
            const int sig = signals[round % 4];
            auto p = start(sweep);
            p->waitForFinished(10 + 20 * round); // 10, 30, ..., 230 ms into the sweep
            if (p->state() == QProcess::Running) ::kill(static_cast<pid_t>(p->processId()), sig);
            p->waitForFinished(120000);
            const bool ok = p->exitStatus() == QProcess::NormalExit && p->exitCode() == 0;
            const std::size_t now = saved_runs(db, "syn");
            if (ok) {
                ++finished;
                QCOMPARE(now, runs + windows);
                QVERIFY(present(out / "sweep.json"));
                QCOMPARE(entries_with(out, ".plan.json"), static_cast<int>(windows));
                fs::remove_all(out);
            } else {
                ++stopped;
                QCOMPARE(now, runs); // nothing of this sweep
                QVERIFY2(!present(out), qPrintable(QStringLiteral("round %1: signal %2").arg(round).arg(sig)));
                if (sig != SIGKILL) {
                    // Stopped cleanly, or killed by the signal's default action before the sweep
                    // began (then it had created nothing).
                    if (p->exitStatus() == QProcess::NormalExit) {
                        QVERIFY2(p->exitCode() == 130, p->readAllStandardError().constData());
                        QCOMPARE(entries_with(tmp, "routepack-partial"), 0); // its own, and stale ones
                    }
                }
            }
            runs = now;
        }
        qInfo("sweeps stopped: %d, finished before the signal: %d", stopped, finished);
        QVERIFY2(stopped >= 4, "every sweep finished before its signal; make the sweep longer");
        // A sweep refused before it plans still removes the partial folder a killed one left.
        {
            const fs::path dead = tmp / ".out.routepack-partial-999999999";
            write_file(dead / util::kPartialFolderMarker, "");
            QStringList refused = sweep;
            refused[refused.indexOf(QStringLiteral("syn"))] = QStringLiteral("no-such-trace");
            QCOMPARE(cli(refused, &err), 1);
            QVERIFY2(err.contains(QStringLiteral("no-such-trace")), qPrintable(err));
            QVERIFY(!present(dead));
        }
        // The next sweep removes what a killed one left, and lands whole.
        QCOMPARE(cli(sweep, &err), 0);
        QCOMPARE(entries_with(tmp, "routepack-partial"), 0);
        QCOMPARE(entries_with(out, ".plan.json"), static_cast<int>(windows));
        QCOMPARE(saved_runs(db, "syn"), runs + windows);
    }

    // The staging folder: written files appear only at commit; a failure removes everything; a
    // folder holding other files keeps them and gets the new ones replaced whole.
    void outputFolderAppearsWholeOrNotAtAll() {
        const auto tmp = temp_dir(QStringLiteral("writers-output"));
        const fs::path out = tmp / "out";
        {
            util::OutputFolder f(out);
            QCOMPARE(f.staging(), tmp / (".out.routepack-partial-" + std::to_string(::getpid())));
            QVERIFY(present(f.staging() / util::kPartialFolderMarker));
            f.write("a.json", "A", "table");
            QVERIFY(!present(out));
            // A file that cannot be written (a folder of that name) names the output file.
            fs::create_directories(f.staging() / "b.json");
            const std::string e = routepack::test::error_of<InputError>([&] { f.write("b.json", "B", "plan"); });
            QVERIFY2(e.rfind((out / "b.json").string() + ": cannot write plan (", 0) == 0, e.c_str());
        } // not committed: nothing stays
        QVERIFY(!present(out));
        QCOMPARE(entries_with(tmp, "routepack-partial"), 0);
        {
            util::OutputFolder f(out);
            f.write("a.json", "A", "table");
            f.commit();
        }
        QCOMPARE(routepack::test::read_file(out / "a.json"), std::string("A"));
        QCOMPARE(entries_with(tmp, "routepack-partial"), 0);
        write_file(out / "keep.txt", "K");
        {
            util::OutputFolder f(out);
            f.write("a.json", "A2", "table");
            f.commit();
        }
        QCOMPARE(routepack::test::read_file(out / "a.json"), std::string("A2"));
        QCOMPARE(routepack::test::read_file(out / "keep.txt"), std::string("K"));
        // Folders missing above the output are made, and removed again when nothing is committed.
        {
            util::OutputFolder f(tmp / "a" / "b" / "out");
            QVERIFY(present(tmp / "a" / "b"));
        }
        QVERIFY(!present(tmp / "a"));
        {
            util::OutputFolder f(tmp / "a" / "b" / "out");
            f.write("x.json", "X", "table");
            f.commit();
        }
        QCOMPARE(routepack::test::read_file(tmp / "a" / "b" / "out" / "x.json"), std::string("X"));
        // Stale partial folders: of a dead process with the marker or empty, removed; of a live
        // process, or without the marker and not empty, kept.
        const fs::path dead = tmp / ".out.routepack-partial-999999999";
        const fs::path dead_empty = tmp / ".out.routepack-partial-999999998";
        const fs::path dead_unmarked = tmp / ".out.routepack-partial-999999997";
        // Killed while its marker was being written: only the marker's temporary file inside.
        const fs::path dead_marking = tmp / ".out.routepack-partial-999999996";
        // A marker-like temporary beside a file of the run's own: kept (not only the marker's).
        const fs::path dead_marking_more = tmp / ".out.routepack-partial-999999995";
        const fs::path alive = tmp / (".out.routepack-partial-" + std::to_string(::getppid()));
        write_file(dead / util::kPartialFolderMarker, "");
        fs::create_directories(dead_empty);
        write_file(dead_unmarked / "x", "");
        write_file(dead_marking / (std::string(util::kPartialFolderMarker) + ".999999996-0.tmp"), "routepack");
        write_file(dead_marking_more / (std::string(util::kPartialFolderMarker) + ".999999995-0.tmp"), "");
        write_file(dead_marking_more / "x.plan.json", "{}");
        write_file(alive / util::kPartialFolderMarker, "");
        util::remove_stale_partial_folders(out);
        QVERIFY(!present(dead_marking));
        QVERIFY(present(dead_marking_more));
        QVERIFY(!present(dead));
        QVERIFY(!present(dead_empty));
        QVERIFY(present(dead_unmarked));
        QVERIFY(present(alive));
    }
};

QTEST_GUILESS_MAIN(TestLibraryWriters)
#include "tst_library_writers.moc"
