// `routepack plan`: plan a window (LPT placement, certified rows, RoutePack packing) and write
// the plan JSON (core/plan/plan_file.h).
#include "app/cli_errors.h"
#include "app/cli_report.h"
#include "app/commands.h"

#include "core/plan/plan_file.h"
#include "core/util/errors.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace routepack::cli {

namespace {

int run_plan(const PlanCmd& c) {
    if (c.out.empty()) throw UsageError("plan: --out PLAN.json is required");
    (void)check_plan_flags(c); // the command line's own faults before the output file's
    c.src.check(true);
    check_output_file(c.out, "--out");
    const PlanResult r = run_planner(c);
    write_output(c.out, plan_to_json(r), "plan");
    if (c.json) {
        print_comparison_json(r);
    } else {
        print_comparison(r);
        std::cout << "plan written to " << c.out << "\n";
    }
    return r.cancelled ? 130 : 0;
}

} // namespace

Command register_plan(CLI::App& app) {
    auto c = std::make_shared<PlanCmd>();
    c->command = "plan";
    auto* plan = app.add_subcommand("plan", "plan a window: LPT placement, certified rows, RoutePack packing, "
                                            "placement refined for the layout; writes the plan JSON");
    c->src.add(*plan);
    add_budget_flags(*plan, *c);
    plan->add_option("--out", c->out, "plan file to write")->required();
    plan->add_flag("--json", c->json, "print the comparison as JSON");
    plan->add_flag("--quiet", c->quiet, "no progress on stderr");
    return {plan, [c] { return run_plan(*c); }};
}

} // namespace routepack::cli
