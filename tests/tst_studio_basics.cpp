// What an analysis tool's user expects of the studio, offscreen with real events: context menus
// (customContextMenuRequested, QContextMenuEvent) on the library tree, tables, charts and heatmaps;
// Ctrl+C of table rows and of a heatmap cell's tooltip (QTest::keyClick); delete and rename from the
// tree with their confirm dialogs; the library filter (typed with QTest::keyClicks); File > Open
// Recent (missing files pruned); the light/dark theme kept across windows; Help > Guide to the views;
// trace files dropped on the window and on the import dialog (QMimeData drops); and the rewrite
// dialog's path from a checkpoint of another model to one of the plan's (shared checkpoints).
// Settings live under a temporary folder (QSettings::setPath) with a per-process organization.
#include "core/plan/plan_file.h"
#include "core/synth/synth.h"
#include "gpu/safetensors/checkpoint_info.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/rewrite_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/rewrite_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/library/library_tree_model.h"
#include "views/library/sample_table_model.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/plan_views.h"
#include "views/studio_window.h"
#include "views/widgets/help_dialog.h"
#include "views/widgets/item_actions.h"
#include "views/widgets/roles.h"
#include "views/widgets/theme.h"
#include "views/widgets/wheel_guard.h"

#include <QAction>
#include <QApplication>
#include <QChartView>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QStyle>
#include <QSvgRenderer>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QTreeView>
#include <QTreeWidget>
#include <QUrl>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <set>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {
constexpr auto& q = test::qpath;

PlannerBudgets quickBudgets() {
    PlannerBudgets b;
    b.annealing.levels = 2;
    b.annealing.steps = 50;
    b.seeding.candidates = 2;
    b.seeding.population = 2;
    b.workers = 1;
    return b;
}

/// The texts of a menu's actions, separators left out.
QStringList actionTexts(const QMenu* menu) {
    QStringList out;
    if (!menu) return out;
    for (const QAction* a : menu->actions())
        if (!a->isSeparator()) out << a->text();
    return out;
}

QAction* actionNamed(const QMenu* menu, const QString& text) {
    if (!menu) return nullptr;
    for (QAction* a : menu->actions())
        if (a->text() == text) return a;
    return nullptr;
}

/// Answers the next modal dialog once it shows: a QMessageBox with `button` (its text kept in
/// *text), a QInputDialog with `value`.
void answerNextDialog(QMessageBox::StandardButton button, QString* text, const QString& value = {}) {
    QTimer::singleShot(0, [=] {
        QWidget* w = QApplication::activeModalWidget();
        if (auto* box = qobject_cast<QMessageBox*>(w)) {
            if (text) *text = box->text();
            box->button(button)->click();
        } else if (auto* in = qobject_cast<QInputDialog*>(w)) {
            in->setTextValue(value);
            in->accept();
        } else {
            QTimer::singleShot(20, [=] { answerNextDialog(button, text, value); });
        }
    });
}

/// Distinct colours of `image` (a real drawing has many; a blank one 1).
int colourCount(const QImage& image) {
    const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
    std::set<QRgb> seen;
    for (int y = 0; y < rgb.height(); ++y)
        for (int x = 0; x < rgb.width(); ++x)
            seen.insert(rgb.pixel(x, y));
    return static_cast<int>(seen.size());
}

/// Opens the context menu of `view`'s row `index` as a right click does.
QMenu* rowMenu(QAbstractItemView* view, const QModelIndex& index) {
    const QPoint at = view->visualRect(index).center();
    Q_EMIT view->customContextMenuRequested(at);
    return lastContextMenu(view);
}

/// Sends a drag carrying `paths` (file URLs, or `urls` as given) over `target` and drops it; returns
/// whether the drag was accepted.
bool dropOn(QWidget* target, const QList<QUrl>& urls) {
    QMimeData mime;
    mime.setUrls(urls);
    const QPoint at(target->width() / 2, target->height() / 2);
    QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &enter);
    if (!enter.isAccepted()) return false;
    QDropEvent drop(QPointF(at), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &drop);
    return drop.isAccepted();
}

} // namespace

class TestStudioBasics : public test::StudioTestBase {
    Q_OBJECT

    fs::path lib_;
    QPalette startPalette_;

    /// The studio on the library with its samples loaded, shown and active.
    void openStudio(StudioWindow& w, const fs::path& lib) {
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_VERIFY_WITH_TIMEOUT(loaded.count() >= 1, 30000);
        w.resize(1366, 768);
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
    }

    /// Runs the planner on the selected window; returns the saved run's id.
    qint64 plan(StudioWindow& w) {
        QSignalSpy shown(&w, &StudioWindow::planShown);
        ui::topologyEditor(w)->setBudgets(quickBudgets());
        if (w.runPlanner() == 0) return 0;
        if (!QTest::qWaitFor([&] { return shown.count() >= 1; }, 60000)) return 0;
        return shown.back().front().toLongLong();
    }

    /// "Save image…" of `chart` (its open context menu `menu`) as PNG and SVG, then of `heat`, the
    /// file question answered by the test hook: the files are the widgets as painted.
    void saveImagesOf(QChartView* chart, QMenu* menu, HeatmapWidget* heat) {
        QString title, filter;
        QString answer = q(tmp_ / "convergence.png"), answerFilter;
        setSaveFileAskerForTesting(
            [&](QWidget*, const QString& t, const QString&, const QString& f, QString* selected) {
                title = t;
                filter = f;
                if (!answerFilter.isEmpty()) *selected = answerFilter;
                return answer;
            });
        actionNamed(menu, QStringLiteral("Save image…"))->trigger();
        QCOMPARE(title, QStringLiteral("Save chart image"));
        QCOMPARE(filter, QStringLiteral("PNG image (*.png);;SVG drawing (*.svg)"));
        const QImage png(answer);
        QVERIFY(!png.isNull());
        QCOMPARE(png.size(), chart->size()); // offscreen: device pixel ratio 1
        QCOMPARE(png.convertToFormat(QImage::Format_RGB32),
                 chart->grab().toImage().convertToFormat(QImage::Format_RGB32));
        QVERIFY2(colourCount(png) >= 16, qPrintable(QString::number(colourCount(png))));
        // A name without a suffix gets the chosen filter's: the SVG, at the chart's logical size.
        answer = q(tmp_ / "convergence");
        answerFilter = QStringLiteral("SVG drawing (*.svg)");
        actionNamed(menu, QStringLiteral("Save image…"))->trigger();
        QSvgRenderer svg(answer + QStringLiteral(".svg"));
        QVERIFY(svg.isValid());
        QCOMPARE(svg.viewBox(), QRect(QPoint(0, 0), chart->size())); // the logical size
        QImage drawn(chart->size(), QImage::Format_RGB32);
        drawn.fill(Qt::white);
        {
            QPainter p(&drawn);
            svg.render(&p);
        }
        QVERIFY2(colourCount(drawn) >= 16, qPrintable(QString::number(colourCount(drawn))));
        QVERIFY(!fs::exists(tmp_ / "convergence")); // no file without the suffix
        // The heatmap's Save image… goes the same way.
        answer = q(tmp_ / "heatmap.png");
        answerFilter.clear();
        const QPoint cell = heat->cellRect(0, 0).center();
        QContextMenuEvent ev(QContextMenuEvent::Mouse, cell, heat->mapToGlobal(cell));
        QApplication::sendEvent(heat, &ev);
        actionNamed(lastContextMenu(heat), QStringLiteral("Save image…"))->trigger();
        QCOMPARE(title, QStringLiteral("Save heatmap image"));
        const QImage heatPng(answer);
        QCOMPARE(heatPng.convertToFormat(QImage::Format_RGB32),
                 heat->grab().toImage().convertToFormat(QImage::Format_RGB32));
        QVERIFY(colourCount(heatPng) >= 8);
        // Cancelled (an empty answer): nothing is written.
        answer.clear();
        title.clear();
        Q_EMIT chart->customContextMenuRequested(QPoint(10, 10));
        actionNamed(lastContextMenu(chart), QStringLiteral("Save image…"))->trigger();
        QCOMPARE(title, QStringLiteral("Save chart image"));
        setSaveFileAskerForTesting({});
    }

private Q_SLOTS:
    void initTestCase() {
        initStudioTest(QStringLiteral("tst_studio_basics"), QStringLiteral("studio-basics"));
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, q(tmp_ / "settings"));
        startPalette_ = QApplication::palette();
        // Trace "syn" (8 samples) with windows "all" and "half" (the first 4).
        lib_ = test::synth_library(tmp_ / "lib", 2, 4);
        auto lib = storage::Library::open(lib_);
        std::vector<std::string> ids;
        for (const auto& s : lib->samples("syn"))
            ids.push_back(s.id);
        lib->create_window("syn", "half", std::vector<std::string>(ids.begin(), ids.begin() + 4), "first 4");
    }

    void cleanupTestCase() {
        clearStudioSettings();
        QApplication::setPalette(startPalette_);
    }

    void deleteAndRenameFromTheTree() {
        const fs::path file = tmp_ / "edit.routepack";
        fs::copy_file(lib_, file);
        StudioWindow w(options_);
        openStudio(w, file);
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        const qint64 run = plan(w);
        QVERIFY(run > 0);
        QTreeView* tree = ui::libraryView(w);
        LibraryTreeModel* model = ui::libraryModel(w);

        // The menu of each kind of node.
        QCOMPARE(actionTexts(rowMenu(tree, model->traceIndex(QStringLiteral("syn")))),
                 (QStringList{QStringLiteral("Copy"), QStringLiteral("Copy all rows"), QStringLiteral("Rename trace…"),
                              QStringLiteral("Delete trace…")}));
        QCOMPARE(actionTexts(rowMenu(tree, model->runIndex(run))),
                 (QStringList{QStringLiteral("Copy"), QStringLiteral("Copy all rows"), QStringLiteral("Rename run…"),
                              QStringLiteral("Delete run…")}));
        QMenu* menu = rowMenu(tree, model->windowIndex(QStringLiteral("syn"), QStringLiteral("all")));
        QCOMPARE(actionTexts(menu), (QStringList{QStringLiteral("Copy"), QStringLiteral("Copy all rows"),
                                                 QStringLiteral("Rename window…"), QStringLiteral("Delete window…")}));
        // The right click selected the row it was on.
        QCOMPARE(tree->currentIndex().data(WindowRole).toString(), QStringLiteral("all"));

        // Rename the window through the menu and its input dialog: the saved plan follows.
        answerNextDialog(QMessageBox::Ok, nullptr, QStringLiteral("step-0"));
        actionNamed(menu, QStringLiteral("Rename window…"))->trigger();
        QCOMPARE(w.statusText(),
                 QStringLiteral("Window all of trace syn renamed to step-0 (its saved plans name it so too)."));
        QVERIFY(!model->windowIndex(QStringLiteral("syn"), QStringLiteral("all")).isValid());
        QCOMPARE(tree->currentIndex().data(WindowRole).toString(), QStringLiteral("step-0"));
        {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
            QCOMPARE(parse_plan(lib->run_plan_json(run), "run").window_name, std::string("step-0"));
        }
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.selectRun(run));
        QTRY_VERIFY_WITH_TIMEOUT(ui::planView(w)->plan() != nullptr, 30000);
        QCOMPARE(ui::planView(w)->plan()->window_name, std::string("step-0"));

        // While a job runs nothing may change.
        ui::topologyEditor(w)->setBudgets(quickBudgets());
        QVERIFY(w.runPlanner() > 0);
        QVERIFY(!ui::libraryPane(w)->deleteTrace(QStringLiteral("syn"), false));
        QCOMPARE(w.statusText(), QStringLiteral("A job is running: wait for it or cancel it (Esc) before you delete "
                                                "trace syn."));
        QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 60000);
        const auto runs = ui::libraryModel(w)->snapshot().runs;
        QCOMPARE(runs.size(), std::size_t(2));
        const qint64 second = runs.back().id;

        // Delete a run: No keeps it, Yes removes it with its plan.
        QString question;
        menu = rowMenu(tree, model->runIndex(run));
        answerNextDialog(QMessageBox::No, &question);
        actionNamed(menu, QStringLiteral("Delete run…"))->trigger();
        QCOMPARE(question,
                 QStringLiteral(
                     "Delete run %1 of syn/step-0 (finished) with its plan? Edit > Undo delete brings it back while "
                     "this library is open.")
                     .arg(run));
        QVERIFY(model->runIndex(run).isValid());
        menu = rowMenu(tree, model->runIndex(run));
        answerNextDialog(QMessageBox::Yes, &question);
        actionNamed(menu, QStringLiteral("Delete run…"))->trigger();
        // The deletion is a background job: when the call returns it is still active (its end is
        // delivered on this thread), the tree unchanged, the status bar busy; edits and planning wait.
        const std::vector<quint64> deleting = ui::deletionJobs(w)->runningJobs();
        QCOMPARE(deleting.size(), std::size_t(1));
        QVERIFY(ui::deletionJobs(w)->isActive(deleting.front()));
        QVERIFY(model->runIndex(run).isValid());
        QCOMPARE(w.statusText(), QStringLiteral("Deleting run %1…").arg(run));
        auto* busy = w.statusBar()->findChild<QProgressBar*>();
        QVERIFY(busy && busy->isVisible() && busy->maximum() == 0);
        QCOMPARE(ui::libraryPane(w)->renameRun(second, QStringLiteral("x")), false);
        QCOMPARE(w.statusText(),
                 QStringLiteral("A deletion is running: wait for it before you rename run %1.").arg(second));
        QCOMPARE(ui::libraryPane(w)->deleteTrace(QStringLiteral("syn"), false), quint64(0));
        QCOMPARE(w.runPlanner(), quint64(0));
        QCOMPARE(w.statusText(), QStringLiteral("A deletion is running: wait for it before you plan."));
        QTRY_VERIFY_WITH_TIMEOUT(!ui::deletionJobs(w)->isActive(deleting.front()), 30000);
        QVERIFY2(!model->runIndex(run).isValid(), qPrintable(w.statusText()));
        QVERIFY(model->runIndex(second).isValid());
        QVERIFY(!busy->isVisible());
        QCOMPARE(w.statusText(), QStringLiteral("Deleted run %1 of syn/step-0.").arg(run));
        {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
            QCOMPARE(lib->runs("syn", "step-0").size(), std::size_t(1));
            QCOMPARE(lib->runs("syn", "step-0").front().id, second);
            QCOMPARE(q(test::error_of<InputError>([&] { lib->run(run); })),
                     QStringLiteral("no run %1 in %2").arg(run).arg(q(file)));
        }
        const auto deleted = [&](quint64 job) {
            return job > 0 && QTest::qWaitFor([&] { return !ui::deletionJobs(w)->isActive(job); }, 30000);
        };

        // Delete the other window without a question; then the trace, whose question names what goes.
        QVERIFY(deleted(ui::libraryPane(w)->deleteWindow(QStringLiteral("syn"), QStringLiteral("half"), false)));
        QCOMPARE(w.statusText(), QStringLiteral("Deleted window half of trace syn with nothing else."));
        QVERIFY(ui::libraryPane(w)->renameTrace(QStringLiteral("syn"), QStringLiteral("syn-b")));
        QCOMPARE(w.statusText(), QStringLiteral("Trace syn renamed to syn-b (its saved plans name it so too)."));
        menu = rowMenu(tree, model->traceIndex(QStringLiteral("syn-b")));
        answerNextDialog(QMessageBox::Yes, &question);
        actionNamed(menu, QStringLiteral("Delete trace…"))->trigger();
        const std::vector<quint64> traceJob = ui::deletionJobs(w)->runningJobs();
        QCOMPARE(traceJob.size(), std::size_t(1));
        QVERIFY(deleted(traceJob.front()));
        QCOMPARE(question, QStringLiteral("Delete trace syn-b from edit.routepack with 1 window, 1 saved run, 8 "
                                          "samples? Edit > Undo delete brings it back while this library is open."));
        QCOMPARE(w.statusText(), QStringLiteral("Deleted trace syn-b with 1 window, 1 saved run, 8 samples."));
        QCOMPARE(model->rowCount(), 0);
        QVERIFY(ui::planView(w)->plan() == nullptr);
        QVERIFY(storage::Library::open(file, storage::OpenMode::ReadOnly)->traces().empty());
        shot(&w, QStringLiteral("basics-after-delete"));

        // Undo, newest first: Ctrl+Alt+Z brings the trace back with its window and run, then the
        // window "half", then the run deleted first, each read back into the tree.
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        QAction* undo = w.findChild<QAction*>(QStringLiteral("undoDelete"));
        QVERIFY(undo && undo->isEnabled());
        QCOMPARE(ui::libraryPane(w)->deletedItems(),
                 QStringList({QStringLiteral("run %1").arg(run), QStringLiteral("window half"),
                              QStringLiteral("trace syn-b")}));
        QCOMPARE(undo->text(), QStringLiteral("&Undo delete of trace syn-b"));
        const auto undone = [&] {
            QTest::keyClick(&w, Qt::Key_Z, Qt::ControlModifier | Qt::AltModifier);
            const std::vector<quint64> job = ui::deletionJobs(w)->runningJobs();
            return job.size() == 1 && deleted(job.front());
        };
        QVERIFY2(undone(), qPrintable(w.statusText()));
        QCOMPARE(w.statusText(), QStringLiteral("Restored trace 'syn-b'."));
        QTRY_VERIFY_WITH_TIMEOUT(model->traceIndex(QStringLiteral("syn-b")).isValid(), 30000);
        QVERIFY(undone());
        QCOMPARE(w.statusText(), QStringLiteral("Restored window 'half' of trace 'syn'."));
        QVERIFY(undone());
        QCOMPARE(w.statusText(), QStringLiteral("Restored run %1.").arg(run));
        QTRY_VERIFY_WITH_TIMEOUT(model->runIndex(run).isValid(), 30000);
        QVERIFY(!undo->isEnabled());
        {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
            QCOMPARE(lib->runs("syn-b", "step-0").size(), std::size_t(2));
            QCOMPARE(lib->windows("syn-b").size(), std::size_t(2));
            QCOMPARE(parse_plan(lib->run_plan_json(run), "run").window_name, std::string("step-0"));
        }
        QCOMPARE(undo->text(), QStringLiteral("&Undo delete"));
        QCOMPARE(ui::libraryPane(w)->undoDelete(), quint64(0));
        QCOMPARE(w.statusText(), QStringLiteral("Nothing to undo: no deletion of this library is kept."));
    }

    void renameRunByF2AndMenu() {
        const fs::path file = tmp_ / "rename-run.routepack";
        fs::copy_file(lib_, file);
        StudioWindow w(options_);
        openStudio(w, file);
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        const qint64 run = plan(w);
        QVERIFY(run > 0);
        QTreeView* tree = ui::libraryView(w);
        LibraryTreeModel* model = ui::libraryModel(w);
        QCOMPARE(model->runIndex(run).data().toString(), QStringLiteral("run %1").arg(run));
        {
            const QSignalBlocker block(tree->selectionModel()); // the plan shown stays as it is
            tree->setCurrentIndex(model->runIndex(run));
        }
        tree->setFocus();
        // F2 on the run asks for its name; the answer is trimmed.
        answerNextDialog(QMessageBox::Ok, nullptr, QStringLiteral("  long anneal  "));
        QTest::keyClick(tree, Qt::Key_F2);
        QCOMPARE(w.statusText(), QStringLiteral("Run %1 renamed to long anneal.").arg(run));
        const QString label = QStringLiteral("run %1 \u00b7 long anneal").arg(run);
        QCOMPARE(model->runIndex(run).data().toString(), label);
        QCOMPARE(tree->currentIndex(), model->runIndex(run)); // still selected
        QVERIFY(ui::planView(w)->plan() != nullptr);
        // The Compare tab's run column (its legend) carries the name after the id.
        auto* compare = ui::compareView(w)->findChild<QTableView*>();
        QVERIFY(compare && compare->model()->rowCount() >= 4);
        const QString compared = compare->model()->index(0, 0).data().toString();
        QVERIFY2(compared.startsWith(label + QStringLiteral(" \u00b7 EP")), qPrintable(compared));
        // The context menu renames too; a name the library refuses is reported with the field's label.
        QMenu* menu = rowMenu(tree, model->runIndex(run));
        QCOMPARE(actionTexts(menu), (QStringList{QStringLiteral("Copy"), QStringLiteral("Copy all rows"),
                                                 QStringLiteral("Rename run…"), QStringLiteral("Delete run…")}));
        answerNextDialog(QMessageBox::Ok, nullptr, QString(81, QLatin1Char('x')));
        actionNamed(menu, QStringLiteral("Rename run…"))->trigger();
        QCOMPARE(w.statusText(),
                 QStringLiteral("Cannot rename run %1: \"Run name\" is 81 characters long, more than 80").arg(run));
        QCOMPARE(model->runIndex(run).data().toString(), label);
        menu = rowMenu(tree, model->runIndex(run));
        answerNextDialog(QMessageBox::Ok, nullptr, QStringLiteral("seed 1 check"));
        actionNamed(menu, QStringLiteral("Rename run…"))->trigger();
        QCOMPARE(model->runIndex(run).data().toString(), QStringLiteral("run %1 \u00b7 seed 1 check").arg(run));
        QVERIFY(compare->model()->index(0, 0).data().toString().startsWith(
            QStringLiteral("run %1 \u00b7 seed 1 check \u00b7 EP").arg(run)));
        QCOMPARE(storage::Library::open(file, storage::OpenMode::ReadOnly)->run(run).name, std::string("seed 1 check"));
        shot(&w, QStringLiteral("basics-renamed-run"));
    }

    void ctrlCAndContextMenusCopy() {
        const fs::path file = tmp_ / "copy.routepack";
        fs::copy_file(lib_, file);
        StudioWindow w(options_);
        openStudio(w, file);
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        QTRY_COMPARE_WITH_TIMEOUT(ui::sampleModel(w)->rowCount(), 8, 30000);
        QVERIFY(plan(w) > 0);

        // Rows 0 and 2 of the sample table, Ctrl+C: the header line, then the two rows as shown.
        QTableView* table = ui::sampleView(w);
        table->selectionModel()->clearSelection();
        const QAbstractItemModel* m = table->model();
        for (int r : {0, 2})
            table->selectionModel()->select(m->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
        table->setFocus();
        QApplication::clipboard()->clear();
        QTest::keyClick(table, Qt::Key_C, Qt::ControlModifier);
        QStringList expected;
        QStringList head;
        for (int c = 0; c < m->columnCount(); ++c)
            if (!table->isColumnHidden(c)) head << m->headerData(c, Qt::Horizontal).toString();
        expected << head.join(QLatin1Char('\t'));
        for (int r : {0, 2}) {
            QStringList cells;
            for (int c = 0; c < m->columnCount(); ++c)
                if (!table->isColumnHidden(c)) cells << m->index(r, c).data().toString();
            expected << cells.join(QLatin1Char('\t'));
        }
        const QString copied = QApplication::clipboard()->text();
        QCOMPARE(copied, expected.join(QLatin1Char('\n')) + QLatin1Char('\n'));
        QCOMPARE(head.size(), 8);
        QVERIFY2(copied.startsWith(QStringLiteral("Sample\tLength t_i\tRouted rows\t")), qPrintable(copied.left(80)));
        QCOMPARE(copied.count(QLatin1Char('\n')), 3);

        // The table's menu: Copy, Copy all rows (9 lines), the CSV export.
        QMenu* menu = rowMenu(table, m->index(1, 0));
        QCOMPARE(actionTexts(menu), (QStringList{QStringLiteral("Copy"), QStringLiteral("Copy all rows"),
                                                 QStringLiteral("Export the sample table (CSV)…")}));
        actionNamed(menu, QStringLiteral("Copy all rows"))->trigger();
        QCOMPARE(QApplication::clipboard()->text().count(QLatin1Char('\n')), 9);

        // The comparison table has the same menu with its export.
        auto* compare = ui::compareView(w)->findChild<QTableView*>();
        QVERIFY(compare && compare->model()->rowCount() >= 4);
        QCOMPARE(actionTexts(rowMenu(compare, compare->model()->index(0, 0))),
                 (QStringList{QStringLiteral("Copy"), QStringLiteral("Copy all rows"),
                              QStringLiteral("Export the comparison (CSV)…")}));

        // A heatmap: the selected cell's tooltip, as plain text, by Ctrl+C and by its context menu.
        ui::planView(w)->setCurrentIndex(0);
        auto* heat = ui::planView(w)->widget(0)->findChildren<HeatmapWidget*>().value(1);
        QVERIFY(heat && heat->rowCount() > 0);
        const int lastRow = heat->rowCount() - 1, lastCol = heat->columnCount() - 1;
        heat->setSelection(lastRow, lastCol);
        heat->setFocus();
        QApplication::clipboard()->clear();
        QTest::keyClick(heat, Qt::Key_C, Qt::ControlModifier);
        const QString tip = toolTipPlainText(heat->toolTipFor(lastRow, lastCol));
        QVERIFY(!tip.isEmpty() && !tip.contains(QLatin1Char('<')));
        QCOMPARE(QApplication::clipboard()->text(), tip);
        const QPoint cell = heat->cellRect(0, 0).center();
        QContextMenuEvent ev(QContextMenuEvent::Mouse, cell, heat->mapToGlobal(cell));
        QApplication::sendEvent(heat, &ev);
        menu = lastContextMenu(heat);
        QCOMPARE(actionTexts(menu), (QStringList{QStringLiteral("Copy cell details"), QStringLiteral("Copy image"),
                                                 QStringLiteral("Save image…")}));
        actionNamed(menu, QStringLiteral("Copy cell details"))->trigger();
        QCOMPARE(QApplication::clipboard()->text(), toolTipPlainText(heat->toolTipFor(0, 0)));
        QVERIFY(QApplication::clipboard()->text() != tip);
        actionNamed(menu, QStringLiteral("Copy image"))->trigger();
        QCOMPARE(QApplication::clipboard()->image().size(), heat->grab().size());

        // A chart (the convergence tab): Copy image puts the chart as painted on the clipboard.
        ui::planView(w)->setCurrentIndex(4);
        auto* chart = ui::planView(w)->widget(4)->findChild<QChartView*>();
        QVERIFY(chart);
        Q_EMIT chart->customContextMenuRequested(QPoint(10, 10));
        menu = lastContextMenu(chart);
        QCOMPARE(actionTexts(menu), (QStringList{QStringLiteral("Copy image"), QStringLiteral("Save image…")}));
        QApplication::clipboard()->clear();
        actionNamed(menu, QStringLiteral("Copy image"))->trigger();
        QCOMPARE(QApplication::clipboard()->image().size(), chart->grab().size());
        saveImagesOf(chart, menu, heat);

        // The library tree: Ctrl+C copies the selected rows with the tree's header.
        QTreeView* tree = ui::libraryView(w);
        tree->selectionModel()->setCurrentIndex(
            ui::libraryModel(w)->windowIndex(QStringLiteral("syn"), QStringLiteral("half")),
            QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        tree->setFocus();
        QTest::keyClick(tree, Qt::Key_C, Qt::ControlModifier);
        QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("Library\tDetails\nhalf\t4 samples\n"));
    }

    /// The window opens with the keyboard in the sample table's filter line (the centre's first
    /// field), whatever pane was built first; Ctrl+F then moves it to the library's filter.
    void keyboardStartsInTheSampleFilter() {
        StudioWindow w(options_);
        openStudio(w, lib_);
        auto* sampleFilter = ui::samplePane(w)->findChild<QLineEdit*>();
        QVERIFY(sampleFilter);
        QCOMPARE(sampleFilter->placeholderText(), QStringLiteral("Filter samples by id or group"));
        QCOMPARE(QApplication::focusWidget(), sampleFilter);
        QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
        QCOMPARE(QApplication::focusWidget(), ui::libraryFilter(w));
        // Ctrl+E in the sample filter is the window's File > Export > what is shown (the sample table
        // here), not the line's move to its end; Ctrl+A stays the line's.
        sampleFilter->setFocus();
        QString asked;
        setSaveFileAskerForTesting([&](QWidget*, const QString& title, const QString&, const QString&, QString*) {
            asked = title;
            return QString();
        });
        QTest::keyClick(sampleFilter, Qt::Key_E, Qt::ControlModifier);
        setSaveFileAskerForTesting({});
        QCOMPARE(asked, QStringLiteral("Export samples"));
        sampleFilter->setText(QStringLiteral("abc"));
        QTest::keyClick(sampleFilter, Qt::Key_A, Qt::ControlModifier);
        QCOMPARE(sampleFilter->selectedText(), QStringLiteral("abc"));
    }

    void windowShortcutsWinInTextFields() {
        // A window action on Ctrl+Left, which a line edit binds on every platform (previous word, as
        // X11 binds Ctrl+E to the end of the line): the window's action runs, the field does not move;
        // the standard editing keys stay the field's.
        installInputGuards();
        QMainWindow win;
        auto* edit = new QLineEdit(&win);
        win.setCentralWidget(edit);
        auto* action = new QAction(&win);
        action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Left));
        win.addAction(action);
        auto* selectAll = new QAction(&win);
        selectAll->setShortcut(QKeySequence::SelectAll);
        win.addAction(selectAll);
        QSignalSpy fired(action, &QAction::triggered), allFired(selectAll, &QAction::triggered);
        win.show();
        QVERIFY(QTest::qWaitForWindowExposed(&win));
        edit->setFocus();
        edit->setText(QStringLiteral("one two"));
        QTest::keyClick(edit, Qt::Key_Left, Qt::ControlModifier);
        QCOMPARE(fired.count(), 1);
        QCOMPARE(edit->cursorPosition(), 7);
        QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
        QCOMPARE(allFired.count(), 0);
        QCOMPARE(edit->selectedText(), QStringLiteral("one two"));
        // A disabled action leaves the key to the field.
        action->setEnabled(false);
        edit->setCursorPosition(7);
        QTest::keyClick(edit, Qt::Key_Left, Qt::ControlModifier);
        QCOMPARE(edit->cursorPosition(), 4);
    }

    void libraryFilter() {
        StudioWindow w(options_);
        openStudio(w, lib_);
        QTreeView* tree = ui::libraryView(w);
        LibraryTreeModel* model = ui::libraryModel(w);
        const QModelIndex trace = model->traceIndex(QStringLiteral("syn"));
        const QModelIndex all = model->windowIndex(QStringLiteral("syn"), QStringLiteral("all"));
        const QModelIndex half = model->windowIndex(QStringLiteral("syn"), QStringLiteral("half"));
        // Ctrl+F goes to the filter line.
        QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
        QCOMPARE(QApplication::focusWidget(), ui::libraryFilter(w));
        QTest::keyClicks(ui::libraryFilter(w), QStringLiteral("HAL"));
        QVERIFY(!tree->isRowHidden(trace.row(), {}));
        QVERIFY(tree->isRowHidden(all.row(), trace));
        QVERIFY(!tree->isRowHidden(half.row(), trace));
        // A trace that matches keeps its windows; a text nothing has hides everything.
        ui::libraryFilter(w)->setText(QStringLiteral("vllm"));
        QVERIFY(!tree->isRowHidden(all.row(), trace) && !tree->isRowHidden(half.row(), trace));
        QCOMPARE(applyTreeFilter(tree, QStringLiteral("4 samples")), 2); // the trace and "half"
        ui::libraryFilter(w)->setText(QStringLiteral("zzz"));
        QVERIFY(tree->isRowHidden(trace.row(), {}));
        // Esc in the filter line clears it: everything is back.
        ui::libraryFilter(w)->setFocus();
        QTest::keyClick(ui::libraryFilter(w), Qt::Key_Escape);
        QCOMPARE(ui::libraryFilter(w)->text(), QString());
        QVERIFY(!tree->isRowHidden(trace.row(), {}) && !tree->isRowHidden(all.row(), trace) &&
                !tree->isRowHidden(half.row(), trace));
        // What the filter hides leaves the selection (Plan > Plan run plans only shown windows), and
        // F2 does not rename the hidden current row.
        tree->selectionModel()->select(all, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        tree->selectionModel()->select(half, QItemSelectionModel::Select | QItemSelectionModel::Rows);
        {
            const QSignalBlocker block(tree->selectionModel());
            tree->selectionModel()->setCurrentIndex(all, QItemSelectionModel::NoUpdate);
        }
        QCOMPARE(ui::libraryPane(w)->selectedRows().size(), 2);
        ui::libraryFilter(w)->setText(QStringLiteral("HAL"));
        QCOMPARE(ui::libraryPane(w)->selectedRows(), QModelIndexList{half});
        tree->setFocus();
        QTest::keyClick(tree, Qt::Key_F2); // no question is asked: the test would hang on a dialog
        QCOMPARE(
            w.statusText(),
            QStringLiteral("The selected row is hidden by the filter: clear the filter (Esc) or select a shown row."));
        QCOMPARE(model->windowIndex(QStringLiteral("syn"), QStringLiteral("all")).data().toString(),
                 QStringLiteral("all"));
        // The filter stays applied when the tree is read again.
        ui::libraryFilter(w)->setText(QStringLiteral("half"));
        w.refreshLibrary();
        QVERIFY(tree->isRowHidden(model->windowIndex(QStringLiteral("syn"), QStringLiteral("all")).row(),
                                  model->traceIndex(QStringLiteral("syn"))));
    }

    void recentLibraries() {
        QSettings(options_.settingsOrganization, options_.settingsApplication).remove(QStringLiteral("library/recent"));
        std::vector<QString> files;
        for (const char* n : {"a", "b", "c"}) {
            const fs::path f = tmp_ / "recent" / (std::string(n) + ".routepack");
            fs::create_directories(f.parent_path());
            storage::Library::open(f, storage::OpenMode::Create);
            files.push_back(q(fs::absolute(f)));
        }
        {
            StudioWindow w(options_);
            for (const QString& f : files)
                QVERIFY(w.openLibrary(f));
            QVERIFY(w.openLibrary(files[1])); // again: to the top, once
            QCOMPARE(ui::libraryPane(w)->recentLibraries(), (QStringList{files[1], files[2], files[0]}));
            Q_EMIT ui::recentMenu(w)->aboutToShow();
            const QString dir = QFileInfo(files[0]).absolutePath();
            QCOMPARE(actionTexts(ui::recentMenu(w)),
                     (QStringList{QStringLiteral("&1 b.routepack — ") + dir, QStringLiteral("&2 c.routepack — ") + dir,
                                  QStringLiteral("&3 a.routepack — ") + dir, QStringLiteral("Clear the list")}));
            // A file that is gone drops off the list and out of the settings.
            fs::remove(files[2].toStdString());
            Q_EMIT ui::recentMenu(w)->aboutToShow();
            QCOMPARE(actionTexts(ui::recentMenu(w)).size(), 3);
            QCOMPARE(QSettings(options_.settingsOrganization, options_.settingsApplication)
                         .value(QStringLiteral("library/recent"))
                         .toStringList(),
                     (QStringList{files[1], files[0]}));
            // Choosing an entry opens that library.
            actionNamed(ui::recentMenu(w), QStringLiteral("&2 a.routepack — ") + dir)->trigger();
            QCOMPARE(w.libraryPath(), files[0]);
        }
        // The next window remembers.
        StudioWindow again(options_);
        QCOMPARE(ui::libraryPane(again)->recentLibraries(), (QStringList{files[0], files[1]}));
        actionNamed(ui::recentMenu(again), QStringLiteral("Clear the list"))->trigger();
        QVERIFY(ui::libraryPane(again)->recentLibraries().isEmpty());
        QCOMPARE(actionTexts(ui::recentMenu(again)),
                 (QStringList{QStringLiteral("(no library opened yet)"), QStringLiteral("Clear the list")}));
    }

    void themeIsKeptAcrossWindows() {
        QSettings s(options_.settingsOrganization, options_.settingsApplication);
        s.remove(QStringLiteral("view/theme"));
        const QColor darkWindow(0x2d, 0x2d, 0x30);
        QApplication::setPalette(lightThemePalette());
        {
            StudioWindow w(options_);
            QCOMPARE(w.theme(), Theme::Light);
            QCOMPARE(QApplication::palette().color(QPalette::Window), lightThemePalette().color(QPalette::Window));
            auto* dark = w.menuBar()->findChild<QAction*>(QStringLiteral("theme-dark"));
            QVERIFY(dark);
            dark->trigger();
            QCOMPARE(w.theme(), Theme::Dark);
            QVERIFY(dark->isChecked());
            QCOMPARE(QApplication::palette().color(QPalette::Window), darkWindow);
            QCOMPARE(QApplication::palette().color(QPalette::Text), QColor(0xe6, 0xe6, 0xe6));
            QCOMPARE(QApplication::style()->name().toLower(), QStringLiteral("fusion"));
            openStudio(w, lib_);
            // The window's widgets follow.
            QTRY_COMPARE(ui::libraryView(w)->palette().color(QPalette::Base), QColor(0x1e, 0x1e, 0x1e));
            shot(&w, QStringLiteral("basics-dark"));
        }
        QCOMPARE(QSettings(options_.settingsOrganization, options_.settingsApplication)
                     .value(QStringLiteral("view/theme"))
                     .toString(),
                 QStringLiteral("dark"));
        // The next start comes up dark, and Light goes back to Fusion's palette.
        QApplication::setPalette(lightThemePalette());
        StudioWindow again(options_);
        QCOMPARE(again.theme(), Theme::Dark);
        QCOMPARE(QApplication::palette().color(QPalette::Window), darkWindow);
        QVERIFY(again.menuBar()->findChild<QAction*>(QStringLiteral("theme-dark"))->isChecked());
        again.menuBar()->findChild<QAction*>(QStringLiteral("theme-light"))->trigger();
        QCOMPARE(QApplication::palette().color(QPalette::Window), lightThemePalette().color(QPalette::Window));
        QVERIFY(lightThemePalette().color(QPalette::Window) != darkWindow);
        QCOMPARE(again.statusText(), QStringLiteral("Light theme (kept for the next start)."));
        s.remove(QStringLiteral("view/theme"));
        QApplication::setPalette(startPalette_);
    }

    void helpExplainsEveryView() {
        StudioWindow w(options_);
        auto* guide = w.menuBar()->findChild<QAction*>(QStringLiteral("viewsGuide"));
        QVERIFY(guide);
        guide->trigger();
        auto* browser = w.findChild<QTextBrowser*>(QStringLiteral("viewsGuideText"));
        QVERIFY(browser && browser->isVisible());
        QFile f(QStringLiteral(":/docs/studio-views.md"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString md = QString::fromUtf8(f.readAll());
        // Every tab and dock of the window has its heading, so a new view cannot go unexplained.
        QStringList titles;
        for (int t = 0; t < ui::resultTabs(w)->count(); ++t)
            titles << QStringLiteral("## ") + ui::resultTabs(w)->tabText(t).remove(QLatin1Char('&'));
        for (int t = 0; t < ui::planView(w)->count(); ++t)
            titles << QStringLiteral("### ") + ui::planView(w)->tabText(t).remove(QLatin1Char('&'));
        titles << QStringLiteral("## Library") << QStringLiteral("## Topology and budgets")
               << QStringLiteral("## Jobs");
        QCOMPARE(titles.size(), 14);
        for (const QString& t : titles)
            QVERIFY2(md.contains(QLatin1Char('\n') + t + QLatin1Char('\n')), qPrintable(t));
        // Shown as rendered Markdown: the headings' text without their #.
        const QString shown = browser->toPlainText();
        QVERIFY(shown.startsWith(QStringLiteral("RoutePack Studio: a guide to the views")));
        QVERIFY(shown.contains(QStringLiteral("\nExecution grid\n")));
        QVERIFY(!shown.contains(QStringLiteral("### ")));
        // The keyboard shortcuts stay in the Help menu.
        QVERIFY(w.shortcutsText().contains(QStringLiteral("Edit > Find in the library: Ctrl+F")));
        // The contents are the guide's headings (from the file: "#" lines, indented by level), in order.
        auto* help = qobject_cast<HelpDialog*>(browser->window());
        QVERIFY(help);
        QStringList headings;
        for (const QString& line : md.split(QLatin1Char('\n'))) {
            const qsizetype level = line.indexOf(QStringLiteral("# ")) + 1;
            if (level >= 1 && level <= 3 && line.left(level) == QString(level, QLatin1Char('#')))
                headings << QString(2 * (level - 1), QLatin1Char(' ')) + line.mid(level + 1);
        }
        QCOMPARE(headings.size(), 19);
        QCOMPARE(help->contents(), headings);
        // A click on "Run" in the contents scrolls the text there.
        auto* contents = help->findChild<QTreeWidget*>(QStringLiteral("helpContents"));
        QVERIFY(contents);
        QTreeWidgetItem* runItem =
            contents->findItems(QStringLiteral("Run"), Qt::MatchExactly | Qt::MatchRecursive).value(0);
        QVERIFY(runItem);
        help->show();
        QVERIFY(QTest::qWaitForWindowExposed(help));
        contents->scrollToItem(runItem);
        QTest::mouseClick(contents->viewport(), Qt::LeftButton, Qt::NoModifier,
                          contents->visualItemRect(runItem).center());
        QCOMPARE(help->currentSection(), QStringLiteral("Run"));
        QVERIFY(browser->viewport()->rect().contains(browser->cursorRect().center()));
        // Search by keys: every case-insensitive match of the plain text counted, Enter steps on,
        // Shift+Enter back, the selection is the match.
        auto* search = help->findChild<QLineEdit*>(QStringLiteral("helpSearch"));
        QVERIFY(search);
        search->setFocus();
        QTest::keyClicks(search, QStringLiteral("placement"));
        const qsizetype n = browser->toPlainText().count(QStringLiteral("placement"), Qt::CaseInsensitive);
        QVERIFY(n >= 2);
        const QString first = help->matchText();
        QVERIFY2(first.endsWith(QStringLiteral(" of %1 matches").arg(n)), qPrintable(first));
        QCOMPARE(browser->textCursor().selectedText().toLower(), QStringLiteral("placement"));
        const int at = browser->textCursor().selectionStart();
        QTest::keyClick(search, Qt::Key_Return);
        QVERIFY(browser->textCursor().selectionStart() != at);
        QCOMPARE(browser->textCursor().selectedText().toLower(), QStringLiteral("placement"));
        QTest::keyClick(search, Qt::Key_Return, Qt::ShiftModifier);
        QCOMPARE(browser->textCursor().selectionStart(), at);
        QCOMPARE(help->matchText(), first);
        QCOMPARE(browser->extraSelections().size(), n);
        search->selectAll();
        QTest::keyClicks(search, QStringLiteral("zqxj"));
        QCOMPARE(help->matchText(), QStringLiteral("no match"));
        QCOMPARE(help->findChild<QLabel*>(QStringLiteral("helpMatches"))->text(), QStringLiteral("no match"));
        QVERIFY(browser->extraSelections().isEmpty());
        search->selectAll();
        QTest::keyClicks(search, QStringLiteral("placement"));
        browser->window()->resize(900, 640);
        shot(browser->window(), QStringLiteral("basics-help"));
    }

    void libraryChangesAppearWithoutRestart() {
        // What another process stores (here another connection, as `routepack window` would) appears
        // in the tree by itself, the current node kept; File > Reload library (F5) reads it at once.
        const fs::path file = test::synth_library(tmp_ / "watched", 2, 2);
        StudioWindow w(options_);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openLibrary(q(file)));
        const QModelIndex all = ui::libraryModel(w)->windowIndex(QStringLiteral("syn"), QStringLiteral("all"));
        QVERIFY(all.isValid());
        ui::libraryView(w)->setCurrentIndex(all);
        std::vector<std::string> ids;
        {
            auto other = storage::Library::open(file);
            for (const auto& sample : other->samples("syn"))
                ids.push_back(sample.id);
            other->create_window("syn", "later", {ids[0], ids[1]}, "first 2");
        }
        QTRY_VERIFY_WITH_TIMEOUT(
            ui::libraryModel(w)->windowIndex(QStringLiteral("syn"), QStringLiteral("later")).isValid(), 10000);
        QCOMPARE(ui::libraryView(w)->currentIndex(),
                 ui::libraryModel(w)->windowIndex(QStringLiteral("syn"), QStringLiteral("all")));
        auto* reload = w.findChild<QAction*>(QStringLiteral("reloadLibrary"));
        QVERIFY(reload && reload->shortcut() == QKeySequence(QKeySequence::Refresh));
        storage::Library::open(file)->create_window("syn", "now", {ids[2]}, "one");
        reload->trigger();
        QVERIFY(ui::libraryModel(w)->windowIndex(QStringLiteral("syn"), QStringLiteral("now")).isValid());
        QCOMPARE(w.statusText(), QStringLiteral("Library %1 read again.").arg(q(file)));
    }

    void emptyLibraryTellsHowToFillIt() {
        // A new library says how to fill it; once another process imports a trace into it, the line
        // asks for a selection instead.
        const fs::path dir = tmp_ / "empty";
        fs::create_directories(dir);
        const fs::path file = dir / "new.routepack";
        storage::Library::open(file);
        StudioWindow w(options_);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openLibrary(q(file)));
        QCOMPARE(ui::samplePane(w)->headingText(),
                 QStringLiteral("This library holds no trace yet: import one with File > Import trace… (Ctrl+I), or "
                                "drop trace files or folders on the window."));
        SynthConfig c;
        c.groups = 1;
        c.group_size = 2;
        write_synth(c, TraceFormat::VLLM, dir / "syn");
        {
            auto other = storage::Library::open(file);
            ImportOptions o;
            o.model = synth_model(c);
            other->import_trace("syn", {dir / "syn"}, o);
        }
        w.findChild<QAction*>(QStringLiteral("reloadLibrary"))->trigger();
        QCOMPARE(ui::samplePane(w)->headingText(), QStringLiteral("Select a trace or a window in the library."));
    }

    void dropsGoToTheImportDialog() {
        const fs::path file = tmp_ / "drop.routepack";
        fs::copy_file(lib_, file);
        SynthConfig c;
        c.groups = 1;
        c.group_size = 2;
        write_synth(c, TraceFormat::VLLM, tmp_ / "drop-a");
        write_synth(c, TraceFormat::VLLM, tmp_ / "drop-b");
        StudioWindow w(options_);
        openStudio(w, file);
        // Not a local file: refused.
        QVERIFY(!dropOn(&w, {QUrl(QStringLiteral("https://example.com/trace.json"))}));
        QVERIFY(w.findChild<ImportDialog*>() == nullptr);
        // Trace files on the window: the import dialog opens with them.
        QVERIFY(dropOn(&w, {QUrl::fromLocalFile(q(tmp_ / "drop-a"))}));
        auto* dialog = w.findChild<ImportDialog*>();
        QVERIFY(dialog && dialog->isVisible());
        QCOMPARE(dialog->inputs(), QStringList{q(tmp_ / "drop-a")});
        // More on the dialog itself: added once.
        QVERIFY(dropOn(dialog, {QUrl::fromLocalFile(q(tmp_ / "drop-b")), QUrl::fromLocalFile(q(tmp_ / "drop-a"))}));
        QCOMPARE(dialog->inputs(), (QStringList{q(tmp_ / "drop-a"), q(tmp_ / "drop-b")}));
        QCOMPARE(dialog->traceName(), QStringLiteral("drop-a"));
        // A library file on the window opens it.
        const fs::path other = tmp_ / "dropped.routepack";
        fs::copy_file(lib_, other);
        QVERIFY(dropOn(&w, {QUrl::fromLocalFile(q(other))}));
        QCOMPARE(QFileInfo(w.libraryPath()).fileName(), QStringLiteral("dropped.routepack"));
    }

    void rewriteDialogNamesTheCheckpointsModel() {
        ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
        const fs::path src = root / "checkpoint";
        // A plan for deepseek-v2-lite's shape (64 experts, MoE layers 1-26 of 27).
        const ModelDescription ds = known_model("deepseek-v2-lite");
        nlohmann::ordered_json j = nlohmann::ordered_json::parse(test::plan_json_for_model(ds, 4));
        j["model"]["name"] = "deepseek-v2-lite";
        RewriteDialog d;
        QVERIFY(d.setPlanJson(QString::fromStdString(j.dump(2)), QStringLiteral("test plan")));
        ModelDescription tiny = ds;
        tiny.name = "tiny";
        tiny.experts = 16;
        tiny.moe_layers = {3, 4};
        d.setKnownPlans({{7, QStringLiteral("ds"), QStringLiteral("w"), ds},
                         {9, QStringLiteral("tiny"), QStringLiteral("all"), tiny}});
        d.show();
        QSignalSpy described(&d, &RewriteDialog::checkpointDescribed);
        d.setInput(q(src));
        QTRY_COMPARE_WITH_TIMEOUT(described.count(), 1, 30000);
        QVERIFY(ui::checkpointModel(&d).has_value());
        const gpu::CheckpointModel& ck = *ui::checkpointModel(&d);
        QCOMPARE(ck.name, std::string("qwen3_moe"));
        QCOMPARE(ck.experts, 16);
        QCOMPARE(ck.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(ck.num_hidden_layers, 3);
        QVERIFY(d.checkpointMismatch());
        const QString head = QStringLiteral(
            "The checkpoint is qwen3_moe: 16 experts (top-4) in MoE layers 1-2 of 3 decoder layers. The plan is for "
            "another model (deepseek-v2-lite: 64 experts (top-6) in MoE layers 1-26 of 27 decoder layers): this "
            "checkpoint cannot be rewritten with it.");
        const QString tail = QStringLiteral(
            " To try the rewrite with this plan, write a checkpoint shaped like the plan's model: routepack "
            "synth-checkpoint --model deepseek-v2-lite --out DIR, or the button below; then choose DIR as the input.");
        QCOMPARE(d.checkpointNote(), head +
                                         QStringLiteral(" Saved runs planned for a model like the checkpoint's: run 9 "
                                                        "(tiny/all); select one in the library and open this dialog "
                                                        "again.") +
                                         tail);
        d.setKnownPlans({});
        QCOMPARE(d.checkpointNote(), head +
                                         QStringLiteral(" No saved plan of this library is for a model like the "
                                                        "checkpoint's (16 experts, 2 MoE layers): import a trace of "
                                                        "that model and plan it.") +
                                         tail);
        auto* note = d.findChild<QLabel*>(QStringLiteral("checkpointNote"));
        QVERIFY(note && note->isVisible());
        QCOMPARE(note->text(), d.checkpointNote());
        QPushButton* synth = nullptr;
        for (QPushButton* b : d.findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Write a checkpoint of the plan's model…")) synth = b;
        QVERIFY(synth && synth->isVisible());
        shot(&d, QStringLiteral("basics-rewrite-mismatch"));

        // Write a checkpoint of the plan's model: it becomes the input, fits the plan and checks.
        const fs::path out = tmp_ / "ds-synthetic";
        QSignalSpy written(&d, &RewriteDialog::synthCheckpointWritten);
        QVERIFY(d.writePlanModelCheckpoint(q(out)));
        QTRY_COMPARE_WITH_TIMEOUT(written.count(), 1, 60000);
        QCOMPARE(written.first().first().toString(), q(out));
        QCOMPARE(d.input(), q(out));
        QTRY_COMPARE_WITH_TIMEOUT(described.count(), 2, 30000);
        QVERIFY(ui::checkpointModel(&d).has_value());
        QCOMPARE(ui::checkpointModel(&d)->experts, 64);
        QCOMPARE(ui::checkpointModel(&d)->moe_layers, ds.moe_layers);
        QVERIFY(!d.checkpointMismatch());
        QVERIFY(d.checkpointNote().endsWith(QStringLiteral(" It matches the plan's model.")));
        QVERIFY(!synth->isVisible());
        d.setOutput(q(tmp_ / "ds-physical"));
        QSignalSpy checked(d.job(), &RewriteJob::checked);
        QVERIFY(d.startCheck());
        QTRY_COMPARE_WITH_TIMEOUT(checked.count(), 1, 60000);
        QVERIFY2(checked.first().at(0).value<RewriteCheck>().ok, qPrintable(d.statusText()));
    }
};

QTEST_MAIN(TestStudioBasics)
#include "tst_studio_basics.moc"
