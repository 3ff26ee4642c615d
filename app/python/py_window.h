#pragma once
// The Window of the routepack module (a trace or window held in memory: a library's, or one step's
// files read by read_trace), shared by the module's translation units.
#include "core/model/trace.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

namespace routepack::pyconv {

/// A trace or window with the names its plans record (inputs.trace, inputs.window).
struct PyWindow {
    std::shared_ptr<const Trace> trace;
    std::string trace_name, window_name;
};

/// Adds `_read_trace` and Window's routes, renaming and pickling (app/python/py_read.cpp) to the
/// module `m`, whose Window class is already bound.
void bind_read_trace(pybind11::module_& m);

} // namespace routepack::pyconv
