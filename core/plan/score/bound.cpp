#include "core/plan/score/bound.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace routepack {

MaxULowerBound max_u_lower_bound(const PackingProblem& p) {
    if (p.n < 1 || p.G < 1 || p.shards.empty() || p.C < 1 || p.L < 0 || p.P < 1)
        throw std::invalid_argument("max_u_lower_bound: the problem has no samples, shards or ranks");
    if (p.length.size() != static_cast<std::size_t>(p.n) ||
        p.demand.size() != static_cast<std::size_t>(p.n) * p.L * p.P)
        throw std::invalid_argument("max_u_lower_bound: lengths or demand do not match n x L x P");
    for (const auto& s : p.stages)
        if (!(s.alpha >= 0) || !(s.beta >= 0))
            throw std::invalid_argument("max_u_lower_bound: stage '" + s.name + "' has a negative alpha or beta");
    std::size_t max_shard = 0;
    for (const auto& g : p.shards)
        max_shard = std::max(max_shard, g.size());
    if (max_shard == 0) throw std::invalid_argument("max_u_lower_bound: an EDP shard has no DP slot");

    const double c = static_cast<double>(p.C);
    const std::size_t LP = static_cast<std::size_t>(p.L) * p.P;
    // Attention cost of a token sum and a squared sum, eqs. 11-12 for one (pseudo-)cell.
    auto attention = [&](std::int64_t tokens, std::int64_t squares) {
        const double T = static_cast<double>(tokens) / c;
        const double Q = static_cast<double>(squares) / (c * c);
        double a = 0;
        for (const auto& s : p.stages)
            a += s.alpha * T + s.beta * Q;
        return a;
    };

    MaxULowerBound b;
    std::vector<std::int64_t> load(LP, 0); // L[l][p] = sum_i q[i][l][p]
    std::int64_t tokens = 0, squares = 0;
    for (int i = 0; i < p.n; ++i) {
        const std::int32_t* q = p.q(i);
        std::int64_t peak_sum = 0;
        for (int l = 0; l < p.L; ++l) {
            const std::int32_t* ql = q + static_cast<std::size_t>(l) * p.P;
            std::int64_t* Ll = load.data() + static_cast<std::size_t>(l) * p.P;
            std::int64_t m = 0;
            for (int r = 0; r < p.P; ++r) {
                Ll[r] += ql[r];
                m = std::max<std::int64_t>(m, ql[r]);
            }
            peak_sum += m;
        }
        const std::int64_t t = p.length[static_cast<std::size_t>(i)];
        tokens += t;
        squares += t * t;
        b.sample = std::max(b.sample, static_cast<double>(peak_sum) / c + attention(t, t * t));
    }
    std::int64_t peak_sum = 0;
    for (int l = 0; l < p.L; ++l)
        peak_sum += *std::max_element(load.begin() + static_cast<std::ptrdiff_t>(l) * p.P,
                                      load.begin() + static_cast<std::ptrdiff_t>(l + 1) * p.P);
    b.mean = (static_cast<double>(peak_sum) / c + attention(tokens, squares) / static_cast<double>(max_shard)) /
             static_cast<double>(p.G);
    b.value = std::max(b.mean, b.sample) * (1.0 - 1e-12);
    return b;
}

namespace {

/// Lower bound on the busiest of P ranks of H slots holding the loads x[0..E) in any placement:
/// max(ceil(sum / P), max + the H - 1 smallest). `scratch` is reused.
std::int64_t any_placement_peak(const std::uint64_t* x, int E, int P, std::vector<std::uint64_t>& scratch) {
    scratch.assign(x, x + E);
    const int H = E / P;
    std::uint64_t sum = 0;
    for (const std::uint64_t v : scratch)
        sum += v;
    std::nth_element(scratch.begin(), scratch.begin() + std::max(0, H - 1), scratch.end());
    std::uint64_t light = 0;
    for (int k = 0; k < H - 1; ++k)
        light += scratch[static_cast<std::size_t>(k)];
    const std::uint64_t heaviest = *std::max_element(x, x + E);
    const std::uint64_t mean = (sum + static_cast<std::uint64_t>(P) - 1) / static_cast<std::uint64_t>(P);
    return static_cast<std::int64_t>(std::max(mean, heaviest + light));
}

} // namespace

MaxULowerBound max_u_lower_bound_any_placement(const PackingProblem& p, std::span<const std::uint32_t> counts, int E) {
    if (p.n < 1 || p.G < 1 || p.shards.empty() || p.C < 1 || p.L < 0 || p.P < 1 || E < 1 || E % p.P != 0)
        throw std::invalid_argument("max_u_lower_bound_any_placement: the problem has no samples, shards or ranks");
    const std::size_t stride = static_cast<std::size_t>(p.L) * E;
    if (counts.size() != static_cast<std::size_t>(p.n) * stride || p.length.size() != static_cast<std::size_t>(p.n))
        throw std::invalid_argument("max_u_lower_bound_any_placement: counts do not match n x L x E");
    std::size_t max_shard = 0;
    for (const auto& g : p.shards)
        max_shard = std::max(max_shard, g.size());
    if (max_shard == 0) throw std::invalid_argument("max_u_lower_bound_any_placement: an EDP shard has no DP slot");
    const double c = static_cast<double>(p.C);
    auto attention = [&](std::int64_t tokens, std::int64_t squares) {
        double a = 0;
        for (const auto& s : p.stages)
            a += s.alpha * static_cast<double>(tokens) / c + s.beta * static_cast<double>(squares) / (c * c);
        return a;
    };
    MaxULowerBound b;
    std::vector<std::uint64_t> load(stride, 0), row(static_cast<std::size_t>(E)), scratch;
    std::int64_t tokens = 0, squares = 0;
    for (int i = 0; i < p.n; ++i) {
        const std::uint32_t* a = counts.data() + static_cast<std::size_t>(i) * stride;
        std::int64_t peak_sum = 0;
        for (int l = 0; l < p.L; ++l) {
            for (int e = 0; e < E; ++e) {
                row[static_cast<std::size_t>(e)] = a[static_cast<std::size_t>(l) * E + e];
                load[static_cast<std::size_t>(l) * E + e] += row[static_cast<std::size_t>(e)];
            }
            peak_sum += any_placement_peak(row.data(), E, p.P, scratch);
        }
        const std::int64_t t = p.length[static_cast<std::size_t>(i)];
        tokens += t;
        squares += t * t;
        b.sample = std::max(b.sample, static_cast<double>(peak_sum) / c + attention(t, t * t));
    }
    std::int64_t peak_sum = 0;
    for (int l = 0; l < p.L; ++l)
        peak_sum += any_placement_peak(load.data() + static_cast<std::size_t>(l) * E, E, p.P, scratch);
    b.mean = (static_cast<double>(peak_sum) / c + attention(tokens, squares) / static_cast<double>(max_shard)) /
             static_cast<double>(p.G);
    b.value = std::max(b.mean, b.sample) * (1.0 - 1e-12);
    return b;
}

} // namespace routepack
