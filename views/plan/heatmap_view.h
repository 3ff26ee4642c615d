#pragma once
// A HeatmapWidget (views/plan/heatmap_widget.h) in a scroll area that zooms its cells.
#include <QScrollArea>

namespace routepack::views {

class HeatmapWidget;

/// A HeatmapWidget in a scroll area that zooms its cells: at zoom 1 (the default) the map fills the
/// viewport exactly as a bare HeatmapWidget would; at zoom z = 1.25^level (level 0..kMaxZoomLevel) the
/// map is z times the viewport's size (both axes), so cells grow by about z while fonts keep their
/// size (more axis labels fit, none overlap) and scroll bars reach the rest. Ctrl + mouse wheel zooms
/// by one level per wheel notch (120 eighths of a degree) around the point under the mouse; the
/// studio's View menu (Ctrl+=, Ctrl+-, Ctrl+0) zooms every map of the shown plan view
/// (PlanView::zoomHeatmaps). A plain wheel scrolls.
class HeatmapView : public QScrollArea {
    Q_OBJECT
public:
    /// Highest zoom level: 1.25^12 = 14.55 times the viewport.
    static constexpr int kMaxZoomLevel = 12;
    /// Zoom factor of one level.
    static constexpr double kZoomStep = 1.25;

    /// Shows `map` (taken over: reparented into the viewport) without a frame.
    explicit HeatmapView(HeatmapWidget* map, QWidget* parent = nullptr);
    /// Zoom level (0 = fit) and its factor 1.25^level.
    int zoomLevel() const { return level_; }
    double zoom() const;
    /// Sets the level (clamped to 0..kMaxZoomLevel), keeping the map point under viewport position
    /// `anchor` where it is (default: the viewport's centre). Emits zoomChanged when it changed.
    void setZoomLevel(int level, QPoint anchor = QPoint(-1, -1));
    void zoomIn() { setZoomLevel(level_ + 1); }
    void zoomOut() { setZoomLevel(level_ - 1); }
    void resetZoom() { setZoomLevel(0); }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    void zoomChanged(int level);

protected:
    void resizeEvent(QResizeEvent* e) override;
    void wheelEvent(QWheelEvent* e) override;

private:
    /// Sizes the map to the viewport times the zoom.
    void layoutMap();
    HeatmapWidget* map_ = nullptr;
    int level_ = 0;
    int wheelEighths_ = 0; ///< wheel rotation not yet turned into a level (high-resolution wheels)
};

} // namespace routepack::views
