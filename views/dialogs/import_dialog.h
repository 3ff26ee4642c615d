#pragma once
// Trace import of the studio: ImportJob runs
// Library::import_trace on a worker thread (a JobTracker, views/jobs/job_tracker.h) with its own library
// connection, progress and Cancel;
// ImportDialog collects files/folders, the trace name, the format (auto-detected one shown) and the
// model description, and drives an ImportJob. An import is one SQLite transaction: a failed or
// cancelled import leaves the library exactly as before.
#include "core/import/import.h"
#include "views/jobs/job_tracker.h"

#include <QDialog>
#include <QElapsedTimer>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

class QComboBox;
class QDialogButtonBox;
class QDragEnterEvent;
class QDropEvent;
class QMimeData;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QStackedWidget;

namespace routepack::views {

/// What one import needs.
struct ImportRequest {
    QString library; ///< library file (created when absent)
    QString traceName;
    QStringList inputs; ///< files or folders
    routepack::ImportOptions options;
};

/// Progress of an import as a value for the GUI thread.
struct ImportProgressInfo {
    qint64 filesDone = 0, filesTotal = 0;
    qint64 bytesDone = 0, bytesTotal = 0;
    qint64 samples = 0;
    QString currentFile;
};

/// Runs one import at a time on a worker thread. Signals arrive on the owner's thread; progress is
/// throttled by ProgressThrottle (at most 20 per second; the last file's report always passes).
class ImportJob : public QObject {
    Q_OBJECT
public:
    explicit ImportJob(QObject* parent = nullptr);
    /// Cancels a running import and waits for it to roll back.
    ~ImportJob() override;

    /// Starts an import; false when one is already running.
    bool start(const ImportRequest& request);
    /// Asks the running import to stop; it rolls back and emits `cancelled`.
    void cancel();
    bool isRunning() const { return tracker_->runningCount() > 0; }
    /// Test hook: the worker sets the cancel flag itself once `n` samples were read (> 0), so
    /// tests can cancel deterministically in the middle of an import.
    void setCancelAfterSamplesForTesting(qint64 n) { cancelAfter_ = n; }

Q_SIGNALS:
    void progress(const routepack::views::ImportProgressInfo& info);
    /// The trace was imported (committed).
    void finished(const QString& traceName, const routepack::ImportSummary& summary);
    /// The import failed; `message` is the error in the studio's words (JobFailure::text); nothing
    /// was written.
    void failed(const QString& message);
    /// The import was cancelled; nothing was written.
    void cancelled();

private:
    JobTracker* tracker_ = nullptr;
    qint64 cancelAfter_ = 0;
};

/// The import dialog. Use it modeless or modal; the import runs in its ImportJob (job()), and the
/// dialog stays responsive. startImport() is what the Import button does.
class ImportDialog : public QDialog {
    Q_OBJECT
    friend struct ImportDialogTestAccess;

public:
    /// How the model description is given.
    enum ModelSource { KnownModel, ConfigJson, Fields, FromFiles };

    explicit ImportDialog(const QString& library, QWidget* parent = nullptr);
    ~ImportDialog() override;

    void setInputs(const QStringList& paths);
    /// Appends inputs (files or folders) not listed yet, as Add files… / Add folder… and a drop do.
    /// Returns how many were added (none while an import runs).
    int addInputs(const QStringList& paths);
    QStringList inputs() const;
    /// Sets the trace name as typed: later inputs no longer propose one. Until a name is typed, the
    /// name follows the inputs: the first input's base name ("llama4-maverick" for that folder).
    void setTraceName(const QString& name);
    QString traceName() const;
    /// "auto" or a format name of trace_format_names().
    void setFormat(const QString& name);
    /// Sets how the model is given (the user's choice: later inputs no longer propose a model).
    void setModelSource(ModelSource s);
    ModelSource modelSource() const;
    /// Selects a shipped model (the user's choice, as setModelSource).
    void setKnownModel(const QString& name);
    QString knownModel() const;
    void setModelConfig(const QString& configJson);
    /// Fields: E, k, num_hidden_layers (0 = from the files), MoE layer list text ("" = from the files).
    void setModelFields(int experts, int topK, int layers, const QString& moeLayers);

    /// The request the dialog would run; nullopt with `error` set in words when a field is wrong
    /// (no input, empty name, unreadable config.json, bad layer list, ...). The config.json is read
    /// here, on the caller's (GUI) thread, so it is refused unread when it is not a regular file
    /// ("<path>: not a regular file", e.g. a FIFO) or larger than 16 MiB ("<path>: config.json
    /// larger than 16 MiB").
    std::optional<ImportRequest> request(QString* error) const;
    /// Validates and starts the import; false (with the reason shown in the dialog and in
    /// the dialog's error text) when the fields are wrong or an import runs ("An import is already
    /// running.").
    bool startImport();

Q_SIGNALS:
    /// A trace was imported into the library.
    void imported(const QString& traceName);
    /// The auto-detected format changed (after setInputs / adding files).
    void formatDetected(const QString& format);

protected:
    void reject() override;
    /// Files and folders dragged from a file manager are accepted (local paths only) and dropped
    /// into the input list (addInputs).
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    /// The model pages (shipped model, config.json, fields, from the files), one shown at a time.
    void buildModelStack();
    /// What the ImportJob reports: progress and the end of an import.
    void connectJob();
    void addFiles();
    void addFolder();
    void removeSelected();
    void inputsChanged();
    /// Proposes the trace name and the model from the inputs, unless the user set them: the name is
    /// the first input's base name; the model is the shipped model whose name appears in the first
    /// input's path (the longest such name; case-insensitive), else the shipped default; an
    /// aggregate (load-only) file describes its own model ("From the files").
    void proposeFromInputs(const QString& detectedFormat);
    /// Sets the model fields without counting as the user's choice.
    void proposeModel(ModelSource s, const QString& known);
    void setBusy(bool busy);
    void showError(const QString& message);
    void showInfo(const QString& message);

    QString library_;
    ImportJob* job_ = nullptr;
    /// The last error in words; the auto-detected format of the first input file ("" while unknown /
    /// detecting); the stack that wrote the first input (detected_stack: the format's stack, verl or
    /// AReaL for a padded batch), shown beside the format in the format box; empty when nothing was
    /// detected.
    QString error_, detected_, detectedStack_;
    JobTracker* detects_ = nullptr; ///< format detection: the latest inputs' answer wins
    QListWidget* inputs_ = nullptr;
    QLineEdit* name_ = nullptr;
    QComboBox* format_ = nullptr;
    QComboBox* modelSource_ = nullptr;
    QStackedWidget* modelStack_ = nullptr;
    QComboBox* knownModel_ = nullptr;
    QLineEdit* configPath_ = nullptr;
    QSpinBox* experts_ = nullptr;
    QSpinBox* topK_ = nullptr;
    QSpinBox* layers_ = nullptr;
    QLineEdit* moeLayers_ = nullptr;
    QElapsedTimer importClock_; ///< since the running import started (the progress bar's times)
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    QPushButton* importButton_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
    QPushButton* closeButton_ = nullptr;
    QList<QWidget*> fieldWidgets_;
    QString proposedName_;     ///< the name last proposed from the inputs ("" when none)
    bool modelChosen_ = false; ///< the user chose the model: inputs no longer propose one
};

/// What detectInputFormat found: detect_format's name ("" when unknown or nothing readable) and
/// detected_stack's text for it (verl or AReaL for a padded batch).
struct DetectedInput {
    QString format;
    QString stack;
};

/// The local files and folders a drag carries (its file:// URLs), in order; empty when it carries
/// none or any URL is not a local file.
QStringList droppedLocalPaths(const QMimeData* mime);

/// What the import dialog says about a finished import: "<samples> samples from <files> files (format
/// F), lengths a-b tokens", or for an aggregate (load-only) file "load-only per-layer expert totals,
/// L MoE layers x E experts" (it has no samples).
QString importSummaryText(const QString& name, const routepack::ImportSummary& summary);

/// Reads up to 64 KiB of the first trace file under `inputs` (an .npz's directory, a batch
/// folder's names) and returns its format and stack. Does file-system work: call it off the GUI thread.
DetectedInput detectInputFormat(const QStringList& inputs);

} // namespace routepack::views

Q_DECLARE_METATYPE(routepack::views::ImportProgressInfo)
Q_DECLARE_METATYPE(routepack::ImportSummary)
