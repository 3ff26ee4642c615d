#pragma once
// CPU executor of the checkpoint rewriter: executes a RewritePlan (gpu/rewrite/rewrite_plan.h) as
// byte-range copies on oneTBB (copy_file_range, else pread + pwrite through gpu/io/posix_io.h) in
// pieces of at most 8 MiB, with progress and cancellation between batches of about 256 MiB.
#include "gpu/rewrite/rewrite_plan.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

namespace routepack::gpu {

/// Executes a planned rewrite into `dir` (existing, empty) with the CPU executor. Returns bytes written.
std::uint64_t execute_rewrite_cpu(const RewritePlan& plan, const std::filesystem::path& dir, int workers,
                                  const RewriteProgressFn& progress, const std::atomic<bool>* cancel);

/// Compares every output file in `dir` with the bytes its segments name. Returns "" when equal, else the
/// first difference in words (file, tensor, offset).
std::string verify_rewrite(const RewritePlan& plan, const std::filesystem::path& dir,
                           const RewriteProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

} // namespace routepack::gpu
