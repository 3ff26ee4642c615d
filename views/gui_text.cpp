#include "views/gui_text.h"

#include "core/plan/budget_table.h"

#include <QCoreApplication>
#include <QRegularExpression>

#include <array>
#include <new>
#include <string_view>
#include <utility>

namespace routepack::views {

namespace {

using Pair = std::pair<const char*, const char*>;

/// Setting keys other than the planner budgets (core/util/errors.h) -> the studio field that sets
/// them: the window dialog's choices, the import dialog's, window dialog's and topology editor's
/// name fields.
constexpr std::array<std::pair<std::string_view, const char*>, 7> kSettingLabels{{
    {"first", QT_TRANSLATE_NOOP("Settings", "First N in numeric id order")},
    {"random", QT_TRANSLATE_NOOP("Settings", "N random samples")},
    {"split", QT_TRANSLATE_NOOP("Settings", "windows of N samples")},
    {"split_groups", QT_TRANSLATE_NOOP("Settings", "windows of G whole GRPO groups")},
    {"trace_name", QT_TRANSLATE_NOOP("Settings", "Trace name")},
    {"window_name", QT_TRANSLATE_NOOP("Settings", "Window name")},
    {"topology_name", QT_TRANSLATE_NOOP("Settings", "Topology name")},
}};

/// Whole CLI phrases of core/import (import.cpp resolve_model, detect step; import_aggregate.cpp).
constexpr std::array<Pair, 4> kPhrases{{
    {"give --model NAME, --model-config config.json, or --experts E --top-k K",
     "choose the Model: a shipped model, a Hugging Face config.json, or Fields (Experts E, Top-k)"},
    {"give --model NAME, --model-config config.json or --experts E",
     "choose the Model: a shipped model, a Hugging Face config.json, or Fields (Experts E)"},
    {"give --moe-layers LIST or --layers N", "fill in the Model's Fields: \"MoE layers\" or \"Decoder layers\""},
    {"use --format;", "choose the \"Format\";"},
}};

/// CLI flags still named by the import and checkpoint rewrite code -> the studio field that sets the
/// same thing (import dialog, checkpoint rewrite dialog).
constexpr std::array<Pair, 14> kFlags{{
    {"--model-config", "Hugging Face config.json"},
    {"--model", "Model"},
    {"--experts", "Experts E"},
    {"--top-k", "Top-k"},
    {"--moe-layers", "MoE layers"},
    {"--layers", "Decoder layers"},
    {"--format", "Format"},
    {"--layer-map", "Layer map"},
    {"--device", "Device"},
    {"--input", "Input checkpoint"},
    {"--output", "Output folder"},
    {"--permute-router", "Permute router rows"},
    {"--verify", "Verify"},
    {"--workers", "Workers"},
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
    }
    if (label.isEmpty()) return QString::fromStdString(setting.words);
    QString out = quotedLabel(label);
    if (!setting.value.empty()) out += QStringLiteral(" = ") + QString::fromStdString(setting.value);
    return out;
}

QString guiErrorText(const std::exception& e) {
    if (dynamic_cast<const std::bad_alloc*>(&e)) return QStringLiteral("out of memory");
    if (const auto* input = dynamic_cast<const InputError*>(&e))
        return guiFieldText(
            QString::fromStdString(input->reworded([](const Setting& s) { return guiSettingText(s).toStdString(); })));
    return QString::fromStdString(e.what());
}

QString guiFieldText(const QString& message) {
    QString out = message;
    for (const auto& [cli, gui] : kPhrases)
        out.replace(QLatin1String(cli), QLatin1String(gui));
    for (const auto& [flag, field] : kFlags) {
        // The flag as a whole word ("--model" is not the start of "--model-config"), with its value
        // when a number follows: "--workers 0" -> "Workers" = 0.
        const QRegularExpression re(QStringLiteral("(?<![\\w-])%1(?![\\w-])( (-?[0-9][0-9.]*))?")
                                        .arg(QRegularExpression::escape(QLatin1String(flag))));
        const QString quoted = quotedLabel(QLatin1String(field));
        QString next;
        qsizetype at = 0;
        for (auto it = re.globalMatch(out); it.hasNext();) {
            const QRegularExpressionMatch m = it.next();
            next += out.mid(at, m.capturedStart() - at);
            next += quoted;
            if (m.capturedLength(2) > 0) next += QStringLiteral(" = ") + m.captured(2);
            at = m.capturedEnd();
        }
        next += out.mid(at);
        out = next;
    }
    return out;
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

} // namespace routepack::views
