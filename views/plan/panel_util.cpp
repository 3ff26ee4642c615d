#include "views/plan/panel_util.h"

#include "views/plan/plan_explain.h"
#include "views/widgets/item_actions.h"

#include <QAbstractSeries>
#include <QBarCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QGraphicsLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QPainter>
#include <QPalette>
#include <QResizeEvent>
#include <QVBoxLayout>

#include <algorithm>

namespace routepack::views {

QString layerLabel(const PlanResult& plan, int l) {
    const auto& ids = plan.model.moe_layers;
    return QString::number(l >= 0 && l < static_cast<int>(ids.size()) ? ids[static_cast<std::size_t>(l)] : l);
}

QStringList layerLabels(const PlanResult& plan) {
    QStringList out;
    for (int l = 0; l < plan.model.num_moe_layers(); ++l)
        out.append(layerLabel(plan, l));
    return out;
}

namespace {

// Dynamic properties of a chart kept whole (keepChartTextWhole).
constexpr char kFullTitle[] = "routepackFullTitle";         ///< the title as the panel set it
constexpr char kShownTitle[] = "routepackShownTitle";       ///< what keepChartTextWhole made of it
constexpr char kLegendInTitle[] = "routepackLegendInTitle"; ///< the legend hidden, its entries in the title

/// The width (px) Qt leaves a bar category axis's label unelided: the plot width over the category
/// edges (count + 1), less 10 px of padding.
double categoryLabelRoom(double plotWidth, int count) {
    return plotWidth / (count + 1) - 10;
}

/// `text` wrapped greedily at spaces into lines at most `width` px wide (a longer word alone).
QStringList wrapWords(const QString& text, const QFontMetrics& fm, int width) {
    QStringList lines;
    QString line;
    for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const QString joined = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
        if (line.isEmpty() || fm.horizontalAdvance(joined) <= width) {
            line = joined;
        } else {
            lines << line;
            line = word;
        }
    }
    if (!line.isEmpty() || lines.isEmpty()) lines << line;
    return lines;
}

/// Re-lays the title and legend of `chart` at its current width (see keepChartTextWhole).
void fitChartText(QChart* chart) {
    const QString shown = chart->property(kShownTitle).toString();
    if (chart->title() != shown) {
        // A new title from the panel: it is the whole text from now on.
        chart->setProperty(kFullTitle, chart->title());
        if (chart->property(kLegendInTitle).toBool()) chart->legend()->setVisible(true);
        chart->setProperty(kLegendInTitle, false);
    }
    const QString full = chart->property(kFullTitle).toString();
    const QMargins m = chart->margins();
    // Less the chart layout's own padding and the rich-text title's document margins.
    const int width = static_cast<int>(chart->size().width()) - m.left() - m.right() - 40;
    if (width < 40) return;
    // The legend's entries in one row, as QLegend lays them out at the bottom (marker, gap, label).
    QLegend* legend = chart->legend();
    const QFontMetrics lfm(legend->font());
    int legendNeed = 0;
    QStringList entries;
    QList<int> entryWidths;
    for (QLegendMarker* marker : legend->markers()) {
        // Not marker->isVisible(): that follows the legend's own visibility.
        if ((marker->series() && !marker->series()->isVisible()) || marker->label().isEmpty()) continue;
        entryWidths << lfm.height() + 16 + lfm.horizontalAdvance(marker->label());
        legendNeed += entryWidths.back();
        entries << QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2")
                       .arg(marker->brush().color().name(), marker->label().toHtmlEscaped());
    }
    const bool horizontal = legend->alignment() & (Qt::AlignBottom | Qt::AlignTop);
    const bool wanted = legend->isVisible() || chart->property(kLegendInTitle).toBool();
    const bool inTitle = wanted && horizontal && !entries.isEmpty() && legendNeed > width;
    if (legend->isVisible() == inTitle) legend->setVisible(!inTitle);
    chart->setProperty(kLegendInTitle, inTitle);
    const QFontMetrics tfm(chart->titleFont());
    QStringList lines;
    if (!full.isEmpty())
        for (const QString& part : full.split(QStringLiteral("<br>")))
            lines << wrapWords(part, tfm, width);
    if (inTitle) {
        // The legend's entries, whole, as many to a line as fit.
        QString line;
        int used = 0;
        for (int k = 0; k < entries.size(); ++k) {
            const int w = entryWidths[k];
            if (!line.isEmpty() && used + w > width) {
                lines << line;
                line.clear();
                used = 0;
            }
            line += (line.isEmpty() ? QString() : QStringLiteral("&nbsp;&nbsp; ")) + entries[k];
            used += w;
        }
        lines << line;
    }
    // Category labels that Qt would elide are turned upright instead (level again once they fit with
    // room to spare). Qt gives each label the axis width over the number of category edges (one more
    // than the categories), less its padding.
    const double plotW = chart->plotArea().width();
    for (QAbstractAxis* a : chart->axes(Qt::Horizontal)) {
        auto* x = qobject_cast<QBarCategoryAxis*>(a);
        if (!x || x->count() == 0 || plotW <= 0) continue;
        const QFontMetrics xfm(x->labelsFont());
        int widest = 0;
        for (const QString& c : x->categories())
            widest = std::max(widest, xfm.horizontalAdvance(c));
        const double room = categoryLabelRoom(plotW, x->count());
        if (x->labelsAngle() == 0 && widest > room)
            x->setLabelsAngle(-90);
        else if (x->labelsAngle() == -90 && widest + 10 < room)
            x->setLabelsAngle(0);
    }
    const QString joined = lines.join(QStringLiteral("<br>"));
    chart->setProperty(kShownTitle, joined);
    if (chart->title() != joined) {
        chart->setTitle(joined);
        // Lay the chart out now: the paint under way shows the new title, not the one before.
        if (QGraphicsLayout* l = chart->layout()) l->activate();
    }
}

/// Calls fitChartText when the view is resized, when the chart is about to lay itself out again (a
/// new title, new series) and before the view paints.
class ChartTextKeeper : public QObject {
public:
    ChartTextKeeper(QChartView* view) : QObject(view), view_(view) {}
    bool eventFilter(QObject*, QEvent* e) override {
        const auto t = e->type();
        if (t == QEvent::Paint || t == QEvent::Resize || t == QEvent::LayoutRequest || t == QEvent::GraphicsSceneResize)
            if (QChart* c = view_->chart()) fitChartText(c);
        return false;
    }

private:
    QChartView* view_;
};

} // namespace

void keepChartTextWhole(QChartView* view) {
    auto* keeper = new ChartTextKeeper(view);
    view->viewport()->installEventFilter(keeper);
    view->installEventFilter(keeper);
    if (view->chart()) view->chart()->installEventFilter(keeper);
}

QString chartTitleText(const QChart* chart) {
    const QString shown = chart->property(kShownTitle).toString();
    return chart->title() == shown && !shown.isEmpty() ? chart->property(kFullTitle).toString() : chart->title();
}

QChartView* makeChartView(QWidget* parent, QSize minimum) {
    auto* chart = new QChart;
    chart->setBackgroundRoundness(0);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setAlignment(Qt::AlignBottom);
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing, true);
    view->setMinimumSize(minimum);
    installChartActions(view);
    keepChartTextWhole(view);
    return view;
}

void clearChart(QChart* chart) {
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) {
        chart->removeAxis(a);
        delete a;
    }
    chart->setTitle(QString());
}

void styleChart(QChart* chart, const QPalette& pal) {
    if (!chart) return;
    const QColor text = pal.color(QPalette::Text);
    QColor grid = pal.color(QPalette::Mid);
    grid.setAlpha(110);
    chart->setBackgroundBrush(pal.brush(QPalette::Base));
    chart->setBackgroundPen(Qt::NoPen);
    chart->setPlotAreaBackgroundVisible(false);
    chart->setTitleBrush(text);
    chart->legend()->setLabelColor(text);
    const auto axes = chart->axes();
    for (QAbstractAxis* a : axes) {
        a->setLabelsColor(text);
        a->setTitleBrush(text);
        a->setGridLineColor(grid);
        a->setLinePenColor(pal.color(QPalette::Mid));
    }
}

QLabel* headingLabel(QWidget* parent) {
    auto* l = new QLabel(parent);
    l->setWordWrap(true);
    l->setTextFormat(Qt::RichText);
    return l;
}

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent) {
    setTextFormat(Qt::PlainText);
    // Any width: the layout decides, the text follows.
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    setMinimumWidth(1);
}

void ElidedLabel::setFullText(const QString& text) {
    full_ = text;
    setToolTip(text);
    elide();
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    elide();
}

void ElidedLabel::elide() {
    // A pixel less than the contents: a label draws its text from the contents' left edge.
    setText(fontMetrics().elidedText(QString(full_).replace(QLatin1Char('\n'), QLatin1Char(' ')), Qt::ElideRight,
                                     std::max(0, contentsRect().width() - 1)));
}

QHBoxLayout* methodPanelLayout(QWidget* self, QComboBox* methodBox, QWidget* heading, QWidget* body) {
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(QObject::tr("Method:"), self));
    bar->addWidget(methodBox);
    auto* v = new QVBoxLayout(self);
    v->addLayout(bar);
    v->addWidget(heading);
    v->addWidget(body, 1);
    return bar;
}

QComboBox* makeScaleCombo(QWidget* parent, bool perLayer) {
    auto* box = new QComboBox(parent);
    box->addItem(QObject::tr("Linear"), static_cast<int>(ColourScale::Linear));
    box->addItem(QObject::tr("Log"), static_cast<int>(ColourScale::Log));
    if (perLayer) box->addItem(QObject::tr("Per layer"), static_cast<int>(ColourScale::PerLayer));
    box->setToolTip(QObject::tr("Colour scale: linear, logarithmic (skewed loads)%1")
                        .arg(perLayer ? QObject::tr(", or each MoE layer over its own range") : QString()));
    return box;
}

} // namespace routepack::views
