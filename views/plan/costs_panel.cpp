#include "views/plan/costs_panel.h"

#include "views/plan/gain_explanation.h"
#include "views/plan/method_combo.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_explain.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QCursor>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QScatterSeries>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>

namespace routepack::views {

namespace {

// Series colours: mid-tone, distinct on white and on dark grey backgrounds.
const QColor kAttentionColour(0x4c, 0x78, 0xa8);
const QColor kExpertColour(0xf5, 0x85, 0x18);
const QColor kStragglerAttention(0x8e, 0x44, 0xad);
const QColor kStragglerExpert(0xd6, 0x27, 0x28);
const QColor kTotalColour(0x54, 0xa2, 0x4b);
const QColor kBalancedColour(0x8c, 0x8c, 0x8c);      ///< shard totals all tied: no straggler colour
const QColor kBaselineTotalColour(0x79, 0x86, 0x9a); ///< the baseline's U[g] beside the shown method's
const QColor kTallestColour(0xf2, 0xd5, 0x3c);       ///< marker on the tallest row-shard bar

} // namespace

CostsPanel::CostsPanel(QWidget* parent) : QWidget(parent) {
    methodBox_ = methodCombo(this);
    sideBox_ = new QCheckBox(tr("Baseline side by side"), this);
    sideBox_->setToolTip(tr("Show the baseline's row-shard costs left of the shown method's, on the same y-axis"));
    heading_ = headingLabel(this);
    baseView_ = makeChartView(this);
    rowView_ = makeChartView(this);
    shardView_ = makeChartView(this);
    sideBox_->setObjectName(QStringLiteral("sideBySide"));
    baseView_->setObjectName(QStringLiteral("baselineRowChart"));
    rowView_->setObjectName(QStringLiteral("rowChart"));
    shardView_->setObjectName(QStringLiteral("shardChart"));
    baseView_->hide();
    split_ = new QSplitter(Qt::Horizontal, this);
    split_->addWidget(baseView_);
    split_->addWidget(rowView_);
    split_->addWidget(shardView_);
    split_->setStretchFactor(0, 3);
    split_->setStretchFactor(1, 3);
    split_->setStretchFactor(2, 1);
    QHBoxLayout* bar = methodPanelLayout(this, methodBox_, heading_, split_);
    bar->addSpacing(12);
    bar->addWidget(sideBox_);
    bar->addStretch(1);
    gain_ = headingLabel(this);
    gain_->setMargin(4);
    gain_->setTextInteractionFlags(Qt::TextBrowserInteraction);
    gain_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    gain_->setOpenExternalLinks(false);
    connect(gain_, &QLabel::linkActivated, this, &CostsPanel::explainLinkActivated);
    // The table under the charts scrolls inside a bounded height: it never raises the page's minimum.
    gainArea_ = new QScrollArea(this);
    gainArea_->setWidget(gain_);
    gainArea_->setWidgetResizable(true);
    gainArea_->setFrameShape(QFrame::StyledPanel);
    gainArea_->setMinimumHeight(60);
    gainArea_->setMaximumHeight(190);
    gainArea_->hide();
    if (auto* v = qobject_cast<QVBoxLayout*>(layout())) v->addWidget(gainArea_);
    connect(methodBox_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(sideBox_, &QCheckBox::toggled, this, [this] { refresh(); });
}

void CostsPanel::setSideBySide(bool on) {
    sideBox_->setChecked(on);
}

bool CostsPanel::sideBySide() const {
    return sideBox_->isChecked();
}

int tallestRowShard(const CostBreakdown& costs) {
    if (costs.J.empty()) return -1;
    return static_cast<int>(std::max_element(costs.J.begin(), costs.J.end()) - costs.J.begin());
}

QString CostsPanel::gainText() const {
    return gainArea_->isHidden() ? QString() : gain_->text();
}

void CostsPanel::setPlan(const std::shared_ptr<const PlanResult>& plan, std::shared_ptr<const PlanCosts> costs,
                         std::shared_ptr<const GainSplit> gain) {
    plan_ = plan;
    costs_ = std::move(costs);
    gainSplit_ = costs_ ? std::move(gain) : nullptr;
    fillMethodCombo(methodBox_, plan_.get());
    refresh();
}

void CostsPanel::setMethod(Method method) {
    setComboMethod(methodBox_, method);
}
Method CostsPanel::method() const {
    return comboMethod(methodBox_);
}

void CostsPanel::changeEvent(QEvent* e) {
    if (e->type() == QEvent::PaletteChange) {
        const QColor text = palette().color(QPalette::Text);
        for (QChartView* v : {baseView_, rowView_, shardView_})
            styleChart(v->chart(), palette());
        for (QBarSet* set : {total_, baseTotal_})
            if (set) set->setLabelColor(text);
        for (QScatterSeries* marker : {tallestMarker_, baseTallestMarker_})
            if (marker) marker->setPointLabelsColor(text);
    }
    QWidget::changeEvent(e);
}

CostsPanel::RowChart CostsPanel::fillRowChart(QChart* rc, Method m, double maxJ) {
    RowChart out;
    const CostBreakdown& cb = costs_->method[m];
    const int R = cb.rows, G = cb.shards;
    const int straggler = costs_->straggler[m];
    const int tallest = tallestRowShard(cb);
    const QColor text = palette().color(QPalette::Text);

    // Stacked A + E per (r, g): categories rows outer, shards inner.
    out.attention = new QBarSet(tr("attention A[r][g]"));
    out.expert = new QBarSet(tr("expert E[r][g]"));
    out.attention->setColor(kAttentionColour);
    out.expert->setColor(kExpertColour);
    out.attention->setBorderColor(kAttentionColour);
    out.expert->setBorderColor(kExpertColour);
    out.attention->setSelectedColor(kStragglerAttention);
    out.expert->setSelectedColor(kStragglerExpert);
    QList<int> stragglerBars;
    QStringList categories;
    for (int r = 0; r < R; ++r)
        for (int g = 0; g < G; ++g) {
            const std::size_t k = static_cast<std::size_t>(r) * G + g;
            out.attention->append(cb.A[k]);
            out.expert->append(cb.E[k]);
            categories.append(G > 1 ? QStringLiteral("r%1 g%2").arg(r).arg(g) : QStringLiteral("r%1").arg(r));
            if (g == straggler) stragglerBars.append(static_cast<int>(k));
        }
    if (G > 1) {
        out.attention->selectBars(stragglerBars);
        out.expert->selectBars(stragglerBars);
    }
    auto* stacked = new QStackedBarSeries;
    stacked->append(out.attention);
    stacked->append(out.expert);
    stacked->setBarWidth(0.8);
    rc->addSeries(stacked);
    // The tallest bar: a marker on its top with its J, named in the legend.
    out.tallest = new QScatterSeries;
    if (tallest >= 0) {
        const std::size_t k = static_cast<std::size_t>(tallest);
        const int r = tallest / G, g = tallest % G;
        out.tallest->setName(tr("tallest: %1, J = %2")
                                 .arg(G > 1 ? QStringLiteral("r%1 g%2").arg(r).arg(g) : QStringLiteral("r%1").arg(r))
                                 .arg(cb.J[k], 0, 'f', 4));
        out.tallest->append(tallest, cb.J[k]);
    }
    out.tallest->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
    out.tallest->setMarkerSize(13);
    out.tallest->setColor(kTallestColour);
    out.tallest->setBorderColor(text);
    out.tallest->setPointLabelsFormat(QStringLiteral("J = @yPoint"));
    out.tallest->setPointLabelsVisible(true);
    out.tallest->setPointLabelsClipping(false);
    out.tallest->setPointLabelsColor(text);
    rc->addSeries(out.tallest);
    auto* cx = new QBarCategoryAxis;
    cx->append(categories);
    if (categories.size() > 6) cx->setLabelsAngle(-90); // "r3 g1" labels are elided side by side in a narrow dock
    if (categories.size() > 64) {
        cx->setLabelsVisible(false);
        cx->setTitleText(tr("%1 row-shards (r, g), rows outer").arg(categories.size()));
    } else {
        cx->setTitleText(G > 1 ? tr("row r, EDP shard g") : tr("row r"));
    }
    auto* cy = new QValueAxis;
    cy->setTitleText(tr("cost J = A + E (tokens)"));
    cy->setLabelFormat(QStringLiteral("%.3g"));
    rc->addAxis(cx, Qt::AlignBottom);
    rc->addAxis(cy, Qt::AlignLeft);
    stacked->attachAxis(cx);
    stacked->attachAxis(cy);
    out.tallest->attachAxis(cx);
    out.tallest->attachAxis(cy);
    cy->setRange(0, maxJ > 0 ? maxJ * 1.05 : 1);
    cy->applyNiceNumbers();
    // Two short lines rather than one that a narrow chart elides.
    rc->setTitle(G > 1 ? tr("%1: row-shard costs<br>straggler shard g%2: purple (A), red (E)")
                             .arg(QString::fromLatin1(method_label(m)))
                             .arg(straggler)
                       : tr("%1: row costs").arg(QString::fromLatin1(method_label(m))));
    // Exact values of the bar under the mouse.
    QChartView* view = rc == baseView_->chart() ? baseView_ : rowView_;
    for (QBarSet* set : {out.attention, out.expert})
        connect(set, &QBarSet::hovered, view, [this, view, m](bool on, int index) {
            if (on)
                QToolTip::showText(QCursor::pos(), rowBarToolTip(index, m), view);
            else
                QToolTip::hideText();
        });
    connect(out.tallest, &QScatterSeries::hovered, view, [this, view, m, tallest](const QPointF&, bool on) {
        if (on)
            QToolTip::showText(QCursor::pos(), rowBarToolTip(tallest, m), view);
        else
            QToolTip::hideText();
    });
    styleChart(rc, palette());
    if (rc == rowView_->chart()) categories_ = categories;
    return out;
}

void CostsPanel::refresh() {
    for (QChartView* v : {baseView_, rowView_, shardView_})
        clearChart(v->chart());
    attention_ = expert_ = total_ = nullptr;
    baseAttention_ = baseExpert_ = baseTotal_ = nullptr;
    tallestMarker_ = baseTallestMarker_ = nullptr;
    categories_.clear();
    straggler_ = -1;
    tallest_ = -1;
    gain_->clear();
    gainArea_->hide();
    const Method m = method();
    // Side by side needs a second method to show; the baseline itself is shown alone.
    const bool side = sideBySide() && plan_ && costs_ && m != Method::Baseline;
    if (side != baseView_->isVisibleTo(this)) {
        // Side by side the two row-shard charts share the one chart's minimum width: the option
        // never makes the page (and the window) wider than it was.
        const int chartMin = kChartMinimum.width();
        baseView_->setMinimumWidth(chartMin / 2);
        rowView_->setMinimumWidth(side ? chartMin / 2 : chartMin);
        baseView_->setVisible(side);
        // The two row-shard charts equally wide, the totals chart at a third of one.
        const int w = std::max(split_->width(), 700);
        split_->setSizes(side ? QList<int>{3 * w / 7, 3 * w / 7, w / 7} : QList<int>{0, 3 * w / 4, w / 4});
    }
    if (!plan_) {
        heading_->clear();
        return;
    }
    if (!costs_) {
        heading_->setText(
            !countsNote_.isEmpty()
                ? countsNote_
                : tr("Row-shard costs need the window's routing counts (not loaded for this plan, or the window "
                     "is too large to score on the GUI thread). Method metrics are in the compare view."));
        return;
    }
    if (gainSplit_) {
        gain_->setText(gainExplanationText(*gainSplit_, *plan_));
        gainArea_->show();
    }
    straggler_ = costs_->straggler[m];
    tallest_ = tallestRowShard(costs_->method[m]);

    // One y-axis for every method (switching methods compares bar heights), in both charts.
    double maxJ = 0, maxU = 0;
    for (const CostBreakdown& any : costs_->method) {
        for (double j : any.J)
            maxJ = std::max(maxJ, j);
        for (double u : any.U)
            maxU = std::max(maxU, u);
    }
    const RowChart shown = fillRowChart(rowView_->chart(), m, maxJ);
    attention_ = shown.attention;
    expert_ = shown.expert;
    tallestMarker_ = shown.tallest;
    if (side) {
        const RowChart base = fillRowChart(baseView_->chart(), Method::Baseline, maxJ);
        baseAttention_ = base.attention;
        baseExpert_ = base.expert;
        baseTallestMarker_ = base.tallest;
    }
    fillShardChart(m, side, maxU);
    showHeading(m);
}

QBarSet* CostsPanel::shardTotals(Method method, bool side, const QColor& colour) const {
    const CostBreakdown& c = costs_->method[method];
    auto* set =
        new QBarSet(side ? tr("%1 U[g]").arg(QString::fromLatin1(method_label(method))) : tr("U[g] = sum_r J[r][g]"));
    set->setColor(colour);
    set->setBorderColor(colour);
    set->setSelectedColor(kStragglerExpert);
    set->setLabelColor(palette().color(QPalette::Text));
    for (int g = 0; g < c.shards; ++g)
        set->append(c.U[static_cast<std::size_t>(g)]);
    const std::vector<int> tied = tiedShards(c.U, kShardTieTolerance);
    set->selectBars(QList<int>(tied.begin(), tied.end())); // tied with the straggler
    if (c.shards > 1 && static_cast<int>(tied.size()) == c.shards) {
        set->setColor(kBalancedColour);
        set->setBorderColor(kBalancedColour);
        set->setSelectedColor(kBalancedColour);
    }
    return set;
}

void CostsPanel::fillShardChart(Method m, bool side, double maxU) {
    // U[g] per shard, straggler selected; side by side the baseline's totals first.
    QChart* sc = shardView_->chart();
    const int G = costs_->method[m].shards;
    QStringList shards;
    for (int g = 0; g < G; ++g)
        shards.append(QStringLiteral("g%1").arg(g));
    auto* bars = new QBarSeries;
    if (side) {
        baseTotal_ = shardTotals(Method::Baseline, side, kBaselineTotalColour);
        bars->append(baseTotal_);
    }
    total_ = shardTotals(m, side, kTotalColour);
    bars->append(total_);
    bars->setLabelsVisible(true);
    bars->setLabelsPosition(QAbstractBarSeries::LabelsInsideEnd);
    bars->setLabelsFormat(QStringLiteral("@value"));
    bars->setLabelsPrecision(5);
    bars->setLabelsAngle(G > 2 || side ? -90 : 0); // horizontal labels of 3+ bars overlap in the narrow chart
    sc->addSeries(bars);
    auto* sx = new QBarCategoryAxis;
    sx->append(shards);
    sx->setTitleText(tr("EDP shard"));
    auto* sy = new QValueAxis;
    sy->setTitleText(tr("U[g] (tokens)"));
    sy->setLabelFormat(QStringLiteral("%.3g"));
    sy->setRange(0, maxU > 0 ? maxU * 1.1 : 1);
    sy->applyNiceNumbers();
    sc->addAxis(sx, Qt::AlignBottom);
    sc->addAxis(sy, Qt::AlignLeft);
    bars->attachAxis(sx);
    bars->attachAxis(sy);
    // Side by side, two short title lines name the bars (a legend would be elided in this narrow chart).
    sc->setTitle(
        side ? tr("Shard totals U[g]<br>left: %1, right: %2")
                   .arg(QString::fromLatin1(method_label(Method::Baseline)), QString::fromLatin1(method_label(m)))
             : tr("Shard totals U[g]"));
    sc->legend()->setVisible(false);
    for (QBarSet* set : {baseTotal_, total_}) {
        if (!set) continue;
        const Method method = set == baseTotal_ ? Method::Baseline : m;
        connect(set, &QBarSet::hovered, shardView_, [this, method](bool on, int index) {
            if (on)
                QToolTip::showText(QCursor::pos(), shardBarToolTip(index, method), shardView_);
            else
                QToolTip::hideText();
        });
    }
    styleChart(sc, palette());
}

void CostsPanel::showHeading(Method m) {
    const CostBreakdown& cb = costs_->method[m];
    const int R = cb.rows, G = cb.shards;
    const std::vector<int> tied = tiedShards(cb.U, kShardTieTolerance);
    const bool balanced = G > 1 && static_cast<int>(tied.size()) == G;
    const LayoutMetrics& metrics = method_of(*plan_, m).metrics;
    const int tallRow = tallest_ / std::max(G, 1), tg = tallest_ % std::max(G, 1);
    heading_->setText(
        (balanced ? tr("<b>Balanced:</b> every shard within %1% of max_g U (shown alike). ")
                        .arg(100 * kShardTieTolerance, 0, 'g', 3)
                  : QString()) +
        tr("<b>Straggler: shard g%1</b>, U = %2 (= joint, max_g U, eq. 15); sum U = %3; max J = %4 "
           "(%5, the tallest bar, marked). %6 rows x %7 EDP shards.")
            .arg(straggler_)
            .arg(cb.U[static_cast<std::size_t>(straggler_)], 0, 'f', 4)
            .arg(metrics.score.sum_u, 0, 'f', 4)
            .arg(metrics.score.max_j, 0, 'f', 4)
            .arg(G > 1 ? QStringLiteral("r%1 g%2").arg(tallRow).arg(tg) : QStringLiteral("r%1").arg(tallRow))
            .arg(R)
            .arg(G) +
        (placement_of(*plan_, m) == planned_placement(*plan_) && plan_->bound.value > 0
             ? tr(" Lower bound on max_g U at this placement (any layout): %1, gap %2%.")
                   .arg(plan_->bound.value, 0, 'f', 4)
                   .arg(100.0 * bound_gap(metrics.score.max_u, plan_->bound.value), 0, 'f', 2)
             : QString()));
}

std::vector<int> tiedShards(const std::vector<double>& U, double tolerance) {
    double maxU = 0;
    for (double u : U)
        maxU = std::max(maxU, u);
    std::vector<int> out;
    for (std::size_t g = 0; g < U.size(); ++g)
        if (maxU <= 0 || maxU - U[g] <= tolerance * maxU) out.push_back(static_cast<int>(g));
    return out;
}

QString CostsPanel::headingText() const {
    return heading_->text();
}

QString CostsPanel::rowBarToolTip(int index) const {
    return rowBarToolTip(index, method());
}

QString CostsPanel::rowBarToolTip(int index, Method m) const {
    if (!plan_ || !costs_ || straggler_ < 0 || !has_method(*plan_, m)) return {};
    const CostBreakdown& cb = costs_->method[m];
    if (index < 0 || static_cast<std::size_t>(index) >= cb.J.size() || cb.shards < 1) return {};
    const int r = index / cb.shards, g = index % cb.shards;
    const auto k = static_cast<std::size_t>(index);
    const int straggler = costs_->straggler[m];
    return tr("<b>%1: row %2, EDP shard g%3</b>%4<br>A = %5 (attention, eq. 12)<br>E = %6 (expert, eq. 14)<br>"
              "J = A + E = %7%8")
        .arg(QString::fromLatin1(method_label(m)))
        .arg(r)
        .arg(g)
        .arg(g == straggler && cb.shards > 1 ? tr(" (straggler shard)") : QString())
        .arg(cb.A[k], 0, 'f', 4)
        .arg(cb.E[k], 0, 'f', 4)
        .arg(cb.J[k], 0, 'f', 4)
        .arg(index == tallestRowShard(cb) ? tr("<br>the tallest row-shard (max J)") : QString());
}

QString CostsPanel::shardBarToolTip(int g) const {
    return shardBarToolTip(g, method());
}

QString CostsPanel::shardBarToolTip(int g, Method m) const {
    if (!plan_ || !costs_ || straggler_ < 0 || !has_method(*plan_, m)) return {};
    const CostBreakdown& cb = costs_->method[m];
    if (g < 0 || g >= cb.shards) return {};
    const int straggler = costs_->straggler[m];
    QStringList slots;
    for (int d : plan_->topology.edp_shards[static_cast<std::size_t>(g)])
        slots << QString::number(d);
    const double u = cb.U[static_cast<std::size_t>(g)], top = cb.U[static_cast<std::size_t>(straggler)];
    return tr("<b>%1: EDP shard g%2</b> (DP slots %3)<br>U = sum_r J[r][g] = %4<br>%5")
        .arg(QString::fromLatin1(method_label(m)))
        .arg(g)
        .arg(slots.join(QLatin1Char(',')))
        .arg(u, 0, 'f', 4)
        .arg(g == straggler ? tr("the straggler: U = max_g U, the joint cost (eq. 15)")
                            : tr("%1 below the straggler g%2 (%3 %)")
                                  .arg(top - u, 0, 'f', 4)
                                  .arg(straggler)
                                  .arg(top > 0 ? 100.0 * (top - u) / top : 0.0, 0, 'f', 2));
}

} // namespace routepack::views
