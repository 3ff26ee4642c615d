// rewrite_gpu_check: the CUDA checks of the checkpoint rewriter for a GPU machine without Qt.
//
//   rewrite_gpu_check [--gb N] [--work DIR] [--checkpoints DIR] [--bandwidth-mb M] [--keep] [--emulate]
//
// 1. Edge cases: a hand-made plan (odd lengths, unaligned offsets, overlapping and reversed source reads,
//    a segment longer than a chunk, an empty file) with several chunk sizes: CUDA output == expected bytes
//    == CPU executor output.
// 2. Real checkpoints (--checkpoints, e.g. a copy of ../shared/checkpoints): apply with a random placement,
//    and a self-contained --permute-router export (group-preserving placement where config n_group > 1),
//    CPU vs CUDA byte equality, default and small chunks.
// 3. A multi-GB synthetic checkpoint (--gb, default 4; Qwen3-30B-A3B expert shapes: 128 experts of
//    3 x [768, 2048] bf16 per MoE layer, random contents, plus odd-sized per-expert f32 scale tensors):
//    plans a permutation (routers too), runs the CPU and the CUDA executor into two folders, compares
//    them file by file, checks the canaries (each expert's scale tensor holds layer * 1000 + expert, so
//    every output slot must hold the expert the placement puts there), checks the CUDA output against
//    its sources (verify_rewrite), then inverts the
//    CUDA output on CUDA and compares with the source; prints the throughput of each executor (GB/s of
//    bytes written, fdatasync included).
// 4. Device bandwidth (measure_cuda_bandwidth): pinned H2D / D2H GB/s, D2D copy and gather kernel
//    read+write TB/s, and the rewrite throughput (read+write) against the D2D copy.
// Prints PASS / FAIL per check and one SUMMARY line; exits 1 on any failure, 2 on bad arguments, 0 with a
// SKIP line when there is no CUDA device. --emulate runs the CUDA executor's host emulation instead (no
// GPU needed, no bandwidth figures): a smoke test of this program on a build machine.
#include "core/model/model.h"
#include "core/util/errors.h"
#include "core/util/rng.h"
#include "gpu/cuda/rewrite_cuda.h"
#include "gpu/rewrite.h"
#include "gpu/safetensors/safetensors.h"
#include "tests/rewrite_testutil.h"

#include <nlohmann/json.hpp>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace routepack;
using namespace routepack::gpu;
namespace fs = std::filesystem;

using routepack::test::group_placement;
using routepack::test::random_placement;

using routepack::test::rewrite_request;

namespace {

struct Options {
    double gb = 4;
    fs::path work = "rewrite-gpu-check-work";
    fs::path checkpoints;
    std::size_t bandwidth_mb = 1024;
    bool keep = false;
    bool emulate = false;
};

int g_failures = 0;

void pass(const std::string& what) {
    std::printf("PASS %s\n", what.c_str());
    std::fflush(stdout);
}
void fail(const std::string& what) {
    std::printf("FAIL %s\n", what.c_str());
    std::fflush(stdout);
    ++g_failures;
}
void info(const std::string& what) {
    std::printf("  %s\n", what.c_str());
    std::fflush(stdout);
}

/// printf-formats one number.
std::string fmt(const char* f, double a) {
    const int n = std::snprintf(nullptr, 0, f, a);
    std::string s(static_cast<std::size_t>(std::max(n, 0)) + 1, '\0');
    std::snprintf(s.data(), s.size(), f, a);
    s.pop_back();
    return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_text(const fs::path& p, const std::string& s) {
    std::ofstream o(p, std::ios::binary);
    o << s;
    o.close();
    if (!o) throw InputError(p.string() + ": cannot write");
}

/// "" when the files hold the same bytes, else where they first differ. Reads in 64 MiB chunks.
std::string compare_files(const fs::path& a, const fs::path& b) {
    std::error_code ea, eb;
    const auto na = fs::file_size(a, ea), nb = fs::file_size(b, eb);
    if (ea) return a.string() + ": missing";
    if (eb) return b.string() + ": missing";
    if (na != nb)
        return b.string() + ": " + std::to_string(nb) + " bytes, " + a.string() + " has " + std::to_string(na);
    const int fa = ::open(a.c_str(), O_RDONLY | O_CLOEXEC), fb = ::open(b.c_str(), O_RDONLY | O_CLOEXEC);
    std::string res;
    if (fa < 0 || fb < 0) res = "cannot open " + (fa < 0 ? a : b).string();
    constexpr std::size_t kChunk = 64u << 20;
    std::vector<char> x(kChunk), y(kChunk);
    for (std::uint64_t off = 0; res.empty() && off < na; off += kChunk) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, na - off));
        auto rd = [&](int fd, char* buf) {
            std::size_t got = 0;
            while (got < n) {
                const ssize_t r = ::pread(fd, buf + got, n - got, static_cast<off_t>(off + got));
                if (r <= 0) return false;
                got += static_cast<std::size_t>(r);
            }
            return true;
        };
        if (!rd(fa, x.data()) || !rd(fb, y.data())) {
            res = "read failed at offset " + std::to_string(off);
            break;
        }
        if (std::memcmp(x.data(), y.data(), n) != 0) {
            std::size_t k = 0;
            while (x[k] == y[k])
                ++k;
            res = b.filename().string() + " differs from " + a.string() + " first at byte " + std::to_string(off + k);
        }
    }
    if (fa >= 0) ::close(fa);
    if (fb >= 0) ::close(fb);
    return res;
}

/// Compares every output file of `plan` in the two folders; "" when all equal.
std::string compare_outputs(const RewritePlan& plan, const fs::path& a, const fs::path& b) {
    for (const OutputFile& f : plan.outputs)
        if (std::string d = compare_files(a / f.name, b / f.name); !d.empty()) return d;
    return {};
}

/// Copies config.json, the index and the other non-safetensors files into `dir`, as rewrite_checkpoint does.
void copy_other_files(const RewritePlan& plan, const fs::path& dir) {
    for (const fs::path& p : plan.other_files)
        fs::copy(p, dir / p.filename(), fs::copy_options::recursive);
}

/// The CUDA executor under test (or its host emulation).
std::uint64_t run_cuda(const Options& o, const RewritePlan& plan, const fs::path& dir, std::string* device,
                       const StagedRewriteOptions& staged = {}) {
    StagedRewriteOptions s = staged;
    s.host_emulation = o.emulate;
    return execute_rewrite_staged(plan, dir, s, {}, nullptr, device);
}

void fresh_dir(const fs::path& d) {
    fs::remove_all(d);
    fs::create_directories(d);
}

// ---------------------------------------------------------------------------------------------------
// 1. Edge cases

std::string random_bytes(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::string s(n, '\0');
    for (auto& c : s)
        c = static_cast<char>(rng.next() >> 56);
    return s;
}

void check_edges(const Options& o) {
    const fs::path root = o.work / "edges";
    fresh_dir(root);
    RewritePlan plan;
    const std::size_t sizes[] = {200003, 77777, 5001};
    std::vector<std::string> src;
    for (int i = 0; i < 3; ++i) {
        src.push_back(random_bytes(sizes[i], 100 + static_cast<std::uint64_t>(i)));
        plan.sources.push_back(fs::absolute(root / ("src" + std::to_string(i) + ".bin")));
        write_text(plan.sources.back(), src.back());
    }
    auto file = [&](const std::string& name, const std::vector<std::tuple<int, std::uint64_t, std::uint64_t>>& segs) {
        OutputFile f;
        f.name = name;
        for (const auto& [sf, s, len] : segs) {
            f.segments.push_back(CopySegment{f.size, sf, s, len});
            f.size += len;
        }
        plan.outputs.push_back(f);
    };
    file("a.safetensors", {{0, 0, 8},
                           {0, 8, 1},
                           {1, 77000, 777},
                           {0, 3, 5},
                           {2, 4000, 0},
                           {0, 100001, 90001},
                           {1, 13, 4099},
                           {2, 0, 5001},
                           {0, 16, 65553},
                           {1, 13, 4099},
                           {0, 199990, 13}});
    file("b.safetensors", {});
    file("c.safetensors", {{2, 5000, 1}, {0, 1, 150000}, {1, 0, 77777}});
    std::vector<std::tuple<int, std::uint64_t, std::uint64_t>> rev;
    for (int e = 15; e >= 0; --e)
        rev.emplace_back(0, static_cast<std::uint64_t>(e) * 3001 + 7, 3001);
    file("d.safetensors", rev);

    fresh_dir(root / "cpu");
    execute_rewrite_cpu(plan, root / "cpu", 0, {}, nullptr);
    const std::pair<std::uint64_t, std::size_t> variants[] = {
        {64ull << 20, 1u << 16}, {4096, 1u << 16}, {1000, 3}, {16, 1}, {65539, 5}};
    for (const auto& [chunk, pieces] : variants) {
        const std::string name =
            "edge segments, chunk " + std::to_string(chunk) + " B, " + std::to_string(pieces) + " pieces";
        try {
            fresh_dir(root / "cuda");
            run_cuda(o, plan, root / "cuda", nullptr, StagedRewriteOptions{chunk, pieces, false});
            std::string diff;
            for (const OutputFile& f : plan.outputs) {
                std::string want;
                for (const CopySegment& s : f.segments)
                    want += src[static_cast<std::size_t>(s.src_file)].substr(static_cast<std::size_t>(s.src),
                                                                             static_cast<std::size_t>(s.len));
                if (read_text(root / "cuda" / f.name) != want) diff = f.name + ": not the bytes its segments name";
            }
            if (diff.empty()) diff = compare_outputs(plan, root / "cpu", root / "cuda");
            if (diff.empty())
                pass(name);
            else
                fail(name + ": " + diff);
        } catch (const std::exception& e) {
            fail(name + ": " + e.what());
        }
    }
    if (!o.keep) fs::remove_all(root);
}

// ---------------------------------------------------------------------------------------------------
// 2. Real checkpoints

void check_real(const Options& o) {
    const char* names[] = {"qwen3_moe", "mixtral", "olmoe", "deepseek_v3", "gpt_oss"};
    for (const char* n : names) {
        const fs::path in = o.checkpoints / n / "checkpoint";
        if (!fs::is_directory(in)) {
            fail(std::string("real checkpoint ") + n + ": " + in.string() + " is missing");
            continue;
        }
        for (const bool router : {false, true}) {
            const std::string name = std::string("real checkpoint ") + n + (router ? " --permute-router" : " apply");
            try {
                const std::string cfg_text = read_text(in / "config.json");
                const ModelDescription m = model_from_hf_config(cfg_text, (in / "config.json").string());
                const auto cfg = nlohmann::json::parse(cfg_text);
                const int n_group = cfg.value("n_group", 1);
                const Placement pi = router && n_group > 1
                                         ? group_placement(m.num_moe_layers(), m.experts, m.experts / n_group)
                                         : random_placement(m.num_moe_layers(), m.experts, 5);
                const fs::path root = o.work / (std::string("real-") + n);
                fresh_dir(root);
                RewriteRequest req = rewrite_request(in, root / "planned", pi, m);
                req.permute_router = router;
                const RewritePlan plan = plan_rewrite(req);
                fresh_dir(root / "cpu");
                execute_rewrite_cpu(plan, root / "cpu", 0, {}, nullptr);
                std::string diff;
                for (const StagedRewriteOptions& s : {StagedRewriteOptions{}, StagedRewriteOptions{4099, 7, false}}) {
                    fresh_dir(root / "cuda");
                    run_cuda(o, plan, root / "cuda", nullptr, s);
                    if (diff.empty()) diff = compare_outputs(plan, root / "cpu", root / "cuda");
                }
                if (diff.empty()) diff = verify_rewrite(plan, root / "cuda");
                if (diff.empty())
                    pass(name + " (CUDA == CPU, " + std::to_string(plan.moved_tensors) + " tensors moved)");
                else
                    fail(name + ": " + diff);
                if (!o.keep) fs::remove_all(root);
            } catch (const std::exception& e) {
                fail(name + ": " + e.what());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// 3. Multi-GB synthetic checkpoint

struct BigShape {
    int layers = 1, experts = 128, hidden = 2048, moe_inter = 768;
};

BigShape big_shape(double gb) {
    BigShape s;
    const double per_layer = 3.0 * s.experts * s.moe_inter * s.hidden * 2; // bf16 expert weights
    if (gb * 1e9 >= per_layer) {
        s.layers = std::max(1, static_cast<int>(std::lround(gb * 1e9 / per_layer)));
    } else {
        s.moe_inter = std::max(1, static_cast<int>(gb * 1e9 / (3.0 * s.experts * s.hidden * 2)));
    }
    return s;
}

/// Fills `buf` with pseudo-random bytes derived from `seed` (parallel, 1 MiB blocks).
void fill_random(std::vector<std::byte>& buf, std::uint64_t seed) {
    constexpr std::size_t kBlock = 1u << 20;
    const std::size_t blocks = (buf.size() + kBlock - 1) / kBlock;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks), [&](const tbb::blocked_range<std::size_t>& r) {
        for (std::size_t b = r.begin(); b != r.end(); ++b) {
            std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + b;
            const std::size_t end = std::min(buf.size(), (b + 1) * kBlock);
            for (std::size_t i = b * kBlock; i < end; i += 8) {
                const std::uint64_t v = splitmix64(x);
                std::memcpy(buf.data() + i, &v, std::min<std::size_t>(8, end - i));
            }
        }
    });
}

/// Canary tensors (section 4 of the checkpoint-formats reference): every per-expert
/// `down_proj.weight_scale_inv` [3, 5] f32 of layer l, expert e holds l * 1000 + e in every element, so the
/// output's slot v must hold l * 1000 + physical_to_logical[l][v] after an apply.
bool parse_canary_name(const std::string& name, int* layer, int* expert) {
    char rest[64] = {};
    return std::sscanf(name.c_str(), "model.layers.%d.mlp.experts.%d.%63s", layer, expert, rest) == 3 &&
           std::string(rest) == "down_proj.weight_scale_inv";
}
float canary_value(int layer, int expert) {
    return static_cast<float>(layer * 1000 + expert);
}

/// Checks every canary tensor in the output folder's shards against the placement (apply direction).
/// Returns "" or the first wrong slot, and the number checked in *checked.
std::string check_canaries(const fs::path& dir, const Placement& pi, int* checked) {
    *checked = 0;
    std::vector<int> p2l(pi.slot.size());
    for (int l = 0; l < pi.layers; ++l)
        for (int e = 0; e < pi.experts; ++e)
            p2l[static_cast<std::size_t>(l) * static_cast<std::size_t>(pi.experts) +
                static_cast<std::size_t>(pi.at(l, e))] = e;
    for (const auto& de : fs::directory_iterator(dir)) {
        if (de.path().extension() != ".safetensors") continue;
        const SafetensorsFile f = SafetensorsFile::open(de.path());
        for (const TensorInfo& t : f.tensors()) {
            int l = -1, v = -1;
            if (!parse_canary_name(t.name, &l, &v)) continue;
            const float want = canary_value(
                l,
                p2l[static_cast<std::size_t>(l) * static_cast<std::size_t>(pi.experts) + static_cast<std::size_t>(v)]);
            const auto d = f.data(t);
            for (std::size_t b = 0; b + 4 <= d.size(); b += 4) {
                float got = 0;
                std::memcpy(&got, d.data() + b, 4);
                if (got != want) return t.name + " holds " + std::to_string(got) + ", expected " + std::to_string(want);
            }
            ++*checked;
        }
    }
    return {};
}

/// Writes a Qwen3-MoE-named sharded checkpoint of about `gb` GB with random contents into `dir`.
/// Returns (bytes of safetensors files, model).
std::pair<std::uint64_t, ModelDescription> write_big_checkpoint(const fs::path& dir, const BigShape& s) {
    fresh_dir(dir);
    struct Spec {
        std::string name;
        Dtype dtype;
        std::vector<std::uint64_t> shape;
    };
    std::vector<Spec> specs;
    const auto H = static_cast<std::uint64_t>(s.hidden), M = static_cast<std::uint64_t>(s.moe_inter);
    // Layers number from 0 (all MoE, as Qwen3-30B-A3B); per expert three bf16 matrices and one canary.
    specs.push_back({"model.embed_tokens.weight", Dtype::BF16, {64, H}});
    specs.push_back({"model.norm.weight", Dtype::BF16, {H}});
    specs.push_back({"lm_head.weight", Dtype::BF16, {64, H}});
    for (int l = 0; l < s.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        specs.push_back({p + "input_layernorm.weight", Dtype::BF16, {H}});
        specs.push_back({p + "post_attention_layernorm.weight", Dtype::BF16, {H}});
        specs.push_back({p + "mlp.gate.weight", Dtype::BF16, {static_cast<std::uint64_t>(s.experts), H}});
        for (int e = 0; e < s.experts; ++e) {
            const std::string q = p + "mlp.experts." + std::to_string(e) + ".";
            specs.push_back({q + "gate_proj.weight", Dtype::BF16, {M, H}});
            specs.push_back({q + "up_proj.weight", Dtype::BF16, {M, H}});
            specs.push_back({q + "down_proj.weight", Dtype::BF16, {H, M}});
            specs.push_back({q + "down_proj.weight_scale_inv", Dtype::F32, {3, 5}}); // canary; 60 bytes: odd alignment
        }
    }
    std::sort(specs.begin(), specs.end(), [](const Spec& a, const Spec& b) { return a.name < b.name; });
    auto nbytes = [](const Spec& sp) {
        std::uint64_t n = dtype_bits(sp.dtype) / 8;
        for (auto d : sp.shape)
            n *= d;
        return n;
    };
    constexpr std::uint64_t kShard = 1ull << 30;
    std::vector<std::vector<std::size_t>> shards;
    std::uint64_t cur = 0, total = 0;
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const std::uint64_t n = nbytes(specs[i]);
        if (shards.empty() || (cur > 0 && cur + n > kShard)) {
            shards.emplace_back();
            cur = 0;
        }
        shards.back().push_back(i);
        cur += n;
        total += n;
    }
    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    std::uint64_t file_bytes = 0;
    for (std::size_t k = 0; k < shards.size(); ++k) {
        char name[64];
        std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, shards.size());
        std::vector<std::vector<std::byte>> bufs;
        bufs.reserve(shards[k].size());
        std::vector<TensorData> tensors;
        for (std::size_t i : shards[k]) {
            bufs.emplace_back(static_cast<std::size_t>(nbytes(specs[i])));
            int l = -1, e = -1;
            if (parse_canary_name(specs[i].name, &l, &e)) {
                const float v = canary_value(l, e);
                for (std::size_t b = 0; b + 4 <= bufs.back().size(); b += 4)
                    std::memcpy(bufs.back().data() + b, &v, 4);
            } else {
                fill_random(bufs.back(), std::hash<std::string>{}(specs[i].name));
            }
            tensors.push_back({specs[i].name, specs[i].dtype, specs[i].shape, std::span<const std::byte>(bufs.back())});
            weight_map[specs[i].name] = name;
        }
        write_safetensors(dir / name, tensors, {{"format", "pt"}});
        file_bytes += fs::file_size(dir / name);
    }
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weight_map;
    write_text(dir / "model.safetensors.index.json", index.dump(2) + "\n");
    nlohmann::ordered_json cfg;
    cfg["architectures"] = {"Qwen3MoeForCausalLM"};
    cfg["model_type"] = "qwen3_moe";
    cfg["num_hidden_layers"] = s.layers;
    cfg["num_experts"] = s.experts;
    cfg["num_experts_per_tok"] = 8;
    cfg["decoder_sparse_step"] = 1;
    cfg["mlp_only_layers"] = nlohmann::json::array();
    cfg["hidden_size"] = s.hidden;
    cfg["moe_intermediate_size"] = s.moe_inter;
    cfg["vocab_size"] = 64;
    const std::string text = cfg.dump(2) + "\n";
    write_text(dir / "config.json", text);
    return {file_bytes, model_from_hf_config(text, (dir / "config.json").string())};
}

struct BigResult {
    double cpu_gbps = 0, cuda_gbps = 0, inverse_gbps = 0;
    std::uint64_t bytes = 0;
    bool ran = false;
};

BigResult check_big(const Options& o) {
    BigResult r;
    const BigShape shape = big_shape(o.gb);
    const fs::path root = o.work / "big";
    const fs::path src = root / "source";
    try {
        fresh_dir(root);
        auto t0 = std::chrono::steady_clock::now();
        const auto [bytes, model] = write_big_checkpoint(src, shape);
        info("synthetic checkpoint: " + std::to_string(shape.layers) + " MoE layer(s) x " +
             std::to_string(shape.experts) + " experts x 3 x [" + std::to_string(shape.moe_inter) + ", " +
             std::to_string(shape.hidden) + "] bf16, " + fmt("%.2f GB", static_cast<double>(bytes) / 1e9) + " in " +
             fmt("%.1f s", seconds_since(t0)));
        RewriteRequest req =
            rewrite_request(src, root / "planned", random_placement(shape.layers, shape.experts, 42), model);
        req.permute_router = true;
        const RewritePlan plan = plan_rewrite(req);
        r.bytes = bytes;
        info("plan: " + std::to_string(plan.outputs.size()) + " shard(s), " + std::to_string(plan.moved_tensors) +
             " tensors moved, " + fmt("%.2f GB moved", static_cast<double>(plan.moved_bytes) / 1e9));

        fresh_dir(root / "cpu");
        t0 = std::chrono::steady_clock::now();
        const std::uint64_t cpu_bytes = execute_rewrite_cpu(plan, root / "cpu", 0, {}, nullptr);
        const double cpu_s = seconds_since(t0);
        r.cpu_gbps = static_cast<double>(cpu_bytes) / cpu_s / 1e9;
        info(fmt("CPU executor:  %.2f s, ", cpu_s) + fmt("%.2f GB/s written", r.cpu_gbps));

        fresh_dir(root / "cuda");
        std::string device;
        t0 = std::chrono::steady_clock::now();
        const std::uint64_t cuda_bytes = run_cuda(o, plan, root / "cuda", &device);
        const double cuda_s = seconds_since(t0);
        r.cuda_gbps = static_cast<double>(cuda_bytes) / cuda_s / 1e9;
        info("CUDA executor: " + fmt("%.2f s, ", cuda_s) + fmt("%.2f GB/s written", r.cuda_gbps) + " on " + device);
        r.ran = true;

        std::string diff = cuda_bytes == cpu_bytes ? compare_outputs(plan, root / "cpu", root / "cuda")
                                                   : "bytes written differ: CPU " + std::to_string(cpu_bytes) +
                                                         ", CUDA " + std::to_string(cuda_bytes);
        if (diff.empty())
            pass(fmt("multi-GB synthetic checkpoint (%.2f GB): CUDA output == CPU output, byte for byte",
                     static_cast<double>(bytes) / 1e9));
        else
            fail("multi-GB synthetic checkpoint: " + diff);
        if (!o.keep) fs::remove_all(root / "cpu");
        int canaries = 0;
        diff = check_canaries(root / "cuda", req.placement, &canaries);
        if (diff.empty() && canaries == shape.layers * shape.experts)
            pass("multi-GB synthetic checkpoint: canaries: all " + std::to_string(canaries) +
                 " slots hold the expert the placement puts there");
        else
            fail("multi-GB synthetic checkpoint: canaries (" + std::to_string(canaries) + " checked): " + diff);
        diff = verify_rewrite(plan, root / "cuda");
        if (diff.empty())
            pass("multi-GB synthetic checkpoint: every CUDA-written segment equals its source (verify_rewrite)");
        else
            fail("multi-GB synthetic checkpoint: verify_rewrite: " + diff);

        // Inverse on CUDA back to logical order == the source.
        copy_other_files(plan, root / "cuda");
        RewriteRequest inv = req;
        inv.input = root / "cuda";
        inv.output = root / "inverse-planned";
        inv.direction = RewriteDirection::Inverse;
        const RewritePlan iplan = plan_rewrite(inv);
        fresh_dir(root / "inverse");
        t0 = std::chrono::steady_clock::now();
        const std::uint64_t inv_bytes = run_cuda(o, iplan, root / "inverse", nullptr);
        r.inverse_gbps = static_cast<double>(inv_bytes) / seconds_since(t0) / 1e9;
        diff.clear();
        for (const OutputFile& f : iplan.outputs)
            if (diff.empty()) diff = compare_files(src / f.name, root / "inverse" / f.name);
        if (diff.empty())
            pass("multi-GB synthetic checkpoint: CUDA apply then CUDA inverse reproduces every source shard" +
                 fmt(" (inverse %.2f GB/s)", r.inverse_gbps));
        else
            fail("multi-GB synthetic checkpoint: inverse: " + diff);
    } catch (const std::exception& e) {
        fail(std::string("multi-GB synthetic checkpoint: ") + e.what());
    }
    if (!o.keep) fs::remove_all(root);
    return r;
}

int usage(const char* msg) {
    std::fprintf(stderr,
                 "rewrite_gpu_check: %s\nusage: rewrite_gpu_check [--gb N] [--work DIR] [--checkpoints DIR] "
                 "[--bandwidth-mb M] [--keep] [--emulate]\n",
                 msg);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (a == "--gb") {
            const char* v = value();
            if (!v || (o.gb = std::atof(v)) < 0) return usage("--gb needs a size in GB (0 skips the multi-GB check)");
        } else if (a == "--work") {
            const char* v = value();
            if (!v) return usage("--work needs a folder");
            o.work = v;
        } else if (a == "--checkpoints") {
            const char* v = value();
            if (!v) return usage("--checkpoints needs a folder");
            o.checkpoints = v;
        } else if (a == "--bandwidth-mb") {
            const char* v = value();
            if (!v || std::atol(v) < 1) return usage("--bandwidth-mb needs a positive size in MiB");
            o.bandwidth_mb = static_cast<std::size_t>(std::atol(v));
        } else if (a == "--keep") {
            o.keep = true;
        } else if (a == "--emulate") {
            o.emulate = true;
        } else if (a == "--help" || a == "-h") {
            usage("CUDA checks of the checkpoint rewriter");
            return 0;
        } else {
            return usage(("unknown argument '" + a + "'").c_str());
        }
    }

    std::string why;
    if (!o.emulate && !cuda_rewrite_available(&why)) {
        std::printf("no CUDA device: %s\nSKIP rewrite_gpu_check: the CUDA checks need a device\n", why.c_str());
        return 0;
    }
    std::printf("rewrite_gpu_check: %s, work folder %s\n",
                o.emulate ? "HOST EMULATION of the CUDA executor (no device used)" : "CUDA device 0",
                fs::absolute(o.work).string().c_str());
    std::fflush(stdout);
    try {
        fs::create_directories(o.work);
    } catch (const std::exception& e) {
        std::printf("FAIL cannot create the work folder: %s\n", e.what());
        return 1;
    }

    std::printf("== edge cases\n");
    check_edges(o);
    if (!o.checkpoints.empty()) {
        std::printf("== real checkpoints (%s)\n", o.checkpoints.string().c_str());
        check_real(o);
    }
    BigResult big;
    if (o.gb > 0) {
        std::printf("== multi-GB synthetic checkpoint\n");
        big = check_big(o);
    }
    CudaBandwidth bw;
    bool have_bw = false;
    if (!o.emulate) {
        std::printf("== device bandwidth (%zu MiB buffers)\n", o.bandwidth_mb);
        try {
            bw = measure_cuda_bandwidth(o.bandwidth_mb << 20);
            have_bw = true;
            info("device: " + bw.device);
            info(fmt("H2D pinned:    %.1f GB/s", bw.h2d_pinned_gbps));
            info(fmt("D2H pinned:    %.1f GB/s", bw.d2h_pinned_gbps));
            info(fmt("D2D copy:      %.2f TB/s read+write", bw.d2d_copy_gbps / 1e3));
            info(fmt("gather kernel: %.2f TB/s read+write", bw.gather_kernel_gbps / 1e3) +
                 fmt(" = %.2f x D2D copy", bw.gather_kernel_gbps / bw.d2d_copy_gbps));
            if (big.ran)
                info(fmt("CUDA rewrite (file to file): %.2f GB/s read+write", 2 * big.cuda_gbps) +
                     fmt(" = %.4f x D2D copy", 2 * big.cuda_gbps / bw.d2d_copy_gbps) +
                     fmt(", %.2f x pinned H2D", big.cuda_gbps / bw.h2d_pinned_gbps));
            pass("bandwidth probe (gather kernel result checked)");
        } catch (const std::exception& e) {
            fail(std::string("bandwidth probe: ") + e.what());
        }
    }
    if (!o.keep) fs::remove_all(o.work);

    std::printf("SUMMARY rewrite_gpu_check: %s; failures=%d", g_failures ? "FAIL" : "PASS", g_failures);
    if (big.ran)
        std::printf("; synthetic %.2f GB: cpu %.2f GB/s, cuda %.2f GB/s, cuda inverse %.2f GB/s (bytes written per s)",
                    static_cast<double>(big.bytes) / 1e9, big.cpu_gbps, big.cuda_gbps, big.inverse_gbps);
    if (have_bw)
        std::printf("; H2D %.1f GB/s, D2H %.1f GB/s, D2D copy %.2f TB/s, gather %.2f TB/s, rewrite/D2D %.4f",
                    bw.h2d_pinned_gbps, bw.d2h_pinned_gbps, bw.d2d_copy_gbps / 1e3, bw.gather_kernel_gbps / 1e3,
                    big.ran ? 2 * big.cuda_gbps / bw.d2d_copy_gbps : 0.0);
    std::printf("\n");
    return g_failures ? 1 : 0;
}
