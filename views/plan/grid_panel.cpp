#include "views/plan/grid_panel.h"

#include "views/plan/method_combo.h"
#include "views/plan/panel_util.h"
#include "views/plan/plan_data.h"
#include "views/plan/plan_models.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QStyledItemDelegate>
#include <QTableView>

#include <algorithm>
#include <cmath>
#include <limits>

namespace routepack::views {

namespace {

/// Paints a grid cell: a fill bar proportional to tokens / C (red when over C), then the model's
/// two text lines in the palette's text colour.
class FillDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        const QPalette& pal = option.palette;
        const bool selected = option.state & QStyle::State_Selected;
        p->save();
        p->setRenderHint(QPainter::Antialiasing, false);
        p->fillRect(option.rect, pal.brush(selected ? QPalette::Highlight : QPalette::Base));
        const double fill = index.data(FillRole).toDouble();
        QColor bar = fill > 1.0 ? QColor(0xd6, 0x27, 0x28) : QColor(0x2a, 0x9d, 0x8f);
        bar.setAlpha(150);
        // A gauge band (two text lines high, centred) filled to tokens / C, with its outline = C.
        const QRect cell = option.rect.adjusted(3, 3, -3, -3);
        const int bandH = std::min(cell.height(), 2 * option.fontMetrics.height() + 10);
        const QRect band(cell.left(), cell.center().y() - bandH / 2, cell.width(), bandH);
        const int w = static_cast<int>(std::lround(band.width() * std::clamp(fill, 0.0, 1.0)));
        p->fillRect(QRect(band.left(), band.top(), w, band.height()), bar);
        p->setPen(pal.color(QPalette::Mid));
        p->drawRect(band.adjusted(0, 0, -1, -1));
        p->setPen(pal.color(selected ? QPalette::HighlightedText : QPalette::Text));
        p->drawText(band, Qt::AlignCenter, index.data(Qt::DisplayRole).toString());
        p->restore();
    }
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        const QFontMetrics fm(option.font);
        const QSize text = fm.size(0, index.data(Qt::DisplayRole).toString());
        return {text.width() + 16, text.height() + 10};
    }
};

} // namespace

GridPanel::GridPanel(QWidget* parent) : QWidget(parent) {
    methodBox_ = methodCombo(this);
    summary_ = headingLabel(this);
    model_ = new ExecutionGridModel(this);
    model_->setObjectName(QStringLiteral("gridModel"));
    view_ = new QTableView(this);
    view_->setModel(model_);
    view_->setItemDelegate(new FillDelegate(view_));
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->setSelectionBehavior(QAbstractItemView::SelectItems);
    view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    view_->horizontalHeader()->setMinimumSectionSize(90);
    // Rows share the height (at least two text lines each; the view scrolls beyond that).
    view_->verticalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    view_->verticalHeader()->setMinimumSectionSize(2 * view_->fontMetrics().height() + 12);
    methodPanelLayout(this, methodBox_, summary_, view_)->addStretch(1);
    connect(methodBox_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
        if (!index.isValid()) return;
        Q_EMIT cellActivated(index.row(), index.column(), index.data(SampleIndicesRole).value<QList<int>>());
    });
}

void GridPanel::setPlan(const std::shared_ptr<const PlanResult>& plan) {
    plan_ = plan;
    fillMethodCombo(methodBox_, plan_.get());
    refresh();
}

void GridPanel::setMethod(Method method) {
    setComboMethod(methodBox_, method);
}
Method GridPanel::method() const {
    return comboMethod(methodBox_);
}

void GridPanel::refresh() {
    const Method m = method();
    model_->setPlan(plan_, m);
    if (!plan_) {
        summary_->clear();
        return;
    }
    const Layout& x = method_of(*plan_, m).layout;
    const auto tokens = cell_tokens(x, plan_->samples);
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0, sum = 0;
    for (std::int64_t t : tokens)
        lo = std::min(lo, t), hi = std::max(hi, t), sum += t;
    if (tokens.empty()) lo = 0;
    const std::int64_t cap = plan_token_cap(*plan_);
    const double C = static_cast<double>(std::max<std::int64_t>(cap, 1));
    const double mean = tokens.empty() ? 0.0 : static_cast<double>(sum) / static_cast<double>(tokens.size());
    summary_->setText(tr("%1: R = %2 rows x D = %3 DP slots, cap C = %4 tokens (%5). Fill min / mean / max = "
                         "%6 / %7 / %8 %. Click a cell to keep only its samples in the sample table.")
                          .arg(QString::fromLatin1(method_label(m)))
                          .arg(x.rows)
                          .arg(x.dp_slots)
                          .arg(cap)
                          .arg(plan_->rows.certified ? tr("R* certified") : tr("R* best known"))
                          .arg(100.0 * static_cast<double>(lo) / C, 0, 'f', 1)
                          .arg(100.0 * mean / C, 0, 'f', 1)
                          .arg(100.0 * static_cast<double>(hi) / C, 0, 'f', 1));
}

QString GridPanel::summaryText() const {
    return summary_->text();
}

} // namespace routepack::views
