// NeMo-RL routed experts (trace-formats.md §2 "NeMo-RL").
//
// Sources read (NVIDIA-NeMo/RL 7ea279ab): nemo_rl/utils/routed_experts_codec.py (the envelope),
// nemo_rl/models/generation/vllm/utils.py pad_and_align_routed_expert_indices and
// attach_routed_experts_to_chat_response_choices (what the rows are), nemo_rl/environments/nemo_gym.py
// (NeMo Gym results).
//
// Envelope: `nrlre1:<int8|int16|int32>:<S>x<L>x<K>:<base64 of the C-contiguous little-endian
// [S][L][K] bytes>`; byte count must equal S*L*K*size. Layer axis: MoE layers only
// (resolve_layer_axis also accepts all layers).
//
// Row rule (pad_and_align_routed_expert_indices with padded_length = valid_length): S = prompt +
// generated tokens = t_i. Rows 0..S-2 are the routes of tokens 0..S-2 (a route vLLM did not return
// is -1 on every slot: counted as missing); row S-1 is always the default route arange(top_k)
// NeMo-RL writes for the last token, which is never forwarded: it is dropped, never counted. An
// envelope whose last row is not that default route was not written by NeMo-RL and is refused.
// So routed rows = S - 1 and t_i = S.
//
// Carriers:
//   - a text file of envelopes, one per non-blank line: sample "<stem>#<k>" (k-th line);
//   - OpenAI chat answers (one object, a JSON array of them, or JSON lines):
//     choices[i].message.routed_experts (envelope, or the legacy nested list decode_routed_experts
//     also accepts), with message.prompt_token_ids / generation_token_ids when NeMo-RL attached
//     token information (then t_i = both counts and must equal S); request_id and group = "id";
//   - NeMo Gym results: {"response": {"id"?, "output": [...]}}: one result is one conversation,
//     one sample (request_id = response.id, no group), however many model calls it took. Layout
//     (NVIDIA-NeMo/RL 7ea279ab, nemo_rl/environments/nemo_gym.py,
//     _postprocess_nemo_gym_to_nemo_rl_result): the items of response.output in order; an item
//     with non-empty generation_token_ids is one model call (reasoning, tool-call outputs and
//     messages without them are not; an item whose generation_token_ids is [] is skipped, as
//     NeMo-RL skips it, with a note). Each call carries prompt_token_ids = the whole conversation
//     so far (every earlier call's prompt and generation, then the new turn's tokens),
//     generation_token_ids and routed_experts of S = prompt + generated rows ending in the default
//     route. Stitching, as NeMo-RL builds its message log: call j adds its rows from the end of
//     the conversation before it (seen) to its S, and its row seen - 1 (the prefill route of the
//     previous call's last token) replaces that token's default route; rows before seen - 1 of a
//     later call (the re-prefill of tokens already routed) are not used. The sample's t_i =
//     the last call's S, routed rows t_i - 1 (the last call's default row is dropped),
//     prompt_len = the first call's prompt. A call is refused, naming the item and the reason,
//     when its prompt_token_ids do not begin with the conversation so far (NeMo-RL's
//     "Non-contiguous messages"), when it has no routed_experts, no prompt_token_ids, or a layer
//     axis or top-k unlike the first call's. A lone item with routed_experts but no token ids is
//     a one-call sample with t_i = S, as before.
//   JSON samples are "<stem>#<k>", k counting samples across the file.
#include "core/import/import_detail.h"

#include <algorithm>
#include <charconv>

namespace routepack::detail {

namespace {

bool parse_dim(std::string_view s, std::int64_t& v) {
    if (s.empty() || s.size() > 12) return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && v >= 0;
}

/// Decodes one envelope into all S rows of `routes` (axis_layer_ids left alone).
void decode_envelope(std::string_view line, const std::string& where, RouteArray& routes) {
    constexpr std::string_view kTag = "nrlre1:";
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
        throw InputError(where + ": " + std::to_string(bytes.size()) + " bytes of data, expected " + std::string(dims) +
                         " x " + std::to_string(t.size) + " = " + std::to_string(need) + " bytes (" + dtype + ")");
    if (count > kMaxRouteValues)
        throw InputError(where + ": shape '" + std::string(dims) + "' holds " + std::to_string(count) +
                         " values, more than the per-sample limit of " + std::to_string(kMaxRouteValues));
    routes.ids.resize(count);
    convert_wire_ints(bytes.data(), count, t, routes.ids.data()); // int8..int32 always fit
    routes.rows = d[0];
    routes.axis_layers = static_cast<int>(d[1]);
    routes.top_k = static_cast<int>(d[2]);
}

/// Checks that the last row is the default route arange(top_k) at every layer; InputError
/// otherwise (and for S = 0).
void check_default_route(const RouteArray& routes, const std::string& where) {
    const std::int64_t S = routes.rows;
    const std::size_t width = static_cast<std::size_t>(routes.axis_layers) * static_cast<std::size_t>(routes.top_k);
    std::string expect = "[";
    for (int s = 0; s < routes.top_k; ++s)
        expect += (s ? ", " : "") + std::to_string(s);
    expect += "]";
    if (S == 0) throw InputError(where + ": no rows (S = 0); NeMo-RL ends every sample in the default route " + expect);
    const std::int32_t* last = routes.ids.data() + static_cast<std::size_t>(S - 1) * width;
    for (int l = 0; l < routes.axis_layers; ++l)
        for (int s = 0; s < routes.top_k; ++s)
            if (last[static_cast<std::size_t>(l) * routes.top_k + s] != s)
                throw InputError(where + ": last row (row " + std::to_string(S - 1) + ") at layer position " +
                                 std::to_string(l) + " is not the default route " + expect +
                                 " that NeMo-RL writes for the final token; not a NeMo-RL routed_experts array");
}

/// Drops the last row when it is the default route arange(top_k) at every layer; InputError
/// otherwise. Returns S (rows before dropping).
std::int64_t drop_default_route(RouteArray& routes, const std::string& where) {
    check_default_route(routes, where);
    const std::int64_t S = routes.rows;
    const std::size_t width = static_cast<std::size_t>(routes.axis_layers) * static_cast<std::size_t>(routes.top_k);
    routes.rows = S - 1;
    routes.ids.resize(static_cast<std::size_t>(routes.rows) * width);
    if (routes.rows == 0) throw InputError(where + ": no routed rows (only the default route row)");
    return S;
}

/// Routes from a JSON carrier: an envelope string or a legacy nested list.
void routes_from_value(const nlohmann::json& v, const std::string& where, const std::string& field,
                       RouteArray& routes) {
    if (v.is_string()) {
        decode_envelope(v.get_ref<const std::string&>(), where + ": " + field, routes);
    } else if (v.is_array()) {
        routes_from_json(v, where, field, routes);
    } else {
        throw InputError(where + ": " + field + " is " + json_kind(v) +
                         ", not an 'nrlre1:' string or a [rows][layers][top_k] list");
    }
}

} // namespace

void parse_nemo_rl(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string stem = f.stem();
    std::size_t k = 0;
    RouteArray routes;
    const std::string_view text = text_of(f);
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) throw InputError(f.path.string() + ": empty file");

    if (text[first] != '{' && text[first] != '[') {
        for_each_line(text, [&](std::string_view line, std::size_t, std::size_t line_no) {
            SampleMeta meta;
            meta.id = stem + "#" + std::to_string(k++);
            meta.source_file = f.path.string();
            meta.rows_rule = LengthRule::RowsPlusOne;
            const std::string where = sample_where(f, meta.id) + " (line " + std::to_string(line_no) + ")";
            while (!line.empty() && (line.back() == ' ' || line.back() == '\t'))
                line.remove_suffix(1);
            while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
                line.remove_prefix(1);
            decode_envelope(line, where, routes);
            routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where);
            drop_default_route(routes, where);
            emit(make_sample_record(routes, m, meta));
        });
        if (k == 0) throw InputError(f.path.string() + ": empty file");
        return;
    }

    std::size_t record_no = 0;
    // One sample from a carrier object `holder` (a chat message or a Gym output item).
    auto sample = [&](const nlohmann::json& holder, const std::string& field_prefix, const std::string& request_id,
                      const std::string& group) {
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(k++);
        meta.source_file = f.path.string();
        meta.request_id = request_id;
        meta.group = group;
        meta.rows_rule = LengthRule::RowsPlusOne;
        const std::string where = sample_where(f, meta.id);
        const std::string field = field_prefix + "routed_experts";
        routes_from_value(holder["routed_experts"], where, field, routes);
        routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where + ": " + field);
        const std::int64_t S = drop_default_route(routes, where + ": " + field);
        const auto prompt = token_id_count(holder, "prompt_token_ids", where, field_prefix + "prompt_token_ids");
        const auto gen = token_id_count(holder, "generation_token_ids", where, field_prefix + "generation_token_ids");
        if (prompt && gen) {
            if (*prompt + *gen != S)
                throw InputError(where + ": " + field + " has " + std::to_string(S) + " rows, but " + field_prefix +
                                 "prompt_token_ids + generation_token_ids = " + std::to_string(*prompt) + " + " +
                                 std::to_string(*gen) + " tokens (NeMo-RL writes one row per token)");
            meta.prompt_len = *prompt;
            meta.explicit_length = S;
        }
        emit(make_sample_record(routes, m, meta));
    };

    std::size_t stitched_results = 0, stitched_calls = 0, results_with_empty_generations = 0;
    // One NeMo Gym result of one or more model calls into one sample (see the file comment).
    auto stitch = [&](const nlohmann::json& output, const std::vector<std::size_t>& calls,
                      const std::string& request_id) {
        SampleMeta meta;
        meta.id = stem + "#" + std::to_string(k++);
        meta.source_file = f.path.string();
        meta.request_id = request_id;
        meta.rows_rule = LengthRule::RowsPlusOne;
        const std::string where = sample_where(f, meta.id);
        std::vector<const nlohmann::json*> seen; // the conversation's token ids so far
        RouteArray call;
        std::size_t width = 0;
        for (std::size_t j = 0; j < calls.size(); ++j) {
            const std::size_t o = calls[j];
            const auto& item = output[o];
            const std::string prefix = "response.output[" + std::to_string(o) + "].";
            const std::string cwhere = where + ": " + prefix;
            const nlohmann::json* re = json_member(item, "routed_experts");
            if (!re)
                throw InputError(cwhere + "routed_experts is missing: the model call's routes are unknown (call " +
                                 std::to_string(j + 1) + " of " + std::to_string(calls.size()) + ")");
            const nlohmann::json* prompt = json_member(item, "prompt_token_ids");
            const nlohmann::json* gen = json_member(item, "generation_token_ids");
            if (!prompt || !prompt->is_array())
                throw InputError(cwhere + "prompt_token_ids is " + (prompt ? json_kind(*prompt) : "missing") +
                                 ": the model call cannot be placed in the conversation");
            if (!gen->is_array())
                throw InputError(cwhere + "generation_token_ids is " + json_kind(*gen) + ", not a list of token ids");
            const std::int64_t P = static_cast<std::int64_t>(prompt->size());
            const std::int64_t G = static_cast<std::int64_t>(gen->size());
            // NeMo-RL's contiguity check: the call's prompt begins with everything seen so far.
            if (prompt->size() < seen.size())
                throw InputError(cwhere + "prompt_token_ids holds " + std::to_string(P) + " tokens, fewer than the " +
                                 std::to_string(seen.size()) +
                                 " of the conversation before this call: the call cannot be placed");
            for (std::size_t t = 0; t < seen.size(); ++t)
                if (!((*prompt)[t] == *seen[t]))
                    throw InputError(cwhere + "prompt_token_ids[" + std::to_string(t) + "] is " +
                                     json_brief((*prompt)[t]) + " but token " + std::to_string(t) +
                                     " of the conversation before this call is " + json_brief(*seen[t]) +
                                     ": the call does not continue it (non-contiguous messages) and cannot be placed");
            routes_from_value(*re, where, prefix + "routed_experts", call);
            const std::string fwhere = cwhere + "routed_experts";
            call.axis_layer_ids = resolve_layer_axis(call.axis_layers, m, fwhere);
            check_default_route(call, fwhere);
            if (call.rows != P + G)
                throw InputError(fwhere + " has " + std::to_string(call.rows) + " rows, but " + prefix +
                                 "prompt_token_ids + generation_token_ids = " + std::to_string(P) + " + " +
                                 std::to_string(G) + " tokens (NeMo-RL writes one row per token)");
            if (j == 0) {
                routes.axis_layers = call.axis_layers;
                routes.top_k = call.top_k;
                routes.axis_layer_ids = call.axis_layer_ids;
                routes.rows = 0;
                routes.ids.clear();
                width = static_cast<std::size_t>(call.axis_layers) * static_cast<std::size_t>(call.top_k);
                meta.prompt_len = P;
            } else if (call.axis_layers != routes.axis_layers || call.top_k != routes.top_k) {
                throw InputError(fwhere + " is [" + std::to_string(call.rows) + "][" +
                                 std::to_string(call.axis_layers) + "][" + std::to_string(call.top_k) +
                                 "], but the first call's layer axis and top-k are [" +
                                 std::to_string(routes.axis_layers) + "][" + std::to_string(routes.top_k) + "]");
            }
            const std::size_t from = seen.size();
            if (from > 0) // the previous call's last token, routed for real by this call's prefill
                std::copy_n(call.ids.begin() + static_cast<std::ptrdiff_t>((from - 1) * width), width,
                            routes.ids.begin() + static_cast<std::ptrdiff_t>((from - 1) * width));
            routes.ids.insert(routes.ids.end(), call.ids.begin() + static_cast<std::ptrdiff_t>(from * width),
                              call.ids.end());
            routes.rows = call.rows;
            if (static_cast<std::uint64_t>(routes.ids.size()) > kMaxRouteValues)
                throw InputError(where + ": the stitched conversation holds " + std::to_string(routes.ids.size()) +
                                 " route values, more than the per-sample limit of " + std::to_string(kMaxRouteValues));
            for (std::size_t t = from; t < prompt->size(); ++t)
                seen.push_back(&(*prompt)[t]);
            for (const auto& g : *gen)
                seen.push_back(&g);
        }
        const std::int64_t S = routes.rows;
        routes.rows = S - 1; // the last call's default route
        routes.ids.resize(static_cast<std::size_t>(routes.rows) * width);
        if (routes.rows == 0) throw InputError(where + ": no routed rows (only the default route row)");
        meta.explicit_length = S;
        if (calls.size() > 1) {
            ++stitched_results;
            stitched_calls += calls.size();
        }
        emit(make_sample_record(routes, m, meta));
    };

    auto record = [&](const nlohmann::json& rec) {
        const std::string rwhere = f.path.string() + ": record " + std::to_string(record_no++);
        if (!rec.is_object()) throw InputError(rwhere + ": not a JSON object");
        if (const nlohmann::json* choices = json_member(rec, "choices")) {
            if (!choices->is_array()) throw InputError(rwhere + ": choices is " + json_kind(*choices) + ", not a list");
            const std::string id = json_id_text(json_member(rec, "id"), rwhere, "id");
            for (std::size_t c = 0; c < choices->size(); ++c) {
                const std::string cf = "choices[" + std::to_string(c) + "]";
                const nlohmann::json* msg = json_member((*choices)[c], "message");
                if (!msg || !json_member(*msg, "routed_experts"))
                    throw InputError(rwhere + ": " + cf + ".message.routed_experts is missing");
                sample(*msg, cf + ".message.", id, id);
            }
            return;
        }
        const nlohmann::json* resp = json_member(rec, "response");
        const nlohmann::json* output = resp ? json_member(*resp, "output") : nullptr;
        if (!output)
            throw InputError(rwhere + ": neither choices[].message.routed_experts (a NeMo-RL chat answer) nor "
                                      "response.output[].routed_experts (a NeMo Gym result)");
        if (!output->is_array())
            throw InputError(rwhere + ": response.output is " + json_kind(*output) + ", not a list");
        const std::string id = json_id_text(json_member(*resp, "id"), rwhere, "response.id");
        // The model calls: items with non-empty generation_token_ids (or, without token ids, a
        // lone item carrying routed_experts).
        std::vector<std::size_t> calls, routed;
        std::size_t empty_generations = 0;
        for (std::size_t o = 0; o < output->size(); ++o) {
            const auto& item = (*output)[o];
            const nlohmann::json* gen = json_member(item, "generation_token_ids");
            if (json_member(item, "routed_experts")) routed.push_back(o);
            if (gen && gen->is_array() && gen->empty()) {
                ++empty_generations;
                continue;
            }
            if (gen && !gen->is_null()) calls.push_back(o);
        }
        if (routed.empty()) throw InputError(rwhere + ": no response.output item carries routed_experts");
        if (calls.empty() && routed.size() == 1) {
            sample((*output)[routed[0]], "response.output[" + std::to_string(routed[0]) + "].", id, "");
        } else if (calls.empty()) {
            throw InputError(rwhere + ": response.output items " + std::to_string(routed[0]) + " and " +
                             std::to_string(routed[1]) +
                             " carry routed_experts without generation_token_ids: the model calls cannot be placed "
                             "in one conversation");
        } else {
            stitch(*output, calls, id);
        }
        if (empty_generations > 0) ++results_with_empty_generations;
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
    if (stitched_results > 0)
        add_import_note(f.path.string() + ": stitched " + std::to_string(stitched_calls) + " model calls of " +
                        std::to_string(stitched_results) +
                        " NeMo Gym results into one sample per result (one conversation each)");
    if (results_with_empty_generations > 0)
        add_import_note(f.path.string() + ": " + std::to_string(results_with_empty_generations) +
                        " NeMo Gym results hold output items with empty generation_token_ids, skipped as NeMo-RL "
                        "skips them");
}

} // namespace routepack::detail
