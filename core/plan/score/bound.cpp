#include "core/plan/score/bound.h"

#include "core/plan/score/placement.h"
#include "core/util/index.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace routepack {

MaxULowerBound max_u_lower_bound(const PackingProblem& p, std::vector<double>* per_sample) {
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

    // Blocks of samples in parallel, each summing its own L[l][p] = sum_i q[i][l][p]: integer sums and
    // a maximum of per-sample doubles, so the same for any split.
    struct Acc {
        std::vector<std::int64_t> load;
        std::int64_t tokens = 0, squares = 0;
        double sample = 0;
    };
    if (per_sample) per_sample->assign(idx(p.n), 0.0);
    const Acc acc = tbb::parallel_reduce(
        tbb::blocked_range<int>(0, p.n, 64), Acc{},
        [&](const tbb::blocked_range<int>& range, Acc a) {
            if (a.load.empty()) a.load.assign(LP, 0);
            for (int i = range.begin(); i != range.end(); ++i) {
                const std::int32_t* q = p.q(i);
                std::int64_t peak_sum = 0;
                for (int l = 0; l < p.L; ++l) {
                    const std::int32_t* ql = q + static_cast<std::size_t>(l) * p.P;
                    std::int64_t* Ll = a.load.data() + static_cast<std::size_t>(l) * p.P;
                    std::int64_t m = 0;
                    for (int r = 0; r < p.P; ++r) {
                        Ll[r] += ql[r];
                        m = std::max<std::int64_t>(m, ql[r]);
                    }
                    peak_sum += m;
                }
                const std::int64_t t = p.length[static_cast<std::size_t>(i)];
                a.tokens += t;
                a.squares += t * t;
                const double one = static_cast<double>(peak_sum) / c + attention(t, t * t);
                if (per_sample) (*per_sample)[idx(i)] = one;
                a.sample = std::max(a.sample, one);
            }
            return a;
        },
        [LP](Acc x, const Acc& y) {
            if (x.load.empty()) x.load.assign(LP, 0);
            for (std::size_t k = 0; k < y.load.size(); ++k)
                x.load[k] += y.load[k];
            x.tokens += y.tokens;
            x.squares += y.squares;
            x.sample = std::max(x.sample, y.sample);
            return x;
        });
    MaxULowerBound b;
    b.sample = acc.sample;
    const std::int64_t tokens = acc.tokens, squares = acc.squares;
    std::vector<std::int64_t> load = acc.load;
    if (load.empty()) load.assign(LP, 0);
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

/// Sum of the k smallest of x[0..E) (0 < k < E): a sorted run of k kept while scanning when k is
/// small, else nth_element on a copy in `scratch`.
template <class T> std::uint64_t smallest_sum(const T* x, int E, int k, std::vector<std::uint64_t>& scratch) {
    constexpr int kRun = 8;
    if (k <= kRun) {
        std::uint64_t run[kRun];
        for (int m = 0; m < k; ++m)
            run[m] = x[m];
        std::sort(run, run + k);
        for (int e = k; e < E; ++e) {
            std::uint64_t v = x[e];
            if (v >= run[k - 1]) continue;
            int m = k - 1;
            for (; m > 0 && run[m - 1] > v; --m)
                run[m] = run[m - 1];
            run[m] = v;
        }
        std::uint64_t light = 0;
        for (int m = 0; m < k; ++m)
            light += run[m];
        return light;
    }
    scratch.assign(x, x + E);
    std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end());
    std::uint64_t light = 0;
    for (int m = 0; m < k; ++m)
        light += scratch[static_cast<std::size_t>(m)];
    return light;
}

/// Lower bound on the busiest of P ranks of H slots holding the loads x[0..E) in any placement:
/// max(ceil(sum / P), max + the H - 1 smallest). One pass forms the sum, the maximum and the number
/// of zeros; the H - 1 smallest are summed only when fewer than H - 1 loads are zero (else they
/// sum to 0). `scratch` is reused.
template <class T> std::int64_t any_placement_peak(const T* x, int E, int P, std::vector<std::uint64_t>& scratch) {
    const int k = E / P - 1;
    std::uint64_t sum = 0, heaviest = 0;
    int zeros = 0;
    for (int e = 0; e < E; ++e) {
        const std::uint64_t v = x[e];
        sum += v;
        heaviest = std::max(heaviest, v);
        zeros += v == 0 ? 1 : 0;
    }
    const std::uint64_t light = k > 0 && zeros < k ? smallest_sum(x, E, k, scratch) : 0;
    const std::uint64_t mean = (sum + static_cast<std::uint64_t>(P) - 1) / static_cast<std::uint64_t>(P);
    return static_cast<std::int64_t>(std::max(mean, heaviest + light));
}

/// The sample part of the any-placement bound and the window's token sums.
struct SamplePart {
    double sample = 0;
    std::int64_t tokens = 0, squares = 0;
};

} // namespace

MaxULowerBound max_u_lower_bound_any_placement(const PackingProblem& p, std::span<const std::uint32_t> counts, int E) {
    if (p.n < 1 || p.L < 0 || E < 1)
        throw std::invalid_argument("max_u_lower_bound_any_placement: the problem has no samples, shards or ranks");
    std::vector<double> at_placement;
    if (p.demand.size() == static_cast<std::size_t>(p.n) * p.L * p.P) max_u_lower_bound(p, &at_placement);
    return max_u_lower_bound_any_placement(p, counts, E, aggregate_expert_loads(counts, idx(p.n), p.L, E),
                                           at_placement);
}

MaxULowerBound max_u_lower_bound_any_placement(const PackingProblem& p, std::span<const std::uint32_t> counts, int E,
                                               std::span<const std::uint64_t> loads,
                                               std::span<const double> at_placement) {
    if (p.n < 1 || p.G < 1 || p.shards.empty() || p.C < 1 || p.L < 0 || p.P < 1 || E < 1 || E % p.P != 0)
        throw std::invalid_argument("max_u_lower_bound_any_placement: the problem has no samples, shards or ranks");
    const std::size_t stride = static_cast<std::size_t>(p.L) * E;
    if (counts.size() != static_cast<std::size_t>(p.n) * stride || p.length.size() != static_cast<std::size_t>(p.n))
        throw std::invalid_argument("max_u_lower_bound_any_placement: counts do not match n x L x E");
    if (loads.size() != stride)
        throw std::invalid_argument("max_u_lower_bound_any_placement: loads do not match L x E");
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
    // The sample part: sample i's bound at p's placement (its demand, when p has one) is at least its
    // bound at any placement, so samples are evaluated in decreasing order of the former, in
    // blocks, until the next one cannot exceed the best found: the maximum is the full scan's.
    auto exact = [&](int i, std::vector<std::uint64_t>& scratch) {
        const std::uint32_t* a = counts.data() + static_cast<std::size_t>(i) * stride;
        std::int64_t peak_sum = 0;
        for (int l = 0; l < p.L; ++l)
            peak_sum += any_placement_peak(a + static_cast<std::size_t>(l) * E, E, p.P, scratch);
        const std::int64_t t = p.length[static_cast<std::size_t>(i)];
        return static_cast<double>(peak_sum) / c + attention(t, t * t);
    };
    std::vector<double> ceiling(idx(p.n), std::numeric_limits<double>::infinity());
    // Rounded up by a relative 1e-9: the order only has to bound the exact value from above.
    if (at_placement.size() == idx(p.n))
        for (std::size_t i = 0; i < ceiling.size(); ++i)
            ceiling[i] = at_placement[i] * (1.0 + 1e-9);
    std::vector<int> order(idx(p.n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return ceiling[idx(x)] > ceiling[idx(y)]; });
    SamplePart part;
    for (const int i : order) {
        const std::int64_t t = p.length[idx(i)];
        part.tokens += t;
        part.squares += t * t;
    }
    constexpr std::size_t kBlock = 64;
    for (std::size_t at = 0; at < order.size() && ceiling[idx(order[at])] > part.sample; at += kBlock) {
        const std::size_t end = std::min(order.size(), at + kBlock);
        part.sample = std::max(part.sample, tbb::parallel_reduce(
                                                tbb::blocked_range<std::size_t>(at, end, 8), 0.0,
                                                [&](const tbb::blocked_range<std::size_t>& range, double best) {
                                                    std::vector<std::uint64_t> scratch;
                                                    for (std::size_t k = range.begin(); k != range.end(); ++k)
                                                        best = std::max(best, exact(order[k], scratch));
                                                    return best;
                                                },
                                                [](double x, double y) { return std::max(x, y); }));
    }
    MaxULowerBound b;
    b.sample = part.sample;
    std::vector<std::uint64_t> scratch;
    std::int64_t peak_sum = 0;
    for (int l = 0; l < p.L; ++l)
        peak_sum += any_placement_peak(loads.data() + static_cast<std::size_t>(l) * E, E, p.P, scratch);
    b.mean =
        (static_cast<double>(peak_sum) / c + attention(part.tokens, part.squares) / static_cast<double>(max_shard)) /
        static_cast<double>(p.G);
    b.value = std::max(b.mean, b.sample) * (1.0 - 1e-12);
    return b;
}

} // namespace routepack
