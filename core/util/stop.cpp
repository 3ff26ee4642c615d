// The planner stages' stop condition (see stop.h).
#include "core/util/stop.h"

namespace routepack {

StopToken StopToken::with_time_limit(const std::atomic<bool>* cancel, double time_limit_s, Clock::time_point start) {
    std::optional<Clock::time_point> deadline;
    if (time_limit_s > 0)
        deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_limit_s));
    return StopToken(cancel, deadline);
}

} // namespace routepack
