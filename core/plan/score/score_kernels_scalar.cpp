// Scalar rank-load kernels of the score. See score_kernels.h.
#include "core/plan/score/score_kernels.h"

#include <limits>

namespace routepack::score_kernels {
namespace {

using i64 = std::int64_t;
using q32 = std::int32_t;
constexpr i64 kMin = std::numeric_limits<i64>::min();

inline i64 max64(i64 a, i64 b) {
    return a < b ? b : a;
}

void add(i64* w, const q32* q, std::size_t n) {
    for (std::size_t x = 0; x < n; ++x)
        w[x] += q[x];
}

i64 peaks(const i64* w, int L, int P, i64* per_layer) {
    i64 sum = 0;
    for (int l = 0; l < L; ++l, w += P) {
        i64 m = kMin;
        for (int p = 0; p < P; ++p)
            m = max64(m, w[p]);
        if (per_layer) per_layer[l] = m;
        sum += m;
    }
    return sum;
}

/// Swap (kSwap) or relocation (q_j = 0): *sa = sum_l max_p (wa + d), *sb = sum_l max_p (wb - d),
/// d = q_j - q_i.
template <bool kSwap>
void eval_move(const i64* wa, const i64* wb, const q32* qi, const q32* qj, int L, int P, i64* sa, i64* sb) {
    i64 ta = 0, tb = 0;
    for (int l = 0; l < L; ++l, wa += P, wb += P, qi += P) {
        i64 ma = kMin, mb = kMin;
        for (int p = 0; p < P; ++p) {
            const i64 d = (kSwap ? static_cast<i64>(qj[p]) : 0) - qi[p];
            ma = max64(ma, wa[p] + d);
            mb = max64(mb, wb[p] - d);
        }
        if constexpr (kSwap) qj += P;
        ta += ma;
        tb += mb;
    }
    *sa = ta;
    *sb = tb;
}

/// wa += d, wb -= d, d = q_j - q_i (q_j = 0 for a relocation).
template <bool kSwap> void commit_move(i64* wa, i64* wb, const q32* qi, const q32* qj, std::size_t n) {
    for (std::size_t x = 0; x < n; ++x) {
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

const Kernels kScalar{"scalar", add, peaks, eval_move<true>, eval_relocate, commit_move<true>, commit_relocate};

} // namespace routepack::score_kernels
