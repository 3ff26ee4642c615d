#include "views/plan/plan_models.h"

#include "views/plan/compare_data.h"
#include "views/plan/plan_data.h"

#include <QLocale>

#include <cmath>

namespace routepack::views {

// ---------------------------------------------------------------------------------------------
// ExecutionGridModel

ExecutionGridModel::ExecutionGridModel(QObject* parent) : QAbstractTableModel(parent) {}

void ExecutionGridModel::setPlan(std::shared_ptr<const PlanResult> plan, routepack::Method method) {
    beginResetModel();
    plan_ = std::move(plan);
    method_ = plan_ && has_method(*plan_, method) ? method : routepack::Method::RoutePack;
    rows_ = cols_ = 0;
    cap_ = 0;
    tokens_.clear();
    if (plan_) {
        const Layout& x = method_of(*plan_, method_).layout;
        if (x.well_formed()) {
            rows_ = x.rows;
            cols_ = x.dp_slots;
            tokens_ = cell_tokens(x, plan_->samples);
        }
        cap_ = plan_token_cap(*plan_);
    }
    endResetModel();
}

int ExecutionGridModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : rows_;
}
int ExecutionGridModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : cols_;
}

QVariant ExecutionGridModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_ || index.column() >= cols_ || !plan_) return {};
    const Layout& x = method_of(*plan_, method_).layout;
    const int k = x.cell_index(index.row(), index.column());
    const std::span<const int> cell = x.cell(k);
    const qint64 tokens = tokens_[static_cast<std::size_t>(k)];
    switch (role) {
    case Qt::DisplayRole:
        return tr("%1 / %2\n%n sample(s)", nullptr, static_cast<int>(cell.size())).arg(tokens).arg(cap_);
    case RawValueRole:
        return tokens;
    case FillRole:
        return cap_ > 0 ? static_cast<double>(tokens) / static_cast<double>(cap_) : 0.0;
    case SampleCountRole:
        return static_cast<int>(cell.size());
    case SampleIndicesRole: {
        QList<int> idx;
        idx.reserve(static_cast<qsizetype>(cell.size()));
        for (int i : cell)
            idx.append(i);
        return QVariant::fromValue(idx);
    }
    case Qt::ToolTipRole: {
        QString s =
            tr("<b>Row %1, DP slot %2</b>: %3 of %4 tokens (%5%)")
                .arg(index.row())
                .arg(index.column())
                .arg(tokens)
                .arg(cap_)
                .arg(cap_ > 0 ? 100.0 * static_cast<double>(tokens) / static_cast<double>(cap_) : 0.0, 0, 'f', 1);
        constexpr std::size_t kMaxListed = 24;
        for (std::size_t j = 0; j < cell.size() && j < kMaxListed; ++j) {
            const SampleInfo& info = plan_->samples[static_cast<std::size_t>(cell[j])];
            s += QStringLiteral("<br>%1 &mdash; %2 tokens")
                     .arg(QString::fromStdString(info.id).toHtmlEscaped())
                     .arg(info.length);
        }
        if (cell.size() > kMaxListed) s += tr("<br>... %1 more").arg(cell.size() - kMaxListed);
        return s;
    }
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::AlignCenter);
    default:
        return {};
    }
}

QVariant ExecutionGridModel::headerData(int section, Qt::Orientation o, int role) const {
    if (role != Qt::DisplayRole && role != RawValueRole) return {};
    if (o == Qt::Vertical) {
        if (section < 0 || section >= rows_) return {};
        return role == RawValueRole ? QVariant(section) : QVariant(tr("row %1").arg(section));
    }
    if (section < 0 || section >= cols_ || !plan_) return {};
    if (role == RawValueRole) return section;
    const auto shard = plan_->topology.shard_of_slot();
    return tr("DP %1 (g%2)")
        .arg(section)
        .arg(section < static_cast<int>(shard.size()) ? shard[static_cast<std::size_t>(section)] : 0);
}

// ---------------------------------------------------------------------------------------------
// CompareTableModel

CompareTableModel::CompareTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareTableModel::setRuns(const QList<std::shared_ptr<const PlanResult>>& runs, const QStringList& runNames) {
    beginResetModel();
    runs_.clear();
    names_.clear();
    rows_.clear();
    comm_ = false;
    for (qsizetype k = 0; k < runs.size(); ++k) {
        if (!runs[k]) continue;
        runs_.push_back(runs[k]);
        names_.append(k < runNames.size() && !runNames[k].isEmpty() ? runNames[k] : tr("run %1").arg(k + 1));
        for (const routepack::Method m : plan_methods(*runs[k]))
            rows_.emplace_back(static_cast<int>(runs_.size()) - 1, m);
        comm_ = comm_ || runs[k]->comm.nodes > 1;
    }
    endResetModel();
}

void CompareTableModel::setMeasured(std::map<QString, PerMethod<std::optional<double>>> measured) {
    measured_ = std::move(measured);
    if (!rows_.empty()) Q_EMIT dataChanged(index(0, MeasuredSeconds), index(rowCount() - 1, MeasuredVsBaseline));
}

int CompareTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int CompareTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : (comm_ ? CommColumnCount : ColumnCount);
}

QVariant CompareTableModel::rawValue(int row, int column) const {
    if (row < 0 || row >= rowCount() || column < 0 || column >= columnCount()) return {};
    const auto [run, m] = rows_[static_cast<std::size_t>(row)];
    const PlanResult& plan = *runs_[static_cast<std::size_t>(run)];
    const MethodResult& method = method_of(plan, m);
    const LayoutMetrics& x = method.metrics;
    auto change = [&](const MethodResult& ref) -> QVariant {
        const double r = ref.metrics.score.max_u;
        if (r == 0 || !std::isfinite(r)) return {};
        return 100.0 * (x.score.max_u - r) / r;
    };
    switch (column) {
    case Run:
        return names_[run];
    case Method:
        return QString::fromLatin1(method_key(m));
    case Rows:
        return static_cast<qint64>(method.layout.rows);
    case Joint:
        return x.score.max_u;
    case SumU:
        return x.score.sum_u;
    case MaxJ:
        return x.score.max_j;
    case CvGlobal:
        return x.cv_global;
    case EpPeakSum:
        return static_cast<qint64>(x.ep_peak_sum);
    case EpTailPeak:
        return static_cast<qint64>(x.ep_tail_peak);
    case EpBalance:
        return x.ep_balance_efficiency;
    case Attention:
        return x.attention_sum;
    case CapViolations:
        return static_cast<qint64>(x.cap_violations);
    case JointVsBaseline:
        return change(plan.baseline);
    case JointVsReorder:
        return change(plan.reorder);
    case JointVsKarmarkarKarp:
        return change(plan.karmarkar_karp);
    case MeasuredSeconds:
    case MeasuredVsBaseline: {
        const auto it = measured_.find(names_[run]);
        if (it == measured_.end() || !it->second[m]) return {};
        if (column == MeasuredSeconds) return *it->second[m];
        const std::optional<double>& base = it->second[routepack::Method::Baseline];
        if (!base || *base <= 0) return {};
        return 100.0 * (*it->second[m] - *base) / *base;
    }
    case InterCopies:
        return method.comm ? QVariant(static_cast<qint64>(method.comm->inter_total)) : QVariant();
    case IntraCopies:
        return method.comm ? QVariant(static_cast<qint64>(method.comm->intra_total)) : QVariant();
    case BusiestCopies:
        return method.comm ? QVariant(static_cast<qint64>(method.comm->busiest_total)) : QVariant();
    case InterVsRoutepack: {
        if (!method.comm || !plan.routepack.comm || plan.routepack.comm->inter_total == 0) return {};
        const double ref = static_cast<double>(plan.routepack.comm->inter_total);
        return 100.0 * (static_cast<double>(method.comm->inter_total) - ref) / ref;
    }
    default:
        return {};
    }
}

QVariant CompareTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
    const int col = index.column();
    const bool commCol = col >= InterCopies && col < CommColumnCount;
    switch (role) {
    case RawValueRole:
        return rawValue(index.row(), col);
    case Qt::DisplayRole: {
        QVariant v = rawValue(index.row(), col);
        if (!v.isValid()) {
            // A multi-node run without routes: the figures cannot be counted (never zero).
            const PlanResult& plan = run(rowRun(index.row()));
            if (commCol && plan.comm.nodes > 1 && !plan.comm.available) return QString::fromLatin1(kCommUnavailable);
            return QStringLiteral("\u2014");
        }
        switch (col) {
        case Run:
            return v;
        case Method:
            return QString::fromLatin1(method_label(rowMethod(index.row())));
        case Rows:
        case EpPeakSum:
        case EpTailPeak:
        case CapViolations:
        case InterCopies:
        case IntraCopies:
        case BusiestCopies:
            return QLocale().toString(v.toLongLong());
        case CvGlobal:
        case EpBalance:
            return QString::number(v.toDouble(), 'f', 4);
        case MeasuredSeconds:
            return QStringLiteral("%1 s").arg(v.toDouble(), 0, 'g', 4);
        case JointVsBaseline:
        case JointVsReorder:
        case JointVsKarmarkarKarp:
        case MeasuredVsBaseline:
        case InterVsRoutepack: {
            double d = v.toDouble();
            if (col == InterVsRoutepack && std::abs(d) < 0.005) d = 0; // no "-0.00 %" for 3 copies in 120,000
            return QStringLiteral("%1%2 %").arg(d > 0 ? QStringLiteral("+") : QString()).arg(d, 0, 'f', 2);
        }
        default:
            return QString::number(v.toDouble(), 'f', 3);
        }
    }
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(col <= Method ? Qt::Alignment(Qt::AlignLeft | Qt::AlignVCenter)
                                                 : Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    case Qt::DecorationRole:
        // The table is the chart's legend: each run's name carries its bar colour.
        if (col == Run) return compareRunColour(rowRun(index.row()));
        return {};
    case Qt::ToolTipRole:
        if (col == Run) return names_.value(rowRun(index.row()));
        if (col == JointVsBaseline || col == JointVsReorder || col == JointVsKarmarkarKarp)
            return tr("100 x (joint - joint of the reference) / joint of the reference; negative is better");
        if (col == InterVsRoutepack)
            return tr("100 x (inter-node copies - routepack's) / routepack's; negative is less traffic");
        return {};
    default:
        return {};
    }
}

QVariant CompareTableModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case Run:
            return tr("run");
        case Method:
            return tr("method");
        case Rows:
            return tr("rows");
        case Joint:
            return tr("max U (joint)");
        case SumU:
            return tr("sum U");
        case MaxJ:
            return tr("max J");
        case CvGlobal:
            return tr("CV_global");
        case EpPeakSum:
            return tr("S_EP");
        case EpTailPeak:
            return tr("T_EP");
        case EpBalance:
            return tr("eta_EP");
        case Attention:
            return tr("attention");
        case CapViolations:
            return tr("over cap");
        case JointVsBaseline:
            return tr("vs baseline");
        case JointVsReorder:
            return tr("vs reorder");
        case JointVsKarmarkarKarp:
            return tr("vs KK");
        case MeasuredSeconds:
            return tr("measured s");
        case MeasuredVsBaseline:
            return tr("measured vs baseline");
        case InterCopies:
            return tr("inter-node copies");
        case IntraCopies:
            return tr("intra-node copies");
        case BusiestCopies:
            return tr("busiest node copies");
        case InterVsRoutepack:
            return tr("copies vs routepack");
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case Joint:
            return tr("max over EDP shards of U_g = sum_r J[r][g] (eq. 15, primary objective), in tokens");
        case SumU:
            return tr("sum over EDP shards of U_g (eq. 15, second key), in tokens");
        case MaxJ:
            return tr("worst row-shard cost max J[r][g] (eq. 15, third key), in tokens");
        case CvGlobal:
            return tr("mean over MoE layers of std/mean of EP-rank loads (eq. 22)");
        case EpPeakSum:
            return tr("accumulated EP peaks sum_{r,l} max_{g,p} W (tokens)");
        case EpTailPeak:
            return tr("worst row/layer peak max W (tokens)");
        case EpBalance:
            return tr("EP balance efficiency (eq. 23); 1 = perfect row-local balance");
        case JointVsBaseline:
            return tr("change of the joint cost against the run's baseline (identity placement, length-only "
                      "layout), in percent: the gain the Run view and sweep lead with");
        case JointVsReorder:
            return tr("change of the joint cost against the run's reorder layout, in percent");
        case JointVsKarmarkarKarp:
            return tr("change of the joint cost against the run's karmarkar_karp layout, in percent");
        case MeasuredSeconds:
            return tr("the step of this layout as measured with real kernels (a measured step imported into the "
                      "library and linked to the run: docs/measure.md), in seconds");
        case MeasuredVsBaseline:
            return tr("change of the measured step against the run's measured baseline, in percent: the gain "
                      "beside the modelled one (vs baseline)");
        case Attention:
            return tr("sum over rows and shards of the attention cost A[r][g] (eq. 12), in tokens");
        case CapViolations:
            return tr("cells over the token cap C (only karmarkar_karp can have them)");
        case InterCopies:
            return tr("token copies the all-to-all dispatch sends between nodes in one step, all MoE layers, once "
                      "per (token, destination node); the combine sends the same back");
        case IntraCopies:
            return tr("(token, node) pairs whose expert is on the token's own node (stays on NVLink)");
        case BusiestCopies:
            return tr("sum over rows and MoE layers of the busiest node's max(sent, received) copies");
        case InterVsRoutepack:
            return tr("change of the inter-node copies against the run's routepack layout, in percent");
        default:
            return {};
        }
    }
    return {};
}

} // namespace routepack::views
