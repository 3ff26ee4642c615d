#pragma once
// The integer rank-load kernels of the exact score (core/plan/score/score.cpp, paper eq. 14 and the
// incremental score of section 4.1.2): one implementation per instruction set, each in its own
// file compiled with its own flags (score_kernels_scalar.cpp: the baseline; score_kernels_avx2.cpp:
// -mavx2; score_kernels_avx512.cpp: -mavx512f), chosen at run time by CPU support. All results are
// exact int64, identical on every ISA (tests/tst_score.cpp runs every kernel set on the same cases).
// Private to core/plan.
//
// A row-shard's W block is [L][P] contiguous int64 (tokens routed to each EP rank per MoE layer);
// q_i is sample i's [L][P] demand row (int32, widened to int64 before any sum). Swap and relocation
// share one loop: a relocation of i from a to b is a swap with q_j = 0.
#include <cstddef>
#include <cstdint>

namespace routepack::score_kernels {

/// One ISA's kernel set.
struct Kernels {
    const char* name; ///< "scalar", "avx2", "avx512"
    /// w[x] += q[x], x < n.
    void (*add)(std::int64_t* w, const std::int32_t* q, std::size_t n);
    /// sum_l max_p w[l][p]; per_layer[l] = max_p w[l][p] when non-null.
    std::int64_t (*peaks)(const std::int64_t* w, int L, int P, std::int64_t* per_layer);
    /// Swap i (in a) <-> j (in b), d = q_j - q_i: *sa = sum_l max_p (wa + d), *sb = sum_l max_p (wb - d).
    void (*eval_swap)(const std::int64_t* wa, const std::int64_t* wb, const std::int32_t* qi, const std::int32_t* qj,
                      int L, int P, std::int64_t* sa, std::int64_t* sb);
    /// Relocate i from a to b: *sa = sum_l max_p (wa - q_i), *sb = sum_l max_p (wb + q_i).
    void (*eval_relocate)(const std::int64_t* wa, const std::int64_t* wb, const std::int32_t* qi, int L, int P,
                          std::int64_t* sa, std::int64_t* sb);
    /// wa += q_j - q_i, wb -= q_j - q_i.
    void (*commit_swap)(std::int64_t* wa, std::int64_t* wb, const std::int32_t* qi, const std::int32_t* qj,
                        std::size_t n);
    /// wa -= q_i, wb += q_i.
    void (*commit_relocate)(std::int64_t* wa, std::int64_t* wb, const std::int32_t* qi, std::size_t n);
};

/// Plain C++ (every CPU).
extern const Kernels kScalar;
#if defined(__x86_64__)
/// 4 x int64 lanes (max by compare + blend, tails scalar); only called when the CPU has AVX2.
extern const Kernels kAvx2;
/// 8 x int64 lanes (native max, tails by mask, 8 layers reduced by an in-register transpose); only
/// called when the CPU has AVX-512F.
extern const Kernels kAvx512;
#endif

} // namespace routepack::score_kernels
