#pragma once
// The studio's watch on its library file: what another process (routepack import, sweep,
// import-run, import-measured) or another connection commits appears without a restart.
#include <QObject>
#include <QString>

class QTimer;

namespace routepack::views {

class JobTracker;

/// Polls a library file every `intervalMs` on a worker thread: its signature (signature()) read
/// there, compared on the GUI thread with the last one; a difference emits changed(). setFile records
/// the baseline. GUI thread.
class LibraryWatch : public QObject {
    Q_OBJECT
public:
    explicit LibraryWatch(int intervalMs = 1000, QObject* parent = nullptr);
    /// Stops the worker (a poll on its way is dropped).
    ~LibraryWatch() override;
    /// Watches `file` ("" stops watching); its signature now is the baseline.
    void setFile(const QString& file);
    QString file() const { return file_; }
    /// Size and modification time (nanoseconds) of `file` and of its write-ahead log `file-wal`,
    /// "<size>:<mtime>;<wal size>:<wal mtime>" ("-" for a file that does not exist): what a commit
    /// by any connection changes (in WAL mode the log grows or is checkpointed into the file).
    static QString signature(const QString& file);

Q_SIGNALS:
    /// The file changed since the last poll.
    void changed();

private:
    void poll();
    QTimer* timer_;
    JobTracker* job_;
    QString file_, last_;
};

} // namespace routepack::views
