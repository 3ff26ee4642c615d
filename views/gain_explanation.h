#pragma once
// The plan view's explanation of a plan's gain: the plain-language paragraph under the costs tab,
// worded from the Qt-free GainExplanation (views/plan_explain.h explain_gain).
#include "core/plan/planner.h"
#include "views/plan_explain.h"

#include <QString>

namespace routepack::views {

/// The costs view's plain-language "why it gains" paragraph from explain_gain: the placement gain
/// (baseline -> reorder: experts placed by load instead of in id order), the packing gain (reorder ->
/// routepack: samples packed by their routing instead of by length alone) and the whole, each with
/// both joint costs (4 decimals) and the change in percent (2 decimals); then the EDP shard and the
/// MoE layer (absolute id; summed row peaks sum_{r,g} max_p W) each step moved most.
QString gainExplanationText(const GainExplanation& g, const routepack::PlanResult& plan);

} // namespace routepack::views
