#include "core/model/model.h"

#include "core/util/errors.h"
#include "core/util/json_field.h"
#include "core/util/resources.h"
#include "core/util/text.h"

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

namespace {

// L x E: 64 MiB of int32 counts per sample, over 1000 times DeepSeek-V3's 58 x 256 and enough for
// 128 MoE layers x 131072 experts; a larger model description is almost surely a typo, and each
// sample's dense counts (and its library blob) are sized by it.
constexpr std::int64_t kMaxCountsPerSample = std::int64_t(1) << 24;
// parse_layer_list: largest id and most ids a list may name.
constexpr std::int64_t kMaxListedLayerId = 1000000;
constexpr std::int64_t kMaxListedLayers = kMaxHiddenLayers;

} // namespace

int hidden_layers_for(const std::vector<int>& moe_layers, const std::string& what) {
    if (moe_layers.empty()) throw InputError(what + ": no MoE layers");
    const std::int64_t last = moe_layers.back();
    if (last < 0 || last >= kMaxHiddenLayers)
        throw InputError(what + ": MoE layer " + std::to_string(last) + " is outside 0.." +
                         std::to_string(kMaxHiddenLayers - 1) + " (num_hidden_layers is at most " +
                         std::to_string(kMaxHiddenLayers) + ")");
    return static_cast<int>(last + 1);
}

void ModelDescription::validate() const {
    const std::string who = name.empty() ? std::string("model") : "model '" + util::printable(name) + "'";
    if (experts < 1 || experts > kMaxExperts)
        throw InputError(who + ": experts must be in 1.." + std::to_string(kMaxExperts) + " (got " +
                         std::to_string(experts) + ")");
    const int max_k = std::min(experts, kMaxTopK);
    if (top_k < 1 || top_k > max_k)
        throw InputError(who + ": top_k must be in 1.." + std::to_string(max_k) + " (got " + std::to_string(top_k) +
                         ")");
    if (moe_layers.empty()) throw InputError(who + ": no MoE layers");
    if (num_hidden_layers < 1 || num_hidden_layers > kMaxHiddenLayers)
        throw InputError(who + ": num_hidden_layers must be in 1.." + std::to_string(kMaxHiddenLayers) + " (got " +
                         std::to_string(num_hidden_layers) + ")");
    for (std::size_t i = 0; i < moe_layers.size(); ++i) {
        if (moe_layers[i] < 0 || moe_layers[i] >= num_hidden_layers)
            throw InputError(who + ": MoE layer " + std::to_string(moe_layers[i]) + " outside 0.." +
                             std::to_string(num_hidden_layers - 1));
        if (i > 0 && moe_layers[i] <= moe_layers[i - 1])
            throw InputError(who + ": MoE layers must be ascending and unique");
    }
    const std::int64_t counts = static_cast<std::int64_t>(moe_layers.size()) * experts;
    if (counts > kMaxCountsPerSample)
        throw InputError(who + ": " + std::to_string(moe_layers.size()) + " MoE layers x " + std::to_string(experts) +
                         " experts = " + std::to_string(counts) + " counts per sample, more than " +
                         std::to_string(kMaxCountsPerSample));
}

namespace {

std::int64_t parse_int(std::string_view s, const Setting& field, const std::string& text) {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range ||
        (ec == std::errc() && p == s.data() + s.size() && v > kMaxListedLayerId))
        throw InputError("", field,
                         ": layer id " + util::printable(s) + " in '" + util::printable(text) + "' is larger than " +
                             std::to_string(kMaxListedLayerId));
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
        throw InputError(
            "", field, ": malformed layer list '" + util::printable(text) + "' (expected e.g. 1-26, 1-47:2 or 0,3,5)");
    return v;
}

} // namespace

std::vector<int> parse_layer_list(const std::string& text, const Setting& field) {
    std::vector<int> out;
    const std::string shown = util::printable(text);
    std::string_view rest(text);
    while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        while (!item.empty() && item.front() == ' ')
            item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ')
            item.remove_suffix(1);
        std::int64_t step = 1;
        if (auto colon = item.find(':'); colon != std::string_view::npos) {
            step = parse_int(item.substr(colon + 1), field, text);
            item = item.substr(0, colon);
            if (step < 1) throw InputError("", field, ": step must be >= 1 in '" + shown + "'");
        }
        auto dash = item.find('-', 1);
        std::int64_t a = 0, b = 0;
        if (dash == std::string_view::npos) {
            a = b = parse_int(item, field, text);
        } else {
            a = parse_int(item.substr(0, dash), field, text);
            b = parse_int(item.substr(dash + 1), field, text);
        }
        if (a < 0 || b < a)
            throw InputError("", field, ": bad range '" + util::printable(item) + "' in '" + shown + "'");
        // a, b <= 1e6 and step >= 1: no overflow; count before expanding.
        const std::int64_t n = (b - a) / step + 1;
        if (static_cast<std::int64_t>(out.size()) + n > kMaxListedLayers)
            throw InputError("", field,
                             ": '" + shown + "' lists more than " + std::to_string(kMaxListedLayers) + " layers");
        for (std::int64_t v = a; v <= b; v += step) {
            if (!out.empty() && v <= out.back())
                throw InputError("", field, ": layers must be ascending and unique in '" + shown + "'");
            out.push_back(static_cast<int>(v));
        }
    }
    if (out.empty()) throw InputError("", field, ": empty layer list");
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
        while (j < layers.size() && layers[j] - layers[j - 1] == step)
            ++j;
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

/// A string field, or `fallback` when absent (null is the wrong type).
std::string string_or(const util::JsonField& f, const std::string& fallback) {
    return f.exists() ? f.string() : fallback;
}

/// A list field of layer ids (each 0..kMaxHiddenLayers - 1).
std::vector<int> layer_array(const util::JsonField& f) {
    const std::size_t n = f.list("a list of layer ids");
    if (n > static_cast<std::size_t>(kMaxHiddenLayers))
        throw InputError(f.where() + " lists more than " + std::to_string(kMaxHiddenLayers) + " layers");
    std::vector<int> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        out.push_back(static_cast<int>(f[i].integer(0, kMaxHiddenLayers - 1)));
    return out;
}

/// m.validate(), its message prefixed with the file the description was read from.
void validate_from(const ModelDescription& m, const std::string& origin) {
    try {
        m.validate();
    } catch (const InputError& e) {
        throw InputError(origin + ": " + e.what());
    }
}

} // namespace

ModelDescription parse_model_description(const std::string& json_text, const std::string& origin) {
    const auto j = util::parse_json_document(json_text, origin);
    if (!j.is_object()) throw InputError(origin + ": a model description must be a JSON object");
    const util::JsonField doc(j, origin);
    ModelDescription m;
    m.name = string_or(doc["name"], "");
    m.num_hidden_layers = static_cast<int>(doc["num_hidden_layers"].integer(1, kMaxHiddenLayers));
    m.experts = static_cast<int>(doc["experts"].integer(1, kMaxExperts));
    m.top_k = static_cast<int>(doc["top_k"].integer(1, kMaxTopK));
    const util::JsonField ml = doc["moe_layers"];
    if (ml.exists() && ml.json().is_string())
        m.moe_layers = parse_layer_list(ml.string(), Setting{"", "", origin + ": moe_layers"});
    else if (ml.exists() && ml.json().is_array())
        m.moe_layers = layer_array(ml);
    else
        ml.fail("a layer list string or a list of layer ids");
    m.source = string_or(doc["source"], origin);
    if (const util::JsonField shape = doc["expert_shape"]; shape.exists()) {
        const std::size_t n = shape.list("a list of 1 to 4 dimensions");
        if (n < 1 || n > 4) shape.fail("a list of 1 to 4 dimensions");
        std::int64_t params = 1;
        for (std::size_t i = 0; i < n; ++i)
            params *= shape[i].integer(1, 1 << 20);
        if (params > (std::int64_t{1} << 40)) shape.fail("at most 2^40 parameters");
        m.expert_params = params;
    }
    validate_from(m, origin);
    return m;
}

std::vector<std::string> known_model_names() {
    std::vector<std::string> names;
    for (const auto& r : embedded_model_descriptions())
        names.push_back(r.name);
    return names;
}

ModelDescription known_model(const std::string& name) {
    for (const auto& r : embedded_model_descriptions())
        if (r.name == name) return parse_model_description(r.text, "resources/models/" + r.name + ".json");
    std::string list;
    for (const auto& n : known_model_names())
        list += (list.empty() ? "" : ", ") + n;
    throw InputError("unknown model '" + util::printable(name) + "' (known: " + list + ")");
}

ModelDescription model_from_hf_config(const std::string& json_text, const std::string& origin) {
    const auto j = util::parse_json_document(json_text, origin);
    if (!j.is_object()) throw InputError(origin + ": config.json must be a JSON object");
    // Llama 4 nests the text model's settings.
    const util::JsonField doc(j, origin);
    const util::JsonField text_config = doc["text_config"];
    const util::JsonField c = text_config.exists() && text_config.json().is_object() ? text_config : doc;
    // The first of `keys` that holds an integer, checked against lo..hi (never wrapped to int).
    auto get_int = [&](std::initializer_list<const char*> keys, std::int64_t lo,
                       std::int64_t hi) -> std::optional<int> {
        for (const char* k : keys)
            if (const util::JsonField f = c[k]; f.exists() && f.json().is_number_integer())
                return static_cast<int>(f.integer(lo, hi));
        return std::nullopt;
    };
    ModelDescription m;
    m.name = string_or(c["model_type"], string_or(doc["model_type"], ""));
    m.source = origin;
    auto layers = get_int({"num_hidden_layers", "num_layers", "n_layer"}, 1, kMaxHiddenLayers);
    if (!layers) throw InputError(origin + ": no num_hidden_layers");
    m.num_hidden_layers = *layers;
    auto experts = get_int({"n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts"}, 1, kMaxExperts);
    if (!experts) throw InputError(origin + ": no expert count (n_routed_experts, num_local_experts or num_experts)");
    m.experts = *experts;
    auto topk = get_int({"num_experts_per_tok", "moe_topk", "num_experts_per_token", "top_k"}, 1, kMaxTopK);
    if (!topk) throw InputError(origin + ": no top-k (num_experts_per_tok)");
    m.top_k = *topk;

    std::set<int> mlp_only;
    if (c["mlp_only_layers"].given())
        for (int l : layer_array(c["mlp_only_layers"]))
            mlp_only.insert(l);
    const int first_dense = get_int({"first_k_dense_replace"}, 0, kMaxHiddenLayers).value_or(0);
    const int freq = std::max(1, get_int({"moe_layer_freq"}, 0, kMaxHiddenLayers).value_or(1));
    const int sparse_step = std::max(1, get_int({"decoder_sparse_step"}, 0, kMaxHiddenLayers).value_or(1));
    if (c["moe_layers"].exists() && c["moe_layers"].json().is_array()) {
        m.moe_layers = layer_array(c["moe_layers"]);
    } else if (auto step = get_int({"interleave_moe_layer_step"}, 0, kMaxHiddenLayers); step && *step > 0) {
        // Llama 4: layer i is MoE when (i + 1) % step == 0.
        for (int i = 0; i < m.num_hidden_layers; ++i)
            if ((i + 1) % *step == 0) m.moe_layers.push_back(i);
    } else {
        for (int i = 0; i < m.num_hidden_layers; ++i) {
            if (i < first_dense || mlp_only.count(i)) continue;
            if (freq > 1 && i % freq != 0) continue;                     // DeepSeek moe_layer_freq
            if (sparse_step > 1 && (i + 1) % sparse_step != 0) continue; // Qwen decoder_sparse_step
            m.moe_layers.push_back(i);
        }
    }
    validate_from(m, origin);
    return m;
}

} // namespace routepack
