#pragma once
// Minimum-cost assignment of a square matrix (Hungarian algorithm), shared by Grouter's node and
// expert matchings (core/plan/comm/grouter.cpp) and the relabeling of EP ranks across steps
// (core/plan/search/migration.cpp).
#include <cstddef>
#include <limits>
#include <vector>

namespace routepack {

/// Minimum-cost perfect matching of rows to columns of an n x n matrix given by `cost(i, j)` (rows and
/// columns 0..n-1; T an integer or floating type, the costs finite and far below the type's limit):
/// Kuhn-Munkres with row and column potentials, O(n^3) (H. W. Kuhn, "The Hungarian method for the
/// assignment problem", 1955; the shortest-augmenting-path form with potentials). Returns [n]: the
/// column of each row; ties go to the lowest column found first, so the result is deterministic.
template <class T, class Cost> std::vector<int> min_cost_assignment(int n, const Cost& cost) {
    const T inf =
        std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max() / 4;
    const auto at = [](int k) { return static_cast<std::size_t>(k); };
    std::vector<T> u(at(n) + 1, 0), v(at(n) + 1, 0);
    std::vector<int> match(at(n) + 1, 0), way(at(n) + 1, 0); // 1-based; match[j] = row of column j
    for (int i = 1; i <= n; ++i) {
        match[0] = i;
        int j0 = 0;
        std::vector<T> minv(at(n) + 1, inf);
        std::vector<char> used(at(n) + 1, 0);
        do {
            used[at(j0)] = 1;
            const int i0 = match[at(j0)];
            T delta = inf;
            int j1 = 0;
            for (int j = 1; j <= n; ++j) {
                if (used[at(j)]) continue;
                const T cur = cost(i0 - 1, j - 1) - u[at(i0)] - v[at(j)];
                if (cur < minv[at(j)]) {
                    minv[at(j)] = cur;
                    way[at(j)] = j0;
                }
                if (minv[at(j)] < delta) {
                    delta = minv[at(j)];
                    j1 = j;
                }
            }
            for (int j = 0; j <= n; ++j) {
                if (used[at(j)]) {
                    u[at(match[at(j)])] += delta;
                    v[at(j)] -= delta;
                } else {
                    minv[at(j)] -= delta;
                }
            }
            j0 = j1;
        } while (match[at(j0)] != 0);
        do {
            const int j1 = way[at(j0)];
            match[at(j0)] = match[at(j1)];
            j0 = j1;
        } while (j0 != 0);
    }
    std::vector<int> column(at(n), 0);
    for (int j = 1; j <= n; ++j)
        column[at(match[at(j)] - 1)] = j - 1;
    return column;
}

} // namespace routepack
