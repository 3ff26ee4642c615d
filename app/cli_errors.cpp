#include "app/cli_errors.h"

#include "core/plan/budget_table.h"

#include <array>
#include <string_view>
#include <utility>

namespace routepack::cli {

namespace {

/// Settings other than the planner budgets -> the flag that gives them: the window selectors of
/// `routepack window` (core/model/window_select.h); the names of `import --name` and `window --name`
/// (storage/library.h); the model and trace flags of `import`, `synth` and the trace inputs
/// (core/model/model.h, core/import, core/synth/synth.h); the options of `rewrite` (gpu/rewrite/
/// request.h rewrite_setting). A value the message quotes follows the flag ("--split 40").
constexpr std::array<std::pair<std::string_view, const char*>, 27> kSettingFlags{{
    {"first", "--first"},
    {"random", "--random"},
    {"split", "--split"},
    {"split_groups", "--split-groups"},
    {"trace_name", "--name"},
    {"window_name", "--name"},
    {"moe_layers", "--moe-layers"},
    {"router_layer_base", "--router-layer-base"},
    {"groups", "--groups"},
    {"group_size", "--group-size"},
    {"num_hidden_layers", "--layers"},
    {"first_dense_layers", "--dense-layers"},
    {"experts", "--experts"},
    {"top_k", "--top-k"},
    {"prompt_mean", "--prompt-mean"},
    {"response_mean", "--response-mean"},
    {"max_length", "--max-length"},
    {"skew", "--skew"},
    {"rewrite_input", "--input"},
    {"rewrite_output", "--output"},
    {"rewrite_device", "--device"},
    {"rewrite_layer_map", "--layer-map"},
    {"rewrite_workers", "--workers"},
    {"rewrite_permute_router", "--permute-router"},
    {"rewrite_verify", "--verify"},
    {"rewrite_inverse", "--inverse"},
    {"export_map_routepack", "routepack export-map --format routepack"},
}};

/// Requests for one of several ways to give something ("ask_" keys, core/import): the whole phrase,
/// verb included.
constexpr std::array<std::pair<std::string_view, const char*>, 4> kRequests{{
    {"ask_model", "give --model NAME, --model-config config.json, or --experts E --top-k K"},
    {"ask_expert_count", "give --model NAME, --model-config config.json or --experts E"},
    {"ask_moe_layers", "give --moe-layers LIST or --layers N"},
    {"ask_format", "use --format"},
}};

} // namespace

std::string cli_setting_text(const Setting& setting) {
    if (const BudgetRow* row = find_budget(setting.key)) return row->flag ? row->flag : row->key;
    for (const auto& [key, flag] : kSettingFlags)
        if (setting.key == key) return setting.value.empty() ? std::string(flag) : flag + (" " + setting.value);
    for (const auto& [key, phrase] : kRequests)
        if (setting.key == key) return phrase;
    return setting.words;
}

std::string cli_error_text(const InputError& e) {
    return e.reworded(cli_setting_text);
}

} // namespace routepack::cli
