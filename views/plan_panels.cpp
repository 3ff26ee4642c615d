#include "views/plan_panels.h"

#include "views/heatmap_widget.h"
#include "views/method_combo.h"
#include "views/plan_models.h"

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
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QPainter>
#include <QScatterSeries>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace routepack::views {

namespace {

// Series colours: mid-tone, distinct on white and on dark grey backgrounds.
const QColor kAttentionColour(0x4c, 0x78, 0xa8);
/// EP heatmaps: a rank load within this fraction of its layer's mean is drawn as even (neutral colour).
constexpr double kEvenTolerance = 0.02;
const QColor kExpertColour(0xf5, 0x85, 0x18);
const QColor kStragglerAttention(0x8e, 0x44, 0xad);
const QColor kStragglerExpert(0xd6, 0x27, 0x28);
const QColor kTotalColour(0x54, 0xa2, 0x4b);
const QColor kBalancedColour(0x8c, 0x8c, 0x8c);      ///< shard totals all tied: no straggler colour
const QColor kBaselineTotalColour(0x79, 0x86, 0x9a); ///< the baseline's U[g] beside the shown method's
const QColor kTallestColour(0xf2, 0xd5, 0x3c);       ///< marker on the tallest row-shard bar
const QColor kBestColour(0xe4, 0x57, 0x56);
const QColor kEnergyColour(0x4c, 0x78, 0xa8);
const QColor kRateColour(0x54, 0xa2, 0x4b);

QString layerLabel(const PlanResult& plan, int l) {
    const auto& ids = plan.model.moe_layers;
    return QString::number(l < static_cast<int>(ids.size()) ? ids[static_cast<std::size_t>(l)] : l);
}

QStringList layerLabels(const PlanResult& plan) {
    QStringList out;
    for (int l = 0; l < plan.model.num_moe_layers(); ++l)
        out.append(layerLabel(plan, l));
    return out;
}

QChartView* makeChartView(QWidget* parent) {
    auto* chart = new QChart;
    chart->setBackgroundRoundness(0);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setAlignment(Qt::AlignBottom);
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing, true);
    view->setMinimumSize(240, 200);
    return view;
}

QLabel* headingLabel(QWidget* parent) {
    auto* l = new QLabel(parent);
    l->setWordWrap(true);
    l->setTextFormat(Qt::RichText);
    return l;
}

/// The layout every per-method panel shares: a bar "Method: [box] <extra widgets>", then the heading,
/// then the body taking the remaining height. Returns the bar for further widgets.
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

} // namespace

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

// =============================================================================================
// EpHeatmapPanel

namespace {

/// The colour-scale box of a heatmap panel: Linear, Log and (with `perLayer`) Per layer.
QComboBox* makeScaleCombo(QWidget* parent, bool perLayer) {
    auto* box = new QComboBox(parent);
    box->addItem(QObject::tr("Linear"), static_cast<int>(ColourScale::Linear));
    box->addItem(QObject::tr("Log"), static_cast<int>(ColourScale::Log));
    if (perLayer) box->addItem(QObject::tr("Per layer"), static_cast<int>(ColourScale::PerLayer));
    box->setToolTip(QObject::tr("Colour scale: linear, logarithmic (skewed loads)%1")
                        .arg(perLayer ? QObject::tr(", or each MoE layer over its own range") : QString()));
    return box;
}

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

void EpHeatmapPanel::setPlan(const std::shared_ptr<const PlanResult>& plan,
                             std::shared_ptr<const std::vector<std::uint64_t>> expertLoads,
                             std::shared_ptr<const Trace> window) {
    plan_ = plan;
    loads_ = std::move(expertLoads);
    window_ = std::move(window);
    cvIdentity_.clear();
    cvLpt_.clear();
    bounded_.clear();
    selection_->clear();
    selection_->hide();
    if (!plan_) {
        identity_->clear();
        lpt_->clear();
        summary_->setText(tr("No plan for this selection: plan a window (Plan > Plan window, Ctrl+R) or select a "
                             "saved run."));
        return;
    }
    const int L = plan_->model.num_moe_layers(), P = plan_->topology.ep_ranks;
    if (L < 1 || P < 1 || plan_->placement.rank_loads_identity.size() != static_cast<std::size_t>(L) * P ||
        planned_rank_loads(*plan_).size() != static_cast<std::size_t>(L) * P) {
        identity_->clear();
        lpt_->clear();
        summary_->setText(tr("This plan carries no rank loads."));
        return;
    }
    const int E = plan_->model.experts;
    if (loads_ && loads_->size() != static_cast<std::size_t>(L) * E) loads_ = nullptr;
    if (window_ && (window_->model.num_moe_layers() != L || window_->model.experts != E)) window_ = nullptr;
    if (loads_) bounded_ = expert_bounded_layers(*loads_, L, E, P);
    std::vector<bool> marks(static_cast<std::size_t>(L), false);
    for (const ExpertBound& b : bounded_)
        marks[static_cast<std::size_t>(b.layer)] = true;
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
    QString description;
    if (window_) {
        for (const SampleTokens& s : top_samples_on_rank(*window_, pi, layer, rank, kTopRankSamples))
            samples << s.sample;
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
    Q_EMIT rankActivated(layer, rank, planned, samples, description);
}

// =============================================================================================
// RowHeatmapPanel

RowHeatmapPanel::RowHeatmapPanel(QWidget* parent) : QWidget(parent) {
    methodBox_ = methodCombo(this);
    shardBox_ = new QComboBox(this);
    shardBox_->setToolTip(tr("EDP shard shown"));
    note_ = headingLabel(this);
    map_ = new HeatmapWidget(this);
    map_->setColourMap(HeatmapWidget::ColourMap::Sequential);
    map_->setAxisTitles(tr("execution row"), tr("MoE layer"));
    map_->setLegendTitle(tr("tokens"));
    map_->setPrecision(4);
    map_->setEmptyText(tr("No plan"));
    scaleBox_ = makeScaleCombo(this, false);
    QHBoxLayout* bar = methodPanelLayout(this, methodBox_, note_, new HeatmapView(map_, this));
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("EDP shard:"), this));
    bar->addWidget(shardBox_);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("Colour scale:"), this));
    bar->addWidget(scaleBox_);
    bar->addStretch(1);
    connect(methodBox_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(shardBox_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(scaleBox_, &QComboBox::currentIndexChanged, this,
            [this] { map_->setColourScale(static_cast<ColourScale>(scaleBox_->currentData().toInt())); });
}

void RowHeatmapPanel::setSelectedLayer(int l) {
    selectedLayer_ = l;
    map_->setSelection(-1, l);
}

void RowHeatmapPanel::setPlan(const std::shared_ptr<const PlanResult>& plan, std::shared_ptr<const PlanCosts> costs,
                              std::shared_ptr<const Trace> window) {
    plan_ = plan;
    costs_ = std::move(costs);
    window_ = plan_ && window && window_matches(*plan_, *window) ? std::move(window) : nullptr;
    selectedLayer_ = -1;
    fillMethodCombo(methodBox_, plan_.get());
    {
        const QSignalBlocker block(shardBox_);
        shardBox_->clear();
        if (plan_)
            for (int g = 0; g < plan_->topology.shards(); ++g) {
                QStringList slots;
                for (int d : plan_->topology.edp_shards[static_cast<std::size_t>(g)])
                    slots.append(QString::number(d));
                shardBox_->addItem(tr("g%1 (DP %2)").arg(g).arg(slots.join(QLatin1Char(','))), g);
            }
    }
    refresh();
}

void RowHeatmapPanel::setShard(int g) {
    shardBox_->setCurrentIndex(g);
}
void RowHeatmapPanel::setMethod(Method method) {
    setComboMethod(methodBox_, method);
}
int RowHeatmapPanel::shard() const {
    return shardBox_->currentIndex();
}
Method RowHeatmapPanel::method() const {
    return comboMethod(methodBox_);
}

void RowHeatmapPanel::refresh() {
    if (!plan_) {
        map_->setEmptyText(tr("No plan"));
        map_->clear();
        note_->clear();
        return;
    }
    if (!costs_) {
        map_->setEmptyText(tr("Row peaks need the window's routing counts (not loaded for this plan, or the window is "
                              "too large to score on the GUI thread)."));
        map_->clear();
        note_->clear();
        return;
    }
    const Method m = method();
    const CostBreakdown& cb = costs_->method[m];
    const int g = std::clamp(shard(), 0, std::max(cb.shards - 1, 0));
    const int R = cb.rows, G = cb.shards, L = plan_->model.num_moe_layers();
    if (R < 1 || G < 1 || cb.peak.size() != static_cast<std::size_t>(R) * G * L) {
        map_->clear();
        return;
    }
    // One colour scale for every shard of the method: min .. max of its peaks.
    std::int64_t top = 1, bottom = std::numeric_limits<std::int64_t>::max();
    for (std::int64_t v : cb.peak)
        top = std::max(top, v), bottom = std::min(bottom, v);
    if (bottom >= top) bottom = 0;
    std::vector<double> values(static_cast<std::size_t>(R) * L);
    for (int r = 0; r < R; ++r)
        for (int l = 0; l < L; ++l)
            values[static_cast<std::size_t>(r) * L + l] =
                static_cast<double>(cb.peak[(static_cast<std::size_t>(r) * G + g) * L + l]);
    QStringList rows, side;
    for (int r = 0; r < R; ++r) {
        rows.append(QString::number(r));
        side.append(QString::number(cb.E[static_cast<std::size_t>(r) * G + g], 'f', 3));
    }
    map_->setTitle(
        tr("%1: per-layer peak rank load max_p W[r][g%2][l][p]").arg(QString::fromLatin1(method_label(m))).arg(g));
    map_->setRange(static_cast<double>(bottom), static_cast<double>(top));
    map_->setData(R, L, std::move(values), rows, layerLabels(*plan_));
    map_->setSideColumn(tr("E[r][g]"), side);
    map_->setSelection(-1, selectedLayer_);
    const std::shared_ptr<const PlanResult> keep = plan_;
    const std::shared_ptr<const PlanCosts> costs = costs_;
    const std::shared_ptr<const Trace> window = window_;
    const qint64 C = plan_->topology.token_cap;
    map_->setToolTipProvider([keep, costs, window, m, g, G, L, C](int r, int l) {
        const CostBreakdown& c = costs->method[m];
        const std::int64_t w = c.peak[(static_cast<std::size_t>(r) * G + g) * L + l];
        QString tip = tr("<b>Row %1, shard g%2, layer %3</b><br>max_p W = %4 tokens (%5 of C)<br>E[r][g] = %6")
                          .arg(r)
                          .arg(g)
                          .arg(layerLabel(*keep, l))
                          .arg(w)
                          .arg(static_cast<double>(w) / static_cast<double>(C), 0, 'f', 4)
                          .arg(c.E[static_cast<std::size_t>(r) * G + g], 0, 'f', 4);
        if (window) {
            // The rank that takes the peak (lowest p on ties), from the row-shard's rank loads.
            const MethodResult& mr = method_of(*keep, m);
            std::vector<std::uint64_t> W;
            try {
                W = row_shard_rank_loads(*window, keep->topology, placement_of(*keep, m), mr.layout, r, g, l);
            } catch (const std::invalid_argument&) {
                return tip; // a layout that does not fit the window: no peak rank to name
            }
            const auto top = std::max_element(W.begin(), W.end());
            std::uint64_t sum = 0;
            for (std::uint64_t x : W)
                sum += x;
            tip += tr("<br>peak on EP rank %1 (%2 tokens; mean over the %3 ranks %4)")
                       .arg(top - W.begin())
                       .arg(*top)
                       .arg(W.size())
                       .arg(static_cast<double>(sum) / static_cast<double>(W.size()), 0, 'f', 1);
        }
        return tip;
    });
    note_->setText(
        tr("Colour scale %1 .. %2 tokens, the same for every shard of this method. E[r][g] = sum_l max_p W / C "
           "(eq. 14).")
            .arg(bottom)
            .arg(top));
}

// =============================================================================================
// CostsPanel

CostsPanel::CostsPanel(QWidget* parent) : QWidget(parent) {
    methodBox_ = methodCombo(this);
    sideBox_ = new QCheckBox(tr("Baseline side by side"), this);
    sideBox_->setToolTip(tr("Show the baseline's row-shard costs left of the shown method's, on the same y-axis"));
    heading_ = headingLabel(this);
    baseView_ = makeChartView(this);
    rowView_ = makeChartView(this);
    shardView_ = makeChartView(this);
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
    gain_->setFrameShape(QFrame::StyledPanel);
    gain_->setMargin(4);
    gain_->hide();
    if (auto* v = qobject_cast<QVBoxLayout*>(layout())) v->addWidget(gain_);
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
    return gain_->isHidden() ? QString() : gain_->text();
}

QString gainExplanationText(const GainExplanation& g, const PlanResult& plan) {
    auto pct = [](double v) { return QString::asprintf("%+.2f %%", v); };
    QString out =
        QObject::tr("<b>Why it gains:</b> placing experts by load (LPT) instead of in id order takes the joint cost "
                    "from %1 (baseline) to %2 (reorder), %3; packing samples by their routing instead of by length "
                    "alone takes it to %4 (RoutePack), %5; %6 in all.")
            .arg(g.baseline, 0, 'f', 4)
            .arg(g.reorder, 0, 'f', 4)
            .arg(pct(g.placement_pct))
            .arg(g.routepack, 0, 'f', 4)
            .arg(pct(g.packing_pct))
            .arg(pct(g.total_pct));
    auto step = [&](const char* name, const std::vector<GainExplanation::ShardMove>& shards,
                    const std::vector<GainExplanation::LayerMove>& layers) {
        QStringList parts;
        if (!shards.empty())
            parts << QObject::tr("shard g%1 most (U %2 -> %3)")
                         .arg(shards.front().shard)
                         .arg(shards.front().before, 0, 'f', 4)
                         .arg(shards.front().after, 0, 'f', 4);
        if (!layers.empty() && layers.front().before > layers.front().after)
            parts << QObject::tr("MoE layer %1 (summed row peaks %2 -> %3 tokens)")
                         .arg(layerLabel(plan, layers.front().layer))
                         .arg(layers.front().before)
                         .arg(layers.front().after);
        else if (!layers.empty())
            parts << QObject::tr("no MoE layer's summed row peaks fell");
        return parts.isEmpty()
                   ? QString()
                   : QObject::tr(" %1 moved %2.").arg(QLatin1String(name), parts.join(QObject::tr(" and ")));
    };
    out += step("Placement", g.placement_shards, g.placement_layers);
    out += step("Packing", g.packing_shards, g.packing_layers);
    return out;
}

void CostsPanel::setPlan(const std::shared_ptr<const PlanResult>& plan, std::shared_ptr<const PlanCosts> costs) {
    plan_ = plan;
    costs_ = std::move(costs);
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
    QChart* bc = baseView_->chart();
    QChart* rc = rowView_->chart();
    QChart* sc = shardView_->chart();
    for (QChart* c : {bc, rc, sc}) {
        c->removeAllSeries();
        for (QAbstractAxis* a : c->axes())
            c->removeAxis(a), delete a;
        c->setTitle(QString());
    }
    attention_ = expert_ = total_ = nullptr;
    baseAttention_ = baseExpert_ = baseTotal_ = nullptr;
    tallestMarker_ = baseTallestMarker_ = nullptr;
    categories_.clear();
    straggler_ = -1;
    tallest_ = -1;
    gain_->clear();
    gain_->hide();
    const Method m = method();
    // Side by side needs a second method to show; the baseline itself is shown alone.
    const bool side = sideBySide() && plan_ && costs_ && m != Method::Baseline;
    if (side != baseView_->isVisibleTo(this)) {
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
            tr("Row-shard costs need the window's routing counts (not loaded for this plan, or the window "
               "is too large to score on the GUI thread). Method metrics are in the compare view."));
        return;
    }
    gain_->setText(gainExplanationText(explain_gain(*plan_, *costs_), *plan_));
    gain_->show();
    const CostBreakdown& cb = costs_->method[m];
    const int R = cb.rows, G = cb.shards;
    straggler_ = costs_->straggler[m];
    tallest_ = tallestRowShard(cb);
    const QColor text = palette().color(QPalette::Text);

    // One y-axis for every method (switching methods compares bar heights), in both charts.
    double maxJ = 0, maxU = 0;
    for (const CostBreakdown& any : costs_->method) {
        for (double j : any.J)
            maxJ = std::max(maxJ, j);
        for (double u : any.U)
            maxU = std::max(maxU, u);
    }
    const RowChart shown = fillRowChart(rc, m, maxJ);
    attention_ = shown.attention;
    expert_ = shown.expert;
    tallestMarker_ = shown.tallest;
    if (side) {
        const RowChart base = fillRowChart(bc, Method::Baseline, maxJ);
        baseAttention_ = base.attention;
        baseExpert_ = base.expert;
        baseTallestMarker_ = base.tallest;
    }

    // U[g] per shard, straggler selected; side by side the baseline's totals first.
    auto totals = [&](Method method, const QColor& colour) {
        const CostBreakdown& c = costs_->method[method];
        auto* set = new QBarSet(side ? tr("%1 U[g]").arg(QString::fromLatin1(method_label(method)))
                                     : tr("U[g] = sum_r J[r][g]"));
        set->setColor(colour);
        set->setBorderColor(colour);
        set->setSelectedColor(kStragglerExpert);
        set->setLabelColor(text);
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
    };
    QStringList shards;
    for (int g = 0; g < G; ++g)
        shards.append(QStringLiteral("g%1").arg(g));
    const std::vector<int> tied = tiedShards(cb.U, kShardTieTolerance);
    const bool balanced = G > 1 && static_cast<int>(tied.size()) == G;
    auto* bars = new QBarSeries;
    if (side) {
        baseTotal_ = totals(Method::Baseline, kBaselineTotalColour);
        bars->append(baseTotal_);
    }
    total_ = totals(m, kTotalColour);
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

// =============================================================================================
// GridPanel

namespace {

/// Paints a grid cell: a fill bar proportional to tokens / C (red when over C), then the model's
/// two text lines in the palette's text colour.
class FillDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        const QPalette& pal = option.palette;
        const bool selected = option.state & QStyle::State_Selected;
        p->save();
        p->setRenderHint(QPainter::Antialiasing, false);
        p->fillRect(option.rect, pal.brush(selected ? QPalette::Highlight : QPalette::Base));
        const double fill = index.data(FillRole).toDouble();
        QColor bar = fill > 1.0 ? QColor(0xd6, 0x27, 0x28) : QColor(0x2a, 0x9d, 0x8f);
        bar.setAlpha(150);
        // A gauge band (two text lines high, centred) filled to tokens / C, with its outline = C.
        const QRect cell = option.rect.adjusted(3, 3, -3, -3);
        const int bandH = std::min(cell.height(), 2 * option.fontMetrics.height() + 10);
        const QRect band(cell.left(), cell.center().y() - bandH / 2, cell.width(), bandH);
        const int w = static_cast<int>(std::lround(band.width() * std::clamp(fill, 0.0, 1.0)));
        p->fillRect(QRect(band.left(), band.top(), w, band.height()), bar);
        p->setPen(pal.color(QPalette::Mid));
        p->drawRect(band.adjusted(0, 0, -1, -1));
        p->setPen(pal.color(selected ? QPalette::HighlightedText : QPalette::Text));
        p->drawText(band, Qt::AlignCenter, index.data(Qt::DisplayRole).toString());
        p->restore();
    }
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        const QFontMetrics fm(option.font);
        const QSize text = fm.size(0, index.data(Qt::DisplayRole).toString());
        return {text.width() + 16, text.height() + 10};
    }
};

} // namespace

GridPanel::GridPanel(QWidget* parent) : QWidget(parent) {
    methodBox_ = methodCombo(this);
    summary_ = headingLabel(this);
    model_ = new ExecutionGridModel(this);
    view_ = new QTableView(this);
    view_->setModel(model_);
    view_->setItemDelegate(new FillDelegate(view_));
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->setSelectionBehavior(QAbstractItemView::SelectItems);
    view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    view_->horizontalHeader()->setMinimumSectionSize(90);
    // Rows share the height (at least two text lines each; the view scrolls beyond that).
    view_->verticalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    view_->verticalHeader()->setMinimumSectionSize(2 * view_->fontMetrics().height() + 12);
    methodPanelLayout(this, methodBox_, summary_, view_)->addStretch(1);
    connect(methodBox_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
        if (!index.isValid()) return;
        Q_EMIT cellActivated(index.row(), index.column(), index.data(SampleIndicesRole).value<QList<int>>());
    });
}

void GridPanel::setPlan(const std::shared_ptr<const PlanResult>& plan) {
    plan_ = plan;
    fillMethodCombo(methodBox_, plan_.get());
    refresh();
}

void GridPanel::setMethod(Method method) {
    setComboMethod(methodBox_, method);
}
Method GridPanel::method() const {
    return comboMethod(methodBox_);
}

void GridPanel::refresh() {
    const Method m = method();
    model_->setPlan(plan_, m);
    if (!plan_) {
        summary_->clear();
        return;
    }
    const Layout& x = method_of(*plan_, m).layout;
    const auto tokens = cell_tokens(x, plan_->samples);
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0, sum = 0;
    for (std::int64_t t : tokens)
        lo = std::min(lo, t), hi = std::max(hi, t), sum += t;
    if (tokens.empty()) lo = 0;
    const double C = static_cast<double>(plan_->topology.token_cap);
    const double mean = tokens.empty() ? 0.0 : static_cast<double>(sum) / static_cast<double>(tokens.size());
    summary_->setText(tr("%1: R = %2 rows x D = %3 DP slots, cap C = %4 tokens (%5). Fill min / mean / max = "
                         "%6 / %7 / %8 %. Click a cell to keep only its samples in the sample table.")
                          .arg(QString::fromLatin1(method_label(m)))
                          .arg(x.rows)
                          .arg(x.dp_slots)
                          .arg(plan_->topology.token_cap)
                          .arg(plan_->rows.certified ? tr("R* certified") : tr("R* best known"))
                          .arg(100.0 * static_cast<double>(lo) / C, 0, 'f', 1)
                          .arg(100.0 * mean / C, 0, 'f', 1)
                          .arg(100.0 * static_cast<double>(hi) / C, 0, 'f', 1));
}

// =============================================================================================
// ConvergencePanel

ConvergencePanel::ConvergencePanel(QWidget* parent) : QWidget(parent) {
    summary_ = headingLabel(this);
    view_ = makeChartView(this);
    QChart* c = view_->chart();
    best_ = new QLineSeries;
    best_->setName(tr("best joint max_g U"));
    energy_ = new QLineSeries;
    energy_->setName(tr("mean energy of chains"));
    acceptance_ = new QLineSeries;
    acceptance_->setName(tr("acceptance rate (right axis)"));
    best_->setPen(QPen(kBestColour, 2));
    energy_->setPen(QPen(kEnergyColour, 2, Qt::DashLine));
    acceptance_->setPen(QPen(kRateColour, 2, Qt::DotLine));
    for (QLineSeries* s : {best_, energy_, acceptance_}) {
        s->setPointsVisible(true);
        c->addSeries(s);
    }
    best_->setColor(kBestColour);
    energy_->setColor(kEnergyColour);
    acceptance_->setColor(kRateColour);
    x_ = new QValueAxis;
    x_->setTitleText(tr("temperature level"));
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
    for (QLineSeries* s : {best_, energy_}) {
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
    if (n == 0) {
        x_->setRange(0, 1);
        y_->setRange(0, 1);
        summary_->setText(tr("No annealing levels yet."));
        return;
    }
    double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin, rmax = 0;
    for (int i = 0; i < n; ++i) {
        const QPointF b = best_->at(i), e = energy_->at(i);
        xmin = std::min(xmin, b.x()), xmax = std::max(xmax, b.x());
        ymin = std::min({ymin, b.y(), e.y()});
        ymax = std::max({ymax, b.y(), e.y()});
        rmax = std::max(rmax, acceptance_->at(i).y());
    }
    if (xmax <= xmin) xmax = xmin + 1;
    x_->setRange(xmin, xmax);
    // Integer levels on whole ticks: interval 1, 2, 5, 10, 20, ... giving at most ~12 labels.
    double step = 1;
    for (const double m : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0}) {
        step = m;
        if ((xmax - xmin) / m <= 12) break;
    }
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
}

} // namespace routepack::views
