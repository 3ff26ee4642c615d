// JSON helpers: strict parsing, message text and range-checked integers. See json.h.
#include "core/util/json.h"

#include "core/util/errors.h"
#include "core/util/json_field.h"
#include "core/util/text.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace routepack::util {

std::string json_kind(const nlohmann::json& v) {
    switch (v.type()) {
    case nlohmann::json::value_t::null:
        return "null";
    case nlohmann::json::value_t::boolean:
        return "a boolean";
    case nlohmann::json::value_t::string:
        return "a string";
    case nlohmann::json::value_t::array:
        return "a list";
    case nlohmann::json::value_t::object:
        return "an object";
    case nlohmann::json::value_t::binary:
        return "binary data";
    case nlohmann::json::value_t::number_float:
        return "a non-integer number";
    default:
        return "an integer";
    }
}

std::string json_brief(const nlohmann::json& v) {
    if (v.is_string()) return "\"" + printable(v.get_ref<const std::string&>()) + "\"";
    if (v.is_array() || v.is_object() || v.is_binary()) return json_kind(v);
    return printable(v.dump()); // a scalar: no recursion
}

std::string json_error_description(const std::exception& e) {
    // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 7: <description>",
    // "[json.exception.out_of_range.406] number overflow parsing '1e400'".
    std::string_view s = e.what();
    if (s.rfind("[json.exception.", 0) == 0) {
        const std::size_t close = s.find("] ");
        if (close != std::string_view::npos) s.remove_prefix(close + 2);
    }
    if (s.rfind("parse error", 0) == 0) {
        const std::size_t p = s.find(": ");
        if (p != std::string_view::npos) s.remove_prefix(p + 2);
    }
    return printable(s, 400);
}

namespace {

/// nlohmann's DOM builder plus a check that no object repeats a key (a repeated key would
/// silently replace the earlier value), and the path of the value being read ("stages[0].beta"),
/// so that a number no double holds (out_of_range.406, e.g. 1e400) is reported with its field.
/// Every other parse error behaves exactly as nlohmann::json::parse.
class CheckedDomParser {
public:
    explicit CheckedDomParser(nlohmann::json& result) : dom_(result, true) {}

    bool null() { return value(), dom_.null(); }
    bool boolean(bool v) { return value(), dom_.boolean(v); }
    bool number_integer(nlohmann::json::number_integer_t v) { return value(), dom_.number_integer(v); }
    bool number_unsigned(nlohmann::json::number_unsigned_t v) { return value(), dom_.number_unsigned(v); }
    bool number_float(nlohmann::json::number_float_t v, const std::string& s) {
        return value(), dom_.number_float(v, s);
    }
    bool string(std::string& v) { return value(), dom_.string(v); }
    bool binary(nlohmann::json::binary_t& v) { return value(), dom_.binary(v); }
    bool start_object(std::size_t n) {
        value();
        keys_.emplace_back();
        path_.push_back({false, 0, {}});
        return dom_.start_object(n);
    }
    bool key(std::string& k) {
        if (!keys_.back().insert(k).second) {
            duplicate = k;
            return false;
        }
        path_.back().key = k;
        return dom_.key(k);
    }
    bool end_object() {
        keys_.pop_back();
        path_.pop_back();
        return dom_.end_object();
    }
    bool start_array(std::size_t n) {
        value();
        path_.push_back({true, -1, {}});
        return dom_.start_array(n);
    }
    bool end_array() {
        path_.pop_back();
        return dom_.end_array();
    }
    template <class Exception> bool parse_error(std::size_t pos, const std::string& token, const Exception& ex) {
        if constexpr (std::is_same_v<Exception, nlohmann::json::out_of_range>) {
            // The value that failed is the next one: one past the current array index.
            if (!path_.empty() && path_.back().array) ++path_.back().index;
            const std::string where = path();
            if (!where.empty())
                throw nlohmann::json::out_of_range::create(
                    ex.id, json_error_description(ex) + " (field " + printable(where) + ")", nullptr);
        }
        return dom_.parse_error(pos, token, ex); // throws, as nlohmann::json::parse does
    }

    std::optional<std::string> duplicate;

private:
    struct Level {
        bool array;
        std::int64_t index; // array: the current element
        std::string key;    // object: the current member
    };
    /// A value starts: in an array it is the next element.
    void value() {
        if (!path_.empty() && path_.back().array) ++path_.back().index;
    }
    std::string path() const {
        std::string out;
        for (const Level& l : path_) {
            if (l.array)
                out += "[" + std::to_string(l.index) + "]";
            else
                out += (out.empty() ? "" : ".") + l.key;
        }
        return out;
    }

    nlohmann::detail::json_sax_dom_parser<nlohmann::json> dom_;
    std::vector<std::unordered_set<std::string>> keys_;
    std::vector<Level> path_;
};

} // namespace

nlohmann::json parse_json_strict(std::string_view text, const std::string& origin) {
    nlohmann::json out;
    CheckedDomParser sax(out);
    const bool ok = nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &sax);
    if (!ok && sax.duplicate)
        throw InputError(origin + ": malformed JSON: duplicate key '" + printable(*sax.duplicate) + "' in one object");
    if (!ok) throw InputError(origin + ": malformed JSON");
    return out;
}

void check_json_depth(const nlohmann::json& v, const std::string& origin) {
    std::vector<std::pair<const nlohmann::json*, std::size_t>> todo{{&v, 1}};
    while (!todo.empty()) {
        const auto [x, depth] = todo.back();
        todo.pop_back();
        if (!x->is_structured()) continue;
        if (depth > kMaxJsonPrintDepth)
            throw InputError(origin + ": JSON nested deeper than " + std::to_string(kMaxJsonPrintDepth) + " levels");
        for (const auto& child : *x)
            todo.emplace_back(&child, depth + 1);
    }
}

std::int64_t json_int_value(const nlohmann::json& v, const std::string& where, const std::string& field,
                            std::int64_t lo, std::int64_t hi) {
    if (const auto x = json_integer_of(v, lo, hi, IntegralFloats::Accept)) return *x;
    return JsonField(v, where, field).integer(lo, hi, IntegralFloats::Accept); // throws, naming the field
}

namespace {

/// json_top_level's SAX handler: tracks the depth, records depth-1 keys and string values.
class TopLevelSax {
public:
    TopLevelSax(JsonTopLevel& out, std::string_view stop_after, const std::vector<std::string_view>& known)
        : out_(out), stop_after_(stop_after), known_(known) {}
    bool null() { return value(); }
    bool boolean(bool) { return value(); }
    bool number_integer(nlohmann::json::number_integer_t) { return value(); }
    bool number_unsigned(nlohmann::json::number_unsigned_t) { return value(); }
    bool number_float(nlohmann::json::number_float_t, const std::string&) { return value(); }
    bool string(std::string& s) {
        if (depth_ == 1 && !out_.keys.empty() && s.size() <= 1024) out_.strings[out_.keys.back()] = s;
        return value();
    }
    bool binary(nlohmann::json::binary_t&) { return value(); }
    bool start_object(std::size_t) {
        if (depth_ == 0) out_.object = true;
        ++depth_;
        return true;
    }
    bool end_object() {
        --depth_;
        return value();
    }
    bool start_array(std::size_t) {
        ++depth_;
        return true;
    }
    bool end_array() {
        --depth_;
        return value();
    }
    bool key(std::string& k) {
        if (depth_ != 1) return true;
        out_.keys.push_back(k);
        if (known_.empty() || std::find(known_.begin(), known_.end(), k) != known_.end()) return true;
        out_.unknown = k;
        return false;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

private:
    /// After a complete value: false (stop) when it was the value of `stop_after` at the top level.
    bool value() const {
        return !(depth_ == 1 && !stop_after_.empty() && !out_.keys.empty() && out_.keys.back() == stop_after_);
    }
    JsonTopLevel& out_;
    std::string_view stop_after_;
    const std::vector<std::string_view>& known_;
    int depth_ = 0;
};

} // namespace

JsonTopLevel json_top_level(std::string_view text, std::string_view stop_after,
                            const std::vector<std::string_view>& known) {
    JsonTopLevel out;
    TopLevelSax sax(out, stop_after, known);
    (void)nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &sax);
    return out;
}

} // namespace routepack::util
