// Megatron-LM inference routing (trace-formats.md §2 "Megatron-Core").
//
// Sources read (NVIDIA/Megatron-LM d98e8a64): megatron/core/inference/inference_request.py
// (routing_indices [total_tokens - 1, num_moe_layers, top_k], int16 when experts <= 32768,
// serialize_ndarray), megatron/core/inference/text_generation_server/dynamic_text_gen_server/
// endpoints/{completions,chat_completions}.py (choices[i].moe_topk_indices), the inference example
// script (examples/inference/..., json.dump of {request_id: {..., "routing_indices": tolist()}}).
//
// Two file shapes (one JSON object, a JSON array of them, or JSON lines):
//   - server answers: {"id"?, "choices": [{"moe_topk_indices": R, "prompt_moe_topk_indices"?,
//     "prompt_token_ids"?, "generation_token_ids"?, "message"?: {...same token ids...}}]};
//     every choice is a sample, request_id and group = "id".
//   - example-script results: {"<request_id>": {"generated_tokens", ..., "routing_indices": R}};
//     every member holding routing_indices is a sample with that request id; members without it
//     (e.g. "throughput") are skipped.
//   Samples are "<stem>#<k>", k counting samples across the file.
// R is the serialized ndarray wrapper ["ndarray", {"data": [rows][layers][top_k], "dtype":
// "int16"}], a {"data", "dtype"} object, or the plain nested list (older servers: tolist()).
// prompt_moe_topk_indices is ignored: it repeats the first prompt rows of moe_topk_indices, and
// where moe_topk_indices is the 2-element wrapper the server's [:prompt_len] slice repeats the
// whole wrapper (an upstream bug), so it never holds routes of its own.
// Rows: total_tokens - 1 (the last sampled token is never forwarded), layer axis = MoE layers
// (resolve_layer_axis also accepts all layers). t_i = prompt + generated token ids when both lists
// are given (rows must then be t_i - 1), else rows + 1 (rule 1).
#include "core/import/import_detail.h"
#include "core/util/json_field.h"

#include <optional>
#include <string>

namespace routepack::detail {

namespace {

/// The routes of a serialized ndarray (wrapper, {"data", "dtype"} or plain list) at field `v`.
/// InputError "<where> is missing", JsonField's wording for a value of the wrong type ("<where>[1] is
/// 5, not the ndarray object {"data", "dtype"}", "<where>.data is missing", "<where>.dtype is 4, not a
/// string"), "<where>.dtype \"float32\" is not an integer type", or routes_from_json's errors.
void megatron_routes(const util::JsonField& v, RouteArray& routes) {
    const nlohmann::json& j = v.json();
    std::optional<util::JsonField> body;
    if (j.is_array() && j.size() == 2 && j[0].is_string() && j[0].get_ref<const std::string&>() == "ndarray") {
        body = v[std::size_t{1}];
        body->object("the ndarray object {\"data\", \"dtype\"}");
    } else if (j.is_object()) {
        body = v;
    }
    if (!body) {
        routes_from_json(v, routes);
        return;
    }
    const util::JsonField data = (*body)["data"];
    data.json(); // "is missing"
    if (const util::JsonField dt = (*body)["dtype"]; dt.given()) {
        WireInt t;
        if (!wire_int_from_name(dt.string(), t))
            throw InputError(dt.where() + " " + json_brief(dt.json()) + " is not an integer type");
    }
    routes_from_json(data, routes);
}

} // namespace

void parse_megatron(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string stem = f.stem();
    std::size_t k = 0, record_no = 0;
    RouteArray routes;

    // One sample: the routes at `field` of `holder` (a choice or a script result, its origin the
    // sample), the token ids in `tokens` (a choice or its message) when given.
    auto sample = [&](const nlohmann::json& holder, const std::string& path, const std::string& field,
                      const nlohmann::json* tokens, const std::string& tokens_path, const std::string& request_id,
                      const std::string& group) {
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(k++);
        meta.source_file = f.path.string();
        meta.request_id = request_id;
        meta.group = group;
        meta.rows_rule = LengthRule::RowsPlusOne;
        const std::string where = sample_where(f, meta.id);
        const util::JsonField routes_field = util::JsonField(holder, where, path)[field];
        megatron_routes(routes_field, routes);
        if (tokens) {
            const util::JsonField t(*tokens, where, tokens_path);
            const auto p = token_id_count(t["prompt_token_ids"]);
            const auto g = token_id_count(t["generation_token_ids"]);
            if (p && g) {
                if (routes.rows != *p + *g - 1)
                    throw InputError(routes_field.where() + " has " + std::to_string(routes.rows) + " rows, but " +
                                     tokens_path + ".prompt_token_ids + generation_token_ids = " + std::to_string(*p) +
                                     " + " + std::to_string(*g) +
                                     " tokens need total_tokens - 1 = " + std::to_string(*p + *g - 1));
                meta.prompt_len = *p;
                meta.explicit_length = *p + *g;
            }
        }
        routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, routes_field.where());
        emit(make_sample_record(routes, m, meta));
    };

    auto record = [&](const nlohmann::json& rec_json) {
        const util::JsonField rec(rec_json, f.path.string() + ": record " + std::to_string(record_no++));
        rec.object();
        if (const util::JsonField choices = rec["choices"]; choices.given()) {
            const std::size_t C = choices.list();
            const std::string id = json_id_text(rec["id"]);
            for (std::size_t c = 0; c < C; ++c) {
                const util::JsonField choice = choices[c];
                choice.object();
                choice["moe_topk_indices"].json(); // "is missing"
                const util::JsonField message = choice["message"];
                const bool in_message =
                    !choice["prompt_token_ids"].given() && message.given() && message.json().is_object();
                const util::JsonField& tokens = in_message ? message : choice;
                sample(choice.json(), choice.path(), "moe_topk_indices", &tokens.json(), tokens.path(), id, id);
            }
            return;
        }
        std::size_t found = 0;
        for (const auto& [key, value] : rec_json.items()) {
            if (!rec[key]["routing_indices"].given()) continue;
            ++found;
            sample(value, "[\"" + printable(key) + "\"]", "routing_indices", nullptr, "", key, "");
        }
        if (found == 0)
            throw InputError(rec.origin() +
                             ": neither choices[].moe_topk_indices (a Megatron server answer) nor "
                             "{request_id: {routing_indices}} (the Megatron inference script's results)");
    };

    for_each_json_value(f, [&](nlohmann::json&& v, bool) {
        if (v.is_array()) {
            for (const auto& r : v)
                record(r);
        } else {
            record(v);
        }
    });
    if (k == 0) throw InputError(f.path.string() + ": no samples");
}

} // namespace routepack::detail
