// routepack._core._read_trace: one step's files read with the importers (core/import/import.h) into a
// Window held in memory, nothing written; and the Window's routes, its renaming for a plan, and its
// pickling (a Window crosses processes as a Dask result or a Ray object).
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "app/python/py_window.h"
#include "core/import/import.h"
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace routepack::pyconv {

namespace {

/// The model of a read: a shipped description (`name`), a Hugging Face config.json (`config`), then
/// the overrides (0 / empty = not given), as `routepack import --model/--model-config/--experts/
/// --top-k/--layers/--moe-layers` resolves them. Without any, the config.json beside the input
/// describes the model (import_trace). InputError for both a name and a config.
ModelDescription read_model(const std::string& name, const std::string& config, int experts, int top_k, int layers,
                            const std::vector<int>& moe_layers, const std::string& display_name) {
    if (!name.empty() && !config.empty()) throw InputError("give either --model or --model-config, not both");
    ModelDescription m;
    if (!name.empty()) m = known_model(name);
    if (!config.empty()) m = model_from_hf_config(read_input_file(config, input_files::kModelConfig), config);
    if (experts) m.experts = experts;
    if (top_k) m.top_k = top_k;
    if (layers) m.num_hidden_layers = layers;
    if (!moe_layers.empty()) m.moe_layers = moe_layers;
    if ((experts || top_k || layers || !moe_layers.empty()) && name.empty() && config.empty()) m.source = "flags";
    if (!display_name.empty()) m.name = display_name;
    return m;
}

/// Collects the samples in input order; without `keep_routes` each sample's routes are dropped as it
/// arrives, so only its counts stay in memory.
struct WindowSink : ImportSink {
    Trace trace;
    bool keep_routes = true;
    std::string what;
    void begin(const ModelDescription& m, TraceFormat f) override {
        trace.model = m;
        trace.format = to_string(f);
    }
    void sample(SampleRecord&& r) override {
        if (!keep_routes) r.routes = SampleRoutes{};
        trace.append(std::move(r));
    }
    void aggregate(AggregateCounts&&) override {
        throw InputError(what + ": aggregate traces hold per-layer totals only: usable for placement (routepack "
                                "place), not for packing");
    }
};

/// _read_trace: `path` (a file or folder `routepack import` takes as one input) read as `routepack
/// import` reads it (format detection, folder walk, per-sample validation), into memory only. The
/// GIL is released while reading. The importers' InputError texts (file, sample, field) unchanged.
PyWindow read_trace(const py::object& path_obj, const std::string& format, const std::string& model_name,
                    const std::string& model_config, int experts, int top_k, int layers,
                    const std::vector<int>& moe_layers, const std::string& display_name, const std::string& layer_base,
                    bool routes) {
    const std::string path = py_path(path_obj, "path");
    ImportOptions opt;
    opt.format = parse_trace_format(format);
    opt.router_layer_base = parse_layer_base(layer_base);
    opt.model = read_model(model_name, model_config, experts, top_k, layers, moe_layers, display_name);
    auto sink = std::make_shared<WindowSink>();
    sink->keep_routes = routes;
    sink->what = path;
    {
        py::gil_scoped_release release;
        import_trace({std::filesystem::path(path)}, opt, *sink);
    }
    return PyWindow{std::shared_ptr<const Trace>(sink, &sink->trace), "", ""};
}

/// Sample i's routes as a read-only int32 [T, L, K] array (-1 = missing), or None when it has none.
py::object sample_routes(const Trace& t, std::size_t i) {
    if (t.routes.empty() || t.routes[i].empty()) return py::none();
    const SampleRoutes& r = t.routes[i];
    py::array_t<std::int32_t> a(
        {static_cast<py::ssize_t>(r.tokens), static_cast<py::ssize_t>(r.layers), static_cast<py::ssize_t>(r.top_k)});
    std::int32_t* out = a.mutable_data();
    std::vector<std::int32_t> ids;
    for (int l = 0; l < r.layers; ++l) {
        r.layer_ids(l, ids); // [T][K]
        for (std::int64_t tok = 0; tok < r.tokens; ++tok)
            std::memcpy(out + (static_cast<std::size_t>(tok) * r.layers + l) * r.top_k,
                        ids.data() + static_cast<std::size_t>(tok) * r.top_k, sizeof(std::int32_t) * r.top_k);
    }
    return readonly(std::move(a));
}

/// Pickle state of a Window: names, format, model, samples, counts and routes (bytes as stored).
py::tuple window_state(const PyWindow& w) {
    const Trace& t = *w.trace;
    const ModelDescription& m = t.model;
    py::tuple model = py::make_tuple(py::bytes(m.name), m.num_hidden_layers, m.experts, m.top_k, m.moe_layers,
                                     py::bytes(m.source), m.expert_params);
    py::list samples;
    for (const SampleInfo& s : t.samples)
        samples.append(py::make_tuple(py::bytes(s.id), s.length, s.routed_rows,
                                      s.prompt_len ? py::object(py::int_(*s.prompt_len)) : py::object(py::none()),
                                      py::bytes(s.request_id), py::bytes(s.group), py::bytes(s.source_file),
                                      static_cast<int>(s.length_rule), s.missing_routes));
    py::list routes;
    for (const SampleRoutes& r : t.routes)
        routes.append(py::make_tuple(r.tokens, r.layers, r.top_k, r.width,
                                     py::bytes(reinterpret_cast<const char*>(r.bytes.data()), r.bytes.size())));
    return py::make_tuple(1, py::bytes(w.trace_name), py::bytes(w.window_name), py::bytes(t.format), model, samples,
                          py::bytes(reinterpret_cast<const char*>(t.counts.data()), t.counts.size() * 4), routes);
}

/// The Window a window_state tuple describes. ValueError for a state of another version or shape.
PyWindow window_from_state(const py::tuple& st) {
    if (st.size() != 8 || st[0].cast<int>() != 1) value_error("Window: unknown pickle state");
    auto t = std::make_shared<Trace>();
    t->format = st[3].cast<std::string>();
    const py::tuple model = st[4].cast<py::tuple>();
    t->model.name = model[0].cast<std::string>();
    t->model.num_hidden_layers = model[1].cast<int>();
    t->model.experts = model[2].cast<int>();
    t->model.top_k = model[3].cast<int>();
    t->model.moe_layers = model[4].cast<std::vector<int>>();
    t->model.source = model[5].cast<std::string>();
    t->model.expert_params = model[6].cast<std::int64_t>();
    for (const py::handle h : st[5].cast<py::list>()) {
        const py::tuple s = h.cast<py::tuple>();
        SampleInfo info;
        info.id = s[0].cast<std::string>();
        info.length = s[1].cast<std::int64_t>();
        info.routed_rows = s[2].cast<std::int64_t>();
        if (!s[3].is_none()) info.prompt_len = s[3].cast<std::int64_t>();
        info.request_id = s[4].cast<std::string>();
        info.group = s[5].cast<std::string>();
        info.source_file = s[6].cast<std::string>();
        info.length_rule = static_cast<LengthRule>(s[7].cast<int>());
        info.missing_routes = s[8].cast<std::int64_t>();
        t->samples.push_back(std::move(info));
    }
    const std::string counts = st[6].cast<std::string>();
    if (counts.size() != t->samples.size() * t->stride() * 4) value_error("Window: pickle state counts do not fit");
    t->counts.resize(counts.size() / 4);
    std::memcpy(t->counts.data(), counts.data(), counts.size());
    for (const py::handle h : st[7].cast<py::list>()) {
        const py::tuple r = h.cast<py::tuple>();
        SampleRoutes sr;
        sr.tokens = r[0].cast<std::int64_t>();
        sr.layers = r[1].cast<int>();
        sr.top_k = r[2].cast<int>();
        sr.width = r[3].cast<int>();
        const std::string b = r[4].cast<std::string>();
        sr.bytes.assign(b.begin(), b.end());
        t->routes.push_back(std::move(sr));
    }
    return PyWindow{std::move(t), st[1].cast<std::string>(), st[2].cast<std::string>()};
}

} // namespace

void bind_read_trace(py::module_& m) {
    m.def("_read_trace", &read_trace,
          "_read_trace(path, *, format='auto', model_name='', model_config='', experts=0, top_k=0, "
          "num_hidden_layers=0, moe_layers=[], name='', layer_base='auto', routes=True)\n--\n\nroutepack.read_trace.",
          py::arg("path"), py::kw_only(), py::arg("format") = "auto", py::arg("model_name") = "",
          py::arg("model_config") = "", py::arg("experts") = 0, py::arg("top_k") = 0, py::arg("num_hidden_layers") = 0,
          py::arg("moe_layers") = std::vector<int>{}, py::arg("name") = "", py::arg("layer_base") = "auto",
          py::arg("routes") = true);
    m.def(
        "_natural_sorted",
        [](std::vector<std::string> names) {
            std::stable_sort(names.begin(), names.end(), natural_less);
            return names;
        },
        "_natural_sorted(names)\n--\n\nThe names in natural order (digit runs compare as numbers: 'step-2' before "
        "'step-10').",
        py::arg("names"));
    py::reinterpret_borrow<py::class_<Topology>>(m.attr("Topology"))
        .def_property_readonly("nodes", &Topology::nodes,
                               "int: N, the nodes (1 when the topology names none).\n\nOn more than one, plans "
                               "use the windows' per-token routes.");
    auto window = py::reinterpret_borrow<py::class_<PyWindow>>(m.attr("Window"));
    window
        .def_property_readonly(
            "routes",
            [](const PyWindow& w) -> py::object {
                if (!w.trace->has_routes()) return py::none();
                py::list out;
                for (std::size_t i = 0; i < w.trace->size(); ++i)
                    out.append(sample_routes(*w.trace, i));
                return out;
            },
            "list of numpy.ndarray or None: per sample, its int32 [T, L, K] routes.\n\n"
            "-1 = missing; read-only arrays, made on each read. None when the source has none.")
        .def_property_readonly(
            "format", [](const PyWindow& w) { return w.trace->format; },
            "str: the trace format read (a routepack import --format name; 'python' for arrays).")
        .def(
            "_named",
            [](const PyWindow& w, const py::object& trace, const py::object& window) {
                return PyWindow{w.trace, py_utf8(trace, "trace_name"), py_utf8(window, "window_name")};
            },
            "_named(self, /, trace_name, window_name)\n--\n\nThe window under other names.", py::arg("trace_name"),
            py::arg("window_name"))
        .def(py::pickle(&window_state, &window_from_state));
}

} // namespace routepack::pyconv
