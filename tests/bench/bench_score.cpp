// Incremental exact rescoring throughput (core/plan/score/score.h): proposals per second of random swap /
// relocation moves on IncrementalScorer, against a full rescore (score_layout) of the same layout
// measured in the same process, so that the ratio is machine-independent.
//
// Synthetic problems are built directly as PackingProblem (fixed seed): lengths uniform in
// [64, 4096] tokens, ~4 samples per cell, top-8 routing spread randomly over the P ranks per layer,
// two attention stages (KDA-like beta = 0, MLA-like beta > 0), contiguous EDP shards of D/G slots,
// cap C = largest initial cell + 2048.
//
// Figures per problem and kernel ISA:
//   apply+undo  : feasible random proposals applied then undone (the annealer's rejected move)
//   apply+keep  : feasible random proposals kept (accepted move; W committed lazily on the next move)
//   mixed 10%   : 10% kept, 90% undone (a typical low-temperature acceptance rate)
//   full        : score_layout of the whole layout, O(n L P + R G L P)
// ratio = time per full rescore / time per incremental apply+undo.
//
// Times are this thread's CPU time (the build machines are shared).
//
//   bench_score [--quick] [--case 0|1|2] [--isa auto|avx512|avx2|scalar]
#include "core/plan/score/score.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace routepack;
using i64 = std::int64_t;

namespace {

/// This thread's CPU time (s): the build machines are shared, so wall time would count other jobs.
double now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// xorshift64*: cheap enough not to show in the move timings.
struct Rng {
    std::uint64_t s;
    std::uint64_t next() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return s * 2685821657736338717ULL;
    }
    std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>((next() >> 32) * n >> 32); }
};

struct Case {
    PackingProblem p;
    Layout x;
};

Case make_case(int n, int L, int P, int D, int G, std::uint64_t seed) {
    Rng rng{seed * 0x9E3779B97F4A7C15ULL + 1};
    Case c;
    PackingProblem& p = c.p;
    p.n = n;
    p.L = L;
    p.P = P;
    p.D = D;
    p.G = G;
    p.length.resize(n);
    p.demand.assign(static_cast<std::size_t>(n) * L * P, 0);
    p.shard_of_slot.resize(D);
    p.shards.assign(G, {});
    for (int d = 0; d < D; ++d) {
        p.shard_of_slot[d] = d / (D / G);
        p.shards[d / (D / G)].push_back(d);
    }
    p.stages = {{"kda", 1.0, 0.0}, {"mla", 0.25, 1.5}};
    const int top_k = 8;
    std::vector<std::uint32_t> w(P);
    for (int i = 0; i < n; ++i) {
        const i64 t = 64 + rng.below(4096 - 64 + 1);
        p.length[i] = t;
        for (int l = 0; l < L; ++l) {
            std::uint64_t sum = 0;
            for (auto& x : w)
                sum += (x = rng.below(1024));
            std::int32_t* q = p.demand.data() + (static_cast<std::size_t>(i) * L + l) * P;
            i64 left = t * top_k;
            for (int r = 0; r < P - 1; ++r) {
                q[r] = sum ? static_cast<i64>(t * top_k * w[r] / sum) : 0;
                left -= q[r];
            }
            q[P - 1] = left;
        }
    }
    const int R = std::max(1, n / (4 * D));
    const int K = R * D;
    std::vector<int> order(n), cell_of(n);
    std::iota(order.begin(), order.end(), 0);
    for (int h = n - 1; h > 0; --h)
        std::swap(order[h], order[rng.below(h + 1)]);
    for (int h = 0; h < n; ++h)
        cell_of[h] = h < K ? h : static_cast<int>(rng.below(K));
    c.x = Layout::from_assignment(R, D, order, cell_of);
    i64 worst = 0;
    for (int k = 0; k < K; ++k) {
        i64 s = 0;
        for (int i : c.x.cell(k))
            s += p.length[i];
        worst = std::max(worst, s);
    }
    p.C = worst + 2048;
    return c;
}

struct Result {
    double per_sec = 0; // feasible proposals per second
    double attempts_per_sec = 0;
    double feasible_share = 0;
};

/// Random proposals: 70% swaps (random i, j), 30% relocations (random i, random cell); feasibility
/// checked; `keep_per_mille` of the feasible ones are kept, the rest undone. Runs >= `seconds`.
Result run_moves(IncrementalScorer& s, int keep_per_mille, double seconds, std::uint64_t seed) {
    Rng rng{seed};
    const int n = s.problem().n, K = s.layout().cell_count();
    std::int64_t feasible = 0, attempts = 0;
    double sink = 0;
    const double t0 = now();
    double t1;
    do {
        for (int b = 0; b < 4096; ++b) {
            ++attempts;
            const int i = static_cast<int>(rng.below(n));
            const std::uint32_t kind = rng.below(1000);
            const std::uint32_t keep = rng.below(1000);
            if (kind < 700) {
                const int j = static_cast<int>(rng.below(n));
                if (!s.swap_feasible(i, j)) continue;
                sink += s.apply_swap(i, j).max_u;
            } else {
                const int k = static_cast<int>(rng.below(K));
                if (!s.relocate_feasible(i, k)) continue;
                sink += s.apply_relocate(i, k).max_u;
            }
            ++feasible;
            if (static_cast<int>(keep) >= keep_per_mille) s.undo();
        }
        t1 = now();
    } while (t1 - t0 < seconds);
    if (sink == -1) std::printf(" ");
    Result r;
    r.per_sec = feasible / (t1 - t0);
    r.attempts_per_sec = attempts / (t1 - t0);
    r.feasible_share = attempts ? static_cast<double>(feasible) / attempts : 0;
    return r;
}

double full_seconds_per_call(const Layout& x, const PackingProblem& p, double seconds) {
    int calls = 0;
    double sink = 0;
    const double t0 = now();
    double t1;
    do {
        sink += score_layout(x, p).max_u;
        ++calls;
        t1 = now();
    } while (t1 - t0 < seconds);
    if (sink == -1) std::printf(" ");
    return (t1 - t0) / calls;
}

bool same_bits(const Score& a, const Score& b) {
    // Bit patterns on purpose (0.0 vs -0.0 differ): Score is three doubles without padding.
    return std::memcmp(&a, &b, sizeof(Score)) == 0; // NOLINT(bugprone-suspicious-memory-comparison)
}

void bench(int n, int L, int P, int D, int G, double seconds, const std::vector<std::string>& isas) {
    const double tb = now();
    const Case c = make_case(n, L, P, D, G, 42);
    const double t_build = now() - tb;
    std::printf("\nproblem n=%d L=%d P=%d D=%d G=%d  R=%d cells=%d C=%lld  (demand %.0f MiB, built in %.2f s)\n", n, L,
                P, D, G, c.x.rows, c.x.cell_count(), static_cast<long long>(c.p.C),
                c.p.demand.size() * double(sizeof(c.p.demand[0])) / (1 << 20), t_build);
    for (const std::string& isa : isas) {
        if (!set_score_kernel_isa(isa.c_str())) continue;
        const std::string name = score_kernel_isa();
        const double t_full = full_seconds_per_call(c.x, c.p, seconds);
        IncrementalScorer s(c.p, c.x);
        const Result undo = run_moves(s, 0, seconds, 7);
        const Result keep = run_moves(s, 1000, seconds, 8);
        const Result mixed = run_moves(s, 100, seconds, 9);
        const bool exact = same_bits(s.score(), score_layout(s.layout(), c.p));
        const double t_inc = 1.0 / undo.per_sec;
        std::printf("  kernels %-7s apply+undo %10.0f /s (%.3f us, %3.0f%% of %.0f attempts/s feasible)"
                    "  apply+keep %10.0f /s  mixed 10%% %10.0f /s\n",
                    name.c_str(), undo.per_sec, t_inc * 1e6, undo.feasible_share * 100, undo.attempts_per_sec,
                    keep.per_sec, mixed.per_sec);
        std::printf("                  full rescore %10.1f /s (%.1f us)  ratio full/incremental %.0fx "
                    "(incremental/full %.2e)  exact after all moves: %s\n",
                    1.0 / t_full, t_full * 1e6, t_full / t_inc, t_inc / t_full, exact ? "yes" : "NO");
    }
    set_score_kernel_isa("auto");
}

} // namespace

int main(int argc, char** argv) {
    bool quick = false;
    int only = -1;
    std::vector<std::string> isas = {"auto", "scalar"};
    for (int a = 1; a < argc; ++a) {
        const std::string arg = argv[a];
        if (arg == "--quick")
            quick = true;
        else if (arg == "--case" && a + 1 < argc)
            only = std::atoi(argv[++a]);
        else if (arg == "--isa" && a + 1 < argc)
            isas = {argv[++a]};
        else {
            std::fprintf(stderr, "usage: bench_score [--quick] [--case 0|1|2] [--isa auto|avx512|avx2|scalar]\n");
            return 2;
        }
    }
    const double seconds = quick ? 0.2 : 1.0;
    std::printf("bench_score: best kernels on this CPU: %s; %s of thread CPU time per figure\n", score_kernel_isa(),
                quick ? "0.2 s" : "1 s");
    if (only < 0 || only == 0) bench(512, 26, 8, 4, 2, seconds, isas);
    if (only < 0 || only == 1) bench(512, 64, 64, 16, 4, seconds, isas);
    if (only < 0 || only == 2) bench(8192, 64, 64, 64, 8, seconds, isas);
    return 0;
}
