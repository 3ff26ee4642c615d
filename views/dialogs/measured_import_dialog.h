#pragma once
// File > Import measured step…: a measured file (python3 -m routepack.torch.measure --out), or the
// torch.profiler traces of a step with the plan it ran, into the open library beside the window
// and the saved runs it measured (Library::import_measured / import_profiler, docs/measure.md
// "In the library"), on a worker thread with the dialog's own library connection.
#include "views/jobs/job_tracker.h"

#include <QDialog>
#include <QString>
#include <QStringList>

#include <functional>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace routepack::views {

/// What one measured import needs: a measured file alone (plan empty), or profiler traces with the
/// plan file, the method whose layout ran and the step ranges' plan name ("" = the method).
struct MeasuredImportRequest {
    QString library;
    QStringList files;
    QString plan, method = QStringLiteral("routepack"), step;
};

/// What an import did, in the words the dialog and the status line show.
struct MeasuredImportResult {
    QString trace, window; ///< the window it was stored beside
    qint64 id = 0;         ///< the measured step's id
    QString summary;       ///< "Imported measured step 2 of ds/first16 (measured): 4 plans, 1 linked to a saved run."
};

/// Runs one measured import (blocking; the dialog calls it on a worker thread): reads the files
/// (read_input_file, the measured-file or profiler-trace size limits), imports, and words the result.
/// InputError and the library's errors as Library::import_measured / import_profiler throw them.
MeasuredImportResult importMeasured(const MeasuredImportRequest& request);

/// The dialog: the files (Browse…), the plan file, method and step name for profiler traces, Import,
/// and a line with the result or the error. Never blocks the GUI thread.
class MeasuredImportDialog : public QDialog {
    Q_OBJECT
public:
    MeasuredImportDialog(const QString& library, QWidget* parent = nullptr);
    ~MeasuredImportDialog() override;

    /// The fields (also what tests fill in).
    QLineEdit* filesEdit() const { return files_; }
    QLineEdit* planEdit() const { return plan_; }
    QComboBox* methodBox() const { return method_; }
    QLineEdit* stepEdit() const { return step_; }
    QPushButton* importButton() const { return import_; }
    /// The result or error line.
    QString resultText() const;
    /// The request the fields make (files split at ';').
    MeasuredImportRequest request() const;
    /// Starts the import of request(); false (nothing started) without files or while one runs.
    bool startImport();
    /// Shows and raises the dialog held in `slot`, first creating it (for `library`, child of `parent`,
    /// `onImported` called on each import) when `slot` is null. Returns it.
    static MeasuredImportDialog* showIn(MeasuredImportDialog*& slot, const QString& library, QWidget* parent,
                                        std::function<void(const MeasuredImportResult&)> onImported);

Q_SIGNALS:
    /// A measured step was stored (or was already there): the studio refreshes what it shows.
    void imported(const routepack::views::MeasuredImportResult& result);

private:
    QString library_;
    QLineEdit* files_ = nullptr;
    QLineEdit* plan_ = nullptr;
    QComboBox* method_ = nullptr;
    QLineEdit* step_ = nullptr;
    QPushButton* import_ = nullptr;
    QLabel* result_ = nullptr;
    JobTracker* job_ = nullptr;
};

} // namespace routepack::views
