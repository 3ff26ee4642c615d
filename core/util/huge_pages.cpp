#include "core/util/huge_pages.h"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace routepack {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

void* huge_page_allocate(std::size_t bytes) {
    if (bytes < kHugePageThreshold) {
        void* small = std::malloc(bytes == 0 ? 1 : bytes);
        if (!small) throw std::bad_alloc();
        return small;
    }
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Advice only: a kernel without THP (or with it off) refuses and the block stays in 4 KiB pages.
    (void)::madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

void huge_page_free(void* p) noexcept {
    std::free(p); // both paths allocate with the C allocator (malloc / aligned_alloc)
}

} // namespace routepack
