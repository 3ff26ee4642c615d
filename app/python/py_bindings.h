#pragma once
// What the binding files of the extension routepack._core (app/python/py_*.cpp) share: the Placement
// and Plan wrappers, the helpers more than one of them calls, and the bind_<subject> functions that
// routepack_module.cpp calls, in registration order, to add each subject's classes and functions.
#include "app/python/py_window.h"
#include "core/model/model.h"
#include "core/plan/plan_file.h"
#include "core/plan/score/placement.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace routepack::pyconv {

/// A placement with the model facts its maps need (absolute MoE layer ids, decoder layer count).
struct PyPlacement {
    Placement pi;
    ModelDescription model;
};

/// A plan: its plan file (`file`, the one serialized form, whether the plan was made or loaded) and
/// the file's text: a loaded plan's own, a made plan's written on the first to_json(), so a trainer
/// that only reads the rows does not pay for the JSON.
struct PyPlan {
    PlanFile file;
    mutable std::string json;
};

/// Absolute MoE layer ids: ascending, unique, >= 0.
std::vector<int> check_moe_layers(const std::vector<int>& moe_layers);

/// The model of a window or placement made in Python: `moe_layers` (check_moe_layers), `experts`,
/// top_k (default 1), num_hidden_layers (default from the MoE layers), validated.
ModelDescription make_model(const std::vector<int>& moe_layers, int experts, std::optional<int> top_k,
                            std::optional<int> num_hidden_layers, const std::string& name);

/// int64 [L, E] from row-major values (v.size() == L * E).
pybind11::array_t<std::int64_t> layer_matrix(const std::vector<int>& v, int L, int E);

/// uint64 [L, E] from row-major totals (v.size() == L * E).
pybind11::array_t<std::uint64_t> layer_totals_array(const std::vector<std::uint64_t>& v, int L, int E);

/// The placement of a Placement or a Plan; ValueError naming the type of anything else.
Placement placement_of(const pybind11::handle& obj);

/// The previous placement of plan(..., previous=) / place(..., previous=) for `model`'s MoE layers on P
/// EP ranks, by the one reader of placements (core/plan/expert_map.h): a path (str or os.PathLike) to a
/// plan file or an expert map file (read_previous_placement: a FIFO, device or folder refused unread,
/// at most 256 MiB); a dict in those shapes (previous_placement_from_text of its JSON, origin
/// "previous"); a Plan or a Placement (their MoE layers, experts and EP ranks must be the window's);
/// an integer [L, E] logical -> slot matrix. None: no previous placement. ValueError with the reader's
/// text otherwise ("<path>: the plan is on 16 EP ranks, the topology has 8").
std::optional<Placement> previous_of(const pybind11::object& obj, const ModelDescription& model, int P);

/// The Topology class (topology file rules, shipped topologies).
void bind_topology(pybind11::module_& m);

/// The Placement class: maps, moves between placements, rank loads, expert maps.
void bind_placement(pybind11::module_& m);

/// _place (the LPT placement of expert totals), _identity, _rank_max_over_mean, _read_placement_text.
void bind_placement_functions(pybind11::module_& m);

/// The Plan class: the plan file's rows, metrics, placement and maps.
void bind_plan(pybind11::module_& m);

/// _plan, _plan_window (the planner on its own thread), _plan_from_json, _load_plan.
void bind_plan_functions(pybind11::module_& m);

/// counts_from_routes.
void bind_routes(pybind11::module_& m);

/// The read-only Library and the Window it loads.
void bind_library(pybind11::module_& m);

/// expert_loads(): per-layer expert loads read straight from trace files (`routepack place --input`).
void bind_imports(pybind11::module_& m);

/// _moe_layouts, _moe_names: the one table of MoE tensor names, for routepack.torch.layouts.
void bind_moe_names(pybind11::module_& m);

} // namespace routepack::pyconv
