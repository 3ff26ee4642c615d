// The move search's trajectories (core/plan/search/migration.h) against their own baselines, in one
// process: each step's pruned scan (rank pairs and triples bounded, best bound first) against the scan
// of every expert pair (MoveRequest::exhaustive_scan), and a ladder of budgeted_placement calls on the
// same row-shard loads extending one TrajectoryCache against fresh calls. Both sides must return the
// same placements (checked; the bench exits 1 otherwise).
//   bench_move_search [--samples N] [--threads T] [--seed S]
// Shapes: DeepSeek-V2-Lite (26 MoE layers x 64 experts, top-6) on EP8 and DeepSeek-V3 (58 x 256,
// top-8) on EP64, `routepack synth` windows of N samples (default 512), previous placement the
// identity, LPT offered per layer. Cases, each timed once per side:
//   sequencer     MoveSequencer on the aggregate loads (one group, relocation chains), the ladder's
//                 trajectory lengths (docs/migration.md "How the moves are chosen") in ascending order
//   row-shards    budgeted_placement on 8 row-shards at 10% of L x E, no chains (a ladder refinement)
//   ladder        budgeted_placement at each ladder budget in ascending order on the same row-shard
//                 loads: fresh calls against one TrajectoryCache (both pruned)
#include "core/plan/planner.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/migration.h"
#include "core/synth/synth.h"

#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace routepack;

namespace {

struct Shape {
    const char* name;
    int layers, dense, experts, top_k, ep_ranks;
};

double seconds(const std::function<void()>& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The ladder's budgets and their trajectory lengths (ladder_points, ladder_trajectory_moves).
std::vector<std::pair<std::int64_t, std::int64_t>> ladder(std::int64_t experts, int layers) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const std::int64_t b : ladder_points(experts))
        out.emplace_back(b, ladder_trajectory_moves(b, layers));
    return out;
}

bool same_steps(const std::vector<MoveStep>& a, const std::vector<MoveStep>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
        if (a[k].layer != b[k].layer || a[k].moves != b[k].moves || a[k].rank != b[k].rank) return false;
    return true;
}

int run_shape(const Shape& s, int samples, std::uint64_t seed) {
    SynthConfig c;
    c.groups = samples / 8;
    c.group_size = 8;
    c.num_hidden_layers = s.layers + s.dense;
    c.first_dense_layers = s.dense;
    c.experts = s.experts;
    c.top_k = s.top_k;
    c.seed = seed;
    const Trace w = synth_trace(c);
    const int L = w.model.num_moe_layers(), E = w.model.experts, P = s.ep_ranks;
    const std::vector<std::uint64_t> loads = aggregate_expert_loads(w.counts, w.size(), L, E);
    const Placement prev = identity_placement(L, E, P);
    const Placement lpt = lpt_placement(loads, L, E, P);
    const auto steps = ladder(static_cast<std::int64_t>(L) * E, L);
    int failures = 0;
    auto report = [&](const char* name, double base, double fast, bool equal) {
        std::printf("%-18s %-10s  baseline %8.4f s  now %8.4f s  x%5.2f  %s\n", s.name, name, base, fast,
                    fast > 0 ? base / fast : 0.0, equal ? "same result" : "DIFFERENT RESULT");
        failures += equal ? 0 : 1;
    };

    const GroupLoads one = aggregate_group_loads(loads, L, E);
    std::vector<std::vector<MoveStep>> every, pruned;
    const double t_every = seconds([&] {
        MoveSequencer sq(one, prev, &lpt, true);
        for (const auto& st : steps)
            every.push_back(sq.sequence(st.second));
    });
    const double t_pruned = seconds([&] {
        MoveSequencer sq(one, prev, &lpt);
        for (const auto& st : steps)
            pruned.push_back(sq.sequence(st.second));
    });
    bool equal = every.size() == pruned.size();
    for (std::size_t k = 0; equal && k < every.size(); ++k)
        equal = same_steps(every[k], pruned[k]);
    report("sequencer", t_every, t_pruned, equal);

    const int RS = 8;
    std::vector<int> row_shard(w.size());
    for (std::size_t i = 0; i < row_shard.size(); ++i)
        row_shard[i] = static_cast<int>(i % RS);
    const GroupLoads gl = row_shard_group_loads(w.counts, w.size(), L, E, row_shard, RS);
    MoveRequest rq;
    rq.previous = &prev;
    rq.target = &lpt;
    rq.relocation_chains = false;
    rq.max_moves = static_cast<std::int64_t>(L) * E / 10;
    rq.trajectory_moves = ladder_trajectory_moves(rq.max_moves, L);
    MovePlan a, b;
    rq.exhaustive_scan = true;
    const double t_all = seconds([&] { a = budgeted_placement(gl, rq); });
    rq.exhaustive_scan = false;
    const double t_bound = seconds([&] { b = budgeted_placement(gl, rq); });
    report("row-shards", t_all, t_bound, a.placement == b.placement);

    std::vector<Placement> fresh, kept;
    const double t_fresh = seconds([&] {
        for (const auto& st : steps) {
            rq.max_moves = st.first;
            rq.trajectory_moves = st.second;
            fresh.push_back(budgeted_placement(gl, rq).placement);
        }
    });
    const double t_kept = seconds([&] {
        TrajectoryCache cache;
        for (const auto& st : steps) {
            rq.max_moves = st.first;
            rq.trajectory_moves = st.second;
            kept.push_back(budgeted_placement(gl, rq, cache).placement);
        }
    });
    report("ladder", t_fresh, t_kept, fresh == kept);
    return failures;
}

} // namespace

int main(int argc, char** argv) {
    int samples = 512, threads = 1;
    std::uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
        const bool more = i + 1 < argc;
        if (!std::strcmp(argv[i], "--samples") && more)
            samples = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--threads") && more)
            threads = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--seed") && more)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: bench_move_search [--samples N] [--threads T] [--seed S]\n");
            return 2;
        }
    }
    if (samples < 8 || samples % 8 != 0 || threads < 1) {
        std::fprintf(stderr, "bench_move_search: --samples must be a multiple of 8, --threads >= 1\n");
        return 2;
    }
    const tbb::global_control gc(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    std::printf("%d samples, %d thread(s), seed %llu\n", samples, threads, static_cast<unsigned long long>(seed));
    int failures = 0;
    for (const Shape& s : {Shape{"deepseek-v2-lite", 26, 1, 64, 6, 8}, Shape{"deepseek-v3", 58, 3, 256, 8, 64}})
        failures += run_shape(s, samples, seed);
    return failures == 0 ? 0 : 1;
}
