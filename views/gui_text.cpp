#include "views/gui_text.h"

#include "core/plan/budget_table.h"

#include <QCoreApplication>

#include <array>
#include <new>
#include <string_view>
#include <utility>

namespace routepack::views {

namespace {

/// Setting keys other than the planner budgets (core/util/errors.h) -> the studio field that sets
/// them: the window dialog's choices, the import dialog's, window dialog's, topology editor's and
/// Rename run dialog's name fields, the import dialog's model fields, the checkpoint rewrite
/// dialog's fields.
constexpr std::array<std::pair<std::string_view, const char*>, 20> kSettingLabels{{
    {"first", QT_TRANSLATE_NOOP("Settings", "First N in numeric id order")},
    {"random", QT_TRANSLATE_NOOP("Settings", "N random samples")},
    {"split", QT_TRANSLATE_NOOP("Settings", "windows of N samples")},
    {"split_groups", QT_TRANSLATE_NOOP("Settings", "windows of G whole GRPO groups")},
    {"trace_name", QT_TRANSLATE_NOOP("Settings", "Trace name")},
    {"window_name", QT_TRANSLATE_NOOP("Settings", "Window name")},
    {"topology_name", QT_TRANSLATE_NOOP("Settings", "Topology name")},
    {"run_name", QT_TRANSLATE_NOOP("Settings", "Run name")},
    {"moe_layers", QT_TRANSLATE_NOOP("Settings", "MoE layers")},
    {"num_hidden_layers", QT_TRANSLATE_NOOP("Settings", "Decoder layers")},
    {"experts", QT_TRANSLATE_NOOP("Settings", "Experts E")},
    {"top_k", QT_TRANSLATE_NOOP("Settings", "Top-k")},
    {"rewrite_input", QT_TRANSLATE_NOOP("Settings", "Input checkpoint")},
    {"rewrite_output", QT_TRANSLATE_NOOP("Settings", "Output folder")},
    {"rewrite_device", QT_TRANSLATE_NOOP("Settings", "Device")},
    {"rewrite_layer_map", QT_TRANSLATE_NOOP("Settings", "Layer map")},
    {"rewrite_workers", QT_TRANSLATE_NOOP("Settings", "Workers")},
    {"rewrite_permute_router", QT_TRANSLATE_NOOP("Settings", "Permute router rows")},
    {"rewrite_verify", QT_TRANSLATE_NOOP("Settings", "Verify")},
    {"rewrite_inverse", QT_TRANSLATE_NOOP("Settings", "Direction: Inverse")},
}};

/// Requests for one of several ways to give something ("ask_" keys of core/import) -> the whole
/// phrase in the import dialog's terms, verb included.
constexpr std::array<std::pair<std::string_view, const char*>, 4> kRequests{{
    {"ask_model", QT_TRANSLATE_NOOP("Settings", "choose the Model: a shipped model, a Hugging Face config.json, or "
                                                "Fields (Experts E, Top-k)")},
    {"ask_expert_count", QT_TRANSLATE_NOOP("Settings", "choose the Model: a shipped model, a Hugging Face "
                                                       "config.json, or Fields (Experts E)")},
    {"ask_moe_layers",
     QT_TRANSLATE_NOOP("Settings", "fill in the Model's Fields: \"MoE layers\" or \"Decoder layers\"")},
    {"ask_format", QT_TRANSLATE_NOOP("Settings", "choose the \"Format\"")},
}};

QString quotedLabel(const QString& label) {
    return QLatin1Char('"') + label + QLatin1Char('"');
}

} // namespace

QString guiSettingText(const Setting& setting) {
    QString label;
    if (const BudgetRow* row = find_budget(setting.key)) {
        label = QString::fromUtf8(row->label);
    } else {
        for (const auto& [key, text] : kSettingLabels)
            if (setting.key == key) label = QCoreApplication::translate("Settings", text);
        for (const auto& [key, text] : kRequests)
            if (setting.key == key) return QCoreApplication::translate("Settings", text);
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
