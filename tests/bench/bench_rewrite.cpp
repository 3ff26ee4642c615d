// Checkpoint rewrite throughput on CPU: a synthetic checkpoint shaped like
// Qwen3-30B-A3B's routed experts (H 2048, moe-ffn 768, 128 experts; 2..4 layers; BF16 gate/up [768, 2048]
// and down [2048, 768] per expert = 9 MiB per expert, 1.21 GB per layer; one shard per layer), rewritten
// with a random permutation per layer (every expert moves), against `cp -r` of the same files on the same
// disk, in the same process. Reported: GB/s of bytes written, ratio to cp, verify GB/s, and the inverse.
//
//   bench_rewrite [--dir DIR] [--layers N] [--experts E] [--workers W] [--keep]
// DIR must have room for 3 x the checkpoint (input, output, cp copy): 2 layers = 2.4 GB each.
#include "core/util/rng.h"
#include "gpu/rewrite.h"
#include "gpu/safetensors/safetensors.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace routepack;
using namespace routepack::gpu;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::uint64_t dir_bytes(const fs::path& d) {
    std::uint64_t n = 0;
    for (const auto& de : fs::recursive_directory_iterator(d))
        if (de.is_regular_file()) n += de.file_size();
    return n;
}

} // namespace

int main(int argc, char** argv) {
    fs::path dir = fs::temp_directory_path() / "routepack-bench-rewrite";
    int layers = 2, experts = 128, workers = 0;
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--dir")
            dir = next();
        else if (a == "--layers")
            layers = std::stoi(next());
        else if (a == "--experts")
            experts = std::stoi(next());
        else if (a == "--workers")
            workers = std::stoi(next());
        else if (a == "--keep")
            keep = true;
        else {
            std::fprintf(stderr,
                         "usage: bench_rewrite [--dir DIR] [--layers N] [--experts E] [--workers W] [--keep]\n");
            return 2;
        }
    }
    const int H = 2048, I = 768;
    fs::remove_all(dir);
    fs::create_directories(dir / "src");

    // Source: one shard per layer, HF Qwen3-MoE names; expert e of layer l filled with byte (l*131+e).
    std::printf("writing %d layer(s) x %d experts (Qwen3-30B-A3B expert shapes) into %s\n", layers, experts,
                (dir / "src").c_str());
    double t0 = now();
    std::string index = "{\"metadata\": {}, \"weight_map\": {";
    std::vector<std::string> bufs;
    for (int l = 0; l < layers; ++l) {
        const std::string shard =
            "model-0000" + std::to_string(l + 1) + "-of-0000" + std::to_string(layers) + ".safetensors";
        bufs.assign(static_cast<std::size_t>(experts), std::string());
        std::vector<TensorData> ts;
        for (int e = 0; e < experts; ++e) {
            bufs[static_cast<std::size_t>(e)].assign(static_cast<std::size_t>(H) * I * 2,
                                                     static_cast<char>((l * 131 + e) & 0xff));
            const auto bytes = std::as_bytes(std::span(bufs[static_cast<std::size_t>(e)]));
            for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
                const std::string name =
                    "model.layers." + std::to_string(l) + ".mlp.experts." + std::to_string(e) + "." + proj + ".weight";
                const bool down = std::strcmp(proj, "down_proj") == 0;
                ts.push_back({name, Dtype::BF16,
                              down ? std::vector<std::uint64_t>{std::uint64_t(H), std::uint64_t(I)}
                                   : std::vector<std::uint64_t>{std::uint64_t(I), std::uint64_t(H)},
                              bytes});
                index +=
                    (l || e || std::strcmp(proj, "gate_proj") != 0 ? ", \"" : "\"") + name + "\": \"" + shard + "\"";
            }
        }
        write_safetensors(dir / "src" / shard, ts, {{"format", "pt"}});
    }
    index += "}}\n";
    std::ofstream(dir / "src" / "model.safetensors.index.json") << index;
    std::ofstream(dir / "src" / "config.json")
        << "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": " << layers << ", \"num_experts\": " << experts
        << ", \"num_experts_per_tok\": 8, \"decoder_sparse_step\": 1, \"mlp_only_layers\": []}\n";
    const std::uint64_t bytes = dir_bytes(dir / "src");
    std::printf("checkpoint: %.2f GB written in %.1f s\n", static_cast<double>(bytes) / 1e9, now() - t0);

    ModelDescription m;
    m.name = "qwen3-30b-a3b-experts";
    m.num_hidden_layers = layers;
    m.experts = experts;
    m.top_k = 8;
    for (int l = 0; l < layers; ++l)
        m.moe_layers.push_back(l);
    Placement pi;
    pi.layers = layers;
    pi.experts = experts;
    pi.ep_ranks = 1;
    Rng rng(7);
    for (int l = 0; l < layers; ++l) {
        std::vector<int> p(static_cast<std::size_t>(experts));
        std::iota(p.begin(), p.end(), 0);
        for (int i = experts - 1; i > 0; --i)
            std::swap(p[static_cast<std::size_t>(i)], p[rng.below(static_cast<std::uint64_t>(i) + 1)]);
        pi.slot.insert(pi.slot.end(), p.begin(), p.end());
    }
    RewriteRequest req;
    req.input = dir / "src";
    req.placement = pi;
    req.plan_layers = m.moe_layers;
    req.plan_model = m;
    req.plan_origin = "bench";
    req.device = RewriteDevice::Cpu;
    req.workers = workers;

    const int reps = 2;
    double best_cp = 1e30, best_rw = 1e30, best_inv = 1e30, best_verify = 1e30;
    for (int r = 0; r < reps; ++r) {
        fs::remove_all(dir / "cp");
        const double c0 = now();
        const std::string cmd = "cp -r '" + (dir / "src").string() + "' '" + (dir / "cp").string() + "' && sync";
        if (std::system(cmd.c_str()) != 0) {
            std::fprintf(stderr, "cp failed\n");
            return 1;
        }
        best_cp = std::min(best_cp, now() - c0);
        fs::remove_all(dir / "cp");

        fs::remove_all(dir / "phys");
        req.output = dir / "phys";
        req.direction = RewriteDirection::Apply;
        req.verify = true;
        const RewriteReport a = rewrite_checkpoint(req);
        best_rw = std::min(best_rw, a.seconds);
        best_verify = std::min(best_verify, a.verify_seconds);

        fs::remove_all(dir / "back");
        RewriteRequest inv = req;
        inv.input = dir / "phys";
        inv.output = dir / "back";
        inv.direction = RewriteDirection::Inverse;
        inv.verify = false;
        const RewriteReport b = rewrite_checkpoint(inv);
        best_inv = std::min(best_inv, b.seconds);
        fs::remove_all(dir / "back");
        if (r == 0)
            std::printf("moved: %d tensors, %.2f GB of %.2f GB\n", a.moved_tensors,
                        static_cast<double>(a.moved_bytes) / 1e9, static_cast<double>(a.bytes_written) / 1e9);
    }
    const double gb = static_cast<double>(bytes) / 1e9;
    std::printf("cp -r + sync      %7.3f s  %6.2f GB/s  (baseline)\n", best_cp, gb / best_cp);
    std::printf("rewrite apply     %7.3f s  %6.2f GB/s  x%.2f of cp\n", best_rw, gb / best_rw, best_cp / best_rw);
    std::printf("rewrite inverse   %7.3f s  %6.2f GB/s  x%.2f of cp\n", best_inv, gb / best_inv, best_cp / best_inv);
    std::printf("verify (re-read)  %7.3f s  %6.2f GB/s of output (reads 2x)\n", best_verify, gb / best_verify);
    if (!keep) fs::remove_all(dir);
    return 0;
}
