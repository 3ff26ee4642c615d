#pragma once
// Grouter's communication optimization (Grouter paper, section "Decoupling Communication
// Optimization" and appendix "Efficiency Experiment Detail"), per MoE layer: expert grouping by
// routing-affinity clustering + Hungarian matching, then each sample to the node that keeps most of
// its tokens local (the paper's Algorithm "Optimize Sample-to-Node Assignment").
#include "core/plan/comm/comm.h"
#include "core/util/rng.h"
#include "core/util/stop.h"

#include <cstdint>
#include <vector>

namespace routepack {

/// Parameters of the expert grouping.
struct GrouterOptions {
    /// Samples whose affinity entropy exceeds entropy_fraction * log(E) are left out of the clustering
    /// (the paper's absolute 6.85 bits filters nothing at E = 64; a fraction of the maximum does).
    double entropy_fraction = 0.95;
    int initial_clusters = 100; ///< k-means++ clusters before the agglomerative merge (the paper's 100)
    int kmeans_iterations = 25; ///< Lloyd iterations after the k-means++ seeding (stops early when stable)
    std::uint64_t seed = 1;     ///< k-means++ seeding stream (core/util/rng.h)
};

/// The grouping of one window.
struct GrouterGrouping {
    Placement placement;           ///< pi_l: node m's experts on the slots of m's EP ranks (LPT inside the node)
    std::vector<int> expert_node;  ///< [L][E] node of logical expert e at MoE layer l
    std::vector<int> kept_samples; ///< [L] samples that passed the entropy filter (all when none did)
    int layers_grouped = 0;        ///< MoE layers 0..layers_grouped-1 were grouped (L unless stopped)
    bool stopped = false;          ///< the stop token ended the grouping before the last layer
};

/// A cluster of affinity vectors: its size (points) and mean [E].
struct KMeansCluster {
    double size = 0;
    std::vector<double> mean;
};

/// k-means over the rows `pts` of phi [n][E] (squared Euclidean distance): k-means++ seeding (D^2
/// sampling from `rng`; fewer than k centers when every point sits on one), then up to `iterations`
/// Lloyd rounds after the first assignment, stopping when no point changes center. Each point goes to
/// its nearest center, the lowest index among equals; an empty cluster keeps its center. Returns the
/// non-empty clusters in center order. Exact to the bit against the plain scalar loops: distances run
/// four lanes at a time (each lane summed in index order), a sum stops once it exceeds what it must
/// beat, and Elkan's triangle-inequality bounds (with a relative slack of 1e-9) skip only centers
/// strictly farther than the nearest so far. Points run in parallel; the result does not depend on
/// the workers. Rng: core/util/rng.h.
std::vector<KMeansCluster> kmeans_clusters(const std::vector<double>& phi, int E, const std::vector<int>& pts, int k,
                                           int iterations, Rng& rng);

/// Routing affinity of sample i at MoE layer l (Grouter eq. phi): phi[e] = a[i][l][e] / routed tokens,
/// the share of its tokens that chose expert e (sums to top-k when no route is missing). [n][E] for
/// layer l; a sample without routed tokens has phi = 0.
std::vector<double> affinity_vectors(const Trace& window, int l);

/// Expert grouping per MoE layer: affinity vectors, the entropy filter (entropy of phi / sum(phi),
/// natural log), k-means++ (min(initial_clusters, kept samples) clusters, squared Euclidean
/// distance) then Ward agglomerative merging of the cluster centroids down to N = topo.nodes(); the
/// merged clusters' mean affinities weight a Hungarian matching of clusters to experts in which node
/// m takes exactly (EP ranks on m) x E/P experts. Which cluster goes to which node: at the first MoE
/// layer the largest cluster to the node with most EP ranks (ties by index); at later layers a
/// Hungarian matching of clusters to nodes by votes of the kept samples (each votes for its nearest
/// cluster and its home node, the node with most of its affinity over the layers before), so that a
/// sample's experts stay on one node across layers. Inside a node the experts
/// are placed by Algorithm 1 (LPT on the window's loads) over that node's EP ranks. Deterministic for
/// a seed whatever the worker count: each layer's clustering depends on that layer alone (layer l's
/// k-means++ draws from seeds::grouter_layer(opt.seed, l)), so blocks of layers (as many as the
/// caller's TBB arena has threads, at least 2) cluster in parallel, each with its k-means assignment
/// in parallel (kmeans_clusters), and the matching that follows the samples' homes runs in layer
/// order while the next block clusters. The Ward merge keeps its pair distances (the same doubles,
/// so the same clusters).
/// `stop` is polled before each block of layers; once it fires, the layers not yet grouped keep Algorithm 1's
/// LPT placement over all EP ranks (each expert on the node of its rank), stopped = true and
/// layers_grouped says how far the grouping got: still a valid placement, but then depending on timing.
/// std::invalid_argument when E % P != 0 or the window is empty.
GrouterGrouping grouter_placement(const Trace& window, const Topology& topo, const GrouterOptions& opt = {},
                                  const StopToken& stop = {});

/// The paper's sample-to-node assignment: each sample to the node m maximizing sum_l c[i][l][m]
/// (tokens with an expert on m, CommDemand), the lowest such m on ties. [n] node ids.
std::vector<int> grouter_sample_nodes(const CommDemand& c);

/// Maximum-weight perfect matching of rows to columns of a square matrix `weight` [n][n] (row-major),
/// Hungarian algorithm (Kuhn-Munkres with potentials, O(n^3)). Returns [n]: the column of each row.
std::vector<int> hungarian_max(const std::vector<double>& weight, int n);

} // namespace routepack
