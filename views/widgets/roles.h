#pragma once
// Item-data roles of every model of the studio, in one enum so that no two models give one role
// number two meanings. The values are fixed: sort proxies, the CSV export and tests use them.
#include <Qt>

namespace routepack::views {

/// Custom item-data roles (Qt::UserRole and above) of the views' models.
enum ItemRole : int {
    /// Raw (unformatted) value of a cell: numbers as double / qint64, text as QString. Every table and
    /// tree model of the studio answers it; sort proxies sort by it and the CSV export writes it.
    RawValueRole = Qt::UserRole,
    FillRole,          ///< execution grid: cell tokens / C (double; > 1 is a cap violation)
    SampleCountRole,   ///< execution grid: samples in the cell (int)
    SampleIndicesRole, ///< execution grid: QList<int> of the cell's sample indices (window order)
    /// Sample table: the row's index in SampleTableData::rows (import order), int.
    SampleIndexRole = Qt::UserRole + 16,
    /// Library tree: the node's LibraryTreeModel::Kind (int).
    KindRole = Qt::UserRole + 32,
    TraceRole,      ///< library tree: trace name (every node), QString
    WindowRole,     ///< library tree: window name (windows and runs), QString
    RunIdRole,      ///< library tree: run id (runs), qint64
    ClusterRunRole, ///< library tree: imported cluster run id (cluster runs), qint64
};

} // namespace routepack::views
