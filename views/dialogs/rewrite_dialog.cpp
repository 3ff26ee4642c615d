#include "views/dialogs/rewrite_dialog.h"

#include "core/model/model.h"
#include "core/util/errors.h"
#include "gpu/cuda/device.h"
#include "gpu/rewrite/request.h"
#include "views/jobs/job_tracker.h"
#include "views/widgets/gui_text.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>

#include <cstdio>
#include <filesystem>

namespace routepack::views {

namespace {

/// Style of error text: white on red, readable in light and dark palettes.
const char* const kErrorStyle = "color: white; background-color: #b3261e; padding: 4px; border-radius: 3px;";

QString bytesText(quint64 b) {
    return QString::fromStdString(gpu::format_gb(b));
}

QString layersText(const std::vector<int>& layers) {
    return QString::fromStdString(format_layer_list(layers));
}

/// "5-6 → 1-2" style text of a layer map ("same ids" when every plan layer keeps its id).
QString layerMapText(const std::map<int, int>& m) {
    QStringList items;
    bool same = true;
    for (const auto& [p, c] : m) {
        items << QStringLiteral("%1→%2").arg(p).arg(c);
        if (p != c) same = false;
    }
    if (same) return QStringLiteral("same ids");
    return items.join(QStringLiteral(", "));
}

QString stageWords(const QString& stage) {
    if (stage == QLatin1String("write")) return RewriteDialog::tr("writing");
    if (stage == QLatin1String("verify")) return RewriteDialog::tr("verifying");
    return stage;
}

/// One row of the summary table (HTML-escaped).
QString row(const QString& name, const QString& value) {
    return QStringLiteral("<tr><td style=\"padding-right:12px\"><b>%1</b></td><td>%2</td></tr>")
        .arg(name.toHtmlEscaped(), value.toHtmlEscaped());
}

} // namespace

RewriteDialog::RewriteDialog(QWidget* parent)
    : QDialog(parent), job_(new RewriteJob(this)),
      describe_(new JobTracker(JobTracker::Policy::LatestResult, 1, false, this)),
      synthWrite_(new JobTracker(JobTracker::Policy::EveryResult, 1, false, this)), describeTimer_(new QTimer(this)) {
    setWindowTitle(tr("Rewrite checkpoint"));
    describeTimer_->setSingleShot(true);
    describeTimer_->setInterval(250);
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout();
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    layout->addLayout(form);
    buildPlanRow(form);
    const QList<QWidget*> browse = buildCheckpointRows(form);
    buildOptionRows(form);
    buildResultArea(layout);
    fieldWidgets_ = {planButton_, mapButton_,     input_,    browse[0], browse[1], output_,     browse[2],
                     direction_,  permuteRouter_, layerMap_, device_,   verify_,   synthButton_};
    connectFields();
    connectJob();
    queryDevices();
    summary_->setPlainText(tr("Check reads the checkpoint's headers and shows what the rewrite will move."));
    resize(760, 580);
}

void RewriteDialog::buildPlanRow(QFormLayout* form) {
    planInfo_ = new QLabel(tr("No plan: select a planned run in the studio, or choose a plan file."), this);
    planInfo_->setWordWrap(true);
    planInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    planButton_ = new QPushButton(tr("Plan file…"), this);
    planButton_->setToolTip(tr("Use a plan file written by `routepack plan --out` or exported from the studio"));
    mapButton_ = new QPushButton(tr("Map file…"), this);
    mapButton_->setToolTip(tr("Use an expert map instead of a plan: `routepack export-map` output, an SGLang or "
                              "vLLM physical_to_logical_map JSON, or {\"moe_layers\", \"placement\"}"));
    auto* planButtons = new QVBoxLayout();
    planButtons->addWidget(planButton_);
    planButtons->addWidget(mapButton_);
    auto* planRow = new QHBoxLayout();
    planRow->addWidget(planInfo_, 1);
    planRow->addLayout(planButtons);
    form->addRow(tr("Plan"), planRow);
}

QList<QWidget*> RewriteDialog::buildCheckpointRows(QFormLayout* form) {
    input_ = new QLineEdit(this);
    input_->setPlaceholderText(tr("checkpoint folder or one .safetensors file"));
    input_->setToolTip(tr("A Hugging Face checkpoint folder (safetensors shards, model.safetensors.index.json, "
                          "config.json), or one .safetensors file"));
    auto* inputFolder = new QPushButton(tr("Folder…"), this);
    auto* inputFile = new QPushButton(tr("File…"), this);
    auto* inputRow = new QHBoxLayout();
    inputRow->addWidget(input_, 1);
    inputRow->addWidget(inputFolder);
    inputRow->addWidget(inputFile);
    form->addRow(tr("Input checkpoint"), inputRow);
    // Which model the checkpoint is, and what to do when the plan is for another one.
    checkpointNote_ = new QLabel(this);
    checkpointNote_->setObjectName(QStringLiteral("checkpointNote"));
    checkpointNote_->setWordWrap(true);
    checkpointNote_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    checkpointNote_->hide();
    synthButton_ = new QPushButton(tr("Write a checkpoint of the plan's model…"), this);
    synthButton_->setToolTip(tr("Writes a small synthetic checkpoint shaped like the plan's model (as routepack "
                                "synth-checkpoint does) and makes it the input"));
    synthButton_->hide();
    auto* noteRow = new QVBoxLayout();
    noteRow->addWidget(checkpointNote_);
    noteRow->addWidget(synthButton_, 0, Qt::AlignLeft);
    form->addRow(QString(), noteRow);

    output_ = new QLineEdit(this);
    output_->setPlaceholderText(tr("folder to create (must not exist or be empty)"));
    output_->setToolTip(tr("Written into a hidden temporary folder beside it and renamed into place when "
                           "complete; never the input or a folder inside it"));
    auto* outputBrowse = new QPushButton(tr("Browse…"), this);
    auto* outputRow = new QHBoxLayout();
    outputRow->addWidget(output_, 1);
    outputRow->addWidget(outputBrowse);
    form->addRow(tr("Output folder"), outputRow);
    connect(inputFolder, &QPushButton::clicked, this, &RewriteDialog::browseInputFolder);
    connect(inputFile, &QPushButton::clicked, this, &RewriteDialog::browseInputFile);
    connect(outputBrowse, &QPushButton::clicked, this, &RewriteDialog::browseOutput);
    return {inputFolder, inputFile, outputBrowse};
}

void RewriteDialog::buildOptionRows(QFormLayout* form) {
    direction_ = new QComboBox(this);
    direction_->addItem(tr("Apply the placement (logical → physical order)"), false);
    direction_->addItem(tr("Inverse (physical → logical, canonical order)"), true);
    form->addRow(tr("Direction"), direction_);
    permuteRouter_ = new QCheckBox(tr("Permute router rows (self-contained inference checkpoint)"), this);
    permuteRouter_->setToolTip(tr("Router rows and router biases follow their experts, so the model computes the "
                                  "same function without a dispatcher map"));
    form->addRow(QString(), permuteRouter_);

    layerMap_ = new QLineEdit(this);
    layerMap_->setPlaceholderText(tr("empty: the plan's layer ids; e.g. 5-6:1, or 12:0,13:1, or -12"));
    layerMap_->setToolTip(tr("Plan layer → checkpoint layer, as `routepack rewrite --layer-map`: P:C, P-Q:C or a "
                             "shift +N / -N, comma-separated"));
    layerMapNote_ = new QLabel(this);
    layerMapNote_->setWordWrap(true);
    layerMapNote_->hide();
    auto* mapCol = new QVBoxLayout();
    mapCol->addWidget(layerMap_);
    mapCol->addWidget(layerMapNote_);
    form->addRow(tr("Layer map"), mapCol);

    device_ = new QComboBox(this);
    device_->addItem(tr("auto"), QStringLiteral("auto"));
    device_->addItem(tr("cpu"), QStringLiteral("cpu"));
    device_->addItem(tr("cuda"), QStringLiteral("cuda"));
    device_->setToolTip(tr("auto: CUDA when a device exists, else the CPU; both write the same bytes"));
    deviceInfo_ = new QLabel(tr("querying devices…"), this);
    deviceInfo_->setWordWrap(true);
    auto* deviceRow = new QHBoxLayout();
    deviceRow->addWidget(device_);
    deviceRow->addWidget(deviceInfo_, 1);
    form->addRow(tr("Device"), deviceRow);

    verify_ = new QCheckBox(tr("Verify: re-read the output and compare every tensor with its source"), this);
    verify_->setChecked(true);
    form->addRow(QString(), verify_);
}

void RewriteDialog::buildResultArea(QVBoxLayout* layout) {
    summary_ = new QTextBrowser(this);
    summary_->setFrameShape(QFrame::StyledPanel);
    summary_->setOpenLinks(false);
    summary_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    summary_->setMinimumHeight(120);
    layout->addWidget(summary_, 1);

    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("rewriteProgress"));
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    progress_->setTextVisible(true);
    progress_->hide(); // shown once a rewrite starts
    layout->addWidget(progress_);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_);

    auto* buttons = new QDialogButtonBox(this);
    // All action buttons in one role, so that they keep this order (Check, Rewrite, Cancel) in every style.
    checkButton_ = buttons->addButton(tr("Check"), QDialogButtonBox::ActionRole);
    checkButton_->setToolTip(tr("Read the checkpoint's headers and check the plan against them; writes nothing"));
    rewriteButton_ = buttons->addButton(tr("Rewrite"), QDialogButtonBox::ActionRole);
    cancelButton_ = buttons->addButton(tr("Cancel rewrite"), QDialogButtonBox::ActionRole);
    closeButton_ = buttons->addButton(QDialogButtonBox::Close);
    cancelButton_->setEnabled(false);
    rewriteButton_->setDefault(true);
    layout->addWidget(buttons);
}

void RewriteDialog::connectFields() {
    connect(planButton_, &QPushButton::clicked, this, &RewriteDialog::choosePlanFile);
    connect(mapButton_, &QPushButton::clicked, this, &RewriteDialog::chooseMapFile);
    connect(input_, &QLineEdit::textChanged, this, &RewriteDialog::fieldsChanged);
    connect(input_, &QLineEdit::textChanged, describeTimer_, qOverload<>(&QTimer::start));
    connect(describeTimer_, &QTimer::timeout, this, &RewriteDialog::describeInput);
    connect(synthButton_, &QPushButton::clicked, this, &RewriteDialog::chooseSynthFolder);
    connect(output_, &QLineEdit::textChanged, this, &RewriteDialog::fieldsChanged);
    connect(direction_, &QComboBox::currentIndexChanged, this, &RewriteDialog::fieldsChanged);
    connect(permuteRouter_, &QCheckBox::toggled, this, &RewriteDialog::fieldsChanged);
    connect(layerMap_, &QLineEdit::textChanged, this, [this] {
        updateLayerMapError();
        fieldsChanged();
    });
    connect(device_, &QComboBox::currentIndexChanged, this, &RewriteDialog::fieldsChanged);
    connect(verify_, &QCheckBox::toggled, this, &RewriteDialog::fieldsChanged);
    connect(checkButton_, &QPushButton::clicked, this, [this] { startCheck(); });
    connect(rewriteButton_, &QPushButton::clicked, this, [this] { startRewrite(); });
    connect(cancelButton_, &QPushButton::clicked, this, &RewriteDialog::cancelRewrite);
    connect(closeButton_, &QPushButton::clicked, this, &QDialog::reject);
}

void RewriteDialog::connectJob() {
    connect(job_, &RewriteJob::checked, this, [this](const RewriteCheck& c) {
        if (c.id != pendingCheck_) return; // the fields changed since
        pendingCheck_ = 0;
        showCheck(c);
        if (c.ok) {
            lastCheck_ = c;
            error_.clear();
            showInfo(tr("Check passed: the rewrite moves %1 tensors (%2) and writes %3. Nothing was written yet.")
                         .arg(c.movedTensors)
                         .arg(bytesText(c.movedBytes), bytesText(c.totalBytes)));
        } else {
            lastCheck_.reset();
            showError(tr("The rewrite would be refused: "), c.error);
        }
    });
    connect(job_, &RewriteJob::progress, this, [this](const QString& stage, double fraction) {
        progress_->setValue(static_cast<int>(1000 * fraction));
        progress_->setFormat(tr("%1 %p%").arg(stageWords(stage)));
    });
    connect(job_, &RewriteJob::finished, this, [this](const RewriteOutcome& o) {
        setBusy(false);
        progress_->setValue(1000);
        progress_->setFormat(tr("done"));
        lastOutcome_ = o;
        lastCheck_ = o.check;
        error_.clear();
        showOutcome(o);
        showInfo(tr("Rewrote the checkpoint into %1.").arg(o.output));
        Q_EMIT rewritten(o.output);
    });
    connect(job_, &RewriteJob::failed, this, [this](const QString& message) {
        setBusy(false);
        progress_->setValue(0);
        progress_->setFormat(tr("failed"));
        showError(tr("Rewrite failed; nothing was written: "), message);
    });
    connect(job_, &RewriteJob::cancelled, this, [this] {
        setBusy(false);
        progress_->setValue(0);
        progress_->setFormat(tr("cancelled"));
        error_.clear();
        showInfo(tr("Rewrite cancelled; nothing was written at %1.").arg(output()));
    });
}

void RewriteDialog::queryDevices() {
    // What the machine can run on: the CUDA runtime may take a while to answer, so ask off the GUI thread.
    devices_ = new JobTracker(JobTracker::Policy::EveryResult, 1, false, this);
    auto showDevices = [this](const QString& description) {
        deviceDescription_ = description;
        deviceInfo_->setText(deviceDescription_);
        Q_EMIT devicesQueried(deviceDescription_);
    };
    devices_->start<QString>(
        [](JobContext&) { return QString::fromStdString(gpu::query_devices().description); },
        [showDevices](quint64, const std::shared_ptr<const QString>& description) { showDevices(*description); },
        [showDevices](quint64, const JobFailure& failure) {
            showDevices(tr("Cannot query the devices: %1").arg(failure.text));
        });
}

RewriteDialog::~RewriteDialog() {
    // Nothing read or written for this dialog is delivered after this.
    describe_->shutdown();
    synthWrite_->shutdown();
}

bool RewriteDialog::usePlan(const std::function<PlanFile()>& load, const QString& origin) {
    try {
        plan_ = std::make_shared<const PlanFile>(load());
        map_.reset();
        planOrigin_ = origin;
    } catch (const std::exception& e) {
        plan_.reset();
        map_.reset();
        planOrigin_.clear();
        showPlanInfo();
        updateLayerMapError();
        fieldsChanged();
        showError(tr("Cannot use the plan: "), guiErrorText(e));
        return false;
    }
    showPlanInfo();
    updateLayerMapError();
    fieldsChanged();
    error_.clear();
    showInfo(QString());
    return true;
}

bool RewriteDialog::setPlanJson(const QString& json, const QString& origin) {
    return usePlan([&] { return gpu::parse_plan_text(json.toStdString(), origin.toStdString()); }, origin);
}

bool RewriteDialog::loadPlanFile(const QString& path) {
    return usePlan(
        [&] {
            // A folder, FIFO or device is refused unread (read_plan_file never blocks on a FIFO).
            return gpu::read_plan_file(path.toStdString());
        },
        path);
}

bool RewriteDialog::loadMapFile(const QString& path) {
    try {
        map_ = std::make_shared<const gpu::ExpertMapFile>(gpu::read_expert_map_file(path.toStdString()));
        plan_.reset();
        planOrigin_ = path;
    } catch (const std::exception& e) {
        plan_.reset();
        map_.reset();
        planOrigin_.clear();
        showPlanInfo();
        updateLayerMapError();
        fieldsChanged();
        showError(tr("Cannot use the expert map: "), guiErrorText(e));
        return false;
    }
    showPlanInfo();
    updateLayerMapError();
    fieldsChanged();
    error_.clear();
    showInfo(QString());
    return true;
}

void RewriteDialog::setInput(const QString& path) {
    input_->setText(path);
}

QString RewriteDialog::input() const {
    return input_->text().trimmed();
}

void RewriteDialog::setOutput(const QString& path) {
    output_->setText(path);
}

QString RewriteDialog::output() const {
    return output_->text().trimmed();
}

void RewriteDialog::setInverse(bool inverse) {
    direction_->setCurrentIndex(inverse ? 1 : 0);
}

bool RewriteDialog::inverse() const {
    return direction_->currentData().toBool();
}

void RewriteDialog::setPermuteRouter(bool on) {
    permuteRouter_->setChecked(on);
}

void RewriteDialog::setLayerMap(const QString& text) {
    layerMap_->setText(text);
}

void RewriteDialog::setDevice(const QString& name) {
    const int i = device_->findData(name);
    if (i >= 0) device_->setCurrentIndex(i);
}

void RewriteDialog::setVerify(bool on) {
    verify_->setChecked(on);
}

QString RewriteDialog::statusText() const {
    return status_->text();
}

QString RewriteDialog::summaryText() const {
    return summary_->toPlainText();
}

std::optional<gpu::RewriteRequest> RewriteDialog::request(QString* error) const {
    auto fail = [&](const QString& why) -> std::optional<gpu::RewriteRequest> {
        if (error) *error = why;
        return std::nullopt;
    };
    if (!plan_ && !map_)
        return fail(tr("Choose a plan: select a planned run in the studio, a plan file, or an expert map file."));
    if (input().isEmpty()) return fail(tr("Choose the input checkpoint: a folder or a .safetensors file."));
    if (output().isEmpty()) return fail(tr("Choose the output folder (it must not exist or be empty)."));
    if (!layerMapError_.isEmpty()) return fail(layerMapError_);
    try {
        // Exactly as `routepack rewrite` fills it (gpu/rewrite/request.h).
        gpu::RewriteRequest r = plan_ ? gpu::request_from_plan(*plan_, planOrigin_.toStdString())
                                      : gpu::request_from_map(*map_, planOrigin_.toStdString(),
                                                              std::filesystem::path(input().toStdString()));
        r.input = std::filesystem::path(input().toStdString());
        r.output = std::filesystem::path(output().toStdString());
        r.direction = inverse() ? gpu::RewriteDirection::Inverse : gpu::RewriteDirection::Apply;
        r.permute_router = permuteRouter_->isChecked();
        const QString map = layerMap_->text().trimmed();
        if (!map.isEmpty()) r.layer_map = gpu::parse_layer_map(map.toStdString(), r.plan_layers);
        r.device = gpu::parse_rewrite_device(device_->currentData().toString().toStdString());
        r.verify = verify_->isChecked();
        return r;
    } catch (const std::exception& e) {
        return fail(guiErrorText(e));
    }
}

bool RewriteDialog::startCheck() {
    if (job_->isRunning()) {
        showError(QString(), tr("A rewrite is running; wait for it or cancel it."));
        return false;
    }
    QString why;
    const auto r = request(&why);
    if (!r) {
        showError(QString(), why);
        return false;
    }
    error_.clear();
    lastCheck_.reset();
    pendingCheck_ = job_->check(*r);
    showInfo(tr("Checking %1 against the plan (reading the safetensors headers)…").arg(input()));
    return true;
}

bool RewriteDialog::startRewrite() {
    if (job_->isRunning()) {
        showError(QString(), tr("A rewrite is running; wait for it or cancel it."));
        return false;
    }
    QString why;
    const auto r = request(&why);
    if (!r) {
        showError(QString(), why);
        return false;
    }
    job_->dropPendingChecks();
    pendingCheck_ = 0;
    error_.clear();
    lastOutcome_.reset();
    job_->start(*r);
    progress_->setValue(0);
    progress_->setFormat(tr("checking…"));
    progress_->show();
    setBusy(true);
    showInfo(tr("Rewriting into %1 (a hidden temporary folder until complete)…").arg(output()));
    return true;
}

void RewriteDialog::cancelRewrite() {
    if (!job_->isRunning()) return;
    job_->cancel();
    showInfo(tr("Cancelling: removing the temporary folder…"));
}

void RewriteDialog::reject() {
    if (job_->isRunning()) { // Esc / Close during a rewrite cancels it first
        cancelRewrite();
        return;
    }
    QDialog::reject();
}

void RewriteDialog::choosePlanFile() {
    const QString dir = QFileInfo::exists(planOrigin_) ? QFileInfo(planOrigin_).absolutePath() : QString();
    const QString f = QFileDialog::getOpenFileName(this, tr("Plan file"), dir, tr("Plan JSON (*.json);;All files (*)"));
    if (!f.isEmpty()) loadPlanFile(f);
}

void RewriteDialog::chooseMapFile() {
    const QString dir = QFileInfo::exists(planOrigin_) ? QFileInfo(planOrigin_).absolutePath() : QString();
    const QString f =
        QFileDialog::getOpenFileName(this, tr("Expert map file"), dir, tr("Expert map JSON (*.json);;All files (*)"));
    if (!f.isEmpty()) loadMapFile(f);
}

void RewriteDialog::browseInputFolder() {
    const QString d = QFileDialog::getExistingDirectory(this, tr("Checkpoint folder"), input());
    if (d.isEmpty()) return;
    input_->setText(d);
    suggestOutput();
}

void RewriteDialog::browseInputFile() {
    const QString f = QFileDialog::getOpenFileName(this, tr("Checkpoint file"), QFileInfo(input()).absolutePath(),
                                                   tr("safetensors (*.safetensors);;All files (*)"));
    if (f.isEmpty()) return;
    input_->setText(f);
    suggestOutput();
}

void RewriteDialog::browseOutput() {
    // The output is a folder to create: a save dialog lets the user type a new name.
    const QString start = output().isEmpty() ? QFileInfo(input()).absolutePath() : output();
    const QString d = QFileDialog::getSaveFileName(this, tr("Output folder (created by the rewrite)"), start, QString(),
                                                   nullptr, QFileDialog::DontConfirmOverwrite);
    if (!d.isEmpty()) output_->setText(d);
}

void RewriteDialog::suggestOutput() {
    if (!output().isEmpty() || input().isEmpty()) return;
    QFileInfo in(input());
    const QString base = in.isDir() ? in.absoluteFilePath() : in.absolutePath();
    output_->setText(base + (inverse() ? QStringLiteral("-logical") : QStringLiteral("-physical")));
}

void RewriteDialog::fieldsChanged() {
    // The last check described other fields: drop it (and the answer of one still running).
    job_->dropPendingChecks();
    pendingCheck_ = 0;
    lastCheck_.reset();
    if (job_->isRunning()) return;
    summary_->setPlainText(tr("Check reads the checkpoint's headers and shows what the rewrite will move."));
    if (!error_.isEmpty() || status_->text().startsWith(tr("Checking"))) {
        error_.clear();
        showInfo(QString());
    }
}

void RewriteDialog::updateLayerMapError() {
    layerMapError_.clear();
    const QString text = layerMap_->text().trimmed();
    // A map without layer ids is checked when the request is built (the ids come from config.json).
    const std::vector<int>* layers = plan_                               ? &plan_->model.moe_layers
                                     : map_ && !map_->moe_layers.empty() ? &map_->moe_layers
                                                                         : nullptr;
    if (layers && !text.isEmpty()) {
        try {
            gpu::parse_layer_map(text.toStdString(), *layers);
        } catch (const std::exception& e) {
            layerMapError_ = guiErrorText(e);
        }
    }
    layerMapNote_->setText(layerMapError_);
    layerMapNote_->setStyleSheet(layerMapError_.isEmpty() ? QString() : QString::fromLatin1(kErrorStyle));
    layerMapNote_->setVisible(!layerMapError_.isEmpty());
}

void RewriteDialog::setBusy(bool busy) {
    for (QWidget* w : fieldWidgets_)
        w->setEnabled(!busy);
    checkButton_->setEnabled(!busy);
    rewriteButton_->setEnabled(!busy);
    cancelButton_->setEnabled(busy);
}

void RewriteDialog::showPlanInfo() {
    updateCheckpointNote(); // the plan's model is what the checkpoint is compared with
    if (map_) {
        const auto& m = *map_;
        planInfo_->setText(tr("%1\nexpert map (%2): %3 rows of %4 experts, %5")
                               .arg(planOrigin_, QString::fromStdString(m.kind))
                               .arg(m.p2l.size())
                               .arg(m.p2l.front().size())
                               .arg(m.moe_layers.empty() ? tr("layer ids from the checkpoint's config.json")
                                                         : tr("MoE layers %1").arg(layersText(m.moe_layers))));
        return;
    }
    if (!plan_) {
        planInfo_->setText(tr("No plan: select a planned run in the studio, or choose a plan file."));
        return;
    }
    const PlanFile& p = *plan_;
    planInfo_->setText(
        tr("%1\ntrace %2, window %3: %4 experts, MoE layers %5, %6 EP ranks\ninputs fingerprint %7")
            .arg(planOrigin_, QString::fromStdString(p.trace_name), QString::fromStdString(p.window_name))
            .arg(p.model.experts)
            .arg(layersText(p.model.moe_layers))
            .arg(p.topology.ep_ranks)
            .arg(QString::fromStdString(p.fingerprint)));
}

void RewriteDialog::showCheck(const RewriteCheck& c) {
    if (!c.ok) {
        summary_->setHtml(QStringLiteral("<p><b>%1</b></p><p>%2</p>")
                              .arg(tr("The rewrite would be refused; nothing was written.").toHtmlEscaped(),
                                   c.error.toHtmlEscaped()));
        return;
    }
    QString html =
        QStringLiteral("<p><b>%1</b></p><table>").arg(tr("Check passed (nothing written yet)").toHtmlEscaped());
    html += row(tr("Checkpoint"),
                tr("%1, %2 safetensors file(s), %3 other file(s)").arg(c.scheme).arg(c.shards).arg(c.otherFiles));
    html +=
        row(tr("MoE layers"), tr("%1 (layer map: %2)").arg(layersText(c.checkpointLayers), layerMapText(c.layerMap)));
    html += row(tr("Experts"), tr("%1 per MoE layer").arg(c.experts));
    html += row(tr("Moved tensors"), tr("%1 of %2 expert-indexed tensors (%3 expert, %4 router)")
                                         .arg(c.movedTensors)
                                         .arg(c.expertTensors + c.routerTensors)
                                         .arg(c.expertTensors)
                                         .arg(c.routerTensors));
    html += row(tr("Bytes"), tr("%1 moved of %2 written").arg(bytesText(c.movedBytes), bytesText(c.totalBytes)));
    html += row(tr("Placement"), c.placementFingerprint);
    html += row(tr("Source"), c.sourceFingerprint);
    html += QStringLiteral("</table>");
    summary_->setHtml(html);
}

void RewriteDialog::showOutcome(const RewriteOutcome& o) {
    const gpu::RewriteReport& r = o.report;
    const RewriteCheck& c = o.check;
    QString html = QStringLiteral("<p><b>%1</b></p><table>").arg(tr("Rewrite complete").toHtmlEscaped());
    html += row(tr("Output"), o.output);
    html += row(tr("Device"), QString::fromStdString(r.device));
    html += row(tr("Written"), tr("%1 in %2 files, %3 s (%4 GB/s)")
                                   .arg(bytesText(r.bytes_written))
                                   .arg(r.files)
                                   .arg(r.seconds, 0, 'f', 3)
                                   .arg(r.gb_per_s(), 0, 'f', 2));
    html +=
        row(tr("Verified"),
            r.verified
                ? tr("yes: every output file equals its planned source bytes (%1 s)").arg(r.verify_seconds, 0, 'f', 3)
                : tr("no (verify was off)"));
    html += row(tr("Checkpoint"),
                tr("%1, MoE layers %2, %3 experts").arg(c.scheme, layersText(c.checkpointLayers)).arg(c.experts));
    html += row(tr("Moved tensors"), tr("%1 of %2 expert-indexed tensors, %3")
                                         .arg(r.moved_tensors)
                                         .arg(c.expertTensors + c.routerTensors)
                                         .arg(bytesText(r.moved_bytes)));
    html += row(tr("Provenance"), QDir(o.output).filePath(QString::fromLatin1(gpu::kRewriteSidecar)));
    html += QStringLiteral("</table>");
    summary_->setHtml(html);
}

void RewriteDialog::showError(const QString& prefix, const QString& message) {
    error_ = message;
    status_->setStyleSheet(QString::fromLatin1(kErrorStyle));
    status_->setText(prefix + message);
}

void RewriteDialog::showInfo(const QString& message) {
    status_->setStyleSheet(QString());
    status_->setText(message);
}

} // namespace routepack::views
