// Shared helpers of the per-sample importers: wire integer conversion, JSON layout detection and
// user-facing JSON parse errors. See import_detail.h.
#include "core/import/import_detail.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace routepack::detail {

std::string WireInt::name() const {
    return std::string(is_signed ? "int" : "uint") + std::to_string(size * 8);
}

bool wire_int_from_name(std::string_view name, WireInt& out) {
    for (std::string_view prefix : {"torch.", "np.", "numpy."})
        if (name.substr(0, prefix.size()) == prefix) {
            name.remove_prefix(prefix.size());
            break;
        }
    static constexpr struct {
        std::string_view name;
        int size;
        bool is_signed;
    } kTypes[] = {{"int8", 1, true},  {"uint8", 1, false},  {"int16", 2, true}, {"uint16", 2, false},
                  {"int32", 4, true}, {"uint32", 4, false}, {"int64", 8, true}, {"uint64", 8, false}};
    for (const auto& t : kTypes)
        if (t.name == name) {
            out = WireInt{t.size, t.is_signed, false};
            return true;
        }
    return false;
}

namespace {

template <class U> U load(const char* p, bool swap) {
    U v;
    std::memcpy(&v, p, sizeof(U));
    if constexpr (sizeof(U) == 2) {
        if (swap) v = __builtin_bswap16(v);
    } else if constexpr (sizeof(U) == 4) {
        if (swap) v = __builtin_bswap32(v);
    } else if constexpr (sizeof(U) == 8) {
        if (swap) v = __builtin_bswap64(v);
    }
    return v;
}

// U: unsigned carrier of the wire size; S: the wire's value type (signed or unsigned).
template <class U, class S> std::size_t convert(const char* src, std::size_t n, bool swap, std::int32_t* dst) {
    constexpr bool fits_always =
        std::cmp_greater_equal(std::numeric_limits<S>::min(), std::numeric_limits<std::int32_t>::min()) &&
        std::cmp_less_equal(std::numeric_limits<S>::max(), std::numeric_limits<std::int32_t>::max());
    for (std::size_t i = 0; i < n; ++i) {
        const S v = static_cast<S>(load<U>(src + i * sizeof(U), swap));
        if constexpr (!fits_always) {
            if (!std::in_range<std::int32_t>(v)) return i;
        }
        // For an int8 wire type S is std::int8_t and its signed value (-128..127) is the datum the file
        // stores, so the sign extension is the intended conversion. NOLINTNEXTLINE(bugprone-signed-char-misuse)
        dst[i] = static_cast<std::int32_t>(v);
    }
    return n;
}

bool needs_swap(const WireInt& t) {
    return t.size > 1 && t.big_endian != (std::endian::native == std::endian::big);
}

} // namespace

std::size_t convert_wire_ints(const char* src, std::size_t n, WireInt t, std::int32_t* dst) {
    const bool swap = needs_swap(t);
    switch (t.size) {
    case 1:
        return t.is_signed ? convert<std::uint8_t, std::int8_t>(src, n, swap, dst)
                           : convert<std::uint8_t, std::uint8_t>(src, n, swap, dst);
    case 2:
        return t.is_signed ? convert<std::uint16_t, std::int16_t>(src, n, swap, dst)
                           : convert<std::uint16_t, std::uint16_t>(src, n, swap, dst);
    case 4:
        return t.is_signed ? convert<std::uint32_t, std::int32_t>(src, n, swap, dst)
                           : convert<std::uint32_t, std::uint32_t>(src, n, swap, dst);
    case 8:
        return t.is_signed ? convert<std::uint64_t, std::int64_t>(src, n, swap, dst)
                           : convert<std::uint64_t, std::uint64_t>(src, n, swap, dst);
    default:
        return 0;
    }
}

std::string wire_value_text(const char* src, std::size_t index, WireInt t) {
    const bool swap = needs_swap(t);
    const char* p = src + index * static_cast<std::size_t>(t.size);
    switch (t.size) {
    case 1:
        return t.is_signed ? std::to_string(static_cast<std::int8_t>(*p))
                           : std::to_string(static_cast<std::uint8_t>(*p));
    case 2: {
        const auto v = load<std::uint16_t>(p, swap);
        return t.is_signed ? std::to_string(static_cast<std::int16_t>(v)) : std::to_string(v);
    }
    case 4: {
        const auto v = load<std::uint32_t>(p, swap);
        return t.is_signed ? std::to_string(static_cast<std::int32_t>(v)) : std::to_string(v);
    }
    default: {
        const auto v = load<std::uint64_t>(p, swap);
        return t.is_signed ? std::to_string(static_cast<std::int64_t>(v)) : std::to_string(v);
    }
    }
}

std::string sample_where(const SourceFile& f, const std::string& id) {
    return f.path.string() + ": sample " + id;
}

std::string_view text_of(const SourceFile& f) {
    return std::string_view(f.bytes).substr(bom_length(f.bytes));
}

namespace {

bool is_blank(std::string_view s) {
    for (char c : s)
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
    return true;
}

} // namespace

void for_each_line(std::string_view text, const std::function<void(std::string_view, std::size_t, std::size_t)>& fn) {
    std::size_t pos = 0, line = 0;
    while (pos < text.size()) {
        ++line;
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view s = text.substr(pos, end - pos);
        if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
        if (!is_blank(s)) fn(s, pos, line);
        pos = end + 1;
    }
}

JsonLayout json_layout(const SourceFile& f) {
    const std::string_view text = text_of(f);
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) throw InputError(f.path.string() + ": empty file");
    std::size_t eol = text.find('\n', first);
    if (eol == std::string_view::npos || is_blank(text.substr(eol))) return {f.path.extension() == ".jsonl"};
    const char* b = text.data() + first;
    const char* e = text.data() + eol;
    return {nlohmann::json::accept(b, e)};
}

nlohmann::json parse_json_text(const SourceFile& f, std::string_view text, std::size_t offset, std::size_t line) {
    std::string origin = f.path.string();
    if (line > 0) origin += ": line " + std::to_string(line);
    try {
        return util::parse_json_strict(text, origin);
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(origin + ": malformed JSON at byte " + std::to_string(offset + e.byte) + ": " +
                         json_error_description(e));
    } catch (const nlohmann::json::exception& e) {
        throw InputError(origin + ": malformed JSON: " + json_error_description(e));
    }
}

void for_each_json_value(const SourceFile& f, const std::function<void(nlohmann::json&&, bool single)>& fn) {
    const std::string_view text = text_of(f);
    const std::size_t skip = f.bytes.size() - text.size();
    if (!json_layout(f).json_lines) {
        fn(parse_json_text(f, text, skip, 0), true);
        return;
    }
    for_each_line(text, [&](std::string_view s, std::size_t offset, std::size_t line) {
        fn(parse_json_text(f, s, skip + offset, line), false);
    });
}

std::optional<std::int64_t> token_id_count(const util::JsonField& ids) {
    if (!ids.given()) return std::nullopt;
    return static_cast<std::int64_t>(ids.list("a list of token ids"));
}

namespace {

/// The text of an id that is a string or an integer; nullopt for any other value.
std::optional<std::string> id_text_of(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    return std::nullopt;
}

constexpr std::string_view kIdExpected = "a string or an integer";

} // namespace

std::string json_id_text(const util::JsonField& v) {
    if (!v.given()) return {};
    if (auto text = id_text_of(v.json())) return std::move(*text);
    v.fail(kIdExpected);
}

namespace {
thread_local std::vector<std::string>* t_notes = nullptr;
} // namespace

NoteScope::NoteScope(std::vector<std::string>& notes) : previous_(t_notes) {
    t_notes = &notes;
}
NoteScope::~NoteScope() {
    t_notes = previous_;
}

void add_import_note(std::string note) {
    if (t_notes) t_notes->push_back(std::move(note));
}

namespace {

/// "<field>[a]" / "<field>[a][b]" / "<field>[a][b][c]": the path of an element, for an error.
std::string element_path(const std::string& field, std::initializer_list<std::size_t> index) {
    std::string path = field;
    for (const std::size_t i : index)
        path += "[" + std::to_string(i) + "]";
    return path;
}

} // namespace

void routes_from_json(const nlohmann::json& v, const std::string& where, const std::string& field, RouteArray& out) {
    // The paths are built only for an error: a sample holds up to kMaxRouteValues values.
    const auto fail = [&](const nlohmann::json& x, std::initializer_list<std::size_t> index,
                          std::string_view expected) {
        util::JsonField(x, where, element_path(field, index)).fail(expected);
    };
    const auto shape_error = [&](std::initializer_list<std::size_t> index, const std::string& what) {
        return InputError(where + ": " + element_path(field, index) + what);
    };
    if (!v.is_array()) fail(v, {}, "a [rows][layers][top_k] list");
    out.ids.clear();
    out.rows = static_cast<std::int64_t>(v.size());
    out.axis_layers = -1;
    out.top_k = -1;
    for (std::size_t r = 0; r < v.size(); ++r) {
        const auto& row = v[r];
        if (!row.is_array()) fail(row, {r}, "a list of layers");
        if (out.axis_layers < 0) {
            if (row.size() > static_cast<std::size_t>(INT32_MAX)) throw shape_error({r}, " has too many layers");
            out.axis_layers = static_cast<int>(row.size());
        } else if (row.size() != static_cast<std::size_t>(out.axis_layers)) {
            throw shape_error({r}, " has " + std::to_string(row.size()) + " layers, expected " +
                                       std::to_string(out.axis_layers) + " (as row 0)");
        }
        for (std::size_t l = 0; l < row.size(); ++l) {
            const auto& slots = row[l];
            if (!slots.is_array()) fail(slots, {r, l}, "a list of expert ids");
            if (out.top_k < 0) {
                if (slots.size() > static_cast<std::size_t>(INT32_MAX)) throw shape_error({r, l}, " is too long");
                out.top_k = static_cast<int>(slots.size());
            } else if (slots.size() != static_cast<std::size_t>(out.top_k)) {
                throw shape_error({r, l}, " has " + std::to_string(slots.size()) + " expert ids, expected " +
                                              std::to_string(out.top_k) + " (as row 0, layer 0)");
            }
            if (out.ids.size() + slots.size() > kMaxRouteValues)
                throw shape_error({}, ": more than the per-sample limit of " + std::to_string(kMaxRouteValues) +
                                          " route values");
            for (std::size_t s = 0; s < slots.size(); ++s) {
                const auto& e = slots[s];
                if (e.is_null()) {
                    out.ids.push_back(-1);
                    continue;
                }
                auto id = util::json_integer_of(e, INT32_MIN, INT32_MAX, util::IntegralFloats::Accept);
                if (!id)
                    id = util::JsonField(e, where, element_path(field, {r, l, s}))
                             .integer(INT32_MIN, INT32_MAX, util::IntegralFloats::Accept); // throws
                out.ids.push_back(static_cast<std::int32_t>(*id));
            }
        }
    }
    if (out.axis_layers < 0) out.axis_layers = 0;
    if (out.top_k < 0) out.top_k = 0;
}

void routes_from_json(const util::JsonField& v, RouteArray& out) {
    routes_from_json(v.json(), v.origin(), v.path(), out);
}

} // namespace routepack::detail
