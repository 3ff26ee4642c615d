#pragma once
// The studio's sample table: one row per sample of a trace with id, group, length t_i, prompt
// length, routed rows and the per-layer hottest-expert share (SampleTableData, views/library/sample_data.h),
// and its sort/filter proxy.
#include "views/library/sample_data.h"
#include "views/widgets/roles.h"

#include <QAbstractTableModel>
#include <QHash>
#include <QSet>
#include <QSortFilterProxyModel>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

namespace routepack::views {

/// Table of SampleTableData rows (columns: id, t_i, routed rows, hottest-expert share, its layer
/// and expert, mean over layers of the hottest-expert share, prompt length, GRPO group, and the tokens a
/// sample routes to the (MoE layer, EP rank) selected in the plan views). Qt::DisplayRole is formatted
/// text; RawValueRole (views/widgets/roles.h, = Qt::UserRole) is the raw value used for sorting (qint64
/// / double / QString; an absent prompt length is -1); Qt::ToolTipRole of HotShare lists every layer's share.
class SampleTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Id,
        Length,
        RoutedRows,
        HotShare,
        HotLayer,
        MeanHotShare,
        Prompt,
        Group,
        SelectedTokens,
        ColumnCount
    };
    // Sort role: RawValueRole; SampleIndexRole: the row's index in the data (import order).

    explicit SampleTableModel(QObject* parent = nullptr);
    ~SampleTableModel() override;

    /// Replaces every row (nullptr empties the table).
    void setData(std::shared_ptr<const SampleTableData> data);
    std::shared_ptr<const SampleTableData> tableData() const { return data_; }
    /// Fills the SelectedTokens column: `tokens` maps sample ids to their tokens on the selected (layer,
    /// rank); rows of other samples stay empty (raw value -1). `header` names the column ("Tokens on
    /// L45/EP3"). An empty map clears the column (header "Tokens on (layer, rank)").
    void setSelectedTokens(const QHash<QString, qint64>& tokens, const QString& header);
    bool hasSelectedTokens() const { return !selected_.empty(); }
    /// Sample id of row `row` (data order).
    QString sampleId(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const SampleTableData> data_;
    std::vector<qint64> selected_; ///< [rows] tokens on the selected (layer, rank), -1 when not listed; empty: none
    QString selectedHeader_;
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

} // namespace routepack::views
