#pragma once
// The command line's words for errors: a setting an InputError is about (core/util/errors.h Setting)
// is named by the flag that sets it; a usage error (the command line itself is wrong) is told apart
// from a failure of the work by its type; CLI11's own parse errors are worded in the house style
// ("routepack: error: <lower-case text> (see routepack plan --help)").
#include "core/util/errors.h"

#include <optional>
#include <string>

namespace CLI {
class App;
class Error;
} // namespace CLI

namespace routepack::cli {

/// A usage error: the command line alone is wrong, whatever the files hold (an unknown flag, a flag
/// value malformed or out of its range, a required flag missing, flags that conflict). The CLI exits
/// 2 for it, and 1 for any other InputError (a missing or bad input file, a failure of the work).
class UsageError : public InputError {
public:
    explicit UsageError(const std::string& message) : InputError(message) {}
    /// The same message (and settings) as `e`, marked as a usage error.
    explicit UsageError(const InputError& e) : InputError(e) {}
};

/// Runs `f()` and returns its result; an InputError it throws is rethrown as a UsageError (one it
/// throws as a UsageError already passes unchanged). For library checks of a flag's value alone
/// (parse_trace_format, known_model, check_planner_budgets on the flags' budgets).
template <class F> decltype(auto) as_usage(F&& f) {
    try {
        return f();
    } catch (const UsageError&) {
        throw;
    } catch (const InputError& e) {
        throw UsageError(e);
    }
}

/// How the CLI names `setting`: a planner budget by its flag ("--steps"; its key when it has none,
/// "projections"); a window selector, a model or synth field, a rewrite option by its flag and the
/// value the message quotes ("--split 40", "--split-groups", "--top-k 9", "--device cuda",
/// "--layer-map"); a trace or window name by `--name` (of `import` and `window`); a request ("ask_"
/// keys) by its whole phrase ("give --moe-layers LIST or --layers N", "use --format"); any other
/// setting (a topology name, sample_concentration) by the library's own words (Setting::words).
std::string cli_setting_text(const Setting& setting);

/// The message of `e` in the CLI's words: InputError::reworded with cli_setting_text.
std::string cli_error_text(const InputError& e);

/// A CLI11 parse error in the house style, lower-case, without the program's prefix or a help hint:
///   RequiredError     "--db is required", "paths is required"; no subcommand: "a command is required"
///   ExtrasError       "the following argument was not expected: --bogus" (several: "arguments were")
///   ConversionError   a flag given a value it cannot take: "--json must be given alone, or as
///                     --json=true or --json=false (got 'bogus')"
///   ArgumentMismatch  "--db needs a value (TEXT)", "--db may be given once (got 2)", "--x needs
///                     exactly 2 values (got 1)", "--x needs at least 2 values (got 1)", "--json takes
///                     no value"
///   ExcludesError     "give either --a or --b, not both"
///   RequiresError     "--a needs --b"
///   ValidationError   "--a: <CLI11's reason, first letter lower-case>"
/// Any other kind (and a form not listed) is CLI11's text with its first letter lower-case (an acronym
/// such as "INI" kept). Values
/// the message quotes pass through util::printable.
std::string cli11_error_text(const CLI::Error& e);

/// The command whose help fits an error of the command line parsed by `app` (the program's App after
/// its parse() threw): the program's name followed by every parsed subcommand ("routepack plan";
/// "routepack" when none was parsed).
std::string help_command(const CLI::App& app);

/// The arguments the parse of `app` left unused, as one message with its help hint, or nullopt when
/// it used every argument. An unused word where a command belongs (no subcommand parsed, not
/// starting with '-') is "unknown command 'frobnicate' (see routepack --help)"; otherwise "the
/// following argument was not expected: --bogus (see routepack plan --help)", naming the command
/// that left them. A misspelt flag is the likeliest cause of any other error of the same parse
/// ("--topolgy x" also leaves --topology missing), so the callers of parse report this first.
std::optional<std::string> unexpected_arguments_text(const CLI::App& app);

/// The one error line (without "<program>: error: " and the newline) for `e`, thrown by
/// `app`.parse(): unexpected_arguments_text when arguments were left unused, else cli11_error_text
/// followed by " (see <help_command> --help)".
std::string parse_error_text(const CLI::App& app, const CLI::Error& e);

/// The one error line for an InputError thrown while `app` parsed (a flag's reader refusing its
/// value, app/cli_int.h): unexpected_arguments_text when arguments were left unused, else the
/// error in the CLI's words (cli_error_text), without a help hint.
std::string parse_error_text(const CLI::App& app, const InputError& e);

} // namespace routepack::cli
