// `routepack import`: routing traces (files or folders, any supported format) into a library.
#include "app/cli_errors.h"
#include "app/commands.h"

#include "core/import/import.h"
#include "core/util/errors.h"
#include "core/util/text.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <unistd.h>

namespace routepack::cli {

namespace {

struct ImportCmd {
    std::string db, name, format = "auto", layer_base = "auto";
    ModelFlags model;
    std::vector<std::string> paths;
    bool quiet = false;
};

int run_import(const ImportCmd& c) {
    check_db_path(c.db);
    ImportOptions opt;
    opt.format = as_usage([&] { return parse_trace_format(c.format); });
    opt.router_layer_base = as_usage([&] { return parse_layer_base(c.layer_base); });
    opt.model = c.model.resolve(); // the model flags' own checks first (UsageError)
    // A library this import creates is removed again when the import fails (Library::open
    // removes it when it cannot make it a library at all).
    std::unique_ptr<storage::Library> lib = storage::Library::open(c.db);
    std::vector<std::filesystem::path> inputs(c.paths.begin(), c.paths.end());
    const bool tty = isatty(STDERR_FILENO) && !c.quiet;
    auto last = std::chrono::steady_clock::now();
    auto progress = [&](const ImportProgress& p) {
        if (!tty) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::milliseconds(100) && p.files_done != p.files_total) return;
        last = now;
        std::fprintf(stderr, "\rimporting %zu/%zu files, %zu samples, %s", p.files_done, p.files_total, p.samples,
                     human_bytes(p.bytes_done).c_str());
        std::fflush(stderr);
    };
    catch_sigint();
    const auto t0 = std::chrono::steady_clock::now();
    ImportSummary s;
    try {
        s = lib->import_trace(c.name, inputs, opt, progress, &sigint_flag());
    } catch (...) {
        if (tty) std::fputs("\n", stderr);
        lib->discard_if_created_and_empty();
        throw;
    }
    if (tty) std::fputs("\n", stderr);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "imported trace '" << shown(c.name) << "' into " << shown_path(c.db) << ": " << s.samples
              << " samples from " << s.files << " files (" << human_bytes(s.bytes) << ", format " << to_string(s.format)
              << ") in " << fmt("%.2f", secs) << " s\n";
    const auto& m = s.model;
    std::cout << "  model    " << (m.name.empty() ? "-" : shown(m.name)) << ": " << m.num_moe_layers()
              << " MoE layers (" << format_layer_list(m.moe_layers) << " of " << m.num_hidden_layers << "), "
              << m.experts << " experts, top-" << m.top_k << "\n";
    if (s.samples > 0) {
        const auto samples = lib->samples(c.name);
        std::set<std::string> rules;
        for (const auto& x : samples)
            rules.insert(to_string(x.length_rule));
        std::string r;
        for (const auto& x : rules)
            r += (r.empty() ? "" : ", ") + x;
        std::cout << "  lengths  min " << s.min_length << "  mean " << fmt("%.1f", s.mean_length) << "  max "
                  << s.max_length << " tokens (t_i rule: " << r << ")\n";
    }
    std::cout << "  missing routes " << s.missing_routes << "\n";
    for (const auto& n : s.notes)
        std::cout << "  note: " << util::printable(n, 400) << "\n";
    return 0;
}

} // namespace

Command register_import(CLI::App& app) {
    auto c = std::make_shared<ImportCmd>();
    auto* imp = app.add_subcommand("import", "import routing traces (files or folders) into a library");
    imp->add_option("--db", c->db, "library file (SQLite; created when absent)")->required();
    imp->add_option("--name", c->name, "trace name")->required();
    imp->add_option(
        "--format", c->format,
        "auto, sglang, vllm, npy, npz, nested-json, nrlre1, megatron, step-json, prompt-csv, aggregate, loads");
    add_layer_base_option(*imp, c->layer_base);
    c->model.add(*imp);
    imp->add_flag("--quiet", c->quiet, "no progress on stderr");
    imp->add_option("paths", c->paths, "trace files or folders")->required();
    return {imp, [c] { return run_import(*c); }};
}

} // namespace routepack::cli
