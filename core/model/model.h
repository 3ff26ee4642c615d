#pragma once
// Model description: which decoder layers are MoE layers, how many logical experts, top-k.
#include "core/util/errors.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace routepack {

/// Most decoder layers a model description may have (num_hidden_layers 1..kMaxHiddenLayers); every
/// MoE layer id is therefore in 0..kMaxHiddenLayers - 1.
inline constexpr int kMaxHiddenLayers = 100000;
/// Size bounds of a model description's expert count (E in 1..kMaxExperts) and top-k (k in
/// 1..kMaxTopK, and at most E): every allocation sized by a model (per-sample counts [L][E], layer
/// axes, placement tables) is checked against them before it happens.
inline constexpr int kMaxExperts = 1 << 20;
inline constexpr int kMaxTopK = 1024;

/// What a trace needs to know about the model that produced it.
/// `moe_layers` are absolute decoder-layer indices (0-based, ascending, each < num_hidden_layers);
/// `experts` is the number of routed logical experts E per MoE layer; `top_k` the router's k.
struct ModelDescription {
    std::string name;            ///< short name, e.g. "deepseek-v2-lite"; may be empty
    int num_hidden_layers = 0;   ///< all decoder layers, dense ones included
    int experts = 0;             ///< E, routed experts per MoE layer
    int top_k = 0;               ///< k, experts per token per MoE layer
    std::vector<int> moe_layers; ///< absolute ids of the MoE layers, ascending
    std::string source;          ///< where the description came from (resource, config.json path, flags)
    /// Parameters of one routed expert (the product of the description's optional expert_shape, e.g.
    /// [3, 2048, 1408]: gate, up and down projections of hidden x intermediate); 0 when not given.
    std::int64_t expert_params = 0;

    int num_moe_layers() const { return static_cast<int>(moe_layers.size()); }
    /// Index of absolute layer `layer` within moe_layers, or -1 when it is dense / out of range.
    int moe_index(int layer) const;
    /// Throws InputError naming the offending field unless E >= 1, k in 1..E, layers ascending,
    /// unique and < num_hidden_layers, and at least one MoE layer.
    void validate() const;
    bool operator==(const ModelDescription&) const = default;
};

/// The smallest num_hidden_layers that holds `moe_layers` (absolute ids, ascending): the last id + 1,
/// computed without overflow. InputError "<what>: MoE layer <id> is outside 0..99999 (num_hidden_layers
/// is at most 100000)" when the last id is beyond kMaxHiddenLayers - 1 (2^31 - 1 included) or
/// negative; "<what>: no MoE layers" when empty.
int hidden_layers_for(const std::vector<int>& moe_layers, const std::string& what);

/// The setting of a model's MoE layer list (core/util/errors.h): key "moe_layers", words "MoE layers".
inline Setting moe_layers_setting() {
    return Setting{"moe_layers", "", "MoE layers"};
}

/// Parses a layer list such as "1-26", "1-47:2" (start-end:step), "0,3,5-7". Throws InputError
/// "<field>: ..." about the setting `field` (its words in what(); a Setting with an empty key for a
/// field that is no setting, such as a model file's "moe_layers") on malformed text, descending or
/// duplicate ids.
std::vector<int> parse_layer_list(const std::string& text, const Setting& field = moe_layers_setting());

/// Formats ascending layer ids compactly ("1-26", "1-47:2", "0,3,5-7"); inverse of parse_layer_list.
std::string format_layer_list(const std::vector<int>& layers);

/// Parses our model-description JSON (resources/models/*.json): name, num_hidden_layers, experts,
/// top_k, moe_layers (layer list string or array), source. `origin` names the file in errors.
ModelDescription parse_model_description(const std::string& json_text, const std::string& origin);

/// A shipped model by name ("deepseek-v2-lite", "llama4-maverick"); InputError listing the known
/// names otherwise.
ModelDescription known_model(const std::string& name);
std::vector<std::string> known_model_names();

/// Reads a Hugging Face `config.json` (text in `json_text`, file path in `origin` for errors):
/// experts from num_experts | num_local_experts | n_routed_experts, top-k from num_experts_per_tok
/// | moe_topk, MoE layers from first_k_dense_replace + moe_layer_freq (DeepSeek), decoder_sparse_step
/// + mlp_only_layers (Qwen2/3-MoE), interleave_moe_layer_step / moe_layers (Llama 4), else all layers.
ModelDescription model_from_hf_config(const std::string& json_text, const std::string& origin);

} // namespace routepack
