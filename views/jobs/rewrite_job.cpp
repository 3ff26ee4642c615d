#include "views/jobs/rewrite_job.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace routepack::views {

RewriteCheck describeRewrite(const gpu::RewritePlan& p) {
    RewriteCheck c;
    c.ok = true;
    c.scheme = QString::fromStdString(p.scheme);
    c.experts = p.experts;
    c.checkpointLayers = p.checkpoint_layers;
    c.layerMap = p.layer_map;
    c.shards = static_cast<int>(p.outputs.size());
    c.otherFiles = static_cast<int>(p.other_files.size());
    c.movedTensors = p.moved_tensors;
    c.expertTensors = p.expert_tensors;
    c.routerTensors = p.router_tensors;
    c.movedBytes = p.moved_bytes;
    c.totalBytes = p.total_bytes;
    c.placementFingerprint = QString::fromStdString(p.placement_fingerprint);
    c.sourceFingerprint = QString::fromStdString(p.source_fingerprint);
    return c;
}

RewriteJob::RewriteJob(QObject* parent)
    : QObject(parent), checks_(new JobTracker(JobTracker::Policy::LatestResult, 2, false, this)),
      rewrites_(new JobTracker(JobTracker::Policy::EveryResult, 1, false, this)) {
    qRegisterMetaType<routepack::views::RewriteCheck>();
    qRegisterMetaType<routepack::views::RewriteOutcome>();
}

RewriteJob::~RewriteJob() {
    rewrites_->shutdown(); // a running rewrite removes its temporary folder
    checks_->shutdown();
}

quint64 RewriteJob::check(const gpu::RewriteRequest& request) {
    const quint64 id = nextId_++;
    checks_->start<RewriteCheck>(
        [id, request](JobContext&) {
            RewriteCheck c = describeRewrite(gpu::plan_rewrite(request));
            c.id = id;
            return c;
        },
        [this](quint64, const std::shared_ptr<const RewriteCheck>& c) { Q_EMIT checked(*c); },
        [this, id](quint64, const JobFailure& failure) {
            RewriteCheck c;
            c.id = id;
            c.error = failure.text;
            Q_EMIT checked(c);
        });
    return id;
}

void RewriteJob::dropPendingChecks() {
    checks_->invalidate();
}

quint64 RewriteJob::start(const gpu::RewriteRequest& request) {
    if (isRunning()) return 0;
    const quint64 id = nextId_++;
    const bool cancelAtFirst = cancelAtFirstProgress_;
    rewrites_->start<RewriteOutcome>(
        [this, id, request, cancelAtFirst](JobContext& context) {
            std::atomic<bool>* cancel = context.cancelFlag();
            RewriteOutcome outcome;
            outcome.id = id;
            outcome.output = QString::fromStdString(request.output.string());
            // Progress, throttled here on the worker: only values cross to the GUI thread.
            bool first = true;
            const gpu::RewriteProgressFn on_progress = [&](const std::string& stage, std::uint64_t done,
                                                           std::uint64_t total) {
                if (first && cancelAtFirst) cancel->store(true);
                first = false;
                if (!context.throttle().passStage(stage, done >= total)) return;
                const double f = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
                context.post([this, s = QString::fromStdString(stage), f] { Q_EMIT progress(s, f); });
            };
            // The facts to report (rewrite_checkpoint plans again: headers only, cheap), then the rewrite.
            outcome.check = describeRewrite(gpu::plan_rewrite(request));
            outcome.report = gpu::rewrite_checkpoint(request, on_progress, cancel);
            return outcome;
        },
        [this](quint64, const std::shared_ptr<const RewriteOutcome>& outcome) { Q_EMIT finished(*outcome); },
        [this](quint64, const JobFailure& failure) {
            if (failure.kind == JobFailure::Kind::Cancelled)
                Q_EMIT cancelled();
            else
                Q_EMIT failed(failure.text);
        });
    return id;
}

void RewriteJob::cancel() {
    rewrites_->cancelRunning();
}

void RewriteJob::waitForDone() {
    rewrites_->waitForDone();
    checks_->waitForDone();
}

} // namespace routepack::views
