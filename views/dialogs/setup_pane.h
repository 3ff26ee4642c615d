#pragma once
// The studio's "Topology and budgets" dock: the TopologyEditor form in a scroll area that is never
// narrower than the form's fields, and what the window asks of the form: the setup to plan with (or
// why it is not valid), saving it as a library topology, loading a saved run's setup, and a preset
// of a trace's model when the form's topology cannot plan the trace.
#include "storage/library.h"

#include <QScrollArea>
#include <QString>

#include <optional>
#include <utility>

namespace routepack::views {

class TopologyEditor;

/// The setup dock's contents (object name "setupPane"; the form's "topologyEditor"). GUI thread only.
class SetupPane : public QScrollArea {
    Q_OBJECT
public:
    explicit SetupPane(QWidget* parent = nullptr);

    /// The form (its presets, name, undo stack).
    TopologyEditor* editor() const { return editor_; }
    /// The library whose topologies the form offers and into which Save writes (owned by the caller,
    /// which keeps it alive while set; nullptr: none).
    void setLibrary(storage::Library* lib);
    /// The form's name, "topology" when it has none (what a planned run records).
    QString topologyName() const;
    /// The topology and planner budgets of the form, or nullopt after saying in the status line which
    /// of them is not valid and why (the editor's own message).
    std::optional<std::pair<routepack::Topology, routepack::PlannerBudgets>> setup();
    /// Loads saved run `run`'s topology and budgets into the form as one undo step (true). When the
    /// form holds unsaved edits and differs from the run's setup, they are kept and false is
    /// returned, unless `force`.
    bool loadRun(const storage::RunEntry& run, bool force);
    /// The status line's note that the form kept its edits instead of run `runId`'s setup.
    static QString keptEditsNote(qint64 runId);
    /// Gives the form `trace`'s model (the migration figures' expert parameters). When the form's
    /// topology has other experts per layer than `trace`'s model (it cannot plan
    /// it), selects a shipped preset of that model (the one with the same EP ranks and DP slots when
    /// there is one) and says so in the status line, naming both presets; silently while the form
    /// still holds the studio's start-up preset (no form step yet: nobody chose what is replaced).
    void fitToTrace(const storage::TraceEntry& trace);

Q_SIGNALS:
    /// What the status line shows (`error`: in red).
    void status(const QString& text, bool error);
    /// The form was edited and is valid (an error about its old fields no longer holds).
    void validEdit();

private:
    /// The form's Save: its topology and budgets saved in the library under its name.
    void save();

    TopologyEditor* editor_;
    storage::Library* lib_ = nullptr;
};

} // namespace routepack::views
