#pragma once
// The one conversion of an integer index (the planner counts samples, cells, rows, layers and ranks
// in int) to the std::size_t that std::vector and std::span take: tokens[idx(k)] instead of a
// spelled-out cast. Header-only, no cost: in a release build idx(i) is exactly the static_cast to
// std::size_t; a debug build asserts that a signed index is not negative.
#include <cassert>
#include <concepts>
#include <cstddef>
#include <type_traits>

namespace routepack {

/// `i` as a std::size_t (an element position, or a count that sizes a container); `i` is any integer
/// type and must be >= 0 (asserted in debug builds; in a release build a negative value wraps as
/// static_cast does). Not for a value that may still be negative: a size check of input not yet
/// validated (v.size() != n before n >= 0 is known), or a bounds check that relies on the wrap
/// (size_t(i) < n meaning 0 <= i < n); keep the cast there.
template <std::integral I> [[nodiscard]] constexpr std::size_t idx(I i) noexcept {
    if constexpr (std::is_signed_v<I>) assert(i >= 0);
    return static_cast<std::size_t>(i);
}

} // namespace routepack
