#include "views/library/length_histogram_view.h"

#include "views/widgets/item_actions.h"

#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QChart>
#include <QtCharts/QValueAxis>

#include <QCursor>
#include <QEvent>
#include <QFontMetrics>
#include <QResizeEvent>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace routepack::views {

LengthHistogramView::LengthHistogramView(QWidget* parent) : QChartView(parent) {
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(160);
    auto* chart = new QChart();
    chart->legend()->hide();
    chart->setMargins(QMargins(4, 4, 4, 4));
    setChart(chart);
    installChartActions(this);
    // The plot area changes without a resize of the view too (new data, wider value labels): the
    // edge labels are fitted again then, once the layout has settled.
    connect(
        chart, &QChart::plotAreaChanged, this, [this] { fitBinLabels(); }, Qt::QueuedConnection);
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
