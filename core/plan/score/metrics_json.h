#pragma once
// The one JSON codec of LayoutMetrics, shared by the plan file's "metrics" (core/plan/plan_file.cpp)
// and the library's run_results.metrics column (storage/runs.cpp). Include it only where JSON is
// parsed; it pulls in nlohmann/json.hpp.
#include "core/plan/score/metrics.h"
#include "core/util/json_field.h"

namespace routepack {

/// Adds the metrics of `m` but its score to object `out`, in this order: cv_global, ep_peak_sum,
/// ep_tail_peak, ep_balance_efficiency, attention_sum, joint, cap_violations, empty_cells (the
/// score is stored beside them: the plan file's "score" list, the library's score columns).
void write_layout_metrics(const LayoutMetrics& m, nlohmann::ordered_json& out);

/// The fields write_layout_metrics writes, read from object `f` (the score left at zero): the
/// doubles finite, ep_peak_sum and ep_tail_peak integers in 0..2^63-1, cap_violations and
/// empty_cells in 0..2^31-1. JsonField's errors ("p.json: metrics.routepack.joint is missing").
LayoutMetrics read_layout_metrics(const util::JsonField& f);

} // namespace routepack
