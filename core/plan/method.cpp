#include "core/plan/method.h"

#include <stdexcept>
#include <string>

namespace routepack {

static_assert([] {
    for (std::size_t i = 0; i < kMethodTable.size(); ++i)
        if (static_cast<std::size_t>(method_index(kMethodTable[i].method)) != i) return false;
    return true;
}());

namespace {

/// The table row of m (std::out_of_range for a value outside the enumeration).
const MethodRow& row_of(Method m) {
    return kMethodTable.at(static_cast<std::size_t>(method_index(m)));
}

} // namespace

Method method_at(int index) {
    if (index < 0 || index >= kMethodCount)
        throw std::out_of_range("method index " + std::to_string(index) + " outside 0.." +
                                std::to_string(kMethodCount - 1));
    return kMethodTable[static_cast<std::size_t>(index)].method;
}

const char* method_key(Method m) {
    return row_of(m).key;
}

const char* method_label(Method m) {
    return row_of(m).label;
}

std::optional<Method> method_from_key(std::string_view key) {
    for (const MethodRow& row : kMethodTable)
        if (key == row.key) return row.method;
    return std::nullopt;
}

const char* placement_key(PlacementKind k) {
    switch (k) {
    case PlacementKind::Identity:
        return "identity";
    case PlacementKind::Lpt:
        return "lpt";
    case PlacementKind::Refined:
        return "refined";
    case PlacementKind::Grouter:
        return "grouter";
    case PlacementKind::Comm:
        return "comm";
    }
    throw std::out_of_range("placement_key: not a placement kind");
}

std::optional<PlacementKind> placement_from_key(std::string_view key) {
    for (const PlacementKind k : {PlacementKind::Identity, PlacementKind::Lpt, PlacementKind::Refined,
                                  PlacementKind::Grouter, PlacementKind::Comm})
        if (key == placement_key(k)) return k;
    return std::nullopt;
}

PlacementKind default_placement(Method m) {
    switch (m) {
    case Method::Baseline:
        return PlacementKind::Identity;
    case Method::Reorder:
    case Method::KarmarkarKarp:
    case Method::RoutePack:
        return PlacementKind::Lpt;
    case Method::Grouter:
        return PlacementKind::Grouter;
    case Method::RoutePackComm:
        return PlacementKind::Comm;
    }
    throw std::out_of_range("default_placement: not a method");
}

} // namespace routepack
