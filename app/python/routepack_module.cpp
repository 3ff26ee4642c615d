// The Python extension `routepack._core` (pybind11): the Qt-free core as library calls a trainer
// makes every step. Only the public core API is used (core/plan/planner.h, core/plan/plan_file.h,
// core/plan/score/placement.h, core/model/route_counts.h, core/plan/expert_map.h, core/model/topology.h,
// storage/library.h). Errors: InputError becomes ValueError with the core's text, each setting it names in the module's
// own words (python_setting_text); std::invalid_argument becomes ValueError with its text;
// bad shapes, dtypes, negative counts and NaN are refused with ValueError naming the argument and index.
// Every argument is converted by app/python/py_convert.h (one rule for integers, numbers, arrays of
// either byte order, text, paths; exceptions an argument raises itself propagate).
// The bindings are split by subject (app/python/py_*.cpp, declared in app/python/py_bindings.h);
// this file makes the module: its docstring, the translation of the core's exceptions, and the
// bind_<subject> calls in registration order (a class before any function whose signature names it).
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "app/python/py_window.h"
#include "core/plan/budgets.h"
#include "core/util/errors.h"
#include "core/util/settings.h"

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace py = pybind11;
using namespace routepack;

namespace {

/// A setting in the module's own words: a budget as its `budgets` key (budgets['cooling']) or, for the
/// budgets plan() takes as arguments (workers, time_limit_s), the argument; another setting as its
/// Python argument (core/util/settings.h: "router_layer_base=0 or 1", a request's whole phrase); the
/// library's words where the module has no name for it.
std::string python_setting_text(const Setting& setting) {
    if (const BudgetRow* row = find_budget(setting.key))
        return row->run_setting || std::string_view(row->key) == "time_limit_s" ? std::string(row->key)
                                                                                : "budgets['" + setting.key + "']";
    const SettingRow* row = find_setting(setting.key);
    if (!row || !row->python) return setting.words;
    if (row->request || setting.value.empty()) return row->python;
    return row->python + ("=" + setting.value);
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
            PyErr_SetObject(PyExc_ValueError, pyconv::message_text(e.reworded(python_setting_text).c_str()).ptr());
        } catch (const Cancelled& e) {
            cancelled_exc(e.what());
        } catch (const nlohmann::json::exception& e) {
            PyErr_SetObject(PyExc_ValueError, pyconv::message_text(e.what()).ptr());
        } catch (const std::invalid_argument& e) { // pybind11's own mapping, with a readable text
            PyErr_SetObject(PyExc_ValueError, pyconv::message_text(e.what()).ptr());
        }
    });

    pyconv::bind_topology(m);
    pyconv::bind_placement(m);
    pyconv::bind_placement_functions(m);
    pyconv::bind_plan(m);
    pyconv::bind_plan_functions(m);
    pyconv::bind_routes(m);
    pyconv::bind_library(m);
    pyconv::bind_read_trace(m);
    pyconv::bind_imports(m);
    pyconv::bind_moe_names(m);
}
