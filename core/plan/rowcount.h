#pragma once
// Row count R* (paper eq. 9; DESIGN.md "Row count"): lower bounds, fixed-row FFD, bounded exact
// feasibility search.
#include "core/plan/packing.h"
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

} // namespace routepack
