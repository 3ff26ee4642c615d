#include "views/plan/comm_panel.h"

#include "views/jobs/job_tracker.h"
#include "views/plan/comm_data.h"
#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/method_combo.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <stdexcept>

namespace routepack::views {

namespace {

QString grouped(std::int64_t v) {
    return QString::fromStdString(grouped_count(v));
}

} // namespace

CommPanel::CommPanel(QWidget* parent)
    : QWidget(parent), coactivation_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)) {
    methodBox_ = views::methodCombo(this);
    methodBox_->setToolTip(tr("Method whose layout and placement are shown"));
    layerBox_ = new QComboBox(this);
    methodBox_->setObjectName(QStringLiteral("commMethod"));
    layerBox_->setObjectName(QStringLiteral("commLayer"));
    layerBox_->setToolTip(tr("MoE layer (absolute decoder layer id), or the sum over every MoE layer"));
    heading_ = headingLabel(this);
    dispatch_ = new HeatmapWidget(this);
    dispatch_->setColourMap(HeatmapWidget::ColourMap::Sequential);
    dispatch_->setAxisTitles(tr("from node (DP slot)"), tr("to node (EP rank)"));
    dispatch_->setLegendTitle(tr("token copies"));
    dispatch_->setPrecision(6);
    dispatch_->setDiagonalMarked(true);
    affinity_ = new HeatmapWidget(this);
    dispatch_->setObjectName(QStringLiteral("dispatchMap"));
    affinity_->setObjectName(QStringLiteral("affinityMap"));
    affinity_->setColourMap(HeatmapWidget::ColourMap::Sequential);
    affinity_->setAxisTitles(tr("expert (by node)"), tr("expert (by node)"));
    affinity_->setLegendTitle(tr("tokens using both"));
    affinity_->setPrecision(6);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(new HeatmapView(dispatch_, this));
    split->addWidget(new HeatmapView(affinity_, this));
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    QHBoxLayout* bar = methodPanelLayout(this, methodBox_, heading_, split);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("MoE layer:"), this));
    bar->addWidget(layerBox_);
    bar->addStretch(1);
    connect(methodBox_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(layerBox_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    setPlan(nullptr, nullptr);
}

CommPanel::~CommPanel() {
    coactivation_->shutdown();
}

void CommPanel::setPlan(const std::shared_ptr<const PlanResult>& plan, std::shared_ptr<const Trace> window) {
    plan_ = plan;
    std::shared_ptr<const Trace> shown =
        plan_ && window && window_matches(*plan_, *window) ? std::move(window) : nullptr;
    if (shown != window_) {
        // The counts belong to the window: a new one (or none) starts an empty cache, and a count on
        // its way for the old one is dropped.
        coactivation_->invalidate();
        coCache_.clear();
        coPending_ = -1;
    }
    window_ = std::move(shown);
    {
        const QSignalBlocker blockLayer(layerBox_);
        const int shownLayer = layer();
        if (plan_) {
            fillMethodCombo(methodBox_, plan_.get());
        } else {
            const QSignalBlocker blockMethod(methodBox_);
            methodBox_->clear();
        }
        layerBox_->clear();
        if (plan_) {
            layerBox_->addItem(tr("all MoE layers (sum)"), -1);
            for (int l = 0; l < plan_->model.num_moe_layers(); ++l)
                layerBox_->addItem(layerLabel(*plan_, l), l);
        }
        const int lat = layerBox_->findData(shownLayer);
        layerBox_->setCurrentIndex(lat >= 0 ? lat : 0);
    }
    refresh();
}

void CommPanel::setMethod(Method method) {
    setComboMethod(methodBox_, method);
}
Method CommPanel::method() const {
    return comboMethod(methodBox_);
}
void CommPanel::setLayer(int l) {
    const int at = layerBox_->findData(l);
    if (at >= 0) layerBox_->setCurrentIndex(at);
}
int CommPanel::layer() const {
    return layerBox_->currentData().isValid() ? layerBox_->currentData().toInt() : -1;
}
QString CommPanel::headingText() const {
    return heading_->text();
}

void CommPanel::refresh() {
    const bool multi = plan_ && plan_->comm.nodes > 1;
    methodBox_->setEnabled(multi);
    layerBox_->setEnabled(multi);
    auto empty = [this](const QString& text) {
        heading_->setText(text);
        dispatch_->setEmptyText(text);
        dispatch_->clear();
        clearAffinity(text);
    };
    if (!plan_) {
        empty(tr("No plan"));
        return;
    }
    if (plan_->comm.nodes <= 1) {
        empty(tr("The plan is on one node: no token crosses nodes. Give the topology gpus_per_node (or "
                 "ep_rank_nodes and dp_slot_nodes) to plan and see the traffic between nodes."));
        return;
    }
    const Method m = method();
    const MethodResult& r = method_of(*plan_, m);
    if (!plan_->comm.available && !countsNote_.isEmpty()) {
        empty(countsNote_);
        return;
    }
    if (!plan_->comm.available) {
        empty(tr("Communication figures: %1. The window's samples were imported before per-token routes were "
                 "kept; re-import the trace to count the traffic between nodes.")
                  .arg(QString::fromLatin1(kCommUnavailable)));
        return;
    }
    if (!r.comm) {
        // The window has its routes: the plan stopped before the communication stage counted them.
        empty(plan_->cancelled || plan_->time_limit_hit
                  ? tr("Communication figures: %1. The run was %2 before its communication stage; plan the "
                       "window again to count the traffic between nodes.")
                        .arg(QString::fromLatin1(kCommNotComputed),
                             plan_->cancelled ? tr("cancelled") : tr("stopped by its time limit"))
                  : tr("Communication figures: %1 for %2 (it did not run on this plan).")
                        .arg(QString::fromLatin1(kCommNotComputed), QString::fromLatin1(method_label(m))));
        return;
    }
    const CommCost& c = *r.comm;
    const int l = layer();
    const QString label = QString::fromLatin1(method_label(m));
    const QString where = l < 0 ? tr("all %1 MoE layers").arg(c.layers) : tr("MoE layer %1").arg(layerLabel(*plan_, l));

    showDispatch(c, l, label, where);
    showCoactivation(m, l, label);
}

void CommPanel::showDispatch(const CommCost& c, int l, const QString& label, const QString& where) {
    const int N = c.nodes;
    // Dispatch matrix.
    const std::vector<std::int64_t> mat = dispatch_matrix(c, l);
    std::vector<double> values(mat.begin(), mat.end());
    QStringList from, to;
    for (int a = 0; a < N; ++a) {
        from << tr("node %1").arg(a);
        to << tr("node %1").arg(a);
    }
    std::int64_t inter = 0, intra = 0;
    for (int a = 0; a < N; ++a)
        for (int b = 0; b < N; ++b)
            (a == b ? intra : inter) += mat[static_cast<std::size_t>(a) * N + b];
    dispatch_->setTitle(tr("%1: dispatch copies node to node, %2 (dashed: intra-node)").arg(label, where));
    dispatch_->setData(N, N, std::move(values), from, to);
    dispatch_->setRange(0, static_cast<double>(*std::max_element(mat.begin(), mat.end())));
    dispatch_->setToolTipProvider([mat, N, where](int a, int b) {
        const std::int64_t v = mat[static_cast<std::size_t>(a) * N + b];
        return a == b ? tr("<b>node %1 to itself</b>, %2<br>%3 intra-node (token, node) pairs: tokens of node %1's "
                           "DP slots with an expert on node %1 (NVLink, no network)")
                            .arg(a)
                            .arg(where)
                            .arg(grouped(v))
                      : tr("<b>node %1 to node %2</b>, %3<br>%4 token copies sent over the network (once per token "
                           "and destination node; the combine sends them back)")
                            .arg(a)
                            .arg(b)
                            .arg(where)
                            .arg(grouped(v));
    });
    heading_->setText(tr("<b>%1</b>, %2: <b>%3</b> inter-node copies, %4 intra-node (token, node) pairs%5; "
                         "busiest node, summed over rows and layers: %6 copies. %7 nodes.")
                          .arg(label, where, grouped(inter), grouped(intra),
                               l < 0 ? QString() : tr("; the whole step sends %1").arg(grouped(c.inter_total)),
                               grouped(c.busiest_total))
                          .arg(N));
}

void CommPanel::clearAffinity(const QString& text) {
    affinity_->setEmptyText(text);
    affinity_->clear();
    affinity_->setGroupBoundaries({}, {});
}

void CommPanel::showCoactivation(Method m, int l, const QString& label) {
    // Co-activation of one MoE layer, experts ordered by the method's placement's nodes.
    if (l < 0) {
        clearAffinity(tr("Pick one MoE layer to see which experts the window's tokens use together: the "
                         "grouping of experts onto nodes is per layer."));
        return;
    }
    if (!window_ || !window_->has_routes()) {
        clearAffinity(tr("Expert co-activation needs the planned window's per-token routes (not loaded "
                         "for this plan)."));
        return;
    }
    if (const auto it = coCache_.find(l); it != coCache_.end()) {
        showAffinity(m, l, label, it->second);
        return;
    }
    // O(tokens x K^2) per layer: counted on a worker thread, once per layer of the window.
    clearAffinity(tr("Counting which experts the tokens of MoE layer %1 use together…").arg(layerLabel(*plan_, l)));
    if (coPending_ == l) return;
    coPending_ = l;
    const std::shared_ptr<const Trace> window = window_;
    coactivation_->start<std::vector<std::int64_t>>(
        [window, l](JobContext&) { return coactivation_matrix(*window, l); },
        [this, l](quint64, const std::shared_ptr<const std::vector<std::int64_t>>& co) {
            coPending_ = -1;
            coCache_[l] = co;
            refresh();
        },
        [this, l](quint64, const JobFailure& failure) {
            coPending_ = -1;
            if (layer() == l) clearAffinity(failure.text);
        });
}

bool CommPanel::coactivationPending() const {
    return coPending_ >= 0;
}

void CommPanel::showAffinity(Method m, int l, const QString& label,
                             const std::shared_ptr<const std::vector<std::int64_t>>& counts) {
    const std::shared_ptr<const PlanResult> keep = plan_;
    const std::vector<std::int64_t>& co = *counts;
    const int E = window_->model.experts;
    const ExpertNodeOrder order = experts_by_node(plan_->topology, placement_of(*plan_, m), l);
    std::vector<double> v(static_cast<std::size_t>(E) * E);
    QStringList labels;
    std::int64_t offDiagonal = 0;
    for (int i = 0; i < E; ++i) {
        const int e = order.experts[static_cast<std::size_t>(i)];
        labels << QStringLiteral("e%1").arg(e);
        for (int j = 0; j < E; ++j) {
            const int f = order.experts[static_cast<std::size_t>(j)];
            const std::int64_t x = co[static_cast<std::size_t>(e) * E + f];
            v[static_cast<std::size_t>(i) * E + j] = static_cast<double>(x);
            if (e != f) offDiagonal = std::max(offDiagonal, x);
        }
    }
    affinity_->setTitle(tr("Expert co-activation, MoE layer %1: tokens using both experts, grouped by %2's nodes")
                            .arg(layerLabel(*plan_, l), label));
    affinity_->setData(E, E, std::move(v), labels, labels);
    affinity_->setRange(0, offDiagonal > 0 ? static_cast<double>(offDiagonal) : 1.0);
    affinity_->setGroupBoundaries(order.boundaries, order.boundaries);
    affinity_->setToolTipProvider([counts, order, E, keep, l](int i, int j) {
        const int e = order.experts[static_cast<std::size_t>(i)], f = order.experts[static_cast<std::size_t>(j)];
        const std::int64_t x = (*counts)[static_cast<std::size_t>(e) * E + f];
        const int ne = order.node[static_cast<std::size_t>(i)], nf = order.node[static_cast<std::size_t>(j)];
        if (e == f)
            return tr("<b>expert %1</b> (node %2), MoE layer %3<br>%4 tokens route to it")
                .arg(e)
                .arg(ne)
                .arg(layerLabel(*keep, l))
                .arg(grouped(x));
        return tr("<b>experts %1 (node %2) and %3 (node %4)</b>, MoE layer %5<br>%6 tokens route to both%7")
            .arg(e)
            .arg(ne)
            .arg(f)
            .arg(nf)
            .arg(layerLabel(*keep, l))
            .arg(grouped(x))
            .arg(ne == nf ? tr(" (same node: one copy serves both)")
                          : tr(" (different nodes: a token of a third node is sent to both)"));
    });
}

} // namespace routepack::views
