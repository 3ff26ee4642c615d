#pragma once
// Internal to the per-sample importers (import_codec/sglang/vllm/npz/nemo/nested_json.cpp): wire
// integer types, JSON document/JSON-lines splitting with user-facing parse errors, error prefixes.
// Not part of the public interface.
#include "core/import/import_common.h"
#include "core/model/limits.h"
#include "core/util/json.h"
#include "core/util/json_field.h"
#include "core/util/text.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace routepack::detail {

// The importers call the shared text and JSON helpers unqualified.
using util::base64_decode;
using util::base64_encode;
using util::bom_length;
using util::json_brief;
using util::json_error_description;
using util::printable;

/// An integer element type as stored on the wire (npy descr, nrlre1 tag, routed_experts_dtype).
struct WireInt {
    int size = 4; ///< bytes per element: 1, 2, 4 or 8
    bool is_signed = true;
    bool big_endian = false; ///< byte order of multi-byte elements
    /// numpy-style name: "int32", "uint8", ...
    std::string name() const;
};

/// Parses a dtype name ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
/// optionally prefixed "torch." or "np."); false when unknown.
bool wire_int_from_name(std::string_view name, WireInt& out);

/// Converts `n` elements of `t` starting at `src` (no alignment required) into int32 at `dst`.
/// Returns the index of the first element whose value does not fit int32, or n when all fit.
std::size_t convert_wire_ints(const char* src, std::size_t n, WireInt t, std::int32_t* dst);
/// Element `index` of `t` at `src`, as decimal text (for error messages).
std::string wire_value_text(const char* src, std::size_t index, WireInt t);

/// "<path>: sample <id>" — the prefix of every error about one sample.
std::string sample_where(const SourceFile& f, const std::string& id);

/// Decoder layers a per-request step-JSON file names: its largest layer key in step 0 (null, i.e.
/// dense, keys included) + 1; 0 when the file does not say. InputError for malformed JSON or keys.
int step_json_hidden_layers(const SourceFile& f);

/// Checks the header of an .npy file from its first bytes, before the rest is read: false while
/// `prefix` ends inside the header, true once it was checked; InputError (as parse_npy) for a
/// malformed header or a shape over the per-sample limit (kMaxRouteValues, declared below).
bool npy_header_checked(std::string_view prefix, const std::string& where);

/// The header of an .npy file read from its first bytes (integer dtype, or bool '|b1' when
/// `allow_bool`; any shape):
/// nullopt while `prefix` ends inside the header; InputError (as parse_npy) when malformed.
struct NpyHeaderInfo {
    std::vector<std::int64_t> shape;
    std::string descr;
    bool fortran = false;
    WireInt type;
    std::size_t count = 0;      ///< values the shape holds
    std::size_t data_start = 0; ///< byte offset of the data
};
std::optional<NpyHeaderInfo> read_npy_header(std::string_view prefix, const std::string& where,
                                             bool allow_bool = false);

/// The file's text after a leading BOM.
std::string_view text_of(const SourceFile& f);

/// How a JSON file is laid out: one document (possibly spanning lines) or JSON lines.
struct JsonLayout {
    bool json_lines = false;
};

/// Decides the layout of `f`: JSON lines when it has at least two non-blank lines and the first
/// one alone is a complete JSON value, or when it has one non-blank line and the extension
/// ".jsonl"; a single document otherwise (a one-line ".json" file is one document). InputError "<path>: empty
/// file" when it holds only whitespace.
JsonLayout json_layout(const SourceFile& f);

/// Calls `fn(text, byte_offset, line_number)` for every non-blank line of `text` (line numbers
/// 1-based; a trailing '\r' is stripped).
void for_each_line(std::string_view text, const std::function<void(std::string_view, std::size_t, std::size_t)>& fn);

/// Parses `text` (a whole file, or one line of it starting at file byte `offset`) into a DOM;
/// InputError "<path>: [line N: ]malformed JSON at byte B: <description>" on failure (B counts
/// from the start of the file, as nlohmann counts: the number of bytes read when the error was
/// found), "<path>: [line N: ]malformed JSON: number overflow parsing '1e400'" for numbers beyond
/// double, and "<path>: [line N: ]malformed JSON: duplicate key '<k>' in one object" (the value
/// of a repeated key would otherwise be lost silently).
nlohmann::json parse_json_text(const SourceFile& f, std::string_view text, std::size_t offset, std::size_t line);

/// Calls `fn(value)` for every top-level JSON value of `f`: the whole document once, or every
/// non-blank line when the file is JSON lines. `single` tells which. A leading BOM is skipped.
void for_each_json_value(const SourceFile& f, const std::function<void(nlohmann::json&&, bool single)>& fn);

/// Length of the token-id list `ids` (prompt_token_ids, generation_token_ids of NeMo-RL and
/// Megatron-LM answers); nullopt when absent or null. InputError "<where> is 5, not a list of token
/// ids" (JsonField's wording) when it is not a list.
std::optional<std::int64_t> token_id_count(const util::JsonField& ids);

/// A JSON id (string or integer) as text; empty for null/absent. Used for request ids and groups.
/// InputError "<where> is 1.5, not a string or an integer" (JsonField's wording: a list or an
/// object is shown as "a list" / "an object", never serialized, as it could be nested deeper than
/// the stack allows) for any other type.
std::string json_id_text(const util::JsonField& v);

/// Notes an importer adds to the import summary ("skipped 2 batch rows ..."). import_trace opens a
/// NoteScope around each file's parse (on the parsing thread); add_import_note appends to the
/// innermost open scope of the calling thread and does nothing without one.
class NoteScope {
public:
    explicit NoteScope(std::vector<std::string>& notes);
    ~NoteScope();
    NoteScope(const NoteScope&) = delete;
    NoteScope& operator=(const NoteScope&) = delete;

private:
    std::vector<std::string>* previous_;
};
void add_import_note(std::string note);

/// A nested JSON list [rows][layers][top_k] of expert ids (a DOM) into `out`: null = -1 (missing),
/// integral floats accepted as ids. Every row must have as many layers as row 0 and every layer
/// as many ids as row 0 layer 0 (out.top_k); out.axis_layer_ids is left to the caller. Errors name
/// "<where>: <field>...": JsonField's wording for a value of the wrong type ("<field> is 5, not a
/// [rows][layers][top_k] list", "<field>[r] is 3, not a list of layers", "<field>[r][l] is 3, not a
/// list of expert ids", "<field>[r][l][s] is 1.5, not an integer in -2147483648..2147483647"), and
/// "<field>[r][l] has N expert ids, expected K (as row 0, layer 0)" and the like for the shape. The
/// field paths are built only for an error.
void routes_from_json(const nlohmann::json& v, const std::string& where, const std::string& field, RouteArray& out);
/// routes_from_json of a field (its origin the `where`, its path the `field`); "<where> is missing"
/// when absent.
void routes_from_json(const util::JsonField& v, RouteArray& out);

} // namespace routepack::detail
