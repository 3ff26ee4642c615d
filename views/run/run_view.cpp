#include "views/run/run_view.h"
#include "views/widgets/file_export.h"

#include "storage/library.h"
#include "views/jobs/job_tracker.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_views.h"
#include "views/widgets/editor_fields.h"
#include "views/widgets/gui_text.h"

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

QChartView* chartView(QWidget* parent, int minHeight) {
    QChartView* view = makeChartView(parent, QSize(260, minHeight));
    view->viewport()->setMouseTracking(true);
    return view;
}

QString pct(double v) {
    return QString::asprintf("%+.2f %%", v);
}

} // namespace

RunView::RunView(QWidget* parent)
    : QWidget(parent), tracker_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)),
      frontierTracker_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)) {
    heading_ = new QLabel(this);
    heading_->setWordWrap(true);
    heading_->setTextFormat(Qt::RichText);
    topologyLabel_ = new QLabel(tr("Topology:"), this);
    // At least 16 characters wide, on its own line under the heading with the view's width: a long
    // topology name is whole, and one longer than the view is elided in the middle (its popup and
    // tooltip whole), never widening the window.
    topologyBox_ = new MiddleElidingComboBox(this);
    topologyBox_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    topologyBox_->setMinimumContentsLength(16);
    topologyBox_->setToolTip(tr("Topology of the runs shown (each topology with runs in two or more windows)"));
    // The heading and the topology row keep their own height; the charts below take the rest.
    auto* top = new QWidget(this);
    top->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    auto* bar = new QVBoxLayout(top);
    bar->setContentsMargins(0, 0, 0, 0);
    bar->addWidget(heading_);
    auto* topologyRow = new QHBoxLayout;
    topologyRow->addWidget(topologyLabel_);
    topologyRow->addWidget(topologyBox_, 1);
    bar->addLayout(topologyRow);

    empty_ = new QLabel(this);
    empty_->setWordWrap(true);
    empty_->setAlignment(Qt::AlignCenter);
    empty_->setMargin(24);
    costView_ = chartView(this, 180);
    gainView_ = chartView(this, 150);
    churnView_ = chartView(this, 150);
    applyView_ = chartView(this, 150);
    auto* bottom = new QSplitter(Qt::Horizontal, this);
    bottom->addWidget(gainView_);
    bottom->addWidget(churnView_);
    // What applying the run costs: compute + materialization per step, and one step's frontier.
    auto* apply = new QSplitter(Qt::Horizontal, this);
    apply->addWidget(applyView_);
    apply->addWidget(buildFrontierPane());
    apply->setStretchFactor(0, 1);
    apply->setStretchFactor(1, 1);
    // The lower charts share one row (two tabs): every chart keeps a readable height at 768 px.
    chartTabs_ = new QTabWidget(this);
    chartTabs_->setDocumentMode(true);
    chartTabs_->addTab(bottom, tr("Gains and moves"));
    chartTabs_->addTab(apply, tr("Applying the run"));
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(costView_);
    split->addWidget(chartTabs_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({450, 450});
    stack_ = new QStackedWidget(this);
    stack_->addWidget(empty_);
    stack_->addWidget(split);
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(4, 4, 4, 4);
    v->addWidget(top);
    v->addWidget(stack_, 1);
    for (QChartView* view : {costView_, churnView_, gainView_, applyView_})
        view->viewport()->installEventFilter(this);
    connect(topologyBox_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0 && i != series_) setSeriesIndex(i);
    });
    showEmpty(tr("Select a trace in the library to see its whole run."));
}

RunView::~RunView() {
    frontierTracker_->shutdown();
    tracker_->shutdown();
}

QWidget* RunView::buildFrontierPane() {
    auto* pane = new QWidget(this);
    frontierBox_ = new QComboBox(pane);
    frontierBox_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    frontierBox_->setMinimumContentsLength(8);
    frontierBox_->setToolTip(tr("The step whose frontier is planned (a click on a step in a chart selects it)"));
    frontierButton_ = new QPushButton(tr("Compute"), pane);
    frontierButton_->setToolTip(tr("Plan the step again within move budgets of 0, 1, 2, 5, 10, 25, 50 and 100 % of "
                                   "its experts, from the previous step's placement (routepack sweep --frontier)"));
    frontierNote_ = new QLabel(pane);
    frontierNote_->setWordWrap(true);
    // Three lines kept: a word-wrapped label in a splitter's tab page gets no height-for-width, and
    // its note (or why there is no frontier) would be cut.
    frontierNote_->setMinimumHeight(3 * frontierNote_->fontMetrics().lineSpacing() + 2);
    frontierNote_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    frontierView_ = chartView(pane, 120);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Frontier of step:"), pane));
    row->addWidget(frontierBox_, 1);
    row->addWidget(frontierButton_);
    auto* v = new QVBoxLayout(pane);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    v->addLayout(row);
    v->addWidget(frontierNote_);
    v->addWidget(frontierView_, 1);
    connect(frontierButton_, &QPushButton::clicked, this, [this] { computeFrontier(frontierBox_->currentIndex()); });
    return pane;
}

void RunView::setSource(const QString& library, const QString& trace, const QString& revision) {
    if (clusterRun_ == 0 && library == library_ && trace == trace_ && revision == revision_ &&
        (loading_ || data_ || trace.isEmpty()))
        return;
    library_ = library;
    trace_ = trace;
    revision_ = revision;
    clusterRun_ = 0;
    start();
}

void RunView::setClusterSource(const QString& library, qint64 clusterRun, const QString& revision) {
    if (clusterRun_ == clusterRun && library == library_ && revision == revision_ && (loading_ || data_)) return;
    library_ = library;
    trace_.clear();
    revision_ = revision;
    clusterRun_ = clusterRun;
    start();
}

void RunView::reload() {
    start();
}

bool RunView::isLoading() const {
    return loading_;
}

void RunView::start() {
    data_.reset();
    if (clusterRun_ > 0 && !library_.isEmpty()) {
        loading_ = true;
        showEmpty(tr("Reading cluster run %1…").arg(clusterRun_));
        const std::string file = library_.toStdString();
        const std::int64_t id = clusterRun_;
        tracker_->start<RunSeriesSet>(
            [file, id](JobContext& ctx) {
                auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
                return compute_cluster_run_series(*lib, id, ctx.cancelFlag());
            },
            [this](quint64, const std::shared_ptr<const RunSeriesSet>& set) {
                loading_ = false;
                trace_ = QString::fromStdString(set->trace);
                showResult(set);
            },
            [this, id](quint64, const JobFailure& failure) {
                loading_ = false;
                auto set = std::make_shared<RunSeriesSet>();
                set->cluster_run = id;
                set->error = failure.text.toStdString();
                showResult(set);
            });
        return;
    }
    if (library_.isEmpty() || trace_.isEmpty()) {
        tracker_->invalidate();
        loading_ = false;
        showEmpty(tr("Select a trace in the library to see its whole run."));
        Q_EMIT updated();
        return;
    }
    loading_ = true;
    showEmpty(tr("Reading the saved runs of %1…").arg(trace_));
    const std::string file = library_.toStdString(), trace = trace_.toStdString();
    tracker_->start<RunSeriesSet>(
        [file, trace](JobContext& ctx) {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly); // this thread's own
            return compute_run_series(*lib, trace, ctx.cancelFlag());
        },
        [this](quint64, const std::shared_ptr<const RunSeriesSet>& set) {
            loading_ = false;
            showResult(set);
        },
        [this, trace](quint64, const JobFailure& failure) {
            loading_ = false;
            auto set = std::make_shared<RunSeriesSet>();
            set->trace = trace;
            set->error = failure.text.toStdString();
            showResult(set);
        });
}

void RunView::showResult(std::shared_ptr<const RunSeriesSet> set) {
    data_ = std::move(set);
    {
        QSignalBlocker block(topologyBox_);
        topologyBox_->clear();
        for (const auto& s : data_->series)
            topologyBox_->addItem(tr("%1 (%2 steps)").arg(QString::fromStdString(s.topology)).arg(s.steps.size()));
    }
    const bool several = data_->series.size() > 1;
    topologyLabel_->setVisible(several);
    topologyBox_->setVisible(several);
    series_ = data_->series.empty() ? -1 : 0;
    rebuild();
    Q_EMIT updated();
}

void RunView::showEmpty(const QString& text) {
    series_ = -1;
    bins_.clear();
    for (QChartView* v : {costView_, gainView_, churnView_})
        clearChart(v->chart());
    for (auto& s : cost_)
        s = nullptr;
    churnSet_ = gainSet_ = movesSet_ = computeSet_ = materializationSet_ = nullptr;
    frontierTracker_->invalidate();
    frontierLoading_ = false;
    frontier_.reset();
    clearChart(applyView_->chart());
    fillFrontierChart();
    {
        QSignalBlocker block(frontierBox_);
        frontierBox_->clear();
    }
    frontierButton_->setEnabled(false);
    empty_->setText(text);
    heading_->setText(trace_.isEmpty() ? tr("<b>Run</b>") : tr("<b>Run of trace %1</b>").arg(trace_.toHtmlEscaped()));
    topologyLabel_->setVisible(false);
    topologyBox_->setVisible(false);
    stack_->setCurrentWidget(empty_);
}

const RunSeries* RunView::currentSeries() const {
    if (!data_ || series_ < 0 || series_ >= static_cast<int>(data_->series.size())) return nullptr;
    return &data_->series[static_cast<std::size_t>(series_)];
}

int RunView::seriesIndex() const {
    return currentSeries() ? series_ : -1;
}

void RunView::setSeriesIndex(int index) {
    if (!data_ || index < 0 || index >= static_cast<int>(data_->series.size())) return;
    series_ = index;
    {
        QSignalBlocker block(topologyBox_);
        topologyBox_->setCurrentIndex(index);
    }
    rebuild();
    Q_EMIT updated();
}

bool RunView::isEmptyState() const {
    return stack_->currentWidget() == empty_;
}

QString RunView::emptyText() const {
    return isEmptyState() ? empty_->text() : QString();
}

QString RunView::headingText() const {
    return heading_->text();
}

namespace {

/// The heading's line on applying the run, when its plans carry a migration cost model: experts
/// moved and modelled time summed over the steps (sweep's experts_moved_total and
/// modelled_seconds_total of the last step); "" otherwise.
QString migrationText(const RunSeries& s) {
    if (s.table.empty() || !s.table.back().modelled_s_total) return {};
    double compute = 0, materialization = 0;
    for (const SweepLine& l : s.table)
        compute += l.compute_s.value_or(0), materialization += l.materialization_s.value_or(0);
    return RunView::tr(
               "<br>applying the run: %1 experts moved; modelled time compute %2 s + materialization %3 s = %4 s")
        .arg(s.table.back().moves_total)
        .arg(compute, 0, 'f', 4)
        .arg(materialization, 0, 'f', 4)
        .arg(*s.table.back().modelled_s_total, 0, 'f', 4);
}

} // namespace

void RunView::rebuild() {
    const RunSeries* s = currentSeries();
    if (!s) {
        const QString t = trace_;
        if (clusterRun_ > 0 && (!data_ || !data_->error.empty())) {
            showEmpty(tr("Cannot read cluster run %1: %2")
                          .arg(clusterRun_)
                          .arg(data_ ? QString::fromStdString(data_->error) : tr("no result")));
        } else if (!data_ || !data_->error.empty()) {
            showEmpty(tr("Cannot read the runs of trace %1: %2")
                          .arg(t, data_ ? QString::fromStdString(data_->error) : tr("no result")));
        } else if (clusterRun_ > 0) {
            showEmpty(tr("Cluster run %1 has no planned step.").arg(clusterRun_));
        } else {
            showEmpty(tr("Trace %1 has saved runs in %2 of its %3 windows, and no topology has runs in two or more.\n\n"
                         "The Run view shows a training run step by step: cut the trace into consecutive windows "
                         "(Define window, Split into consecutive windows), then plan each window on one topology "
                         "(select them, or the trace, and Plan run; or routepack sweep from the command line).")
                          .arg(t)
                          .arg(data_->windows_with_runs)
                          .arg(data_->windows));
        }
        return;
    }
    const RunSeriesSummary summary = summarize_series(*s);
    fillCostChart(*s);
    fillChurnChart(*s, summary);
    fillGainChart(*s);
    fillApplyChart(*s);
    // A new series: the frontier box lists its steps, and no frontier of another series stays.
    frontierTracker_->invalidate();
    frontierLoading_ = false;
    frontier_.reset();
    {
        QSignalBlocker block(frontierBox_);
        frontierBox_->clear();
        for (std::size_t k = 0; k < s->steps.size(); ++k)
            frontierBox_->addItem(QStringLiteral("%1: %2").arg(k).arg(QString::fromStdString(s->steps[k].window)));
        frontierBox_->setCurrentIndex(s->steps.size() > 1 ? 1 : 0);
    }
    frontierButton_->setEnabled(true);
    fillFrontierChart();
    // Heading: what is shown, the gain summary and the churn total.
    const Topology& t = s->topology_value;
    const QString what =
        clusterRun_ > 0 ? tr("<b>Cluster run %1</b> (%2, %3)")
                              .arg(clusterRun_)
                              .arg(trace_.toHtmlEscaped(), QString::fromStdString(data_->cluster_out).toHtmlEscaped())
                        : tr("<b>Run of trace %1</b>").arg(trace_.toHtmlEscaped());
    QString failed;
    if (!s->failed.empty())
        failed = tr("<br>%n failed step(s): %1", nullptr, static_cast<int>(s->failed.size()))
                     .arg(QString::fromStdString(s->failed.front()).toHtmlEscaped() +
                          (s->failed.size() > 1 ? QStringLiteral("; …") : QString()));
    heading_->setText(tr("%1 on %2 (EP%3/DP%4, %5 shards, C %6): %7 steps of %8 windows<br>"
                         "routepack vs baseline: mean %9, median %10, best %11, worst %12; churn %13 slots in total")
                          .arg(what, QString::fromStdString(s->topology).toHtmlEscaped())
                          .arg(t.ep_ranks)
                          .arg(t.dp_slots)
                          .arg(t.shards())
                          .arg(capText(t))
                          .arg(static_cast<int>(s->steps.size()))
                          .arg(data_->windows)
                          .arg(pct(summary.mean_gain_pct), pct(summary.median_gain_pct), pct(summary.best_gain_pct),
                               pct(summary.worst_gain_pct))
                          .arg(summary.churn_total) +
                      migrationText(*s) + failed);
    stack_->setCurrentIndex(1);
}

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

int RunView::frontierStep() const {
    return currentSeries() ? frontierBox_->currentIndex() : -1;
}

void RunView::setFrontierStep(int k) {
    const RunSeries* s = currentSeries();
    if (s && k >= 0 && k < static_cast<int>(s->steps.size())) frontierBox_->setCurrentIndex(k);
}

bool RunView::computeFrontier(int k) {
    const RunSeries* s = currentSeries();
    if (!s || k < 0 || k >= static_cast<int>(s->steps.size())) return false;
    setFrontierStep(k);
    chartTabs_->setCurrentIndex(1);
    frontierLoading_ = true;
    frontier_.reset();
    fillFrontierChart();
    const std::string file = library_.toStdString(), trace = data_->trace;
    // The worker holds its own copy of the series' values (a reload may replace data_ meanwhile).
    auto series = std::make_shared<const RunSeries>(*s);
    frontierTracker_->start<StepFrontier>(
        [file, trace, series, k](JobContext& ctx) {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
            return compute_step_frontier(*lib, trace, *series, k, 0, ctx.cancelFlag());
        },
        [this](quint64, const std::shared_ptr<const StepFrontier>& f) {
            frontierLoading_ = false;
            frontier_ = f;
            fillFrontierChart();
            Q_EMIT frontierUpdated();
        },
        [this, k](quint64, const JobFailure& failure) {
            frontierLoading_ = false;
            auto f = std::make_shared<StepFrontier>();
            f->step = k;
            f->error = failure.text.toStdString();
            frontier_ = f;
            fillFrontierChart();
            Q_EMIT frontierUpdated();
        });
    return true;
}

QString RunView::frontierNote() const {
    if (!currentSeries()) return {};
    if (frontierLoading_) return tr("Planning the step within every move budget…");
    if (!frontier_) return tr("Pick a step and Compute: the step is planned again within each move budget (8 plans).");
    if (!frontier_->error.empty()) return tr("No frontier: %1").arg(QString::fromStdString(frontier_->error));
    const StepFrontier& f = *frontier_;
    const FrontierPoint& keep = f.points.front();
    const FrontierPoint& full = f.points.back();
    return tr("max_g U keeping the placement %1; full re-placement %2 (%3 moved); the saved plan %4 (%5 moved)")
        .arg(keep.max_u, 0, 'f', 4)
        .arg(full.max_u, 0, 'f', 4)
        .arg(full.moves)
        .arg(f.saved_max_u, 0, 'f', 4)
        .arg(f.saved_moves);
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
        if (l.compute_s && l.materialization_s)
            tip += tr("<br>modelled time: compute %1 s + materialization %2 s = %3 s (%4 experts moved, %5 bytes)")
                       .arg(*l.compute_s, 0, 'f', 4)
                       .arg(*l.materialization_s, 0, 'f', 4)
                       .arg(*l.compute_s + *l.materialization_s, 0, 'f', 4)
                       .arg(l.moves)
                       .arg(QString::fromStdString(
                           grouped_count(static_cast<std::int64_t>(l.migration_bytes.value_or(0)))));
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

int RunView::stepAt(QChartView* view, const QPoint& pos) const {
    const RunSeries* s = currentSeries();
    if (!s || !view || (view != costView_ && view != churnView_ && view != applyView_)) return -1;
    QChart* c = view->chart();
    const QList<QAbstractSeries*> series = c->series();
    if (series.isEmpty()) return -1;
    const QPointF scene = view->mapToScene(pos);
    const QPointF inChart = c->mapFromScene(scene);
    if (!c->plotArea().contains(inChart)) return -1;
    const double x = c->mapToValue(inChart, series.first()).x();
    const int k = static_cast<int>(std::lround(x));
    return k >= 0 && k < static_cast<int>(s->steps.size()) ? k : -1;
}

bool RunView::activateStep(int k) {
    const RunSeries* s = currentSeries();
    if (!s || k < 0 || k >= static_cast<int>(s->steps.size())) return false;
    const auto i = static_cast<std::size_t>(k);
    const RunStep& st = s->steps[i];
    setFrontierStep(k);
    if (st.run <= 0 && i < s->plan_files.size())
        Q_EMIT clusterStepActivated(QString::fromStdString(s->plan_files[i]), QString::fromStdString(s->step_paths[i]),
                                    QString::fromStdString(st.window));
    else
        Q_EMIT stepActivated(st.run, trace_, QString::fromStdString(st.window));
    return true;
}

QLineSeries* RunView::costSeries(Method m) const {
    return cost_[m];
}

bool RunView::eventFilter(QObject* watched, QEvent* event) {
    QChartView* view = nullptr;
    for (QChartView* v : {costView_, churnView_, applyView_})
        if (watched == v->viewport()) view = v;
    if (view && (event->type() == QEvent::MouseMove || event->type() == QEvent::MouseButtonRelease)) {
        const auto* me = static_cast<QMouseEvent*>(event);
        const int k = stepAt(view, me->position().toPoint());
        if (event->type() == QEvent::MouseMove) {
            if (k >= 0)
                QToolTip::showText(me->globalPosition().toPoint(), stepToolTip(k), view);
            else
                QToolTip::hideText();
        } else if (me->button() == Qt::LeftButton && k >= 0) {
            // A step of the apply chart asks for its frontier; of the other charts, for its plan.
            if (view == applyView_)
                computeFrontier(k);
            else
                activateStep(k);
        }
    }
    return QWidget::eventFilter(watched, event);
}

void RunView::changeEvent(QEvent* e) {
    if (e->type() == QEvent::PaletteChange)
        for (QChartView* v : {costView_, gainView_, churnView_, applyView_, frontierView_})
            styleChart(v->chart(), palette());
    QWidget::changeEvent(e);
}

std::string RunView::tableCsv() const {
    const RunSeries* s = currentSeries();
    return s ? sweep_csv(s->table) : std::string();
}

QStringList RunView::chartNames() {
    return {QStringLiteral("run-costs"), QStringLiteral("run-gains"), QStringLiteral("run-churn"),
            QStringLiteral("run-apply"), QStringLiteral("run-frontier")};
}

bool RunView::exportChart(const QString& name, const QString& file, QString* error) const {
    const int i = static_cast<int>(chartNames().indexOf(name));
    if (i < 0 || !currentSeries()) {
        if (error) *error = i < 0 ? tr("no Run view chart named %1").arg(name) : tr("the Run view shows no run");
        return false;
    }
    if (i == 3 && !has_migration_costs(*currentSeries())) {
        if (error) *error = tr("the run shown carries no migration cost model");
        return false;
    }
    if (i == 4 && (!frontier_ || frontier_->points.empty())) {
        if (error) *error = tr("no frontier is shown: pick a step and Compute");
        return false;
    }
    // The chart exported is the one on screen: its tab comes forward.
    if (i > 0) chartTabs_->setCurrentIndex(i < 3 ? 0 : 1);
    QChartView* views[] = {costView_, gainView_, churnView_, applyView_, frontierView_};
    return exportWidgetImage(views[i], file, error);
}

} // namespace routepack::views
