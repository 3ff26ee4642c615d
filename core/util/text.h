#pragma once
// Text helpers shared by every module that reads or echoes input: the printable filter for one-line
// error messages, the UTF-8 byte-order mark, and strict RFC 4648 base64 (the vLLM / SGLang
// `routed_experts` wire encoding and the synthetic writers).
#include <cstddef>
#include <string>
#include <string_view>

namespace routepack::util {

/// Input text made safe to echo inside a one-line error message: line breaks, tabs and other
/// control characters, and bytes that are not valid UTF-8 become escapes (\n, \r, \t, \xNN); text
/// longer than `max_chars` characters is cut there and ends in "...". Every importer, the library
/// and the CLI pass echoed input (field values, keys, ids, names) through it.
std::string printable(std::string_view text, std::size_t max_chars = 80);

/// Byte index of the first byte of `text` that does not start a well-formed UTF-8 sequence (RFC
/// 3629), or std::string_view::npos when all of it is valid UTF-8.
std::size_t utf8_invalid_at(std::string_view text);

/// Length of a leading UTF-8 byte-order mark of a text file (3 or 0). Text formats (CSV, JSON,
/// nrlre1) skip it; byte offsets in messages still count from the start of the file.
std::size_t bom_length(std::string_view bytes);

/// Strict RFC 4648 base64 (standard alphabet, '=' padding, no whitespace) of `text`; InputError
/// "<where>: malformed base64: length N is not a multiple of 4" or "<where>: malformed base64 at
/// offset O: unexpected character 'c'" (or "byte 0xNN").
std::string base64_decode(std::string_view text, const std::string& where);
/// RFC 4648 base64 of `bytes`, padded.
std::string base64_encode(std::string_view bytes);

} // namespace routepack::util
