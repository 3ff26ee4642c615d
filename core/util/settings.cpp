#include "core/util/settings.h"

#include <array>

namespace routepack {

namespace {

constexpr std::array<SettingRow, 35> kSettings{{
    {"first", "--first", "First N in numeric id order", nullptr},
    {"random", "--random", "N random samples", nullptr},
    {"split", "--split", "windows of N samples", nullptr},
    {"split_groups", "--split-groups", "windows of G whole GRPO groups", nullptr},
    {"trace_name", "--name", "Trace name", nullptr},
    {"window_name", "--name", "Window name", nullptr},
    {"topology_name", nullptr, "Topology name", nullptr},
    {"run_name", nullptr, "Run name", nullptr},
    {"moe_layers", "--moe-layers", "MoE layers", "moe_layers"},
    {"router_layer_base", "--router-layer-base", nullptr, "router_layer_base"},
    {"groups", "--groups", nullptr, nullptr},
    {"group_size", "--group-size", nullptr, nullptr},
    {"num_hidden_layers", "--layers", "Decoder layers", "num_hidden_layers"},
    {"first_dense_layers", "--dense-layers", nullptr, nullptr},
    {"experts", "--experts", "Experts E", "num_experts"},
    {"top_k", "--top-k", "Top-k", "top_k"},
    {"prompt_mean", "--prompt-mean", nullptr, nullptr},
    {"response_mean", "--response-mean", nullptr, nullptr},
    {"max_length", "--max-length", nullptr, nullptr},
    {"skew", "--skew", nullptr, nullptr},
    {"popularity_seed", "--popularity-seed", nullptr, nullptr},
    {"drift", "--drift", nullptr, nullptr},
    {"rewrite_input", "--input", "Input checkpoint", nullptr},
    {"rewrite_output", "--output", "Output folder", nullptr},
    {"rewrite_device", "--device", "Device", nullptr},
    {"rewrite_layer_map", "--layer-map", "Layer map", nullptr},
    {"rewrite_workers", "--workers", "Workers", nullptr},
    {"rewrite_permute_router", "--permute-router", "Permute router rows", nullptr},
    {"rewrite_verify", "--verify", "Verify", nullptr},
    {"rewrite_inverse", "--inverse", "Direction: Inverse", nullptr},
    {"export_map_routepack", "routepack export-map --format routepack", nullptr, "Plan.export_map('routepack')"},
    {"ask_model", "give --model NAME, --model-config config.json, or --experts E --top-k K",
     "choose the Model: a shipped model, a Hugging Face config.json, or Fields (Experts E, Top-k)",
     "give model (a shipped model's name or a config.json path) or num_experts and top_k", true},
    {"ask_expert_count", "give --model NAME, --model-config config.json or --experts E",
     "choose the Model: a shipped model, a Hugging Face config.json, or Fields (Experts E)",
     "give model (a shipped model's name or a config.json path) or num_experts", true},
    {"ask_moe_layers", "give --moe-layers LIST or --layers N",
     "fill in the Model's Fields: \"MoE layers\" or \"Decoder layers\"", "give moe_layers or num_hidden_layers", true},
    {"ask_format", "use --format", "choose the \"Format\"", "give format", true},
}};

} // namespace

std::span<const SettingRow> setting_table() {
    return kSettings;
}

const SettingRow* find_setting(std::string_view key) {
    if (key.empty()) return nullptr;
    for (const SettingRow& row : setting_table())
        if (key == row.key) return &row;
    return nullptr;
}

} // namespace routepack
