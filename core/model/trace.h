#pragma once
// The routing-trace model: per sample its length t_i and routing counts a[i][l][e].
#include "core/model/model.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace routepack {

/// How a sample's training length t_i was derived from its routed rows (trace-formats.md §4 rule 1).
enum class LengthRule : std::uint8_t {
    ExplicitTokens,  ///< the format's own token counts (prompt + completion) won
    RowsPlusOne,     ///< replay rows: t_i = routed rows + 1 + start offset (last sampled token never forwarded)
    Rows,            ///< prompt-only forward traces: t_i = routed rows
};
const char* to_string(LengthRule r);

/// Everything about one sample except its counts.
struct SampleInfo {
    std::string id;                 ///< stable id derived from the source (see importers)
    std::int64_t length = 0;        ///< t_i, training sequence length in tokens
    std::int64_t routed_rows = 0;   ///< rows (tokens) whose routes the source holds
    std::optional<std::int64_t> prompt_len;  ///< prompt tokens when the source says
    std::string request_id;         ///< the source's own request id, if any
    std::string group;              ///< GRPO prompt group, if the source has one
    std::string source_file;        ///< path of the file the sample came from
    LengthRule length_rule = LengthRule::RowsPlusOne;
    std::int64_t missing_routes = 0;  ///< route slots holding the format's missing marker (-1/null)
    bool operator==(const SampleInfo&) const = default;
};

/// One sample with its counts, as produced by an importer. `counts` has shape [L][E] row-major
/// (L = model.num_moe_layers(), E = model.experts): counts[l*E + e] = a[i][l][e], tokens of this
/// sample routed to logical expert e at the l-th MoE layer.
struct SampleRecord {
    SampleInfo info;
    std::vector<std::uint32_t> counts;
};

/// A whole trace in memory: n samples, counts contiguous [n][L][E] (uint32; 8192 x 64 x 256 is
/// 512 MiB). Samples are in import order.
struct Trace {
    ModelDescription model;
    std::string format;                 ///< importer that produced it
    std::vector<SampleInfo> samples;
    std::vector<std::uint32_t> counts;  ///< [n][L][E]

    std::size_t size() const { return samples.size(); }
    std::size_t stride() const { return static_cast<std::size_t>(model.num_moe_layers()) * model.experts; }
    /// a[i][.][.] as a span of L*E counts.
    std::span<const std::uint32_t> sample_counts(std::size_t i) const {
        return {counts.data() + i * stride(), stride()};
    }
    std::uint32_t count(std::size_t i, int l, int e) const { return counts[i * stride() + l * model.experts + e]; }
    void append(SampleRecord&& r);
};

/// Per-layer coefficient of variation over experts of aggregate load L[l][e] = sum_i a[i][l][e]
/// (population std / mean; 0 when the layer has no load). `totals` has shape [L][E]; result [L].
std::vector<double> layer_load_cv(std::span<const std::uint64_t> totals, int layers, int experts);

/// Numeric-aware comparison for sample ids: digit runs compare as numbers ("prompt_2" < "prompt_10").
bool natural_less(const std::string& a, const std::string& b);

/// 64-bit FNV-1a over bytes, continuing from `seed`. Used for fingerprints, not security.
std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t seed = 0xcbf29ce484222325ULL);
std::string hex64(std::uint64_t v);

}  // namespace routepack
