#pragma once
// How the views' GUI tests reach the parts of a view: its child widgets and objects by their object
// names (findChild, through the ui:: helpers below), and what is no child object (numbers, texts,
// states, chart series and bar sets, which Qt Charts does not parent to the widget) through the one
// test-access friend of each class (<Class>TestAccess). A part the view lacks is nullptr.
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/rewrite_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/library/length_histogram_view.h"
#include "views/plan/comm_panel.h"
#include "views/plan/convergence_panel.h"
#include "views/plan/costs_panel.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/plan_models.h"
#include "views/plan/plan_views.h"
#include "views/plan/row_heatmap_panel.h"
#include "views/run/run_view.h"
#include "views/widgets/frozen_table.h"

#include <QBarSet>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QLineSeries>
#include <QProgressBar>
#include <QScatterSeries>
#include <QString>
#include <QStringList>
#include <QTabWidget>
#include <QTableView>
#include <QUndoStack>

#include <memory>
#include <optional>
#include <vector>

namespace routepack::views {

/// What the heatmap shows besides its cells' colours: settings, marks, selection, texts, range.
struct HeatmapWidgetTestAccess {
    static double neutralBand(const HeatmapWidget& m) { return m.band_; }
    static ColourScale colourScale(const HeatmapWidget& m) { return m.scale_; }
    static const std::vector<bool>& rowMarks(const HeatmapWidget& m) { return m.marks_; }
    static const std::vector<int>& rowBoundaries(const HeatmapWidget& m) { return m.rowBounds_; }
    static const std::vector<int>& columnBoundaries(const HeatmapWidget& m) { return m.colBounds_; }
    static bool diagonalMarked(const HeatmapWidget& m) { return m.diagonal_; }
    static int selectedRow(const HeatmapWidget& m) { return m.selRow_; }
    static int selectedColumn(const HeatmapWidget& m) { return m.selCol_; }
    static QString title(const HeatmapWidget& m) { return m.title_; }
    static QStringList sideColumn(const HeatmapWidget& m) { return m.side_; }
    static double rangeLow(const HeatmapWidget& m) { return m.lo_; }
    static double rangeHigh(const HeatmapWidget& m) { return m.hi_; }
    static QString emptyText(const HeatmapWidget& m) { return m.emptyText_; }
};

/// The costs tab's straggler, tallest bar, bar sets, markers and categories.
struct CostsPanelTestAccess {
    static int stragglerShard(const CostsPanel& p) { return p.straggler_; }
    static int tallestBar(const CostsPanel& p) { return p.tallest_; }
    static QBarSet* attentionSet(const CostsPanel& p) { return p.attention_; }
    static QBarSet* expertSet(const CostsPanel& p) { return p.expert_; }
    static QBarSet* shardTotalSet(const CostsPanel& p) { return p.total_; }
    static QScatterSeries* tallestMarker(const CostsPanel& p) { return p.tallestMarker_; }
    static QBarSet* baselineAttentionSet(const CostsPanel& p) { return p.baseAttention_; }
    static QBarSet* baselineExpertSet(const CostsPanel& p) { return p.baseExpert_; }
    static QScatterSeries* baselineTallestMarker(const CostsPanel& p) { return p.baseTallestMarker_; }
    static QBarSet* baselineShardTotalSet(const CostsPanel& p) { return p.baseTotal_; }
    static QStringList categories(const CostsPanel& p) { return p.categories_; }
};

/// The convergence chart's lines.
struct ConvergencePanelTestAccess {
    static QLineSeries* tailSeries(const ConvergencePanel& p) { return p.tail_; }
    static QLineSeries* bestSeries(const ConvergencePanel& p) { return p.best_; }
    static QLineSeries* energySeries(const ConvergencePanel& p) { return p.energy_; }
    static QLineSeries* acceptanceSeries(const ConvergencePanel& p) { return p.acceptance_; }
};

/// The layers one expert bounds.
struct EpHeatmapPanelTestAccess {
    static const std::vector<ExpertBound>& boundedLayers(const EpHeatmapPanel& p) { return p.bounded_; }
};

/// The execution grid's method and cap.
struct ExecutionGridModelTestAccess {
    static routepack::Method method(const ExecutionGridModel& m) { return m.method_; }
    static qint64 cap(const ExecutionGridModel& m) { return m.cap_; }
};

/// Whether the comparison shows the communication columns.
struct CompareTableModelTestAccess {
    static bool hasCommColumns(const CompareTableModel& m) { return m.comm_; }
};

/// The Run view's bar sets, frontier series, gain bins and frontier job state.
struct RunViewTestAccess {
    static QBarSet* computeSet(const RunView& v) { return v.computeSet_; }
    static QBarSet* materializationSet(const RunView& v) { return v.materializationSet_; }
    static QLineSeries* frontierLine(const RunView& v) { return v.frontierLine_; }
    static QScatterSeries* frontierSaved(const RunView& v) { return v.frontierSaved_; }
    static bool isFrontierLoading(const RunView& v) { return v.frontierLoading_; }
    static QBarSet* churnSet(const RunView& v) { return v.churnSet_; }
    static QBarSet* movesSet(const RunView& v) { return v.movesSet_; }
    static QBarSet* gainSet(const RunView& v) { return v.gainSet_; }
    static const std::vector<GainBin>& gainBins(const RunView& v) { return v.bins_; }
};

/// The histogram shown and its label stride.
struct LengthHistogramViewTestAccess {
    static const LengthHistogram& histogram(const LengthHistogramView& v) { return v.hist_; }
    static int binLabelStride(const LengthHistogramView& v) { return v.stride_; }
};

/// The rewrite dialog's plan, texts, answers and the input checkpoint's model.
struct RewriteDialogTestAccess {
    static std::shared_ptr<const routepack::PlanFile> plan(const RewriteDialog& d) { return d.plan_; }
    static QString planOrigin(const RewriteDialog& d) { return d.planOrigin_; }
    static QString layerMapError(const RewriteDialog& d) { return d.layerMapError_; }
    static QString deviceDescription(const RewriteDialog& d) { return d.deviceDescription_; }
    static QString errorText(const RewriteDialog& d) { return d.error_; }
    static const std::optional<RewriteCheck>& lastCheck(const RewriteDialog& d) { return d.lastCheck_; }
    static const std::optional<RewriteOutcome>& lastOutcome(const RewriteDialog& d) { return d.lastOutcome_; }
    static const std::optional<gpu::CheckpointModel>& checkpointModel(const RewriteDialog& d) {
        return d.checkpointModel_;
    }
};

/// The import dialog's detected format and stack and its last error.
struct ImportDialogTestAccess {
    static QString detectedFormat(const ImportDialog& d) { return d.detected_; }
    static QString detectedStack(const ImportDialog& d) { return d.detectedStack_; }
    static QString errorText(const ImportDialog& d) { return d.error_; }
};

} // namespace routepack::views

namespace routepack::test::ui {

/// The child of `w` of type T named `name` (nullptr when none).
template <class T> T* part(const QObject& w, const char* name) {
    return w.findChild<T*>(QString::fromLatin1(name));
}

// --- PlanView: its tab pages, named by their view ids (PlanView::viewNames) ---
inline views::EpHeatmapPanel* epHeatmapPanel(const views::PlanView* v) {
    return part<views::EpHeatmapPanel>(*v, "ep-heatmap");
}
inline views::RowHeatmapPanel* rowHeatmapPanel(const views::PlanView* v) {
    return part<views::RowHeatmapPanel>(*v, "row-heatmap");
}
inline views::CostsPanel* costsPanel(const views::PlanView* v) {
    return part<views::CostsPanel>(*v, "costs");
}
inline views::ConvergencePanel* convergencePanel(const views::PlanView* v) {
    return part<views::ConvergencePanel>(*v, "convergence");
}
inline views::CommPanel* commPanel(const views::PlanView* v) {
    return part<views::CommPanel>(*v, "communication");
}

// --- HeatmapView, HeatmapWidget ---
/// The map a HeatmapView shows (its only HeatmapWidget).
inline views::HeatmapWidget* map(const views::HeatmapView* v) {
    return v->findChild<views::HeatmapWidget*>();
}
using HeatmapAccess = views::HeatmapWidgetTestAccess;
inline double neutralBand(const views::HeatmapWidget* m) {
    return HeatmapAccess::neutralBand(*m);
}
inline views::ColourScale colourScale(const views::HeatmapWidget* m) {
    return HeatmapAccess::colourScale(*m);
}
inline const std::vector<bool>& rowMarks(const views::HeatmapWidget* m) {
    return HeatmapAccess::rowMarks(*m);
}
inline const std::vector<int>& rowBoundaries(const views::HeatmapWidget* m) {
    return HeatmapAccess::rowBoundaries(*m);
}
inline const std::vector<int>& columnBoundaries(const views::HeatmapWidget* m) {
    return HeatmapAccess::columnBoundaries(*m);
}
inline bool diagonalMarked(const views::HeatmapWidget* m) {
    return HeatmapAccess::diagonalMarked(*m);
}
inline int selectedRow(const views::HeatmapWidget* m) {
    return HeatmapAccess::selectedRow(*m);
}
inline int selectedColumn(const views::HeatmapWidget* m) {
    return HeatmapAccess::selectedColumn(*m);
}
/// The title as set (titleLineTexts: as painted).
inline QString title(const views::HeatmapWidget* m) {
    return HeatmapAccess::title(*m);
}
inline QStringList sideColumn(const views::HeatmapWidget* m) {
    return HeatmapAccess::sideColumn(*m);
}
inline double rangeLow(const views::HeatmapWidget* m) {
    return HeatmapAccess::rangeLow(*m);
}
inline double rangeHigh(const views::HeatmapWidget* m) {
    return HeatmapAccess::rangeHigh(*m);
}
/// The placeholder painted while the map is empty (setEmptyText).
inline QString emptyText(const views::HeatmapWidget* m) {
    return HeatmapAccess::emptyText(*m);
}

// --- EpHeatmapPanel, RowHeatmapPanel ---
inline QComboBox* scaleCombo(const views::EpHeatmapPanel* p) {
    return part<QComboBox>(*p, "epScale");
}
inline const std::vector<views::ExpertBound>& boundedLayers(const views::EpHeatmapPanel* p) {
    return views::EpHeatmapPanelTestAccess::boundedLayers(*p);
}
inline QComboBox* shardCombo(const views::RowHeatmapPanel* p) {
    return part<QComboBox>(*p, "shardBox");
}
inline views::HeatmapWidget* map(const views::RowHeatmapPanel* p) {
    return part<views::HeatmapWidget>(*p, "rowHeatmap");
}

// --- CostsPanel ---
inline QCheckBox* sideBySideBox(const views::CostsPanel* p) {
    return part<QCheckBox>(*p, "sideBySide");
}
inline QChartView* rowChartView(const views::CostsPanel* p) {
    return part<QChartView>(*p, "rowChart");
}
/// The baseline's row-shard chart (hidden unless side by side).
inline QChartView* baselineChartView(const views::CostsPanel* p) {
    return part<QChartView>(*p, "baselineRowChart");
}
inline QChartView* shardChartView(const views::CostsPanel* p) {
    return part<QChartView>(*p, "shardChart");
}
using CostsAccess = views::CostsPanelTestAccess;
inline int stragglerShard(const views::CostsPanel* p) {
    return CostsAccess::stragglerShard(*p);
}
inline int tallestBar(const views::CostsPanel* p) {
    return CostsAccess::tallestBar(*p);
}
inline QBarSet* attentionSet(const views::CostsPanel* p) {
    return CostsAccess::attentionSet(*p);
}
inline QBarSet* expertSet(const views::CostsPanel* p) {
    return CostsAccess::expertSet(*p);
}
inline QBarSet* shardTotalSet(const views::CostsPanel* p) {
    return CostsAccess::shardTotalSet(*p);
}
inline QScatterSeries* tallestMarker(const views::CostsPanel* p) {
    return CostsAccess::tallestMarker(*p);
}
inline QBarSet* baselineAttentionSet(const views::CostsPanel* p) {
    return CostsAccess::baselineAttentionSet(*p);
}
inline QBarSet* baselineExpertSet(const views::CostsPanel* p) {
    return CostsAccess::baselineExpertSet(*p);
}
inline QScatterSeries* baselineTallestMarker(const views::CostsPanel* p) {
    return CostsAccess::baselineTallestMarker(*p);
}
inline QBarSet* baselineShardTotalSet(const views::CostsPanel* p) {
    return CostsAccess::baselineShardTotalSet(*p);
}
inline QStringList categories(const views::CostsPanel* p) {
    return CostsAccess::categories(*p);
}

// --- ConvergencePanel ---
inline QChartView* chartView(const views::ConvergencePanel* p) {
    return part<QChartView>(*p, "convergenceChart");
}
inline QLineSeries* tailSeries(const views::ConvergencePanel* p) {
    return views::ConvergencePanelTestAccess::tailSeries(*p);
}
inline QLineSeries* bestSeries(const views::ConvergencePanel* p) {
    return views::ConvergencePanelTestAccess::bestSeries(*p);
}
inline QLineSeries* energySeries(const views::ConvergencePanel* p) {
    return views::ConvergencePanelTestAccess::energySeries(*p);
}
inline QLineSeries* acceptanceSeries(const views::ConvergencePanel* p) {
    return views::ConvergencePanelTestAccess::acceptanceSeries(*p);
}

// --- CommPanel ---
inline QComboBox* methodCombo(const views::CommPanel* p) {
    return part<QComboBox>(*p, "commMethod");
}
inline QComboBox* layerCombo(const views::CommPanel* p) {
    return part<QComboBox>(*p, "commLayer");
}
inline views::HeatmapWidget* dispatchMap(const views::CommPanel* p) {
    return part<views::HeatmapWidget>(*p, "dispatchMap");
}
inline views::HeatmapWidget* affinityMap(const views::CommPanel* p) {
    return part<views::HeatmapWidget>(*p, "affinityMap");
}

// --- GridPanel, ExecutionGridModel, CompareTableModel ---
inline views::ExecutionGridModel* model(const views::GridPanel* p) {
    return part<views::ExecutionGridModel>(*p, "gridModel");
}
inline routepack::Method method(const views::ExecutionGridModel* m) {
    return views::ExecutionGridModelTestAccess::method(*m);
}
/// Cap C of the shown plan (0 when empty).
inline qint64 cap(const views::ExecutionGridModel* m) {
    return views::ExecutionGridModelTestAccess::cap(*m);
}
inline bool hasCommColumns(const views::CompareTableModel* m) {
    return views::CompareTableModelTestAccess::hasCommColumns(*m);
}

// --- FrozenColumnTable ---
/// The overlay showing the frozen column.
inline QTableView* frozenView(const views::FrozenColumnTable* t) {
    return part<QTableView>(*t, "frozenColumn");
}

// --- RunView ---
inline QChartView* costChartView(const views::RunView* v) {
    return part<QChartView>(*v, "costChart");
}
inline QChartView* gainChartView(const views::RunView* v) {
    return part<QChartView>(*v, "gainChart");
}
inline QChartView* churnChartView(const views::RunView* v) {
    return part<QChartView>(*v, "churnChart");
}
inline QChartView* applyChartView(const views::RunView* v) {
    return part<QChartView>(*v, "applyChart");
}
inline QChartView* frontierChartView(const views::RunView* v) {
    return part<QChartView>(*v, "frontierChart");
}
inline QTabWidget* chartTabs(const views::RunView* v) {
    return part<QTabWidget>(*v, "chartTabs");
}
using RunAccess = views::RunViewTestAccess;
inline QBarSet* computeSet(const views::RunView* v) {
    return RunAccess::computeSet(*v);
}
inline QBarSet* materializationSet(const views::RunView* v) {
    return RunAccess::materializationSet(*v);
}
inline QLineSeries* frontierLine(const views::RunView* v) {
    return RunAccess::frontierLine(*v);
}
inline QScatterSeries* frontierSaved(const views::RunView* v) {
    return RunAccess::frontierSaved(*v);
}
inline bool isFrontierLoading(const views::RunView* v) {
    return RunAccess::isFrontierLoading(*v);
}
inline QBarSet* churnSet(const views::RunView* v) {
    return RunAccess::churnSet(*v);
}
inline QBarSet* movesSet(const views::RunView* v) {
    return RunAccess::movesSet(*v);
}
inline QBarSet* gainSet(const views::RunView* v) {
    return RunAccess::gainSet(*v);
}
inline const std::vector<views::GainBin>& gainBins(const views::RunView* v) {
    return RunAccess::gainBins(*v);
}

// --- LengthHistogramView ---
inline const views::LengthHistogram& histogram(const views::LengthHistogramView* v) {
    return views::LengthHistogramViewTestAccess::histogram(*v);
}
inline int binLabelStride(const views::LengthHistogramView* v) {
    return views::LengthHistogramViewTestAccess::binLabelStride(*v);
}

// --- TopologyEditor ---
inline QComboBox* presetBox(const views::TopologyEditor* e) {
    return part<QComboBox>(*e, "presetBox");
}
/// The form's undo stack.
inline QUndoStack* undoStack(const views::TopologyEditor* e) {
    return part<QUndoStack>(*e, "undoStack");
}

// --- RewriteDialog ---
using RewriteAccess = views::RewriteDialogTestAccess;
inline std::shared_ptr<const routepack::PlanFile> plan(const views::RewriteDialog* d) {
    return RewriteAccess::plan(*d);
}
inline QString planOrigin(const views::RewriteDialog* d) {
    return RewriteAccess::planOrigin(*d);
}
inline QString layerMapError(const views::RewriteDialog* d) {
    return RewriteAccess::layerMapError(*d);
}
inline QString deviceDescription(const views::RewriteDialog* d) {
    return RewriteAccess::deviceDescription(*d);
}
inline QString errorText(const views::RewriteDialog* d) {
    return RewriteAccess::errorText(*d);
}
inline const std::optional<views::RewriteCheck>& lastCheck(const views::RewriteDialog* d) {
    return RewriteAccess::lastCheck(*d);
}
inline const std::optional<views::RewriteOutcome>& lastOutcome(const views::RewriteDialog* d) {
    return RewriteAccess::lastOutcome(*d);
}
inline const std::optional<gpu::CheckpointModel>& checkpointModel(const views::RewriteDialog* d) {
    return RewriteAccess::checkpointModel(*d);
}
inline QProgressBar* progressBar(const views::RewriteDialog* d) {
    return part<QProgressBar>(*d, "rewriteProgress");
}

// --- ImportDialog ---
inline QString detectedFormat(const views::ImportDialog* d) {
    return views::ImportDialogTestAccess::detectedFormat(*d);
}
inline QString detectedStack(const views::ImportDialog* d) {
    return views::ImportDialogTestAccess::detectedStack(*d);
}
inline QString errorText(const views::ImportDialog* d) {
    return views::ImportDialogTestAccess::errorText(*d);
}
inline views::ImportJob* job(const views::ImportDialog* d) {
    return part<views::ImportJob>(*d, "importJob");
}

} // namespace routepack::test::ui

namespace ui = routepack::test::ui;
