// The exact score (paper eqs. 11-15, DESIGN.md "The cost model, written out") and its incremental
// form for swap / relocation moves (paper section 4.1.2, "Incremental Score").
//
// Exactness contract. Everything that is summed is kept in 64-bit integers: per cell the token sum
// sum t_i and the squared-length sum sum t_i^2, per row-shard the rank loads W[r][g][l][p] and
// sum_l max_p W. Doubles are formed from those integers by the few functions in the "formulas"
// block below, which both the full path (cost_breakdown / score_layout) and IncrementalScorer call,
// with the same operands in the same order:
//   cell_stage_costs  c[k][s] = alpha_s * T + beta_s * Q, T = tok / C, Q = sq / C^2   (eq. 11-12)
//   attention_cost    A = sum_s (max_{d in D_g} c[(r,d)][s]), stages in order       (eq. 12)
//   expert_cost       E = peak_sum / C                                               (eq. 14)
//   joint_cost        J = A + E
//   fold_rows         U_g = sum_r J[r][g], a left fold over r = 0..R-1 in order         (eq. 15)
//   column_max        max_r J[r][g]
//   finish_score      (max_g U, sum_g U in g order, max_g max_r J)                   (eq. 15)
// cell_stage_costs is the only place with a product feeding a sum; the core libraries are compiled
// with -ffp-contract=off (core/CMakeLists.txt), so no caller can contract it into an FMA, inlined or
// not. The integer kernels (core/plan/score/score_kernels.h: AVX-512 / AVX2 / scalar) are exact, so the ISA
// does not change any bit either.
#include "core/plan/score/score.h"

#include "core/plan/score/score_kernels.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(__x86_64__)
#define ROUTEPACK_SCORE_X86 1
#else
#define ROUTEPACK_SCORE_X86 0
#endif

namespace routepack {
namespace {

using i64 = std::int64_t;
using q32 = std::int32_t; // rank demand q (PackingProblem::demand); widened to int64 before any sum

// ------------------------------------------------------------------------------------------------
// Formulas shared by the full and the incremental path.
// ------------------------------------------------------------------------------------------------

/// Per-cell per-stage attention cost, eqs. 11-12: out[s] = alpha_s * T + beta_s * Q with
/// T = tokens / C and Q = squares / C^2 (C^2 formed in double: exact while C < 9.4e7).
/// `tokens` = sum t_i, `squares` = sum t_i^2 of the cell (integers, tokens and tokens^2).
void cell_stage_costs(i64 tokens, i64 squares, double c, const double* alpha, const double* beta, int S, double* out) {
    const double T = static_cast<double>(tokens) / c;
    const double Q = static_cast<double>(squares) / (c * c);
    for (int s = 0; s < S; ++s) {
        const double lin = alpha[s] * T;
        const double quad = beta[s] * Q;
        out[s] = lin + quad;
    }
}

/// Eq. 12 for row-shard (r, g): A = sum over stages s (in order) of max over d in D_g of
/// cost[(r*D + d)*S + s]. `row_cost` points at row r's first cell cost ([D][S]); `slots` = D_g.
inline double attention_cost(const double* row_cost, int S, const int* slots, int n_slots) {
    double a = 0.0;
    for (int s = 0; s < S; ++s) {
        double m = row_cost[idx(slots[0]) * S + s];
        for (int x = 1; x < n_slots; ++x) {
            const double v = row_cost[idx(slots[x]) * S + s];
            if (v > m) m = v;
        }
        a += m;
    }
    return a;
}

/// Eq. 14: E = (sum_l max_p W[l][p]) / C, from the integer peak sum (tokens).
inline double expert_cost(i64 peak_sum, double c) {
    return static_cast<double>(peak_sum) / c;
}

/// J = A + E.
inline double joint_cost(double a, double e) {
    return a + e;
}

/// The communication term K = w * (X / C) from the integer copy count X of a row-shard.
inline double comm_term(i64 sent, double c, double w) {
    return w * (static_cast<double>(sent) / c);
}

/// U_g = sum_{r=0..R-1} J[r][g] as a left fold in row order, resumed at row r0 from `start` (the
/// fold of rows 0..r0-1, i.e. 0.0 when r0 = 0). `col` is shard g's column J[.][g] (contiguous, [R]);
/// prefix[r] receives the partial fold after row r when non-null. Returns the fold of all R rows.
/// Resuming at r0 performs exactly the additions a fold from 0 performs after row r0 - 1, so
/// IncrementalScorer (which refolds from the first changed row) and the full path agree bitwise.
inline double fold_rows(const double* col, int r0, int R, double start, double* prefix) {
    double sum = start;
    for (int r = r0; r < R; ++r) {
        sum += col[r];
        if (prefix) prefix[r] = sum;
    }
    return sum;
}

/// max_r J[r][g] over shard g's column ([R], R >= 1); J >= +0, so the order of comparison does not
/// change the result (four independent chains).
inline double column_max(const double* col, int R) {
    double m0 = col[0], m1 = col[0], m2 = col[0], m3 = col[0];
    int r = 1;
    for (; r + 4 <= R; r += 4) {
        m0 = col[r] > m0 ? col[r] : m0;
        m1 = col[r + 1] > m1 ? col[r + 1] : m1;
        m2 = col[r + 2] > m2 ? col[r + 2] : m2;
        m3 = col[r + 3] > m3 ? col[r + 3] : m3;
    }
    for (; r < R; ++r)
        m0 = col[r] > m0 ? col[r] : m0;
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    return m2 > m0 ? m2 : m0;
}

/// Eq. 15 from the per-shard totals: (max_g U, sum_g U in g order, max_g max_j[g]).
inline Score finish_score(const double* U, const double* max_j, int G) {
    Score sc;
    if (G <= 0) return sc;
    double mu = U[0], su = 0.0, mj = max_j[0];
    for (int g = 0; g < G; ++g) {
        su += U[g];
        if (U[g] > mu) mu = U[g];
        if (max_j[g] > mj) mj = max_j[g];
    }
    sc.max_u = mu;
    sc.sum_u = su;
    sc.max_j = mj;
    return sc;
}

// ------------------------------------------------------------------------------------------------
// Integer rank-load kernels (core/plan/score/score_kernels.h: one file per ISA, chosen by CPU support).
// ------------------------------------------------------------------------------------------------

using score_kernels::Kernels;

bool cpu_has(const char* isa) {
#if ROUTEPACK_SCORE_X86
    __builtin_cpu_init();
    if (std::string(isa) == "avx512") return __builtin_cpu_supports("avx512f");
    if (std::string(isa) == "avx2") return __builtin_cpu_supports("avx2");
#endif
    return std::string(isa) == "scalar";
}

const Kernels* best_kernels() {
#if ROUTEPACK_SCORE_X86
    if (cpu_has("avx512")) return &score_kernels::kAvx512;
    if (cpu_has("avx2")) return &score_kernels::kAvx2;
#endif
    return &score_kernels::kScalar;
}

std::atomic<const Kernels*>& kernel_choice() {
    static std::atomic<const Kernels*> choice{best_kernels()};
    return choice;
}

const Kernels* kernels() {
    return kernel_choice().load(std::memory_order_relaxed);
}

// ------------------------------------------------------------------------------------------------
// Shape checks and the full path.
// ------------------------------------------------------------------------------------------------

/// The shape errors of every scoring entry point; `demand` false for the entry points that take the
/// peak sums instead (a problem from make_packing_shape has no demand).
void check_shapes(const Layout& x, const PackingProblem& p, bool demand = true) {
    auto fail = [](const std::string& what) { throw std::invalid_argument("score: " + what); };
    if (p.n < 0 || p.L < 0 || p.P < 1 || p.D < 1 || p.G < 1 || p.C < 1) fail("problem dimensions out of range");
    if (p.length.size() != idx(p.n)) fail("length has the wrong size");
    if (demand && p.demand.size() != idx(p.n) * p.L * p.P) fail("demand is not [n][L][P]");
    if (p.shard_of_slot.size() != idx(p.D)) fail("shard_of_slot is not [D]");
    if (p.shards.size() != idx(p.G)) fail("shards is not [G]");
    std::size_t listed = 0;
    for (int g = 0; g < p.G; ++g) {
        listed += p.shards[g].size();
        if (p.shards[g].empty()) fail("EDP shard " + std::to_string(g) + " has no DP slot");
        for (int d : p.shards[g])
            if (d < 0 || d >= p.D || p.shard_of_slot[d] != g)
                fail("shards and shard_of_slot disagree at DP slot " + std::to_string(d));
    }
    if (listed != idx(p.D)) fail("EDP shards do not partition the DP slots");
    if (x.dp_slots != p.D)
        fail("layout has " + std::to_string(x.dp_slots) + " DP slots, problem " + std::to_string(p.D));
    if (!x.well_formed()) fail("layout is not rows x dp_slots cells");
    for (int i : x.samples)
        if (i < 0 || i >= p.n) fail("sample index " + std::to_string(i) + " out of range");
}

/// Eqs. 11-15 from the integer rank-load peak sums: `peak_sum(r, g)` returns sum_l max_p W[r][g][l][p]
/// (tokens), called once per row-shard in (r, g) order; the cell sums come from the layout. Fills
/// `out` (all but its per-layer peaks) when non-null. O(n + R*G*peak_sum + R*D*S).
template <class PeakSum>
Score evaluate_from_peaks(const Layout& x, const PackingProblem& p, CostBreakdown* out, PeakSum&& peak_sum) {
    const int R = x.rows, D = p.D, G = p.G;
    const int S = static_cast<int>(p.stages.size());
    const double c = static_cast<double>(p.C);
    std::vector<double> alpha(S), beta(S);
    for (int s = 0; s < S; ++s) {
        alpha[s] = p.stages[s].alpha;
        beta[s] = p.stages[s].beta;
    }
    // Per-cell integer sums (eq. 11) and stage costs.
    const std::size_t K = idx(x.cell_count());
    Grid<double> cost(K, S); // [K][S] cell stage costs
    for (std::size_t kc = 0; kc < K; ++kc) {
        i64 tok = 0, sq = 0;
        for (int i : x.cell(static_cast<int>(kc))) {
            const i64 t = p.length[i];
            tok += t;
            sq += t * t;
        }
        cell_stage_costs(tok, sq, c, alpha.data(), beta.data(), S, cost.row(kc).data());
    }
    const std::size_t RG = idx(R) * G;
    Grid<double> Jc(G, R); // [G][R]: shard columns, as IncrementalScorer keeps them
    const bool comm = p.has_comm_term();
    std::vector<i64> sent(comm ? RG : 0); // [R][G] inter-node copies X
    if (comm)
        for (int r = 0; r < R; ++r)
            for (int d = 0; d < D; ++d)
                for (int i : x.cell(r * D + d))
                    sent[idx(r) * G + p.shard_of_slot[d]] += p.sent_from(i, d);
    if (out) {
        out->rows = R;
        out->shards = G;
        out->A.assign(RG, 0.0);
        out->E.assign(RG, 0.0);
        out->J.assign(RG, 0.0);
        out->K.assign(comm ? RG : 0, 0.0);
    }
    for (int r = 0; r < R; ++r) {
        for (int g = 0; g < G; ++g) {
            const std::size_t rg = idx(r) * G + g;
            const i64 ps = peak_sum(r, g);
            const double a =
                attention_cost(cost.row(r * D).data(), S, p.shards[g].data(), static_cast<int>(p.shards[g].size()));
            const double e = expert_cost(ps, c);
            const double kc = comm ? comm_term(sent[rg], c, p.comm_weight) : 0.0;
            const double j = comm ? joint_cost(a, e) + kc : joint_cost(a, e);
            Jc(g, r) = j;
            if (out) {
                out->A[rg] = a;
                out->E[rg] = e;
                out->J[rg] = j;
                if (comm) out->K[rg] = kc;
            }
        }
    }
    std::vector<double> U(G, 0.0), mj(G, 0.0);
    for (int g = 0; g < G; ++g) {
        const double* col = Jc.row(g).data();
        U[g] = fold_rows(col, 0, R, 0.0, nullptr);
        mj[g] = R > 0 ? column_max(col, R) : 0.0;
    }
    const Score sc = finish_score(U.data(), mj.data(), G);
    if (out) {
        out->U = std::move(U);
        out->score = sc;
    }
    return sc;
}

/// Full evaluation, O(n*L*P + R*G*L*P + R*D*S). Fills `out` (with per-layer peaks) when non-null.
Score full_evaluate(const Layout& x, const PackingProblem& p, CostBreakdown* out) {
    check_shapes(x, p);
    const Kernels* k = kernels();
    const int D = p.D, G = p.G, L = p.L, P = p.P;
    const std::size_t LP = idx(L) * P;
    if (out) out->peak.assign(idx(x.rows) * G * L, 0);
    std::vector<i64> w(LP);
    InvocationLoads inv(p);
    const bool with_inv = p.has_invocation_term();
    return evaluate_from_peaks(x, p, out, [&](int r, int g) {
        // W[r][g] (eq. 13) accumulated sample by sample (with the invocation term W' = W + a K), then
        // sum_l max_p (eq. 14).
        std::fill(w.begin(), w.end(), 0);
        for (int d : p.shards[g])
            for (int i : x.cell(r * D + d)) {
                k->add(w.data(), p.q(i), LP);
                if (with_inv) inv.add(i);
            }
        if (with_inv) inv.flush(w.data());
        const std::size_t rg = idx(r) * G + g;
        return k->peaks(w.data(), L, P, out ? out->peak.data() + rg * L : nullptr);
    });
}

} // namespace

InvocationLoads::InvocationLoads(const PackingProblem& p) : p_(&p) {
    if (!p.has_invocation_term()) return;
    H_ = p.E / p.P;
    seen_.assign(idx(p.L) * idx(p.E), 0);
}

void InvocationLoads::add(int i) {
    if (seen_.empty()) return;
    const PackingProblem& p = *p_;
    for (auto o = idx(p.slot_offsets[idx(i)]), end = idx(p.slot_offsets[idx(i) + 1]); o < end; ++o) {
        const std::int32_t s = p.slot_index[o];
        if (seen_[idx(s)]) continue;
        seen_[idx(s)] = 1;
        touched_.push_back(s);
    }
}

void InvocationLoads::flush(std::int64_t* w) {
    const PackingProblem& p = *p_;
    for (const std::int32_t s : touched_) {
        w[idx(s / p.E) * p.P + idx((s % p.E) / H_)] += p.invocation_tokens;
        seen_[idx(s)] = 0;
    }
    touched_.clear();
}

const char* score_kernel_isa() {
    return kernels()->name;
}

bool set_score_kernel_isa(const char* isa) {
    const std::string s = isa ? isa : "";
    const Kernels* k = nullptr;
    if (s == "auto")
        k = best_kernels();
    else if (s == "scalar")
        k = &score_kernels::kScalar;
#if ROUTEPACK_SCORE_X86
    else if (s == "avx2" && cpu_has("avx2"))
        k = &score_kernels::kAvx2;
    else if (s == "avx512" && cpu_has("avx512"))
        k = &score_kernels::kAvx512;
#endif
    if (!k) return false;
    kernel_choice().store(k, std::memory_order_relaxed);
    return true;
}

CostBreakdown cost_breakdown(const Layout& x, const PackingProblem& p) {
    CostBreakdown b;
    full_evaluate(x, p, &b);
    return b;
}

Score score_layout(const Layout& x, const PackingProblem& p) {
    return full_evaluate(x, p, nullptr);
}

namespace {

void check_peak_sums(const Layout& x, const PackingProblem& p, std::span<const std::int64_t> peak_sum) {
    check_shapes(x, p, false);
    const std::size_t RG = idx(x.rows) * p.G;
    if (peak_sum.size() != RG)
        throw std::invalid_argument("score: peak sums hold " + std::to_string(peak_sum.size()) +
                                    " values, expected rows x G = " + std::to_string(RG));
}

} // namespace

Score score_from_peak_sums(const Layout& x, const PackingProblem& p, std::span<const std::int64_t> peak_sum) {
    check_peak_sums(x, p, peak_sum);
    return evaluate_from_peaks(x, p, nullptr, [&](int r, int g) { return peak_sum[idx(r) * p.G + g]; });
}

CostBreakdown cost_breakdown_from_peak_sums(const Layout& x, const PackingProblem& p,
                                            std::span<const std::int64_t> peak_sum) {
    check_peak_sums(x, p, peak_sum);
    CostBreakdown b;
    evaluate_from_peaks(x, p, &b, [&](int r, int g) { return peak_sum[idx(r) * p.G + g]; });
    return b;
}

// ------------------------------------------------------------------------------------------------
// IncrementalScorer
// ------------------------------------------------------------------------------------------------

Layout layout_from_placement(const SamplePlacement& x, int rows, int dp_slots) {
    if (rows < 0 || dp_slots < 1 || x.cell.size() != x.pos.size())
        throw std::invalid_argument("layout_from_placement: bad shape");
    Layout out;
    out.rows = rows;
    out.dp_slots = dp_slots;
    const std::size_t K = idx(rows) * dp_slots;
    out.offsets.assign(K + 1, 0);
    for (std::size_t i = 0; i < x.cell.size(); ++i) {
        if (x.cell[i] < 0 || idx(x.cell[i]) >= K)
            throw std::invalid_argument("layout_from_placement: sample " + std::to_string(i) + " has no valid cell");
        ++out.offsets[idx(x.cell[i]) + 1];
    }
    for (std::size_t k = 0; k < K; ++k)
        out.offsets[k + 1] += out.offsets[k];
    out.samples.assign(x.cell.size(), -1);
    for (std::size_t i = 0; i < x.cell.size(); ++i) {
        const std::size_t k = idx(x.cell[i]);
        const int pos = x.pos[i];
        if (pos < 0 || pos >= out.offsets[k + 1] - out.offsets[k])
            throw std::invalid_argument("layout_from_placement: sample " + std::to_string(i) +
                                        " has no valid position");
        int& slot = out.samples[idx(out.offsets[k]) + idx(pos)];
        if (slot != -1)
            throw std::invalid_argument("layout_from_placement: sample " + std::to_string(i) +
                                        " has no valid position");
        slot = static_cast<int>(i);
    }
    return out;
}

Layout IncrementalScorer::layout() const {
    Layout out;
    copy_layout_to(out);
    return out;
}

void IncrementalScorer::copy_layout_to(Layout& out) const {
    out.rows = R_;
    out.dp_slots = D_;
    const std::size_t K = idx(R_) * D_;
    out.offsets.resize(K + 1);
    out.offsets[0] = 0;
    for (std::size_t k = 0; k < K; ++k)
        out.offsets[k + 1] = out.offsets[k] + cell_size_[k];
    out.samples.resize(idx(out.offsets[K]));
    for (std::size_t k = 0; k < K; ++k) {
        const int* c = cells_.row(k).data();
        std::copy(c, c + cell_size_[k], out.samples.begin() + out.offsets[k]);
    }
}

void IncrementalScorer::copy_placement_to(SamplePlacement& out) const {
    out.cell = cell_of_;
    out.pos = pos_in_cell_;
}

IncrementalScorer::IncrementalScorer(const PackingProblem& p, const Layout& x) : p_(&p) {
    check_shapes(x, p);
    const Kernels* k = kernels();
    kernels_ = k;
    R_ = x.rows;
    G_ = p.G;
    D_ = p.D;
    L_ = p.L;
    P_ = p.P;
    S_ = static_cast<int>(p.stages.size());
    LP_ = idx(L_) * P_;
    c_ = static_cast<double>(p.C);
    slot_shard_ = p.shard_of_slot;
    shard_begin_.assign(1, 0);
    shard_slots_.clear();
    for (const auto& sh : p.shards) {
        shard_slots_.insert(shard_slots_.end(), sh.begin(), sh.end());
        shard_begin_.push_back(static_cast<int>(shard_slots_.size()));
    }
    alpha_.resize(S_);
    beta_.resize(S_);
    for (int s = 0; s < S_; ++s) {
        alpha_[s] = p.stages[s].alpha;
        beta_[s] = p.stages[s].beta;
    }
    undo_cost_.assign(2, S_, 0.0);
    undo_prefix_.assign(2, R_, 0.0);

    const std::size_t K = idx(x.cell_count());
    // Cell capacity: a cell within C holds at most m samples (the m shortest fit), and while every
    // move keeps the source non-empty a cell holds at most n - (non-empty cells) + 1.
    {
        std::vector<i64> sorted(p.length);
        std::sort(sorted.begin(), sorted.end());
        int m = 0;
        i64 sum = 0;
        while (m < p.n && sum + sorted[idx(m)] <= p.C)
            sum += sorted[idx(m++)];
        int nonempty = 0, largest = 0;
        for (int kc = 0; kc < x.cell_count(); ++kc) {
            nonempty += x.cell_size(kc) > 0;
            largest = std::max(largest, x.cell_size(kc));
        }
        cap_ = std::max({1, largest, std::min(m, p.n - nonempty + 1)});
    }
    cells_.assign(K, cap_, -1);
    cell_size_.assign(K, 0);
    cell_of_.assign(p.n, -1);
    pos_in_cell_.assign(p.n, -1);
    tokens_.assign(K, 0);
    squares_.assign(K, 0);
    cell_cost_.assign(K, S_, 0.0);
    for (std::size_t kc = 0; kc < K; ++kc) {
        const std::span<const int> cell = x.cell(static_cast<int>(kc));
        std::copy(cell.begin(), cell.end(), cells_.row(kc).begin());
        cell_size_[kc] = static_cast<int>(cell.size());
        for (std::size_t pos = 0; pos < cell.size(); ++pos) {
            const int i = cell[pos];
            if (cell_of_[i] != -1)
                throw std::invalid_argument("score: sample " + std::to_string(i) + " appears twice in the layout");
            cell_of_[i] = static_cast<int>(kc);
            pos_in_cell_[i] = static_cast<int>(pos);
            const i64 t = p.length[i];
            tokens_[kc] += t;
            squares_[kc] += t * t;
        }
        refresh_cell(static_cast<int>(kc));
    }
    const std::size_t RG = idx(R_) * G_;
    W_.assign(RG, LP_, 0);
    peak_sum_.assign(RG, 0);
    A_.assign(RG, 0.0);
    E_.assign(RG, 0.0);
    J_.assign(RG, 0.0);
    prefix_.assign(G_, R_, 0.0);
    comm_ = p.has_comm_term();
    sent_.assign(comm_ ? RG : 0, 0);
    for (int r = 0; r < R_; ++r) {
        for (int d = 0; d < D_; ++d) {
            i64* w = W_.row(row_shard(r, slot_shard_[d])).data();
            for (int i : x.cell(r * D_ + d)) {
                k->add(w, p.q(i), LP_);
                if (comm_) sent_[idx(row_shard(r, slot_shard_[d]))] += p.sent_from(i, d);
            }
        }
    }
    inv_ = p.has_invocation_term();
    if (inv_) {
        // X (tokens per expert slot and row-shard), then W' = W + a K.
        inv_E_ = p.E;
        inv_H_ = p.E / p.P;
        X_.assign(RG, idx(L_) * idx(inv_E_), 0);
        dA_.assign(LP_, 0);
        dB_.assign(LP_, 0);
        wt_.assign(LP_, 0);
        inv_stamp_.assign(idx(L_) * idx(inv_E_), 0);
        inv_count_.assign(idx(L_) * idx(inv_E_), 0);
        inv_stamp_now_ = 0;
        for (int r = 0; r < R_; ++r)
            for (int d = 0; d < D_; ++d) {
                i64* xr = X_.row(row_shard(r, slot_shard_[d])).data();
                for (int i : x.cell(r * D_ + d))
                    for (auto o = idx(p.slot_offsets[idx(i)]); o < idx(p.slot_offsets[idx(i) + 1]); ++o)
                        xr[idx(p.slot_index[o])] += p.slot_count[o];
            }
        for (std::size_t rs = 0; rs < RG; ++rs) {
            const i64* xr = X_.row(rs).data();
            i64* w = W_.row(rs).data();
            for (std::size_t s = 0; s < X_.cols(); ++s)
                if (xr[s] > 0) w[(s / idx(inv_E_)) * idx(P_) + (s % idx(inv_E_)) / idx(inv_H_)] += p.invocation_tokens;
        }
    }
    for (int g = 0; g < G_; ++g) {
        for (int r = 0; r < R_; ++r) {
            const int rs = row_shard(r, g);
            peak_sum_[rs] = k->peaks(W_.row(rs).data(), L_, P_, nullptr);
            E_[rs] = expert_cost(peak_sum_[rs], c_);
            refresh_attention(rs);
        }
    }
    U_.assign(G_, 0.0);
    max_j_.assign(G_, 0.0);
    for (int g = 0; g < G_; ++g)
        refresh_shard(g, 0);
    score_ = finish_score(U_.data(), max_j_.data(), G_);
}

/// Recomputes cell k's per-stage costs from its integer sums.
void IncrementalScorer::refresh_cell(int k) {
    cell_stage_costs(tokens_[k], squares_[k], c_, alpha_.data(), beta_.data(), S_, cell_cost_.row(k).data());
}

/// A and J of row-shard rs = g*R + r from the cached cell costs and E.
void IncrementalScorer::refresh_attention(int rs) {
    const int g = rs / R_, r = rs - g * R_;
    const int b = shard_begin_[g];
    A_[rs] = attention_cost(cell_cost_.row(r * D_).data(), S_, shard_slots_.data() + b, shard_begin_[g + 1] - b);
    J_[rs] = comm_ ? joint_cost(A_[rs], E_[rs]) + comm_term(sent_[idx(rs)], c_, p_->comm_weight)
                   : joint_cost(A_[rs], E_[rs]);
}

/// U_g refolded from row r0 on (rows before r0 unchanged, their partial fold is prefix_[g][r0-1])
/// and max_r J[r][g].
void IncrementalScorer::refresh_shard(int g, int r0) {
    if (R_ == 0) return;
    const std::size_t base = idx(g) * R_; // J[.][g]
    const double start = r0 > 0 ? prefix_(g, r0 - 1) : 0.0;
    U_[g] = fold_rows(J_.data() + base, r0, R_, start, prefix_.row(g).data());
    max_j_[g] = column_max(J_.data() + base, R_);
}

void IncrementalScorer::save_cell(int slot, int k) {
    last_.cell[slot] = k;
    last_.tokens[slot] = tokens_[k];
    last_.squares[slot] = squares_[k];
    std::ranges::copy(cell_cost_.row(k), undo_cost_.row(slot).begin());
}

void IncrementalScorer::save_row_shard(int slot, int rs) {
    last_.rs[slot] = rs;
    last_.A[slot] = A_[rs];
    last_.E[slot] = E_[rs];
    last_.J[slot] = J_[rs];
    last_.peak_sum[slot] = peak_sum_[rs];
    if (comm_) last_.sent[slot] = sent_[idx(rs)];
}

/// Saves shard g's U, max J and the prefix folds from row r0 on (the part refresh_shard rewrites).
void IncrementalScorer::save_shard(int slot, int g, int r0) {
    last_.g[slot] = g;
    last_.r0[slot] = r0;
    last_.U[slot] = U_[g];
    last_.max_j[slot] = max_j_[g];
    std::ranges::copy(prefix_.row(g).subspan(idx(r0)), undo_prefix_.row(slot).begin() + r0);
}

/// Records the undo state of a move between cells ka and kb, and returns their row-shards.
void IncrementalScorer::begin_move(int ka, int kb, int* rsa, int* rsb) {
    const int ra = ka / D_, rb = kb / D_;
    const int ga = slot_shard_[ka - ra * D_], gb = slot_shard_[kb - rb * D_];
    *rsa = row_shard(ra, ga);
    *rsb = row_shard(rb, gb);
    last_.score = score_;
    save_cell(0, ka);
    save_cell(1, kb);
    last_.nrs = *rsa == *rsb ? 1 : 2;
    save_row_shard(0, *rsa);
    if (*rsa != *rsb) save_row_shard(1, *rsb);
    if (ga == gb) {
        last_.ng = 1;
        save_shard(0, ga, std::min(ra, rb));
    } else {
        last_.ng = 2;
        save_shard(0, ga, ra);
        save_shard(1, gb, rb);
    }
}

/// U and max J of the affected shards (refold from the first changed row), then the score (O(G)).
void IncrementalScorer::finish_move() {
    for (int x = 0; x < last_.ng; ++x)
        refresh_shard(last_.g[x], last_.r0[x]);
    score_ = finish_score(U_.data(), max_j_.data(), G_);
}

/// The W' deltas of moving sample i from row-shard rsa to rsb (and j back, j >= 0 for a swap) into
/// dA_ and dB_, and their peak sums into peak_sum_: the demand's part -q_i + q_j (and its negative),
/// plus a for every expert slot whose tokens in the row-shard reach zero or leave it. A slot of i
/// alone leaves zero in A when i holds all of A's tokens there (X_A = c_i) and reaches it in B when
/// B had none; a slot of j alone the other way round; a slot of both stays active on both sides (each
/// side keeps the other sample's tokens), so i's pass marks its slots (inv_stamp_) and j's pass takes
/// back i's term on them. Two branch-light passes over the samples' expert lists.
void IncrementalScorer::inv_delta(int i, int j, int rsa, int rsb) {
    const PackingProblem& p = *p_;
    const q32* qi = p.q(i);
    const q32* qj = j >= 0 ? p.q(j) : nullptr;
    if (qj)
        for (std::size_t v = 0; v < LP_; ++v) {
            const i64 dv = i64{qj[v]} - i64{qi[v]};
            dA_[v] = dv;
            dB_[v] = -dv;
        }
    else
        for (std::size_t v = 0; v < LP_; ++v) {
            dA_[v] = -i64{qi[v]};
            dB_[v] = i64{qi[v]};
        }
    const i64* xa = X_.row(idx(rsa)).data();
    const i64* xb = X_.row(idx(rsb)).data();
    const i64 a = p.invocation_tokens;
    const std::int32_t* slot = p.slot_index.data();
    const std::int32_t* count = p.slot_count.data();
    const std::int32_t* rank = p.slot_rank.data();
    const std::uint64_t stamp = ++inv_stamp_now_;
    for (auto o = idx(p.slot_offsets[idx(i)]), e = idx(p.slot_offsets[idx(i) + 1]); o < e; ++o) {
        const std::int32_t s = slot[o];
        const std::size_t c = idx(rank[o]);
        if (qj) {
            inv_stamp_[idx(s)] = stamp;
            inv_count_[idx(s)] = count[o];
        }
        dA_[c] -= a * static_cast<i64>(xa[idx(s)] == count[o]);
        dB_[c] += a * static_cast<i64>(xb[idx(s)] == 0);
    }
    if (qj)
        for (auto o = idx(p.slot_offsets[idx(j)]), e = idx(p.slot_offsets[idx(j) + 1]); o < e; ++o) {
            const std::int32_t s = slot[o];
            const std::size_t c = idx(rank[o]);
            if (inv_stamp_[idx(s)] == stamp) {
                dA_[c] += a * static_cast<i64>(xa[idx(s)] == inv_count_[idx(s)]);
            } else {
                dA_[c] += a * static_cast<i64>(xa[idx(s)] == 0);
                dB_[c] -= a * static_cast<i64>(xb[idx(s)] == count[o]);
            }
        }
    const auto* k = static_cast<const Kernels*>(kernels_);
    for (int x = 0; x < 2; ++x) {
        const int rs = x == 0 ? rsa : rsb;
        const i64* w = W_.row(idx(rs)).data();
        const i64* dv = x == 0 ? dA_.data() : dB_.data();
        for (std::size_t v = 0; v < LP_; ++v)
            wt_[v] = w[v] + dv[v];
        peak_sum_[idx(rs)] = k->peaks(wt_.data(), L_, P_, nullptr);
    }
}

/// Writes the kept move's W' deltas and its samples' tokens per expert slot (X).
void IncrementalScorer::inv_commit() {
    const PackingProblem& p = *p_;
    const int rsa = last_.rs[0], rsb = last_.rs[1];
    i64* wa = W_.row(idx(rsa)).data();
    i64* wb = W_.row(idx(rsb)).data();
    for (std::size_t v = 0; v < LP_; ++v) {
        wa[v] += dA_[v];
        wb[v] += dB_[v];
    }
    i64* xa = X_.row(idx(rsa)).data();
    i64* xb = X_.row(idx(rsb)).data();
    const int i = last_.i, j = last_.kind == Undo::Swap ? last_.j : -1;
    for (auto o = idx(p.slot_offsets[idx(i)]); o < idx(p.slot_offsets[idx(i) + 1]); ++o) {
        xa[idx(p.slot_index[o])] -= p.slot_count[o];
        xb[idx(p.slot_index[o])] += p.slot_count[o];
    }
    if (j >= 0)
        for (auto o = idx(p.slot_offsets[idx(j)]); o < idx(p.slot_offsets[idx(j) + 1]); ++o) {
            xb[idx(p.slot_index[o])] -= p.slot_count[o];
            xa[idx(p.slot_index[o])] += p.slot_count[o];
        }
}

void IncrementalScorer::commit_pending() {
    if (!last_.w_pending) return;
    if (inv_) {
        inv_commit();
        last_.w_pending = false;
        return;
    }
    const auto* k = static_cast<const Kernels*>(kernels_);
    i64* wa = W_.row(last_.rs[0]).data();
    i64* wb = W_.row(last_.rs[1]).data();
    if (last_.kind == Undo::Swap)
        k->commit_swap(wa, wb, p_->q(last_.i), p_->q(last_.j), LP_);
    else
        k->commit_relocate(wa, wb, p_->q(last_.i), LP_);
    last_.w_pending = false;
}

bool IncrementalScorer::swap_feasible(int i, int j) const {
    const int ka = cell_of_[i], kb = cell_of_[j];
    if (ka == kb) return false;
    const i64 dt = p_->length[j] - p_->length[i];
    return p_->cell_fits(cell_size_[ka], tokens_[ka] + dt) && p_->cell_fits(cell_size_[kb], tokens_[kb] - dt);
}

bool IncrementalScorer::relocate_feasible(int i, int k) const {
    const int ka = cell_of_[i];
    if (k < 0 || idx(k) >= tokens_.size() || k == ka) return false;
    if (!p_->relocation_keeps_counts(ka % D_, cell_size_[ka], k % D_, cell_size_[k])) return false;
    return tokens_[k] + p_->length[i] <= p_->C;
}

const Score& IncrementalScorer::apply_swap(int i, int j) {
    commit_pending();
    const int ka = cell_of_[i], kb = cell_of_[j];
    if (ka == kb) {
        last_.kind = Undo::Noop;
        return score_;
    }
    last_.kind = Undo::Swap;
    last_.i = i;
    last_.j = j;
    last_.from = ka;
    last_.to = kb;
    int rsa, rsb;
    begin_move(ka, kb, &rsa, &rsb);

    // Layout: in-place exchange keeps every other sample's position.
    const int pi = pos_in_cell_[i], pj = pos_in_cell_[j];
    cell_data(ka)[pi] = j;
    cell_data(kb)[pj] = i;
    pos_in_cell_[i] = pj;
    pos_in_cell_[j] = pi;
    cell_of_[i] = kb;
    cell_of_[j] = ka;
    last_.pos_i = pi;

    // Cells (eq. 11): integer deltas of sum t and sum t^2.
    const i64 ti = p_->length[i], tj = p_->length[j];
    const i64 dt = tj - ti, dq = tj * tj - ti * ti;
    tokens_[ka] += dt;
    tokens_[kb] -= dt;
    squares_[ka] += dq;
    squares_[kb] -= dq;
    refresh_cell(ka);
    refresh_cell(kb);
    if (comm_) {
        const int da = ka % D_, db = kb % D_;
        sent_[idx(rsa)] += p_->sent_from(j, da) - p_->sent_from(i, da);
        sent_[idx(rsb)] += p_->sent_from(i, db) - p_->sent_from(j, db);
    }

    if (rsa != rsb) {
        // Expert term (eqs. 13-14): peaks of W_a + (q_j - q_i) and W_b - (q_j - q_i), read-only;
        // W itself is written by commit_pending() once the move is kept.
        const auto* k = static_cast<const Kernels*>(kernels_);
        if (inv_)
            inv_delta(i, j, rsa, rsb);
        else
            k->eval_swap(W_.row(rsa).data(), W_.row(rsb).data(), p_->q(i), p_->q(j), L_, P_, &peak_sum_[rsa],
                         &peak_sum_[rsb]);
        last_.w_pending = true;
        E_[rsa] = expert_cost(peak_sum_[rsa], c_);
        E_[rsb] = expert_cost(peak_sum_[rsb], c_);
        refresh_attention(rsb);
    }
    // Same row-shard: W, its peaks and E are unchanged; only attention moves.
    refresh_attention(rsa);
    finish_move();
    return score_;
}

const Score& IncrementalScorer::apply_relocate(int i, int k) {
    if (k != cell_of_[i] && cell_size_[k] == cap_) // checked before any state changes
        throw std::logic_error("IncrementalScorer: relocation of sample " + std::to_string(i) +
                               " into a full cell (the move is infeasible)");
    commit_pending();
    const int ka = cell_of_[i], kb = k;
    if (ka == kb) {
        last_.kind = Undo::Noop;
        return score_;
    }
    last_.kind = Undo::Relocate;
    last_.i = i;
    last_.j = -1;
    last_.from = ka;
    last_.to = kb;
    int rsa, rsb;
    begin_move(ka, kb, &rsa, &rsb);

    // Layout: O(1) removal by moving the source cell's last sample into i's place.
    int* src = cell_data(ka);
    const int pi = pos_in_cell_[i];
    const int last = src[--cell_size_[ka]];
    src[pi] = last;
    pos_in_cell_[last] = pi;
    pos_in_cell_[i] = cell_size_[kb];
    cell_data(kb)[cell_size_[kb]++] = i;
    cell_of_[i] = kb;
    last_.pos_i = pi;

    const i64 ti = p_->length[i];
    tokens_[ka] -= ti;
    tokens_[kb] += ti;
    squares_[ka] -= ti * ti;
    squares_[kb] += ti * ti;
    refresh_cell(ka);
    refresh_cell(kb);
    if (comm_) {
        sent_[idx(rsa)] -= p_->sent_from(i, ka % D_);
        sent_[idx(rsb)] += p_->sent_from(i, kb % D_);
    }

    if (rsa != rsb) {
        const auto* kt = static_cast<const Kernels*>(kernels_);
        if (inv_)
            inv_delta(i, -1, rsa, rsb);
        else
            kt->eval_relocate(W_.row(rsa).data(), W_.row(rsb).data(), p_->q(i), L_, P_, &peak_sum_[rsa],
                              &peak_sum_[rsb]);
        last_.w_pending = true;
        E_[rsa] = expert_cost(peak_sum_[rsa], c_);
        E_[rsb] = expert_cost(peak_sum_[rsb], c_);
        refresh_attention(rsb);
    }
    refresh_attention(rsa);
    finish_move();
    return score_;
}

void IncrementalScorer::undo() {
    if (last_.kind == Undo::None) return;
    if (last_.kind == Undo::Noop) {
        last_.kind = Undo::None;
        return;
    }
    const int i = last_.i, ka = last_.from, kb = last_.to;
    if (last_.kind == Undo::Swap) {
        const int j = last_.j;
        const int pi = pos_in_cell_[j], pj = pos_in_cell_[i]; // after the swap j sits at i's old place
        cell_data(ka)[pi] = i;
        cell_data(kb)[pj] = j;
        pos_in_cell_[i] = pi;
        pos_in_cell_[j] = pj;
        cell_of_[i] = ka;
        cell_of_[j] = kb;
    } else {
        // i is the last sample of kb; put it back at pos_i in ka, the displaced sample back at the end.
        --cell_size_[kb];
        int* src = cell_data(ka);
        const int pi = last_.pos_i;
        if (pi == cell_size_[ka]) {
            src[cell_size_[ka]++] = i;
        } else {
            const int moved = src[pi];
            pos_in_cell_[moved] = cell_size_[ka];
            src[cell_size_[ka]++] = moved;
            src[pi] = i;
        }
        pos_in_cell_[i] = pi;
        cell_of_[i] = ka;
    }
    for (int x = 0; x < 2; ++x) {
        const int kc = last_.cell[x];
        tokens_[kc] = last_.tokens[x];
        squares_[kc] = last_.squares[x];
        std::ranges::copy(undo_cost_.row(x), cell_cost_.row(kc).begin());
    }
    for (int x = 0; x < last_.nrs; ++x) {
        const int rs = last_.rs[x];
        A_[rs] = last_.A[x];
        E_[rs] = last_.E[x];
        J_[rs] = last_.J[x];
        peak_sum_[rs] = last_.peak_sum[x];
        if (comm_) sent_[idx(rs)] = last_.sent[x];
    }
    for (int x = 0; x < last_.ng; ++x) {
        const int g = last_.g[x], r0 = last_.r0[x];
        U_[g] = last_.U[x];
        max_j_[g] = last_.max_j[x];
        std::ranges::copy(undo_prefix_.row(x).subspan(idx(r0)), prefix_.row(g).begin() + r0);
    }
    score_ = last_.score;
    last_.w_pending = false; // W was never written for this move
    last_.kind = Undo::None;
}

} // namespace routepack
