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
        // One rule for every reader of a map: vLLM rows are the MoE layers, SGLang rows the decoder
        // layers (dense rows the identity).
        const Placement pi = placement_from_map(map, cm, 0, origin, config.string());
        layers = cm.moe_layers;
        rows.assign(static_cast<std::size_t>(pi.layers), {});
        const std::vector<int> p2l = physical_to_logical(pi);
        for (int l = 0; l < pi.layers; ++l)
            rows[static_cast<std::size_t>(l)].assign(p2l.begin() + static_cast<std::ptrdiff_t>(l) * pi.experts,
                                                     p2l.begin() + static_cast<std::ptrdiff_t>(l + 1) * pi.experts);
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
