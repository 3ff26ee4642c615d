// `routepack demo`: the main job on the embedded demo input (storage/demo.h, shared with the studio).
#include "app/cli_errors.h"
#include "app/cli_report.h"
#include "app/commands.h"

#include "gpu/cuda/device.h"
#include "storage/demo.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace routepack::cli {

namespace {

struct DemoCmd {
    std::string out = "routepack-demo";
};

/// The main job on the embedded demo input (storage/demo.h, shared with the studio): synthesize a
/// GRPO window, import it into a fresh library, define the window, plan it, save the run and write
/// plan.json; then print what the library holds and the comparison. UsageError for an empty --out.
int run_demo(const DemoCmd& c) {
    if (c.out.empty()) throw UsageError("demo: --out must name a folder (got '')");
    const storage::DemoBuild d = storage::build_demo(c.out);
    std::cout << "demo: wrote " << d.trace_files.size() << " synthetic vLLM response files (" << d.config.groups
              << " GRPO groups x " << d.config.group_size << " rollouts) to " << d.traces.string() << "\n";
    std::cout << "demo: imported " << d.import.samples << " samples into " << d.library.string() << "\n";
    auto lib = storage::Library::open(d.library, storage::OpenMode::ReadOnly);
    print_trace_detail(*lib, lib->trace(storage::kDemoTrace));
    print_comparison(d.plan);
    std::cout << "demo: plan written to " << d.plan_file.string() << "\n";
    std::cout << "demo: devices: " << gpu::query_devices().description << "\n";
    return 0;
}

} // namespace

Command register_demo(CLI::App& app) {
    auto c = std::make_shared<DemoCmd>();
    auto* demo = app.add_subcommand("demo", "run the main job on the embedded demo input (synthetic GRPO window)");
    demo->add_option("--out", c->out, "output folder (default routepack-demo)");
    return {demo, [c] { return run_demo(*c); }};
}

} // namespace routepack::cli
