#pragma once
// What the Compare tab says about each run, computed without widgets: a run's name and its full
// label (what differs between runs: topology, nodes, seed, annealing budget, how it ended), the colour
// of its bars, and the saved runs of a window that the tab offers.
#include "core/plan/planner.h"
#include "storage/library.h"

#include <QColor>
#include <QList>
#include <QObject>
#include <QString>
#include <QtGlobal>

#include <algorithm>
#include <vector>

namespace routepack::views {

/// The facts of a run the Compare tab's labels show.
struct CompareRunFacts {
    qint64 id = 0; ///< saved run id (> 0), or minus the number of an unsaved run (< 0)
    QString name;  ///< a saved run's name (storage::RunEntry::name; empty when unnamed)
    Topology topology;
    std::uint64_t seed = 0;
    int levels = 0, steps = 0;  ///< annealing N_T and K
    std::int64_t maxMoves = -1; ///< the move budget (budgets.max_moves; -1 unlimited)
    double historyDecay = 0;    ///< budgets.history_decay (0: none)
    bool cancelled = false;     ///< cancelled (best valid plan so far)
    bool timeLimit = false;     ///< stopped by the time limit
    bool failed = false;        ///< no plan (a failed saved run)
};
CompareRunFacts compareRunFacts(qint64 id, const routepack::PlanResult& plan);
CompareRunFacts compareRunFacts(const routepack::storage::RunEntry& run);

/// "run 11" (saved) or "unsaved 2" (id -2): unique per run, never elided.
QString compareRunName(qint64 id);
/// The full label: name, the run's own name when it has one, "EP<P>/DP<D>", "<N> nodes" on more than one node (node
/// count of the topology), seed, "<N_T>x<K> steps", "max moves <N>" with a move budget, "history decay <X>" with a
/// run-level base placement, and "cancelled", "time limit" or "failed" when it ended so; joined by " · ". E.g. "run 11
/// · EP16/DP8 · 2 nodes · seed 1 · 12x1000 steps · cancelled", "run 12 · EP8/DP4 · seed 1 · 12x1000 steps · max moves
/// 200", or "run 11 · long anneal · EP16/DP8 · seed 1 · 12x1000 steps" for run 11 named "long anneal".
QString compareRunLabel(const CompareRunFacts& f);

/// Bar colour of the k-th run of the comparison (eight mid-tones, readable on light and dark, cycled).
QColor compareRunColour(int k);

/// One saved run the Compare tab offers for a window.
struct CompareChoice {
    qint64 id = 0;
    QString label;        ///< compareRunLabel
    bool enabled = true;  ///< false for a failed run (no plan)
    bool checked = false; ///< in the comparison
};
/// Every saved run of (trace, window) in `runs`, ascending by id; `shown(id)` says whether a run is
/// in the comparison now.
template <class Shown>
QList<CompareChoice> compareChoices(const std::vector<routepack::storage::RunEntry>& runs, const std::string& trace,
                                    const std::string& window, Shown shown) {
    std::vector<const routepack::storage::RunEntry*> mine;
    for (const auto& r : runs)
        if (r.trace == trace && r.window == window) mine.push_back(&r);
    std::sort(mine.begin(), mine.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
    QList<CompareChoice> out;
    for (const auto* r : mine) {
        const CompareRunFacts f = compareRunFacts(*r);
        CompareChoice c;
        c.id = static_cast<qint64>(r->id);
        c.label = compareRunLabel(f);
        c.enabled = !f.failed;
        c.checked = !f.failed && shown(c.id);
        out.append(c);
    }
    return out;
}

} // namespace routepack::views
