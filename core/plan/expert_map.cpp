#include "core/plan/expert_map.h"

#include "core/util/errors.h"

#include <nlohmann/json.hpp>

namespace routepack {

ExpertMapFormat parse_expert_map_format(const std::string& name) {
    if (name == "routepack") return ExpertMapFormat::RoutePack;
    if (name == "sglang") return ExpertMapFormat::SGLang;
    if (name == "vllm") return ExpertMapFormat::VLLM;
    throw InputError("unknown expert-map format '" + name + "' (valid: routepack, sglang, vllm)");
}

std::string expert_map_json(const Placement& pi, const ModelDescription& model, ExpertMapFormat format) {
    if (pi.layers != model.num_moe_layers() || pi.experts != model.experts)
        throw std::invalid_argument("expert_map_json: placement shape differs from the model");
    const std::vector<int> p2l = physical_to_logical(pi); // [L][E], validates permutations
    const int E = pi.experts;
    auto row = [&](int l) {
        return std::vector<int>(p2l.begin() + static_cast<std::ptrdiff_t>(l) * E,
                                p2l.begin() + static_cast<std::ptrdiff_t>(l + 1) * E);
    };
    nlohmann::ordered_json j;
    switch (format) {
    case ExpertMapFormat::SGLang: {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        std::vector<int> trivial(static_cast<std::size_t>(E));
        for (int e = 0; e < E; ++e)
            trivial[static_cast<std::size_t>(e)] = e;
        for (int layer = 0; layer < model.num_hidden_layers; ++layer) {
            const int l = model.moe_index(layer);
            rows.push_back(l < 0 ? trivial : row(l));
        }
        j["physical_to_logical_map"] = std::move(rows);
        break;
    }
    case ExpertMapFormat::VLLM: {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (int l = 0; l < pi.layers; ++l)
            rows.push_back(row(l));
        j["physical_to_logical_map"] = std::move(rows);
        break;
    }
    case ExpertMapFormat::RoutePack: {
        j["format"] = "routepack-expert-map";
        j["version"] = 1;
        j["layer_axis"] = "moe_layers";
        j["moe_layers"] = model.moe_layers;
        j["num_hidden_layers"] = model.num_hidden_layers;
        j["experts"] = E;
        j["ep_ranks"] = pi.ep_ranks;
        j["slots_per_rank"] = pi.slots_per_rank();
        nlohmann::ordered_json placement = nlohmann::ordered_json::array(), maps = nlohmann::ordered_json::array();
        for (int l = 0; l < pi.layers; ++l) {
            placement.push_back(std::vector<int>(pi.slot.begin() + static_cast<std::ptrdiff_t>(l) * E,
                                                 pi.slot.begin() + static_cast<std::ptrdiff_t>(l + 1) * E));
            maps.push_back(row(l));
        }
        j["placement"] = std::move(placement);
        j["physical_to_logical_map"] = std::move(maps);
        break;
    }
    }
    return j.dump();
}

} // namespace routepack
