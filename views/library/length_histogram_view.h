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
public:
    explicit LengthHistogramView(QWidget* parent = nullptr);
    /// Redraws the chart for these lengths (an empty list clears it); `title` above the chart.
    void setLengths(const std::vector<qint64>& lengths, const QString& title);
    /// The histogram currently shown.
    const LengthHistogram& histogram() const { return hist_; }
    /// Every how many bin edges one is labelled: the smallest k >= 1 with which the widest edge
    /// label (plus 8 px) fits in k bars' width of the plot area (narrow bars keep whole labels
    /// instead of "..."); 1 before the first layout.
    int binLabelStride() const { return stride_; }
    /// The edge labels shown, left to right ("100", "1.2k", "12k"): every binLabelStride()-th edge
    /// from the first.
    QStringList binLabels() const;

protected:
    /// Redraws in the new colours when the palette changes (light / dark).
    void changeEvent(QEvent* event) override;
    /// Labels as many bin edges as fit the new width (binLabelStride).
    void resizeEvent(QResizeEvent* event) override;

private:
    /// Chooses the label stride from the plot area's width per bar and labels those edges.
    void fitBinLabels();

    LengthHistogram hist_;
    std::vector<qint64> lengths_;
    QStringList edgeLabels_; ///< one per bin edge (counts + 1)
    int stride_ = 1;
    QString title_;
};

} // namespace routepack::views
