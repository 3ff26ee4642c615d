#include "views/results_pane.h"

#include "core/plan/method.h"
#include "views/dialogs/measured_import_dialog.h"
#include "views/jobs/job_tracker.h"
#include "views/library/library_pane.h"
#include "views/plan/compare_data.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_view.h"
#include "views/plan/measured_data.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_views.h"
#include "views/run/run_view.h"
#include "views/run/whole_runs_view.h"

#include <QAction>
#include <QMenu>
#include <QToolButton>

#include <algorithm>
#include <cmath>
#include <map>

namespace routepack::views {

ResultsPane::ResultsPane(LibraryPane* library, PlanningController* planning, QWidget* parent)
    : QTabWidget(parent), library_(library), planning_(planning), plan_(new PlanView(this)),
      compare_(new CompareView(this)), run_(new RunView(this)), wholeRuns_(new WholeRunsView(this)),
      importStep_(new QToolButton(plan_)),
      measuredLoad_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)) {
    setObjectName(QStringLiteral("resultTabs"));
    plan_->setObjectName(QStringLiteral("planView"));
    compare_->setObjectName(QStringLiteral("compareView"));
    run_->setObjectName(QStringLiteral("runView"));
    wholeRuns_->setObjectName(QStringLiteral("wholeRunsView"));
    setDocumentMode(true);
    addTab(plan_, tr("Plan"));
    addTab(compare_, tr("Compare runs"));
    addTab(run_, tr("Run"));
    addTab(wholeRuns_, tr("Whole runs"));
    // The whole runs follow the library: a sweep, an import or a run planned here adds one.
    connect(library_, &LibraryPane::refreshed, wholeRuns_, &WholeRunsView::reload);
    // Queued: the slot rebuilds the menu whose action sent the signal.
    connect(compare_, &CompareView::runToggled, this, &ResultsPane::toggleCompared, Qt::QueuedConnection);
    // Shown while a cluster run's step is shown without its counts (PlanningController::openClusterStep).
    importStep_->setObjectName(QStringLiteral("importStep"));
    importStep_->setText(tr("Import step…"));
    plan_->setCornerWidget(importStep_, Qt::TopRightCorner);
    importStep_->setVisible(false);
    connect(importStep_, &QToolButton::clicked, this, [this] { Q_EMIT importStepRequested(); });
    // A click on a step of the run shows that step's saved run in the plan views.
    connect(run_, &RunView::stepActivated, this, [this](qint64 runId, const QString& trace, const QString& window) {
        if (!library_->selectRun(runId)) {
            Q_EMIT status(tr("Run %1 of %2/%3 is no longer in the library.").arg(runId).arg(trace, window), true);
            return;
        }
        setCurrentWidget(plan_);
    });
    // A cluster run's step: its plan stays in OUT and the library has no counts of it.
    connect(run_, &RunView::clusterStepActivated, this,
            [this](const QString& planFile, const QString& stepPath, const QString& window) {
                planning_->openClusterStep({run_->clusterRun(), planFile, stepPath, window});
            });
    connect(plan_, &PlanView::cellActivated, this, &ResultsPane::onCellActivated);
    connect(plan_, &PlanView::rankActivated, this,
            [this](int layer, int rank, bool, const QList<int>& samples, const QString& description,
                   const QList<qint64>& tokens) { onRankActivated(layer, rank, samples, description, tokens); });
    connect(planning_->queue(), &PlanJobQueue::levelFinished, this,
            [this](quint64, const LevelStats& level) { plan_->addConvergenceLevel(level); });
    connect(planning_, &PlanningController::compareChanged, this, &ResultsPane::updateCompare);
}

void ResultsPane::addViewActions(QMenu* view) {
    // The result tabs by number, and the plan view's tabs in turn (the plan view is shown first).
    const QString resultNames[] = {tr("&Plan"), tr("&Compare runs"), tr("R&un"), tr("&Whole runs")};
    for (int t = 0; t < 4; ++t) {
        QAction* a = view->addAction(resultNames[t]);
        a->setShortcut(QKeySequence(Qt::ALT | static_cast<Qt::Key>(Qt::Key_1 + t)));
        connect(a, &QAction::triggered, this, [this, t] {
            if (t < count()) setCurrentIndex(t);
        });
    }
    auto stepPlanTab = [this](int step) {
        setCurrentWidget(plan_);
        const int n = plan_->count();
        if (n > 0) plan_->setCurrentIndex((plan_->currentIndex() + step + n) % n);
    };
    QAction* next = view->addAction(tr("&Next plan view"));
    next->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageDown));
    connect(next, &QAction::triggered, this, [stepPlanTab] { stepPlanTab(1); });
    QAction* prev = view->addAction(tr("Pre&vious plan view"));
    prev->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageUp));
    connect(prev, &QAction::triggered, this, [stepPlanTab] { stepPlanTab(-1); });
    view->addSeparator();
    // Heatmap zoom: the maps of the shown plan view, their cells larger in a scroll area.
    auto zoom = [this](int steps) {
        setCurrentWidget(plan_);
        QWidget* tab = plan_->currentWidget();
        const QList<HeatmapView*> views = tab ? tab->findChildren<HeatmapView*>() : QList<HeatmapView*>();
        if (plan_->zoomHeatmaps(steps) == 0 || views.isEmpty()) {
            Q_EMIT status(tr("The shown plan view has no heatmap to zoom."), false);
            return;
        }
        Q_EMIT status(tr("Heatmap zoom %1% (Ctrl+= / Ctrl+- / Ctrl+0, or Ctrl + mouse wheel)")
                          .arg(static_cast<int>(std::lround(100 * views.front()->zoom()))),
                      false);
    };
    QAction* zoomIn = view->addAction(tr("Zoom &in heatmaps"));
    zoomIn->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Equal), QKeySequence(Qt::CTRL | Qt::Key_Plus)});
    connect(zoomIn, &QAction::triggered, this, [zoom] { zoom(1); });
    QAction* zoomOut = view->addAction(tr("Zoom &out heatmaps"));
    zoomOut->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Minus));
    connect(zoomOut, &QAction::triggered, this, [zoom] { zoom(-1); });
    QAction* zoomReset = view->addAction(tr("&Reset heatmap zoom"));
    zoomReset->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
    connect(zoomReset, &QAction::triggered, this, [zoom] { zoom(0); });
}

ResultsPane::~ResultsPane() {
    measuredLoad_->shutdown();
}

void ResultsPane::showPlan(std::shared_ptr<const PlanResult> plan, std::shared_ptr<const Trace> window, qint64 runId) {
    setShownStep(std::nullopt);
    shownRun_ = runId;
    const std::string trace = plan ? plan->trace_name : std::string(), win = plan ? plan->window_name : std::string();
    plan_->setPlan(std::move(plan), std::move(window));
    updateCompare();
    loadMeasured(trace, win, runId);
}

MeasuredImportDialog* ResultsPane::showMeasuredImport(const QString& library) {
    if (measuredImport_ && measuredImport_->request().library != library) closeMeasuredImport();
    return MeasuredImportDialog::showIn(measuredImport_, library, this, [this](const MeasuredImportResult& r) {
        Q_EMIT measuredImported(); // the window reads the library again, then the measured plans are read
        Q_EMIT status(r.summary, false);
        reloadMeasured();
    });
}

void ResultsPane::closeMeasuredImport() {
    if (!measuredImport_) return;
    measuredImport_->close();
    measuredImport_->deleteLater();
    measuredImport_ = nullptr;
}

void ResultsPane::reloadMeasured() {
    const auto plan = plan_->plan();
    if (plan) loadMeasured(plan->trace_name, plan->window_name, shownRun_);
    updateCompare();
}

void ResultsPane::loadMeasured(const std::string& trace, const std::string& window, qint64 runId) {
    const std::string file = library_->libraryPath().toStdString();
    if (runId <= 0 || file.empty() || !run_was_measured(library_->snapshot().measured, runId)) {
        measuredLoad_->invalidate();
        return;
    }
    measuredLoad_->start<std::vector<MeasuredChoice>>(
        [file, trace, window, runId](JobContext&) {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly); // this thread's own
            return run_measured_choices(*lib, trace, window, runId);
        },
        [this, runId](quint64, const std::shared_ptr<const std::vector<MeasuredChoice>>& choices) {
            if (shownRun_ == runId) plan_->setMeasured(*choices);
        },
        [this, runId](quint64, const JobFailure& failure) {
            if (shownRun_ == runId)
                Q_EMIT status(tr("Measured steps of run %1: %2").arg(runId).arg(failure.text), true);
        });
}

void ResultsPane::clearPlan() {
    setShownStep(std::nullopt);
    shownRun_ = 0;
    measuredLoad_->invalidate();
    plan_->setPlan(nullptr, nullptr);
    updateCompare();
}

void ResultsPane::showStepWithoutCounts(const ClusterStepRef& step, const ClusterStepPlan& opened) {
    shownRun_ = 0;
    const QString why = QString::fromStdString(opened.why_no_counts);
    const QString offer =
        step.stepPath.isEmpty()
            ? tr("the cluster run did not record the step's file: import it (File > Import) "
                 "and open the step again")
            : tr("Import step… (top right) imports %1; the step then opens with every view").arg(step.stepPath);
    plan_->setPlanWithoutCounts(
        opened.plan, tr("Step %1 of cluster run %2 was read from its plan file %3. This view needs the step's "
                        "routing counts, which the library does not hold (%4): %5.")
                         .arg(step.window)
                         .arg(step.clusterRun)
                         .arg(step.planFile, why, offer));
    setShownStep(step);
    updateCompare();
}

void ResultsPane::setShownStep(std::optional<ClusterStepRef> step) {
    shownStep_ = std::move(step);
    importStep_->setVisible(shownStep_.has_value() && !shownStep_->stepPath.isEmpty());
    if (shownStep_) importStep_->setToolTip(tr("Import %1 into the library").arg(shownStep_->stepPath));
}

void ResultsPane::updateCompare() {
    const auto shown = plan_->plan();
    if (!shown) {
        compare_->setRuns({}, {});
        compare_->setChoices({});
        return;
    }
    QList<std::shared_ptr<const PlanResult>> runs;
    QStringList names;
    std::map<QString, PerMethod<std::optional<double>>> measured; // each saved run's measured steps
    const auto& snapshotRuns = library_->snapshot().runs;
    for (const auto& [id, entry] : planning_->replay().entries()) {
        const auto& p = entry.plan;
        if (p->trace_name != shown->trace_name || p->window_name != shown->window_name) continue;
        if (compareLeftOut_.count(id) && id != shownRun_) continue;
        runs << p;
        // The label says what differs between runs: topology, nodes, seed, budget, how it ended (a saved
        // run's status says so too).
        CompareRunFacts facts = compareRunFacts(id, *p);
        for (const auto& run : snapshotRuns)
            if (run.id == id) {
                const CompareRunFacts saved = compareRunFacts(run);
                facts.name = saved.name;
                facts.cancelled = facts.cancelled || saved.cancelled;
                facts.timeLimit = !facts.cancelled && (facts.timeLimit || saved.timeLimit);
            }
        names << compareRunLabel(facts);
        if (id > 0) measured[names.back()] = run_measured_seconds(library_->snapshot().measured, id);
    }
    compare_->setRuns(runs, names);
    compare_->setMeasured(std::move(measured));
    compare_->setChoices(compareChoices(snapshotRuns, shown->trace_name, shown->window_name, [this](qint64 id) {
        return planning_->replay().contains(id) && (!compareLeftOut_.count(id) || id == shownRun_);
    }));
}

void ResultsPane::toggleCompared(qint64 id, bool on) {
    if (!on) {
        compareLeftOut_.insert(id);
        updateCompare();
        return;
    }
    compareLeftOut_.erase(id);
    if (planning_->replay().contains(id)) {
        updateCompare();
        return;
    }
    for (const auto& run : library_->snapshot().runs)
        if (run.id == id && run.status != "failed") {
            planning_->restoreRun(run, false);
            Q_EMIT status(tr("Loading saved run %1 for the comparison…").arg(id), false);
            return;
        }
}

int ResultsPane::compareSavedRuns() {
    const auto shown = plan_->plan();
    if (!shown) {
        Q_EMIT status(tr("Show a plan first: the comparison is per window."), true);
        return 0;
    }
    int queued = 0;
    compareLeftOut_.clear();
    for (const auto& run : library_->snapshot().runs) {
        if (run.trace != shown->trace_name || run.window != shown->window_name || run.status == "failed") continue;
        if (planning_->replay().contains(run.id)) continue;
        planning_->restoreRun(run, false);
        ++queued;
    }
    updateCompare();
    setCurrentWidget(compare_);
    Q_EMIT status(queued ? tr("Loading %1 saved run(s) of this window for the comparison…").arg(queued)
                         : tr("Every saved run of this window is in the comparison."),
                  false);
    return queued;
}

void ResultsPane::updateRunView() {
    const QString file = library_->libraryPath();
    wholeRuns_->setLibrary(file);
    if (file.isEmpty()) {
        run_->setSource({}, {});
        return;
    }
    // The tree's selection names the trace (the sample pane's trace may lag behind until its samples are loaded);
    // the revision is the trace's saved runs, so that a new run reads the series again.
    const QModelIndex cur = library_->currentIndex();
    if (cur.isValid() && cur.data(KindRole).toInt() == LibraryTreeModel::ClusterRunNode) {
        const qint64 id = cur.data(ClusterRunRole).toLongLong();
        QString revision;
        for (const auto& c : library_->snapshot().cluster_runs)
            if (c.id == id) revision = QString::fromStdString(c.fingerprint);
        run_->setClusterSource(file, id, revision);
        return;
    }
    const QString trace = cur.isValid() ? cur.data(TraceRole).toString() : QString();
    QString revision;
    for (const auto& r : library_->snapshot().runs)
        if (QString::fromStdString(r.trace) == trace)
            revision += QString::number(r.id) + QLatin1Char(':') + QString::fromStdString(r.status) + QLatin1Char(':') +
                        QString::fromStdString(r.name) + QLatin1Char('\n');
    run_->setSource(file, trace, revision);
}

void ResultsPane::onCellActivated(int row, int slot, const QList<int>& sampleIndices) {
    const auto plan = plan_->plan();
    if (!plan) return;
    std::vector<std::string> ids;
    for (int i : sampleIndices)
        if (i >= 0 && static_cast<std::size_t>(i) < plan->samples.size())
            ids.push_back(plan->samples[static_cast<std::size_t>(i)].id);
    const QString what = tr("Row %1, DP slot %2 of the %3 layout: %4 %5")
                             .arg(row)
                             .arg(slot)
                             .arg(QString::fromLatin1(method_label(plan_->gridPanel()->method())))
                             .arg(ids.size())
                             .arg(ids.size() == 1 ? tr("sample") : tr("samples"));
    Q_EMIT status(what, false);
    Q_EMIT samplesPicked(QString::fromStdString(plan->trace_name), ids, what, {}, {});
}

void ResultsPane::onRankActivated(int layer, int rank, const QList<int>& samples, const QString& description,
                                  const QList<qint64>& tokens) {
    const auto plan = plan_->plan();
    if (!plan) return;
    if (description.isEmpty()) {
        Q_EMIT status(tr("Listing the samples of an EP rank needs the window's routing counts (not loaded for this "
                         "plan, or the window is too large)."),
                      false);
        return;
    }
    if (samples.isEmpty()) {
        Q_EMIT status(tr("MoE layer index %1, EP rank %2: no sample routes tokens there.").arg(layer).arg(rank), false);
        return;
    }
    std::vector<std::string> ids;
    std::vector<qint64> perId;
    for (qsizetype k = 0; k < samples.size(); ++k) {
        const int i = samples[k];
        if (i < 0 || static_cast<std::size_t>(i) >= plan->samples.size()) continue;
        ids.push_back(plan->samples[static_cast<std::size_t>(i)].id);
        perId.push_back(tokens.value(k, -1));
    }
    Q_EMIT status(description, false);
    Q_EMIT samplesPicked(QString::fromStdString(plan->trace_name), ids, description, perId,
                         tr("Tokens on L%1/EP%2").arg(layerLabel(*plan, layer)).arg(rank));
}

} // namespace routepack::views
