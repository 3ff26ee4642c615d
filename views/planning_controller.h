#pragma once
// The studio's planning: the planner job queue (views/jobs/plan_jobs.h), the session's plans and
// restores of saved runs (views/jobs/run_replay.h), the progress line of the running job (its stage,
// fraction and times), cancelling, and reading a cluster run's step from its plan file. It shows no
// widget: the window shows what its signals carry, and the library tree follows the planned window.
#include "views/jobs/plan_jobs.h"
#include "views/jobs/run_replay.h"
#include "views/run/cluster_step.h"

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

class QTimer;

namespace routepack::views {

class JobTracker;
class LibraryPane;

/// A cluster run's step shown in the plan views (openClusterStep), or to open again once imported.
struct ClusterStepRef {
    qint64 clusterRun = 0;
    QString planFile, stepPath, window;
};

/// Owns the planner queue (object name "planJobs") and the run replay; GUI thread only. Every
/// status line it words goes out through status().
class PlanningController : public QObject {
    Q_OBJECT
public:
    /// `library`: the tree whose library is planned, which follows the planned window and lists the
    /// saved runs (not owned; it outlives the controller).
    explicit PlanningController(LibraryPane* library, QObject* parent = nullptr);
    ~PlanningController() override;

    /// The planner queue (its signals carry every job's progress and result).
    PlanJobQueue* queue() const { return jobs_; }
    /// The plans of this session by run id, and the restores on their way.
    const RunReplay& replay() const { return replay_; }
    /// Stops reading cluster steps (nothing is delivered afterwards); the window's destructor calls it.
    void shutdown();

    /// Queues planner job `request`: while it runs the tree shows its window and the status line its
    /// progress ("New run of T/W: <stage> (42%, 3 s)"); when it waits, the status line says so.
    /// Returns the job id.
    quint64 plan(const PlanJobRequest& request);
    /// Queues run-planning job `request` (PlanJobQueue::enqueueRun); returns the job id.
    quint64 planRun(const RunPlanRequest& request);
    /// Cancels the running job (the planner keeps its best valid plan so far); nothing when idle.
    void cancel();
    /// Queues a background restore of saved run `run`'s stored plan (RunReplay::restore): shown when it
    /// arrives if `show` and the run is still selected, else only added to the comparison.
    quint64 restoreRun(const storage::RunEntry& run, bool show);
    /// A library was opened: unless it is the one already open (`same`), results of earlier jobs are
    /// no longer shown and the session's plans are forgotten (their run ids mean other runs).
    void libraryOpened(bool same);
    /// The library tree's edit guard: false, with "A job is running: wait for it or cancel it (Esc)
    /// before you <what>." in the status line, while a planner job could save into the library;
    /// otherwise true, and restores on their way are dropped (what they show may change).
    bool mayEditLibrary(const QString& what);
    /// Forgets the session's plans of saved run `run` when it is > 0, else of window `window` of
    /// `trace` (of every window when `window` is empty).
    void forgetPlans(const QString& trace, const QString& window, qint64 run);
    /// Reads step `step` of a cluster run on a worker thread (open_cluster_step, its own library
    /// connection); stepOpened follows, or the reason in the status line. 0 without a library.
    quint64 openClusterStep(const ClusterStepRef& step);
    /// "Run 2: the saved plan (max U ..., R* = ...)": the status line of saved run `runId` shown.
    static QString savedPlanNote(qint64 runId, const routepack::PlanResult& plan);

Q_SIGNALS:
    /// What the status line shows (`error`: in red).
    void status(const QString& text, bool error);
    /// A job started (the progress bar at 0, Cancel enabled, the convergence chart emptied).
    void jobStarted();
    /// The running job's fraction done, 0..1000.
    void progressChanged(int permille);
    /// No job runs and none waits.
    void idle();
    /// A plan to show: a new run's, or a saved run's restored (`runId` < 0: not saved).
    void planReady(std::shared_ptr<const routepack::PlanResult> plan, std::shared_ptr<const routepack::Trace> window,
                   qint64 runId);
    /// Saved run `runId` restored and shown; `note` is savedPlanNote.
    void savedPlanShown(qint64 runId, const QString& note);
    /// The comparison's runs changed (a restore for it arrived).
    void compareChanged();
    /// A run-planning job ended (finished, cancelled or failed).
    void runFinished();
    /// A cluster run's step read from its plan file (openClusterStep).
    void stepOpened(const routepack::views::ClusterStepRef& step, const routepack::views::ClusterStepPlan& opened);

private:
    void connectPlanJobs();
    void connectRunJobs();
    void onFinished(const PlanJobResult& r);
    /// The progress line of lastProgress_ (and of runProgress_ for a run-planning job) with the time
    /// elapsed now (the time left only when honest); the one place that words a job's progress.
    void showProgress();
    /// What a job's stage shares depend on: its window, topology and budgets (seed aside).
    static std::string setupKey(const PlanJobRequest& rq);
    /// "<trace>/<window>" of a planner job queued by plan() ("a window" for another job).
    QString liveLabel(quint64 job) const;
    /// Selects the window that planner job `job` plans in the tree (its selection signals blocked:
    /// the views keep what they show until the job's plan arrives).
    void followLiveJob(quint64 job);

    LibraryPane* library_;
    PlanJobQueue* jobs_;
    JobTracker* stepOpen_; ///< reading a cluster run step's plan (openClusterStep)
    RunReplay replay_;     ///< plans of this session by run id, restores of saved runs on their way
    std::map<quint64, std::pair<QString, QString>> liveJobs_; ///< planner jobs queued here: trace, window
    std::pair<QString, QString> pendingLive_;           ///< the planner job being queued (plan), until it has an id
    std::map<quint64, std::string> liveSetups_;         ///< planner jobs queued here: setupKey
    std::string weightsSetup_;                          ///< setupKey of the run the stage shares were measured on
    std::tuple<quint64, QString, double> lastProgress_; ///< the running job's last stage and fraction
    /// A run-planning job's place (runProgress): job, window index, window count, the window's
    /// fraction; lastProgress_ then holds the stage and the whole run's fraction.
    std::tuple<quint64, int, int, double> runProgress_{0, 0, 0, 0.0};
    QTimer* progressTick_;   ///< re-shows the progress line between events
    QElapsedTimer jobClock_; ///< since the running job started (the progress line's times)
};

} // namespace routepack::views
