#include "views/widgets/gui_text.h"

#include "core/plan/budgets.h"
#include "core/util/settings.h"

#include <QCoreApplication>

#include <array>
#include <new>
#include <string_view>
#include <utility>

namespace routepack::views {

namespace {

QString quotedLabel(const QString& label) {
    return QLatin1Char('"') + label + QLatin1Char('"');
}

} // namespace

QString guiSettingText(const Setting& setting) {
    QString label;
    if (const BudgetRow* row = find_budget(setting.key)) {
        label = QString::fromUtf8(row->label);
    } else if (const SettingRow* s = find_setting(setting.key); s && s->label) {
        if (s->request) return QCoreApplication::translate("Settings", s->label);
        label = QCoreApplication::translate("Settings", s->label);
    }
    if (label.isEmpty()) return QString::fromStdString(setting.words);
    QString out = quotedLabel(label);
    if (!setting.value.empty()) out += QStringLiteral(" = ") + QString::fromStdString(setting.value);
    return out;
}

QString guiErrorText(const std::exception& e) {
    if (dynamic_cast<const std::bad_alloc*>(&e)) return QStringLiteral("out of memory");
    if (const auto* input = dynamic_cast<const InputError*>(&e))
        return QString::fromStdString(
            input->reworded([](const Setting& s) { return guiSettingText(s).toStdString(); }));
    return QString::fromStdString(e.what());
}

} // namespace routepack::views

namespace routepack::views {

QString durationText(double seconds) {
    if (!(seconds > 0)) seconds = 0;
    if (seconds < 9.95) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
    const qint64 s = qRound64(seconds);
    if (s < 60) return QStringLiteral("%1 s").arg(s);
    if (s < 3600) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    const qint64 m = qRound64(seconds / 60.0);
    return QStringLiteral("%1 h %2 min").arg(m / 60).arg(m % 60, 2, 10, QLatin1Char('0'));
}

QString progressTimeText(double elapsedSeconds, double fraction) {
    QString elapsed = QStringLiteral("%1 elapsed").arg(durationText(elapsedSeconds));
    if (!(fraction >= 0.02) || fraction >= 1.0 || !(elapsedSeconds >= 1.0)) return elapsed;
    const double left = elapsedSeconds * (1.0 - fraction) / fraction;
    return QStringLiteral("%1, about %2 left").arg(elapsed, durationText(left));
}

QString capText(const Topology& t) {
    if (t.token_cap > 0) return QString::number(t.token_cap);
    return QCoreApplication::translate("routepack::views", "none (the %1 longest samples)")
        .arg(t.batch.samples_per_cell);
}

} // namespace routepack::views
