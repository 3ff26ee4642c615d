#include "views/plan_data.h"

#include "core/plan/packing.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace routepack::views {

const char* method_id(int m) {
    static const char* const ids[kAllMethodCount] = {"baseline",  "reorder", "karmarkar_karp",
                                                     "routepack", "grouter", "routepack+comm"};
    if (m < 0 || m >= kAllMethodCount) throw std::out_of_range("method_id: method index out of range");
    return ids[m];
}

const char* method_label(int m) {
    static const char* const labels[kAllMethodCount] = {"Baseline",  "Reorder", "Karmarkar-Karp",
                                                        "RoutePack", "Grouter", "RoutePack+comm"};
    if (m < 0 || m >= kAllMethodCount) throw std::out_of_range("method_label: method index out of range");
    return labels[m];
}

bool has_method(const PlanResult& plan, int m) {
    if (m >= 0 && m < kMethodCount) return true;
    if (m == 4) return plan.grouter.has_value();
    if (m == 5) return plan.routepack_comm.has_value();
    return false;
}

std::vector<int> plan_methods(const PlanResult& plan) {
    std::vector<int> out;
    for (int m = 0; m < kAllMethodCount; ++m)
        if (has_method(plan, m)) out.push_back(m);
    return out;
}

const MethodResult& method_of(const PlanResult& plan, int m) {
    switch (m) {
    case 0:
        return plan.baseline;
    case 1:
        return plan.reorder;
    case 2:
        return plan.karmarkar_karp;
    case 3:
        return plan.routepack;
    case 4:
        if (plan.grouter) return *plan.grouter;
        throw std::out_of_range("method_of: the plan has no grouter method (one node or no routes)");
    case 5:
        if (plan.routepack_comm) return *plan.routepack_comm;
        throw std::out_of_range("method_of: the plan has no routepack+comm method (one node or no routes)");
    default:
        throw std::out_of_range("method_of: method index out of range");
    }
}

const Placement& planned_placement(const PlanResult& plan) {
    return plan.routepack_placement.slot.empty() ? plan.lpt : plan.routepack_placement;
}

const std::vector<std::uint64_t>& planned_rank_loads(const PlanResult& plan) {
    return plan.rank_loads_routepack.empty() ? plan.rank_loads_lpt : plan.rank_loads_routepack;
}

double planned_cv(const PlanResult& plan) {
    return plan.rank_loads_routepack.empty() ? plan.cv_lpt : plan.cv_routepack;
}

const Placement& placement_of(const PlanResult& plan, int m) {
    const MethodResult& r = method_of(plan, m);
    if (r.placement_name == "grouter") return plan.grouter_placement;
    if (r.placement_name == "comm") return plan.comm_placement;
    if (r.placement_name == "refined") return planned_placement(plan);
    return r.lpt ? plan.lpt : plan.identity;
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
    if (plan.nodes <= 1) return {};
    if (!value) return kCommUnavailable;
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
    const PackingProblem p_id = make_packing_problem(window, plan.topology, plan.identity);
    const PackingProblem p_lpt = make_packing_problem(window, plan.topology, plan.lpt);
    for (int m : plan_methods(plan)) {
        const MethodResult& r = method_of(plan, m);
        const Placement& pi = placement_of(plan, m);
        const bool shared = &pi == &plan.identity || &pi == &plan.lpt;
        CostBreakdown cb = shared ? cost_breakdown(r.layout, &pi == &plan.lpt ? p_lpt : p_id)
                                  : cost_breakdown(r.layout, make_packing_problem(window, plan.topology, pi));
        int straggler = 0;
        for (int g = 1; g < cb.shards; ++g)
            if (cb.U[static_cast<std::size_t>(g)] > cb.U[static_cast<std::size_t>(straggler)]) straggler = g;
        out->method[static_cast<std::size_t>(m)] = std::move(cb);
        out->straggler[static_cast<std::size_t>(m)] = straggler;
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
