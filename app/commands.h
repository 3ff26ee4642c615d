#pragma once
// The `routepack` commands, one file each (app/cmd_<command>.cpp). Each register function adds
// its CLI11 subcommand with its options to `app` and returns the Command that runs it; cli::run()
// registers them in this order (the order --help lists them) and dispatches to the parsed one.
#include "app/cli_common.h"

namespace routepack::cli {

Command register_import(CLI::App& app);           ///< import: trace files/folders into a library
Command register_import_run(CLI::App& app);       ///< import-run: a cluster run's summary into a library
Command register_import_measured(CLI::App& app);  ///< import-measured: a measured step into a library
Command register_info(CLI::App& app);             ///< info: traces, lengths, per-layer load CV
Command register_window(CLI::App& app);           ///< window: a named subset of a trace's samples
Command register_synth(CLI::App& app);            ///< synth: a deterministic synthetic GRPO trace
Command register_synth_checkpoint(CLI::App& app); ///< synth-checkpoint: a small safetensors checkpoint
Command register_demo(CLI::App& app);             ///< demo: the main job on the embedded demo input
Command register_plan(CLI::App& app);             ///< plan: plan a window, write the plan JSON
Command register_compare(CLI::App& app);          ///< compare: the four methods on a window
Command register_sweep(CLI::App& app);            ///< sweep: plan every window of a trace
Command register_validate(CLI::App& app);         ///< validate: check (and rescore) a plan
Command register_export_map(CLI::App& app);       ///< export-map: a plan's physical_to_logical_map
Command register_calibrate(CLI::App& app);        ///< calibrate: a topology's cost model fitted to a measured step
Command register_place(CLI::App& app);            ///< place: LPT placement from expert totals

} // namespace routepack::cli
