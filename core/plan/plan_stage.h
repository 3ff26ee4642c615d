#pragma once
// The planner's stages, each named once: the PlanEvent stage name and PlanResult::timings key that
// plan_window emits (core/plan/planner.cpp), the fraction it reports when the stage starts, and the
// default share of a run's wall time the studio's progress bar weights it by (views/jobs/stage_progress.h).
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace routepack {

/// A stage of plan_window, in the order it runs them: the placement (LPT and its bound), the row
/// count R*, the three baselines, seeding, annealing, the final search ("polish", with the placement
/// refinement), validation, and the communication methods (more than one node only).
enum class PlanStage { Placement, RowCount, Baselines, Seeding, Annealing, Polish, Validate, Communication };

/// One row of the stage table.
struct PlanStageRow {
    PlanStage stage;
    const char* name; ///< PlanEvent::stage when it starts, and its PlanResult::timings key (seconds)
    double progress;  ///< PlanEvent::fraction when it starts, in [0, 1]
    /// Default share of a planner run's wall time, percent (measured on the real DeepSeek-V2-Lite window,
    /// first 512 samples, default budgets, 2 workers, the median of three runs: the stages of a one-node
    /// plan on deepseek-v2-lite-ep16-dp8 in percent of its total time, 0.16 s: placement and bound 0.94,
    /// row count 0.04, baselines 0.67, seeding 2.30, annealing 13.36, final search 81.60, validate under
    /// 0.01, the rest scoring and metrics between the stages; communication as on
    /// deepseek-v2-lite-ep16-dp8-2nodes, where it took 86.32 % of the run, 0.95 of 1.10 s, i.e. 6.310
    /// times the other stages: 631.0).
    double weight;
};

/// Every stage, in PlanStage order (kPlanStages[index].stage == the PlanStage of that index).
inline constexpr std::array<PlanStageRow, 8> kPlanStages{{
    {PlanStage::Placement, "placement", 0.0, 0.94},
    {PlanStage::RowCount, "row count", 0.1, 0.04},
    {PlanStage::Baselines, "baselines", 0.2, 0.67},
    {PlanStage::Seeding, "seeding", 0.3, 2.30},
    {PlanStage::Annealing, "annealing", 0.4, 13.36},
    {PlanStage::Polish, "polish", 0.95, 81.60},
    {PlanStage::Validate, "validate", 0.97, 0.01},
    {PlanStage::Communication, "communication", 0.98, 631.0},
}};

/// Number of stages.
inline constexpr int kPlanStageCount = static_cast<int>(kPlanStages.size());

/// The PlanEvent stage name of the last event of a run (fraction 1); not a stage.
inline constexpr const char* kPlanDone = "done";

/// The row of stage s.
constexpr const PlanStageRow& plan_stage(PlanStage s) {
    return kPlanStages[static_cast<std::size_t>(s)];
}

/// The stage named `name` (exact); nullopt for any other text ("done", "bound" among them).
constexpr std::optional<PlanStage> plan_stage_from_name(std::string_view name) {
    for (const PlanStageRow& row : kPlanStages)
        if (name == row.name) return row.stage;
    return std::nullopt;
}

} // namespace routepack
