// The read-only Library of routepack._core and the Window it loads (a trace or one of its windows:
// lengths, counts as a read-only view, model facts, sample ids), which Window() also makes from
// arrays.
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "app/python/py_window.h"
#include "core/model/trace.h"
#include "core/plan/planner.h"
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

/// Window(lengths, counts, *, moe_layers, ...): the window plan() makes from the same arguments.
PyWindow window_of_arrays(const py::object& lengths, const py::object& counts, const py::object& moe_layers,
                          const py::object& top_k, const py::object& num_hidden_layers, const py::object& sample_ids,
                          const py::object& model_name, const py::object& trace_name, const py::object& window_name) {
    Trace t =
        make_window(lengths, counts, py_int_list(moe_layers, "moe_layers"), py_opt_int(top_k, "top_k"),
                    py_opt_int(num_hidden_layers, "num_hidden_layers"), sample_ids, py_utf8(model_name, "model_name"));
    return PyWindow{std::make_shared<const Trace>(std::move(t)), py_utf8(trace_name, "trace_name"),
                    py_utf8(window_name, "window_name")};
}

/// Window.lengths: int64 [N], read-only.
py::array window_lengths(const PyWindow& w) {
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(w.trace->size()));
    for (std::size_t i = 0; i < w.trace->size(); ++i)
        out.mutable_data()[i] = w.trace->samples[i].length;
    return readonly(std::move(out));
}

/// Window.counts: uint32 [N, L, E], a read-only view of the loaded trace (the capsule keeps it alive).
py::array window_counts(const PyWindow& w) {
    auto* keep = new std::shared_ptr<const Trace>(w.trace);
    py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<const Trace>*>(p); });
    const auto& t = *w.trace;
    py::array_t<std::uint32_t> a({static_cast<py::ssize_t>(t.size()),
                                  static_cast<py::ssize_t>(t.model.num_moe_layers()),
                                  static_cast<py::ssize_t>(t.model.experts)},
                                 t.counts.data(), owner);
    return readonly(std::move(a));
}

/// "<routepack.Window trace 'syn', window 'w0': 24 samples, 12,345 tokens, 2 MoE layers x 8 experts,
/// top-2>" (the names only when the window has them).
std::string window_repr(const PyWindow& w) {
    const Trace& t = *w.trace;
    auto quoted = [](const std::string& name) { return std::string(py::repr(py_text(name))); };
    std::string s = "<routepack.Window ";
    if (!w.trace_name.empty()) s += "trace " + quoted(w.trace_name) + (w.window_name.empty() ? ": " : ", ");
    if (!w.window_name.empty()) s += "window " + quoted(w.window_name) + ": ";
    std::int64_t tokens = 0;
    for (const SampleInfo& x : t.samples)
        tokens += x.length;
    return s + counted(static_cast<std::int64_t>(t.size()), "sample") + ", " + counted(tokens, "token") + ", " +
           counted(t.model.num_moe_layers(), "MoE layer") + " x " + counted(t.model.experts, "expert") + ", top-" +
           std::to_string(t.model.top_k) + ">";
}

/// Library(path): read-only; MissingFileError when nothing is at `path`.
PyLibrary open_library(const py::object& path_obj) {
    const std::string path = py_path(path_obj, "path");
    if (!std::filesystem::exists(path)) throw MissingFileError(path + ": no such library file", path);
    return PyLibrary{storage::Library::open(path, storage::OpenMode::ReadOnly)};
}

/// Library.windows: the windows of `trace` (every trace's with ""), as dicts.
py::list library_windows(const PyLibrary& l, const py::object& trace_obj) {
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
}

/// Library.load: a whole trace, or one of its windows, read with the GIL released.
PyWindow library_load(const PyLibrary& l, const py::object& trace_obj, const py::object& window_obj) {
    const std::string trace = py_name(trace_obj, "trace"), window = py_name(window_obj, "window");
    Trace t;
    {
        py::gil_scoped_release release;
        t = window.empty() ? l.lib->load_trace(trace) : l.lib->load_window(trace, window);
    }
    return PyWindow{std::make_shared<const Trace>(std::move(t)), trace, window};
}

/// Library.layer_totals: uint64 [L, E] expert totals of `trace`.
py::array_t<std::uint64_t> library_layer_totals(const PyLibrary& l, const py::object& trace_obj) {
    const std::string trace = py_name(trace_obj, "trace");
    const auto e = l.lib->trace(trace);
    const auto v = l.lib->layer_totals(trace);
    if (v.size() != static_cast<std::size_t>(e.model.num_moe_layers()) * e.model.experts)
        throw InputError("trace '" + trace + "' has no expert totals");
    return layer_totals_array(v, e.model.num_moe_layers(), e.model.experts);
}

namespace doc {

constexpr const char* kWindow = R"doc(A window of samples in memory: lengths, routing counts, model facts, sample ids.

What routepack.plan_window plans. Read from a library (Library.load), from one
step's files (routepack.read_trace), or made from arrays as here: the window
routepack.plan makes from the same arguments. Pickles (a Dask result, a Ray object).

Parameters
----------
lengths : array_like of int, shape (N,)
    t_i >= 1, the tokens of each sample.
counts : array_like of int, shape (N, L, E)
    a[i][l][e], the tokens of sample i routed to expert e at MoE layer index l
    (0..2^32-1); L = len(moe_layers).
moe_layers : sequence of int
    Keyword-only, as every parameter after it. The absolute decoder-layer ids of
    the L MoE layers, ascending.
top_k : int, optional
    The experts per token (default 1), recorded in plans.
num_hidden_layers : int, optional
    The model's decoder layers (default max(moe_layers) + 1).
sample_ids : sequence of str, optional
    Unique ids of the samples (default "0".."N-1").
model_name : str, default ''
    The model's name, recorded in plans.
trace_name : str, default 'python'
    The trace name plans record as their input.
window_name : str, default ''
    The window name plans record as their input.

Raises
------
InputError
    A shape or dtype other than these, a length < 1, a negative count, duplicate
    sample ids, with the argument and index ("counts[3, 1, 5] = -4 is negative").)doc";

constexpr const char* kWindowInit =
    R"doc(__init__(self, /, lengths, counts, *, moe_layers, top_k=None, num_hidden_layers=None, sample_ids=None, model_name='', trace_name='python', window_name='')
--

Makes the window; the parameters are described in help(routepack.Window).)doc";

constexpr const char* kLibrary = R"doc(A RoutePack library (SQLite) opened read-only: its traces and their windows.

Nothing in the file or beside it is changed. ``routepack import --db FILE`` and the
studio write libraries.

Parameters
----------
path : str, bytes or os.PathLike
    The library file.

Raises
------
MissingFileError
    No file at `path` ("<path>: no such library file").
InputError
    A file that is not a RoutePack library (or of a newer schema), naming it.)doc";

constexpr const char* kLibraryInit = R"doc(__init__(self, /, path)
--

Opens the library; the parameters are described in help(routepack.Library).)doc";

constexpr const char* kTraces = R"doc(traces(self, /)
--

Every trace of the library, in the order they were imported.

Returns
-------
list of dict
    Per trace: name, format, load_only (aggregate totals only: for placement, not
    packing), samples, model, num_hidden_layers, num_experts, top_k, moe_layers,
    fingerprint.)doc";

constexpr const char* kWindows = R"doc(windows(self, /, trace='')
--

The windows defined on a trace (or on every trace), in the order they were defined.

Parameters
----------
trace : str, default ''
    The trace's name; '' for the windows of every trace.

Returns
-------
list of dict
    Per window: trace, name, definition (how it was selected), samples.

Raises
------
InputError
    No trace of that name.)doc";

constexpr const char* kLoad = R"doc(load(self, /, trace, window='')
--

Loads a whole trace, or one of its windows, with its counts and per-token routes.

Parameters
----------
trace : str
    The trace's name (Library.traces).
window : str, default ''
    The window's name (Library.windows); '' for the whole trace.

Returns
-------
Window
    Its lengths, counts, model facts and sample ids; plans of it record the trace
    and window names. The GIL is released while reading.

Raises
------
InputError
    No such trace or window, or a load-only (aggregate) trace.)doc";

constexpr const char* kLayerTotals = R"doc(layer_totals(self, /, trace)
--

The expert totals L[l][e] = sum_i a[i][l][e] of a trace (aggregate traces too).

Parameters
----------
trace : str
    The trace's name.

Returns
-------
numpy.ndarray of uint64, shape (L, E)
    Tokens routed to each expert per MoE layer index, for routepack.place.

Raises
------
InputError
    No such trace, or a trace without totals.)doc";

} // namespace doc

} // namespace

/// The read-only Library and the Window it loads (or Window() makes from arrays).
void bind_library(py::module_& m) {
    py::class_<PyWindow>(m, "Window", doc::kWindow)
        .def(py::init(&window_of_arrays), doc::kWindowInit, py::arg("lengths"), py::arg("counts"), py::kw_only(),
             py::arg("moe_layers"), py::arg("top_k") = py::none(), py::arg("num_hidden_layers") = py::none(),
             py::arg("sample_ids") = py::none(), py::arg("model_name") = "", py::arg("trace_name") = "python",
             py::arg("window_name") = "")
        .def_property_readonly("lengths", &window_lengths,
                               "numpy.ndarray of int64, shape (N,), read-only: t_i, the tokens of each sample.")
        .def_property_readonly("counts", &window_counts,
                               "numpy.ndarray of uint32, shape (N, L, E), read-only: a[i][l][e] (a view, no copy).")
        .def_property_readonly(
            "moe_layers", [](const PyWindow& w) { return w.trace->model.moe_layers; },
            "list of int: the absolute decoder-layer ids of the L MoE layers.")
        .def_property_readonly(
            "num_experts", [](const PyWindow& w) { return w.trace->model.experts; }, "int: E, the experts per layer.")
        .def_property_readonly(
            "top_k", [](const PyWindow& w) { return w.trace->model.top_k; }, "int: K, the experts per token.")
        .def_property_readonly(
            "num_hidden_layers", [](const PyWindow& w) { return w.trace->model.num_hidden_layers; },
            "int: the model's decoder layers.")
        .def_property_readonly(
            "model_name", [](const PyWindow& w) { return py_text(w.trace->model.name); }, "str: the model's name.")
        .def_property_readonly(
            "sample_ids",
            [](const PyWindow& w) {
                py::list ids;
                for (const auto& s : w.trace->samples)
                    ids.append(py_text(s.id));
                return ids;
            },
            "list of str: the sample ids as stored.\n\nBytes that are not UTF-8 (names of older imports) are decoded "
            "with\n'surrogateescape'.")
        .def_property_readonly(
            "trace_name", [](const PyWindow& w) { return py_text(w.trace_name); },
            "str: the trace name plans of the window record.")
        .def_property_readonly(
            "window_name", [](const PyWindow& w) { return py_text(w.window_name); },
            "str: the window name plans of the window record.")
        .def_property_readonly(
            "fingerprint", [](const PyWindow& w) { return window_fingerprint(*w.trace); },
            "str: the fingerprint of the window's lengths and counts (16 hex digits), the one a plan of\n"
            "the window records (Plan.fingerprint).")
        .def("__len__", [](const PyWindow& w) { return w.trace->size(); })
        .def("__repr__", &window_repr);

    py::class_<PyLibrary>(m, "Library", doc::kLibrary)
        .def(py::init(&open_library), doc::kLibraryInit, py::arg("path"))
        .def(
            "traces",
            [](const PyLibrary& l) {
                py::list out;
                for (const auto& t : l.lib->traces())
                    out.append(trace_entry_dict(t));
                return out;
            },
            doc::kTraces)
        .def("windows", &library_windows, doc::kWindows, py::arg("trace") = "")
        .def("load", &library_load, doc::kLoad, py::arg("trace"), py::arg("window") = "")
        .def("layer_totals", &library_layer_totals, doc::kLayerTotals, py::arg("trace"))
        .def_property_readonly(
            "path", [](const PyLibrary& l) { return py_text(l.lib->path().string()); }, "str: the library file.")
        .def("__repr__", [](const PyLibrary& l) {
            return "<routepack.Library " + std::string(py::repr(py_text(l.lib->path().string()))) + ">";
        });
}

} // namespace routepack::pyconv
