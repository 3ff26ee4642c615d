#include "gpu/safetensors/checkpoint_scheme.h"

#include "core/util/errors.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>

namespace routepack::gpu {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

/// Parses leading decimal digits followed by '.'; returns -1 when absent, -2 when there are more than 9
/// digits (an index no real checkpoint has; refused by the caller). Advances `s` past the dot.
long long take_index(std::string_view& s) {
    std::size_t i = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
        ++i;
    if (i == 0 || i >= s.size() || s[i] != '.') return -1;
    if (i > 9) return -2;
    long long v = std::stoll(std::string(s.substr(0, i)));
    s.remove_prefix(i + 1);
    return v;
}

/// Finds `layers.{l}.` at the start or after a '.'; sets layer and the rest after it.
bool find_layer(std::string_view name, int& layer, std::string_view& rest) {
    std::size_t pos = 0;
    while ((pos = name.find("layers.", pos)) != std::string_view::npos) {
        if (pos == 0 || name[pos - 1] == '.') {
            std::string_view r = name.substr(pos + 7);
            long long l = take_index(r);
            if (l == -2) throw InputError(std::string(name) + ": layer index has more than 9 digits");
            if (l >= 0) {
                layer = static_cast<int>(l);
                rest = r;
                return true;
            }
        }
        pos += 7;
    }
    return false;
}

std::string strip_weight(std::string_view kind) {
    std::string k(kind);
    if (k.size() > 7 && k.compare(k.size() - 7, 7, ".weight") == 0) k.resize(k.size() - 7);
    return k;
}

} // namespace

SchemeReport classify_checkpoint(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& names_and_shapes,
                                 const ModelDescription& model) {
    static const char* kOptPrefixes[] = {"optimizer.state.fp32_param.", "optimizer.state.exp_avg_sq.",
                                         "optimizer.state.exp_avg."};
    const int E = model.experts;
    SchemeReport rep;
    rep.experts = E;
    bool megatron = false;
    bool any_per_expert = false, any_stacked = false;
    std::string first_per_expert, first_stacked;
    // layer -> kind -> experts present (per-expert tensors)
    std::map<int, std::map<std::string, std::set<int>>> kinds;
    std::set<int> expert_layers;

    for (const auto& [full, shape] : names_and_shapes) {
        TensorClass tc;
        tc.name = full;
        std::string_view name = full;
        std::string prefix;
        for (const char* p : kOptPrefixes) {
            if (starts_with(name, p)) {
                prefix = p;
                name.remove_prefix(prefix.size());
                megatron = true;
                break;
            }
        }
        if (starts_with(name, "decoder.")) megatron = true;
        int layer = -1;
        std::string_view rest;
        if (!find_layer(name, layer, rest)) {
            rep.tensors.push_back(std::move(tc));
            continue;
        }
        tc.layer = layer;
        std::string_view mod;
        if (starts_with(rest, "mlp."))
            mod = rest.substr(4);
        else if (starts_with(rest, "block_sparse_moe."))
            mod = rest.substr(17);
        else {
            rep.tensors.push_back(std::move(tc));
            continue;
        }
        const bool moe_layer = model.moe_index(layer) >= 0;
        const std::int64_t dim0 = shape.empty() ? -1 : shape.front();

        if (starts_with(mod, "shared_expert")) { // shared_experts.*, shared_expert.*, shared_expert_gate.*
            rep.tensors.push_back(std::move(tc));
            continue;
        }
        if (starts_with(mod, "experts.")) {
            std::string_view sub = mod.substr(8);
            if (starts_with(sub, "experts.")) sub.remove_prefix(8); // Megatron dist-ckpt `experts.experts.`
            std::string_view after = sub;
            const long long e = take_index(after);
            if (e == -2) throw InputError(full + ": expert index has more than 9 digits");
            if (!moe_layer) throw InputError(full + ": expert tensor in dense layer " + std::to_string(layer));
            if (e >= 0) {
                if (e >= E)
                    throw InputError(full + ": expert index " + std::to_string(e) + " >= experts " + std::to_string(E));
                tc.role = TensorRole::ExpertPerTensor;
                tc.expert = static_cast<int>(e);
                kinds[layer][prefix + strip_weight(after)].insert(tc.expert);
                if (!any_per_expert) first_per_expert = full;
                any_per_expert = true;
            } else {
                if (dim0 != E)
                    throw InputError(full + ": stacked expert tensor has first dimension " +
                                     (shape.empty() ? std::string("none (scalar)") : std::to_string(dim0)) +
                                     ", expected experts " + std::to_string(E));
                tc.role = TensorRole::ExpertStacked;
                tc.expert_axis = 0;
                if (!any_stacked) first_stacked = full;
                any_stacked = true;
            }
            expert_layers.insert(layer);
            rep.tensors.push_back(std::move(tc));
            continue;
        }
        const bool hf_gate = mod == "gate.weight";
        const bool router = (hf_gate && starts_with(rest, "block_sparse_moe.")) || mod == "router.weight";
        const bool bias = mod == "router.bias" || mod == "gate.e_score_correction_bias" || mod == "gate.expert_bias" ||
                          mod == "router.expert_bias";
        if (hf_gate && !router) {
            // mlp.gate.weight: a router only in an MoE layer and with E output rows.
            if (moe_layer && dim0 == E) tc.role = TensorRole::Router;
        } else if (router || bias) {
            if (!moe_layer) throw InputError(full + ": router tensor in dense layer " + std::to_string(layer));
            if (dim0 != E)
                throw InputError(full + ": router tensor has first dimension " +
                                 (shape.empty() ? std::string("none (scalar)") : std::to_string(dim0)) +
                                 ", expected experts " + std::to_string(E));
            tc.role = router ? TensorRole::Router : TensorRole::RouterBias;
        }
        rep.tensors.push_back(std::move(tc));
    }

    if (any_per_expert && any_stacked)
        throw InputError(first_stacked + ": stacked expert tensor in a checkpoint with per-expert tensors (" +
                         first_per_expert + ")");
    for (int l : model.moe_layers)
        if (!expert_layers.count(l))
            throw InputError("layer " + std::to_string(l) + ": MoE layer has no expert tensors");
    for (const auto& [layer, by_kind] : kinds) {
        for (const auto& [kind, present] : by_kind) {
            if (static_cast<int>(present.size()) == E) continue;
            int missing = 0;
            while (present.count(missing))
                ++missing;
            throw InputError("layer " + std::to_string(layer) + ": expert " + std::to_string(missing) + " has no " +
                             kind + " while others do");
        }
    }
    rep.moe_layers.assign(expert_layers.begin(), expert_layers.end());
    rep.scheme = any_stacked ? (megatron ? "megatron-stacked" : "hf-stacked") : "hf-per-expert";
    return rep;
}

} // namespace routepack::gpu
