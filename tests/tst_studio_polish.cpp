// The studio's wording and state, offscreen: the topology preset box follows the form (after New
// library, a loaded run, an edit), shows whole preset names (elided in the middle, full name in the
// tooltip), and a trace selection that changes the preset says so; an error leaves the status line
// once the next action succeeds; the GUI names its fields where the core's messages name CLI flags;
// the import dialog proposes the trace name and the model from the inputs until the user sets them,
// and says what an aggregate (load-only) import holds. Screenshots via QWidget::grab into
// $ROUTEPACK_SCREENSHOT_DIR or a temporary folder.
#include "app/cli_errors.h"
#include "core/import/import.h"
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/model/window_select.h"
#include "core/plan/budgets.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "gpu/rewrite/request.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/setup_pane.h"
#include "views/dialogs/topology_editor.h"
#include "views/library/length_histogram_view.h"
#include "views/library/library_tree_model.h"
#include "views/library/sample_table_model.h"
#include "views/library/studio_data.h"
#include "views/plan/convergence_panel.h"
#include "views/plan/costs_panel.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/gain_explanation.h"
#include "views/plan/grid_panel.h"
#include "views/plan/heatmap_view.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_models.h"
#include "views/plan/plan_views.h"
#include "views/plan/row_heatmap_panel.h"
#include "views/studio_window.h"
#include "views/widgets/gui_text.h"
#include "views/widgets/roles.h"

#include <QAbstractAxis>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFontMetrics>
#include <QHeaderView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTreeView>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {
constexpr auto& q = test::qpath; // a path as QString

} // namespace

class TestStudioPolish : public test::StudioTestBase {
    Q_OBJECT

    fs::path synthLibrary(const QString& tag) { return test::synth_library(test::temp_dir(tag), 2, 4); }

private Q_SLOTS:
    void initTestCase() { initStudioTest(QStringLiteral("tst_studio_polish"), QStringLiteral("studio-polish")); }

    void cleanupTestCase() { clearStudioSettings(); }

    // --- The preset box ---

    void presetForModelByHand() {
        // Which shipped preset the studio offers for a trace whose model the topology cannot plan:
        // the model's preset with the same EP ranks and DP slots, else its first one.
        ModelDescription maverick;
        maverick.name = "llama4-maverick";
        maverick.experts = 128;
        const Topology ds8 = known_topology("deepseek-v2-lite-ep8-dp4");
        QCOMPARE(preset_for_model(maverick, ds8), std::optional<std::string>("llama4-maverick-ep8-dp4"));
        QCOMPARE(preset_for_model(maverick, known_topology("deepseek-v2-lite-ep32-dp16-4nodes")),
                 std::optional<std::string>("llama4-maverick-ep32-dp16-4nodes"));
        Topology odd = ds8;
        odd.ep_ranks = 4;
        odd.dp_slots = 2;
        QCOMPARE(preset_for_model(maverick, odd), std::optional<std::string>("llama4-maverick-ep16-dp8"));
        // The topology fits: nothing to offer.
        QCOMPARE(preset_for_model(maverick, known_topology("llama4-maverick-ep16-dp8")), std::nullopt);
        Topology fromTrace = ds8;
        fromTrace.experts_per_layer = 0;
        QCOMPARE(preset_for_model(maverick, fromTrace), std::nullopt);
        ModelDescription unnamed = maverick;
        unnamed.name.clear();
        QCOMPARE(preset_for_model(unnamed, ds8), std::nullopt);
        // No preset of the model ships: "" (the studio says to set the experts by hand).
        ModelDescription other = maverick;
        other.name = "qwen3-moe";
        QCOMPARE(preset_for_model(other, ds8), std::optional<std::string>(""));
    }

    void loadOnlyPlacementByHand() {
        // One MoE layer, 4 experts with totals {10, 1, 1, 0}, on 2 EP ranks (2 experts each): identity
        // puts e0, e1 on rank 0 (11 tokens) and e2, e3 on rank 1 (1); LPT puts e0 alone with e3 (10)
        // and e1, e2 together (2). The planned placement is LPT's.
        ModelDescription m;
        m.name = "hand";
        m.num_hidden_layers = 1;
        m.moe_layers = {0};
        m.experts = 4;
        m.top_k = 1;
        Topology t = known_topology("synthetic-demo-ep8-dp4");
        t.ep_ranks = 2;
        t.experts_per_layer = 4;
        const auto p = load_only_placement(m, t, {10, 1, 1, 0}, "totals");
        QCOMPARE(p->trace_name, std::string("totals"));
        QCOMPARE(p->topology.ep_ranks, 2);
        QCOMPARE(p->placement.rank_loads_identity, (std::vector<std::uint64_t>{11, 1}));
        QCOMPARE(p->placement.rank_loads_lpt, (std::vector<std::uint64_t>{10, 2}));
        QVERIFY(p->placement.routepack == p->placement.lpt);
        QCOMPARE(p->placement.rank_loads_routepack, p->placement.rank_loads_lpt);
        QCOMPARE(p->placement.cv_routepack, p->placement.cv_lpt);
        QVERIFY(p->rows.rows == 0 && p->samples.empty());
    }

    void presetFollowsTheForm() {
        TopologyEditor e;
        e.resize(700, 900); // wide enough for every label unelided
        e.show();
        QVERIFY(QTest::qWaitForWindowExposed(&e));
        QVERIFY(e.selectPreset(QStringLiteral("deepseek-v2-lite-ep8-dp4")));
        QCOMPARE(e.currentPreset(), QStringLiteral("deepseek-v2-lite-ep8-dp4"));
        // A run's topology under its own name: no preset has it, and the box says so.
        e.setTopology(QStringLiteral("mine"), known_topology("deepseek-v2-lite-ep8-dp4"));
        QCOMPARE(e.currentPreset(), QString());
        QCOMPARE(ui::presetBox(&e)->currentIndex(), -1);
        QCOMPARE(e.presetDisplayText(), QStringLiteral("edited: mine"));
        // Saved in a library: the box shows that library preset.
        storage::TopologyEntry saved;
        saved.name = "mine";
        saved.topology = known_topology("deepseek-v2-lite-ep8-dp4");
        e.setLibraryTopologies({saved});
        QCOMPARE(e.currentPreset(), QStringLiteral("mine"));
        QCOMPARE(ui::presetBox(&e)->currentText(), QStringLiteral("library: mine"));
        // New library (no saved topologies): the form keeps "mine", the box no longer claims a preset.
        e.setLibraryTopologies({});
        QCOMPARE(e.topologyName(), QStringLiteral("mine"));
        QCOMPARE(e.currentPreset(), QString());
        QCOMPARE(e.presetDisplayText(), QStringLiteral("edited: mine"));
        // Back to a shipped preset's name and values: the box finds it again.
        e.setTopology(QStringLiteral("synthetic-demo-ep8-dp4"), known_topology("synthetic-demo-ep8-dp4"));
        QCOMPARE(e.currentPreset(), QStringLiteral("synthetic-demo-ep8-dp4"));
        // An edit of a field: the form is no longer that preset.
        QLineEdit* shards = nullptr;
        for (QLineEdit* l : e.findChildren<QLineEdit*>())
            if (l->text() == QStringLiteral("0,1 | 2,3")) shards = l;
        QVERIFY(shards);
        shards->setText(QStringLiteral("0-3"));
        QCOMPARE(e.currentPreset(), QString());
        QCOMPARE(e.presetDisplayText(), QStringLiteral("edited: synthetic-demo-ep8-dp4"));
        shot(&e, QStringLiteral("preset-edited"));
        e.setPalette(test::dark_palette());
        shot(&e, QStringLiteral("preset-edited-dark"));
        QVERIFY2(
            ui::presetBox(&e)->toolTip().startsWith(QStringLiteral("edited: synthetic-demo-ep8-dp4: the form below "
                                                                   "matches no preset")),
            qPrintable(ui::presetBox(&e)->toolTip()));
    }

    void studioNewLibraryKeepsBoxAndFormTogether() {
        const fs::path a = synthLibrary(QStringLiteral("polish-a"));
        {
            auto lib = storage::Library::open(a);
            lib->save_topology("cluster-a", known_topology("deepseek-v2-lite-ep16-dp8"), PlannerBudgets{});
        }
        StudioWindow w(options_);
        QVERIFY(w.openLibrary(q(a)));
        QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("cluster-a")));
        QCOMPARE(ui::presetBox(ui::topologyEditor(w))->currentText(), QStringLiteral("library: cluster-a"));
        QVERIFY(w.openLibrary(q(tmp_ / "new.routepack"), true));
        // The form still holds cluster-a (what the engineer set); the box does not show another preset.
        QCOMPARE(ui::topologyEditor(w)->topologyName(), QStringLiteral("cluster-a"));
        QCOMPARE(ui::topologyEditor(w)->currentPreset(), QString());
        QCOMPARE(ui::topologyEditor(w)->presetDisplayText(), QStringLiteral("edited: cluster-a"));
    }

    void presetNamesReadableWhenNarrow() {
        TopologyEditor e;
        e.resize(300, 900);
        e.show();
        QVERIFY(QTest::qWaitForWindowExposed(&e));
        QVERIFY(e.selectPreset(QStringLiteral("llama4-maverick-ep16-dp8-2nodes")));
        shot(&e, QStringLiteral("preset-ep16-narrow"));
        // The form carries the preset whole: its node layout too (the box then names that preset).
        QCOMPARE(e.currentPreset(), QStringLiteral("llama4-maverick-ep16-dp8-2nodes"));
        QCOMPARE(e.topology()->gpus_per_node, 8);
        QCOMPARE(e.topology()->nodes(), 2);
        // The box is never narrower than the longest shipped preset's label: whole in a narrow editor.
        QVERIFY2(e.width() >= e.minimumSizeHint().width() ||
                     ui::presetBox(&e)->width() >= ui::presetBox(&e)->minimumWidth(),
                 qPrintable(QString::number(ui::presetBox(&e)->width())));
        for (const auto& n : known_topology_names()) {
            QVERIFY(e.selectPreset(QString::fromStdString(n)));
            QCOMPARE(e.presetDisplayText(), QStringLiteral("shipped: ") + QString::fromStdString(n));
        }
        // A longer name (saved in a library) is elided in the middle: both ends stay.
        storage::TopologyEntry mine;
        mine.name = "my-own-very-long-topology-name-for-two-nodes-ep16-dp8-2nodes";
        mine.topology = known_topology("llama4-maverick-ep16-dp8-2nodes");
        e.setLibraryTopologies({mine});
        QVERIFY(e.selectPreset(QString::fromStdString(mine.name)));
        const QString shown = e.presetDisplayText();
        QVERIFY2(shown.startsWith(QStringLiteral("library: my-own")) && shown.endsWith(QStringLiteral("dp8-2nodes")) &&
                     shown.contains(QChar(0x2026)),
                 qPrintable(shown));
        QVERIFY(e.fontMetrics().horizontalAdvance(shown) <= ui::presetBox(&e)->width());
        // The full name is in the tooltips (the box's and the item's).
        const QString full = QStringLiteral("library: ") + QString::fromStdString(mine.name);
        QVERIFY2(ui::presetBox(&e)->toolTip().startsWith(full + QLatin1Char('\n')),
                 qPrintable(ui::presetBox(&e)->toolTip()));
        QCOMPARE(ui::presetBox(&e)->itemData(ui::presetBox(&e)->currentIndex(), Qt::ToolTipRole).toString(), full);
        // Wide enough: nothing is elided.
        e.resize(900, 900);
        QTRY_COMPARE(e.presetDisplayText(), full);
    }

    void startUpPresetSwitchIsQuiet() {
        // The form still holds the start-up preset (synthetic, 32 experts): a DeepSeek trace (64)
        // switches it without a word; once a preset was picked, a switch says what it replaced.
        SetupPane pane;
        QSignalSpy said(&pane, &SetupPane::status);
        storage::TraceEntry ds;
        ds.name = "ds";
        ds.model.name = "deepseek-v2-lite";
        ds.model.experts = 64;
        TopologyEditor* e = pane.findChild<TopologyEditor*>();
        QVERIFY(e);
        QCOMPARE(e->formSteps(), 0);
        pane.fitToTrace(ds);
        QCOMPARE(e->currentPreset(), QStringLiteral("deepseek-v2-lite-ep8-dp4"));
        QCOMPARE(said.count(), 0);
        QVERIFY(e->selectPreset(QStringLiteral("synthetic-demo-ep8-dp4")));
        pane.fitToTrace(ds);
        QCOMPARE(said.count(), 1);
        QVERIFY(said.at(0).at(0).toString().startsWith(QStringLiteral(
            "Preset switched to deepseek-v2-lite-ep8-dp4 for trace ds: topology synthetic-demo-ep8-dp4")));
    }

    void traceSelectionThatSwitchesPresetSaysSo() {
        const fs::path lib = synthLibrary(QStringLiteral("polish-switch"));
        StudioWindow w(options_);
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
        // A topology that fits the trace (E = 32) stays as set.
        QCOMPARE(ui::topologyEditor(w)->currentPreset(), QStringLiteral("synthetic-demo-ep8-dp4"));
        QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("deepseek-v2-lite-ep8-dp4"))); // E = 64
        QVERIFY(w.selectTrace(QStringLiteral("syn")));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 2, 30000);
        QCOMPARE(ui::topologyEditor(w)->currentPreset(), QStringLiteral("synthetic-demo-ep8-dp4"));
        QCOMPARE(w.statusText(), QStringLiteral("Preset switched to synthetic-demo-ep8-dp4 for trace syn: topology "
                                                "deepseek-v2-lite-ep8-dp4 has 64 experts per layer, the trace's model "
                                                "synthetic has 32 (pick deepseek-v2-lite-ep8-dp4 again in Preset to "
                                                "go back)."));
        QVERIFY(!w.statusIsError());
        // E = 0 ("from the trace") plans any trace: kept.
        Topology any = known_topology("deepseek-v2-lite-ep8-dp4");
        any.experts_per_layer = 0;
        ui::topologyEditor(w)->setTopology(QStringLiteral("any-model"), any);
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 3, 30000);
        QCOMPARE(ui::topologyEditor(w)->topologyName(), QStringLiteral("any-model"));
    }

    // --- The status line ---

    void errorLeavesOnceTheNextActionSucceeds() {
        const fs::path lib = synthLibrary(QStringLiteral("polish-stale"));
        StudioWindow w(options_);
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
        QVERIFY(w.selectTrace(QStringLiteral("syn")));
        QCOMPARE(w.runPlanner(), quint64{0});
        QCOMPARE(w.statusText(), QStringLiteral("Select a window to plan (define one with Ctrl+D)."));
        QVERIFY(w.statusIsError());
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        QVERIFY(!w.statusIsError());
        QCOMPARE(w.statusText(), QString());
        // An invalid field is an error until a valid edit.
        QLineEdit* seed = nullptr;
        for (QLineEdit* l : ui::topologyEditor(w)->findChildren<QLineEdit*>())
            if (l->text() == QString::number(PlannerBudgets{}.seed)) seed = l;
        QVERIFY(seed);
        seed->setText(QStringLiteral("x"));
        QCOMPARE(w.runPlanner(), quint64{0});
        QCOMPARE(w.statusText(), QStringLiteral("The planner budgets are not valid: seed must be an integer in "
                                                "0..18446744073709551615"));
        QVERIFY(w.statusIsError());
        seed->setText(QStringLiteral("5"));
        QVERIFY(!w.statusIsError());
    }

    // --- Budget fields from the budget table ---

    /// Every budget has a field whose range is the table's: a run's budgets at the table's upper (and
    /// lower) bounds load into the editor and read back unchanged, never clamped (an open lower end,
    /// t0 > 0, starts at 1e-300).
    void budgetFieldsTakeTheTableRanges() {
        TopologyEditor e;
        for (const BudgetRow& row : budget_table()) {
            QWidget* w = e.findChild<QWidget*>(QStringLiteral("budget:") + QLatin1String(row.key));
            QVERIFY2(w, row.key);
            if (auto* s = qobject_cast<QSpinBox*>(w)) {
                QCOMPARE(s->minimum(), static_cast<int>(row.lo));
                QCOMPARE(s->maximum(), static_cast<int>(row.hi));
            }
            if (auto* d = qobject_cast<QDoubleSpinBox*>(w)) QCOMPARE(d->maximum(), row.hi);
            for (const bool upper : {true, false}) {
                PlannerBudgets b;
                b.seed = 12345678901234567ull;
                if (std::string(row.key) == "anytime") b.time_limit_s = 1;
                const double v = upper ? (row.hi_open ? std::nextafter(row.hi, row.lo) : row.hi)
                                       : (row.lo_open ? row.lo + 1e-300 : row.lo); // the field's floor
                if (row.kind == BudgetKind::Double)
                    set_budget_double(row, b, v);
                else
                    set_budget_int(row, b, static_cast<std::int64_t>(v));
                e.setBudgets(b);
                const PlannerBudgets back = e.budgets();
                QVERIFY2(budget_double(row, back) == v, qPrintable(QString::fromLatin1(row.key) + QLatin1Char(' ') +
                                                                   QString::number(budget_double(row, back), 'g', 17)));
                QCOMPARE(QString::fromStdString(planner_budgets_to_json(back)),
                         QString::fromStdString(planner_budgets_to_json(b)));
            }
        }
        // Special values read as words, never raw: -1 moves is unlimited, 0 polish work none, ...
        const std::pair<const char*, const char*> special[] = {{"max_moves", "unlimited"},
                                                               {"polish_evaluations", "none"},
                                                               {"polish_kick_moves", "no kicks"},
                                                               {"placement_rounds", "keep LPT"},
                                                               {"workers", "all cores"}};
        for (const auto& [key, words] : special) {
            auto* s = e.findChild<QSpinBox*>(QStringLiteral("budget:") + QLatin1String(key));
            QVERIFY2(s, key);
            s->setValue(s->minimum());
            QCOMPARE(s->text(), QString::fromLatin1(words));
        }
        // A number typed in full reads back exactly (no rounding to a fixed count of decimals).
        auto* t0 = e.findChild<QDoubleSpinBox*>(QStringLiteral("budget:t0"));
        QVERIFY(t0);
        t0->setValue(1e-9);
        QCOMPARE(e.budgets().annealing.t0, 1e-9);
        QCOMPARE(t0->text(), QStringLiteral("1e-09"));
    }

    /// Every budget's error names the budget editor's field by its label from the budget table
    /// (placement_rounds and the polish budgets too), from the key the error carries; the CLI names
    /// the same error's budget by its flag.
    void budgetMessagesNameEveryField() {
        for (const BudgetRow& row : budget_table()) {
            const QString label = QLatin1Char('"') + QString::fromUtf8(row.label) + QLatin1Char('"');
            const InputError e("planner: ", budget_setting(row), " must be x");
            QCOMPARE(QString::fromStdString(e.what()),
                     QStringLiteral("planner: budget '%1' must be x").arg(QLatin1String(row.key)));
            QCOMPARE(guiErrorText(e), QStringLiteral("planner: ") + label + QStringLiteral(" must be x"));
            QCOMPARE(QString::fromStdString(cli::cli_error_text(e)),
                     QStringLiteral("planner: %1 must be x").arg(QLatin1String(row.flag ? row.flag : row.key)));
        }
        auto checked = [](const PlannerBudgets& b) {
            try {
                check_planner_budgets(b, "planner");
            } catch (const InputError& e) {
                return guiErrorText(e);
            }
            return QString();
        };
        PlannerBudgets b;
        b.placement_rounds = 1001;
        QCOMPARE(checked(b), QStringLiteral("planner: \"Placement rounds\" must be in 0..1000 (got 1001)"));
        b = PlannerBudgets{};
        b.polish_kick_moves = -1;
        QCOMPARE(checked(b), QStringLiteral("planner: \"Polish kick moves\" must be in 0..") +
                                 QString::number(find_budget("polish_kick_moves")->hi, 'f', 0) +
                                 QStringLiteral(" (got -1)"));
        b = PlannerBudgets{};
        b.polish_evaluations = -1;
        QVERIFY2(checked(b).startsWith(QStringLiteral("planner: \"Polish evaluations\" must be in 0..")),
                 qPrintable(checked(b)));
    }

    // --- Field names instead of CLI flags ---

    void guiMessagesNameFields() {
        std::vector<SampleInfo> samples(3);
        for (int i = 0; i < 3; ++i) {
            samples[static_cast<std::size_t>(i)].id = std::to_string(i);
            samples[static_cast<std::size_t>(i)].group = "g" + std::to_string(i);
        }
        auto caught = [](const std::function<void()>& f) -> std::optional<InputError> {
            try {
                f();
            } catch (const InputError& e) {
                return e;
            }
            return std::nullopt;
        };
        const auto split = caught([&] { split_consecutive(samples, 40, "syn"); });
        QVERIFY(split && split->setting() && split->setting()->key == "split");
        QCOMPARE(QString::fromStdString(split->what()),
                 QStringLiteral("window: split 40 but trace 'syn' has only 3 samples")); // no CLI flag
        QCOMPARE(QString::fromStdString(cli::cli_error_text(*split)),
                 QStringLiteral("window: --split 40 but trace 'syn' has only 3 samples")); // the CLI's words
        QCOMPARE(guiErrorText(*split),
                 QStringLiteral("window: \"windows of N samples\" = 40 but trace 'syn' has only 3 samples"));
        const auto groups = caught([&] { split_groups(samples, 0, "syn"); });
        QVERIFY(groups);
        QCOMPARE(guiErrorText(*groups),
                 QStringLiteral("window: \"windows of G whole GRPO groups\" must be >= 1 (got 0)"));
        QCOMPARE(QString::fromStdString(cli::cli_error_text(*groups)),
                 QStringLiteral("window: --split-groups must be >= 1 (got 0)"));
        PlannerBudgets b;
        b.annealing.steps = -1;
        const auto steps = caught([&] { check_planner_budgets(b, "plan"); });
        QVERIFY(steps);
        QCOMPARE(QString::fromStdString(steps->what()),
                 QStringLiteral("plan: budget 'steps_per_level' must be in 0..100000000 (got -1)"));
        QCOMPARE(QString::fromStdString(cli::cli_error_text(*steps)),
                 QStringLiteral("plan: --steps must be in 0..100000000 (got -1)"));
        QCOMPARE(guiErrorText(*steps), QStringLiteral("plan: \"Steps K per level\" must be in 0..100000000 (got -1)"));
        // A message naming no setting is shown as it is, dashes included.
        QCOMPARE(guiErrorText(InputError("a-b --- c")), QStringLiteral("a-b --- c"));
        // A budget key in a message without a typed setting (a stored budgets JSON) stays the key.
        QCOMPARE(guiErrorText(InputError("t: budget 'steps_per_level' must be an integer")),
                 QStringLiteral("t: budget 'steps_per_level' must be an integer"));
    }

    /// The import, model, synth and rewrite errors about a setting carry its key: the library's
    /// text names it in words, the CLI by its flag (as before the key was carried), the studio by
    /// its field's label; a request for one of several ways to give something is a whole phrase.
    void libraryErrorsInCliAndStudioWords() {
        auto caught = [](const std::function<void()>& f) -> std::optional<InputError> {
            try {
                f();
            } catch (const InputError& e) {
                return e;
            }
            return std::nullopt;
        };
        auto cli = [](const InputError& e) { return QString::fromStdString(cli::cli_error_text(e)); };
        auto lib = [](const InputError& e) { return QString::fromStdString(e.what()); };
        // core/model: a layer list.
        const auto list = caught([] { parse_layer_list("5,3"); });
        QVERIFY(list && list->setting() && list->setting()->key == "moe_layers");
        QCOMPARE(lib(*list), QStringLiteral("MoE layers: layers must be ascending and unique in '5,3'"));
        QCOMPARE(cli(*list), QStringLiteral("--moe-layers: layers must be ascending and unique in '5,3'"));
        QCOMPARE(guiErrorText(*list), QStringLiteral("\"MoE layers\": layers must be ascending and unique in '5,3'"));
        // core/import: no model given for a format that does not describe it; an unknown format.
        const auto dir = test::temp_dir(QStringLiteral("polish-families"));
        SynthConfig c;
        c.groups = 1;
        c.group_size = 2;
        write_synth(c, TraceFormat::VLLM, dir / "syn");
        const auto model = caught([&] { import_trace_to_memory({dir / "syn"}, ImportOptions{}); });
        QVERIFY(model && model->setting() && model->setting()->key == "ask_model");
        QVERIFY2(lib(*model).endsWith(QStringLiteral(": give the model (a shipped model's name, its config.json, or "
                                                     "its expert count and top-k)")),
                 qPrintable(lib(*model)));
        const QString head = lib(*model).left(lib(*model).indexOf(QStringLiteral(": give ")) + 2);
        QVERIFY(head.startsWith(QStringLiteral("no model description for ")));
        QCOMPARE(cli(*model), head + QStringLiteral("give --model NAME, --model-config config.json, or --experts E "
                                                    "--top-k K"));
        QCOMPARE(guiErrorText(*model), head + QStringLiteral("choose the Model: a shipped model, a Hugging Face "
                                                             "config.json, or Fields (Experts E, Top-k)"));
        test::write_file(dir / "notes.txt", "hello");
        const auto format = caught([&] { import_trace_to_memory({dir / "notes.txt"}, ImportOptions{}); });
        QVERIFY(format && format->setting() && format->setting()->key == "ask_format");
        const QString at =
            QString::fromStdString((dir / "notes.txt").string()) + QStringLiteral(": unrecognized trace format (");
        QVERIFY2(lib(*format).startsWith(at + QStringLiteral("name the format; valid: ")), qPrintable(lib(*format)));
        QVERIFY2(cli(*format).startsWith(at + QStringLiteral("use --format; valid: ")), qPrintable(cli(*format)));
        QVERIFY2(guiErrorText(*format).startsWith(at + QStringLiteral("choose the \"Format\"; valid: ")),
                 qPrintable(guiErrorText(*format)));
        // core/synth: two settings in one message, each with the value it quotes.
        SynthConfig k = c;
        k.experts = 8;
        k.top_k = 9;
        const auto synth = caught([&] { check_synth_config(k); });
        QVERIFY(synth && synth->settings().size() == 2);
        QCOMPARE(synth->settings()[1].key, std::string("experts"));
        QCOMPARE(lib(*synth), QStringLiteral("synth: top_k 9 exceeds experts 8"));
        QCOMPARE(cli(*synth), QStringLiteral("synth: --top-k 9 exceeds --experts 8"));
        QCOMPARE(guiErrorText(*synth), QStringLiteral("synth: \"Top-k\" = 9 exceeds \"Experts E\" = 8"));
        // gpu/rewrite: the layer map and the device.
        const auto map = caught([] { gpu::parse_layer_map("1:0,2:0", {1, 2}); });
        QVERIFY(map && map->setting() && map->setting()->key == "rewrite_layer_map");
        QCOMPARE(lib(*map), QStringLiteral("layer map: checkpoint layer 0 is the target of two plan layers"));
        QCOMPARE(cli(*map), QStringLiteral("--layer-map: checkpoint layer 0 is the target of two plan layers"));
        QCOMPARE(guiErrorText(*map),
                 QStringLiteral("\"Layer map\": checkpoint layer 0 is the target of two plan layers"));
        const InputError cuda("", gpu::rewrite_setting("device", "cuda"), ": no CUDA device");
        QCOMPARE(lib(cuda), QStringLiteral("device cuda: no CUDA device"));
        QCOMPARE(cli(cuda), QStringLiteral("--device cuda: no CUDA device"));
        QCOMPARE(guiErrorText(cuda), QStringLiteral("\"Device\" = cuda: no CUDA device"));
        const auto device = caught([] { gpu::parse_rewrite_device("tpu"); });
        QVERIFY(device);
        QCOMPARE(cli(*device), QStringLiteral("--device: unknown device 'tpu' (valid: auto, cpu, cuda)"));
        QCOMPARE(guiErrorText(*device), QStringLiteral("\"Device\": unknown device 'tpu' (valid: auto, cpu, cuda)"));
    }

    /// A storage error about a setting carries its key: the library's text names it in words, the
    /// CLI by its flag, the studio by its field's label.
    void storageErrorInCliAndStudioWords() {
        const fs::path file = synthLibrary(QStringLiteral("polish-names"));
        auto lib = storage::Library::open(file);
        auto caught = [](const std::function<void()>& f) -> std::optional<InputError> {
            try {
                f();
            } catch (const InputError& e) {
                return e;
            }
            return std::nullopt;
        };
        const auto trace = caught([&] { lib->import_trace("", {file.parent_path()}, ImportOptions{}); });
        QVERIFY(trace && trace->setting());
        QCOMPARE(trace->setting()->key, std::string("trace_name"));
        QCOMPARE(QString::fromStdString(trace->what()), QStringLiteral("trace name must not be empty"));
        QCOMPARE(QString::fromStdString(cli::cli_error_text(*trace)), QStringLiteral("--name must not be empty"));
        QCOMPARE(guiErrorText(*trace), QStringLiteral("\"Trace name\" must not be empty"));
        const auto window = caught([&] { lib->create_window("syn", "", {lib->samples("syn").front().id}, "d"); });
        QVERIFY(window && window->setting());
        QCOMPARE(QString::fromStdString(window->what()), QStringLiteral("window name must not be empty (trace 'syn')"));
        QCOMPARE(QString::fromStdString(cli::cli_error_text(*window)),
                 QStringLiteral("--name must not be empty (trace 'syn')"));
        QCOMPARE(guiErrorText(*window), QStringLiteral("\"Window name\" must not be empty (trace 'syn')"));
        const auto topology = caught([&] { lib->save_topology("", known_topology("synthetic-demo-ep8-dp4")); });
        QVERIFY(topology && topology->setting());
        QCOMPARE(QString::fromStdString(cli::cli_error_text(*topology)),
                 QStringLiteral("topology name must not be empty"));
        QCOMPARE(guiErrorText(*topology), QStringLiteral("\"Topology name\" must not be empty"));
    }

    /// The studio opens a library read-only only for storage::LibraryReadOnly: an error of another
    /// type whose message ends like the read-only one is reported, not taken as read-only.
    void readOnlyIsDecidedByTheErrorType() {
        const fs::path file = synthLibrary(QStringLiteral("polish-readonly"));
        std::vector<storage::OpenMode> modes;
        const auto lib = openStudioLibrary(
            [&](storage::OpenMode mode) {
                modes.push_back(mode);
                if (mode != storage::OpenMode::ReadOnly) throw storage::LibraryReadOnly(file);
                return storage::Library::open(file, mode);
            },
            false);
        QVERIFY(lib && lib->read_only());
        QVERIFY(modes == (std::vector{storage::OpenMode::ReadWrite, storage::OpenMode::ReadOnly}));
        // Same words, another type: the error stands and nothing is opened read-only.
        const std::string words = file.string() + ": library is read-only (cannot write)";
        QCOMPARE(QString::fromStdString(storage::LibraryReadOnly(file).what()), QString::fromStdString(words));
        modes.clear();
        const QString error = test::error_text([&] {
            openStudioLibrary(
                [&](storage::OpenMode mode) -> std::unique_ptr<storage::Library> {
                    modes.push_back(mode);
                    throw InputError(words);
                },
                false);
        });
        QCOMPARE(error, QString::fromStdString(words));
        QVERIFY(modes == std::vector{storage::OpenMode::ReadWrite});
        // Creating a library where it cannot be written is refused, not opened read-only.
        modes.clear();
        QCOMPARE(test::error_text([&] {
                     openStudioLibrary(
                         [&](storage::OpenMode mode) -> std::unique_ptr<storage::Library> {
                             modes.push_back(mode);
                             throw storage::LibraryReadOnly(file);
                         },
                         true);
                 }),
                 QString::fromStdString(words));
        QVERIFY(modes == std::vector{storage::OpenMode::Create});
    }

    /// A planner job that fails (a budget out of range) reaches the status line in the studio's words
    /// (the budget editor's label, from the key the error carries).
    void failedPlanJobReachesTheStatusLine() {
        const fs::path file = synthLibrary(QStringLiteral("polish-failed-job"));
        StudioWindow w(options_);
        QVERIFY(w.openLibrary(q(file)));
        PlanJobRequest rq;
        rq.library = q(file);
        rq.trace = QStringLiteral("syn");
        rq.window = QStringLiteral("all");
        rq.topologyName = QStringLiteral("t");
        rq.topology = known_topology("synthetic-demo-ep8-dp4");
        rq.budgets.placement_rounds = 1001;
        rq.saveRun = false;
        QSignalSpy failed(ui::jobs(w), &PlanJobQueue::failed);
        ui::jobs(w)->enqueue(rq);
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
        const QString expected = QStringLiteral("planner: \"Placement rounds\" must be in 0..1000 (got 1001)");
        QCOMPARE(failed.front().at(1).toString(), expected);
        QCOMPARE(w.statusText(), QStringLiteral("Planner failed: ") + expected);
    }

    void importDialogNamesTheModelField() {
        const auto dir = test::temp_dir(QStringLiteral("polish-nomodel"));
        SynthConfig c;
        c.groups = 1;
        c.group_size = 2;
        write_synth(c, TraceFormat::VLLM, dir / "syn");
        ImportDialog dlg(q(dir / "lib.routepack"));
        dlg.setInputs({q(dir / "syn")});
        dlg.setModelSource(ImportDialog::FromFiles); // vLLM files do not describe their model
        QSignalSpy failed(ui::job(&dlg), &ImportJob::failed);
        QVERIFY(dlg.startImport());
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
        const QString raw = failed.front().front().toString(); // the failed job's text (JobFailure::text)
        QVERIFY2(!raw.contains(QStringLiteral("--")), qPrintable(raw));
        QVERIFY2(ui::errorText(&dlg).endsWith(QStringLiteral(": choose the Model: a shipped model, a Hugging Face "
                                                             "config.json, or Fields (Experts E, Top-k)")),
                 qPrintable(ui::errorText(&dlg)));
        QVERIFY2(!ui::errorText(&dlg).contains(QStringLiteral("--")), qPrintable(ui::errorText(&dlg)));
    }

    // --- The import dialog's proposals ---

    void importDialogProposalsFollowTheInputs() {
        const auto dir = test::temp_dir(QStringLiteral("polish-propose"));
        for (const char* f : {"llama4-maverick", "deepseek-v2-lite", "run-7"})
            fs::create_directories(dir / f);
        ImportDialog dlg(q(dir / "lib.routepack"));
        dlg.setInputs({q(dir / "llama4-maverick")});
        QCOMPARE(dlg.traceName(), QStringLiteral("llama4-maverick"));
        QCOMPARE(dlg.modelSource(), ImportDialog::KnownModel);
        QCOMPARE(dlg.knownModel(), QStringLiteral("llama4-maverick"));
        // A new folder: the proposed name and model follow it.
        dlg.setInputs({q(dir / "deepseek-v2-lite")});
        QCOMPARE(dlg.traceName(), QStringLiteral("deepseek-v2-lite"));
        QCOMPARE(dlg.knownModel(), QStringLiteral("deepseek-v2-lite"));
        // A typed name and a chosen model stay.
        QLineEdit* name = nullptr;
        for (QLineEdit* l : dlg.findChildren<QLineEdit*>())
            if (l->text() == QStringLiteral("deepseek-v2-lite")) name = l;
        if (name == nullptr) QFAIL("the import dialog has no field holding the proposed name");
        name->clear();
        QTest::keyClicks(name, QStringLiteral("ds-step-3"));
        dlg.setKnownModel(QStringLiteral("qwen3-30b-a3b"));
        dlg.setInputs({q(dir / "llama4-maverick")});
        QCOMPARE(dlg.traceName(), QStringLiteral("ds-step-3"));
        QCOMPARE(dlg.knownModel(), QStringLiteral("qwen3-30b-a3b"));
        // Cleared name: proposed again.
        name->clear();
        dlg.setInputs({q(dir / "run-7")});
        QCOMPARE(dlg.traceName(), QStringLiteral("run-7"));
    }

    void importDialogSaysWhatAnAggregateHolds() {
        const auto dir = test::temp_dir(QStringLiteral("polish-agg"));
        test::write_file(dir / "agg-counts.json",
                         R"({"counts": [[1, 2, 3, 4], [4, 3, 2, 1], [0, 0, 5, 5]], "num_layers": 3,)"
                         R"( "num_experts": 4, "src": "test"})");
        ImportDialog dlg(q(dir / "lib.routepack"));
        QSignalSpy detected(&dlg, &ImportDialog::formatDetected);
        dlg.setInputs({q(dir / "agg-counts.json")});
        QTRY_COMPARE_WITH_TIMEOUT(detected.count(), 1, 30000);
        QCOMPARE(ui::detectedFormat(&dlg), QStringLiteral("aggregate"));
        QCOMPARE(dlg.modelSource(), ImportDialog::FromFiles); // the file describes its own model
        QCOMPARE(dlg.traceName(), QStringLiteral("agg-counts"));
        QSignalSpy imported(&dlg, &ImportDialog::imported);
        // The bar's text during the import: files, samples and the time so far.
        QStringList progressTexts;
        QProgressBar* bar = dlg.findChild<QProgressBar*>();
        QVERIFY(bar);
        connect(ui::job(&dlg), &ImportJob::progress, &dlg, [&] { progressTexts << bar->format(); });
        QVERIFY(dlg.startImport());
        QTRY_COMPARE_WITH_TIMEOUT(imported.count(), 1, 30000);
        QVERIFY(!progressTexts.isEmpty());
        for (const QString& t : progressTexts)
            QVERIFY2(QRegularExpression(
                         QStringLiteral("^\\d+ of 1 files, 0 samples; \\d+\\.\\d s elapsed(, about [^)]+ left)?$"))
                         .match(t)
                         .hasMatch(),
                     qPrintable(t));
        QStringList texts;
        for (const QLabel* l : dlg.findChildren<QLabel*>())
            texts << l->text();
        const QString want = QStringLiteral("Imported trace 'agg-counts': load-only per-layer expert totals, 3 MoE "
                                            "layers x 4 experts from 1 file(s) (format aggregate); no samples: its "
                                            "placement views are on the trace.");
        QVERIFY2(texts.contains(want), qPrintable(texts.join(QLatin1Char('\n'))));
        dlg.show();
        shot(&dlg, QStringLiteral("import-aggregate-done"));
    }

    // --- The length histogram ---

    void lengthHistogramHasRoundEdgesAndExactTooltips() {
        // A long tail (a factor of 133): log-spaced bins. The densest series with at most 12 bins is
        // {1, 2, 5} (the {1, 1.5, 2, 3, 5, 7} one needs 14 from 100 to 20000).
        const LengthHistogram h = lengthHistogram({120, 130, 150, 300, 900, 4000, 16000}, 12);
        QVERIFY(h.logarithmic);
        QCOMPARE(h.edges, (std::vector<double>{100, 200, 500, 1000, 2000, 5000, 10000, 20000}));
        QCOMPARE(h.counts, (std::vector<int>{3, 1, 1, 0, 1, 0, 1}));
        QCOMPARE(lengthBinText(h, 0), QStringLiteral("lengths 100-199 tokens: 3 samples"));
        QCOMPARE(lengthBinText(h, 3), QStringLiteral("lengths 1000-1999 tokens: 0 samples"));
        QCOMPARE(lengthBinText(h, 6), QStringLiteral("lengths 10000-20000 tokens: 1 sample")); // closed last bin
        QCOMPARE(lengthBinText(h, 7), QString());
        // With room for more bins the denser series: 100, 150, 200, 300, 500, ... (14 bins).
        const LengthHistogram d = lengthHistogram({120, 130, 150, 300, 900, 4000, 16000}, 14);
        QCOMPARE(d.edges, (std::vector<double>{100, 150, 200, 300, 500, 700, 1000, 1500, 2000, 3000, 5000, 7000, 10000,
                                               15000, 20000}));
        // Short lengths: the 10^0 series values are whole tokens (1.2 and 1.5 are both 2, kept once).
        const LengthHistogram s = lengthHistogram({1, 2, 3, 9}, 12);
        QVERIFY(s.logarithmic);
        QCOMPARE(s.edges, (std::vector<double>{1, 2, 3, 4, 5, 6, 8, 10}));
        QCOMPARE(s.counts, (std::vector<int>{1, 1, 1, 0, 0, 0, 1}));
        // Linear: the smallest step in {1, 2, 5} x 10^k with at most 4 bins.
        const LengthHistogram lin = lengthHistogram({103, 180, 260, 390}, 4);
        QVERIFY(!lin.logarithmic);
        QCOMPARE(lin.edges, (std::vector<double>{100, 200, 300, 400}));
        QCOMPARE(lin.counts, (std::vector<int>{2, 1, 1}));
        QCOMPARE(lengthBinText(lin, 2), QStringLiteral("lengths 300-400 tokens: 1 sample"));
    }

    // --- Even loads look even ---

    void smallDifferencesAreNeutral() {
        HeatmapWidget h;
        h.setColourMap(HeatmapWidget::ColourMap::Diverging);
        h.setRange(0.9, 1.1, 1.0);
        const QColor centre = h.colourFor(1.0);
        QVERIFY(h.colourFor(1.01) != centre); // no band: 1% already takes a colour
        h.setNeutralBand(0.02);
        QCOMPARE(ui::neutralBand(&h), 0.02);
        for (double v : {0.98, 0.99, 1.0, 1.01, 1.02})
            QCOMPARE(h.colourFor(v), centre);
        QVERIFY(h.colourFor(1.03) != centre);
        QVERIFY(h.colourFor(0.97) != centre);
        // The ends of the scale are unchanged by the band.
        QCOMPARE(h.colourFor(1.1), h.colourFor(5.0));
        QCOMPARE(h.colourFor(0.9), h.colourFor(0.0));
        // Just past the band the ramp starts at the centre colour's side (no jump to the ends).
        QVERIFY(h.colourFor(1.021) != h.colourFor(1.1));
    }

    void tiedShardTotalsLookAlike() {
        // 178.6674 against 178.66: 0.004% apart, within the 0.1% tolerance: tied.
        QCOMPARE(tiedShards({178.6674, 178.66}, kShardTieTolerance), (std::vector<int>{0, 1}));
        QCOMPARE(tiedShards({100, 99.95, 90}, kShardTieTolerance), (std::vector<int>{0, 1}));
        QCOMPARE(tiedShards({99, 100}, kShardTieTolerance), (std::vector<int>{1}));
        QCOMPARE(tiedShards({0, 0}, kShardTieTolerance), (std::vector<int>{0, 1}));
        QCOMPARE(tiedShards({}, kShardTieTolerance), std::vector<int>{});
    }

    // --- Layout at the default size and at 1366x768 ---

    /// A studio on a planned synthetic run, shown; `run` is the saved run's id.
    void plannedStudio(StudioWindow& w, const fs::path& lib, qint64* run) {
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
        PlannerBudgets b;
        b.annealing.levels = 2;
        b.annealing.steps = 50;
        b.seeding.candidates = 2;
        b.seeding.population = 2;
        b.workers = 1;
        ui::topologyEditor(w)->setBudgets(b);
        // The status line during the job: stage, percent and the time so far (connected after the
        // window's own handler, so it reads what that one wrote).
        QStringList progressLines;
        connect(ui::jobs(w), &PlanJobQueue::progress, &w, [&] { progressLines << w.statusText(); });
        QVERIFY(w.runPlanner() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        QVERIFY(!progressLines.isEmpty());
        for (const QString& line : progressLines)
            QVERIFY2(
                QRegularExpression(QStringLiteral("^New run of syn/all: [a-z ]+ \\(\\d+%, \\d+\\.\\d s elapsed(, about "
                                                  "[^)]+ left)?\\)$"))
                    .match(line)
                    .hasMatch(),
                qPrintable(line));
        *run = shown.back().front().toLongLong();
        QVERIFY(*run > 0);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
    }

    void layoutFitsAndPlanTakesTheWidth() {
        const fs::path lib = synthLibrary(QStringLiteral("polish-layout"));
        StudioWindow w(options_);
        qint64 run = 0;
        plannedStudio(w, lib, &run);
        // The longest preset name in the form's Name field.
        QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("llama4-maverick-ep16-dp8-2nodes")));
        TopologyEditor* editor = ui::topologyEditor(w);
        QLineEdit* name = nullptr;
        for (QLineEdit* l : editor->findChildren<QLineEdit*>())
            if (l->text() == QStringLiteral("llama4-maverick-ep16-dp8-2nodes")) name = l;
        QVERIFY(name);
        QTableWidget* stages = editor->findChild<QTableWidget*>();
        QVERIFY(stages);
        int samplesAt1366 = 0, planAt1366 = 0;
        for (const QSize size : {QSize(1560, 960), QSize(1366, 768)}) {
            w.resize(size);
            QTest::qWait(150);
            const QString tag = QStringLiteral("%1x%2").arg(size.width()).arg(size.height());
            shot(&w, QStringLiteral("layout-") + tag);
            ui::planView(w)->setCurrentWidget(ui::costsPanel(ui::planView(w)));
            QTest::qWait(50);
            shot(&w, QStringLiteral("layout-costs-") + tag);
            // The Costs charts' titles fit their charts line by line (nothing elided; the lines of
            // legend entries under a title are checked in realPlansShowEveryTextWhole).
            for (QChartView* v : {ui::rowChartView(ui::costsPanel(ui::planView(w))),
                                  ui::shardChartView(ui::costsPanel(ui::planView(w)))})
                for (const QString& line : v->chart()->title().split(QStringLiteral("<br>")))
                    if (!line.contains(QLatin1Char('<')))
                        QVERIFY2(QFontMetrics(v->chart()->titleFont()).horizontalAdvance(line) <=
                                     v->chart()->plotArea().width() + 40,
                                 qPrintable(tag + QStringLiteral(": ") + line));
            ui::planView(w)->setCurrentIndex(0);
            // The editor is not cut at the dock's right edge: it is as wide as its fields need, and
            // the scroll area shows all of that width.
            QVERIFY2(editor->width() >= editor->minimumSizeHint().width(), qPrintable(tag));
            QVERIFY2(editor->parentWidget()->width() >= editor->width(), qPrintable(tag));
            for (QAbstractSpinBox* s : editor->findChildren<QAbstractSpinBox*>()) {
                QVERIFY2(s->width() >= s->minimumSizeHint().width(), qPrintable(tag + QLatin1Char(' ') + s->text()));
                const QPoint right = s->mapTo(editor, QPoint(s->width(), 0));
                QVERIFY2(right.x() <= editor->width(), qPrintable(tag + QLatin1Char(' ') + s->text()));
            }
            QVERIFY2(name->fontMetrics().horizontalAdvance(name->text()) + 8 <= name->width(),
                     qPrintable(tag + QStringLiteral(" name field %1 px").arg(name->width())));
            // The library tree's columns (name, details) fit its viewport: run details whole.
            QTreeView* tree = ui::libraryView(w);
            QVERIFY2(
                tree->header()->length() <= tree->viewport()->width(),
                qPrintable(
                    tag +
                    QStringLiteral(": tree %1 px in %2").arg(tree->header()->length()).arg(tree->viewport()->width())));
            // The stage table's columns (name, alpha, beta) fit its viewport: no beta column cut off.
            QVERIFY2(stages->horizontalHeader()->length() <= stages->viewport()->width(), qPrintable(tag));
            QVERIFY2(stages->mapTo(editor, QPoint(stages->width(), 0)).x() <= editor->width(), qPrintable(tag));
            // The histogram labels as many bin edges as fit whole (never "..."): the fewest skipped.
            LengthHistogramView* h = ui::histogramView(w);
            auto* x = qobject_cast<QCategoryAxis*>(h->chart()->axes(Qt::Horizontal).value(0));
            QVERIFY(x);
            QCOMPARE(x->categoriesLabels(), h->binLabels());
            const int edges = static_cast<int>(ui::histogram(h).edges.size());
            QCOMPARE(h->binLabels().size(), (edges + ui::binLabelStride(h) - 1) / ui::binLabelStride(h));
            int widest = 0;
            for (const QString& l : h->binLabels())
                widest = std::max(widest, QFontMetrics(x->labelsFont()).horizontalAdvance(l));
            const qreal perBar = h->chart()->plotArea().width() / static_cast<qreal>(edges - 1);
            QVERIFY2(widest + 8 <= ui::binLabelStride(h) * perBar, qPrintable(tag));
            // The EP heatmaps' titles ("Planned LPT placement (CV_global 0.2428)") wrap onto a second
            // line where one is too narrow, instead of losing the CV value.
            for (bool planned : {false, true}) {
                HeatmapWidget* m = ui::epHeatmapPanel(ui::planView(w))->map(planned);
                QFont bold = m->font();
                bold.setBold(true);
                const int need = QFontMetrics(bold).horizontalAdvance(ui::title(m));
                QCOMPARE(m->titleLines(), need <= m->width() - 12 ? 1 : 2);
                QVERIFY2(m->titleLines() == 1 || need <= 2 * (m->width() - 12) - 40, qPrintable(tag + ui::title(m)));
            }
            if (size.width() == 1366) {
                samplesAt1366 = ui::sampleView(w)->width();
                planAt1366 = ui::resultTabs(w)->width();
            }
        }
        QVERIFY2(ui::binLabelStride(ui::histogramView(w)) > 1,
                 "16 bins in the narrow sample pane: not every edge labelled");
        // A wider window (maximised on a 1920x1080 screen): the plan views take the width.
        w.resize(1920, 1080);
        QTest::qWait(150);
        shot(&w, QStringLiteral("layout-1920x1080"));
        const int samplesGain = ui::sampleView(w)->width() - samplesAt1366;
        const int planGain = ui::resultTabs(w)->width() - planAt1366;
        QVERIFY2(planGain > samplesGain && planGain >= 500,
                 qPrintable(QStringLiteral("plan +%1 px, samples +%2 px").arg(planGain).arg(samplesGain)));
        QVERIFY2(ui::resultTabs(w)->width() > 2 * ui::sampleView(w)->width(), qPrintable(QString::number(planGain)));
    }

    // --- Nothing elided on real plans at 1560x960 and 1366x768 ---

    /// A library holding the real DeepSeek-V2-Lite trace (599 samples) as trace "ds" and its first 64
    /// samples (numeric id order) as window "first-64". Empty (with the test skipped) when the shared traces are
    /// absent.
    fs::path realDeepSeekLibrary() {
        QString why;
        const fs::path ds = test::shared_path("traces/deepseek-v2-lite", &why);
        if (ds.empty()) return {};
        std::vector<fs::path> files;
        for (const auto& f : fs::directory_iterator(ds))
            if (f.path().extension() == ".csv") files.push_back(f.path());
        std::sort(files.begin(), files.end(),
                  [](const auto& a, const auto& b) { return natural_less(a.stem().string(), b.stem().string()); });
        const fs::path lib = test::temp_dir(QStringLiteral("polish-real")) / "real.routepack";
        auto l = storage::Library::open(lib, storage::OpenMode::Create);
        ImportOptions o;
        o.model = known_model("deepseek-v2-lite");
        l->import_trace("ds", files, o);
        std::vector<std::string> ids;
        for (std::size_t k = 0; k < 64 && k < files.size(); ++k)
            ids.push_back(files[k].stem().string());
        l->create_window("ds", "first-64", ids, "first 64 samples");
        return lib;
    }

    /// The length histogram of `w` labels its bin edges whole: as many as fit its plot area now.
    void checkHistogramWhole(StudioWindow& w, const QString& where) {
        LengthHistogramView* h = ui::histogramView(w);
        auto* x = qobject_cast<QCategoryAxis*>(h->chart()->axes(Qt::Horizontal).value(0));
        QVERIFY(x);
        QCOMPARE(x->categoriesLabels(), h->binLabels());
        int widest = 0;
        for (const QString& l : h->binLabels())
            widest = std::max(widest, QFontMetrics(x->labelsFont()).horizontalAdvance(l));
        const qreal perBar = h->chart()->plotArea().width() / static_cast<qreal>(ui::histogram(h).edges.size() - 1);
        QVERIFY2(widest + 8 <= ui::binLabelStride(h) * perBar,
                 qPrintable(QStringLiteral("%1: labels %2 px, stride %3, %4 px per bar")
                                .arg(where)
                                .arg(widest)
                                .arg(ui::binLabelStride(h))
                                .arg(perBar)));
    }

    /// Every text of the shown tab of `w` is whole (`where` names the tab in failures): the heatmaps'
    /// titles and column labels (every rank in a font at least kMinColumnLabelScale of the widget's,
    /// or a stride whose span holds a label), their column axis titles; the charts' titles and
    /// legends (a legend that would not fit one row is listed under the title) and bar category
    /// labels; combo boxes and push buttons at least as wide as their contents.
    void checkWholeTexts(StudioWindow& w, const QString& where) {
        QWidget* tab = ui::resultTabs(w)->currentWidget();
        if (tab == ui::planView(w)) tab = ui::planView(w)->currentWidget();
        for (HeatmapWidget* m : tab->findChildren<HeatmapWidget*>()) {
            if (!m->isVisible() || m->rowCount() == 0) continue;
            for (const QString& line : m->titleLineTexts())
                QVERIFY2(!line.contains(QChar(0x2026)), qPrintable(where + QStringLiteral(": title ") + line));
            const double cw = (m->cellRect(0, m->columnCount() - 1).right() + 1 - m->cellRect(0, 0).left()) /
                              static_cast<double>(m->columnCount());
            int label = 0;
            for (int c = 0; c < m->columnCount(); ++c)
                label = std::max(label, m->fontMetrics().horizontalAdvance(QString::number(c)));
            const int stride = m->columnLabelStride();
            QVERIFY2(m->columnLabelScale() >= HeatmapWidget::kMinColumnLabelScale &&
                         (stride == 1 || stride * cw >= label + 6 - 0.5),
                     qPrintable(QStringLiteral("%1: %2 columns of %3 px, labels %4 px, stride %5, font x%6")
                                    .arg(where)
                                    .arg(m->columnCount())
                                    .arg(cw)
                                    .arg(label)
                                    .arg(stride)
                                    .arg(m->columnLabelScale())));
        }
        for (QChartView* v : tab->findChildren<QChartView*>()) {
            if (!v->isVisible()) continue;
            QChart* c = v->chart();
            const int width = static_cast<int>(c->size().width());
            const QFontMetrics tfm(c->titleFont());
            for (const QString& line : c->title().split(QStringLiteral("<br>")))
                if (!line.contains(QLatin1Char('<')))
                    QVERIFY2(tfm.horizontalAdvance(line) <= width - 40,
                             qPrintable(where + QStringLiteral(": ") + line));
            if (c->legend()->isVisible() && (c->legend()->alignment() & Qt::AlignBottom)) {
                const QFontMetrics lfm(c->legend()->font());
                int need = 0;
                for (QLegendMarker* marker : c->legend()->markers())
                    need += lfm.height() + 16 + lfm.horizontalAdvance(marker->label());
                QVERIFY2(need <= width - 40,
                         qPrintable(where + QStringLiteral(": legend of %1 px in %2").arg(need).arg(width)));
            }
            for (QAbstractAxis* a : c->axes(Qt::Horizontal))
                if (auto* x = qobject_cast<QBarCategoryAxis*>(a); x && x->labelsAngle() == 0) {
                    // Qt's room for a label: the plot width over the category edges, less padding.
                    const double per = c->plotArea().width() / (x->count() + 1) - 10;
                    for (const QString& cat : x->categories())
                        QVERIFY2(QFontMetrics(x->labelsFont()).horizontalAdvance(cat) <= per,
                                 qPrintable(where + QStringLiteral(": category ") + cat));
                }
        }
        for (QComboBox* box : w.findChildren<QComboBox*>())
            if (box->isVisible() && box != ui::presetBox(ui::topologyEditor(w)))
                QVERIFY2(box->width() >= box->sizeHint().width(),
                         qPrintable(where + QStringLiteral(": box %1 is %2 px of %3")
                                                .arg(box->currentText())
                                                .arg(box->width())
                                                .arg(box->sizeHint().width())));
        for (QPushButton* b : w.findChildren<QPushButton*>())
            if (b->isVisible())
                QVERIFY2(b->width() >= b->sizeHint().width(), qPrintable(where + QStringLiteral(": ") + b->text()));
    }

    void realPlansShowEveryTextWhole() {
        // A real plan of the DeepSeek trace on two nodes (EP16) and on one (EP8), every tab at the
        // default size and at 1366x768: nothing elided that a wider layout would show whole.
        ROUTEPACK_REQUIRE_SHARED(ds, "traces/deepseek-v2-lite");
        const fs::path lib = realDeepSeekLibrary();
        QVERIFY(!lib.empty());
        StudioWindow w(options_);
        w.resize(1560, 960);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openLibrary(q(lib)));
        // The histogram's edge labels, fitted to the plot area each data set leaves (its value labels
        // differ in width): the whole trace, then the window.
        QVERIFY(w.selectTrace(QStringLiteral("ds")));
        QTRY_COMPARE_WITH_TIMEOUT(ui::sampleModel(w)->rowCount(), 599, 30000);
        QTest::qWait(60);
        checkHistogramWhole(w, QStringLiteral("trace ds"));
        QVERIFY(w.selectWindow(QStringLiteral("ds"), QStringLiteral("first-64")));
        QTRY_COMPARE_WITH_TIMEOUT(ui::sampleModel(w)->rowCount(), 64, 30000);
        QTest::qWait(60);
        checkHistogramWhole(w, QStringLiteral("window first-64"));
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QList<qint64> runs;
        for (const char* preset : {"deepseek-v2-lite-ep16-dp8-2nodes", "deepseek-v2-lite-ep8-dp4"}) {
            QVERIFY(ui::topologyEditor(w)->selectPreset(QString::fromLatin1(preset)));
            PlannerBudgets b;
            b.annealing.levels = 2;
            b.annealing.steps = 50;
            b.seeding.candidates = 2;
            b.seeding.population = 2;
            b.workers = 1;
            ui::topologyEditor(w)->setBudgets(b);
            const int before = static_cast<int>(shown.count());
            QVERIFY2(w.runPlanner() > 0, qPrintable(w.statusText()));
            QTRY_VERIFY_WITH_TIMEOUT(shown.count() > before, 120000);
            QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 60000);
            runs << w.shownRunId();
        }
        for (const QSize size : {QSize(1560, 960), QSize(1366, 768)}) {
            const QString tag = QStringLiteral("%1x%2").arg(size.width()).arg(size.height());
            w.resize(size);
            QTest::qWait(60);
            // The longest shipped preset name, whole in the preset box.
            QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("llama4-maverick-ep16-dp8-2nodes")));
            QCOMPARE(ui::topologyEditor(w)->presetDisplayText(),
                     QStringLiteral("shipped: llama4-maverick-ep16-dp8-2nodes"));
            checkHistogramWhole(w, tag);
            for (int k = 0; k < runs.size(); ++k) {
                QVERIFY(w.selectRun(runs[k]));
                QTRY_COMPARE(w.shownRunId(), runs[k]);
                ui::resultTabs(w)->setCurrentWidget(ui::planView(w));
                for (int t = 0; t < ui::planView(w)->count(); ++t) {
                    ui::planView(w)->setCurrentIndex(t);
                    QTest::qWait(40);
                    const QString where =
                        QStringLiteral("%1 run %2 %3").arg(tag).arg(k).arg(ui::planView(w)->tabText(t));
                    shot(&w, QStringLiteral("real-%1-run%2-plan-%3").arg(tag).arg(k).arg(t));
                    checkWholeTexts(w, where);
                    if (QTest::currentTestFailed()) return;
                }
                for (int t = 1; t < ui::resultTabs(w)->count(); ++t) {
                    ui::resultTabs(w)->setCurrentIndex(t);
                    QTest::qWait(40);
                    shot(&w, QStringLiteral("real-%1-run%2-tab-%3").arg(tag).arg(k).arg(t));
                    checkWholeTexts(w,
                                    QStringLiteral("%1 run %2 %3").arg(tag).arg(k).arg(ui::resultTabs(w)->tabText(t)));
                    if (QTest::currentTestFailed()) return;
                }
                QCOMPARE(w.size(), size);
                QVERIFY(w.minimumSizeHint().width() <= size.width() && w.minimumSizeHint().height() <= size.height());
                QVERIFY2(!ui::topologyEditor(w)->presetDisplayText().contains(QChar(0x2026)),
                         qPrintable(ui::topologyEditor(w)->presetDisplayText()));
            }
        }
        realStatusLineAndZoom(w, runs.front());
    }

    /// At 1366x768: a status message too long for the line is elided at its end, whole in its tooltip
    /// and in View > Status messages, and never widens the window; the 16-rank heatmap labels every
    /// rank in the widget's font after two Ctrl+= presses.
    void realStatusLineAndZoom(StudioWindow& w, qint64 twoNodeRun) {
        QVERIFY(w.selectRun(twoNodeRun));
        QTRY_COMPARE(w.shownRunId(), twoNodeRun);
        const QString longest =
            QStringLiteral("Run %1: ").arg(twoNodeRun) + QString(QStringLiteral("a long message ")).repeated(30);
        ui::planView(w)->setCurrentWidget(ui::epHeatmapPanel(ui::planView(w)));
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        QTest::keyClick(&w, Qt::Key_0, Qt::ControlModifier);
        QTest::qWait(40);
        HeatmapWidget* m = ui::epHeatmapPanel(ui::planView(w))->map(true);
        QCOMPARE(m->columnCount(), 16);
        const int label = m->fontMetrics().horizontalAdvance(QStringLiteral("15"));
        auto cell = [m] { return m->cellRect(0, 1).left() - m->cellRect(0, 0).left(); };
        qInfo("1366x768, 16 EP ranks: %d px per rank at 100%%, stride %d", cell(), m->columnLabelStride());
        QVERIFY2(m->columnLabelStride() > 1 || m->columnLabelScale() >= HeatmapWidget::kMinColumnLabelScale,
                 qPrintable(QString::number(cell())));
        int presses = 0;
        while (m->columnLabelStride() > 1 || m->columnLabelScale() < 1.0) {
            QVERIFY2(presses < 2,
                     qPrintable(QStringLiteral("%1 px per rank after %2 presses").arg(cell()).arg(presses)));
            QTest::keyClick(&w, Qt::Key_Equal, Qt::ControlModifier);
            QTest::qWait(40);
            ++presses;
        }
        qInfo("every rank labelled whole after %d Ctrl+= presses: %d px per rank, labels %d px", presses, cell(),
              label);
        QVERIFY(cell() >= label + 2);
        shot(&w, QStringLiteral("real-1366x768-ep16-zoomed"));
        QTest::keyClick(&w, Qt::Key_0, Qt::ControlModifier);
        // The status line: the run's name first, the end elided, the whole message kept.
        w.setStatus(longest);
        QLabel* line = ui::statusLine(w);
        QVERIFY(line->text().endsWith(QChar(0x2026)));
        QVERIFY(line->text().startsWith(QStringLiteral("Run %1: a long message").arg(twoNodeRun)));
        QVERIFY2(line->fontMetrics().horizontalAdvance(line->text()) <= line->contentsRect().width(),
                 qPrintable(line->text()));
        QCOMPARE(w.statusText(), longest);
        QCOMPARE(line->toolTip(), longest);
        QVERIFY(w.statusMessages().back().endsWith(QStringLiteral("  ") + longest));
        // View > Status messages shows it whole.
        QAction* logAction = w.findChild<QAction*>(QStringLiteral("statusLog"));
        QVERIFY(logAction);
        logAction->trigger();
        auto* log = w.findChild<QPlainTextEdit*>(QStringLiteral("statusLogText"));
        QVERIFY(log && log->isVisible());
        QVERIFY(log->toPlainText().endsWith(QStringLiteral("  ") + longest));
        log->window()->close();
        QCOMPARE(w.size(), QSize(1366, 768));
    }

    // --- Progress times and what a restart restores ---

    void keyboardSwitchesTabsAndHelpListsShortcuts() {
        StudioWindow w(options_);
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        // Alt+2 shows the comparison, Alt+1 the plan; Ctrl+PgDown / PgUp step through the plan views
        // (cyclically).
        QTest::keyClick(&w, Qt::Key_2, Qt::AltModifier);
        QCOMPARE(ui::resultTabs(w)->currentIndex(), 1);
        QTest::keyClick(&w, Qt::Key_1, Qt::AltModifier);
        QCOMPARE(ui::resultTabs(w)->currentIndex(), 0);
        const int n = ui::planView(w)->count();
        QVERIFY(n >= 2);
        ui::planView(w)->setCurrentIndex(0);
        QTest::keyClick(&w, Qt::Key_PageDown, Qt::ControlModifier);
        QCOMPARE(ui::planView(w)->currentIndex(), 1);
        QTest::keyClick(&w, Qt::Key_PageUp, Qt::ControlModifier);
        QTest::keyClick(&w, Qt::Key_PageUp, Qt::ControlModifier);
        QCOMPARE(ui::planView(w)->currentIndex(), n - 1);
        // The Help text is built from the menus: every shortcut with its menu path.
        const QStringList lines = w.shortcutsText().split(QLatin1Char('\n'));
        const QString run = QKeySequence(Qt::CTRL | Qt::Key_R).toString(QKeySequence::NativeText);
        QVERIFY2(lines.contains(QStringLiteral("Plan > Run planner: ") + run), qPrintable(w.shortcutsText()));
        QVERIFY(lines.contains(QStringLiteral("View > Next plan view: ") +
                               QKeySequence(Qt::CTRL | Qt::Key_PageDown).toString(QKeySequence::NativeText)));
        QVERIFY(lines.contains(QStringLiteral("Help > Keyboard shortcuts: ") +
                               QKeySequence(QKeySequence::HelpContents).toString(QKeySequence::NativeText)));
        for (const QString& line : lines)
            QVERIFY2(line.contains(QStringLiteral(" > ")) && line.contains(QStringLiteral(": ")), qPrintable(line));
    }

    void keyboardZoomsHeatmaps() {
        StudioWindow w(options_);
        w.resize(1400, 900);
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        ui::resultTabs(w)->setCurrentIndex(1);
        ui::planView(w)->setCurrentWidget(ui::epHeatmapPanel(ui::planView(w)));
        const QList<HeatmapView*> maps = ui::epHeatmapPanel(ui::planView(w))->findChildren<HeatmapView*>();
        QCOMPARE(maps.size(), 2);
        auto levels = [&] {
            QList<int> out;
            for (const HeatmapView* m : maps)
                out << m->zoomLevel();
            return out;
        };
        // Ctrl+= zooms both EP-rank maps in one level (and shows the plan view), Ctrl+- out, Ctrl+0 resets.
        QTest::keyClick(&w, Qt::Key_Equal, Qt::ControlModifier);
        QCOMPARE(ui::resultTabs(w)->currentWidget(), static_cast<QWidget*>(ui::planView(w)));
        QCOMPARE(levels(), QList<int>({1, 1}));
        QCOMPARE(w.statusText(), QStringLiteral("Heatmap zoom 125% (Ctrl+= / Ctrl+- / Ctrl+0, or Ctrl + mouse wheel)"));
        QTest::keyClick(&w, Qt::Key_Equal, Qt::ControlModifier);
        QCOMPARE(levels(), QList<int>({2, 2}));
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Heatmap zoom 156%")), qPrintable(w.statusText()));
        QTest::keyClick(&w, Qt::Key_Minus, Qt::ControlModifier);
        QCOMPARE(levels(), QList<int>({1, 1}));
        QTest::keyClick(&w, Qt::Key_Equal, Qt::ControlModifier);
        QTest::keyClick(&w, Qt::Key_0, Qt::ControlModifier);
        QCOMPARE(levels(), QList<int>({0, 0}));
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Heatmap zoom 100%")), qPrintable(w.statusText()));
        // A view without heatmaps says so.
        ui::planView(w)->setCurrentWidget(ui::costsPanel(ui::planView(w)));
        QTest::keyClick(&w, Qt::Key_Equal, Qt::ControlModifier);
        QCOMPARE(w.statusText(), QStringLiteral("The shown plan view has no heatmap to zoom."));
        QCOMPARE(levels(), QList<int>({0, 0}));
        // Help > Keyboard shortcuts lists the three, built from the View menu's actions.
        const QStringList lines = w.shortcutsText().split(QLatin1Char('\n'));
        auto keys = [](QKeyCombination k) { return QKeySequence(k).toString(QKeySequence::NativeText); };
        QVERIFY2(lines.contains(QStringLiteral("View > Zoom in heatmaps: %1 or %2")
                                    .arg(keys(Qt::CTRL | Qt::Key_Equal), keys(Qt::CTRL | Qt::Key_Plus))),
                 qPrintable(w.shortcutsText()));
        QVERIFY(lines.contains(QStringLiteral("View > Zoom out heatmaps: ") + keys(Qt::CTRL | Qt::Key_Minus)));
        QVERIFY(lines.contains(QStringLiteral("View > Reset heatmap zoom: ") + keys(Qt::CTRL | Qt::Key_0)));
    }

    void progressTimesFromFractions() {
        QCOMPARE(durationText(0.0), QStringLiteral("0.0 s"));
        QCOMPARE(durationText(-3.0), QStringLiteral("0.0 s"));
        QCOMPARE(durationText(std::nan("")), QStringLiteral("0.0 s"));
        QCOMPARE(durationText(0.44), QStringLiteral("0.4 s"));
        QCOMPARE(durationText(9.9), QStringLiteral("9.9 s"));
        QCOMPARE(durationText(9.96), QStringLiteral("10 s"));
        QCOMPARE(durationText(42.4), QStringLiteral("42 s"));
        QCOMPARE(durationText(59.6), QStringLiteral("1 min 00 s"));
        QCOMPARE(durationText(125.0), QStringLiteral("2 min 05 s"));
        QCOMPARE(durationText(3720.0), QStringLiteral("1 h 02 min"));
        // Remaining = elapsed * (1 - f) / f: 10 s at 25% -> 30 s; 3 s at 50% -> 3 s; 65 s at 50%.
        QCOMPARE(progressTimeText(10.0, 0.25), QStringLiteral("10 s elapsed, about 30 s left"));
        QCOMPARE(progressTimeText(3.0, 0.5), QStringLiteral("3.0 s elapsed, about 3.0 s left"));
        QCOMPARE(progressTimeText(65.0, 0.5), QStringLiteral("1 min 05 s elapsed, about 1 min 05 s left"));
        QCOMPARE(progressTimeText(2.0, 0.8), QStringLiteral("2.0 s elapsed, about 0.5 s left"));
        // Too early for an estimate (under 1 s, under 2% done), and done.
        QCOMPARE(progressTimeText(0.4, 0.5), QStringLiteral("0.4 s elapsed"));
        QCOMPARE(progressTimeText(5.0, 0.01), QStringLiteral("5.0 s elapsed"));
        QCOMPARE(progressTimeText(5.0, 1.0), QStringLiteral("5.0 s elapsed"));
    }

    void restartRestoresRunTabAndExportFolder() {
        const fs::path lib = synthLibrary(QStringLiteral("polish-restart"));
        const QString folder = q(tmp_ / "exports");
        QDir().mkpath(folder);
        qint64 run = 0;
        {
            StudioWindow w(options_);
            plannedStudio(w, lib, &run);
            // Select a window, then the run again: the tree's selection is what is kept.
            QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
            QVERIFY(w.selectRun(run));
            QTRY_COMPARE_WITH_TIMEOUT(w.shownRunId(), run, 30000);
            ui::resultTabs(w)->setCurrentIndex(1);
            ui::planView(w)->setCurrentIndex(2);
            ui::exports(w)->setFolder(folder);
            QVERIFY(w.close());
        }
        StudioWindow again(options_);
        QCOMPARE(ui::resultTabs(again)->currentIndex(), 1);
        QCOMPARE(ui::planView(again)->currentIndex(), 2);
        QCOMPARE(ui::exports(again)->folder(), folder);
        QCOMPARE(ui::exports(again)->suggestedPath(QStringLiteral("plan.json")), folder + QStringLiteral("/plan.json"));
        QVERIFY(again.openLibrary(q(lib)));
        const QModelIndex cur = ui::libraryView(again)->currentIndex();
        QCOMPARE(cur.data(RunIdRole).toLongLong(), run);
        QTRY_COMPARE_WITH_TIMEOUT(again.shownRunId(), run, 30000);
        // Another library does not take this library's run id.
        const fs::path other = synthLibrary(QStringLiteral("polish-restart-other"));
        QVERIFY(again.openLibrary(q(other)));
        QCOMPARE(ui::libraryView(again)->currentIndex().data(KindRole).toInt(), int(LibraryTreeModel::WindowNode));
    }

    // --- Run and job numbers ---

    void finishedRunNamesTheRun() {
        const fs::path lib = synthLibrary(QStringLiteral("polish-run"));
        StudioWindow w(options_);
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
        PlannerBudgets b;
        b.annealing.levels = 2;
        b.annealing.steps = 50;
        b.seeding.candidates = 2;
        b.seeding.population = 2;
        b.workers = 1;
        ui::topologyEditor(w)->setBudgets(b);
        // Two jobs, so that job and run numbers need not agree: a restore-free library has run ids from 1.
        const quint64 j1 = w.runPlanner();
        QVERIFY2(j1 > 0, qPrintable(w.statusText()));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        const qint64 run = shown.back().front().toLongLong();
        QVERIFY(run > 0);
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Run %1 finished in ").arg(run)), qPrintable(w.statusText()));
        QVERIFY2(!w.statusText().contains(QStringLiteral("job")), qPrintable(w.statusText())); // one number: the run's
        // Every cost axis of the plan views and the comparison says its unit.
        int costAxes = 0;
        for (QWidget* root : {static_cast<QWidget*>(ui::planView(w)), static_cast<QWidget*>(ui::compareView(w))})
            for (QChartView* v : root->findChildren<QChartView*>())
                for (QAbstractAxis* a : v->chart()->axes(Qt::Vertical)) {
                    const QString t = a->titleText();
                    if (t == QStringLiteral("acceptance") || t.isEmpty()) continue;
                    QVERIFY2(t.endsWith(QStringLiteral("(tokens)")), qPrintable(t));
                    ++costAxes;
                }
        QVERIFY2(costAxes >= 4, qPrintable(QString::number(costAxes))); // costs, shard totals, convergence, compare
        // The comparison table's cost columns say their unit in the header tooltip.
        for (int c : {CompareTableModel::Joint, CompareTableModel::SumU, CompareTableModel::MaxJ,
                      CompareTableModel::Attention}) {
            const QString tip = CompareTableModel().headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString();
            QVERIFY2(tip.endsWith(QStringLiteral(", in tokens")), qPrintable(tip));
        }
        // The EP heatmaps draw loads within 2% of the layer mean as even, and say so.
        for (bool planned : {false, true})
            QCOMPARE(ui::neutralBand(ui::epHeatmapPanel(ui::planView(w))->map(planned)), 0.02);
        // The shard totals: the bars tied with the straggler are selected; all tied = one neutral colour.
        CostsPanel* costs = ui::costsPanel(ui::planView(w));
        for (int m = 0; m < kPaperMethodCount; ++m) {
            costs->setMethod(method_at(m));
            QBarSet* set = ui::shardTotalSet(costs);
            QVERIFY(set);
            std::vector<double> U;
            U.reserve(static_cast<std::size_t>(set->count()));
            for (int g = 0; g < set->count(); ++g)
                U.push_back(set->at(g));
            const std::vector<int> tied = tiedShards(U, kShardTieTolerance);
            for (int g = 0; g < set->count(); ++g)
                QCOMPARE(set->isBarSelected(g), std::count(tied.begin(), tied.end(), g) == 1);
            const bool balanced = tied.size() == U.size();
            QCOMPARE(set->color() == QColor(0x8c, 0x8c, 0x8c), balanced);
            QCOMPARE(
                costs->headingText().startsWith(QStringLiteral("<b>Balanced:</b> every shard within 0.1% of max_g U")),
                balanced);
        }
    }
};

QTEST_MAIN(TestStudioPolish)
#include "tst_studio_polish.moc"
