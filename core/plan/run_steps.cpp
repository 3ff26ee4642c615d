// The summary of a training run's steps (core/plan/run_steps.h).
#include "core/plan/run_steps.h"

#include <stdexcept>

namespace routepack {

double gain_pct(double base, double x) {
    return base > 0 ? 100.0 * (x - base) / base : 0.0;
}

std::vector<RunStepSummary> summarize_steps(std::span<const RunStepInput> steps) {
    std::vector<RunStepSummary> out(steps.size());
    for (std::size_t k = 0; k < steps.size(); ++k) {
        if (!steps[k].placement) throw std::invalid_argument("summarize_steps: step without a placement");
        RunStepSummary& s = out[k];
        s.gain_pct = gain_pct(steps[k].baseline, steps[k].routepack);
        if (k == 0) continue;
        const Placement& now = *steps[k].placement;
        const Placement& before = *steps[k - 1].placement;
        const auto changed = placement_slot_changes(now, before);
        s.churn_slots = 0;
        for (std::size_t l = 0; l < changed.size(); ++l) {
            const auto n = static_cast<std::int64_t>(changed[l].size());
            s.churn_slots += n;
            if (n > s.churn_layer_slots) {
                s.churn_layer_slots = n;
                s.churn_layer = static_cast<int>(l);
            }
        }
        s.moves = moved_experts(now, before);
    }
    return out;
}

} // namespace routepack
