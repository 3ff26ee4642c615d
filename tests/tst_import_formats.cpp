// Per-sample trace parsers on hand-made vectors built from the documented layouts
// (trace-formats.md §1, §2, §4): base64, .npy (byte by byte), SGLang, vLLM, .npy/.npz, NeMo-RL
// nrlre1, nested JSON. Every bad input is checked for its exact message.
#include "core/import/import_detail.h"
#include "core/util/errors.h"
#include "tests/testutil.h"

#include <QtTest>

#include <zip.h>

#include <cstring>
#include <functional>

using namespace routepack;
using namespace routepack::detail;

namespace {

/// 3 decoder layers, layer 0 dense, MoE layers 1 and 2, 4 experts, top-2.
ModelDescription model3() {
    ModelDescription m;
    m.name = "t3";
    m.num_hidden_layers = 3;
    m.experts = 4;
    m.top_k = 2;
    m.moe_layers = {1, 2};
    return m;
}

/// 2 decoder layers, MoE layer 1 only, 4 experts, top-2 (fits the NeMo-RL reference vector).
ModelDescription model1() {
    ModelDescription m = model3();
    m.num_hidden_layers = 2;
    m.moe_layers = {1};
    return m;
}

enum Parser { SGLang, VLLM, NpyFile, Npz, Nemo, Nested, Megatron, RouterTrace };

SourceFile source(const std::string& name, std::string bytes) {
    return SourceFile{std::filesystem::path("in") / name, std::move(bytes)};
}

std::vector<SampleRecord> run(Parser p, const SourceFile& f, const ModelDescription& m) {
    std::vector<SampleRecord> out;
    const EmitFn emit = [&](SampleRecord&& r) { out.push_back(std::move(r)); };
    switch (p) {
    case SGLang:
        parse_sglang(f, m, emit);
        break;
    case VLLM:
        parse_vllm(f, m, emit);
        break;
    case NpyFile:
        parse_npy_file(f, m, emit);
        break;
    case Npz:
        parse_npz(f, m, emit);
        break;
    case Nemo:
        parse_nemo_rl(f, m, emit);
        break;
    case Nested:
        parse_nested_json(f, m, emit);
        break;
    case Megatron:
        parse_megatron(f, m, emit);
        break;
    case RouterTrace:
        (void)parse_aggregate(f, m, LayerBase::Auto);
        break;
    }
    return out;
}

QString error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const InputError& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("no error");
}

/// a[l][e] as "c c c c | c c c c" (MoE layers in order).
QString counts_text(const SampleRecord& r, const ModelDescription& m) {
    QStringList layers;
    for (int l = 0; l < m.num_moe_layers(); ++l) {
        QStringList c;
        for (int e = 0; e < m.experts; ++e)
            c << QString::number(r.counts[static_cast<std::size_t>(l) * m.experts + e]);
        layers << c.join(QLatin1Char(' '));
    }
    return layers.join(QStringLiteral(" | "));
}

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int x : b)
        s.push_back(static_cast<char>(x));
    return s;
}

/// An .npy file written by hand from the format spec: magic, version, header length (2 bytes for
/// v1, 4 for v2/v3, little-endian), the dict padded with spaces to a multiple of 64 and '\n', data.
std::string npy_file(int major, const std::string& dict, const std::string& data) {
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    std::string header = dict;
    while ((6 + 2 + len_bytes + header.size() + 1) % 64 != 0)
        header.push_back(' ');
    header.push_back('\n');
    std::string out = "\x93NUMPY";
    out.push_back(static_cast<char>(major));
    out.push_back('\0');
    for (std::size_t i = 0; i < len_bytes; ++i)
        out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
    return out + header + data;
}

// The routes of the SGLang vectors: 2 rows x 3 layers x top-2,
//   row 0: L0 [0,0]  L1 [1,3]  L2 [0,2]
//   row 1: L0 [0,0]  L1 [3,2]  L2 [2,1]
// -> a[L1] = 0 1 1 2, a[L2] = 1 1 2 0. Base64 of the little-endian buffer, written out.
const char* const kRoutesI32 = "AAAAAAAAAAABAAAAAwAAAAAAAAACAAAAAAAAAAAAAAADAAAAAgAAAAIAAAABAAAA";
const char* const kRoutesU8 = "AAABAwACAAADAgIB";
const char* const kRoutesI16 = "AAAAAAEAAwAAAAIAAAAAAAMAAgACAAEA";
const QString kCounts = QStringLiteral("0 1 1 2 | 1 1 2 0");

// vLLM: base64 of whole .npy v1.0 files (numpy layout, header padded to 128 bytes).
// '<i2' shape (2, 2, 2) (MoE layers only): [[[1,3],[0,2]],[[3,2],[2,1]]] -> kCounts.
const char* const kNpyI2 =
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGkyJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsIDIsIDIpLCB9ICAgICAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoBAAMAAAACAAMAAgACAAEA";
// '<i4' shape (1, 2, 2): [[[0,1],[2,3]]] -> "1 1 0 0 | 0 0 1 1".
const char* const kNpyI4 =
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGk0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDEsIDIsIDIpLCB9ICAgICAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAQAAAAIAAAADAAAA";

std::string sglang_record(const std::string& routes, const std::string& extra_meta = "",
                          const std::string& extra_top = "") {
    return "{\"text\": \"hi\", " + extra_top + "\"meta_info\": {" + extra_meta + "\"routed_experts\": \"" + routes +
           "\"}}";
}

std::string vllm_response(const std::string& id, const std::vector<std::string>& choices,
                          const std::string& extra = "") {
    std::string s = "{\"id\": \"" + id + "\", \"object\": \"text_completion\", " + extra + "\"choices\": [";
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (i) s += ", ";
        s += "{\"index\": " + std::to_string(i) + ", \"text\": \"x\", " + choices[i] + "}";
    }
    return s + "]}";
}

std::string re(const std::string& b64) {
    return "\"routed_experts\": \"" + b64 + "\"";
}

/// Builds an .npz with libzip: each entry stored or deflated as asked, plus a directory entry.
std::string make_npz(const std::vector<std::tuple<std::string, std::string, bool>>& entries) {
    const auto dir = routepack::test::temp_dir(QStringLiteral("npz"));
    const auto path = dir / "a.npz";
    int err = 0;
    zip_t* za = zip_open(path.string().c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    if (!za) return {};
    zip_dir_add(za, "sub", ZIP_FL_ENC_UTF_8);
    for (const auto& [name, data, deflate] : entries) {
        zip_source_t* s = zip_source_buffer(za, data.data(), data.size(), 0);
        const zip_int64_t idx = zip_file_add(za, name.c_str(), s, ZIP_FL_ENC_UTF_8);
        zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    }
    if (zip_close(za) != 0) return {};
    std::string out = routepack::test::read_file(path);
    std::filesystem::remove_all(dir);
    return out;
}

/// Sets the declared uncompressed size of every entry named `name` in an archive, in its local
/// header and in the central directory alike (as a lying or hostile writer would).
std::string with_declared_size(std::string z, const std::string& name, std::uint32_t size) {
    auto u16 = [&](std::size_t at) {
        return std::size_t(static_cast<unsigned char>(z[at])) |
               (std::size_t(static_cast<unsigned char>(z[at + 1])) << 8);
    };
    auto put32 = [&](std::size_t at, std::uint32_t v) {
        for (int k = 0; k < 4; ++k)
            z[at + k] = static_cast<char>((v >> (8 * k)) & 0xFF);
    };
    for (const auto& [sig, name_len_at, name_at, size_at] :
         {std::tuple{std::string("PK\x03\x04"), 26, 30, 22}, std::tuple{std::string("PK\x01\x02"), 28, 46, 24}}) {
        for (std::size_t at = z.find(sig); at != std::string::npos; at = z.find(sig, at + 4))
            if (z.compare(at + name_at, u16(at + name_len_at), name) == 0 && u16(at + name_len_at) == name.size())
                put32(at + size_at, size);
    }
    return z;
}

/// The compressed size the central directory records for entry `name`.
std::uint32_t compressed_size(const std::string& z, const std::string& name) {
    for (std::size_t at = z.find("PK\x01\x02"); at != std::string::npos; at = z.find("PK\x01\x02", at + 4)) {
        const auto* u = reinterpret_cast<const unsigned char*>(z.data() + at);
        const std::size_t len = u[28] | (u[29] << 8);
        if (len == name.size() && z.compare(at + 46, len, name) == 0)
            return std::uint32_t(u[20]) | (std::uint32_t(u[21]) << 8) | (std::uint32_t(u[22]) << 16) |
                   (std::uint32_t(u[23]) << 24);
    }
    return 0;
}

/// JSON nested `depth` levels deep: lists ("[[[...]]]") or objects ({"a": {"a": ... 1}}).
std::string deep_list(int depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}
std::string deep_object(int depth) {
    std::string s;
    for (int i = 0; i < depth; ++i)
        s += "{\"a\": ";
    s += "1";
    return s + std::string(depth, '}');
}

/// Adds one formatErrors row: the parser, the file name and content it reads, the exact error.
void add_error_row(const char* name, Parser p, const char* file, const std::string& content, const QString& error) {
    QTest::newRow(name) << int(p) << QString::fromLatin1(file) << QByteArray::fromStdString(content) << error;
}

/// The error of a 5-entry layer axis against model3.
QString layer_axis_neither() {
    return QStringLiteral(
        "layer axis has 5 entries, matching neither the model's 3 decoder layers nor its 2 MoE layers");
}

/// The SGLang parser's errors.
void add_sglang_error_rows() {
    add_error_row(
        "sglang malformed base64", SGLang, "s.json", sglang_record("AAAAAAAAAAAAA#AA"),
        "in/s.json: sample s#0: meta_info.routed_experts: malformed base64 at offset 13: unexpected character '#'");
    add_error_row("sglang base64 length", SGLang, "s.json", sglang_record("AAAAAAA"),
                  "in/s.json: sample s#0: meta_info.routed_experts: malformed base64: length 7 is not a multiple of 4");
    add_error_row(
        "sglang bytes not divisible", SGLang, "s.json", sglang_record("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="),
        "in/s.json: sample s#0: meta_info.routed_experts holds 28 bytes, not a multiple of num_hidden_layers 3 "
        "x top_k 2 x 4 bytes (int32)");
    add_error_row(
        "sglang uint8 not divisible", SGLang, "s.json", sglang_record("AAAA", "\"routed_experts_dtype\": \"uint8\", "),
        "in/s.json: sample s#0: meta_info.routed_experts holds 3 bytes, not a multiple of num_hidden_layers 3 "
        "x top_k 2 x 1 bytes (uint8)");
    add_error_row("sglang id out of range", SGLang, "s.json", sglang_record("AAAAAAAAAAAEAAAAAQAAAAAAAAABAAAA"),
                  "in/s.json: sample s#0: row 0, layer 1: expert id 4 out of range 0..3");
    add_error_row("sglang negative id", SGLang, "s.json", sglang_record("AAAAAAAAAAABAAAA/v///wAAAAABAAAA"),
                  "in/s.json: sample s#0: row 0, layer 1: negative expert id -2 (only -1 marks a missing route)");
    add_error_row(
        "sglang duplicate expert", SGLang, "s.json", sglang_record("AAAAAAAAAAACAAAAAgAAAAAAAAABAAAA"),
        "in/s.json: sample s#0: row 0, layer 1: expert 2 listed twice, so counts cannot add up to rows x top-k");
    add_error_row(
        "sglang every route missing", SGLang, "s.json", sglang_record("////////////////////////////////"),
        "in/s.json: sample s#0: every route is missing (-1 in all 1 rows x top-2 slots at every MoE layer): the "
        "sample has no routing to count");
    add_error_row("sglang bad dtype", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"routed_experts_dtype\": \"float16\", "),
                  "in/s.json: sample s#0: meta_info.routed_experts_dtype is \"float16\", not \"int32\", \"int16\", "
                  "\"uint16\", \"uint8\" or \"int8\"");
    add_error_row("sglang no meta_info", SGLang, "s.json", "[{\"text\": \"a\"}]",
                  "in/s.json: sample s#0: meta_info is missing");
    add_error_row("sglang meta_info a list", SGLang, "s.json", "[{\"meta_info\": [1, 2]}]",
                  "in/s.json: sample s#0: meta_info is a list, not an object");
    add_error_row("sglang no routes", SGLang, "s.jsonl",
                  sglang_record(kRoutesI32) + "\n{\"meta_info\": {\"id\": \"x\"}}\n",
                  "in/s.jsonl: sample s#1: meta_info.routed_experts is missing");
    add_error_row("sglang routes not a string", SGLang, "s.json", "{\"meta_info\": {\"routed_experts\": [1, 2]}}",
                  "in/s.json: sample s#0: meta_info.routed_experts[0] is 1, not a list of layers");
    add_error_row("sglang routes an object", SGLang, "s.json", "{\"meta_info\": {\"routed_experts\": {\"a\": 1}}}",
                  "in/s.json: sample s#0: meta_info.routed_experts is an object, not a base64 string or a nested "
                  "list");
    add_error_row("sglang nested layers", SGLang, "s.json", "{\"meta_info\": {\"routed_experts\": [[[1, 3], [0, 2]]]}}",
                  "in/s.json: sample s#0: meta_info.routed_experts rows have 2 layers, expected num_hidden_layers 3");
    add_error_row(
        "sglang start_len type", SGLang, "s.json", sglang_record(kRoutesI32, "\"routed_experts_start_len\": \"5\", "),
        "in/s.json: sample s#0: meta_info.routed_experts_start_len is \"5\", not an integer in 0..1099511627776");
    add_error_row(
        "sglang map layers", SGLang, "s.json",
        sglang_record(kRoutesI32, "\"physical_to_logical_map\": [[0, 1], [0, 1]], "),
        "in/s.json: sample s#0: meta_info.physical_to_logical_map has 2 layers, expected 3 (the routed_experts "
        "layer axis)");
    add_error_row("sglang map value", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"physical_to_logical_map\": [[0], [0, 1, 2, 3], [0, 1, 7, 3]], "),
                  "in/s.json: sample s#0: meta_info.physical_to_logical_map[2][2] is 7, not an integer in 0..3");
    add_error_row(
        "sglang physical id outside map", SGLang, "s.json",
        sglang_record("AAAAAAAAAAAFAAAABAAAAAEAAAACAAAA",
                      "\"physical_to_logical_map\": [[0], [0, 1, 2, 3], [0, 1, 2, 3]], "),
        "in/s.json: sample s#0: row 0, layer 1: physical expert id 5 is outside meta_info.physical_to_logical_map "
        "(4 slots)");
    add_error_row("sglang empty file", SGLang, "s.json", " \n\t\n", "in/s.json: empty file");
    add_error_row("sglang empty array", SGLang, "s.json", "[]", "in/s.json: no SGLang responses in the file");
    add_error_row(
        "sglang truncated JSON", SGLang, "s.json", "{\"meta_info\": {\"routed_experts\": \"AAAA",
        "in/s.json: malformed JSON at byte 39: syntax error while parsing value - invalid string: missing closing "
        "quote; last read: '\"AAAA'");
    add_error_row(
        "sglang truncated line", SGLang, "s.jsonl", sglang_record(kRoutesI32) + "\n{\"meta_info\": {",
        "in/s.jsonl: line 2: malformed JSON at byte 132: syntax error while parsing object key - unexpected end "
        "of input; expected string literal");
}

/// The vLLM parser's errors.
void add_vllm_error_rows() {
    const QString neither = layer_axis_neither();
    const std::string i4 = base64_decode(kNpyI4, "w");
    const std::string k3 = base64_encode(encode_npy({1, 2, 3}, {0, 1, 2, 0, 1, 2}, "<i4"));
    const std::string ax5 = base64_encode(encode_npy({1, 5, 2}, std::vector<std::int32_t>(10, 0), "<i4"));
    const std::string f4 = base64_encode(
        npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2), }", std::string(16, '\0')));
    const std::string flat = base64_encode(encode_npy({2, 2}, {0, 1, 2, 3}, "<i4"));
    add_error_row("vllm top-k mismatch", VLLM, "v.json", vllm_response("r", {re(kNpyI4), re(k3)}),
                  "in/v.json: sample v#1: routes have top-k 3, model says 2");
    add_error_row("vllm layer axis neither", VLLM, "v.json", vllm_response("r", {re(ax5)}),
                  "in/v.json: sample v#0: choices[0].routed_experts: " + neither);
    add_error_row(
        "vllm non-integer dtype", VLLM, "v.json", vllm_response("r", {re(f4)}),
        "in/v.json: sample v#0: choices[0].routed_experts: unsupported .npy dtype '<f4' (routes need an integer "
        "dtype)");
    add_error_row(
        "vllm truncated npy", VLLM, "v.json", vllm_response("r", {re(base64_encode(i4.substr(0, i4.size() - 2)))}),
        "in/v.json: sample v#0: choices[0].routed_experts: truncated .npy data: shape (1, 2, 2) of <i4 needs 16 "
        "bytes, 14 present");
    add_error_row("vllm 2-D array", VLLM, "v.json", vllm_response("r", {re(flat)}),
                  "in/v.json: sample v#0: choices[0].routed_experts has shape (2, 2), expected [rows][layers][top_k]");
    add_error_row(
        "vllm malformed base64", VLLM, "v.json", vllm_response("r", {re("k05VTVBZ!")}),
        "in/v.json: sample v#0: choices[0].routed_experts: malformed base64: length 9 is not a multiple of 4");
    add_error_row("vllm missing routes", VLLM, "v.json", vllm_response("r", {re(kNpyI4), "\"logprobs\": null"}),
                  "in/v.json: sample v#1: choices[1].routed_experts is missing");
    {
        // 50 generated tokens but 3 completion rows (and 1 prompt row for 1 prompt token).
        std::string ids = "[";
        for (int t = 0; t < 50; ++t)
            ids += (t ? ", " : "") + std::to_string(t);
        ids += "]";
        const std::string rows3 = base64_encode(encode_npy({3, 2, 2}, {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, "<i4"));
        add_error_row(
            "vllm completion rows short of token_ids", VLLM, "v.json",
            vllm_response("r", {re(rows3) + ", \"token_ids\": " + ids},
                          "\"prompt_routed_experts\": \"" + std::string(kNpyI4) + "\", \"prompt_token_ids\": [9], "),
            "in/v.json: sample v#0: prompt_routed_experts has 1 rows and choices[0].routed_experts 3, but "
            "prompt_token_ids + choices[0].token_ids = 1 + 50 tokens (vLLM writes one prompt row per prompt "
            "token and one row per generated token but the last: 1 and 49 rows)");
        add_error_row(
            "vllm rows short of token_ids", VLLM, "v.json",
            vllm_response("r", {re(rows3) + ", \"token_ids\": " + ids}, "\"prompt_token_ids\": [9, 9], "),
            "in/v.json: sample v#0: choices[0].routed_experts has 3 rows, but prompt_token_ids + "
            "choices[0].token_ids = 2 + 50 tokens (vLLM writes one row per token but the last generated one: 51 "
            "rows, or 49 for the completion alone)");
    }
    add_error_row("vllm no choices", VLLM, "v.json", "{\"id\": \"r\"}", "in/v.json: response 0: choices is missing");
    add_error_row("vllm choices an object", VLLM, "v.json", "{\"choices\": {\"a\": 1}}",
                  "in/v.json: response 0: choices is an object, not a list");
    add_error_row("vllm prompt axis mismatch", VLLM, "v.json",
                  vllm_response("r", {re(kNpyI4)}, "\"prompt_routed_experts\": \"" + ax5 + "\", "),
                  "in/v.json: sample v#0: choices[0].routed_experts has shape (1, 2, 2) but prompt_routed_experts has "
                  "(1, 5, 2): layer axis and top-k must match");
    add_error_row("vllm empty", VLLM, "v.json", "", "in/v.json: empty file");
    add_error_row("vllm truncated JSON", VLLM, "v.json", "{\"id\": \"r\", \"choices\": [",
                  "in/v.json: malformed JSON at byte 25: syntax error while parsing value - unexpected end of input; "
                  "expected '[', '{', or a literal");
}

/// The .npy file parser's errors.
void add_npy_error_rows() {
    const QString neither = layer_axis_neither();
    const std::string i4 = base64_decode(kNpyI4, "w");
    add_error_row("npy out of range", NpyFile, "x.npy", encode_npy({1, 2, 2}, {0, 1, 2, 9}, "<i2"),
                  "in/x.npy: sample x: row 0, layer 2: expert id 9 out of range 0..3");
    add_error_row("npy truncated", NpyFile, "x.npy", i4.substr(0, 131),
                  "in/x.npy: sample x: truncated .npy data: shape (1, 2, 2) of <i4 needs 16 bytes, 3 present");
    add_error_row("npy layer axis neither", NpyFile, "x.npy", encode_npy({1, 5, 2}, std::vector<std::int32_t>(10, 0)),
                  "in/x.npy: sample x: " + neither);
    add_error_row("npy no rows", NpyFile, "x.npy", encode_npy({0, 2, 2}, {}), "in/x.npy: sample x: no routed rows");
    add_error_row("npy empty", NpyFile, "x.npy", "", "in/x.npy: empty file");
    add_error_row("npy every route missing", NpyFile, "x.npy",
                  encode_npy({2, 2, 2}, std::vector<std::int32_t>(8, -1), "<i2"),
                  "in/x.npy: sample x: every route is missing (-1 in all 2 rows x top-2 slots at every MoE layer): the "
                  "sample has no routing to count");
}

/// The NeMo-RL nrlre1 parser's errors.
void add_nemo_error_rows() {
    const QString neither = layer_axis_neither();
    add_error_row("nemo dtype", Nemo, "n.txt", "nrlre1:float32:1x1x2:AAAAAAAAAAA=",
                  "in/n.txt: sample n#0 (line 1): dtype 'float32' is not one of int8, int16, int32");
    add_error_row("nemo byte count", Nemo, "n.txt",
                  "nrlre1:int16:3x1x2:AAABAAIAAwAAAAEA\n\nnrlre1:int16:2x1x2:AAABAAIA\n",
                  "in/n.txt: sample n#1 (line 3): 6 bytes of data, expected 2x1x2 x 2 = 8 bytes (int16)");
    add_error_row("nemo prefix", Nemo, "n.txt", "nrlre2:int16:2x1x2:AAABAAIAAwA=",
                  "in/n.txt: sample n#0 (line 1): is not 'nrlre1:<dtype>:<S>x<L>x<K>:<base64>'");
    add_error_row("nemo shape", Nemo, "n.txt",
                  "nrlre1:int16:2x1:AAABAAIAAwA=", "in/n.txt: sample n#0 (line 1): shape '2x1' is not <S>x<L>x<K>");
    add_error_row("nemo base64", Nemo, "n.txt", "nrlre1:int16:2x1x2:AAA*AAIAAwA=",
                  "in/n.txt: sample n#0 (line 1): malformed base64 at offset 3: unexpected character '*'");
    add_error_row("nemo last row missing", Nemo, "n.txt", "nrlre1:int8:1x1x2://8=",
                  "in/n.txt: sample n#0 (line 1): last row (row 0) at layer position 0 is not the default route [0, 1] "
                  "that NeMo-RL writes for the final token; not a NeMo-RL routed_experts array");
    add_error_row("nemo only the default row", Nemo, "n.txt", "nrlre1:int8:1x1x2:AAE=",
                  "in/n.txt: sample n#0 (line 1): no routed rows (only the default route row)");
    add_error_row("nemo negative", Nemo, "n.txt", "nrlre1:int8:2x1x2:/v8AAQ==",
                  "in/n.txt: sample n#0: row 0, layer 1: negative expert id -2 (only -1 marks a missing route)");
    add_error_row(
        "nemo layer axis", Nemo, "n.txt", "nrlre1:int8:1x3x2:AAAAAAAA",
        "in/n.txt: sample n#0 (line 1): layer axis has 3 entries, matching neither the model's 2 decoder layers "
        "nor its 1 MoE layers");
    add_error_row("nemo empty", Nemo, "n.txt", "\n\n", "in/n.txt: empty file");
}

/// The nested JSON parser's errors.
void add_nested_json_error_rows() {
    const QString neither = layer_axis_neither();
    add_error_row("nested width", Nested, "j.json", "[[[1,3],[0,2]],[[3],[2,1]]]",
                  "in/j.json: sample j: row 1, layer 0 has 1 expert ids, expected top-k 2");
    add_error_row("nested width jsonl", Nested, "j.jsonl",
                  "[[[1,3],[0,2]]]\n[[[1,3],[0,2]],[[3,2],[2,1]],[[0,1],[0,1,2]]]",
                  "in/j.jsonl: sample j#1: row 2, layer 1 has 3 expert ids, expected top-k 2");
    add_error_row("nested layer count", Nested, "j.json", "[[[1,3],[0,2]],[[3,2]]]",
                  "in/j.json: sample j: row 1 has 1 layers, expected 2 (as row 0)");
    add_error_row("nested float", Nested, "j.json", "[[[1.5,3],[0,2]]]",
                  "in/j.json: sample j: row 0, layer 0, slot 0: expert id 1.5 is not an integer");
    add_error_row("nested string", Nested, "j.json", "[[[1,\"3\"],[0,2]]]",
                  "in/j.json: sample j: row 0, layer 0, slot 1: expected an expert id, found a string");
    add_error_row("nested flat row", Nested, "j.json", "[[1,3]]",
                  "in/j.json: sample j: row 0, layer 0 is a number, expected a list of expert ids");
    add_error_row("nested huge id", Nested, "j.json", "[[[1,3],[0,4294967296]]]",
                  "in/j.json: sample j: row 0, layer 1, slot 1: expert id 4294967296 does not fit int32");
    add_error_row("nested out of range", Nested, "j.json", "[[[1,3],[0,4]]]",
                  "in/j.json: sample j: row 0, layer 2: expert id 4 out of range 0..3");
    add_error_row("nested negative", Nested, "j.json", "[[[1,3],[-3,2]]]",
                  "in/j.json: sample j: row 0, layer 2: negative expert id -3 (only -1 marks a missing route)");
    add_error_row(
        "nested every route missing", Nested, "j.json", "[[[-1,-1],[-1,-1]]]",
        "in/j.json: sample j: every route is missing (-1 in all 1 rows x top-2 slots at every MoE layer): the "
        "sample has no routing to count");
    add_error_row(
        "nested duplicate", Nested, "j.json", "[[[1,3],[0,2]],[[1,1],[0,2]]]",
        "in/j.json: sample j: row 1, layer 1: expert 1 listed twice, so counts cannot add up to rows x top-k");
    add_error_row("nested layer axis neither", Nested, "j.json", "[[[1,3],[0,2],[0,1],[0,1],[0,1]]]",
                  "in/j.json: sample j: " + neither);
    add_error_row("nested truncated", Nested, "j.json", "[[[1,3],[0,2]],[[3,2",
                  "in/j.json: malformed JSON at byte 21: syntax error while parsing array - unexpected end of input; "
                  "expected ']'");
    add_error_row("nested truncated line", Nested, "j.jsonl", "[[[1,3],[0,2]]]\n[[[1,3]",
                  "in/j.jsonl: line 2: malformed JSON at byte 24: syntax error while parsing array - unexpected end of "
                  "input; expected ']'");
    add_error_row("nested empty", Nested, "j.json", "", "in/j.json: empty file");
    add_error_row("nested no data", Nested, "j.json", "{\"dtype\": \"int32\"}",
                  "in/j.json: sample j: object has no \"data\" list");
    add_error_row("nested data not list", Nested, "j.json", "{\"data\": 5}",
                  "in/j.json: sample j: \"data\" is not a list");
    add_error_row("nested dtype", Nested, "j.json", "{\"data\": [[[1,3],[0,2]]], \"dtype\": \"float32\"}",
                  "in/j.json: sample j: dtype 'float32' is not an integer type");
    add_error_row(
        "nested scalar", Nested, "j.json", "5",
        "in/j.json: sample j: expected a [rows][layers][top_k] list or an object with \"data\", found a number");
    add_error_row("nested no rows", Nested, "j.json", "[]", "in/j.json: sample j: no routed rows");
}

/// Ids, groups, dtypes and map entries of the wrong JSON type, deeply nested ones included.
void add_deep_value_error_rows() {
    // Breaker report: deeply nested values where an id, group or dtype belongs are refused
    // without serializing them (that recursion overflowed the stack).
    const std::string deep = deep_list(100000), deep_obj = deep_object(100000);
    add_error_row(
        "sglang deep dtype", SGLang, "s.json", sglang_record(kRoutesI32, "\"routed_experts_dtype\": " + deep + ", "),
        "in/s.json: sample s#0: meta_info.routed_experts_dtype is a list, not \"int32\", \"int16\", \"uint16\", "
        "\"uint8\" or \"int8\"");
    add_error_row("sglang dtype number", SGLang, "s.json", sglang_record(kRoutesI32, "\"routed_experts_dtype\": 4, "),
                  "in/s.json: sample s#0: meta_info.routed_experts_dtype is 4, not \"int32\", \"int16\", \"uint16\", "
                  "\"uint8\" or \"int8\"");
    add_error_row("sglang dtype control chars", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"routed_experts_dtype\": \"in\\nt32\", "),
                  "in/s.json: sample s#0: meta_info.routed_experts_dtype is \"in\\nt32\", not \"int32\", \"int16\", "
                  "\"uint16\", \"uint8\" or \"int8\"");
    add_error_row("sglang deep meta id", SGLang, "s.json", sglang_record(kRoutesI32, "\"id\": " + deep_obj + ", "),
                  "in/s.json: sample s#0: meta_info.id is an object, not a string or an integer");
    add_error_row("sglang deep rid", SGLang, "s.json", sglang_record(kRoutesI32, "", "\"rid\": " + deep + ", "),
                  "in/s.json: sample s#0: rid is a list, not a string or an integer");
    add_error_row("sglang deep record id", SGLang, "s.json", sglang_record(kRoutesI32, "", "\"id\": " + deep + ", "),
                  "in/s.json: sample s#0: id is a list, not a string or an integer");
    add_error_row("sglang deep group", SGLang, "s.json", sglang_record(kRoutesI32, "", "\"group\": " + deep_obj + ", "),
                  "in/s.json: sample s#0: group is an object, not a string or an integer");
    add_error_row("sglang float group_id", SGLang, "s.json", sglang_record(kRoutesI32, "", "\"group_id\": 1.5, "),
                  "in/s.json: sample s#0: group_id is 1.5, not a string or an integer");
    add_error_row("sglang boolean id", SGLang, "s.json", sglang_record(kRoutesI32, "\"id\": true, "),
                  "in/s.json: sample s#0: meta_info.id is true, not a string or an integer");
    add_error_row(
        "sglang deep map entry", SGLang, "s.json",
        sglang_record(kRoutesI32, "\"physical_to_logical_map\": [[0], [0, 1, " + deep + ", 3], [0, 1, 2, 3]], "),
        "in/s.json: sample s#0: meta_info.physical_to_logical_map[1][2] is a list, not an integer in 0..3");
    add_error_row(
        "sglang huge map entry", SGLang, "s.json",
        sglang_record(kRoutesI32,
                      "\"physical_to_logical_map\": [[0], [0, 1, 18446744073709551615, 3], [0, 1, 2, 3]], "),
        "in/s.json: sample s#0: meta_info.physical_to_logical_map[1][2] is 18446744073709551615, not an integer in "
        "0..3");
    add_error_row("sglang string map entry", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"physical_to_logical_map\": [[0], [0, 1, \"" + std::string(200, 'x') +
                                                "\", 3], [0, 1, 2, 3]], "),
                  QString::fromStdString("in/s.json: sample s#0: meta_info.physical_to_logical_map[1][2] is \"" +
                                         std::string(80, 'x') + "...\", not an integer in 0..3"));
    add_error_row("vllm deep id", VLLM, "v.json", "{\"id\": " + deep + ", \"choices\": [{" + re(kNpyI4) + "}]}",
                  "in/v.json: response 0: id is a list, not a string or an integer");
}

/// Token counts and start lengths out of range.
void add_token_count_error_rows() {
    // Token counts: never negative, never beyond the sample (bug 8), start_len within the prompt (bug 9).
    add_error_row("sglang negative prompt", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"prompt_tokens\": -5, \"completion_tokens\": 20, "),
                  "in/s.json: sample s#0: meta_info.prompt_tokens is -5, not an integer in 0..1099511627776");
    add_error_row("sglang negative prompt alone", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"prompt_tokens\": -5, "),
                  "in/s.json: sample s#0: meta_info.prompt_tokens is -5, not an integer in 0..1099511627776");
    add_error_row("sglang negative completion", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"prompt_tokens\": 1000, \"completion_tokens\": -990, "),
                  "in/s.json: sample s#0: meta_info.completion_tokens is -990, not an integer in 0..1099511627776");
    add_error_row("sglang prompt beyond the sample", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"prompt_tokens\": 4, "),
                  "in/s.json: sample s#0: prompt length 4 exceeds the sample length t_i = 3");
    add_error_row("sglang prompt int64 max", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"prompt_tokens\": 9223372036854775807, \"completion_tokens\": 1, "),
                  "in/s.json: sample s#0: meta_info.prompt_tokens is 9223372036854775807, not an integer in "
                  "0..1099511627776");
    add_error_row("sglang start_len above prompt", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"prompt_tokens\": 4, \"completion_tokens\": 1, "
                                            "\"routed_experts_start_len\": 10, "),
                  "in/s.json: sample s#0: meta_info.routed_experts_start_len 10 exceeds meta_info.prompt_tokens 4");
    add_error_row("sglang start_len int64 max", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"routed_experts_start_len\": 9223372036854775807, "),
                  "in/s.json: sample s#0: meta_info.routed_experts_start_len is 9223372036854775807, not an integer in "
                  "0..1099511627776");
    add_error_row(
        "sglang start_len uint64", SGLang, "s.json",
        sglang_record(kRoutesI32, "\"routed_experts_start_len\": 18446744073709551615, "),
        "in/s.json: sample s#0: meta_info.routed_experts_start_len is 18446744073709551615, not an integer in "
        "0..1099511627776");
    add_error_row(
        "sglang start_len negative", SGLang, "s.json", sglang_record(kRoutesI32, "\"routed_experts_start_len\": -3, "),
        "in/s.json: sample s#0: meta_info.routed_experts_start_len is -3, not an integer in 0..1099511627776");
    add_error_row("vllm negative usage", VLLM, "v.json",
                  vllm_response("r", {re(kNpyI4)}, "\"usage\": {\"prompt_tokens\": -3}, "),
                  "in/v.json: response 0: usage.prompt_tokens is -3, not an integer in 0..1099511627776");
    add_error_row("vllm usage beyond the sample", VLLM, "v.json",
                  vllm_response("r", {re(kNpyI4)}, "\"usage\": {\"prompt_tokens\": 1000000000000}, "),
                  "in/v.json: sample v#0: prompt length 1000000000000 exceeds the sample length t_i = 2");
    add_error_row("vllm usage not an object", VLLM, "v.json", vllm_response("r", {re(kNpyI4)}, "\"usage\": 5, "),
                  "in/v.json: response 0: usage is 5, not an object");
}

/// Number overflows and repeated keys, in the parsers' words.
void add_json_library_error_rows() {
    // Raw library errors never reach the user (bug 14); repeated keys are not silently merged.
    add_error_row("sglang number overflow", SGLang, "s.json", sglang_record(kRoutesI32, "\"x\": 1e400, "),
                  "in/s.json: malformed JSON: number overflow parsing '1e400' (field meta_info.x)");
    add_error_row("sglang number overflow line", SGLang, "s.jsonl",
                  sglang_record(kRoutesI32) + "\n" + sglang_record(kRoutesI32, "\"x\": -1e999, ") + "\n",
                  "in/s.jsonl: line 2: malformed JSON: number overflow parsing '-1e999' (field meta_info.x)");
    add_error_row("sglang duplicate key", SGLang, "s.json",
                  "{\"meta_info\": {\"routed_experts\": \"" + std::string(kRoutesI32) + "\", \"routed_experts\": \"" +
                      kRoutesU8 + "\"}}",
                  "in/s.json: malformed JSON: duplicate key 'routed_experts' in one object");
    add_error_row("vllm duplicate key", VLLM, "v.json", "{\"id\": \"a\", \"id\": \"b\", \"choices\": []}",
                  "in/v.json: malformed JSON: duplicate key 'id' in one object");
    add_error_row("nested number overflow", Nested, "j.json", "[[[1e400,1],[0,2]]]",
                  "in/j.json: malformed JSON at byte 8: number overflow parsing '1e400'");
}

/// Fields of the SGLang, vLLM, Megatron-LM and NeMo-RL JSON readers that are missing, of the wrong
/// type or out of range: JsonField's wording, naming the file, the response, record or sample, and the
/// field.
void add_json_field_error_rows() {
    add_error_row("sglang record a number", SGLang, "s.json", "[5]", "in/s.json: sample s#0 is 5, not an object");
    add_error_row("sglang meta_info null", SGLang, "s.json", R"({"meta_info": null})",
                  "in/s.json: sample s#0: meta_info is null, not an object");
    add_error_row("sglang routes null", SGLang, "s.json", R"({"meta_info": {"routed_experts": null}})",
                  "in/s.json: sample s#0: meta_info.routed_experts is null, not a base64 string or a nested list");
    add_error_row("sglang map a number", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"physical_to_logical_map\": 5, "),
                  "in/s.json: sample s#0: meta_info.physical_to_logical_map is 5, not a [layers][physical slots] list");
    add_error_row("sglang map row empty", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"physical_to_logical_map\": [[0], [], [0, 1, 2, 3]], "),
                  "in/s.json: sample s#0: meta_info.physical_to_logical_map[1] is [], not a non-empty list of expert "
                  "ids");
    add_error_row("sglang map row a number", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"physical_to_logical_map\": [[0], 5, [0, 1, 2, 3]], "),
                  "in/s.json: sample s#0: meta_info.physical_to_logical_map[1] is 5, not a non-empty list of expert "
                  "ids");
    add_error_row("sglang map entry a float", SGLang, "s.json",
                  sglang_record(kRoutesI32, "\"physical_to_logical_map\": [[0], [0, 1.0, 2, 3], [0, 1, 2, 3]], "),
                  "in/s.json: sample s#0: meta_info.physical_to_logical_map[1][1] is 1.0, not an integer in 0..3");
    add_error_row("sglang record-level map value", SGLang, "s.json",
                  sglang_record(kRoutesI32, "", "\"physical_to_logical_map\": [[0], [0, 1, 2, 3], [0, 1, 9, 3]], "),
                  "in/s.json: sample s#0: physical_to_logical_map[2][2] is 9, not an integer in 0..3");
    add_error_row("vllm response a list", VLLM, "v.json", "[[1]]", "in/v.json: response 0 is a list, not an object");
    add_error_row("vllm choice a number", VLLM, "v.json", R"({"id": "r", "choices": [5]})",
                  "in/v.json: sample v#0: choices[0] is 5, not an object");
    add_error_row("vllm routes a number", VLLM, "v.json", R"({"choices": [{"routed_experts": 5}]})",
                  "in/v.json: sample v#0: choices[0].routed_experts is 5, not a base64 string or a nested list");
    add_error_row("vllm token_ids a number", VLLM, "v.json", vllm_response("r", {re(kNpyI4) + ", \"token_ids\": 3"}),
                  "in/v.json: sample v#0: choices[0].token_ids is 3, not a list of token ids");
    add_error_row("vllm prompt_token_ids a string", VLLM, "v.json",
                  vllm_response("r", {re(kNpyI4)}, "\"prompt_token_ids\": \"ab\", "),
                  "in/v.json: response 0: prompt_token_ids is \"ab\", not a list of token ids");
    add_error_row("vllm completion_tokens a fraction", VLLM, "v.json",
                  vllm_response("r", {re(kNpyI4)}, "\"usage\": {\"completion_tokens\": 2.5}, "),
                  "in/v.json: response 0: usage.completion_tokens is 2.5, not an integer in 0..1099511627776");
    add_error_row("vllm nested id a fraction", VLLM, "v.json",
                  R"({"choices": [{"routed_experts": [[[0, 1.5], [2, 3]]]}]})",
                  "in/v.json: sample v#0: choices[0].routed_experts[0][0][1] is 1.5, not an integer in "
                  "-2147483648..2147483647");
    add_error_row("vllm nested layer a number", VLLM, "v.json", R"({"choices": [{"routed_experts": [[[0, 1], 7]]}]})",
                  "in/v.json: sample v#0: choices[0].routed_experts[0][1] is 7, not a list of expert ids");
    add_error_row("megatron record a number", Megatron, "m.json", "[5]", "in/m.json: record 0 is 5, not an object");
    add_error_row("megatron choices a number", Megatron, "m.json", R"({"choices": 5})",
                  "in/m.json: record 0: choices is 5, not a list");
    add_error_row("megatron id a fraction", Megatron, "m.json", R"({"id": 1.5, "choices": []})",
                  "in/m.json: record 0: id is 1.5, not a string or an integer");
    add_error_row("megatron ndarray body a list", Megatron, "m.json",
                  R"({"choices": [{"moe_topk_indices": ["ndarray", [1]]}]})",
                  "in/m.json: sample m#0: choices[0].moe_topk_indices[1] is a list, not the ndarray object {\"data\", "
                  "\"dtype\"}");
    add_error_row("megatron dtype a number", Megatron, "m.json",
                  R"({"choices": [{"moe_topk_indices": {"data": [[[0, 1], [2, 3]]], "dtype": 16}}]})",
                  "in/m.json: sample m#0: choices[0].moe_topk_indices.dtype is 16, not a string");
    add_error_row(
        "megatron generation ids a number", Megatron, "m.json",
        R"({"choices": [{"prompt_token_ids": [1], "generation_token_ids": 2, "moe_topk_indices": [[[0, 1], [2, 3]]]}]})",
        "in/m.json: sample m#0: choices[0].generation_token_ids is 2, not a list of token ids");
    add_error_row("megatron script routes a string", Megatron, "m.json", R"({"17": {"routing_indices": "x"}})",
                  "in/m.json: sample m#0: [\"17\"].routing_indices is \"x\", not a [rows][layers][top_k] list");
    add_error_row("nemo record a number", Nemo, "n.json", "[5]", "in/n.json: record 0 is 5, not an object");
    add_error_row("nemo choices an object", Nemo, "n.json", R"({"choices": {"a": 1}})",
                  "in/n.json: record 0: choices is an object, not a list");
    add_error_row("nemo routes a number", Nemo, "n.json", R"({"choices": [{"message": {"routed_experts": 5}}]})",
                  "in/n.json: sample n#0: choices[0].message.routed_experts is 5, not an 'nrlre1:' string or a "
                  "[rows][layers][top_k] list");
    add_error_row("nemo prompt ids a string", Nemo, "n.json",
                  R"({"choices": [{"message": {"routed_experts": [[[3, 1]], [[0, 1]]], "prompt_token_ids": "x"}}]})",
                  "in/n.json: sample n#0: choices[0].message.prompt_token_ids is \"x\", not a list of token ids");
    add_error_row("nemo output a number", Nemo, "n.json", R"({"response": {"output": 5}})",
                  "in/n.json: record 0: response.output is 5, not a list");
    add_error_row("nemo gym id a list", Nemo, "n.json", R"({"response": {"id": [1], "output": []}})",
                  "in/n.json: record 0: response.id is a list, not a string or an integer");
    add_error_row("nemo gym generation ids a number", Nemo, "n.json",
                  R"({"response": {"output": [{"prompt_token_ids": [1], "generation_token_ids": 5, )"
                  R"("routed_experts": [[[3, 1]], [[0, 1]]]}]}})",
                  "in/n.json: sample n#0: response.output[0].generation_token_ids is 5, not a list of token ids");
}

/// Fields of Megatron-LM's router trace (JSON lines) that are missing, of the wrong type or out of
/// range: JsonField's wording, naming the file, the line and the field.
void add_router_trace_error_rows() {
    const char* const file = "r.jsonl";
    add_error_row("router record a list", RouterTrace, file, R"([{"top_indices": []}])",
                  "in/r.jsonl: line 1 is a list, not an object");
    add_error_row("router layer missing", RouterTrace, file, R"({"step": 0, "top_indices": [[0, 1]]})",
                  "in/r.jsonl: line 1: layer is missing");
    add_error_row("router layer null", RouterTrace, file, R"({"layer": null, "top_indices": [[0, 1]]})",
                  "in/r.jsonl: line 1: layer is null, not an integer in 0..100000");
    add_error_row("router layer a fraction", RouterTrace, file, R"({"layer": 1.5, "top_indices": [[0, 1]]})",
                  "in/r.jsonl: line 1: layer is 1.5, not an integer in 0..100000");
    add_error_row("router layer too large", RouterTrace, file, R"({"layer": 100001, "top_indices": [[0, 1]]})",
                  "in/r.jsonl: line 1: layer is 100001, not an integer in 0..100000");
    add_error_row("router step negative", RouterTrace, file, R"({"layer": 1, "step": -1, "top_indices": [[0, 1]]})",
                  "in/r.jsonl: line 1: step is -1, not an integer in 0..1099511627776");
    add_error_row("router step a string", RouterTrace, file, R"({"layer": 1, "step": "3", "top_indices": [[0, 1]]})",
                  "in/r.jsonl: line 1: step is \"3\", not an integer in 0..1099511627776");
    add_error_row("router top_indices missing", RouterTrace, file,
                  "{\"layer\": 1, \"top_indices\": [[0, 1]]}\n{\"layer\": 2}\n",
                  "in/r.jsonl: line 2: top_indices is missing");
    add_error_row("router top_indices null", RouterTrace, file, R"({"layer": 1, "top_indices": null})",
                  "in/r.jsonl: line 1: top_indices is null, not a list");
    add_error_row("router top_indices a number", RouterTrace, file, R"({"layer": 1, "top_indices": 5})",
                  "in/r.jsonl: line 1: top_indices is 5, not a list");
    add_error_row("router token a number", RouterTrace, file, R"({"layer": 1, "top_indices": [[0, 1], 3]})",
                  "in/r.jsonl: line 1: top_indices[1] is 3, not a list of expert ids");
    add_error_row("router token top-k", RouterTrace, file, R"({"layer": 1, "top_indices": [[0, 1, 2]]})",
                  "in/r.jsonl: line 1: top_indices[0] has 3 expert ids, the model's top-k is 2");
    add_error_row("router expert id a fraction", RouterTrace, file, R"({"layer": 1, "top_indices": [[0, 1.5]]})",
                  "in/r.jsonl: line 1: top_indices[0][1] is 1.5, not an integer in 0..3");
    add_error_row("router expert id a string", RouterTrace, file, R"({"layer": 1, "top_indices": [["0", 1]]})",
                  "in/r.jsonl: line 1: top_indices[0][0] is \"0\", not an integer in 0..3");
    add_error_row("router expert id beyond E", RouterTrace, file,
                  "{\"layer\": 1, \"top_indices\": [[0, 1]]}\n{\"layer\": 2, \"top_indices\": [[0, 4]]}\n",
                  "in/r.jsonl: line 2: top_indices[0][1] is 4, not an integer in 0..3");
    add_error_row("router mtp records skipped", RouterTrace, file,
                  "{\"block\": \"mtp\", \"layer\": \"x\", \"top_indices\": 5}\n"
                  "{\"mtp_idx\": 0, \"layer\": null, \"top_indices\": 5}\n",
                  "in/r.jsonl: no decoder records in the router trace");
}

/// Control characters and long values echoed from the input.
void add_echoed_input_error_rows() {
    // Echoed input is escaped and cut (bugs 16/17).
    add_error_row("nemo dtype with a carriage return", Nemo, "n.txt", "nrlre1:in\rt16:2x1x2:AAABAAIAAwA=",
                  "in/n.txt: sample n#0 (line 1): dtype 'in\\rt16' is not one of int8, int16, int32");
    add_error_row("nemo huge dtype", Nemo, "n.txt", "nrlre1:" + std::string(5000, 'q') + ":2x1x2:AAABAAIAAwA=",
                  QString::fromStdString("in/n.txt: sample n#0 (line 1): dtype '" + std::string(80, 'q') +
                                         "...' is not one of int8, int16, int32"));
    add_error_row("nested dtype bytes", Nested, "j.json", "{\"data\": [[[1,3],[0,2]]], \"dtype\": \"\\u0007x\"}",
                  "in/j.json: sample j: dtype '\\x07x' is not an integer type");
}

} // namespace

class TestImportFormats : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // ---------------------------------------------------------------- base64
    void base64Decode_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("decoded");
        // RFC 4648 §10 test vectors.
        QTest::newRow("empty") << QByteArray("") << QByteArray("");
        QTest::newRow("f") << QByteArray("Zg==") << QByteArray("f");
        QTest::newRow("fo") << QByteArray("Zm8=") << QByteArray("fo");
        QTest::newRow("foo") << QByteArray("Zm9v") << QByteArray("foo");
        QTest::newRow("foob") << QByteArray("Zm9vYg==") << QByteArray("foob");
        QTest::newRow("fooba") << QByteArray("Zm9vYmE=") << QByteArray("fooba");
        QTest::newRow("foobar") << QByteArray("Zm9vYmFy") << QByteArray("foobar");
        QTest::newRow("nemo int16") << QByteArray("AAABAAIAAwA=") << QByteArray("\x00\x00\x01\x00\x02\x00\x03\x00", 8);
        QTest::newRow("high bits") << QByteArray("//79") << QByteArray("\xff\xfe\xfd", 3);
        QTest::newRow("plus slash") << QByteArray("+/+/") << QByteArray("\xfb\xff\xbf", 3);
    }
    void base64Decode() {
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, decoded);
        const std::string out = base64_decode(std::string_view(text.constData(), text.size()), "w");
        QCOMPARE(QByteArray(out.data(), static_cast<int>(out.size())), decoded);
        QCOMPARE(QByteArray::fromStdString(base64_encode(out)), text);
    }
    void base64Errors_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("error");
        QTest::newRow("bad char") << QByteArray("AAAAAAAAAAAAA#AA")
                                  << "ctx: malformed base64 at offset 13: unexpected character '#'";
        QTest::newRow("length") << QByteArray("Zm9vYmF") << "ctx: malformed base64: length 7 is not a multiple of 4";
        QTest::newRow("padding inside") << QByteArray("Zm=vYmFy")
                                        << "ctx: malformed base64 at offset 2: unexpected character '='";
        QTest::newRow("three pads") << QByteArray("Zm9vY===")
                                    << "ctx: malformed base64 at offset 5: unexpected character '='";
        QTest::newRow("only pads") << QByteArray("====")
                                   << "ctx: malformed base64 at offset 0: unexpected character '='";
        QTest::newRow("newline") << QByteArray("Zm9vYmE\n")
                                 << "ctx: malformed base64 at offset 7: unexpected byte 0x0a";
        QTest::newRow("space") << QByteArray("Zm9v Zg=")
                               << "ctx: malformed base64 at offset 4: unexpected character ' '";
        QTest::newRow("url alphabet") << QByteArray("Zm9-")
                                      << "ctx: malformed base64 at offset 3: unexpected character '-'";
        QTest::newRow("pad in last quantum")
            << QByteArray("Zm9vZ=g=") << "ctx: malformed base64 at offset 5: unexpected character '='";
    }
    void base64Errors() {
        QFETCH(QByteArray, text);
        QFETCH(QString, error);
        QCOMPARE(error_of([&] { base64_decode(std::string_view(text.constData(), text.size()), "ctx"); }), error);
    }
    void base64RoundTrip() {
        std::string s;
        for (int n = 0; n < 70; ++n) {
            QCOMPARE(base64_decode(base64_encode(s), "w"), s);
            s.push_back(static_cast<char>((n * 37 + 11) & 0xFF));
        }
    }

    // ---------------------------------------------------------------- .npy
    void npyHandMade_data() {
        QTest::addColumn<QByteArray>("file");
        QTest::addColumn<QString>("shape");
        QTest::addColumn<QString>("values");
        auto add = [](const char* name, const std::string& f, const char* shape, const char* values) {
            QTest::newRow(name) << QByteArray::fromStdString(f) << QString::fromLatin1(shape)
                                << QString::fromLatin1(values);
        };
        add("v1 <i4",
            npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1, 2), }",
                     bytes({0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0})),
            "2 1 2", "0 1 2 3");
        add("v2 <i2",
            npy_file(2, "{'descr': '<i2', 'fortran_order': False, 'shape': (1, 2, 2), }",
                     bytes({5, 0, 0xff, 0xff, 0x10, 0x01, 0, 0})),
            "1 2 2", "5 -1 272 0");
        add("v3 |u1", npy_file(3, "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", bytes({0, 7, 200, 255})),
            "4", "0 7 200 255");
        add("|i1", npy_file(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }", bytes({0xff, 0x7f, 0x80})),
            "3", "-1 127 -128");
        add(">i4 big-endian",
            npy_file(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }",
                     bytes({0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe})),
            "2", "258 -2");
        add(">u2 big-endian",
            npy_file(1, "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }", bytes({0x01, 0x00, 0xff, 0xff})),
            "2", "256 65535");
        add("<u2",
            npy_file(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", bytes({0x01, 0x00, 0xff, 0xff})),
            "2", "1 65535");
        add("<i8",
            npy_file(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                     bytes({3, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})),
            "2", "3 -1");
        add(">i8",
            npy_file(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }",
                     bytes({0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})),
            "1", "2147483647");
        add("<u8",
            npy_file(1, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", bytes({9, 0, 0, 0, 0, 0, 0, 0})),
            "1", "9");
        add("<u4",
            npy_file(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }", bytes({0xff, 0xff, 0xff, 0x7f})),
            "1", "2147483647");
        add("=i2 native", npy_file(1, "{'descr': '=i2', 'fortran_order': False, 'shape': (1,), }", bytes({2, 1})), "1",
            "258");
        // Fortran order: memory holds column-major; result is C order.
        // C array [[0,1,2],[3,4,5]] (2x3) in Fortran memory order: 0 3 1 4 2 5.
        add("fortran 2-D",
            npy_file(1, "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }", bytes({0, 3, 1, 4, 2, 5})), "2 3",
            "0 1 2 3 4 5");
        // C array [[[0,1,2]],[[3,4,5]]] (2x1x3): Fortran memory order 0 3 1 4 2 5 again.
        add("fortran 3-D",
            npy_file(1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 1, 3), }",
                     bytes({0, 0, 3, 0, 1, 0, 4, 0, 2, 0, 5, 0})),
            "2 1 3", "0 1 2 3 4 5");
        add("key order, double quotes",
            npy_file(1, "{\"shape\": (1, 1, 2), \"fortran_order\": False, \"descr\": \"<i4\"}",
                     bytes({1, 0, 0, 0, 2, 0, 0, 0})),
            "1 1 2", "1 2");
        add("empty shape dim", npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (0, 3, 2), }", ""),
            "0 3 2", "");
        add("trailing bytes ignored",
            npy_file(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }", "\x04zz"), "1", "4");
    }
    void npyHandMade() {
        QFETCH(QByteArray, file);
        QFETCH(QString, shape);
        QFETCH(QString, values);
        const NpyArray a = parse_npy(std::string_view(file.constData(), file.size()), "w");
        QStringList s, v;
        for (auto d : a.shape)
            s << QString::number(d);
        for (auto x : a.values)
            v << QString::number(x);
        QCOMPARE(s.join(QLatin1Char(' ')), shape);
        QCOMPARE(v.join(QLatin1Char(' ')), values);
    }
    void npyErrors_data() {
        QTest::addColumn<QByteArray>("file");
        QTest::addColumn<QString>("error");
        const std::string i4 = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1, 2), }";
        const std::string data16 = bytes({0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0});
        auto add = [](const char* name, const std::string& f, const char* error) {
            QTest::newRow(name) << QByteArray::fromStdString(f) << QString::fromLatin1(error);
        };
        add("bad magic", std::string("\x93NUMPZ\x01\x00", 8) + std::string(60, ' '), "w: not an .npy file (bad magic)");
        add("too short", "\x93NUM", "w: not an .npy file (bad magic)");
        add("no header length", std::string("\x93NUMPY\x01\x00\x10", 9), "w: truncated .npy header");
        add("version 4", npy_file(1, i4, data16).replace(6, 1, "\x04"), "w: unsupported .npy version 4.0");
        add("header cut", npy_file(1, i4, data16).substr(0, 40),
            "w: truncated .npy header (declares 118 bytes, 30 present)");
        add("truncated data", npy_file(1, i4, data16.substr(0, 12)),
            "w: truncated .npy data: shape (2, 1, 2) of <i4 needs 16 bytes, 12 present");
        add("float dtype", npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 2), }", data16),
            "w: unsupported .npy dtype '<f4' (routes need an integer dtype)");
        add("bool dtype",
            npy_file(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x00", 2)),
            "w: unsupported .npy dtype '|b1' (routes need an integer dtype)");
        add("structured dtype",
            npy_file(1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", data16),
            "w: unsupported .npy dtype (structured arrays are not routes)");
        add("missing shape", npy_file(1, "{'descr': '<i4', 'fortran_order': False, }", data16),
            "w: bad .npy header: missing 'shape'");
        add("unknown key", npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), 'x': 1}", data16),
            "w: bad .npy header: unexpected key 'x'");
        add("not a dict", npy_file(1, "descr", data16), "w: bad .npy header: expected '{' at offset 0");
        add("bad fortran", npy_file(1, "{'descr': '<i4', 'fortran_order': 0, 'shape': (4,), }", data16),
            "w: bad .npy header: 'fortran_order' is not True or False");
        add("bad shape", npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, x), }", data16),
            "w: bad .npy header: 'shape' holds a non-integer at offset 54");
        add("u4 out of int32",
            npy_file(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }",
                     bytes({1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})),
            "w: .npy value 4294967295 at element 1 does not fit int32");
        add("i8 out of int32",
            npy_file(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
                     bytes({0, 0, 0, 0x80, 0, 0, 0, 0})),
            "w: .npy value 2147483648 at element 0 does not fit int32");
        add("huge shape",
            npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }", ""),
            "w: bad .npy header: shape (4294967296, 4294967296, 2) is too large");
        // Breaker report: a repeated key would silently win; keys and dtypes are echoed escaped.
        add("duplicate shape",
            npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1, 2), 'shape': (1, 1, 2), }", data16),
            "w: bad .npy header: duplicate key 'shape'");
        add("duplicate descr",
            npy_file(1, "{'descr': '<i4', 'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", data16),
            "w: bad .npy header: duplicate key 'descr'");
        add("binary key", npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'x\n\xff': 1}", data16),
            "w: bad .npy header: unexpected key 'x\\n\\xff'");
        add("binary dtype", npy_file(1, "{'descr': '<\x01\x02', 'fortran_order': False, 'shape': (2,), }", data16),
            "w: unsupported .npy dtype '<\\x01\\x02' (routes need an integer dtype)");
    }
    void npyErrors() {
        QFETCH(QByteArray, file);
        QFETCH(QString, error);
        QCOMPARE(error_of([&] { parse_npy(std::string_view(file.constData(), file.size()), "w"); }), error);
    }
    void encodeNpy() {
        // Exact bytes of the v1.0 file numpy writes for np.array([[[0,1]],[[2,3]]], dtype='<i4').
        const std::string f = encode_npy({2, 1, 2}, {0, 1, 2, 3}, "<i4");
        const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1, 2), }";
        QCOMPARE(f.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
        const std::size_t hlen = static_cast<unsigned char>(f[8]) | (static_cast<unsigned char>(f[9]) << 8);
        QCOMPARE(hlen, std::size_t(118));
        QCOMPARE((10 + hlen) % 64, std::size_t(0));
        QCOMPARE(f.substr(10, dict.size()), dict);
        QCOMPARE(f[10 + hlen - 1], '\n');
        QCOMPARE(f.substr(10 + dict.size(), hlen - dict.size() - 1), std::string(hlen - dict.size() - 1, ' '));
        QCOMPARE(f.substr(128), bytes({0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}));
        QCOMPARE(f, npy_file(1, dict, bytes({0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0})));
        // 1-D shape text and narrow / big-endian descrs round trip through the reader.
        const std::string dict1 = "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }";
        QCOMPARE(encode_npy({3}, {1, 2, 3}, "|u1").substr(10, dict1.size()), dict1);
        const std::vector<std::int32_t> v = {0, 1, -1, 127, -128, 5};
        for (const char* d : {"|i1", "<i2", ">i2", "<i4", ">i4", "<i8", ">i8"}) {
            const NpyArray a = parse_npy(encode_npy({2, 3}, v, d), d);
            QCOMPARE(a.descr, std::string(d));
            QCOMPARE(a.values, v);
            QCOMPARE(a.shape, (std::vector<std::int64_t>{2, 3}));
        }
        const std::vector<std::int32_t> u = {0, 1, 255};
        for (const char* d : {"|u1", "<u2", ">u2", "<u4", "<u8"})
            QCOMPARE(parse_npy(encode_npy({3}, u, d), d).values, u);
        QCOMPARE(encode_npy({1}, {0x0102}, ">i2").substr(128), bytes({1, 2}));
        QCOMPARE(error_of([] { encode_npy({1}, {300}, "|u1"); }),
                 QStringLiteral("encode_npy: value 300 at element 0 does not fit |u1"));
        QCOMPARE(error_of([] { encode_npy({1}, {-1}, "<u2"); }),
                 QStringLiteral("encode_npy: value -1 at element 0 does not fit <u2"));
        QCOMPARE(error_of([] { encode_npy({2}, {1}, "<i4"); }),
                 QStringLiteral("encode_npy: shape (2,) holds 2 values, given 1"));
        QCOMPARE(error_of([] { encode_npy({1}, {1}, "<f4"); }), QStringLiteral("encode_npy: unsupported descr '<f4'"));
    }

    // ---------------------------------------------------------------- SGLang
    void sglangSingleObject() {
        const auto m = model3();
        const auto recs =
            run(SGLang,
                source("run.json", sglang_record(kRoutesI32, "\"id\": \"req-7\", \"routed_experts_start_len\": 5, ",
                                                 "\"group\": 12, ")),
                m);
        QCOMPARE(recs.size(), std::size_t(1));
        const SampleInfo& i = recs[0].info;
        QCOMPARE(i.id, std::string("run#0"));
        QCOMPARE(i.request_id, std::string("req-7"));
        QCOMPARE(i.group, std::string("12"));
        QCOMPARE(i.source_file, std::string("in/run.json"));
        QCOMPARE(i.routed_rows, std::int64_t(2));
        QCOMPARE(i.length, std::int64_t(2 + 1 + 5)); // rows + 1 + start_len
        QCOMPARE(i.length_rule, LengthRule::RowsPlusOne);
        QVERIFY(!i.prompt_len);
        QCOMPARE(i.missing_routes, std::int64_t(0));
        QCOMPARE(counts_text(recs[0], m), kCounts);
    }
    void sglangArrayAndLines() {
        const auto m = model3();
        const std::string a = sglang_record(kRoutesI32, "\"prompt_tokens\": 1, \"completion_tokens\": 2, ",
                                            "\"rid\": \"r-a\", \"group_id\": \"g1\", ");
        // prompt_tokens alone never exceeds t_i = rows + 1 (see formatErrors "sglang prompt beyond the sample").
        const std::string b =
            sglang_record(kRoutesU8, "\"routed_experts_dtype\": \"uint8\", \"prompt_tokens\": 3, ", "\"id\": 99, ");
        const std::string c =
            sglang_record(kRoutesI16, "\"routed_experts_dtype\": \"int16\", \"id\": \"m-c\", ", "\"rid\": \"r-c\", ");
        for (const std::string& text : {"[" + a + ",\n " + b + ", " + c + "]", a + "\n" + b + "\r\n\n" + c + "\n"}) {
            const auto recs = run(SGLang, source("batch.jsonl", text), m);
            QCOMPARE(recs.size(), std::size_t(3));
            QCOMPARE(recs[0].info.id, std::string("batch#0"));
            QCOMPARE(recs[1].info.id, std::string("batch#1"));
            QCOMPARE(recs[2].info.id, std::string("batch#2"));
            QCOMPARE(recs[0].info.request_id, std::string("r-a"));
            QCOMPARE(recs[1].info.request_id, std::string("99"));
            QCOMPARE(recs[2].info.request_id, std::string("m-c")); // meta_info.id wins over rid
            QCOMPARE(recs[0].info.group, std::string("g1"));
            QCOMPARE(recs[1].info.group, std::string());
            QCOMPARE(recs[0].info.length, std::int64_t(3)); // explicit: 1 + 2
            QCOMPARE(recs[0].info.length_rule, LengthRule::ExplicitTokens);
            QCOMPARE(recs[0].info.prompt_len, std::optional<std::int64_t>(1));
            QCOMPARE(recs[1].info.length, std::int64_t(3)); // rows + 1: no completion_tokens
            QCOMPARE(recs[1].info.prompt_len, std::optional<std::int64_t>(3));
            for (const auto& r : recs)
                QCOMPARE(counts_text(r, m), kCounts);
        }
    }
    void sglangMissingDenseAndMap() {
        const auto m = model3();
        // sglang-jax style -1 placeholders: row [L0 0,0][L1 1,-1][L2 -1,3].
        auto recs = run(SGLang, source("m.json", sglang_record("AAAAAAAAAAABAAAA//////////8DAAAA")), m);
        QCOMPARE(recs[0].info.missing_routes, std::int64_t(2));
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("0 1 0 0 | 0 0 0 1"));
        QCOMPARE(recs[0].info.routed_rows, std::int64_t(1));
        // Dense layer 0 holds anything ([9,-5]); only MoE axis positions are read.
        recs = run(SGLang, source("d.json", sglang_record("CQAAAPv///8BAAAAAwAAAAAAAAACAAAA")), m);
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("0 1 0 1 | 1 0 1 0"));
        // Physical slots [L1 5,4][L2 1,2] through a [3 layers][6 slots] map.
        const std::string map = "\"physical_to_logical_map\": [[9,9,9,9,9,9],[0,1,2,3,0,3],[3,2,1,0,1,2]], ";
        recs = run(SGLang, source("p.json", sglang_record("AAAAAAAAAAAFAAAABAAAAAEAAAACAAAA", map)), m);
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("1 0 0 1 | 0 1 1 0"));
        recs = run(SGLang, source("p.json", sglang_record("AAAAAAAAAAAFAAAABAAAAAEAAAACAAAA", "", map)), m);
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("1 0 0 1 | 0 1 1 0"));
    }

    // ---------------------------------------------------------------- vLLM
    void vllmChoices() {
        const auto m = model3();
        // One request, two choices: MoE-only '<i2' and '<i4' arrays; a third choice with the
        // all-layers axis ([1 row][3 layers][2]: L0 [0,0] L1 [1,2] L2 [3,0]) built by hand here.
        const std::string all_layers =
            base64_encode(npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3, 2), }",
                                   bytes({0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0})));
        const std::string resp = vllm_response("cmpl-1", {re(kNpyI2), re(kNpyI4), re(all_layers)});
        const auto recs = run(VLLM, source("v.json", resp), m);
        QCOMPARE(recs.size(), std::size_t(3));
        QCOMPARE(recs[0].info.id, std::string("v#0"));
        QCOMPARE(recs[2].info.id, std::string("v#2"));
        for (const auto& r : recs) {
            QCOMPARE(r.info.request_id, std::string("cmpl-1"));
            QCOMPARE(r.info.group, std::string("cmpl-1"));
            QCOMPARE(r.info.length_rule, LengthRule::RowsPlusOne);
        }
        QCOMPARE(recs[0].info.length, std::int64_t(3));
        QCOMPARE(recs[1].info.length, std::int64_t(2));
        QCOMPARE(counts_text(recs[0], m), kCounts);
        QCOMPARE(counts_text(recs[1], m), QStringLiteral("1 1 0 0 | 0 0 1 1"));
        QCOMPARE(counts_text(recs[2], m), QStringLiteral("0 1 1 0 | 1 0 0 1"));
    }
    void vllmSplitModeAndTokens() {
        const auto m = model3();
        // v0.21 split mode: 1 prompt row ('<i4') prepended to the 2 completion rows ('<i2').
        std::string resp = vllm_response("chat-9", {re(kNpyI2)},
                                         "\"prompt_routed_experts\": \"" + std::string(kNpyI4) +
                                             "\", \"usage\": {\"prompt_tokens\": 1, \"completion_tokens\": 2}, ");
        auto recs = run(VLLM, source("s.json", resp), m);
        QCOMPARE(recs[0].info.routed_rows, std::int64_t(3));
        QCOMPARE(recs[0].info.length, std::int64_t(4));
        QCOMPARE(recs[0].info.prompt_len, std::optional<std::int64_t>(1));
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("1 2 1 2 | 1 1 3 1"));
        // Explicit token ids (response prompt_token_ids + choice token_ids) win over rows + 1.
        resp = vllm_response("c2", {re(kNpyI2) + ", \"token_ids\": [7, 8]"}, "\"prompt_token_ids\": [1, 2, 3], ");
        recs = run(VLLM, source("t.json", resp), m);
        QCOMPARE(recs[0].info.length, std::int64_t(5));
        QCOMPARE(recs[0].info.prompt_len, std::optional<std::int64_t>(3));
        QCOMPARE(recs[0].info.length_rule, LengthRule::ExplicitTokens);
        // JSON lines and arrays of responses: k counts choices across the file.
        const std::string r1 = vllm_response("a", {re(kNpyI2), re(kNpyI4)});
        const std::string r2 = vllm_response("b", {re(kNpyI4)});
        for (const std::string& text : {r1 + "\n" + r2 + "\n", "[" + r1 + ",\n" + r2 + "]"}) {
            recs = run(VLLM, source("l.jsonl", text), m);
            QCOMPARE(recs.size(), std::size_t(3));
            QCOMPARE(recs[2].info.id, std::string("l#2"));
            QCOMPARE(recs[1].info.group, std::string("a"));
            QCOMPARE(recs[2].info.group, std::string("b"));
        }
    }

    // ---------------------------------------------------------------- .npy / .npz files
    void npyFile() {
        const auto m = model3();
        const std::string f = base64_decode(kNpyI2, "w");
        auto recs = run(NpyFile, source("sample_3.npy", f), m);
        QCOMPARE(recs.size(), std::size_t(1));
        QCOMPARE(recs[0].info.id, std::string("sample_3"));
        QCOMPARE(recs[0].info.length, std::int64_t(3));
        QCOMPARE(counts_text(recs[0], m), kCounts);
        // Big-endian int32 and little-endian int64 files, MoE-only axis: [[[1,3],[0,2]]].
        const std::string be = npy_file(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (1, 2, 2), }",
                                        bytes({0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 2}));
        recs = run(NpyFile, source("be.npy", be), m);
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("0 1 0 1 | 1 0 1 0"));
        std::string le8;
        for (int v : {1, 3, 0, 2})
            le8 += bytes({v, 0, 0, 0, 0, 0, 0, 0});
        recs = run(NpyFile,
                   source("i8.npy", npy_file(2, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2, 2), }", le8)),
                   m);
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("0 1 0 1 | 1 0 1 0"));
        // Fortran-ordered [rows=2][layers=2][k=2]: C [[[1,3],[0,2]],[[3,2],[2,1]]] in column-major memory.
        const std::string fo = npy_file(1, "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 2, 2), }",
                                        bytes({1, 3, 0, 2, 3, 2, 2, 1}));
        recs = run(NpyFile, source("f.npy", fo), m);
        QCOMPARE(counts_text(recs[0], m), kCounts);
    }
    void npzArchive() {
        const auto m = model3();
        const std::string i2 = base64_decode(kNpyI2, "w"), i4 = base64_decode(kNpyI4, "w");
        const std::string z =
            make_npz({{"first.npy", i4, false}, {"second.npy", i2, true}, {"sub/third.npy", i4, true}});
        QVERIFY(!z.empty());
        const auto recs = run(Npz, source("roll.npz", z), m);
        QCOMPARE(recs.size(), std::size_t(3));
        QCOMPARE(recs[0].info.id, std::string("roll#0"));
        QCOMPARE(recs[1].info.id, std::string("roll#1"));
        QCOMPARE(recs[2].info.id, std::string("roll#2"));
        QCOMPARE(recs[0].info.request_id, std::string("first"));
        QCOMPARE(recs[1].info.request_id, std::string("second"));
        QCOMPARE(recs[2].info.request_id, std::string("sub/third"));
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("1 1 0 0 | 0 0 1 1"));
        QCOMPARE(counts_text(recs[1], m), kCounts);
        QCOMPARE(recs[1].info.length, std::int64_t(3));
        QCOMPARE(recs[2].info.length, std::int64_t(2));
    }
    void npzErrors() {
        const auto m = model3();
        const std::string i4 = base64_decode(kNpyI4, "w");
        const std::string z = make_npz({{"first.npy", i4, false}, {"second.npy", i4, true}});
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", z.substr(0, z.size() / 2)), m); }),
                 QStringLiteral("in/z.npz: not a valid .npz (zip) archive: Not a zip archive"));
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", z.substr(0, z.size() - 3)), m); }),
                 QStringLiteral("in/z.npz: not a valid .npz (zip) archive: Not a zip archive"));
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", ""), m); }), QStringLiteral("in/z.npz: empty file"));
        // Flip the last data byte of the stored entry: libzip's CRC check fails on reading.
        std::string bad = z;
        const std::size_t at = bad.find(i4);
        QVERIFY(at != std::string::npos);
        bad[at + i4.size() - 1] ^= 0x01;
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", bad), m); }),
                 QStringLiteral("in/z.npz: sample z#0: entry 'first.npy': CRC error"));
        // An entry that is not an .npy file, and one with a truncated .npy.
        const std::string junk = make_npz({{"notes.txt", "hello", true}});
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", junk), m); }),
                 QStringLiteral("in/z.npz: sample z#0: entry 'notes.txt': not an .npy file (bad magic)"));
        const std::string cut = make_npz({{"a.npy", i4, false}, {"b.npy", i4.substr(0, i4.size() - 1), true}});
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", cut), m); }),
                 QStringLiteral("in/z.npz: sample z#1: entry 'b.npy': truncated .npy data: shape (1, 2, 2) of <i4 "
                                "needs 16 bytes, 15 present"));
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", make_npz({})), m); }),
                 QStringLiteral("in/z.npz: the .npz archive holds no arrays"));
    }

    // ---------------------------------------------------------------- NeMo-RL
    void nemoReferenceVector() {
        const auto m = model1();
        // The codec's test vector decodes to [[[0, 1]], [[2, 3]]]; NeMo-RL's samples end in the
        // default route [0, 1] (pad_and_align_routed_expert_indices), which [2, 3] is not.
        QCOMPARE(error_of([&] { run(Nemo, source("n.txt", "nrlre1:int16:2x1x2:AAABAAIAAwA=\n"), m); }),
                 QStringLiteral("in/n.txt: sample n#0 (line 1): last row (row 1) at layer position 0 is not the "
                                "default route [0, 1] that NeMo-RL writes for the final token; not a NeMo-RL "
                                "routed_experts array"));
        // The same routes as NeMo-RL writes them: S = 3 tokens, rows 0..1 routes, row 2 = [0, 1].
        const auto recs = run(Nemo, source("n.txt", "nrlre1:int16:3x1x2:AAABAAIAAwAAAAEA\n"), m);
        QCOMPARE(recs.size(), std::size_t(1));
        QCOMPARE(recs[0].info.id, std::string("n#0"));
        QCOMPARE(recs[0].info.routed_rows, std::int64_t(2));
        QCOMPARE(recs[0].info.length, std::int64_t(3));
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("1 1 1 1"));
    }
    void nemoMissingAndLines() {
        const auto m = model1();
        // int8 4x1x2 [[0,1]],[[2,-1]],[[-1,-1]],[[0,1]]: the last row is the default route (dropped),
        // the -1 slots of rows 1 and 2 are missing routes of real tokens (t_i = S = 4).
        // int32 2x2x2 all-layers axis [L0 0,0][L1 3,2], then the default row.
        const std::string text = "nrlre1:int8:4x1x2:AAEC////AAE=\n\n  "
                                 "nrlre1:int32:2x2x2:AAAAAAAAAAADAAAAAgAAAAAAAAABAAAAAAAAAAEAAAA=  \r\n"
                                 "nrlre1:int16:3x1x2:AAABAAIAAwAAAAEA";
        const auto recs = run(Nemo, source("n.nrlre1", text), m);
        QCOMPARE(recs.size(), std::size_t(3));
        QCOMPARE(recs[0].info.routed_rows, std::int64_t(3));
        QCOMPARE(recs[0].info.length, std::int64_t(4));
        QCOMPARE(recs[0].info.missing_routes, std::int64_t(3));
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("1 1 1 0"));
        QCOMPARE(recs[1].info.id, std::string("n#1"));
        QCOMPARE(recs[1].info.length, std::int64_t(2));
        QCOMPARE(counts_text(recs[1], m), QStringLiteral("0 0 1 1"));
        QCOMPARE(recs[2].info.id, std::string("n#2"));
        QCOMPARE(counts_text(recs[2], m), QStringLiteral("1 1 1 1"));
    }

    // ---------------------------------------------------------------- nested JSON
    void nestedJson() {
        const auto m = model3();
        auto recs = run(Nested, source("j.json", "[[[0,0],[1,3],[0,2]],[[0,0],[3,2],[2,1]]]"), m);
        QCOMPARE(recs.size(), std::size_t(1));
        QCOMPARE(recs[0].info.id, std::string("j"));
        QCOMPARE(recs[0].info.length, std::int64_t(3));
        QCOMPARE(counts_text(recs[0], m), kCounts);
        // Pretty-printed single document (spans lines, still one sample), MoE-only axis.
        recs = run(Nested, source("j.json", "[\n  [[1, 3], [0, 2]],\n  [[3, 2], [2, 1]]\n]\n"), m);
        QCOMPARE(recs.size(), std::size_t(1));
        QCOMPARE(recs[0].info.id, std::string("j"));
        QCOMPARE(counts_text(recs[0], m), kCounts);
        // A one-line ".jsonl" file is JSON lines all the same: id "<stem>#0".
        recs = run(Nested, source("one.jsonl", "[[[1,3],[0,2]],[[3,2],[2,1]]]\n"), m);
        QCOMPARE(recs.size(), std::size_t(1));
        QCOMPARE(recs[0].info.id, std::string("one#0"));
        // JSON lines: arrays and Megatron {"data", "dtype"} objects; null and -1 are missing.
        recs = run(Nested,
                   source("j.jsonl", "[[[1,3],[0,2]],[[3,2],[2,1]]]\n"
                                     "{\"dtype\": \"int32\", \"shape\": [1, 2, 2], \"data\": [[[1,null],[-1,2]]]}\n"
                                     "{\"data\": [[[0,1],[2,3]]], \"meta\": {\"x\": [1, {\"y\": 2}]}}\n"),
                   m);
        QCOMPARE(recs.size(), std::size_t(3));
        QCOMPARE(recs[0].info.id, std::string("j#0"));
        QCOMPARE(recs[1].info.id, std::string("j#1"));
        QCOMPARE(recs[2].info.id, std::string("j#2"));
        QCOMPARE(counts_text(recs[0], m), kCounts);
        QCOMPARE(recs[1].info.missing_routes, std::int64_t(2));
        QCOMPARE(counts_text(recs[1], m), QStringLiteral("0 1 0 0 | 0 0 1 0"));
        QCOMPARE(counts_text(recs[2], m), QStringLiteral("1 1 0 0 | 0 0 1 1"));
        QCOMPARE(recs[2].info.length, std::int64_t(2));
    }

    // ---------------------------------------------------------------- hostile input (breaker report)
    void printableEscapes() {
        QCOMPARE(printable("plain text, quotes ' \" ok"), std::string("plain text, quotes ' \" ok"));
        QCOMPARE(printable("a\nb\r\tc"), std::string("a\\nb\\r\\tc"));
        QCOMPARE(printable(std::string("x\0y\x7f\x1b", 5)), std::string("x\\x00y\\x7f\\x1b"));
        QCOMPARE(printable("\xff\xfe ok"), std::string("\\xff\\xfe ok"));                         // not UTF-8
        QCOMPARE(printable("caf\xc3\xa9 \xe2\x82\xac"), std::string("caf\xc3\xa9 \xe2\x82\xac")); // UTF-8 kept
        QCOMPARE(printable("end \xc3"), std::string("end \\xc3"));                                // cut sequence
        QCOMPARE(printable("\xed\xa0\x80"), std::string("\\xed\\xa0\\x80"));                      // surrogate
        QCOMPARE(printable("\xef\xbb\xbfid"), std::string("\\xef\\xbb\\xbfid"));                  // invisible BOM shown
        QCOMPARE(printable(std::string(80, 'a')), std::string(80, 'a'));
        QCOMPARE(printable(std::string(81, 'a')), std::string(80, 'a') + "...");
        std::string newlines;
        for (int i = 0; i < 80; ++i)
            newlines += "\\n";
        QCOMPARE(printable(std::string(1000000, '\n')), newlines + "..."); // a megabyte of line breaks
        QCOMPARE(printable("abcdef", 3), std::string("abc..."));
        QCOMPARE(json_brief(nlohmann::json::parse(deep_list(50000))), std::string("a list"));
        QCOMPARE(json_brief(nlohmann::json::parse(deep_object(50000))), std::string("an object"));
        QCOMPARE(json_brief(nlohmann::json("a\nb")), std::string("\"a\\nb\""));
        QCOMPARE(json_brief(nlohmann::json(7)), std::string("7"));
    }
    void byteOrderMarkIsSkipped() {
        const auto m = model3();
        const std::string bom = "\xEF\xBB\xBF";
        auto recs = run(SGLang, source("s.json", bom + sglang_record(kRoutesI32)), m);
        QCOMPARE(recs.size(), std::size_t(1));
        QCOMPARE(counts_text(recs[0], m), kCounts);
        recs = run(SGLang, source("s.jsonl", bom + sglang_record(kRoutesI32) + "\n" + sglang_record(kRoutesI32) + "\n"),
                   m);
        QCOMPARE(recs.size(), std::size_t(2));
        recs = run(VLLM, source("v.json", bom + vllm_response("r", {re(kNpyI2)})), m);
        QCOMPARE(counts_text(recs[0], m), kCounts);
        recs = run(Nested, source("j.json", bom + "[[[1,3],[0,2]],[[3,2],[2,1]]]"), m);
        QCOMPARE(counts_text(recs[0], m), kCounts);
        recs = run(Nemo, source("n.txt", bom + "nrlre1:int16:3x1x2:AAABAAIAAwAAAAEA\n"), model1());
        QCOMPARE(counts_text(recs[0], model1()), QStringLiteral("1 1 1 1"));
        // Byte offsets in messages still count from the start of the file (BOM included).
        QCOMPARE(error_of([&] { run(Nested, source("j.json", bom + "[[[1,3],[0,2]],[[3,2"), m); }),
                 QStringLiteral("in/j.json: malformed JSON at byte 24: syntax error while parsing array - unexpected "
                                "end of input; expected ']'"));
    }
    void npzDeclaredSizes() {
        const auto m = model3();
        const std::string i4 = base64_decode(kNpyI4, "w"); // 144 bytes
        const std::string deflated = make_npz({{"a.npy", i4, true}});
        const std::string stored = make_npz({{"a.npy", i4, false}});
        QVERIFY(!deflated.empty() && !stored.empty());
        const std::uint32_t packed = compressed_size(deflated, "a.npy");
        QVERIFY(packed > 0 && packed < i4.size());
        const QString where = QStringLiteral("in/z.npz: sample z#0: entry 'a.npy': ");
        // Beyond the per-entry limit: refused before anything is allocated or read.
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", with_declared_size(deflated, "a.npy", 0xFFFFFFF0u)), m); }),
                 where + QStringLiteral("declares 4294967280 bytes, more than the 2147483648-byte limit per entry"));
        // Within the limit, but beyond what deflate can expand its compressed bytes to.
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", with_declared_size(deflated, "a.npy", 200000000u)), m); }),
                 where + QStringLiteral("declares 200000000 bytes from %1 bytes in the archive, more than compression "
                                        "can expand to")
                             .arg(packed));
        // A stored entry holds exactly its compressed bytes.
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", with_declared_size(stored, "a.npy", 145u)), m); }),
                 where + QStringLiteral("declares 145 bytes from 144 bytes in the archive, more than a stored entry "
                                        "holds"));
        // Plausible lies are caught by reading: memory follows the data, never the declared size.
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", with_declared_size(deflated, "a.npy", 150u)), m); }),
                 where + QStringLiteral("declares 150 bytes, more than the 144 its .npy header accounts for (shape "
                                        "(1, 2, 2) of <i4)"));
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", with_declared_size(deflated, "a.npy", 10u)), m); }),
                 where + QStringLiteral("holds more data than its declared size"));
        // An array over the per-sample limit is refused from its header, before its data is read.
        const std::string big = npy_file(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (536870913, 1, 1), }",
                                         std::string(64, '\0'));
        QCOMPARE(error_of([&] {
                     run(Npz, source("z.npz", make_npz({{"a.npy", big, true}})), m);
                 }),
                 where + QStringLiteral("shape (536870913, 1, 1) holds 536870913 values, more than the per-sample "
                                        "limit of 536870912"));
        // Entry names are echoed escaped.
        const std::string odd = make_npz({{"a\nb.npy", "junk", false}});
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", odd), m); }),
                 QStringLiteral("in/z.npz: sample z#0: entry 'a\\nb.npy': not an .npy file (bad magic)"));
    }

    // Decompression bombs: an entry is refused from its .npy header and the zip directory's sizes,
    // before its data is inflated.
    void npzBombs() {
        const auto m = model3();
        const std::string i4 = base64_decode(kNpyI4, "w"); // 144 bytes: header 128 + (1, 2, 2) <i4
        const QString where = QStringLiteral("in/z.npz: sample z#0: entry 'a.npy': ");
        // A valid array followed by 64 MiB of zeros (deflated to ~64 KiB).
        const std::string padded = make_npz({{"a.npy", i4 + std::string(std::size_t(64) << 20, '\0'), true}});
        QVERIFY(!padded.empty() && padded.size() < (std::size_t(1) << 20));
        QCOMPARE(error_of([&] { run(Npz, source("z.npz", padded), m); }),
                 where + QStringLiteral("declares 67109008 bytes, more than the 144 its .npy header accounts for "
                                        "(shape (1, 2, 2) of <i4)"));
        // Stored trailing bytes are refused the same way.
        QCOMPARE(error_of([&] {
                     run(Npz, source("z.npz", make_npz({{"a.npy", i4 + "xx", false}})), m);
                 }),
                 where + QStringLiteral("declares 146 bytes, more than the 144 its .npy header accounts for "
                                        "(shape (1, 2, 2) of <i4)"));
        // A v2 header declaring 1 GiB of dictionary: read no further than 128 KiB.
        std::string endless = "\x93NUMPY\x02";
        endless.push_back('\0');
        endless += std::string("\x00\x00\x00\x40", 4) + "{'descr': '<i4', " + std::string(std::size_t(1) << 20, ' ');
        QCOMPARE(error_of([&] {
                     run(Npz, source("z.npz", make_npz({{"a.npy", endless, true}})), m);
                 }),
                 where + QStringLiteral(".npy header is longer than 131072 bytes"));
        // A legit-shaped array of one repeated value: 84 MB of zero routes deflate to about 82 KB, within
        // deflate's own 1032:1, but no routing data compresses past 100:1 (it would import as one
        // sample of 3.5 million tokens from a file of 82 KB).
        auto npy = [](const std::string& descr, const std::string& shape, std::size_t data_bytes) {
            std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
            const std::size_t total = (10 + dict.size() + 1 + 63) / 64 * 64; // preamble 10, '\n', 64-aligned
            dict += std::string(total - 10 - dict.size() - 1, ' ') + "\n";
            std::string out = "\x93NUMPY\x01";
            out.push_back('\0');
            out.push_back(static_cast<char>(dict.size() & 0xff));
            out.push_back(static_cast<char>(dict.size() >> 8));
            return out + dict + std::string(data_bytes, '\0');
        };
        const std::string zeros = make_npz({{"a.npy", npy("<i4", "(3500000, 3, 2)", std::size_t(3500000) * 24), true}});
        QVERIFY(!zeros.empty() && zeros.size() < (std::size_t(1) << 20));
        const QString ratio = error_of([&] { run(Npz, source("z.npz", zeros), m); });
        QVERIFY2(ratio.startsWith(where + QStringLiteral("declares 84000128 bytes from ")) &&
                     ratio.endsWith(QStringLiteral(":1): routing data (expert ids, masks, padding) does not compress "
                                                   "beyond 100:1; an entry that does is one value repeated, not a "
                                                   "trace")),
                 qPrintable(ratio));
        // A sample longer than 2^24 tokens is refused from its header (here stored: no ratio to judge).
        QCOMPARE(
            error_of([&] {
                run(Npz, source("z.npz", make_npz({{"a.npy", npy("|i1", "(16777217, 1, 1)", 16777217), false}})), m);
            }),
            where + QStringLiteral("16777217 rows (tokens) are more than the per-sample limit of 16777216"));
        // The valid archive still imports.
        const auto recs = run(Npz, source("z.npz", make_npz({{"a.npy", i4, true}})), m);
        QCOMPARE(recs.size(), std::size_t(1));
        QCOMPARE(counts_text(recs[0], m), QStringLiteral("1 1 0 0 | 0 0 1 1"));
    }

    // ---------------------------------------------------------------- every bad input
    void formatErrors_data() {
        QTest::addColumn<int>("parser");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("error");
        add_sglang_error_rows();
        add_vllm_error_rows();
        add_npy_error_rows();
        add_nemo_error_rows();
        add_nested_json_error_rows();
        add_deep_value_error_rows();
        add_token_count_error_rows();
        add_json_library_error_rows();
        add_json_field_error_rows();
        add_router_trace_error_rows();
        add_echoed_input_error_rows();
    }
    void formatErrors() {
        QFETCH(int, parser);
        QFETCH(QString, file);
        QFETCH(QByteArray, content);
        QFETCH(QString, error);
        const auto m = parser == Nemo ? model1() : model3();
        const SourceFile f = source(file.toStdString(), content.toStdString());
        QCOMPARE(error_of([&] { run(static_cast<Parser>(parser), f, m); }), error);
    }
};

QTEST_GUILESS_MAIN(TestImportFormats)
#include "tst_import_formats.moc"
