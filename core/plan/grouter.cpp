#include "core/plan/grouter.h"

#include "core/util/rng.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace routepack {

namespace {

double sq_dist(const double* a, const double* b, int E) {
    double s = 0;
    for (int e = 0; e < E; ++e)
        s += (a[e] - b[e]) * (a[e] - b[e]);
    return s;
}

/// A cluster of affinity vectors: its size and mean.
struct Cluster {
    double size = 0;
    std::vector<double> mean;
};

/// k-means++ seeding then Lloyd iterations over the rows `pts` (indices into phi [n][E]). The
/// assignment step runs its points in parallel (each point's nearest center alone: the result does
/// not depend on the workers).
std::vector<Cluster> kmeans(const std::vector<double>& phi, int E, const std::vector<int>& pts, int k, int iterations,
                            Rng& rng) {
    const int n = static_cast<int>(pts.size());
    std::vector<std::vector<double>> centers;
    std::vector<double> d2(static_cast<std::size_t>(n), std::numeric_limits<double>::infinity());
    auto row = [&](int j) { return phi.data() + static_cast<std::size_t>(pts[static_cast<std::size_t>(j)]) * E; };
    int first = static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
    centers.emplace_back(row(first), row(first) + E);
    while (static_cast<int>(centers.size()) < k) {
        double total = 0;
        for (int j = 0; j < n; ++j) {
            d2[static_cast<std::size_t>(j)] =
                std::min(d2[static_cast<std::size_t>(j)], sq_dist(row(j), centers.back().data(), E));
            total += d2[static_cast<std::size_t>(j)];
        }
        if (!(total > 0)) break; // every point sits on a center: fewer clusters
        double x = rng.uniform() * total;
        int pick = n - 1;
        for (int j = 0; j < n; ++j) {
            x -= d2[static_cast<std::size_t>(j)];
            if (x < 0 && d2[static_cast<std::size_t>(j)] > 0) {
                pick = j;
                break;
            }
        }
        if (!(d2[static_cast<std::size_t>(pick)] > 0)) break;
        centers.emplace_back(row(pick), row(pick) + E);
    }
    const int K = static_cast<int>(centers.size());
    std::vector<int> of(static_cast<std::size_t>(n), -1);
    std::vector<Cluster> cl(static_cast<std::size_t>(K));
    for (int it = 0; it <= iterations; ++it) {
        std::atomic<bool> changed{false};
        tbb::parallel_for(tbb::blocked_range<int>(0, n, 16), [&](const tbb::blocked_range<int>& range) {
            bool moved = false;
            for (int j = range.begin(); j != range.end(); ++j) {
                int best = 0;
                double bd = std::numeric_limits<double>::infinity();
                for (int c = 0; c < K; ++c) {
                    const double d = sq_dist(row(j), centers[static_cast<std::size_t>(c)].data(), E);
                    if (d < bd) {
                        bd = d;
                        best = c;
                    }
                }
                if (of[static_cast<std::size_t>(j)] != best) moved = true;
                of[static_cast<std::size_t>(j)] = best;
            }
            if (moved) changed.store(true, std::memory_order_relaxed);
        });
        for (auto& c : cl) {
            c.size = 0;
            c.mean.assign(static_cast<std::size_t>(E), 0.0);
        }
        for (int j = 0; j < n; ++j) {
            Cluster& c = cl[static_cast<std::size_t>(of[static_cast<std::size_t>(j)])];
            c.size += 1;
            for (int e = 0; e < E; ++e)
                c.mean[static_cast<std::size_t>(e)] += row(j)[e];
        }
        for (int c = 0; c < K; ++c) {
            Cluster& x = cl[static_cast<std::size_t>(c)];
            if (x.size > 0)
                for (double& v : x.mean)
                    v /= x.size;
            else
                x.mean = centers[static_cast<std::size_t>(c)];
            centers[static_cast<std::size_t>(c)] = x.mean;
        }
        if (!changed.load() && it > 0) break;
    }
    std::vector<Cluster> out;
    for (auto& c : cl)
        if (c.size > 0) out.push_back(std::move(c));
    return out;
}

/// Ward agglomerative merging of clusters down to `target` (padded with empty clusters below it).
void ward_merge(std::vector<Cluster>& cl, int target, int E) {
    while (static_cast<int>(cl.size()) > target) {
        std::size_t ba = 0, bb = 1;
        double bd = std::numeric_limits<double>::infinity();
        for (std::size_t a = 0; a < cl.size(); ++a)
            for (std::size_t b = a + 1; b < cl.size(); ++b) {
                const double w = cl[a].size * cl[b].size / (cl[a].size + cl[b].size);
                const double d = w * sq_dist(cl[a].mean.data(), cl[b].mean.data(), E);
                if (d < bd) {
                    bd = d;
                    ba = a;
                    bb = b;
                }
            }
        Cluster& a = cl[ba];
        const Cluster& b = cl[bb];
        const double s = a.size + b.size;
        for (int e = 0; e < E; ++e)
            a.mean[static_cast<std::size_t>(e)] =
                (a.mean[static_cast<std::size_t>(e)] * a.size + b.mean[static_cast<std::size_t>(e)] * b.size) / s;
        a.size = s;
        cl.erase(cl.begin() + static_cast<std::ptrdiff_t>(bb));
    }
    while (static_cast<int>(cl.size()) < target)
        cl.push_back(Cluster{0, std::vector<double>(static_cast<std::size_t>(E), 0.0)});
}

} // namespace

std::vector<double> affinity_vectors(const Trace& window, int l) {
    const int E = window.model.experts;
    std::vector<double> phi(window.size() * static_cast<std::size_t>(E), 0.0);
    for (std::size_t i = 0; i < window.size(); ++i) {
        const auto rows = window.samples[i].routed_rows;
        if (rows <= 0) continue;
        for (int e = 0; e < E; ++e)
            phi[i * E + static_cast<std::size_t>(e)] =
                static_cast<double>(window.count(i, l, e)) / static_cast<double>(rows);
    }
    return phi;
}

std::vector<int> hungarian_max(const std::vector<double>& weight, int n) {
    if (n < 0 || weight.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(n))
        throw std::invalid_argument("hungarian_max: weight is not " + std::to_string(n) + " x " + std::to_string(n));
    // Minimizes cost = -weight (Kuhn-Munkres with row/column potentials, 1-based, rows into columns).
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> u(static_cast<std::size_t>(n) + 1, 0), v(static_cast<std::size_t>(n) + 1, 0);
    std::vector<int> p(static_cast<std::size_t>(n) + 1, 0), way(static_cast<std::size_t>(n) + 1, 0);
    auto cost = [&](int i, int j) { return -weight[static_cast<std::size_t>(i - 1) * n + (j - 1)]; };
    for (int i = 1; i <= n; ++i) {
        p[0] = i;
        int j0 = 0;
        std::vector<double> minv(static_cast<std::size_t>(n) + 1, inf);
        std::vector<char> used(static_cast<std::size_t>(n) + 1, 0);
        do {
            used[static_cast<std::size_t>(j0)] = 1;
            const int i0 = p[static_cast<std::size_t>(j0)];
            double delta = inf;
            int j1 = 0;
            for (int j = 1; j <= n; ++j) {
                if (used[static_cast<std::size_t>(j)]) continue;
                const double cur = cost(i0, j) - u[static_cast<std::size_t>(i0)] - v[static_cast<std::size_t>(j)];
                if (cur < minv[static_cast<std::size_t>(j)]) {
                    minv[static_cast<std::size_t>(j)] = cur;
                    way[static_cast<std::size_t>(j)] = j0;
                }
                if (minv[static_cast<std::size_t>(j)] < delta) {
                    delta = minv[static_cast<std::size_t>(j)];
                    j1 = j;
                }
            }
            for (int j = 0; j <= n; ++j) {
                if (used[static_cast<std::size_t>(j)]) {
                    u[static_cast<std::size_t>(p[static_cast<std::size_t>(j)])] += delta;
                    v[static_cast<std::size_t>(j)] -= delta;
                } else {
                    minv[static_cast<std::size_t>(j)] -= delta;
                }
            }
            j0 = j1;
        } while (p[static_cast<std::size_t>(j0)] != 0);
        do {
            const int j1 = way[static_cast<std::size_t>(j0)];
            p[static_cast<std::size_t>(j0)] = p[static_cast<std::size_t>(j1)];
            j0 = j1;
        } while (j0 != 0);
    }
    std::vector<int> col(static_cast<std::size_t>(n), -1);
    for (int j = 1; j <= n; ++j)
        col[static_cast<std::size_t>(p[static_cast<std::size_t>(j)] - 1)] = j - 1;
    return col;
}

GrouterGrouping grouter_placement(const Trace& window, const Topology& topo, const GrouterOptions& opt) {
    const int L = window.model.num_moe_layers(), E = window.model.experts, P = topo.ep_ranks;
    if (window.size() == 0) throw std::invalid_argument("grouter_placement: the window is empty");
    if (P <= 0 || E % P != 0)
        throw std::invalid_argument("grouter_placement: " + std::to_string(E) + " experts are not divisible by " +
                                    std::to_string(P) + " EP ranks");
    const int H = E / P, N = topo.nodes();
    const std::vector<int> rank_node = topo.node_of_rank();
    std::vector<std::vector<int>> ranks_of(static_cast<std::size_t>(N));
    for (int p = 0; p < P; ++p)
        ranks_of[static_cast<std::size_t>(rank_node[static_cast<std::size_t>(p)])].push_back(p);
    // Nodes by capacity (largest first, then index); column j of the matching belongs to node col_node[j].
    std::vector<int> node_order(static_cast<std::size_t>(N));
    std::iota(node_order.begin(), node_order.end(), 0);
    std::stable_sort(node_order.begin(), node_order.end(), [&](int a, int b) {
        return ranks_of[static_cast<std::size_t>(a)].size() > ranks_of[static_cast<std::size_t>(b)].size();
    });
    std::vector<int> col_node;
    for (int m : node_order)
        for (std::size_t k = 0; k < ranks_of[static_cast<std::size_t>(m)].size() * static_cast<std::size_t>(H); ++k)
            col_node.push_back(m);
    const auto loads = aggregate_expert_loads(window.counts, window.size(), L, E);

    GrouterGrouping g;
    g.placement = identity_placement(L, E, P);
    g.expert_node.assign(static_cast<std::size_t>(L) * E, 0);
    g.kept_samples.assign(static_cast<std::size_t>(L), 0);
    const double limit = opt.entropy_fraction * std::log(static_cast<double>(E));
    // home[i][m]: sample i's affinity to the experts node m holds, summed over the layers done.
    std::vector<double> home(window.size() * static_cast<std::size_t>(N), 0.0);
    for (int l = 0; l < L; ++l) {
        const std::vector<double> phi = affinity_vectors(window, l);
        std::vector<int> kept;
        for (std::size_t i = 0; i < window.size(); ++i) {
            const double* x = phi.data() + i * E;
            double sum = 0;
            for (int e = 0; e < E; ++e)
                sum += x[e];
            if (!(sum > 0)) continue;
            double h = 0;
            for (int e = 0; e < E; ++e)
                if (x[e] > 0) h -= (x[e] / sum) * std::log(x[e] / sum);
            if (h <= limit) kept.push_back(static_cast<int>(i));
        }
        if (kept.empty()) {
            kept.resize(window.size());
            std::iota(kept.begin(), kept.end(), 0);
        }
        g.kept_samples[static_cast<std::size_t>(l)] = static_cast<int>(kept.size());
        Rng rng(opt.seed + static_cast<std::uint64_t>(l));
        const int k0 = std::max(1, std::min(opt.initial_clusters, static_cast<int>(kept.size())));
        std::vector<Cluster> cl = kmeans(phi, E, kept, k0, opt.kmeans_iterations, rng);
        ward_merge(cl, N, E);
        std::vector<int> cluster_of_node(static_cast<std::size_t>(N));
        if (l == 0) {
            // Largest cluster to the largest node.
            std::vector<int> order(static_cast<std::size_t>(N));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
                return cl[static_cast<std::size_t>(a)].size > cl[static_cast<std::size_t>(b)].size;
            });
            for (int k = 0; k < N; ++k)
                cluster_of_node[static_cast<std::size_t>(node_order[static_cast<std::size_t>(k)])] =
                    order[static_cast<std::size_t>(k)];
        } else {
            // Later layers follow the samples: cluster c goes to the node that is home (most local
            // affinity over the layers before) to most of the kept samples nearest to c.
            std::vector<double> votes(static_cast<std::size_t>(N) * N, 0.0);
            for (int i : kept) {
                const double* x = phi.data() + static_cast<std::size_t>(i) * E;
                int near = 0;
                double bd = std::numeric_limits<double>::infinity();
                for (int c = 0; c < N; ++c)
                    if (const double d = sq_dist(x, cl[static_cast<std::size_t>(c)].mean.data(), E); d < bd) {
                        bd = d;
                        near = c;
                    }
                const double* h = home.data() + static_cast<std::size_t>(i) * N;
                const int m = static_cast<int>(std::max_element(h, h + N) - h);
                votes[static_cast<std::size_t>(near) * N + m] += 1;
            }
            const std::vector<int> node_of_cluster = hungarian_max(votes, N);
            for (int c = 0; c < N; ++c)
                cluster_of_node[static_cast<std::size_t>(node_of_cluster[static_cast<std::size_t>(c)])] = c;
        }
        std::vector<double> w(static_cast<std::size_t>(E) * E);
        for (int e = 0; e < E; ++e)
            for (int j = 0; j < E; ++j)
                w[static_cast<std::size_t>(e) * E + j] =
                    cl[static_cast<std::size_t>(
                           cluster_of_node[static_cast<std::size_t>(col_node[static_cast<std::size_t>(j)])])]
                        .mean[static_cast<std::size_t>(e)];
        const std::vector<int> col = hungarian_max(w, E);
        std::vector<std::vector<int>> experts_of(static_cast<std::size_t>(N));
        for (int e = 0; e < E; ++e) {
            const int m = col_node[static_cast<std::size_t>(col[static_cast<std::size_t>(e)])];
            g.expert_node[static_cast<std::size_t>(l) * E + e] = m;
            experts_of[static_cast<std::size_t>(m)].push_back(e);
        }
        for (std::size_t i = 0; i < window.size(); ++i)
            for (int e = 0; e < E; ++e)
                home[i * N + static_cast<std::size_t>(g.expert_node[static_cast<std::size_t>(l) * E + e])] +=
                    phi[i * E + e];
        // Algorithm 1 inside each node: heaviest expert first to its least-loaded rank with an open slot.
        const std::uint64_t* ld = loads.data() + static_cast<std::size_t>(l) * E;
        for (int m = 0; m < N; ++m) {
            auto& ex = experts_of[static_cast<std::size_t>(m)];
            std::stable_sort(ex.begin(), ex.end(), [&](int a, int b) { return ld[a] > ld[b]; });
            const auto& rk = ranks_of[static_cast<std::size_t>(m)];
            std::vector<std::uint64_t> gl(rk.size(), 0);
            std::vector<int> used(rk.size(), 0);
            for (int e : ex) {
                std::size_t best = rk.size();
                for (std::size_t k = 0; k < rk.size(); ++k)
                    if (used[k] < H && (best == rk.size() || gl[k] < gl[best])) best = k;
                g.placement.slot[static_cast<std::size_t>(l) * E + e] = rk[best] * H + used[best];
                ++used[best];
                gl[best] += ld[e];
            }
        }
    }
    return g;
}

std::vector<int> grouter_sample_nodes(const CommDemand& c) {
    std::vector<int> out(static_cast<std::size_t>(c.n), 0);
    std::vector<std::int64_t> local(static_cast<std::size_t>(c.N));
    for (int i = 0; i < c.n; ++i) {
        std::fill(local.begin(), local.end(), 0);
        for (int l = 0; l < c.L; ++l)
            for (int m = 0; m < c.N; ++m)
                local[static_cast<std::size_t>(m)] += c.at(i, l)[m];
        out[static_cast<std::size_t>(i)] =
            static_cast<int>(std::max_element(local.begin(), local.end()) - local.begin());
    }
    return out;
}

} // namespace routepack
