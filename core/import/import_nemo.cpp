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
#include "core/util/json_field.h"

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

/// Routes from a JSON carrier `v`: an envelope string or a legacy nested list. InputError "<where> is
/// missing", "<where> is 5, not an 'nrlre1:' string or a [rows][layers][top_k] list" (JsonField's
/// wording), or the envelope's or the list's errors.
void routes_from_value(const util::JsonField& v, RouteArray& routes) {
    const nlohmann::json& j = v.json();
    if (j.is_string()) {
        decode_envelope(j.get_ref<const std::string&>(), v.where(), routes);
    } else if (j.is_array()) {
        routes_from_json(v, routes);
    } else {
        v.fail("an 'nrlre1:' string or a [rows][layers][top_k] list");
    }
}

/// A text file of envelopes, one sample per non-blank line (see the file comment).
void parse_envelope_lines(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string stem = f.stem();
    std::size_t k = 0;
    RouteArray routes;
    for_each_line(text_of(f), [&](std::string_view line, std::size_t, std::size_t line_no) {
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
}

/// The JSON carriers of one file (chat answers, NeMo Gym results: see the file comment), one
/// top-level record at a time; samples are "<stem>#<k>", k counting samples across the file.
class NemoJsonReader {
public:
    NemoJsonReader(const SourceFile& f, const ModelDescription& m, const EmitFn& emit)
        : f_(f), m_(m), emit_(emit), stem_(f.stem()) {}

    /// One top-level record: a chat answer (choices[]) or a NeMo Gym result (response.output[]).
    /// InputError naming the record ("<path>: record 2 is 5, not an object", "<path>: record 0:
    /// choices is 5, not a list": JsonField's wording) or the sample.
    void record(const nlohmann::json& rec_json);
    /// Samples emitted so far.
    std::size_t samples() const { return k_; }
    /// Adds the notes on stitched results and skipped empty generations.
    void add_notes() const;

private:
    SampleMeta next_meta(const std::string& request_id);
    void sample(const nlohmann::json& holder, const std::string& path, const std::string& request_id,
                const std::string& group);
    void stitch(const nlohmann::json& output, const std::vector<std::size_t>& calls, const std::string& request_id);
    void gym_result(const util::JsonField& resp, const util::JsonField& output);

    const SourceFile& f_;
    const ModelDescription& m_;
    const EmitFn& emit_;
    const std::string stem_;
    std::size_t k_ = 0, record_no_ = 0;
    RouteArray routes_;
    std::size_t stitched_results_ = 0, stitched_calls_ = 0, results_with_empty_generations_ = 0;
};

SampleMeta NemoJsonReader::next_meta(const std::string& request_id) {
    SampleMeta meta;
    meta.id = stem_ + "#" + std::to_string(k_++);
    meta.source_file = f_.path.string();
    meta.request_id = request_id;
    meta.rows_rule = LengthRule::RowsPlusOne;
    return meta;
}

/// One sample from a carrier object `holder` (a chat message or a Gym output item) at `path` of the
/// record; its errors name the sample.
void NemoJsonReader::sample(const nlohmann::json& holder, const std::string& path, const std::string& request_id,
                            const std::string& group) {
    SampleMeta meta = next_meta(request_id);
    meta.group = group;
    const util::JsonField h(holder, sample_where(f_, meta.id), path);
    const util::JsonField re = h["routed_experts"];
    routes_from_value(re, routes_);
    const std::string at = re.where();
    routes_.axis_layer_ids = resolve_layer_axis(routes_.axis_layers, m_, at);
    const std::int64_t S = drop_default_route(routes_, at);
    const auto prompt = token_id_count(h["prompt_token_ids"]);
    const auto gen = token_id_count(h["generation_token_ids"]);
    if (prompt && gen) {
        if (*prompt + *gen != S)
            throw InputError(at + " has " + std::to_string(S) + " rows, but " + path +
                             ".prompt_token_ids + generation_token_ids = " + std::to_string(*prompt) + " + " +
                             std::to_string(*gen) + " tokens (NeMo-RL writes one row per token)");
        meta.prompt_len = *prompt;
        meta.explicit_length = S;
    }
    emit_(make_sample_record(routes_, m_, meta));
}

/// Checks model call `item` (call j of n, "<sample>: response.output[o]") before its routes are read:
/// routed_experts present, prompt_token_ids and generation_token_ids lists (JsonField's wording: "...
/// is 5, not a list of token ids"), and the prompt beginning with the conversation `seen` so far
/// (NeMo-RL's contiguity check).
void check_model_call(const util::JsonField& item, std::size_t j, std::size_t n,
                      const std::vector<const nlohmann::json*>& seen) {
    if (const util::JsonField re = item["routed_experts"]; !re.given())
        throw InputError(re.where() + " is missing: the model call's routes are unknown (call " +
                         std::to_string(j + 1) + " of " + std::to_string(n) + ")");
    const util::JsonField prompt = item["prompt_token_ids"];
    if (!prompt.given())
        throw InputError(prompt.where() + " is missing: the model call cannot be placed in the conversation");
    const std::size_t P = prompt.list("a list of token ids");
    item["generation_token_ids"].list("a list of token ids");
    if (P < seen.size())
        throw InputError(prompt.where() + " holds " + std::to_string(P) + " tokens, fewer than the " +
                         std::to_string(seen.size()) +
                         " of the conversation before this call: the call cannot be placed");
    for (std::size_t t = 0; t < seen.size(); ++t)
        if (!(prompt.json()[t] == *seen[t]))
            throw InputError(prompt.where() + "[" + std::to_string(t) + "] is " + json_brief(prompt.json()[t]) +
                             " but token " + std::to_string(t) + " of the conversation before this call is " +
                             json_brief(*seen[t]) +
                             ": the call does not continue it (non-contiguous messages) and cannot be placed");
}

/// One NeMo Gym result of one or more model calls (`calls`: indices into `output`) into one
/// sample (see the file comment).
void NemoJsonReader::stitch(const nlohmann::json& output, const std::vector<std::size_t>& calls,
                            const std::string& request_id) {
    SampleMeta meta = next_meta(request_id);
    const std::string where = sample_where(f_, meta.id);
    std::vector<const nlohmann::json*> seen; // the conversation's token ids so far
    RouteArray call;
    std::size_t width = 0;
    for (std::size_t j = 0; j < calls.size(); ++j) {
        const std::size_t o = calls[j];
        const util::JsonField item(output[o], where, "response.output[" + std::to_string(o) + "]");
        check_model_call(item, j, calls.size(), seen);
        const nlohmann::json& prompt = item["prompt_token_ids"].json();
        const nlohmann::json& gen = item["generation_token_ids"].json();
        const std::int64_t P = static_cast<std::int64_t>(prompt.size());
        const std::int64_t G = static_cast<std::int64_t>(gen.size());
        const util::JsonField re = item["routed_experts"];
        routes_from_value(re, call);
        const std::string fwhere = re.where();
        call.axis_layer_ids = resolve_layer_axis(call.axis_layers, m_, fwhere);
        check_default_route(call, fwhere);
        if (call.rows != P + G)
            throw InputError(fwhere + " has " + std::to_string(call.rows) + " rows, but " + item.path() +
                             ".prompt_token_ids + generation_token_ids = " + std::to_string(P) + " + " +
                             std::to_string(G) + " tokens (NeMo-RL writes one row per token)");
        if (j == 0) {
            routes_.axis_layers = call.axis_layers;
            routes_.top_k = call.top_k;
            routes_.axis_layer_ids = call.axis_layer_ids;
            routes_.rows = 0;
            routes_.ids.clear();
            width = static_cast<std::size_t>(call.axis_layers) * static_cast<std::size_t>(call.top_k);
            meta.prompt_len = P;
        } else if (call.axis_layers != routes_.axis_layers || call.top_k != routes_.top_k) {
            throw InputError(fwhere + " is [" + std::to_string(call.rows) + "][" + std::to_string(call.axis_layers) +
                             "][" + std::to_string(call.top_k) + "], but the first call's layer axis and top-k are [" +
                             std::to_string(routes_.axis_layers) + "][" + std::to_string(routes_.top_k) + "]");
        }
        const std::size_t from = seen.size();
        const std::int32_t* ids = call.ids.data();
        if (from > 0) // the previous call's last token, routed for real by this call's prefill
            std::copy_n(ids + (from - 1) * width, width, routes_.ids.data() + (from - 1) * width);
        routes_.ids.insert(routes_.ids.end(), ids + from * width, ids + call.ids.size());
        routes_.rows = call.rows;
        if (routes_.ids.size() > kMaxRouteValues)
            throw InputError(where + ": the stitched conversation holds " + std::to_string(routes_.ids.size()) +
                             " route values, more than the per-sample limit of " + std::to_string(kMaxRouteValues));
        for (std::size_t t = from; t < prompt.size(); ++t)
            seen.push_back(&prompt[t]);
        for (const auto& g : gen)
            seen.push_back(&g);
    }
    const std::int64_t S = routes_.rows;
    routes_.rows = S - 1; // the last call's default route
    routes_.ids.resize(static_cast<std::size_t>(routes_.rows) * width);
    if (routes_.rows == 0) throw InputError(where + ": no routed rows (only the default route row)");
    meta.explicit_length = S;
    if (calls.size() > 1) {
        ++stitched_results_;
        stitched_calls_ += calls.size();
    }
    emit_(make_sample_record(routes_, m_, meta));
}

/// A NeMo Gym result `resp` whose response.output is the list `output`: its model calls are the
/// items with non-empty generation_token_ids (or, without token ids, a lone item carrying
/// routed_experts).
void NemoJsonReader::gym_result(const util::JsonField& resp, const util::JsonField& output) {
    const std::string id = json_id_text(resp["id"]);
    const std::string& rwhere = resp.origin();
    std::vector<std::size_t> calls, routed;
    std::size_t empty_generations = 0;
    for (std::size_t o = 0; o < output.json().size(); ++o) {
        const util::JsonField item = output[o];
        const util::JsonField gen = item["generation_token_ids"];
        if (item["routed_experts"].given()) routed.push_back(o);
        if (gen.given() && gen.json().is_array() && gen.json().empty()) {
            ++empty_generations;
            continue;
        }
        if (gen.given()) calls.push_back(o);
    }
    if (routed.empty()) throw InputError(rwhere + ": no response.output item carries routed_experts");
    if (calls.empty() && routed.size() == 1) {
        sample(output.json()[routed[0]], output[routed[0]].path(), id, "");
    } else if (calls.empty()) {
        throw InputError(rwhere + ": response.output items " + std::to_string(routed[0]) + " and " +
                         std::to_string(routed[1]) +
                         " carry routed_experts without generation_token_ids: the model calls cannot be placed "
                         "in one conversation");
    } else {
        stitch(output.json(), calls, id);
    }
    if (empty_generations > 0) ++results_with_empty_generations_;
}

void NemoJsonReader::record(const nlohmann::json& rec_json) {
    const util::JsonField rec(rec_json, f_.path.string() + ": record " + std::to_string(record_no_++));
    rec.object();
    if (const util::JsonField choices = rec["choices"]; choices.given()) {
        const std::size_t C = choices.list();
        const std::string id = json_id_text(rec["id"]);
        for (std::size_t c = 0; c < C; ++c) {
            const util::JsonField message = choices[c]["message"];
            message["routed_experts"].json(); // "<record>: choices[c].message.routed_experts is missing"
            sample(message.json(), message.path(), id, id);
        }
        return;
    }
    const util::JsonField resp = rec["response"];
    const util::JsonField output = resp["output"];
    if (!output.given())
        throw InputError(rec.origin() + ": neither choices[].message.routed_experts (a NeMo-RL chat answer) nor "
                                        "response.output[].routed_experts (a NeMo Gym result)");
    output.list();
    gym_result(resp, output);
}

void NemoJsonReader::add_notes() const {
    if (stitched_results_ > 0)
        add_import_note(f_.path.string() + ": stitched " + std::to_string(stitched_calls_) + " model calls of " +
                        std::to_string(stitched_results_) +
                        " NeMo Gym results into one sample per result (one conversation each)");
    if (results_with_empty_generations_ > 0)
        add_import_note(f_.path.string() + ": " + std::to_string(results_with_empty_generations_) +
                        " NeMo Gym results hold output items with empty generation_token_ids, skipped as NeMo-RL "
                        "skips them");
}

} // namespace

void parse_nemo_rl(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string_view text = text_of(f);
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) throw InputError(f.path.string() + ": empty file");
    if (text[first] != '{' && text[first] != '[') return parse_envelope_lines(f, m, emit);

    NemoJsonReader reader(f, m, emit);
    for_each_json_value(f, [&](nlohmann::json&& v, bool) {
        if (v.is_array()) {
            for (const auto& r : v)
                reader.record(r);
        } else {
            reader.record(v);
        }
    });
    if (reader.samples() == 0) throw InputError(f.path.string() + ": no samples");
    reader.add_notes();
}

} // namespace routepack::detail
