#pragma once
// Communication-aware placement and packing: the parts of the `grouter` and `routepack+comm` methods
// that decide which node a sample and an expert live on (Grouter paper, "Decoupling Communication
// Optimization", Algorithm "Optimize Sample-to-Node Assignment"; RoutePack's LPT bound, Algorithm 1).
#include "core/plan/comm/comm.h"
#include "core/util/stop.h"

#include <cstdint>
#include <span>
#include <vector>

namespace routepack {

/// Copies sample i sends to other nodes over all MoE layers when its DP slot is on node m:
/// out[i*N + m] = sum_l sum_{m' != m} c.tokens[i][l][m'] (tokens, counted once per (token,
/// destination node), as comm_cost counts them). Shape [n][N].
std::vector<std::int64_t> sample_sent_copies(const CommDemand& c);

/// Turns on the communication term of the row cost in `p` (PackingProblem::comm_weight): copies from
/// sample_sent_copies(c), DP slot nodes `node_of_slot` [D] (ids 0..c.N-1), weight w >= 0.
/// std::invalid_argument when c.n != p.n or the node map does not fit p.D / c.N.
void set_comm_term(PackingProblem& p, const CommDemand& c, const std::vector<int>& node_of_slot, double weight);

/// Each sample's home node under a capacity: samples are taken in order of how strongly they prefer
/// one node (local tokens sum_l c[i][l][m] of the best node minus the second best, ties by index) and
/// go to their best node that still has room, room being the node's share of all tokens
/// (sum_i t_i * DP slots on m / D) plus `slack` of it; when no node with room would take it, to the
/// node with the most room. A node with room for everyone gets the paper's plain rule (most local
/// tokens). [n] node ids. std::invalid_argument when `length` is not [c.n] or the map has no slot.
std::vector<int> balanced_home_nodes(const CommDemand& c, std::span<const std::int64_t> length,
                                     const std::vector<int>& node_of_slot, double slack = 0.05);

/// Placement of routepack+comm: starts from `lpt` and, per MoE layer, swaps the slots of two
/// logical experts on EP ranks of different nodes when that keeps more of the home nodes' tokens
/// local (gain = M[e][node f] + M[f][node e] - M[e][node e] - M[f][node f], M[e][m] = tokens of
/// samples homed on m routed to e, from the window's counts) and keeps both ranks' loads at most
/// floor((1 + tolerance) * LPT's busiest rank load of that layer). Sweeps over e (best partner f
/// each) until no gain or 8 sweeps. Deterministic. [L][E] slots like lpt; std::invalid_argument when
/// `home` is not [n] or a node id is out of range. `stop` is polled before every sweep of every layer
/// (from worker threads); once it fires the layers keep the swaps made so far (a valid placement
/// within the tolerance, but then depending on timing).
Placement comm_aware_placement(const Trace& window, const Topology& topo, const Placement& lpt,
                               std::span<const std::uint64_t> loads, const std::vector<int>& home, double tolerance,
                               const StopToken& stop = {});

/// A layout whose samples sit on their home nodes where cap and rectangle allow.
struct NodePacking {
    Layout layout;
    std::vector<int> off_node; ///< samples not on their home node, ascending
    bool fitted = false;       ///< false: no R x D layout was found this way (the caller falls back)
};

/// Packs samples onto their home nodes' DP slots (`node_of_slot` [D]) in `rows` rows: longest first
/// (ties by index), each into the emptiest cell (fewest tokens, then lowest index) of its home node
/// that stays <= C, else into the emptiest fitting cell of any node (then it is off-node); then
/// every empty cell takes the shortest sample of the fullest cell (most samples) of its own node,
/// else of any node. fitted = false when a sample fits no cell or an empty cell finds no donor.
NodePacking pack_on_home_nodes(std::span<const std::int64_t> length, std::int64_t C, int rows,
                               const std::vector<int>& node_of_slot, const std::vector<int>& home);

} // namespace routepack
