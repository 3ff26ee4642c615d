// Deleting and renaming traces, windows and saved runs (storage/library_edit.cpp) on a real SQLite
// file: what each removes (counted, then checked table by table), stored plans following a rename,
// all-or-nothing on a failure, the refusals and their exact texts, read-only libraries.
#include "core/plan/plan_file.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "storage/library.h"
#include "storage/migrations.h"
#include "tests/testutil.h"

#include <QtTest>
#include <algorithm>
#include <sqlite3.h>

using namespace routepack;
using namespace routepack::storage;
namespace fs = std::filesystem;

using routepack::test::error_of;

namespace {

/// Rows of `table` in the library file (a connection of its own).
std::int64_t rows_of(const fs::path& file, const std::string& table) {
    sqlite3* h = nullptr;
    if (sqlite3_open_v2(file.string().c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return -1;
    sqlite3_stmt* st = nullptr;
    std::int64_t n = -1;
    if (sqlite3_prepare_v2(h, ("SELECT COUNT(*) FROM " + table).c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

void exec_sql(const fs::path& file, const std::string& sql) {
    sqlite3* h = nullptr;
    QCOMPARE(sqlite3_open(file.string().c_str(), &h), SQLITE_OK);
    QCOMPARE(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
}

PlannerBudgets tiny_budgets(std::uint64_t seed) {
    PlannerBudgets b;
    b.annealing.levels = 2;
    b.annealing.steps = 20;
    b.seeding.candidates = 4;
    b.seeding.population = 2;
    b.workers = 1;
    b.seed = seed;
    return b;
}

PlanResult plan_of(const Library& lib, const std::string& window, std::uint64_t seed) {
    PlanInput in;
    in.window = lib.load_window("syn", window);
    in.trace_name = "syn";
    in.window_name = window;
    in.topology = known_topology("synthetic-demo-ep8-dp4");
    in.budgets = tiny_budgets(seed);
    return plan_window(in, {}, nullptr);
}

/// Every row of every table of `file` (BLOBs as their hex), sorted per table: equal dumps, equal contents.
std::string dump_of(const fs::path& file) {
    sqlite3* h = nullptr;
    sqlite3_open_v2(file.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
    std::vector<std::string> tables;
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(h, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW)
        tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    std::string out;
    for (const std::string& t : tables) {
        std::vector<std::string> rows;
        sqlite3_prepare_v2(h, ("SELECT * FROM \"" + t + "\"").c_str(), -1, &st, nullptr);
        while (sqlite3_step(st) == SQLITE_ROW) {
            std::string row;
            for (int c = 0; c < sqlite3_column_count(st); ++c) {
                if (sqlite3_column_type(st, c) == SQLITE_BLOB) {
                    const auto* b = static_cast<const unsigned char*>(sqlite3_column_blob(st, c));
                    for (int i = 0; i < sqlite3_column_bytes(st, c); ++i)
                        row += "0123456789abcdef"[b[i] >> 4], row += "0123456789abcdef"[b[i] & 15];
                } else {
                    const unsigned char* v = sqlite3_column_text(st, c);
                    row += v ? reinterpret_cast<const char*>(v) : "NULL";
                }
                row += "|";
            }
            rows.push_back(row);
        }
        sqlite3_finalize(st);
        std::sort(rows.begin(), rows.end());
        out += "== " + t + " (" + std::to_string(rows.size()) + ")\n";
        for (const std::string& r : rows)
            out += r + "\n";
    }
    sqlite3_close(h);
    return out;
}

bool same(const Removal& a, const Removal& b) {
    return a.traces == b.traces && a.windows == b.windows && a.runs == b.runs && a.plans == b.plans &&
           a.samples == b.samples && a.measured == b.measured;
}

QString removal_text(const Removal& r) {
    return QStringLiteral("traces %1 windows %2 runs %3 plans %4 samples %5")
        .arg(r.traces)
        .arg(r.windows)
        .arg(r.runs)
        .arg(r.plans)
        .arg(r.samples);
}

/// The CREATE statement of `table` in the library file.
std::string table_sql(const fs::path& file, const std::string& table) {
    sqlite3* h = nullptr;
    std::string out;
    if (sqlite3_open_v2(file.string().c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return out;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, "SELECT sql FROM sqlite_master WHERE name = ?1", -1, &st, nullptr) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table.c_str(), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

/// Replaces the one occurrence of `from` in `s` by `to` (empty when it does not occur exactly once).
std::string replace_once(const std::string& s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    if (at == std::string::npos || s.find(from, at + 1) != std::string::npos) return {};
    return s.substr(0, at) + to + s.substr(at + from.size());
}

} // namespace

class TestStorageEdit : public QObject {
    Q_OBJECT

    fs::path file_;
    fs::path v4_; ///< a copy of the library as initTestCase left it (made a schema-4 file by olderLibrary)
    std::int64_t runA_ = 0, runB_ = 0, runHalf_ = 0, runFailed_ = 0;

private Q_SLOTS:
    /// Trace "syn" (16 samples), windows "w" (all 16) and "half" (the first 8); two planned runs on
    /// "w", one planned and one failed run on "half".
    void initTestCase() {
        const auto tmp = test::temp_dir(QStringLiteral("storage-edit"));
        SynthConfig c;
        c.groups = 4;
        c.group_size = 4;
        write_synth(c, TraceFormat::VLLM, tmp / "syn");
        auto lib = Library::open(tmp / "lib.routepack");
        ImportOptions o;
        o.model = synth_model(c);
        lib->import_trace("syn", {tmp / "syn"}, o);
        std::vector<std::string> ids;
        for (const auto& s : lib->samples("syn"))
            ids.push_back(s.id);
        QCOMPARE(ids.size(), std::size_t(16));
        lib->create_window("syn", "w", ids, "all");
        lib->create_window("syn", "half", std::vector<std::string>(ids.begin(), ids.begin() + 8), "first 8");
        runA_ = lib->save_run(plan_of(*lib, "w", 1), "t").id;
        runB_ = lib->save_run(plan_of(*lib, "w", 2), "t").id;
        runHalf_ = lib->save_run(plan_of(*lib, "half", 3), "t").id;
        runFailed_ = lib->save_failed_run("syn", "half", "t", known_topology("synthetic-demo-ep8-dp4"), tiny_budgets(4),
                                          "no layout")
                         .id;
        file_ = tmp / "lib.routepack";
        QCOMPARE(rows_of(file_, "plans"), std::int64_t(3));
        QCOMPARE(rows_of(file_, "runs"), std::int64_t(4));
        lib.reset(); // the last connection checkpoints the -wal into the file
        v4_ = tmp / "v4.routepack";
        fs::copy_file(file_, v4_);
    }

    void deletesAreUndoneFromTheTrash() {
        // A copy of the library of initTestCase, whose two runs of "w" form a whole run: each delete
        // with a trash file, then restored, leaves every table as it was, row for row.
        const fs::path file = file_.parent_path() / "undo.routepack";
        const fs::path trash = file_.parent_path() / "undo.trash";
        fs::copy_file(file_, file);
        auto lib = Library::open(file);
        WholeRunSpec spec;
        spec.source = WholeRunSource::Studio;
        QCOMPARE(lib->save_whole_run(spec, {runA_, runB_}), std::int64_t{1});
        const std::string before = dump_of(file);
        QVERIFY(before.find("== whole_run_steps (2)") != std::string::npos);

        const Removal run = lib->delete_run(runA_, trash);
        QCOMPARE(run.trash_item, std::int64_t{1});
        QCOMPARE(lib->whole_run(1).runs, std::vector<std::int64_t>{runB_});
        QCOMPARE(lib->restore_deleted(trash, run.trash_item), "run " + std::to_string(runA_));
        QCOMPARE(dump_of(file), before);

        const Removal window = lib->delete_window("syn", "w", trash);
        QCOMPARE(window.trash_item, std::int64_t{2});
        QCOMPARE(window.runs, std::size_t{2});
        QCOMPARE(lib->whole_runs().size(), std::size_t{0}); // its last step went
        QCOMPARE(lib->restore_deleted(trash, 2), std::string("window 'w' of trace 'syn'"));
        QCOMPARE(dump_of(file), before);

        const Removal trace = lib->delete_trace("syn", trash);
        QCOMPARE(rows_of(file, "models"), std::int64_t{0});
        QCOMPARE(rows_of(file, "samples"), std::int64_t{0});
        QCOMPARE(lib->restore_deleted(trash, trace.trash_item), std::string("trace 'syn'"));
        QCOMPARE(dump_of(file), before);

        // An item goes back once; a trash item of another library is refused; a name taken meanwhile
        // leaves the library as it is.
        QCOMPARE(error_of<InputError>([&] { lib->restore_deleted(trash, trace.trash_item); }),
                 "nothing to restore: item 3 is not in " + trash.string());
        const fs::path other = file_.parent_path() / "undo-other.routepack";
        fs::copy_file(file_, other);
        const Removal gone = lib->delete_run(runB_, trash);
        QCOMPARE(error_of<InputError>([&] { Library::open(other)->restore_deleted(trash, gone.trash_item); }),
                 "cannot restore run " + std::to_string(runB_) + ": it was deleted from " +
                     fs::absolute(file).lexically_normal().string() + ", not " + other.string());
        QCOMPARE(lib->restore_deleted(trash, gone.trash_item), "run " + std::to_string(runB_));
        const Removal half = lib->delete_window("syn", "half", trash);
        std::vector<std::string> ids;
        for (const auto& smp : lib->samples("syn"))
            ids.push_back(smp.id);
        lib->create_window("syn", "half", ids, "again");
        const std::string taken = dump_of(file);
        const std::string why = error_of<InputError>([&] { lib->restore_deleted(trash, half.trash_item); });
        QVERIFY2(why.rfind("cannot restore window 'half' of trace 'syn': the library changed since it was deleted (",
                           0) == 0,
                 why.c_str());
        QCOMPARE(dump_of(file), taken);
        // A read-only library restores nothing.
        auto ro = Library::open(file, OpenMode::ReadOnly);
        QCOMPARE(error_of<LibraryReadOnly>([&] { ro->restore_deleted(trash, half.trash_item); }),
                 file.string() + ": library is read-only (cannot write)");
    }

    void previewsCountWhatGoes() {
        auto lib = Library::open(file_, OpenMode::ReadOnly);
        QVERIFY2(same(lib->trace_removal("syn"), {1, 2, 4, 3, 16}),
                 qPrintable(removal_text(lib->trace_removal("syn"))));
        QVERIFY(same(lib->window_removal("syn", "w"), {0, 1, 2, 2, 0}));
        QVERIFY(same(lib->window_removal("syn", "half"), {0, 1, 2, 1, 0}));
        QVERIFY(same(lib->run_removal(runA_), {0, 0, 1, 1, 0}));
        QVERIFY(same(lib->run_removal(runFailed_), {0, 0, 1, 0, 0})); // a failed run has no plan
        const std::string f = file_.string();
        QCOMPARE(error_of<InputError>([&] { lib->trace_removal("nope"); }), "no trace named 'nope' in " + f);
        QCOMPARE(error_of<InputError>([&] { lib->window_removal("syn", "nope"); }),
                 "trace 'syn' has no window named 'nope' in " + f);
        QCOMPARE(error_of<InputError>([&] { lib->run_removal(99); }), "no run 99 in " + f);
        // A library opened read-only refuses every change, and nothing changes.
        const std::string ro = f + ": library is read-only (cannot write)";
        QCOMPARE(error_of<LibraryReadOnly>([&] { lib->delete_trace("syn"); }), ro);
        QCOMPARE(error_of<LibraryReadOnly>([&] { lib->delete_window("syn", "w"); }), ro);
        QCOMPARE(error_of<LibraryReadOnly>([&] { lib->delete_run(runA_); }), ro);
        QCOMPARE(error_of<LibraryReadOnly>([&] { lib->rename_trace("syn", "x"); }), ro);
        QCOMPARE(error_of<LibraryReadOnly>([&] { lib->rename_window("syn", "w", "x"); }), ro);
        QCOMPARE(error_of<LibraryReadOnly>([&] { lib->rename_run(runA_, "x"); }), ro);
        QCOMPARE(lib->traces().size(), std::size_t(1));
    }

    void deleteRunKeepsTheOthers() {
        auto lib = Library::open(file_, OpenMode::ReadWrite);
        const std::string planB = lib->run_plan_json(runB_);
        QVERIFY(same(lib->delete_run(runA_), {0, 0, 1, 1, 0}));
        QCOMPARE(error_of<InputError>([&] { lib->run(runA_); }),
                 "no run " + std::to_string(runA_) + " in " + file_.string());
        QCOMPARE(error_of<InputError>([&] { lib->delete_run(runA_); }),
                 "no run " + std::to_string(runA_) + " in " + file_.string());
        QCOMPARE(lib->runs("syn", "w").size(), std::size_t(1));
        QCOMPARE(lib->run_plan_json(runB_), planB);
        QCOMPARE(rows_of(file_, "plans"), std::int64_t(2));
        QCOMPARE(rows_of(file_, "run_results WHERE run_id = " + std::to_string(runA_)), std::int64_t(0));
        QCOMPARE(rows_of(file_, "annealing_history WHERE run_id = " + std::to_string(runA_)), std::int64_t(0));
        QVERIFY(rows_of(file_, "run_results WHERE run_id = " + std::to_string(runB_)) >= 4);
        // A failed run goes without a plan to remove.
        QVERIFY(same(lib->delete_run(runFailed_), {0, 0, 1, 0, 0}));
        QCOMPARE(lib->runs("syn", "half").size(), std::size_t(1));
        QCOMPARE(rows_of(file_, "plans"), std::int64_t(2));
    }

    void renameRunNamesItAlone() {
        auto lib = Library::open(file_, OpenMode::ReadWrite);
        const std::string plan = lib->run_plan_json(runB_);
        QCOMPARE(lib->run(runB_).name, std::string()); // saved runs start unnamed
        lib->rename_run(runB_, "seed 2 \u00b7 baseline check");
        QCOMPARE(lib->run(runB_).name, std::string("seed 2 \u00b7 baseline check"));
        QCOMPARE(lib->run_plan_json(runB_), plan); // the plan is not touched
        QCOMPARE(lib->runs("syn", "half").front().name, std::string());
        QCOMPARE(rows_of(file_, "runs WHERE name = 'seed 2 \u00b7 baseline check' AND id = " + std::to_string(runB_)),
                 std::int64_t(1));
        lib->rename_run(runHalf_, "seed 2 \u00b7 baseline check"); // names need not be unique
        // 80 characters of two bytes each are allowed, 81 are not.
        std::string longest;
        for (int k = 0; k < 80; ++k)
            longest += "\u00e9";
        lib->rename_run(runHalf_, longest);
        QCOMPARE(lib->run(runHalf_).name, longest);
        const auto refused = [&](const std::string& name) {
            return error_of<InputError>([&] { lib->rename_run(runHalf_, name); });
        };
        QCOMPARE(refused(longest + "e"), std::string("run name is 81 characters long, more than 80"));
        QCOMPARE(refused(""), std::string("run name must not be empty"));
        QCOMPARE(refused(" lead"), std::string("run name ' lead' must not begin or end with white space"));
        QCOMPARE(refused("trail\t"), std::string("run name 'trail\\t' must not begin or end with white space"));
        QCOMPARE(refused("two\nlines"), std::string("run name 'two\\nlines' must not contain control characters"));
        QCOMPARE(refused("bad\xff"), std::string("run name 'bad\\xff' is not valid UTF-8 (byte 0xff at index 3)"));
        QCOMPARE(error_of<InputError>([&] { lib->rename_run(99, "x"); }), "no run 99 in " + file_.string());
        // The field is named for the front ends (the studio words it by its label).
        try {
            lib->rename_run(runHalf_, " x");
        } catch (const InputError& e) {
            QVERIFY(e.setting());
            QCOMPARE(e.setting()->key, std::string("run_name"));
            QCOMPARE(e.setting()->value, std::string("' x'"));
        }
        QCOMPARE(lib->run(runHalf_).name, longest); // a refused name changes nothing
        lib->rename_run(runHalf_, "half window");
        lib.reset();
        QCOMPARE(Library::open(file_, OpenMode::ReadOnly)->run(runHalf_).name, std::string("half window"));
    }

    void olderLibraryReadOnlyThenMigrated() {
        // A schema-4 library (runs without a name column, no measured steps): the library of
        // initTestCase with migrations 5, 6 and 7 undone and the version set back, its tables then as
        // migrations 1-4 create them.
        exec_sql(v4_, "DROP TRIGGER whole_run_emptied; DROP TABLE whole_run_steps; DROP TABLE whole_runs; "
                      "DROP TABLE measured_plans; DROP TABLE measured_steps; ALTER TABLE runs DROP COLUMN name; "
                      "PRAGMA user_version = 4;");
        {
            const fs::path fresh = v4_.parent_path() / "v4-fresh.routepack";
            std::string sql;
            for (int k = 0; k < 4; ++k)
                sql += detail::migrations()[static_cast<std::size_t>(k)].sql;
            exec_sql(fresh, sql);
            QCOMPARE(table_sql(v4_, "runs"), table_sql(fresh, "runs"));
        }
        exec_sql(v4_, "SELECT COUNT(*) FROM runs"); // the last read-write connection removes the reads' -wal
        QVERIFY(!fs::exists(v4_.string() + "-wal"));
        const std::string bytes = test::read_file(v4_);
        {
            auto old = Library::open(v4_, OpenMode::ReadOnly);
            QCOMPARE(old->schema_version(), 4);
            const auto runs = old->runs("syn", "w");
            QCOMPARE(runs.size(), std::size_t(2));
            QCOMPARE(runs.front().id, runA_);
            QCOMPARE(runs.front().name, std::string());
            QCOMPARE(old->run(runFailed_).name, std::string());
            QCOMPARE(old->run(runFailed_).status, std::string("failed"));
            QVERIFY(old->measured_steps().empty()); // no table before schema 6: nothing measured
            QCOMPARE(error_of<LibraryReadOnly>([&] { old->rename_run(runA_, "x"); }),
                     v4_.string() + ": library is read-only (cannot write)");
        }
        QVERIFY(test::read_file(v4_) == bytes); // not one byte written
        QVERIFY(!fs::exists(v4_.string() + "-wal"));
        QVERIFY(!fs::exists(v4_.string() + "-shm"));
        // A writable open migrates it (4 -> 7): every run unnamed, then renamable; no whole run (runs
        // saved before migration 7 stay per-window runs).
        auto lib = Library::open(v4_, OpenMode::ReadWrite);
        QCOMPARE(lib->schema_version(), 7);
        QCOMPARE(lib->runs("syn", "half").size(), std::size_t(2));
        QCOMPARE(rows_of(v4_, "runs WHERE name = ''"), std::int64_t(4));
        QVERIFY(lib->whole_runs().empty());
        lib->rename_run(runA_, "first");
        QCOMPARE(lib->run(runA_).name, std::string("first"));
        QCOMPARE(lib->run(runB_).name, std::string());
    }

    void renameWindowRewritesItsPlans() {
        auto lib = Library::open(file_, OpenMode::ReadWrite);
        const std::string before = lib->run_plan_json(runB_);
        const std::string other = lib->run_plan_json(runHalf_);
        const std::string f = file_.string();
        QCOMPARE(error_of<InputError>([&] { lib->rename_window("syn", "w", "half"); }),
                 "trace 'syn' already has a window named 'half' in " + f);
        QCOMPARE(error_of<InputError>([&] { lib->rename_window("syn", "w", ""); }),
                 std::string("window name must not be empty"));
        QCOMPARE(error_of<InputError>([&] { lib->rename_window("syn", "nope", "x"); }),
                 "trace 'syn' has no window named 'nope' in " + f);
        lib->rename_window("syn", "w", "w"); // the same name: nothing to do
        lib->rename_window("syn", "w", "step-0");
        // Only inputs.window changed, byte for byte; the other window's plan is untouched.
        const std::string after = lib->run_plan_json(runB_);
        QCOMPARE(after, replace_once(before, "\"window\": \"w\"", "\"window\": \"step-0\""));
        QCOMPARE(lib->run_plan_json(runHalf_), other);
        const PlanFile p = parse_plan(after, "renamed");
        QCOMPARE(p.window_name, std::string("step-0"));
        QCOMPARE(p.trace_name, std::string("syn"));
        QCOMPARE(lib->run(runB_).window, std::string("step-0"));
        QCOMPARE(lib->runs("syn", "step-0").size(), std::size_t(1));
        QCOMPARE(lib->window_sample_ids("syn", "step-0").size(), std::size_t(16));
        QCOMPARE(error_of<InputError>([&] { lib->window_sample_ids("syn", "w"); }),
                 "trace 'syn' has no window named 'w' in " + f);
    }

    void renameTraceIsAllOrNothing() {
        auto lib = Library::open(file_, OpenMode::ReadWrite);
        const std::string planB = lib->run_plan_json(runB_);
        const std::string planHalf = lib->run_plan_json(runHalf_);
        // A damaged plan stops the rename: the trace keeps its name and no other plan changed.
        exec_sql(file_, "UPDATE plans SET plan_json = '[1]' WHERE id = (SELECT plan_id FROM runs WHERE id = " +
                            std::to_string(runHalf_) + ")");
        const std::string err = error_of<InputError>([&] { lib->rename_trace("syn", "syn2"); });
        QVERIFY2(QString::fromStdString(err).startsWith(QString::fromStdString(file_.string() + ": plan ")) &&
                     QString::fromStdString(err).endsWith(
                         QStringLiteral(" is damaged (no inputs object); nothing was renamed")),
                 err.c_str());
        QCOMPARE(lib->traces().front().name, std::string("syn"));
        QCOMPARE(lib->run_plan_json(runB_), planB);
        exec_sql(file_, "UPDATE plans SET plan_json = '" + planHalf +
                            "' WHERE id = (SELECT plan_id FROM runs WHERE id = " + std::to_string(runHalf_) + ")");
        QCOMPARE(error_of<InputError>([&] { lib->rename_trace("syn", ""); }),
                 std::string("trace name must not be empty"));
        QCOMPARE(error_of<InputError>([&] { lib->rename_trace("nope", "x"); }),
                 "no trace named 'nope' in " + file_.string());
        lib->rename_trace("syn", "syn2");
        QCOMPARE(lib->run_plan_json(runB_), replace_once(planB, "\"trace\": \"syn\"", "\"trace\": \"syn2\""));
        QCOMPARE(lib->run_plan_json(runHalf_), replace_once(planHalf, "\"trace\": \"syn\"", "\"trace\": \"syn2\""));
        QCOMPARE(lib->windows("syn2").size(), std::size_t(2));
        QCOMPARE(lib->run(runHalf_).trace, std::string("syn2"));
        QCOMPARE(lib->samples("syn2").size(), std::size_t(16));
        // The same name: nothing to do.
        QCOMPARE(error_of<InputError>([&] { lib->rename_trace("syn2", "syn2"); }), std::string("<no exception>"));
    }

    void deleteWindowThenTrace() {
        auto lib = Library::open(file_, OpenMode::ReadWrite);
        QVERIFY(same(lib->delete_window("syn2", "half"), {0, 1, 1, 1, 0}));
        QCOMPARE(lib->windows("syn2").size(), std::size_t(1));
        QCOMPARE(lib->samples("syn2").size(), std::size_t(16)); // the samples stay with the trace
        QCOMPARE(rows_of(file_, "window_samples"), std::int64_t(16));
        QCOMPARE(rows_of(file_, "plans"), std::int64_t(1));
        QVERIFY(same(lib->delete_trace("syn2"), {1, 1, 1, 1, 16}));
        QVERIFY(lib->traces().empty());
        for (const char* table : {"traces", "samples", "sample_routes", "source_files", "aggregate_totals", "windows",
                                  "window_samples", "plans", "runs", "run_results", "annealing_history", "models"})
            QVERIFY2(rows_of(file_, table) == 0, table);
        QCOMPARE(rows_of(file_, "topologies"), std::int64_t(1)); // saved topologies stay
        lib.reset();
        // The file reopens as a valid, empty library (quick_check on open).
        QVERIFY(Library::open(file_, OpenMode::ReadWrite)->traces().empty());
    }
};

QTEST_GUILESS_MAIN(TestStorageEdit)
#include "tst_storage_edit.moc"
