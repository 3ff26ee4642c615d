#include "app/cli_errors.h"

#include "core/plan/budgets.h"
#include "core/util/settings.h"

namespace routepack::cli {

std::string cli_setting_text(const Setting& setting) {
    if (const BudgetRow* row = find_budget(setting.key)) return row->flag ? row->flag : row->key;
    const SettingRow* row = find_setting(setting.key);
    if (!row || !row->flag) return setting.words;
    if (row->request || setting.value.empty()) return row->flag;
    return row->flag + (" " + setting.value); // a value the message quotes follows the flag ("--split 40")
}

std::string cli_error_text(const InputError& e) {
    return e.reworded(cli_setting_text);
}

} // namespace routepack::cli
