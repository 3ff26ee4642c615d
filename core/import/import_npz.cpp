// Plain .npy files and .npz archives of routes (trace-formats.md §4: "plain .npy/.npz").
//
// .npy: one array [rows][layers][top_k] = one sample, id = file stem, t_i = rows + 1 (rule 1).
// .npz: a zip archive (entries stored or deflated, as numpy.savez / savez_compressed write them);
//   every file entry is one .npy sample in archive order, id "<stem>#<k>", request_id = the entry
//   name without ".npy". Directory entries are skipped.
// Layer axis from shape[1] via resolve_layer_axis (all layers or MoE only); dtype from the header.
//
// Padded batches: an .npz holding an entry "routed_experts", or a folder holding
// routed_experts.npy beside the other arrays as .npy files (np.save of each tensor), is one saved
// training batch, a 4-D array [B][S][layers][top_k], each batch row b a sample "<stem>#<b>" (stem
// = the archive's or the folder's name; request_id "row <b>"). Both forms read the same arrays
// the same way: same samples, counts and notes; errors name "<archive>: entry '<name>'" or the
// .npy file.
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
//   Batch rows whose attention_mask is all zero are skipped with a note. The routes, the mask and
//   the validity flags are read from the file one batch row at a time (a stored entry or an .npy
//   file straight from the disk, a deflated entry through an incremental inflate), never whole, and
//   the mask and flags are tested as stored (non-zero bytes), never widened: memory holds one batch
//   row of each and the current sample, whatever the batch size.
// Hostile archives (numpy .npy format spec; zip APPNOTE 4.4.8-4.4.9 sizes): before any member's
// data is inflated, only its .npy header is read (preamble, then exactly the declared header
// length, at most 128 KiB), and a member whose directory entry declares more bytes than the header
// accounts for (header + shape x item size: trailing data, e.g. a gigabyte of zeros after a valid
// array) is refused, as is one whose declared size is beyond the per-entry limit or beyond what
// deflate can expand its compressed bytes to (1032:1). A batch's arrays are checked against the
// routes' shape ([B, S], [B]) from their headers alone; responses is used for its shape only and
// its data is never inflated; members the importer does not use are never opened.
// A torch.save file (a zip holding data.pkl) is refused with a hint to save with np.savez.
// verl's per-sample AgentLoopOutput.as_dict() arrays (verl-project/verl 1dda039b
// verl/experimental/agent_loop/agent_loop.py) saved with np.savez: routed_experts [prompt +
// response, layers, top_k] beside prompts and responses (no attention_mask) is one sample, id =
// the archive's stem, t_i = prompt + response tokens, prompt_len = prompts; its routes are aligned
// to every token, zero rows from the last recorded one on (parse_agent_loop_sample). A plain
// array of top-k >= 2 whose last row is all zero is read the same way (expert 0 listed k times is
// never a route): t_i = rows. A top-1 array alone cannot show its fill: save prompts and responses
// beside it.
#include "core/import/import_detail.h"

#include "core/util/input_file.h"

#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

namespace routepack::detail {

namespace {

std::string shape_str(const std::vector<std::int64_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) s += ",";
    return s + ")";
}

/// Whether routes row `r` holds only zeros (every layer, every slot).
bool zero_row(const RouteArray& routes, std::int64_t r) {
    const std::size_t width = static_cast<std::size_t>(routes.axis_layers) * static_cast<std::size_t>(routes.top_k);
    const auto* row = routes.ids.data() + static_cast<std::size_t>(r) * width;
    return std::all_of(row, row + width, [](std::int32_t v) { return v == 0; });
}

/// Routes aligned to all of a sample's tokens, as verl's AgentLoopOutput.as_dict writes them
/// (verl-project/verl 1dda039b verl/experimental/agent_loop/agent_loop.py: zero rows from the
/// last recorded one to prompt + response): drops the last row (the final token is never
/// forwarded; verl's build_r3_replay_mask never replays it) and, for top-k >= 2, marks the zero
/// rows before it as missing (-1): expert 0 listed k times is never a route, only the fill of
/// tokens the engine did not record (multi-turn tool responses after the last generation).
/// Returns how many rows were marked.
std::int64_t drop_as_dict_fill(RouteArray& routes) {
    if (routes.rows == 0) return 0;
    --routes.rows;
    const std::size_t width = static_cast<std::size_t>(routes.axis_layers) * static_cast<std::size_t>(routes.top_k);
    routes.ids.resize(static_cast<std::size_t>(routes.rows) * width);
    std::int64_t marked = 0;
    if (routes.top_k < 2) return 0;
    for (std::int64_t r = routes.rows - 1; r >= 0 && zero_row(routes, r); --r, ++marked)
        std::fill_n(routes.ids.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * width), width, -1);
    return marked;
}

/// InputError "<where>: 134217728 rows (tokens) are more than the per-sample limit of 16777216" when a
/// sample's declared replay rows pass kMaxRouteRows (checked from a header, before its data is read).
void check_route_rows(std::int64_t rows, const std::string& where) {
    if (rows > kMaxRouteRows)
        throw InputError(where + ": " + std::to_string(rows) + " rows (tokens) are more than the per-sample limit of " +
                         std::to_string(kMaxRouteRows));
}

/// Turns one decoded array into a sample and emits it. `where` = "<path>: sample <id>[: entry ...]".
/// For top-k >= 2 an all-zero last row is verl's as_dict fill (drop_as_dict_fill): the array spans
/// the sample's tokens, t_i = rows; otherwise t_i = rows + 1.
void emit_npy_sample(NpyArray&& a, RouteArray& routes, const ModelDescription& m, SampleMeta&& meta,
                     const std::string& where, const EmitFn& emit) {
    if (a.shape.size() != 3)
        throw InputError(where + ": array has shape " + shape_str(a.shape) + ", expected [rows][layers][top_k]");
    if (a.shape[1] > INT32_MAX || a.shape[2] > INT32_MAX)
        throw InputError(where + ": array has shape " + shape_str(a.shape) + ", too large");
    check_route_rows(a.shape[0], where);
    routes.rows = a.shape[0];
    routes.axis_layers = static_cast<int>(a.shape[1]);
    routes.top_k = static_cast<int>(a.shape[2]);
    routes.ids.swap(a.values);
    routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where);
    meta.rows_rule = LengthRule::RowsPlusOne;
    if (routes.top_k == 1 && routes.rows > 1 && zero_row(routes, routes.rows - 1))
        add_import_note(where + ": the last row routes to expert 0 at every layer; with top-1 routes it cannot be "
                                "told from the all-zero fill of verl's AgentLoopOutput.as_dict, so it is counted as "
                                "routed to expert 0 (t_i = rows + 1)");
    if (routes.top_k >= 2 && routes.rows > 0 && zero_row(routes, routes.rows - 1)) {
        const std::int64_t rows = routes.rows;
        const std::int64_t marked = drop_as_dict_fill(routes);
        add_import_note(where + ": the last " + (marked ? std::to_string(marked + 1) + " rows are" : "row is") +
                        " all zero, the fill of verl's AgentLoopOutput.as_dict (routes aligned to prompt + response): "
                        "t_i = " +
                        std::to_string(rows) + " rows, the last one never forwarded" +
                        (marked ? ", the other zero rows missing routes" : ""));
    }
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
// Real routing arrays compress a few times (padding more): above 64 MiB an entry may expand at most
// 100:1. A legit-shaped archive of one repeated value passes deflate's own limit and would otherwise
// cost gigabytes from a file of one megabyte.
constexpr zip_uint64_t kBombBytes = zip_uint64_t(64) << 20;
constexpr zip_uint64_t kMaxDataRatio = 100;

// Largest routes entry of a padded batch (verl B 1024 x S 8192 x 48 x top-8 int16 is 6.4 GB).
constexpr zip_uint64_t kMaxBatchEntryBytes = zip_uint64_t(1) << 40;

/// Sequential reads of one array's bytes: an archive entry or an .npy file.
class ArrayStream {
public:
    virtual ~ArrayStream() = default;
    /// Reads up to n bytes (fewer only at the end of the array).
    virtual std::size_t read(char* dst, std::size_t n) = 0;
    /// Reads to the end (an archive entry: so that libzip checks the CRC) and checks the size.
    virtual void finish() = 0;
    /// Bytes the array declares (entry size, file size).
    virtual std::uint64_t size() const = 0;
};

/// Sequential reads of one archive entry with its declared size checked.
class EntryReader final : public ArrayStream {
public:
    EntryReader(zip_t* za, zip_uint64_t index, const zip_stat_t& st, const std::string& where)
        : where_(where), declared_(st.size), zf_(zip_fopen_index(za, index, 0)) {
        if (!zf_) throw InputError(where + ": " + printable(zip_strerror(za)));
    }
    std::size_t read(char* dst, std::size_t n) override {
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
    void finish() override {
        char b[4096];
        while (read(b, sizeof b) > 0) {
        }
        if (total_ != declared_)
            throw InputError(where_ + ": truncated entry (" + std::to_string(total_) + " of " +
                             std::to_string(declared_) + " bytes)");
    }
    std::uint64_t size() const override { return declared_; }

private:
    std::string where_;
    zip_uint64_t declared_ = 0, total_ = 0;
    std::unique_ptr<zip_file_t, ZipFileCloser> zf_;
};

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

/// Sequential reads of one .npy file of a padded-batch folder, straight from the disk.
class NpyFileReader final : public ArrayStream {
public:
    NpyFileReader(const std::filesystem::path& p, std::uint64_t size, const std::string& where)
        : where_(where), size_(size), f_(std::fopen(p.c_str(), "rb")) {
        if (!f_) throw InputError(where + ": cannot open (" + std::strerror(errno) + ")");
    }
    std::size_t read(char* dst, std::size_t n) override {
        const std::size_t got = std::fread(dst, 1, n, f_.get());
        if (got < n && std::ferror(f_.get())) throw InputError(where_ + ": read error");
        return got;
    }
    void finish() override {}
    std::uint64_t size() const override { return size_; }

private:
    std::string where_;
    std::uint64_t size_ = 0;
    std::unique_ptr<std::FILE, FileCloser> f_;
};

/// The named arrays of one padded batch: an .npz archive's entries or a folder's .npy files.
class BatchArrays {
public:
    virtual ~BatchArrays() = default;
    virtual bool has(const std::string& name) const = 0;
    /// Error prefix for array `name`: "<archive>: entry '<name>'" or "<folder>/<name>.npy".
    virtual std::string where(const std::string& name) const = 0;
    /// Opens array `name` (has(name)) after checking its declared size against `limit`.
    virtual std::unique_ptr<ArrayStream> open(const std::string& name, std::uint64_t limit) const = 0;
    /// "archive" or "folder", for the missing-mask message.
    virtual const char* container() const = 0;
};

// Longest .npy header read (numpy writes a few hundred bytes; a v1 header is at most 65545).
constexpr std::size_t kMaxNpyHeaderBytes = std::size_t(1) << 17;

/// Reads an .npy header (numpy .npy format spec: magic, version, header length, dict) from the
/// reader, a 4 KiB chunk at a time and never more than kMaxNpyHeaderBytes; `buf` keeps the bytes
/// read past it. InputError naming `where` when it is malformed, truncated or longer than that.
/// As read_header below, but `buf` keeps the header (the array's first bytes), and nothing after
/// it is read: the preamble (magic, version, header length) first, then exactly the header.
NpyHeaderInfo read_header_bytes(ArrayStream& in, std::string& buf, const std::string& where, bool allow_bool = false) {
    auto read_to = [&](std::size_t size) {
        const std::size_t at = buf.size();
        buf.resize(size);
        buf.resize(at + in.read(buf.data() + at, size - at));
        if (buf.size() == size) return;
        if (!buf.empty() && !std::string_view(buf).starts_with(std::string_view("\x93NUMPY", 6).substr(0, buf.size())))
            throw InputError(where + ": not an .npy file (bad magic)");
        throw InputError(where + ": truncated .npy header");
    };
    buf.clear();
    read_to(10);
    if (!std::string_view(buf).starts_with("\x93NUMPY")) throw InputError(where + ": not an .npy file (bad magic)");
    std::size_t start = 10, len = 0;
    if (buf[6] == 1) {
        len = static_cast<unsigned char>(buf[8]) | (std::size_t(static_cast<unsigned char>(buf[9])) << 8);
    } else {
        read_to(12);
        for (int k = 3; k >= 0; --k)
            len = (len << 8) | static_cast<unsigned char>(buf[8 + static_cast<std::size_t>(k)]);
        start = 12;
    }
    if (const auto h = read_npy_header(buf, where, allow_bool)) return *h; // an unsupported version throws
    if (start + len > kMaxNpyHeaderBytes)
        throw InputError(where + ": .npy header is longer than " + std::to_string(kMaxNpyHeaderBytes) + " bytes");
    read_to(start + len);
    if (const auto h = read_npy_header(buf, where, allow_bool)) return *h;
    throw InputError(where + ": truncated .npy header");
}

NpyHeaderInfo read_header(ArrayStream& in, std::string& buf, const std::string& where, bool allow_bool = false) {
    NpyHeaderInfo h = read_header_bytes(in, buf, where, allow_bool);
    buf.erase(0, h.data_start);
    return h;
}

/// Refuses an array whose container (zip directory entry, file) declares more bytes than its .npy
/// header accounts for (header + shape x item size), before its data is read: trailing bytes (a
/// valid array followed by a gigabyte of zeros) would otherwise be inflated for nothing. Fewer
/// bytes are left to the reads, which report the truncation.
void check_no_trailing(const NpyHeaderInfo& h, std::uint64_t declared, const std::string& where) {
    const std::uint64_t need = h.data_start + std::uint64_t(h.count) * std::uint64_t(h.type.size);
    if (declared > need)
        throw InputError(where + ": declares " + std::to_string(declared) + " bytes, more than the " +
                         std::to_string(need) + " its .npy header accounts for (shape " + shape_str(h.shape) + " of " +
                         printable(h.descr) + ")");
}

/// One array of a padded batch opened past its .npy header: its data is read in order, one batch
/// row at a time (the bytes read with the header first), never whole.
class BatchArray {
public:
    BatchArray(std::unique_ptr<ArrayStream> in, const std::string& where, bool allow_bool)
        : in_(std::move(in)), where_(where) {
        header_ = read_header(*in_, pending_, where, allow_bool);
        check_no_trailing(header_, in_->size(), where);
    }
    const NpyHeaderInfo& header() const { return header_; }
    const std::string& where() const { return where_; }
    /// Reads the next `bytes` bytes into `raw` (resized): bytes [done, done + bytes) of batch row
    /// `b`, which holds `row_bytes`. InputError when the data ends first.
    void read(std::int64_t b, std::size_t bytes, std::string& raw, std::size_t done, std::size_t row_bytes) {
        raw.resize(bytes);
        const std::size_t from_pending = std::min(pending_.size(), bytes);
        std::memcpy(raw.data(), pending_.data(), from_pending);
        pending_.erase(0, from_pending);
        const std::size_t got = from_pending + in_->read(raw.data() + from_pending, bytes - from_pending);
        if (got != bytes)
            throw InputError(where_ + ": truncated .npy data: batch row " + std::to_string(b) + " has " +
                             std::to_string(done + got) + " of " + std::to_string(row_bytes) + " bytes");
    }
    /// Reads to the end (an archive entry: so that libzip checks the CRC) and checks the size.
    void finish() { in_->finish(); }

private:
    std::unique_ptr<ArrayStream> in_;
    std::string where_;
    NpyHeaderInfo header_;
    std::string pending_;
};

/// Whether element `i` of `size`-byte integers (either byte order, or bool) at `raw` is non-zero:
/// masks and flags are read as they are stored, never widened.
bool element_nonzero(const char* raw, std::size_t i, int size) {
    const char* p = raw + i * static_cast<std::size_t>(size);
    for (int k = 0; k < size; ++k)
        if (p[k] != 0) return true;
    return false;
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

/// Refuses an entry that expands past what routing data can (kMaxDataRatio above kBombBytes), checked
/// after its .npy header, whose own refusals name the shape.
void check_entry_ratio(const zip_stat_t& st, const std::string& where) {
    const bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
    if (!stored && st.size > kBombBytes && st.size > kMaxDataRatio * st.comp_size)
        throw InputError(where + ": declares " + std::to_string(st.size) + " bytes from " +
                         std::to_string(st.comp_size) + " bytes in the archive (" +
                         std::to_string(st.size / std::max<zip_uint64_t>(st.comp_size, 1)) +
                         ":1): routing data (expert ids, masks, padding) does not compress beyond " +
                         std::to_string(kMaxDataRatio) + ":1; an entry that does is one value repeated, not a trace");
}

/// The entries of an open .npz archive; `entries` maps entry names without ".npy" to indices.
class ArchiveArrays final : public BatchArrays {
public:
    ArchiveArrays(zip_t* za, const std::map<std::string, zip_uint64_t>& entries, std::string path)
        : za_(za), entries_(entries), path_(std::move(path)) {}
    bool has(const std::string& name) const override { return entries_.count(name) != 0; }
    std::string where(const std::string& name) const override { return path_ + ": entry '" + name + "'"; }
    std::unique_ptr<ArrayStream> open(const std::string& name, std::uint64_t limit) const override {
        const std::string w = where(name);
        const zip_uint64_t index = entries_.at(name);
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(za_, index, 0, &st) != 0) throw InputError(w + ": " + printable(zip_strerror(za_)));
        check_entry_sizes(st, w, limit);
        check_entry_ratio(st, w);
        return std::make_unique<EntryReader>(za_, index, st, w);
    }
    const char* container() const override { return "archive"; }

private:
    zip_t* za_;
    const std::map<std::string, zip_uint64_t>& entries_;
    std::string path_;
};

/// The .npy files of a padded-batch folder (is_batch_folder), by name without ".npy".
class FolderArrays final : public BatchArrays {
public:
    explicit FolderArrays(const std::filesystem::path& folder) : folder_(folder) {
        for (const auto& p : batch_folder_files(folder))
            names_.insert(p.stem().string());
    }
    bool has(const std::string& name) const override { return names_.count(name) != 0; }
    std::string where(const std::string& name) const override { return (folder_ / (name + ".npy")).string(); }
    std::unique_ptr<ArrayStream> open(const std::string& name, std::uint64_t limit) const override {
        const std::string w = where(name);
        const std::uint64_t size = check_input_file(folder_ / (name + ".npy"), input_files::kTraceFile);
        if (size > limit)
            throw InputError(w + ": holds " + std::to_string(size) + " bytes, more than the " + std::to_string(limit) +
                             "-byte limit per array");
        return std::make_unique<NpyFileReader>(folder_ / (name + ".npy"), size, w);
    }
    const char* container() const override { return "folder"; }

private:
    std::filesystem::path folder_;
    std::set<std::string> names_;
};

std::string row_list(const std::vector<std::int64_t>& rows) {
    std::string s;
    for (std::size_t i = 0; i < rows.size() && i < 10; ++i)
        s += (i ? ", " : "") + std::to_string(rows[i]);
    if (rows.size() > 10) s += ", ...";
    return s;
}

/// The arrays of one padded batch opened past their .npy headers and checked against each other
/// (see the file comment) before any array's data is inflated.
struct OpenBatch {
    std::string rwhere;                   ///< error prefix of routed_experts
    std::unique_ptr<BatchArray> routes;   ///< routed_experts [B][S][L][K]
    std::unique_ptr<BatchArray> mask;     ///< attention_mask [B, S] when saved
    std::unique_ptr<BatchArray> valid;    ///< r3_routing_valid [B] when saved
    std::int64_t B = 0, S = 0;            ///< batch rows, tokens per batch row
    int L = 0, K = 0;                     ///< layer axis, top_k
    std::int64_t prompt_area = -1;        ///< S - R when responses [B, R] is saved
    std::size_t width = 0, row_bytes = 0; ///< values per token (L x K), bytes per batch row
};

/// Opens and checks the arrays of a padded batch: every array's header is read and checked (shape
/// against the routes', declared size against the shape) before any array's data is inflated.
/// InputError naming the array for a wrong shape, order or size.
OpenBatch open_batch(const BatchArrays& arrays) {
    OpenBatch ob;
    ob.rwhere = arrays.where("routed_experts");
    const std::string& rwhere = ob.rwhere;
    ob.routes = std::make_unique<BatchArray>(arrays.open("routed_experts", kMaxBatchEntryBytes), rwhere, false);
    const NpyHeaderInfo& h = ob.routes->header();
    if (h.shape.size() != 4)
        throw InputError(rwhere + ": has " + std::to_string(h.shape.size()) +
                         " dimensions, expected a padded batch [batch][tokens][layers][top_k]");
    if (h.fortran)
        throw InputError(rwhere + ": is stored in Fortran order; save a C-order array (np.ascontiguousarray)");
    const bool have_mask = arrays.has("attention_mask"), have_valid = arrays.has("r3_routing_valid");
    if (!have_mask && !have_valid)
        throw InputError(rwhere + ": a padded batch [B, S, layers, top_k] needs attention_mask [B, S] (verl) or " +
                         "r3_routing_valid [B] (AReaL) beside it in the " + arrays.container() +
                         " to tell routes from padding");
    const std::int64_t B = ob.B = h.shape[0], S = ob.S = h.shape[1];
    check_route_rows(S, rwhere);
    if (h.shape[2] > INT32_MAX || h.shape[3] > INT32_MAX) throw InputError(rwhere + ": shape too large");
    const int L = ob.L = static_cast<int>(h.shape[2]), K = ob.K = static_cast<int>(h.shape[3]);
    // A batch row of no values would let a header alone declare any number of rows.
    if (S == 0 || L == 0 || K == 0)
        throw InputError(rwhere + ": shape " + shape_str(h.shape) +
                         " holds no routes (a zero tokens, layers or "
                         "top_k dimension)");
    if (have_mask) {
        const std::string w = arrays.where("attention_mask");
        ob.mask = std::make_unique<BatchArray>(arrays.open("attention_mask", kMaxEntryBytes), w, true);
        const NpyHeaderInfo& mh = ob.mask->header();
        if (mh.shape.size() != 2 || mh.shape[0] != B || mh.shape[1] != S)
            throw InputError(w + " has shape " + shape_str(mh.shape) + ", expected " + shape_str({B, S}) +
                             " to match routed_experts " + shape_str(h.shape));
        // Read a batch row at a time: in Fortran order a row is spread over the whole array.
        if (mh.fortran && B > 1 && S > 1)
            throw InputError(w + ": is stored in Fortran order; save a C-order array (np.ascontiguousarray)");
    }
    if (have_valid) {
        const std::string w = arrays.where("r3_routing_valid");
        ob.valid = std::make_unique<BatchArray>(arrays.open("r3_routing_valid", kMaxEntryBytes), w, true);
        const NpyHeaderInfo& vh = ob.valid->header();
        if (vh.shape.size() != 1 || vh.shape[0] != B)
            throw InputError(w + " has shape " + shape_str(vh.shape) + ", expected " + shape_str({B}) +
                             " (one flag per batch row)");
    }
    if (have_valid && !have_mask && K == 1)
        throw InputError(rwhere + ": top-1 routes to expert 0 cannot be told from zero padding: save attention_mask "
                                  "beside r3_routing_valid");
    if (arrays.has("responses")) {
        // Only its shape is used: its header is read, its data never inflated.
        const BatchArray responses(arrays.open("responses", kMaxEntryBytes), arrays.where("responses"), true);
        const NpyHeaderInfo& rh = responses.header();
        if (rh.shape.size() == 2 && rh.shape[0] == B && rh.shape[1] <= S) ob.prompt_area = S - rh.shape[1];
    }

    ob.width = static_cast<std::size_t>(L) * static_cast<std::size_t>(K);
    std::size_t row_values = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(S), ob.width, &row_values) ||
        __builtin_mul_overflow(row_values, static_cast<std::size_t>(h.type.size), &ob.row_bytes) ||
        row_values > kMaxRouteValues)
        throw InputError(rwhere + ": one batch row of " + std::to_string(S) + " x " + std::to_string(L) + " x " +
                         std::to_string(K) + " values is more than the per-sample limit of " +
                         std::to_string(kMaxRouteValues));
    return ob;
}

/// Reads batch row `b`'s r3_routing_valid flag (`raw`: scratch bytes): true or false; InputError
/// for anything but 0 and 1 (AReaL writes one bool per batch row).
bool read_row_flag(BatchArray& valid, std::int64_t b, std::string& raw) {
    const std::size_t fsize = static_cast<std::size_t>(valid.header().type.size);
    valid.read(b, fsize, raw, 0, fsize);
    std::int32_t flag = 0;
    const bool fits = convert_wire_ints(raw.data(), 1, valid.header().type, &flag) == 1;
    if (!fits || (flag != 0 && flag != 1))
        throw InputError(valid.where() + "[" + std::to_string(b) + "] is " +
                         (fits ? std::to_string(flag) : std::string("outside the int32 range")) +
                         ", not 0 or 1 (r3_routing_valid holds one bool per batch row)");
    return flag == 1;
}

/// Scratch buffers of read_row_tokens, kept across batch rows.
struct RowBuffers {
    std::vector<std::int32_t> chunk;
    std::string raw, mask_raw;
};

/// Reads batch row `b` of the routes (and of the mask) into `ids`: the rows of the sample's tokens,
/// the masked positions (verl), or positions 0..last non-zero row (AReaL without a mask; zero rows
/// only once a later non-zero row shows they are inside the sample). Returns the token count and
/// how many of them lie in the prompt area. A row is read in chunks of tokens (about 1 Mi
/// values): memory holds one chunk of each array and the sample's routes, never a whole row of
/// padding.
std::pair<std::int64_t, std::int64_t> read_row_tokens(OpenBatch& ob, std::int64_t b, RowBuffers& buf,
                                                      std::vector<std::int32_t>& ids) {
    const NpyHeaderInfo& h = ob.routes->header();
    const std::size_t width = ob.width, S = static_cast<std::size_t>(ob.S);
    const std::size_t chunk_tokens = std::max<std::size_t>(1, (std::size_t(1) << 20) / width);
    const std::size_t rsize = static_cast<std::size_t>(h.type.size);
    const std::size_t msize = ob.mask ? static_cast<std::size_t>(ob.mask->header().type.size) : 0;
    ids.clear();
    std::int64_t tokens = 0, prompt = 0;
    for (std::size_t s0 = 0; s0 < S; s0 += chunk_tokens) {
        const std::size_t n = std::min(chunk_tokens, S - s0);
        ob.routes->read(b, n * width * rsize, buf.raw, s0 * width * rsize, ob.row_bytes);
        buf.chunk.resize(n * width);
        const std::size_t bad = convert_wire_ints(buf.raw.data(), n * width, h.type, buf.chunk.data());
        if (bad != n * width)
            throw InputError(ob.rwhere + ": value " + wire_value_text(buf.raw.data(), bad, h.type) + " in batch row " +
                             std::to_string(b) + " does not fit int32");
        if (ob.mask) ob.mask->read(b, n * msize, buf.mask_raw, s0 * msize, S * msize);
        for (std::size_t i = 0; i < n; ++i) {
            const std::int32_t* r = buf.chunk.data() + i * width;
            const std::int64_t pos = static_cast<std::int64_t>(s0 + i);
            if (ob.mask) {
                if (!element_nonzero(buf.mask_raw.data(), i, static_cast<int>(msize))) continue;
                // One 0/1 per token (verl's attention_mask): anything else is refused.
                std::int32_t m = 0;
                if (convert_wire_ints(buf.mask_raw.data() + i * msize, 1, ob.mask->header().type, &m) != 1 || m != 1)
                    throw InputError(ob.mask->where() + "[" + std::to_string(b) + ", " + std::to_string(pos) + "] is " +
                                     wire_value_text(buf.mask_raw.data(), i, ob.mask->header().type) + ", not 0 or 1");
                ++tokens;
                prompt += pos < ob.prompt_area;
            } else {
                if (std::none_of(r, r + width, [](std::int32_t v) { return v != 0; })) continue;
                ids.resize(static_cast<std::size_t>(pos) * width); // the zero rows before it
                tokens = pos + 1;
                prompt = std::min<std::int64_t>(tokens, std::max<std::int64_t>(ob.prompt_area, 0));
            }
            ids.insert(ids.end(), r, r + width);
        }
    }
    return {tokens, prompt};
}

/// One padded batch (see the file comment), from an archive or a folder.
void parse_batch(const BatchArrays& arrays, const SourceFile& f, const std::string& stem, const ModelDescription& m,
                 const EmitFn& emit) {
    const std::string path = f.path.string();
    OpenBatch ob = open_batch(arrays);
    RouteArray routes;
    routes.axis_layers = ob.L;
    routes.top_k = ob.K;
    routes.axis_layer_ids = resolve_layer_axis(ob.L, m, ob.rwhere);
    std::vector<std::int64_t> empty_rows, invalid_rows, short_rows;
    RowBuffers buf;
    std::string flag_raw;
    for (std::int64_t b = 0; b < ob.B; ++b) {
        const bool row_valid = !ob.valid || read_row_flag(*ob.valid, b, flag_raw);
        const auto [tokens, prompt] = read_row_tokens(ob, b, buf, routes.ids);
        if (tokens == 0) {
            empty_rows.push_back(b);
            continue;
        }
        if (!row_valid) {
            invalid_rows.push_back(b);
            continue;
        }
        if (tokens < 2) {
            short_rows.push_back(b);
            continue;
        }
        // The last token's row is never a route (it is never forwarded).
        routes.rows = tokens - 1;
        routes.ids.resize(static_cast<std::size_t>(routes.rows) * ob.width);
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(b);
        meta.source_file = path;
        meta.request_id = "row " + std::to_string(b);
        meta.rows_rule = LengthRule::RowsPlusOne;
        if (ob.prompt_area >= 0) meta.prompt_len = prompt;
        emit(make_sample_record(routes, m, meta));
    }
    ob.routes->finish();
    if (ob.mask) ob.mask->finish();
    if (ob.valid) ob.valid->finish();
    if (!empty_rows.empty())
        add_import_note(path + ": skipped " + std::to_string(empty_rows.size()) + " batch rows whose " +
                        (ob.mask ? "attention_mask is all zero" : "routes are all zero") + " (rows " +
                        row_list(empty_rows) + ")");
    if (!invalid_rows.empty())
        add_import_note(path + ": skipped " + std::to_string(invalid_rows.size()) +
                        " batch rows marked invalid by r3_routing_valid (rows " + row_list(invalid_rows) + ")");
    if (!short_rows.empty())
        add_import_note(path + ": skipped " + std::to_string(short_rows.size()) +
                        " batch rows of a single token, which has no routed row (rows " + row_list(short_rows) + ")");
}

/// Reads archive entry `index` whole after checking its .npy header and declared sizes (the
/// header first: a shape over the per-sample limit, or trailing bytes, is refused before the data
/// is inflated), to the end so that libzip checks the CRC.
NpyArray read_entry_array(zip_t* za, zip_uint64_t index, const std::string& where) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, index, 0, &st) != 0) throw InputError(where + ": " + printable(zip_strerror(za)));
    check_entry_sizes(st, where, kMaxEntryBytes);
    EntryReader in(za, index, st, where);
    std::string buf;
    const NpyHeaderInfo h = read_header_bytes(in, buf, where);
    npy_header_checked(buf, where);
    check_no_trailing(h, st.size, where);
    check_entry_ratio(st, where);
    if (!h.shape.empty()) check_route_rows(h.shape[0], where);
    for (;;) {
        const std::size_t at = buf.size();
        buf.resize(at + kReadChunk);
        const std::size_t got = in.read(buf.data() + at, kReadChunk);
        buf.resize(at + got);
        if (got == 0) break;
    }
    in.finish();
    return parse_npy(buf, where);
}

/// One sample of verl's agent loop saved from AgentLoopOutput.as_dict() (verl-project/verl
/// 1dda039b verl/experimental/agent_loop/agent_loop.py) with np.savez: routed_experts int16
/// [prompt + response, layers, top_k], zero rows after the last recorded one, beside prompts [P]
/// and responses [R] (their headers alone are read; response_mask and the rest are never opened).
/// t_i = P + R = the routes' rows, prompt_len = P; the routes are drop_as_dict_fill's. The sample
/// id is the archive's stem. InputError when the rows are not P + R.
void parse_agent_loop_sample(const ArchiveArrays& arrays, zip_t* za, zip_uint64_t routes_index, const SourceFile& f,
                             const std::string& stem, const ModelDescription& m, const EmitFn& emit) {
    SampleMeta meta;
    meta.id = stem;
    meta.source_file = f.path.string();
    const std::string where = sample_where(f, meta.id) + ": entry 'routed_experts'";
    NpyArray a = read_entry_array(za, routes_index, where);
    if (a.shape.size() != 3 || a.shape[1] > INT32_MAX || a.shape[2] > INT32_MAX)
        throw InputError(where + ": has shape " + shape_str(a.shape) +
                         ", expected [prompt + response][layers][top_k] (AgentLoopOutput.as_dict)");
    std::int64_t tokens = 0;
    std::string parts;
    for (const char* name : {"prompts", "responses"}) {
        if (!arrays.has(name)) continue;
        const BatchArray ids(arrays.open(name, kMaxEntryBytes), arrays.where(name), true);
        const NpyHeaderInfo& h = ids.header();
        if (h.shape.size() != 1)
            throw InputError(arrays.where(name) + " has shape " + shape_str(h.shape) + ", expected one token id list");
        tokens += h.shape[0];
        parts += (parts.empty() ? "" : " + ") + std::string(name) + " " + std::to_string(h.shape[0]);
        if (std::string(name) == "prompts") meta.prompt_len = h.shape[0];
    }
    if (arrays.has("prompts") && arrays.has("responses")) {
        if (a.shape[0] != tokens)
            throw InputError(where + ": has " + std::to_string(a.shape[0]) + " rows but " + parts + " = " +
                             std::to_string(tokens) + " tokens (as_dict aligns the routes to prompt + response)");
        meta.explicit_length = tokens;
    }
    RouteArray routes;
    routes.rows = a.shape[0];
    routes.axis_layers = static_cast<int>(a.shape[1]);
    routes.top_k = static_cast<int>(a.shape[2]);
    routes.ids.swap(a.values);
    routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where);
    meta.rows_rule = LengthRule::RowsPlusOne; // rows + 1 = all tokens once the last row is dropped
    if (const std::int64_t marked = drop_as_dict_fill(routes))
        add_import_note(where + ": " + std::to_string(marked) +
                        " all-zero rows before the last (tokens the engine did not record) are missing routes");
    emit(make_sample_record(routes, m, meta));
}

} // namespace

void parse_npy_file(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    if (f.bytes.empty()) throw InputError(f.path.string() + ": empty file");
    SampleMeta meta;
    meta.id = f.stem();
    meta.source_file = f.path.string();
    const std::string where = sample_where(f, meta.id);
    // A padded batch saved alone: say how it is read instead of refusing its shape only.
    if (const auto h = read_npy_header(f.bytes, where); h && h->shape.size() == 4)
        throw InputError(where + ": a 4-D array " + shape_str(h->shape) +
                         " is a padded batch [batch][tokens][layers][top_k]: save it as routed_experts.npy beside "
                         "attention_mask.npy (verl) or r3_routing_valid.npy (AReaL) and import their folder, or "
                         "np.savez them into one .npz");
    RouteArray routes;
    emit_npy_sample(parse_npy(f.bytes, where), routes, m, std::move(meta), where, emit);
}

void parse_npz(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string path = f.path.string();
    if (f.streamed && f.bytes.empty()) {
        // A padded-batch folder: the stem is the folder's whole name.
        const std::string name =
            f.path.filename().empty() ? f.path.parent_path().filename().string() : f.path.filename().string();
        if (!is_batch_folder(f.path)) throw InputError(path + ": folder holds no routed_experts.npy");
        parse_batch(FolderArrays(f.path), f, name, m, emit);
        return;
    }
    if (f.byte_count() == 0) throw InputError(path + ": empty file");
    zip_error_t err;
    zip_error_init(&err);
    // A streamed archive is read from the disk as its entries are read (stored entries straight,
    // deflated ones through libzip's incremental inflate); otherwise from the bytes in memory.
    zip_source_t* src = f.streamed ? zip_source_file_create(f.path.c_str(), 0, -1, &err)
                                   : zip_source_buffer_create(f.bytes.data(), f.bytes.size(), 0, &err);
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
        const ArchiveArrays arrays(za.get(), names, path);
        // AgentLoopOutput.as_dict() of one sample: token id lists, no mask or validity flags.
        if ((names.count("prompts") || names.count("responses")) && !names.count("attention_mask") &&
            !names.count("r3_routing_valid")) {
            const std::string w = arrays.where("routed_experts");
            if (BatchArray(arrays.open("routed_experts", kMaxBatchEntryBytes), w, false).header().shape.size() != 4) {
                parse_agent_loop_sample(arrays, za.get(), names.at("routed_experts"), f, stem, m, emit);
                return;
            }
        }
        parse_batch(arrays, f, stem, m, emit);
        return;
    }
    std::size_t k = 0;
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
        // Memory follows the data actually there, never the declared size.
        emit_npy_sample(read_entry_array(za.get(), static_cast<zip_uint64_t>(i), where), routes, m, std::move(meta),
                        where, emit);
    }
    if (k == 0) throw InputError(path + ": the .npz archive holds no arrays");
}

} // namespace routepack::detail

namespace routepack {

std::string detected_stack(const SourceFile& f, TraceFormat detected) {
    if (detected != TraceFormat::Npz) return format_stack(detected);
    std::set<std::string> names; // without ".npy"
    std::string container;
    std::error_code ec;
    if (is_batch_folder(f.path)) {
        container = "a folder of .npy files";
        for (std::filesystem::directory_iterator it(f.path, ec), end; !ec && it != end; it.increment(ec))
            if (it->path().extension() == ".npy") names.insert(it->path().stem().string());
    } else if (std::filesystem::is_regular_file(f.path, ec)) {
        container = "an .npz";
        int err = 0;
        std::unique_ptr<zip_t, detail::ZipCloser> za(zip_open(f.path.c_str(), ZIP_RDONLY, &err));
        if (!za) return format_stack(detected);
        const zip_int64_t n = zip_get_num_entries(za.get(), 0);
        for (zip_int64_t i = 0; i < n; ++i)
            if (const char* nm = zip_get_name(za.get(), static_cast<zip_uint64_t>(i), 0)) {
                const std::string name = nm;
                names.insert(name.ends_with(".npy") ? name.substr(0, name.size() - 4) : name);
            }
    } else {
        return format_stack(detected);
    }
    if (!names.count("routed_experts")) return "numpy per-sample arrays in " + container;
    if ((names.count("prompts") || names.count("responses")) && !names.count("attention_mask") &&
        !names.count("r3_routing_valid"))
        return "verl AgentLoopOutput.as_dict sample (routed_experts, prompts, responses) in " + container;
    if (names.count("r3_routing_valid")) return "AReaL padded batch (routed_experts, r3_routing_valid) in " + container;
    if (names.count("attention_mask")) return "verl padded batch (routed_experts, attention_mask) in " + container;
    return "padded batch (routed_experts without attention_mask or r3_routing_valid) in " + container;
}

} // namespace routepack
