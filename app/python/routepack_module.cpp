// The Python extension `routepack._core` (pybind11): the Qt-free core as library calls a trainer
// makes every step. Only the public core API is used (core/plan/planner.h, core/plan/plan_file.h,
// core/plan/placement.h, core/model/route_counts.h, core/plan/expert_map.h, core/model/topology.h, storage/library.h).
// Errors: InputError and std::invalid_argument become ValueError with the core's (= the CLI's) text;
// bad shapes, dtypes, negative counts and NaN are refused with ValueError naming the argument and index.
// Every argument is converted by app/python/py_convert.h (one rule for integers, numbers, arrays of
// either byte order, text, paths; exceptions an argument raises itself propagate).
#include "app/python/py_convert.h"
#include "app/python/py_window.h"
#include "core/import/import.h"
#include "core/model/limits.h"
#include "core/model/route_counts.h"
#include "core/model/topology.h"
#include "core/plan/budget_table.h"
#include "core/plan/budgets_json.h"
#include "core/plan/expert_map.h"
#include "core/plan/metrics_json.h"
#include "core/plan/placement.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "storage/library.h"

#include <nlohmann/json.hpp>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>

namespace py = pybind11;
using namespace routepack;

namespace {

using namespace routepack::pyconv;

/// Absolute MoE layer ids: ascending, unique, >= 0.
std::vector<int> check_moe_layers(const std::vector<int>& moe_layers) {
    if (moe_layers.empty()) value_error("moe_layers must name at least one MoE layer");
    for (std::size_t i = 0; i < moe_layers.size(); ++i) {
        if (moe_layers[i] < 0)
            value_error("moe_layers[" + std::to_string(i) + "] = " + std::to_string(moe_layers[i]) + " is negative");
        if (i > 0 && moe_layers[i] <= moe_layers[i - 1])
            value_error("moe_layers[" + std::to_string(i) + "] = " + std::to_string(moe_layers[i]) +
                        " is not above moe_layers[" + std::to_string(i - 1) +
                        "] = " + std::to_string(moe_layers[i - 1]) + " (absolute decoder-layer ids, ascending)");
    }
    return moe_layers;
}

ModelDescription make_model(const std::vector<int>& moe_layers, int experts, std::optional<int> top_k,
                            std::optional<int> num_hidden_layers, const std::string& name) {
    ModelDescription m;
    m.name = name;
    m.moe_layers = check_moe_layers(moe_layers);
    m.experts = experts;
    m.top_k = top_k.value_or(1);
    m.num_hidden_layers = num_hidden_layers ? *num_hidden_layers : hidden_layers_for(m.moe_layers, "moe_layers");
    m.source = "python";
    m.validate();
    return m;
}

// ---------------------------------------------------------------------------------------------
// Topology

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

// ---------------------------------------------------------------------------------------------
// Placement and plan wrappers

/// ValueError "<where(total)>, more than a uint64 holds (at most 18446744073709551615)" when the
/// values sum past 2**64-1 (summed in 128 bits, so the total in the message is exact).
__extension__ typedef unsigned __int128 uint128_sum;

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

/// A placement with the model facts its maps need (absolute MoE layer ids, decoder layer count).
struct PyPlacement {
    Placement pi;
    ModelDescription model;
};

py::array_t<std::int64_t> layer_matrix(const std::vector<int>& v, int L, int E) {
    py::array_t<std::int64_t> out({static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(E)});
    auto* p = out.mutable_data();
    for (std::size_t i = 0; i < v.size(); ++i)
        p[i] = v[i];
    return out;
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

Placement placement_of(const py::handle& obj);

/// A plan: its plan file (`file`, the one serialized form, whether the plan was made or loaded) and
/// the file's text: a loaded plan's own, a made plan's written on the first to_json(), so a trainer
/// that only reads the rows does not pay for the JSON.
struct PyPlan {
    PlanFile file;
    mutable std::string json;
};

Placement placement_of(const py::handle& obj) {
    if (py::isinstance<PyPlacement>(obj)) return obj.cast<const PyPlacement&>().pi;
    if (py::isinstance<PyPlan>(obj)) return obj.cast<const PyPlan&>().file.placement;
    value_error("previous must be a routepack Placement or Plan (got " +
                py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>() + ")");
}

/// One method's LayoutMetrics as Plan.metrics gives it: "score" as the (max_u, sum_u, max_j) tuple,
/// then the fields of write_layout_metrics (core/plan/metrics_json.h), integers as int, the rest float.
py::dict metrics_dict(const LayoutMetrics& x) {
    py::dict d;
    d["score"] = py::make_tuple(x.score.max_u, x.score.sum_u, x.score.max_j);
    nlohmann::ordered_json fields; // the plan file's codec: the same keys, in the same order
    write_layout_metrics(x, fields);
    for (const auto& [key, value] : fields.items()) {
        if (value.is_number_integer())
            d[py::str(key)] = py::int_(value.get<std::int64_t>());
        else
            d[py::str(key)] = py::float_(value.get<double>());
    }
    return d;
}

/// The plan of a plan file's text; to_json() gives the text back without the file's final newline.
PyPlan plan_from_text(std::string text, const std::string& origin) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
        text.pop_back();
    PyPlan p;
    p.file = parse_plan(text, origin);
    p.json = std::move(text);
    return p;
}

// ---------------------------------------------------------------------------------------------
// plan(): the planner on its own thread, the GIL released, cancellation from Python

/// The master seed: an integer in 0..2**64-1 (py_uint64), ValueError otherwise naming the value.
std::uint64_t py_seed(const py::object& v) {
    return py_uint64(v, "seed");
}

/// The module's first names of two budgets, still read (with a DeprecationWarning) in plan()'s
/// `budgets` dict: old name -> JSON key.
constexpr std::pair<const char*, const char*> kOldBudgetNames[] = {{"seeds", "seeds_M"}, {"steps", "steps_per_level"}};

/// True for the budget-table rows that plan() takes as arguments of its own (workers, time_limit_s),
/// not as `budgets` keys.
bool plan_argument(const BudgetRow& row) {
    return row.run_setting || std::string(row.key) == "time_limit_s";
}

/// plan()'s `budgets` dict: keys are the budgets JSON keys (core/plan/budget_table.h) but workers and
/// time_limit_s (arguments of plan()); "seeds" and "steps" are read as seeds_M and steps_per_level
/// with a DeprecationWarning. Integers are range-checked here ("budgets['levels'] = 1001 is too large
/// (at most 1000)", naming the key as given); numbers must be finite and in the table's range
/// ("budgets['cooling'] = 1.5 must be in (0, 1]"); anytime is a bool. ValueError for an unknown key, a key given under
/// both names, or a value of the wrong type.
PlannerBudgets make_budgets(const py::object& budgets) {
    PlannerBudgets b;
    if (budgets.is_none()) return b;
    if (!py::isinstance<py::dict>(budgets)) value_error("budgets must be a dict of budget names to numbers");
    const py::dict dict = budgets.cast<py::dict>();
    for (auto [k, v] : dict) {
        const std::string key = py::str(k);
        std::string json_key = key;
        for (const auto& [old_name, new_key] : kOldBudgetNames)
            if (key == old_name) {
                if (dict.contains(new_key))
                    value_error("budgets: give either '" + std::string(new_key) + "' or its old name '" + key +
                                "', not both");
                py::module_::import("warnings")
                    .attr("warn")("budgets['" + key + "'] is deprecated: use budgets['" + new_key +
                                      "'] (the budgets JSON key)",
                                  py::reinterpret_borrow<py::object>(PyExc_DeprecationWarning), 2);
                json_key = new_key;
            }
        const BudgetRow* row = find_budget(json_key);
        if (row && plan_argument(*row))
            value_error("budgets: '" + key + "' is an argument of plan(), not a budgets key");
        if (!row) {
            std::string known;
            for (const BudgetRow& r : budget_table())
                if (!plan_argument(r)) known += (known.empty() ? "" : ", ") + std::string(r.key);
            value_error("budgets: unknown budget '" + key + "' (known: " + known + ")");
        }
        const std::string what = "budgets['" + key + "']";
        switch (row->kind) {
        case BudgetKind::Int:
        case BudgetKind::Int64:
            set_budget_int(*row, b,
                           py_int_in(v, what, static_cast<std::int64_t>(row->lo), static_cast<std::int64_t>(row->hi)));
            break;
        case BudgetKind::Double: {
            const double x = py_float(v, what);
            if (!std::isfinite(x)) value_error("budgets: every budget must be finite");
            // The budget table's range, in the module's words like the integers' (the planner's own
            // check never sees a value out of it).
            if (!budget_in_range(*row, x)) value_error(what + " = " + repr_text(v) + " must be " + row->rule);
            set_budget_double(*row, b, x);
            break;
        }
        case BudgetKind::Bool:
            try {
                set_budget_int(*row, b, v.cast<bool>() ? 1 : 0);
            } catch (const py::cast_error&) {
                value_error(what + " must be a number");
            }
            break;
        }
    }
    return b;
}

Trace make_window(const py::object& lengths_obj, const py::object& counts_obj, const std::vector<int>& moe_layers,
                  std::optional<int> top_k, std::optional<int> num_hidden_layers, const py::object& sample_ids,
                  const std::string& model_name) {
    const py::array lengths = as_array(lengths_obj, "lengths");
    const py::array counts = as_array(counts_obj, "counts");
    if (lengths.ndim() != 1) value_error("lengths must be 1-dimensional [N] (got shape " + shape_text(lengths) + ")");
    if (counts.ndim() != 3)
        value_error("counts must be 3-dimensional [N, L, E] (got shape " + shape_text(counts) + ")");
    const auto n = lengths.shape(0);
    if (counts.shape(0) != n || counts.shape(1) != static_cast<py::ssize_t>(moe_layers.size()) || counts.shape(2) < 1)
        value_error("counts has shape " + shape_text(counts) + "; expected (N, L, E) = (" + std::to_string(n) + ", " +
                    std::to_string(moe_layers.size()) + ", E >= 1) for " + std::to_string(n) +
                    " lengths and len(moe_layers) = " + std::to_string(moe_layers.size()));
    if (counts.shape(2) > std::numeric_limits<int>::max()) value_error("counts: too many experts");
    Trace w;
    w.model = make_model(moe_layers, static_cast<int>(counts.shape(2)), top_k, num_hidden_layers, model_name);
    w.format = "python";
    const auto len = checked_values<std::int64_t>(
        lengths, "lengths", 1, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()), "must be >= 1");
    w.counts =
        checked_values<std::uint32_t>(counts, "counts", 0, std::numeric_limits<std::uint32_t>::max(), "is negative");
    std::vector<std::string> ids;
    if (!sample_ids.is_none()) {
        const auto items = py_items(sample_ids, "sample_ids", "str");
        for (std::size_t i = 0; i < items.size(); ++i)
            ids.push_back(py_utf8(items[i], "sample_ids[" + std::to_string(i) + "]"));
        if (static_cast<py::ssize_t>(ids.size()) != n)
            value_error("sample_ids holds " + std::to_string(ids.size()) + " ids for " + std::to_string(n) +
                        " samples");
        // A plan names each sample once (its file is refused on reading otherwise).
        std::unordered_map<std::string, std::size_t> first;
        for (std::size_t i = 0; i < ids.size(); ++i)
            if (const auto [at, fresh] = first.emplace(ids[i], i); !fresh)
                value_error("sample_ids[" + std::to_string(i) + "]: duplicate sample id '" + ids[i] +
                            "' (also sample_ids[" + std::to_string(at->second) + "])");
    }
    w.samples.resize(static_cast<std::size_t>(n));
    for (py::ssize_t i = 0; i < n; ++i) {
        SampleInfo& s = w.samples[static_cast<std::size_t>(i)];
        s.id = ids.empty() ? std::to_string(i) : ids[static_cast<std::size_t>(i)];
        s.length = len[static_cast<std::size_t>(i)];
        s.routed_rows = s.length;
        s.length_rule = LengthRule::ExplicitTokens;
    }
    return w;
}

/// The plan file text (written on first use). A plan file is UTF-8 JSON: a name or sample id stored
/// by an older import that is not UTF-8 is refused naming it, e.g. "plan: sample id 'bad-\xff' (sample
/// 0 of trace 'syn') is not valid UTF-8, so no plan file can hold it (re-import the trace)".
const std::string& plan_json(const PyPlan& p) {
    if (p.json.empty()) {
        const PlanFile& f = p.file;
        auto escaped = [](const std::string& s) { return std::string(py::str(message_text(s.c_str()))); };
        const std::string trace = "trace '" + escaped(f.trace_name) + "'";
        auto refuse = [&](const std::string& what) {
            value_error("plan: " + what + " is not valid UTF-8, so no plan file can hold it (re-import the trace)");
        };
        if (!is_utf8(f.trace_name)) refuse("the name of " + trace);
        if (!is_utf8(f.window_name)) refuse("window name '" + escaped(f.window_name) + "' of " + trace);
        if (!is_utf8(f.model.name)) refuse("model name '" + escaped(f.model.name) + "' of " + trace);
        for (std::size_t i = 0; i < f.sample_ids.size(); ++i)
            if (!is_utf8(f.sample_ids[i]))
                refuse("sample id '" + escaped(f.sample_ids[i]) + "' (sample " + std::to_string(i) + " of " + trace +
                       ")");
        p.json = plan_file_to_json(f);
    }
    return p.json;
}

struct PlannerThread {
    std::mutex m;
    std::condition_variable cv;
    std::deque<PlanEvent> events;
    bool done = false;
    std::optional<PlanResult> result;
    std::exception_ptr error;
    std::atomic<bool> cancel{false};
};

/// uint64 [L, E] from row-major totals (v.size() == L * E).
py::array_t<std::uint64_t> layer_totals_array(const std::vector<std::uint64_t>& v, int L, int E) {
    py::array_t<std::uint64_t> out({static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(E)});
    std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
}

/// The planner on its own thread with the GIL released: progress events delivered on the calling
/// thread (returning False cancels), Ctrl-C stops it and propagates; the plan or the planner's error.
PyPlan run_plan_input(PlanInput in, const py::object& progress);

/// The previous placement of plan(..., previous=) / place(..., previous=) for `model`'s MoE layers on P
/// EP ranks, by the one reader of placements (core/plan/expert_map.h): a path (str or os.PathLike) to a
/// plan file or an expert map file (read_previous_placement: a FIFO, device or folder refused unread,
/// at most 256 MiB); a dict in those shapes (previous_placement_from_text of its JSON, origin
/// "previous"); a Plan or a Placement (their MoE layers, experts and EP ranks must be the window's);
/// an integer [L, E] logical -> slot matrix. None: no previous placement. ValueError with the reader's
/// text otherwise ("<path>: the plan is on 16 EP ranks, the topology has 8").
std::optional<Placement> previous_of(const py::object& obj, const ModelDescription& model, int P) {
    if (obj.is_none()) return std::nullopt;
    const int L = model.num_moe_layers(), E = model.experts;
    const py::module_ os = py::module_::import("os");
    if (py::isinstance<py::str>(obj) || py::isinstance(obj, os.attr("PathLike"))) {
        const std::string p = os.attr("fsencode")(obj).cast<std::string>(); // bytes: any file name
        py::gil_scoped_release release;
        return read_previous_placement(p, model, P);
    }
    if (py::isinstance<py::dict>(obj)) {
        const std::string text = py::module_::import("json").attr("dumps")(obj).cast<std::string>();
        return previous_placement_from_text(text, "previous", model, P);
    }
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
    return pi;
}

/// One window planned with the arguments of plan() (budgets dict, seed, workers, time limit, progress:
/// checked by check_plan_args and make_budgets), through run_plan_input.
PyPlan plan_trace(Trace window, const std::string& trace_name, const std::string& window_name, const Topology& topology,
                  const py::object& seed, int workers, double time_limit_s, const py::object& budgets,
                  const py::object& progress, const py::object& previous) {
    PlanInput in;
    in.previous = previous_of(previous, window.model, topology.ep_ranks);
    in.window = std::move(window);
    in.trace_name = trace_name;
    in.window_name = window_name;
    in.topology = topology;
    in.budgets = make_budgets(budgets);
    in.budgets.seed = py_seed(seed);
    in.budgets.workers = workers;
    in.budgets.time_limit_s = time_limit_s;
    return run_plan_input(std::move(in), progress);
}

/// ValueError for workers < 0, a time limit that is not finite and >= 0, a progress that is neither
/// callable nor None.
void check_plan_args(int workers, double time_limit_s, const py::object& progress) {
    if (workers < 0) value_error("workers must be >= 0 (0 = all cores; got " + std::to_string(workers) + ")");
    if (!std::isfinite(time_limit_s) || time_limit_s < 0)
        value_error("time_limit_s must be finite and >= 0 (0 = none)");
    if (!progress.is_none() && !PyCallable_Check(progress.ptr())) value_error("progress must be callable or None");
}

PyPlan run_plan(const py::object& lengths, const py::object& counts, const Topology& topology,
                const py::object& moe_layers, const py::object& seed, const py::object& workers,
                const py::object& time_limit_s, const py::object& budgets, const py::object& progress,
                const py::object& top_k, const py::object& num_hidden_layers, const py::object& sample_ids,
                const py::object& trace_name, const py::object& window_name, const py::object& model_name,
                const py::object& previous) {
    const int w = py_int(workers, "workers");
    const double limit = py_float(time_limit_s, "time_limit_s");
    check_plan_args(w, limit, progress);
    return plan_trace(make_window(lengths, counts, py_int_list(moe_layers, "moe_layers"), py_opt_int(top_k, "top_k"),
                                  py_opt_int(num_hidden_layers, "num_hidden_layers"), sample_ids,
                                  py_utf8(model_name, "model_name")),
                      py_utf8(trace_name, "trace_name"), py_utf8(window_name, "window_name"), topology, seed, w, limit,
                      budgets, progress, previous);
}

/// plan_window: a library window planned as `routepack plan --db` plans it, its per-token routes
/// included (Library.load reads them), so on more than one node the plan has the communication
/// figures and the grouter / routepack+comm methods. Argument errors as run_plan.
PyPlan run_plan_window(const PyWindow& w, const Topology& topology, const py::object& seed, const py::object& workers,
                       const py::object& time_limit_s, const py::object& budgets, const py::object& progress,
                       const py::object& previous) {
    const int n = py_int(workers, "workers");
    const double limit = py_float(time_limit_s, "time_limit_s");
    check_plan_args(n, limit, progress);
    return plan_trace(*w.trace, w.trace_name, w.window_name, topology, seed, n, limit, budgets, progress, previous);
}

PyPlan run_plan_input(PlanInput in, const py::object& progress) {
    auto st = std::make_shared<PlannerThread>();
    std::thread worker([st, in = std::move(in)] {
        try {
            PlanResult r = plan_window(
                in,
                [&st](const PlanEvent& e) {
                    std::lock_guard lk(st->m);
                    if (st->events.size() >= 256) st->events.pop_front(); // the caller only needs recent progress
                    st->events.push_back(e);
                    st->cv.notify_all();
                },
                &st->cancel);
            std::lock_guard lk(st->m);
            st->result = std::move(r);
        } catch (...) {
            std::lock_guard lk(st->m);
            st->error = std::current_exception();
        }
        std::lock_guard lk(st->m);
        st->done = true;
        st->cv.notify_all();
    });
    // Whatever leaves this function (a Python exception included) first stops and joins the planner.
    struct Joiner {
        std::thread& t;
        PlannerThread& st;
        ~Joiner() {
            if (!t.joinable()) return;
            st.cancel = true;
            py::gil_scoped_release release;
            t.join();
        }
    } joiner{worker, *st};

    std::optional<py::error_already_set> interrupted;
    // progress is also called while no event arrives (the last stage and fraction again, every
    // kProgressRepeat), so that returning False stops a long stage as soon as Ctrl-C would.
    using Clock = std::chrono::steady_clock;
    constexpr auto kProgressRepeat = std::chrono::milliseconds(100);
    std::optional<PlanEvent> last;
    auto last_call = Clock::now();
    while (true) {
        std::deque<PlanEvent> events;
        bool done = false;
        {
            py::gil_scoped_release release;
            std::unique_lock lk(st->m);
            st->cv.wait_for(lk, std::chrono::milliseconds(50), [&] { return st->done || !st->events.empty(); });
            events.swap(st->events);
            done = st->done;
        }
        if (!interrupted && PyErr_CheckSignals() != 0) {
            interrupted.emplace(); // fetches KeyboardInterrupt (or whatever the handler raised)
            st->cancel = true;
        }
        if (!events.empty()) last = events.back();
        if (events.empty() && !done && last && Clock::now() - last_call >= kProgressRepeat) events.push_back(*last);
        if (!interrupted && !progress.is_none() && !st->cancel && !events.empty()) {
            last_call = Clock::now();
            for (const auto& e : events) {
                py::object keep = progress(e.stage, e.fraction);
                if (keep.ptr() == Py_False) {
                    st->cancel = true;
                    break;
                }
            }
        }
        if (done) break;
    }
    {
        py::gil_scoped_release release;
        worker.join();
    }
    if (interrupted) throw *interrupted;
    if (st->error) std::rethrow_exception(st->error);
    PyPlan p;
    p.file = plan_file_of(*st->result);
    return p;
}

// ---------------------------------------------------------------------------------------------
// counts_from_routes

struct RouteBlock {
    py::array routes; ///< C-contiguous [T][L_rows][K]
    const std::uint8_t* valid = nullptr;
    std::int64_t tokens = 0;
    std::size_t offset = 0; ///< element offset of the block in `routes`
};

template <class T>
RouteCountError count_block(const py::array& a, std::size_t offset, std::int64_t tokens, int layer_rows, int k,
                            const std::uint8_t* valid, const std::vector<int>& index, int E, std::int32_t* out) {
    const T* p = static_cast<const T*>(a.data()) + offset;
    return add_route_counts<T>(p, tokens, layer_rows, k, valid, index, E, out);
}

RouteCountError count_any(const py::array& a, std::size_t offset, std::int64_t tokens, int layer_rows, int k,
                          const std::uint8_t* valid, const std::vector<int>& index, int E, std::int32_t* out) {
    const char kind = a.dtype().kind();
    const auto size = a.dtype().itemsize();
    if (kind == 'i' && size == 1)
        return count_block<std::int8_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
    if (kind == 'i' && size == 2)
        return count_block<std::int16_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
    if (kind == 'i' && size == 4)
        return count_block<std::int32_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
    if (kind == 'i' && size == 8)
        return count_block<std::int64_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
    return count_block<std::uint8_t>(a, offset, tokens, layer_rows, k, valid, index, E, out);
}

py::array routes_array(const py::handle& obj, const std::string& what) {
    py::array a = as_array(obj, what);
    const char kind = a.dtype().kind();
    const auto size = a.dtype().itemsize();
    if (!((kind == 'i' && (size == 1 || size == 2 || size == 4 || size == 8)) || (kind == 'u' && size == 1)))
        value_error(what + " must be int16, int32 or uint8 (int8 and int64 also accepted; got dtype " + dtype_name(a) +
                    ")");
    // The counting reads the buffer as native integers: a big-endian ('>i2') array is converted first.
    return native_c_array(a);
}

py::array_t<std::int32_t> counts_from_routes(const py::object& routes, const py::object& num_experts_obj,
                                             const py::object& moe_layers_obj, const py::object& layer_axis_obj,
                                             const py::object& valid) {
    const int num_experts = py_int(num_experts_obj, "num_experts");
    const std::vector<int> moe_layers = py_int_list(moe_layers_obj, "moe_layers");
    const std::string layer_axis = py_utf8(layer_axis_obj, "layer_axis");
    if (num_experts < 1) value_error("num_experts must be >= 1 (got " + std::to_string(num_experts) + ")");
    if (layer_axis != "all" && layer_axis != "moe")
        value_error("layer_axis must be 'all' or 'moe' (got '" + layer_axis + "')");
    check_moe_layers(moe_layers);
    const bool all = layer_axis == "all";
    std::vector<RouteBlock> blocks;
    std::vector<py::array> keep; // arrays the blocks point into
    int layer_rows = -1, k = -1;
    auto check_lk = [&](const py::array& a, int dim_l, const std::string& what) {
        const int L = static_cast<int>(a.shape(dim_l)), K = static_cast<int>(a.shape(dim_l + 1));
        if (layer_rows < 0) {
            layer_rows = L;
            k = K;
        } else if (L != layer_rows || K != k) {
            value_error(what + " has shape " + shape_text(a) + "; every sample needs the same [L, K] = [" +
                        std::to_string(layer_rows) + ", " + std::to_string(k) + "]");
        }
    };
    if (py::isinstance<py::list>(routes) || py::isinstance<py::tuple>(routes)) {
        if (!valid.is_none())
            value_error("valid applies to a [B, S, L, K] array; a list of [T, L, K] arrays has no mask");
        const py::sequence seq = routes.cast<py::sequence>();
        for (std::size_t i = 0; i < seq.size(); ++i) {
            const std::string what = "routes[" + std::to_string(i) + "]";
            py::array a = routes_array(seq[i], what);
            if (a.ndim() != 3) value_error(what + " must be 3-dimensional [T, L, K] (got shape " + shape_text(a) + ")");
            check_lk(a, 1, what);
            keep.push_back(a);
            blocks.push_back(RouteBlock{a, nullptr, a.shape(0), 0});
        }
    } else {
        py::array a = routes_array(routes, "routes");
        if (a.ndim() != 4)
            value_error("routes must be [B, S, L, K] or a list of [T, L, K] arrays (got shape " + shape_text(a) + ")");
        check_lk(a, 2, "routes");
        keep.push_back(a);
        const auto B = a.shape(0), S = a.shape(1);
        const std::uint8_t* mask = nullptr;
        if (!valid.is_none()) {
            py::array m = as_array(valid, "valid", true);
            if (m.ndim() != 2 || m.shape(0) != B || m.shape(1) != S)
                value_error("valid has shape " + shape_text(m) + "; expected [B, S] = (" + std::to_string(B) + ", " +
                            std::to_string(S) + ")");
            const char kind = m.dtype().kind();
            if (kind != 'b' && kind != 'i' && kind != 'u')
                value_error("valid must be a bool or integer mask (got dtype " + dtype_name(m) + ")");
            // Normalize to one byte per token: nonzero = the token's routes count.
            py::array_t<std::uint8_t> bytes({B, S});
            auto* dst = bytes.mutable_data();
            py::array mb = py::array::ensure(m.attr("astype")("bool"), py::array::c_style);
            const auto* src = static_cast<const bool*>(mb.data());
            for (py::ssize_t i = 0; i < B * S; ++i)
                dst[i] = src[i] ? 1 : 0;
            keep.push_back(bytes);
            mask = bytes.data();
        }
        for (py::ssize_t b = 0; b < B; ++b)
            blocks.push_back(RouteBlock{a, mask ? mask + b * S : nullptr, S,
                                        static_cast<std::size_t>(b) * static_cast<std::size_t>(S) * layer_rows * k});
    }
    const int Lm = static_cast<int>(moe_layers.size());
    const std::vector<int> index = blocks.empty() ? std::vector<int>{} : route_layer_rows(layer_rows, all, moe_layers);
    py::array_t<std::int32_t> out(
        {static_cast<py::ssize_t>(blocks.size()), static_cast<py::ssize_t>(Lm), static_cast<py::ssize_t>(num_experts)});
    std::int32_t* o = out.mutable_data();
    std::fill(o, o + out.size(), 0);
    const std::size_t stride = static_cast<std::size_t>(Lm) * num_experts;
    std::size_t bad_block = 0;
    RouteCountError bad;
    {
        py::gil_scoped_release release;
        for (std::size_t i = 0; i < blocks.size() && bad.ok; ++i) {
            bad = count_any(blocks[i].routes, blocks[i].offset, blocks[i].tokens, layer_rows, k, blocks[i].valid, index,
                            num_experts, o + i * stride);
            bad_block = i;
        }
    }
    if (!bad.ok) {
        const bool list = py::isinstance<py::list>(routes) || py::isinstance<py::tuple>(routes);
        const std::string where =
            list ? "routes[" + std::to_string(bad_block) + "][" + std::to_string(bad.token) + ", " +
                       std::to_string(bad.layer_row) + ", " + std::to_string(bad.choice) + "]"
                 : "routes[" + std::to_string(bad_block) + ", " + std::to_string(bad.token) + ", " +
                       std::to_string(bad.layer_row) + ", " + std::to_string(bad.choice) + "]";
        value_error(where + " = " + std::to_string(bad.value) + " is outside 0.." + std::to_string(num_experts - 1) +
                    " (-1 = no route)");
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Library (read-only)

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

/// The Placement class: maps, moves between placements, rank loads, expert maps.
void bind_placement(py::module_& m) {
    py::class_<PyPlacement>(m, "Placement", R"doc(
Layer-wise expert placement pi_l (paper section 3.3): logical_to_physical[l, e] = physical slot of
logical expert e at MoE layer index l; slot v is on EP rank v // (E / P).)doc")
        .def_property_readonly("layers", [](const PyPlacement& p) { return p.pi.layers; })
        .def_property_readonly("num_experts", [](const PyPlacement& p) { return p.pi.experts; })
        .def_property_readonly("ep_ranks", [](const PyPlacement& p) { return p.pi.ep_ranks; })
        .def_property_readonly("moe_layers", [](const PyPlacement& p) { return p.model.moe_layers; })
        .def_property_readonly("num_hidden_layers", [](const PyPlacement& p) { return p.model.num_hidden_layers; })
        .def_property_readonly(
            "logical_to_physical",
            [](const PyPlacement& p) { return layer_matrix(p.pi.slot, p.pi.layers, p.pi.experts); },
            "int64 [L, E]: slot of each logical expert")
        .def_property_readonly(
            "physical_to_logical",
            [](const PyPlacement& p) { return layer_matrix(physical_to_logical(p.pi), p.pi.layers, p.pi.experts); },
            "int64 [L, E]: logical expert in each physical slot")
        .def(
            "moves", [](const PyPlacement& p, const py::object& prev) { return moves_list(p.pi, placement_of(prev)); },
            py::arg("previous"), R"doc(
The experts moved from `previous` (a Placement or Plan of the same shape) to this one: the logical
experts whose EP rank changes, per MoE layer index: [L] lists of (expert, from_rank, to_rank,
from_slot, to_slot) tuples, ascending expert. Their state (weights, master weights, both Adam
moments, FP8 scales) crosses GPUs before the step starts.)doc")
        .def(
            "slot_changes",
            [](const PyPlacement& p, const py::object& prev) { return slot_changes_list(p.pi, placement_of(prev)); },
            py::arg("previous"), R"doc(
The slots whose expert changes from `previous` (a Placement or Plan of the same shape) to this one,
per MoE layer index: [L] lists of (slot, expert, from_slot, previous_expert) tuples, ascending slot.
Copy the state of `expert` (weights, master weights, both Adam moments, FP8 scales) from
`from_slot` to `slot`.)doc")
        .def(
            "rank_loads",
            [](const PyPlacement& p, const py::object& loads) {
                const py::array a = as_array(loads, "loads");
                if (a.ndim() != 2 || a.shape(0) != p.pi.layers || a.shape(1) != p.pi.experts)
                    value_error("loads has shape " + shape_text(a) + "; expected [L, E] = (" +
                                std::to_string(p.pi.layers) + ", " + std::to_string(p.pi.experts) + ")");
                const auto v = load_values(a, "loads");
                // G[l][p] must not wrap: every rank's sum is checked first (one pass, per layer the
                // loads grouped by the rank owning their slot; slots outside 0..E-1 are rank_loads' error).
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
                py::array_t<std::uint64_t> out(
                    {static_cast<py::ssize_t>(p.pi.layers), static_cast<py::ssize_t>(p.pi.ep_ranks)});
                std::copy(G.begin(), G.end(), out.mutable_data());
                return out;
            },
            py::arg("loads"),
            "uint64 [L, P]: G[l][p] = sum of loads of the experts on rank p (eq. 10). loads: [L, E] non-negative "
            "token counts (integers, or floats holding whole numbers). ValueError naming the layer and rank when "
            "a sum passes 2**64-1 (never wrapped).")
        .def(
            "export_map",
            [](const PyPlacement& p, const py::object& format) {
                return expert_map_json(p.pi, p.model, parse_expert_map_format(py_utf8(format, "format")));
            },
            py::arg("format"),
            "Expert map JSON text as `routepack export-map --format routepack|sglang|vllm` writes it.")
        .def("__eq__", [](const PyPlacement& a, const PyPlacement& b) {
            return a.pi == b.pi && a.model.moe_layers == b.model.moe_layers;
        });
}

/// _place (the LPT placement of expert totals), _identity, _rank_max_over_mean, _read_placement_text.
void bind_placement_functions(py::module_& m) {
    m.def(
        "_read_placement_text",
        [](const py::object& path) {
            const std::string p = py::module_::import("os").attr("fsencode")(path).cast<std::string>();
            std::string text;
            {
                py::gil_scoped_release release;
                text = read_input_file(p, input_files::kPreviousPlacement);
            }
            return py::bytes(text);
        },
        py::arg("path"), R"doc(
The bytes of a previous placement's file (a plan or an expert map) as every reader of the module reads
one (core/util/input_file.h): a regular file of at most 256 MiB; ValueError "<path>: is a pipe (FIFO),
not a placement file (plan or expert map)" (likewise a folder, a device, an absent or a too large file)
without blocking or reading it.)doc");
    m.def(
        "_place",
        [](const py::object& loads, const py::object& ep_ranks_obj, const py::object& moe_layers_obj,
           const py::object& num_hidden_layers_obj, const py::object& previous_obj, const py::object& max_moves_obj) {
            const int ep_ranks = py_int(ep_ranks_obj, "ep_ranks");
            std::optional<std::vector<int>> moe_layers;
            if (!moe_layers_obj.is_none()) moe_layers = py_int_list(moe_layers_obj, "moe_layers");
            const std::optional<int> num_hidden_layers = py_opt_int(num_hidden_layers_obj, "num_hidden_layers");
            const py::array a = as_array(loads, "loads");
            if (a.ndim() != 2 || a.shape(0) < 1 || a.shape(1) < 1)
                value_error("loads must be 2-dimensional [L, E] with L, E >= 1 (got shape " + shape_text(a) + ")");
            const int L = static_cast<int>(a.shape(0)), E = static_cast<int>(a.shape(1));
            if (ep_ranks < 1) value_error("ep_ranks must be >= 1 (got " + std::to_string(ep_ranks) + ")");
            if (E % ep_ranks != 0)
                throw InputError("topology: " + std::to_string(E) + " experts are not divisible by " +
                                 std::to_string(ep_ranks) + " EP ranks");
            std::vector<int> layers;
            if (moe_layers) {
                layers = *moe_layers;
                if (static_cast<int>(layers.size()) != L)
                    value_error("moe_layers names " + std::to_string(layers.size()) + " layers for " +
                                std::to_string(L) + " rows of loads");
            } else {
                for (int l = 0; l < L; ++l)
                    layers.push_back(l);
            }
            PyPlacement p;
            p.model = make_model(layers, E, std::nullopt, num_hidden_layers, "");
            const auto v = load_values(a, "loads");
            // LPT adds loads per EP rank: a layer whose total passes 2**64-1 would wrap them.
            for (int l = 0; l < L; ++l)
                check_sum_fits(std::span(v).subspan(static_cast<std::size_t>(l) * E, E), [&](const std::string& total) {
                    return "loads: layer " + std::to_string(l) + " sums to " + total;
                });
            const std::optional<Placement> previous = previous_of(previous_obj, p.model, ep_ranks);
            const std::int64_t max_moves =
                max_moves_obj.is_none() ? -1 : py_int_in(max_moves_obj, "max_moves", 0, kMaxMoves);
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
        },
        py::arg("loads"), py::arg("ep_ranks"), py::arg("moe_layers") = py::none(),
        py::arg("num_hidden_layers") = py::none(), py::arg("previous") = py::none(), py::arg("max_moves") = py::none());

    m.def("_identity", [](const py::object& layers_obj, const py::object& experts_obj, const py::object& ep_ranks_obj,
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
    });

    m.def("_rank_max_over_mean", [](const py::object& G) {
        const py::array a = as_array(G, "G");
        if (a.ndim() != 2) value_error("G must be [L, P]");
        return rank_max_over_mean(load_values(a, "G"), static_cast<int>(a.shape(0)), static_cast<int>(a.shape(1)));
    });
}

/// The Plan class: the plan file's rows, metrics, placement and maps.
void bind_plan(py::module_& m) {
    py::class_<PyPlan>(m, "Plan", "A RoutePack plan (the plan file's content; see routepack.Plan in the package).")
        .def_property_readonly(
            "_migration_json", [](const PyPlan& p) { return plan_migration_json(p.file.migration); },
            "the plan's migration section as JSON text (null without a previous placement)")
        .def_property_readonly(
            "rows",
            [](const PyPlan& p) {
                py::list rows;
                const Layout& x = p.file.layout;
                for (int r = 0; r < x.rows; ++r) {
                    py::list row;
                    for (int d = 0; d < x.dp_slots; ++d) {
                        const std::span<const int> cell = x.cell(x.cell_index(r, d));
                        row.append(py::cast(std::vector<int>(cell.begin(), cell.end())));
                    }
                    rows.append(std::move(row));
                }
                return rows;
            },
            "R x D lists of sample indices (window order): rows[r][d] is cell (r, d)")
        .def_property_readonly(
            "cell_of",
            [](const PyPlan& p) {
                const Layout& x = p.file.layout;
                py::array_t<std::int64_t> out({static_cast<py::ssize_t>(p.file.lengths.size()), py::ssize_t{2}});
                auto* o = out.mutable_data();
                for (int k = 0; k < x.cell_count(); ++k)
                    for (int i : x.cell(k)) {
                        o[2 * i] = k / x.dp_slots;
                        o[2 * i + 1] = k % x.dp_slots;
                    }
                return out;
            },
            "int64 [N, 2]: (row, DP slot) of each sample")
        .def_property_readonly("row_count", [](const PyPlan& p) { return p.file.row_count; })
        .def_property_readonly("certified", [](const PyPlan& p) { return p.file.row_count_certified; })
        .def_property_readonly("row_lower_bound", [](const PyPlan& p) { return p.file.row_lower_bound; })
        .def_property_readonly(
            "lower_bound",
            [](const PyPlan& p) -> py::object {
                if (!p.file.has_bound) return py::none();
                py::dict d;
                d["value"] = p.file.bound.value;
                d["mean"] = p.file.bound.mean;
                d["sample"] = p.file.bound.sample;
                d["gap"] = bound_gap(p.file.score.max_u, p.file.bound.value);
                return d;
            },
            "certified lower bound on max_g U at the plan's placement over every layout (core/plan/bound.h): "
            "{value, mean, sample, gap = max_g U / value - 1}; None for a version-1 plan file")
        .def_property_readonly("dp_slots", [](const PyPlan& p) { return p.file.layout.dp_slots; })
        .def_property_readonly(
            "score",
            [](const PyPlan& p) { return py::make_tuple(p.file.score.max_u, p.file.score.sum_u, p.file.score.max_j); },
            "(max_g U_g, sum_g U_g, max J) (eq. 15)")
        .def_property_readonly(
            "metrics",
            [](const PyPlan& p) {
                py::dict d;
                for (const MethodRow& m : kMethodTable)
                    if (const auto& x = p.file.metrics[m.method]) d[py::str(m.key)] = metrics_dict(x->metrics);
                return d;
            },
            "per method (baseline, reorder, karmarkar_karp, routepack; grouter and routepack+comm on more than one "
            "node) the Table 3-4 metrics")
        .def_property_readonly("moe_layers", [](const PyPlan& p) { return p.file.model.moe_layers; })
        .def_property_readonly("num_hidden_layers", [](const PyPlan& p) { return p.file.model.num_hidden_layers; })
        .def_property_readonly("num_experts", [](const PyPlan& p) { return p.file.model.experts; })
        .def_property_readonly(
            "sample_ids", [](const PyPlan& p) { return py_text_list(p.file.sample_ids); },
            "[N] str: the window's sample ids (bytes that are not UTF-8 decoded with 'surrogateescape')")
        .def_property_readonly("lengths",
                               [](const PyPlan& p) {
                                   py::array_t<std::int64_t> out(static_cast<py::ssize_t>(p.file.lengths.size()));
                                   std::copy(p.file.lengths.begin(), p.file.lengths.end(), out.mutable_data());
                                   return out;
                               })
        .def_property_readonly("topology", [](const PyPlan& p) { return p.file.topology; })
        .def_property_readonly("seed", [](const PyPlan& p) { return p.file.seed; })
        .def_property_readonly("fingerprint", [](const PyPlan& p) { return py_text(p.file.fingerprint); })
        .def_property_readonly("cancelled", [](const PyPlan& p) { return p.file.cancelled; })
        .def_property_readonly("time_limit_hit", [](const PyPlan& p) { return p.file.time_limit_hit; })
        .def_property_readonly("timings", [](const PyPlan& p) { return p.file.timings; })
        .def_property_readonly("placement",
                               [](const PyPlan& p) {
                                   return PyPlacement{p.file.placement, p.file.model};
                               })
        .def_property_readonly(
            "physical_to_logical",
            [](const PyPlan& p) {
                return layer_matrix(physical_to_logical(p.file.placement), p.file.placement.layers,
                                    p.file.placement.experts);
            },
            "int64 [L, E]: logical expert in each physical slot, rows = moe_layers")
        .def_property_readonly(
            "logical_to_physical",
            [](const PyPlan& p) {
                return layer_matrix(p.file.placement.slot, p.file.placement.layers, p.file.placement.experts);
            },
            "int64 [L, E]: physical slot of each logical expert, rows = moe_layers")
        .def(
            "to_json", [](const PyPlan& p) { return plan_json(p); },
            "The plan file text (format routepack-plan; a made plan in the version plan_file_to_json writes, a loaded "
            "plan its own text without the final newline).")
        .def(
            "export_map",
            [](const PyPlan& p, const py::object& format) {
                return expert_map_json(p.file.placement, p.file.model,
                                       parse_expert_map_format(py_utf8(format, "format")));
            },
            py::arg("format"));
}

/// _plan, _plan_window (the planner on its own thread), _plan_from_json, _load_plan.
void bind_plan_functions(py::module_& m) {
    m.def("_plan", &run_plan, py::arg("lengths"), py::arg("counts"), py::arg("topology"), py::kw_only(),
          py::arg("moe_layers"), py::arg("seed") = 1, py::arg("workers") = 1, py::arg("time_limit_s") = 0.0,
          py::arg("budgets") = py::none(), py::arg("progress") = py::none(), py::arg("top_k") = py::none(),
          py::arg("num_hidden_layers") = py::none(), py::arg("sample_ids") = py::none(),
          py::arg("trace_name") = "python", py::arg("window_name") = "", py::arg("model_name") = "",
          py::arg("previous") = py::none());

    m.def("_plan_window", &run_plan_window, py::arg("window"), py::arg("topology"), py::kw_only(), py::arg("seed") = 1,
          py::arg("workers") = 1, py::arg("time_limit_s") = 0.0, py::arg("budgets") = py::none(),
          py::arg("progress") = py::none(), py::arg("previous") = py::none());

    m.def(
        "_plan_from_json",
        [](const py::object& text, const py::object& origin) {
            return plan_from_text(py_utf8(text, "text"), py_utf8(origin, "origin"));
        },
        py::arg("text"), py::arg("origin") = "plan");
    m.def(
        "_load_plan",
        [](const py::object& path_obj) {
            // The CLI's reader: a regular file only (a FIFO, device or folder is refused without
            // blocking), at most the plan file cap, read with the GIL released.
            const std::string path = py_path(path_obj, "path");
            std::string text;
            {
                py::gil_scoped_release release;
                text = read_input_file(path, input_files::kPlan);
            }
            return plan_from_text(std::move(text), path);
        },
        py::arg("path"));
}

/// counts_from_routes.
void bind_routes(py::module_& m) {
    m.def("counts_from_routes", &counts_from_routes, py::arg("routes"), py::arg("num_experts"), py::kw_only(),
          py::arg("moe_layers"), py::arg("layer_axis") = "all", py::arg("valid") = py::none(), R"doc(
Routing counts a[i][l][e] from per-token routes: int32 [N, len(moe_layers), E].

routes: an int16/int32/uint8 (also int8/int64) array [B, S, L, K] with an optional `valid` mask
[B, S] (nonzero = the token counts), or a list of [T, L, K] arrays (one per sample). L is every
decoder layer (layer_axis='all'; rows of dense layers ignored) or only the MoE layers
(layer_axis='moe'). moe_layers are absolute decoder-layer ids. A route of -1 never counts; any other
value outside 0..num_experts-1 is a ValueError naming its index. Arrays of either byte order are
read by value ('>i2' gives the counts of its native twin). num_experts and moe_layers are integers
(numpy integers too, never bools). The GIL is released while counting.)doc");
}

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
        py::arg("inputs"), py::kw_only(), py::arg("format") = "auto", py::arg("model") = py::none(),
        py::arg("num_experts") = py::none(), py::arg("top_k") = py::none(), py::arg("num_hidden_layers") = py::none(),
        py::arg("moe_layers") = py::none(), py::arg("router_layer_base") = "auto");
}

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

} // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "RoutePack core (C++): placement, row count, packing planner, plan files, route counting";

    static py::exception<Cancelled> cancelled_exc(m, "Cancelled", PyExc_KeyboardInterrupt);
    // pybind11 stores translators as void(*)(std::exception_ptr): the parameter must be by value.
    py::register_exception_translator([](std::exception_ptr p) { // NOLINT(performance-unnecessary-value-param)
        try {
            if (p) std::rethrow_exception(p);
        } catch (const InputError& e) {
            PyErr_SetObject(PyExc_ValueError, message_text(e.what()).ptr());
        } catch (const Cancelled& e) {
            cancelled_exc(e.what());
        } catch (const nlohmann::json::exception& e) {
            PyErr_SetObject(PyExc_ValueError, message_text(e.what()).ptr());
        } catch (const std::invalid_argument& e) { // pybind11's own mapping, with a readable text
            PyErr_SetObject(PyExc_ValueError, message_text(e.what()).ptr());
        }
    });

    bind_topology(m);
    bind_placement(m);
    bind_placement_functions(m);
    bind_plan(m);
    bind_plan_functions(m);
    bind_routes(m);
    bind_library(m);
    routepack::pyconv::bind_read_trace(m);
    bind_imports(m);
}
