#pragma once
// Entry point of `routepack-studio` (app/studio_main.cpp calls runStudio and nothing else).
//
//   routepack-studio [LIBRARY]                  the studio on LIBRARY, else the last library, else
//                                               the embedded demo library (built on first start)
//   routepack-studio --headless-out DIR --db LIBRARY (--run N | --trace T --window W)
//                                               no window: a saved run's plan.json and its plan views
//                                               as PNG into DIR (runHeadlessRun)
//   routepack-studio --headless-out DIR --db LIBRARY --cluster-run N
//                                               no window: an imported cluster run's Run view charts
//                                               as PNG and its steps as CSV into DIR
//                                               (runHeadlessClusterRun)
//   routepack-studio --headless-out DIR --db LIBRARY --compare-runs A,B[,...]
//                                               no window: whole runs A, B, ... overlaid, their
//                                               differences as PNG and their table as CSV into DIR
//                                               (runHeadlessCompareRuns)
//   routepack-studio --headless [--headless-out DIR]
//                                               no window: the demo pipeline (synth, import, window,
//                                               plan) into DIR (default ./routepack-demo) with
//                                               plan.json, comparison.csv and PNG renderings
//
// Without a display (neither DISPLAY nor WAYLAND_DISPLAY set, and QT_QPA_PLATFORM unset) the studio
// says so and runs headless (into --headless-out DIR when given).
#include <QList>
#include <QString>
#include <QStringList>
#include <QTextStream>

namespace routepack::views {

/// What runHeadlessDemo wrote.
struct HeadlessOutput {
    QString folder;    ///< absolute path of the output folder
    QStringList files; ///< file names inside it, in the order written
    qint64 run = 0;    ///< the saved run rendered (runHeadlessRun), or the cluster run (runHeadlessClusterRun)
};

/// Which saved run runHeadlessRun renders: run `run` of `library`, or (run 0) the latest run with a
/// plan of window `window` of trace `trace` (the highest id, finished or cancelled).
struct HeadlessRun {
    QString library;
    qint64 run = 0;
    QString trace, window;
};

/// Renders a saved run without a window into `folder` (created when missing): plan.json, the run's
/// stored plan (Library::run_plan_json, the file the studio's File > Export > Plan JSON and the
/// rewrite dialog use for a saved run), and plan-<view>.png for every PlanView view of the plan
/// rebuilt against its window (restore_plan; the communication view on more than one node only, the
/// measured view only when the library links measured plans to the run: run_measured_choices).
/// The library is opened read-only. Needs a QApplication. False with `error` set (an unknown run,
/// a window without runs, a failed run, a damaged plan, a write failure).
bool runHeadlessRun(const QString& folder, const HeadlessRun& what, HeadlessOutput* output, QString* error);

/// Renders imported cluster run `clusterRun` of library file `library` as the Run view shows it, into
/// `folder` (created when missing): run.csv (its steps, RunView::tableCsv: `routepack sweep`'s
/// sweep.csv columns) and run-<chart>.png for each chart it has (costs, gains, churn; apply when its
/// plans carry a migration cost model). The library is opened read-only. Needs a QApplication. False
/// with `error` set: "no cluster run N in <library>", a run whose series cannot be shown (the Run
/// view's empty-state text), a write failure.
bool runHeadlessClusterRun(const QString& folder, const QString& library, qint64 clusterRun, HeadlessOutput* output,
                           QString* error);

/// Renders whole runs `ids` (2 or more) of library file `library` as the Whole runs tab compares them,
/// into `folder` (created when missing): compare-runs.csv (comparison_csv: one column group per run,
/// then one per difference against the first) and, for each figure some step has (max_g U, gain,
/// experts moved; bytes and modelled seconds with a migration cost model), compare-<key>-overlay.png
/// and compare-<key>-difference.png (<key> compare_metric_key). Read-only. Needs a QApplication. False
/// with `error` set: compare_whole_runs' errors ("no whole run N in <library>", ...), a write failure.
bool runHeadlessCompareRuns(const QString& folder, const QString& library, const QList<qint64>& ids,
                            HeadlessOutput* output, QString* error);

/// Runs the demo pipeline without a window (storage::build_demo: synthetic GRPO trace, library,
/// window, plan, saved run, plan.json) into `folder`, then renders with the studio's own widgets:
/// comparison.csv (CompareView table), comparison-chart.png (CompareView chart) and
/// plan-<view>.png for every PlanView view. Needs a QApplication (use the offscreen platform).
/// Returns false with `error` set on failure.
bool runHeadlessDemo(const QString& folder, HeadlessOutput* output, QString* error);

/// Parses the command line, picks the platform (offscreen when headless), creates the
/// QApplication and runs the studio or the headless demo. Returns the process exit status.
int runStudio(int argc, char** argv);

} // namespace routepack::views
