// The read-only Library of routepack._core and the Window it loads (a trace or one of its windows:
// lengths, counts as a read-only view, model facts, sample ids).
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "app/python/py_window.h"
#include "core/model/trace.h"
#include "core/util/errors.h"
#include "storage/library.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

namespace routepack::pyconv {

namespace {

struct PyLibrary {
    std::unique_ptr<storage::Library> lib;
};

py::dict trace_entry_dict(const storage::TraceEntry& t) {
    py::dict d;
    d["name"] = py_text(t.name);
    d["format"] = py_text(t.format);
    d["load_only"] = t.load_only;
    d["samples"] = t.samples;
    d["model"] = py_text(t.model.name);
    d["num_hidden_layers"] = t.model.num_hidden_layers;
    d["num_experts"] = t.model.experts;
    d["top_k"] = t.model.top_k;
    d["moe_layers"] = t.model.moe_layers;
    d["fingerprint"] = py_text(t.fingerprint);
    return d;
}

} // namespace

/// The read-only Library and the Window it loads.
void bind_library(py::module_& m) {
    py::class_<PyWindow>(m, "Window", "A trace or window read from a library: lengths, counts, moe_layers, sample ids.")
        .def_property_readonly(
            "lengths",
            [](const PyWindow& w) {
                py::array_t<std::int64_t> out(static_cast<py::ssize_t>(w.trace->size()));
                for (std::size_t i = 0; i < w.trace->size(); ++i)
                    out.mutable_data()[i] = w.trace->samples[i].length;
                return out;
            },
            "int64 [N]: t_i")
        .def_property_readonly(
            "counts",
            [](const PyWindow& w) {
                // No copy: the array views the loaded trace, which the capsule keeps alive.
                auto* keep = new std::shared_ptr<const Trace>(w.trace);
                py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<const Trace>*>(p); });
                const auto& t = *w.trace;
                py::array_t<std::uint32_t> a({static_cast<py::ssize_t>(t.size()),
                                              static_cast<py::ssize_t>(t.model.num_moe_layers()),
                                              static_cast<py::ssize_t>(t.model.experts)},
                                             t.counts.data(), owner);
                py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
                return a;
            },
            "uint32 [N, L, E] (read-only view): a[i][l][e]")
        .def_property_readonly("moe_layers", [](const PyWindow& w) { return w.trace->model.moe_layers; })
        .def_property_readonly("num_experts", [](const PyWindow& w) { return w.trace->model.experts; })
        .def_property_readonly("top_k", [](const PyWindow& w) { return w.trace->model.top_k; })
        .def_property_readonly("num_hidden_layers", [](const PyWindow& w) { return w.trace->model.num_hidden_layers; })
        .def_property_readonly("model_name", [](const PyWindow& w) { return py_text(w.trace->model.name); })
        .def_property_readonly(
            "sample_ids",
            [](const PyWindow& w) {
                py::list ids;
                for (const auto& s : w.trace->samples)
                    ids.append(py_text(s.id));
                return ids;
            },
            "[N] str: sample ids as stored (bytes that are not UTF-8, from names of older imports, decoded with "
            "'surrogateescape': s.encode('utf-8', 'surrogateescape') gives the stored bytes)")
        .def_property_readonly("trace_name", [](const PyWindow& w) { return py_text(w.trace_name); })
        .def_property_readonly("window_name", [](const PyWindow& w) { return py_text(w.window_name); })
        .def("__len__", [](const PyWindow& w) { return w.trace->size(); });

    py::class_<PyLibrary>(m, "Library", "A RoutePack library (SQLite), opened read-only.")
        .def(py::init([](const py::object& path_obj) {
                 const std::string path = py_path(path_obj, "path");
                 if (!std::filesystem::exists(path)) throw InputError(path + ": no such library file");
                 return PyLibrary{storage::Library::open(path, storage::OpenMode::ReadOnly)};
             }),
             py::arg("path"))
        .def(
            "traces",
            [](const PyLibrary& l) {
                py::list out;
                for (const auto& t : l.lib->traces())
                    out.append(trace_entry_dict(t));
                return out;
            },
            "Every trace: name, format, load_only, samples, model, num_hidden_layers, num_experts, top_k, moe_layers")
        .def(
            "windows",
            [](const PyLibrary& l, const py::object& trace_obj) {
                const std::string trace = py_name(trace_obj, "trace");
                py::list out;
                for (const auto& w : l.lib->windows(trace)) {
                    py::dict d;
                    d["trace"] = py_text(w.trace);
                    d["name"] = py_text(w.name);
                    d["definition"] = py_text(w.definition);
                    d["samples"] = w.samples;
                    out.append(d);
                }
                return out;
            },
            py::arg("trace") = "")
        .def(
            "load",
            [](const PyLibrary& l, const py::object& trace_obj, const py::object& window_obj) {
                const std::string trace = py_name(trace_obj, "trace"), window = py_name(window_obj, "window");
                Trace t;
                {
                    py::gil_scoped_release release;
                    t = window.empty() ? l.lib->load_trace(trace) : l.lib->load_window(trace, window);
                }
                return PyWindow{std::make_shared<const Trace>(std::move(t)), trace, window};
            },
            py::arg("trace"), py::arg("window") = "", "The whole trace, or one of its windows, with counts.")
        .def(
            "layer_totals",
            [](const PyLibrary& l, const py::object& trace_obj) {
                const std::string trace = py_name(trace_obj, "trace");
                const auto e = l.lib->trace(trace);
                const auto v = l.lib->layer_totals(trace);
                if (v.size() != static_cast<std::size_t>(e.model.num_moe_layers()) * e.model.experts)
                    throw InputError("trace '" + trace + "' has no expert totals");
                return layer_totals_array(v, e.model.num_moe_layers(), e.model.experts);
            },
            py::arg("trace"), "uint64 [L, E]: per-layer expert totals (aggregate traces included)")
        .def_property_readonly("path", [](const PyLibrary& l) { return py_text(l.lib->path().string()); });
}

} // namespace routepack::pyconv
