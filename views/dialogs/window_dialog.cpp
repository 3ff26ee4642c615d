#include "views/dialogs/window_dialog.h"

#include "core/util/errors.h"
#include "views/widgets/gui_text.h"

#include <QButtonGroup>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <unordered_set>

namespace routepack::views {

WindowDialog::WindowDialog(const QString& trace, std::vector<SampleInfo> samples, const QStringList& selectedIds,
                           QWidget* parent)
    : QDialog(parent), trace_(trace), samples_(std::move(samples)), selected_(selectedIds) {
    setWindowTitle(tr("Define window of %1").arg(trace));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout();
    name_ = new QLineEdit(this);
    name_->setPlaceholderText(tr("e.g. step-0"));
    form->addRow(tr("Window name"), name_);
    layout->addLayout(form);

    const int n = static_cast<int>(samples_.size());
    auto* grid = new QGridLayout();
    mode_ = new QButtonGroup(this);
    auto* bySel = new QRadioButton(tr("Selected samples (%1)").arg(selected_.size()), this);
    auto* byFirst = new QRadioButton(tr("First N in numeric id order"), this);
    auto* byRandom = new QRadioButton(tr("N random samples, seed"), this);
    auto* byGroups = new QRadioButton(tr("GRPO groups"), this);
    auto* bySplit = new QRadioButton(tr("Split into consecutive windows of N samples (import order)"), this);
    auto* bySplitGroups = new QRadioButton(tr("Split into consecutive windows of G whole GRPO groups"), this);
    mode_->addButton(bySel, Selection);
    mode_->addButton(byFirst, First);
    mode_->addButton(byRandom, Random);
    mode_->addButton(byGroups, Groups);
    mode_->addButton(bySplit, Split);
    mode_->addButton(bySplitGroups, SplitGroups);
    count_ = new QSpinBox(this);
    count_->setRange(1, std::max(1, n));
    count_->setValue(std::max(1, n));
    randomCount_ = new QSpinBox(this);
    randomCount_->setRange(1, std::max(1, n));
    randomCount_->setValue(std::max(1, n / 2));
    seed_ = new QLineEdit(QStringLiteral("1"), this);
    groups_ = new QListWidget(this);
    const auto groups = sample_groups(samples_);
    splitCount_ = new QSpinBox(this);
    splitCount_->setRange(1, std::max(1, n));
    splitCount_->setValue(std::max(1, std::min(n, 128)));
    splitCount_->setToolTip(tr("Samples per window; a shorter remainder becomes the last window"));
    splitGroupCount_ = new QSpinBox(this);
    splitGroupCount_->setRange(1, std::max(1, static_cast<int>(groups.size())));
    splitGroupCount_->setValue(1);
    splitGroupCount_->setToolTip(tr("Whole GRPO groups per window; the remaining groups become the last window"));
    bySplitGroups->setEnabled(!groups.empty());
    splitGroupCount_->setEnabled(!groups.empty());
    for (const auto& g : groups) {
        auto* item = new QListWidgetItem(QString::fromStdString(g), groups_);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Unchecked);
    }
    groups_->setMaximumHeight(140);
    byGroups->setEnabled(!groups.empty());
    groups_->setEnabled(!groups.empty());
    if (groups.empty()) byGroups->setText(tr("GRPO groups (this trace has none)"));
    bySel->setEnabled(!selected_.isEmpty());
    grid->addWidget(bySel, 0, 0, 1, 3);
    grid->addWidget(byFirst, 1, 0);
    grid->addWidget(count_, 1, 1);
    grid->addWidget(byRandom, 2, 0);
    grid->addWidget(randomCount_, 2, 1);
    grid->addWidget(seed_, 2, 2);
    grid->addWidget(byGroups, 3, 0, 1, 3);
    grid->addWidget(groups_, 4, 0, 1, 3);
    grid->addWidget(bySplit, 5, 0);
    grid->addWidget(splitCount_, 5, 1);
    grid->addWidget(bySplitGroups, 6, 0);
    grid->addWidget(splitGroupCount_, 6, 1);
    layout->addLayout(grid);
    summary_ = new QLabel(this);
    summary_->setWordWrap(true);
    layout->addWidget(summary_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &WindowDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(mode_, &QButtonGroup::idClicked, this, [this] { updateSummary(); });
    connect(count_, &QSpinBox::valueChanged, this, [this] { updateSummary(); });
    connect(randomCount_, &QSpinBox::valueChanged, this, [this] { updateSummary(); });
    connect(seed_, &QLineEdit::textChanged, this, [this] { updateSummary(); });
    connect(splitCount_, &QSpinBox::valueChanged, this, [this] { updateSummary(); });
    connect(splitGroupCount_, &QSpinBox::valueChanged, this, [this] { updateSummary(); });
    connect(name_, &QLineEdit::textChanged, this, [this] {
        if (isSplit()) updateSummary();
    });
    connect(groups_, &QListWidget::itemChanged, this, [this] { updateSummary(); });
    setMode(selected_.size() > 1 ? Selection : First);
}

void WindowDialog::setMode(Mode m) {
    if (QAbstractButton* b = mode_->button(m)) b->setChecked(true);
    updateSummary();
}

void WindowDialog::setWindowName(const QString& name) {
    name_->setText(name);
}

QString WindowDialog::windowName() const {
    return name_->text().trimmed();
}

void WindowDialog::setCount(int n) {
    count_->setValue(n);
    randomCount_->setValue(n);
}

void WindowDialog::setSeed(qulonglong seed) {
    seed_->setText(QString::number(seed));
}

void WindowDialog::setGroups(const QStringList& groups) {
    for (int i = 0; i < groups_->count(); ++i)
        groups_->item(i)->setCheckState(groups.contains(groups_->item(i)->text()) ? Qt::Checked : Qt::Unchecked);
    updateSummary();
}

void WindowDialog::setSplitCount(int n) {
    splitCount_->setValue(n);
}

void WindowDialog::setSplitGroupCount(int g) {
    splitGroupCount_->setValue(g);
}

bool WindowDialog::isSplit() const {
    return mode_->checkedId() == Split || mode_->checkedId() == SplitGroups;
}

std::optional<std::vector<WindowDialog::SplitWindow>> WindowDialog::splitWindows(QString* error) const {
    try {
        if (!isSplit()) throw InputError("choose a split to define several windows");
        if (windowName().isEmpty()) throw InputError("give the windows a name (it prefixes the split windows' names)");
        const std::string trace = trace_.toStdString();
        const std::vector<WindowSelection> parts =
            mode_->checkedId() == Split
                ? split_consecutive(samples_, static_cast<std::size_t>(splitCount_->value()), trace)
                : split_groups(samples_, static_cast<std::size_t>(splitGroupCount_->value()), trace);
        const std::vector<std::string> names = split_window_names(windowName().toStdString(), parts.size());
        std::vector<SplitWindow> out;
        for (std::size_t k = 0; k < parts.size(); ++k)
            out.push_back({QString::fromStdString(names[k]), parts[k]});
        return out;
    } catch (const std::exception& e) {
        if (error) *error = guiErrorText(e);
        return std::nullopt;
    }
}

std::optional<WindowSelection> WindowDialog::selection(QString* error) const {
    try {
        const std::string trace = trace_.toStdString();
        switch (mode_->checkedId()) {
        case Selection: {
            if (selected_.isEmpty()) throw InputError("select samples in the sample table first");
            // Import order, whatever order the rows were selected in.
            std::unordered_set<std::string> want;
            for (const QString& id : selected_)
                want.insert(id.toStdString());
            WindowSelection w;
            for (const auto& s : samples_)
                if (want.count(s.id)) w.ids.push_back(s.id);
            if (w.ids.empty()) throw InputError("the selection holds no samples of trace '" + trace + "'");
            w.definition = "selection of " + std::to_string(w.ids.size()) + " samples";
            return w;
        }
        case First:
            return select_first(samples_, static_cast<std::size_t>(count_->value()), trace);
        case Random: {
            bool ok = false;
            const qulonglong seed = seed_->text().trimmed().toULongLong(&ok);
            if (!ok) throw InputError("the seed must be an integer in 0..18446744073709551615");
            return select_random(samples_, static_cast<std::size_t>(randomCount_->value()), seed, trace);
        }
        case Groups: {
            std::vector<std::string> groups;
            for (int i = 0; i < groups_->count(); ++i)
                if (groups_->item(i)->checkState() == Qt::Checked)
                    groups.push_back(groups_->item(i)->text().toStdString());
            return select_groups(samples_, groups, trace);
        }
        case Split:
        case SplitGroups:
            throw InputError("a split defines several windows");
        default:
            throw InputError("choose how to define the window");
        }
    } catch (const std::exception& e) {
        if (error) *error = guiErrorText(e);
        return std::nullopt;
    }
}

void WindowDialog::updateSummary() {
    QString why;
    if (isSplit()) {
        const auto w = splitWindows(&why);
        if (!w) {
            summary_->setText(why);
            return;
        }
        const SplitWindow& last = w->back();
        summary_->setText(tr("%1 windows: %2 .. %3; last: %4 samples (%5)")
                              .arg(w->size())
                              .arg(w->front().name, last.name)
                              .arg(last.selection.ids.size())
                              .arg(QString::fromStdString(last.selection.definition)));
        return;
    }
    const auto s = selection(&why);
    summary_->setText(s ? tr("%1 samples: %2").arg(s->ids.size()).arg(QString::fromStdString(s->definition)) : why);
}

void WindowDialog::accept() {
    QString why;
    if (windowName().isEmpty()) {
        summary_->setText(tr("Give the window a name."));
        return;
    }
    if (isSplit() ? !splitWindows(&why) : !selection(&why)) {
        summary_->setText(why);
        return;
    }
    QDialog::accept();
}

std::optional<WindowsDefined> defineWindows(storage::Library& lib, const QString& trace, const QStringList& selectedIds,
                                            QWidget* parent) {
    std::vector<SampleInfo> all;
    try {
        all = lib.samples(trace.toStdString());
    } catch (const std::exception& e) {
        return WindowsDefined{guiErrorText(e), true, {}};
    }
    WindowDialog dlg(trace, std::move(all), selectedIds, parent);
    dlg.setWindowName(QObject::tr("step-%1").arg(lib.windows(trace.toStdString()).size()));
    if (dlg.exec() != QDialog::Accepted) return std::nullopt;
    if (dlg.isSplit()) {
        QString why;
        const auto parts = dlg.splitWindows(&why);
        if (!parts) return WindowsDefined{QObject::tr("Cannot split the trace: %1").arg(why), true, {}};
        std::vector<storage::Library::WindowSpec> specs;
        for (const auto& p : *parts)
            specs.push_back({p.name.toStdString(), p.selection.ids, p.selection.definition});
        try {
            lib.create_windows(trace.toStdString(), specs);
        } catch (const std::exception& e) {
            return WindowsDefined{
                QObject::tr("Cannot create the windows (none was created): %1").arg(guiErrorText(e)), true, {}};
        }
        return WindowsDefined{QObject::tr("Trace %1 split into %2 windows, %3 .. %4 (last: %5).")
                                  .arg(trace)
                                  .arg(parts->size())
                                  .arg(parts->front().name, parts->back().name)
                                  .arg(QString::fromStdString(parts->back().selection.definition)),
                              false, parts->front().name};
    }
    const auto sel = dlg.selection();
    if (!sel) return std::nullopt;
    try {
        lib.create_window(trace.toStdString(), dlg.windowName().toStdString(), sel->ids, sel->definition);
    } catch (const std::exception& e) {
        return WindowsDefined{QObject::tr("Cannot create the window: %1").arg(guiErrorText(e)), true, {}};
    }
    return WindowsDefined{QObject::tr("Window %1 defined: %2 samples (%3).")
                              .arg(dlg.windowName())
                              .arg(sel->ids.size())
                              .arg(QString::fromStdString(sel->definition)),
                          false, dlg.windowName()};
}

} // namespace routepack::views
