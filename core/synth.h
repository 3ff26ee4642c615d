#pragma once
// Deterministic synthetic GRPO-window traces: the embedded demo input and the scale benchmarks.
#include "core/import.h"
#include "core/trace.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace routepack {

/// Parameters of a synthetic trace. Defaults give the embedded demo (64 samples).
struct SynthConfig {
    int groups = 8;                 ///< GRPO prompt groups
    int group_size = 8;             ///< rollouts per prompt (samples = groups * group_size)
    int num_hidden_layers = 12;     ///< decoder layers
    int first_dense_layers = 1;     ///< leading dense layers (MoE layers = first_dense..num_hidden_layers-1)
    int experts = 32;               ///< E
    int top_k = 4;                  ///< k
    int prompt_mean = 256;          ///< mean prompt tokens (log-normal)
    int response_mean = 768;        ///< mean response tokens (log-normal, long tail)
    int max_length = 4096;          ///< cap on t_i
    double skew = 1.1;              ///< Zipf exponent of per-layer expert popularity
    double sample_concentration = 0.5; ///< how strongly a sample's routing departs from the layer's popularity (0 = iid)
    std::uint64_t seed = 1;
};

/// Per-token routes of one synthetic sample, full-sequence rows [t_i - 1][num_hidden_layers][top_k]
/// (dense layers hold 0, as SGLang writes them).
struct SynthSample {
    std::string request_id;
    std::string group;
    std::int64_t prompt_len = 0;
    std::int64_t length = 0;               ///< t_i
    std::vector<std::int32_t> routes;      ///< [(t_i-1)][num_hidden_layers][top_k]
};

ModelDescription synth_model(const SynthConfig& c);
/// Generates every sample (same config => same bytes on every platform; own PRNG, no std distributions).
std::vector<SynthSample> synth_samples(const SynthConfig& c);
/// Counts-only trace straight in memory (no per-token routes), for large benchmarks.
Trace synth_trace(const SynthConfig& c);

/// Writes the synthetic samples in `format` (SGLang JSONL, vLLM JSON per group, npz, nested JSON
/// lines, nrlre1 lines) under `out_dir`; returns the files written. InputError for an unsupported
/// format.
std::vector<std::filesystem::path> write_synth(const SynthConfig& c, TraceFormat format,
                                               const std::filesystem::path& out_dir);

}  // namespace routepack
