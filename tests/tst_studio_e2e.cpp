// The end-to-end walk-through on the real CSV set through the studio, offscreen:
// import ../shared/traces/deepseek-v2-lite through the import dialog's code path with the shipped
// DeepSeek-V2-Lite description, define the window of the first 512 samples, plan it in the background
// with the two shipped DeepSeek topologies, check that the studio's plans equal direct planner calls
// (exact scores) and that the views show the planner's numbers, compare the runs, rewrite a
// DeepSeek-V2-Lite-shaped checkpoint with the plan through the rewrite dialog (slots checked, inverse
// byte-identical), and write the
// screenshots of the real window (heatmaps, costs, grid, convergence, comparison) into
// $ROUTEPACK_SCREENSHOT_DIR (docs/screenshots come from here) or a temporary folder.
#include "core/model/window_select.h"
#include "core/plan/planner.h"
#include "gpu/safetensors/synth_checkpoint.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/rewrite_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/jobs/plan_jobs.h"
#include "views/library/sample_table_model.h"
#include "views/plan/plan_views.h"
#include "views/studio_window.h"

#include <QAbstractItemModel>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QtTest>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

class TestStudioEndToEnd : public QObject {
    Q_OBJECT
    QString shots_;

    void shot(QWidget* w, const QString& name) { QVERIFY2(test::save_screenshot(w, shots_, name), qPrintable(name)); }

    /// Every plan view and the comparison of `w` at 1600x1000, then the EP-rank and costs views at
    /// 1366x768 (the docs' screenshots of the real window).
    void shootPlanViews(StudioWindow& w) {
        w.selectRun(w.shownRunId());
        ui::resultTabs(w)->setCurrentWidget(ui::planView(w));
        for (const QString& name : ui::planView(w)->viewNames()) {
            ui::planView(w)->setCurrentWidget(ui::planView(w)->viewWidget(name));
            QTest::qWait(50);
            shot(&w, QStringLiteral("real-ds-") + name);
        }
        ui::resultTabs(w)->setCurrentWidget(ui::compareView(w));
        QTest::qWait(50);
        shot(&w, QStringLiteral("real-ds-compare"));
        // The same window on a 1366x768 screen.
        w.resize(1366, 768);
        ui::resultTabs(w)->setCurrentWidget(ui::planView(w));
        for (const QString& name : {QStringLiteral("ep-heatmap"), QStringLiteral("costs")}) {
            ui::planView(w)->setCurrentWidget(ui::planView(w)->viewWidget(name));
            QTest::qWait(50);
            shot(&w, QStringLiteral("real-ds-%1-1366x768").arg(name));
        }
        QCOMPARE(w.size(), QSize(1366, 768));
    }

private Q_SLOTS:
    void realWindowThroughTheStudio() {
        ROUTEPACK_REQUIRE_SHARED(ds, "traces/deepseek-v2-lite");
        QStandardPaths::setTestModeEnabled(true);
        const fs::path tmp = test::temp_dir(QStringLiteral("studio-e2e"));
        shots_ = test::screenshot_dir(test::qpath(tmp / "screenshots"));
        const fs::path lib = tmp / "real.routepack";

        // 1. Import through the dialog's worker, with the shipped model description.
        {
            ImportDialog dlg(test::qpath(lib));
            QSignalSpy detected(&dlg, &ImportDialog::formatDetected);
            dlg.setInputs({test::qpath(ds)});
            QTRY_COMPARE_WITH_TIMEOUT(detected.count(), 1, 60000);
            QCOMPARE(ui::detectedFormat(&dlg), QStringLiteral("prompt-csv"));
            dlg.setTraceName(QStringLiteral("ds"));
            dlg.setKnownModel(QStringLiteral("deepseek-v2-lite"));
            QSignalSpy finished(ui::job(&dlg), &ImportJob::finished);
            QVERIFY2(dlg.startImport(), qPrintable(ui::errorText(&dlg)));
            QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 300000);
            QCOMPARE(finished.at(0).at(1).value<ImportSummary>().samples, std::size_t(599));
        }
        // 2. The window of the first 512 samples in numeric id order (prompt_1_data .. prompt_513_data).
        {
            auto l = storage::Library::open(lib);
            const WindowSelection sel = select_first(l->samples("ds"), 512, "ds");
            QCOMPARE(sel.ids.front(), std::string("prompt_1_data"));
            QCOMPARE(sel.ids.back(), std::string("prompt_513_data"));
            l->create_window("ds", "step0", sel.ids, sel.definition);
        }

        // 3. Plan it from the studio with both shipped DeepSeek topologies (default budgets, 2 workers).
        QSettings(QStringLiteral("RoutePackTest"), QStringLiteral("tst_studio_e2e")).clear();
        StudioOptions options;
        options.settingsOrganization = QStringLiteral("RoutePackTest");
        options.settingsApplication = QStringLiteral("tst_studio_e2e");
        StudioWindow w(options);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QString err;
        QVERIFY2(w.openLibrary(test::qpath(lib), false, &err), qPrintable(err));
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QVERIFY(w.selectWindow(QStringLiteral("ds"), QStringLiteral("step0")));
        QTRY_COMPARE_WITH_TIMEOUT(ui::sampleModel(w)->rowCount(), 512, 60000);
        const Trace window = storage::Library::open(lib, storage::OpenMode::ReadOnly)->load_window("ds", "step0");

        struct Case {
            const char* preset;
            int rows;
        } cases[] = {{"deepseek-v2-lite-ep16-dp8", 2}, {"deepseek-v2-lite-ep8-dp4", 4}};
        QSignalSpy shown(&w, &StudioWindow::planShown);
        for (const Case& c : cases) {
            QVERIFY(ui::topologyEditor(w)->selectPreset(QString::fromLatin1(c.preset)));
            PlannerBudgets b; // the defaults of `routepack plan`, on 2 workers as in docs/cli.md's figures
            b.workers = 2;
            ui::topologyEditor(w)->setBudgets(b);
            const int before = static_cast<int>(shown.count());
            QVERIFY2(w.runPlanner() > 0, qPrintable(w.statusText()));
            QTRY_VERIFY_WITH_TIMEOUT(shown.count() > before, 600000);
            QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 60000);
            const auto plan = ui::planView(w)->plan();
            QVERIFY(plan);
            // The same inputs through the planner directly: the same plan (scores exact).
            PlanInput in;
            in.window = window;
            in.trace_name = "ds";
            in.window_name = "step0";
            in.topology = known_topology(c.preset);
            in.budgets = b;
            const PlanResult direct = plan_window(in);
            QCOMPARE(plan->rows.rows, c.rows);
            QVERIFY(plan->rows.certified);
            QCOMPARE(plan->routepack.metrics.score.max_u, direct.routepack.metrics.score.max_u);
            QCOMPARE(plan->routepack.metrics.score.sum_u, direct.routepack.metrics.score.sum_u);
            QCOMPARE(plan->reorder.metrics.score.max_u, direct.reorder.metrics.score.max_u);
            QCOMPARE(plan->karmarkar_karp.metrics.score.max_u, direct.karmarkar_karp.metrics.score.max_u);
            QCOMPARE(plan->placement.cv_lpt, direct.placement.cv_lpt);
            qInfo("studio ds step0 %s: R* %d, reorder %.4f -> routepack %.4f (%.2f%%), KK %.4f", c.preset,
                  plan->rows.rows, plan->reorder.metrics.score.max_u, plan->routepack.metrics.score.max_u,
                  100.0 * (plan->routepack.metrics.score.max_u / plan->reorder.metrics.score.max_u - 1.0),
                  plan->karmarkar_karp.metrics.score.max_u);
        }
        // docs/cli.md's figures for EP 8 / DP 4 (the plan shown last): reorder 252.95 -> routepack 222.06.
        const auto plan = ui::planView(w)->plan();
        QCOMPARE(QString::number(plan->reorder.metrics.score.max_u, 'f', 2), QStringLiteral("252.95"));
        QCOMPARE(QString::number(plan->routepack.metrics.score.max_u, 'f', 2), QStringLiteral("222.06"));

        // 4. The views show the planner's numbers: the compare table lists both runs' four methods.
        QAbstractItemModel* cmp = ui::compareView(w)->model();
        w.compareSavedRuns();
        QTRY_COMPARE_WITH_TIMEOUT(cmp->rowCount(), 8, 600000);
        QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 600000);
        int routepack_rows = 0;
        for (int r = 0; r < cmp->rowCount(); ++r) {
            const QString method = cmp->index(r, 1).data().toString();
            if (method != QStringLiteral("RoutePack")) continue;
            const double joint = cmp->index(r, 3).data(Qt::UserRole).toDouble();
            QVERIFY2(QString::number(joint, 'f', 2) == QStringLiteral("222.06") ||
                         QString::number(joint, 'f', 2) == QStringLiteral("112.01"),
                     qPrintable(QString::number(joint, 'f', 4)));
            ++routepack_rows;
        }
        QCOMPARE(routepack_rows, 2);

        // 5. Screenshots of the real window for the README and docs/studio.md.
        shootPlanViews(w);
        if (QTest::currentTestFailed()) return;

        // 6. Step 5 from the studio: rewrite a DeepSeek-V2-Lite-shaped checkpoint with the shown plan
        //    (EP 8 / DP 4) through the rewrite dialog, check every slot, invert back to byte equality.
        gpu::SynthCheckpointConfig cc;
        gpu::write_synth_checkpoint(cc, tmp / "ckpt");
        RewriteDialog* dlg = w.showRewriteDialog();
        QVERIFY(dlg);
        auto run_dialog = [&](const fs::path& in, const fs::path& out, bool inverse) {
            dlg->setInput(test::qpath(in));
            dlg->setOutput(test::qpath(out));
            dlg->setInverse(inverse);
            dlg->setDevice(QStringLiteral("cpu"));
            dlg->setVerify(true);
            QSignalSpy done(dlg, &RewriteDialog::rewritten);
            QVERIFY2(dlg->startRewrite(), qPrintable(ui::errorText(dlg)));
            QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 300000);
            QVERIFY(ui::lastOutcome(dlg).has_value());
        };
        run_dialog(tmp / "ckpt", tmp / "ckpt-physical", false);
        const gpu::SynthSlotCheck phys = gpu::check_synth_checkpoint(tmp / "ckpt-physical");
        QCOMPARE(phys.tensors, 26 * 64 * 3);
        QCOMPARE(phys.order, std::string("physical"));
        shot(dlg, QStringLiteral("real-ds-rewrite"));
        run_dialog(tmp / "ckpt-physical", tmp / "ckpt-logical", true);
        for (const auto& de : fs::directory_iterator(tmp / "ckpt"))
            QVERIFY2(test::read_file(de.path()) == test::read_file(tmp / "ckpt-logical" / de.path().filename()),
                     qPrintable(test::qpath(de.path().filename())));
        dlg->close();
        w.close();
        QSettings(options.settingsOrganization, options.settingsApplication).clear();
        fs::remove_all(tmp);
    }
};

QTEST_MAIN(TestStudioEndToEnd)
#include "tst_studio_e2e.moc"
