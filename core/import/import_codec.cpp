// Wire codecs of the trace importers: strict RFC 4648 base64 and the NumPy .npy format
// (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html), integer arrays only.
#include "core/import/import_detail.h"

#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>

namespace routepack::detail {

// ---------------------------------------------------------------------------------------------
// .npy

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicLen = 6;

/// Parses an integer descr ("<i4", ">u2", "|u1", "=i8"); false when it is not one.
bool parse_int_descr(std::string_view d, WireInt& t) {
    if (d.size() < 3) return false;
    const char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=') return false;
    const char kind = d[1];
    if (kind != 'i' && kind != 'u') return false;
    const std::string_view size = d.substr(2);
    int s = 0;
    if (size == "1")
        s = 1;
    else if (size == "2")
        s = 2;
    else if (size == "4")
        s = 4;
    else if (size == "8")
        s = 8;
    else
        return false;
    if (order == '|' && s != 1) return false; // '|' means "not applicable": single bytes only
    t.size = s;
    t.is_signed = kind == 'i';
    t.big_endian = order == '>' || (order == '=' && std::endian::native == std::endian::big);
    return true;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    return s + ")";
}

/// The Python-literal dict of an .npy header: {'descr': str, 'fortran_order': bool, 'shape': tuple}.
class NpyHeaderParser {
public:
    NpyHeaderParser(std::string_view s, const std::string& where) : s_(s), where_(where) {}

    void parse(std::string& descr, bool& fortran, std::vector<std::int64_t>& shape) {
        bool have_descr = false, have_fortran = false, have_shape = false;
        ws();
        expect('{');
        for (;;) {
            ws();
            if (peek() == '}') {
                ++i_;
                break;
            }
            const std::string key = str();
            ws();
            expect(':');
            ws();
            if ((key == "descr" && have_descr) || (key == "fortran_order" && have_fortran) ||
                (key == "shape" && have_shape))
                fail("duplicate key '" + key + "'");
            if (key == "descr") {
                if (peek() != '\'' && peek() != '"')
                    throw InputError(where_ + ": unsupported .npy dtype (structured arrays are not routes)");
                descr = str();
                have_descr = true;
            } else if (key == "fortran_order") {
                fortran = boolean();
                have_fortran = true;
            } else if (key == "shape") {
                shape = tuple();
                have_shape = true;
            } else {
                fail("unexpected key '" + printable(key) + "'");
            }
            ws();
            if (peek() == ',') {
                ++i_;
                continue;
            }
            ws();
            expect('}');
            break;
        }
        if (!have_descr) fail("missing 'descr'");
        if (!have_fortran) fail("missing 'fortran_order'");
        if (!have_shape) fail("missing 'shape'");
    }

private:
    [[noreturn]] void fail(const std::string& what) const { throw InputError(where_ + ": bad .npy header: " + what); }
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
            ++i_;
    }
    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "' at offset " + std::to_string(i_));
        ++i_;
    }
    std::string str() {
        const char q = peek();
        if (q != '\'' && q != '"') fail("expected a quoted key at offset " + std::to_string(i_));
        const std::size_t end = s_.find(q, i_ + 1);
        if (end == std::string_view::npos) fail("unterminated string at offset " + std::to_string(i_));
        std::string out(s_.substr(i_ + 1, end - i_ - 1));
        i_ = end + 1;
        return out;
    }
    bool boolean() {
        if (s_.substr(i_, 4) == "True") {
            i_ += 4;
            return true;
        }
        if (s_.substr(i_, 5) == "False") {
            i_ += 5;
            return false;
        }
        fail("'fortran_order' is not True or False");
    }
    std::vector<std::int64_t> tuple() {
        std::vector<std::int64_t> out;
        const char close = peek() == '[' ? ']' : ')';
        if (peek() != '(' && peek() != '[') fail("'shape' is not a tuple");
        ++i_;
        for (;;) {
            ws();
            if (peek() == close) {
                ++i_;
                return out;
            }
            if (peek() < '0' || peek() > '9') fail("'shape' holds a non-integer at offset " + std::to_string(i_));
            std::int64_t v = 0;
            while (peek() >= '0' && peek() <= '9') {
                if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("'shape' dimension too large");
                v = v * 10 + (peek() - '0');
                ++i_;
            }
            if (peek() == 'L') ++i_; // Python 2 long suffix
            out.push_back(v);
            ws();
            if (peek() == ',')
                ++i_;
            else if (peek() != close)
                fail("expected ',' or '" + std::string(1, close) + "' in 'shape'");
        }
    }

    std::string_view s_;
    const std::string& where_;
    std::size_t i_ = 0;
};

std::uint32_t read_le32(const char* p) {
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    return std::uint32_t(u[0]) | (std::uint32_t(u[1]) << 8) | (std::uint32_t(u[2]) << 16) | (std::uint32_t(u[3]) << 24);
}

} // namespace

namespace {

/// The parsed header of an .npy file and where its data starts.
struct NpyHeader {
    std::vector<std::int64_t> shape;
    std::string descr;
    bool fortran = false;
    WireInt type;
    std::size_t count = 0;      ///< values the shape holds
    std::size_t data_bytes = 0; ///< count x element size
    std::size_t data_start = 0;
};

/// Parses the header at the start of `bytes`; nullopt when `allow_partial` and the bytes end
/// before the header does. InputError naming `where` for anything malformed.
std::optional<NpyHeader> parse_npy_header(std::string_view bytes, const std::string& where, bool allow_partial,
                                          bool allow_bool = false) {
    if (allow_partial && bytes.size() < 12) return std::nullopt;
    if (bytes.size() < kNpyMagicLen || bytes.substr(0, kNpyMagicLen) != std::string_view(kNpyMagic, kNpyMagicLen))
        throw InputError(where + ": not an .npy file (bad magic)");
    if (bytes.size() < 10) throw InputError(where + ": truncated .npy header");
    const int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
    if (major < 1 || major > 3 || minor != 0)
        throw InputError(where + ": unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor));
    std::size_t header_start = 10, header_len = 0;
    if (major == 1) {
        header_len = static_cast<unsigned char>(bytes[8]) | (std::size_t(static_cast<unsigned char>(bytes[9])) << 8);
    } else {
        if (bytes.size() < 12) throw InputError(where + ": truncated .npy header");
        header_len = read_le32(bytes.data() + 8);
        header_start = 12;
    }
    if (bytes.size() - header_start < header_len) {
        if (allow_partial) return std::nullopt;
        throw InputError(where + ": truncated .npy header (declares " + std::to_string(header_len) + " bytes, " +
                         std::to_string(bytes.size() - header_start) + " present)");
    }

    NpyHeader h;
    NpyHeaderParser(bytes.substr(header_start, header_len), where).parse(h.descr, h.fortran, h.shape);
    if (allow_bool && h.descr == "|b1") {
        h.type = WireInt{1, false, false}; // numpy bool (masks, validity flags): one byte 0/1
    } else if (!parse_int_descr(h.descr, h.type))
        throw InputError(where + ": unsupported .npy dtype '" + printable(h.descr) +
                         "' (routes need an integer dtype)");
    h.count = 1;
    for (const std::int64_t d : h.shape)
        if (__builtin_mul_overflow(h.count, static_cast<std::size_t>(d), &h.count))
            throw InputError(where + ": bad .npy header: shape " + shape_text(h.shape) + " is too large");
    if (__builtin_mul_overflow(h.count, static_cast<std::size_t>(h.type.size), &h.data_bytes))
        throw InputError(where + ": bad .npy header: shape " + shape_text(h.shape) + " is too large");
    h.data_start = header_start + header_len;
    return h;
}

void check_value_limit(const NpyHeader& h, const std::string& where) {
    if (h.count > kMaxRouteValues)
        throw InputError(where + ": shape " + shape_text(h.shape) + " holds " + std::to_string(h.count) +
                         " values, more than the per-sample limit of " + std::to_string(kMaxRouteValues));
}

} // namespace

std::optional<NpyHeaderInfo> read_npy_header(std::string_view prefix, const std::string& where, bool allow_bool) {
    const auto h = parse_npy_header(prefix, where, true, allow_bool);
    if (!h) return std::nullopt;
    return NpyHeaderInfo{h->shape, h->descr, h->fortran, h->type, h->count, h->data_start};
}

bool npy_header_checked(std::string_view prefix, const std::string& where) {
    const auto h = parse_npy_header(prefix, where, true);
    if (!h) return false;
    check_value_limit(*h, where);
    return true;
}

NpyArray parse_npy(std::string_view bytes, const std::string& where, bool allow_bool) {
    const NpyHeader h = *parse_npy_header(bytes, where, false, allow_bool);
    NpyArray out;
    out.shape = h.shape;
    out.descr = h.descr;
    const bool fortran = h.fortran;
    const WireInt t = h.type;
    const std::size_t count = h.count, need = h.data_bytes, data_start = h.data_start;
    const std::size_t have = bytes.size() - data_start;
    if (have < need)
        throw InputError(where + ": truncated .npy data: shape " + shape_text(out.shape) + " of " + out.descr +
                         " needs " + std::to_string(need) + " bytes, " + std::to_string(have) + " present");
    check_value_limit(h, where);

    const char* data = bytes.data() + data_start;
    out.values.resize(count);
    const std::size_t bad = convert_wire_ints(data, count, t, out.values.data());
    if (bad != count)
        throw InputError(where + ": .npy value " + wire_value_text(data, bad, t) + " at element " +
                         std::to_string(bad) + " does not fit int32");

    if (fortran && out.shape.size() > 1 && count > 1) {
        // Source element s sits at Fortran index (i0 fastest); write it at its C-order offset.
        const std::size_t nd = out.shape.size();
        std::vector<std::size_t> c_stride(nd, 1), idx(nd, 0);
        for (std::size_t j = nd - 1; j > 0; --j)
            c_stride[j - 1] = c_stride[j] * static_cast<std::size_t>(out.shape[j]);
        std::vector<std::int32_t> c(count);
        std::size_t dst = 0;
        for (std::size_t s = 0; s < count; ++s) {
            c[dst] = out.values[s];
            for (std::size_t j = 0; j < nd; ++j) {
                dst += c_stride[j];
                if (++idx[j] < static_cast<std::size_t>(out.shape[j])) break;
                dst -= c_stride[j] * idx[j];
                idx[j] = 0;
            }
        }
        out.values.swap(c);
    }
    return out;
}

std::string encode_npy(const std::vector<std::int64_t>& shape, const std::vector<std::int32_t>& values,
                       const std::string& descr) {
    WireInt t;
    if (!parse_int_descr(descr, t)) throw InputError("encode_npy: unsupported descr '" + descr + "'");
    std::size_t count = 1;
    for (const std::int64_t d : shape) {
        if (d < 0) throw InputError("encode_npy: negative dimension in shape " + shape_text(shape));
        count *= static_cast<std::size_t>(d);
    }
    if (count != values.size())
        throw InputError("encode_npy: shape " + shape_text(shape) + " holds " + std::to_string(count) +
                         " values, given " + std::to_string(values.size()));

    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
    // magic(6) + version(2) + length(2) + header + padding + '\n' is a multiple of 64.
    const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
    header.append(total - 10 - header.size() - 1, ' ');
    header.push_back('\n');
    if (header.size() > 0xFFFF) throw InputError("encode_npy: header too long for .npy v1.0");

    std::string out;
    out.reserve(total + count * static_cast<std::size_t>(t.size));
    out.append(kNpyMagic, kNpyMagicLen);
    out.push_back('\x01');
    out.push_back('\x00');
    out.push_back(static_cast<char>(header.size() & 0xFF));
    out.push_back(static_cast<char>(header.size() >> 8));
    out += header;

    const std::int64_t lo = !t.is_signed  ? 0
                            : t.size == 8 ? std::numeric_limits<std::int64_t>::min()
                                          : -(std::int64_t(1) << (t.size * 8 - 1));
    const std::int64_t hi = t.size == 8 ? std::numeric_limits<std::int64_t>::max()
                                        : (std::int64_t(1) << (t.size * 8 - (t.is_signed ? 1 : 0))) - 1;
    const std::size_t start = out.size();
    out.resize(start + count * static_cast<std::size_t>(t.size));
    char* o = out.data() + start;
    for (std::size_t i = 0; i < count; ++i, o += t.size) {
        const std::int64_t v = values[i];
        if (v < lo || v > hi)
            throw InputError("encode_npy: value " + std::to_string(v) + " at element " + std::to_string(i) +
                             " does not fit " + descr);
        const auto u = static_cast<std::uint64_t>(v); // two's complement
        for (int b = 0; b < t.size; ++b) {
            const int shift = 8 * (t.big_endian ? t.size - 1 - b : b);
            o[b] = static_cast<char>((u >> shift) & 0xFF);
        }
    }
    return out;
}

} // namespace routepack::detail
