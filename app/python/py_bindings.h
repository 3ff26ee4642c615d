#pragma once
// What the binding files of the extension routepack._core (app/python/py_*.cpp) share: the Placement
// and Plan wrappers, the helpers more than one of them calls, and the bind_<subject> functions that
// routepack_module.cpp calls, in registration order, to add each subject's classes and functions.
#include "app/python/py_window.h"
#include "core/model/model.h"
#include "core/model/trace.h"
#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "core/plan/score/placement.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace routepack::pyconv {

/// A placement's maps as int64 [L, E] values, made on the first use and then kept: the read-only
/// numpy views of Placement and Plan (readonly_view) show them without a copy.
struct PlacementMaps {
    bool made = false;
    std::vector<std::int64_t> logical_to_physical, physical_to_logical;
};

/// The maps of `pi`, made in `maps` on the first call (the values never change after it).
const PlacementMaps& placement_maps(const Placement& pi, PlacementMaps& maps);

/// A placement with the model facts its maps need (absolute MoE layer ids, decoder layer count).
struct PyPlacement {
    Placement pi;
    ModelDescription model;
    mutable PlacementMaps maps{};
};

/// A plan: its plan file (`file`, the one serialized form, whether the plan was made or loaded) and
/// the file's text: a loaded plan's own, a made plan's written on the first to_json(), so a trainer
/// that only reads the rows does not pay for the JSON. `maps` and `cell_of` back the plan's
/// read-only numpy views (made on the first use).
struct PyPlan {
    /// A compared method's layout and the placement it runs on (Plan.method_layout).
    struct MethodLayout {
        std::string key; ///< method_key: "baseline", "reorder", ...
        Layout layout;
        Placement placement;
    };
    PlanFile file;
    mutable std::string json{};
    mutable PlacementMaps maps{};
    mutable std::vector<std::int64_t> cell_of{};
    /// Every compared method of a plan made in this process, in report order; empty for a plan read
    /// from text (the plan file keeps routepack's layout only).
    std::vector<MethodLayout> methods{};
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

/// A read-only numpy view of `values` as an int64 array of `shape` (no copy), whose base is `owner`,
/// the Python object holding `values` (the view keeps it alive). Writing to it raises ValueError
/// "assignment destination is read-only", and numpy refuses to make it writeable again.
pybind11::array readonly_view(const std::vector<std::int64_t>& values, const std::vector<pybind11::ssize_t>& shape,
                              const pybind11::handle& owner);

/// `a` with numpy's WRITEABLE flag cleared: for arrays made anew on each access, so that writing to
/// one raises instead of changing a copy nobody sees.
pybind11::array readonly(pybind11::array a);

/// `n` with its thousands grouped ("2,048"), for reprs.
std::string grouped(std::int64_t n);

/// "<n> <word>s" with the thousands grouped ("2,048 samples"; "1 sample"), for reprs.
std::string counted(std::int64_t n, const std::string& word);

/// The window plan() and Window() make from Python arrays: lengths [N], counts [N, L, E] with L =
/// len(moe_layers), the model (make_model) and sample ids (default "0".."N-1", unique, valid text).
/// InputError naming the argument and index otherwise.
Trace make_window(const pybind11::object& lengths, const pybind11::object& counts, const std::vector<int>& moe_layers,
                  std::optional<int> top_k, std::optional<int> num_hidden_layers, const pybind11::object& sample_ids,
                  const std::string& model_name);

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
/// previous_of with the run's history a plan carries (a Plan's, a plan file's or a plan dict's
/// "history" section, read by previous_step_from_text; none for maps, Placements and arrays).
std::optional<PreviousStep> previous_step_of(const pybind11::object& obj, const ModelDescription& model, int P);

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

/// _counts_from_routes (routepack.counts_from_routes).
void bind_routes(pybind11::module_& m);

/// The read-only Library and the Window it loads (or Window() makes from arrays).
void bind_library(pybind11::module_& m);

/// expert_loads(): per-layer expert loads read straight from trace files (`routepack place --input`).
void bind_imports(pybind11::module_& m);

/// _moe_layouts, _moe_names: the one table of MoE tensor names, for routepack.torch.layouts.
void bind_moe_names(pybind11::module_& m);

} // namespace routepack::pyconv
