#pragma once
// The one reader of integer flags for every `routepack` subcommand (and routepack-rewrite): decimal
// digits only (an optional '-' first; "010" is ten, never octal; no "0x", no '+', no spaces, no
// exponent), range-checked without wrapping or saturating, and an empty value refused. CLI11's own
// integer conversion reads "010" as 8, "0x10" as 16, saturates past int64 and takes "" as 0, so no
// command registers an integer option through it.
#include "app/cli_errors.h"

#include "core/util/text.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace routepack::cli {

/// Reads `text` as a decimal integer in lo..hi. `name` names the flag as the message shows it
/// ("compare: --threads", "rewrite: --workers"). UsageError "<name> must be an integer in lo..hi
/// (got '<text>')" (text passed through util::printable) for an empty text, any character other
/// than an optional leading '-' and the digits 0-9, or a value outside lo..hi (values past the
/// 64-bit range included: never saturated). `expected`, when given, replaces "an integer in lo..hi"
/// (a flag whose own range is checked later, in words of its own: "an integer in 1..64"). A flag
/// read over its type's whole range (its range checked later, without `expected`) says "<name> must
/// be a decimal integer (got '0x10')" for text that is no integer, never quoting the type's range.
template <class T>
T parse_int_flag(const std::string& text, const std::string& name, T lo, T hi, const std::string& expected = {}) {
    static_assert(std::is_integral_v<T>);
    const auto fail = [&]() -> T {
        throw UsageError(
            name + " must be " +
            (expected.empty() ? "an integer in " + std::to_string(lo) + ".." + std::to_string(hi) : expected) +
            " (got '" + util::printable(text) + "')");
    };
    // Text that is no decimal integer at all: a flag whose range is checked later (lo..hi the type's
    // whole range) is not described by that range.
    const bool whole_type = lo == std::numeric_limits<T>::min() && hi == std::numeric_limits<T>::max();
    const auto malformed = [&]() -> T {
        if (!expected.empty() || !whole_type) return fail();
        throw UsageError(name + " must be a decimal integer (got '" + util::printable(text) + "')");
    };
    const std::size_t first = (!text.empty() && text[0] == '-') ? 1 : 0;
    if (text.size() == first) return malformed();
    for (std::size_t i = first; i < text.size(); ++i)
        if (text[i] < '0' || text[i] > '9') return malformed();
    if constexpr (std::is_unsigned_v<T>) {
        if (first == 1) {
            // "-0" is zero; any other negative value is out of range.
            if (text.find_first_not_of('0', 1) != std::string::npos || lo != 0) return fail();
            return 0;
        }
    }
    T v{};
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 10);
    if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi) return fail();
    return v;
}

/// Adds the integer option `flag` to `app`, read by parse_int_flag into `target` (lo..hi, default
/// the target type's whole range; `expected` as parse_int_flag's) when it is parsed; `given`
/// (optional) is set true then. --help shows its type as UINT for an unsigned target, INT otherwise.
/// The error of a bad value is thrown out of CLI::App::parse as a UsageError naming "<app name>:
/// <flag>" ("window: --first"); the callers of parse (cli::run, routepack-rewrite's main) print it
/// as one error line, exit status 2.
template <class T>
CLI::Option* add_int_option(CLI::App& app, const std::string& flag, T& target, const std::string& help,
                            T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max(),
                            bool* given = nullptr, const std::string& expected = {}) {
    const std::string name = app.get_name() + ": " + flag;
    return app
        .add_option_function<std::string>(
            flag,
            [&target, name, lo, hi, given, expected](const std::string& text) {
                target = parse_int_flag<T>(text, name, lo, hi, expected);
                if (given) *given = true;
            },
            help)
        ->type_name(std::is_unsigned_v<T> ? "UINT" : "INT");
}

/// Reads `text` as a finite decimal number: an optional '-', digits with at most one '.', and an
/// optional exponent (e or E, an optional sign, digits). UsageError "<name> must be a decimal
/// number (got '<text>')" for an empty text, spaces, hex ("0x1p3"), "inf"/"nan", any other
/// character, or a value no double holds ("1e400").
inline double parse_float_flag(const std::string& text, const std::string& name) {
    const auto fail = [&]() -> double {
        throw UsageError(name + " must be a decimal number (got '" + util::printable(text) + "')");
    };
    std::size_t i = (!text.empty() && text[0] == '-') ? 1 : 0;
    std::size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
        ++i, ++digits;
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9')
            ++i, ++digits;
    }
    if (digits == 0) return fail();
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        const std::size_t exp_start = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9')
            ++i;
        if (i == exp_start) return fail();
    }
    if (i != text.size()) return fail();
    double v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
    if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) return fail();
    return v;
}

/// Adds the number option `flag` to `app`, read by parse_float_flag into `target` when it is parsed
/// (range rules are the caller's: check_planner_budgets for the budgets). Errors as add_int_option.
inline CLI::Option* add_float_option(CLI::App& app, const std::string& flag, double& target, const std::string& help) {
    const std::string name = app.get_name() + ": " + flag;
    return app
        .add_option_function<std::string>(
            flag, [&target, name](const std::string& text) { target = parse_float_flag(text, name); }, help)
        ->type_name("FLOAT");
}

} // namespace routepack::cli
