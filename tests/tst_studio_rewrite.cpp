// The studio's checkpoint rewrite (gpu/rewrite.h) with progress, offscreen, driven through the dialog's worker API (no
// modal exec): Check reports what gpu::plan_rewrite reports; a rewrite to completion with progress signals writes the
// same bytes as a direct gpu::rewrite_checkpoint call; the inverse from the dialog gives the source back byte for byte;
// a bad layer map and a mismatched plan show the library's exact error and write nothing; a cancelled rewrite leaves no
// output. The studio's Plan menu opens the dialog with the selected saved run's plan, and selecting that run loads its
// topology and budgets into the editor. Screenshots via QWidget::grab into $ROUTEPACK_SCREENSHOT_DIR or a temporary
// folder.
#include "core/model/model.h"
#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "gpu/rewrite.h"
#include "gpu/rewrite/request.h"
#include "storage/demo.h"
#include "tests/gui_testutil.h"
#include "tests/rewrite_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/rewrite_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/plan/plan_views.h"
#include "views/studio_window.h"
#include "views/widgets/gui_text.h"

#include <QAction>
#include <QApplication>
#include <QElapsedTimer>
#include <QProgressBar>
#include <QStandardPaths>
#include <QtTest>

#include <map>

#include <sys/stat.h>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;
using routepack::test::qpath;
using routepack::test::read_file;
using routepack::test::temp_dir;

namespace {

/// The model a checkpoint folder describes (its config.json).
ModelDescription model_of(const fs::path& dir) {
    return model_from_hf_config(read_file(dir / "config.json"), (dir / "config.json").string());
}

/// A real plan for a checkpoint's model (EP 4, short budget).
std::string plan_json_for(const ModelDescription& m) {
    return routepack::test::plan_json_for_model(m, 4);
}

/// Every regular file under `dir`, by relative path, with its bytes.
std::map<std::string, std::string> files_of(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& de : fs::recursive_directory_iterator(dir))
        if (de.is_regular_file()) out[fs::relative(de.path(), dir).string()] = read_file(de.path());
    return out;
}

/// Partial (temporary) rewrite folders left in `dir`.
int partial_folders(const fs::path& dir) {
    int n = 0;
    for (const auto& de : fs::directory_iterator(dir))
        if (de.path().filename().string().find("routepack-partial") != std::string::npos) ++n;
    return n;
}

/// The message of the InputError `fn` throws, the library's (what()) or the studio's words
/// (guiErrorText); "" when it does not throw.
template <class Fn> QString error_of(Fn&& fn, bool studio = false) {
    try {
        fn();
    } catch (const InputError& e) {
        return studio ? guiErrorText(e) : QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestStudioRewrite : public QObject {
    Q_OBJECT

    fs::path tmp_;
    QString shots_;
    void shot(QWidget* w, const QString& name) { QVERIFY2(test::save_screenshot(w, shots_, name), qPrintable(name)); }

    /// A dialog on `plan_json` rewriting `input` into `output` on the CPU (verify on, the default).
    static void fill(RewriteDialog& d, const QString& planJson, const QString& origin, const fs::path& input,
                     const fs::path& output) {
        QVERIFY(d.setPlanJson(planJson, origin));
        d.setInput(qpath(input));
        d.setOutput(qpath(output));
        d.setDevice(QStringLiteral("cpu"));
    }

    /// The request `routepack rewrite` would build for the same plan and fields.
    static gpu::RewriteRequest direct_request(const std::string& planJson, const std::string& origin,
                                              const fs::path& input, const fs::path& output, bool inverse) {
        gpu::RewriteRequest r = gpu::request_from_plan(gpu::parse_plan_text(planJson, origin), origin);
        r.input = input;
        r.output = output;
        r.direction = inverse ? gpu::RewriteDirection::Inverse : gpu::RewriteDirection::Apply;
        r.device = gpu::RewriteDevice::Cpu;
        r.verify = true;
        return r;
    }

    /// Runs the dialog's rewrite to its end; the finished outcome (fails the test otherwise).
    static bool rewrite_to_end(RewriteDialog& d, int* progressSignals = nullptr, QString* lastStage = nullptr,
                               double* lastFraction = nullptr) {
        QSignalSpy progress(d.job(), &RewriteJob::progress);
        QSignalSpy finished(d.job(), &RewriteJob::finished);
        QSignalSpy failed(d.job(), &RewriteJob::failed);
        if (!d.startRewrite()) return false;
        if (!d.job()->isRunning()) return false;
        if (!QTest::qWaitFor([&] { return finished.count() + failed.count() > 0; }, 60000)) return false;
        if (failed.count() > 0) qWarning("rewrite failed: %s", qPrintable(failed.first().at(0).toString()));
        if (progressSignals) *progressSignals = static_cast<int>(progress.count());
        if (lastStage && !progress.isEmpty()) *lastStage = progress.last().at(0).toString();
        if (lastFraction && !progress.isEmpty()) *lastFraction = progress.last().at(1).toDouble();
        return finished.count() == 1 && !d.job()->isRunning();
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        tmp_ = temp_dir(QStringLiteral("studio-rewrite"));
        shots_ = routepack::test::screenshot_dir(qpath(tmp_ / "screenshots"));
    }

    void cleanupTestCase() {
        std::error_code ec;
        fs::remove_all(tmp_, ec);
    }

    void planFileMustBeARegularFile() {
        // A folder or a FIFO given as the plan file is refused unread (a FIFO would block the GUI
        // thread), in words; a missing file keeps the library's message.
        const fs::path dir = tmp_ / "odd-plans";
        fs::create_directories(dir / "plan.json");
        const fs::path fifo = dir / "plan.fifo";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        RewriteDialog d;
        QVERIFY(!d.loadPlanFile(qpath(dir / "plan.json")));
        QCOMPARE(ui::errorText(&d), qpath(dir / "plan.json") + QStringLiteral(": is a folder, not a plan file"));
        QCOMPARE(d.statusText(), QStringLiteral("Cannot use the plan: ") + ui::errorText(&d));
        QElapsedTimer timer;
        timer.start();
        QVERIFY(!d.loadPlanFile(qpath(fifo)));
        QVERIFY2(timer.elapsed() < 1000, qPrintable(QString::number(timer.elapsed())));
        QCOMPARE(ui::errorText(&d), qpath(fifo) + QStringLiteral(": is a pipe (FIFO), not a plan file"));
        QVERIFY(!d.hasPlan());
        QVERIFY(!d.loadPlanFile(qpath(dir / "missing.json")));
        QCOMPARE(ui::errorText(&d), qpath(dir / "missing.json") + QStringLiteral(": no such plan file"));
    }

    void mapFileBuildsThePlansRequest() {
        // An expert map (here the vLLM export of a plan: rows = MoE layers, ids from the checkpoint's
        // config.json) in place of the plan: the dialog's request carries the plan's placement and
        // layers, as `routepack rewrite --map` builds it; a map with replicas is refused in words.
        ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
        const fs::path src = root / "checkpoint";
        const std::string plan = plan_json_for(model_of(src));
        const PlanFile pf = gpu::parse_plan_text(plan, "p.json");
        const fs::path dir = tmp_ / "map";
        fs::create_directories(dir);
        routepack::test::write_file(dir / "vllm.json", expert_map_json(pf.placement, pf.model, ExpertMapFormat::VLLM));
        RewriteDialog d;
        QVERIFY(d.loadMapFile(qpath(dir / "vllm.json")));
        QVERIFY(d.hasMap() && !d.hasPlan());
        d.setInput(qpath(src));
        d.setOutput(qpath(dir / "out"));
        QString why;
        const auto r = d.request(&why);
        QVERIFY2(r.has_value(), qPrintable(why));
        QCOMPARE(r->placement.slot, pf.placement.slot);
        QCOMPARE(r->plan_layers, pf.model.moe_layers);
        QCOMPARE(r->plan_origin, (dir / "vllm.json").string());
        // Loading a plan drops the map.
        QVERIFY(d.setPlanJson(QString::fromStdString(plan), QStringLiteral("p.json")));
        QVERIFY(!d.hasMap());
        routepack::test::write_file(dir / "rep.json", R"({"physical_to_logical_map": [[0, 1, 0]]})");
        QVERIFY(!d.loadMapFile(qpath(dir / "rep.json")));
        QCOMPARE(ui::errorText(&d),
                 qpath(dir / "rep.json") +
                     QStringLiteral(": physical_to_logical_map[0] has 3 physical slots for 2 logical "
                                    "experts (expert 0 is in slots 0 and 2, and no row names expert "
                                    "2): either expert 2 is missing, or the map has replicas "
                                    "(redundant experts), which cannot rewrite a checkpoint that holds "
                                    "each expert once"));
        QVERIFY(!d.hasMap() && !d.hasPlan());
    }

    void checkReportsThePlan() {
        ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
        const fs::path src = root / "checkpoint";
        const std::string plan = plan_json_for(model_of(src));
        const fs::path dir = tmp_ / "check";
        fs::create_directories(dir);
        RewriteDialog d;
        fill(d, QString::fromStdString(plan), QStringLiteral("test plan"), src, dir / "out");
        QVERIFY(d.hasPlan());
        // The request is the CLI's for the same plan and fields.
        QString why;
        const auto rq = d.request(&why);
        QVERIFY2(rq, qPrintable(why));
        const gpu::RewriteRequest direct = direct_request(plan, "test plan", src, dir / "out", false);
        QCOMPARE(rq->placement.slot, direct.placement.slot);
        QCOMPARE(rq->plan_layers, direct.plan_layers);
        QCOMPARE(rq->plan_fingerprint, direct.plan_fingerprint);
        QCOMPARE(rq->plan_origin, std::string("test plan"));
        QVERIFY(rq->verify); // on by default
        QVERIFY(rq->layer_map.empty());

        QSignalSpy checked(d.job(), &RewriteJob::checked);
        QVERIFY(d.startCheck());
        QTRY_COMPARE_WITH_TIMEOUT(checked.count(), 1, 60000);
        QVERIFY(ui::lastCheck(&d));
        const RewriteCheck& c = *ui::lastCheck(&d);
        QVERIFY2(c.ok, qPrintable(c.error));
        const gpu::RewritePlan p = gpu::plan_rewrite(direct);
        QCOMPARE(c.scheme, QStringLiteral("hf-per-expert"));
        QCOMPARE(c.checkpointLayers, (std::vector<int>{1, 2}));
        QCOMPARE(c.experts, 16);
        QCOMPARE(c.movedTensors, p.moved_tensors);
        QVERIFY(c.movedTensors > 0);
        QCOMPARE(c.movedBytes, static_cast<quint64>(p.moved_bytes));
        QCOMPARE(c.totalBytes, static_cast<quint64>(p.total_bytes));
        QCOMPARE(c.shards, 3);
        QCOMPARE(c.placementFingerprint, QString::fromStdString(p.placement_fingerprint));
        const QString text = d.summaryText();
        QVERIFY2(text.contains(QStringLiteral("hf-per-expert, 3 safetensors file(s)")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("MoE layers\t1-2")) || text.contains(QStringLiteral("MoE layers 1-2")) ||
                     text.contains(QStringLiteral("1-2 (layer map: same ids)")),
                 qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("16 per MoE layer")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("%1 of %2 expert-indexed tensors")
                                   .arg(p.moved_tensors)
                                   .arg(p.expert_tensors + p.router_tensors)),
                 qPrintable(text));
        QVERIFY2(d.statusText().startsWith(QStringLiteral("Check passed")), qPrintable(d.statusText()));
        QVERIFY(ui::errorText(&d).isEmpty());
        QVERIFY(!fs::exists(dir / "out")); // Check writes nothing
        QCOMPARE(partial_folders(dir), 0);
        // Changing a field drops the check (it described other fields).
        d.setInverse(true);
        QVERIFY(!ui::lastCheck(&d));
    }

    void rewriteEqualsDirectAndInverseGivesSourceBack() {
        ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
        const fs::path src = root / "checkpoint";
        const std::string plan = plan_json_for(model_of(src));
        const fs::path dir = tmp_ / "rewrite";
        fs::create_directories(dir);
        const QString origin = QStringLiteral("run 7 in test.routepack");

        RewriteDialog d;
        d.show();
        fill(d, QString::fromStdString(plan), origin, src, dir / "dialog");
        int progressSignals = 0;
        QString stage;
        double fraction = -1;
        QVERIFY(rewrite_to_end(d, &progressSignals, &stage, &fraction));
        QVERIFY(progressSignals >= 2); // the write and the verify stage, each to its end
        QCOMPARE(stage, QStringLiteral("verify"));
        QCOMPARE(fraction, 1.0);
        QCOMPARE(ui::progressBar(&d)->value(), 1000);
        QVERIFY(ui::lastOutcome(&d));
        const RewriteOutcome& o = *ui::lastOutcome(&d);
        QCOMPARE(o.output, qpath(dir / "dialog"));
        QCOMPARE(QString::fromStdString(o.report.device), QStringLiteral("cpu"));
        QVERIFY(o.report.verified);
        QVERIFY(o.report.bytes_written > 0);
        QCOMPARE(o.check.scheme, QStringLiteral("hf-per-expert"));
        QCOMPARE(d.statusText(), QStringLiteral("Rewrote the checkpoint into %1.").arg(qpath(dir / "dialog")));
        const QString text = d.summaryText();
        for (const QString& s : {QStringLiteral("Rewrite complete"), QStringLiteral("cpu"), QStringLiteral("GB/s"),
                                 QStringLiteral("yes: every output file equals its planned source bytes"),
                                 qpath(dir / "dialog" / gpu::kRewriteSidecar)})
            QVERIFY2(text.contains(s), qPrintable(s + QStringLiteral(" not in: ") + text));
        QTest::qWait(50);
        shot(&d, QStringLiteral("rewrite-dialog-done"));
        {
            // The same in a dark palette.
            const QPalette light = d.palette();
            const QPalette dark = routepack::test::dark_palette();
            d.setPalette(dark);
            QTest::qWait(50);
            shot(&d, QStringLiteral("rewrite-dialog-done-dark"));
            d.setPalette(light);
        }

        // Byte for byte the output of a direct rewrite_checkpoint call with the same request.
        const gpu::RewriteReport direct =
            gpu::rewrite_checkpoint(direct_request(plan, origin.toStdString(), src, dir / "direct", false));
        QCOMPARE(direct.bytes_written, o.report.bytes_written);
        const auto a = files_of(dir / "dialog");
        const auto b = files_of(dir / "direct");
        QCOMPARE(a.size(), b.size());
        for (const auto& [name, bytes] : b) {
            QVERIFY2(a.count(name), name.c_str());
            QVERIFY2(a.at(name) == bytes, name.c_str());
        }
        // Something moved: the rewritten shards differ from the source.
        QVERIFY(a.at("model-00002-of-00003.safetensors") != read_file(src / "model-00002-of-00003.safetensors"));

        // The inverse from the dialog gives every source file back byte for byte (plus the sidecar).
        RewriteDialog inv;
        fill(inv, QString::fromStdString(plan), origin, dir / "dialog", dir / "back");
        inv.setInverse(true);
        QVERIFY(rewrite_to_end(inv));
        QVERIFY(ui::lastOutcome(&inv)->report.verified);
        const auto back = files_of(dir / "back");
        const auto source = files_of(src);
        QCOMPARE(back.size(), source.size() + 1);
        QVERIFY(back.count(gpu::kRewriteSidecar));
        for (const auto& [name, bytes] : source) {
            QVERIFY2(back.count(name), name.c_str());
            QVERIFY2(back.at(name) == bytes, name.c_str());
        }
        QCOMPARE(partial_folders(dir), 0);
    }

    void badLayerMapShowsTheParseError() {
        ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
        const fs::path src = root / "checkpoint";
        const std::string plan = plan_json_for(model_of(src));
        const fs::path dir = tmp_ / "layermap";
        fs::create_directories(dir);
        RewriteDialog d;
        d.show();
        fill(d, QString::fromStdString(plan), QStringLiteral("test plan"), src, dir / "out");
        for (const QString& bad : {QStringLiteral("1-2:x"), QStringLiteral("1:5,2:5"), QStringLiteral("1:0,")}) {
            // The core's words name the setting ("layer map: ..."); the dialog names its field.
            const QString lib = error_of([&] { gpu::parse_layer_map(bad.toStdString(), {1, 2}); });
            QVERIFY2(lib.startsWith(QStringLiteral("layer map: ")), qPrintable(lib));
            const QString expected = QStringLiteral("\"Layer map\": ") + lib.mid(11);
            QCOMPARE(error_of([&] { gpu::parse_layer_map(bad.toStdString(), {1, 2}); }, true), expected);
            d.setLayerMap(bad);
            QCOMPARE(ui::layerMapError(&d), expected); // shown inline as typed
            QVERIFY(!d.startCheck());
            QCOMPARE(ui::errorText(&d), expected);
            QCOMPARE(d.statusText(), expected);
            QVERIFY(!d.startRewrite());
            QCOMPARE(ui::errorText(&d), expected);
            QVERIFY(!d.job()->isRunning());
        }
        QTest::qWait(50);
        shot(&d, QStringLiteral("rewrite-dialog-bad-layer-map"));
        // A valid map clears the error; the identity map checks as before.
        d.setLayerMap(QStringLiteral("1-2:1"));
        QCOMPARE(ui::layerMapError(&d), QString());
        QString why;
        const auto rq = d.request(&why);
        QVERIFY2(rq, qPrintable(why));
        QCOMPARE(rq->layer_map, (std::map<int, int>{{1, 1}, {2, 2}}));
        QVERIFY(!fs::exists(dir / "out"));
        QCOMPARE(partial_folders(dir), 0);
    }

    void mismatchedPlanIsRefusedBeforeWriting() {
        ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
        const fs::path src = root / "checkpoint";
        ModelDescription m = model_of(src);
        m.experts = 32; // the checkpoint has 16
        const std::string plan = plan_json_for(m);
        const fs::path dir = tmp_ / "mismatch";
        fs::create_directories(dir);
        const std::string origin = "plan-e32.json";
        const QString expected =
            error_of([&] { gpu::plan_rewrite(direct_request(plan, origin, src, dir / "out", false)); }, true);
        QVERIFY(expected.contains(QStringLiteral("32 experts")));

        RewriteDialog d;
        d.show();
        fill(d, QString::fromStdString(plan), QString::fromStdString(origin), src, dir / "out");
        QSignalSpy checked(d.job(), &RewriteJob::checked);
        QVERIFY(d.startCheck());
        QTRY_COMPARE_WITH_TIMEOUT(checked.count(), 1, 60000);
        const auto c = checked.first().at(0).value<RewriteCheck>();
        QVERIFY(!c.ok);
        QCOMPARE(c.error, expected);
        QVERIFY(!ui::lastCheck(&d));
        QCOMPARE(ui::errorText(&d), expected);
        QCOMPARE(d.statusText(), QStringLiteral("The rewrite would be refused: ") + expected);
        QVERIFY(d.summaryText().contains(expected));
        QTest::qWait(50);
        shot(&d, QStringLiteral("rewrite-dialog-refused"));

        QSignalSpy failed(d.job(), &RewriteJob::failed);
        QSignalSpy finished(d.job(), &RewriteJob::finished);
        QVERIFY(d.startRewrite());
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
        QCOMPARE(failed.first().at(0).toString(), expected);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(ui::errorText(&d), expected);
        QCOMPARE(d.statusText(), QStringLiteral("Rewrite failed; nothing was written: ") + expected);
        QVERIFY(!fs::exists(dir / "out"));
        QCOMPARE(partial_folders(dir), 0);
    }

    void cancelledRewriteLeavesNoOutput() {
        ROUTEPACK_REQUIRE_SHARED(root, "checkpoints/qwen3_moe");
        const fs::path src = root / "checkpoint";
        const std::string plan = plan_json_for(model_of(src));
        const fs::path dir = tmp_ / "cancel";
        fs::create_directories(dir);
        RewriteDialog d;
        fill(d, QString::fromStdString(plan), QStringLiteral("test plan"), src, dir / "out");
        // Cancelled from the rewrite's first progress callback (the write stage's end): the verify stage
        // sees the flag, the temporary folder is removed.
        d.job()->setCancelAtFirstProgressForTesting(true);
        QSignalSpy cancelled(d.job(), &RewriteJob::cancelled);
        QSignalSpy finished(d.job(), &RewriteJob::finished);
        QSignalSpy failed(d.job(), &RewriteJob::failed);
        QVERIFY(d.startRewrite());
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 60000);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(failed.count(), 0);
        QVERIFY(!d.job()->isRunning());
        QVERIFY(!fs::exists(dir / "out"));
        QCOMPARE(partial_folders(dir), 0);
        QVERIFY2(d.statusText().contains(QStringLiteral("cancelled; nothing was written")), qPrintable(d.statusText()));
        QVERIFY(ui::errorText(&d).isEmpty());
        QVERIFY(!ui::lastOutcome(&d));

        // Cancelled at once from the GUI thread: either it was cancelled (nothing there) or it had
        // already finished (a complete, verified output) — never anything in between.
        d.job()->setCancelAtFirstProgressForTesting(false);
        QVERIFY(d.startRewrite());
        d.cancelRewrite();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count() + finished.count() + failed.count(), 2, 60000);
        QCOMPARE(failed.count(), 0);
        if (cancelled.count() == 2) {
            QVERIFY(!fs::exists(dir / "out"));
        } else {
            QVERIFY(ui::lastOutcome(&d) && ui::lastOutcome(&d)->report.verified);
            QVERIFY(fs::exists(dir / "out" / gpu::kRewriteSidecar));
        }
        QCOMPARE(partial_folders(dir), 0);
    }

    void studioOpensTheDialogWithTheSelectedRun() {
        const fs::path dir = tmp_ / "studio";
        PlannerBudgets b;
        b.annealing.levels = 6;
        b.annealing.steps = 200;
        b.seeding.candidates = 8;
        b.seeding.population = 4;
        b.workers = 2;
        b.seed = 7;
        const storage::DemoBuild demo = storage::build_demo(dir / "demo", b);
        StudioOptions options;
        options.settingsOrganization = QStringLiteral("RoutePackTest");
        options.settingsApplication = QStringLiteral("tst_studio_rewrite");
        StudioWindow w(options);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(w.openLibrary(qpath(demo.library)));

        QAction* rewrite = nullptr;
        for (QAction* a : w.findChildren<QAction*>())
            if (a->shortcut() == QKeySequence(QStringLiteral("Ctrl+Shift+W"))) rewrite = a;
        // An explicit branch, not QVERIFY: the analyzer cannot see that QVERIFY returns on null.
        if (!rewrite) QFAIL("no action with the Ctrl+Shift+W shortcut");
        QVERIFY(!rewrite->isEnabled()); // no plan shown yet
        QVERIFY(!w.showRewriteDialog());

        // Another topology and other budgets in the editor; selecting the run brings back its own.
        QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("llama4-maverick-ep8-dp4")));
        QVERIFY(*ui::topologyEditor(w)->topology() != demo.run.topology_value);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.selectRun(demo.run.id));
        QString why;
        const auto topo = ui::topologyEditor(w)->topology(&why);
        QVERIFY2(topo, qPrintable(why));
        QVERIFY(*topo == demo.run.topology_value);
        QCOMPARE(ui::topologyEditor(w)->topologyName(), QString::fromStdString(demo.run.topology));
        const PlannerBudgets eb = ui::topologyEditor(w)->budgets();
        QCOMPARE(eb.seed, demo.run.budgets.seed);
        QCOMPARE(eb.workers, demo.run.budgets.workers);
        QCOMPARE(eb.annealing.levels, demo.run.budgets.annealing.levels);
        QCOMPARE(eb.annealing.steps, demo.run.budgets.annealing.steps);
        QCOMPARE(eb.seeding.candidates, demo.run.budgets.seeding.candidates);
        QCOMPARE(eb.seeding.population, demo.run.budgets.seeding.population);

        // Once its plan is shown, Plan > Rewrite checkpoint opens the dialog with the run's stored plan.
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() >= 1, 300000);
        QVERIFY(rewrite->isEnabled());
        rewrite->trigger();
        RewriteDialog* d = ui::rewriteDialog(w);
        QVERIFY(d);
        QVERIFY(d->isVisible());
        QVERIFY(d->hasPlan());
        QCOMPARE(ui::planOrigin(d),
                 QStringLiteral("run %1 in %2").arg(demo.run.id).arg(QString::fromLatin1(storage::kDemoLibraryFile)));
        QCOMPARE(ui::plan(d)->fingerprint, demo.plan.fingerprint);
        QCOMPARE(ui::plan(d)->placement.slot, demo.plan.placement.lpt.slot);
        QCOMPARE(ui::plan(d)->model.moe_layers, demo.plan.model.moe_layers);
        QTRY_VERIFY_WITH_TIMEOUT(!ui::deviceDescription(d).isEmpty(), 60000);
        QTest::qWait(50);
        shot(d, QStringLiteral("rewrite-dialog-from-studio"));
        d->close();
        w.close();
    }
};

QTEST_MAIN(TestStudioRewrite)
#include "tst_studio_rewrite.moc"
