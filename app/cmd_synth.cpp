// `routepack synth`: a deterministic synthetic GRPO trace written in one of the importers' formats.
#include "app/commands.h"

#include "app/cli_errors.h"
#include "app/cli_int.h"

#include "core/import/import.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "core/util/output_folder.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <unistd.h>

namespace routepack::cli {

namespace {

struct SynthCmd {
    std::string out, format = "vllm";
    SynthConfig cfg;
    std::uint64_t popularity_seed = 0;
    bool popularity_seed_given = false;
};

/// write_synth into `out` through a staging folder (util::OutputFolder): a new or empty folder
/// appears whole or not at all, a folder that holds files gets each new file whole; any failure (a
/// full disk included) leaves nothing behind. Returns the files written, under `out`.
std::vector<std::filesystem::path> write_synth_whole(const SynthConfig& cfg, TraceFormat f, const std::string& out) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(out, ec);
    if (fs::exists(st) && !fs::is_directory(st))
        throw InputError(out + ": exists and is not a folder (--out names the folder to write)");
    fs::path target = fs::path(out).lexically_normal();
    if (target.filename().empty()) target = target.parent_path(); // "dir/"
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(parent, ec))
        throw InputError(out + ": cannot create the folder (" + shown_path(parent.string()) + " is not a folder)");
    util::OutputFolder folder(target);
    const fs::path& tmp = folder.staging();
    std::vector<fs::path> files;
    try {
        files = write_synth(cfg, f, tmp);
    } catch (const fs::filesystem_error& e) {
        throw InputError(out + ": cannot write the synthetic trace (" + e.code().message() + "); nothing was written");
    } catch (const InputError& e) {
        // write_synth names the files it was writing: under `out`, as the user asked for them.
        std::string msg = e.what();
        const std::string from = tmp.string(), to = target.string();
        for (std::size_t at = msg.find(from); at != std::string::npos; at = msg.find(from, at + to.size()))
            msg.replace(at, from.size(), to);
        throw InputError(msg + "; nothing was written");
    }
    if (sigint_flag().load()) throw Cancelled(); // the staging folder goes with the unwinding
    folder.commit();
    for (auto& p : files)
        p = target / p.lexically_relative(tmp);
    return files;
}

int run_synth(SynthCmd& c) {
    if (c.popularity_seed_given) c.cfg.popularity_seed = c.popularity_seed;
    catch_sigint(); // a signal lets the writing finish into the staging folder, which is then removed
    // The flags' own checks; the CLI names each field by its flag (cli_error_text).
    as_usage([&] { check_synth_config(c.cfg); });
    const TraceFormat f = as_usage([&] { return parse_trace_format(c.format); });
    const auto files = write_synth_whole(c.cfg, f, c.out);
    const auto m = synth_model(c.cfg);
    std::cout << "wrote synthetic trace (" << c.cfg.groups * c.cfg.group_size << " samples in " << c.cfg.groups
              << " groups, format " << to_string(f) << ", seed " << c.cfg.seed << ") to " << c.out << ": "
              << files.size() << " files\n";
    std::cout << "  model    synthetic: " << m.num_moe_layers() << " MoE layers (" << format_layer_list(m.moe_layers)
              << " of " << m.num_hidden_layers << "), " << m.experts << " experts, top-" << m.top_k << "\n";
    std::cout << "  import with: routepack import --db DB --name NAME --experts " << m.experts << " --top-k " << m.top_k
              << " --layers " << m.num_hidden_layers << " --moe-layers " << format_layer_list(m.moe_layers) << " "
              << c.out << "\n";
    return 0;
}

} // namespace

Command register_synth(CLI::App& app) {
    auto c = std::make_shared<SynthCmd>();
    auto* syn = app.add_subcommand("synth", "write a deterministic synthetic GRPO trace");
    syn->add_option("--out", c->out, "output folder")->required();
    syn->add_option("--format", c->format, "vllm (default), sglang, npz, nested-json, nrlre1");
    add_int_option(*syn, "--groups", c->cfg.groups, "GRPO prompt groups");
    add_int_option(*syn, "--group-size", c->cfg.group_size, "rollouts per prompt");
    add_int_option(*syn, "--layers", c->cfg.num_hidden_layers, "decoder layers");
    add_int_option(*syn, "--dense-layers", c->cfg.first_dense_layers, "leading dense layers");
    add_int_option(*syn, "--experts", c->cfg.experts, "experts per MoE layer");
    add_int_option(*syn, "--top-k", c->cfg.top_k, "experts per token");
    add_int_option(*syn, "--prompt-mean", c->cfg.prompt_mean, "mean prompt tokens");
    add_int_option(*syn, "--response-mean", c->cfg.response_mean, "mean response tokens");
    add_int_option(*syn, "--max-length", c->cfg.max_length, "cap on sample length");
    add_float_option(*syn, "--skew", c->cfg.skew, "Zipf exponent of expert popularity");
    add_int_option(*syn, "--seed", c->cfg.seed, "random seed");
    add_int_option(*syn, "--popularity-seed", c->popularity_seed,
                   "seed of the layers' expert popularity (the router), shared by the steps of one run; default: "
                   "--seed",
                   std::numeric_limits<std::uint64_t>::min(), std::numeric_limits<std::uint64_t>::max(),
                   &c->popularity_seed_given);
    add_float_option(*syn, "--drift", c->cfg.drift,
                     "how far this step's popularity drifts from --popularity-seed's toward its own, in [0, 1]");
    return {syn, [c] { return run_synth(*c); }};
}

} // namespace routepack::cli
