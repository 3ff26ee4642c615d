// CUDA side of the checkpoint rewriter: staging slots, gather kernel, bandwidth probe (see cuda_gather.h).
// Compiled by nvcc as CUDA 17; includes no C++20 core header.
#include "gpu/cuda/cuda_gather.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace routepack::gpu::cuda {

namespace {

constexpr unsigned kThreads = 256; // threads per block of the gather kernel

/// Throws Error("cuda: <call>: <error string>") unless `e` is cudaSuccess (and clears the error state).
void check(cudaError_t e, const char* call) {
    if (e == cudaSuccess) return;
    cudaGetLastError();
    throw Error(std::string("cuda: ") + call + ": " + cudaGetErrorString(e));
}

// CK(cudaMalloc, (&p, n)) calls cudaMalloc(&p, n) and names "cudaMalloc" in the error.
#define CK(fn, args) check(fn args, #fn)

__host__ __device__ inline void copy16(unsigned char* d, const unsigned char* s) {
#ifdef __CUDA_ARCH__
    *reinterpret_cast<uint4*>(d) = *reinterpret_cast<const uint4*>(s);
#else
    std::memcpy(d, s, 16);
#endif
}

/// Copies one table entry with `nthreads` cooperating threads, this being thread `tid`. When source and
/// destination addresses are equal modulo 16, the bytes up to the destination's next 16-byte boundary and
/// after its last one move bytewise and the rest as 16-byte vectors (four in flight per thread);
/// otherwise every byte moves alone (consecutive threads, consecutive bytes).
__host__ __device__ inline void copy_entry(const GatherEntry& e, const unsigned char* in, unsigned char* out,
                                           unsigned tid, unsigned nthreads) {
    const unsigned char* s = in + e.in_off;
    unsigned char* d = out + e.out_off;
    const std::uint64_t len = e.len;
    const auto sa = reinterpret_cast<std::uintptr_t>(s);
    const auto da = reinterpret_cast<std::uintptr_t>(d);
    if (((sa ^ da) & 15u) != 0) {
        for (std::uint64_t i = tid; i < len; i += nthreads)
            d[i] = s[i];
        return;
    }
    std::uint64_t head = (16u - (da & 15u)) & 15u;
    if (head > len) head = len;
    for (std::uint64_t i = tid; i < head; i += nthreads)
        d[i] = s[i];
    const std::uint64_t vecs = (len - head) >> 4;
    const unsigned char* sv = s + head;
    unsigned char* dv = d + head;
    std::uint64_t i = tid;
    for (; i + 3ull * nthreads < vecs; i += 4ull * nthreads) {
#ifdef __CUDA_ARCH__
        const uint4 a = reinterpret_cast<const uint4*>(sv)[i];
        const uint4 b = reinterpret_cast<const uint4*>(sv)[i + nthreads];
        const uint4 c = reinterpret_cast<const uint4*>(sv)[i + 2ull * nthreads];
        const uint4 f = reinterpret_cast<const uint4*>(sv)[i + 3ull * nthreads];
        reinterpret_cast<uint4*>(dv)[i] = a;
        reinterpret_cast<uint4*>(dv)[i + nthreads] = b;
        reinterpret_cast<uint4*>(dv)[i + 2ull * nthreads] = c;
        reinterpret_cast<uint4*>(dv)[i + 3ull * nthreads] = f;
#else
        for (std::uint64_t k = 0; k < 4; ++k)
            copy16(dv + 16 * (i + k * nthreads), sv + 16 * (i + k * nthreads));
#endif
    }
    for (; i < vecs; i += nthreads)
        copy16(dv + 16 * i, sv + 16 * i);
    for (std::uint64_t j = head + (vecs << 4) + tid; j < len; j += nthreads)
        d[j] = s[j];
}

/// One block per entry, grid-stride over the table.
__global__ void gather_kernel(const GatherEntry* table, std::uint64_t entries, const unsigned char* in,
                              unsigned char* out) {
    for (std::uint64_t k = blockIdx.x; k < entries; k += gridDim.x)
        copy_entry(table[k], in, out, threadIdx.x, blockDim.x);
}

unsigned grid_for(std::uint64_t entries) {
    return static_cast<unsigned>(std::min<std::uint64_t>(entries, static_cast<std::uint64_t>(INT_MAX)));
}

/// Launches gather_kernel on `stream` and checks the launch.
void launch_gather(const GatherEntry* table, std::uint64_t entries, const void* in, void* out, cudaStream_t stream) {
    if (entries == 0) return;
    gather_kernel<<<grid_for(entries), kThreads, 0, stream>>>(table, entries, static_cast<const unsigned char*>(in),
                                                              static_cast<unsigned char*>(out));
    check(cudaGetLastError(), "gather_kernel<<<>>>");
}

/// The kernel's work done on the host: every simulated thread of every entry, in order.
void emulate_gather(const GatherEntry* table, std::uint64_t entries, const void* in, void* out) {
    for (std::uint64_t k = 0; k < entries; ++k)
        for (unsigned t = 0; t < kThreads; ++t)
            copy_entry(table[k], static_cast<const unsigned char*>(in), static_cast<unsigned char*>(out), t, kThreads);
}

std::string device_name0() {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties, (&prop, 0));
    return prop.name;
}

void* host_alloc_emulated(std::size_t n) {
    // 256-byte aligned like cudaMalloc, so that address alignment equals offset alignment as on a device.
    const std::size_t rounded = (std::max<std::size_t>(n, 1) + 255) / 256 * 256;
    void* p = std::aligned_alloc(256, rounded);
    if (!p) throw Error("cuda: host emulation: out of memory allocating " + std::to_string(n) + " bytes");
    return p;
}

} // namespace

bool device_available(std::string* why, std::string* name) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (why) *why = std::string("no usable CUDA device (CUDA runtime: ") + cudaGetErrorString(e) + ")";
        return false;
    }
    if (n < 1) {
        if (why) *why = "no CUDA device found";
        return false;
    }
    if (name) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
            *name = prop.name;
        } else {
            cudaGetLastError();
            *name = "device 0";
        }
    }
    return true;
}

// ---------------------------------------------------------------------------------------------------
// Stager

struct Stager::Impl {
    struct Slot {
        std::byte* h_in = nullptr;
        std::byte* h_out = nullptr;
        GatherEntry* h_table = nullptr;
        void* d_in = nullptr;
        void* d_out = nullptr;
        GatherEntry* d_table = nullptr;
        cudaStream_t stream = nullptr;
        cudaEvent_t done = nullptr;
    };
    StagerConfig cfg;
    std::string device;
    Slot slots[kSlots];

    ~Impl() {
        for (Slot& s : slots) {
            if (cfg.host_emulation) {
                std::free(s.h_in);
                std::free(s.h_out);
                std::free(s.h_table);
                continue;
            }
            // Destructor: errors are ignored (and cleared) so that the first failure stays the reported one.
            if (s.stream) cudaStreamSynchronize(s.stream);
            if (s.done) cudaEventDestroy(s.done);
            if (s.stream) cudaStreamDestroy(s.stream);
            if (s.h_in) cudaFreeHost(s.h_in);
            if (s.h_out) cudaFreeHost(s.h_out);
            if (s.h_table) cudaFreeHost(s.h_table);
            if (s.d_in) cudaFree(s.d_in);
            if (s.d_out) cudaFree(s.d_out);
            if (s.d_table) cudaFree(s.d_table);
            cudaGetLastError();
        }
    }
};

Stager::Stager(const StagerConfig& config) : impl_(std::make_unique<Impl>()) {
    impl_->cfg = config;
    const std::size_t in_n = std::max<std::size_t>(config.input_bytes, 16);
    const std::size_t out_n = std::max<std::size_t>(config.output_bytes, 16);
    const std::size_t tab_n = std::max<std::size_t>(config.max_entries, 1) * sizeof(GatherEntry);
    if (config.host_emulation) {
        impl_->device = "host emulation";
        for (Impl::Slot& s : impl_->slots) {
            s.h_in = static_cast<std::byte*>(host_alloc_emulated(in_n));
            s.h_out = static_cast<std::byte*>(host_alloc_emulated(out_n));
            s.h_table = static_cast<GatherEntry*>(host_alloc_emulated(tab_n));
        }
        return;
    }
    CK(cudaSetDevice, (0));
    impl_->device = "cuda (" + device_name0() + ")";
    for (Impl::Slot& s : impl_->slots) {
        void* p = nullptr;
        CK(cudaHostAlloc, (&p, in_n, cudaHostAllocDefault));
        s.h_in = static_cast<std::byte*>(p);
        CK(cudaHostAlloc, (&p, out_n, cudaHostAllocDefault));
        s.h_out = static_cast<std::byte*>(p);
        CK(cudaHostAlloc, (&p, tab_n, cudaHostAllocDefault));
        s.h_table = static_cast<GatherEntry*>(p);
        CK(cudaMalloc, (&s.d_in, in_n));
        CK(cudaMalloc, (&s.d_out, out_n));
        CK(cudaMalloc, (&p, tab_n));
        s.d_table = static_cast<GatherEntry*>(p);
        CK(cudaStreamCreateWithFlags, (&s.stream, cudaStreamNonBlocking));
        CK(cudaEventCreateWithFlags, (&s.done, cudaEventDisableTiming));
    }
}

Stager::~Stager() = default;

std::byte* Stager::input(int slot) const {
    return impl_->slots[slot].h_in;
}
std::byte* Stager::output(int slot) const {
    return impl_->slots[slot].h_out;
}
GatherEntry* Stager::table(int slot) const {
    return impl_->slots[slot].h_table;
}
std::string Stager::device() const {
    return impl_->device;
}

void Stager::submit(int slot, std::size_t input_bytes, std::size_t entries, std::size_t output_bytes) {
    const StagerConfig& c = impl_->cfg;
    if (slot < 0 || slot >= kSlots || input_bytes > c.input_bytes || output_bytes > c.output_bytes ||
        entries > c.max_entries)
        throw Error("cuda: submit: slot " + std::to_string(slot) + " sizes beyond capacity (input " +
                    std::to_string(input_bytes) + "/" + std::to_string(c.input_bytes) + ", entries " +
                    std::to_string(entries) + "/" + std::to_string(c.max_entries) + ", output " +
                    std::to_string(output_bytes) + "/" + std::to_string(c.output_bytes) + ")");
    Impl::Slot& s = impl_->slots[slot];
    if (c.host_emulation) {
        emulate_gather(s.h_table, entries, s.h_in, s.h_out);
        return;
    }
    if (entries > 0)
        CK(cudaMemcpyAsync, (s.d_table, s.h_table, entries * sizeof(GatherEntry), cudaMemcpyHostToDevice, s.stream));
    if (input_bytes > 0) CK(cudaMemcpyAsync, (s.d_in, s.h_in, input_bytes, cudaMemcpyHostToDevice, s.stream));
    launch_gather(s.d_table, entries, s.d_in, s.d_out, s.stream);
    if (output_bytes > 0) CK(cudaMemcpyAsync, (s.h_out, s.d_out, output_bytes, cudaMemcpyDeviceToHost, s.stream));
    CK(cudaEventRecord, (s.done, s.stream));
}

void Stager::wait(int slot) {
    if (impl_->cfg.host_emulation) return;
    CK(cudaEventSynchronize, (impl_->slots[slot].done));
}

// ---------------------------------------------------------------------------------------------------
// Bandwidth probe

namespace {

/// Frees what it holds at scope exit (the probe's buffers, streams and events).
struct ProbeResources {
    void* host = nullptr;
    void* host2 = nullptr;
    void* a = nullptr;
    void* b = nullptr;
    GatherEntry* table = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    ~ProbeResources() {
        if (stream) cudaStreamSynchronize(stream);
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
        if (stream) cudaStreamDestroy(stream);
        if (host) cudaFreeHost(host);
        if (host2) cudaFreeHost(host2);
        if (a) cudaFree(a);
        if (b) cudaFree(b);
        if (table) cudaFree(table);
        cudaGetLastError();
    }
};

} // namespace

Bandwidth measure_bandwidth(std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes / 2048 * 2048, std::size_t{1} << 20);
    constexpr int kReps = 5;
    constexpr std::size_t kSlabs = 128; // experts of the gather probe
    Bandwidth r;
    CK(cudaSetDevice, (0));
    r.device = device_name0();

    ProbeResources p;
    CK(cudaHostAlloc, (&p.host, bytes, cudaHostAllocDefault));
    CK(cudaHostAlloc, (&p.host2, bytes, cudaHostAllocDefault));
    CK(cudaMalloc, (&p.a, bytes));
    CK(cudaMalloc, (&p.b, bytes));
    CK(cudaStreamCreateWithFlags, (&p.stream, cudaStreamNonBlocking));
    CK(cudaEventCreate, (&p.start));
    CK(cudaEventCreate, (&p.stop));

    // Distinct contents (a 64-bit mix of the word index), so that the gather check below means something.
    auto* words = static_cast<std::uint64_t*>(p.host);
    for (std::size_t i = 0; i < bytes / 8; ++i) {
        std::uint64_t z = i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        words[i] = z ^ (z >> 31);
    }

    // Best (shortest) of kReps timed runs after one warm-up, in seconds.
    auto best_of = [&](auto&& op) {
        op();
        CK(cudaStreamSynchronize, (p.stream));
        float best = std::numeric_limits<float>::max();
        for (int rep = 0; rep < kReps; ++rep) {
            CK(cudaEventRecord, (p.start, p.stream));
            op();
            CK(cudaEventRecord, (p.stop, p.stream));
            CK(cudaEventSynchronize, (p.stop));
            float ms = 0;
            CK(cudaEventElapsedTime, (&ms, p.start, p.stop));
            best = std::min(best, ms);
        }
        return std::max(static_cast<double>(best), 1e-6) / 1e3;
    };
    const double n = static_cast<double>(bytes);
    r.h2d_pinned_gbps =
        n / best_of([&] { CK(cudaMemcpyAsync, (p.a, p.host, bytes, cudaMemcpyHostToDevice, p.stream)); }) / 1e9;
    r.d2h_pinned_gbps =
        n / best_of([&] { CK(cudaMemcpyAsync, (p.host2, p.a, bytes, cudaMemcpyDeviceToHost, p.stream)); }) / 1e9;
    r.d2d_copy_gbps =
        2 * n / best_of([&] { CK(cudaMemcpyAsync, (p.b, p.a, bytes, cudaMemcpyDeviceToDevice, p.stream)); }) / 1e9;

    // Gather: output slab v receives input slab perm(v) = (37 v + 11) mod 128 (a bijection), tiled as the
    // rewrite executor tiles its pieces.
    const std::size_t slab = bytes / kSlabs;
    std::vector<std::size_t> perm(kSlabs);
    std::vector<GatherEntry> table;
    for (std::size_t v = 0; v < kSlabs; ++v) {
        perm[v] = (37 * v + 11) % kSlabs;
        append_tiles(table, GatherEntry{v * slab, perm[v] * slab, slab});
    }
    void* t = nullptr;
    CK(cudaMalloc, (&t, table.size() * sizeof(GatherEntry)));
    p.table = static_cast<GatherEntry*>(t);
    CK(cudaMemcpy, (p.table, table.data(), table.size() * sizeof(GatherEntry), cudaMemcpyHostToDevice));
    r.gather_kernel_gbps = 2 * n / best_of([&] { launch_gather(p.table, table.size(), p.a, p.b, p.stream); }) / 1e9;

    // Check the gather's result against the host copy of the input.
    CK(cudaMemcpyAsync, (p.host2, p.b, bytes, cudaMemcpyDeviceToHost, p.stream));
    CK(cudaStreamSynchronize, (p.stream));
    const auto* in = static_cast<const unsigned char*>(p.host);
    const auto* out = static_cast<const unsigned char*>(p.host2);
    for (std::size_t v = 0; v < kSlabs; ++v)
        if (std::memcmp(out + v * slab, in + perm[v] * slab, slab) != 0)
            throw Error("cuda: gather kernel check: output slab " + std::to_string(v) + " differs from input slab " +
                        std::to_string(perm[v]));
    return r;
}

} // namespace routepack::gpu::cuda
