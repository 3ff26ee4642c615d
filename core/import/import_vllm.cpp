// vLLM OpenAI completion / chat-completion responses with routed experts (trace-formats.md §2
// "vLLM").
//
// File: one response object, a JSON array of them, or JSON lines of them. Response shape:
//   {"id", "choices": [{"index", "routed_experts": "<base64 of an .npy file>", "token_ids"?,
//     "prompt_token_ids"?, ...}], "prompt_routed_experts"?: "<base64 .npy>", "prompt_token_ids"?,
//    "usage"?: {"prompt_tokens", ...}}
// Every choice is one sample "<stem>#<k>", k counting choices across the whole file; request_id and
// group are the response "id" (the choices of one request form one GRPO group).
// The .npy header is always read: dtype from its descr, layer axis from shape[1] (num_hidden_layers
// = all layers, number of MoE layers = MoE only, via resolve_layer_axis), top_k from shape[2].
// v0.21 split mode: prompt_routed_experts rows are prepended to every choice's rows (their layer
// axis and top_k must match); prompt_len = its rows. v0.21 servers send both as nested JSON lists
// [rows][layers][top_k] instead of base64 .npy (vllm-project/vllm v0.21.0
// vllm/entrypoints/openai/completion/serving.py, docs training/routed_experts_replay); both are read.
// The choices of different prompts (per-choice prompt_token_ids that differ) get groups "<id>/p<j>".
// A surplus final row (rows = t_i when token ids say t_i) is dropped.
// Length: explicit when the choice has "token_ids" and the choice or response has
// "prompt_token_ids" (t_i = both counts, prompt_len = prompt ids); otherwise rows + 1 (rule 1),
// prompt_len = the prompt ids' count when given, else the prompt part's rows.
// usage.prompt_tokens sums the prompts of a request (completion/serving.py
// request_output_to_completion_response adds len(prompt_token_ids) per prompt; the choices come
// prompt by prompt, n each), so it is a choice's prompt_len only when the response provably holds
// one prompt (usage_prompts below); a request over several prompts keeps its choices' prompt
// lengths unknown (the response states only their sum) and groups them by prompt, with a note.
#include "core/import/import_detail.h"
#include "core/util/json_field.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace routepack::detail {

namespace {

std::string shape_str(const std::vector<std::int64_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) s += ",";
    return s + ")";
}

/// A routes field: base64 of an .npy file [rows][layers][top_k], or (v0.21) the nested list. InputError
/// "<where> is missing", "<where> is 5, not a base64 string or a nested list" (JsonField's wording),
/// or naming the .npy's fault.
NpyArray decode_npy_field(const util::JsonField& v) {
    const nlohmann::json& j = v.json();
    if (j.is_array()) {
        // v0.21 server: nested JSON lists [rows][layers][top_k] (int16 values).
        RouteArray r;
        routes_from_json(v, r);
        NpyArray a;
        a.shape = {r.rows, r.axis_layers, r.top_k};
        a.descr = "json";
        a.values = std::move(r.ids);
        return a;
    }
    if (!j.is_string()) v.fail("a base64 string or a nested list");
    const std::string at = v.where();
    const std::string bytes = base64_decode(j.get_ref<const std::string&>(), at);
    NpyArray a = parse_npy(bytes, at);
    if (a.shape.size() != 3)
        throw InputError(at + " has shape " + shape_str(a.shape) + ", expected [rows][layers][top_k]");
    return a;
}

/// A token count of usage: nullopt when absent or null, else an integer in 0..kMaxTokens (an
/// integral float accepted).
std::optional<std::int64_t> usage_count(const util::JsonField& v) {
    if (!v.given()) return std::nullopt;
    return v.integer(0, kMaxTokens, util::IntegralFloats::Accept);
}

/// t_i = P + G and prompt_len = P of choice c from its prompt and generated token ids. One row per
/// token but the last generated one (a surplus final row allowed, then dropped from `routes`): the
/// prompt part (when `prompt` is given) holds the prompt's P rows and the choice's array G - 1 (or
/// G); a single array covers prompt and completion, or the completion alone. InputError naming
/// the counts otherwise.
void lengths_from_token_ids(std::int64_t P, std::int64_t G, const NpyArray* prompt, std::int64_t completion_rows,
                            std::size_t c, const std::string& where, const std::string& field, SampleMeta& meta,
                            RouteArray& routes) {
    const auto one_of = [](std::int64_t v, std::int64_t n) { return v == n - 1 || v == n; };
    const bool consistent = prompt ? prompt->shape[0] == P && one_of(completion_rows, G)
                                   : one_of(completion_rows, P + G) || one_of(completion_rows, G);
    if (!consistent) {
        const std::string tokens = "prompt_token_ids + " + std::string("choices[") + std::to_string(c) +
                                   "].token_ids = " + std::to_string(P) + " + " + std::to_string(G) + " tokens";
        if (prompt)
            throw InputError(where + ": prompt_routed_experts has " + std::to_string(prompt->shape[0]) + " rows and " +
                             field + " " + std::to_string(completion_rows) + ", but " + tokens +
                             " (vLLM writes one prompt row per prompt token and one row per "
                             "generated token but the last: " +
                             std::to_string(P) + " and " + std::to_string(std::max<std::int64_t>(G - 1, 0)) + " rows)");
        throw InputError(where + ": " + field + " has " + std::to_string(completion_rows) + " rows, but " + tokens +
                         " (vLLM writes one row per token but the last generated one: " +
                         std::to_string(std::max<std::int64_t>(P + G - 1, 0)) + " rows, or " +
                         std::to_string(std::max<std::int64_t>(G - 1, 0)) + " for the completion alone)");
    }
    meta.prompt_len = P;
    meta.explicit_length = P + G;
    // One surplus final row (the last sampled token's) may appear: rows = t_i.
    if (routes.rows == *meta.explicit_length && routes.rows > 0) {
        --routes.rows;
        routes.ids.resize(routes.ids.size() -
                          static_cast<std::size_t>(routes.axis_layers) * static_cast<std::size_t>(routes.top_k));
    }
}

/// How usage.prompt_tokens S applies to the C choices of a response none of which carries prompt
/// token ids or a prompt part. With t_c = rows_c + 1 (choice c's prompt and completion tokens), K
/// prompts of n = C / K choices each and G = usage.completion_tokens (the completions' sum):
/// sum_c t_c = n * S + G. One choice, or sum_c t_c = C * S + G: one prompt, S is every choice's
/// prompt length. Otherwise K = C * S / (sum_c t_c - G) when that is a whole divisor of C, K >= 2:
/// K prompts, their lengths unknown. Any other case (G missing with C > 1, or no such K): unknown.
struct UsagePrompts {
    bool each = false;       ///< S is every choice's prompt length
    std::int64_t groups = 1; ///< K prompts (choices c / (C / K) share prompt j)
    std::string note;        ///< why the prompt lengths stay unknown (empty when `each`)
};

UsagePrompts usage_prompts(std::int64_t S, std::optional<std::int64_t> G, const std::vector<std::int64_t>& t,
                           const std::string& rwhere) {
    __extension__ typedef __int128 i128;
    UsagePrompts u;
    const auto C = static_cast<std::int64_t>(t.size());
    i128 sum_t = 0;
    for (const std::int64_t v : t)
        sum_t += v;
    const std::string head = rwhere + ": usage.prompt_tokens = " + std::to_string(S);
    if (C == 1 || (G && sum_t == i128(C) * S + *G)) {
        u.each = true;
        return u;
    }
    if (!G) {
        u.note = head + " is the sum over the request's prompts and " + std::to_string(C) +
                 " choices carry no prompt token ids (and usage no completion_tokens to tell the prompts apart): "
                 "their prompt lengths are left unknown";
        return u;
    }
    const i128 prompt_part = sum_t - *G; // n * S
    const i128 k = prompt_part > 0 && (i128(C) * S) % prompt_part == 0 ? i128(C) * S / prompt_part : 0;
    const std::string tokens = "usage.completion_tokens = " + std::to_string(*G) + " and the " + std::to_string(C) +
                               " choices' " + std::to_string(static_cast<std::int64_t>(sum_t)) + " tokens";
    if (k >= 2 && k <= C && C % static_cast<std::int64_t>(k) == 0) {
        u.groups = static_cast<std::int64_t>(k);
        u.note = head + " sums " + std::to_string(u.groups) + " prompts of " + std::to_string(C / u.groups) +
                 " choices each (from " + tokens +
                 "); the response does not state each prompt's length: left "
                 "unknown (request return_token_ids for them), choices grouped by prompt";
        return u;
    }
    u.note = head + " matches no prompt layout of " + tokens + ": prompt lengths left unknown";
    return u;
}

} // namespace

void parse_vllm(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string stem = f.stem();
    std::size_t k = 0, response_no = 0;
    RouteArray routes;

    auto response = [&](const nlohmann::json& resp_json) {
        const util::JsonField resp(resp_json, f.path.string() + ": response " + std::to_string(response_no++));
        resp.object();
        const util::JsonField choices = resp["choices"];
        const std::size_t C = choices.list();
        const std::string request_id = json_id_text(resp["id"]);

        NpyArray prompt;
        const util::JsonField prompt_routes = resp["prompt_routed_experts"];
        const bool have_prompt = prompt_routes.given();
        if (have_prompt) prompt = decode_npy_field(prompt_routes);
        const std::optional<std::int64_t> resp_prompt_ids = token_id_count(resp["prompt_token_ids"]);
        std::optional<std::int64_t> usage_prompt, usage_completion;
        if (const util::JsonField usage = resp["usage"]; usage.given()) {
            usage.object();
            usage_prompt = usage_count(usage["prompt_tokens"]);
            usage_completion = usage_count(usage["completion_tokens"]);
        }

        // Every choice's routes first: the usage check needs all their row counts. A choice's
        // errors name its sample.
        std::vector<util::JsonField> choice;
        std::vector<NpyArray> arrays(C);
        std::vector<std::string> ids(C);
        choice.reserve(C);
        for (std::size_t c = 0; c < C; ++c) {
            ids[c] = stem + "#" + std::to_string(k++);
            choice.emplace_back(choices.json()[c], sample_where(f, ids[c]), "choices[" + std::to_string(c) + "]");
            choice[c].object();
            arrays[c] = decode_npy_field(choice[c]["routed_experts"]);
        }
        // A request over several prompts answers choices of different prompts: they are different
        // GRPO groups. Choices carrying prompt_token_ids are grouped by them ("<id>/p<j>", j the
        // j-th distinct prompt) when more than one distinct prompt appears.
        std::vector<std::size_t> prompt_no(C, 0);
        std::size_t distinct = 0;
        {
            std::vector<const nlohmann::json*> seen;
            for (std::size_t c = 0; c < C; ++c) {
                const util::JsonField p = choice[c]["prompt_token_ids"];
                if (!p.given()) continue;
                std::size_t j = 0;
                while (j < seen.size() && !(*seen[j] == p.json()))
                    ++j;
                if (j == seen.size()) seen.push_back(&p.json());
                prompt_no[c] = j;
            }
            distinct = seen.size();
        }
        UsagePrompts usage_rule;
        if (usage_prompt && !have_prompt && !resp_prompt_ids && distinct == 0 && C > 0) {
            std::vector<std::int64_t> t;
            for (const NpyArray& a : arrays)
                t.push_back(a.shape[0] + 1);
            usage_rule =
                usage_prompts(*usage_prompt, usage_completion, t, resp.origin() + " (id '" + request_id + "')");
            if (!usage_rule.each) add_import_note(usage_rule.note);
        }
        for (std::size_t c = 0; c < C; ++c) {
            SampleMeta meta;
            meta.id = ids[c];
            meta.source_file = f.path.string();
            meta.request_id = request_id;
            meta.group = distinct > 1 ? request_id + "/p" + std::to_string(prompt_no[c]) : request_id;
            if (usage_rule.groups > 1)
                meta.group =
                    request_id + "/p" +
                    std::to_string(static_cast<std::int64_t>(c) / (static_cast<std::int64_t>(C) / usage_rule.groups));
            meta.rows_rule = LengthRule::RowsPlusOne;
            const std::string& where = choice[c].origin();
            const std::string field = choice[c].path() + ".routed_experts";
            NpyArray a = std::move(arrays[c]);
            if (have_prompt && (prompt.shape[1] != a.shape[1] || prompt.shape[2] != a.shape[2]))
                throw InputError(where + ": " + field + " has shape " + shape_str(a.shape) +
                                 " but prompt_routed_experts has " + shape_str(prompt.shape) +
                                 ": layer axis and top-k must match");

            if (a.shape[1] > INT32_MAX || a.shape[2] > INT32_MAX)
                throw InputError(where + ": " + field + " has shape " + shape_str(a.shape) + ", too large");
            routes.axis_layers = static_cast<int>(a.shape[1]);
            routes.top_k = static_cast<int>(a.shape[2]);
            routes.rows = a.shape[0] + (have_prompt ? prompt.shape[0] : 0);
            if (have_prompt) {
                routes.ids.assign(prompt.values.begin(), prompt.values.end());
                routes.ids.insert(routes.ids.end(), a.values.begin(), a.values.end());
            } else {
                routes.ids.swap(a.values);
            }
            routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where + ": " + field);

            const std::optional<std::int64_t> token_ids = token_id_count(choice[c]["token_ids"]);
            std::optional<std::int64_t> prompt_ids = token_id_count(choice[c]["prompt_token_ids"]);
            if (!prompt_ids) prompt_ids = resp_prompt_ids;
            if (token_ids && prompt_ids) {
                lengths_from_token_ids(*prompt_ids, *token_ids, have_prompt ? &prompt : nullptr, a.shape[0], c, where,
                                       field, meta, routes);
            } else if (prompt_ids) {
                meta.prompt_len = *prompt_ids;
            } else if (have_prompt) {
                meta.prompt_len = prompt.shape[0]; // the prompt part covers every prompt token
            } else if (usage_prompt && usage_rule.each) {
                meta.prompt_len = *usage_prompt;
            }
            emit(make_sample_record(routes, m, meta));
        }
    };

    for_each_json_value(f, [&](nlohmann::json&& v, bool) {
        if (v.is_array()) {
            for (const auto& r : v)
                response(r);
        } else {
            response(v);
        }
    });
    if (k == 0) throw InputError(f.path.string() + ": no choices with routed_experts in the file");
}

} // namespace routepack::detail
