#pragma once
// Values of the studio's communication view, derived from one PlanResult and its window: the
// node-by-node dispatch matrix of a method and the expert co-activation (routing affinity) of a MoE
// layer, with the experts ordered by the node that holds them (Grouter paper, "Decoupling
// Communication Optimization": experts used together by the same tokens belong on one node).
// Plain C++ (no widgets) so that tests can check each number by hand.
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/plan/comm/comm.h"
#include "core/plan/score/placement.h"

#include <cstdint>
#include <vector>

namespace routepack::views {

/// Expert co-activation of MoE layer index `l` (0..L-1) over the window's per-token routes:
/// [E][E] row-major, entry (e, f) = number of routed tokens whose top-k at layer l includes both e
/// and f; the diagonal (e, e) = tokens whose top-k includes e. An expert named twice in one token's
/// top-k counts once; missing routes (-1) count for nothing. Symmetric. std::invalid_argument
/// "coactivation_matrix: the window's samples carry no per-token routes" when !window.has_routes(),
/// and "coactivation_matrix: MoE layer index out of range" for l outside 0..L-1.
/// Cost O(sum_i routed_rows_i * K^2) + O(E^2).
std::vector<std::int64_t> coactivation_matrix(const Trace& window, int l);

/// Experts of one MoE layer ordered by the node of their EP rank under a placement.
struct ExpertNodeOrder {
    std::vector<int> experts;    ///< [E] logical experts: node 0's first, then node 1's, ...; by id inside a node
    std::vector<int> node;       ///< [E] node of experts[k]
    std::vector<int> boundaries; ///< positions k (1..E-1) where node[k] != node[k-1]: group boundaries
};

/// The order of MoE layer index `l`'s experts by node: node of expert e = node_of_rank[pi.rank_of(l,
/// e)] (Topology::node_of_rank; rank-major physical slots). std::invalid_argument when l is outside
/// 0..pi.layers-1 or the placement's EP ranks differ from the topology's.
ExpertNodeOrder experts_by_node(const Topology& topo, const Placement& pi, int l);

/// The node-by-node dispatch matrix of a communication cost: [N][N] row-major, entry (a, b) = token
/// copies from node a (the DP slot's node) to node b at MoE layer index `l`, summed over rows
/// (CommCost::matrix; the diagonal = intra-node (token, node) pairs); `l` = -1 sums every MoE layer.
/// std::invalid_argument for l outside -1..L-1.
std::vector<std::int64_t> dispatch_matrix(const CommCost& cost, int l);

} // namespace routepack::views
