#pragma once
// An allocator for large, written-once arrays (the rank demand q of a packing problem): blocks of
// 4 MiB or more are aligned to 2 MiB and offered to the kernel for transparent huge pages, and
// elements are default-initialised, so a resize(n) of ints leaves them unwritten and the first
// write (in parallel, by the code that fills the array) is the only pass over the memory.

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace routepack {

/// Allocates `bytes` for a large array: at or above `kHugePageThreshold` the block is 2 MiB aligned
/// and madvise(MADV_HUGEPAGE) is asked (Linux, THP in "madvise" or "always" mode; elsewhere, or when
/// refused, it is an ordinary block). std::bad_alloc when the memory is not there.
void* huge_page_allocate(std::size_t bytes);
/// Frees a block of huge_page_allocate.
void huge_page_free(void* p) noexcept;

/// Blocks at least this large take the huge-page path (smaller ones are plain malloc).
inline constexpr std::size_t kHugePageThreshold = std::size_t{4} << 20;

/// std::allocator-compatible, stateless. construct() without arguments default-initialises (no
/// zeroing for arithmetic types): callers that need zeros say so (assign(n, 0), resize(n, 0)).
template <class T> struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <class U> explicit HugePageAllocator(const HugePageAllocator<U>& /*other*/) noexcept {}

    T* allocate(std::size_t n) {
        if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
        return static_cast<T*>(huge_page_allocate(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t /*n*/) noexcept { huge_page_free(p); }

    template <class U> void construct(U* p) noexcept(noexcept(::new (static_cast<void*>(p)) U)) {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args> void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }

    template <class U> bool operator==(const HugePageAllocator<U>& /*other*/) const noexcept { return true; }
};

/// The rank demand's storage (PackingProblem::demand).
using DemandVector = std::vector<std::int32_t, HugePageAllocator<std::int32_t>>;

} // namespace routepack
