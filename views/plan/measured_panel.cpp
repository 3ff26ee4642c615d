#include "views/plan/measured_panel.h"

#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/panel_util.h"

#include <nlohmann/json.hpp>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace routepack::views {

namespace {

/// Seconds with 4 significant digits ("0.02844 s", "1.2e-05 s").
QString seconds(double s) {
    return QStringLiteral("%1 s").arg(s, 0, 'g', 4);
}

/// The "clock" of a measured file's timing object ("thread_time", "torch.profiler host ranges").
QString clockOf(const std::string& timing) {
    const nlohmann::json t = nlohmann::json::parse(timing, nullptr, false);
    return t.is_object() && t.contains("clock") && t["clock"].is_string()
               ? QString::fromStdString(t["clock"].get<std::string>())
               : QObject::tr("not stated");
}

/// Mean of row l of an [L][P] table.
double layer_mean(const std::vector<double>& v, int l, int P) {
    double sum = 0;
    for (int p = 0; p < P; ++p)
        sum += v[static_cast<std::size_t>(l) * P + p];
    return P > 0 ? sum / P : 0;
}

} // namespace

QString measuredChoiceLabel(const MeasuredChoice& c) {
    const MeasuredPlan& p = c.step->plans.at(static_cast<std::size_t>(c.plan));
    QString text = QObject::tr("measured step %1: %2").arg(c.measured_id).arg(QString::fromStdString(p.name));
    if (!c.method.empty() && c.method != p.name)
        text += QObject::tr(" (the run's %1)").arg(QString::fromStdString(c.method));
    return text + QStringLiteral(" (%1)").arg(QString::fromStdString(c.source));
}

QString measuredRankToolTip(const MeasuredFigures& f, int l, int p) {
    const std::size_t lp = static_cast<std::size_t>(l) * f.ranks + static_cast<std::size_t>(p);
    const double mean = layer_mean(f.rank_seconds, l, f.ranks), modelledMean = layer_mean(f.rank_modelled, l, f.ranks);
    return QObject::tr("<b>MoE layer %1, EP rank %2</b><br>measured %3 over %4 row-shards (%5x the layer's mean)<br>"
                       "modelled %6 (%7x the layer's mean)<br>%8 tokens")
        .arg(f.moe_layers[static_cast<std::size_t>(l)])
        .arg(p)
        .arg(seconds(f.rank_seconds[lp]))
        .arg(f.rows * f.shards)
        .arg(mean > 0 ? f.rank_seconds[lp] / mean : 0.0, 0, 'f', 3)
        .arg(f.rank_modelled[lp], 0, 'f', 4)
        .arg(modelledMean > 0 ? f.rank_modelled[lp] / modelledMean : 0.0, 0, 'f', 3)
        .arg(f.rank_tokens[lp]);
}

QString measuredRowShardToolTip(const MeasuredFigures& f, int r, int g) {
    const std::size_t rg = static_cast<std::size_t>(r) * f.shards + static_cast<std::size_t>(g);
    return QObject::tr("<b>Row %1, shard g%2</b><br>measured A %3 + E %4 = J %5<br>modelled A %6 + E %7 = J %8")
        .arg(r)
        .arg(g)
        .arg(seconds(f.attention[rg]), seconds(f.experts[rg]), seconds(f.joint[rg]))
        .arg(f.modelled_attention[rg], 0, 'f', 4)
        .arg(f.modelled_experts[rg], 0, 'f', 4)
        .arg(f.modelled_joint[rg], 0, 'f', 4);
}

MeasuredPanel::MeasuredPanel(QWidget* parent) : QWidget(parent) {
    choiceBox_ = new QComboBox(this);
    choiceBox_->setObjectName(QStringLiteral("measuredChoice"));
    choiceBox_->setToolTip(tr("The measured plan shown (a measured step imported into the library)"));
    heading_ = headingLabel(this);
    ranks_ = new HeatmapWidget(this);
    ranks_->setObjectName(QStringLiteral("measuredRankMap"));
    ranks_->setColourMap(HeatmapWidget::ColourMap::Diverging);
    ranks_->setAxisTitles(tr("MoE layer"), tr("EP rank"));
    ranks_->setLegendTitle(tr("measured / layer mean"));
    ranks_->setPrecision(3);
    rowShards_ = new HeatmapWidget(this);
    rowShards_->setObjectName(QStringLiteral("measuredRowShardMap"));
    rowShards_->setColourMap(HeatmapWidget::ColourMap::Sequential);
    rowShards_->setAxisTitles(tr("execution row"), tr("EDP shard"));
    rowShards_->setLegendTitle(tr("measured J (s)"));
    rowShards_->setPrecision(4);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(new HeatmapView(ranks_, split));
    split->addWidget(new HeatmapView(rowShards_, split));
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Measured plan:"), this));
    bar->addWidget(choiceBox_, 1);
    auto* box = new QVBoxLayout(this);
    box->addLayout(bar);
    box->addWidget(heading_);
    box->addWidget(split, 1);
    connect(choiceBox_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    setChoices({});
}

void MeasuredPanel::setChoices(std::vector<MeasuredChoice> choices) {
    choices_ = std::move(choices);
    {
        const QSignalBlocker block(choiceBox_);
        choiceBox_->clear();
        for (const MeasuredChoice& c : choices_)
            choiceBox_->addItem(measuredChoiceLabel(c));
        choiceBox_->setEnabled(!choices_.empty());
    }
    refresh();
}

void MeasuredPanel::setChoice(int k) {
    choiceBox_->setCurrentIndex(k);
}

QString MeasuredPanel::headingText() const {
    return heading_->text();
}

void MeasuredPanel::refresh() {
    const int k = choiceBox_->currentIndex();
    if (k < 0 || k >= choiceCount()) {
        figures_.reset();
        const QString none = tr("No measured step of this run: measure its plan with python3 -m "
                                "routepack.torch.measure, or profile your own step, and import the file with "
                                "routepack import-measured (docs/measure.md); then select the run again.");
        for (HeatmapWidget* map : {ranks_, rowShards_}) {
            map->setEmptyText(none);
            map->clear();
        }
        heading_->clear();
        return;
    }
    const MeasuredChoice& c = choices_[static_cast<std::size_t>(k)];
    figures_ = measured_figures(*c.step, c.plan);
    const MeasuredFigures& f = *figures_;
    const MeasuredPlan& p = c.step->plans[static_cast<std::size_t>(c.plan)];
    heading_->setText(tr("<b>%1</b>: measured step %2 (straggler g%3) against modelled max_g U %4 (straggler g%5): "
                         "%6 per unit of U. Clock: %7.")
                          .arg(QString::fromStdString(p.name), seconds(f.step_seconds))
                          .arg(f.straggler)
                          .arg(f.modelled_step, 0, 'f', 4)
                          .arg(f.modelled_straggler)
                          .arg(seconds(f.modelled_step > 0 ? f.step_seconds / f.modelled_step : 0))
                          .arg(clockOf(c.step->timing).toHtmlEscaped()));
    // EP-rank map: measured seconds over each layer's mean.
    std::vector<double> ratio(f.rank_seconds.size(), std::numeric_limits<double>::quiet_NaN());
    QStringList layers, ranks, side;
    double lo = 1, hi = 1;
    for (int l = 0; l < f.layers; ++l) {
        const double mean = layer_mean(f.rank_seconds, l, f.ranks);
        double top = 0;
        for (int pr = 0; pr < f.ranks; ++pr) {
            const std::size_t lp = static_cast<std::size_t>(l) * f.ranks + static_cast<std::size_t>(pr);
            if (mean > 0)
                ratio[lp] = f.rank_seconds[lp] / mean, lo = std::min(lo, ratio[lp]), hi = std::max(hi, ratio[lp]);
            top = std::max(top, mean > 0 ? ratio[lp] : 0.0);
        }
        layers.append(QString::number(f.moe_layers[static_cast<std::size_t>(l)]));
        side.append(QString::number(top, 'f', 2));
    }
    for (int pr = 0; pr < f.ranks; ++pr)
        ranks.append(QString::number(pr));
    ranks_->setTitle(
        tr("%1: experts' measured seconds per EP rank / the layer's mean").arg(QString::fromStdString(p.name)));
    ranks_->setRange(lo, hi, 1);
    ranks_->setData(f.layers, f.ranks, std::move(ratio), layers, ranks);
    ranks_->setSideColumn(tr("max/mean"), side);
    const MeasuredFigures keep = f;
    ranks_->setToolTipProvider([keep](int l, int pr) { return measuredRankToolTip(keep, l, pr); });
    // Row-shard map: measured J in seconds.
    QStringList rows, shards, modelled;
    for (int r = 0; r < f.rows; ++r) {
        rows.append(QString::number(r));
        modelled.append(QString::number(
            f.modelled_joint[static_cast<std::size_t>(r) * f.shards + static_cast<std::size_t>(f.modelled_straggler)],
            'f', 3));
    }
    for (int g = 0; g < f.shards; ++g)
        shards.append(QStringLiteral("g%1").arg(g));
    const auto mx = std::max_element(f.joint.begin(), f.joint.end());
    rowShards_->setTitle(tr("%1: measured J[r][g] = A + E (seconds)").arg(QString::fromStdString(p.name)));
    // From 0: a row-shard twice as long is twice as far up the scale.
    rowShards_->setRange(0, f.joint.empty() ? 1 : std::max(*mx, 1e-12));
    rowShards_->setData(f.rows, f.shards, f.joint, rows, shards);
    rowShards_->setSideColumn(tr("modelled J g%1").arg(f.modelled_straggler), modelled);
    rowShards_->setToolTipProvider([keep](int r, int g) { return measuredRowShardToolTip(keep, r, g); });
}

} // namespace routepack::views
