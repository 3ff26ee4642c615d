#include "views/run/whole_runs_view.h"

#include "views/jobs/job_tracker.h"
#include "views/plan/panel_util.h"
#include "views/widgets/file_export.h"
#include "views/widgets/gui_text.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace routepack::views {

namespace {

/// The value axis' label format of metric `m`: whole numbers for moves, three digits for bytes.
QString axisFormat(CompareMetric m) {
    switch (m) {
    case CompareMetric::ExpertsMoved:
        return QStringLiteral("%.0f");
    case CompareMetric::MigrationBytes:
        return QStringLiteral("%.3g");
    default:
        return QStringLiteral("%.4g");
    }
}

/// Line and bar colours of the runs, in the order checked (mid-tones for light and dark backgrounds).
const QColor kRunColours[] = {QColor(0x4c, 0x78, 0xa8), QColor(0xf5, 0x85, 0x18), QColor(0x54, 0xa2, 0x4b),
                              QColor(0xe4, 0x57, 0x56), QColor(0x72, 0xb7, 0xb2), QColor(0xb2, 0x79, 0xa2),
                              QColor(0xee, 0xca, 0x3b), QColor(0x9d, 0x75, 0x5d)};

QColor runColour(std::size_t i) {
    return kRunColours[i % std::size(kRunColours)];
}

/// A value as the table shows it: max_g U and seconds to 4 decimals, the gain as a signed percentage,
/// moves and bytes grouped; "–" when absent.
QString shown(const std::optional<double>& v, CompareMetric m, bool difference = false) {
    if (!v) return QStringLiteral("–");
    switch (m) {
    case CompareMetric::GainPct:
        return QString::asprintf("%+.2f %%", *v);
    case CompareMetric::ExpertsMoved:
    case CompareMetric::MigrationBytes: {
        const QString n = QLocale(QLocale::English).toString(static_cast<qlonglong>(std::llround(*v)));
        return difference && *v > 0 ? QStringLiteral("+") + n : n;
    }
    default:
        return difference ? QString::asprintf("%+.4f", *v) : QString::asprintf("%.4f", *v);
    }
}

/// The list entry of a whole run: "4 'b166' · sweep · ds · deepseek-v2-lite-ep8-dp4 · 5 steps".
QString listText(const storage::WholeRunEntry& w) {
    QString s = QString::number(w.id);
    if (!w.name.empty()) s += QStringLiteral(" '%1'").arg(QString::fromStdString(w.name));
    s += QStringLiteral(" · %1 · %2 · %3 · %4 steps")
             .arg(QString::fromLatin1(storage::whole_run_source_key(w.source)), QString::fromStdString(w.trace),
                  QString::fromStdString(w.topology))
             .arg(w.steps);
    s += w.settings.budgets.max_moves < 0 ? QStringLiteral(" · unlimited moves")
                                          : QStringLiteral(" · max moves %1").arg(w.settings.budgets.max_moves);
    return s;
}

} // namespace

WholeRunsView::WholeRunsView(QWidget* parent)
    : QWidget(parent), listTracker_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)),
      compareTracker_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)) {
    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("wholeRunList"));
    list_->setMinimumWidth(220);
    list_->setToolTip(tr("Check two or more whole runs to compare them; the first checked is the one the "
                         "others are measured against."));
    connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
        const qint64 id = item->data(Qt::UserRole).toLongLong();
        const bool on = item->checkState() == Qt::Checked;
        if (on == order_.contains(id)) return;
        if (on)
            order_ << id;
        else
            order_.removeAll(id);
        startCompare();
    });
    metricBox_ = new QComboBox(this);
    metricBox_->setObjectName(QStringLiteral("compareMetric"));
    for (const CompareMetric m : kCompareMetrics)
        metricBox_->addItem(tr(compare_metric_title(m)));
    connect(metricBox_, &QComboBox::currentIndexChanged, this,
            [this](int i) { setMetric(kCompareMetrics[std::clamp(i, 0, 4)]); });
    export_ = new QPushButton(tr("Export CSV…"), this);
    export_->setObjectName(QStringLiteral("compareExport"));
    connect(export_, &QPushButton::clicked, this, &WholeRunsView::exportCsv);
    note_ = headingLabel(this);
    note_->setObjectName(QStringLiteral("compareNote"));
    overlay_ = makeChartView(this, QSize(260, 180));
    overlay_->setObjectName(QStringLiteral("compareOverlay"));
    difference_ = makeChartView(this, QSize(260, 200));
    difference_->setObjectName(QStringLiteral("compareDifference"));
    table_ = new QTableWidget(this);
    table_->setObjectName(QStringLiteral("compareTable"));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->setVisible(false);
    table_->setMinimumHeight(120);

    auto* right = new QWidget(this);
    auto* rl = new QVBoxLayout(right);
    rl->setContentsMargins(0, 0, 0, 0);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Figure:"), right));
    bar->addWidget(metricBox_);
    bar->addStretch(1);
    bar->addWidget(export_);
    rl->addLayout(bar);
    rl->addWidget(note_);
    auto* charts = new QSplitter(Qt::Vertical, right);
    charts->addWidget(overlay_);
    charts->addWidget(difference_);
    charts->addWidget(table_);
    charts->setStretchFactor(0, 3);
    charts->setStretchFactor(1, 2);
    charts->setStretchFactor(2, 2);
    charts->setSizes({400, 300, 200});
    rl->addWidget(charts, 1);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(list_);
    split->addWidget(right);
    split->setStretchFactor(1, 1);
    split->setSizes({240, 900});
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(split);
    rebuild();
}

WholeRunsView::~WholeRunsView() {
    listTracker_->shutdown();
    compareTracker_->shutdown();
}

void WholeRunsView::setLibrary(const QString& library) {
    if (library == library_ && listRead_) return; // reload() follows the library's changes
    listRead_ = false;
    order_.clear();
    data_.reset();
    error_.clear();
    library_ = library;
    reload();
}

void WholeRunsView::reload() {
    startList();
}

void WholeRunsView::startList() {
    if (library_.isEmpty()) {
        listTracker_->invalidate();
        listLoading_ = false;
        const QSignalBlocker block(list_);
        list_->clear();
        order_.clear();
        startCompare();
        Q_EMIT listUpdated();
        return;
    }
    listLoading_ = true;
    const std::string file = library_.toStdString();
    using List = std::vector<storage::WholeRunEntry>;
    listTracker_->start<List>(
        [file](JobContext&) { return storage::Library::open(file, storage::OpenMode::ReadOnly)->whole_runs(); },
        [this](quint64, const std::shared_ptr<const List>& runs) {
            listLoading_ = false;
            listRead_ = true;
            const QSignalBlocker block(list_);
            list_->clear();
            QList<qint64> still;
            for (const storage::WholeRunEntry& w : *runs) {
                auto* item = new QListWidgetItem(listText(w), list_);
                item->setData(Qt::UserRole, static_cast<qlonglong>(w.id));
                item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
                item->setCheckState(order_.contains(w.id) ? Qt::Checked : Qt::Unchecked);
                item->setToolTip(item->text());
            }
            for (const qint64 id : order_)
                if (listed().contains(id)) still << id;
            const bool changed = still != order_;
            order_ = still;
            if (changed || !data_) startCompare();
            Q_EMIT listUpdated();
        },
        [this](quint64, const JobFailure& failure) {
            listLoading_ = false;
            error_ = failure.text;
            rebuild();
            Q_EMIT listUpdated();
        });
}

QList<qint64> WholeRunsView::listed() const {
    QList<qint64> ids;
    for (int i = 0; i < list_->count(); ++i)
        ids << list_->item(i)->data(Qt::UserRole).toLongLong();
    return ids;
}

void WholeRunsView::setCompared(const QList<qint64>& ids) {
    const QList<qint64> there = listed();
    order_.clear();
    for (const qint64 id : ids)
        if (there.contains(id) && !order_.contains(id)) order_ << id;
    {
        const QSignalBlocker block(list_);
        for (int i = 0; i < list_->count(); ++i)
            list_->item(i)->setCheckState(
                order_.contains(list_->item(i)->data(Qt::UserRole).toLongLong()) ? Qt::Checked : Qt::Unchecked);
    }
    startCompare();
}

bool WholeRunsView::isLoading() const {
    return listLoading_ || compareLoading_;
}

void WholeRunsView::startCompare() {
    data_.reset();
    error_.clear();
    if (order_.size() < 2 || library_.isEmpty()) {
        compareTracker_->invalidate();
        compareLoading_ = false;
        rebuild();
        Q_EMIT updated();
        return;
    }
    compareLoading_ = true;
    rebuild();
    const std::string file = library_.toStdString();
    const std::vector<std::int64_t> ids(order_.begin(), order_.end());
    compareTracker_->start<RunComparison>(
        [file, ids](JobContext& ctx) {
            auto lib = storage::Library::open(file, storage::OpenMode::ReadOnly);
            return compare_whole_runs(*lib, ids, ctx.cancelFlag());
        },
        [this](quint64, const std::shared_ptr<const RunComparison>& c) {
            compareLoading_ = false;
            showComparison(c);
        },
        [this](quint64, const JobFailure& failure) {
            compareLoading_ = false;
            error_ = failure.text;
            rebuild();
            Q_EMIT updated();
        });
}

void WholeRunsView::showComparison(std::shared_ptr<const RunComparison> c) {
    data_.reset();
    error_.clear();
    if (c && !c->error.empty())
        error_ = QString::fromStdString(c->error);
    else
        data_ = std::move(c);
    rebuild();
    Q_EMIT updated();
}

void WholeRunsView::setMetric(CompareMetric m) {
    metric_ = m;
    const int i = static_cast<int>(m);
    if (metricBox_->currentIndex() != i) {
        const QSignalBlocker block(metricBox_);
        metricBox_->setCurrentIndex(i);
    }
    rebuild();
}

QString WholeRunsView::noteText() const {
    return note_->text();
}

void WholeRunsView::rebuild() {
    QString note;
    if (compareLoading_)
        note = tr("Reading whole runs %1…").arg([this] {
            QStringList ids;
            for (const qint64 id : order_)
                ids << QString::number(id);
            return ids.join(QStringLiteral(", "));
        }());
    else if (!error_.isEmpty())
        note = tr("No comparison: %1").arg(error_.toHtmlEscaped());
    else if (!data_)
        note = list_->count() < 2 ? tr("Whole runs are stored by <code>routepack sweep</code>, by Run the windows in "
                                       "the studio and by <code>routepack import-run</code>: this library holds %1.")
                                        .arg(list_->count() == 1 ? tr("one") : tr("none"))
                                  : tr("Check two or more whole runs on the left to compare them step by step.");
    else {
        const ComparedRun& a = data_->runs.front();
        note = tr("Against <b>%1</b>:").arg(QString::fromStdString(a.label).toHtmlEscaped());
        for (std::size_t i = 1; i < data_->runs.size(); ++i) {
            const ComparedRun& b = data_->runs[i];
            note += QStringLiteral("<br>") + QString::fromStdString(b.label).toHtmlEscaped() + QStringLiteral(": ");
            QStringList parts;
            for (const CompareMetric m : kCompareMetrics)
                if (const auto d = compare_total_difference(*data_, i, m))
                    parts << QStringLiteral("%1 %2").arg(tr(compare_metric_title(m)), shown(d, m, true));
            note += parts.join(QStringLiteral(", "));
        }
    }
    note_->setText(note);
    export_->setEnabled(data_ != nullptr);
    fillOverlay();
    fillDifference();
    fillTable();
}

void WholeRunsView::fillOverlay() {
    QChart* chart = overlay_->chart();
    clearChart(chart);
    if (!data_) return;
    chart->setTitle(tr("%1 per step").arg(tr(compare_metric_title(metric_))));
    auto* x = new QValueAxis;
    x->setTitleText(tr("step"));
    x->setLabelFormat(QStringLiteral("%d"));
    const auto n = static_cast<int>(data_->windows.size());
    x->setRange(0, std::max(1, n - 1));
    x->setTickCount(std::clamp(n, 2, 11));
    auto* y = new QValueAxis;
    y->setTitleText(tr(compare_metric_title(metric_)));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    double lo = 0, hi = 0;
    bool any = false;
    for (std::size_t i = 0; i < data_->runs.size(); ++i) {
        auto* line = new QLineSeries;
        line->setName(QString::fromStdString(data_->runs[i].label));
        line->setColor(runColour(i));
        line->setPointsVisible(true);
        for (int k = 0; k < n; ++k)
            if (const auto v = compare_value(data_->runs[i], data_->windows[static_cast<std::size_t>(k)], metric_)) {
                line->append(k, *v);
                lo = any ? std::min(lo, *v) : *v;
                hi = any ? std::max(hi, *v) : *v;
                any = true;
            }
        chart->addSeries(line);
        line->attachAxis(x);
        line->attachAxis(y);
    }
    const double pad = hi > lo ? 0.05 * (hi - lo) : std::max(1e-9, 0.05 * std::abs(hi));
    y->setRange(lo - pad, hi + pad);
    y->applyNiceNumbers();
    y->setLabelFormat(axisFormat(metric_));
    styleChart(chart, palette());
}

void WholeRunsView::fillDifference() {
    QChart* chart = difference_->chart();
    clearChart(chart);
    if (!data_) return;
    chart->setTitle(tr("%1: each run minus whole run %2, per step")
                        .arg(tr(compare_metric_title(metric_)))
                        .arg(data_->runs.front().entry.id));
    auto* bars = new QBarSeries;
    double lo = 0, hi = 0;
    for (std::size_t i = 1; i < data_->runs.size(); ++i) {
        auto* set = new QBarSet(tr("whole run %1").arg(data_->runs[i].entry.id));
        set->setColor(runColour(i));
        for (const std::string& w : data_->windows) {
            const double d = compare_difference(*data_, i, w, metric_).value_or(0);
            *set << d;
            lo = std::min(lo, d);
            hi = std::max(hi, d);
        }
        bars->append(set);
    }
    chart->addSeries(bars);
    auto* x = new QBarCategoryAxis;
    for (std::size_t k = 0; k < data_->windows.size(); ++k)
        x->append(QString::number(k));
    x->setTitleText(tr("step"));
    auto* y = new QValueAxis;
    y->setTitleText(tr("difference"));
    const double pad = hi > lo ? 0.05 * (hi - lo) : 1;
    y->setRange(lo - pad, hi + pad);
    y->setTickCount(3); // the chart is short: three labels stay whole where five would be elided
    y->applyNiceNumbers();
    y->setLabelFormat(axisFormat(metric_));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    bars->attachAxis(x);
    bars->attachAxis(y);
    styleChart(chart, palette());
}

void WholeRunsView::fillTable() {
    table_->clear();
    if (!data_) {
        table_->setRowCount(0);
        table_->setColumnCount(0);
        return;
    }
    const auto runs = static_cast<int>(data_->runs.size());
    const auto rows = static_cast<int>(data_->windows.size()) + 1;
    table_->setColumnCount(1 + runs + (runs - 1));
    table_->setRowCount(rows);
    QStringList headers{tr("Window")};
    const qint64 first = data_->runs.front().entry.id;
    for (const ComparedRun& r : data_->runs)
        headers << tr("run %1").arg(r.entry.id);
    for (int i = 1; i < runs; ++i)
        headers << tr("run %1 − run %2").arg(data_->runs[static_cast<std::size_t>(i)].entry.id).arg(first);
    table_->setHorizontalHeaderLabels(headers);
    auto put = [this](int row, int col, const QString& text) {
        auto* item = new QTableWidgetItem(text);
        if (col > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        table_->setItem(row, col, item);
    };
    for (int k = 0; k < rows; ++k) {
        const bool total = k == rows - 1;
        const std::string& w = total ? std::string() : data_->windows[static_cast<std::size_t>(k)];
        put(k, 0, total ? tr("total") : QString::fromStdString(w));
        for (int i = 0; i < runs; ++i) {
            const ComparedRun& r = data_->runs[static_cast<std::size_t>(i)];
            put(k, 1 + i, shown(total ? compare_total(r, metric_) : compare_value(r, w, metric_), metric_));
        }
        for (int i = 1; i < runs; ++i) {
            const auto d = total ? compare_total_difference(*data_, static_cast<std::size_t>(i), metric_)
                                 : compare_difference(*data_, static_cast<std::size_t>(i), w, metric_);
            put(k, runs + i, shown(d, metric_, true));
        }
    }
    table_->resizeColumnsToContents();
}

QString WholeRunsView::tableText(int row, int column) const {
    const QTableWidgetItem* item = table_->item(row, column);
    return item ? item->text() : QString();
}

int WholeRunsView::tableRows() const {
    return table_->rowCount();
}

std::string WholeRunsView::comparisonCsv() const {
    return data_ ? comparison_csv(*data_) : std::string();
}

bool WholeRunsView::exportChart(const QString& name, const QString& file, QString* error) const {
    QChartView* view = name == QStringLiteral("overlay")      ? overlay_
                       : name == QStringLiteral("difference") ? difference_
                                                              : nullptr;
    if (!view || !data_) {
        if (error) *error = view ? tr("no whole runs are compared") : tr("no comparison chart named %1").arg(name);
        return false;
    }
    return exportWidgetImage(view, file, error);
}

void WholeRunsView::exportCsv() {
    if (!data_) return;
    const QString file = QFileDialog::getSaveFileName(this, tr("Export the comparison"),
                                                      QStringLiteral("compare-runs.csv"), tr("CSV (*.csv)"));
    if (file.isEmpty()) return;
    std::string csv = comparisonCsv();
    csv.pop_back(); // writeTextFile ends the text with "\n": the last line ends in "\r\n" like every other
    QString why;
    if (!writeTextFile(file, csv, &why)) note_->setText(tr("Not exported: %1").arg(why.toHtmlEscaped()));
}

} // namespace routepack::views
