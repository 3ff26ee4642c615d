#pragma once
// Placements for rewrite tests (Qt-free: shared by the QtTest executables and tests/gpu/rewrite_gpu_check).
#include "core/model/topology.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/plan/score/placement.h"
#include "core/synth/synth.h"
#include "core/util/rng.h"
#include "gpu/rewrite.h"

#include <cstdint>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

namespace routepack::test {

/// A random permutation per layer that moves every expert and is not its own inverse (so apply and
/// inverse differ), when E allows (E >= 3; E = 2 can only swap). Deterministic in `seed`. ep_ranks = 1.
inline Placement random_placement(int layers, int experts, std::uint64_t seed) {
    Placement p;
    p.layers = layers;
    p.experts = experts;
    p.ep_ranks = 1;
    Rng rng(seed);
    for (int l = 0; l < layers; ++l) {
        std::vector<int> perm(static_cast<std::size_t>(experts));
        for (;;) {
            std::iota(perm.begin(), perm.end(), 0);
            for (int i = experts - 1; i > 0; --i)
                std::swap(perm[static_cast<std::size_t>(i)], perm[rng.below(static_cast<std::uint64_t>(i) + 1)]);
            bool self_inverse = true, moves_all = true;
            for (int e = 0; e < experts; ++e) {
                if (perm[static_cast<std::size_t>(perm[static_cast<std::size_t>(e)])] != e) self_inverse = false;
                if (perm[static_cast<std::size_t>(e)] == e) moves_all = false;
            }
            if ((!self_inverse || experts < 3) && (moves_all || experts < 2)) break;
        }
        p.slot.insert(p.slot.end(), perm.begin(), perm.end());
    }
    return p;
}

/// pi_l(e) = e for every layer.
inline Placement identity_placement(int layers, int experts) {
    Placement p;
    p.layers = layers;
    p.experts = experts;
    p.ep_ranks = 1;
    for (int l = 0; l < layers; ++l)
        for (int e = 0; e < experts; ++e)
            p.slot.push_back(e);
    return p;
}

/// A placement that keeps each contiguous group of `gs` experts together (group-limited routing): whole
/// groups shifted by 1 + layer, and a rotation inside each group.
inline Placement group_placement(int layers, int experts, int gs) {
    Placement p;
    p.layers = layers;
    p.experts = experts;
    p.ep_ranks = 1;
    const int groups = experts / gs;
    for (int l = 0; l < layers; ++l)
        for (int e = 0; e < experts; ++e) {
            const int g = e / gs, i = e % gs;
            p.slot.push_back(((g + 1 + l) % groups) * gs + (i + 1) % gs);
        }
    return p;
}

/// The five real checkpoints of ../shared/checkpoints.
inline const char* const kSharedCheckpoints[] = {"qwen3_moe", "mixtral", "olmoe", "deepseek_v3", "gpt_oss"};

/// The JSON text of a real plan for a checkpoint's model: a synthetic GRPO trace of that model's shape
/// (16 samples, lengths <= 512) planned on `ep_ranks` EP ranks x 2 DP slots, cap 1024, one worker and a
/// short annealing budget (deterministic).
inline std::string plan_json_for_model(const ModelDescription& m, int ep_ranks = 4) {
    SynthConfig sc;
    sc.groups = 4;
    sc.group_size = 4;
    sc.num_hidden_layers = m.num_hidden_layers;
    sc.first_dense_layers = m.moe_layers.front();
    sc.experts = m.experts;
    sc.top_k = m.top_k;
    sc.max_length = 512;
    sc.prompt_mean = 64;
    sc.response_mean = 128;
    PlanInput in;
    in.window = synth_trace(sc);
    in.trace_name = "synthetic";
    in.window_name = "all";
    in.topology = parse_topology("{\"ep_ranks\": " + std::to_string(ep_ranks) +
                                     ", \"dp_slots\": 2, \"token_cap\": 1024, \"attention_stages\": "
                                     "[{\"name\": \"a\", \"alpha\": 1.0, \"beta\": 1.0}]}",
                                 "test-topology");
    in.budgets.workers = 1;
    in.budgets.annealing.steps = 50;
    return plan_to_json(plan_window(in));
}

/// A rewrite request for tests: the placement's rows are the model's MoE layers, CPU executor, 2 workers,
/// plan origin "test-plan.json" (as error messages name it), inputs fingerprint "test".
inline gpu::RewriteRequest rewrite_request(const std::filesystem::path& in, const std::filesystem::path& out,
                                           const Placement& pi, const ModelDescription& m,
                                           gpu::RewriteDirection dir = gpu::RewriteDirection::Apply) {
    gpu::RewriteRequest r;
    r.input = in;
    r.output = out;
    r.placement = pi;
    r.plan_layers = m.moe_layers;
    r.plan_model = m;
    r.plan_fingerprint = "test";
    r.plan_origin = "test-plan.json";
    r.direction = dir;
    r.device = gpu::RewriteDevice::Cpu;
    r.workers = 2;
    return r;
}

} // namespace routepack::test
