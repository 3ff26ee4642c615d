#pragma once
// What every table, tree, chart and heatmap of the studio shares: Ctrl+C of the selected rows as
// tab-separated text (header first), and a context menu with Copy and the exports that apply.
#include <QList>
#include <QString>

#include <functional>

class QAbstractItemView;
class QAction;
class QChartView;
class QMenu;
class QMenuBar;
class QPoint;
class QWidget;

namespace routepack::views {

/// The rows of `view` as tab-separated lines, the header line first (the horizontal header's
/// titles of the visible columns), one line per row in view order, cells as shown (DisplayRole;
/// tabs and line breaks inside a cell become spaces). Only the selected rows (selectionModel()'s
/// selectedRows of any column), unless `all`. "" when there is no row to copy.
QString itemRowsText(const QAbstractItemView* view, bool all = false);

/// Plain text of a tooltip (rich text as QTextDocument reads it; plain text unchanged).
QString toolTipPlainText(const QString& text);

/// Puts `text` on the clipboard.
void copyText(const QString& text);

/// Gives a table or tree view Ctrl+C (copies itemRowsText of the selection while the view has the
/// focus) and a context menu: "Copy" (the selected rows), "Copy all rows", then `extra` actions (an
/// export, delete, rename, ...) built for the position under the mouse (viewport coordinates). The
/// menu pops up without blocking (lastContextMenu finds it).
void installTableActions(QAbstractItemView* view,
                         const std::function<QList<QAction*>(QMenu* menu, const QPoint& pos)>& extra = {});

/// A chart view's context menu: "Copy image" (the chart as painted, onto the clipboard) and "Save
/// image…" (saveWidgetImage).
void installChartActions(QChartView* view);

/// The studio's one question for a file to write (exports, "Save image…"): the file name chosen in
/// a save dialog titled `title`, starting at `suggested`, offering `filter` ("PNG image
/// (*.png);;SVG drawing (*.svg)"); sets `*selectedFilter` (when given) to the filter chosen. "" when
/// the user cancels.
using SaveFileAsker = std::function<QString(QWidget* parent, const QString& title, const QString& suggested,
                                            const QString& filter, QString* selectedFilter)>;
/// Asks as SaveFileAsker says: QFileDialog::getSaveFileName, or the test's asker when one is set.
QString askSaveFile(QWidget* parent, const QString& title, const QString& suggested, const QString& filter,
                    QString* selectedFilter = nullptr);
/// Replaces the QFileDialog of askSaveFile by `asker`, so that a test answers it with a path (and a
/// filter) instead of a live dialog; an empty function brings the dialog back.
void setSaveFileAskerForTesting(SaveFileAsker asker);

/// "Save image…" of a chart or heatmap: asks for a file (PNG or SVG; a name without either suffix
/// gets the chosen filter's) and writes `widget` there as painted (exportWidgetImage: PNG = grab()
/// at the screen's pixel ratio, SVG = the widget rendered into an SVG of its logical size). A write
/// failure is shown in a warning box. Returns the file written, "" when cancelled or failed.
QString saveWidgetImage(QWidget* widget, const QString& title);

/// The context menu `widget` popped up last (nullptr before one).
QMenu* lastContextMenu(const QWidget* widget);

/// One line per action of `bar`'s menus with a shortcut, "<menu> > <action>: <shortcuts>" in menu
/// order (submenus as "<menu> > <submenu> > <action>", native key names, several shortcuts joined by
/// " or "): Help > Keyboard shortcuts, built from the actions so it never goes stale.
QString menuShortcutsText(const QMenuBar* bar);

} // namespace routepack::views
