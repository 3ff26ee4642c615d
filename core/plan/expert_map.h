#pragma once
// Expert-map export (reference/checkpoint-formats.md section 4): a plan's placement in the shapes
// serving and training stacks load.
#include "core/model/model.h"
#include "core/plan/placement.h"

#include <string>

namespace routepack {

/// Output shapes of `routepack export-map`.
enum class ExpertMapFormat {
    RoutePack, ///< our JSON: placement (logical -> slot) and physical_to_logical_map, rows = MoE layers
    SGLang,    ///< {"physical_to_logical_map": [num_hidden_layers][E]}: rows = ABSOLUTE decoder layers;
               ///< dense layers get the trivial row arange(E) (SGLang keeps rows for them)
    VLLM,      ///< {"physical_to_logical_map": [num_moe_layers][E]}: rows = MoE layers only (as EPLB)
};
/// "routepack" | "sglang" | "vllm"; InputError listing the valid names otherwise.
ExpertMapFormat parse_expert_map_format(const std::string& name);

/// physical_to_logical_map[l][pi_l(e)] = e for each MoE layer, in the requested layout, as JSON text.
/// `model` gives num_hidden_layers and the absolute moe_layers (placement layer l = moe_layers[l]).
/// std::invalid_argument when a placement row is not a permutation of 0..E-1.
std::string expert_map_json(const Placement& pi, const ModelDescription& model, ExpertMapFormat format);

} // namespace routepack
