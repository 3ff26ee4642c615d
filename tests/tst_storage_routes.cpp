// Per-token routes in the library (schema migration 3, storage/counts_codec.h tag 0x03): the blob
// codec both ways and every refusal of a damaged blob, routes surviving import -> load (trace,
// samples, window), libraries from before migration 3 (no routes: communication n/a, read-only
// reads of a version-2 file), the run_results rebuild (rows kept, new methods accepted), and the
// size DeepSeek-V2-Lite's 599 samples add to a library file.
#include "core/import/import.h"
#include "core/model/model.h"
#include "core/plan/comm/comm.h"
#include "core/util/errors.h"
#include "storage/counts_codec.h"
#include "storage/library.h"
#include "storage/migrations.h"
#include "tests/testutil.h"

#include <QtTest>

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

using namespace routepack;
using namespace routepack::storage;
namespace fs = std::filesystem;
using routepack::test::error_of;

namespace {

/// A raw connection beside the library's (foreign keys off, as sqlite3 opens them).
struct Raw {
    sqlite3* db = nullptr;
    explicit Raw(const fs::path& p) {
        if (sqlite3_open_v2(p.string().c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
            qFatal("cannot open %s", p.string().c_str());
    }
    ~Raw() { sqlite3_close_v2(db); }
    /// "" on success, else SQLite's message.
    std::string exec(const std::string& sql) {
        char* err = nullptr;
        const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
        std::string out = rc == SQLITE_OK ? "" : (err ? err : "error");
        sqlite3_free(err);
        return out;
    }
    /// Rows of a query, columns joined by '|'.
    std::vector<std::string> rows(const std::string& sql) {
        sqlite3_stmt* st = nullptr;
        std::vector<std::string> out;
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return {"<prepare failed>"};
        while (sqlite3_step(st) == SQLITE_ROW) {
            std::string line;
            for (int c = 0; c < sqlite3_column_count(st); ++c) {
                if (c) line += '|';
                const auto* t = sqlite3_column_text(st, c);
                line += t ? reinterpret_cast<const char*>(t) : "NULL";
            }
            out.push_back(line);
        }
        sqlite3_finalize(st);
        return out;
    }
};

ModelDescription tiny_model() {
    ModelDescription m;
    m.name = "tiny";
    m.num_hidden_layers = 3;
    m.experts = 4;
    m.top_k = 2;
    m.moe_layers = {1, 2};
    m.source = "tst_storage_routes";
    return m;
}

ImportOptions nested_options() {
    ImportOptions o;
    o.format = TraceFormat::NestedJson;
    o.model = tiny_model();
    return o;
}

/// Three samples as nested-JSON lines over all 3 layers (layer 0 dense), one missing route.
const char* kTrace = "[[[0,1],[0,1],[2,3]],[[0,1],[3,2],[1,null]]]\n"
                     "[[[0,1],[1,2],[0,3]]]\n"
                     "[[[0,1],[2,0],[3,1]],[[0,1],[0,3],[2,1]],[[0,1],[1,0],[0,2]]]\n";

SampleRoutes sample_routes(int E) {
    SampleRoutes r = SampleRoutes::make(3, 2, 2, E);
    for (int l = 0; l < 2; ++l)
        for (int t = 0; t < 3; ++t)
            for (int s = 0; s < 2; ++s)
                if ((l + t + s) % 5 != 4) r.set(l, t, s, (l * 7 + t * 3 + s * (E - 1)) % E);
    return r;
}

std::string decode_error(std::vector<std::uint8_t> blob, std::int64_t tokens = 3, int L = 2, int K = 2, int E = 300) {
    return error_of<detail::BlobError>([&] { detail::decode_routes(blob, tokens, L, K, E); });
}

} // namespace

class TestStorageRoutes : public QObject {
    Q_OBJECT
    fs::path dir_;

private Q_SLOTS:
    void initTestCase() { dir_ = test::temp_dir(QStringLiteral("storage-routes")); }
    void cleanupTestCase() { fs::remove_all(dir_); }

    void codecRoundTrip() {
        for (const int E : {4, 255, 256, 65535, 65536}) {
            const SampleRoutes r = sample_routes(E);
            const auto blob = detail::encode_routes(r);
            QCOMPARE(int(blob[0]), 3);
            QCOMPARE(int(blob[1]), route_id_width(E));
            QCOMPARE(int(blob[2]), 3); // tokens, layers, top-k: one varint byte each
            QCOMPARE(int(blob[3]), 2);
            QCOMPARE(int(blob[4]), 2);
            QCOMPARE(detail::decode_routes(blob, 3, 2, 2, E), r);
        }
        QCOMPARE(error_of<std::invalid_argument>([] { detail::encode_routes(SampleRoutes{}); }),
                 std::string("encode_routes: the sample has no routes"));
    }

    void codecRefusals() {
        const auto good = detail::encode_routes(sample_routes(300));
        QCOMPARE(decode_error({}), std::string("routes blob is shorter than its header"));
        auto b = good;
        b[0] = 1;
        QCOMPARE(decode_error(b), std::string("unknown routes blob format tag 1 (expected 3)"));
        QCOMPARE(decode_error(good, 3, 2, 2, 200),
                 std::string("routes blob has 2-byte ids, expected 1 for 200 experts"));
        QCOMPARE(decode_error(good, 4),
                 std::string("routes blob is 3 tokens x 2 layers x top-2, expected 4 x 2 x top-2"));
        QCOMPARE(decode_error({3, 2, 0x83}), std::string("routes blob ends inside its token count"));
        QCOMPARE(decode_error({3, 2, 0x83, 0x00, 2, 2}),
                 std::string("routes blob token count has an overlong encoding"));
        b = good;
        b.push_back(0);
        QCOMPARE(decode_error(b), std::string("routes blob has 1 bytes after its zlib stream"));
        b.assign(good.begin(), good.end() - 3);
        QCOMPARE(decode_error(b), std::string("routes blob's zlib stream is truncated"));
        b = good;
        b[7] ^= 0xff;
        QVERIFY2(decode_error(b).starts_with("routes blob"), decode_error(b).c_str());
        // A stream of the wrong length, and an id out of range, both well-formed zlib.
        SampleRoutes shorter = SampleRoutes::make(2, 2, 2, 300);
        auto s = detail::encode_routes(shorter);
        s[2] = 3;
        QCOMPARE(decode_error(s), std::string("routes blob inflates to 16 bytes, expected 24"));
        SampleRoutes longer = SampleRoutes::make(4, 2, 2, 300);
        s = detail::encode_routes(longer);
        s[2] = 3;
        QCOMPARE(decode_error(s), std::string("routes blob inflates to more than 24 bytes"));
        SampleRoutes bad = SampleRoutes::make(3, 2, 2, 300);
        bad.set(1, 2, 0, 299);
        s = detail::encode_routes(bad);
        QCOMPARE(decode_error(s, 3, 2, 2, 299),
                 std::string("routes blob holds expert id 299 at position 10, outside 0..298"));
    }

    void importLoadKeepsRoutes() {
        const fs::path in = dir_ / "t.jsonl";
        test::write_file(in, kTrace);
        const Trace mem = import_trace_to_memory({in}, nested_options());
        QVERIFY(mem.has_routes());
        const fs::path f = dir_ / "lib.routepack";
        auto lib = Library::open(f);
        QCOMPARE(lib->schema_version(), 7);
        lib->import_trace("t", {in}, nested_options());
        const Trace t = lib->load_trace("t");
        QVERIFY(t.has_routes());
        QCOMPARE(t.routes, mem.routes);
        QCOMPARE(t.counts, mem.counts);
        QCOMPARE(t.routes[0].at(1, 1, 1), -1);
        QCOMPARE(t.routes[2].at(0, 2, 0), 1);
        const Trace two = lib->load_samples("t", {mem.samples[2].id, mem.samples[0].id});
        QCOMPARE(two.routes, (std::vector<SampleRoutes>{mem.routes[2], mem.routes[0]}));
        lib->create_window("t", "w", {mem.samples[1].id}, "ids");
        const Trace w = lib->load_window("t", "w");
        QCOMPARE(w.routes, std::vector<SampleRoutes>{mem.routes[1]});
        // RouteLoading::Skip reads the same samples and counts without the routes.
        const Trace skipped = lib->load_trace("t", RouteLoading::Skip);
        QVERIFY(skipped.routes.empty());
        QCOMPARE(skipped.counts, t.counts);
        QCOMPARE(skipped.size(), t.size());
        QVERIFY(lib->load_window("t", "w", RouteLoading::Skip).routes.empty());
        QVERIFY(lib->load_samples("t", {mem.samples[2].id}, RouteLoading::Skip).routes.empty());
        Topology one, two_nodes;
        one.ep_ranks = two_nodes.ep_ranks = 2;
        one.dp_slots = two_nodes.dp_slots = 2;
        two_nodes.gpus_per_node = 1;
        QVERIFY(routes_for(one) == RouteLoading::Skip);
        QVERIFY(routes_for(two_nodes) == RouteLoading::Load);
        // Routes go with their samples.
        Raw raw(f);
        QCOMPARE(raw.rows("SELECT count(*) FROM sample_routes"), std::vector<std::string>{"3"});
        QCOMPARE(raw.exec("PRAGMA foreign_keys = ON; DELETE FROM traces"), std::string());
        QCOMPARE(raw.rows("SELECT count(*) FROM sample_routes"), std::vector<std::string>{"0"});
    }

    void damagedRoutesNameTheSample() {
        const fs::path in = dir_ / "d.jsonl";
        test::write_file(in, kTrace);
        const fs::path f = dir_ / "damaged.routepack";
        auto lib = Library::open(f);
        lib->import_trace("t", {in}, nested_options());
        const std::string id = lib->samples("t")[1].id;
        Raw(f).exec(
            "UPDATE sample_routes SET routes = x'0301' WHERE sample_ref = (SELECT id FROM samples WHERE position = 1)");
        QCOMPARE(error_of<InputError>([&] { lib->load_trace("t"); }),
                 f.string() + ": trace 't' sample '" + id +
                     "': damaged routes (routes blob ends inside its token count)");
    }

    void samplesWithoutRoutesAreNotAvailable() {
        // What a library imported before migration 3 holds after migrating: samples, no routes.
        const fs::path in = dir_ / "old.jsonl";
        test::write_file(in, kTrace);
        const fs::path f = dir_ / "old.routepack";
        auto lib = Library::open(f);
        lib->import_trace("t", {in}, nested_options());
        Raw(f).exec("DELETE FROM sample_routes");
        const Trace t = lib->load_trace("t");
        QCOMPARE(t.size(), std::size_t(3));
        QVERIFY(t.routes.empty());
        QVERIFY(!comm_available(t));
        Topology topo;
        topo.ep_ranks = 2;
        topo.dp_slots = 1;
        QVERIFY(!comm_cost_if_available(Layout::from_cells(1, 1, {{0, 1, 2}}), t, topo, identity_placement(2, 4, 2)));
        QCOMPARE(std::string(kCommUnavailable), std::string("n/a (re-import the trace)"));
    }

    void oneSampleWithoutRoutes() {
        const fs::path in = dir_ / "mixed.jsonl";
        test::write_file(in, kTrace);
        const fs::path f = dir_ / "mixed.routepack";
        auto lib = Library::open(f);
        lib->import_trace("t", {in}, nested_options());
        Raw(f).exec("DELETE FROM sample_routes WHERE sample_ref = (SELECT id FROM samples WHERE position = 0)");
        const Trace t = lib->load_trace("t");
        QCOMPARE(t.routes.size(), std::size_t(3));
        QVERIFY(t.routes[0].empty());
        QVERIFY(!t.routes[1].empty());
        QVERIFY(!t.has_routes());
        QVERIFY(lib->load_samples("t", {t.samples[1].id, t.samples[2].id}).has_routes());
    }

    void migratesVersion2() {
        const fs::path f = dir_ / "v2.routepack";
        {
            Raw raw(f);
            QCOMPARE(raw.exec(detail::migrations()[0].sql), std::string());
            QCOMPARE(raw.exec(detail::migrations()[1].sql), std::string());
            QCOMPARE(raw.exec("PRAGMA application_id = " + std::to_string(detail::kApplicationId) +
                              "; PRAGMA user_version = 2"),
                     std::string());
            QCOMPARE(
                raw.exec(
                    "INSERT INTO models VALUES (1, 'm', 1, 2, 1, '[0]', 's');"
                    "INSERT INTO traces (id, name, format, model_id, sample_count, imported_at) "
                    "VALUES (1, 't', 'nested-json', 1, 1, '2026-01-01');"
                    "INSERT INTO samples (trace_id, position, sample_id, length, routed_rows, length_rule, counts) "
                    "VALUES (1, 0, 'a', 2, 1, 'rows-plus-one', x'010100');"
                    "INSERT INTO windows VALUES (1, 1, 'w', 'd', 1, '2026-01-01');"
                    "INSERT INTO topologies (id, name, ep_ranks, dp_slots, cap_tokens, definition, created_at) "
                    "VALUES (1, 'x', 1, 1, 4, '{}', '2026-01-01');"
                    "INSERT INTO runs (id, window_id, topology_id, budgets, seed, workers, status, started_at) "
                    "VALUES (1, 1, 1, '{}', 7, 1, 'finished', '2026-01-01');"
                    "INSERT INTO run_results VALUES (1, 'routepack', 2, 1.5, 2.5, 0.5, '{\"joint\":1}');"),
                std::string());
        }
        {
            // Read-only reads a version-2 file as it is: samples without routes.
            auto ro = Library::open(f, OpenMode::ReadOnly);
            QCOMPARE(ro->schema_version(), 2);
            const Trace t = ro->load_trace("t");
            QCOMPARE(t.size(), std::size_t(1));
            QCOMPARE(t.counts, (std::vector<std::uint32_t>{1, 0}));
            QVERIFY(!t.has_routes());
        }
        auto lib = Library::open(f, false);
        QCOMPARE(lib->schema_version(), 7);
        QVERIFY(!lib->load_trace("t").has_routes());
        Raw raw(f);
        QCOMPARE(raw.rows("SELECT * FROM run_results"),
                 std::vector<std::string>{"1|routepack|2|1.5|2.5|0.5|{\"joint\":1}"});
        QCOMPARE(raw.exec("INSERT INTO run_results VALUES (1, 'grouter', 2, 1, 1, 1, '{}');"
                          "INSERT INTO run_results VALUES (1, 'routepack+comm', 2, 1, 1, 1, '{}')"),
                 std::string());
        QCOMPARE(
            raw.exec("INSERT INTO run_results VALUES (1, 'nope', 2, 1, 1, 1, '{}')"),
            std::string("CHECK constraint failed: method IN ('baseline', 'reorder', 'karmarkar-karp', 'routepack',\n"
                        "                                                    'grouter', 'routepack+comm')"));
        QCOMPARE(raw.rows("SELECT \"table\" FROM pragma_foreign_key_list('run_results')"),
                 std::vector<std::string>{"runs"});
        QCOMPARE(raw.rows("SELECT name FROM sqlite_master WHERE name LIKE 'run_results%' AND type = 'table'"),
                 std::vector<std::string>{"run_results"});
    }

    void deepseekRoutesSize() {
        ROUTEPACK_REQUIRE_SHARED(ds, "traces/deepseek-v2-lite");
        ImportOptions opt;
        opt.model = known_model("deepseek-v2-lite");
        const fs::path f = dir_ / "ds.routepack";
        {
            auto lib = Library::open(f);
            lib->import_trace("ds", {ds}, opt);
            const Trace t = lib->load_trace("ds");
            QCOMPARE(t.size(), std::size_t(599));
            QVERIFY(t.has_routes());
            std::int64_t tokens = 0;
            for (const auto& r : t.routes)
                tokens += r.tokens;
            QCOMPARE(tokens, std::int64_t(55918));
            QCOMPARE(t.routes[0].width, 1);
        }
        const auto with_routes = fs::file_size(f);
        std::int64_t blob_bytes = 0;
        {
            Raw raw(f);
            blob_bytes = std::stoll(raw.rows("SELECT sum(length(routes)) FROM sample_routes").at(0));
            QCOMPARE(raw.exec("DELETE FROM sample_routes; VACUUM"), std::string());
        }
        const auto without = fs::file_size(f);
        qInfo("deepseek-v2-lite routes: %lld blob bytes (raw 8723208), library file %llu -> %llu bytes (+%llu)",
              static_cast<long long>(blob_bytes), static_cast<unsigned long long>(without),
              static_cast<unsigned long long>(with_routes), static_cast<unsigned long long>(with_routes - without));
        QVERIFY(with_routes > without);
        QVERIFY2(with_routes - without <= 8'000'000, "routes add more than 8 MB");
    }
};

QTEST_GUILESS_MAIN(TestStorageRoutes)
#include "tst_storage_routes.moc"
