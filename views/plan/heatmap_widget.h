#pragma once
// A hand-painted heatmap (Qt Charts has no heatmap series): one colour-mapped cell per value, axis
// labels, an optional per-row side column (e.g. a layer's CV), a colour legend with numbers and
// exact values in the tooltip.
#include <QColor>
#include <QImage>
#include <QStringList>
#include <QWidget>

class QPainter;

#include "views/plan/plan_explain.h"

#include <array>
#include <functional>
#include <utility>
#include <vector>

namespace routepack::views {

/// Paints rows x cols values through a 256-entry colour lookup table into a cached QImage (one
/// pixel per cell, rebuilt only when data, range or map change) that is scaled to the cell area
/// without smoothing; antialiasing off. Text uses the widget palette (light and dark); the colour
/// maps are mid-tone at their ends so cells read on both backgrounds. NaN values paint as a
/// neutral "no data" grey. Tooltips: event(QEvent::ToolTip) maps the position to a cell and asks
/// the tooltip provider (default: labels and value).
class HeatmapWidget : public QWidget {
    Q_OBJECT
    friend struct HeatmapWidgetTestAccess;

public:
    enum class ColourMap {
        Sequential, ///< dark violet (low) -> teal -> yellow (high)
        Diverging,  ///< blue (below centre) -> pale yellow (centre) -> red (above)
    };

    explicit HeatmapWidget(QWidget* parent = nullptr);

    /// Sets the values, row-major [rows][cols], and the axis tick labels (one per row / column; an
    /// empty list draws indices). Range defaults to [min, max] of the finite values.
    void setData(int rows, int cols, std::vector<double> values, const QStringList& rowLabels,
                 const QStringList& colLabels);
    /// Empties the map (paints the `emptyText` placeholder).
    void clear();
    /// Colour range: values <= lo take the first colour, >= hi the last. For Diverging, `centre`
    /// takes the middle colour and [lo, centre], [centre, hi] map linearly onto the two halves.
    void setRange(double lo, double hi, double centre = 0);
    /// Diverging map only: values within `tolerance` of the centre (|v - centre| <= tolerance) take
    /// the centre's neutral colour, as equal to it; beyond, [lo, centre - tolerance] and [centre +
    /// tolerance, hi] map onto the two halves. 0 (the default) = no band.
    void setNeutralBand(double tolerance);
    void setColourMap(ColourMap map);
    /// How values map onto the colour bar (views/plan/plan_explain.h colour_position): Linear (default),
    /// Log (equal ratios, equal steps; zero loads at log_floor), or PerLayer (each row linear over its
    /// own finite [min, max], widened to centre -/+ 2 x band for Diverging; the legend then reads
    /// "row min" .. "row max"). The legend's ticks are round_ticks of the scale.
    void setColourScale(ColourScale scale);
    /// Marks rows on the row axis (a small bar in `colour` between the row labels and the cells);
    /// `marks` has one entry per row (shorter: the rest unmarked; empty: none).
    void setRowMarks(std::vector<bool> marks, const QColor& colour = QColor(0xd6, 0x27, 0x28));
    /// Lines between groups: before each row index in `rowBounds` and each column index in
    /// `colBounds` (indices 1..rows-1 / 1..cols-1 drawn; others ignored), e.g. node boundaries.
    void setGroupBoundaries(std::vector<int> rowBounds, std::vector<int> colBounds);
    /// Outlines the diagonal cells (row == col) with a dashed frame (e.g. intra-node traffic).
    void setDiagonalMarked(bool on);
    /// Outlines the selection: a cell (row, col), a whole column (row -1, col), a whole row (row,
    /// col -1); (-1, -1) clears it.
    void setSelection(int row, int col);
    void setTitle(const QString& title);
    /// The title's lines at the current width: 1 when it fits, else as many as its words need when
    /// wrapped at spaces, at most kMaxTitleLines (the last one elided when still too long).
    int titleLines() const;
    /// The title as painted, line by line (titleLines() of them; empty without a title).
    QStringList titleLineTexts() const;
    static constexpr int kMaxTitleLines = 4;
    /// Axis titles drawn beside the row labels (rotated) and under the column labels.
    void setAxisTitles(const QString& rowTitle, const QString& columnTitle);
    /// A text column to the right of the cells, one entry per row, under `header` (e.g. "CV").
    void setSideColumn(const QString& header, const QStringList& texts);
    /// Title of the colour legend (e.g. "G / mean").
    void setLegendTitle(const QString& title);
    /// Text shown while there is no data.
    void setEmptyText(const QString& text);
    /// Rich or plain tooltip text of cell (row, col); default shows labels and the value.
    void setToolTipProvider(std::function<QString(int row, int col)> provider);
    /// Number format of legend ticks and the default tooltip ('g' with this many digits; default 4).
    void setPrecision(int digits);

    int rowCount() const { return rows_; }
    int columnCount() const { return cols_; }
    /// Value of a cell (NaN outside).
    double value(int row, int col) const;
    /// Colour a value is painted with (under PerLayer: in row `row`'s range; row -1 = the whole range).
    QColor colourFor(double v, int row = -1) const;
    /// Colour of cell (row, col) as painted.
    QColor cellColour(int row, int col) const;
    /// The colour mapping of row `row` (the whole map's for -1 or a scale other than PerLayer).
    ColourMapping mapping(int row = -1) const;
    /// Values of the legend's ticks, ascending (empty under PerLayer: its ticks are "row min",
    /// the centre for Diverging, and "row max").
    std::vector<double> legendTicks() const;
    /// Every how many columns a column label is drawn at the current size (axis_label_stride: every
    /// column up to 16 of them, in a smaller font down to kMinColumnLabelScale of the widget's; where
    /// even that is too wide, the power-of-two stride whose span holds a label in the widget's font).
    int columnLabelStride() const;
    /// The column labels' font size as a fraction of the widget's (1 when they fit in its font;
    /// at least kMinColumnLabelScale).
    double columnLabelScale() const;
    /// The smallest font scale of the column labels: below it they are drawn with a stride instead.
    static constexpr double kMinColumnLabelScale = 0.75;
    /// Cell rectangle in widget coordinates (empty when out of range or no data).
    QRect cellRect(int row, int col) const;
    /// Where the axis labels are drawn, relative to their place beside the cells: (x, y) with x >= 0
    /// the shift of the row labels to the right and y <= 0 that of the column labels upwards, so
    /// that in a zoomed and scrolled HeatmapView they stay at the viewport's left and bottom edges
    /// ((0, 0) when the whole map is visible).
    QPoint pinnedLabelOffset() const;
    /// The cell under a widget position, or (-1, -1) (also under the pinned axis labels).
    QPoint cellAt(const QPoint& pos) const;
    /// Tooltip text of a cell (what event(QEvent::ToolTip) shows).
    QString toolTipFor(int row, int col) const;
    /// What Ctrl+C copies: the tooltip of the selected cell (setSelection with a row and a column),
    /// else of the cell the last tooltip or context menu was shown for, as plain text; "" when none.
    QString copiedText() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    void cellClicked(int row, int col);

protected:
    bool event(QEvent* e) override;
    void paintEvent(QPaintEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void changeEvent(QEvent* e) override;
    /// Copy cell details (the tooltip's text), Copy image, Save image… (views/widgets/item_actions.h).
    void contextMenuEvent(QContextMenuEvent* e) override;
    /// Ctrl+C copies copiedText().
    void keyPressEvent(QKeyEvent* e) override;

private:
    struct Geometry {
        QRectF cells;     // cell area
        QRectF legendBar; // colour bar
        double sideX = 0; // left edge of the side column
        double sideW = 0;
        double titleH = 0;
        double markW = 0;   // row-mark column between the row labels and the cells
        double headerY = 0; // top of the header row (side column header, legend title)
    };
    Geometry geometry() const;
    /// Every how many rows a row label (and side column entry) is drawn: 1 unless rows are thinner
    /// than a text line.
    int rowLabelStep(const Geometry& g) const;
    /// The widest column label in the widget's font (px).
    int columnLabelWidth() const;
    /// (stride, font scale) of the column labels for cells `cellWidth` px wide.
    std::pair<int, double> columnLabelLayout(double cellWidth) const;
    // The phases of paintEvent, back to front.
    void paintTitle(QPainter& p) const;
    /// The cached image, separators, the outline, the diagonal, group lines and the selection.
    void paintCells(QPainter& p, const Geometry& g) const;
    /// Row and column labels, row marks and axis titles, pinned to the viewport's edges.
    void paintAxisLabels(QPainter& p, const Geometry& g) const;
    void paintSideColumn(QPainter& p, const Geometry& g) const;
    /// The colour bar with its round ticks.
    void paintLegend(QPainter& p, const Geometry& g) const;
    int lutIndex(double v, int row = -1) const;
    void updateRowRanges();
    void rebuildLut();
    void rebuildImage() const;

    int rows_ = 0, cols_ = 0;
    std::vector<double> values_;
    QStringList rowLabels_, colLabels_, side_;
    QString sideHeader_, title_, rowTitle_, colTitle_, legendTitle_, emptyText_;
    double lo_ = 0, hi_ = 1, centre_ = 0, band_ = 0;
    bool autoRange_ = true;
    ColourMap map_ = ColourMap::Sequential;
    ColourScale scale_ = ColourScale::Linear;
    std::vector<double> rowLo_, rowHi_; ///< finite [min, max] of each row (PerLayer)
    std::vector<bool> marks_;
    QColor markColour_;
    int selRow_ = -1, selCol_ = -1;
    QPoint hoverCell_{-1, -1}; ///< (col, row) of the last tooltip or context menu
    std::vector<int> rowBounds_, colBounds_;
    bool diagonal_ = false;
    int precision_ = 4;
    std::array<QRgb, 256> lut_{};
    std::function<QString(int, int)> tooltip_;
    mutable QImage image_;
    mutable bool imageDirty_ = true;
};

} // namespace routepack::views
