#pragma once
// Reports more than one `routepack` command prints on stdout: a library's traces (`info`, and
// `demo` after building its library) and the method comparison of a plan (`plan`, `compare`,
// `demo`). The text and the JSON keys are part of the CLI's contract (tests assert them).
#include "core/plan/planner.h"
#include "storage/library.h"

#include <string>
#include <vector>

namespace routepack::cli {

/// `info`: the summary of each of `traces` (format, model, samples and GRPO groups, length
/// statistics in tokens, mean/max load CV over experts per MoE layer, windows), per-MoE-layer CVs
/// too when `detail`; then, without `detail`, one line per imported cluster run ("cluster run N
/// '<trace>': S steps x C chains: <chain> (EP<P>/DP<D>[, K nodes]), ...; P planned, F failed; from
/// <OUT>"), and one per measured step of those traces ("measured step N of <trace>/<window>
/// (<source>): K plan(s), J linked to saved runs"). As JSON {"library": db, "traces": [...],
/// "cluster_runs": [...], "measured_steps": [...]} (indent 2) when `json`, else text headed "library
/// <db>: N trace(s)". Every summary is computed before anything is printed.
void print_library_info(const storage::Library& lib, const std::string& db,
                        const std::vector<storage::TraceEntry>& traces, bool detail, bool json);

/// One trace's summary as text with per-layer detail (what `info --trace NAME` prints for it).
void print_trace_detail(const storage::Library& lib, const storage::TraceEntry& trace);

/// The comparison of baseline / reorder / karmarkar_karp / routepack in `r` as text: window and
/// topology, rows (R*, lower bound), CV_global identity -> LPT, one table line per method, the
/// certified lower bound on max_g U (eqs. 11-15, core/plan/score/bound.h) and the relative changes
/// routepack makes, planner statistics.
void print_comparison(const PlanResult& r);

/// The same comparison as one JSON document (indent 2) and a newline.
void print_comparison_json(const PlanResult& r);

} // namespace routepack::cli
