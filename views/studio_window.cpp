#include "views/studio_window.h"

#include "core/plan/score/placement.h"

#include "core/plan/plan_file.h"
#include "storage/demo.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/rewrite_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/dialogs/window_dialog.h"
#include "views/library/library_tree_model.h"
#include "views/library/sample_pane.h"
#include "views/library/studio_data.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_views.h"
#include "views/run/run_view.h"
#include "views/widgets/gui_text.h"
#include "views/widgets/wheel_guard.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTime>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <cmath>
#include <functional>
#include <set>

namespace routepack::views {

namespace {

/// Busy timeout of the GUI thread's library connection (Library::set_busy_timeout_ms).
constexpr int kGuiBusyTimeoutMs = 200;

/// Width of the sample pane (table and length histogram) at the first start, in pixels.
constexpr int kSamplePaneWidth = 380;

} // namespace

StudioWindow::StudioWindow(const StudioOptions& options, QWidget* parent)
    : QMainWindow(parent), options_(options), jobs_(new PlanJobQueue(this)),
      demoBuild_(new JobTracker(JobTracker::Policy::EveryResult, 1, false, this)),
      deletions_(new JobTracker(JobTracker::Policy::EveryResult, 1, false, this)),
      stepOpen_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)) {
    setWindowTitle(tr("RoutePack Studio"));
    setAcceptDrops(true); // a library file opens, trace files go to the import dialog
    installWheelGuard();  // value fields take the wheel only with focus, in every form of the studio
    buildUi();
    buildActions();
    resize(1560, 960);
    {
        auto s = settings();
        restoreGeometry(s->value(QStringLiteral("window/geometry")).toByteArray());
        restoreState(s->value(QStringLiteral("window/state")).toByteArray());
        mainSplit_->restoreState(s->value(QStringLiteral("window/split")).toByteArray());
        // The tab and the export folder of the last session (the selected run comes back with its
        // library, in openLibrary).
        const int tab = s->value(QStringLiteral("studio/tab"), 0).toInt();
        if (tab >= 0 && tab < resultTabs_->count()) resultTabs_->setCurrentIndex(tab);
        const int planTab = s->value(QStringLiteral("studio/planTab"), 0).toInt();
        if (planTab >= 0 && planTab < planView_->count()) planView_->setCurrentIndex(planTab);
        exports_->setFolder(s->value(QStringLiteral("studio/exportFolder")).toString());
    }

    progressTick_ = new QTimer(this);
    progressTick_->setInterval(250);
    connectPlanJobs();
    connectRunJobs();
    updateActions();
}

StudioWindow::~StudioWindow() {
    // The workers end before the widgets their results would go to (nothing is delivered after this).
    demoBuild_->shutdown();
    stepOpen_->shutdown();
    deletions_->shutdown();
}

std::unique_ptr<QSettings> StudioWindow::settings() const {
    return std::make_unique<QSettings>(options_.settingsOrganization, options_.settingsApplication);
}

void StudioWindow::buildUi() {
    // Centre: the sample table of the selected trace or window, and its length histogram.
    samplePane_ = new SamplePane(this);
    connect(samplePane_, &SamplePane::loaded, this, [this](const QString& trace, bool hasSamples) {
        if (hasSamples) fitPresetToTrace(trace);
        Q_EMIT samplesLoaded(trace);
    });

    // Left: the library tree, and below it the topology / budget editor.
    tree_ = new LibraryTreeModel(this);
    treeView_ = new QTreeView(this);
    treeView_->setModel(tree_);
    treeView_->setUniformRowHeights(true);
    // Several windows (or a trace) at once: Plan > Plan run plans them as the steps of one run.
    treeView_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    treeView_->header()->setStretchLastSection(true);
    treeView_->setColumnWidth(LibraryTreeModel::Name, 150);
    auto* libraryDock = new QDockWidget(tr("Library"), this);
    libraryDock->setObjectName(QStringLiteral("libraryDock"));
    libraryDock->setWidget(buildLibraryPane());
    addDockWidget(Qt::LeftDockWidgetArea, libraryDock);
    connect(treeView_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this] { onTreeSelection(); });

    editor_ = new TopologyEditor(this);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(editor_);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // Without a horizontal scroll bar the dock must not get narrower than the editor's fields need
    // (else spin boxes, the Name field and the stage table's columns are cut at the right edge).
    scroll->setMinimumWidth(editor_->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() +
                            2 * scroll->frameWidth());
    const int leftDockWidth = std::max(300, scroll->minimumWidth());
    auto* setupDock = new QDockWidget(tr("Topology and budgets"), this);
    setupDock->setObjectName(QStringLiteral("setupDock"));
    setupDock->setWidget(scroll);
    addDockWidget(Qt::LeftDockWidgetArea, setupDock);
    splitDockWidget(libraryDock, setupDock, Qt::Vertical);
    connect(editor_, &TopologyEditor::saveRequested, this, &StudioWindow::saveTopology);
    // A valid edit is an action that succeeded: an error about the old fields goes.
    connect(editor_, &TopologyEditor::changed, this, [this] {
        QString why;
        if (editor_->topology(&why) && editor_->budgets(&why)) clearStaleError();
    });

    // Right: the plan views and the run comparison.
    planView_ = new PlanView(this);
    compareView_ = new CompareView(this);
    // Queued: the slot rebuilds the menu whose action sent the signal.
    connect(compareView_, &CompareView::runToggled, this, &StudioWindow::toggleCompared, Qt::QueuedConnection);
    resultTabs_ = new QTabWidget(this);
    resultTabs_->setDocumentMode(true);
    resultTabs_->addTab(planView_, tr("Plan"));
    // Shown while a cluster run's step is shown without its counts (openClusterStep).
    importStepButton_ = new QToolButton(planView_);
    importStepButton_->setObjectName(QStringLiteral("importStep"));
    importStepButton_->setText(tr("Import step…"));
    planView_->setCornerWidget(importStepButton_, Qt::TopRightCorner);
    importStepButton_->setVisible(false);
    connect(importStepButton_, &QToolButton::clicked, this, [this] { importShownStep(); });
    resultTabs_->addTab(compareView_, tr("Compare runs"));
    runView_ = new RunView(this);
    resultTabs_->addTab(runView_, tr("Run"));
    // A click on a step of the run shows that step's saved run in the plan views.
    connect(runView_, &RunView::stepActivated, this, [this](qint64 runId, const QString& trace, const QString& window) {
        if (!selectRun(runId)) {
            setStatus(tr("Run %1 of %2/%3 is no longer in the library.").arg(runId).arg(trace, window), true);
            return;
        }
        resultTabs_->setCurrentWidget(planView_);
    });
    // A cluster run's step: its plan stays in OUT and the library has no counts of it.
    connect(runView_, &RunView::clusterStepActivated, this,
            [this](const QString& planFile, const QString& stepPath, const QString& window) {
                openClusterStep(planFile, stepPath, window);
            });
    // The centre splits the samples (left) from the plan views (right); the plan views take every
    // pixel the window gains (maximised, a wider screen), the samples keep theirs.
    mainSplit_ = new QSplitter(Qt::Horizontal, this);
    mainSplit_->setObjectName(QStringLiteral("mainSplit"));
    mainSplit_->setChildrenCollapsible(false);
    mainSplit_->addWidget(samplePane_);
    mainSplit_->addWidget(resultTabs_);
    mainSplit_->setStretchFactor(0, 0);
    mainSplit_->setStretchFactor(1, 1);
    mainSplit_->setSizes({kSamplePaneWidth, 1000});
    setCentralWidget(mainSplit_);
    resizeDocks({libraryDock}, {leftDockWidth}, Qt::Horizontal);
    resizeDocks({libraryDock, setupDock}, {260, 600}, Qt::Vertical);
    connect(planView_, &PlanView::cellActivated, this, &StudioWindow::onCellActivated);
    connect(planView_, &PlanView::rankActivated, this,
            [this](int layer, int rank, bool, const QList<int>& samples, const QString& description,
                   const QList<qint64>& tokens) { onRankActivated(layer, rank, samples, description, tokens); });

    // Status bar: stage text, progress, Cancel, the library file.
    // A long message never widens the window past the screen: the line takes the width there is,
    // elided at its end, and its tooltip and View > Status messages hold the whole message.
    status_ = new ElidedLabel(this);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    jobProgress_ = new QProgressBar(this);
    jobProgress_->setMaximumWidth(220);
    jobProgress_->setTextVisible(false);
    jobProgress_->hide();
    cancelButton_ = new QToolButton(this);
    cancelButton_->setText(tr("Cancel"));
    cancelButton_->setToolTip(tr("Cancel the running job (Esc); the planner keeps its best valid plan so far"));
    cancelButton_->setEnabled(false);
    libraryLabel_ = new QLabel(this);
    statusBar()->addWidget(status_, 1);
    statusBar()->addPermanentWidget(jobProgress_);
    statusBar()->addPermanentWidget(cancelButton_);
    statusBar()->addPermanentWidget(libraryLabel_);
    connect(cancelButton_, &QToolButton::clicked, this, &StudioWindow::cancelJob);

    windowAction_ = new QAction(tr("Define &window…"), this);
    samplePane_->defineButton()->setDefaultAction(windowAction_);
    exports_ = std::make_unique<StudioExports>(this, planView_, compareView_, samplePane_->model(),
                                               samplePane_->proxy(), resultTabs_);
    exports_->setRunView(runView_);
    installTableMenus();
}

bool StudioWindow::isOpenLibrary(const QString& file) const {
    if (!lib_ || file.isEmpty()) return false;
    const QFileInfo a(file), b(libraryPath());
    const QString ca = a.canonicalFilePath(), cb = b.canonicalFilePath();
    if (!ca.isEmpty() && !cb.isEmpty()) return ca == cb;
    return a.absoluteFilePath() == b.absoluteFilePath();
}

QString StudioWindow::libraryPath() const {
    return lib_ ? QString::fromStdString(lib_->path().string()) : QString();
}

QString StudioWindow::lastLibrary() const {
    return settings()->value(QStringLiteral("library/last")).toString();
}

QString StudioWindow::sampleHeaderText() const {
    return samplePane_->headingText();
}

QString StudioWindow::statusText() const {
    return status_->fullText();
}

QLabel* StudioWindow::statusLine() const {
    return status_;
}

void StudioWindow::setStatus(const QString& text, bool error) {
    statusError_ = error && !text.isEmpty();
    status_->setFullText(text);
    if (!text.isEmpty() && (statusLog_.isEmpty() || !statusLog_.back().endsWith(text))) {
        statusLog_ << QStringLiteral("%1  %2%3")
                          .arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")),
                               error ? tr("error: ") : QString(), text);
        if (statusLog_.size() > kStatusLogSize) statusLog_.removeFirst();
        if (statusLogText_) statusLogText_->setPlainText(statusLog_.join(QLatin1Char('\n')));
    }
    status_->setStyleSheet(error ? QStringLiteral("color: white; background-color: #b3261e; padding: 1px 4px;")
                                 : QString());
}

void StudioWindow::clearStaleError() {
    if (statusError_) setStatus(QString());
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
    const bool sameLibrary = isOpenLibrary(file);
    if (!sameLibrary) {
        jobs_->invalidate(); // results of jobs for the previous library are no longer shown
        replay_.clear();     // run ids of another library
    }
    samplePane_->reset(); // a sample load still running for what was shown is dropped
    lib_ = std::move(lib);
    shownRun_ = 0;
    planView_->setPlan(nullptr);
    compareView_->setRuns({}, {});
    if (importDialog_ && !sameLibrary) { // an import into this same library goes on
        importDialog_->close();
        importDialog_->deleteLater();
        importDialog_ = nullptr;
    }
    settings()->setValue(QStringLiteral("library/last"), QFileInfo(file).absoluteFilePath());
    rememberRecent(QFileInfo(file).absoluteFilePath());
    libraryLabel_->setText(QFileInfo(file).fileName() + (lib_->read_only() ? tr(" (read-only)") : QString()));
    libraryLabel_->setToolTip(QFileInfo(file).absoluteFilePath());
    setWindowTitle(tr("%1 — RoutePack Studio").arg(QFileInfo(file).fileName()));
    refreshLibrary();
    try {
        editor_->setLibraryTopologies(lib_->topologies());
    } catch (const std::exception& e) {
        setStatus(guiErrorText(e), true);
    }
    samplePane_->setHeadingText(tr("Select a trace or a window in the library."));
    const auto& snap = tree_->snapshot();
    // The run selected when the studio last closed on this library, else the first window.
    qint64 lastRun = 0;
    {
        auto s = settings();
        if (s->value(QStringLiteral("studio/runLibrary")).toString() == QFileInfo(file).absoluteFilePath())
            lastRun = s->value(QStringLiteral("studio/run"), 0).toLongLong();
    }
    if (lastRun > 0 && tree_->runIndex(lastRun).isValid()) {
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
    if (demoBuild_->runningCount() > 0) return;
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/demo");
    const QString file = dir + QLatin1Char('/') + QString::fromLatin1(storage::kDemoLibraryFile);
    auto finish = [this, file] {
        const auto& snap = tree_->snapshot();
        if (!snap.runs.empty()) selectRun(snap.runs.back().id);
        Q_EMIT demoReady(file);
    };
    if (QFileInfo::exists(file)) {
        try {
            if (!storage::Library::open(file.toStdString(), storage::OpenMode::ReadOnly)
                     ->runs(storage::kDemoTrace, storage::kDemoWindow)
                     .empty()) {
                if (openLibrary(file)) {
                    finish();
                    return;
                }
            }
        } catch (const std::exception&) {
            // Incomplete or damaged: build it again below.
        }
    }
    setStatus(tr("Building the demo library in %1 (synthetic GRPO window: synth, import, window, plan)…").arg(dir));
    jobProgress_->setRange(0, 0);
    jobProgress_->show();
    auto ended = [this] {
        jobProgress_->setRange(0, 1000);
        if (!jobs_->isBusy()) jobProgress_->hide();
    };
    demoBuild_->start<bool>(
        [dir](JobContext&) {
            storage::build_demo(dir.toStdString());
            return true;
        },
        [this, file, finish, ended](quint64, const std::shared_ptr<const bool>&) {
            ended();
            if (openLibrary(file)) finish();
        },
        [this, ended](quint64, const JobFailure& failure) {
            ended();
            setStatus(tr("Could not build the demo library: %1").arg(failure.text), true);
        });
}

void StudioWindow::refreshLibrary() {
    if (!lib_) return;
    // Keep the selection across the reset.
    const QModelIndex cur = treeView_->currentIndex();
    const int kind = cur.isValid() ? cur.data(KindRole).toInt() : -1;
    const QString trace = cur.data(TraceRole).toString();
    const QString window = cur.data(WindowRole).toString();
    const qint64 run = cur.data(RunIdRole).toLongLong();
    const qint64 cluster = cur.data(ClusterRunRole).toLongLong();
    try {
        tree_->setSnapshot(readLibrarySnapshot(*lib_));
    } catch (const std::exception& e) {
        setStatus(tr("Cannot read the library: %1").arg(guiErrorText(e)), true);
        return;
    }
    treeView_->expandAll();
    for (int c = 0; c < LibraryTreeModel::ColumnCount; ++c)
        treeView_->resizeColumnToContents(c);
    applyLibraryFilter();
    QModelIndex again;
    if (kind == LibraryTreeModel::RunNode)
        again = tree_->runIndex(run);
    else if (kind == LibraryTreeModel::WindowNode)
        again = tree_->windowIndex(trace, window);
    else if (kind == LibraryTreeModel::TraceNode)
        again = tree_->traceIndex(trace);
    else if (kind == LibraryTreeModel::ClusterRunNode)
        again = tree_->clusterRunIndex(cluster);
    if (again.isValid()) {
        QSignalBlocker block(treeView_->selectionModel());
        treeView_->setCurrentIndex(again);
    }
    updateRunView();
}

bool StudioWindow::selectTrace(const QString& trace) {
    const QModelIndex i = tree_->traceIndex(trace);
    if (!i.isValid()) return false;
    treeView_->setCurrentIndex(i);
    return true;
}

bool StudioWindow::selectWindow(const QString& trace, const QString& window) {
    const QModelIndex i = tree_->windowIndex(trace, window);
    if (!i.isValid()) return false;
    treeView_->setCurrentIndex(i);
    return true;
}

bool StudioWindow::selectRun(qint64 runId) {
    const QModelIndex i = tree_->runIndex(runId);
    if (!i.isValid()) return false;
    treeView_->setCurrentIndex(i);
    return true;
}

void StudioWindow::onTreeSelection() {
    const QModelIndex cur = treeView_->currentIndex();
    if (!cur.isValid() || !lib_) return;
    // The status line describes the new selection: what it said of the previous one goes (a
    // running job's progress comes back with its next event).
    setStatus(QString());
    const int kind = cur.data(KindRole).toInt();
    if (kind == LibraryTreeModel::ClusterRunNode) {
        // A cluster run is a whole run: the Run view shows it; no window or plan goes with it.
        clearPlan();
        updateRunView();
        resultTabs_->setCurrentWidget(runView_);
        setStatus(tr("Cluster run %1: %2")
                      .arg(cur.data(ClusterRunRole).toLongLong())
                      .arg(cur.sibling(cur.row(), 1).data().toString()));
        updateActions();
        return;
    }
    const QString trace = cur.data(TraceRole).toString();
    const QString window = kind == LibraryTreeModel::TraceNode ? QString() : cur.data(WindowRole).toString();
    if (trace != samplePane_->trace() || window != samplePane_->window()) loadSamples(trace, window);
    updateRunView();
    // The plan views show the selection or nothing: a plan of another window (or the whole trace)
    // is cleared at once instead of lingering under the new heading.
    if (const auto shown = planView_->plan();
        shown && (kind == LibraryTreeModel::TraceNode || shown->trace_name != trace.toStdString() ||
                  shown->window_name != window.toStdString()))
        clearPlan();
    if (kind == LibraryTreeModel::TraceNode) showPlacementIfLoadOnly(trace);
    if (kind != LibraryTreeModel::RunNode) {
        updateActions();
        return;
    }
    const storage::RunEntry* run = tree_->runAt(cur.sibling(cur.row(), 0));
    if (!run) return;
    if (shownRun_ != run->id) clearPlan(); // until this run's plan arrives
    keptEditsRun_ = loadRunSetup(*run, false) ? 0 : run->id;
    if (const RunReplay::Entry* cached = replay_.find(run->id)) {
        showPlan(cached->plan, cached->window, run->id);
        setStatus(keptEditsRun_ ? keptEditsNote(run->id) : savedPlanNote(run->id, *cached->plan));
        return;
    }
    if (keptEditsRun_) setStatus(keptEditsNote(run->id));
    if (run->status == "failed") {
        setStatus(tr("Run %1 failed: %2").arg(run->id).arg(QString::fromStdString(run->message)), true);
        return;
    }
    restoreRun(*run, true);
}

bool StudioWindow::loadRunSetup(const storage::RunEntry& run, bool force) {
    // The editor shows what the run was planned with, so that planning again starts from it; edits
    // of the form that no run or saved topology holds are kept unless `force` (they are one Ctrl+Z
    // away after a forced load).
    const QString name = QString::fromStdString(run.topology);
    if (editor_->showsSetup(name, run.topology_value, run.budgets)) return true;
    if (!force && editor_->hasUnsavedEdits()) return false;
    try {
        editor_->setLibraryTopologies(lib_->topologies()); // the run may have saved a new one
    } catch (const std::exception&) {
        // The presets stay as they were; the fields below are still the run's.
    }
    editor_->loadSetup(name, run.topology_value, run.budgets, tr("run %1's setup").arg(run.id));
    return true;
}

QString StudioWindow::keptEditsNote(qint64 runId) const {
    return tr("The Topology and budgets form keeps your unsaved edits, not run %1's setup (Edit > Load the shown "
              "run's setup replaces them; Ctrl+Z in the form undoes that).")
        .arg(runId);
}

void StudioWindow::loadSamples(const QString& trace, const QString& window) {
    std::optional<ModelDescription> loadOnly;
    for (const auto& t : tree_->snapshot().traces)
        if (t.load_only && QString::fromStdString(t.name) == trace) loadOnly = t.model;
    samplePane_->load(libraryPath(), trace, window, loadOnly);
}

void StudioWindow::fitPresetToTrace(const QString& trace) {
    // The topology is the engineer's cluster and stays as set while it can plan the trace. One whose
    // experts per layer differ from the trace's model cannot: then a preset of the model is offered
    // (the same EP ranks and DP slots when one exists) and the status line says what was replaced.
    for (const auto& t : tree_->snapshot().traces) {
        if (QString::fromStdString(t.name) != trace) continue;
        const auto topo = editor_->topology();
        if (!topo) return;
        const std::optional<std::string> pick = preset_for_model(t.model, *topo);
        if (!pick) return;
        const QString before = editor_->topologyName();
        if (pick->empty() || !editor_->selectPreset(QString::fromStdString(*pick))) {
            setStatus(tr("Topology %1 has %2 experts per layer, trace %3 (%4) has %5: set \"Experts per layer E\" "
                         "(or \"from the trace\") before planning it.")
                          .arg(before)
                          .arg(topo->experts_per_layer)
                          .arg(trace, QString::fromStdString(t.model.name))
                          .arg(t.model.experts),
                      true);
            return;
        }
        setStatus(tr("Preset switched to %1 for trace %2: topology %3 has %4 experts per layer, the trace's model %5 "
                     "has %6 (pick %3 again in Preset to go back).")
                      .arg(QString::fromStdString(*pick), trace, before)
                      .arg(topo->experts_per_layer)
                      .arg(QString::fromStdString(t.model.name))
                      .arg(t.model.experts));
        return;
    }
}

void StudioWindow::showPlan(std::shared_ptr<const PlanResult> plan, std::shared_ptr<const Trace> window, qint64 runId) {
    clearSampleFilter(); // it named a cell or a rank of the plan shown before
    setShownStep(std::nullopt);
    shownRun_ = runId;
    planView_->setPlan(std::move(plan), std::move(window));
    updateCompare();
    updateActions();
    Q_EMIT planShown(runId);
}

void StudioWindow::showPlacementIfLoadOnly(const QString& trace) {
    const auto& traces = tree_->snapshot().traces;
    const auto it = std::find_if(traces.begin(), traces.end(),
                                 [&](const storage::TraceEntry& t) { return t.name == trace.toStdString(); });
    if (it == traces.end() || !it->load_only) return;
    // An aggregate trace holds per-layer expert totals only: what it is for is the placement, identity
    // against LPT on the editor's topology (milliseconds for L x E totals, so on this thread).
    QString why;
    const std::optional<Topology> topo = editor_->topology(&why);
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
        planView_->setPlacement(p, std::make_shared<const std::vector<std::uint64_t>>(loads));
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
    clearSampleFilter(); // it named samples of the plan that goes
    setShownStep(std::nullopt);
    shownRun_ = 0;
    planView_->setPlan(nullptr, nullptr);
    updateCompare();
    updateActions();
}

void StudioWindow::updateCompare() {
    const auto shown = planView_->plan();
    if (!shown) {
        compareView_->setRuns({}, {});
        compareView_->setChoices({});
        return;
    }
    QList<std::shared_ptr<const PlanResult>> runs;
    QStringList names;
    for (const auto& [id, entry] : replay_.entries()) {
        const auto& p = entry.plan;
        if (p->trace_name != shown->trace_name || p->window_name != shown->window_name) continue;
        if (compareLeftOut_.count(id) && id != shownRun_) continue;
        runs << p;
        // The label says what differs between runs: topology, nodes, seed, budget, how it ended (a saved
        // run's status says so too).
        CompareRunFacts facts = compareRunFacts(id, *p);
        for (const auto& run : tree_->snapshot().runs)
            if (run.id == id) {
                const CompareRunFacts saved = compareRunFacts(run);
                facts.name = saved.name;
                facts.cancelled = facts.cancelled || saved.cancelled;
                facts.timeLimit = !facts.cancelled && (facts.timeLimit || saved.timeLimit);
            }
        names << compareRunLabel(facts);
    }
    compareView_->setRuns(runs, names);
    compareView_->setChoices(
        compareChoices(tree_->snapshot().runs, shown->trace_name, shown->window_name, [this](qint64 id) {
            return replay_.contains(id) && (!compareLeftOut_.count(id) || id == shownRun_);
        }));
}

void StudioWindow::toggleCompared(qint64 id, bool on) {
    if (!on) {
        compareLeftOut_.insert(id);
        updateCompare();
        return;
    }
    compareLeftOut_.erase(id);
    if (replay_.contains(id)) {
        updateCompare();
        return;
    }
    for (const auto& run : tree_->snapshot().runs)
        if (run.id == id && run.status != "failed") {
            restoreRun(run, false);
            setStatus(tr("Loading saved run %1 for the comparison…").arg(id));
            return;
        }
}

void StudioWindow::updateRunView() {
    if (!lib_) {
        runView_->setSource({}, {});
        return;
    }
    // The tree's selection names the trace (the sample pane's trace may lag behind until its samples are loaded);
    // the revision is the trace's saved runs, so that a new run reads the series again.
    const QModelIndex cur = treeView_->currentIndex();
    if (cur.isValid() && cur.data(KindRole).toInt() == LibraryTreeModel::ClusterRunNode) {
        const qint64 id = cur.data(ClusterRunRole).toLongLong();
        QString revision;
        for (const auto& c : tree_->snapshot().cluster_runs)
            if (c.id == id) revision = QString::fromStdString(c.fingerprint);
        runView_->setClusterSource(libraryPath(), id, revision);
        return;
    }
    const QString trace = cur.isValid() ? cur.data(TraceRole).toString() : QString();
    QString revision;
    for (const auto& r : tree_->snapshot().runs)
        if (QString::fromStdString(r.trace) == trace)
            revision += QString::number(r.id) + QLatin1Char(':') + QString::fromStdString(r.status) + QLatin1Char(':') +
                        QString::fromStdString(r.name) + QLatin1Char('\n');
    runView_->setSource(libraryPath(), trace, revision);
}

void StudioWindow::onCellActivated(int row, int slot, const QList<int>& sampleIndices) {
    const auto plan = planView_->plan();
    if (!plan) return;
    std::vector<std::string> ids;
    for (int i : sampleIndices)
        if (i >= 0 && static_cast<std::size_t>(i) < plan->samples.size())
            ids.push_back(plan->samples[static_cast<std::size_t>(i)].id);
    const QString what = tr("Row %1, DP slot %2 of the %3 layout: %4 %5")
                             .arg(row)
                             .arg(slot)
                             .arg(QString::fromLatin1(method_label(planView_->gridPanel()->method())))
                             .arg(ids.size())
                             .arg(ids.size() == 1 ? tr("sample") : tr("samples"));
    setStatus(what);
    if (QString::fromStdString(plan->trace_name) != samplePane_->trace()) return;
    filterSamples(ids, what);
}

void StudioWindow::onRankActivated(int layer, int rank, const QList<int>& samples, const QString& description,
                                   const QList<qint64>& tokens) {
    const auto plan = planView_->plan();
    if (!plan) return;
    if (description.isEmpty()) {
        setStatus(tr("Listing the samples of an EP rank needs the window's routing counts (not loaded for this "
                     "plan, or the window is too large)."));
        return;
    }
    if (samples.isEmpty()) {
        setStatus(tr("MoE layer index %1, EP rank %2: no sample routes tokens there.").arg(layer).arg(rank));
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
    setStatus(description);
    if (QString::fromStdString(plan->trace_name) != samplePane_->trace()) return;
    samplePane_->filterSamples(ids, description, perId,
                               tr("Tokens on L%1/EP%2").arg(layerLabel(*plan, layer)).arg(rank));
}

SampleTableModel* StudioWindow::sampleModel() const {
    return samplePane_->model();
}
SampleFilterProxy* StudioWindow::sampleProxy() const {
    return samplePane_->proxy();
}
QTableView* StudioWindow::sampleView() const {
    return samplePane_->view();
}
LengthHistogramView* StudioWindow::histogramView() const {
    return samplePane_->histogram();
}
QToolButton* StudioWindow::clearFilterButton() const {
    return samplePane_->clearFilterButton();
}

QString StudioWindow::sampleFilterText() const {
    return samplePane_->filterText();
}

void StudioWindow::filterSamples(const std::vector<std::string>& ids, const QString& label) {
    samplePane_->filterSamples(ids, label);
}

void StudioWindow::clearSampleFilter() {
    samplePane_->clearFilter();
}

void StudioWindow::closeEvent(QCloseEvent* event) {
    auto s = settings();
    s->setValue(QStringLiteral("window/geometry"), saveGeometry());
    s->setValue(QStringLiteral("window/state"), saveState());
    s->setValue(QStringLiteral("window/split"), mainSplit_->saveState());
    s->setValue(QStringLiteral("studio/tab"), resultTabs_->currentIndex());
    s->setValue(QStringLiteral("studio/planTab"), planView_->currentIndex());
    s->setValue(QStringLiteral("studio/exportFolder"), exports_->folder());
    // The selected run (0 when a window or trace is selected), with the library it belongs to.
    const QModelIndex cur = treeView_->currentIndex();
    const qint64 run =
        cur.isValid() && cur.data(KindRole).toInt() == LibraryTreeModel::RunNode ? cur.data(RunIdRole).toLongLong() : 0;
    s->setValue(QStringLiteral("studio/run"), run);
    s->setValue(QStringLiteral("studio/runLibrary"), lib_ ? QFileInfo(libraryPath()).absoluteFilePath() : QString());
    // Stop the running job: the planner returns its best valid plan, which the worker still saves.
    jobs_->cancelAll();
    QMainWindow::closeEvent(event);
}

} // namespace routepack::views
