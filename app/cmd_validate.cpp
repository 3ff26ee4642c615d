// `routepack validate`: a plan's structure checked, and the plan rescored against its trace when given one.
#include "app/commands.h"

#include "core/plan/plan_file.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace routepack::cli {

namespace {

struct ValidateCmd {
    std::string plan;
    WindowSource src;
};

int run_validate(const ValidateCmd& c) {
    c.src.check(false); // --db without --trace takes the plan's trace
    const PlanFile f = parse_plan(read_input_file(c.plan, input_files::kPlan), c.plan);
    std::cout << shown_path(c.plan) << ": structure valid: " << f.sample_ids.size() << " samples in " << f.row_count
              << " x " << f.topology.dp_slots << " cells, " << f.placement.layers << " MoE layers x "
              << f.placement.experts << " experts on " << f.placement.ep_ranks << " EP ranks\n";
    if (!c.src.given()) return 0;
    WindowSource src = c.src;
    if (!src.db.empty() && src.trace.empty()) src.trace = f.trace_name;
    std::string tn, wn;
    const Trace w = src.load(&tn, &wn, f.sample_ids);
    const std::string diff = rescore_plan(f, w);
    if (!diff.empty()) throw InputError(c.plan + ": does not match its trace: " + diff);
    std::cout << shown_path(c.plan) << ": rescored against trace '" << shown(tn) << "': identical score ["
              << fmt("%.6f", f.score.max_u) << ", " << fmt("%.6f", f.score.sum_u) << ", " << fmt("%.6f", f.score.max_j)
              << "] and metrics\n";
    return 0;
}

} // namespace

Command register_validate(CLI::App& app) {
    auto c = std::make_shared<ValidateCmd>();
    auto* val =
        app.add_subcommand("validate", "check a plan's structure, and rescore it against its trace when given one");
    val->add_option("plan", c->plan, "plan JSON")->required();
    c->src.add(*val, false);
    return {val, [c] { return run_validate(*c); }};
}

} // namespace routepack::cli
