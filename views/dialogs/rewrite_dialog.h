#pragma once
// Checkpoint rewrite from the studio (the rewriter is gpu/rewrite.h): RewriteDialog collects the
// plan, the checkpoint, the output folder and the options, and drives a RewriteJob
// (views/jobs/rewrite_job.h), which runs Check and Rewrite on worker threads. The request is built exactly as
// `routepack rewrite` builds it (gpu::request_from_plan), so the dialog and the CLI write the same bytes.
#include "core/plan/plan_file.h"
#include "gpu/rewrite.h"
#include "gpu/safetensors/checkpoint_info.h"
#include "views/jobs/rewrite_job.h"

#include <QDialog>
#include <QList>
#include <QMetaType>
#include <QString>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTextBrowser;
class QTimer;
class QVBoxLayout;

namespace routepack::views {

class JobTracker;

/// A saved plan the studio knows (a run of the open library), so that the rewrite dialog can name
/// the runs planned for the model of a chosen checkpoint.
struct KnownPlan {
    qint64 run = 0;
    QString trace, window;
    routepack::ModelDescription model;
};

/// The rewrite dialog: plan (a saved run's plan JSON, a shown plan, or a plan file), input checkpoint
/// (folder or .safetensors file), output folder (must not exist or be empty), direction, router
/// permutation, layer map (checked as typed, error shown inline), device (auto/cpu/cuda, with what the
/// machine has) and verify. Check shows the scheme, MoE layers, experts, moved tensors and bytes (or
/// the refusal in words); Rewrite runs with a progress bar and Cancel and shows the report. Use it
/// modeless or modal; startCheck() / startRewrite() are what the buttons do.
class RewriteDialog : public QDialog {
    Q_OBJECT
    friend struct RewriteDialogTestAccess;

public:
    explicit RewriteDialog(QWidget* parent = nullptr);
    ~RewriteDialog() override;

    /// Uses a plan given as JSON text (a saved run's Library::run_plan_json, or plan_to_json of an
    /// unsaved plan); `origin` names it in messages and in the output's provenance sidecar (e.g.
    /// "run 3 in demo.routepack"). False, with the error shown and the previous plan dropped, when it
    /// does not parse (parse_plan's checks).
    bool setPlanJson(const QString& json, const QString& origin);
    /// Reads and uses a plan file (`routepack plan --out`); origin = the path. False with the error shown
    /// ("<path>: not a regular file" for a folder, FIFO or device, refused unread).
    bool loadPlanFile(const QString& path);
    /// Reads and uses an expert map file instead of a plan (gpu::read_expert_map_file: routepack
    /// export-map output, SGLang / vLLM physical_to_logical_map, {moe_layers, placement}); origin = the
    /// path. Rows without layer ids take them from the checkpoint's config.json when the request is
    /// built (gpu::request_from_map). Drops the plan; loading a plan drops the map. False with the
    /// error shown when it does not parse.
    bool loadMapFile(const QString& path);
    bool hasPlan() const { return plan_ != nullptr; }
    bool hasMap() const { return map_ != nullptr; }

    /// The input checkpoint: a folder (shards + index, config.json) or one .safetensors file.
    void setInput(const QString& path);
    QString input() const;
    /// The output folder: must not exist or be empty (gpu::plan_rewrite checks it).
    void setOutput(const QString& path);
    QString output() const;
    /// Direction: false = apply the placement (logical -> physical), true = inverse.
    void setInverse(bool inverse);
    bool inverse() const;
    /// Also permute router rows and router biases (self-contained inference checkpoint).
    void setPermuteRouter(bool on);
    /// Layer map text, as `routepack rewrite --layer-map` ("" = the plan's layer ids); checked as set.
    void setLayerMap(const QString& text);
    /// "auto", "cpu" or "cuda".
    void setDevice(const QString& name);
    /// Re-read the output and compare every tensor with its source before the rename (default on).
    void setVerify(bool on);

    /// The request the dialog would run; nullopt with `error` set in words when a field is wrong (no
    /// plan, no input or output, the layer map's error, ...).
    std::optional<gpu::RewriteRequest> request(QString* error) const;
    /// Check: validates the fields and runs gpu::plan_rewrite on the worker; the answer is shown when it
    /// arrives (job()->checked). False, with the reason shown, when a field is wrong or a rewrite runs.
    bool startCheck();
    /// Rewrite: validates the fields and runs gpu::rewrite_checkpoint on the worker with progress. False,
    /// with the reason shown, when a field is wrong or a rewrite runs.
    bool startRewrite();
    /// Cancels the running rewrite (nothing is written).
    void cancelRewrite();

    RewriteJob* job() const { return job_; }
    /// The status line as shown.
    QString statusText() const;
    /// The check / report panel as plain text.
    QString summaryText() const;

    /// The saved plans of the open library (the studio passes every run with a plan).
    void setKnownPlans(std::vector<KnownPlan> plans);
    /// The note under the input, as plain text: which model the checkpoint is, and when the plan's
    /// model differs (experts, or the number of MoE layers), the saved runs planned for a model like
    /// the checkpoint's (or that there are none) and how to get a checkpoint of the plan's model
    /// (`routepack synth-checkpoint --model NAME --out DIR` for a shipped model, or the dialog's
    /// "Write a checkpoint of the plan's model…" button). "" before the checkpoint was read.
    QString checkpointNote() const;
    /// True when a checkpoint was read and its experts or MoE-layer count differ from the plan's.
    bool checkpointMismatch() const;
    /// Writes a synthetic checkpoint shaped like the plan's model (gpu::write_synth_checkpoint: HF
    /// names, BF16, tiny widths) into `folder` (must not exist or be empty) on a worker, then makes it
    /// the input (synthCheckpointWritten). False, with the reason shown, without a plan or while a
    /// rewrite or another write runs.
    bool writePlanModelCheckpoint(const QString& folder);

Q_SIGNALS:
    /// The input checkpoint was read (its model and checkpointNote() are up to date), or could not be
    /// (no model known).
    void checkpointDescribed();
    /// writePlanModelCheckpoint finished (`folder` is the input now), or failed (`folder` empty).
    void synthCheckpointWritten(const QString& folder);
    /// A rewrite finished; `output` holds the rewritten checkpoint.
    void rewritten(const QString& output);
    /// The device query answered (`description`: gpu::query_devices().description).
    void devicesQueried(const QString& description);

protected:
    /// Esc / Close while a rewrite runs cancels it first (the dialog stays open to show that).
    void reject() override;

private:
    /// Loads a plan through `load` (its errors shown in words); shared by setPlanJson and loadPlanFile.
    bool usePlan(const std::function<routepack::PlanFile()>& load, const QString& origin);
    // The parts of the constructor, top to bottom.
    void buildPlanRow(QFormLayout* form);
    /// The input and output rows; returns their browse buttons (input folder, input file, output).
    QList<QWidget*> buildCheckpointRows(QFormLayout* form);
    /// Direction, router permutation, layer map, device and verify.
    void buildOptionRows(QFormLayout* form);
    /// The summary, progress bar, status line and the buttons.
    void buildResultArea(QVBoxLayout* layout);
    void connectFields();
    /// What the RewriteJob reports: checks, progress, the end of a rewrite.
    void connectJob();
    /// Asks off the GUI thread which devices the machine has (the CUDA runtime may take a while).
    void queryDevices();
    void choosePlanFile();
    void chooseMapFile();
    void browseInputFolder();
    void browseInputFile();
    void browseOutput();
    void fieldsChanged();
    void updateLayerMapError();
    void setBusy(bool busy);
    void showPlanInfo();
    void showCheck(const RewriteCheck& c);
    void showOutcome(const RewriteOutcome& o);
    void showError(const QString& prefix, const QString& message);
    void showInfo(const QString& message);
    void suggestOutput();
    /// Reads the input checkpoint's model on a worker (debounced by describeTimer_).
    void describeInput();
    /// Shows checkpointNote() under the input and the synthetic-checkpoint button when it applies.
    void updateCheckpointNote();
    void chooseSynthFolder();

    RewriteJob* job_ = nullptr;
    JobTracker* devices_ = nullptr;                   ///< the device query (the CUDA runtime may take a while)
    std::shared_ptr<const routepack::PlanFile> plan_; ///< the plan in use (null when none)
    std::shared_ptr<const gpu::ExpertMapFile> map_;   ///< an expert map in place of plan_ (one of them at most)
    QString planOrigin_;                              ///< the plan's or the map's origin
    /// The last error in words, verbatim from the library that raised it ("" after a success); the
    /// layer map's error as gpu::parse_layer_map words it ("" when empty, valid, or no plan yet);
    /// gpu::query_devices().description once the (background) query answered, "" before.
    QString error_, layerMapError_, deviceDescription_;
    quint64 pendingCheck_ = 0;
    std::optional<RewriteCheck> lastCheck_;     ///< the last Check's answer (nullopt: none, or fields changed)
    std::optional<RewriteOutcome> lastOutcome_; ///< the last successful rewrite
    bool filling_ = false;
    JobTracker* describe_ = nullptr;   ///< reading the input checkpoint's model (latest input wins)
    JobTracker* synthWrite_ = nullptr; ///< writing a synthetic checkpoint of the plan's model
    QTimer* describeTimer_ = nullptr;  ///< debounces describeInput while the input is typed
    /// What the chosen input checkpoint is (gpu::describe_checkpoint, read on a worker shortly after the
    /// input changed; nullopt before it answered, or when it could not be read).
    std::optional<gpu::CheckpointModel> checkpointModel_;
    QString describedInput_; ///< the input checkpointModel_ (or describeError_) belongs to
    QString describeError_;
    std::vector<KnownPlan> knownPlans_;
    QLabel* checkpointNote_ = nullptr;
    QPushButton* synthButton_ = nullptr;

    QLabel* planInfo_ = nullptr;
    QPushButton* planButton_ = nullptr;
    QPushButton* mapButton_ = nullptr;
    QLineEdit* input_ = nullptr;
    QLineEdit* output_ = nullptr;
    QComboBox* direction_ = nullptr;
    QCheckBox* permuteRouter_ = nullptr;
    QLineEdit* layerMap_ = nullptr;
    QLabel* layerMapNote_ = nullptr;
    QComboBox* device_ = nullptr;
    QLabel* deviceInfo_ = nullptr;
    QCheckBox* verify_ = nullptr;
    QTextBrowser* summary_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    QPushButton* checkButton_ = nullptr;
    QPushButton* rewriteButton_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
    QPushButton* closeButton_ = nullptr;
    QList<QWidget*> fieldWidgets_;
};

} // namespace routepack::views
