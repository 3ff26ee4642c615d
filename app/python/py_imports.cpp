// _expert_loads of routepack._core: per-layer expert loads read straight from trace files with the
// importers, as `routepack place --input` reads them.
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "core/import/import.h"
#include "core/model/limits.h"
#include "core/model/model.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace routepack::pyconv {

namespace {

/// ImportOptions of expert_loads(): the shipped model `model_name` (or none) with the given facts
/// over it, the format, and the router trace's layer base ("auto", "0", "1"; ints 0 and 1 too).
ImportOptions import_options(const py::object& format, const py::object& model_name, const py::object& experts,
                             const py::object& top_k, const py::object& num_hidden_layers, const py::object& moe_layers,
                             const py::object& layer_base) {
    ImportOptions opt;
    opt.format = parse_trace_format(py_utf8(format, "format"));
    const std::string base = py::isinstance<py::str>(layer_base)
                                 ? py_utf8(layer_base, "router_layer_base")
                                 : std::to_string(py_int_in(layer_base, "router_layer_base", 0, 1));
    opt.router_layer_base = parse_layer_base(base);
    ModelDescription& m = opt.model;
    if (!model_name.is_none()) m = known_model(py_utf8(model_name, "model"));
    bool given = false;
    if (!experts.is_none()) m.experts = py_int(experts, "num_experts", 1, 1 << 20), given = true;
    if (!top_k.is_none()) m.top_k = py_int(top_k, "top_k", 1, 1 << 20), given = true;
    if (!num_hidden_layers.is_none())
        m.num_hidden_layers = py_int(num_hidden_layers, "num_hidden_layers", 1, kMaxLayerId + 1), given = true;
    if (!moe_layers.is_none()) m.moe_layers = check_moe_layers(py_int_list(moe_layers, "moe_layers")), given = true;
    if (given && model_name.is_none()) m.source = "python";
    return opt;
}

} // namespace

/// expert_loads(): per-layer expert loads read straight from trace files (`routepack place --input`).
void bind_imports(py::module_& m) {
    m.def(
        "_expert_loads",
        [](const py::object& inputs, const py::object& format, const py::object& model_name, const py::object& experts,
           const py::object& top_k, const py::object& num_hidden_layers, const py::object& moe_layers,
           const py::object& layer_base) {
            const ImportOptions opt =
                import_options(format, model_name, experts, top_k, num_hidden_layers, moe_layers, layer_base);
            std::vector<std::filesystem::path> paths;
            if (py::isinstance<py::str>(inputs) || py::isinstance<py::bytes>(inputs) ||
                py::hasattr(inputs, "__fspath__"))
                paths.emplace_back(py_path(inputs, "inputs"));
            else
                for (const auto& item : py_items(inputs, "inputs", "paths"))
                    paths.emplace_back(py_path(item, "inputs"));
            ModelDescription model;
            ImportSummary summary;
            std::vector<std::uint64_t> loads;
            {
                py::gil_scoped_release release;
                loads = import_expert_loads(paths, opt, &model, &summary);
            }
            py::dict d;
            d["loads"] = layer_totals_array(loads, model.num_moe_layers(), model.experts);
            d["moe_layers"] = model.moe_layers;
            d["num_hidden_layers"] = model.num_hidden_layers;
            d["num_experts"] = model.experts;
            d["top_k"] = model.top_k;
            d["format"] = to_string(summary.format);
            d["files"] = summary.files;
            py::list notes;
            for (const auto& n : summary.notes)
                notes.append(py_text(n));
            d["notes"] = notes;
            return d;
        },
        "_expert_loads(inputs, *, format='auto', model=None, num_experts=None, top_k=None, num_hidden_layers=None, "
        "moe_layers=None, router_layer_base='auto')\n--\n\nroutepack.expert_loads.",
        py::arg("inputs"), py::kw_only(), py::arg("format") = "auto", py::arg("model") = py::none(),
        py::arg("num_experts") = py::none(), py::arg("top_k") = py::none(), py::arg("num_hidden_layers") = py::none(),
        py::arg("moe_layers") = py::none(), py::arg("router_layer_base") = "auto");
}

} // namespace routepack::pyconv
