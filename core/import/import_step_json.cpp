// Per-request step JSON (trace-formats.md §5.2, the llama4-maverick set): a JSON list of forward
// steps; step 0 is the prefill, each later step one decode token. A step maps layer id strings to
// null (dense layer) or a list with one entry per token of that step, each a list of top_k expert ids.
// Layer ids are canonical decimal strings ("7", never "07", "+7" or " 7") below num_hidden_layers.
// The format has no missing-route marker: null stands only for a whole dense layer, so null or -1
// inside a token's list is an error.
// Length rule: replay rows, t_i = rows + 1 (RowsPlusOne); prompt_len = tokens of step 0.
// Sample id = "<parent folder>/<file stem>".
#include "core/import/import_detail.h"
#include "core/util/json_field.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace routepack::detail {

namespace {

/// Parses a layer-id key: decimal digits, no sign, spaces or leading zeros, at most kMaxLayerId.
bool parse_layer_key(const std::string& k, int& id) {
    if (k.empty() || k.size() > 6 || (k.size() > 1 && k[0] == '0')) return false;
    int v = 0;
    for (char c : k) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    if (v > kMaxLayerId) return false;
    id = v;
    return true;
}

/// Non-null layer ids of one step object, ascending; InputError for a key that is not a layer id.
/// `max_key` receives the largest key, null ones included (-1 for an empty object).
std::vector<int> step_layers(const nlohmann::json& step, const std::string& where, int* max_key = nullptr) {
    std::vector<int> layers;
    int top = -1;
    for (auto it = step.begin(); it != step.end(); ++it) {
        int id = 0;
        const std::string& k = it.key();
        if (!parse_layer_key(k, id))
            throw InputError(where + ": key '" + printable(k) + "' is not a layer id (a decimal number 0.." +
                             std::to_string(kMaxLayerId) + " without sign, spaces or leading zeros)");
        top = std::max(top, id);
        if (!it.value().is_null()) layers.push_back(id);
    }
    std::sort(layers.begin(), layers.end());
    if (max_key) *max_key = top;
    return layers;
}

/// Every key of a step, null ones (dense layers) included, names a layer of the model.
void check_keys_below(int max_key, const ModelDescription& m, const std::string& where) {
    if (max_key >= m.num_hidden_layers)
        throw InputError(where + ": layer id " + std::to_string(max_key) + " is not below the model's " +
                         std::to_string(m.num_hidden_layers) + " decoder layers");
}

} // namespace

void parse_step_json(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const std::string_view text = text_of(f);
    const nlohmann::json j = parse_json_text(f, text, f.bytes.size() - text.size(), 0);
    const std::string file = f.path.string();
    const std::string id = f.parent_and_stem();
    if (!j.is_array()) throw InputError(file + ": expected a JSON list of forward steps");
    if (j.empty()) throw InputError(file + ": no forward steps");
    if (!j[0].is_object()) throw InputError(file + ": step 0 is not an object of layers");
    int max_key = -1;
    const std::vector<int> layers = step_layers(j[0], file + ": step 0", &max_key);
    if (layers != m.moe_layers)
        throw InputError(file + ": MoE layer set " +
                         (layers.empty() ? std::string("(none)") : format_layer_list(layers)) +
                         " differs from the model's " + format_layer_list(m.moe_layers));
    check_keys_below(max_key, m, file + ": step 0");
    const std::size_t L = layers.size();
    const int K = m.top_k;
    const int E = m.experts;
    std::vector<std::string> keys(L);
    for (std::size_t l = 0; l < L; ++l)
        keys[l] = std::to_string(layers[l]);

    RouteArray ra;
    ra.axis_layers = static_cast<int>(L);
    ra.top_k = K;
    ra.axis_layer_ids = layers;
    std::int64_t prompt_rows = 0;
    for (std::size_t s = 0; s < j.size(); ++s) {
        const auto& step = j[s];
        const std::string where = file + ": step " + std::to_string(s);
        if (!step.is_object()) throw InputError(where + ": not an object of layers");
        if (s > 0) {
            if (step_layers(step, where, &max_key) != layers)
                throw InputError(where + ": layer set differs from step 0 (" + format_layer_list(layers) + ")");
            check_keys_below(max_key, m, where);
        }
        // Every key is canonical and every non-null one is in `layers`, so find() succeeds; never
        // use operator[] on a const object for a key that might be absent.
        std::vector<const nlohmann::json*> lists(L);
        std::size_t tokens = 0;
        for (std::size_t l = 0; l < L; ++l) {
            const auto found = step.find(keys[l]);
            if (found == step.end()) throw InputError(where + ": layer " + keys[l] + " is missing");
            const auto& lt = *found;
            if (!lt.is_array()) throw InputError(where + ", layer " + keys[l] + ": expected a list of tokens");
            lists[l] = &lt;
            if (l == 0)
                tokens = lt.size();
            else if (lt.size() != tokens)
                throw InputError(where + ", layer " + keys[l] + ": " + std::to_string(lt.size()) + " tokens, layer " +
                                 keys[0] + " has " + std::to_string(tokens));
        }
        if (tokens == 0) throw InputError(where + ": no tokens");
        const std::size_t base = ra.ids.size();
        if ((base + tokens * L * static_cast<std::size_t>(K)) > kMaxRouteValues)
            throw InputError(file + ": more than the per-sample limit of " + std::to_string(kMaxRouteValues) +
                             " route values");
        ra.ids.resize(base + tokens * L * K);
        for (std::size_t l = 0; l < L; ++l) {
            const auto& lt = *lists[l];
            for (std::size_t t = 0; t < tokens; ++t) {
                const auto& ids = lt[t];
                const std::string at = where + ", layer " + keys[l] + ", token " + std::to_string(t);
                if (!ids.is_array() || static_cast<int>(ids.size()) != K)
                    throw InputError(
                        at + ": " +
                        (ids.is_array() ? std::to_string(ids.size()) + " expert ids" : std::string("not a list")) +
                        ", expected top-k " + std::to_string(K));
                std::int32_t* out = ra.ids.data() + base + (t * L + l) * K;
                for (int k = 0; k < K; ++k) {
                    const auto& v = ids[static_cast<std::size_t>(k)];
                    if (v.is_null())
                        throw InputError(at + ": expert id is null (this format has no missing-route marker: null "
                                              "stands only for a whole dense layer)");
                    auto x = util::json_integer_of(v, 0, E - 1, util::IntegralFloats::Refuse);
                    if (!x && v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() == -1)
                        throw InputError(at + ": expert id -1 (this format has no missing-route marker)");
                    if (!x) x = util::JsonField(v, at, "expert id").integer(0, E - 1); // throws, naming the field
                    out[k] = static_cast<std::int32_t>(*x);
                }
            }
        }
        ra.rows += static_cast<std::int64_t>(tokens);
        if (s == 0) prompt_rows = static_cast<std::int64_t>(tokens);
    }
    SampleMeta meta;
    meta.id = id;
    meta.source_file = file;
    meta.prompt_len = prompt_rows;
    meta.rows_rule = LengthRule::RowsPlusOne;
    emit(make_sample_record(ra, m, meta));
}

std::vector<int> step_json_layer_ids(const SourceFile& f) {
    const std::string_view text = text_of(f);
    const nlohmann::json j = parse_json_text(f, text, f.bytes.size() - text.size(), 0);
    if (!j.is_array() || j.empty() || !j[0].is_object()) return {};
    return step_layers(j[0], f.path.string() + ": step 0");
}

int step_json_hidden_layers(const SourceFile& f) {
    const std::string_view text = text_of(f);
    const nlohmann::json j = parse_json_text(f, text, f.bytes.size() - text.size(), 0);
    if (!j.is_array() || j.empty() || !j[0].is_object()) return 0;
    int max_key = -1;
    step_layers(j[0], f.path.string() + ": step 0", &max_key);
    return max_key + 1;
}

} // namespace routepack::detail
