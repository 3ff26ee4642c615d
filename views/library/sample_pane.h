#pragma once
// The studio's sample pane: the heading, the id/group filter, the filter line of a click in the plan
// views, the sample table (views/library/sample_table_model.h) and the length histogram
// (views/library/length_histogram_view.h) of the trace or window selected in the library. Samples are
// loaded on a worker thread (a JobTracker, latest selection wins).
#include "core/model/model.h"
#include "core/model/trace.h"

#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <optional>
#include <string>
#include <vector>

class QLabel;
class QLineEdit;
class QTableView;
class QToolButton;

namespace routepack::views {

class JobTracker;
class LengthHistogramView;
class SampleFilterProxy;
class SampleTableModel;
struct SampleTableData;

/// The sample pane. What the studio's window asks of it: load a trace or window, reset it with a
/// library, filter it to the samples a plan view names; what it tells: `loaded`.
class SamplePane : public QWidget {
    Q_OBJECT
public:
    explicit SamplePane(QWidget* parent = nullptr);
    /// Stops the loader (a load on its way is dropped).
    ~SamplePane() override;

    /// Loads the samples of `trace` (of its `window`, "" for the whole trace) from library file
    /// `library` on a worker thread with its own read-only connection; the heading says "Loading
    /// trace/window…" until they arrive, then "<what>: N samples, T tokens" (or why they could not
    /// be loaded; for a load-only trace, `loadOnly` = its model, what it holds instead). Clears the
    /// filter line. A load superseded by another (or by reset) is dropped.
    void load(const QString& library, const QString& trace, const QString& window,
              const std::optional<routepack::ModelDescription>& loadOnly = std::nullopt);
    /// Shows samples already loaded (a cluster run step's, with their counts from library trace
    /// `trace`) as load() shows a window: the table built on a worker thread, the heading "<label>:
    /// N samples, T tokens" (trace() is then `trace`, window() ""). Superseded like load().
    void showSamples(std::shared_ptr<const routepack::Trace> samples, const QString& trace, const QString& label);
    /// Empties the table and the histogram and forgets what was shown (a new library); a load on its
    /// way is dropped. The heading stays until setHeadingText.
    void reset();
    /// The trace and window shown or being loaded ("" when none).
    QString trace() const { return trace_; }
    QString window() const { return window_; }
    /// True when the table holds exactly what load(library, trace, window) gives: that trace and
    /// window loaded by load(), not samples shown by showSamples.
    bool shows(const QString& trace, const QString& window) const {
        return label_.isEmpty() && trace_ == trace && window_ == window;
    }

    void setHeadingText(const QString& text);
    /// The heading above the table (what it shows, or why it is empty).
    QString headingText() const;
    /// The filter line: what a click in the plan views keeps ("" while the table is not so filtered).
    QString filterText() const;
    /// Keeps only the samples with these ids, under the filter line `label` with a "Clear filter"
    /// button. Ids the table does not hold are ignored. With `tokens` (one per id: its tokens on the
    /// selected (layer, rank)) the column SelectedTokens shows them under `tokensHeader` and the table
    /// sorts by it, most tokens first; without, that column is hidden.
    void filterSamples(const std::vector<std::string>& ids, const QString& label,
                       const std::vector<qint64>& tokens = {}, const QString& tokensHeader = {});
    /// Shows every sample again (the "Clear filter" button).
    void clearFilter();
    /// Ids of the selected rows, in selection order.
    QStringList selectedSampleIds() const;

    SampleTableModel* model() const { return samples_; }
    SampleFilterProxy* proxy() const { return proxy_; }
    QTableView* view() const { return view_; }
    /// The tool button beside the id filter (the studio gives it its "Define window" action).
    QToolButton* defineButton() const { return define_; }

Q_SIGNALS:
    /// A load of `trace` ended: `hasSamples` false when it failed or the trace holds none.
    void loaded(const QString& trace, bool hasSamples);

private:
    /// Shows a loaded table, or (null `data`) why nothing could be loaded.
    void show(const std::shared_ptr<const SampleTableData>& data, const QString& error,
              const std::optional<routepack::ModelDescription>& loadOnly);

    JobTracker* loads_ = nullptr;
    QString trace_, window_;
    QString label_; ///< the heading's name of samples shown by showSamples ("" after load)
    QLabel* heading_ = nullptr;
    QLineEdit* filter_ = nullptr;
    QToolButton* define_ = nullptr;
    QWidget* filterBar_ = nullptr; ///< the filter line and its "Clear filter" button
    QLabel* filterLabel_ = nullptr;
    QToolButton* clearFilter_ = nullptr;
    SampleTableModel* samples_ = nullptr;
    SampleFilterProxy* proxy_ = nullptr;
    QTableView* view_ = nullptr;
    LengthHistogramView* histogram_ = nullptr;
};

} // namespace routepack::views
