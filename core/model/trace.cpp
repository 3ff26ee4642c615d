#include "core/model/trace.h"

#include "core/util/errors.h"

#include <cmath>
#include <cstdio>

namespace routepack {

const char* to_string(LengthRule r) {
    switch (r) {
    case LengthRule::ExplicitTokens:
        return "explicit-tokens";
    case LengthRule::RowsPlusOne:
        return "rows+1";
    case LengthRule::Rows:
        return "rows";
    }
    return "?";
}

int route_id_width(int experts) {
    if (experts <= 0xff) return 1;
    if (experts <= 0xffff) return 2;
    return 4;
}

SampleRoutes SampleRoutes::make(std::int64_t tokens, int layers, int top_k, int experts) {
    if (tokens < 0 || layers < 0 || top_k < 0 || experts < 1)
        throw std::logic_error("SampleRoutes::make: negative shape");
    SampleRoutes r;
    r.tokens = tokens;
    r.layers = layers;
    r.top_k = top_k;
    r.width = route_id_width(experts);
    r.bytes.assign(static_cast<std::size_t>(tokens) * static_cast<std::size_t>(layers) *
                       static_cast<std::size_t>(top_k) * static_cast<std::size_t>(r.width),
                   0xff);
    return r;
}

std::int32_t SampleRoutes::at(int l, std::int64_t t, int s) const {
    const std::uint8_t* p = bytes.data() + index(l, t, s) * static_cast<std::size_t>(width);
    switch (width) {
    case 1:
        return p[0] == 0xff ? -1 : p[0];
    case 2: {
        const std::uint32_t v = p[0] | (std::uint32_t(p[1]) << 8);
        return v == 0xffff ? -1 : static_cast<std::int32_t>(v);
    }
    default: {
        const std::uint32_t v =
            p[0] | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) | (std::uint32_t(p[3]) << 24);
        return v == 0xffffffffu ? -1 : static_cast<std::int32_t>(v);
    }
    }
}

void SampleRoutes::set(int l, std::int64_t t, int s, std::int32_t id) {
    std::uint8_t* p = bytes.data() + index(l, t, s) * static_cast<std::size_t>(width);
    const std::uint32_t v = id < 0 ? 0xffffffffu : static_cast<std::uint32_t>(id);
    for (int b = 0; b < width; ++b)
        p[b] = static_cast<std::uint8_t>(v >> (8 * b));
}

void SampleRoutes::layer_ids(int l, std::vector<std::int32_t>& out) const {
    const std::size_t n = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(top_k);
    out.resize(n);
    const std::uint8_t* p = bytes.data() + index(l, 0, 0) * static_cast<std::size_t>(width);
    if (width == 1) {
        for (std::size_t k = 0; k < n; ++k)
            out[k] = p[k] == 0xff ? -1 : p[k];
        return;
    }
    if (width == 2) {
        for (std::size_t k = 0; k < n; ++k) {
            const std::uint32_t v = p[2 * k] | (std::uint32_t(p[2 * k + 1]) << 8);
            out[k] = v == 0xffff ? -1 : static_cast<std::int32_t>(v);
        }
        return;
    }
    for (std::size_t k = 0; k < n; ++k) {
        const std::uint8_t* q = p + 4 * k;
        const std::uint32_t v =
            q[0] | (std::uint32_t(q[1]) << 8) | (std::uint32_t(q[2]) << 16) | (std::uint32_t(q[3]) << 24);
        out[k] = v == 0xffffffffu ? -1 : static_cast<std::int32_t>(v);
    }
}

bool Trace::has_routes() const {
    if (samples.empty() || routes.size() != samples.size()) return false;
    for (const auto& r : routes)
        if (r.empty()) return false;
    return true;
}

void Trace::append(SampleRecord&& r) {
    if (r.counts.size() != stride())
        throw std::logic_error("Trace::append: sample " + r.info.id + " has " + std::to_string(r.counts.size()) +
                               " counts, expected " + std::to_string(stride()));
    if (!r.routes.empty()) {
        const SampleRoutes& x = r.routes;
        if (x.layers != model.num_moe_layers() || x.top_k != model.top_k || x.width != route_id_width(model.experts) ||
            x.tokens < 0 ||
            x.bytes.size() !=
                static_cast<std::size_t>(x.tokens) * x.layers * x.top_k * static_cast<std::size_t>(x.width))
            throw std::logic_error("Trace::append: sample " + r.info.id +
                                   " has routes of another shape than the model's");
    }
    counts.insert(counts.end(), r.counts.begin(), r.counts.end());
    if (!r.routes.empty() || !routes.empty()) {
        routes.resize(samples.size());
        routes.push_back(std::move(r.routes));
    }
    samples.push_back(std::move(r.info));
}

std::vector<double> layer_load_cv(std::span<const std::uint64_t> totals, int layers, int experts) {
    std::vector<double> cv(static_cast<std::size_t>(layers), 0.0);
    for (int l = 0; l < layers; ++l) {
        const std::uint64_t* row = totals.data() + static_cast<std::size_t>(l) * experts;
        double sum = 0;
        for (int e = 0; e < experts; ++e)
            sum += static_cast<double>(row[e]);
        if (sum <= 0) continue;
        const double mean = sum / experts;
        double var = 0;
        for (int e = 0; e < experts; ++e)
            var += (row[e] - mean) * (row[e] - mean);
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
            while (i0 < a.size() && a[i0] == '0')
                ++i0;
            while (j0 < b.size() && b[j0] == '0')
                ++j0;
            std::size_t i1 = i0, j1 = j0;
            while (i1 < a.size() && a[i1] >= '0' && a[i1] <= '9')
                ++i1;
            while (j1 < b.size() && b[j1] >= '0' && b[j1] <= '9')
                ++j1;
            if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
            const int c = a.compare(i0, i1 - i0, b, j0, j1 - j0);
            if (c != 0) return c < 0;
            if ((i1 - i) != (j1 - j)) return (i1 - i) < (j1 - j); // fewer leading zeros first
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

} // namespace routepack
