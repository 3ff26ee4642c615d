#include "core/model/topology.h"

#include "core/util/input_file.h"

#include "core/model/limits.h"
#include "core/util/errors.h"
#include "core/util/json.h"
#include "core/util/resources.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

namespace routepack {

std::vector<int> Topology::shard_of_slot() const {
    std::vector<int> out(static_cast<std::size_t>(dp_slots), -1);
    for (std::size_t g = 0; g < edp_shards.size(); ++g)
        for (int d : edp_shards[g])
            if (d >= 0 && d < dp_slots) out[static_cast<std::size_t>(d)] = static_cast<int>(g);
    return out;
}

int Topology::nodes() const {
    if (gpus_per_node > 0 && ep_ranks > 0) return std::max(1, ep_ranks / gpus_per_node);
    int n = 0;
    for (int v : ep_rank_nodes)
        n = std::max(n, v + 1);
    for (int v : dp_slot_nodes)
        n = std::max(n, v + 1);
    return std::max(n, 1);
}

std::vector<int> Topology::node_of_rank() const {
    std::vector<int> out(static_cast<std::size_t>(std::max(ep_ranks, 0)), 0);
    if (gpus_per_node > 0) {
        for (int p = 0; p < ep_ranks; ++p)
            out[static_cast<std::size_t>(p)] = p / gpus_per_node;
    } else if (ep_rank_nodes.size() == out.size()) {
        out = ep_rank_nodes;
    }
    return out;
}

std::vector<int> Topology::node_of_dp_slot() const {
    std::vector<int> out(static_cast<std::size_t>(std::max(dp_slots, 0)), 0);
    if (gpus_per_node > 0) {
        const std::int64_t n = nodes();
        for (int d = 0; d < dp_slots; ++d)
            out[static_cast<std::size_t>(d)] = static_cast<int>(d * n / dp_slots);
    } else if (dp_slot_nodes.size() == out.size()) {
        out = dp_slot_nodes;
    }
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
/// Largest comm_weight (routepack+comm row cost term); keeps w * copies / C finite and far below DBL_MAX.
constexpr double kMaxCommWeight = 1e6;

/// Integer field `key` in min..max, never narrowed: "<origin>: field 'k' must be >= min (got x)",
/// "... must be at most max (got x)" (values above INT64_MAX included, as written).
std::int64_t need_int(const nlohmann::json& j, const char* key, const std::string& origin, std::int64_t min,
                      std::int64_t max) {
    if (!j.contains(key)) throw InputError(origin + ": missing field '" + key + "'");
    const auto& v = j[key];
    if (!v.is_number_integer()) throw InputError(origin + ": field '" + std::string(key) + "' must be an integer");
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
        throw InputError(origin + ": field '" + std::string(key) + "' must be at most " + std::to_string(max) +
                         " (got " + std::to_string(v.get<std::uint64_t>()) + ")");
    const auto x = v.get<std::int64_t>();
    if (x < min)
        throw InputError(origin + ": field '" + std::string(key) + "' must be >= " + std::to_string(min) + " (got " +
                         std::to_string(x) + ")");
    if (x > max)
        throw InputError(origin + ": field '" + std::string(key) + "' must be at most " + std::to_string(max) +
                         " (got " + std::to_string(x) + ")");
    return x;
}

/// The node list `key` ([expect] node ids, each in 0..max_id): errors name the field and element.
std::vector<int> need_node_list(const nlohmann::json& j, const char* key, std::size_t expect, int max_id,
                                const std::string& origin, const char* counted) {
    const auto& v = j[key];
    if (!v.is_array())
        throw InputError(origin + ": field '" + std::string(key) + "' must be a list of node ids, one per " + counted);
    if (v.size() != expect)
        throw InputError(origin + ": field '" + std::string(key) + "' lists " + std::to_string(v.size()) +
                         " nodes, expected one per " + counted + " (" + std::to_string(expect) + ")");
    std::vector<int> out;
    out.reserve(expect);
    for (std::size_t k = 0; k < v.size(); ++k) {
        const std::string where = origin + ": " + key + "[" + std::to_string(k) + "]";
        if (!v[k].is_number_integer()) throw InputError(where + " must be an integer node id");
        const bool huge = v[k].is_number_unsigned() && v[k].get<std::uint64_t>() > std::uint64_t(INT64_MAX);
        const std::int64_t id = huge ? std::int64_t(INT64_MAX) : v[k].get<std::int64_t>();
        if (id < 0 || id > max_id)
            throw InputError(where + " is " + (huge ? v[k].dump() : std::to_string(id)) + ", outside 0.." +
                             std::to_string(max_id) + " (a node holds at least one EP rank and one DP slot)");
        out.push_back(static_cast<int>(id));
    }
    return out;
}

/// Reads gpus_per_node or ep_rank_nodes + dp_slot_nodes into `t` (P and D already read).
void parse_nodes(const nlohmann::json& j, Topology& t, const std::string& origin) {
    const bool g = j.contains("gpus_per_node"), r = j.contains("ep_rank_nodes"), s = j.contains("dp_slot_nodes");
    if (g && (r || s))
        throw InputError(origin + ": give either 'gpus_per_node' or the lists 'ep_rank_nodes' and 'dp_slot_nodes', "
                                  "not both");
    if (g) {
        t.gpus_per_node = static_cast<int>(need_int(j, "gpus_per_node", origin, 1, t.ep_ranks));
        if (t.ep_ranks % t.gpus_per_node != 0)
            throw InputError(origin + ": field 'gpus_per_node' (" + std::to_string(t.gpus_per_node) +
                             ") must divide ep_ranks (" + std::to_string(t.ep_ranks) + ")");
        const int n = t.ep_ranks / t.gpus_per_node;
        if (t.dp_slots % n != 0)
            throw InputError(origin + ": dp_slots (" + std::to_string(t.dp_slots) + ") cannot be spread evenly over " +
                             std::to_string(n) + " nodes (ep_ranks / gpus_per_node = " + std::to_string(t.ep_ranks) +
                             " / " + std::to_string(t.gpus_per_node) + "); give ep_rank_nodes and dp_slot_nodes");
        return;
    }
    if (!r && !s) return;
    if (!r || !s)
        throw InputError(origin + ": field '" + std::string(r ? "ep_rank_nodes" : "dp_slot_nodes") + "' needs '" +
                         (r ? "dp_slot_nodes" : "ep_rank_nodes") + "' beside it");
    const int max_id = std::min(t.ep_ranks, t.dp_slots) - 1;
    t.ep_rank_nodes =
        need_node_list(j, "ep_rank_nodes", static_cast<std::size_t>(t.ep_ranks), max_id, origin, "EP rank");
    t.dp_slot_nodes =
        need_node_list(j, "dp_slot_nodes", static_cast<std::size_t>(t.dp_slots), max_id, origin, "DP slot");
    const int n = t.nodes();
    std::vector<char> has_rank(static_cast<std::size_t>(n), 0), has_slot(static_cast<std::size_t>(n), 0);
    for (int v : t.ep_rank_nodes)
        has_rank[static_cast<std::size_t>(v)] = 1;
    for (int v : t.dp_slot_nodes)
        has_slot[static_cast<std::size_t>(v)] = 1;
    for (int m = 0; m < n; ++m) {
        if (!has_rank[static_cast<std::size_t>(m)])
            throw InputError(origin + ": node " + std::to_string(m) +
                             " holds no EP rank in ep_rank_nodes (node ids 0.." + std::to_string(n - 1) +
                             " must each hold one)");
        if (!has_slot[static_cast<std::size_t>(m)])
            throw InputError(origin + ": node " + std::to_string(m) +
                             " holds no DP slot in dp_slot_nodes (node ids 0.." + std::to_string(n - 1) +
                             " must each hold one)");
    }
}

} // namespace

Topology parse_topology(const std::string& json_text, const std::string& origin) {
    nlohmann::json j;
    try {
        j = util::parse_json_strict(json_text, origin);
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(origin + ": malformed JSON at byte " + std::to_string(e.byte));
    } catch (const nlohmann::json::exception& e) {
        // out_of_range.406: a number such as 1e999 that no double holds (the description names its field)
        throw InputError(origin + ": malformed JSON: " + util::json_error_description(e));
    }
    if (!j.is_object()) throw InputError(origin + ": a topology must be a JSON object");
    // A misspelt optional field would silently fall back to its default (one node, no row multiple):
    // every field must be one this parser reads.
    static constexpr std::array<std::string_view, 13> kFields = {
        "ep_ranks",        "dp_slots",     "token_cap",           "experts_per_layer",
        "min_rows",        "row_multiple", "gpus_per_node",       "ep_rank_nodes",
        "dp_slot_nodes",   "comm_weight",  "comm_load_tolerance", "edp_shards",
        "attention_stages"};
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& key = it.key();
        if (std::find(kFields.begin(), kFields.end(), std::string_view(key)) == kFields.end()) {
            std::string known;
            for (const std::string_view f : kFields)
                known += (known.empty() ? "" : ", ") + std::string(f);
            throw InputError(origin + ": unknown field '" + util::printable(key) + "' (known: " + known + ")");
        }
    }
    Topology t;
    t.ep_ranks = static_cast<int>(need_int(j, "ep_ranks", origin, 1, kMaxRanks));
    t.dp_slots = static_cast<int>(need_int(j, "dp_slots", origin, 1, kMaxRanks));
    t.token_cap = need_int(j, "token_cap", origin, 1, kMaxTokenCap);
    if (j.contains("experts_per_layer"))
        t.experts_per_layer = static_cast<int>(need_int(j, "experts_per_layer", origin, 1, kMaxExpertsPerLayer));
    if (j.contains("min_rows")) t.min_rows = static_cast<int>(need_int(j, "min_rows", origin, 0, kMaxMinRows));
    if (j.contains("row_multiple"))
        t.row_multiple = static_cast<int>(need_int(j, "row_multiple", origin, 1, kMaxRowMultiple));
    check_row_fields(t, origin);
    parse_nodes(j, t, origin);
    auto fraction = [&](const char* key, double hi, double* out) {
        if (!j.contains(key)) return;
        const auto& v = j[key];
        if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= hi)) {
            std::ostringstream bound;
            bound << hi;
            throw InputError(origin + ": field '" + key + "' must be a number in 0.." + bound.str() + " (got " +
                             util::json_brief(v) + ")");
        }
        *out = v.get<double>();
    };
    fraction("comm_weight", kMaxCommWeight, &t.comm_weight);
    fraction("comm_load_tolerance", 1.0, &t.comm_load_tolerance);

    if (j.contains("edp_shards")) {
        const auto& s = j["edp_shards"];
        if (!s.is_array() || s.empty()) throw InputError(origin + ": edp_shards must be a non-empty list of lists");
        std::vector<int> seen(static_cast<std::size_t>(t.dp_slots), -1);
        for (std::size_t g = 0; g < s.size(); ++g) {
            if (!s[g].is_array() || s[g].empty())
                throw InputError(origin + ": edp_shards[" + std::to_string(g) +
                                 "] must be a non-empty list of DP slots");
            std::vector<int> shard;
            for (const auto& v : s[g]) {
                if (!v.is_number_integer())
                    throw InputError(origin + ": edp_shards[" + std::to_string(g) + "] holds a non-integer");
                // Out of range: the value as written (v.dump(): 18446744073709551615, never a saturated
                // or wrapped copy of it).
                if ((v.is_number_unsigned() && v.get<std::uint64_t>() >= std::uint64_t(t.dp_slots)) ||
                    (!v.is_number_unsigned() && (v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= t.dp_slots)))
                    throw InputError(origin + ": edp_shards[" + std::to_string(g) + "] names DP slot " + v.dump() +
                                     ", outside 0.." + std::to_string(t.dp_slots - 1));
                const std::int64_t d = v.get<std::int64_t>();
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
        for (int d = 0; d < t.dp_slots; ++d)
            all[static_cast<std::size_t>(d)] = d;
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
        for (auto it = st[s].begin(); it != st[s].end(); ++it)
            if (it.key() != "name" && it.key() != "alpha" && it.key() != "beta")
                throw InputError(where + ": unknown field '" + util::printable(it.key()) +
                                 "' (known: name, alpha, beta)");
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
    for (const auto& s : t.attention_stages)
        st.push_back({{"name", s.name}, {"alpha", s.alpha}, {"beta", s.beta}});
    j["attention_stages"] = st;
    if (t.min_rows) j["min_rows"] = t.min_rows;
    if (t.row_multiple != 1) j["row_multiple"] = t.row_multiple;
    if (t.gpus_per_node) j["gpus_per_node"] = t.gpus_per_node;
    if (!t.ep_rank_nodes.empty()) j["ep_rank_nodes"] = t.ep_rank_nodes;
    if (!t.dp_slot_nodes.empty()) j["dp_slot_nodes"] = t.dp_slot_nodes;
    if (t.comm_weight != 0) j["comm_weight"] = t.comm_weight;
    if (t.comm_load_tolerance != 0.02) j["comm_load_tolerance"] = t.comm_load_tolerance;
    return j.dump();
}

void check_row_fields(const Topology& t, const std::string& origin) {
    auto range = [&](const char* key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
        if (v < lo)
            throw InputError(origin + ": field '" + key + "' must be >= " + std::to_string(lo) + " (got " +
                             std::to_string(v) + ")");
        if (v > hi)
            throw InputError(origin + ": field '" + key + "' must be at most " + std::to_string(hi) + " (got " +
                             std::to_string(v) + ")");
    };
    range("min_rows", t.min_rows, 0, kMaxMinRows);
    range("row_multiple", t.row_multiple, 1, kMaxRowMultiple);
    const std::int64_t m = t.row_multiple;
    const std::int64_t first = (static_cast<std::int64_t>(t.min_rows) + m - 1) / m * m;
    if (first > kMaxTopologyRows)
        throw InputError(origin + ": min_rows " + std::to_string(t.min_rows) + " rounded up to a multiple of " +
                         "row_multiple " + std::to_string(m) + " is " + std::to_string(first) +
                         " rows, above the largest row count " + std::to_string(kMaxTopologyRows));
}

void check_topology_for_model(const Topology& t, const ModelDescription& m, const std::string& origin) {
    if (t.experts_per_layer && t.experts_per_layer != m.experts)
        throw InputError(origin + ": experts_per_layer " + std::to_string(t.experts_per_layer) +
                         " differs from the trace's " + std::to_string(m.experts) + " experts");
    if (m.experts % t.ep_ranks != 0)
        throw InputError(origin + ": " + std::to_string(m.experts) + " experts are not divisible by " +
                         std::to_string(t.ep_ranks) + " EP ranks");
}

std::vector<std::string> known_topology_names() {
    std::vector<std::string> names;
    for (const auto& r : embedded_topologies())
        names.push_back(r.name);
    // The files come in file-name order, where "x-2nodes.json" sorts before "x.json".
    std::sort(names.begin(), names.end());
    return names;
}

namespace {

std::string known_topology_list() {
    std::string list;
    for (const auto& n : known_topology_names())
        list += (list.empty() ? "" : ", ") + n;
    return list;
}

} // namespace

Topology known_topology(const std::string& name) {
    for (const auto& r : embedded_topologies())
        if (r.name == name) return parse_topology(r.text, "resources/topologies/" + r.name + ".json");
    throw InputError("unknown topology '" + util::printable(name) + "' (known: " + known_topology_list() + ")");
}

std::string topology_origin(const std::string& spec) {
    return util::printable(spec, std::numeric_limits<std::size_t>::max());
}

Topology load_topology(const std::string& spec) {
    std::error_code ec;
    const std::filesystem::path p(spec);
    if (!spec.empty() && std::filesystem::exists(p, ec)) {
        return parse_topology(read_input_file(p, input_files::kTopology), topology_origin(spec));
    }
    for (const auto& r : embedded_topologies())
        if (r.name == spec) return parse_topology(r.text, "resources/topologies/" + r.name + ".json");
    throw InputError(util::printable(spec) +
                     ": no such topology file or shipped topology (known: " + known_topology_list() + ")");
}

} // namespace routepack
