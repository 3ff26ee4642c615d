// The `routepack` command table and dispatch: each command registers its subcommand (app/commands.h,
// one file per command); run() parses, runs the chosen one and turns every error into one
// "routepack: error: ..." line and an exit status (2 for a usage error, 1 for a failure of the work).
#include "app/cli.h"

#include "app/cli_errors.h"
#include "app/cmd_rewrite.h"
#include "app/commands.h"
#include "core/util/errors.h"
#include "core/util/json.h"
#include "core/util/version.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <new>
#include <vector>

namespace routepack::cli {

namespace {

/// Last resort for the one-line rule: any line break left in a message becomes a visible escape.
std::string one_line(const std::string& msg) {
    std::string out;
    out.reserve(msg.size());
    for (char ch : msg) {
        if (ch == '\n')
            out += "\\n";
        else if (ch == '\r')
            out += "\\r";
        else
            out.push_back(ch);
    }
    return out;
}

} // namespace

int run(int argc, char** argv) {
    CLI::App app{"routepack: plan MoE RL training steps from routing-replay traces (RoutePack)", "routepack"};
    app.require_subcommand(1);
    // Set before the subcommands are added: each takes its help flag from here.
    app.set_help_flag("-h,--help", "print this help message and exit");
    app.set_version_flag("--version", std::string("routepack ") + kVersion, "print the version and exit");

    // In the order --help lists them, one a line.
    // clang-format off
    const std::vector<Command> commands = {
        register_import(app),
        register_import_run(app),
        register_import_measured(app),
        register_info(app),
        register_window(app),
        register_synth(app),
        register_synth_checkpoint(app),
        register_demo(app),
        register_plan(app),
        register_compare(app),
        register_sweep(app),
        register_validate(app),
        register_export_map(app),
        register_place(app),
        register_calibrate(app),
    };
    // clang-format on
    // `rewrite` registers through the rewrite command's own options (app/cmd_rewrite.h), shared with
    // the routepack-rewrite executable.
    RewriteCliOptions rwc;
    auto* rw =
        app.add_subcommand("rewrite", "rewrite a checkpoint so that expert state follows a plan's placement (or back)");
    add_rewrite_options(*rw, rwc);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "routepack: error: " << one_line(parse_error_text(app, e)) << "\n";
        return 2;
    } catch (const InputError& e) {
        // A flag's value refused by its reader (app/cli_int.h), while parsing.
        std::cerr << "routepack: error: " << one_line(parse_error_text(app, e)) << "\n";
        return 2;
    }

    std::string command = "routepack";
    for (const auto* sub : app.get_subcommands())
        command = sub->get_name();
    try {
        for (const Command& c : commands)
            if (*c.sub) return c.run();
        if (*rw) return run_rewrite_cli(rwc, std::cout, std::cerr);
    } catch (const Cancelled&) {
        std::cerr << "routepack: cancelled; nothing was changed\n";
        return 130;
    } catch (const UsageError& e) {
        std::cerr << "routepack: error: " << one_line(cli_error_text(e)) << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "routepack: error: out of memory while running '" << command << "'\n";
        return 1;
    } catch (const InputError& e) {
        std::cerr << "routepack: error: " << one_line(cli_error_text(e)) << "\n";
        return 1;
    } catch (const nlohmann::json::exception& e) {
        std::cerr << "routepack: error: " << one_line(util::json_error_description(e)) << "\n";
        return 1;
    } catch (const std::filesystem::filesystem_error& e) {
        const std::string p = e.path1().empty() ? std::string() : e.path1().string() + ": ";
        std::cerr << "routepack: error: " << one_line(p + e.code().message()) << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "routepack: error: " << one_line(e.what()) << "\n";
        return 1;
    }
    return 2;
}

} // namespace routepack::cli
