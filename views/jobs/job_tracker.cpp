#include "views/jobs/job_tracker.h"

#include "core/util/errors.h"
#include "storage/library.h"
#include "views/widgets/gui_text.h"

#include <QMetaObject>
#include <QThreadPool>

#include <new>

namespace routepack::views {

JobFailure JobFailure::of(const std::exception_ptr& error) {
    JobFailure f;
    f.text = QStringLiteral("the job failed without an error message");
    if (!error) return f;
    try {
        std::rethrow_exception(error);
    } catch (const Cancelled& e) {
        f.kind = Kind::Cancelled;
        f.text = guiErrorText(e);
    } catch (const storage::LibraryBusy& e) {
        f.kind = Kind::Busy;
        f.text = guiErrorText(e);
    } catch (const storage::LibraryReadOnly& e) {
        f.kind = Kind::ReadOnly;
        f.text = guiErrorText(e);
    } catch (const InputError& e) {
        f.kind = Kind::Input;
        f.text = guiErrorText(e);
    } catch (const std::bad_alloc& e) {
        f.kind = Kind::OutOfMemory;
        f.text = guiErrorText(e);
    } catch (const std::exception& e) {
        f.text = guiErrorText(e);
    } catch (...) {
        // Not a std::exception: the text above.
    }
    if (f.text.isEmpty()) f.text = QStringLiteral("the job failed without an error message");
    return f;
}

bool ProgressThrottle::pass(bool force, Clock::time_point now) {
    if (reported_ && !force && now - last_ < kInterval) return false;
    reported_ = true;
    last_ = now;
    return true;
}

bool ProgressThrottle::passStage(const std::string& stage, bool force, Clock::time_point now) {
    if (!pass(force || stage != stage_, now)) return false;
    stage_ = stage;
    return true;
}

const std::atomic<bool>& JobContext::shutdownFlag() const {
    return tracker_->shutdownFlag_;
}

void JobContext::post(std::function<void()> fn) const {
    tracker_->postFor(generation_, std::move(fn));
}

struct JobTracker::Job {
    quint64 id = 0;
    quint64 generation = 0;
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
    ErasedWork work;
    ErasedDone done;
    FailedFn failed;
    std::function<void(quint64)> stale;
};

JobTracker::JobTracker(Policy policy, int maxThreads, bool keepThreads, QObject* parent)
    : QObject(parent), policy_(policy), maxThreads_(maxThreads < 1 ? 1 : maxThreads), pool_(new QThreadPool(this)) {
    pool_->setMaxThreadCount(maxThreads_);
    if (keepThreads) pool_->setExpiryTimeout(-1);
}

JobTracker::~JobTracker() {
    shutdown();
}

quint64 JobTracker::startErased(ErasedWork work, ErasedDone done, FailedFn failed, std::function<void(quint64)> stale) {
    if (policy_ == Policy::LatestResult) invalidate();
    auto job = std::make_shared<Job>();
    job->id = nextId_++;
    job->generation = generation_;
    job->work = std::move(work);
    job->done = std::move(done);
    job->failed = std::move(failed);
    job->stale = std::move(stale);
    if (shutDown_) return job->id; // never runs
    pending_.push_back(job);
    launchPending();
    return job->id;
}

void JobTracker::launchPending() {
    while (!shutDown_ && !pending_.empty() && static_cast<int>(running_.size()) < maxThreads_) {
        std::shared_ptr<Job> job = pending_.front();
        pending_.pop_front();
        running_[job->id] = job;
        Q_EMIT started(job->id);
        pool_->start([this, job] {
            JobContext context(this, job->id, job->generation, job->cancel);
            std::shared_ptr<const void> result;
            JobFailure failure;
            try {
                result = job->work(context);
            } catch (...) {
                result.reset();
                failure = JobFailure::of(std::current_exception()); // worded here, off the GUI thread
            }
            // Queued behind every value the work posted: the end arrives last.
            QMetaObject::invokeMethod(
                this,
                [this, job, result = std::move(result), failure = std::move(failure)]() {
                    onEnded(job, result, failure);
                },
                Qt::QueuedConnection);
        });
    }
}

void JobTracker::onEnded(const std::shared_ptr<Job>& job, const std::shared_ptr<const void>& result,
                         const JobFailure& failure) {
    running_.erase(job->id);
    if (shutDown_) return;
    if (job->generation == generation_) {
        if (result)
            job->done(job->id, result);
        else if (job->failed)
            job->failed(job->id, failure);
    } else if (job->stale) {
        job->stale(job->id);
    }
    launchPending();
    if (running_.empty() && pending_.empty()) Q_EMIT idle();
}

void JobTracker::postFor(quint64 generation, std::function<void()> fn) {
    QMetaObject::invokeMethod(
        this,
        [this, generation, fn = std::move(fn)] {
            if (!shutDown_ && generation == generation_) fn();
        },
        Qt::QueuedConnection);
}

bool JobTracker::cancel(quint64 id) {
    if (const auto it = running_.find(id); it != running_.end()) {
        it->second->cancel->store(true);
        return true;
    }
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if ((*it)->id == id) {
            pending_.erase(it);
            Q_EMIT removed(id);
            return true;
        }
    }
    return false;
}

void JobTracker::cancelRunning() {
    for (auto& [id, job] : running_)
        job->cancel->store(true);
}

void JobTracker::cancelAll() {
    while (!pending_.empty()) {
        const quint64 id = pending_.front()->id;
        pending_.pop_front();
        Q_EMIT removed(id);
    }
    cancelRunning();
}

void JobTracker::invalidate() {
    ++generation_;
}

std::vector<quint64> JobTracker::runningJobs() const {
    std::vector<quint64> ids;
    for (const auto& [id, job] : running_)
        ids.push_back(id);
    return ids;
}

bool JobTracker::isActive(quint64 id) const {
    if (running_.count(id)) return true;
    for (const auto& job : pending_)
        if (job->id == id) return true;
    return false;
}

void JobTracker::waitForDone() {
    pool_->waitForDone();
}

void JobTracker::shutdown() {
    shutDown_ = true;
    shutdownFlag_.store(true);
    pending_.clear();
    cancelRunning();
    pool_->waitForDone();
    running_.clear(); // their ends are queued but never delivered
}

} // namespace routepack::views
