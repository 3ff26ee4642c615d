// Plain .npy files and .npz archives of routes (trace-formats.md §4: "plain .npy/.npz").
//
// .npy: one array [rows][layers][top_k] = one sample, id = file stem, t_i = rows + 1 (rule 1).
// .npz: a zip archive (entries stored or deflated, as numpy.savez / savez_compressed write them);
//   every file entry is one .npy sample in archive order, id "<stem>#<k>", request_id = the entry
//   name without ".npy". Directory entries are skipped.
// Layer axis from shape[1] via resolve_layer_axis (all layers or MoE only); dtype from the header.
#include "core/import_detail.h"

#include <zip.h>

#include <memory>

namespace routepack::detail {

namespace {

std::string shape_str(const std::vector<std::int64_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
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

}  // namespace

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
    std::size_t k = 0;
    std::string buf;
    RouteArray routes;
    for (zip_int64_t i = 0; i < n; ++i) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(za.get(), static_cast<zip_uint64_t>(i), 0, &st) != 0)
            throw InputError(path + ": entry " + std::to_string(i) + ": " + printable(zip_strerror(za.get())));
        const std::string name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "entry" + std::to_string(i);
        if (!name.empty() && name.back() == '/') continue;  // directory

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

}  // namespace routepack::detail
