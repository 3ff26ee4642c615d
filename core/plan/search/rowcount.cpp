// Row count R* (paper eq. 9; DESIGN.md "Row count"): lower bounds, fixed-row FFD, bounded exact
// feasibility search.
#include "core/plan/search/rowcount.h"

#include "core/model/topology.h"
#include "core/util/errors.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <string>

namespace routepack {

namespace {

/// Sample indices in nonincreasing length, ties by smaller index (the FixedRowFFD order).
std::vector<int> ffd_order(const std::vector<std::int64_t>& length) {
    std::vector<int> order(length.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        if (length[a] != length[b]) return length[a] > length[b];
        return a < b;
    });
    return order;
}

/// Max segment tree over cell residuals: leftmost cell with residual >= t in O(log K).
class FirstFitTree {
public:
    explicit FirstFitTree(const std::vector<std::int64_t>& residual) : n_(static_cast<int>(residual.size())) {
        size_ = 1;
        while (size_ < n_)
            size_ <<= 1;
        tree_.assign(2 * static_cast<std::size_t>(size_), std::numeric_limits<std::int64_t>::min());
        for (int k = 0; k < n_; ++k)
            tree_[size_ + k] = residual[k];
        for (int v = size_ - 1; v >= 1; --v)
            tree_[v] = std::max(tree_[2 * v], tree_[2 * v + 1]);
    }
    /// Leftmost k with residual[k] >= t, or -1.
    int find(std::int64_t t) const {
        if (n_ == 0 || tree_[1] < t) return -1;
        int v = 1;
        while (v < size_)
            v = tree_[2 * v] >= t ? 2 * v : 2 * v + 1;
        return v - size_;
    }
    void set(int k, std::int64_t residual) {
        int v = size_ + k;
        tree_[v] = residual;
        for (v >>= 1; v >= 1; v >>= 1)
            tree_[v] = std::max(tree_[2 * v], tree_[2 * v + 1]);
    }

private:
    int n_ = 0, size_ = 1;
    std::vector<std::int64_t> tree_;
};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return a <= 0 ? 0 : 1 + (a - 1) / b;
} // no a + b overflow

/// Martello-Toth L2 lower bound on the number of bins of capacity C for items `w` (each 1..C):
/// max over alpha in {0} U {w_j : 2 w_j <= C} of
/// |J1| + |J2| + max(0, ceil((sum J3 - (|J2| C - sum J2)) / C)) with J1 = {w > C - alpha},
/// J2 = {C - alpha >= w > C/2}, J3 = {C/2 >= w >= alpha}. L2 >= ceil(sum w / C) (alpha = 0).
std::int64_t martello_toth_l2(std::vector<std::int64_t> w, std::int64_t C) {
    if (w.empty()) return 0;
    std::sort(w.begin(), w.end(), std::greater<>());
    const std::size_t n = w.size();
    // Sums and n2 * C in 128 bits: n items of up to C = 2^63 - 1 tokens each overflow int64.
    __extension__ typedef __int128 i128;
    std::vector<i128> prefix(n + 1, 0);
    for (std::size_t j = 0; j < n; ++j)
        prefix[j + 1] = prefix[j] + w[j];
    // Items are sorted descending: count of items > x, and of items >= x, are prefix lengths.
    // (lower_bound with greater<> stops at the first w <= x; upper_bound at the first w < x.)
    auto count_gt = [&](std::int64_t x) {
        return static_cast<std::int64_t>(std::lower_bound(w.begin(), w.end(), x, std::greater<>()) - w.begin());
    };
    auto count_ge = [&](std::int64_t x) {
        return static_cast<std::int64_t>(std::upper_bound(w.begin(), w.end(), x, std::greater<>()) - w.begin());
    };
    const std::int64_t n12 = count_gt(C / 2); // w > C/2  <=>  w > floor(C/2) for integers
    std::vector<std::int64_t> alphas{0};
    for (std::size_t j = n12; j < n; ++j)
        if (j == static_cast<std::size_t>(n12) || w[j] != w[j - 1]) alphas.push_back(w[j]);
    std::int64_t best = 0;
    for (std::int64_t alpha : alphas) {
        const std::int64_t n1 = count_gt(C - alpha);
        const std::int64_t n2 = n12 - n1;
        const std::int64_t n123 = alpha == 0 ? static_cast<std::int64_t>(n) : count_ge(alpha);
        const i128 sum2 = prefix[n12] - prefix[n1];
        const i128 sum3 = prefix[n123] - prefix[n12];
        const i128 rest = sum3 - (static_cast<i128>(n2) * C - sum2);
        // ceil(rest / C) <= |J3| <= n: the bound fits int64.
        const std::int64_t bound = n12 + (rest <= 0 ? 0 : static_cast<std::int64_t>(1 + (rest - 1) / C));
        best = std::max(best, bound);
    }
    return best;
}

enum class Exact { Feasible, Infeasible, Unknown, Stopped };

/// Nodes between two polls of the stop token (a node costs O(K): 4096 of them well under 1 ms on
/// the windows the planner sees).
constexpr std::int64_t kStopPollNodes = 4096;

/// Exact bin-packing feasibility: can items t (sorted nonincreasing, each <= C) go into at most K
/// bins of capacity C? Iterative DFS over items in order; each item tries the distinct bin loads
/// that fit in decreasing order (bins with equal loads are interchangeable: symmetry breaking,
/// and all empty bins are one choice); an item that fills a bin exactly is placed there with no
/// alternative (dominance: the items a solution puts beside it are no larger in total, so they can
/// trade places); volume pruning: the residuals of bins that can still take the smallest item must
/// hold the remaining volume. Every placement is one node; stops with Unknown when `budget` nodes
/// are spent, with Stopped when `stop` (polled every kStopPollNodes nodes) fires. On Feasible,
/// bin_of[j] is item j's bin.
Exact exact_bin_feasible(const std::vector<std::int64_t>& t, std::int64_t C, int K, std::int64_t budget,
                         std::int64_t& nodes, std::vector<int>& bin_of, const StopToken& stop) {
    const int m = static_cast<int>(t.size());
    bin_of.assign(m, -1);
    if (m == 0) return Exact::Feasible;
    if (K <= 0) return Exact::Infeasible;
    std::int64_t rem = 0;
    for (std::int64_t v : t)
        rem += v;
    if (t.front() > C || rem > static_cast<std::int64_t>(K) * C) return Exact::Infeasible;
    const std::int64_t tmin = t.back();
    std::vector<std::int64_t> load(K, 0);
    auto usable_of = [&](std::int64_t l) { return C - l >= tmin ? C - l : 0; };
    std::int64_t usable = static_cast<std::int64_t>(K) * C; // every bin empty, C >= tmin
    constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
    std::vector<std::int64_t> tried(m + 1, kNone); // load (before placing) of the bin tried at depth j
    int j = 0;
    tried[0] = kNone;
    while (true) {
        if (j == m) return Exact::Feasible;
        // Next candidate for item j: the fullest bin with load < tried[j] that still fits t[j].
        int b = -1;
        if (tried[j] == kNone || tried[j] + t[j] != C) {                 // after an exact fit there is no alternative
            const std::int64_t limit = std::min(tried[j], C - t[j] + 1); // load < limit
            for (int k = 0; k < K; ++k)
                if (load[k] < limit && (b < 0 || load[k] > load[b])) b = k;
        }
        if (b < 0) { // exhausted item j: undo item j-1
            if (j == 0) return Exact::Infeasible;
            --j;
            const int pb = bin_of[j];
            usable -= usable_of(load[pb]);
            load[pb] -= t[j];
            usable += usable_of(load[pb]);
            rem += t[j];
            bin_of[j] = -1;
            continue;
        }
        if (nodes >= budget) return Exact::Unknown;
        if (nodes % kStopPollNodes == 0 && stop.stop_requested()) return Exact::Stopped;
        ++nodes;
        tried[j] = load[b];
        usable -= usable_of(load[b]);
        load[b] += t[j];
        usable += usable_of(load[b]);
        rem -= t[j];
        bin_of[j] = b;
        if (usable < rem) { // volume pruning: undo and try the next candidate for item j
            usable -= usable_of(load[b]);
            load[b] -= t[j];
            usable += usable_of(load[b]);
            rem += t[j];
            bin_of[j] = -1;
            continue;
        }
        ++j;
        tried[j] = kNone;
    }
}

/// Turns a bin assignment (items in `order`, bin_of per position) into exactly K non-empty cells:
/// bins in first-use order, then the last-placed (smallest) member of multi-sample bins is split
/// off into a new cell until there are K; cells sorted by token sum descending (ties by smallest
/// member) and dealt as k = (k / D, k % D); members ascending within a cell.
Layout layout_from_bins(const std::vector<std::int64_t>& length, const std::vector<int>& order,
                        const std::vector<int>& bin_of, int rows, int D) {
    const int K = rows * D;
    std::vector<int> bin_cell(K, -1);
    std::vector<std::vector<int>> cells;
    for (std::size_t j = 0; j < order.size(); ++j) {
        int& c = bin_cell[bin_of[j]];
        if (c < 0) {
            c = static_cast<int>(cells.size());
            cells.emplace_back();
        }
        cells[c].push_back(order[j]);
    }
    const std::size_t used = cells.size();
    for (std::size_t c = 0; c < used && static_cast<int>(cells.size()) < K; ++c)
        while (cells[c].size() > 1 && static_cast<int>(cells.size()) < K) {
            cells.push_back({cells[c].back()});
            cells[c].pop_back();
        }
    std::vector<std::int64_t> sum(cells.size(), 0);
    std::vector<int> first(cells.size(), 0);
    for (std::size_t c = 0; c < cells.size(); ++c) {
        std::sort(cells[c].begin(), cells[c].end());
        for (int i : cells[c])
            sum[c] += length[i];
        first[c] = cells[c].front();
    }
    std::vector<int> idx(cells.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](int a, int b) {
        if (sum[a] != sum[b]) return sum[a] > sum[b];
        return first[a] < first[b];
    });
    Layout x;
    x.rows = rows;
    x.dp_slots = D;
    x.samples.reserve(order.size());
    x.offsets.reserve(static_cast<std::size_t>(K) + 1);
    for (int c : idx) {
        x.samples.insert(x.samples.end(), cells[c].begin(), cells[c].end());
        x.offsets.push_back(static_cast<int>(x.samples.size()));
    }
    return x;
}

std::string str(std::int64_t v) {
    return std::to_string(v);
}

/// Sum of the lengths (tokens); InputError for a sample below 1 token or above the cap C, and for a
/// sum beyond int64.
std::int64_t checked_total(const std::vector<std::int64_t>& length, std::int64_t C) {
    __extension__ typedef __int128 i128;
    i128 sum = 0;
    for (std::size_t i = 0; i < length.size(); ++i) {
        if (length[i] < 1)
            throw InputError("sample " + str(static_cast<std::int64_t>(i)) + " has length " + str(length[i]) +
                             "; every sample needs >= 1 token");
        if (length[i] > C)
            throw InputError("sample " + str(static_cast<std::int64_t>(i)) + " has length " + str(length[i]) +
                             " > token cap " + str(C) + "; it fits in no cell");
        sum += length[i];
    }
    if (sum > std::numeric_limits<std::int64_t>::max())
        throw InputError("row count: the samples hold more than 2^63 - 1 tokens in total");
    return static_cast<std::int64_t>(sum);
}

constexpr const char* kNoLayout = "no rectangular layout exists: ";

/// The lower bound of minimum_rows and the rows it may search.
struct RowBounds {
    std::int64_t lb = 0;     ///< max(volume, L2, min_rows, 1)
    std::int64_t lbm = 0;    ///< lb rounded up to a multiple of m
    std::int64_t rmax = 0;   ///< n / D
    std::int64_t rmax_m = 0; ///< the largest multiple of m <= n / D
    std::string why;         ///< which bound lb is, for RowCount::how
};

/// minimum_rows' bounds for n samples of `total` tokens (lengths `length`), cap C, D DP slots,
/// min_rows and multiple m; InputError "no rectangular layout exists: ..." when they exceed n / D.
RowBounds row_bounds(const std::vector<std::int64_t>& length, std::int64_t total, std::int64_t C, int D, int min_rows,
                     std::int64_t m) {
    const std::int64_t n = static_cast<std::int64_t>(length.size());
    const std::string prefix = kNoLayout;
    if (n < D) throw InputError(prefix + str(n) + " samples cannot fill " + str(D) + " DP slots");
    RowBounds b;
    b.rmax = n / D;
    if (min_rows > b.rmax)
        throw InputError(prefix + "min_rows " + str(min_rows) + " needs " + str(min_rows) + " x " + str(D) + " = " +
                         str(static_cast<std::int64_t>(min_rows) * D) + " non-empty cells but the window has only " +
                         str(n) + " samples");
    const std::int64_t vol_rows = ceil_div(ceil_div(total, C), D); // == ceil(total / (C*D))
    const std::int64_t l2_cells = martello_toth_l2(length, C);
    const std::int64_t l2_rows = ceil_div(l2_cells, D);
    const std::int64_t lb = std::max({vol_rows, l2_rows, static_cast<std::int64_t>(min_rows), std::int64_t{1}});
    if (lb > b.rmax) {
        if (vol_rows == lb)
            throw InputError(prefix + str(total) + " tokens at cap " + str(C) + " need at least " + str(lb) +
                             " rows of " + str(D) + " cells = " + str(lb * D) +
                             " non-empty cells, but there are only " + str(n) + " samples");
        throw InputError(prefix + "the samples need at least " + str(l2_cells) + " cells of cap " + str(C) +
                         " (bin-packing bound L2), i.e. " + str(lb) + " rows of " + str(D) + " = " + str(lb * D) +
                         " non-empty cells, but there are only " + str(n) + " samples");
    }
    b.lb = lb;
    b.lbm = (lb + m - 1) / m * m; // lb <= 2^31, no overflow
    b.rmax_m = b.rmax / m * m;
    if (b.lbm > b.rmax)
        throw InputError(prefix + "row_multiple " + str(m) + " rounds the lower bound " + str(lb) + " up to " +
                         str(b.lbm) + " rows of " + str(D) + " = " + str(b.lbm * D) +
                         " non-empty cells, but there are only " + str(n) + " samples");
    if (vol_rows == lb)
        b.why = "volume bound ceil(" + str(total) + " / (" + str(C) + " x " + str(D) + ")) = " + str(lb);
    else if (l2_rows == lb)
        b.why = "bin-packing bound L2 = " + str(l2_cells) + " cells -> " + str(lb) + " rows";
    else
        b.why = "min_rows " + str(lb);
    if (b.lbm != lb) b.why += ", rounded up to the multiple " + str(b.lbm) + " of row_multiple " + str(m);
    return b;
}

/// The two phases of minimum_rows (its doc comment) on one window: the exact searches share the node
/// budget, and the incumbent, the lower bound and the texts of RowCount::how accumulate here.
class RowSearch {
public:
    RowSearch(const std::vector<std::int64_t>& length, std::int64_t C, int D, std::int64_t m, std::int64_t budget,
              const StopToken& stop, RowCount& out)
        : length_(length), C_(C), D_(D), m_(m), budget_(budget), stop_(stop), out_(out) {}

    /// Phase 1, upward from the bound: FixedRowFFD, else a first descent of the exact search (at
    /// most n nodes: its first dive is best-fit decreasing into K bins; small windows are decided here).
    void upward(const RowBounds& b) {
        const auto n = static_cast<std::int64_t>(length_.size());
        for (std::int64_t R = b.lbm; R <= b.rmax && found_ < 0; R += m_) {
            if (R < out_.lower_bound) continue;
            if (fixed_row_ffd(length_, C_, static_cast<int>(R), D_, &best_)) {
                found_ = R;
                by_ = "FixedRowFFD";
                break;
            }
            const std::int64_t before = out_.nodes;
            const Exact r = exact(R, n);
            if (r == Exact::Feasible)
                take_search(R, before);
            else if (r == Exact::Infeasible)
                proved(R, before);
        }
    }

    /// Nothing found upward: feasibility is monotone in R, so a layout exists at all iff one exists
    /// at R = n / D (with m > 1: a multiple of m is feasible iff the largest one <= n / D is); the
    /// full search there decides it. InputError when it is stopped, out of budget, or proves none.
    void decide(const RowBounds& b) {
        if (found_ < 0 && out_.lower_bound <= b.rmax_m) {
            const std::int64_t before = out_.nodes;
            const Exact r = exact(b.rmax_m, budget_);
            const std::string tried =
                "no rectangular layout found: FixedRowFFD failed at every R in " + str(b.lbm) + ".." + str(b.rmax_m);
            if (r == Exact::Feasible)
                take_search(b.rmax_m, before);
            else if (r == Exact::Infeasible)
                proved(b.rmax_m, before);
            else if (r == Exact::Stopped)
                throw InputError(tried + " and the exact search was stopped (cancelled or out of time) after " +
                                 str(out_.nodes) + " nodes");
            else
                throw InputError(tried + (m_ > 1 ? " (multiples of row_multiple " + str(m_) + ")" : "") +
                                 " and the exact search ran out of its node budget (" + str(budget_) +
                                 " nodes); raise the node budget");
        }
        if (found_ >= 0) return;
        const std::int64_t n = static_cast<std::int64_t>(length_.size());
        if (m_ > 1)
            throw InputError(std::string(kNoLayout) + "the exact search proved every R <= " + str(b.rmax_m) +
                             " (the largest multiple of row_multiple " + str(m_) + " <= " + str(n) + " / " + str(D_) +
                             ") infeasible (" + str(out_.nodes) + " nodes)");
        throw InputError(std::string(kNoLayout) + "the exact search proved every R <= " + str(n) + " / " + str(D_) +
                         " = " + str(b.rmax) + " infeasible (" + str(out_.nodes) + " nodes)");
    }

    /// Phase 2, downward from the layout found: the rest of the budget goes to R* - 1, R* - 2, ...
    /// until a proof of infeasibility (certified: by monotonicity every smaller R is infeasible too)
    /// or the budget runs out (best-known).
    void downward() {
        for (std::int64_t R = found_ - m_; R >= out_.lower_bound; R -= m_) {
            const std::int64_t before = out_.nodes;
            const Exact r = exact(R, budget_);
            if (r == Exact::Feasible) {
                take_search(R, before);
            } else if (r == Exact::Infeasible) {
                proved(R, before);
                break;
            } else {
                unknown_at_ = R;
                break;
            }
        }
    }

    /// Fills out's rows, layout, certification and `how` (the lower bound rounded up to m: no
    /// multiple of m below it is feasible).
    void finish(const RowBounds& b) {
        const bool stopped_at = out_.stopped;
        out_.rows = static_cast<int>(found_);
        out_.layout = std::move(best_);
        out_.lower_bound = static_cast<int>((out_.lower_bound + m_ - 1) / m_ * m_);
        out_.certified = out_.lower_bound == out_.rows;
        out_.stopped = stopped_at && !out_.certified;
        const std::string head = "R* = " + str(found_);
        const std::string unknown = head + " best-known (not certified): lower bound " + str(out_.lower_bound) +
                                    ", exact search at R = " + str(unknown_at_);
        if (out_.stopped)
            out_.how = unknown + " was stopped (cancelled or out of time) after " + str(out_.nodes) + " of " +
                       str(budget_) + " nodes; layout by " + by_;
        else if (!out_.certified)
            out_.how = unknown + " ran out of its node budget (" + str(budget_) + " nodes); layout by " + by_;
        else if (found_ == b.lbm)
            out_.how = head + " certified: " + b.why + " met by " + by_;
        else
            out_.how = head + " certified: " + searched_ + ", layout by " + by_;
    }

private:
    /// Exact search at R, spending at most `cap` more nodes (and never more than the whole budget).
    Exact exact(std::int64_t R, std::int64_t cap) {
        if (order_.empty()) {
            order_ = ffd_order(length_);
            sorted_len_.resize(order_.size());
            for (std::size_t j = 0; j < order_.size(); ++j)
                sorted_len_[j] = length_[order_[j]];
        }
        const std::int64_t limit = cap >= budget_ - out_.nodes ? budget_ : out_.nodes + cap;
        const Exact e =
            exact_bin_feasible(sorted_len_, C_, static_cast<int>(R * D_), limit, out_.nodes, bin_of_, stop_);
        if (e == Exact::Stopped) out_.stopped = true;
        return e;
    }
    void take_search(std::int64_t R, std::int64_t before) {
        found_ = R;
        best_ = layout_from_bins(length_, order_, bin_of_, static_cast<int>(R), D_);
        by_ = "the exact search (" + str(out_.nodes - before) + " nodes; FixedRowFFD failed at " + str(R) + ")";
    }
    void proved(std::int64_t R, std::int64_t before) {
        out_.lower_bound = static_cast<int>(R + 1);
        searched_ = "exact search proved R = " + str(R) + " (so every smaller R) infeasible (" +
                    str(out_.nodes - before) + " nodes)";
    }

    const std::vector<std::int64_t>& length_;
    const std::int64_t C_;
    const int D_;
    const std::int64_t m_, budget_;
    const StopToken& stop_;
    RowCount& out_;
    std::vector<int> order_; // FFD order, built on the first exact search
    std::vector<std::int64_t> sorted_len_;
    std::vector<int> bin_of_;
    std::string searched_; // the last infeasibility proof, for `how`
    std::int64_t unknown_at_ = -1;
    std::int64_t found_ = -1;
    std::string by_;
    Layout best_;
};

} // namespace

namespace {

/// FixedRowFFD with counts (fixed_row_ffd_counts): `limit` samples per cell at most (0 = any),
/// `quota` samples per DP slot at most (0 = any). A cell that reaches its limit, and every cell of a
/// DP slot that reaches its quota, leaves the first-fit tree (residual below any length).
bool ffd_with_counts(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D, int limit, int quota,
                     Layout* x) {
    if (rows < 1 || D < 1) return false;
    const std::int64_t K64 = static_cast<std::int64_t>(rows) * D;
    if (static_cast<std::int64_t>(length.size()) < K64) return false;
    const int K = static_cast<int>(K64);
    const std::vector<int> order = ffd_order(length);
    std::vector<int> cell_of(order.size()); // cell of order[j]
    std::vector<std::int64_t> residual(K);
    for (int k = 0; k < K; ++k) {
        const int i = order[k];
        if (length[i] > C) return false;
        cell_of[k] = k;
        residual[k] = C - length[i];
    }
    FirstFitTree tree(residual);
    constexpr std::int64_t kClosed = std::numeric_limits<std::int64_t>::min();
    std::vector<int> size(limit > 0 ? K : 0, 1), slot_count(quota > 0 ? D : 0, rows);
    auto close_full = [&](int k) {
        if (limit > 0 && size[k] == limit) tree.set(k, kClosed);
        if (quota > 0 && slot_count[k % D] == quota)
            for (int r = 0; r < rows; ++r)
                tree.set(r * D + k % D, kClosed);
    };
    if (limit > 0 || quota > 0)
        for (int k = 0; k < K; ++k)
            close_full(k);
    for (std::size_t j = K; j < order.size(); ++j) {
        const int i = order[j];
        const int k = tree.find(length[i]);
        if (k < 0) return false;
        cell_of[j] = k;
        residual[k] -= length[i];
        tree.set(k, residual[k]);
        if (limit > 0) ++size[k];
        if (quota > 0) ++slot_count[k % D];
        if (limit > 0 || quota > 0) close_full(k);
    }
    if (x) *x = Layout::from_assignment(rows, D, order, cell_of);
    return true;
}

/// Column first (layout_under_counts, samples_per_dp_slot S): samples in FFD order each to the DP
/// slot of the fewest tokens that holds fewer than S (ties: lowest slot), then every slot's samples
/// FFD-packed into its `rows` cells under the cell limit.
bool columns_first(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D, const BatchRules& rules,
                   Layout* x) {
    const int S = rules.samples_per_dp_slot;
    if (S < rows || static_cast<std::int64_t>(length.size()) != static_cast<std::int64_t>(S) * D) return false;
    const std::vector<int> order = ffd_order(length);
    std::vector<std::vector<int>> slot(static_cast<std::size_t>(D));
    std::vector<std::int64_t> tokens(static_cast<std::size_t>(D), 0);
    for (int i : order) {
        int best = -1;
        for (int d = 0; d < D; ++d)
            if (static_cast<int>(slot[d].size()) < S && (best < 0 || tokens[d] < tokens[best])) best = d;
        slot[best].push_back(i);
        tokens[best] += length[i];
    }
    std::vector<std::vector<int>> cells(static_cast<std::size_t>(rows) * D);
    for (int d = 0; d < D; ++d) {
        std::vector<std::int64_t> sub;
        for (int i : slot[d])
            sub.push_back(length[i]);
        Layout col;
        if (!ffd_with_counts(sub, C, rows, 1, rules.cell_limit(), 0, &col)) return false;
        for (int r = 0; r < rows; ++r)
            for (int j : col.cell(r))
                cells[static_cast<std::size_t>(r) * D + d].push_back(slot[d][j]);
    }
    if (x) *x = Layout::from_cells(rows, D, cells);
    return true;
}

/// Boustrophedon dealing (layout_under_counts, samples_per_cell c): the samples in FFD order, K at a
/// time, to cells 0..K-1 and back K-1..0, so every cell gets exactly c and similar token sums.
bool dealt_cells(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D, Layout* x) {
    const std::int64_t K = static_cast<std::int64_t>(rows) * D;
    const auto n = static_cast<std::int64_t>(length.size());
    if (K < 1 || n % K != 0) return false;
    const std::vector<int> order = ffd_order(length);
    std::vector<int> cell_of(order.size());
    std::vector<std::int64_t> tokens(static_cast<std::size_t>(K), 0);
    for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t round = j / K, pos = j % K;
        const std::int64_t k = round % 2 == 0 ? pos : K - 1 - pos;
        cell_of[static_cast<std::size_t>(j)] = static_cast<int>(k);
        tokens[static_cast<std::size_t>(k)] += length[order[static_cast<std::size_t>(j)]];
    }
    for (std::int64_t v : tokens)
        if (v > C) return false;
    if (x) *x = Layout::from_assignment(rows, D, order, cell_of);
    return true;
}

/// Longest first (FFD order), each sample into the cell of fewest tokens among those with room for it
/// (under the cell limit and, with samples_per_dp_slot, the slot's quota; ties: lower cell index),
/// refused when even that cell would pass C. Balances tokens when the counts are tight (cells x
/// max_samples_per_cell close to n), where first fit fills the first cells to their limit with short
/// samples and leaves the long ones nowhere. O(n log K) with a heap (a cell without room never
/// regains it, so it is dropped when popped).
bool least_loaded_cells(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D,
                        const BatchRules& rules, Layout* x) {
    const std::int64_t K = static_cast<std::int64_t>(rows) * D;
    const auto n = static_cast<std::int64_t>(length.size());
    const int limit = rules.cell_limit(), quota = rules.samples_per_dp_slot;
    if (K < 1 || n < K || (quota > 0 && n != static_cast<std::int64_t>(quota) * D)) return false;
    std::vector<std::vector<int>> cells(static_cast<std::size_t>(K));
    std::vector<std::int64_t> tokens(static_cast<std::size_t>(K), 0);
    std::vector<int> slot_count(static_cast<std::size_t>(D), 0);
    using Entry = std::pair<std::int64_t, std::int64_t>; // (tokens, cell)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
    for (std::int64_t k = 0; k < K; ++k)
        heap.emplace(0, k);
    auto has_room = [&](std::int64_t k) {
        const auto& c = cells[static_cast<std::size_t>(k)];
        return (limit <= 0 || static_cast<int>(c.size()) < limit) &&
               (quota <= 0 || slot_count[static_cast<std::size_t>(k % D)] < quota);
    };
    for (const int i : ffd_order(length)) {
        while (!heap.empty() && (heap.top().first != tokens[static_cast<std::size_t>(heap.top().second)] ||
                                 !has_room(heap.top().second)))
            heap.pop();
        if (heap.empty()) return false;
        const std::int64_t k = heap.top().second;
        heap.pop();
        const std::int64_t t = tokens[static_cast<std::size_t>(k)] + length[static_cast<std::size_t>(i)];
        if (t > C) return false;
        tokens[static_cast<std::size_t>(k)] = t;
        cells[static_cast<std::size_t>(k)].push_back(i);
        ++slot_count[static_cast<std::size_t>(k % D)];
        if (has_room(k)) heap.emplace(t, k);
    }
    for (const auto& c : cells)
        if (c.empty()) return false;
    if (x) *x = Layout::from_cells(rows, D, cells);
    return true;
}

} // namespace

/// FixedRowFFD (Algorithm 2 line 1): K = rows*D; the K longest samples (nonincreasing length, ties
/// by index) seed cells 0..K-1, the rest follow in the same order into the lowest-index cell whose
/// token sum stays <= C (first fit, O(n log K) with a max-residual tree). Cell k is (k / D, k % D);
/// within a cell samples appear in placement order. Returns false and leaves *x untouched when
/// rows < 1, D < 1, n < K or some sample fits nowhere; x may be null (feasibility test only).
bool fixed_row_ffd(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D, Layout* x) {
    return ffd_with_counts(length, C, rows, D, 0, 0, x);
}

bool fixed_row_ffd_counts(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D,
                          const BatchRules& rules, Layout* x) {
    const int quota = rules.samples_per_dp_slot;
    if (quota > 0 && static_cast<std::int64_t>(length.size()) != static_cast<std::int64_t>(quota) * D) return false;
    if (rules.samples_per_cell > 0 &&
        static_cast<std::int64_t>(length.size()) != static_cast<std::int64_t>(rows) * D * rules.samples_per_cell)
        return false;
    Layout y;
    if (!ffd_with_counts(length, C, rows, D, rules.cell_limit(), quota, &y)) return false;
    if (x) *x = std::move(y);
    return true;
}

bool layout_under_counts(const std::vector<std::int64_t>& length, std::int64_t C, int rows, int D,
                         const BatchRules& rules, Layout* x, std::string* by) {
    auto done = [&](const char* name) {
        if (by) *by = name;
        return true;
    };
    if (fixed_row_ffd_counts(length, C, rows, D, rules, x)) return done("FixedRowFFD under the counts");
    if (rules.samples_per_cell > 0) {
        if (dealt_cells(length, C, rows, D, x)) return done("boustrophedon dealing");
        return false;
    }
    if (rules.samples_per_dp_slot > 0 && columns_first(length, C, rows, D, rules, x))
        return done("DP slots filled first, then FFD per slot");
    if (least_loaded_cells(length, C, rows, D, rules, x)) return done("longest first into the least-loaded cell");
    return false;
}

/// R* (eq. 9) for lengths t_i (tokens, [n]), cap C (tokens per cell), D DP slots, min_rows (0 =
/// none), an exact-search budget in nodes (total over the call; counted in nodes, never time) and
/// row_multiple m (R must be a multiple of m; 1 = any R).
/// Lower bound lb = max(ceil(sum t / (C*D)), ceil(L2 / D), min_rows, 1) with L2 the Martello-Toth
/// bin-packing bound on the number of cells. The exact search decides "all samples in <= R*D bins
/// of C", which is equivalent to exactly R*D non-empty cells because n >= R*D (a multi-sample bin
/// splits). Feasibility is monotone in R (a layout with R rows splits into one with R+1 while
/// (R+1)*D <= n), so a proof of infeasibility at R raises the lower bound to R+1.
///   Phase 1, R = lb upward: FixedRowFFD; where it fails, the exact search's first descent (at most
///     n nodes); the first R that either finds is the incumbent (if none up to n/D does, the full
///     search at R = n/D decides whether any layout exists).
///   Phase 2, R = incumbent - 1 downward to the lower bound: the full exact search with the rest of
///     the budget; a layout found lowers the incumbent, a proof certifies it, an exhausted budget
///     leaves it best-known.
/// With m > 1 both phases visit multiples of m only (phase 1 from ceil_m(lb) up in steps of m, the
/// decisive search at the largest multiple <= n/D, phase 2 down in steps of m) and the reported lower
/// bound is ceil_m of the plain one. The result is R*_m = ceil_m(R*_1), the smallest multiple of m
/// that is >= the plain minimum R*_1 (itself >= min_rows), and it stays certified: every feasible R'
/// is >= R*_1, so no multiple below ceil_m(R*_1) is feasible, and ceil_m(R*_1) <= n/D is feasible by
/// monotonicity; a proof of infeasibility at a multiple R certifies the next multiple R + m once a
/// layout is found there. Every later stage (baselines, seeding, annealing, polish) keeps the row
/// count, so the plan has exactly R*_m rows of D non-empty cells (no empty rows, as with min_rows).
/// With m = 1 every step, bound and text is the plain algorithm's.
/// certified == (lower_bound == rows); `layout` is FixedRowFFD's or the search's (cells sorted by
/// token sum descending). InputError: t_i < 1 or t_i > C (names the sample), D < 1, C < 1,
/// min_rows < 0, row_multiple < 1, and "no rectangular layout exists: ..." when n < D,
/// min_rows*D > n, the bounds (rounded up to a multiple of m) need more cells than samples, or the
/// search proves every R (multiple of m) <= n/D infeasible.
RowCount minimum_rows(const std::vector<std::int64_t>& length, std::int64_t C, int D, int min_rows,
                      std::int64_t node_budget, int row_multiple, const StopToken& stop) {
    if (D < 1) throw InputError("row count: the topology needs at least 1 DP slot (got " + str(D) + ")");
    if (C < 1) throw InputError("row count: the token cap must be at least 1 (got " + str(C) + ")");
    if (min_rows < 0) throw InputError("row count: min_rows must be >= 0 (got " + str(min_rows) + ")");
    if (row_multiple < 1) throw InputError("row count: row_multiple must be >= 1 (got " + str(row_multiple) + ")");
    const std::int64_t total = checked_total(length, C);
    const RowBounds b = row_bounds(length, total, C, D, min_rows, row_multiple);
    RowCount out;
    out.lower_bound = static_cast<int>(b.lb);
    RowSearch search(length, C, D, row_multiple, std::max<std::int64_t>(0, node_budget), stop, out);
    search.upward(b);
    search.decide(b);
    search.downward();
    search.finish(b);
    return out;
}

namespace {

/// The counts' own row bounds (minimum_rows_under_rules): lo (with the reason) and hi.
struct CountBounds {
    std::int64_t lo = 1, hi = 0;
    std::string why;
};

CountBounds count_bounds(std::int64_t n, int D, const BatchRules& b) {
    CountBounds c;
    c.hi = n / D;
    if (b.samples_per_dp_slot > 0) c.hi = std::min<std::int64_t>(c.hi, b.samples_per_dp_slot);
    if (b.samples_per_cell > 0) {
        c.lo = c.hi = n / (static_cast<std::int64_t>(b.samples_per_cell) * D);
        c.why = "samples_per_cell " + str(b.samples_per_cell) + " fixes R = " + str(c.lo);
    } else if (b.max_samples_per_cell > 0) {
        const std::int64_t per_slot = b.samples_per_dp_slot > 0 ? b.samples_per_dp_slot : ceil_div(n, D);
        c.lo = ceil_div(per_slot, b.max_samples_per_cell);
        c.why = "max_samples_per_cell " + str(b.max_samples_per_cell) + " needs R >= ceil(" + str(per_slot) + " / " +
                str(b.max_samples_per_cell) + ") = " + str(c.lo);
    }
    return c;
}

/// A short name of the count rules for messages ("samples_per_dp_slot 128, max_samples_per_cell 4").
std::string rules_text(const BatchRules& b) {
    std::string out;
    auto add = [&](const char* key, int v) {
        if (v > 0) out += (out.empty() ? "" : ", ") + std::string(key) + " " + str(v);
    };
    add("samples_per_dp_slot", b.samples_per_dp_slot);
    add("samples_per_cell", b.samples_per_cell);
    add("max_samples_per_cell", b.max_samples_per_cell);
    return out;
}

} // namespace

RowCount minimum_rows_under_rules(const std::vector<std::int64_t>& length, std::int64_t C, const Topology& t,
                                  std::int64_t node_budget, const StopToken& stop) {
    const BatchRules& b = t.batch;
    const std::vector<std::int64_t> fit = fitting_lengths(length, C, b);
    RowCount free = minimum_rows(fit, C, t.dp_slots, t.min_rows, node_budget, t.row_multiple, stop);
    if (!b.counts()) return free;
    const auto n = static_cast<std::int64_t>(length.size());
    const int D = t.dp_slots;
    const std::int64_t m = t.row_multiple;
    check_batch_window(t, n);
    const CountBounds cb = count_bounds(n, D, b);
    // The free problem's lower bound (certified R* or the best bound proved) holds under the counts
    // too: they only remove layouts.
    const std::int64_t free_lb = free.certified ? free.rows : free.lower_bound;
    if (free_lb > cb.hi)
        throw InputError(std::string(kNoLayout) + rules_text(b) + " allows at most " + str(cb.hi) +
                         " rows, but the samples need at least " + str(free_lb) + " rows at cap " + str(C));
    std::int64_t lb = std::max(free_lb, cb.lo);
    lb = (lb + m - 1) / m * m;
    RowCount out;
    out.nodes = free.nodes;
    out.stopped = free.stopped;
    out.lower_bound = static_cast<int>(lb);
    std::string by;
    for (std::int64_t R = lb; R <= cb.hi; R += m) {
        if (!layout_under_counts(fit, C, static_cast<int>(R), D, b, &out.layout, &by)) continue;
        out.rows = static_cast<int>(R);
        out.certified = R == lb;
        const std::string bound = lb > free_lb ? cb.why : "the free row count (" + free.how + ")";
        if (out.certified)
            out.how = "R* = " + str(R) + " certified under " + rules_text(b) + ": " + bound + ", met by " + by;
        else
            out.how = "R* = " + str(R) + " best-known (not certified) under " + rules_text(b) + ": lower bound " +
                      str(lb) + " (" + bound + "); the constructions under the counts found no layout at R in " +
                      str(lb) + ".." + str(R - m) + "; layout by " + by;
        return out;
    }
    if (b.samples_per_cell == 2) {
        // Pairing the i-th longest with the i-th shortest minimizes the largest pair sum: its failure
        // (the dealing above) proves that no layout exists.
        std::vector<std::int64_t> sorted(fit);
        std::sort(sorted.begin(), sorted.end());
        std::int64_t worst = 0;
        for (std::size_t j = 0; j < sorted.size() / 2; ++j)
            worst = std::max(worst, sorted[j] + sorted[sorted.size() - 1 - j]);
        throw InputError(std::string(kNoLayout) +
                         "with samples_per_cell 2 the best pairing (longest with shortest) puts " + str(worst) +
                         " tokens in a cell, above the cap " + str(C));
    }
    throw InputError("no layout keeping " + rules_text(b) + " found: the constructions failed at every R in " +
                     str(lb) + ".." + str(cb.hi) + (m > 1 ? " (multiples of row_multiple " + str(m) + ")" : ""));
}

} // namespace routepack
