#pragma once
// The studio's exports (File > Export): the plan JSON, the expert maps, the shown plan view as an
// image, the run comparison as CSV or chart, and the sample table as CSV. The write* functions do the
// writing and word the outcome for the status line; StudioExports adds the save dialog in front of
// each and picks what Ctrl+E exports from what is shown.
#include "core/plan/planner.h"
#include "views/widgets/file_export.h" // writeTextFile

#include <QCoreApplication>
#include <QList>
#include <QString>

#include <functional>
#include <optional>
#include <string>

class QTabWidget;
class QWidget;

class QAction;
class QMenu;

namespace routepack::views {

class CompareView;
class PlanView;
class RunView;
class SampleFilterProxy;
class SampleTableModel;

/// What an export did, worded for the status line.
struct ExportResult {
    QString message; ///< "Plan written to <file>." or the error in words
    bool error = false;
};

/// plan_to_json(plan) (the plan file of core/plan/plan_file.h, read by `routepack rewrite`) to `file`.
ExportResult writePlanJson(const routepack::PlanResult& plan, const QString& file);
/// expert_map_json of the plan's LPT placement (core/plan/expert_map.h) in `format` ("routepack",
/// "sglang" or "vllm") to `file`; an unknown format is refused with parse_expert_map_format's message.
ExportResult writeExpertMap(const routepack::PlanResult& plan, const QString& format, const QString& file);
/// PlanView::exportView(name, file): ".png" or ".svg" by the file's suffix.
ExportResult writePlanViewImage(const PlanView& view, const QString& name, const QString& file);
/// CompareView::exportTableCsv: one line per compared run (raw values).
ExportResult writeComparisonCsv(const CompareView& view, const QString& file);
/// CompareView::exportChart: ".png" or ".svg".
ExportResult writeComparisonChart(const CompareView& view, const QString& file);
/// The Run view's steps as `routepack sweep`'s sweep.csv (sweep_csv of RunSeries::table; the same
/// bytes sweep writes for the same runs). An error when the view shows no series.
ExportResult writeRunCsv(const RunView& view, const QString& file);
/// RunView::exportChart(name, file): ".png" or ".svg" by the file's suffix.
ExportResult writeRunChart(const RunView& view, const QString& name, const QString& file);
/// exportModelCsv of the sample table as filtered and sorted (the proxy's rows, raw values).
ExportResult writeSampleCsv(const SampleFilterProxy& proxy, const QString& file);

/// The Export menu of the studio window: each function asks for the file with a save dialog (parented
/// to `parent`) and then writes it. nullopt when there is nothing to export (no plan shown, an empty
/// sample table) or the dialog was cancelled; the caller shows the result in its status line.
class StudioExports {
    Q_DECLARE_TR_FUNCTIONS(StudioExports)
public:
    /// Every pointer must outlive this object (they are the window's own widgets and models).
    StudioExports(QWidget* parent, PlanView* plan, CompareView* compare, SampleTableModel* samples,
                  SampleFilterProxy* proxy, QTabWidget* tabs);

    /// File > Export's actions that need a plan shown (`plan`) and, of those, a complete plan, not
    /// one read from its file alone (`fullPlan`).
    struct MenuActions {
        QList<QAction*> plan, fullPlan;
    };
    /// Fills `menu` (File > Export): what is shown (Ctrl+E, exportCurrent), the plan JSON, the expert
    /// maps, the plan view image, the comparison table and chart, the run's steps and charts, the
    /// sample table. What each export did goes to `report` (nullopt when it was cancelled).
    MenuActions fillMenu(QMenu* menu, const std::function<void(const std::optional<ExportResult>&)>& report);

    /// The Run view, for its exports (the window sets it once built).
    void setRunView(RunView* run) { run_ = run; }
    /// Ctrl+E: the shown plan view as an image when the plan tab is current, the comparison CSV when
    /// the comparison tab is, the steps' CSV when the Run tab is, else the sample table CSV.
    std::optional<ExportResult> exportCurrent() const;
    std::optional<ExportResult> exportPlanJson() const;
    /// `format`: "routepack", "sglang" or "vllm".
    std::optional<ExportResult> exportExpertMap(const QString& format) const;
    /// The plan view tab that is shown (its viewNames() id names the file).
    std::optional<ExportResult> exportPlanViewImage() const;
    std::optional<ExportResult> exportComparisonCsv() const;
    std::optional<ExportResult> exportComparisonChart() const;
    std::optional<ExportResult> exportSampleCsv() const;
    /// The Run view's steps (writeRunCsv); nullopt when it shows no series.
    std::optional<ExportResult> exportRunCsv() const;
    /// One chart of the Run view (RunView::chartNames) as PNG or SVG.
    std::optional<ExportResult> exportRunChart(const QString& name) const;

    /// The folder the save dialogs start in: the one of the last file chosen, or set here (the
    /// studio restores it from its settings). Empty: the dialog's own default (the working folder).
    QString folder() const { return folder_; }
    void setFolder(const QString& folder) { folder_ = folder; }
    /// Where a save dialog for default file name `name` starts: `name` in folder(), or bare `name`.
    QString suggestedPath(const QString& name) const;

private:
    /// The save dialog (title, default file name, filter); remembers the chosen file's folder.
    QString askFile(const QString& title, const QString& name, const QString& filter) const;

    QWidget* parent_;
    PlanView* plan_;
    CompareView* compare_;
    SampleTableModel* samples_;
    SampleFilterProxy* proxy_;
    QTabWidget* tabs_;
    RunView* run_ = nullptr;
    mutable QString folder_;
};

} // namespace routepack::views
