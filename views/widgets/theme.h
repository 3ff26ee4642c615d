#pragma once
// The studio's light and dark themes under the Fusion style. Qt without a platform theme (Qt 6.4 on
// a plain X11 or offscreen session) hands an application no dark palette, so the dark one is set
// here explicitly; the light one is Fusion's own standard palette.
#include <QPalette>
#include <QString>

namespace routepack::views {

enum class Theme { Light, Dark };

/// "light" / "dark" (the value kept in the settings).
QString themeKey(Theme theme);
/// Inverse of themeKey; `fallback` for any other text.
Theme themeFromKey(const QString& key, Theme fallback = Theme::Light);

/// The dark palette: window #2d2d30, base #1e1e1e, text #e6e6e6, button #3a3a3d, highlight
/// #2f65ca with white text, links #6fa8ff, grey (#808080) disabled text, tooltips on the base colour.
QPalette darkThemePalette();
/// Fusion's light palette (QStyle::standardPalette of the Fusion style).
QPalette lightThemePalette();

/// Sets the Fusion style and the theme's palette on the whole application (every open window
/// repaints: widgets and charts follow QEvent::PaletteChange). Needs a QApplication.
void applyTheme(Theme theme);

} // namespace routepack::views
