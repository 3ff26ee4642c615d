#include "views/plan/measured_data.h"

#include <algorithm>
#include <stdexcept>

namespace routepack::views {

namespace {

/// Lowest g of the largest value (0 for an empty list).
int argmax(const std::vector<double>& v) {
    return v.empty() ? 0 : static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

/// U[g] = sum_r J[r][g] in row order, as compose_measured adds them.
std::vector<double> shard_totals(const std::vector<double>& joint, int R, int G) {
    std::vector<double> u(static_cast<std::size_t>(G), 0.0);
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < R; ++r)
            u[static_cast<std::size_t>(g)] += joint[static_cast<std::size_t>(r) * G + static_cast<std::size_t>(g)];
    return u;
}

} // namespace

MeasuredFigures measured_figures(const MeasuredStep& m, int plan) {
    const MeasuredPlan& p = m.plans.at(static_cast<std::size_t>(plan));
    MeasuredFigures f;
    f.rows = p.rows;
    f.shards = m.topology.shards();
    f.layers = static_cast<int>(m.moe_layers.size());
    f.ranks = m.topology.ep_ranks;
    f.moe_layers = m.moe_layers;
    const auto R = static_cast<std::size_t>(f.rows), G = static_cast<std::size_t>(f.shards);
    const auto L = static_cast<std::size_t>(f.layers), P = static_cast<std::size_t>(f.ranks);
    f.rank_seconds.assign(L * P, 0.0);
    f.rank_modelled.assign(L * P, 0.0);
    f.rank_tokens.assign(L * P, 0);
    f.attention.assign(R * G, 0.0);
    f.modelled_attention.assign(R * G, 0.0);
    std::vector<double> peak(R * G * L, 0.0), modelled_peak(R * G * L, 0.0);
    for (const MeasuredPiece& pc : p.pieces) {
        const std::size_t rg = static_cast<std::size_t>(pc.row) * G + static_cast<std::size_t>(pc.edp_shard);
        if (pc.attention) {
            f.attention[rg] = std::max(f.attention[rg], pc.seconds);
            f.modelled_attention[rg] = std::max(f.modelled_attention[rg], pc.modelled);
            continue;
        }
        const auto l = static_cast<std::size_t>(
            std::lower_bound(m.moe_layers.begin(), m.moe_layers.end(), pc.moe_layer) - m.moe_layers.begin());
        const std::size_t lp = l * P + static_cast<std::size_t>(pc.ep_rank);
        f.rank_seconds[lp] += pc.seconds;
        f.rank_modelled[lp] += pc.modelled;
        f.rank_tokens[lp] += pc.tokens;
        peak[rg * L + l] = std::max(peak[rg * L + l], pc.seconds);
        modelled_peak[rg * L + l] = std::max(modelled_peak[rg * L + l], pc.modelled);
    }
    f.experts.assign(R * G, 0.0);
    f.modelled_experts.assign(R * G, 0.0);
    f.joint = f.attention;
    f.modelled_joint = f.modelled_attention;
    for (std::size_t rg = 0; rg < R * G; ++rg)
        for (std::size_t l = 0; l < L; ++l) {
            f.experts[rg] += peak[rg * L + l];
            f.modelled_experts[rg] += modelled_peak[rg * L + l];
            f.joint[rg] += peak[rg * L + l]; // the left fold of compose_measured: the same bits
            f.modelled_joint[rg] += modelled_peak[rg * L + l];
        }
    f.shard_seconds = shard_totals(f.joint, f.rows, f.shards);
    f.shard_modelled = shard_totals(f.modelled_joint, f.rows, f.shards);
    f.straggler = argmax(f.shard_seconds);
    f.modelled_straggler = argmax(f.shard_modelled);
    f.step_seconds = f.shard_seconds.empty() ? 0 : f.shard_seconds[static_cast<std::size_t>(f.straggler)];
    f.modelled_step = f.shard_modelled.empty() ? 0 : f.shard_modelled[static_cast<std::size_t>(f.modelled_straggler)];
    return f;
}

std::vector<MeasuredChoice> run_measured_choices(const storage::Library& lib, const std::string& trace,
                                                 const std::string& window, std::int64_t run) {
    std::vector<MeasuredChoice> out;
    for (const storage::MeasuredStepEntry& e : lib.measured_steps(trace, window)) {
        std::shared_ptr<const MeasuredStep> step;
        for (std::size_t k = 0; k < e.plans.size(); ++k) {
            if (e.plans[k].run_id != run) continue;
            if (!step) step = std::make_shared<const MeasuredStep>(lib.measured_step(e.id));
            out.push_back({step, static_cast<int>(k), e.id, e.source, e.plans[k].method});
        }
    }
    return out;
}

PerMethod<std::optional<double>> run_measured_seconds(const std::vector<storage::MeasuredStepEntry>& steps,
                                                      std::int64_t run) {
    PerMethod<std::optional<double>> out;
    for (const storage::MeasuredStepEntry& e : steps)
        for (const storage::MeasuredPlanEntry& p : e.plans)
            if (p.run_id == run)
                if (const std::optional<Method> m = method_from_key(p.method)) out[*m] = p.step_seconds;
    return out;
}

bool run_was_measured(const std::vector<storage::MeasuredStepEntry>& steps, std::int64_t run) {
    return std::any_of(steps.begin(), steps.end(), [run](const storage::MeasuredStepEntry& e) {
        return std::any_of(e.plans.begin(), e.plans.end(),
                           [run](const storage::MeasuredPlanEntry& p) { return p.run_id == run; });
    });
}

} // namespace routepack::views
