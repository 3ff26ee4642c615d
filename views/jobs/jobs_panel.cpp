#include "views/jobs/jobs_panel.h"

#include "views/jobs/plan_jobs.h"

#include <QDockWidget>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMainWindow>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace routepack::views {

namespace {

enum Column { kJob, kWhat, kState, kProgress, kQueued, kTook, kResult, kColumns };

bool ended(const JobRecord& r) {
    return r.state != QStringLiteral("queued") && r.state != QStringLiteral("running");
}

/// "3.42 s" from `from` to `to` (or now while running), "" before it started.
QString took(const JobRecord& r) {
    if (!r.started.isValid()) return {};
    const QDateTime to = r.ended.isValid() ? r.ended : QDateTime::currentDateTimeUtc();
    return QStringLiteral("%1 s").arg(static_cast<double>(r.started.msecsTo(to)) / 1000.0, 0, 'f', 2);
}

} // namespace

JobsPanel::JobsPanel(PlanJobQueue* queue, QWidget* parent) : QWidget(parent), queue_(queue) {
    setObjectName(QStringLiteral("jobsPanel"));
    list_ = new QTreeWidget(this);
    list_->setObjectName(QStringLiteral("jobsList"));
    list_->setRootIsDecorated(false);
    list_->setColumnCount(kColumns);
    list_->setHeaderLabels(
        {tr("Job"), tr("What"), tr("State"), tr("Progress"), tr("Queued"), tr("Took"), tr("Result")});
    list_->header()->setStretchLastSection(true);
    cancel_ = new QPushButton(tr("Cancel job"), this);
    cancel_->setObjectName(QStringLiteral("jobsCancel"));
    clear_ = new QPushButton(tr("Clear ended"), this);
    clear_->setObjectName(QStringLiteral("jobsClear"));
    auto* bar = new QHBoxLayout;
    bar->addWidget(cancel_);
    bar->addWidget(clear_);
    bar->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(list_, 1);
    layout->addLayout(bar);
    connect(cancel_, &QPushButton::clicked, this, &JobsPanel::cancelSelected);
    connect(clear_, &QPushButton::clicked, this, &JobsPanel::clearEnded);
    connect(list_, &QTreeWidget::currentItemChanged, this, &JobsPanel::updateButtons);

    connect(queue_, &PlanJobQueue::jobQueued, this, [this](quint64 id, const QString& label) {
        JobRecord& r = record(id, label);
        r.queued = QDateTime::currentDateTimeUtc();
        showRecord(r);
    });
    connect(queue_, &PlanJobQueue::jobStarted, this, [this](quint64 id, const QString& label) {
        JobRecord& r = record(id, label);
        r.state = QStringLiteral("running");
        r.started = QDateTime::currentDateTimeUtc();
        showRecord(r);
    });
    connect(queue_, &PlanJobQueue::progress, this, [this](quint64 id, const QString& stage, double fraction) {
        JobRecord& r = record(id);
        r.fraction = fraction;
        r.stage = stage;
        showRecord(r);
    });
    connect(queue_, &PlanJobQueue::runProgress, this,
            [this](quint64 id, int index, int count, const QString& stage, double, double overall) {
                JobRecord& r = record(id);
                r.fraction = overall;
                r.stage = tr("window %1 of %2: %3").arg(index + 1).arg(count).arg(stage);
                showRecord(r);
            });
    connect(queue_, &PlanJobQueue::finished, this, [this](const PlanJobResult& p) {
        QString result =
            p.runId > 0 ? tr("run %1, max_g U %2").arg(p.runId).arg(p.plan->routepack.metrics.score.max_u, 0, 'f', 4)
                        : tr("max_g U %1, not saved").arg(p.plan->routepack.metrics.score.max_u, 0, 'f', 4);
        if (!p.saveError.isEmpty()) result += QStringLiteral(" (%1)").arg(p.saveError);
        end(p.job, p.plan->cancelled ? QStringLiteral("cancelled") : QStringLiteral("finished"), result);
    });
    connect(queue_, &PlanJobQueue::runFinished, this, [this](const RunPlanResult& r) {
        QString result = tr("%1 of %2 windows").arg(r.finishedWindows()).arg(r.windows.size());
        std::vector<qint64> ids;
        for (const qint64 id : r.runIds)
            if (id > 0) ids.push_back(id);
        if (!ids.empty()) result += tr(", runs %1..%2").arg(ids.front()).arg(ids.back());
        if (r.wholeRunId > 0) result += tr(", whole run %1").arg(r.wholeRunId);
        if (!r.error.isEmpty()) result += QStringLiteral(": ") + r.error;
        end(r.job,
            !r.error.isEmpty() ? QStringLiteral("failed")
            : r.cancelled      ? QStringLiteral("cancelled")
                               : QStringLiteral("finished"),
            result);
    });
    connect(queue_, &PlanJobQueue::failed, this,
            [this](quint64 id, const QString& message) { end(id, QStringLiteral("failed"), message); });
    connect(queue_, &PlanJobQueue::cancelledQueued, this,
            [this](quint64 id) { end(id, QStringLiteral("removed"), tr("cancelled before it started")); });
    connect(queue_, &PlanJobQueue::staleDropped, this, [this](quint64 id, const QString& library) {
        end(id, QStringLiteral("dropped"), tr("another library was opened; its run stays in %1").arg(library));
    });
    updateButtons();
}

QSize JobsPanel::sizeHint() const {
    return {720, 8 * fontMetrics().height() + 40};
}

const JobRecord* JobsPanel::job(quint64 id) const {
    for (const JobRecord& r : jobs_)
        if (r.id == id) return &r;
    return nullptr;
}

JobRecord& JobsPanel::record(quint64 id, const QString& label) {
    for (JobRecord& r : jobs_)
        if (r.id == id) {
            if (r.label.isEmpty()) r.label = label;
            return r;
        }
    JobRecord r;
    r.id = id;
    r.label = label;
    r.queued = QDateTime::currentDateTimeUtc();
    jobs_.push_back(r);
    return jobs_.back();
}

QTreeWidgetItem* JobsPanel::itemOf(quint64 id) const {
    for (int i = 0; i < list_->topLevelItemCount(); ++i)
        if (list_->topLevelItem(i)->data(kJob, Qt::UserRole).toULongLong() == id) return list_->topLevelItem(i);
    return nullptr;
}

void JobsPanel::showRecord(const JobRecord& r) {
    QTreeWidgetItem* item = itemOf(r.id);
    if (!item) {
        item = new QTreeWidgetItem;
        item->setData(kJob, Qt::UserRole, QVariant::fromValue(r.id));
        list_->insertTopLevelItem(0, item); // newest first
    }
    item->setText(kJob, QString::number(r.id));
    item->setText(kWhat, r.label);
    item->setText(kState, r.state);
    const bool done = r.state == QStringLiteral("finished");
    item->setText(kProgress, r.state == QStringLiteral("running")
                                 ? QStringLiteral("%1 % (%2)").arg(100.0 * r.fraction, 0, 'f', 0).arg(r.stage)
                             : done ? QStringLiteral("100 %")
                                    : QString());
    item->setText(kQueued, r.queued.toLocalTime().toString(QStringLiteral("HH:mm:ss")));
    item->setText(kTook, took(r));
    item->setText(kResult, r.result);
    item->setToolTip(kResult, r.result);
    updateButtons();
}

void JobsPanel::end(quint64 id, const QString& state, const QString& result) {
    JobRecord& r = record(id);
    r.state = state;
    r.result = result;
    r.ended = QDateTime::currentDateTimeUtc();
    if (state == QStringLiteral("finished")) r.fraction = 1;
    showRecord(r);
}

bool JobsPanel::cancelSelected() {
    const QTreeWidgetItem* item = list_->currentItem();
    if (!item) return false;
    const JobRecord* r = job(item->data(kJob, Qt::UserRole).toULongLong());
    if (!r || ended(*r)) return false;
    return queue_->cancel(r->id);
}

void JobsPanel::clearEnded() {
    jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(), ended), jobs_.end());
    for (int i = list_->topLevelItemCount() - 1; i >= 0; --i)
        if (!job(list_->topLevelItem(i)->data(kJob, Qt::UserRole).toULongLong())) delete list_->takeTopLevelItem(i);
    updateButtons();
}

QString JobsPanel::lineText(quint64 id, int column) const {
    const QTreeWidgetItem* item = itemOf(id);
    return item ? item->text(column) : QString();
}

void JobsPanel::updateButtons() {
    const QTreeWidgetItem* item = list_->currentItem();
    const JobRecord* r = item ? job(item->data(kJob, Qt::UserRole).toULongLong()) : nullptr;
    cancel_->setEnabled(r && !ended(*r));
    clear_->setEnabled(std::any_of(jobs_.begin(), jobs_.end(), ended));
}

QDockWidget* addJobsDock(QMainWindow* window, PlanJobQueue* queue) {
    auto* dock = new QDockWidget(JobsPanel::tr("Jobs"), window);
    dock->setObjectName(QStringLiteral("jobsDock"));
    dock->setWidget(new JobsPanel(queue, dock));
    window->addDockWidget(Qt::BottomDockWidgetArea, dock);
    dock->hide();
    return dock;
}

} // namespace routepack::views
