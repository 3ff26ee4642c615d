// RunView's charts (views/run/run_view.h): the cost, churn, gain, apply and frontier charts of a run's
// steps, their step axis and their tooltips.
#include "views/run/run_view.h"

#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QMouseEvent>
#include <QPushButton>
#include <QScatterSeries>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QStackedWidget>
#include <QTabWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include <algorithm>
#include <cmath>

namespace routepack::views {

namespace {

/// Line colours of the methods (baseline, reorder, Karmarkar-Karp, RoutePack, Grouter,
/// RoutePack+comm): mid-tone, readable on light and dark backgrounds.
const PerMethod<QColor> kMethodColours{{QColor(0x8c, 0x8c, 0x8c), QColor(0x4c, 0x78, 0xa8), QColor(0xf5, 0x85, 0x18),
                                        QColor(0x54, 0xa2, 0x4b), QColor(0x72, 0xb7, 0xb2), QColor(0xd6, 0x27, 0x28)}};
const QColor kChurnColour(0xb2, 0x79, 0xa2);
const QColor kGainColour(0x54, 0xa2, 0x4b);
const QColor kComputeColour(0x4c, 0x78, 0xa8);
const QColor kMaterializationColour(0xe4, 0x57, 0x56);

QString pct(double v) {
    return QString::asprintf("%+.2f %%", v);
}

} // namespace

QBarCategoryAxis* RunView::stepAxis(const RunSeries& s, const QString& title, bool names) const {
    const auto n = static_cast<int>(s.steps.size());
    // The cost chart labels its steps with the window names (elided from the left, so that the step
    // number at their end stays) while they fit, else with the step numbers; the narrower churn chart
    // with the step numbers (its tooltip names the window).
    QStringList cats;
    if (names) {
        const QFontMetrics fm(font());
        for (int k = 0; k < n; ++k) {
            const QString name = QString::fromStdString(s.steps[static_cast<std::size_t>(k)].window);
            cats << (n <= 12 ? fm.elidedText(name, Qt::ElideLeft, 96) : QString::number(k));
        }
        cats.removeDuplicates();
    }
    if (cats.size() != n) {
        cats.clear();
        for (int k = 0; k < n; ++k)
            cats << QString::number(k);
    }
    auto* x = new QBarCategoryAxis;
    x->append(cats);
    x->setTitleText(title);
    return x;
}

void RunView::fillCostChart(const RunSeries& s) {
    // Cost per step and method.
    QChart* c = costView_->chart();
    clearChart(c);
    for (auto& line : cost_)
        line = nullptr;
    double top = 0;
    for (const Method m : s.methods) {
        auto* line = new QLineSeries;
        line->setName(QString::fromLatin1(method_label(m)));
        QPen pen(kMethodColours[m]);
        pen.setWidthF(m == Method::RoutePack ? 2.5 : 1.6);
        // The communication-aware methods are dashed: their costs carry their own placements.
        if (is_comm_method(m)) pen.setStyle(Qt::DashLine);
        line->setPen(pen);
        line->setColor(kMethodColours[m]);
        line->setPointsVisible(true);
        line->setMarkerSize(m == Method::RoutePack ? 8 : 6);
        // A step whose plan lacks the method (no routes, cancelled before it ran) has no point.
        for (std::size_t k = 0; k < s.steps.size(); ++k) {
            const RunStep& st = s.steps[k];
            if (!st.has[m]) continue;
            line->append(static_cast<qreal>(k), st.cost[m]);
            top = std::max(top, st.cost[m]);
        }
        c->addSeries(line);
        cost_[m] = line;
    }
    auto* x = stepAxis(s, tr("step (window in run order)"), true);
    auto* y = new QValueAxis;
    y->setTitleText(tr("max_g U (tokens)"));
    y->setLabelFormat(QStringLiteral("%.4g"));
    y->setRange(0, top > 0 ? top * 1.08 : 1);
    y->applyNiceNumbers();
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    for (QLineSeries* line : cost_) {
        if (!line) continue;
        line->attachAxis(x);
        line->attachAxis(y);
    }
    c->setTitle(tr("Joint cost per step and method (eq. 15); click a step to show its plan"));
    c->legend()->setVisible(true);
    styleChart(c, palette());
}

void RunView::fillChurnChart(const RunSeries& s, const RunSeriesSummary& summary) {
    // Churn per step.
    QChart* c = churnView_->chart();
    clearChart(c);
    auto* churn = new QBarSeries;
    movesSet_ = new QBarSet(tr("experts moved"));
    churnSet_ = new QBarSet(tr("changed slots"));
    churnSet_->setColor(kChurnColour);
    churnSet_->setBorderColor(kChurnColour);
    for (const auto& st : s.steps) {
        movesSet_->append(static_cast<double>(std::max<std::int64_t>(0, st.moves)));
        churnSet_->append(static_cast<double>(std::max<std::int64_t>(0, st.churn)));
    }
    const std::int64_t most = summary.most_changed;
    churn->append(movesSet_);
    churn->append(churnSet_);
    churn->setBarWidth(0.6);
    c->addSeries(churn);
    const QFontMetrics fm(font());
    auto* x = stepAxis(
        s, tr("step (0 = %1)").arg(fm.elidedText(QString::fromStdString(s.steps.front().window), Qt::ElideLeft, 120)),
        false);
    auto* y = new QValueAxis;
    y->setTitleText(tr("experts / slots"));
    y->setLabelFormat(QStringLiteral("%d"));
    y->setRange(0, most > 0 ? static_cast<double>(most) * 1.1 : 1);
    y->applyNiceNumbers();
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    churn->attachAxis(x);
    churn->attachAxis(y);
    c->setTitle(tr("Moves vs the previous step (of %1 slots)").arg(s.slots));
    c->legend()->setVisible(true);
    styleChart(c, palette());
}

void RunView::fillGainChart(const RunSeries& s) {
    // Distribution of the gains.
    QChart* c = gainView_->chart();
    clearChart(c);
    bins_ = gain_histogram(s);
    auto* gains = new QBarSeries;
    gainSet_ = new QBarSet(tr("steps"));
    gainSet_->setColor(kGainColour);
    gainSet_->setBorderColor(kGainColour);
    QStringList binLabels;
    int tallest = 0;
    for (const auto& b : bins_) {
        gainSet_->append(static_cast<double>(b.steps.size()));
        tallest = std::max(tallest, static_cast<int>(b.steps.size()));
        binLabels << QString::number(b.lo, 'g', 4); // the bin's start; the range is in the tooltip
    }
    gains->append(gainSet_);
    gains->setBarWidth(0.9);
    c->addSeries(gains);
    auto* bx = new QBarCategoryAxis;
    bx->append(binLabels);
    bx->setTitleText(tr("routepack vs baseline (%, bin start)"));
    auto* y = new QValueAxis;
    y->setTitleText(tr("steps"));
    y->setLabelFormat(QStringLiteral("%d"));
    y->setRange(0, std::max(1, tallest));
    y->setTickCount(std::min(tallest, 5) + 1);
    c->addAxis(bx, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    gains->attachAxis(bx);
    gains->attachAxis(y);
    c->setTitle(tr("Distribution of the gains (negative: cheaper)"));
    c->legend()->setVisible(false);
    styleChart(c, palette());
    connect(gains, &QAbstractBarSeries::hovered, gainView_, [this](bool on, int index, QBarSet*) {
        if (on)
            QToolTip::showText(QCursor::pos(), gainBinToolTip(index), gainView_);
        else
            QToolTip::hideText();
    });
}

void RunView::fillApplyChart(const RunSeries& s) {
    QChart* c = applyView_->chart();
    clearChart(c);
    computeSet_ = materializationSet_ = nullptr;
    const bool costs = has_migration_costs(s);
    applyView_->setVisible(costs);
    if (!costs) return;
    auto* bars = new QStackedBarSeries;
    computeSet_ = new QBarSet(tr("compute"));
    materializationSet_ = new QBarSet(tr("materialization"));
    computeSet_->setColor(kComputeColour);
    computeSet_->setBorderColor(kComputeColour);
    materializationSet_->setColor(kMaterializationColour);
    materializationSet_->setBorderColor(kMaterializationColour);
    double top = 0;
    for (const SweepLine& l : s.table) {
        const double compute = l.compute_s.value_or(0), moves = l.materialization_s.value_or(0);
        computeSet_->append(compute);
        materializationSet_->append(moves);
        top = std::max(top, compute + moves);
    }
    bars->append(computeSet_);
    bars->append(materializationSet_);
    bars->setBarWidth(0.6);
    c->addSeries(bars);
    auto* x = stepAxis(s, tr("step"), false);
    auto* y = new QValueAxis;
    y->setTitleText(tr("seconds"));
    y->setLabelFormat(QStringLiteral("%.3g"));
    y->setRange(0, top > 0 ? top * 1.1 : 1);
    y->applyNiceNumbers();
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    bars->attachAxis(x);
    bars->attachAxis(y);
    c->setTitle(tr("Modelled time per step; click a step for its frontier"));
    c->legend()->setVisible(true);
    styleChart(c, palette());
}

void RunView::fillFrontierChart() {
    QChart* c = frontierView_->chart();
    clearChart(c);
    frontierLine_ = nullptr;
    frontierSaved_ = nullptr;
    const StepFrontier* f = frontier_.get();
    frontierNote_->setText(frontierNote());
    frontierNote_->setToolTip(frontierNote_->text());
    if (!f || f->points.empty()) {
        c->setTitle(tr("Frontier: max_g U against experts moved"));
        styleChart(c, palette());
        return;
    }
    frontierLine_ = new QLineSeries;
    frontierLine_->setName(tr("budgeted plans"));
    QPen pen(kMethodColours[Method::RoutePack]);
    pen.setWidthF(2.0);
    frontierLine_->setPen(pen);
    frontierLine_->setPointsVisible(true);
    double lo = f->saved_max_u, hi = f->saved_max_u;
    std::int64_t most = f->saved_moves;
    for (const FrontierPoint& p : f->points) {
        frontierLine_->append(static_cast<qreal>(p.moves), p.max_u);
        lo = std::min(lo, p.max_u);
        hi = std::max(hi, p.max_u);
        most = std::max(most, p.moves);
    }
    frontierSaved_ = new QScatterSeries;
    frontierSaved_->setName(tr("the saved plan"));
    frontierSaved_->setColor(kMaterializationColour);
    frontierSaved_->setMarkerSize(10);
    frontierSaved_->append(static_cast<qreal>(f->saved_moves), f->saved_max_u);
    c->addSeries(frontierLine_);
    c->addSeries(frontierSaved_);
    auto* x = new QValueAxis;
    x->setTitleText(tr("experts moved (of %1)").arg(f->experts));
    x->setLabelFormat(QStringLiteral("%d"));
    x->setRange(0, most > 0 ? static_cast<double>(most) * 1.05 : 1);
    x->applyNiceNumbers();
    auto* y = new QValueAxis;
    y->setTitleText(tr("max_g U"));
    y->setLabelFormat(QStringLiteral("%.4g"));
    const double pad = hi > lo ? 0.08 * (hi - lo) : std::max(1e-6, 0.01 * hi);
    y->setRange(lo - pad, hi + pad);
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    for (QXYSeries* series : {static_cast<QXYSeries*>(frontierLine_), static_cast<QXYSeries*>(frontierSaved_)}) {
        series->attachAxis(x);
        series->attachAxis(y);
    }
    connect(frontierLine_, &QLineSeries::hovered, frontierView_, [this](const QPointF& p, bool on) {
        if (!on || !frontier_) return QToolTip::hideText();
        int best = 0;
        for (int i = 1; i < static_cast<int>(frontier_->points.size()); ++i)
            if (std::abs(static_cast<double>(frontier_->points[static_cast<std::size_t>(i)].moves) - p.x()) <
                std::abs(static_cast<double>(frontier_->points[static_cast<std::size_t>(best)].moves) - p.x()))
                best = i;
        QToolTip::showText(QCursor::pos(), frontierPointToolTip(best), frontierView_);
    });
    c->setTitle(tr("Frontier of step %1 (%2)").arg(f->step).arg(QString::fromStdString(f->window)));
    c->legend()->setVisible(true);
    styleChart(c, palette());
}

QString RunView::frontierPointToolTip(int i) const {
    if (!frontier_ || i < 0 || i >= static_cast<int>(frontier_->points.size())) return {};
    const FrontierPoint& p = frontier_->points[static_cast<std::size_t>(i)];
    const double keep = frontier_->points.front().max_u, full = frontier_->points.back().max_u;
    QString tip = tr("<b>budget %1 % (%2 experts)</b><br>%3 experts moved, max_g U = %4")
                      .arg(100.0 * p.fraction, 0, 'g', 3)
                      .arg(p.max_moves)
                      .arg(p.moves)
                      .arg(p.max_u, 0, 'f', 4);
    if (keep > full)
        tip += tr("<br>%1 % of full re-placement's gain").arg(100.0 * (keep - p.max_u) / (keep - full), 0, 'f', 1);
    return tip;
}

QString RunView::stepToolTip(int k) const {
    const RunSeries* s = currentSeries();
    if (!s || k < 0 || k >= static_cast<int>(s->steps.size())) return {};
    const RunStep& st = s->steps[static_cast<std::size_t>(k)];
    const QString run =
        st.run_name.empty()
            ? tr("run %1").arg(st.run)
            : tr("run %1 \u00b7 %2").arg(st.run).arg(QString::fromStdString(st.run_name).toHtmlEscaped());
    QString tip = tr("<b>step %1: %2</b><br>%3 (%4%5), %6 samples, R* = %7%8<br>")
                      .arg(k)
                      .arg(QString::fromStdString(st.window).toHtmlEscaped())
                      .arg(run)
                      .arg(QString::fromStdString(st.status))
                      .arg(st.runs > 1 ? tr(", newest of %1 runs").arg(st.runs) : QString())
                      .arg(st.samples)
                      .arg(st.rows)
                      .arg(st.certified ? tr(" (certified)") : QString());
    const double base = st.cost[Method::Baseline];
    for (const Method m : s->methods) {
        if (!st.has[m]) {
            tip += tr("%1: did not run (no per-token routes, or cancelled before it)<br>")
                       .arg(QString::fromLatin1(method_label(m)));
            continue;
        }
        tip += tr("%1: max_g U = %2").arg(QString::fromLatin1(method_label(m))).arg(st.cost[m], 0, 'f', 4);
        // The communication-aware methods: their gain against the baseline and their inter-node copies.
        if (is_comm_method(m) && base > 0) tip += tr(" (%1 vs baseline)").arg(pct(100.0 * (st.cost[m] - base) / base));
        if (st.inter_copies[m] >= 0)
            tip += tr(", %1 inter-node copies").arg(QString::fromStdString(grouped_count(st.inter_copies[m])));
        tip += QStringLiteral("<br>");
    }
    // Measured steps of the run's layouts (a measured step imported into the library), beside the model.
    QStringList measured;
    for (const Method m : s->methods)
        if (st.measured[m])
            measured << tr("%1 %2 s").arg(QString::fromLatin1(method_label(m))).arg(*st.measured[m], 0, 'g', 4);
    if (!measured.isEmpty()) {
        tip += tr("measured: %1").arg(measured.join(QStringLiteral(", ")));
        const std::optional<double>&mb = st.measured[Method::Baseline], &mr = st.measured[Method::RoutePack];
        if (mb && mr && *mb > 0)
            tip += tr(" (routepack vs baseline %1 measured, %2 modelled)")
                       .arg(pct(100.0 * (*mr - *mb) / *mb), pct(st.gain_pct));
        tip += QStringLiteral("<br>");
    }
    const double reorder = st.cost[Method::Reorder];
    tip += tr("routepack vs baseline %1, vs reorder %2<br>")
               .arg(pct(st.gain_pct), reorder > 0 ? pct(100.0 * (st.cost[Method::RoutePack] - reorder) / reorder)
                                                  : QStringLiteral("n/a"));
    if (st.churn < 0)
        tip += tr("churn: first step (no previous window)");
    else
        tip += tr("churn vs %1: %2 of %3 slots change expert%4")
                   .arg(QString::fromStdString(st.previous).toHtmlEscaped())
                   .arg(st.churn)
                   .arg(s->slots)
                   .arg(st.churn_layer >= 0
                            ? tr("; most in MoE layer %1 (%2)").arg(st.churn_layer).arg(st.churn_layer_slots)
                            : QString());
    if (st.moves >= 0) tip += tr("<br>experts moved to another EP rank: %1").arg(st.moves);
    // The plan's migration section with a cost model: what applying the step costs (sweep's columns).
    if (static_cast<std::size_t>(k) < s->table.size()) {
        const SweepLine& l = s->table[static_cast<std::size_t>(k)];
        if (l.compute_s && l.materialization_s && l.modelled_s)
            tip += tr("<br>modelled time: compute %1 s + materialization %2 s%6 = %3 s (%4 experts moved, %5 bytes)")
                       .arg(*l.compute_s, 0, 'f', 4)
                       .arg(*l.materialization_s, 0, 'f', 4)
                       .arg(*l.modelled_s, 0, 'f', 4)
                       .arg(l.moves)
                       .arg(QString::fromStdString(
                           grouped_count(static_cast<std::int64_t>(l.migration_bytes.value_or(0)))))
                       .arg(*l.modelled_s - *l.compute_s - *l.materialization_s > 1e-12
                                ? tr(" + planning beyond it %1 s")
                                      .arg(*l.modelled_s - *l.compute_s - *l.materialization_s, 0, 'f', 4)
                                : QString());
    }
    tip += tr("<br>planner time %1 s").arg(st.planner_s, 0, 'f', 3);
    return tip;
}

QString RunView::gainBinToolTip(int k) const {
    const RunSeries* s = currentSeries();
    if (!s || k < 0 || k >= static_cast<int>(bins_.size())) return {};
    const GainBin& b = bins_[static_cast<std::size_t>(k)];
    QString tip = tr("<b>%1 % to %2 %</b>: %3 step(s)").arg(b.lo, 0, 'g', 6).arg(b.hi, 0, 'g', 6).arg(b.steps.size());
    for (int i : b.steps) {
        const RunStep& st = s->steps[static_cast<std::size_t>(i)];
        tip += tr("<br>step %1 %2: %3").arg(i).arg(QString::fromStdString(st.window).toHtmlEscaped(), pct(st.gain_pct));
    }
    return tip;
}

} // namespace routepack::views
