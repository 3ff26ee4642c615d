#pragma once
// The planner job's progress in proportion to time: the planner's events (PlanEvent) name the stage
// that starts and, in annealing, the level that ended; each stage is weighted by its share of a
// planner run's wall time (measured, PlanResult::timings), so that the percentage shown grows about
// evenly with the seconds that pass. Plain C++ (no Qt); used on the planner job's worker thread.
#include "core/plan/plan_stage.h"
#include "core/plan/planner.h"

#include <array>
#include <map>
#include <string>

namespace routepack::views {

/// Index of a stage name in core's kPlanStages (core/plan/plan_stage.h); -1 for another name
/// (kPlanDone among them).
int planner_stage_index(const std::string& stage);

/// How much of a planner run's wall time each stage takes (kPlanStages order). Any non-negative
/// scale (seconds, percent): StageProgress divides by the sum of the stages that run.
struct StageWeights {
    std::array<double, kPlanStageCount> share{};

    /// The stage table's measured shares (PlanStageRow::weight, percent; core/plan/plan_stage.h).
    static StageWeights defaults();
};

/// A run's measured stage shares from PlanResult::timings (seconds per stage name; "bound", the
/// lower bound computed after placement and before "row count" starts, counts to "placement"), in
/// seconds. A stage the run did not time (communication on one node, a stage a cancel skipped) takes
/// its share from `fallback`, scaled by the ratio of the two runs' common stages, so a one-node
/// run's shares still weight the communication stage of a later multi-node run. `fallback` alone
/// when the timings hold no stage time (all zero or missing).
StageWeights stage_weights_from(const std::map<std::string, double>& timings,
                                const StageWeights& fallback = StageWeights::defaults());

/// Weights measured (or set) for budgets `from`, carried over to budgets `to`: each stage's share
/// times the ratio of the work it does under the two, so that a run with ten times the annealing steps
/// weights its annealing ten times as much. The work: seeding seeds_M (candidates), annealing levels
/// x steps per level x population (proposals over the chains), the final search polish_evaluations
/// (at least 1); placement, row count, baselines, validation and communication do not grow with the
/// budgets and keep their share.
StageWeights scale_stage_weights(const StageWeights& weights, const PlannerBudgets& from, const PlannerBudgets& to);

/// Turns a run's PlanEvents into a fraction of its expected wall time. With w_s the weight of stage s
/// and W the sum over the stages that run (communication only when `communication`), the start of
/// stage s is at sum_{s' before s} w_s' / W; annealing level k (0-based, of `annealing_levels`)
/// ending is at start(annealing) + w_annealing / W x (k + 1) / annealing_levels (capped at the
/// stage's end), and likewise within the communication stage for the levels of routepack+comm's
/// search (events of stage "communication" with a level, the same budgets); "done" is 1. Other events (unknown stages,
/// the final search's improvements) keep the fraction; it never decreases. All weights zero: every stage weighs the
/// same.
class StageProgress {
public:
    StageProgress(const StageWeights& weights, int annealing_levels, bool communication);
    /// The fraction after event `e`, in [0, 1].
    double update(const PlanEvent& e);
    /// The fraction reached so far.
    double fraction() const { return fraction_; }
    /// Where stage `stage` (kPlanStages index) starts, in [0, 1] (1 for a stage that does not run).
    double stageStart(int stage) const;
    /// The stage's part of the whole, w_s / W (0 for a stage that does not run).
    double stageShare(int stage) const;

private:
    std::array<double, kPlanStageCount> start_{};
    std::array<double, kPlanStageCount> part_{};
    int levels_ = 1;
    double fraction_ = 0;
};

} // namespace routepack::views
