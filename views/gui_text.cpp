#include "views/gui_text.h"

#include "core/plan/budget_table.h"

#include <QRegularExpression>

#include <array>
#include <utility>
#include <vector>

namespace routepack::views {

namespace {

using Pair = std::pair<const char*, const char*>;

/// Whole CLI phrases of core/import (import.cpp resolve_model, detect step; import_aggregate.cpp).
constexpr std::array<Pair, 4> kPhrases{{
    {"give --model NAME, --model-config config.json, or --experts E --top-k K",
     "choose the Model: a shipped model, a Hugging Face config.json, or Fields (Experts E, Top-k)"},
    {"give --model NAME, --model-config config.json or --experts E",
     "choose the Model: a shipped model, a Hugging Face config.json, or Fields (Experts E)"},
    {"give --moe-layers LIST or --layers N", "fill in the Model's Fields: \"MoE layers\" or \"Decoder layers\""},
    {"use --format;", "choose the \"Format\";"},
}};

/// CLI flag -> the studio field that sets the same thing (import dialog, window dialog, checkpoint
/// rewrite dialog, topology and budget editor).
constexpr std::array<Pair, 22> kFlags{{
    {"--model-config", "Hugging Face config.json"},
    {"--model", "Model"},
    {"--experts", "Experts E"},
    {"--top-k", "Top-k"},
    {"--moe-layers", "MoE layers"},
    {"--layers", "Decoder layers"},
    {"--format", "Format"},
    {"--first", "First N in numeric id order"},
    {"--random", "N random samples"},
    {"--split-groups", "windows of G whole GRPO groups"},
    {"--split", "windows of N samples"},
    {"--layer-map", "Layer map"},
    {"--device", "Device"},
    {"--input", "Input checkpoint"},
    {"--output", "Output folder"},
    {"--permute-router", "Permute router rows"},
    {"--verify", "Verify"},
    {"--workers", "Workers"},
    {"--topology", "Topology"},
    {"--db", "library"},
    {"--trace", "trace"},
    {"--window", "window"},
}};

/// The CLI flags above, then every planner budget's flag (core/plan/budget_table.h) -> its field.
const std::vector<Pair>& flagFields() {
    static const std::vector<Pair> all = [] {
        std::vector<Pair> v(kFlags.begin(), kFlags.end());
        for (const BudgetRow& row : budget_table())
            if (row.flag) v.emplace_back(row.flag, row.label);
        return v;
    }();
    return all;
}

} // namespace

QString guiFieldText(const QString& message) {
    QString out = message;
    for (const auto& [cli, gui] : kPhrases)
        out.replace(QLatin1String(cli), QLatin1String(gui));
    for (const auto& [flag, field] : flagFields()) {
        // The flag as a whole word ("--split" is not the start of "--split-groups"), with its value
        // when a number follows: "--split 40" -> "windows of N samples" = 40.
        const QRegularExpression re(QStringLiteral("(?<![\\w-])%1(?![\\w-])( (-?[0-9][0-9.]*))?")
                                        .arg(QRegularExpression::escape(QLatin1String(flag))));
        const QString quoted = QLatin1Char('"') + QLatin1String(field) + QLatin1Char('"');
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
    // Planner budget JSON keys (check_planner_budgets with BudgetNames::Keys) -> the editor's field.
    for (const BudgetRow& row : budget_table())
        out.replace(QStringLiteral("budget '%1'").arg(QLatin1String(row.key)),
                    QLatin1Char('"') + QString::fromUtf8(row.label) + QLatin1Char('"'));
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
