#pragma once
// Checkpoint rewrite off the GUI thread: RewriteJob runs gpu::plan_rewrite ("Check": headers only)
// and gpu::rewrite_checkpoint ("Rewrite") on worker threads (two JobTrackers, views/jobs/job_tracker.h) and
// hands every result back to the GUI thread as a value (RewriteCheck, RewriteOutcome).
#include "gpu/rewrite.h"
#include "views/jobs/job_tracker.h"

#include <QMetaType>
#include <QObject>
#include <QString>

#include <map>
#include <vector>

namespace routepack::views {

/// What Check found: the facts of gpu::plan_rewrite's RewritePlan, or why the rewrite is refused.
struct RewriteCheck {
    quint64 id = 0;  ///< RewriteJob::check's id (0 for the facts of a rewrite)
    bool ok = false; ///< false: `error` says why (plan_rewrite's error as JobFailure::text words it)
    QString error;
    QString scheme;                    ///< a layout of core/model/moe_names.h ("hf-per-expert", ...)
    int experts = 0;                   ///< experts per MoE layer of the checkpoint
    std::vector<int> checkpointLayers; ///< MoE layers of the checkpoint, ascending
    std::map<int, int> layerMap;       ///< plan layer -> checkpoint layer used
    int shards = 0;                    ///< safetensors files
    int otherFiles = 0;                ///< files copied verbatim (config.json, index, ...)
    int movedTensors = 0;              ///< expert (and router) tensors whose bytes move
    int expertTensors = 0, routerTensors = 0;
    quint64 movedBytes = 0, totalBytes = 0;
    QString placementFingerprint, sourceFingerprint;
};

/// A finished rewrite, as a value.
struct RewriteOutcome {
    quint64 id = 0;            ///< RewriteJob::start's id
    RewriteCheck check;        ///< the facts of the plan that was executed
    gpu::RewriteReport report; ///< device, bytes written, seconds, GB/s, verified
    QString output;            ///< the output folder (now in place)
};

/// Runs rewrite checks and one rewrite at a time on worker threads (two JobTrackers: checks, two at a
/// time, latest answer wins; rewrites; the CPU executor's own oneTBB arena does the parallel copying).
/// Signals are emitted on the thread that owns the job (the GUI thread); workers never touch widgets.
/// Progress is throttled by ProgressThrottle: at most one signal per 50 ms (a stage change and each
/// stage's end always pass). Only the latest check's answer is delivered; dropPendingChecks() drops
/// the answers of checks already started (the fields changed).
class RewriteJob : public QObject {
    Q_OBJECT
public:
    explicit RewriteJob(QObject* parent = nullptr);
    /// Cancels a running rewrite (its temporary folder is removed) and waits for the workers.
    ~RewriteJob() override;

    /// Starts gpu::plan_rewrite(request) on a worker; returns its id. `checked` delivers the answer.
    quint64 check(const gpu::RewriteRequest& request);
    /// Starts gpu::rewrite_checkpoint(request) on a worker; returns its id, or 0 when a rewrite already
    /// runs. Ends with exactly one of `finished`, `failed`, `cancelled`.
    quint64 start(const gpu::RewriteRequest& request);
    /// Asks the running rewrite to stop; it removes its temporary folder and emits `cancelled`.
    void cancel();
    bool isRunning() const { return rewrites_->runningCount() > 0; }
    /// Answers of checks started so far will not be delivered.
    void dropPendingChecks();
    /// Blocks until every worker ended (tests and shutdown only; never in GUI code paths).
    void waitForDone();
    /// Test hook: the worker sets the cancel flag itself in the rewrite's first progress callback, so
    /// tests can cancel deterministically in the middle of a (small, fast) rewrite.
    void setCancelAtFirstProgressForTesting(bool on) { cancelAtFirstProgress_ = on; }

Q_SIGNALS:
    /// The latest check's answer.
    void checked(const routepack::views::RewriteCheck& result);
    /// Stage ("write" or "verify") and the fraction of that stage's bytes done, in [0, 1].
    void progress(const QString& stage, double fraction);
    /// The rewrite is complete and renamed into place.
    void finished(const routepack::views::RewriteOutcome& outcome);
    /// The rewrite was refused or failed; `message` is the error in the studio's words
    /// (JobFailure::text); nothing was left at the output.
    void failed(const QString& message);
    /// The rewrite was cancelled; nothing was left at the output.
    void cancelled();

private:
    JobTracker* checks_ = nullptr;   ///< Policy::LatestResult
    JobTracker* rewrites_ = nullptr; ///< one rewrite at a time
    quint64 nextId_ = 1;             ///< ids of checks and rewrites, one sequence
    bool cancelAtFirstProgress_ = false;
};

/// The facts of a checked rewrite (gpu::plan_rewrite's RewritePlan) as a RewriteCheck with ok = true.
RewriteCheck describeRewrite(const gpu::RewritePlan& plan);

} // namespace routepack::views

Q_DECLARE_METATYPE(routepack::views::RewriteCheck)
Q_DECLARE_METATYPE(routepack::views::RewriteOutcome)
