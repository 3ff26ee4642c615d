#pragma once
// Values the plan views paint, derived from one PlanResult (and its window) once, at setPlan time.
// Plain C++ (no widgets) so that tests can check each number against an independent computation.
#include "core/plan/planner.h"
#include "core/plan/score.h"

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace routepack::views {

/// The four compared methods, in table / combo-box order.
inline constexpr int kMethodCount = 4;
/// Method id of index m: "baseline", "reorder", "karmarkar_karp", "routepack".
const char* method_id(int m);
/// Human label of method m: "Baseline", "Reorder", "Karmarkar-Karp", "RoutePack".
const char* method_label(int m);
/// The MethodResult of method m (0..3) of a plan.
const MethodResult& method_of(const PlanResult& plan, int m);

/// Per MoE layer l: population std / mean over EP ranks of G[l][.] (the per-layer term of eq. 22;
/// 0 for a layer with no load). Mean over l equals cv_global(G, L, P). `G` is [L][P]; result [L].
std::vector<double> layer_rank_cv(std::span<const std::uint64_t> G, int L, int P);

/// G[l][p] / mean_p G[l][p], [L][P] row-major (eq. 10 normalized to the layer mean; NaN for a layer
/// with no load).
std::vector<double> normalized_rank_loads(std::span<const std::uint64_t> G, int L, int P);

/// Per-row-shard costs of the four methods of one plan (cost_breakdown of each method's layout
/// under its own placement: identity for baseline, LPT for the others), plus each method's
/// straggler shard argmax_g U[g] (lowest g on ties).
struct PlanCosts {
    std::array<CostBreakdown, kMethodCount> method;
    std::array<int, kMethodCount> straggler{};
};

/// Largest n * L * E (counts) for which plan_costs() runs on the GUI thread (2^26).
inline constexpr std::uint64_t kMaxCostCounts = std::uint64_t{1} << 26;

/// Whether `window` is the plan's window in shape: same sample count and lengths, same L and E.
bool window_matches(const PlanResult& plan, const Trace& window);

/// Computes PlanCosts with make_packing_problem (one problem per placement) and cost_breakdown.
/// Returns nullptr when the window does not match the plan or n * L * E > kMaxCostCounts.
/// Cost O(n*L*E + 4 * (n*L*P + R*G*L*P + R*D*S)).
std::shared_ptr<const PlanCosts> plan_costs(const PlanResult& plan, const Trace& window);

/// Token sum of every cell of a layout ([R*D], cell k = r*D + d), from the window's lengths.
std::vector<std::int64_t> cell_tokens(const Layout& x, const std::vector<SampleInfo>& samples);

} // namespace routepack::views
