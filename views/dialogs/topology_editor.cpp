#include "views/dialogs/topology_editor.h"

#include "core/plan/budgets.h"
#include "core/util/errors.h"
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

namespace {

/// How far above an open lower end (t0 > 0) a budget's number field starts.
constexpr double kOpenLowFloor = 1e-300;

/// The index of the first entry where two form states differ (-1 when equal).
int firstDifference(const QVariantList& a, const QVariantList& b) {
    for (int i = 0; i < std::min(a.size(), b.size()); ++i)
        if (a[i] != b[i]) return i;
    return a.size() == b.size() ? -1 : std::min(a.size(), b.size());
}

} // namespace

/// One undo step of the form: the states before and after. The first redo (QUndoStack::push) finds
/// the form already changed and does nothing.
class FormStep : public QUndoCommand {
public:
    FormStep(TopologyEditor* editor, QVariantList before, QVariantList after, bool mergeable, const QString& text)
        : QUndoCommand(text), editor_(editor), before_(std::move(before)), after_(std::move(after)),
          field_(mergeable ? firstDifference(before_, after_) : -1) {}
    void undo() override { editor_->restoreFormState(before_); }
    void redo() override {
        if (pushed_) editor_->restoreFormState(after_);
        pushed_ = true;
    }
    int id() const override { return field_ >= 0 ? 1 : -1; }
    bool mergeWith(const QUndoCommand* other) override {
        const auto* o = static_cast<const FormStep*>(other);
        if (o->field_ != field_) return false;
        after_ = o->after_;
        return true;
    }

private:
    TopologyEditor* editor_;
    QVariantList before_, after_;
    int field_;
    bool pushed_ = false;
};

TopologyEditor::TopologyEditor(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* presetRow = new QHBoxLayout();
    preset_ = new MiddleElidingComboBox(this);
    preset_->setObjectName(QStringLiteral("presetBox"));
    preset_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    preset_->setMinimumContentsLength(12);
    preset_->view()->setTextElideMode(Qt::ElideMiddle);
    auto* save = new QPushButton(tr("Save"), this);
    save->setToolTip(tr("Store this topology and these budgets in the open library, under the name below"));
    // The box has the dock's whole width under its label and button: a preset's name (up to
    // "library: deepseek-v2-lite-ep16-dp8-2nodes") stays whole in a dock of a 1366 px screen.
    presetRow->addWidget(new QLabel(tr("Preset"), this));
    presetRow->addStretch(1);
    presetRow->addWidget(save);
    layout->addLayout(presetRow);
    layout->addWidget(preset_);
    {
        // As wide as the longest shipped preset's label, whether shipped or saved in a library.
        int longest = 0;
        for (const auto& n : known_topology_names())
            for (const QString& label :
                 {tr("shipped: %1").arg(QString::fromStdString(n)), tr("library: %1").arg(QString::fromStdString(n))})
                longest = std::max(longest, preset_->fontMetrics().horizontalAdvance(label));
        QStyleOptionComboBox opt;
        opt.initFrom(preset_);
        preset_->setMinimumWidth(preset_->style()
                                     ->sizeFromContents(QStyle::CT_ComboBox, &opt,
                                                        QSize(longest + 8, preset_->fontMetrics().height()), preset_)
                                     .width());
    }

    auto* topoBox = new QGroupBox(tr("Topology"), this);
    auto* tf = new QFormLayout(topoBox);
    tf->setRowWrapPolicy(QFormLayout::WrapLongRows);
    name_ = new QLineEdit(topoBox);
    // Wide enough for every shipped preset's whole name ("llama4-maverick-ep16-dp8-2nodes"); where the
    // dock is narrower the form puts the field under its label instead of cutting the name.
    int longestName = 0;
    for (const auto& n : known_topology_names())
        longestName = std::max(longestName, name_->fontMetrics().horizontalAdvance(QString::fromStdString(n)));
    name_->setMinimumWidth(longestName + 16);
    ranks_ = intSpin(topoBox, 1, 65536, 8);
    experts_ = intSpin(topoBox, 0, 1 << 20, 0);
    experts_->setSpecialValueText(tr("from the trace"));
    slots_ = intSpin(topoBox, 1, 65536, 4);
    shards_ = new QLineEdit(QStringLiteral("0,1 | 2,3"), topoBox);
    shards_->setToolTip(tr("Partition of the DP slots 0..D-1 into EDP shards, e.g. 0,1 | 2,3 or 0-3 | 4-7"));
    cap_ = intSpin(topoBox, 0, std::numeric_limits<int>::max(), 8192);
    cap_->setSpecialValueText(tr("none (samples per cell)"));
    minRows_ = intSpin(topoBox, 0, 1 << 20, 0);
    minRows_->setSpecialValueText(tr("none"));
    rowMultiple_ = intSpin(topoBox, 1, kMaxRowMultiple, 1);
    rowMultiple_->setSpecialValueText(tr("any"));
    rowMultiple_->setToolTip(tr("The row count R must be a multiple of this (virtual-pipeline stacks need the "
                                "micro-batch count per rank to be a multiple of the stage group size)"));
    gpusPerNode_ = intSpin(topoBox, 0, 65536, 0);
    gpusPerNode_->setSpecialValueText(tr("not given"));
    gpusPerNode_->setToolTip(tr("GPUs per node g: EP rank p runs on node p / g (N = P / g nodes); the communication "
                                "figures split traffic into intra- and inter-node with it"));
    tf->addRow(tr("Name"), name_);
    tf->addRow(tr("EP ranks P"), ranks_);
    tf->addRow(tr("Experts per layer E"), experts_);
    tf->addRow(tr("DP slots D"), slots_);
    tf->addRow(tr("EDP shards"), shards_);
    tf->addRow(tr("Token cap C"), cap_);
    tf->addRow(tr("Minimum rows"), minRows_);
    tf->addRow(tr("Row multiple"), rowMultiple_);
    addBatchRows(tf, topoBox);
    addNodeRows(tf, topoBox);
    addStageRows(tf, topoBox);
    layout->addWidget(topoBox);
    layout->addWidget(buildMigrationBox());
    layout->addWidget(buildBudgetBox());

    validity_ = new QLabel(this);
    validity_->setWordWrap(true);
    layout->addWidget(validity_);
    layout->addStretch(1);

    setLibraryTopologies({});
    connect(preset_, &QComboBox::activated, this, &TopologyEditor::userPickedPreset);
    connect(save, &QPushButton::clicked, this, &TopologyEditor::saveRequested);
    connectFields();

    // Start on the demo preset.
    if (!selectPreset(QStringLiteral("synthetic-demo-ep8-dp4")) && preset_->count() > 0) applyPreset(0);
    setupUndoShortcuts();
}

void TopologyEditor::setupUndoShortcuts() {
    undo_ = new QUndoStack(this);
    undo_->setObjectName(QStringLiteral("undoStack"));
    recorded_ = formState();
    markClean();
    QAction* undo = undo_->createUndoAction(this, tr("Undo form edit"));
    undo->setShortcuts(QKeySequence::Undo);
    QAction* redo = undo_->createRedoAction(this, tr("Redo form edit"));
    redo->setShortcuts(QKeySequence::Redo);
    for (QAction* a : {undo, redo}) {
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        addAction(a);
    }
    // A text or spin field would take Ctrl+Z for its own text undo: the form's steps go first.
    for (QWidget* w : findChildren<QWidget*>())
        w->installEventFilter(this);
}

bool TopologyEditor::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::ShortcutOverride) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if (key->matches(QKeySequence::Undo) || key->matches(QKeySequence::Redo)) {
            event->ignore();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

QVariantList TopologyEditor::formState() const {
    QVariantList s;
    for (const QLineEdit* e : {name_, shards_, seed_, epRankNodes_, dpSlotNodes_})
        s << e->text();
    for (const QSpinBox* b : {ranks_, experts_, slots_, cap_, minRows_, rowMultiple_, gpusPerNode_, samplesPerDpSlot_,
                              samplesPerCell_, maxSamplesPerCell_, invocation_})
        s << b->value();
    s << oversize_->currentIndex() << migrationBox_->isChecked() << planning_->currentIndex();
    for (const QDoubleSpinBox* d : numberFields())
        s << d->value();
    for (const BudgetField& f : budgetFields_)
        s << (f.spin     ? QVariant(f.spin->value())
              : f.number ? QVariant(f.number->value())
                         : QVariant(f.check->isChecked()));
    QVariantList stages;
    for (int r = 0; r < stages_->rowCount(); ++r) {
        QVariantList row;
        for (int c = 0; c < 3; ++c)
            row << (stages_->item(r, c) ? stages_->item(r, c)->data(Qt::EditRole) : QVariant());
        stages << QVariant(row);
    }
    s << QVariant(stages) << QString::fromStdString(planner_budgets_to_json(hidden_));
    return s;
}

void TopologyEditor::restoreFormState(const QVariantList& state) {
    filling_ = true;
    int i = 0;
    for (QLineEdit* e : {name_, shards_, seed_, epRankNodes_, dpSlotNodes_})
        e->setText(state[i++].toString());
    for (QSpinBox* b : {ranks_, experts_, slots_, cap_, minRows_, rowMultiple_, gpusPerNode_, samplesPerDpSlot_,
                        samplesPerCell_, maxSamplesPerCell_, invocation_})
        b->setValue(state[i++].toInt());
    oversize_->setCurrentIndex(state[i++].toInt());
    migrationBox_->setChecked(state[i++].toBool());
    planning_->setCurrentIndex(state[i++].toInt());
    for (QDoubleSpinBox* d : numberFields())
        d->setValue(state[i++].toDouble());
    for (const BudgetField& f : budgetFields_) {
        const QVariant v = state[i++];
        if (f.spin) f.spin->setValue(v.toInt());
        if (f.number) f.number->setValue(v.toDouble());
        if (f.check) f.check->setChecked(v.toBool());
    }
    stages_->setRowCount(0);
    for (const QVariant& row : state[i++].toList()) {
        const QVariantList cells = row.toList();
        addStage(cells[0].toString(), cells[1].toDouble(), cells[2].toDouble());
    }
    try {
        hidden_ = parse_planner_budgets(state[i].toString().toStdString(), "form");
    } catch (const std::exception&) {
        // Budgets outside the rules (as setBudgets may be given) do not read back: the fields above
        // hold every budget the form shows, and the hidden ones stay as they are.
    }
    filling_ = false;
    recorded_ = state;
    updateValidity();
    syncPreset();
    Q_EMIT changed();
}

void TopologyEditor::recordStep(const QString& text, bool mergeable) {
    if (!undo_ || fillDepth_ > 0) return;
    QVariantList now = formState();
    if (now == recorded_) return;
    QVariantList before = std::exchange(recorded_, now);
    undo_->push(new FormStep(this, std::move(before), std::move(now), mergeable, text));
}

int TopologyEditor::formSteps() const {
    return undo_ ? undo_->count() : 0;
}

bool TopologyEditor::hasUnsavedEdits() const {
    return formState() != clean_;
}

void TopologyEditor::markClean() {
    clean_ = formState();
    if (undo_) undo_->setClean();
}

void TopologyEditor::loadSetup(const QString& name, const Topology& t, const PlannerBudgets& b, const QString& label) {
    ++fillDepth_;
    setTopology(name, t);
    setBudgets(b);
    --fillDepth_;
    recordStep(tr("Load %1").arg(label), false);
    markClean();
}

bool TopologyEditor::showsSetup(const QString& name, const Topology& t, const PlannerBudgets& b) const {
    const std::optional<Topology> form = topology();
    return topologyName() == name && form && *form == t &&
           planner_budgets_to_json(budgets()) == planner_budgets_to_json(b);
}

void TopologyEditor::addNodeRows(QFormLayout* tf, QWidget* topoBox) {
    epRankNodes_ = new QLineEdit(topoBox);
    epRankNodes_->setObjectName(QStringLiteral("epRankNodes"));
    epRankNodes_->setPlaceholderText(tr("not given, e.g. 0, 0, 1, 1"));
    epRankNodes_->setToolTip(tr("ep_rank_nodes: the node of every EP rank (P ids), with DP slot nodes; instead of "
                                "GPUs per node"));
    dpSlotNodes_ = new QLineEdit(topoBox);
    dpSlotNodes_->setObjectName(QStringLiteral("dpSlotNodes"));
    dpSlotNodes_->setPlaceholderText(tr("not given, e.g. 0, 1"));
    dpSlotNodes_->setToolTip(tr("dp_slot_nodes: the node of every DP slot (D ids), with EP rank nodes"));
    commWeight_ = compactSpin(topoBox, 0, 1e6, 0, 6, 0.1);
    commWeight_->setObjectName(QStringLiteral("commWeight"));
    commWeight_->setToolTip(tr("comm_weight w: routepack+comm adds w x (inter-node token copies of a row-shard) / C "
                               "to its row cost; 0 = the paper's score"));
    commTolerance_ = compactSpin(topoBox, 0, 1, 0.02, 6, 0.01);
    commTolerance_->setObjectName(QStringLiteral("commLoadTolerance"));
    commTolerance_->setToolTip(tr("comm_load_tolerance: routepack+comm's placement may raise a layer's busiest EP "
                                  "rank load up to (1 + tolerance) x LPT's while it moves co-activated experts "
                                  "onto one node"));
    tf->addRow(tr("GPUs per node g"), gpusPerNode_);
    tf->addRow(tr("EP rank nodes"), epRankNodes_);
    tf->addRow(tr("DP slot nodes"), dpSlotNodes_);
    tf->addRow(tr("Comm weight w"), commWeight_);
    tf->addRow(tr("Comm load tolerance"), commTolerance_);
}

void TopologyEditor::addStageRows(QFormLayout* tf, QWidget* topoBox) {
    invocation_ = intSpin(topoBox, 0, static_cast<int>(kMaxInvocationTokens), 0);
    invocation_->setObjectName(QStringLiteral("expertInvocationTokens"));
    invocation_->setSpecialValueText(tr("none (linear)"));
    invocation_->setToolTip(tr("expert_invocation_tokens: every (row-shard, MoE layer, expert) with tokens adds "
                               "this many tokens to its EP rank's load; routepack calibrate fits it "
                               "(docs/measure.md)"));
    tf->addRow(tr("Expert invocation (tokens)"), invocation_);
    stages_ = new QTableWidget(0, 3, topoBox);
    stages_->setHorizontalHeaderLabels({tr("Attention stage"), tr("alpha"), tr("beta")});
    stages_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    stages_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    stages_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    stages_->verticalHeader()->hide();
    stages_->setMinimumHeight(90);
    stages_->setMaximumHeight(130);
    auto* addStageButton = new QPushButton(tr("Add stage"), topoBox);
    auto* removeStageButton = new QPushButton(tr("Remove"), topoBox);
    auto* stageButtons = new QHBoxLayout();
    stageButtons->addWidget(addStageButton);
    stageButtons->addWidget(removeStageButton);
    stageButtons->addStretch(1);
    tf->addRow(stages_);
    tf->addRow(stageButtons);
    connect(addStageButton, &QPushButton::clicked, this, [this] {
        filling_ = true;
        addStage(tr("stage %1").arg(stages_->rowCount() + 1), 1.0, 0.0);
        filling_ = false;
        updateValidity();
        syncPreset();
        recordStep(tr("Add an attention stage"), false);
    });
    connect(removeStageButton, &QPushButton::clicked, this, [this] {
        const int r = stages_->currentRow();
        if (r >= 0) stages_->removeRow(r);
        updateValidity();
        syncPreset();
        recordStep(tr("Remove an attention stage"), false);
    });
}

QGroupBox* TopologyEditor::buildBudgetBox() {
    auto* budgetBox = new QGroupBox(tr("Planner budgets"), this);
    budgetBox_ = budgetBox;
    budgetBox->setObjectName(QStringLiteral("budgetBox"));
    auto* bf = new QFormLayout(budgetBox);
    bf->setRowWrapPolicy(QFormLayout::WrapLongRows);
    budgetDefaults_ = new QPushButton(tr("Defaults"), budgetBox);
    budgetDefaults_->setObjectName(QStringLiteral("budgetDefaults"));
    budgetDefaults_->setToolTip(tr("Every budget and the seed back to its default (the workers kept); a bold label "
                                   "marks a budget that differs from its default"));
    connect(budgetDefaults_, &QPushButton::clicked, this, &TopologyEditor::resetBudgets);
    bf->addRow(budgetDefaults_);
    const PlannerBudgets d;
    // One field per budget, in table order; the run settings (workers) last, then the seed.
    std::vector<const BudgetRow*> rows;
    for (const BudgetRow& row : budget_table())
        if (!row.run_setting) rows.push_back(&row);
    for (const BudgetRow& row : budget_table())
        if (row.run_setting) rows.push_back(&row);
    for (const BudgetRow* row : rows) {
        BudgetField f;
        f.row = row;
        QWidget* w = nullptr;
        const std::string key = row->key;
        if (row->kind == BudgetKind::Bool) {
            f.check = new QCheckBox(budgetBox);
            f.check->setChecked(budget_int(*row, d) != 0);
            w = f.check;
        } else if (row->kind == BudgetKind::Double) {
            // An open lower end (t0 > 0): from kOpenLowFloor above it, the smallest value the field holds
            // exactly (it keeps max_exponent10 + digits10 decimals, 17 significant digits from 1e-306).
            const double lo = row->lo_open ? row->lo + kOpenLowFloor : row->lo;
            const double hi = row->hi_open ? std::nextafter(row->hi, row->lo) : row->hi;
            f.number = new ExactDoubleSpinBox(budgetBox);
            f.number->setDecimals(std::numeric_limits<double>::max_exponent10 + std::numeric_limits<double>::digits10);
            f.number->setRange(lo, hi);
            f.number->setSingleStep(key == "time_limit_s" ? 1.0 : (key == "t0" ? 0.001 : 0.05));
            f.number->setValue(budget_double(*row, d));
            if (key == "time_limit_s") f.number->setSpecialValueText(tr("none"));
            if (key == "history_decay") f.number->setSpecialValueText(tr("none (the step's own loads)"));
            w = f.number;
        } else {
            // Every integer bound of the table fits an int (QSpinBox's range).
            Q_ASSERT(row->hi <= std::numeric_limits<int>::max());
            f.spin = intSpin(budgetBox, static_cast<int>(row->lo), static_cast<int>(row->hi),
                             static_cast<int>(budget_int(*row, d)));
            if (key == "workers") {
                f.spin->setValue(std::max(1, QThread::idealThreadCount()));
                f.spin->setSpecialValueText(tr("all cores"));
                f.spin->setToolTip(tr("Same inputs + seed + worker count give the same plan"));
            }
            // A special value in words, as the budget table's help says it (shown at the minimum).
            if (key == "max_moves") f.spin->setSpecialValueText(tr("unlimited"));
            if (key == "polish_evaluations") f.spin->setSpecialValueText(tr("none"));
            if (key == "polish_kick_moves") f.spin->setSpecialValueText(tr("no kicks"));
            if (key == "placement_rounds") f.spin->setSpecialValueText(tr("keep LPT"));
            w = f.spin;
        }
        w->setObjectName(QStringLiteral("budget:") + QLatin1String(row->key));
        if (w->toolTip().isEmpty()) w->setToolTip(QString::fromUtf8(row->help));
        bf->addRow(QString::fromUtf8(row->label), w);
        budgetFields_.push_back(f);
    }
    seed_ = new QLineEdit(QString::number(d.seed), budgetBox);
    bf->addRow(tr("Seed"), seed_);
    return budgetBox;
}

void TopologyEditor::connectFields() {
    auto notify = [this] {
        if (filling_) return;
        updateValidity();
        syncPreset();
        recordStep(tr("Edit the form"), true);
        Q_EMIT changed();
    };
    for (QSpinBox* s : {ranks_, experts_, slots_, cap_, minRows_, rowMultiple_, gpusPerNode_, samplesPerDpSlot_,
                        samplesPerCell_, maxSamplesPerCell_, invocation_})
        connect(s, &QSpinBox::valueChanged, this, notify);
    for (QComboBox* c : {oversize_, planning_})
        connect(c, &QComboBox::currentIndexChanged, this, notify);
    connect(migrationBox_, &QGroupBox::toggled, this, notify);
    for (QDoubleSpinBox* s : numberFields())
        connect(s, &QDoubleSpinBox::valueChanged, this, notify);
    for (const BudgetField& f : budgetFields_) {
        if (f.spin) connect(f.spin, &QSpinBox::valueChanged, this, notify);
        if (f.number) connect(f.number, &QDoubleSpinBox::valueChanged, this, notify);
        if (f.check) connect(f.check, &QCheckBox::toggled, this, notify);
    }
    for (QLineEdit* e : {name_, shards_, seed_, epRankNodes_, dpSlotNodes_})
        connect(e, &QLineEdit::textChanged, this, notify);
    connect(stages_, &QTableWidget::cellChanged, this, notify);
}

TopologyEditor::~TopologyEditor() = default;

void TopologyEditor::addStage(const QString& name, double alpha, double beta) {
    const int r = stages_->rowCount();
    stages_->insertRow(r);
    stages_->setItem(r, 0, new QTableWidgetItem(name));
    auto* a = new QTableWidgetItem();
    a->setData(Qt::EditRole, alpha);
    auto* b = new QTableWidgetItem();
    b->setData(Qt::EditRole, beta);
    stages_->setItem(r, 1, a);
    stages_->setItem(r, 2, b);
}

void TopologyEditor::addBatchRows(QFormLayout* form, QWidget* parent) {
    auto count = [&](const char* name, const QString& tip) {
        QSpinBox* s = intSpin(parent, 0, kMaxBatchCount, 0);
        s->setObjectName(QString::fromLatin1(name));
        s->setSpecialValueText(tr("free"));
        s->setToolTip(tip);
        return s;
    };
    samplesPerDpSlot_ = count("samplesPerDpSlot", tr("samples_per_dp_slot: every DP slot holds exactly this many "
                                                     "samples over its rows (verl: batch / DP ranks)"));
    samplesPerCell_ = count("samplesPerCell", tr("samples_per_cell: every cell holds exactly this many samples "
                                                 "(static micro-batches); the token cap may then be none"));
    maxSamplesPerCell_ =
        count("maxSamplesPerCell", tr("max_samples_per_cell: every cell holds at most this many samples (Megatron's "
                                      "max_num_seqs)"));
    oversize_ = new QComboBox(parent);
    oversize_->setObjectName(QStringLiteral("oversize"));
    oversize_->addItems({tr("refuse"), tr("alone")});
    oversize_->setToolTip(tr("A sample longer than the token cap: refuse the window, or give it a cell of its own"));
    form->addRow(tr("Samples per DP slot"), samplesPerDpSlot_);
    form->addRow(tr("Samples per cell"), samplesPerCell_);
    form->addRow(tr("At most samples per cell"), maxSamplesPerCell_);
    form->addRow(tr("Oversize samples"), oversize_);
}

void TopologyEditor::setTopology(const QString& name, const Topology& t) {
    filling_ = true;
    name_->setText(name);
    name_->setCursorPosition(0);
    ranks_->setValue(t.ep_ranks);
    experts_->setValue(t.experts_per_layer);
    slots_->setValue(t.dp_slots);
    shards_->setText(shardText(t.edp_shards));
    cap_->setValue(static_cast<int>(std::min<std::int64_t>(t.token_cap, std::numeric_limits<int>::max())));
    minRows_->setValue(t.min_rows);
    rowMultiple_->setValue(t.row_multiple);
    samplesPerDpSlot_->setValue(t.batch.samples_per_dp_slot);
    samplesPerCell_->setValue(t.batch.samples_per_cell);
    maxSamplesPerCell_->setValue(t.batch.max_samples_per_cell);
    oversize_->setCurrentIndex(t.batch.oversize == Oversize::Alone ? 1 : 0);
    gpusPerNode_->setValue(t.gpus_per_node);
    epRankNodes_->setText(nodeListText(t.ep_rank_nodes));
    dpSlotNodes_->setText(nodeListText(t.dp_slot_nodes));
    commWeight_->setValue(t.comm_weight);
    commTolerance_->setValue(t.comm_load_tolerance);
    invocation_->setValue(static_cast<int>(t.expert_invocation_tokens));
    fillMigration(t);
    stages_->setRowCount(0);
    for (const auto& s : t.attention_stages)
        addStage(QString::fromStdString(s.name), s.alpha, s.beta);
    filling_ = false;
    updateValidity();
    syncPreset();
    Q_EMIT changed();
    recordFill();
}

void TopologyEditor::recordFill() {
    if (fillDepth_ > 0 || !undo_) return;
    recordStep(tr("Load %1").arg(topologyName()), false);
    markClean();
}

void TopologyEditor::setBudgets(const PlannerBudgets& b) {
    filling_ = true;
    hidden_ = b;
    for (const BudgetField& f : budgetFields_) {
        if (f.spin) f.spin->setValue(static_cast<int>(budget_int(*f.row, b)));
        if (f.number) f.number->setValue(budget_double(*f.row, b));
        if (f.check) f.check->setChecked(budget_int(*f.row, b) != 0);
    }
    seed_->setText(QString::number(b.seed));
    filling_ = false;
    updateValidity();
    Q_EMIT changed();
    recordFill();
}

QString TopologyEditor::topologyName() const {
    return name_->text().trimmed();
}

std::optional<Topology> TopologyEditor::topology(QString* error) const {
    try {
        Topology t;
        t.ep_ranks = ranks_->value();
        t.experts_per_layer = experts_->value();
        t.dp_slots = slots_->value();
        t.edp_shards = parseShardText(shards_->text(), t.dp_slots);
        t.token_cap = cap_->value();
        t.min_rows = minRows_->value();
        t.row_multiple = rowMultiple_->value();
        t.batch.samples_per_dp_slot = samplesPerDpSlot_->value();
        t.batch.samples_per_cell = samplesPerCell_->value();
        t.batch.max_samples_per_cell = maxSamplesPerCell_->value();
        t.batch.oversize = oversize_->currentIndex() == 1 ? Oversize::Alone : Oversize::Refuse;
        t.gpus_per_node = gpusPerNode_->value();
        t.ep_rank_nodes = parseNodeListText(epRankNodes_->text(), "EP rank nodes");
        t.dp_slot_nodes = parseNodeListText(dpSlotNodes_->text(), "DP slot nodes");
        t.comm_weight = commWeight_->value();
        t.comm_load_tolerance = commTolerance_->value();
        t.expert_invocation_tokens = invocation_->value();
        readMigration(t);
        for (int r = 0; r < stages_->rowCount(); ++r) {
            AttentionStage s;
            const QTableWidgetItem* n = stages_->item(r, 0);
            const QTableWidgetItem* a = stages_->item(r, 1);
            const QTableWidgetItem* b = stages_->item(r, 2);
            s.name = n ? n->text().toStdString() : std::string();
            bool oka = true, okb = true;
            s.alpha = a ? a->data(Qt::EditRole).toDouble(&oka) : 0.0;
            s.beta = b ? b->data(Qt::EditRole).toDouble(&okb) : 0.0;
            if (!oka || !okb)
                throw InputError("attention stage " + std::to_string(r + 1) + ": alpha and beta must be numbers");
            t.attention_stages.push_back(s);
        }
        // The topology file rules decide what is valid (one place for them).
        return parse_topology(topology_to_json(t), "topology");
    } catch (const std::exception& e) {
        if (error) *error = guiErrorText(e);
        return std::nullopt;
    }
}

PlannerBudgets TopologyEditor::budgets() const {
    PlannerBudgets b = hidden_;
    for (const BudgetField& f : budgetFields_) {
        if (f.spin) set_budget_int(*f.row, b, f.spin->value());
        if (f.number) set_budget_double(*f.row, b, f.number->value());
        if (f.check) set_budget_int(*f.row, b, f.check->isChecked() ? 1 : 0);
    }
    bool ok = false;
    const qulonglong seed = seed_->text().trimmed().toULongLong(&ok);
    if (ok) b.seed = seed;
    return b;
}

std::optional<PlannerBudgets> TopologyEditor::budgets(QString* error) const {
    bool ok = false;
    seed_->text().trimmed().toULongLong(&ok);
    if (!ok) {
        if (error) *error = tr("seed must be an integer in 0..18446744073709551615");
        return std::nullopt;
    }
    PlannerBudgets b = budgets();
    try {
        check_planner_budgets(b, "budgets");
    } catch (const InputError& e) {
        if (error) *error = guiErrorText(e);
        return std::nullopt;
    }
    return b;
}

void TopologyEditor::updateValidity() {
    QString why;
    const auto t = topology(&why);
    bool ok = t.has_value();
    if (ok && !budgets(&why)) ok = false;
    if (ok && name_->text().trimmed().isEmpty()) {
        ok = false;
        why = tr("give the topology a name");
    }
    validity_->setText(ok ? tr("Valid: %1 EP ranks, %2 DP slots in %3 EDP shards, cap %4.")
                                .arg(t->ep_ranks)
                                .arg(t->dp_slots)
                                .arg(t->shards())
                                .arg(capText(*t))
                          : why);
    migrationFigures_->setText(migrationFigures());
    updateBudgetMarks();
    validity_->setStyleSheet(
        ok ? QString() : QStringLiteral("color: white; background-color: #b3261e; padding: 3px; border-radius: 3px;"));
}

} // namespace routepack::views
