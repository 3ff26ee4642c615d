#include "views/gain_explanation.h"

#include "views/panel_util.h"

#include <QObject>
#include <QStringList>

namespace routepack::views {

QString gainExplanationText(const GainExplanation& g, const PlanResult& plan) {
    auto pct = [](double v) { return QString::asprintf("%+.2f %%", v); };
    QString out =
        QObject::tr("<b>Why it gains:</b> placing experts by load (LPT) instead of in id order takes the joint cost "
                    "from %1 (baseline) to %2 (reorder), %3; packing samples by their routing instead of by length "
                    "alone takes it to %4 (RoutePack), %5; %6 in all.")
            .arg(g.baseline, 0, 'f', 4)
            .arg(g.reorder, 0, 'f', 4)
            .arg(pct(g.placement_pct))
            .arg(g.routepack, 0, 'f', 4)
            .arg(pct(g.packing_pct))
            .arg(pct(g.total_pct));
    auto step = [&](const char* name, const std::vector<GainExplanation::ShardMove>& shards,
                    const std::vector<GainExplanation::LayerMove>& layers) {
        QStringList parts;
        if (!shards.empty())
            parts << QObject::tr("shard g%1 most (U %2 -> %3)")
                         .arg(shards.front().shard)
                         .arg(shards.front().before, 0, 'f', 4)
                         .arg(shards.front().after, 0, 'f', 4);
        if (!layers.empty() && layers.front().before > layers.front().after)
            parts << QObject::tr("MoE layer %1 (summed row peaks %2 -> %3 tokens)")
                         .arg(layerLabel(plan, layers.front().layer))
                         .arg(layers.front().before)
                         .arg(layers.front().after);
        else if (!layers.empty())
            parts << QObject::tr("no MoE layer's summed row peaks fell");
        return parts.isEmpty()
                   ? QString()
                   : QObject::tr(" %1 moved %2.").arg(QLatin1String(name), parts.join(QObject::tr(" and ")));
    };
    out += step("Placement", g.placement_shards, g.placement_layers);
    out += step("Packing", g.packing_shards, g.packing_layers);
    return out;
}

} // namespace routepack::views
