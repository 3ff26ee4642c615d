#pragma once
// The studio's Jobs panel: every planning job of the session (a window planned, a whole run of
// windows), queued, running and ended, with its progress, its times and what it left (the saved
// run, the whole run, the error), as Nsight Systems and hotspot keep their jobs. It listens to the
// PlanJobQueue's signals only; Cancel asks the queue (PlanJobQueue::cancel).
#include <QDateTime>
#include <QSize>
#include <QString>
#include <QWidget>

#include <vector>

class QDockWidget;
class QMainWindow;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace routepack::views {

class PlanJobQueue;

/// One job as the panel lists it.
struct JobRecord {
    quint64 id = 0;
    QString label; ///< PlanJobRequest::label / RunPlanRequest::label
    /// "queued", "running", "finished", "cancelled" (ended early: the best plan so far, or the windows
    /// finished), "removed" (cancelled before it started), "failed", "dropped" (another library
    /// was opened: its result was not shown).
    QString state = QStringLiteral("queued");
    double fraction = 0; ///< of the expected time, 0..1 (the queue's progress)
    QString stage;       ///< planner stage of the last progress ("window 3 of 5: annealing" for a run)
    QDateTime queued, started, ended;
    QString result; ///< "run 12, max_g U 37.99", "runs 4..8, whole run 3", the error
};

/// The Jobs panel (object name "jobsPanel"; its tree "jobsList", buttons "jobsCancel", "jobsClear").
/// Newest job first. GUI thread only.
class JobsPanel : public QWidget {
    Q_OBJECT
public:
    /// Follows `queue` (not owned; it outlives the panel).
    explicit JobsPanel(PlanJobQueue* queue, QWidget* parent = nullptr);

    /// A short panel: about six lines of jobs, so that showing it leaves the views their room.
    QSize sizeHint() const override;

    /// Every job seen, oldest first.
    const std::vector<JobRecord>& jobs() const { return jobs_; }
    /// The record of job `id` (nullptr when the panel has not seen it).
    const JobRecord* job(quint64 id) const;
    /// Cancels the selected job when it is queued or running (PlanJobQueue::cancel); false otherwise.
    bool cancelSelected();
    /// Drops every ended job from the list.
    void clearEnded();
    /// The text of column `column` of job `id`'s line (columns: job, what, state, progress, queued,
    /// took, result).
    QString lineText(quint64 id, int column) const;

private:
    JobRecord& record(quint64 id, const QString& label = {});
    void showRecord(const JobRecord& r);
    void end(quint64 id, const QString& state, const QString& result);
    QTreeWidgetItem* itemOf(quint64 id) const;
    void updateButtons();

    PlanJobQueue* queue_;
    std::vector<JobRecord> jobs_;
    QTreeWidget* list_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QPushButton* clear_ = nullptr;
};

/// Adds the Jobs panel to `window` as a bottom dock "Jobs" (object name "jobsDock"), hidden until
/// View > Jobs (the dock's toggle action) shows it; returns the dock.
QDockWidget* addJobsDock(QMainWindow* window, PlanJobQueue* queue);

} // namespace routepack::views
