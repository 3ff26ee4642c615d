#pragma once
// Routing counts a[i][l][e] from the per-token routes that training stacks hold in memory (routing
// replay: slime `rollout_routed_experts` [T][L][K], verl `routed_experts` [B][S][L][K]).
#include <cstdint>
#include <span>
#include <vector>

namespace routepack {

/// Where a route value was out of range (`ok` false): token row, layer row and top-k column of the
/// sample's [T][L_rows][K] block, and the value found.
struct RouteCountError {
    bool ok = true;
    std::int64_t token = 0;
    int layer_row = 0;
    int choice = 0;
    std::int64_t value = 0;
};

/// Maps the layer rows of a routes array to MoE layer indices: `layer_axis_all` true means the rows
/// are every decoder layer 0..layer_rows-1 (rows of dense layers are ignored), false means the rows
/// are the MoE layers in `moe_layers` order. Result [layer_rows] -> MoE index l or -1 (ignored).
/// `moe_layers` are absolute decoder-layer ids, ascending. std::invalid_argument when the rows do
/// not cover the MoE layers ("routes have 4 layer rows but MoE layer 5 needs layer_axis='all' rows
/// 0..5" / "... expected len(moe_layers) = 3").
std::vector<int> route_layer_rows(int layer_rows, bool layer_axis_all, std::span<const int> moe_layers);

/// Adds one sample's routes to its counts: for every token row t < tokens with valid[t] != 0
/// (valid == nullptr: every row), every layer row j with moe_index[j] >= 0 and every top-k column c,
/// value e = routes[(t*layer_rows + j)*k + c] adds 1 to out[moe_index[j]*E + e]; e == -1 never
/// counts (the stacks' padding marker). `routes` is C-contiguous [tokens][layer_rows][k]; `out` is
/// [L_moe][E] int32. Returns the first value outside -1..E-1 (then `out` is partly updated).
/// Instantiated for int8, int16, int32, int64 and uint8 routes. Cost O(tokens * layer_rows * k).
template <class T>
RouteCountError add_route_counts(const T* routes, std::int64_t tokens, int layer_rows, int k, const std::uint8_t* valid,
                                 std::span<const int> moe_index, int E, std::int32_t* out);

} // namespace routepack
