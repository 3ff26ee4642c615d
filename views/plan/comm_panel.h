#pragma once
// The plan view's "communication" tab: where one step's all-to-all dispatch crosses nodes (Grouter
// paper, "Decoupling Communication Optimization"; the counts of core/plan/comm/comm.h) and which experts
// the window's tokens use together.
#include "core/model/trace.h"
#include "core/plan/planner.h"

#include <QString>
#include <QWidget>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

class QComboBox;
class QLabel;

namespace routepack::views {

class HeatmapWidget;
class JobTracker;

/// "communication": for a selectable method (those of the plan; default routepack) and MoE layer
/// (or the sum over every MoE layer):
/// - the node-by-node dispatch matrix, N x N, entry (a, b) = token copies from node a (the DP slot
///   holding the sample) to node b (an EP rank holding one of the token's top-k experts), summed over
///   execution rows, once per (token, destination node) (CommCost::matrix, dispatch_matrix); the
///   diagonal = intra-node (token, node) pairs, outlined dashed;
/// - the expert co-activation of the selected MoE layer, E x E, entry (e, f) = routed tokens of the
///   window whose top-k includes both e and f (coactivation_matrix), experts ordered by the node of the
///   method's placement (node 0's first, experts_by_node) with lines at the node boundaries; the colour
///   range is 0 .. the largest off-diagonal entry (the diagonal, tokens per expert, saturates; its
///   exact value is in the tooltip). With "all MoE layers" selected it asks for one layer (the
///   grouping is per layer).
/// Empty states: no plan; a plan on one node (nothing crosses nodes); a multi-node plan whose window
/// has no per-token routes (kCommUnavailable); no window passed (co-activation only).
/// The co-activation of a layer (O(routed tokens x K^2)) is counted on a worker thread (a JobTracker,
/// latest request wins) the first time the layer is shown, and kept per layer until the window
/// changes; until it arrives the map says it is being counted.
class CommPanel : public QWidget {
    Q_OBJECT
public:
    explicit CommPanel(QWidget* parent = nullptr);
    /// Stops the co-activation worker (its result is dropped).
    ~CommPanel() override;
    /// `window`: the planned window with its routes (or null: the co-activation map says so).
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan,
                 std::shared_ptr<const routepack::Trace> window);
    /// Method shown; ignored when the plan lacks it.
    void setMethod(routepack::Method method);
    routepack::Method method() const;
    /// MoE layer index shown (0..L-1), or -1 for the sum over every MoE layer.
    void setLayer(int l);
    int layer() const;
    /// The heading over the maps (method, layer, inter / intra copies), or the empty-state text.
    QString headingText() const;
    /// True while the co-activation of a layer is being counted on the worker thread.
    bool coactivationPending() const;

    /// What to show in place of the views that need the window's routing counts when the plan comes
    /// without them (a cluster run's step read from its plan file); empty: the generic note. Takes
    /// effect at the next setPlan.
    void setCountsNote(const QString& note) { countsNote_ = note; }

private:
    QString countsNote_; ///< setCountsNote
    void refresh();
    /// The dispatch matrix of cost `c` at MoE layer index l (-1: summed) and the heading.
    void showDispatch(const routepack::CommCost& c, int l, const QString& label, const QString& where);
    /// The co-activation map of MoE layer index l under method m: from the cache, or counted first.
    void showCoactivation(routepack::Method m, int l, const QString& label);
    /// Paints co-activation `counts` ([E][E]) of layer l, experts ordered by method m's nodes.
    void showAffinity(routepack::Method m, int l, const QString& label,
                      const std::shared_ptr<const std::vector<std::int64_t>>& counts);
    /// Empties the co-activation map with `text` in its place.
    void clearAffinity(const QString& text);
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const routepack::Trace> window_;
    QComboBox* methodBox_ = nullptr;
    QComboBox* layerBox_ = nullptr;
    QLabel* heading_ = nullptr;
    HeatmapWidget* dispatch_ = nullptr;
    HeatmapWidget* affinity_ = nullptr;
    JobTracker* coactivation_ = nullptr;
    /// Co-activation counts of the window by MoE layer index ([E][E] each).
    std::map<int, std::shared_ptr<const std::vector<std::int64_t>>> coCache_;
    int coPending_ = -1; ///< the layer being counted (-1: none)
};

} // namespace routepack::views
