// TopologyEditor's migration section (views/dialogs/topology_editor.h): the topology's "migration"
// object (routepack::MigrationModel, core/model/topology.h) as a checkable group of fields, and the
// figures resolve_migration_cost (core/plan/search/migration.h) derives from it, shown live.
#include "core/model/topology.h"
#include "core/plan/search/migration.h"
#include "views/dialogs/topology_editor.h"
#include "views/plan/plan_data.h"
#include "views/widgets/editor_fields.h"
#include "views/widgets/gui_text.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>

#include <cmath>
#include <limits>

namespace routepack::views {

namespace {

/// The largest number of the section (core/model/topology.cpp's parse_migration).
constexpr double kMigrationMax = 1e15;

/// Seconds as the figures write them: "2.42 ms", "0.303 ms", "1.5 s", "5.31e-07 s" (three
/// significant digits).
QString secondsText(double s) {
    if (s >= 1.0) return QStringLiteral("%1 s").arg(s, 0, 'g', 3);
    if (s >= 1e-6) return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'g', 3);
    return QStringLiteral("%1 s").arg(s, 0, 'g', 3);
}

/// Bytes in decimal units with three significant digits: "121 MB", "1.76 GB", "512 B".
QString stateBytesText(double b) {
    if (b >= 1e12) return QStringLiteral("%1 TB").arg(b / 1e12, 0, 'g', 3);
    if (b >= 1e9) return QStringLiteral("%1 GB").arg(b / 1e9, 0, 'g', 3);
    if (b >= 1e6) return QStringLiteral("%1 MB").arg(b / 1e6, 0, 'g', 3);
    if (b >= 1e3) return QStringLiteral("%1 kB").arg(b / 1e3, 0, 'g', 3);
    return QStringLiteral("%1 B").arg(b, 0, 'g', 3);
}

} // namespace

QGroupBox* TopologyEditor::buildMigrationBox() {
    migrationBox_ = new QGroupBox(tr("Migration cost model"), this);
    migrationBox_->setObjectName(QStringLiteral("migrationBox"));
    migrationBox_->setCheckable(true);
    migrationBox_->setChecked(false);
    migrationBox_->setToolTip(tr("The topology's migration section: what moving an expert between steps costs. With "
                                 "it, a plan from a previous placement minimizes the modelled step time (compute + "
                                 "materialization); without it, the move budget alone bounds the moves "
                                 "(docs/migration.md)"));
    auto* form = new QFormLayout(migrationBox_);
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    const MigrationModel d;
    auto number = [&](const char* key, double lo, double value, int decimals, double step, const QString& tip) {
        QDoubleSpinBox* s = compactSpin(migrationBox_, lo, kMigrationMax, value, decimals, step);
        s->setObjectName(QStringLiteral("migration:") + QLatin1String(key));
        s->setToolTip(tip);
        return s;
    };
    stateBytes_ =
        number("state_bytes_per_param", migration_min_value("state_bytes_per_param"), d.state_bytes_per_param, 6, 1,
               tr("state_bytes_per_param: bytes moved per expert parameter; 14 = bf16 weight, fp32 master "
                  "weight and two fp32 Adam moments; 2 when the optimizer state stays sharded apart"));
    expertParams_ = number("expert_parameters", 0, 0, 0, 1,
                           tr("expert_parameters: parameters of one routed expert; \"from the model\" takes the "
                              "model description's expert_shape"));
    expertParams_->setMaximum(static_cast<double>(std::int64_t{1} << 40));
    expertParams_->setSpecialValueText(tr("from the model"));
    intraGBps_ = number("intra_node_GBps", migration_min_value("intra_node_GBps"), d.intra_node_GBps, 6, 10,
                        tr("intra_node_GBps: per GPU, 1e9 B/s, between two EP ranks of one node (NVLink)"));
    interGBps_ = number("inter_node_GBps", migration_min_value("inter_node_GBps"), d.inter_node_GBps, 6, 10,
                        tr("inter_node_GBps: per GPU, 1e9 B/s, across nodes (the NIC)"));
    secondsPerU_ = new ExactDoubleSpinBox(migrationBox_);
    secondsPerU_->setObjectName(QStringLiteral("migration:seconds_per_U"));
    secondsPerU_->setDecimals(std::numeric_limits<double>::max_exponent10 + std::numeric_limits<double>::digits10);
    secondsPerU_->setRange(0, kMigrationMax);
    secondsPerU_->setSingleStep(1e-4);
    secondsPerU_->setValue(0);
    secondsPerU_->setSpecialValueText(tr("derived"));
    secondsPerU_->setToolTip(tr("seconds_per_U: seconds of step compute per unit of max_g U; \"derived\" = 6 x C x "
                                "expert parameters / (achieved TFLOP/s x 1e12)"));
    achievedTflops_ = number("achieved_TFLOPs", migration_min_value("achieved_TFLOPs"), d.achieved_TFLOPs, 6, 10,
                             tr("achieved_TFLOPs: per GPU, for the derived seconds per unit of U"));
    planSeconds_ = number("plan_seconds", 0, d.plan_seconds, 6, 0.1,
                          tr("plan_seconds: T_plan, the planning a step waits for (measure it: a plan's "
                             "timings.total); \"none\" = planning costs the step nothing"));
    planSeconds_->setSpecialValueText(tr("none"));
    planning_ = new QComboBox(migrationBox_);
    planning_->setObjectName(QStringLiteral("migration:planning"));
    planning_->addItems({tr("overlapped"), tr("serial")});
    planning_->setToolTip(tr("planning: overlapped = the step pays max(T_plan, the moves' seconds) (the paper's "
                             "eq. 19); serial = their sum"));
    migrationFigures_ = new QLabel(migrationBox_);
    migrationFigures_->setObjectName(QStringLiteral("migrationFigures"));
    migrationFigures_->setWordWrap(true);
    migrationFigures_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(tr("State bytes per parameter"), stateBytes_);
    form->addRow(tr("Expert parameters"), expertParams_);
    form->addRow(tr("Intra-node GB/s"), intraGBps_);
    form->addRow(tr("Inter-node GB/s"), interGBps_);
    form->addRow(tr("Seconds per unit of U"), secondsPerU_);
    form->addRow(tr("Achieved TFLOP/s"), achievedTflops_);
    form->addRow(tr("Planning seconds"), planSeconds_);
    form->addRow(tr("Planning"), planning_);
    form->addRow(migrationFigures_);
    return migrationBox_;
}

std::vector<QDoubleSpinBox*> TopologyEditor::numberFields() const {
    return {commWeight_, commTolerance_, stateBytes_,     expertParams_, intraGBps_,
            interGBps_,  secondsPerU_,   achievedTflops_, planSeconds_};
}

void TopologyEditor::fillMigration(const Topology& t) {
    const MigrationModel m = t.has_migration ? t.migration : MigrationModel{};
    migrationBox_->setChecked(t.has_migration);
    stateBytes_->setValue(m.state_bytes_per_param);
    expertParams_->setValue(static_cast<double>(m.expert_parameters));
    intraGBps_->setValue(m.intra_node_GBps);
    interGBps_->setValue(m.inter_node_GBps);
    secondsPerU_->setValue(m.seconds_per_U);
    achievedTflops_->setValue(m.achieved_TFLOPs);
    planSeconds_->setValue(m.plan_seconds);
    planning_->setCurrentIndex(m.overlap_planning ? 0 : 1);
}

void TopologyEditor::readMigration(Topology& t) const {
    t.has_migration = migrationBox_->isChecked();
    if (!t.has_migration) return;
    MigrationModel& m = t.migration;
    m.state_bytes_per_param = stateBytes_->value();
    m.expert_parameters = static_cast<std::int64_t>(std::llround(expertParams_->value()));
    m.intra_node_GBps = intraGBps_->value();
    m.inter_node_GBps = interGBps_->value();
    m.seconds_per_U = secondsPerU_->value();
    m.achieved_TFLOPs = achievedTflops_->value();
    m.plan_seconds = planSeconds_->value();
    m.overlap_planning = planning_->currentIndex() == 0;
}

void TopologyEditor::setTraceModel(const ModelDescription& model) {
    traceModel_ = model;
    migrationFigures_->setText(migrationFigures());
}

QString TopologyEditor::migrationFigures() const {
    if (!migrationBox_->isChecked()) return {};
    const std::optional<Topology> t = topology();
    if (!t) return tr("The figures follow once the topology is valid.");
    const bool fromModel = t->migration.expert_parameters == 0;
    if (fromModel && traceModel_.name.empty() && traceModel_.expert_params == 0)
        return tr("Expert parameters come from the model of the trace planned: open a trace to see the figures, "
                  "or give them here.");
    MigrationCost c;
    try {
        c = resolve_migration_cost(*t, traceModel_);
    } catch (const std::exception& e) {
        return guiErrorText(e);
    }
    const auto params = static_cast<std::int64_t>(std::llround(c.expert_bytes / t->migration.state_bytes_per_param));
    const QString paramsText = QString::fromStdString(grouped_count(params));
    QString perU =
        t->migration.seconds_per_U > 0
            ? tr("%1 (given)").arg(secondsText(c.seconds_per_U))
            : tr("%1 (derived: 6 x C %2 x %3 parameters / %4 TFLOP/s)")
                  .arg(secondsText(c.seconds_per_U), QString::fromStdString(grouped_count(t->token_cap)), paramsText)
                  .arg(t->migration.achieved_TFLOPs, 0, 'g', 6);
    return tr("One expert's state: %1 (%2 B x %3 parameters%4); moving it takes %5 within a node, %6 across nodes. "
              "Seconds per unit of max_g U: %7.")
        .arg(stateBytesText(c.expert_bytes))
        .arg(t->migration.state_bytes_per_param, 0, 'g', 6)
        .arg(paramsText,
             fromModel ? tr(" of %1").arg(traceModel_.name.empty() ? tr("the trace's model")
                                                                   : QString::fromStdString(traceModel_.name))
                       : QString(),
             secondsText(c.expert_bytes / (c.intra_node_GBps * 1e9)),
             secondsText(c.expert_bytes / (c.inter_node_GBps * 1e9)), perU);
}

} // namespace routepack::views
