#pragma once
// The headless CLI `routepack` (import, info, window, synth, demo). Qt-free so that it runs on
// machines without Qt (the GPU machine).

namespace routepack::cli {

/// Runs the CLI. Returns the process exit status: 0 success, 1 bad input or failure (one line
/// "routepack: error: ..." on stderr), 2 bad command line, 130 cancelled (SIGINT).
int run(int argc, char** argv);

} // namespace routepack::cli
