#pragma once
// "Define window" dialog of the studio: an optimizer-step window from the sample table's selection,
// the first N samples (numeric id order), N random samples with a seed, or whole GRPO groups. The
// rules are core/model/window_select.h, shared with `routepack window`.
#include "core/model/trace.h"
#include "core/model/window_select.h"

#include <QDialog>
#include <QStringList>

#include <optional>
#include <vector>

class QButtonGroup;
class QLabel;
class QLineEdit;
class QListWidget;
class QRadioButton;
class QSpinBox;

namespace routepack::views {

/// Collects a window definition; the studio creates it in the library on accept.
class WindowDialog : public QDialog {
    Q_OBJECT
public:
    enum Mode { Selection, First, Random, Groups };

    /// `samples`: every sample of `trace` (import order); `selectedIds`: the table's selection.
    WindowDialog(const QString& trace, std::vector<SampleInfo> samples, const QStringList& selectedIds,
                 QWidget* parent = nullptr);

    void setMode(Mode m);
    void setWindowName(const QString& name);
    QString windowName() const;
    void setCount(int n);
    void setSeed(qulonglong seed);
    void setGroups(const QStringList& groups);

    /// The window's sample ids and definition text; nullopt with `error` set in words when the
    /// choice is empty or invalid (core/model/window_select.h messages; a table selection none of whose
    /// ids is in the trace: "the selection holds no samples of trace 'T'").
    std::optional<routepack::WindowSelection> selection(QString* error = nullptr) const;

public Q_SLOTS:
    void accept() override;

private:
    void updateSummary();

    QString trace_;
    std::vector<SampleInfo> samples_;
    QStringList selected_;
    QLineEdit* name_ = nullptr;
    QButtonGroup* mode_ = nullptr;
    QSpinBox* count_ = nullptr;
    QSpinBox* randomCount_ = nullptr;
    QLineEdit* seed_ = nullptr;
    QListWidget* groups_ = nullptr;
    QLabel* summary_ = nullptr;
};

} // namespace routepack::views
