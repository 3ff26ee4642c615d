#pragma once
// Topology and planner-budget editor of the studio: P, D, EDP shards, cap C, min rows, row multiple,
// where things run (GPUs per node, or the explicit node lists ep_rank_nodes / dp_slot_nodes), the
// communication-aware method's comm_weight and comm_load_tolerance, attention stages (alpha, beta),
// the migration cost model (the topology's "migration" section, with the figures it derives), and
// every PlannerBudgets field. Presets: the shipped topologies (resources/topologies) and the
// topologies saved in the open library.
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/plan/budgets.h"
#include "core/plan/planner.h"
#include "storage/library.h"
#include "views/dialogs/topology_text.h"

#include <QString>
#include <QStringList>
#include <QVariantList>
#include <QWidget>

#include <optional>
#include <vector>

class QComboBox;
class QFormLayout;
class QGroupBox;
class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QUndoStack;

namespace routepack::views {

/// The editor widget. Edits are local until saveRequested (the studio saves to the library).
/// Every change of the form (an edit, a preset, a run's setup loaded) is a step of the form's undo stack:
/// Ctrl+Z / Ctrl+Shift+Z (QKeySequence::Undo / Redo) anywhere in the form undo and redo them, ahead
/// of a text field's own undo; consecutive edits of one field are one step.
class TopologyEditor : public QWidget {
    Q_OBJECT
public:
    explicit TopologyEditor(QWidget* parent = nullptr);
    ~TopologyEditor() override;

    /// Fills the fields (name, topology, budgets).
    void setTopology(const QString& name, const routepack::Topology& t);
    void setBudgets(const routepack::PlannerBudgets& b);
    /// The topologies saved in the open library, offered as presets beside the shipped ones.
    void setLibraryTopologies(const std::vector<storage::TopologyEntry>& entries);
    /// Selects a preset by name ("library: " entries first, then shipped names) and fills the form
    /// from it; false when absent.
    bool selectPreset(const QString& name);
    /// Name of the preset the form shows ("" when the form matches no preset: then the combo shows
    /// "edited: <name>"). The combo follows the form: after any edit, setTopology or a new preset
    /// list it shows the preset whose name and topology equal the form's (library entries first),
    /// or none. Budgets do not take part in the match.
    QString currentPreset() const;
    /// The preset box's text as painted at its current width: the full "library: X" / "shipped: X"
    /// label, elided in the middle when it does not fit (both ends of a name such as
    /// "shipped: llama4-maverick-ep16-dp8-2nodes" stay readable). Its tooltip is the full label.
    QString presetDisplayText() const;

    QString topologyName() const;
    /// The edited topology, validated by the topology file rules (parse_topology); nullopt with
    /// `error` set in words otherwise.
    std::optional<routepack::Topology> topology(QString* error = nullptr) const;
    /// The edited budgets (an invalid seed text keeps the seed last set by setBudgets).
    routepack::PlannerBudgets budgets() const;
    /// The edited budgets, or nullopt with `error` set in words when a field is invalid (the seed
    /// text: "seed must be an integer in 0..18446744073709551615") or the budgets break a rule of
    /// check_planner_budgets, in the fields' names (guiErrorText: "budgets: \"Workers\" must be ...",
    /// "budgets: \"Anytime\" must be used with a time limit > 0 ...").
    std::optional<routepack::PlannerBudgets> budgets(QString* error) const;

    /// True when the form differs from its clean state: edits the user made that no run and no
    /// saved topology holds (an edit undone back to the clean state is none).
    bool hasUnsavedEdits() const;
    /// Steps on the form's undo stack (a preset picked, a field edited, a run's setup loaded): 0
    /// while the form holds what the studio started it with.
    int formSteps() const;
    /// Marks the form as it is now as the clean state (no unsaved edits).
    void markClean();
    /// Fills the form with a run's setup (topology `name` = `t`, budgets `b`) as one undo step
    /// "Load <label>", marked clean; Ctrl+Z brings the previous form back.
    void loadSetup(const QString& name, const routepack::Topology& t, const routepack::PlannerBudgets& b,
                   const QString& label);
    /// The model of the trace the studio plans: the migration section's figures take its expert
    /// parameters when the section gives none (resolve_migration_cost's rule). Before any, the
    /// figures say that the trace's model gives them.
    void setTraceModel(const routepack::ModelDescription& model);
    /// The migration section's derived figures as the form shows them (object "migrationFigures"):
    /// one expert's state bytes and its move's seconds within and across nodes, and the seconds per
    /// unit of max_g U (given or derived), from resolve_migration_cost of the form's topology; or why
    /// they cannot be derived; "" without a migration section.
    QString migrationFigures() const;
    /// The budgets the form shows that differ from PlannerBudgets' defaults, as "<label> <value as
    /// shown>" in the form's order ("Steps K per level 1,000,000", "Max moves 200", "Seed 7"); the run
    /// settings (Workers) are not budgets of the plan and never listed.
    QStringList editedBudgets() const;
    /// Sets every budget field and the seed to PlannerBudgets' defaults (the run settings kept), as
    /// one undo step "Reset the budgets" (the budget box's "Defaults" button).
    void resetBudgets();
    /// True when the form holds exactly this topology name, topology and budgets.
    bool showsSetup(const QString& name, const routepack::Topology& t, const routepack::PlannerBudgets& b) const;

Q_SIGNALS:
    /// The Save button: store name + topology + budgets in the library.
    void saveRequested();
    /// Any field changed.
    void changed();
    /// The user picked a preset in the box: what it changed, in words, for the status line:
    /// "Preset shipped: X: EP ranks 8 → 16, DP slots 4 → 8 (the rest as before); budgets kept, 2 not
    /// the defaults: Max moves 200, Seed 7 (Defaults in Planner budgets resets them)".
    void presetSwitched(const QString& what);

private:
    // The parts of the constructor, in the order their widgets are created (the tab order).
    /// GPUs per node, the explicit node lists and the communication fields' rows.
    void addNodeRows(QFormLayout* tf, QWidget* topoBox);
    /// The attention stage table and its Add / Remove buttons.
    void addStageRows(QFormLayout* tf, QWidget* topoBox);
    /// The migration section: a checkable group (checked = the topology has the section), a field per
    /// MigrationModel number, the planning word and the derived figures (topology_migration.cpp).
    QGroupBox* buildMigrationBox();
    /// The migration fields from t (the section's values, or MigrationModel's defaults unchecked).
    void fillMigration(const routepack::Topology& t);
    /// t.has_migration and t.migration from the migration fields.
    void readMigration(routepack::Topology& t) const;
    /// The number fields of the form in formState's order: comm weight, comm load tolerance, then
    /// the migration section's.
    std::vector<QDoubleSpinBox*> numberFields() const;
    /// The budget fields (budget_table order, run settings last) and the seed.
    QGroupBox* buildBudgetBox();
    /// Every field's change validates, syncs the preset and emits changed.
    void connectFields();
    void applyPreset(int index);
    /// Fills the form from the preset with item data `key` ("library:<name>" / "shipped:<name>").
    void applyPresetFields(const QString& key);
    /// After a fill from outside (setTopology, setBudgets): one undo step, marked clean.
    void recordFill();
    /// Every topology and migration field as its label and the text it shows (the attention stages
    /// as one entry), in the form's order: what a preset switch compares.
    std::vector<std::pair<QString, QString>> topologyFieldTexts() const;
    /// The preset box's choice by the user: applyPreset, then presetSwitched with what changed.
    void userPickedPreset(int index);
    /// The budget box's title and its labels: a budget that differs from its default in bold, its
    /// tooltip naming the default; the title counts them; "Defaults" enabled when any does.
    void updateBudgetMarks();
    /// Points the preset box at the preset matching the form, or at none ("edited: <name>").
    void syncPreset();
    /// True when preset `index` has this name and topology.
    bool presetMatches(int index, const QString& name, const routepack::Topology& form) const;
    /// The box's tooltip: the full label of the preset shown, or why none is.
    void updatePresetToolTip();
    void addStage(const QString& name, double alpha, double beta);
    /// The batch-rule rows (samples per DP slot, per cell, at most per cell, oversize) into `form`.
    void addBatchRows(QFormLayout* form, QWidget* parent);
    void updateValidity();
    /// Every field's value in a fixed order (the stage table as one list per row, then the
    /// budgets kept from setBudgets as JSON): what an undo step restores.
    QVariantList formState() const;
    /// Sets every field from formState's list without recording a step, then validates, syncs the
    /// preset and emits changed.
    void restoreFormState(const QVariantList& state);
    /// Records the change from the last recorded state to the form as an undo step (`text`; a
    /// field's edits merge when `mergeable`). Nothing when the form did not change.
    void recordStep(const QString& text, bool mergeable);
    /// Ctrl+Z / Ctrl+Shift+Z on the form, ahead of the fields' own shortcuts.
    void setupUndoShortcuts();
    bool eventFilter(QObject* watched, QEvent* event) override;
    friend class FormStep;

    std::vector<storage::TopologyEntry> library_;
    QComboBox* preset_ = nullptr;
    QLineEdit* name_ = nullptr;
    QSpinBox* ranks_ = nullptr;
    QSpinBox* experts_ = nullptr;
    QSpinBox* slots_ = nullptr;
    QLineEdit* shards_ = nullptr;
    QSpinBox* cap_ = nullptr;
    QSpinBox* minRows_ = nullptr;
    QSpinBox* rowMultiple_ = nullptr;
    QSpinBox* gpusPerNode_ = nullptr;
    // The stacks' batch rules (routepack::BatchRules): 0 = free.
    QSpinBox* samplesPerDpSlot_ = nullptr;
    QSpinBox* samplesPerCell_ = nullptr;
    QSpinBox* maxSamplesPerCell_ = nullptr;
    QComboBox* oversize_ = nullptr;    ///< "refuse" (index 0) or "alone" (index 1)
    QLineEdit* epRankNodes_ = nullptr; ///< ep_rank_nodes, "0, 0, 1, 1" ("" = not given)
    QLineEdit* dpSlotNodes_ = nullptr; ///< dp_slot_nodes
    QDoubleSpinBox* commWeight_ = nullptr;
    QDoubleSpinBox* commTolerance_ = nullptr;
    QSpinBox* invocation_ = nullptr; ///< expert_invocation_tokens (0 = the linear expert term)
    QTableWidget* stages_ = nullptr;
    // The migration section (routepack::MigrationModel).
    QGroupBox* migrationBox_ = nullptr;
    QDoubleSpinBox* stateBytes_ = nullptr;
    QDoubleSpinBox* expertParams_ = nullptr; ///< 0 = from the model ("from the model")
    QDoubleSpinBox* intraGBps_ = nullptr;
    QDoubleSpinBox* interGBps_ = nullptr;
    QDoubleSpinBox* secondsPerU_ = nullptr; ///< 0 = derived ("derived")
    QDoubleSpinBox* achievedTflops_ = nullptr;
    QDoubleSpinBox* planSeconds_ = nullptr;
    QComboBox* planning_ = nullptr; ///< "overlapped" (index 0) or "serial" (index 1)
    QLabel* migrationFigures_ = nullptr;
    routepack::ModelDescription traceModel_;
    QLabel* validity_ = nullptr;
    // Budgets: one field per row of routepack::budget_table() (core/plan/budgets.h), with the
    // row's range, so a loaded budget shows as it is.
    struct BudgetField {
        const routepack::BudgetRow* row = nullptr;
        QSpinBox* spin = nullptr;         ///< Int / Int64 rows (every bound fits an int)
        QDoubleSpinBox* number = nullptr; ///< Double rows
        QCheckBox* check = nullptr;       ///< Bool rows
    };
    std::vector<BudgetField> budgetFields_;
    /// True when budget field `f` shows its PlannerBudgets default.
    bool atDefault(const BudgetField& f) const;
    /// Budget field `f`'s value (or its default) as the form words it: the special value's meaning
    /// at the minimum ("unlimited"), digits grouped ("1,000"), "on" / "off".
    QString budgetText(const BudgetField& f, bool defaultValue) const;
    /// True when the seed text reads as PlannerBudgets' default seed.
    bool seedAtDefault() const;
    QGroupBox* budgetBox_ = nullptr;
    QPushButton* budgetDefaults_ = nullptr;
    QLineEdit* seed_ = nullptr;
    routepack::PlannerBudgets hidden_; ///< the budgets last set (a field that cannot be read keeps its value)
    bool filling_ = false;
    /// The form's undo stack. Its clean state is the form as last filled by setTopology /
    /// setBudgets / a preset, or as marked by markClean (a run queued or a topology saved with it).
    QUndoStack* undo_ = nullptr;
    QVariantList recorded_; ///< the form as of the last undo step (or the start)
    QVariantList clean_;    ///< the form as of the last fill or markClean
    int fillDepth_ = 0;     ///< nested programmatic fills (a step is recorded when the outermost ends)
};

} // namespace routepack::views
