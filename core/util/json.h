#pragma once
// JSON helpers on nlohmann::json (Debian nlohmann-json3-dev 3.11) for every JSON input the
// project reads (traces, model configs, topologies, plans, budgets, safetensors headers): strict
// parsing (a repeated key is an error, not a silent overwrite) and user-facing error text; the
// fields themselves are read by JsonField (core/util/json_field.h). Include it only where JSON is
// parsed; it pulls in nlohmann/json.hpp.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace routepack::util {

/// The kind of a JSON value for messages: "a string", "a number", "a list", "an object", ...
std::string json_kind(const nlohmann::json& v);

/// A JSON value for an error message without ever serializing a container (which could be deeply
/// nested or huge): strings quoted and passed through printable(), numbers / booleans / null as
/// JSON text, "a list" / "an object" for containers.
std::string json_brief(const nlohmann::json& v);

/// The description part of an nlohmann error, without its "[json.exception.<kind>.<id>]" tag and
/// "parse error at line L, column C: " prefix ("syntax error while parsing value - ...",
/// "number overflow parsing '1e400'"); echoed input in it passes through printable().
std::string json_error_description(const std::exception& e);

/// nlohmann::json::parse of a whole document with repeated keys refused: InputError "<origin>:
/// malformed JSON: duplicate key '<k>' in one object" (printable, cut at 80 characters); every
/// other error is nlohmann's own exception, as json::parse throws it, for the caller's message.
nlohmann::json parse_json_strict(std::string_view text, const std::string& origin);

/// Deepest nesting json::dump may print (it recurses once per level of arrays and objects).
constexpr std::size_t kMaxJsonPrintDepth = 512;

/// Refuses a value nested deeper than kMaxJsonPrintDepth before it is printed back to text:
/// InputError "<origin>: JSON nested deeper than 512 levels". Iterative: any depth is safe to check.
void check_json_depth(const nlohmann::json& v, const std::string& origin);

/// The importers' shorthand for JsonField(v, where, field).integer(lo, hi, IntegralFloats::Accept)
/// (core/util/json_field.h): an integer, or a float with an integral value (232795.0, as JSON dumps
/// of float tensors write counts), in lo..hi; JsonField's errors ("<where>: <field> is 1.5, not an
/// integer in 0..7").
std::int64_t json_int_value(const nlohmann::json& v, const std::string& where, const std::string& field,
                            std::int64_t lo = INT64_MIN, std::int64_t hi = INT64_MAX);

/// The top level of a JSON document, read without building it (a SAX pass; memory: the longest
/// string, not the document): whether it is an object, its keys in order, and the value of each key
/// whose value is a string of at most 1024 bytes. The pass ends early, keeping what it saw, at the
/// first syntax error, once `stop_after` (when not empty) has been read with its value, or at the
/// first top-level key not in `known` (when not empty; `unknown` names it, and its value is never
/// read, however large); it never throws for malformed text (the document parser reports that).
/// O(bytes).
struct JsonTopLevel {
    bool object = false;
    std::vector<std::string> keys;
    std::map<std::string, std::string> strings;
    std::optional<std::string> unknown; ///< the first key not in `known`
};
JsonTopLevel json_top_level(std::string_view text, std::string_view stop_after = {},
                            const std::vector<std::string_view>& known = {});

} // namespace routepack::util
