// Per-prompt CSV (trace-formats.md §5.1, the deepseek-v2-lite set): header
// `Layer ID,Batch Number,Token,Activated Expert IDs`, one record per (layer, token), expert ids a
// quoted JSON-style list. RFC 4180 quoting (tokens may hold commas and quotes) is parsed by libcsv.
// Length rule: prompt-only forwards, t_i = rows per layer (LengthRule::Rows). Sample id = file stem.
#include "core/import/import_detail.h"

#include <csv.h>

#include <algorithm>
#include <charconv>
#include <map>

namespace routepack::detail {

namespace {

constexpr const char* kHeader[] = {"Layer ID", "Batch Number", "Token", "Activated Expert IDs"};

struct CsvState {
    const SourceFile* file = nullptr;
    const ModelDescription* model = nullptr;
    std::size_t record = 0; // 0 = header
    int field = 0;
    int layer = -1;
    std::vector<std::int32_t> row_ids;
    std::map<int, std::vector<std::int32_t>> per_layer; // absolute layer -> [rows][top_k]
    std::string error;

    std::string where() const { return file->path.string() + ": record " + std::to_string(record); }
    void fail(const std::string& msg) {
        if (error.empty()) error = msg;
    }
};

bool parse_int_field(std::string_view s, std::int64_t& out) {
    while (!s.empty() && s.front() == ' ')
        s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ')
        s.remove_suffix(1);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

void on_field(void* data, std::size_t len, void* user) {
    auto& st = *static_cast<CsvState*>(user);
    if (!st.error.empty()) return;
    const std::string_view s(static_cast<const char*>(data), len);
    const int f = st.field++;
    if (st.record == 0) {
        if (f < 4 && s != kHeader[f])
            st.fail(st.file->path.string() + ": header column " + std::to_string(f + 1) + " is '" + printable(s) +
                    "', expected '" + kHeader[f] + "'");
        return;
    }
    if (f == 0) {
        std::int64_t layer = 0;
        if (!parse_int_field(s, layer)) {
            st.fail(st.where() + ": Layer ID '" + printable(s) + "' is not an integer");
        } else if (layer < 0 || layer > kMaxLayerId) {
            st.fail(st.where() + ": Layer ID " + std::to_string(layer) + " is out of range 0.." +
                    std::to_string(kMaxLayerId));
        } else {
            st.layer = static_cast<int>(layer);
        }
    } else if (f == 3) {
        // "[8, 26, 56, 57, 60, 43]"
        std::string_view t = s;
        while (!t.empty() && t.front() == ' ')
            t.remove_prefix(1);
        while (!t.empty() && t.back() == ' ')
            t.remove_suffix(1);
        if (t.size() < 2 || t.front() != '[' || t.back() != ']') {
            st.fail(st.where() + ": Activated Expert IDs '" + printable(s) + "' is not a list like [1, 2]");
            return;
        }
        t = t.substr(1, t.size() - 2);
        st.row_ids.clear();
        bool empty_list = true;
        for (char c : t)
            empty_list = empty_list && c == ' ';
        while (!empty_list) {
            const auto comma = t.find(',');
            std::int64_t v = 0;
            if (!parse_int_field(t.substr(0, comma), v)) {
                // Also "[1, 2,]" (a trailing comma) and "[1,, 2]" (an empty item).
                st.fail(st.where() + ": Activated Expert IDs '" + printable(s) + "' holds a non-integer");
                return;
            }
            if (v == -1) {
                st.fail(st.where() + " (layer " + std::to_string(st.layer) +
                        "): expert id -1, but this format has no missing-route marker");
                return;
            }
            if (v < INT32_MIN || v > INT32_MAX) {
                st.fail(st.where() + " (layer " + std::to_string(st.layer) + "): expert id " + std::to_string(v) +
                        " out of range 0.." + std::to_string(st.model->experts - 1));
                return;
            }
            st.row_ids.push_back(static_cast<std::int32_t>(v));
            if (comma == std::string_view::npos) break;
            t.remove_prefix(comma + 1);
        }
    }
}

void on_row(int, void* user) {
    auto& st = *static_cast<CsvState*>(user);
    if (st.error.empty()) {
        if (st.field != 4) {
            st.fail(st.record == 0 ? st.file->path.string() + ": header has " + std::to_string(st.field) +
                                         " columns, expected 4 (" + "Layer ID,Batch Number,Token,Activated Expert IDs)"
                                   : st.where() + ": " + std::to_string(st.field) + " columns, expected 4");
        } else if (st.record > 0) {
            if (static_cast<int>(st.row_ids.size()) != st.model->top_k) {
                st.fail(st.where() + " (layer " + std::to_string(st.layer) + "): " + std::to_string(st.row_ids.size()) +
                        " expert ids, expected top-k " + std::to_string(st.model->top_k));
            } else {
                auto& v = st.per_layer[st.layer];
                v.insert(v.end(), st.row_ids.begin(), st.row_ids.end());
            }
        }
    }
    st.field = 0;
    ++st.record;
}

/// Runs libcsv over the file; fills st (per_layer) or st.error.
void run_csv(const SourceFile& f, CsvState& st) {
    csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_EMPTY_IS_NULL) != 0)
        throw std::runtime_error("csv_init failed");
    // libcsv grows its field buffer by a fixed block (128 bytes by default): a multi-megabyte
    // field would cost one realloc (and copy) per block, quadratic in the field size.
    csv_set_blk_size(&p, std::size_t(1) << 20);
    const std::string_view text = text_of(f); // after a BOM
    const std::size_t n = csv_parse(&p, text.data(), text.size(), on_field, on_row, &st);
    const bool parse_failed = n != text.size() || csv_fini(&p, on_field, on_row, &st) != 0;
    const int err = csv_error(&p);
    csv_free(&p);
    if (parse_failed && st.error.empty())
        st.fail(f.path.string() + ": malformed CSV in record " + std::to_string(st.record) + " (" + csv_strerror(err) +
                ")");
}

} // namespace

void parse_prompt_csv(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    CsvState st;
    st.file = &f;
    st.model = &m;
    run_csv(f, st);
    if (!st.error.empty()) throw InputError(st.error);
    if (st.per_layer.empty()) throw InputError(f.path.string() + ": no routing records after the header");

    std::vector<int> layers;
    for (const auto& [l, v] : st.per_layer)
        layers.push_back(l);
    if (layers != m.moe_layers)
        throw InputError(f.path.string() + ": layer set " + format_layer_list(layers) +
                         " differs from the model's MoE layers " + format_layer_list(m.moe_layers));
    const std::size_t width = static_cast<std::size_t>(m.top_k);
    const std::size_t rows = st.per_layer.begin()->second.size() / width;
    for (const auto& [l, v] : st.per_layer)
        if (v.size() / width != rows)
            throw InputError(f.path.string() + ": layer " + std::to_string(l) + " has " +
                             std::to_string(v.size() / width) + " token rows, layer " + std::to_string(layers.front()) +
                             " has " + std::to_string(rows));

    RouteArray ra;
    ra.rows = static_cast<std::int64_t>(rows);
    ra.axis_layers = static_cast<int>(layers.size());
    ra.top_k = m.top_k;
    ra.axis_layer_ids = layers;
    ra.ids.resize(rows * layers.size() * width);
    for (std::size_t j = 0; j < layers.size(); ++j) {
        const auto& v = st.per_layer[layers[j]];
        for (std::size_t r = 0; r < rows; ++r)
            std::copy_n(v.data() + r * width, width, ra.ids.data() + (r * layers.size() + j) * width);
    }
    SampleMeta meta;
    meta.id = f.stem();
    meta.source_file = f.path.string();
    meta.rows_rule = LengthRule::Rows;
    emit(make_sample_record(ra, m, meta));
}

std::vector<int> csv_layer_ids(const SourceFile& f) {
    // Only the first column of each record matters; a light scan that does not need the model.
    // Ids outside 0..kMaxLayerId are skipped here: the full parse reports them with their record.
    const std::string_view text = text_of(f);
    std::vector<int> layers;
    std::size_t pos = text.find('\n');
    while (pos != std::string_view::npos && pos + 1 < text.size()) {
        int v = 0;
        const char* b = text.data() + pos + 1;
        const char* e = text.data() + text.size();
        auto [p, ec] = std::from_chars(b, e, v);
        if (ec == std::errc() && p != b && p != e && *p == ',' && v >= 0 && v <= kMaxLayerId &&
            (layers.empty() || layers.back() != v)) {
            if (std::find(layers.begin(), layers.end(), v) == layers.end()) layers.push_back(v);
        }
        // Skip to the next line that begins a record: tokens may hold newlines only inside quotes,
        // which the real set never does; a full parse validates later anyway.
        pos = text.find('\n', pos + 1);
    }
    std::sort(layers.begin(), layers.end());
    return layers;
}

} // namespace routepack::detail
