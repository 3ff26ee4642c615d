// The Python extension `routepack._core` (pybind11): the Qt-free core as library calls a trainer
// makes every step. Only the public core API is used (core/plan/planner.h, core/plan/plan_file.h,
// core/plan/score/placement.h, core/model/route_counts.h, core/plan/expert_map.h, core/model/topology.h,
// storage/library.h). Errors: the module's exception classes (made here, re-exported by the package):
// InputError (a ValueError) for the core's InputError, with its text and each setting it names in the
// module's own words (python_setting_text), for std::invalid_argument, for JSON that does not parse
// and for every bad argument (pyconv::ArgumentError: shapes, dtypes, negative counts, NaN, named by
// argument and index); MissingFileError (an InputError and a FileNotFoundError) for the core's
// MissingFileError; Cancelled (a KeyboardInterrupt) for the core's Cancelled.
// Every argument is converted by app/python/py_convert.h (one rule for integers, numbers, arrays of
// either byte order, text, paths; exceptions an argument raises itself propagate).
// The bindings are split by subject (app/python/py_*.cpp, declared in app/python/py_bindings.h);
// this file makes the module: its docstring, version, exception classes, the translation of the
// core's exceptions, and the bind_<subject> calls in registration order (a class before any function
// whose signature names it). Function signatures are not generated: every docstring starts with its
// own text signature ("name(self, /, a, b=1)" then "--"), which inspect.signature and help() read.
#include "app/python/py_bindings.h"
#include "app/python/py_convert.h"
#include "app/python/py_window.h"
#include "core/plan/budgets.h"
#include "core/util/errors.h"
#include "core/util/settings.h"
#include "core/util/version.h"

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

/// The module's exception classes, made once by make_exception_classes and kept for the
/// interpreter's life (the exception translator reads them).
struct ExceptionClasses {
    PyObject* error = nullptr;
    PyObject* input = nullptr;
    PyObject* missing = nullptr;
    PyObject* cancelled = nullptr;
};

ExceptionClasses& exception_classes() {
    static ExceptionClasses classes;
    return classes;
}

constexpr const char* kErrorDoc = R"doc(Base class of the errors routepack raises.

Catch it to handle every error of the module at once. Each one is also a built-in
exception that says what kind of error it is (InputError is a ValueError,
MissingFileError a FileNotFoundError), so ``except ValueError`` keeps working.
Cancelled is a KeyboardInterrupt and deliberately not an Error: ``except Exception``
must not swallow a Ctrl-C.)doc";

constexpr const char* kInputErrorDoc = R"doc(Bad input: an argument, a file's content, a trace or a topology rule.

Also a ValueError. The message is the CLI's text without its ``routepack: error:``
prefix, naming the argument and index (``counts[3, 1, 5] = -4 is negative``), the
file and field, or the budget (``budgets['cooling'] = 1.5 must be in (0, 1]``).)doc";

constexpr const char* kMissingFileErrorDoc = R"doc(A file or folder the input names does not exist.

An InputError (so also a ValueError) and a FileNotFoundError. The message names the
path, as the CLI prints it (``plan.json: no such plan file``, ``lib.db: no such
library``, ``steps/7.npz: no such file or folder``).)doc";

constexpr const char* kCancelledDoc = R"doc(A long operation was cancelled (Ctrl-C while it ran).

A KeyboardInterrupt, not an Error. plan() and plan_window() do not raise it: a
progress callback returning False gives the best valid plan so far
(``plan.cancelled``), and Ctrl-C raises the KeyboardInterrupt itself.)doc";

/// A new exception class routepack.<name> with `bases` (a class or a tuple of classes) and `doc`,
/// added to `m`.
PyObject* make_exception_class(py::module_& m, const char* name, PyObject* bases, const char* doc) {
    const std::string qualified = std::string("routepack.") + name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
    if (cls == nullptr) throw py::error_already_set();
    m.add_object(name, py::handle(cls)); // the module holds a reference; so does exception_classes()
    return cls;
}

/// Error(Exception), InputError(Error, ValueError), MissingFileError(InputError, FileNotFoundError),
/// Cancelled(KeyboardInterrupt); bad arguments raise InputError from now on.
void make_exception_classes(py::module_& m) {
    ExceptionClasses& c = exception_classes();
    c.error = make_exception_class(m, "Error", PyExc_Exception, kErrorDoc);
    c.input = make_exception_class(
        m, "InputError", py::make_tuple(py::handle(c.error), py::handle(PyExc_ValueError)).ptr(), kInputErrorDoc);
    c.missing = make_exception_class(m, "MissingFileError",
                                     py::make_tuple(py::handle(c.input), py::handle(PyExc_FileNotFoundError)).ptr(),
                                     kMissingFileErrorDoc);
    c.cancelled = make_exception_class(m, "Cancelled", PyExc_KeyboardInterrupt, kCancelledDoc);
    pyconv::argument_error_type() = c.input;
}

/// Raises `cls` in Python with `message` (bytes that are not UTF-8 escaped, pyconv::message_text).
void set_error(PyObject* cls, const std::string& message) {
    PyErr_SetObject(cls, pyconv::message_text(message.c_str()).ptr());
}

// pybind11 stores translators as void(*)(std::exception_ptr): the parameter must be by value.
void translate_exception(std::exception_ptr p) { // NOLINT(performance-unnecessary-value-param)
    const ExceptionClasses& c = exception_classes();
    try {
        if (p) std::rethrow_exception(p);
    } catch (const MissingFileError& e) {
        set_error(c.missing, e.reworded(python_setting_text));
    } catch (const InputError& e) {
        set_error(c.input, e.reworded(python_setting_text));
    } catch (const Cancelled& e) {
        set_error(c.cancelled, e.what());
    } catch (const nlohmann::json::exception& e) {
        set_error(c.input, e.what());
    } catch (const std::invalid_argument& e) { // pybind11 would make it a ValueError without our base
        set_error(c.input, e.what());
    }
}

} // namespace

PYBIND11_MODULE(_core, m) {
    py::options options;
    options.disable_function_signatures(); // each docstring carries its own text signature
    m.doc() = "RoutePack core (C++): placement, row count, packing planner, plan files, route counting. "
              "Use it through the package: import routepack.";
    m.attr("__version__") = kVersion;

    make_exception_classes(m);
    py::register_exception_translator(&translate_exception);

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
