#pragma once
// Where a plan's gain comes from, as numbers that add up: the chain baseline -> reorder (LPT
// placement) -> routepack's layout at LPT (the packing search) -> routepack (the placement refined for
// that layout), each state split into the attention and expert parts of its straggler shard, with the
// shards, rows, MoE layers and EP ranks that moved most. Qt-free, so that tests check it by hand.
#include "core/model/trace.h"
#include "core/plan/planner.h"
#include "views/plan/plan_data.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace routepack::views {

/// One state of the gain chain: a layout at a placement, read on its straggler shard g* (argmax_g
/// U[g], lowest g on ties), whose total max_g U = U[g*] = sum_r J[r][g*] (eq. 15) is what the plan
/// minimizes.
struct GainState {
    double max_u = 0;            ///< U[g*]
    int straggler = 0;           ///< g*
    double attention = 0;        ///< sum_r A[r][g*] (eq. 12)
    double expert = 0;           ///< U[g*] - attention: sum_r E[r][g*] (eq. 14)
    std::vector<double> shard_u; ///< [G] U[g] of every shard
    std::vector<double> row_j;   ///< [R] J[r][g*]: each row's share of max_g U
    std::vector<std::int64_t>
        layer; ///< [L] sum_r max_p W[r][g*][l][p] (tokens): layer l's share of the expert part x C
    /// [L][P] the same credited to the rank that peaks (argmax_p W[r][g*][l][p], lowest p on ties), summed
    /// over rows: sum_p rank[l][p] = layer[l].
    std::vector<std::int64_t> rank;
};

/// The three steps of the chain.
enum class GainStepKind {
    Lpt,        ///< baseline -> reorder: identity -> LPT placement, same length-only layout
    Packing,    ///< reorder -> routepack's layout at LPT: the packing search
    Refinement, ///< routepack's layout at LPT -> at routepack's placement (refined for the layout)
};

/// One step of the chain: the change of max_g U and of its parts, and what moved most.
struct GainStep {
    GainStepKind kind = GainStepKind::Lpt;
    routepack::Method method = routepack::Method::Reorder; ///< the method whose views show the step's end
    double before = 0, after = 0;                          ///< max_g U at the step's start and end
    double attention = 0;                                  ///< change of the attention part (after - before)
    double expert = 0; ///< change of the expert part; attention + expert = after - before
    /// One moved item: a shard (index = g), a row (index = r, of the straggler shard at each end), a
    /// MoE layer (index = l) or an EP rank (index = l, rank = p); before/after in U, J or tokens.
    struct Move {
        int index = 0, rank = -1;
        double before = 0, after = 0;
        double change() const { return after - before; }
    };
    /// Each list most moved first (|after - before|, ties: lower index, then lower rank), items that
    /// did not move left out. Rows, layers and ranks are read on each end's straggler shard, so that
    /// their changes add up: sum of row changes = after - before, sum of layer (and rank) changes =
    /// C x expert.
    std::vector<Move> shards, rows, layers, ranks;
    double change() const { return after - before; }
};

/// The whole split: states baseline, reorder, routepack at LPT, routepack; steps Lpt, Packing, Refinement.
/// Placement = Lpt + Refinement (the refinement is credited to the placement), packing = Packing; the
/// three changes add up to routepack - baseline.
struct GainSplit {
    std::array<GainState, 4> states;
    std::array<GainStep, 3> steps;
    std::int64_t cap = 0; ///< C (plan_token_cap), tokens per unit of cost
    bool refined = false; ///< routepack runs on a placement other than LPT
    double placement() const { return steps[0].change() + steps[2].change(); }
    double packing() const { return steps[1].change(); }
    double total() const { return states[3].max_u - states[0].max_u; }
    /// 100 x change / baseline's max_g U (0 when that is 0).
    double percent(double change) const { return states[0].max_u > 0 ? 100.0 * change / states[0].max_u : 0.0; }
};

/// The GainSplit of `plan` on its `window` with `costs` = plan_costs(plan, window). The rank credits
/// read the window's counts under each state's placement (identity for baseline, LPT for reorder and
/// routepack at LPT, routepack's own): O(n * L * E) per state. std::invalid_argument when the window
/// does not match the plan (window_matches) or `costs` lacks a method of the four.
GainSplit split_gain(const routepack::PlanResult& plan, const routepack::Trace& window, const PlanCosts& costs);

/// A point after the annealing levels on the convergence chart.
struct ConvergenceTailPoint {
    std::string label; ///< "final search" or "placement refined for the layout"
    double max_u = 0;
};

/// What the convergence chart draws after the annealing's levels. A plan made in this session has
/// its final pass round by round (PlanSearch::final_rounds): per round "final search K" and, when a
/// refinement followed, "placement refinement K" (no number with one round), the last point the plan's
/// max_g U. A plan read back from its file (a saved run) has no rounds: with costs and a refined
/// placement, the final search's layout at the LPT placement (costs->routepack_at_lpt) and then the
/// plan (routepack's max_g U); otherwise one point, the plan ("final search", the placement unchanged
/// or its refinement not separable without the window). Empty for a plan without levels.
std::vector<ConvergenceTailPoint> convergence_tail(const routepack::PlanResult& plan, const PlanCosts* costs);

} // namespace routepack::views
