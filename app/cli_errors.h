#pragma once
// The command line's words for the library's errors: a setting an InputError is about (core/util/
// errors.h Setting) is named by the flag that sets it.
#include "core/util/errors.h"

#include <string>

namespace routepack::cli {

/// How the CLI names `setting`: a planner budget by its flag ("--steps"; its key when it has none,
/// "projections"); a window selector by its flag and the value it was given ("--split 40",
/// "--split-groups", "--first", "--random"); a trace or window name by `--name` (of `import` and
/// `window`); any other setting (a topology name) by the library's own words (Setting::words).
std::string cli_setting_text(const Setting& setting);

/// The message of `e` in the CLI's words: InputError::reworded with cli_setting_text.
std::string cli_error_text(const InputError& e);

} // namespace routepack::cli
