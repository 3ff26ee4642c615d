#pragma once
// Limits that keep memory tied to real data: every size an input declares (a trace, a topology, a
// model description) is checked against them before anything is allocated from it.
#include <cstdint>

namespace routepack {

inline constexpr std::int64_t kMaxTokens = std::int64_t(1) << 40;        ///< t_i, token counts, start_len
inline constexpr std::uint64_t kMaxRouteValues = std::uint64_t(1) << 29; ///< rows x layers x top_k of one sample
/// Replay rows (routed tokens) of one sample: 16,777,216, sixteen times the longest contexts models
/// are trained on; a file declaring more is refused before its routes are read.
inline constexpr std::int64_t kMaxRouteRows = std::int64_t(1) << 24;
inline constexpr int kMaxLayerId = 99999; ///< absolute decoder-layer ids

} // namespace routepack
