#pragma once
// Internal to routepack_storage: the compact BLOB encodings of routing counts.
//
// Per-sample counts a[i][l][e] (samples.counts) and per-trace totals L[l][e]
// (aggregate_totals.totals) are each stored as ONE blob, never as a row per count:
//
//   byte 0      format tag: 0x01 = uint32 counts, 0x02 = uint64 totals
//   bytes 1..   the L*E values in row-major [L][E] order (l-th MoE layer, then logical expert e),
//               each as an unsigned LEB128 varint: 7 value bits per byte, least significant group
//               first, high bit set on every byte but the last. 0..127 take one byte (most counts
//               of one sample are small), 128..16383 two, 2^32-1 five (tag 0x01 allows at most 5
//               bytes per value), 2^64-1 ten (tag 0x02).
//
// The shape is not stored in the blob: it comes from the trace's model (L = number of MoE layers,
// E = experts). A decoder checks the tag, that exactly L*E values are present with nothing after
// them, and that no value overflows its width or uses a non-minimal (overlong) encoding; a failed
// check throws BlobError, which callers turn into an InputError naming the file, trace and sample.
#include "core/model/trace.h"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace routepack::storage::detail {

inline constexpr std::uint8_t kCountsBlobTag = 0x01; ///< LEB128 uint32 [L][E]
inline constexpr std::uint8_t kTotalsBlobTag = 0x02; ///< LEB128 uint64 [L][E]
inline constexpr std::uint8_t kRoutesBlobTag = 0x03; ///< zlib of per-token routes [L][tokens][K]

/// A blob that does not decode; what() says why (without naming the file).
class BlobError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Encodes per-sample counts [L][E] (any length) as tag 0x01 + LEB128 varints.
std::vector<std::uint8_t> encode_counts(std::span<const std::uint32_t> counts);
/// Decodes a tag-0x01 blob into `out` (its size is the expected L*E). Throws BlobError.
void decode_counts(std::span<const std::uint8_t> blob, std::span<std::uint32_t> out);

/// Encodes one sample's per-token routes (sample_routes.routes, schema migration 3):
///   byte 0      tag 0x03
///   byte 1      id width w in bytes (1, 2 or 4; route_id_width(E) of core/model/trace.h)
///   then        tokens, layers L, top-k K as unsigned LEB128 varints (as above)
///   then        one zlib stream (RFC 1950, deflate level 9) of the tokens*L*K ids in [L][tokens][K]
///               order, w bytes each little-endian, all-ones = missing route; nothing after it.
/// std::invalid_argument when the routes are empty.
std::vector<std::uint8_t> encode_routes(const SampleRoutes& routes);
/// Decodes a tag-0x03 blob; the shape must be the expected one (tokens = the sample's routed_rows,
/// L and K of the model, w = route_id_width(experts)), the stream must inflate to exactly
/// tokens*L*K*w bytes (not fewer, not more, not truncated) and end the blob, and every id must be below `experts` or
/// the missing marker. Throws BlobError saying which check failed.
SampleRoutes decode_routes(std::span<const std::uint8_t> blob, std::int64_t tokens, int layers, int top_k, int experts);

/// Encodes per-layer totals [L][E] as tag 0x02 + LEB128 varints.
std::vector<std::uint8_t> encode_totals(std::span<const std::uint64_t> totals);
/// Decodes a tag-0x02 blob into `out` (its size is the expected L*E). Throws BlobError.
void decode_totals(std::span<const std::uint8_t> blob, std::span<std::uint64_t> out);

} // namespace routepack::storage::detail
