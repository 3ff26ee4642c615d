#pragma once
// The studio's rule for the keyboard in a text field: a window's own shortcut (Ctrl+E exports what
// is shown, Ctrl+D defines a window, ...) is the window's even while a line edit has the focus,
// whatever the platform's text-editing bindings say (on X11 Ctrl+E moves to the end of the line).

class QAction;
class QKeyEvent;
class QWidget;

namespace routepack::views {

/// Installs the shortcut rule on the running QApplication (once; later calls do nothing): a
/// ShortcutOverride event of a Ctrl key reaching a QLineEdit (a spin box's line included) is
/// ignored, so the window's shortcut runs instead of the field's binding, when windowShortcutFor
/// finds an action for it. The standard editing keys (copy, cut, paste, select all, undo, redo)
/// stay the field's. Covers every window of the process. Does nothing without a QApplication.
void installShortcutGuard();

/// The enabled action of `field`'s window whose window- or application-wide shortcut is the key of
/// `key` (a Ctrl key that is not a standard editing key), or nullptr.
QAction* windowShortcutFor(const QWidget* field, const QKeyEvent& key);

} // namespace routepack::views
