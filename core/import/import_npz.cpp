// Plain .npy files and .npz archives of routes (trace-formats.md §4: "plain .npy/.npz").
//
// .npy: one array [rows][layers][top_k] = one sample, id = file stem, t_i = rows + 1 (rule 1).
// .npz: a zip archive (entries stored or deflated, as numpy.savez / savez_compressed write them);
//   every file entry is one .npy sample in archive order, id "<stem>#<k>", request_id = the entry
//   name without ".npy". Directory entries are skipped.
// Layer axis from shape[1] via resolve_layer_axis (all layers or MoE only); dtype from the header.
//
// Padded batches: an .npz holding an entry "routed_experts" is one saved training batch, a 4-D
// array [B][S][layers][top_k], each batch row b a sample "<stem>#<b>" (request_id "row <b>"):
//   - verl (verl-project/verl 1dda039b, verl/experimental/agent_loop/agent_loop.py,
//     verl/utils/megatron/router_replay_utils.py): int16 [B, prompt_len + response_len,
//     num_hidden_layers, top_k], each sample placed at its left-padded prompt start, zeros
//     elsewhere, beside attention_mask [B, S] (and responses [B, R]). The sample's tokens are the
//     positions whose mask is non-zero, t_i = their count; the rows at all of them but the last are
//     its t_i - 1 routes (the last token is never forwarded, its row is 0); zero rows elsewhere are
//     padding, never routes (for top-1 models they would read as expert 0). prompt_len = masked
//     positions before S - R when responses is saved.
//   - AReaL (areal-project/AReaL d3fbc53c, areal/engine/r3/preprocess.py): int32 [B, S,
//     num_moe_layers, K] with r3_routing_valid [B]: sample b fills rows [0, seq_len), the last row
//     (and any missing one) a copy of the nearest earlier non-zero row, zeros after. seq_len = the
//     attention_mask count when saved, else the last non-zero row + 1 (refused for top-1, where a
//     route to expert 0 is a zero row); routes = rows [0, seq_len - 1), t_i = seq_len. Rows whose
//     r3_routing_valid is false hold filled-in copies and are skipped with a note.
//   Batch rows whose attention_mask is all zero are skipped with a note. The routes entry is read
//   one batch row at a time (never the whole array), so batches of any size stream.
// A torch.save file (a zip holding data.pkl) is refused with a hint to save with np.savez.
#include "core/import/import_detail.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace routepack::detail {

namespace {

std::string shape_str(const std::vector<std::int64_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) s += ",";
    return s + ")";
}

/// Turns one decoded array into a sample and emits it. `where` = "<path>: sample <id>[: entry ...]".
void emit_npy_sample(NpyArray&& a, RouteArray& routes, const ModelDescription& m, SampleMeta&& meta,
                     const std::string& where, const EmitFn& emit) {
    if (a.shape.size() != 3)
        throw InputError(where + ": array has shape " + shape_str(a.shape) + ", expected [rows][layers][top_k]");
    if (a.shape[1] > INT32_MAX || a.shape[2] > INT32_MAX)
        throw InputError(where + ": array has shape " + shape_str(a.shape) + ", too large");
    routes.rows = a.shape[0];
    routes.axis_layers = static_cast<int>(a.shape[1]);
    routes.top_k = static_cast<int>(a.shape[2]);
    routes.ids.swap(a.values);
    routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where);
    meta.rows_rule = LengthRule::RowsPlusOne;
    emit(make_sample_record(routes, m, meta));
}

struct ZipCloser {
    void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
    void operator()(zip_file_t* z) const { zip_fclose(z); }
};

// Largest uncompressed entry accepted (a hostile archive may declare anything).
constexpr zip_uint64_t kMaxEntryBytes = zip_uint64_t(2) << 30;
// Deflate expands at most ~1032:1; an entry declaring more than that (plus slack for tiny
// entries) is a lie or a bomb, refused before anything is read.
constexpr zip_uint64_t kMaxRatio = 1032;
constexpr zip_uint64_t kRatioSlack = zip_uint64_t(1) << 20;
constexpr std::size_t kReadChunk = std::size_t(1) << 20;

// Largest routes entry of a padded batch (verl B 1024 x S 8192 x 48 x top-8 int16 is 6.4 GB).
constexpr zip_uint64_t kMaxBatchEntryBytes = zip_uint64_t(1) << 40;

/// Sequential reads of one archive entry with its declared size checked.
class EntryReader {
public:
    EntryReader(zip_t* za, zip_uint64_t index, const zip_stat_t& st, const std::string& where)
        : where_(where), declared_(st.size), zf_(zip_fopen_index(za, index, 0)) {
        if (!zf_) throw InputError(where + ": " + printable(zip_strerror(za)));
    }
    /// Reads up to n bytes (fewer only at the end of the entry).
    std::size_t read(char* dst, std::size_t n) {
        std::size_t got = 0;
        while (got < n) {
            const zip_int64_t r = zip_fread(zf_.get(), dst + got, n - got);
            if (r < 0) throw InputError(where_ + ": " + printable(zip_file_strerror(zf_.get())));
            if (r == 0) break;
            got += static_cast<std::size_t>(r);
            total_ += static_cast<zip_uint64_t>(r);
            if (total_ > declared_) throw InputError(where_ + ": holds more data than its declared size");
        }
        return got;
    }
    /// Reads to the end (so that libzip checks the CRC) and checks the size.
    void finish() {
        char b[4096];
        while (read(b, sizeof b) > 0) {
        }
        if (total_ != declared_)
            throw InputError(where_ + ": truncated entry (" + std::to_string(total_) + " of " +
                             std::to_string(declared_) + " bytes)");
    }

private:
    std::string where_;
    zip_uint64_t declared_ = 0, total_ = 0;
    std::unique_ptr<zip_file_t, ZipFileCloser> zf_;
};

/// Reads an .npy header from the reader; `buf` keeps the bytes read past it.
NpyHeaderInfo read_header(EntryReader& in, std::string& buf, const std::string& where) {
    buf.clear();
    for (;;) {
        const std::size_t at = buf.size();
        buf.resize(at + 4096);
        const std::size_t got = in.read(buf.data() + at, 4096);
        buf.resize(at + got);
        if (auto h = read_npy_header(buf, where)) {
            buf.erase(0, h->data_start);
            return *h;
        }
        if (got == 0) throw InputError(where + ": truncated .npy header");
    }
}

/// Checks one archive entry's declared sizes (as the per-sample loop does).
void check_entry_sizes(const zip_stat_t& st, const std::string& where, zip_uint64_t limit) {
    if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE)) throw InputError(where + ": size unknown");
    if (st.size > limit)
        throw InputError(where + ": declares " + std::to_string(st.size) + " bytes, more than the " +
                         std::to_string(limit) + "-byte limit per entry");
    const bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
    if (stored ? st.size != st.comp_size : st.size > kMaxRatio * st.comp_size + kRatioSlack)
        throw InputError(where + ": declares " + std::to_string(st.size) + " bytes from " +
                         std::to_string(st.comp_size) + " bytes in the archive, more than " +
                         (stored ? std::string("a stored entry holds") : "compression can expand to"));
}

std::string row_list(const std::vector<std::int64_t>& rows) {
    std::string s;
    for (std::size_t i = 0; i < rows.size() && i < 10; ++i)
        s += (i ? ", " : "") + std::to_string(rows[i]);
    if (rows.size() > 10) s += ", ...";
    return s;
}

/// One padded batch archive (see the file comment). `entries` maps entry names without ".npy"
/// to archive indices.
void parse_npz_batch(zip_t* za, const std::map<std::string, zip_uint64_t>& entries, const SourceFile& f,
                     const ModelDescription& m, const EmitFn& emit) {
    const std::string path = f.path.string();
    auto stat_of = [&](zip_uint64_t index, const std::string& where) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(za, index, 0, &st) != 0) throw InputError(where + ": " + printable(zip_strerror(za)));
        return st;
    };
    // A small array (mask, validity, token ids) read whole.
    auto small = [&](const std::string& name, NpyArray& out) -> bool {
        const auto it = entries.find(name);
        if (it == entries.end()) return false;
        const std::string where = path + ": entry '" + name + "'";
        const zip_stat_t st = stat_of(it->second, where);
        check_entry_sizes(st, where, kMaxEntryBytes);
        EntryReader in(za, it->second, st, where);
        std::string buf(static_cast<std::size_t>(st.size), '\0');
        buf.resize(in.read(buf.data(), buf.size()));
        in.finish();
        out = parse_npy(buf, where, true);
        return true;
    };

    const std::string rwhere = path + ": entry 'routed_experts'";
    NpyArray mask, valid, responses;
    const bool have_mask = small("attention_mask", mask);
    const bool have_valid = small("r3_routing_valid", valid);
    const auto resp_it = entries.find("responses");

    const zip_stat_t st = stat_of(entries.at("routed_experts"), rwhere);
    check_entry_sizes(st, rwhere, kMaxBatchEntryBytes);
    EntryReader in(za, entries.at("routed_experts"), st, rwhere);
    std::string pending;
    const NpyHeaderInfo h = read_header(in, pending, rwhere);
    if (h.shape.size() != 4)
        throw InputError(rwhere + ": has " + std::to_string(h.shape.size()) +
                         " dimensions, expected a padded batch [batch][tokens][layers][top_k]");
    if (h.fortran)
        throw InputError(rwhere + ": is stored in Fortran order; save a C-order array (np.ascontiguousarray)");
    if (!have_mask && !have_valid)
        throw InputError(rwhere + ": a padded batch [B, S, layers, top_k] needs attention_mask [B, S] (verl) or "
                                  "r3_routing_valid [B] (AReaL) beside it in the archive to tell routes from padding");
    const std::int64_t B = h.shape[0], S = h.shape[1];
    if (h.shape[2] > INT32_MAX || h.shape[3] > INT32_MAX) throw InputError(rwhere + ": shape too large");
    const int L = static_cast<int>(h.shape[2]), K = static_cast<int>(h.shape[3]);
    if (have_mask && (mask.shape.size() != 2 || mask.shape[0] != B || mask.shape[1] != S))
        throw InputError(path + ": entry 'attention_mask' has shape " + shape_str(mask.shape) + ", expected " +
                         shape_str({B, S}) + " to match routed_experts " + shape_str(h.shape));
    if (have_valid && (valid.shape.size() != 1 || valid.shape[0] != B))
        throw InputError(path + ": entry 'r3_routing_valid' has shape " + shape_str(valid.shape) + ", expected " +
                         shape_str({B}) + " (one flag per batch row)");
    if (have_valid && !have_mask && K == 1)
        throw InputError(rwhere + ": top-1 routes to expert 0 cannot be told from zero padding: save attention_mask "
                                  "beside r3_routing_valid");
    std::int64_t prompt_area = -1; // S - R when responses [B, R] is saved
    if (resp_it != entries.end()) {
        const std::string where = path + ": entry 'responses'";
        const zip_stat_t rst = stat_of(resp_it->second, where);
        check_entry_sizes(rst, where, kMaxEntryBytes);
        EntryReader rin(za, resp_it->second, rst, where);
        std::string rbuf;
        const NpyHeaderInfo rh = read_header(rin, rbuf, where);
        rin.finish();
        if (rh.shape.size() == 2 && rh.shape[0] == B && rh.shape[1] <= S) prompt_area = S - rh.shape[1];
    }

    const std::size_t width = static_cast<std::size_t>(L) * static_cast<std::size_t>(K);
    std::size_t row_values = 0, row_bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(S), width, &row_values) ||
        __builtin_mul_overflow(row_values, static_cast<std::size_t>(h.type.size), &row_bytes) ||
        row_values > kMaxRouteValues)
        throw InputError(rwhere + ": one batch row of " + std::to_string(S) + " x " + std::to_string(L) + " x " +
                         std::to_string(K) + " values is more than the per-sample limit of " +
                         std::to_string(kMaxRouteValues));
    std::vector<std::int32_t> row(row_values);
    std::string raw(row_bytes, '\0');
    RouteArray routes;
    routes.axis_layers = L;
    routes.top_k = K;
    routes.axis_layer_ids = resolve_layer_axis(L, m, rwhere);
    const std::string stem = f.stem();
    std::vector<std::int64_t> empty_rows, invalid_rows, short_rows;
    std::vector<std::int64_t> positions;
    for (std::int64_t b = 0; b < B; ++b) {
        // Bytes already read past the header first, then the rest of the row.
        const std::size_t from_pending = std::min(pending.size(), row_bytes);
        std::memcpy(raw.data(), pending.data(), from_pending);
        pending.erase(0, from_pending);
        const std::size_t got = from_pending + in.read(raw.data() + from_pending, row_bytes - from_pending);
        if (got != row_bytes)
            throw InputError(rwhere + ": truncated .npy data: batch row " + std::to_string(b) + " has " +
                             std::to_string(got) + " of " + std::to_string(row_bytes) + " bytes");
        const std::size_t bad = convert_wire_ints(raw.data(), row_values, h.type, row.data());
        if (bad != row_values)
            throw InputError(rwhere + ": value " + wire_value_text(raw.data(), bad, h.type) + " in batch row " +
                             std::to_string(b) + " does not fit int32");

        positions.clear();
        if (have_mask) {
            for (std::int64_t s = 0; s < S; ++s)
                if (mask.values[static_cast<std::size_t>(b * S + s)] != 0) positions.push_back(s);
        } else {
            std::int64_t last = -1;
            for (std::int64_t s = 0; s < S; ++s) {
                const std::int32_t* r = row.data() + static_cast<std::size_t>(s) * width;
                if (std::any_of(r, r + width, [](std::int32_t v) { return v != 0; })) last = s;
            }
            for (std::int64_t s = 0; s <= last; ++s)
                positions.push_back(s);
        }
        if (positions.empty()) {
            empty_rows.push_back(b);
            continue;
        }
        if (have_valid && valid.values[static_cast<std::size_t>(b)] == 0) {
            invalid_rows.push_back(b);
            continue;
        }
        if (positions.size() < 2) {
            short_rows.push_back(b);
            continue;
        }
        routes.rows = static_cast<std::int64_t>(positions.size()) - 1;
        routes.ids.resize(static_cast<std::size_t>(routes.rows) * width);
        for (std::int64_t r = 0; r < routes.rows; ++r)
            std::memcpy(routes.ids.data() + static_cast<std::size_t>(r) * width,
                        row.data() + static_cast<std::size_t>(positions[static_cast<std::size_t>(r)]) * width,
                        width * sizeof(std::int32_t));
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(b);
        meta.source_file = path;
        meta.request_id = "row " + std::to_string(b);
        meta.rows_rule = LengthRule::RowsPlusOne;
        if (prompt_area >= 0) {
            std::int64_t p = 0;
            for (const std::int64_t s : positions)
                p += s < prompt_area;
            meta.prompt_len = p;
        }
        emit(make_sample_record(routes, m, meta));
    }
    in.finish();
    if (!empty_rows.empty())
        add_import_note(path + ": skipped " + std::to_string(empty_rows.size()) + " batch rows whose " +
                        (have_mask ? "attention_mask is all zero" : "routes are all zero") + " (rows " +
                        row_list(empty_rows) + ")");
    if (!invalid_rows.empty())
        add_import_note(path + ": skipped " + std::to_string(invalid_rows.size()) +
                        " batch rows marked invalid by r3_routing_valid (rows " + row_list(invalid_rows) + ")");
    if (!short_rows.empty())
        add_import_note(path + ": skipped " + std::to_string(short_rows.size()) +
                        " batch rows of a single token, which has no routed row (rows " + row_list(short_rows) + ")");
}

} // namespace

void parse_npy_file(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    if (f.bytes.empty()) throw InputError(f.path.string() + ": empty file");
    SampleMeta meta;
    meta.id = f.stem();
    meta.source_file = f.path.string();
    const std::string where = sample_where(f, meta.id);
    RouteArray routes;
    emit_npy_sample(parse_npy(f.bytes, where), routes, m, std::move(meta), where, emit);
}

void parse_npz(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string path = f.path.string();
    if (f.bytes.empty()) throw InputError(path + ": empty file");
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t* src = zip_source_buffer_create(f.bytes.data(), f.bytes.size(), 0, &err);
    if (!src) {
        const std::string msg = zip_error_strerror(&err);
        zip_error_fini(&err);
        throw InputError(path + ": cannot read the .npz archive: " + msg);
    }
    std::unique_ptr<zip_t, ZipCloser> za(zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err));
    if (!za) {
        zip_source_free(src);
        const std::string msg = zip_error_strerror(&err);
        zip_error_fini(&err);
        throw InputError(path + ": not a valid .npz (zip) archive: " + msg);
    }
    zip_error_fini(&err);

    const std::string stem = f.stem();
    const zip_int64_t n = zip_get_num_entries(za.get(), 0);
    std::map<std::string, zip_uint64_t> names; // without ".npy"
    for (zip_int64_t i = 0; i < n; ++i) {
        const char* nm = zip_get_name(za.get(), static_cast<zip_uint64_t>(i), 0);
        if (!nm) continue;
        const std::string name = nm;
        if (name == "data.pkl" || name.ends_with("/data.pkl")) throw InputError(path + ": " + kPickleHint);
        names.emplace(name.ends_with(".npy") ? name.substr(0, name.size() - 4) : name, static_cast<zip_uint64_t>(i));
    }
    if (names.count("routed_experts")) {
        parse_npz_batch(za.get(), names, f, m, emit);
        return;
    }
    std::size_t k = 0;
    std::string buf;
    RouteArray routes;
    for (zip_int64_t i = 0; i < n; ++i) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(za.get(), static_cast<zip_uint64_t>(i), 0, &st) != 0)
            throw InputError(path + ": entry " + std::to_string(i) + ": " + printable(zip_strerror(za.get())));
        const std::string name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "entry" + std::to_string(i);
        if (!name.empty() && name.back() == '/') continue; // directory

        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(k++);
        meta.source_file = path;
        meta.request_id = name.size() > 4 && name.ends_with(".npy") ? name.substr(0, name.size() - 4) : name;
        const std::string where = sample_where(f, meta.id) + ": entry '" + printable(name) + "'";
        if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE)) throw InputError(where + ": size unknown");
        if (st.size > kMaxEntryBytes)
            throw InputError(where + ": declares " + std::to_string(st.size) + " bytes, more than the " +
                             std::to_string(kMaxEntryBytes) + "-byte limit per entry");
        const bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
        if (stored ? st.size != st.comp_size : st.size > kMaxRatio * st.comp_size + kRatioSlack)
            throw InputError(where + ": declares " + std::to_string(st.size) + " bytes from " +
                             std::to_string(st.comp_size) + " bytes in the archive, more than " +
                             (stored ? std::string("a stored entry holds") : "compression can expand to"));

        std::unique_ptr<zip_file_t, ZipFileCloser> zf(zip_fopen_index(za.get(), static_cast<zip_uint64_t>(i), 0));
        if (!zf) throw InputError(where + ": " + printable(zip_strerror(za.get())));
        // Read in chunks until the end (so that libzip checks the CRC): memory follows the data
        // actually there, never the declared size.
        buf.clear();
        bool header_checked = false;
        for (;;) {
            const std::size_t at = buf.size();
            buf.resize(at + kReadChunk);
            const zip_int64_t r = zip_fread(zf.get(), buf.data() + at, kReadChunk);
            if (r < 0) {
                buf.resize(at);
                throw InputError(where + ": " + printable(zip_file_strerror(zf.get())));
            }
            buf.resize(at + static_cast<std::size_t>(r));
            if (buf.size() > st.size) throw InputError(where + ": holds more data than its declared size");
            // Refuse an array over the per-sample limit from its header, before reading its data.
            if (!header_checked && r > 0) header_checked = npy_header_checked(buf, where);
            if (r == 0) break;
        }
        if (buf.size() != st.size)
            throw InputError(where + ": truncated entry (" + std::to_string(buf.size()) + " of " +
                             std::to_string(st.size) + " bytes)");
        emit_npy_sample(parse_npy(buf, where), routes, m, std::move(meta), where, emit);
    }
    if (k == 0) throw InputError(path + ": the .npz archive holds no arrays");
}

} // namespace routepack::detail
