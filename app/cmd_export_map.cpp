// `routepack export-map`: a plan's placement as physical_to_logical_map (routepack, SGLang or vLLM rows).
#include "app/cli_errors.h"
#include "app/commands.h"

#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "core/util/input_file.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace routepack::cli {

namespace {

struct ExportMapCmd {
    std::string plan, format = "routepack", out;
};

int run_export_map(const ExportMapCmd& c) {
    const ExpertMapFormat f = as_usage([&] { return parse_expert_map_format(c.format); });
    const PlanFile p = parse_plan(read_input_file(c.plan, input_files::kPlan), c.plan);
    check_output_file(c.out, "--out");
    write_output(c.out, expert_map_json(p.placement, p.model, f), "expert map");
    std::cout << "expert map (" << c.format << ", rows = "
              << (f == ExpertMapFormat::SGLang ? "all " + std::to_string(p.model.num_hidden_layers) + " decoder layers"
                                               : std::to_string(p.model.num_moe_layers()) + " MoE layers")
              << ", " << p.model.experts << " experts) written to " << c.out << "\n";
    return 0;
}

} // namespace

Command register_export_map(CLI::App& app) {
    auto c = std::make_shared<ExportMapCmd>();
    auto* exm = app.add_subcommand("export-map",
                                   "export a plan's placement as physical_to_logical_map (routepack, sglang, vllm)");
    exm->add_option("--plan", c->plan, "plan JSON")->required();
    exm->add_option(
        "--format", c->format,
        "routepack (default; rows = MoE layers), sglang (rows = all decoder layers), vllm (rows = MoE layers)");
    exm->add_option("--out", c->out, "output file")->required();
    return {exm, [c] { return run_export_map(*c); }};
}

} // namespace routepack::cli
