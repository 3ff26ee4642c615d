#include "views/library/library_tree_model.h"

#include <QTreeView>

#include <map>

namespace routepack::views {

LibrarySnapshot readLibrarySnapshot(const storage::Library& lib) {
    LibrarySnapshot s;
    s.file = QString::fromStdString(lib.path().string());
    s.traces = lib.traces();
    s.windows = lib.windows();
    for (const auto& w : s.windows)
        for (auto& r : lib.runs(w.trace, w.name))
            s.runs.push_back(std::move(r));
    s.cluster_runs = lib.cluster_runs();
    s.measured = lib.measured_steps();
    return s;
}

namespace {

/// Shows or hides the rows under `parent` for `text`; `shownAbove`: an ancestor matched. Returns
/// whether any row under `parent` matched (so that `parent` stays shown).
bool filterRows(QTreeView* view, const QModelIndex& parent, const QString& text, bool shownAbove, int& shown) {
    const QAbstractItemModel* m = view->model();
    bool any = false;
    for (int r = 0; r < m->rowCount(parent); ++r) {
        const QModelIndex i = m->index(r, 0, parent);
        bool match = text.isEmpty();
        for (int c = 0; c < m->columnCount(parent) && !match; ++c)
            match = i.sibling(r, c).data(Qt::DisplayRole).toString().contains(text, Qt::CaseInsensitive);
        const bool below = filterRows(view, i, text, shownAbove || match, shown);
        const bool show = match || below || shownAbove;
        view->setRowHidden(r, parent, !show);
        if (show) ++shown;
        any = any || match || below;
    }
    return any;
}

} // namespace

int applyTreeFilter(QTreeView* view, const QString& text) {
    if (!view || !view->model()) return 0;
    int shown = 0;
    filterRows(view, {}, text.trimmed(), false, shown);
    return shown;
}

LibraryTreeModel::LibraryTreeModel(QObject* parent) : QAbstractItemModel(parent) {}
LibraryTreeModel::~LibraryTreeModel() = default;

void LibraryTreeModel::setSnapshot(LibrarySnapshot snapshot) {
    beginResetModel();
    snap_ = std::move(snapshot);
    nodes_.clear();
    top_.clear();
    std::map<std::string, int> trace_node;
    std::map<std::pair<std::string, std::string>, int> window_node;
    for (std::size_t t = 0; t < snap_.traces.size(); ++t) {
        const int id = static_cast<int>(nodes_.size());
        nodes_.push_back({TraceNode, -1, static_cast<int>(top_.size()), t, {}});
        top_.push_back(id);
        trace_node[snap_.traces[t].name] = id;
    }
    for (std::size_t w = 0; w < snap_.windows.size(); ++w) {
        const auto it = trace_node.find(snap_.windows[w].trace);
        if (it == trace_node.end()) continue;
        const int id = static_cast<int>(nodes_.size());
        const int row = static_cast<int>(nodes_[static_cast<std::size_t>(it->second)].children.size());
        nodes_.push_back({WindowNode, it->second, row, w, {}});
        nodes_[static_cast<std::size_t>(it->second)].children.push_back(id);
        window_node[{snap_.windows[w].trace, snap_.windows[w].name}] = id;
    }
    for (std::size_t r = 0; r < snap_.runs.size(); ++r) {
        const auto it = window_node.find({snap_.runs[r].trace, snap_.runs[r].window});
        if (it == window_node.end()) continue;
        const int id = static_cast<int>(nodes_.size());
        const int row = static_cast<int>(nodes_[static_cast<std::size_t>(it->second)].children.size());
        nodes_.push_back({RunNode, it->second, row, r, {}});
        nodes_[static_cast<std::size_t>(it->second)].children.push_back(id);
    }
    for (std::size_t c = 0; c < snap_.cluster_runs.size(); ++c) {
        const int id = static_cast<int>(nodes_.size());
        nodes_.push_back({ClusterRunNode, -1, static_cast<int>(top_.size()), c, {}});
        top_.push_back(id);
    }
    endResetModel();
}

const LibraryTreeModel::Node* LibraryTreeModel::node(const QModelIndex& index) const {
    if (!index.isValid() || index.model() != this) return nullptr;
    const auto id = static_cast<std::size_t>(index.internalId());
    return id < nodes_.size() ? &nodes_[id] : nullptr;
}

QModelIndex LibraryTreeModel::index(int row, int column, const QModelIndex& parent) const {
    if (row < 0 || column < 0 || column >= ColumnCount) return {};
    const std::vector<int>* kids = &top_;
    if (parent.isValid()) {
        const Node* p = node(parent);
        if (!p || parent.column() != 0) return {};
        kids = &p->children;
    }
    if (row >= static_cast<int>(kids->size())) return {};
    return createIndex(row, column, static_cast<quintptr>((*kids)[static_cast<std::size_t>(row)]));
}

QModelIndex LibraryTreeModel::parent(const QModelIndex& child) const {
    const Node* n = node(child);
    if (!n || n->parent < 0) return {};
    const Node& p = nodes_[static_cast<std::size_t>(n->parent)];
    return createIndex(p.row, 0, static_cast<quintptr>(n->parent));
}

int LibraryTreeModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid()) return static_cast<int>(top_.size());
    if (parent.column() != 0) return 0;
    const Node* n = node(parent);
    return n ? static_cast<int>(n->children.size()) : 0;
}

int LibraryTreeModel::columnCount(const QModelIndex&) const {
    return ColumnCount;
}

QModelIndex LibraryTreeModel::traceIndex(const QString& trace) const {
    for (int row = 0; row < static_cast<int>(top_.size()); ++row)
        if (nodes_[static_cast<std::size_t>(top_[static_cast<std::size_t>(row)])].kind == TraceNode &&
            QString::fromStdString(
                snap_.traces[nodes_[static_cast<std::size_t>(top_[static_cast<std::size_t>(row)])].item].name) == trace)
            return index(row, 0);
    return {};
}

QModelIndex LibraryTreeModel::windowIndex(const QString& trace, const QString& window) const {
    const QModelIndex t = traceIndex(trace);
    if (!t.isValid()) return {};
    for (int row = 0; row < rowCount(t); ++row) {
        const QModelIndex w = index(row, 0, t);
        if (w.data(WindowRole).toString() == window) return w;
    }
    return {};
}

QModelIndex LibraryTreeModel::runIndex(qint64 runId) const {
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
        const Node& n = nodes_[k];
        if (n.kind == RunNode && snap_.runs[n.item].id == runId) return createIndex(n.row, 0, static_cast<quintptr>(k));
    }
    return {};
}

QModelIndex LibraryTreeModel::clusterRunIndex(qint64 clusterRunId) const {
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
        const Node& n = nodes_[k];
        if (n.kind == ClusterRunNode && snap_.cluster_runs[n.item].id == clusterRunId)
            return createIndex(n.row, 0, static_cast<quintptr>(k));
    }
    return {};
}

const storage::RunEntry* LibraryTreeModel::runAt(const QModelIndex& index) const {
    const Node* n = node(index);
    return n && n->kind == RunNode ? &snap_.runs[n->item] : nullptr;
}

QVariant LibraryTreeModel::data(const QModelIndex& index, int role) const {
    const Node* n = node(index);
    if (!n) return {};
    if (role == KindRole) return static_cast<int>(n->kind);
    const bool raw = role == RawValueRole;
    switch (n->kind) {
    case TraceNode: {
        const auto& t = snap_.traces[n->item];
        if (role == TraceRole) return QString::fromStdString(t.name);
        if (role == Qt::ToolTipRole)
            return tr("%1: %2 MoE layers, %3 experts, top-%4; imported %5")
                .arg(QString::fromStdString(t.model.name.empty() ? t.format : t.model.name))
                .arg(t.model.num_moe_layers())
                .arg(t.model.experts)
                .arg(t.model.top_k)
                .arg(QString::fromStdString(t.imported_at));
        if (role != Qt::DisplayRole && !raw) return {};
        if (index.column() == Name) return QString::fromStdString(t.name);
        if (raw) return static_cast<qulonglong>(t.samples);
        return t.load_only ? tr("load-only, %1").arg(QString::fromStdString(t.format))
                           : tr("%1 samples, %2").arg(t.samples).arg(QString::fromStdString(t.format));
    }
    case WindowNode: {
        const auto& w = snap_.windows[n->item];
        if (role == TraceRole) return QString::fromStdString(w.trace);
        if (role == WindowRole) return QString::fromStdString(w.name);
        if (role == Qt::ToolTipRole) return QString::fromStdString(w.definition);
        if (role != Qt::DisplayRole && !raw) return {};
        if (index.column() == Name) return QString::fromStdString(w.name);
        if (raw) return static_cast<qulonglong>(w.samples);
        return tr("%1 samples").arg(w.samples);
    }
    case RunNode: {
        const auto& r = snap_.runs[n->item];
        if (role == TraceRole) return QString::fromStdString(r.trace);
        if (role == WindowRole) return QString::fromStdString(r.window);
        if (role == RunIdRole) return static_cast<qint64>(r.id);
        if (role == Qt::ToolTipRole)
            return r.status == "failed" ? QString::fromStdString(r.message)
                                        : tr("topology %1, seed %2, %3 workers, started %4")
                                              .arg(QString::fromStdString(r.topology))
                                              .arg(r.budgets.seed)
                                              .arg(r.workers)
                                              .arg(QString::fromStdString(r.started_at));
        if (role != Qt::DisplayRole && !raw) return {};
        if (index.column() == Name)
            return raw ? QVariant(static_cast<qint64>(r.id))
                       : QVariant(r.name.empty()
                                      ? tr("run %1").arg(r.id)
                                      : tr("run %1 \u00b7 %2").arg(r.id).arg(QString::fromStdString(r.name)));
        if (raw) return r.score.max_u;
        if (r.status == "failed") return tr("failed");
        return tr("%1, R*=%2, max U %3")
            .arg(QString::fromStdString(r.status))
            .arg(r.rows)
            .arg(r.score.max_u, 0, 'f', 2);
    }
    case ClusterRunNode: {
        const auto& c = snap_.cluster_runs[n->item];
        if (role == ClusterRunRole) return static_cast<qint64>(c.id);
        if (role == Qt::ToolTipRole)
            return tr("swept on a cluster into %1; seed %2, imported %3")
                .arg(QString::fromStdString(c.out.string()))
                .arg(c.seed)
                .arg(QString::fromStdString(c.imported_at));
        if (role != Qt::DisplayRole && !raw) return {};
        if (index.column() == Name)
            return raw ? QVariant(static_cast<qint64>(c.id))
                       : QVariant(tr("cluster run %1: %2").arg(c.id).arg(QString::fromStdString(c.trace)));
        if (raw) return static_cast<qulonglong>(c.planned);
        return tr("%1 steps x %n chain(s), %2 planned, %3 failed", nullptr, static_cast<int>(c.chains.size()))
            .arg(c.steps)
            .arg(c.planned)
            .arg(c.failed);
    }
    }
    return {};
}

QVariant LibraryTreeModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
    return section == Name ? tr("Library") : section == Details ? tr("Details") : QVariant();
}

} // namespace routepack::views
