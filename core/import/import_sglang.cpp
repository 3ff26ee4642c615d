// SGLang /generate responses with meta_info.routed_experts (trace-formats.md §2 "SGLang").
//
// File: one response object, a JSON array of them, or JSON lines (each line an object or an array
// of objects). Record k (0-based over the whole file) is sample "<stem>#<k>".
//
// Per record:
//   meta_info.routed_experts        base64 of a raw little-endian C-order buffer [rows][num_hidden_layers][top_k],
//                                   or that array as a nested JSON list (slime's patched SGLang 0.5.6,
//                                   THUDM/slime 624b824a slime/utils/types.py)
//   meta_info.routed_experts_dtype  int32 (default), int16, uint16, uint8 or int8 (sglang PR #31219)
//   meta_info.routed_experts_start_len  rows the response omits at the front (default 0) -> start_offset
//   meta_info.prompt_tokens + completion_tokens  explicit t_i (prompt_len = prompt_tokens)
//   meta_info.id | "rid" | "id"     request id;  "group" | "group_id"  GRPO group
//   physical_to_logical_map (meta_info or top level), [axis layers][physical slots]: its layer axis
//       is the routes' layer axis (all num_hidden_layers, as SGLang's ExpertLocationMetadata); ids
//       at MoE layers are mapped to logical ids before counting (rule 5). -1 stays missing.
// Without explicit token counts t_i = rows + 1 + start_len (rule 1). Dense layers (0 on the wire)
// are ignored by make_sample_record.
//
// Multi-turn stitching (sglang routed_experts_start_len, THUDM/slime 624b824a slime/utils/types.py
// and slime/rollout/sglang_rollout.py concatenate the partial returns at start_len): a record with
// start_len s > 0 whose request id names an earlier record of the same file continues that
// conversation: its rows replace the conversation's rows from s on (rows [0, s) kept, so
// s <= rows so far; a larger s leaves a gap and is refused naming both records). The stitched
// sample keeps the first record's id, prompt length and start offset, and takes t_i from the last
// record's prompt_tokens + completion_tokens (then rows + first start_len must be t_i - 1). A
// record with s > 0 and no earlier record of its id is a sample of its own, offset by s. Samples
// come out in the order of their first record.
#include "core/import/import_detail.h"
#include "core/util/json_field.h"

#include <memory>
#include <unordered_map>

namespace routepack::detail {

namespace {

bool sglang_dtype(const std::string& name, WireInt& t) {
    for (const char* ok : {"int32", "int16", "uint16", "uint8", "int8"})
        if (name == ok) return wire_int_from_name(name, t);
    return false;
}

/// Maps the physical expert ids of `r` to logical ids through `map` (physical_to_logical_map,
/// [axis layers][physical slots]); only MoE positions of the layer axis are read. InputError naming
/// the map's field path: JsonField's wording for a value of the wrong type or range ("<map>[2][2] is
/// 7, not an integer in 0..3"), "<map> has N layers, expected A (the routed_experts layer axis)", or
/// a physical id outside the map's row.
void apply_physical_map(const util::JsonField& map, RouteArray& r, const ModelDescription& m) {
    const std::size_t axis = static_cast<std::size_t>(r.axis_layers);
    if (map.list("a [layers][physical slots] list") != axis)
        throw InputError(map.where() + " has " + std::to_string(map.json().size()) + " layers, expected " +
                         std::to_string(axis) + " (the routed_experts layer axis)");
    std::vector<std::int32_t> lut;
    const std::size_t k = static_cast<std::size_t>(r.top_k);
    for (std::size_t a = 0; a < axis; ++a) {
        const int layer = r.axis_layer_ids[a];
        if (m.moe_index(layer) < 0) continue; // dense axis position: routes there are ignored
        const util::JsonField row = map[a];
        if (row.list("a non-empty list of expert ids") == 0) row.fail("a non-empty list of expert ids");
        const nlohmann::json& ids = row.json();
        lut.resize(ids.size());
        for (std::size_t j = 0; j < ids.size(); ++j) {
            // A logical expert id: an integer in 0..E-1; the path is built only for an error.
            auto e = util::json_integer_of(ids[j], 0, m.experts - 1, util::IntegralFloats::Refuse);
            if (!e) e = row[j].integer(0, m.experts - 1); // throws, naming the field
            lut[j] = static_cast<std::int32_t>(*e);
        }
        for (std::int64_t row_i = 0; row_i < r.rows; ++row_i) {
            std::int32_t* out = r.ids.data() + (static_cast<std::size_t>(row_i) * axis + a) * k;
            for (std::size_t s = 0; s < k; ++s) {
                const std::int32_t p = out[s];
                if (p == -1) continue;
                if (p < 0 || static_cast<std::size_t>(p) >= lut.size())
                    throw InputError(map.origin() + ": row " + std::to_string(row_i) + ", layer " +
                                     std::to_string(layer) + ": physical expert id " + std::to_string(p) +
                                     " is outside " + map.path() + " (" + std::to_string(lut.size()) + " slots)");
                out[s] = lut[static_cast<std::size_t>(p)];
            }
        }
    }
}

/// Reads meta_info.routed_experts (base64 with meta_info.routed_experts_dtype, or the nested list)
/// of one record into `routes`, whose axis_layers and top_k are num_hidden_layers and top_k.
/// InputError naming the field: JsonField's wording for a missing field or a value of the wrong type
/// ("<where> is 5, not a base64 string or a nested list", "<where> is \"float16\", not \"int32\",
/// \"int16\", \"uint16\", \"uint8\" or \"int8\""), or the array's fault (malformed base64, shape).
void read_sglang_routes(const util::JsonField& info, const ModelDescription& m, RouteArray& routes) {
    const util::JsonField re = info["routed_experts"];
    const nlohmann::json& rj = re.json(); // "is missing"
    if (rj.is_array()) {
        // slime's patched SGLang 0.5.6 returns the nested list [rows][num_hidden_layers][top_k].
        routes_from_json(re, routes);
        if (routes.rows == 0) throw InputError(re.where() + " is empty");
        if (routes.axis_layers != m.num_hidden_layers)
            throw InputError(re.where() + " rows have " + std::to_string(routes.axis_layers) +
                             " layers, expected num_hidden_layers " + std::to_string(m.num_hidden_layers));
        if (routes.top_k != m.top_k)
            throw InputError(re.where() + " layers have " + std::to_string(routes.top_k) +
                             " expert ids, expected top_k " + std::to_string(m.top_k));
        return;
    }
    if (!rj.is_string()) re.fail("a base64 string or a nested list");
    WireInt t{4, true, false};
    if (const util::JsonField dt = info["routed_experts_dtype"]; dt.given()) {
        const nlohmann::json& dj = dt.json();
        if (!dj.is_string() || !sglang_dtype(dj.get_ref<const std::string&>(), t))
            dt.fail("\"int32\", \"int16\", \"uint16\", \"uint8\" or \"int8\"");
    }
    const std::string bytes = base64_decode(rj.get_ref<const std::string&>(), re.where());
    const std::size_t row_bytes =
        static_cast<std::size_t>(m.num_hidden_layers) * static_cast<std::size_t>(m.top_k) * t.size;
    if (bytes.empty()) throw InputError(re.where() + " is empty");
    if (bytes.size() % row_bytes != 0)
        throw InputError(re.where() + " holds " + std::to_string(bytes.size()) +
                         " bytes, not a multiple of num_hidden_layers " + std::to_string(m.num_hidden_layers) +
                         " x top_k " + std::to_string(m.top_k) + " x " + std::to_string(t.size) + " bytes (" +
                         t.name() + ")");
    const std::size_t count = bytes.size() / t.size;
    if (count > kMaxRouteValues)
        throw InputError(re.where() + " holds " + std::to_string(count) +
                         " values, more than the per-sample limit of " + std::to_string(kMaxRouteValues));
    routes.rows = static_cast<std::int64_t>(bytes.size() / row_bytes);
    routes.ids.resize(count);
    const std::size_t bad = convert_wire_ints(bytes.data(), count, t, routes.ids.data());
    if (bad != count)
        throw InputError(re.where() + " value " + wire_value_text(bytes.data(), bad, t) + " at element " +
                         std::to_string(bad) + " does not fit int32");
}

/// A token count or start length of meta_info: nullopt when absent or null, else an integer in
/// 0..kMaxTokens (an integral float accepted); JsonField's InputError otherwise.
std::optional<std::int64_t> token_count(const util::JsonField& v) {
    if (!v.given()) return std::nullopt;
    return v.integer(0, kMaxTokens, util::IntegralFloats::Accept);
}

/// Reads one record's token counts, start offset, request id and group into `meta` (see the file
/// comment); InputError naming the field for a value of the wrong type or range.
void read_sglang_meta(const util::JsonField& rec, const util::JsonField& info, SampleMeta& meta) {
    const auto prompt = token_count(info["prompt_tokens"]);
    const auto completion = token_count(info["completion_tokens"]);
    if (const auto start = token_count(info["routed_experts_start_len"])) {
        // The response covers [start_len, seqlen - 1): start_len never exceeds the prompt.
        if (prompt && *start > *prompt)
            throw InputError(rec.origin() + ": meta_info.routed_experts_start_len " + std::to_string(*start) +
                             " exceeds meta_info.prompt_tokens " + std::to_string(*prompt));
        meta.start_offset = *start;
    }
    if (prompt) meta.prompt_len = *prompt;
    if (prompt && completion) meta.explicit_length = *prompt + *completion; // each <= 2^40: no overflow

    util::JsonField rid = info["id"];
    if (!rid.given()) rid = rec["rid"];
    if (!rid.given()) rid = rec["id"];
    meta.request_id = json_id_text(rid);
    util::JsonField group = rec["group"];
    if (!group.given()) group = rec["group_id"];
    meta.group = json_id_text(group);
}

} // namespace

void parse_sglang(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string stem = f.stem();
    const std::vector<int> axis = resolve_layer_axis(m.num_hidden_layers, m, f.path.string());
    RouteArray routes;
    routes.axis_layers = m.num_hidden_layers;
    routes.top_k = m.top_k;
    routes.axis_layer_ids = axis;
    std::size_t k = 0;

    // One slot per sample in order of its first record: finished, or a conversation still open.
    struct Conversation {
        RouteArray routes;
        SampleMeta meta;
        std::string first_where;
        std::size_t turns = 1;
    };
    std::vector<std::optional<SampleRecord>> done;
    std::vector<std::unique_ptr<Conversation>> open;
    std::unordered_map<std::string, std::size_t> open_by_id;
    std::size_t stitched_records = 0, stitched_samples = 0;

    auto record = [&](const nlohmann::json& rec_json) {
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(k++);
        meta.source_file = f.path.string();
        meta.rows_rule = LengthRule::RowsPlusOne;
        const std::string where = sample_where(f, meta.id);
        const util::JsonField rec(rec_json, where);
        rec.object();
        const util::JsonField info = rec["meta_info"];
        info.object();
        read_sglang_routes(info, m, routes);
        util::JsonField map = info["physical_to_logical_map"];
        if (!map.given()) map = rec["physical_to_logical_map"];
        if (map.given()) apply_physical_map(map, routes, m);

        read_sglang_meta(rec, info, meta);

        if (!meta.request_id.empty() && meta.start_offset > 0) {
            if (const auto it = open_by_id.find(meta.request_id); it != open_by_id.end()) {
                Conversation& c = *open[it->second];
                const std::int64_t s = meta.start_offset;
                const std::int64_t have = c.routes.rows + c.meta.start_offset;
                if (s > have)
                    throw InputError(where + ": meta_info.routed_experts_start_len " + std::to_string(s) +
                                     " is past the " + std::to_string(have) + " rows request '" +
                                     printable(meta.request_id) + "' has so far (from sample " + c.meta.id +
                                     "): the turn between is missing, so this record cannot be placed");
                if (s < c.meta.start_offset)
                    throw InputError(where + ": meta_info.routed_experts_start_len " + std::to_string(s) +
                                     " is before the first row " + std::to_string(c.meta.start_offset) +
                                     " of request '" + printable(meta.request_id) + "' (sample " + c.meta.id +
                                     "), so this record cannot be placed");
                const std::size_t width = static_cast<std::size_t>(routes.axis_layers) * routes.top_k;
                c.routes.ids.resize(static_cast<std::size_t>(s - c.meta.start_offset) * width);
                if (c.routes.ids.size() + routes.ids.size() > kMaxRouteValues)
                    throw InputError(where + ": request '" + printable(meta.request_id) +
                                     "' stitched holds more than the per-sample limit of " +
                                     std::to_string(kMaxRouteValues) + " route values");
                c.routes.ids.insert(c.routes.ids.end(), routes.ids.begin(), routes.ids.end());
                c.routes.rows = s - c.meta.start_offset + routes.rows;
                c.meta.explicit_length = meta.explicit_length;
                if (!c.meta.group.empty() && !meta.group.empty() && c.meta.group != meta.group)
                    throw InputError(where + ": group '" + printable(meta.group) + "' differs from group '" +
                                     printable(c.meta.group) + "' of the same request in sample " + c.meta.id);
                if (++c.turns == 2) ++stitched_samples;
                ++stitched_records;
                return;
            }
        }
        if (meta.request_id.empty()) {
            done.emplace_back(make_sample_record(routes, m, meta));
            open.push_back(nullptr);
            return;
        }
        auto c = std::make_unique<Conversation>();
        c->routes = routes;
        c->meta = std::move(meta);
        c->first_where = where;
        open_by_id[c->meta.request_id] = open.size();
        open.push_back(std::move(c));
        done.emplace_back();
    };

    for_each_json_value(f, [&](nlohmann::json&& v, bool) {
        if (v.is_array()) {
            for (const auto& rec : v)
                record(rec);
        } else {
            record(v);
        }
    });
    if (k == 0) throw InputError(f.path.string() + ": no SGLang responses in the file");
    for (std::size_t i = 0; i < open.size(); ++i) {
        if (!open[i]) {
            emit(std::move(*done[i]));
            continue;
        }
        Conversation& c = *open[i];
        if (c.turns > 1 && c.meta.explicit_length && c.routes.rows + c.meta.start_offset != *c.meta.explicit_length - 1)
            throw InputError(
                c.first_where + ": request '" + printable(c.meta.request_id) + "' stitched from " +
                std::to_string(c.turns) + " records holds " + std::to_string(c.routes.rows + c.meta.start_offset) +
                " rows, but its last record's prompt_tokens + completion_tokens = " +
                std::to_string(*c.meta.explicit_length) + " needs " + std::to_string(*c.meta.explicit_length - 1));
        emit(make_sample_record(c.routes, m, c.meta));
        open[i].reset();
    }
    if (stitched_records > 0)
        add_import_note(f.path.string() + ": stitched " + std::to_string(stitched_records + stitched_samples) +
                        " multi-turn records into " + std::to_string(stitched_samples) +
                        " samples by request id and routed_experts_start_len");
}

} // namespace routepack::detail
