// Diverse fixed-row population initialization (paper section 4.1.1, Algorithm 2; complexity paragraph
// after Algorithm 3). Qt-free, deterministic for a given (problem, ffd, budget), independent of the
// number of TBB threads.
//
// Chosen details the paper leaves open (all documented in core/plan/search/seeding.h as well):
// - RandomizedBestFit ranks F_i by (token occupancy descending, cell cardinality ascending, cell index
//   ascending) and samples rank j of the leading w with weight 2^-j (rank-decaying, like EDPAwarePair):
//   the plain best fit is kept half of the time, which keeps trials feasible at a tight R* while every
//   placement can still deviate.
// - EDPAwarePair examines candidate row-shards, not slots (every empty slot of a row-shard has the same
//   key); still-empty row-shards share one O(1) key; partially filled ones are bounded by
//   SeedingBudget::pair_candidates per cell.
// - The QualityDiversitySelect distance is d = 0.5 * d_co + 0.5 * d_sw / d_ref, where d_co is the O(n)
//   co-assignment distance (below) and d_sw the sliced-Wasserstein sketch distance normalized by
//   d_ref = max_x d_sw(x, winner).
#include "core/plan/search/seeding.h"
#include "core/util/grid.h"
#include "core/util/index.h"
#include "core/util/seeds.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <utility>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define ROUTEPACK_SEEDING_X86 1
#else
#define ROUTEPACK_SEEDING_X86 0
#endif

namespace routepack {

namespace {

/// Rank j in [0, m) with weight 2^-j (exact integer arithmetic: weights 2^(m-1-j) out of 2^m - 1).
/// One draw when m >= 2, none when m <= 1.
int decaying_pick(int m, Rng& rng) {
    if (m <= 1) return 0;
    m = std::min(m, 62);
    std::uint64_t r = rng.below((std::uint64_t{1} << m) - 1);
    std::uint64_t weight = std::uint64_t{1} << (m - 1);
    int j = 0;
    while (r >= weight) {
        r -= weight;
        weight >>= 1;
        ++j;
    }
    return j;
}

int clamp_width(int w) {
    return std::clamp(w, 1, 62);
}

void check_problem(const PackingProblem& p, const char* who) {
    if (p.n < 0 || p.L < 0 || p.P < 1 || p.D < 1 || static_cast<int>(p.length.size()) != p.n ||
        p.demand.size() != idx(p.n) * p.L * p.P || static_cast<int>(p.shards.size()) != p.G ||
        static_cast<int>(p.shard_of_slot.size()) != p.D)
        throw std::invalid_argument(std::string(who) +
                                    ": inconsistent packing problem (sizes of length, demand, shards)");
    for (const auto& slots : p.shards)
        if (slots.empty()) throw std::invalid_argument(std::string(who) + ": empty EDP shard");
}

void check_shape(const Layout& x, const PackingProblem& p, const char* who) {
    check_problem(p, who);
    if (x.dp_slots != p.D || !x.well_formed())
        throw std::invalid_argument(std::string(who) + ": layout is not R x D with D = " + std::to_string(p.D));
}

// Integer kernels (exact, so the ISA never changes a result): AVX2 when the CPU has it, else scalar.
// These streams over the [n][L][P] demand are the memory-bound part of seeding at scale.

void add_scalar(std::int64_t* __restrict w, const std::int64_t* __restrict q, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k)
        w[k] += q[k];
}
/// max_p (w[p] + c[p]) over one layer (P values).
std::int64_t peak_of_sum_scalar(const std::int64_t* w, const std::int64_t* c, int P) {
    std::int64_t m = std::numeric_limits<std::int64_t>::min();
    for (int k = 0; k < P; ++k)
        m = std::max(m, w[k] + c[k]);
    return m;
}

#if ROUTEPACK_SEEDING_X86
[[gnu::target("avx2")]] void add_avx2(std::int64_t* w, const std::int64_t* q, std::size_t n) {
    std::size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + k));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(w + k), _mm256_add_epi64(a, b));
    }
    for (; k < n; ++k)
        w[k] += q[k];
}
[[gnu::target("avx2")]] std::int64_t peak_of_sum_avx2(const std::int64_t* w, const std::int64_t* c, int P) {
    std::int64_t m = std::numeric_limits<std::int64_t>::min();
    int k = 0;
    if (P >= 4) {
        __m256i v = _mm256_set1_epi64x(m);
        for (; k + 4 <= P; k += 4) {
            const __m256i s = _mm256_add_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k)),
                                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + k)));
            v = _mm256_blendv_epi8(v, s, _mm256_cmpgt_epi64(s, v));
        }
        alignas(32) std::int64_t t[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(t), v);
        m = std::max(std::max(t[0], t[1]), std::max(t[2], t[3]));
    }
    for (; k < P; ++k)
        m = std::max(m, w[k] + c[k]);
    return m;
}
const bool kAvx2 = __builtin_cpu_supports("avx2");
#endif

/// w[k] += q[k] for an int32 demand row q (PackingProblem::demand), widened to int64.
void add_demand_scalar(std::int64_t* __restrict w, const std::int32_t* __restrict q, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k)
        w[k] += q[k];
}
#if ROUTEPACK_SEEDING_X86
[[gnu::target("avx2")]] void add_demand_avx2(std::int64_t* w, const std::int32_t* q, std::size_t n) {
    std::size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k));
        const __m256i b = _mm256_cvtepi32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(w + k), _mm256_add_epi64(a, b));
    }
    for (; k < n; ++k)
        w[k] += q[k];
}
#endif
inline void add_into(std::int64_t* w, const std::int32_t* q, std::size_t n) {
#if ROUTEPACK_SEEDING_X86
    if (kAvx2) return add_demand_avx2(w, q, n);
#endif
    add_demand_scalar(w, q, n);
}

inline void add_into(std::int64_t* w, const std::int64_t* q, std::size_t n) {
#if ROUTEPACK_SEEDING_X86
    if (kAvx2) return add_avx2(w, q, n);
#endif
    add_scalar(w, q, n);
}
inline std::int64_t peak_of_sum(const std::int64_t* w, const std::int64_t* c, int P) {
#if ROUTEPACK_SEEDING_X86
    if (kAvx2) return peak_of_sum_avx2(w, c, P);
#endif
    return peak_of_sum_scalar(w, c, P);
}

/// Adds the rank demand of the samples of `cell` to `load` ([L][P], zeroed by the caller).
void add_cell_load(std::span<const int> cell, const PackingProblem& p, std::int64_t* load) {
    const std::size_t LP = idx(p.L) * p.P;
    for (int i : cell)
        add_into(load, p.q(i), LP);
}

// The same kernels on int32 loads, for EDPAwarePair when every sum it forms fits (narrow_loads_fit):
// half the bytes per cell load and twice the lanes per instruction.
void add32_scalar(std::int32_t* __restrict w, const std::int32_t* __restrict q, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k)
        w[k] += q[k];
}

std::int32_t peak_of_sum32_scalar(const std::int32_t* w, const std::int32_t* c, int P) {
    std::int32_t m = std::numeric_limits<std::int32_t>::min();
    for (int k = 0; k < P; ++k)
        m = std::max(m, w[k] + c[k]);
    return m;
}

#if ROUTEPACK_SEEDING_X86
[[gnu::target("avx2")]] void add32_avx2(std::int32_t* w, const std::int32_t* q, std::size_t n) {
    std::size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + k));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(w + k), _mm256_add_epi32(a, b));
    }
    for (; k < n; ++k)
        w[k] += q[k];
}

[[gnu::target("avx2")]] std::int32_t peak_of_sum32_avx2(const std::int32_t* w, const std::int32_t* c, int P) {
    std::int32_t m = std::numeric_limits<std::int32_t>::min();
    int k = 0;
    if (P >= 8) {
        __m256i v = _mm256_set1_epi32(m);
        for (; k + 8 <= P; k += 8)
            v = _mm256_max_epi32(v, _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k)),
                                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + k))));
        alignas(32) std::int32_t t[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(t), v);
        for (std::int32_t x : t)
            m = std::max(m, x);
    }
    for (; k < P; ++k)
        m = std::max(m, w[k] + c[k]);
    return m;
}
#endif

/// max_k v[k] and the first k attaining it (n >= 1); exact, so the ISA never changes a result.
template <class V> std::pair<V, int> arg_max_scalar(const V* v, int n) {
    const int a = static_cast<int>(std::max_element(v, v + n) - v);
    return {v[a], a};
}

#if ROUTEPACK_SEEDING_X86
[[gnu::target("avx2")]] std::pair<std::int32_t, int> arg_max32_avx2(const std::int32_t* v, int n) {
    if (n < 8) return arg_max_scalar(v, n);
    __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v));
    int k = 8;
    for (; k + 8 <= n; k += 8)
        m = _mm256_max_epi32(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + k)));
    alignas(32) std::int32_t t[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(t), m);
    std::int32_t best = t[0];
    for (std::int32_t x : t)
        best = std::max(best, x);
    for (; k < n; ++k)
        best = std::max(best, v[k]);
    const __m256i b = _mm256_set1_epi32(best);
    k = 0;
    for (; k + 8 <= n; k += 8) {
        const int mask = _mm256_movemask_ps(
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + k)), b)));
        if (mask) return {best, k + __builtin_ctz(static_cast<unsigned>(mask))};
    }
    while (v[k] != best)
        ++k;
    return {best, k};
}
#endif

inline std::pair<std::int32_t, int> arg_max(const std::int32_t* v, int n) {
#if ROUTEPACK_SEEDING_X86
    if (kAvx2) return arg_max32_avx2(v, n);
#endif
    return arg_max_scalar(v, n);
}

inline std::pair<std::int64_t, int> arg_max(const std::int64_t* v, int n) {
    return arg_max_scalar(v, n);
}

inline void add_into(std::int32_t* w, const std::int32_t* q, std::size_t n) {
#if ROUTEPACK_SEEDING_X86
    if (kAvx2) return add32_avx2(w, q, n);
#endif
    add32_scalar(w, q, n);
}

inline std::int64_t peak_of_sum(const std::int32_t* w, const std::int32_t* c, int P) {
#if ROUTEPACK_SEEDING_X86
    if (kAvx2) return peak_of_sum32_avx2(w, c, P);
#endif
    return peak_of_sum32_scalar(w, c, P);
}

/// Whether every rank load EDPAwarePair forms (a sum of q[i][l][p] over any set of samples, plus one
/// more cell) fits int32: sum_i max_{l,p} q[i][l][p] < 2^31. One pass over the demand; integer
/// reduction, so exact whatever the split.
bool narrow_loads_fit(const PackingProblem& p) {
    const std::size_t LP = idx(p.L) * p.P;
    if (LP == 0) return true;
    const std::int64_t bound = tbb::parallel_reduce(
        tbb::blocked_range<int>(0, p.n, 64), std::int64_t{0},
        [&](const tbb::blocked_range<int>& range, std::int64_t acc) {
            for (int i = range.begin(); i < range.end(); ++i)
                acc += arg_max(p.q(i), static_cast<int>(LP)).first;
            return acc;
        },
        [](std::int64_t a, std::int64_t b) { return a + b; });
    return bound < std::int64_t{std::numeric_limits<std::int32_t>::max()};
}

} // namespace

// ---------------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------------
// WindowShuffle: a window buffer holding the first min(w, remaining) remaining items in order; O(n w).

std::vector<int> window_shuffle(const std::vector<int>& order, int w, Rng& rng) {
    if (w <= 1 || order.size() <= 1) return order;
    const std::size_t width = idx(w);
    std::vector<int> out;
    out.reserve(order.size());
    std::vector<int> window;
    window.reserve(width);
    std::size_t next = 0;
    while (next < order.size() && window.size() < width)
        window.push_back(order[next++]);
    while (!window.empty()) {
        const std::size_t j = idx(rng.below(window.size()));
        out.push_back(window[j]);
        window.erase(window.begin() + static_cast<std::ptrdiff_t>(j));
        if (next < order.size()) window.push_back(order[next++]);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------------
// EDPAwarePair.

namespace {

/// Cell loads are cached across the two passes of EDPAwarePair when they take at most this many bytes
/// (else they are recomputed: one more streaming pass over the demand of the samples).
#ifndef ROUTEPACK_SEEDING_CELL_CACHE_BYTES
#define ROUTEPACK_SEEDING_CELL_CACHE_BYTES (std::size_t{64} << 20)
#endif
constexpr std::size_t kCellLoadCacheBytes = ROUTEPACK_SEEDING_CELL_CACHE_BYTES;

/// What one EDPAwarePair run reports besides the layout (each filled when requested).
struct PairOutputs {
    Grid<std::int64_t>* row_peak = nullptr;        ///< sum_g max_p W[r][g][l][p], [R][L] (sketch input)
    std::vector<std::int64_t>* peak_sum = nullptr; ///< sum_l max_p W[r][g][l][p], [R][G] (score input)
};

template <class V> class CellPairing {
public:
    using i64 = std::int64_t;

    CellPairing(const Layout& cells, const PackingProblem& p, int w, Rng& rng, int max_candidates,
                const PairOutputs& outputs, std::vector<V>* buffer)
        : cells_(cells), p_(p), rng_(rng), outputs_(outputs), D_(p.D), G_(p.G), L_(p.L), P_(p.P), rows_(cells.rows),
          K_(rows_ * D_), RS_(rows_ * G_), w_(clamp_width(w)), max_candidates_(std::max(1, max_candidates)),
          LP_(idx(L_) * idx(P_)), cache_(idx(K_) * LP_ * sizeof(V) <= kCellLoadCacheBytes),
          cached_(buffer ? *buffer : own_), scratch_(LP_), filled_(idx(RS_), 0), buffer_of_(idx(RS_), -1),
          partial_pos_(idx(RS_), -1), cpeak_(idx(L_)), carg_(idx(L_)), position_(idx(K_), -1) {}

    /// Pairs every cell in processing order, then lays the cells out by the slot each took.
    Layout run() {
        const std::vector<int> order = load_cells();
        for (int r = 0; r < rows_; ++r)
            for (int g = 0; g < G_; ++g)
                empty_first_.insert(r * D_ + p_.shards[idx(g)].front());
        best_.reserve(idx(w_) + 1);
        ranked_.reserve(idx(max_candidates_));
        if (outputs_.row_peak) outputs_.row_peak->assign(rows_, L_, 0);
        if (outputs_.peak_sum) outputs_.peak_sum->assign(idx(RS_), 0);
        for (int c : order) {
            const V* load = cell_load(c);
            i64 csum = 0, cmax = 0;
            for (std::size_t l = 0; l < cpeak_.size(); ++l) {
                const auto [m, a] = arg_max(load + l * P_, P_);
                carg_[l] = a;
                cpeak_[l] = m;
                csum += m;
                cmax = std::max<i64>(cmax, m);
            }
            best_.clear();
            // Still-empty row-shards: key (csum, cmax, first slot); only the w lowest slots can rank.
            int taken = 0;
            for (auto it = empty_first_.begin(); it != empty_first_.end() && taken < w_; ++it, ++taken) {
                const int k = *it;
                offer(Cand{csum, cmax, k, (k / D_) * G_ + p_.shard_of_slot[idx(k % D_)]});
            }
            rank_partial(load, sample_partial());
            scan_partial(load);
            place(best_[idx(decaying_pick(static_cast<int>(best_.size()), rng_))], c, load);
        }
        return assemble();
    }

private:
    /// A row-shard's key for the cell (lower is better): increase of sum_l peak, largest resulting
    /// layer peak, slot index taken.
    struct Cand {
        i64 inc, top;
        int k, rs;
        bool operator<(const Cand& o) const {
            if (inc != o.inc) return inc < o.inc;
            if (top != o.top) return top < o.top;
            return k < o.k;
        }
    };
    /// A partially filled row-shard: W [L][P], the per-layer peaks max_p W[l][p] and the first p
    /// attaining each.
    struct Open {
        std::vector<V> W;
        std::vector<i64> peak;
        std::vector<int> arg;
    };
    /// A candidate open row-shard (partial_[j]) with its lower bound on the increase.
    struct Ranked {
        i64 lb;
        int j;
        bool operator<(const Ranked& o) const { return lb != o.lb ? lb < o.lb : j < o.j; }
    };

    /// Checks the sample ids; fills the cell-load cache (when it fits) and returns the processing
    /// order: cells by routed-token peak sum_l max_p c[l][p] descending, then token sum descending,
    /// then index. The cache is the caller's buffer when given (reused across the trials one thread
    /// runs: no allocation, page faults or zeroing of K*L*P values per trial); each cell's part is
    /// zeroed right before its loads are summed into it.
    std::vector<int> load_cells() {
        std::vector<i64> cell_peak(idx(K_), 0), cell_tokens(idx(K_), 0);
        if (cache_ && cached_.size() < idx(K_) * LP_) cached_.resize(idx(K_) * LP_);
        for (int c = 0; c < K_; ++c) {
            for (int i : cells_.cell(c))
                if (i < 0 || i >= p_.n)
                    throw std::invalid_argument("edp_aware_pair: sample index " + std::to_string(i) + " outside 0.." +
                                                std::to_string(p_.n - 1));
            V* load = cache_ ? cached_.data() + idx(c) * LP_ : scratch_.data();
            std::fill(load, load + LP_, V{0});
            add_cell(load, c);
            i64 s = 0;
            for (std::size_t l = 0; l < idx(L_); ++l)
                s += arg_max(load + l * P_, P_).first;
            cell_peak[idx(c)] = s;
            for (int i : cells_.cell(c))
                cell_tokens[idx(c)] += p_.length[idx(i)];
        }
        std::vector<int> order(idx(K_));
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](int a, int b) {
            if (cell_peak[a] != cell_peak[b]) return cell_peak[a] > cell_peak[b];
            if (cell_tokens[a] != cell_tokens[b]) return cell_tokens[a] > cell_tokens[b];
            return a < b;
        });
        return order;
    }

    /// A cell's load: the sum of its samples' demand rows.
    void add_cell(V* load, int c) const {
        for (int i : cells_.cell(c))
            add_into(load, p_.q(i), LP_);
    }
    /// Cell c's load [L][P]: from the cache, else summed into the scratch buffer.
    const V* cell_load(int c) {
        if (cache_) return cached_.data() + idx(c) * LP_;
        std::fill(scratch_.begin(), scratch_.end(), 0);
        add_cell(scratch_.data(), c);
        return scratch_.data();
    }

    /// Keeps the w best candidates, sorted.
    void offer(const Cand& c) {
        if (static_cast<int>(best_.size()) == w_ && !(c < best_.back())) return;
        best_.insert(std::upper_bound(best_.begin(), best_.end(), c), c);
        if (static_cast<int>(best_.size()) > w_) best_.pop_back();
    }
    /// The w-th best increase so far (no bound while fewer than w are known).
    i64 bound_now() const {
        return static_cast<int>(best_.size()) == w_ ? best_.back().inc : std::numeric_limits<i64>::max();
    }

    /// Partially filled row-shards to examine: all of them, or a random subset of max_candidates
    /// moved to the front of partial_ (a partial Fisher-Yates shuffle). Returns their count.
    int sample_partial() {
        const int count = static_cast<int>(partial_.size());
        if (count <= max_candidates_) return count;
        for (int j = 0; j < max_candidates_; ++j) {
            const int pick = j + static_cast<int>(rng_.below(static_cast<std::uint64_t>(count - j)));
            std::swap(partial_[idx(j)], partial_[idx(pick)]);
            partial_pos_[idx(partial_[idx(j)])] = j;
            partial_pos_[idx(partial_[idx(pick)])] = pick;
        }
        return max_candidates_;
    }

    /// Per-layer lower bound on the increase of layer l's peak when the cell (`load`) joins open
    /// row-shard o: max_p (W + c) - max W >= c[argmax W] (it reads only the cell's own load, not W).
    i64 layer_bound(const V* load, const Open& o, std::size_t l) const { return load[l * P_ + idx(o.arg[l])]; }

    /// ranked_: the first `examine` open row-shards by ascending lower bound sum_l layer_bound.
    void rank_partial(const V* load, int examine) {
        ranked_.clear();
        for (int j = 0; j < examine; ++j) {
            const Open& o = open_of(partial_[idx(j)]);
            i64 lb = 0;
            for (std::size_t l = 0; l < idx(L_); ++l)
                lb += layer_bound(load, o, l);
            ranked_.push_back(Ranked{lb, j});
        }
        std::sort(ranked_.begin(), ranked_.end());
    }

    /// Offers the ranked open row-shards whose exact key can still beat the w-th best: a candidate
    /// whose bound exceeds it ends the scan (every later one is strictly worse), and a layer scan
    /// stops once the running increase plus the bound of the layers left exceeds it.
    void scan_partial(const V* load) {
        const auto L = idx(L_);
        for (const Ranked& cand : ranked_) {
            const i64 bound = bound_now();
            if (cand.lb > bound) break;
            const int rs = partial_[idx(cand.j)];
            const int r = rs / G_, g = rs % G_;
            const int k = r * D_ + p_.shards[idx(g)][idx(filled_[idx(rs)])];
            const Open& o = open_of(rs);
            i64 inc = 0, top = 0, rest = cand.lb; // rest: the bound of the layers not yet scanned
            bool pruned = false;
            for (std::size_t l = 0; l < L; ++l) {
                // The bound meets the upper bound max c when the cell peaks on W's peak rank too.
                const i64 lb = layer_bound(load, o, l);
                const i64 m = lb == cpeak_[l] ? o.peak[l] + lb
                                              : std::max<i64>(0, peak_of_sum(o.W.data() + l * P_, load + l * P_, P_));
                inc += m - o.peak[l];
                rest -= lb;
                top = std::max(top, m);
                if (inc + rest > bound) {
                    pruned = true;
                    break;
                }
            }
            if (!pruned) offer(Cand{inc, top, k, rs});
        }
    }

    /// Puts cell c into the chosen slot: a row-shard's first cell opens it (or closes it at once when
    /// its shard has one slot), a later one adds its load; the last closes it.
    void place(const Cand& chosen, int c, const V* load) {
        const int rs = chosen.rs;
        const int size_g = static_cast<int>(p_.shards[idx(rs % G_)].size());
        position_[idx(chosen.k)] = c;
        const int before = filled_[idx(rs)]++;
        if (before == 0) {
            empty_first_.erase(chosen.k);
            if (size_g == 1)
                close_row_shard(rs, cpeak_);
            else
                open_row_shard(rs, load);
            return;
        }
        Open& o = open_of(rs);
        for (std::size_t l = 0; l < idx(L_); ++l) {
            V* Wl = o.W.data() + l * P_;
            add_into(Wl, load + l * P_, idx(P_));
            const auto [m, a] = arg_max(Wl, P_);
            o.arg[l] = a;
            o.peak[l] = std::max<i64>(0, m);
        }
        if (before + 1 == size_g) { // full: record its peaks, recycle the buffer
            close_row_shard(rs, o.peak);
            free_pool_.push_back(buffer_of_[idx(rs)]);
            buffer_of_[idx(rs)] = -1;
            remove_partial(rs);
        }
    }

    /// Row-shard rs takes its first cell (`load`): an Open buffer from the pool, and a place in partial_.
    void open_row_shard(int rs, const V* load) {
        int buf;
        if (!free_pool_.empty()) {
            buf = free_pool_.back();
            free_pool_.pop_back();
        } else {
            buf = static_cast<int>(pool_.size());
            pool_.push_back(Open{std::vector<V>(LP_), std::vector<i64>(idx(L_)), std::vector<int>(idx(L_))});
        }
        Open& o = pool_[idx(buf)];
        std::copy(load, load + LP_, o.W.begin());
        o.peak = cpeak_;
        o.arg = carg_;
        buffer_of_[idx(rs)] = buf;
        partial_pos_[idx(rs)] = static_cast<int>(partial_.size());
        partial_.push_back(rs);
    }

    Open& open_of(int rs) { return pool_[idx(buffer_of_[idx(rs)])]; }

    void remove_partial(int rs) {
        const int pos = partial_pos_[idx(rs)];
        const int last = partial_.back();
        partial_[idx(pos)] = last;
        partial_pos_[idx(last)] = pos;
        partial_.pop_back();
        partial_pos_[idx(rs)] = -1;
    }

    /// A full row-shard's peaks [L] into the requested outputs.
    void close_row_shard(int rs, const std::vector<i64>& peak) {
        const int r = rs / G_, g = rs % G_;
        if (outputs_.row_peak) {
            const std::span<i64> out = outputs_.row_peak->row(r);
            for (std::size_t l = 0; l < peak.size(); ++l)
                out[l] += peak[l];
        }
        if (outputs_.peak_sum) {
            i64 sum = 0;
            for (const i64 v : peak)
                sum += v;
            (*outputs_.peak_sum)[idx(r) * G_ + g] = sum;
        }
    }

    /// The layout: slot k holds the samples of the input cell placed there.
    Layout assemble() const {
        Layout x;
        x.rows = rows_;
        x.dp_slots = D_;
        x.samples.reserve(cells_.samples.size());
        x.offsets.reserve(idx(K_) + 1);
        for (const int c : position_) {
            const std::span<const int> cell = cells_.cell(c);
            x.samples.insert(x.samples.end(), cell.begin(), cell.end());
            x.offsets.push_back(static_cast<int>(x.samples.size()));
        }
        return x;
    }

    const Layout& cells_;
    const PackingProblem& p_;
    Rng& rng_;
    const PairOutputs& outputs_;
    const int D_, G_, L_, P_, rows_, K_, RS_, w_, max_candidates_;
    const std::size_t LP_;
    const bool cache_; // cell loads cached across the two passes
    std::vector<V> own_;
    std::vector<V>& cached_;
    std::vector<V> scratch_;
    // Row-shard rs = r*G + g. Empty row-shards are kept ordered by their first slot index
    // r*D + D_g[0]; partially filled ones carry an Open buffer from the pool.
    std::vector<int> filled_;
    std::set<int> empty_first_;
    std::vector<Open> pool_;
    std::vector<int> free_pool_;
    std::vector<int> buffer_of_;
    std::vector<int> partial_; // open, non-empty row-shards
    std::vector<int> partial_pos_;
    std::vector<Cand> best_; // sorted, size <= w
    std::vector<i64> cpeak_; // [L] the current cell's peaks
    std::vector<int> carg_;  // [L] and their EP ranks
    std::vector<Ranked> ranked_;
    std::vector<int> position_; // slot k -> input cell
};

/// EDPAwarePair on loads of type V (int32 when narrow_loads_fit, else int64; the integers, hence
/// the result, are the same). The candidates of a cell are the w best row-shards by the insertion
/// key (increase, top, slot). A partially filled row-shard's increase has the lower bound
/// sum_l c[l][argmax_p W[l][p]] (each layer's peak grows at least by what the cell adds on W's peak
/// rank) and the upper bound sum_l max_p c[l][p]; candidates are examined in ascending lower-bound
/// order and skipped once the bound exceeds the w-th best increase, the exact O(P) scan of a layer
/// is skipped when its two bounds meet (then max_p (W + c) = max W + max c), and a scan stops once
/// the running increase plus the bound of the layers left exceeds the w-th best. A skipped
/// row-shard's key is strictly worse than the w-th best, so the w best (a top-w of a total order)
/// are exactly those of an exhaustive scan.
template <class V>
Layout pair_cells_t(const Layout& cells, const PackingProblem& p, int w, Rng& rng, int max_candidates,
                    const PairOutputs& outputs, std::vector<V>* buffer) {
    return CellPairing<V>(cells, p, w, rng, max_candidates, outputs, buffer).run();
}

/// EDPAwarePair (see edp_aware_pair); `narrow` = narrow_loads_fit(p) selects int32 loads.
Layout pair_cells(const Layout& cells, const PackingProblem& p, int w, Rng& rng, int max_candidates, bool narrow,
                  const PairOutputs& outputs, std::vector<std::int32_t>* buffer32 = nullptr,
                  std::vector<std::int64_t>* buffer64 = nullptr) {
    if (cells.rows < 1 || cells.dp_slots != p.D || !cells.well_formed())
        throw std::invalid_argument(
            "edp_aware_pair: expected a well-formed layout of at least 1 row and D = " + std::to_string(p.D) +
            " DP slots, got " + std::to_string(cells.rows) + " x " + std::to_string(cells.dp_slots));
    check_problem(p, "edp_aware_pair");
    return narrow ? pair_cells_t<std::int32_t>(cells, p, w, rng, max_candidates, outputs, buffer32)
                  : pair_cells_t<std::int64_t>(cells, p, w, rng, max_candidates, outputs, buffer64);
}

} // namespace

Layout edp_aware_pair(const Layout& cells, const PackingProblem& p, int w, Rng& rng, int max_candidates) {
    check_problem(p, "edp_aware_pair");
    return pair_cells(cells, p, w, rng, max_candidates, narrow_loads_fit(p), PairOutputs{});
}

// ---------------------------------------------------------------------------------------------------
// Canonicalize.

std::vector<int> canonical_signature(const Layout& x, const PackingProblem& p) {
    check_shape(x, p, "canonical_signature");
    const int D = x.dp_slots;
    std::vector<int> sorted(x.samples); // every cell's ids sorted in place
    for (int k = 0; k < x.cell_count(); ++k)
        std::sort(sorted.begin() + x.offsets[idx(k)], sorted.begin() + x.offsets[idx(k) + 1]);
    auto sorted_cell = [&](int k) {
        return std::span<const int>(sorted).subspan(idx(x.offsets[idx(k)]), idx(x.cell_size(k)));
    };
    std::vector<std::vector<int>> row_code(idx(x.rows));
    std::vector<std::span<const int>> group;
    for (int r = 0; r < x.rows; ++r) {
        auto& code = row_code[idx(r)];
        for (const auto& slots : p.shards) {
            group.clear();
            for (int d : slots)
                group.push_back(sorted_cell(r * D + d));
            std::sort(group.begin(), group.end(), [](std::span<const int> a, std::span<const int> b) {
                return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
            });
            for (const auto c : group) {
                code.insert(code.end(), c.begin(), c.end());
                code.push_back(-1); // end of cell
            }
            code.push_back(-2); // end of shard
        }
    }
    std::sort(row_code.begin(), row_code.end());
    std::vector<int> out{x.rows, D};
    for (const auto& code : row_code) {
        out.insert(out.end(), code.begin(), code.end());
        out.push_back(-3); // end of row
    }
    return out;
}

// ---------------------------------------------------------------------------------------------------
// Sliced-Wasserstein sketch.

namespace {

/// sum_i sum_p q[i][l][p] per layer, [L] (tokens; a problem constant, one pass over the demand).
/// Integer sums, so the parallel reduction is exact and independent of the split.
std::vector<std::int64_t> layer_totals(const PackingProblem& p) {
    using Acc = std::vector<std::int64_t>;
    const std::size_t LP = idx(p.L) * p.P;
    Acc per_rank = tbb::parallel_reduce(
        tbb::blocked_range<int>(0, p.n, 64), Acc(LP, 0),
        [&](const tbb::blocked_range<int>& range, Acc acc) {
            for (int i = range.begin(); i < range.end(); ++i)
                add_into(acc.data(), p.q(i), LP);
            return acc;
        },
        [](Acc a, const Acc& b) {
            for (std::size_t k = 0; k < a.size(); ++k)
                a[k] += b[k];
            return a;
        });
    std::vector<std::int64_t> total(idx(p.L), 0);
    for (int l = 0; l < p.L; ++l)
        for (int e = 0; e < p.P; ++e)
            total[idx(l)] += per_rank[idx(l) * p.P + e];
    return total;
}

/// sum_g max_p W[r][g][l][p] per row and layer, [R][L] (tokens; one pass over the demand).
Grid<std::int64_t> row_peaks(const Layout& x, const PackingProblem& p) {
    const int D = x.dp_slots, L = p.L, P = p.P;
    Grid<std::int64_t> out(x.rows, L, 0);
    Grid<std::int64_t> W(L, P); // one row-shard's rank loads [L][P]
    for (int r = 0; r < x.rows; ++r)
        for (const auto& slots : p.shards) {
            W.fill(0);
            for (int d : slots)
                add_cell_load(x.cell(r * D + d), p, W.data());
            for (int l = 0; l < L; ++l)
                out(r, l) += *std::max_element(W.row(l).begin(), W.row(l).end());
        }
    return out;
}

/// Row features H(x) [R][F], F = 3 + L, each about 1 on a balanced layout (dimensionless):
///   f0 = sum_{i in row} t_i / (sum_i t_i / R)                         (token moment 1)
///   f1 = sum_{i in row} t_i^2 / (sum_i t_i^2 / R)                     (token moment 2, the beta term)
///   f2 = sum_g max_{d in D_g} T[r][d] / (G * sum_i t_i / (R D))       (shard-max cell load, the A proxy)
///   f_{3+l} = sum_g max_p W[r][g][l][p] / (sum_i sum_p q[i][l][p] / (R P)) / sqrt(L)   (layer-l EDP peak)
/// The 1/sqrt(L) keeps the L expert columns from swamping the three token columns in a random
/// projection. `row_peak` [R][L] and `layer_total` [L] as from row_peaks / layer_totals.
Grid<double> row_features(const Layout& x, const PackingProblem& p, const Grid<std::int64_t>& row_peak,
                          const std::vector<std::int64_t>& layer_total) {
    const int R = x.rows, D = x.dp_slots, G = p.G, L = p.L, P = p.P;
    const int F = 3 + L;
    double tsum = 0, t2sum = 0;
    for (std::int64_t t : p.length) {
        tsum += static_cast<double>(t);
        t2sum += static_cast<double>(t) * static_cast<double>(t);
    }
    const double rows = std::max(R, 1);
    const double t_ref = tsum / rows, t2_ref = t2sum / rows, a_ref = G * tsum / (rows * D);
    const double layer_scale = L > 0 ? 1.0 / std::sqrt(static_cast<double>(L)) : 0.0;
    Grid<double> H(R, F, 0.0);
    for (int r = 0; r < R; ++r) {
        const std::span<double> h = H.row(r);
        std::int64_t row_t = 0, row_t2 = 0, amax_sum = 0;
        for (const auto& slots : p.shards) {
            std::int64_t amax = 0;
            for (int d : slots) {
                std::int64_t ct = 0;
                for (int i : x.cell(r * D + d)) {
                    const std::int64_t t = p.length[idx(i)];
                    ct += t;
                    row_t2 += t * t;
                }
                row_t += ct;
                amax = std::max(amax, ct);
            }
            amax_sum += amax;
        }
        h[0] = t_ref > 0 ? static_cast<double>(row_t) / t_ref : 0.0;
        h[1] = t2_ref > 0 ? static_cast<double>(row_t2) / t2_ref : 0.0;
        h[2] = a_ref > 0 ? static_cast<double>(amax_sum) / a_ref : 0.0;
        for (int l = 0; l < L; ++l) {
            const double ref = static_cast<double>(layer_total[idx(l)]) / (rows * P);
            h[3 + l] = ref > 0 ? static_cast<double>(row_peak(r, l)) / ref * layer_scale : 0.0;
        }
    }
    return H;
}

/// Fixed projections u_k in R^F: Gaussian components (Box-Muller) from a fixed-seed Rng, unit norm.
/// Independent of the budget seed, so sketches of different runs are comparable. [q][F].
Grid<double> projections(int q, int F) {
    Rng rng(seeds::kSketchProjections);
    Grid<double> u(q, F);
    constexpr double two_pi = 6.283185307179586476925286766559;
    for (int k = 0; k < q; ++k) {
        const std::span<double> uk = u.row(k);
        double norm2 = 0;
        for (int f = 0; f < F; ++f) {
            const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
            uk[f] = std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2);
            norm2 += uk[f] * uk[f];
        }
        const double inv = norm2 > 0 ? 1.0 / std::sqrt(norm2) : 0.0;
        for (int f = 0; f < F; ++f)
            uk[f] *= inv;
    }
    return u;
}

/// phi_k = sort(H u_k), [q][R].
Sketch sketch_from(const Layout& x, const PackingProblem& p, const Grid<std::int64_t>& row_peak,
                   const std::vector<std::int64_t>& layer_total, int q) {
    q = std::max(q, 0);
    const int R = x.rows, F = 3 + p.L;
    const Grid<double> H = row_features(x, p, row_peak, layer_total);
    const Grid<double> u = projections(q, F);
    Sketch s;
    s.phi.resize(idx(q) * R);
    for (int k = 0; k < q; ++k) {
        double* phi = s.phi.data() + idx(k) * R;
        const std::span<const double> uk = u.row(k);
        for (int r = 0; r < R; ++r) {
            const std::span<const double> h = H.row(r);
            double v = 0;
            for (int f = 0; f < F; ++f)
                v += h[f] * uk[f];
            phi[r] = v;
        }
        std::sort(phi, phi + R);
    }
    return s;
}

} // namespace

Sketch sketch_layout(const Layout& x, const PackingProblem& p, int projections) {
    const int q = projections;
    check_shape(x, p, "sketch_layout");
    return sketch_from(x, p, row_peaks(x, p), layer_totals(p), q);
}

double sketch_distance(const Sketch& a, const Sketch& b, int projections) {
    const int q = projections;
    if (q <= 0 || a.phi.size() != b.phi.size() || a.phi.size() % idx(q) != 0)
        return std::numeric_limits<double>::infinity();
    const std::size_t R = a.phi.size() / idx(q);
    if (R == 0) return 0.0;
    double s = 0;
    for (std::size_t j = 0; j < a.phi.size(); ++j)
        s += std::abs(a.phi[j] - b.phi[j]);
    return s / (static_cast<double>(q) * static_cast<double>(R));
}

// ---------------------------------------------------------------------------------------------------
// Algorithm 2.

namespace {

/// One CanonicalMap entry with the cached data of QualityDiversitySelect.
struct Candidate {
    Layout layout;
    Score score;
    std::string origin;
    std::vector<int> signature;
    Grid<std::int64_t> row_peak; ///< sum_g max_p W[r][g][l][p], [R][L] (sketch input)
    Sketch sketch;
    /// Cyclic successor of each sample among its cell-mates / row-shard-mates in ascending id order
    /// (itself when alone), [n] each: the O(n) co-assignment profile.
    std::vector<int> succ_cell, succ_rowshard;
};

void cyclic_successors(std::vector<int>& ids, std::vector<int>& succ) {
    std::sort(ids.begin(), ids.end());
    for (std::size_t j = 0; j < ids.size(); ++j)
        succ[idx(ids[j])] = ids[(j + 1) % ids.size()];
}

void co_assignment_profile(Candidate& c, const PackingProblem& p) {
    const Layout& x = c.layout;
    c.succ_cell.assign(idx(p.n), -1);
    c.succ_rowshard.assign(idx(p.n), -1);
    std::vector<int> ids;
    for (int k = 0; k < x.cell_count(); ++k) {
        const std::span<const int> cell = x.cell(k);
        ids.assign(cell.begin(), cell.end());
        cyclic_successors(ids, c.succ_cell);
    }
    for (int r = 0; r < x.rows; ++r)
        for (const auto& slots : p.shards) {
            ids.clear();
            for (int d : slots) {
                const std::span<const int> cell = x.cell(r * x.dp_slots + d);
                ids.insert(ids.end(), cell.begin(), cell.end());
            }
            cyclic_successors(ids, c.succ_rowshard);
        }
}

/// Co-assignment distance in [0, 1]: mean over the cell and row-shard levels of the fraction of samples
/// whose successor among their mates differs. A sample moved between cells changes O(1) successors, so
/// the measure grows smoothly with the number of moves. O(n).
double co_assignment_distance(const Candidate& a, const Candidate& b) {
    const std::size_t n = a.succ_cell.size();
    if (n == 0) return 0.0;
    std::size_t cell = 0, rs = 0;
    for (std::size_t i = 0; i < n; ++i) {
        cell += a.succ_cell[i] != b.succ_cell[i];
        rs += a.succ_rowshard[i] != b.succ_rowshard[i];
    }
    return 0.5 * (static_cast<double>(cell) + static_cast<double>(rs)) / static_cast<double>(n);
}

/// RandomizedBestFit over the K = rows*D cells seeded with sigma[0..K-1] (Algorithm 2 lines 5-8): the
/// rows x D layout of those cells, each holding its samples in placement order. nullopt when some
/// sample fits nowhere (F_i empty).
std::optional<Layout> randomized_best_fit(const std::vector<int>& sigma, const PackingProblem& p, int rows, int w,
                                          Rng& rng) {
    const int K = rows * p.D;
    // Ascending (tokens, -cardinality, -index) is the reverse of the rank order (occupancy descending,
    // cardinality ascending, index ascending): the leading feasible cells sit just below the first
    // cell with tokens > C - t_i.
    struct Key {
        std::int64_t tokens;
        int neg_card, neg_index;
        bool operator<(const Key& o) const {
            if (tokens != o.tokens) return tokens < o.tokens;
            if (neg_card != o.neg_card) return neg_card < o.neg_card;
            return neg_index < o.neg_index;
        }
    };
    std::vector<int> cell_of(sigma.size()); // cell of sigma[h]
    std::vector<std::int64_t> tokens(idx(K));
    std::set<Key> ranked;
    for (int k = 0; k < K; ++k) {
        const int i = sigma[idx(k)];
        cell_of[idx(k)] = k;
        tokens[idx(k)] = p.length[idx(i)];
        ranked.insert(Key{tokens[idx(k)], -1, -k});
    }
    // The batch rules' counts: a cell at its limit, and every cell of a DP slot at its quota, leaves
    // the ranked set (with every count free nothing ever leaves it).
    const int limit = p.rules.cell_limit(), quota = p.rules.samples_per_dp_slot;
    std::vector<int> slot_count(quota > 0 ? idx(p.D) : 0, rows);
    std::vector<int> card(idx(K), 1);
    auto key_of = [&](int k) { return Key{tokens[idx(k)], -card[idx(k)], -k}; };
    auto close_full = [&](int k) {
        if (limit > 0 && card[idx(k)] >= limit) ranked.erase(key_of(k));
        if (quota > 0 && slot_count[idx(k % p.D)] >= quota)
            for (int r = 0; r < rows; ++r)
                ranked.erase(key_of(r * p.D + k % p.D));
    };
    if (limit > 0 || quota > 0)
        for (int k = 0; k < K; ++k)
            close_full(k);
    std::vector<Key> lead;
    lead.reserve(idx(w));
    for (std::size_t h = idx(K); h < sigma.size(); ++h) {
        const int i = sigma[h];
        const std::int64_t t = p.length[idx(i)];
        auto it =
            ranked.lower_bound(Key{p.C - t + 1, std::numeric_limits<int>::min(), std::numeric_limits<int>::min()});
        lead.clear();
        while (it != ranked.begin() && static_cast<int>(lead.size()) < w)
            lead.push_back(*--it);
        if (lead.empty()) return std::nullopt;
        const Key chosen = lead[idx(decaying_pick(static_cast<int>(lead.size()), rng))];
        const int k = -chosen.neg_index;
        ranked.erase(chosen);
        cell_of[h] = k;
        tokens[idx(k)] += t;
        ranked.insert(Key{tokens[idx(k)], chosen.neg_card - 1, chosen.neg_index});
        if (limit > 0 || quota > 0) {
            ++card[idx(k)];
            if (quota > 0) ++slot_count[idx(k % p.D)];
            close_full(k);
        }
    }
    return Layout::from_assignment(rows, p.D, sigma, cell_of);
}

/// Whether a paired layout keeps the batch rules' counts (always, without a count rule).
bool keeps_counts(const Layout& x, const PackingProblem& p) {
    return !p.rules.counts() || validate_layout(x, p).empty();
}

/// A trial's layout after EDPAwarePair (`paired`, from the RandomizedBestFit `cells`): kept when
/// valid; under samples_per_dp_slot, when the pairing moved a cell to another DP slot and broke a
/// slot's count, the unpaired cells instead (their peak sums and row peaks cleared, to be formed
/// again). False when neither is valid (the trial is aborted).
bool keep_trial_layout(Layout& paired, const Layout& cells, const PackingProblem& p,
                       std::vector<std::int64_t>& peak_sum, Grid<std::int64_t>& row_peak) {
    if (validate_layout(paired, p).empty()) return true;
    if (p.rules.samples_per_dp_slot == 0 || !validate_layout(cells, p).empty()) return false;
    paired = cells;
    peak_sum.clear();
    row_peak = {};
    return true;
}

} // namespace

std::vector<SeedMember> diverse_population(const PackingProblem& p, const Layout& ffd, const SeedingBudget& b,
                                           const StopToken& stop) {
    check_problem(p, "diverse_population");
    if (const std::string why = validate_layout(ffd, p); !why.empty())
        throw std::invalid_argument("diverse_population: the FFD seed is not a valid layout: " + why);
    check_shape(ffd, p, "diverse_population");
    const int R = ffd.rows;
    const int w = clamp_width(b.choice_width);
    const int q = std::max(1, b.projections), pair_cap = std::max(1, b.pair_candidates);
    const int pop = std::max(1, b.population);

    // Tasks, run in parallel, each on its own RNG stream: 0 = the FFD seed itself, 1 = EDPAwarePair of
    // its cells (stream 0), 1 + t = trial t = 1..M-2 (stream t). Results land in task order, so nothing
    // below depends on scheduling.
    std::vector<int> order(idx(p.n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return p.length[idx(a)] > p.length[idx(c)]; });
    const int trials = std::max(0, b.candidates - 2);
    const int tasks = b.candidates >= 2 ? 2 + trials : 1;
    std::vector<std::optional<Candidate>> raw(idx(tasks));
    const bool narrow = tasks > 1 && narrow_loads_fit(p);
    // Cell-load caches, one per worker thread (a trial runs on one thread from start to end: no
    // nested parallelism inside it), freed when seeding ends.
    tbb::enumerable_thread_specific<std::vector<std::int32_t>> buffer32;
    tbb::enumerable_thread_specific<std::vector<std::int64_t>> buffer64;
    tbb::parallel_for(0, tasks, [&](int j) {
        Candidate c;
        std::vector<std::int64_t> peak_sum; // [R][G], from the pairing's own rank loads
        if (j == 0) {
            c.layout = ffd; // row_peak filled lazily, only when selection needs sketches
            c.origin = "ffd";
        } else {
            if (stop.stop_requested()) return;
            const int trial = j - 1;
            Rng rng(seeds::seeding_trial(b.seed, static_cast<std::uint64_t>(trial)));
            const PairOutputs outputs{&c.row_peak, &peak_sum};
            if (trial == 0) {
                c.layout = pair_cells(ffd, p, w, rng, pair_cap, narrow, outputs, &buffer32.local(), &buffer64.local());
                c.origin = "ffd+pair";
            } else {
                const std::vector<int> sigma = window_shuffle(order, w, rng);
                const std::optional<Layout> cells = randomized_best_fit(sigma, p, R, w, rng);
                if (!cells) return; // abort trial: a sample fits nowhere
                c.layout =
                    pair_cells(*cells, p, w, rng, pair_cap, narrow, outputs, &buffer32.local(), &buffer64.local());
                if (!keep_trial_layout(c.layout, *cells, p, peak_sum, c.row_peak)) return; // abort: not in X_R*
                c.origin = "shuffle#" + std::to_string(trial);
            }
        }
        c.score = j == 0 || peak_sum.empty() || p.has_invocation_term() ? score_layout(c.layout, p)
                                                                        : score_from_peak_sums(c.layout, p, peak_sum);
        c.signature = canonical_signature(c.layout, p);
        raw[idx(j)] = std::move(c);
    });
    // x_paired = minScore{x_length, EDPAwarePair(cells(x_length))} (Algorithm 2 line 2).
    // The pairing may move cells between DP slots: kept only when it keeps the batch rules' counts.
    if (tasks > 1 && raw[1] && (!(raw[1]->score < raw[0]->score) || !keeps_counts(raw[1]->layout, p))) raw[1].reset();

    // Canonicalize + CanonicalMap: lowest exact score per signature, ties to the earlier candidate.
    std::map<std::vector<int>, int> slot_of_signature;
    std::vector<Candidate> cand;
    for (auto& c : raw) {
        if (!c) continue;
        auto [it, inserted] = slot_of_signature.try_emplace(c->signature, static_cast<int>(cand.size()));
        if (inserted) {
            cand.push_back(std::move(*c));
        } else if (c->score < cand[idx(it->second)].score) {
            cand[idx(it->second)] = std::move(*c);
        }
    }
    raw.clear();
    slot_of_signature.clear();
    const int M = static_cast<int>(cand.size());

    // QualityDiversitySelect.
    int winner = 0;
    for (int j = 1; j < M; ++j)
        if (cand[idx(j)].score < cand[idx(winner)].score) winner = j;
    std::vector<int> selected{winner};
    const int distinct = std::min(pop, M);
    if (distinct > 1) {
        const std::vector<std::int64_t> totals = layer_totals(p);
        tbb::parallel_for(0, M, [&](int j) {
            Candidate& c = cand[idx(j)];
            if (c.row_peak.size() != idx(c.layout.rows) * p.L) c.row_peak = row_peaks(c.layout, p);
            c.sketch = sketch_from(c.layout, p, c.row_peak, totals, q);
            co_assignment_profile(c, p);
        });
        const double s0_best = cand[idx(winner)].score.max_u;
        const double gap_norm = std::max(std::abs(s0_best), 1e-12);
        std::vector<double> delta0(idx(M)), sw_w(idx(M)), co_w(idx(M));
        const Candidate& cw = cand[idx(winner)];
        tbb::parallel_for(0, M, [&](int j) {
            const Candidate& c = cand[idx(j)];
            delta0[idx(j)] = (c.score.max_u - s0_best) / gap_norm;
            sw_w[idx(j)] = sketch_distance(c.sketch, cw.sketch, q);
            co_w[idx(j)] = co_assignment_distance(c, cw);
        });
        double d_ref = 0;
        for (double v : sw_w)
            if (std::isfinite(v)) d_ref = std::max(d_ref, v);
        auto combine = [&](double co, double sw) {
            return 0.5 * co + (d_ref > 0 && std::isfinite(sw) ? 0.5 * sw / d_ref : 0.0);
        };
        std::vector<double> min_d(idx(M));
        std::vector<char> taken(idx(M), 0);
        taken[idx(winner)] = 1;
        for (int j = 0; j < M; ++j)
            min_d[idx(j)] = combine(co_w[idx(j)], sw_w[idx(j)]);
        while (static_cast<int>(selected.size()) < distinct) {
            int pick = -1;
            double pick_value = 0;
            for (int j = 0; j < M; ++j) {
                if (taken[idx(j)]) continue;
                const double v = min_d[idx(j)] - b.eta * delta0[idx(j)];
                if (pick < 0 || v > pick_value || (v == pick_value && cand[idx(j)].score < cand[idx(pick)].score)) {
                    pick = j;
                    pick_value = v;
                }
            }
            taken[idx(pick)] = 1;
            selected.push_back(pick);
            if (static_cast<int>(selected.size()) == distinct) break;
            const Candidate& cp = cand[idx(pick)];
            tbb::parallel_for(0, M, [&](int j) {
                if (taken[idx(j)]) return;
                const Candidate& c = cand[idx(j)];
                const double d = combine(co_assignment_distance(c, cp), sketch_distance(c.sketch, cp.sketch, q));
                min_d[idx(j)] = std::min(min_d[idx(j)], d);
            });
        }
    }

    // Members; P_pop filled cyclically with the selected distinct seeds (Algorithm 2 line 14).
    std::vector<SeedMember> members;
    members.reserve(idx(pop));
    for (int j = 0; j < pop; ++j) {
        const Candidate& c = cand[idx(selected[idx(j) % selected.size()])];
        members.push_back(SeedMember{c.layout, c.score, c.origin});
    }
    return members;
}

} // namespace routepack
