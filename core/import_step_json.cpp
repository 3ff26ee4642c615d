// Per-request step JSON (trace-formats.md §5.2, the llama4-maverick set): a JSON list of forward
// steps; step 0 is the prefill, each later step one decode token. A step maps layer id strings to
// null (dense layer) or a list with one entry per token of that step, each a list of top_k expert ids.
// Length rule: replay rows, t_i = rows + 1 (RowsPlusOne); prompt_len = tokens of step 0.
// Sample id = "<parent folder>/<file stem>".
#include "core/import_detail.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace routepack::detail {

namespace {

/// Non-null layer ids of one step object, ascending; InputError for a non-integer key.
std::vector<int> step_layers(const nlohmann::json& step, const std::string& where) {
    std::vector<int> layers;
    for (auto it = step.begin(); it != step.end(); ++it) {
        int id = 0;
        const std::string& k = it.key();
        auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), id);
        if (ec != std::errc() || p != k.data() + k.size() || id < 0)
            throw InputError(where + ": key '" + k + "' is not a layer id");
        if (!it.value().is_null()) layers.push_back(id);
    }
    std::sort(layers.begin(), layers.end());
    return layers;
}

}  // namespace

void parse_step_json(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const nlohmann::json j = parse_json_text(f, f.bytes, 0, 0);
    const std::string file = f.path.string();
    const std::string id = f.parent_and_stem();
    if (!j.is_array()) throw InputError(file + ": expected a JSON list of forward steps");
    if (j.empty()) throw InputError(file + ": no forward steps");
    if (!j[0].is_object()) throw InputError(file + ": step 0 is not an object of layers");
    const std::vector<int> layers = step_layers(j[0], file + ": step 0");
    if (layers != m.moe_layers)
        throw InputError(file + ": MoE layer set " + (layers.empty() ? std::string("(none)") : format_layer_list(layers)) +
                         " differs from the model's " + format_layer_list(m.moe_layers));
    const std::size_t L = layers.size();
    const int K = m.top_k;
    std::vector<std::string> keys(L);
    for (std::size_t l = 0; l < L; ++l) keys[l] = std::to_string(layers[l]);

    RouteArray ra;
    ra.axis_layers = static_cast<int>(L);
    ra.top_k = K;
    ra.axis_layer_ids = layers;
    std::int64_t prompt_rows = 0;
    for (std::size_t s = 0; s < j.size(); ++s) {
        const auto& step = j[s];
        const std::string where = file + ": step " + std::to_string(s);
        if (!step.is_object()) throw InputError(where + ": not an object of layers");
        if (s > 0 && step_layers(step, where) != layers)
            throw InputError(where + ": layer set differs from step 0 (" + format_layer_list(layers) + ")");
        std::size_t tokens = 0;
        for (std::size_t l = 0; l < L; ++l) {
            const auto& lt = step[keys[l]];
            if (!lt.is_array()) throw InputError(where + ", layer " + keys[l] + ": expected a list of tokens");
            if (l == 0) tokens = lt.size();
            else if (lt.size() != tokens)
                throw InputError(where + ", layer " + keys[l] + ": " + std::to_string(lt.size()) + " tokens, layer " +
                                 keys[0] + " has " + std::to_string(tokens));
        }
        if (tokens == 0) throw InputError(where + ": no tokens");
        const std::size_t base = ra.ids.size();
        ra.ids.resize(base + tokens * L * K);
        for (std::size_t l = 0; l < L; ++l) {
            const auto& lt = step[keys[l]];
            for (std::size_t t = 0; t < tokens; ++t) {
                const auto& ids = lt[t];
                if (!ids.is_array() || static_cast<int>(ids.size()) != K)
                    throw InputError(where + ", layer " + keys[l] + ", token " + std::to_string(t) + ": " +
                                     (ids.is_array() ? std::to_string(ids.size()) + " expert ids" : std::string("not a list")) +
                                     ", expected top-k " + std::to_string(K));
                std::int32_t* out = ra.ids.data() + base + (t * L + l) * K;
                for (int k = 0; k < K; ++k) {
                    const auto& v = ids[static_cast<std::size_t>(k)];
                    if (v.is_null()) out[k] = -1;
                    else if (v.is_number_integer()) {
                        const auto x = v.get<std::int64_t>();
                        out[k] = x < -2147483647 || x > 2147483647 ? -2147483647 : static_cast<std::int32_t>(x);
                        if (x > 2147483647) out[k] = 2147483647;
                    } else
                        throw InputError(where + ", layer " + keys[l] + ", token " + std::to_string(t) +
                                         ": expert id is not an integer");
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
    const nlohmann::json j = parse_json_text(f, f.bytes, 0, 0);
    if (!j.is_array() || j.empty() || !j[0].is_object()) return {};
    return step_layers(j[0], f.path.string() + ": step 0");
}

}  // namespace routepack::detail
