#include "views/dialogs/topology_text.h"

#include "core/util/errors.h"

#include <QLocale>
#include <QRegularExpression>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace routepack::views {

std::vector<std::vector<int>> parseShardText(const QString& text, int dpSlots) {
    // Bounds first, expansion second: the text is parsed on the GUI thread at every keystroke, so a
    // range is never expanded past the DP slots there are (or kMaxShardSlots when D is unknown),
    // and all ranges together never list more than kMaxListed slots (a valid partition lists D;
    // overlaps below that bound are left to parse_topology, which names the slot).
    constexpr int kMaxShardSlots = 65536;
    constexpr std::int64_t kMaxListed = std::int64_t{1} << 20;
    const int limit = dpSlots > 0 ? dpSlots : kMaxShardSlots;
    const std::string dText = dpSlots > 0 ? " (D = " + std::to_string(dpSlots) + ")" : std::string();
    const std::string slotsText = "0.." + std::to_string(limit - 1) + dText;
    std::int64_t listed = 0;
    std::vector<std::vector<int>> out;
    const QStringList groups = text.split(QRegularExpression(QStringLiteral("[|;]")), Qt::KeepEmptyParts);
    for (const QString& g : groups) {
        std::vector<int> slots;
        for (const QString& raw : g.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            const QString tok = raw.trimmed();
            if (tok.isEmpty()) continue;
            bool ok1 = false, ok2 = false;
            const int dash = tok.indexOf(QLatin1Char('-'));
            if (dash > 0) {
                const int a = tok.left(dash).trimmed().toInt(&ok1), b = tok.mid(dash + 1).trimmed().toInt(&ok2);
                if (!ok1 || !ok2 || a > b || a < 0)
                    throw InputError("EDP shards: bad range '" + tok.toStdString() + "' (write e.g. 0-3)");
                if (b >= limit)
                    throw InputError("EDP shards: range '" + tok.toStdString() + "' names DP slot " +
                                     std::to_string(b) + ", outside " + slotsText);
                listed += static_cast<std::int64_t>(b) - a + 1;
                if (listed > kMaxListed)
                    throw InputError("EDP shards: the ranges list more than " + std::to_string(kMaxListed) +
                                     " DP slots" + dText + "; every DP slot belongs to exactly one shard");
                for (int d = a; d <= b; ++d)
                    slots.push_back(d);
            } else {
                const int d = tok.toInt(&ok1);
                if (!ok1 || d < 0) throw InputError("EDP shards: bad DP slot '" + tok.toStdString() + "'");
                slots.push_back(d);
            }
        }
        if (slots.empty()) throw InputError("EDP shards: an empty shard (write e.g. 0,1 | 2,3)");
        out.push_back(std::move(slots));
    }
    return out;
}

QString shardText(const std::vector<std::vector<int>>& shards) {
    QStringList groups;
    for (const auto& g : shards) {
        QStringList parts;
        for (std::size_t k = 0; k < g.size();) {
            std::size_t j = k;
            while (j + 1 < g.size() && g[j + 1] == g[j] + 1)
                ++j;
            if (j - k >= 2) {
                parts << QStringLiteral("%1-%2").arg(g[k]).arg(g[j]);
                k = j + 1;
            } else {
                parts << QString::number(g[k]);
                ++k;
            }
        }
        groups << parts.join(QLatin1Char(','));
    }
    return groups.join(QStringLiteral(" | "));
}

std::vector<int> parseNodeListText(const QString& text, const std::string& what) {
    std::vector<int> out;
    const QStringList tokens = text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts);
    for (const QString& tok : tokens) {
        bool ok = false;
        const int v = tok.toInt(&ok);
        if (!ok || v < 0 || v > 65535)
            throw InputError(what + ": '" + tok.toStdString() + "' is not a node id (an integer in 0..65535)");
        out.push_back(v);
    }
    return out;
}

QString nodeListText(const std::vector<int>& nodes) {
    QStringList parts;
    for (int v : nodes)
        parts << QString::number(v);
    return parts.join(QStringLiteral(", "));
}

} // namespace routepack::views
