#pragma once
// A top-level window's first size on the screen it opens on: the size the studio prefers where the
// screen's available area holds it with the window manager's frame, else maximized with a normal size
// that fits, so that nothing of the window lies beyond a laptop's screen.
#include <QByteArray>
#include <QRect>
#include <QSize>

class QWidget;

namespace routepack::views {

/// The normal (not maximized) size of a window that prefers `preferred` on a screen whose available
/// area is `available`, when the window manager's frame adds `frame` (its borders, and the title bar
/// in the height): `preferred` bounded by the available size less the frame, never below `minimum`.
/// Pixels (device-independent). E.g. 1560x960 on 1366x768 with a 2 px border and a 24 px title bar
/// (frame 4x28): 1362x740.
QSize fitted_window_size(const QSize& preferred, const QRect& available, const QSize& frame, const QSize& minimum);

/// The frame a window manager adds around top-level window `w`, estimated before the window is shown:
/// the style's title bar height above (as Qt's own QWidget::restoreGeometry estimates it) and 4 px of
/// border on every side (common window managers draw 0-4 px).
QSize window_frame_allowance(const QWidget* w);

/// Sizes top-level window `w` (before it is shown) to fitted_window_size of `preferred` on its
/// screen's available geometry; where `preferred` does not fit there, the window also opens maximized
/// (QWidget::showMaximized's state) and takes the fitted size when restored. Then restores `saved`
/// (QWidget::saveGeometry's bytes of an earlier session; nothing when empty or unreadable) and, when
/// that geometry is larger than the screen's available area (saved on a larger screen), shrinks it
/// to the fitted size and moves its frame inside the area.
void fit_to_screen(QWidget* w, const QSize& preferred, const QByteArray& saved = {});

} // namespace routepack::views
