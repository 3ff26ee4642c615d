#include "core/model/topology.h"

#include "core/util/input_file.h"

#include "core/util/errors.h"
#include "core/util/json.h"
#include "core/util/text.h"
#include "core/model/limits.h"
#include "core/util/resources.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace routepack {

std::vector<int> Topology::shard_of_slot() const {
    std::vector<int> out(static_cast<std::size_t>(dp_slots), -1);
    for (std::size_t g = 0; g < edp_shards.size(); ++g)
        for (int d : edp_shards[g])
            if (d >= 0 && d < dp_slots) out[static_cast<std::size_t>(d)] = static_cast<int>(g);
    return out;
}

namespace {

/// Largest EP rank and DP slot counts, experts per layer (as ModelDescription), token cap C (the
/// token limit of the importers: no cell holds more tokens than a trace can) and min_rows.
constexpr std::int64_t kMaxRanks = std::int64_t(1) << 20;
constexpr std::int64_t kMaxExpertsPerLayer = std::int64_t(1) << 20;
constexpr std::int64_t kMaxTokenCap = kMaxTokens;
constexpr std::int64_t kMaxMinRows = std::int64_t(1) << 30;
/// Most attention stages (a model has a handful of attention kinds; each costs a pass per cell).
constexpr std::size_t kMaxAttentionStages = 64;
/// Largest attention-stage alpha / beta (cost per token).
constexpr double kMaxStageCoefficient = 1e12;

/// Integer field `key` in min..max, never narrowed: "<origin>: field 'k' must be >= min (got x)",
/// "... must be at most max (got x)" (values above INT64_MAX included, as written).
std::int64_t need_int(const nlohmann::json& j, const char* key, const std::string& origin, std::int64_t min,
                      std::int64_t max) {
    if (!j.contains(key)) throw InputError(origin + ": missing field '" + key + "'");
    const auto& v = j[key];
    if (!v.is_number_integer()) throw InputError(origin + ": field '" + std::string(key) + "' must be an integer");
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
        throw InputError(origin + ": field '" + std::string(key) + "' must be at most " + std::to_string(max) + " (got " +
                         std::to_string(v.get<std::uint64_t>()) + ")");
    const auto x = v.get<std::int64_t>();
    if (x < min)
        throw InputError(origin + ": field '" + std::string(key) + "' must be >= " + std::to_string(min) + " (got " +
                         std::to_string(x) + ")");
    if (x > max)
        throw InputError(origin + ": field '" + std::string(key) + "' must be at most " + std::to_string(max) + " (got " +
                         std::to_string(x) + ")");
    return x;
}

}  // namespace

Topology parse_topology(const std::string& json_text, const std::string& origin) {
    nlohmann::json j;
    try {
        j = util::parse_json_strict(json_text, origin);
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(origin + ": malformed JSON at byte " + std::to_string(e.byte));
    } catch (const nlohmann::json::exception&) {
        // e.g. out_of_range.406 for a number such as 1e999 that is not finite as a double
        throw InputError(origin + ": a number is out of range (coefficients must be finite)");
    }
    if (!j.is_object()) throw InputError(origin + ": a topology must be a JSON object");
    Topology t;
    t.ep_ranks = static_cast<int>(need_int(j, "ep_ranks", origin, 1, kMaxRanks));
    t.dp_slots = static_cast<int>(need_int(j, "dp_slots", origin, 1, kMaxRanks));
    t.token_cap = need_int(j, "token_cap", origin, 1, kMaxTokenCap);
    if (j.contains("experts_per_layer"))
        t.experts_per_layer = static_cast<int>(need_int(j, "experts_per_layer", origin, 1, kMaxExpertsPerLayer));
    if (j.contains("min_rows")) t.min_rows = static_cast<int>(need_int(j, "min_rows", origin, 0, kMaxMinRows));

    if (j.contains("edp_shards")) {
        const auto& s = j["edp_shards"];
        if (!s.is_array() || s.empty()) throw InputError(origin + ": edp_shards must be a non-empty list of lists");
        std::vector<int> seen(static_cast<std::size_t>(t.dp_slots), -1);
        for (std::size_t g = 0; g < s.size(); ++g) {
            if (!s[g].is_array() || s[g].empty())
                throw InputError(origin + ": edp_shards[" + std::to_string(g) + "] must be a non-empty list of DP slots");
            std::vector<int> shard;
            for (const auto& v : s[g]) {
                if (!v.is_number_integer())
                    throw InputError(origin + ": edp_shards[" + std::to_string(g) + "] holds a non-integer");
                const auto d = v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX)
                                   ? std::int64_t(INT64_MAX)
                                   : v.get<std::int64_t>();
                if (d < 0 || d >= t.dp_slots)
                    throw InputError(origin + ": edp_shards[" + std::to_string(g) + "] names DP slot " +
                                     std::to_string(d) + ", outside 0.." + std::to_string(t.dp_slots - 1));
                if (seen[static_cast<std::size_t>(d)] >= 0)
                    throw InputError(origin + ": DP slot " + std::to_string(d) + " is in edp_shards[" +
                                     std::to_string(seen[static_cast<std::size_t>(d)]) + "] and edp_shards[" +
                                     std::to_string(g) + "]; shards must partition the DP slots");
                seen[static_cast<std::size_t>(d)] = static_cast<int>(g);
                shard.push_back(static_cast<int>(d));
            }
            std::sort(shard.begin(), shard.end());
            t.edp_shards.push_back(std::move(shard));
        }
        for (int d = 0; d < t.dp_slots; ++d)
            if (seen[static_cast<std::size_t>(d)] < 0)
                throw InputError(origin + ": DP slot " + std::to_string(d) +
                                 " is in no EDP shard; edp_shards must partition 0.." + std::to_string(t.dp_slots - 1));
    } else {
        std::vector<int> all(static_cast<std::size_t>(t.dp_slots));
        for (int d = 0; d < t.dp_slots; ++d) all[static_cast<std::size_t>(d)] = d;
        t.edp_shards.push_back(std::move(all));
    }

    if (!j.contains("attention_stages")) throw InputError(origin + ": missing field 'attention_stages'");
    const auto& st = j["attention_stages"];
    if (!st.is_array()) throw InputError(origin + ": attention_stages must be a list of {name, alpha, beta}");
    if (st.size() > kMaxAttentionStages)
        throw InputError(origin + ": attention_stages lists " + std::to_string(st.size()) + " stages, at most " +
                         std::to_string(kMaxAttentionStages) + " are allowed");
    for (std::size_t s = 0; s < st.size(); ++s) {
        const std::string where = origin + ": attention_stages[" + std::to_string(s) + "]";
        if (!st[s].is_object()) throw InputError(where + " must be an object {name, alpha, beta}");
        AttentionStage a;
        const auto name = st[s].find("name");
        if (name != st[s].end() && !name->is_string())
            throw InputError(where + ": 'name' must be a string, not " + util::json_kind(*name));
        a.name = name != st[s].end() ? name->get<std::string>() : "stage" + std::to_string(s);
        for (const char* key : {"alpha", "beta"}) {
            if (!st[s].contains(key) || !st[s][key].is_number())
                throw InputError(where + ": '" + key + "' must be a number");
            const double v = st[s][key].get<double>();
            if (!std::isfinite(v) || v < 0)
                throw InputError(where + ": '" + key + "' must be finite and >= 0 (got " + st[s][key].dump() + ")");
            // Costs stay finite: alpha * T + beta * Q for any window (T, Q < 2^40 tokens) is far below DBL_MAX.
            if (v > kMaxStageCoefficient)
                throw InputError(where + ": '" + key + "' must be at most 1e+12 (got " + st[s][key].dump() + ")");
            (key[0] == 'a' ? a.alpha : a.beta) = v;
        }
        t.attention_stages.push_back(std::move(a));
    }
    return t;
}

std::string topology_to_json(const Topology& t) {
    nlohmann::json j;
    j["ep_ranks"] = t.ep_ranks;
    if (t.experts_per_layer) j["experts_per_layer"] = t.experts_per_layer;
    j["dp_slots"] = t.dp_slots;
    j["edp_shards"] = t.edp_shards;
    j["token_cap"] = t.token_cap;
    nlohmann::json st = nlohmann::json::array();
    for (const auto& s : t.attention_stages) st.push_back({{"name", s.name}, {"alpha", s.alpha}, {"beta", s.beta}});
    j["attention_stages"] = st;
    if (t.min_rows) j["min_rows"] = t.min_rows;
    return j.dump();
}

void check_topology_for_model(const Topology& t, const ModelDescription& m) {
    if (t.experts_per_layer && t.experts_per_layer != m.experts)
        throw InputError("topology: experts_per_layer " + std::to_string(t.experts_per_layer) +
                         " differs from the trace's " + std::to_string(m.experts) + " experts");
    if (m.experts % t.ep_ranks != 0)
        throw InputError("topology: " + std::to_string(m.experts) + " experts are not divisible by " +
                         std::to_string(t.ep_ranks) + " EP ranks");
}

std::vector<std::string> known_topology_names() {
    std::vector<std::string> names;
    for (const auto& r : embedded_topologies()) names.push_back(r.name);
    return names;
}

namespace {

std::string known_topology_list() {
    std::string list;
    for (const auto& n : known_topology_names()) list += (list.empty() ? "" : ", ") + n;
    return list;
}

}  // namespace

Topology known_topology(const std::string& name) {
    for (const auto& r : embedded_topologies())
        if (r.name == name) return parse_topology(r.text, "resources/topologies/" + r.name + ".json");
    throw InputError("unknown topology '" + util::printable(name) + "' (known: " + known_topology_list() + ")");
}

Topology load_topology(const std::string& spec) {
    std::error_code ec;
    const std::filesystem::path p(spec);
    if (!spec.empty() && std::filesystem::exists(p, ec)) {
        return parse_topology(read_input_file(p, input_files::kTopology), spec);
    }
    for (const auto& r : embedded_topologies())
        if (r.name == spec) return parse_topology(r.text, "resources/topologies/" + r.name + ".json");
    throw InputError(util::printable(spec) + ": no such topology file or shipped topology (known: " +
                     known_topology_list() + ")");
}

}  // namespace routepack
