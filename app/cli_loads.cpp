// `routepack place --loads FILE`: the loads file reader (app/cli_loads.h).
#include "app/cli_loads.h"

#include "core/util/errors.h"
#include "core/util/json.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace routepack::cli {

namespace {

/// Largest layer id or count read from a loads file before the model's own check (no narrowing).
constexpr std::int64_t kLoadsIntMax = std::numeric_limits<int>::max();

} // namespace

LoadsFile parse_loads_text(const std::string& text, const std::string& path, const std::string& moe_layers_flag,
                           int layers_flag) {
    nlohmann::json j;
    try {
        j = util::parse_json_strict(text, path); // a repeated key is an InputError naming the file
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(path + ": malformed JSON at byte " + std::to_string(e.byte));
    } catch (const nlohmann::json::exception& e) {
        // out_of_range.406: a number such as 1e400 that no double holds
        throw InputError(path + ": malformed JSON: " + util::json_error_description(e));
    }
    nlohmann::json rows = j;
    std::string field = "";
    if (j.is_object()) {
        for (const auto& [key, v] : j.items())
            if (key != "loads" && key != "moe_layers" && key != "num_hidden_layers")
                throw InputError(path + ": unknown field '" + util::printable(key) +
                                 "' (a loads file holds loads, moe_layers and num_hidden_layers)");
        if (!j.contains("loads")) throw InputError(path + ": missing field 'loads'");
        rows = j["loads"];
        field = "loads";
    } else if (!j.is_array()) {
        throw InputError(path + ": the loads must be a [L][E] list of lists or an object with 'loads', not " +
                         util::json_kind(j));
    }
    if (!rows.is_array() || rows.empty() || !rows[0].is_array() || rows[0].empty())
        throw InputError(path + ": " + (field.empty() ? std::string("the loads") : field) +
                         " must be a non-empty [L][E] list of lists");
    const std::size_t L = rows.size(), E = rows[0].size();
    std::vector<std::uint64_t> loads;
    loads.reserve(L * E);
    for (std::size_t l = 0; l < L; ++l) {
        const std::string at = field + "[" + std::to_string(l) + "]";
        if (!rows[l].is_array() || rows[l].size() != E)
            throw InputError(path + ": " + at + " must be a list of " + std::to_string(E) + " loads (as row 0)");
        std::uint64_t total = 0;
        for (std::size_t e = 0; e < E; ++e) {
            const auto& v = rows[l][e];
            const std::string where = path + ": " + at + "[" + std::to_string(e) + "]";
            std::uint64_t x = 0;
            if (v.is_number_unsigned()) {
                x = v.get<std::uint64_t>();
            } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() >= 0 &&
                       v.get<double>() == std::floor(v.get<double>()) && v.get<double>() < 1.8e19) {
                x = static_cast<std::uint64_t>(v.get<double>());
            } else {
                throw InputError(where + " must be a non-negative whole number (got " + util::json_brief(v) + ")");
            }
            if (__builtin_add_overflow(total, x, &total))
                throw InputError(where + ": the layer's loads sum above 2^64 - 1 = 18446744073709551615 here (its "
                                         "rank loads would wrap)");
            loads.push_back(x);
        }
    }
    ModelDescription m;
    m.name = "";
    m.experts = static_cast<int>(E);
    m.top_k = 1;
    if (j.is_object() && j.contains("moe_layers")) {
        const auto& ml = j["moe_layers"];
        if (!ml.is_array())
            throw InputError(path + ": moe_layers must be a list of layer ids, not " + util::json_kind(ml));
        for (std::size_t i = 0; i < ml.size(); ++i) {
            const auto& v = ml[i];
            if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= kLoadsIntMax ||
                (v.is_number_unsigned() && v.get<std::uint64_t>() >= std::uint64_t(kLoadsIntMax)))
                throw InputError(path + ": moe_layers[" + std::to_string(i) + "] is " + util::json_brief(v) +
                                 ", not a layer id in 0.." + std::to_string(kLoadsIntMax - 1));
            m.moe_layers.push_back(v.get<int>());
        }
    } else if (!moe_layers_flag.empty()) {
        m.moe_layers = parse_layer_list(moe_layers_flag);
    } else {
        for (std::size_t l = 0; l < L; ++l)
            m.moe_layers.push_back(static_cast<int>(l));
    }
    if (m.moe_layers.size() != L)
        throw InputError(path + ": " + std::to_string(L) + " rows of loads but " + std::to_string(m.moe_layers.size()) +
                         " MoE layers named");
    m.num_hidden_layers = layers_flag > 0 ? layers_flag : m.moe_layers.back() + 1;
    if (j.is_object() && j.contains("num_hidden_layers")) {
        const auto& h = j["num_hidden_layers"];
        if (!h.is_number_integer() || h.get<std::int64_t>() < 1 || h.get<std::int64_t>() > kLoadsIntMax ||
            (h.is_number_unsigned() && h.get<std::uint64_t>() > std::uint64_t(kLoadsIntMax)))
            throw InputError(path + ": num_hidden_layers is " + util::json_brief(h) + ", not an integer in 1.." +
                             std::to_string(kLoadsIntMax));
        m.num_hidden_layers = h.get<int>();
    }
    m.source = path;
    try {
        m.validate();
    } catch (const InputError& e) {
        throw InputError(path + ": " + e.what());
    }
    return LoadsFile{std::move(loads), std::move(m)};
}

} // namespace routepack::cli
