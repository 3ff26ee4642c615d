#pragma once
// The plan view's explanation of a plan's gain: the plain-language paragraph and table under the
// costs tab, worded from the Qt-free GainSplit (views/plan/plan_explain_gain.h split_gain).
#include "core/plan/planner.h"
#include "views/plan/plan_explain_gain.h"

#include <QString>

namespace routepack::views {

/// The costs view's "why it gains" text from split_gain: one sentence with the whole change of max_g
/// U (4 decimals, and in percent of the baseline, 2 decimals) split into placement (LPT, then the
/// refinement for the layout) and packing, and into attention and expert parts; then a table with one
/// line per step (max_g U before -> after, its change, the attention and expert changes, and the
/// shard, row, MoE layer (absolute id) and EP rank that moved most, each a link, see explainLink).
QString gainExplanationText(const GainSplit& g, const routepack::PlanResult& plan);

/// The target of a link of the "why it gains" text: "shard:<g>:<method key>", "row:<r>:<g>:<method
/// key>", "layer:<l>:<g>:<method key>" (l = MoE layer index) or "rank:<l>:<p>".
struct ExplainLink {
    enum Kind { None, Shard, Row, Layer, Rank } kind = None;
    int a = -1, b = -1; ///< shard: g; row: r, g; layer: l, g; rank: l, p
    routepack::Method method = routepack::Method::RoutePack;
};
/// Parses a link of gainExplanationText (kind None for anything else).
ExplainLink parseExplainLink(const QString& link);

} // namespace routepack::views
