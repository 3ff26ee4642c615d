// `routepack rewrite` and `routepack-rewrite`: the rewrite command's options and run (app/cmd_rewrite.h).
#include "app/cmd_rewrite.h"

#include "app/cli_errors.h"
#include "app/cli_int.h"

#include "core/plan/plan_file.h"
#include "core/util/errors.h"
#include "gpu/rewrite.h"
#include "gpu/rewrite/request.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace routepack::cli {

using namespace routepack::gpu;

void add_rewrite_options(CLI::App& app, RewriteCliOptions& o) {
    app.add_option("--plan", o.plan, "plan JSON (routepack plan --out)");
    app.add_option("--map", o.map,
                   "expert map instead of a plan: routepack export-map output (any format), SGLang / vLLM "
                   "physical_to_logical_map JSON, or {\"moe_layers\", \"placement\"}");
    app.add_option("--input", o.input,
                   "checkpoint folder (safetensors shards + index, config.json) or one .safetensors file")
        ->required();
    app.add_option("--output", o.output, "folder to create (must not exist or be empty; never the input)")->required();
    app.add_flag("--inverse", o.inverse, "physical -> logical (canonical order) instead of logical -> physical");
    app.add_flag("--permute-router", o.permute_router,
                 "also permute router rows and router biases (self-contained inference checkpoint)");
    app.add_option("--layer-map", o.layer_map,
                   "plan layer -> checkpoint layer: P:C, P-Q:C or +N/-N, comma-separated (default: same ids)")
        ->each([&o](const std::string&) { o.layer_map_given = true; });
    app.add_option("--device", o.device, "auto (CUDA when a device exists), cpu or cuda");
    app.add_flag("--verify", o.verify, "re-read the output and compare every tensor with its source");
    add_int_option(app, "--workers", o.workers, "CPU threads (0 = all cores; default 0)", 0, kMaxRewriteWorkers);
    app.add_flag("--quiet", o.quiet, "no progress on stderr");
}

namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_signal(int) {
    g_cancel.store(true);
}

/// Routes SIGINT/SIGTERM/SIGHUP to the rewrite's cancel flag while alive (the rewrite then removes its
/// temporary folder), and restores the previous handlers.
struct SignalScope {
    struct sigaction old_int {
    }, old_term{}, old_hup{};
    SignalScope() {
        g_cancel.store(false);
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGINT, &sa, &old_int);
        ::sigaction(SIGTERM, &sa, &old_term);
        ::sigaction(SIGHUP, &sa, &old_hup);
    }
    ~SignalScope() {
        ::sigaction(SIGINT, &old_int, nullptr);
        ::sigaction(SIGTERM, &old_term, nullptr);
        ::sigaction(SIGHUP, &old_hup, nullptr);
    }
};

} // namespace

int run_rewrite_cli(const RewriteCliOptions& o, std::ostream& out, std::ostream& err) {
    if (o.plan.empty() == o.map.empty())
        throw UsageError(o.plan.empty() ? "rewrite: give --plan PLAN.json or --map MAP.json (the placement to apply)"
                                        : "rewrite: give either --plan or --map, not both");
    const RewriteDevice device = as_usage([&] { return parse_rewrite_device(o.device); });
    RewriteRequest req = o.map.empty() ? request_from_plan(read_plan_file(o.plan), o.plan)
                                       : request_from_map(read_expert_map_file(o.map), o.map, o.input);
    req.input = o.input;
    req.output = o.output;
    req.direction = o.inverse ? RewriteDirection::Inverse : RewriteDirection::Apply;
    req.permute_router = o.permute_router;
    if (o.layer_map_given || !o.layer_map.empty()) req.layer_map = parse_layer_map(o.layer_map, req.plan_layers);
    req.device = device;
    req.verify = o.verify;
    req.workers = o.workers;

    const bool tty = !o.quiet && ::isatty(STDERR_FILENO);
    int last = -1;
    RewriteProgressFn progress = [&](const std::string& stage, std::uint64_t done, std::uint64_t total) {
        if (!tty || total == 0) return;
        const int pct = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
        if (pct == last) return;
        last = pct;
        err << "\r" << stage << " " << pct << "%" << std::flush;
    };
    const RewritePlan rp = plan_rewrite(req); // report the plan's facts (rewrite_checkpoint replans; cheap)
    RewriteReport rep;
    {
        SignalScope signals;
        try {
            rep = rewrite_checkpoint(req, progress, &g_cancel);
        } catch (const Cancelled&) {
            if (tty) err << "\n";
            err << "rewrite cancelled; nothing was written at " << o.output << "\n";
            return 130;
        }
    }
    if (tty) err << "\r" << std::string(16, ' ') << "\r" << std::flush;

    out << (o.inverse ? "inverse" : "apply") << (o.permute_router ? " (router permuted)" : "") << ": " << o.input
        << " -> " << o.output << "\n";
    out << "checkpoint: " << rp.scheme << ", " << rp.outputs.size() << " shard(s), MoE layers "
        << format_layer_list(rp.checkpoint_layers) << ", " << rp.experts << " experts; placement "
        << rp.placement_fingerprint << "\n";
    out << "moved: " << rep.moved_tensors << " of " << (rp.expert_tensors + rp.router_tensors)
        << " expert-indexed tensors, " << format_gb(rep.moved_bytes) << " of " << format_gb(rp.total_bytes) << "\n";
    char line[160];
    std::snprintf(line, sizeof line, "wrote %s on %s in %.3f s (%.2f GB/s, written bytes per second)",
                  format_gb(rep.bytes_written).c_str(), rep.device.c_str(), rep.seconds, rep.gb_per_s());
    out << line << "\n";
    if (rep.verified) {
        std::snprintf(line, sizeof line, "verified: every output file equals its planned source bytes (%.3f s)",
                      rep.verify_seconds);
        out << line << "\n";
    }
    out << "provenance: " << (std::filesystem::path(o.output) / kRewriteSidecar).string() << "\n";
    return 0;
}

} // namespace routepack::cli
