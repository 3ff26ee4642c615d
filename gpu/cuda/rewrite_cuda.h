#pragma once
// CUDA executor of the checkpoint rewriter. Qt-free. Executes a RewritePlan (gpu/rewrite.h) with
// the same output bytes as execute_rewrite_cpu, staging through the GPU:
//
// The output files are cut into chunks of at most StagedRewriteOptions::chunk_bytes output bytes (a
// segment longer than a chunk is split). Per chunk the host reads the source bytes the chunk needs with
// pread, in source order (pieces sorted by source file and offset, contiguous ones read at once), into a
// pinned input buffer; the device copies it in, a gather kernel writes every piece to its output position
// (table of out_off / in_off / len tiles, 16-byte vector moves where alignment allows), the result comes
// back into a pinned output buffer and the host pwrites it at the chunk's output offset. Two buffer sets and
// two streams, three stages in flight: while the device works on chunk k, the calling thread reads chunk
// k+1 and a writer thread writes chunk k-1 (reads and writes of a chunk are split into parallel 4 MiB
// preads / pwrites on oneTBB). Each output file is fdatasync'ed after its last chunk. Memory: about
// 2 x (2 x chunk_bytes + tables) of device memory and as much pinned host memory.
//
// The CUDA part lives in gpu/cuda/cuda_gather.cu (C++17, see gpu/cuda/cuda_gather.h); in a build without
// nvcc (cuda_compiled() false, gpu/cuda/device.h) every function here reports "not available".
#include "gpu/rewrite/rewrite_plan.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace routepack::gpu {

/// Executes a planned rewrite into `dir` (an existing, empty folder) on CUDA device 0: writes every output
/// safetensors file of plan.outputs (as execute_rewrite_cpu, not other_files nor the sidecar, which
/// rewrite_checkpoint adds) with the same bytes as execute_rewrite_cpu. Returns the bytes written (the sum
/// of the outputs' sizes). Sets *device (when given) to "cuda (<device name>)". Progress: stage "write",
/// bytes done, bytes total, after every chunk. Throws routepack::InputError "cuda: <call>:
/// <cudaGetErrorString>" on any CUDA failure, "cuda: not available: <why>" when built without CUDA or
/// without a device, an InputError naming the file on an I/O failure or a malformed plan (segments not
/// covering [0, size) in order, a source range beyond its file), and routepack::Cancelled (as
/// execute_rewrite_cpu) when *cancel is set (checked before every chunk). On an error the files written so
/// far stay in `dir` (the caller removes the temporary folder).
std::uint64_t execute_rewrite_cuda(const RewritePlan& plan, const std::filesystem::path& dir,
                                   const RewriteProgressFn& progress, const std::atomic<bool>* cancel,
                                   std::string* device);

/// True when built with CUDA and the runtime reports a device; otherwise false and *why (when given)
/// says which ("built without CUDA", or the runtime's reason such as "no CUDA-capable device is detected").
/// Never throws.
bool cuda_rewrite_available(std::string* why);

/// Device bandwidth figures (GB/s = 1e9 bytes per second).
struct CudaBandwidth {
    double h2d_pinned_gbps = 0;    ///< pinned host -> device, bytes copied per second
    double d2h_pinned_gbps = 0;    ///< device -> pinned host
    double d2d_copy_gbps = 0;      ///< cudaMemcpy device -> device, bytes read + written per second
    double gather_kernel_gbps = 0; ///< the rewrite's gather kernel permuting 128 slabs, read + written per second
    std::string device;            ///< device 0's name
};

/// Measures on buffers of `bytes` (at least 1 MiB; pinned host buffer and two device buffers of that
/// size): every figure is the best of 5 cudaEvent-timed repetitions after a warm-up. Also checks the
/// gather kernel's result. Throws InputError "cuda: ..." on a CUDA failure or when CUDA is not available.
CudaBandwidth measure_cuda_bandwidth(std::size_t bytes);

/// Knobs of the staged executor behind execute_rewrite_cuda (tests and benchmarks).
struct StagedRewriteOptions {
    std::uint64_t chunk_bytes = 64ull << 20; ///< output bytes per chunk, >= 16 (smaller values are raised)
    std::size_t max_pieces = 1u << 16;       ///< contiguous copies per chunk, >= 1 (a chunk ends early at this count)
    /// Run the gather kernel's code on the host instead of a device (same chunking, packing, tables and
    /// I/O; no GPU needed, but a CUDA build is). For tests on machines without a GPU.
    bool host_emulation = false;
};

/// execute_rewrite_cuda with explicit options. With host_emulation no device is needed, *device is set to
/// "host emulation". Same errors as execute_rewrite_cuda.
std::uint64_t execute_rewrite_staged(const RewritePlan& plan, const std::filesystem::path& dir,
                                     const StagedRewriteOptions& options, const RewriteProgressFn& progress,
                                     const std::atomic<bool>* cancel, std::string* device);

} // namespace routepack::gpu
