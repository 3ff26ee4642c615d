#pragma once
// torch.profiler Chrome traces of a step whose pieces run inside the routepack ranges
// (docs/measure.md "Profiler ranges"): their one reader, which turns the ranges' durations into a
// measured plan for the library.
#include "core/plan/measured.h"

#include <string>
#include <vector>

namespace routepack {

/// One Chrome trace file: its name (for errors) and its text.
struct ProfilerTraceFile {
    std::string origin;
    std::string text;
};

/// The range name of a whole step of plan `plan` on window `fingerprint`:
/// "routepack:step:window=<fingerprint>:plan=<plan>" (the plan name runs to the end of the name).
std::string step_range_name(const std::string& fingerprint, const std::string& plan);

/// How the ranges were read.
struct ProfilerTiming {
    bool device = false; ///< durations of the device-side ranges (cat "gpu_user_annotation"), else the host's
    int repeats = 0;     ///< the fewest ranges any timed piece had inside the step
};

/// Sets the seconds of `plan`'s pieces (layout_pieces of the layout the traces ran) from torch.profiler
/// Chrome traces (a JSON list of events, or an object whose "traceEvents" is that list; torch
/// 1.13's export_chrome_trace writes either). Events named "routepack:..." must be complete events
/// ("ph": "X") with "ts" and "dur" in microseconds (finite, dur >= 0). A file's piece ranges count
/// when they lie inside one of that file's step ranges of window `fingerprint` and plan `plan.name`
/// (several files: one per process of the step, merged). A piece's seconds are the median of its
/// ranges' durations / 1e6, of the device-side ranges when the step has any, else the host's; a piece
/// without a range must have nothing to time (an attention cell without samples, an EP rank without
/// tokens): seconds 0. InputError naming the file and event ("<file>: traceEvents[7].name
/// \"routepack:attention:row=9:dp_slot=0\" names row 9; the plan has 2 rows") for a malformed
/// file, a range name outside the grammar, a field out of range, no step range ("<files>: no
/// routepack:step range ..."), step ranges only of another window ("... of window X, not the plan's Y:
/// a trace of another window") or plan, and a piece with tokens that no range times.
ProfilerTiming fill_from_profiler(MeasuredPlan& plan, const std::vector<ProfilerTraceFile>& traces,
                                  const std::string& fingerprint, const Topology& topology,
                                  const std::vector<int>& moe_layers);

} // namespace routepack
