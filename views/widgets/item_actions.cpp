#include "views/widgets/item_actions.h"
#include "views/widgets/file_export.h"

#include <QAbstractItemView>
#include <QAction>
#include <QChartView>
#include <QClipboard>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QKeyEvent>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QTableView>
#include <QTextDocument>
#include <QTreeView>

#include <algorithm>

namespace routepack::views {

namespace {

constexpr const char* kMenuName = "contextMenu";

QString cellText(const QVariant& v) {
    QString s = v.toString();
    s.replace(QLatin1Char('\t'), QLatin1Char(' '));
    s.replace(QLatin1Char('\n'), QLatin1Char(' '));
    return s;
}

/// The horizontal header of a table or a tree (nullptr for other views).
const QHeaderView* horizontalHeader(const QAbstractItemView* view) {
    if (const auto* t = qobject_cast<const QTableView*>(view)) return t->horizontalHeader();
    if (const auto* t = qobject_cast<const QTreeView*>(view)) return t->header();
    return nullptr;
}

bool columnHidden(const QAbstractItemView* view, int column) {
    const QHeaderView* h = horizontalHeader(view);
    return h && h->isSectionHidden(column);
}

/// Rows of `view` in view order: every row (a tree: depth first, expanded or not) or the selected ones.
QModelIndexList rowsOf(const QAbstractItemView* view, bool all) {
    QModelIndexList rows;
    const QAbstractItemModel* m = view->model();
    if (!m) return rows;
    const std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
        for (int r = 0; r < m->rowCount(parent); ++r) {
            const QModelIndex i = m->index(r, 0, parent);
            rows << i;
            walk(i);
        }
    };
    if (all) {
        walk({});
        return rows;
    }
    if (!view->selectionModel()) return rows;
    QModelIndexList selected;
    for (const QModelIndex& i : view->selectionModel()->selectedIndexes()) {
        const QModelIndex first = i.sibling(i.row(), 0);
        if (!selected.contains(first)) selected << first;
    }
    // In view order: the order of a full walk.
    walk({});
    QModelIndexList out;
    for (const QModelIndex& i : rows)
        if (selected.contains(i)) out << i;
    return out;
}

/// Ctrl+C on a view copies its selected rows (the view's own Ctrl+C copies one cell).
class CopyFilter : public QObject {
public:
    using QObject::QObject;
    bool eventFilter(QObject* watched, QEvent* e) override {
        auto* view = qobject_cast<QAbstractItemView*>(watched);
        if (!view || (e->type() != QEvent::KeyPress && e->type() != QEvent::ShortcutOverride))
            return QObject::eventFilter(watched, e);
        auto* k = static_cast<QKeyEvent*>(e);
        if (!k->matches(QKeySequence::Copy)) return QObject::eventFilter(watched, e);
        if (e->type() == QEvent::KeyPress) copyText(itemRowsText(view));
        e->accept();
        return true;
    }
};

/// A fresh context menu of `owner` (the previous one closes), deleted when closed.
QMenu* newMenu(QWidget* owner) {
    if (QMenu* old = owner->findChild<QMenu*>(QLatin1String(kMenuName), Qt::FindDirectChildrenOnly)) {
        old->setObjectName(QString());
        old->close();
    }
    auto* menu = new QMenu(owner);
    menu->setObjectName(QLatin1String(kMenuName));
    menu->setAttribute(Qt::WA_DeleteOnClose);
    return menu;
}

} // namespace

QString itemRowsText(const QAbstractItemView* view, bool all) {
    const QAbstractItemModel* m = view ? view->model() : nullptr;
    if (!m) return {};
    const QModelIndexList rows = rowsOf(view, all);
    if (rows.isEmpty()) return {};
    QList<int> columns;
    for (int c = 0; c < m->columnCount(); ++c)
        if (!columnHidden(view, c)) columns << c;
    QStringList lines, head;
    for (int c : columns)
        head << cellText(m->headerData(c, Qt::Horizontal, Qt::DisplayRole));
    lines << head.join(QLatin1Char('\t'));
    for (const QModelIndex& r : rows) {
        QStringList cells;
        for (int c : columns)
            cells << cellText(r.sibling(r.row(), c).data(Qt::DisplayRole));
        lines << cells.join(QLatin1Char('\t'));
    }
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

QString toolTipPlainText(const QString& text) {
    if (!Qt::mightBeRichText(text)) return text;
    QTextDocument doc;
    doc.setHtml(text);
    return doc.toPlainText();
}

void copyText(const QString& text) {
    if (QClipboard* c = QGuiApplication::clipboard()) c->setText(text);
}

void installTableActions(QAbstractItemView* view,
                         const std::function<QList<QAction*>(QMenu* menu, const QPoint& pos)>& extra) {
    view->installEventFilter(new CopyFilter(view));
    view->setContextMenuPolicy(Qt::CustomContextMenu);
    QObject::connect(view, &QWidget::customContextMenuRequested, view, [view, extra](const QPoint& pos) {
        // A right click on an unselected row selects it first, as file managers do.
        const QModelIndex at = view->indexAt(pos);
        if (at.isValid() && view->selectionModel() && !view->selectionModel()->isSelected(at))
            view->selectionModel()->setCurrentIndex(at,
                                                    QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QMenu* menu = newMenu(view);
        QAction* copy = menu->addAction(QObject::tr("Copy"));
        copy->setShortcut(QKeySequence::Copy);
        copy->setEnabled(!itemRowsText(view).isEmpty());
        QObject::connect(copy, &QAction::triggered, view, [view] { copyText(itemRowsText(view)); });
        QAction* copyAll = menu->addAction(QObject::tr("Copy all rows"));
        copyAll->setEnabled(view->model() && view->model()->rowCount() > 0);
        QObject::connect(copyAll, &QAction::triggered, view, [view] { copyText(itemRowsText(view, true)); });
        if (extra) {
            const QList<QAction*> more = extra(menu, pos);
            if (!more.isEmpty()) menu->addSeparator();
            for (QAction* a : more)
                menu->addAction(a);
        }
        menu->popup(view->viewport()->mapToGlobal(pos));
    });
}

void installChartActions(QChartView* view) {
    view->setContextMenuPolicy(Qt::CustomContextMenu);
    QObject::connect(view, &QWidget::customContextMenuRequested, view, [view](const QPoint& pos) {
        QMenu* menu = newMenu(view);
        QAction* copy = menu->addAction(QObject::tr("Copy image"));
        QObject::connect(copy, &QAction::triggered, view, [view] {
            if (QClipboard* c = QGuiApplication::clipboard()) c->setPixmap(view->grab());
        });
        QAction* save = menu->addAction(QObject::tr("Save image…"));
        QObject::connect(save, &QAction::triggered, view,
                         [view] { saveWidgetImage(view, QObject::tr("Save chart image")); });
        menu->popup(view->mapToGlobal(pos));
    });
}

namespace {

SaveFileAsker& saveFileAsker() {
    static SaveFileAsker asker;
    return asker;
}

} // namespace

QString askSaveFile(QWidget* parent, const QString& title, const QString& suggested, const QString& filter,
                    QString* selectedFilter) {
    if (saveFileAsker()) {
        QString chosen;
        const QString f = saveFileAsker()(parent, title, suggested, filter, &chosen);
        if (selectedFilter && !chosen.isEmpty()) *selectedFilter = chosen;
        return f;
    }
    return QFileDialog::getSaveFileName(parent, title, suggested, filter, selectedFilter);
}

void setSaveFileAskerForTesting(SaveFileAsker asker) {
    saveFileAsker() = std::move(asker);
}

QString saveWidgetImage(QWidget* widget, const QString& title) {
    const QString png = QObject::tr("PNG image (*.png)"), svg = QObject::tr("SVG drawing (*.svg)");
    QString chosen = png;
    QString f = askSaveFile(widget, title, QString(), png + QStringLiteral(";;") + svg, &chosen);
    if (f.isEmpty()) return {};
    const QString suffix = QFileInfo(f).suffix().toLower();
    if (suffix != QStringLiteral("png") && suffix != QStringLiteral("svg"))
        f += chosen == svg ? QStringLiteral(".svg") : QStringLiteral(".png");
    QString error;
    if (!exportWidgetImage(widget, f, &error)) {
        QMessageBox::warning(widget, title, error);
        return {};
    }
    return f;
}

QMenu* lastContextMenu(const QWidget* widget) {
    return widget ? widget->findChild<QMenu*>(QLatin1String(kMenuName), Qt::FindDirectChildrenOnly) : nullptr;
}

QString menuShortcutsText(const QMenuBar* bar) {
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
            lines << QStringLiteral("%1 > %2: %3").arg(path, name, keys.join(QObject::tr(" or ")));
        }
    };
    for (QAction* a : bar->actions())
        if (a->menu()) walk(a->menu(), a->text().remove(QLatin1Char('&')));
    return lines.join(QLatin1Char('\n'));
}

} // namespace routepack::views
