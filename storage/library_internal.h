#pragma once
// Internal to routepack_storage (and its tests): the import sink that writes a trace into an open
// transaction as samples stream from routepack::import_trace, and the row helpers it shares
// with Library.
#include "core/import/import.h"
#include "storage/library.h"
#include "storage/sqlite_util.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace routepack::storage::detail {

/// Stable names of LengthRule in the samples.length_rule column (independent of to_string, so that
/// renaming an enum in core never changes the file format).
const char* length_rule_key(LengthRule r);
/// Inverse of length_rule_key; false when `key` is unknown.
bool parse_length_rule_key(const std::string& key, LengthRule& out);

/// Attaches trash file `trash` as schema "trash" (creating its items table) for the object's life;
/// nothing for an empty path. Outside any transaction (SQLite cannot attach inside one).
class TrashAttachment {
public:
    TrashAttachment(sqlite3* db, const std::filesystem::path& file, const std::filesystem::path& trash);
    ~TrashAttachment();
    TrashAttachment(const TrashAttachment&) = delete;
    TrashAttachment& operator=(const TrashAttachment&) = delete;
    bool attached() const { return attached_; }

private:
    sqlite3* db_;
    std::filesystem::path file_;
    bool attached_ = false;
};
/// Copies the rows deleting `kind` ("trace", "window", "run") `entity` (its id) will remove into the
/// attached trash as one item described by `what`, inside the caller's transaction; returns the item.
std::int64_t trash_rows(sqlite3* db, const std::filesystem::path& file, const std::string& kind, std::int64_t entity,
                        const std::string& what);

/// The whole_runs.settings text of `s` (seed, budgets, start, chained).
std::string whole_run_settings_json(const WholeRunSettings& s);
/// Inserts whole run `spec` with steps `run_ids` into the caller's transaction (Library::save_whole_run's
/// checks and errors); returns its id.
std::int64_t insert_whole_run(sqlite3* db, const std::filesystem::path& file, const WholeRunSpec& spec,
                              const std::vector<std::int64_t>& run_ids);

/// Returns the id of the models row equal to `model` (all fields), inserting it when absent.
std::int64_t ensure_model_row(sqlite3* db, const std::filesystem::path& file, const ModelDescription& model);

/// Test hooks of one import (see Library::set_fail_after_samples_for_testing).
struct ImportHooks {
    /// > 0: throw std::runtime_error("injected failure after n samples") once n samples are written.
    std::size_t fail_after_samples = 0;
    /// > 0: _exit(3) once n samples are written, i.e. die mid-transaction like a killed process.
    /// Library::import_trace takes it from the environment variable ROUTEPACK_TEST_EXIT_AFTER_SAMPLES.
    std::size_t exit_after_samples = 0;
};

/// Writes one trace. The caller owns the transaction (BEGIN IMMEDIATE before constructing, COMMIT
/// after finish(), ROLLBACK when anything throws). begin() inserts the traces row, sample() inserts
/// one samples row per record (counts as one LEB128 blob), aggregate() keeps load-only totals;
/// finish() completes the traces row, source_files and aggregate_totals from the import summary.
class TraceWriter final : public ImportSink {
public:
    TraceWriter(sqlite3* db, std::filesystem::path file, std::string trace_name, ImportHooks hooks = {},
                const std::atomic<bool>* cancel = nullptr);
    ~TraceWriter() override;

    void begin(const ModelDescription& model, TraceFormat format) override;
    /// InputError when the trace is load-only; std::logic_error when counts do not have L*E entries.
    void sample(SampleRecord&& record) override;
    /// Sums totals of one aggregate file ([L][E], same shape for every file). InputError when
    /// samples were already written.
    void aggregate(AggregateCounts&& counts) override;

    /// Completes the trace: summary fields, fingerprint (hex64), notes, the source files (path and
    /// size in bytes, in order) and the [L][E] totals. InputError when nothing was imported.
    void finish(const ImportSummary& summary, const std::vector<std::filesystem::path>& files);

    std::int64_t trace_id() const { return trace_id_; }

private:
    sqlite3* db_;
    std::filesystem::path file_;
    std::string name_;
    ImportHooks hooks_;
    const std::atomic<bool>* cancel_;
    std::int64_t trace_id_ = 0;
    ModelDescription model_;
    std::size_t stride_ = 0; ///< L*E
    bool load_only_ = false;
    TraceFormat format_ = TraceFormat::Auto; ///< the format begin() was given
    std::string aggregate_source_;
    std::size_t written_ = 0;
    std::vector<std::uint64_t> totals_; ///< [L][E]
    std::unique_ptr<Statement> insert_sample_;
    std::unique_ptr<Statement> insert_routes_; ///< sample_routes rows (samples whose source has routes)
};

} // namespace routepack::storage::detail
