#include "gpu/safetensors/checkpoint_scheme.h"

#include "core/model/moe_names.h"
#include "core/util/errors.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <set>
#include <string_view>

namespace routepack::gpu {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

std::string strip_weight(std::string_view kind) {
    std::string k(kind);
    if (k.size() > 7 && k.compare(k.size() - 7, 7, ".weight") == 0) k.resize(k.size() - 7);
    return k;
}

std::string dim0_text(const std::vector<std::int64_t>& shape) {
    return shape.empty() ? std::string("none (scalar)") : std::to_string(shape.front());
}

} // namespace

namespace {

/// What classify_checkpoint gathers over the tensors before its checks of the whole checkpoint.
struct Scan {
    bool megatron = false;
    std::string first_per_expert, first_whole; ///< the first per-expert / stacked or flat-chunk tensor
    const MoeLayout* per_expert_layout = nullptr;
    const MoeLayout* whole_layout = nullptr;
    std::map<int, std::map<std::string, std::set<int>>> kinds; ///< layer -> kind -> experts present
    std::set<int> expert_layers;
};

std::int64_t elements(const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (std::int64_t d : shape)
        n = d > 0 && n > INT64_MAX / d ? INT64_MAX : n * d;
    return n;
}

/// An expert tensor of `layer` (moe_layers checked by the caller) by its table match.
void classify_expert(TensorClass& tc, const MoeTensorName& match, const std::vector<std::int64_t>& shape,
                     const std::string& prefix, int E, Scan& scan) {
    const std::string& full = tc.name;
    if (match.layout->storage == ExpertStorage::PerExpert) {
        if (match.expert >= E)
            throw InputError(full + ": expert index " + std::to_string(match.expert) + " >= experts " +
                             std::to_string(E));
        tc.role = TensorRole::ExpertPerTensor;
        tc.expert = static_cast<int>(match.expert);
        scan.kinds[tc.layer][prefix + strip_weight(match.tensor)].insert(tc.expert);
        if (scan.first_per_expert.empty()) {
            scan.first_per_expert = full;
            scan.per_expert_layout = match.layout;
        }
    } else {
        if (match.layout->storage == ExpertStorage::Stacked) {
            if (shape.empty() || shape.front() != E)
                throw InputError(full + ": stacked expert tensor has first dimension " + dim0_text(shape) +
                                 ", expected experts " + std::to_string(E));
            tc.role = TensorRole::ExpertStacked;
            tc.expert_axis = 0;
        } else {
            const std::int64_t n = elements(shape);
            if (shape.empty() || n % E != 0)
                throw InputError(full + ": " + std::to_string(shape.empty() ? 1 : n) + " elements do not split into " +
                                 std::to_string(E) + " contiguous expert chunks (Megatron GroupedMLP " + match.tensor +
                                 ")");
            tc.role = TensorRole::ExpertFlatChunks;
        }
        if (scan.first_whole.empty()) {
            scan.first_whole = full;
            scan.whole_layout = match.layout;
        }
    }
    scan.expert_layers.insert(tc.layer);
}

/// A router weight or bias by its table match: refused in a dense layer and unless its first
/// dimension is E, except an `mlp.gate.weight` (a router only in an MoE layer with E rows).
void classify_router(TensorClass& tc, const MoeTensorName& match, std::string_view block,
                     const std::vector<std::int64_t>& shape, bool moe_layer, int E) {
    const bool lenient = block == "mlp" && match.router == "gate" && match.kind == MoeTensorName::Kind::RouterWeight;
    const bool rows_e = !shape.empty() && shape.front() == E;
    if (lenient) {
        if (moe_layer && rows_e) tc.role = TensorRole::Router;
        return;
    }
    if (!moe_layer) throw InputError(tc.name + ": router tensor in dense layer " + std::to_string(tc.layer));
    if (!rows_e)
        throw InputError(tc.name + ": router tensor has first dimension " + dim0_text(shape) + ", expected experts " +
                         std::to_string(E));
    tc.role = match.kind == MoeTensorName::Kind::RouterWeight ? TensorRole::Router : TensorRole::RouterBias;
}

void check_whole(const Scan& scan, const ModelDescription& model) {
    if (!scan.first_per_expert.empty() && !scan.first_whole.empty())
        throw InputError(scan.first_whole + ": stacked expert tensor in a checkpoint with per-expert tensors (" +
                         scan.first_per_expert + ")");
    for (int l : model.moe_layers)
        if (!scan.expert_layers.count(l))
            throw InputError("layer " + std::to_string(l) + ": MoE layer has no expert tensors");
    for (const auto& [layer, by_kind] : scan.kinds) {
        for (const auto& [kind, present] : by_kind) {
            if (static_cast<int>(present.size()) == model.experts) continue;
            int missing = 0;
            while (present.count(missing))
                ++missing;
            throw InputError("layer " + std::to_string(layer) + ": expert " + std::to_string(missing) + " has no " +
                             kind + " while others do");
        }
    }
}

} // namespace

SchemeReport classify_checkpoint(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& names_and_shapes,
                                 const ModelDescription& model) {
    const int E = model.experts;
    SchemeReport rep;
    rep.experts = E;
    Scan scan;
    for (const auto& [full, shape] : names_and_shapes) {
        TensorClass tc;
        tc.name = full;
        std::string_view name = full;
        std::string prefix;
        for (const std::string& p : moe_optimizer_state_prefixes()) {
            if (starts_with(name, p)) {
                prefix = p;
                name.remove_prefix(prefix.size());
                scan.megatron = true;
                break;
            }
        }
        if (starts_with(name, "decoder.")) scan.megatron = true;
        std::string_view block, rest;
        if (!find_moe_block(name, tc.layer, block, rest)) {
            rep.tensors.push_back(std::move(tc));
            continue;
        }
        if (tc.layer == -2) throw InputError(full + ": layer index has more than 9 digits");
        const MoeTensorName match = block.empty() ? MoeTensorName{} : match_moe_tensor(block, rest);
        const bool moe_layer = model.moe_index(tc.layer) >= 0;
        if (match.kind == MoeTensorName::Kind::Expert) {
            if (match.expert == -2) throw InputError(full + ": expert index has more than 9 digits");
            if (!moe_layer) throw InputError(full + ": expert tensor in dense layer " + std::to_string(tc.layer));
            classify_expert(tc, match, shape, prefix, E, scan);
        } else if (match.kind == MoeTensorName::Kind::RouterWeight || match.kind == MoeTensorName::Kind::RouterBias) {
            classify_router(tc, match, block, shape, moe_layer, E);
        }
        rep.tensors.push_back(std::move(tc));
    }
    check_whole(scan, model);
    rep.moe_layers.assign(scan.expert_layers.begin(), scan.expert_layers.end());
    if (!scan.whole_layout)
        rep.scheme = scan.per_expert_layout ? scan.per_expert_layout->name : "hf-per-expert";
    else if (scan.whole_layout->storage == ExpertStorage::FlatChunks)
        rep.scheme = scan.whole_layout->name;
    else
        rep.scheme = scan.megatron ? "megatron-stacked" : scan.whole_layout->name;
    return rep;
}

} // namespace routepack::gpu
