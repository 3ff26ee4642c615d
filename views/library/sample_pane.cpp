#include "views/library/sample_pane.h"

#include "storage/library.h"
#include "views/jobs/job_tracker.h"
#include "views/library/length_histogram_view.h"
#include "views/library/sample_table_model.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace routepack::views {

SamplePane::SamplePane(QWidget* parent)
    : QWidget(parent), loads_(new JobTracker(JobTracker::Policy::LatestResult, 2, false, this)) {
    auto* cl = new QVBoxLayout(this);
    cl->setContentsMargins(6, 6, 6, 6);
    heading_ = new QLabel(tr("Open a library (Ctrl+O) or import a trace (Ctrl+I)."), this);
    QFont hf = heading_->font();
    hf.setBold(true);
    heading_->setFont(hf);
    heading_->setWordWrap(true); // a long heading takes a second line, never the window's width
    cl->addWidget(heading_);
    auto* filterRow = new QHBoxLayout();
    filter_ = new QLineEdit(this);
    filter_->setPlaceholderText(tr("Filter samples by id or group"));
    filter_->setClearButtonEnabled(true);
    setFocusProxy(filter_); // the pane takes the keyboard at its filter line
    define_ = new QToolButton(this);
    filterRow->addWidget(filter_, 1);
    filterRow->addWidget(define_);
    cl->addLayout(filterRow);
    // What a click in the plan views keeps in the table, with the way back.
    filterBar_ = new QWidget(this);
    auto* fb = new QHBoxLayout(filterBar_);
    fb->setContentsMargins(0, 0, 0, 0);
    filterLabel_ = new QLabel(filterBar_);
    filterLabel_->setWordWrap(true);
    clearFilter_ = new QToolButton(filterBar_);
    clearFilter_->setObjectName(QStringLiteral("clearFilter"));
    clearFilter_->setText(tr("Clear filter"));
    clearFilter_->setToolTip(tr("Show every sample again"));
    fb->addWidget(filterLabel_, 1);
    fb->addWidget(clearFilter_, 0, Qt::AlignTop);
    filterBar_->hide();
    cl->addWidget(filterBar_);
    samples_ = new SampleTableModel(this);
    proxy_ = new SampleFilterProxy(this);
    proxy_->setSourceModel(samples_);
    view_ = new QTableView(this);
    view_->setModel(proxy_);
    view_->setSortingEnabled(true);
    view_->sortByColumn(-1, Qt::AscendingOrder);
    // The tokens column shows while a rank filter names tokens (a new table has none), right after the
    // sample id, where the narrow pane shows it.
    auto placeTokens = [this] {
        QHeaderView* h = view_->horizontalHeader();
        const int at = h->visualIndex(SampleTableModel::SelectedTokens);
        if (at > 1) h->moveSection(at, 1);
        view_->setColumnHidden(SampleTableModel::SelectedTokens, !samples_->hasSelectedTokens());
    };
    placeTokens();
    connect(samples_, &QAbstractItemModel::modelReset, this, placeTokens);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    view_->setAlternatingRowColors(true);
    view_->verticalHeader()->hide();
    view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 6);
    view_->horizontalHeader()->setStretchLastSection(true);
    view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    view_->setColumnWidth(SampleTableModel::Id, 230);
    histogram_ = new LengthHistogramView(this);
    histogram_->setObjectName(QStringLiteral("lengthHistogram"));
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(view_);
    split->addWidget(histogram_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    cl->addWidget(split, 1);
    connect(filter_, &QLineEdit::textChanged, proxy_, &SampleFilterProxy::setTextFilter);
    connect(clearFilter_, &QToolButton::clicked, this, &SamplePane::clearFilter);
}

SamplePane::~SamplePane() {
    loads_->shutdown();
}

void SamplePane::load(const QString& library, const QString& trace, const QString& window,
                      const std::optional<ModelDescription>& loadOnly) {
    trace_ = trace;
    window_ = window;
    label_.clear();
    heading_->setText(tr("Loading %1…").arg(window.isEmpty() ? trace : trace + QLatin1Char('/') + window));
    // Latest selection wins: a load superseded by another selection (or another library) is dropped.
    loads_->start<std::shared_ptr<const SampleTableData>>(
        [library, trace, window](JobContext&) {
            auto lib = storage::Library::open(library.toStdString(), storage::OpenMode::ReadOnly); // this thread's
            const Trace t = window.isEmpty() ? lib->load_trace(trace.toStdString())
                                             : lib->load_window(trace.toStdString(), window.toStdString());
            return std::shared_ptr<const SampleTableData>(buildSampleTable(t, trace));
        },
        [this, loadOnly](quint64, const std::shared_ptr<const std::shared_ptr<const SampleTableData>>& data) {
            show(*data, QString(), loadOnly);
        },
        [this, loadOnly](quint64, const JobFailure& failure) { show(nullptr, failure.text, loadOnly); });
}

void SamplePane::showSamples(std::shared_ptr<const Trace> samples, const QString& trace, const QString& label) {
    trace_ = trace;
    window_.clear();
    label_ = label;
    heading_->setText(tr("Loading %1…").arg(label));
    loads_->start<std::shared_ptr<const SampleTableData>>(
        [samples = std::move(samples), trace](JobContext&) {
            return std::shared_ptr<const SampleTableData>(buildSampleTable(*samples, trace));
        },
        [this](quint64, const std::shared_ptr<const std::shared_ptr<const SampleTableData>>& data) {
            show(*data, QString(), std::nullopt);
        },
        [this](quint64, const JobFailure& failure) { show(nullptr, failure.text, std::nullopt); });
}

void SamplePane::show(const std::shared_ptr<const SampleTableData>& data, const QString& error,
                      const std::optional<ModelDescription>& loadOnly) {
    clearFilter();
    samples_->setData(data);
    view_->resizeColumnsToContents();
    view_->setColumnWidth(SampleTableModel::Id, std::min(view_->columnWidth(SampleTableModel::Id), 220));
    if (!data) {
        heading_->setText(error);
        if (loadOnly)
            heading_->setText(
                tr("Trace %1: load-only (per-layer expert totals of %2 MoE layers x %3 experts), no samples")
                    .arg(trace_)
                    .arg(loadOnly->num_moe_layers())
                    .arg(loadOnly->experts));
        histogram_->setLengths({}, QString());
        Q_EMIT loaded(trace_, false);
        return;
    }
    std::vector<qint64> lengths;
    qint64 total = 0;
    for (const auto& row : data->rows) {
        lengths.push_back(row.info.length);
        total += row.info.length;
    }
    const QString what = !label_.isEmpty()   ? label_
                         : window_.isEmpty() ? tr("Trace %1").arg(trace_)
                                             : tr("Window %1 of trace %2").arg(window_, trace_);
    heading_->setText(tr("%1: %2 samples, %3 tokens").arg(what).arg(lengths.size()).arg(total));
    histogram_->setLengths(lengths, tr("Length distribution (%1 samples)").arg(lengths.size()));
    Q_EMIT loaded(trace_, true);
}

void SamplePane::reset() {
    loads_->invalidate(); // a sample load still running for what was shown is dropped
    trace_.clear();
    window_.clear();
    label_.clear();
    samples_->setData(nullptr);
    histogram_->setLengths({}, QString());
}

void SamplePane::setHeadingText(const QString& text) {
    heading_->setText(text);
}

QString SamplePane::headingText() const {
    return heading_->text();
}

QString SamplePane::filterText() const {
    return proxy_->hasRowFilter() ? filterLabel_->text() : QString();
}

void SamplePane::filterSamples(const std::vector<std::string>& ids, const QString& label,
                               const std::vector<qint64>& tokens, const QString& tokensHeader) {
    const std::set<std::string> wanted(ids.begin(), ids.end());
    QSet<int> rows;
    for (int r = 0; r < samples_->rowCount(); ++r)
        if (wanted.count(samples_->sampleId(r).toStdString())) rows.insert(r);
    proxy_->setRowFilter(rows);
    QHash<QString, qint64> byId;
    if (tokens.size() == ids.size())
        for (std::size_t k = 0; k < ids.size(); ++k)
            byId.insert(QString::fromStdString(ids[k]), tokens[k]);
    samples_->setSelectedTokens(byId, tokensHeader);
    view_->setColumnHidden(SampleTableModel::SelectedTokens, byId.isEmpty());
    if (!byId.isEmpty()) {
        view_->sortByColumn(SampleTableModel::SelectedTokens, Qt::DescendingOrder);
        view_->resizeColumnToContents(SampleTableModel::SelectedTokens); // its header names the (layer, rank)
    }
    filterLabel_->setText(label);
    filterBar_->show();
}

void SamplePane::clearFilter() {
    proxy_->setRowFilter(std::nullopt);
    if (samples_->hasSelectedTokens()) {
        samples_->setSelectedTokens({}, {});
        view_->sortByColumn(-1, Qt::AscendingOrder);
    }
    view_->setColumnHidden(SampleTableModel::SelectedTokens, true);
    filterLabel_->clear();
    filterBar_->hide();
}

QStringList SamplePane::selectedSampleIds() const {
    QStringList out;
    for (const QModelIndex& i : view_->selectionModel()->selectedRows())
        out << samples_->sampleId(proxy_->mapToSource(i).row());
    return out;
}

} // namespace routepack::views
