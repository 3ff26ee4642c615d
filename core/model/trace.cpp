#include "core/model/trace.h"

#include "core/util/errors.h"

#include <cmath>
#include <cstdio>

namespace routepack {

const char* to_string(LengthRule r) {
    switch (r) {
    case LengthRule::ExplicitTokens: return "explicit-tokens";
    case LengthRule::RowsPlusOne: return "rows+1";
    case LengthRule::Rows: return "rows";
    }
    return "?";
}

void Trace::append(SampleRecord&& r) {
    if (r.counts.size() != stride())
        throw std::logic_error("Trace::append: sample " + r.info.id + " has " + std::to_string(r.counts.size()) +
                               " counts, expected " + std::to_string(stride()));
    counts.insert(counts.end(), r.counts.begin(), r.counts.end());
    samples.push_back(std::move(r.info));
}

std::vector<double> layer_load_cv(std::span<const std::uint64_t> totals, int layers, int experts) {
    std::vector<double> cv(static_cast<std::size_t>(layers), 0.0);
    for (int l = 0; l < layers; ++l) {
        const std::uint64_t* row = totals.data() + static_cast<std::size_t>(l) * experts;
        double sum = 0;
        for (int e = 0; e < experts; ++e) sum += static_cast<double>(row[e]);
        if (sum <= 0) continue;
        const double mean = sum / experts;
        double var = 0;
        for (int e = 0; e < experts; ++e) var += (row[e] - mean) * (row[e] - mean);
        cv[l] = std::sqrt(var / experts) / mean;
    }
    return cv;
}

bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
        if (da && db) {
            std::size_t i0 = i, j0 = j;
            while (i0 < a.size() && a[i0] == '0') ++i0;
            while (j0 < b.size() && b[j0] == '0') ++j0;
            std::size_t i1 = i0, j1 = j0;
            while (i1 < a.size() && a[i1] >= '0' && a[i1] <= '9') ++i1;
            while (j1 < b.size() && b[j1] >= '0' && b[j1] <= '9') ++j1;
            if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
            const int c = a.compare(i0, i1 - i0, b, j0, j1 - j0);
            if (c != 0) return c < 0;
            if ((i1 - i) != (j1 - j)) return (i1 - i) < (j1 - j);  // fewer leading zeros first
            i = i1;
            j = j1;
        } else {
            if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t seed) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t h = seed;
    for (std::size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

std::string hex64(std::uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace routepack
