#include "views/plan/plan_data.h"

#include "core/plan/score/packing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace routepack::views {

bool has_method(const PlanResult& plan, Method m) {
    return plan.method(m) != nullptr;
}

std::vector<Method> plan_methods(const PlanResult& plan) {
    std::vector<Method> out;
    for (const MethodResult* r : plan.methods())
        out.push_back(r->method);
    return out;
}

std::vector<Method> layout_methods(const PlanResult& plan) {
    std::vector<Method> out;
    for (const MethodResult* r : plan.methods())
        if (r->layout.rows > 0) out.push_back(r->method);
    return out;
}

const MethodResult& method_of(const PlanResult& plan, Method m) {
    if (const MethodResult* r = plan.method(m)) return *r;
    throw std::out_of_range(std::string("method_of: the plan has no ") + method_key(m) +
                            " method (one node or no routes)");
}

const Placement& planned_placement(const PlanResult& plan) {
    return plan.placement.routepack.slot.empty() ? plan.placement.lpt : plan.placement.routepack;
}

const std::vector<std::uint64_t>& planned_rank_loads(const PlanResult& plan) {
    return plan.placement.rank_loads_routepack.empty() ? plan.placement.rank_loads_lpt
                                                       : plan.placement.rank_loads_routepack;
}

double planned_cv(const PlanResult& plan) {
    return plan.placement.rank_loads_routepack.empty() ? plan.placement.cv_lpt : plan.placement.cv_routepack;
}

const Placement& placement_of(const PlanResult& plan, Method m) {
    return plan.placement_of(method_of(plan, m).placement);
}

std::int64_t plan_token_cap(const PlanResult& plan) {
    if (plan.topology.token_cap > 0) return plan.topology.token_cap;
    std::vector<std::int64_t> length;
    length.reserve(plan.samples.size());
    for (const auto& s : plan.samples)
        length.push_back(s.length);
    return effective_token_cap(plan.topology, length);
}

std::string grouped_count(std::int64_t v) {
    const std::string digits = std::to_string(v);
    const std::size_t sign = v < 0 ? 1 : 0;
    std::string out = digits.substr(0, sign);
    const std::size_t n = digits.size() - sign;
    for (std::size_t k = 0; k < n; ++k) {
        if (k > 0 && (n - k) % 3 == 0) out += ',';
        out += digits[sign + k];
    }
    return out;
}

std::string comm_figure_text(const PlanResult& plan, const std::optional<std::int64_t>& value) {
    if (plan.comm.nodes <= 1) return {};
    if (!value) return plan.comm.available ? kCommNotComputed : kCommUnavailable;
    return grouped_count(*value);
}

std::vector<double> layer_rank_cv(std::span<const std::uint64_t> G, int L, int P) {
    if (L < 0 || P < 1 || G.size() != static_cast<std::size_t>(L) * static_cast<std::size_t>(P))
        throw std::invalid_argument("layer_rank_cv: G must hold L*P values");
    std::vector<double> cv(static_cast<std::size_t>(L), 0.0);
    for (int l = 0; l < L; ++l) {
        const std::uint64_t* g = G.data() + static_cast<std::size_t>(l) * P;
        // Two-pass in long double: exact enough for display and for comparing with eq. 22.
        long double sum = 0;
        for (int p = 0; p < P; ++p)
            sum += static_cast<long double>(g[p]);
        if (sum == 0) continue;
        const long double mean = sum / P;
        long double var = 0;
        for (int p = 0; p < P; ++p) {
            const long double d = static_cast<long double>(g[p]) - mean;
            var += d * d;
        }
        cv[static_cast<std::size_t>(l)] = static_cast<double>(std::sqrt(var / P) / mean);
    }
    return cv;
}

std::vector<double> normalized_rank_loads(std::span<const std::uint64_t> G, int L, int P) {
    if (L < 0 || P < 1 || G.size() != static_cast<std::size_t>(L) * static_cast<std::size_t>(P))
        throw std::invalid_argument("normalized_rank_loads: G must hold L*P values");
    std::vector<double> out(G.size(), std::numeric_limits<double>::quiet_NaN());
    for (int l = 0; l < L; ++l) {
        const std::size_t base = static_cast<std::size_t>(l) * P;
        std::uint64_t sum = 0;
        for (int p = 0; p < P; ++p)
            sum += G[base + p];
        if (sum == 0) continue;
        const double mean = static_cast<double>(sum) / P;
        for (int p = 0; p < P; ++p)
            out[base + p] = static_cast<double>(G[base + p]) / mean;
    }
    return out;
}

bool window_matches(const PlanResult& plan, const Trace& window) {
    if (window.size() != plan.samples.size()) return false;
    if (window.model.num_moe_layers() != plan.model.num_moe_layers() || window.model.experts != plan.model.experts)
        return false;
    if (window.counts.size() != window.size() * window.stride()) return false;
    for (std::size_t i = 0; i < window.size(); ++i)
        if (window.samples[i].length != plan.samples[i].length) return false;
    return true;
}

std::shared_ptr<const PlanCosts> plan_costs(const PlanResult& plan, const Trace& window) {
    if (!window_matches(plan, window)) return nullptr;
    const std::uint64_t counts = static_cast<std::uint64_t>(window.size()) * window.stride();
    if (counts > kMaxCostCounts) return nullptr;
    auto out = std::make_shared<PlanCosts>();
    const PackingProblem p_id = make_packing_problem(window, plan.topology, plan.placement.identity);
    const PackingProblem p_lpt = make_packing_problem(window, plan.topology, plan.placement.lpt);
    for (const MethodResult* r : plan.methods()) {
        const Placement& pi = plan.placement_of(r->placement);
        const bool shared = &pi == &plan.placement.identity || &pi == &plan.placement.lpt;
        CostBreakdown cb = shared ? cost_breakdown(r->layout, &pi == &plan.placement.lpt ? p_lpt : p_id)
                                  : cost_breakdown(r->layout, make_packing_problem(window, plan.topology, pi));
        std::size_t straggler = 0;
        for (std::size_t g = 1; g < cb.U.size(); ++g)
            if (cb.U[g] > cb.U[straggler]) straggler = g;
        out->method[r->method] = std::move(cb);
        out->straggler[r->method] = static_cast<int>(straggler);
    }
    const Placement& rp = plan.placement_of(plan.routepack.placement);
    if (plan.routepack.layout.rows > 0) {
        out->routepack_at_lpt =
            rp == plan.placement.lpt ? out->method[Method::RoutePack] : cost_breakdown(plan.routepack.layout, p_lpt);
        const auto& U = out->routepack_at_lpt.U;
        out->straggler_at_lpt = static_cast<int>(std::max_element(U.begin(), U.end()) - U.begin());
    }
    return out;
}

std::vector<std::int64_t> cell_tokens(const Layout& x, const std::vector<SampleInfo>& samples) {
    if (!x.well_formed()) return {};
    std::vector<std::int64_t> tokens(static_cast<std::size_t>(x.cell_count()), 0);
    for (int k = 0; k < x.cell_count(); ++k)
        for (int i : x.cell(k))
            tokens[static_cast<std::size_t>(k)] += samples.at(static_cast<std::size_t>(i)).length;
    return tokens;
}

} // namespace routepack::views
