#include "views/plan/gain_explanation.h"

#include "core/plan/method.h"
#include "views/plan/panel_util.h"

#include <QObject>
#include <QStringList>
#include <cmath>

namespace routepack::views {

namespace {

QString num(double v) {
    return QString::number(v, 'f', 4);
}
QString signedNum(double v) {
    if (v == 0) v = 0; // no "-0.0000"
    return QString::asprintf("%+.4f", v);
}
QString signedTokens(double v) {
    return QString::asprintf("%+lld", static_cast<long long>(std::llround(v)));
}

/// "moved most" of one step: the shard, row, layer and EP rank with the largest change, as links.
QString movedMost(const GainStep& s, const GainState& end, const PlanResult& plan) {
    const QString m = QString::fromLatin1(method_key(s.method));
    const int g = end.straggler;
    QStringList parts;
    if (!s.shards.empty())
        parts << QObject::tr("shard <a href=\"shard:%1:%2\">g%1</a> (U %3)")
                     .arg(s.shards.front().index)
                     .arg(m, signedNum(s.shards.front().change()));
    if (!s.rows.empty())
        parts << QObject::tr("row <a href=\"row:%1:%2:%3\">r%1</a> (J %4)")
                     .arg(s.rows.front().index)
                     .arg(g)
                     .arg(m, signedNum(s.rows.front().change()));
    if (!s.layers.empty())
        parts << QObject::tr("MoE layer <a href=\"layer:%1:%2:%3\">%4</a> (%5 tokens)")
                     .arg(s.layers.front().index)
                     .arg(g)
                     .arg(m, layerLabel(plan, s.layers.front().index), signedTokens(s.layers.front().change()));
    if (!s.ranks.empty())
        parts << QObject::tr("EP rank <a href=\"rank:%1:%2\">%2 of layer %3</a> (%4 tokens)")
                     .arg(s.ranks.front().index)
                     .arg(s.ranks.front().rank)
                     .arg(layerLabel(plan, s.ranks.front().index), signedTokens(s.ranks.front().change()));
    return parts.isEmpty() ? QObject::tr("nothing moved") : parts.join(QStringLiteral(", "));
}

} // namespace

QString gainExplanationText(const GainSplit& g, const PlanResult& plan) {
    auto pct = [&](double change) {
        return QString::asprintf("%+.2f %%", g.percent(change) == 0 ? 0.0 : g.percent(change));
    };
    const GainStep& lpt = g.steps[0];
    const GainStep& pack = g.steps[1];
    const GainStep& refine = g.steps[2];
    const double attention = lpt.attention + pack.attention + refine.attention;
    const double expert = lpt.expert + pack.expert + refine.expert;
    QString out =
        QObject::tr("<b>Why it gains:</b> max_g U goes from %1 (baseline) to %2 (RoutePack), %3 (%4) = placement %5 "
                    "(%6: LPT %7, then refined for the layout %8) + packing %9 (%10); by part, attention %11 + expert "
                    "%12 on the straggler shard. Rows, layers and ranks are read on the straggler shard at each end, "
                    "so their changes add up to the step's.")
            .arg(num(g.states[0].max_u), num(g.states[3].max_u), signedNum(g.total()), pct(g.total()))
            .arg(signedNum(g.placement()), pct(g.placement()), signedNum(lpt.change()), signedNum(refine.change()))
            .arg(signedNum(g.packing()), pct(g.packing()), signedNum(attention), signedNum(expert));
    const QString names[] = {QObject::tr("LPT placement (baseline -> reorder)"),
                             QObject::tr("packing (reorder -> RoutePack's layout at LPT)"),
                             QObject::tr("placement refined for the layout")};
    out += QStringLiteral("<table cellspacing=\"0\" cellpadding=\"3\"><tr><th align=\"left\">%1</th><th>%2</th>"
                          "<th>%3</th><th>%4</th><th>%5</th><th align=\"left\">%6</th></tr>")
               .arg(QObject::tr("step"), QObject::tr("max_g U"), QObject::tr("change"), QObject::tr("attention"),
                    QObject::tr("expert"), QObject::tr("moved most"));
    for (std::size_t k = 0; k < g.steps.size(); ++k) {
        const GainStep& s = g.steps[k];
        out += QStringLiteral("<tr><td>%1</td><td align=\"right\">%2 &rarr; %3</td><td align=\"right\">%4</td>"
                              "<td align=\"right\">%5</td><td align=\"right\">%6</td><td>%7</td></tr>")
                   .arg(names[k], num(s.before), num(s.after), signedNum(s.change()), signedNum(s.attention),
                        signedNum(s.expert), movedMost(s, g.states[k + 1], plan));
    }
    out += QStringLiteral("</table>");
    return out;
}

ExplainLink parseExplainLink(const QString& link) {
    const QStringList f = link.split(QLatin1Char(':'));
    ExplainLink out;
    auto n = [&](int k) {
        bool ok = false;
        const int v = k < f.size() ? f[k].toInt(&ok) : -1;
        return ok && v >= 0 ? v : -1;
    };
    auto method = [&](int k) {
        const auto m = k < f.size() ? method_from_key(f[k].toStdString()) : std::nullopt;
        return m;
    };
    const QString kind = f.value(0);
    if (kind == QLatin1String("shard") && f.size() == 3 && n(1) >= 0 && method(2)) {
        out = {ExplainLink::Shard, n(1), -1, *method(2)};
    } else if ((kind == QLatin1String("row") || kind == QLatin1String("layer")) && f.size() == 4 && n(1) >= 0 &&
               n(2) >= 0 && method(3)) {
        out = {kind == QLatin1String("row") ? ExplainLink::Row : ExplainLink::Layer, n(1), n(2), *method(3)};
    } else if (kind == QLatin1String("rank") && f.size() == 3 && n(1) >= 0 && n(2) >= 0) {
        out = {ExplainLink::Rank, n(1), n(2), routepack::Method::RoutePack};
    }
    return out;
}

} // namespace routepack::views
