#include "views/library/sample_data.h"

#include "views/widgets/nice_scale.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>

namespace routepack::views {

std::shared_ptr<const SampleTableData> buildSampleTable(const Trace& trace, const QString& name) {
    auto out = std::make_shared<SampleTableData>();
    out->trace = name;
    out->moeLayers = trace.model.moe_layers;
    const int L = trace.model.num_moe_layers(), E = trace.model.experts;
    const bool has_counts = trace.stride() > 0 && trace.counts.size() == trace.size() * trace.stride();
    out->rows.reserve(trace.size());
    for (std::size_t i = 0; i < trace.size(); ++i) {
        SampleTableData::Row row;
        row.info = trace.samples[i];
        if (has_counts) {
            row.layerShare.assign(static_cast<std::size_t>(L), 0.f);
            row.layerHotExpert.assign(static_cast<std::size_t>(L), -1);
            const auto c = trace.sample_counts(i);
            for (int l = 0; l < L; ++l) {
                std::uint64_t sum = 0;
                std::uint32_t best = 0;
                int arg = -1;
                for (int e = 0; e < E; ++e) {
                    const std::uint32_t v = c[static_cast<std::size_t>(l) * E + e];
                    sum += v;
                    if (v > best) {
                        best = v;
                        arg = e;
                    }
                }
                if (sum == 0) continue;
                const double share = static_cast<double>(best) / static_cast<double>(sum);
                row.meanHotShare += share / L;
                row.layerShare[static_cast<std::size_t>(l)] = static_cast<float>(share);
                row.layerHotExpert[static_cast<std::size_t>(l)] = arg;
                if (share > row.hotShare) {
                    row.hotShare = share;
                    row.hotLayer = trace.model.moe_layers[static_cast<std::size_t>(l)];
                    row.hotExpert = arg;
                }
            }
        }
        out->rows.push_back(std::move(row));
    }
    return out;
}

namespace {

/// Round log-spaced edges from `series` (mantissas in [1, 10), ascending) x 10^k, in whole tokens:
/// the largest series value <= lo, then every one up to the smallest >= hi.
std::vector<double> seriesEdges(const std::vector<double>& series, double lo, double hi) {
    // Lengths are whole tokens: edges are too (1.2 and 1.5 both become 2, kept once).
    std::vector<double> all;
    const int k0 = static_cast<int>(std::floor(std::log10(lo))), k1 = static_cast<int>(std::ceil(std::log10(hi)));
    for (int k = std::max(0, k0); k <= k1; ++k)
        for (double m : series) {
            const double v = std::ceil(std::round(m * std::pow(10.0, k) * 10.0) / 10.0);
            if (all.empty() || v > all.back()) all.push_back(v);
        }
    std::vector<double> out;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const bool next_le_lo = i + 1 < all.size() && all[i + 1] <= lo;
        if (next_le_lo) continue; // not yet the largest value <= lo
        out.push_back(all[i]);
        if (all[i] >= hi) break;
    }
    return out;
}

/// Multiples of `step` from the largest <= lo to the smallest >= hi.
std::vector<double> stepEdges(double step, double lo, double hi) {
    std::vector<double> out;
    const auto first = static_cast<std::int64_t>(std::floor(lo / step)),
               last = static_cast<std::int64_t>(std::ceil(hi / step));
    for (std::int64_t k = first; k <= last; ++k)
        out.push_back(static_cast<double>(k) * step);
    return out;
}

} // namespace

LengthHistogram lengthHistogram(const std::vector<qint64>& lengths, int bins) {
    LengthHistogram h;
    if (lengths.empty() || bins < 1) return h;
    const auto [mn, mx] = std::minmax_element(lengths.begin(), lengths.end());
    const double lo = static_cast<double>(*mn), hi = static_cast<double>(*mx);
    if (*mx == *mn) {
        h.edges = {lo, hi};
        h.counts.assign(1, static_cast<int>(lengths.size()));
        return h;
    }
    h.logarithmic = *mn > 0 && hi / lo >= 8.0;
    if (h.logarithmic) {
        static const std::vector<std::vector<double>> kSeries = {
            {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8}, {1, 1.5, 2, 3, 5, 7}, {1, 2, 5}, {1}};
        for (const auto& series : kSeries) {
            h.edges = seriesEdges(series, lo, hi);
            if (static_cast<int>(h.edges.size()) - 1 <= bins) break;
        }
    } else {
        // Whole tokens: no step of 2.5; a step of 10^308 tokens covers any range in one bin.
        const auto s = round_step({1.0, 2.0, 2.5, 5.0}, 0, 308, [&](const RoundStep& r) {
            return !(r.exponent == 0 && r.mantissa == 2.5) && bins_covering(lo, hi, r.step) <= bins;
        });
        h.edges = stepEdges(s ? s->step : 1e308, lo, hi);
    }
    const int n = static_cast<int>(h.edges.size()) - 1;
    h.counts.assign(static_cast<std::size_t>(n), 0);
    for (qint64 v : lengths) {
        // The bin whose [edge_b, edge_b+1) holds v; the maximum goes into the last bin.
        const auto it = std::upper_bound(h.edges.begin(), h.edges.end(), static_cast<double>(v));
        const int b = std::clamp(static_cast<int>(it - h.edges.begin()) - 1, 0, n - 1);
        ++h.counts[static_cast<std::size_t>(b)];
    }
    return h;
}

QString lengthBinText(const LengthHistogram& h, int bin) {
    if (bin < 0 || static_cast<std::size_t>(bin) >= h.counts.size()) return {};
    const auto b = static_cast<std::size_t>(bin);
    const bool last = b + 1 == h.counts.size();
    // Integer lengths t with edges[b] <= t < edges[b+1] (<= for the last bin).
    const auto from = static_cast<qint64>(std::ceil(h.edges[b]));
    const auto to =
        last ? static_cast<qint64>(std::floor(h.edges[b + 1])) : static_cast<qint64>(std::ceil(h.edges[b + 1])) - 1;
    const int c = h.counts[b];
    return QCoreApplication::translate("LengthHistogramView", "lengths %1-%2 tokens: %3 %4")
        .arg(from)
        .arg(to)
        .arg(c)
        .arg(c == 1 ? QCoreApplication::translate("LengthHistogramView", "sample")
                    : QCoreApplication::translate("LengthHistogramView", "samples"));
}

} // namespace routepack::views
