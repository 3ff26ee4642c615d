// Population annealing (Algorithm 3) on the paper's window shape: proposals per second per worker,
// and the gain over the best seed for a grid of schedules (T0, cooling, N_T, K), so that the
// defaults of AnnealingBudget can be justified. Windows: synthetic GRPO traces (core/synth/synth.h) with
// 512 samples, DeepSeek-V2-Lite shape (26 MoE layers, 64 experts, top-6), P = 8 EP ranks, D = 4 DP
// slots in G = 2 EDP shards, cap 8192; LPT placement, R* from minimum_rows, seeds from
// diverse_population (Algorithm 2), all as the planner does. The baseline in the same process is the
// best seed itself (gains are relative, machine-independent); proposals/s is absolute.
//
//   bench_annealing [--windows N] [--samples N] [--grid | --no-schedules] [--workers W]
#include "core/plan/score/placement.h"
#include "core/plan/search/annealing.h"
#include "core/plan/search/rowcount.h"
#include "core/synth/synth.h"

#include <tbb/task_arena.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace routepack;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Instance {
    PackingProblem p;
    std::vector<SeedMember> pop;
    Score best_seed;
    Score reorder;
};

Instance make_instance(int samples, std::uint64_t seed) {
    SynthConfig c;
    c.group_size = 8;
    c.groups = std::max(1, samples / c.group_size);
    c.num_hidden_layers = 27;
    c.first_dense_layers = 1;
    c.experts = 64;
    c.top_k = 6;
    c.prompt_mean = 300;
    c.response_mean = 1200;
    c.max_length = 8192;
    c.seed = seed;
    const Trace w = synth_trace(c);
    Topology topo;
    topo.ep_ranks = 8;
    topo.dp_slots = 4;
    topo.edp_shards = {{0, 1}, {2, 3}};
    topo.token_cap = 8192;
    topo.attention_stages = {AttentionStage{"mla", 10.0, 10.0}};
    const int L = w.model.num_moe_layers(), E = w.model.experts;
    const auto loads = aggregate_expert_loads(w.counts, w.size(), L, E);
    const Placement pi = lpt_placement(loads, L, E, topo.ep_ranks);
    Instance in;
    in.p = make_packing_problem(w, topo, pi);
    const RowCount rc = minimum_rows(in.p.length, in.p.C, in.p.D, 0, 1000000);
    Layout ffd;
    if (!fixed_row_ffd(in.p.length, in.p.C, rc.rows, in.p.D, &ffd)) ffd = rc.layout;
    in.reorder = score_layout(ffd, in.p);
    SeedingBudget sb;
    sb.seed = seed;
    in.pop = diverse_population(in.p, ffd, sb);
    in.best_seed = in.pop.front().score;
    for (const auto& m : in.pop)
        in.best_seed = std::min(in.best_seed, m.score);
    return in;
}

/// Relative gain of the primary score term over a reference, in percent.
double gain(const Score& ref, const Score& s) {
    return 100.0 * (ref.max_u - s.max_u) / ref.max_u;
}

} // namespace

int main(int argc, char** argv) {
    int windows = 3, samples = 512, workers = 0;
    bool grid = false, skip_schedules = false;
    for (int a = 1; a < argc; ++a) {
        if (!std::strcmp(argv[a], "--windows") && a + 1 < argc)
            windows = std::atoi(argv[++a]);
        else if (!std::strcmp(argv[a], "--samples") && a + 1 < argc)
            samples = std::atoi(argv[++a]);
        else if (!std::strcmp(argv[a], "--workers") && a + 1 < argc)
            workers = std::atoi(argv[++a]);
        else if (!std::strcmp(argv[a], "--grid"))
            grid = true;
        else if (!std::strcmp(argv[a], "--no-schedules"))
            skip_schedules = grid = true;
        else {
            std::fprintf(
                stderr, "usage: bench_annealing [--windows N] [--samples N] [--grid | --no-schedules] [--workers W]\n");
            return 2;
        }
    }
    std::vector<Instance> inst;
    for (int w = 0; w < windows; ++w) {
        inst.push_back(make_instance(samples, 100 + static_cast<std::uint64_t>(w)));
        const auto& in = inst.back();
        std::printf(
            "window %d: n=%d L=%d P=%d D=%d G=%d R*=%d pop=%zu  reorder max_u=%.4f best seed max_u=%.4f (%.2f%%)\n", w,
            in.p.n, in.p.L, in.p.P, in.p.D, in.p.G, in.pop.front().layout.rows, in.pop.size(), in.reorder.max_u,
            in.best_seed.max_u, gain(in.reorder, in.best_seed));
    }

    // Throughput: one worker, then `workers` (0 = all cores).
    for (int wk : {1, workers}) {
        AnnealingBudget b;
        b.levels = 4;
        b.steps = 20000;
        const double t0 = now();
        std::int64_t props = 0;
        tbb::task_arena arena(wk > 0 ? wk : tbb::task_arena::automatic);
        arena.execute([&] {
            for (const auto& in : inst)
                props += population_anneal(in.p, in.pop, b).proposals;
        });
        const double dt = now() - t0;
        std::printf("throughput workers=%d: %.0f proposals/s (%.3f us/proposal, %lld proposals in %.2f s)\n", wk,
                    props / dt, 1e6 * dt / props, static_cast<long long>(props), dt);
    }

    tbb::task_arena arena(workers > 0 ? workers : tbb::task_arena::automatic);
    auto run = [&](const char* tag, AnnealingBudget b) {
        double g_seed = 0, g_reorder = 0, acc0 = 0, accN = 0, infeasible = 0;
        const double t0 = now();
        for (const auto& in : inst) {
            const AnnealResult r = arena.execute([&] { return population_anneal(in.p, in.pop, b); });
            g_seed += gain(in.best_seed, r.score) / windows;
            g_reorder += gain(in.reorder, r.score) / windows;
            acc0 += r.levels.front().acceptance / windows;
            accN += r.levels.back().acceptance / windows;
            for (const auto& s : r.levels)
                infeasible += static_cast<double>(s.infeasible) / r.proposals / windows;
        }
        std::printf("%-10s t0=%-7g cooling=%-5g N_T=%-3d K=%-6d  gain vs best seed %6.3f%%  vs reorder %6.3f%%  "
                    "accept first %.3f last %.3f infeasible %.3f  %.2f s/window\n",
                    tag, b.t0, b.cooling, b.levels, b.steps, g_seed, g_reorder, acc0, accN, infeasible,
                    (now() - t0) / windows);
        std::fflush(stdout);
    };

    run("default", AnnealingBudget{});
    if (!grid) return 0;
    // Schedules at a fixed total budget N_T * K = 24000 proposals per chain.
    if (!skip_schedules)
        for (double t0 : {0.0003, 0.001, 0.003, 0.01, 0.03})
            for (double cooling : {0.5, 0.6, 0.75})
                for (auto [levels, steps] :
                     {std::pair{6, 4000}, std::pair{12, 2000}, std::pair{24, 1000}, std::pair{48, 500}}) {
                    AnnealingBudget b;
                    b.t0 = t0;
                    b.cooling = cooling;
                    b.levels = levels;
                    b.steps = steps;
                    run("schedule", b);
                }
    // Seed-to-seed spread of the current defaults and of t0 = 0.003, cooling = 0.5, N_T = 24, K = 1000.
    for (std::uint64_t seed : {2, 3, 4}) {
        AnnealingBudget b;
        b.seed = seed;
        run("default", b);
        b.t0 = 0.003;
        b.cooling = 0.5;
        b.levels = 24;
        b.steps = 1000;
        run("t.003/c.5", b);
    }
    // Budget scaling (N_T x K) at t0 = 0.003, cooling = 0.5.
    for (int levels : {12, 16, 24, 32})
        for (int steps : {250, 500, 1000, 2000}) {
            AnnealingBudget b;
            b.t0 = 0.003;
            b.cooling = 0.5;
            b.levels = levels;
            b.steps = steps;
            run("budget", b);
        }
    // Proposal mix (p_guide, rho) at the same schedule, N_T = 24, K = 1000.
    for (double pg : {0.0, 0.5, 0.8, 1.0})
        for (double rho : {0.0, 0.3, 0.6}) {
            AnnealingBudget b;
            b.t0 = 0.003;
            b.cooling = 0.5;
            b.levels = 24;
            b.steps = 1000;
            b.p_guide = pg;
            b.rho = rho;
            char tag[32];
            std::snprintf(tag, sizeof tag, "pg%.1f/r%.1f", pg, rho);
            run(tag, b);
        }
    return 0;
}
