#pragma once
// Table model of the traces in a library (one row per trace). Checked by QAbstractItemModelTester.
#include <QAbstractTableModel>
#include <QString>

#include <memory>
#include <vector>

namespace routepack::storage {
struct TraceEntry;
}

namespace routepack::views {

/// Columns: name, format, samples, MoE layers, experts, top-k. Qt::UserRole returns the raw value
/// for sorting. Reading a library's trace list is a few rows: done on the calling thread.
class TraceListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, Format, Samples, MoeLayers, Experts, TopK, ColumnCount };
    explicit TraceListModel(QObject* parent = nullptr);
    ~TraceListModel() override;

    /// Opens `file` and lists its traces; returns false and sets errorString() on failure.
    bool openLibrary(const QString& file);
    QString errorString() const { return error_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

private:
    std::vector<std::unique_ptr<storage::TraceEntry>> rows_;
    QString error_;
};

} // namespace routepack::views
