// Text helpers: the printable filter, the byte-order mark and strict RFC 4648 base64. See text.h.
#include "core/util/text.h"

#include "core/util/errors.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace routepack::util {

namespace {

/// Length of the well-formed UTF-8 sequence starting at u[i] (RFC 3629: no overlongs, no
/// surrogates, nothing past U+10FFFF), or 0 when none starts there.
std::size_t utf8_sequence_length(const unsigned char* u, std::size_t i, std::size_t n) {
    const unsigned char c = u[i];
    std::size_t len = 0;
    if (c < 0x80)
        len = 1;
    else if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4;
    if (len > 1) {
        if (i + len > n) return 0;
        for (std::size_t k = 1; k < len; ++k)
            if ((u[i + k] & 0xC0) != 0x80) return 0;
        if (len == 3 && ((c == 0xE0 && u[i + 1] < 0xA0) || (c == 0xED && u[i + 1] > 0x9F))) return 0;
        if (len == 4 && ((c == 0xF0 && u[i + 1] < 0x90) || (c == 0xF4 && u[i + 1] > 0x8F))) return 0;
    }
    return len;
}

} // namespace

std::size_t utf8_invalid_at(std::string_view text) {
    const auto* u = reinterpret_cast<const unsigned char*>(text.data());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t len = utf8_sequence_length(u, i, text.size());
        if (len == 0) return i;
        i += len;
    }
    return std::string_view::npos;
}

std::string printable(std::string_view text, std::size_t max_chars) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(std::min(text.size(), max_chars) + 8);
    std::size_t chars = 0, i = 0;
    const auto* u = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    while (i < n) {
        if (chars == max_chars) {
            out += "...";
            break;
        }
        const unsigned char c = u[i];
        std::size_t len = utf8_sequence_length(u, i, n);
        if (len == 1 && c >= 0x20 && c != 0x7F) {
            out.push_back(static_cast<char>(c));
        } else if (len == 1 && c == '\n') {
            out += "\\n";
        } else if (len == 1 && c == '\r') {
            out += "\\r";
        } else if (len == 1 && c == '\t') {
            out += "\\t";
        } else if (len > 1 && !(len == 3 && c == 0xEF && u[i + 1] == 0xBB && u[i + 2] == 0xBF)) {
            out.append(text.data() + i, len); // a well-formed multi-byte character (a BOM is escaped below)
        } else {
            // Control character, invalid byte, or an invisible BOM: one escape per byte.
            const std::size_t m = len > 1 ? len : 1;
            for (std::size_t k = 0; k < m; ++k) {
                out += "\\x";
                out.push_back(hex[u[i + k] >> 4]);
                out.push_back(hex[u[i + k] & 15]);
            }
            len = m;
        }
        i += len == 0 ? 1 : len;
        ++chars;
    }
    return out;
}

std::size_t bom_length(std::string_view bytes) {
    return bytes.size() >= 3 && bytes.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
}

// ---------------------------------------------------------------------------------------------
// base64

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::uint8_t kInvalid = 0xFF;

constexpr std::array<std::uint8_t, 256> make_decode_table() {
    std::array<std::uint8_t, 256> t{};
    for (auto& v : t)
        v = kInvalid;
    for (int i = 0; i < 64; ++i)
        t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
    return t;
}
constexpr auto kDecode = make_decode_table();

std::string char_text(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) return std::string("character '") + c + "'";
    static constexpr char hex[] = "0123456789abcdef";
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

[[noreturn]] void bad_char(std::string_view text, std::size_t offset, const std::string& where) {
    throw InputError(where + ": malformed base64 at offset " + std::to_string(offset) + ": unexpected " +
                     char_text(text[offset]));
}

} // namespace

std::string base64_decode(std::string_view text, const std::string& where) {
    const std::size_t n = text.size();
    if (n % 4 != 0)
        throw InputError(where + ": malformed base64: length " + std::to_string(n) + " is not a multiple of 4");
    if (n == 0) return {};
    std::size_t pad = 0;
    if (text[n - 1] == '=') pad = text[n - 2] == '=' ? 2 : 1;
    std::string out(n / 4 * 3 - pad, '\0');
    const auto* in = reinterpret_cast<const unsigned char*>(text.data());
    char* o = out.data();
    const std::size_t full = n / 4 - 1; // quanta before the last one
    for (std::size_t q = 0; q < full; ++q, in += 4, o += 3) {
        const std::uint8_t a = kDecode[in[0]], b = kDecode[in[1]], c = kDecode[in[2]], d = kDecode[in[3]];
        if ((a | b | c | d) & 0xC0) { // valid sextets are < 64
            for (std::size_t j = 0; j < 4; ++j)
                if (kDecode[in[j]] == kInvalid) bad_char(text, q * 4 + j, where);
        }
        const std::uint32_t v = (std::uint32_t(a) << 18) | (std::uint32_t(b) << 12) | (std::uint32_t(c) << 6) | d;
        o[0] = static_cast<char>(v >> 16);
        o[1] = static_cast<char>(v >> 8);
        o[2] = static_cast<char>(v);
    }
    // Last quantum: 4 - pad significant characters, then the padding.
    const std::size_t base = full * 4;
    std::uint32_t v = 0;
    for (std::size_t j = 0; j < 4 - pad; ++j) {
        const std::uint8_t x = kDecode[in[j]];
        if (x == kInvalid) bad_char(text, base + j, where);
        v |= std::uint32_t(x) << (18 - 6 * j);
    }
    o[0] = static_cast<char>(v >> 16);
    if (pad < 2) o[1] = static_cast<char>(v >> 8);
    if (pad < 1) o[2] = static_cast<char>(v);
    return out;
}

std::string base64_encode(std::string_view bytes) {
    std::string out((bytes.size() + 2) / 3 * 4, '=');
    const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
    char* o = out.data();
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3, o += 4) {
        const std::uint32_t v = (std::uint32_t(in[i]) << 16) | (std::uint32_t(in[i + 1]) << 8) | in[i + 2];
        o[0] = kAlphabet[v >> 18];
        o[1] = kAlphabet[(v >> 12) & 63];
        o[2] = kAlphabet[(v >> 6) & 63];
        o[3] = kAlphabet[v & 63];
    }
    const std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        std::uint32_t v = std::uint32_t(in[i]) << 16;
        if (rest == 2) v |= std::uint32_t(in[i + 1]) << 8;
        o[0] = kAlphabet[v >> 18];
        o[1] = kAlphabet[(v >> 12) & 63];
        if (rest == 2) o[2] = kAlphabet[(v >> 6) & 63];
    }
    return out;
}

} // namespace routepack::util
