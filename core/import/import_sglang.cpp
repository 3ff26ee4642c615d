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

void apply_physical_map(const nlohmann::json& map, RouteArray& r, const ModelDescription& m, const std::string& where) {
    const std::size_t axis = static_cast<std::size_t>(r.axis_layers);
    if (!map.is_array() || map.size() != axis)
        throw InputError(where + ": physical_to_logical_map has " + std::to_string(map.is_array() ? map.size() : 0) +
                         " layers, expected " + std::to_string(axis) + " (the routed_experts layer axis)");
    std::vector<std::int32_t> lut;
    const std::size_t k = static_cast<std::size_t>(r.top_k);
    for (std::size_t a = 0; a < axis; ++a) {
        const int layer = r.axis_layer_ids[a];
        if (m.moe_index(layer) < 0) continue; // dense axis position: routes there are ignored
        const auto& row = map[a];
        if (!row.is_array() || row.empty())
            throw InputError(where + ": physical_to_logical_map[" + std::to_string(a) +
                             "] is not a list of expert ids");
        lut.resize(row.size());
        for (std::size_t j = 0; j < row.size(); ++j) {
            // A logical expert id: an integer in 0..E-1.
            auto e = util::json_integer_of(row[j], 0, m.experts - 1, util::IntegralFloats::Refuse);
            if (!e)
                e = util::JsonField(row[j], where,
                                    "physical_to_logical_map[" + std::to_string(a) + "][" + std::to_string(j) + "]")
                        .integer(0, m.experts - 1); // throws, naming the field
            lut[j] = static_cast<std::int32_t>(*e);
        }
        for (std::int64_t row_i = 0; row_i < r.rows; ++row_i) {
            std::int32_t* ids = r.ids.data() + (static_cast<std::size_t>(row_i) * axis + a) * k;
            for (std::size_t s = 0; s < k; ++s) {
                const std::int32_t p = ids[s];
                if (p == -1) continue;
                if (p < 0 || static_cast<std::size_t>(p) >= lut.size())
                    throw InputError(where + ": row " + std::to_string(row_i) + ", layer " + std::to_string(layer) +
                                     ": physical expert id " + std::to_string(p) +
                                     " is outside physical_to_logical_map (" + std::to_string(lut.size()) + " slots)");
                ids[s] = lut[static_cast<std::size_t>(p)];
            }
        }
    }
}

/// Reads meta_info.routed_experts (base64 with meta_info.routed_experts_dtype, or the nested list)
/// of one record into `routes`, whose axis_layers and top_k are num_hidden_layers and top_k.
/// InputError naming `where` for a missing, malformed or mis-shaped array.
void read_sglang_routes(const nlohmann::json& info, const std::string& where, const ModelDescription& m,
                        RouteArray& routes) {
    const nlohmann::json* re = json_member(info, "routed_experts");
    if (!re) throw InputError(where + ": meta_info.routed_experts is missing");
    if (re->is_array()) {
        // slime's patched SGLang 0.5.6 returns the nested list [rows][num_hidden_layers][top_k].
        routes_from_json(*re, where, "meta_info.routed_experts", routes);
        if (routes.rows == 0) throw InputError(where + ": meta_info.routed_experts is empty");
        if (routes.axis_layers != m.num_hidden_layers)
            throw InputError(where + ": meta_info.routed_experts rows have " + std::to_string(routes.axis_layers) +
                             " layers, expected num_hidden_layers " + std::to_string(m.num_hidden_layers));
        if (routes.top_k != m.top_k)
            throw InputError(where + ": meta_info.routed_experts layers have " + std::to_string(routes.top_k) +
                             " expert ids, expected top_k " + std::to_string(m.top_k));
    } else if (!re->is_string()) {
        throw InputError(where + ": meta_info.routed_experts is not a base64 string or a nested list");
    } else {
        WireInt t{4, true, false};
        if (const nlohmann::json* dt = json_member(info, "routed_experts_dtype")) {
            if (!dt->is_string())
                throw InputError(where +
                                 ": meta_info.routed_experts_dtype must be a string (one of int32, int16, "
                                 "uint16, uint8, int8), not " +
                                 json_kind(*dt));
            if (!sglang_dtype(dt->get_ref<const std::string&>(), t))
                throw InputError(where + ": meta_info.routed_experts_dtype " + json_brief(*dt) +
                                 " is not one of int32, int16, uint16, uint8, int8");
        }
        const std::string bytes =
            base64_decode(re->get_ref<const std::string&>(), where + ": meta_info.routed_experts");
        const std::size_t row_bytes =
            static_cast<std::size_t>(m.num_hidden_layers) * static_cast<std::size_t>(m.top_k) * t.size;
        if (bytes.empty()) throw InputError(where + ": meta_info.routed_experts is empty");
        if (bytes.size() % row_bytes != 0)
            throw InputError(where + ": meta_info.routed_experts holds " + std::to_string(bytes.size()) +
                             " bytes, not a multiple of num_hidden_layers " + std::to_string(m.num_hidden_layers) +
                             " x top_k " + std::to_string(m.top_k) + " x " + std::to_string(t.size) + " bytes (" +
                             t.name() + ")");
        const std::size_t count = bytes.size() / t.size;
        if (count > kMaxRouteValues)
            throw InputError(where + ": meta_info.routed_experts holds " + std::to_string(count) +
                             " values, more than the per-sample limit of " + std::to_string(kMaxRouteValues));
        routes.rows = static_cast<std::int64_t>(bytes.size() / row_bytes);
        routes.ids.resize(count);
        const std::size_t bad = convert_wire_ints(bytes.data(), count, t, routes.ids.data());
        if (bad != count)
            throw InputError(where + ": meta_info.routed_experts value " + wire_value_text(bytes.data(), bad, t) +
                             " at element " + std::to_string(bad) + " does not fit int32");
    }
}

/// Reads one record's token counts, start offset, request id and group into `meta` (see the file
/// comment); InputError naming `where` for a value of the wrong type or range.
void read_sglang_meta(const nlohmann::json& rec, const nlohmann::json& info, const std::string& where,
                      SampleMeta& meta) {
    const auto prompt = json_int(info, "prompt_tokens", where, "meta_info.prompt_tokens", 0, kMaxTokens);
    const auto completion = json_int(info, "completion_tokens", where, "meta_info.completion_tokens", 0, kMaxTokens);
    if (auto start =
            json_int(info, "routed_experts_start_len", where, "meta_info.routed_experts_start_len", 0, kMaxTokens)) {
        // The response covers [start_len, seqlen - 1): start_len never exceeds the prompt.
        if (prompt && *start > *prompt)
            throw InputError(where + ": meta_info.routed_experts_start_len " + std::to_string(*start) +
                             " exceeds meta_info.prompt_tokens " + std::to_string(*prompt));
        meta.start_offset = *start;
    }
    if (prompt) meta.prompt_len = *prompt;
    if (prompt && completion) meta.explicit_length = *prompt + *completion; // each <= 2^40: no overflow

    const char* rid_field = "meta_info.id";
    const nlohmann::json* rid = json_member(info, "id");
    if (!rid) rid = json_member(rec, rid_field = "rid");
    if (!rid) rid = json_member(rec, rid_field = "id");
    meta.request_id = json_id_text(rid, where, rid_field);
    const char* group_field = "group";
    const nlohmann::json* group = json_member(rec, group_field);
    if (!group) group = json_member(rec, group_field = "group_id");
    meta.group = json_id_text(group, where, group_field);
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

    auto record = [&](const nlohmann::json& rec) {
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(k++);
        meta.source_file = f.path.string();
        meta.rows_rule = LengthRule::RowsPlusOne;
        const std::string where = sample_where(f, meta.id);
        if (!rec.is_object()) throw InputError(where + ": record is not a JSON object");
        const nlohmann::json* info = json_member(rec, "meta_info");
        if (!info) throw InputError(where + ": meta_info is missing");
        if (!info->is_object()) throw InputError(where + ": meta_info is " + json_kind(*info) + ", not an object");
        read_sglang_routes(*info, where, m, routes);
        const nlohmann::json* map = json_member(*info, "physical_to_logical_map");
        if (!map) map = json_member(rec, "physical_to_logical_map");
        if (map) apply_physical_map(*map, routes, m, where);

        read_sglang_meta(rec, *info, where, meta);

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
