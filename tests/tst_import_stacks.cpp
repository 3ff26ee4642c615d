// The routing replay real stacks emit, shaped as each stack's code writes it (NeMo-RL and NeMo Gym,
// Megatron-LM, vLLM v0.21, verl and AReaL padded batches, SGLang multi-turn, SGLang recorder
// totals), on small files written here byte by byte from the layouts in the importers' comments.
// Every file is imported with --format auto through import_trace, every count is checked against
// a hand count, and every refusal against its exact message.
#include "core/import/import.h"
#include "core/import/import_detail.h"
#include "core/util/errors.h"
#include "tests/cli_error_of.h"
#include "tests/testutil.h"

#include <QtTest>

#include <zip.h>

using namespace routepack;

namespace {

/// 3 decoder layers, layer 0 dense, MoE layers 1 and 2, 4 experts, top-2.
ModelDescription model3() {
    ModelDescription m;
    m.name = "t3";
    m.num_hidden_layers = 3;
    m.experts = 4;
    m.top_k = 2;
    m.moe_layers = {1, 2};
    m.source = "test";
    return m;
}

/// a[i][l][e] as "c c c c | c c c c" (MoE layers in order).
QString counts_text(const Trace& t, std::size_t i) {
    QStringList layers;
    for (int l = 0; l < t.model.num_moe_layers(); ++l) {
        QStringList c;
        for (int e = 0; e < t.model.experts; ++e)
            c << QString::number(t.count(i, l, e));
        layers << c.join(QLatin1Char(' '));
    }
    return layers.join(QStringLiteral(" | "));
}

/// Little-endian bytes of `v` at `size` bytes per value.
std::string le(const std::vector<std::int64_t>& v, int size) {
    std::string s;
    for (std::int64_t x : v)
        for (int b = 0; b < size; ++b)
            s.push_back(static_cast<char>((static_cast<std::uint64_t>(x) >> (8 * b)) & 0xFF));
    return s;
}

std::string b64(const std::string& bytes) {
    return util::base64_encode(bytes);
}

/// An .npy v1.0 file written from the spec: magic, version, header length, dict padded to 64, data.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data) {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0)
        header.push_back(' ');
    header.push_back('\n');
    std::string out = "\x93NUMPY";
    out.push_back('\x01');
    out.push_back('\0');
    out.push_back(static_cast<char>(header.size() & 0xFF));
    out.push_back(static_cast<char>(header.size() >> 8));
    return out + header + data;
}

/// A zip archive as np.savez writes it (stored entries), built with libzip.
void write_zip(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::string>>& entries,
               bool deflate = false) {
    int err = 0;
    zip_t* za = zip_open(path.string().c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    QVERIFY(za);
    for (const auto& [name, data] : entries) {
        zip_source_t* s = zip_source_buffer(za, data.data(), data.size(), 0);
        const zip_int64_t idx = zip_file_add(za, name.c_str(), s, ZIP_FL_ENC_UTF_8);
        QVERIFY(idx >= 0);
        zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    }
    QCOMPARE(zip_close(za), 0);
}

/// The arrays saved one .npy file each into `folder` (np.save per tensor); created if needed.
void write_folder(const std::filesystem::path& folder, const std::vector<std::pair<std::string, std::string>>& arrays) {
    std::filesystem::create_directories(folder);
    for (const auto& [name, data] : arrays)
        test::write_file(folder / name, data);
}

Trace import_auto(const std::vector<std::filesystem::path>& in, ImportSummary* s,
                  const ModelDescription& m = model3()) {
    ImportOptions opt;
    opt.format = TraceFormat::Auto;
    opt.model = m;
    return import_trace_to_memory(in, opt, s);
}

QString import_error(const std::vector<std::filesystem::path>& in, const ModelDescription& m = model3()) {
    return QString::fromStdString(test::cli_error_of([&] { // the CLI's words
        ImportSummary s;
        import_auto(in, &s, m);
    }));
}

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

// Routes written as [rows][layers][top_k] over the MoE-only axis (layers 1, 2):
//   A: row0 L1 [0,1] L2 [2,3]; row1 L1 [0,2] L2 [3,1]; row2 -1 everywhere (a route vLLM did not
//      return); row3 the default route [0,1] [0,1]  ->  rows 3, missing 4,
//      a[L1] = 2 1 1 0, a[L2] = 0 1 1 2 (counting row3 would give 3 2 1 0 | 1 2 1 2).
const std::vector<std::int64_t> kA = {0, 1, 2, 3, 0, 2, 3, 1, -1, -1, -1, -1, 0, 1, 0, 1};
//   B: row0 L1 [3,1] L2 [2,0]; row1 default  ->  rows 1, a = 0 1 0 1 | 1 0 1 0.
const std::vector<std::int64_t> kB = {3, 1, 2, 0, 0, 1, 0, 1};

std::string nrl(const std::string& dtype, int size, const std::string& shape, const std::vector<std::int64_t>& v) {
    return "nrlre1:" + dtype + ":" + shape + ":" + b64(le(v, size));
}

std::vector<std::pair<std::string, std::string>> verl_arrays() {
    // [B=3, S=5, 3 layers (layer 0 dense, zeros), top-2] int16. Prompt area 3, responses 2.
    std::vector<std::int64_t> re(3 * 5 * 3 * 2, 0);
    auto put = [&](int b, int s, int l, int e0, int e1) {
        re[((b * 5 + s) * 3 + l) * 2] = e0;
        re[((b * 5 + s) * 3 + l) * 2 + 1] = e1;
    };
    // row 0: mask 0 1 1 1 0 (left-padded prompt of 2, one response token): routes at positions 1, 2.
    put(0, 1, 1, 1, 3);
    put(0, 1, 2, 0, 2);
    put(0, 2, 1, 3, 2);
    put(0, 2, 2, 2, 1);
    // row 1: all-zero mask (an empty slot of the batch).
    // row 2: mask 1 1 1 1 1: routes at positions 0..3, position 4 (last token) zero.
    put(2, 0, 1, 0, 1);
    put(2, 0, 2, 2, 3);
    put(2, 1, 1, 0, 2);
    put(2, 1, 2, 3, 1);
    put(2, 2, 1, 0, 3);
    put(2, 2, 2, 1, 2);
    put(2, 3, 1, 1, 2);
    put(2, 3, 2, 0, 3);
    const std::vector<std::int64_t> mask = {0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    return {{"prompts.npy", npy("<i8", "(3, 3)", le(std::vector<std::int64_t>(9, 5), 8))},
            {"responses.npy", npy("<i8", "(3, 2)", le(std::vector<std::int64_t>(6, 7), 8))},
            {"routed_experts.npy", npy("<i2", "(3, 5, 3, 2)", le(re, 2))},
            {"attention_mask.npy", npy("<i8", "(3, 5)", le(mask, 8))}};
}
/// The verl batch's samples, counted by hand; `path` = the archive or folder.
void check_verl(const Trace& t, const ImportSummary& s, const std::string& path) {
    QCOMPARE(s.format, TraceFormat::Npz);
    QCOMPARE(s.samples, std::size_t(2));
    QCOMPARE(s.min_length, std::int64_t(3));
    QCOMPARE(s.max_length, std::int64_t(5));
    QCOMPARE(s.missing_routes, std::int64_t(0));
    QCOMPARE(t.size(), std::size_t(2));
    QCOMPARE(t.samples[0].id, std::string("batch#0"));
    QCOMPARE(t.samples[0].length, std::int64_t(3));
    QCOMPARE(t.samples[0].routed_rows, std::int64_t(2));
    QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(2));
    QCOMPARE(counts_text(t, 0), QStringLiteral("0 1 1 2 | 1 1 2 0"));
    QCOMPARE(t.samples[1].id, std::string("batch#2"));
    QCOMPARE(t.samples[1].length, std::int64_t(5));
    QCOMPARE(t.samples[1].routed_rows, std::int64_t(4));
    QCOMPARE(t.samples[1].prompt_len, std::optional<std::int64_t>(3));
    QCOMPARE(counts_text(t, 1), QStringLiteral("3 2 2 1 | 1 2 2 3"));
    QCOMPARE(t.samples[0].source_file, path);
    QCOMPARE(t.samples[0].request_id, std::string("row 0"));
    QCOMPARE(t.samples[1].request_id, std::string("row 2"));
    QCOMPARE(s.notes,
             std::vector<std::string>{path + ": skipped 1 batch rows whose attention_mask is all zero (rows 1)"});
}

std::vector<std::pair<std::string, std::string>> areal_arrays() {
    // [B=2, S=4, 2 MoE layers, top-2] int32 + r3_routing_valid (bool) [1, 0], no mask.
    // row 0: seq_len 3: rows 0, 1 routes, row 2 a copy of row 1 (fill), row 3 zero.
    const std::vector<std::int64_t> re = {0, 1, 2, 3, 0, 2, 3, 1, 0, 2, 3, 1, 0, 0, 0, 0,
                                          // row 1 (invalid): never counted
                                          1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 0, 0, 0, 0};
    return {{"routed_experts.npy", npy("<i4", "(2, 4, 2, 2)", le(re, 4))},
            {"r3_routing_valid.npy", npy("|b1", "(2,)", std::string("\x01\x00", 2))}};
}
void check_areal(const Trace& t, const ImportSummary& s, const std::string& path, const std::string& stem) {
    QCOMPARE(s.format, TraceFormat::Npz);
    QCOMPARE(t.size(), std::size_t(1));
    QCOMPARE(t.samples[0].id, stem + "#0");
    QCOMPARE(t.samples[0].request_id, std::string("row 0"));
    QCOMPARE(t.samples[0].length, std::int64_t(3));
    QCOMPARE(t.samples[0].routed_rows, std::int64_t(2));
    QCOMPARE(counts_text(t, 0), QStringLiteral("2 1 1 0 | 0 1 1 2"));
    QCOMPARE(s.notes,
             std::vector<std::string>{path + ": skipped 1 batch rows marked invalid by r3_routing_valid (rows 1)"});
}

} // namespace

class TestImportStacks : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // ------------------------------------------------------------------ NeMo-RL
    void nemoLinesDropTheDefaultRoute() {
        const auto dir = test::temp_dir(QStringLiteral("nemo-lines"));
        test::write_file(dir / "r.nrlre1", nrl("int8", 1, "4x2x2", kA) + "\n" + nrl("int16", 2, "2x2x2", kB) + "\n");
        ImportSummary s;
        const Trace t = import_auto({dir}, &s);
        QCOMPARE(s.format, TraceFormat::NemoRL);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].id, std::string("r#0"));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(3));
        QCOMPARE(t.samples[0].length, std::int64_t(4)); // S = prompt + generated tokens
        QCOMPARE(t.samples[0].missing_routes, std::int64_t(4));
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 1 1 0 | 0 1 1 2"));
        QCOMPARE(t.samples[1].routed_rows, std::int64_t(1));
        QCOMPARE(t.samples[1].length, std::int64_t(2));
        QCOMPARE(counts_text(t, 1), QStringLiteral("0 1 0 1 | 1 0 1 0"));
        QCOMPARE(s.missing_routes, std::int64_t(4));
    }

    void nemoChatAnswerAndGymResult() {
        const auto dir = test::temp_dir(QStringLiteral("nemo-json"));
        // OpenAI chat answer with NeMo-RL's token information (S = 2 + 2 = 4).
        test::write_file(dir / "a_chat.json",
                         "{\"id\": \"chatcmpl-1\", \"object\": \"chat.completion\", \"choices\": [{\"index\": 0, "
                         "\"message\": {\"role\": \"assistant\", \"content\": \"hi\", \"routed_experts\": \"" +
                             nrl("int16", 2, "4x2x2", kA) +
                             "\", \"prompt_token_ids\": [5, 6], \"generation_token_ids\": [7, 8], "
                             "\"generation_log_probs\": [-0.5, -0.25]}, \"finish_reason\": \"stop\"}]}\n");
        // NeMo Gym results (JSON lines): only output items carrying routed_experts are samples.
        test::write_file(dir / "b_gym.jsonl",
                         "{\"response\": {\"id\": \"resp_1\", \"output\": [{\"type\": \"reasoning\", \"summary\": []}, "
                         "{\"type\": \"message\", \"prompt_token_ids\": [1], \"generation_token_ids\": [4], "
                         "\"routed_experts\": \"" +
                             nrl("int32", 4, "2x2x2", kB) +
                             "\"}]}, \"reward\": 1.0}\n"
                             "{\"response\": {\"id\": \"resp_2\", \"output\": [{\"type\": \"message\", "
                             "\"prompt_token_ids\": [1, 2, 3], \"generation_token_ids\": [4], \"routed_experts\": \"" +
                             nrl("int8", 1, "4x2x2", kA) + "\"}]}, \"reward\": 0.0}\n");
        ImportSummary s;
        const Trace t = import_auto({dir / "a_chat.json"}, &s);
        QCOMPARE(s.format, TraceFormat::NemoRL);
        QCOMPARE(t.size(), std::size_t(1));
        QCOMPARE(t.samples[0].id, std::string("a_chat#0"));
        QCOMPARE(t.samples[0].request_id, std::string("chatcmpl-1"));
        QCOMPARE(t.samples[0].group, std::string("chatcmpl-1"));
        QCOMPARE(t.samples[0].length, std::int64_t(4));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(2));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(3));
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 1 1 0 | 0 1 1 2"));

        const Trace g = import_auto({dir / "b_gym.jsonl"}, &s);
        QCOMPARE(s.format, TraceFormat::NemoRL);
        QCOMPARE(g.size(), std::size_t(2));
        QCOMPARE(g.samples[0].id, std::string("b_gym#0"));
        QCOMPARE(g.samples[0].request_id, std::string("resp_1"));
        QCOMPARE(g.samples[0].group, std::string());
        QCOMPARE(g.samples[0].length, std::int64_t(2));
        QCOMPARE(g.samples[0].prompt_len, std::optional<std::int64_t>(1));
        QCOMPARE(counts_text(g, 0), QStringLiteral("0 1 0 1 | 1 0 1 0"));
        QCOMPARE(g.samples[1].id, std::string("b_gym#1"));
        QCOMPARE(g.samples[1].length, std::int64_t(4));
        QCOMPARE(g.samples[1].prompt_len, std::optional<std::int64_t>(3));
        QCOMPARE(counts_text(g, 1), QStringLiteral("2 1 1 0 | 0 1 1 2"));

        // The legacy nested list decode_routed_experts also accepts, beside the token ids.
        test::write_file(dir / "c.json",
                         "{\"id\": \"x\", \"choices\": [{\"message\": {\"routed_experts\": [[[3, 1], [2, 0]], "
                         "[[0, 1], [0, 1]]], \"prompt_token_ids\": [1], \"generation_token_ids\": [2]}}]}");
        const Trace c = import_auto({dir / "c.json"}, &s);
        QCOMPARE(s.format, TraceFormat::NemoRL);
        QCOMPARE(c.samples[0].length, std::int64_t(2));
        QCOMPARE(counts_text(c, 0), QStringLiteral("0 1 0 1 | 1 0 1 0"));
    }

    void nemoRefusals_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("error"); // after "<path>: "
        QTest::newRow("last row is a route") << "n.nrlre1" << q(nrl("int16", 2, "2x2x2", {0, 1, 2, 3, 3, 2, 1, 0}))
                                             << "sample n#0 (line 1): last row (row 1) at layer position 0 is not the "
                                                "default route [0, 1] that NeMo-RL writes for the final token; not a "
                                                "NeMo-RL routed_experts array";
        QTest::newRow("only the default row") << "n.nrlre1" << q(nrl("int8", 1, "1x2x2", {0, 1, 0, 1}))
                                              << "sample n#0 (line 1): no routed rows (only the default route row)";
        QTest::newRow("token count") << "n.json"
                                     << q("{\"choices\": [{\"message\": {\"routed_experts\": \"" +
                                          nrl("int8", 1, "4x2x2", kA) +
                                          "\", \"prompt_token_ids\": [5, 6], \"generation_token_ids\": [7]}}]}")
                                     << "sample n#0: choices[0].message.routed_experts has 4 rows, but "
                                        "choices[0].message.prompt_token_ids + generation_token_ids = 2 + 1 tokens "
                                        "(NeMo-RL writes one row per token)";
        QTest::newRow("gym without routes") << "n.json"
                                            << q("{\"response\": {\"output\": [{\"type\": \"message\"}]}, "
                                                 "\"x\": \"nrlre1:\"}")
                                            << "record 0: no response.output item carries routed_experts";
        QTest::newRow("neither carrier") << "n.json" << q("{\"note\": \"nrlre1:\"}")
                                         << "record 0: neither choices[].message.routed_experts (a NeMo-RL chat "
                                            "answer) nor response.output[].routed_experts (a NeMo Gym result)";
    }
    void nemoRefusals() {
        QFETCH(QString, name);
        QFETCH(QString, body);
        QFETCH(QString, error);
        const auto dir = test::temp_dir(QStringLiteral("nemo-bad"));
        test::write_file(dir / name.toStdString(), body.toStdString());
        QCOMPARE(import_error({dir / name.toStdString()}), q((dir / name.toStdString()).string() + ": ") + error);
    }

    // A NeMo Gym result of several model calls (a multi-turn conversation with a tool call) is one
    // sample, stitched as NeMo-RL builds its message log.
    void nemoGymMultiCallStitching() {
        const auto dir = test::temp_dir(QStringLiteral("nemo-gym-turns"));
        // Call 1: prompt [1, 2], generation [3, 4]: S 4, rows r0..r2 routes, r3 the default route.
        // Call 2: prompt [1, 2, 3, 4, 5, 6] (the conversation + a tool output 5, 6), generation
        // [7]: S 7; rows 0..2 re-prefill tokens already routed (not used), row 3 the real route of
        // token 3 (call 1 wrote its default route), rows 4, 5 new, row 6 the default route.
        // Stitched: call 1 r0..r2, call 2 r3..r5 -> t_i 7, 6 routed rows, prompt_len 2:
        //   L1 [0,1] [0,2] [1,3] [2,0] [0,3] [2,1] -> 4 3 3 2; L2 [2,3] [3,1] [0,2] [1,3] [2,1] [3,0] -> 2 3 3 4
        // (two separate samples would count 2 2 1 1 | 1 1 2 2 and 2 1 5 4 | 4 5 1 2; keeping call
        // 1's default row instead of call 2's row 3 gives 4 4 2 2 | 3 3 3 3).
        const std::string c1 = nrl("int16", 2, "4x2x2", {0, 1, 2, 3, 0, 2, 3, 1, 1, 3, 0, 2, 0, 1, 0, 1});
        const std::string c2 = nrl(
            "int16", 2, "7x2x2", {3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 2, 0, 1, 3, 0, 3, 2, 1, 2, 1, 3, 0, 0, 1, 0, 1});
        const std::string result =
            "{\"response\": {\"id\": \"resp_9\", \"output\": ["
            "{\"type\": \"reasoning\", \"summary\": []}, "
            "{\"type\": \"function_call\", \"name\": \"f\", \"prompt_token_ids\": [1, 2], "
            "\"generation_token_ids\": [3, 4], \"generation_log_probs\": [-1, -1], \"routed_experts\": \"" +
            c1 +
            "\"}, "
            "{\"type\": \"function_call_output\", \"output\": \"42\"}, "
            "{\"type\": \"message\", \"prompt_token_ids\": [1, 2, 3, 4, 5, 6], \"generation_token_ids\": [7], "
            "\"generation_log_probs\": [-1], \"routed_experts\": \"" +
            c2 + "\"}]}, \"reward\": 1.0}\n";
        // A second result of one call, and one whose extra item has an empty generation.
        const std::string single =
            "{\"response\": {\"id\": \"resp_10\", \"output\": [{\"type\": \"message\", "
            "\"prompt_token_ids\": [1], \"generation_token_ids\": [4], \"routed_experts\": \"" +
            nrl("int32", 4, "2x2x2", kB) +
            "\"}, {\"type\": \"message\", \"prompt_token_ids\": [1, 4], \"generation_token_ids\": [], "
            "\"routed_experts\": \"" +
            nrl("int32", 4, "2x2x2", kB) + "\"}]}}\n";
        test::write_file(dir / "gym.jsonl", result + single);
        ImportSummary s;
        const Trace t = import_auto({dir / "gym.jsonl"}, &s);
        QCOMPARE(s.format, TraceFormat::NemoRL);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].id, std::string("gym#0"));
        QCOMPARE(t.samples[0].request_id, std::string("resp_9"));
        QCOMPARE(t.samples[0].length, std::int64_t(7));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(6));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(2));
        QCOMPARE(t.samples[0].missing_routes, std::int64_t(0));
        QCOMPARE(counts_text(t, 0), QStringLiteral("4 3 3 2 | 2 3 3 4"));
        QCOMPARE(t.samples[1].id, std::string("gym#1"));
        QCOMPARE(t.samples[1].request_id, std::string("resp_10"));
        QCOMPARE(t.samples[1].length, std::int64_t(2));
        QCOMPARE(t.samples[1].routed_rows, std::int64_t(1));
        QCOMPARE(counts_text(t, 1), QStringLiteral("0 1 0 1 | 1 0 1 0"));
        const std::string path = (dir / "gym.jsonl").string();
        QCOMPARE(s.notes,
                 (std::vector<std::string>{
                     path + ": stitched 2 model calls of 1 NeMo Gym results into one sample per result (one "
                            "conversation each)",
                     path + ": 1 NeMo Gym results hold output items with empty generation_token_ids, skipped as "
                            "NeMo-RL skips them"}));
    }

    void nemoGymStitchRefusals_data() {
        QTest::addColumn<QString>("second"); // the second call's fields after "type": "message",
        QTest::addColumn<QString>("error");  // after "<path>: sample g#0: response.output[1]."
        const std::string c2 = nrl("int8", 1, "5x2x2", {3, 2, 1, 0, 3, 2, 1, 0, 2, 0, 1, 3, 0, 3, 2, 1, 0, 1, 0, 1});
        QTest::newRow("non-contiguous")
            << q("\"prompt_token_ids\": [1, 9, 3, 4], \"generation_token_ids\": [7], \"routed_experts\": \"" + c2 +
                 "\"")
            << "prompt_token_ids[1] is 9 but token 1 of the conversation before this call is 2: the call does not "
               "continue it (non-contiguous messages) and cannot be placed";
        QTest::newRow("shorter prompt")
            << q("\"prompt_token_ids\": [1, 2], \"generation_token_ids\": [7, 8, 9], \"routed_experts\": \"" + c2 +
                 "\"")
            << "prompt_token_ids holds 2 tokens, fewer than the 4 of the conversation before this call: the call "
               "cannot be placed";
        QTest::newRow("no routes") << q("\"prompt_token_ids\": [1, 2, 3, 4], \"generation_token_ids\": [7]")
                                   << "routed_experts is missing: the model call's routes are unknown (call 2 of 2)";
        QTest::newRow("no prompt") << q("\"generation_token_ids\": [7], \"routed_experts\": \"" + c2 + "\"")
                                   << "prompt_token_ids is missing: the model call cannot be placed in the "
                                      "conversation";
        QTest::newRow("rows") << q("\"prompt_token_ids\": [1, 2, 3, 4], \"generation_token_ids\": [7, 8], "
                                   "\"routed_experts\": \"" +
                                   c2 + "\"")
                              << "routed_experts has 5 rows, but response.output[1].prompt_token_ids + "
                                 "generation_token_ids = 4 + 2 tokens (NeMo-RL writes one row per token)";
        // All-layer axis (3) in the second call, MoE-only (2) in the first.
        QTest::newRow("layer axis") << q("\"prompt_token_ids\": [1, 2, 3, 4], \"generation_token_ids\": [7], "
                                         "\"routed_experts\": \"" +
                                         nrl("int8", 1, "5x3x2", {0, 0, 3, 2, 1, 0, 0, 0, 3, 2, 1, 0, 0, 0, 2,
                                                                  0, 1, 3, 0, 0, 0, 3, 2, 1, 0, 1, 0, 1, 0, 1}) +
                                         "\"")
                                    << "routed_experts is [5][3][2], but the first call's layer axis and top-k are "
                                       "[2][2]";
    }
    void nemoGymStitchRefusals() {
        QFETCH(QString, second);
        QFETCH(QString, error);
        const auto dir = test::temp_dir(QStringLiteral("nemo-gym-bad"));
        const std::string first = "{\"type\": \"message\", \"prompt_token_ids\": [1, 2], \"generation_token_ids\": "
                                  "[3, 4], \"routed_experts\": \"" +
                                  nrl("int8", 1, "4x2x2", {0, 1, 2, 3, 0, 2, 3, 1, 1, 3, 0, 2, 0, 1, 0, 1}) + "\"}";
        test::write_file(dir / "g.json", "{\"response\": {\"output\": [" + first + ", {\"type\": \"message\", " +
                                             second.toStdString() + "}]}}");
        QCOMPARE(import_error({dir / "g.json"}),
                 q((dir / "g.json").string() + ": sample g#0: response.output[1].") + error);
        // Two items with routes but no token ids cannot be ordered into one conversation.
        test::write_file(dir / "g.json", "{\"response\": {\"output\": [{\"routed_experts\": \"" +
                                             nrl("int8", 1, "2x2x2", kB) + "\"}, {\"routed_experts\": \"" +
                                             nrl("int8", 1, "2x2x2", kB) + "\"}]}}");
        QCOMPARE(import_error({dir / "g.json"}),
                 q((dir / "g.json").string() +
                   ": record 0: response.output items 0 and 1 carry routed_experts without generation_token_ids: the "
                   "model calls cannot be placed in one conversation"));
    }

    // ------------------------------------------------------------------ Megatron-LM
    void megatronServerAnswer() {
        const auto dir = test::temp_dir(QStringLiteral("megatron"));
        // rows = total_tokens - 1 = 3: L1 {0,1} {0,2} {1,3}, L2 {2,3} {3,1} {0,2}.
        const std::string data = "[[[0, 1], [2, 3]], [[0, 2], [3, 1]], [[1, 3], [0, 2]]]";
        const std::string wrapper = "[\"ndarray\", {\"data\": " + data + ", \"dtype\": \"int16\"}]";
        test::write_file(dir / "m.json",
                         "{\"id\": \"cmpl-m\", \"object\": \"text_completion\", \"choices\": [{\"index\": 0, \"text\": "
                         "\"ab\", \"prompt_token_ids\": [1, 2], \"generation_token_ids\": [3, 4], "
                         "\"moe_topk_indices\": " +
                             wrapper + ", \"prompt_moe_topk_indices\": " + wrapper +
                             "}, {\"index\": 1, \"message\": {\"prompt_token_ids\": [1, 2], \"generation_token_ids\": "
                             "[9]}, \"moe_topk_indices\": [[[3, 2], [1, 0]], [[0, 3], [2, 1]]], "
                             "\"prompt_moe_topk_indices\": [[[3, 2], [1, 0]], [[0, 3], [2, 1]]]}]}");
        ImportSummary s;
        const Trace t = import_auto({dir / "m.json"}, &s);
        QCOMPARE(s.format, TraceFormat::Megatron);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].id, std::string("m#0"));
        QCOMPARE(t.samples[0].request_id, std::string("cmpl-m"));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(3));
        QCOMPARE(t.samples[0].length, std::int64_t(4));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(2));
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 2 1 1 | 1 1 2 2"));
        // Plain nested lists (older servers), token ids in the chat message: L1 {3,2} {0,3}, L2 {1,0} {2,1}.
        QCOMPARE(t.samples[1].length, std::int64_t(3));
        QCOMPARE(t.samples[1].routed_rows, std::int64_t(2));
        QCOMPARE(counts_text(t, 1), QStringLiteral("1 0 1 2 | 1 2 1 0"));
    }

    void megatronScriptResults() {
        const auto dir = test::temp_dir(QStringLiteral("megatron-script"));
        test::write_file(
            dir / "out.json",
            "{\n    \"17\": {\"input_prompt\": \"a\", \"generated_text\": \"b\", \"generated_tokens\": [5], "
            "\"latency\": 0.1, \"routing_indices\": [[[0, 1], [2, 3]]]},\n    \"18\": {\"input_prompt\": "
            "\"c\", \"generated_text\": \"d\", \"generated_tokens\": [6, 7], \"latency\": 0.2, "
            "\"routing_indices\": [[[3, 2], [1, 0]], [[0, 3], [2, 1]]]}\n}\n");
        ImportSummary s;
        const Trace t = import_auto({dir}, &s);
        QCOMPARE(s.format, TraceFormat::Megatron);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].id, std::string("out#0"));
        QCOMPARE(t.samples[0].request_id, std::string("17"));
        QCOMPARE(t.samples[0].length, std::int64_t(2));
        QCOMPARE(counts_text(t, 0), QStringLiteral("1 1 0 0 | 0 0 1 1"));
        QCOMPARE(t.samples[1].request_id, std::string("18"));
        QCOMPARE(t.samples[1].length, std::int64_t(3));
        QCOMPARE(counts_text(t, 1), QStringLiteral("1 0 1 2 | 1 2 1 0"));
    }

    void megatronRefusals_data() {
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("error");
        QTest::newRow("rows vs tokens")
            << "{\"choices\": [{\"prompt_token_ids\": [1, 2], \"generation_token_ids\": [3], \"moe_topk_indices\": "
               "[\"ndarray\", {\"data\": [[[0, 1], [2, 3]], [[0, 2], [3, 1]], [[1, 3], [0, 2]]], \"dtype\": "
               "\"int16\"}]}]}"
            << "sample m#0: choices[0].moe_topk_indices has 3 rows, but choices[0].prompt_token_ids + "
               "generation_token_ids = 2 + 1 tokens need total_tokens - 1 = 2";
        QTest::newRow("float dtype")
            << "{\"choices\": [{\"moe_topk_indices\": [\"ndarray\", {\"data\": [[[0, 1], [2, 3]]], \"dtype\": "
               "\"float32\"}]}]}"
            << "sample m#0: choices[0].moe_topk_indices[1].dtype \"float32\" is not an integer type";
        QTest::newRow("no data") << "{\"choices\": [{\"moe_topk_indices\": [\"ndarray\", {\"dtype\": \"int16\"}]}]}"
                                 << "sample m#0: choices[0].moe_topk_indices[1].data is missing";
        QTest::newRow("non-integral id")
            << "{\"choices\": [{\"moe_topk_indices\": [[[0, 1.5], [2, 3]]]}]}"
            << "sample m#0: choices[0].moe_topk_indices[0][0][1] is 1.5, not an integer in -2147483648..2147483647";
        QTest::newRow("choice without routes")
            << "{\"choices\": [{\"moe_topk_indices\": [[[0, 1], [2, 3]]]}, {\"text\": \"x\"}]}"
            << "record 0: choices[1].moe_topk_indices is missing";
    }
    void megatronRefusals() {
        QFETCH(QString, body);
        QFETCH(QString, error);
        const auto dir = test::temp_dir(QStringLiteral("megatron-bad"));
        test::write_file(dir / "m.json", body.toStdString());
        QCOMPARE(import_error({dir / "m.json"}), q((dir / "m.json").string() + ": ") + error);
    }

    // ------------------------------------------------------------------ vLLM v0.21 nested lists
    void vllmNestedLists() {
        const auto dir = test::temp_dir(QStringLiteral("vllm21"));
        // prompt part [1 prompt row]: L1 {0,1} L2 {2,3}.
        // choice 0: one completion row L1 {3,1} L2 {0,2}; no token ids: t_i = rows + 1, prompt_len = 1.
        // choice 1: token_ids [7, 8] with prompt_token_ids [1]: t_i = 3; its 2 rows + 1 prompt row = 3
        //   = t_i rows: the surplus final row (L1 {1,2} L2 {3,0}) is dropped.
        test::write_file(dir / "v.json",
                         "{\"id\": \"cmpl-9\", \"object\": \"text_completion\", \"prompt_token_ids\": [1], "
                         "\"prompt_routed_experts\": [[[0, 1], [2, 3]]], \"choices\": [{\"index\": 0, \"text\": \"x\", "
                         "\"routed_experts\": [[[3, 1], [0, 2]]]}, {\"index\": 1, \"text\": \"y\", \"token_ids\": [7, "
                         "8], \"routed_experts\": [[[0, 3], [1, 2]], [[1, 2], [3, 0]]]}], \"usage\": "
                         "{\"prompt_tokens\": 2, \"completion_tokens\": 3, \"total_tokens\": 5}}");
        ImportSummary s;
        const Trace t = import_auto({dir / "v.json"}, &s);
        QCOMPARE(s.format, TraceFormat::VLLM);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(2));
        QCOMPARE(t.samples[0].length, std::int64_t(3));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(1)); // not usage.prompt_tokens
        QCOMPARE(counts_text(t, 0), QStringLiteral("1 2 0 1 | 1 0 2 1"));
        QCOMPARE(t.samples[1].routed_rows, std::int64_t(2));
        QCOMPARE(t.samples[1].length, std::int64_t(3));
        QCOMPARE(counts_text(t, 1), QStringLiteral("2 1 0 1 | 0 1 2 1"));
        QCOMPARE(t.samples[0].group, std::string("cmpl-9"));
        QCOMPARE(t.samples[1].group, std::string("cmpl-9"));
        // Two prompts in one request: choices of different prompts are different groups.
        test::write_file(dir / "two.json",
                         "{\"id\": \"cmpl-2\", \"choices\": [{\"index\": 0, \"prompt_token_ids\": [1], "
                         "\"token_ids\": [5], \"routed_experts\": [[[0, 1], [2, 3]]]}, {\"index\": 1, "
                         "\"prompt_token_ids\": [1], \"token_ids\": [6], \"routed_experts\": [[[0, 2], [3, 1]]]}, "
                         "{\"index\": 2, \"prompt_token_ids\": [4, 4], \"token_ids\": [6], \"routed_experts\": "
                         "[[[1, 3], [0, 2]], [[0, 1], [2, 3]]]}], \"usage\": {\"prompt_tokens\": 3}}");
        const Trace two = import_auto({dir / "two.json"}, &s);
        QCOMPARE(two.size(), std::size_t(3));
        QCOMPARE(two.samples[0].group, std::string("cmpl-2/p0"));
        QCOMPARE(two.samples[1].group, std::string("cmpl-2/p0"));
        QCOMPARE(two.samples[2].group, std::string("cmpl-2/p1"));
        QCOMPARE(two.samples[2].prompt_len, std::optional<std::int64_t>(2)); // its own prompt, not usage's 3
        QCOMPARE(two.samples[2].length, std::int64_t(3));
        QCOMPARE(counts_text(two, 2), QStringLiteral("1 2 0 1 | 1 0 2 1"));
        QCOMPARE(import_error({dir / "w.json"}), q((dir / "w.json").string() + ": no such file or folder"));
        test::write_file(dir / "w.json", "{\"choices\": [{\"routed_experts\": [[[3, 1], [0]]]}]}");
        QCOMPARE(import_error({dir / "w.json"}),
                 q((dir / "w.json").string() +
                   ": sample w#0: choices[0].routed_experts[0][1] has 1 expert ids, expected 2 (as row 0, layer 0)"));
    }

    // A completion request over several prompts: usage.prompt_tokens is their sum, so it is no
    // choice's prompt length. Rows over the MoE-only axis (layers 1, 2), top-2 of 4 experts; vLLM
    // writes prompt + completion - 1 rows per choice.
    void vllmSeveralPromptsUsage() {
        const auto dir = test::temp_dir(QStringLiteral("vllm-prompts"));
        auto choice = [](int index, const std::string& rows) {
            return "{\"index\": " + std::to_string(index) + ", \"text\": \"x\", \"routed_experts\": [" + rows + "]}";
        };
        auto response = [](const std::string& id, const std::vector<std::string>& choices, const std::string& usage) {
            std::string s = "{\"id\": \"" + id + "\", \"object\": \"text_completion\", \"choices\": [";
            for (std::size_t i = 0; i < choices.size(); ++i)
                s += (i ? ", " : "") + choices[i];
            return s + "], \"usage\": " + usage + "}";
        };
        const std::string r01 = "[[0, 1], [2, 3]]", r02 = "[[0, 2], [1, 3]]", r12 = "[[1, 2], [0, 3]]";
        const std::string r32 = "[[3, 2], [1, 0]]", r23 = "[[2, 3], [0, 1]]";
        // Two prompts of 2 and 3 tokens, n = 2: completions of 2, 1 | 2, 1 tokens (t_i 4, 3 | 5, 4).
        // sum t_i = 16 = n x 5 + 6: 2 prompts; the old reading gave every choice prompt_len 5 (> 4).
        const std::vector<std::string> four = {choice(0, r01 + ", " + r02 + ", " + r12), choice(1, r01 + ", " + r32),
                                               choice(2, r01 + ", " + r01 + ", " + r01 + ", " + r01),
                                               choice(3, r23 + ", " + r23 + ", " + r23)};
        test::write_file(
            dir / "multi.json",
            response("cmpl-3", four, "{\"prompt_tokens\": 5, \"completion_tokens\": 6, \"total_tokens\": 11}"));
        ImportSummary s;
        Trace t = import_auto({dir / "multi.json"}, &s);
        QCOMPARE(s.format, TraceFormat::VLLM);
        QCOMPARE(t.size(), std::size_t(4));
        const std::vector<std::int64_t> lengths = {4, 3, 5, 4};
        const std::vector<std::string> groups = {"cmpl-3/p0", "cmpl-3/p0", "cmpl-3/p1", "cmpl-3/p1"};
        const QStringList counts = {QStringLiteral("2 2 2 0 | 1 1 1 3"), QStringLiteral("1 1 1 1 | 1 1 1 1"),
                                    QStringLiteral("4 4 0 0 | 0 0 4 4"), QStringLiteral("0 0 3 3 | 3 3 0 0")};
        for (std::size_t i = 0; i < 4; ++i) {
            QCOMPARE(t.samples[i].length, lengths[i]);
            QCOMPARE(t.samples[i].routed_rows, lengths[i] - 1);
            QCOMPARE(t.samples[i].prompt_len, std::optional<std::int64_t>()); // only their sum is known
            QCOMPARE(t.samples[i].group, groups[i]);
            QCOMPARE(t.samples[i].request_id, std::string("cmpl-3"));
            QCOMPARE(counts_text(t, i), counts[static_cast<int>(i)]);
        }
        QCOMPARE(s.notes, std::vector<std::string>{
                              (dir / "multi.json").string() +
                              ": response 0 (id 'cmpl-3'): usage.prompt_tokens = 5 sums 2 prompts of 2 choices each "
                              "(from usage.completion_tokens = 6 and the 4 choices' 16 tokens); the response does not "
                              "state each prompt's length: left unknown (request return_token_ids for them), choices "
                              "grouped by prompt"});
        // One prompt of 2 tokens, n = 2 (t_i 4, 3): 7 = 2 x 2 + 3, so 2 is each choice's prompt length.
        test::write_file(dir / "one.json",
                         response("cmpl-4", {choice(0, r01 + ", " + r02 + ", " + r12), choice(1, r01 + ", " + r32)},
                                  "{\"prompt_tokens\": 2, \"completion_tokens\": 3}"));
        t = import_auto({dir / "one.json"}, &s);
        QCOMPARE(t.size(), std::size_t(2));
        for (std::size_t i = 0; i < 2; ++i) {
            QCOMPARE(t.samples[i].prompt_len, std::optional<std::int64_t>(2));
            QCOMPARE(t.samples[i].group, std::string("cmpl-4"));
        }
        QCOMPARE(t.samples[0].length, std::int64_t(4));
        QCOMPARE(t.samples[1].length, std::int64_t(3));
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 2 2 0 | 1 1 1 3"));
        QCOMPARE(counts_text(t, 1), QStringLiteral("1 1 1 1 | 1 1 1 1"));
        QVERIFY(s.notes.empty());
        // Prompts of 1 and 2 tokens, one choice each (t_i 4, 4): the sum 3 fits both samples and was
        // taken as each prompt's length; 8 = 1 x 3 + 5 gives 2 prompts.
        test::write_file(dir / "fits.json",
                         response("cmpl-5",
                                  {choice(0, r01 + ", " + r02 + ", " + r12), choice(1, r23 + ", " + r23 + ", " + r23)},
                                  "{\"prompt_tokens\": 3, \"completion_tokens\": 5}"));
        t = import_auto({dir / "fits.json"}, &s);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>());
        QCOMPARE(t.samples[1].prompt_len, std::optional<std::int64_t>());
        QCOMPARE(t.samples[0].group, std::string("cmpl-5/p0"));
        QCOMPARE(t.samples[1].group, std::string("cmpl-5/p1"));
        QCOMPARE(t.samples[0].length, std::int64_t(4));
        QCOMPARE(t.samples[1].length, std::int64_t(4));
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 2 2 0 | 1 1 1 3"));
        QCOMPARE(counts_text(t, 1), QStringLiteral("0 0 3 3 | 3 3 0 0"));
        QCOMPARE(s.notes.size(), std::size_t(1));
        // Without completion_tokens two choices cannot be told apart: prompt lengths unknown, one group.
        test::write_file(dir / "bare.json",
                         response("cmpl-6", {choice(0, r01), choice(1, r32)}, "{\"prompt_tokens\": 1}"));
        t = import_auto({dir / "bare.json"}, &s);
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>());
        QCOMPARE(t.samples[1].group, std::string("cmpl-6"));
        QCOMPARE(counts_text(t, 1), QStringLiteral("0 0 1 1 | 1 1 0 0"));
        QCOMPARE(s.notes, std::vector<std::string>{
                              (dir / "bare.json").string() +
                              ": response 0 (id 'cmpl-6'): usage.prompt_tokens = 1 is the sum over the request's "
                              "prompts and 2 choices carry no prompt token ids (and usage no completion_tokens to tell "
                              "the prompts apart): their prompt lengths are left unknown"});
        // Usage that fits no layout (sum t_i = 7 = 2 x S + G for no prompt count): unknown, said so.
        test::write_file(dir / "odd.json",
                         response("cmpl-7", {choice(0, r01 + ", " + r02 + ", " + r12), choice(1, r01 + ", " + r32)},
                                  "{\"prompt_tokens\": 2, \"completion_tokens\": 4}"));
        t = import_auto({dir / "odd.json"}, &s);
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>());
        QCOMPARE(s.notes, std::vector<std::string>{(dir / "odd.json").string() +
                                                   ": response 0 (id 'cmpl-7'): usage.prompt_tokens = 2 matches no "
                                                   "prompt layout of usage.completion_tokens = 4 and the 2 choices' 7 "
                                                   "tokens: prompt lengths left unknown"});
    }

    // ------------------------------------------------------------------ padded batches (.npz)
    void verlBatch() {
        const auto dir = test::temp_dir(QStringLiteral("verl"));
        write_zip(dir / "batch.npz", verl_arrays());
        ImportSummary s;
        const Trace t = import_auto({dir}, &s);
        check_verl(t, s, (dir / "batch.npz").string());
        // Streamed from the disk, hashed in chunks: the same fingerprint as the file read whole.
        const std::string bytes = test::read_file(dir / "batch.npz");
        QCOMPARE(s.fingerprint, fnv1a64(bytes.data(), bytes.size()));
        QCOMPARE(s.bytes, std::uint64_t(bytes.size()));
        // np.savez_compressed: deflated entries, inflated as they are read.
        write_zip(dir / "batch.npz", verl_arrays(), true);
        const std::string deflated = test::read_file(dir / "batch.npz");
        QVERIFY(deflated.size() < bytes.size());
        ImportSummary sd;
        check_verl(import_auto({dir / "batch.npz"}, &sd), sd, (dir / "batch.npz").string());
        QCOMPARE(sd.fingerprint, fnv1a64(deflated.data(), deflated.size()));
    }

    // verl's per-sample AgentLoopOutput.as_dict() arrays saved with np.savez: routed_experts
    // [prompt + response, 3 layers (layer 0 dense, zeros), top_k] with zero rows from the last
    // recorded one on, beside prompts and responses (response_mask and an object array beside them
    // are never opened).
    void verlAgentLoopSamples() {
        const auto dir = test::temp_dir(QStringLiteral("verl-agent"));
        // rows[r] = {L1 e0, L1 e1, L2 e0, L2 e1}; rows past the list stay zero.
        auto routes = [](std::int64_t T, int K, const std::vector<std::vector<int>>& rows) {
            std::vector<std::int64_t> re(static_cast<std::size_t>(T) * 3 * K, 0);
            for (std::size_t r = 0; r < rows.size(); ++r)
                for (int j = 0; j < 2 * K; ++j)
                    re[(r * 3 + 1) * K + j] = rows[r][j]; // layers 1 and 2 follow layer 0 in the row
            return npy("<i2", "(" + std::to_string(T) + ", 3, " + std::to_string(K) + ")", le(re, 2));
        };
        auto ids = [](int n) {
            return npy("<i8", "(" + std::to_string(n) + ",)", le(std::vector<std::int64_t>(n, 9), 8));
        };
        const std::string pickled = npy("|O", "(1,)", std::string("\x80\x04\x95garbage", 10));
        // a: prompt 3 + response 2, 4 recorded rows, row 4 the fill.
        //   L1 {0,1} {1,2} {2,3} {0,1} -> 2 3 2 1; L2 {2,3} {0,3} {1,0} {3,2} -> 2 1 2 3.
        write_zip(dir / "a.npz",
                  {{"prompts.npy", ids(3)},
                   {"responses.npy", ids(2)},
                   {"response_mask.npy", ids(2)},
                   {"routed_experts.npy", routes(5, 2, {{0, 1, 2, 3}, {1, 2, 0, 3}, {2, 3, 1, 0}, {0, 1, 3, 2}})},
                   {"extra_fields.npy", pickled}});
        // b: multi-turn, prompt 2 + response 4: 3 recorded rows, rows 3-4 zero (a tool response the
        // engine never saw), row 5 the fill. L1 {3,2} {3,0} {1,2} -> 1 1 2 2; L2 {1,0} {1,2} {0,3} -> 2 2 1 1.
        write_zip(dir / "b.npz", {{"prompts.npy", ids(2)},
                                  {"responses.npy", ids(4)},
                                  {"routed_experts.npy", routes(6, 2, {{3, 2, 1, 0}, {3, 0, 1, 2}, {1, 2, 0, 3}})}});
        ImportSummary s;
        Trace t = import_auto({dir}, &s);
        QCOMPARE(s.format, TraceFormat::Npz);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].id, std::string("a"));
        QCOMPARE(t.samples[0].length, std::int64_t(5));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(3));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(4));
        QCOMPARE(t.samples[0].missing_routes, std::int64_t(0));
        QCOMPARE(t.samples[0].length_rule, LengthRule::ExplicitTokens);
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 3 2 1 | 2 1 2 3"));
        QCOMPARE(t.samples[1].id, std::string("b"));
        QCOMPARE(t.samples[1].length, std::int64_t(6));
        QCOMPARE(t.samples[1].prompt_len, std::optional<std::int64_t>(2));
        QCOMPARE(t.samples[1].routed_rows, std::int64_t(5));
        QCOMPARE(t.samples[1].missing_routes, std::int64_t(8)); // rows 3-4 x 2 MoE layers x top-2
        QCOMPARE(counts_text(t, 1), QStringLiteral("1 1 2 2 | 2 2 1 1"));
        QCOMPARE(s.missing_routes, std::int64_t(8));
        QVERIFY(std::find(s.notes.begin(), s.notes.end(),
                          (dir / "b.npz").string() +
                              ": sample b: entry 'routed_experts': 2 all-zero rows before the last (tokens the engine "
                              "did not record) are missing routes") != s.notes.end());
        QCOMPARE(detected_stack(SourceFile{dir / "a.npz", {}}, TraceFormat::Npz),
                 std::string("verl AgentLoopOutput.as_dict sample (routed_experts, prompts, responses) in an .npz"));

        // Top-1: the fill row reads as expert 0 unless prompts + responses say the token count.
        // c: prompt 2 + response 2, rows L1 {0} {0} {3}, L2 {2} {0} {1}, row 3 the fill.
        ModelDescription top1 = model3();
        top1.top_k = 1;
        write_zip(dir / "c.npz", {{"prompts.npy", ids(2)},
                                  {"responses.npy", ids(2)},
                                  {"routed_experts.npy", routes(4, 1, {{0, 2}, {0, 0}, {3, 1}})}});
        t = import_auto({dir / "c.npz"}, &s, top1);
        QCOMPARE(t.samples[0].length, std::int64_t(4));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(3));
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 0 0 1 | 1 1 1 0"));

        // The routes alone (np.savez("d.npz", a["routed_experts"])): top-2 shows its fill row (expert 0
        // listed twice is never a route), so the array spans the tokens: t_i = rows.
        write_zip(dir / "d.npz",
                  {{"arr_0.npy", routes(5, 2, {{0, 1, 2, 3}, {1, 2, 0, 3}, {2, 3, 1, 0}, {0, 1, 3, 2}})}});
        t = import_auto({dir / "d.npz"}, &s);
        QCOMPARE(t.samples[0].length, std::int64_t(5));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(4));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>());
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 3 2 1 | 2 1 2 3"));
        QCOMPARE(s.notes.front(),
                 (dir / "d.npz").string() +
                     ": sample d#0: entry 'arr_0.npy': the last row is all zero, the fill of verl's "
                     "AgentLoopOutput.as_dict (routes aligned to prompt + response): t_i = 5 rows, the "
                     "last one never forwarded");

        // Rows that are not prompt + response are refused.
        write_zip(
            dir / "e.npz",
            {{"prompts.npy", ids(3)}, {"responses.npy", ids(3)}, {"routed_experts.npy", routes(5, 2, {{0, 1, 2, 3}})}});
        QCOMPARE(import_error({dir / "e.npz"}),
                 q((dir / "e.npz").string() +
                   ": sample e: entry 'routed_experts': has 5 rows but prompts 3 + "
                   "responses 3 = 6 tokens (as_dict aligns the routes to prompt + response)"));
    }

    void arealBatch() {
        const auto dir = test::temp_dir(QStringLiteral("areal"));
        write_zip(dir / "r3.npz", areal_arrays());
        ImportSummary s;
        const Trace t = import_auto({dir / "r3.npz"}, &s);
        check_areal(t, s, (dir / "r3.npz").string(), "r3");
    }

    // The same arrays saved one .npy file each (np.save per tensor) in a folder: the folder is one
    // batch, read exactly as the .npz holding them.
    void verlBatchFolder() {
        const auto dir = test::temp_dir(QStringLiteral("verl-folder"));
        write_folder(dir / "batch", verl_arrays());
        ImportSummary s;
        const Trace t = import_auto({dir}, &s); // found in the walk
        QCOMPARE(collect_trace_files({dir}), std::vector<std::filesystem::path>{dir / "batch"});
        check_verl(t, s, (dir / "batch").string());
        QCOMPARE(s.files, std::size_t(1));
        std::uint64_t bytes = 0;
        for (const auto& [name, data] : verl_arrays())
            bytes += data.size();
        QCOMPARE(s.bytes, bytes);
        QCOMPARE(trace_input_bytes(dir / "batch"), bytes);
        // Given directly, and with the format named.
        ImportSummary s2;
        check_verl(import_auto({dir / "batch"}, &s2), s2, (dir / "batch").string());
        QCOMPARE(s2.fingerprint, s.fingerprint);
        ImportOptions opt;
        opt.format = TraceFormat::Npz;
        opt.model = model3();
        ImportSummary s3;
        check_verl(import_trace_to_memory({dir / "batch"}, opt, &s3), s3, (dir / "batch").string());
        // The fingerprint covers the folder's .npy files: the archive of the same arrays differs
        // (its bytes differ), a changed array changes it.
        write_zip(dir / "batch.npz", verl_arrays());
        ImportSummary sz;
        import_auto({dir / "batch.npz"}, &sz);
        QVERIFY(sz.fingerprint != s.fingerprint);
        test::write_file(dir / "batch" / "prompts.npy", npy("<i8", "(3, 3)", le(std::vector<std::int64_t>(9, 6), 8)));
        ImportSummary s4;
        import_auto({dir / "batch"}, &s4);
        QVERIFY(s4.fingerprint != s.fingerprint);
    }

    void arealBatchFolder() {
        const auto dir = test::temp_dir(QStringLiteral("areal-folder"));
        write_folder(dir / "r3", areal_arrays());
        // A subfolder of a batch folder is not part of the walk; an .npz beside it is its own input.
        write_folder(dir / "r3" / "old", {{"x.npy", npy("<i4", "(1, 2, 2)", le({0, 1, 2, 3}, 4))}});
        ImportSummary s;
        const Trace t = import_auto({dir}, &s);
        QCOMPARE(collect_trace_files({dir}), std::vector<std::filesystem::path>{dir / "r3"});
        check_areal(t, s, (dir / "r3").string(), "r3");
        // Beside another batch archive in the walk: both read, in name order.
        write_zip(dir / "r2.npz", areal_arrays());
        ImportSummary s2;
        const Trace t2 = import_auto({dir}, &s2);
        QCOMPARE(t2.size(), std::size_t(2));
        QCOMPARE(t2.samples[0].id, std::string("r2#0"));
        QCOMPARE(t2.samples[1].id, std::string("r3#0"));
        QCOMPARE(counts_text(t2, 0), QStringLiteral("2 1 1 0 | 0 1 1 2"));
        QCOMPARE(counts_text(t2, 1), QStringLiteral("2 1 1 0 | 0 1 1 2"));
        QCOMPARE(s2.notes.size(), std::size_t(2));
    }

    // A batch is streamed sample by sample: progress comes per sample, and a cancel set from it
    // stops the import inside the file.
    void batchProgressAndCancel() {
        const auto dir = test::temp_dir(QStringLiteral("batch-cancel"));
        write_folder(dir / "batch", verl_arrays());
        struct CountingSink : ImportSink {
            std::size_t samples = 0;
            void begin(const ModelDescription&, TraceFormat) override {}
            void sample(SampleRecord&&) override { ++samples; }
            void aggregate(AggregateCounts&&) override {}
        };
        ImportOptions opt;
        opt.model = model3();
        std::vector<std::size_t> seen;
        CountingSink all;
        const ImportSummary s = import_trace({dir / "batch"}, opt, all, [&](const ImportProgress& p) {
            seen.push_back(p.samples);
            QCOMPARE(p.bytes_total, trace_input_bytes(dir / "batch"));
        });
        QCOMPARE(all.samples, std::size_t(2));
        QCOMPARE(s.samples, std::size_t(2));
        QCOMPARE(seen, (std::vector<std::size_t>{1, 2, 2})); // per sample, then the file's end
        std::atomic<bool> cancel{false};
        CountingSink part;
        QCOMPARE(QString::fromStdString(test::error_of<Cancelled>([&] {
                     import_trace(
                         {dir / "batch"}, opt, part, [&](const ImportProgress&) { cancel = true; }, &cancel);
                 })),
                 QStringLiteral("cancelled"));
        QCOMPARE(part.samples, std::size_t(1));
    }

    void batchFolderRefusals() {
        const auto dir = test::temp_dir(QStringLiteral("folder-bad"));
        const std::string re = npy("<i2", "(1, 2, 2, 2)", le({0, 1, 2, 3, 0, 0, 0, 0}, 2));
        const auto b = dir / "b";
        write_folder(b, {{"routed_experts.npy", re}});
        QCOMPARE(import_error({b}), q((b / "routed_experts.npy").string() +
                                      ": a padded batch [B, S, layers, top_k] needs attention_mask [B, S] (verl) or "
                                      "r3_routing_valid [B] (AReaL) beside it in the folder to tell routes from "
                                      "padding"));
        write_folder(b, {{"attention_mask.npy", npy("<i8", "(1, 3)", le({1, 1, 0}, 8))}});
        QCOMPARE(import_error({b}), q((b / "attention_mask.npy").string() +
                                      " has shape (1, 3), expected (1, 2) to match routed_experts (1, 2, 2, 2)"));
        std::filesystem::remove(b / "attention_mask.npy");
        write_folder(b, {{"r3_routing_valid.npy", npy("|b1", "(2,)", std::string(2, '\x01'))}});
        QCOMPARE(import_error({b}),
                 q((b / "r3_routing_valid.npy").string() + " has shape (2,), expected (1,) (one flag per batch row)"));
        // Mask values are 0/1: 2 or -1 is refused, naming the batch row and token.
        std::filesystem::remove(b / "r3_routing_valid.npy");
        write_folder(b, {{"attention_mask.npy", npy("<i8", "(1, 2)", le({1, 2}, 8))}});
        QCOMPARE(import_error({b}), q((b / "attention_mask.npy").string() + "[0, 1] is 2, not 0 or 1"));
        write_folder(b, {{"attention_mask.npy", npy("<i8", "(1, 2)", le({-1, 1}, 8))}});
        QCOMPARE(import_error({b}), q((b / "attention_mask.npy").string() + "[0, 0] is -1, not 0 or 1"));
        std::filesystem::remove(b / "attention_mask.npy");
        // Validity flags are bools: -1 or 2 in a flag is refused, naming the batch row.
        write_folder(b, {{"r3_routing_valid.npy", npy("<i8", "(1,)", le({2}, 8))}});
        QCOMPARE(import_error({b}), q((b / "r3_routing_valid.npy").string() +
                                      "[0] is 2, not 0 or 1 (r3_routing_valid holds one bool per batch row)"));
        write_folder(b, {{"r3_routing_valid.npy", npy("<i4", "(1,)", le({-1}, 4))}});
        QCOMPARE(import_error({b}), q((b / "r3_routing_valid.npy").string() +
                                      "[0] is -1, not 0 or 1 (r3_routing_valid holds one bool per batch row)"));
        write_folder(b, {{"r3_routing_valid.npy", npy("|b1", "(1,)", std::string(1, '\x02'))}});
        QCOMPARE(import_error({b}), q((b / "r3_routing_valid.npy").string() +
                                      "[0] is 2, not 0 or 1 (r3_routing_valid holds one bool per batch row)"));
        write_folder(b, {{"r3_routing_valid.npy", npy("|b1", "(1,)", std::string(1, '\x01'))},
                         {"routed_experts.npy", npy("<i2", "(2, 2, 2)", le({0, 1, 2, 3, 0, 0, 0, 0}, 2))}});
        QCOMPARE(import_error({b}), q((b / "routed_experts.npy").string() +
                                      ": has 3 dimensions, expected a padded batch [batch][tokens][layers][top_k]"));
        // Truncated routes: row 0 of 16 bytes has 10.
        write_folder(b, {{"routed_experts.npy", re.substr(0, re.size() - 6)}});
        QCOMPARE(import_error({b}),
                 q((b / "routed_experts.npy").string() + ": truncated .npy data: batch row 0 has 10 of 16 bytes"));
        // A mask that is not an .npy file.
        write_folder(b, {{"routed_experts.npy", re}, {"attention_mask.npy", "not numpy"}});
        std::filesystem::remove(b / "r3_routing_valid.npy");
        QCOMPARE(import_error({b}), q((b / "attention_mask.npy").string() + ": not an .npy file (bad magic)"));
        // An empty routes file.
        write_folder(b, {{"routed_experts.npy", ""}, {"attention_mask.npy", npy("<i8", "(1, 2)", le({1, 1}, 8))}});
        QCOMPARE(import_error({b}), q((b / "routed_experts.npy").string() + ": truncated .npy header"));
        // The routes array alone, outside a batch folder.
        test::write_file(dir / "routes.npy", re);
        QCOMPARE(import_error({dir / "routes.npy"}),
                 q((dir / "routes.npy").string() +
                   ": sample routes: a 4-D array (1, 2, 2, 2) is a padded batch [batch][tokens][layers][top_k]: save "
                   "it as routed_experts.npy beside attention_mask.npy (verl) or r3_routing_valid.npy (AReaL) and "
                   "import their folder, or np.savez them into one .npz"));
        // Mixed with another format in one import.
        write_folder(b, {{"routed_experts.npy", re}});
        test::write_file(dir / "c.jsonl", "[[[0, 1], [2, 3]]]\n");
        QCOMPARE(import_error({b, dir / "c.jsonl"}),
                 q((dir / "c.jsonl").string() + ": format nested-json differs from npz of " + b.string() +
                   "; import different formats as separate traces"));
    }

    void batchRefusals() {
        const auto dir = test::temp_dir(QStringLiteral("batch-bad"));
        write_zip(dir / "nomask.npz",
                  {{"routed_experts.npy", npy("<i2", "(1, 2, 2, 2)", le({0, 1, 2, 3, 0, 0, 0, 0}, 2))}});
        QCOMPARE(import_error({dir / "nomask.npz"}),
                 q((dir / "nomask.npz").string() +
                   ": entry 'routed_experts': a padded batch [B, S, layers, top_k] needs attention_mask [B, S] (verl) "
                   "or r3_routing_valid [B] (AReaL) beside it in the archive to tell routes from padding"));
        const std::string pickle = "a Python pickle (torch.save), which cannot be read without Python; save the "
                                   "arrays with numpy instead: np.savez(path, routed_experts=t.cpu().numpy(), "
                                   "attention_mask=m.cpu().numpy())";
        // torch.save (zip form): archive/data.pkl + storages.
        write_zip(dir / "batch.npz", {{"archive/data.pkl", std::string("\x80\x02}q\x00.", 6)},
                                      {"archive/data/0", std::string(8, '\0')},
                                      {"archive/version", "3\n"}});
        QCOMPARE(import_error({dir / "batch.npz"}), q((dir / "batch.npz").string() + ": " + pickle));
        // torch.save (legacy pickle form), named as given.
        test::write_file(dir / "batch.pt", std::string("\x80\x02\x8a\x0a", 4) + "lj" + std::string(8, '\x01') + ".");
        QCOMPARE(import_error({dir / "batch.pt"}), q((dir / "batch.pt").string() + ": " + pickle));
    }

    void batchShapeRefusals() {
        const auto dir = test::temp_dir(QStringLiteral("batch-shapes"));
        const std::string re = npy("<i2", "(1, 2, 2, 2)", le({0, 1, 2, 3, 0, 0, 0, 0}, 2));
        const auto p = dir / "b.npz";
        write_zip(p, {{"routed_experts.npy", re}, {"attention_mask.npy", npy("<i8", "(1, 3)", le({1, 1, 0}, 8))}});
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'attention_mask' has shape (1, 3), expected (1, 2) to "
                                                   "match routed_experts (1, 2, 2, 2)"));
        write_zip(p,
                  {{"routed_experts.npy", re}, {"r3_routing_valid.npy", npy("|b1", "(2,)", std::string(2, '\x01'))}});
        QCOMPARE(import_error({p}),
                 q(p.string() + ": entry 'r3_routing_valid' has shape (2,), expected (1,) (one flag per batch row)"));
        write_zip(p, {{"routed_experts.npy", npy("<i2", "(2, 2, 2)", le({0, 1, 2, 3, 0, 0, 0, 0}, 2))},
                      {"attention_mask.npy", npy("<i8", "(1, 2)", le({1, 1}, 8))}});
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'routed_experts': has 3 dimensions, expected a padded "
                                                   "batch [batch][tokens][layers][top_k]"));
        std::string fortran = re;
        fortran.replace(fortran.find("False"), 5, "True ");
        write_zip(p, {{"routed_experts.npy", fortran}, {"attention_mask.npy", npy("<i8", "(1, 2)", le({1, 1}, 8))}});
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'routed_experts': is stored in Fortran order; save a "
                                                   "C-order array (np.ascontiguousarray)"));
        // Routes are never bool.
        write_zip(p, {{"routed_experts.npy", npy("|b1", "(1, 2, 2, 2)", std::string(8, '\x01'))},
                      {"attention_mask.npy", npy("<i8", "(1, 2)", le({1, 1}, 8))}});
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'routed_experts': unsupported .npy dtype '|b1' (routes "
                                                   "need an integer dtype)"));
        // A whole batch of empty rows leaves no samples.
        write_zip(p, {{"routed_experts.npy", re}, {"attention_mask.npy", npy("<i8", "(1, 2)", le({0, 0}, 8))}});
        QCOMPARE(import_error({p}), q(p.string() + ": no samples"));
    }

    // Decompression bombs in a padded batch: every array's header is checked (shape against the
    // routes', declared size against the shape) before any data is inflated; masks and flags are
    // read one batch row at a time; arrays only the header of which is used are never inflated.
    void batchBombs() {
        const auto dir = test::temp_dir(QStringLiteral("batch-bombs"));
        const auto p = dir / "b.npz";
        std::vector<std::int64_t> ids(32, 0); // every route [0, 1]
        for (std::size_t i = 1; i < ids.size(); i += 2)
            ids[i] = 1;
        const std::string re = npy("<i2", "(2, 4, 2, 2)", le(ids, 2));                  // 128 + 64 bytes
        const std::string mask = npy("<i8", "(2, 4)", le({1, 1, 1, 0, 1, 1, 1, 1}, 8)); // 128 + 64 bytes
        const std::string zeros(std::size_t(32) << 20, '\0');
        // A mask whose header declares 512 MiB (and 32 MiB of it present): refused from its header.
        write_zip(p, {{"routed_experts.npy", re}, {"attention_mask.npy", npy("<i8", "(8192, 8192)", zeros)}}, true);
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'attention_mask' has shape (8192, 8192), expected (2, 4) "
                                                   "to match routed_experts (2, 4, 2, 2)"));
        // Trailing bytes after a valid mask, responses or routes array.
        write_zip(p, {{"routed_experts.npy", re}, {"attention_mask.npy", mask + zeros}}, true);
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'attention_mask': declares 33554624 bytes, more than the "
                                                   "192 its .npy header accounts for (shape (2, 4) of <i8)"));
        write_zip(p,
                  {{"routed_experts.npy", re},
                   {"attention_mask.npy", mask},
                   {"responses.npy", npy("<i8", "(2, 1)", le({7, 7}, 8)) + zeros}},
                  true);
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'responses': declares 33554576 bytes, more than the 144 "
                                                   "its .npy header accounts for (shape (2, 1) of <i8)"));
        write_zip(p, {{"routed_experts.npy", re + zeros}, {"attention_mask.npy", mask}}, true);
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'routed_experts': declares 33554624 bytes, more than the "
                                                   "192 its .npy header accounts for (shape (2, 4, 2, 2) of <i2)"));
        write_zip(p, {{"routed_experts.npy", re}, {"r3_routing_valid.npy", npy("|b1", "(2,)", "\x01\x01xx")}});
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'r3_routing_valid': declares 132 bytes, more than the "
                                                   "130 its .npy header accounts for (shape (2,) of |b1)"));
        // A mask cut short is found in the row where it ends.
        write_zip(p, {{"routed_experts.npy", re}, {"attention_mask.npy", mask.substr(0, mask.size() - 24)}});
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'attention_mask': truncated .npy data: batch row 1 has 8 "
                                                   "of 32 bytes"));
        // A Fortran-order mask cannot be read a batch row at a time.
        std::string fortran = mask;
        fortran.replace(fortran.find("False"), 5, "True ");
        write_zip(p, {{"routed_experts.npy", re}, {"attention_mask.npy", fortran}});
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'attention_mask': is stored in Fortran order; save a "
                                                   "C-order array (np.ascontiguousarray)"));
        // A header alone declaring 10^12 batch rows of nothing.
        write_zip(p, {{"routed_experts.npy", npy("<i2", "(1000000000000, 0, 2, 2)", "")},
                      {"attention_mask.npy", npy("<i8", "(1000000000000, 0)", "")}});
        QCOMPARE(import_error({p}), q(p.string() + ": entry 'routed_experts': shape (1000000000000, 0, 2, 2) holds no "
                                                   "routes (a zero tokens, layers or top_k dimension)"));
        // Only the header of responses is read: its damaged data (a CRC that does not match) is never
        // inflated, nor is an unused array; the batch imports with its prompt lengths.
        std::string responses = npy("<i8", "(2, 1)", le({7, 7}, 8));
        write_zip(p, {{"routed_experts.npy", re},
                      {"attention_mask.npy", mask},
                      {"responses.npy", responses},
                      {"prompts.npy", "not numpy"}});
        std::string bytes = test::read_file(p);
        const std::size_t at = bytes.find(responses);
        QVERIFY(at != std::string::npos);
        bytes[at + responses.size() - 1] ^= 0x01;
        test::write_file(p, bytes);
        ImportSummary s;
        const Trace t = import_auto({p}, &s);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].length, std::int64_t(3));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(3)); // S - R = 3 prompt positions
        QCOMPARE(t.samples[1].length, std::int64_t(4));
        QCOMPARE(t.samples[1].prompt_len, std::optional<std::int64_t>(3));
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 2 0 0 | 2 2 0 0"));
        QCOMPARE(counts_text(t, 1), QStringLiteral("3 3 0 0 | 3 3 0 0"));
    }

    // A batch row longer than one read chunk (2^20 values: 262144 tokens of 2 layers x top-2): the
    // tokens on both sides of the chunk boundary are found and their routes kept in order.
    void batchRowAcrossChunks() {
        const auto dir = test::temp_dir(QStringLiteral("batch-chunks"));
        const std::int64_t S = 262149;
        const auto at = [&](std::int64_t b, std::int64_t s) { return static_cast<std::size_t>((b * S + s) * 4); };
        // verl: row 0 masked at 262142..262145 (routes at the first three), row 1 all padding.
        std::string re(static_cast<std::size_t>(2 * S * 4), '\0');
        const std::vector<std::vector<char>> rows = {{0, 1, 2, 3}, {1, 2, 3, 0}, {2, 3, 0, 1}, {0, 1, 0, 1}};
        std::string mask(static_cast<std::size_t>(2 * S), '\0');
        for (std::int64_t i = 0; i < 4; ++i) {
            std::memcpy(re.data() + at(0, 262142 + i), rows[static_cast<std::size_t>(i)].data(), 4);
            mask[static_cast<std::size_t>(262142 + i)] = 1;
        }
        write_zip(dir / "v.npz", {{"routed_experts.npy", npy("|i1", "(2, 262149, 2, 2)", re)},
                                  {"attention_mask.npy", npy("|b1", "(2, 262149)", mask)},
                                  {"responses.npy", npy("<i8", "(2, 2)", le({7, 7, 7, 7}, 8))}});
        ImportSummary s;
        Trace t = import_auto({dir / "v.npz"}, &s);
        QCOMPARE(t.size(), std::size_t(1));
        QCOMPARE(t.samples[0].length, std::int64_t(4));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(3));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(4)); // all before S - R = 262147
        QCOMPARE(counts_text(t, 0), QStringLiteral("1 2 2 1 | 2 1 1 2"));
        // AReaL without a mask: rows 0..262145 filled, zeros after: seq_len 262146 across the boundary.
        std::string fill(static_cast<std::size_t>(S * 4), '\0');
        for (std::int64_t p = 0; p < 262146; ++p)
            std::memcpy(fill.data() + at(0, p), rows[0].data(), 4);
        write_zip(dir / "a.npz",
                  {{"routed_experts.npy", npy("|i1", "(1, 262149, 2, 2)", fill)},
                   {"r3_routing_valid.npy", npy("|b1", "(1,)", std::string(1, '\x01'))}},
                  true);
        ImportSummary sa;
        t = import_auto({dir / "a.npz"}, &sa);
        QCOMPARE(t.size(), std::size_t(1));
        QCOMPARE(t.samples[0].length, std::int64_t(262146));
        QCOMPARE(counts_text(t, 0), QStringLiteral("262145 262145 0 0 | 0 0 262145 262145"));
    }

    // ------------------------------------------------------------------ SGLang multi-turn
    void sglangStitching() {
        const auto dir = test::temp_dir(QStringLiteral("sglang-turns"));
        // All-layer axis (3 layers, layer 0 dense = 0). Turn 1: 2 rows; turn 2: start_len 2, 3 rows.
        auto routes = [](const std::vector<std::int64_t>& v) { return b64(le(v, 4)); };
        const std::string t1 = routes({0, 0, 1, 3, 0, 2, /**/ 0, 0, 3, 2, 2, 1});
        const std::string t2 = routes({0, 0, 0, 1, 2, 3, /**/ 0, 0, 0, 2, 3, 1, /**/ 0, 0, 1, 3, 0, 2});
        const std::string other = routes({0, 0, 2, 3, 0, 1});
        test::write_file(dir / "s.jsonl",
                         "{\"text\": \"a\", \"meta_info\": {\"id\": \"conv-1\", \"prompt_tokens\": 2, "
                         "\"completion_tokens\": 1, \"routed_experts\": \"" +
                             t1 +
                             "\"}}\n"
                             "{\"text\": \"b\", \"meta_info\": {\"id\": \"other\", \"prompt_tokens\": 1, "
                             "\"completion_tokens\": 1, \"routed_experts\": \"" +
                             other +
                             "\"}}\n"
                             "{\"text\": \"c\", \"meta_info\": {\"id\": \"conv-1\", \"prompt_tokens\": 4, "
                             "\"completion_tokens\": 2, \"routed_experts_start_len\": 2, \"routed_experts\": \"" +
                             t2 + "\"}}\n");
        ImportSummary s;
        const Trace t = import_auto({dir}, &s);
        QCOMPARE(s.format, TraceFormat::SGLang);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(t.samples[0].id, std::string("s#0"));
        QCOMPARE(t.samples[0].request_id, std::string("conv-1"));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(5));
        QCOMPARE(t.samples[0].length, std::int64_t(6));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(2));
        // L1: {1,3} {3,2} {0,1} {0,2} {1,3}; L2: {0,2} {2,1} {2,3} {3,1} {0,2}.
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 3 2 3 | 2 2 4 2"));
        QCOMPARE(t.samples[1].id, std::string("s#1"));
        QCOMPARE(t.samples[1].length, std::int64_t(2));
        QCOMPARE(counts_text(t, 1), QStringLiteral("0 0 1 1 | 1 1 0 0"));
        QCOMPARE(s.notes, std::vector<std::string>{(dir / "s.jsonl").string() +
                                                   ": stitched 2 multi-turn records into 1 samples by request id and "
                                                   "routed_experts_start_len"});

        // A turn whose start_len leaves a gap cannot be placed.
        test::write_file(dir / "s.jsonl",
                         "{\"meta_info\": {\"id\": \"conv-1\", \"routed_experts\": \"" + t1 +
                             "\"}}\n{\"meta_info\": {\"id\": \"conv-1\", \"routed_experts_start_len\": 3, "
                             "\"routed_experts\": \"" +
                             t2 + "\"}}\n");
        QCOMPARE(import_error({dir}),
                 q((dir / "s.jsonl").string() +
                   ": sample s#1: meta_info.routed_experts_start_len 3 is past the 2 rows request 'conv-1' has so far "
                   "(from sample s#0): the turn between is missing, so this record cannot be placed"));
        // A turn that starts before the conversation's first row cannot be placed either.
        test::write_file(
            dir / "s.jsonl",
            "{\"meta_info\": {\"id\": \"conv-1\", \"routed_experts_start_len\": 2, \"routed_experts\": \"" + t1 +
                "\"}}\n{\"meta_info\": {\"id\": \"conv-1\", \"routed_experts_start_len\": 1, "
                "\"routed_experts\": \"" +
                t2 + "\"}}\n");
        QCOMPARE(import_error({dir}),
                 q((dir / "s.jsonl").string() +
                   ": sample s#1: meta_info.routed_experts_start_len 1 is before the first row 2 of request 'conv-1' "
                   "(sample s#0), so this record cannot be placed"));
        // Stitched rows must match the last turn's token counts.
        test::write_file(dir / "s.jsonl",
                         "{\"meta_info\": {\"id\": \"conv-1\", \"routed_experts\": \"" + t1 +
                             "\"}}\n{\"meta_info\": {\"id\": \"conv-1\", \"routed_experts_start_len\": 2, "
                             "\"prompt_tokens\": 4, \"completion_tokens\": 3, \"routed_experts\": \"" +
                             t2 + "\"}}\n");
        QCOMPARE(import_error({dir}),
                 q((dir / "s.jsonl").string() +
                   ": sample s#0: request 'conv-1' stitched from 2 records holds 5 rows, but its last record's "
                   "prompt_tokens + completion_tokens = 7 needs 6"));
    }

    void slimeNestedList() {
        // slime's patched SGLang 0.5.6: meta_info.routed_experts as a nested list over all layers.
        const auto dir = test::temp_dir(QStringLiteral("slime"));
        test::write_file(dir / "r.json",
                         "{\"text\": \"a\", \"meta_info\": {\"id\": \"s1\", \"prompt_tokens\": 2, "
                         "\"completion_tokens\": 1, \"routed_experts\": [[[0, 0], [1, 3], [0, 2]], [[0, 0], [3, 2], "
                         "[2, 1]]]}}");
        ImportSummary s;
        const Trace t = import_auto({dir}, &s);
        QCOMPARE(s.format, TraceFormat::SGLang);
        QCOMPARE(t.samples[0].length, std::int64_t(3));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(2));
        QCOMPARE(counts_text(t, 0), QStringLiteral("0 1 1 2 | 1 1 2 0"));
    }

    void arealTopOneNeedsMask() {
        const auto dir = test::temp_dir(QStringLiteral("areal-top1"));
        ModelDescription m = model3();
        m.top_k = 1;
        write_zip(dir / "r3.npz", {{"routed_experts.npy", npy("<i4", "(1, 2, 2, 1)", le({0, 1, 0, 0}, 4))},
                                   {"r3_routing_valid.npy", npy("|b1", "(1,)", std::string(1, '\x01'))}});
        QCOMPARE(import_error({dir / "r3.npz"}, m),
                 q((dir / "r3.npz").string() +
                   ": entry 'routed_experts': top-1 routes to expert 0 cannot be told from zero padding: save "
                   "attention_mask beside r3_routing_valid"));
        // With the mask the same rows import: seq_len 2, one route row (L1 expert 0, L2 expert 1).
        write_zip(dir / "r3.npz", {{"routed_experts.npy", npy("<i4", "(1, 2, 2, 1)", le({0, 1, 0, 1}, 4))},
                                   {"attention_mask.npy", npy("|b1", "(1, 2)", std::string(2, '\x01'))},
                                   {"r3_routing_valid.npy", npy("|b1", "(1,)", std::string(1, '\x01'))}});
        ImportSummary s;
        const Trace t = import_auto({dir / "r3.npz"}, &s, m);
        QCOMPARE(t.samples[0].length, std::int64_t(2));
        QCOMPARE(counts_text(t, 0), QStringLiteral("1 0 0 0 | 0 1 0 0"));
    }

    // ------------------------------------------------------------------ aggregate totals as floats
    void aggregateIntegralFloats() {
        ROUTEPACK_REQUIRE_SHARED(file, "traces/aggregate/qwen2-57b-a14b-counts.json");
        struct AggSink : ImportSink {
            AggregateCounts agg;
            void begin(const ModelDescription&, TraceFormat) override {}
            void sample(SampleRecord&&) override {}
            void aggregate(AggregateCounts&& a) override { agg = std::move(a); }
        } sink;
        const ImportSummary s = import_trace({file}, ImportOptions{}, sink);
        QCOMPARE(s.format, TraceFormat::Aggregate);
        QCOMPARE(sink.agg.model.num_moe_layers(), 28);
        QCOMPARE(sink.agg.model.experts, 64);
        QCOMPARE(sink.agg.totals.size(), std::size_t(28 * 64));
        // The file's first values: 166869.0, 494313.0, 166477.0, 410178.0, 837600.0.
        QCOMPARE(sink.agg.totals[0], std::uint64_t(166869));
        QCOMPARE(sink.agg.totals[1], std::uint64_t(494313));
        QCOMPARE(sink.agg.totals[2], std::uint64_t(166477));
        QCOMPARE(sink.agg.totals[3], std::uint64_t(410178));
        QCOMPARE(sink.agg.totals[4], std::uint64_t(837600));

        const auto dir = test::temp_dir(QStringLiteral("agg-float"));
        test::write_file(dir / "a.json",
                         R"({"counts": [[232795.0, 2.0], [0.0, 7]], "num_layers": 2.0, "num_experts": 2})");
        import_trace({dir / "a.json"}, ImportOptions{}, sink);
        QCOMPARE(sink.agg.totals, (std::vector<std::uint64_t>{232795, 2, 0, 7}));
        test::write_file(dir / "a.json", R"({"counts": [[232795.0, 2.5]], "num_layers": 1, "num_experts": 2})");
        QCOMPARE(q(test::error_of<InputError>([&] { import_trace({dir / "a.json"}, ImportOptions{}, sink); })),
                 q((dir / "a.json").string() + ": counts[0][1] is 2.5, not an integer in 0..9223372036854775807"));
        test::write_file(dir / "a.json", R"({"counts": [[1, 2]], "num_layers": 1.5, "num_experts": 2})");
        QCOMPARE(q(test::error_of<InputError>([&] { import_trace({dir / "a.json"}, ImportOptions{}, sink); })),
                 q((dir / "a.json").string() + ": num_layers is 1.5, not an integer in 1..100000"));
    }

    void megatronRouterTraceIsLoadOnly() {
        const auto dir = test::temp_dir(QStringLiteral("router-trace"));
        const auto p = dir / "router_trace_rank0.jsonl";
        auto rec = [](int step, int layer, const std::string& top, const std::string& extra = "") {
            return "{\"step\": " + std::to_string(step) +
                   ", \"stage\": \"pre_dispatch\", \"block\": " + (extra.empty() ? std::string("\"decoder\"") : extra) +
                   ", \"layer\": " + std::to_string(layer) +
                   ", \"rank\": 0, \"num_tokens\": 2, \"topk\": 2, \"top_indices\": " + top + "}\n";
        };
        test::write_file(p, rec(0, 1, "[[0, 1], [2, 3]]") + rec(0, 2, "[[1, 3], [0, 2]]") +
                                rec(0, 1, "[[3, 3]]", "\"mtp\", \"mtp_idx\": 0") + rec(1, 1, "[[3, 2]]"));
        struct AggSink : ImportSink {
            AggregateCounts agg;
            void begin(const ModelDescription&, TraceFormat) override {}
            void sample(SampleRecord&&) override {}
            void aggregate(AggregateCounts&& a) override { agg = std::move(a); }
        } sink;
        ImportOptions opt;
        opt.model = model3();
        const ImportSummary s = import_trace({p}, opt, sink);
        QCOMPARE(s.format, TraceFormat::Aggregate);
        QCOMPARE(sink.agg.totals, (std::vector<std::uint64_t>{1, 1, 2, 2, 1, 1, 1, 1}));
        QCOMPARE(sink.agg.source,
                 std::string("Megatron router trace router_trace_rank0.jsonl, steps 0..1, layer ids 0-based"));
        // Read 1-based, layer 1 would be the dense layer 0: the file is 0-based, and the summary says so.
        QCOMPARE(s.notes,
                 (std::vector<std::string>{
                     p.string() + ": router trace layer ids read 0-based (the decoder.layers index of "
                                  "Megatron-LM's training hooks): read 1-based, layer 1 (decoder layer 0) is "
                                  "not a MoE layer of the model (MoE layers 1-2)",
                     "load-only trace: per-layer expert totals, usable for placement views, not for packing"}));
        auto err = [&](const ImportOptions& o) {
            return q(test::cli_error_of([&] { import_trace({p}, o, sink); })); // the CLI's words
        };
        // Without a layer list nothing tells the base: asked for; given, the layers seen are the MoE layers.
        opt.model.moe_layers.clear();
        opt.model.num_hidden_layers = 0;
        QCOMPARE(err(opt), q(p.string() + ": the router trace's layer ids 1-2 fit the model read 0-based "
                                          "(decoder.layers index, Megatron-LM's training hooks) and 1-based "
                                          "(layer_number, its inference record_indices) alike: give the base "
                                          "(--router-layer-base 0 or 1)"));
        opt.router_layer_base = LayerBase::Zero;
        import_trace({p}, opt, sink);
        QCOMPARE(sink.agg.model.moe_layers, (std::vector<int>{1, 2}));
        opt.router_layer_base = LayerBase::One;
        import_trace({p}, opt, sink);
        QCOMPARE(sink.agg.model.moe_layers, (std::vector<int>{0, 1}));
        QCOMPARE(sink.agg.totals, (std::vector<std::uint64_t>{1, 1, 2, 2, 1, 1, 1, 1}));
        opt.router_layer_base = LayerBase::Auto;
        test::write_file(p, rec(0, 1, "[[0, 9]]"));
        QCOMPARE(err(opt), q(p.string() + ": line 1: top_indices[0][1] is 9, not an integer in 0..3"));
        opt.model = model3();
        test::write_file(p, rec(0, 0, "[[0, 1]]"));
        QCOMPARE(err(opt), q(p.string() + ": line 1: layer 0 is not a MoE layer of the model (MoE layers 1-2)"));
        QCOMPARE(err(ImportOptions{}), q(p.string() + ": a Megatron router trace does not say the expert count: give "
                                                      "--model NAME, --model-config config.json or --experts E"));
    }

    // The `layer` field of a router trace: 1-based layer_number (Megatron-LM d98e8a64 inference,
    // record_indices) or the 0-based decoder.layers index (its training hooks).
    void megatronRouterTraceLayerBase() {
        const auto dir = test::temp_dir(QStringLiteral("router-base"));
        const auto p = dir / "router_trace_rank0.jsonl";
        auto rec = [](int layer, const std::string& top) {
            return "{\"step\": 0, \"stage\": \"pre_dispatch\", \"block\": \"decoder\", \"layer\": " +
                   std::to_string(layer) + ", \"rank\": 0, \"num_tokens\": 2, \"topk\": 2, \"top_indices\": " + top +
                   "}\n";
        };
        // A 4-layer model, layer 0 dense (MoE layers 1-3), written 1-based: layer ids 2, 3, 4.
        test::write_file(p, rec(2, "[[0, 1], [0, 2]]") + rec(3, "[[3, 2], [1, 3]]") + rec(4, "[[2, 1], [2, 0]]") +
                                rec(2, "[[1, 3]]"));
        struct AggSink : ImportSink {
            AggregateCounts agg;
            void begin(const ModelDescription&, TraceFormat) override {}
            void sample(SampleRecord&&) override {}
            void aggregate(AggregateCounts&& a) override { agg = std::move(a); }
        } sink;
        ImportOptions opt;
        opt.model = model3();
        opt.model.num_hidden_layers = 4;
        opt.model.moe_layers = {1, 2, 3};
        const ImportSummary s = import_trace({p}, opt, sink);
        // Layer 1 (id 2): 0 1 0 2 1 3 -> 2 2 1 1; layer 2 (id 3): 3 2 1 3 -> 0 1 1 2; layer 3 (id 4): 2 1 2 0 -> 1 1 2
        // 0.
        QCOMPARE(sink.agg.totals, (std::vector<std::uint64_t>{2, 2, 1, 1, 0, 1, 1, 2, 1, 1, 2, 0}));
        QCOMPARE(sink.agg.model.moe_layers, (std::vector<int>{1, 2, 3}));
        QCOMPARE(sink.agg.source,
                 std::string("Megatron router trace router_trace_rank0.jsonl, steps 0..0, layer ids 1-based"));
        QCOMPARE(s.notes.front(), p.string() + ": router trace layer ids read 1-based (the layer_number of "
                                               "Megatron-LM's inference record_indices): read 0-based, layer 4 is not "
                                               "below num_hidden_layers = 4");
        auto err = [&](const ImportOptions& o) {
            return q(test::cli_error_of([&] { import_trace({p}, o, sink); })); // the CLI's words
        };
        // Named 0-based, the file contradicts it.
        opt.router_layer_base = LayerBase::Zero;
        QCOMPARE(err(opt), q(p.string() + ": line 3: layer 4 is not below num_hidden_layers = 4"));
        // A larger model (6 layers, all MoE): both bases fit, so the base is asked for, then used.
        opt.model.num_hidden_layers = 6;
        opt.model.moe_layers = {0, 1, 2, 3, 4, 5};
        opt.router_layer_base = LayerBase::Auto;
        QCOMPARE(err(opt), q(p.string() + ": the router trace's layer ids 2-4 fit the model read 0-based "
                                          "(decoder.layers index, Megatron-LM's training hooks) and 1-based "
                                          "(layer_number, its inference record_indices) alike: give the base "
                                          "(--router-layer-base 0 or 1)"));
        opt.router_layer_base = LayerBase::One;
        const ImportSummary s1 = import_trace({p}, opt, sink);
        QCOMPARE(sink.agg.totals,
                 (std::vector<std::uint64_t>{0, 0, 0, 0, 2, 2, 1, 1, 0, 1, 1, 2, 1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
        QCOMPARE(s1.notes.front(), p.string() + ": router trace layer ids read 1-based (the layer_number of "
                                                "Megatron-LM's inference record_indices), as given");
        opt.router_layer_base = LayerBase::Zero;
        import_trace({p}, opt, sink);
        QCOMPARE(sink.agg.totals,
                 (std::vector<std::uint64_t>{0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 1, 1, 0, 1, 1, 2, 1, 1, 2, 0, 0, 0, 0, 0}));
        // --experts alone: only an id 0 shows the base (it rules out 1-based).
        opt.model = ModelDescription{};
        opt.model.experts = 4;
        opt.router_layer_base = LayerBase::Auto;
        QVERIFY(err(opt).endsWith(QStringLiteral("give the base (--router-layer-base 0 or 1)")));
        test::write_file(p, rec(0, "[[0, 1]]") + rec(1, "[[2, 3]]"));
        const ImportSummary s0 = import_trace({p}, opt, sink);
        QCOMPARE(sink.agg.model.moe_layers, (std::vector<int>{0, 1}));
        QCOMPARE(sink.agg.totals, (std::vector<std::uint64_t>{1, 1, 0, 0, 0, 0, 1, 1}));
        QCOMPARE(s0.notes.front(), p.string() + ": router trace layer ids read 0-based (the decoder.layers index of "
                                                "Megatron-LM's training hooks): read 1-based, layer 0 is not a 1-based "
                                                "layer_number");
        opt.router_layer_base = LayerBase::One;
        QCOMPARE(err(opt), q(p.string() + ": line 1: layer 0 is not a 1-based layer_number"));
        QCOMPARE(parse_layer_base("1"), LayerBase::One);
        QCOMPARE(q(test::error_of<InputError>([] { parse_layer_base("2"); })),
                 QStringLiteral("unknown router trace layer base '2' (valid: auto, 0, 1)"));
    }

    // ------------------------------------------------------------------ config.json beside the traces
    void configBesideTraces() {
        const auto dir = test::temp_dir(QStringLiteral("config-beside"));
        test::write_file(dir / "config.json",
                         R"({"model_type": "qwen2_moe", "num_hidden_layers": 3, "num_experts": 4,
                             "num_experts_per_tok": 2, "decoder_sparse_step": 1, "mlp_only_layers": [0]})");
        test::write_file(dir / "r.nrlre1", nrl("int8", 1, "4x2x2", kA) + "\n");
        ImportSummary s;
        ImportOptions opt; // no model given
        const Trace t = import_trace_to_memory({dir}, opt, &s);
        QCOMPARE(s.files, std::size_t(1)); // config.json is not a trace file
        QCOMPARE(t.model.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(t.model.experts, 4);
        QCOMPARE(t.model.top_k, 2);
        QCOMPARE(counts_text(t, 0), QStringLiteral("2 1 1 0 | 0 1 1 2"));
        QCOMPARE(s.notes, (std::vector<std::string>{
                              "model from " + (dir / "config.json").string() + " (2 MoE layers of 3, 4 experts, top-2)",
                              "4 route slots held the format's missing-route marker and were counted as nothing"}));
        // A given model wins when it agrees, and is refused naming both when it does not.
        QCOMPARE(import_auto({dir}, &s).size(), std::size_t(1));
        QCOMPARE(s.notes.size(), std::size_t(1)); // the missing-route note only
        // --experts / --top-k alone: the layers come from the config.
        ModelDescription partial;
        partial.experts = 4;
        partial.top_k = 2;
        partial.source = "flags";
        const Trace p = import_auto({dir}, &s, partial);
        QCOMPARE(p.model.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(p.model.num_hidden_layers, 3);
        QCOMPARE(s.notes.front(), "model completed from " + (dir / "config.json").string());
        // The files of a folder (as the library passes them) find the config beside them too.
        const Trace f = import_trace_to_memory({dir / "r.nrlre1"}, opt, &s);
        QCOMPARE(f.model.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(model_config_beside({dir / "config.json"}), std::filesystem::path());
        // A given field always wins; a config that disagrees is named in a note.
        ModelDescription layers = model3();
        layers.num_hidden_layers = 0;
        layers.moe_layers = {0, 2};
        const Trace l = import_auto({dir}, &s, layers);
        QCOMPARE(l.model.moe_layers, (std::vector<int>{0, 2}));
        QCOMPARE(l.model.num_hidden_layers, 3); // left open, from the config
        QCOMPARE(s.notes.front(), "the model given (test) has MoE layers 0,2 where " + (dir / "config.json").string() +
                                      " says 1-2: the model given is used");
        ModelDescription other = model3();
        other.experts = 8;
        const Trace o = import_auto({dir}, &s, other);
        QCOMPARE(o.model.experts, 8);
        QCOMPARE(o.model.moe_layers, model3().moe_layers);
        QCOMPARE(s.notes.size(), std::size_t(1)); // complete: the config is never read
    }

    // A config.json that is not a model's (a web app's settings beside a bare file name) is never
    // taken for the model, and an explicit model never reads it.
    void strayConfigBesideTracesIsNotTheModel() {
        const auto dir = test::temp_dir(QStringLiteral("config-stray"));
        test::write_file(dir / "config.json", R"({"name": "my-webapp"})");
        test::write_file(dir / "r.nrlre1", nrl("int8", 1, "4x2x2", kA) + "\n");
        ImportSummary s;
        const Trace t = import_auto({dir}, &s, model3());
        QCOMPARE(t.model.experts, model3().experts);
        QCOMPARE(s.notes.size(), std::size_t(1)); // the missing-route note only: never read
        ModelDescription partial;
        partial.experts = 4;
        partial.top_k = 2;
        partial.moe_layers = {1, 2};
        partial.source = "flags";
        const Trace p = import_auto({dir}, &s, partial);
        QCOMPARE(p.model.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(s.notes.front(), (dir / "config.json").string() +
                                      " is not a model config (no num_hidden_layers and expert count): not used");
        test::write_file(dir / "config.json", "not json at all");
        QCOMPARE(import_auto({dir}, &s, partial).size(), std::size_t(1));
        QCOMPARE(import_error({dir}, ModelDescription{}),
                 q("no model description for " + (dir / "r.nrlre1").string() +
                   ": give --model NAME, --model-config config.json, or --experts E --top-k K"));
    }

    // Sample ids and source files are made from file names and kept as UTF-8 text: a name that is
    // not UTF-8 is refused at import, naming the file (escaped) and the byte.
    void nonUtf8FileNameIsRefused() {
        const auto dir = test::temp_dir(QStringLiteral("non-utf8"));
        const std::string name = "ab\xff.nrlre1";
        test::write_file(dir / name, nrl("int8", 1, "4x2x2", kA) + "\n");
        QCOMPARE(import_error({dir}),
                 q(dir.string() + "/ab\\xff.nrlre1: file name is not valid UTF-8 (byte 0xff at index " +
                   std::to_string(dir.string().size() + 3) +
                   " of the path); sample ids and source files are UTF-8 text: rename it"));
        QCOMPARE(import_error({dir / name}),
                 q(dir.string() + "/ab\\xff.nrlre1: file name is not valid UTF-8 (byte 0xff at index " +
                   std::to_string(dir.string().size() + 3) +
                   " of the path); sample ids and source files are UTF-8 text: rename it"));
        std::filesystem::rename(dir / name, dir / "ab\xc3\xbf.nrlre1"); // the same name in UTF-8 imports
        ImportSummary s;
        QCOMPARE(import_auto({dir}, &s).samples[0].id, std::string("ab\xc3\xbf#0"));
    }

    void stackNames() {
        QCOMPARE(std::string(format_stack(TraceFormat::NemoRL)), std::string("NeMo-RL / NeMo Gym (nrlre1)"));
        QCOMPARE(std::string(format_stack(TraceFormat::Megatron)),
                 std::string("Megatron-LM inference server / example script"));
        QCOMPARE(parse_trace_format("megatron"), TraceFormat::Megatron);
        for (const auto& n : trace_format_names())
            if (n != "auto") QVERIFY2(*format_stack(parse_trace_format(n)) != '\0', n.c_str());
    }

    // The import dialog's stack text tells verl from AReaL by the arrays beside routed_experts,
    // in an .npz and in a folder; other formats get format_stack's text.
    void detectedStacks() {
        const auto dir = test::temp_dir(QStringLiteral("stacks"));
        write_zip(dir / "batch.npz", verl_arrays());
        write_zip(dir / "r3.npz", areal_arrays());
        write_folder(dir / "batch", verl_arrays());
        write_folder(dir / "r3", areal_arrays());
        write_zip(dir / "samples.npz", {{"a.npy", npy("<i4", "(1, 2, 2)", le({0, 1, 2, 3}, 4))}});
        write_folder(dir / "bare",
                     {{"routed_experts.npy", npy("<i2", "(1, 2, 2, 2)", le({0, 1, 2, 3, 0, 1, 2, 3}, 2))}});
        auto stack = [&](const std::string& name) {
            return detected_stack(SourceFile{dir / name, {}}, TraceFormat::Npz);
        };
        QCOMPARE(stack("batch.npz"), std::string("verl padded batch (routed_experts, attention_mask) in an .npz"));
        QCOMPARE(stack("r3.npz"), std::string("AReaL padded batch (routed_experts, r3_routing_valid) in an .npz"));
        QCOMPARE(stack("batch"),
                 std::string("verl padded batch (routed_experts, attention_mask) in a folder of .npy files"));
        QCOMPARE(stack("r3"),
                 std::string("AReaL padded batch (routed_experts, r3_routing_valid) in a folder of .npy files"));
        QCOMPARE(stack("samples.npz"), std::string("numpy per-sample arrays in an .npz"));
        QCOMPARE(stack("bare"), std::string("padded batch (routed_experts without attention_mask or "
                                            "r3_routing_valid) in a folder of .npy files"));
        // Not a zip, or not there: the format's own text.
        test::write_file(dir / "bad.npz", "not a zip");
        QCOMPARE(stack("bad.npz"), std::string(format_stack(TraceFormat::Npz)));
        QCOMPARE(stack("missing.npz"), std::string(format_stack(TraceFormat::Npz)));
        QCOMPARE(detected_stack(SourceFile{dir / "x.json", {}}, TraceFormat::Megatron),
                 std::string("Megatron-LM inference server / example script"));
        QCOMPARE(detected_stack(SourceFile{dir / "x.json", {}}, TraceFormat::Auto), std::string());
    }

    // docs/trace-formats.md lists every form, and the README's format table every format name
    // and stack version, and links the page.
    void formatsDocumented() {
        auto read = [](const char* rel) {
            QFile file(QStringLiteral(ROUTEPACK_SOURCE_DIR) + QLatin1Char('/') + QLatin1String(rel));
            if (!file.open(QIODevice::ReadOnly)) return QString();
            return QString::fromUtf8(file.readAll());
        };
        const QString doc = read("docs/trace-formats.md"), readme = read("README.md");
        QVERIFY(!doc.isEmpty());
        QVERIFY(readme.contains(QStringLiteral("(docs/trace-formats.md)")));
        const QString table =
            readme.section(QStringLiteral("## Trace formats"), 1, 1).section(QStringLiteral("\n## "), 0, 0);
        for (const auto& n : trace_format_names()) {
            if (n == "auto") continue;
            const QString cell = QStringLiteral("| `") + QString::fromStdString(n) + QLatin1Char('`');
            QVERIFY2(doc.contains(cell), n.c_str());
            QVERIFY2(table.contains(cell), n.c_str());
        }
        for (const char* stack :
             {"verl-project/verl 1dda039b", "areal-project/AReaL d3fbc53c", "NVIDIA-NeMo/RL 7ea279ab",
              "NVIDIA/Megatron-LM d98e8a64", "v0.21.0", "slime 624b824a"}) {
            QVERIFY2(doc.contains(QLatin1String(stack)), stack);
            QVERIFY2(table.contains(QLatin1String(stack)), stack);
        }
    }
};

QTEST_GUILESS_MAIN(TestImportStacks)
#include "tst_import_stacks.moc"
