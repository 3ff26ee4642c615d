#pragma once
// The sample pane's length histogram chart (the LengthHistogram of views/library/sample_data.h).
#include "views/library/sample_data.h"

#include <QString>
#include <QStringList>
#include <QtCharts/QChartView>

#include <vector>

namespace routepack::views {

/// Bar chart (Qt Charts) of a LengthHistogram with bin labels and axis titles.
class LengthHistogramView : public QChartView {
    Q_OBJECT
    friend struct LengthHistogramViewTestAccess;

public:
    explicit LengthHistogramView(QWidget* parent = nullptr);
    /// Redraws the chart for these lengths (an empty list clears it); `title` above the chart.
    void setLengths(const std::vector<qint64>& lengths, const QString& title);
    /// The edge labels shown, left to right ("100", "1.2k", "12k"): every label stride-th edge from
    /// the first (the smallest stride k >= 1 with which the widest edge label (plus 8 px) fits in k
    /// bars' width of the plot area: narrow bars keep whole labels instead of "..."; 1 before the
    /// first layout).
    QStringList binLabels() const;

protected:
    /// Redraws in the new colours when the palette changes (light / dark).
    void changeEvent(QEvent* event) override;
    /// Labels as many bin edges as fit the new width (the label stride).
    void resizeEvent(QResizeEvent* event) override;

private:
    /// Chooses the label stride from the plot area's width per bar and labels those edges.
    void fitBinLabels();

    LengthHistogram hist_; ///< the histogram shown
    std::vector<qint64> lengths_;
    QStringList edgeLabels_; ///< one per bin edge (counts + 1)
    int stride_ = 1;         ///< every how many bin edges one is labelled (see binLabels)
    QString title_;
};

} // namespace routepack::views
