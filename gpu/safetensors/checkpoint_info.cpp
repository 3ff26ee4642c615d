#include "gpu/safetensors/checkpoint_info.h"

#include "core/model/model.h"
#include "core/model/moe_names.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "gpu/safetensors/checkpoint_scheme.h"
#include "gpu/safetensors/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

namespace routepack::gpu {

namespace fs = std::filesystem;

namespace {

using NamesAndShapes = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;

std::vector<fs::path> shard_files(const fs::path& input) {
    std::vector<fs::path> out;
    if (!fs::is_directory(input)) {
        if (input.extension() != ".safetensors")
            throw InputError(input.string() + ": expected a checkpoint folder or a .safetensors file");
        out.push_back(input);
        return out;
    }
    if (fs::exists(input / "model.safetensors.index.json")) {
        for (const std::string& s : read_index(input).shards())
            out.push_back(input / s);
    } else {
        for (const auto& de : fs::directory_iterator(input))
            if (de.is_regular_file() && de.path().extension() == ".safetensors") out.push_back(de.path());
        std::sort(out.begin(), out.end());
    }
    if (out.empty()) throw InputError(input.string() + ": no .safetensors files in the folder");
    return out;
}

/// MoE layers, E and the decoder-layer count from the tensor names alone (core/model/moe_names.h):
/// a per-expert tensor gives its layer and E >= index + 1, a stacked one E = its first dimension.
void from_names(const NamesAndShapes& tensors, CheckpointModel& m) {
    std::set<int> moe;
    int experts = 0, top_layer = -1;
    for (const auto& [name, shape] : tensors) {
        int layer = -1;
        std::string_view block, rest;
        if (!find_moe_block(name, layer, block, rest) || layer < 0) continue;
        top_layer = std::max(top_layer, layer);
        if (block.empty()) continue;
        const MoeTensorName match = match_moe_tensor(block, rest);
        if (match.kind != MoeTensorName::Kind::Expert) continue;
        if (match.layout->storage == ExpertStorage::PerExpert && match.expert >= 0) {
            moe.insert(layer);
            experts = std::max(experts, static_cast<int>(match.expert) + 1);
        } else if (match.layout->storage == ExpertStorage::Stacked && !shape.empty() && shape.front() > 0 &&
                   shape.front() <= INT32_MAX) {
            moe.insert(layer);
            experts = std::max(experts, static_cast<int>(shape.front()));
        }
    }
    m.moe_layers.assign(moe.begin(), moe.end());
    m.experts = experts;
    m.num_hidden_layers = top_layer + 1;
}

std::string layers_text(const std::vector<int>& layers) {
    std::string out;
    for (std::size_t i = 0; i < layers.size();) {
        std::size_t j = i;
        while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1)
            ++j;
        if (!out.empty()) out += ",";
        out += std::to_string(layers[i]);
        if (j > i) out += "-" + std::to_string(layers[j]);
        i = j + 1;
    }
    return out;
}

} // namespace

CheckpointModel describe_checkpoint(const fs::path& input) {
    if (!fs::exists(input)) throw InputError(input.string() + ": no such checkpoint folder or file");
    NamesAndShapes tensors;
    for (const fs::path& p : shard_files(input)) {
        const SafetensorsFile shard = SafetensorsFile::open(p);
        for (const TensorInfo& t : shard.tensors())
            tensors.emplace_back(t.name, std::vector<std::int64_t>(t.shape.begin(), t.shape.end()));
    }
    CheckpointModel m;
    const fs::path dir = fs::is_directory(input) ? input : input.parent_path();
    const fs::path config = dir / "config.json";
    if (fs::is_regular_file(config)) {
        const ModelDescription model =
            model_from_hf_config(read_input_file(config, input_files::kModelConfig), config.string());
        const SchemeReport rep = classify_checkpoint(tensors, model);
        m.name = model.name;
        m.num_hidden_layers = model.num_hidden_layers;
        m.moe_layers = rep.moe_layers;
        m.experts = rep.experts;
        m.top_k = model.top_k;
        m.scheme = rep.scheme;
        m.from_config = true;
    } else {
        from_names(tensors, m);
    }
    if (m.moe_layers.empty() || m.experts <= 0)
        throw InputError(input.string() + ": no routed-expert tensors (not a MoE checkpoint)");
    return m;
}

std::string checkpoint_model_text(const CheckpointModel& m) {
    std::string s = m.name.empty() ? std::string() : m.name + ": ";
    s += std::to_string(m.experts) + " experts";
    if (m.top_k > 0) s += " (top-" + std::to_string(m.top_k) + ")";
    s += " in MoE layer" + std::string(m.moe_layers.size() == 1 ? " " : "s ") + layers_text(m.moe_layers);
    if (m.num_hidden_layers > 0) s += " of " + std::to_string(m.num_hidden_layers) + " decoder layers";
    return s;
}

} // namespace routepack::gpu
