#include "views/dialogs/import_dialog.h"

#include "core/model/model.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "storage/library.h"
#include "views/widgets/gui_text.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QUrl>
#include <QVBoxLayout>

#include <filesystem>
#include <fstream>

namespace routepack::views {

namespace {

std::vector<std::filesystem::path> to_paths(const QStringList& list) {
    std::vector<std::filesystem::path> out;
    for (const QString& s : list)
        out.emplace_back(s.toStdString());
    return out;
}

/// Whether a format name (to_string(TraceFormat)) is a load-only format, whose file describes its
/// own model.
bool loadOnlyFormat(const QString& name) {
    for (const TraceFormat f : {TraceFormat::Aggregate, TraceFormat::Loads})
        if (name == QLatin1String(to_string(f))) return is_load_only(f);
    return false;
}

} // namespace

DetectedInput detectInputFormat(const QStringList& inputs) {
    try {
        const auto files = collect_trace_files(to_paths(inputs));
        if (files.empty()) return {};
        std::ifstream in(files.front(), std::ios::binary);
        std::string head(64 * 1024, '\0');
        in.read(head.data(), static_cast<std::streamsize>(head.size()));
        head.resize(static_cast<std::size_t>(in.gcount()));
        const SourceFile source{files.front(), head};
        const TraceFormat f = detect_format(source);
        if (f == TraceFormat::Auto) return {};
        return {QString::fromLatin1(to_string(f)), QString::fromStdString(detected_stack(source, f))};
    } catch (const std::exception&) {
        return {};
    }
}

QString importSummaryText(const QString& name, const ImportSummary& s) {
    if (is_load_only(s.format))
        return ImportDialog::tr("Imported trace '%1': load-only per-layer expert totals, %2 MoE layers x %3 experts "
                                "from %4 file(s) (format %5); no samples: its placement views are on the trace.")
            .arg(name)
            .arg(s.model.num_moe_layers())
            .arg(s.model.experts)
            .arg(s.files)
            .arg(QString::fromLatin1(to_string(s.format)));
    return ImportDialog::tr("Imported trace '%1': %2 samples from %3 files (format %4), lengths %5-%6 tokens.")
        .arg(name)
        .arg(s.samples)
        .arg(s.files)
        .arg(QString::fromLatin1(to_string(s.format)))
        .arg(s.min_length)
        .arg(s.max_length);
}

// --- ImportJob ---

ImportJob::ImportJob(QObject* parent)
    : QObject(parent), tracker_(new JobTracker(JobTracker::Policy::EveryResult, 1, false, this)) {
    qRegisterMetaType<routepack::views::ImportProgressInfo>();
    qRegisterMetaType<routepack::ImportSummary>();
}

ImportJob::~ImportJob() {
    tracker_->shutdown(); // cancels the running import and waits for it to roll back
}

bool ImportJob::start(const ImportRequest& request) {
    if (isRunning()) return false;
    const qint64 cancel_after = cancelAfter_;
    tracker_->start<ImportSummary>(
        [this, request, cancel_after](JobContext& context) {
            std::atomic<bool>* cancel = context.cancelFlag();
            auto on_progress = [&](const ImportProgress& p) {
                if (cancel_after > 0 && static_cast<qint64>(p.samples) >= cancel_after) cancel->store(true);
                if (!context.throttle().pass(p.files_done == p.files_total)) return;
                ImportProgressInfo info;
                info.filesDone = static_cast<qint64>(p.files_done);
                info.filesTotal = static_cast<qint64>(p.files_total);
                info.bytesDone = static_cast<qint64>(p.bytes_done);
                info.bytesTotal = static_cast<qint64>(p.bytes_total);
                info.samples = static_cast<qint64>(p.samples);
                info.currentFile = QString::fromStdString(p.current_file);
                context.post([this, info] { Q_EMIT progress(info); });
            };
            // One connection per thread: this worker's own.
            auto lib = storage::Library::open(request.library.toStdString(), storage::OpenMode::Create);
            return lib->import_trace(request.traceName.toStdString(), to_paths(request.inputs), request.options,
                                     on_progress, cancel);
        },
        [this, name = request.traceName](quint64, const std::shared_ptr<const ImportSummary>& summary) {
            Q_EMIT finished(name, *summary);
        },
        [this](quint64, const JobFailure& failure) {
            if (failure.kind == JobFailure::Kind::Cancelled)
                Q_EMIT cancelled();
            else
                Q_EMIT failed(failure.text);
        });
    return true;
}

void ImportJob::cancel() {
    tracker_->cancelRunning();
}

// --- ImportDialog ---

ImportDialog::ImportDialog(const QString& library, QWidget* parent)
    : QDialog(parent), library_(library), job_(new ImportJob(this)),
      detects_(new JobTracker(JobTracker::Policy::LatestResult, 2, false, this)) {
    job_->setObjectName(QStringLiteral("importJob"));
    setWindowTitle(tr("Import trace"));
    setAcceptDrops(true); // trace files and folders from a file manager
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout();
    layout->addLayout(form);

    inputs_ = new QListWidget(this);
    inputs_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    inputs_->setMinimumHeight(90);
    auto* addFilesButton = new QPushButton(tr("Add files…"), this);
    auto* addFolderButton = new QPushButton(tr("Add folder…"), this);
    auto* removeButton = new QPushButton(tr("Remove"), this);
    auto* inputButtons = new QVBoxLayout();
    inputButtons->addWidget(addFilesButton);
    inputButtons->addWidget(addFolderButton);
    inputButtons->addWidget(removeButton);
    inputButtons->addStretch(1);
    auto* inputRow = new QHBoxLayout();
    inputRow->addWidget(inputs_, 1);
    inputRow->addLayout(inputButtons);
    form->addRow(tr("Files and folders"), inputRow);

    name_ = new QLineEdit(this);
    name_->setPlaceholderText(tr("name of the trace in the library"));
    form->addRow(tr("Trace name"), name_);

    format_ = new QComboBox(this);
    format_->addItem(tr("Auto-detect"), QStringLiteral("auto"));
    for (const auto& n : trace_format_names())
        if (n != "auto") format_->addItem(QString::fromStdString(n), QString::fromStdString(n));
    form->addRow(tr("Format"), format_);

    modelSource_ = new QComboBox(this);
    modelSource_->addItem(tr("Shipped model"), KnownModel);
    modelSource_->addItem(tr("Hugging Face config.json"), ConfigJson);
    modelSource_->addItem(tr("Fields"), Fields);
    modelSource_->addItem(tr("From the files (aggregate totals)"), FromFiles);
    form->addRow(tr("Model"), modelSource_);

    buildModelStack();
    form->addRow(QString(), modelStack_);

    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    progress_->setTextVisible(true);
    progress_->setFormat(QString());
    progress_->hide(); // shown once an import starts
    layout->addWidget(progress_);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_);

    auto* buttons = new QDialogButtonBox(this);
    importButton_ = buttons->addButton(tr("Import"), QDialogButtonBox::AcceptRole);
    cancelButton_ = buttons->addButton(tr("Cancel import"), QDialogButtonBox::ActionRole);
    closeButton_ = buttons->addButton(QDialogButtonBox::Close);
    cancelButton_->setEnabled(false);
    layout->addWidget(buttons);
    fieldWidgets_ = {inputs_, addFilesButton, addFolderButton, removeButton, name_, format_, modelSource_, modelStack_};

    connect(addFilesButton, &QPushButton::clicked, this, &ImportDialog::addFiles);
    connect(addFolderButton, &QPushButton::clicked, this, &ImportDialog::addFolder);
    connect(removeButton, &QPushButton::clicked, this, &ImportDialog::removeSelected);
    // The stack takes the height of the page shown, not of its tallest page.
    auto fitStack = [this](int index) {
        for (int i = 0; i < modelStack_->count(); ++i)
            modelStack_->widget(i)->setSizePolicy(QSizePolicy::Preferred,
                                                  i == index ? QSizePolicy::Maximum : QSizePolicy::Ignored);
        modelStack_->setCurrentIndex(index);
        modelStack_->adjustSize();
    };
    fitStack(0);
    connect(modelSource_, &QComboBox::currentIndexChanged, this, fitStack);
    // A model picked by hand stays for later inputs; a proposed one follows them.
    connect(modelSource_, &QComboBox::activated, this, [this] { modelChosen_ = true; });
    connect(knownModel_, &QComboBox::activated, this, [this] { modelChosen_ = true; });
    connect(name_, &QLineEdit::textEdited, this, [this] { proposedName_.clear(); });
    // Once the format is known: an aggregate file describes its own model.
    connect(this, &ImportDialog::formatDetected, this, [this](const QString& format) {
        if (loadOnlyFormat(format)) proposeFromInputs(format);
    });
    connect(importButton_, &QPushButton::clicked, this, [this] { startImport(); });
    connect(cancelButton_, &QPushButton::clicked, job_, &ImportJob::cancel);
    connect(closeButton_, &QPushButton::clicked, this, &QDialog::reject);

    connectJob();
    resize(620, 520);
}

void ImportDialog::buildModelStack() {
    modelStack_ = new QStackedWidget(this);
    auto* knownPage = new QWidget(this);
    auto* knownRow = new QVBoxLayout(knownPage);
    knownRow->setContentsMargins(0, 0, 0, 0);
    knownModel_ = new QComboBox(knownPage);
    for (const auto& n : known_model_names())
        knownModel_->addItem(QString::fromStdString(n));
    knownRow->addWidget(knownModel_);
    knownRow->addStretch(1);
    modelStack_->addWidget(knownPage);
    auto* configPage = new QWidget(this);
    auto* configCol = new QVBoxLayout(configPage);
    configCol->setContentsMargins(0, 0, 0, 0);
    auto* configRow = new QHBoxLayout();
    configPath_ = new QLineEdit(configPage);
    configPath_->setPlaceholderText(tr("path of config.json"));
    auto* browse = new QPushButton(tr("Browse…"), configPage);
    configRow->addWidget(configPath_, 1);
    configRow->addWidget(browse);
    configCol->addLayout(configRow);
    configCol->addStretch(1);
    modelStack_->addWidget(configPage);
    auto* fieldsPage = new QWidget(this);
    auto* fields = new QFormLayout(fieldsPage);
    fields->setContentsMargins(0, 0, 0, 0);
    experts_ = new QSpinBox(fieldsPage);
    experts_->setRange(1, 1 << 20);
    experts_->setValue(64);
    topK_ = new QSpinBox(fieldsPage);
    topK_->setRange(1, 1 << 20);
    topK_->setValue(6);
    layers_ = new QSpinBox(fieldsPage);
    layers_->setRange(0, 65536);
    layers_->setSpecialValueText(tr("from the files"));
    moeLayers_ = new QLineEdit(fieldsPage);
    moeLayers_->setPlaceholderText(tr("e.g. 1-26 or 1-47:2 (empty: from the files)"));
    fields->addRow(tr("Experts E"), experts_);
    fields->addRow(tr("Top-k"), topK_);
    fields->addRow(tr("Decoder layers"), layers_);
    fields->addRow(tr("MoE layers"), moeLayers_);
    modelStack_->addWidget(fieldsPage);
    auto* fromFiles = new QLabel(tr("Aggregate totals files describe their own model."), this);
    fromFiles->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    modelStack_->addWidget(fromFiles);
    modelStack_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString f =
            QFileDialog::getOpenFileName(this, tr("Model config.json"), QString(), tr("JSON (*.json);;All files (*)"));
        if (!f.isEmpty()) configPath_->setText(f);
    });
}

void ImportDialog::connectJob() {
    connect(job_, &ImportJob::progress, this, [this](const ImportProgressInfo& p) {
        const double f = p.bytesTotal > 0   ? static_cast<double>(p.bytesDone) / static_cast<double>(p.bytesTotal)
                         : p.filesTotal > 0 ? static_cast<double>(p.filesDone) / static_cast<double>(p.filesTotal)
                                            : 0.0;
        progress_->setValue(static_cast<int>(1000 * f));
        progress_->setFormat(tr("%1 of %2 files, %3 samples; %4")
                                 .arg(p.filesDone)
                                 .arg(p.filesTotal)
                                 .arg(p.samples)
                                 .arg(progressTimeText(static_cast<double>(importClock_.elapsed()) / 1000.0, f)));
    });
    connect(job_, &ImportJob::finished, this, [this](const QString& name, const ImportSummary& s) {
        setBusy(false);
        progress_->setValue(1000);
        progress_->setFormat(tr("done"));
        showInfo(importSummaryText(name, s));
        Q_EMIT imported(name);
    });
    connect(job_, &ImportJob::failed, this, [this](const QString& message) {
        setBusy(false);
        progress_->setValue(0);
        progress_->setFormat(QString());
        showError(tr("Import failed; nothing was written. %1").arg(message));
    });
    connect(job_, &ImportJob::cancelled, this, [this] {
        setBusy(false);
        progress_->setValue(0);
        progress_->setFormat(QString());
        showInfo(tr("Import cancelled; the library is unchanged."));
    });
}

ImportDialog::~ImportDialog() = default;

void ImportDialog::setInputs(const QStringList& paths) {
    inputs_->clear();
    inputs_->addItems(paths);
    inputsChanged();
}

int ImportDialog::addInputs(const QStringList& paths) {
    if (job_->isRunning()) return 0;
    const QStringList have = inputs();
    int added = 0;
    for (const QString& p : paths) {
        if (p.isEmpty() || have.contains(p)) continue;
        inputs_->addItem(p);
        ++added;
    }
    if (added > 0) inputsChanged();
    return added;
}

QStringList droppedLocalPaths(const QMimeData* mime) {
    QStringList out;
    if (!mime || !mime->hasUrls()) return out;
    for (const QUrl& u : mime->urls()) {
        if (!u.isLocalFile()) return {};
        out << QDir::cleanPath(u.toLocalFile());
    }
    return out;
}

void ImportDialog::dragEnterEvent(QDragEnterEvent* e) {
    if (!job_->isRunning() && !droppedLocalPaths(e->mimeData()).isEmpty()) e->acceptProposedAction();
}

void ImportDialog::dropEvent(QDropEvent* e) {
    const QStringList paths = droppedLocalPaths(e->mimeData());
    if (paths.isEmpty() || job_->isRunning()) return;
    addInputs(paths);
    e->acceptProposedAction();
}

QStringList ImportDialog::inputs() const {
    QStringList out;
    for (int i = 0; i < inputs_->count(); ++i)
        out << inputs_->item(i)->text();
    return out;
}

void ImportDialog::setTraceName(const QString& name) {
    name_->setText(name);
    proposedName_.clear(); // a name given, not proposed: it stays for new inputs
}

QString ImportDialog::traceName() const {
    return name_->text().trimmed();
}

void ImportDialog::setFormat(const QString& name) {
    const int i = format_->findData(name);
    if (i >= 0) format_->setCurrentIndex(i);
}

void ImportDialog::setModelSource(ModelSource s) {
    modelChosen_ = true;
    modelSource_->setCurrentIndex(modelSource_->findData(s));
}

ImportDialog::ModelSource ImportDialog::modelSource() const {
    return static_cast<ModelSource>(modelSource_->currentData().toInt());
}

void ImportDialog::setKnownModel(const QString& name) {
    setModelSource(KnownModel);
    knownModel_->setCurrentText(name);
}

QString ImportDialog::knownModel() const {
    return knownModel_->currentText();
}

void ImportDialog::proposeModel(ModelSource s, const QString& known) {
    modelSource_->setCurrentIndex(modelSource_->findData(s));
    if (!known.isEmpty()) knownModel_->setCurrentText(known);
}

void ImportDialog::proposeFromInputs(const QString& detectedFormat) {
    const QStringList list = inputs();
    const QString first = list.isEmpty() ? QString() : QDir::cleanPath(list.front());
    // The name follows the inputs until the user types one (or clears it to get the proposal back).
    const QString name = first.isEmpty() ? QString() : QFileInfo(first).completeBaseName();
    if (name_->text().trimmed().isEmpty() || name_->text() == proposedName_) {
        name_->setText(name);
        proposedName_ = name;
    }
    if (modelChosen_ || first.isEmpty()) return;
    if (loadOnlyFormat(detectedFormat)) {
        proposeModel(FromFiles, QString());
        return;
    }
    QString known;
    for (const auto& n : known_model_names()) {
        const QString m = QString::fromStdString(n);
        if (first.contains(m, Qt::CaseInsensitive) && m.size() > known.size()) known = m;
    }
    proposeModel(KnownModel, known.isEmpty() ? knownModel_->itemText(0) : known);
}

void ImportDialog::setModelConfig(const QString& configJson) {
    setModelSource(ConfigJson);
    configPath_->setText(configJson);
}

void ImportDialog::setModelFields(int experts, int topK, int layers, const QString& moeLayers) {
    setModelSource(Fields);
    experts_->setValue(experts);
    topK_->setValue(topK);
    layers_->setValue(layers);
    moeLayers_->setText(moeLayers);
}

void ImportDialog::addFiles() {
    const QStringList files = QFileDialog::getOpenFileNames(
        this, tr("Trace files"), QString(),
        tr("Trace files (*.json *.jsonl *.csv *.npy *.npz *.txt *.nrlre1);;All files (*)"));
    if (files.isEmpty()) return;
    addInputs(files);
}

void ImportDialog::addFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder of trace files"));
    if (dir.isEmpty()) return;
    inputs_->addItem(dir);
    inputsChanged();
}

void ImportDialog::removeSelected() {
    qDeleteAll(inputs_->selectedItems());
    inputsChanged();
}

void ImportDialog::inputsChanged() {
    const QStringList list = inputs();
    proposeFromInputs(QString());
    // Detect the format off the GUI thread (folders may hold many files); stale answers are dropped.
    detects_->invalidate();
    detected_.clear();
    detectedStack_.clear();
    format_->setItemText(0, tr("Auto-detect"));
    if (list.isEmpty()) return;
    detects_->start<DetectedInput>(
        [list](JobContext&) { return detectInputFormat(list); },
        [this](quint64, const std::shared_ptr<const DetectedInput>& found) {
            detected_ = found->format;
            detectedStack_ = found->stack;
            format_->setItemText(0, detected_.isEmpty()
                                        ? tr("Auto-detect (not recognized)")
                                        : tr("Auto-detect (detected: %1, %2)").arg(detected_, detectedStack_));
            Q_EMIT formatDetected(detected_);
        });
}

std::optional<ImportRequest> ImportDialog::request(QString* error) const {
    auto fail = [&](const QString& why) -> std::optional<ImportRequest> {
        if (error) *error = why;
        return std::nullopt;
    };
    ImportRequest r;
    r.library = library_;
    r.inputs = inputs();
    r.traceName = traceName();
    if (library_.isEmpty()) return fail(tr("Open or create a library first."));
    if (r.inputs.isEmpty()) return fail(tr("Add the trace files or folders to import."));
    if (r.traceName.isEmpty()) return fail(tr("Give the trace a name."));
    try {
        r.options.format = parse_trace_format(format_->currentData().toString().toStdString());
        switch (static_cast<ModelSource>(modelSource_->currentData().toInt())) {
        case KnownModel:
            r.options.model = known_model(knownModel_->currentText().toStdString());
            break;
        case ConfigJson: {
            const QString path = configPath_->text().trimmed();
            if (path.isEmpty()) return fail(tr("Choose the model's config.json."));
            // Read on the GUI thread, so only what cannot block or take long: a regular file within
            // the model-config cap (a FIFO or device would block the window, a huge file stall it).
            r.options.model = model_from_hf_config(read_input_file(path.toStdString(), input_files::kModelConfig),
                                                   path.toStdString());
            break;
        }
        case Fields: {
            ModelDescription m;
            m.experts = experts_->value();
            m.top_k = topK_->value();
            m.num_hidden_layers = layers_->value();
            const QString list = moeLayers_->text().trimmed();
            if (!list.isEmpty()) m.moe_layers = parse_layer_list(list.toStdString());
            m.source = "fields";
            r.options.model = m;
            break;
        }
        case FromFiles:
            break;
        }
    } catch (const std::exception& e) {
        return fail(guiErrorText(e));
    }
    return r;
}

bool ImportDialog::startImport() {
    if (job_->isRunning()) {
        showError(tr("An import is already running."));
        return false;
    }
    QString why;
    const auto r = request(&why);
    if (!r) {
        showError(why);
        return false;
    }
    error_.clear();
    status_->clear();
    progress_->setValue(0);
    progress_->setFormat(tr("starting…"));
    progress_->show();
    importClock_.start();
    setBusy(true);
    job_->start(*r);
    return true;
}

void ImportDialog::reject() {
    if (job_->isRunning()) { // Esc / Close during an import cancels it first
        job_->cancel();
        return;
    }
    QDialog::reject();
}

void ImportDialog::setBusy(bool busy) {
    for (QWidget* w : fieldWidgets_)
        w->setEnabled(!busy);
    importButton_->setEnabled(!busy);
    cancelButton_->setEnabled(busy);
}

void ImportDialog::showError(const QString& message) {
    error_ = message;
    status_->setStyleSheet(
        QStringLiteral("color: white; background-color: #b3261e; padding: 4px; border-radius: 3px;"));
    status_->setText(message);
}

void ImportDialog::showInfo(const QString& message) {
    status_->setStyleSheet(QString());
    status_->setText(message);
}

} // namespace routepack::views
