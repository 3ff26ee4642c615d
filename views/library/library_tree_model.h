#pragma once
// Tree of a library's contents for the studio's left dock: traces, their windows, and the planner
// runs of each window. Checked by QAbstractItemModelTester.
#include "storage/library.h"
#include "views/widgets/roles.h"

#include <QAbstractItemModel>
#include <QString>

#include <vector>

class QTreeView;

namespace routepack::views {

/// Everything the tree shows, read from a library in one go (a few small queries).
struct LibrarySnapshot {
    QString file;
    std::vector<storage::TraceEntry> traces;
    std::vector<storage::WindowEntry> windows;          ///< every window, grouped by trace
    std::vector<storage::RunEntry> runs;                ///< every run, grouped by window, oldest first
    std::vector<storage::ClusterRunEntry> cluster_runs; ///< imported cluster runs (Library::cluster_runs)
    std::vector<storage::MeasuredStepEntry> measured;   ///< measured steps (Library::measured_steps)
};

/// Reads a snapshot (traces, windows, runs of every window). Throws what Library throws.
LibrarySnapshot readLibrarySnapshot(const storage::Library& lib);

/// Hides the rows of `view` (over a LibraryTreeModel or any tree model) that do not match `text`:
/// a row matches when its Name or Details column contains `text` (any case); a matching row is shown
/// with its ancestors and all its descendants, as QSortFilterProxyModel's recursive filtering with
/// autoAcceptChildRows. An empty (or blank) `text` shows every row. Returns how many rows are shown.
int applyTreeFilter(QTreeView* view, const QString& text);

/// Three-level tree: trace -> window -> run, and after the traces one top-level node per imported
/// cluster run ("cluster run 1: run-7"; details "3 steps x 2 chains, 5 planned, 1 failed"). Columns: name, details
/// ("235 samples, step-json"; "64 samples: first 64 ..."; "finished, joint 228.76"). RawValueRole (= Qt::UserRole)
/// gives the raw sort value of the column; KindRole, TraceRole, WindowRole, RunIdRole and ClusterRunRole
/// (views/widgets/roles.h) identify a node.
class LibraryTreeModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { Name, Details, ColumnCount };
    enum Kind { TraceNode, WindowNode, RunNode, ClusterRunNode };

    explicit LibraryTreeModel(QObject* parent = nullptr);
    ~LibraryTreeModel() override;

    void setSnapshot(LibrarySnapshot snapshot);
    const LibrarySnapshot& snapshot() const { return snap_; }
    /// Index (column 0) of a trace, window or run; invalid when absent.
    QModelIndex traceIndex(const QString& trace) const;
    QModelIndex windowIndex(const QString& trace, const QString& window) const;
    QModelIndex runIndex(qint64 runId) const;
    QModelIndex clusterRunIndex(qint64 clusterRunId) const;
    /// The run of a RunNode index (nullptr otherwise).
    const storage::RunEntry* runAt(const QModelIndex& index) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

private:
    struct Node {
        Kind kind;
        int parent;       ///< node index, -1 for top level
        int row;          ///< row within its parent
        std::size_t item; ///< index into snap_.traces / windows / runs / cluster_runs
        std::vector<int> children;
    };
    const Node* node(const QModelIndex& index) const;

    LibrarySnapshot snap_;
    std::vector<Node> nodes_;
    std::vector<int> top_; ///< node indices of the traces, then of the cluster runs
};

} // namespace routepack::views
