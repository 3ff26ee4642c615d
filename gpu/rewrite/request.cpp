#include "gpu/rewrite/request.h"

#include "core/model/trace.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace routepack::gpu {

namespace {

/// An InputError about the layer map: "layer map" + `after`.
InputError layer_map_error(const std::string& after) {
    return InputError("", rewrite_setting("layer_map"), after);
}

/// Parses a non-negative or signed decimal integer; InputError about the layer map otherwise.
int parse_int(const std::string& s, const std::string& item) {
    const std::size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (s.size() == i || s.size() - i > 9) throw layer_map_error(": '" + item + "': expected a layer id");
    for (std::size_t k = i; k < s.size(); ++k)
        if (s[k] < '0' || s[k] > '9') throw layer_map_error(": '" + item + "': expected a layer id");
    return std::stoi(s);
}

std::string join_layers(const std::vector<int>& v) {
    return v.empty() ? std::string("none") : format_layer_list(v);
}

} // namespace

Setting rewrite_setting(std::string_view name, const std::string& value) {
    static constexpr std::pair<std::string_view, const char*> kWords[] = {
        {"input", "input"},         {"output", "output"},           {"device", "device"},
        {"layer_map", "layer map"}, {"workers", "workers"},         {"permute_router", "router permutation"},
        {"verify", "verification"}, {"inverse", "inverse rewrite"},
    };
    for (const auto& [field, words] : kWords)
        if (field == name)
            return Setting{"rewrite_" + std::string(name), value, value.empty() ? words : words + (" " + value)};
    throw std::logic_error("rewrite_setting: unknown setting '" + std::string(name) + "'");
}

RewriteDevice parse_rewrite_device(const std::string& name) {
    if (name == "auto") return RewriteDevice::Auto;
    if (name == "cpu") return RewriteDevice::Cpu;
    if (name == "cuda") return RewriteDevice::Cuda;
    throw InputError("", rewrite_setting("device"), ": unknown device '" + name + "' (valid: auto, cpu, cuda)");
}

std::map<int, int> parse_layer_map(const std::string& text, const std::vector<int>& plan_layers) {
    std::map<int, int> m;
    if (text.empty()) throw layer_map_error(": empty");
    if (text.back() == ',') throw layer_map_error(": empty item in '" + text + "'");
    std::stringstream ss(text);
    std::string item;
    auto put = [&](int p, long long c, const std::string& it) {
        if (c < 0) throw layer_map_error(": '" + it + "': checkpoint layer " + std::to_string(c) + " is negative");
        if (c > 999999999)
            throw layer_map_error(": '" + it + "': checkpoint layer " + std::to_string(c) + " is too large");
        if (!m.emplace(p, static_cast<int>(c)).second)
            throw layer_map_error(": plan layer " + std::to_string(p) + " is mapped twice");
    };
    while (std::getline(ss, item, ',')) {
        if (item.empty()) throw layer_map_error(": empty item in '" + text + "'");
        if ((item[0] == '+' || item[0] == '-') && item.find(':') == std::string::npos) {
            const int shift = parse_int(item, item);
            for (int p : plan_layers)
                put(p, static_cast<long long>(p) + shift, item);
            continue;
        }
        const std::size_t colon = item.find(':');
        if (colon == std::string::npos)
            throw layer_map_error(": '" + item + "': expected P:C, P-Q:C or a shift +N / -N");
        const std::string lhs = item.substr(0, colon), rhs = item.substr(colon + 1);
        const int c = parse_int(rhs, item);
        const std::size_t dash = lhs.find('-', 1);
        if (dash == std::string::npos) {
            put(parse_int(lhs, item), c, item);
        } else {
            const int a = parse_int(lhs.substr(0, dash), item), b = parse_int(lhs.substr(dash + 1), item);
            if (a < 0 || b < a) throw layer_map_error(": '" + item + "': range must be ascending");
            // Only the plan's MoE layers inside the range get an entry (a range never allocates per id).
            for (int p : plan_layers)
                if (p >= a && p <= b) put(p, static_cast<long long>(c) + (p - a), item);
        }
    }
    for (const auto& [p, c] : m)
        if (std::find(plan_layers.begin(), plan_layers.end(), p) == plan_layers.end())
            throw layer_map_error(": plan layer " + std::to_string(p) + " is not a MoE layer of the plan (" +
                                  join_layers(plan_layers) + ")");
    std::set<int> targets;
    for (const auto& [p, c] : m)
        if (!targets.insert(c).second)
            throw layer_map_error(": checkpoint layer " + std::to_string(c) + " is the target of two plan layers");
    return m;
}

PlanFile parse_plan_text(const std::string& json_text, const std::string& origin) {
    try {
        return parse_plan(json_text, origin);
    } catch (const nlohmann::json::exception& e) {
        throw InputError(origin + ": " + util::json_error_description(e));
    }
}

PlanFile read_plan_file(const std::string& path) {
    return parse_plan_text(read_input_file(path, input_files::kPlan), path);
}

RewriteRequest request_from_plan(const PlanFile& plan, const std::string& origin) {
    RewriteRequest req;
    req.placement = plan.placement;
    req.plan_layers = plan.model.moe_layers;
    req.plan_model = plan.model;
    req.plan_fingerprint = plan.fingerprint;
    req.plan_origin = origin;
    return req;
}

namespace {

using nlohmann::json;

/// Largest decoder-layer id a map may name (as --layer-map's checkpoint layers).
constexpr std::int64_t kMaxLayerId = 999999999;

/// [rows][cols] non-negative integers of `key`; InputError naming `origin`, key and index.
std::vector<std::vector<int>> int_rows(const json& v, const std::string& key, const std::string& origin) {
    if (!v.is_array() || v.empty())
        throw InputError(origin + ": " + key + " must be a non-empty list of rows, not " + util::json_kind(v));
    std::vector<std::vector<int>> out;
    out.reserve(v.size());
    for (std::size_t r = 0; r < v.size(); ++r) {
        const json& row = v[r];
        const std::string where = origin + ": " + key + "[" + std::to_string(r) + "]";
        if (!row.is_array() || row.empty())
            throw InputError(where + " must be a non-empty list of integers, not " + util::json_kind(row));
        if (row.size() != v[0].size())
            throw InputError(where + " has " + std::to_string(row.size()) + " entries, " + key + "[0] has " +
                             std::to_string(v[0].size()));
        std::vector<int> ints;
        ints.reserve(row.size());
        for (std::size_t k = 0; k < row.size(); ++k) {
            const json& x = row[k];
            const std::int64_t n = row.size();
            if (!x.is_number_integer() || (!x.is_number_unsigned() && x.get<std::int64_t>() < 0))
                throw InputError(where + "[" + std::to_string(k) + "] is " + util::json_brief(x) +
                                 ", not an integer in 0.." + std::to_string(n - 1));
            if (x.get<std::uint64_t>() >= std::uint64_t(n))
                // A row lists each of its n entries' partners 0..n-1 once: a larger id means the row
                // is short (or the id is wrong), not that the entry alone is bad.
                throw InputError(where + " has " + std::to_string(n) + " entries but " + key + "[" + std::to_string(r) +
                                 "][" + std::to_string(k) + "] is " + util::json_brief(x) + " (a row of " +
                                 std::to_string(n) + " entries holds each of 0.." + std::to_string(n - 1) +
                                 " once; is an entry missing?)");
            ints.push_back(x.get<int>());
        }
        out.push_back(std::move(ints));
    }
    return out;
}

/// Refuses physical_to_logical_map rows that are no permutation. `logical` experts are those any
/// row names (the largest id + 1): a row that lacks one of them is missing an expert; a row naming
/// all of them in more slots holds replicas (redundant experts), unless the model has more experts
/// that no row names, which the message says too.
void check_p2l_rows(const std::vector<std::vector<int>>& rows, const std::string& key, const std::string& origin) {
    int top = -1;
    for (const auto& row : rows)
        for (int x : row)
            top = std::max(top, x);
    const std::size_t logical = static_cast<std::size_t>(top + 1);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const std::vector<int>& row = rows[r];
        std::vector<int> first(row.size(), -1);
        std::size_t distinct = 0;
        int rep = -1, rep_a = -1, rep_b = -1;
        for (std::size_t v = 0; v < row.size(); ++v) {
            int& f = first[static_cast<std::size_t>(row[v])];
            if (f < 0) {
                f = static_cast<int>(v);
                ++distinct;
            } else if (rep < 0) {
                rep = row[v];
                rep_a = f;
                rep_b = static_cast<int>(v);
            }
        }
        if (rep < 0) continue;
        const std::string at = origin + ": " + key + "[" + std::to_string(r) + "]";
        const std::string twice =
            "expert " + std::to_string(rep) + " is in slots " + std::to_string(rep_a) + " and " + std::to_string(rep_b);
        std::size_t missing = 0;
        while (missing < row.size() && first[missing] >= 0)
            ++missing;
        if (missing < logical)
            throw InputError(at + " is not a permutation of 0.." + std::to_string(row.size() - 1) + ": expert " +
                             std::to_string(missing) + " is missing and " + twice);
        if (row.size() - distinct == 1) // one id absent, one twice: a broken permutation as likely as a replica
            throw InputError(at + " has " + std::to_string(row.size()) + " physical slots for " +
                             std::to_string(distinct) + " logical experts (" + twice + ", and no row names expert " +
                             std::to_string(distinct) + "): either expert " + std::to_string(distinct) +
                             " is missing, or the map has replicas (redundant experts), which cannot rewrite a "
                             "checkpoint that holds each expert once");
        throw InputError(at + " has " + std::to_string(row.size()) + " physical slots for " + std::to_string(distinct) +
                         " logical experts (" + twice +
                         "): a map with replicas (redundant experts) cannot rewrite a checkpoint, which holds each "
                         "expert once");
    }
}

/// The fields an expert map object may hold: routepack export-map's, and those the stacks write
/// beside physical_to_logical_map (SGLang, vLLM, EPLB), which are not read. Any other field (a typo
/// such as "moe_layer") is refused rather than ignored.
void check_map_fields(const json& j, const std::string& origin) {
    static const char* const known[] = {"format",
                                        "version",
                                        "layer_axis",
                                        "moe_layers",
                                        "num_hidden_layers",
                                        "experts",
                                        "ep_ranks",
                                        "slots_per_rank",
                                        "placement",
                                        "physical_to_logical_map",
                                        "logical_to_all_physical_map",
                                        "logical_to_all_physical_map_num_valid",
                                        "logical_to_rank_dispatch_physical_map",
                                        "logical_to_physical_map",
                                        "logical_replica_count",
                                        "logical_count",
                                        "expert_count"};
    for (const auto& item : j.items()) {
        const std::string& key = item.key(); // a plain name: lambdas cannot capture structured bindings in C++20
        if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return key == k; }) !=
            std::end(known))
            continue;
        throw InputError(origin + ": unknown field '" + util::printable(key) +
                         "' (an expert map holds moe_layers, placement and/or physical_to_logical_map, and "
                         "routepack export-map's format, version, layer_axis, num_hidden_layers, experts, ep_ranks, "
                         "slots_per_rank)");
    }
}

std::vector<int> layer_ids(const json& v, std::size_t rows, const std::string& origin) {
    if (!v.is_array()) throw InputError(origin + ": moe_layers must be a list of layer ids, not " + util::json_kind(v));
    if (v.size() != rows)
        throw InputError(origin + ": moe_layers lists " + std::to_string(v.size()) + " layers for " +
                         std::to_string(rows) + " rows");
    std::vector<int> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const json& x = v[i];
        if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() > kMaxLayerId ||
            (x.is_number_unsigned() && x.get<std::uint64_t>() > std::uint64_t(kMaxLayerId)))
            throw InputError(origin + ": moe_layers[" + std::to_string(i) + "] is " + util::json_brief(x) +
                             ", not a layer id in 0.." + std::to_string(kMaxLayerId));
        if (!out.empty() && x.get<int>() <= out.back())
            throw InputError(origin + ": moe_layers must be ascending (moe_layers[" + std::to_string(i) +
                             "] = " + std::to_string(x.get<int>()) + " after " + std::to_string(out.back()) + ")");
        out.push_back(x.get<int>());
    }
    return out;
}

} // namespace

ExpertMapFile parse_expert_map_text(const std::string& text, const std::string& origin) {
    json j;
    try {
        j = util::parse_json_strict(text, origin);
    } catch (const json::exception& e) {
        throw InputError(origin + ": " + util::json_error_description(e));
    }
    ExpertMapFile m;
    const std::string shapes = "expected {\"physical_to_logical_map\": [[...]]} (SGLang / vLLM), {\"moe_layers\": "
                               "[...], \"placement\": [[...]]} or a routepack export-map file";
    if (j.is_array()) {
        m.kind = "physical_to_logical_map";
        m.p2l = int_rows(j, "physical_to_logical_map", origin);
    } else if (!j.is_object()) {
        throw InputError(origin + ": not an expert map (" + util::json_kind(j) + "); " + shapes);
    } else if (check_map_fields(j, origin); j.contains("placement")) {
        const bool ours = j.contains("format");
        if (ours) {
            if (!j["format"].is_string() || j["format"].get<std::string>() != "routepack-expert-map")
                throw InputError(origin + ": format " + util::json_brief(j["format"]) +
                                 " is not \"routepack-expert-map\"");
            if (!j.contains("version") || j["version"] != 1)
                throw InputError(origin + ": routepack expert map version " +
                                 (j.contains("version") ? util::json_brief(j["version"]) : std::string("(missing)")) +
                                 " is not supported (expected 1)");
            if (j.contains("layer_axis") && j["layer_axis"] != "moe_layers")
                throw InputError(origin + ": layer_axis " + util::json_brief(j["layer_axis"]) +
                                 " is not \"moe_layers\"");
        }
        m.kind = ours ? "routepack export-map" : "{moe_layers, placement}";
        const auto placement = int_rows(j["placement"], "placement", origin);
        if (!j.contains("moe_layers"))
            throw InputError(origin + ": missing field 'moe_layers' (the absolute decoder-layer id of each placement "
                                      "row)");
        m.moe_layers = layer_ids(j["moe_layers"], placement.size(), origin);
        const std::size_t E = placement[0].size();
        for (std::size_t l = 0; l < placement.size(); ++l) {
            std::vector<int> row(E, -1);
            for (std::size_t e = 0; e < E; ++e) {
                int& at = row[static_cast<std::size_t>(placement[l][e])];
                if (at >= 0)
                    throw InputError(origin + ": placement[" + std::to_string(l) + "] puts experts " +
                                     std::to_string(at) + " and " + std::to_string(e) + " in slot " +
                                     std::to_string(placement[l][e]) + " (each logical expert needs its own slot)");
                at = static_cast<int>(e);
            }
            m.p2l.push_back(std::move(row));
        }
        if (j.contains("physical_to_logical_map")) {
            // Both shapes given: they must say the same, whoever wrote the file.
            const auto p2l = int_rows(j["physical_to_logical_map"], "physical_to_logical_map", origin);
            if (p2l.size() != m.p2l.size())
                throw InputError(origin + ": physical_to_logical_map has " + std::to_string(p2l.size()) +
                                 " rows, placement " + std::to_string(m.p2l.size()));
            for (std::size_t l = 0; l < m.p2l.size(); ++l)
                if (p2l[l] != m.p2l[l])
                    throw InputError(origin + ": physical_to_logical_map[" + std::to_string(l) +
                                     "] is not the inverse of placement[" + std::to_string(l) + "]");
        }
        if (ours && j.contains("experts") && j["experts"] != E)
            throw InputError(origin + ": experts " + util::json_brief(j["experts"]) + " differs from the " +
                             std::to_string(E) + " entries of each placement row");
        if (ours && j.contains("ep_ranks")) {
            const json& p = j["ep_ranks"];
            if (!p.is_number_integer() || p.get<std::int64_t>() < 1 || p.get<std::int64_t>() > std::int64_t(E) ||
                E % p.get<std::size_t>() != 0)
                throw InputError(origin + ": ep_ranks " + util::json_brief(p) + " must divide the " +
                                 std::to_string(E) + " experts");
            m.ep_ranks = p.get<int>();
        }
    } else if (j.contains("physical_to_logical_map")) {
        m.kind = "physical_to_logical_map";
        m.p2l = int_rows(j["physical_to_logical_map"], "physical_to_logical_map", origin);
        check_p2l_rows(m.p2l, "physical_to_logical_map", origin);
        if (j.contains("moe_layers")) m.moe_layers = layer_ids(j["moe_layers"], m.p2l.size(), origin);
    } else {
        throw InputError(origin + ": not an expert map (no 'physical_to_logical_map' or 'placement'); " + shapes);
    }
    if (j.is_array()) check_p2l_rows(m.p2l, "physical_to_logical_map", origin);
    if (j.is_object() && j.contains("num_hidden_layers")) {
        const json& h = j["num_hidden_layers"];
        if (!h.is_number_integer() || h.get<std::int64_t>() < 1 || h.get<std::int64_t>() > kMaxLayerId + 1 ||
            (!m.moe_layers.empty() && h.get<std::int64_t>() <= m.moe_layers.back()))
            throw InputError(origin + ": num_hidden_layers " + util::json_brief(h) +
                             " must be a layer count above every MoE layer id");
        m.num_hidden_layers = h.get<int>();
    }
    return m;
}

ExpertMapFile read_expert_map_file(const std::string& path) {
    return parse_expert_map_text(read_input_file(path, input_files::kExpertMap), path);
}

RewriteRequest request_from_map(const ExpertMapFile& map, const std::string& origin,
                                const std::filesystem::path& checkpoint) {
    std::vector<int> layers = map.moe_layers;
    std::vector<std::vector<int>> rows = map.p2l;
    int hidden = map.num_hidden_layers;
    if (layers.empty()) {
        std::error_code ec;
        const std::filesystem::path dir =
            std::filesystem::is_directory(checkpoint, ec) ? checkpoint : checkpoint.parent_path();
        const std::filesystem::path config = dir / "config.json";
        if (!std::filesystem::is_regular_file(config, ec))
            throw InputError(origin +
                                 ": the map's rows carry no absolute layer ids (SGLang rows are decoder layers, "
                                 "vLLM rows MoE layers in order) and " +
                                 (dir.empty() ? std::string(".") : dir.string()) +
                                 " has no config.json to take them from; give a map with \"moe_layers\" (",
                             Setting{"export_map_routepack", "", "an expert map exported in the routepack format"},
                             ", or {\"moe_layers\": [...], \"placement\": [[...]]})");
        const ModelDescription cm =
            model_from_hf_config(read_input_file(config, input_files::kModelConfig), config.string());
        const std::size_t R = rows.size();
        if (R == cm.moe_layers.size()) {
            layers = cm.moe_layers; // vLLM: one row per MoE layer, in order
        } else if (R == static_cast<std::size_t>(cm.num_hidden_layers)) {
            layers = cm.moe_layers; // SGLang: one row per decoder layer; the dense layers' rows are not used
            std::vector<std::vector<int>> moe_rows;
            moe_rows.reserve(layers.size());
            for (int l : layers)
                moe_rows.push_back(rows[static_cast<std::size_t>(l)]);
            rows = std::move(moe_rows);
        } else {
            throw InputError(origin + ": physical_to_logical_map has " + std::to_string(R) + " rows, but " +
                             config.string() + " gives " + std::to_string(cm.num_hidden_layers) +
                             " decoder layers (SGLang: one row each) and " + std::to_string(cm.moe_layers.size()) +
                             " MoE layers (vLLM: one row each)");
        }
        hidden = cm.num_hidden_layers;
    }
    const int E = static_cast<int>(rows.front().size());
    RewriteRequest req;
    req.placement.layers = static_cast<int>(rows.size());
    req.placement.experts = E;
    req.placement.ep_ranks = map.ep_ranks;
    req.placement.slot.assign(rows.size() * static_cast<std::size_t>(E), -1);
    for (std::size_t l = 0; l < rows.size(); ++l)
        for (int v = 0; v < E; ++v)
            req.placement.slot[l * static_cast<std::size_t>(E) +
                               static_cast<std::size_t>(rows[l][static_cast<std::size_t>(v)])] = v;
    req.plan_layers = layers;
    req.plan_model.experts = E;
    req.plan_model.top_k = 1;
    req.plan_model.moe_layers = layers;
    req.plan_model.num_hidden_layers = std::max(hidden, layers.back() + 1);
    req.plan_origin = origin;
    return req;
}

std::string format_gb(std::uint64_t b) {
    char buf[32];
    if (b >= 1000000000ull)
        std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(b) / 1e9);
    else
        std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(b) / 1e6);
    return buf;
}

} // namespace routepack::gpu
