// Iterated straggler search: cyclic first-improvement descent plus kicks (core/plan/search/polish.h).
//
// Determinism: replica r owns its scorer and an Rng seeded by (seed, 0, r) only; replicas write
// into slot r and the best is chosen serially in replica order, so the result is the same for
// every worker count (unless cancellation or the deadline stops the run).
#include "core/plan/search/polish.h"

#include "core/util/errors.h"
#include "core/util/grid.h"
#include "core/util/index.h"
#include "core/util/rng.h"
#include "core/util/seeds.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace routepack {

namespace {

/// Evaluations between two polls of the stop token.
constexpr std::int64_t kPollMask = 255;
/// Candidates ranked per work unit of a guided visit (a visit ranks about n of them).
constexpr int kCandidatesPerUnit = 1024;
/// Draws before a kick move gives up finding a straggler-shard sample with a feasible move.
constexpr int kKickTries = 64;

/// One replica's running counts.
struct Counts {
    std::int64_t evaluations = 0;
    std::int64_t improvements = 0;
    int kicks = 0, kicks_kept = 0;
    bool stopped = false;
};

/// Cyclic first-improvement descent on the straggler (polish.h, iterated_straggler_search): samples
/// visited in the cyclic order starting at `cursor`; a sample of the current straggler shard gets
/// every feasible relocation, then every feasible swap (partner ascending); the first strictly
/// better move is kept and the visit moves on. Returns true at a local optimum (n consecutive
/// visits without improvement), false when the budget ran out or the run was stopped.
bool cyclic_descent(IncrementalScorer& sc, std::int64_t budget, Counts& c, int& cursor, StopLatch& stop) {
    const PackingProblem& p = sc.problem();
    const int n = p.n, K = sc.cell_count(), D = p.D;
    int idle = 0; // consecutive visits without improvement
    auto out_of_work = [&] {
        if (c.evaluations >= budget) return true;
        if ((c.evaluations & kPollMask) == 0 && stop.poll()) {
            c.stopped = true;
            return true;
        }
        return false;
    };
    while (idle < n) {
        const int i = cursor;
        cursor = cursor + 1 == n ? 0 : cursor + 1;
        const int gs = sc.straggler_shard();
        const int from = sc.cell_of(i);
        if (p.shard_of_slot[idx(from % D)] != gs) {
            ++idle;
            continue;
        }
        const Score before = sc.score();
        bool improved = false;
        for (int k = 0; k < K && !improved; ++k) {
            if (k == from || !sc.relocate_feasible(i, k)) continue;
            if (out_of_work()) return false;
            ++c.evaluations;
            if (sc.apply_relocate(i, k) < before)
                improved = true;
            else
                sc.undo();
        }
        for (int j = 0; j < n && !improved; ++j) {
            if (sc.cell_of(j) == from || !sc.swap_feasible(i, j)) continue;
            if (out_of_work()) return false;
            ++c.evaluations;
            if (sc.apply_swap(i, j) < before)
                improved = true;
            else
                sc.undo();
        }
        if (improved) {
            ++c.improvements;
            idle = 0;
        } else {
            ++idle;
        }
    }
    return true;
}

/// Linearized move scores for the guided descent. Per row-shard rs = r*G + g it keeps the rank
/// loads W[rs][l][p] (eq. 13), the peak rank of every layer and, for every sample j, the demand j
/// puts on those peaks S[rs][j] = sum_l q[j][l][peak(rs, l)]. Removing i from rs then lowers E by
/// at most S[rs][i] / C and adding j raises it by at least S[rs][j] / C (the max over ranks is
/// convex), so J + these linear terms is an optimistic estimate of the new J; attention (eq. 12) is
/// computed from the cells' integer sums. Only kept moves change the state (O(n*L) per changed
/// row-shard).
///   S is a [R*G][n] table while it fits `table_bytes` and the size of the demands q[n][L][P] (1 MiB
/// at least) (dense: O(1) per look-up). The table grows as rows x samples, i.e. quadratically in the
/// window (rows grow with n), q linearly: above the limit S is not
/// stored and each value is formed from the peaks when asked (O(L); the straggler's row-shard's
/// whole column once per visit, cached until that row-shard changes). Both give the same integers,
/// so the descent's moves and result do not depend on the mode; memory is then O(R G L P + n).
class Guide {
public:
    Guide(const IncrementalScorer& sc, std::int64_t table_bytes)
        : pp_(&sc.problem()), R_(sc.rows()), D_(p().D), G_(p().G), L_(p().L), P_(p().P), n_(p().n),
          K_(sc.cell_count()) {
        const auto RS = idx(R_) * idx(G_);
        const auto LP = idx(L_) * idx(P_);
        // At most table_bytes, and at most what the window's own demands q[n][L][P] take (1 MiB at
        // least): the table then never outgrows the problem, so memory stays linear in the window.
        const double q_bytes = static_cast<double>(n_) * static_cast<double>(LP) * sizeof(std::int32_t);
        const double limit = std::min(static_cast<double>(table_bytes), std::max(q_bytes, double(1 << 20)));
        dense_ = static_cast<double>(RS) * static_cast<double>(n_) * sizeof(std::int64_t) <= limit;
        W_.assign(RS, LP, 0);
        peak_.assign(RS, L_, 0);
        if (dense_) S_.assign(RS, n_, 0);
        moved_.reserve(idx(L_));
        tok_.assign(idx(K_), 0);
        sq_.assign(idx(K_), 0);
        c_ = static_cast<double>(p().C);
        inv_c_ = 1.0 / c_;
        inv_cc_ = 1.0 / (c_ * c_);
        pow2_ = p().C > 0 && (p().C & (p().C - 1)) == 0 && p().C <= (std::int64_t{1} << 30);
        for (const auto& st : p().stages) {
            ta_.push_back(st.alpha / c_);
            tb_.push_back(st.beta / (c_ * c_));
        }
        rs_cell_.resize(idx(K_));
        for (int k = 0; k < K_; ++k)
            rs_cell_[idx(k)] = (k / D_) * G_ + p().shard_of_slot[idx(k % D_)];
        for (int k = 0; k < K_; ++k)
            for (int i : sc.cell(k)) {
                add(i, k, +1);
            }
        for (int rs = 0; rs < R_ * G_; ++rs)
            refresh(rs, true);
        if (dense_) initial_peak_sums();
        changed_.assign(RS, 0);
        stamp_.assign(idx(n_), 0);
        stamp_gs_.assign(idx(n_), -1);
    }
    /// Don't-look bit of sample i in row-shard rs: its last visit, with the same straggler shard gs,
    /// found nothing and rs has not changed since.
    bool dont_look(int i, int rs, int gs) const {
        const auto x = idx(i);
        return stamp_gs_[x] == gs && stamp_[x] > changed_[idx(rs)];
    }
    void looked(int i, int gs) {
        stamp_[idx(i)] = ++clock_;
        stamp_gs_[idx(i)] = gs;
    }
    int rs_of_cell(int k) const { return rs_cell_[idx(k)]; }
    /// S[rs][j]: sample j's demand on the peak ranks of row-shard rs.
    std::int64_t peak_demand(int rs, int j) const {
        if (dense_) return S_(rs, j);
        const std::int32_t* q = p().q(j);
        const std::span<const int> pk = peak_.row(rs);
        std::int64_t v = 0;
        for (int l = 0; l < L_; ++l)
            v += q[pk[l]];
        return v;
    }
    /// S is stored as a table (peak_demands may be called for several row-shards at once).
    bool dense() const { return dense_; }
    /// Attention A of the row-shard of cell k0 (eq. 12) with cells k0 and k1 (-1: none) holding
    /// (tokens, squares) changed by the given deltas.
    double attention(int k0, std::int64_t dt0, std::int64_t dq0, int k1, std::int64_t dt1, std::int64_t dq1) const {
        const int r = k0 / D_;
        const int g = p().shard_of_slot[idx(k0 % D_)];
        double a = 0;
        for (const auto& st : p().stages) {
            double m = 0;
            bool first = true;
            for (int d : p().shards[idx(g)]) {
                const int k = r * D_ + d;
                std::int64_t t = tok_[idx(k)], q = sq_[idx(k)];
                if (k == k0) {
                    t += dt0;
                    q += dq0;
                }
                if (k == k1) {
                    t += dt1;
                    q += dq1;
                }
                const double v = stage_value(st, t, q);
                if (first || v > m) m = v;
                first = false;
            }
            a += m;
        }
        return a;
    }
    /// alpha_s T + beta_s Q of a cell holding t tokens with squares q (T = t / C, Q = q / C^2, eq.
    /// 11-12). When C is a power of two the quotients are products with the exact reciprocals,
    /// which round to the same values.
    double stage_value(const AttentionStage& st, std::int64_t t, std::int64_t q) const {
        const auto td = static_cast<double>(t);
        const auto qd = static_cast<double>(q);
        if (pow2_) return st.alpha * (td * inv_c_) + st.beta * (qd * inv_cc_);
        return st.alpha * (td / c_) + st.beta * (qd / (c_ * c_));
    }
    double c() const { return c_; }
    /// For every cell k and stage s, the largest stage cost of the other cells of k's row-shard
    /// (-inf when k is alone), into `oth` ([K][S]).
    void other_cells_max(Grid<double>& oth) const {
        const auto S = p().stages.size();
        oth.assign(K_, S, -std::numeric_limits<double>::infinity());
        for (int k = 0; k < K_; ++k) {
            const int r = k / D_;
            const int g = p().shard_of_slot[idx(k % D_)];
            for (int d : p().shards[idx(g)]) {
                const int o = r * D_ + d;
                if (o == k) continue;
                for (std::size_t st = 0; st < S; ++st) {
                    const double v = stage_cost(st, tok_[idx(o)], sq_[idx(o)]);
                    double& m = oth(k, st);
                    if (v > m) m = v;
                }
            }
        }
    }
    /// Attention of cell k's row-shard when only cell k changes by (dt, dq), from other_cells_max.
    double attention_one(const Grid<double>& oth, int k, std::int64_t dt, std::int64_t dq) const {
        return stage_sum(oth.row(k).data(), tok_[idx(k)] + dt, sq_[idx(k)] + dq);
    }
    /// Attention of a row-shard whose other cells' stage maxima are o[0..S) and whose changing
    /// cell holds t tokens with squares q: sum_s max(o[s], alpha_s t / C + beta_s q / C^2).
    double stage_sum(const double* o, std::int64_t t, std::int64_t q) const {
        const auto td = static_cast<double>(t);
        const auto qd = static_cast<double>(q);
        double a = 0;
        for (std::size_t st = 0; st < ta_.size(); ++st)
            a += std::max(o[st], ta_[st] * td + tb_[st] * qd);
        return a;
    }
    double stage_a(std::size_t st) const { return ta_[st]; }
    double stage_b(std::size_t st) const { return tb_[st]; }
    std::int64_t cell_tok(int k) const { return tok_[idx(k)]; }
    std::int64_t cell_sq(int k) const { return sq_[idx(k)]; }
    /// S[rs][0..n): every sample's demand on the peak ranks of row-shard rs (see peak_demand). Without
    /// the table the column is formed into one cached buffer (O(n L) when rs changed since), valid
    /// until the next call for another row-shard.
    const std::int64_t* peak_demands(int rs) {
        if (dense_) return S_.row(rs).data();
        const std::uint64_t version = changed_.empty() ? 0 : changed_[idx(rs)];
        if (column_rs_ != rs || column_version_ != version || column_.size() != idx(n_)) {
            column_.resize(idx(n_));
            for (int j = 0; j < n_; ++j)
                column_[idx(j)] = peak_demand(rs, j);
            column_rs_ = rs;
            column_version_ = version;
        }
        return column_.data();
    }
    double stage_cost(std::size_t st, std::int64_t t, std::int64_t q) const {
        return ta_[st] * static_cast<double>(t) + tb_[st] * static_cast<double>(q);
    }
    double inv_c() const { return inv_c_; }
    /// Records a kept relocation of i from cell `from` to cell `to`.
    void relocated(int i, int from, int to) {
        add(i, from, -1);
        add(i, to, +1);
        refresh(rs_of_cell(from));
        if (rs_of_cell(to) != rs_of_cell(from)) refresh(rs_of_cell(to));
    }
    /// Records a kept swap of i (then in cell a) with j (then in cell b).
    void swapped(int i, int a, int j, int b) {
        add(i, a, -1);
        add(j, b, -1);
        add(i, b, +1);
        add(j, a, +1);
        refresh(rs_of_cell(a));
        if (rs_of_cell(b) != rs_of_cell(a)) refresh(rs_of_cell(b));
    }

private:
    void add(int i, int k, int sign) {
        const std::int64_t t = p().length[idx(i)];
        tok_[idx(k)] += sign * t;
        sq_[idx(k)] += sign * t * t;
        const std::span<std::int64_t> w = W_.row(rs_of_cell(k)); // [L*P]
        const std::int32_t* q = p().q(i);
        for (std::size_t x = 0; x < w.size(); ++x)
            w[x] += sign * static_cast<std::int64_t>(q[x]);
    }
    void refresh(int rs, bool full = false) {
        if (!changed_.empty()) changed_[idx(rs)] = ++clock_;
        const std::size_t LP = W_.cols();                   // L*P
        const std::span<const std::int64_t> w = W_.row(rs); // [L][P]
        const std::span<int> pk = peak_.row(rs);
        moved_.clear();
        for (int l = 0; l < L_; ++l) {
            int best = 0;
            for (int x = 1; x < P_; ++x)
                if (w[l * P_ + x] > w[l * P_ + best]) best = x;
            const int now = l * P_ + best;
            if (!full && now != pk[l]) moved_.emplace_back(pk[l], now);
            pk[l] = now;
        }
        if (full || moved_.empty() || !dense_) return;
        const std::span<std::int64_t> s = S_.row(rs);
        // Only the layers whose peak rank moved change S (exact integer update), all of them in one
        // pass over the samples.
        const std::int32_t* q = p().demand.data();
        for (int j = 0; j < n_; ++j, q += LP) {
            std::int64_t d = 0;
            for (const auto& [was, now] : moved_)
                d += static_cast<std::int64_t>(q[now]) - q[was];
            s[j] += d;
        }
    }
    /// S[rs][j] for every row-shard and sample from the peaks: sample by sample, so each q[j] (L*P
    /// values) is read from memory once for all row-shards; samples in parallel (each writes its own
    /// column of S, integer sums, so the result does not depend on the workers).
    void initial_peak_sums() {
        const int RS = R_ * G_;
        tbb::parallel_for(tbb::blocked_range<int>(0, n_, 64), [&](const tbb::blocked_range<int>& range) {
            for (int j = range.begin(); j != range.end(); ++j) {
                const std::int32_t* q = p().q(j);
                for (int rs = 0; rs < RS; ++rs) {
                    const std::span<const int> pk = peak_.row(rs);
                    std::int64_t v = 0;
                    for (int l = 0; l < L_; ++l)
                        v += q[pk[l]];
                    S_(rs, j) = v;
                }
            }
        });
    }

    const PackingProblem& p() const { return *pp_; }
    const PackingProblem* pp_;
    int R_, D_, G_, L_, P_, n_, K_;
    double c_ = 1, inv_c_ = 1, inv_cc_ = 1;
    bool pow2_ = false;                      // C is a power of two: stage_value multiplies by the exact reciprocals
    std::vector<double> ta_, tb_;            // [S] alpha_s / C, beta_s / C^2
    std::vector<int> rs_cell_;               // [K] row-shard of cell k
    Grid<std::int64_t> W_;                   // [RS][L*P] rank loads W[rs][l][p] (eq. 13)
    Grid<std::int64_t> S_;                   // [RS][n] peak demands S[rs][j] (dense_ only)
    Grid<int> peak_;                         // [RS][L] flat index l*P + p of each layer's peak rank
    std::vector<std::int64_t> tok_, sq_;     // [K] cell tokens and squares
    std::vector<std::pair<int, int>> moved_; // refresh's (old, new) peak index of each moved layer
    std::uint64_t clock_ = 0;
    std::vector<std::uint64_t> changed_, stamp_; // [RS] last change, [n] last fruitless visit
    std::vector<int> stamp_gs_;                  // [n] straggler shard of that visit
    bool dense_ = true;                          // S_ holds the [RS][n] table
    std::vector<std::int64_t> column_;           // without the table: S[column_rs_][0..n)
    int column_rs_ = -1;
    std::uint64_t column_version_ = 0; // changed_[column_rs_] when column_ was formed
};

/// Guided descent (guided_descent) on one scorer and its Guide: the ranking buffers, reused by
/// every visit, and the state of the visit in progress (sample i in cell `from` of row-shard rsa in
/// the straggler shard gs).
class GuidedDescent {
public:
    GuidedDescent(IncrementalScorer& sc, Guide& gd, int verify)
        : sc_(sc), gd_(gd), p_(sc.problem()), n_(p_.n), K_(sc.cell_count()), D_(p_.D), G_(p_.G), verify_(verify),
          top_(idx(verify)), U_(idx(G_)), a_cell_(idx(K_)), shard_of_cell_(idx(K_)),
          visit_cost_(1 + (n_ - 1) / kCandidatesPerUnit) {
        for (std::size_t k = 0; k < shard_of_cell_.size(); ++k)
            shard_of_cell_[k] = p_.shard_of_slot[k % idx(D_)];
    }

    /// The descent from `cursor` (guided_descent's contract).
    bool run(std::int64_t budget, Counts& c, int& cursor, StopLatch& stop) {
        int idle = 0;
        while (idle < n_) {
            if (c.evaluations >= budget) return false;
            if (stop.poll()) {
                c.stopped = true;
                return false;
            }
            const int i = cursor;
            cursor = cursor + 1 == n_ ? 0 : cursor + 1;
            const int gs = sc_.straggler_shard();
            const int from = sc_.cell_of(i);
            if (p_.shard_of_slot[idx(from % D_)] != gs || gd_.dont_look(i, gd_.rs_of_cell(from), gs)) {
                ++idle;
                continue;
            }
            begin_visit(i, from, gs);
            for (int k = 0; k < K_; ++k)
                if (k != from && sc_.relocate_feasible(i, k)) consider(-1, k, k);
            rank_swaps();
            const bool improved = try_best(c);
            c.evaluations += visit_cost_; // the visit's ranking
            if (improved) {
                ++c.improvements;
                idle = 0;
            } else {
                gd_.looked(i, gs);
                ++idle;
            }
        }
        return true;
    }

private:
    struct Cand {
        double s0, s1;
        int j, k; // j >= 0: swap with j; else relocation to cell k
        int seq;  // tie-break: k for a relocation, K + j for a swap
    };

    /// The visit's start: the score, the shard totals U, the attention of every cell's row-shard
    /// and the largest U of the shards other than gs.
    void begin_visit(int i, int from, int gs) {
        i_ = i;
        from_ = from;
        gs_ = gs;
        rsa_ = gd_.rs_of_cell(from);
        before_ = sc_.score();
        for (std::size_t g = 0; g < U_.size(); ++g)
            U_[g] = sc_.shard_total(static_cast<int>(g));
        ti_ = p_.length[idx(i)];
        Si_a_ = static_cast<double>(gd_.peak_demand(rsa_, i));
        found_ = 0;
        gd_.other_cells_max(oth_);
        for (int k = 0; k < K_; ++k)
            a_cell_[idx(k)] = gd_.attention_one(oth_, k, 0, 0);
        Aa_ = a_cell_[idx(from)];
        u_other_ = -1;
        for (std::size_t g = 0; g < U_.size(); ++g)
            if (static_cast<int>(g) != gs && U_[g] > u_other_) u_other_ = U_[g];
    }

    /// Inserts a candidate into the sorted top list. Its `seq` (relocation to cell k: k; swap with j:
    /// K + j) breaks ties of the estimate, so the ranking is that of relocations then swaps in
    /// partner order.
    void insert(double s0, double s1, int j, int k, int seq) {
        int pos = found_ < verify_ ? found_ : verify_;
        while (pos > 0) {
            const Cand& t = top_[idx(pos - 1)];
            if (!(s0 < t.s0 || (s0 == t.s0 && (s1 < t.s1 || (s1 == t.s1 && seq < t.seq))))) break;
            if (pos < verify_) top_[idx(pos)] = t;
            --pos;
        }
        if (pos < verify_) top_[idx(pos)] = Cand{s0, s1, j, k, seq};
        if (found_ < verify_) ++found_;
    }

    /// The estimate of moving i to cell k (j < 0) or swapping it with j in cell k; inserted when it
    /// beats the current score.
    void consider(int j, int k, int seq) {
        const int gb = shard_of_cell_[idx(k)];
        const int rsb = gd_.rs_of_cell(k);
        const std::int64_t tj = j >= 0 ? p_.length[idx(j)] : 0;
        const std::int64_t dt = tj - ti_, dq = tj * tj - ti_ * ti_;
        const double* U = U_.data();
        double dJa = 0, dJb = 0;
        if (rsb == rsa_) {
            dJa = gd_.attention(from_, dt, dq, k, -dt, -dq) - Aa_; // W of the row-shard unchanged
        } else {
            const double Sj_a = j >= 0 ? static_cast<double>(gd_.peak_demand(rsa_, j)) : 0.0;
            dJa = gd_.attention_one(oth_, from_, dt, dq) - Aa_ + (Sj_a - Si_a_) * gd_.inv_c();
            // The straggler's own estimate first: most candidates fail here.
            if (gb != gs_ && U[gs_] + dJa > before_.max_u) return;
            const double Si_b = static_cast<double>(gd_.peak_demand(rsb, i_));
            const double Sj_b = j >= 0 ? static_cast<double>(gd_.peak_demand(rsb, j)) : 0.0;
            dJb = gd_.attention_one(oth_, k, -dt, -dq) - a_cell_[idx(k)] + (Si_b - Sj_b) * gd_.inv_c();
        }
        double s0 = u_other_;
        if (gb == gs_) {
            s0 = std::max(s0, U[gs_] + dJa + dJb);
        } else {
            s0 = std::max(s0, U[gs_] + dJa);
            s0 = std::max(s0, U[gb] + dJb);
            // u_other included gb's current U: recompute without it when gb held the maximum.
            if (U[gb] == u_other_) {
                double m = U[gs_] + dJa;
                for (int g = 0; g < G_; ++g)
                    if (g != gs_ && g != gb) m = std::max(m, U[g]);
                s0 = std::max(m, U[gb] + dJb);
            }
        }
        const double s1 = before_.sum_u + dJa + dJb;
        if (s0 > before_.max_u || (s0 == before_.max_u && s1 >= before_.sum_u)) return;
        insert(s0, s1, j, k, seq);
    }

    /// Swaps, cell by cell; cap feasibility (IncrementalScorer::swap_feasible) from the cells' token
    /// sums: i's cell takes t_j - t_i more, j's cell as much less.
    void rank_swaps() {
        // With oversize Alone a single-sample cell takes any partner (PackingProblem::cell_fits).
        const bool alone = p_.rules.oversize == Oversize::Alone;
        constexpr std::int64_t kAny = std::numeric_limits<std::int64_t>::max();
        const std::int64_t tj_max = alone && sc_.cell_size(from_) == 1 ? kAny : p_.C - sc_.cell_tokens(from_) + ti_;
        S_a_ = gd_.peak_demands(rsa_);
        for (int k = 0; k < K_; ++k) {
            if (k == from_) continue;
            const std::int64_t tj_min = alone && sc_.cell_size(k) == 1 ? -kAny : sc_.cell_tokens(k) + ti_ - p_.C;
            if (gd_.rs_of_cell(k) == rsa_)
                rank_swaps_in_row_shard(k, tj_min, tj_max);
            else
                rank_swaps_across(k, tj_min, tj_max);
        }
    }

    /// Swaps with the samples of cell k in i's own row-shard: W unchanged, A from Guide::attention's
    /// terms, the row-shard's other cells' stage maxima hoisted.
    void rank_swaps_in_row_shard(int k, std::int64_t tj_min, std::int64_t tj_max) {
        const std::size_t S = p_.stages.size();
        const int r = from_ / D_;
        const std::int64_t tok_a = gd_.cell_tok(from_), sq_a = gd_.cell_sq(from_);
        const std::int64_t tok_k = gd_.cell_tok(k), sq_k = gd_.cell_sq(k);
        om_.resize(S);
        for (std::size_t st = 0; st < S; ++st) {
            double m = -std::numeric_limits<double>::infinity();
            for (int d : p_.shards[idx(gs_)]) {
                const int o = r * D_ + d;
                if (o != from_ && o != k)
                    m = std::max(m, gd_.stage_value(p_.stages[st], gd_.cell_tok(o), gd_.cell_sq(o)));
            }
            om_[st] = m;
        }
        const double u_gs = U_[idx(gs_)];
        for (int j : sc_.cell(k)) {
            const std::int64_t tj = p_.length[idx(j)];
            if (tj > tj_max || tj < tj_min) continue;
            const std::int64_t dt = tj - ti_, dq = tj * tj - ti_ * ti_;
            double a = 0;
            for (std::size_t st = 0; st < S; ++st) {
                const double v0 = gd_.stage_value(p_.stages[st], tok_a + dt, sq_a + dq);
                const double v1 = gd_.stage_value(p_.stages[st], tok_k - dt, sq_k - dq);
                a += std::max(std::max(om_[st], v0), v1);
            }
            const double dJa = a - Aa_;
            const double s0 = std::max(u_other_, u_gs + dJa + 0.0);
            const double s1 = before_.sum_u + dJa + 0.0;
            if (s0 > before_.max_u || (s0 == before_.max_u && s1 >= before_.sum_u)) continue;
            insert(s0, s1, j, k, K_ + j);
        }
    }

    /// Swaps with the samples of cell k in another row-shard (nearly all partners): consider's
    /// arithmetic, operation for operation, with the cells' terms hoisted out of the loop and
    /// Guide::stage_sum with the stage coefficients in registers (one or two stages unrolled).
    void rank_swaps_across(int k, std::int64_t tj_min, std::int64_t tj_max) {
        const std::size_t S = p_.stages.size();
        const double* oth_a = oth_.row(from_).data();
        const std::int64_t tok_a = gd_.cell_tok(from_), sq_a = gd_.cell_sq(from_);
        const double inv_c = gd_.inv_c();
        const double u_gs = U_[idx(gs_)], u_other = u_other_, Aa = Aa_, Si_a = Si_a_;
        const Score before = before_;
        const std::int64_t ti = ti_;
        const double ta0 = S > 0 ? gd_.stage_a(0) : 0.0, tb0 = S > 0 ? gd_.stage_b(0) : 0.0;
        const double ta1 = S > 1 ? gd_.stage_a(1) : 0.0, tb1 = S > 1 ? gd_.stage_b(1) : 0.0;
        auto stage_sum = [&](const double* o, std::int64_t t, std::int64_t q) {
            if (S == 0 || S > 2) return gd_.stage_sum(o, t, q);
            const auto td = static_cast<double>(t);
            const auto qd = static_cast<double>(q);
            double a = 0;
            a += std::max(o[0], ta0 * td + tb0 * qd);
            if (S == 2) a += std::max(o[1], ta1 * td + tb1 * qd);
            return a;
        };
        const std::int64_t* S_a = S_a_;
        const int rsb = gd_.rs_of_cell(k);
        const int gb = shard_of_cell_[idx(k)];
        const bool cross = gb != gs_;
        const double u_gb = U_[idx(gb)];
        // consider's s0 = max(max(base, U[gs] + dJa), U[gb] + dJb): base is u_other, or when gb holds
        // u_other the largest U of the shards other than gs and gb (-inf: none).
        double base = u_other;
        if (cross && u_gb == u_other) {
            base = -std::numeric_limits<double>::infinity();
            for (int g = 0; g < G_; ++g)
                if (g != gs_ && g != gb) base = std::max(base, U_[idx(g)]);
        }
        const double* oth_b = oth_.row(k).data();
        const std::int64_t tok_b = gd_.cell_tok(k), sq_b = gd_.cell_sq(k);
        const double a_b = a_cell_[idx(k)];
        const double Si_b = static_cast<double>(gd_.peak_demand(rsb, i_));
        const std::int64_t* S_b = gd_.dense() ? gd_.peak_demands(rsb) : nullptr; // else one value per partner
        const std::int64_t* length = p_.length.data();
        for (int j : sc_.cell(k)) {
            const std::int64_t tj = length[j];
            if (tj > tj_max || tj < tj_min) continue;
            const std::int64_t dt = tj - ti, dq = tj * tj - ti * ti;
            const double Sj_a = static_cast<double>(S_a[j]);
            const double dJa = stage_sum(oth_a, tok_a + dt, sq_a + dq) - Aa + (Sj_a - Si_a) * inv_c;
            if (cross && u_gs + dJa > before.max_u) continue;
            const double Sj_b = static_cast<double>(S_b ? S_b[j] : gd_.peak_demand(rsb, j));
            const double dJb = stage_sum(oth_b, tok_b - dt, sq_b - dq) - a_b + (Si_b - Sj_b) * inv_c;
            const double s0 =
                cross ? std::max(std::max(base, u_gs + dJa), u_gb + dJb) : std::max(u_other, u_gs + dJa + dJb);
            const double s1 = before.sum_u + dJa + dJb;
            if (s0 > before.max_u || (s0 == before.max_u && s1 >= before.sum_u)) continue;
            insert(s0, s1, j, k, K_ + j);
        }
    }

    /// Scores the ranked candidates exactly in estimate order; keeps the first strictly better one.
    bool try_best(Counts& c) {
        for (int x = 0; x < found_; ++x) {
            const Cand& cd = top_[idx(x)];
            ++c.evaluations;
            if (cd.j >= 0) {
                const int kb = sc_.cell_of(cd.j);
                if (sc_.apply_swap(i_, cd.j) < before_) {
                    gd_.swapped(i_, from_, cd.j, kb);
                    return true;
                }
            } else if (sc_.apply_relocate(i_, cd.k) < before_) {
                gd_.relocated(i_, from_, cd.k);
                return true;
            }
            sc_.undo();
        }
        return false;
    }

    IncrementalScorer& sc_;
    Guide& gd_;
    const PackingProblem& p_;
    const int n_, K_, D_, G_, verify_;
    std::vector<Cand> top_;
    std::vector<double> U_;
    std::vector<double> a_cell_;     // attention of each cell's row-shard
    Grid<double> oth_;               // [K][S] Guide::other_cells_max
    std::vector<double> om_;         // [S] stage maxima of a row-shard's other cells
    std::vector<int> shard_of_cell_; // [K]
    const std::int64_t visit_cost_;
    int i_ = 0, from_ = 0, gs_ = 0, rsa_ = 0, found_ = 0;
    Score before_;
    std::int64_t ti_ = 0;
    double Si_a_ = 0, Aa_ = 0, u_other_ = 0;
    const std::int64_t* S_a_ = nullptr; // Guide::peak_demands(rsa) during rank_swaps
};

/// Guided descent: like cyclic_descent, but each visit of a straggler-shard sample i ranks every
/// feasible relocation and swap of i by the Guide's optimistic estimate of the new (max_g U,
/// sum_g U), drops those whose estimate does not beat the current score, and scores exactly the
/// best `verify` of them in estimate order; the first strictly better one is kept.
bool guided_descent(IncrementalScorer& sc, Guide& gd, int verify, std::int64_t budget, Counts& c, int& cursor,
                    StopLatch& stop) {
    return GuidedDescent(sc, gd, verify).run(budget, c, cursor, stop);
}

/// Applies `moves` random feasible moves of straggler-shard samples (whatever their score); polls
/// `stop` every 256 moves and returns early (c.stopped) when it fires.
void kick(IncrementalScorer& sc, Guide* gd, Rng& rng, int moves, Counts& c, StopLatch& stop) {
    const PackingProblem& p = sc.problem();
    const int n = p.n, K = sc.cell_count(), D = p.D;
    if (K < 2) return;
    for (int m = 0; m < moves; ++m) {
        if ((m & 255) == 255 && stop.poll()) {
            c.stopped = true;
            return;
        }
        for (int attempt = 0; attempt < kKickTries; ++attempt) {
            const int gs = sc.straggler_shard();
            const int i = static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
            const int from = sc.cell_of(i);
            if (p.shard_of_slot[idx(from % D)] != gs) continue;
            int k = static_cast<int>(rng.below(static_cast<std::uint64_t>(K - 1)));
            if (k >= from) ++k;
            // Relocations only where they can keep the batch rules' counts: none with
            // samples_per_cell, within the sample's DP slot with samples_per_dp_slot.
            if (rng.uniform() < 0.5 && p.rules.samples_per_cell == 0) {
                if (p.rules.samples_per_dp_slot > 0) k = (k / D) * D + from % D;
                if (k == from || !sc.relocate_feasible(i, k)) continue;
                sc.apply_relocate(i, k);
                if (gd) gd->relocated(i, from, k);
            } else {
                int count = 0;
                for (int j : sc.cell(k))
                    count += sc.swap_feasible(i, j) ? 1 : 0;
                if (count == 0) continue;
                auto pick = static_cast<int>(rng.below(static_cast<std::uint64_t>(count)));
                int partner = -1;
                for (int j : sc.cell(k))
                    if (sc.swap_feasible(i, j) && pick-- == 0) {
                        partner = j;
                        break;
                    }
                sc.apply_swap(i, partner);
                if (gd) gd->swapped(i, from, partner, k);
            }
            ++c.evaluations;
            break;
        }
    }
}

void check_settings(const PolishSettings& s) {
    auto bad = [](const std::string& what) { throw InputError("polish budget: " + what); };
    if (s.evaluations < 0) bad("evaluations must be >= 0 (got " + std::to_string(s.evaluations) + ")");
    if (s.replicas < 1) bad("replicas must be >= 1 (got " + std::to_string(s.replicas) + ")");
    if (s.kick_moves < 0) bad("kick_moves must be >= 0 (got " + std::to_string(s.kick_moves) + ")");
    if (s.verify < 0) bad("verify must be >= 0 (got " + std::to_string(s.verify) + ")");
}

} // namespace

PolishResult iterated_straggler_search(const PackingProblem& p, const Layout& x, const PolishSettings& s,
                                       std::uint64_t seed, const StopToken& stop_token,
                                       const std::function<void(const Score&)>& on_improve) {
    check_settings(s);
    const std::string why = validate_layout(x, p);
    if (!why.empty()) throw std::invalid_argument("iterated_straggler_search: layout is invalid: " + why);
    const IncrementalScorer start(p, x);
    StopLatch stop(stop_token);

    struct Replica {
        std::optional<IncrementalScorer> best;
        Counts counts;
        bool local_optimum = false;
    };
    std::vector<Replica> reps(idx(s.replicas));
    tbb::parallel_for(
        tbb::blocked_range<int>(0, s.replicas, 1),
        [&](const tbb::blocked_range<int>& range) {
            for (int r = range.begin(); r != range.end(); ++r) {
                Replica& rep = reps[idx(r)];
                Rng rng(seeds::annealing_chain(seed, 0, static_cast<std::uint64_t>(r)));
                IncrementalScorer sc = start;
                Counts& c = rep.counts;
                int cursor = 0;
                std::optional<Guide> gd, gd_best;
                if (s.verify > 0) gd.emplace(sc, s.guide_table_bytes);
                auto descend = [&] {
                    if (s.verify <= 0) return cyclic_descent(sc, s.evaluations, c, cursor, stop);
                    return guided_descent(sc, *gd, s.verify, s.evaluations, c, cursor, stop);
                };
                bool at_opt = descend();
                rep.best.emplace(sc);
                if (on_improve && sc.score() < start.score()) on_improve(sc.score());
                if (gd) gd_best.emplace(*gd);
                rep.local_optimum = at_opt;
                while (s.kick_moves > 0 && !c.stopped && c.evaluations < s.evaluations) {
                    const std::int64_t before_kick = c.evaluations;
                    kick(sc, gd ? &*gd : nullptr, rng, s.kick_moves, c, stop);
                    if (c.stopped) { // a cut kick is no search state: back to the best
                        sc = *rep.best;
                        if (gd) *gd = *gd_best;
                        break;
                    }
                    // A kick that found no feasible move still costs a unit, so the budget ends the
                    // loop even where nothing can move (one cell, every move over C).
                    if (c.evaluations == before_kick) ++c.evaluations;
                    ++c.kicks;
                    cursor = static_cast<int>(rng.below(static_cast<std::uint64_t>(p.n)));
                    at_opt = descend();
                    if (sc.score() < rep.best->score()) {
                        *rep.best = sc;
                        if (gd) *gd_best = *gd;
                        rep.local_optimum = at_opt;
                        ++c.kicks_kept;
                        if (on_improve) on_improve(sc.score());
                    } else {
                        sc = *rep.best;
                        if (gd) *gd = *gd_best;
                    }
                }
            }
        },
        tbb::simple_partitioner());

    PolishResult res;
    int winner = 0;
    for (int r = 0; r < s.replicas; ++r) {
        const Replica& rep = reps[idx(r)];
        res.evaluations += rep.counts.evaluations;
        res.improvements += rep.counts.improvements;
        res.kicks += rep.counts.kicks;
        res.kicks_kept += rep.counts.kicks_kept;
        if (rep.best->score() < reps[idx(winner)].best->score()) winner = r;
    }
    const Replica& w = reps[idx(winner)];
    res.layout = w.best->layout();
    res.score = w.best->score();
    res.local_optimum = w.local_optimum;
    res.cancelled = stop.stopped();
    if (start.score() < res.score) throw std::logic_error("iterated_straggler_search: result is worse than its start");
    return res;
}

DescentResult straggler_descent(const PackingProblem& p, const Layout& x, std::int64_t max_evaluations,
                                const StopToken& stop) {
    const std::string why = validate_layout(x, p);
    if (!why.empty()) throw std::invalid_argument("straggler_descent: layout is invalid: " + why);
    IncrementalScorer sc(p, x);
    DescentResult res;
    const int R = sc.rows(), K = sc.cell_count(), D = p.D;
    std::vector<int> order(idx(R));
    std::vector<int> mine; // samples of the straggler's row-shard, scanned
    mine.reserve(idx(p.n));
    auto stopped = [&] {
        if ((res.evaluations & kPollMask) != 0) return false;
        if (stop.stop_requested()) {
            res.cancelled = true;
            return true;
        }
        return false;
    };
    // Tries one move already applied to the scorer: keeps it when the score drops.
    auto judge = [&](const Score& before) {
        ++res.evaluations;
        if (sc.score() < before) {
            ++res.improvements;
            return true;
        }
        sc.undo();
        return false;
    };
    bool improved = true;
    while (improved && res.evaluations < max_evaluations && !res.cancelled) {
        improved = false;
        // The straggler shard g*: the first with U = s0.
        int gs = 0;
        for (int g = 1; g < p.G; ++g)
            if (sc.shard_total(g) > sc.shard_total(gs)) gs = g;
        for (int r = 0; r < R; ++r)
            order[idx(r)] = r;
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return sc.row_shard_cost(a, gs) > sc.row_shard_cost(b, gs); });
        for (int r : order) {
            mine.clear();
            for (int d : p.shards[idx(gs)])
                for (int i : sc.cell(r * D + d))
                    mine.push_back(i);
            for (int i : mine) {
                const Score before = sc.score();
                const int from = sc.cell_of(i);
                for (int k = 0; k < K && !improved; ++k) {
                    if (!sc.relocate_feasible(i, k)) continue;
                    if (res.evaluations >= max_evaluations || stopped()) break;
                    sc.apply_relocate(i, k);
                    improved = judge(before);
                }
                for (int j = 0; j < p.n && !improved; ++j) {
                    if (sc.cell_of(j) == from || !sc.swap_feasible(i, j)) continue;
                    if (res.evaluations >= max_evaluations || stopped()) break;
                    sc.apply_swap(i, j);
                    improved = judge(before);
                }
                if (improved || res.evaluations >= max_evaluations || res.cancelled) break;
            }
            if (improved || res.evaluations >= max_evaluations || res.cancelled) break;
        }
        if (!improved && res.evaluations < max_evaluations && !res.cancelled) res.local_optimum = true;
    }
    res.score = sc.score();
    res.layout = sc.layout();
    return res;
}

} // namespace routepack
