#pragma once
// Command-line front end of the checkpoint rewrite, shared by `routepack rewrite` (app/cli.cpp) and the
// Qt-free `routepack-rewrite` executable (app/rewrite_main.cpp) that runs on GPU machines without Qt. The
// request it builds comes from gpu/rewrite/request.h, as the studio's rewrite dialog's does.
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace routepack::cli {

/// The rewrite command's options (docs/checkpoints.md "Rewriting a checkpoint").
struct RewriteCliOptions {
    std::string plan, map, input, output, layer_map, device = "auto";
    bool inverse = false, permute_router = false, verify = false, quiet = false;
    bool layer_map_given = false; ///< --layer-map was on the command line (even as an empty string)
    int workers = 0;
};

/// Adds --plan or --map, --input --output [--inverse] [--permute-router] [--layer-map] [--device] [--verify]
/// [--workers] [--quiet] to `app`; --workers is read in 0..gpu::kMaxRewriteWorkers while parsing.
void add_rewrite_options(CLI::App& app, RewriteCliOptions& o);

/// Checks the flags (UsageError: exactly one of --plan and --map, "rewrite: give --plan PLAN.json or
/// --map MAP.json (the placement to apply)" or "rewrite: give either --plan or --map, not both"; an
/// unknown --device, parse_rewrite_device's message), reads the plan (gpu::read_plan_file; or the
/// expert map, gpu::read_expert_map_file) and builds the request (gpu::request_from_plan /
/// request_from_map), rewrites, prints a
/// summary to `out` and progress to `err` (when err is a terminal and not quiet). Returns 0, or 130 when
/// SIGINT/SIGTERM/SIGHUP cancelled it (handled while it runs; the temporary folder is removed); throws
/// routepack::InputError on bad input or a failed rewrite (nothing is left at --output then).
int run_rewrite_cli(const RewriteCliOptions& o, std::ostream& out, std::ostream& err);

} // namespace routepack::cli
