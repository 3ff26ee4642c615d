#include "app/cli_errors.h"

#include "core/plan/budgets.h"
#include "core/util/settings.h"
#include "core/util/text.h"

#include <CLI/CLI.hpp>

#include <regex>
#include <vector>

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

namespace {

/// `text` with its first letter lower-case ("A subcommand" -> "a subcommand"), unless the first word is
/// an acronym ("INI was not able to parse x" stays).
std::string lower_first(std::string text) {
    const auto upper = [](char ch) { return ch >= 'A' && ch <= 'Z'; };
    if (!text.empty() && upper(text[0]) && !(text.size() > 1 && upper(text[1])))
        text[0] = static_cast<char>(text[0] - 'A' + 'a');
    return text;
}

/// The words of a CLI11 ConversionError: only flags meet it, every option with a value being read
/// as text by the CLI's own readers (app/cli_int.h).
std::string conversion_text(const std::string& what) {
    std::smatch m;
    static const std::regex convert("^Could not convert: (\\S+) = ([\\s\\S]*)$");
    static const std::regex flag("^(\\S+): (Should be true/false or a number|too many inputs for a flag)$");
    if (std::regex_match(what, m, convert))
        return m[1].str() + " must be given alone, or as " + m[1].str() + "=true or " + m[1].str() + "=false (got '" +
               util::printable(m[2].str()) + "')";
    if (std::regex_match(what, m, flag))
        return m[1].str() + " must be given alone, or as " + m[1].str() + "=true or " + m[1].str() + "=false";
    return lower_first(what);
}

/// The words of a CLI11 ArgumentMismatch (a value missing, or too many of them).
std::string mismatch_text(const std::string& what) {
    std::smatch m;
    static const std::regex missing("^(\\S+): ([0-9]+) required (\\S+) missing$");
    static const std::regex at_most("^(\\S+): At Most ([0-9]+) required but received ([0-9]+)$");
    static const std::regex at_least("^(\\S+): At least ([0-9]+) required but received ([0-9]+)$");
    static const std::regex expected("^Expected (exactly|at least) ([0-9]+) arguments to (\\S+), got ([0-9]+)$");
    static const std::regex override_("^(\\S+) was given a disallowed flag override$");
    if (std::regex_match(what, m, missing))
        return m[1].str() + (m[2].str() == "1" ? " needs a value (" : " needs " + m[2].str() + " values (") +
               m[3].str() + ")";
    if (std::regex_match(what, m, at_most) && m[2].str() == "1")
        return m[1].str() + " may be given once (got " + m[3].str() + ")";
    if (std::regex_match(what, m, at_most))
        return m[1].str() + " takes at most " + m[2].str() + " values (got " + m[3].str() + ")";
    if (std::regex_match(what, m, at_least))
        return m[1].str() + " needs at least " + m[2].str() + " values (got " + m[3].str() + ")";
    if (std::regex_match(what, m, expected))
        return m[3].str() + " needs " + m[1].str() + " " + m[2].str() + " values (got " + m[4].str() + ")";
    if (std::regex_match(what, m, override_)) return m[1].str() + " takes no value";
    return lower_first(what);
}

/// "a b c" of `words`, each passed through util::printable.
std::string printable_words(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& w : words)
        out += (out.empty() ? "" : " ") + util::printable(w);
    return out;
}

} // namespace

std::string cli11_error_text(const CLI::Error& e) {
    const std::string what = e.what();
    std::smatch m;
    if (dynamic_cast<const CLI::RequiredError*>(&e))
        return what == "A subcommand is required" ? "a command is required" : lower_first(what);
    if (dynamic_cast<const CLI::ConversionError*>(&e)) return conversion_text(what);
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) return mismatch_text(what);
    static const std::regex excludes("^(\\S+) excludes (\\S+)$");
    if (dynamic_cast<const CLI::ExcludesError*>(&e) && std::regex_match(what, m, excludes))
        return "give either " + m[1].str() + " or " + m[2].str() + ", not both";
    static const std::regex requires_("^(\\S+) requires (\\S+)$");
    if (dynamic_cast<const CLI::RequiresError*>(&e) && std::regex_match(what, m, requires_))
        return m[1].str() + " needs " + m[2].str();
    static const std::regex validation("^(\\S+): (.*)$");
    if (dynamic_cast<const CLI::ValidationError*>(&e) && std::regex_match(what, m, validation))
        return m[1].str() + ": " + lower_first(m[2].str());
    return lower_first(what);
}

std::string help_command(const CLI::App& app) {
    std::string command = app.get_name();
    for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
        at = at->get_subcommands().front();
        command += " " + at->get_name();
    }
    return command;
}

std::optional<std::string> unexpected_arguments_text(const CLI::App& app) {
    std::string command = app.get_name();
    for (const CLI::App* at = &app;;) {
        std::vector<std::string> left;
        for (const std::string& w : at->remaining(false))
            if (w != "--") left.push_back(w);
        const std::string hint = " (see " + command + " --help)";
        if (!left.empty() && at == &app && app.get_subcommands().empty() && left.front().rfind('-', 0) != 0)
            return "unknown command '" + util::printable(left.front()) + "'" + hint;
        if (!left.empty())
            return std::string(left.size() > 1 ? "the following arguments were not expected: "
                                               : "the following argument was not expected: ") +
                   printable_words(left) + hint;
        if (at->get_subcommands().empty()) return std::nullopt;
        at = at->get_subcommands().front();
        command += " " + at->get_name();
    }
}

std::string parse_error_text(const CLI::App& app, const CLI::Error& e) {
    if (auto unused = unexpected_arguments_text(app)) return *unused;
    return cli11_error_text(e) + " (see " + help_command(app) + " --help)";
}

std::string parse_error_text(const CLI::App& app, const InputError& e) {
    if (auto unused = unexpected_arguments_text(app)) return *unused;
    return cli_error_text(e);
}

} // namespace routepack::cli
