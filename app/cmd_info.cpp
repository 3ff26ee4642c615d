// `routepack info`: what a library holds (traces, sample counts, length statistics, per-layer load CV).
#include "app/cli_report.h"
#include "app/commands.h"

#include "storage/library.h"

#include <CLI/CLI.hpp>

#include <memory>

namespace routepack::cli {

namespace {

struct InfoCmd {
    std::string db, trace; ///< --trace: only this trace, with per-layer detail
    bool json = false;
};

int run_info(const InfoCmd& c) {
    check_db_path(c.db);
    auto lib = storage::Library::open(c.db, storage::OpenMode::ReadOnly);
    const std::vector<storage::TraceEntry> traces =
        c.trace.empty() ? lib->traces() : std::vector<storage::TraceEntry>{lib->trace(c.trace)};
    print_library_info(*lib, c.db, traces, !c.trace.empty(), c.json);
    return 0;
}

} // namespace

Command register_info(CLI::App& app) {
    auto c = std::make_shared<InfoCmd>();
    auto* info = app.add_subcommand("info", "list traces, sample counts, length statistics, per-layer load CV");
    info->add_option("--db", c->db, "library file")->required();
    info->add_option("--trace", c->trace, "only this trace, with per-layer detail");
    info->add_flag("--json", c->json, "machine-readable output");
    return {info, [c] { return run_info(*c); }};
}

} // namespace routepack::cli
