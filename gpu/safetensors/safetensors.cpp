#include "gpu/safetensors/safetensors.h"

#include "core/util/atomic_file.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"
#include "core/util/json_field.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace routepack::gpu {

namespace {

constexpr std::uint64_t kMaxHeaderSize = 100'000'000; // reference MAX_HEADER_SIZE

struct DtypeRow {
    Dtype dtype;
    std::string_view name;
    unsigned bits;
};

constexpr std::array<DtypeRow, 22> kDtypes{{
    {Dtype::BOOL, "BOOL", 8},
    {Dtype::F4, "F4", 4},
    {Dtype::F6_E2M3, "F6_E2M3", 6},
    {Dtype::F6_E3M2, "F6_E3M2", 6},
    {Dtype::U8, "U8", 8},
    {Dtype::I8, "I8", 8},
    {Dtype::F8_E5M2, "F8_E5M2", 8},
    {Dtype::F8_E4M3, "F8_E4M3", 8},
    {Dtype::F8_E8M0, "F8_E8M0", 8},
    {Dtype::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {Dtype::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {Dtype::I16, "I16", 16},
    {Dtype::U16, "U16", 16},
    {Dtype::F16, "F16", 16},
    {Dtype::BF16, "BF16", 16},
    {Dtype::I32, "I32", 32},
    {Dtype::U32, "U32", 32},
    {Dtype::F32, "F32", 32},
    {Dtype::C64, "C64", 64},
    {Dtype::F64, "F64", 64},
    {Dtype::I64, "I64", 64},
    {Dtype::U64, "U64", 64},
}};

/// The header DOM: std::map objects (O(log n) per key; an ordered_json object inserts in O(n), which
/// made a header of n tensors cost O(n^2)). The file order of the tensors is kept aside.
using hjson = nlohmann::json;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& kind, const std::string& detail) {
    throw InputError(file.string() + ": " + kind + ": " + detail);
}

std::string tensor_field(const std::string& name) {
    return "tensor '" + name + "'";
}

/// Rust's str::from_utf8 rules: no overlongs, no surrogates, nothing above U+10FFFF.
/// Returns the offset of the first invalid byte, or npos.
std::size_t invalid_utf8_at(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return i;
        }
        if (i + len > n) return i;
        if (p[i + 1] < lo || p[i + 1] > hi) return i;
        for (std::size_t k = 2; k < len; ++k)
            if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
        i += len;
    }
    return std::string_view::npos;
}

/// serde_json's string escaping (compact writer): \" \\ \b \f \n \r \t, other controls \u00xx.
void append_json_string(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back('"');
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (c < 0x20) {
                out += "\\u00";
                out.push_back(kHex[c >> 4]);
                out.push_back(kHex[c & 0xF]);
            } else {
                out.push_back(ch);
            }
        }
    }
    out.push_back('"');
}

std::string offsets_text(std::uint64_t b, std::uint64_t e) {
    return "[" + std::to_string(b) + ", " + std::to_string(e) + "]";
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

/// Checked product(shape) * bits. nullopt on overflow.
std::optional<std::uint64_t> checked_bits(const std::vector<std::uint64_t>& shape, unsigned bits,
                                          std::uint64_t* elements) {
    std::uint64_t n = 1;
    for (const auto d : shape)
        if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
    if (elements) *elements = n;
    std::uint64_t total = 0;
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(bits), &total)) return std::nullopt;
    return total;
}

/// Duplicate keys seen while parsing (nlohmann keeps the last one silently).
struct DuplicateKey {
    int level = 0;     ///< 1: top-level object, 2: an object directly inside it
    std::string owner; ///< the top-level key owning a level-2 object
    std::string key;
};

struct Frame {
    bool is_object = false;
    std::string owner; ///< top-level key this container belongs to ("" for the top level)
    std::set<std::string> keys;
    std::string last_key;
};

/// SAX handler of the header: builds the DOM with nlohmann's plain DOM builder (linear; the
/// callback parser rescans the parent container at every object end, O(n^2) in the tensor count),
/// notes the top-level keys in file order and the first repeated key of the top-level object or of
/// a tensor's own object.
class HeaderSax {
public:
    explicit HeaderSax(hjson& out) : dom_(out, /*allow_exceptions=*/true) {}

    bool null() { return dom_.null(); }
    bool boolean(bool v) { return dom_.boolean(v); }
    bool number_integer(hjson::number_integer_t v) { return dom_.number_integer(v); }
    bool number_unsigned(hjson::number_unsigned_t v) { return dom_.number_unsigned(v); }
    bool number_float(hjson::number_float_t v, const std::string& s) { return dom_.number_float(v, s); }
    bool string(std::string& v) { return dom_.string(v); }
    bool binary(hjson::binary_t& v) { return dom_.binary(v); }
    bool start_object(std::size_t n) {
        open(true);
        return dom_.start_object(n);
    }
    bool start_array(std::size_t n) {
        open(false);
        return dom_.start_array(n);
    }
    bool end_object() {
        if (!stack_.empty()) stack_.pop_back();
        return dom_.end_object();
    }
    bool end_array() {
        if (!stack_.empty()) stack_.pop_back();
        return dom_.end_array();
    }
    bool key(std::string& key) {
        if (!stack_.empty()) {
            auto& top = stack_.back();
            if (stack_.size() == 1) top_keys.push_back(key);
            if (!top.keys.insert(key).second && !dup) {
                if (stack_.size() == 1)
                    dup = DuplicateKey{1, "", key};
                else if (stack_.size() == 2 && top.is_object && stack_[0].is_object && top.owner != "__metadata__" &&
                         (key == "dtype" || key == "shape" || key == "data_offsets"))
                    dup = DuplicateKey{2, top.owner, key};
            }
            top.last_key = key;
        }
        return dom_.key(key);
    }
    template <class Exception> bool parse_error(std::size_t pos, const std::string& token, const Exception& ex) {
        return dom_.parse_error(pos, token, ex); // throws, as hjson::parse does
    }

    std::optional<DuplicateKey> dup;
    std::vector<std::string> top_keys; ///< the header's keys in file order

private:
    void open(bool is_object) {
        Frame fr;
        fr.is_object = is_object;
        if (stack_.size() == 1)
            fr.owner = stack_.back().last_key;
        else if (!stack_.empty())
            fr.owner = stack_.back().owner;
        stack_.push_back(std::move(fr));
    }

    nlohmann::detail::json_sax_dom_parser<hjson> dom_;
    std::vector<Frame> stack_;
};

std::string describe_json_type(const hjson& v) {
    return v.type_name();
}

std::vector<std::uint64_t> unsigned_array(const std::filesystem::path& file, const std::string& field, const hjson& v) {
    if (!v.is_array())
        fail(file, "InvalidHeaderDeserialization", field + ": expected an array, got " + describe_json_type(v));
    std::vector<std::uint64_t> out;
    out.reserve(v.size());
    for (const auto& x : v) {
        if (!x.is_number_unsigned())
            fail(file, "InvalidHeaderDeserialization",
                 field + ": expected non-negative integers, got " + (x.is_number() ? x.dump() : describe_json_type(x)));
        out.push_back(x.get<std::uint64_t>());
    }
    return out;
}

/// Maps `path` (a regular file of at least 8 bytes) read-only; returns the mapping's address.
/// InputError (IoError, HeaderTooSmall) when it cannot be opened, is not a regular file or is too
/// small; `size` receives the file size.
const std::byte* map_file(const std::filesystem::path& path, std::uint64_t& size) {
    // O_NONBLOCK: opening a FIFO named like a shard must not wait for a writer (fstat refuses it).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) fail(path, "IoError", std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        fail(path, "IoError", std::string("cannot stat: ") + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(path, "IoError", "not a regular file");
    }
    size = static_cast<std::uint64_t>(st.st_size);
    if (size < 8) {
        ::close(fd);
        fail(path, "HeaderTooSmall", "file is " + std::to_string(size) + " bytes, less than the 8-byte header length");
    }
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_err = errno;
    ::close(fd);
    if (m == MAP_FAILED) fail(path, "IoError", std::string("cannot map: ") + std::strerror(map_err));
    return static_cast<const std::byte*>(m);
}

/// The little-endian u64 header length of a mapped file of `size` bytes, at most
/// kMaxHeaderSize and inside the file; InputError (HeaderTooLarge, InvalidHeaderLength) otherwise.
std::uint64_t header_length(const std::filesystem::path& path, const std::byte* map, std::uint64_t size) {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<std::uint8_t>(map[i]);
    if (n > kMaxHeaderSize)
        fail(path, "HeaderTooLarge",
             "header length " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxHeaderSize) +
                 " bytes");
    if (8 + n > size)
        fail(path, "InvalidHeaderLength",
             "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) +
                 " bytes)");
    return n;
}

/// The header parsed: its JSON object and its top-level keys in file order.
struct ParsedHeader {
    hjson doc;
    std::vector<std::string> top_keys;
};

/// The header text checked and parsed: UTF-8 and one JSON object without a repeated tensor, field
/// or __metadata__ key; InputError (InvalidHeader, InvalidHeaderDeserialization, DuplicateTensor)
/// otherwise.
ParsedHeader parse_header(const std::filesystem::path& path, std::string_view header) {
    if (const auto bad = invalid_utf8_at(header); bad != std::string_view::npos)
        fail(path, "InvalidHeader", "header: invalid UTF-8 at header byte " + std::to_string(bad));
    if (header.size() >= 3 && header.substr(0, 3) == "\xEF\xBB\xBF")
        fail(path, "InvalidHeaderDeserialization", "header: byte order mark before the JSON object");
    ParsedHeader out;
    HeaderSax sax(out.doc);
    // nlohmann's lexer takes a NUL byte for the end of input; a raw NUL is never valid JSON, so parse up
    // to the first one and refuse it when the text before it parsed (trailing NUL padding).
    const std::size_t nul = header.find('\0');
    const std::string_view text = header.substr(0, nul);
    try {
        hjson::sax_parse(text.begin(), text.end(), &sax, nlohmann::json::input_format_t::json, /*strict=*/true,
                         /*ignore_comments=*/false);
    } catch (const hjson::parse_error& e) {
        // e.byte counts the characters read, so the offending one is at e.byte - 1 (0-based).
        const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
        fail(path, "InvalidHeaderDeserialization",
             "header: not valid JSON (error at header byte " + std::to_string(at) + ")");
    } catch (const hjson::exception& e) {
        // out_of_range.406: a number beyond double ("1e400").
        fail(path, "InvalidHeaderDeserialization", "header: not valid JSON (" + util::json_error_description(e) + ")");
    }
    if (nul != std::string_view::npos)
        fail(path, "InvalidHeaderDeserialization",
             "header: not valid JSON (error at header byte " + std::to_string(nul) + ")");
    if (!out.doc.is_object())
        fail(path, "InvalidHeaderDeserialization",
             "header: expected a JSON object, got " + describe_json_type(out.doc));
    if (const std::optional<DuplicateKey>& dup = sax.dup) {
        if (dup->level == 1 && dup->key == "__metadata__")
            fail(path, "InvalidHeaderDeserialization", "__metadata__: duplicate field");
        if (dup->level == 1)
            fail(path, "DuplicateTensor",
                 tensor_field(dup->key) +
                     ": appears more than once in the header (refused; the reference keeps the last)");
        fail(path, "InvalidHeaderDeserialization", tensor_field(dup->owner) + " " + dup->key + ": duplicate field");
    }
    out.top_keys = std::move(sax.top_keys);
    return out;
}

/// The __metadata__ value (not null) into `out`: a map of string to string. InputError in
/// JsonField's wording after the reference's error kind: "<path>: InvalidHeaderDeserialization:
/// __metadata__ is a list, not a map of string to string", "...: __metadata__.a is 1, not a string"
/// (the key printable()).
void read_metadata(const std::filesystem::path& path, const hjson& value, SafetensorsMetadata& out) {
    const util::JsonField metadata(value, path.string() + ": InvalidHeaderDeserialization", "__metadata__");
    metadata.object("a map of string to string");
    for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
            util::JsonField(mv, metadata.origin(), "__metadata__." + util::printable(mk)).fail("a string");
        out[mk] = mv.get<std::string>();
    }
}

/// Tensor `key` of the header: its object's dtype, shape and data_offsets, or InputError.
TensorInfo tensor_of(const std::filesystem::path& path, const std::string& key, const hjson& value) {
    const std::string field = tensor_field(key);
    if (!value.is_object())
        fail(path, "InvalidHeaderDeserialization", field + ": expected an object, got " + describe_json_type(value));
    TensorInfo t;
    t.name = key;
    const auto dt = value.find("dtype");
    if (dt == value.end()) fail(path, "InvalidHeaderDeserialization", field + ": missing field dtype");
    if (!dt->is_string())
        fail(path, "InvalidHeaderDeserialization", field + " dtype: expected a string, got " + describe_json_type(*dt));
    const auto parsed = parse_dtype(dt->get<std::string>());
    if (!parsed)
        fail(path, "InvalidHeaderDeserialization", field + " dtype: unknown dtype '" + dt->get<std::string>() + "'");
    t.dtype = *parsed;
    const auto sh = value.find("shape");
    if (sh == value.end()) fail(path, "InvalidHeaderDeserialization", field + ": missing field shape");
    t.shape = unsigned_array(path, field + " shape", *sh);
    const auto off = value.find("data_offsets");
    if (off == value.end()) fail(path, "InvalidHeaderDeserialization", field + ": missing field data_offsets");
    const auto o = unsigned_array(path, field + " data_offsets", *off);
    if (o.size() != 2)
        fail(path, "InvalidHeaderDeserialization",
             field + " data_offsets: expected 2 offsets, got " + std::to_string(o.size()));
    t.data_begin = o[0];
    t.data_end = o[1];
    return t;
}

/// Puts `tensors` in offset order and checks that they cover the data buffer contiguously, each
/// exactly as many bytes as its dtype and shape need, and the buffer ends at the end of the file
/// (`size` bytes, header length `n`); InputError (InvalidOffset, ValidationOverflow, MisalignedSlice,
/// TensorInvalidInfo, MetadataIncompleteBuffer) otherwise.
void check_coverage(const std::filesystem::path& path, std::vector<TensorInfo>& tensors, std::uint64_t n,
                    std::uint64_t size) {
    std::stable_sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return std::pair(a.data_begin, a.data_end) < std::pair(b.data_begin, b.data_end);
    });
    std::uint64_t start = 0;
    for (const auto& t : tensors) {
        const std::string field = tensor_field(t.name);
        if (t.data_begin != start)
            fail(path, "InvalidOffset",
                 field + " data_offsets " + offsets_text(t.data_begin, t.data_end) + ": expected to begin at " +
                     std::to_string(start) + " (a gap or an overlap)");
        if (t.data_end < t.data_begin)
            fail(path, "InvalidOffset",
                 field + " data_offsets " + offsets_text(t.data_begin, t.data_end) + ": end before begin");
        std::uint64_t elements = 0;
        const auto bits = checked_bits(t.shape, dtype_bits(t.dtype), &elements);
        if (!bits)
            fail(path, "ValidationOverflow", field + " shape " + shape_text(t.shape) + ": size overflows 64 bits");
        if (*bits % 8 != 0)
            fail(path, "MisalignedSlice",
                 field + " shape " + shape_text(t.shape) + ": " + std::to_string(elements) + " elements of " +
                     std::string(dtype_name(t.dtype)) + " are not a whole number of bytes");
        if (t.data_end - t.data_begin != *bits / 8)
            fail(path, "TensorInvalidInfo",
                 field + " data_offsets " + offsets_text(t.data_begin, t.data_end) + ": " +
                     std::to_string(t.data_end - t.data_begin) + " bytes, but " + std::string(dtype_name(t.dtype)) +
                     " shape " + shape_text(t.shape) + " needs " + std::to_string(*bits / 8));
        start = t.data_end;
    }
    std::uint64_t expected = 0;
    if (__builtin_add_overflow(start, 8 + n, &expected) || expected != size)
        fail(path, "MetadataIncompleteBuffer",
             "data: tensors cover " + std::to_string(start) + " bytes, but the file holds " +
                 std::to_string(size - 8 - n) + " after the header");
}

} // namespace

std::string_view dtype_name(Dtype d) {
    return kDtypes[static_cast<std::size_t>(d)].name;
}

std::optional<Dtype> parse_dtype(std::string_view name) {
    for (const auto& row : kDtypes)
        if (row.name == name) return row.dtype;
    return std::nullopt;
}

unsigned dtype_bits(Dtype d) {
    return kDtypes[static_cast<std::size_t>(d)].bits;
}

// ---------------------------------------------------------------------------------------------------------------
// Reader

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept {
    *this = std::move(o);
}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
    if (this != &o) {
        release();
        path_ = std::move(o.path_);
        map_ = std::exchange(o.map_, nullptr);
        size_ = std::exchange(o.size_, 0);
        header_size_ = o.header_size_;
        tensors_ = std::move(o.tensors_);
        index_ = std::move(o.index_);
        metadata_ = std::move(o.metadata_);
        has_metadata_ = o.has_metadata_;
    }
    return *this;
}

SafetensorsFile::~SafetensorsFile() {
    release();
}

void SafetensorsFile::release() noexcept {
    if (map_ && size_ > 0) ::munmap(const_cast<std::byte*>(map_), size_);
    map_ = nullptr;
    size_ = 0;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
    SafetensorsFile f;
    f.path_ = path;
    std::uint64_t size = 0;
    f.map_ = map_file(path, size); // unmapped by f's destructor when a check below throws
    f.size_ = size;
    const std::uint64_t n = header_length(path, f.map_, size);
    f.header_size_ = n;
    const ParsedHeader header = parse_header(path, std::string_view(reinterpret_cast<const char*>(f.map_ + 8), n));

    std::vector<TensorInfo> tensors;
    tensors.reserve(header.top_keys.size());
    for (const std::string& key : header.top_keys) {
        const hjson& value = header.doc.find(key).value();
        if (key == "__metadata__") {
            if (!value.is_null()) read_metadata(path, value, f.metadata_);
            f.has_metadata_ = true;
            continue;
        }
        tensors.push_back(tensor_of(path, key, value));
    }
    check_coverage(path, tensors, n, size);
    for (std::size_t i = 0; i < tensors.size(); ++i)
        f.index_.emplace(tensors[i].name, i);
    f.tensors_ = std::move(tensors);
    return f;
}

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& t : tensors_)
        out.push_back(t.name);
    return out;
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) fail(path_, "NotFound", tensor_field(name) + ": no such tensor in the file");
    return tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::data(const TensorInfo& tensor) const {
    return {map_ + 8 + header_size_ + tensor.data_begin, static_cast<std::size_t>(tensor.nbytes())};
}

std::span<const std::byte> SafetensorsFile::data(const std::string& name) const {
    return data(info(name));
}

// ---------------------------------------------------------------------------------------------------------------
// Writer

std::string serialize_safetensors(const std::vector<TensorData>& tensors, const SafetensorsMetadata& metadata) {
    std::vector<const TensorData*> order;
    order.reserve(tensors.size());
    std::set<std::string_view> seen;
    for (const auto& t : tensors) {
        if (!seen.insert(t.name).second)
            throw InputError("safetensors writer: " + tensor_field(t.name) + ": duplicate tensor name");
        const auto bits = checked_bits(t.shape, dtype_bits(t.dtype), nullptr);
        if (!bits) throw InputError("safetensors writer: " + tensor_field(t.name) + " shape: size overflows 64 bits");
        if (*bits % 8 != 0)
            throw InputError("safetensors writer: " + tensor_field(t.name) + " shape " + shape_text(t.shape) +
                             ": not a whole number of bytes");
        if (*bits / 8 != t.data.size())
            throw InputError("safetensors writer: " + tensor_field(t.name) + " data: " + std::to_string(t.data.size()) +
                             " bytes, shape " + shape_text(t.shape) + " of " + std::string(dtype_name(t.dtype)) +
                             " needs " + std::to_string(*bits / 8));
        order.push_back(&t);
    }
    std::sort(order.begin(), order.end(), [](const TensorData* a, const TensorData* b) {
        if (a->dtype != b->dtype) return a->dtype > b->dtype;
        return a->name < b->name;
    });

    std::string header = "{";
    bool first = true;
    if (!metadata.empty()) {
        header += "\"__metadata__\":{";
        bool mfirst = true;
        for (const auto& [k, v] : metadata) {
            if (!mfirst) header.push_back(',');
            mfirst = false;
            append_json_string(header, k);
            header.push_back(':');
            append_json_string(header, v);
        }
        header += "}";
        first = false;
    }
    std::uint64_t offset = 0;
    for (const auto* t : order) {
        if (!first) header.push_back(',');
        first = false;
        append_json_string(header, t->name);
        header += ":{\"dtype\":\"";
        header += dtype_name(t->dtype);
        header += "\",\"shape\":[";
        for (std::size_t i = 0; i < t->shape.size(); ++i) {
            if (i) header.push_back(',');
            header += std::to_string(t->shape[i]);
        }
        header += "],\"data_offsets\":[";
        header += std::to_string(offset);
        header.push_back(',');
        offset += t->data.size();
        header += std::to_string(offset);
        header += "]}";
    }
    header.push_back('}');
    header.append((8 - header.size() % 8) % 8, ' ');
    if (header.size() > kMaxHeaderSize)
        throw InputError("safetensors writer: HeaderTooLarge: header of " + std::to_string(header.size()) + " bytes");

    std::string out;
    out.reserve(8 + header.size() + offset);
    std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
    out += header;
    for (const auto* t : order)
        out.append(reinterpret_cast<const char*>(t->data.data()), t->data.size());
    return out;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorData>& tensors,
                       const SafetensorsMetadata& metadata) {
    const std::string bytes = serialize_safetensors(tensors, metadata);
    try {
        util::write_file_atomically(path, bytes);
    } catch (const util::AtomicWriteError& e) {
        using Step = util::AtomicWriteError::Step;
        const std::string reason = std::strerror(e.error);
        switch (e.step) {
        case Step::Create:
            fail(path, "IoError", "cannot create " + e.temp.string() + ": " + reason);
        case Step::Write:
            fail(path, "IoError", "write failed: " + reason);
        case Step::Flush:
            fail(path, "IoError", "flush failed: " + reason);
        case Step::Rename:
            fail(path, "IoError", "rename failed: " + reason);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Index

std::vector<std::string> CheckpointIndex::shards() const {
    std::set<std::string> s;
    for (const auto& [name, shard] : weight_map)
        s.insert(shard);
    return {s.begin(), s.end()};
}

CheckpointIndex read_index(const std::filesystem::path& dir) {
    const auto file = dir / "model.safetensors.index.json";
    const std::string text = read_input_file(file, input_files::kCheckpointIndex);
    nlohmann::json doc;
    try {
        doc = util::parse_json_strict(text, file.string());
    } catch (const nlohmann::json::parse_error& e) {
        fail(file, "InvalidIndex", "not valid JSON (error at byte " + std::to_string(e.byte) + ")");
    } catch (const nlohmann::json::exception& e) {
        // out_of_range.406: a number such as 1e400 that no double holds
        fail(file, "InvalidIndex", "not valid JSON (" + util::json_error_description(e) + ")");
    }
    // Field types in JsonField's wording ("<file>: weight_map is missing"); a malformed document, an
    // empty weight_map and a shard that is no plain file name keep the InvalidIndex kind.
    const util::JsonField d(doc, file.string());
    d.object();
    CheckpointIndex idx;
    idx.dir = dir;
    if (const util::JsonField m = d["metadata"]; m.given()) {
        m.object();
        for (const auto& [k, v] : m.json().items())
            idx.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
        if (const util::JsonField ts = m["total_size"]; ts.exists()) idx.total_size = ts.unsigned_integer();
    }
    const util::JsonField wm = d["weight_map"];
    wm.object();
    if (wm.json().empty()) fail(file, "InvalidIndex", "weight_map: empty (it must name the shard of every tensor)");
    for (const auto& [name, shard] : wm.json().items()) {
        const std::string shown_name = util::printable(name);
        if (!shard.is_string())
            util::JsonField(shard, file.string(), "weight_map." + shown_name).fail("a shard file name");
        const auto s = shard.get<std::string>();
        const bool control =
            std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
        if (s.empty() || control || s.find('/') != std::string::npos || s.find('\\') != std::string::npos || s == "." ||
            s == "..")
            fail(file, "InvalidIndex",
                 "weight_map '" + shown_name + "': shard '" + util::printable(s) + "' is not a plain file name");
        idx.weight_map[name] = s;
    }
    return idx;
}

} // namespace routepack::gpu
