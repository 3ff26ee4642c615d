// `routepack calibrate`: a topology's cost model fitted to a measured step (docs/measure.md).
#include "app/cli_common.h"
#include "app/cli_errors.h"
#include "app/commands.h"

#include "core/model/topology.h"
#include "core/plan/calibrate.h"
#include "core/util/input_file.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace routepack::cli {

namespace {

struct CalibrateCmd {
    std::string measured, topology, out;
};

/// A number for the report: 4 significant digits.
std::string calib_number(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", v);
    return b;
}

/// "0.975" for a fit's R^2 and relative RMS.
std::string calib_fit(const CalibrationFit& f) {
    return std::to_string(f.pieces) + " pieces, R^2 " + calib_number(f.r2) + ", relative RMS " +
           calib_number(f.rel_rms);
}

int run_calibrate(const CalibrateCmd& c) {
    check_output_file(c.out, "--out");
    const Topology topo = load_topology(c.topology);
    const Calibration cal = calibrate(read_input_file(c.measured, input_files::kMeasured), c.measured, topo);
    // Written as parse_topology reads it, and read back: a fitted number out of a topology's ranges is refused.
    const std::string text = topology_to_json(cal.topology);
    (void)parse_topology(text, c.out);
    write_output(c.out, text, "topology");
    std::cout << "calibrated " << topology_origin(c.topology) << " from " << c.measured << " (" << cal.plans
              << " plans)\n"
              << "  attention  alpha " << calib_number(cal.old_alpha) << " -> " << calib_number(cal.alpha) << ", beta "
              << calib_number(cal.old_beta) << " -> " << calib_number(cal.beta) << " (" << calib_fit(cal.attention)
              << ")\n"
              << "  experts    " << calib_number(cal.experts.x1 * 1e6) << " us per invocation + "
              << calib_number(cal.experts.x2 * 1e9) << " ns per token: expert_invocation_tokens "
              << cal.old_invocation_tokens << " -> " << cal.invocation_tokens << " (" << calib_fit(cal.experts) << ")\n"
              << "  seconds per U " << calib_number(cal.seconds_per_U)
              << " on the measured machine and widths (not written)\n"
              << "written to " << c.out << "\n";
    return 0;
}

} // namespace

Command register_calibrate(CLI::App& app) {
    auto c = std::make_shared<CalibrateCmd>();
    auto* cal = app.add_subcommand(
        "calibrate", "fit a topology's attention alpha/beta and expert invocation cost to a measured step");
    cal->add_option("measured", c->measured, "measured step file (python3 -m routepack.torch.measure --out)")
        ->required();
    cal->add_option("--topology", c->topology, "topology JSON file or shipped name to calibrate")->required();
    cal->add_option("--out", c->out, "calibrated topology file to write")->required();
    return {cal, [c] { return run_calibrate(*c); }};
}

} // namespace routepack::cli
