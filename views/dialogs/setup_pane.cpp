#include "views/dialogs/setup_pane.h"

#include "views/dialogs/topology_editor.h"
#include "views/library/studio_data.h"
#include "views/widgets/gui_text.h"

#include <QScrollBar>

namespace routepack::views {

SetupPane::SetupPane(QWidget* parent) : QScrollArea(parent), editor_(new TopologyEditor(this)) {
    setObjectName(QStringLiteral("setupPane"));
    editor_->setObjectName(QStringLiteral("topologyEditor"));
    setWidget(editor_);
    setWidgetResizable(true);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // Without a horizontal scroll bar the dock must not get narrower than the editor's fields need
    // (else spin boxes, the Name field and the stage table's columns are cut at the right edge).
    setMinimumWidth(editor_->minimumSizeHint().width() + verticalScrollBar()->sizeHint().width() + 2 * frameWidth());
    connect(editor_, &TopologyEditor::saveRequested, this, &SetupPane::save);
    connect(editor_, &TopologyEditor::presetSwitched, this,
            [this](const QString& what) { Q_EMIT status(what, false); });
    connect(editor_, &TopologyEditor::changed, this, [this] {
        QString why;
        if (editor_->topology(&why) && editor_->budgets(&why)) Q_EMIT validEdit();
    });
}

void SetupPane::setLibrary(storage::Library* lib) {
    lib_ = lib;
    if (!lib_) return;
    try {
        editor_->setLibraryTopologies(lib_->topologies());
    } catch (const std::exception& e) {
        Q_EMIT status(guiErrorText(e), true);
    }
}

QString SetupPane::topologyName() const {
    return editor_->topologyName().isEmpty() ? QStringLiteral("topology") : editor_->topologyName();
}

std::optional<std::pair<routepack::Topology, routepack::PlannerBudgets>> SetupPane::setup() {
    QString why;
    auto topo = editor_->topology(&why);
    if (!topo) {
        Q_EMIT status(tr("The topology is not valid: %1").arg(why), true);
        return std::nullopt;
    }
    auto budgets = editor_->budgets(&why);
    if (!budgets) {
        Q_EMIT status(tr("The planner budgets are not valid: %1").arg(why), true);
        return std::nullopt;
    }
    return std::make_pair(std::move(*topo), std::move(*budgets));
}

void SetupPane::save() {
    if (!lib_) {
        Q_EMIT status(tr("Open a library first."), true);
        return;
    }
    const auto form = setup();
    if (!form) return;
    try {
        lib_->save_topology(editor_->topologyName().toStdString(), form->first, form->second);
        editor_->setLibraryTopologies(lib_->topologies());
        editor_->selectPreset(editor_->topologyName());
        editor_->markClean();
        Q_EMIT status(tr("Topology %1 saved in the library.").arg(editor_->topologyName()), false);
    } catch (const std::exception& e) {
        Q_EMIT status(tr("Cannot save the topology: %1").arg(guiErrorText(e)), true);
    }
}

bool SetupPane::loadRun(const storage::RunEntry& run, bool force) {
    // The editor shows what the run was planned with, so that planning again starts from it; edits
    // of the form that no run or saved topology holds are kept unless `force` (they are one Ctrl+Z
    // away after a forced load).
    const QString name = QString::fromStdString(run.topology);
    if (editor_->showsSetup(name, run.topology_value, run.budgets)) return true;
    if (!force && editor_->hasUnsavedEdits()) return false;
    try {
        if (lib_) editor_->setLibraryTopologies(lib_->topologies()); // the run may have saved a new one
    } catch (const std::exception&) {
        // The presets stay as they were; the fields below are still the run's.
    }
    editor_->loadSetup(name, run.topology_value, run.budgets, tr("run %1's setup").arg(run.id));
    return true;
}

QString SetupPane::keptEditsNote(qint64 runId) {
    return tr("The Topology and budgets form keeps your unsaved edits, not run %1's setup (Edit > Load the shown "
              "run's setup replaces them; Ctrl+Z in the form undoes that).")
        .arg(runId);
}

void SetupPane::fitToTrace(const storage::TraceEntry& trace) {
    // The topology is the engineer's cluster and stays as set while it can plan the trace. One whose
    // experts per layer differ from the trace's model cannot: then a preset of the model is offered
    // (the same EP ranks and DP slots when one exists) and the status line says what was replaced.
    editor_->setTraceModel(trace.model);
    const auto topo = editor_->topology();
    if (!topo) return;
    const std::optional<std::string> pick = preset_for_model(trace.model, *topo);
    if (!pick) return;
    const QString before = editor_->topologyName(), name = QString::fromStdString(trace.name);
    const bool chosen = editor_->formSteps() > 0; // else the start-up preset, which nobody chose
    if (pick->empty() || !editor_->selectPreset(QString::fromStdString(*pick))) {
        Q_EMIT status(tr("Topology %1 has %2 experts per layer, trace %3 (%4) has %5: set \"Experts per layer E\" "
                         "(or \"from the trace\") before planning it.")
                          .arg(before)
                          .arg(topo->experts_per_layer)
                          .arg(name, QString::fromStdString(trace.model.name))
                          .arg(trace.model.experts),
                      true);
        return;
    }
    if (!chosen) return;
    Q_EMIT status(tr("Preset switched to %1 for trace %2: topology %3 has %4 experts per layer, the trace's model %5 "
                     "has %6 (pick %3 again in Preset to go back).")
                      .arg(QString::fromStdString(*pick), name, before)
                      .arg(topo->experts_per_layer)
                      .arg(QString::fromStdString(trace.model.name))
                      .arg(trace.model.experts),
                  false);
}

} // namespace routepack::views
