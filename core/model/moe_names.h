#pragma once
// The one table of the names under which MoE models keep their expert-indexed tensors. The
// checkpoint rewriter's classification (gpu/safetensors/checkpoint_scheme.h, checkpoint_info.h)
// and the live-model layouts of the Python module (routepack.torch.layouts, through
// routepack._core._moe_layouts()) both read it; nothing else spells these names.
//
// A tensor of decoder layer l is `[<prefix>.]layers.{l}.<block>.<rest>`; <block> is the MoE block
// (`mlp`, Mixtral's `block_sparse_moe`), <rest> names an expert tensor (a layout's `experts`
// prefix), a router tensor (`<router>.<tensor>`), a shared expert (`shared_expert*`) or anything else.
// Sources: huggingface/transformers 00b676f8 src/transformers/models/deepseek_v3/modeling_deepseek_v3.py
// (DeepseekV3MoE: experts.{e}, gate.weight, gate.e_score_correction_bias), af3efdd7
// src/transformers/models/mixtral/modeling_mixtral.py (block_sparse_moe.experts.{e}.w1/w2/w3,
// block_sparse_moe.gate), 00d4b3d2 src/transformers/models/gpt_oss/modeling_gpt_oss.py (stacked
// experts.gate_up_proj / down_proj, router.weight / router.bias); NVIDIA/Megatron-LM 00358e5e
// megatron/core/transformer/moe/experts.py (SequentialMLP.local_experts.{e}.linear_fc1/linear_fc2,
// GroupedMLP.weight1 / weight2), 005742ff megatron/core/transformer/moe/router.py (router.weight,
// router.expert_bias), and Megatron's distributed checkpoints (`experts.experts.*`, optimizer-state
// prefixes `optimizer.state.{fp32_param,exp_avg,exp_avg_sq}.`).
#include <string>
#include <string_view>
#include <vector>

namespace routepack {

/// How a layout stores its experts.
enum class ExpertStorage {
    PerExpert,  ///< `<experts>{e}.<name>`: one tensor (module) per expert, e the (local) expert index
    Stacked,    ///< `<experts><name>` of shape [E, ...]: expert e is `tensor[e]` (axis 0)
    FlatChunks, ///< `<experts><name>`, name one of the row's `tensors`: expert e is the e-th of E equal
                ///< contiguous chunks of the flat storage (Megatron GroupedMLP `weight1.view(E, H, -1)`)
};

/// One layout: where a MoE block keeps its experts and its router.
struct MoeLayout {
    std::string name;                ///< "megatron-sequential", "hf-per-expert", ...
    std::vector<std::string> blocks; ///< MoE block names after `layers.{l}.` ("mlp", "block_sparse_moe")
    std::string experts;             ///< the experts' prefix inside the block ("experts.", "experts.local_experts.")
    ExpertStorage storage = ExpertStorage::PerExpert;
    std::vector<std::string> tensors; ///< FlatChunks: the only tensor names; otherwise empty (any name)
    std::vector<std::string> routers; ///< router module names inside the block, tried in this order
    /// true: the routing stays in logical expert order and an index map is installed on the router's
    /// output (Megatron's dispatcher turns columns into slots; group-limited routers and replayed
    /// routes hold logical ids); false: the router rows move with the experts unless the router is
    /// group-limited (moe_grouped_router_marks()).
    bool routing_logical = false;
    /// true: a live PyTorch model's parameter names (routepack.torch); false: a checkpoint-only form.
    bool live = true;
};

/// The layouts, in the order names are tried (a more specific prefix before a shorter one:
/// `experts.local_experts.{e}` and `experts.experts.*` before `experts.{e}`, `experts.weight1`
/// before a stacked `experts.<name>`).
const std::vector<MoeLayout>& moe_layouts();

/// Router tensor names (`<router>.<tensor>`) indexed by logical expert on axis 0: "weight" ([E, H],
/// the router proper) first, then the biases ([E]: "bias", "e_score_correction_bias", "expert_bias").
const std::vector<std::string>& moe_router_tensors();

/// Attributes that mark a group-limited router (DeepSeek-V2/V3 `n_group`, `topk_group`, V3's
/// `e_score_correction_bias`): moving its rows across groups would change the model.
const std::vector<std::string>& moe_grouped_router_marks();

/// Prefixes of shared experts inside a MoE block (`shared_experts.`, `shared_expert.`,
/// `shared_expert_gate.` all start with "shared_expert"): never expert-indexed.
const std::vector<std::string>& moe_shared_expert_prefixes();

/// Megatron distributed-checkpoint prefixes of optimizer state held under a parameter's name.
const std::vector<std::string>& moe_optimizer_state_prefixes();

/// What a tensor name inside a MoE block (`<rest>` after `layers.{l}.<block>.`) is, by the table.
struct MoeTensorName {
    enum class Kind { Other, Expert, RouterWeight, RouterBias, SharedExpert };
    Kind kind = Kind::Other;
    const MoeLayout* layout = nullptr; ///< Expert: the first layout whose prefix and storage match
    long long expert = -1;             ///< PerExpert: the index (-2: more than 9 digits); otherwise -1
    std::string tensor;                ///< Expert: the tensor inside the expert (per-expert) or the block
    std::string router;                ///< RouterWeight / RouterBias: the router module ("gate", "router")
};

/// Matches `rest` (the name after `layers.{l}.<block>.`) against the layouts of `block`, in table
/// order. A per-expert layout matches only with a decimal index followed by '.', a flat-chunk layout
/// only with one of its tensor names, a stacked layout any other name under its prefix. Never throws.
MoeTensorName match_moe_tensor(std::string_view block, std::string_view rest);

/// The decoder layer and MoE block of a tensor name: finds the first `layers.{l}.` at the start or
/// after a '.' and sets `layer` (-2 for an index of more than 9 digits); when one of the table's block
/// names and '.' follow, `block` is that name and `rest` what follows it, else `block` is empty and
/// `rest` is what follows `layers.{l}.`. False (nothing set) when the name has no `layers.{l}.`.
bool find_moe_block(std::string_view name, int& layer, std::string_view& block, std::string_view& rest);

} // namespace routepack
