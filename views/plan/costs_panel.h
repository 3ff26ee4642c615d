#pragma once
// The plan view's "costs" tab: row-shard costs A + E and shard totals U[g] of a method, the straggler
// and the tallest row-shard, and the "why it gains" paragraph (views/plan/gain_explanation.h).
#include "core/plan/planner.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_explain_gain.h"

#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <vector>

class QBarSet;
class QChart;
class QChartView;
class QColor;
class QCheckBox;
class QComboBox;
class QLabel;
class QScatterSeries;
class QScrollArea;
class QSplitter;

namespace routepack::views {

/// Shard totals tied with the largest: the shards g with max U - U[g] <= tolerance x max U, ascending
/// (every shard when max U <= 0). E.g. U = {178.6674, 178.66} with tolerance 0.001 ties both.
std::vector<int> tiedShards(const std::vector<double>& U, double tolerance);
/// Relative tolerance under which the costs view treats shard totals as equal: 0.1% of max_g U.
inline constexpr double kShardTieTolerance = 0.001;

/// "costs": stacked bars of A[r][g] (eq. 12) and E[r][g] (eq. 14) per (r, g) (category "r<r> g<g>",
/// rows outer, shards inner), and a second chart of U[g], each on one y-axis for all the plan's
/// methods (the four, and grouter and routepack+comm on several nodes; the method box lists those
/// the plan has) (0 .. the largest J, resp. U, of any method, rounded); the straggler shard
/// argmax_g U[g] is highlighted (selected bars in both charts, and named in the heading). In the U[g] chart the
/// shards tied with the straggler (tiedShards, kShardTieTolerance) are selected and red like it,
/// the others green; when every shard is tied, all are one neutral grey and the heading says they
/// are balanced (a 0.01-token difference is no straggler).
/// The tallest row-shard bar (max_{r,g} J, the score's third term; tallestRowShard) carries a marker
/// with its J as label, is named in the legend and the heading, and its tooltip says it is the tallest.
/// Side by side (setSideBySide, the "Baseline side by side" box): the baseline's row-shard chart left of
/// the shown method's, on the same y-axis, and the U[g] chart holds both methods' totals.
class CostsPanel : public QWidget {
    Q_OBJECT
    friend struct CostsPanelTestAccess;

public:
    /// What to show in place of the views that need the window's routing counts when the plan comes
    /// without them (a cluster run's step read from its plan file); empty: the generic note. Takes
    /// effect at the next setPlan.
    void setCountsNote(const QString& note) { countsNote_ = note; }

    explicit CostsPanel(QWidget* parent = nullptr);
    /// `gain` (split_gain of the plan, or null) gives the "why it gains" text; without it none is shown.
    void setPlan(const std::shared_ptr<const routepack::PlanResult>& plan, std::shared_ptr<const PlanCosts> costs,
                 std::shared_ptr<const GainSplit> gain = nullptr);
    void setMethod(routepack::Method method);
    routepack::Method method() const;
    /// Shows the baseline's row-shard chart beside the shown method's (true), or the method alone.
    void setSideBySide(bool on);
    bool sideBySide() const;
    /// The straggler heading: U, sum U, max J and its row-shard, and (LPT methods) the plan's lower
    /// bound and gap.
    QString headingText() const;
    /// Tooltip of bar `index` (= r * G + g) of the shown method's row-shard chart: A, E and J of (r, g)
    /// exactly, and "the tallest row-shard (max J)" on the tallest bar.
    QString rowBarToolTip(int index) const;
    /// The same for method `method` ("" for a method the plan lacks).
    QString rowBarToolTip(int index, routepack::Method method) const;
    /// Tooltip of shard g's bar of the U[g] chart: U[g] exactly and its distance to the straggler.
    QString shardBarToolTip(int g) const;
    /// The same for method `method`.
    QString shardBarToolTip(int g, routepack::Method method) const;
    /// The "why it gains" paragraph under the charts (gainExplanationText; "" without costs).
    QString gainText() const;
    /// The split behind gainText (null without it).
    std::shared_ptr<const GainSplit> gainSplit() const { return gainSplit_; }

Q_SIGNALS:
    /// A link of the "why it gains" text was clicked (parseExplainLink reads it).
    void explainLinkActivated(const QString& link);

protected:
    void changeEvent(QEvent* e) override;

private:
    QString countsNote_; ///< setCountsNote
    /// What one row-shard chart holds.
    struct RowChart {
        QBarSet* attention = nullptr;
        QBarSet* expert = nullptr;
        QScatterSeries* tallest = nullptr;
    };
    RowChart fillRowChart(QChart* chart, routepack::Method method, double maxJ);
    /// The U[g] bar set of `method` (named by the method when `side`), shards tied with the straggler
    /// selected, all one neutral colour when every shard is tied.
    QBarSet* shardTotals(routepack::Method method, bool side, const QColor& colour) const;
    /// The U[g] chart of method m (side by side: the baseline's totals first), on 0 .. maxU.
    void fillShardChart(routepack::Method m, bool side, double maxU);
    /// The straggler heading of method m.
    void showHeading(routepack::Method m);
    void refresh();
    std::shared_ptr<const routepack::PlanResult> plan_;
    std::shared_ptr<const PlanCosts> costs_;
    std::shared_ptr<const GainSplit> gainSplit_;
    QScrollArea* gainArea_ = nullptr;
    QComboBox* methodBox_ = nullptr;
    QCheckBox* sideBox_ = nullptr;
    QLabel* heading_ = nullptr;
    QLabel* gain_ = nullptr;
    QSplitter* split_ = nullptr;
    QChartView* baseView_ = nullptr; ///< the baseline's row-shard chart (hidden unless side by side)
    QChartView* rowView_ = nullptr;
    QChartView* shardView_ = nullptr;
    QBarSet* attention_ = nullptr;
    QBarSet* expert_ = nullptr;
    QBarSet* total_ = nullptr;
    /// The marker on the shown method's tallest bar (one point: x = bar index, y = its J); null when
    /// nothing is shown. Its name (the legend) is "tallest: r<r> g<g>, J = <J, 4 decimals>".
    QScatterSeries* tallestMarker_ = nullptr;
    /// Side by side only (else null): the baseline's bar sets, its marker and its U[g] set.
    QBarSet* baseAttention_ = nullptr;
    QBarSet* baseExpert_ = nullptr;
    QBarSet* baseTotal_ = nullptr;
    QScatterSeries* baseTallestMarker_ = nullptr;
    QStringList categories_;
    int straggler_ = -1; ///< straggler shard of the shown method (-1 when nothing is shown)
    int tallest_ = -1;   ///< bar index (r * G + g) of the shown method's tallest row-shard (-1: none)
};

/// The tallest row-shard of a cost breakdown: the bar index r * G + g of max_{r,g} J[r][g] (the
/// score's third term, eq. 15), the lowest index on ties; -1 when `costs` has no row-shards.
int tallestRowShard(const CostBreakdown& costs);

} // namespace routepack::views
