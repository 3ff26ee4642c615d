#pragma once
// The studio's sample table: one row per sample of
// a trace with id, group, length t_i, prompt length, routed rows and the per-layer hottest-expert
// share; a sort/filter proxy; the length histogram.
#include "core/model/trace.h"
#include "views/roles.h"

#include <QAbstractTableModel>
#include <QSet>
#include <QSortFilterProxyModel>
#include <QString>
#include <QStringList>
#include <QtCharts/QChartView>

#include <memory>
#include <optional>
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

/// Table of SampleTableData rows (columns: id, t_i, routed rows, hottest-expert share, its layer
/// and expert, mean over layers of the hottest-expert share, prompt length, GRPO group). Qt::DisplayRole is formatted
/// text; RawValueRole (views/roles.h, = Qt::UserRole) is the raw value used for sorting (qint64
/// / double / QString; an absent prompt length is -1); Qt::ToolTipRole of HotShare lists every layer's share.
class SampleTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Id, Length, RoutedRows, HotShare, HotLayer, MeanHotShare, Prompt, Group, ColumnCount };
    // Sort role: RawValueRole; SampleIndexRole: the row's index in the data (import order).

    explicit SampleTableModel(QObject* parent = nullptr);
    ~SampleTableModel() override;

    /// Replaces every row (nullptr empties the table).
    void setData(std::shared_ptr<const SampleTableData> data);
    std::shared_ptr<const SampleTableData> tableData() const { return data_; }
    /// Sample id of row `row` (data order).
    QString sampleId(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const SampleTableData> data_;
};

/// Sort/filter proxy of the sample table: sorts by RawValueRole (raw values), filters rows whose id
/// or group contains the filter text (case-insensitive), and optionally keeps only lengths in
/// [minLength, maxLength].
class SampleFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit SampleFilterProxy(QObject* parent = nullptr);
    /// Only samples with minLength <= t_i <= maxLength (0 = no bound).
    void setLengthRange(qint64 minLength, qint64 maxLength);
    /// Only samples whose id or group contains `text` (case-insensitive; empty = all).
    void setTextFilter(const QString& text);
    QString textFilter() const { return text_; }
    /// Only the samples at these source rows (indices into SampleTableData::rows); std::nullopt
    /// (the default) = no such filter. Combines with the text and length filters.
    void setRowFilter(std::optional<QSet<int>> rows);
    bool hasRowFilter() const { return rows_.has_value(); }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    qint64 min_ = 0, max_ = 0;
    QString text_;
    std::optional<QSet<int>> rows_;
};

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

/// Bar chart (Qt Charts) of a LengthHistogram with bin labels and axis titles.
class LengthHistogramView : public QChartView {
    Q_OBJECT
public:
    explicit LengthHistogramView(QWidget* parent = nullptr);
    /// Redraws the chart for these lengths (an empty list clears it); `title` above the chart.
    void setLengths(const std::vector<qint64>& lengths, const QString& title);
    /// The histogram currently shown.
    const LengthHistogram& histogram() const { return hist_; }
    /// Every how many bin edges one is labelled: the smallest k >= 1 with which the widest edge
    /// label (plus 8 px) fits in k bars' width of the plot area (narrow bars keep whole labels
    /// instead of "..."); 1 before the first layout.
    int binLabelStride() const { return stride_; }
    /// The edge labels shown, left to right ("100", "1.2k", "12k"): every binLabelStride()-th edge
    /// from the first.
    QStringList binLabels() const;

protected:
    /// Redraws in the new colours when the palette changes (light / dark).
    void changeEvent(QEvent* event) override;
    /// Labels as many bin edges as fit the new width (binLabelStride).
    void resizeEvent(QResizeEvent* event) override;

private:
    /// Chooses the label stride from the plot area's width per bar and labels those edges.
    void fitBinLabels();

    LengthHistogram hist_;
    std::vector<qint64> lengths_;
    QStringList edgeLabels_; ///< one per bin edge (counts + 1)
    int stride_ = 1;
    QString title_;
};

} // namespace routepack::views
