#include "views/plan/convergence_panel.h"

#include "views/plan/panel_util.h"
#include "views/widgets/nice_scale.h"

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QLabel>
#include <QLineSeries>
#include <QPen>
#include <QStringList>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace routepack::views {

namespace {

const QColor kBestColour(0xe4, 0x57, 0x56);
const QColor kEnergyColour(0x4c, 0x78, 0xa8);
const QColor kRateColour(0x54, 0xa2, 0x4b);

} // namespace

ConvergencePanel::ConvergencePanel(QWidget* parent) : QWidget(parent) {
    summary_ = headingLabel(this);
    view_ = makeChartView(this);
    view_->setObjectName(QStringLiteral("convergenceChart"));
    QChart* c = view_->chart();
    best_ = new QLineSeries;
    best_->setName(tr("best joint max_g U"));
    energy_ = new QLineSeries;
    energy_->setName(tr("mean energy of chains"));
    acceptance_ = new QLineSeries;
    acceptance_->setName(tr("acceptance rate (right axis)"));
    tail_ = new QLineSeries;
    tail_->setName(tr("final search, placement refinement"));
    tail_->setPen(QPen(kBestColour, 2, Qt::DashLine));
    tail_->setColor(kBestColour);
    tail_->setPointsVisible(true);
    tail_->setPointLabelsVisible(true);
    tail_->setPointLabelsFormat(QStringLiteral("@yPoint"));
    tail_->setPointLabelsClipping(false);
    best_->setPen(QPen(kBestColour, 2));
    energy_->setPen(QPen(kEnergyColour, 2, Qt::DashLine));
    acceptance_->setPen(QPen(kRateColour, 2, Qt::DotLine));
    for (QLineSeries* s : {best_, energy_, acceptance_}) {
        s->setPointsVisible(true);
        c->addSeries(s);
    }
    c->addSeries(tail_);
    best_->setColor(kBestColour);
    energy_->setColor(kEnergyColour);
    acceptance_->setColor(kRateColour);
    x_ = new QValueAxis;
    x_->setTitleText(tr("temperature level, then final search and refinement"));
    x_->setLabelFormat(QStringLiteral("%d"));
    y_ = new QValueAxis;
    y_->setTitleText(tr("cost (tokens)"));
    y_->setLabelFormat(QStringLiteral("%.5g"));
    yRate_ = new QValueAxis;
    yRate_->setTitleText(tr("acceptance"));
    yRate_->setRange(0, 1);
    yRate_->setLabelFormat(QStringLiteral("%.2f"));
    yRate_->setGridLineVisible(false); // the cost axis owns the grid
    c->addAxis(x_, Qt::AlignBottom);
    c->addAxis(y_, Qt::AlignLeft);
    c->addAxis(yRate_, Qt::AlignRight);
    for (QLineSeries* s : {best_, energy_, tail_}) {
        s->attachAxis(x_);
        s->attachAxis(y_);
    }
    acceptance_->attachAxis(x_);
    acceptance_->attachAxis(yRate_);
    c->setTitle(tr("Population annealing convergence"));
    auto* v = new QVBoxLayout(this);
    v->addWidget(summary_);
    v->addWidget(view_, 1);
    styleChart(c, palette());
    rescale();
}

void ConvergencePanel::changeEvent(QEvent* e) {
    if (e->type() == QEvent::PaletteChange) styleChart(view_->chart(), palette());
    QWidget::changeEvent(e);
}

void ConvergencePanel::clear() {
    tailPoints_.clear();
    tail_->clear();
    best_->clear();
    energy_->clear();
    acceptance_->clear();
    rescale();
}

void ConvergencePanel::addLevel(const LevelStats& s) {
    best_->append(s.level, s.best.max_u);
    energy_->append(s.level, s.mean_energy);
    acceptance_->append(s.level, s.acceptance);
    rescale();
}

void ConvergencePanel::setTail(const std::vector<ConvergenceTailPoint>& tail) {
    tailPoints_ = tail;
    rescale();
}

void ConvergencePanel::setEmptyText(const QString& text) {
    emptyText_ = text;
    if (best_->count() == 0) rescale();
}

QString ConvergencePanel::summaryText() const {
    return summary_->text();
}

void ConvergencePanel::setLevels(const std::vector<LevelStats>& levels) {
    QList<QPointF> b, e, a;
    for (const LevelStats& s : levels) {
        b.append(QPointF(s.level, s.best.max_u));
        e.append(QPointF(s.level, s.mean_energy));
        a.append(QPointF(s.level, s.acceptance));
    }
    best_->replace(b);
    energy_->replace(e);
    acceptance_->replace(a);
    rescale();
}

void ConvergencePanel::rescale() {
    const int n = static_cast<int>(best_->count());
    tail_->clear();
    if (n == 0) {
        x_->setRange(0, 1);
        y_->setRange(0, 1);
        summary_->setText(emptyText_.isEmpty() ? tr("No annealing levels yet.") : emptyText_);
        return;
    }
    QList<QPointF> tail{best_->at(n - 1)};
    for (const ConvergenceTailPoint& t : tailPoints_)
        tail.append(QPointF(tail.back().x() + 1, t.max_u));
    if (tail.size() > 1) tail_->replace(tail);
    double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin, rmax = 0;
    for (int i = 0; i < n; ++i) {
        const QPointF b = best_->at(i), e = energy_->at(i);
        xmin = std::min(xmin, b.x()), xmax = std::max(xmax, b.x());
        ymin = std::min({ymin, b.y(), e.y()});
        ymax = std::max({ymax, b.y(), e.y()});
        rmax = std::max(rmax, acceptance_->at(i).y());
    }
    for (const QPointF& t : tail) {
        xmax = std::max(xmax, t.x());
        ymin = std::min(ymin, t.y());
        ymax = std::max(ymax, t.y());
    }
    if (xmax <= xmin) xmax = xmin + 1;
    x_->setRange(xmin, tail.size() > 1 ? xmax + 0.4 : xmax); // room for the last point's label
    // Integer levels on whole ticks: interval 1, 2, 5, 10, 20, ..., 1000 giving at most ~12 labels.
    const double step = round_step({1.0, 2.0, 5.0}, 0, 3, [&](const RoundStep& r) {
                            return (xmax - xmin) / r.step <= 12 || r.step >= 1000;
                        })->step;
    x_->setTickType(QValueAxis::TicksDynamic);
    x_->setTickAnchor(0);
    x_->setTickInterval(step);
    const double pad = std::max((ymax - ymin) * 0.08, std::abs(ymax) * 1e-4 + 1e-12);
    y_->setRange(ymin - pad, ymax + pad);
    y_->applyNiceNumbers();
    yRate_->setRange(0, rmax > 0 ? std::min(1.0, rmax * 1.15) : 1.0);
    const QPointF last = best_->at(n - 1), first = best_->at(0);
    summary_->setText(tr("%n level(s); best joint %1 -> %2 (%3%), last acceptance %4.", nullptr, n)
                          .arg(first.y(), 0, 'f', 4)
                          .arg(last.y(), 0, 'f', 4)
                          .arg(first.y() != 0 ? 100.0 * (last.y() - first.y()) / first.y() : 0.0, 0, 'f', 2)
                          .arg(acceptance_->at(n - 1).y(), 0, 'f', 3));
    QStringList after;
    for (const ConvergenceTailPoint& t : tailPoints_)
        after << tr("%1 %2").arg(QString::fromStdString(t.label)).arg(t.max_u, 0, 'f', 4);
    if (!after.isEmpty())
        summary_->setText(summary_->text() + tr(" Then %1 (the plan's cost).").arg(after.join(QStringLiteral(", "))));
}

} // namespace routepack::views
