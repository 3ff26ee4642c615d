#pragma once
// The fixed-placement packing problem and its layouts (paper section 3.1-3.2, eqs. 5-8).
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/plan/placement.h"
#include "core/util/huge_pages.h"

#include <cstdint>
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
    /// Communication term of the row cost (routepack+comm): with comm_weight w > 0 every row-shard's
    /// J gains K[r][g] = w * X[r][g] / C, X = sum over its cells (r, d) of comm_sent[i][node_of_slot[d]]
    /// (inter-node token copies, summed over MoE layers; core/plan/comm.h sample_sent_copies). w = 0
    /// (the default, comm_sent empty) is the paper's score, bit for bit.
    double comm_weight = 0;
    int comm_nodes = 0;                  ///< N when comm_sent is set
    std::vector<int> node_of_slot;       ///< [D] node of each DP slot (with comm_sent)
    std::vector<std::int64_t> comm_sent; ///< [n][N] copies sample i sends when its DP slot is on node m

    const std::int32_t* q(int i) const { return demand.data() + static_cast<std::size_t>(i) * L * P; }
    bool has_comm_term() const { return comm_weight > 0 && !comm_sent.empty(); }
    /// Copies sample i sends to other nodes from DP slot d (requires comm_sent).
    std::int64_t sent_from(int i, int d) const {
        return comm_sent[static_cast<std::size_t>(i) * static_cast<std::size_t>(comm_nodes) +
                         static_cast<std::size_t>(node_of_slot[static_cast<std::size_t>(d)])];
    }
};

/// Builds the problem from a window (samples + counts), a topology and a placement. InputError
/// naming the sample when t_i > C, when t_i * top_k >= 2^31 or a layer's routed count total does
/// (int32 demand), or when the window is empty; std::invalid_argument when the trace's E/L differ
/// from the placement's or a layer of the placement gives an EP rank more than E / P experts.
/// One parallel pass over the counts (each q is a gathered sum of its rank's E / P counts).
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

/// An R x D layout: cells[k] holds the sample indices of cell k = r*D + d (row r, DP slot d).
struct Layout {
    int rows = 0;
    int dp_slots = 0;
    std::vector<std::vector<int>> cells; ///< [R*D]

    int cell_index(int r, int d) const { return r * dp_slots + d; }
    int cell_count() const { return rows * dp_slots; }
    bool operator==(const Layout&) const = default;
};

/// Checks eqs. 6-8 and the rectangle: R x D cells, every sample exactly once, every cell non-empty,
/// every cell's token sum <= C. Returns "" when valid, else the first violation in words
/// ("cell (2, 1) holds 9000 tokens > cap 8192", "sample 17 appears twice", ...).
std::string validate_layout(const Layout& x, const PackingProblem& p);

} // namespace routepack
