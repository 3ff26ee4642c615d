#include "views/widgets/wheel_guard.h"

#include "views/widgets/shortcut_guard.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QEvent>
#include <QObject>
#include <QWidget>

namespace routepack::views {

namespace {

/// The application-wide event filter of installWheelGuard.
class WheelGuard : public QObject {
public:
    using QObject::QObject;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Polish) {
            auto* w = qobject_cast<QWidget*>(watched);
            if (w && (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w)))
                w->setFocusPolicy(Qt::StrongFocus);
        } else if (event->type() == QEvent::Wheel && wheelBlocked(watched)) {
            // Ignored and filtered: QApplication offers the event to the parents (for a spontaneous
            // event), which scroll.
            event->ignore();
            return true;
        }
        return QObject::eventFilter(watched, event);
    }
};

} // namespace

bool wheelBlocked(const QObject* receiver) {
    const auto* w = qobject_cast<const QWidget*>(receiver);
    if (!w || !(qobject_cast<const QAbstractSpinBox*>(w) || qobject_cast<const QComboBox*>(w))) return false;
    const QWidget* focus = QApplication::focusWidget();
    return !(focus && (focus == w || w->isAncestorOf(focus)));
}

void installInputGuards() {
    installWheelGuard();
    installShortcutGuard();
}

void installWheelGuard() {
    QCoreApplication* app = QCoreApplication::instance();
    if (!app) return;
    const auto name = QStringLiteral("routepack-wheel-guard");
    if (app->findChild<QObject*>(name, Qt::FindDirectChildrenOnly)) return;
    auto* guard = new WheelGuard(app);
    guard->setObjectName(name);
    app->installEventFilter(guard);
}

} // namespace routepack::views
