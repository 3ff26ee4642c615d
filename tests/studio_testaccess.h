#pragma once
// How the studio's GUI tests reach the parts of a StudioWindow: its child widgets and objects by
// their object names (findChild), and what is no child object (the exports) through
// StudioWindowTestAccess, the window's one test-access friend. A part the window lacks is nullptr.
// The parts of the views inside it: tests/views_testaccess.h.
#include "tests/views_testaccess.h"
#include "views/dialogs/exports.h"
#include "views/dialogs/rewrite_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/jobs/job_tracker.h"
#include "views/jobs/plan_jobs.h"
#include "views/library/length_histogram_view.h"
#include "views/library/library_pane.h"
#include "views/library/library_tree_model.h"
#include "views/library/sample_pane.h"
#include "views/library/sample_table_model.h"
#include "views/plan/plan_views.h"
#include "views/run/run_view.h"
#include "views/run/whole_runs_view.h"
#include "views/studio_window.h"

#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QTreeView>

namespace routepack::views {

/// The studio window's test-access friend: what no object name reaches.
struct StudioWindowTestAccess {
    /// File > Export's dialogs (their start folder is kept across sessions).
    static StudioExports* exports(const StudioWindow& w) { return w.exports_.get(); }
};

} // namespace routepack::views

namespace routepack::test::ui {

/// The plan views (tab "Plan" of the result tabs).
inline views::PlanView* planView(const views::StudioWindow& w) {
    return part<views::PlanView>(w, "planView");
}
/// The comparison of the shown window's runs (tab "Compare runs").
inline views::CompareView* compareView(const views::StudioWindow& w) {
    return part<views::CompareView>(w, "compareView");
}
/// The Run view (tab "Run").
inline views::RunView* runView(const views::StudioWindow& w) {
    return part<views::RunView>(w, "runView");
}
/// The Whole runs tab.
inline views::WholeRunsView* wholeRunsView(const views::StudioWindow& w) {
    return part<views::WholeRunsView>(w, "wholeRunsView");
}
/// The result tabs: Plan, Compare runs, Run, Whole runs.
inline QTabWidget* resultTabs(const views::StudioWindow& w) {
    return part<QTabWidget>(w, "resultTabs");
}
/// The plan views' "Import step…" button.
inline QToolButton* importStepButton(const views::StudioWindow& w) {
    return part<QToolButton>(w, "importStep");
}
/// The Topology and budgets form.
inline views::TopologyEditor* topologyEditor(const views::StudioWindow& w) {
    return part<views::TopologyEditor>(w, "topologyEditor");
}
/// The planner job queue.
inline views::PlanJobQueue* jobs(const views::StudioWindow& w) {
    return part<views::PlanJobQueue>(w, "planJobs");
}
/// The library dock: the tree, its filter line, deletes and renames, the recent libraries.
inline views::LibraryPane* libraryPane(const views::StudioWindow& w) {
    return part<views::LibraryPane>(w, "libraryPane");
}
inline QTreeView* libraryView(const views::StudioWindow& w) {
    return part<QTreeView>(w, "libraryTree");
}
inline views::LibraryTreeModel* libraryModel(const views::StudioWindow& w) {
    return part<views::LibraryTreeModel>(w, "libraryModel");
}
/// The filter line above the library tree.
inline QLineEdit* libraryFilter(const views::StudioWindow& w) {
    return part<QLineEdit>(w, "libraryFilter");
}
/// The tracker of the deletion jobs.
inline views::JobTracker* deletionJobs(const views::StudioWindow& w) {
    return part<views::JobTracker>(w, "deletionJobs");
}
/// File > Open Recent.
inline QMenu* recentMenu(const views::StudioWindow& w) {
    return part<QMenu>(w, "recentMenu");
}
/// The sample pane (table, filters and length histogram of the selected trace or window) and its parts.
inline views::SamplePane* samplePane(const views::StudioWindow& w) {
    return part<views::SamplePane>(w, "samplePane");
}
inline views::SampleTableModel* sampleModel(const views::StudioWindow& w) {
    return samplePane(w)->model();
}
inline views::SampleFilterProxy* sampleProxy(const views::StudioWindow& w) {
    return samplePane(w)->proxy();
}
inline QTableView* sampleView(const views::StudioWindow& w) {
    return samplePane(w)->view();
}
inline views::LengthHistogramView* histogramView(const views::StudioWindow& w) {
    return part<views::LengthHistogramView>(*samplePane(w), "lengthHistogram");
}
inline QToolButton* clearFilterButton(const views::StudioWindow& w) {
    return part<QToolButton>(*samplePane(w), "clearFilter");
}
/// The status line (what it shows at its width: statusText(), elided when too long).
inline QLabel* statusLine(const views::StudioWindow& w) {
    return part<QLabel>(w, "statusLine");
}
/// The checkpoint rewrite dialog, once opened (nullptr before).
inline views::RewriteDialog* rewriteDialog(const views::StudioWindow& w) {
    return part<views::RewriteDialog>(w, "rewriteDialog");
}
/// The centre: the sample pane | the result tabs.
inline QSplitter* mainSplitter(const views::StudioWindow& w) {
    return part<QSplitter>(w, "mainSplit");
}
/// File > Export's dialogs.
inline views::StudioExports* exports(const views::StudioWindow& w) {
    return views::StudioWindowTestAccess::exports(w);
}

} // namespace routepack::test::ui

namespace ui = routepack::test::ui;
