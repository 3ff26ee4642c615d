#include "core/plan/packing.h"

#include "core/util/errors.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <limits>

namespace routepack {

namespace {

/// make_packing_shape without the placement's rank-size check (its callers make it).
PackingProblem shape_of(const Trace& window, const Topology& topo, const Placement& pi) {
    PackingProblem p;
    p.n = static_cast<int>(window.size());
    if (p.n == 0) throw InputError("the window is empty");
    p.L = window.model.num_moe_layers();
    const int E = window.model.experts;
    if (pi.layers != p.L || pi.experts != E)
        throw std::invalid_argument("make_packing_problem: placement shape differs from the window's");
    p.P = pi.ep_ranks;
    p.D = topo.dp_slots;
    p.G = topo.shards();
    p.C = topo.token_cap;
    p.shard_of_slot = topo.shard_of_slot();
    p.shards = topo.edp_shards;
    p.stages = topo.attention_stages;
    p.length.resize(static_cast<std::size_t>(p.n));
    for (int i = 0; i < p.n; ++i) {
        const auto& s = window.samples[static_cast<std::size_t>(i)];
        if (s.length < 1) throw InputError("sample '" + s.id + "' has length " + std::to_string(s.length));
        if (s.length > p.C)
            throw InputError("sample '" + s.id + "' has " + std::to_string(s.length) +
                             " tokens, more than the cap C = " + std::to_string(p.C));
        p.length[static_cast<std::size_t>(i)] = s.length;
        const std::int64_t top_k = std::max(1, window.model.top_k);
        if (s.length > std::numeric_limits<std::int32_t>::max() / top_k)
            throw InputError("sample '" + s.id + "': t_i * top_k = " + std::to_string(s.length) + " * " +
                             std::to_string(top_k) + " does not fit the int32 rank demand (must stay below 2^31)");
    }
    return p;
}

} // namespace

PackingProblem make_packing_shape(const Trace& window, const Topology& topo, const Placement& pi) {
    PackingProblem p = shape_of(window, topo, pi);
    (void)experts_by_rank(pi); // the placement's rank sizes, checked as make_packing_problem does
    return p;
}

std::vector<int> experts_by_rank(const Placement& pi) {
    const int L = pi.layers, E = pi.experts, P = pi.ep_ranks;
    const int H = P > 0 ? E / P : 0;
    std::vector<int> by_rank(static_cast<std::size_t>(L) * static_cast<std::size_t>(E));
    std::vector<int> filled(static_cast<std::size_t>(P));
    for (int l = 0; l < L; ++l) {
        std::fill(filled.begin(), filled.end(), 0);
        for (int e = 0; e < E; ++e) {
            const int r = pi.rank_of(l, e);
            if (r < 0 || r >= P || filled[static_cast<std::size_t>(r)] == H)
                throw std::invalid_argument("make_packing_problem: the placement of MoE layer index " +
                                            std::to_string(l) + " gives EP rank " + std::to_string(r) +
                                            " more than its " + std::to_string(H) + " slots");
            by_rank[static_cast<std::size_t>(l) * E + static_cast<std::size_t>(r) * H +
                    static_cast<std::size_t>(filled[static_cast<std::size_t>(r)]++)] = e;
        }
    }
    return by_rank;
}

PackingProblem make_packing_problem(const Trace& window, const Topology& topo, const Placement& pi) {
    PackingProblem p = shape_of(window, topo, pi);
    const int E = window.model.experts;
    // q[i][l][p] (eq. 5) as a gather: the logical experts of each layer listed rank by rank, so every
    // q is one sum of H = E / P counts, written once (the first and only pass over the demand).
    const int H = E / p.P;
    const std::vector<int> by_rank = experts_by_rank(pi);
    p.demand.resize(static_cast<std::size_t>(p.n) * p.L * p.P);
    // A layer's routed total bounds every rank's share of it; totals below 2^31 keep q exact in int32.
    std::atomic<std::int64_t> bad{-1}; // (sample << 32) | layer of the first overflow
    tbb::parallel_for(0, p.n, [&](int i) {
        const auto a = window.sample_counts(static_cast<std::size_t>(i));
        std::int32_t* q = p.demand.data() + static_cast<std::size_t>(i) * p.L * p.P;
        for (int l = 0; l < p.L; ++l) {
            const std::uint32_t* al = a.data() + static_cast<std::size_t>(l) * E;
            const int* rl = by_rank.data() + static_cast<std::size_t>(l) * E;
            std::int32_t* ql = q + static_cast<std::size_t>(l) * p.P;
            std::uint64_t total = 0;
            for (int r = 0; r < p.P; ++r) {
                std::uint64_t sum = 0;
                for (int h = 0; h < H; ++h)
                    sum += al[rl[r * H + h]];
                total += sum;
                ql[r] = static_cast<std::int32_t>(sum); // checked through `total` below
            }
            if (total > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
                // Keep the smallest (sample, layer), so the error does not depend on scheduling.
                const std::int64_t key = (static_cast<std::int64_t>(i) << 32) | l;
                std::int64_t cur = bad.load();
                while ((cur < 0 || key < cur) && !bad.compare_exchange_weak(cur, key)) {
                }
                return;
            }
        }
    });
    if (bad.load() >= 0) {
        const int i = static_cast<int>(bad.load() >> 32), l = static_cast<int>(bad.load() & 0xffffffff);
        throw InputError(
            "sample '" + window.samples[static_cast<std::size_t>(i)].id + "': MoE layer " +
            std::to_string(window.model.moe_layers.empty() ? l : window.model.moe_layers[static_cast<std::size_t>(l)]) +
            " routes 2^31 or more tokens, beyond the int32 rank demand");
    }
    return p;
}

std::string validate_layout(const Layout& x, const PackingProblem& p) {
    if (x.dp_slots != p.D)
        return "layout has " + std::to_string(x.dp_slots) + " DP slots, topology has " + std::to_string(p.D);
    if (x.rows < 1) return "layout has no rows";
    if (static_cast<int>(x.cells.size()) != x.rows * x.dp_slots)
        return "layout has " + std::to_string(x.cells.size()) +
               " cells, expected R x D = " + std::to_string(x.rows * x.dp_slots);
    std::vector<int> seen(static_cast<std::size_t>(p.n), -1);
    for (int k = 0; k < x.cell_count(); ++k) {
        const auto& cell = x.cells[static_cast<std::size_t>(k)];
        const std::string where =
            "cell (" + std::to_string(k / x.dp_slots) + ", " + std::to_string(k % x.dp_slots) + ")";
        if (cell.empty()) return where + " is empty";
        std::int64_t tokens = 0;
        for (int i : cell) {
            if (i < 0 || i >= p.n)
                return where + " holds sample index " + std::to_string(i) + ", outside 0.." + std::to_string(p.n - 1);
            if (seen[static_cast<std::size_t>(i)] >= 0) return "sample " + std::to_string(i) + " appears twice";
            seen[static_cast<std::size_t>(i)] = k;
            tokens += p.length[static_cast<std::size_t>(i)];
        }
        if (tokens > p.C) return where + " holds " + std::to_string(tokens) + " tokens > cap " + std::to_string(p.C);
    }
    for (int i = 0; i < p.n; ++i)
        if (seen[static_cast<std::size_t>(i)] < 0) return "sample " + std::to_string(i) + " is in no cell";
    return {};
}

} // namespace routepack
