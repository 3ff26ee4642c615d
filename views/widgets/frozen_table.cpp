#include "views/widgets/frozen_table.h"

#include <QHeaderView>
#include <QScrollBar>

namespace routepack::views {

FrozenColumnTable::FrozenColumnTable(QWidget* parent) : QTableView(parent) {
    frozen_ = new QTableView(this);
    frozen_->setObjectName(QStringLiteral("frozenColumn"));
    frozen_->setFocusPolicy(Qt::NoFocus);
    frozen_->verticalHeader()->hide();
    frozen_->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    frozen_->horizontalHeader()->setSectionsClickable(true);
    frozen_->horizontalHeader()->setSortIndicatorShown(true);
    frozen_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    frozen_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    frozen_->setVerticalScrollMode(ScrollPerPixel);
    frozen_->setEditTriggers(NoEditTriggers);
    frozen_->setSelectionBehavior(SelectRows);
    frozen_->setFrameShape(QFrame::NoFrame);
    viewport()->stackUnder(frozen_);
    setHorizontalScrollMode(ScrollPerPixel);
    setVerticalScrollMode(ScrollPerPixel);
    connect(horizontalHeader(), &QHeaderView::sectionResized, this, [this](int section, int, int size) {
        if (section != 0) return;
        frozen_->setColumnWidth(0, size);
        updateFrozenGeometry();
    });
    connect(verticalHeader(), &QHeaderView::sectionResized, this,
            [this](int section, int, int size) { frozen_->setRowHeight(section, size); });
    connect(frozen_->verticalScrollBar(), &QAbstractSlider::valueChanged, verticalScrollBar(),
            &QAbstractSlider::setValue);
    connect(verticalScrollBar(), &QAbstractSlider::valueChanged, frozen_->verticalScrollBar(),
            &QAbstractSlider::setValue);
    // A click on the frozen header sorts the whole table.
    connect(frozen_->horizontalHeader(), &QHeaderView::sectionClicked, this, [this](int section) {
        if (!isSortingEnabled()) return;
        const QHeaderView* h = horizontalHeader();
        const Qt::SortOrder order =
            h->sortIndicatorSection() == section && h->sortIndicatorOrder() == Qt::AscendingOrder ? Qt::DescendingOrder
                                                                                                  : Qt::AscendingOrder;
        sortByColumn(section, order);
    });
    connect(horizontalHeader(), &QHeaderView::sortIndicatorChanged, frozen_->horizontalHeader(),
            &QHeaderView::setSortIndicator);
}

void FrozenColumnTable::setModel(QAbstractItemModel* model) {
    QTableView::setModel(model);
    frozen_->setModel(model);
    frozen_->setSelectionModel(selectionModel());
    frozen_->setAlternatingRowColors(alternatingRowColors());
    auto hideOthers = [this] {
        const int n = this->model() ? this->model()->columnCount() : 0;
        for (int c = 1; c < n; ++c)
            frozen_->setColumnHidden(c, true);
        frozen_->setColumnWidth(0, columnWidth(0));
        updateFrozenGeometry();
    };
    hideOthers();
    if (model) {
        connect(model, &QAbstractItemModel::modelReset, this, hideOthers);
        connect(model, &QAbstractItemModel::columnsInserted, this, hideOthers);
        connect(model, &QAbstractItemModel::layoutChanged, this, hideOthers);
    }
    frozen_->show();
}

void FrozenColumnTable::resizeEvent(QResizeEvent* event) {
    QTableView::resizeEvent(event);
    updateFrozenGeometry();
}

QModelIndex FrozenColumnTable::moveCursor(CursorAction cursorAction, Qt::KeyboardModifiers modifiers) {
    QModelIndex current = QTableView::moveCursor(cursorAction, modifiers);
    // Keyboard moves to the left never hide a cell under the frozen column.
    if (cursorAction == MoveLeft && current.column() > 0 &&
        visualRect(current).topLeft().x() < frozen_->columnWidth(0)) {
        const int x = visualRect(current).topLeft().x() - frozen_->columnWidth(0);
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() + x);
    }
    return current;
}

void FrozenColumnTable::scrollTo(const QModelIndex& index, ScrollHint hint) {
    if (index.column() > 0) QTableView::scrollTo(index, hint);
}

void FrozenColumnTable::updateFrozenGeometry() {
    frozen_->setAlternatingRowColors(alternatingRowColors());
    const int header = verticalHeader()->isVisible() ? verticalHeader()->width() : 0;
    frozen_->setGeometry(header + frameWidth(), frameWidth(), columnWidth(0),
                         viewport()->height() + horizontalHeader()->height());
}

} // namespace routepack::views
