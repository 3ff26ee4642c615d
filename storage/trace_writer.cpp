#include "core/util/errors.h"
#include "core/util/text.h"
#include "storage/counts_codec.h"
#include "storage/library_internal.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <stdexcept>
#include <unistd.h>

namespace routepack::storage::detail {

const char* length_rule_key(LengthRule r) {
    switch (r) {
    case LengthRule::ExplicitTokens:
        return "explicit-tokens";
    case LengthRule::RowsPlusOne:
        return "rows-plus-one";
    case LengthRule::Rows:
        return "rows";
    }
    return "rows-plus-one";
}

bool parse_length_rule_key(const std::string& key, LengthRule& out) {
    for (const LengthRule r : {LengthRule::ExplicitTokens, LengthRule::RowsPlusOne, LengthRule::Rows}) {
        if (key == length_rule_key(r)) {
            out = r;
            return true;
        }
    }
    return false;
}

std::int64_t ensure_model_row(sqlite3* db, const std::filesystem::path& file, const ModelDescription& model) {
    const std::string layers = nlohmann::json(model.moe_layers).dump();
    Statement find(db, file,
                   "SELECT id FROM models WHERE name = ?1 AND num_hidden_layers = ?2 AND experts = ?3 "
                   "AND top_k = ?4 AND moe_layers = ?5 AND source = ?6");
    find.bind(1, model.name).bind(2, model.num_hidden_layers).bind(3, model.experts).bind(4, model.top_k);
    find.bind(5, layers).bind(6, model.source);
    if (find.step()) return find.int64(0);
    Statement insert(db, file,
                     "INSERT INTO models (name, num_hidden_layers, experts, top_k, moe_layers, source) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    insert.bind(1, model.name).bind(2, model.num_hidden_layers).bind(3, model.experts).bind(4, model.top_k);
    insert.bind(5, layers).bind(6, model.source);
    insert.run();
    return sqlite3_last_insert_rowid(db);
}

TraceWriter::TraceWriter(sqlite3* db, std::filesystem::path file, std::string trace_name, ImportHooks hooks,
                         const std::atomic<bool>* cancel)
    : db_(db), file_(std::move(file)), name_(std::move(trace_name)), hooks_(hooks), cancel_(cancel) {}

TraceWriter::~TraceWriter() = default;

void TraceWriter::begin(const ModelDescription& model, TraceFormat format) {
    if (trace_id_ != 0) throw std::logic_error("TraceWriter::begin called twice");
    model_ = model;
    stride_ = static_cast<std::size_t>(model.num_moe_layers()) * static_cast<std::size_t>(model.experts);
    totals_.assign(stride_, 0);
    const std::int64_t model_id = ensure_model_row(db_, file_, model);
    {
        Statement exists(db_, file_, "SELECT 1 FROM traces WHERE name = ?1");
        exists.bind(1, name_);
        if (exists.step())
            throw InputError("trace '" + routepack::util::printable(name_) + "' already exists in " + file_.string());
    }
    Statement insert(db_, file_,
                     "INSERT INTO traces (name, format, load_only, model_id, imported_at) "
                     "VALUES (?1, ?2, ?3, ?4, ?5)");
    format_ = format;
    insert.bind(1, name_).bind(2, to_string(format)).bind(3, is_load_only(format) ? 1 : 0);
    insert.bind(4, model_id).bind(5, utc_now_iso8601());
    insert.run();
    trace_id_ = sqlite3_last_insert_rowid(db_);
    insert_sample_ = std::make_unique<Statement>(
        db_, file_,
        "INSERT INTO samples (trace_id, position, sample_id, length, routed_rows, prompt_len, request_id, "
        "group_id, source_file, length_rule, missing_routes, counts) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    insert_routes_ =
        std::make_unique<Statement>(db_, file_, "INSERT INTO sample_routes (sample_ref, routes) VALUES (?1, ?2)");
}

void TraceWriter::sample(SampleRecord&& record) {
    if (trace_id_ == 0) throw std::logic_error("TraceWriter::sample before begin");
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw Cancelled();
    if (load_only_)
        throw InputError(record.info.source_file + ": per-sample file in an aggregate (load-only) trace '" + name_ +
                         "'; import aggregate totals and samples as separate traces");
    if (record.counts.size() != stride_)
        throw std::logic_error("sample '" + record.info.id + "' has " + std::to_string(record.counts.size()) +
                               " counts, expected L*E = " + std::to_string(stride_));
    const SampleInfo& s = record.info;
    const std::vector<std::uint8_t> blob = encode_counts(record.counts);
    Statement& st = *insert_sample_;
    st.bind(1, trace_id_).bind(2, static_cast<std::int64_t>(written_)).bind(3, s.id).bind(4, s.length);
    st.bind(5, s.routed_rows).bind(6, s.prompt_len).bind(7, s.request_id).bind(8, s.group);
    st.bind(9, s.source_file).bind(10, length_rule_key(s.length_rule)).bind(11, s.missing_routes);
    st.bind_blob(12, blob);
    try {
        st.run();
    } catch (const std::runtime_error&) {
        const int code = sqlite3_extended_errcode(db_);
        st.reset();
        // The importer guarantees unique ids; say it clearly should a duplicate slip through.
        if (code == SQLITE_CONSTRAINT_UNIQUE)
            throw InputError(s.source_file + ": sample id '" + routepack::util::printable(s.id) +
                             "' occurs twice in trace '" + routepack::util::printable(name_) + "'");
        throw;
    }
    if (!record.routes.empty()) {
        if (record.routes.tokens != s.routed_rows)
            throw std::logic_error("sample '" + record.info.id + "' has routes of " +
                                   std::to_string(record.routes.tokens) + " tokens, routed_rows " +
                                   std::to_string(s.routed_rows));
        Statement& rt = *insert_routes_;
        rt.bind(1, static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_)))
            .bind_blob(2, encode_routes(record.routes));
        rt.run();
    }
    for (std::size_t k = 0; k < stride_; ++k)
        totals_[k] += record.counts[k];
    ++written_;
    if (hooks_.exit_after_samples > 0 && written_ == hooks_.exit_after_samples) ::_exit(3);
    if (hooks_.fail_after_samples > 0 && written_ == hooks_.fail_after_samples)
        throw std::runtime_error("injected failure after " + std::to_string(written_) + " samples");
}

void TraceWriter::aggregate(AggregateCounts&& counts) {
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw Cancelled();
    if (written_ > 0)
        throw InputError("aggregate totals (" + counts.source +
                         ") cannot join per-sample files in one trace; import them as a separate trace");
    if (trace_id_ == 0) begin(counts.model, TraceFormat::Aggregate);
    if (!load_only_ && !(counts.model == model_)) {
        // The aggregate file describes its own model; it wins over the one given to begin().
        model_ = counts.model;
        stride_ = static_cast<std::size_t>(model_.num_moe_layers()) * static_cast<std::size_t>(model_.experts);
        totals_.assign(stride_, 0);
        Statement update(db_, file_, "UPDATE traces SET model_id = ?1 WHERE id = ?2");
        update.bind(1, ensure_model_row(db_, file_, model_)).bind(2, trace_id_);
        update.run();
    } else if (load_only_ && !(counts.model == model_)) {
        throw InputError(counts.source + ": aggregate file's model (" + std::to_string(counts.model.num_moe_layers()) +
                         " x " + std::to_string(counts.model.experts) + ") differs from the trace's first file (" +
                         std::to_string(model_.num_moe_layers()) + " x " + std::to_string(model_.experts) + ")");
    }
    if (counts.totals.size() != stride_)
        throw std::logic_error("aggregate totals have " + std::to_string(counts.totals.size()) +
                               " entries, expected L*E = " + std::to_string(stride_));
    for (std::size_t k = 0; k < stride_; ++k)
        totals_[k] += counts.totals[k];
    if (!load_only_) {
        load_only_ = true;
        Statement update(db_, file_, "UPDATE traces SET load_only = 1, format = ?1 WHERE id = ?2");
        update.bind(1, to_string(is_load_only(format_) ? format_ : TraceFormat::Aggregate)).bind(2, trace_id_);
        update.run();
    }
    if (!counts.source.empty()) {
        if (!aggregate_source_.empty()) aggregate_source_ += "; ";
        aggregate_source_ += counts.source;
    }
}

void TraceWriter::finish(const ImportSummary& summary, const std::vector<std::filesystem::path>& files) {
    if (trace_id_ == 0 || (!load_only_ && written_ == 0)) {
        std::string where = files.empty() ? std::string("the inputs") : files.front().string();
        if (files.size() > 1) where += " and " + std::to_string(files.size() - 1) + " more files";
        throw InputError(where + ": no samples found; nothing imported as trace '" + routepack::util::printable(name_) +
                         "'");
    }
    Statement update(db_, file_,
                     "UPDATE traces SET sample_count = ?1, fingerprint = ?2, notes = ?3, file_count = ?4, "
                     "byte_count = ?5, missing_routes = ?6, min_length = ?7, max_length = ?8, mean_length = ?9 "
                     "WHERE id = ?10");
    update.bind(1, static_cast<std::int64_t>(written_)).bind(2, hex64(summary.fingerprint));
    update.bind(3, nlohmann::json(summary.notes).dump());
    update.bind(4, static_cast<std::int64_t>(files.size())).bind(5, static_cast<std::int64_t>(summary.bytes));
    update.bind(6, summary.missing_routes).bind(7, summary.min_length).bind(8, summary.max_length);
    update.bind(9, summary.mean_length).bind(10, trace_id_);
    update.run();

    Statement file_row(db_, file_, "INSERT INTO source_files (trace_id, position, path, size) VALUES (?1, ?2, ?3, ?4)");
    for (std::size_t k = 0; k < files.size(); ++k) {
        const auto size = routepack::trace_input_bytes(files[k]); // a padded-batch folder: its .npy files
        file_row.bind(1, trace_id_).bind(2, static_cast<std::int64_t>(k)).bind(3, files[k].string());
        file_row.bind(4, static_cast<std::int64_t>(size));
        file_row.run();
    }

    Statement totals(db_, file_, "INSERT INTO aggregate_totals (trace_id, source, totals) VALUES (?1, ?2, ?3)");
    totals.bind(1, trace_id_).bind(2, aggregate_source_).bind_blob(3, encode_totals(totals_));
    totals.run();
}

} // namespace routepack::storage::detail
