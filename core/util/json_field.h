#pragma once
// The one reader of JSON fields: every JSON input the project reads (model descriptions,
// topologies, budgets, plans, loads files, the library's stored JSON, the trace importers) takes
// its integers, numbers, strings, booleans and lists through JsonField, so that a field is checked
// the same way everywhere and every error has one wording. Include it only where JSON is parsed;
// it pulls in nlohmann/json.hpp.
#include "core/util/json.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace routepack::util {

/// Whether an integer field takes a JSON float with an integral value (232795.0) as that integer.
/// Files this project or a person writes hold integers as integers (Refuse); some training stacks
/// dump float tensors with .tolist(), so their counts arrive as floats (Accept).
enum class IntegralFloats { Refuse, Accept };

/// One value of a JSON document and where it sits: `origin` names the document (a file path, "run 12
/// budgets", "f.jsonl: line 3") and `path` the field inside it ("samples[3].length"; "" for the
/// document itself). A JsonField may stand for a missing member: every read of it then fails with
/// "is missing". It refers to the document: the document must outlive it.
///
/// Every error is an InputError in one of two wordings, `where()` being "<origin>: <path>":
///   "<where> is missing"
///   "<where> is <value>, not <expected>"
/// where <value> is the value as written (json_value_text: strings quoted, numbers exactly, above
/// INT64_MAX included, a non-finite number as nan / inf; "a list" / "an object" for containers) and
/// <expected> the whole rule: "an integer", "an integer in 1..64", "a finite number", "a number in
/// (0, 1]", "a string", "true or false", "a list", "an object". Integers are exact: never narrowed,
/// wrapped, rounded or saturated.
class JsonField {
public:
    /// The document itself (path "").
    JsonField(const nlohmann::json& document, std::string origin);
    /// A value at `path` inside a document named `origin`.
    JsonField(const nlohmann::json& value, std::string origin, std::string path);

    /// Member `key`: missing when this is no object or has no such key (null is present).
    JsonField operator[](std::string_view key) const;
    /// Element `index` of a list: missing when this is no list or the list is shorter.
    JsonField operator[](std::size_t index) const;

    /// Present (null included).
    bool exists() const { return value_ != nullptr; }
    /// Present and not null: the test of an optional field whose null means "not given".
    bool given() const { return value_ && !value_->is_null(); }
    /// The JSON value; InputError "is missing" when absent.
    const nlohmann::json& json() const;
    /// "<origin>: <path>", or the origin alone for the document.
    std::string where() const;
    const std::string& origin() const { return *origin_; }
    const std::string& path() const { return path_; }

    /// An integer in lo..hi (both included); expected "an integer in lo..hi" ("an integer" for the
    /// whole int64 range). Integral floats as `floats` says.
    std::int64_t integer(std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                         std::int64_t hi = std::numeric_limits<std::int64_t>::max(),
                         IntegralFloats floats = IntegralFloats::Refuse) const;
    /// An integer in 0..hi, up to 2^64 - 1; expected "an integer in 0..hi".
    std::uint64_t unsigned_integer(std::uint64_t hi = std::numeric_limits<std::uint64_t>::max(),
                                   IntegralFloats floats = IntegralFloats::Refuse) const;
    /// A finite number (an integer is read as the nearest double); expected "a finite number".
    double number() const;
    /// A finite number in the interval lo..hi, an end excluded when lo_open / hi_open; expected "a
    /// number in [lo, hi]" ("(lo, hi]", ...), or "a finite number >= lo" / "> lo" when hi is
    /// std::numeric_limits<double>::max().
    double number(double lo, double hi, bool lo_open = false, bool hi_open = false) const;
    /// A string; expected "a string".
    const std::string& string() const;
    /// true or false; expected "true or false".
    bool boolean() const;
    /// A list; returns its size. Expected "a list" (or `expected` when given: "a list of layer ids").
    std::size_t list(std::string_view expected = {}) const;
    /// An object; expected "an object" (or `expected`).
    void object(std::string_view expected = {}) const;
    /// An object whose every key is in `known`: InputError "<where>: unknown field '<key>' (known:
    /// a, b, c)" (the key printable()), for a file whose misspelt optional field would silently fall
    /// back to its default.
    void only(std::initializer_list<std::string_view> known) const;

    /// InputError "<where> is <value>, not <expected>" (or "is missing").
    [[noreturn]] void fail(std::string_view expected) const;

private:
    const nlohmann::json* value_;               ///< nullptr: missing
    std::shared_ptr<const std::string> origin_; ///< shared by every field of a document
    std::string path_;
};

/// The integer JsonField::integer reads from `v`, or nullopt where it fails (for hot loops that
/// build the field's path only on failure).
std::optional<std::int64_t> json_integer_of(const nlohmann::json& v, std::int64_t lo, std::int64_t hi,
                                            IntegralFloats floats);

/// A value as an error message shows it: strings quoted (printable()), numbers exactly as JSON
/// writes them (a non-finite double as nan / inf / -inf), true / false / null, [] / {} when empty,
/// else "a list" / "an object" (never serialized: they could be huge or deeply nested).
std::string json_value_text(const nlohmann::json& v);

/// parse_json_strict of a whole file's text for the readers of one-document files (model
/// descriptions, topologies, plans, loads files): every error an InputError "<origin>: malformed
/// JSON at byte B" (syntax), "<origin>: malformed JSON: <description>" (a number no double holds,
/// with its field), or parse_json_strict's duplicate-key message.
nlohmann::json parse_json_document(std::string_view text, const std::string& origin);

} // namespace routepack::util
