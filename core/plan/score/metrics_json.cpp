// The JSON codec of LayoutMetrics (core/plan/score/metrics_json.h).
#include "core/plan/score/metrics_json.h"

#include <limits>

namespace routepack {

void write_layout_metrics(const LayoutMetrics& m, nlohmann::ordered_json& out) {
    out["cv_global"] = m.cv_global;
    out["ep_peak_sum"] = m.ep_peak_sum;
    out["ep_tail_peak"] = m.ep_tail_peak;
    out["ep_balance_efficiency"] = m.ep_balance_efficiency;
    out["attention_sum"] = m.attention_sum;
    out["joint"] = m.joint;
    out["cap_violations"] = m.cap_violations;
    out["empty_cells"] = m.empty_cells;
}

LayoutMetrics read_layout_metrics(const util::JsonField& f) {
    constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
    f.object();
    LayoutMetrics m;
    m.cv_global = f["cv_global"].number();
    m.ep_peak_sum = f["ep_peak_sum"].integer(0);
    m.ep_tail_peak = f["ep_tail_peak"].integer(0);
    m.ep_balance_efficiency = f["ep_balance_efficiency"].number();
    m.attention_sum = f["attention_sum"].number();
    m.joint = f["joint"].number();
    m.cap_violations = static_cast<int>(f["cap_violations"].integer(0, kIntMax));
    m.empty_cells = static_cast<int>(f["empty_cells"].integer(0, kIntMax));
    return m;
}

} // namespace routepack
