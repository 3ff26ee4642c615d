#pragma once
// The plan view's "convergence" tab: the population annealing's levels.
#include "core/plan/search/annealing.h"
#include "views/plan/plan_explain_gain.h"

#include <QWidget>

#include <vector>

class QChartView;
class QLabel;
class QLineSeries;
class QValueAxis;

namespace routepack::views {

/// "convergence": per temperature level the incumbent's joint cost (LevelStats::best.max_u) and the
/// mean energy of the chains' terminal states (left axis), and the acceptance rate (right axis,
/// 0..1). x = level index. After the levels (setTail), the final search and the placement refined for
/// the layout: their max_g U at x = last level + 1, + 2 (a dashed continuation of the best line, each
/// point labelled), so that the chart ends at the plan's cost.
class ConvergencePanel : public QWidget {
    Q_OBJECT
    friend struct ConvergencePanelTestAccess;

public:
    explicit ConvergencePanel(QWidget* parent = nullptr);
    void clear();
    void addLevel(const routepack::LevelStats& s);
    void setLevels(const std::vector<routepack::LevelStats>& levels);
    /// The points after the levels (convergence_tail); empty removes them. Cleared by clear().
    void setTail(const std::vector<ConvergenceTailPoint>& tail);
    /// The line above the chart: levels, best joint first -> last, then the tail's points.
    QString summaryText() const;
    /// The line shown while the chart has no level; empty: "No annealing levels yet." (a plan being
    /// planned). A plan read from its file alone says the file holds none.
    void setEmptyText(const QString& text);

protected:
    void changeEvent(QEvent* e) override;

private:
    void rescale();
    QChartView* view_ = nullptr;
    QLineSeries* best_ = nullptr;
    QLineSeries* energy_ = nullptr;
    QLineSeries* acceptance_ = nullptr;
    QLineSeries* tail_ = nullptr; ///< from the last level's best through the tail's points
    std::vector<ConvergenceTailPoint> tailPoints_;
    QString emptyText_; ///< setEmptyText
    QValueAxis* x_ = nullptr;
    QValueAxis* y_ = nullptr;
    QValueAxis* yRate_ = nullptr;
    QLabel* summary_ = nullptr;
};

} // namespace routepack::views
