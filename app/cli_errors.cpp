#include "app/cli_errors.h"

#include "core/plan/budget_table.h"

#include <array>
#include <string_view>
#include <utility>

namespace routepack::cli {

namespace {

/// Settings other than the planner budgets -> the flag that gives them: the window selectors of
/// `routepack window` (core/model/window_select.h) and the names of `import --name` and
/// `window --name` (storage/library.h).
constexpr std::array<std::pair<std::string_view, const char*>, 6> kSettingFlags{{
    {"first", "--first"},
    {"random", "--random"},
    {"split", "--split"},
    {"split_groups", "--split-groups"},
    {"trace_name", "--name"},
    {"window_name", "--name"},
}};

} // namespace

std::string cli_setting_text(const Setting& setting) {
    if (const BudgetRow* row = find_budget(setting.key)) return row->flag ? row->flag : row->key;
    for (const auto& [key, flag] : kSettingFlags)
        if (setting.key == key) return setting.value.empty() ? std::string(flag) : flag + (" " + setting.value);
    return setting.words;
}

std::string cli_error_text(const InputError& e) {
    return e.reworded(cli_setting_text);
}

} // namespace routepack::cli
