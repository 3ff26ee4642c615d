#include "core/plan/comm/comm.h"

#include "core/util/errors.h"
#include "core/util/index.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace routepack {

bool comm_available(const Trace& window) {
    return window.has_routes();
}

CommDemand make_comm_demand(const Trace& window, const Topology& topo, const Placement& pi) {
    if (!comm_available(window))
        throw InputError("the window's samples carry no per-token routes; re-import the trace");
    const int L = window.model.num_moe_layers(), E = window.model.experts, K = window.model.top_k;
    if (pi.layers != L || pi.experts != E || pi.ep_ranks != topo.ep_ranks ||
        pi.slot.size() != static_cast<std::size_t>(L) * static_cast<std::size_t>(E))
        throw std::invalid_argument("make_comm_demand: placement is " + std::to_string(pi.layers) + " x " +
                                    std::to_string(pi.experts) + " on " + std::to_string(pi.ep_ranks) +
                                    " EP ranks, the window and topology say " + std::to_string(L) + " x " +
                                    std::to_string(E) + " on " + std::to_string(topo.ep_ranks));
    const std::vector<int> rank_node = topo.node_of_rank();
    CommDemand c;
    c.n = static_cast<int>(window.size());
    c.L = L;
    c.N = topo.nodes();
    // node_of_expert[l*E + e]: the node of the EP rank holding logical expert e at layer l.
    std::vector<int> node_of_expert(idx(L) * idx(E));
    for (int l = 0; l < L; ++l)
        for (int e = 0; e < E; ++e) {
            const int v = pi.at(l, e);
            if (v < 0 || v >= E)
                throw std::invalid_argument("make_comm_demand: slot out of range at layer " + std::to_string(l));
            node_of_expert[idx(l) * E + e] = rank_node[idx(pi.owner(v))];
        }
    for (std::size_t i = 0; i < window.size(); ++i) {
        const SampleRoutes& r = window.routes[i];
        if (r.layers != L || r.top_k != K || r.tokens != window.samples[i].routed_rows)
            throw std::invalid_argument("make_comm_demand: sample " + window.samples[i].id + " has routes of " +
                                        std::to_string(r.tokens) + " tokens x " + std::to_string(r.layers) +
                                        " layers x top-" + std::to_string(r.top_k) + ", expected " +
                                        std::to_string(window.samples[i].routed_rows) + " x " + std::to_string(L) +
                                        " x top-" + std::to_string(K));
    }
    c.tokens.assign(idx(c.n) * idx(L) * idx(c.N), 0);
    tbb::parallel_for(tbb::blocked_range<int>(0, c.n), [&](const tbb::blocked_range<int>& range) {
        std::vector<std::int32_t> ids;
        // stamp[m] == token number when node m already counted this token (de-duplication).
        std::vector<std::int64_t> stamp(idx(c.N), -1);
        std::int64_t token_no = 0;
        for (int i = range.begin(); i != range.end(); ++i) {
            const SampleRoutes& r = window.routes[idx(i)];
            for (int l = 0; l < L; ++l) {
                r.layer_ids(l, ids);
                const int* ne = node_of_expert.data() + idx(l) * E;
                std::int64_t* out = c.tokens.data() + (idx(i) * L + l) * idx(c.N);
                for (std::int64_t t = 0; t < r.tokens; ++t, ++token_no) {
                    const std::int32_t* p = ids.data() + idx(t) * K;
                    for (int s = 0; s < K; ++s) {
                        if (p[s] < 0) continue;
                        const int m = ne[p[s]];
                        if (stamp[idx(m)] == token_no) continue;
                        stamp[idx(m)] = token_no;
                        ++out[m];
                    }
                }
            }
        }
    });
    return c;
}

CommCost comm_cost(const Layout& x, const CommDemand& c, const std::vector<int>& node_of_dp_slot) {
    if (static_cast<int>(node_of_dp_slot.size()) != x.dp_slots)
        throw std::invalid_argument("comm_cost: node map has " + std::to_string(node_of_dp_slot.size()) +
                                    " DP slots, the layout " + std::to_string(x.dp_slots));
    for (int m : node_of_dp_slot)
        if (m < 0 || m >= c.N)
            throw std::invalid_argument("comm_cost: DP slot node " + std::to_string(m) + " outside 0.." +
                                        std::to_string(c.N - 1));
    if (x.offsets.size() != static_cast<std::size_t>(x.cell_count()) + 1)
        throw std::invalid_argument("comm_cost: layout has " +
                                    std::to_string(x.offsets.empty() ? 0 : x.offsets.size() - 1) + " cells, expected " +
                                    std::to_string(x.cell_count()));
    if (!x.well_formed())
        throw std::invalid_argument("comm_cost: the layout's cell offsets do not split its " +
                                    std::to_string(x.samples.size()) + " samples");
    CommCost k;
    k.rows = x.rows;
    k.layers = c.L;
    k.nodes = c.N;
    const int L = c.L, N = c.N;
    const std::size_t rln = idx(x.rows) * L * N;
    k.sent.assign(rln, 0);
    k.received.assign(rln, 0);
    k.intra.assign(rln, 0);
    k.busiest.assign(idx(x.rows) * L, 0);
    k.matrix.assign(idx(L) * N * N, 0);
    k.inter_per_layer.assign(idx(L), 0);
    k.intra_per_layer.assign(idx(L), 0);
    for (int r = 0; r < x.rows; ++r)
        for (int d = 0; d < x.dp_slots; ++d) {
            const int src = node_of_dp_slot[idx(d)];
            for (int i : x.cell(x.cell_index(r, d))) {
                if (i < 0 || i >= c.n)
                    throw std::invalid_argument("comm_cost: cell (" + std::to_string(r) + ", " + std::to_string(d) +
                                                ") names sample " + std::to_string(i) + ", outside 0.." +
                                                std::to_string(c.n - 1));
                for (int l = 0; l < L; ++l) {
                    const std::int64_t* q = c.at(i, l);
                    std::int64_t* mat = k.matrix.data() + (idx(l) * N + src) * N;
                    for (int m = 0; m < N; ++m) {
                        const std::int64_t v = q[m];
                        if (v == 0) continue;
                        mat[m] += v;
                        if (m == src) {
                            k.intra[k.rln(r, l, m)] += v;
                        } else {
                            k.sent[k.rln(r, l, src)] += v;
                            k.received[k.rln(r, l, m)] += v;
                        }
                    }
                }
            }
        }
    for (int r = 0; r < x.rows; ++r)
        for (int l = 0; l < L; ++l) {
            std::int64_t busiest = 0;
            for (int m = 0; m < N; ++m) {
                const std::size_t at = k.rln(r, l, m);
                busiest = std::max({busiest, k.sent[at], k.received[at]});
                k.inter_per_layer[idx(l)] += k.sent[at];
                k.intra_per_layer[idx(l)] += k.intra[at];
            }
            k.busiest[idx(r) * L + l] = busiest;
            k.busiest_total += busiest;
        }
    for (int l = 0; l < L; ++l) {
        k.inter_total += k.inter_per_layer[idx(l)];
        k.intra_total += k.intra_per_layer[idx(l)];
    }
    return k;
}

std::optional<CommCost> comm_cost_if_available(const Layout& x, const Trace& window, const Topology& topo,
                                               const Placement& pi) {
    if (!comm_available(window)) return std::nullopt;
    return comm_cost(x, make_comm_demand(window, topo, pi), topo.node_of_dp_slot());
}

} // namespace routepack
