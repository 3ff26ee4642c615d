#pragma once
// Expert-indexing scheme of a Hugging Face / Megatron MoE checkpoint.
// Qt-free. Decides, from tensor names + shapes and the model description (config.json), which tensors are
// expert-indexed (one tensor per expert, stacked [E, ...] on axis 0, or E contiguous chunks of a flat
// tensor), by the one table of MoE names (core/model/moe_names.h), which are routers and router
// biases (rows in logical expert order; they never move in apply mode), and which are anything else.
// See shared/reference/checkpoint-formats.md §2-3 and shared/checkpoints/README.md.
#include "core/model/model.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace routepack::gpu {

enum class TensorRole {
    Other,            ///< not expert-indexed (attention, norms, dense MLP, shared experts, embeddings, ...)
    ExpertPerTensor,  ///< `layers.{l}.(mlp|block_sparse_moe).experts.{e}.*`: one tensor per expert
    ExpertStacked,    ///< `layers.{l}.mlp.experts.<name>` with first dimension E (expert axis 0)
    ExpertFlatChunks, ///< Megatron GroupedMLP `layers.{l}.mlp.experts.weight1/weight2`: expert e is the e-th
                      ///< of E equal contiguous chunks of the flat storage (any shape)
    Router,           ///< router weight [E, H] of an MoE layer (`mlp.gate.weight`, `block_sparse_moe.gate.weight`,
                      ///< `mlp.router.weight`)
    RouterBias, ///< router bias / correction [E] (`mlp.router.bias`, `mlp.gate.e_score_correction_bias`, `expert_bias`)
};

struct TensorClass {
    std::string name;
    TensorRole role = TensorRole::Other;
    int layer = -1;       ///< absolute decoder layer; -1 when the name has no `layers.{l}.`
    int expert = -1;      ///< per-expert tensors only: logical expert id
    int expert_axis = -1; ///< stacked tensors only: 0
};

struct SchemeReport {
    std::string scheme;          ///< the layout of the expert tensors (core/model/moe_names.h): "hf-per-expert",
                                 ///< "hf-stacked", "megatron-sequential", "megatron-grouped", "megatron-per-expert",
                                 ///< "megatron-stacked" (a stacked tensor under a Megatron name)
    std::vector<int> moe_layers; ///< layers holding expert tensors, ascending (== model.moe_layers)
    int experts = 0;             ///< E
    std::vector<TensorClass> tensors; ///< one per input tensor, in input order
};

/// Classifies every tensor by the table of core/model/moe_names.h. Names may carry a `model.` /
/// `decoder.` prefix and a Megatron `optimizer.state.{fp32_param,exp_avg,exp_avg_sq}.` prefix
/// (Megatron: `mlp.experts.experts.*` and `mlp.experts.local_experts.{e}.*` are expert tensors,
/// `mlp.experts.weight1` / `weight2` GroupedMLP flat chunks whose element count E must divide). `mlp.gate.weight` is a
/// router only in an MoE layer and with first dimension E (a dense layer's `mlp.gate_proj.weight` is Other); shared
/// experts (`shared_experts`, `shared_expert`) are Other. Throws routepack::InputError naming the tensor (or layer) on:
/// an expert index >= E, an expert tensor or router in a dense layer, a stacked tensor whose first dimension != E, an
/// MoE layer of the model without expert tensors, per-expert tensors of a layer that miss an expert
/// ("layer 1: expert 7 has no up_proj while others do"), per-expert and stacked (or flat-chunk)
/// tensors mixed, or a flat-chunk tensor whose element count E does not divide.
SchemeReport classify_checkpoint(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& names_and_shapes,
                                 const ModelDescription& model);

} // namespace routepack::gpu
