#include "core/model.h"

#include "core/errors.h"
#include "core/resources.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <set>

namespace routepack {

int ModelDescription::moe_index(int layer) const {
    auto it = std::lower_bound(moe_layers.begin(), moe_layers.end(), layer);
    if (it == moe_layers.end() || *it != layer) return -1;
    return static_cast<int>(it - moe_layers.begin());
}

void ModelDescription::validate() const {
    const std::string who = name.empty() ? std::string("model") : "model '" + name + "'";
    if (experts < 1) throw InputError(who + ": experts must be >= 1 (got " + std::to_string(experts) + ")");
    if (top_k < 1 || top_k > experts)
        throw InputError(who + ": top_k must be in 1.." + std::to_string(experts) + " (got " +
                         std::to_string(top_k) + ")");
    if (moe_layers.empty()) throw InputError(who + ": no MoE layers");
    if (num_hidden_layers < 1)
        throw InputError(who + ": num_hidden_layers must be >= 1 (got " + std::to_string(num_hidden_layers) + ")");
    for (std::size_t i = 0; i < moe_layers.size(); ++i) {
        if (moe_layers[i] < 0 || moe_layers[i] >= num_hidden_layers)
            throw InputError(who + ": MoE layer " + std::to_string(moe_layers[i]) + " outside 0.." +
                             std::to_string(num_hidden_layers - 1));
        if (i > 0 && moe_layers[i] <= moe_layers[i - 1])
            throw InputError(who + ": MoE layers must be ascending and unique");
    }
}

namespace {

int parse_int(std::string_view s, const std::string& field, const std::string& text) {
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
        throw InputError(field + ": malformed layer list '" + text + "' (expected e.g. 1-26, 1-47:2 or 0,3,5)");
    return v;
}

}  // namespace

std::vector<int> parse_layer_list(const std::string& text, const std::string& field) {
    std::vector<int> out;
    std::string_view rest(text);
    while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        int step = 1;
        if (auto colon = item.find(':'); colon != std::string_view::npos) {
            step = parse_int(item.substr(colon + 1), field, text);
            item = item.substr(0, colon);
            if (step < 1) throw InputError(field + ": step must be >= 1 in '" + text + "'");
        }
        auto dash = item.find('-', 1);
        int a = 0, b = 0;
        if (dash == std::string_view::npos) {
            a = b = parse_int(item, field, text);
        } else {
            a = parse_int(item.substr(0, dash), field, text);
            b = parse_int(item.substr(dash + 1), field, text);
        }
        if (a < 0 || b < a) throw InputError(field + ": bad range '" + std::string(item) + "' in '" + text + "'");
        for (int v = a; v <= b; v += step) {
            if (!out.empty() && v <= out.back())
                throw InputError(field + ": layers must be ascending and unique in '" + text + "'");
            out.push_back(v);
        }
    }
    if (out.empty()) throw InputError(field + ": empty layer list");
    return out;
}

std::string format_layer_list(const std::vector<int>& layers) {
    std::string out;
    std::size_t i = 0;
    auto emit = [&](const std::string& s) { out += (out.empty() ? "" : ",") + s; };
    while (i < layers.size()) {
        // Longest arithmetic run starting at i with at least 3 members (or 2 for step 1).
        std::size_t j = i + 1;
        int step = j < layers.size() ? layers[j] - layers[i] : 1;
        while (j < layers.size() && layers[j] - layers[j - 1] == step) ++j;
        const std::size_t run = j - i;
        if (run >= 3 || (run == 2 && step == 1)) {
            std::string s = std::to_string(layers[i]) + "-" + std::to_string(layers[j - 1]);
            if (step != 1) s += ":" + std::to_string(step);
            emit(s);
            i = j;
        } else {
            emit(std::to_string(layers[i]));
            ++i;
        }
    }
    return out;
}

namespace {

int need_int(const nlohmann::json& j, const char* key, const std::string& origin) {
    if (!j.contains(key)) throw InputError(origin + ": missing field '" + key + "'");
    if (!j[key].is_number_integer()) throw InputError(origin + ": field '" + std::string(key) + "' must be an integer");
    return j[key].get<int>();
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(origin + ": malformed JSON at byte " + std::to_string(e.byte) + "");
    }
}

}  // namespace

ModelDescription parse_model_description(const std::string& json_text, const std::string& origin) {
    const auto j = parse_json_text(json_text, origin);
    if (!j.is_object()) throw InputError(origin + ": a model description must be a JSON object");
    ModelDescription m;
    m.name = j.value("name", std::string());
    m.num_hidden_layers = need_int(j, "num_hidden_layers", origin);
    m.experts = need_int(j, "experts", origin);
    m.top_k = need_int(j, "top_k", origin);
    if (!j.contains("moe_layers")) throw InputError(origin + ": missing field 'moe_layers'");
    const auto& ml = j["moe_layers"];
    if (ml.is_string()) {
        m.moe_layers = parse_layer_list(ml.get<std::string>(), origin + ": moe_layers");
    } else if (ml.is_array()) {
        for (const auto& v : ml) {
            if (!v.is_number_integer()) throw InputError(origin + ": moe_layers must hold integers");
            m.moe_layers.push_back(v.get<int>());
        }
    } else {
        throw InputError(origin + ": moe_layers must be a layer list string or an array");
    }
    m.source = j.value("source", origin);
    m.validate();
    return m;
}

std::string model_description_to_json(const ModelDescription& m) {
    nlohmann::json j;
    j["name"] = m.name;
    j["num_hidden_layers"] = m.num_hidden_layers;
    j["experts"] = m.experts;
    j["top_k"] = m.top_k;
    j["moe_layers"] = m.moe_layers;
    j["source"] = m.source;
    return j.dump();
}

std::vector<std::string> known_model_names() {
    std::vector<std::string> names;
    for (const auto& r : embedded_model_descriptions()) names.push_back(r.name);
    return names;
}

ModelDescription known_model(const std::string& name) {
    for (const auto& r : embedded_model_descriptions())
        if (r.name == name) return parse_model_description(r.text, "resources/models/" + r.name + ".json");
    std::string list;
    for (const auto& n : known_model_names()) list += (list.empty() ? "" : ", ") + n;
    throw InputError("unknown model '" + name + "' (known: " + list + ")");
}

ModelDescription model_from_hf_config(const std::string& json_text, const std::string& origin) {
    const auto j = parse_json_text(json_text, origin);
    if (!j.is_object()) throw InputError(origin + ": config.json must be a JSON object");
    // Llama 4 nests the text model's settings.
    const nlohmann::json& c = j.contains("text_config") && j["text_config"].is_object() ? j["text_config"] : j;
    auto get_int = [&](std::initializer_list<const char*> keys) -> std::optional<int> {
        for (const char* k : keys)
            if (c.contains(k) && c[k].is_number_integer()) return c[k].get<int>();
        return std::nullopt;
    };
    ModelDescription m;
    m.name = c.value("model_type", j.value("model_type", std::string()));
    m.source = origin;
    auto layers = get_int({"num_hidden_layers", "num_layers", "n_layer"});
    if (!layers) throw InputError(origin + ": no num_hidden_layers");
    m.num_hidden_layers = *layers;
    auto experts = get_int({"n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts"});
    if (!experts) throw InputError(origin + ": no expert count (n_routed_experts, num_local_experts or num_experts)");
    m.experts = *experts;
    auto topk = get_int({"num_experts_per_tok", "moe_topk", "num_experts_per_token", "top_k"});
    if (!topk) throw InputError(origin + ": no top-k (num_experts_per_tok)");
    m.top_k = *topk;

    std::set<int> mlp_only;
    if (c.contains("mlp_only_layers") && c["mlp_only_layers"].is_array())
        for (const auto& v : c["mlp_only_layers"]) mlp_only.insert(v.get<int>());
    const int first_dense = get_int({"first_k_dense_replace"}).value_or(0);
    const int freq = std::max(1, get_int({"moe_layer_freq"}).value_or(1));
    const int sparse_step = std::max(1, get_int({"decoder_sparse_step"}).value_or(1));
    if (c.contains("moe_layers") && c["moe_layers"].is_array()) {
        for (const auto& v : c["moe_layers"]) m.moe_layers.push_back(v.get<int>());
    } else if (auto step = get_int({"interleave_moe_layer_step"}); step && *step > 0) {
        // Llama 4: layer i is MoE when (i + 1) % step == 0.
        for (int i = 0; i < m.num_hidden_layers; ++i)
            if ((i + 1) % *step == 0) m.moe_layers.push_back(i);
    } else {
        for (int i = 0; i < m.num_hidden_layers; ++i) {
            if (i < first_dense || mlp_only.count(i)) continue;
            if (freq > 1 && i % freq != 0) continue;               // DeepSeek moe_layer_freq
            if (sparse_step > 1 && (i + 1) % sparse_step != 0) continue;  // Qwen decoder_sparse_step
            m.moe_layers.push_back(i);
        }
    }
    m.validate();
    return m;
}

}  // namespace routepack
