#pragma once
// How optimizer-step windows are chosen from a trace's samples: the rules of `routepack window`
// (--first, --random, --groups) and of the studio's window dialog, in one place.
#include "core/trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace routepack {

/// Sample ids of a window and the definition text stored with it ("first 512 in numeric id order").
struct WindowSelection {
    std::vector<std::string> ids;
    std::string definition;
};

/// The first `n` samples in numeric-aware id order (natural_less). InputError "window: --first N
/// but trace 'T' has only M samples" when n exceeds the trace, "window: --first must be >= 1" for 0.
WindowSelection select_first(const std::vector<SampleInfo>& samples, std::size_t n, const std::string& trace);

/// `n` samples drawn without replacement by a splitmix64 Fisher-Yates prefix seeded with `seed`,
/// kept in import order. InputError when n is 0 or exceeds the trace.
WindowSelection select_random(const std::vector<SampleInfo>& samples, std::size_t n, std::uint64_t seed,
                              const std::string& trace);

/// Every sample whose GRPO group is one of `groups`, in import order; the definition lists the
/// groups comma-separated as given. InputError "window: trace 'T' has no GRPO groups", "window:
/// trace 'T' has no group 'G'", or for an empty list.
WindowSelection select_groups(const std::vector<SampleInfo>& samples, const std::vector<std::string>& groups,
                              const std::string& trace);

/// The distinct GRPO groups of the samples in first-appearance order (empty when none has one).
std::vector<std::string> sample_groups(const std::vector<SampleInfo>& samples);

} // namespace routepack
