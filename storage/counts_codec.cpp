#include "storage/counts_codec.h"

#include <zlib.h>

#include <limits>

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
    for (const T v : values)
        put_varint(out, v);
    return out;
}

/// Decodes values of `MaxBits` bits (32 or 64) into `out`.
template <typename T, int MaxBits> void decode(std::span<const std::uint8_t> blob, std::uint8_t tag, std::span<T> out) {
    constexpr int max_bytes = (MaxBits + 6) / 7; // 5 for 32 bits, 10 for 64 bits
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
            if (b == max_bytes) throw BlobError("entry " + std::to_string(k) + " is too long");
            const std::uint8_t byte = blob[pos++];
            const std::uint64_t bits = byte & 0x7f;
            const int room = MaxBits - shift; // value bits still available, 1..MaxBits
            if (room < 7 && (bits >> room) != 0)
                throw BlobError("entry " + std::to_string(k) + " overflows " + std::to_string(MaxBits) + " bits");
            v |= bits << shift;
            if (!(byte & 0x80)) {
                if (b > 0 && bits == 0) throw BlobError("entry " + std::to_string(k) + " has an overlong encoding");
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

/// Reads one unsigned LEB128 varint of at most 63 bits at `pos` (for the routes header).
std::uint64_t get_varint(std::span<const std::uint8_t> blob, std::size_t& pos, const char* what) {
    std::uint64_t v = 0;
    for (int b = 0; b < 9; ++b) {
        if (pos >= blob.size()) throw BlobError(std::string("routes blob ends inside its ") + what);
        const std::uint8_t byte = blob[pos++];
        v |= std::uint64_t(byte & 0x7f) << (7 * b);
        if (!(byte & 0x80)) {
            if (b > 0 && (byte & 0x7f) == 0)
                throw BlobError(std::string("routes blob ") + what + " has an overlong encoding");
            return v;
        }
    }
    throw BlobError(std::string("routes blob ") + what + " is too long");
}

} // namespace

std::vector<std::uint8_t> encode_routes(const SampleRoutes& r) {
    if (r.empty()) throw std::invalid_argument("encode_routes: the sample has no routes");
    std::vector<std::uint8_t> out{kRoutesBlobTag, static_cast<std::uint8_t>(r.width)};
    put_varint(out, static_cast<std::uint64_t>(r.tokens));
    put_varint(out, static_cast<std::uint64_t>(r.layers));
    put_varint(out, static_cast<std::uint64_t>(r.top_k));
    uLongf size = compressBound(static_cast<uLong>(r.bytes.size()));
    const std::size_t at = out.size();
    out.resize(at + size);
    const int rc = compress2(out.data() + at, &size, r.bytes.data(), static_cast<uLong>(r.bytes.size()), 9);
    if (rc != Z_OK) throw std::runtime_error("encode_routes: zlib compress2 failed (" + std::to_string(rc) + ")");
    out.resize(at + size);
    return out;
}

SampleRoutes decode_routes(std::span<const std::uint8_t> blob, std::int64_t tokens, int layers, int top_k,
                           int experts) {
    if (blob.size() < 2) throw BlobError("routes blob is shorter than its header");
    if (blob[0] != kRoutesBlobTag)
        throw BlobError("unknown routes blob format tag " + std::to_string(blob[0]) + " (expected " +
                        std::to_string(kRoutesBlobTag) + ")");
    const int width = route_id_width(experts);
    if (blob[1] != width)
        throw BlobError("routes blob has " + std::to_string(blob[1]) + "-byte ids, expected " + std::to_string(width) +
                        " for " + std::to_string(experts) + " experts");
    std::size_t pos = 2;
    const std::uint64_t t = get_varint(blob, pos, "token count");
    const std::uint64_t l = get_varint(blob, pos, "layer count");
    const std::uint64_t k = get_varint(blob, pos, "top-k");
    if (t != static_cast<std::uint64_t>(tokens) || l != static_cast<std::uint64_t>(layers) ||
        k != static_cast<std::uint64_t>(top_k))
        throw BlobError("routes blob is " + std::to_string(t) + " tokens x " + std::to_string(l) + " layers x top-" +
                        std::to_string(k) + ", expected " + std::to_string(tokens) + " x " + std::to_string(layers) +
                        " x top-" + std::to_string(top_k));
    SampleRoutes r = SampleRoutes::make(tokens, layers, top_k, experts);
    if (r.bytes.size() > std::numeric_limits<uLong>::max() || blob.size() - pos > std::numeric_limits<uLong>::max())
        throw BlobError("routes blob is too large");
    uLongf out_len = static_cast<uLongf>(r.bytes.size());
    uLong in_len = static_cast<uLong>(blob.size() - pos);
    // A one-byte scratch buffer keeps zlib from refusing a zero-length destination.
    std::uint8_t scratch = 0;
    const int rc = uncompress2(r.bytes.empty() ? &scratch : r.bytes.data(), &out_len, blob.data() + pos, &in_len);
    if (rc == Z_BUF_ERROR && in_len == blob.size() - pos) throw BlobError("routes blob's zlib stream is truncated");
    if (rc == Z_BUF_ERROR)
        throw BlobError("routes blob inflates to more than " + std::to_string(r.bytes.size()) + " bytes");
    if (rc != Z_OK) throw BlobError("routes blob's zlib stream is damaged (zlib error " + std::to_string(rc) + ")");
    if (out_len != r.bytes.size())
        throw BlobError("routes blob inflates to " + std::to_string(out_len) + " bytes, expected " +
                        std::to_string(r.bytes.size()));
    if (pos + in_len != blob.size())
        throw BlobError("routes blob has " + std::to_string(blob.size() - pos - in_len) +
                        " bytes after its zlib stream");
    const std::size_t ids = r.bytes.size() / static_cast<std::size_t>(width);
    for (std::size_t x = 0; x < ids; ++x) {
        std::uint32_t v = 0;
        for (int b = 0; b < width; ++b)
            v |= std::uint32_t(r.bytes[x * width + b]) << (8 * b);
        const std::uint32_t missing = width == 4 ? 0xffffffffu : (std::uint32_t(1) << (8 * width)) - 1;
        if (v != missing && v >= static_cast<std::uint32_t>(experts))
            throw BlobError("routes blob holds expert id " + std::to_string(v) + " at position " + std::to_string(x) +
                            ", outside 0.." + std::to_string(experts - 1));
    }
    return r;
}

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

} // namespace routepack::storage::detail
