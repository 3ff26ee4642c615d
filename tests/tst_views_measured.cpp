// The plan views' measured mode (views/plan/measured_data.h, measured_panel.h): a measured plan's
// figures by hand, the panel's maps, tooltips and heading on them, and a saved run of a real
// synthetic library with a measured step imported beside it: the measured plans the library links to
// the run, the studio's headless rendering of its measured tab, and a screenshot of it to
// $ROUTEPACK_SCREENSHOT_DIR or a temporary folder.
#include "core/plan/measured.h"
#include "core/plan/plan_file.h"
#include "core/synth/synth.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "views/dialogs/measured_import_dialog.h"
#include "views/plan/heatmap_widget.h"
#include "views/plan/measured_data.h"
#include "views/plan/measured_panel.h"
#include "views/plan/plan_models.h"
#include "views/plan/plan_views.h"
#include "views/run/run_series.h"
#include "views/run/run_view.h"
#include "views/studio_app.h"
#include "views/studio_window.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QImage>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

#include <cmath>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {

MeasuredPiece attention(int r, int d, double seconds, double modelled) {
    MeasuredPiece p;
    p.attention = true;
    p.row = r;
    p.dp_slot = d;
    p.edp_shard = d;
    p.seconds = seconds;
    p.modelled = modelled;
    return p;
}

MeasuredPiece experts(int r, int g, int p, double seconds, double modelled, std::int64_t tokens) {
    MeasuredPiece x;
    x.row = r;
    x.edp_shard = g;
    x.moe_layer = 4;
    x.ep_rank = p;
    x.seconds = seconds;
    x.modelled = modelled;
    x.tokens = tokens;
    x.experts = 1;
    return x;
}

/// Two rows, DP slots 0 and 1 in EDP shards 0 and 1, one MoE layer (id 4) on two EP ranks.
std::shared_ptr<const MeasuredStep> hand_step() {
    auto m = std::make_shared<MeasuredStep>();
    m->trace = "t";
    m->window = "w";
    m->fingerprint = "0123456789abcdef";
    m->samples = 4;
    m->experts = 4;
    m->moe_layers = {4};
    m->topology = parse_topology(
        R"({"ep_ranks": 2, "dp_slots": 2, "edp_shards": [[0], [1]], "token_cap": 100, "attention_stages": [{"name": "attention", "alpha": 1.0, "beta": 1.0}]})",
        "t");
    m->shapes = "null";
    m->timing = R"({"clock": "thread_time", "repeats": 1})";
    MeasuredPlan p;
    p.name = "routepack";
    p.rows = 2;
    p.pieces = {attention(0, 0, 1.0, 0.5),        attention(0, 1, 2.0, 0.25),      attention(1, 0, 0.5, 1.0),
                attention(1, 1, 0.25, 0.125),     experts(0, 0, 0, 0.5, 0.1, 10),  experts(0, 0, 1, 0.25, 0.2, 20),
                experts(0, 1, 0, 0.125, 0.3, 30), experts(0, 1, 1, 1.0, 0.05, 5),  experts(1, 0, 0, 0.75, 0.4, 40),
                experts(1, 0, 1, 2.0, 0.1, 10),   experts(1, 1, 0, 0.25, 0.2, 20), experts(1, 1, 1, 0.25, 0.2, 20)};
    p.step_seconds = compose_measured(p, m->topology, m->moe_layers);
    m->plans = {p};
    return m;
}

} // namespace

class TestViewsMeasured : public test::StudioTestBase {
    Q_OBJECT

    fs::path db_;          ///< a synthetic library with window syn/w and one saved run
    std::int64_t run_ = 0; ///< that run
    fs::path measured_;    ///< a measured file of its four methods' layouts (not imported by initTestCase)

    /// The library, its run, and the measured file: each piece timed 10 ms per unit of modelled
    /// cost (the routepack plan 12 ms: the same layout, measured slower).
    void buildLibrary() {
        SynthConfig c;
        c.groups = 4;
        c.group_size = 4;
        write_synth(c, TraceFormat::VLLM, tmp_ / "syn");
        db_ = tmp_ / "lib.routepack";
        auto lib = storage::Library::open(db_);
        ImportOptions o;
        o.model = synth_model(c);
        lib->import_trace("syn", {tmp_ / "syn"}, o);
        std::vector<std::string> ids;
        for (const auto& s : lib->samples("syn"))
            ids.push_back(s.id);
        lib->create_window("syn", "w", ids, "all");
        PlanInput in;
        in.window = lib->load_window("syn", "w");
        in.trace_name = "syn";
        in.window_name = "w";
        in.topology = known_topology("synthetic-demo-ep8-dp4");
        in.budgets.annealing.levels = 3;
        in.budgets.annealing.steps = 40;
        in.budgets.workers = 1;
        const PlanResult r = plan_window(in, {});
        run_ = lib->save_run(r, "demo").id;
        // A second step of the run, the first 8 samples, planned on the same topology (not measured).
        lib->create_window("syn", "w2", std::vector<std::string>(ids.begin(), ids.begin() + 8), "first 8");
        PlanInput in2 = in;
        in2.window = lib->load_window("syn", "w2");
        in2.window_name = "w2";
        lib->save_run(plan_window(in2, {}), "demo");
        MeasuredStep m;
        m.trace = "syn";
        m.window = "w";
        m.fingerprint = r.fingerprint;
        m.samples = static_cast<std::int64_t>(in.window.size());
        m.experts = in.window.model.experts;
        m.moe_layers = in.window.model.moe_layers;
        m.topology = r.topology;
        m.shapes = "null";
        m.timing = R"({"clock": "thread_time", "repeats": 1})";
        for (const MethodResult* mr : r.methods()) {
            MeasuredPlan p = layout_pieces(in.window, mr->layout, r.placement_of(mr->placement), r.topology, mr->key());
            for (MeasuredPiece& pc : p.pieces)
                pc.seconds = pc.modelled * (mr->method == Method::RoutePack ? 0.012 : 0.01);
            p.step_seconds = compose_measured(p, m.topology, m.moe_layers);
            p.modelled_max_u = mr->metrics.score.max_u;
            m.plans.push_back(std::move(p));
        }
        measured_ = tmp_ / "m.json";
        test::write_file(measured_, measured_to_json(m));
    }

private Q_SLOTS:
    void initTestCase() {
        initStudioTest(QStringLiteral("tst_views_measured"), QStringLiteral("views-measured"));
        buildLibrary();
    }
    void cleanupTestCase() {
        clearStudioSettings();
        fs::remove_all(tmp_);
    }

    void figuresHandComputed() {
        const auto m = hand_step();
        const MeasuredFigures f = measured_figures(*m, 0);
        QCOMPARE(std::vector<int>({f.rows, f.shards, f.layers, f.ranks}), std::vector<int>({2, 2, 1, 2}));
        // Rank 0 of layer 4: 0.5 + 0.125 + 0.75 + 0.25 s; rank 1: 0.25 + 1 + 2 + 0.25 s.
        QCOMPARE(f.rank_seconds, std::vector<double>({1.625, 3.5}));
        QCOMPARE(f.rank_modelled, std::vector<double>({0.1 + 0.3 + 0.4 + 0.2, 0.2 + 0.05 + 0.1 + 0.2}));
        QCOMPARE(f.rank_tokens, std::vector<std::int64_t>({100, 55}));
        // J: (1 + 0.5, 2 + 1; 0.5 + 2, 0.25 + 0.25); U = (4, 3.5): shard 0 straggles.
        QCOMPARE(f.attention, std::vector<double>({1.0, 2.0, 0.5, 0.25}));
        QCOMPARE(f.experts, std::vector<double>({0.5, 1.0, 2.0, 0.25}));
        QCOMPARE(f.joint, std::vector<double>({1.5, 3.0, 2.5, 0.5}));
        QCOMPARE(f.shard_seconds, std::vector<double>({4.0, 3.5}));
        QCOMPARE(f.step_seconds, 4.0);
        QCOMPARE(f.step_seconds, m->plans[0].step_seconds);
        QCOMPARE(f.straggler, 0);
        // Modelled: J = (0.5 + 0.2, 0.25 + 0.3; 1 + 0.4, 0.125 + 0.2), U = (2.1, 0.875).
        QCOMPARE(f.modelled_joint, std::vector<double>({0.5 + 0.2, 0.25 + 0.3, 1.0 + 0.4, 0.125 + 0.2}));
        QCOMPARE(f.shard_modelled, std::vector<double>({(0.5 + 0.2) + (1.0 + 0.4), (0.25 + 0.3) + (0.125 + 0.2)}));
        QCOMPARE(f.modelled_straggler, 0);
        QCOMPARE(f.modelled_step, (0.5 + 0.2) + (1.0 + 0.4));
        QVERIFY_THROWS_EXCEPTION(std::out_of_range, measured_figures(*m, 1));
    }

    void panelDrawsMeasuredSecondsWithTheModelInTheTooltips() {
        MeasuredPanel panel;
        panel.resize(1100, 600);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QCOMPARE(panel.figures(), nullptr);
        QVERIFY(!panel.choiceBox()->isEnabled());
        QCOMPARE(panel.rankMap()->rowCount(), 0);
        panel.setChoices({{hand_step(), 0, 7, "profiler", "routepack"}});
        QCOMPARE(panel.choiceBox()->currentText(), QStringLiteral("measured step 7: routepack (profiler)"));
        QVERIFY(panel.figures());
        // Layer 4's mean over the two ranks: (1.625 + 3.5) / 2 = 2.5625.
        QCOMPARE(panel.rankMap()->rowCount(), 1);
        QCOMPARE(panel.rankMap()->columnCount(), 2);
        QCOMPARE(panel.rankMap()->value(0, 0), 1.625 / 2.5625);
        QCOMPARE(panel.rankMap()->value(0, 1), 3.5 / 2.5625);
        QCOMPARE(panel.rankMap()->toolTipFor(0, 1),
                 QStringLiteral("<b>MoE layer 4, EP rank 1</b><br>measured 3.5 s over 4 row-shards (1.366x the layer's "
                                "mean)<br>modelled 0.5500 (0.710x the layer's mean)<br>55 tokens"));
        QCOMPARE(panel.rowShardMap()->rowCount(), 2);
        QCOMPARE(panel.rowShardMap()->value(1, 0), 2.5);
        QCOMPARE(panel.rowShardMap()->toolTipFor(0, 1),
                 QStringLiteral("<b>Row 0, shard g1</b><br>measured A 2 s + E 1 s = J 3 s<br>modelled A 0.2500 + E "
                                "0.3000 = J 0.5500"));
        QCOMPARE(panel.headingText(),
                 QStringLiteral("<b>routepack</b>: measured step 4 s (straggler g0) against modelled max_g U 2.1000 "
                                "(straggler g0): 1.905 s per unit of U. Clock: thread_time."));
        QVERIFY(test::save_screenshot(&panel, shots_, QStringLiteral("measured-panel-hand")));
        panel.setChoices({});
        QCOMPARE(panel.figures(), nullptr);
        QCOMPARE(panel.headingText(), QString());
    }

    void dialogImportsAMeasuredFile() {
        MeasuredImportDialog dialog(test::qpath(db_));
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        QSignalSpy imported(&dialog, &MeasuredImportDialog::imported);
        QVERIFY(!dialog.startImport()); // no files
        QCOMPARE(dialog.resultText(), QStringLiteral("Give the files to import."));
        dialog.filesEdit()->setText(test::qpath(tmp_ / "nope.json"));
        QVERIFY(dialog.startImport());
        QTRY_VERIFY(dialog.resultText().startsWith(QStringLiteral("Not imported: ")));
        QVERIFY2(dialog.resultText().contains(test::qpath(tmp_ / "nope.json") +
                                              QStringLiteral(": no such measured step file")),
                 qPrintable(dialog.resultText()));
        dialog.filesEdit()->setText(test::qpath(measured_) + QStringLiteral(";") + test::qpath(measured_));
        QVERIFY(dialog.startImport());
        QTRY_VERIFY(dialog.resultText().startsWith(QStringLiteral("Not imported: ")));
        QVERIFY(dialog.resultText().contains(
            QStringLiteral("give one measured file, or torch.profiler traces with their plan file")));
        QCOMPARE(imported.count(), 0);
        dialog.filesEdit()->setText(test::qpath(measured_));
        QTest::mouseClick(dialog.importButton(), Qt::LeftButton);
        QTRY_COMPARE(imported.count(), 1);
        QCOMPARE(dialog.resultText(),
                 QStringLiteral("Imported measured step 1 of syn/w (measured): 4 plans, 4 linked to a saved run."));
        QVERIFY(test::save_screenshot(&dialog, shots_, QStringLiteral("measured-import-dialog")));
        QVERIFY(dialog.startImport());
        QTRY_COMPARE(imported.count(), 2);
        QCOMPARE(
            dialog.resultText(),
            QStringLiteral("Already imported: measured step 1 of syn/w (measured): 4 plans, 4 linked to a saved run."));
    }

    void savedRunWithAMeasuredStep() {
        const fs::path db = db_;
        const std::int64_t run = run_;
        auto lib = storage::Library::open(db, storage::OpenMode::ReadOnly);
        const std::vector<MeasuredChoice> choices = run_measured_choices(*lib, "syn", "w", run);
        QCOMPARE(choices.size(), std::size_t(4));
        QCOMPARE(choices[3].method, std::string("routepack"));
        QCOMPARE(choices[3].plan, 3);
        QVERIFY(run_measured_choices(*lib, "syn", "w", run + 1).empty());
        // The measured straggler's seconds are 12 ms per unit of the modelled one's (one attention stage
        // of the composition in each: the same layout, scaled).
        const MeasuredFigures f = measured_figures(*choices[3].step, 3);
        QCOMPARE(f.straggler, f.modelled_straggler);
        QVERIFY(std::abs(f.step_seconds - 0.012 * f.modelled_step) <= 1e-12 * f.step_seconds);
        // Headless: the measured tab is rendered with the run's measured plans.
        HeadlessOutput out;
        QString error;
        QVERIFY2(runHeadlessRun(test::qpath(tmp_ / "shots"), {test::qpath(db), run, {}, {}}, &out, &error),
                 qPrintable(error));
        QVERIFY(out.files.contains(QStringLiteral("plan-measured.png")));
        const QImage shot(test::qpath(tmp_ / "shots" / "plan-measured.png"));
        QVERIFY(shot.width() >= 1000 && shot.height() >= 600);
        QVERIFY(shot.save(shots_ + QStringLiteral("/measured-headless.png")));
        // The plan view: the measured tab follows setMeasured, and setPlan clears it.
        PlanView view;
        view.resize(1280, 760);
        view.setMeasured(choices);
        view.setCurrentWidget(view.viewWidget(QStringLiteral("measured")));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCOMPARE(view.measuredPanel()->choiceCount(), 4);
        view.measuredPanel()->setChoice(3);
        QCOMPARE(view.measuredPanel()->choiceBox()->currentText(),
                 QStringLiteral("measured step 1: routepack (measured)"));
        QCOMPARE(view.measuredPanel()->rankMap()->rowCount(), f.layers);
        QVERIFY(test::save_screenshot(&view, shots_, QStringLiteral("plan-measured")));
        view.setPlan(nullptr);
        QCOMPARE(view.measuredPanel()->choiceCount(), 0);
    }

    void runViewShowsMeasuredBesideModelled() {
        // By hand: one step measured at baseline 2 s and routepack 1.5 s (-25 %) where the model says -50 %.
        RunSeries hand;
        hand.steps.resize(2);
        hand.steps[0].gain_pct = -50;
        hand.steps[0].measured[Method::Baseline] = 2.0;
        hand.steps[0].measured[Method::RoutePack] = 1.5;
        hand.steps[1].gain_pct = -10;
        hand.steps[1].measured[Method::RoutePack] = 1.0; // no measured baseline: not counted
        const MeasuredRunSummary m = summarize_measured(hand);
        QCOMPARE(m.steps, 1);
        QCOMPARE(m.mean_measured_pct, -25.0);
        QCOMPARE(m.mean_modelled_pct, -50.0);
        QCOMPARE(summarize_measured(RunSeries{}).steps, 0);
        // The library's run: window w measured (imported by dialogImportsAMeasuredFile), w2 not.
        const auto steps = storage::Library::open(db_, storage::OpenMode::ReadOnly)->measured_steps("syn", "w");
        QCOMPARE(steps.size(), std::size_t(1));
        const double base = steps[0].plans[0].step_seconds, rp = steps[0].plans[3].step_seconds;
        RunView view;
        view.resize(1400, 900);
        view.show();
        view.setSource(test::qpath(db_), QStringLiteral("syn"));
        QTRY_VERIFY_WITH_TIMEOUT(!view.isLoading() && view.currentSeries(), 60000);
        const RunSeries& s = *view.currentSeries();
        QCOMPARE(s.steps.size(), std::size_t(2));
        QCOMPARE(s.steps[0].window, std::string("w"));
        QCOMPARE(*s.steps[0].measured[Method::Baseline], base);
        QCOMPARE(*s.steps[0].measured[Method::RoutePack], rp);
        QVERIFY(!s.steps[1].measured[Method::RoutePack]);
        const QString measuredPct = QString::asprintf("%+.2f %%", 100.0 * (rp - base) / base);
        const QString modelledPct = QString::asprintf("%+.2f %%", s.steps[0].gain_pct);
        QVERIFY2(view.headingText().contains(
                     QStringLiteral("measured (1 step(s) with baseline and routepack measured): routepack vs baseline "
                                    "mean %1 measured, %2 modelled on the same steps")
                         .arg(measuredPct, modelledPct)),
                 qPrintable(view.headingText()));
        QVERIFY2(
            view.stepToolTip(0).contains(QStringLiteral("measured: Baseline %1 s, ").arg(base, 0, 'g', 4)) &&
                view.stepToolTip(0).contains(QStringLiteral("RoutePack %1 s (routepack vs baseline %2 measured, %3 "
                                                            "modelled)")
                                                 .arg(rp, 0, 'g', 4)
                                                 .arg(measuredPct, modelledPct)),
            qPrintable(view.stepToolTip(0)));
        QVERIFY(!view.stepToolTip(1).contains(QStringLiteral("measured:")));
        QVERIFY(test::save_screenshot(&view, shots_, QStringLiteral("run-measured")));
    }

    void studioShowsTheSelectedRunsMeasuredPlans() {
        StudioWindow w(options_);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openLibrary(test::qpath(db_)));
        QAction* action = w.findChild<QAction*>(QStringLiteral("importMeasured"));
        QVERIFY(action && action->isEnabled());
        QVERIFY(w.selectRun(run_));
        QTRY_VERIFY_WITH_TIMEOUT(ui::planView(w)->plan() != nullptr, 60000);
        QTRY_COMPARE_WITH_TIMEOUT(ui::planView(w)->measuredPanel()->choiceCount(), 4, 30000);
        // The Compare tab: each method's measured step beside the modelled gain.
        const auto steps = storage::Library::open(db_, storage::OpenMode::ReadOnly)->measured_steps("syn", "w");
        QCOMPARE(steps.size(), std::size_t(1));
        const QAbstractItemModel* table = ui::compareView(w)->model();
        QTRY_VERIFY_WITH_TIMEOUT(table->index(3, CompareTableModel::MeasuredSeconds).data(RawValueRole).isValid(),
                                 30000);
        for (int k = 0; k < 4; ++k)
            QCOMPARE(table->index(k, CompareTableModel::MeasuredSeconds).data(RawValueRole).toDouble(),
                     steps[0].plans[static_cast<std::size_t>(k)].step_seconds);
        QCOMPARE(table->index(3, CompareTableModel::MeasuredVsBaseline).data(RawValueRole).toDouble(),
                 100.0 * (steps[0].plans[3].step_seconds - steps[0].plans[0].step_seconds) /
                     steps[0].plans[0].step_seconds);
        ui::resultTabs(w)->setCurrentWidget(ui::compareView(w));
        QTest::qWait(50);
        shot(&w, QStringLiteral("studio-compare-measured"));
        ui::resultTabs(w)->setCurrentWidget(ui::planView(w));
        ui::planView(w)->setCurrentWidget(ui::planView(w)->viewWidget(QStringLiteral("measured")));
        ui::planView(w)->measuredPanel()->setChoice(3);
        QTest::qWait(50);
        shot(&w, QStringLiteral("studio-measured"));
        action->trigger();
        auto* dialog = w.findChild<MeasuredImportDialog*>();
        QVERIFY(dialog && dialog->isVisible());
    }
};

QTEST_MAIN(TestViewsMeasured)
#include "tst_views_measured.moc"
