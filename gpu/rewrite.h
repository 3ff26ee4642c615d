#pragma once
// Checkpoint rewriter: makes expert state follow a plan's placement. Qt-free. The umbrella of gpu/'s parts:
// gpu/rewrite (request and planning), gpu/cpu and gpu/cuda (executors), gpu/safetensors (the format).
//
// Conventions (shared/reference/checkpoint-formats.md section 4). A placement row pi_l maps logical
// expert e to physical slot v = pi_l(e); physical_to_logical_map[l][v] = e.
//   apply   (logical -> physical): output index v receives source index p2l[l][v]
//   inverse (physical -> logical): output index e receives source index pi_l(e)
// "Index" is the expert number in a per-expert tensor name (`experts.{e}.`) or the position on axis 0 of
// a stacked [E, ...] tensor. Tensor names, dtypes, shapes, shard files, every file's header bytes and
// model.safetensors.index.json stay exactly as in the source; only the bytes of expert-indexed tensors
// move. So apply then inverse reproduces every source file byte for byte, and an identity placement
// reproduces them in one step. Routers ([E, H]) and router biases / e_score_correction_bias ([E]) move
// only with `permute_router` (self-contained inference checkpoints), by the same index map.
//
// The rewrite is planned completely (every check of plan_rewrite, gpu/rewrite/rewrite_plan.h) before anything is
// written, then executed as a list of byte-range copies per output file, by the CPU (oneTBB, copy_file_range /
// pread+pwrite, bounded memory) or the CUDA executor (pinned staging, streams, device gather kernel). Output goes to a
// temporary sibling folder renamed into place when complete; the provenance sidecar
// `routepack-rewrite.json` (plan and placement fingerprints, direction, source fingerprint, layer map,
// physical_to_logical_map rows) is written into it.
#include "gpu/cpu/cpu_executor.h"
#include "gpu/rewrite/request.h"
#include "gpu/rewrite/rewrite_plan.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace routepack::gpu {

/// What a rewrite did.
struct RewriteReport {
    std::string device; ///< "cpu" or "cuda (<name>)"
    std::uint64_t bytes_written = 0;
    std::uint64_t moved_bytes = 0;
    int files = 0;
    int moved_tensors = 0;
    double seconds = 0; ///< execute (write + sync), without planning and verification
    double verify_seconds = 0;
    bool verified = false;
    double gb_per_s() const { return seconds > 0 ? static_cast<double>(bytes_written) / seconds / 1e9 : 0; }
};

/// Plans and executes: checks free space on the output's file system, writes into a temporary sibling
/// folder, syncs, renames it to req.output. With req.verify re-reads every output file and compares
/// each segment with its source. On any error or cancellation the temporary folder is removed and
/// nothing is left at req.output; InputError for bad input, Cancelled when `cancel` was set.
RewriteReport rewrite_checkpoint(const RewriteRequest& req, const RewriteProgressFn& progress = {},
                                 const std::atomic<bool>* cancel = nullptr);

} // namespace routepack::gpu
