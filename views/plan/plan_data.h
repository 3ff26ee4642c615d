#pragma once
// Values the plan views paint, derived from one PlanResult (and its window) once, at setPlan time.
// Plain C++ (no widgets) so that tests can check each number against an independent computation.
#include "core/plan/planner.h"
#include "core/plan/score/score.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace routepack::views {

/// Whether the plan has method m (the paper's four always; Grouter and RoutePackComm when the
/// communication methods ran): PlanResult::method(m) != nullptr.
bool has_method(const PlanResult& plan, Method m);
/// The methods of a plan in report order (PlanResult::methods()): the paper's four, then the two
/// communication methods when they ran.
std::vector<Method> plan_methods(const PlanResult& plan);
/// The methods of plan_methods whose layout the plan holds (rows > 0): all of them in a planned or
/// restored plan; routepack and the communication methods in a plan read from its file alone
/// (plan_of_file, whose baselines have metrics but no layout). The layout views list these.
std::vector<Method> layout_methods(const PlanResult& plan);
/// The MethodResult of method m of a plan; std::out_of_range "method_of: the plan has no grouter
/// method (one node or no routes)" (or routepack+comm) when the plan lacks it.
const MethodResult& method_of(const PlanResult& plan, Method m);
/// The plan's deployed placement: placement.routepack (LPT refined for routepack's layout), or LPT
/// for a plan built without one (a placement-only plan of a load-only trace); its rank loads G[l][p]
/// (eq. 10) and CV_global (eq. 22) likewise.
const Placement& planned_placement(const PlanResult& plan);
const std::vector<std::uint64_t>& planned_rank_loads(const PlanResult& plan);
double planned_cv(const PlanResult& plan);
/// The placement method m runs on (PlanResult::placement_of of MethodResult::placement): identity,
/// LPT, routepack's refined placement, the grouter grouping or routepack+comm's placement. Same
/// errors as method_of.
const Placement& placement_of(const PlanResult& plan, Method m);
/// The token cap C of a plan (tokens): topology.token_cap when set, else (batch rule
/// samples_per_cell c, no cap) the token sum of the c longest samples of its window
/// (effective_token_cap of core/model/topology.h), which normalizes eqs. 11 and 14. Views read C
/// here, never topology.token_cap (0 for such a plan).
std::int64_t plan_token_cap(const PlanResult& plan);
/// An integer with its digits grouped by threes with commas, whatever the locale: 1286301 ->
/// "1,286,301", -42 -> "-42" (the docs' tables).
std::string grouped_count(std::int64_t v);
/// A communication figure the plan did not count although its window has routes (the run was
/// cancelled, or stopped by its time limit, before the communication stage): the CLI's words.
inline constexpr const char* kCommNotComputed = "n/a (not computed: the plan was cancelled)";

/// Text of a communication figure: grouped_count of the value, or kCommUnavailable
/// ("n/a (re-import the trace)") when the plan is on more than one node without routes, or
/// kCommNotComputed when its window has routes but the figure was not counted; "" on one node
/// (nothing to show).
std::string comm_figure_text(const PlanResult& plan, const std::optional<std::int64_t>& value);

/// Per MoE layer l: population std / mean over EP ranks of G[l][.] (the per-layer term of eq. 22;
/// 0 for a layer with no load). Mean over l equals cv_global(G, L, P). `G` is [L][P]; result [L].
std::vector<double> layer_rank_cv(std::span<const std::uint64_t> G, int L, int P);

/// G[l][p] / mean_p G[l][p], [L][P] row-major (eq. 10 normalized to the layer mean; NaN for a layer
/// with no load).
std::vector<double> normalized_rank_loads(std::span<const std::uint64_t> G, int L, int P);

/// Per-row-shard costs of the methods of one plan (cost_breakdown of each method's layout under its
/// own placement, placement_of: identity for baseline, LPT for reorder / karmarkar_karp / routepack,
/// the grouter grouping and routepack+comm's placement for those two), plus each method's straggler
/// shard argmax_g U[g] (lowest g on ties). Indexed by Method; the entries of methods the plan lacks
/// stay empty (shards 0).
struct PlanCosts {
    PerMethod<CostBreakdown> method;
    PerMethod<int> straggler;
    /// routepack's layout scored at the LPT placement (placement.lpt): the state between the packing
    /// search and the placement refined for the layout (equal to method[RoutePack] when routepack runs
    /// on LPT). Empty (shards 0) when the plan has no routepack layout.
    CostBreakdown routepack_at_lpt;
    int straggler_at_lpt = 0; ///< its argmax_g U[g] (lowest g on ties)
};

/// Largest n * L * E (counts) for which plan_costs() runs on the GUI thread (2^26).
inline constexpr std::uint64_t kMaxCostCounts = std::uint64_t{1} << 26;

/// Whether `window` is the plan's window in shape: same sample count and lengths, same L and E.
bool window_matches(const PlanResult& plan, const Trace& window);

/// Computes PlanCosts with make_packing_problem (one problem per placement) and cost_breakdown.
/// Returns nullptr when the window does not match the plan or n * L * E > kMaxCostCounts.
/// Cost O(n*L*E + M * (n*L*P + R*G*L*P + R*D*S)) for the plan's M methods.
std::shared_ptr<const PlanCosts> plan_costs(const PlanResult& plan, const Trace& window);

/// Token sum of every cell of a layout ([R*D], cell k = r*D + d), from the window's lengths; empty
/// when the layout is not well formed (Layout::well_formed). std::out_of_range when a cell names a
/// sample outside `samples`.
std::vector<std::int64_t> cell_tokens(const Layout& x, const std::vector<SampleInfo>& samples);

} // namespace routepack::views
