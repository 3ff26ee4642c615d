// NeMo-RL routed-expert strings (trace-formats.md §2 "NeMo-RL", nemo_rl/utils/routed_experts_codec.py).
//
// Text file, one `nrlre1:<dtype>:<S>x<L>x<K>:<base64 of C-contiguous bytes>` per non-blank line;
// dtype int8 / int16 / int32 (little-endian); byte count must equal S*L*K*size. The k-th line is
// sample "<stem>#<k>". Layer axis: MoE layers only (resolve_layer_axis also accepts all layers).
// -1 = missing route. Trailing rows that are -1 everywhere are padding to the full sequence and
// are dropped; t_i = remaining rows + 1 (rule 1); -1 in the remaining rows counts as missing.
#include "core/import_detail.h"

#include <charconv>

namespace routepack::detail {

namespace {

bool parse_dim(std::string_view s, std::int64_t& v) {
    if (s.empty() || s.size() > 12) return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && v >= 0;
}

}  // namespace

void parse_nemo_rl(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string stem = f.stem();
    std::size_t k = 0;
    RouteArray routes;
    constexpr std::string_view kTag = "nrlre1:";
    for_each_line(text_of(f), [&](std::string_view line, std::size_t, std::size_t line_no) {
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(k++);
        meta.source_file = f.path.string();
        meta.rows_rule = LengthRule::RowsPlusOne;
        const std::string where = sample_where(f, meta.id) + " (line " + std::to_string(line_no) + ")";
        while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
        const std::string_view expected = "is not 'nrlre1:<dtype>:<S>x<L>x<K>:<base64>'";
        if (line.substr(0, kTag.size()) != kTag) throw InputError(where + ": " + std::string(expected));
        std::string_view rest = line.substr(kTag.size());
        const std::size_t c1 = rest.find(':');
        const std::size_t c2 = c1 == std::string_view::npos ? c1 : rest.find(':', c1 + 1);
        if (c2 == std::string_view::npos) throw InputError(where + ": " + std::string(expected));
        const std::string dtype(rest.substr(0, c1));
        const std::string_view dims = rest.substr(c1 + 1, c2 - c1 - 1);
        const std::string_view data = rest.substr(c2 + 1);

        WireInt t;
        if ((dtype != "int8" && dtype != "int16" && dtype != "int32") || !wire_int_from_name(dtype, t))
            throw InputError(where + ": dtype '" + printable(dtype) + "' is not one of int8, int16, int32");
        std::int64_t d[3];
        std::size_t pos = 0;
        for (int j = 0; j < 3; ++j) {
            const std::size_t x = j < 2 ? dims.find('x', pos) : dims.size();
            if (x == std::string_view::npos || !parse_dim(dims.substr(pos, x - pos), d[j]) || (j == 2 && x != dims.size()))
                throw InputError(where + ": shape '" + printable(dims) + "' is not <S>x<L>x<K>");
            pos = x + 1;
        }
        if (d[1] > INT32_MAX || d[2] > INT32_MAX)
            throw InputError(where + ": shape '" + printable(dims) + "' is too large");
        std::size_t count = 0, need = 0;
        if (__builtin_mul_overflow(static_cast<std::size_t>(d[0]), static_cast<std::size_t>(d[1]), &count) ||
            __builtin_mul_overflow(count, static_cast<std::size_t>(d[2]), &count) ||
            __builtin_mul_overflow(count, static_cast<std::size_t>(t.size), &need))
            throw InputError(where + ": shape '" + printable(dims) + "' is too large");

        const std::string bytes = base64_decode(data, where);
        if (bytes.size() != need)
            throw InputError(where + ": " + std::to_string(bytes.size()) + " bytes of data, expected " +
                             std::string(dims) + " x " + std::to_string(t.size) + " = " + std::to_string(need) +
                             " bytes (" + dtype + ")");
        if (count > kMaxRouteValues)
            throw InputError(where + ": shape '" + std::string(dims) + "' holds " + std::to_string(count) +
                             " values, more than the per-sample limit of " + std::to_string(kMaxRouteValues));
        routes.ids.resize(count);
        convert_wire_ints(bytes.data(), count, t, routes.ids.data());  // int8..int32 always fit
        routes.axis_layers = static_cast<int>(d[1]);
        routes.top_k = static_cast<int>(d[2]);
        const std::size_t width = static_cast<std::size_t>(d[1]) * static_cast<std::size_t>(d[2]);
        routes.rows = width == 0 ? d[0] : rows_without_trailing_padding(routes.ids, d[0], width);
        if (routes.rows == 0 && d[0] > 0) throw InputError(where + ": no routed rows (every row is -1 padding)");
        routes.ids.resize(static_cast<std::size_t>(routes.rows) * width);
        routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where);
        emit(make_sample_record(routes, m, meta));
    });
    if (k == 0) throw InputError(f.path.string() + ": empty file");
}

}  // namespace routepack::detail
