#pragma once
// The summary of a training run's steps (consecutive windows, each planned on one topology): every
// step's gain of routepack against the baseline, and how the placement changes from one step to the
// next. The one computation behind `routepack sweep` (app/cmd_sweep.cpp: sweep.csv, sweep.json) and
// the studio's Run view (views/run/run_series.h).
#include "core/plan/score/placement.h"

#include <cstdint>
#include <span>
#include <vector>

namespace routepack {

/// 100 x (x - base) / base in percent (negative: x is cheaper than base); 0 when base is not > 0.
/// The gain of routepack's max_g U (eq. 15) against a baseline method's, as both front ends print it.
double gain_pct(double base, double x);

/// One step as summarize_steps reads it.
struct RunStepInput {
    double baseline = 0;                  ///< the baseline's max_g U (eq. 15, tokens)
    double routepack = 0;                 ///< routepack's max_g U
    const Placement* placement = nullptr; ///< routepack's placement at this step (all steps: one shape)
};

/// One step's summary against the previous step. Churn counts physical slots whose logical expert
/// changes (placement_slot_changes: the copies of expert state a trainer makes, one per changed slot); a
/// move is an expert whose EP rank changes (placement_moves: its state crosses GPUs). The first step has no previous
/// step: churn_slots and moves are -1 there.
struct RunStepSummary {
    double gain_pct = 0;                ///< gain_pct(baseline, routepack)
    std::int64_t churn_slots = -1;      ///< changed slots summed over MoE layers
    int churn_layer = -1;               ///< MoE layer index with the most changed slots, the first on ties
                                        ///< (-1: nothing changed, or the first step)
    std::int64_t churn_layer_slots = 0; ///< changed slots of churn_layer
    std::int64_t moves = -1;            ///< experts (over MoE layers) on another EP rank than at the previous step
};

/// The summary of every step, in order. O(steps x L x E). std::invalid_argument when a step has no
/// placement or two consecutive placements differ in shape (placement_moves).
std::vector<RunStepSummary> summarize_steps(std::span<const RunStepInput> steps);

} // namespace routepack
