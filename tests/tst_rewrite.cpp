// Checkpoint rewriter: planning checks, CPU executor, round trips on the five real checkpoints
// in ../shared/checkpoints, identity, synthetic expert slots, refusals before writing, atomic output,
// sidecar provenance, --layer-map, --verify, free space, the CLI.
#include "app/cli_errors.h"
#include "core/model/model.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "core/util/rng.h"
#include "gpu/rewrite.h"
#include "gpu/safetensors/checkpoint_scheme.h"
#include "gpu/safetensors/safetensors.h"
#include "gpu/safetensors/synth_checkpoint.h"
#include "tests/rewrite_testutil.h"
#include "tests/testutil.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <sys/stat.h>

using namespace routepack;
using namespace routepack::gpu;
namespace fs = std::filesystem;
using routepack::test::qpath;
using routepack::test::read_file;
using routepack::test::temp_dir;
using routepack::test::write_file;

using routepack::test::group_placement;
using routepack::test::identity_placement;
using routepack::test::random_placement;

using routepack::test::rewrite_request;

namespace {

ModelDescription model_of(const fs::path& dir) {
    return model_from_hf_config(read_file(dir / "config.json"), (dir / "config.json").string());
}

/// Every regular file of `a` (recursively) exists in `b` with the same bytes; `b` may hold the sidecar too.
void expect_same_files(const fs::path& a, const fs::path& b) {
    int n = 0;
    for (const auto& de : fs::recursive_directory_iterator(a)) {
        if (!de.is_regular_file()) continue;
        const fs::path rel = fs::relative(de.path(), a);
        QVERIFY2(fs::exists(b / rel), qPrintable(qpath(b / rel) + QStringLiteral(" missing")));
        QVERIFY2(read_file(de.path()) == read_file(b / rel), qPrintable(qpath(rel) + QStringLiteral(" differs")));
        ++n;
    }
    QVERIFY(n > 0);
}

/// Bytes of tensor `name` anywhere in the folder's shards.
std::string tensor_bytes(const fs::path& dir, const std::string& name) {
    for (const auto& de : fs::directory_iterator(dir)) {
        if (de.path().extension() != ".safetensors") continue;
        const SafetensorsFile f = SafetensorsFile::open(de.path());
        if (f.contains(name)) {
            const auto d = f.data(name);
            return std::string(reinterpret_cast<const char*>(d.data()), d.size());
        }
    }
    return "<missing " + name + ">";
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> names_shapes(const fs::path& dir) {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> v;
    for (const auto& de : fs::directory_iterator(dir)) {
        if (de.path().extension() != ".safetensors") continue;
        const SafetensorsFile f = SafetensorsFile::open(de.path());
        for (const TensorInfo& t : f.tensors())
            v.emplace_back(t.name, std::vector<std::int64_t>(t.shape.begin(), t.shape.end()));
    }
    return v;
}

std::vector<int> p2l_row(const Placement& pi, int r) {
    std::vector<int> p2l(static_cast<std::size_t>(pi.experts));
    for (int e = 0; e < pi.experts; ++e)
        p2l[static_cast<std::size_t>(pi.at(r, e))] = e;
    return p2l;
}

/// Checks that every expert-indexed tensor of `out` holds, at index v, the source's index p2l[v]
/// (stacked: slab v = source slab p2l[v]); routers likewise when `router_moved`, else unchanged.
void expect_slots(const fs::path& src, const fs::path& out, const Placement& pi, const ModelDescription& m,
                  bool router_moved) {
    const SchemeReport rep = classify_checkpoint(names_shapes(src), m);
    int checked = 0;
    for (const TensorClass& tc : rep.tensors) {
        const int r = m.moe_index(tc.layer);
        if (tc.layer < 0 || r < 0) continue;
        const std::vector<int> p2l = p2l_row(pi, r);
        if (tc.role == TensorRole::ExpertPerTensor) {
            const std::string needle = "experts." + std::to_string(tc.expert) + ".";
            const std::size_t pos = tc.name.rfind(needle);
            const std::string from = tc.name.substr(0, pos) + "experts." +
                                     std::to_string(p2l[static_cast<std::size_t>(tc.expert)]) + "." +
                                     tc.name.substr(pos + needle.size());
            QVERIFY2(tensor_bytes(out, tc.name) == tensor_bytes(src, from),
                     qPrintable(QString::fromStdString(tc.name + " != source " + from)));
            ++checked;
        } else if (tc.role == TensorRole::ExpertStacked ||
                   (tc.role == TensorRole::Router || tc.role == TensorRole::RouterBias)) {
            const std::string a = tensor_bytes(out, tc.name), b = tensor_bytes(src, tc.name);
            QCOMPARE(a.size(), b.size());
            const bool moved = tc.role == TensorRole::ExpertStacked || router_moved;
            const std::size_t slab = a.size() / static_cast<std::size_t>(pi.experts);
            for (int v = 0; v < pi.experts; ++v) {
                const int s = moved ? p2l[static_cast<std::size_t>(v)] : v;
                QVERIFY2(a.compare(static_cast<std::size_t>(v) * slab, slab, b, static_cast<std::size_t>(s) * slab,
                                   slab) == 0,
                         qPrintable(QString::fromStdString(tc.name + " slab " + std::to_string(v))));
            }
            ++checked;
        }
    }
    QVERIFY(checked > 0);
}

/// The InputError rewriting `r` throws, in the CLI's words (options named by their flags).
std::string error_of(const RewriteRequest& r) {
    try {
        rewrite_checkpoint(r);
    } catch (const InputError& e) {
        return cli::cli_error_text(e);
    }
    return "<no error>";
}

} // namespace

class TestRewrite : public QObject {
    Q_OBJECT
    void breakItBody();
private Q_SLOTS:
    void layerMap();
    void layerMapErrors_data();
    void layerMapErrors();
    void realRoundTrip_data();
    void realRoundTrip();
    void realPermuteRouter_data();
    void realPermuteRouter();
    void groupLimitedRefused();
    void identityIsByteIdentical();
    void synthExpertSlots();
    void mismatchRefusedBeforeWriting();
    void missingExpertTensorRefused();
    void outputChecks();
    void sidecarGuards();
    void jsonFieldErrors_data();
    void jsonFieldErrors();
    void synthSidecarErrors_data();
    void synthSidecarErrors();
    void layerMapRewrite();
    void singleFileWithoutConfig();
    void fp8ScalesMoveWithExpert();
    void megatronStackedWithOptimizerState();
    void megatronGroupedFlatChunks();
    void verifyFindsCorruption();
    void freeSpace();
    void cancelLeavesNothing();
    void cliInterruptedLeavesNoOutput();
    void cliRewriteAndInverse();
    void rewriteFromMap();
    void expertMapErrors();
    void expertMapFieldErrors_data();
    void expertMapFieldErrors();
    void breakItRegressions();
    void expertMapsAreStrict();
    void cliSigintCancels();
};

void TestRewrite::layerMap() {
    const std::vector<int> plan{1, 2, 3};
    QCOMPARE(parse_layer_map("1:0,2:1", plan), (std::map<int, int>{{1, 0}, {2, 1}}));
    QCOMPARE(parse_layer_map("1-3:10", plan), (std::map<int, int>{{1, 10}, {2, 11}, {3, 12}}));
    QCOMPARE(parse_layer_map("-1", plan), (std::map<int, int>{{1, 0}, {2, 1}, {3, 2}}));
    QCOMPARE(parse_layer_map("+4", plan), (std::map<int, int>{{1, 5}, {2, 6}, {3, 7}}));
    // A huge range only maps the plan's layers (no entry per id: this returns at once).
    QCOMPARE(parse_layer_map("0-999999999:0", plan), (std::map<int, int>{{1, 1}, {2, 2}, {3, 3}}));
}

void TestRewrite::layerMapErrors_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("error");
    QTest::newRow("empty") << ""
                           << "--layer-map: empty";
    QTest::newRow("no colon") << "5"
                              << "--layer-map: '5': expected P:C, P-Q:C or a shift +N / -N";
    QTest::newRow("twice") << "1:0,1:2"
                           << "--layer-map: plan layer 1 is mapped twice";
    QTest::newRow("same target") << "1:0,2:0"
                                 << "--layer-map: checkpoint layer 0 is the target of two plan layers";
    QTest::newRow("negative") << "-2"
                              << "--layer-map: '-2': checkpoint layer -1 is negative";
    QTest::newRow("garbage") << "1:x"
                             << "--layer-map: '1:x': expected a layer id";
    QTest::newRow("descending") << "3-1:0"
                                << "--layer-map: '3-1:0': range must be ascending";
    QTest::newRow("empty item") << "1:0,,2:1"
                                << "--layer-map: empty item in '1:0,,2:1'";
    QTest::newRow("trailing comma") << "1:1,"
                                    << "--layer-map: empty item in '1:1,'";
    QTest::newRow("not a plan layer") << "9:0"
                                      << "--layer-map: plan layer 9 is not a MoE layer of the plan (1-3)";
    QTest::newRow("negative plan layer") << "-1:3"
                                         << "--layer-map: plan layer -1 is not a MoE layer of the plan (1-3)";
    QTest::newRow("too large") << "+999999999"
                               << "--layer-map: '+999999999': checkpoint layer 1000000000 is too large";
    QTest::newRow("ten digits") << "1:1234567890"
                                << "--layer-map: '1:1234567890': expected a layer id";
}

void TestRewrite::layerMapErrors() {
    QFETCH(QString, text);
    QFETCH(QString, error);
    try {
        parse_layer_map(text.toStdString(), {1, 2, 3});
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(QString::fromStdString(cli::cli_error_text(e)), error);
        QVERIFY(e.setting() && e.setting()->key == "rewrite_layer_map");
        QCOMPARE(QString::fromStdString(e.what()), QStringLiteral("layer map") + error.mid(11)); // no CLI flag
    }
}

void TestRewrite::realRoundTrip_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : routepack::test::kSharedCheckpoints)
        QTest::newRow(n) << QString::fromLatin1(n);
}

void TestRewrite::realRoundTrip() {
    QFETCH(QString, name);
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/" + name.toStdString());
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const Placement pi = random_placement(m.num_moe_layers(), m.experts, 41);
    const fs::path tmp = temp_dir(QStringLiteral("rw-") + name);
    const fs::path phys = tmp / "physical", back = tmp / "logical";

    const RewriteReport a = rewrite_checkpoint(rewrite_request(src, phys, pi, m));
    QCOMPARE(a.device, std::string("cpu"));
    QVERIFY(a.moved_bytes > 0);
    // Names, shapes, headers, index and config stay; expert contents moved; routers untouched.
    for (const auto& de : fs::directory_iterator(src)) {
        const std::string s = read_file(de.path()), o = read_file(phys / de.path().filename());
        if (de.path().extension() == ".safetensors") {
            std::uint64_t n = 0;
            std::memcpy(&n, s.data(), 8);
            QCOMPARE(o.size(), s.size());
            QVERIFY(o.compare(0, 8 + n, s, 0, 8 + n) == 0);
        } else {
            QVERIFY2(o == s, qPrintable(qpath(de.path().filename())));
        }
    }
    expect_slots(src, phys, pi, m, false);
    const nlohmann::json sc = nlohmann::json::parse(read_file(phys / kRewriteSidecar));
    QCOMPARE(sc.at("direction").get<std::string>(), std::string("apply"));
    QCOMPARE(sc.at("output_order").get<std::string>(), std::string("physical"));
    QCOMPARE(sc.at("physical_to_logical_map").at(std::to_string(m.moe_layers[0])).get<std::vector<int>>(),
             p2l_row(pi, 0));

    RewriteRequest inv = rewrite_request(phys, back, pi, m, RewriteDirection::Inverse);
    inv.verify = true;
    const RewriteReport b = rewrite_checkpoint(inv);
    QVERIFY(b.verified);
    expect_same_files(src, back);
    QCOMPARE(nlohmann::json::parse(read_file(back / kRewriteSidecar)).at("output_order").get<std::string>(),
             std::string("logical"));
    fs::remove_all(tmp);
}

void TestRewrite::realPermuteRouter_data() {
    realRoundTrip_data();
}

void TestRewrite::realPermuteRouter() {
    QFETCH(QString, name);
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/" + name.toStdString());
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    // deepseek_v3 routes group-limited (4 groups of 4): keep groups together there.
    const Placement pi = name == QStringLiteral("deepseek_v3") ? group_placement(m.num_moe_layers(), m.experts, 4)
                                                               : random_placement(m.num_moe_layers(), m.experts, 7);
    const fs::path tmp = temp_dir(QStringLiteral("rwr-") + name);
    RewriteRequest r = rewrite_request(src, tmp / "inference", pi, m);
    r.permute_router = true;
    rewrite_checkpoint(r);
    expect_slots(src, tmp / "inference", pi, m, true);
    RewriteRequest inv = rewrite_request(tmp / "inference", tmp / "back", pi, m, RewriteDirection::Inverse);
    inv.permute_router = true;
    rewrite_checkpoint(inv);
    expect_same_files(src, tmp / "back");
    fs::remove_all(tmp);
}

void TestRewrite::groupLimitedRefused() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/deepseek_v3");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    Placement pi = identity_placement(m.num_moe_layers(), m.experts);
    std::swap(pi.slot[0], pi.slot[4]); // layer 1: expert 0 <-> expert 4 (groups 0 and 1)
    const fs::path tmp = temp_dir(QStringLiteral("rwg"));
    RewriteRequest r = rewrite_request(src, tmp / "out", pi, m);
    r.permute_router = true;
    QCOMPARE(QString::fromStdString(error_of(r)),
             QStringLiteral("--permute-router: layer 1: the placement splits expert group 0 (experts 0-3) across slot "
                            "groups 1 and 0; the model routes group-limited (n_group 4), so permuting the router would "
                            "change its output. Use a placement that keeps each group's experts together, or rewrite "
                            "without --permute-router"));
    QVERIFY(!fs::exists(tmp / "out"));
    // Without router permutation (training with a dispatcher map) the same placement is fine.
    r.permute_router = false;
    rewrite_checkpoint(r);
    QVERIFY(fs::exists(tmp / "out" / "config.json"));
    fs::remove_all(tmp);
}

void TestRewrite::identityIsByteIdentical() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const fs::path tmp = temp_dir(QStringLiteral("rwi"));
    const RewritePlan plan =
        plan_rewrite(rewrite_request(src, tmp / "out", identity_placement(m.num_moe_layers(), m.experts), m));
    QCOMPARE(plan.moved_bytes, std::uint64_t(0));
    QCOMPARE(plan.moved_tensors, 0);
    QCOMPARE(plan.expert_tensors, 96);
    for (const OutputFile& f : plan.outputs)
        QCOMPARE(f.segments.size(), std::size_t(1)); // one straight copy each
    const RewriteReport rep =
        rewrite_checkpoint(rewrite_request(src, tmp / "out", identity_placement(m.num_moe_layers(), m.experts), m));
    QCOMPARE(rep.moved_bytes, std::uint64_t(0));
    expect_same_files(src, tmp / "out");
    fs::remove_all(tmp);
}

void TestRewrite::synthExpertSlots() {
    const fs::path tmp = temp_dir(QStringLiteral("rws"));
    SynthCheckpointConfig cfg; // DeepSeek-V2-Lite shape: 64 experts at layers 1-26
    cfg.max_shard_bytes = 200000;
    write_synth_checkpoint(cfg, tmp / "src");
    const ModelDescription m = cfg.model;
    const Placement pi = random_placement(m.num_moe_layers(), m.experts, 99);
    const RewriteReport rep = rewrite_checkpoint(rewrite_request(tmp / "src", tmp / "phys", pi, m));
    QCOMPARE(rep.moved_tensors, 26 * 64 * 3);
    int checked = 0;
    for (const auto& de : fs::directory_iterator(tmp / "phys")) {
        if (de.path().extension() != ".safetensors") continue;
        const SafetensorsFile f = SafetensorsFile::open(de.path());
        for (const TensorInfo& t : f.tensors()) {
            const std::size_t pos = t.name.find(".mlp.experts.");
            if (pos == std::string::npos) continue;
            const int layer =
                std::stoi(t.name.substr(std::strlen("model.layers."), pos - std::strlen("model.layers.")));
            const int slot = std::stoi(t.name.substr(pos + std::strlen(".mlp.experts.")));
            const auto d = f.data(t);
            const std::size_t esz = dtype_bits(t.dtype) / 8;
            for (std::size_t k = 0; k < d.size(); k += esz) {
                const auto le = decode_synth_expert_element(t.dtype, d.data() + k);
                QVERIFY(le.has_value());
                QCOMPARE(le->first, layer);
                QCOMPARE(le->second, p2l_row(pi, m.moe_index(layer))[static_cast<std::size_t>(slot)]);
            }
            ++checked;
        }
    }
    QCOMPARE(checked, 26 * 64 * 3);
    const SynthSlotCheck c = check_synth_checkpoint(tmp / "phys");
    QCOMPARE(c.tensors, 26 * 64 * 3);
    QCOMPARE(c.order, std::string("physical"));
    QCOMPARE(check_synth_checkpoint(tmp / "src").order, std::string("logical"));
    // Checked against logical order, the rewritten folder fails at its first moved slot.
    fs::remove(tmp / "phys" / kRewriteSidecar);
    try {
        check_synth_checkpoint(tmp / "phys");
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(
                     QStringLiteral(".mlp.experts.0.down_proj.weight element 0 holds layer 1 expert ") +
                     QString::number(p2l_row(pi, 0)[0]) + QStringLiteral(", expected layer 1 expert 0")),
                 e.what());
    }
    fs::remove_all(tmp);
}

void TestRewrite::mismatchRefusedBeforeWriting() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const fs::path tmp = temp_dir(QStringLiteral("rwm"));
    const fs::path out = tmp / "out";
    // Expert count.
    {
        ModelDescription pm = m;
        pm.experts = 32;
        const RewriteRequest r = rewrite_request(src, out, random_placement(pm.num_moe_layers(), 32, 1), pm);
        QCOMPARE(QString::fromStdString(error_of(r)),
                 QStringLiteral("test-plan.json: plan has 32 experts per MoE layer, the checkpoint (") +
                     qpath(fs::canonical(src)) + QStringLiteral("/config.json) has 16"));
    }
    // Layer count: a DeepSeek-V2-Lite plan (MoE layers 1-26) on a 2-MoE-layer checkpoint.
    {
        ModelDescription pm = m;
        pm.moe_layers = parse_layer_list("1-26");
        pm.num_hidden_layers = 27;
        const RewriteRequest r = rewrite_request(src, out, random_placement(26, 16, 1), pm);
        QCOMPARE(QString::fromStdString(error_of(r)),
                 QStringLiteral("test-plan.json: plan layer 3 is not a MoE layer of the checkpoint (MoE layers 1-2); "
                                "use --layer-map"));
    }
    // Fewer plan layers than the checkpoint has.
    {
        ModelDescription pm = m;
        pm.moe_layers = {1};
        const RewriteRequest r = rewrite_request(src, out, random_placement(1, 16, 1), pm);
        QCOMPARE(
            QString::fromStdString(error_of(r)),
            qpath(fs::canonical(src)) +
                QStringLiteral(
                    ": checkpoint MoE layer 2 has no placement row in the plan (plan MoE layers 1); use --layer-map"));
    }
    // Not a permutation.
    {
        Placement pi = identity_placement(2, 16);
        pi.slot[3] = 0;
        QCOMPARE(QString::fromStdString(error_of(rewrite_request(src, out, pi, m))),
                 QStringLiteral("test-plan.json: placement of plan layer 1 is not a permutation of 0..15"));
    }
    QVERIFY(!fs::exists(out));
    fs::remove_all(tmp);
}

void TestRewrite::missingExpertTensorRefused() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const fs::path tmp = temp_dir(QStringLiteral("rwx"));
    fs::copy(src, tmp / "ck", fs::copy_options::recursive);
    // Drop experts.7.up_proj of layer 1 from its shard and from the index.
    const std::string victim = "model.layers.1.mlp.experts.7.up_proj.weight";
    CheckpointIndex idx = read_index(tmp / "ck");
    const fs::path shard = tmp / "ck" / idx.weight_map.at(victim);
    {
        const SafetensorsFile f = SafetensorsFile::open(shard);
        std::vector<std::string> keep_bytes;
        std::vector<TensorData> ts;
        for (const TensorInfo& t : f.tensors()) {
            if (t.name == victim) continue;
            const auto d = f.data(t);
            ts.push_back({t.name, t.dtype, t.shape, d});
        }
        const std::string bytes = serialize_safetensors(ts, f.metadata());
        write_file(shard.string() + ".new", bytes);
    }
    fs::rename(shard.string() + ".new", shard);
    nlohmann::json ij = nlohmann::json::parse(read_file(tmp / "ck" / "model.safetensors.index.json"));
    ij["weight_map"].erase(victim);
    write_file(tmp / "ck" / "model.safetensors.index.json", ij.dump(2));
    const RewriteRequest r = rewrite_request(tmp / "ck", tmp / "out", random_placement(2, 16, 3), m);
    QCOMPARE(QString::fromStdString(error_of(r)),
             QStringLiteral("layer 1: expert 7 has no up_proj while others do (MoE layers 1-2 from ") +
                 qpath(fs::canonical(tmp / "ck") / "config.json") + QStringLiteral(")"));
    QVERIFY(!fs::exists(tmp / "out"));
    // An index that names a tensor no shard holds.
    ij["weight_map"][victim] = idx.weight_map.at(victim);
    write_file(tmp / "ck" / "model.safetensors.index.json", ij.dump(2));
    QCOMPARE(QString::fromStdString(error_of(r)), qpath(fs::canonical(tmp / "ck") / "model.safetensors.index.json") +
                                                      QStringLiteral(": weight_map names tensor ") +
                                                      QString::fromStdString(victim) +
                                                      QStringLiteral(", which is in no shard"));
    QVERIFY(!fs::exists(tmp / "out"));
    fs::remove_all(tmp);
}

void TestRewrite::outputChecks() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/mixtral");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const Placement pi = random_placement(2, 8, 5);
    const fs::path tmp = temp_dir(QStringLiteral("rwo"));
    fs::copy(src, tmp / "ck", fs::copy_options::recursive);
    const fs::path ck = fs::canonical(tmp / "ck");
    QCOMPARE(QString::fromStdString(error_of(rewrite_request(ck, ck, pi, m))),
             qpath(ck) + QStringLiteral(": output is the input; the rewrite never overwrites its input"));
    QCOMPARE(QString::fromStdString(error_of(rewrite_request(ck, ck / "sub", pi, m))),
             qpath(ck / "sub") + QStringLiteral(": output lies inside the input folder ") + qpath(ck));
    write_file(tmp / "full" / "x", "x");
    QCOMPARE(QString::fromStdString(error_of(rewrite_request(ck, tmp / "full", pi, m))),
             qpath(tmp / "full") + QStringLiteral(": output exists and is not an empty folder"));
    QCOMPARE(QString::fromStdString(error_of(rewrite_request(tmp / "nope", tmp / "o", pi, m))),
             qpath(tmp / "nope") + QStringLiteral(": no such file or folder"));
    // The output's parent must be a folder; planning (the studio's Check) already says so.
    write_file(tmp / "afile", "x");
    QCOMPARE(QString::fromStdString([&] {
                 try {
                     plan_rewrite(rewrite_request(ck, tmp / "afile" / "out", pi, m));
                 } catch (const InputError& e) {
                     return cli::cli_error_text(e);
                 }
                 return std::string("<no error>");
             }()),
             qpath(tmp / "afile") + QStringLiteral(": no such folder (for --output)"));
    // An existing empty folder is accepted and filled.
    fs::create_directory(tmp / "empty");
    rewrite_checkpoint(rewrite_request(ck, tmp / "empty", pi, m));
    QVERIFY(fs::exists(tmp / "empty" / kRewriteSidecar));
    // Nothing of the input changed.
    expect_same_files(src, ck);
    fs::remove_all(tmp);
}

void TestRewrite::sidecarGuards() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/olmoe");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const Placement pi = random_placement(2, 16, 11), other = random_placement(2, 16, 12);
    const fs::path tmp = temp_dir(QStringLiteral("rwsc"));
    rewrite_checkpoint(rewrite_request(src, tmp / "phys", pi, m));
    const RewritePlan p = plan_rewrite(rewrite_request(src, tmp / "x", pi, m));
    const std::string fp = p.placement_fingerprint;
    const QString phys = qpath(fs::canonical(tmp / "phys"));
    QCOMPARE(QString::fromStdString(error_of(rewrite_request(tmp / "phys", tmp / "twice", pi, m))),
             phys + QStringLiteral(": already in physical order (routepack-rewrite.json: placement ") +
                 QString::fromStdString(fp) + QStringLiteral("); invert it first (--inverse with that plan)"));
    const RewritePlan po = plan_rewrite(rewrite_request(src, tmp / "x", other, m));
    QCOMPARE(QString::fromStdString(
                 error_of(rewrite_request(tmp / "phys", tmp / "bad", other, m, RewriteDirection::Inverse))),
             phys + QStringLiteral(": was rewritten with placement ") + QString::fromStdString(fp) +
                 QStringLiteral(" (test-plan.json), not this plan's ") +
                 QString::fromStdString(po.placement_fingerprint));
    RewriteRequest pr = rewrite_request(tmp / "phys", tmp / "bad", pi, m, RewriteDirection::Inverse);
    pr.permute_router = true;
    QCOMPARE(QString::fromStdString(error_of(pr)),
             phys + QStringLiteral(": was rewritten without --permute-router; invert it the same way"));
    rewrite_checkpoint(rewrite_request(tmp / "phys", tmp / "back", pi, m, RewriteDirection::Inverse));
    QCOMPARE(QString::fromStdString(
                 error_of(rewrite_request(tmp / "back", tmp / "again", pi, m, RewriteDirection::Inverse))),
             qpath(fs::canonical(tmp / "back")) +
                 QStringLiteral(": already in logical order (routepack-rewrite.json); nothing to invert"));
    QVERIFY(!fs::exists(tmp / "twice") && !fs::exists(tmp / "bad") && !fs::exists(tmp / "again"));
    fs::remove_all(tmp);
}

void TestRewrite::jsonFieldErrors_data() {
    QTest::addColumn<QString>("file");    // written beside the checkpoint (over its config.json)
    QTest::addColumn<QString>("content"); // the file's text
    QTest::addColumn<QString>("error");   // after the file's canonical path
    const QString config = QStringLiteral("config.json"), sidecar = QString::fromLatin1(kRewriteSidecar);
    const auto with_n_group = [](const char* v) {
        return QStringLiteral(R"({"num_hidden_layers": 1, "num_local_experts": 6, "num_experts_per_tok": 2, )") +
               QStringLiteral(R"("n_group": )") + QLatin1String(v) + QStringLiteral("}");
    };
    QTest::newRow("n_group a string") << config << with_n_group(R"("4")")
                                      << QStringLiteral(R"(: n_group is "4", not an integer in 1..1048576)");
    QTest::newRow("n_group a float") << config << with_n_group("4.0")
                                     << QStringLiteral(": n_group is 4.0, not an integer in 1..1048576");
    QTest::newRow("n_group zero") << config << with_n_group("0")
                                  << QStringLiteral(": n_group is 0, not an integer in 1..1048576");
    QTest::newRow("n_group too large") << config << with_n_group("1048577")
                                       << QStringLiteral(": n_group is 1048577, not an integer in 1..1048576");
    QTest::newRow("sidecar a list") << sidecar << QStringLiteral("[1]") << QStringLiteral(" is a list, not an object");
    QTest::newRow("sidecar without output_order")
        << sidecar << QStringLiteral(R"({"plan": {"placement_fingerprint": "0"}, "permute_router": false})")
        << QStringLiteral(": output_order is missing");
    QTest::newRow("sidecar output_order unknown")
        << sidecar
        << QStringLiteral(
               R"({"output_order": "sideways", "plan": {"placement_fingerprint": "0"}, "permute_router": false})")
        << QStringLiteral(R"(: output_order is "sideways", not "physical" or "logical")");
    QTest::newRow("sidecar output_order a number")
        << sidecar << QStringLiteral(R"({"output_order": 1, "plan": {"placement_fingerprint": "0"}})")
        << QStringLiteral(": output_order is 1, not a string");
    QTest::newRow("sidecar plan a list") << sidecar << QStringLiteral(R"({"output_order": "physical", "plan": []})")
                                         << QStringLiteral(": plan is [], not an object");
    QTest::newRow("sidecar fingerprint a number")
        << sidecar << QStringLiteral(R"({"output_order": "logical", "plan": {"placement_fingerprint": 7}})")
        << QStringLiteral(": plan.placement_fingerprint is 7, not a string");
    QTest::newRow("sidecar permute_router a number")
        << sidecar
        << QStringLiteral(
               R"({"output_order": "physical", "plan": {"placement_fingerprint": "0"}, "permute_router": 1})")
        << QStringLiteral(": permute_router is 1, not true or false");
    QTest::newRow("sidecar origin null") << sidecar
                                         << QStringLiteral(R"({"output_order": "physical", "permute_router": true, )"
                                                           R"("plan": {"placement_fingerprint": "0", "origin": null}})")
                                         << QStringLiteral(": plan.origin is null, not a string");
}

void TestRewrite::jsonFieldErrors() {
    QFETCH(QString, file);
    QFETCH(QString, content);
    QFETCH(QString, error);
    // One stacked MoE layer of 6 experts and a valid config.json; the row's file is the only fault.
    const fs::path tmp = temp_dir(QStringLiteral("rwjf"));
    fs::create_directories(tmp / "in");
    std::string stacked(6 * 4 * 2, 'a');
    const std::vector<TensorData> ts{
        {"model.layers.0.mlp.experts.down_proj", Dtype::BF16, {6, 4}, std::as_bytes(std::span(stacked))}};
    write_safetensors(tmp / "in" / "model.safetensors", ts, {});
    write_file(tmp / "in" / "config.json",
               R"({"num_hidden_layers": 1, "num_local_experts": 6, "num_experts_per_tok": 2})");
    write_file(tmp / "in" / file.toStdString(), content.toStdString());
    const ModelDescription pm = model_of(tmp / "in");
    QCOMPARE(QString::fromStdString(error_of(rewrite_request(tmp / "in", tmp / "out", random_placement(1, 6, 5), pm))),
             qpath(fs::canonical(tmp / "in") / file.toStdString()) + error);
    QVERIFY(!fs::exists(tmp / "out"));
    fs::remove_all(tmp);
}

void TestRewrite::synthSidecarErrors_data() {
    QTest::addColumn<QString>("content"); // the sidecar's text, alone in an otherwise empty folder
    QTest::addColumn<QString>("error");   // after the folder's path
    const auto sidecar = [](const char* map, const char* order = R"("physical")") {
        return QStringLiteral(R"({"output_order": )") + QLatin1String(order) +
               QStringLiteral(R"(, "plan": {"placement_fingerprint": "0"}, "physical_to_logical_map": )") +
               QLatin1String(map) + QStringLiteral("}");
    };
    const QString at = QStringLiteral("/routepack-rewrite.json");
    QTest::newRow("valid, no expert tensors")
        << sidecar(R"({"3": [1, 0], "12": [0, 1]})")
        << QStringLiteral(": no routed-expert tensors (model.layers.{l}.mlp.experts.{e}.*)");
    QTest::newRow("a list") << QStringLiteral("[1]") << at + QStringLiteral(" is a list, not an object");
    QTest::newRow("output_order missing")
        << QStringLiteral(R"({"plan": {"placement_fingerprint": "0"}, "physical_to_logical_map": {}})")
        << at + QStringLiteral(": output_order is missing");
    QTest::newRow("output_order unknown")
        << sidecar("{}", R"("sideways")")
        << at + QStringLiteral(R"(: output_order is "sideways", not "physical" or "logical")");
    QTest::newRow("output_order a number")
        << sidecar("{}", "1") << at + QStringLiteral(": output_order is 1, not a string");
    QTest::newRow("plan missing") << QStringLiteral(R"({"output_order": "logical", "physical_to_logical_map": {}})")
                                  << at + QStringLiteral(": plan is missing");
    QTest::newRow("fingerprint a number")
        << QStringLiteral(
               R"({"output_order": "logical", "plan": {"placement_fingerprint": 7}, "physical_to_logical_map": {}})")
        << at + QStringLiteral(": plan.placement_fingerprint is 7, not a string");
    QTest::newRow("map missing") << QStringLiteral(
                                        R"({"output_order": "logical", "plan": {"placement_fingerprint": "0"}})")
                                 << at + QStringLiteral(": physical_to_logical_map is missing");
    QTest::newRow("map a list") << sidecar("[[0, 1]]")
                                << at + QStringLiteral(": physical_to_logical_map is a list, not an object");
    const QString not_a_layer =
        QStringLiteral("' is not a layer id (a decimal number 0..99999 without sign, spaces or leading zeros)");
    QTest::newRow("map key a word") << sidecar(R"({"x": [0]})")
                                    << at + QStringLiteral(": physical_to_logical_map: key 'x") + not_a_layer;
    QTest::newRow("map key leading zero")
        << sidecar(R"({"03": [0]})") << at + QStringLiteral(": physical_to_logical_map: key '03") + not_a_layer;
    QTest::newRow("map key negative") << sidecar(R"({"-1": [0]})")
                                      << at + QStringLiteral(": physical_to_logical_map: key '-1") + not_a_layer;
    QTest::newRow("map key too large") << sidecar(R"({"100000": [0]})")
                                       << at + QStringLiteral(": physical_to_logical_map: key '100000") + not_a_layer;
    QTest::newRow("map row a number") << sidecar(R"({"3": 5})")
                                      << at + QStringLiteral(
                                                  ": physical_to_logical_map.3 is 5, not a list of logical expert ids");
    QTest::newRow("map id beyond the row")
        << sidecar(R"({"3": [0, 2]})")
        << at + QStringLiteral(": physical_to_logical_map.3[1] is 2, not an integer in 0..1");
    QTest::newRow("map id negative") << sidecar(R"({"3": [-1, 0]})")
                                     << at + QStringLiteral(
                                                 ": physical_to_logical_map.3[0] is -1, not an integer in 0..1");
    QTest::newRow("map id a float") << sidecar(R"({"3": [0, 1.0]})")
                                    << at + QStringLiteral(
                                                ": physical_to_logical_map.3[1] is 1.0, not an integer in 0..1");
    QTest::newRow("map id a string") << sidecar(R"({"3": ["0", 1]})")
                                     << at + QStringLiteral(
                                                 R"(: physical_to_logical_map.3[0] is "0", not an integer in 0..1)");
}

void TestRewrite::synthSidecarErrors() {
    QFETCH(QString, content);
    QFETCH(QString, error);
    const fs::path tmp = temp_dir(QStringLiteral("rwsc"));
    write_file(tmp / kRewriteSidecar, content.toStdString());
    QCOMPARE(QString::fromStdString(routepack::test::error_of<InputError>([&] { check_synth_checkpoint(tmp); })),
             qpath(tmp) + error);
    fs::remove_all(tmp);
}

void TestRewrite::layerMapRewrite() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    // A plan whose MoE layers are numbered 5, 6 (e.g. a later pipeline stage) for checkpoint layers 1, 2.
    ModelDescription pm = m;
    pm.moe_layers = {5, 6};
    pm.num_hidden_layers = 7;
    const Placement pi = random_placement(2, 16, 21);
    const fs::path tmp = temp_dir(QStringLiteral("rwl"));
    QCOMPARE(
        QString::fromStdString(error_of(rewrite_request(src, tmp / "a", pi, pm))),
        QStringLiteral(
            "test-plan.json: plan layer 5 is not a MoE layer of the checkpoint (MoE layers 1-2); use --layer-map"));
    RewriteRequest r = rewrite_request(src, tmp / "a", pi, pm);
    r.layer_map = parse_layer_map("5-6:1", pm.moe_layers);
    rewrite_checkpoint(r);
    rewrite_checkpoint(rewrite_request(src, tmp / "b", pi, m)); // same rows at the checkpoint's own ids
    for (const auto& de : fs::directory_iterator(tmp / "b"))
        if (de.path().extension() == ".safetensors")
            QVERIFY(read_file(de.path()) == read_file(tmp / "a" / de.path().filename()));
    fs::remove_all(tmp);
}

void TestRewrite::singleFileWithoutConfig() {
    // One .safetensors file, no config.json: the plan's model describes it (stacked [E, ...] tensors).
    const fs::path tmp = temp_dir(QStringLiteral("rw1"));
    fs::create_directories(tmp / "in");
    const int E = 6;
    std::vector<std::string> payload;
    std::vector<TensorData> ts;
    std::string stacked(E * 5 * 2, '\0'), router(E * 3 * 4, '\0');
    for (std::size_t i = 0; i < stacked.size(); ++i)
        stacked[i] = static_cast<char>(i / 10); // slab e filled with e
    for (std::size_t i = 0; i < router.size(); ++i)
        router[i] = static_cast<char>(100 + i / 12);
    ts.push_back({"model.layers.0.mlp.experts.down_proj", Dtype::BF16, {6, 5}, std::as_bytes(std::span(stacked))});
    ts.push_back({"model.layers.0.mlp.router.weight", Dtype::F32, {6, 3}, std::as_bytes(std::span(router))});
    ts.push_back({"model.norm.weight", Dtype::U8, {3}, std::as_bytes(std::span(router).subspan(0, 3))});
    write_safetensors(tmp / "in" / "model.safetensors", ts, {{"format", "pt"}});
    ModelDescription pm;
    pm.name = "tiny";
    pm.num_hidden_layers = 1;
    pm.experts = E;
    pm.top_k = 2;
    pm.moe_layers = {0};
    Placement pi = identity_placement(1, E);
    pi.slot = {2, 0, 1, 5, 3, 4}; // p2l = {1, 2, 0, 4, 5, 3}
    // The output may not lie inside the input file's folder (a later rewrite of that folder would
    // read the output's shards as its own).
    RewriteRequest inside = rewrite_request(tmp / "in" / "model.safetensors", tmp / "in" / "out", pi, pm);
    QCOMPARE(QString::fromStdString(error_of(inside)), qpath(tmp / "in" / "out") +
                                                           QStringLiteral(": output lies inside the input folder ") +
                                                           qpath(fs::canonical(tmp / "in")));
    QVERIFY(!fs::exists(tmp / "in" / "out"));
    RewriteRequest r = rewrite_request(tmp / "in" / "model.safetensors", tmp / "out", pi, pm);
    // Router rows move only with --permute-router, which needs config.json (n_group) beside the file.
    r.permute_router = true;
    QCOMPARE(QString::fromStdString(error_of(r)),
             QStringLiteral("--permute-router: no config.json beside ") +
                 qpath(fs::canonical(tmp / "in" / "model.safetensors")) +
                 QStringLiteral("; it is needed to check group-limited routing (n_group) before router rows move"));
    write_file(tmp / "in" / "config.json",
               R"({"num_hidden_layers": 1, "num_local_experts": 6, "num_experts_per_tok": 2})");
    const RewriteReport rep = rewrite_checkpoint(r);
    QCOMPARE(rep.moved_tensors, 2);
    const std::string out = tensor_bytes(tmp / "out", "model.layers.0.mlp.experts.down_proj");
    const int p2l[] = {1, 2, 0, 4, 5, 3};
    for (int v = 0; v < E; ++v)
        QCOMPARE(int(out[static_cast<std::size_t>(v) * 10]), p2l[v]);
    const std::string rt = tensor_bytes(tmp / "out", "model.layers.0.mlp.router.weight");
    for (int v = 0; v < E; ++v)
        QCOMPARE(int(rt[static_cast<std::size_t>(v) * 12 + 11]), 100 + p2l[v]);
    QVERIFY(nlohmann::json::parse(read_file(tmp / "out" / kRewriteSidecar)).at("source").at("scheme") == "hf-stacked");
    fs::remove_all(tmp);
}

void TestRewrite::fp8ScalesMoveWithExpert() {
    // DeepSeek-V3 FP8 style: every expert weight has a weight_scale_inv beside it; both move together.
    const fs::path tmp = temp_dir(QStringLiteral("rw8"));
    const int E = 4;
    std::vector<std::string> store;
    store.reserve(2 * E + 1);
    std::vector<TensorData> ts;
    for (int e = 0; e < E; ++e) {
        store.emplace_back(6, static_cast<char>(0x10 + e)); // F8_E4M3 [2, 3]
        ts.push_back({"model.layers.3.mlp.experts." + std::to_string(e) + ".down_proj.weight",
                      Dtype::F8_E4M3,
                      {2, 3},
                      std::as_bytes(std::span(store.back()))});
        store.emplace_back(4, static_cast<char>(0x60 + e)); // F32 [1, 1]
        ts.push_back({"model.layers.3.mlp.experts." + std::to_string(e) + ".down_proj.weight_scale_inv",
                      Dtype::F32,
                      {1, 1},
                      std::as_bytes(std::span(store.back()))});
    }
    store.emplace_back(E * 2 * 2, '\x7f');
    ts.push_back({"model.layers.3.mlp.gate.weight", Dtype::BF16, {4, 2}, std::as_bytes(std::span(store.back()))});
    fs::create_directories(tmp / "ck");
    write_safetensors(tmp / "ck" / "model.safetensors", ts, {});
    ModelDescription pm;
    pm.num_hidden_layers = 4;
    pm.experts = E;
    pm.top_k = 1;
    pm.moe_layers = {3};
    Placement pi = identity_placement(1, E);
    pi.slot = {1, 2, 3, 0}; // p2l = {3, 0, 1, 2}
    RewriteReport rep;
    try {
        rep = rewrite_checkpoint(rewrite_request(tmp / "ck", tmp / "out", pi, pm));
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
    QCOMPARE(rep.moved_tensors, 8);
    const int p2l[] = {3, 0, 1, 2};
    for (int v = 0; v < E; ++v) {
        const std::string w =
            tensor_bytes(tmp / "out", "model.layers.3.mlp.experts." + std::to_string(v) + ".down_proj.weight");
        const std::string sc = tensor_bytes(tmp / "out", "model.layers.3.mlp.experts." + std::to_string(v) +
                                                             ".down_proj.weight_scale_inv");
        QCOMPARE(w, std::string(6, static_cast<char>(0x10 + p2l[v])));
        QCOMPARE(sc, std::string(4, static_cast<char>(0x60 + p2l[v])));
    }
    QCOMPARE(tensor_bytes(tmp / "out", "model.layers.3.mlp.gate.weight"), std::string(E * 2 * 2, '\x7f'));
    fs::remove_all(tmp);
}

void TestRewrite::megatronStackedWithOptimizerState() {
    // Megatron-Core fully_reshardable export converted to safetensors: stacked [E, ...] expert weights and
    // their optimizer.state.* copies, router rows in logical order, layers numbered per pipeline stage.
    const fs::path tmp = temp_dir(QStringLiteral("rwmg"));
    const int E = 4;
    std::vector<std::string> store;
    store.reserve(8);
    std::vector<TensorData> ts;
    auto stacked = [&](const std::string& name, Dtype dt, std::uint64_t per_expert_elems, char base) {
        const std::size_t esz = dtype_bits(dt) / 8;
        std::string b(static_cast<std::size_t>(E) * per_expert_elems * esz, '\0');
        for (int e = 0; e < E; ++e)
            std::fill_n(b.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(e) * per_expert_elems * esz),
                        per_expert_elems * esz, static_cast<char>(base + e));
        store.push_back(std::move(b));
        ts.push_back({name, dt, {std::uint64_t(E), 2, per_expert_elems / 2}, std::as_bytes(std::span(store.back()))});
    };
    stacked("decoder.layers.0.mlp.experts.experts.linear_fc1.weight", Dtype::BF16, 8, 0x10);
    stacked("optimizer.state.exp_avg.decoder.layers.0.mlp.experts.experts.linear_fc1.weight", Dtype::F32, 8, 0x20);
    stacked("optimizer.state.exp_avg_sq.decoder.layers.0.mlp.experts.experts.linear_fc1.weight", Dtype::F32, 8, 0x30);
    stacked("optimizer.state.fp32_param.decoder.layers.0.mlp.experts.experts.linear_fc1.weight", Dtype::F32, 8, 0x40);
    store.emplace_back(E * 4 * 4, '\0');
    for (int e = 0; e < E; ++e)
        std::fill_n(store.back().begin() + e * 16, 16, static_cast<char>(0x50 + e));
    ts.push_back({"decoder.layers.0.mlp.router.weight",
                  Dtype::F32,
                  {std::uint64_t(E), 4},
                  std::as_bytes(std::span(store.back()))});
    fs::create_directories(tmp / "stage1");
    write_safetensors(tmp / "stage1" / "model.safetensors", ts, {});
    // The plan numbers this stage's only MoE layer 12.
    ModelDescription pm;
    pm.num_hidden_layers = 24;
    pm.experts = E;
    pm.top_k = 2;
    pm.moe_layers = {12};
    Placement pi = identity_placement(1, E);
    pi.slot = {2, 3, 1, 0}; // p2l = {3, 2, 0, 1}
    RewriteRequest r = rewrite_request(tmp / "stage1" / "model.safetensors", tmp / "out", pi, pm);
    r.layer_map = parse_layer_map("12:0", pm.moe_layers);
    const RewriteReport rep = rewrite_checkpoint(r);
    QCOMPARE(rep.moved_tensors, 4);
    const int p2l[] = {3, 2, 0, 1};
    const char bases[] = {0x10, 0x20, 0x30, 0x40};
    const char* names[] = {"decoder.layers.0.mlp.experts.experts.linear_fc1.weight",
                           "optimizer.state.exp_avg.decoder.layers.0.mlp.experts.experts.linear_fc1.weight",
                           "optimizer.state.exp_avg_sq.decoder.layers.0.mlp.experts.experts.linear_fc1.weight",
                           "optimizer.state.fp32_param.decoder.layers.0.mlp.experts.experts.linear_fc1.weight"};
    for (int k = 0; k < 4; ++k) {
        const std::string b = tensor_bytes(tmp / "out", names[k]);
        const std::size_t slab = b.size() / E;
        for (int v = 0; v < E; ++v)
            QCOMPARE(b[static_cast<std::size_t>(v) * slab], static_cast<char>(bases[k] + p2l[v]));
    }
    QCOMPARE(tensor_bytes(tmp / "out", "decoder.layers.0.mlp.router.weight"), store.back()); // never moved
    const nlohmann::json sc = nlohmann::json::parse(read_file(tmp / "out" / kRewriteSidecar));
    QCOMPARE(sc.at("source").at("scheme").get<std::string>(), std::string("megatron-stacked"));
    QCOMPARE(sc.at("layer_map").at("12").get<int>(), 0);
    fs::remove_all(tmp);
}

void TestRewrite::megatronGroupedFlatChunks() {
    // Megatron-Core GroupedMLP: weight1 [H, E * F] and weight2 [E * F, H], read as weight1.view(E, H, -1)
    // and weight2.view(E, -1, H), so expert e is the e-th contiguous quarter of each tensor's bytes
    // (whatever the shape says); the router stays in logical order.
    const fs::path tmp = temp_dir(QStringLiteral("rwgrouped"));
    const int E = 4;
    std::vector<std::string> store;
    store.reserve(4);
    std::vector<TensorData> ts;
    auto chunked = [&](const std::string& name, std::vector<std::uint64_t> shape, char base) {
        std::string b(2 * 2 * 8 * static_cast<std::size_t>(E), '\0'); // BF16, 2 x 8 per expert
        const std::size_t chunk = b.size() / E;
        for (int e = 0; e < E; ++e)
            for (std::size_t k = 0; k < chunk; ++k)
                b[static_cast<std::size_t>(e) * chunk + k] =
                    static_cast<char>(base + 16 * e + static_cast<int>(k % 16));
        store.push_back(std::move(b));
        ts.push_back({name, Dtype::BF16, std::move(shape), std::as_bytes(std::span(store.back()))});
    };
    chunked("decoder.layers.0.mlp.experts.weight1", {2, std::uint64_t(E) * 8}, 0x00);
    chunked("decoder.layers.0.mlp.experts.weight2", {std::uint64_t(E) * 8, 2}, 0x40);
    store.emplace_back(E * 2 * 4, '\x7f');
    ts.push_back({"decoder.layers.0.mlp.router.weight",
                  Dtype::F32,
                  {std::uint64_t(E), 2},
                  std::as_bytes(std::span(store.back()))});
    fs::create_directories(tmp / "in");
    write_safetensors(tmp / "in" / "model.safetensors", ts, {});
    ModelDescription pm;
    pm.num_hidden_layers = 1;
    pm.experts = E;
    pm.top_k = 2;
    pm.moe_layers = {0};
    Placement pi = identity_placement(1, E);
    pi.slot = {2, 3, 1, 0}; // p2l = {3, 2, 0, 1}
    const RewriteReport rep =
        rewrite_checkpoint(rewrite_request(tmp / "in" / "model.safetensors", tmp / "out", pi, pm));
    QCOMPARE(rep.moved_tensors, 2);
    const int p2l[] = {3, 2, 0, 1};
    const char* names[] = {"decoder.layers.0.mlp.experts.weight1", "decoder.layers.0.mlp.experts.weight2"};
    for (int k = 0; k < 2; ++k) {
        const std::string out = tensor_bytes(tmp / "out", names[k]), in = store[static_cast<std::size_t>(k)];
        const std::size_t chunk = in.size() / E;
        for (int v = 0; v < E; ++v)
            QCOMPARE(out.substr(static_cast<std::size_t>(v) * chunk, chunk),
                     in.substr(static_cast<std::size_t>(p2l[v]) * chunk, chunk));
    }
    QCOMPARE(tensor_bytes(tmp / "out", "decoder.layers.0.mlp.router.weight"), store.back());
    const nlohmann::json sc = nlohmann::json::parse(read_file(tmp / "out" / kRewriteSidecar));
    QCOMPARE(sc.at("source").at("scheme").get<std::string>(), std::string("megatron-grouped"));
    fs::remove_all(tmp);
}

void TestRewrite::verifyFindsCorruption() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/gpt_oss");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const fs::path tmp = temp_dir(QStringLiteral("rwv"));
    fs::create_directories(tmp / "out");
    const RewritePlan plan = plan_rewrite(rewrite_request(src, tmp / "out", random_placement(2, 8, 2), m));
    execute_rewrite_cpu(plan, tmp / "out", 2, {}, nullptr);
    QCOMPARE(QString::fromStdString(verify_rewrite(plan, tmp / "out")), QString());
    // Flip one byte inside layer 0's stacked down_proj.
    const fs::path shard = tmp / "out" / read_index(src).weight_map.at("model.layers.0.mlp.experts.down_proj");
    std::uint64_t off = 0;
    {
        const SafetensorsFile f = SafetensorsFile::open(shard);
        off = 8 + f.header_size() + f.info("model.layers.0.mlp.experts.down_proj").data_begin + 3;
    }
    std::string bytes = read_file(shard);
    bytes[off] = static_cast<char>(bytes[off] ^ 0x40);
    write_file(shard, bytes);
    QCOMPARE(QString::fromStdString(verify_rewrite(plan, tmp / "out")),
             qpath(shard) + QStringLiteral(": byte ") + QString::number(off) +
                 QStringLiteral(" (model.layers.0.mlp.experts.down_proj) differs from its source"));
    fs::remove_all(tmp);
}

void TestRewrite::freeSpace() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/mixtral");
    const fs::path src = root / "checkpoint";
    const fs::path tmp = temp_dir(QStringLiteral("rwf"));
    const fs::path plan = tmp / "plan.json";
    qputenv("ROUTEPACK_TEST_FREE_BYTES", "1000");
    const ModelDescription m = model_of(src);
    const std::string err = error_of(rewrite_request(src, tmp / "out", random_placement(2, 8, 1), m));
    bool planning_refuses = false; // the studio's Check (planning only) refuses the same way
    try {
        plan_rewrite(rewrite_request(src, tmp / "out", random_placement(2, 8, 1), m));
    } catch (const InputError& e) {
        planning_refuses = std::string(e.what()) == err;
    }
    QVERIFY(planning_refuses);
    qunsetenv("ROUTEPACK_TEST_FREE_BYTES");
    QVERIFY2(QString::fromStdString(err).startsWith(qpath(tmp) +
                                                    QStringLiteral(": not enough free space: the rewrite writes ")),
             err.c_str());
    QVERIFY2(QString::fromStdString(err).endsWith(QStringLiteral(" (+16 MB margin), 1000 bytes free")), err.c_str());
    QVERIFY(!fs::exists(tmp / "out"));
    fs::remove_all(tmp);
}

void TestRewrite::cancelLeavesNothing() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const fs::path tmp = temp_dir(QStringLiteral("rwc"));
    std::atomic<bool> cancel{false};
    int calls = 0;
    try {
        rewrite_checkpoint(
            rewrite_request(src, tmp / "out", random_placement(2, 16, 1), m),
            [&](const std::string&, std::uint64_t, std::uint64_t) {
                if (++calls == 1) cancel = true;
            },
            &cancel);
        QFAIL("not cancelled");
    } catch (const Cancelled& e) {
        QCOMPARE(std::string(e.what()), std::string("cancelled"));
    }
    QCOMPARE(calls, 1);
    QVERIFY(!fs::exists(tmp / "out"));
    int entries = 0;
    for ([[maybe_unused]] const auto& de : fs::directory_iterator(tmp))
        ++entries;
    QCOMPARE(entries, 0); // no partial folder either
    fs::remove_all(tmp);
}

namespace {

/// A real plan file for a checkpoint's model (rewrite_testutil.h plan_json_for_model).
fs::path write_plan_for(const ModelDescription& m, const fs::path& file, int ep_ranks) {
    write_file(file, routepack::test::plan_json_for_model(m, ep_ranks));
    return file;
}

} // namespace

void TestRewrite::cliInterruptedLeavesNoOutput() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
    const fs::path src = root / "checkpoint";
    const fs::path tmp = temp_dir(QStringLiteral("rwk"));
    const fs::path plan = write_plan_for(model_of(src), tmp / "plan.json", 4);
    qputenv("ROUTEPACK_TEST_REWRITE_EXIT_AFTER_FILES", "1");
    const auto killed = routepack::test::run_cli(
        {QStringLiteral("rewrite"), QStringLiteral("--plan"), qpath(plan), QStringLiteral("--input"), qpath(src),
         QStringLiteral("--output"), qpath(tmp / "out"), QStringLiteral("--device"), QStringLiteral("cpu")});
    qunsetenv("ROUTEPACK_TEST_REWRITE_EXIT_AFTER_FILES");
    QCOMPARE(killed.code, 3);
    QVERIFY(!fs::exists(tmp / "out"));
    // The next run succeeds and removes the dead run's partial folder.
    const auto ok = routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), qpath(plan),
                                              QStringLiteral("--input"), qpath(src), QStringLiteral("--output"),
                                              qpath(tmp / "out"), QStringLiteral("--device"), QStringLiteral("cpu")});
    QCOMPARE(ok.code, 0);
    int partial = 0;
    for (const auto& de : fs::directory_iterator(tmp))
        if (de.path().filename().string().find("routepack-partial") != std::string::npos) ++partial;
    QCOMPARE(partial, 0);
    fs::remove_all(tmp);
}

void TestRewrite::cliRewriteAndInverse() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/deepseek_v3");
    const fs::path src = root / "checkpoint";
    const fs::path tmp = temp_dir(QStringLiteral("rwcli"));
    const fs::path plan = write_plan_for(model_of(src), tmp / "plan.json", 4);
    const auto a = routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), qpath(plan),
                                             QStringLiteral("--input"), qpath(src), QStringLiteral("--output"),
                                             qpath(tmp / "phys"), QStringLiteral("--verify"),
                                             QStringLiteral("--device"), QStringLiteral("cpu")});
    QVERIFY2(a.code == 0, qPrintable(a.err));
    QVERIFY2(a.out.contains(QStringLiteral("checkpoint: hf-per-expert, 3 shard(s), MoE layers 1-2, 16 experts")),
             qPrintable(a.out));
    QVERIFY2(a.out.contains(QStringLiteral("verified: every output file equals its planned source bytes")),
             qPrintable(a.out));
    const auto b =
        routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), qpath(plan),
                                  QStringLiteral("--input"), qpath(tmp / "phys"), QStringLiteral("--output"),
                                  qpath(tmp / "back"), QStringLiteral("--inverse"), QStringLiteral("--verify")});
    QVERIFY2(b.code == 0, qPrintable(b.err));
    expect_same_files(src, tmp / "back");
    // Bad flags: one-line errors.
    const auto c = routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), qpath(plan),
                                             QStringLiteral("--input"), qpath(src), QStringLiteral("--output"),
                                             qpath(tmp / "x"), QStringLiteral("--device"), QStringLiteral("tpu")});
    QCOMPARE(c.code, 2); // a usage error
    QCOMPARE(c.err, QStringLiteral("routepack: error: --device: unknown device 'tpu' (valid: auto, cpu, cuda)\n"));
    // A plan path that is a folder is named as such (not "no such plan file").
    const auto d =
        routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), qpath(tmp),
                                  QStringLiteral("--input"), qpath(src), QStringLiteral("--output"), qpath(tmp / "x")});
    QCOMPARE(d.code, 1);
    QCOMPARE(d.err,
             QStringLiteral("routepack: error: ") + qpath(tmp) + QStringLiteral(": is a folder, not a plan file\n"));
    QVERIFY(!fs::exists(tmp / "x"));
    fs::remove_all(tmp);
}

namespace {

/// The sidecar JSON without its plan origin and inputs fingerprint (the placement's fingerprint stays).
std::string sidecar_without_plan_source(const fs::path& dir) {
    auto j = nlohmann::json::parse(read_file(dir / kRewriteSidecar));
    j["plan"].erase("origin");
    j["plan"].erase("fingerprint");
    return j.dump();
}

/// Every file of `a` but the sidecar equals `b`'s byte for byte (and the same files exist), and the
/// sidecars agree but for the plan's origin and fingerprint.
void expect_same_rewrite(const fs::path& a, const fs::path& b) {
    int n = 0;
    for (const auto& de : fs::recursive_directory_iterator(b))
        if (de.is_regular_file()) ++n;
    for (const auto& de : fs::recursive_directory_iterator(a)) {
        if (!de.is_regular_file()) continue;
        --n;
        const fs::path rel = fs::relative(de.path(), a);
        if (rel == fs::path(kRewriteSidecar)) continue;
        QVERIFY2(fs::exists(b / rel), qPrintable(qpath(b / rel) + QStringLiteral(" missing")));
        QVERIFY2(read_file(de.path()) == read_file(b / rel), qPrintable(qpath(rel) + QStringLiteral(" differs")));
    }
    QCOMPARE(n, 0);
    QCOMPARE(sidecar_without_plan_source(a), sidecar_without_plan_source(b));
}

} // namespace

void TestRewrite::rewriteFromMap() {
    // DeepSeek-V3 (shared, reduced): dense layer 0, MoE layers 1-2, 16 experts. The plan's placement as
    // each kind of map rewrites the checkpoint to the plan's bytes: our export-map formats (routepack,
    // sglang: 3 rows = decoder layers, vllm: 2 rows = MoE layers, ids from config.json), the minimal
    // {moe_layers, placement} and a bare physical_to_logical_map list.
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/deepseek_v3");
    const fs::path src = root / "checkpoint";
    const fs::path tmp = temp_dir(QStringLiteral("rwmap"));
    const fs::path plan = write_plan_for(model_of(src), tmp / "plan.json", 4);
    auto rewrite = [&](const QString& flag, const fs::path& file, const fs::path& out, bool inverse = false) {
        QStringList args{QStringLiteral("rewrite"),
                         flag,
                         qpath(file),
                         QStringLiteral("--input"),
                         qpath(src),
                         QStringLiteral("--output"),
                         qpath(out),
                         QStringLiteral("--device"),
                         QStringLiteral("cpu")};
        if (inverse) args << QStringLiteral("--inverse");
        return routepack::test::run_cli(args);
    };
    auto r = rewrite(QStringLiteral("--plan"), plan, tmp / "by-plan");
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto pj = nlohmann::json::parse(read_file(plan));
    for (const char* format : {"routepack", "sglang", "vllm"}) {
        const fs::path map = tmp / (std::string(format) + ".json");
        r = routepack::test::run_cli({QStringLiteral("export-map"), QStringLiteral("--plan"), qpath(plan),
                                      QStringLiteral("--format"), QString::fromLatin1(format), QStringLiteral("--out"),
                                      qpath(map)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
    }
    QCOMPARE(nlohmann::json::parse(read_file(tmp / "sglang.json"))["physical_to_logical_map"].size(), std::size_t(3));
    QCOMPARE(nlohmann::json::parse(read_file(tmp / "vllm.json"))["physical_to_logical_map"].size(), std::size_t(2));
    write_file(tmp / "minimal.json",
               nlohmann::json{{"moe_layers", pj["moe_layers"]}, {"placement", pj["placement"]}}.dump());
    write_file(tmp / "bare.json",
               nlohmann::json::parse(read_file(tmp / "vllm.json"))["physical_to_logical_map"].dump());
    for (const char* name : {"routepack", "sglang", "vllm", "minimal", "bare"}) {
        const fs::path out = tmp / (std::string("by-") + name);
        r = rewrite(QStringLiteral("--map"), tmp / (std::string(name) + ".json"), out);
        QVERIFY2(r.code == 0, qPrintable(QString::fromLatin1(name) + QStringLiteral(": ") + r.err));
        QVERIFY2(r.out.contains(QStringLiteral("checkpoint: hf-per-expert, 3 shard(s), MoE layers 1-2, 16 experts")),
                 qPrintable(r.out));
        expect_same_rewrite(tmp / "by-plan", out);
        const auto sc = nlohmann::json::parse(read_file(out / kRewriteSidecar));
        QCOMPARE(QString::fromStdString(sc["plan"]["origin"].get<std::string>()),
                 qpath(tmp / (std::string(name) + ".json")));
    }
    // The inverse through a map gives the source back.
    r = routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--map"), qpath(tmp / "vllm.json"),
                                  QStringLiteral("--input"), qpath(tmp / "by-vllm"), QStringLiteral("--output"),
                                  qpath(tmp / "back"), QStringLiteral("--inverse")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    expect_same_files(src, tmp / "back");
    // Exactly one of --plan and --map.
    r = routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--input"), qpath(src),
                                  QStringLiteral("--output"), qpath(tmp / "x")});
    QCOMPARE(r.code, 2); // a usage error
    QCOMPARE(r.err,
             QStringLiteral("routepack: error: rewrite: give --plan PLAN.json or --map MAP.json (the placement to "
                            "apply)\n"));
    r = routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), qpath(plan),
                                  QStringLiteral("--map"), qpath(tmp / "vllm.json"), QStringLiteral("--input"),
                                  qpath(src), QStringLiteral("--output"), qpath(tmp / "x")});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QStringLiteral("routepack: error: rewrite: give either --plan or --map, not both\n"));
    // Rows that match neither the decoder layers nor the MoE layers of config.json.
    write_file(tmp / "four.json", R"({"physical_to_logical_map": [[0, 1], [1, 0], [0, 1], [1, 0]]})");
    r = rewrite(QStringLiteral("--map"), tmp / "four.json", tmp / "x");
    QCOMPARE(r.code, 1);
    QCOMPARE(r.err, QStringLiteral("routepack: error: ") + qpath(tmp / "four.json") +
                        QStringLiteral(": the map has 4 rows; ") + qpath(src / "config.json") +
                        QStringLiteral(" has 2 MoE layers (vLLM: one row each) and 3 decoder layers (SGLang: one "
                                       "row each)\n"));
    QVERIFY(!fs::exists(tmp / "x"));
    fs::remove_all(tmp);
}

void TestRewrite::expertMapErrors() {
    const fs::path tmp = temp_dir(QStringLiteral("rwmaperr"));
    auto parse_error = [](const std::string& text) {
        try {
            parse_expert_map_text(text, "m.json");
        } catch (const InputError& e) {
            return QString::fromStdString(e.what());
        }
        return QStringLiteral("<no error>");
    };
    // Replicas: 6 physical slots for 4 logical experts (SGLang / vLLM redundant experts).
    QCOMPARE(parse_error(R"({"physical_to_logical_map": [[0, 1, 2, 3], [0, 1, 2, 3, 0, 1]]})"),
             QStringLiteral("m.json: physical_to_logical_map[1] has 6 entries, physical_to_logical_map[0] has 4"));
    QCOMPARE(parse_error(R"({"physical_to_logical_map": [[0, 1, 2, 3, 0, 1], [3, 2, 1, 0, 2, 3]]})"),
             QStringLiteral("m.json: physical_to_logical_map[0] has 6 physical slots for 4 logical experts (expert 0 "
                            "is in slots 0 and 4): a map with replicas (redundant experts) cannot rewrite a "
                            "checkpoint, which holds each expert once"));
    // Row 0 names experts 0..2, so row 1 lacks expert 0 (not a replica of expert 2).
    QCOMPARE(parse_error(R"([[0, 1, 2], [2, 2, 1]])"),
             QStringLiteral("m.json: physical_to_logical_map[1] is not a permutation of 0..2: expert 0 is missing and "
                            "expert 2 is in slots 0 and 1"));
    QCOMPARE(parse_error(R"({"physical_to_logical_map": [[0, 1, 5]]})"),
             QStringLiteral("m.json: physical_to_logical_map[0] has 3 entries but physical_to_logical_map[0][2] is 5 "
                            "(a row of 3 entries holds each of 0..2 once; is an entry missing?)"));
    QCOMPARE(parse_error(R"({"moe_layers": [1, 2], "placement": [[1, 0], [1, 1]]})"),
             QStringLiteral("m.json: placement[1] puts experts 0 and 1 in slot 1 (each logical expert needs its own "
                            "slot)"));
    QCOMPARE(parse_error(R"({"moe_layers": [2, 1], "placement": [[1, 0], [0, 1]]})"),
             QStringLiteral("m.json: moe_layers must be ascending (moe_layers[1] = 1 after 2)"));
    QCOMPARE(parse_error(R"({"moe_layers": [1], "placement": [[1, 0], [0, 1]]})"),
             QStringLiteral("m.json: moe_layers lists 1 layers for 2 rows"));
    QCOMPARE(parse_error(R"({"placement": [[1, 0]]})"), QStringLiteral("m.json: moe_layers is missing"));
    QCOMPARE(parse_error(R"({"logical_count": [[3, 4]]})"),
             QStringLiteral("m.json: not an expert map (no 'physical_to_logical_map' or 'placement'); expected "
                            "{\"physical_to_logical_map\": [[...]]} (SGLang / vLLM), {\"moe_layers\": [...], "
                            "\"placement\": [[...]]} or a routepack export-map file"));
    QCOMPARE(parse_error(R"({"format": "routepack-expert-map", "version": 1, "moe_layers": [1],
                             "placement": [[1, 0, 2]], "physical_to_logical_map": [[0, 1, 2]]})"),
             QStringLiteral("m.json: physical_to_logical_map[0] is not the inverse of placement[0]"));
    QCOMPARE(parse_error(R"({"format": "routepack-expert-map", "version": 2, "moe_layers": [1], "placement": [[0]]})"),
             QStringLiteral("m.json: version is 2, not 1 (the only routepack-expert-map version)"));
    // Rows without layer ids need the checkpoint's config.json.
    const ExpertMapFile vllm = parse_expert_map_text(R"({"physical_to_logical_map": [[1, 0], [0, 1]]})", "m.json");
    QVERIFY(vllm.moe_layers.empty());
    fs::create_directories(tmp / "ckpt");
    try {
        request_from_map(vllm, "m.json", tmp / "ckpt");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(QString::fromStdString(cli::cli_error_text(e)),
                 QStringLiteral("m.json: the map's rows carry no absolute layer ids (SGLang rows are decoder layers, "
                                "vLLM rows MoE layers in order) and ") +
                     qpath(tmp / "ckpt") +
                     QStringLiteral(" has no config.json to take them from; give a map with \"moe_layers\" "
                                    "(routepack export-map --format routepack, or {\"moe_layers\": [...], "
                                    "\"placement\": [[...]]})"));
    }
    // With absolute ids no config.json is needed: row l is layer moe_layers[l], placement = inverse rows.
    const RewriteRequest req = request_from_map(
        parse_expert_map_text(R"({"moe_layers": [3, 5], "physical_to_logical_map": [[2, 0, 1], [0, 1, 2]]})", "m.json"),
        "m.json", tmp / "ckpt");
    QCOMPARE(req.plan_layers, (std::vector<int>{3, 5}));
    QCOMPARE(req.placement.slot, (std::vector<int>{1, 2, 0, 0, 1, 2}));
    QCOMPARE(req.plan_model.num_hidden_layers, 6);
    QCOMPARE(req.plan_model.experts, 3);
    QCOMPARE(req.plan_origin, std::string("m.json"));
    fs::remove_all(tmp);
}

void TestRewrite::expertMapFieldErrors_data() {
    QTest::addColumn<QString>("text");  // the map file's text
    QTest::addColumn<QString>("error"); // parse_expert_map_text(text, "m.json")'s message
    const auto row = [](const char* name, const std::string& text, const char* error) {
        QTest::newRow(name) << QString::fromStdString(text) << QString::fromUtf8(error);
    };
    const std::string rp = R"({"format": "routepack-expert-map", "version": 1, )";
    row("document a number", "5",
        R"(m.json is 5, not an expert map: {"physical_to_logical_map": [[...]]} (SGLang / vLLM), {"moe_layers": )"
        R"([...], "placement": [[...]]} or a routepack export-map file)");
    row("list empty", "[]", "m.json: physical_to_logical_map is [], not a non-empty list of rows");
    row("rows a number", R"({"physical_to_logical_map": 3})",
        "m.json: physical_to_logical_map is 3, not a non-empty list of rows");
    row("placement empty", R"({"moe_layers": [1], "placement": []})",
        "m.json: placement is [], not a non-empty list of rows");
    row("row a number", R"({"physical_to_logical_map": [[1, 0], 5]})",
        "m.json: physical_to_logical_map[1] is 5, not a non-empty list of integers");
    row("row empty", "[[]]", "m.json: physical_to_logical_map[0] is [], not a non-empty list of integers");
    row("entry a float", R"({"moe_layers": [1], "placement": [[0, 1.0]]})",
        "m.json: placement[0][1] is 1.0, not an integer in 0..1");
    row("entry a list", "[[0, [1]]]", "m.json: physical_to_logical_map[0][1] is a list, not an integer in 0..1");
    row("entry above int64", "[[0, 18446744073709551615]]",
        "m.json: physical_to_logical_map[0][1] is 18446744073709551615, not an integer in 0..1");
    row("moe_layers a number", R"({"moe_layers": 3, "placement": [[1, 0]]})",
        "m.json: moe_layers is 3, not a list of layer ids");
    row("moe_layers null", R"({"physical_to_logical_map": [[1, 0]], "moe_layers": null})",
        "m.json: moe_layers is null, not a list of layer ids");
    row("moe_layers entry negative", R"({"moe_layers": [-1], "placement": [[1, 0]]})",
        "m.json: moe_layers[0] is -1, not an integer in 0..999999999");
    row("moe_layers entry a string", R"({"physical_to_logical_map": [[1, 0]], "moe_layers": ["1"]})",
        R"(m.json: moe_layers[0] is "1", not an integer in 0..999999999)");
    row("format a number", R"({"format": 1, "version": 1, "moe_layers": [1], "placement": [[0]]})",
        "m.json: format is 1, not a string");
    row("format of a plan", R"({"format": "routepack-plan", "version": 1, "moe_layers": [1], "placement": [[0]]})",
        R"(m.json: format is "routepack-plan", not "routepack-expert-map")");
    row("version missing", R"({"format": "routepack-expert-map", "moe_layers": [1], "placement": [[0]]})",
        "m.json: version is missing");
    row("version a string",
        R"({"format": "routepack-expert-map", "version": "1", "moe_layers": [1], "placement": [[0]]})",
        R"(m.json: version is "1", not an integer)");
    row("layer_axis other", rp + R"("layer_axis": "layers", "moe_layers": [1], "placement": [[0]]})",
        R"(m.json: layer_axis is "layers", not "moe_layers")");
    row("experts a string", rp + R"("experts": "1", "moe_layers": [1], "placement": [[0]]})",
        R"(m.json: experts is "1", not an integer)");
    row("experts differs", rp + R"("experts": 2, "moe_layers": [1], "placement": [[0]]})",
        "m.json: experts 2 differs from the 1 entries of each placement row");
    row("ep_ranks zero", rp + R"("ep_ranks": 0, "moe_layers": [1], "placement": [[1, 0]]})",
        "m.json: ep_ranks is 0, not an integer in 1..2");
    row("ep_ranks not dividing", rp + R"("ep_ranks": 2, "moe_layers": [1], "placement": [[0, 1, 2]]})",
        "m.json: ep_ranks 2 must divide the 3 experts");
    row("num_hidden_layers zero", R"({"physical_to_logical_map": [[1, 0]], "num_hidden_layers": 0})",
        "m.json: num_hidden_layers is 0, not an integer in 1..1000000000");
    row("num_hidden_layers a float", R"({"physical_to_logical_map": [[1, 0]], "num_hidden_layers": 4.0})",
        "m.json: num_hidden_layers is 4.0, not an integer in 1..1000000000");
    row("num_hidden_layers at a MoE layer", R"({"moe_layers": [4], "placement": [[1, 0]], "num_hidden_layers": 4})",
        "m.json: num_hidden_layers 4 must be a layer count above every MoE layer id");
}

void TestRewrite::expertMapFieldErrors() {
    QFETCH(QString, text);
    QFETCH(QString, error);
    try {
        parse_expert_map_text(text.toStdString(), "m.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(QString::fromStdString(e.what()), error);
    }
}

void TestRewrite::breakItRegressions() {
    try {
        breakItBody();
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
}

void TestRewrite::breakItBody() {
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
    const fs::path src = root / "checkpoint";
    const ModelDescription m = model_of(src);
    const Placement pi = random_placement(2, 16, 31);
    const fs::path tmp = temp_dir(QStringLiteral("rwb"));
    // --workers out of range (65537 crashed the TBB arena).
    {
        RewriteRequest r = rewrite_request(src, tmp / "w", pi, m);
        r.workers = 65537;
        QCOMPARE(QString::fromStdString(error_of(r)),
                 QStringLiteral("--workers: expected 0 (all cores) to 1024, got 65537"));
        r.workers = -1;
        QCOMPARE(QString::fromStdString(error_of(r)),
                 QStringLiteral("--workers: expected 0 (all cores) to 1024, got -1"));
    }
    // The sidecar guard also holds when --input names a file inside a rewritten folder.
    {
        // One model.safetensors holding every tensor of the sharded source.
        fs::create_directories(tmp / "one");
        std::vector<SafetensorsFile> shards;
        for (const std::string& sh : read_index(src).shards())
            shards.push_back(SafetensorsFile::open(src / sh));
        std::vector<TensorData> ts;
        for (const SafetensorsFile& f : shards)
            for (const TensorInfo& t : f.tensors())
                ts.push_back({t.name, t.dtype, t.shape, f.data(t)});
        write_safetensors(tmp / "one" / "model.safetensors", ts, {{"format", "pt"}});
        fs::copy(src / "config.json", tmp / "one" / "config.json");
        rewrite_checkpoint(rewrite_request(tmp / "one", tmp / "one-phys", pi, m));
        QVERIFY(QString::fromStdString(
                    error_of(rewrite_request(tmp / "one-phys" / "model.safetensors", tmp / "twice", pi, m)))
                    .contains(QStringLiteral(": already in physical order (routepack-rewrite.json: placement ")));
        QVERIFY(!fs::exists(tmp / "twice"));
    }
    // Folders that merely look like partial outputs are never removed (no marker, or not a pid).
    {
        write_file(tmp / ".victim.routepack-partial-notes" / "f", "precious");
        write_file(tmp / ".victim.routepack-partial-999999999" / "f", "precious");
        write_file(tmp / ".victim.routepack-partial-0" / "f", "precious");
        rewrite_checkpoint(rewrite_request(src, tmp / "victim", pi, m));
        QCOMPARE(read_file(tmp / ".victim.routepack-partial-notes" / "f"), std::string("precious"));
        QCOMPARE(read_file(tmp / ".victim.routepack-partial-999999999" / "f"), std::string("precious"));
        QCOMPARE(read_file(tmp / ".victim.routepack-partial-0" / "f"), std::string("precious"));
        QVERIFY(!fs::exists(tmp / "victim" / ".routepack-partial")); // marker removed from the finished output
        // An empty folder of a process that is gone (a rewrite killed between creating its folder and
        // writing the marker) is removed by the next rewrite of that output; a non-empty unmarked one stays.
        fs::create_directory(tmp / ".victim2.routepack-partial-999999999");
        rewrite_checkpoint(rewrite_request(src, tmp / "victim2", pi, m));
        QVERIFY(!fs::exists(tmp / ".victim2.routepack-partial-999999999"));
        QCOMPARE(read_file(tmp / ".victim.routepack-partial-999999999" / "f"), std::string("precious"));
    }
    // A trailing slash names the folder (absent or empty).
    {
        rewrite_checkpoint(rewrite_request(src, qpath(tmp / "slash").toStdString() + "/", pi, m));
        QVERIFY(fs::exists(tmp / "slash" / kRewriteSidecar));
        fs::create_directory(tmp / "slash2");
        rewrite_checkpoint(rewrite_request(src, qpath(tmp / "slash2").toStdString() + "/", pi, m));
        QVERIFY(fs::exists(tmp / "slash2" / kRewriteSidecar));
    }
    // Output as a symbolic link (dangling or to an empty folder) is refused before writing.
    {
        fs::create_symlink(tmp / "nowhere", tmp / "dangling");
        QCOMPARE(QString::fromStdString(error_of(rewrite_request(src, tmp / "dangling", pi, m))),
                 qpath(tmp / "dangling") + QStringLiteral(": output is a symbolic link; name a folder to create"));
    }
    // Input folder: a fifo is refused at planning; a symlink is copied as a symlink (not its target).
    {
        fs::copy(src, tmp / "ck", fs::copy_options::recursive);
        fs::create_symlink("/usr/share/doc", tmp / "ck" / "docs");
        rewrite_checkpoint(rewrite_request(tmp / "ck", tmp / "ck-out", pi, m));
        QVERIFY(fs::is_symlink(tmp / "ck-out" / "docs"));
        QCOMPARE(fs::read_symlink(tmp / "ck-out" / "docs"), fs::path("/usr/share/doc"));
        QVERIFY(::mkfifo((tmp / "ck" / "pipe").c_str(), 0600) == 0);
        QCOMPARE(QString::fromStdString(error_of(rewrite_request(tmp / "ck", tmp / "ck-out2", pi, m))),
                 qpath(fs::canonical(tmp / "ck") / "pipe") +
                     QStringLiteral(": not a regular file, folder or symbolic link; the rewrite copies only those"));
        QVERIFY(!fs::exists(tmp / "ck-out2"));
    }
    // Malformed n_group is refused (a string "4" must not silently mean 1 for group-limited routing).
    {
        ROUTEPACK_REQUIRE_SHARED(dsv3, "checkpoints/deepseek_v3");
        fs::copy(dsv3 / "checkpoint", tmp / "ds", fs::copy_options::recursive);
        nlohmann::json cfg = nlohmann::json::parse(read_file(tmp / "ds" / "config.json"));
        for (const nlohmann::json& bad : {nlohmann::json("4"), nlohmann::json(4.0), nlohmann::json(0),
                                          nlohmann::json(-4), nlohmann::json(1LL << 40)}) {
            cfg["n_group"] = bad;
            write_file(tmp / "ds" / "config.json", cfg.dump());
            QCOMPARE(QString::fromStdString(
                         error_of(rewrite_request(tmp / "ds", tmp / "ds-out", pi, model_of(dsv3 / "checkpoint")))),
                     qpath(fs::canonical(tmp / "ds") / "config.json") + QStringLiteral(": n_group is ") +
                         QString::fromStdString(bad.dump()) + QStringLiteral(", not an integer in 1..1048576"));
        }
        QVERIFY(!fs::exists(tmp / "ds-out"));
    }
    // --permute-router with a MoE layer whose router is missing: refused, naming the layer.
    {
        fs::create_directories(tmp / "nr");
        std::string a(4 * 6 * 2, 'a'), b(4 * 6 * 2, 'b'), rt(6 * 4 * 4, 'r');
        std::vector<TensorData> ts{
            {"model.layers.0.mlp.experts.down_proj", Dtype::BF16, {6, 4}, std::as_bytes(std::span(a))},
            {"model.layers.1.mlp.experts.down_proj", Dtype::BF16, {6, 4}, std::as_bytes(std::span(b))},
            {"model.layers.0.mlp.router.weight", Dtype::F32, {6, 4}, std::as_bytes(std::span(rt))}};
        write_safetensors(tmp / "nr" / "model.safetensors", ts, {});
        write_file(tmp / "nr" / "config.json",
                   R"({"num_hidden_layers": 2, "num_local_experts": 6, "num_experts_per_tok": 2})");
        ModelDescription pm = model_of(tmp / "nr");
        RewriteRequest r = rewrite_request(tmp / "nr", tmp / "nr-out", random_placement(2, 6, 3), pm);
        r.permute_router = true;
        QCOMPARE(QString::fromStdString(error_of(r)),
                 QStringLiteral(
                     "--permute-router: checkpoint MoE layer 1 has no router tensor with 6 rows (mlp.gate.weight, "
                     "block_sparse_moe.gate.weight or mlp.router.weight); a self-contained export needs it"));
        r.permute_router = false; // training-side rewrite needs no router
        rewrite_checkpoint(r);
    }
    // An expert index of more than 9 digits is named as such (not mistaken for a stacked tensor).
    {
        fs::create_directories(tmp / "big-index");
        std::string a(8, 'a');
        std::vector<TensorData> ts{{"model.layers.0.mlp.experts.99999999999999999999.down_proj.weight",
                                    Dtype::BF16,
                                    {2, 2},
                                    std::as_bytes(std::span(a))}};
        write_safetensors(tmp / "big-index" / "model.safetensors", ts, {});
        ModelDescription pm;
        pm.num_hidden_layers = 1;
        pm.experts = 4;
        pm.top_k = 1;
        pm.moe_layers = {0};
        QCOMPARE(QString::fromStdString(error_of(rewrite_request(tmp / "big-index" / "model.safetensors",
                                                                 tmp / "bi-out", random_placement(1, 4, 1), pm))),
                 QStringLiteral(
                     "model.layers.0.mlp.experts.99999999999999999999.down_proj.weight: expert index has more "
                     "than 9 digits (MoE layers 0 from the plan's model (no config.json beside the checkpoint))"));
    }
    fs::remove_all(tmp);
}

void TestRewrite::cliSigintCancels() {
    // Ctrl-C mid-rewrite (the process signals itself after the first shard): exit 130, no output, no partial folder.
    ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
    const fs::path src = root / "checkpoint";
    const fs::path tmp = temp_dir(QStringLiteral("rwint"));
    const fs::path plan = write_plan_for(model_of(src), tmp / "plan.json", 4);
    qputenv("ROUTEPACK_TEST_REWRITE_SIGINT_AFTER_FILES", "1");
    const auto r = routepack::test::run_cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), qpath(plan),
                                             QStringLiteral("--input"), qpath(src), QStringLiteral("--output"),
                                             qpath(tmp / "out"), QStringLiteral("--device"), QStringLiteral("cpu")});
    qunsetenv("ROUTEPACK_TEST_REWRITE_SIGINT_AFTER_FILES");
    QCOMPARE(r.code, 130);
    QCOMPARE(r.err,
             QStringLiteral("rewrite cancelled; nothing was written at ") + qpath(tmp / "out") + QStringLiteral("\n"));
    int entries = 0;
    for (const auto& de : fs::directory_iterator(tmp))
        entries += de.path().filename() != "plan.json";
    QCOMPARE(entries, 0);
    fs::remove_all(tmp);
}

void TestRewrite::expertMapsAreStrict() {
    auto parse_error = [](const std::string& text) {
        try {
            parse_expert_map_text(text, "m.json");
        } catch (const InputError& e) {
            return QString::fromStdString(e.what());
        }
        return QStringLiteral("<no error>");
    };
    // placement and physical_to_logical_map together must agree, whoever wrote the file.
    QCOMPARE(parse_error(R"({"moe_layers": [1], "placement": [[1, 0, 2]], "physical_to_logical_map": [[0, 1, 2]]})"),
             QStringLiteral("m.json: physical_to_logical_map[0] is not the inverse of placement[0]"));
    QCOMPARE(parse_error(R"({"moe_layers": [1], "placement": [[1, 0, 2]],
                             "physical_to_logical_map": [[1, 0, 2], [1, 0, 2]]})"),
             QStringLiteral("m.json: physical_to_logical_map has 2 rows, placement 1"));
    const ExpertMapFile both = parse_expert_map_text(
        R"({"moe_layers": [1], "placement": [[1, 2, 0]], "physical_to_logical_map": [[2, 0, 1]]})", "m.json");
    QCOMPARE(both.p2l, (std::vector<std::vector<int>>{{2, 0, 1}}));
    // A row lacking expert 7 that other rows name is a broken permutation, not replicas.
    QCOMPARE(parse_error(R"({"physical_to_logical_map": [[7, 6, 5, 4, 3, 2, 1, 0], [0, 1, 2, 3, 4, 5, 6, 6]]})"),
             QStringLiteral("m.json: physical_to_logical_map[1] is not a permutation of 0..7: expert 7 is missing and "
                            "expert 6 is in slots 6 and 7"));
    // Alone, the same row may be either: the message says both.
    QCOMPARE(parse_error(R"({"physical_to_logical_map": [[0, 1, 2, 3, 4, 5, 6, 6]]})"),
             QStringLiteral("m.json: physical_to_logical_map[0] has 8 physical slots for 7 logical experts (expert 6 "
                            "is in slots 6 and 7, and no row names expert 7): either expert 7 is missing, or the map "
                            "has replicas (redundant experts), which cannot rewrite a checkpoint that holds each "
                            "expert once"));
    // A short row names an expert beyond its length: said as such.
    QCOMPARE(parse_error(R"({"physical_to_logical_map": [[0, 1, 2, 3, 4, 5, 7]]})"),
             QStringLiteral("m.json: physical_to_logical_map[0] has 7 entries but physical_to_logical_map[0][6] is 7 "
                            "(a row of 7 entries holds each of 0..6 once; is an entry missing?)"));
    QCOMPARE(parse_error(R"({"moe_layers": [1], "placement": [[0, 1, 2, 3, 4, 5, 7]]})"),
             QStringLiteral("m.json: placement[0] has 7 entries but placement[0][6] is 7 (a row of 7 entries holds "
                            "each of 0..6 once; is an entry missing?)"));
    QCOMPARE(parse_error(R"({"physical_to_logical_map": [[0, -1]]})"),
             QStringLiteral("m.json: physical_to_logical_map[0][1] is -1, not an integer in 0..1"));
    // Unknown fields are refused (a typo must not drop the layer ids); the stacks' own fields are not.
    const QString known = QStringLiteral(
        " (an expert map holds moe_layers, placement and/or physical_to_logical_map, and routepack export-map's "
        "format, version, layer_axis, num_hidden_layers, experts, ep_ranks, slots_per_rank)");
    QCOMPARE(parse_error(R"({"physical_to_logical_map": [[1, 0]], "moe_layer": [1]})"),
             QStringLiteral("m.json: unknown field 'moe_layer'") + known);
    QCOMPARE(parse_error(R"({"moe_layers": [1], "placement": [[1, 0]], "placment": [[0, 1]]})"),
             QStringLiteral("m.json: unknown field 'placment'") + known);
    const ExpertMapFile sglang = parse_expert_map_text(
        R"({"physical_to_logical_map": [[1, 0]], "logical_to_all_physical_map": [[[1, -1], [0, -1]]]})", "m.json");
    QCOMPARE(sglang.p2l, (std::vector<std::vector<int>>{{1, 0}}));
    // A routepack file's version and experts are JSON numbers: 1.0 and 2.0 are read as 1 and 2.
    const ExpertMapFile floats = parse_expert_map_text(R"({"format": "routepack-expert-map", "version": 1.0,
        "experts": 2.0, "ep_ranks": 2, "moe_layers": [1], "placement": [[1, 0]]})",
                                                       "m.json");
    QCOMPARE(floats.p2l, (std::vector<std::vector<int>>{{1, 0}}));
    QCOMPARE(floats.ep_ranks, 2);
}

QTEST_GUILESS_MAIN(TestRewrite)
#include "tst_rewrite.moc"
