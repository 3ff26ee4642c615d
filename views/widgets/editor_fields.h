#pragma once
// The field widgets of the topology and budget editor (views/dialogs/topology_editor.h): integer and
// compact decimal spin boxes, a decimal field that holds any double exactly, and a combo box that
// elides its text in the middle.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLocale>
#include <QSize>
#include <QString>

class QSpinBox;
class QStyleOptionComboBox;
class QWidget;

namespace routepack::views {

/// An integer spin box over [lo, hi] showing `value`, with group separators.
QSpinBox* intSpin(QWidget* parent, int lo, int hi, int value);

/// A double spin box that writes its value without trailing zeros ("0.5", "0.02", "16"), in the
/// widget's locale without group separators (so the default parser reads it back).
class CompactDoubleSpinBox : public QDoubleSpinBox {
public:
    using QDoubleSpinBox::QDoubleSpinBox;
    QString textFromValue(double v) const override;
};

/// A CompactDoubleSpinBox over [lo, hi] with `decimals` and `step`, showing `value`.
QDoubleSpinBox* compactSpin(QWidget* parent, double lo, double hi, double value, int decimals, double step);

/// A double spin box that holds any finite double of its range exactly: it shows the shortest text
/// that reads back as the value ("0.05", "1e-09", "1.7976931348623157e+308", locale decimal point,
/// no group separators) and reads such text back, so a loaded budget is never rounded to a number
/// of decimals.
class ExactDoubleSpinBox : public QDoubleSpinBox {
public:
    using QDoubleSpinBox::QDoubleSpinBox;
    QString textFromValue(double v) const override;
    double valueFromText(const QString& text) const override;
    /// As wide as a field for 0..1e9 with 6 decimals (the budgets' usual numbers), not as wide as the
    /// text of its largest value (1.7976931348623157e+308 for eta and t0): a longer value scrolls.
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    QValidator::State validate(QString& text, int& pos) const override;

private:
    QSize capped(QSize size, bool minimum) const;
    QLocale plainLocale() const;
};

/// A combo box that elides its text in the middle instead of cutting its end: preset names differ
/// in their tail ("...-ep8-dp4" against "...-ep16-dp8-2nodes"), which a cut hides. The popup is
/// as wide as the longest name.
class MiddleElidingComboBox : public QComboBox {
public:
    using QComboBox::QComboBox;
    /// The text as paintEvent draws it at the current width.
    QString displayText() const;

protected:
    void paintEvent(QPaintEvent* event) override;
    void showPopup() override;

private:
    QString elided(const QStyleOptionComboBox& opt) const;
};

} // namespace routepack::views
