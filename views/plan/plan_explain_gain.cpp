#include "views/plan/plan_explain_gain.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace routepack::views {

namespace {

/// The state of layout `x` at placement `pi` from its cost breakdown `cb` and straggler `g`.
GainState make_state(const PlanResult& plan, const Trace& w, const Placement& pi, const Layout& x,
                     const CostBreakdown& cb, int g) {
    GainState s;
    const int R = cb.rows, G = cb.shards, L = w.model.num_moe_layers(), E = w.model.experts, P = pi.ep_ranks;
    if (G < 1 || g < 0 || g >= G) throw std::invalid_argument("split_gain: a method has no costs");
    s.straggler = g;
    s.shard_u = cb.U;
    s.max_u = cb.U[static_cast<std::size_t>(g)];
    s.row_j.assign(static_cast<std::size_t>(R), 0.0);
    for (int r = 0; r < R; ++r) {
        const std::size_t k = static_cast<std::size_t>(r) * G + g;
        s.row_j[static_cast<std::size_t>(r)] = cb.J[k];
        s.attention += cb.A[k];
    }
    s.expert = s.max_u - s.attention;
    s.layer.assign(static_cast<std::size_t>(L), 0);
    s.rank.assign(static_cast<std::size_t>(L) * P, 0);
    const std::vector<int> shard_of = plan.topology.shard_of_slot();
    std::vector<std::int64_t> W(static_cast<std::size_t>(L) * P);
    for (int r = 0; r < R; ++r) {
        std::fill(W.begin(), W.end(), 0);
        for (int d = 0; d < x.dp_slots; ++d) {
            if (shard_of[static_cast<std::size_t>(d)] != g) continue;
            for (const int i : x.cell(x.cell_index(r, d)))
                for (int l = 0; l < L; ++l)
                    for (int e = 0; e < E; ++e)
                        W[static_cast<std::size_t>(l) * P + pi.rank_of(l, e)] +=
                            w.count(static_cast<std::size_t>(i), l, e);
        }
        for (int l = 0; l < L; ++l) {
            const auto* row = W.data() + static_cast<std::size_t>(l) * P;
            const int p = static_cast<int>(std::max_element(row, row + P) - row);
            s.layer[static_cast<std::size_t>(l)] += row[p];
            s.rank[static_cast<std::size_t>(l) * P + p] += row[p];
        }
    }
    return s;
}

using Move = GainStep::Move;

/// Most moved first (ties: lower index, lower rank); unmoved items left out.
std::vector<Move> ranked(std::vector<Move> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](const Move& m) { return m.after == m.before; }), v.end());
    std::stable_sort(v.begin(), v.end(),
                     [](const Move& a, const Move& b) { return std::abs(a.change()) > std::abs(b.change()); });
    return v;
}

GainStep make_step(GainStepKind kind, Method method, const GainState& a, const GainState& b, int P) {
    GainStep st;
    st.kind = kind;
    st.method = method;
    st.before = a.max_u;
    st.after = b.max_u;
    st.attention = b.attention - a.attention;
    st.expert = b.expert - a.expert;
    auto at = [](const auto& v, std::size_t k) { return k < v.size() ? static_cast<double>(v[k]) : 0.0; };
    std::vector<Move> v;
    for (std::size_t g = 0; g < std::max(a.shard_u.size(), b.shard_u.size()); ++g)
        v.push_back({static_cast<int>(g), -1, at(a.shard_u, g), at(b.shard_u, g)});
    st.shards = ranked(std::move(v));
    v.clear();
    for (std::size_t r = 0; r < std::max(a.row_j.size(), b.row_j.size()); ++r)
        v.push_back({static_cast<int>(r), -1, at(a.row_j, r), at(b.row_j, r)});
    st.rows = ranked(std::move(v));
    v.clear();
    for (std::size_t l = 0; l < a.layer.size(); ++l)
        v.push_back({static_cast<int>(l), -1, at(a.layer, l), at(b.layer, l)});
    st.layers = ranked(std::move(v));
    v.clear();
    for (std::size_t k = 0; k < a.rank.size(); ++k)
        v.push_back({static_cast<int>(k) / P, static_cast<int>(k) % P, at(a.rank, k), at(b.rank, k)});
    st.ranks = ranked(std::move(v));
    return st;
}

} // namespace

GainSplit split_gain(const PlanResult& plan, const Trace& window, const PlanCosts& costs) {
    if (!window_matches(plan, window)) throw std::invalid_argument("split_gain: the window does not match the plan");
    GainSplit out;
    out.cap = plan_token_cap(plan);
    const Placement& rp = plan.placement_of(plan.routepack.placement);
    out.refined = !(rp == plan.placement.lpt);
    const int P = plan.placement.lpt.ep_ranks;
    out.states[0] = make_state(plan, window, plan.placement_of(plan.baseline.placement), plan.baseline.layout,
                               costs.method[Method::Baseline], costs.straggler[Method::Baseline]);
    out.states[1] = make_state(plan, window, plan.placement_of(plan.reorder.placement), plan.reorder.layout,
                               costs.method[Method::Reorder], costs.straggler[Method::Reorder]);
    out.states[2] = make_state(plan, window, plan.placement.lpt, plan.routepack.layout, costs.routepack_at_lpt,
                               costs.straggler_at_lpt);
    out.states[3] = out.refined ? make_state(plan, window, rp, plan.routepack.layout, costs.method[Method::RoutePack],
                                             costs.straggler[Method::RoutePack])
                                : out.states[2];
    out.steps[0] = make_step(GainStepKind::Lpt, Method::Reorder, out.states[0], out.states[1], P);
    out.steps[1] = make_step(GainStepKind::Packing, Method::RoutePack, out.states[1], out.states[2], P);
    out.steps[2] = make_step(GainStepKind::Refinement, Method::RoutePack, out.states[2], out.states[3], P);
    return out;
}

std::vector<ConvergenceTailPoint> convergence_tail(const PlanResult& plan, const PlanCosts* costs) {
    if (plan.search.convergence.empty()) return {};
    if (const auto& rounds = plan.search.final_rounds; !rounds.empty()) {
        std::vector<ConvergenceTailPoint> out;
        const bool many = rounds.size() > 1;
        for (std::size_t k = 0; k < rounds.size(); ++k) {
            const std::string n = many ? " " + std::to_string(k + 1) : std::string();
            out.push_back({"final search" + n, rounds[k].searched_max_u});
            if (rounds[k].refined_max_u) out.push_back({"placement refinement" + n, *rounds[k].refined_max_u});
        }
        return out;
    }
    const double final_u = plan.routepack.metrics.score.max_u;
    if (plan.placement_of(plan.routepack.placement) == plan.placement.lpt) return {{"final search", final_u}};
    if (!costs || costs->routepack_at_lpt.shards < 1) return {{"final search and placement refinement", final_u}};
    return {{"final search", costs->routepack_at_lpt.score.max_u}, {"placement refined for the layout", final_u}};
}

} // namespace routepack::views
