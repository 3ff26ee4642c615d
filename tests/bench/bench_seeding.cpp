// Seeding (Algorithm 2) wall time on synthetic packing problems, against a baseline measured in the
// same process: FixedRowFFD + one exact score_layout (the floor any seed costs). Prints the time of
// one EDPAwarePair, of diverse_population with the given budget, and the winner's gain over FFD.
//
//   bench_seeding [--samples N] [--dp D] [--shards G] [--layers L] [--ranks P] [--cap C]
//                 [--mean-length T] [--candidates M] [--population P] [--width W]
//                 [--pair-candidates K] [--threads T] [--seed S]
#include "core/plan/score/score.h"
#include "core/plan/search/rowcount.h"
#include "core/plan/search/seeding.h"

#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>

using namespace routepack;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Long-tailed lengths (log-normal, clipped to [16, C]); top-8 routing whose rank demand mixes a global
/// skew per layer with a per-sample hot rank (q[i][l][.] sums to 8 t_i).
PackingProblem make_problem(int n, int L, int P, int D, int G, std::int64_t C, double mean_len, std::uint64_t seed) {
    Rng rng(seed);
    PackingProblem p;
    p.n = n;
    p.L = L;
    p.P = P;
    p.D = D;
    p.G = G;
    p.C = C;
    p.shard_of_slot.resize(static_cast<std::size_t>(D));
    p.shards.assign(static_cast<std::size_t>(G), {});
    for (int d = 0; d < D; ++d) {
        const int g = d * G / D;
        p.shard_of_slot[static_cast<std::size_t>(d)] = g;
        p.shards[static_cast<std::size_t>(g)].push_back(d);
    }
    p.stages = {AttentionStage{"kda", 1.0, 0.0}, AttentionStage{"mla", 0.25, 1.0}};
    const double sigma = 0.8, mu = std::log(mean_len) - 0.5 * sigma * sigma;
    constexpr double two_pi = 6.283185307179586;
    p.length.resize(static_cast<std::size_t>(n));
    for (auto& t : p.length) {
        const double z = std::sqrt(-2 * std::log(1 - rng.uniform())) * std::cos(two_pi * rng.uniform());
        t = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::exp(mu + sigma * z)), 16, C);
    }
    std::vector<double> skew(static_cast<std::size_t>(L) * P);
    for (auto& s : skew)
        s = 0.5 + rng.uniform();
    p.demand.assign(static_cast<std::size_t>(n) * L * P, 0);
    std::vector<double> wgt(static_cast<std::size_t>(P));
    for (int i = 0; i < n; ++i) {
        const std::int64_t routed = 8 * p.length[static_cast<std::size_t>(i)];
        for (int l = 0; l < L; ++l) {
            const int hot = static_cast<int>(rng.below(static_cast<std::uint64_t>(P)));
            double total = 0;
            for (int r = 0; r < P; ++r) {
                wgt[static_cast<std::size_t>(r)] =
                    skew[static_cast<std::size_t>(l) * P + r] * (r == hot ? 4.0 : 1.0) * (0.5 + rng.uniform());
                total += wgt[static_cast<std::size_t>(r)];
            }
            std::int32_t* q = p.demand.data() + (static_cast<std::size_t>(i) * L + l) * P;
            std::int64_t left = routed;
            for (int r = 0; r < P; ++r) {
                q[r] = std::min(left, static_cast<std::int64_t>(routed * wgt[static_cast<std::size_t>(r)] / total));
                left -= q[r];
            }
            q[hot] += left;
        }
    }
    return p;
}

} // namespace

int main(int argc, char** argv) {
    int n = 512, D = 8, G = 2, L = 32, P = 16, threads = 0;
    std::int64_t C = 8192;
    double mean_len = 1024;
    SeedingBudget b;
    for (int i = 1; i < argc; ++i) {
        auto arg = [&](const char* name) { return !std::strcmp(argv[i], name) && i + 1 < argc; };
        if (arg("--samples"))
            n = std::atoi(argv[++i]);
        else if (arg("--dp"))
            D = std::atoi(argv[++i]);
        else if (arg("--shards"))
            G = std::atoi(argv[++i]);
        else if (arg("--layers"))
            L = std::atoi(argv[++i]);
        else if (arg("--ranks"))
            P = std::atoi(argv[++i]);
        else if (arg("--cap"))
            C = std::atoll(argv[++i]);
        else if (arg("--mean-length"))
            mean_len = std::atof(argv[++i]);
        else if (arg("--candidates"))
            b.candidates = std::atoi(argv[++i]);
        else if (arg("--population"))
            b.population = std::atoi(argv[++i]);
        else if (arg("--width"))
            b.choice_width = std::atoi(argv[++i]);
        else if (arg("--pair-candidates"))
            b.pair_candidates = std::atoi(argv[++i]);
        else if (arg("--threads"))
            threads = std::atoi(argv[++i]);
        else if (arg("--seed"))
            b.seed = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::printf("usage: bench_seeding [--samples N] [--dp D] [--shards G] [--layers L] [--ranks P] [--cap C]\n"
                        "                     [--mean-length T] [--candidates M] [--population P] [--width W]\n"
                        "                     [--pair-candidates K] [--threads T] [--seed S]\n");
            return 2;
        }
    }
    if (G < 1 || D < G) G = 1;
    std::unique_ptr<tbb::global_control> gc;
    if (threads > 0) gc = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);

    const PackingProblem p = make_problem(n, L, P, D, G, C, mean_len, 20240601);
    const std::int64_t total = std::accumulate(p.length.begin(), p.length.end(), std::int64_t{0});
    double t0 = now();
    Layout ffd;
    int R = static_cast<int>(std::max<std::int64_t>(1, (total + C * D - 1) / (C * D)));
    while (R * D <= n && !fixed_row_ffd(p.length, C, R, D, &ffd))
        ++R;
    if (ffd.rows == 0) {
        std::printf("no FFD layout\n");
        return 1;
    }
    const Score s_ffd = score_layout(ffd, p);
    const double t_base = now() - t0;

    t0 = now();
    Rng rng(1);
    const Layout paired = edp_aware_pair(ffd, p, b.choice_width, rng, b.pair_candidates);
    const double t_pair = now() - t0;
    const Score s_pair = score_layout(paired, p);

    t0 = now();
    const auto members = diverse_population(p, ffd, b);
    const double t_seed = now() - t0;

    std::printf("n=%d L=%d P=%d D=%d G=%d C=%lld  R*=%d  B=R*D=%d  threads=%s\n", n, L, P, D, G,
                static_cast<long long>(C), ffd.rows, ffd.rows * D,
                threads > 0 ? std::to_string(threads).c_str() : "all");
    std::printf("budget: M=%d P_pop=%d w=%d q=%d pair_candidates=%d eta=%.2f\n", b.candidates, b.population,
                b.choice_width, b.projections, b.pair_candidates, b.eta);
    std::printf("baseline FFD + score_layout : %8.4f s\n", t_base);
    std::printf("edp_aware_pair (one call)   : %8.4f s  (%.1fx baseline)\n", t_pair, t_pair / t_base);
    std::printf("diverse_population          : %8.4f s  (%.1fx baseline)\n", t_seed, t_seed / t_base);
    std::printf("score ffd      : (%.6f, %.6f, %.6f)\n", s_ffd.max_u, s_ffd.sum_u, s_ffd.max_j);
    std::printf("score ffd+pair : (%.6f, %.6f, %.6f)\n", s_pair.max_u, s_pair.sum_u, s_pair.max_j);
    for (const auto& m : members)
        std::printf("member %-12s (%.6f, %.6f, %.6f)  s0 gain vs ffd %+.3f%%\n", m.origin.c_str(), m.score.max_u,
                    m.score.sum_u, m.score.max_j, 100.0 * (s_ffd.max_u - m.score.max_u) / s_ffd.max_u);
    return 0;
}
