#pragma once
// "Define window" dialog of the studio: an optimizer-step window from the sample table's selection,
// the first N samples (numeric id order), N random samples with a seed, or whole GRPO groups; or a
// whole run cut into consecutive windows of N samples or G whole GRPO groups. The rules are
// core/model/window_select.h, shared with `routepack window` (--split, --split-groups).
#include "core/model/trace.h"
#include "core/model/window_select.h"
#include "storage/library.h"

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
    enum Mode { Selection, First, Random, Groups, Split, SplitGroups };

    /// One window of a split: its name and selection.
    struct SplitWindow {
        QString name;
        routepack::WindowSelection selection;
    };

    /// `samples`: every sample of `trace` (import order); `selectedIds`: the table's selection.
    WindowDialog(const QString& trace, std::vector<SampleInfo> samples, const QStringList& selectedIds,
                 QWidget* parent = nullptr);

    void setMode(Mode m);
    void setWindowName(const QString& name);
    QString windowName() const;
    void setCount(int n);
    void setSeed(qulonglong seed);
    void setGroups(const QStringList& groups);
    /// Samples per window of Split, whole GRPO groups per window of SplitGroups.
    void setSplitCount(int n);
    void setSplitGroupCount(int g);
    /// True in the Split and SplitGroups modes (several windows; the name is their prefix).
    bool isSplit() const;

    /// The window's sample ids and definition text; nullopt with `error` set in words when the
    /// choice is empty or invalid (core/model/window_select.h messages; a table selection none of whose
    /// ids is in the trace: "the selection holds no samples of trace 'T'"). In the split modes:
    /// nullopt with "a split defines several windows".
    std::optional<routepack::WindowSelection> selection(QString* error = nullptr) const;
    /// The windows of a split, in run order: split_consecutive / split_groups of the trace's samples,
    /// named split_window_names(windowName()) ("<name>-000", ...), the remainder last and marked in its
    /// definition, as `routepack window --split` / `--split-groups` makes them. nullopt with `error`
    /// set outside the split modes, without a name, or for the core's errors.
    std::optional<std::vector<SplitWindow>> splitWindows(QString* error = nullptr) const;

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
    QSpinBox* splitCount_ = nullptr;
    QSpinBox* splitGroupCount_ = nullptr;
    QLabel* summary_ = nullptr;
};

/// What defineWindows did: the status line's text (`error`: nothing was created) and the window to
/// select ("" when none was created).
struct WindowsDefined {
    QString status;
    bool error = false;
    QString select;
};

/// Define window (Ctrl+D): asks with a modal WindowDialog (parent `parent`) over trace `trace`'s
/// samples in `lib`, the sample table's selection `selectedIds` offered, then creates the window, or
/// in the split modes every window in one transaction (all or none), as `routepack window --split`.
/// nullopt when the dialog was cancelled; library errors come back as an error status.
std::optional<WindowsDefined> defineWindows(storage::Library& lib, const QString& trace, const QStringList& selectedIds,
                                            QWidget* parent);

} // namespace routepack::views
