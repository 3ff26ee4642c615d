// The studio window's menus, actions and the dialogs they open (import, define window, rewrite,
// save topology); the rest of StudioWindow is views/studio_window.cpp.
#include "views/studio_window.h"

#include "core/plan/plan_file.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/rewrite_dialog.h"
#include "views/dialogs/setup_pane.h"
#include "views/dialogs/window_dialog.h"
#include "views/library/library_pane.h"
#include "views/library/sample_pane.h"
#include "views/plan/plan_views.h"
#include "views/planning_controller.h"
#include "views/results_pane.h"
#include "views/widgets/gui_text.h"
#include "views/widgets/item_actions.h"

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>

namespace routepack::views {

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
    file->addAction(library_->reloadAction());
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
    actions_.importMeasured = file->addAction(tr("Import &measured step…"));
    actions_.importMeasured->setObjectName(QStringLiteral("importMeasured"));
    connect(actions_.importMeasured, &QAction::triggered, this, [this] { showMeasuredImportDialog(); });
    file->addAction(actions_.window);
    actions_.window->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
    connect(actions_.window, &QAction::triggered, this, &StudioWindow::defineWindow);
    file->addSeparator();
    const StudioExports::MenuActions exportActions = exports_->fillMenu(
        file->addMenu(tr("&Export")), [this](const std::optional<ExportResult>& result) { showExport(result); });
    actions_.plan << exportActions.plan;
    actions_.fullPlan << exportActions.fullPlan;
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(library_->undoDeleteAction()); // Ctrl+Alt+Z: the last deletion of this library back
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
    results_->addViewActions(view);
    view->addAction(tr("Status &messages…"), this, [this] { showStatusLog(); })
        ->setObjectName(QStringLiteral("statusLog"));
}

QString StudioWindow::shortcutsText() const {
    return menuShortcutsText(menuBar());
}

void StudioWindow::updateActions() {
    const bool has_lib = lib_ != nullptr;
    const bool has_plan = results_->planView()->plan() != nullptr;
    actions_.import->setEnabled(has_lib && !lib_->read_only());
    actions_.importMeasured->setEnabled(has_lib && !lib_->read_only());
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
    if (!mayImport()) return nullptr;
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

MeasuredImportDialog* StudioWindow::showMeasuredImportDialog() {
    if (!mayImport()) return nullptr;
    return results_->showMeasuredImport(libraryPath());
}

bool StudioWindow::mayImport() {
    if (lib_ && !lib_->read_only()) return true;
    setStatus(lib_ ? tr("This library is read-only: nothing can be imported into it.")
                   : tr("Open or create a library first (Ctrl+O, Ctrl+N)."),
              true);
    return false;
}

RewriteDialog* StudioWindow::showRewriteDialog() {
    const auto plan = results_->planView()->plan();
    if (!plan) {
        setStatus(tr("Show a plan first: select a planned run in the library, or run the planner (Ctrl+R)."), true);
        return nullptr;
    }
    if (!rewriteDialog_) {
        rewriteDialog_ = new RewriteDialog(this);
        rewriteDialog_->setObjectName(QStringLiteral("rewriteDialog"));
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
    const QString trace = samplePane_->trace();
    if (!lib_ || trace.isEmpty()) {
        setStatus(tr("Select a trace first."), true);
        return;
    }
    const auto defined = defineWindows(*lib_, trace, samplePane_->selectedSampleIds(), this);
    if (!defined) return;
    if (!defined->select.isEmpty()) {
        refreshLibrary();
        selectWindow(trace, defined->select);
    }
    setStatus(defined->status, defined->error);
}

void StudioWindow::showExport(const std::optional<ExportResult>& result) {
    if (result) setStatus(result->message, result->error);
}

bool StudioWindow::loadShownRunSetup() {
    for (const auto& run : library_->snapshot().runs) {
        if (results_->shownRun() == 0 || run.id != results_->shownRun()) continue;
        setup_->loadRun(run, true);
        keptEditsRun_ = 0;
        setStatus(tr("The form holds run %1's setup (Ctrl+Z in the form brings your edits back).").arg(run.id));
        return true;
    }
    setStatus(tr("Show a saved run first: its setup is what the form loads."), true);
    return false;
}

} // namespace routepack::views
