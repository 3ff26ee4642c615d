#pragma once
// How optimizer-step windows are chosen from a trace's samples: the rules of `routepack window`
// (--first, --random, --groups) and of the studio's window dialog, in one place.
#include "core/model/trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace routepack {

/// Sample ids of a window and the definition text stored with it ("first 512 in numeric id order").
struct WindowSelection {
    std::vector<std::string> ids;
    std::string definition;
};

/// The first `n` samples in numeric-aware id order (natural_less). InputError "window: first N
/// but trace 'T' has only M samples" when n exceeds the trace, "window: first must be >= 1 (got 0)"
/// for 0; both carry the Setting "first" (value N in the first).
WindowSelection select_first(const std::vector<SampleInfo>& samples, std::size_t n, const std::string& trace);

/// `n` samples drawn without replacement, kept in import order: the first n steps of a Fisher-Yates
/// shuffle of the sample positions whose step i swaps position i with i + uniform_below(size - i)
/// over the splitmix64 stream from seeds::window_sampler(seed) (uniform: no modulo bias).
/// InputError as select_first's, about the Setting "random".
WindowSelection select_random(const std::vector<SampleInfo>& samples, std::size_t n, std::uint64_t seed,
                              const std::string& trace);

/// Every sample whose GRPO group is one of `groups`, in import order; the definition lists the
/// groups comma-separated as given. InputError "window: trace 'T' has no GRPO groups", "window:
/// trace 'T' has no group 'G'", or for an empty list.
WindowSelection select_groups(const std::vector<SampleInfo>& samples, const std::vector<std::string>& groups,
                              const std::string& trace);

/// Consecutive windows of a whole run: the trace's samples in import order cut into windows of `n`
/// samples (steps of a training run, in order). The last window holds the remainder when n does not
/// divide the sample count; its definition says so ("split 128: samples 513-599 of 599, remainder
/// of 87"). Definitions of full windows: "split 128: samples 1-128 of 599". InputError "window:
/// split must be >= 1 (got 0)" or "window: split N but trace 'T' has only M samples" (Setting "split").
std::vector<WindowSelection> split_consecutive(const std::vector<SampleInfo>& samples, std::size_t n,
                                               const std::string& trace);

/// Consecutive windows of `g` whole GRPO groups each (groups in first-appearance order, samples of a
/// window in import order); the last holds the remaining groups when g does not divide the group
/// count ("split-groups 4: groups 9-10 of 10, remainder of 2"); samples without a group belong to
/// no window. InputError "window: trace 'T' has
/// no GRPO groups", "window: split_groups must be >= 1 (got 0)", or "window: split_groups G but trace 'T' has
/// only M GRPO groups" (Setting "split_groups").
std::vector<WindowSelection> split_groups(const std::vector<SampleInfo>& samples, std::size_t g,
                                          const std::string& trace);

/// Names of `count` consecutive split windows: "<prefix>-000", "<prefix>-001", ... in run order, the
/// number zero-padded to at least three digits (more when count - 1 needs them). The names of
/// `routepack window --split` / `--split-groups` and of the studio's window dialog.
std::vector<std::string> split_window_names(const std::string& prefix, std::size_t count);

/// The distinct GRPO groups of the samples in first-appearance order (empty when none has one).
std::vector<std::string> sample_groups(const std::vector<SampleInfo>& samples);

} // namespace routepack
