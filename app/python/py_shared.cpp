// The helpers several binding files of routepack._core call (declared in app/python/py_bindings.h):
// the model of arrays made in Python, [L, E] matrices of per-layer values, the read-only views of a
// Placement's and a Plan's arrays, and the counts of the reprs.
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "core/model/model.h"
#include "core/plan/score/placement.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace routepack::pyconv {

/// Absolute MoE layer ids: ascending, unique, >= 0.
std::vector<int> check_moe_layers(const std::vector<int>& moe_layers) {
    if (moe_layers.empty()) value_error("moe_layers must name at least one MoE layer");
    for (std::size_t i = 0; i < moe_layers.size(); ++i) {
        if (moe_layers[i] < 0)
            value_error("moe_layers[" + std::to_string(i) + "] = " + std::to_string(moe_layers[i]) + " is negative");
        if (i > 0 && moe_layers[i] <= moe_layers[i - 1])
            value_error("moe_layers[" + std::to_string(i) + "] = " + std::to_string(moe_layers[i]) +
                        " is not above moe_layers[" + std::to_string(i - 1) +
                        "] = " + std::to_string(moe_layers[i - 1]) + " (absolute decoder-layer ids, ascending)");
    }
    return moe_layers;
}

ModelDescription make_model(const std::vector<int>& moe_layers, int experts, std::optional<int> top_k,
                            std::optional<int> num_hidden_layers, const std::string& name) {
    ModelDescription m;
    m.name = name;
    m.moe_layers = check_moe_layers(moe_layers);
    m.experts = experts;
    m.top_k = top_k.value_or(1);
    m.num_hidden_layers = num_hidden_layers ? *num_hidden_layers : hidden_layers_for(m.moe_layers, "moe_layers");
    m.source = "python";
    m.validate();
    return m;
}

py::array_t<std::int64_t> layer_matrix(const std::vector<int>& v, int L, int E) {
    py::array_t<std::int64_t> out({static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(E)});
    auto* p = out.mutable_data();
    for (std::size_t i = 0; i < v.size(); ++i)
        p[i] = v[i];
    return out;
}

/// uint64 [L, E] from row-major totals (v.size() == L * E).
py::array_t<std::uint64_t> layer_totals_array(const std::vector<std::uint64_t>& v, int L, int E) {
    py::array_t<std::uint64_t> out({static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(E)});
    std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
}

const PlacementMaps& placement_maps(const Placement& pi, PlacementMaps& maps) {
    if (!maps.made) {
        maps.logical_to_physical.assign(pi.slot.begin(), pi.slot.end());
        const std::vector<int> p2l = physical_to_logical(pi);
        maps.physical_to_logical.assign(p2l.begin(), p2l.end());
        maps.made = true;
    }
    return maps;
}

py::array readonly_view(const std::vector<std::int64_t>& values, const std::vector<py::ssize_t>& shape,
                        const py::handle& owner) {
    py::array_t<std::int64_t> a(shape, values.data(), owner);
    return readonly(std::move(a));
}

py::array readonly(py::array a) {
    py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return a;
}

std::string grouped(std::int64_t n) {
    std::string digits = std::to_string(n);
    const std::ptrdiff_t first = n < 0 ? 1 : 0; // grouped after the sign
    for (std::ptrdiff_t at = static_cast<std::ptrdiff_t>(digits.size()) - 3; at > first; at -= 3)
        digits.insert(static_cast<std::size_t>(at), ",");
    return digits;
}

std::string counted(std::int64_t n, const std::string& word) {
    return grouped(n) + " " + word + (n == 1 ? "" : "s");
}

} // namespace routepack::pyconv
