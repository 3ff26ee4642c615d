#include "views/widgets/editor_fields.h"

#include <QAbstractItemView>
#include <QScrollBar>
#include <QSpinBox>
#include <QStyleOptionComboBox>
#include <QStylePainter>

#include <algorithm>

namespace routepack::views {

QSpinBox* intSpin(QWidget* parent, int lo, int hi, int value) {
    auto* s = new QSpinBox(parent);
    s->setRange(lo, hi);
    s->setValue(value);
    s->setGroupSeparatorShown(true);
    return s;
}

QString CompactDoubleSpinBox::textFromValue(double v) const {
    QLocale l = locale();
    l.setNumberOptions(QLocale::OmitGroupSeparator);
    return l.toString(v, 'g', 12);
}

QDoubleSpinBox* compactSpin(QWidget* parent, double lo, double hi, double value, int decimals, double step) {
    auto* s = new CompactDoubleSpinBox(parent);
    s->setDecimals(decimals);
    s->setRange(lo, hi);
    s->setSingleStep(step);
    s->setValue(value);
    return s;
}

QString ExactDoubleSpinBox::textFromValue(double v) const {
    return plainLocale().toString(v, 'g', QLocale::FloatingPointShortest);
}

double ExactDoubleSpinBox::valueFromText(const QString& text) const {
    return plainLocale().toDouble(text);
}

QSize ExactDoubleSpinBox::sizeHint() const {
    return capped(QDoubleSpinBox::sizeHint(), false);
}

QSize ExactDoubleSpinBox::minimumSizeHint() const {
    return capped(QDoubleSpinBox::minimumSizeHint(), true);
}

QValidator::State ExactDoubleSpinBox::validate(QString& text, int&) const {
    bool ok = false;
    const double v = plainLocale().toDouble(text, &ok);
    if (ok && v >= minimum() && v <= maximum()) return QValidator::Acceptable;
    return QValidator::Intermediate;
}

QSize ExactDoubleSpinBox::capped(QSize size, bool minimum) const {
    QDoubleSpinBox probe;
    probe.setFont(font());
    probe.setStyle(style());
    probe.setDecimals(6);
    probe.setRange(0, 1e9);
    const QSize usual = minimum ? probe.minimumSizeHint() : probe.sizeHint();
    size.setWidth(std::min(size.width(), usual.width()));
    return size;
}

QLocale ExactDoubleSpinBox::plainLocale() const {
    QLocale l = locale();
    l.setNumberOptions(QLocale::OmitGroupSeparator);
    return l;
}

QString MiddleElidingComboBox::displayText() const {
    QStyleOptionComboBox opt;
    initStyleOption(&opt);
    if (currentIndex() < 0) opt.currentText = placeholderText();
    return elided(opt);
}

void MiddleElidingComboBox::paintEvent(QPaintEvent*) {
    QStylePainter painter(this);
    painter.setPen(palette().color(QPalette::Text));
    QStyleOptionComboBox opt;
    initStyleOption(&opt);
    if (currentIndex() < 0 && !placeholderText().isEmpty()) {
        opt.palette.setBrush(QPalette::ButtonText, opt.palette.placeholderText());
        opt.currentText = placeholderText();
    }
    opt.currentText = elided(opt);
    painter.drawComplexControl(QStyle::CC_ComboBox, opt);
    painter.drawControl(QStyle::CE_ComboBoxLabel, opt);
}

void MiddleElidingComboBox::showPopup() {
    int widest = 0;
    for (int i = 0; i < count(); ++i)
        widest = std::max(widest, view()->fontMetrics().horizontalAdvance(itemText(i)));
    view()->setMinimumWidth(widest + view()->verticalScrollBar()->sizeHint().width() + 24);
    QComboBox::showPopup();
}

QString MiddleElidingComboBox::elided(const QStyleOptionComboBox& opt) const {
    const QRect r = style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, this);
    // A few pixels less than the field: styles inset the label a little.
    return fontMetrics().elidedText(opt.currentText, Qt::ElideMiddle, std::max(0, r.width() - 4));
}

} // namespace routepack::views
