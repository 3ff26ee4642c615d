#pragma once
// Plain C++17 interface to the CUDA side of the checkpoint rewriter: staging buffers, streams
// and the gather kernel (gpu/cuda/cuda_gather.cu, compiled by nvcc as CUDA 17). Nothing here includes the C++20
// core headers; gpu/cuda/rewrite_cuda.cpp adapts a RewritePlan onto it.
//
// Model. The rewrite's output is cut into chunks. For each chunk the host packs the source bytes it needs
// into a pinned input buffer and describes, in a table of GatherEntry, where each byte range goes in the
// chunk's output. The device copies the input to device memory, runs the gather kernel (one block per
// table entry, grid-stride over entries; 16-byte vector moves on the part of an entry whose source and
// destination addresses are equal modulo 16, byte moves otherwise) and copies the output back into a
// pinned output buffer, which the host then writes to the output file. Two slots (buffer sets, each with
// its own stream) let the host fill one slot while the device works on the other.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace routepack::gpu::cuda {

/// One copy of the gather kernel: output buffer bytes [out_off, out_off+len) receive input buffer bytes
/// [in_off, in_off+len). Offsets are bytes from the start of the slot's device buffers.
struct GatherEntry {
    std::uint64_t out_off = 0;
    std::uint64_t in_off = 0;
    std::uint64_t len = 0;
};

/// Longest table entry: longer copies are split into tiles of this size so that one large piece is spread
/// over many thread blocks. A multiple of 16, so tiles of a piece keep its alignment relation.
inline constexpr std::uint64_t kTileBytes = 64u << 10;

/// Appends `e` to `table` split into tiles of at most kTileBytes (nothing for len 0).
inline void append_tiles(std::vector<GatherEntry>& table, const GatherEntry& e) {
    for (std::uint64_t off = 0; off < e.len; off += kTileBytes) {
        const std::uint64_t n = e.len - off < kTileBytes ? e.len - off : kTileBytes;
        table.push_back(GatherEntry{e.out_off + off, e.in_off + off, n});
    }
}

/// A CUDA runtime failure. what() is "cuda: <call>: <cudaGetErrorString>" (or "cuda: not available: ...").
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// True when the CUDA runtime reports a device; otherwise false and *why (when given) says why (the
/// runtime's error string, or "no CUDA device"). *name (when given) receives device 0's name. Never throws.
bool device_available(std::string* why, std::string* name);

/// Sizes of one Stager slot.
struct StagerConfig {
    std::size_t input_bytes = 0;  ///< capacity of each input buffer (bytes)
    std::size_t output_bytes = 0; ///< capacity of each output buffer (bytes)
    std::size_t max_entries = 0;  ///< capacity of each gather table (entries)
    /// Run on the host instead of a device: plain host buffers, and submit() runs the kernel's own
    /// per-entry copy routine for every simulated (block, thread) synchronously. For tests without a GPU.
    bool host_emulation = false;
};

/// Two slots of staging buffers (pinned host input / output / table, device input / output / table) with
/// one CUDA stream and one completion event per slot, on device 0. Move-free; not thread-safe.
class Stager {
public:
    static constexpr int kSlots = 2;

    /// Allocates everything (device memory: 2 x (input + output + table)). Throws Error naming the call.
    explicit Stager(const StagerConfig& config);
    /// Waits for outstanding work (errors ignored), then frees everything.
    ~Stager();
    Stager(const Stager&) = delete;
    Stager& operator=(const Stager&) = delete;

    /// The slot's pinned host buffers; only touch them when the slot is idle (never submitted, or after
    /// wait()).
    std::byte* input(int slot) const;
    std::byte* output(int slot) const;
    GatherEntry* table(int slot) const;
    /// "cuda (<device name>)", or "host emulation".
    std::string device() const;

    /// Enqueues on the slot's stream: table and the first `input_bytes` of the input to the device, the
    /// gather kernel over `entries` entries, the first `output_bytes` of the device output back to the host
    /// output buffer, then records the slot's event. Returns at once (emulation: runs synchronously).
    /// Every entry must lie inside the sizes given. Throws Error on a CUDA failure or a size beyond capacity.
    void submit(int slot, std::size_t input_bytes, std::size_t entries, std::size_t output_bytes);
    /// Blocks until the slot's last submit() has finished; its output buffer then holds the result.
    /// Throws Error on a CUDA failure (asynchronous errors of the kernel or copies surface here).
    void wait(int slot);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Bandwidth figures on device 0 (all in bytes per second / 1e9, best of several repetitions timed with
/// cudaEvents).
struct Bandwidth {
    double h2d_pinned_gbps = 0;    ///< pinned host -> device, bytes copied per second
    double d2h_pinned_gbps = 0;    ///< device -> pinned host
    double d2d_copy_gbps = 0;      ///< cudaMemcpy device -> device, bytes read + written per second
    double gather_kernel_gbps = 0; ///< gather kernel permuting 128 equal slabs, read + written per second
    std::string device;            ///< device 0's name
};

/// Measures on buffers of `bytes` (rounded down to a multiple of 2048, at least 1 MiB). Throws Error.
Bandwidth measure_bandwidth(std::size_t bytes);

} // namespace routepack::gpu::cuda
