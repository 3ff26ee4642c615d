#include "views/plan/heatmap_view.h"

#include "views/plan/heatmap_widget.h"

#include <QResizeEvent>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace routepack::views {

HeatmapView::HeatmapView(HeatmapWidget* map, QWidget* parent) : QScrollArea(parent), map_(map) {
    setFrameShape(QFrame::NoFrame);
    setWidgetResizable(false);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    setWidget(map_);
    setSizePolicy(map_->sizePolicy());
    // A scroll moves the map's pixels and repaints only what it exposed; the pinned axis labels
    // must be repainted where they now belong.
    connect(horizontalScrollBar(), &QScrollBar::valueChanged, map_, qOverload<>(&QWidget::update));
    connect(verticalScrollBar(), &QScrollBar::valueChanged, map_, qOverload<>(&QWidget::update));
    layoutMap();
}

double HeatmapView::zoom() const {
    return std::pow(kZoomStep, level_);
}

QSize HeatmapView::sizeHint() const {
    return map_->sizeHint();
}

QSize HeatmapView::minimumSizeHint() const {
    return map_->minimumSizeHint();
}

void HeatmapView::layoutMap() {
    const QSize fit = maximumViewportSize();
    const double z = zoom();
    map_->resize(std::max(1, static_cast<int>(std::lround(fit.width() * z))),
                 std::max(1, static_cast<int>(std::lround(fit.height() * z))));
}

void HeatmapView::setZoomLevel(int level, QPoint anchor) {
    level = std::clamp(level, 0, kMaxZoomLevel);
    if (level == level_) return;
    const QSize vp = viewport()->size();
    if (anchor.x() < 0 || anchor.y() < 0) anchor = QPoint(vp.width() / 2, vp.height() / 2);
    // The cell area in map coordinates (the whole map without data): the labels around it keep
    // their size, so the point under the anchor is kept as a fraction of the cell area.
    const auto cellArea = [this]() -> QRectF {
        const QRect first = map_->cellRect(0, 0);
        const QRect last = map_->cellRect(map_->rowCount() - 1, map_->columnCount() - 1);
        if (first.isEmpty() || last.isEmpty()) return QRectF(QPointF(0, 0), QSizeF(map_->size()));
        return QRectF(QPointF(first.topLeft()), QPointF(last.bottomRight() + QPoint(1, 1)));
    };
    const QRectF before = cellArea();
    const QPointF on(horizontalScrollBar()->value() + anchor.x(), verticalScrollBar()->value() + anchor.y());
    const double fx = (on.x() - before.left()) / std::max(1.0, before.width());
    const double fy = (on.y() - before.top()) / std::max(1.0, before.height());
    level_ = level;
    layoutMap();
    const QRectF after = cellArea();
    horizontalScrollBar()->setValue(static_cast<int>(std::lround(after.left() + fx * after.width() - anchor.x())));
    verticalScrollBar()->setValue(static_cast<int>(std::lround(after.top() + fy * after.height() - anchor.y())));
    Q_EMIT zoomChanged(level_);
}

void HeatmapView::resizeEvent(QResizeEvent* e) {
    QScrollArea::resizeEvent(e);
    layoutMap();
}

void HeatmapView::wheelEvent(QWheelEvent* e) {
    if (!(e->modifiers() & Qt::ControlModifier)) {
        wheelEighths_ = 0;
        QScrollArea::wheelEvent(e);
        return;
    }
    wheelEighths_ += e->angleDelta().y();
    const int notches = wheelEighths_ / 120;
    wheelEighths_ -= notches * 120;
    if (notches != 0) {
        const QPoint at = viewport()->mapFrom(this, e->position().toPoint());
        setZoomLevel(level_ + notches, at);
    }
    e->accept();
}

} // namespace routepack::views
