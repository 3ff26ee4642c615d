// The studio changes nothing the user did not touch and says what is shown, offscreen: value fields
// take the mouse wheel only with focus; a saved run's setup never silently replaces edits of the
// form; the form's edits undo and redo (Ctrl+Z / Ctrl+Shift+Z). Real QWheelEvent and key events
// sent to the widgets. Screenshots via QWidget::grab into $ROUTEPACK_SCREENSHOT_DIR or a temporary
// folder.
#include "core/import/import.h"
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/plan/planner.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/topology_editor.h"
#include "views/jobs/plan_jobs.h"
#include "views/library/library_tree_model.h"
#include "views/plan/costs_panel.h"
#include "views/plan/grid_panel.h"
#include "views/plan/method_combo.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_models.h"
#include "views/plan/plan_views.h"
#include "views/run/run_view.h"
#include "views/studio_window.h"
#include "views/widgets/gui_text.h"
#include "views/widgets/roles.h"
#include "views/widgets/wheel_guard.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSet>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QTreeView>
#include <QUndoStack>
#include <QWheelEvent>
#include <QtTest>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {
constexpr auto& q = test::qpath; // a path as QString

/// Sends one wheel notch (angle delta 120, "up") to the middle of `w`; returns whether the event
/// came back accepted (false: Qt hands it on to the parents).
bool wheelUp(QWidget* w) {
    const QPointF at(w->width() / 2.0, w->height() / 2.0);
    QWheelEvent e(at, w->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase,
                  false);
    QApplication::sendEvent(w, &e);
    return e.isAccepted();
}

/// Budgets that plan the small synthetic window in well under a second.
PlannerBudgets quickBudgets() {
    PlannerBudgets b;
    b.annealing.levels = 2;
    b.annealing.steps = 50;
    b.seeding.candidates = 2;
    b.seeding.population = 2;
    b.workers = 1;
    return b;
}

} // namespace

class TestStudioTruth : public test::StudioTestBase {
    Q_OBJECT

    fs::path synthLibrary(const QString& tag) { return test::synth_library(test::temp_dir(tag), 2, 4); }

    /// The studio on a fresh synthetic library, shown and active, with one planned run (`run`).
    void plannedStudio(StudioWindow& w, const fs::path& lib, qint64* run) {
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
        ui::topologyEditor(w)->setBudgets(quickBudgets());
        QVERIFY(w.runPlanner() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        *run = shown.back().front().toLongLong();
        QVERIFY(*run > 0);
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
    }

private Q_SLOTS:
    void initTestCase() { initStudioTest(QStringLiteral("tst_studio_truth"), QStringLiteral("studio-truth")); }

    void cleanupTestCase() { clearStudioSettings(); }

    // --- The mouse wheel ---

    void wheelChangesOnlyFocusedFields() {
        StudioWindow w(options_);
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        auto* tolerance = ui::topologyEditor(w)->findChild<QDoubleSpinBox*>(QStringLiteral("commLoadTolerance"));
        auto* perCell = ui::topologyEditor(w)->findChild<QSpinBox*>(QStringLiteral("samplesPerCell"));
        auto* oversize = ui::topologyEditor(w)->findChild<QComboBox*>(QStringLiteral("oversize"));
        QVERIFY(tolerance && perCell && oversize);
        // Every value field of the studio takes the focus by Tab or click, never by the wheel.
        for (QWidget* f : w.findChildren<QAbstractSpinBox*>())
            QVERIFY2(f->focusPolicy() == Qt::StrongFocus, qPrintable(f->objectName()));
        for (QWidget* f : w.findChildren<QComboBox*>())
            QVERIFY2(f->focusPolicy() == Qt::StrongFocus, qPrintable(f->objectName()));
        // Without focus the wheel leaves the values alone and goes on to the scroll area.
        ui::libraryView(w)->setFocus();
        QCOMPARE(tolerance->value(), 0.02);
        QVERIFY(!wheelUp(tolerance));
        QCOMPARE(tolerance->value(), 0.02);
        QVERIFY(!wheelUp(perCell));
        QCOMPARE(perCell->value(), 0);
        oversize->setCurrentIndex(1);
        ui::topologyEditor(w)->markClean();
        const int steps = ui::undoStack(ui::topologyEditor(w))->count();
        QVERIFY(!wheelUp(oversize));
        QCOMPARE(oversize->currentIndex(), 1);
        QVERIFY(!ui::topologyEditor(w)->hasUnsavedEdits());
        QCOMPARE(ui::undoStack(ui::topologyEditor(w))->count(), steps);
        // With focus one notch is one step (0.01 for the tolerance, 1 for a count, one item back).
        tolerance->setFocus();
        QVERIFY(tolerance->hasFocus());
        QVERIFY(wheelUp(tolerance));
        QCOMPARE(tolerance->value(), 0.03);
        perCell->setFocus();
        wheelUp(perCell);
        QCOMPARE(perCell->value(), 1);
        oversize->setFocus();
        wheelUp(oversize);
        QCOMPARE(oversize->currentIndex(), 0);
        QVERIFY(ui::topologyEditor(w)->hasUnsavedEdits());
        shot(&w, QStringLiteral("wheel-focused-fields"));
    }

    void wheelGuardDecidesByFocus() {
        installWheelGuard();
        QWidget host;
        auto* spin = new QSpinBox(&host);
        auto* combo = new QComboBox(&host);
        auto* edit = new QLineEdit(&host);
        combo->addItems({QStringLiteral("a"), QStringLiteral("b")});
        host.show();
        host.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&host));
        edit->setFocus();
        QVERIFY(wheelBlocked(spin));
        QVERIFY(wheelBlocked(combo));
        QVERIFY(!wheelBlocked(edit)); // not a value field
        spin->setFocus();
        QVERIFY(!wheelBlocked(spin));
        QVERIFY(wheelBlocked(combo));
        QCOMPARE(spin->focusPolicy(), Qt::StrongFocus);
    }

    void methodBoxFitsMethodsAddedAfterItsFirstShow() {
        // The plan views' method box is shown with the paper's four methods; a plan with the
        // communication methods adds "routepack+comm", which the box then shows whole.
        QWidget host;
        auto* bar = new QHBoxLayout(&host);
        QComboBox* box = methodCombo(&host);
        bar->addWidget(box);
        bar->addStretch(1);
        host.resize(600, 60);
        host.show();
        QVERIFY(QTest::qWaitForWindowExposed(&host));
        addMethodItem(box, Method::RoutePackComm);
        setComboMethod(box, Method::RoutePackComm);
        QApplication::processEvents();
        const QString label = QString::fromLatin1(method_label(Method::RoutePackComm));
        QCOMPARE(box->currentText(), label);
        QVERIFY2(box->width() >= box->fontMetrics().horizontalAdvance(label) + 20,
                 qPrintable(QStringLiteral("%1 px for %2").arg(box->width()).arg(label)));
    }

    // --- Undo and redo of the form ---

    void formEditsUndoAndRedoByKeys() {
        StudioWindow w(options_);
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        TopologyEditor* e = ui::topologyEditor(w);
        auto* tolerance = e->findChild<QDoubleSpinBox*>(QStringLiteral("commLoadTolerance"));
        QLineEdit* name = nullptr;
        for (QLineEdit* l : e->findChildren<QLineEdit*>())
            if (l->text() == QStringLiteral("synthetic-demo-ep8-dp4")) name = l;
        QVERIFY(tolerance && name);
        QVERIFY(!e->hasUnsavedEdits());
        // Two Up keys on the tolerance (one step), then three characters typed into the name (one step).
        tolerance->setFocus();
        QTest::keyClick(tolerance, Qt::Key_Up);
        QTest::keyClick(tolerance, Qt::Key_Up);
        QCOMPARE(tolerance->value(), 0.04);
        name->setFocus();
        name->end(false);
        QTest::keyClicks(name, QStringLiteral("-me"));
        QCOMPARE(e->topologyName(), QStringLiteral("synthetic-demo-ep8-dp4-me"));
        QVERIFY(e->hasUnsavedEdits());
        QCOMPARE(e->currentPreset(), QString());
        // Ctrl+Z in the name field undoes the form's last step (the typing), then the tolerance.
        QTest::keyClick(name, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(e->topologyName(), QStringLiteral("synthetic-demo-ep8-dp4"));
        QCOMPARE(tolerance->value(), 0.04);
        QTest::keyClick(name, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(tolerance->value(), 0.02);
        QVERIFY(!e->hasUnsavedEdits());
        QCOMPARE(e->currentPreset(), QStringLiteral("synthetic-demo-ep8-dp4"));
        // Ctrl+Shift+Z redoes them, from a spin box as well.
        tolerance->setFocus();
        QTest::keyClick(tolerance, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(tolerance->value(), 0.04);
        QCOMPARE(e->topologyName(), QStringLiteral("synthetic-demo-ep8-dp4"));
        QTest::keyClick(tolerance, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(e->topologyName(), QStringLiteral("synthetic-demo-ep8-dp4-me"));
        QVERIFY(e->hasUnsavedEdits());
        // A preset chosen is one step too: Ctrl+Z brings the edited form back.
        QVERIFY(e->selectPreset(QStringLiteral("deepseek-v2-lite-ep8-dp4")));
        QVERIFY(!e->hasUnsavedEdits());
        name->setFocus();
        QTest::keyClick(name, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(e->topologyName(), QStringLiteral("synthetic-demo-ep8-dp4-me"));
        QCOMPARE(tolerance->value(), 0.04);
    }

    void undoKeepsBudgetsOutsideTheRules() {
        // Budgets that break a rule (anytime without a time limit) are shown as they are; undoing an
        // edit beside them restores the field and keeps them.
        TopologyEditor e;
        PlannerBudgets b;
        b.anytime = true;
        e.setBudgets(b);
        QString why;
        QVERIFY(!e.budgets(&why));
        auto* tolerance = e.findChild<QDoubleSpinBox*>(QStringLiteral("commLoadTolerance"));
        tolerance->setValue(0.05);
        QVERIFY(e.hasUnsavedEdits());
        ui::undoStack(&e)->undo();
        QCOMPARE(tolerance->value(), 0.02);
        QVERIFY(e.budgets().anytime);
        QVERIFY(!e.hasUnsavedEdits());
        ui::undoStack(&e)->redo();
        QCOMPARE(tolerance->value(), 0.05);
    }

    void migrationSectionShownEditedAndKept() {
        // A topology's migration section goes through the form unchanged, its derived figures are
        // shown (hand-computed below), and edits by keys are steps of the form's undo.
        TopologyEditor e;
        Topology t = known_topology("deepseek-v2-lite-ep8-dp4");
        t.has_migration = true;
        t.migration.state_bytes_per_param = 2;
        t.migration.intra_node_GBps = 300;
        t.migration.inter_node_GBps = 25;
        t.migration.achieved_TFLOPs = 500;
        t.migration.plan_seconds = 0.25;
        t.migration.overlap_planning = false;
        e.setTopology(QStringLiteral("moves"), t);
        QString why;
        std::optional<Topology> back = e.topology(&why);
        QVERIFY2(back.has_value(), qPrintable(why));
        QCOMPARE(*back, t);
        auto* box = e.findChild<QGroupBox*>(QStringLiteral("migrationBox"));
        auto* inter = e.findChild<QDoubleSpinBox*>(QStringLiteral("migration:inter_node_GBps"));
        auto* params = e.findChild<QDoubleSpinBox*>(QStringLiteral("migration:expert_parameters"));
        auto* perU = e.findChild<QDoubleSpinBox*>(QStringLiteral("migration:seconds_per_U"));
        auto* planning = e.findChild<QComboBox*>(QStringLiteral("migration:planning"));
        QVERIFY(box && inter && params && perU && planning);
        QVERIFY(box->isChecked());
        QCOMPARE(params->text(), QStringLiteral("from the model"));
        QCOMPARE(perU->text(), QStringLiteral("derived"));
        QCOMPARE(planning->currentText(), QStringLiteral("serial"));
        QCOMPARE(e.migrationFigures(),
                 QStringLiteral("Expert parameters come from the model of the trace planned: open a trace to see the "
                                "figures, or give them here."));
        // DeepSeek-V2-Lite: 3 x 2048 x 1408 = 8,650,752 parameters; x 2 B = 17,301,504 B; / 300e9 B/s =
        // 0.0577 ms, / 25e9 B/s = 0.692 ms; 6 x 4096 x 8,650,752 / 500e12 = 0.425 ms per unit of U.
        e.setTraceModel(known_model("deepseek-v2-lite"));
        QCOMPARE(e.migrationFigures(),
                 QStringLiteral("One expert's state: 17.3 MB (2 B x 8,650,752 parameters of deepseek-v2-lite); "
                                "moving it takes 0.0577 ms within a node, 0.692 ms across nodes. Seconds per unit "
                                "of max_g U: 0.425 ms (derived: 6 x C 4,096 x 8,650,752 parameters / 500 TFLOP/s)."));
        QCOMPARE(e.findChild<QLabel*>(QStringLiteral("migrationFigures"))->text(), e.migrationFigures());
        // The inter-node bandwidth typed in: the topology and the figures follow; Ctrl+Z takes it back.
        e.resize(400, e.sizeHint().height());
        e.show();
        shot(box, QStringLiteral("migration-section"));
        inter->setFocus();
        inter->selectAll();
        QTest::keyClicks(inter, QStringLiteral("100"));
        QCOMPARE(e.topology()->migration.inter_node_GBps, 100.0);
        QVERIFY2(e.migrationFigures().contains(QStringLiteral("0.173 ms across nodes")),
                 qPrintable(e.migrationFigures()));
        QVERIFY(e.hasUnsavedEdits());
        QTest::keyClick(inter, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(*e.topology(), t);
        QVERIFY(!e.hasUnsavedEdits());
        // A given seconds per unit of U and expert parameters are the figures' own.
        perU->setValue(0.002);
        params->setValue(1000000);
        QCOMPARE(e.migrationFigures(),
                 QStringLiteral("One expert's state: 2 MB (2 B x 1,000,000 parameters); moving it takes 0.00667 ms "
                                "within a node, 0.08 ms across nodes. Seconds per unit of max_g U: 2 ms (given)."));
        // A value the topology file refuses is refused by the form, in the file's words.
        perU->setValue(1e-13);
        QVERIFY(!e.topology(&why));
        QCOMPARE(why, QStringLiteral("topology: migration.seconds_per_U is 1e-13, not a number in [1e-12, 1e+15]"));
        // Unchecked: no section, in the topology and its file; checked again on a topology without one:
        // the defaults.
        QTest::mouseClick(box, Qt::LeftButton, Qt::NoModifier, QPoint(12, 8));
        QVERIFY(!box->isChecked());
        back = e.topology(&why);
        QVERIFY2(back.has_value(), qPrintable(why));
        QVERIFY(!back->has_migration);
        QVERIFY(!QString::fromStdString(topology_to_json(*back)).contains(QStringLiteral("migration")));
        QCOMPARE(e.migrationFigures(), QString());
        e.setTopology(QStringLiteral("plain"), known_topology("deepseek-v2-lite-ep8-dp4"));
        QVERIFY(!box->isChecked());
        box->setChecked(true);
        back = e.topology();
        QVERIFY(back->has_migration);
        QCOMPARE(back->migration, MigrationModel{});
        QCOMPARE(e.migrationFigures(),
                 QStringLiteral("One expert's state: 121 MB (14 B x 8,650,752 parameters of deepseek-v2-lite); "
                                "moving it takes 0.303 ms within a node, 2.42 ms across nodes. Seconds per unit of "
                                "max_g U: 0.532 ms (derived: 6 x C 4,096 x 8,650,752 parameters / 400 TFLOP/s)."));
        // A run's setup with the section is what the form shows (planning from it keeps the section).
        PlannerBudgets b;
        e.loadSetup(QStringLiteral("moves"), t, b, QStringLiteral("run 1"));
        QVERIFY(e.showsSetup(QStringLiteral("moves"), t, b));
    }

    void presetSwitchSaysWhatChangedAndBudgetsShowEdited() {
        // A budget typed in stays through a preset picked in the box, and is never hidden: its label is
        // bold, the budget box counts it, the status line names it and what the preset changed;
        // Defaults resets the budgets as one undo step.
        StudioWindow w(options_);
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        TopologyEditor* e = ui::topologyEditor(w);
        auto* box = e->findChild<QGroupBox*>(QStringLiteral("budgetBox"));
        auto* steps = e->findChild<QSpinBox*>(QStringLiteral("budget:steps_per_level"));
        auto* defaults = e->findChild<QPushButton*>(QStringLiteral("budgetDefaults"));
        auto* preset = e->findChild<QComboBox*>(QStringLiteral("presetBox"));
        QVERIFY(box && steps && defaults && preset);
        auto* form = static_cast<QFormLayout*>(box->layout());
        auto* stepsLabel = qobject_cast<QLabel*>(form->labelForField(steps));
        QVERIFY(stepsLabel);
        QCOMPARE(box->title(), QStringLiteral("Planner budgets (the defaults)"));
        QVERIFY(!defaults->isEnabled());
        QVERIFY(!stepsLabel->font().bold());
        QVERIFY(e->editedBudgets().isEmpty());
        steps->setFocus();
        steps->selectAll();
        QTest::keyClicks(steps, QStringLiteral("5000"));
        QCOMPARE(e->budgets().annealing.steps, 5000);
        QCOMPARE(box->title(), QStringLiteral("Planner budgets (1 edited)"));
        QVERIFY(stepsLabel->font().bold());
        QCOMPARE(stepsLabel->toolTip(), QStringLiteral("Edited; the default is 1,000"));
        QVERIFY(defaults->isEnabled());
        QCOMPARE(e->editedBudgets(), QStringList{QStringLiteral("Steps K per level 5,000")});
        // Up from synthetic-demo-ep8-dp4 (the start-up preset, last in the box) picks
        // llama4-maverick-ep8-dp4: E 32 -> 128, C 8192 -> 2048, other attention stages.
        QCOMPARE(e->currentPreset(), QStringLiteral("synthetic-demo-ep8-dp4"));
        preset->setFocus();
        QTest::keyClick(preset, Qt::Key_Up);
        QCOMPARE(e->currentPreset(), QStringLiteral("llama4-maverick-ep8-dp4"));
        QCOMPARE(w.statusText(),
                 QStringLiteral("Preset shipped: llama4-maverick-ep8-dp4: Experts per layer E 32 \u2192 128, Token cap "
                                "C 8,192 \u2192 2,048, Attention stages changed; budgets kept, 1 not the defaults: "
                                "Steps K per level 5,000 (Defaults in Planner budgets resets them)."));
        QCOMPARE(e->budgets().annealing.steps, 5000);
        QVERIFY(stepsLabel->font().bold());
        // Defaults by a click: every budget back, one step that Ctrl+Z takes back.
        QTest::mouseClick(defaults, Qt::LeftButton);
        QCOMPARE(e->budgets().annealing.steps, PlannerBudgets{}.annealing.steps);
        QCOMPARE(box->title(), QStringLiteral("Planner budgets (the defaults)"));
        QVERIFY(!stepsLabel->font().bold());
        QCOMPARE(e->topologyName(), QStringLiteral("llama4-maverick-ep8-dp4"));
        steps->setFocus();
        QTest::keyClick(steps, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(e->budgets().annealing.steps, 5000);
        // A special value reads as its meaning in the list and the default's tooltip.
        auto* moves = e->findChild<QSpinBox*>(QStringLiteral("budget:max_moves"));
        auto* decay = e->findChild<QDoubleSpinBox*>(QStringLiteral("budget:history_decay"));
        QVERIFY(moves && decay);
        QCOMPARE(moves->text(), QStringLiteral("unlimited"));
        QCOMPARE(decay->text(), QStringLiteral("none (the step's own loads)"));
        moves->setValue(200);
        QCOMPARE(qobject_cast<QLabel*>(form->labelForField(moves))->toolTip(),
                 QStringLiteral("Edited; the default is unlimited"));
        QCOMPARE(e->editedBudgets(),
                 (QStringList{QStringLiteral("Steps K per level 5,000"), QStringLiteral("Max moves 200")}));
        QApplication::processEvents();
        // A bold label is laid out whole: as wide as its bold text.
        for (QLabel* l : {stepsLabel, qobject_cast<QLabel*>(form->labelForField(moves))})
            QVERIFY2(l->width() >= l->fontMetrics().horizontalAdvance(l->text()), qPrintable(l->text()));
        shot(box, QStringLiteral("budgets-edited"));
    }

    // --- A saved run's setup and the form's edits ---

    void selectingARunKeepsTheFormsEdits() {
        const fs::path lib = synthLibrary(QStringLiteral("truth-keep"));
        StudioWindow w(options_);
        qint64 run = 0;
        plannedStudio(w, lib, &run);
        TopologyEditor* e = ui::topologyEditor(w);
        QVERIFY(!e->hasUnsavedEdits()); // the form's setup is the run's
        auto* tolerance = e->findChild<QDoubleSpinBox*>(QStringLiteral("commLoadTolerance"));
        tolerance->setFocus();
        QTest::keyClick(tolerance, Qt::Key_Up);
        QCOMPARE(tolerance->value(), 0.03);
        // Away to the window and back to the run: the plan is shown, the edit stays, the status says so.
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        QVERIFY(w.selectRun(run));
        QTRY_COMPARE(w.shownRunId(), run);
        QCOMPARE(tolerance->value(), 0.03);
        QVERIFY2(
            w.statusText().contains(
                QStringLiteral("The Topology and budgets form keeps your unsaved edits, not run %1's setup").arg(run)),
            qPrintable(w.statusText()));
        shot(&w, QStringLiteral("run-selected-edits-kept"));
        // Ctrl+Shift+L loads the run's setup; Ctrl+Z in the form brings the edit back.
        QTest::keyClick(&w, Qt::Key_L, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(tolerance->value(), 0.02);
        QVERIFY(!e->hasUnsavedEdits());
        QCOMPARE(w.statusText(),
                 QStringLiteral("The form holds run %1's setup (Ctrl+Z in the form brings your edits back).").arg(run));
        tolerance->setFocus();
        QTest::keyClick(tolerance, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(tolerance->value(), 0.03);
        // An unedited form takes a selected run's setup as before.
        e->markClean();
        e->setBudgets(PlannerBudgets{});
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        QVERIFY(w.selectRun(run));
        QCOMPARE(tolerance->value(), 0.02);
        QCOMPARE(e->budgets().annealing.steps, quickBudgets().annealing.steps);
        QVERIFY(!w.statusText().contains(QStringLiteral("keeps your unsaved edits")));
    }

    // --- What the status line and the tree say ---

    void oneNumberAndTheTreeFollowsTheLiveJob() {
        const fs::path lib = synthLibrary(QStringLiteral("truth-live"));
        StudioWindow w(options_);
        qint64 first = 0;
        plannedStudio(w, lib, &first);
        QVERIFY(w.selectRun(first));
        // While the next run is planned the tree shows its window, not the run planned before; every
        // line names the window or the run, never a job number.
        QStringList lines;
        QList<int> kinds;
        connect(ui::jobs(w), &PlanJobQueue::jobStarted, &w, [&] {
            lines << w.statusText();
            kinds << ui::libraryView(w)->currentIndex().data(KindRole).toInt();
        });
        connect(ui::jobs(w), &PlanJobQueue::progress, &w, [&] {
            lines << w.statusText();
            kinds << ui::libraryView(w)->currentIndex().data(KindRole).toInt();
        });
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.runPlanner() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        const qint64 second = shown.back().front().toLongLong();
        QCOMPARE(second, first + 1);
        QVERIFY(!lines.isEmpty());
        QCOMPARE(lines.front(), QStringLiteral("Planning a new run of syn/all…"));
        for (const QString& line : lines.mid(1))
            QVERIFY2(
                QRegularExpression(QStringLiteral("^New run of syn/all: [a-z ]+ \\(\\d+%, \\d+\\.\\d s elapsed(, about "
                                                  "[^)]+ left)?\\)$"))
                    .match(line)
                    .hasMatch(),
                qPrintable(line));
        for (int k : kinds)
            QCOMPARE(k, int(LibraryTreeModel::WindowNode));
        QVERIFY2(QRegularExpression(QStringLiteral("^Run %1 finished in \\d+\\.\\d\\d s: max U [0-9.]+, R\\* = \\d+( "
                                                   "\\(certified\\))?$")
                                        .arg(second))
                     .match(w.statusText())
                     .hasMatch(),
                 qPrintable(w.statusText()));
        QCOMPARE(ui::libraryView(w)->currentIndex().data(KindRole).toInt(), int(LibraryTreeModel::RunNode));
        QCOMPARE(w.shownRunId(), second);
    }

    void progressLineTicksWithoutAGuessedTimeLeft() {
        // A 1.5 s anytime run, the first of the session (no stage shares measured for its setup):
        // the elapsed time on the line goes on in steps of at most a quarter second, and no time
        // left is shown.
        const fs::path lib = synthLibrary(QStringLiteral("truth-tick"));
        StudioWindow w(options_);
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
        PlannerBudgets b = quickBudgets();
        b.time_limit_s = 1.5;
        b.anytime = true;
        ui::topologyEditor(w)->setBudgets(b);
        QStringList seen;
        QTimer poll;
        poll.setInterval(40);
        connect(&poll, &QTimer::timeout, &w, [&] {
            if (ui::jobs(w)->isBusy()) seen << w.statusText();
        });
        poll.start();
        QVERIFY(w.runPlanner() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        poll.stop();
        QSet<QString> elapsed;
        const QRegularExpression re(QStringLiteral("\\((\\d+)%, (\\d+\\.\\d) s elapsed\\)$"));
        for (const QString& line : seen) {
            QVERIFY2(!line.contains(QStringLiteral(" left")), qPrintable(line));
            const auto m = re.match(line);
            if (m.hasMatch()) elapsed.insert(m.captured(2));
        }
        QVERIFY2(elapsed.size() >= 5, qPrintable(QStringList(elapsed.values()).join(QLatin1Char(' '))));
    }

    void statusDescribesTheRunShown() {
        // A fresh session on two saved runs: run 1 selected, then run 2 before run 1's stored plan is
        // back. Run 2 is shown and named; run 1's late plan neither replaces it nor the status line.
        const fs::path lib = synthLibrary(QStringLiteral("truth-status"));
        qint64 first = 0, second = 0;
        {
            StudioWindow w(options_);
            plannedStudio(w, lib, &first);
            QSignalSpy shown(&w, &StudioWindow::planShown);
            QVERIFY(w.runPlanner() > 0);
            QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
            second = shown.back().front().toLongLong();
        }
        StudioWindow w(options_);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.openLibrary(q(lib)));
        QVERIFY(w.selectRun(first));
        QVERIFY(w.selectRun(second));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        QCOMPARE(shown.back().front().toLongLong(), second);
        ui::jobs(w)->waitForIdle();
        QTest::qWait(100);
        QCOMPARE(w.shownRunId(), second);
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Run %1: the saved plan").arg(second)),
                 qPrintable(w.statusText()));
        // Away to the window (no plan of its own: the line says nothing of run 2) and back to run 1,
        // shown from this session's cache: the line names run 1.
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        QCOMPARE(w.statusText(), QString());
        QVERIFY(w.selectRun(first));
        QCOMPARE(w.shownRunId(), first);
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Run %1: the saved plan (max U ").arg(first)),
                 qPrintable(w.statusText()));
        // Compare all in another fresh session: the other run joins the comparison, and the line names
        // it as added while run 2 stays shown.
        StudioWindow w2(options_);
        QSignalSpy shown2(&w2, &StudioWindow::planShown);
        QVERIFY(w2.openLibrary(q(lib)));
        QVERIFY(w2.selectRun(second));
        QTRY_COMPARE_WITH_TIMEOUT(shown2.count(), 1, 60000);
        QCOMPARE(w2.compareSavedRuns(), 1);
        ui::jobs(w2)->waitForIdle();
        QTRY_VERIFY2(
            w2.statusText().startsWith(QStringLiteral("Added to the comparison: Run %1: the saved plan").arg(first)),
            qPrintable(w2.statusText()));
        QCOMPARE(w2.shownRunId(), second);
    }

    // --- A plan whose token cap is derived ---

    void derivedCapIsReadFromThePlan() {
        // samples_per_cell 1 and no token cap: C is the longest sample's tokens (effective_token_cap),
        // which the grid, its fills and the headings use, never the topology's 0.
        const fs::path lib = synthLibrary(QStringLiteral("truth-cap"));
        StudioWindow w(options_);
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
        Topology t = known_topology("synthetic-demo-ep8-dp4");
        t.token_cap = 0;
        t.batch.samples_per_cell = 1;
        ui::topologyEditor(w)->setTopology(QStringLiteral("per-cell"), t);
        ui::topologyEditor(w)->setBudgets(quickBudgets());
        QVERIFY2(w.runPlanner() > 0, qPrintable(w.statusText()));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        const auto plan = ui::planView(w)->plan();
        QVERIFY(plan);
        QCOMPARE(plan->topology.token_cap, std::int64_t(0));
        std::int64_t longest = 0;
        for (const auto& s : plan->samples)
            longest = std::max(longest, s.length);
        QVERIFY(longest > 0);
        QCOMPARE(plan_token_cap(*plan), longest);
        QCOMPARE(ui::cap(ui::model(ui::planView(w)->gridPanel())), longest);
        const QString summary = ui::planView(w)->gridPanel()->summaryText();
        QVERIFY2(summary.contains(QStringLiteral("cap C = %1 tokens").arg(longest)), qPrintable(summary));
        QVERIFY2(!summary.contains(QStringLiteral("inf")) && !summary.contains(QStringLiteral("nan")),
                 qPrintable(summary));
        QCOMPARE(capText(t), QStringLiteral("none (the 1 longest samples)"));
        QCOMPARE(capText(known_topology("synthetic-demo-ep8-dp4")), QStringLiteral("8192"));
        w.show();
        ui::planView(w)->setCurrentWidget(ui::planView(w)->gridPanel());
        QTest::qWait(50);
        shot(&w, QStringLiteral("derived-cap-grid"));
    }

    // --- The window's size ---

    void noViewOrOptionGrowsTheWindow() {
        // Every result tab, every plan view, "Baseline side by side" on and off, and an aggregate
        // trace selected: the window keeps the size it was given, and its minimum fits the screen.
        const fs::path lib = synthLibrary(QStringLiteral("truth-size"));
        const fs::path agg = test::temp_dir(QStringLiteral("truth-size-agg")) / "counts.json";
        test::write_file(agg, R"({"counts": [[16,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1],)"
                              R"( [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]], "num_layers": 2, "num_experts": 16})");
        {
            auto l = storage::Library::open(lib, storage::OpenMode::ReadWrite);
            ImportOptions o;
            o.format = TraceFormat::Aggregate;
            l->import_trace("agg", {agg}, o);
        }
        StudioWindow w(options_);
        qint64 run = 0;
        plannedStudio(w, lib, &run);
        for (const QSize screen : {QSize(1366, 768), QSize(1600, 1000)}) {
            const QString tag = QStringLiteral("%1x%2").arg(screen.width()).arg(screen.height());
            w.resize(screen);
            QTest::qWait(100);
            QCOMPARE(w.size(), screen);
            auto fits = [&](const QString& what) {
                QApplication::processEvents();
                QTest::qWait(30);
                QVERIFY2(w.size() == screen && w.minimumSizeHint().width() <= screen.width() &&
                             w.minimumSizeHint().height() <= screen.height(),
                         qPrintable(QStringLiteral("%1 %2: window %3x%4, minimum %5x%6 (samples %7, results %8, "
                                                   "status bar %9)")
                                        .arg(tag, what)
                                        .arg(w.width())
                                        .arg(w.height())
                                        .arg(w.minimumSizeHint().width())
                                        .arg(w.minimumSizeHint().height())
                                        .arg(ui::mainSplitter(w)->widget(0)->minimumSizeHint().width())
                                        .arg(ui::resultTabs(w)->minimumSizeHint().width())
                                        .arg(w.statusBar()->minimumSizeHint().width())));
            };
            QVERIFY(w.selectRun(run));
            QTRY_COMPARE(w.shownRunId(), run);
            ui::resultTabs(w)->setCurrentWidget(ui::planView(w));
            for (int t = 0; t < ui::planView(w)->count(); ++t) {
                ui::planView(w)->setCurrentIndex(t);
                fits(ui::planView(w)->tabText(t));
                shot(&w, QStringLiteral("size-%1-plan-%2").arg(tag).arg(t));
            }
            ui::planView(w)->setCurrentWidget(ui::costsPanel(ui::planView(w)));
            ui::sideBySideBox(ui::costsPanel(ui::planView(w)))->setChecked(true);
            fits(QStringLiteral("baseline side by side"));
            shot(&w, QStringLiteral("size-%1-side-by-side").arg(tag));
            ui::sideBySideBox(ui::costsPanel(ui::planView(w)))->setChecked(false);
            fits(QStringLiteral("side by side unticked"));
            for (int t = 1; t < ui::resultTabs(w)->count(); ++t) {
                ui::resultTabs(w)->setCurrentIndex(t);
                fits(ui::resultTabs(w)->tabText(t));
                shot(&w, QStringLiteral("size-%1-tab-%2").arg(tag).arg(t));
            }
            ui::resultTabs(w)->setCurrentWidget(ui::planView(w));
            QVERIFY(w.selectTrace(QStringLiteral("agg")));
            QTRY_VERIFY(w.statusText().startsWith(QStringLiteral("Trace agg is load-only")));
            fits(QStringLiteral("aggregate trace"));
            shot(&w, QStringLiteral("size-%1-aggregate").arg(tag));
            ui::resultTabs(w)->setCurrentWidget(ui::runView(w));
            fits(QStringLiteral("aggregate trace, Run tab"));
        }
    }
};

QTEST_MAIN(TestStudioTruth)
#include "tst_studio_truth.moc"
