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

namespace routepack::detail {

namespace {

/// The routes of a serialized ndarray (wrapper, {"data", "dtype"} or plain list).
void megatron_routes(const nlohmann::json& v, const std::string& where, const std::string& field, RouteArray& routes) {
    const nlohmann::json* data = &v;
    std::string data_field = field;
    const nlohmann::json* body = nullptr;
    std::string body_field;
    if (v.is_array() && v.size() == 2 && v[0].is_string() && v[0].get_ref<const std::string&>() == "ndarray") {
        body = &v[1];
        body_field = field + "[1]";
        if (!body->is_object())
            throw InputError(where + ": " + body_field + " is " + json_kind(*body) +
                             ", not the ndarray object {\"data\", \"dtype\"}");
    } else if (v.is_object()) {
        body = &v;
        body_field = field;
    }
    if (body) {
        data = json_member(*body, "data");
        data_field = body_field + ".data";
        if (!data) throw InputError(where + ": " + data_field + " is missing");
        if (const nlohmann::json* dt = json_member(*body, "dtype")) {
            WireInt t;
            if (!dt->is_string() || !wire_int_from_name(dt->get_ref<const std::string&>(), t))
                throw InputError(where + ": " + body_field + ".dtype " + json_brief(*dt) + " is not an integer type");
        }
    }
    routes_from_json(*data, where, data_field, routes);
}

} // namespace

void parse_megatron(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string stem = f.stem();
    std::size_t k = 0, record_no = 0;
    RouteArray routes;

    auto sample = [&](const nlohmann::json& routes_json, const std::string& field, const nlohmann::json* tokens,
                      const std::string& tokens_prefix, const std::string& request_id, const std::string& group) {
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(k++);
        meta.source_file = f.path.string();
        meta.request_id = request_id;
        meta.group = group;
        meta.rows_rule = LengthRule::RowsPlusOne;
        const std::string where = sample_where(f, meta.id);
        megatron_routes(routes_json, where, field, routes);
        if (tokens) {
            const auto p = token_id_count(*tokens, "prompt_token_ids", where, tokens_prefix + "prompt_token_ids");
            const auto g =
                token_id_count(*tokens, "generation_token_ids", where, tokens_prefix + "generation_token_ids");
            if (p && g) {
                if (routes.rows != *p + *g - 1)
                    throw InputError(where + ": " + field + " has " + std::to_string(routes.rows) + " rows, but " +
                                     tokens_prefix + "prompt_token_ids + generation_token_ids = " + std::to_string(*p) +
                                     " + " + std::to_string(*g) +
                                     " tokens need total_tokens - 1 = " + std::to_string(*p + *g - 1));
                meta.prompt_len = *p;
                meta.explicit_length = *p + *g;
            }
        }
        routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where + ": " + field);
        emit(make_sample_record(routes, m, meta));
    };

    auto record = [&](const nlohmann::json& rec) {
        const std::string rwhere = f.path.string() + ": record " + std::to_string(record_no++);
        if (!rec.is_object()) throw InputError(rwhere + ": not a JSON object");
        if (const nlohmann::json* choices = json_member(rec, "choices")) {
            if (!choices->is_array()) throw InputError(rwhere + ": choices is " + json_kind(*choices) + ", not a list");
            const std::string id = json_id_text(json_member(rec, "id"), rwhere, "id");
            for (std::size_t c = 0; c < choices->size(); ++c) {
                const auto& choice = (*choices)[c];
                const std::string cf = "choices[" + std::to_string(c) + "]";
                const nlohmann::json* r = json_member(choice, "moe_topk_indices");
                if (!r) throw InputError(rwhere + ": " + cf + ".moe_topk_indices is missing");
                const nlohmann::json* tokens = &choice;
                std::string prefix = cf + ".";
                if (!json_member(choice, "prompt_token_ids"))
                    if (const nlohmann::json* msg = json_member(choice, "message"); msg && msg->is_object()) {
                        tokens = msg;
                        prefix = cf + ".message.";
                    }
                sample(*r, cf + ".moe_topk_indices", tokens, prefix, id, id);
            }
            return;
        }
        std::size_t found = 0;
        for (const auto& [key, value] : rec.items()) {
            const nlohmann::json* r = json_member(value, "routing_indices");
            if (!r) continue;
            ++found;
            sample(*r, "[\"" + printable(key) + "\"].routing_indices", nullptr, "", key, "");
        }
        if (found == 0)
            throw InputError(rwhere + ": neither choices[].moe_topk_indices (a Megatron server answer) nor "
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
