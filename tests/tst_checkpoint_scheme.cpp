// Checkpoint scheme detection (gpu/checkpoint_scheme.h) by the table of MoE names (core/model/moe_names.h,
// name by name): the five shared HF checkpoints (expert tensors,
// routers, router biases and MoE layers counted by hand from their file lists) and every InputError case
// on hand-made name lists, with its exact message.
#include "core/model/model.h"
#include "core/model/moe_names.h"
#include "core/util/errors.h"
#include "gpu/safetensors/checkpoint_info.h"
#include "gpu/safetensors/checkpoint_scheme.h"
#include "gpu/safetensors/safetensors.h"
#include "tests/testutil.h"

#include <QtTest>

#include <algorithm>

using namespace routepack;
using namespace routepack::gpu;
namespace fs = std::filesystem;

namespace {

using NameShapes = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;

NameShapes collect(const fs::path& dir) {
    NameShapes out;
    std::vector<fs::path> shards;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".safetensors") shards.push_back(entry.path());
    std::sort(shards.begin(), shards.end());
    for (const auto& p : shards) {
        const SafetensorsFile f = SafetensorsFile::open(p);
        for (const TensorInfo& t : f.tensors()) {
            std::vector<std::int64_t> shape(t.shape.begin(), t.shape.end());
            out.emplace_back(t.name, std::move(shape));
        }
    }
    return out;
}

ModelDescription model_of(const fs::path& dir) {
    const fs::path cfg = dir / "config.json";
    return model_from_hf_config(routepack::test::read_file(cfg), cfg.string());
}

int count_role(const SchemeReport& r, TensorRole role) {
    return static_cast<int>(
        std::count_if(r.tensors.begin(), r.tensors.end(), [&](const TensorClass& t) { return t.role == role; }));
}

const TensorClass* find(const SchemeReport& r, const std::string& name) {
    for (const auto& t : r.tensors)
        if (t.name == name) return &t;
    return nullptr;
}

std::string error_of(const NameShapes& ns, const ModelDescription& m) {
    try {
        (void)classify_checkpoint(ns, m);
    } catch (const InputError& e) {
        return e.what();
    }
    return "OK";
}

/// 3 layers, MoE layers 1 and 2, E experts.
ModelDescription toy(int experts = 4) {
    ModelDescription m;
    m.name = "toy";
    m.num_hidden_layers = 3;
    m.experts = experts;
    m.top_k = 2;
    m.moe_layers = {1, 2};
    return m;
}

/// Per-expert gate/up/down for every expert of layers 1 and 2, plus routers and a dense layer 0.
NameShapes toy_per_expert(int experts = 4) {
    NameShapes ns;
    ns.push_back({"model.layers.0.mlp.gate_proj.weight", {8, 8}});
    ns.push_back({"model.layers.0.mlp.up_proj.weight", {8, 8}});
    ns.push_back({"model.layers.0.mlp.down_proj.weight", {8, 8}});
    for (int l = 1; l <= 2; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".mlp.";
        ns.push_back({p + "gate.weight", {experts, 8}});
        for (int e = 0; e < experts; ++e)
            for (const char* k : {"gate_proj", "up_proj", "down_proj"})
                ns.push_back({p + "experts." + std::to_string(e) + "." + k + ".weight", {8, 8}});
    }
    return ns;
}

} // namespace

class TstCheckpointScheme : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void qwen3_moe() {
        ROUTEPACK_REQUIRE_SHARED(dir, "checkpoints/qwen3_moe/checkpoint");
        const SchemeReport r = classify_checkpoint(collect(dir), model_of(dir));
        QCOMPARE(r.scheme, std::string("hf-per-expert"));
        QCOMPARE(r.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(r.experts, 16);
        // 2 MoE layers x 16 experts x {gate,up,down}_proj.weight = 96
        QCOMPARE(count_role(r, TensorRole::ExpertPerTensor), 96);
        QCOMPARE(count_role(r, TensorRole::ExpertStacked), 0);
        // mlp.gate.weight of layers 1, 2 = 2
        QCOMPARE(count_role(r, TensorRole::Router), 2);
        QCOMPARE(count_role(r, TensorRole::RouterBias), 0);
        const TensorClass* dense = find(r, "model.layers.0.mlp.gate_proj.weight");
        QVERIFY(dense);
        QCOMPARE(dense->role, TensorRole::Other);
        const TensorClass* ex = find(r, "model.layers.2.mlp.experts.13.up_proj.weight");
        QVERIFY(ex);
        QCOMPARE(ex->role, TensorRole::ExpertPerTensor);
        QCOMPARE(ex->layer, 2);
        QCOMPARE(ex->expert, 13);
        QCOMPARE(ex->expert_axis, -1);
        const TensorClass* gate = find(r, "model.layers.1.mlp.gate.weight");
        QVERIFY(gate);
        QCOMPARE(gate->role, TensorRole::Router);
        QCOMPARE(gate->layer, 1);
    }

    void mixtral() {
        ROUTEPACK_REQUIRE_SHARED(dir, "checkpoints/mixtral/checkpoint");
        const SchemeReport r = classify_checkpoint(collect(dir), model_of(dir));
        QCOMPARE(r.scheme, std::string("hf-per-expert"));
        QCOMPARE(r.moe_layers, (std::vector<int>{0, 1}));
        QCOMPARE(r.experts, 8);
        // 2 MoE layers x 8 experts x block_sparse_moe.experts.{e}.{w1,w2,w3}.weight = 48
        QCOMPARE(count_role(r, TensorRole::ExpertPerTensor), 48);
        // block_sparse_moe.gate.weight of layers 0, 1 = 2
        QCOMPARE(count_role(r, TensorRole::Router), 2);
        QCOMPARE(count_role(r, TensorRole::RouterBias), 0);
        const TensorClass* w2 = find(r, "model.layers.1.block_sparse_moe.experts.7.w2.weight");
        QVERIFY(w2);
        QCOMPARE(w2->role, TensorRole::ExpertPerTensor);
        QCOMPARE(w2->expert, 7);
    }

    void olmoe() {
        ROUTEPACK_REQUIRE_SHARED(dir, "checkpoints/olmoe/checkpoint");
        const SchemeReport r = classify_checkpoint(collect(dir), model_of(dir));
        QCOMPARE(r.scheme, std::string("hf-per-expert"));
        QCOMPARE(r.moe_layers, (std::vector<int>{0, 1}));
        QCOMPARE(r.experts, 16);
        // 2 MoE layers x 16 experts x {gate,up,down}_proj.weight = 96
        QCOMPARE(count_role(r, TensorRole::ExpertPerTensor), 96);
        // mlp.gate.weight of layers 0, 1 = 2
        QCOMPARE(count_role(r, TensorRole::Router), 2);
        QCOMPARE(count_role(r, TensorRole::RouterBias), 0);
    }

    void deepseek_v3() {
        ROUTEPACK_REQUIRE_SHARED(dir, "checkpoints/deepseek_v3/checkpoint");
        const SchemeReport r = classify_checkpoint(collect(dir), model_of(dir));
        QCOMPARE(r.scheme, std::string("hf-per-expert"));
        QCOMPARE(r.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(r.experts, 16);
        // 2 MoE layers x 16 experts x {gate,up,down}_proj.weight = 96 (shared_experts not counted)
        QCOMPARE(count_role(r, TensorRole::ExpertPerTensor), 96);
        // mlp.gate.weight of layers 1, 2 = 2; mlp.gate.e_score_correction_bias of layers 1, 2 = 2
        QCOMPARE(count_role(r, TensorRole::Router), 2);
        QCOMPARE(count_role(r, TensorRole::RouterBias), 2);
        const TensorClass* bias = find(r, "model.layers.1.mlp.gate.e_score_correction_bias");
        QVERIFY(bias);
        QCOMPARE(bias->role, TensorRole::RouterBias);
        QCOMPARE(bias->layer, 1);
        // 2 MoE layers x shared_experts.{gate,up,down}_proj.weight = 6 tensors, all Other
        int shared = 0;
        for (const auto& t : r.tensors)
            if (t.name.find("shared_experts") != std::string::npos) {
                ++shared;
                QCOMPARE(t.role, TensorRole::Other);
            }
        QCOMPARE(shared, 6);
        const TensorClass* dense = find(r, "model.layers.0.mlp.gate_proj.weight");
        QVERIFY(dense);
        QCOMPARE(dense->role, TensorRole::Other);
    }

    void gpt_oss() {
        ROUTEPACK_REQUIRE_SHARED(dir, "checkpoints/gpt_oss/checkpoint");
        const SchemeReport r = classify_checkpoint(collect(dir), model_of(dir));
        QCOMPARE(r.scheme, std::string("hf-stacked"));
        QCOMPARE(r.moe_layers, (std::vector<int>{0, 1}));
        QCOMPARE(r.experts, 8);
        QCOMPARE(count_role(r, TensorRole::ExpertPerTensor), 0);
        // 2 MoE layers x {gate_up_proj, gate_up_proj_bias, down_proj, down_proj_bias} = 8
        QCOMPARE(count_role(r, TensorRole::ExpertStacked), 8);
        // mlp.router.weight of layers 0, 1 = 2; mlp.router.bias of layers 0, 1 = 2
        QCOMPARE(count_role(r, TensorRole::Router), 2);
        QCOMPARE(count_role(r, TensorRole::RouterBias), 2);
        const TensorClass* gu = find(r, "model.layers.1.mlp.experts.gate_up_proj");
        QVERIFY(gu);
        QCOMPARE(gu->role, TensorRole::ExpertStacked);
        QCOMPARE(gu->expert_axis, 0);
        QCOMPARE(gu->expert, -1);
        QCOMPARE(gu->layer, 1);
    }

    void toy_ok_and_variants() {
        const SchemeReport r = classify_checkpoint(toy_per_expert(), toy());
        QCOMPARE(r.scheme, std::string("hf-per-expert"));
        QCOMPARE(r.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(count_role(r, TensorRole::ExpertPerTensor), 2 * 4 * 3);
        QCOMPARE(count_role(r, TensorRole::Router), 2);

        // FP8 scales move with their expert; shared_expert (Qwen2-MoE) is Other.
        NameShapes ns = toy_per_expert();
        for (int l = 1; l <= 2; ++l)
            for (int e = 0; e < 4; ++e)
                ns.push_back({"model.layers." + std::to_string(l) + ".mlp.experts." + std::to_string(e) +
                                  ".up_proj.weight_scale_inv",
                              {1, 1}});
        ns.push_back({"model.layers.1.mlp.shared_expert.up_proj.weight", {8, 8}});
        ns.push_back({"model.layers.1.mlp.shared_expert_gate.weight", {1, 8}});
        const SchemeReport r2 = classify_checkpoint(ns, toy());
        QCOMPARE(count_role(r2, TensorRole::ExpertPerTensor), 2 * 4 * 4);
        QCOMPARE(find(r2, "model.layers.1.mlp.shared_expert.up_proj.weight")->role, TensorRole::Other);
        QCOMPARE(find(r2, "model.layers.1.mlp.shared_expert_gate.weight")->role, TensorRole::Other);

        // Megatron dist-ckpt: stacked global experts with optimizer-state prefixes, fp32 router.
        NameShapes mg;
        for (int l = 1; l <= 2; ++l) {
            const std::string p = "decoder.layers." + std::to_string(l) + ".mlp.";
            for (const char* pre :
                 {"", "optimizer.state.fp32_param.", "optimizer.state.exp_avg.", "optimizer.state.exp_avg_sq."}) {
                mg.push_back({pre + p + "experts.experts.linear_fc1.weight", {4, 16, 8}});
                mg.push_back({pre + p + "experts.experts.linear_fc2.weight", {4, 8, 8}});
                mg.push_back({pre + p + "router.weight", {4, 8}});
            }
            mg.push_back({p + "router.expert_bias", {4}});
            mg.push_back({p + "shared_experts.linear_fc1.weight", {16, 8}});
        }
        const SchemeReport r3 = classify_checkpoint(mg, toy());
        QCOMPARE(r3.scheme, std::string("megatron-stacked"));
        QCOMPARE(r3.moe_layers, (std::vector<int>{1, 2}));
        // 2 layers x 4 prefixes x {fc1, fc2} = 16; routers 2 x 4 = 8; expert_bias 2
        QCOMPARE(count_role(r3, TensorRole::ExpertStacked), 16);
        QCOMPARE(count_role(r3, TensorRole::Router), 8);
        QCOMPARE(count_role(r3, TensorRole::RouterBias), 2);
        QCOMPARE(find(r3, "decoder.layers.1.mlp.shared_experts.linear_fc1.weight")->role, TensorRole::Other);

        // mlp.gate.weight whose first dimension is not E is not a router.
        NameShapes odd = toy_per_expert();
        odd.push_back({"model.layers.0.mlp.gate.weight", {8, 8}});
        QCOMPARE(find(classify_checkpoint(odd, toy()), "model.layers.0.mlp.gate.weight")->role, TensorRole::Other);
    }

    /// The one table of MoE names (core/model/moe_names.h), name by name.
    void moeNameTable() {
        using K = MoeTensorName::Kind;
        struct Want {
            const char* block;
            const char* rest;
            K kind;
            const char* layout; // "" when none
            long long expert;
            const char* tensor;
        };
        const Want wants[] = {
            {"mlp", "experts.3.up_proj.weight", K::Expert, "hf-per-expert", 3, "up_proj.weight"},
            {"block_sparse_moe", "experts.7.w1.weight", K::Expert, "hf-per-expert", 7, "w1.weight"},
            {"mlp", "experts.local_experts.5.linear_fc1.weight", K::Expert, "megatron-sequential", 5,
             "linear_fc1.weight"},
            {"mlp", "experts.weight1", K::Expert, "megatron-grouped", -1, "weight1"},
            {"mlp", "experts.weight2", K::Expert, "megatron-grouped", -1, "weight2"},
            {"mlp", "experts.experts.2.linear_fc2.weight", K::Expert, "megatron-per-expert", 2, "linear_fc2.weight"},
            {"mlp", "experts.experts.linear_fc2.weight", K::Expert, "megatron-stacked", -1, "linear_fc2.weight"},
            {"mlp", "experts.gate_up_proj", K::Expert, "hf-stacked", -1, "gate_up_proj"},
            {"block_sparse_moe", "experts.gate_up_proj", K::Other, "", -1, ""},
            {"mlp", "experts.1234567890.w", K::Expert, "hf-per-expert", -2, "1234567890.w"},
            {"mlp", "gate.weight", K::RouterWeight, "", -1, "weight"},
            {"mlp", "router.bias", K::RouterBias, "", -1, "bias"},
            {"mlp", "gate.e_score_correction_bias", K::RouterBias, "", -1, "e_score_correction_bias"},
            {"mlp", "router.expert_bias", K::RouterBias, "", -1, "expert_bias"},
            {"mlp", "shared_experts.up_proj.weight", K::SharedExpert, "", -1, ""},
            {"mlp", "shared_expert_gate.weight", K::SharedExpert, "", -1, ""},
            {"mlp", "gate_proj.weight", K::Other, "", -1, ""},
            {"mlp", "experts.", K::Other, "", -1, ""},
        };
        for (const Want& w : wants) {
            const MoeTensorName got = match_moe_tensor(w.block, w.rest);
            const QByteArray what = QByteArray(w.block) + "." + w.rest;
            QVERIFY2(got.kind == w.kind, what.constData());
            QCOMPARE(got.layout ? got.layout->name : std::string(), std::string(w.layout));
            QCOMPARE(got.expert, w.expert);
            QCOMPARE(got.tensor, std::string(w.tensor));
        }
        QCOMPARE(match_moe_tensor("mlp", "gate.weight").router, std::string("gate"));
        int layer = -1;
        std::string_view block, rest;
        QVERIFY(find_moe_block("model.layers.12.mlp.experts.0.w", layer, block, rest));
        QCOMPARE(layer, 12);
        QCOMPARE(std::string(block), std::string("mlp"));
        QCOMPARE(std::string(rest), std::string("experts.0.w"));
        QVERIFY(find_moe_block("decoder.layers.3.self_attention.linear_qkv.weight", layer, block, rest));
        QCOMPARE(layer, 3);
        QVERIFY(block.empty());
        QCOMPARE(std::string(rest), std::string("self_attention.linear_qkv.weight"));
        QVERIFY(find_moe_block("layers.1234567890.mlp.x", layer, block, rest));
        QCOMPARE(layer, -2);
        QVERIFY(!find_moe_block("lm_head.weight", layer, block, rest));
        QVERIFY(!find_moe_block("model.xlayers.1.mlp.experts.0.w", layer, block, rest));
        std::vector<std::string> live;
        for (const MoeLayout& row : moe_layouts())
            if (row.live) live.push_back(row.name);
        QCOMPARE(live,
                 (std::vector<std::string>{"megatron-sequential", "megatron-grouped", "hf-per-expert", "hf-stacked"}));
    }

    /// Megatron-Core's live names: SequentialMLP's local_experts and GroupedMLP's flat weight1 / weight2.
    void megatronLiveNames() {
        NameShapes seq;
        for (int l = 1; l <= 2; ++l) {
            const std::string p = "decoder.layers." + std::to_string(l) + ".mlp.";
            seq.push_back({p + "router.weight", {4, 8}});
            seq.push_back({p + "router.expert_bias", {4}});
            for (int e = 0; e < 4; ++e)
                for (const char* k : {"linear_fc1.weight", "linear_fc2.weight"})
                    seq.push_back({p + "experts.local_experts." + std::to_string(e) + "." + k, {8, 8}});
        }
        const SchemeReport r = classify_checkpoint(seq, toy());
        QCOMPARE(r.scheme, std::string("megatron-sequential"));
        QCOMPARE(count_role(r, TensorRole::ExpertPerTensor), 2 * 4 * 2);
        QCOMPARE(count_role(r, TensorRole::Router), 2);
        QCOMPARE(count_role(r, TensorRole::RouterBias), 2);
        QCOMPARE(find(r, "decoder.layers.2.mlp.experts.local_experts.3.linear_fc2.weight")->expert, 3);

        NameShapes grouped;
        for (int l = 1; l <= 2; ++l) {
            const std::string p = "decoder.layers." + std::to_string(l) + ".mlp.";
            grouped.push_back({p + "router.weight", {4, 8}});
            grouped.push_back({p + "experts.weight1", {8, 4 * 16}});
            grouped.push_back({p + "experts.weight2", {4 * 8, 8}});
        }
        const SchemeReport g = classify_checkpoint(grouped, toy());
        QCOMPARE(g.scheme, std::string("megatron-grouped"));
        QCOMPARE(count_role(g, TensorRole::ExpertFlatChunks), 4);
        QCOMPARE(count_role(g, TensorRole::ExpertStacked), 0);
        QCOMPARE(g.moe_layers, (std::vector<int>{1, 2}));

        grouped.push_back({"decoder.layers.2.mlp.experts.weight1", {5, 6}});
        grouped.erase(grouped.begin() + 4);
        QCOMPARE(error_of(grouped, toy()),
                 std::string("decoder.layers.2.mlp.experts.weight1: 30 elements do not split into 4 contiguous "
                             "expert chunks (Megatron GroupedMLP weight1)"));
    }

    void errors() {
        NameShapes ns = toy_per_expert();
        ns.push_back({"model.layers.1.mlp.experts.4.up_proj.weight", {8, 8}});
        QCOMPARE(error_of(ns, toy()),
                 std::string("model.layers.1.mlp.experts.4.up_proj.weight: expert index 4 >= experts 4"));

        ns = toy_per_expert();
        ns.erase(
            std::remove_if(ns.begin(), ns.end(),
                           [](const auto& p) { return p.first.find("layers.2.mlp.experts.") != std::string::npos; }),
            ns.end());
        QCOMPARE(error_of(ns, toy()), std::string("layer 2: MoE layer has no expert tensors"));

        ns = toy_per_expert();
        ns.push_back({"model.layers.0.mlp.experts.0.up_proj.weight", {8, 8}});
        QCOMPARE(error_of(ns, toy()),
                 std::string("model.layers.0.mlp.experts.0.up_proj.weight: expert tensor in dense layer 0"));

        ns = {{"model.layers.1.mlp.experts.gate_up_proj", {7, 8, 16}},
              {"model.layers.2.mlp.experts.gate_up_proj", {8, 8, 16}}};
        QCOMPARE(error_of(ns, toy(8)),
                 std::string("model.layers.1.mlp.experts.gate_up_proj: stacked expert tensor has first dimension 7, "
                             "expected experts 8"));

        ns = toy_per_expert(8);
        ns.erase(std::remove_if(ns.begin(), ns.end(),
                                [](const auto& p) { return p.first == "model.layers.1.mlp.experts.7.up_proj.weight"; }),
                 ns.end());
        QCOMPARE(error_of(ns, toy(8)), std::string("layer 1: expert 7 has no up_proj while others do"));

        ns = toy_per_expert();
        ns.push_back({"model.layers.0.mlp.router.weight", {4, 8}});
        QCOMPARE(error_of(ns, toy()), std::string("model.layers.0.mlp.router.weight: router tensor in dense layer 0"));

        ns = toy_per_expert();
        ns.push_back({"model.layers.2.mlp.experts.gate_up_proj", {4, 8, 16}});
        QCOMPARE(error_of(ns, toy()),
                 std::string("model.layers.2.mlp.experts.gate_up_proj: stacked expert tensor in a checkpoint with "
                             "per-expert tensors (model.layers.1.mlp.experts.0.gate_proj.weight)"));
    }

    /// describe_checkpoint on the five shared checkpoints (the README's table), and on one without
    /// config.json (its tensor names alone).
    void describe_shared_checkpoints() {
        struct Want {
            const char* folder;
            const char* name;
            int layers, experts, top_k;
            std::vector<int> moe;
            const char* scheme;
            const char* text;
        };
        const Want wants[] = {
            {"qwen3_moe",
             "qwen3_moe",
             3,
             16,
             4,
             {1, 2},
             "hf-per-expert",
             "qwen3_moe: 16 experts (top-4) in MoE layers 1-2 of 3 decoder layers"},
            {"mixtral",
             "mixtral",
             2,
             8,
             2,
             {0, 1},
             "hf-per-expert",
             "mixtral: 8 experts (top-2) in MoE layers 0-1 of 2 decoder layers"},
            {"olmoe",
             "olmoe",
             2,
             16,
             4,
             {0, 1},
             "hf-per-expert",
             "olmoe: 16 experts (top-4) in MoE layers 0-1 of 2 decoder layers"},
            {"deepseek_v3",
             "deepseek_v3",
             3,
             16,
             4,
             {1, 2},
             "hf-per-expert",
             "deepseek_v3: 16 experts (top-4) in MoE layers 1-2 of 3 decoder layers"},
            {"gpt_oss",
             "gpt_oss",
             2,
             8,
             2,
             {0, 1},
             "hf-stacked",
             "gpt_oss: 8 experts (top-2) in MoE layers 0-1 of 2 decoder layers"},
        };
        for (const Want& w : wants) {
            ROUTEPACK_REQUIRE_SHARED(dir, std::string("checkpoints/") + w.folder + "/checkpoint");
            const CheckpointModel m = describe_checkpoint(dir);
            QCOMPARE(m.name, std::string(w.name));
            QCOMPARE(m.num_hidden_layers, w.layers);
            QCOMPARE(m.experts, w.experts);
            QCOMPARE(m.top_k, w.top_k);
            QCOMPARE(m.moe_layers, w.moe);
            QCOMPARE(m.scheme, std::string(w.scheme));
            QVERIFY(m.from_config);
            QCOMPARE(checkpoint_model_text(m), std::string(w.text));
        }
        // Without config.json: the names give the MoE layers, E and the decoder layers.
        ROUTEPACK_REQUIRE_SHARED(qwen, "checkpoints/qwen3_moe/checkpoint");
        const fs::path bare = routepack::test::temp_dir(QStringLiteral("describe-bare"));
        for (const auto& e : fs::directory_iterator(qwen))
            if (e.path().extension() == ".safetensors") fs::copy_file(e.path(), bare / e.path().filename());
        const CheckpointModel b = describe_checkpoint(bare);
        QVERIFY(!b.from_config);
        QCOMPARE(b.experts, 16);
        QCOMPARE(b.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(b.num_hidden_layers, 3);
        QCOMPARE(checkpoint_model_text(b), std::string("16 experts in MoE layers 1-2 of 3 decoder layers"));
        ROUTEPACK_REQUIRE_SHARED(oss, "checkpoints/gpt_oss/checkpoint");
        const fs::path stacked = routepack::test::temp_dir(QStringLiteral("describe-stacked"));
        for (const auto& e : fs::directory_iterator(oss))
            if (e.path().extension() == ".safetensors") fs::copy_file(e.path(), stacked / e.path().filename());
        QCOMPARE(describe_checkpoint(stacked).experts, 8);
        // A dense checkpoint (no expert tensors) and a missing folder are refused.
        const fs::path dense = routepack::test::temp_dir(QStringLiteral("describe-dense"));
        const std::vector<std::byte> zeros(16);
        write_safetensors(dense / "model.safetensors",
                          {{"model.layers.0.mlp.up_proj.weight", Dtype::F32, {2, 2}, zeros}}, {});
        QCOMPARE(routepack::test::error_of<InputError>([&] { describe_checkpoint(dense); }),
                 dense.string() + ": no routed-expert tensors (not a MoE checkpoint)");
        QCOMPARE(routepack::test::error_of<InputError>([&] { describe_checkpoint(dense / "nope"); }),
                 (dense / "nope").string() + ": no such checkpoint folder or file");
    }
};

QTEST_GUILESS_MAIN(TstCheckpointScheme)
#include "tst_checkpoint_scheme.moc"
