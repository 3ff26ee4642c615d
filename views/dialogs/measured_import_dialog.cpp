#include "views/dialogs/measured_import_dialog.h"

#include "core/plan/method.h"
#include "core/util/input_file.h"
#include "storage/library.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace routepack::views {

MeasuredImportResult importMeasured(const MeasuredImportRequest& rq) {
    auto lib = storage::Library::open(rq.library.toStdString(), storage::OpenMode::ReadWrite);
    storage::MeasuredImport r;
    if (rq.plan.isEmpty()) {
        if (rq.files.size() != 1)
            throw InputError("give one measured file, or torch.profiler traces with their plan file");
        const std::string file = rq.files.front().toStdString();
        r = lib->import_measured(read_input_file(file, input_files::kMeasured), file);
    } else {
        std::vector<ProfilerTraceFile> traces;
        std::vector<std::filesystem::path> paths;
        for (const QString& f : rq.files) {
            traces.push_back({f.toStdString(), read_input_file(f.toStdString(), input_files::kProfilerTrace)});
            paths.emplace_back(f.toStdString());
        }
        const std::string plan = rq.plan.toStdString();
        r = lib->import_profiler(read_input_file(plan, input_files::kPlan), plan, rq.method.toStdString(),
                                 rq.step.toStdString(), traces, paths);
    }
    MeasuredImportResult out;
    out.trace = QString::fromStdString(r.step.trace);
    out.window = QString::fromStdString(r.step.window);
    out.id = r.step.id;
    const auto linked = std::count_if(r.step.plans.begin(), r.step.plans.end(),
                                      [](const storage::MeasuredPlanEntry& p) { return p.run_id != 0; });
    out.summary = QObject::tr("%1 measured step %2 of %3/%4 (%5): %6 plans, %7 linked to a saved run.")
                      .arg(r.unchanged ? QObject::tr("Already imported:") : QObject::tr("Imported"))
                      .arg(r.step.id)
                      .arg(out.trace, out.window, QString::fromStdString(r.step.source))
                      .arg(r.step.plans.size())
                      .arg(linked);
    return out;
}

MeasuredImportDialog::MeasuredImportDialog(const QString& library, QWidget* parent)
    : QDialog(parent), library_(library), job_(new JobTracker(JobTracker::Policy::EveryResult, 1, false, this)) {
    setWindowTitle(tr("Import measured step"));
    files_ = new QLineEdit(this);
    files_->setObjectName(QStringLiteral("measuredFiles"));
    files_->setPlaceholderText(tr("a measured file, or the step's torch.profiler traces (one per process)"));
    plan_ = new QLineEdit(this);
    plan_->setObjectName(QStringLiteral("measuredPlan"));
    plan_->setPlaceholderText(tr("profiler traces only: the plan file whose layout the step ran"));
    method_ = new QComboBox(this);
    method_->setObjectName(QStringLiteral("measuredMethod"));
    for (const MethodRow& m : kMethodTable)
        method_->addItem(QString::fromLatin1(m.key));
    method_->setCurrentText(QStringLiteral("routepack"));
    step_ = new QLineEdit(this);
    step_->setObjectName(QStringLiteral("measuredStepName"));
    step_->setPlaceholderText(tr("the plan name of the routepack:step ranges (default: the method)"));
    auto browse = [this](QLineEdit* edit, bool many) {
        auto* b = new QPushButton(tr("Browse…"), this);
        connect(b, &QPushButton::clicked, this, [this, edit, many] {
            const QString filter = tr("JSON (*.json);;All files (*)");
            const QStringList picked =
                many ? QFileDialog::getOpenFileNames(this, windowTitle(), QString(), filter)
                     : QStringList{QFileDialog::getOpenFileName(this, windowTitle(), QString(), filter)};
            if (!picked.isEmpty() && !picked.front().isEmpty()) edit->setText(picked.join(QLatin1Char(';')));
        });
        auto* row = new QHBoxLayout;
        row->addWidget(edit, 1);
        row->addWidget(b);
        return row;
    };
    auto* form = new QFormLayout;
    form->addRow(tr("Files:"), browse(files_, true));
    form->addRow(tr("Plan file:"), browse(plan_, false));
    form->addRow(tr("Method:"), method_);
    form->addRow(tr("Step name:"), step_);
    result_ = new QLabel(this);
    result_->setObjectName(QStringLiteral("measuredResult"));
    result_->setWordWrap(true);
    result_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    import_ = buttons->addButton(tr("Import"), QDialogButtonBox::AcceptRole);
    import_->setObjectName(QStringLiteral("measuredImport"));
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(import_, &QPushButton::clicked, this, [this] { startImport(); });
    auto* intro = new QLabel(tr("A measured file (python3 -m routepack.torch.measure --out), or the torch.profiler "
                                "traces of a step with the plan it ran (docs/measure.md), stored beside the window "
                                "and the saved runs it measured."),
                             this);
    intro->setWordWrap(true);
    auto* box = new QVBoxLayout(this);
    box->addWidget(intro);
    box->addLayout(form);
    box->addWidget(result_);
    box->addWidget(buttons);
    resize(720, sizeHint().height());
}

MeasuredImportDialog* MeasuredImportDialog::showIn(MeasuredImportDialog*& slot, const QString& library, QWidget* parent,
                                                   std::function<void(const MeasuredImportResult&)> onImported) {
    if (!slot) {
        slot = new MeasuredImportDialog(library, parent);
        connect(slot, &MeasuredImportDialog::imported, parent, std::move(onImported));
    }
    slot->show();
    slot->raise();
    slot->activateWindow();
    return slot;
}

MeasuredImportDialog::~MeasuredImportDialog() {
    job_->shutdown();
}

QString MeasuredImportDialog::resultText() const {
    return result_->text();
}

MeasuredImportRequest MeasuredImportDialog::request() const {
    MeasuredImportRequest rq;
    rq.library = library_;
    for (const QString& f : files_->text().split(QLatin1Char(';'), Qt::SkipEmptyParts))
        if (!f.trimmed().isEmpty()) rq.files << f.trimmed();
    rq.plan = plan_->text().trimmed();
    rq.method = method_->currentText();
    rq.step = step_->text().trimmed();
    return rq;
}

bool MeasuredImportDialog::startImport() {
    const MeasuredImportRequest rq = request();
    if (rq.files.isEmpty()) {
        result_->setText(tr("Give the files to import."));
        return false;
    }
    if (job_->runningCount() > 0) return false;
    import_->setEnabled(false);
    result_->setText(tr("Importing…"));
    job_->start<MeasuredImportResult>([rq](JobContext&) { return importMeasured(rq); },
                                      [this](quint64, const std::shared_ptr<const MeasuredImportResult>& r) {
                                          import_->setEnabled(true);
                                          result_->setText(r->summary);
                                          Q_EMIT imported(*r);
                                      },
                                      [this](quint64, const JobFailure& failure) {
                                          import_->setEnabled(true);
                                          result_->setText(tr("Not imported: %1").arg(failure.text));
                                      });
    return true;
}

} // namespace routepack::views
