#pragma once
// Metrics of any layout (paper section 5.3, eqs. 21-23, Table 4 columns) and the baselines of
// DESIGN.md ("Baselines").
#include "core/plan/score/score.h"

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

/// Karmarkar-Karp under the batch rules' counts (the karmarkar_karp baseline when a count rule is set):
/// the equal-size largest differencing of verl's get_seqlen_balanced_partitions (equal_size=True),
/// applied to token counts. It is not a replica of a stack: verl balances workloads (24576 t + t^2)
/// over DP ranks and then splits each rank by rearrange_micro_batches, slime deals micro-batches of
/// consecutive samples; those replicas live in tests/bench/stack_balancers.h.
///  - samples_per_cell c: equal-size largest differencing into K = rows*D parts of exactly c samples
///    (the samples in nonincreasing length, ties by index, form n / K tuples of K one-sample parts;
///    the two tuples with the largest spread are combined, the larger's parts in descending sum with
///    the smaller's in ascending sum), parts dealt as karmarkar_karp_layout does;
///  - samples_per_dp_slot S (no c): equal-size largest differencing into D parts of S samples (part d
///    in descending sum is DP slot d), then karmarkar_karp_layout of each part into `rows` cells of
///    its DP slot (row r its r-th part in descending sum);
///  - otherwise (max_samples_per_cell only, or no count): karmarkar_karp_layout.
/// max_samples_per_cell is never kept (as in the stacks' balancers, which do not know it): a cell above it is a
/// finding about the partition, like a part over C.
/// Parts may exceed C, as with karmarkar_karp_layout. std::invalid_argument when rows < 1 or D < 1,
/// or the counts do not divide n.
Layout karmarkar_karp_layout(const std::vector<std::int64_t>& length, int rows, int D, const BatchRules& rules);

/// Equal-size largest differencing of the samples `items` (indices into `length`) into k parts of
/// items.size() / k samples each (k must divide it); parts in descending token sum (ties by smallest
/// member), members ascending. std::invalid_argument when k < 1 or k does not divide the count.
std::vector<std::vector<int>> equal_size_kk(const std::vector<std::int64_t>& length, std::vector<int> items, int k);

} // namespace routepack
