#pragma once
// A table view whose first column stays in place while the others scroll horizontally.
#include <QTableView>

namespace routepack::views {

/// A QTableView with its first column frozen: a second QTableView over the same model and selection
/// model shows only column 0 on top of the main view's left edge, scrolls vertically with it, and
/// sorts and resizes with it (Qt's frozen-column pattern). The main view's horizontal scroll moves the
/// other columns under it.
class FrozenColumnTable : public QTableView {
    Q_OBJECT
public:
    explicit FrozenColumnTable(QWidget* parent = nullptr);
    void setModel(QAbstractItemModel* model) override;

protected:
    void resizeEvent(QResizeEvent* event) override;
    QModelIndex moveCursor(CursorAction cursorAction, Qt::KeyboardModifiers modifiers) override;
    void scrollTo(const QModelIndex& index, ScrollHint hint = EnsureVisible) override;

private:
    void updateFrozenGeometry();
    QTableView* frozen_ = nullptr; ///< the overlay showing the frozen column (object name "frozenColumn")
};

} // namespace routepack::views
