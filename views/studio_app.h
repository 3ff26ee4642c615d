#pragma once
// Entry point of `routepack-studio` (app/studio_main.cpp calls runStudio and nothing else).
//
//   routepack-studio [LIBRARY]                  the studio on LIBRARY, else the last library, else
//                                               the embedded demo library (built on first start)
//   routepack-studio --headless [--headless-out DIR]
//                                               no window: the demo pipeline (synth, import, window,
//                                               plan) into DIR (default ./routepack-demo) with
//                                               plan.json, comparison.csv and PNG renderings
//
// Without a display (neither DISPLAY nor WAYLAND_DISPLAY set, and QT_QPA_PLATFORM unset) the studio
// says so and runs headless (into --headless-out DIR when given).
#include <QString>
#include <QStringList>
#include <QTextStream>

namespace routepack::views {

/// What runHeadlessDemo wrote.
struct HeadlessOutput {
    QString folder;    ///< absolute path of the output folder
    QStringList files; ///< file names inside it, in the order written
};

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
