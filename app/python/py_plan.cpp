// The Plan class of routepack._core (its arrays read-only views of the plan's values) and the
// functions that make one: _plan and _plan_window (the planner on its own thread, the GIL released,
// cancellation from Python), _plan_from_json and _load_plan (a plan file's text); and make_window,
// the window plan() and Window() make from arrays.
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "app/python/py_window.h"
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/plan/budgets.h"
#include "core/plan/expert_map.h"
#include "core/plan/method.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/plan/score/metrics_json.h"
#include "core/plan/score/placement.h"
#include "core/util/input_file.h"

#include <nlohmann/json.hpp>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace routepack::pyconv {

namespace {

/// One method's LayoutMetrics as Plan.metrics gives it: "score" as the (max_u, sum_u, max_j) tuple,
/// then the fields of write_layout_metrics (core/plan/score/metrics_json.h), integers as int, the rest float.
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

/// plan()'s `budgets` dict: keys are the budgets JSON keys (core/plan/budgets.h) but workers and
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

/// The planner on its own thread with the GIL released: progress events delivered on the calling
/// thread (returning False cancels), Ctrl-C stops it and propagates; the plan or the planner's error.
PyPlan run_plan_input(PlanInput in, const py::object& progress);

/// One window (`in` holding it, as window or shared_window) planned with the arguments of plan()
/// (budgets dict, seed, workers, time limit, progress: checked by check_plan_args and make_budgets),
/// through run_plan_input.
PyPlan plan_trace(PlanInput in, const std::string& trace_name, const std::string& window_name, const Topology& topology,
                  const py::object& seed, int workers, double time_limit_s, const py::object& budgets,
                  const py::object& progress, const py::object& previous) {
    if (std::optional<PreviousStep> step = previous_step_of(previous, in.trace().model, topology.ep_ranks)) {
        in.previous = std::move(step->placement);
        in.history = std::move(step->history);
    }
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
    PlanInput in;
    in.window =
        make_window(lengths, counts, py_int_list(moe_layers, "moe_layers"), py_opt_int(top_k, "top_k"),
                    py_opt_int(num_hidden_layers, "num_hidden_layers"), sample_ids, py_utf8(model_name, "model_name"));
    return plan_trace(std::move(in), py_utf8(trace_name, "trace_name"), py_utf8(window_name, "window_name"), topology,
                      seed, w, limit, budgets, progress, previous);
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
    PlanInput in;
    in.shared_window = w.trace; // planned in place: its counts and routes are not copied
    return plan_trace(std::move(in), w.trace_name, w.window_name, topology, seed, n, limit, budgets, progress,
                      previous);
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
    for (const MethodResult* m : st->result->methods())
        p.methods.push_back({m->key(), m->layout, st->result->placement_of(m->placement)});
    return p;
}

} // namespace

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

namespace {

/// "<routepack.Plan 2,048 samples, 40 rows x 4 DP slots, 26 MoE layers x 64 experts on 8 EP ranks,
/// score 112.01>" (score: max_g U_g), ", cancelled" before the ">" for a cancelled plan.
std::string plan_repr(const PyPlan& p) {
    const PlanFile& f = p.file;
    char score[64];
    std::snprintf(score, sizeof score, "%.2f", f.score.max_u);
    return "<routepack.Plan " + counted(static_cast<std::int64_t>(f.lengths.size()), "sample") + ", " +
           counted(f.row_count, "row") + " x " + counted(f.layout.dp_slots, "DP slot") + ", " +
           counted(f.placement.layers, "MoE layer") + " x " + counted(f.placement.experts, "expert") + " on " +
           counted(f.placement.ep_ranks, "EP rank") + ", score " + score + (f.cancelled ? ", cancelled" : "") + ">";
}

/// The read-only view of one of the placement maps of the Plan `self` (placement_maps).
template <class Pick> py::array plan_map_view(const py::object& self, Pick&& pick) {
    const auto& p = self.cast<const PyPlan&>();
    const Placement& pi = p.file.placement;
    return readonly_view(pick(placement_maps(pi, p.maps)), {pi.layers, pi.experts}, self);
}

/// Plan.cell_of: (row, DP slot) of each sample, made on the first use.
py::array cell_of_view(const py::object& self) {
    const auto& p = self.cast<const PyPlan&>();
    const Layout& x = p.file.layout;
    const auto n = static_cast<py::ssize_t>(p.file.lengths.size());
    if (p.cell_of.empty() && n > 0) {
        std::vector<std::int64_t> rc(static_cast<std::size_t>(n) * 2);
        for (int k = 0; k < x.cell_count(); ++k)
            for (int i : x.cell(k)) {
                rc[2 * static_cast<std::size_t>(i)] = k / x.dp_slots;
                rc[2 * static_cast<std::size_t>(i) + 1] = k % x.dp_slots;
            }
        p.cell_of = std::move(rc);
    }
    return readonly_view(p.cell_of, {n, py::ssize_t{2}}, self);
}

/// Plan.rows: R x D lists of sample indices.
py::list rows_of(const PyPlan& p) {
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
}

/// Plan.method_layout: (rows, physical_to_logical int64 [L, E]) of a compared method.
py::tuple method_layout_of(const PyPlan& p, const py::object& method) {
    const std::string key = py_utf8(method, "method");
    if (p.methods.empty())
        value_error("method_layout: a plan read from a file or text keeps routepack's layout only; plan the window in "
                    "this process (routepack.plan or routepack.plan_window) for the other methods' layouts");
    std::string known;
    for (const auto& m : p.methods) {
        if (m.key == key) {
            py::list rows;
            for (int r = 0; r < m.layout.rows; ++r) {
                py::list row;
                for (int d = 0; d < m.layout.dp_slots; ++d) {
                    const std::span<const int> cell = m.layout.cell(m.layout.cell_index(r, d));
                    row.append(py::cast(std::vector<int>(cell.begin(), cell.end())));
                }
                rows.append(std::move(row));
            }
            const Placement& pi = m.placement;
            py::array_t<std::int64_t> p2l({static_cast<py::ssize_t>(pi.layers), static_cast<py::ssize_t>(pi.experts)});
            auto v = p2l.mutable_unchecked<2>();
            for (int l = 0; l < pi.layers; ++l)
                for (int e = 0; e < pi.experts; ++e)
                    v(l, pi.at(l, e)) = e;
            return py::make_tuple(rows, p2l);
        }
        known += (known.empty() ? "" : ", ") + m.key;
    }
    value_error("method_layout: '" + key + "' is not a method of this plan (" + known + ")");
}

/// Plan.lower_bound: the certified bound on max_g U, None for a version-1 plan file.
py::object lower_bound_of(const PyPlan& p) {
    if (!p.file.has_bound) return py::none();
    py::dict d;
    d["value"] = p.file.bound.value;
    d["mean"] = p.file.bound.mean;
    d["sample"] = p.file.bound.sample;
    d["gap"] = bound_gap(p.file.score.max_u, p.file.bound.value);
    return d;
}

/// Plan.metrics: per method that ran, its metrics_dict.
py::dict metrics_of(const PyPlan& p) {
    py::dict d;
    for (const MethodRow& m : kMethodTable)
        if (const auto& x = p.file.metrics[m.method]) d[py::str(m.key)] = metrics_dict(x->metrics);
    return d;
}

namespace doc {

constexpr const char* kPlan = R"doc(A RoutePack plan: R x D rows of whole samples and the placement of the experts.

The content of a plan file (format routepack-plan). Cell (r, d) is micro-batch r of
DP slot d: every DP slot runs R = row_count micro-batches of whole samples, at most
token_cap tokens each. Made by routepack.plan and routepack.plan_window, read by
routepack.load_plan, or parsed from plan file text as here.

Parameters
----------
text : str
    Plan file text, as Plan.to_json() and ``routepack plan --out`` write it.

Raises
------
InputError
    Text that is not a valid plan file, naming the field ("plan: field 'rows' ...").

See Also
--------
routepack.plan : plans a window given as arrays.)doc";

constexpr const char* kInit = R"doc(__init__(self, /, text)
--

Parses the plan file text; the parameters are described in help(routepack.Plan).)doc";

constexpr const char* kCellOf =
    R"doc(numpy.ndarray of int64, shape (N, 2), read-only: the (row, DP slot) of each sample.

Made on the first use and kept: later reads are views of the same values.)doc";

constexpr const char* kLengths =
    R"doc(numpy.ndarray of int64, shape (N,), read-only: t_i, the tokens of each sample.

In window order; a view of the plan's values (no copy).)doc";

constexpr const char* kPhysicalToLogical =
    R"doc(numpy.ndarray of int64, shape (L, E), read-only: the logical expert in each slot.

Rows in moe_layers order: ``probs[:, plan.physical_to_logical[l]]`` puts the router's
columns in slot order. A view of the plan's values (no copy).)doc";

constexpr const char* kLogicalToPhysical =
    R"doc(numpy.ndarray of int64, shape (L, E), read-only: the slot of each logical expert.

Rows in moe_layers order; slot v is on EP rank v // (E / P). A view of the plan's
values (no copy).)doc";

constexpr const char* kLowerBound =
    R"doc(dict or None: the certified lower bound on max_g U at the plan's placement.

Keys value, mean, sample and gap = max_g U / value - 1 (core/plan/score/bound.h);
None for a version-1 plan file.)doc";

constexpr const char* kMetrics = R"doc(dict: per method, the metrics of Tables 3-4.

Keys baseline, reorder, karmarkar_karp and routepack, and grouter and routepack+comm
on more than one node; each a dict with "score" (max_g U, sum_g U, max J) and the
plan file's metric fields.)doc";

constexpr const char* kToJson = R"doc(to_json(self, /)
--

The plan file text (format routepack-plan), as ``routepack plan --out`` writes it.

A made plan's text is written on the first call; a loaded plan gives its own text.

Returns
-------
str
    The JSON text, without a final newline (Plan.save adds one).

Raises
------
InputError
    A name or sample id that is not valid UTF-8 (from an older library), which no
    plan file can hold.)doc";

constexpr const char* kExportMap = R"doc(export_map(self, /, format)
--

The expert map of the plan's placement, as ``routepack export-map --format FORMAT``.

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

constexpr const char* kMethodLayout = R"doc(method_layout(self, /, method)
--

A compared method's rows and the placement it runs on, for a plan made in this process.

Parameters
----------
method : str
    A key of Plan.metrics: 'baseline', 'reorder', 'karmarkar_karp', 'routepack'
    (this plan's rows and placement), and on more than one node with per-token
    routes 'grouter' and 'routepack+comm'.

Returns
-------
tuple of (list of list of list of int, numpy.ndarray)
    The method's R x D cells of sample indices (as Plan.rows) and its placement
    as physical_to_logical, int64 [L, E] (identity for the baseline, LPT for
    reorder and karmarkar_karp).

Raises
------
InputError
    A plan read from a file or text (the plan file keeps routepack's layout
    only), or a method the plan does not have.)doc";

} // namespace doc

/// The Plan's plain properties (values of its plan file).
void bind_plan_values(py::class_<PyPlan>& c) {
    c.def_property_readonly("rows", &rows_of,
                            "list of list of list of int: R x D cells of sample indices (window order).\n\n"
                            "rows[r][d] is cell (r, d): micro-batch r of DP slot d.")
        .def_property_readonly(
            "row_count", [](const PyPlan& p) { return p.file.row_count; },
            "int: R, the rows: the micro-batches of every DP slot.")
        .def_property_readonly(
            "certified", [](const PyPlan& p) { return p.file.row_count_certified; },
            "bool: whether R is the certified R* (paper eq. 9) of the topology's rules.")
        .def_property_readonly(
            "row_lower_bound", [](const PyPlan& p) { return p.file.row_lower_bound; },
            "int: the lower bound on R the row-count search proved.")
        .def_property_readonly("lower_bound", &lower_bound_of, doc::kLowerBound)
        .def_property_readonly(
            "dp_slots", [](const PyPlan& p) { return p.file.layout.dp_slots; }, "int: D, the DP slots.")
        .def_property_readonly(
            "score",
            [](const PyPlan& p) { return py::make_tuple(p.file.score.max_u, p.file.score.sum_u, p.file.score.max_j); },
            "tuple of float: (max_g U_g, sum_g U_g, max J), the score of eq. 15 (lower is better).")
        .def_property_readonly("metrics", &metrics_of, doc::kMetrics)
        .def_property_readonly(
            "moe_layers", [](const PyPlan& p) { return p.file.model.moe_layers; },
            "list of int: the absolute decoder-layer ids of the L MoE layers.")
        .def_property_readonly(
            "num_hidden_layers", [](const PyPlan& p) { return p.file.model.num_hidden_layers; },
            "int: the model's decoder layers.")
        .def_property_readonly(
            "num_experts", [](const PyPlan& p) { return p.file.model.experts; }, "int: E, the experts per layer.")
        .def_property_readonly(
            "sample_ids", [](const PyPlan& p) { return py_text_list(p.file.sample_ids); },
            "list of str: the window's sample ids.\n\nBytes that are not UTF-8 (names of older imports) are decoded "
            "with\n'surrogateescape'.")
        .def_property_readonly(
            "topology", [](const PyPlan& p) { return p.file.topology; }, "Topology: the topology planned for.")
        .def_property_readonly(
            "seed", [](const PyPlan& p) { return p.file.seed; }, "int: the master seed.")
        .def_property_readonly(
            "fingerprint", [](const PyPlan& p) { return py_text(p.file.fingerprint); },
            "str: the fingerprint of the window's samples and counts.")
        .def_property_readonly(
            "cancelled", [](const PyPlan& p) { return p.file.cancelled; },
            "bool: whether the planner was stopped (the best valid plan found by then).")
        .def_property_readonly(
            "time_limit_hit", [](const PyPlan& p) { return p.file.time_limit_hit; },
            "bool: whether the search stopped at time_limit_s.")
        .def_property_readonly(
            "timings", [](const PyPlan& p) { return p.file.timings; },
            "dict of str to float: seconds per planner stage and 'total'.")
        .def_property_readonly(
            "placement",
            [](const PyPlan& p) {
                return PyPlacement{p.file.placement, p.file.model};
            },
            "Placement: the plan's placement of the experts (a copy).");
}

} // namespace

/// The Plan class: the plan file's rows, metrics, placement and maps.
void bind_plan(py::module_& m) {
    py::class_<PyPlan> c(m, "Plan", doc::kPlan);
    c.def(py::init([](const py::object& text) { return plan_from_text(py_utf8(text, "text"), "plan"); }), doc::kInit,
          py::arg("text"))
        .def_property_readonly(
            "_migration_json", [](const PyPlan& p) { return plan_migration_json(p.file.migration); },
            "the plan's migration section as JSON text (null without a previous placement)")
        .def_property_readonly("cell_of", &cell_of_view, doc::kCellOf)
        .def_property_readonly(
            "lengths",
            [](const py::object& self) {
                const auto& p = self.cast<const PyPlan&>();
                return readonly_view(p.file.lengths, {static_cast<py::ssize_t>(p.file.lengths.size())}, self);
            },
            doc::kLengths)
        .def_property_readonly(
            "physical_to_logical",
            [](const py::object& self) {
                return plan_map_view(
                    self, [](const PlacementMaps& x) -> const auto& { return x.physical_to_logical; });
            },
            doc::kPhysicalToLogical)
        .def_property_readonly(
            "logical_to_physical",
            [](const py::object& self) {
                return plan_map_view(
                    self, [](const PlacementMaps& x) -> const auto& { return x.logical_to_physical; });
            },
            doc::kLogicalToPhysical)
        .def(
            "to_json", [](const PyPlan& p) { return plan_json(p); }, doc::kToJson)
        .def(
            "export_map",
            [](const PyPlan& p, const py::object& format) {
                return expert_map_json(p.file.placement, p.file.model,
                                       parse_expert_map_format(py_utf8(format, "format")));
            },
            doc::kExportMap, py::arg("format"))
        .def("method_layout", &method_layout_of, doc::kMethodLayout, py::arg("method"))
        .def("__repr__", &plan_repr);
    bind_plan_values(c);
}

/// _plan, _plan_window (the planner on its own thread), _plan_from_json, _load_plan.
void bind_plan_functions(py::module_& m) {
    m.def("_plan", &run_plan,
          "_plan(lengths, counts, topology, *, moe_layers, seed=1, workers=1, time_limit_s=0.0, budgets=None, "
          "progress=None, top_k=None, num_hidden_layers=None, sample_ids=None, trace_name='python', window_name='', "
          "model_name='', previous=None)\n--\n\nroutepack.plan.",
          py::arg("lengths"), py::arg("counts"), py::arg("topology"), py::kw_only(), py::arg("moe_layers"),
          py::arg("seed") = 1, py::arg("workers") = 1, py::arg("time_limit_s") = 0.0, py::arg("budgets") = py::none(),
          py::arg("progress") = py::none(), py::arg("top_k") = py::none(), py::arg("num_hidden_layers") = py::none(),
          py::arg("sample_ids") = py::none(), py::arg("trace_name") = "python", py::arg("window_name") = "",
          py::arg("model_name") = "", py::arg("previous") = py::none());

    m.def("_plan_window", &run_plan_window,
          "_plan_window(window, topology, *, seed=1, workers=1, time_limit_s=0.0, budgets=None, progress=None, "
          "previous=None)\n--\n\nroutepack.plan_window.",
          py::arg("window"), py::arg("topology"), py::kw_only(), py::arg("seed") = 1, py::arg("workers") = 1,
          py::arg("time_limit_s") = 0.0, py::arg("budgets") = py::none(), py::arg("progress") = py::none(),
          py::arg("previous") = py::none());

    m.def(
        "_plan_from_json",
        [](const py::object& text, const py::object& origin) {
            return plan_from_text(py_utf8(text, "text"), py_utf8(origin, "origin"));
        },
        "_plan_from_json(text, origin='plan')\n--\n\nroutepack.plan_from_json.", py::arg("text"),
        py::arg("origin") = "plan");
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
        "_load_plan(path)\n--\n\nroutepack.load_plan.", py::arg("path"));
}

} // namespace routepack::pyconv
