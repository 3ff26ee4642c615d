#include "views/library/library_watch.h"

#include "views/jobs/job_tracker.h"

#include <QTimer>

#include <sys/stat.h>

namespace routepack::views {

LibraryWatch::LibraryWatch(int intervalMs, QObject* parent)
    : QObject(parent), timer_(new QTimer(this)),
      job_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)) {
    timer_->setInterval(intervalMs);
    connect(timer_, &QTimer::timeout, this, &LibraryWatch::poll);
}

LibraryWatch::~LibraryWatch() {
    job_->shutdown();
}

void LibraryWatch::setFile(const QString& file) {
    file_ = file;
    last_ = file_.isEmpty() ? QString() : signature(file_); // the baseline: two stat calls
    job_->invalidate();                                     // a poll of the previous file says nothing of this one
    if (file_.isEmpty())
        timer_->stop();
    else
        timer_->start();
}

QString LibraryWatch::signature(const QString& file) {
    QString out;
    for (const QString& f : {file, file + QStringLiteral("-wal")}) {
        struct stat st {};
        if (!out.isEmpty()) out += QLatin1Char(';');
        if (::stat(f.toLocal8Bit().constData(), &st) != 0) {
            out += QLatin1Char('-');
            continue;
        }
        const long long ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
        out += QStringLiteral("%1:%2").arg(static_cast<long long>(st.st_size)).arg(ns);
    }
    return out;
}

void LibraryWatch::poll() {
    if (file_.isEmpty() || job_->runningCount() > 0) return;
    const QString file = file_;
    job_->start<QString>([file](JobContext&) { return signature(file); },
                         [this](quint64, const std::shared_ptr<const QString>& now) {
                             if (*now == last_) return;
                             last_ = *now;
                             Q_EMIT changed();
                         });
}

} // namespace routepack::views
