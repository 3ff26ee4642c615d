// HeatmapWidget's data and settings (views/plan/heatmap_widget.h): the values, range, colour scale,
// marks, selection, titles and labels it paints, and the geometry they imply.
#include "views/plan/heatmap_widget.h"
#include "views/widgets/item_actions.h"
#include <QClipboard>
#include <QContextMenuEvent>
#include <QGuiApplication>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QResizeEvent>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <limits>

namespace routepack::views {

HeatmapWidget::HeatmapWidget(QWidget* parent) : QWidget(parent) {
    setMouseTracking(false);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setFocusPolicy(Qt::ClickFocus); // Ctrl+C copies the selected cell's details
    emptyText_ = tr("No data");
    rebuildLut();
}

void HeatmapWidget::setData(int rows, int cols, std::vector<double> values, const QStringList& rowLabels,
                            const QStringList& colLabels) {
    if (rows < 0 || cols < 0 || values.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols)) {
        clear();
        return;
    }
    rows_ = rows;
    cols_ = cols;
    values_ = std::move(values);
    rowLabels_ = rowLabels;
    colLabels_ = colLabels;
    if (autoRange_) {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (double v : values_)
            if (std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
        if (!std::isfinite(lo)) lo = 0, hi = 1;
        lo_ = lo;
        hi_ = hi;
        centre_ = 0.5 * (lo + hi);
    }
    updateRowRanges();
    imageDirty_ = true;
    updateGeometry();
    update();
}

void HeatmapWidget::clear() {
    rows_ = cols_ = 0;
    values_.clear();
    rowLabels_.clear();
    colLabels_.clear();
    side_.clear();
    rowLo_.clear();
    rowHi_.clear();
    selRow_ = selCol_ = -1;
    imageDirty_ = true;
    update();
}

void HeatmapWidget::setRange(double lo, double hi, double centre) {
    autoRange_ = false;
    lo_ = lo;
    hi_ = hi;
    centre_ = centre;
    updateRowRanges();
    imageDirty_ = true;
    update();
}

void HeatmapWidget::setNeutralBand(double tolerance) {
    band_ = std::isfinite(tolerance) && tolerance > 0 ? tolerance : 0.0;
    updateRowRanges();
    imageDirty_ = true;
    update();
}

void HeatmapWidget::setColourScale(ColourScale scale) {
    scale_ = scale;
    imageDirty_ = true;
    update();
}

void HeatmapWidget::setRowMarks(std::vector<bool> marks, const QColor& colour) {
    marks_ = std::move(marks);
    markColour_ = colour;
    update();
}

void HeatmapWidget::setGroupBoundaries(std::vector<int> rowBounds, std::vector<int> colBounds) {
    rowBounds_ = std::move(rowBounds);
    colBounds_ = std::move(colBounds);
    update();
}

void HeatmapWidget::setDiagonalMarked(bool on) {
    diagonal_ = on;
    update();
}

void HeatmapWidget::setSelection(int row, int col) {
    selRow_ = row >= 0 && row < rows_ ? row : -1;
    selCol_ = col >= 0 && col < cols_ ? col : -1;
    update();
}

void HeatmapWidget::updateRowRanges() {
    rowLo_.assign(static_cast<std::size_t>(rows_), 0.0);
    rowHi_.assign(static_cast<std::size_t>(rows_), 0.0);
    for (int r = 0; r < rows_; ++r) {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (int c = 0; c < cols_; ++c) {
            const double v = values_[static_cast<std::size_t>(r) * cols_ + c];
            if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
        }
        if (!std::isfinite(lo)) lo = hi = 0;
        if (map_ == ColourMap::Diverging) {
            lo = std::min(lo, centre_ - 2 * band_);
            hi = std::max(hi, centre_ + 2 * band_);
        }
        rowLo_[static_cast<std::size_t>(r)] = lo;
        rowHi_[static_cast<std::size_t>(r)] = hi;
    }
}

ColourMapping HeatmapWidget::mapping(int row) const {
    ColourMapping m;
    m.lo = lo_;
    m.hi = hi_;
    m.scale = scale_;
    m.diverging = map_ == ColourMap::Diverging;
    m.centre = centre_;
    m.band = band_;
    if (scale_ == ColourScale::PerLayer && row >= 0 && static_cast<std::size_t>(row) < rowLo_.size()) {
        m.lo = rowLo_[static_cast<std::size_t>(row)];
        m.hi = rowHi_[static_cast<std::size_t>(row)];
    }
    return m;
}

std::vector<double> HeatmapWidget::legendTicks() const {
    if (scale_ == ColourScale::PerLayer) return {};
    const QRectF lb = geometry().legendBar;
    const int lineH = QFontMetrics(font()).height();
    const int fit = std::clamp(static_cast<int>(lb.height() / (1.6 * lineH)), 2, 9);
    std::vector<double> ticks = round_ticks(lo_, hi_, scale_, fit);
    if (map_ == ColourMap::Diverging && centre_ > lo_ && centre_ < hi_ &&
        std::find(ticks.begin(), ticks.end(), centre_) == ticks.end()) {
        ticks.push_back(centre_);
        std::sort(ticks.begin(), ticks.end());
    }
    return ticks;
}

int HeatmapWidget::columnLabelWidth() const {
    const QFontMetrics fm(font());
    int w = 0;
    for (int c = 0; c < cols_; ++c)
        w = std::max(w, fm.horizontalAdvance(c < colLabels_.size() ? colLabels_[c] : QString::number(c)));
    return w;
}

std::pair<int, double> HeatmapWidget::columnLabelLayout(double cellWidth) const {
    const int labelW = columnLabelWidth();
    const int stride = axis_label_stride(cols_, cellWidth, labelW, 16);
    if (stride > 1 || labelW + 2 <= cellWidth) return {stride, 1.0};
    // Every label in a smaller font while it stays legible; below that, every k-th in the widget's font.
    const double scale = std::max(cellWidth - 2, 1.0) / (labelW + 2);
    if (scale >= kMinColumnLabelScale) return {1, scale};
    return {axis_label_stride(cols_, cellWidth, labelW, 0), 1.0};
}

int HeatmapWidget::columnLabelStride() const {
    if (cols_ == 0) return 1;
    return columnLabelLayout(geometry().cells.width() / cols_).first;
}

double HeatmapWidget::columnLabelScale() const {
    if (cols_ == 0) return 1.0;
    return columnLabelLayout(geometry().cells.width() / cols_).second;
}

void HeatmapWidget::setColourMap(ColourMap map) {
    map_ = map;
    updateRowRanges();
    rebuildLut();
    imageDirty_ = true;
    update();
}

void HeatmapWidget::setTitle(const QString& title) {
    title_ = title;
    update();
}

void HeatmapWidget::setAxisTitles(const QString& rowTitle, const QString& columnTitle) {
    rowTitle_ = rowTitle;
    colTitle_ = columnTitle;
    update();
}

void HeatmapWidget::setSideColumn(const QString& header, const QStringList& texts) {
    sideHeader_ = header;
    side_ = texts;
    update();
}

} // namespace routepack::views
