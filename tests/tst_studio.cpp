// The studio, offscreen: import of a real trace through the import dialog's code path
// (its ImportJob worker, no modal exec), cancelled and failed imports leave the library unchanged,
// the sample table's numbers, planner jobs to completion (equal to a direct plan_window call),
// cancelled, stale and failed jobs, QAbstractItemModelTester on every model and proxy, the main
// window (screenshots via QWidget::grab into $ROUTEPACK_SCREENSHOT_DIR or a temporary folder), and
// the headless mode of the built routepack-studio binary as a child process.
#include "core/plan/plan_file.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "storage/demo.h"
#include "storage/library.h"
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "tests/testutil.h"
#include "views/dialogs/import_dialog.h"
#include "views/dialogs/topology_editor.h"
#include "views/dialogs/window_dialog.h"
#include "views/jobs/plan_jobs.h"
#include "views/library/length_histogram_view.h"
#include "views/library/library_tree_model.h"
#include "views/library/sample_table_model.h"
#include "views/plan/convergence_panel.h"
#include "views/plan/costs_panel.h"
#include "views/plan/ep_heatmap_panel.h"
#include "views/plan/gain_explanation.h"
#include "views/plan/grid_panel.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_views.h"
#include "views/plan/row_heatmap_panel.h"
#include "views/studio_app.h"
#include "views/studio_window.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStyle>
#include <QTableView>
#include <QThreadPool>
#include <QTimer>
#include <QTreeView>
#include <QtTest>

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace routepack;
using namespace routepack::views;
namespace fs = std::filesystem;

namespace {
constexpr auto& q = test::qpath; // a path as QString

/// Texts of every QLabel under `w`.
QStringList labelTexts(const QWidget& w) {
    QStringList out;
    for (const QLabel* l : w.findChildren<QLabel*>())
        out << l->text();
    return out;
}

/// The line edit under `w` whose text satisfies `pick` (nullptr when none).
template <class Pick> QLineEdit* lineEdit(const QWidget& w, Pick pick) {
    for (QLineEdit* e : w.findChildren<QLineEdit*>())
        if (pick(e->text())) return e;
    return nullptr;
}

/// A second SQLite connection that holds a library's write lock (BEGIN IMMEDIATE) until release()
/// or destruction, as another process (an import, a second studio) would.
struct WriteLockHolder {
    sqlite3* db = nullptr;
    explicit WriteLockHolder(const fs::path& file) {
        if (sqlite3_open_v2(file.string().c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK ||
            sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
            qFatal("cannot lock %s", file.string().c_str());
    }
    void release() {
        if (db) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close_v2(db);
        db = nullptr;
    }
    ~WriteLockHolder() { release(); }
};

PlannerBudgets small_budgets() {
    PlannerBudgets b;
    b.annealing.levels = 6;
    b.annealing.steps = 200;
    b.seeding.candidates = 8;
    b.seeding.population = 4;
    b.workers = 2;
    b.seed = 7;
    return b;
}

} // namespace

class TestStudio : public test::StudioTestBase {
    Q_OBJECT

    fs::path mavLib_; ///< maverick imported through the dialog (empty when shared/ is absent)

    fs::path synthLibrary(const QString& tag) { return test::synth_library(test::temp_dir(tag), 4, 8); }

    PlanJobRequest request(const fs::path& lib, const QString& trace, const QString& window, const Topology& t,
                           const PlannerBudgets& b) {
        PlanJobRequest r;
        r.library = q(lib);
        r.trace = trace;
        r.window = window;
        r.topologyName = QStringLiteral("test-topology");
        r.topology = t;
        r.budgets = b;
        return r;
    }

private Q_SLOTS:
    void initTestCase() { initStudioTest(QStringLiteral("tst_studio"), QStringLiteral("studio")); }

    void cleanupTestCase() { clearStudioSettings(); }

    // --- Import through the dialog's code path ---

    // A padded batch: the format box says which stack wrote it (the arrays beside routed_experts).
    void importDialogNamesBatchStack() {
        const auto folder = tmp_ / "r3-batch";
        std::filesystem::create_directories(folder);
        test::write_file(folder / "routed_experts.npy", "x");
        test::write_file(folder / "r3_routing_valid.npy", "x");
        ImportDialog dlg(q(tmp_ / "batch.routepack"));
        QSignalSpy detected(&dlg, &ImportDialog::formatDetected);
        dlg.setInputs({q(folder)});
        QTRY_COMPARE_WITH_TIMEOUT(detected.count(), 1, 30000);
        QCOMPARE(ui::detectedFormat(&dlg), QStringLiteral("npz"));
        QCOMPARE(ui::detectedStack(&dlg),
                 QStringLiteral("AReaL padded batch (routed_experts, r3_routing_valid) in a folder of .npy files"));
        std::filesystem::remove(folder / "r3_routing_valid.npy");
        test::write_file(folder / "attention_mask.npy", "x");
        dlg.setInputs({q(folder)});
        QTRY_COMPARE_WITH_TIMEOUT(detected.count(), 2, 30000);
        QCOMPARE(ui::detectedStack(&dlg),
                 QStringLiteral("verl padded batch (routed_experts, attention_mask) in a folder of .npy files"));
    }

    void importRealTraceThroughDialog() {
        ROUTEPACK_REQUIRE_SHARED(mav, "traces/llama4-maverick");
        const auto lib = tmp_ / "maverick.routepack";
        ImportDialog dlg(q(lib));
        QSignalSpy detected(&dlg, &ImportDialog::formatDetected);
        dlg.setInputs({q(mav)});
        QTRY_COMPARE_WITH_TIMEOUT(detected.count(), 1, 30000);
        QCOMPARE(ui::detectedFormat(&dlg), QStringLiteral("step-json"));
        QCOMPARE(ui::detectedStack(&dlg), QStringLiteral("per-request step JSON (llama4-maverick set)"));
        {
            // The format box names the detected format and its stack; it offers every format.
            QComboBox* box = nullptr;
            for (QComboBox* c : dlg.findChildren<QComboBox*>())
                if (c->count() > 0 && c->itemData(0).toString() == QStringLiteral("auto")) box = c;
            if (!box) QFAIL("no format box"); // (QVERIFY returns too, but the analyzer cannot see it)
            QCOMPARE(box->itemText(0),
                     QStringLiteral("Auto-detect (detected: step-json, per-request step JSON (llama4-maverick set))"));
            QCOMPARE(box->count(), static_cast<int>(trace_format_names().size()));
            QVERIFY(box->findData(QStringLiteral("megatron")) > 0);
        }
        QCOMPARE(dlg.traceName(), QStringLiteral("llama4-maverick")); // proposed from the folder name
        dlg.setTraceName(QStringLiteral("maverick"));
        // Errors in words, before anything runs.
        dlg.setModelConfig(q(tmp_ / "missing-config.json"));
        QVERIFY(!dlg.startImport());
        QCOMPARE(ui::errorText(&dlg),
                 q(tmp_ / "missing-config.json") + QStringLiteral(": no such model config (config.json)"));
        dlg.setKnownModel(QStringLiteral("llama4-maverick"));
        QSignalSpy progress(ui::job(&dlg), &ImportJob::progress);
        QSignalSpy finished(ui::job(&dlg), &ImportJob::finished);
        QSignalSpy imported(&dlg, &ImportDialog::imported);
        dlg.resize(640, 540);
        dlg.show();
        QVERIFY(dlg.startImport());
        QVERIFY(ui::job(&dlg)->isRunning());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 300000); // about 130 s sanitized on a loaded 2-core machine
        QCOMPARE(imported.count(), 1);
        QVERIFY(progress.count() >= 1);
        const auto summary = finished.at(0).at(1).value<ImportSummary>();
        QCOMPARE(summary.samples, std::size_t(235));
        QCOMPARE(summary.format, TraceFormat::StepJson);
        shot(&dlg, QStringLiteral("import-dialog-done"));

        auto l = storage::Library::open(lib, storage::OpenMode::ReadOnly);
        QCOMPARE(l->traces().size(), std::size_t(1));
        QCOMPARE(l->trace("maverick").samples, std::size_t(235));
        mavLib_ = lib;
    }

    void sampleTableOfRealTrace() {
        if (mavLib_.empty()) QSKIP("needs the maverick import of importRealTraceThroughDialog");
        auto lib = storage::Library::open(mavLib_, storage::OpenMode::ReadOnly);
        const Trace t = lib->load_trace("maverick");
        SampleTableModel model;
        SampleFilterProxy proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester t1(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setData(buildSampleTable(t, QStringLiteral("maverick")));
        QCOMPARE(model.rowCount(), 235);
        QCOMPARE(proxy.rowCount(), 235);
        // Every row against the trace, computed here independently.
        const int L = t.model.num_moe_layers(), E = t.model.experts;
        QCOMPARE(L, 24);
        QCOMPARE(E, 128);
        double max_share = 0;
        for (int i = 0; i < 235; ++i) {
            const auto& s = t.samples[static_cast<std::size_t>(i)];
            QCOMPARE(model.index(i, SampleTableModel::Id).data().toString(), QString::fromStdString(s.id));
            QCOMPARE(model.index(i, SampleTableModel::Length).data(Qt::UserRole).toLongLong(), s.length);
            QCOMPARE(model.index(i, SampleTableModel::RoutedRows).data(Qt::UserRole).toLongLong(), s.routed_rows);
            QCOMPARE(s.length, s.routed_rows + 1); // step JSON: t_i = rows + 1
            double best = 0, mean = 0;
            int best_layer = -1;
            for (int l = 0; l < L; ++l) {
                std::uint64_t sum = 0, mx = 0;
                for (int e = 0; e < E; ++e) {
                    sum += t.count(static_cast<std::size_t>(i), l, e);
                    mx = std::max<std::uint64_t>(mx, t.count(static_cast<std::size_t>(i), l, e));
                }
                QCOMPARE(sum, static_cast<std::uint64_t>(s.routed_rows) * 1u); // top-1: one route per row
                const double share = static_cast<double>(mx) / static_cast<double>(sum);
                mean += share / L;
                if (share > best) {
                    best = share;
                    best_layer = t.model.moe_layers[static_cast<std::size_t>(l)];
                }
            }
            QCOMPARE(model.index(i, SampleTableModel::HotShare).data(Qt::UserRole).toDouble(), best);
            QCOMPARE(model.index(i, SampleTableModel::HotLayer).data(Qt::UserRole).toInt(), best_layer);
            QCOMPARE(model.index(i, SampleTableModel::MeanHotShare).data(Qt::UserRole).toDouble(), mean);
            max_share = std::max(max_share, best);
        }
        // The per-layer list is in the tooltip: 24 layers, "L1 ..." first.
        const QString tip = model.index(0, SampleTableModel::HotShare).data(Qt::ToolTipRole).toString();
        QCOMPARE(tip.count(QStringLiteral("(e")), 24);
        QVERIFY(tip.contains(QStringLiteral("\nL1 ")));
        QVERIFY(max_share > 0.9); // docs/studio.md: layer 45 routes almost everything to expert 40

        // Sorting by the raw value: longest first.
        proxy.sort(SampleTableModel::Length, Qt::DescendingOrder);
        qint64 longest = 0, total = 0;
        for (const auto& s : t.samples) {
            longest = std::max<qint64>(longest, s.length);
            total += s.length;
        }
        QCOMPARE(proxy.index(0, SampleTableModel::Length).data(Qt::UserRole).toLongLong(), longest);
        for (int r = 1; r < proxy.rowCount(); ++r)
            QVERIFY(proxy.index(r - 1, SampleTableModel::Length).data(Qt::UserRole).toLongLong() >=
                    proxy.index(r, SampleTableModel::Length).data(Qt::UserRole).toLongLong());
        // Filter by id text and by length.
        proxy.setTextFilter(QStringLiteral("ANATOMY"));
        int anatomy = 0;
        for (const auto& s : t.samples)
            anatomy += QString::fromStdString(s.id).contains(QStringLiteral("anatomy"));
        QVERIFY(anatomy > 0 && anatomy < 235);
        QCOMPARE(proxy.rowCount(), anatomy);
        proxy.setTextFilter(QString());
        proxy.setLengthRange(longest, 0);
        QVERIFY(proxy.rowCount() >= 1);
        proxy.setLengthRange(0, 0);
        QCOMPARE(proxy.rowCount(), 235);
        // Histogram of the lengths: every sample in one bin.
        std::vector<qint64> lengths;
        for (const auto& s : t.samples)
            lengths.push_back(s.length);
        const LengthHistogram h = lengthHistogram(lengths, 16);
        int n = 0;
        for (int c : h.counts)
            n += c;
        QCOMPARE(n, 235);
        // At most 16 bins with whole-token edges around every length.
        QVERIFY(!h.counts.empty() && h.counts.size() <= 16);
        QCOMPARE(h.edges.size(), h.counts.size() + 1);
        QVERIFY(h.edges.front() <= static_cast<double>(*std::min_element(lengths.begin(), lengths.end())));
        QVERIFY(h.edges.back() >= static_cast<double>(longest));
        for (std::size_t b = 0; b + 1 < h.edges.size(); ++b)
            QVERIFY(h.edges[b] < h.edges[b + 1] && h.edges[b] == std::floor(h.edges[b]));
        // Hand cases: lengths spanning a factor of 16 in 4 bins get the round log-spaced edges 100,
        // 200, 500, 1000, 2000 (the {1, 2, 5} series); a factor of 4 keeps linear edges, step 10.
        const LengthHistogram lg = lengthHistogram({100, 200, 400, 800, 1600, 150}, 4);
        QVERIFY(lg.logarithmic);
        QCOMPARE(lg.edges, (std::vector<double>{100, 200, 500, 1000, 2000}));
        QCOMPARE(lg.counts, (std::vector<int>{2, 2, 1, 1}));
        const LengthHistogram lin = lengthHistogram({10, 20, 30, 40}, 4);
        QVERIFY(!lin.logarithmic);
        QCOMPARE(lin.edges, (std::vector<double>{10, 20, 30, 40}));
        QCOMPARE(lin.counts, (std::vector<int>{1, 1, 2}));
        const LengthHistogram one = lengthHistogram({7, 7}, 4);
        QCOMPARE(one.counts, (std::vector<int>{2}));
        qInfo("maverick: 235 samples, %lld tokens, longest %lld, highest hot-expert share %.4f", total, longest,
              max_share);
    }

    void cancelledImportLeavesLibraryUnchanged() {
        ROUTEPACK_REQUIRE_SHARED(mav, "traces/llama4-maverick");
        const auto lib = synthLibrary(QStringLiteral("cancel-import"));
        auto count_samples = [&] {
            auto l = storage::Library::open(lib, storage::OpenMode::ReadOnly);
            std::size_t n = 0;
            for (const auto& t : l->traces())
                n += t.samples;
            return std::make_pair(l->traces().size(), n);
        };
        const auto base = count_samples();
        QCOMPARE(base, std::make_pair(std::size_t(1), std::size_t(32)));

        ImportDialog dlg(q(lib));
        dlg.setInputs({q(mav)});
        dlg.setTraceName(QStringLiteral("maverick"));
        dlg.setKnownModel(QStringLiteral("llama4-maverick"));
        ui::job(&dlg)->setCancelAfterSamplesForTesting(40); // cancel in the middle (after 40 of 235)
        QSignalSpy cancelled(ui::job(&dlg), &ImportJob::cancelled);
        QSignalSpy finished(ui::job(&dlg), &ImportJob::finished);
        QVERIFY(dlg.startImport());
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 120000);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(count_samples(), base);
        QVERIFY(storage::Library::open(lib, storage::OpenMode::ReadOnly)->windows().size() == 1);

        // A failed import (wrong model: 64 experts for a 128-expert trace) says why, writes nothing.
        ui::job(&dlg)->setCancelAfterSamplesForTesting(0);
        dlg.setKnownModel(QStringLiteral("deepseek-v2-lite"));
        QSignalSpy failed(ui::job(&dlg), &ImportJob::failed);
        QVERIFY(dlg.startImport());
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 120000);
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.contains(QStringLiteral("llama4-mmlu-")), qPrintable(message)); // names the file
        QVERIFY2(ui::errorText(&dlg).startsWith(QStringLiteral("Import failed; nothing was written. ")),
                 qPrintable(ui::errorText(&dlg)));
        QCOMPARE(count_samples(), base);
        shot(&dlg, QStringLiteral("import-dialog-failed"));
        qInfo("failed import says: %s", qPrintable(message));
    }

    // --- Planner jobs ---

    void planningRunMatchesDirectCall() {
        if (mavLib_.empty()) QSKIP("needs the maverick import of importRealTraceThroughDialog");
        {
            auto lib = storage::Library::open(mavLib_);
            lib->create_window(
                "maverick", "all",
                [&] {
                    std::vector<std::string> ids;
                    for (const auto& s : lib->samples("maverick"))
                        ids.push_back(s.id);
                    return ids;
                }(),
                "all 235 samples");
        }
        const Topology topo = known_topology("llama4-maverick-ep8-dp4");
        const PlannerBudgets b = small_budgets();
        PlanJobQueue jobs;
        // Progress in proportion to time, by explicit stage weights (percent of the run; one node, so
        // communication does not count): each stage's first event reports where the stage starts.
        jobs.setStageWeights(StageWeights{{1, 1, 2, 6, 60, 20, 10, 100}});
        QSignalSpy started(&jobs, &PlanJobQueue::jobStarted);
        QSignalSpy progress(&jobs, &PlanJobQueue::progress);
        QSignalSpy levels(&jobs, &PlanJobQueue::levelFinished);
        QSignalSpy finished(&jobs, &PlanJobQueue::finished);
        QSignalSpy idle(&jobs, &PlanJobQueue::idle);
        const quint64 id = jobs.enqueue(request(mavLib_, QStringLiteral("maverick"), QStringLiteral("all"), topo, b));
        QCOMPARE(id, quint64(1));
        QCOMPARE(started.count(), 1);
        QVERIFY(jobs.isBusy());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 300000);
        QTRY_COMPARE_WITH_TIMEOUT(idle.count(), 1, 5000);
        QCOMPARE(levels.count(), 6);
        QStringList stages;
        for (const auto& a : progress)
            stages << a.at(1).toString();
        QVERIFY2(stages.contains(QStringLiteral("placement")) && stages.contains(QStringLiteral("annealing")),
                 qPrintable(stages.join(QLatin1Char(','))));
        QCOMPARE(stages.last(), QStringLiteral("done"));
        QCOMPARE(progress.last().at(2).toDouble(), 1.0);
        {
            const std::map<QString, double> starts = {
                {QStringLiteral("placement"), 0.0},  {QStringLiteral("row count"), 0.01},
                {QStringLiteral("baselines"), 0.02}, {QStringLiteral("seeding"), 0.04},
                {QStringLiteral("annealing"), 0.10}, {QStringLiteral("polish"), 0.70},
                {QStringLiteral("validate"), 0.90},  {QStringLiteral("done"), 1.0}};
            QString last;
            double previous = 0;
            for (const auto& a : progress) {
                const QString stage = a.at(1).toString();
                const double f = a.at(2).toDouble();
                QVERIFY(f >= previous);
                previous = f;
                if (stage != last) { // a stage's first event: where it starts
                    QVERIFY2(starts.count(stage) == 1, qPrintable(stage));
                    QVERIFY2(std::abs(f - starts.at(stage)) < 1e-12, qPrintable(stage + QStringLiteral(" %1").arg(f)));
                } else if (stage == QStringLiteral("annealing")) { // level k of 6 ends at 0.10 + 0.60 (k + 1) / 6
                    const double k = (f - 0.10) / 0.10 - 1;
                    QVERIFY2(std::abs(k - std::round(k)) < 1e-9 && k >= 0 && k < 6, qPrintable(QString::number(f)));
                }
                last = stage;
            }
        }
        const auto r = finished.at(0).at(0).value<PlanJobResult>();
        QCOMPARE(r.job, id);
        QVERIFY(r.plan && r.window);
        QVERIFY(!r.plan->cancelled);
        QCOMPARE(r.window->size(), std::size_t(235));

        // The same inputs through plan_window directly: the same plan, score exact.
        PlanInput in;
        in.window = storage::Library::open(mavLib_, storage::OpenMode::ReadOnly)->load_window("maverick", "all");
        in.trace_name = "maverick";
        in.window_name = "all";
        in.topology = topo;
        in.budgets = b;
        const PlanResult direct = plan_window(in);
        QCOMPARE(r.plan->routepack.metrics.score, direct.routepack.metrics.score);
        QCOMPARE(r.plan->routepack.layout, direct.routepack.layout);
        QCOMPARE(r.plan->rows.rows, direct.rows.rows);
        QCOMPARE(r.plan->baseline.metrics.score, direct.baseline.metrics.score);
        QCOMPARE(r.plan->search.convergence.size(), std::size_t(6));
        for (int k = 0; k < 6; ++k)
            QCOMPARE(levels.at(k).at(1).value<LevelStats>().best,
                     direct.search.convergence[static_cast<std::size_t>(k)].best);
        QCOMPARE(r.plan->rows.rows, 5); // docs/cli.md: R* = 5, certified, for EP 8 / DP 4 / C 2048
        QVERIFY(r.plan->rows.certified);
        // Saved as a finished run with the same numbers.
        QVERIFY(r.runId > 0);
        QVERIFY(r.saveError.isEmpty());
        const auto run = storage::Library::open(mavLib_, storage::OpenMode::ReadOnly)->run(r.runId);
        QCOMPARE(run.status, std::string("finished"));
        QCOMPARE(run.score, direct.routepack.metrics.score);
        QCOMPARE(run.topology, std::string("test-topology"));
        qInfo("maverick all/EP8-DP4: R* %d, max U %.4f (reorder %.4f), %zu progress events", r.plan->rows.rows,
              r.plan->routepack.metrics.score.max_u, r.plan->reorder.metrics.score.max_u,
              static_cast<std::size_t>(progress.count()));
    }

    void cancelledRunKeepsBestValidPlan() {
        const auto lib = synthLibrary(QStringLiteral("cancel-run"));
        PlannerBudgets b = small_budgets();
        b.annealing.levels = 400; // long enough that the cancel lands in the middle
        b.annealing.steps = 20000;
        const Topology topo = known_topology("synthetic-demo-ep8-dp4");
        PlanJobQueue jobs;
        QSignalSpy finished(&jobs, &PlanJobQueue::finished);
        QSignalSpy levels(&jobs, &PlanJobQueue::levelFinished);
        const quint64 id = jobs.enqueue(request(lib, QStringLiteral("syn"), QStringLiteral("all"), topo, b));
        connect(&jobs, &PlanJobQueue::levelFinished, &jobs, [&jobs, id](quint64 job, const LevelStats&) {
            if (job == id) jobs.cancel(id);
        });
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 300000);
        const auto r = finished.at(0).at(0).value<PlanJobResult>();
        QVERIFY(r.plan->cancelled);
        QVERIFY(levels.count() >= 1 && levels.count() < 400);
        // A valid plan, never worse than its reorder seed.
        const PackingProblem p = make_packing_problem(*r.window, r.plan->topology, r.plan->placement.lpt);
        QCOMPARE(validate_layout(r.plan->routepack.layout, p), std::string());
        QVERIFY(!(r.plan->reorder.metrics.score < r.plan->routepack.metrics.score));
        const auto run = storage::Library::open(lib, storage::OpenMode::ReadOnly)->run(r.runId);
        QCOMPARE(run.status, std::string("cancelled"));
        QCOMPARE(run.score, r.plan->routepack.metrics.score);
    }

    void staleResultsDroppedAndQueue() {
        const auto lib = synthLibrary(QStringLiteral("stale"));
        const Topology topo = known_topology("synthetic-demo-ep8-dp4");
        PlanJobQueue jobs;
        QSignalSpy finished(&jobs, &PlanJobQueue::finished);
        QSignalSpy stale(&jobs, &PlanJobQueue::staleDropped);
        QSignalSpy removed(&jobs, &PlanJobQueue::cancelledQueued);
        QSignalSpy levels(&jobs, &PlanJobQueue::levelFinished);
        const quint64 a =
            jobs.enqueue(request(lib, QStringLiteral("syn"), QStringLiteral("all"), topo, small_budgets()));
        const quint64 bq =
            jobs.enqueue(request(lib, QStringLiteral("syn"), QStringLiteral("all"), topo, small_budgets()));
        const quint64 c =
            jobs.enqueue(request(lib, QStringLiteral("syn"), QStringLiteral("all"), topo, small_budgets()));
        QCOMPARE(jobs.queuedCount(), 2);
        QCOMPARE(jobs.currentJob(), a);
        QVERIFY(jobs.cancel(bq)); // a queued job is removed before it starts
        QCOMPARE(removed.count(), 1);
        QCOMPARE(jobs.queuedCount(), 1);
        QVERIFY(!jobs.cancel(999));
        const quint64 generation = jobs.generation();
        jobs.invalidate(); // e.g. another library was opened: a and c become stale
        QCOMPARE(jobs.generation(), generation + 1);
        const quint64 d =
            jobs.enqueue(request(lib, QStringLiteral("syn"), QStringLiteral("all"), topo, small_budgets()));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 300000);
        QCOMPARE(stale.count(), 2);
        QCOMPARE(stale.at(0).at(0).toULongLong(), a);
        QCOMPARE(stale.at(1).at(0).toULongLong(), c);
        QCOMPARE(finished.at(0).at(0).value<PlanJobResult>().job, d);
        QCOMPARE(levels.count(), 6); // only the current generation's levels reach the GUI
        // Stale jobs still saved their runs: no work is lost.
        QCOMPARE(storage::Library::open(lib, storage::OpenMode::ReadOnly)->runs("syn", "all").size(), std::size_t(3));
    }

    void failedRunShowsError() {
        const auto lib = synthLibrary(QStringLiteral("fail"));
        PlanJobQueue jobs;
        QSignalSpy failed(&jobs, &PlanJobQueue::failed);
        // 32 experts on 6 EP ranks: the planner refuses, naming the field.
        Topology t = known_topology("synthetic-demo-ep8-dp4");
        t.ep_ranks = 6;
        t.experts_per_layer = 0;
        jobs.enqueue(request(lib, QStringLiteral("syn"), QStringLiteral("all"), t, small_budgets()));
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
        QCOMPARE(failed.at(0).at(1).toString(), QStringLiteral("topology: 32 experts are not divisible by 6 EP ranks"));
        const auto runs = storage::Library::open(lib, storage::OpenMode::ReadOnly)->runs("syn", "all");
        QCOMPARE(runs.size(), std::size_t(1));
        QCOMPARE(runs[0].status, std::string("failed"));
        QCOMPARE(runs[0].message, std::string("topology: 32 experts are not divisible by 6 EP ranks"));
        // An unknown window fails in words too.
        jobs.enqueue(request(lib, QStringLiteral("syn"), QStringLiteral("nope"), t, small_budgets()));
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 2, 60000);
        QVERIFY(failed.at(1).at(1).toString().startsWith(QStringLiteral("trace 'syn' has no window named 'nope'")));
    }

    // --- Models, editor, window dialog ---

    void libraryTreeModel() {
        const auto lib = synthLibrary(QStringLiteral("tree"));
        PlanJobQueue jobs;
        QSignalSpy finished(&jobs, &PlanJobQueue::finished);
        jobs.enqueue(request(lib, QStringLiteral("syn"), QStringLiteral("all"),
                             known_topology("synthetic-demo-ep8-dp4"), small_budgets()));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 300000);
        auto l = storage::Library::open(lib);
        l->create_window("syn", "g0", select_groups(l->samples("syn"), {"synth-group-0"}, "syn").ids,
                         "groups synth-group-0");
        LibraryTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setSnapshot(readLibrarySnapshot(*l));
        QCOMPARE(model.rowCount(), 1);
        const QModelIndex t = model.traceIndex(QStringLiteral("syn"));
        QCOMPARE(model.rowCount(t), 2);
        QCOMPARE(t.data().toString(), QStringLiteral("syn"));
        QCOMPARE(model.index(0, LibraryTreeModel::Details).data().toString(), QStringLiteral("32 samples, vllm"));
        const QModelIndex w = model.windowIndex(QStringLiteral("syn"), QStringLiteral("all"));
        QCOMPARE(model.rowCount(w), 1);
        const QModelIndex g = model.windowIndex(QStringLiteral("syn"), QStringLiteral("g0"));
        QCOMPARE(model.index(g.row(), LibraryTreeModel::Details, t).data().toString(), QStringLiteral("8 samples"));
        const qint64 run = finished.at(0).at(0).value<PlanJobResult>().runId;
        const QModelIndex ri = model.runIndex(run);
        QVERIFY(ri.isValid());
        QCOMPARE(ri.parent(), w);
        QCOMPARE(ri.data(KindRole).toInt(), int(LibraryTreeModel::RunNode));
        QCOMPARE(model.runAt(ri)->score, finished.at(0).at(0).value<PlanJobResult>().plan->routepack.metrics.score);
        QVERIFY(ri.sibling(ri.row(), 1).data().toString().startsWith(QStringLiteral("finished, R*=")));
        model.setSnapshot({});
        QCOMPARE(model.rowCount(), 0);
    }

    /// The batch rules in the topology editor: shown, edited, taken back; refused as the topology file
    /// refuses them; no token cap with samples per cell.
    void topologyEditorBatchRules() {
        TopologyEditor ed;
        Topology t = known_topology("deepseek-v2-lite-ep8-dp4");
        t.batch.samples_per_dp_slot = 128;
        t.batch.max_samples_per_cell = 4;
        t.batch.oversize = Oversize::Alone;
        ed.setTopology(QStringLiteral("verl"), t);
        QString why;
        auto back = ed.topology(&why);
        QVERIFY2(back.has_value(), qPrintable(why));
        QCOMPARE(*back, t);
        auto* perSlot = ed.findChild<QSpinBox*>(QStringLiteral("samplesPerDpSlot"));
        auto* perCell = ed.findChild<QSpinBox*>(QStringLiteral("samplesPerCell"));
        auto* oversize = ed.findChild<QComboBox*>(QStringLiteral("oversize"));
        QVERIFY(perSlot && perCell && oversize);
        QCOMPARE(perSlot->value(), 128);
        QCOMPARE(oversize->currentText(), QStringLiteral("alone"));
        perCell->setValue(8);
        QVERIFY(!ed.topology(&why));
        QCOMPARE(why, QStringLiteral("topology: samples_per_cell 8 exceeds max_samples_per_cell 4"));
        perCell->setValue(2);
        back = ed.topology(&why);
        QVERIFY2(back.has_value(), qPrintable(why));
        QCOMPARE(back->batch.samples_per_cell, 2);
        ed.setTopology(QStringLiteral("free"), known_topology("deepseek-v2-lite-ep8-dp4"));
        QCOMPARE(perSlot->text(), QStringLiteral("free"));
        QCOMPARE(*ed.topology(), known_topology("deepseek-v2-lite-ep8-dp4"));
        // A calibrated topology's expert invocation cost is shown and kept, and can be edited.
        auto* invocation = ed.findChild<QSpinBox*>(QStringLiteral("expertInvocationTokens"));
        QVERIFY(invocation);
        QCOMPARE(invocation->text(), QStringLiteral("none (linear)"));
        Topology calibrated = known_topology("deepseek-v2-lite-ep8-dp4");
        calibrated.expert_invocation_tokens = 44;
        ed.setTopology(QStringLiteral("calibrated"), calibrated);
        QCOMPARE(invocation->value(), 44);
        QCOMPARE(*ed.topology(), calibrated);
        invocation->setValue(12);
        QCOMPARE(ed.topology()->expert_invocation_tokens, std::int64_t{12});
    }

    void topologyEditorRoundTrip() {
        TopologyEditor ed;
        QVERIFY(ed.selectPreset(QStringLiteral("llama4-maverick-ep16-dp8")));
        QString why;
        auto t = ed.topology(&why);
        QVERIFY2(t.has_value(), qPrintable(why));
        QCOMPARE(*t, known_topology("llama4-maverick-ep16-dp8"));
        QCOMPARE(ed.topologyName(), QStringLiteral("llama4-maverick-ep16-dp8"));
        PlannerBudgets b = small_budgets();
        b.annealing.t0 = 0.02;
        b.seed = 18446744073709551615ULL;
        ed.setBudgets(b);
        const PlannerBudgets back = ed.budgets();
        QCOMPARE(back.annealing.levels, 6);
        QCOMPARE(back.annealing.t0, 0.02);
        QCOMPARE(back.seed, 18446744073709551615ULL);
        QCOMPARE(back.workers, 2);
        // Shards text both ways; bad partitions are refused by the topology file rules.
        QCOMPARE(shardText({{0, 1, 2, 3}, {4, 5, 6, 7}}), QStringLiteral("0-3 | 4-7"));
        QCOMPARE(parseShardText(QStringLiteral("0-3 | 4,5;6,7")),
                 (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5}, {6, 7}}));
        Topology bad = *t;
        bad.edp_shards = {{0, 1, 2}, {2, 3, 4, 5, 6, 7}};
        ed.setTopology(QStringLiteral("bad"), bad);
        QVERIFY(!ed.topology(&why));
        QVERIFY2(why.startsWith(QStringLiteral("topology: ")), qPrintable(why));
        // Library presets come first.
        storage::TopologyEntry e;
        e.name = "mine";
        e.topology = known_topology("deepseek-v2-lite-ep8-dp4");
        e.budgets = b;
        ed.setLibraryTopologies({e});
        QVERIFY(ed.selectPreset(QStringLiteral("mine")));
        QCOMPARE(*ed.topology(), e.topology);
        QCOMPARE(ed.budgets().seed, b.seed);
        // min_rows and row_multiple go through the editor both ways.
        Topology rm = known_topology("synthetic-demo-ep8-dp4");
        rm.min_rows = 3;
        rm.row_multiple = 4;
        ed.setTopology(QStringLiteral("rm"), rm);
        QCOMPARE(ed.topology(&why).value_or(Topology{}), rm);
        QVERIFY(
            QString::fromStdString(topology_to_json(*ed.topology())).contains(QStringLiteral("\"row_multiple\":4")));
    }

    void windowDialogRules() {
        std::vector<SampleInfo> samples;
        for (int i = 0; i < 12; ++i) {
            SampleInfo s;
            s.id = "s" + std::to_string(11 - i);
            s.group = std::to_string(i % 3);
            s.length = 10 + i;
            samples.push_back(s);
        }
        WindowDialog dlg(QStringLiteral("t"), samples, {QStringLiteral("s3"), QStringLiteral("s10")});
        dlg.setMode(WindowDialog::Selection);
        auto sel = dlg.selection();
        QVERIFY(sel);
        QCOMPARE(sel->ids, (std::vector<std::string>{"s10", "s3"})); // import order
        dlg.setMode(WindowDialog::First);
        dlg.setCount(3);
        sel = dlg.selection();
        QCOMPARE(sel->ids, (std::vector<std::string>{"s0", "s1", "s2"})); // numeric id order
        QCOMPARE(sel->definition, std::string("first 3 in numeric id order"));
        dlg.setMode(WindowDialog::Groups);
        dlg.setGroups({QStringLiteral("1")});
        sel = dlg.selection();
        QCOMPARE(sel->ids.size(), std::size_t(4));
        QCOMPARE(sel->definition, std::string("groups 1"));
        dlg.setGroups({});
        QString why;
        QVERIFY(!dlg.selection(&why));
        QCOMPARE(why, QStringLiteral("window: no GRPO group given for trace 't'"));
    }

    // --- The main window ---

    void studioWindow() {
        const fs::path lib = mavLib_.empty() ? synthLibrary(QStringLiteral("window")) : mavLib_;
        const QString trace = mavLib_.empty() ? QStringLiteral("syn") : QStringLiteral("maverick");
        QSettings(options_.settingsOrganization, options_.settingsApplication).clear();
        {
            StudioWindow w(options_);
            QAbstractItemModelTester t1(ui::libraryModel(w), QAbstractItemModelTester::FailureReportingMode::QtTest);
            QAbstractItemModelTester t2(ui::sampleModel(w), QAbstractItemModelTester::FailureReportingMode::QtTest);
            QAbstractItemModelTester t3(ui::sampleProxy(w), QAbstractItemModelTester::FailureReportingMode::QtTest);
            QAbstractItemModelTester t4(ui::compareView(w)->model(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
            w.resize(1600, 1000);
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
            QSignalSpy shown(&w, &StudioWindow::planShown);
            QString err;
            QVERIFY2(w.openLibrary(q(lib), false, &err), qPrintable(err));
            QCOMPARE(w.lastLibrary(), QFileInfo(q(lib)).absoluteFilePath());
            QTRY_VERIFY_WITH_TIMEOUT(loaded.count() >= 1, 60000);
            QTRY_COMPARE_WITH_TIMEOUT(ui::sampleModel(w)->rowCount(), mavLib_.empty() ? 32 : 235, 60000);
            QVERIFY(w.selectWindow(trace, QStringLiteral("all")));
            if (!mavLib_.empty())
                QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("llama4-maverick-ep8-dp4")));
            else
                QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("synthetic-demo-ep8-dp4")));
            const quint64 job = w.runPlanner();
            QVERIFY2(job > 0, qPrintable(w.statusText()));
            QTRY_VERIFY_WITH_TIMEOUT(shown.count() >= 1, 300000);
            QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 60000);
            QVERIFY(ui::planView(w)->plan() != nullptr);
            QVERIFY2(w.statusText().startsWith(QStringLiteral("Run ")), qPrintable(w.statusText()));
            QVERIFY(w.shownRunId() > 0);
            QCOMPARE(ui::compareView(w)->model()->rowCount(), 4); // one run x four methods
            // The new run is in the tree; selecting another window drops nothing.
            QVERIFY(ui::libraryModel(w)->runIndex(w.shownRunId()).isValid());
            QTest::qWait(200);
            ui::resultTabs(w)->setCurrentIndex(0);
            for (const QString& name : ui::planView(w)->viewNames()) {
                ui::planView(w)->setCurrentWidget(ui::planView(w)->viewWidget(name));
                QTest::qWait(50);
                shot(&w, QStringLiteral("studio-%1").arg(name));
            }
            // Saved runs of the same window (run 1 of planningRunMatchesDirectCall) join the
            // comparison from their stored plans; each adds its four methods.
            const int replays = w.compareSavedRuns();
            QCOMPARE(replays, mavLib_.empty() ? 0 : 1);
            QTRY_COMPARE_WITH_TIMEOUT(ui::compareView(w)->model()->rowCount(), 4 * (1 + replays), 300000);
            QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 60000);
            QCOMPARE(ui::resultTabs(w)->currentWidget(), static_cast<QWidget*>(ui::compareView(w)));
            QTest::qWait(50);
            shot(&w, QStringLiteral("studio-compare"));
            // Filter the sample table and select a grid cell's samples.
            ui::sampleProxy(w)->setTextFilter(QStringLiteral("zzzz-no-such-sample"));
            QCOMPARE(ui::sampleProxy(w)->rowCount(), 0);
            ui::sampleProxy(w)->setTextFilter(QString());
            w.close();
        }
        // Geometry and dock layout were saved and come back.
        QSettings s(options_.settingsOrganization, options_.settingsApplication);
        QVERIFY(!s.value(QStringLiteral("window/geometry")).toByteArray().isEmpty());
        QVERIFY(!s.value(QStringLiteral("window/state")).toByteArray().isEmpty());
        StudioWindow again(options_);
        QCOMPARE(again.lastLibrary(), QFileInfo(q(lib)).absoluteFilePath());
        QCOMPARE(again.size(), QSize(1600, 1000));
    }

    void studioShowsSavedRun() {
        // A run saved in an earlier session is shown exactly as saved, rebuilt from its stored plan
        // JSON: same layout, the four methods' stored metrics, the stored convergence levels.
        const auto dir = test::temp_dir(QStringLiteral("saved-run"));
        PlannerBudgets b = small_budgets();
        const storage::DemoBuild d = storage::build_demo(dir / "demo", b);
        // A second run whose recorded budgets differ from the ones that made its plan (as a
        // cancelled or time-limited run's do): planning again would search anew and could find
        // another plan; showing it must not.
        PlanResult other = d.plan;
        other.budgets.annealing.steps *= 50;
        other.budgets.seed = 99;
        std::int64_t otherRun = 0;
        {
            auto lib = storage::Library::open(d.library, storage::OpenMode::ReadWrite);
            otherRun = lib->save_run(other, d.run.topology).id;
        }
        StudioWindow w(options_);
        w.resize(1600, 1000);
        w.show();
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QSignalSpy started(ui::jobs(w), &PlanJobQueue::jobStarted);
        QVERIFY(w.openLibrary(q(d.library)));
        QVERIFY(w.selectRun(d.run.id));
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() >= 1, 300000);
        QCOMPARE(shown.last().at(0).toLongLong(), d.run.id);
        const auto& got = *ui::planView(w)->plan();
        QCOMPARE(got.routepack.layout, d.plan.routepack.layout);
        QCOMPARE(got.routepack.metrics.score, d.plan.routepack.metrics.score);
        QCOMPARE(got.baseline.metrics.score, d.plan.baseline.metrics.score);
        QCOMPARE(got.reorder.metrics.score, d.plan.reorder.metrics.score);
        QCOMPARE(got.karmarkar_karp.metrics.score, d.plan.karmarkar_karp.metrics.score);
        QCOMPARE(got.baseline.layout, d.plan.baseline.layout);
        QCOMPARE(got.placement.lpt, d.plan.placement.lpt);
        QCOMPARE(got.rows.rows, d.plan.rows.rows);
        QCOMPARE(got.search.convergence.size(), d.plan.search.convergence.size());
        QCOMPARE(w.statusText(), QStringLiteral("Run %1: the saved plan (max U %2, R* = %3)")
                                     .arg(d.run.id)
                                     .arg(d.plan.routepack.metrics.score.max_u, 0, 'f', 4)
                                     .arg(d.plan.rows.rows));
        QTest::qWait(100);
        shot(&w, QStringLiteral("studio-demo-saved-run"));
        QVERIFY(w.selectRun(otherRun));
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() >= 2, 300000);
        QCOMPARE(shown.last().at(0).toLongLong(), otherRun);
        QCOMPARE(ui::planView(w)->plan()->routepack.layout, d.plan.routepack.layout);
        QCOMPARE(ui::planView(w)->plan()->budgets.seed, std::uint64_t(99));
        QCOMPARE(started.count(), 2);
        // Selecting the trace (no plan of its own) empties the plan views and the comparison instead
        // of leaving the run's views under the trace's heading; the run comes back from the cache.
        QVERIFY(ui::compareView(w)->model()->rowCount() > 0);
        QVERIFY(w.selectTrace(QStringLiteral("demo")));
        QVERIFY(!ui::planView(w)->plan());
        QCOMPARE(ui::compareView(w)->model()->rowCount(), 0);
        QVERIFY(w.selectRun(d.run.id));
        QVERIFY(ui::planView(w)->plan());
        QCOMPARE(ui::planView(w)->plan()->routepack.layout, d.plan.routepack.layout);
        QCOMPARE(started.count(), 2);
        // The import dialog, as a user first sees it.
        ImportDialog* dlg = w.showImportDialog();
        QVERIFY(dlg);
        QTest::qWait(50);
        shot(dlg, QStringLiteral("import-dialog"));
        dlg->close();
    }

    void studioShowsPlacementOfLoadOnlyTrace() {
        // An aggregate trace (per-layer expert totals only) shows its identity vs LPT placement on
        // the editor's topology (here the demo run's: 8 EP ranks), nothing else. Layer 0's totals
        // 16..1 over 16 experts put (16+15, 14+13, ..., 2+1) = 31, 27, ..., 3 tokens on the ranks
        // under identity (mean 17, variance 84, CV sqrt(84)/17) and 17 on every rank under LPT.
        const auto dir = test::temp_dir(QStringLiteral("load-only"));
        const storage::DemoBuild d = storage::build_demo(dir / "demo", small_budgets());
        const auto input = dir / "agg" / "counts.json";
        test::write_file(input, R"({"counts": [[16,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1],)"
                                R"( [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]], "num_layers": 2, "num_experts": 16})");
        {
            auto lib = storage::Library::open(d.library, storage::OpenMode::ReadWrite);
            ImportOptions o;
            o.format = TraceFormat::Aggregate;
            lib->import_trace("agg", {input}, o);
        }
        StudioWindow w(options_);
        w.resize(1600, 1000);
        w.show();
        QSignalSpy shown(&w, &StudioWindow::planShown);
        QVERIFY(w.openLibrary(q(d.library)));
        QVERIFY(w.selectRun(d.run.id));
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() >= 1, 300000);
        QVERIFY(w.selectTrace(QStringLiteral("agg")));
        QVERIFY(!ui::planView(w)->plan());
        QCOMPARE(ui::planView(w)->currentWidget(), ui::planView(w)->viewWidget(QStringLiteral("ep-heatmap")));
        const EpHeatmapPanel* ep = ui::epHeatmapPanel(ui::planView(w));
        QCOMPARE(ep->layerCv(false).size(), std::size_t(2));
        QCOMPARE(ep->layerCv(false)[0], std::sqrt(84.0) / 17.0);
        QCOMPARE(ep->layerCv(true)[0], 0.0);
        QCOMPARE(ep->layerCv(false)[1], 0.0);
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Trace agg is load-only: placement on 8 EP ranks")),
                 qPrintable(w.statusText()));
        QTRY_COMPARE_WITH_TIMEOUT(ui::samplePane(w)->headingText(),
                                  QStringLiteral("Trace agg: load-only (per-layer expert totals of 2 MoE layers x 16 "
                                                 "experts), no samples"),
                                  60000);
        QTest::qWait(100);
        shot(&w, QStringLiteral("studio-load-only-placement"));
        // Selecting the run again shows its plan, not the placement-only view.
        QVERIFY(w.selectRun(d.run.id));
        QVERIFY(ui::planView(w)->plan());
        QCOMPARE(ui::epHeatmapPanel(ui::planView(w))->layerCv(true).size(), std::size_t(d.plan.model.num_moe_layers()));
    }

    void studioOpensDemoLibrary() {
        // First start: the embedded demo library is built under AppDataLocation (test mode: under
        // ~/.qttest) on a worker thread, opened, and its planned run shown.
        const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/demo");
        QDir(dir).removeRecursively();
        StudioWindow w(options_);
        w.resize(1600, 1000);
        w.show();
        QSignalSpy ready(&w, &StudioWindow::demoReady);
        QSignalSpy shown(&w, &StudioWindow::planShown);
        w.openDemoLibrary();
        QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 300000);
        QCOMPARE(ready.at(0).at(0).toString(), dir + QStringLiteral("/demo.routepack"));
        QCOMPARE(w.libraryPath(), dir + QStringLiteral("/demo.routepack"));
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() >= 1, 300000);
        QTRY_COMPARE_WITH_TIMEOUT(ui::sampleModel(w)->rowCount(), 64, 60000);
        QVERIFY2(w.statusText().contains(QStringLiteral(": the saved plan (max U ")), qPrintable(w.statusText()));
        QCOMPARE(ui::planView(w)->plan()->samples.size(), std::size_t(64));
        // Keyboard: Ctrl+R queues a run of the selected window, Esc cancels it (the best valid plan
        // so far is kept and shown).
        QVERIFY(w.selectWindow(QStringLiteral("demo"), QStringLiteral("step-0")));
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        const int before = static_cast<int>(shown.count());
        QSignalSpy started(ui::jobs(w), &PlanJobQueue::jobStarted);
        QTest::keyClick(&w, Qt::Key_R, Qt::ControlModifier);
        QCOMPARE(started.count(), 1);
        QTest::keyClick(&w, Qt::Key_Escape);
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() > before, 300000);
        QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 60000);
        const auto runs = storage::Library::open(dir.toStdString() + "/demo.routepack", storage::OpenMode::ReadOnly)
                              ->runs("demo", "step-0");
        QCOMPARE(runs.size(), std::size_t(2));
        QVERIFY(runs[1].status == "cancelled" || runs[1].status == "finished"); // Esc may land after the end
        // Second start: the existing demo library is opened as it is (no rebuild).
        StudioWindow again(options_);
        QSignalSpy ready2(&again, &StudioWindow::demoReady);
        again.openDemoLibrary();
        QCOMPARE(ready2.count(), 1); // synchronous: nothing to build
        QCOMPARE(storage::Library::open(dir.toStdString() + "/demo.routepack", storage::OpenMode::ReadOnly)
                     ->runs("demo", "step-0")
                     .size(),
                 std::size_t(2));
        QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(again)->isBusy(), 300000);
    }

    void studioDarkPalette() {
        // The same window in a dark palette (Fusion), for the screenshots.
        const fs::path lib = synthLibrary(QStringLiteral("dark"));
        const QPalette light = QApplication::palette();
        QString style = QApplication::style()->name();
        QApplication::setStyle(QStringLiteral("Fusion"));
        const QPalette dark = test::dark_palette();
        QApplication::setPalette(dark);
        {
            StudioWindow w(options_);
            w.resize(1600, 1000);
            w.show();
            QSignalSpy shown(&w, &StudioWindow::planShown);
            QVERIFY(w.openLibrary(q(lib)));
            QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
            QVERIFY(w.runPlanner() > 0);
            QTRY_VERIFY_WITH_TIMEOUT(shown.count() >= 1, 300000);
            QTRY_COMPARE_WITH_TIMEOUT(ui::sampleModel(w)->rowCount(), 32, 60000);
            QTest::qWait(100);
            shot(&w, QStringLiteral("studio-dark"));
        }
        QApplication::setPalette(light);
        QApplication::setStyle(style);
    }

    // --- Hostile input and races (regressions) ---

    void shardTextIsBoundedBeforeExpanding() {
        // A range is checked against D before it is expanded (the text is parsed at every
        // keystroke on the GUI thread): "0-2147483647" used to take 36 s, then bad_alloc.
        QCOMPARE(QString::fromStdString(
                     test::error_of<InputError>([] { parseShardText(QStringLiteral("0-2147483647"), 4); })),
                 QStringLiteral("EDP shards: range '0-2147483647' names DP slot 2147483647, outside 0..3 (D = 4)"));
        QCOMPARE(
            QString::fromStdString(test::error_of<InputError>([] { parseShardText(QStringLiteral("0-99999999")); })),
            QStringLiteral("EDP shards: range '0-99999999' names DP slot 99999999, outside 0..65535"));
        QStringList many;
        for (int k = 0; k < 17; ++k)
            many << QStringLiteral("0-65535");
        const QString manyText = many.join(QStringLiteral(" | "));
        QCOMPARE(QString::fromStdString(test::error_of<InputError>([&] { parseShardText(manyText, 65536); })),
                 QStringLiteral("EDP shards: the ranges list more than 1048576 DP slots (D = 65536); every DP slot "
                                "belongs to exactly one shard"));
        QCOMPARE(parseShardText(QStringLiteral("0-1 | 2-3"), 4), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
        QCOMPARE(parseShardText(QStringLiteral("0-65535")).front().size(), std::size_t(65536));
        // Through the editor: the validity label says why, at once.
        TopologyEditor ed;
        QVERIFY(ed.selectPreset(QStringLiteral("synthetic-demo-ep8-dp4")));
        QLineEdit* shards = lineEdit(ed, [](const QString& t) { return t.contains(QLatin1Char('|')); });
        QVERIFY(shards);
        QElapsedTimer timer;
        timer.start();
        shards->setText(QStringLiteral("0-2147483647"));
        QString why;
        QVERIFY(!ed.topology(&why));
        QVERIFY2(timer.elapsed() < 1000, qPrintable(QString::number(timer.elapsed())));
        QCOMPARE(why,
                 QStringLiteral("EDP shards: range '0-2147483647' names DP slot 2147483647, outside 0..3 (D = 4)"));
        QVERIFY(labelTexts(ed).contains(why));
    }

    void invalidSeedRefusesToPlan() {
        // The validity label says the seed is wrong; Run planner refuses with the same reason
        // instead of planning with the previous seed.
        const auto lib = synthLibrary(QStringLiteral("bad-seed"));
        StudioWindow w(options_);
        QVERIFY(w.openLibrary(q(lib)));
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        TopologyEditor* ed = ui::topologyEditor(w);
        QVERIFY(ed->selectPreset(QStringLiteral("synthetic-demo-ep8-dp4")));
        ed->setBudgets(small_budgets());
        QString why;
        QVERIFY(ed->budgets(&why).has_value());
        QLineEdit* seed = lineEdit(*ed, [](const QString& t) { return t == QStringLiteral("7"); });
        QVERIFY(seed);
        seed->setText(QStringLiteral("seed?!"));
        QVERIFY(!ed->budgets(&why));
        QCOMPARE(why, QStringLiteral("seed must be an integer in 0..18446744073709551615"));
        QVERIFY(labelTexts(*ed).contains(why));
        QSignalSpy started(ui::jobs(w), &PlanJobQueue::jobStarted);
        QCOMPARE(w.runPlanner(), quint64(0));
        QCOMPARE(
            w.statusText(),
            QStringLiteral("The planner budgets are not valid: seed must be an integer in 0..18446744073709551615"));
        QCOMPARE(started.count(), 0);
        QVERIFY(!ui::jobs(w)->isBusy());
        QVERIFY(storage::Library::open(lib, storage::OpenMode::ReadOnly)->runs("syn", "all").empty());
    }

    void busyLibraryIsReportedAtOnce() {
        // Another process holds the library's write lock: a GUI-thread write (Save topology)
        // fails within the GUI connection's short busy timeout, in words; the planner's save
        // waits on its worker and lands once the lock is gone.
        const auto lib = synthLibrary(QStringLiteral("busy"));
        StudioWindow w(options_);
        QVERIFY(w.openLibrary(q(lib)));
        QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("synthetic-demo-ep8-dp4")));
        WriteLockHolder other(lib);
        QElapsedTimer timer;
        timer.start();
        Q_EMIT ui::topologyEditor(w)->saveRequested();
        const qint64 ms = timer.elapsed();
        QVERIFY2(ms < 2000, qPrintable(QString::number(ms)));
        QCOMPARE(w.statusText(), QStringLiteral("Cannot save the topology: ") + q(lib) +
                                     QStringLiteral(": library is in use by another process (database is locked) "
                                                    "while starting a transaction; try again"));
        // The lock outlives the worker's busy timeout (1 s): the save is retried, not given up.
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        ui::topologyEditor(w)->setBudgets(small_budgets());
        QSignalSpy finished(ui::jobs(w), &PlanJobQueue::finished);
        bool released = false, finishedAfterRelease = false;
        const auto c = connect(ui::jobs(w), &PlanJobQueue::finished, this, [&] { finishedAfterRelease = released; });
        QTimer::singleShot(3000, this, [&] {
            other.release();
            released = true;
        });
        QVERIFY(w.runPlanner() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        disconnect(c);
        QTRY_VERIFY_WITH_TIMEOUT(released, 10000); // the timer's lambda must not outlive this test
        QVERIFY(finishedAfterRelease);
        const auto r = finished.at(0).at(0).value<PlanJobResult>();
        QCOMPARE(r.saveError, QString());
        QVERIFY(r.runId > 0);
        QVERIFY(ui::libraryModel(w)->runIndex(r.runId).isValid());
        QVERIFY2(w.statusText().startsWith(QStringLiteral("Run %1 finished").arg(r.runId)), qPrintable(w.statusText()));
    }

    void switchingLibrariesDropsTheOldSampleLoad() {
        // A sample load still running for the previous library never fills the table of the next.
        const auto lib = synthLibrary(QStringLiteral("stale-samples"));
        const auto fresh = test::temp_dir(QStringLiteral("stale-samples-new")) / "new.routepack";
        StudioWindow w(options_);
        QSignalSpy loaded(&w, &StudioWindow::samplesLoaded);
        QVERIFY(w.openLibrary(q(lib)));         // starts loading syn/all on a worker
        QVERIFY(w.openLibrary(q(fresh), true)); // an empty library: nothing to load
        QThreadPool::globalInstance()->waitForDone();
        QTest::qWait(100); // deliver the old load's result
        QCOMPARE(loaded.count(), 0);
        QCOMPARE(ui::sampleModel(w)->rowCount(), 0);
        QCOMPARE(w.libraryPath(), q(fresh));
    }

    void importDialogRefusesOddConfigFiles() {
        // config.json is read on the GUI thread: what is not a regular file, or is huge, is
        // refused unread.
        const auto dir = test::temp_dir(QStringLiteral("odd-config"));
        fs::create_directories(dir / "traces");
        const auto fifo = dir / "config.fifo";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        const auto big = dir / "config.json";
        test::write_file(big, "{}");
        fs::resize_file(big, 16 * 1024 * 1024 + 1);
        ImportDialog dlg(q(dir / "lib.routepack"));
        dlg.setInputs({q(dir / "traces")});
        dlg.setTraceName(QStringLiteral("x"));
        dlg.setModelConfig(q(fifo));
        QElapsedTimer timer;
        timer.start();
        QVERIFY(!dlg.startImport());
        QVERIFY2(timer.elapsed() < 1000, qPrintable(QString::number(timer.elapsed())));
        QCOMPARE(ui::errorText(&dlg), q(fifo) + QStringLiteral(": is a pipe (FIFO), not a model config (config.json)"));
        dlg.setModelConfig(q(big));
        QVERIFY(!dlg.startImport());
        QCOMPARE(ui::errorText(&dlg),
                 q(big) + QStringLiteral(": too large for a model config (config.json): 16777217 bytes, "
                                         "the limit is 16777216 bytes"));
        QVERIFY(labelTexts(dlg).contains(ui::errorText(&dlg)));
        dlg.setModelConfig(q(dir));
        QVERIFY(!dlg.startImport());
        QCOMPARE(ui::errorText(&dlg), q(dir) + QStringLiteral(": is a folder, not a model config (config.json)"));
        QVERIFY(!ui::job(&dlg)->isRunning());
    }

    void secondImportIsRefusedVisibly() {
        const auto dir = test::temp_dir(QStringLiteral("import-twice"));
        SynthConfig c;
        c.groups = 2;
        c.group_size = 4;
        write_synth(c, TraceFormat::VLLM, dir / "syn");
        const ModelDescription m = synth_model(c);
        ImportDialog dlg(q(dir / "lib.routepack"));
        dlg.setInputs({q(dir / "syn")});
        dlg.setTraceName(QStringLiteral("syn"));
        dlg.setModelFields(m.experts, m.top_k, m.num_hidden_layers,
                           QStringLiteral("%1-%2").arg(m.moe_layers.front()).arg(m.moe_layers.back()));
        QSignalSpy finished(ui::job(&dlg), &ImportJob::finished);
        QSignalSpy failed(ui::job(&dlg), &ImportJob::failed);
        QVERIFY(dlg.startImport());
        QVERIFY(!dlg.startImport()); // the first still runs (its end is delivered by the event loop)
        QCOMPARE(ui::errorText(&dlg), QStringLiteral("An import is already running."));
        QVERIFY(labelTexts(dlg).contains(QStringLiteral("An import is already running.")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, 60000);
        QVERIFY2(failed.isEmpty(), qPrintable(ui::errorText(&dlg)));
    }

    void selectionOfUnknownIdsIsRefused() {
        std::vector<SampleInfo> samples;
        for (int i = 0; i < 4; ++i) {
            SampleInfo s;
            s.id = "s" + std::to_string(i);
            s.length = 10;
            samples.push_back(s);
        }
        WindowDialog dlg(QStringLiteral("T"), samples, {QStringLiteral("ghost-1"), QStringLiteral("ghost-2")});
        dlg.setMode(WindowDialog::Selection);
        QString why;
        QVERIFY(!dlg.selection(&why));
        QCOMPARE(why, QStringLiteral("the selection holds no samples of trace 'T'"));
        dlg.setWindowName(QStringLiteral("w"));
        dlg.accept();
        QCOMPARE(dlg.result(), int(QDialog::Rejected));
        QVERIFY(labelTexts(dlg).contains(why));
    }

    void reopeningTheLibraryKeepsItsJobs() {
        const auto lib = synthLibrary(QStringLiteral("reopen"));
        const auto other = synthLibrary(QStringLiteral("reopen-other"));
        const QString sameLib = q(lib.parent_path() / "." / lib.filename()); // another spelling, same file
        StudioWindow w(options_);
        QVERIFY(w.openLibrary(q(lib)));
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        QVERIFY(ui::topologyEditor(w)->selectPreset(QStringLiteral("synthetic-demo-ep8-dp4")));
        ui::topologyEditor(w)->setBudgets(small_budgets());
        QSignalSpy finished(ui::jobs(w), &PlanJobQueue::finished);
        QSignalSpy stale(ui::jobs(w), &PlanJobQueue::staleDropped);
        // The same library opened again: its jobs are delivered, their runs are in the tree.
        QVERIFY(w.runPlanner() > 0);
        QVERIFY(w.runPlanner() > 0);
        QVERIFY(w.openLibrary(sameLib));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 60000);
        QCOMPARE(stale.count(), 0);
        for (int k = 0; k < 2; ++k) {
            const qint64 run = finished.at(k).at(0).value<PlanJobResult>().runId;
            QVERIFY(run > 0);
            QVERIFY(ui::libraryModel(w)->runIndex(run).isValid());
        }
        // Another library and back: the jobs queued before are not shown, but the runs they
        // saved join the tree of the library open again.
        QVERIFY(w.selectWindow(QStringLiteral("syn"), QStringLiteral("all")));
        QVERIFY(w.runPlanner() > 0);
        const quint64 last = w.runPlanner();
        QVERIFY(last > 0);
        QVERIFY(w.openLibrary(q(other)));
        QVERIFY(w.openLibrary(q(lib)));
        QTRY_COMPARE_WITH_TIMEOUT(stale.count(), 2, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(!ui::jobs(w)->isBusy(), 60000);
        QCOMPARE(finished.count(), 2);
        QCOMPARE(stale.at(1).at(0).toULongLong(), last);
        QCOMPARE(QFileInfo(stale.at(1).at(1).toString()).canonicalFilePath(), QFileInfo(q(lib)).canonicalFilePath());
        QCOMPARE(ui::libraryModel(w)->snapshot().runs.size(), std::size_t(4));
        QCOMPARE(w.statusText(), QStringLiteral("Job %1 was queued before this library was opened again; its result "
                                                "was not shown (a saved run is in the library tree).")
                                     .arg(last));
    }

    // --- Headless mode of the binary ---

    void headlessChildProcess() {
        const auto out = tmp_ / "headless";
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        env.insert(QStringLiteral("XDG_DATA_HOME"), q(tmp_ / "xdg-data"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), q(tmp_ / "xdg-config"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(ROUTEPACK_STUDIO), {QStringLiteral("--headless-out"), q(out)});
        QVERIFY(p.waitForFinished(600000));
        const QString stdout_text = QString::fromUtf8(p.readAllStandardOutput());
        const QString stderr_text = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, qPrintable(stderr_text));
        const QStringList lines = stdout_text.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.value(0), QStringLiteral("routepack-studio: no display found; running the demo headless"));
        QCOMPARE(lines.value(1), QStringLiteral("routepack-studio: headless demo written to ") + q(fs::absolute(out)));
        const QStringList expected = {QStringLiteral("demo.routepack"),
                                      QStringLiteral("trace/"),
                                      QStringLiteral("plan.json"),
                                      QStringLiteral("comparison.csv"),
                                      QStringLiteral("comparison-chart.png"),
                                      QStringLiteral("plan-ep-heatmap.png"),
                                      QStringLiteral("plan-row-heatmap.png"),
                                      QStringLiteral("plan-costs.png"),
                                      QStringLiteral("plan-grid.png"),
                                      QStringLiteral("plan-convergence.png")};
        QCOMPARE(lines.mid(2, 10), [&] {
            QStringList l;
            for (const QString& f : expected)
                l << QStringLiteral("  ") + f;
            return l;
        }());
        const PlanFile plan = parse_plan(test::read_file(out / "plan.json"), "plan.json");
        // Then the comparison table: header and one line per method, joint cost as in the plan.
        QCOMPARE(lines.size(), 17);
        QVERIFY2(lines.value(12).startsWith(QStringLiteral("method")) &&
                     lines.value(12).contains(QStringLiteral("max_g U")),
                 qPrintable(lines.value(12)));
        for (int k = 0; k < 4; ++k) {
            const QStringList cols = lines.value(13 + k).simplified().split(QLatin1Char(' '));
            QCOMPARE(cols.value(0), QString::fromLatin1(kMethodTable[k].key));
            QCOMPARE(cols.value(2), QString::number(plan.metrics_of(kMethodTable[k].method).score.max_u, 'f', 4));
        }
        QCOMPARE(plan.sample_ids.size(), std::size_t(64));
        QCOMPARE(plan.trace_name, std::string("demo"));
        const QStringList csv = QString::fromStdString(test::read_file(out / "comparison.csv"))
                                    .split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(csv.size(), 5); // header + baseline, reorder, karmarkar_karp, routepack
        QVERIFY(csv[4].contains(QStringLiteral("routepack")) || csv[4].contains(QStringLiteral("RoutePack")));
        // Every printed value is the CSV's, column by column (the table once printed sum U under max J,
        // T_EP under eta_EP and the cap violations as "vs reorder").
        QCOMPARE(lines.value(12).simplified(), QStringLiteral("method rows max_g U sum_g U max J eta_EP vs reorder"));
        const QStringList head = csv[0].split(QLatin1Char(','));
        const int c_method = head.indexOf(QStringLiteral("method")), c_rows = head.indexOf(QStringLiteral("rows")),
                  c_joint = head.indexOf(QStringLiteral("max U (joint)")),
                  c_sum = head.indexOf(QStringLiteral("sum U")), c_maxj = head.indexOf(QStringLiteral("max J")),
                  c_eta = head.indexOf(QStringLiteral("eta_EP")), c_vs = head.indexOf(QStringLiteral("vs reorder"));
        QVERIFY(c_method >= 0 && c_rows >= 0 && c_joint >= 0 && c_sum >= 0 && c_maxj >= 0 && c_eta >= 0 && c_vs >= 0);
        for (int k = 0; k < 4; ++k) {
            const QStringList row = csv[1 + k].split(QLatin1Char(','));
            const QStringList printed = lines.value(13 + k).simplified().split(QLatin1Char(' '));
            const auto f4 = [&](int col) { return QString::number(row.value(col).toDouble(), 'f', 4); };
            QCOMPARE(printed, (QStringList{row.value(c_method), row.value(c_rows), f4(c_joint), f4(c_sum), f4(c_maxj),
                                           f4(c_eta), QString::asprintf("%+.2f%%", row.value(c_vs).toDouble())}));
        }
        // reorder against itself, and routepack's gain as the plan's own figures give it.
        QCOMPARE(lines.value(14).simplified().split(QLatin1Char(' ')).value(6), QStringLiteral("+0.00%"));
        const double reorder = plan.metrics_of(Method::Reorder).score.max_u;
        const double gain = 100.0 * (plan.metrics_of(Method::RoutePack).score.max_u - reorder) / reorder;
        QCOMPARE(lines.value(16).simplified().split(QLatin1Char(' ')).value(6), QString::asprintf("%+.2f%%", gain));
        for (const QString& f : expected) {
            if (!f.endsWith(QStringLiteral(".png"))) continue;
            const QImage img(q(out) + QLatin1Char('/') + f);
            QVERIFY2(!img.isNull() && img.width() >= 400 && img.height() >= 300, qPrintable(f));
            QFile::remove(shots_ + QStringLiteral("/headless-") + f);
            QFile::copy(q(out) + QLatin1Char('/') + f, shots_ + QStringLiteral("/headless-") + f);
        }
        // The explicit flag does the same with a display platform set.
        const auto out2 = tmp_ / "headless2";
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(ROUTEPACK_STUDIO),
                {QStringLiteral("--headless"), QStringLiteral("--headless-out"), q(out2)});
        QVERIFY(p.waitForFinished(600000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(QString::fromUtf8(p.readAllStandardOutput())
                    .startsWith(QStringLiteral("routepack-studio: headless demo written to ")));
        QCOMPARE(parse_plan(test::read_file(out2 / "plan.json"), "plan.json").score, plan.score);
        // An output folder alone means headless too, even with a display platform set (the offscreen
        // one here): it used to open an invisible window that never ended and wrote nothing.
        const auto out3 = tmp_ / "headless3";
        p.start(QStringLiteral(ROUTEPACK_STUDIO), {QStringLiteral("--headless-out"), q(out3)});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 0);
        QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()).split(QLatin1Char('\n')).value(0),
                 QStringLiteral("routepack-studio: headless demo written to ") + q(fs::absolute(out3)));
        QCOMPARE(parse_plan(test::read_file(out3 / "plan.json"), "plan.json").score, plan.score);
    }
};

QTEST_MAIN(TestStudio)
#include "tst_studio.moc"
