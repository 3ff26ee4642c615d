#pragma once
// Deterministic synthetic GRPO-window traces: the embedded demo input and the scale benchmarks.
#include "core/import/import.h"
#include "core/model/trace.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace routepack {

/// Parameters of a synthetic trace. Defaults give the embedded demo (64 samples).
///
/// Model (all randomness from the generator's own PRNG streams, seeded by `seed` and indices):
/// - lengths: one prompt length per group, log-normal with mean `prompt_mean` (sigma 0.5); each
///   response log-normal with mean `response_mean` (a per-group factor, sigma 0.35, times a
///   per-sample one, sigma 0.9: long tail); t_i = prompt + response, prompt in 1..max_length-1,
///   response in 1..max_length-prompt, so 2 <= t_i <= max_length.
/// - popularity: per MoE layer, Zipf weights (rank+1)^-skew over a random permutation of experts.
/// - tilts: per (group, layer) and per (sample, layer) every expert weight is multiplied by a
///   mean-1 gamma factor of variance `sample_concentration`. Prompt rows use the group tilt (all
///   members share the prompt, so their prompt routes are identical); response rows use
///   0.75 * sample tilt + 0.25 * group tilt (responses of one group are mildly correlated).
/// - routing: every routed row picks top_k distinct experts (sampling without replacement from the
///   tilted weights, in pick order).
struct SynthConfig {
    int groups = 8;             ///< GRPO prompt groups (>= 1)
    int group_size = 8;         ///< rollouts per prompt (>= 1; samples = groups * group_size <= 2^24)
    int num_hidden_layers = 12; ///< decoder layers (1..65536)
    int first_dense_layers = 1; ///< leading dense layers (MoE layers = first_dense..num_hidden_layers-1; at least one)
    int experts = 32;           ///< E (1..2^20)
    int top_k = 4;              ///< k (1..E)
    int prompt_mean = 256;      ///< mean prompt tokens (log-normal, >= 1)
    int response_mean = 768;    ///< mean response tokens (log-normal, long tail, >= 1), before the cap
    int max_length = 4096;      ///< cap on t_i (>= 2)
    double skew = 1.1;          ///< Zipf exponent of per-layer expert popularity, [0, 100]; 0 = uniform
    double sample_concentration = 0.5; ///< how strongly a sample's routing departs from the layer's popularity (0 =
                                       ///< iid): variance of the gamma tilts, [0, 100]
    std::uint64_t seed = 1;            ///< same config (seed included) => same output bytes
    /// The seed of the layers' expert popularity (the router's preference); unset: `seed`. The steps of
    /// one run share it and differ in `seed` (their prompts, lengths and tilts).
    std::optional<std::uint64_t> popularity_seed;
    /// How far this step's popularity has drifted from popularity_seed's, in [0, 1]: per layer
    /// base^(1 - drift) x own^drift, normalized, `own` the popularity of `seed` (0: the shared router;
    /// 1: a router of its own). Needs popularity_seed when above 0.
    double drift = 0;
};

/// Per-token routes of one synthetic sample, full-sequence rows [t_i - 1][num_hidden_layers][top_k]
/// (dense layers hold 0, as SGLang writes them).
struct SynthSample {
    std::string request_id;
    std::string group;
    std::int64_t prompt_len = 0;
    std::int64_t length = 0;          ///< t_i
    std::vector<std::int32_t> routes; ///< [(t_i-1)][num_hidden_layers][top_k]
};

/// Checks a config as every function below does: groups, group_size >= 1 with at most 2^24
/// samples; num_hidden_layers in 1..65536; first_dense_layers in 0..num_hidden_layers-1; experts in
/// 1..2^20; top_k in 1..experts; prompt_mean, response_mean >= 1; max_length >= 2; skew and
/// sample_concentration in [0, 100]; drift in [0, 1], above 0 only with popularity_seed. InputError "synth: <field>
/// ..." ("synth: top_k 9 exceeds experts 8") carrying each field it names as a Setting whose key is the field's name
/// (core/util/errors.h), so each front end names it its own way (the CLI by the `routepack synth` flag: "--top-k 9").
void check_synth_config(const SynthConfig& c);

/// The model the synthetic trace pretends to come from: name "synthetic", num_hidden_layers,
/// experts, top_k from the config, moe_layers first_dense_layers..num_hidden_layers-1.
/// Throws InputError naming the field ("synth: top_k 9 exceeds experts 8") for an invalid config;
/// every function below validates the same way.
ModelDescription synth_model(const SynthConfig& c);

/// Generates every sample, in order i = g * group_size + j (group g, member j): request_id
/// "synth-<g>-<j>", group "<g>", prompt_len, t_i and per-token routes [t_i - 1][num_hidden_layers]
/// [top_k] (prompt rows first, then t_i - prompt_len - 1 response rows; dense layers hold 0).
/// Same config => same bytes, for every thread count (parallel over groups and samples with
/// oneTBB, every stream seeded by index) and on every platform (own PRNG and transforms, no std
/// distributions; only libm's log/exp/pow/sin/cos are used, whose last-bit differences could move
/// a draw only when a random number falls on that bit). Memory: 4 * (t_i - 1) * num_hidden_layers
/// * top_k bytes per sample.
std::vector<SynthSample> synth_samples(const SynthConfig& c);

/// Counts-only trace straight in memory (no per-token routes), for large benchmarks: counts equal
/// those aggregated from synth_samples(c) exactly, sample infos carry the same ids, groups, t_i,
/// prompt_len (routed_rows = t_i - 1, length_rule RowsPlusOne). format = "synthetic".
Trace synth_trace(const SynthConfig& c);

/// Writes the synthetic samples in `format` under `out_dir` (created when missing; files of the
/// same name are replaced) and returns the files written, in order:
/// - VLLM (also for Auto): "group_<g>.json", one OpenAI-style response per group, choices[j]
///   .routed_experts = base64 of an .npy [rows][num_hidden_layers][top_k] (<i2, or <i4 when E > 32767);
/// - SGLang: "synth.jsonl", one /generate record per sample (meta_info.id, prompt_tokens,
///   completion_tokens, routed_experts = base64 of raw int32 LE [rows][num_hidden_layers][top_k]; "group");
/// - Npy: "sample_<i>.npy" per sample; Npz: "synth.npz" (stored entries "sample_<i>.npy");
/// - NestedJson: "synth.jsonl", one [rows][MoE layers][top_k] list per line;
/// - NemoRL: "synth.nrlre1", one "nrlre1:int16:<rows>x<MoE layers>x<top_k>:<base64>" per line
///   (int32 when E > 32767).
/// Every file is written to a temporary beside it and renamed only after all were written.
/// InputError for an invalid config, an unsupported format (step JSON, CSV, aggregate) or an
/// unwritable folder; nothing is left behind then.
std::vector<std::filesystem::path> write_synth(const SynthConfig& c, TraceFormat format,
                                               const std::filesystem::path& out_dir);

} // namespace routepack
