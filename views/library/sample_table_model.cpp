#include "views/library/sample_table_model.h"

namespace routepack::views {

SampleTableModel::SampleTableModel(QObject* parent) : QAbstractTableModel(parent) {}
SampleTableModel::~SampleTableModel() = default;

void SampleTableModel::setData(std::shared_ptr<const SampleTableData> data) {
    beginResetModel();
    data_ = std::move(data);
    selected_.clear();
    endResetModel();
}

void SampleTableModel::setSelectedTokens(const QHash<QString, qint64>& tokens, const QString& header) {
    selected_.clear();
    selectedHeader_ = tokens.isEmpty() ? QString() : header;
    if (!tokens.isEmpty() && data_) {
        selected_.assign(data_->rows.size(), -1);
        for (std::size_t r = 0; r < data_->rows.size(); ++r)
            selected_[r] = tokens.value(QString::fromStdString(data_->rows[r].info.id), -1);
    }
    if (rowCount() > 0) Q_EMIT dataChanged(index(0, SelectedTokens), index(rowCount() - 1, SelectedTokens));
    Q_EMIT headerDataChanged(Qt::Horizontal, SelectedTokens, SelectedTokens);
}

QString SampleTableModel::sampleId(int row) const {
    if (!data_ || row < 0 || row >= rowCount()) return {};
    return QString::fromStdString(data_->rows[static_cast<std::size_t>(row)].info.id);
}

int SampleTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !data_ ? 0 : static_cast<int>(data_->rows.size());
}

int SampleTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant SampleTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !data_ || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
    const auto& r = data_->rows[static_cast<std::size_t>(index.row())];
    const auto& s = r.info;
    if (role == SampleIndexRole) return index.row();
    if (role == Qt::TextAlignmentRole)
        return index.column() != Id && index.column() != Group ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                                               : QVariant();
    if (role == Qt::ToolTipRole) {
        if ((index.column() == HotShare || index.column() == MeanHotShare) && !r.layerShare.empty()) {
            QString tip = tr("Hottest expert share per MoE layer (max_e a / sum_e a):");
            for (std::size_t l = 0; l < r.layerShare.size(); ++l) {
                tip += (l % 4 == 0) ? QStringLiteral("\n") : QStringLiteral("    ");
                tip += QStringLiteral("L%1 %2 (e%3)")
                           .arg(data_->moeLayers[l])
                           .arg(static_cast<double>(r.layerShare[l]), 0, 'f', 3)
                           .arg(r.layerHotExpert[l]);
            }
            return tip;
        }
        if (index.column() == Id && !s.source_file.empty())
            return tr("%1\nfrom %2").arg(QString::fromStdString(s.id), QString::fromStdString(s.source_file));
        return {};
    }
    const bool raw = role == RawValueRole;
    if (role != Qt::DisplayRole && !raw) return {};
    switch (index.column()) {
    case Id:
        return QString::fromStdString(s.id);
    case Group:
        return QString::fromStdString(s.group);
    case Length:
        return static_cast<qint64>(s.length);
    case Prompt:
        if (raw) return static_cast<qint64>(s.prompt_len.value_or(-1));
        return s.prompt_len ? QVariant(static_cast<qint64>(*s.prompt_len)) : QVariant(QString());
    case RoutedRows:
        return static_cast<qint64>(s.routed_rows);
    case HotShare:
        if (raw) return r.hotShare;
        return r.hotLayer < 0 ? QString() : QString::number(r.hotShare, 'f', 3);
    case HotLayer:
        if (raw) return r.hotLayer;
        return r.hotLayer < 0 ? QString() : QStringLiteral("L%1 e%2").arg(r.hotLayer).arg(r.hotExpert);
    case MeanHotShare:
        if (raw) return r.meanHotShare;
        return r.hotLayer < 0 ? QString() : QString::number(r.meanHotShare, 'f', 3);
    case SelectedTokens: {
        const qint64 t = selected_.empty() ? -1 : selected_[static_cast<std::size_t>(index.row())];
        if (raw) return t;
        return t < 0 ? QVariant(QString()) : QVariant(t);
    }
    default:
        return {};
    }
}

QVariant SampleTableModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal) return {};
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case Length:
            return tr("t_i: training sequence length in tokens (prompt + response)");
        case Prompt:
            return tr("Prompt tokens, when the source says");
        case RoutedRows:
            return tr("Rows (tokens) whose routes the source holds");
        case HotShare:
            return tr("Largest share of one expert in a layer's routed tokens, max over MoE layers");
        case HotLayer:
            return tr("MoE layer (absolute id) and expert of that largest share");
        case MeanHotShare:
            return tr("Largest share of one expert in a layer's routed tokens, mean over MoE layers");
        case SelectedTokens:
            return tr("Tokens the sample routes to the EP rank selected in the plan views, at its MoE layer (the "
                      "experts the placement puts there); what the filter ranks the samples by");
        default:
            return {};
        }
    }
    if (role != Qt::DisplayRole) return {};
    switch (section) {
    case Id:
        return tr("Sample");
    case Group:
        return tr("Group");
    case Length:
        return tr("Length t_i");
    case Prompt:
        return tr("Prompt");
    case RoutedRows:
        return tr("Routed rows");
    case HotShare:
        return tr("Hot expert share");
    case HotLayer:
        return tr("Hot layer / expert");
    case MeanHotShare:
        return tr("Mean hot share");
    case SelectedTokens:
        return selectedHeader_.isEmpty() ? tr("Tokens on (layer, rank)") : selectedHeader_;
    default:
        return {};
    }
}

SampleFilterProxy::SampleFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
    setSortRole(RawValueRole);
    setDynamicSortFilter(true);
}

void SampleFilterProxy::setLengthRange(qint64 minLength, qint64 maxLength) {
    min_ = minLength;
    max_ = maxLength;
    invalidateFilter();
}

void SampleFilterProxy::setTextFilter(const QString& text) {
    text_ = text;
    invalidateFilter();
}

void SampleFilterProxy::setRowFilter(std::optional<QSet<int>> rows) {
    rows_ = std::move(rows);
    invalidateFilter();
}

bool SampleFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const QAbstractItemModel* m = sourceModel();
    if (!m) return true;
    if (rows_ && !rows_->contains(sourceRow)) return false;
    if (min_ > 0 || max_ > 0) {
        const qint64 len = m->index(sourceRow, SampleTableModel::Length, sourceParent).data(RawValueRole).toLongLong();
        if ((min_ > 0 && len < min_) || (max_ > 0 && len > max_)) return false;
    }
    const QString& needle = text_;
    if (needle.isEmpty()) return true;
    for (int c : {int(SampleTableModel::Id), int(SampleTableModel::Group)})
        if (m->index(sourceRow, c, sourceParent).data().toString().contains(needle, Qt::CaseInsensitive)) return true;
    return false;
}

} // namespace routepack::views
