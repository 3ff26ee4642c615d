#pragma once
// Method combo boxes of the plan panels: items labelled method_label(m), item data method_index(m).
#include "core/plan/planner.h"

#include <QComboBox>

namespace routepack::views {

/// Appends method m: text method_label(m), data method_index(m).
void addMethodItem(QComboBox* box, Method m);
/// A box listing the paper's four methods with RoutePack shown.
QComboBox* methodCombo(QWidget* parent);
/// Refills a method box with the methods of `plan` that have a layout (layout_methods; the paper's
/// four without a plan), keeping the
/// shown method when the plan has it, else RoutePack. Emits no signal.
void fillMethodCombo(QComboBox* box, const PlanResult* plan);
/// The method a box shows (RoutePack when the box is empty).
Method comboMethod(const QComboBox* box);
/// Shows method m when the box lists it (otherwise leaves the box as it is).
void setComboMethod(QComboBox* box, Method m);

} // namespace routepack::views
