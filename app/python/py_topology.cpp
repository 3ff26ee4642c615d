// The Topology class of routepack._core: built from Python arguments or topology JSON under the
// topology file's rules (parse_topology), the shipped topologies, and the stacks' batch rules.
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "core/model/topology.h"
#include "core/plan/calibrate.h"
#include "core/plan/measured.h"
#include "core/util/input_file.h"

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

/// Writes the migration cost model `migration` (None, or a mapping of its field names to numbers) into
/// topology JSON `j`; parse_topology checks the names and the values (the "migration" object's rules).
void put_migration(nlohmann::json& j, const py::object& migration) {
    if (migration.is_none()) {
        j.erase("migration");
        return;
    }
    if (!py::isinstance<py::dict>(migration) && !py::hasattr(migration, "items"))
        value_error("topology: migration must be a mapping of the cost model's fields to numbers (got " +
                    py::str(py::type::of(migration).attr("__name__")).cast<std::string>() + ")");
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : migration.attr("items")()) {
        const auto pair = kv.cast<py::tuple>();
        const std::string key = py_utf8(pair[0], "topology: migration key");
        const std::string what = "topology: migration['" + key + "']";
        if (py::isinstance<py::int_>(pair[1]) && !py::isinstance<py::bool_>(pair[1]))
            o[key] = py_int_in(pair[1], what, INT64_MIN, INT64_MAX);
        else
            o[key] = py_float(pair[1], what);
    }
    j["migration"] = o;
}

Topology make_topology(const py::object& ep_ranks_obj, const py::object& dp_slots_obj, const py::object& edp_shards,
                       const py::object& token_cap_obj, const py::object& stages_obj, const py::object& min_rows_obj,
                       const py::object& experts_per_layer_obj, const py::object& row_multiple_obj,
                       const py::object& per_slot, const py::object& per_cell, const py::object& max_per_cell,
                       const py::object& oversize, const py::object& migration, const py::object& invocation_obj) {
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
    put_migration(j, migration);
    const std::int64_t invocation =
        py_int_in(invocation_obj, "topology: expert_invocation_tokens", INT64_MIN, INT64_MAX);
    if (invocation != 0) j["expert_invocation_tokens"] = invocation;
    return parse_topology(j.dump(), "topology");
}

/// Topology.with_migration: a copy of `t` with the migration cost model given (None: without one).
Topology with_migration(const Topology& t, const py::object& migration) {
    nlohmann::json j = nlohmann::json::parse(topology_to_json(t));
    put_migration(j, migration);
    return parse_topology(j.dump(), "topology");
}

/// Topology.migration: the cost model as to_json writes it, or None.
py::object migration_of(const Topology& t) {
    if (!t.has_migration) return py::none();
    const nlohmann::json j = nlohmann::json::parse(topology_to_json(t))["migration"];
    py::dict d;
    for (const auto& [key, v] : j.items()) {
        if (v.is_number_integer())
            d[py::str(key)] = v.get<std::int64_t>();
        else
            d[py::str(key)] = v.get<double>();
    }
    return d;
}

/// Topology.with_batch_rules: a copy of `t` with the batch rules given (parse_topology checks them).
Topology with_batch_rules(const Topology& t, const py::object& per_slot, const py::object& per_cell,
                          const py::object& max_per_cell, const py::object& oversize) {
    nlohmann::json j = nlohmann::json::parse(topology_to_json(t));
    put_batch_rules(j, per_slot, per_cell, max_per_cell, oversize);
    return parse_topology(j.dump(), "topology");
}

/// "<routepack.Topology 8 EP ranks, 4 DP slots in 2 EDP shards, token cap 8,192>", then each setting
/// that is not its default, in words.
std::string topology_repr(const Topology& t) {
    std::string s = "<routepack.Topology " + counted(t.ep_ranks, "EP rank") + ", " + counted(t.dp_slots, "DP slot");
    if (t.shards() > 1) s += " in " + counted(t.shards(), "EDP shard");
    s += t.token_cap > 0 ? ", token cap " + grouped(t.token_cap) : ", token cap from the window";
    if (t.nodes() > 1) s += ", " + counted(t.nodes(), "node");
    if (t.min_rows > 0) s += ", at least " + counted(t.min_rows, "row");
    if (t.row_multiple != 1) s += ", rows a multiple of " + grouped(t.row_multiple);
    if (t.batch.samples_per_dp_slot > 0) s += ", " + counted(t.batch.samples_per_dp_slot, "sample") + " per DP slot";
    if (t.batch.samples_per_cell > 0) s += ", " + counted(t.batch.samples_per_cell, "sample") + " per cell";
    if (t.batch.max_samples_per_cell > 0)
        s += ", at most " + counted(t.batch.max_samples_per_cell, "sample") + " per cell";
    if (t.batch.oversize == Oversize::Alone) s += ", oversize samples alone";
    if (t.has_migration) s += ", migration model";
    if (t.expert_invocation_tokens > 0)
        s += ", " + counted(t.expert_invocation_tokens, "token") + " per expert invocation";
    return s + ">";
}

/// routepack._calibrate: the calibrated topology and the fit of a measured step file, as a dict
/// (docs/measure.md); the file is read as the CLI reads it (read_input_file).
py::tuple calibrate_file(const py::object& path_obj, const Topology& t) {
    const std::string path = py_path(path_obj, "measured");
    const Calibration c = calibrate(read_input_file(path, input_files::kMeasured), path, t);
    auto fit = [](const CalibrationFit& f) {
        py::dict d;
        d["pieces"] = f.pieces;
        d["x1"] = f.x1;
        d["x2"] = f.x2;
        d["r2"] = f.r2;
        d["rel_rms"] = f.rel_rms;
        return d;
    };
    py::dict d;
    d["plans"] = c.plans;
    d["attention"] = fit(c.attention);
    d["experts"] = fit(c.experts);
    d["alpha"] = c.alpha;
    d["beta"] = c.beta;
    d["old_alpha"] = c.old_alpha;
    d["old_beta"] = c.old_beta;
    d["expert_invocation_tokens"] = c.invocation_tokens;
    d["seconds_per_U"] = c.seconds_per_U;
    return py::make_tuple(c.topology, d);
}

namespace doc {

constexpr const char* kTopology = R"doc(Execution topology of one training step, under the topology file's rules.

P EP ranks, D DP slots grouped in EDP shards, the token cap C of a cell, the
attention stages of the cost model (paper eq. 12) and the stacks' batch rules
(docs/batch-rules.md). The arguments are checked with the rules of a topology file
(``routepack plan --topology``): the same ranges and texts, prefixed "topology: ".

Parameters
----------
ep_ranks : int
    P, the expert-parallel ranks (1..2^20); P must divide a window's experts E.
dp_slots : int
    D, the data-parallel slots (1..2^20): each row has one cell per slot.
edp_shards : None, int or list of list of int, optional
    None: one shard of all DP slots; an int G: G shards of D / G consecutive
    slots; a list of lists: shards that partition the slots 0..D-1.
token_cap : int or None, optional
    C, the most tokens of a cell (1..2^40). Required unless samples_per_cell is
    given; None or 0 then derives it from the window.
stages : list of (str, float, float), default [("attention", 1.0, 0.0)]
    Keyword-only, as every parameter after it. The attention stages (name,
    alpha_s, beta_s), alpha and beta in 0..1e12: a row-shard costs
    sum_s max_d (alpha_s T + beta_s Q) (eq. 12), T a cell's tokens / C, Q the sum
    of its squared sample lengths / C^2.
min_rows : int, default 0
    The least row count R (0..2^30; pipeline occupancy).
experts_per_layer : int, default 0
    E, checked against each window (0: the window's).
row_multiple : int, default 1
    R is the smallest multiple of it that is at least the certified R* and
    min_rows (1..2^20; a virtual-pipeline stack's micro-batch group size).
samples_per_dp_slot : int, default 0
    Every DP slot gets exactly this many samples (verl: batch / DP ranks; 0: free).
samples_per_cell : int, default 0
    Every cell gets exactly this many samples (static micro-batches; 0: free).
max_samples_per_cell : int, default 0
    Every cell gets at most this many samples (Megatron's max_num_seqs; 0: free).
oversize : {'refuse', 'alone'}, default 'refuse'
    'alone': a sample longer than token_cap gets a cell of its own.
migration : dict of str to float, optional
    The cost model of moving experts between steps, the topology file's
    "migration" object (docs/migration.md): any of state_bytes_per_param,
    expert_parameters, intra_node_GBps, inter_node_GBps, seconds_per_U,
    achieved_TFLOPs. With a previous placement the planner then minimizes the
    modelled step time, and Plan.migration reports bytes and seconds with it.
expert_invocation_tokens : int, default 0
    The fixed cost of one expert invocation, in tokens (0..2^20): every
    (row-shard, MoE layer, expert) with at least one token adds it to its EP
    rank's load (docs/measure.md, "Calibration"; routepack.calibrate fits it).
    0 is the paper's linear expert term.

Raises
------
InputError
    A value out of its range or against a rule, with the topology file's text
    ("topology: edp_shards = 3 must be >= 1 and divide dp_slots = 4").

See Also
--------
Topology.load : a topology file, or a shipped topology by name.)doc";

constexpr const char* kInit =
    R"doc(__init__(self, /, ep_ranks, dp_slots, edp_shards=None, token_cap=None, *, stages=[('attention', 1.0, 0.0)], min_rows=0, experts_per_layer=0, row_multiple=1, samples_per_dp_slot=0, samples_per_cell=0, max_samples_per_cell=0, oversize='refuse', migration=None, expert_invocation_tokens=0)
--

Makes the topology; the parameters are described in help(routepack.Topology).)doc";

constexpr const char* kFromJson = R"doc(from_json(text)
--

Parses topology JSON, the format of ``routepack plan --topology FILE``.

Parameters
----------
text : str
    The JSON text of a topology file (docs/topology-and-plan.md).

Returns
-------
Topology
    The topology it describes.

Raises
------
InputError
    Text that is not JSON or breaks a topology rule, with the CLI's text
    ("topology: field 'ep_ranks' must be at most 1048576 (got 4294967304)").)doc";

constexpr const char* kLoad = R"doc(load(spec)
--

Reads a topology file, or a shipped topology by name, as ``routepack plan --topology``.

Parameters
----------
spec : str, bytes or os.PathLike
    A path to a topology file (a regular file of at most 1 MiB), else the name of a
    shipped topology (Topology.known_names()).

Returns
-------
Topology
    The topology the file or the name describes.

Raises
------
MissingFileError
    `spec` is neither an existing file nor a shipped name ("<spec>: no such
    topology file or shipped topology (known: ...)").
InputError
    The file is not a valid topology (naming the file and the field).)doc";

constexpr const char* kKnownNames = R"doc(known_names()
--

The names of the shipped topologies (resources/topologies), for Topology.load.

Returns
-------
list of str
    The names, sorted.)doc";

constexpr const char* kToJson = R"doc(to_json(self, /)
--

The topology as topology file JSON (Topology.from_json reads it back).

Returns
-------
str
    One line of JSON; settings at their default are left out (row_multiple 1,
    free batch rules).)doc";

constexpr const char* kWithBatchRules =
    R"doc(with_batch_rules(self, /, samples_per_dp_slot=0, samples_per_cell=0, max_samples_per_cell=0, oversize='refuse')
--

A copy of the topology with the stacks' batch rules (docs/batch-rules.md).

Parameters
----------
samples_per_dp_slot : int, default 0
    Every DP slot gets exactly this many samples (verl: batch / DP ranks; 0: free).
samples_per_cell : int, default 0
    Every cell gets exactly this many samples (static micro-batches; 0: free).
max_samples_per_cell : int, default 0
    Every cell gets at most this many samples (Megatron's max_num_seqs; 0: free).
oversize : {'refuse', 'alone'}, default 'refuse'
    'alone': a sample longer than token_cap gets a cell of its own.

Returns
-------
Topology
    The copy; the other settings are this topology's.

Raises
------
InputError
    A rule out of its range or against the topology, with the topology file's
    text.)doc";

constexpr const char* kWithMigration = R"doc(with_migration(self, /, migration)
--

A copy of the topology with the migration cost model (docs/migration.md).

Parameters
----------
migration : dict of str to float or None
    The "migration" object's fields (see help(routepack.Topology)); None: a copy
    without a cost model.

Returns
-------
Topology
    The copy; the other settings are this topology's.

Raises
------
InputError
    An unknown field or a value out of its range, with the topology file's text
    ("topology: migration.inter_node_GBps ...").)doc";

} // namespace doc

} // namespace

/// The Topology class (topology file rules, shipped topologies).
void bind_topology(py::module_& m) {
    py::class_<Topology>(m, "Topology", doc::kTopology)
        .def(py::init(&make_topology), doc::kInit, py::arg("ep_ranks"), py::arg("dp_slots"),
             py::arg("edp_shards") = py::none(), py::arg("token_cap") = py::none(), py::kw_only(),
             py::arg("stages") = std::vector<std::tuple<std::string, double, double>>{{"attention", 1.0, 0.0}},
             py::arg("min_rows") = 0, py::arg("experts_per_layer") = 0, py::arg("row_multiple") = 1,
             py::arg("samples_per_dp_slot") = 0, py::arg("samples_per_cell") = 0, py::arg("max_samples_per_cell") = 0,
             py::arg("oversize") = "refuse", py::arg("migration") = py::none(), py::arg("expert_invocation_tokens") = 0)
        .def_static(
            "from_json", [](const py::object& text) { return parse_topology(py_utf8(text, "text"), "topology"); },
            doc::kFromJson, py::arg("text"))
        .def_static(
            "load", [](const py::object& spec) { return load_topology(py_path(spec, "spec")); }, doc::kLoad,
            py::arg("spec"))
        .def_static("known_names", &known_topology_names, doc::kKnownNames)
        .def("to_json", &topology_to_json, doc::kToJson)
        .def_readonly("ep_ranks", &Topology::ep_ranks, "int: P, the EP ranks.")
        .def_readonly("dp_slots", &Topology::dp_slots, "int: D, the DP slots (cells per row).")
        .def_readonly("edp_shards", &Topology::edp_shards,
                      "list of list of int: the EDP shards, each a list of DP slots.")
        .def_readonly("token_cap", &Topology::token_cap,
                      "int: C, the most tokens of a cell (0: derived from the window).")
        .def_readonly("min_rows", &Topology::min_rows, "int: the least row count R (0: none).")
        .def_readonly("row_multiple", &Topology::row_multiple, "int: R is a multiple of it (1: any R).")
        .def_readonly("experts_per_layer", &Topology::experts_per_layer,
                      "int: E when the topology pins it (0: the window's).")
        .def_readonly("expert_invocation_tokens", &Topology::expert_invocation_tokens,
                      "int: fixed cost of one expert invocation in tokens (0: the linear expert term).")
        // The stacks' batch rules (docs/topology-and-plan.md "Batch rules"): read here, set with with_batch_rules.
        .def_property_readonly(
            "samples_per_dp_slot", [](const Topology& t) { return t.batch.samples_per_dp_slot; },
            "int: every DP slot gets exactly this many samples (0: free).")
        .def_property_readonly(
            "samples_per_cell", [](const Topology& t) { return t.batch.samples_per_cell; },
            "int: every cell gets exactly this many samples (0: free).")
        .def_property_readonly(
            "max_samples_per_cell", [](const Topology& t) { return t.batch.max_samples_per_cell; },
            "int: every cell gets at most this many samples (0: free).")
        .def_property_readonly(
            "oversize", [](const Topology& t) { return t.batch.oversize == Oversize::Alone ? "alone" : "refuse"; },
            "str: 'refuse' or 'alone' (a sample longer than token_cap gets a cell of its own).")
        .def("with_batch_rules", &with_batch_rules, doc::kWithBatchRules, py::arg("samples_per_dp_slot") = 0,
             py::arg("samples_per_cell") = 0, py::arg("max_samples_per_cell") = 0, py::arg("oversize") = "refuse")
        .def("with_migration", &with_migration, doc::kWithMigration, py::arg("migration"))
        .def_property_readonly("migration", &migration_of,
                               "dict or None: the migration cost model as to_json writes it (None: none).")
        .def_property_readonly(
            "stages",
            [](const Topology& t) {
                py::list l;
                for (const auto& s : t.attention_stages)
                    l.append(py::make_tuple(s.name, s.alpha, s.beta));
                return l;
            },
            "list of (str, float, float): the attention stages (name, alpha_s, beta_s).")
        .def("__eq__", [](const Topology& a, const Topology& b) { return a == b; })
        .def("__repr__", &topology_repr);
    m.def(
        "_check_measured",
        [](const py::object& text, const py::object& origin, const py::object& fingerprint) {
            (void)parse_measured(py_utf8(text, "text"), py_utf8(origin, "origin"), py_utf8(fingerprint, "fingerprint"));
        },
        R"doc(_check_measured(text, origin, fingerprint)
--

Checks a measured step file's text with the one reader of the format (InputError naming origin and the
field); fingerprint '' checks no window.)doc",
        py::arg("text"), py::arg("origin"), py::arg("fingerprint"));
    m.def(
        "_read_measured_text",
        [](const py::object& path) { return read_input_file(py_path(path, "path"), input_files::kMeasured); },
        R"doc(_read_measured_text(path)
--

A measured step file's text, read as the CLI reads it (MissingFileError, a regular file of at most 1 GiB).)doc",
        py::arg("path"));
    m.def("_calibrate", &calibrate_file, R"doc(_calibrate(measured, topology)
--

The calibrated topology and the fit of a measured step file (routepack.calibrate).)doc",
          py::arg("measured"), py::arg("topology"));
}

} // namespace routepack::pyconv
