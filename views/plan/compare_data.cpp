#include "views/plan/compare_data.h"

#include <QStringList>

namespace routepack::views {

CompareRunFacts compareRunFacts(qint64 id, const PlanResult& plan) {
    CompareRunFacts f;
    f.id = id;
    f.topology = plan.topology;
    f.seed = plan.budgets.seed;
    f.levels = plan.budgets.annealing.levels;
    f.steps = plan.budgets.annealing.steps;
    f.maxMoves = plan.budgets.max_moves;
    f.historyDecay = plan.budgets.history_decay;
    f.cancelled = plan.cancelled;
    f.timeLimit = plan.time_limit_hit;
    return f;
}

CompareRunFacts compareRunFacts(const storage::RunEntry& run) {
    CompareRunFacts f;
    f.id = run.id;
    f.name = QString::fromStdString(run.name);
    f.topology = run.topology_value;
    f.seed = run.budgets.seed;
    f.levels = run.budgets.annealing.levels;
    f.steps = run.budgets.annealing.steps;
    f.maxMoves = run.budgets.max_moves;
    f.historyDecay = run.budgets.history_decay;
    f.cancelled = run.status == "cancelled";
    f.failed = run.status == "failed";
    f.timeLimit = !f.cancelled && run.message.find("time limit") != std::string::npos;
    return f;
}

QString compareRunName(qint64 id) {
    return id > 0 ? QObject::tr("run %1").arg(id) : QObject::tr("unsaved %1").arg(-id);
}

QString compareRunLabel(const CompareRunFacts& f) {
    QStringList parts{compareRunName(f.id)};
    if (!f.name.isEmpty()) parts << f.name;
    parts << QStringLiteral("EP%1/DP%2").arg(f.topology.ep_ranks).arg(f.topology.dp_slots);
    const int nodes = f.topology.nodes();
    if (nodes > 1) parts << QObject::tr("%1 nodes").arg(nodes);
    parts << QObject::tr("seed %1").arg(f.seed) << QObject::tr("%1x%2 steps").arg(f.levels).arg(f.steps);
    if (f.maxMoves >= 0) parts << QObject::tr("max moves %1").arg(f.maxMoves);
    if (f.historyDecay > 0) parts << QObject::tr("history decay %1").arg(f.historyDecay, 0, 'g', 6);
    if (f.failed)
        parts << QObject::tr("failed");
    else if (f.cancelled)
        parts << QObject::tr("cancelled");
    else if (f.timeLimit)
        parts << QObject::tr("time limit");
    return parts.join(QStringLiteral(" \u00b7 "));
}

QColor compareRunColour(int k) {
    static const QColor colours[] = {QColor(0x4c, 0x78, 0xa8), QColor(0xf5, 0x85, 0x18), QColor(0x54, 0xa2, 0x4b),
                                     QColor(0xe4, 0x57, 0x56), QColor(0x72, 0xb7, 0xb2), QColor(0xb2, 0x79, 0xa2),
                                     QColor(0xee, 0xca, 0x3b), QColor(0x9d, 0x75, 0x5d)};
    return colours[((k % 8) + 8) % 8];
}

} // namespace routepack::views
