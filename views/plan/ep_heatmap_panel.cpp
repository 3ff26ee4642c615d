#include "views/plan/ep_heatmap_panel.h"

#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollBar>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace routepack::views {

namespace {

/// EP heatmaps: a rank load within this fraction of its layer's mean is drawn as even (neutral colour).
constexpr double kEvenTolerance = 0.02;

/// "e40 34485, e3 12" of the first `limit` experts, then "and N more (T tokens)".
QString expertList(const std::vector<ExpertTokens>& experts, std::size_t limit) {
    QStringList parts;
    std::uint64_t rest = 0;
    for (std::size_t k = 0; k < experts.size(); ++k) {
        if (k < limit)
            parts << QStringLiteral("e%1 %2").arg(experts[k].expert).arg(experts[k].tokens);
        else
            rest += experts[k].tokens;
    }
    QString out = parts.join(QStringLiteral(", "));
    if (experts.size() > limit) out += QObject::tr(" and %1 more (%2 tokens)").arg(experts.size() - limit).arg(rest);
    return out;
}

QString boundText(const ExpertBound& b) {
    return QObject::tr("bounded by expert %1 (%2 of %3 tokens): no placement can lower this layer's peak below %2")
        .arg(b.expert)
        .arg(b.tokens)
        .arg(b.total);
}

} // namespace

QString epCellToolTip(const PlanResult& plan, const std::vector<std::uint64_t>& G, const Placement& pi,
                      std::span<const std::uint64_t> loads, int l, int p) {
    const int L = plan.model.num_moe_layers(), P = plan.topology.ep_ranks;
    const std::size_t base = static_cast<std::size_t>(l) * P;
    std::uint64_t sum = 0;
    for (int q = 0; q < P; ++q)
        sum += G[base + q];
    const double mean = static_cast<double>(sum) / P;
    const std::uint64_t g = G[base + p];
    QString tip = QObject::tr("<b>Layer %1</b> (MoE layer %2 of %3), <b>EP rank %4</b><br>G = %5 tokens<br>"
                              "= %6 x layer mean (%7 tokens)")
                      .arg(layerLabel(plan, l))
                      .arg(l + 1)
                      .arg(L)
                      .arg(p)
                      .arg(g)
                      .arg(sum > 0 ? QString::number(static_cast<double>(g) / mean, 'f', 4) : QStringLiteral("n/a"))
                      .arg(mean, 0, 'f', 1);
    if (loads.size() == pi.slot.size() && !loads.empty()) {
        const auto experts = experts_on_rank(loads, pi, l, p);
        tip += QObject::tr("<br>Experts on this rank (tokens): %1").arg(expertList(experts, 16));
        const auto one = expert_bounded_layers(
            loads.subspan(static_cast<std::size_t>(l) * pi.experts, static_cast<std::size_t>(pi.experts)), 1,
            pi.experts, P);
        if (!one.empty()) tip += QObject::tr("<br><b>This layer is %1.</b>").arg(boundText(one.front()));
    }
    return tip;
}

EpHeatmapPanel::EpHeatmapPanel(QWidget* parent) : QWidget(parent) {
    summary_ = headingLabel(this);
    selection_ = headingLabel(this);
    selection_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    scaleBox_ = makeScaleCombo(this, true);
    scaleBox_->setObjectName(QStringLiteral("epScale"));
    identity_ = new HeatmapWidget(this);
    lpt_ = new HeatmapWidget(this);
    for (HeatmapWidget* h : {identity_, lpt_}) {
        h->setColourMap(HeatmapWidget::ColourMap::Diverging);
        h->setAxisTitles(tr("MoE layer"), tr("EP rank"));
        h->setLegendTitle(tr("G / mean"));
        h->setEmptyText(tr("No plan"));
        connect(h, &HeatmapWidget::cellClicked, this, [this, h](int l, int p) { selectCell(l, p, h == lpt_); });
    }
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Colour scale:"), this));
    bar->addWidget(scaleBox_);
    bar->addStretch(1);
    auto* maps = new QHBoxLayout;
    auto* identityView = new HeatmapView(identity_, this);
    auto* lptView = new HeatmapView(lpt_, this);
    maps->addWidget(identityView, 1);
    maps->addWidget(lptView, 1);
    // The two maps zoom and scroll together: the same layers and ranks side by side.
    for (const auto& pair : {std::pair{identityView, lptView}, std::pair{lptView, identityView}}) {
        HeatmapView* from = pair.first;
        HeatmapView* to = pair.second;
        connect(from, &HeatmapView::zoomChanged, to, [to](int level) { to->setZoomLevel(level); });
        connect(from->horizontalScrollBar(), &QScrollBar::valueChanged, to->horizontalScrollBar(),
                &QScrollBar::setValue);
        connect(from->verticalScrollBar(), &QScrollBar::valueChanged, to->verticalScrollBar(), &QScrollBar::setValue);
    }
    auto* v = new QVBoxLayout(this);
    v->addWidget(summary_);
    v->addLayout(bar);
    v->addLayout(maps, 1);
    v->addWidget(selection_);
    connect(scaleBox_, &QComboBox::currentIndexChanged, this, [this] {
        const auto s = static_cast<ColourScale>(scaleBox_->currentData().toInt());
        for (HeatmapWidget* h : {identity_, lpt_}) {
            h->setColourScale(s);
            h->setLegendTitle(s == ColourScale::PerLayer ? tr("G / mean, per layer") : tr("G / mean"));
        }
    });
}

void EpHeatmapPanel::setColourScale(ColourScale scale) {
    const int i = scaleBox_->findData(static_cast<int>(scale));
    if (i >= 0) scaleBox_->setCurrentIndex(i);
}

QString EpHeatmapPanel::selectionText() const {
    return selection_->text();
}

QString EpHeatmapPanel::summaryText() const {
    return summary_->text();
}

void EpHeatmapPanel::setPlan(const std::shared_ptr<const PlanResult>& plan,
                             std::shared_ptr<const std::vector<std::uint64_t>> expertLoads,
                             std::shared_ptr<const Trace> window) {
    plan_ = plan;
    loads_ = std::move(expertLoads);
    window_ = std::move(window);
    cvIdentity_.clear();
    cvLpt_.clear();
    bounded_.clear();
    // No selection outlives its plan: the outline goes with the text.
    for (HeatmapWidget* h : {identity_, lpt_})
        h->setSelection(-1, -1);
    selection_->clear();
    selection_->hide();
    if (!plan_) {
        for (HeatmapWidget* h : {identity_, lpt_}) {
            h->setEmptyText(tr("No plan"));
            h->clear();
        }
        summary_->setText(tr("No plan for this selection: plan a window (Plan > Plan window, Ctrl+R) or select a "
                             "saved run."));
        return;
    }
    const int L = plan_->model.num_moe_layers(), P = plan_->topology.ep_ranks;
    if (L < 1 || P < 1 || plan_->placement.rank_loads_identity.size() != static_cast<std::size_t>(L) * P ||
        planned_rank_loads(*plan_).size() != static_cast<std::size_t>(L) * P) {
        for (HeatmapWidget* h : {identity_, lpt_}) {
            h->setEmptyText(countsNote_.isEmpty() ? tr("No plan") : tr("No routing counts for this plan"));
            h->clear();
        }
        summary_->setText(!countsNote_.isEmpty() ? countsNote_ : tr("This plan carries no rank loads."));
        return;
    }
    const int E = plan_->model.experts;
    if (loads_ && loads_->size() != static_cast<std::size_t>(L) * E) loads_ = nullptr;
    if (window_ && (window_->model.num_moe_layers() != L || window_->model.experts != E)) window_ = nullptr;
    if (loads_) bounded_ = expert_bounded_layers(*loads_, L, E, P);
    std::vector<bool> marks(static_cast<std::size_t>(L), false);
    for (const ExpertBound& b : bounded_)
        marks[static_cast<std::size_t>(b.layer)] = true;
    for (HeatmapWidget* h : {identity_, lpt_})
        h->setEmptyText(tr("No plan"));
    cvIdentity_ = layer_rank_cv(plan_->placement.rank_loads_identity, L, P);
    cvLpt_ = layer_rank_cv(planned_rank_loads(*plan_), L, P);
    auto normId = normalized_rank_loads(plan_->placement.rank_loads_identity, L, P);
    auto normLpt = normalized_rank_loads(planned_rank_loads(*plan_), L, P);
    // One scale for both maps, centred on the layer mean; never degenerate.
    double lo = 1.0, hi = 1.0;
    for (const auto* v : {&normId, &normLpt})
        for (double x : *v)
            if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    // Loads within kEvenTolerance of the layer mean are drawn as even (neutral): a 1% difference is
    // noise, not a hot or a cold rank. The scale spans at least twice the band on either side.
    lo = std::min(lo, 1.0 - 2 * kEvenTolerance);
    hi = std::max(hi, 1.0 + 2 * kEvenTolerance);

    QStringList ranks;
    for (int p = 0; p < P; ++p)
        ranks.append(QString::number(p));
    const QStringList layers = layerLabels(*plan_);
    auto fill = [&](HeatmapWidget* h, std::vector<double> norm, const std::vector<double>& cv,
                    const std::vector<std::uint64_t>* G, const Placement* pi, const QString& title) {
        QStringList side;
        for (double c : cv)
            side.append(QString::number(c, 'f', 4));
        h->setTitle(title);
        h->setRange(lo, hi, 1.0);
        h->setNeutralBand(kEvenTolerance);
        h->setData(L, P, std::move(norm), layers, ranks);
        h->setSideColumn(tr("CV"), side);
        h->setRowMarks(marks);
        const std::shared_ptr<const PlanResult> keep = plan_;
        const std::shared_ptr<const std::vector<std::uint64_t>> loads = loads_;
        h->setToolTipProvider([keep, loads, G, pi](int l, int p) {
            return epCellToolTip(*keep, *G, *pi,
                                 loads ? std::span<const std::uint64_t>(*loads) : std::span<const std::uint64_t>(), l,
                                 p);
        });
    };
    fill(identity_, std::move(normId), cvIdentity_, &plan_->placement.rank_loads_identity, &plan_->placement.identity,
         tr("Identity placement (CV_global %1)").arg(plan_->placement.cv_identity, 0, 'f', 4));
    const bool refined = !(planned_placement(*plan_) == plan_->placement.lpt);
    fill(lpt_, std::move(normLpt), cvLpt_, &planned_rank_loads(*plan_), &planned_placement(*plan_),
         (refined ? tr("Planned placement, LPT refined for the layout (CV_global %1)")
                  : tr("Planned LPT placement (CV_global %1)"))
             .arg(planned_cv(*plan_), 0, 'f', 4));
    QString bounds;
    if (!bounded_.empty()) {
        // The most bounded first: the largest share of its layer on one expert.
        std::vector<ExpertBound> worst = bounded_;
        std::stable_sort(worst.begin(), worst.end(), [](const ExpertBound& a, const ExpertBound& b) {
            return static_cast<double>(a.tokens) / static_cast<double>(a.total) >
                   static_cast<double>(b.tokens) / static_cast<double>(b.total);
        });
        QStringList named;
        for (std::size_t k = 0; k < worst.size() && k < 4; ++k)
            named << tr("layer %1 (e%2, %3 of %4 tokens)")
                         .arg(layerLabel(*plan_, worst[k].layer))
                         .arg(worst[k].expert)
                         .arg(worst[k].tokens)
                         .arg(worst[k].total);
        bounds = tr(" <b>%1 bounded by one expert</b> (red on the layer axis; its tokens exceed the mean rank "
                    "load, so no placement can lower the layer's peak below them): %2%3.")
                     .arg(bounded_.size() == 1 ? tr("1 layer") : tr("%1 layers").arg(bounded_.size()))
                     .arg(named.join(QStringLiteral(", ")))
                     .arg(bounded_.size() > 4 ? tr(", ...") : QString());
    }
    summary_->setText(tr("EP-rank load G[l][p] of the window (eq. 10) divided by the layer mean; %1 MoE layers x %2 EP "
                         "ranks, %3 experts; within %4% of the mean is drawn as even (neutral). CV = std/mean of the "
                         "layer's rank loads (eq. 22 averages it over layers). Click a cell for its experts and "
                         "samples.")
                          .arg(L)
                          .arg(P)
                          .arg(plan_->model.experts)
                          .arg(100 * kEvenTolerance, 0, 'g', 3) +
                      bounds);
}

void EpHeatmapPanel::selectCell(int layer, int rank, bool planned) {
    const int L = identity_->rowCount(), P = identity_->columnCount();
    if (!plan_ || layer < 0 || rank < 0 || layer >= L || rank >= P) {
        for (HeatmapWidget* h : {identity_, lpt_})
            h->setSelection(-1, -1);
        selection_->clear();
        selection_->hide();
        return;
    }
    for (HeatmapWidget* h : {identity_, lpt_})
        h->setSelection(layer, rank);
    const Placement& pi = planned ? planned_placement(*plan_) : plan_->placement.identity;
    const auto& G = planned ? planned_rank_loads(*plan_) : plan_->placement.rank_loads_identity;
    const QString where = !planned                                            ? tr("identity placement")
                          : planned_placement(*plan_) == plan_->placement.lpt ? tr("LPT placement")
                                                                              : tr("refined LPT placement");
    QString text = tr("<b>Layer %1, EP rank %2</b> (%3): G = %4 tokens")
                       .arg(layerLabel(*plan_, layer))
                       .arg(rank)
                       .arg(where)
                       .arg(G[static_cast<std::size_t>(layer) * P + rank]);
    if (loads_) {
        const auto experts = experts_on_rank(*loads_, pi, layer, rank);
        text += tr(" on %1 %2: ").arg(experts.size()).arg(experts.size() == 1 ? tr("expert") : tr("experts")) +
                expertList(experts, experts.size());
        for (const ExpertBound& b : bounded_)
            if (b.layer == layer) text += tr(". This layer is %1").arg(boundText(b));
        text += QLatin1Char('.');
    }
    QList<int> samples;
    QList<qint64> tokens;
    QString description;
    if (window_) {
        for (const SampleTokens& s : top_samples_on_rank(*window_, pi, layer, rank, kTopRankSamples)) {
            samples << s.sample;
            tokens << static_cast<qint64>(s.tokens);
        }
        description = samples.size() == kTopRankSamples
                          ? tr("Top %1 samples by tokens on EP rank %2 of MoE layer %3 (%4)")
                                .arg(kTopRankSamples)
                                .arg(rank)
                                .arg(layerLabel(*plan_, layer), where)
                          : tr("The %1 samples with tokens on EP rank %2 of MoE layer %3 (%4)")
                                .arg(samples.size())
                                .arg(rank)
                                .arg(layerLabel(*plan_, layer), where);
    }
    selection_->setText(text);
    selection_->show();
    Q_EMIT rankActivated(layer, rank, planned, samples, description, tokens);
}

} // namespace routepack::views
