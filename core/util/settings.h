#pragma once
// Every setting outside the planner budgets (core/plan/budgets.h) as one row: the key an
// InputError carries (core/util/errors.h Setting), the CLI flag that gives it, the studio field that
// sets it and the Python argument that passes it. The CLI (app/cli_errors.cpp), the studio
// (views/widgets/gui_text.cpp) and the Python module's errors word a setting from its row; the library's
// own text (Setting::words) serves a front end whose column is empty.
#include <span>
#include <string_view>

namespace routepack {

/// One setting. For a request (a key starting "ask_": one of several ways to give something) the
/// flag, label and python columns hold the whole phrase, verb included, and the setting's value is
/// never appended.
struct SettingRow {
    const char* key;    ///< Setting::key ("split", "rewrite_layer_map", "ask_model")
    const char* flag;   ///< the CLI's flag ("--split"); nullptr: the CLI has none
    const char* label;  ///< the studio's field ("windows of N samples", untranslated); nullptr: none
    const char* python; ///< the Python module's argument ("moe_layers"); nullptr: none
    bool request = false;
};

/// Every row, in the order of the front ends' tables: window selectors, names, model and trace
/// settings, synthetic traces, the rewrite's options, then the requests.
std::span<const SettingRow> setting_table();

/// The row of `key`; nullptr for a key no row has (a budget's, or a Setting with an empty key).
const SettingRow* find_setting(std::string_view key);

} // namespace routepack
