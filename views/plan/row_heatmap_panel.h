#pragma once
// The plan view's "row-heatmap" tab: per-layer peak rank loads of each row of one EDP shard.
#include "core/plan/planner.h"
#include "views/plan/plan_data.h"

#include <QString>
#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;

namespace routepack::views {

class HeatmapWidget;

/// "row-heatmap": rows x MoE layers of max_p W[r][g][l][p] (tokens, eq. 13) for one EDP shard g of
/// one method (default routepack); a fixed colour scale 0..max over all shards of that method;
/// side column E[r][g] (eq. 14).
class RowHeatmapPanel : public QWidget {
    Q_OBJECT
public:
    explicit RowHeatmapPanel(QWidget* parent = nullptr);
    /// `window`: the planned window (or null); with it the tooltip names the peak rank of the cell.
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan, std::shared_ptr<const PlanCosts> costs,
                 std::shared_ptr<const routepack::Trace> window = nullptr);
    void setShard(int g);
    /// Outlines MoE layer index `l`'s column (-1: none), kept across method and shard changes.
    void setSelectedLayer(int l);
    void setMethod(routepack::Method method);
    int shard() const;
    routepack::Method method() const;

    /// What to show in place of the views that need the window's routing counts when the plan comes
    /// without them (a cluster run's step read from its plan file); empty: the generic note. Takes
    /// effect at the next setPlan.
    void setCountsNote(const QString& note) { countsNote_ = note; }

private:
    QString countsNote_; ///< setCountsNote
    void refresh();
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const PlanCosts> costs_;
    std::shared_ptr<const routepack::Trace> window_;
    int selectedLayer_ = -1;
    QComboBox* methodBox_ = nullptr;
    QComboBox* scaleBox_ = nullptr;
    QComboBox* shardBox_ = nullptr;
    QLabel* note_ = nullptr;
    HeatmapWidget* map_ = nullptr;
};

} // namespace routepack::views
