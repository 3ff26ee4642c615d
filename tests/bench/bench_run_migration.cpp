// Where moves pay: the modelled step time of a run of DeepSeek-V3-shaped steps on EP64 in one node
// (docs/migration.md "Where moves pay").
//   bench_run_migration [--steps K] [--samples N] [--drift D] [--threads T] [--seed S]
// The steps are `routepack synth` windows of one router (popularity seed 1) and their own prompts
// (seed S + k), each drifted by D toward a router of its own (SynthConfig::drift): N samples, 58 MoE
// layers x 256 experts, top-8, 3 x 7168 x 2048 parameters per expert. Step 0 is planned without a
// previous placement; every chain starts from its placement. Steps 1..K-1, each chain from its own
// previous step:
//   never move   --max-moves 0: compute only
//   full         unlimited moves, the paper's score: compute + materialization of its moves
//   cost model   the topology's migration section chooses the moves (modelled step time), with the
//                optimizer state moved with the weights (14 B per parameter) and sharded apart (2 B)
// Modelled seconds: seconds_per_U x max_g U + materialization seconds (docs/migration.md), at the
// default link speeds (NVLink 400 GB/s per GPU) and achieved_TFLOPs 400. Also prints how far the
// steps' loads are apart (total variation between consecutive steps' expert shares, mean over layers).
#include "core/model/topology.h"
#include "core/plan/planner.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/migration.h"
#include "core/synth/synth.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace routepack;

namespace {

constexpr std::int64_t kV3ExpertParameters = 3LL * 7168 * 2048;

Topology ep64_one_node() {
    Topology t;
    t.ep_ranks = 64;
    t.dp_slots = 32;
    t.token_cap = 8192;
    for (int g = 0; g < 8; ++g)
        t.edp_shards.push_back({4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3});
    t.attention_stages = {AttentionStage{"mla", 27.0, 27.0}};
    t.gpus_per_node = 64;
    return t;
}

Topology with_migration(Topology t, double state_bytes) {
    t.has_migration = true;
    t.migration.expert_parameters = kV3ExpertParameters;
    t.migration.state_bytes_per_param = state_bytes;
    return t;
}

/// Mean over MoE layers of the total variation between two steps' expert shares.
double load_distance(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b, int L, int E) {
    double sum = 0;
    for (int l = 0; l < L; ++l) {
        double na = 0, nb = 0, tv = 0;
        for (int e = 0; e < E; ++e) {
            na += static_cast<double>(a[l * E + e]);
            nb += static_cast<double>(b[l * E + e]);
        }
        for (int e = 0; e < E; ++e)
            tv += std::abs(static_cast<double>(a[l * E + e]) / na - static_cast<double>(b[l * E + e]) / nb);
        sum += 0.5 * tv;
    }
    return sum / L;
}

struct Chain {
    const char* name = "";
    Topology topology;
    std::int64_t max_moves = -1;
    Placement previous;
    double compute = 0, moves_s = 0, moves_s2 = 0; ///< moves at the chain's own cost (14 B), and at 2 B
    std::int64_t moved = 0;
};

} // namespace

int main(int argc, char** argv) {
    int steps = 4, samples = 8192, threads = 2;
    double drift = 0.2;
    std::uint64_t seed = 100;
    for (int i = 1; i < argc; ++i) {
        const bool has = i + 1 < argc;
        if (!std::strcmp(argv[i], "--steps") && has)
            steps = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--samples") && has)
            samples = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--drift") && has)
            drift = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--threads") && has)
            threads = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--seed") && has)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: bench_run_migration [--steps K] [--samples N] [--drift D] [--threads T] "
                                 "[--seed S]\n");
            return 2;
        }
    }
    if (steps < 2 || samples < 64 || samples % 8 != 0 || !(drift >= 0 && drift <= 1) || threads < 0) {
        std::fprintf(stderr, "bench_run_migration: need --steps >= 2, --samples a multiple of 8 >= 64, --drift in "
                             "[0, 1], --threads >= 0\n");
        return 2;
    }
    SynthConfig c;
    c.groups = samples / 8;
    c.group_size = 8;
    c.num_hidden_layers = 61;
    c.first_dense_layers = 3;
    c.experts = 256;
    c.top_k = 8;
    c.prompt_mean = 256;
    c.response_mean = 512;
    c.max_length = 8192;
    c.popularity_seed = 1;
    c.drift = drift;
    const Topology plain = ep64_one_node();
    const MigrationCost cost = resolve_migration_cost(with_migration(plain, 14), synth_model(c));
    const MigrationCost cost2 = resolve_migration_cost(with_migration(plain, 2), synth_model(c));
    std::printf("DeepSeek-V3-shaped steps: %d samples, 58 MoE layers x 256 experts, top-8, EP64 / DP32 in 8 EDP "
                "shards on one node, drift %g, %d threads\n",
                samples, drift, threads);
    std::printf("expert state %.0f MB (14 B/param) or %.0f MB (2 B/param); seconds_per_U %.5f s\n",
                cost.expert_bytes / 1e6, cost2.expert_bytes / 1e6, cost.seconds_per_U);
    std::vector<Chain> chains(4);
    const char* names[] = {"never move", "full re-placement", "cost model, 14 B/param", "cost model, 2 B/param"};
    const Topology topologies[] = {plain, plain, with_migration(plain, 14), with_migration(plain, 2)};
    for (std::size_t i = 0; i < chains.size(); ++i) {
        chains[i].name = names[i];
        chains[i].topology = topologies[i];
        chains[i].max_moves = i == 0 ? 0 : -1;
    }
    std::vector<std::uint64_t> last_loads;
    for (int k = 0; k < steps; ++k) {
        c.seed = seed + static_cast<std::uint64_t>(k);
        const auto t0 = std::chrono::steady_clock::now();
        PlanInput in;
        in.window = synth_trace(c);
        in.trace_name = "v3";
        in.window_name = "step-" + std::to_string(k);
        const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
        const std::vector<std::uint64_t> loads = aggregate_expert_loads(in.window.counts, in.window.size(), L, E);
        std::printf("step %d: synthesized in %.1f s", k,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (!last_loads.empty())
            std::printf(", expert shares %.4f apart from step %d", load_distance(loads, last_loads, L, E), k - 1);
        std::printf("\n");
        last_loads = loads;
        in.budgets.workers = threads;
        if (k == 0) {
            in.topology = plain;
            const PlanResult r = plan_window(in);
            std::printf("  step 0 planned without a previous placement: max_g U %.4f (%.1f s)\n",
                        r.routepack.metrics.score.max_u, r.timings.at("total"));
            for (Chain& ch : chains)
                ch.previous = r.placement.routepack;
            continue;
        }
        for (Chain& ch : chains) {
            PlanInput one = in;
            one.topology = ch.topology;
            one.budgets.max_moves = ch.max_moves;
            one.previous = ch.previous;
            const PlanResult r = plan_window(one);
            const MigrationFigures f = migration_figures(r.placement.routepack, ch.previous,
                                                         ch.topology.has_migration ? r.migration.cost : cost);
            ch.moves_s2 += migration_figures(r.placement.routepack, ch.previous, cost2).seconds;
            const double compute = cost.seconds_per_U * r.routepack.metrics.score.max_u;
            ch.compute += compute;
            ch.moves_s += f.seconds;
            ch.moved += f.moved;
            std::printf(
                "  %-24s max_g U %9.4f  compute %.4f s + moves %.4f s = %.4f s  (%lld moved, planned in %.1f s)\n",
                ch.name, r.routepack.metrics.score.max_u, compute, f.seconds, compute + f.seconds,
                static_cast<long long>(f.moved), r.timings.at("total"));
            ch.previous = r.placement.routepack;
        }
    }
    std::printf("steps 1..%d summed (modelled seconds; the moves at 14 B/param, and at 2 B/param):\n", steps - 1);
    for (const Chain& ch : chains) {
        const bool two = ch.topology.has_migration && ch.topology.migration.state_bytes_per_param == 2;
        std::printf("  %-24s compute %.4f s + moves %.4f s = %.4f s", ch.name, ch.compute,
                    two ? ch.moves_s2 : ch.moves_s, ch.compute + (two ? ch.moves_s2 : ch.moves_s));
        if (!ch.topology.has_migration)
            std::printf("; at 2 B/param + %.4f s = %.4f s", ch.moves_s2, ch.compute + ch.moves_s2);
        std::printf(", %lld experts moved\n", static_cast<long long>(ch.moved));
    }
    return 0;
}
