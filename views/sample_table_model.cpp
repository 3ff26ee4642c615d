#include "views/sample_table_model.h"

#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QChart>
#include <QtCharts/QValueAxis>

#include <QCoreApplication>
#include <QCursor>
#include <QEvent>
#include <QFontMetrics>
#include <QResizeEvent>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace routepack::views {

std::shared_ptr<const SampleTableData> buildSampleTable(const Trace& trace, const QString& name) {
    auto out = std::make_shared<SampleTableData>();
    out->trace = name;
    out->moeLayers = trace.model.moe_layers;
    const int L = trace.model.num_moe_layers(), E = trace.model.experts;
    const bool has_counts = trace.stride() > 0 && trace.counts.size() == trace.size() * trace.stride();
    out->rows.reserve(trace.size());
    for (std::size_t i = 0; i < trace.size(); ++i) {
        SampleTableData::Row row;
        row.info = trace.samples[i];
        if (has_counts) {
            row.layerShare.assign(static_cast<std::size_t>(L), 0.f);
            row.layerHotExpert.assign(static_cast<std::size_t>(L), -1);
            const auto c = trace.sample_counts(i);
            for (int l = 0; l < L; ++l) {
                std::uint64_t sum = 0;
                std::uint32_t best = 0;
                int arg = -1;
                for (int e = 0; e < E; ++e) {
                    const std::uint32_t v = c[static_cast<std::size_t>(l) * E + e];
                    sum += v;
                    if (v > best) {
                        best = v;
                        arg = e;
                    }
                }
                if (sum == 0) continue;
                const double share = static_cast<double>(best) / static_cast<double>(sum);
                row.meanHotShare += share / L;
                row.layerShare[static_cast<std::size_t>(l)] = static_cast<float>(share);
                row.layerHotExpert[static_cast<std::size_t>(l)] = arg;
                if (share > row.hotShare) {
                    row.hotShare = share;
                    row.hotLayer = trace.model.moe_layers[static_cast<std::size_t>(l)];
                    row.hotExpert = arg;
                }
            }
        }
        out->rows.push_back(std::move(row));
    }
    return out;
}

SampleTableModel::SampleTableModel(QObject* parent) : QAbstractTableModel(parent) {}
SampleTableModel::~SampleTableModel() = default;

void SampleTableModel::setData(std::shared_ptr<const SampleTableData> data) {
    beginResetModel();
    data_ = std::move(data);
    endResetModel();
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

namespace {

/// Round log-spaced edges from `series` (mantissas in [1, 10), ascending) x 10^k, in whole tokens:
/// the largest series value <= lo, then every one up to the smallest >= hi.
std::vector<double> seriesEdges(const std::vector<double>& series, double lo, double hi) {
    // Lengths are whole tokens: edges are too (1.2 and 1.5 both become 2, kept once).
    std::vector<double> all;
    const int k0 = static_cast<int>(std::floor(std::log10(lo))), k1 = static_cast<int>(std::ceil(std::log10(hi)));
    for (int k = std::max(0, k0); k <= k1; ++k)
        for (double m : series) {
            const double v = std::ceil(std::round(m * std::pow(10.0, k) * 10.0) / 10.0);
            if (all.empty() || v > all.back()) all.push_back(v);
        }
    std::vector<double> out;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const bool next_le_lo = i + 1 < all.size() && all[i + 1] <= lo;
        if (next_le_lo) continue; // not yet the largest value <= lo
        out.push_back(all[i]);
        if (all[i] >= hi) break;
    }
    return out;
}

/// Multiples of `step` from the largest <= lo to the smallest >= hi.
std::vector<double> stepEdges(double step, double lo, double hi) {
    std::vector<double> out;
    const auto first = static_cast<std::int64_t>(std::floor(lo / step)),
               last = static_cast<std::int64_t>(std::ceil(hi / step));
    for (std::int64_t k = first; k <= last; ++k)
        out.push_back(static_cast<double>(k) * step);
    return out;
}

} // namespace

LengthHistogram lengthHistogram(const std::vector<qint64>& lengths, int bins) {
    LengthHistogram h;
    if (lengths.empty() || bins < 1) return h;
    const auto [mn, mx] = std::minmax_element(lengths.begin(), lengths.end());
    const double lo = static_cast<double>(*mn), hi = static_cast<double>(*mx);
    if (*mx == *mn) {
        h.edges = {lo, hi};
        h.counts.assign(1, static_cast<int>(lengths.size()));
        return h;
    }
    h.logarithmic = *mn > 0 && hi / lo >= 8.0;
    if (h.logarithmic) {
        static const std::vector<std::vector<double>> kSeries = {
            {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8}, {1, 1.5, 2, 3, 5, 7}, {1, 2, 5}, {1}};
        for (const auto& series : kSeries) {
            h.edges = seriesEdges(series, lo, hi);
            if (static_cast<int>(h.edges.size()) - 1 <= bins) break;
        }
    } else {
        for (double decade = 1;; decade *= 10) {
            bool done = false;
            for (double m : {1.0, 2.0, 2.5, 5.0}) {
                if (decade == 1 && m == 2.5) continue; // whole tokens
                h.edges = stepEdges(m * decade, lo, hi);
                if (static_cast<int>(h.edges.size()) - 1 <= bins) {
                    done = true;
                    break;
                }
            }
            if (done) break;
        }
    }
    const int n = static_cast<int>(h.edges.size()) - 1;
    h.counts.assign(static_cast<std::size_t>(n), 0);
    for (qint64 v : lengths) {
        // The bin whose [edge_b, edge_b+1) holds v; the maximum goes into the last bin.
        const auto it = std::upper_bound(h.edges.begin(), h.edges.end(), static_cast<double>(v));
        const int b = std::clamp(static_cast<int>(it - h.edges.begin()) - 1, 0, n - 1);
        ++h.counts[static_cast<std::size_t>(b)];
    }
    return h;
}

QString lengthBinText(const LengthHistogram& h, int bin) {
    if (bin < 0 || static_cast<std::size_t>(bin) >= h.counts.size()) return {};
    const auto b = static_cast<std::size_t>(bin);
    const bool last = b + 1 == h.counts.size();
    // Integer lengths t with edges[b] <= t < edges[b+1] (<= for the last bin).
    const auto from = static_cast<qint64>(std::ceil(h.edges[b]));
    const auto to =
        last ? static_cast<qint64>(std::floor(h.edges[b + 1])) : static_cast<qint64>(std::ceil(h.edges[b + 1])) - 1;
    const int c = h.counts[b];
    return QCoreApplication::translate("LengthHistogramView", "lengths %1-%2 tokens: %3 %4")
        .arg(from)
        .arg(to)
        .arg(c)
        .arg(c == 1 ? QCoreApplication::translate("LengthHistogramView", "sample")
                    : QCoreApplication::translate("LengthHistogramView", "samples"));
}

LengthHistogramView::LengthHistogramView(QWidget* parent) : QChartView(parent) {
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(160);
    auto* chart = new QChart();
    chart->legend()->hide();
    chart->setMargins(QMargins(4, 4, 4, 4));
    setChart(chart);
}

void LengthHistogramView::changeEvent(QEvent* event) {
    QChartView::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) setLengths(std::vector<qint64>(lengths_), QString(title_));
}

void LengthHistogramView::resizeEvent(QResizeEvent* event) {
    QChartView::resizeEvent(event);
    fitBinLabels();
}

QStringList LengthHistogramView::binLabels() const {
    QStringList out;
    for (int e = 0; e < edgeLabels_.size(); e += stride_)
        out << edgeLabels_[e];
    return out;
}

void LengthHistogramView::fitBinLabels() {
    auto* x = qobject_cast<QCategoryAxis*>(chart()->axes(Qt::Horizontal).value(0));
    if (!x || hist_.counts.empty()) return;
    const QFontMetrics fm(x->labelsFont());
    int widest = 0;
    for (const QString& l : edgeLabels_)
        widest = std::max(widest, fm.horizontalAdvance(l));
    // The plot area before the first layout is empty: judge by the view's width then.
    const qreal plot = chart()->plotArea().width() > 0 ? chart()->plotArea().width() : width() * 0.8;
    const qreal perBar = plot / static_cast<qreal>(hist_.counts.size());
    int stride = 1;
    while (perBar > 0 && stride < edgeLabels_.size() && widest + 8 > stride * perBar)
        ++stride;
    if (stride == stride_ && x->count() > 0) return;
    stride_ = stride;
    for (const QString& l : x->categoriesLabels())
        x->remove(l);
    // Edge e sits between bar e-1 and bar e (bars are centred on whole values).
    for (int e = 0; e < edgeLabels_.size(); e += stride_)
        x->append(edgeLabels_[e], e - 0.5);
}

void LengthHistogramView::setLengths(const std::vector<qint64>& lengths, const QString& title) {
    lengths_ = lengths;
    title_ = title;
    hist_ = lengthHistogram(lengths, 16);
    QChart* chart = this->chart();
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) {
        chart->removeAxis(a);
        delete a;
    }
    chart->setTitle(title);
    chart->setBackgroundBrush(palette().color(QPalette::Base));
    chart->setTitleBrush(palette().color(QPalette::Text));
    if (hist_.counts.empty()) return;
    auto* set = new QBarSet(tr("samples"));
    edgeLabels_.clear();
    stride_ = 1;
    int peak = 0;
    for (const int count : hist_.counts) {
        *set << count;
        peak = std::max(peak, count);
    }
    for (const double edge : hist_.edges) {
        const qint64 at = std::llround(edge);
        // Short labels: 950, 1.2k, 12k.
        edgeLabels_ << (at < 1000 ? QString::number(at)
                        : at < 10000
                            ? QString::number(static_cast<double>(at) / 1000.0, 'f', 1) + QLatin1Char('k')
                            : QString::number(std::llround(static_cast<double>(at) / 1000.0)) + QLatin1Char('k'));
    }
    set->setColor(palette().color(QPalette::Highlight));
    set->setBorderColor(palette().color(QPalette::Highlight).darker(130));
    auto* series = new QBarSeries();
    series->setBarWidth(0.95);
    series->append(set);
    // Exact lengths and count of the bar under the mouse.
    connect(set, &QBarSet::hovered, this, [this](bool on, int index) {
        if (on)
            QToolTip::showText(QCursor::pos(), lengthBinText(hist_, index), this);
        else
            QToolTip::hideText();
    });
    chart->addSeries(series);
    // A value axis labelled at the bin edges: as many edges as fit the width (fitBinLabels).
    auto* x = new QCategoryAxis();
    x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    x->setRange(-0.5, static_cast<double>(hist_.counts.size()) - 0.5);
    x->setStartValue(-0.5);
    x->setTitleText(hist_.logarithmic ? tr("length t_i (tokens, bin edges; log-spaced bins)")
                                      : tr("length t_i (tokens, bin edges)"));
    QFont small = x->labelsFont();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    x->setLabelsFont(small);
    auto* y = new QValueAxis();
    y->setRange(0, std::max(1, peak));
    y->setLabelFormat(QStringLiteral("%d"));
    y->applyNiceNumbers();
    if (peak < 4) y->setTickCount(std::max(peak, 1) + 1);
    y->setTitleText(tr("samples"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    fitBinLabels();
    const QColor grid = palette().color(QPalette::Mid);
    x->setGridLineColor(grid);
    y->setGridLineColor(grid);
    x->setLinePenColor(grid);
    y->setLinePenColor(grid);
    x->setLabelsColor(palette().color(QPalette::Text));
    y->setLabelsColor(palette().color(QPalette::Text));
    x->setTitleBrush(palette().color(QPalette::Text));
    y->setTitleBrush(palette().color(QPalette::Text));
}

} // namespace routepack::views
