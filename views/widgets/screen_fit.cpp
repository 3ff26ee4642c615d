#include "views/widgets/screen_fit.h"

#include <QGuiApplication>
#include <QScreen>
#include <QStyle>
#include <QStyleOptionTitleBar>
#include <QWidget>

#include <algorithm>

namespace routepack::views {

QSize fitted_window_size(const QSize& preferred, const QRect& available, const QSize& frame, const QSize& minimum) {
    const int width = std::min(preferred.width(), available.width() - std::max(0, frame.width()));
    const int height = std::min(preferred.height(), available.height() - std::max(0, frame.height()));
    return QSize(std::max(width, minimum.width()), std::max(height, minimum.height()));
}

QSize window_frame_allowance(const QWidget* w) {
    QStyleOptionTitleBar bar;
    bar.initFrom(w);
    const int title = w->style()->pixelMetric(QStyle::PM_TitleBarHeight, &bar, w);
    constexpr int kBorder = 4; // the side and bottom borders of common window managers are 0-4 px
    return QSize(2 * kBorder, title + 2 * kBorder);
}

void fit_to_screen(QWidget* w, const QSize& preferred, const QByteArray& saved) {
    const QScreen* screen = w->screen() ? w->screen() : QGuiApplication::primaryScreen();
    if (!screen) {
        w->resize(preferred);
        if (!saved.isEmpty()) w->restoreGeometry(saved);
        return;
    }
    const QRect available = screen->availableGeometry();
    const QSize frame = window_frame_allowance(w);
    const QSize size = fitted_window_size(preferred, available, frame, w->minimumSize());
    w->resize(size);
    if (size != preferred) {
        w->move(available.topLeft());
        w->setWindowState(w->windowState() | Qt::WindowMaximized);
    }
    if (saved.isEmpty() || !w->restoreGeometry(saved)) return;
    const QSize restored = w->size();
    const QSize fitted = fitted_window_size(restored, available, frame, w->minimumSize());
    if (fitted == restored) return;
    w->resize(fitted);
    // A top-level window's position is its frame's: the frame (fitted + frame) goes inside the area.
    const QSize outer = fitted + frame;
    w->move(std::clamp(w->x(), available.left(), std::max(available.left(), available.right() + 1 - outer.width())),
            std::clamp(w->y(), available.top(), std::max(available.top(), available.bottom() + 1 - outer.height())));
}

} // namespace routepack::views
