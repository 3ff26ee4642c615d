#include "gpu/rewrite/request.h"

#include "core/model/trace.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

namespace routepack::gpu {

namespace {

/// Parses a non-negative or signed decimal integer; InputError naming --layer-map otherwise.
int parse_int(const std::string& s, const std::string& item) {
    const std::size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (s.size() == i || s.size() - i > 9) throw InputError("--layer-map: '" + item + "': expected a layer id");
    for (std::size_t k = i; k < s.size(); ++k)
        if (s[k] < '0' || s[k] > '9') throw InputError("--layer-map: '" + item + "': expected a layer id");
    return std::stoi(s);
}

std::string join_layers(const std::vector<int>& v) {
    return v.empty() ? std::string("none") : format_layer_list(v);
}

} // namespace

RewriteDevice parse_rewrite_device(const std::string& name) {
    if (name == "auto") return RewriteDevice::Auto;
    if (name == "cpu") return RewriteDevice::Cpu;
    if (name == "cuda") return RewriteDevice::Cuda;
    throw InputError("--device: unknown device '" + name + "' (valid: auto, cpu, cuda)");
}

std::map<int, int> parse_layer_map(const std::string& text, const std::vector<int>& plan_layers) {
    std::map<int, int> m;
    if (text.empty()) throw InputError("--layer-map: empty");
    if (text.back() == ',') throw InputError("--layer-map: empty item in '" + text + "'");
    std::stringstream ss(text);
    std::string item;
    auto put = [&](int p, long long c, const std::string& it) {
        if (c < 0)
            throw InputError("--layer-map: '" + it + "': checkpoint layer " + std::to_string(c) + " is negative");
        if (c > 999999999)
            throw InputError("--layer-map: '" + it + "': checkpoint layer " + std::to_string(c) + " is too large");
        if (!m.emplace(p, static_cast<int>(c)).second)
            throw InputError("--layer-map: plan layer " + std::to_string(p) + " is mapped twice");
    };
    while (std::getline(ss, item, ',')) {
        if (item.empty()) throw InputError("--layer-map: empty item in '" + text + "'");
        if ((item[0] == '+' || item[0] == '-') && item.find(':') == std::string::npos) {
            const int shift = parse_int(item, item);
            for (int p : plan_layers)
                put(p, static_cast<long long>(p) + shift, item);
            continue;
        }
        const std::size_t colon = item.find(':');
        if (colon == std::string::npos)
            throw InputError("--layer-map: '" + item + "': expected P:C, P-Q:C or a shift +N / -N");
        const std::string lhs = item.substr(0, colon), rhs = item.substr(colon + 1);
        const int c = parse_int(rhs, item);
        const std::size_t dash = lhs.find('-', 1);
        if (dash == std::string::npos) {
            put(parse_int(lhs, item), c, item);
        } else {
            const int a = parse_int(lhs.substr(0, dash), item), b = parse_int(lhs.substr(dash + 1), item);
            if (a < 0 || b < a) throw InputError("--layer-map: '" + item + "': range must be ascending");
            // Only the plan's MoE layers inside the range get an entry (a range never allocates per id).
            for (int p : plan_layers)
                if (p >= a && p <= b) put(p, static_cast<long long>(c) + (p - a), item);
        }
    }
    for (const auto& [p, c] : m)
        if (std::find(plan_layers.begin(), plan_layers.end(), p) == plan_layers.end())
            throw InputError("--layer-map: plan layer " + std::to_string(p) + " is not a MoE layer of the plan (" +
                             join_layers(plan_layers) + ")");
    std::set<int> targets;
    for (const auto& [p, c] : m)
        if (!targets.insert(c).second)
            throw InputError("--layer-map: checkpoint layer " + std::to_string(c) +
                             " is the target of two plan layers");
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

std::string format_gb(std::uint64_t b) {
    char buf[32];
    if (b >= 1000000000ull)
        std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(b) / 1e9);
    else
        std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(b) / 1e6);
    return buf;
}

} // namespace routepack::gpu
