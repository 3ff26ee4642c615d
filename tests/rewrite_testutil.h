#pragma once
// Placements for rewrite tests (Qt-free: shared by the QtTest executables and tests/gpu/rewrite_gpu_check).
#include "core/placement.h"
#include "core/rng.h"

#include <cstdint>
#include <numeric>
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
        for (int e = 0; e < experts; ++e) p.slot.push_back(e);
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

}  // namespace routepack::test
