#include "views/plan/plan_views.h"
#include "views/widgets/file_export.h"

#include "core/plan/score/placement.h"
#include "views/plan/comm_panel.h"
#include "views/plan/convergence_panel.h"
#include "views/plan/costs_panel.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/gain_explanation.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/measured_panel.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_explain_gain.h"
#include "views/plan/plan_models.h"
#include "views/plan/row_heatmap_panel.h"
#include "views/widgets/frozen_table.h"
#include "views/widgets/gui_text.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QMenu>
#include <QPainter>
#include <QPixmap>
#include <QPushButton>
#include <QSaveFile>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QSvgGenerator>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace routepack::views {

namespace {

const char* const kViewIds[] = {"ep-heatmap",  "row-heatmap",   "costs",   "grid",
                                "convergence", "communication", "measured"};

} // namespace

// =============================================================================================
// PlanView

PlanView::PlanView(QWidget* parent) : QTabWidget(parent) {
    ep_ = new EpHeatmapPanel(this);
    rowHeat_ = new RowHeatmapPanel(this);
    costs_ = new CostsPanel(this);
    grid_ = new GridPanel(this);
    conv_ = new ConvergencePanel(this);
    comm_ = new CommPanel(this);
    measured_ = new MeasuredPanel(this);
    const QString titles[] = {tr("EP-rank loads"), tr("Row peaks"),     tr("Costs"),   tr("Execution grid"),
                              tr("Convergence"),   tr("Communication"), tr("Measured")};
    QWidget* pages[] = {ep_, rowHeat_, costs_, grid_, conv_, comm_, measured_};
    for (int i = 0; i < 7; ++i) {
        pages[i]->setObjectName(QString::fromLatin1(kViewIds[i]));
        addTab(pages[i], titles[i]);
    }
    connect(grid_, &GridPanel::cellActivated, this, &PlanView::cellActivated);
    connect(ep_, &EpHeatmapPanel::rankActivated, this,
            [this](int layer, int rank, bool planned, const QList<int>& samples, const QString& description,
                   const QList<qint64>& tokens) {
                rowHeat_->setSelectedLayer(layer);
                Q_EMIT rankActivated(layer, rank, planned, samples, description, tokens);
            });
    connect(costs_, &CostsPanel::explainLinkActivated, this, &PlanView::openExplainLink);
}

bool PlanView::openExplainLink(const QString& link) {
    const ExplainLink k = parseExplainLink(link);
    if (!plan_ || k.kind == ExplainLink::None) return false;
    const int G = plan_->topology.shards(), L = plan_->model.num_moe_layers(), P = plan_->topology.ep_ranks;
    switch (k.kind) {
    case ExplainLink::Shard:
    case ExplainLink::Layer: {
        const int g = k.kind == ExplainLink::Shard ? k.a : k.b;
        if (g >= G || (k.kind == ExplainLink::Layer && k.a >= L)) return false;
        rowHeat_->setMethod(k.method);
        rowHeat_->setShard(g);
        if (k.kind == ExplainLink::Layer) rowHeat_->setSelectedLayer(k.a);
        setCurrentWidget(rowHeat_);
        return true;
    }
    case ExplainLink::Row: {
        if (k.a >= plan_->rows.rows || k.b >= G) return false;
        grid_->setMethod(k.method);
        grid_->view()->clearSelection();
        grid_->view()->selectRow(k.a);
        setCurrentWidget(grid_);
        return true;
    }
    case ExplainLink::Rank:
        if (k.a >= L || k.b >= P) return false;
        setCurrentWidget(ep_);
        ep_->selectCell(k.a, k.b, true);
        return true;
    default:
        return false;
    }
}

PlanView::~PlanView() = default;

void PlanView::setPlan(std::shared_ptr<const PlanResult> plan) {
    setPlan(std::move(plan), nullptr);
}

void PlanView::setPlan(std::shared_ptr<const PlanResult> plan, std::shared_ptr<const Trace> window) {
    countsNote_.clear();
    plan_ = std::move(plan);
    window_ = (plan_ && window && window_matches(*plan_, *window)) ? std::move(window) : nullptr;
    refill();
}

void PlanView::setPlacement(const std::shared_ptr<const PlanResult>& placement,
                            std::shared_ptr<const std::vector<std::uint64_t>> expertLoads) {
    countsNote_.clear();
    plan_ = nullptr;
    window_ = nullptr;
    refill();
    ep_->setPlan(placement, std::move(expertLoads));
    setCurrentWidget(ep_);
}

void PlanView::setPlanWithoutCounts(std::shared_ptr<const PlanResult> plan, const QString& countsNote) {
    plan_ = std::move(plan);
    window_ = nullptr;
    countsNote_ = plan_ ? countsNote : QString();
    refill();
}

std::shared_ptr<const PlanResult> PlanView::plan() const {
    return plan_;
}
std::shared_ptr<const Trace> PlanView::window() const {
    return window_;
}

void PlanView::refill() {
    std::shared_ptr<const PlanCosts> costs;
    std::shared_ptr<const std::vector<std::uint64_t>> loads;
    if (plan_ && window_) {
        costs = plan_costs(*plan_, *window_);
        if (static_cast<std::uint64_t>(window_->size()) * window_->stride() <= kMaxCostCounts)
            loads = std::make_shared<const std::vector<std::uint64_t>>(aggregate_expert_loads(
                window_->counts, window_->size(), window_->model.num_moe_layers(), window_->model.experts));
    }
    std::shared_ptr<const GainSplit> gain;
    if (costs && window_) {
        try {
            gain = std::make_shared<const GainSplit>(split_gain(*plan_, *window_, *costs));
        } catch (const std::invalid_argument&) {
            gain = nullptr; // a plan without the four methods' layouts has nothing to split
        }
    }
    ep_->setCountsNote(countsNote_);
    rowHeat_->setCountsNote(countsNote_);
    costs_->setCountsNote(countsNote_);
    comm_->setCountsNote(countsNote_);
    conv_->setEmptyText(countsNote_.isEmpty() ? QString()
                                              : tr("The plan file holds no annealing levels (they are in a "
                                                   "library's saved run only)."));
    ep_->setPlan(plan_, loads, window_);
    rowHeat_->setPlan(plan_, costs, window_);
    costs_->setPlan(plan_, costs, gain);
    grid_->setPlan(plan_);
    comm_->setPlan(plan_, window_);
    measured_->setChoices({}); // the measured plans of another plan are not this one's
    if (plan_) {
        conv_->setLevels(plan_->search.convergence);
        conv_->setTail(convergence_tail(*plan_, costs.get()));
    } else {
        conv_->clear();
    }
}

void PlanView::setMeasured(std::vector<MeasuredChoice> choices) {
    measured_->setChoices(std::move(choices));
}

void PlanView::clearConvergence() {
    conv_->clear();
}
void PlanView::addConvergenceLevel(const LevelStats& level) {
    conv_->addLevel(level);
}

int PlanView::zoomHeatmaps(int steps) {
    QWidget* tab = currentWidget();
    if (!tab) return 0;
    const QList<HeatmapView*> views = tab->findChildren<HeatmapView*>();
    // Targets first: maps that zoom together (the EP-rank pair) must not step twice.
    std::vector<int> targets;
    targets.reserve(static_cast<std::size_t>(views.size()));
    for (const HeatmapView* v : views)
        targets.push_back(steps == 0 ? 0 : v->zoomLevel() + steps);
    for (qsizetype k = 0; k < views.size(); ++k)
        views[k]->setZoomLevel(targets[static_cast<std::size_t>(k)]);
    return static_cast<int>(views.size());
}

QStringList PlanView::viewNames() const {
    QStringList out;
    for (const char* id : kViewIds)
        out.append(QString::fromLatin1(id));
    return out;
}

QWidget* PlanView::viewWidget(const QString& name) const {
    for (QWidget* w : std::initializer_list<QWidget*>{ep_, rowHeat_, costs_, grid_, conv_, comm_, measured_})
        if (w->objectName() == name) return w;
    return nullptr;
}

bool PlanView::exportView(const QString& name, const QString& file, QString* error) const {
    QWidget* w = viewWidget(name);
    if (!w) {
        if (error) *error = tr("Unknown view '%1'").arg(name);
        return false;
    }
    // A hidden tab has never been laid out: give it the size of the visible one first.
    if (!w->isVisible() && currentWidget() && w != currentWidget()) w->resize(currentWidget()->size());
    return exportWidgetImage(w, file, error);
}

// =============================================================================================
// CompareView

struct CompareView::Private {
    CompareTableModel* model = nullptr;
    QSortFilterProxyModel* proxy = nullptr;
    FrozenColumnTable* table = nullptr;
    QPushButton* runs = nullptr; ///< a push button: its style leaves room for the menu arrow
    QMenu* runsMenu = nullptr;
    QLabel* runsNote = nullptr;
    QChartView* chart = nullptr;
    int methods = kPaperMethodCount; ///< bar categories of the chart (method_at(0..methods-1): 4 or 6)
};

QString compareBarToolTip(const PlanResult& run, Method method, const QString& runName) {
    if (!has_method(run, method))
        return QObject::tr("<b>%1</b>: %2 did not run (one node, or no per-token routes)")
            .arg(runName.toHtmlEscaped(), QString::fromLatin1(method_label(method)));
    const double joint = method_of(run, method).metrics.score.max_u;
    auto vs = [&](const MethodResult& ref) {
        const double b = ref.metrics.score.max_u;
        return b > 0 ? QString::asprintf("%+.2f %%", 100.0 * (joint - b) / b) : QStringLiteral("n/a");
    };
    return QObject::tr("<b>%1</b>: %2<br>max_g U = %3<br>%4 vs baseline, %5 vs reorder")
        .arg(runName.toHtmlEscaped(), QString::fromLatin1(method_label(method)))
        .arg(joint, 0, 'f', 4)
        .arg(vs(run.baseline), vs(run.reorder));
}

CompareView::CompareView(QWidget* parent) : QWidget(parent), d_(std::make_unique<Private>()) {
    d_->model = new CompareTableModel(this);
    d_->proxy = new QSortFilterProxyModel(this);
    d_->proxy->setSourceModel(d_->model);
    d_->proxy->setSortRole(RawValueRole);
    d_->table = new FrozenColumnTable(this);
    d_->table->setModel(d_->proxy);
    d_->table->setSortingEnabled(true);
    d_->table->sortByColumn(-1, Qt::AscendingOrder);
    d_->table->setSelectionBehavior(QAbstractItemView::SelectRows);
    d_->table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    d_->table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    d_->table->verticalHeader()->setVisible(false);
    // No stretched last column: scrolled to the end, the last column shows whole beside the frozen run column.
    d_->table->setAlternatingRowColors(true);
    d_->chart = makeChartView(this, QSize(0, 220));
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(d_->table);
    split->addWidget(d_->chart);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    split->setSizes({400, 600}); // proportions kept on resize: the chart gets 60 %
    d_->runs = new QPushButton(this);
    d_->runs->setText(tr("Runs of this window"));
    d_->runs->setToolTip(tr("Every saved run of the shown window: check one to add it to the comparison (loaded "
                            "from the library), uncheck it to leave it out"));
    d_->runsMenu = new QMenu(d_->runs);
    d_->runs->setMenu(d_->runsMenu);
    d_->runs->setEnabled(false);
    d_->runsNote = new QLabel(this);
    d_->runsNote->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    auto* bar = new QHBoxLayout;
    bar->addWidget(d_->runs);
    bar->addWidget(d_->runsNote, 1);
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 0, 0);
    v->addLayout(bar);
    v->addWidget(split);
}

CompareView::~CompareView() = default;

void CompareView::setChoices(const QList<CompareChoice>& choices) {
    d_->runsMenu->clear();
    int in = 0;
    for (const CompareChoice& c : choices) {
        QAction* a = d_->runsMenu->addAction(c.label);
        a->setCheckable(true);
        a->setChecked(c.checked);
        a->setEnabled(c.enabled);
        a->setData(c.id);
        in += c.checked ? 1 : 0;
        const qint64 id = c.id;
        connect(a, &QAction::toggled, this, [this, id](bool on) { Q_EMIT runToggled(id, on); });
    }
    d_->runs->setEnabled(!choices.isEmpty());
    d_->runsNote->setText(
        choices.isEmpty() ? tr("No saved run of this window.")
                          : tr("%1 of %2 saved runs of this window in the comparison.").arg(in).arg(choices.size()));
}

QPushButton* CompareView::runsButton() const {
    return d_->runs;
}
QMenu* CompareView::runsMenu() const {
    return d_->runsMenu;
}
QTableView* CompareView::tableView() const {
    return d_->table;
}

void CompareView::setMeasured(std::map<QString, PerMethod<std::optional<double>>> measured) {
    d_->model->setMeasured(std::move(measured));
}

void CompareView::setRuns(const QList<std::shared_ptr<const PlanResult>>& runs, const QStringList& runNames) {
    d_->model->setRuns(runs, runNames);
    QChart* c = d_->chart->chart();
    clearChart(c);
    const int n = d_->model->runCount();
    if (n == 0) {
        styleChart(c, palette());
        return;
    }
    auto* series = new QBarSeries;
    double top = 0;
    // Categories: every method any run has (the four, and the two communication methods when a run
    // ran on several nodes); a run without a method has a zero bar there (its tooltip says so).
    int methods = kPaperMethodCount;
    for (int k = 0; k < n; ++k)
        methods = std::max(methods, static_cast<int>(plan_methods(d_->model->run(k)).size()));
    d_->methods = methods;
    for (int k = 0; k < n; ++k) {
        // The legend names the run (the label's first part); the table's run column holds the rest.
        auto* set = new QBarSet(d_->model->runName(k).section(QStringLiteral(" \u00b7 "), 0, 0));
        set->setColor(compareRunColour(k));
        set->setBorderColor(compareRunColour(k));
        set->setLabelColor(palette().color(QPalette::Text)); // labels sit above the bars, on the background
        for (int i = 0; i < methods; ++i) {
            const PlanResult& run = d_->model->run(k);
            const Method m = method_at(i);
            const double joint = has_method(run, m) ? method_of(run, m).metrics.score.max_u : 0.0;
            set->append(joint);
            top = std::max(top, joint);
        }
        series->append(set);
    }
    // Values on the bars only while they fit (two runs); beyond that the tooltips carry them, since
    // labels of narrow bars run into each other.
    series->setLabelsVisible(n <= 2);
    series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
    series->setLabelsFormat(QStringLiteral("@value"));
    series->setLabelsPrecision(5);
    connect(series, &QAbstractBarSeries::hovered, d_->chart, [this](bool on, int index, QBarSet* set) {
        if (!on) {
            QToolTip::hideText();
            return;
        }
        const int k =
            d_->chart->chart()->series().isEmpty()
                ? -1
                : static_cast<int>(
                      qobject_cast<QAbstractBarSeries*>(d_->chart->chart()->series().first())->barSets().indexOf(set));
        if (k < 0 || k >= d_->model->runCount() || index < 0 || index >= d_->methods) return;
        QToolTip::showText(QCursor::pos(),
                           compareBarToolTip(d_->model->run(k), method_at(index), d_->model->runName(k)), d_->chart);
    });
    c->addSeries(series);
    auto* x = new QBarCategoryAxis;
    for (int i = 0; i < methods; ++i) {
        const Method m = method_at(i);
        QString label = QString::fromLatin1(method_label(m));
        if (n == 1 && m != Method::Baseline) {
            // One run: the gain against its baseline under each method's name (the title says so).
            const double b = d_->model->run(0).baseline.metrics.score.max_u;
            const double j = method_of(d_->model->run(0), m).metrics.score.max_u;
            if (b > 0) label += QString::asprintf(" (%+.1f %%)", 100.0 * (j - b) / b);
        }
        x->append(label);
    }
    auto* y = new QValueAxis;
    y->setTitleText(tr("max_g U (tokens)"));
    y->setLabelFormat(QStringLiteral("%.4g"));
    y->setRange(0, top > 0 ? top * 1.08 : 1);
    y->applyNiceNumbers();
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    // Runs on different topologies are not comparable on one axis: the title says so.
    QStringList topologies;
    std::vector<Topology> seen;
    for (int k = 0; k < n; ++k) {
        const Topology& t = d_->model->run(k).topology;
        if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
        seen.push_back(t);
        topologies << QStringLiteral("EP%1/DP%2%3 in %4 shards, C %5")
                          .arg(t.ep_ranks)
                          .arg(t.dp_slots)
                          .arg(t.nodes() > 1 ? tr(" on %1 nodes").arg(t.nodes()) : QString())
                          .arg(t.shards())
                          .arg(capText(t));
    }
    c->setTitle(topologies.size() > 1
                    ? tr("Joint cost per method (eq. 15), one bar per run; runs on %1 topologies (%2) share this axis: "
                         "compare within one topology")
                          .arg(topologies.size())
                          .arg(topologies.join(QStringLiteral("; ")))
                : n == 1 ? tr("Joint cost per method (eq. 15); in brackets: against the baseline")
                         : tr("Joint cost per method (eq. 15), one bar per run"));
    c->legend()->setVisible(true);
    c->legend()->setAlignment(Qt::AlignRight);
    styleChart(c, palette());
}

void CompareView::changeEvent(QEvent* e) {
    if (e->type() == QEvent::PaletteChange) {
        styleChart(d_->chart->chart(), palette());
        for (QAbstractSeries* series : d_->chart->chart()->series())
            if (auto* bars = qobject_cast<QAbstractBarSeries*>(series))
                for (QBarSet* set : bars->barSets())
                    set->setLabelColor(palette().color(QPalette::Text));
    }
    QWidget::changeEvent(e);
}

QAbstractItemModel* CompareView::model() const {
    return d_->model;
}

bool CompareView::exportTableCsv(const QString& file, QString* error) const {
    return exportModelCsv(*d_->model, file, error);
}

bool CompareView::exportChart(const QString& file, QString* error) const {
    return exportWidgetImage(d_->chart, file, error);
}

QWidget* CompareView::chartWidget() const {
    return d_->chart;
}

} // namespace routepack::views
