#pragma once
// Small traces with per-token routes for the communication tests (tst_comm, tst_studio_comm): a model
// of L MoE layers, a sample made from its routes, and the planted two-family routes.
#include "core/model/trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace routepack::test {

/// A model of L MoE layers (no dense layer), E experts, top-k K.
inline ModelDescription tiny_model(int L, int E, int K) {
    ModelDescription m;
    m.name = "tiny";
    m.num_hidden_layers = L;
    m.experts = E;
    m.top_k = K;
    for (int l = 0; l < L; ++l)
        m.moe_layers.push_back(l);
    return m;
}

/// A sample of `routes` [L][tokens][K] (-1 = missing) with counts made from them.
inline SampleRecord sample_of(const std::string& id, const ModelDescription& m,
                              const std::vector<std::vector<std::vector<int>>>& routes) {
    const int L = m.num_moe_layers(), E = m.experts, K = m.top_k;
    const std::int64_t T = static_cast<std::int64_t>(routes[0].size());
    SampleRecord r;
    r.info.id = id;
    r.info.routed_rows = T;
    r.info.length = T;
    r.counts.assign(static_cast<std::size_t>(L) * E, 0);
    r.routes = SampleRoutes::make(T, L, K, E);
    for (int l = 0; l < L; ++l)
        for (std::int64_t t = 0; t < T; ++t)
            for (int s = 0; s < K; ++s) {
                const int e = routes[l][t][s];
                r.routes.set(l, t, s, e);
                if (e >= 0) ++r.counts[static_cast<std::size_t>(l) * E + e];
            }
    return r;
}

/// Routes [2 layers][8 tokens][top-2] of a planted family sample: the family's four experts per layer
/// `f` ([2][4]), token t taking experts (t + shift) % 4 and (t + shift + 1 + t / 4) % 4 of them.
inline std::vector<std::vector<std::vector<int>>> family(const std::vector<std::vector<int>>& f, int shift) {
    std::vector<std::vector<std::vector<int>>> r(2);
    for (int l = 0; l < 2; ++l)
        for (int t = 0; t < 8; ++t)
            r[l].push_back({f[l][(t + shift) % 4], f[l][(t + shift + 1 + t / 4) % 4]});
    return r;
}

/// The planted families' experts per MoE layer ([2][4]): family A and family B use disjoint halves.
inline const std::vector<std::vector<int>> kFamilyA = {{0, 2, 4, 6}, {0, 1, 2, 3}};
inline const std::vector<std::vector<int>> kFamilyB = {{1, 3, 5, 7}, {4, 5, 6, 7}};

} // namespace routepack::test
