#include "storage/demo.h"

#include "core/plan/plan_file.h"
#include "core/util/atomic_file.h"
#include "core/util/errors.h"

#include <fstream>

namespace routepack::storage {

DemoBuild build_demo(const std::filesystem::path& folder, const PlannerBudgets& budgets, const PlanProgressFn& progress,
                     const std::atomic<bool>* cancel) {
    DemoBuild d;
    d.folder = folder;
    d.library = folder / kDemoLibraryFile;
    d.traces = folder / "trace";
    d.plan_file = folder / "plan.json";
    std::filesystem::create_directories(folder);
    Library::remove_unused(d.library); // LibraryBusy while another writer has it open
    std::filesystem::remove_all(d.traces);

    d.trace_files = write_synth(d.config, TraceFormat::VLLM, d.traces);
    auto lib = Library::open(d.library);
    ImportOptions opt;
    opt.format = TraceFormat::VLLM;
    opt.model = synth_model(d.config);
    d.import = lib->import_trace(kDemoTrace, {d.traces}, opt, {}, cancel);
    std::vector<std::string> ids;
    for (const auto& x : lib->samples(kDemoTrace))
        ids.push_back(x.id);
    d.window = lib->create_window(kDemoTrace, kDemoWindow, ids, "all samples of the demo GRPO window");

    d.topology = known_topology(kDemoTopology);
    lib->save_topology(kDemoTopology, d.topology, budgets);
    PlanInput in;
    in.window = lib->load_window(kDemoTrace, kDemoWindow);
    in.trace_name = kDemoTrace;
    in.window_name = kDemoWindow;
    in.topology = d.topology;
    in.budgets = budgets;
    d.plan = plan_window(in, progress, cancel);
    d.run = lib->save_run(d.plan, kDemoTopology);

    try {
        util::write_file_atomically(d.plan_file, plan_to_json(d.plan) + "\n");
    } catch (const util::AtomicWriteError& e) {
        throw InputError(d.plan_file.string() + ": cannot write plan (" + e.what() + ")");
    }
    return d;
}

} // namespace routepack::storage
