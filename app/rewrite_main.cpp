// `routepack-rewrite`: the checkpoint rewrite as a Qt-free executable (runs on GPU machines without Qt).
// Same options, output and exit statuses as `routepack rewrite` (2 for a usage error, 1 for a failure).
#include "app/cli_errors.h"
#include "app/cmd_rewrite.h"
#include "core/util/errors.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"routepack-rewrite: make a checkpoint's expert state follow a plan's placement", "routepack-rewrite"};
    app.set_help_flag("-h,--help", "print this help message and exit");
    routepack::cli::RewriteCliOptions o;
    routepack::cli::add_rewrite_options(app, o);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        std::string msg = routepack::cli::parse_error_text(app, e);
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        std::cerr << "routepack-rewrite: error: " << msg << "\n";
        return 2;
    } catch (const routepack::InputError& e) {
        // A flag's value refused by its reader (app/cli_int.h), while parsing.
        std::string msg = routepack::cli::parse_error_text(app, e);
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        std::cerr << "routepack-rewrite: error: " << msg << "\n";
        return 2;
    }
    try {
        return routepack::cli::run_rewrite_cli(o, std::cout, std::cerr);
    } catch (const routepack::cli::UsageError& e) {
        std::string msg = routepack::cli::cli_error_text(e);
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        std::cerr << "routepack-rewrite: error: " << msg << "\n";
        return 2;
    } catch (const std::filesystem::filesystem_error& e) {
        std::cerr << "routepack-rewrite: error: " << (e.path1().empty() ? "" : e.path1().string() + ": ")
                  << e.code().message() << "\n";
    } catch (const routepack::InputError& e) {
        std::string msg = routepack::cli::cli_error_text(e); // settings named by their flags
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        std::cerr << "routepack-rewrite: error: " << msg << "\n";
    } catch (const std::exception& e) {
        std::string msg = e.what();
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        std::cerr << "routepack-rewrite: error: " << msg << "\n";
    }
    return 1;
}
