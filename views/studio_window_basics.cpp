// What users of an analysis tool expect of the studio's main window: the library's filter line and
// context menu, context menus and Ctrl+C on the tables, File > Open Recent, View > Theme, the Help
// menu's guide to the views, and files dropped on the window.
#include "views/studio_window.h"

#include "views/dialogs/import_dialog.h"
#include "views/library/library_tree_model.h"
#include "views/library/sample_pane.h"
#include "views/plan/grid_panel.h"
#include "views/plan/plan_views.h"
#include "views/widgets/item_actions.h"

#include <QAction>
#include <QActionGroup>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QSettings>
#include <QTableView>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTreeView>
#include <QVBoxLayout>

namespace routepack::views {

namespace {

/// How many libraries File > Open Recent lists.
constexpr int kRecentLibraries = 10;

const QString kRecentKey = QStringLiteral("library/recent");
const QString kThemeKey = QStringLiteral("view/theme");

/// Esc in a line edit with text clears it (and is not the studio's Cancel job); in an empty one it
/// goes on to the window's shortcuts.
class EscClears : public QObject {
public:
    using QObject::QObject;
    bool eventFilter(QObject* watched, QEvent* e) override {
        auto* edit = qobject_cast<QLineEdit*>(watched);
        if (!edit || (e->type() != QEvent::ShortcutOverride && e->type() != QEvent::KeyPress))
            return QObject::eventFilter(watched, e);
        auto* k = static_cast<QKeyEvent*>(e);
        if (k->key() != Qt::Key_Escape || k->modifiers() != Qt::NoModifier || edit->text().isEmpty())
            return QObject::eventFilter(watched, e);
        if (e->type() == QEvent::KeyPress) edit->clear();
        e->accept();
        return true;
    }
};

} // namespace

QWidget* StudioWindow::buildLibraryPane() {
    auto* pane = new QWidget(this);
    auto* layout = new QVBoxLayout(pane);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    libraryFilter_ = new QLineEdit(pane);
    libraryFilter_->setObjectName(QStringLiteral("libraryFilter"));
    libraryFilter_->setPlaceholderText(tr("Filter traces, windows, runs (Ctrl+F)"));
    libraryFilter_->setClearButtonEnabled(true);
    libraryFilter_->setToolTip(tr("Keeps the rows whose name or details contain this text (any case), with their "
                                  "traces and windows; Esc clears it"));
    connect(libraryFilter_, &QLineEdit::textChanged, this, [this] { applyLibraryFilter(); });
    libraryFilter_->installEventFilter(new EscClears(libraryFilter_));
    layout->addWidget(libraryFilter_);
    layout->addWidget(treeView_);
    installTableActions(
        treeView_, [this](QMenu* menu, const QPoint& pos) { return libraryActions(treeView_->indexAt(pos), menu); });
    auto* rename = new QAction(tr("Rename"), treeView_);
    rename->setShortcut(Qt::Key_F2);
    rename->setShortcutContext(Qt::WidgetShortcut);
    connect(rename, &QAction::triggered, this, &StudioWindow::renameCurrentNode);
    treeView_->addAction(rename);
    return pane;
}

void StudioWindow::applyLibraryFilter() {
    if (!libraryFilter_) return;
    applyTreeFilter(treeView_, libraryFilter_->text());
}

void StudioWindow::installTableMenus() {
    installTableActions(samplePane_->view(), [this](QMenu* menu, const QPoint&) {
        auto* csv = new QAction(tr("Export the sample table (CSV)…"), menu);
        connect(csv, &QAction::triggered, this, [this] { showExport(exports_->exportSampleCsv()); });
        return QList<QAction*>{csv};
    });
    if (auto* table = compareView_->findChild<QTableView*>())
        installTableActions(table, [this](QMenu* menu, const QPoint&) {
            auto* csv = new QAction(tr("Export the comparison (CSV)…"), menu);
            csv->setEnabled(planView_->plan() != nullptr);
            connect(csv, &QAction::triggered, this, [this] { showExport(exports_->exportComparisonCsv()); });
            return QList<QAction*>{csv};
        });
    installTableActions(planView_->gridPanel()->view());
}

// --- File > Open Recent ---

void StudioWindow::buildRecentMenu(QMenu* file) {
    recentMenu_ = file->addMenu(tr("Open &recent"));
    recentMenu_->setObjectName(QStringLiteral("recentMenu"));
    connect(recentMenu_, &QMenu::aboutToShow, this, &StudioWindow::fillRecentMenu);
    fillRecentMenu();
}

QStringList StudioWindow::recentLibraries() const {
    auto s = settings();
    const QStringList kept = s->value(kRecentKey).toStringList();
    QStringList out;
    for (const QString& f : kept)
        if (!f.isEmpty() && QFileInfo(f).isFile() && !out.contains(f)) out << f;
    if (out != kept) s->setValue(kRecentKey, out);
    return out;
}

void StudioWindow::rememberRecent(const QString& file) {
    QStringList list = recentLibraries();
    list.removeAll(file);
    list.prepend(file);
    while (list.size() > kRecentLibraries)
        list.removeLast();
    settings()->setValue(kRecentKey, list);
    fillRecentMenu();
}

void StudioWindow::fillRecentMenu() {
    if (!recentMenu_) return;
    recentMenu_->clear();
    const QStringList list = recentLibraries();
    for (int i = 0; i < list.size(); ++i) {
        const QString f = list[i];
        QAction* a =
            recentMenu_->addAction((i < 9 ? QStringLiteral("&%1 ").arg(i + 1) : QString()) + QFileInfo(f).fileName() +
                                   QStringLiteral(" — ") + QFileInfo(f).absolutePath());
        a->setData(f);
        a->setToolTip(f);
        connect(a, &QAction::triggered, this, [this, f] { openLibrary(f); });
    }
    if (list.isEmpty()) recentMenu_->addAction(tr("(no library opened yet)"))->setEnabled(false);
    recentMenu_->addSeparator();
    QAction* clear = recentMenu_->addAction(tr("Clear the list"));
    clear->setEnabled(!list.isEmpty());
    connect(clear, &QAction::triggered, this, [this] {
        settings()->remove(kRecentKey);
        fillRecentMenu();
    });
}

// --- View > Theme ---

void StudioWindow::buildThemeMenu(QMenu* view) {
    QMenu* themes = view->addMenu(tr("&Theme"));
    themes->setObjectName(QStringLiteral("themeMenu"));
    auto* group = new QActionGroup(themes);
    group->setExclusive(true);
    {
        auto s = settings();
        if (s->contains(kThemeKey)) {
            theme_ = themeFromKey(s->value(kThemeKey).toString());
            applyTheme(theme_);
        }
    }
    for (const Theme t : {Theme::Light, Theme::Dark}) {
        QAction* a = themes->addAction(t == Theme::Dark ? tr("&Dark") : tr("&Light"));
        a->setObjectName(QStringLiteral("theme-") + themeKey(t));
        a->setCheckable(true);
        a->setChecked(t == theme_);
        group->addAction(a);
        connect(a, &QAction::triggered, this, [this, t] { setTheme(t); });
    }
}

void StudioWindow::setTheme(Theme theme) {
    theme_ = theme;
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
        helpDialog_ = new QDialog(this);
        helpDialog_->setWindowTitle(tr("Guide to the views — RoutePack Studio"));
        auto* layout = new QVBoxLayout(helpDialog_);
        auto* browser = new QTextBrowser(helpDialog_);
        browser->setObjectName(QStringLiteral("viewsGuideText"));
        browser->setOpenExternalLinks(true);
        QFile f(QStringLiteral(":/docs/studio-views.md"));
        if (f.open(QIODevice::ReadOnly))
            browser->setMarkdown(QString::fromUtf8(f.readAll()));
        else
            browser->setPlainText(tr("The guide (docs/studio-views.md) is missing from this build."));
        layout->addWidget(browser);
        auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, helpDialog_);
        connect(buttons, &QDialogButtonBox::rejected, helpDialog_, &QDialog::close);
        layout->addWidget(buttons);
        helpDialog_->resize(760, 640);
    }
    clearStaleError();
    helpDialog_->show();
    helpDialog_->raise();
    return helpDialog_;
}

QDialog* StudioWindow::showStatusLog() {
    if (!statusLogDialog_) {
        statusLogDialog_ = new QDialog(this);
        statusLogDialog_->setWindowTitle(tr("Status messages — RoutePack Studio"));
        auto* layout = new QVBoxLayout(statusLogDialog_);
        statusLogText_ = new QPlainTextEdit(statusLogDialog_);
        statusLogText_->setObjectName(QStringLiteral("statusLogText"));
        statusLogText_->setReadOnly(true);
        statusLogText_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
        layout->addWidget(statusLogText_);
        auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, statusLogDialog_);
        connect(buttons, &QDialogButtonBox::rejected, statusLogDialog_, &QDialog::close);
        layout->addWidget(buttons);
        statusLogDialog_->resize(760, 420);
    }
    statusLogText_->setPlainText(statusLog_.join(QLatin1Char('\n')));
    statusLogText_->moveCursor(QTextCursor::End);
    statusLogDialog_->show();
    statusLogDialog_->raise();
    return statusLogDialog_;
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
