#pragma once
// Which model a checkpoint is, read from its tensors (and config.json beside it when present), so
// that a front end can say why a plan does not fit it. Qt-free.
#include <filesystem>
#include <string>
#include <vector>

namespace routepack::gpu {

/// The model a checkpoint holds.
struct CheckpointModel {
    std::string name;            ///< config.json's model_type ("" without config.json)
    int num_hidden_layers = 0;   ///< config.json's, else the highest `layers.{l}.` of a tensor + 1
    std::vector<int> moe_layers; ///< decoder layers holding routed-expert tensors, ascending
    int experts = 0;             ///< E: routed experts per MoE layer
    int top_k = 0;               ///< config.json's experts per token (0 without config.json)
    std::string scheme;          ///< classify_checkpoint's scheme ("" without config.json)
    bool from_config = false;    ///< config.json was read (else the tensor names alone)
};

/// Reads a checkpoint folder (the shards its model.safetensors.index.json names, else every
/// .safetensors file in it) or one .safetensors file: the tensor names and shapes from the headers
/// (no tensor data), and config.json beside it when present (model_from_hf_config, then
/// classify_checkpoint for the MoE layers and experts the tensors hold). Without config.json, the
/// names alone, by the table of core/model/moe_names.h: per-expert tensors (`layers.{l}.mlp.experts.{e}.`,
/// ...) give the MoE layers and E = the largest e + 1; stacked ones (`layers.{l}.mlp.experts.<name>`)
/// give E from their first dimension. InputError for an unreadable input, a malformed shard or config, or "<input>: no
/// routed-expert tensors (not a MoE checkpoint)".
CheckpointModel describe_checkpoint(const std::filesystem::path& input);

/// "qwen3_moe: 16 experts (top-4) in MoE layers 1-2 of 3 decoder layers" (the parts known).
std::string checkpoint_model_text(const CheckpointModel& m);

} // namespace routepack::gpu
