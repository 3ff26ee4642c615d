#pragma once
// The embedded demo (README "Set-up", docs/studio.md, `routepack demo`, the studio's first start and its headless
// mode): a synthetic GRPO window written as vLLM responses, imported into a fresh library, defined
// as a window, planned on the shipped demo topology, saved as a run and written as plan.json.
//
// Why a workflow lives in storage/: it drives a storage::Library (import, window, topology, run)
// and is called by both the CLI (app/cmd_demo.cpp) and the studio (views/studio_app.cpp,
// views/studio_window.cpp). Of the module folders (the top level is fixed), storage is the only
// Qt-free one that can reach the library (core and gpu may not include storage) and that views may
// link (views may not include app). It adds no SQL of its own: only calls of the Library API and
// core (write_synth, plan_window, plan_to_json, util::write_file_atomically).
#include "core/plan/planner.h"
#include "core/synth/synth.h"
#include "storage/library.h"

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

namespace routepack::storage {

inline constexpr const char* kDemoTrace = "demo";                      ///< trace name in the demo library
inline constexpr const char* kDemoWindow = "step-0";                   ///< its one window (all samples)
inline constexpr const char* kDemoTopology = "synthetic-demo-ep8-dp4"; ///< shipped topology it is planned on
inline constexpr const char* kDemoLibraryFile = "demo.routepack";      ///< library file inside the folder

/// What build_demo made, for printing and for the studio.
struct DemoBuild {
    std::filesystem::path folder;    ///< the output folder
    std::filesystem::path library;   ///< <folder>/demo.routepack
    std::filesystem::path traces;    ///< <folder>/trace (the synthetic vLLM files)
    std::filesystem::path plan_file; ///< <folder>/plan.json
    std::vector<std::filesystem::path> trace_files;
    SynthConfig config; ///< the embedded demo input (SynthConfig defaults: 8 groups x 8)
    ImportSummary import;
    WindowEntry window;
    Topology topology;
    PlanResult plan;
    RunEntry run; ///< the saved run
};

/// Builds the demo in `folder` (created when missing): removes a previous demo library (and its
/// -wal/-shm) and trace folder there, writes the synthetic trace (write_synth, vLLM format),
/// imports it as trace "demo", defines window "step-0" (all samples, import order), saves the
/// shipped topology "synthetic-demo-ep8-dp4" with `budgets`, plans the window (plan_window with
/// `progress` and `cancel`), saves the run and writes plan.json (temporary file + rename).
/// InputError / Cancelled propagate (Cancelled only from the import; a cancelled plan is saved as a
/// cancelled run, as the planner returns the best valid plan so far).
DemoBuild build_demo(const std::filesystem::path& folder, const PlannerBudgets& budgets = {},
                     const PlanProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

} // namespace routepack::storage
