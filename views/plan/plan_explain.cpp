#include "views/plan/plan_explain.h"

#include "views/widgets/nice_scale.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace routepack::views {

namespace {

void check_placement(const Placement& pi, int l, int p, const char* what) {
    if (pi.layers < 0 || pi.experts < 1 || pi.ep_ranks < 1 ||
        pi.slot.size() != static_cast<std::size_t>(pi.layers) * static_cast<std::size_t>(pi.experts))
        throw std::invalid_argument(std::string(what) + ": placement has no slots for L*E experts");
    if (l < 0 || l >= pi.layers) throw std::invalid_argument(std::string(what) + ": MoE layer index out of range");
    if (p < 0 || p >= pi.ep_ranks) throw std::invalid_argument(std::string(what) + ": EP rank out of range");
}

void check_window(const Trace& window, const Placement& pi, const char* what) {
    if (window.model.num_moe_layers() != pi.layers || window.model.experts != pi.experts ||
        window.counts.size() != window.size() * window.stride())
        throw std::invalid_argument(std::string(what) + ": the placement does not match the window's L and E");
}

} // namespace

std::vector<ExpertTokens> experts_on_rank(std::span<const std::uint64_t> loads, const Placement& pi, int l, int p) {
    check_placement(pi, l, p, "experts_on_rank");
    if (loads.size() != pi.slot.size()) throw std::invalid_argument("experts_on_rank: loads must hold L*E values");
    std::vector<ExpertTokens> out;
    for (int e = 0; e < pi.experts; ++e)
        if (pi.rank_of(l, e) == p) out.push_back({e, loads[static_cast<std::size_t>(l) * pi.experts + e]});
    std::stable_sort(out.begin(), out.end(),
                     [](const ExpertTokens& a, const ExpertTokens& b) { return a.tokens > b.tokens; });
    return out;
}

std::vector<ExpertBound> expert_bounded_layers(std::span<const std::uint64_t> loads, int L, int E, int P) {
    if (L < 0 || E < 1 || P < 1 || loads.size() != static_cast<std::size_t>(L) * static_cast<std::size_t>(E))
        throw std::invalid_argument("expert_bounded_layers: loads must hold L*E values (E, P >= 1)");
    std::vector<ExpertBound> out;
    for (int l = 0; l < L; ++l) {
        const std::uint64_t* row = loads.data() + static_cast<std::size_t>(l) * E;
        std::uint64_t total = 0;
        int hot = 0;
        for (int e = 0; e < E; ++e) {
            total += row[e];
            if (row[e] > row[hot]) hot = e;
        }
        // tokens > total / P, in integers: tokens * P > total.
        if (total == 0 || row[hot] * static_cast<std::uint64_t>(P) <= total) continue;
        out.push_back({l, hot, row[hot], total, static_cast<double>(total) / P});
    }
    return out;
}

std::vector<SampleTokens> top_samples_on_rank(const Trace& window, const Placement& pi, int l, int p, int k) {
    check_placement(pi, l, p, "top_samples_on_rank");
    check_window(window, pi, "top_samples_on_rank");
    if (k < 0) throw std::invalid_argument("top_samples_on_rank: k must be >= 0");
    std::vector<int> experts;
    for (int e = 0; e < pi.experts; ++e)
        if (pi.rank_of(l, e) == p) experts.push_back(e);
    std::vector<SampleTokens> all;
    for (std::size_t i = 0; i < window.size(); ++i) {
        std::uint64_t t = 0;
        for (int e : experts)
            t += window.count(i, l, e);
        if (t > 0) all.push_back({static_cast<int>(i), t});
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const SampleTokens& a, const SampleTokens& b) { return a.tokens > b.tokens; });
    if (all.size() > static_cast<std::size_t>(k)) all.resize(static_cast<std::size_t>(k));
    return all;
}

std::vector<std::uint64_t> row_shard_rank_loads(const Trace& window, const Topology& t, const Placement& pi,
                                                const Layout& x, int r, int g, int l) {
    check_placement(pi, l, 0, "row_shard_rank_loads");
    check_window(window, pi, "row_shard_rank_loads");
    if (r < 0 || r >= x.rows || g < 0 || g >= t.shards() || !x.well_formed())
        throw std::invalid_argument("row_shard_rank_loads: row or EDP shard out of range");
    std::vector<std::uint64_t> W(static_cast<std::size_t>(pi.ep_ranks), 0);
    for (int d : t.edp_shards[static_cast<std::size_t>(g)]) {
        if (d < 0 || d >= x.dp_slots) throw std::invalid_argument("row_shard_rank_loads: DP slot out of range");
        for (int i : x.cell(x.cell_index(r, d))) {
            if (i < 0 || static_cast<std::size_t>(i) >= window.size())
                throw std::invalid_argument("row_shard_rank_loads: sample index out of range");
            for (int e = 0; e < pi.experts; ++e)
                W[static_cast<std::size_t>(pi.rank_of(l, e))] += window.count(static_cast<std::size_t>(i), l, e);
        }
    }
    return W;
}

double log_floor(double lo, double hi) {
    if (lo > 0) return lo;
    return hi > 0 ? hi / 1000.0 : 1.0;
}

double colour_position(double v, const ColourMapping& m) {
    if (!std::isfinite(v)) return std::numeric_limits<double>::quiet_NaN();
    const bool log = m.scale == ColourScale::Log;
    const double floor = log ? log_floor(m.lo, m.hi) : 0.0;
    auto f = [&](double x) { return log ? std::log10(std::max(x, floor)) : x; };
    const double lo = f(log ? floor : m.lo), hi = f(m.hi);
    double t;
    if (m.diverging) {
        // Within the band a value counts as equal to the centre (a few ulps of slack: 1.02 - 1.0 is
        // 0.020000000000000018 in doubles); the halves start at the band's edges.
        const double below = f(m.centre - m.band), above = f(m.centre + m.band);
        if (std::abs(v - m.centre) <= m.band * (1 + 1e-12))
            t = 0.5;
        else if (v < m.centre)
            t = below > lo ? 0.5 * (f(v) - lo) / (below - lo) : 0.0;
        else
            t = hi > above ? 0.5 + 0.5 * (f(v) - above) / (hi - above) : 1.0;
    } else {
        t = hi > lo ? (f(v) - lo) / (hi - lo) : 0.5;
    }
    return std::clamp(t, 0.0, 1.0);
}

namespace {

std::vector<double> linear_ticks(double lo, double hi, int max_ticks) {
    const double raw = (hi - lo) / std::max(1, max_ticks - 1);
    const int k0 = static_cast<int>(std::floor(std::log10(raw))) - 1;
    const auto s = round_step({1.0, 2.0, 5.0}, k0, k0 + 3,
                              [&](const RoundStep& r) { return multiples_within(lo, hi, r.step) <= max_ticks; });
    if (!s) return {lo, hi};
    const double first = std::ceil(lo / s->step - 1e-9);
    // j * m / 10^-k rather than j * step: 3 x 0.1 reads 0.3, not 0.30000000000000004.
    const double scale = std::pow(10.0, std::abs(s->exponent));
    const auto count = static_cast<long long>(multiples_within(lo, hi, s->step)); // <= max_ticks
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(count));
    for (long long t = 0; t < count; ++t) {
        const double j = first + static_cast<double>(t); // an integer-valued tick index
        out.push_back((s->exponent < 0 ? j * s->mantissa / scale : j * s->mantissa * scale) + 0.0); // + 0.0: no -0
    }
    return out;
}

} // namespace

std::vector<double> round_ticks(double lo, double hi, ColourScale scale, int max_ticks) {
    max_ticks = std::max(2, max_ticks);
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {};
    if (scale != ColourScale::Log) return linear_ticks(lo, hi, max_ticks);
    const double floor = log_floor(lo, hi);
    if (!(hi > floor)) return {};
    const int k0 = static_cast<int>(std::floor(std::log10(floor))) - 1;
    const int k1 = static_cast<int>(std::ceil(std::log10(hi))) + 1;
    // Every other power counts from the first one at or above the floor.
    const int first = static_cast<int>(std::ceil(std::log10(floor) - 1e-9));
    auto series = [&](std::initializer_list<double> mantissas, int every) {
        std::vector<double> out;
        for (int k = k0; k <= k1; ++k) {
            if ((((k - first) % every) + every) % every != 0) continue;
            for (double m : mantissas) {
                // Rounded to 12 significant digits so that 0.1 x 2 reads 0.2, not 0.20000000000000001.
                const double v = std::stod(std::to_string(m) + "e" + std::to_string(k));
                if (v >= floor * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
            }
        }
        return out;
    };
    std::vector<double> out = series({1, 2, 5}, 1);
    if (static_cast<int>(out.size()) > max_ticks) out = series({1}, 1);
    if (static_cast<int>(out.size()) > max_ticks) out = series({1}, 2);
    if (out.size() < 2) return linear_ticks(floor, hi, max_ticks);
    return out;
}

int axis_label_stride(int count, double cell_width, double label_width, int every_up_to) {
    if (count <= every_up_to) return 1;
    int stride = 1;
    while (stride < count && stride * cell_width < label_width + 6)
        stride *= 2;
    return stride;
}

} // namespace routepack::views
