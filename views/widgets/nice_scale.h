#pragma once
// Round steps for the studio's scales: colour-bar ticks (plan_explain.h round_ticks), the Run view's
// gain bins (run_series.h gain_histogram), the sample lengths' linear bins (sample_data.h
// lengthHistogram) and the convergence chart's level ticks. One search over m x 10^k; each caller
// says what fits. Qt-free.
#include <functional>
#include <initializer_list>
#include <optional>

namespace routepack::views {

/// A round step m x 10^k.
struct RoundStep {
    double mantissa = 1; ///< m, one of the mantissas searched
    int exponent = 0;    ///< k
    double step = 1;     ///< m * pow(10, k), e.g. 2 * pow(10, -1) = 0.2
};

/// The smallest round step that fits: for k = k_first, k_first + 1, ..., k_last (decades, ascending)
/// and within each decade the `mantissas` in the order given (ascending, in [1, 10)), the first
/// RoundStep for which `fits` returns true. std::nullopt when none does (also when k_last < k_first).
/// E.g. mantissas {1, 2, 5}, k from -1, fits = "at most 4 multiples of the step in [0, 2.3]": 1 (0, 1, 2)
/// is the first; 0.5 gives 5 multiples.
std::optional<RoundStep> round_step(std::initializer_list<double> mantissas, int k_first, int k_last,
                                    const std::function<bool(const RoundStep&)>& fits);

// The counts below are whole numbers held in doubles (no overflow for any finite ratio).

/// The multiples of `step` (> 0) in [lo, hi], with a slack of 1e-9 steps at both ends: ceil(lo / step
/// - 1e-9) .. floor(hi / step + 1e-9), the ticks a scale from lo to hi can carry (0 when none).
double multiples_within(double lo, double hi, double step);

/// The bins [j x step, (j + 1) x step) that values lo .. hi (lo <= hi) fall into: floor(hi / step) -
/// floor(lo / step) + 1 (a value on an edge starts a new bin).
double bins_holding(double lo, double hi, double step);

/// The bins between consecutive multiples of `step` that cover [lo, hi] (lo < hi), the last bin
/// including its right edge: ceil(hi / step) - floor(lo / step).
double bins_covering(double lo, double hi, double step);

} // namespace routepack::views
