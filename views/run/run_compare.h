#pragma once
// Whole runs side by side: what the studio's "Whole runs" tab overlays and the headless
// `--compare-runs A,B` writes. Each whole run (Library::whole_run: a sweep, a studio run, a cluster
// run's chain) is read as its Run view series (compute_whole_run_series); per step the figures a
// budget trades against each other: routepack's max_g U (eq. 15), its gain against the baseline,
// the experts moved, the bytes they move and the modelled step seconds (docs/migration.md), the
// numbers `routepack sweep` prints for those steps. Differences are against the first run, step by
// step (steps matched by window name) and summed. Plain C++ (no widgets), computed on a worker thread.
#include "views/run/run_series.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace routepack::views {

/// A figure of a step that the comparison overlays.
enum class CompareMetric {
    MaxU,           ///< routepack's max_g U, tokens (summed over steps in the total)
    GainPct,        ///< 100 x (routepack - baseline) / baseline, % (averaged in the total)
    ExpertsMoved,   ///< experts on another EP rank than at the previous step (summed)
    MigrationBytes, ///< bytes the moves copy, with the topology's migration model only (summed)
    ModelledSeconds ///< compute + materialization (+ planning) seconds, with the model only (summed)
};

/// Every metric, in enum order.
inline constexpr CompareMetric kCompareMetrics[] = {CompareMetric::MaxU, CompareMetric::GainPct,
                                                    CompareMetric::ExpertsMoved, CompareMetric::MigrationBytes,
                                                    CompareMetric::ModelledSeconds};
/// The CSV's column key: "max_u", "vs_baseline_pct", "experts_moved", "migration_bytes", "modelled_s".
const char* compare_metric_key(CompareMetric m);
/// Words for a chart's axis: "max_g U (tokens)", "routepack vs baseline (%)", "experts moved",
/// "bytes moved", "modelled step (s)".
const char* compare_metric_title(CompareMetric m);

/// One whole run of a comparison.
struct ComparedRun {
    storage::WholeRunEntry entry;
    RunSeries series;  ///< its steps (compute_whole_run_series)
    std::string label; ///< whole_run_labels: its id and name, and the settings that set it apart
};

/// The runs compared, in the order asked.
struct RunComparison {
    std::vector<ComparedRun> runs;
    /// Every step's window over the runs, in natural name order (a run lacking one has no value there).
    std::vector<std::string> windows;
    std::string error; ///< why reading failed, in the studio's words; then `runs` is empty
};

/// Reads whole runs `ids` (2 or more, distinct) of `lib` into one comparison. Errors (in
/// RunComparison::error): "compare at least two whole runs", "whole run N is named twice", the
/// library's "no whole run N in <file>", a run's series error ("whole run N: why"), "whole run N has no
/// planned step"; `cancel` (polled between steps) ends with "cancelled".
RunComparison compare_whole_runs(const storage::Library& lib, const std::vector<std::int64_t>& ids,
                                 const std::atomic<bool>* cancel = nullptr);

/// The legend of each run, in order: "whole run 4 'b166'" (or "whole run 4"), then, separated by " ·
/// ", the settings that differ between the runs: trace, topology ("ds-ep16 (EP16/DP8, 2 nodes)"),
/// seed, every budget that differs by its key ("levels 40", "history_decay 0.5"; workers never), the
/// move budget always ("max moves 166", "unlimited moves"), the source and start when they differ,
/// and "chained" / "not chained" always.
std::vector<std::string> whole_run_labels(const std::vector<storage::WholeRunEntry>& runs);

/// The value of metric `m` at window `window` of run `r` (nullopt where the run has no such step, or
/// the step lacks the figure: bytes and seconds without a migration model).
std::optional<double> compare_value(const ComparedRun& r, const std::string& window, CompareMetric m);
/// The total of metric `m` over the run's steps that are in `windows` (every step when empty): the
/// sum, or for GainPct the mean; nullopt when no step has the figure.
std::optional<double> compare_total(const ComparedRun& r, CompareMetric m,
                                    const std::vector<std::string>& windows = {});
/// Run i's value minus run 0's at `window` (nullopt when either lacks it); i = 0 gives 0.
std::optional<double> compare_difference(const RunComparison& c, std::size_t i, const std::string& window,
                                         CompareMetric m);
/// The same for the totals over the windows both runs have.
std::optional<double> compare_total_difference(const RunComparison& c, std::size_t i, CompareMetric m);

/// The comparison as CSV (RFC 4180, CRLF-ended lines): "step,window", then one column group per run
/// ("run<id>_<key>" for every metric key, compare_metric_key), then one group per run after the first
/// ("run<id>_minus_run<first>_<key>"); one line per window, then "total" (compare_total and
/// compare_total_difference); a missing figure is an empty cell; max_u and seconds as %.17g, the
/// gain as %.6f, moves and bytes as integers. "" for an empty comparison.
std::string comparison_csv(const RunComparison& c);

} // namespace routepack::views
