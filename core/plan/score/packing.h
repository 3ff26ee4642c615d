#pragma once
// The fixed-placement packing problem and its layouts (paper section 3.1-3.2, eqs. 5-8).
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/plan/score/placement.h"
#include "core/util/huge_pages.h"
#include "core/util/index.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace routepack {

/// Everything the packing search needs about a window at a fixed placement. Sample indices i are
/// positions in the window (0..n-1).
struct PackingProblem {
    int n = 0;                        ///< samples
    int L = 0;                        ///< MoE layers
    int P = 0;                        ///< EP ranks
    int D = 0;                        ///< DP slots
    int G = 0;                        ///< EDP shards
    std::int64_t C = 0;               ///< token cap
    std::vector<std::int64_t> length; ///< t_i, [n]
    /// Per-sample rank demand q[i][l][p] = sum_{e: owner(pi_l(e)) = p} a[i][l][e] (eq. 5), [n][L][P].
    /// int32 (half the bytes every move reads): q[i][l][p] <= sum_e a[i][l][e] <= t_i * top_k, and
    /// make_packing_problem refuses a window where t_i * top_k or a layer's routed total reaches
    /// 2^31. Every sum over samples (rank loads W, eq. 13) is formed in int64. Huge-page storage whose
    /// resize leaves the values unwritten (make_packing_problem writes each once, in parallel).
    /// Empty in a problem from make_packing_shape.
    DemandVector demand;
    std::vector<int> shard_of_slot;       ///< [D] -> g
    std::vector<std::vector<int>> shards; ///< [G] -> DP slots of D_g, ascending
    std::vector<AttentionStage> stages;
    /// The stacks' batch rules (Topology::batch): every layout of the problem keeps them (validate_layout),
    /// and every stage only builds or proposes layouts that do. With oversize Alone a sample longer
    /// than C may stand in a cell of its own (the only cells whose token sum may exceed C).
    BatchRules rules;
    /// Communication term of the row cost (routepack+comm): with comm_weight w > 0 every row-shard's
    /// J gains K[r][g] = w * X[r][g] / C, X = sum over its cells (r, d) of comm_sent[i][node_of_slot[d]]
    /// (inter-node token copies, summed over MoE layers; core/plan/comm/comm.h sample_sent_copies). w = 0
    /// (the default, comm_sent empty) is the paper's score, bit for bit.
    double comm_weight = 0;
    int comm_nodes = 0;                  ///< N when comm_sent is set
    std::vector<int> node_of_slot;       ///< [D] node of each DP slot (with comm_sent)
    std::vector<std::int64_t> comm_sent; ///< [n][N] copies sample i sends when its DP slot is on node m
    /// Expert invocation term (Topology::expert_invocation_tokens a > 0): rank p's load at MoE layer l
    /// of row-shard (r, g) is W'[r][g][l][p] = W[r][g][l][p] + a * K[r][g][l][p], K the number of p's
    /// experts that receive at least one token of the row-shard. a = 0 (the default, the lists empty)
    /// is the paper's score, bit for bit. Every scoring entry point (cost_breakdown, score_layout,
    /// IncrementalScorer, layout metrics) forms W'; the search's guides read the linear q.
    std::int64_t invocation_tokens = 0;
    int E = 0; ///< experts per MoE layer (with the invocation term)
    /// Each sample's experts with tokens, CSR over samples: entries slot_offsets[i] .. slot_offsets[i+1]
    /// hold slot_index = l * E + s (ascending; s = p * (E / P) + h, the h-th expert of rank p as
    /// experts_by_rank lists them) and slot_count (its tokens, >= 1). [n + 1] and [nnz] each.
    std::vector<std::int64_t> slot_offsets;
    std::vector<std::int32_t> slot_index;
    std::vector<std::int32_t> slot_count;
    std::vector<std::int32_t> slot_rank; ///< [nnz] l * P + p of each entry: its rank's column of W

    const std::int32_t* q(int i) const { return demand.data() + idx(i) * L * P; }
    bool has_comm_term() const { return comm_weight > 0 && !comm_sent.empty(); }
    bool has_invocation_term() const { return invocation_tokens > 0 && !slot_offsets.empty(); }
    /// Whether a cell of `size` samples and `tokens` tokens is within the cap: tokens <= C, or (oversize
    /// Alone) one sample whatever its length. Without oversize samples the same as tokens <= C.
    bool cell_fits(int size, std::int64_t tokens) const {
        return tokens <= C || (size == 1 && rules.oversize == Oversize::Alone);
    }
    /// Whether moving one sample out of a cell in DP slot `from_slot` (holding `from_size` samples)
    /// into a cell in DP slot `to_slot` (holding `to_size`) keeps every count of `rules`: never with
    /// samples_per_cell, only within one DP slot with samples_per_dp_slot, only into a cell below
    /// max_samples_per_cell. The source must keep a sample (every cell non-empty).
    bool relocation_keeps_counts(int from_slot, int from_size, int to_slot, int to_size) const {
        if (from_size < 2 || rules.samples_per_cell > 0) return false;
        if (rules.samples_per_dp_slot > 0 && from_slot != to_slot) return false;
        return rules.max_samples_per_cell == 0 || to_size < rules.max_samples_per_cell;
    }
    /// Copies sample i sends to other nodes from DP slot d (requires comm_sent).
    std::int64_t sent_from(int i, int d) const {
        return comm_sent[idx(i) * idx(comm_nodes) + idx(node_of_slot[idx(d)])];
    }
};

/// Builds the problem from a window (samples + counts), a topology and a placement: C is
/// effective_token_cap (the topology's cap, or the c longest samples' sum with samples_per_cell c and
/// no cap), the batch rules are the topology's and checked against the window (check_batch_window's
/// InputErrors). InputError naming the sample when t_i > C with oversize Refuse (or with oversize Alone
/// and samples_per_cell > 1: "sample 's0' has 30 tokens, more than the cap C = 12: oversize alone needs
/// a cell of its own, but samples_per_cell puts 2 samples in every cell"), when t_i * top_k >= 2^31 or a layer's
/// routed count total does (int32 demand), or when the window is empty; std::invalid_argument when the trace's E/L
/// differ from the placement's or a layer of the placement gives an EP rank more than E / P experts. One parallel pass
/// over the counts (each q is a gathered sum of its rank's E / P counts).
PackingProblem make_packing_problem(const Trace& window, const Topology& topo, const Placement& pi);

/// The same problem without its demand (`demand` empty, every other field and every check of
/// make_packing_problem but the pass over the counts): for figures formed straight from the counts
/// (layout_metrics_from_counts), which saves the [n][L][P] array when only one layout is measured.
PackingProblem make_packing_shape(const Trace& window, const Topology& topo, const Placement& pi);

/// The logical experts of each MoE layer listed EP rank by EP rank: [L][E], entry l*E + p*H + h
/// (H = E / P) is the h-th expert (ascending) that pi puts on rank p of layer l, so rank p's share of
/// a layer is a sum over one contiguous run of H entries. std::invalid_argument naming the layer when
/// pi gives an EP rank more than its H experts (then another has fewer) or names a rank outside
/// 0..P-1 ("make_packing_problem: the placement of MoE layer index l gives EP rank p more than its H
/// slots").
std::vector<int> experts_by_rank(const Placement& pi);

/// An R x D layout stored flat (compressed sparse rows): cell k = r*D + d (row r, DP slot d) holds
/// the sample indices samples[offsets[k] .. offsets[k+1]) in their order in the cell, and the cells
/// follow one another in k order. A copy costs two allocations whatever R*D. Well formed
/// (well_formed(); the scoring, metrics, seeding and validation entry points check it): rows,
/// dp_slots >= 0, offsets is [R*D + 1] with offsets[0] = 0, never decreasing, and offsets[R*D] =
/// samples.size(). A default Layout is the well-formed 0 x 0 layout. Not an aggregate (a brace list
/// of cells cannot silently fill `samples`): build one with from_cells, from_assignment or by
/// appending cell after cell.
struct Layout {
    int rows = 0;
    int dp_slots = 0;
    /// [sum of cell sizes] sample indices, cell after cell (n of them in a layout of the whole window)
    std::vector<int> samples;
    /// [R*D + 1] start of each cell in `samples`, then samples.size()
    std::vector<int> offsets = {0};

    Layout() = default;

    /// The R x D layout whose cell k holds cells[k] in that order. `cells` is [rows * dp_slots];
    /// std::invalid_argument ("Layout::from_cells: 3 cells, expected rows x dp_slots = 4") otherwise
    /// or when rows or dp_slots is negative. Sample indices are not checked (validate_layout does).
    /// O(R*D + total samples).
    static Layout from_cells(int rows, int dp_slots, const std::vector<std::vector<int>>& cells);
    /// The R x D layout that puts order[j] into cell cell_of[j] for j = 0..m-1 (both [m]), each cell's
    /// samples in increasing j (a stable counting sort: the layout a loop of "append order[j] to its
    /// cell" builds). std::invalid_argument when the sizes differ, rows or dp_slots is negative, or a
    /// cell is outside 0..rows*dp_slots-1. Sample indices are not checked. O(R*D + m), two allocations.
    static Layout from_assignment(int rows, int dp_slots, std::span<const int> order, std::span<const int> cell_of);

    int cell_index(int r, int d) const { return r * dp_slots + d; }
    int cell_count() const { return rows * dp_slots; }
    /// The samples of cell k (0 <= k < cell_count(), unchecked), valid until the layout changes.
    std::span<const int> cell(int k) const {
        const int b = offsets[idx(k)];
        return {samples.data() + b, static_cast<std::size_t>(offsets[idx(k) + 1] - b)};
    }
    /// Number of samples in cell k (0 <= k < cell_count(), unchecked).
    int cell_size(int k) const { return offsets[idx(k) + 1] - offsets[idx(k)]; }
    /// Whether the offsets describe rows x dp_slots cells over `samples` (see the struct). O(R*D).
    bool well_formed() const;
    /// Same shape and the same samples in the same cells in the same order.
    bool operator==(const Layout&) const = default;
};

/// Checks eqs. 6-8, the rectangle and the batch rules (p.rules): R x D cells (a well-formed Layout),
/// every sample exactly once, every cell non-empty, every cell's token sum <= C (or one oversize
/// sample alone, with oversize Alone), every count of the rules. Returns "" when valid, else the first
/// violation in words ("cell (2, 1) holds 9000 tokens > cap 8192", "sample 17 appears twice", "layout
/// has 3 cells, expected R x D = 4", "layout's cell offsets do not split its 12 samples", "cell (2, 1)
/// holds 3 samples, samples_per_cell is 2", "cell (0, 3) holds 5 samples, max_samples_per_cell is 4",
/// "DP slot 1 holds 130 samples, samples_per_dp_slot is 128", ...). O(n + R*D).
std::string validate_layout(const Layout& x, const PackingProblem& p);

/// The samples' fitting lengths, [n]: with oversize Alone a sample longer than C counts as C (nothing
/// else fits beside it, so it stands alone in any layout the packers build); otherwise `length` itself.
/// The row count and the length-only packers read these; the score reads the true lengths.
std::vector<std::int64_t> fitting_lengths(const std::vector<std::int64_t>& length, std::int64_t C,
                                          const BatchRules& rules);

/// The cells of x whose token sum exceeds p.C (each one oversize sample alone, in a valid layout), as
/// cell indices k = r*D + d ascending. O(n).
std::vector<int> oversize_cells(const Layout& x, const PackingProblem& p);

} // namespace routepack
