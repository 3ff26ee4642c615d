#pragma once
// The compared methods and the placements they run on, each named once: the key the plan file, the
// run records and the sweep output write, and the label the studio shows (docs/cli.md, the walk-through's comparison).
#include <array>
#include <optional>
#include <string_view>

namespace routepack {

/// A compared method, in report order (PlanResult::methods(), the plan file's metrics, the studio's
/// tables): the paper's four, then the two communication-aware methods a plan has only on more than
/// one node with per-token routes.
enum class Method { Baseline, Reorder, KarmarkarKarp, RoutePack, Grouter, RoutePackComm };

/// One row of the method table.
struct MethodRow {
    Method method;
    const char* key;   ///< plan file metrics key, run_results name, sweep column
    const char* label; ///< what the studio shows
};

/// Every method, in Method order (kMethodTable[method_index(m)].method == m).
inline constexpr std::array<MethodRow, 6> kMethodTable{{
    {Method::Baseline, "baseline", "Baseline"},
    {Method::Reorder, "reorder", "Reorder"},
    {Method::KarmarkarKarp, "karmarkar_karp", "Karmarkar-Karp"},
    {Method::RoutePack, "routepack", "RoutePack"},
    {Method::Grouter, "grouter", "Grouter"},
    {Method::RoutePackComm, "routepack+comm", "RoutePack+comm"},
}};

/// Number of methods (every Method).
inline constexpr int kMethodCount = static_cast<int>(kMethodTable.size());
/// The paper's methods (Baseline .. RoutePack, indices 0..3): every plan has them.
inline constexpr int kPaperMethodCount = 4;

/// Position of m in kMethodTable (0..kMethodCount-1): the index of per-method arrays.
constexpr int method_index(Method m) {
    return static_cast<int>(m);
}
/// The method at position `index` of kMethodTable; std::out_of_range outside 0..kMethodCount-1.
Method method_at(int index);
/// "baseline", "reorder", "karmarkar_karp", "routepack", "grouter", "routepack+comm".
const char* method_key(Method m);
/// "Baseline", "Reorder", "Karmarkar-Karp", "RoutePack", "Grouter", "RoutePack+comm".
const char* method_label(Method m);
/// The method whose key is `key` (exact, case-sensitive); nullopt for any other text.
std::optional<Method> method_from_key(std::string_view key);
/// Whether m is one of the communication-aware methods (Grouter, RoutePackComm).
constexpr bool is_comm_method(Method m) {
    return m == Method::Grouter || m == Method::RoutePackComm;
}

/// One value per method, indexed by Method (values[method_index(m)]).
template <class T> struct PerMethod {
    std::array<T, kMethodCount> values{};
    T& operator[](Method m) { return values[static_cast<std::size_t>(method_index(m))]; }
    const T& operator[](Method m) const { return values[static_cast<std::size_t>(method_index(m))]; }
    auto begin() { return values.begin(); }
    auto end() { return values.end(); }
    auto begin() const { return values.begin(); }
    auto end() const { return values.end(); }
};

/// The placement a method runs on: identity (pi_l(e) = e), LPT (Algorithm 1), LPT refined for
/// routepack's layout (core/plan/search/placement_refine.h), Grouter's expert grouping, routepack+comm's
/// communication-aware placement (core/plan/comm/comm_placement.h).
enum class PlacementKind { Identity, Lpt, Refined, Grouter, Comm };

/// The plan file's "placement" of a method's metrics: "identity", "lpt", "refined", "grouter", "comm".
const char* placement_key(PlacementKind k);
/// The placement kind whose placement_key is `key` (exact); nullopt for any other text.
std::optional<PlacementKind> placement_from_key(std::string_view key);
/// The placement method m runs on in a plan without a refined or previous placement: identity for
/// the baseline, LPT for reorder, Karmarkar-Karp and routepack, the communication methods' own.
PlacementKind default_placement(Method m);

} // namespace routepack
