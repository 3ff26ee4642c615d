// libFuzzer harnesses of the library's stored values (storage/counts_codec.h, storage/library.cpp,
// storage/runs.cpp). Only BlobError (codec) or InputError (library) may come out: any other
// exception, crash or sanitizer report is a finding.
//
// ROUTEPACK_FUZZ_BLOBS == 1 (fuzz_counts_codec): the blob codec alone. Byte 0 picks the decoder
//   (0 counts tag 0x01, 1 totals tag 0x02, 2 routes tag 0x03); the next bytes give the expected
//   shape (counts/totals: byte 1 = L*E values; routes: tokens, layers, top-k, experts), the rest is
//   the blob. A blob that decodes must be the canonical encoding (counts/totals: encode(decode(b))
//   == b, as overlong varints and trailing bytes are refused), and decoded routes must survive
//   encode + decode unchanged; a difference aborts.
// ROUTEPACK_FUZZ_BLOBS == 2 (fuzz_library_blobs): a stored column of a real library file replaced
//   by the input and read back through the Library API. A template library is built once per
//   process in the scratch folder (a nested-json trace "t" of two samples with routes, window "w",
//   a failed run on topology "topo" with timings and one run_results row, a load-only aggregate
//   trace "agg"); each input copies it, then byte 0 picks the column (0 samples.counts, 1
//   sample_routes.routes, 2 aggregate_totals.totals, 3 runs.budgets, 4 runs.timings, 5
//   topologies.definition, 6 run_results.metrics) and the rest is its new value.
#include "core/import/import.h"
#include "core/model/topology.h"
#include "core/util/errors.h"
#include "storage/counts_codec.h"
#include "storage/library.h"
#include "tests/fuzz/fuzz_util.h"

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace routepack;
namespace sd = routepack::storage::detail;

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "fuzz_storage_blobs: %s\n", what);
    std::abort();
}

#if ROUTEPACK_FUZZ_BLOBS == 1

void fuzz_codec(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return;
    const std::span<const std::uint8_t> all(data, size);
    try {
        switch (data[0] % 3) {
        case 0: {
            std::vector<std::uint32_t> out(data[1]);
            const auto blob = all.subspan(2);
            sd::decode_counts(blob, out);
            if (sd::encode_counts(out) != std::vector<std::uint8_t>(blob.begin(), blob.end()))
                finding("a counts blob that decodes is not the canonical encoding of its values");
            break;
        }
        case 1: {
            std::vector<std::uint64_t> out(data[1]);
            const auto blob = all.subspan(2);
            sd::decode_totals(blob, out);
            if (sd::encode_totals(out) != std::vector<std::uint8_t>(blob.begin(), blob.end()))
                finding("a totals blob that decodes is not the canonical encoding of its values");
            break;
        }
        default: {
            if (size < 6) return;
            const std::int64_t tokens = data[1] % 17;
            const int layers = data[2] % 5, top_k = data[3] % 5;
            const int experts = 1 + (data[4] | (data[5] << 8)); // 1..65536: 1-, 2- and 4-byte ids
            const SampleRoutes r = sd::decode_routes(all.subspan(6), tokens, layers, top_k, experts);
            if (!r.empty() && !r.bytes.empty()) {
                const SampleRoutes again = sd::decode_routes(sd::encode_routes(r), tokens, layers, top_k, experts);
                if (again.bytes != r.bytes) finding("decoded routes change through encode + decode");
            }
            break;
        }
        }
    } catch (const sd::BlobError&) {
    }
}

#elif ROUTEPACK_FUZZ_BLOBS == 2

/// The nested-json trace and aggregate model: 2 MoE layers (all), 4 experts, top-2.
ModelDescription fuzz_model() {
    ModelDescription m;
    m.name = "fuzz";
    m.num_hidden_layers = 2;
    m.experts = 4;
    m.top_k = 2;
    m.moe_layers = {0, 1};
    m.source = "fuzz harness";
    return m;
}

void exec(sqlite3* db, const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::fprintf(stderr, "fuzz_storage_blobs: %s: %s\n", sql.c_str(), err ? err : "?");
        std::abort();
    }
}

/// The template library (see the file comment), built once; returns its path and the run id.
const std::filesystem::path& template_library(std::int64_t* run_id) {
    static std::int64_t id = 0;
    static const std::filesystem::path path = [] {
        const auto dir = fuzz::scratch_dir();
        const auto file = dir / "template.routepack";
        std::filesystem::remove(file);
        const std::string trace = "[[[0, 1], [2, 3]], [[1, 2], [3, 0]]]\n[[[3, 1], [0, 2]], [[2, 0], [1, 3]]]\n";
        const auto tpath =
            fuzz::write_input("trace.jsonl", reinterpret_cast<const std::uint8_t*>(trace.data()), trace.size());
        const std::string agg = R"({"counts": [[1, 2, 3, 4], [4, 3, 2, 1]], "num_layers": 2, "num_experts": 4})";
        const auto apath =
            fuzz::write_input("counts.json", reinterpret_cast<const std::uint8_t*>(agg.data()), agg.size());
        {
            auto lib = storage::Library::open(file);
            ImportOptions o;
            o.model = fuzz_model();
            o.format = parse_trace_format("nested-json");
            lib->import_trace("t", {tpath}, o);
            o.format = parse_trace_format("aggregate");
            lib->import_trace("agg", {apath}, o);
            std::vector<std::string> ids;
            for (const auto& s : lib->samples("t"))
                ids.push_back(s.id);
            lib->create_windows("t", {{"w", ids, "all"}});
            const Topology topo = parse_topology(
                R"({"ep_ranks": 2, "experts_per_layer": 4, "dp_slots": 2, "edp_shards": [[0, 1]], "token_cap": 8, )"
                R"("attention_stages": [{"name": "mla", "alpha": 1.0, "beta": 0.0}]})",
                "fuzz/topology.json");
            id = lib->save_failed_run("t", "w", "topo", topo, PlannerBudgets{}, "fuzz").id;
        }
        sqlite3* db = nullptr;
        if (sqlite3_open(file.c_str(), &db) != SQLITE_OK) finding("cannot open the template library");
        exec(db, "UPDATE runs SET timings = '{\"plan\": 1.5, \"score\": 0.25}'");
        exec(db, "INSERT INTO run_results (run_id, method, rows, score_max_u, score_sum_u, score_max_j, metrics) "
                 "VALUES (" +
                     std::to_string(id) +
                     ", 'baseline', 1, 1.0, 2.0, 3.0, '{\"cv_global\": 0.5, \"ep_peak_sum\": 3, \"ep_tail_peak\": 2, "
                     "\"ep_balance_efficiency\": 0.9, \"attention_sum\": 1.0, \"joint\": 2.0, \"cap_violations\": 0, "
                     "\"empty_cells\": 0}')");
        sqlite3_close(db);
        return file;
    }();
    *run_id = id;
    return path;
}

void fuzz_library(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return;
    std::int64_t run_id = 0;
    const auto& tpl = template_library(&run_id);
    const auto work = fuzz::scratch_dir() / "work.routepack";
    std::filesystem::copy_file(tpl, work, std::filesystem::copy_options::overwrite_existing);
    struct Column {
        const char* sql;
        bool blob;
    };
    static const Column columns[] = {
        {"UPDATE samples SET counts = ?1 WHERE position = 0", true},
        {"UPDATE sample_routes SET routes = ?1 WHERE sample_ref = (SELECT MIN(sample_ref) FROM sample_routes)", true},
        {"UPDATE aggregate_totals SET totals = ?1", true},
        {"UPDATE runs SET budgets = ?1", false},
        {"UPDATE runs SET timings = ?1", false},
        {"UPDATE topologies SET definition = ?1", false},
        {"UPDATE run_results SET metrics = ?1", false},
    };
    const int pick = data[0] % 7;
    const Column& c = columns[pick];
    sqlite3* db = nullptr;
    if (sqlite3_open(work.c_str(), &db) != SQLITE_OK) finding("cannot open the work library");
    exec(db, "PRAGMA synchronous = OFF"); // a scratch copy: no fsync per input
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, c.sql, -1, &st, nullptr) != SQLITE_OK) finding("cannot prepare the update");
    const int n = static_cast<int>(size - 1);
    if (c.blob)
        sqlite3_bind_blob(st, 1, data + 1, n, SQLITE_TRANSIENT);
    else
        sqlite3_bind_text(st, 1, reinterpret_cast<const char*>(data + 1), n, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (rc != SQLITE_DONE) return; // a CHECK constraint refused the value: nothing stored to read
    try {
        const auto lib = storage::Library::open(work, storage::OpenMode::ReadOnly);
        switch (pick) {
        case 0:
            (void)lib->load_trace("t", storage::RouteLoading::Skip);
            (void)lib->load_window("t", "w", storage::RouteLoading::Skip);
            break;
        case 1:
            (void)lib->load_trace("t", storage::RouteLoading::Load);
            break;
        case 2:
            (void)lib->layer_totals("agg");
            (void)lib->load_trace("agg", storage::RouteLoading::Skip);
            break;
        default:
            (void)lib->topologies();
            (void)lib->run(run_id);
            (void)lib->runs("t", "w");
            break;
        }
    } catch (const InputError&) {
    }
}

#else
#error "ROUTEPACK_FUZZ_BLOBS must be 1 or 2"
#endif

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#if ROUTEPACK_FUZZ_BLOBS == 1
    fuzz_codec(data, size);
#else
    fuzz_library(data, size);
#endif
    return 0;
}
