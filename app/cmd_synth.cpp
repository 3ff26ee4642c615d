// `routepack synth`: a deterministic synthetic GRPO trace written in one of the importers' formats.
#include "app/commands.h"

#include "core/import/import.h"
#include "core/synth/synth.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace routepack::cli {

namespace {

struct SynthCmd {
    std::string out, format = "vllm";
    SynthConfig cfg;
};

int run_synth(const SynthCmd& c) {
    check_synth_config(c.cfg, SynthNames::Flags); // errors name the flags the user typed
    const TraceFormat f = parse_trace_format(c.format);
    const auto files = write_synth(c.cfg, f, c.out);
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
    syn->add_option("--groups", c->cfg.groups, "GRPO prompt groups");
    syn->add_option("--group-size", c->cfg.group_size, "rollouts per prompt");
    syn->add_option("--layers", c->cfg.num_hidden_layers, "decoder layers");
    syn->add_option("--dense-layers", c->cfg.first_dense_layers, "leading dense layers");
    syn->add_option("--experts", c->cfg.experts, "experts per MoE layer");
    syn->add_option("--top-k", c->cfg.top_k, "experts per token");
    syn->add_option("--prompt-mean", c->cfg.prompt_mean, "mean prompt tokens");
    syn->add_option("--response-mean", c->cfg.response_mean, "mean response tokens");
    syn->add_option("--max-length", c->cfg.max_length, "cap on sample length");
    syn->add_option("--skew", c->cfg.skew, "Zipf exponent of expert popularity");
    syn->add_option("--seed", c->cfg.seed, "random seed");
    return {syn, [c] { return run_synth(*c); }};
}

} // namespace routepack::cli
