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
    ExplicitTokens, ///< the format's own token counts (prompt + completion) won
    RowsPlusOne,    ///< replay rows: t_i = routed rows + 1 + start offset (last sampled token never forwarded)
    Rows,           ///< prompt-only forward traces: t_i = routed rows
};
const char* to_string(LengthRule r);

/// Everything about one sample except its counts.
struct SampleInfo {
    std::string id;                         ///< stable id derived from the source (see importers)
    std::int64_t length = 0;                ///< t_i, training sequence length in tokens
    std::int64_t routed_rows = 0;           ///< rows (tokens) whose routes the source holds
    std::optional<std::int64_t> prompt_len; ///< prompt tokens when the source says
    std::string request_id;                 ///< the source's own request id, if any
    std::string group;                      ///< GRPO prompt group, if the source has one
    std::string source_file;                ///< path of the file the sample came from
    LengthRule length_rule = LengthRule::RowsPlusOne;
    std::int64_t missing_routes = 0; ///< route slots holding the format's missing marker (-1/null)
    bool operator==(const SampleInfo&) const = default;
};

/// Bytes per expert id in SampleRoutes for E routed experts: the narrowest unsigned width whose
/// all-ones value (the missing marker) is above E-1: 1 for E <= 255, 2 for E <= 65535, else 4.
int route_id_width(int experts);

/// The per-token top-k routes of one sample at the model's MoE layers, kept when the source has them
/// (every per-token format; aggregate totals and synthetic traces have none). Layout [L][tokens][K]:
/// MoE layer index l (model moe_layers order), routed token t (source row order, 0..routed_rows-1),
/// top-k slot s (the source's order). Each id takes `width` bytes, little-endian, width =
/// route_id_width(E); the all-ones value of the width (255, 65535, 2^32-1) marks a missing route
/// (the source's -1/null). 26 MoE layers x top-6 at E = 64 is 156 bytes per token.
struct SampleRoutes {
    std::int64_t tokens = 0;         ///< routed tokens (the sample's routed_rows)
    int layers = 0;                  ///< L
    int top_k = 0;                   ///< K
    int width = 0;                   ///< bytes per id: 1, 2 or 4; 0 = the sample has no routes
    std::vector<std::uint8_t> bytes; ///< [L][tokens][K] ids, `width` bytes each

    bool empty() const { return width == 0; }
    /// Sized for `tokens` x L x K ids of E experts, every id missing.
    static SampleRoutes make(std::int64_t tokens, int layers, int top_k, int experts);
    std::size_t index(int l, std::int64_t t, int s) const {
        return (static_cast<std::size_t>(l) * static_cast<std::size_t>(tokens) + static_cast<std::size_t>(t)) *
                   static_cast<std::size_t>(top_k) +
               static_cast<std::size_t>(s);
    }
    /// Logical expert of token t at MoE layer l, top-k slot s; -1 when the route is missing.
    std::int32_t at(int l, std::int64_t t, int s) const;
    /// Stores id (0..E-1, or -1 for missing) at (l, t, s).
    void set(int l, std::int64_t t, int s, std::int32_t id);
    /// Layer l's ids as int32 ([tokens][K], -1 = missing) into `out` (resized).
    void layer_ids(int l, std::vector<std::int32_t>& out) const;
    bool operator==(const SampleRoutes&) const = default;
};

/// One sample with its counts, as produced by an importer. `counts` has shape [L][E] row-major
/// (L = model.num_moe_layers(), E = model.experts): counts[l*E + e] = a[i][l][e], tokens of this
/// sample routed to logical expert e at the l-th MoE layer. `routes` holds the per-token routes the
/// counts were made from, or is empty when the source has none.
struct SampleRecord {
    SampleInfo info;
    std::vector<std::uint32_t> counts;
    SampleRoutes routes;
};

/// A whole trace in memory: n samples, counts contiguous [n][L][E] (uint32; 8192 x 64 x 256 is
/// 512 MiB). Samples are in import order. `routes` is empty (no sample has routes) or [n], one per
/// sample (an entry may be empty when that sample's source had none).
struct Trace {
    ModelDescription model;
    std::string format; ///< importer that produced it
    std::vector<SampleInfo> samples;
    std::vector<std::uint32_t> counts; ///< [n][L][E]
    std::vector<SampleRoutes> routes;  ///< empty or [n]

    /// True when the trace has samples and every one of them has its routes.
    bool has_routes() const;
    std::size_t size() const { return samples.size(); }
    std::size_t stride() const { return static_cast<std::size_t>(model.num_moe_layers()) * model.experts; }
    /// a[i][.][.] as a span of L*E counts.
    std::span<const std::uint32_t> sample_counts(std::size_t i) const {
        return {counts.data() + i * stride(), stride()};
    }
    std::uint32_t count(std::size_t i, int l, int e) const { return counts[i * stride() + l * model.experts + e]; }
    /// Appends a sample: counts must be L*E long (std::logic_error otherwise); its routes, when
    /// present, must match the model (L layers, top-k, width for E; std::logic_error otherwise).
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

} // namespace routepack
