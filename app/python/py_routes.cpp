// _counts_from_routes of routepack._core (routepack.counts_from_routes): routing counts a[i][l][e]
// from per-token routes (a padded [B, S, L, K] batch with its mask, or one [T, L, K] array per
// sample), counted with the GIL released.
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "core/model/route_counts.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace routepack::pyconv {

namespace {

struct RouteBlock {
    py::array routes; ///< C-contiguous [T][L_rows][K]
    const std::uint8_t* valid = nullptr;
    std::int64_t tokens = 0;
    std::size_t offset = 0; ///< element offset of the block in `routes`
};

template <class T>
RouteCountError count_block(const py::array& a, std::size_t offset, std::int64_t tokens, int layer_rows, int k,
                            const std::uint8_t* valid, const std::vector<int>& index, int E, std::int32_t* out) {
    const T* p = static_cast<const T*>(a.data()) + offset;
    return add_route_counts<T>(p, tokens, layer_rows, k, valid, index, E, out);
}

RouteCountError count_any(const py::array& a, std::size_t offset, std::int64_t tokens, int layer_rows, int k,
                          const std::uint8_t* valid, const std::vector<int>& index, int E, std::int32_t* out) {
    const char kind = a.dtype().kind();
    const auto size = a.dtype().itemsize();
    if (kind == 'i' && size == 1)
        return count_block<std::int8_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
    if (kind == 'i' && size == 2)
        return count_block<std::int16_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
    if (kind == 'i' && size == 4)
        return count_block<std::int32_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
    if (kind == 'i' && size == 8)
        return count_block<std::int64_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
    return count_block<std::uint8_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
}

py::array routes_array(const py::handle& obj, const std::string& what) {
    py::array a = as_array(obj, what);
    const char kind = a.dtype().kind();
    const auto size = a.dtype().itemsize();
    if (!((kind == 'i' && (size == 1 || size == 2 || size == 4 || size == 8)) || (kind == 'u' && size == 1)))
        value_error(what + " must be int16, int32 or uint8 (int8 and int64 also accepted; got dtype " + dtype_name(a) +
                    ")");
    // The counting reads the buffer as native integers: a big-endian ('>i2') array is converted first.
    return native_c_array(a);
}

py::array_t<std::int32_t> counts_from_routes(const py::object& routes, const py::object& num_experts_obj,
                                             const py::object& moe_layers_obj, const py::object& layer_axis_obj,
                                             const py::object& valid) {
    const int num_experts = py_int(num_experts_obj, "num_experts");
    const std::vector<int> moe_layers = py_int_list(moe_layers_obj, "moe_layers");
    const std::string layer_axis = py_utf8(layer_axis_obj, "layer_axis");
    if (num_experts < 1) value_error("num_experts must be >= 1 (got " + std::to_string(num_experts) + ")");
    if (layer_axis != "all" && layer_axis != "moe")
        value_error("layer_axis must be 'all' or 'moe' (got '" + layer_axis + "')");
    check_moe_layers(moe_layers);
    const bool all = layer_axis == "all";
    std::vector<RouteBlock> blocks;
    std::vector<py::array> keep; // arrays the blocks point into
    int layer_rows = -1, k = -1;
    auto check_lk = [&](const py::array& a, int dim_l, const std::string& what) {
        const int L = static_cast<int>(a.shape(dim_l)), K = static_cast<int>(a.shape(dim_l + 1));
        if (layer_rows < 0) {
            layer_rows = L;
            k = K;
        } else if (L != layer_rows || K != k) {
            value_error(what + " has shape " + shape_text(a) + "; every sample needs the same [L, K] = [" +
                        std::to_string(layer_rows) + ", " + std::to_string(k) + "]");
        }
    };
    if (py::isinstance<py::list>(routes) || py::isinstance<py::tuple>(routes)) {
        if (!valid.is_none())
            value_error("valid applies to a [B, S, L, K] array; a list of [T, L, K] arrays has no mask");
        const py::sequence seq = routes.cast<py::sequence>();
        for (std::size_t i = 0; i < seq.size(); ++i) {
            const std::string what = "routes[" + std::to_string(i) + "]";
            py::array a = routes_array(seq[i], what);
            if (a.ndim() != 3) value_error(what + " must be 3-dimensional [T, L, K] (got shape " + shape_text(a) + ")");
            check_lk(a, 1, what);
            keep.push_back(a);
            blocks.push_back(RouteBlock{a, nullptr, a.shape(0), 0});
        }
    } else {
        py::array a = routes_array(routes, "routes");
        if (a.ndim() != 4)
            value_error("routes must be [B, S, L, K] or a list of [T, L, K] arrays (got shape " + shape_text(a) + ")");
        check_lk(a, 2, "routes");
        keep.push_back(a);
        const auto B = a.shape(0), S = a.shape(1);
        const std::uint8_t* mask = nullptr;
        if (!valid.is_none()) {
            py::array m = as_array(valid, "valid", true);
            if (m.ndim() != 2 || m.shape(0) != B || m.shape(1) != S)
                value_error("valid has shape " + shape_text(m) + "; expected [B, S] = (" + std::to_string(B) + ", " +
                            std::to_string(S) + ")");
            const char kind = m.dtype().kind();
            if (kind != 'b' && kind != 'i' && kind != 'u')
                value_error("valid must be a bool or integer mask (got dtype " + dtype_name(m) + ")");
            // Normalize to one byte per token: nonzero = the token's routes count.
            py::array_t<std::uint8_t> bytes({B, S});
            auto* dst = bytes.mutable_data();
            py::array mb = py::array::ensure(m.attr("astype")("bool"), py::array::c_style);
            const auto* src = static_cast<const bool*>(mb.data());
            for (py::ssize_t i = 0; i < B * S; ++i)
                dst[i] = src[i] ? 1 : 0;
            keep.push_back(bytes);
            mask = bytes.data();
        }
        for (py::ssize_t b = 0; b < B; ++b)
            blocks.push_back(RouteBlock{a, mask ? mask + b * S : nullptr, S,
                                        static_cast<std::size_t>(b) * static_cast<std::size_t>(S) * layer_rows * k});
    }
    const int Lm = static_cast<int>(moe_layers.size());
    const std::vector<int> index = blocks.empty() ? std::vector<int>{} : route_layer_rows(layer_rows, all, moe_layers);
    py::array_t<std::int32_t> out(
        {static_cast<py::ssize_t>(blocks.size()), static_cast<py::ssize_t>(Lm), static_cast<py::ssize_t>(num_experts)});
    std::int32_t* o = out.mutable_data();
    std::fill(o, o + out.size(), 0);
    const std::size_t stride = static_cast<std::size_t>(Lm) * num_experts;
    std::size_t bad_block = 0;
    RouteCountError bad;
    {
        py::gil_scoped_release release;
        for (std::size_t i = 0; i < blocks.size() && bad.ok; ++i) {
            bad = count_any(blocks[i].routes, blocks[i].offset, blocks[i].tokens, layer_rows, k, blocks[i].valid, index,
                            num_experts, o + i * stride);
            bad_block = i;
        }
    }
    if (!bad.ok) {
        const bool list = py::isinstance<py::list>(routes) || py::isinstance<py::tuple>(routes);
        const std::string where =
            list ? "routes[" + std::to_string(bad_block) + "][" + std::to_string(bad.token) + ", " +
                       std::to_string(bad.layer_row) + ", " + std::to_string(bad.choice) + "]"
                 : "routes[" + std::to_string(bad_block) + ", " + std::to_string(bad.token) + ", " +
                       std::to_string(bad.layer_row) + ", " + std::to_string(bad.choice) + "]";
        value_error(where + " = " + std::to_string(bad.value) + " is outside 0.." + std::to_string(num_experts - 1) +
                    " (-1 = no route)");
    }
    return out;
}

} // namespace

/// _counts_from_routes (routepack.counts_from_routes).
void bind_routes(py::module_& m) {
    m.def("_counts_from_routes", &counts_from_routes,
          "_counts_from_routes(routes, num_experts, *, moe_layers, layer_axis='all', valid=None)\n--\n\n"
          "routepack.counts_from_routes.",
          py::arg("routes"), py::arg("num_experts"), py::kw_only(), py::arg("moe_layers"),
          py::arg("layer_axis") = "all", py::arg("valid") = py::none());
}

} // namespace routepack::pyconv
