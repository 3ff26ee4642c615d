#include "views/jobs/stage_progress.h"

#include <algorithm>
#include <cmath>

namespace routepack::views {

int planner_stage_index(const std::string& stage) {
    const std::optional<PlanStage> s = plan_stage_from_name(stage);
    return s ? static_cast<int>(*s) : -1;
}

StageWeights StageWeights::defaults() {
    StageWeights w;
    for (const PlanStageRow& row : kPlanStages)
        w.share[static_cast<std::size_t>(row.stage)] = row.weight;
    return w;
}

StageWeights stage_weights_from(const std::map<std::string, double>& timings, const StageWeights& fallback) {
    StageWeights measured;
    std::array<bool, kPlanStageCount> timed{};
    for (const auto& [name, seconds] : timings) {
        const int s = name == "bound" ? 0 : planner_stage_index(name);
        if (s < 0 || !std::isfinite(seconds) || seconds < 0) continue;
        measured.share[static_cast<std::size_t>(s)] += seconds;
        timed[static_cast<std::size_t>(s)] = true;
    }
    // The stages both know relate the two scales; the untimed ones take the fallback's share on it.
    double common = 0, commonFallback = 0, total = 0;
    for (int s = 0; s < kPlanStageCount; ++s) {
        const auto k = static_cast<std::size_t>(s);
        total += measured.share[k];
        if (timed[k]) {
            common += measured.share[k];
            commonFallback += fallback.share[k];
        }
    }
    if (!(total > 0)) return fallback;
    const double scale = commonFallback > 0 ? common / commonFallback : 0.0;
    for (int s = 0; s < kPlanStageCount; ++s) {
        const auto k = static_cast<std::size_t>(s);
        if (!timed[k]) measured.share[k] = fallback.share[k] * scale;
    }
    return measured;
}

StageWeights scale_stage_weights(const StageWeights& weights, const PlannerBudgets& from, const PlannerBudgets& to) {
    auto work = [](const PlannerBudgets& b, PlanStage s) -> double {
        switch (s) {
        case PlanStage::Seeding:
            return std::max(1, b.seeding.candidates);
        case PlanStage::Annealing:
            return static_cast<double>(std::max(1, b.annealing.levels)) * std::max(1, b.annealing.steps) *
                   std::max(1, b.seeding.population);
        case PlanStage::Polish:
            return static_cast<double>(std::max<std::int64_t>(1, b.polish_evaluations));
        default:
            return 1.0;
        }
    };
    StageWeights out = weights;
    for (const PlanStageRow& row : kPlanStages)
        out.share[static_cast<std::size_t>(row.stage)] *= work(to, row.stage) / work(from, row.stage);
    return out;
}

StageProgress::StageProgress(const StageWeights& weights, int annealing_levels, bool communication)
    : levels_(std::max(1, annealing_levels)) {
    const int comm = static_cast<int>(PlanStage::Communication);
    std::array<double, kPlanStageCount> w{};
    double total = 0;
    for (int s = 0; s < kPlanStageCount; ++s) {
        const auto k = static_cast<std::size_t>(s);
        const double v = weights.share[k];
        w[k] = (s == comm && !communication) || !std::isfinite(v) || v < 0 ? 0.0 : v;
        total += w[k];
    }
    if (!(total > 0)) {
        // No usable weights: every stage that runs weighs the same.
        total = 0;
        for (int s = 0; s < kPlanStageCount; ++s) {
            w[static_cast<std::size_t>(s)] = s == comm && !communication ? 0.0 : 1.0;
            total += w[static_cast<std::size_t>(s)];
        }
    }
    double at = 0;
    for (int s = 0; s < kPlanStageCount; ++s) {
        const auto k = static_cast<std::size_t>(s);
        const bool runs = !(s == comm && !communication);
        part_[k] = w[k] / total;
        start_[k] = runs ? at : 1.0;
        at += part_[k];
    }
}

double StageProgress::stageStart(int stage) const {
    return stage >= 0 && stage < kPlanStageCount ? start_[static_cast<std::size_t>(stage)] : 1.0;
}

double StageProgress::stageShare(int stage) const {
    return stage >= 0 && stage < kPlanStageCount ? part_[static_cast<std::size_t>(stage)] : 0.0;
}

double StageProgress::update(const PlanEvent& e) {
    double f = fraction_;
    if (e.stage == kPlanDone) {
        f = 1.0;
    } else if (const int s = planner_stage_index(e.stage); s >= 0) {
        const auto k = static_cast<std::size_t>(s);
        f = start_[k];
        // The annealing levels of routepack's search, and of routepack+comm's within the
        // communication stage (the same budgets), move the bar through their stage.
        if (e.level &&
            (s == static_cast<int>(PlanStage::Annealing) || s == static_cast<int>(PlanStage::Communication))) {
            const double done = std::min(1.0, static_cast<double>(e.level->level + 1) / levels_);
            f += part_[k] * done;
        }
    }
    fraction_ = std::clamp(std::max(fraction_, f), 0.0, 1.0);
    return fraction_;
}

} // namespace routepack::views
