#pragma once
// The studio's rule for the mouse wheel over a value field: a spin box or combo box changes its
// value by the wheel only while it has the keyboard focus; otherwise the wheel scrolls what holds
// it (the editor dock, a dialog), so scrolling a form never edits it unseen.
class QObject;

namespace routepack::views {

/// Installs the wheel rule on the running QApplication (once; later calls do nothing): every
/// QAbstractSpinBox and QComboBox takes the keyboard focus by Tab or click only (Qt::StrongFocus,
/// set when the widget is polished), and a wheel event reaching one that holds no focus (neither it
/// nor a child of it is QApplication::focusWidget()) is ignored, so Qt hands it to the widget's
/// parents (a scroll area scrolls). Covers every window and dialog of the process, including
/// widgets created later. Does nothing without a QApplication.
void installWheelGuard();

/// installWheelGuard and installShortcutGuard (views/widgets/shortcut_guard.h): the studio's rules
/// for the wheel and the keyboard in its fields.
void installInputGuards();

/// True when `receiver` is a value field (QAbstractSpinBox or QComboBox) that holds no keyboard
/// focus: the wheel guard ignores wheel events sent to it.
bool wheelBlocked(const QObject* receiver);

} // namespace routepack::views
