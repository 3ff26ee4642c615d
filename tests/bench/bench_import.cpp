// Import throughput (MB/s, samples/s) for the two real sets and a large synthetic trace, into
// memory and into an SQLite library. Baseline measured in the same process: reading the same
// files and hashing them (the floor any importer pays), so the ratios are machine-independent.
//
// Then .npz decompression bombs (built here with libzip, deflated): a per-sample array followed by
// --bomb-mib MiB of zeros, a padded batch whose attention_mask declares and holds (8192, 8192)
// int64 (512 MiB), a batch row of 2^25 padding tokens (shapes consistent: 160 MiB inflated), and a
// valid batch whose responses.npy is followed by --bomb-mib MiB of zeros.
// Each is imported (or refused) with its time and peak RSS growth, against the same archive
// without the bomb imported in the same process.
//
// --bomb-file measures a given archive (e.g. one numpy wrote) the same way, on the bomb cases'
// model (2 MoE layers, 4 experts, top-2).
//
//   bench_import [--shared DIR] [--synth-groups G] [--bomb-mib N] [--bomb-file F.npz]... [--bombs-only]
#include "core/import/import.h"
#include "core/synth/synth.h"
#include "storage/library.h"

#include <zip.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace routepack;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::uint64_t read_and_hash(const std::vector<fs::path>& files, std::uint64_t* bytes) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    *bytes = 0;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        const std::string s = ss.str();
        h = fnv1a64(s.data(), s.size(), h);
        *bytes += s.size();
    }
    return h;
}

void bench(const char* label, const fs::path& input, const ImportOptions& opt) {
    const auto files = collect_trace_files({input});
    std::uint64_t bytes = 0;
    double t0 = now();
    volatile std::uint64_t sink = read_and_hash(files, &bytes);
    (void)sink;
    const double t_read = now() - t0;

    t0 = now();
    ImportSummary s;
    const Trace t = import_trace_to_memory({input}, opt, &s);
    const double t_mem = now() - t0;

    const fs::path db = fs::temp_directory_path() / ("bench-import-" + std::to_string(::getpid()) + ".routepack");
    fs::remove(db);
    double t_db = 0;
    {
        auto lib = storage::Library::open(db);
        t0 = now();
        lib->import_trace("bench", {input}, opt);
        t_db = now() - t0;
    }
    const auto db_bytes = fs::file_size(db);
    fs::remove(db);
    fs::remove(db.string() + "-wal");
    fs::remove(db.string() + "-shm");

    const double mb = bytes / 1e6;
    std::printf("%-22s %6zu samples %8.1f MB | read+hash %7.1f MB/s | import->memory %7.1f MB/s %8.0f samples/s "
                "(x%.2f of read) | import->SQLite %7.1f MB/s %8.0f samples/s (x%.2f of read), library %.1f MB\n",
                label, t.size(), mb, mb / t_read, mb / t_mem, t.size() / t_mem, t_read / t_mem, mb / t_db,
                t.size() / t_db, t_read / t_db, db_bytes / 1e6);
}

/// A libzip source of `head` followed by `zeros` zero bytes, generated as libzip reads it.
struct ZeroTail {
    std::string head;
    std::uint64_t zeros = 0, pos = 0;
    zip_error_t error;
};

zip_int64_t zero_tail_cb(void* ud, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    auto* g = static_cast<ZeroTail*>(ud);
    const std::uint64_t total = g->head.size() + g->zeros;
    switch (cmd) {
    case ZIP_SOURCE_OPEN:
        g->pos = 0;
        return 0;
    case ZIP_SOURCE_READ: {
        const std::uint64_t n = std::min<std::uint64_t>(len, total - g->pos);
        auto* out = static_cast<char*>(data);
        for (std::uint64_t i = 0; i < n; ++i, ++g->pos)
            out[i] = g->pos < g->head.size() ? g->head[g->pos] : '\0';
        return static_cast<zip_int64_t>(n);
    }
    case ZIP_SOURCE_CLOSE:
        return 0;
    case ZIP_SOURCE_STAT: {
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->size = total;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof(*st);
    }
    case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&g->error, data, len);
    case ZIP_SOURCE_FREE:
        zip_error_fini(&g->error);
        delete g;
        return 0;
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
                                              ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
    default:
        return -1;
    }
}

/// An .npy v1.0 header (numpy format spec) for `descr` and `shape` text, padded to 64 bytes.
std::string npy_header(const std::string& descr, const std::string& shape) {
    std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + h.size() + 1) % 64 != 0)
        h.push_back(' ');
    h.push_back('\n');
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size() & 0xFF) + static_cast<char>(h.size() >> 8) +
           h;
}

std::string le(const std::vector<std::int64_t>& v, int size) {
    std::string s;
    for (const std::int64_t x : v)
        for (int b = 0; b < size; ++b)
            s.push_back(static_cast<char>((static_cast<std::uint64_t>(x) >> (8 * b)) & 0xFF));
    return s;
}

/// Writes a deflated archive of (name, head, zero tail bytes) entries.
void write_bomb(const fs::path& path, const std::vector<std::tuple<std::string, std::string, std::uint64_t>>& entries) {
    int err = 0;
    zip_t* za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    if (!za) throw std::runtime_error("cannot create " + path.string());
    for (const auto& [name, head, zeros] : entries) {
        auto* g = new ZeroTail{head, zeros, 0, {}};
        zip_error_init(&g->error);
        zip_source_t* src = zip_source_function(za, zero_tail_cb, g);
        const zip_int64_t idx = zip_file_add(za, name.c_str(), src, ZIP_FL_ENC_UTF_8);
        zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), ZIP_CM_DEFLATE, 0);
    }
    if (zip_close(za) != 0) throw std::runtime_error("cannot write " + path.string());
}

/// Peak resident set size in KiB since the last reset_peak_rss() (/proc/self/status VmHWM).
long peak_rss_kib() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}
long rss_kib() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}
/// Resets VmHWM to the current RSS (Linux: "5" written to /proc/self/clear_refs).
void reset_peak_rss() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

struct Cost {
    double seconds = 0;
    long peak_growth_kib = 0;
    std::string outcome;
};

Cost import_cost(const fs::path& input, const ModelDescription& m) {
    ImportOptions o;
    o.model = m;
    reset_peak_rss();
    const long before = rss_kib();
    const double t0 = now();
    Cost c;
    try {
        ImportSummary s;
        const Trace t = import_trace_to_memory({input}, o, &s);
        c.outcome = "imported " + std::to_string(t.size()) + " samples";
    } catch (const std::exception& e) {
        c.outcome = std::string("refused: ") + e.what();
    }
    c.seconds = now() - t0;
    c.peak_growth_kib = peak_rss_kib() - before;
    return c;
}

/// The bomb cases' model: 2 MoE layers, 4 experts, top-2.
ModelDescription bomb_model() {
    ModelDescription m;
    m.name = "bomb";
    m.num_hidden_layers = 2;
    m.experts = 4;
    m.top_k = 2;
    m.moe_layers = {0, 1};
    return m;
}

void bench_bombs(std::uint64_t bomb_mib, const std::vector<fs::path>& files) {
    const ModelDescription m = bomb_model();
    for (const fs::path& f : files) {
        const Cost c = import_cost(f, m);
        std::printf("npz file %-24s %8.1f KB archive | %.4f s, peak RSS +%.1f MB | %s\n", f.filename().c_str(),
                    fs::file_size(f) / 1e3, c.seconds, c.peak_growth_kib / 1024.0, c.outcome.c_str());
    }
    const fs::path dir = fs::temp_directory_path() / ("bench-bombs-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::uint64_t tail = bomb_mib << 20;
    // 2 rows x 2 layers x top-2 (one sample); a batch [2, 4, 2, 2] with every route [0, 1].
    const std::string sample = npy_header("<i4", "(2, 2, 2)") + le({0, 1, 2, 3, 0, 2, 3, 1}, 4);
    std::vector<std::int64_t> ids(32);
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<std::int64_t>(i % 2);
    const std::string routes = npy_header("<i2", "(2, 4, 2, 2)") + le(ids, 2);
    const std::string mask = npy_header("<i8", "(2, 4)") + le({1, 1, 1, 0, 1, 1, 1, 1}, 8);
    const std::string responses = npy_header("<i8", "(2, 1)") + le({7, 7}, 8);
    struct Case {
        const char* label;
        std::vector<std::tuple<std::string, std::string, std::uint64_t>> bomb, baseline;
    };
    const std::vector<Case> cases = {
        {"per-sample + zeros", {{"a.npy", sample, tail}}, {{"a.npy", sample, 0}}},
        {"512 MiB attention_mask",
         {{"routed_experts.npy", routes, 0}, {"attention_mask.npy", npy_header("<i8", "(8192, 8192)"), 512u << 20}},
         {{"routed_experts.npy", routes, 0}, {"attention_mask.npy", mask, 0}}},
        // Consistent shapes: a batch row of 2^25 padding tokens (routes int8, mask bool, all zero).
        {"2^25-token padding row",
         {{"routed_experts.npy", npy_header("|i1", "(1, 33554432, 2, 2)"), 128u << 20},
          {"attention_mask.npy", npy_header("|b1", "(1, 33554432)"), 32u << 20}},
         {{"routed_experts.npy", routes, 0}, {"attention_mask.npy", mask, 0}}},
        {"responses + zeros",
         {{"routed_experts.npy", routes, 0}, {"attention_mask.npy", mask, 0}, {"responses.npy", responses, tail}},
         {{"routed_experts.npy", routes, 0}, {"attention_mask.npy", mask, 0}, {"responses.npy", responses, 0}}},
    };
    for (const Case& c : cases) {
        const fs::path bomb = dir / "bomb.npz", base = dir / "base.npz";
        write_bomb(bomb, c.bomb);
        write_bomb(base, c.baseline);
        import_cost(base, m); // warm-up: first-use allocations are not the valid archive's cost
        const Cost b0 = import_cost(base, m);
        const Cost b1 = import_cost(bomb, m);
        std::printf("npz bomb %-24s %8.1f KB archive | %.4f s (x%.1f of the valid archive's %.4f s), peak RSS +%.1f MB "
                    "(valid +%.1f MB) | %s\n",
                    c.label, fs::file_size(bomb) / 1e3, b1.seconds, b1.seconds / std::max(b0.seconds, 1e-6), b0.seconds,
                    b1.peak_growth_kib / 1024.0, b0.peak_growth_kib / 1024.0, b1.outcome.c_str());
    }
    fs::remove_all(dir);
}

} // namespace

int main(int argc, char** argv) {
    fs::path shared = ROUTEPACK_SHARED_DIR;
    int synth_groups = 32;
    std::uint64_t bomb_mib = 1536;
    bool bombs_only = false;
    std::vector<fs::path> bomb_files;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--shared") && i + 1 < argc)
            shared = argv[++i];
        else if (!std::strcmp(argv[i], "--synth-groups") && i + 1 < argc)
            synth_groups = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--bomb-mib") && i + 1 < argc)
            bomb_mib = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--bomb-file") && i + 1 < argc)
            bomb_files.emplace_back(argv[++i]);
        else if (!std::strcmp(argv[i], "--bombs-only"))
            bombs_only = true;
        else {
            std::printf("usage: bench_import [--shared DIR] [--synth-groups G] [--bomb-mib N] [--bomb-file F.npz]... "
                        "[--bombs-only]\n");
            return 2;
        }
    }
    try {
        bench_bombs(bomb_mib, bomb_files);
        if (bombs_only) return 0;
        if (fs::exists(shared / "traces")) {
            ImportOptions ds;
            ds.model = known_model("deepseek-v2-lite");
            bench("deepseek-v2-lite csv", shared / "traces/deepseek-v2-lite", ds);
            ImportOptions l4;
            l4.model = known_model("llama4-maverick");
            bench("llama4-maverick json", shared / "traces/llama4-maverick", l4);
        } else {
            std::printf("shared traces absent under %s: real sets skipped\n", shared.c_str());
        }
        SynthConfig c;
        c.groups = synth_groups;
        c.group_size = 8;
        c.num_hidden_layers = 25;
        c.first_dense_layers = 1;
        c.experts = 64;
        c.top_k = 6;
        c.prompt_mean = 512;
        c.response_mean = 1536;
        c.max_length = 8192;
        const fs::path dir = fs::temp_directory_path() / ("bench-synth-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        for (TraceFormat f : {TraceFormat::VLLM, TraceFormat::SGLang, TraceFormat::Npz}) {
            const fs::path sub = dir / to_string(f);
            write_synth(c, f, sub);
            ImportOptions o;
            o.model = synth_model(c);
            const std::string label = std::string("synthetic ") + to_string(f);
            bench(label.c_str(), sub, o);
        }
        fs::remove_all(dir);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_import: %s\n", e.what());
        return 1;
    }
    return 0;
}
