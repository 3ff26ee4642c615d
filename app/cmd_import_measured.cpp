// `routepack import-measured`: a measured step into a library beside the window and runs it
// measured: a measured file, or torch.profiler traces with the plan they ran (docs/measure.md).
#include "app/cli_common.h"
#include "app/commands.h"

#include "core/util/input_file.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace routepack::cli {

namespace {

struct ImportMeasuredCmd {
    std::vector<std::string> files;
    std::string db, plan, method = "routepack", step;
};

/// "18.72 s" with 4 significant digits.
std::string seconds_text(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.4g s", v);
    return b;
}

storage::MeasuredImport import_files(storage::Library& lib, const ImportMeasuredCmd& c) {
    if (c.plan.empty()) {
        if (c.files.size() != 1)
            throw UsageError("import-measured: give one measured file, or torch.profiler traces with --plan");
        return lib.import_measured(read_input_file(c.files[0], input_files::kMeasured), c.files[0]);
    }
    std::vector<ProfilerTraceFile> traces;
    std::vector<std::filesystem::path> paths;
    for (const std::string& f : c.files) {
        traces.push_back({f, read_input_file(f, input_files::kProfilerTrace)});
        paths.emplace_back(f);
    }
    return lib.import_profiler(read_input_file(c.plan, input_files::kPlan), c.plan, c.method, c.step, traces, paths);
}

int run_import_measured(const ImportMeasuredCmd& c) {
    check_db_path(c.db);
    std::unique_ptr<storage::Library> lib = storage::Library::open(c.db);
    storage::MeasuredImport r;
    try {
        r = import_files(*lib, c);
    } catch (...) {
        lib->discard_if_created_and_empty();
        throw;
    }
    const storage::MeasuredStepEntry& m = r.step;
    const std::string what = "measured step " + std::to_string(m.id) + " of " + shown(m.trace) + "/" + shown(m.window);
    if (r.unchanged)
        std::cout << what << " is already in " << shown_path(c.db) << " (nothing changed)";
    else
        std::cout << "imported " << what << " (" << m.source << ") into " << shown_path(c.db);
    std::cout << ": " << m.plans.size() << (m.plans.size() == 1 ? " plan" : " plans") << "\n";
    for (const storage::MeasuredPlanEntry& p : m.plans) {
        std::cout << "  " << shown(p.name) << ": " << p.rows << " rows, step " << seconds_text(p.step_seconds);
        if (p.modelled_max_u) {
            char b[48];
            std::snprintf(b, sizeof b, ", modelled max_g U %.4g", *p.modelled_max_u);
            std::cout << b;
        }
        if (p.run_id != 0)
            std::cout << ", the layout of run " << p.run_id << "'s " << p.method << "\n";
        else
            std::cout << ", no saved run has its layout\n";
    }
    return 0;
}

} // namespace

Command register_import_measured(CLI::App& app) {
    auto c = std::make_shared<ImportMeasuredCmd>();
    auto* sub = app.add_subcommand("import-measured",
                                   "store a measured step (a measured file, or torch.profiler traces with --plan) "
                                   "beside the window and runs it measured");
    sub->add_option("files", c->files,
                    "a measured file (python3 -m routepack.torch.measure --out), or the step's torch.profiler "
                    "Chrome traces (one per process) with --plan")
        ->required();
    sub->add_option("--db", c->db, "library file (SQLite; created when absent)")->required();
    auto* plan =
        sub->add_option("--plan", c->plan, "the plan file whose layout the profiled step ran (profiler traces only)");
    sub->add_option("--method", c->method,
                    "which of the plan's layouts ran: baseline, reorder, karmarkar_karp, routepack (default), "
                    "grouter, routepack+comm (profiler traces only)")
        ->needs(plan);
    sub->add_option("--step", c->step,
                    "the plan name of the traces' routepack:step ranges (default: --method; python3 -m "
                    "routepack.torch.measure names a --plan FILE's step by the file's name)")
        ->needs(plan);
    return {sub, [c] { return run_import_measured(*c); }};
}

} // namespace routepack::cli
