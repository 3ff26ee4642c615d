#pragma once
// The plan view's "grid" tab: the R x D execution grid of a method.
#include "core/plan/planner.h"

#include <QList>
#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QTableView;

namespace routepack::views {

class ExecutionGridModel;

/// "grid": the R x D execution grid of one method (default routepack) in a QTableView over an
/// ExecutionGridModel; each cell shows its token fill against C as a bar (red above C), the token
/// sum and the sample count. Clicking a cell emits cellActivated.
class GridPanel : public QWidget {
    Q_OBJECT
public:
    explicit GridPanel(QWidget* parent = nullptr);
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan);
    void setMethod(routepack::Method method);
    routepack::Method method() const;
    QTableView* view() const { return view_; }
    /// The line above the grid: method, R x D, the cap C (the plan's effective cap), fills.
    QString summaryText() const;

Q_SIGNALS:
    void cellActivated(int row, int slot, QList<int> sampleIndices);

private:
    void refresh();
    std::shared_ptr<const routepack::PlanResult> plan_;
    QComboBox* methodBox_ = nullptr;
    QLabel* summary_ = nullptr;
    QTableView* view_ = nullptr;
    ExecutionGridModel* model_ = nullptr;
};

} // namespace routepack::views
