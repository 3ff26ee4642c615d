#include "views/studio_window.h"

#include "views/dialogs/import_dialog.h"
#include "views/dialogs/setup_pane.h"
#include "views/dialogs/topology_editor.h"
#include "views/jobs/jobs_panel.h"
#include "views/library/library_pane.h"
#include "views/library/sample_pane.h"
#include "views/library/studio_data.h"
#include "views/plan/plan_views.h"
#include "views/planning_controller.h"
#include "views/results_pane.h"
#include "views/run/run_view.h"
#include "views/studio_status.h"
#include "views/widgets/gui_text.h"
#include "views/widgets/screen_fit.h"
#include "views/widgets/wheel_guard.h"

#include <QCloseEvent>
#include <QDockWidget>
#include <QFileInfo>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QToolButton>

namespace routepack::views {

namespace {

/// Busy timeout of the GUI thread's library connection (Library::set_busy_timeout_ms).
constexpr int kGuiBusyTimeoutMs = 200;

/// Width of the sample pane (table and length histogram) at the first start, in pixels.
constexpr int kSamplePaneWidth = 380;

} // namespace

StudioWindow::StudioWindow(const StudioOptions& options, QWidget* parent)
    : QMainWindow(parent), options_(options),
      library_(new LibraryPane(options.settingsOrganization, options.settingsApplication, this)),
      planning_(new PlanningController(library_, this)) {
    setWindowTitle(tr("RoutePack Studio"));
    setAcceptDrops(true); // a library file opens, trace files go to the import dialog
    installInputGuards(); // the wheel and the window's shortcuts in every field (views/widgets/wheel_guard.h)
    buildUi();
    buildActions();
    connectPanes();
    auto s = settings();
    fit_to_screen(this, QSize(1560, 960), s->value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(s->value(QStringLiteral("window/state")).toByteArray());
    findChild<QSplitter*>(QStringLiteral("mainSplit"))
        ->restoreState(s->value(QStringLiteral("window/split")).toByteArray());
    // The tab and the export folder of the last session (the selected run comes back with its
    // library, in openLibrary).
    const int tab = s->value(QStringLiteral("studio/tab"), 0).toInt();
    if (tab >= 0 && tab < results_->count()) results_->setCurrentIndex(tab);
    const int planTab = s->value(QStringLiteral("studio/planTab"), 0).toInt();
    if (planTab >= 0 && planTab < results_->planView()->count()) results_->planView()->setCurrentIndex(planTab);
    exports_->setFolder(s->value(QStringLiteral("studio/exportFolder")).toString());
    updateActions();
}

StudioWindow::~StudioWindow() {
    // The workers end before the widgets their results would go to (nothing is delivered after this).
    planning_->shutdown();
}

std::unique_ptr<QSettings> StudioWindow::settings() const {
    return std::make_unique<QSettings>(options_.settingsOrganization, options_.settingsApplication);
}

void StudioWindow::buildUi() {
    // Left: the library tree, and below it the topology / budget editor.
    auto* libraryDock = new QDockWidget(tr("Library"), this);
    libraryDock->setObjectName(QStringLiteral("libraryDock"));
    libraryDock->setWidget(library_);
    addDockWidget(Qt::LeftDockWidgetArea, libraryDock);
    setup_ = new SetupPane(this);
    const int leftDockWidth = std::max(300, setup_->minimumWidth());
    auto* setupDock = new QDockWidget(tr("Topology and budgets"), this);
    setupDock->setObjectName(QStringLiteral("setupDock"));
    setupDock->setWidget(setup_);
    addDockWidget(Qt::LeftDockWidgetArea, setupDock);
    splitDockWidget(libraryDock, setupDock, Qt::Vertical);
    addJobsDock(this, planning_->queue()); // View > Jobs

    // The centre splits the samples (left) from the plan views (right); the plan views take every
    // pixel the window gains (maximised, a wider screen), the samples keep theirs.
    samplePane_ = new SamplePane(this);
    samplePane_->setObjectName(QStringLiteral("samplePane"));
    results_ = new ResultsPane(library_, planning_, this);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->setObjectName(QStringLiteral("mainSplit"));
    split->setChildrenCollapsible(false);
    split->addWidget(samplePane_);
    split->addWidget(results_);
    split->setStretchFactor(0, 0);
    split->setStretchFactor(1, 1);
    split->setSizes({kSamplePaneWidth, 1000});
    setCentralWidget(split);
    samplePane_->setFocus(); // the sample filter holds the keyboard when the window opens
    resizeDocks({libraryDock}, {leftDockWidth}, Qt::Horizontal);
    resizeDocks({libraryDock, setupDock}, {260, 600}, Qt::Vertical);

    status_ = new StudioStatus(statusBar());
    actions_.window = new QAction(tr("Define &window…"), this);
    samplePane_->defineButton()->setDefaultAction(actions_.window);
    exports_ = std::make_unique<StudioExports>(this, results_->planView(), results_->compareView(),
                                               samplePane_->model(), samplePane_->proxy(), results_);
    exports_->setRunView(results_->runView());
    installTableMenus();
}

void StudioWindow::connectPanes() {
    connect(samplePane_, &SamplePane::loaded, this, [this](const QString& trace, bool hasSamples) {
        for (const auto& t : library_->snapshot().traces)
            if (hasSamples && QString::fromStdString(t.name) == trace) setup_->fitToTrace(t);
        Q_EMIT samplesLoaded(trace);
    });
    connect(setup_, &SetupPane::status, this, &StudioWindow::setStatus);
    // A valid edit is an action that succeeded: an error about the old fields goes.
    connect(setup_, &SetupPane::validEdit, this, &StudioWindow::clearStaleError);
    connect(library_, &LibraryPane::currentChanged, this, &StudioWindow::onTreeSelection);
    connect(library_, &LibraryPane::refreshed, results_, &ResultsPane::updateRunView);
    connect(library_, &LibraryPane::refreshed, this, [this] { // the hint follows traces imported meanwhile
        if (samplePane_->headingText().startsWith(tr("This library holds no trace yet")))
            samplePane_->setHeadingText(nothingSelectedText());
    });
    connect(library_, &LibraryPane::status, this, &StudioWindow::setStatus);
    connect(library_, &LibraryPane::busyChanged, this,
            [this](bool busy) { status_->setBusy(busy, planning_->queue()->isBusy()); });
    connect(library_, &LibraryPane::plansRemoved, planning_, &PlanningController::forgetPlans);
    connect(library_, &LibraryPane::edited, this, &StudioWindow::libraryEdited);
    connect(library_, &LibraryPane::runRenamed, results_, &ResultsPane::updateCompare);
    connect(library_, &LibraryPane::openRequested, this, [this](const QString& file) { openLibrary(file); });
    connect(library_, &LibraryPane::demoReady, this, [this](const QString& file) {
        if (!openLibrary(file)) return;
        if (!library_->snapshot().runs.empty()) selectRun(library_->snapshot().runs.back().id);
        Q_EMIT demoReady(file);
    });
    library_->setEditGuard([this](const QString& what) { return planning_->mayEditLibrary(what); });
    connect(planning_, &PlanningController::status, this, &StudioWindow::setStatus);
    connect(planning_, &PlanningController::jobStarted, this, [this] {
        status_->jobStarted();
        results_->planView()->clearConvergence();
        updateActions();
    });
    connect(planning_, &PlanningController::progressChanged, status_, &StudioStatus::setProgress);
    connect(planning_, &PlanningController::idle, this, [this] {
        status_->jobsIdle();
        updateActions();
    });
    connect(planning_, &PlanningController::planReady, this, &StudioWindow::showPlan);
    connect(planning_, &PlanningController::savedPlanShown, this, [this](qint64 id, const QString& note) {
        setStatus(id == keptEditsRun_ ? note + QStringLiteral(". ") + SetupPane::keptEditsNote(id) : note);
    });
    connect(planning_, &PlanningController::runFinished, this,
            [this] { results_->setCurrentWidget(results_->runView()); });
    connect(planning_, &PlanningController::stepOpened, this, &StudioWindow::showClusterStep);
    connect(results_, &ResultsPane::status, this, &StudioWindow::setStatus);
    connect(results_, &ResultsPane::measuredImported, this, &StudioWindow::refreshLibrary);
    connect(results_, &ResultsPane::samplesPicked, this,
            [this](const QString& trace, const std::vector<std::string>& ids, const QString& label,
                   const std::vector<qint64>& tokens, const QString& tokensHeader) {
                if (trace == samplePane_->trace()) samplePane_->filterSamples(ids, label, tokens, tokensHeader);
            });
    connect(results_, &ResultsPane::importStepRequested, this, [this] { importShownStep(); });
    connect(status_, &StudioStatus::cancelRequested, this, &StudioWindow::cancelJob);
}

QString StudioWindow::libraryPath() const {
    return library_->libraryPath();
}

QString StudioWindow::lastLibrary() const {
    return settings()->value(QStringLiteral("library/last")).toString();
}

std::unique_ptr<storage::Library>
openStudioLibrary(const std::function<std::unique_ptr<storage::Library>(storage::OpenMode)>& open, bool create) {
    try {
        return open(create ? storage::OpenMode::Create : storage::OpenMode::ReadWrite);
    } catch (const storage::LibraryReadOnly&) {
        if (create) throw;
    }
    return open(storage::OpenMode::ReadOnly); // a library we may only read still opens, read-only
}

bool StudioWindow::openLibrary(const QString& file, bool create, QString* error) {
    std::unique_ptr<storage::Library> lib;
    try {
        lib = openStudioLibrary(
            [path = file.toStdString()](storage::OpenMode mode) { return storage::Library::open(path, mode); }, create);
    } catch (const std::exception& e) {
        const QString why = guiErrorText(e);
        if (error) *error = why;
        setStatus(tr("Cannot open library: %1").arg(why), true);
        return false;
    }
    // The GUI thread's connection waits only briefly for another writer (an import, another
    // studio): a busy library is reported at once ("... in use by another process ...; try
    // again") instead of freezing the window for the default busy timeout.
    lib->set_busy_timeout_ms(kGuiBusyTimeoutMs);
    const bool sameLibrary = library_->isOpen(file);
    planning_->libraryOpened(sameLibrary);
    samplePane_->reset(); // a sample load still running for what was shown is dropped
    lib_ = std::move(lib);
    library_->setLibrary(lib_.get());
    results_->clearPlan();
    if (importDialog_ && !sameLibrary) { // an import into this same library goes on
        importDialog_->close();
        importDialog_->deleteLater();
        importDialog_ = nullptr;
    }
    if (!sameLibrary) results_->closeMeasuredImport();
    const QString absolute = QFileInfo(file).absoluteFilePath();
    settings()->setValue(QStringLiteral("library/last"), absolute);
    library_->rememberRecent(absolute);
    status_->setLibrary(QFileInfo(file).fileName(), absolute, lib_->read_only());
    setWindowTitle(tr("%1 — RoutePack Studio").arg(QFileInfo(file).fileName()));
    refreshLibrary();
    setup_->setLibrary(lib_.get());
    samplePane_->setHeadingText(nothingSelectedText());
    const auto& snap = library_->snapshot();
    // The run selected when the studio last closed on this library, else the first window.
    qint64 lastRun = 0;
    {
        auto s = settings();
        if (s->value(QStringLiteral("studio/runLibrary")).toString() == absolute)
            lastRun = s->value(QStringLiteral("studio/run"), 0).toLongLong();
    }
    if (lastRun > 0 && library_->model()->runIndex(lastRun).isValid()) {
        selectRun(lastRun);
    } else if (!snap.windows.empty()) {
        selectWindow(QString::fromStdString(snap.windows.front().trace),
                     QString::fromStdString(snap.windows.front().name));
    } else if (!snap.traces.empty()) {
        selectTrace(QString::fromStdString(snap.traces.front().name));
    }
    setStatus(tr("Opened %1: %2 trace(s), %3 window(s), %4 run(s).")
                  .arg(QFileInfo(file).fileName())
                  .arg(snap.traces.size())
                  .arg(snap.windows.size())
                  .arg(snap.runs.size()));
    updateActions();
    Q_EMIT libraryOpened(file);
    return true;
}

void StudioWindow::openDemoLibrary() {
    library_->openDemo();
}

void StudioWindow::refreshLibrary() {
    library_->refresh();
}

bool StudioWindow::selectTrace(const QString& trace) {
    return library_->selectTrace(trace);
}

bool StudioWindow::selectWindow(const QString& trace, const QString& window) {
    return library_->selectWindow(trace, window);
}

QString StudioWindow::nothingSelectedText() const {
    if (!library_->snapshot().traces.empty()) return tr("Select a trace or a window in the library.");
    return tr("This library holds no trace yet: import one with File > Import trace… (Ctrl+I), or drop trace "
              "files or folders on the window.");
}

bool StudioWindow::selectRun(qint64 runId) {
    return library_->selectRun(runId);
}

void StudioWindow::libraryEdited(const QString& trace, const QString& window) {
    clearPlan();
    samplePane_->reset();
    if (library_->selectAfterEdit(trace, window)) {
        onTreeSelection();
        return;
    }
    samplePane_->setHeadingText(nothingSelectedText());
    results_->updateRunView();
    updateActions();
}

void StudioWindow::onTreeSelection() {
    const QModelIndex cur = library_->currentIndex();
    if (!cur.isValid() || !lib_) return;
    // The status line describes the new selection: what it said of the previous one goes (a
    // running job's progress comes back with its next event).
    setStatus(QString());
    const int kind = cur.data(KindRole).toInt();
    if (kind == LibraryTreeModel::ClusterRunNode) {
        // A cluster run is a whole run: the Run view shows it; no window or plan goes with it.
        clearPlan();
        results_->updateRunView();
        results_->setCurrentWidget(results_->runView());
        setStatus(tr("Cluster run %1: %2")
                      .arg(cur.data(ClusterRunRole).toLongLong())
                      .arg(cur.sibling(cur.row(), 1).data().toString()));
        updateActions();
        return;
    }
    const QString trace = cur.data(TraceRole).toString();
    const QString window = kind == LibraryTreeModel::TraceNode ? QString() : cur.data(WindowRole).toString();
    if (!samplePane_->shows(trace, window)) loadSamples(trace, window);
    results_->updateRunView();
    // The plan views show the selection or nothing: a plan of another window (or the whole trace)
    // is cleared at once instead of lingering under the new heading.
    if (const auto shown = results_->planView()->plan();
        shown && (kind == LibraryTreeModel::TraceNode || shown->trace_name != trace.toStdString() ||
                  shown->window_name != window.toStdString()))
        clearPlan();
    if (kind == LibraryTreeModel::TraceNode) showPlacementIfLoadOnly(trace);
    if (kind != LibraryTreeModel::RunNode) {
        updateActions();
        return;
    }
    const storage::RunEntry* run = library_->model()->runAt(cur.sibling(cur.row(), 0));
    if (!run) return;
    if (results_->shownRun() != run->id) clearPlan(); // until this run's plan arrives
    keptEditsRun_ = setup_->loadRun(*run, false) ? 0 : run->id;
    if (const RunReplay::Entry* cached = planning_->replay().find(run->id)) {
        showPlan(cached->plan, cached->window, run->id);
        setStatus(keptEditsRun_ ? SetupPane::keptEditsNote(run->id)
                                : PlanningController::savedPlanNote(run->id, *cached->plan));
        return;
    }
    if (keptEditsRun_) setStatus(SetupPane::keptEditsNote(run->id));
    if (run->status == "failed") {
        setStatus(tr("Run %1 failed: %2").arg(run->id).arg(QString::fromStdString(run->message)), true);
        return;
    }
    planning_->restoreRun(*run, true);
}

void StudioWindow::loadSamples(const QString& trace, const QString& window) {
    std::optional<ModelDescription> loadOnly;
    for (const auto& t : library_->snapshot().traces)
        if (t.load_only && QString::fromStdString(t.name) == trace) loadOnly = t.model;
    samplePane_->load(libraryPath(), trace, window, loadOnly);
}

void StudioWindow::showPlan(std::shared_ptr<const PlanResult> plan, std::shared_ptr<const Trace> window, qint64 runId) {
    samplePane_->clearFilter(); // it named a cell or a rank of the plan shown before
    results_->showPlan(std::move(plan), std::move(window), runId);
    updateActions();
    Q_EMIT planShown(runId);
}

void StudioWindow::showPlacementIfLoadOnly(const QString& trace) {
    const auto& traces = library_->snapshot().traces;
    const auto it = std::find_if(traces.begin(), traces.end(),
                                 [&](const storage::TraceEntry& t) { return t.name == trace.toStdString(); });
    if (it == traces.end() || !it->load_only) return;
    // An aggregate trace holds per-layer expert totals only: what it is for is the placement, identity
    // against LPT on the editor's topology (milliseconds for L x E totals, so on this thread).
    QString why;
    const std::optional<Topology> topo = setup_->editor()->topology(&why);
    const ModelDescription& m = it->model;
    const int E = m.experts;
    if (!topo || topo->ep_ranks < 1 || E % topo->ep_ranks != 0) {
        clearPlan();
        setStatus(tr("Trace %1 is load-only: its placement needs a topology whose EP ranks divide its %2 experts%3.")
                      .arg(trace)
                      .arg(E)
                      .arg(why.isEmpty() ? QString() : QStringLiteral(" (") + why + QLatin1Char(')')),
                  true);
        return;
    }
    try {
        const std::vector<std::uint64_t> loads = lib_->layer_totals(it->name);
        const auto p = load_only_placement(m, *topo, loads, it->name);
        clearPlan();
        results_->planView()->setPlacement(p, std::make_shared<const std::vector<std::uint64_t>>(loads));
        setStatus(tr("Trace %1 is load-only: placement on %2 EP ranks, CV_global %3 (identity) -> %4 (LPT).")
                      .arg(trace)
                      .arg(topo->ep_ranks)
                      .arg(p->placement.cv_identity, 0, 'f', 4)
                      .arg(p->placement.cv_lpt, 0, 'f', 4));
    } catch (const std::exception& e) {
        setStatus(tr("Trace %1: %2").arg(trace, guiErrorText(e)), true);
    }
}

void StudioWindow::clearPlan() {
    samplePane_->clearFilter(); // it named samples of the plan that goes
    results_->clearPlan();
    updateActions();
}

void StudioWindow::closeEvent(QCloseEvent* event) {
    auto s = settings();
    s->setValue(QStringLiteral("window/geometry"), saveGeometry());
    s->setValue(QStringLiteral("window/state"), saveState());
    s->setValue(QStringLiteral("window/split"), findChild<QSplitter*>(QStringLiteral("mainSplit"))->saveState());
    s->setValue(QStringLiteral("studio/tab"), results_->currentIndex());
    s->setValue(QStringLiteral("studio/planTab"), results_->planView()->currentIndex());
    s->setValue(QStringLiteral("studio/exportFolder"), exports_->folder());
    // The selected run (0 when a window or trace is selected), with the library it belongs to.
    s->setValue(QStringLiteral("studio/run"), library_->selectedRunId());
    s->setValue(QStringLiteral("studio/runLibrary"), lib_ ? QFileInfo(libraryPath()).absoluteFilePath() : QString());
    // Stop the running job: the planner returns its best valid plan, which the worker still saves.
    planning_->queue()->cancelAll();
    QMainWindow::closeEvent(event);
}

} // namespace routepack::views
