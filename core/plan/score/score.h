#pragma once
// The exact lexicographic score (paper eqs. 11-16) and its incremental form for swap/relocate moves.
#include "core/plan/score/packing.h"
#include "core/util/grid.h"
#include "core/util/index.h"

#include <compare>
#include <cstdint>
#include <span>
#include <vector>

namespace routepack {

/// Score(x; pi) = (max_g U_g, sum_g U_g, max_{r,g} J_{r,g}) compared lexicographically (eq. 15).
struct Score {
    double max_u = 0; ///< s0: slowest EDP shard's total work
    double sum_u = 0; ///< s1: total work over shards
    double max_j = 0; ///< s2: worst row-shard cost
    auto operator<=>(const Score&) const = default;
    /// Scalar search surrogate E(x) = s0 + 1e-6 s1 + 1e-9 s2 (eq. 16); never used for ranking.
    double energy() const { return max_u + 1e-6 * sum_u + 1e-9 * max_j; }
};

/// Per row-shard costs of a layout, for metrics and views. All [R][G] row-major, U is [G].
/// A = attention (eq. 12), E = expert (eq. 14), J = A + E, U_g = sum_r J (rows summed in order r = 0..R-1).
struct CostBreakdown {
    int rows = 0, shards = 0;
    std::vector<double> A, E, J;
    /// Communication term K = w * X / C per row-shard, [R][G]; empty unless problem.has_comm_term()
    /// (then J = A + E + K).
    std::vector<double> K;
    std::vector<double> U;
    /// Per-row-shard per-layer peak rank load max_p W[r][g][l][p], [R][G][L] (tokens).
    std::vector<std::int64_t> peak;
    Score score;
};

/// Exact cost model written out in DESIGN.md (eqs. 11-15), per cell k = (r, d), row-shard (r, g):
///   T[r][d] = (sum_i t_i) / C,  Q[r][d] = (sum_i t_i^2) / C^2           (eq. 11; both sums int64)
///   A[r][g] = sum_s max_{d in D_g} (alpha_s T[r][d] + beta_s Q[r][d])   (eq. 12; stages in order)
///   W[r][g][l][p] = sum_{d in D_g} sum_{i in B[r][d]} q[i][l][p]         (eq. 13; int64 tokens)
///   E[r][g] = (sum_l max_p W[r][g][l][p]) / C                           (eq. 14; the sum is int64)
///   J = A + E (+ K = w * X / C with the communication term, PackingProblem::comm_weight > 0),
///   U_g = sum_r J[r][g] (left fold over r = 0..R-1),
///   Score = (max_g U_g, sum_g U_g (left fold over g), max_{r,g} J)      (eq. 15)
/// Doubles are formed only from the integer sums, by the same functions IncrementalScorer uses, so
/// the two agree bitwise. The layout must have rows x D cells and sample indices in 0..n-1 (empty
/// cells and cells over C are scored as they are); std::invalid_argument otherwise.
/// Cost O(n*L*P + R*G*L*P + R*D*S).
CostBreakdown cost_breakdown(const Layout& x, const PackingProblem& p);
Score score_layout(const Layout& x, const PackingProblem& p);
/// The same score when the row-shard rank-load peak sums are already known (a search that kept W):
/// `peak_sum` is [R][G] row-major, peak_sum[r*G + g] = sum_l max_p W[r][g][l][p] (tokens, eq. 14).
/// Bitwise equal to score_layout(x, p) when the sums are those of x; O(n + R*G + R*D*S). The
/// problem's demand is not read (it may be empty: make_packing_shape).
/// std::invalid_argument on the shape errors of score_layout or a peak_sum of the wrong size.
Score score_from_peak_sums(const Layout& x, const PackingProblem& p, std::span<const std::int64_t> peak_sum);
/// cost_breakdown from the same peak sums: every field but `peak` (left empty), bitwise equal to
/// cost_breakdown's. The problem's demand is not read (it may be empty: make_packing_shape). The
/// errors of score_from_peak_sums.
CostBreakdown cost_breakdown_from_peak_sums(const Layout& x, const PackingProblem& p,
                                            std::span<const std::int64_t> peak_sum);

/// The expert invocation term of one row-shard (PackingProblem::invocation_tokens a > 0): add() the
/// samples of its cells, then flush(w) adds a * K[l][p] to its rank loads w ([L][P] int64 tokens), K
/// the number of rank p's experts at MoE layer l that receive at least one token, and starts over.
/// Without the term (has_invocation_term() false) both do nothing. O(the samples' nonzero experts).
class InvocationLoads {
public:
    explicit InvocationLoads(const PackingProblem& p);
    void add(int i);
    void flush(std::int64_t* w);

private:
    const PackingProblem* p_;
    int H_ = 1;
    std::vector<unsigned char> seen_;   // [L*E] whether an expert slot has tokens in the row-shard so far
    std::vector<std::int32_t> touched_; // those slots, in first-touch order
};

/// Instruction set of the integer rank-load kernels that new IncrementalScorers and the full path
/// use: "avx512", "avx2" or "scalar" (all three give identical integers, hence identical scores).
const char* score_kernel_isa();
/// Chooses the kernels for objects created afterwards ("auto" = best the CPU supports); for tests
/// and benchmarks. Returns false (and changes nothing) when this CPU/build lacks that ISA.
bool set_score_kernel_isa(const char* isa);

/// A layout stored as each sample's cell and position inside it ([n] ints each): a flat snapshot
/// that rebuilds the exact Layout (cell order included) with layout_from_placement.
struct SamplePlacement {
    std::vector<int> cell; ///< [n] cell k = r*D + d of sample i
    std::vector<int> pos;  ///< [n] position of sample i inside its cell
};
/// The R x D Layout of a placement; std::invalid_argument when a cell or position is out of range
/// or two samples share a position.
Layout layout_from_placement(const SamplePlacement& x, int rows, int dp_slots);

/// Maintains a layout with cached integer cell and row-shard state, and rescoring of swap and
/// relocation moves that touches only the affected cells and row-shards (paper 4.1.2 "Incremental
/// Score"): per move the two cells' sum t and sum t^2, the two row-shards' per-layer peaks of
/// W +- q (O(L*P) each; nothing when both cells share a row-shard, where only A changes), their
/// A, E, J, then U of the affected shards refolded from the first changed row (O(R)), max J per
/// affected shard (O(R)) and the score (O(G)). W itself is written lazily, when the next move is
/// applied, so undo() is O(S + R) and never touches W. After any sequence of moves score(),
/// row_shard_cost() and shard_total() are bitwise equal to cost_breakdown(layout(), problem()).
/// The problem must outlive the scorer; copies are independent (chains may copy their state), and
/// copy-assigning a scorer of the same problem and layout shape into another reuses its storage
/// (no allocation). The layout is flat: every cell is a fixed-capacity slice of one [R*D][cap]
/// array, cap = the most samples a cell within C can hold (the shortest samples first, at most
/// n - (non-empty cells) + 1), so no move allocates. Memory: R*G*L*P int64 for W plus R*D*cap ints.
/// std::invalid_argument when the layout does not fit the problem or names a sample twice;
/// std::logic_error when a relocation would overfill a cell's capacity (an infeasible move).
class IncrementalScorer {
public:
    IncrementalScorer(const PackingProblem& p, const Layout& x);

    const Score& score() const { return score_; }
    /// The current layout, built (allocating) from the flat cells; for callers off the hot path.
    Layout layout() const;
    /// Writes the current layout into `out`, reusing its storage.
    void copy_layout_to(Layout& out) const;
    /// Writes every sample's cell and position into `out` ([n] each, reusing its storage).
    void copy_placement_to(SamplePlacement& out) const;
    int rows() const { return R_; }
    int cell_count() const { return R_ * D_; }
    /// Samples of cell k in their order (valid until the next move).
    std::span<const int> cell(int k) const { return cells_.row(k).first(idx(cell_size_[k])); }
    int cell_size(int k) const { return cell_size_[k]; }
    const PackingProblem& problem() const { return *p_; }
    int cell_of(int i) const { return cell_of_[i]; }
    std::int64_t cell_tokens(int k) const { return tokens_[k]; }
    /// J[r][g] of the current layout.
    double row_shard_cost(int r, int g) const { return J_[idx(row_shard(r, g))]; }
    double shard_total(int g) const { return U_[g]; }
    /// max_r J[r][g] of the current layout.
    double shard_max_j(int g) const { return max_j_[g]; }
    /// The straggler: the first shard g with U_g = max_g U (s0). O(G).
    int straggler_shard() const {
        int gs = 0;
        for (int g = 1; g < G_; ++g)
            if (U_[g] > U_[gs]) gs = g;
        return gs;
    }

    /// Whether swapping samples i and j (in different cells) keeps both cells within the cap
    /// (PackingProblem::cell_fits: <= C, or one oversize sample alone). Swaps keep every count of the
    /// batch rules. O(1).
    bool swap_feasible(int i, int j) const;
    /// Whether moving sample i to cell k (a valid cell other than i's own) keeps its source cell
    /// non-empty, every count of the batch rules (PackingProblem::relocation_keeps_counts) and k <= C.
    /// O(1).
    bool relocate_feasible(int i, int k) const;
    /// Applies the move (which must be feasible) and returns the new score. A swap within one cell
    /// or a relocation to i's own cell changes nothing (and undo() after it does nothing).
    const Score& apply_swap(int i, int j);
    const Score& apply_relocate(int i, int k);
    /// Undoes the last applied move (exactly: the cached state, the layout's cell order included,
    /// returns to its previous bits). Only one level: a second undo() in a row does nothing.
    void undo();

private:
    /// Index of row-shard (r, g) in the per-row-shard arrays, which are shard-major ([G][R]) so that
    /// a shard's column J[.][g] is contiguous for the U fold and the max.
    int row_shard(int r, int g) const { return g * R_ + r; }
    /// Applies the pending W update of the last kept move (lazy: apply_* only reads W to form the new
    /// peaks; the write happens here, before the next move, so that undo() never touches W).
    void commit_pending();
    void begin_move(int ka, int kb, int* rsa, int* rsb);
    void finish_move();
    void save_cell(int slot, int k);
    void save_row_shard(int slot, int rs);
    void save_shard(int slot, int g, int r0);
    void refresh_cell(int k);
    void refresh_attention(int rs);
    void refresh_shard(int g, int r0);

    int* cell_data(int k) { return cells_.row(k).data(); }

    const PackingProblem* p_;
    int cap_ = 1;                // samples a cell can hold (the columns of cells_)
    Grid<int> cells_;            // [R*D][cap_] sample indices, cell_size_[k] used
    std::vector<int> cell_size_; // [R*D]
    int R_ = 0, G_ = 0, D_ = 0, L_ = 0, P_ = 0, S_ = 0;
    std::size_t LP_ = 0;                 // L*P, one row-shard's W block
    double c_ = 0;                       // C as double (eqs. 11, 14)
    const void* kernels_ = nullptr;      // integer kernel table (ISA chosen at construction)
    std::vector<int> slot_shard_;        // [D] -> g
    std::vector<int> shard_begin_;       // [G+1] offsets into shard_slots_
    std::vector<int> shard_slots_;       // D_g lists, concatenated
    std::vector<double> alpha_, beta_;   // [S]
    std::vector<int> cell_of_;           // [n]
    std::vector<int> pos_in_cell_;       // [n]
    std::vector<std::int64_t> tokens_;   // [R*D] sum t_i (tokens)
    std::vector<std::int64_t> squares_;  // [R*D] sum t_i^2 (tokens^2)
    Grid<double> cell_cost_;             // [R*D][S] alpha_s T + beta_s Q
    Grid<std::int64_t> W_;               // [G*R][L*P] rank loads (tokens), row rs = row_shard(r, g)
    std::vector<std::int64_t> peak_sum_; // [G][R] sum_l max_p W (tokens)
    std::vector<double> A_, E_, J_;      // [G][R]
    std::vector<std::int64_t> sent_;     // [G][R] inter-node copies X (only with the communication term)
    bool comm_ = false;                  // problem has the communication term
    Grid<double> prefix_;                // [G][R] left fold of J[0..r][g]; U_g = prefix(g, R-1)
    std::vector<double> U_;              // [G]
    std::vector<double> max_j_;          // [G] max_r J[r][g]
    Score score_;
    /// Expert invocation term (PackingProblem::has_invocation_term): W_ holds W' = W + a * K, and X_
    /// the tokens of every expert slot per row-shard; a move's deltas of W' are formed from X_ and the
    /// moved samples' expert lists (inv_delta) and written, with X_, by commit_pending().
    bool inv_ = false;
    int inv_E_ = 0, inv_H_ = 1;
    Grid<std::int64_t> X_;                 // [G*R][L*E] tokens per expert slot
    std::vector<std::int64_t> dA_;         // [L*P] pending W' delta of the source row-shard
    std::vector<std::int64_t> dB_;         // [L*P] pending W' delta of the target row-shard
    std::vector<std::int64_t> wt_;         // [L*P] scratch W' + delta
    std::vector<std::uint64_t> inv_stamp_; // [L*E] the move that last listed a slot of i (inv_delta)
    std::vector<std::int32_t> inv_count_;  // [L*E] i's tokens there
    std::uint64_t inv_stamp_now_ = 0;
    void inv_delta(int i, int j, int rsa, int rsb);
    void inv_commit();
    /// What undo() needs: the move, and the previous bits of everything it changed except W
    /// (W is only written by commit_pending(), after the move was kept).
    struct Undo {
        enum Kind { None, Noop, Swap, Relocate } kind = None;
        int i = -1, j = -1;
        int from = -1, to = -1; // cells: i's source, j's cell / relocation target
        int pos_i = -1;         // i's position in `from` before the move
        bool w_pending = false; // the move changed W and commit_pending() has not run
        int cell[2] = {-1, -1};
        std::int64_t tokens[2] = {0, 0}, squares[2] = {0, 0};
        int nrs = 0, rs[2] = {-1, -1};
        double A[2] = {0, 0}, E[2] = {0, 0}, J[2] = {0, 0};
        std::int64_t peak_sum[2] = {0, 0};
        std::int64_t sent[2] = {0, 0};
        int ng = 0, g[2] = {-1, -1}, r0[2] = {0, 0};
        double U[2] = {0, 0}, max_j[2] = {0, 0};
        Score score;
    } last_;
    Grid<double> undo_cost_;   // [2][S] previous cell_cost_ of the two cells
    Grid<double> undo_prefix_; // [2][R] previous prefix_ of the affected shards (from r0)
};

} // namespace routepack
