#include "core/plan/comm/grouter.h"

#include "core/plan/score/assignment.h"
#include "core/util/grid.h"
#include "core/util/index.h"
#include "core/util/rng.h"
#include "core/util/seeds.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>
#include <tbb/task_arena.h>

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

/// sq_dist when it is at most `bound`, else some partial sum above it: the terms are added in the
/// same order as sq_dist and are >= 0, so the sum stops once it exceeds the bound (checked every 16
/// terms). A nearest-center search comparing with `<` (or `<=`) picks what it picks with sq_dist.
double sq_dist_below(const double* a, const double* b, int E, double bound) {
    double s = 0;
    int e = 0;
    while (e < E) {
        const int end = std::min(E, e + 16);
        for (; e < end; ++e)
            s += (a[e] - b[e]) * (a[e] - b[e]);
        if (s > bound) return s;
    }
    return s;
}

/// Lanes of a blocked distance: four centers (or four points) at once, each lane summed in the same
/// order as sq_dist, so that every completed lane is sq_dist to the bit. The four sums are
/// independent chains (the scalar loop is bound by one chain's add latency).
constexpr int kLanes = 4;

/// Centers interleaved by lanes: block b holds centers 4b..4b+3 as [E][4] (the last block padded
/// with copies of its last center).
struct PackedCenters {
    int K = 0, E = 0;
    std::vector<double> v; ///< [ceil(K/4)][E][4]

    void pack(const std::vector<std::vector<double>>& centers, int dims) {
        K = static_cast<int>(centers.size());
        E = dims;
        const int blocks = (K + kLanes - 1) / kLanes;
        v.resize(idx(blocks) * idx(E) * kLanes);
        for (int c = 0; c < blocks * kLanes; ++c) {
            const double* src = centers[idx(std::min(c, K - 1))].data();
            double* dst = v.data() + idx(c / kLanes) * idx(E) * kLanes + idx(c % kLanes);
            for (int e = 0; e < E; ++e)
                dst[idx(e) * kLanes] = src[e];
        }
    }
    const double* block(int b) const { return v.data() + idx(b) * idx(E) * kLanes; }
};

/// Squared distances from x [E] to the four centers of `c4` ([E][4]) (or from one center x to four
/// interleaved points), each lane summed in sq_dist's order; the sums stop (checked every 16 terms)
/// once every lane exceeds its bound, leaving partial sums above it.
void sq_dist_lanes(const double* x, const double* c4, int E, const double* bound, double* out) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int e = 0;
    while (e < E) {
        const int end = std::min(E, e + 16);
        for (; e < end; ++e) {
            const double a = x[e];
            const double* c = c4 + idx(e) * kLanes;
            const double d0 = a - c[0], d1 = a - c[1], d2 = a - c[2], d3 = a - c[3];
            s0 += d0 * d0;
            s1 += d1 * d1;
            s2 += d2 * d2;
            s3 += d3 * d3;
        }
        if (s0 > bound[0] && s1 > bound[1] && s2 > bound[2] && s3 > bound[3]) break;
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

/// Relative slack of the distance bounds below: far above the rounding of a sum of E squares, a
/// square root and up to `iterations` moves subtracted (about (E + iterations) x 2^-53), so a center
/// skipped by its bound is strictly farther than the nearest so far, in exact arithmetic and in
/// sq_dist's.
constexpr double kBoundSlack = 1e-9;

/// k-means++ seeding of kmeans_clusters: the first center uniform, each next one drawn with
/// probability proportional to its squared distance to the nearest center so far (D^2 sampling);
/// fewer than k when every point sits on a center. The points run four lanes at a time against each
/// new center ([ceil(n/4)][E][4], padded with the last point).
std::vector<std::vector<double>> kmeans_seeds(const std::vector<double>& phi, int E, const std::vector<int>& pts, int k,
                                              Rng& rng) {
    const int n = static_cast<int>(pts.size());
    std::vector<std::vector<double>> centers;
    std::vector<double> d2(idx(n), std::numeric_limits<double>::infinity());
    auto row = [&](int j) { return phi.data() + idx(pts[idx(j)]) * E; };
    const int pblocks = (n + kLanes - 1) / kLanes;
    std::vector<double> packed_pts(idx(pblocks) * idx(E) * kLanes);
    for (int j = 0; j < pblocks * kLanes; ++j) {
        const double* src = row(std::min(j, n - 1));
        double* dst = packed_pts.data() + idx(j / kLanes) * idx(E) * kLanes + idx(j % kLanes);
        for (int e = 0; e < E; ++e)
            dst[idx(e) * kLanes] = src[e];
    }
    int first = static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
    centers.emplace_back(row(first), row(first) + E);
    while (static_cast<int>(centers.size()) < k) {
        double total = 0;
        double d[kLanes];
        for (int b = 0; b < pblocks; ++b) {
            double bound[kLanes];
            for (int q = 0; q < kLanes; ++q)
                bound[q] = d2[idx(std::min(b * kLanes + q, n - 1))];
            // (a - c)^2 is (c - a)^2 to the bit: the lanes of points against one center are the sums above.
            sq_dist_lanes(centers.back().data(), packed_pts.data() + idx(b) * idx(E) * kLanes, E, bound, d);
            for (int q = 0; q < kLanes && b * kLanes + q < n; ++q) {
                const int j = b * kLanes + q;
                d2[idx(j)] = std::min(d2[idx(j)], d[q]);
                total += d2[idx(j)];
            }
        }
        if (!(total > 0)) break; // every point sits on a center: fewer clusters
        double x = rng.uniform() * total;
        int pick = n - 1;
        for (int j = 0; j < n; ++j) {
            x -= d2[idx(j)];
            if (x < 0 && d2[idx(j)] > 0) {
                pick = j;
                break;
            }
        }
        if (!(d2[idx(pick)] > 0)) break;
        centers.emplace_back(row(pick), row(pick) + E);
    }
    return centers;
}

} // namespace

std::vector<KMeansCluster> kmeans_clusters(const std::vector<double>& phi, int E, const std::vector<int>& pts, int k,
                                           int iterations, Rng& rng) {
    const int n = static_cast<int>(pts.size());
    auto row = [&](int j) { return phi.data() + idx(pts[idx(j)]) * E; };
    std::vector<std::vector<double>> centers = kmeans_seeds(phi, E, pts, k, rng);
    const int K = static_cast<int>(centers.size());
    std::vector<int> of(idx(n), -1);
    std::vector<KMeansCluster> cl(idx(K));
    PackedCenters pc;
    // Elkan's bounds: upper[j] >= the distance from point j to its center, lower[j][c] <= its distance
    // to center c (Euclidean, not squared); moved[c] how far center c moved in the last update. A
    // center whose lower bound is above the nearest so far (with kBoundSlack) is strictly farther and
    // is not summed.
    std::vector<double> upper(idx(n), 0.0), lower(idx(n) * idx(K), 0.0), moved(idx(K), 0.0);
    // The bounds' rounding is relative to the distances and moves summed into them, all within the
    // points' reach (centers are means of points): an absolute slack on that scale as well.
    double reach = 0;
    for (int j = 0; j < n; ++j) {
        double norm2 = 0;
        for (int e = 0; e < E; ++e)
            norm2 += row(j)[e] * row(j)[e];
        reach = std::max(reach, std::sqrt(norm2));
    }
    const double abs_slack = kBoundSlack * 2 * reach;
    auto farther = [&](double lo_c, double u) { return lo_c * (1 - kBoundSlack) - abs_slack > u * (1 + kBoundSlack); };
    pc.pack(centers, E); // the first round's full sums; the rounds after read `centers`
    for (int it = 0; it <= iterations; ++it) {
        std::atomic<bool> changed{false};
        tbb::parallel_for(tbb::blocked_range<int>(0, n, 16), [&](const tbb::blocked_range<int>& range) {
            bool changed_here = false;
            double d[kLanes];
            double no_bound[kLanes];
            std::fill(no_bound, no_bound + kLanes, std::numeric_limits<double>::infinity());
            for (int j = range.begin(); j != range.end(); ++j) {
                double* lo = lower.data() + idx(j) * idx(K);
                if (it == 0) {
                    // Every distance summed in full: exact lower bounds for the iterations after.
                    int best = 0;
                    double bd = std::numeric_limits<double>::infinity();
                    for (int b = 0; b * kLanes < K; ++b) {
                        sq_dist_lanes(row(j), pc.block(b), E, no_bound, d);
                        for (int k = 0; k < kLanes && b * kLanes + k < K; ++k) {
                            const int c = b * kLanes + k;
                            lo[c] = std::sqrt(d[k]);
                            if (d[k] < bd) {
                                bd = d[k];
                                best = c;
                            }
                        }
                    }
                    upper[idx(j)] = lo[best];
                    of[idx(j)] = best;
                    changed_here = true;
                    continue;
                }
                const int a = of[idx(j)];
                double u = upper[idx(j)] + moved[idx(a)];
                bool tight = false;
                for (int c = 0; c < K; ++c)
                    lo[c] = std::max(0.0, lo[c] - moved[idx(c)]);
                int best = a;
                double bd = 0;
                for (int c = 0; c < K; ++c) {
                    if (c == a || farther(lo[c], u)) continue;
                    if (!tight) {
                        bd = sq_dist(row(j), centers[idx(a)].data(), E);
                        u = std::sqrt(bd);
                        lo[a] = u;
                        tight = true;
                        if (farther(lo[c], u)) continue;
                    }
                    const double d = sq_dist_below(row(j), centers[idx(c)].data(), E, bd);
                    lo[c] = std::sqrt(d);
                    if (d < bd || (d == bd && c < best)) {
                        bd = d;
                        best = c;
                        u = lo[c];
                    }
                }
                upper[idx(j)] = u;
                if (best != a) changed_here = true;
                of[idx(j)] = best;
            }
            if (changed_here) changed.store(true, std::memory_order_relaxed);
        });
        for (auto& c : cl) {
            c.size = 0;
            c.mean.assign(idx(E), 0.0);
        }
        for (int j = 0; j < n; ++j) {
            KMeansCluster& c = cl[idx(of[idx(j)])];
            c.size += 1;
            for (int e = 0; e < E; ++e)
                c.mean[idx(e)] += row(j)[e];
        }
        for (int c = 0; c < K; ++c) {
            KMeansCluster& x = cl[idx(c)];
            if (x.size > 0)
                for (double& v : x.mean)
                    v /= x.size;
            else
                x.mean = centers[idx(c)];
            moved[idx(c)] = std::sqrt(sq_dist(centers[idx(c)].data(), x.mean.data(), E));
            centers[idx(c)] = x.mean;
        }
        if (!changed.load() && it > 0) break;
    }
    std::vector<KMeansCluster> out;
    for (auto& c : cl)
        if (c.size > 0) out.push_back(std::move(c));
    return out;
}

namespace {

/// Ward agglomerative merging of clusters down to `target` (padded with empty clusters below it). Each
/// step merges the pair (a < b, first in a-then-b order among equals) of least Ward distance
/// size_a size_b / (size_a + size_b) x |mean_a - mean_b|^2. The pair distances are kept in a
/// matrix and only the merged cluster's are formed again (by the same arithmetic, so the same
/// doubles and the same merges as forming every pair at every step).
void ward_merge(std::vector<KMeansCluster>& cl, int target, int E) {
    auto ward = [&](std::size_t a, std::size_t b) {
        const double w = cl[a].size * cl[b].size / (cl[a].size + cl[b].size);
        return w * sq_dist(cl[a].mean.data(), cl[b].mean.data(), E);
    };
    std::vector<std::vector<double>> dist(cl.size(), std::vector<double>(cl.size(), 0.0));
    if (static_cast<int>(cl.size()) > target)
        for (std::size_t a = 0; a < cl.size(); ++a)
            for (std::size_t b = a + 1; b < cl.size(); ++b)
                dist[a][b] = dist[b][a] = ward(a, b);
    while (static_cast<int>(cl.size()) > target) {
        std::size_t ba = 0, bb = 1;
        double bd = std::numeric_limits<double>::infinity();
        for (std::size_t a = 0; a < cl.size(); ++a)
            for (std::size_t b = a + 1; b < cl.size(); ++b)
                if (const double d = dist[a][b]; d < bd) {
                    bd = d;
                    ba = a;
                    bb = b;
                }
        KMeansCluster& a = cl[ba];
        const KMeansCluster& b = cl[bb];
        const double s = a.size + b.size;
        for (int e = 0; e < E; ++e)
            a.mean[idx(e)] = (a.mean[idx(e)] * a.size + b.mean[idx(e)] * b.size) / s;
        a.size = s;
        cl.erase(cl.begin() + static_cast<std::ptrdiff_t>(bb));
        dist.erase(dist.begin() + static_cast<std::ptrdiff_t>(bb));
        for (auto& row : dist)
            row.erase(row.begin() + static_cast<std::ptrdiff_t>(bb));
        for (std::size_t x = 0; x < cl.size(); ++x)
            if (x != ba) dist[ba][x] = dist[x][ba] = ward(std::min(ba, x), std::max(ba, x));
    }
    while (static_cast<int>(cl.size()) < target)
        cl.push_back(KMeansCluster{0, std::vector<double>(idx(E), 0.0)});
}

} // namespace

std::vector<double> affinity_vectors(const Trace& window, int l) {
    const int E = window.model.experts;
    std::vector<double> phi(window.size() * idx(E), 0.0);
    for (std::size_t i = 0; i < window.size(); ++i) {
        const auto rows = window.samples[i].routed_rows;
        if (rows <= 0) continue;
        for (int e = 0; e < E; ++e)
            phi[i * E + idx(e)] = static_cast<double>(window.count(i, l, e)) / static_cast<double>(rows);
    }
    return phi;
}

std::vector<int> hungarian_max(const std::vector<double>& weight, int n) {
    if (n < 0 || weight.size() != idx(n) * idx(n))
        throw std::invalid_argument("hungarian_max: weight is not " + std::to_string(n) + " x " + std::to_string(n));
    // Minimizes cost = -weight.
    return min_cost_assignment<double>(n, [&](int i, int j) { return -weight[idx(i) * idx(n) + idx(j)]; });
}

namespace {

/// What every layer of one grouping shares: the node capacities, the matching's columns and the
/// window's expert loads.
struct NodeFrame {
    int L = 0, E = 0, P = 0, H = 0, N = 0;
    std::vector<int> rank_node;             ///< [P] node of EP rank p
    std::vector<std::vector<int>> ranks_of; ///< [N] EP ranks of node m, ascending
    std::vector<int> node_order;            ///< nodes by capacity (most EP ranks first, then index)
    std::vector<int> col_node;              ///< [E] node of column j of the expert matching
    std::vector<std::uint64_t> loads;       ///< [L][E] the window's expert loads
};

NodeFrame node_frame(const Trace& window, const Topology& topo) {
    NodeFrame f;
    f.L = window.model.num_moe_layers();
    f.E = window.model.experts;
    f.P = topo.ep_ranks;
    f.H = f.E / f.P;
    f.N = topo.nodes();
    f.rank_node = topo.node_of_rank();
    f.ranks_of.resize(idx(f.N));
    for (int p = 0; p < f.P; ++p)
        f.ranks_of[idx(f.rank_node[idx(p)])].push_back(p);
    // Column j of the matching belongs to node col_node[j]: each node's H experts per EP rank.
    f.node_order.resize(idx(f.N));
    std::iota(f.node_order.begin(), f.node_order.end(), 0);
    std::stable_sort(f.node_order.begin(), f.node_order.end(),
                     [&](int a, int b) { return f.ranks_of[idx(a)].size() > f.ranks_of[idx(b)].size(); });
    for (int m : f.node_order)
        for (std::size_t k = 0; k < f.ranks_of[idx(m)].size() * idx(f.H); ++k)
            f.col_node.push_back(m);
    f.loads = aggregate_expert_loads(window.counts, window.size(), f.L, f.E);
    return f;
}

/// The samples of layer l's clustering (affinity `phi` [n][E]): those whose affinity entropy is at
/// most `limit`, every sample with routed tokens when none passes (all samples when none has any).
std::vector<int> entropy_filter(const std::vector<double>& phi, std::size_t n, int E, double limit) {
    std::vector<int> kept;
    for (std::size_t i = 0; i < n; ++i) {
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
        kept.resize(n);
        std::iota(kept.begin(), kept.end(), 0);
    }
    return kept;
}

/// Which of the N merged clusters `cl` each node takes ([N] cluster of node m). First MoE layer: the
/// largest cluster to the node with most EP ranks. Later layers follow the samples: cluster c goes
/// to the node that is home (most local affinity `home` [n][N] over the layers before) to most of
/// the kept samples nearest to c (Hungarian matching of the votes).
std::vector<int> clusters_of_nodes(const NodeFrame& f, int l, const std::vector<KMeansCluster>& cl,
                                   const std::vector<double>& phi, const std::vector<int>& kept,
                                   const Grid<double>& home) {
    const int N = f.N, E = f.E;
    std::vector<int> cluster_of_node(idx(N));
    if (l == 0) {
        std::vector<int> order(idx(N));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cl[idx(a)].size > cl[idx(b)].size; });
        for (std::size_t k = 0; k < order.size(); ++k)
            cluster_of_node[idx(f.node_order[k])] = order[k];
        return cluster_of_node;
    }
    std::vector<double> votes(idx(N) * N, 0.0);
    for (int i : kept) {
        const double* x = phi.data() + idx(i) * E;
        int near = 0;
        double bd = std::numeric_limits<double>::infinity();
        for (int c = 0; c < N; ++c)
            if (const double d = sq_dist_below(x, cl[idx(c)].mean.data(), E, bd); d < bd) {
                bd = d;
                near = c;
            }
        const std::span<const double> h = home.row(i);
        const int m = static_cast<int>(std::max_element(h.begin(), h.end()) - h.begin());
        votes[idx(near) * N + m] += 1;
    }
    const std::vector<int> node_of_cluster = hungarian_max(votes, N);
    for (std::size_t c = 0; c < node_of_cluster.size(); ++c)
        cluster_of_node[idx(node_of_cluster[c])] = static_cast<int>(c);
    return cluster_of_node;
}

/// Algorithm 1 inside each node at layer l: the node's experts (`experts_of` [N]) heaviest first,
/// each to the node's least-loaded EP rank with an open slot; writes g.placement's layer l.
void place_inside_nodes(const NodeFrame& f, int l, std::vector<std::vector<int>>& experts_of, GrouterGrouping& g) {
    const std::uint64_t* ld = f.loads.data() + idx(l) * f.E;
    int* slot = g.placement.slot.data() + idx(l) * f.E;
    std::vector<std::uint64_t> gl; // [ranks of m] load placed on each
    std::vector<int> used;         // [ranks of m] slots taken on each
    for (std::size_t m = 0; m < experts_of.size(); ++m) {
        auto& ex = experts_of[m];
        std::stable_sort(ex.begin(), ex.end(), [&](int a, int b) { return ld[a] > ld[b]; });
        const auto& rk = f.ranks_of[m];
        gl.assign(rk.size(), 0);
        used.assign(rk.size(), 0);
        for (int e : ex) {
            std::size_t best = rk.size();
            for (std::size_t k = 0; k < rk.size(); ++k)
                if (used[k] < f.H && (best == rk.size() || gl[k] < gl[best])) best = k;
            slot[e] = rk[best] * f.H + used[best];
            ++used[best];
            gl[best] += ld[e];
        }
    }
}

/// The clustering of MoE layer l (grouter.h): entropy filter, k-means++ on the layer's own stream,
/// Ward merge to N clusters. It depends on the layer alone (and its own seed), so layers cluster in
/// parallel.
struct LayerClusters {
    std::vector<double> phi;       ///< [n][E] the layer's affinity vectors
    std::vector<int> kept;         ///< the samples clustered
    std::vector<KMeansCluster> cl; ///< [N] merged clusters
};

LayerClusters cluster_layer(const Trace& window, const NodeFrame& f, const GrouterOptions& opt, int l) {
    const int E = f.E;
    LayerClusters out;
    out.phi = affinity_vectors(window, l);
    const std::vector<double>& phi = out.phi;
    out.kept = entropy_filter(phi, window.size(), E, opt.entropy_fraction * std::log(static_cast<double>(E)));
    Rng rng(seeds::grouter_layer(opt.seed, static_cast<std::uint64_t>(l)));
    const int k0 = std::max(1, std::min(opt.initial_clusters, static_cast<int>(out.kept.size())));
    out.cl = kmeans_clusters(phi, E, out.kept, k0, opt.kmeans_iterations, rng);
    ward_merge(out.cl, f.N, E);
    return out;
}

/// The rest of layer l's grouping, in layer order (it follows the samples' homes over the layers
/// before): clusters to nodes, the expert matching, Algorithm 1 inside the nodes; adds the layer's
/// affinities to each sample's `home` [n][N].
void group_layer(const Trace& window, const NodeFrame& f, int l, const LayerClusters& lc, Grid<double>& home,
                 GrouterGrouping& g) {
    const int E = f.E, N = f.N;
    const std::size_t n = window.size();
    const std::vector<double>& phi = lc.phi;
    g.kept_samples[idx(l)] = static_cast<int>(lc.kept.size());
    const std::vector<KMeansCluster>& cl = lc.cl;
    const std::vector<int> cluster_of_node = clusters_of_nodes(f, l, cl, phi, lc.kept, home);
    // w[e][j]: the mean affinity to expert e of the cluster on column j's node.
    std::vector<double> w(idx(E) * E);
    for (std::size_t e = 0; e < idx(E); ++e)
        for (std::size_t j = 0; j < idx(E); ++j)
            w[e * E + j] = cl[idx(cluster_of_node[idx(f.col_node[j])])].mean[e];
    const std::vector<int> col = hungarian_max(w, E);
    int* node = g.expert_node.data() + idx(l) * E;
    std::vector<std::vector<int>> experts_of(idx(N));
    for (int e = 0; e < E; ++e) {
        node[e] = f.col_node[idx(col[idx(e)])];
        experts_of[idx(node[e])].push_back(e);
    }
    for (std::size_t i = 0; i < n; ++i)
        for (int e = 0; e < E; ++e)
            home(i, node[e]) += phi[i * E + e];
    place_inside_nodes(f, l, experts_of, g);
}

} // namespace

GrouterGrouping grouter_placement(const Trace& window, const Topology& topo, const GrouterOptions& opt,
                                  const StopToken& stop) {
    const int L = window.model.num_moe_layers(), E = window.model.experts, P = topo.ep_ranks;
    if (window.size() == 0) throw std::invalid_argument("grouter_placement: the window is empty");
    if (P <= 0 || E % P != 0)
        throw std::invalid_argument("grouter_placement: " + std::to_string(E) + " experts are not divisible by " +
                                    std::to_string(P) + " EP ranks");
    const NodeFrame f = node_frame(window, topo);
    GrouterGrouping g;
    g.placement = identity_placement(L, E, P);
    g.expert_node.assign(idx(L) * E, 0);
    g.kept_samples.assign(idx(L), 0);
    // home[i][m]: sample i's affinity to the experts node m holds, summed over the layers done.
    Grid<double> home(window.size(), f.N, 0.0);
    // Blocks of layers: their clusterings in parallel, then the rest of each in layer order, while
    // the next block clusters (a pipeline of two blocks); a stop is seen between blocks.
    const int block = std::max(2, tbb::this_task_arena::max_concurrency());
    auto cluster_block = [&](int first) {
        std::vector<LayerClusters> lc(idx(std::min(L, first + block) - first));
        tbb::parallel_for(0, static_cast<int>(lc.size()),
                          [&](int k) { lc[idx(k)] = cluster_layer(window, f, opt, first + k); });
        return lc;
    };
    std::vector<LayerClusters> current, next;
    if (!stop.stop_requested()) current = cluster_block(0);
    while (!current.empty()) {
        const int first = g.layers_grouped, end = first + static_cast<int>(current.size());
        const bool more = end < L && !stop.stop_requested();
        tbb::parallel_invoke(
            [&] {
                for (int l = first; l < end; ++l, ++g.layers_grouped)
                    group_layer(window, f, l, current[idx(l - first)], home, g);
            },
            [&] { next = more ? cluster_block(end) : std::vector<LayerClusters>{}; });
        current = std::move(next);
        if (stop.stop_requested()) break;
    }
    if (g.layers_grouped == L) return g;
    // Stopped: the layers not grouped keep Algorithm 1 over all EP ranks (LPT), each expert on the
    // node of its rank.
    g.stopped = true;
    const Placement lpt = lpt_placement(f.loads, L, E, P);
    for (std::size_t x = idx(g.layers_grouped) * E; x < g.placement.slot.size(); ++x) {
        g.placement.slot[x] = lpt.slot[x];
        g.expert_node[x] = f.rank_node[idx(lpt.slot[x] / f.H)];
    }
    return g;
}

std::vector<int> grouter_sample_nodes(const CommDemand& c) {
    std::vector<int> out(idx(c.n), 0);
    std::vector<std::int64_t> local(idx(c.N));
    for (int i = 0; i < c.n; ++i) {
        std::fill(local.begin(), local.end(), 0);
        for (int l = 0; l < c.L; ++l)
            for (int m = 0; m < c.N; ++m)
                local[idx(m)] += c.at(i, l)[m];
        out[idx(i)] = static_cast<int>(std::max_element(local.begin(), local.end()) - local.begin());
    }
    return out;
}

} // namespace routepack
