// The one reader of JSON fields (core/util/json_field.h).
#include "core/util/json_field.h"

#include "core/util/errors.h"
#include "core/util/text.h"

#include <charconv>
#include <cmath>

namespace routepack::util {

namespace {

/// The shortest text that reads back as v ("0.5", "1e+12", "31536000").
std::string shortest(double v) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

/// 2^63 and 2^64 as doubles: the first values beyond int64 / uint64.
constexpr double kTwo63 = 9223372036854775808.0;
constexpr double kTwo64 = 18446744073709551616.0;

} // namespace

std::string json_value_text(const nlohmann::json& v) {
    if (v.is_structured() && v.empty()) return v.is_array() ? "[]" : "{}";
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::isnan(d)) return "nan";
        if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    }
    return json_brief(v);
}

nlohmann::json parse_json_document(std::string_view text, const std::string& origin) {
    try {
        return parse_json_strict(text, origin);
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(origin + ": malformed JSON at byte " + std::to_string(e.byte));
    } catch (const nlohmann::json::exception& e) {
        // out_of_range.406: a number such as 1e400 that no double holds (the description names its field)
        throw InputError(origin + ": malformed JSON: " + json_error_description(e));
    }
}

JsonField::JsonField(const nlohmann::json& document, std::string origin)
    : value_(&document), origin_(std::make_shared<const std::string>(std::move(origin))) {}

JsonField::JsonField(const nlohmann::json& value, std::string origin, std::string path)
    : value_(&value), origin_(std::make_shared<const std::string>(std::move(origin))), path_(std::move(path)) {}

JsonField JsonField::operator[](std::string_view key) const {
    JsonField out(*this);
    out.path_ = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    out.value_ = nullptr;
    if (value_ && value_->is_object())
        if (const auto it = value_->find(key); it != value_->end()) out.value_ = &*it;
    return out;
}

JsonField JsonField::operator[](std::size_t index) const {
    JsonField out(*this);
    out.path_ = path_ + "[" + std::to_string(index) + "]";
    out.value_ = value_ && value_->is_array() && index < value_->size() ? &(*value_)[index] : nullptr;
    return out;
}

std::string JsonField::where() const {
    return path_.empty() ? *origin_ : *origin_ + ": " + path_;
}

void JsonField::fail(std::string_view expected) const {
    if (!value_) throw InputError(where() + " is missing");
    throw InputError(where() + " is " + json_value_text(*value_) + ", not " + std::string(expected));
}

const nlohmann::json& JsonField::json() const {
    if (!value_) throw InputError(where() + " is missing");
    return *value_;
}

std::optional<std::int64_t> json_integer_of(const nlohmann::json& v, std::int64_t lo, std::int64_t hi,
                                            IntegralFloats floats) {
    if (v.is_number_float() && floats == IntegralFloats::Accept) {
        const double d = v.get<double>();
        // Integral, within int64 (2^63 is not), then within lo..hi exactly as an integer.
        if (!(d == std::floor(d)) || d < -kTwo63 || d >= kTwo63) return std::nullopt;
        const auto x = static_cast<std::int64_t>(d);
        if (x < lo || x > hi) return std::nullopt;
        return x;
    }
    if (!v.is_number_integer()) return std::nullopt;
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi < 0 ? 0 : hi))
        return std::nullopt;
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi) return std::nullopt;
    return x;
}

std::int64_t JsonField::integer(std::int64_t lo, std::int64_t hi, IntegralFloats floats) const {
    if (const auto x = json_integer_of(json(), lo, hi, floats)) return *x;
    const bool whole_range =
        lo == std::numeric_limits<std::int64_t>::min() && hi == std::numeric_limits<std::int64_t>::max();
    fail(whole_range ? "an integer" : "an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
}

std::uint64_t JsonField::unsigned_integer(std::uint64_t hi, IntegralFloats floats) const {
    auto bad = [&]() { fail("an integer in 0.." + std::to_string(hi)); };
    const nlohmann::json& v = json();
    if (v.is_number_float() && floats == IntegralFloats::Accept) {
        const double d = v.get<double>();
        if (!(d == std::floor(d)) || d < 0 || d >= kTwo64) bad();
        const auto x = static_cast<std::uint64_t>(d);
        if (x > hi) bad();
        return x;
    }
    if (!v.is_number_integer()) bad();
    if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) bad();
    const auto x = v.get<std::uint64_t>();
    if (x > hi) bad();
    return x;
}

double JsonField::number() const {
    const nlohmann::json& v = json();
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail("a finite number");
    return v.get<double>();
}

double JsonField::number(double lo, double hi, bool lo_open, bool hi_open) const {
    const bool no_hi = hi == std::numeric_limits<double>::max();
    const std::string expected = no_hi ? std::string("a finite number ") + (lo_open ? "> " : ">= ") + shortest(lo)
                                       : std::string("a number in ") + (lo_open ? "(" : "[") + shortest(lo) + ", " +
                                             shortest(hi) + (hi_open ? ")" : "]");
    const nlohmann::json& v = json();
    if (!v.is_number()) fail(expected);
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo) || (hi_open && x == hi)) fail(expected);
    return x;
}

const std::string& JsonField::string() const {
    const nlohmann::json& v = json();
    if (!v.is_string()) fail("a string");
    return v.get_ref<const std::string&>();
}

bool JsonField::boolean() const {
    const nlohmann::json& v = json();
    if (!v.is_boolean()) fail("true or false");
    return v.get<bool>();
}

std::size_t JsonField::list(std::string_view expected) const {
    const nlohmann::json& v = json();
    if (!v.is_array()) fail(expected.empty() ? "a list" : expected);
    return v.size();
}

void JsonField::object(std::string_view expected) const {
    if (!json().is_object()) fail(expected.empty() ? "an object" : expected);
}

void JsonField::only(std::initializer_list<std::string_view> known) const {
    object();
    for (auto it = value_->begin(); it != value_->end(); ++it) {
        bool ok = false;
        for (std::string_view k : known)
            ok = ok || it.key() == k;
        if (ok) continue;
        std::string list;
        for (std::string_view k : known)
            list += (list.empty() ? "" : ", ") + std::string(k);
        throw InputError(where() + ": unknown field '" + printable(it.key()) + "' (known: " + list + ")");
    }
}

} // namespace routepack::util
