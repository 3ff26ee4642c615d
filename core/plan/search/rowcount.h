#pragma once
// Row count R* (paper eq. 9; DESIGN.md "Row count"): lower bounds, fixed-row FFD, bounded exact
// feasibility search.
#include "core/plan/score/packing.h"
#include "core/util/stop.h"

#include <cstdint>
#include <string>
#include <vector>

namespace routepack {

/// FixedRowFFD (Algorithm 2 line 1; DESIGN.md `baseline`): the K = rows*D longest samples seed cells
/// 0..K-1 in nonincreasing length (ties by sample index), the rest follow in the same order into the
/// first cell (lowest index) that still fits C; cell k is (row k / D, DP slot k % D). Returns false
/// (x untouched) when some sample fits nowhere or n < K.
bool fixed_row_ffd(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D, Layout* x);

/// FixedRowFFD under the batch rules' counts (the `baseline` and `reorder` layout when a rule is set):
/// the same order and seeding, and each of the rest goes to the first cell (lowest index) that fits C,
/// holds fewer than rules.cell_limit() samples and whose DP slot holds fewer than samples_per_dp_slot.
/// With samples_per_cell every cell ends with exactly that many (n = rows * D * c). `length` are the
/// fitting lengths (with oversize Alone a sample longer than C counts as C, so it stands alone). With
/// every count free it is fixed_row_ffd. Returns false (x untouched) when a sample fits nowhere, n < K,
/// or the counts cannot be met.
bool fixed_row_ffd_counts(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D,
                          const BatchRules& rules, Layout* x);

/// A layout of `rows` rows keeping the batch rules' counts, or false: fixed_row_ffd_counts, then (with
/// samples_per_dp_slot) the DP slots filled first, each sample in FFD order to the slot of the fewest
/// tokens that still takes a sample, then each slot's samples FFD-packed into its rows; then (with
/// samples_per_cell) the samples in FFD order dealt to the cells in boustrophedon rounds; otherwise
/// the samples in FFD order, each to the cell of the fewest tokens that still has room under the
/// counts (max_samples_per_cell, the slot's samples_per_dp_slot) and stays under C. `length` as for
/// fixed_row_ffd_counts. `by`, when set, names the construction that succeeded.
bool layout_under_counts(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D,
                         const BatchRules& rules, Layout* x, std::string* by = nullptr);

/// Outcome of the row-count stage.
struct RowCount {
    int rows = 0;           ///< R*: smallest certified or best-known feasible row count
    bool certified = false; ///< a lower bound met `rows`, or the exact search proved every smaller R infeasible
    int lower_bound = 0;    ///< best lower bound on R found (volume, bin-packing, min_rows; a multiple of row_multiple)
    std::int64_t nodes = 0; ///< exact-search nodes spent
    /// The stop token ended the exact search before its budget: `rows` is best-known (not certified) and `how` says so.
    bool stopped = false;
    std::string how; ///< one line: which bound / search decided it
    Layout layout;   ///< a feasible layout with `rows` rows (FixedRowFFD or the exact search's)
};

/// R* = min { R >= min_rows, R a multiple of row_multiple : a layout exists }. Lower bounds: token
/// volume ceil(sum t / (C*D)), a bin-packing bound (Martello-Toth L2) on the number of cells,
/// min_rows, each rounded up to a multiple of row_multiple. Feasibility: FixedRowFFD, then an exact
/// bin-packing search bounded by `node_budget` nodes (counted in nodes, never time), at multiples of
/// row_multiple only. InputError "no rectangular layout exists: ..." with the reason when no R <= n/D
/// admits a layout (fewer samples than D; min_rows beyond n/D; cells needed exceed samples; no
/// multiple of row_multiple between the lower bound and n/D); "row count: row_multiple must be >= 1".
/// `stop` (the planner's cancel flag and time limit) is polled every 4096 nodes; once it fires
/// the exact search ends and the best layout found so far is returned with stopped = true (not
/// certified); when no layout was found by then (FixedRowFFD failed everywhere), InputError "no
/// rectangular layout found: ... the exact search was stopped (cancelled or out of time) after N nodes".
RowCount minimum_rows(const std::vector<std::int64_t>& length, std::int64_t C, int D, int min_rows,
                      std::int64_t node_budget, int row_multiple = 1, const StopToken& stop = {});

/// R* under the batch rules (Topology::batch). With every rule free it is minimum_rows. With oversize
/// Alone a sample longer than C counts as C (a cell of its own). With a count rule: the free R* of
/// minimum_rows (with its certified lower bound) and the counts' own bounds (R >= ceil(n / (m D)) with
/// max_samples_per_cell m, R >= ceil(S / m) with samples_per_dp_slot S too; R = n / (c D) with
/// samples_per_cell c; R <= S) give the lower bound; R = lower bound upward (multiples of
/// row_multiple) tries layout_under_counts. `certified` when the first R found is the lower bound;
/// else best-known, and `how` says which bound it is and that the constructions found no layout
/// below. InputError: those of minimum_rows and check_batch_window (with `topology_rows` t), and "no
/// layout keeping samples_per_dp_slot 128 found: the constructions failed at every R in 7..128" when
/// none is found (not a proof: the search over counts is heuristic), or "no rectangular layout exists:
/// samples_per_cell 2 fixes R = 4 rows, but the samples need at least 5 rows at cap 10" when the free
/// bound proves it, or "no rectangular layout exists: with samples_per_cell 2 the best pairing (longest
/// with shortest) puts 11 tokens in a cell, above the cap 10" (a proof: that pairing minimizes the
/// largest pair sum). `t` supplies D, min_rows, row_multiple and the rules; C is the effective cap.
RowCount minimum_rows_under_rules(const std::vector<std::int64_t>& length, std::int64_t C, const Topology& t,
                                  std::int64_t node_budget, const StopToken& stop = {});

} // namespace routepack
