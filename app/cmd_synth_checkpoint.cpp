// `routepack synth-checkpoint`: a small sharded safetensors checkpoint shaped like a model (HF
// DeepSeek-V2 tensor names), or the check that a rewritten one holds the expected experts.
#include "app/commands.h"

#include "app/cli_errors.h"
#include "app/cli_int.h"

#include "core/util/errors.h"
#include "gpu/safetensors/synth_checkpoint.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>

namespace routepack::cli {

namespace {

struct SynthCheckpointCmd {
    std::string out, model, check;
    gpu::SynthCheckpointConfig cfg;
};

int run_synth_checkpoint(SynthCheckpointCmd c) {
    if (c.out.empty() == c.check.empty())
        throw UsageError("synth-checkpoint: give exactly one of --out DIR and --check DIR");
    if (!c.model.empty()) c.cfg.model = as_usage([&] { return known_model(c.model); });
    if (!c.check.empty()) {
        const gpu::SynthSlotCheck r = gpu::check_synth_checkpoint(c.check);
        std::cout << c.check << ": " << r.tensors << " routed-expert tensors checked: every slot holds the expected "
                  << "logical expert (" << r.order << " order"
                  << (r.placement.empty() ? std::string() : ", placement " + r.placement) << ")\n";
        return 0;
    }
    gpu::write_synth_checkpoint(c.cfg, c.out);
    const auto index = gpu::read_index(c.out);
    std::cout << "wrote synthetic checkpoint (" << (c.cfg.model.name.empty() ? std::string("model") : c.cfg.model.name)
              << ", " << c.cfg.dtype << ", hidden " << c.cfg.hidden << ") to " << c.out << ": " << index.shards().size()
              << " shards, " << index.weight_map.size() << " tensors, " << index.total_size.value_or(0) << " bytes, "
              << c.cfg.model.experts << " experts x " << c.cfg.model.num_moe_layers() << " MoE layers ("
              << format_layer_list(c.cfg.model.moe_layers) << " of " << c.cfg.model.num_hidden_layers << ")\n";
    return 0;
}

} // namespace

Command register_synth_checkpoint(CLI::App& app) {
    auto c = std::make_shared<SynthCheckpointCmd>();
    auto* synck =
        app.add_subcommand("synth-checkpoint",
                           "write a small sharded safetensors checkpoint shaped like the model (HF DeepSeek-V2 names)");
    synck->add_option("--out", c->out, "output folder (must not exist or be empty)");
    synck->add_option(
        "--check", c->check,
        "check instead: every expert slot of a (rewritten) synthetic checkpoint holds the expected expert");
    synck->add_option("--model", c->model, "shipped model description (default deepseek-v2-lite)");
    const gpu::SynthCheckpointConfig defaults;
    add_int_option(*synck, "--hidden", c->cfg.hidden, "hidden size (default " + std::to_string(defaults.hidden) + ")",
                   1, gpu::kMaxSynthDimension);
    add_int_option(*synck, "--max-shard-bytes", c->cfg.max_shard_bytes,
                   "largest shard data size (default " + std::to_string(defaults.max_shard_bytes) + ")",
                   std::int64_t{1}, std::numeric_limits<std::int64_t>::max(), nullptr, "a positive integer");
    return {synck, [c] { return run_synth_checkpoint(*c); }};
}

} // namespace routepack::cli
