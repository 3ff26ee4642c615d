#pragma once
// Numbers behind the plan views' explanations, Qt-free so that tests check them by hand: the logical
// experts on an EP rank, the MoE layers one expert bounds, the samples that load a rank most, the
// rank loads of one row-shard, the heatmaps' colour scales and round ticks and axis label strides
// (where a plan's gain comes from: views/plan/plan_explain_gain.h).
#include "core/model/trace.h"
#include "core/plan/planner.h"
#include "core/plan/score/placement.h"
#include "views/plan/plan_data.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace routepack::views {

/// One logical expert of a layer and its tokens in the window.
struct ExpertTokens {
    int expert = 0;           ///< logical expert e
    std::uint64_t tokens = 0; ///< L[l][e], tokens routed to it at the layer
};

/// The logical experts that placement `pi` puts on EP rank `p` at MoE layer index `l` (0..L-1), with
/// their tokens from `loads` = L[l][e] ([L][E] row-major, aggregate_expert_loads), most tokens first
/// (ties: lower e first). Their token sum is G[l][p] (eq. 10). std::invalid_argument when l or p is
/// out of range or `loads` does not hold L*E values of `pi`'s shape.
std::vector<ExpertTokens> experts_on_rank(std::span<const std::uint64_t> loads, const Placement& pi, int l, int p);

/// A MoE layer whose single hottest expert carries more tokens than the mean rank load: no placement
/// can bring that layer's peak rank load max_p G[l][p] below the expert's tokens (the expert lives
/// on one rank), while the mean is what a perfect balance would give.
struct ExpertBound {
    int layer = 0;             ///< MoE layer index l (0..L-1)
    int expert = 0;            ///< the hottest logical expert (lowest e on ties)
    std::uint64_t tokens = 0;  ///< its tokens L[l][e]
    std::uint64_t total = 0;   ///< the layer's tokens sum_e L[l][e]
    double mean_rank_load = 0; ///< total / P
};

/// Every MoE layer l of `loads` ([L][E] row-major) whose hottest expert's tokens exceed
/// sum_e L[l][e] / P (strictly), ascending by l. E.g. loads {10, 1, 1, 0} (L = 1, E = 4) on P = 2:
/// 10 > 12 / 2, layer 0 bounded by expert 0 (10 of 12 tokens, mean 6). std::invalid_argument when
/// L < 0, E < 1, P < 1 or loads.size() != L * E.
std::vector<ExpertBound> expert_bounded_layers(std::span<const std::uint64_t> loads, int L, int E, int P);

/// One sample of a window and its tokens on something (a rank, a cell).
struct SampleTokens {
    int sample = 0; ///< index into the window (and PlanResult::samples): window order
    std::uint64_t tokens = 0;
};

/// The `k` samples of `window` that route the most tokens to EP rank `p` at MoE layer index `l` under
/// `pi`: tokens_i = sum over experts e with pi.rank_of(l, e) = p of a[i][l][e]. Most tokens first (ties:
/// lower index first); samples with no token there are left out, so fewer than k may come back.
/// std::invalid_argument when l, p are out of range, k < 0, or `pi` does not match the window's L, E.
std::vector<SampleTokens> top_samples_on_rank(const Trace& window, const Placement& pi, int l, int p, int k);

/// W[r][g][l][p] for every EP rank p ([P], eq. 13): tokens routed at MoE layer index `l` to rank p by
/// the samples of cells (r, d) for every DP slot d of EDP shard g of layout `x`, under `pi`.
/// std::invalid_argument when r, g, l are out of range or the shapes do not match.
std::vector<std::uint64_t> row_shard_rank_loads(const Trace& window, const Topology& t, const Placement& pi,
                                                const Layout& x, int r, int g, int l);

/// How a heatmap maps values onto its colour bar.
enum class ColourScale {
    Linear,   ///< t = (v - lo) / (hi - lo)
    Log,      ///< t = log(v / lo) / log(hi / lo): equal ratios get equal steps (skewed loads)
    PerLayer, ///< linear within each row's own [min, max] (each MoE layer uses the whole bar)
};

/// The mapping of one heatmap (or of one row under ColourScale::PerLayer: lo, hi = that row's range).
struct ColourMapping {
    double lo = 0, hi = 1;
    ColourScale scale = ColourScale::Linear; ///< PerLayer maps like Linear (the caller passes the row's lo, hi)
    bool diverging = false;                  ///< centre at t = 0.5, [lo, centre] and [centre, hi] on the two halves
    double centre = 0;                       ///< diverging only
    double band = 0;                         ///< diverging only: |v - centre| <= band maps to 0.5
};

/// The lower end a logarithmic scale uses: lo when lo > 0, else hi / 1000 (loads of 0 exist; their
/// logarithm does not); 1 when hi <= 0 as well.
double log_floor(double lo, double hi);

/// Position in [0, 1] of `v` on the colour bar (clamped; NaN for a non-finite v). Sequential:
/// f(v) = v (Linear, PerLayer) or log10(max(v, log_floor)) (Log), t = (f(v) - f(lo)) / (f(hi) -
/// f(lo)), 0.5 when hi <= lo. Diverging: within the band t = 0.5; below it t = 0.5 (f(v) - f(lo)) /
/// (f(centre - band) - f(lo)), above it t = 0.5 + 0.5 (f(v) - f(centre + band)) / (f(hi) - f(centre +
/// band)). E.g. Log, lo 0.1, hi 10, sequential: v = 1 -> 0.5; Linear, same range: v = 1 -> 0.0909.
double colour_position(double v, const ColourMapping& m);

/// Round tick values of a colour bar from lo to hi, ascending, at most `max_ticks` (>= 2) of them.
/// Linear and PerLayer: the multiples in [lo, hi] of the smallest step in {1, 2, 5} x 10^k that gives
/// no more than max_ticks (0, 0.5, 1, 1.5, 2 for [0, 2.3] and 6). Log: {1, 2, 5} x 10^k within
/// [log_floor(lo, hi), hi], else {1} x 10^k, else every other power of ten from the first one >= that floor; when that
/// gives fewer than two ticks (a range inside one decade), the linear ticks. Empty when hi <= lo.
std::vector<double> round_ticks(double lo, double hi, ColourScale scale, int max_ticks);

/// Every how many columns an axis label is drawn: 1 when count <= every_up_to (each one labelled,
/// e.g. every EP rank up to EP16), else the smallest stride in 1, 2, 4, 8, ... with stride x
/// cell_width >= label_width + 6 px (labels 0, 4, 8, ... at EP64 in a narrow map).
int axis_label_stride(int count, double cell_width, double label_width, int every_up_to);

} // namespace routepack::views
