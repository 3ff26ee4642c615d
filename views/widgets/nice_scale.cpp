#include "views/widgets/nice_scale.h"

#include <cmath>

namespace routepack::views {

std::optional<RoundStep> round_step(std::initializer_list<double> mantissas, int k_first, int k_last,
                                    const std::function<bool(const RoundStep&)>& fits) {
    for (int k = k_first; k <= k_last; ++k)
        for (const double m : mantissas) {
            const RoundStep s{m, k, m * std::pow(10.0, k)};
            if (fits(s)) return s;
        }
    return std::nullopt;
}

double multiples_within(double lo, double hi, double step) {
    const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
    return last < first ? 0.0 : last - first + 1;
}

double bins_holding(double lo, double hi, double step) {
    return std::floor(hi / step) - std::floor(lo / step) + 1;
}

double bins_covering(double lo, double hi, double step) {
    return std::ceil(hi / step) - std::floor(lo / step);
}

} // namespace routepack::views
