// TopologyEditor's presets (views/dialogs/topology_editor.h): the shipped and the library's topologies in
// the preset box, which one the form shows, filling the form from one and saying what a switch changed;
// the budgets that differ from their defaults, marked and reset.
#include "core/plan/budgets.h"
#include "core/util/errors.h"
#include "views/dialogs/topology_editor.h"
#include "views/plan/plan_data.h"
#include "views/widgets/editor_fields.h"
#include "views/widgets/gui_text.h"
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSpinBox>
#include <QStyle>
#include <QStyleOptionComboBox>
#include <QTableWidget>
#include <QThread>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace routepack::views {

void TopologyEditor::setLibraryTopologies(const std::vector<storage::TopologyEntry>& entries) {
    library_ = entries;
    const QString current = preset_->currentData().toString();
    preset_->blockSignals(true);
    preset_->clear();
    for (const auto& t : library_)
        preset_->addItem(tr("library: %1").arg(QString::fromStdString(t.name)),
                         QStringLiteral("library:") + QString::fromStdString(t.name));
    for (const auto& n : known_topology_names())
        preset_->addItem(tr("shipped: %1").arg(QString::fromStdString(n)),
                         QStringLiteral("shipped:") + QString::fromStdString(n));
    for (int k = 0; k < preset_->count(); ++k)
        preset_->setItemData(k, preset_->itemText(k), Qt::ToolTipRole);
    const int i = preset_->findData(current);
    if (i >= 0) preset_->setCurrentIndex(i);
    preset_->blockSignals(false);
    // A preset of the previous library is gone: the box shows what the form now matches, or none.
    syncPreset();
}

QString TopologyEditor::currentPreset() const {
    const QString key = preset_->currentData().toString();
    const int colon = key.indexOf(QLatin1Char(':'));
    return preset_->currentIndex() < 0 || colon < 0 ? QString() : key.mid(colon + 1);
}

QString TopologyEditor::presetDisplayText() const {
    return static_cast<const MiddleElidingComboBox*>(preset_)->displayText();
}

bool TopologyEditor::presetMatches(int index, const QString& name, const Topology& form) const {
    const QString key = preset_->itemData(index).toString();
    try {
        if (key.startsWith(QStringLiteral("library:"))) {
            if (key.mid(8) != name) return false;
            for (const auto& e : library_)
                if (QString::fromStdString(e.name) == name) return e.topology == form;
            return false;
        }
        if (key.startsWith(QStringLiteral("shipped:")))
            return key.mid(8) == name && known_topology(name.toStdString()) == form;
    } catch (const std::exception&) {
        // A shipped name that no longer resolves matches nothing.
    }
    return false;
}

void TopologyEditor::syncPreset() {
    const QString name = topologyName();
    const std::optional<Topology> form = topology();
    int match = -1;
    if (form) {
        if (preset_->currentIndex() >= 0 && presetMatches(preset_->currentIndex(), name, *form))
            match = preset_->currentIndex();
        for (int i = 0; i < preset_->count() && match < 0; ++i)
            if (presetMatches(i, name, *form)) match = i;
    }
    preset_->setPlaceholderText(name.isEmpty() ? tr("edited (no preset)") : tr("edited: %1").arg(name));
    if (preset_->currentIndex() != match) {
        const QSignalBlocker block(preset_);
        preset_->setCurrentIndex(match);
    }
    preset_->update();
    updatePresetToolTip();
}

void TopologyEditor::updatePresetToolTip() {
    const QString where = tr("Topologies saved in the library, and the shipped ones (resources/topologies)");
    preset_->setToolTip(preset_->currentIndex() >= 0
                            ? tr("%1\n%2").arg(preset_->currentText(), where)
                            : tr("%1: the form below matches no preset (a field was edited, or a run's topology "
                                 "was loaded)\n%2")
                                  .arg(preset_->placeholderText(), where));
}

bool TopologyEditor::selectPreset(const QString& name) {
    int i = preset_->findData(QStringLiteral("library:") + name);
    if (i < 0) i = preset_->findData(QStringLiteral("shipped:") + name);
    if (i < 0) return false;
    preset_->setCurrentIndex(i);
    applyPreset(i);
    return true;
}

void TopologyEditor::applyPreset(int index) {
    const QString key = preset_->itemData(index).toString();
    ++fillDepth_;
    applyPresetFields(key);
    --fillDepth_;
    recordStep(tr("Preset %1").arg(preset_->itemText(index)), false);
    markClean();
}

void TopologyEditor::applyPresetFields(const QString& key) {
    if (key.startsWith(QStringLiteral("library:"))) {
        const std::string name = key.mid(8).toStdString();
        for (const auto& e : library_) {
            if (e.name != name) continue;
            setTopology(QString::fromStdString(e.name), e.topology);
            if (e.budgets) setBudgets(*e.budgets);
        }
    } else if (key.startsWith(QStringLiteral("shipped:"))) {
        const QString name = key.mid(8);
        setTopology(name, known_topology(name.toStdString()));
    }
}

namespace {

/// The label a QFormLayout shows beside `field` ("" when none).
QString formLabel(const QWidget* field) {
    const auto* form = qobject_cast<const QFormLayout*>(field->parentWidget()->layout());
    const auto* label = form ? qobject_cast<const QLabel*>(form->labelForField(const_cast<QWidget*>(field))) : nullptr;
    return label ? label->text() : QString();
}

} // namespace

std::vector<std::pair<QString, QString>> TopologyEditor::topologyFieldTexts() const {
    std::vector<std::pair<QString, QString>> out;
    for (const QLineEdit* e : {name_, shards_})
        out.emplace_back(formLabel(e), e->text());
    for (const QSpinBox* b : {ranks_, experts_, slots_, cap_, minRows_, rowMultiple_, samplesPerDpSlot_,
                              samplesPerCell_, maxSamplesPerCell_})
        out.emplace_back(formLabel(b), b->text());
    out.emplace_back(formLabel(oversize_), oversize_->currentText());
    out.emplace_back(formLabel(gpusPerNode_), gpusPerNode_->text());
    for (const QLineEdit* e : {epRankNodes_, dpSlotNodes_})
        out.emplace_back(formLabel(e), e->text().isEmpty() ? tr("not given") : e->text());
    for (const QDoubleSpinBox* d : {commWeight_, commTolerance_})
        out.emplace_back(formLabel(d), d->text());
    out.emplace_back(formLabel(invocation_), invocation_->text());
    QStringList stages;
    for (int r = 0; r < stages_->rowCount(); ++r) {
        QStringList cells;
        for (int c = 0; c < 3; ++c)
            cells << (stages_->item(r, c) ? stages_->item(r, c)->text() : QString());
        stages << cells.join(QLatin1Char(' '));
    }
    out.emplace_back(tr("Attention stages"), stages.join(QStringLiteral(", ")));
    out.emplace_back(migrationBox_->title(), migrationBox_->isChecked() ? tr("on") : tr("off"));
    if (migrationBox_->isChecked()) {
        for (QDoubleSpinBox* d : numberFields())
            if (d != commWeight_ && d != commTolerance_) out.emplace_back(formLabel(d), d->text());
        out.emplace_back(formLabel(planning_), planning_->currentText());
    }
    return out;
}

void TopologyEditor::userPickedPreset(int index) {
    const auto before = topologyFieldTexts();
    applyPreset(index);
    const auto after = topologyFieldTexts();
    QStringList changes;
    for (const auto& [label, text] : after) {
        QString was;
        for (const auto& [l, t] : before)
            if (l == label) was = t;
        if (label == formLabel(name_) || was == text) continue;
        if (label == tr("Attention stages") || label == formLabel(shards_))
            changes << tr("%1 changed").arg(label);
        else
            changes << tr("%1 %2 \u2192 %3").arg(label, was.isEmpty() ? tr("(none)") : was, text);
    }
    const QString what =
        changes.isEmpty()
            ? tr("no topology field changed")
            : (changes.size() > 8
                   ? tr("%1 and %2 more").arg(changes.mid(0, 8).join(QStringLiteral(", "))).arg(changes.size() - 8)
                   : changes.join(QStringLiteral(", ")));
    const QString key = preset_->itemData(index).toString();
    bool savedBudgets = false;
    if (key.startsWith(QStringLiteral("library:")))
        for (const auto& e : library_)
            if (QString::fromStdString(e.name) == key.mid(8)) savedBudgets = e.budgets.has_value();
    const QStringList edited = editedBudgets();
    QString budgetsText;
    if (savedBudgets)
        budgetsText = tr("budgets: the ones saved with it");
    else if (edited.isEmpty())
        budgetsText = tr("budgets kept (the defaults)");
    else
        budgetsText = tr("budgets kept, %n not the defaults: %1 (Defaults in Planner budgets resets them)", nullptr,
                         static_cast<int>(edited.size()))
                          .arg(edited.join(QStringLiteral(", ")));
    Q_EMIT presetSwitched(tr("Preset %1: %2; %3.").arg(preset_->itemText(index), what, budgetsText));
}

QStringList TopologyEditor::editedBudgets() const {
    QStringList out;
    for (const BudgetField& f : budgetFields_) {
        if (f.row->run_setting || atDefault(f)) continue;
        out << QStringLiteral("%1 %2").arg(QString::fromUtf8(f.row->label), budgetText(f, false));
    }
    if (!seedAtDefault()) out << tr("Seed %1").arg(seed_->text().trimmed());
    return out;
}

void TopologyEditor::resetBudgets() {
    const PlannerBudgets d;
    ++fillDepth_;
    filling_ = true;
    for (const BudgetField& f : budgetFields_) {
        if (f.row->run_setting) continue;
        if (f.spin) f.spin->setValue(static_cast<int>(budget_int(*f.row, d)));
        if (f.number) f.number->setValue(budget_double(*f.row, d));
        if (f.check) f.check->setChecked(budget_int(*f.row, d) != 0);
    }
    seed_->setText(QString::number(d.seed));
    filling_ = false;
    --fillDepth_;
    updateValidity();
    recordStep(tr("Reset the budgets"), false);
    Q_EMIT changed();
}

void TopologyEditor::updateBudgetMarks() {
    if (!budgetBox_) return;
    const PlannerBudgets d;
    auto* form = static_cast<QFormLayout*>(budgetBox_->layout());
    int edited = 0;
    auto mark = [&](QWidget* field, bool same, const QString& defaultText) {
        if (!same) ++edited;
        auto* label = qobject_cast<QLabel*>(form->labelForField(field));
        if (!label) return;
        QFont font = label->font();
        font.setBold(!same);
        label->setFont(font);
        label->setToolTip(same ? QString() : tr("Edited; the default is %1").arg(defaultText));
    };
    for (const BudgetField& f : budgetFields_) {
        QWidget* w = f.check ? static_cast<QWidget*>(f.check) : f.number ? static_cast<QWidget*>(f.number) : f.spin;
        mark(w, f.row->run_setting || atDefault(f), budgetText(f, true));
    }
    mark(seed_, seedAtDefault(), QString::number(d.seed));
    budgetBox_->setTitle(edited == 0 ? tr("Planner budgets (the defaults)")
                                     : tr("Planner budgets (%n edited)", nullptr, edited));
    budgetDefaults_->setEnabled(edited > 0);
}

bool TopologyEditor::atDefault(const BudgetField& f) const {
    const double d = f.row->default_value;
    if (f.check) return f.check->isChecked() == (d != 0);
    if (f.number) return f.number->value() == d;
    return static_cast<double>(f.spin->value()) == d;
}

QString TopologyEditor::budgetText(const BudgetField& f, bool defaultValue) const {
    const double d = f.row->default_value;
    if (f.check) return (defaultValue ? d != 0 : f.check->isChecked()) ? tr("on") : tr("off");
    if (f.number) {
        const double v = defaultValue ? d : f.number->value();
        return v == f.number->minimum() && !f.number->specialValueText().isEmpty() ? f.number->specialValueText()
                                                                                   : f.number->textFromValue(v);
    }
    const auto v = defaultValue ? static_cast<std::int64_t>(d) : std::int64_t{f.spin->value()};
    return v == f.spin->minimum() && !f.spin->specialValueText().isEmpty() ? f.spin->specialValueText()
                                                                           : QString::fromStdString(grouped_count(v));
}

bool TopologyEditor::seedAtDefault() const {
    bool ok = false;
    const qulonglong seed = seed_->text().trimmed().toULongLong(&ok);
    return ok && seed == PlannerBudgets{}.seed;
}

} // namespace routepack::views
