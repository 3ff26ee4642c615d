#include "views/widgets/shortcut_guard.h"

#include <QAction>
#include <QApplication>
#include <QEvent>
#include <QKeyEvent>
#include <QLineEdit>
#include <QObject>
#include <QWidget>

namespace routepack::views {

namespace {

/// The application-wide event filter of installShortcutGuard.
class ShortcutGuard : public QObject {
public:
    using QObject::QObject;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::ShortcutOverride) {
            const auto* edit = qobject_cast<const QLineEdit*>(watched);
            if (edit && windowShortcutFor(edit, *static_cast<QKeyEvent*>(event))) {
                // Not accepted: the shortcut map runs the window's action.
                event->ignore();
                return true;
            }
        }
        return QObject::eventFilter(watched, event);
    }
};

} // namespace

QAction* windowShortcutFor(const QWidget* field, const QKeyEvent& key) {
    if (!field || !(key.modifiers() & Qt::ControlModifier)) return nullptr;
    for (const QKeySequence::StandardKey k : {QKeySequence::Copy, QKeySequence::Cut, QKeySequence::Paste,
                                              QKeySequence::SelectAll, QKeySequence::Undo, QKeySequence::Redo})
        if (key.matches(k)) return nullptr;
    const QKeySequence pressed(key.keyCombination());
    for (QAction* a : field->window()->findChildren<QAction*>()) {
        const Qt::ShortcutContext c = a->shortcutContext();
        if (!a->isEnabled() || (c != Qt::WindowShortcut && c != Qt::ApplicationShortcut)) continue;
        if (a->shortcuts().contains(pressed)) return a;
    }
    return nullptr;
}

void installShortcutGuard() {
    QCoreApplication* app = QCoreApplication::instance();
    if (!app) return;
    const auto name = QStringLiteral("routepack-shortcut-guard");
    if (app->findChild<QObject*>(name, Qt::FindDirectChildrenOnly)) return;
    auto* guard = new ShortcutGuard(app);
    guard->setObjectName(name);
    app->installEventFilter(guard);
}

} // namespace routepack::views
