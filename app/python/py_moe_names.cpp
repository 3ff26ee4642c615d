// The one table of MoE tensor names (core/model/moe_names.h) as Python data, for routepack.torch.layouts.
#include "app/python/py_bindings.h"
#include "core/model/moe_names.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace routepack::pyconv {

namespace {

const char* storage_name(ExpertStorage s) {
    switch (s) {
    case ExpertStorage::PerExpert:
        return "per-expert";
    case ExpertStorage::Stacked:
        return "stacked";
    case ExpertStorage::FlatChunks:
        return "flat-chunks";
    }
    return "per-expert";
}

py::list layouts_list() {
    py::list out;
    for (const MoeLayout& row : moe_layouts()) {
        py::dict d;
        d["name"] = row.name;
        d["blocks"] = py::tuple(py::cast(row.blocks));
        d["experts"] = row.experts;
        d["storage"] = storage_name(row.storage);
        d["tensors"] = py::tuple(py::cast(row.tensors));
        d["routers"] = py::tuple(py::cast(row.routers));
        d["routing"] = row.routing_logical ? "map" : "auto";
        d["live"] = row.live;
        out.append(d);
    }
    return out;
}

} // namespace

void bind_moe_names(py::module_& m) {
    m.def(
        "_moe_layouts", [] { return layouts_list(); },
        "_moe_layouts()\n--\n\n"
        "The table of MoE layouts (core/model/moe_names.h), in the order names are tried: a list\n"
        "of dicts with name, blocks, experts (the prefix inside the block), storage ('per-expert',\n"
        "'stacked', 'flat-chunks'), tensors (flat-chunks: the only names), routers, routing ('map':\n"
        "kept logical; 'auto': rows move unless the router is group-limited) and live (a live model's\n"
        "names).");
    m.def(
        "_moe_names",
        [] {
            py::dict d;
            d["router_tensors"] = py::tuple(py::cast(moe_router_tensors()));
            d["grouped_router_marks"] = py::tuple(py::cast(moe_grouped_router_marks()));
            d["shared_expert_prefixes"] = py::tuple(py::cast(moe_shared_expert_prefixes()));
            return d;
        },
        "_moe_names()\n--\n\n"
        "The table's other names (core/model/moe_names.h): router_tensors (weight first, then the\n"
        "biases), grouped_router_marks, shared_expert_prefixes; each a tuple of str.");
}

} // namespace routepack::pyconv
