#pragma once
// The studio's "Whole runs" tab: the library's whole runs (a sweep, a studio run, a cluster run's
// chain; Library::whole_runs) in a checkable list, and for the runs checked an overlay of one figure
// per step (views/run/run_compare.h: max_g U, gain against the baseline, experts moved, bytes moved,
// modelled seconds), each run against the first checked (a bar chart of the differences per step) and
// a table of the values and differences per step and summed. The list and the comparison are read
// on worker threads (JobTrackers, latest request wins).
#include "views/run/run_compare.h"

#include <QList>
#include <QString>
#include <QWidget>

#include <memory>

class QChartView;
class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QTableWidget;

namespace routepack::views {

class JobTracker;

/// Whole runs tab (object name set by its owner; children "wholeRunList", "compareMetric",
/// "compareOverlay", "compareDifference", "compareTable", "compareNote", "compareExport").
class WholeRunsView : public QWidget {
    Q_OBJECT
public:
    explicit WholeRunsView(QWidget* parent = nullptr);
    /// Stops the workers (their results are dropped).
    ~WholeRunsView() override;

    /// Lists the whole runs of library file `library` ("" for none); `listUpdated` follows. Nothing
    /// is read again when it is the library listed already (reload does that).
    void setLibrary(const QString& library);
    /// Reads the list again (a run was saved or imported); the runs checked stay checked when they
    /// are still there.
    void reload();
    /// The whole runs listed, by id.
    QList<qint64> listed() const;
    /// Checks exactly the runs `ids` (in that order: the first is the one the others are measured
    /// against) and compares them; `updated` follows. Ids not listed are left out.
    void setCompared(const QList<qint64>& ids);
    /// The runs checked, in the order checked.
    QList<qint64> compared() const { return order_; }
    /// True while the list or a comparison is read.
    bool isLoading() const;
    /// The comparison shown (nullptr before one arrived or with fewer than two runs checked).
    const RunComparison* comparison() const { return data_.get(); }
    /// Shows `c` at once (the headless path; no worker).
    void showComparison(std::shared_ptr<const RunComparison> c);
    /// The figure the charts and the table show.
    CompareMetric metric() const { return metric_; }
    void setMetric(CompareMetric m);
    /// The note above the charts: what to do, the job's state, why there is no comparison, or the
    /// runs compared with their totals.
    QString noteText() const;
    /// comparison_csv of the comparison shown ("" without one).
    std::string comparisonCsv() const;
    /// Chart "overlay" or "difference" as ".png" / ".svg" (exportWidgetImage). False with `error` set
    /// without a comparison or for another name.
    bool exportChart(const QString& name, const QString& file, QString* error = nullptr) const;
    /// Text of table cell (row, column) (rows: the windows, then "total"; columns: window, each
    /// run's value, each later run's difference against the first).
    QString tableText(int row, int column) const;
    int tableRows() const;

Q_SIGNALS:
    /// The list was read again.
    void listUpdated();
    /// A comparison (or the empty state) is shown.
    void updated();

private:
    void startList();
    void startCompare();
    void rebuild();
    void fillOverlay();
    void fillDifference();
    void fillTable();
    void exportCsv();

    JobTracker* listTracker_ = nullptr;
    JobTracker* compareTracker_ = nullptr;
    QString library_;
    bool listLoading_ = false, compareLoading_ = false;
    bool listRead_ = false; ///< the list of library_ was read once
    QList<qint64> order_;   ///< checked runs, in the order checked
    std::shared_ptr<const RunComparison> data_;
    QString error_;
    CompareMetric metric_ = CompareMetric::MaxU;
    QListWidget* list_ = nullptr;
    QComboBox* metricBox_ = nullptr;
    QLabel* note_ = nullptr;
    QChartView* overlay_ = nullptr;
    QChartView* difference_ = nullptr;
    QTableWidget* table_ = nullptr;
    QPushButton* export_ = nullptr;
};

} // namespace routepack::views
