#include "core/plan/score/packing.h"

#include "core/util/errors.h"
#include "core/util/index.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <stdexcept>

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
    p.rules = topo.batch;
    check_batch_window(topo, p.n);
    p.shard_of_slot = topo.shard_of_slot();
    p.shards = topo.edp_shards;
    p.stages = topo.attention_stages;
    p.invocation_tokens = topo.expert_invocation_tokens;
    p.E = E;
    p.length.resize(idx(p.n));
    for (int i = 0; i < p.n; ++i)
        p.length[idx(i)] = window.samples[idx(i)].length;
    p.C = effective_token_cap(topo, p.length);
    for (int i = 0; i < p.n; ++i) {
        const auto& s = window.samples[idx(i)];
        if (s.length < 1) throw InputError("sample '" + s.id + "' has length " + std::to_string(s.length));
        if (s.length > p.C && p.rules.oversize == Oversize::Alone && p.rules.samples_per_cell > 1)
            throw InputError("sample '" + s.id + "' has " + std::to_string(s.length) +
                             " tokens, more than the cap C = " + std::to_string(p.C) +
                             ": oversize alone needs a cell of its own, but samples_per_cell puts " +
                             std::to_string(p.rules.samples_per_cell) + " samples in every cell");
        if (s.length > p.C && p.rules.oversize == Oversize::Refuse)
            throw InputError("sample '" + s.id + "' has " + std::to_string(s.length) +
                             " tokens, more than the cap C = " + std::to_string(p.C));
        const std::int64_t top_k = std::max(1, window.model.top_k);
        if (s.length > std::numeric_limits<std::int32_t>::max() / top_k)
            throw InputError("sample '" + s.id + "': t_i * top_k = " + std::to_string(s.length) + " * " +
                             std::to_string(top_k) + " does not fit the int32 rank demand (must stay below 2^31)");
    }
    return p;
}

/// The invocation term's per-sample expert lists (PackingProblem::slot_offsets and friends): two passes
/// over the counts (sizes, then entries), each parallel over samples.
void add_invocation_slots(PackingProblem& p, const Trace& window, const std::vector<int>& by_rank) {
    const int E = window.model.experts;
    p.E = E;
    std::vector<std::int64_t> nnz(idx(p.n) + 1, 0);
    tbb::parallel_for(0, p.n, [&](int i) {
        const auto a = window.sample_counts(idx(i));
        std::int64_t c = 0;
        for (std::size_t v = 0; v < idx(p.L) * E; ++v)
            c += a[v] > 0;
        nnz[idx(i) + 1] = c;
    });
    for (int i = 0; i < p.n; ++i)
        nnz[idx(i) + 1] += nnz[idx(i)];
    p.slot_index.resize(idx(nnz.back()));
    p.slot_count.resize(idx(nnz.back()));
    p.slot_rank.resize(idx(nnz.back()));
    const int H = E / p.P;
    tbb::parallel_for(0, p.n, [&](int i) {
        const auto a = window.sample_counts(idx(i));
        std::size_t o = idx(nnz[idx(i)]);
        for (int l = 0; l < p.L; ++l)
            for (int s = 0; s < E; ++s) {
                const std::uint32_t c = a[idx(l) * E + idx(by_rank[idx(l) * E + idx(s)])];
                if (c == 0) continue;
                p.slot_index[o] = l * E + s;
                p.slot_rank[o] = l * p.P + s / H;
                p.slot_count[o++] = static_cast<std::int32_t>(c); // c <= the layer's total, checked < 2^31
            }
    });
    p.slot_offsets = std::move(nnz);
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
            if (r < 0 || r >= P || filled[idx(r)] == H)
                throw std::invalid_argument("make_packing_problem: the placement of MoE layer index " +
                                            std::to_string(l) + " gives EP rank " + std::to_string(r) +
                                            " more than its " + std::to_string(H) + " slots");
            by_rank[idx(l) * E + idx(r) * H + idx(filled[idx(r)]++)] = e;
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
    p.demand.resize(idx(p.n) * p.L * p.P);
    // A layer's routed total bounds every rank's share of it; totals below 2^31 keep q exact in int32.
    std::atomic<std::int64_t> bad{-1}; // (sample << 32) | layer of the first overflow
    tbb::parallel_for(0, p.n, [&](int i) {
        const auto a = window.sample_counts(idx(i));
        std::int32_t* q = p.demand.data() + idx(i) * p.L * p.P;
        for (int l = 0; l < p.L; ++l) {
            const std::uint32_t* al = a.data() + idx(l) * E;
            const int* rl = by_rank.data() + idx(l) * E;
            std::int32_t* ql = q + idx(l) * p.P;
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
        throw InputError("sample '" + window.samples[idx(i)].id + "': MoE layer " +
                         std::to_string(window.model.moe_layers.empty() ? l : window.model.moe_layers[idx(l)]) +
                         " routes 2^31 or more tokens, beyond the int32 rank demand");
    }
    if (topo.expert_invocation_tokens > 0) add_invocation_slots(p, window, by_rank);
    return p;
}

Layout Layout::from_cells(int rows, int dp_slots, const std::vector<std::vector<int>>& cells) {
    if (rows < 0 || dp_slots < 0)
        throw std::invalid_argument("Layout::from_cells: rows and dp_slots must be >= 0 (got " + std::to_string(rows) +
                                    ", " + std::to_string(dp_slots) + ")");
    const std::size_t K = idx(rows) * idx(dp_slots);
    if (cells.size() != K)
        throw std::invalid_argument("Layout::from_cells: " + std::to_string(cells.size()) +
                                    " cells, expected rows x dp_slots = " + std::to_string(K));
    Layout x;
    x.rows = rows;
    x.dp_slots = dp_slots;
    std::size_t total = 0;
    for (const auto& c : cells)
        total += c.size();
    x.samples.reserve(total);
    x.offsets.reserve(K + 1);
    for (const auto& c : cells) {
        x.samples.insert(x.samples.end(), c.begin(), c.end());
        x.offsets.push_back(static_cast<int>(x.samples.size()));
    }
    return x;
}

Layout Layout::from_assignment(int rows, int dp_slots, std::span<const int> order, std::span<const int> cell_of) {
    if (rows < 0 || dp_slots < 0)
        throw std::invalid_argument("Layout::from_assignment: rows and dp_slots must be >= 0 (got " +
                                    std::to_string(rows) + ", " + std::to_string(dp_slots) + ")");
    if (order.size() != cell_of.size())
        throw std::invalid_argument("Layout::from_assignment: " + std::to_string(order.size()) + " samples but " +
                                    std::to_string(cell_of.size()) + " cells");
    const int K = rows * dp_slots;
    Layout x;
    x.rows = rows;
    x.dp_slots = dp_slots;
    x.offsets.assign(idx(K) + 1, 0);
    for (int k : cell_of) {
        if (k < 0 || k >= K)
            throw std::invalid_argument("Layout::from_assignment: cell " + std::to_string(k) + " outside 0.." +
                                        std::to_string(K - 1));
        ++x.offsets[idx(k) + 1];
    }
    for (int k = 0; k < K; ++k)
        x.offsets[idx(k) + 1] += x.offsets[idx(k)];
    x.samples.resize(order.size());
    // offsets[k] serves as cell k's fill position, which ends at the start of cell k + 1; then the
    // offsets shift back by one cell.
    for (std::size_t j = 0; j < order.size(); ++j)
        x.samples[idx(x.offsets[idx(cell_of[j])]++)] = order[j];
    for (int k = K; k > 0; --k)
        x.offsets[idx(k)] = x.offsets[idx(k) - 1];
    x.offsets[0] = 0;
    return x;
}

bool Layout::well_formed() const {
    if (rows < 0 || dp_slots < 0) return false;
    if (offsets.size() != idx(rows) * idx(dp_slots) + 1) return false;
    if (offsets.front() != 0 || offsets.back() != static_cast<std::int64_t>(samples.size())) return false;
    for (std::size_t k = 1; k < offsets.size(); ++k)
        if (offsets[k] < offsets[k - 1]) return false;
    return true;
}

std::string validate_layout(const Layout& x, const PackingProblem& p) {
    if (x.dp_slots != p.D)
        return "layout has " + std::to_string(x.dp_slots) + " DP slots, topology has " + std::to_string(p.D);
    if (x.rows < 1) return "layout has no rows";
    if (x.offsets.size() != static_cast<std::size_t>(x.cell_count()) + 1)
        return "layout has " + std::to_string(x.offsets.empty() ? 0 : x.offsets.size() - 1) +
               " cells, expected R x D = " + std::to_string(x.rows * x.dp_slots);
    if (!x.well_formed())
        return "layout's cell offsets do not split its " + std::to_string(x.samples.size()) + " samples";
    std::vector<int> seen(static_cast<std::size_t>(p.n), -1);
    for (int k = 0; k < x.cell_count(); ++k) {
        const std::span<const int> cell = x.cell(k);
        const std::string where =
            "cell (" + std::to_string(k / x.dp_slots) + ", " + std::to_string(k % x.dp_slots) + ")";
        if (cell.empty()) return where + " is empty";
        std::int64_t tokens = 0;
        for (int i : cell) {
            if (i < 0 || i >= p.n)
                return where + " holds sample index " + std::to_string(i) + ", outside 0.." + std::to_string(p.n - 1);
            if (seen[idx(i)] >= 0) return "sample " + std::to_string(i) + " appears twice";
            seen[idx(i)] = k;
            tokens += p.length[idx(i)];
        }
        if (!p.cell_fits(static_cast<int>(cell.size()), tokens))
            return where + " holds " + std::to_string(tokens) + " tokens > cap " + std::to_string(p.C);
        const int size = static_cast<int>(cell.size());
        if (p.rules.samples_per_cell > 0 && size != p.rules.samples_per_cell)
            return where + " holds " + std::to_string(size) + " samples, samples_per_cell is " +
                   std::to_string(p.rules.samples_per_cell);
        if (p.rules.max_samples_per_cell > 0 && size > p.rules.max_samples_per_cell)
            return where + " holds " + std::to_string(size) + " samples, max_samples_per_cell is " +
                   std::to_string(p.rules.max_samples_per_cell);
    }
    for (int i = 0; i < p.n; ++i)
        if (seen[idx(i)] < 0) return "sample " + std::to_string(i) + " is in no cell";
    if (p.rules.samples_per_dp_slot > 0)
        for (int d = 0; d < x.dp_slots; ++d) {
            int count = 0;
            for (int r = 0; r < x.rows; ++r)
                count += x.cell_size(x.cell_index(r, d));
            if (count != p.rules.samples_per_dp_slot)
                return "DP slot " + std::to_string(d) + " holds " + std::to_string(count) +
                       " samples, samples_per_dp_slot is " + std::to_string(p.rules.samples_per_dp_slot);
        }
    return {};
}

std::vector<std::int64_t> fitting_lengths(const std::vector<std::int64_t>& length, std::int64_t C,
                                          const BatchRules& rules) {
    std::vector<std::int64_t> fit(length);
    if (rules.oversize == Oversize::Alone)
        for (auto& v : fit)
            v = std::min(v, C);
    return fit;
}

std::vector<int> oversize_cells(const Layout& x, const PackingProblem& p) {
    std::vector<int> out;
    for (int k = 0; k < x.cell_count(); ++k) {
        std::int64_t tokens = 0;
        for (int i : x.cell(k))
            tokens += p.length[idx(i)];
        if (tokens > p.C) out.push_back(k);
    }
    return out;
}

} // namespace routepack
