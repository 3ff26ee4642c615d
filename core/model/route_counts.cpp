// Routing counts from per-token routes (see core/model/route_counts.h).
#include "core/model/route_counts.h"

#include <stdexcept>
#include <string>

namespace routepack {

std::vector<int> route_layer_rows(int layer_rows, bool layer_axis_all, std::span<const int> moe_layers) {
    if (layer_rows < 0) throw std::invalid_argument("routes have a negative number of layer rows");
    std::vector<int> index(static_cast<std::size_t>(layer_rows), -1);
    if (layer_axis_all) {
        for (std::size_t l = 0; l < moe_layers.size(); ++l) {
            const int layer = moe_layers[l];
            if (layer < 0 || layer >= layer_rows)
                throw std::invalid_argument("routes have " + std::to_string(layer_rows) + " layer rows but MoE layer " +
                                            std::to_string(layer) + " needs layer_axis='all' rows 0.." +
                                            std::to_string(layer) +
                                            " (give layer_axis='moe' when the rows are the MoE layers only)");
            index[static_cast<std::size_t>(layer)] = static_cast<int>(l);
        }
    } else {
        if (static_cast<std::size_t>(layer_rows) != moe_layers.size())
            throw std::invalid_argument("routes have " + std::to_string(layer_rows) +
                                        " layer rows, expected len(moe_layers) = " + std::to_string(moe_layers.size()) +
                                        " with layer_axis='moe'");
        for (int j = 0; j < layer_rows; ++j)
            index[static_cast<std::size_t>(j)] = j;
    }
    return index;
}

template <class T>
RouteCountError add_route_counts(const T* routes, std::int64_t tokens, int layer_rows, int k, const std::uint8_t* valid,
                                 std::span<const int> moe_index, int E, std::int32_t* out) {
    const std::int64_t row = static_cast<std::int64_t>(layer_rows) * k;
    for (std::int64_t t = 0; t < tokens; ++t) {
        if (valid && !valid[t]) continue;
        const T* r = routes + t * row;
        for (int j = 0; j < layer_rows; ++j) {
            const int l = moe_index[static_cast<std::size_t>(j)];
            if (l < 0) continue;
            std::int32_t* dst = out + static_cast<std::int64_t>(l) * E;
            const T* c = r + static_cast<std::int64_t>(j) * k;
            for (int x = 0; x < k; ++x) {
                // int8 routes are numbers (-1 = no expert), not characters.
                const std::int64_t e = static_cast<std::int64_t>(c[x]); // NOLINT(bugprone-signed-char-misuse)
                if (static_cast<std::uint64_t>(e) < static_cast<std::uint64_t>(E)) {
                    ++dst[e];
                } else if (e != -1) {
                    return RouteCountError{false, t, j, x, e};
                }
            }
        }
    }
    return {};
}

template RouteCountError add_route_counts<std::int8_t>(const std::int8_t*, std::int64_t, int, int, const std::uint8_t*,
                                                       std::span<const int>, int, std::int32_t*);
template RouteCountError add_route_counts<std::int16_t>(const std::int16_t*, std::int64_t, int, int,
                                                        const std::uint8_t*, std::span<const int>, int, std::int32_t*);
template RouteCountError add_route_counts<std::int32_t>(const std::int32_t*, std::int64_t, int, int,
                                                        const std::uint8_t*, std::span<const int>, int, std::int32_t*);
template RouteCountError add_route_counts<std::int64_t>(const std::int64_t*, std::int64_t, int, int,
                                                        const std::uint8_t*, std::span<const int>, int, std::int32_t*);
template RouteCountError add_route_counts<std::uint8_t>(const std::uint8_t*, std::int64_t, int, int,
                                                        const std::uint8_t*, std::span<const int>, int, std::int32_t*);

} // namespace routepack
