#pragma once
// Metrics of any layout (paper section 5.3, eqs. 21-23, Table 4 columns) and the baselines of
// DESIGN.md ("Baselines").
#include "core/plan/score.h"

#include <cstdint>
#include <string>
#include <vector>

namespace routepack {

/// Table 3-4 quantities of one layout under one placement.
struct LayoutMetrics {
    Score score;                      ///< eq. 15
    double cv_global = 0;             ///< eq. 22 of the placement (window aggregate)
    std::int64_t ep_peak_sum = 0;     ///< S_EP = sum_{r,l} max_{g,p} W[r][g][l][p] (tokens)
    std::int64_t ep_tail_peak = 0;    ///< T_EP = max_{r,g,l,p} W (tokens)
    double ep_balance_efficiency = 0; ///< eta_EP (eq. 23) = sum_{r,l} max_g (1/P) sum_p W / S_EP
    double attention_sum = 0;         ///< sum_{r,g} A
    double joint = 0;                 ///< max_g U_g
    int cap_violations = 0;           ///< cells over C (only karmarkar-karp can have them)
    int empty_cells = 0;              ///< cells with no sample (only karmarkar-karp can have them)
};

/// Metrics of a rectangular layout (cap violations and empty cells counted, not refused).
LayoutMetrics layout_metrics(const Layout& x, const PackingProblem& p, double cv_global);
/// The same metrics straight from the window's routing counts a[i][l][e] under placement pi, for a
/// problem from make_packing_shape (no demand array: one pass over the counts of the layout's
/// samples, O(R*D*L*E) time, O(G*L*P) memory per worker). Equal, bit for bit, to layout_metrics on
/// make_packing_problem(window, topo, pi). std::invalid_argument on layout_metrics' shape errors or
/// when the window, pi and the problem disagree on n, L, E or P.
LayoutMetrics layout_metrics_from_counts(const Layout& x, const PackingProblem& shape, const Trace& window,
                                         const Placement& pi, double cv_global);

/// Largest-differencing (Karmarkar-Karp) K-way partition of token counts, K = rows*D; parts sorted by
/// token sum descending (ties by smallest member index) and dealt to cells k = 0..K-1 as
/// (row k / D, slot k % D). Parts may exceed C: that is reported by layout_metrics, not hidden.
Layout karmarkar_karp_layout(const std::vector<std::int64_t>& length, int rows, int D);

} // namespace routepack
