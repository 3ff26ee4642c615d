#include "storage/counts_codec.h"

namespace routepack::storage::detail {

namespace {

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<std::uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<std::uint8_t>(v));
}

template <typename T> std::vector<std::uint8_t> encode(std::uint8_t tag, std::span<const T> values) {
    std::vector<std::uint8_t> out;
    out.reserve(1 + values.size() + values.size() / 4);
    out.push_back(tag);
    for (const T v : values) put_varint(out, v);
    return out;
}

/// Decodes values of `MaxBits` bits (32 or 64) into `out`.
template <typename T, int MaxBits> void decode(std::span<const std::uint8_t> blob, std::uint8_t tag, std::span<T> out) {
    constexpr int max_bytes = (MaxBits + 6) / 7;  // 5 for 32 bits, 10 for 64 bits
    if (blob.empty()) throw BlobError("empty counts blob");
    if (blob[0] != tag)
        throw BlobError("unknown counts blob format tag " + std::to_string(blob[0]) + " (expected " +
                        std::to_string(tag) + ")");
    std::size_t pos = 1;
    const std::size_t n = blob.size();
    for (std::size_t k = 0; k < out.size(); ++k) {
        std::uint64_t v = 0;
        int shift = 0;
        for (int b = 0;; ++b) {
            if (pos >= n)
                throw BlobError("counts blob ends after " + std::to_string(k) + " of " + std::to_string(out.size()) +
                                " values");
            if (b == max_bytes) throw BlobError("value " + std::to_string(k) + " is too long");
            const std::uint8_t byte = blob[pos++];
            const std::uint64_t bits = byte & 0x7f;
            const int room = MaxBits - shift;  // value bits still available, 1..MaxBits
            if (room < 7 && (bits >> room) != 0)
                throw BlobError("value " + std::to_string(k) + " overflows " + std::to_string(MaxBits) + " bits");
            v |= bits << shift;
            if (!(byte & 0x80)) {
                if (b > 0 && bits == 0) throw BlobError("value " + std::to_string(k) + " has an overlong encoding");
                break;
            }
            shift += 7;
        }
        out[k] = static_cast<T>(v);
    }
    if (pos != n)
        throw BlobError("counts blob has " + std::to_string(n - pos) + " bytes after its " +
                        std::to_string(out.size()) + " values");
}

}  // namespace

std::vector<std::uint8_t> encode_counts(std::span<const std::uint32_t> counts) {
    return encode(kCountsBlobTag, counts);
}

void decode_counts(std::span<const std::uint8_t> blob, std::span<std::uint32_t> out) {
    decode<std::uint32_t, 32>(blob, kCountsBlobTag, out);
}

std::vector<std::uint8_t> encode_totals(std::span<const std::uint64_t> totals) {
    return encode(kTotalsBlobTag, totals);
}

void decode_totals(std::span<const std::uint8_t> blob, std::span<std::uint64_t> out) {
    decode<std::uint64_t, 64>(blob, kTotalsBlobTag, out);
}

}  // namespace routepack::storage::detail
