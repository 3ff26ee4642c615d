#pragma once
// Inter-node dispatch volume of one training step: where each token's top-k experts live relative
// to the node of its DP slot, counted once per (token, destination node) as DeepEP's internode
// dispatch sends it (Grouter, "Decoupling Communication Optimization"; DeepEP v1 internode kernels).
#include "core/plan/score/packing.h"
#include "core/util/index.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace routepack {

/// What the studio and the CLI show instead of communication figures when the window's samples
/// carry no per-token routes (libraries imported before routes were kept).
inline constexpr const char* kCommUnavailable = "n/a (re-import the trace)";

/// Per-sample node demand at a fixed placement and node map: tokens[(i*L + l)*N + m] = number of
/// routed tokens of sample i whose top-k logical experts at MoE layer l include at least one held
/// by an EP rank on node m (pi_l, owner(v), Topology::node_of_rank). A token with two of its k
/// experts on node m counts once for m (de-duplicated); a token whose k routes are all missing
/// counts for no node. Where a sample sits does not change it, so the cost of any layout is a sum of
/// these vectors (see comm_cost). Shape [n][L][N], int64 tokens.
struct CommDemand {
    int n = 0;                        ///< samples
    int L = 0;                        ///< MoE layers
    int N = 0;                        ///< nodes
    std::vector<std::int64_t> tokens; ///< [n][L][N]

    const std::int64_t* at(int i, int l) const { return tokens.data() + (idx(i) * idx(L) + idx(l)) * idx(N); }
};

/// True when every sample of the window has its per-token routes (Trace::has_routes); when false,
/// communication figures are kCommUnavailable, never zero.
bool comm_available(const Trace& window);

/// Builds the node demand of a window. InputError "the window's samples carry no per-token routes;
/// re-import the trace" when !comm_available(window); std::invalid_argument when the placement's
/// L / E / P differ from the trace's model or the topology, or a sample's routes do not have its
/// routed_rows tokens. Cost O(sum_i routed_rows_i * L * K).
CommDemand make_comm_demand(const Trace& window, const Topology& topo, const Placement& pi);

/// make_comm_demand for several placements of the same window in one pass over its routes (each
/// sample's layer read once for all of them; a token's nodes as a bit mask, counted per mask when
/// there are at most 8 nodes): result k is make_comm_demand(window, topo, *placements[k]), the same
/// int64 figures.
/// Samples in parallel on the calling oneTBB arena. Same errors.
std::vector<CommDemand> make_comm_demands(const Trace& window, const Topology& topo,
                                          std::span<const Placement* const> placements);

/// The dispatch volume of a layout, in token copies (the combine step sends the same copies back).
/// A token of a sample in cell (r, d) starts on node src = Topology::node_of_dp_slot()[d]; at MoE
/// layer l it is sent once to every other node m that holds one of its experts (inter-node) and
/// stays on src for its experts there (intra-node, also once per token). All figures exact int64.
struct CommCost {
    int rows = 0, layers = 0, nodes = 0;
    std::vector<std::int64_t> sent;     ///< [R][L][N] copies node m sends to other nodes
    std::vector<std::int64_t> received; ///< [R][L][N] copies node m receives from other nodes
    std::vector<std::int64_t> intra;    ///< [R][L][N] tokens on node m with an expert on m
    std::vector<std::int64_t> busiest;  ///< [R][L] max over nodes of max(sent, received)
    std::vector<std::int64_t>
        matrix; ///< [L][N][N] copies from node a (row) to node b, summed over rows; diagonal = intra
    std::vector<std::int64_t> inter_per_layer; ///< [L] sum over rows and nodes of sent
    std::vector<std::int64_t> intra_per_layer; ///< [L] sum over rows and nodes of intra
    std::int64_t inter_total = 0;              ///< all inter-node copies of the step
    std::int64_t intra_total = 0;              ///< all intra-node (token, node) pairs of the step
    std::int64_t busiest_total = 0;            ///< sum over rows and layers of busiest (the serialized critical volume)

    std::size_t rln(int r, int l, int m) const { return (idx(r) * idx(layers) + idx(l)) * idx(nodes) + idx(m); }
};

/// comm cost of layout `x` from the node demand. `node_of_dp_slot` is [x.dp_slots] node ids in
/// 0..c.N-1. std::invalid_argument when the layout is not well formed (Layout::well_formed), a cell
/// names a sample outside 0..c.n-1 or the map does not fit. Cost O(n*L*N + R*L*N + L*N^2).
CommCost comm_cost(const Layout& x, const CommDemand& c, const std::vector<int>& node_of_dp_slot);

/// comm_cost of a layout of `window` on `topo` at placement `pi`, or nullopt when the window has no
/// routes (show kCommUnavailable).
std::optional<CommCost> comm_cost_if_available(const Layout& x, const Trace& window, const Topology& topo,
                                               const Placement& pi);

} // namespace routepack
