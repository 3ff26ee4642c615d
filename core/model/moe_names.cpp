#include "core/model/moe_names.h"

#include <algorithm>
#include <cctype>

namespace routepack {

namespace {

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

/// Leading decimal digits followed by '.': the index (-1 when absent, -2 for more than 9 digits);
/// advances `s` past the dot when found.
long long take_index(std::string_view& s) {
    std::size_t i = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
        ++i;
    if (i == 0 || i >= s.size() || s[i] != '.') return -1;
    if (i > 9) return -2;
    long long v = 0;
    for (std::size_t k = 0; k < i; ++k)
        v = v * 10 + (s[k] - '0');
    s.remove_prefix(i + 1);
    return v;
}

bool has(const std::vector<std::string>& v, std::string_view x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

} // namespace

const std::vector<MoeLayout>& moe_layouts() {
    using S = ExpertStorage;
    static const std::vector<MoeLayout> rows = {
        {"megatron-sequential", {"mlp"}, "experts.local_experts.", S::PerExpert, {}, {"router"}, true, true},
        {"megatron-grouped", {"mlp"}, "experts.", S::FlatChunks, {"weight1", "weight2"}, {"router"}, true, true},
        {"megatron-per-expert", {"mlp"}, "experts.experts.", S::PerExpert, {}, {"router"}, true, false},
        {"megatron-stacked", {"mlp"}, "experts.experts.", S::Stacked, {}, {"router"}, true, false},
        {"hf-per-expert", {"mlp", "block_sparse_moe"}, "experts.", S::PerExpert, {}, {"gate", "router"}, false, true},
        {"hf-stacked", {"mlp"}, "experts.", S::Stacked, {}, {"router", "gate"}, false, true},
    };
    return rows;
}

const std::vector<std::string>& moe_router_tensors() {
    static const std::vector<std::string> names = {"weight", "bias", "e_score_correction_bias", "expert_bias"};
    return names;
}

const std::vector<std::string>& moe_grouped_router_marks() {
    static const std::vector<std::string> names = {"n_group", "topk_group", "e_score_correction_bias"};
    return names;
}

const std::vector<std::string>& moe_shared_expert_prefixes() {
    static const std::vector<std::string> names = {"shared_expert"};
    return names;
}

const std::vector<std::string>& moe_optimizer_state_prefixes() {
    static const std::vector<std::string> names = {"optimizer.state.fp32_param.", "optimizer.state.exp_avg_sq.",
                                                   "optimizer.state.exp_avg."};
    return names;
}

MoeTensorName match_moe_tensor(std::string_view block, std::string_view rest) {
    MoeTensorName out;
    for (const std::string& p : moe_shared_expert_prefixes())
        if (starts_with(rest, p)) {
            out.kind = MoeTensorName::Kind::SharedExpert;
            return out;
        }
    for (const MoeLayout& row : moe_layouts()) {
        if (!has(row.blocks, block) || !starts_with(rest, row.experts)) continue;
        std::string_view sub = rest.substr(row.experts.size());
        if (sub.empty()) continue;
        const long long e = take_index(sub);
        const bool match = row.storage == ExpertStorage::PerExpert    ? e != -1
                           : row.storage == ExpertStorage::FlatChunks ? e == -1 && has(row.tensors, sub)
                                                                      : e == -1;
        if (!match) continue;
        out.kind = MoeTensorName::Kind::Expert;
        out.layout = &row;
        out.expert = row.storage == ExpertStorage::PerExpert ? e : -1;
        out.tensor = std::string(sub);
        return out;
    }
    const std::size_t dot = rest.find('.');
    if (dot == std::string_view::npos) return out;
    const std::string_view module = rest.substr(0, dot), tensor = rest.substr(dot + 1);
    bool router = false;
    for (const MoeLayout& row : moe_layouts())
        router = router || (has(row.blocks, block) && has(row.routers, module));
    const std::vector<std::string>& tensors = moe_router_tensors();
    if (!router || !has(tensors, tensor)) return out;
    out.kind = tensor == tensors.front() ? MoeTensorName::Kind::RouterWeight : MoeTensorName::Kind::RouterBias;
    out.router = std::string(module);
    out.tensor = std::string(tensor);
    return out;
}

bool find_moe_block(std::string_view name, int& layer, std::string_view& block, std::string_view& rest) {
    static constexpr std::string_view kLayers = "layers.";
    std::size_t pos = 0;
    while ((pos = name.find(kLayers, pos)) != std::string_view::npos) {
        if (pos == 0 || name[pos - 1] == '.') {
            std::string_view r = name.substr(pos + kLayers.size());
            const long long l = take_index(r);
            if (l != -1) {
                layer = static_cast<int>(l);
                block = {};
                rest = r;
                if (l < 0) return true;
                for (const MoeLayout& row : moe_layouts())
                    for (const std::string& b : row.blocks)
                        if (starts_with(r, b) && r.size() > b.size() && r[b.size()] == '.') {
                            block = r.substr(0, b.size());
                            rest = r.substr(b.size() + 1);
                            return true;
                        }
                return true;
            }
        }
        pos += kLayers.size();
    }
    return false;
}

} // namespace routepack
