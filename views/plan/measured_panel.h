#pragma once
// The plan view's "measured" tab: a measured plan of the shown run (a measured step imported into
// the library, linked to one of the run's methods) drawn from measured seconds, the cost model's
// value beside each number.
#include "core/plan/planner.h"
#include "views/plan/measured_data.h"

#include <QString>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

class QComboBox;
class QLabel;

namespace routepack::views {

class HeatmapWidget;

/// The choice box's text of a measured plan: "measured step 2: routepack (profiler)".
QString measuredChoiceLabel(const MeasuredChoice& c);
/// Tooltip of cell (MoE layer index l, EP rank p) of the EP-rank map: the layer's absolute id, the
/// rank, its experts' measured seconds summed over the row-shards and against the layer's mean over
/// the ranks, the modelled cost (units of C) and its ratio to the layer mean, and the tokens.
QString measuredRankToolTip(const MeasuredFigures& f, int l, int p);
/// Tooltip of row-shard (r, g): measured A, E and J (seconds) and modelled A, E and J (units of C).
QString measuredRowShardToolTip(const MeasuredFigures& f, int r, int g);

/// "measured": a box of the shown run's measured plans (setChoices; run_measured_choices), the heading
/// (the measured step against the modelled max_g U, both stragglers, seconds per unit of U), and two maps:
/// per MoE layer x EP rank the experts' measured seconds over the row-shards / the layer's mean over
/// the ranks (diverging around 1, as the ep-heatmap tab draws the modelled loads; a side column with
/// each layer's measured max / mean), and per row x EDP shard the measured J[r][g] in seconds
/// (sequential; a side column with each row's modelled J of the straggler shard). Tooltips give the
/// modelled values (measuredRankToolTip, measuredRowShardToolTip). Without a measured plan both maps
/// say how to import one.
class MeasuredPanel : public QWidget {
    Q_OBJECT

public:
    explicit MeasuredPanel(QWidget* parent = nullptr);
    /// The measured plans to offer (the first shown); empty: the maps say there is none.
    void setChoices(std::vector<MeasuredChoice> choices);
    int choiceCount() const { return static_cast<int>(choices_.size()); }
    /// Shows choice k (0 .. choiceCount() - 1).
    void setChoice(int k);
    /// The figures shown (null when nothing is).
    const MeasuredFigures* figures() const { return figures_ ? &*figures_ : nullptr; }
    HeatmapWidget* rankMap() const { return ranks_; }
    HeatmapWidget* rowShardMap() const { return rowShards_; }
    QComboBox* choiceBox() const { return choiceBox_; }
    /// The heading above the maps ("" when nothing is shown).
    QString headingText() const;

private:
    void refresh();
    std::vector<MeasuredChoice> choices_;
    std::optional<MeasuredFigures> figures_;
    QComboBox* choiceBox_ = nullptr;
    QLabel* heading_ = nullptr;
    HeatmapWidget* ranks_ = nullptr;
    HeatmapWidget* rowShards_ = nullptr;
};

} // namespace routepack::views
