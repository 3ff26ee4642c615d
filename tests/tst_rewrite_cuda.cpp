// CUDA executor of the checkpoint rewriter: same output bytes as the CPU executor.
//
// Two layers of tests:
// - host emulation (always, in a CUDA build): the staged executor's chunking, packing into source order,
//   gather tables, double-buffered loop and I/O, with the gather kernel's own per-entry code run on the
//   host for every simulated thread. Catches everything but the CUDA calls themselves.
// - device (when cuda_rewrite_available()): the same checks on CUDA device 0, plus the bandwidth probe;
//   they skip with "no CUDA device: <why>" otherwise.
#include "core/model/model.h"
#include "core/util/errors.h"
#include "core/util/rng.h"
#include "gpu/cuda/device.h"
#include "gpu/cuda/rewrite_cuda.h"
#include "gpu/rewrite.h"
#include "gpu/safetensors/synth_checkpoint.h"
#include "tests/rewrite_testutil.h"
#include "tests/testutil.h"

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <numeric>

using namespace routepack;
using namespace routepack::gpu;
namespace fs = std::filesystem;
using routepack::test::read_file;
using routepack::test::temp_dir;
using routepack::test::write_file;

using routepack::test::random_placement;

using routepack::test::rewrite_request;

namespace {

std::string random_bytes(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>(rng.next() >> 56);
    return s;
}

/// The bytes each output must hold, computed straight from the segments.
std::string expected_output(const RewritePlan& plan, const OutputFile& f) {
    std::vector<std::string> src;
    for (const fs::path& p : plan.sources)
        src.push_back(read_file(p));
    std::string out;
    for (const CopySegment& s : f.segments)
        out += src[static_cast<std::size_t>(s.src_file)].substr(static_cast<std::size_t>(s.src),
                                                                static_cast<std::size_t>(s.len));
    return out;
}

/// Every output of `plan` in `a` equals the one in `b`, byte for byte; `b` holds nothing else.
void expect_same_outputs(const RewritePlan& plan, const fs::path& a, const fs::path& b) {
    QVERIFY(!plan.outputs.empty());
    for (const OutputFile& f : plan.outputs) {
        const std::string x = read_file(a / f.name), y = read_file(b / f.name);
        QCOMPARE(static_cast<std::uint64_t>(x.size()), f.size);
        if (x != y) {
            std::size_t k = 0;
            while (k < std::min(x.size(), y.size()) && x[k] == y[k])
                ++k;
            QFAIL(qPrintable(QStringLiteral("%1 differs first at byte %2 (sizes %3, %4)")
                                 .arg(QString::fromStdString(f.name))
                                 .arg(k)
                                 .arg(x.size())
                                 .arg(y.size())));
        }
    }
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& de : fs::directory_iterator(b))
        ++files;
    QCOMPARE(files, plan.outputs.size());
}

/// A hand-made plan over three random source files exercising the executor's edge cases: odd lengths,
/// unaligned source and destination offsets, source order opposite to output order, the same source bytes
/// used twice (overlapping reads), adjacent segments contiguous in one source (merged), zero-length
/// segments, a segment longer than several chunks, an empty output file, several outputs.
RewritePlan edge_plan(const fs::path& dir) {
    RewritePlan plan;
    const std::size_t sizes[] = {200003, 77777, 5001};
    for (int i = 0; i < 3; ++i) {
        const fs::path p = dir / ("src" + std::to_string(i) + ".bin");
        write_file(p, random_bytes(sizes[i], 100 + static_cast<std::uint64_t>(i)));
        plan.sources.push_back(p);
    }
    auto file = [&](const std::string& name, const std::vector<std::tuple<int, std::uint64_t, std::uint64_t>>& segs) {
        OutputFile f;
        f.name = name;
        for (const auto& [sf, src, len] : segs) {
            f.segments.push_back(CopySegment{f.size, sf, src, len});
            f.size += len;
        }
        plan.outputs.push_back(f);
    };
    file("a.safetensors", {{0, 0, 8},           // aligned start
                           {0, 8, 1},           // merges with the previous (contiguous in source)
                           {1, 77000, 777},     // tail of source 1, odd length
                           {0, 3, 5},           // overlaps the first read
                           {2, 4000, 0},        // zero-length
                           {0, 100001, 90001},  // longer than the small chunks
                           {1, 13, 4099},       // unaligned, source before the previous piece's
                           {2, 0, 5001},        // a whole small file
                           {0, 16, 65536 + 17}, // aligned source, unaligned destination
                           {1, 13, 4099},       // the same bytes again
                           {0, 199990, 13}});   // up to the end of source 0
    file("b.safetensors", {});
    file("c.safetensors", {{2, 5000, 1}, {0, 1, 150000}, {1, 0, 77777}});
    // Reverse source order for a run of equal-sized pieces (like slots receiving experts in reverse).
    std::vector<std::tuple<int, std::uint64_t, std::uint64_t>> rev;
    for (int e = 15; e >= 0; --e)
        rev.emplace_back(0, static_cast<std::uint64_t>(e) * 3001 + 7, 3001);
    file("d.safetensors", rev);
    return plan;
}

void add_staged_rows() {
    QTest::addColumn<qulonglong>("chunk");
    QTest::addColumn<qulonglong>("pieces");
    QTest::newRow("default chunk") << qulonglong(64ull << 20) << qulonglong(1u << 16);
    QTest::newRow("chunk 4096") << qulonglong(4096) << qulonglong(1u << 16);
    QTest::newRow("chunk 1000, 3 pieces") << qulonglong(1000) << qulonglong(3);
    QTest::newRow("chunk 16, 1 piece") << qulonglong(16) << qulonglong(1);
    QTest::newRow("chunk 65539") << qulonglong(65539) << qulonglong(5);
}

bool cuda_build() {
    return gpu::cuda_compiled();
}

} // namespace

class TestRewriteCuda : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void emulatedEdgeSegments_data() { add_staged_rows(); }
    void emulatedEdgeSegments();
    void emulatedSynthMatchesCpu_data() { add_staged_rows(); }
    void emulatedSynthMatchesCpu();
    void emulatedRealMatchesCpu_data();
    void emulatedRealMatchesCpu();
    void malformedPlanRefused();
    void cancelled();
    void notAvailableWithoutDevice();
    void cudaSynthMatchesCpu();
    void cudaRealMatchesCpu_data();
    void cudaRealMatchesCpu();
    void cudaEdgeSegments_data() { add_staged_rows(); }
    void cudaEdgeSegments();
    void cudaBandwidth();
};

#define REQUIRE_CUDA_BUILD()                                                                                           \
    if (!cuda_build()) QSKIP("built without CUDA: the host emulation needs the CUDA build")

#define REQUIRE_DEVICE()                                                                                               \
    do {                                                                                                               \
        std::string why_;                                                                                              \
        if (!cuda_rewrite_available(&why_))                                                                            \
            QSKIP(qPrintable(QStringLiteral("no CUDA device: ") + QString::fromStdString(why_)));                      \
    } while (0)

namespace {

/// Runs the edge plan with `opt` and checks every output against the segments and the CPU executor.
void run_edge(const StagedRewriteOptions& opt) {
    const fs::path root = temp_dir(QStringLiteral("cuda-edge"));
    const RewritePlan plan = edge_plan(root);
    const fs::path a = root / "cpu", b = root / "staged";
    fs::create_directories(a);
    fs::create_directories(b);
    execute_rewrite_cpu(plan, a, 2, {}, nullptr);
    std::string device;
    std::uint64_t last_done = 0, calls = 0;
    const std::uint64_t n = execute_rewrite_staged(
        plan, b, opt,
        [&](const std::string& stage, std::uint64_t done, std::uint64_t total) {
            QCOMPARE(stage, std::string("write"));
            QVERIFY(done > last_done && done <= total);
            last_done = done;
            ++calls;
        },
        nullptr, &device);
    QVERIFY(!device.empty());
    std::uint64_t total = 0;
    for (const OutputFile& f : plan.outputs) {
        total += f.size;
        QVERIFY2(read_file(b / f.name) == expected_output(plan, f), f.name.c_str());
    }
    QCOMPARE(n, total);
    QCOMPARE(last_done, total);
    QVERIFY(calls >= 3);
    expect_same_outputs(plan, a, b);
    fs::remove_all(root);
}

/// Synthetic checkpoint (per-expert tensors whose bytes encode (layer, expert)), random placement,
/// permute_router: the staged executor's output equals the CPU executor's.
void run_synth(const StagedRewriteOptions& opt) {
    const fs::path root = temp_dir(QStringLiteral("cuda-synth"));
    SynthCheckpointConfig cfg;
    cfg.model = known_model("deepseek-v2-lite");
    cfg.model.num_hidden_layers = 4;
    cfg.model.moe_layers = {1, 2, 3};
    cfg.hidden = 24;
    cfg.moe_intermediate = 5; // odd tensor sizes: 240 bytes per expert projection
    cfg.max_shard_bytes = 40000;
    write_synth_checkpoint(cfg, root / "in");
    const Placement pi = random_placement(3, cfg.model.experts, 7);
    RewriteRequest req = rewrite_request(root / "in", root / "out", pi, cfg.model);
    req.permute_router = true;
    const RewritePlan plan = plan_rewrite(req);
    QVERIFY(plan.outputs.size() > 1);
    QVERIFY(plan.moved_bytes > 0);
    fs::create_directories(root / "cpu");
    fs::create_directories(root / "staged");
    execute_rewrite_cpu(plan, root / "cpu", 2, {}, nullptr);
    std::string device;
    execute_rewrite_staged(plan, root / "staged", opt, {}, nullptr, &device);
    expect_same_outputs(plan, root / "cpu", root / "staged");
    QVERIFY(verify_rewrite(plan, root / "staged").empty());
    fs::remove_all(root);
}

void run_real(const fs::path& ckpt, const StagedRewriteOptions& opt) {
    const fs::path root = temp_dir(QStringLiteral("cuda-real"));
    const fs::path in = ckpt / "checkpoint";
    const ModelDescription m = model_from_hf_config(read_file(in / "config.json"), (in / "config.json").string());
    const Placement pi = random_placement(m.num_moe_layers(), m.experts, 11);
    const RewritePlan plan = plan_rewrite(rewrite_request(in, root / "out", pi, m));
    fs::create_directories(root / "cpu");
    fs::create_directories(root / "staged");
    execute_rewrite_cpu(plan, root / "cpu", 2, {}, nullptr);
    execute_rewrite_staged(plan, root / "staged", opt, {}, nullptr, nullptr);
    expect_same_outputs(plan, root / "cpu", root / "staged");
    fs::remove_all(root);
}

} // namespace

void TestRewriteCuda::emulatedEdgeSegments() {
    REQUIRE_CUDA_BUILD();
    QFETCH(qulonglong, chunk);
    QFETCH(qulonglong, pieces);
    run_edge(StagedRewriteOptions{chunk, static_cast<std::size_t>(pieces), true});
}

void TestRewriteCuda::emulatedSynthMatchesCpu() {
    REQUIRE_CUDA_BUILD();
    QFETCH(qulonglong, chunk);
    QFETCH(qulonglong, pieces);
    run_synth(StagedRewriteOptions{chunk, static_cast<std::size_t>(pieces), true});
}

void TestRewriteCuda::emulatedRealMatchesCpu_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<qulonglong>("chunk");
    for (const char* n : routepack::test::kSharedCheckpoints) {
        QTest::newRow(n) << QString::fromLatin1(n) << qulonglong(64ull << 20);
        QTest::newRow((std::string(n) + " chunk 4099").c_str()) << QString::fromLatin1(n) << qulonglong(4099);
    }
}

void TestRewriteCuda::emulatedRealMatchesCpu() {
    REQUIRE_CUDA_BUILD();
    QFETCH(QString, name);
    QFETCH(qulonglong, chunk);
    ROUTEPACK_REQUIRE_SHARED(ckpt, "checkpoints/" + name.toStdString());
    run_real(ckpt, StagedRewriteOptions{chunk, 1u << 16, true});
}

void TestRewriteCuda::malformedPlanRefused() {
    REQUIRE_CUDA_BUILD();
    const fs::path root = temp_dir(QStringLiteral("cuda-bad"));
    RewritePlan plan = edge_plan(root);
    fs::create_directories(root / "out");
    auto error_of = [&](const RewritePlan& p) -> std::string {
        try {
            execute_rewrite_staged(p, root / "out", StagedRewriteOptions{4096, 16, true}, {}, nullptr, nullptr);
        } catch (const InputError& e) {
            return e.what();
        }
        return "<no error>";
    };
    RewritePlan gap = plan;
    gap.outputs[0].segments[2].dst += 1;
    QVERIFY2(error_of(gap).find("segments must cover [0, size) in order") != std::string::npos, error_of(gap).c_str());
    RewritePlan beyond = plan;
    beyond.outputs[2].segments[2].len += 1; // source 1 has 77777 bytes
    beyond.outputs[2].size += 1;
    QVERIFY2(error_of(beyond).find("beyond its 77777 bytes") != std::string::npos, error_of(beyond).c_str());
    RewritePlan short_cover = plan;
    short_cover.outputs[3].size += 5;
    QVERIFY2(error_of(short_cover).find("segments cover") != std::string::npos, error_of(short_cover).c_str());
    RewritePlan bad_src = plan;
    bad_src.outputs[0].segments[0].src_file = 3;
    QVERIFY2(error_of(bad_src).find("names source file 3 of 3") != std::string::npos, error_of(bad_src).c_str());
    // Refused before anything was written.
    QVERIFY(fs::is_empty(root / "out"));
    const std::string missing = [&] {
        try {
            execute_rewrite_staged(plan, root / "nope", StagedRewriteOptions{4096, 16, true}, {}, nullptr, nullptr);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("<no error>");
    }();
    QVERIFY2(missing.find("no such folder") != std::string::npos, missing.c_str());
    fs::remove_all(root);
}

void TestRewriteCuda::cancelled() {
    REQUIRE_CUDA_BUILD();
    const fs::path root = temp_dir(QStringLiteral("cuda-cancel"));
    const RewritePlan plan = edge_plan(root);
    fs::create_directories(root / "out");
    std::atomic<bool> cancel{false};
    int calls = 0;
    QString err;
    try {
        execute_rewrite_staged(
            plan, root / "out", StagedRewriteOptions{4096, 16, true},
            [&](const std::string&, std::uint64_t, std::uint64_t) {
                if (++calls == 2) cancel = true;
            },
            &cancel, nullptr);
    } catch (const Cancelled& e) {
        err = QString::fromUtf8(e.what());
    }
    QCOMPARE(err, QStringLiteral("cancelled"));
    QCOMPARE(calls, 2);
    fs::remove_all(root);
}

void TestRewriteCuda::notAvailableWithoutDevice() {
    std::string why;
    if (cuda_rewrite_available(&why)) QSKIP("a CUDA device exists: the not-available path is not reachable");
    QVERIFY(!why.empty());
    if (!cuda_build()) QCOMPARE(why, std::string("built without CUDA"));
    const fs::path root = temp_dir(QStringLiteral("cuda-none"));
    const RewritePlan plan = edge_plan(root);
    fs::create_directories(root / "out");
    std::string err;
    try {
        execute_rewrite_cuda(plan, root / "out", {}, nullptr, nullptr);
    } catch (const InputError& e) {
        err = e.what();
    }
    QCOMPARE(err, "cuda: not available: " + why);
    QVERIFY(fs::is_empty(root / "out"));
    err.clear();
    try {
        measure_cuda_bandwidth(1 << 20);
    } catch (const InputError& e) {
        err = e.what();
    }
    QCOMPARE(err, "cuda: not available: " + why);
    fs::remove_all(root);
}

void TestRewriteCuda::cudaSynthMatchesCpu() {
    REQUIRE_DEVICE();
    run_synth(StagedRewriteOptions{});
    run_synth(StagedRewriteOptions{1000, 3, false});
}

void TestRewriteCuda::cudaRealMatchesCpu_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : routepack::test::kSharedCheckpoints)
        QTest::newRow(n) << QString::fromLatin1(n);
}

void TestRewriteCuda::cudaRealMatchesCpu() {
    REQUIRE_DEVICE();
    QFETCH(QString, name);
    ROUTEPACK_REQUIRE_SHARED(ckpt, "checkpoints/" + name.toStdString());
    run_real(ckpt, StagedRewriteOptions{});
    run_real(ckpt, StagedRewriteOptions{4099, 7, false});
    // Through the public entry point and rewrite_checkpoint's device choice.
    const fs::path root = temp_dir(QStringLiteral("cuda-real-full"));
    const fs::path in = ckpt / "checkpoint";
    const ModelDescription m = model_from_hf_config(read_file(in / "config.json"), (in / "config.json").string());
    RewriteRequest req = rewrite_request(in, root / "out", random_placement(m.num_moe_layers(), m.experts, 3), m);
    req.device = RewriteDevice::Cuda;
    req.verify = true;
    const RewriteReport rep = rewrite_checkpoint(req);
    QVERIFY2(rep.device.rfind("cuda (", 0) == 0, rep.device.c_str());
    QVERIFY(rep.verified);
    fs::remove_all(root);
}

void TestRewriteCuda::cudaEdgeSegments() {
    REQUIRE_DEVICE();
    QFETCH(qulonglong, chunk);
    QFETCH(qulonglong, pieces);
    run_edge(StagedRewriteOptions{chunk, static_cast<std::size_t>(pieces), false});
}

void TestRewriteCuda::cudaBandwidth() {
    REQUIRE_DEVICE();
    const CudaBandwidth b = measure_cuda_bandwidth(64u << 20);
    QVERIFY(!b.device.empty());
    QVERIFY(b.h2d_pinned_gbps > 0 && b.d2h_pinned_gbps > 0 && b.d2d_copy_gbps > 0 && b.gather_kernel_gbps > 0);
    qInfo("%s: H2D %.1f GB/s, D2H %.1f GB/s, D2D copy %.0f GB/s, gather %.0f GB/s (read+write)", b.device.c_str(),
          b.h2d_pinned_gbps, b.d2h_pinned_gbps, b.d2d_copy_gbps, b.gather_kernel_gbps);
}

QTEST_GUILESS_MAIN(TestRewriteCuda)
#include "tst_rewrite_cuda.moc"
