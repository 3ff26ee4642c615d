#pragma once
// The studio's status bar: the status line (a job's stage, what is shown, errors in red), the job
// progress bar with Cancel, the open library's name, and the session's log of status messages
// (View > Status messages).
#include <QObject>
#include <QString>
#include <QStringList>

class QDialog;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QStatusBar;
class QToolButton;

namespace routepack::views {

class ElidedLabel;

/// Builds its widgets into a QStatusBar (the line's object name "statusLine", the Cancel button's
/// "cancelJob"). GUI thread only.
class StudioStatus : public QObject {
    Q_OBJECT
public:
    /// How many messages the log keeps (the oldest go first).
    static constexpr int kLogSize = 300;

    /// Adds the line, the progress bar, Cancel and the library's name to `bar` (and owns nothing
    /// else: the widgets belong to the bar).
    explicit StudioStatus(QStatusBar* bar);

    /// Shows `text` in the line (`error`: white on red until the next set) and adds it to the log
    /// ("HH:mm:ss  <text>", "HH:mm:ss  error: <text>"; a message repeated at once is logged once).
    /// The line elides a long text at its end; its tooltip and the log hold it whole.
    void set(const QString& text, bool error = false);
    /// The whole text of the line.
    QString text() const;
    /// True while the line shows an error.
    bool isError() const { return error_; }
    /// The log, oldest first, at most kLogSize messages.
    QStringList messages() const { return log_; }
    /// The log in a modeless dialog (parent `parent`) that follows new messages; the same dialog is
    /// raised again.
    QDialog* showLog(QWidget* parent);
    /// The library's file name (" (read-only)" appended when `readOnly`), its path as the tooltip.
    void setLibrary(const QString& name, const QString& path, bool readOnly);

    /// A planner job started: the progress bar at 0 and shown, Cancel enabled.
    void jobStarted();
    /// The running job's fraction done, 0..1000.
    void setProgress(int permille);
    /// No planner job runs: the progress bar hidden (unless busy), Cancel disabled.
    void jobsIdle();
    /// Work without progress (a deletion, building the demo) runs (`busy`: the bar moves without a
    /// value) or ended (the bar stays only while `jobsBusy`).
    void setBusy(bool busy, bool jobsBusy);

Q_SIGNALS:
    /// Cancel was clicked.
    void cancelRequested();

private:
    ElidedLabel* line_;
    QProgressBar* progress_;
    QToolButton* cancel_;
    QLabel* library_;
    QStringList log_;
    bool error_ = false;
    QDialog* logDialog_ = nullptr;
    QPlainTextEdit* logText_ = nullptr;
};

} // namespace routepack::views
