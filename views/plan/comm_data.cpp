#include "views/plan/comm_data.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace routepack::views {

std::vector<std::int64_t> coactivation_matrix(const Trace& window, int l) {
    if (!window.has_routes())
        throw std::invalid_argument("coactivation_matrix: the window's samples carry no per-token routes");
    const int L = window.model.num_moe_layers(), E = window.model.experts;
    if (l < 0 || l >= L) throw std::invalid_argument("coactivation_matrix: MoE layer index out of range");
    const auto e_size = static_cast<std::size_t>(E);
    std::vector<std::int64_t> out(e_size * e_size, 0);
    std::vector<std::int32_t> ids, uniq;
    for (const SampleRoutes& r : window.routes) {
        r.layer_ids(l, ids);
        const auto K = static_cast<std::size_t>(r.top_k);
        for (std::int64_t t = 0; t < r.tokens; ++t) {
            uniq.clear();
            for (std::size_t s = 0; s < K; ++s) {
                const std::int32_t e = ids[static_cast<std::size_t>(t) * K + s];
                if (e >= 0 && e < E && std::find(uniq.begin(), uniq.end(), e) == uniq.end()) uniq.push_back(e);
            }
            for (std::int32_t e : uniq)
                for (std::int32_t f : uniq)
                    ++out[static_cast<std::size_t>(e) * e_size + static_cast<std::size_t>(f)];
        }
    }
    return out;
}

ExpertNodeOrder experts_by_node(const Topology& topo, const Placement& pi, int l) {
    if (l < 0 || l >= pi.layers) throw std::invalid_argument("experts_by_node: MoE layer index out of range");
    if (pi.ep_ranks != topo.ep_ranks)
        throw std::invalid_argument("experts_by_node: the placement's EP ranks differ from the topology's");
    const std::vector<int> rank_node = topo.node_of_rank();
    const int E = pi.experts;
    std::vector<int> node_of(static_cast<std::size_t>(E));
    for (int e = 0; e < E; ++e)
        node_of[static_cast<std::size_t>(e)] = rank_node[static_cast<std::size_t>(pi.rank_of(l, e))];
    ExpertNodeOrder out;
    out.experts.resize(static_cast<std::size_t>(E));
    std::iota(out.experts.begin(), out.experts.end(), 0);
    std::stable_sort(out.experts.begin(), out.experts.end(), [&](int a, int b) {
        return node_of[static_cast<std::size_t>(a)] < node_of[static_cast<std::size_t>(b)];
    });
    for (int k = 0; k < E; ++k) {
        out.node.push_back(node_of[static_cast<std::size_t>(out.experts[static_cast<std::size_t>(k)])]);
        if (k > 0 && out.node[static_cast<std::size_t>(k)] != out.node[static_cast<std::size_t>(k - 1)])
            out.boundaries.push_back(k);
    }
    return out;
}

std::vector<std::int64_t> dispatch_matrix(const CommCost& cost, int l) {
    if (l < -1 || l >= cost.layers) throw std::invalid_argument("dispatch_matrix: MoE layer index out of range");
    const auto nn = static_cast<std::size_t>(cost.nodes) * static_cast<std::size_t>(cost.nodes);
    std::vector<std::int64_t> out(nn, 0);
    for (int k = 0; k < cost.layers; ++k) {
        if (l >= 0 && k != l) continue;
        for (std::size_t j = 0; j < nn; ++j)
            out[j] += cost.matrix[static_cast<std::size_t>(k) * nn + j];
    }
    return out;
}

} // namespace routepack::views
