#include "views/panel_util.h"

#include "views/item_actions.h"
#include "views/plan_explain.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QPainter>
#include <QPalette>
#include <QVBoxLayout>

namespace routepack::views {

QString layerLabel(const PlanResult& plan, int l) {
    const auto& ids = plan.model.moe_layers;
    return QString::number(l >= 0 && l < static_cast<int>(ids.size()) ? ids[static_cast<std::size_t>(l)] : l);
}

QStringList layerLabels(const PlanResult& plan) {
    QStringList out;
    for (int l = 0; l < plan.model.num_moe_layers(); ++l)
        out.append(layerLabel(plan, l));
    return out;
}

QChartView* makeChartView(QWidget* parent, QSize minimum) {
    auto* chart = new QChart;
    chart->setBackgroundRoundness(0);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setAlignment(Qt::AlignBottom);
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing, true);
    view->setMinimumSize(minimum);
    installChartActions(view);
    return view;
}

void clearChart(QChart* chart) {
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) {
        chart->removeAxis(a);
        delete a;
    }
    chart->setTitle(QString());
}

void styleChart(QChart* chart, const QPalette& pal) {
    if (!chart) return;
    const QColor text = pal.color(QPalette::Text);
    QColor grid = pal.color(QPalette::Mid);
    grid.setAlpha(110);
    chart->setBackgroundBrush(pal.brush(QPalette::Base));
    chart->setBackgroundPen(Qt::NoPen);
    chart->setPlotAreaBackgroundVisible(false);
    chart->setTitleBrush(text);
    chart->legend()->setLabelColor(text);
    const auto axes = chart->axes();
    for (QAbstractAxis* a : axes) {
        a->setLabelsColor(text);
        a->setTitleBrush(text);
        a->setGridLineColor(grid);
        a->setLinePenColor(pal.color(QPalette::Mid));
    }
}

QLabel* headingLabel(QWidget* parent) {
    auto* l = new QLabel(parent);
    l->setWordWrap(true);
    l->setTextFormat(Qt::RichText);
    return l;
}

QHBoxLayout* methodPanelLayout(QWidget* self, QComboBox* methodBox, QWidget* heading, QWidget* body) {
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(QObject::tr("Method:"), self));
    bar->addWidget(methodBox);
    auto* v = new QVBoxLayout(self);
    v->addLayout(bar);
    v->addWidget(heading);
    v->addWidget(body, 1);
    return bar;
}

QComboBox* makeScaleCombo(QWidget* parent, bool perLayer) {
    auto* box = new QComboBox(parent);
    box->addItem(QObject::tr("Linear"), static_cast<int>(ColourScale::Linear));
    box->addItem(QObject::tr("Log"), static_cast<int>(ColourScale::Log));
    if (perLayer) box->addItem(QObject::tr("Per layer"), static_cast<int>(ColourScale::PerLayer));
    box->setToolTip(QObject::tr("Colour scale: linear, logarithmic (skewed loads)%1")
                        .arg(perLayer ? QObject::tr(", or each MoE layer over its own range") : QString()));
    return box;
}

} // namespace routepack::views
