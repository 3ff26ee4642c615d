// The Placement class of routepack._core and the module's placement functions (_place, _identity,
// _rank_max_over_mean, _read_placement_text), with the one reader of a previous placement that
// place() and plan() share (previous_of).
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "core/model/model.h"
#include "core/plan/budgets.h"
#include "core/plan/expert_map.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/migration.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace routepack::pyconv {

namespace {

__extension__ typedef unsigned __int128 uint128_sum;

/// ValueError "<where(total)>, more than a uint64 holds (at most 18446744073709551615)" when the
/// values sum past 2**64-1 (summed in 128 bits, so the total in the message is exact).
template <class Where> void check_sum_fits(std::span<const std::uint64_t> values, Where&& where) {
    uint128_sum sum = 0;
    for (const std::uint64_t v : values)
        sum += v;
    if (sum <= std::numeric_limits<std::uint64_t>::max()) return;
    std::string digits;
    for (uint128_sum x = sum; x != 0; x /= 10)
        digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(x % 10)));
    value_error(where(digits) + ", more than a uint64 holds (at most " +
                std::to_string(std::numeric_limits<std::uint64_t>::max()) + ")");
}

py::list slot_changes_list(const Placement& next, const Placement& previous) {
    const auto moves = placement_slot_changes(next, previous);
    py::list out;
    for (const auto& layer : moves) {
        py::list l;
        for (const auto& m : layer)
            l.append(py::make_tuple(m.slot, m.expert, m.from_slot, m.previous_expert));
        out.append(std::move(l));
    }
    return out;
}

/// The moves (experts on another EP rank) per MoE layer index as lists of (expert, from_rank,
/// to_rank, from_slot, to_slot) tuples.
py::list moves_list(const Placement& next, const Placement& previous) {
    py::list out;
    for (const auto& layer : placement_moves(next, previous)) {
        py::list l;
        for (const ExpertMove& m : layer)
            l.append(py::make_tuple(m.expert, m.from_rank, m.to_rank, m.from_slot, m.to_slot));
        out.append(std::move(l));
    }
    return out;
}

/// Placement.rank_loads: G[l][p] (eq. 10) of `loads` [L, E], every rank's sum checked first (never
/// wrapped).
py::array_t<std::uint64_t> rank_loads_of(const PyPlacement& p, const py::object& loads) {
    const py::array a = as_array(loads, "loads");
    if (a.ndim() != 2 || a.shape(0) != p.pi.layers || a.shape(1) != p.pi.experts)
        value_error("loads has shape " + shape_text(a) + "; expected [L, E] = (" + std::to_string(p.pi.layers) + ", " +
                    std::to_string(p.pi.experts) + ")");
    const auto v = load_values(a, "loads");
    // G[l][p] must not wrap: every rank's sum is checked first (one pass, per layer the loads
    // grouped by the rank owning their slot; slots outside 0..E-1 are rank_loads' error).
    const int H = p.pi.experts / p.pi.ep_ranks;
    std::vector<std::vector<std::uint64_t>> by_rank(static_cast<std::size_t>(p.pi.ep_ranks));
    for (int l = 0; l < p.pi.layers; ++l) {
        for (auto& r : by_rank)
            r.clear();
        for (int e = 0; e < p.pi.experts; ++e) {
            const int slot = p.pi.at(l, e);
            if (slot >= 0 && slot < p.pi.experts)
                by_rank[static_cast<std::size_t>(slot / H)].push_back(
                    v[static_cast<std::size_t>(l) * p.pi.experts + e]);
        }
        for (int r = 0; r < p.pi.ep_ranks; ++r)
            check_sum_fits(by_rank[static_cast<std::size_t>(r)], [&](const std::string& total) {
                return "rank_loads: the loads on EP rank " + std::to_string(r) + " at layer index " +
                       std::to_string(l) + " sum to " + total;
            });
    }
    const auto G = rank_loads(v, p.pi);
    py::array_t<std::uint64_t> out({static_cast<py::ssize_t>(p.pi.layers), static_cast<py::ssize_t>(p.pi.ep_ranks)});
    std::copy(G.begin(), G.end(), out.mutable_data());
    return out;
}

/// The MoE layer ids of L rows: `moe_layers` (a list of L ids) or 0..L-1 when None. InputError
/// naming `what` for a list of another length.
std::vector<int> rows_layers(const py::object& moe_layers, int L, const std::string& what) {
    std::vector<int> layers;
    if (moe_layers.is_none()) {
        for (int l = 0; l < L; ++l)
            layers.push_back(l);
        return layers;
    }
    layers = py_int_list(moe_layers, "moe_layers");
    if (static_cast<int>(layers.size()) != L)
        value_error("moe_layers names " + std::to_string(layers.size()) + " layers for " + std::to_string(L) +
                    " rows of " + what);
    return layers;
}

/// InputError "topology: 6 experts are not divisible by 4 EP ranks" unless 1 <= P divides E.
void check_ep_ranks(int experts, int ep_ranks) {
    if (ep_ranks < 1) value_error("ep_ranks must be >= 1 (got " + std::to_string(ep_ranks) + ")");
    if (experts % ep_ranks != 0)
        throw InputError("topology: " + std::to_string(experts) + " experts are not divisible by " +
                         std::to_string(ep_ranks) + " EP ranks");
}

/// Placement(logical_to_physical, ep_ranks, *, moe_layers=None, num_hidden_layers=None): an [L, E]
/// logical -> slot map whose rows are permutations of 0..E-1.
PyPlacement make_placement(const py::object& l2p, const py::object& ep_ranks_obj, const py::object& moe_layers,
                           const py::object& num_hidden_layers) {
    const int ep_ranks = py_int(ep_ranks_obj, "ep_ranks");
    const py::array a = as_array(l2p, "logical_to_physical");
    if (a.ndim() != 2 || a.shape(0) < 1 || a.shape(1) < 1 || a.shape(1) > std::numeric_limits<int>::max() ||
        a.shape(0) > std::numeric_limits<int>::max())
        value_error("logical_to_physical must be 2-dimensional [L, E] with L, E >= 1 (got shape " + shape_text(a) +
                    ")");
    const int L = static_cast<int>(a.shape(0)), E = static_cast<int>(a.shape(1));
    check_ep_ranks(E, ep_ranks);
    PyPlacement p;
    p.model = make_model(rows_layers(moe_layers, L, "logical_to_physical"), E, std::nullopt,
                         py_opt_int(num_hidden_layers, "num_hidden_layers"), "");
    p.pi.layers = L;
    p.pi.experts = E;
    p.pi.ep_ranks = ep_ranks;
    p.pi.slot = checked_values<int>(a, "logical_to_physical", 0, static_cast<std::uint64_t>(E - 1), "is negative");
    try {
        physical_to_logical(p.pi);
    } catch (const std::invalid_argument& e) { // a slot holding two experts: "layer 0 slot 3 holds experts 1 and 2"
        std::string why = e.what();
        const std::string own = "physical_to_logical: ";
        if (why.rfind(own, 0) == 0) why.erase(0, own.size());
        value_error("logical_to_physical: " + why + " (each row must be a permutation of 0..E-1)");
    }
    return p;
}

/// "<routepack.Placement 26 MoE layers x 64 experts on 8 EP ranks>".
std::string placement_repr(const PyPlacement& p) {
    return "<routepack.Placement " + counted(p.pi.layers, "MoE layer") + " x " + counted(p.pi.experts, "expert") +
           " on " + counted(p.pi.ep_ranks, "EP rank") + ">";
}

/// The read-only view of one of the maps of the Placement `self` (placement_maps).
template <class Pick> py::array placement_view(const py::object& self, Pick&& pick) {
    const auto& p = self.cast<const PyPlacement&>();
    return readonly_view(pick(placement_maps(p.pi, p.maps)), {p.pi.layers, p.pi.experts}, self);
}

namespace doc {

constexpr const char* kPlacement =
    R"doc(Layer-wise expert placement pi_l (paper section 3.3) of E experts on P EP ranks.

logical_to_physical[l, e] is the physical slot of logical expert e at MoE layer index
l; slot v is on EP rank v // (E / P). Made by routepack.place (LPT, Algorithm 1),
routepack.identity, Plan.placement, or from a map as here.

Parameters
----------
logical_to_physical : array_like of int, shape (L, E)
    The slot of each logical expert; each row a permutation of 0..E-1.
ep_ranks : int
    P, the EP ranks; P must divide E.
moe_layers : sequence of int, optional
    Keyword-only. The absolute decoder-layer ids of the L rows, ascending (default
    0..L-1).
num_hidden_layers : int, optional
    Keyword-only. The model's decoder layers (default max(moe_layers) + 1).

Raises
------
InputError
    A shape other than [L, E], a row that is not a permutation of 0..E-1, E not
    divisible by P, or moe_layers of another length than L.)doc";

constexpr const char* kInit =
    R"doc(__init__(self, /, logical_to_physical, ep_ranks, *, moe_layers=None, num_hidden_layers=None)
--

Makes the placement; the parameters are described in help(routepack.Placement).)doc";

constexpr const char* kLogicalToPhysical =
    R"doc(numpy.ndarray of int64, shape (L, E), read-only: the slot of each logical expert.

A view of the placement's values (no copy); writing to it raises ValueError.)doc";

constexpr const char* kPhysicalToLogical =
    R"doc(numpy.ndarray of int64, shape (L, E), read-only: the logical expert in each slot.

The inverse of logical_to_physical; a view of the placement's values (no copy).)doc";

constexpr const char* kMoves = R"doc(moves(self, /, previous)
--

The experts moved from `previous` to this placement: those whose EP rank changes.

Their state (weights, master weights, both Adam moments, FP8 scales) crosses GPUs
before the step starts; a move within a rank is a copy (slot_changes).

Parameters
----------
previous : Placement or Plan
    The placement the job runs on now, of the same L, E and P.

Returns
-------
list of list of tuple of int
    Per MoE layer index, the moves (expert, from_rank, to_rank, from_slot,
    to_slot), ascending expert.

Raises
------
InputError
    `previous` of another shape, or neither a Placement nor a Plan.)doc";

constexpr const char* kSlotChanges = R"doc(slot_changes(self, /, previous)
--

The slots whose expert changes from `previous` to this placement.

Copy the state of `expert` (weights, master weights, both Adam moments, FP8 scales)
from `from_slot` to `slot`.

Parameters
----------
previous : Placement or Plan
    The placement the job runs on now, of the same L, E and P.

Returns
-------
list of list of tuple of int
    Per MoE layer index, the changes (slot, expert, from_slot, previous_expert),
    ascending slot.

Raises
------
InputError
    `previous` of another shape, or neither a Placement nor a Plan.)doc";

constexpr const char* kRankLoads = R"doc(rank_loads(self, /, loads)
--

The rank loads G[l][p] (paper eq. 10): the loads of the experts each EP rank holds.

Parameters
----------
loads : array_like, shape (L, E)
    Tokens per MoE layer index and logical expert: non-negative integers, or floats
    holding whole numbers.

Returns
-------
numpy.ndarray of uint64, shape (L, P)
    G[l][p], the tokens of the experts on rank p at layer index l.

Raises
------
InputError
    Another shape, a negative or fractional load, or a rank's sum past 2**64-1
    (named by layer and rank; never wrapped).)doc";

constexpr const char* kExportMap = R"doc(export_map(self, /, format)
--

The expert map as JSON text, as ``routepack export-map --format FORMAT`` writes it.

Parameters
----------
format : {'routepack', 'sglang', 'vllm'}
    The map's format (docs/checkpoints.md).

Returns
-------
str
    The JSON text; routepack_map(), sglang_map() and vllm_map() give it parsed.

Raises
------
InputError
    An unknown format.)doc";

} // namespace doc

} // namespace

Placement placement_of(const py::handle& obj) {
    if (py::isinstance<PyPlacement>(obj)) return obj.cast<const PyPlacement&>().pi;
    if (py::isinstance<PyPlan>(obj)) return obj.cast<const PyPlan&>().file.placement;
    value_error("previous must be a routepack Placement or Plan (got " +
                py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>() + ")");
}

/// The previous placement of plan(..., previous=) / place(..., previous=) for `model`'s MoE layers on P
/// EP ranks, by the one reader of placements (core/plan/expert_map.h): a path (str or os.PathLike) to a
/// plan file or an expert map file (read_previous_placement: a FIFO, device or folder refused unread,
/// at most 256 MiB); a dict in those shapes (previous_placement_from_text of its JSON, origin
/// "previous"); a Plan or a Placement (their MoE layers, experts and EP ranks must be the window's);
/// an integer [L, E] logical -> slot matrix. None: no previous placement. ValueError with the reader's
/// text otherwise ("<path>: the plan is on 16 EP ranks, the topology has 8").
std::optional<Placement> previous_of(const py::object& obj, const ModelDescription& model, int P) {
    std::optional<PreviousStep> step = previous_step_of(obj, model, P);
    if (!step) return std::nullopt;
    return std::move(step->placement);
}

std::optional<PreviousStep> previous_step_of(const py::object& obj, const ModelDescription& model, int P) {
    if (obj.is_none()) return std::nullopt;
    const int L = model.num_moe_layers(), E = model.experts;
    const py::module_ os = py::module_::import("os");
    if (py::isinstance<py::str>(obj) || py::isinstance(obj, os.attr("PathLike"))) {
        const std::string p = os.attr("fsencode")(obj).cast<std::string>(); // bytes: any file name
        py::gil_scoped_release release;
        return read_previous_step(p, model, P);
    }
    if (py::isinstance<py::dict>(obj)) {
        const std::string text = py::module_::import("json").attr("dumps")(obj).cast<std::string>();
        return previous_step_from_text(text, "previous", model, P);
    }
    PreviousStep step;
    if (py::isinstance<PyPlan>(obj)) step.history = obj.cast<const PyPlan&>().file.history;
    Placement pi;
    if (py::isinstance<PyPlacement>(obj) || py::isinstance<PyPlan>(obj)) {
        const bool plan = py::isinstance<PyPlan>(obj);
        const ModelDescription& m = plan ? obj.cast<const PyPlan&>().file.model : obj.cast<const PyPlacement&>().model;
        pi = placement_of(obj);
        const std::string who = plan ? "previous: the plan" : "previous: the placement";
        if (m.moe_layers != model.moe_layers)
            value_error(who + " has MoE layers " + format_layer_list(m.moe_layers) + ", the window " +
                        format_layer_list(model.moe_layers));
        if (pi.ep_ranks != P)
            value_error(who + " is on " + std::to_string(pi.ep_ranks) + " EP ranks, the topology has " +
                        std::to_string(P));
    } else {
        const py::array a = as_array(obj, "previous");
        if (a.ndim() != 2)
            value_error("previous must be a Plan, a Placement, an expert map (a dict or a file) or an [L, E] "
                        "logical -> slot array (got shape " +
                        shape_text(a) + ")");
        const auto v = load_values(a, "previous");
        pi.layers = static_cast<int>(a.shape(0));
        pi.experts = static_cast<int>(a.shape(1));
        for (const std::uint64_t x : v)
            pi.slot.push_back(x < static_cast<std::uint64_t>(pi.experts) ? static_cast<int>(x) : -1);
    }
    pi.ep_ranks = P;
    if (pi.layers != L || pi.experts != E)
        value_error("previous placement has " + std::to_string(pi.layers) + " MoE layers x " +
                    std::to_string(pi.experts) + " experts; the window has " + std::to_string(L) + " x " +
                    std::to_string(E));
    try {
        physical_to_logical(pi);
    } catch (const std::invalid_argument& e) {
        value_error(std::string("previous placement: ") + e.what());
    }
    step.placement = std::move(pi);
    return step;
}

namespace {

/// _read_placement_text: the bytes of a placement file, read by read_input_file with the GIL released.
py::bytes read_placement_text(const py::object& path) {
    const std::string p = py::module_::import("os").attr("fsencode")(path).cast<std::string>();
    std::string text;
    {
        py::gil_scoped_release release;
        text = read_input_file(p, input_files::kPreviousPlacement);
    }
    return py::bytes(text);
}

/// _place: the LPT placement of [L, E] expert totals (the planner's stage 1), from `previous` within
/// `max_moves` when given.
PyPlacement place_loads(const py::object& loads, const py::object& ep_ranks_obj, const py::object& moe_layers,
                        const py::object& num_hidden_layers_obj, const py::object& previous_obj,
                        const py::object& max_moves_obj) {
    const int ep_ranks = py_int(ep_ranks_obj, "ep_ranks");
    if (!moe_layers.is_none()) py_int_list(moe_layers, "moe_layers"); // its own errors before the loads'
    const std::optional<int> num_hidden_layers = py_opt_int(num_hidden_layers_obj, "num_hidden_layers");
    const py::array a = as_array(loads, "loads");
    if (a.ndim() != 2 || a.shape(0) < 1 || a.shape(1) < 1)
        value_error("loads must be 2-dimensional [L, E] with L, E >= 1 (got shape " + shape_text(a) + ")");
    const int L = static_cast<int>(a.shape(0)), E = static_cast<int>(a.shape(1));
    check_ep_ranks(E, ep_ranks);
    PyPlacement p;
    p.model = make_model(rows_layers(moe_layers, L, "loads"), E, std::nullopt, num_hidden_layers, "");
    const auto v = load_values(a, "loads");
    // LPT adds loads per EP rank: a layer whose total passes 2**64-1 would wrap them.
    for (int l = 0; l < L; ++l)
        check_sum_fits(std::span(v).subspan(static_cast<std::size_t>(l) * E, E), [&](const std::string& total) {
            return "loads: layer " + std::to_string(l) + " sums to " + total;
        });
    const std::optional<Placement> previous = previous_of(previous_obj, p.model, ep_ranks);
    const std::int64_t max_moves = max_moves_obj.is_none() ? -1 : py_int_in(max_moves_obj, "max_moves", 0, kMaxMoves);
    py::gil_scoped_release release;
    // The LPT side of the placement comparison the planner, `routepack place` and the studio make.
    p.pi = compare_placements(v, L, E, ep_ranks).lpt;
    if (previous) {
        MoveRequest rq;
        rq.previous = &*previous;
        rq.max_moves = max_moves;
        p.pi = place_from_previous(v, p.pi, rq).placement;
    }
    return p;
}

/// _identity: pi_l(e) = e for `layers` MoE layers of `experts` experts on P EP ranks.
PyPlacement identity_of(const py::object& layers_obj, const py::object& experts_obj, const py::object& ep_ranks_obj,
                        const py::object& moe_layers_obj, const py::object& num_hidden_layers_obj) {
    const int layers = py_int(layers_obj, "layers");
    const int experts = py_int(experts_obj, "num_experts");
    const int ep_ranks = py_int(ep_ranks_obj, "ep_ranks");
    std::vector<int> moe_layers;
    if (moe_layers_obj.is_none())
        for (int l = 0; l < layers; ++l)
            moe_layers.push_back(l);
    else
        moe_layers = py_int_list(moe_layers_obj, "moe_layers");
    const std::optional<int> num_hidden_layers = py_opt_int(num_hidden_layers_obj, "num_hidden_layers");
    PyPlacement p;
    p.model = make_model(moe_layers, experts, std::nullopt, num_hidden_layers, "");
    if (static_cast<int>(moe_layers.size()) != layers) value_error("moe_layers must name every layer");
    if (ep_ranks < 1 || experts % ep_ranks != 0)
        throw InputError("topology: " + std::to_string(experts) + " experts are not divisible by " +
                         std::to_string(ep_ranks) + " EP ranks");
    p.pi = identity_placement(layers, experts, ep_ranks);
    return p;
}

} // namespace

/// The Placement class: maps, moves between placements, rank loads, expert maps.
void bind_placement(py::module_& m) {
    py::class_<PyPlacement>(m, "Placement", doc::kPlacement)
        .def(py::init(&make_placement), doc::kInit, py::arg("logical_to_physical"), py::arg("ep_ranks"), py::kw_only(),
             py::arg("moe_layers") = py::none(), py::arg("num_hidden_layers") = py::none())
        .def_property_readonly(
            "layers", [](const PyPlacement& p) { return p.pi.layers; }, "int: L, the MoE layers.")
        .def_property_readonly(
            "num_experts", [](const PyPlacement& p) { return p.pi.experts; }, "int: E, the experts per layer.")
        .def_property_readonly(
            "ep_ranks", [](const PyPlacement& p) { return p.pi.ep_ranks; }, "int: P, the EP ranks.")
        .def_property_readonly(
            "moe_layers", [](const PyPlacement& p) { return p.model.moe_layers; },
            "list of int: the absolute decoder-layer ids of the L rows.")
        .def_property_readonly(
            "num_hidden_layers", [](const PyPlacement& p) { return p.model.num_hidden_layers; },
            "int: the model's decoder layers.")
        .def_property_readonly(
            "logical_to_physical",
            [](const py::object& self) {
                return placement_view(
                    self, [](const PlacementMaps& x) -> const auto& { return x.logical_to_physical; });
            },
            doc::kLogicalToPhysical)
        .def_property_readonly(
            "physical_to_logical",
            [](const py::object& self) {
                return placement_view(
                    self, [](const PlacementMaps& x) -> const auto& { return x.physical_to_logical; });
            },
            doc::kPhysicalToLogical)
        .def(
            "moves", [](const PyPlacement& p, const py::object& prev) { return moves_list(p.pi, placement_of(prev)); },
            doc::kMoves, py::arg("previous"))
        .def(
            "slot_changes",
            [](const PyPlacement& p, const py::object& prev) { return slot_changes_list(p.pi, placement_of(prev)); },
            doc::kSlotChanges, py::arg("previous"))
        .def("rank_loads", &rank_loads_of, doc::kRankLoads, py::arg("loads"))
        .def(
            "export_map",
            [](const PyPlacement& p, const py::object& format) {
                return expert_map_json(p.pi, p.model, parse_expert_map_format(py_utf8(format, "format")));
            },
            doc::kExportMap, py::arg("format"))
        .def("__eq__", [](const PyPlacement& a,
                          const PyPlacement& b) { return a.pi == b.pi && a.model.moe_layers == b.model.moe_layers; })
        .def("__repr__", &placement_repr);
}

/// _place (the LPT placement of expert totals), _identity, _rank_max_over_mean, _read_placement_text.
void bind_placement_functions(py::module_& m) {
    m.def("_read_placement_text", &read_placement_text, R"doc(_read_placement_text(path)
--

The bytes of a previous placement's file (a plan or an expert map), read as every
reader of the module reads one (core/util/input_file.h): a regular file of at most
256 MiB; InputError "<path>: is a pipe (FIFO), not a placement file (plan or expert
map)" (likewise a folder, a device or a too large file; MissingFileError for an
absent one) without blocking or reading it.)doc",
          py::arg("path"));
    m.def("_place", &place_loads,
          R"doc(_place(loads, ep_ranks, moe_layers=None, num_hidden_layers=None, previous=None, max_moves=None)
--

routepack.place on [L, E] loads (the package sums per-sample counts first).)doc",
          py::arg("loads"), py::arg("ep_ranks"), py::arg("moe_layers") = py::none(),
          py::arg("num_hidden_layers") = py::none(), py::arg("previous") = py::none(),
          py::arg("max_moves") = py::none());
    m.def("_identity", &identity_of,
          R"doc(_identity(layers, num_experts, ep_ranks, moe_layers=None, num_hidden_layers=None)
--

routepack.identity.)doc",
          py::arg("layers"), py::arg("num_experts"), py::arg("ep_ranks"), py::arg("moe_layers") = py::none(),
          py::arg("num_hidden_layers") = py::none());
    m.def(
        "_rank_max_over_mean",
        [](const py::object& G) {
            const py::array a = as_array(G, "G");
            if (a.ndim() != 2) value_error("G must be [L, P]");
            return rank_max_over_mean(load_values(a, "G"), static_cast<int>(a.shape(0)), static_cast<int>(a.shape(1)));
        },
        R"doc(_rank_max_over_mean(G)
--

routepack.rank_max_over_mean.)doc",
        py::arg("G"));
}

} // namespace routepack::pyconv
