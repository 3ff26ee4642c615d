#pragma once
// The plan view's "ep-heatmap" tab: rank loads of the identity and the planned placement side by
// side, the layers one expert bounds, and the samples that load a selected rank.
#include "core/plan/planner.h"
#include "views/plan/plan_explain.h"

#include <QList>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

class QComboBox;
class QLabel;

namespace routepack::views {

class HeatmapWidget;

/// How many samples a click on an EP-rank cell keeps in the sample table: the ones that route the
/// most tokens to that (layer, rank) (top_samples_on_rank).
inline constexpr int kTopRankSamples = 20;

/// "ep-heatmap": per MoE layer x EP rank G[l][p] / mean_p G[l][p] (eq. 10), identity placement
/// left and LPT placement right, one shared diverging colour scale centred on 1 (the layer mean;
/// linear, log or per layer: the colour scale box), per-layer CV in a side column of each map. The tooltip
/// gives the exact G, the logical experts on the rank with their tokens, and for a layer bounded by
/// one expert (expert_bounded_layers; marked on the layer axis of both maps, the four with the largest
/// share on one expert named in the heading) "bounded by expert E (X of Y tokens): no placement can
/// lower this layer's peak below X". A click on a cell selects it
/// (selectCell).
class EpHeatmapPanel : public QWidget {
    Q_OBJECT
    friend struct EpHeatmapPanelTestAccess;

public:
    /// What to show in place of the views that need the window's routing counts when the plan comes
    /// without them (a cluster run's step read from its plan file); empty: the generic note. Takes
    /// effect at the next setPlan.
    void setCountsNote(const QString& note) { countsNote_ = note; }

    explicit EpHeatmapPanel(QWidget* parent = nullptr);
    /// `expertLoads` = L[l][e] of the plan's window ([L][E], aggregate_expert_loads): without it the
    /// tooltips name no experts and no layer is marked. `window` (the planned window, or null) gives
    /// the samples a selected rank lists.
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan,
                 std::shared_ptr<const std::vector<std::uint64_t>> expertLoads = nullptr,
                 std::shared_ptr<const routepack::Trace> window = nullptr);
    /// The identity (planned = false) or LPT (planned = true) map; rows = MoE layers, cols = ranks.
    HeatmapWidget* map(bool planned) const { return planned ? lpt_ : identity_; }
    /// Per-layer CV shown beside a map ([L]).
    const std::vector<double>& layerCv(bool planned) const { return planned ? cvLpt_ : cvIdentity_; }
    /// Colour scale of both maps (the combo box's choice).
    void setColourScale(ColourScale scale);
    /// Selects cell (MoE layer index `layer`, EP rank `rank`) on both maps, as a click on the identity
    /// (planned = false) or LPT map does: lists the rank's experts with their tokens under the maps
    /// and emits rankActivated with the kTopRankSamples samples that load it most. Out of range:
    /// clears the selection.
    void selectCell(int layer, int rank, bool planned);
    /// The list under the maps: the selected rank's experts and tokens ("" when nothing is selected).
    QString selectionText() const;
    /// The line above the maps (what they show, or why they are empty).
    QString summaryText() const;

Q_SIGNALS:
    /// A cell was selected: `samples` are top_samples_on_rank (window order indices, most tokens
    /// first; empty without the window), `description` says what they are for the sample table's
    /// filter line ("Top 20 samples by tokens on EP rank 3 of MoE layer 45 (LPT placement)"), `tokens`
    /// each sample's tokens on that (layer, rank).
    void rankActivated(int layer, int rank, bool planned, QList<int> samples, QString description,
                       QList<qint64> tokens);

private:
    QString countsNote_; ///< setCountsNote
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const std::vector<std::uint64_t>> loads_;
    std::shared_ptr<const routepack::Trace> window_;
    QLabel* summary_ = nullptr;
    QComboBox* scaleBox_ = nullptr;
    QLabel* selection_ = nullptr;
    HeatmapWidget* identity_ = nullptr;
    HeatmapWidget* lpt_ = nullptr;
    std::vector<double> cvIdentity_, cvLpt_;
    std::vector<ExpertBound> bounded_; ///< the layers one expert bounds (empty without expert loads)
};

/// The text of an EP-heatmap tooltip for MoE layer index `l` and rank `p` of rank loads `G` ([L][P])
/// under placement `pi`: layer (absolute id) and rank, G[l][p] in tokens and against the layer mean,
/// and with expert loads (`loads` [L][E], may be empty) the experts on the rank with their tokens and,
/// for a bounded layer, "bounded by expert E (X of Y tokens): no placement can lower this layer's peak
/// below X".
QString epCellToolTip(const routepack::PlanResult& plan, const std::vector<std::uint64_t>& G, const Placement& pi,
                      std::span<const std::uint64_t> loads, int l, int p);

} // namespace routepack::views
