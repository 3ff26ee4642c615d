// `routepack compare`: baseline / reorder / karmarkar-karp / routepack on a window, nothing written.
#include "app/cli_report.h"
#include "app/commands.h"

#include <CLI/CLI.hpp>

#include <memory>

namespace routepack::cli {

namespace {

int run_compare(const PlanCmd& c) {
    const PlanResult r = run_planner(c);
    if (c.json) {
        print_comparison_json(r);
    } else {
        print_comparison(r);
    }
    return r.cancelled ? 130 : 0;
}

} // namespace

Command register_compare(CLI::App& app) {
    auto c = std::make_shared<PlanCmd>();
    c->command = "compare";
    auto* cmp = app.add_subcommand("compare", "compare baseline / reorder / karmarkar-karp / routepack on a window");
    c->src.add(*cmp);
    add_budget_flags(*cmp, *c);
    cmp->add_flag("--json", c->json, "machine-readable output");
    cmp->add_flag("--quiet", c->quiet, "no progress on stderr");
    return {cmp, [c] { return run_compare(*c); }};
}

} // namespace routepack::cli
