// AVX2 rank-load kernels of the score (4 x int64 lanes; max by compare + blend, tails scalar).
// This file alone is compiled with -mavx2 and its code runs only when the CPU reports AVX2. It
// includes no standard-library templates and keeps every helper in an anonymous namespace, so
// no AVX2-compiled inline function can be merged by the linker into code that runs elsewhere.
// See score_kernels.h.
#include "core/plan/score/score_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace routepack::score_kernels {
namespace {

using i64 = std::int64_t;
using q32 = std::int32_t;
constexpr i64 kMin = -0x7fffffffffffffffLL - 1;

inline i64 max64(i64 a, i64 b) {
    return a < b ? b : a;
}
inline __m256i max4(__m256i a, __m256i b) {
    return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b));
}
inline i64 hmax4(__m256i v) {
    alignas(32) i64 t[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(t), v);
    return max64(max64(t[0], t[1]), max64(t[2], t[3]));
}
inline __m256i load4(const i64* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
inline void store4(i64* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
/// 4 int32 demands widened to 4 int64 lanes.
inline __m256i load_q4(const q32* p) {
    return _mm256_cvtepi32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

/// d = q_j - q_i on 4 lanes (q_j = 0 for a relocation).
template <bool kSwap> inline __m256i delta4(const q32* qi, const q32* qj) {
    if constexpr (kSwap) return _mm256_sub_epi64(load_q4(qj), load_q4(qi));
    return _mm256_sub_epi64(_mm256_setzero_si256(), load_q4(qi));
}
template <bool kSwap> inline i64 delta1(const q32* qi, const q32* qj, std::size_t p) {
    if constexpr (kSwap) return static_cast<i64>(qj[p]) - qi[p];
    return -static_cast<i64>(qi[p]);
}

void add(i64* w, const q32* q, std::size_t n) {
    std::size_t x = 0;
    for (; x + 4 <= n; x += 4)
        store4(w + x, _mm256_add_epi64(load4(w + x), load_q4(q + x)));
    for (; x < n; ++x)
        w[x] += q[x];
}

i64 peaks(const i64* w, int L, int P, i64* per_layer) {
    i64 sum = 0;
    const __m256i lo = _mm256_set1_epi64x(kMin);
    for (int l = 0; l < L; ++l, w += P) {
        __m256i m = lo;
        int p = 0;
        for (; p + 4 <= P; p += 4)
            m = max4(m, load4(w + p));
        i64 s = hmax4(m);
        for (; p < P; ++p)
            s = max64(s, w[p]);
        if (per_layer) per_layer[l] = s;
        sum += s;
    }
    return sum;
}

/// Swap (kSwap) or relocation (q_j = 0): *sa = sum_l max_p (wa + d), *sb = sum_l max_p (wb - d).
template <bool kSwap>
void eval_move(const i64* wa, const i64* wb, const q32* qi, const q32* qj, int L, int P, i64* sa, i64* sb) {
    i64 ta = 0, tb = 0;
    const __m256i lo = _mm256_set1_epi64x(kMin);
    for (int l = 0; l < L; ++l, wa += P, wb += P, qi += P) {
        __m256i ma = lo, mb = lo;
        int p = 0;
        for (; p + 4 <= P; p += 4) {
            const __m256i d = delta4<kSwap>(qi + p, kSwap ? qj + p : nullptr);
            ma = max4(ma, _mm256_add_epi64(load4(wa + p), d));
            mb = max4(mb, _mm256_sub_epi64(load4(wb + p), d));
        }
        i64 xa = hmax4(ma), xb = hmax4(mb);
        for (; p < P; ++p) {
            const i64 d = delta1<kSwap>(qi, qj, static_cast<std::size_t>(p));
            xa = max64(xa, wa[p] + d);
            xb = max64(xb, wb[p] - d);
        }
        if constexpr (kSwap) qj += P;
        ta += xa;
        tb += xb;
    }
    *sa = ta;
    *sb = tb;
}

/// wa += d, wb -= d, d = q_j - q_i (q_j = 0 for a relocation).
template <bool kSwap> void commit_move(i64* wa, i64* wb, const q32* qi, const q32* qj, std::size_t n) {
    std::size_t x = 0;
    for (; x + 4 <= n; x += 4) {
        const __m256i d = delta4<kSwap>(qi + x, kSwap ? qj + x : nullptr);
        store4(wa + x, _mm256_add_epi64(load4(wa + x), d));
        store4(wb + x, _mm256_sub_epi64(load4(wb + x), d));
    }
    for (; x < n; ++x) {
        const i64 d = delta1<kSwap>(qi, qj, x);
        wa[x] += d;
        wb[x] -= d;
    }
}

void eval_relocate(const i64* wa, const i64* wb, const q32* qi, int L, int P, i64* sa, i64* sb) {
    eval_move<false>(wa, wb, qi, nullptr, L, P, sa, sb);
}
void commit_relocate(i64* wa, i64* wb, const q32* qi, std::size_t n) {
    commit_move<false>(wa, wb, qi, nullptr, n);
}

} // namespace

const Kernels kAvx2{"avx2", add, peaks, eval_move<true>, eval_relocate, commit_move<true>, commit_relocate};

} // namespace routepack::score_kernels
#endif
