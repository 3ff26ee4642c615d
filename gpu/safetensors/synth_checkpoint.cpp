#include "gpu/safetensors/synth_checkpoint.h"

#include "core/model/limits.h"
#include "core/util/atomic_file.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"
#include "core/util/json_field.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <unistd.h>

namespace routepack::gpu {

namespace fs = std::filesystem;

namespace {

// Small fixed attention widths (DeepSeek-V2 MLA naming, q_lora_rank null as in V2-Lite).
constexpr int kHeads = 2;
constexpr int kQkNope = 4;
constexpr int kQkRope = 2;
constexpr int kVHead = 4;
constexpr int kKvLoraRank = 8;

struct FloatFormat {
    int bytes;
    int mant_bits;
    int exp_bits;
    int bias() const { return (1 << (exp_bits - 1)) - 1; }
};

FloatFormat float_format(Dtype d) {
    switch (d) {
    case Dtype::BF16:
        return {2, 7, 8};
    case Dtype::F16:
        return {2, 10, 5};
    case Dtype::F32:
        return {4, 23, 8};
    default:
        break;
    }
    throw InputError("synth-checkpoint: dtype: " + std::string(dtype_name(d)) + " is not supported (BF16, F16 or F32)");
}

/// Bits of a value that is exactly representable (normal or zero) in format f.
std::uint32_t encode_exact(const FloatFormat& f, double v) {
    if (v == 0.0) return 0;
    const std::uint32_t sign = v < 0 ? 1u : 0u;
    int exp2 = 0;
    const double m = std::frexp(std::fabs(v), &exp2); // m in [0.5, 1)
    const int e = exp2 - 1;                           // v = (2m) * 2^e, 2m in [1, 2)
    const double frac = (2.0 * m - 1.0) * std::ldexp(1.0, f.mant_bits);
    const auto mant = static_cast<std::uint32_t>(frac);
    const int field = e + f.bias();
    if (field <= 0 || field >= (1 << f.exp_bits) - 1 || static_cast<double>(mant) != frac)
        throw InputError("synth-checkpoint: value not exactly representable");
    return (sign << (f.exp_bits + f.mant_bits)) | (static_cast<std::uint32_t>(field) << f.mant_bits) | mant;
}

void put_bits(std::vector<std::byte>& out, const FloatFormat& f, std::uint32_t bits) {
    for (int i = 0; i < f.bytes; ++i)
        out.push_back(static_cast<std::byte>((bits >> (8 * i)) & 0xFF));
}

enum class Fill { Expert, Norm, Small };

struct Spec {
    std::string name;
    std::vector<std::uint64_t> shape;
    Fill fill = Fill::Small;
    int layer = 0;
    int expert = 0;
};

std::uint64_t numel(const Spec& s) {
    std::uint64_t n = 1;
    for (auto d : s.shape)
        n *= d;
    return n;
}

std::vector<Spec> tensor_specs(const SynthCheckpointConfig& c) {
    const auto H = static_cast<std::uint64_t>(c.hidden);
    const auto I = static_cast<std::uint64_t>(c.intermediate);
    const auto M = static_cast<std::uint64_t>(c.moe_intermediate);
    const auto V = static_cast<std::uint64_t>(c.vocab);
    const auto E = static_cast<std::uint64_t>(c.model.experts);
    std::vector<Spec> specs;
    specs.push_back({"model.embed_tokens.weight", {V, H}});
    specs.push_back({"model.norm.weight", {H}, Fill::Norm});
    specs.push_back({"lm_head.weight", {V, H}});
    const std::set<int> moe(c.model.moe_layers.begin(), c.model.moe_layers.end());
    for (int l = 0; l < c.model.num_hidden_layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        specs.push_back({p + "input_layernorm.weight", {H}, Fill::Norm});
        specs.push_back({p + "post_attention_layernorm.weight", {H}, Fill::Norm});
        specs.push_back({p + "self_attn.q_proj.weight", {kHeads * (kQkNope + kQkRope), H}});
        specs.push_back({p + "self_attn.kv_a_proj_with_mqa.weight", {kKvLoraRank + kQkRope, H}});
        specs.push_back({p + "self_attn.kv_a_layernorm.weight", {kKvLoraRank}, Fill::Norm});
        specs.push_back({p + "self_attn.kv_b_proj.weight", {kHeads * (kQkNope + kVHead), kKvLoraRank}});
        specs.push_back({p + "self_attn.o_proj.weight", {H, kHeads * kVHead}});
        if (!moe.count(l)) {
            specs.push_back({p + "mlp.gate_proj.weight", {I, H}});
            specs.push_back({p + "mlp.up_proj.weight", {I, H}});
            specs.push_back({p + "mlp.down_proj.weight", {H, I}});
            continue;
        }
        specs.push_back({p + "mlp.gate.weight", {E, H}});
        specs.push_back({p + "mlp.shared_experts.gate_proj.weight", {M, H}});
        specs.push_back({p + "mlp.shared_experts.up_proj.weight", {M, H}});
        specs.push_back({p + "mlp.shared_experts.down_proj.weight", {H, M}});
        for (int e = 0; e < c.model.experts; ++e) {
            const std::string q = p + "mlp.experts." + std::to_string(e) + ".";
            specs.push_back({q + "gate_proj.weight", {M, H}, Fill::Expert, l, e});
            specs.push_back({q + "up_proj.weight", {M, H}, Fill::Expert, l, e});
            specs.push_back({q + "down_proj.weight", {H, M}, Fill::Expert, l, e});
        }
    }
    std::sort(specs.begin(), specs.end(), [](const Spec& a, const Spec& b) { return a.name < b.name; });
    return specs;
}

std::vector<std::byte> tensor_bytes(const Spec& s, Dtype d, const FloatFormat& f) {
    const std::uint64_t n = numel(s);
    std::vector<std::byte> out;
    out.reserve(n * static_cast<std::uint64_t>(f.bytes));
    if (s.fill == Fill::Expert) {
        const std::uint32_t bits = synth_expert_bits(d, s.layer, s.expert);
        for (std::uint64_t i = 0; i < n; ++i)
            put_bits(out, f, bits);
        return out;
    }
    if (s.fill == Fill::Norm) {
        const std::uint32_t one = encode_exact(f, 1.0);
        for (std::uint64_t i = 0; i < n; ++i)
            put_bits(out, f, one);
        return out;
    }
    // k/64, k in -8..8, from an FNV-1a hash of the name and the element index.
    std::uint32_t h = 2166136261u;
    for (unsigned char ch : s.name)
        h = (h ^ ch) * 16777619u;
    std::uint32_t table[17];
    for (int k = -8; k <= 8; ++k)
        table[k + 8] = encode_exact(f, k / 64.0);
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint32_t x = (h ^ static_cast<std::uint32_t>(i * 2654435761u)) * 16777619u;
        put_bits(out, f, table[(x >> 8) % 17]);
    }
    return out;
}

/// Writes a whole file (util::write_file_atomically). InputError "<p>: IoError: cannot create file" or
/// "<p>: IoError: write failed".
void write_text(const fs::path& p, const std::string& text) {
    try {
        util::write_file_atomically(p, text);
    } catch (const util::AtomicWriteError& e) {
        throw InputError(p.string() + (e.step == util::AtomicWriteError::Step::Create ? ": IoError: cannot create file"
                                                                                      : ": IoError: write failed"));
    }
}

std::string shard_name(std::size_t k, std::size_t n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", k, n);
    return buf;
}

void check_config(const SynthCheckpointConfig& c) {
    c.model.validate();
    auto pos = [](int v, const char* field) {
        if (v < 1 || v > kMaxSynthDimension)
            throw InputError(std::string("synth-checkpoint: ") + field + ": must be 1.." +
                             std::to_string(kMaxSynthDimension) + ", got " + std::to_string(v));
    };
    pos(c.hidden, "hidden");
    pos(c.moe_intermediate, "moe_intermediate");
    pos(c.intermediate, "intermediate");
    pos(c.vocab, "vocab");
    if (c.max_shard_bytes < 1) throw InputError("synth-checkpoint: max_shard_bytes: must be positive");
    const auto d = parse_dtype(c.dtype);
    if (!d) throw InputError("synth-checkpoint: dtype: unknown dtype '" + c.dtype + "'");
    (void)float_format(*d);
    // Representability of every (l, e): the extremes suffice.
    (void)synth_expert_bits(*d, c.model.moe_layers.back(), c.model.experts - 1);
    (void)synth_expert_bits(*d, c.model.moe_layers.front(), 0);
}

/// A physical_to_logical_map key: a checkpoint layer id, decimal 0..kMaxLayerId without sign, spaces
/// or leading zeros; nullopt otherwise.
std::optional<int> layer_key(const std::string& key) {
    if (key.empty() || key.size() > 5 || (key.size() > 1 && key[0] == '0')) return std::nullopt;
    int v = 0;
    for (const char c : key) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
    }
    if (v > kMaxLayerId) return std::nullopt;
    return v;
}

/// The output order, placement fingerprint and physical_to_logical_map rows of the sidecar `sc` into
/// `out` and `p2l`. InputError "<sc>: not a routepack rewrite sidecar: malformed JSON at byte B" (or
/// ": malformed JSON: <description>"), JsonField's wording for a field ("<sc>: output_order is
/// missing", "<sc>: output_order is \"x\", not \"physical\" or \"logical\"",
/// "<sc>: physical_to_logical_map.3[5] is 64, not an integer in 0..63": a row of E slots
/// holds logical ids 0..E-1), or "<sc>: physical_to_logical_map: key 'x' is not a layer id ...".
void read_sidecar_map(const fs::path& sc, SynthSlotCheck& out, std::map<int, std::vector<int>>& p2l) {
    nlohmann::json j;
    try {
        j = util::parse_json_strict(read_input_file(sc, input_files::kRewriteSidecar), sc.string());
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(sc.string() + ": not a routepack rewrite sidecar: malformed JSON at byte " +
                         std::to_string(e.byte));
    } catch (const nlohmann::json::exception& e) {
        throw InputError(sc.string() +
                         ": not a routepack rewrite sidecar: malformed JSON: " + util::json_error_description(e));
    }
    const util::JsonField doc(j, sc.string());
    doc.object();
    out.order = doc["output_order"].string();
    if (out.order != "physical" && out.order != "logical") doc["output_order"].fail("\"physical\" or \"logical\"");
    const util::JsonField plan = doc["plan"];
    plan.object();
    out.placement = plan["placement_fingerprint"].string();
    const util::JsonField map = doc["physical_to_logical_map"];
    map.object();
    for (const auto& [key, value] : map.json().items()) {
        const std::optional<int> layer = layer_key(key);
        if (!layer)
            throw InputError(map.where() + ": key '" + util::printable(key) +
                             "' is not a layer id (a decimal number 0.." + std::to_string(kMaxLayerId) +
                             " without sign, spaces or leading zeros)");
        const util::JsonField row = map[key];
        const std::size_t n = row.list("a list of logical expert ids");
        const auto hi = static_cast<std::int64_t>(n) - 1;
        std::vector<int>& ids = p2l[*layer];
        ids.resize(n);
        for (std::size_t v = 0; v < n; ++v) {
            // The path is built only for an error.
            auto e = util::json_integer_of(value[v], 0, hi, util::IntegralFloats::Refuse);
            if (!e) e = row[v].integer(0, hi); // throws, naming the field
            ids[v] = static_cast<int>(*e);
        }
    }
}

} // namespace

std::uint32_t synth_expert_bits(Dtype dtype, int layer, int expert) {
    const FloatFormat f = float_format(dtype);
    if (expert < 0 || expert >= (1 << f.mant_bits))
        throw InputError("synth-checkpoint: expert " + std::to_string(expert) + " cannot be encoded in " +
                         std::string(dtype_name(dtype)) + " (at most " + std::to_string(1 << f.mant_bits) +
                         " experts; use F32)");
    const int field = layer + f.bias();
    if (layer < 0 || field >= (1 << f.exp_bits) - 1)
        throw InputError("synth-checkpoint: layer " + std::to_string(layer) + " cannot be encoded in " +
                         std::string(dtype_name(dtype)) + " (use BF16 or F32)");
    return (static_cast<std::uint32_t>(field) << f.mant_bits) | static_cast<std::uint32_t>(expert);
}

std::optional<std::pair<int, int>> decode_synth_expert_element(Dtype dtype, const std::byte* p) {
    const FloatFormat f = float_format(dtype);
    std::uint32_t bits = 0;
    for (int i = 0; i < f.bytes; ++i)
        bits |= static_cast<std::uint32_t>(std::to_integer<unsigned>(p[i])) << (8 * i);
    if (bits >> (f.exp_bits + f.mant_bits)) return std::nullopt; // sign
    const int field = static_cast<int>(bits >> f.mant_bits);
    if (field == 0 || field == (1 << f.exp_bits) - 1) return std::nullopt;
    const int layer = field - f.bias();
    if (layer < 0) return std::nullopt;
    return std::pair<int, int>{layer, static_cast<int>(bits & ((1u << f.mant_bits) - 1))};
}

std::string synth_checkpoint_config_json(const SynthCheckpointConfig& c) {
    const auto& m = c.model;
    // first_k_dense_replace = first MoE layer; MoE layers after it that are dense go to mlp_only_layers.
    const int first_k = m.moe_layers.front();
    const std::set<int> moe(m.moe_layers.begin(), m.moe_layers.end());
    std::vector<int> mlp_only;
    for (int l = first_k; l < m.num_hidden_layers; ++l)
        if (!moe.count(l)) mlp_only.push_back(l);
    const auto d = parse_dtype(c.dtype);
    const std::string torch_dtype = !d ? "" : *d == Dtype::BF16 ? "bfloat16" : *d == Dtype::F16 ? "float16" : "float32";
    nlohmann::ordered_json j;
    j["architectures"] = {"DeepseekV2ForCausalLM"};
    j["model_type"] = "deepseek_v2";
    j["num_hidden_layers"] = m.num_hidden_layers;
    j["n_routed_experts"] = m.experts;
    j["num_experts_per_tok"] = m.top_k;
    j["first_k_dense_replace"] = first_k;
    j["moe_layer_freq"] = 1;
    if (!mlp_only.empty()) j["mlp_only_layers"] = mlp_only;
    j["n_shared_experts"] = 1;
    j["hidden_size"] = c.hidden;
    j["moe_intermediate_size"] = c.moe_intermediate;
    j["intermediate_size"] = c.intermediate;
    j["vocab_size"] = c.vocab;
    j["num_attention_heads"] = kHeads;
    j["num_key_value_heads"] = kHeads;
    j["q_lora_rank"] = nullptr;
    j["kv_lora_rank"] = kKvLoraRank;
    j["qk_nope_head_dim"] = kQkNope;
    j["qk_rope_head_dim"] = kQkRope;
    j["v_head_dim"] = kVHead;
    j["topk_method"] = "greedy";
    j["n_group"] = 1;
    j["topk_group"] = 1;
    j["norm_topk_prob"] = false;
    j["routed_scaling_factor"] = 1.0;
    j["scoring_func"] = "softmax";
    j["hidden_act"] = "silu";
    j["rms_norm_eps"] = 1e-6;
    j["tie_word_embeddings"] = false;
    j["torch_dtype"] = torch_dtype;
    j["routepack_synthetic"] = "expert tensors of layer l, expert e hold (1 + e/2^m) * 2^l (m = mantissa bits)";
    return j.dump(2) + "\n";
}

std::vector<fs::path> write_synth_checkpoint(const SynthCheckpointConfig& cfg, const fs::path& out_dir) {
    check_config(cfg);
    const Dtype dtype = *parse_dtype(cfg.dtype);
    const FloatFormat f = float_format(dtype);

    std::error_code ec;
    if (fs::exists(out_dir, ec)) {
        if (!fs::is_directory(out_dir, ec))
            throw InputError(out_dir.string() + ": exists and is not a folder; refusing to overwrite");
        if (!fs::is_empty(out_dir, ec))
            throw InputError(out_dir.string() + ": folder is not empty; refusing to overwrite");
    }
    const fs::path target = out_dir.has_filename() ? out_dir : out_dir.parent_path();
    fs::path parent = target.parent_path();
    if (parent.empty()) parent = ".";
    if (!fs::is_directory(parent, ec)) throw InputError(parent.string() + ": no such folder");
    const fs::path tmp = parent / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()));
    fs::remove_all(tmp, ec);
    if (!fs::create_directory(tmp, ec) || ec)
        throw InputError(tmp.string() + ": cannot create folder: " + ec.message());

    try {
        const std::vector<Spec> specs = tensor_specs(cfg);
        // Assign to shards in name order.
        std::vector<std::vector<std::size_t>> shards;
        std::uint64_t cur = 0, total = 0;
        const auto cap = static_cast<std::uint64_t>(cfg.max_shard_bytes);
        for (std::size_t i = 0; i < specs.size(); ++i) {
            const std::uint64_t nb = numel(specs[i]) * static_cast<std::uint64_t>(f.bytes);
            if (shards.empty() || (cur > 0 && cur + nb > cap)) {
                shards.emplace_back();
                cur = 0;
            }
            shards.back().push_back(i);
            cur += nb;
            total += nb;
        }
        nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
        std::vector<std::string> names;
        const SafetensorsMetadata meta{{"format", "pt"}};
        for (std::size_t k = 0; k < shards.size(); ++k) {
            const std::string name = shard_name(k + 1, shards.size());
            names.push_back(name);
            std::vector<std::vector<std::byte>> buffers;
            buffers.reserve(shards[k].size());
            std::vector<TensorData> tensors;
            for (std::size_t i : shards[k]) {
                buffers.push_back(tensor_bytes(specs[i], dtype, f));
                tensors.push_back({specs[i].name, dtype, specs[i].shape, std::span<const std::byte>(buffers.back())});
                weight_map[specs[i].name] = name;
            }
            write_safetensors(tmp / name, tensors, meta);
        }
        nlohmann::ordered_json index;
        index["metadata"] = {{"total_size", total}};
        index["weight_map"] = weight_map;
        write_text(tmp / "model.safetensors.index.json", index.dump(2) + "\n");
        write_text(tmp / "config.json", synth_checkpoint_config_json(cfg));

        if (fs::exists(target, ec)) fs::remove(target); // checked empty above
        fs::rename(tmp, target);

        std::vector<fs::path> out;
        out.reserve(names.size() + 2);
        for (const auto& n : names)
            out.push_back(target / n);
        out.push_back(target / "model.safetensors.index.json");
        out.push_back(target / "config.json");
        return out;
    } catch (...) {
        fs::remove_all(tmp, ec);
        throw;
    }
}

SynthSlotCheck check_synth_checkpoint(const fs::path& dir) {
    SynthSlotCheck out;
    out.order = "logical";
    std::map<int, std::vector<int>> p2l;
    const fs::path sc = dir / "routepack-rewrite.json";
    std::error_code ec;
    if (fs::is_regular_file(sc, ec)) read_sidecar_map(sc, out, p2l);
    std::vector<fs::path> shards;
    for (const auto& de : fs::directory_iterator(dir))
        if (de.path().extension() == ".safetensors") shards.push_back(de.path());
    std::sort(shards.begin(), shards.end());
    const std::string prefix = "model.layers.", mid = ".mlp.experts.";
    for (const fs::path& p : shards) {
        const SafetensorsFile f = SafetensorsFile::open(p);
        for (const TensorInfo& t : f.tensors()) {
            const std::size_t m = t.name.find(mid);
            if (t.name.compare(0, prefix.size(), prefix) != 0 || m == std::string::npos) continue;
            const int layer = std::atoi(t.name.c_str() + prefix.size());
            const int slot = std::atoi(t.name.c_str() + m + mid.size());
            int want = slot;
            if (out.order == "physical") {
                auto it = p2l.find(layer);
                if (it == p2l.end() || slot >= static_cast<int>(it->second.size()))
                    throw InputError(sc.string() + ": no physical_to_logical_map row for layer " +
                                     std::to_string(layer));
                want = it->second[static_cast<std::size_t>(slot)];
            }
            const auto d = f.data(t);
            const std::size_t esz = dtype_bits(t.dtype) / 8;
            for (std::size_t k = 0; esz > 0 && k + esz <= d.size(); k += esz) {
                const auto le = decode_synth_expert_element(t.dtype, d.data() + k);
                if (!le || le->first != layer || le->second != want)
                    throw InputError(
                        p.string() + ": " + t.name + " element " + std::to_string(k / esz) + " holds " +
                        (le ? "layer " + std::to_string(le->first) + " expert " + std::to_string(le->second)
                            : std::string("no expert code")) +
                        ", expected layer " + std::to_string(layer) + " expert " + std::to_string(want));
            }
            ++out.tensors;
        }
    }
    if (out.tensors == 0)
        throw InputError(dir.string() + ": no routed-expert tensors (model.layers.{l}.mlp.experts.{e}.*)");
    return out;
}

} // namespace routepack::gpu
