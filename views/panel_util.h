#pragma once
// What the studio's chart and heatmap pages share (the plan view's tabs, the communication tab, the
// Run and Compare views): layer labels, the "Method:" bar, the heading label, the colour-scale box,
// and chart views with their palette styling. One place, so that every page looks and reads alike.
#include "core/plan/planner.h"

#include <QSize>
#include <QString>
#include <QStringList>

class QChart;
class QChartView;
class QComboBox;
class QHBoxLayout;
class QLabel;
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
/// antialiased, at least `minimum` in size, with the Copy image / Save image context menu.
QChartView* makeChartView(QWidget* parent, QSize minimum = kChartMinimum);
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
/// The colour-scale box of a heatmap page: Linear, Log and (with `perLayer`) Per layer; item data
/// the ColourScale (views/plan_explain.h).
QComboBox* makeScaleCombo(QWidget* parent, bool perLayer);

} // namespace routepack::views
