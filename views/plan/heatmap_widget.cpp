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

namespace {

constexpr int kMargin = 6;
constexpr int kLegendBarWidth = 14;
constexpr int kGap = 18;
const QRgb kNoDataColour = qRgb(0x9e, 0x9e, 0x9e);

/// Anchor colours of the two maps, low to high. Both ends are mid-tone so a cell stays distinct
/// from a white and from a near-black background.
const std::vector<QColor>& anchors(HeatmapWidget::ColourMap map) {
    static const std::vector<QColor> sequential = {QColor(0x3b, 0x3f, 0x9a), QColor(0x2f, 0x74, 0xa8),
                                                   QColor(0x2a, 0xa0, 0x8e), QColor(0x7c, 0xc3, 0x5a),
                                                   QColor(0xf2, 0xd5, 0x3c)};
    static const std::vector<QColor> diverging = {QColor(0x2f, 0x5f, 0xa8), QColor(0x8c, 0xbb, 0xdb),
                                                  QColor(0xf3, 0xef, 0xc6), QColor(0xf2, 0xa2, 0x5c),
                                                  QColor(0xc3, 0x2f, 0x36)};
    return map == HeatmapWidget::ColourMap::Diverging ? diverging : sequential;
}

/// `digits` significant digits, but never an exponent for values of 1000 and above (token counts).
QString formatNumber(double v, int digits) {
    if (std::isnan(v)) return QStringLiteral("n/a");
    if (std::abs(v) >= 1000) return QString::number(v, 'f', 0);
    return QString::number(v, 'g', digits);
}

} // namespace

QStringList HeatmapWidget::titleLineTexts() const {
    if (title_.isEmpty()) return {};
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics bm(bold);
    const int w = std::max(1, width() - 2 * kMargin);
    // Greedy word wrap; a word wider than the line, or a last line that still does not fit, is elided.
    QStringList lines;
    QString line;
    for (const QString& word : title_.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const QString joined = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
        if (line.isEmpty() || bm.horizontalAdvance(joined) <= w) {
            line = joined;
        } else if (lines.size() + 1 < kMaxTitleLines) {
            lines << line;
            line = word;
        } else {
            line = joined;
        }
    }
    lines << line;
    for (QString& l : lines)
        l = bm.elidedText(l, Qt::ElideRight, w);
    return lines;
}

int HeatmapWidget::titleLines() const {
    return std::max<int>(1, static_cast<int>(titleLineTexts().size()));
}

void HeatmapWidget::setLegendTitle(const QString& title) {
    legendTitle_ = title;
    update();
}

void HeatmapWidget::setEmptyText(const QString& text) {
    emptyText_ = text;
    update();
}

void HeatmapWidget::setToolTipProvider(std::function<QString(int, int)> provider) {
    tooltip_ = std::move(provider);
}

void HeatmapWidget::setPrecision(int digits) {
    precision_ = std::clamp(digits, 1, 17);
    update();
}

double HeatmapWidget::value(int row, int col) const {
    if (row < 0 || col < 0 || row >= rows_ || col >= cols_) return std::numeric_limits<double>::quiet_NaN();
    return values_[static_cast<std::size_t>(row) * cols_ + col];
}

void HeatmapWidget::rebuildLut() {
    const auto& a = anchors(map_);
    const int segments = static_cast<int>(a.size()) - 1;
    for (int i = 0; i < 256; ++i) {
        const double t = i / 255.0 * segments;
        const int s = std::min(static_cast<int>(t), segments - 1);
        const double f = t - s;
        const QColor& c0 = a[static_cast<std::size_t>(s)];
        const QColor& c1 = a[static_cast<std::size_t>(s) + 1];
        auto mix = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
        lut_[static_cast<std::size_t>(i)] =
            qRgb(mix(c0.red(), c1.red()), mix(c0.green(), c1.green()), mix(c0.blue(), c1.blue()));
    }
}

int HeatmapWidget::lutIndex(double v, int row) const {
    if (!std::isfinite(v)) return -1;
    return static_cast<int>(std::lround(colour_position(v, mapping(row)) * 255.0));
}

QColor HeatmapWidget::colourFor(double v, int row) const {
    const int i = lutIndex(v, row);
    return QColor(i < 0 ? kNoDataColour : lut_[static_cast<std::size_t>(i)]);
}

QColor HeatmapWidget::cellColour(int row, int col) const {
    return colourFor(value(row, col), row);
}

void HeatmapWidget::rebuildImage() const {
    imageDirty_ = false;
    if (rows_ == 0 || cols_ == 0) {
        image_ = QImage();
        return;
    }
    image_ = QImage(cols_, rows_, QImage::Format_RGB32);
    for (int r = 0; r < rows_; ++r) {
        auto* line = reinterpret_cast<QRgb*>(image_.scanLine(r));
        const double* v = values_.data() + static_cast<std::size_t>(r) * cols_;
        for (int c = 0; c < cols_; ++c) {
            const int i = lutIndex(v[c], r);
            line[c] = i < 0 ? kNoDataColour : lut_[static_cast<std::size_t>(i)];
        }
    }
}

HeatmapWidget::Geometry HeatmapWidget::geometry() const {
    Geometry g;
    const QFontMetrics fm(font());
    const int lineH = fm.height();
    g.titleH = title_.isEmpty() ? 0 : titleLines() * lineH + 6;
    // Header row of the side column and the legend; the legend's top tick label reaches half a
    // line above the bar, so the row leaves that much room below the header text.
    const double headerH = (side_.isEmpty() && legendTitle_.isEmpty()) ? lineH / 2.0 + 2 : 1.5 * lineH + 4;
    const double rowTitleW = rowTitle_.isEmpty() ? 0 : lineH + 4;
    int rowLabelW = 0;
    for (int r = 0; r < rows_; ++r)
        rowLabelW =
            std::max(rowLabelW, fm.horizontalAdvance(r < rowLabels_.size() ? rowLabels_[r] : QString::number(r)));
    rowLabelW += 6;
    g.markW = std::find(marks_.begin(), marks_.end(), true) != marks_.end() ? 8 : 0;
    const double colLabelH = lineH + 2;
    const double colTitleH = colTitle_.isEmpty() ? 0 : lineH + 2;
    g.sideW = 0;
    if (!side_.isEmpty()) {
        int w = fm.horizontalAdvance(sideHeader_);
        for (const QString& s : side_)
            w = std::max(w, fm.horizontalAdvance(s));
        g.sideW = w + 12;
    }
    int tickW = 0;
    for (double v : {lo_, hi_, centre_, 0.5 * (lo_ + hi_)})
        tickW = std::max(tickW, fm.horizontalAdvance(formatNumber(v, precision_)));
    for (const QString& s : {tr("row min"), tr("row max")})
        tickW = std::max(tickW, fm.horizontalAdvance(s));
    const double legendW = std::max<double>(kLegendBarWidth + 5 + tickW, fm.horizontalAdvance(legendTitle_));

    const double x0 = kMargin + rowTitleW + rowLabelW + g.markW;
    const double y0 = kMargin + g.titleH + headerH;
    double w = width() - x0 - g.sideW - kGap - legendW - kMargin;
    double h = height() - y0 - colLabelH - colTitleH - kMargin;
    w = std::max(w, 1.0);
    h = std::max(h, 1.0);
    // Integer cell sizes when cells are large enough: crisp edges and separators.
    if (cols_ > 0 && w / cols_ >= 4) w = std::floor(w / cols_) * cols_;
    if (rows_ > 0 && h / rows_ >= 4) h = std::floor(h / rows_) * rows_;
    g.cells = QRectF(x0, y0, w, h);
    g.headerY = kMargin + g.titleH;
    g.sideX = g.cells.right() + 6;
    g.legendBar = QRectF(g.sideX + g.sideW + kGap - 6, y0, kLegendBarWidth, h);
    return g;
}

QRect HeatmapWidget::cellRect(int row, int col) const {
    if (row < 0 || col < 0 || row >= rows_ || col >= cols_) return {};
    const QRectF a = geometry().cells;
    const double cw = a.width() / cols_, ch = a.height() / rows_;
    const int l = static_cast<int>(std::lround(a.left() + col * cw));
    const int r = static_cast<int>(std::lround(a.left() + (col + 1) * cw));
    const int t = static_cast<int>(std::lround(a.top() + row * ch));
    const int b = static_cast<int>(std::lround(a.top() + (row + 1) * ch));
    return QRect(QPoint(l, t), QPoint(r - 1, b - 1));
}

QPoint HeatmapWidget::pinnedLabelOffset() const {
    const QRect vis = visibleRegion().boundingRect();
    if (vis.isEmpty()) return {0, 0};
    return {std::max(0, vis.left()), std::min(0, vis.bottom() + 1 - height())};
}

QPoint HeatmapWidget::cellAt(const QPoint& pos) const {
    if (rows_ == 0 || cols_ == 0) return {-1, -1};
    const QRectF a = geometry().cells;
    if (!a.contains(pos)) return {-1, -1};
    // The pinned axis labels of a scrolled map lie over the cells at the viewport's edges.
    const QPoint pin = pinnedLabelOffset();
    if (pin.x() > 0 && pos.x() < pin.x() + a.left()) return {-1, -1};
    if (pin.y() < 0 && pos.y() > a.bottom() + pin.y()) return {-1, -1};
    const int c = std::clamp(static_cast<int>((pos.x() - a.left()) / a.width() * cols_), 0, cols_ - 1);
    const int r = std::clamp(static_cast<int>((pos.y() - a.top()) / a.height() * rows_), 0, rows_ - 1);
    return {c, r};
}

QString HeatmapWidget::toolTipFor(int row, int col) const {
    if (row < 0 || col < 0 || row >= rows_ || col >= cols_) return {};
    if (tooltip_) return tooltip_(row, col);
    const QString rl = row < rowLabels_.size() ? rowLabels_[row] : QString::number(row);
    const QString cl = col < colLabels_.size() ? colLabels_[col] : QString::number(col);
    return QStringLiteral("%1 %2, %3 %4: %5")
        .arg(rowTitle_, rl, colTitle_, cl, formatNumber(value(row, col), precision_))
        .trimmed();
}

QSize HeatmapWidget::sizeHint() const {
    const QFontMetrics fm(font());
    const int w = std::clamp(cols_ * 28, 160, 720) + 220;
    const int h = std::clamp(rows_ * (fm.height() + 2), 120, 640) + 4 * fm.height() + 2 * kMargin;
    return {w, h};
}

QSize HeatmapWidget::minimumSizeHint() const {
    return {240, 160};
}

bool HeatmapWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        const QPoint cell = cellAt(he->pos());
        if (cell.x() >= 0) {
            hoverCell_ = cell;
            QToolTip::showText(he->globalPos(), toolTipFor(cell.y(), cell.x()), this, cellRect(cell.y(), cell.x()));
        } else {
            QToolTip::hideText();
            e->ignore();
        }
        return true;
    }
    return QWidget::event(e);
}

void HeatmapWidget::mousePressEvent(QMouseEvent* e) {
    const QPoint cell = cellAt(e->position().toPoint());
    if (e->button() == Qt::LeftButton && cell.x() >= 0) Q_EMIT cellClicked(cell.y(), cell.x());
    QWidget::mousePressEvent(e);
}

QString HeatmapWidget::copiedText() const {
    if (selRow_ >= 0 && selCol_ >= 0 && selRow_ < rows_ && selCol_ < cols_)
        return toolTipPlainText(toolTipFor(selRow_, selCol_));
    if (hoverCell_.x() >= 0 && hoverCell_.y() >= 0 && hoverCell_.y() < rows_ && hoverCell_.x() < cols_)
        return toolTipPlainText(toolTipFor(hoverCell_.y(), hoverCell_.x()));
    return {};
}

void HeatmapWidget::contextMenuEvent(QContextMenuEvent* e) {
    const QPoint cell = cellAt(e->pos());
    if (cell.x() >= 0) hoverCell_ = cell;
    if (QMenu* old = lastContextMenu(this)) {
        old->setObjectName(QString());
        old->close();
    }
    auto* menu = new QMenu(this);
    menu->setObjectName(QStringLiteral("contextMenu"));
    menu->setAttribute(Qt::WA_DeleteOnClose);
    QAction* copy = menu->addAction(tr("Copy cell details"));
    copy->setShortcut(QKeySequence::Copy);
    copy->setEnabled(cell.x() >= 0);
    const QString details = cell.x() >= 0 ? toolTipPlainText(toolTipFor(cell.y(), cell.x())) : QString();
    connect(copy, &QAction::triggered, this, [details] { copyText(details); });
    connect(menu->addAction(tr("Copy image")), &QAction::triggered, this, [this] {
        if (QClipboard* c = QGuiApplication::clipboard()) c->setPixmap(grab());
    });
    connect(menu->addAction(tr("Save image…")), &QAction::triggered, this,
            [this] { saveWidgetImage(this, tr("Save heatmap image")); });
    menu->popup(e->globalPos());
    e->accept();
}

void HeatmapWidget::keyPressEvent(QKeyEvent* e) {
    if (e->matches(QKeySequence::Copy)) {
        if (const QString t = copiedText(); !t.isEmpty()) copyText(t);
        e->accept();
        return;
    }
    QWidget::keyPressEvent(e);
}

void HeatmapWidget::changeEvent(QEvent* e) {
    if (e->type() == QEvent::PaletteChange || e->type() == QEvent::FontChange) update();
    QWidget::changeEvent(e);
}

void HeatmapWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    const QPalette& pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Window));
    if (rows_ == 0 || cols_ == 0) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, emptyText_);
        return;
    }
    if (imageDirty_) rebuildImage();
    const Geometry g = geometry();
    paintTitle(p);
    paintCells(p, g);
    paintAxisLabels(p, g);
    paintSideColumn(p, g);
    paintLegend(p, g);
}

int HeatmapWidget::rowLabelStep(const Geometry& g) const {
    // Every k-th row label (and side column entry) when rows are thinner than a text line.
    const double ch = g.cells.height() / rows_;
    return std::max(1, static_cast<int>(std::ceil(QFontMetrics(font()).height() / std::max(ch, 1e-9))));
}

void HeatmapWidget::paintTitle(QPainter& p) const {
    if (title_.isEmpty()) return;
    const int lineH = QFontMetrics(font()).height();
    const QColor text = palette().color(QPalette::WindowText);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(text);
    const QStringList lines = titleLineTexts();
    for (int k = 0; k < lines.size(); ++k)
        p.drawText(QRectF(kMargin, kMargin + k * lineH, width() - 2 * kMargin, lineH + 2),
                   Qt::AlignLeft | Qt::AlignVCenter, lines[k]);
    p.setFont(font());
}

void HeatmapWidget::paintCells(QPainter& p, const Geometry& g) const {
    const QPalette& pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    const QRectF& a = g.cells;
    const double cw = a.width() / cols_, ch = a.height() / rows_;
    // Cells: the cached one-pixel-per-cell image, scaled without smoothing.
    p.drawImage(a, image_);
    if (cw >= 8 && ch >= 8) {
        p.setPen(QPen(pal.color(QPalette::Window), 1));
        for (int c = 1; c < cols_; ++c) {
            const int x = static_cast<int>(std::lround(a.left() + c * cw));
            p.drawLine(x, static_cast<int>(a.top()), x, static_cast<int>(a.bottom()) - 1);
        }
        for (int r = 1; r < rows_; ++r) {
            const int y = static_cast<int>(std::lround(a.top() + r * ch));
            p.drawLine(static_cast<int>(a.left()), y, static_cast<int>(a.right()) - 1, y);
        }
    }
    p.setPen(pal.color(QPalette::Mid));
    p.setBrush(Qt::NoBrush);
    p.drawRect(a.adjusted(-0.5, -0.5, 0, 0));
    // Diagonal cells: a dashed outline in the text colour over a window-coloured rim.
    if (diagonal_) {
        for (int k = 0; k < std::min(rows_, cols_); ++k) {
            const QRectF d(a.left() + k * cw, a.top() + k * ch, cw, ch);
            p.setPen(QPen(pal.color(QPalette::Window), 3));
            p.drawRect(d.adjusted(1.5, 1.5, -1.5, -1.5));
            p.setPen(QPen(text, 1.2, Qt::DashLine));
            p.drawRect(d.adjusted(1.5, 1.5, -1.5, -1.5));
        }
    }
    // Group boundaries: a line before each listed row / column, text colour over a window rim.
    for (const int pass : {0, 1}) {
        p.setPen(pass == 0 ? QPen(pal.color(QPalette::Window), 3.5) : QPen(text, 1.5));
        for (int c : colBounds_)
            if (c > 0 && c < cols_) {
                const double x = a.left() + c * cw;
                p.drawLine(QPointF(x, a.top()), QPointF(x, a.bottom()));
            }
        for (int r : rowBounds_)
            if (r > 0 && r < rows_) {
                const double y = a.top() + r * ch;
                p.drawLine(QPointF(a.left(), y), QPointF(a.right(), y));
            }
    }
    // Selection: a cell, a column or a row, outlined in the text colour over a window-coloured rim.
    if (selRow_ >= 0 || selCol_ >= 0) {
        QRectF s = a;
        if (selCol_ >= 0) s.setLeft(a.left() + selCol_ * cw), s.setWidth(cw);
        if (selRow_ >= 0) s.setTop(a.top() + selRow_ * ch), s.setHeight(ch);
        s = s.adjusted(-1, -1, 1, 1);
        p.setPen(QPen(pal.color(QPalette::Window), 3));
        p.drawRect(s);
        p.setPen(QPen(text, 1.5));
        p.drawRect(s);
    }
}

void HeatmapWidget::paintAxisLabels(QPainter& p, const Geometry& g) const {
    const QPalette& pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    const QFontMetrics fm(font());
    const int lineH = fm.height();
    const QRectF& a = g.cells;
    const double cw = a.width() / cols_, ch = a.height() / rows_;
    // Axis labels stay at the viewport's edges when the map is zoomed and scrolled: the row labels
    // (with their marks and title) at its left, the column labels (with their title) at its bottom,
    // each over a band of the window colour that hides the cells scrolled beneath.
    const QPoint pin = pinnedLabelOffset();
    // The part of the cell area left visible between the pinned bands: the axis titles centre on it.
    const QRect vis = visibleRegion().boundingRect();
    const double shownL = std::max(a.left(), pin.x() + a.left());
    const double shownR = vis.isEmpty() ? a.right() : std::min(a.right(), static_cast<double>(vis.right() + 1));
    const double shownT = vis.isEmpty() ? a.top() : std::max(a.top(), static_cast<double>(vis.top()));
    const double shownB = a.bottom() + pin.y();
    p.save();
    p.translate(pin.x(), 0);
    if (pin.x() > 0) p.fillRect(QRectF(0, a.top() - 1, a.left() - 1, a.height() + 2), pal.color(QPalette::Window));
    // Row labels (every k-th when rows are thinner than a text line).
    p.setPen(text);
    const int rowStep = rowLabelStep(g);
    for (int r = 0; r < rows_; r += rowStep) {
        const QString s = r < rowLabels_.size() ? rowLabels_[r] : QString::number(r);
        p.drawText(QRectF(kMargin, a.top() + r * ch + ch / 2 - lineH / 2.0, a.left() - kMargin - 4 - g.markW, lineH),
                   Qt::AlignRight | Qt::AlignVCenter, s);
    }
    // Row marks: a bar on the row axis, at least 3 px high however thin the rows.
    for (int r = 0; r < rows_ && static_cast<std::size_t>(r) < marks_.size(); ++r) {
        if (!marks_[static_cast<std::size_t>(r)]) continue;
        const double h = std::max(ch, 3.0);
        p.fillRect(QRectF(a.left() - g.markW, a.top() + r * ch + ch / 2 - h / 2, g.markW - 3, h), markColour_);
    }
    if (!rowTitle_.isEmpty()) {
        p.save();
        const double span = std::max(shownB - shownT, 1.0);
        p.translate(kMargin, (shownT + shownB) / 2);
        p.rotate(-90);
        p.drawText(QRectF(-span / 2, 0, span, lineH + 2), Qt::AlignCenter, rowTitle_);
        p.restore();
    }
    p.restore();
    p.save();
    p.translate(0, pin.y());
    if (pin.y() < 0)
        p.fillRect(QRectF(0, a.bottom() + 1, width(), height() - a.bottom() - 1), pal.color(QPalette::Window));
    if (pin.x() > 0) p.setClipRect(QRectF(shownL - 1, 0, width(), height())); // not under the row labels
    p.setPen(text);
    // Column labels: every column up to 16 (in a smaller, still legible font where they are narrow),
    // else a power-of-two stride.
    const int colLabelW = columnLabelWidth();
    const auto [colStep, colScale] = columnLabelLayout(cw);
    if (colScale < 1.0) {
        QFont small = font();
        small.setPointSizeF(small.pointSizeF() * colScale);
        p.setFont(small);
    }
    for (int c = 0; c < cols_; c += colStep) {
        const QString s = c < colLabels_.size() ? colLabels_[c] : QString::number(c);
        const double cx = a.left() + c * cw + cw / 2;
        p.drawText(QRectF(cx - colLabelW / 2.0 - 3, a.bottom() + 2, colLabelW + 6, lineH), Qt::AlignCenter, s);
    }
    p.setFont(font());
    if (!colTitle_.isEmpty()) {
        // Centred under the shown cells; wider than them when the title needs it (never cut).
        const double need = fm.horizontalAdvance(colTitle_) + 4;
        const double span = std::max(shownR - shownL, 1.0);
        const double titleW = std::min(std::max(span, need), static_cast<double>(width()));
        const double left = std::clamp((shownL + shownR - titleW) / 2, 0.0, std::max(width() - titleW, 0.0));
        if (titleW > span) p.setClipping(false);
        p.drawText(QRectF(left, a.bottom() + 2 + lineH, titleW, lineH + 2), Qt::AlignCenter, colTitle_);
    }
    p.restore();
}

void HeatmapWidget::paintSideColumn(QPainter& p, const Geometry& g) const {
    // Side column (e.g. per-layer CV), right-aligned numbers.
    if (side_.isEmpty()) return;
    const int lineH = QFontMetrics(font()).height();
    const QRectF& a = g.cells;
    const double ch = a.height() / rows_;
    const int rowStep = rowLabelStep(g);
    p.setPen(palette().color(QPalette::WindowText));
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRectF(g.sideX, g.headerY, g.sideW - 4, lineH), Qt::AlignRight | Qt::AlignVCenter, sideHeader_);
    p.setFont(font());
    for (int r = 0; r < rows_ && r < side_.size(); r += rowStep)
        p.drawText(QRectF(g.sideX, a.top() + r * ch + ch / 2 - lineH / 2.0, g.sideW - 4, lineH),
                   Qt::AlignRight | Qt::AlignVCenter, side_[r]);
}

void HeatmapWidget::paintLegend(QPainter& p, const Geometry& g) const {
    const QPalette& pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    const int lineH = QFontMetrics(font()).height();
    // Legend: colour bar (high at the top) with ticks and numbers.
    const QRectF& lb = g.legendBar;
    QImage bar(1, 256, QImage::Format_RGB32);
    for (int i = 0; i < 256; ++i)
        *reinterpret_cast<QRgb*>(bar.scanLine(255 - i)) = lut_[static_cast<std::size_t>(i)];
    p.drawImage(lb, bar);
    p.setPen(pal.color(QPalette::Mid));
    p.drawRect(lb.adjusted(-0.5, -0.5, 0, 0));
    if (!legendTitle_.isEmpty()) {
        p.setPen(text);
        p.drawText(QRectF(lb.left(), g.headerY, width() - lb.left(), lineH), Qt::AlignLeft | Qt::AlignVCenter,
                   legendTitle_);
    }
    // Round ticks at their colour positions; under PerLayer the ends of each row's own range.
    std::vector<std::pair<double, QString>> ticks;
    if (scale_ == ColourScale::PerLayer) {
        ticks.emplace_back(0.0, tr("row min"));
        if (map_ == ColourMap::Diverging) ticks.emplace_back(0.5, formatNumber(centre_, precision_));
        ticks.emplace_back(1.0, tr("row max"));
    } else {
        for (double t : legendTicks())
            ticks.emplace_back(colour_position(t, mapping()), formatNumber(t, precision_));
    }
    p.setPen(text);
    double lastY = std::numeric_limits<double>::infinity();
    for (const auto& [pos, label] : ticks) {
        const double y = lb.bottom() - pos * lb.height();
        // No tick mark: a dash before a number would read as a minus sign.
        const double ty = std::clamp(y - lineH / 2.0, lb.top() - lineH / 2.0, lb.bottom() - lineH / 2.0);
        if (lastY - ty < lineH) continue; // would overlap the label below it
        lastY = ty;
        p.drawText(QRectF(lb.right() + 5, ty, width() - lb.right() - 5, lineH), Qt::AlignLeft | Qt::AlignVCenter,
                   label);
    }
}

} // namespace routepack::views
