#pragma once
// The numbers of the studio's sample pane, computed without widgets: per-sample summary rows of a
// trace (built off the GUI thread) and the length histogram with round bin edges. Tests check them
// by hand.
#include "core/model/trace.h"

#include <QString>
#include <QtGlobal>

#include <memory>
#include <vector>

namespace routepack::views {

/// Per-sample summary rows of one trace, computed once off the GUI thread (buildSampleTable) and
/// shown by SampleTableModel. Immutable once built.
struct SampleTableData {
    QString trace;              ///< trace name
    std::vector<int> moeLayers; ///< absolute MoE layer ids (model.moe_layers)
    struct Row {
        SampleInfo info;
        /// Per MoE layer l: max_e a[i][l][e] / sum_e a[i][l][e] (0 for a layer without routed tokens).
        std::vector<float> layerShare;
        std::vector<int> layerHotExpert; ///< argmax_e a[i][l][e] per layer (lowest e on ties)
        double hotShare = 0;             ///< max over layers of layerShare
        double meanHotShare = 0;         ///< mean over layers of layerShare
        int hotLayer = -1;               ///< absolute id of that layer (-1 when no layer has tokens)
        int hotExpert = -1;              ///< the hottest expert of that layer
    };
    std::vector<Row> rows; ///< import order
};

/// Builds the summary rows of a loaded trace (samples + counts): O(n * L * E).
std::shared_ptr<const SampleTableData> buildSampleTable(const Trace& trace, const QString& name);

/// Histogram of sample lengths with round bin edges.
struct LengthHistogram {
    std::vector<double> edges; ///< bin edges in tokens, ascending (the last bin includes its right edge)
    bool logarithmic = false;  ///< log-spaced edges (lengths spanning a factor of 8 or more)
    std::vector<int> counts;   ///< samples per bin
};
/// Histogram of sample lengths t_i in at most `bins` bins with round edges. Lengths spanning a
/// factor of 8 or more (RL rollouts have long tails: linear bins would put almost every sample in
/// the first one) get log-spaced edges from the densest of the series {1, 1.2, 1.5, 2, 2.5, 3, 4,
/// 5, 6, 8}, {1, 1.5, 2, 3, 5, 7}, {1, 2, 5}, {1} x 10^k that needs no more than `bins` bins (the
/// sparsest when none does), from the largest series value <= min to the smallest >= max; other
/// lengths get linear edges at multiples of the smallest step in {1, 2, 2.5, 5} x 10^k (at least
/// 1 token) that needs no more than `bins` bins. Bin b holds edges[b] <= t < edges[b+1] (the last
/// also t = its right edge). An empty histogram (no counts) for no lengths; one bin [t, t] when all
/// lengths are equal.
LengthHistogram lengthHistogram(const std::vector<qint64>& lengths, int bins);
/// The exact text of bin `bin` (the histogram's bar tooltip): the integer lengths it holds and its
/// count, "lengths 200-499 tokens: 2 samples" (the last bin up to its right edge inclusive).
QString lengthBinText(const LengthHistogram& h, int bin);

} // namespace routepack::views
