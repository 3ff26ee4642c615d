#include "views/trace_list_model.h"

#include "storage/library.h"

namespace routepack::views {

TraceListModel::TraceListModel(QObject* parent) : QAbstractTableModel(parent) {}
TraceListModel::~TraceListModel() = default;

bool TraceListModel::openLibrary(const QString& file) {
    beginResetModel();
    rows_.clear();
    error_.clear();
    bool ok = true;
    try {
        auto lib = storage::Library::open(file.toStdString(), storage::OpenMode::ReadOnly);
        for (auto& t : lib->traces())
            rows_.push_back(std::make_unique<storage::TraceEntry>(std::move(t)));
    } catch (const std::exception& e) {
        error_ = QString::fromStdString(e.what());
        ok = false;
    }
    endResetModel();
    return ok;
}

int TraceListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int TraceListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant TraceListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || (role != Qt::DisplayRole && role != Qt::UserRole)) return {};
    const auto& t = *rows_[static_cast<std::size_t>(index.row())];
    switch (index.column()) {
    case Name:
        return QString::fromStdString(t.name);
    case Format:
        return QString::fromStdString(t.format);
    case Samples:
        return static_cast<qulonglong>(t.samples);
    case MoeLayers:
        return t.model.num_moe_layers();
    case Experts:
        return t.model.experts;
    case TopK:
        return t.model.top_k;
    default:
        return {};
    }
}

QVariant TraceListModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case Name:
        return tr("Trace");
    case Format:
        return tr("Format");
    case Samples:
        return tr("Samples");
    case MoeLayers:
        return tr("MoE layers");
    case Experts:
        return tr("Experts");
    case TopK:
        return tr("Top-k");
    default:
        return {};
    }
}

} // namespace routepack::views
