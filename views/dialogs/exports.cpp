#include "views/dialogs/exports.h"
#include "views/widgets/file_export.h"

#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "views/library/sample_table_model.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_views.h"
#include "views/run/run_view.h"
#include "views/widgets/gui_text.h"
#include "views/widgets/item_actions.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QSaveFile>
#include <QTabWidget>

namespace routepack::views {

namespace {

ExportResult failure(const QString& message) {
    return ExportResult{message, true};
}

} // namespace

ExportResult writePlanJson(const PlanResult& plan, const QString& file) {
    QString err;
    if (!writeTextFile(file, plan_to_json(plan), &err)) return failure(err);
    return {StudioExports::tr("Plan written to %1.").arg(file)};
}

ExportResult writeExpertMap(const PlanResult& plan, const QString& format, const QString& file) {
    QString err;
    try {
        const std::string text =
            expert_map_json(planned_placement(plan), plan.model, parse_expert_map_format(format.toStdString()));
        if (!writeTextFile(file, text, &err)) return failure(err);
    } catch (const std::exception& e) {
        return failure(guiErrorText(e));
    }
    return {StudioExports::tr("Expert map (%1) written to %2.").arg(format, file)};
}

ExportResult writePlanViewImage(const PlanView& view, const QString& name, const QString& file) {
    QString err;
    if (!view.exportView(name, file, &err)) return failure(err);
    return {StudioExports::tr("%1 written to %2.").arg(name, file)};
}

ExportResult writeComparisonCsv(const CompareView& view, const QString& file) {
    QString err;
    if (!view.exportTableCsv(file, &err)) return failure(err);
    return {StudioExports::tr("Comparison written to %1.").arg(file)};
}

ExportResult writeComparisonChart(const CompareView& view, const QString& file) {
    QString err;
    if (!view.exportChart(file, &err)) return failure(err);
    return {StudioExports::tr("Comparison chart written to %1.").arg(file)};
}

ExportResult writeRunCsv(const RunView& view, const QString& file) {
    std::string text = view.tableCsv();
    if (text.empty()) return failure(StudioExports::tr("the Run view shows no run"));
    text.pop_back(); // writeTextFile ends the text with "\n": the last line ends in "\r\n" like every other
    QString err;
    if (!writeTextFile(file, text, &err)) return failure(err);
    return {StudioExports::tr("Run steps written to %1.").arg(file)};
}

ExportResult writeRunChart(const RunView& view, const QString& name, const QString& file) {
    QString err;
    if (!view.exportChart(name, file, &err)) return failure(err);
    return {StudioExports::tr("Run chart %1 written to %2.").arg(name, file)};
}

ExportResult writeSampleCsv(const SampleFilterProxy& proxy, const QString& file) {
    QString err;
    if (!exportModelCsv(proxy, file, &err)) return failure(err);
    return {StudioExports::tr("Sample table written to %1.").arg(file)};
}

StudioExports::StudioExports(QWidget* parent, PlanView* plan, CompareView* compare, SampleTableModel* samples,
                             SampleFilterProxy* proxy, QTabWidget* tabs)
    : parent_(parent), plan_(plan), compare_(compare), samples_(samples), proxy_(proxy), tabs_(tabs) {}

std::optional<ExportResult> StudioExports::exportCurrent() const {
    if (tabs_->currentWidget() == plan_ && plan_->plan()) return exportPlanViewImage();
    if (tabs_->currentWidget() == compare_ && plan_->plan()) return exportComparisonCsv();
    if (run_ && tabs_->currentWidget() == run_ && run_->currentSeries()) return exportRunCsv();
    return exportSampleCsv();
}

QString StudioExports::suggestedPath(const QString& name) const {
    return folder_.isEmpty() ? name : QDir(folder_).filePath(name);
}

QString StudioExports::askFile(const QString& title, const QString& name, const QString& filter) const {
    QString f = askSaveFile(parent_, title, suggestedPath(name), filter);
    if (!f.isEmpty()) folder_ = QFileInfo(f).absolutePath();
    return f;
}

std::optional<ExportResult> StudioExports::exportPlanJson() const {
    const auto plan = plan_->plan();
    if (!plan) return std::nullopt;
    const QString f = askFile(tr("Export plan JSON"), QStringLiteral("plan.json"), tr("JSON (*.json)"));
    if (f.isEmpty()) return std::nullopt;
    return writePlanJson(*plan, f);
}

std::optional<ExportResult> StudioExports::exportExpertMap(const QString& format) const {
    const auto plan = plan_->plan();
    if (!plan) return std::nullopt;
    const QString f = askFile(tr("Export expert map (%1)").arg(format),
                              QStringLiteral("expert-map-%1.json").arg(format), tr("JSON (*.json)"));
    if (f.isEmpty()) return std::nullopt;
    return writeExpertMap(*plan, format, f);
}

std::optional<ExportResult> StudioExports::exportPlanViewImage() const {
    if (!plan_->plan()) return std::nullopt;
    const QStringList names = plan_->viewNames();
    const int i = plan_->currentIndex();
    const QString name = i >= 0 && i < names.size() ? names[i] : names.value(0);
    const QString f =
        askFile(tr("Export %1").arg(name), name + QStringLiteral(".png"), tr("PNG image (*.png);;SVG drawing (*.svg)"));
    if (f.isEmpty()) return std::nullopt;
    return writePlanViewImage(*plan_, name, f);
}

std::optional<ExportResult> StudioExports::exportComparisonCsv() const {
    const QString f = askFile(tr("Export comparison"), QStringLiteral("comparison.csv"), tr("CSV (*.csv)"));
    if (f.isEmpty()) return std::nullopt;
    return writeComparisonCsv(*compare_, f);
}

std::optional<ExportResult> StudioExports::exportComparisonChart() const {
    const QString f = askFile(tr("Export comparison chart"), QStringLiteral("comparison.png"),
                              tr("PNG image (*.png);;SVG drawing (*.svg)"));
    if (f.isEmpty()) return std::nullopt;
    return writeComparisonChart(*compare_, f);
}

std::optional<ExportResult> StudioExports::exportSampleCsv() const {
    if (samples_->rowCount() == 0) return std::nullopt;
    const QString f = askFile(tr("Export samples"), QStringLiteral("samples.csv"), tr("CSV (*.csv)"));
    if (f.isEmpty()) return std::nullopt;
    return writeSampleCsv(*proxy_, f);
}

std::optional<ExportResult> StudioExports::exportRunCsv() const {
    if (!run_ || !run_->currentSeries()) return std::nullopt;
    const QString f = askFile(tr("Export run steps"), QStringLiteral("sweep.csv"), tr("CSV (*.csv)"));
    if (f.isEmpty()) return std::nullopt;
    return writeRunCsv(*run_, f);
}

std::optional<ExportResult> StudioExports::exportRunChart(const QString& name) const {
    if (!run_ || !run_->currentSeries()) return std::nullopt;
    const QString f =
        askFile(tr("Export %1").arg(name), name + QStringLiteral(".png"), tr("PNG image (*.png);;SVG drawing (*.svg)"));
    if (f.isEmpty()) return std::nullopt;
    return writeRunChart(*run_, name, f);
}

StudioExports::MenuActions
StudioExports::fillMenu(QMenu* exp, const std::function<void(const std::optional<ExportResult>&)>& report) {
    MenuActions out;
    QAction* shown = exp->addAction(QObject::tr("Export what is shown…"));
    shown->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    QObject::connect(shown, &QAction::triggered, exp, [this, report] { report(exportCurrent()); });
    exp->addSeparator();
    QAction* planJson = exp->addAction(QObject::tr("Plan JSON…"));
    QObject::connect(planJson, &QAction::triggered, exp, [this, report] { report(exportPlanJson()); });
    QMenu* maps = exp->addMenu(QObject::tr("Expert map"));
    for (const char* f : {"routepack", "sglang", "vllm"}) {
        QAction* a = maps->addAction(QString::fromLatin1(f));
        QObject::connect(a, &QAction::triggered, exp,
                         [this, report, f] { report(exportExpertMap(QString::fromLatin1(f))); });
        out.plan << a;
    }
    QAction* viewImage = exp->addAction(QObject::tr("Current plan view (PNG/SVG)…"));
    QObject::connect(viewImage, &QAction::triggered, exp, [this, report] { report(exportPlanViewImage()); });
    QAction* cmpCsv = exp->addAction(QObject::tr("Comparison table (CSV)…"));
    QObject::connect(cmpCsv, &QAction::triggered, exp, [this, report] { report(exportComparisonCsv()); });
    QAction* cmpChart = exp->addAction(QObject::tr("Comparison chart (PNG/SVG)…"));
    QObject::connect(cmpChart, &QAction::triggered, exp, [this, report] { report(exportComparisonChart()); });
    QAction* runCsv = exp->addAction(QObject::tr("Run steps (CSV, as routepack sweep)…"));
    QObject::connect(runCsv, &QAction::triggered, exp, [this, report] { report(exportRunCsv()); });
    QMenu* runCharts = exp->addMenu(QObject::tr("Run chart (PNG/SVG)"));
    for (const QString& name : RunView::chartNames())
        QObject::connect(runCharts->addAction(name), &QAction::triggered, exp,
                         [this, report, name] { report(exportRunChart(name)); });
    QAction* sampleCsv = exp->addAction(QObject::tr("Sample table (CSV)…"));
    QObject::connect(sampleCsv, &QAction::triggered, exp, [this, report] { report(exportSampleCsv()); });
    out.plan << planJson << viewImage << cmpCsv << cmpChart;
    out.fullPlan << maps->actions() << planJson << cmpCsv << cmpChart;
    return out;
}

} // namespace routepack::views
