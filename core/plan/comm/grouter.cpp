#include "core/plan/comm/grouter.h"

#include "core/plan/score/assignment.h"
#include "core/util/grid.h"
#include "core/util/index.h"
#include "core/util/rng.h"
#include "core/util/seeds.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
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
    std::vector<double> d2(idx(n), std::numeric_limits<double>::infinity());
    auto row = [&](int j) { return phi.data() + idx(pts[idx(j)]) * E; };
    int first = static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
    centers.emplace_back(row(first), row(first) + E);
    while (static_cast<int>(centers.size()) < k) {
        double total = 0;
        for (int j = 0; j < n; ++j) {
            d2[idx(j)] = std::min(d2[idx(j)], sq_dist_below(row(j), centers.back().data(), E, d2[idx(j)]));
            total += d2[idx(j)];
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
    const int K = static_cast<int>(centers.size());
    std::vector<int> of(idx(n), -1);
    std::vector<Cluster> cl(idx(K));
    for (int it = 0; it <= iterations; ++it) {
        std::atomic<bool> changed{false};
        tbb::parallel_for(tbb::blocked_range<int>(0, n, 16), [&](const tbb::blocked_range<int>& range) {
            bool moved = false;
            for (int j = range.begin(); j != range.end(); ++j) {
                // The nearest center, the lowest index among equals: the previous one's distance
                // first, so that the others' sums stop early.
                int best = of[idx(j)] >= 0 ? of[idx(j)] : 0;
                double bd = sq_dist(row(j), centers[idx(best)].data(), E);
                for (int c = 0; c < K; ++c) {
                    if (c == best) continue;
                    const double d = sq_dist_below(row(j), centers[idx(c)].data(), E, bd);
                    if (d < bd || (d == bd && c < best)) {
                        bd = d;
                        best = c;
                    }
                }
                if (of[idx(j)] != best) moved = true;
                of[idx(j)] = best;
            }
            if (moved) changed.store(true, std::memory_order_relaxed);
        });
        for (auto& c : cl) {
            c.size = 0;
            c.mean.assign(idx(E), 0.0);
        }
        for (int j = 0; j < n; ++j) {
            Cluster& c = cl[idx(of[idx(j)])];
            c.size += 1;
            for (int e = 0; e < E; ++e)
                c.mean[idx(e)] += row(j)[e];
        }
        for (int c = 0; c < K; ++c) {
            Cluster& x = cl[idx(c)];
            if (x.size > 0)
                for (double& v : x.mean)
                    v /= x.size;
            else
                x.mean = centers[idx(c)];
            centers[idx(c)] = x.mean;
        }
        if (!changed.load() && it > 0) break;
    }
    std::vector<Cluster> out;
    for (auto& c : cl)
        if (c.size > 0) out.push_back(std::move(c));
    return out;
}

/// Ward agglomerative merging of clusters down to `target` (padded with empty clusters below it). Each
/// step merges the pair (a < b, first in a-then-b order among equals) of least Ward distance
/// size_a size_b / (size_a + size_b) x |mean_a - mean_b|^2. The pair distances are kept in a
/// matrix and only the merged cluster's are formed again (by the same arithmetic, so the same
/// doubles and the same merges as forming every pair at every step).
void ward_merge(std::vector<Cluster>& cl, int target, int E) {
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
        Cluster& a = cl[ba];
        const Cluster& b = cl[bb];
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
        cl.push_back(Cluster{0, std::vector<double>(idx(E), 0.0)});
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
std::vector<int> clusters_of_nodes(const NodeFrame& f, int l, const std::vector<Cluster>& cl,
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
    std::vector<int> kept;   ///< the samples clustered
    std::vector<Cluster> cl; ///< [N] merged clusters
};

LayerClusters cluster_layer(const Trace& window, const NodeFrame& f, const GrouterOptions& opt, int l) {
    const int E = f.E;
    const std::vector<double> phi = affinity_vectors(window, l);
    LayerClusters out;
    out.kept = entropy_filter(phi, window.size(), E, opt.entropy_fraction * std::log(static_cast<double>(E)));
    Rng rng(seeds::grouter_layer(opt.seed, static_cast<std::uint64_t>(l)));
    const int k0 = std::max(1, std::min(opt.initial_clusters, static_cast<int>(out.kept.size())));
    out.cl = kmeans(phi, E, out.kept, k0, opt.kmeans_iterations, rng);
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
    const std::vector<double> phi = affinity_vectors(window, l);
    g.kept_samples[idx(l)] = static_cast<int>(lc.kept.size());
    const std::vector<Cluster>& cl = lc.cl;
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
    // Blocks of layers: their clusterings in parallel, then the rest of each in layer order; a stop
    // is seen between blocks.
    const int block = std::max(2, tbb::this_task_arena::max_concurrency());
    while (g.layers_grouped < L && !stop.stop_requested()) {
        const int first = g.layers_grouped, end = std::min(L, first + block);
        std::vector<LayerClusters> lc(idx(end - first));
        tbb::parallel_for(first, end, [&](int l) { lc[idx(l - first)] = cluster_layer(window, f, opt, l); });
        for (int l = first; l < end; ++l, ++g.layers_grouped)
            group_layer(window, f, l, lc[idx(l - first)], home, g);
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
