#include "gpu/safetensors/checkpoint_info.h"

#include "core/model/model.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "gpu/safetensors/checkpoint_scheme.h"
#include "gpu/safetensors/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <regex>
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

/// MoE layers, E and the decoder-layer count from the tensor names alone.
void from_names(const NamesAndShapes& tensors, CheckpointModel& m) {
    static const std::regex per_expert(R"((?:^|\.)layers\.(\d+)\.(?:mlp|block_sparse_moe)\.experts\.(\d+)\.)");
    static const std::regex stacked(R"((?:^|\.)layers\.(\d+)\.mlp\.experts\.[A-Za-z_]+$)");
    static const std::regex layer(R"((?:^|\.)layers\.(\d+)\.)");
    std::set<int> moe;
    int experts = 0, top_layer = -1;
    for (const auto& [name, shape] : tensors) {
        std::smatch g;
        if (std::regex_search(name, g, layer)) top_layer = std::max(top_layer, std::stoi(g[1].str()));
        if (std::regex_search(name, g, per_expert)) {
            moe.insert(std::stoi(g[1].str()));
            experts = std::max(experts, std::stoi(g[2].str()) + 1);
        } else if (std::regex_search(name, g, stacked) && !shape.empty()) {
            moe.insert(std::stoi(g[1].str()));
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
