// The studio's background-work tracker (views/jobs/job_tracker.h), the run replay cache
// (views/jobs/run_replay.h) and the export writers (views/dialogs/exports.h): ids, FIFO order, generations
// (latest result wins, stale results dropped), cooperative cancel, delivery on the GUI thread, the
// 50 ms progress throttle on explicit clock values, and the exact bytes and messages of the exports.
#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "core/plan/score/placement.h"
#include "core/util/errors.h"
#include "storage/library.h"
#include "tests/testutil.h"
#include "views/dialogs/exports.h"
#include "views/jobs/job_tracker.h"
#include "views/jobs/plan_jobs.h"
#include "views/jobs/run_replay.h"
#include "views/jobs/stage_progress.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace routepack;
using namespace routepack::views;
using namespace std::chrono_literals;

namespace {

/// Spins (sleeping) until `flag` is set or `cancel` is requested; true when released by `flag`.
bool waitFor(const std::atomic<bool>& flag, const JobContext& context) {
    while (!flag.load() && !context.cancelRequested())
        std::this_thread::sleep_for(1ms);
    return flag.load();
}

/// Deliveries of a tracker, in order, as text ("done 1 = 10", "failed 3 (kind 3): text", "stale 2",
/// "post 1 = 7").
struct Log {
    QStringList lines;
    std::function<void(quint64, std::shared_ptr<const int>)> done() {
        return [this](quint64 id, const std::shared_ptr<const int>& r) {
            lines << (r ? QStringLiteral("done %1 = %2").arg(id).arg(*r) : QStringLiteral("done %1 = null").arg(id));
        };
    }
    JobTracker::FailedFn failed() {
        return [this](quint64 id, const JobFailure& f) {
            lines << QStringLiteral("failed %1 (kind %2): %3").arg(id).arg(static_cast<int>(f.kind)).arg(f.text);
        };
    }
    std::function<void(quint64)> stale() {
        return [this](quint64 id) { lines << QStringLiteral("stale %1").arg(id); };
    }
};

} // namespace

class TestViewsJobs : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void throttlePassesFirstForcedAndEvery50ms() {
        QCOMPARE(ProgressThrottle::kInterval, 50ms);
        ProgressThrottle t;
        const auto t0 = ProgressThrottle::Clock::time_point{} + 10s;
        QVERIFY(t.pass(false, t0)); // the first report always goes out
        QVERIFY(!t.pass(false, t0 + 10ms));
        QVERIFY(t.pass(true, t0 + 10ms));   // forced: goes out and restarts the interval
        QVERIFY(!t.pass(false, t0 + 59ms)); // 49 ms after the forced one
        QVERIFY(t.pass(false, t0 + 60ms));  // 50 ms after it
        QVERIFY(!t.pass(false, t0 + 109ms));
        QVERIFY(t.pass(false, t0 + 200ms));

        ProgressThrottle s;
        QVERIFY(s.passStage("placement", false, t0));
        QVERIFY(!s.passStage("placement", false, t0 + 1ms));
        QVERIFY(s.passStage("annealing", false, t0 + 2ms)); // a stage change always passes
        QVERIFY(!s.passStage("annealing", false, t0 + 3ms));
        QVERIFY(s.passStage("annealing", true, t0 + 4ms)); // e.g. the stage's end
        QVERIFY(!s.passStage("annealing", false, t0 + 53ms));
        QVERIFY(s.passStage("annealing", false, t0 + 54ms));
    }

    void stageWeightedProgressOnExplicitEvents() {
        // Stage weights (percent of a run): placement 1, row count 1, baselines 2, seeding 6,
        // annealing 60 (4 levels), final search 20, validate 10, communication 100.
        const StageWeights w{{1, 1, 2, 6, 60, 20, 10, 100}};
        auto event = [](const char* stage, std::optional<int> level = std::nullopt) {
            PlanEvent e;
            e.stage = stage;
            e.fraction = 0.123; // the planner's own fraction is not used
            if (level) {
                LevelStats s;
                s.level = *level;
                e.level = s;
            }
            return e;
        };
        // One node: W = 100, so every stage starts at the sum of the weights before it, in percent.
        StageProgress one(w, 4, false);
        const std::vector<std::pair<PlanEvent, double>> oneNode = {
            {event("placement"), 0.00},    {event("row count"), 0.01},    {event("baselines"), 0.02},
            {event("seeding"), 0.04},      {event("annealing"), 0.10},    {event("annealing", 0), 0.25},
            {event("annealing", 1), 0.40}, {event("annealing", 2), 0.55}, {event("annealing", 3), 0.70},
            {event("polish"), 0.70},       {event("polish"), 0.70},       {event("validate"), 0.90},
            {event("done"), 1.00}};
        for (const auto& [e, expected] : oneNode) {
            const double f = one.update(e);
            QVERIFY2(
                std::abs(f - expected) < 1e-12,
                qPrintable(
                    QStringLiteral("%1: %2, expected %3").arg(QString::fromStdString(e.stage)).arg(f).arg(expected)));
        }
        QCOMPARE(one.stageStart(planner_stage_index("communication")), 1.0);
        QCOMPARE(one.stageShare(planner_stage_index("communication")), 0.0);
        // Two nodes: W = 200; communication is the last half.
        StageProgress two(w, 4, true);
        const std::vector<std::pair<PlanEvent, double>> twoNodes = {
            {event("placement"), 0.0},         {event("row count"), 0.005},        {event("baselines"), 0.01},
            {event("seeding"), 0.02},          {event("annealing"), 0.05},         {event("annealing", 0), 0.125},
            {event("annealing", 1), 0.20},     {event("annealing", 3), 0.35},      {event("polish"), 0.35},
            {event("validate"), 0.45},         {event("communication"), 0.50},     {event("communication", 0), 0.625},
            {event("communication", 1), 0.75}, {event("communication", 2), 0.875}, {event("done"), 1.0}};
        for (const auto& [e, expected] : twoNodes)
            QVERIFY2(std::abs(two.update(e) - expected) < 1e-12, e.stage.c_str());
        // Never backwards: an earlier stage's event or an unknown stage keeps the fraction.
        StageProgress back(w, 4, false);
        QCOMPARE(back.update(event("annealing", 1)), 0.40);
        QCOMPARE(back.update(event("seeding")), 0.40);
        QCOMPARE(back.update(event("a stage the planner may add")), 0.40);
        QCOMPARE(back.update(event("annealing", 9)), 0.70); // more levels than budgeted: the stage's end
        // No usable weights: the seven one-node stages weigh the same.
        StageProgress even(StageWeights{}, 2, false);
        QVERIFY(std::abs(even.update(event("seeding")) - 3.0 / 7.0) < 1e-12);
        QVERIFY(std::abs(even.update(event("annealing", 0)) - 4.5 / 7.0) < 1e-12);

        // Measured shares from a run's timings: "bound" counts to placement; the untimed
        // communication stage takes the fallback's share at the scale of the common stages
        // (fallback 7 units over the seven common stages, the run 9.1 s: communication 9.1 s).
        const std::map<std::string, double> timings = {{"placement", 0.2}, {"bound", 0.1},    {"row count", 0.1},
                                                       {"baselines", 0.2}, {"seeding", 0.4},  {"annealing", 6.0},
                                                       {"polish", 2.0},    {"validate", 0.1}, {"total", 9.1}};
        const StageWeights measured = stage_weights_from(timings, StageWeights{{1, 1, 1, 1, 1, 1, 1, 7}});
        const std::array<double, kPlanStageCount> expected = {0.3, 0.1, 0.2, 0.4, 6.0, 2.0, 0.1, 9.1};
        for (int s = 0; s < kPlanStageCount; ++s)
            QVERIFY2(std::abs(measured.share[static_cast<std::size_t>(s)] - expected[static_cast<std::size_t>(s)]) <
                         1e-12,
                     kPlanStages[static_cast<std::size_t>(s)].name);
        // On one node the run's own shares: seeding starts at (0.3 + 0.1 + 0.2) / 9.1 of the time.
        StageProgress fromRun(measured, 4, false);
        QVERIFY(std::abs(fromRun.update(event("seeding")) - 0.6 / 9.1) < 1e-12);
        QVERIFY(std::abs(fromRun.update(event("polish")) - 7.0 / 9.1) < 1e-12);
        // Timings without any stage time: the fallback as it is.
        const StageWeights none = stage_weights_from({{"total", 0.0}}, w);
        QCOMPARE(none.share, w.share);
        QCOMPARE(planner_stage_index("done"), -1);
        QCOMPARE(planner_stage_index("bound"), -1);
        QCOMPARE(planner_stage_index("polish"), 5);
        // The defaults are the stage table's weights, in its order.
        QCOMPARE(StageWeights::defaults().share,
                 (std::array<double, kPlanStageCount>{0.94, 0.04, 0.67, 2.30, 13.36, 81.60, 0.01, 631.0}));
    }

    void stageWeightsFollowTheBudgets() {
        // Weights measured at the default budgets (seeds 32, 12 x 1000 steps x population 8, 40,000
        // polish evaluations) carried to 1,000,000 steps per level and no final search: annealing x 1000,
        // polish / 40,000; the other stages keep their share.
        const StageWeights w{{1, 1, 2, 6, 60, 20, 10, 100}};
        PlannerBudgets big;
        big.annealing.steps = 1000000;
        big.polish_evaluations = 0;
        big.seeding.candidates = 64;
        const StageWeights scaled = scale_stage_weights(w, PlannerBudgets{}, big);
        const StageWeights back = scale_stage_weights(scaled, big, PlannerBudgets{});
        const std::array<double, kPlanStageCount> expected{1, 1, 2, 12, 60000, 0.0005, 10, 100};
        for (std::size_t s = 0; s < expected.size(); ++s) {
            QVERIFY2(std::abs(scaled.share[s] - expected[s]) <= 1e-12 * expected[s], kPlanStages[s].name);
            // Back to the defaults: the weights as measured.
            QVERIFY2(std::abs(back.share[s] - w.share[s]) <= 1e-12 * w.share[s], kPlanStages[s].name);
        }
        // With the default table at 1,000,000 steps the first of 12 annealing levels ends near 1/12 of the
        // run: annealing starts after 0.94 + 0.04 + 0.67 + 2.30 = 3.95 of 13,445.56 units.
        PlannerBudgets million;
        million.annealing.steps = 1000000;
        const StageWeights d = scale_stage_weights(StageWeights::defaults(), PlannerBudgets{}, million);
        const double total = 0.94 + 0.04 + 0.67 + 2.30 + 13360.0 + 81.60 + 0.01;
        StageProgress progress(d, 12, false);
        PlanEvent level;
        level.stage = "annealing";
        level.level = LevelStats{};
        const double first = progress.update(level);
        QVERIFY2(std::abs(first - (3.95 + 13360.0 / 12) / total) < 1e-12, qPrintable(QString::number(first)));
        QVERIFY(first > 0.08 && first < 0.09); // before: (3.95 + 13.36 / 12) / 98.92 = 0.051
        // The queue gives each job its budgets' weights; weights set without budgets are used as they are.
        PlanJobQueue jobs;
        QCOMPARE(jobs.stageWeights(PlannerBudgets{}).share, StageWeights::defaults().share);
        QCOMPARE(jobs.stageWeights(million).share, d.share);
        jobs.setStageWeights(w, big);
        QCOMPARE(jobs.stageWeights(big).share, w.share);
        jobs.setStageWeights(w);
        QCOMPARE(jobs.stageWeights(million).share, w.share);
    }

    void fifoIdsAndDeliveryOnTheTrackerThread() {
        JobTracker tracker(JobTracker::Policy::EveryResult, 1);
        QSignalSpy started(&tracker, &JobTracker::started);
        QSignalSpy idle(&tracker, &JobTracker::idle);
        std::atomic<bool> release{false};
        Log log;
        QThread* const gui = QThread::currentThread();
        std::atomic<QThread*> worker{nullptr};
        QThread* deliveredOn = nullptr;
        QCOMPARE(tracker.nextId(), quint64(1));
        const quint64 a = tracker.start<int>(
            [&](JobContext& c) {
                worker = QThread::currentThread();
                waitFor(release, c);
                return 10;
            },
            [&](quint64 id, const std::shared_ptr<const int>& r) {
                deliveredOn = QThread::currentThread();
                log.done()(id, r);
            });
        const quint64 b = tracker.start<int>([](JobContext&) { return 20; }, log.done());
        const quint64 c = tracker.start<int>([](JobContext&) { return 30; }, log.done());
        QCOMPARE(a, quint64(1));
        QCOMPARE(b, quint64(2));
        QCOMPARE(c, quint64(3));
        // One thread: a runs (started inside start()), b and c wait in order.
        QCOMPARE(started.count(), 1);
        QCOMPARE(started.at(0).at(0).toULongLong(), a);
        QCOMPARE(tracker.runningCount(), 1);
        QCOMPARE(tracker.pendingCount(), 2);
        QCOMPARE(tracker.runningJobs(), std::vector<quint64>{a});
        QVERIFY(tracker.isActive(b));
        QVERIFY(!tracker.isActive(4));
        release = true;
        QTRY_COMPARE_WITH_TIMEOUT(idle.count(), 1, 20000);
        QCOMPARE(log.lines, (QStringList{QStringLiteral("done 1 = 10"), QStringLiteral("done 2 = 20"),
                                         QStringLiteral("done 3 = 30")}));
        QCOMPARE(started.count(), 3);
        QCOMPARE(started.at(2).at(0).toULongLong(), c);
        QVERIFY(worker.load() != nullptr && worker.load() != gui);
        QCOMPARE(deliveredOn, gui);
        QCOMPARE(tracker.runningCount(), 0);
        QVERIFY(!tracker.isActive(a));
    }

    void cancelRemovesPendingAndFlagsRunning() {
        JobTracker tracker(JobTracker::Policy::EveryResult, 1);
        QSignalSpy removed(&tracker, &JobTracker::removed);
        QSignalSpy idle(&tracker, &JobTracker::idle);
        Log log;
        std::atomic<bool> never{false};
        const quint64 a = tracker.start<int>([&](JobContext& c) { return waitFor(never, c) ? 1 : -1; }, log.done());
        const quint64 b = tracker.start<int>([](JobContext&) { return 2; }, log.done());
        const quint64 c = tracker.start<int>([](JobContext&) { return 3; }, log.done());
        QVERIFY(tracker.cancel(b)); // pending: removed, never runs
        QCOMPARE(removed.count(), 1);
        QCOMPARE(removed.at(0).at(0).toULongLong(), b);
        QVERIFY(!tracker.cancel(b));
        QVERIFY(!tracker.cancel(99));
        QCOMPARE(tracker.pendingCount(), 1);
        QVERIFY(tracker.cancel(a)); // running: its flag is set, it returns what it has
        QTRY_COMPARE_WITH_TIMEOUT(idle.count(), 1, 20000);
        QCOMPARE(log.lines, (QStringList{QStringLiteral("done %1 = -1").arg(a), QStringLiteral("done %1 = 3").arg(c)}));

        // cancelAll: pending ones removed oldest first, the running one flagged.
        const quint64 d = tracker.start<int>([&](JobContext& c) { return waitFor(never, c) ? 4 : -4; }, log.done());
        const quint64 e = tracker.start<int>([](JobContext&) { return 5; }, log.done());
        const quint64 f = tracker.start<int>([](JobContext&) { return 6; }, log.done());
        tracker.cancelAll();
        QCOMPARE(removed.count(), 3);
        QCOMPARE(removed.at(1).at(0).toULongLong(), e);
        QCOMPARE(removed.at(2).at(0).toULongLong(), f);
        QTRY_COMPARE_WITH_TIMEOUT(idle.count(), 2, 20000);
        QCOMPARE(log.lines.last(), QStringLiteral("done %1 = -4").arg(d));
    }

    void invalidateDropsValuesAndResultsOfOlderJobs() {
        JobTracker tracker(JobTracker::Policy::EveryResult, 1);
        QSignalSpy idle(&tracker, &JobTracker::idle);
        Log log;
        std::atomic<bool> release{false};
        QCOMPARE(tracker.generation(), quint64(1));
        const auto work = [&](JobContext& c) {
            const quint64 id = c.id();
            c.post([&log, id] { log.lines << QStringLiteral("post %1").arg(id); });
            waitFor(release, c);
            c.post([&log, id] { log.lines << QStringLiteral("late post %1").arg(id); });
            return static_cast<int>(100 + id);
        };
        const quint64 a = tracker.start<int>(work, log.done(), log.failed(), log.stale());
        const quint64 b = tracker.start<int>(work, log.done(), log.failed(), log.stale()); // waits behind a
        QTRY_COMPARE_WITH_TIMEOUT(log.lines.size(), 1, 20000);                             // a's first post arrived
        tracker.invalidate(); // a and b (already queued) belong to generation 1
        QCOMPARE(tracker.generation(), quint64(2));
        const quint64 c = tracker.start<int>(work, log.done(), log.failed(), log.stale());
        release = true;
        QTRY_COMPARE_WITH_TIMEOUT(idle.count(), 1, 20000);
        // Superseded jobs still ran (they are not cancelled) but only their end is reported, as stale.
        QCOMPARE(log.lines, (QStringList{QStringLiteral("post %1").arg(a), QStringLiteral("stale %1").arg(a),
                                         QStringLiteral("stale %1").arg(b), QStringLiteral("post %1").arg(c),
                                         QStringLiteral("late post %1").arg(c),
                                         QStringLiteral("done %1 = %2").arg(c).arg(100 + c)}));
    }

    void latestResultWins() {
        JobTracker tracker(JobTracker::Policy::LatestResult, 2);
        QSignalSpy idle(&tracker, &JobTracker::idle);
        Log log;
        std::atomic<bool> releaseA{false}, releaseB{false};
        const quint64 a = tracker.start<int>([&](JobContext& c) { return waitFor(releaseA, c) ? 1 : -1; }, log.done(),
                                             log.failed(), log.stale());
        const quint64 b = tracker.start<int>([&](JobContext& c) { return waitFor(releaseB, c) ? 2 : -2; }, log.done(),
                                             log.failed(), log.stale());
        QCOMPARE(tracker.generation(), quint64(3)); // each start() began a generation
        QCOMPARE(tracker.runningCount(), 2);        // two threads: both run
        releaseB = true;                            // the newer one ends first ...
        QTRY_COMPARE_WITH_TIMEOUT(log.lines.size(), 1, 20000);
        releaseA = true; // ... and the older one's later answer is dropped
        QTRY_COMPARE_WITH_TIMEOUT(idle.count(), 1, 20000);
        QCOMPARE(log.lines, (QStringList{QStringLiteral("done %1 = 2").arg(b), QStringLiteral("stale %1").arg(a)}));
    }

    /// What a work function throws reaches `failed` with its kind (from the type) and its text in the
    /// studio's words; `done` never sees a null result; without a `failed` callback nothing is delivered.
    void throwingWorkEndsWithItsFailure() {
        JobTracker tracker(JobTracker::Policy::EveryResult, 1);
        QSignalSpy idle(&tracker, &JobTracker::idle);
        Log log;
        auto start = [&](std::function<int(JobContext&)> work) { tracker.start<int>(work, log.done(), log.failed()); };
        start([](JobContext&) -> int { throw std::runtime_error("boom"); });
        start([](JobContext&) -> int { throw Cancelled(); });
        start([](JobContext&) -> int { throw storage::LibraryBusy("lib: library is in use by another process"); });
        start([](JobContext&) -> int { throw storage::LibraryReadOnly("lib"); });
        start([](JobContext&) -> int { throw InputError("window: ", {"split", "40", "split 40"}, " but no"); });
        start([](JobContext&) -> int { throw std::bad_alloc(); });
        start([](JobContext&) -> int { throw 7; });
        tracker.start<int>([](JobContext&) -> int { throw std::runtime_error("unheard"); }, log.done());
        start([](JobContext&) { return 9; });
        QTRY_COMPARE_WITH_TIMEOUT(idle.count(), 1, 20000);
        QCOMPARE(log.lines,
                 (QStringList{QStringLiteral("failed 1 (kind 5): boom"), QStringLiteral("failed 2 (kind 0): cancelled"),
                              QStringLiteral("failed 3 (kind 1): lib: library is in use by another process"),
                              QStringLiteral("failed 4 (kind 2): lib: library is read-only (cannot write)"),
                              QStringLiteral("failed 5 (kind 3): window: \"windows of N samples\" = 40 but no"),
                              QStringLiteral("failed 6 (kind 4): out of memory"),
                              QStringLiteral("failed 7 (kind 5): the job failed without an error message"),
                              QStringLiteral("done 9 = 9")}));
    }

    void shutdownCancelsWaitsAndDeliversNothing() {
        Log log;
        std::atomic<bool> never{false};
        std::atomic<bool> sawCancel{false}, sawShutdown{false};
        {
            JobTracker tracker(JobTracker::Policy::EveryResult, 1);
            tracker.start<int>(
                [&](JobContext& c) {
                    waitFor(never, c);
                    sawCancel = c.cancelRequested();
                    sawShutdown = c.shutdownFlag().load();
                    c.post([&log] { log.lines << QStringLiteral("post"); });
                    return 1;
                },
                log.done());
            tracker.start<int>([](JobContext&) { return 2; }, log.done()); // pending: dropped
            tracker.shutdown();
            QVERIFY(sawCancel.load());
            QVERIFY(sawShutdown.load());
            QCOMPARE(tracker.pendingCount(), 0);
            // A start after shutdown never runs.
            tracker.start<int>([](JobContext&) { return 3; }, log.done());
            QCOMPARE(tracker.runningCount(), 0);
            QCoreApplication::processEvents();
            QCoreApplication::processEvents();
        }
        QCoreApplication::processEvents();
        QVERIFY2(log.lines.isEmpty(), qPrintable(log.lines.join(QLatin1Char(','))));
    }

    void runReplayIdsAndRestores() {
        RunReplay replay;
        auto plan = std::make_shared<const PlanResult>();
        auto window = std::make_shared<const Trace>();
        QCOMPARE(replay.store(0, plan, window), qint64(-1)); // unsaved plans count down
        QCOMPARE(replay.store(0, plan, window), qint64(-2));
        QCOMPARE(replay.store(7, plan, window), qint64(7));
        QCOMPARE(replay.store(7, plan, window), qint64(7)); // a saved id is replaced, not added
        std::vector<qint64> ids;
        for (const auto& [id, entry] : replay.entries())
            ids.push_back(id);
        QCOMPARE(ids, (std::vector<qint64>{-2, -1, 7}));
        QVERIFY(replay.contains(-1));
        QVERIFY(replay.find(7) && replay.find(7)->plan == plan && replay.find(7)->window == window);
        QVERIFY(!replay.find(8));

        // Restores go through the planner queue; a second restore of the same run queues nothing.
        PlanJobQueue jobs;
        QSignalSpy failed(&jobs, &PlanJobQueue::failed);
        storage::RunEntry run;
        run.id = 3;
        run.trace = "syn";
        run.window = "all";
        const QString missing = QDir::temp().filePath(QStringLiteral("routepack-no-such-dir/none.routepack"));
        const quint64 job = replay.restore(jobs, missing, run, false, QStringLiteral("saved run 3"));
        QCOMPARE(job, quint64(1));
        QCOMPARE(replay.restore(jobs, missing, run, true, QStringLiteral("saved run 3")), job);
        QCOMPARE(replay.pendingRestores(), 1);
        QCOMPARE(jobs.queuedCount() + (jobs.isBusy() ? 1 : 0), 1);
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 20000); // the library does not exist
        QCOMPARE(failed.at(0).at(0).toULongLong(), job);
        const auto r = replay.takeRestore(job);
        QVERIFY(r.has_value());
        QCOMPARE(r->run, qint64(3));
        QCOMPARE(r->show, false); // as first asked
        QVERIFY(!replay.takeRestore(job));

        replay.clear();
        QVERIFY(replay.entries().empty());
        QCOMPARE(replay.store(0, plan, window), qint64(-3)); // unique in the session
    }

    void exportWritersWriteExactBytesAndWordErrors() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        // writeTextFile: the text and one newline; an unwritable path named in the error.
        const QString f = dir.filePath(QStringLiteral("a.txt"));
        QString error;
        QVERIFY(writeTextFile(f, "abc", &error));
        QCOMPARE(test::read_file(f.toStdString()), std::string("abc\n"));
        const QString bad = dir.filePath(QStringLiteral("no/such/dir/a.txt"));
        QVERIFY(!writeTextFile(bad, "abc", &error));
        QVERIFY2(error.startsWith(bad + QStringLiteral(": cannot write (")), qPrintable(error));

        // A plan of 1 MoE layer (absolute layer 1 of 2) with 4 experts on 2 EP ranks, LPT = swap of 0 and 3.
        auto plan = std::make_shared<PlanResult>();
        plan->model.name = "tiny";
        plan->model.num_hidden_layers = 2;
        plan->model.experts = 4;
        plan->model.top_k = 1;
        plan->model.moe_layers = {1};
        plan->placement.lpt = identity_placement(1, 4, 2);
        std::swap(plan->placement.lpt.slot[0], plan->placement.lpt.slot[3]);
        const QString vllm = dir.filePath(QStringLiteral("map.json"));
        const ExportResult ok = writeExpertMap(*plan, QStringLiteral("vllm"), vllm);
        QVERIFY2(!ok.error, qPrintable(ok.message));
        QCOMPARE(ok.message, QStringLiteral("Expert map (vllm) written to %1.").arg(vllm));
        const std::string text = test::read_file(vllm.toStdString());
        QCOMPARE(text, expert_map_json(plan->placement.lpt, plan->model, ExpertMapFormat::VLLM) + "\n");
        QVERIFY2(QString::fromStdString(text)
                     .remove(QLatin1Char(' '))
                     .remove(QLatin1Char('\n'))
                     .contains(QStringLiteral("[[3,1,2,0]]")),
                 text.c_str());
        const ExportResult unknown = writeExpertMap(*plan, QStringLiteral("nope"), vllm);
        QVERIFY(unknown.error);
        QCOMPARE(unknown.message,
                 QString::fromStdString(test::error_of<InputError>([] { parse_expert_map_format("nope"); })));
        QCOMPARE(test::read_file(vllm.toStdString()), text); // the refused export left the file alone

        const ExportResult json = writePlanJson(*plan, dir.filePath(QStringLiteral("plan.json")));
        QVERIFY2(!json.error, qPrintable(json.message));
        QCOMPARE(test::read_file(dir.filePath(QStringLiteral("plan.json")).toStdString()), plan_to_json(*plan) + "\n");
        const ExportResult denied = writePlanJson(*plan, bad);
        QVERIFY(denied.error);
        QVERIFY2(denied.message.startsWith(bad + QStringLiteral(": cannot write (")), qPrintable(denied.message));
    }
};

QTEST_MAIN(TestViewsJobs)
#include "tst_views_jobs.moc"
