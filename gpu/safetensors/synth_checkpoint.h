#pragma once
// Synthetic sharded safetensors checkpoint shaped like DeepSeek-V2(-Lite), with Hugging Face tensor names,
// for tests and the end-to-end walk-through (`routepack synth-checkpoint`). Qt-free.
//
// Written files (in out_dir): config.json (HF DeepseekV2 keys), model-0000k-of-0000n.safetensors shards
// (every one with __metadata__ {"format": "pt"}) and model.safetensors.index.json
// ({"metadata": {"total_size": N}, "weight_map": {name: shard}}). Tensors are assigned to shards in name
// (byte) order; a new shard starts when adding the next tensor would take the current one past
// max_shard_bytes (a single larger tensor gets a shard of its own).
//
// Tensors per layer l (H = hidden, I = intermediate, M = moe_intermediate, E = experts, A = attention
// widths, small fixed sizes: 2 heads, qk_nope_head_dim 4, qk_rope_head_dim 2, v_head_dim 4, kv_lora_rank 8):
//   model.layers.{l}.input_layernorm.weight [H], post_attention_layernorm.weight [H],
//   self_attn.q_proj.weight [12, H], self_attn.kv_a_proj_with_mqa.weight [10, H],
//   self_attn.kv_a_layernorm.weight [8], self_attn.kv_b_proj.weight [16, 8], self_attn.o_proj.weight [H, 8];
//   dense layer:  mlp.{gate,up}_proj.weight [I, H], mlp.down_proj.weight [H, I];
//   MoE layer:    mlp.gate.weight [E, H] (router), mlp.experts.{e}.{gate,up}_proj.weight [M, H],
//                 mlp.experts.{e}.down_proj.weight [H, M], mlp.shared_experts.{gate,up}_proj.weight [M, H],
//                 mlp.shared_experts.down_proj.weight [H, M] (n_shared_experts = 1);
// plus model.embed_tokens.weight [V, H], model.norm.weight [H], lm_head.weight [V, H].
//
// EXPERT ENCODING. Every element of every routed-expert tensor of layer l, expert e (all three
// projections alike) holds the value  (1 + e / 2^m) * 2^l,  m = explicit mantissa bits of the dtype
// (BF16: 7, F16: 10, F32: 23). In bits: sign 0, unbiased exponent l, mantissa field e. So the value is
// exact, and (l, e) comes back from any single element: l = floor(log2 v), e = (v / 2^l - 1) * 2^m; see
// decode_synth_expert_element(). Requires e < 2^m (BF16: up to 128 experts) and l within the dtype's
// normal exponent range (BF16/F32: l <= 127, F16: l <= 15); otherwise write_synth_checkpoint throws.
// Non-expert tensors hold deterministic small values k/64, k in -8..8 (norms: 1.0); the encoding is only
// meaningful for routed-expert tensors (identified by name).
#include "core/model/model.h"
#include "gpu/safetensors/safetensors.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace routepack::gpu {

/// Largest hidden, moe_intermediate, intermediate and vocab size of a synthetic checkpoint (each in
/// 1..kMaxSynthDimension).
inline constexpr int kMaxSynthDimension = 1 << 16;

struct SynthCheckpointConfig {
    ModelDescription model = known_model("deepseek-v2-lite");
    int hidden = 16;
    int moe_intermediate = 8;
    int intermediate = 32;
    int vocab = 64;
    std::int64_t max_shard_bytes = 1 << 20;
    std::string dtype = "BF16"; ///< BF16, F16 or F32
};

/// Writes the checkpoint into a temporary folder beside out_dir, then renames it to out_dir. Refuses
/// (InputError) when out_dir exists and is not an empty folder, or on an invalid configuration.
/// Returns the written files at their final place: the shards in order, then
/// model.safetensors.index.json, then config.json.
std::vector<std::filesystem::path> write_synth_checkpoint(const SynthCheckpointConfig& cfg,
                                                          const std::filesystem::path& out_dir);

/// The config.json text write_synth_checkpoint writes for cfg.
std::string synth_checkpoint_config_json(const SynthCheckpointConfig& cfg);

/// The element value encoding expert e of layer l in dtype `dtype` (raw little-endian bits, 2 or 4 bytes
/// used). Throws InputError when (l, e) is not representable.
std::uint32_t synth_expert_bits(Dtype dtype, int layer, int expert);

/// Decodes one element (at `p`, dtype-sized, little-endian) of an expert tensor to (layer, expert);
/// nullopt when the bits are not of the expert form (sign set, subnormal/zero, inf/NaN, negative layer).
std::optional<std::pair<int, int>> decode_synth_expert_element(Dtype dtype, const std::byte* p);

/// Result of check_synth_checkpoint().
struct SynthSlotCheck {
    int tensors = 0;       ///< routed-expert tensors checked (every element of each)
    std::string order;     ///< "logical" (no sidecar, or an inverse output) or "physical"
    std::string placement; ///< the sidecar's placement fingerprint ("" in logical order without sidecar)
};

/// Checks that every routed-expert tensor `model.layers.{l}.mlp.experts.{v}.*` of a synthetic checkpoint
/// folder (written by write_synth_checkpoint, possibly rewritten) holds expert (l, e) in every element,
/// where e = v in logical order, or e = physical_to_logical_map[l][v] of the folder's routepack-rewrite.json
/// when that says physical order. InputError naming the tensor, the element index and both experts at
/// the first mismatch; InputError when the folder has no expert tensors.
SynthSlotCheck check_synth_checkpoint(const std::filesystem::path& dir);

} // namespace routepack::gpu
