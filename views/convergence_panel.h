#pragma once
// The plan view's "convergence" tab: the population annealing's levels.
#include "core/plan/annealing.h"

#include <QWidget>

#include <vector>

class QChartView;
class QLabel;
class QLineSeries;
class QValueAxis;

namespace routepack::views {

/// "convergence": per temperature level the incumbent's joint cost (LevelStats::best.max_u) and the
/// mean energy of the chains' terminal states (left axis), and the acceptance rate (right axis,
/// 0..1). x = level index.
class ConvergencePanel : public QWidget {
    Q_OBJECT
public:
    explicit ConvergencePanel(QWidget* parent = nullptr);
    void clear();
    void addLevel(const routepack::LevelStats& s);
    void setLevels(const std::vector<routepack::LevelStats>& levels);
    QLineSeries* bestSeries() const { return best_; }
    QLineSeries* energySeries() const { return energy_; }
    QLineSeries* acceptanceSeries() const { return acceptance_; }
    QChartView* chartView() const { return view_; }

protected:
    void changeEvent(QEvent* e) override;

private:
    void rescale();
    QChartView* view_ = nullptr;
    QLineSeries* best_ = nullptr;
    QLineSeries* energy_ = nullptr;
    QLineSeries* acceptance_ = nullptr;
    QValueAxis* x_ = nullptr;
    QValueAxis* y_ = nullptr;
    QValueAxis* yRate_ = nullptr;
    QLabel* summary_ = nullptr;
};

} // namespace routepack::views
