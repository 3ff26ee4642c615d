// The rewrite dialog's path from a checkpoint to a plan that fits it: which model the chosen
// checkpoint is (gpu::describe_checkpoint, read on a worker), the saved runs planned for such a
// model, and a checkpoint shaped like the plan's model (gpu::write_synth_checkpoint, as
// `routepack synth-checkpoint` writes it) when the two differ.
#include "views/dialogs/rewrite_dialog.h"

#include "core/model/model.h"
#include "gpu/safetensors/synth_checkpoint.h"
#include "views/jobs/job_tracker.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTimer>

#include <algorithm>

namespace routepack::views {

namespace {

/// "deepseek-v2-lite: 64 experts (top-6) in MoE layers 1-26 of 27 decoder layers".
QString modelText(const ModelDescription& m) {
    gpu::CheckpointModel c;
    c.name = m.name;
    c.num_hidden_layers = m.num_hidden_layers;
    c.moe_layers = m.moe_layers;
    c.experts = m.experts;
    c.top_k = m.top_k;
    return QString::fromStdString(gpu::checkpoint_model_text(c));
}

bool shippedModel(const std::string& name) {
    const auto names = known_model_names();
    return !name.empty() && std::find(names.begin(), names.end(), name) != names.end();
}

} // namespace

void RewriteDialog::setKnownPlans(std::vector<KnownPlan> plans) {
    knownPlans_ = std::move(plans);
    updateCheckpointNote();
}

void RewriteDialog::describeInput() {
    const QString in = input();
    if (in == describedInput_ && (checkpointModel_ || !describeError_.isEmpty())) return;
    checkpointModel_.reset();
    describeError_.clear();
    describedInput_ = in;
    updateCheckpointNote();
    if (in.isEmpty()) {
        Q_EMIT checkpointDescribed();
        return;
    }
    describe_->start<gpu::CheckpointModel>(
        [path = in.toStdString()](JobContext&) { return gpu::describe_checkpoint(path); },
        [this, in](quint64, const std::shared_ptr<const gpu::CheckpointModel>& m) {
            if (in != input()) return;
            checkpointModel_ = *m;
            updateCheckpointNote();
            Q_EMIT checkpointDescribed();
        },
        [this, in](quint64, const JobFailure& failure) {
            if (in != input()) return;
            describeError_ = failure.text;
            updateCheckpointNote();
            Q_EMIT checkpointDescribed();
        });
}

bool RewriteDialog::checkpointMismatch() const {
    if (!checkpointModel_ || !plan_) return false;
    return checkpointModel_->experts != plan_->model.experts ||
           checkpointModel_->moe_layers.size() != plan_->model.moe_layers.size();
}

QString RewriteDialog::checkpointNote() const {
    if (!checkpointModel_) return {};
    const gpu::CheckpointModel& ck = *checkpointModel_;
    QString note = tr("The checkpoint is %1.").arg(QString::fromStdString(gpu::checkpoint_model_text(ck)));
    if (!plan_) return note;
    const ModelDescription& pm = plan_->model;
    if (!checkpointMismatch()) {
        if (ck.moe_layers != pm.moe_layers)
            note += tr(" The plan's MoE layers are others (%1): give a layer map.").arg(modelText(pm));
        else
            note += tr(" It matches the plan's model.");
        return note;
    }
    note += tr(" The plan is for another model (%1): this checkpoint cannot be rewritten with it.").arg(modelText(pm));
    QStringList fits;
    for (const KnownPlan& k : knownPlans_)
        if (k.model.experts == ck.experts && k.model.moe_layers.size() == ck.moe_layers.size())
            fits << tr("run %1 (%2/%3)").arg(k.run).arg(k.trace, k.window);
    if (!fits.isEmpty())
        note += tr(" Saved runs planned for a model like the checkpoint's: %1; select one in the library and "
                   "open this dialog again.")
                    .arg(fits.join(QStringLiteral(", ")));
    else
        note += tr(" No saved plan of this library is for a model like the checkpoint's (%1 experts, %2 MoE "
                   "layers): import a trace of that model and plan it.")
                    .arg(ck.experts)
                    .arg(ck.moe_layers.size());
    if (shippedModel(pm.name))
        note += tr(" To try the rewrite with this plan, write a checkpoint shaped like the plan's model: "
                   "routepack synth-checkpoint --model %1 --out DIR, or the button below; then choose DIR as the "
                   "input.")
                    .arg(QString::fromStdString(pm.name));
    else
        note += tr(" To try the rewrite with this plan, write a checkpoint shaped like the plan's model with the "
                   "button below (routepack synth-checkpoint --model takes only shipped models), then choose it as "
                   "the input.");
    return note;
}

void RewriteDialog::updateCheckpointNote() {
    if (!checkpointNote_) return;
    QString text = checkpointNote();
    if (text.isEmpty() && !describeError_.isEmpty() && !input().isEmpty())
        text = tr("Cannot tell which model the checkpoint is: %1").arg(describeError_);
    checkpointNote_->setText(text);
    checkpointNote_->setVisible(!text.isEmpty());
    synthButton_->setVisible(checkpointMismatch());
}

void RewriteDialog::chooseSynthFolder() {
    if (!plan_) return;
    const QString parent = QFileDialog::getExistingDirectory(this, tr("Folder to write the checkpoint in"),
                                                             QFileInfo(input()).absolutePath());
    if (parent.isEmpty()) return;
    const QString base = QDir(parent).filePath(
        (plan_->model.name.empty() ? QStringLiteral("plan-model") : QString::fromStdString(plan_->model.name)) +
        QStringLiteral("-synthetic"));
    QString out = base;
    for (int k = 2; QFileInfo::exists(out); ++k)
        out = base + QStringLiteral("-%1").arg(k);
    writePlanModelCheckpoint(out);
}

bool RewriteDialog::writePlanModelCheckpoint(const QString& folder) {
    if (!plan_) {
        showError(tr("Cannot write a checkpoint: "), tr("no plan"));
        return false;
    }
    if (job_->isRunning() || synthWrite_->runningCount() > 0) {
        showError(tr("Cannot write a checkpoint: "), tr("a rewrite or another write is running"));
        return false;
    }
    gpu::SynthCheckpointConfig cfg;
    cfg.model = plan_->model;
    showInfo(tr("Writing a checkpoint shaped like %1 into %2…").arg(modelText(cfg.model), folder));
    synthWrite_->start<bool>(
        [cfg, out = folder.toStdString()](JobContext&) {
            gpu::write_synth_checkpoint(cfg, out);
            return true;
        },
        [this, folder](quint64, const std::shared_ptr<const bool>&) {
            setInput(folder);
            showInfo(tr("Wrote a synthetic checkpoint of the plan's model into %1: it is the input now.").arg(folder));
            Q_EMIT synthCheckpointWritten(folder);
        },
        [this](quint64, const JobFailure& failure) {
            showError(tr("Cannot write the checkpoint: "), failure.text);
            Q_EMIT synthCheckpointWritten(QString());
        });
    return true;
}

} // namespace routepack::views
