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
    costView_->setObjectName(QStringLiteral("costChart"));
    gainView_->setObjectName(QStringLiteral("gainChart"));
    churnView_->setObjectName(QStringLiteral("churnChart"));
    applyView_->setObjectName(QStringLiteral("applyChart"));
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
    chartTabs_->setObjectName(QStringLiteral("chartTabs"));
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
    frontierView_->setObjectName(QStringLiteral("frontierChart"));
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

/// The heading's line on the measured steps, when the library links measured baseline and routepack
/// layouts to some steps: routepack against the baseline measured and modelled over those steps; ""
/// otherwise.
QString measuredText(const RunSeries& s) {
    const MeasuredRunSummary m = summarize_measured(s);
    if (m.steps == 0) return {};
    return QObject::tr("<br>measured (%n step(s) with baseline and routepack measured): routepack vs baseline mean "
                       "%1 measured, %2 modelled on the same steps",
                       nullptr, m.steps)
        .arg(pct(m.mean_measured_pct), pct(m.mean_modelled_pct));
}

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
                      measuredText(*s) + migrationText(*s) + failed);
    stack_->setCurrentIndex(1);
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
