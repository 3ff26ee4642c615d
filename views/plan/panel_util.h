#pragma once
// What the studio's chart and heatmap pages share (the plan view's tabs, the communication tab, the
// Run and Compare views): layer labels, the "Method:" bar, the heading label, the colour-scale box,
// and chart views with their palette styling. One place, so that every page looks and reads alike.
#include "core/plan/planner.h"

#include <QLabel>
#include <QSize>
#include <QString>
#include <QStringList>

class QChart;
class QChartView;
class QComboBox;
class QHBoxLayout;
class QPalette;
class QWidget;

namespace routepack::views {

/// The label of MoE layer index `l` of a plan: its absolute decoder layer id (model.moe_layers[l]),
/// or `l` itself when the plan lists no id for it.
QString layerLabel(const routepack::PlanResult& plan, int l);
/// layerLabel of every MoE layer index 0..L-1.
QStringList layerLabels(const routepack::PlanResult& plan);

/// The smallest size of a chart view (px): what makeChartView gives unless told otherwise.
inline constexpr QSize kChartMinimum(240, 200);
/// A chart view over a new QChart: square corners, 4 px margins, the legend at the bottom,
/// antialiased, at least `minimum` in size, with the Copy image / Save image context menu, its
/// title and legend kept whole (keepChartTextWhole).
QChartView* makeChartView(QWidget* parent, QSize minimum = kChartMinimum);
/// Keeps the chart of `view` from eliding its title or its legend, whatever the view's width: before
/// each paint the title the panel set (its "<br>" lines) is wrapped at spaces to the chart's width,
/// and a top or bottom legend whose entries do not fit one row is hidden and its entries (a colour
/// square and the name) are listed, whole, under the title instead; shown again once they fit.
/// chart->title() is then the wrapped title; chartTitleText gives the one the panel set.
void keepChartTextWhole(QChartView* view);
/// The title a panel set on `chart` (before keepChartTextWhole wrapped it, or without it).
QString chartTitleText(const QChart* chart);
/// Removes every series and axis of `chart` (deleting the axes) and its title.
void clearChart(QChart* chart);
/// Styles a chart from a widget palette: background (Base), text (title, legend, axis labels and
/// titles: Text), grid and axis lines (Mid). Series colours are left alone (they are chosen to
/// read on light and dark backgrounds). Call again on QEvent::PaletteChange.
void styleChart(QChart* chart, const QPalette& palette);

/// A word-wrapped rich-text label: a page's heading or note.
QLabel* headingLabel(QWidget* parent);
/// The layout a per-method page has: a bar "Method: [methodBox]", then `heading`, then `body` taking
/// the remaining height. Returns the bar, for the page's further widgets.
QHBoxLayout* methodPanelLayout(QWidget* self, QComboBox* methodBox, QWidget* heading, QWidget* body);
/// A one-line label that never asks for more width than it gets: text too long for its width is
/// elided at the right ("…"), its beginning kept, and the whole text is the tooltip. Put what must
/// stay readable (a run's name, a number) first.
class ElidedLabel : public QLabel {
public:
    explicit ElidedLabel(QWidget* parent = nullptr);
    /// Shows `text` (plain), elided to the current width.
    void setFullText(const QString& text);
    /// The whole text last set (QLabel::text() is what is shown).
    QString fullText() const { return full_; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void elide();
    QString full_;
};

/// The colour-scale box of a heatmap page: Linear, Log and (with `perLayer`) Per layer; item data
/// the ColourScale (views/plan/plan_explain.h).
QComboBox* makeScaleCombo(QWidget* parent, bool perLayer);

} // namespace routepack::views
