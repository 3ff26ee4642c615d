// `routepack window`: an optimizer-step window (a named subset of a trace's samples), or a whole
// run cut into consecutive windows (--split, --split-groups).
#include "app/commands.h"

#include "app/cli_errors.h"
#include "app/cli_int.h"

#include "core/model/window_select.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/text.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

namespace routepack::cli {

namespace {

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    std::stringstream ss(s);
    while (std::getline(ss, cur, ','))
        if (!cur.empty()) out.push_back(cur);
    return out;
}

struct WindowCmd {
    std::string db, trace, name, ids_file, groups;
    std::int64_t first = 0, random = 0, split = 0, split_groups = 0;
    std::string seed_text; ///< parsed by run_window: 0..2^64-1, never a wrapped negative
    bool ids_given = false, first_given = false, random_given = false, seed_given = false, groups_given = false;
    bool split_given = false, split_groups_given = false;
};

/// `window --split N` / `--split-groups G`: consecutive windows named <name>-000, <name>-001, ... (at
/// least three digits, more when needed) in run order. Every name is checked before any window is
/// created, so a clash changes nothing.
int do_window_split(const WindowCmd& c) {
    if (c.name.empty()) throw UsageError("window: --name must not be empty (it prefixes the split windows' names)");
    if (c.split_given && c.split < 1)
        throw UsageError("window: --split must be >= 1 (got " + std::to_string(c.split) + ")");
    if (c.split_groups_given && c.split_groups < 1)
        throw UsageError("window: --split-groups must be >= 1 (got " + std::to_string(c.split_groups) + ")");
    auto lib = storage::Library::open(c.db, storage::OpenMode::ReadWrite);
    if (lib->trace(c.trace).load_only)
        throw InputError("window: trace '" + util::printable(c.trace) +
                         "' is load-only (per-layer expert totals, no samples): windows need samples");
    const auto samples = lib->samples(c.trace);
    const std::vector<WindowSelection> parts =
        c.split_given ? split_consecutive(samples, static_cast<std::size_t>(c.split), c.trace)
                      : split_groups(samples, static_cast<std::size_t>(c.split_groups), c.trace);
    const std::vector<std::string> names = split_window_names(c.name, parts.size());
    std::set<std::string> taken;
    for (const auto& w : lib->windows(c.trace))
        taken.insert(w.name);
    for (std::size_t k = 0; k < parts.size(); ++k) {
        if (taken.count(names[k]))
            throw InputError("window: trace '" + util::printable(c.trace) + "' already has a window named '" +
                             util::printable(names[k]) + "' (no window was created)");
    }
    std::vector<storage::Library::WindowSpec> specs;
    for (std::size_t k = 0; k < parts.size(); ++k)
        specs.push_back({names[k], parts[k].ids, parts[k].definition});
    const auto created = lib->create_windows(c.trace, specs); // one transaction: all windows or none
    for (std::size_t k = 0; k < created.size(); ++k)
        std::cout << "window '" << shown(created[k].name) << "' of trace '" << shown(c.trace)
                  << "': " << created[k].samples << " samples (" << shown(parts[k].definition) << ")\n";
    return 0;
}

int run_window(const WindowCmd& c) {
    check_db_path(c.db);
    const int modes =
        c.ids_given + c.first_given + c.random_given + c.groups_given + c.split_given + c.split_groups_given;
    if (modes != 1)
        throw UsageError("window: give exactly one of --ids FILE, --first N, --random N --seed S, --groups LIST, "
                         "--split N, --split-groups G");
    if (c.split_given || c.split_groups_given) return do_window_split(c);
    if (c.first_given && c.first < 1)
        throw UsageError("window: --first must be >= 1 (got " + std::to_string(c.first) + ")");
    if (c.random_given && c.random < 1)
        throw UsageError("window: --random must be >= 1 (got " + std::to_string(c.random) + ")");
    if (c.random_given && !c.seed_given)
        throw UsageError("window: --random needs --seed S (plans must be reproducible)");
    const std::uint64_t seed = c.seed_given ? parse_seed(c.seed_text) : 0;
    const std::size_t first = static_cast<std::size_t>(c.first), random = static_cast<std::size_t>(c.random);
    std::vector<std::string> ids;
    if (c.ids_given) {
        // Read the list before touching the library: a bad list changes nothing.
        std::istringstream in(read_input_file(c.ids_file, input_files::kIdList));
        std::string line;
        bool first_line = true;
        while (std::getline(in, line)) {
            if (first_line && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3); // UTF-8 BOM
            first_line = false;
            const auto is_space = [](char ch) {
                return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
            };
            std::size_t b = 0, e = line.size();
            while (b < e && is_space(line[b]))
                ++b;
            while (e > b && is_space(line[e - 1]))
                --e;
            if (b == e || line[b] == '#') continue;
            ids.push_back(line.substr(b, e - b));
        }
        if (ids.empty()) throw InputError(c.ids_file + ": no sample ids");
    }
    auto lib = storage::Library::open(c.db, storage::OpenMode::ReadWrite);
    const auto samples = lib->samples(c.trace);
    std::string definition;
    if (c.ids_given) {
        definition = "ids from " + c.ids_file;
    } else {
        // The selection rules live in core/model/window_select.h (shared with the studio).
        WindowSelection sel = c.first_given    ? select_first(samples, first, c.trace)
                              : c.random_given ? select_random(samples, random, seed, c.trace)
                                               : select_groups(samples, split_list(c.groups), c.trace);
        ids = std::move(sel.ids);
        definition = std::move(sel.definition);
        if (c.groups_given) definition = "groups " + c.groups;
    }
    const auto w = lib->create_window(c.trace, c.name, ids, definition);
    std::cout << "window '" << shown(w.name) << "' of trace '" << shown(c.trace) << "': " << w.samples << " samples ("
              << shown(definition) << ")\n";
    return 0;
}

} // namespace

Command register_window(CLI::App& app) {
    auto c = std::make_shared<WindowCmd>();
    auto* win = app.add_subcommand("window", "define an optimizer-step window (a named subset of a trace's samples)");
    win->add_option("--db", c->db, "library file")->required();
    win->add_option("--trace", c->trace, "trace name")->required();
    win->add_option("--name", c->name, "window name")->required();
    win->add_option("--ids", c->ids_file, "file with one sample id per line")->each([c](const std::string&) {
        c->ids_given = true;
    });
    add_int_option(*win, "--first", c->first, "first N samples in numeric-aware id order",
                   std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), &c->first_given);
    add_int_option(*win, "--random", c->random, "N samples drawn with --seed", std::numeric_limits<std::int64_t>::min(),
                   std::numeric_limits<std::int64_t>::max(), &c->random_given);
    win->add_option("--seed", c->seed_text,
                    "seed for --random, in 0.." + std::to_string(std::numeric_limits<std::uint64_t>::max()))
        ->type_name("UINT")
        ->each([c](const std::string&) { c->seed_given = true; });
    add_int_option(*win, "--split", c->split,
                   "cut the trace into consecutive windows of N samples (import order), "
                   "named NAME-000, NAME-001, ...",
                   std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), &c->split_given);
    add_int_option(
        *win, "--split-groups", c->split_groups, "cut the trace into consecutive windows of G whole GRPO groups",
        std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), &c->split_groups_given);
    win->add_option("--groups", c->groups, "comma-separated GRPO groups")->each([c](const std::string&) {
        c->groups_given = true;
    });
    return {win, [c] { return run_window(*c); }};
}

} // namespace routepack::cli
