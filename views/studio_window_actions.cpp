// The studio window's menus, actions and the dialogs they open (import, define window, rewrite,
// save topology); the rest of StudioWindow is views/studio_window.cpp.
#include "views/studio_window.h"

#include "core/plan/plan_file.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/rewrite_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/dialogs/window_dialog.h"
#include "views/library/library_pane.h"
#include "views/library/sample_pane.h"
#include "views/plan/heatmap_view.h"
#include "views/plan/plan_views.h"
#include "views/planning_controller.h"
#include "views/results_pane.h"
#include "views/run/run_view.h"
#include "views/widgets/gui_text.h"

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QTabWidget>

namespace routepack::views {

void StudioWindow::buildExportMenu(QMenu* file) {
    QMenu* exp = file->addMenu(tr("&Export"));
    QAction* shown = exp->addAction(tr("Export what is shown…"));
    shown->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    connect(shown, &QAction::triggered, this, [this] { showExport(exports_->exportCurrent()); });
    exp->addSeparator();
    QAction* planJson = exp->addAction(tr("Plan JSON…"));
    connect(planJson, &QAction::triggered, this, [this] { showExport(exports_->exportPlanJson()); });
    QMenu* maps = exp->addMenu(tr("Expert map"));
    for (const char* f : {"routepack", "sglang", "vllm"}) {
        QAction* a = maps->addAction(QString::fromLatin1(f));
        connect(a, &QAction::triggered, this,
                [this, f] { showExport(exports_->exportExpertMap(QString::fromLatin1(f))); });
        actions_.plan << a;
    }
    QAction* viewImage = exp->addAction(tr("Current plan view (PNG/SVG)…"));
    connect(viewImage, &QAction::triggered, this, [this] { showExport(exports_->exportPlanViewImage()); });
    QAction* cmpCsv = exp->addAction(tr("Comparison table (CSV)…"));
    connect(cmpCsv, &QAction::triggered, this, [this] { showExport(exports_->exportComparisonCsv()); });
    QAction* cmpChart = exp->addAction(tr("Comparison chart (PNG/SVG)…"));
    connect(cmpChart, &QAction::triggered, this, [this] { showExport(exports_->exportComparisonChart()); });
    QAction* runCsv = exp->addAction(tr("Run steps (CSV, as routepack sweep)…"));
    connect(runCsv, &QAction::triggered, this, [this] { showExport(exports_->exportRunCsv()); });
    QMenu* runCharts = exp->addMenu(tr("Run chart (PNG/SVG)"));
    for (const QString& name : RunView::chartNames())
        connect(runCharts->addAction(name), &QAction::triggered, this,
                [this, name] { showExport(exports_->exportRunChart(name)); });
    QAction* sampleCsv = exp->addAction(tr("Sample table (CSV)…"));
    connect(sampleCsv, &QAction::triggered, this, [this] { showExport(exports_->exportSampleCsv()); });
    actions_.plan << planJson << viewImage << cmpCsv << cmpChart;
    actions_.fullPlan << maps->actions() << planJson << cmpCsv << cmpChart;
}

void StudioWindow::buildActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open library…"));
    open->setShortcut(QKeySequence::Open);
    connect(open, &QAction::triggered, this, [this] {
        const QString f =
            QFileDialog::getOpenFileName(this, tr("Open library"), QFileInfo(libraryPath()).absolutePath(),
                                         tr("RoutePack libraries (*.routepack);;All files (*)"));
        if (!f.isEmpty()) openLibrary(f);
    });
    QMenu* recent = file->addMenu(tr("Open &recent"));
    recent->setObjectName(QStringLiteral("recentMenu"));
    library_->setRecentMenu(recent);
    QAction* create = file->addAction(tr("&New library…"));
    create->setShortcut(QKeySequence::New);
    connect(create, &QAction::triggered, this, [this] {
        QString f =
            QFileDialog::getSaveFileName(this, tr("New library"), QString(), tr("RoutePack libraries (*.routepack)"));
        if (f.isEmpty()) return;
        if (QFileInfo(f).suffix().isEmpty()) f += QStringLiteral(".routepack");
        openLibrary(f, true);
    });
    QAction* demo = file->addAction(tr("Open the &demo library"));
    connect(demo, &QAction::triggered, this, &StudioWindow::openDemoLibrary);
    file->addSeparator();
    actions_.import = file->addAction(tr("&Import trace…"));
    actions_.import->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    connect(actions_.import, &QAction::triggered, this, [this] { showImportDialog(); });
    file->addAction(actions_.window);
    actions_.window->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
    connect(actions_.window, &QAction::triggered, this, &StudioWindow::defineWindow);
    file->addSeparator();
    buildExportMenu(file);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* loadSetup = edit->addAction(tr("&Load the shown run's setup"));
    loadSetup->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
    loadSetup->setToolTip(tr("Replace the Topology and budgets form with the shown run's topology and budgets "
                             "(Ctrl+Z in the form brings the edits back)"));
    connect(loadSetup, &QAction::triggered, this, [this] { loadShownRunSetup(); });
    QAction* find = edit->addAction(tr("&Find in the library"));
    find->setShortcut(QKeySequence::Find);
    connect(find, &QAction::triggered, library_, &LibraryPane::focusFilter);

    QMenu* plan = menuBar()->addMenu(tr("&Plan"));
    actions_.run = plan->addAction(tr("&Run planner"));
    actions_.run->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    connect(actions_.run, &QAction::triggered, this, [this] { runPlanner(); });
    actions_.runPlan = plan->addAction(tr("Plan &run (selected windows, or every window of the trace)"));
    actions_.runPlan->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    connect(actions_.runPlan, &QAction::triggered, this, [this] { planSelectedRun(); });
    actions_.cancel = plan->addAction(tr("&Cancel job"));
    actions_.cancel->setShortcuts({QKeySequence(Qt::Key_Escape), QKeySequence(Qt::CTRL | Qt::Key_Period)});
    connect(actions_.cancel, &QAction::triggered, this, &StudioWindow::cancelJob);
    QAction* compareAll = plan->addAction(tr("Compare all saved runs of this &window"));
    connect(compareAll, &QAction::triggered, this, [this] { compareSavedRuns(); });
    actions_.plan << compareAll;
    actions_.fullPlan << compareAll;
    QAction* cancelAll = plan->addAction(tr("Cancel all &queued jobs"));
    connect(cancelAll, &QAction::triggered, planning_->queue(), &PlanJobQueue::cancelAll);
    plan->addSeparator();
    QAction* rewrite = plan->addAction(tr("Rewrite check&point…"));
    rewrite->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_W));
    rewrite->setToolTip(tr("Rewrite a checkpoint so that expert state follows the shown plan's placement"));
    connect(rewrite, &QAction::triggered, this, [this] { showRewriteDialog(); });
    actions_.plan << rewrite;
    buildViewMenu();
    buildHelpMenu();
}

void StudioWindow::buildViewMenu() {
    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : findChildren<QDockWidget*>())
        view->addAction(d->toggleViewAction());
    buildThemeMenu(view);
    view->addSeparator();
    // The result tabs by number, and the plan view's tabs in turn (the plan view is shown first).
    const QString resultNames[] = {tr("&Plan"), tr("&Compare runs"), tr("R&un")};
    for (int t = 0; t < 3; ++t) {
        QAction* a = view->addAction(resultNames[t]);
        a->setShortcut(QKeySequence(Qt::ALT | static_cast<Qt::Key>(Qt::Key_1 + t)));
        connect(a, &QAction::triggered, this, [this, t] {
            if (t < results_->count()) results_->setCurrentIndex(t);
        });
    }
    PlanView* planView = results_->planView();
    auto stepPlanTab = [this, planView](int step) {
        results_->setCurrentWidget(planView);
        const int n = planView->count();
        if (n > 0) planView->setCurrentIndex((planView->currentIndex() + step + n) % n);
    };
    QAction* next = view->addAction(tr("&Next plan view"));
    next->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageDown));
    connect(next, &QAction::triggered, this, [stepPlanTab] { stepPlanTab(1); });
    QAction* prev = view->addAction(tr("Pre&vious plan view"));
    prev->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageUp));
    connect(prev, &QAction::triggered, this, [stepPlanTab] { stepPlanTab(-1); });
    view->addSeparator();
    // Heatmap zoom: the maps of the shown plan view, their cells larger in a scroll area.
    auto zoom = [this, planView](int steps) {
        results_->setCurrentWidget(planView);
        QWidget* tab = planView->currentWidget();
        const QList<HeatmapView*> views = tab ? tab->findChildren<HeatmapView*>() : QList<HeatmapView*>();
        if (planView->zoomHeatmaps(steps) == 0 || views.isEmpty()) {
            setStatus(tr("The shown plan view has no heatmap to zoom."));
            return;
        }
        setStatus(tr("Heatmap zoom %1% (Ctrl+= / Ctrl+- / Ctrl+0, or Ctrl + mouse wheel)")
                      .arg(static_cast<int>(std::lround(100 * views.front()->zoom()))));
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
    view->addAction(tr("Status &messages…"), this, [this] { showStatusLog(); })
        ->setObjectName(QStringLiteral("statusLog"));
}

QString StudioWindow::shortcutsText() const {
    QStringList lines;
    const std::function<void(const QMenu*, const QString&)> walk = [&](const QMenu* menu, const QString& path) {
        for (QAction* a : menu->actions()) {
            const QString name = a->text().remove(QLatin1Char('&')).remove(QStringLiteral("…"));
            if (a->menu()) {
                walk(a->menu(), path + QStringLiteral(" > ") + name);
                continue;
            }
            if (a->shortcuts().isEmpty()) continue;
            QStringList keys;
            for (const QKeySequence& k : a->shortcuts())
                keys << k.toString(QKeySequence::NativeText);
            lines << QStringLiteral("%1 > %2: %3").arg(path, name, keys.join(tr(" or ")));
        }
    };
    for (QAction* a : menuBar()->actions())
        if (a->menu()) walk(a->menu(), a->text().remove(QLatin1Char('&')));
    return lines.join(QLatin1Char('\n'));
}

void StudioWindow::updateActions() {
    const bool has_lib = lib_ != nullptr;
    const bool has_plan = results_->planView()->plan() != nullptr;
    actions_.import->setEnabled(has_lib && !lib_->read_only());
    actions_.window->setEnabled(has_lib && !lib_->read_only() && !samplePane_->trace().isEmpty());
    actions_.run->setEnabled(has_lib);
    actions_.runPlan->setEnabled(has_lib);
    actions_.cancel->setEnabled(planning_->queue()->isBusy());
    for (QAction* a : actions_.plan)
        a->setEnabled(has_plan);
    // A plan read from its file without counts (a cluster step) has no baselines' layouts and no
    // rank loads: its file is what there is to export (the step's plan file in OUT).
    if (!results_->planView()->countsNote().isEmpty())
        for (QAction* a : actions_.fullPlan)
            a->setEnabled(false);
}

ImportDialog* StudioWindow::showImportDialog() {
    if (!lib_) {
        setStatus(tr("Open or create a library first (Ctrl+O, Ctrl+N)."), true);
        return nullptr;
    }
    if (lib_->read_only()) {
        setStatus(tr("This library is read-only: nothing can be imported into it."), true);
        return nullptr;
    }
    if (!importDialog_) {
        importDialog_ = new ImportDialog(libraryPath(), this);
        connect(importDialog_, &ImportDialog::imported, this, [this](const QString& name) {
            refreshLibrary();
            selectTrace(name);
            setStatus(tr("Imported trace %1.").arg(name));
            // A cluster step imported through Import step… opens again, now with its counts.
            if (reopenStep_ && importDialog_->inputs().contains(reopenStep_->stepPath)) {
                const ClusterStepRef step = *reopenStep_;
                reopenStep_.reset();
                planning_->openClusterStep(step);
            }
        });
    }
    clearStaleError();
    importDialog_->show();
    importDialog_->raise();
    importDialog_->activateWindow();
    return importDialog_;
}

RewriteDialog* StudioWindow::showRewriteDialog() {
    const auto plan = results_->planView()->plan();
    if (!plan) {
        setStatus(tr("Show a plan first: select a planned run in the library, or run the planner (Ctrl+R)."), true);
        return nullptr;
    }
    if (!rewriteDialog_) {
        rewriteDialog_ = new RewriteDialog(this);
        connect(rewriteDialog_, &RewriteDialog::rewritten, this,
                [this](const QString& output) { setStatus(tr("Checkpoint rewritten into %1.").arg(output)); });
    }
    if (!rewriteDialog_->job()->isRunning()) {
        const qint64 shownRun = results_->shownRun();
        if (results_->shownStep()) {
            rewriteDialog_->loadPlanFile(results_->shownStep()->planFile); // the cluster step's own plan file
        } else {
            QString json, origin;
            if (shownRun > 0 && lib_) {
                try {
                    json = QString::fromStdString(lib_->run_plan_json(shownRun));
                    origin = QStringLiteral("run %1 in %2").arg(shownRun).arg(QFileInfo(libraryPath()).fileName());
                } catch (const std::exception&) {
                    json.clear(); // fall back to the plan shown
                }
            }
            if (json.isEmpty()) {
                json = QString::fromStdString(plan_to_json(*plan));
                origin = QStringLiteral("unsaved plan of %1/%2")
                             .arg(QString::fromStdString(plan->trace_name), QString::fromStdString(plan->window_name));
            }
            rewriteDialog_->setPlanJson(json, origin);
        }
    }
    // The saved plans of the library, so that a checkpoint of another model names the runs that fit it.
    std::vector<KnownPlan> known;
    for (const auto& r : library_->snapshot().runs) {
        if (r.plan_id == 0) continue;
        for (const auto& t : library_->snapshot().traces)
            if (t.name == r.trace)
                known.push_back({r.id, QString::fromStdString(r.trace), QString::fromStdString(r.window), t.model});
    }
    rewriteDialog_->setKnownPlans(std::move(known));
    clearStaleError();
    rewriteDialog_->show();
    rewriteDialog_->raise();
    rewriteDialog_->activateWindow();
    return rewriteDialog_;
}

void StudioWindow::defineWindow() {
    const QString shownTrace = samplePane_->trace();
    if (!lib_ || shownTrace.isEmpty()) {
        setStatus(tr("Select a trace first."), true);
        return;
    }
    std::vector<SampleInfo> all;
    try {
        all = lib_->samples(shownTrace.toStdString());
    } catch (const std::exception& e) {
        setStatus(guiErrorText(e), true);
        return;
    }
    WindowDialog dlg(shownTrace, std::move(all), samplePane_->selectedSampleIds(), this);
    dlg.setWindowName(tr("step-%1").arg(lib_->windows(shownTrace.toStdString()).size()));
    if (dlg.exec() != QDialog::Accepted) return;
    if (dlg.isSplit()) {
        // A whole run: every window in one transaction (all or none), as `routepack window --split`.
        QString why;
        const auto parts = dlg.splitWindows(&why);
        if (!parts) {
            setStatus(tr("Cannot split the trace: %1").arg(why), true);
            return;
        }
        std::vector<storage::Library::WindowSpec> specs;
        for (const auto& p : *parts)
            specs.push_back({p.name.toStdString(), p.selection.ids, p.selection.definition});
        try {
            lib_->create_windows(shownTrace.toStdString(), specs);
        } catch (const std::exception& e) {
            setStatus(tr("Cannot create the windows (none was created): %1").arg(guiErrorText(e)), true);
            return;
        }
        const QString trace = shownTrace;
        refreshLibrary();
        selectWindow(trace, parts->front().name);
        setStatus(tr("Trace %1 split into %2 windows, %3 .. %4 (last: %5).")
                      .arg(trace)
                      .arg(parts->size())
                      .arg(parts->front().name, parts->back().name)
                      .arg(QString::fromStdString(parts->back().selection.definition)));
        return;
    }
    const auto sel = dlg.selection();
    if (!sel) return;
    try {
        lib_->create_window(shownTrace.toStdString(), dlg.windowName().toStdString(), sel->ids, sel->definition);
    } catch (const std::exception& e) {
        setStatus(tr("Cannot create the window: %1").arg(guiErrorText(e)), true);
        return;
    }
    const QString trace = shownTrace;
    refreshLibrary();
    selectWindow(trace, dlg.windowName());
    setStatus(tr("Window %1 defined: %2 samples (%3).")
                  .arg(dlg.windowName())
                  .arg(sel->ids.size())
                  .arg(QString::fromStdString(sel->definition)));
}

void StudioWindow::saveTopology() {
    if (!lib_) {
        setStatus(tr("Open a library first."), true);
        return;
    }
    QString why;
    const auto t = editor_->topology(&why);
    if (!t) {
        setStatus(tr("The topology is not valid: %1").arg(why), true);
        return;
    }
    const auto budgets = editor_->budgets(&why);
    if (!budgets) {
        setStatus(tr("The planner budgets are not valid: %1").arg(why), true);
        return;
    }
    try {
        lib_->save_topology(editor_->topologyName().toStdString(), *t, *budgets);
        editor_->setLibraryTopologies(lib_->topologies());
        editor_->selectPreset(editor_->topologyName());
        editor_->markClean();
        setStatus(tr("Topology %1 saved in the library.").arg(editor_->topologyName()));
    } catch (const std::exception& e) {
        setStatus(tr("Cannot save the topology: %1").arg(guiErrorText(e)), true);
    }
}

void StudioWindow::showExport(const std::optional<ExportResult>& result) {
    if (result) setStatus(result->message, result->error);
}

bool StudioWindow::loadShownRunSetup() {
    for (const auto& run : library_->snapshot().runs) {
        if (results_->shownRun() == 0 || run.id != results_->shownRun()) continue;
        loadRunSetup(run, true);
        keptEditsRun_ = 0;
        setStatus(tr("The form holds run %1's setup (Ctrl+Z in the form brings your edits back).").arg(run.id));
        return true;
    }
    setStatus(tr("Show a saved run first: its setup is what the form loads."), true);
    return false;
}

} // namespace routepack::views
