// AVX-512F rank-load kernels of the score (8 x int64 lanes, native max, tails by mask; 8 layers'
// maxima reduced at once by an in-register transpose). This file alone is compiled with -mavx512f
// and its code runs only when the CPU reports AVX-512F. It includes no standard-library templates
// and keeps every helper in an anonymous namespace, so no AVX-512-compiled inline function can be
// merged by the linker into code that runs elsewhere. See score_kernels.h.
#include "core/plan/score/score_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

// GCC 12's intrinsics pass _mm512_undefined_epi32() as the pass-through of unmasked ops, which
// -Wmaybe-uninitialized reports spuriously; the values are never read.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace routepack::score_kernels {
namespace {

using i64 = std::int64_t;
using q32 = std::int32_t;
constexpr i64 kMin = -0x7fffffffffffffffLL - 1;

inline __m512i load8(const i64* p) {
    return _mm512_loadu_si512(static_cast<const void*>(p));
}
inline __m512i load8(__mmask8 m, const i64* p) {
    return _mm512_maskz_loadu_epi64(m, static_cast<const void*>(p));
}
/// 8 int32 demands widened to 8 int64 lanes.
inline __m512i load_q8(const q32* p) {
    return _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
/// The lanes in `m` only (a 512-bit masked load, AVX-512F only, never touching memory past them).
inline __m512i load_q8(__mmask8 m, const q32* p) {
    return _mm512_cvtepi32_epi64(
        _mm512_castsi512_si256(_mm512_maskz_loadu_epi32(static_cast<__mmask16>(m), static_cast<const void*>(p))));
}
inline __mmask8 tail_mask(int rem) {
    return static_cast<__mmask8>((1u << rem) - 1u);
}

/// d = q_j - q_i on 8 lanes (q_j = 0 for a relocation); the masked form reads only the lanes in m.
template <bool kSwap> inline __m512i delta8(const q32* qi, const q32* qj) {
    if constexpr (kSwap) return _mm512_sub_epi64(load_q8(qj), load_q8(qi));
    return _mm512_sub_epi64(_mm512_setzero_si512(), load_q8(qi));
}
template <bool kSwap> inline __m512i delta8(__mmask8 m, const q32* qi, const q32* qj) {
    if constexpr (kSwap) return _mm512_sub_epi64(load_q8(m, qj), load_q8(m, qi));
    return _mm512_sub_epi64(_mm512_setzero_si512(), load_q8(m, qi));
}

void add(i64* w, const q32* q, std::size_t n) {
    std::size_t x = 0;
    for (; x + 8 <= n; x += 8)
        _mm512_storeu_si512(w + x, _mm512_add_epi64(load8(w + x), load_q8(q + x)));
    for (; x < n; ++x)
        w[x] += q[x];
}

/// Per-layer maxima of 8 layers at once: lane x of the result = max over the 8 lanes of v[x]
/// (an in-register transpose: 7 maxima and 14 shuffles instead of 8 horizontal reductions).
inline __m512i transpose_max8(__m512i v0, __m512i v1, __m512i v2, __m512i v3, __m512i v4, __m512i v5, __m512i v6,
                              __m512i v7) {
    // Within 128-bit lanes k: (max(v0[2k], v0[2k+1]), max(v1[2k], v1[2k+1])), etc.
    const __m512i a = _mm512_max_epi64(_mm512_unpacklo_epi64(v0, v1), _mm512_unpackhi_epi64(v0, v1));
    const __m512i b = _mm512_max_epi64(_mm512_unpacklo_epi64(v2, v3), _mm512_unpackhi_epi64(v2, v3));
    const __m512i c = _mm512_max_epi64(_mm512_unpacklo_epi64(v4, v5), _mm512_unpackhi_epi64(v4, v5));
    const __m512i d = _mm512_max_epi64(_mm512_unpacklo_epi64(v6, v7), _mm512_unpackhi_epi64(v6, v7));
    // Lanes (0,1) and (2,3) combined: ab = [(v0,v1) over 0..3, (v0,v1) over 4..7, (v2,v3) 0..3, (v2,v3) 4..7].
    const __m512i ab = _mm512_max_epi64(_mm512_shuffle_i64x2(a, b, 0x88), _mm512_shuffle_i64x2(a, b, 0xDD));
    const __m512i cd = _mm512_max_epi64(_mm512_shuffle_i64x2(c, d, 0x88), _mm512_shuffle_i64x2(c, d, 0xDD));
    return _mm512_max_epi64(_mm512_shuffle_i64x2(ab, cd, 0x88), _mm512_shuffle_i64x2(ab, cd, 0xDD));
}

/// Lane-wise max of one layer's P values of w into 8 lanes (tail lanes masked).
inline __m512i layer_max8(const i64* w, int full, __mmask8 tm) {
    __m512i m = _mm512_set1_epi64(kMin);
    for (int p = 0; p < full; p += 8)
        m = _mm512_max_epi64(m, load8(w + p));
    if (tm) m = _mm512_mask_max_epi64(m, tm, m, load8(tm, w + full));
    return m;
}

/// One layer of a move: lane-wise max of wa + d and wb - d, d = q_j - q_i (q_j = 0 for a relocation).
template <bool kSwap>
inline void move_layer8(const i64* wa, const i64* wb, const q32* qi, const q32* qj, int full, __mmask8 tm, __m512i* ma,
                        __m512i* mb) {
    __m512i xa = _mm512_set1_epi64(kMin), xb = xa;
    for (int p = 0; p < full; p += 8) {
        const __m512i d = delta8<kSwap>(qi + p, kSwap ? qj + p : nullptr);
        xa = _mm512_max_epi64(xa, _mm512_add_epi64(load8(wa + p), d));
        xb = _mm512_max_epi64(xb, _mm512_sub_epi64(load8(wb + p), d));
    }
    if (tm) {
        const __m512i d = delta8<kSwap>(tm, qi + full, kSwap ? qj + full : nullptr);
        xa = _mm512_mask_max_epi64(xa, tm, xa, _mm512_add_epi64(load8(tm, wa + full), d));
        xb = _mm512_mask_max_epi64(xb, tm, xb, _mm512_sub_epi64(load8(tm, wb + full), d));
    }
    *ma = xa;
    *mb = xb;
}

i64 peaks(const i64* w, int L, int P, i64* per_layer) {
    const int full = P & ~7;
    const __mmask8 tm = tail_mask(P & 7);
    const std::size_t sP = static_cast<std::size_t>(P);
    __m512i acc = _mm512_setzero_si512();
    int l = 0;
    for (; l + 8 <= L; l += 8) {
        const i64* b = w + l * sP;
        const __m512i m = transpose_max8(layer_max8(b, full, tm), layer_max8(b + sP, full, tm),
                                         layer_max8(b + 2 * sP, full, tm), layer_max8(b + 3 * sP, full, tm),
                                         layer_max8(b + 4 * sP, full, tm), layer_max8(b + 5 * sP, full, tm),
                                         layer_max8(b + 6 * sP, full, tm), layer_max8(b + 7 * sP, full, tm));
        if (per_layer) _mm512_storeu_si512(per_layer + l, m);
        acc = _mm512_add_epi64(acc, m);
    }
    i64 sum = _mm512_reduce_add_epi64(acc);
    for (; l < L; ++l) {
        const i64 s = _mm512_reduce_max_epi64(layer_max8(w + l * sP, full, tm));
        if (per_layer) per_layer[l] = s;
        sum += s;
    }
    return sum;
}

/// Swap (kSwap) or relocation (q_j = 0): *sa = sum_l max_p (wa + d), *sb = sum_l max_p (wb - d).
template <bool kSwap>
void eval_move(const i64* wa, const i64* wb, const q32* qi, const q32* qj, int L, int P, i64* sa, i64* sb) {
    const int full = P & ~7;
    const __mmask8 tm = tail_mask(P & 7);
    const std::size_t sP = static_cast<std::size_t>(P);
    __m512i acc_a = _mm512_setzero_si512(), acc_b = acc_a;
    int l = 0;
    for (; l + 8 <= L; l += 8) {
        __m512i a[8], b[8];
#pragma GCC unroll 8
        for (int x = 0; x < 8; ++x) {
            const std::size_t o = (l + x) * sP;
            move_layer8<kSwap>(wa + o, wb + o, qi + o, kSwap ? qj + o : nullptr, full, tm, &a[x], &b[x]);
        }
        acc_a = _mm512_add_epi64(acc_a, transpose_max8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]));
        acc_b = _mm512_add_epi64(acc_b, transpose_max8(b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]));
    }
    i64 ta = _mm512_reduce_add_epi64(acc_a), tb = _mm512_reduce_add_epi64(acc_b);
    for (; l < L; ++l) {
        const std::size_t o = l * sP;
        __m512i a, b;
        move_layer8<kSwap>(wa + o, wb + o, qi + o, kSwap ? qj + o : nullptr, full, tm, &a, &b);
        ta += _mm512_reduce_max_epi64(a);
        tb += _mm512_reduce_max_epi64(b);
    }
    *sa = ta;
    *sb = tb;
}

/// wa += d, wb -= d, d = q_j - q_i (q_j = 0 for a relocation).
template <bool kSwap> void commit_move(i64* wa, i64* wb, const q32* qi, const q32* qj, std::size_t n) {
    std::size_t x = 0;
    for (; x + 8 <= n; x += 8) {
        const __m512i d = delta8<kSwap>(qi + x, kSwap ? qj + x : nullptr);
        _mm512_storeu_si512(wa + x, _mm512_add_epi64(load8(wa + x), d));
        _mm512_storeu_si512(wb + x, _mm512_sub_epi64(load8(wb + x), d));
    }
    for (; x < n; ++x) {
        const i64 d = (kSwap ? static_cast<i64>(qj[x]) : 0) - qi[x];
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

const Kernels kAvx512{"avx512", add, peaks, eval_move<true>, eval_relocate, commit_move<true>, commit_relocate};

} // namespace routepack::score_kernels

#pragma GCC diagnostic pop
#endif
