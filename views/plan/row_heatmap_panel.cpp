#include "views/plan/row_heatmap_panel.h"

#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/method_combo.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_explain.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace routepack::views {

RowHeatmapPanel::RowHeatmapPanel(QWidget* parent) : QWidget(parent) {
    methodBox_ = methodCombo(this);
    shardBox_ = new QComboBox(this);
    shardBox_->setObjectName(QStringLiteral("shardBox"));
    shardBox_->setToolTip(tr("EDP shard shown"));
    note_ = headingLabel(this);
    map_ = new HeatmapWidget(this);
    map_->setObjectName(QStringLiteral("rowHeatmap"));
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
        map_->setEmptyText(!countsNote_.isEmpty()
                               ? countsNote_
                               : tr("Row peaks need the window's routing counts (not loaded for this plan, or the "
                                    "window is too large to score on the GUI thread)."));
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
    const qint64 C = std::max<qint64>(plan_token_cap(*plan_), 1);
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

} // namespace routepack::views
