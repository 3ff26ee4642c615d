// The Topology class of routepack._core: built from Python arguments or topology JSON under the
// topology file's rules (parse_topology), the shipped topologies, and the stacks' batch rules.
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "core/model/topology.h"

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace routepack::pyconv {

namespace {

/// Writes the stacks' batch rules (docs/batch-rules.md) into topology JSON `j`, converted with the
/// module's integer rules; parse_topology checks the values.
void put_batch_rules(nlohmann::json& j, const py::object& per_slot, const py::object& per_cell,
                     const py::object& max_per_cell, const py::object& oversize) {
    j["samples_per_dp_slot"] = py_int_in(per_slot, "topology: samples_per_dp_slot", INT64_MIN, INT64_MAX);
    j["samples_per_cell"] = py_int_in(per_cell, "topology: samples_per_cell", INT64_MIN, INT64_MAX);
    j["max_samples_per_cell"] = py_int_in(max_per_cell, "topology: max_samples_per_cell", INT64_MIN, INT64_MAX);
    j["oversize"] = py_utf8(oversize, "topology: oversize");
}

Topology make_topology(const py::object& ep_ranks_obj, const py::object& dp_slots_obj, const py::object& edp_shards,
                       const py::object& token_cap_obj, const py::object& stages_obj, const py::object& min_rows_obj,
                       const py::object& experts_per_layer_obj, const py::object& row_multiple_obj,
                       const py::object& per_slot, const py::object& per_cell, const py::object& max_per_cell,
                       const py::object& oversize) {
    // C++ ranges here; the topology file's rules (parse_topology) check the values.
    const int ep_ranks = py_int(ep_ranks_obj, "topology: ep_ranks");
    const int dp_slots = py_int(dp_slots_obj, "topology: dp_slots");
    const bool has_cap = !token_cap_obj.is_none();
    const std::int64_t token_cap =
        has_cap ? py_int_in(token_cap_obj, "topology: token_cap", INT64_MIN, INT64_MAX) : std::int64_t{0};
    const int min_rows = py_int(min_rows_obj, "topology: min_rows");
    const int experts_per_layer = py_int(experts_per_layer_obj, "topology: experts_per_layer");
    const std::int64_t row_multiple = py_int_in(row_multiple_obj, "topology: row_multiple", INT64_MIN, INT64_MAX);
    std::vector<std::tuple<std::string, double, double>> stages;
    {
        const auto items = py_items(stages_obj, "topology: stages", "(name, alpha, beta) tuples");
        for (std::size_t s = 0; s < items.size(); ++s) {
            const std::string what = "topology: stages[" + std::to_string(s) + "]";
            const auto t = py_items(items[s], what, "3 values (name, alpha, beta)");
            if (t.size() != 3)
                value_error(what + " must be (name, alpha, beta) (got " + std::to_string(t.size()) + " values)");
            stages.emplace_back(py_utf8(t[0], what + "[0]"), py_float(t[1], what + "[1]"),
                                py_float(t[2], what + "[2]"));
        }
    }
    nlohmann::json j;
    j["ep_ranks"] = ep_ranks;
    j["dp_slots"] = dp_slots;
    put_batch_rules(j, per_slot, per_cell, max_per_cell, oversize);
    // None, or 0 with samples_per_cell: left out (the cap is then derived from the window).
    if (has_cap && (token_cap != 0 || j["samples_per_cell"] == 0)) j["token_cap"] = token_cap;
    if (min_rows) j["min_rows"] = min_rows;
    if (row_multiple != 1) j["row_multiple"] = row_multiple;
    if (experts_per_layer) j["experts_per_layer"] = experts_per_layer;
    if (!edp_shards.is_none()) {
        if (!py::isinstance<py::list>(edp_shards) && !py::isinstance<py::tuple>(edp_shards) &&
            !(py::isinstance<py::array>(edp_shards) && py::reinterpret_borrow<py::array>(edp_shards).ndim() > 0)) {
            const int g = py_int(edp_shards, "topology: edp_shards");
            if (g < 1 || dp_slots < 1 || dp_slots % g != 0)
                value_error("topology: edp_shards = " + std::to_string(g) +
                            " must be >= 1 and divide dp_slots = " + std::to_string(dp_slots));
            nlohmann::json shards = nlohmann::json::array();
            const int per = dp_slots / g;
            for (int s = 0; s < g; ++s) {
                nlohmann::json one = nlohmann::json::array();
                for (int d = s * per; d < (s + 1) * per; ++d)
                    one.push_back(d);
                shards.push_back(one);
            }
            j["edp_shards"] = shards;
        } else {
            nlohmann::json shards = nlohmann::json::array();
            const auto items = py_items(edp_shards, "topology: edp_shards", "lists of DP slots");
            for (std::size_t s = 0; s < items.size(); ++s)
                shards.push_back(py_int_list(items[s], "topology: edp_shards[" + std::to_string(s) + "]"));
            j["edp_shards"] = shards;
        }
    }
    nlohmann::json st = nlohmann::json::array();
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const auto& [name, alpha, beta] = stages[s];
        for (const auto& [key, v] : {std::pair<const char*, double>{"alpha", alpha}, {"beta", beta}})
            if (!std::isfinite(v) || v < 0)
                value_error("topology: attention_stages[" + std::to_string(s) + "]: '" + key +
                            "' must be finite and >= 0 (got " + py::repr(py::float_(v)).cast<std::string>() + ")");
        st.push_back({{"name", name}, {"alpha", alpha}, {"beta", beta}});
    }
    j["attention_stages"] = st;
    return parse_topology(j.dump(), "topology");
}

} // namespace

/// The Topology class (topology file rules, shipped topologies).
void bind_topology(py::module_& m) {
    py::class_<Topology>(m, "Topology", R"doc(
Execution topology of one training step: P EP ranks, D DP slots grouped in EDP shards, token cap C
per cell, attention stages (alpha_s, beta_s) of the cost model (paper eq. 12).

Topology(ep_ranks, dp_slots, edp_shards=None, token_cap=None, stages=[("attention", 1.0, 0.0)], min_rows=0,
experts_per_layer=0, row_multiple=1, samples_per_dp_slot=0, samples_per_cell=0, max_samples_per_cell=0,
oversize="refuse"). token_cap: C tokens per cell, required unless samples_per_cell is given (then None
or 0 = derived from the window, docs/batch-rules.md). The batch rules (as with_batch_rules):
samples_per_dp_slot (every DP slot exactly that many samples; verl: batch / DP ranks),
samples_per_cell (every cell exactly that many: static micro-batches), max_samples_per_cell (at
most that many per cell; Megatron's max_num_seqs), each 0 = free, and oversize ('refuse', or
'alone': a sample longer than token_cap gets a cell of its own). row_multiple: the row count R must be a multiple of it (1..2^20;
virtual-pipeline stacks need the micro-batch count per rank to be a multiple of the stage group
size); the certified R* is then the smallest feasible multiple >= min_rows. edp_shards: None = one shard of all DP slots, an int G = G shards of
consecutive slots, or a list of lists partitioning 0..D-1. Validated with the topology file's rules
(ValueError with the same text as the CLI, prefixed "topology: ").)doc")
        .def(py::init(&make_topology), py::arg("ep_ranks"), py::arg("dp_slots"), py::arg("edp_shards") = py::none(),
             py::arg("token_cap") = py::none(),
             py::arg("stages") = std::vector<std::tuple<std::string, double, double>>{{"attention", 1.0, 0.0}},
             py::arg("min_rows") = 0, py::arg("experts_per_layer") = 0, py::arg("row_multiple") = 1,
             py::arg("samples_per_dp_slot") = 0, py::arg("samples_per_cell") = 0, py::arg("max_samples_per_cell") = 0,
             py::arg("oversize") = "refuse")
        .def_static(
            "from_json", [](const py::object& text) { return parse_topology(py_utf8(text, "text"), "topology"); },
            py::arg("text"), "Parses topology JSON text (the CLI's --topology file format).")
        .def_static(
            "load", [](const py::object& spec) { return load_topology(py_path(spec, "spec")); }, py::arg("spec"),
            "A topology file path or the name of a shipped topology (as `routepack plan --topology`).")
        .def_static("known_names", &known_topology_names)
        .def("to_json", &topology_to_json)
        .def_readonly("ep_ranks", &Topology::ep_ranks)
        .def_readonly("dp_slots", &Topology::dp_slots)
        .def_readonly("edp_shards", &Topology::edp_shards)
        .def_readonly("token_cap", &Topology::token_cap)
        .def_readonly("min_rows", &Topology::min_rows)
        .def_readonly("row_multiple", &Topology::row_multiple)
        .def_readonly("experts_per_layer", &Topology::experts_per_layer)
        // The stacks' batch rules (docs/topology-and-plan.md "Batch rules"): read here, set with with_batch_rules.
        .def_property_readonly("samples_per_dp_slot", [](const Topology& t) { return t.batch.samples_per_dp_slot; })
        .def_property_readonly("samples_per_cell", [](const Topology& t) { return t.batch.samples_per_cell; })
        .def_property_readonly("max_samples_per_cell", [](const Topology& t) { return t.batch.max_samples_per_cell; })
        .def_property_readonly(
            "oversize", [](const Topology& t) { return t.batch.oversize == Oversize::Alone ? "alone" : "refuse"; })
        .def(
            "with_batch_rules",
            [](const Topology& t, const py::object& per_slot, const py::object& per_cell,
               const py::object& max_per_cell, const py::object& oversize) {
                nlohmann::json j = nlohmann::json::parse(topology_to_json(t));
                put_batch_rules(j, per_slot, per_cell, max_per_cell, oversize);
                return parse_topology(j.dump(), "topology");
            },
            py::arg("samples_per_dp_slot") = 0, py::arg("samples_per_cell") = 0, py::arg("max_samples_per_cell") = 0,
            py::arg("oversize") = "refuse",
            "A copy with the stacks' batch rules: samples_per_dp_slot (every DP slot exactly that many samples; "
            "verl: batch / DP ranks), samples_per_cell (every cell exactly that many: static micro-batches), "
            "max_samples_per_cell (at most that many per cell), each 0 = free, and oversize ('refuse' or 'alone': "
            "a sample longer than token_cap gets a cell of its own). ValueError with the topology file's text.")
        .def_property_readonly("stages",
                               [](const Topology& t) {
                                   py::list l;
                                   for (const auto& s : t.attention_stages)
                                       l.append(py::make_tuple(s.name, s.alpha, s.beta));
                                   return l;
                               })
        .def("__eq__", [](const Topology& a, const Topology& b) { return a == b; })
        .def("__repr__", [](const Topology& t) { return "routepack.Topology(" + topology_to_json(t) + ")"; });
}

} // namespace routepack::pyconv
