#pragma once
// The command line's words for the library's errors: a setting an InputError is about (core/util/
// errors.h Setting) is named by the flag that sets it.
#include "core/util/errors.h"

#include <string>

namespace routepack::cli {

/// How the CLI names `setting`: a planner budget by its flag ("--steps"; its key when it has none,
/// "projections"); a window selector, a model or synth field, a rewrite option by its flag and the
/// value the message quotes ("--split 40", "--split-groups", "--top-k 9", "--device cuda",
/// "--layer-map"); a trace or window name by `--name` (of `import` and `window`); a request ("ask_"
/// keys) by its whole phrase ("give --moe-layers LIST or --layers N", "use --format"); any other
/// setting (a topology name, sample_concentration) by the library's own words (Setting::words).
std::string cli_setting_text(const Setting& setting);

/// The message of `e` in the CLI's words: InputError::reworded with cli_setting_text.
std::string cli_error_text(const InputError& e);

} // namespace routepack::cli
