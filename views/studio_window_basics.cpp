// What users of an analysis tool expect of the studio's main window: the status line and its log,
// context menus and Ctrl+C on the tables, View > Theme, the Help menu's guide to the views, and files
// dropped on the window.
#include "views/studio_window.h"

#include "views/dialogs/import_dialog.h"
#include "views/library/sample_pane.h"
#include "views/plan/grid_panel.h"
#include "views/plan/plan_views.h"
#include "views/results_pane.h"
#include "views/studio_status.h"
#include "views/widgets/help_dialog.h"
#include "views/widgets/item_actions.h"

#include <QAction>
#include <QActionGroup>
#include <QDialog>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QTableView>

namespace routepack::views {

namespace {

const QString kThemeKey = QStringLiteral("view/theme");

} // namespace

static_assert(StudioWindow::kStatusLogSize == StudioStatus::kLogSize);

QString StudioWindow::statusText() const {
    return status_->text();
}

void StudioWindow::setStatus(const QString& text, bool error) {
    status_->set(text, error);
}

void StudioWindow::clearStaleError() {
    if (status_->isError()) setStatus(QString());
}

bool StudioWindow::statusIsError() const {
    return status_->isError();
}

QStringList StudioWindow::statusMessages() const {
    return status_->messages();
}

QDialog* StudioWindow::showStatusLog() {
    return status_->showLog(this);
}

void StudioWindow::installTableMenus() {
    installTableActions(samplePane_->view(), [this](QMenu* menu, const QPoint&) {
        auto* csv = new QAction(tr("Export the sample table (CSV)…"), menu);
        connect(csv, &QAction::triggered, this, [this] { showExport(exports_->exportSampleCsv()); });
        return QList<QAction*>{csv};
    });
    if (auto* table = results_->compareView()->findChild<QTableView*>())
        installTableActions(table, [this](QMenu* menu, const QPoint&) {
            auto* csv = new QAction(tr("Export the comparison (CSV)…"), menu);
            csv->setEnabled(results_->planView()->plan() != nullptr);
            connect(csv, &QAction::triggered, this, [this] { showExport(exports_->exportComparisonCsv()); });
            return QList<QAction*>{csv};
        });
    installTableActions(results_->planView()->gridPanel()->view());
}

// --- View > Theme ---

void StudioWindow::buildThemeMenu(QMenu* view) {
    QMenu* themes = view->addMenu(tr("&Theme"));
    themes->setObjectName(QStringLiteral("themeMenu"));
    auto* group = new QActionGroup(themes);
    group->setExclusive(true);
    if (settings()->contains(kThemeKey)) applyTheme(theme());
    for (const Theme t : {Theme::Light, Theme::Dark}) {
        QAction* a = themes->addAction(t == Theme::Dark ? tr("&Dark") : tr("&Light"));
        a->setObjectName(QStringLiteral("theme-") + themeKey(t));
        a->setCheckable(true);
        a->setChecked(t == theme());
        group->addAction(a);
        connect(a, &QAction::triggered, this, [this, t] { setTheme(t); });
    }
}

Theme StudioWindow::theme() const {
    auto s = settings();
    return s->contains(kThemeKey) ? themeFromKey(s->value(kThemeKey).toString()) : Theme::Light;
}

void StudioWindow::setTheme(Theme theme) {
    applyTheme(theme);
    settings()->setValue(kThemeKey, themeKey(theme));
    if (QMenu* m = menuBar()->findChild<QMenu*>(QStringLiteral("themeMenu")))
        for (QAction* a : m->actions())
            a->setChecked(a->objectName() == QStringLiteral("theme-") + themeKey(theme));
    setStatus(theme == Theme::Dark ? tr("Dark theme (kept for the next start).")
                                   : tr("Light theme (kept for the next start)."));
}

// --- Help ---

void StudioWindow::buildHelpMenu() {
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* guide = help->addAction(tr("&Guide to the views"));
    guide->setObjectName(QStringLiteral("viewsGuide"));
    connect(guide, &QAction::triggered, this, [this] { showViewsHelp(); });
    QAction* keys = help->addAction(tr("&Keyboard shortcuts"));
    keys->setShortcut(QKeySequence::HelpContents);
    connect(keys, &QAction::triggered, this,
            [this] { QMessageBox::information(this, tr("Keyboard shortcuts"), shortcutsText()); });
}

QDialog* StudioWindow::showViewsHelp() {
    if (!helpDialog_) {
        QFile f(QStringLiteral(":/docs/studio-views.md"));
        const QString guide = f.open(QIODevice::ReadOnly)
                                  ? QString::fromUtf8(f.readAll())
                                  : tr("The guide (docs/studio-views.md) is missing from this build.");
        helpDialog_ = new HelpDialog(tr("Guide to the views — RoutePack Studio"), guide, this);
    }
    clearStaleError();
    helpDialog_->show();
    helpDialog_->raise();
    return helpDialog_;
}

// --- Drops ---

void StudioWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!droppedLocalPaths(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void StudioWindow::dropEvent(QDropEvent* event) {
    const QStringList paths = droppedLocalPaths(event->mimeData());
    if (paths.isEmpty()) return;
    event->acceptProposedAction();
    if (paths.size() == 1 && QFileInfo(paths.front()).isFile() &&
        QFileInfo(paths.front()).suffix().compare(QStringLiteral("routepack"), Qt::CaseInsensitive) == 0) {
        openLibrary(paths.front());
        return;
    }
    if (ImportDialog* d = showImportDialog()) d->addInputs(paths);
}

} // namespace routepack::views
