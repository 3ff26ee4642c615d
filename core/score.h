#pragma once
// The exact lexicographic score (paper eqs. 11-16) and its incremental form for swap/relocate moves.
#include "core/packing.h"

#include <compare>
#include <cstdint>
#include <vector>

namespace routepack {

/// Score(x; pi) = (max_g U_g, sum_g U_g, max_{r,g} J_{r,g}) compared lexicographically (eq. 15).
struct Score {
    double max_u = 0;  ///< s0: slowest EDP shard's total work
    double sum_u = 0;  ///< s1: total work over shards
    double max_j = 0;  ///< s2: worst row-shard cost
    auto operator<=>(const Score&) const = default;
    /// Scalar search surrogate E(x) = s0 + 1e-6 s1 + 1e-9 s2 (eq. 16); never used for ranking.
    double energy() const { return max_u + 1e-6 * sum_u + 1e-9 * max_j; }
};

/// Per row-shard costs of a layout, for metrics and views. All [R][G] row-major, U is [G].
/// A = attention (eq. 12), E = expert (eq. 14), J = A + E, U_g = sum_r J (rows summed in order r = 0..R-1).
struct CostBreakdown {
    int rows = 0, shards = 0;
    std::vector<double> A, E, J;
    std::vector<double> U;
    /// Per-row-shard per-layer peak rank load max_p W[r][g][l][p], [R][G][L] (tokens).
    std::vector<std::int64_t> peak;
    Score score;
};

/// Exact cost model written out in DESIGN.md: T[r][d] = sum t_i / C, Q[r][d] = sum (t_i/C)^2,
/// A[r][g] = sum_s max_{d in D_g} (alpha_s T + beta_s Q), W[r][g][l][p] = sum_{d in D_g} sum_i q[i][l][p],
/// E[r][g] = (1/C) sum_l max_p W, J = A + E, U_g = sum_r J. Token sums, sum t_i^2 and W are kept in
/// 64-bit integers; doubles are formed only for A and E, always by the same expressions as
/// IncrementalScorer so the two agree bitwise. The layout must be rectangular (R x D cells).
CostBreakdown cost_breakdown(const Layout& x, const PackingProblem& p);
Score score_layout(const Layout& x, const PackingProblem& p);

/// Maintains a layout with cached integer cell and row-shard state, and rescoring of swap and
/// relocation moves that touches only the affected cells and row-shards (eq. 17: O(L*P) per
/// affected row-shard plus O(R*G) for the U and max J upkeep). After any sequence of moves,
/// score() is bitwise equal to score_layout(layout(), problem).
class IncrementalScorer {
public:
    IncrementalScorer(const PackingProblem& p, const Layout& x);

    const Score& score() const { return score_; }
    const Layout& layout() const { return layout_; }
    const PackingProblem& problem() const { return *p_; }
    int cell_of(int i) const { return cell_of_[i]; }
    std::int64_t cell_tokens(int k) const { return tokens_[k]; }
    /// J[r][g] of the current layout.
    double row_shard_cost(int r, int g) const { return J_[static_cast<std::size_t>(r) * G_ + g]; }
    double shard_total(int g) const { return U_[g]; }

    /// Whether swapping samples i and j (in different cells) keeps both cells <= C.
    bool swap_feasible(int i, int j) const;
    /// Whether moving sample i to cell k keeps its source cell non-empty and k <= C.
    bool relocate_feasible(int i, int k) const;
    /// Applies the move (which must be feasible) and returns the new score.
    const Score& apply_swap(int i, int j);
    const Score& apply_relocate(int i, int k);
    /// Undoes the last applied move (exactly: the cached state returns to its previous bits).
    void undo();

private:
    void recompute_row_shard(int r, int g);
    void recompute_totals();
    const PackingProblem* p_;
    Layout layout_;
    int G_ = 0;
    std::vector<int> cell_of_;                // [n]
    std::vector<int> pos_in_cell_;            // [n]
    std::vector<std::int64_t> tokens_;        // [R*D] sum t_i
    std::vector<std::int64_t> squares_;       // [R*D] sum t_i^2
    std::vector<std::int64_t> W_;             // [R][G][L][P]
    std::vector<std::int64_t> peak_sum_;      // [R][G] sum_l max_p W
    std::vector<double> A_, E_, J_;           // [R][G]
    std::vector<double> U_;                   // [G]
    Score score_;
    struct Undo {
        enum Kind { None, Swap, Relocate } kind = None;
        int i = -1, j = -1, from = -1;
    } last_;
};

}  // namespace routepack
