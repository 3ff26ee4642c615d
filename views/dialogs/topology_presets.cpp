// TopologyEditor's presets (views/dialogs/topology_editor.h): the shipped and the library's topologies in
// the preset box, which one the form shows, and filling the form from one.
#include "core/plan/budgets.h"
#include "core/util/errors.h"
#include "views/dialogs/topology_editor.h"
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

} // namespace routepack::views
