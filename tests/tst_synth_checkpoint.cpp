// The synthetic DeepSeek-V2-Lite-shaped checkpoint (gpu/synth_checkpoint.h): shards open with our reader,
// the index maps every tensor to its shard, layer 0 is dense and layer 1 MoE with HF names and shapes,
// every expert element decodes to its own (layer, expert), and config.json reads back as the model.
#include "core/model/model.h"
#include "core/util/errors.h"
#include "gpu/safetensors/safetensors.h"
#include "gpu/safetensors/synth_checkpoint.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace routepack;
using namespace routepack::gpu;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::vector<std::uint64_t> shape(std::initializer_list<std::uint64_t> s) {
    return s;
}

} // namespace

class TstSynthCheckpoint : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void encoding_roundtrip() {
        for (Dtype d : {Dtype::BF16, Dtype::F32}) {
            for (int l : {0, 1, 13, 26, 100})
                for (int e : {0, 1, 63, 127}) {
                    const std::uint32_t bits = synth_expert_bits(d, l, e);
                    std::byte buf[4];
                    for (int i = 0; i < 4; ++i)
                        buf[i] = static_cast<std::byte>((bits >> (8 * i)) & 0xFF);
                    const auto got = decode_synth_expert_element(d, buf);
                    QVERIFY(got.has_value());
                    QCOMPARE(got->first, l);
                    QCOMPARE(got->second, e);
                }
        }
        // BF16 value check: layer 3, expert 5 is (1 + 5/128) * 8 = 8.3125 -> float bits top half.
        const std::uint32_t b = synth_expert_bits(Dtype::BF16, 3, 5);
        const std::uint32_t f32 = b << 16;
        float v = 0;
        std::memcpy(&v, &f32, 4);
        QCOMPARE(v, 8.3125f);
        QVERIFY_THROWS_EXCEPTION(InputError, synth_expert_bits(Dtype::BF16, 1, 128));
        QVERIFY_THROWS_EXCEPTION(InputError, synth_expert_bits(Dtype::F16, 16, 0));
    }

    void deepseek_v2_lite() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path out = fs::path(tmp.path().toStdString()) / "ckpt";
        SynthCheckpointConfig cfg;
        const auto files = write_synth_checkpoint(cfg, out);
        QVERIFY(files.size() >= 3);
        QCOMPARE(files.back().filename().string(), std::string("config.json"));
        QCOMPARE(files[files.size() - 2].filename().string(), std::string("model.safetensors.index.json"));
        const std::size_t nshards = files.size() - 2;
        QVERIFY2(nshards >= 2, "expected more than one shard at 1 MiB");
        // No temp folder left behind.
        for (const auto& ent : fs::directory_iterator(out.parent_path()))
            QVERIFY2(ent.path().filename() == "ckpt", ent.path().c_str());

        const CheckpointIndex idx = read_index(out);
        const auto shard_names = idx.shards();
        QCOMPARE(shard_names.size(), nshards);
        const std::regex shard_re("model-0000[1-9]-of-0000" + std::to_string(nshards) + "\\.safetensors");
        std::map<std::string, std::string> seen; // tensor -> shard
        std::uint64_t total = 0;
        std::map<std::string, TensorInfo> infos;
        int expert_tensors = 0;
        const std::regex expert_re(R"(model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight)");
        std::string prev_last;
        for (std::size_t k = 0; k < nshards; ++k) {
            QCOMPARE(files[k].filename().string(), shard_names[k]);
            QVERIFY2(std::regex_match(shard_names[k], shard_re), shard_names[k].c_str());
            const auto f = SafetensorsFile::open(files[k]);
            QVERIFY(f.has_metadata());
            QCOMPARE(f.metadata().at("format"), std::string("pt"));
            std::uint64_t bytes = 0;
            std::vector<std::string> names;
            for (const auto& t : f.tensors()) {
                QCOMPARE(t.dtype, Dtype::BF16);
                QVERIFY2(!seen.count(t.name), t.name.c_str());
                seen[t.name] = shard_names[k];
                infos[t.name] = t;
                bytes += t.nbytes();
                names.push_back(t.name);
                std::smatch m;
                if (std::regex_match(t.name, m, expert_re)) {
                    ++expert_tensors;
                    const int l = std::stoi(m[1]), e = std::stoi(m[2]);
                    const auto data = f.data(t);
                    QCOMPARE(data.size(), t.nbytes());
                    for (std::size_t i = 0; i < data.size(); i += 2) {
                        const auto got = decode_synth_expert_element(Dtype::BF16, data.data() + i);
                        QVERIFY2(got && got->first == l && got->second == e, t.name.c_str());
                    }
                }
            }
            total += bytes;
            if (nshards > 1) QVERIFY(bytes <= static_cast<std::uint64_t>(cfg.max_shard_bytes));
            // Name order across shards.
            std::sort(names.begin(), names.end());
            if (!prev_last.empty()) QVERIFY(prev_last < names.front());
            prev_last = names.back();
        }
        QCOMPARE(idx.weight_map.size(), seen.size());
        for (const auto& [name, shard] : seen) {
            QVERIFY2(idx.weight_map.count(name), name.c_str());
            QCOMPARE(idx.weight_map.at(name), shard);
        }
        QVERIFY(idx.total_size.has_value());
        QCOMPARE(*idx.total_size, total);
        QCOMPARE(expert_tensors, 26 * 64 * 3);

        const std::uint64_t H = 16, M = 8, I = 32, V = 64;
        // Layer 0: dense MLP, no router, experts or shared experts.
        QCOMPARE(infos.at("model.layers.0.mlp.gate_proj.weight").shape, shape({I, H}));
        QCOMPARE(infos.at("model.layers.0.mlp.up_proj.weight").shape, shape({I, H}));
        QCOMPARE(infos.at("model.layers.0.mlp.down_proj.weight").shape, shape({H, I}));
        for (const auto& [name, info] : infos) {
            if (name.rfind("model.layers.0.mlp.", 0) == 0)
                QVERIFY2(name.find("expert") == std::string::npos && name != "model.layers.0.mlp.gate.weight",
                         name.c_str());
        }
        // Layer 1: MoE.
        QCOMPARE(infos.at("model.layers.1.mlp.gate.weight").shape, shape({64, H}));
        QVERIFY(!infos.count("model.layers.1.mlp.gate_proj.weight"));
        QCOMPARE(infos.at("model.layers.1.mlp.shared_experts.gate_proj.weight").shape, shape({M, H}));
        QCOMPARE(infos.at("model.layers.1.mlp.shared_experts.up_proj.weight").shape, shape({M, H}));
        QCOMPARE(infos.at("model.layers.1.mlp.shared_experts.down_proj.weight").shape, shape({H, M}));
        std::set<int> layer1_experts;
        int layer1_expert_tensors = 0;
        for (const auto& [name, info] : infos) {
            std::smatch m;
            if (!std::regex_match(name, m, expert_re) || m[1] != "1") continue;
            ++layer1_expert_tensors;
            layer1_experts.insert(std::stoi(m[2]));
            QCOMPARE(info.shape, m[3] == "down" ? shape({H, M}) : shape({M, H}));
        }
        QCOMPARE(layer1_expert_tensors, 64 * 3);
        QCOMPARE(int(layer1_experts.size()), 64);
        QCOMPARE(*layer1_experts.rbegin(), 63);
        QCOMPARE(infos.at("model.embed_tokens.weight").shape, shape({V, H}));
        QCOMPARE(infos.at("lm_head.weight").shape, shape({V, H}));
        QCOMPARE(infos.at("model.norm.weight").shape, shape({H}));
        QVERIFY(infos.count("model.layers.26.mlp.experts.63.down_proj.weight"));
        QVERIFY(!infos.count("model.layers.27.input_layernorm.weight"));

        // config.json reads back as the model.
        const ModelDescription m = model_from_hf_config(read_all(out / "config.json"), (out / "config.json").string());
        QCOMPARE(m.num_hidden_layers, 27);
        QCOMPARE(m.experts, 64);
        QCOMPARE(m.top_k, 6);
        QCOMPARE(format_layer_list(m.moe_layers), std::string("1-26"));

        // Refuses a non-empty folder, and leaves it as it was.
        QVERIFY_THROWS_EXCEPTION(InputError, write_synth_checkpoint(cfg, out));
        QVERIFY(fs::exists(out / "config.json"));
    }

    void empty_folder_and_small_shards() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path out = fs::path(tmp.path().toStdString()) / "small";
        fs::create_directory(out); // an empty folder is fine
        SynthCheckpointConfig cfg;
        cfg.model = known_model("llama4-maverick"); // MoE on odd layers, 128 experts (BF16 limit)
        cfg.model.num_hidden_layers = 4;
        cfg.model.moe_layers = {1, 3};
        cfg.hidden = 4;
        cfg.max_shard_bytes = 4096;
        cfg.dtype = "F32";
        const auto files = write_synth_checkpoint(cfg, out);
        const CheckpointIndex idx = read_index(out);
        QCOMPARE(idx.shards().size(), files.size() - 2);
        for (std::size_t k = 0; k + 2 < files.size(); ++k) {
            const auto f = SafetensorsFile::open(files[k]);
            for (const auto& t : f.tensors()) {
                QCOMPARE(idx.weight_map.at(t.name), files[k].filename().string());
                QCOMPARE(t.dtype, Dtype::F32);
            }
        }
        const ModelDescription m = model_from_hf_config(read_all(out / "config.json"), "config.json");
        QCOMPARE(m.moe_layers, (std::vector<int>{1, 3}));
        QCOMPARE(m.experts, 128);
        QVERIFY(idx.weight_map.count("model.layers.3.mlp.experts.127.up_proj.weight"));
        QVERIFY(idx.weight_map.count("model.layers.2.mlp.up_proj.weight"));
    }
};

QTEST_GUILESS_MAIN(TstSynthCheckpoint)
#include "tst_synth_checkpoint.moc"
