// Import throughput (MB/s, samples/s) for the two real sets and a large synthetic trace, into
// memory and into an SQLite library. Baseline measured in the same process: reading the same
// files and hashing them (the floor any importer pays), so the ratios are machine-independent.
//
//   bench_import [--shared DIR] [--synth-samples N]
#include "core/import/import.h"
#include "core/synth/synth.h"
#include "storage/library.h"

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

} // namespace

int main(int argc, char** argv) {
    fs::path shared = ROUTEPACK_SHARED_DIR;
    int synth_groups = 32;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--shared") && i + 1 < argc)
            shared = argv[++i];
        else if (!std::strcmp(argv[i], "--synth-groups") && i + 1 < argc)
            synth_groups = std::atoi(argv[++i]);
        else {
            std::printf("usage: bench_import [--shared DIR] [--synth-groups G]\n");
            return 2;
        }
    }
    try {
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
