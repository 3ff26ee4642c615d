#pragma once
// The headless CLI `routepack` (import, info, window, synth, demo). Qt-free so that it runs on
// machines without Qt (the GPU machine).

namespace routepack::cli {

/// Runs the CLI. Returns the process exit status: 0 success; 2 for a usage error (an unknown
/// command or flag, a flag value malformed or out of its range, a required flag missing, flags that
/// conflict: the command line alone is wrong); 1 for a failure of the work (a
/// missing or bad input file, an unknown trace, a plan that cannot be made, ...); 130 cancelled
/// (SIGINT, SIGTERM, SIGHUP). Every error is one line "routepack: error: ..." on stderr.
int run(int argc, char** argv);

} // namespace routepack::cli
