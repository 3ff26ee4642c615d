// Metrics of any layout (paper section 5.3, eqs. 21-23) and the karmarkar-karp baseline layout.
#include "core/plan/score/metrics.h"

#include "core/util/index.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>

namespace routepack {

namespace {

void check_metrics_layout(const Layout& x, const PackingProblem& p) {
    if (x.dp_slots != p.D || !x.well_formed())
        throw std::invalid_argument("layout_metrics: layout is not R x D with D = " + std::to_string(p.D));
    for (int i : x.samples)
        if (i < 0 || i >= p.n)
            throw std::invalid_argument("layout_metrics: sample index " + std::to_string(i) + " outside 0.." +
                                        std::to_string(p.n - 1));
}

/// The metrics from the integer rank loads, however they are formed: `add(i, Wg)` adds sample i's
/// demand q[i][l][p] into Wg ([L][P], int64). Per row r, W[r][g][l][p] (eq. 13) is summed once and
/// gives both the EP figures of eq. 23 and the row-shard peak sums sum_l max_p W that the joint
/// score takes (cost_breakdown_from_peak_sums: the same integers, so the same bits as cost_breakdown).
/// With the expert invocation term (p.invocation_tokens > 0) `invocations(r, g, Wg)` then adds a K
/// (PackingProblem::invocation_tokens) to row-shard (r, g)'s loads.
template <class AddSample, class AddInvocations>
LayoutMetrics metrics_from_loads(const Layout& x, const PackingProblem& p, double cv_global, AddSample&& add,
                                 AddInvocations&& invocations) {
    LayoutMetrics m;
    m.cv_global = cv_global;
    for (int k = 0; k < x.cell_count(); ++k) {
        const std::span<const int> cell = x.cell(k);
        if (cell.empty()) ++m.empty_cells;
        std::int64_t tokens = 0;
        for (int i : cell)
            tokens += p.length[idx(i)];
        if (tokens > p.C) ++m.cap_violations;
    }

    // Per row: sum_l max_{g,p} W, max W, sum_l max_g sum_p W, and per (r, g) sum_l max_p W. Rows in
    // parallel, reduced in row order.
    const int R = x.rows, L = p.L, P = p.P, G = p.G;
    std::vector<std::int64_t> row_peak_sum(R, 0), row_tail(R, 0), row_mean_sum(R, 0);
    std::vector<std::int64_t> shard_peak_sum(idx(R) * G, 0);
    tbb::parallel_for(tbb::blocked_range<int>(0, R), [&](const tbb::blocked_range<int>& range) {
        std::vector<std::int64_t> W(idx(G) * L * P);
        for (int r = range.begin(); r != range.end(); ++r) {
            std::fill(W.begin(), W.end(), 0);
            for (int d = 0; d < p.D; ++d) {
                std::int64_t* Wg = W.data() + idx(p.shard_of_slot[d]) * L * P;
                for (int i : x.cell(x.cell_index(r, d)))
                    add(i, Wg);
            }
            if (p.invocation_tokens > 0)
                for (int g = 0; g < G; ++g)
                    invocations(r, g, W.data() + idx(g) * L * P);
            std::int64_t peak_sum = 0, tail = 0, mean_sum = 0;
            for (int l = 0; l < L; ++l) {
                std::int64_t peak = 0, best_total = 0;
                for (int g = 0; g < G; ++g) {
                    const std::int64_t* w = W.data() + (idx(g) * L + l) * P;
                    std::int64_t total = 0, shard_peak = 0;
                    for (int pp = 0; pp < P; ++pp) {
                        shard_peak = std::max(shard_peak, w[pp]);
                        total += w[pp];
                    }
                    shard_peak_sum[idx(r) * G + g] += shard_peak;
                    peak = std::max(peak, shard_peak);
                    best_total = std::max(best_total, total);
                }
                peak_sum += peak;
                tail = std::max(tail, peak);
                mean_sum += best_total;
            }
            row_peak_sum[r] = peak_sum;
            row_tail[r] = tail;
            row_mean_sum[r] = mean_sum;
        }
    });
    const CostBreakdown cb = cost_breakdown_from_peak_sums(x, p, shard_peak_sum);
    m.score = cb.score;
    for (double a : cb.A)
        m.attention_sum += a;
    m.joint = cb.score.max_u;
    std::int64_t mean_total = 0; // sum_{r,l} max_g sum_p W  (P times the numerator of eq. 23)
    for (int r = 0; r < R; ++r) {
        m.ep_peak_sum += row_peak_sum[r];
        m.ep_tail_peak = std::max(m.ep_tail_peak, row_tail[r]);
        mean_total += row_mean_sum[r];
    }
    m.ep_balance_efficiency = m.ep_peak_sum == 0 ? 1.0
                                                 : static_cast<double>(mean_total) /
                                                       (static_cast<double>(P) * static_cast<double>(m.ep_peak_sum));
    return m;
}

} // namespace

/// Metrics of a rectangular R x D layout under the problem's placement (its demand q, eq. 5).
/// score / attention_sum / joint are cost_breakdown's (eqs. 12-15; attention_sum =
/// sum_{r,g} A[r][g], joint = max_g U_g). The EP figures of eq. 23 come from the integer loads
/// W[r][g][l][p] (eq. 13): S_EP = sum_{r,l} max_{g,p} W, T_EP = max_{r,g,l,p} W (tokens),
/// eta_EP = sum_{r,l} max_g ((1/P) sum_p W) / S_EP (1 when S_EP = 0: nothing to balance).
/// Cells over C and empty cells are counted, never refused (the karmarkar-karp baseline has them).
/// std::invalid_argument when the layout is not R x D with D = p.D or names a sample outside 0..n-1.
LayoutMetrics layout_metrics(const Layout& x, const PackingProblem& p, double cv_global) {
    check_metrics_layout(x, p);
    if (p.demand.size() != static_cast<std::size_t>(p.n) * p.L * p.P)
        throw std::invalid_argument("score: demand is not [n][L][P]");
    if (p.invocation_tokens > 0 && !p.has_invocation_term())
        throw std::invalid_argument("layout_metrics: the invocation term has no expert lists");
    const int LP = p.L * p.P;
    return metrics_from_loads(
        x, p, cv_global,
        [&](int i, std::int64_t* Wg) {
            const std::int32_t* q = p.q(i);
            for (int lp = 0; lp < LP; ++lp)
                Wg[lp] += q[lp];
        },
        [&](int r, int g, std::int64_t* Wg) {
            InvocationLoads inv(p);
            for (int d : p.shards[idx(g)])
                for (int i : x.cell(x.cell_index(r, d)))
                    inv.add(i);
            inv.flush(Wg);
        });
}

LayoutMetrics layout_metrics_from_counts(const Layout& x, const PackingProblem& shape, const Trace& window,
                                         const Placement& pi, double cv_global) {
    check_metrics_layout(x, shape);
    const int L = shape.L, P = shape.P, E = window.model.experts;
    if (static_cast<int>(window.size()) != shape.n || window.model.num_moe_layers() != L || pi.layers != L ||
        pi.experts != E || pi.ep_ranks != P || window.counts.size() != window.size() * window.stride())
        throw std::invalid_argument("layout_metrics_from_counts: window, placement and problem shapes differ");
    const int H = E / P;
    const std::vector<int> by_rank = experts_by_rank(pi);
    auto add = [&](int i, std::int64_t* Wg) {
        const std::uint32_t* a = window.sample_counts(idx(i)).data();
        for (int l = 0; l < L; ++l) {
            const std::uint32_t* al = a + idx(l) * E;
            const int* rl = by_rank.data() + idx(l) * E;
            std::int64_t* w = Wg + idx(l) * P;
            for (int r = 0; r < P; ++r) {
                std::int64_t sum = 0;
                for (int h = 0; h < H; ++h)
                    sum += al[rl[r * H + h]];
                w[r] += sum;
            }
        }
    };
    auto invocations = [&](int r, int g, std::int64_t* Wg) {
        // Experts with tokens in the row-shard, from the counts: a K added at their owning ranks.
        std::vector<unsigned char> seen(idx(L) * E, 0);
        for (int d : shape.shards[idx(g)])
            for (int i : x.cell(x.cell_index(r, d))) {
                const std::uint32_t* a = window.sample_counts(idx(i)).data();
                for (std::size_t v = 0; v < seen.size(); ++v)
                    seen[v] |= a[v] > 0;
            }
        for (int l = 0; l < L; ++l)
            for (int e = 0; e < E; ++e)
                if (seen[idx(l) * E + idx(e)]) Wg[idx(l) * P + idx(pi.rank_of(l, e))] += shape.invocation_tokens;
    };
    return metrics_from_loads(x, shape, cv_global, add, invocations);
}

namespace {

/// One part of a KK tuple: token sum and members as a linked list through `next` (shared arena).
struct Part {
    std::int64_t sum = 0;
    int head = -1, tail = -1; ///< first / last member (indices into the arena `next`)
    int first = 0;            ///< smallest member index
};

/// A KK tuple: only its non-empty parts, kept in canonical order (sum desc, smallest member asc);
/// the remaining K - parts.size() parts are empty (sum 0) and come last.
struct Tuple {
    std::vector<Part> parts;
    int first = 0; ///< smallest member index over all parts
    std::int64_t diff(int K) const {
        if (parts.empty()) return 0;
        const std::int64_t lo = static_cast<int>(parts.size()) < K ? 0 : parts.back().sum;
        return parts.front().sum - lo;
    }
};

bool canonical_less(const Part& a, const Part& b) {
    if (a.sum != b.sum) return a.sum > b.sum;
    return a.first < b.first;
}

} // namespace

/// Largest differencing method (Karmarkar-Karp, multi-way) into K = rows*D parts: every sample
/// starts as a K-tuple with its length in one part; repeatedly the two tuples with the largest
/// (max part - min part) difference (ties: smallest member index first) are combined by adding the
/// first tuple's parts in descending order to the second's in ascending order (parts ordered by
/// (sum, smallest member); empty parts are sum 0); the last tuple is the partition. Its parts are
/// sorted by token sum descending (ties by smallest member index, empty parts last) and dealt to
/// cells k = 0..K-1 as (k / D, k % D), members ascending. Parts over C and empty parts (n < K) are
/// kept: layout_metrics reports them. O(n K log K) time at worst (only overlapping parts are
/// sorted; a tuple growing by one sample costs O(K)), O(n + K) memory. std::invalid_argument
/// when rows < 1 or D < 1.
Layout karmarkar_karp_layout(const std::vector<std::int64_t>& length, int rows, int D) {
    if (rows < 1 || D < 1)
        throw std::invalid_argument("karmarkar_karp_layout: need rows >= 1 and D >= 1 (got " + std::to_string(rows) +
                                    ", " + std::to_string(D) + ")");
    const int K = rows * D;
    const int n = static_cast<int>(length.size());
    Layout x;
    x.rows = rows;
    x.dp_slots = D;
    if (n == 0) {
        x.offsets.assign(idx(K) + 1, 0);
        return x;
    }

    std::vector<int> next(n, -1); // member linked lists
    std::vector<Tuple> tuples(n);
    for (int i = 0; i < n; ++i) {
        tuples[i].parts.push_back(Part{length[i], i, i, i});
        tuples[i].first = i;
    }
    struct Key {
        std::int64_t diff;
        int first;
        int id;
    };
    // Max-heap on diff, then min on smallest member index (unique per live tuple: members are disjoint).
    auto worse = [](const Key& a, const Key& b) {
        if (a.diff != b.diff) return a.diff < b.diff;
        return a.first > b.first;
    };
    std::priority_queue<Key, std::vector<Key>, decltype(worse)> heap(worse);
    for (int i = 0; i < n; ++i)
        heap.push(Key{tuples[i].diff(K), tuples[i].first, i});

    auto concat = [&](Part& a, const Part& b) { // a += b
        if (b.head < 0) return;
        if (a.head < 0) {
            a = b;
            return;
        }
        next[a.tail] = b.head;
        a.tail = b.tail;
        a.sum += b.sum;
        a.first = std::min(a.first, b.first);
    };

    while (heap.size() > 1) {
        const Key ka = heap.top();
        heap.pop();
        const Key kb = heap.top();
        heap.pop();
        Tuple& A = tuples[ka.id];
        Tuple& B = tuples[kb.id];
        // A descending (canonical order, empties last) paired with B ascending: position k of the
        // result is A[k] (k < a) plus B's canonical part K-1-k (k >= K-b). Positions where only A or
        // only B contributes are already in canonical order; only the overlap needs sorting, then the
        // three sorted runs are merged (the order is a strict total order: members are disjoint).
        const int a = static_cast<int>(A.parts.size());
        const int b = static_cast<int>(B.parts.size());
        const int emptyB = K - b;
        const int onlyA = std::min(a, emptyB);       // k in [0, onlyA): A[k]
        const int overlap = std::max(0, a - emptyB); // k in [emptyB, a): A[k] + B[K-1-k]
        const int onlyB = K - std::max(a, emptyB);   // B[0 .. onlyB)
        std::vector<Part> mixed;
        mixed.reserve(idx(overlap));
        for (int k = emptyB; k < a; ++k) {
            Part part = A.parts[idx(k)];
            concat(part, B.parts[idx(K - 1 - k)]);
            mixed.push_back(part);
        }
        std::sort(mixed.begin(), mixed.end(), canonical_less);
        std::vector<Part> ab;
        ab.reserve(idx(onlyA) + idx(onlyB));
        std::merge(A.parts.begin(), A.parts.begin() + onlyA, B.parts.begin(), B.parts.begin() + onlyB,
                   std::back_inserter(ab), canonical_less);
        std::vector<Part> merged;
        merged.reserve(ab.size() + mixed.size());
        std::merge(ab.begin(), ab.end(), mixed.begin(), mixed.end(), std::back_inserter(merged), canonical_less);
        A.parts = std::move(merged);
        A.first = std::min(A.first, B.first);
        B.parts.clear();
        B.parts.shrink_to_fit();
        heap.push(Key{A.diff(K), A.first, ka.id});
    }
    const Tuple& final_tuple = tuples[heap.top().id];
    // Canonical order is already "sum desc, smallest member asc", empties last.
    x.samples.reserve(idx(n));
    x.offsets.reserve(idx(K) + 1);
    for (const Part& part : final_tuple.parts) {
        const auto begin = static_cast<std::ptrdiff_t>(x.samples.size());
        for (int i = part.head; i >= 0; i = next[i]) {
            x.samples.push_back(i);
            if (i == part.tail) break;
        }
        std::sort(x.samples.begin() + begin, x.samples.end());
        x.offsets.push_back(static_cast<int>(x.samples.size()));
    }
    x.offsets.resize(idx(K) + 1, static_cast<int>(x.samples.size())); // empty cells last
    return x;
}

std::vector<std::vector<int>> equal_size_kk(const std::vector<std::int64_t>& length, std::vector<int> items, int k) {
    if (k < 1 || items.size() % idx(k) != 0)
        throw std::invalid_argument("equal_size_kk: " + std::to_string(items.size()) + " samples do not split into " +
                                    std::to_string(k) + " equal parts");
    std::sort(items.begin(), items.end(), [&](int a, int b) {
        if (length[a] != length[b]) return length[a] > length[b];
        return a < b;
    });
    struct EqPart {
        std::int64_t sum = 0;
        std::vector<int> members;
        int first() const { return *std::min_element(members.begin(), members.end()); }
    };
    using State = std::vector<EqPart>; // parts in descending sum (ties by smallest member)
    auto order = [](State& st) {
        std::sort(st.begin(), st.end(), [](const EqPart& a, const EqPart& b) {
            if (a.sum != b.sum) return a.sum > b.sum;
            return a.first() < b.first();
        });
    };
    std::vector<State> states;
    for (std::size_t j = 0; j < items.size(); j += idx(k)) {
        State st(idx(k));
        for (int h = 0; h < k; ++h)
            st[h] = EqPart{length[items[j + h]], {items[j + h]}};
        order(st);
        states.push_back(std::move(st));
    }
    // Largest spread first; ties to the state created first (a deterministic total order).
    using Key = std::tuple<std::int64_t, int>;
    auto worse = [](const Key& a, const Key& b) {
        if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) < std::get<0>(b);
        return std::get<1>(a) > std::get<1>(b);
    };
    std::priority_queue<Key, std::vector<Key>, decltype(worse)> heap(worse);
    for (std::size_t s = 0; s < states.size(); ++s)
        heap.push({states[s].front().sum - states[s].back().sum, static_cast<int>(s)});
    while (heap.size() > 1) {
        const int a = std::get<1>(heap.top());
        heap.pop();
        const int b = std::get<1>(heap.top());
        heap.pop();
        State& A = states[idx(a)];
        State& B = states[idx(b)];
        for (int h = 0; h < k; ++h) {
            EqPart& part = A[h];
            const EqPart& other = B[idx(k - 1 - h)];
            part.sum += other.sum;
            part.members.insert(part.members.end(), other.members.begin(), other.members.end());
        }
        B.clear();
        order(A);
        heap.push({A.front().sum - A.back().sum, std::min(a, b)});
        if (a > b) std::swap(states[idx(a)], states[idx(b)]);
    }
    std::vector<std::vector<int>> out;
    if (states.empty()) return std::vector<std::vector<int>>(idx(k));
    for (EqPart& part : states[idx(std::get<1>(heap.top()))]) {
        std::sort(part.members.begin(), part.members.end());
        out.push_back(std::move(part.members));
    }
    return out;
}

Layout karmarkar_karp_layout(const std::vector<std::int64_t>& length, int rows, int D, const BatchRules& rules) {
    if (rules.samples_per_cell == 0 && rules.samples_per_dp_slot == 0) return karmarkar_karp_layout(length, rows, D);
    if (rows < 1 || D < 1)
        throw std::invalid_argument("karmarkar_karp_layout: need rows >= 1 and D >= 1 (got " + std::to_string(rows) +
                                    ", " + std::to_string(D) + ")");
    std::vector<int> all(length.size());
    std::iota(all.begin(), all.end(), 0);
    if (rules.samples_per_cell > 0) {
        const std::vector<std::vector<int>> parts = equal_size_kk(length, all, rows * D);
        return Layout::from_cells(rows, D, parts);
    }
    const std::vector<std::vector<int>> slots = equal_size_kk(length, all, D);
    std::vector<std::vector<int>> cells(idx(rows) * D);
    for (int d = 0; d < D; ++d) {
        std::vector<std::int64_t> sub;
        for (int i : slots[d])
            sub.push_back(length[i]);
        const Layout col = karmarkar_karp_layout(sub, rows, 1);
        for (int r = 0; r < rows; ++r) {
            for (int j : col.cell(r))
                cells[idx(r) * D + d].push_back(slots[d][j]);
            std::sort(cells[idx(r) * D + d].begin(), cells[idx(r) * D + d].end());
        }
    }
    return Layout::from_cells(rows, D, cells);
}

} // namespace routepack
