#pragma once
// Command-line front end of the checkpoint rewrite, shared by `routepack rewrite` (app/) and the Qt-free
// `routepack-rewrite` executable (gpu/rewrite_main.cpp) that runs on GPU machines without Qt.
#include "core/plan/plan_file.h"
#include "gpu/rewrite.h"

#include <cstdint>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace routepack::gpu {

/// The rewrite command's options (README "Rewriting a checkpoint").
struct RewriteCliOptions {
    std::string plan, input, output, layer_map, device = "auto";
    bool inverse = false, permute_router = false, verify = false, quiet = false;
    bool layer_map_given = false;  ///< --layer-map was on the command line (even as an empty string)
    int workers = 0;
};

/// Adds --plan --input --output [--inverse] [--permute-router] [--layer-map] [--device] [--verify]
/// [--workers] [--quiet] to `app`.
void add_rewrite_options(CLI::App& app, RewriteCliOptions& o);

/// parse_plan, with JSON syntax errors also reported as InputError "<origin>: <what and where>".
PlanFile parse_plan_text(const std::string& json_text, const std::string& origin);

/// Reads and parses a plan file: InputError "<path>: no such plan file", "<path>: not a regular file",
/// "<path>: cannot read plan", or
/// parse_plan_text's errors (origin = path).
PlanFile read_plan_file(const std::string& path);

/// A rewrite request carrying the plan's part: placement, plan_layers (the plan's model.moe_layers),
/// plan_model, plan_fingerprint and plan_origin = `origin` (named in errors and the sidecar). The
/// checkpoint's part (input, output, direction, layer map, device, ...) keeps RewriteRequest's defaults.
/// Shared by run_rewrite_cli and the studio's rewrite dialog, so both rewrite the same way.
RewriteRequest request_from_plan(const PlanFile& plan, const std::string& origin);

/// Bytes as "1.23 GB" from 1 GB on and "4.56 MB" below (the unit of the rewrite summary).
std::string format_gb(std::uint64_t bytes);

/// Reads the plan (read_plan_file), rewrites, prints a summary to `out` and progress to `err`
/// (when err is a terminal and not quiet). Returns 0, or 130 when SIGINT/SIGTERM/SIGHUP cancelled it
/// (handled while it runs; the temporary folder is removed); throws routepack::InputError on bad input or
/// a failed rewrite (nothing is left at --output then).
int run_rewrite_cli(const RewriteCliOptions& o, std::ostream& out, std::ostream& err);

}  // namespace routepack::gpu
