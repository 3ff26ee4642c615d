// Importers of the bundled real sets (per-prompt CSV, per-request step JSON, aggregate totals) on
// the real data in ../shared/traces, and every bad-input case of those formats plus the driver's
// own checks (duplicate ids, mixed formats, missing model, empty files).
#include "core/import/import.h"
#include "core/util/errors.h"
#include "tests/cli_error_of.h"
#include "tests/testutil.h"

#include <QtTest>

#include <numeric>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace routepack;
namespace fs = std::filesystem;

namespace {

ModelDescription tiny_model() {
    ModelDescription m;
    m.name = "tiny";
    m.num_hidden_layers = 3;
    m.experts = 4;
    m.top_k = 2;
    m.moe_layers = {1, 2};
    return m;
}

QString import_error(const std::vector<fs::path>& inputs, const ImportOptions& opt) {
    try {
        import_trace_to_memory(inputs, opt);
    } catch (const InputError& e) {
        return QString::fromStdString(cli::cli_error_text(e)); // the CLI's words
    }
    return QStringLiteral("(no error)");
}

/// Per-layer sums must equal rows x top_k - missing for every sample.
void check_conservation(const Trace& t) {
    const int L = t.model.num_moe_layers(), E = t.model.experts;
    for (std::size_t i = 0; i < t.size(); ++i) {
        for (int l = 0; l < L; ++l) {
            std::uint64_t sum = 0;
            for (int e = 0; e < E; ++e)
                sum += t.count(i, l, e);
            QCOMPARE(static_cast<std::int64_t>(sum), t.samples[i].routed_rows * t.model.top_k);
        }
    }
}

std::size_t index_of(const Trace& t, const std::string& id) {
    for (std::size_t i = 0; i < t.size(); ++i)
        if (t.samples[i].id == id) return i;
    return SIZE_MAX;
}

} // namespace

class TestImportReal : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void deepseekCsvSet() {
        ROUTEPACK_REQUIRE_SHARED(dir, "traces/deepseek-v2-lite");
        ImportOptions opt;
        opt.model = known_model("deepseek-v2-lite");
        ImportSummary s;
        const Trace t = import_trace_to_memory({dir}, opt, &s);
        QCOMPARE(s.format, TraceFormat::PromptCsv);
        QCOMPARE(t.size(), std::size_t(599));
        QCOMPARE(t.model.num_moe_layers(), 26);
        QCOMPARE(t.samples.front().id, std::string("prompt_1_data")); // numeric-aware file order
        QCOMPARE(t.samples[1].id, std::string("prompt_2_data"));
        QCOMPARE(t.samples.back().id, std::string("prompt_600_data"));
        QCOMPARE(index_of(t, "prompt_317_data"), SIZE_MAX); // absent upstream
        check_conservation(t);
        std::int64_t total = 0;
        for (const auto& x : t.samples) {
            QCOMPARE(x.length, x.routed_rows); // prompt-only forwards: t_i = rows
            QCOMPARE(x.length_rule, LengthRule::Rows);
            total += x.length;
        }
        QCOMPARE(total, std::int64_t(55918));
        QCOMPARE(s.min_length, std::int64_t(2));
        QCOMPARE(s.max_length, std::int64_t(2850));
        // Hand-counted (python csv module over the file) values.
        const auto p1 = index_of(t, "prompt_1_data");
        QCOMPARE(t.samples[p1].length, std::int64_t(33));
        QCOMPARE(t.count(p1, 0, 6), 14u); // layer 1, expert 6
        QCOMPARE(t.count(p1, 0, 8), 13u); // layer 1, expert 8
        QCOMPARE(t.count(p1, 0, 0), 1u);
        QCOMPARE(t.count(p1, 25, 50), 11u); // layer 26, expert 50
        const auto p600 = index_of(t, "prompt_600_data");
        QCOMPARE(t.samples[p600].length, std::int64_t(7));
        QCOMPARE(t.count(p600, 0, 8), 6u);
        QCOMPARE(t.count(p600, 0, 56), 6u);
        QCOMPARE(t.count(p600, 25, 56), 4u);
        QCOMPARE(s.missing_routes, std::int64_t(0));
    }

    void llamaStepJsonSet() {
        ROUTEPACK_REQUIRE_SHARED(dir, "traces/llama4-maverick");
        ImportOptions opt;
        opt.model = known_model("llama4-maverick");
        ImportSummary s;
        const Trace t = import_trace_to_memory({dir}, opt, &s);
        QCOMPARE(s.format, TraceFormat::StepJson);
        QCOMPARE(t.size(), std::size_t(235));
        QCOMPARE(t.model.num_moe_layers(), 24);
        QCOMPARE(t.samples.front().id, std::string("llama4-mmlu-abstract_algebra/0"));
        check_conservation(t);
        for (const auto& x : t.samples) {
            QCOMPARE(x.length, x.routed_rows + 1); // replay rows: t_i = rows + 1
            QCOMPARE(x.length_rule, LengthRule::RowsPlusOne);
        }
        const auto a = index_of(t, "llama4-mmlu-anatomy/101");
        QVERIFY(a != SIZE_MAX);
        QCOMPARE(t.samples[a].routed_rows, std::int64_t(138)); // 10 prefill + 128 decode steps
        QCOMPARE(t.samples[a].length, std::int64_t(139));
        QCOMPARE(t.samples[a].prompt_len, std::optional<std::int64_t>(10));
        QCOMPARE(t.count(a, 0, 119), 15u); // layer 1
        QCOMPARE(t.count(a, 23, 2), 43u);  // layer 47
        const auto b = index_of(t, "llama4-mmlu-abstract_algebra/0");
        QCOMPARE(t.samples[b].routed_rows, std::int64_t(153));
        QCOMPARE(t.samples[b].prompt_len, std::optional<std::int64_t>(25));
        QCOMPARE(t.count(b, 0, 119), 38u);
        QCOMPARE(t.count(b, 23, 108), 31u);
    }

    void aggregateSet() {
        ROUTEPACK_REQUIRE_SHARED(file, "traces/aggregate/qwen3-30b-a3b-counts.json");
        struct Sink : ImportSink {
            AggregateCounts agg;
            int samples = 0;
            void begin(const ModelDescription&, TraceFormat) override {}
            void sample(SampleRecord&&) override { ++samples; }
            void aggregate(AggregateCounts&& a) override { agg = std::move(a); }
        } sink;
        ImportOptions opt;
        const auto s = import_trace({file}, opt, sink);
        QCOMPARE(s.format, TraceFormat::Aggregate);
        QCOMPARE(sink.samples, 0);
        QCOMPARE(sink.agg.model.num_moe_layers(), 48);
        QCOMPARE(sink.agg.model.experts, 128);
        QCOMPARE(sink.agg.totals.size(), std::size_t(48 * 128));
        QCOMPARE(sink.agg.totals[0], std::uint64_t(147896));
        QCOMPARE(sink.agg.totals[1], std::uint64_t(246086));
        // Aggregate totals cannot be packed; they can be placed.
        QCOMPARE(import_error({file}, opt),
                 QString::fromStdString(file.string()) +
                     QStringLiteral(": aggregate traces hold per-layer totals only: usable for placement (routepack "
                                    "place), not for packing"));
        ModelDescription m;
        const std::vector<std::uint64_t> loads = import_expert_loads({file}, opt, &m);
        QCOMPARE(loads, sink.agg.totals);
        QCOMPARE(m.experts, 128);
    }

    void csvQuotingIsRfc4180() {
        const auto dir = test::temp_dir(QStringLiteral("csvq"));
        // Tokens holding commas, doubled quotes and a newline inside quotes are legal.
        test::write_file(dir / "p.csv", "Layer ID,Batch Number,Token,Activated Expert IDs\n"
                                        "1,0,\"a,\"\"b\",\"[0, 1]\"\n"
                                        "1,0,\"x\ny\",\"[2, 3]\"\n"
                                        "2,0,\",\",\"[3, 0]\"\n"
                                        "2,0,plain,\"[1, 3]\"\n");
        ImportOptions opt;
        opt.model = tiny_model();
        const Trace t = import_trace_to_memory({dir / "p.csv"}, opt);
        QCOMPARE(t.size(), std::size_t(1));
        QCOMPARE(t.samples[0].id, std::string("p"));
        QCOMPARE(t.samples[0].length, std::int64_t(2));
        const std::vector<std::uint32_t> expect{1, 1, 1, 1, 1, 1, 0, 2};
        QCOMPARE(std::vector<std::uint32_t>(t.counts.begin(), t.counts.end()), expect);
    }

    void csvBadInput_data() {
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("error"); // after "<path>"
        const QString h = QStringLiteral("Layer ID,Batch Number,Token,Activated Expert IDs\n");
        QTest::newRow("truncated") << h + QStringLiteral("1,0,a,\"[0, 1]\"\n2,0,b,\"[0,")
                                   << ": malformed CSV in record 2 (error parsing data while strict checking enabled)";
        QTest::newRow("bad quote") << h + QStringLiteral("1,0,a\"b\"c,\"[0, 1]\"\n")
                                   << ": malformed CSV in record 1 (error parsing data while strict checking enabled)";
        QTest::newRow("header") << QStringLiteral("Layer,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n")
                                << ": header column 1 is 'Layer', expected 'Layer ID'";
        QTest::newRow("columns") << h + QStringLiteral("1,0,\"[0, 1]\"\n") << ": record 1: 3 columns, expected 4";
        QTest::newRow("width") << h + QStringLiteral("1,0,a,\"[0, 1]\"\n1,0,b,\"[0, 1, 2]\"\n2,0,a,\"[0, 1]\"\n")
                               << ": record 2 (layer 1): 3 expert ids, expected top-k 2";
        QTest::newRow("out of range") << h + QStringLiteral("1,0,a,\"[0, 4]\"\n2,0,a,\"[0, 1]\"\n")
                                      << ": sample p: row 0, layer 1: expert id 4 out of range 0..3";
        QTest::newRow("negative")
            << h + QStringLiteral("1,0,a,\"[0, -2]\"\n2,0,a,\"[0, 1]\"\n")
            << ": sample p: row 0, layer 1: negative expert id -2 (only -1 marks a missing route)";
        QTest::newRow("duplicate id in row")
            << h + QStringLiteral("1,0,a,\"[3, 3]\"\n2,0,a,\"[0, 1]\"\n")
            << ": sample p: row 0, layer 1: expert 3 listed twice, so counts cannot add up to rows x top-k";
        QTest::newRow("rows differ") << h + QStringLiteral("1,0,a,\"[0, 1]\"\n1,0,b,\"[0, 1]\"\n2,0,a,\"[0, 1]\"\n")
                                     << ": layer 2 has 1 token rows, layer 1 has 2";
        QTest::newRow("layer set") << h + QStringLiteral("1,0,a,\"[0, 1]\"\n")
                                   << ": layer set 1 differs from the model's MoE layers 1-2";
        QTest::newRow("not a list") << h + QStringLiteral("1,0,a,\"0 1\"\n")
                                    << ": record 1: Activated Expert IDs '0 1' is not a list like [1, 2]";
        QTest::newRow("only header") << h << ": no routing records after the header";
        // Breaker report.
        QTest::newRow("missing-route marker") << h + QStringLiteral("1,0,a,\"[0, -1]\"\n2,0,a,\"[0, 1]\"\n")
                                              << ": record 1 (layer 1): expert id -1, but this format has no "
                                                 "missing-route marker";
        QTest::newRow("trailing comma") << h + QStringLiteral("1,0,a,\"[0, 1,]\"\n2,0,a,\"[0, 1]\"\n")
                                        << ": record 1: Activated Expert IDs '[0, 1,]' holds a non-integer";
        QTest::newRow("empty item") << h + QStringLiteral("1,0,a,\"[0,, 1]\"\n")
                                    << ": record 1: Activated Expert IDs '[0,, 1]' holds a non-integer";
        QTest::newRow("id beyond int32") << h + QStringLiteral("1,0,a,\"[0, 99999999999999]\"\n")
                                         << ": record 1 (layer 1): expert id 99999999999999 out of range 0..3";
        QTest::newRow("layer id int max") << h + QStringLiteral("1,0,a,\"[0, 1]\"\n2147483647,0,a,\"[0, 1]\"\n")
                                          << ": record 2: Layer ID 2147483647 is out of range 0..99999";
        QTest::newRow("layer id beyond int64") << h + QStringLiteral("99999999999999999999,0,a,\"[0, 1]\"\n")
                                               << ": record 1: Layer ID '99999999999999999999' is not an integer";
        QTest::newRow("negative layer id")
            << h + QStringLiteral("-1,0,a,\"[0, 1]\"\n") << ": record 1: Layer ID -1 is out of range 0..99999";
        QTest::newRow("line break in a field")
            << QStringLiteral("\"Layer\nID\",Batch Number,Token,Activated Expert IDs\n")
            << ": header column 1 is 'Layer\\nID', expected 'Layer ID'";
        QTest::newRow("huge field")
            << h + QStringLiteral("%1,0,a,\"[0, 1]\"\n").arg(QString(100000, QLatin1Char('X')))
            << QStringLiteral(": record 1: Layer ID '%1...' is not an integer").arg(QString(80, QLatin1Char('X')));
    }
    void csvBadInput() {
        QFETCH(QString, body);
        QFETCH(QString, error);
        const auto dir = test::temp_dir(QStringLiteral("csvbad"));
        const auto f = dir / "p.csv";
        test::write_file(f, body.toStdString());
        ImportOptions opt;
        opt.model = tiny_model();
        QCOMPARE(import_error({f}, opt), QString::fromStdString(f.string()) + error);
    }

    void stepJsonBadInput_data() {
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("error");
        QTest::newRow("truncated")
            << QStringLiteral(R"([{"0": null, "1": [[0, 1]], "2": [[1)")
            << ": malformed JSON at byte 37: syntax error while parsing array - unexpected end of input; "
               "expected ']'";
        QTest::newRow("layer set differs")
            << QStringLiteral(R"([{"0": null, "1": [[0, 1]], "2": [[1, 2]]}, {"0": null, "1": [[0, 1]], "2": null}])")
            << ": step 1: layer set differs from step 0 (1-2)";
        QTest::newRow("width") << QStringLiteral(R"([{"0": null, "1": [[0, 1]], "2": [[1]]}])")
                               << ": step 0, layer 2, token 0: 1 expert ids, expected top-k 2";
        QTest::newRow("token count") << QStringLiteral(R"([{"0": null, "1": [[0, 1], [1, 2]], "2": [[1, 2]]}])")
                                     << ": step 0, layer 2: 1 tokens, layer 1 has 2";
        QTest::newRow("model layers") << QStringLiteral(R"([{"0": [[0, 1]], "1": [[0, 1]], "2": [[1, 2]]}])")
                                      << ": MoE layer set 0-2 differs from the model's 1-2";
        QTest::newRow("not steps") << QStringLiteral(R"({"0": null})") << ": expected a JSON list of forward steps";
        QTest::newRow("string id") << QStringLiteral(R"([{"0": null, "1": [["a", 1]], "2": [[1, 2]]}])")
                                   << ": step 0, layer 1, token 0: expert id is \"a\", not an integer in 0..3";
        // Breaker report: keys are canonical layer ids (bug 2), ids never wrap (bugs 6/7), no
        // missing-route marker inside a slot (bug 10), keys name layers of the model (bug 18).
        const QString key_rule = QStringLiteral(" is not a layer id (a decimal number 0..99999 without sign, spaces or "
                                                "leading zeros)");
        QTest::newRow("leading zero key")
            << QStringLiteral(
                   R"([{"0": null, "1": [[0, 1]], "2": [[1, 2]]}, {"0": null, "01": [[0, 1]], "2": [[1, 2]]}])")
            << ": step 1: key '01'" + key_rule;
        QTest::newRow("plus key") << QStringLiteral(R"([{"0": null, "+1": [[0, 1]], "2": [[1, 2]]}])")
                                  << ": step 0: key '+1'" + key_rule;
        QTest::newRow("space key") << QStringLiteral(R"([{"0": null, " 1": [[0, 1]], "2": [[1, 2]]}])")
                                   << ": step 0: key ' 1'" + key_rule;
        QTest::newRow("huge key") << QStringLiteral(
                                         R"([{"0": null, "99999999999": null, "1": [[0, 1]], "2": [[1, 2]]}])")
                                  << ": step 0: key '99999999999'" + key_rule;
        QTest::newRow("key beyond the model")
            << QStringLiteral(R"([{"0": null, "1": [[0, 1]], "2": [[1, 2]], "3": null}])")
            << ": step 0: layer id 3 is not below the model's 3 decoder layers";
        QTest::newRow("uint64 max id")
            << QStringLiteral(R"([{"0": null, "1": [[0, 18446744073709551615]], "2": [[1, 2]]}])")
            << ": step 0, layer 1, token 0: expert id is 18446744073709551615, not an integer in 0..3";
        QTest::newRow("2^63 id")
            << QStringLiteral(R"([{"0": null, "1": [[0, 9223372036854775808]], "2": [[1, 2]]}])")
            << ": step 0, layer 1, token 0: expert id is 9223372036854775808, not an integer in 0..3";
        QTest::newRow("2^31 id") << QStringLiteral(R"([{"0": null, "1": [[0, 2147483648]], "2": [[1, 2]]}])")
                                 << ": step 0, layer 1, token 0: expert id is 2147483648, not an integer in 0..3";
        QTest::newRow("-1 id") << QStringLiteral(R"([{"0": null, "1": [[0, -1]], "2": [[1, 2]]}])")
                               << ": step 0, layer 1, token 0: expert id -1 (this format has no missing-route marker)";
        QTest::newRow("null id") << QStringLiteral(R"([{"0": null, "1": [[0, null]], "2": [[1, 2]]}])")
                                 << ": step 0, layer 1, token 0: expert id is null (this format has no missing-route "
                                    "marker: null stands only for a whole dense layer)";
        QTest::newRow("number overflow") << QStringLiteral(R"([{"0": null, "1": [[0, 1e400]], "2": [[1, 2]]}])")
                                         << ": malformed JSON: number overflow parsing '1e400' (field [0].1[0][1])";
        QTest::newRow("duplicate key") << QStringLiteral(
                                              R"([{"0": null, "1": [[3, 2]], "1": [[0, 1]], "2": [[1, 2]]}])")
                                       << ": malformed JSON: duplicate key '1' in one object";
    }
    void stepJsonBadInput() {
        QFETCH(QString, body);
        QFETCH(QString, error);
        const auto dir = test::temp_dir(QStringLiteral("stepbad"));
        const auto f = dir / "req" / "7.json";
        test::write_file(f, body.toStdString());
        ImportOptions opt;
        opt.model = tiny_model();
        opt.format = TraceFormat::StepJson;
        QCOMPARE(import_error({f}, opt), QString::fromStdString(f.string()) + error);
    }

    void stepJsonNullRouteIsRefused() {
        // trace-formats.md §5.2: the step JSON set's only missing marker is null for a whole dense
        // layer. A null inside a token's list was once counted as a missing route; it is an error
        // now, and nothing of the file is kept.
        const auto dir = test::temp_dir(QStringLiteral("stepnull"));
        const auto f = dir / "req" / "7.json";
        test::write_file(f, R"([{"0": null, "1": [[0, 1], [2, null]], "2": [[1, 2], [3, 0]]}, )"
                            R"({"0": null, "1": [[3, 2]], "2": [[0, 1]]}])");
        ImportOptions opt;
        opt.model = tiny_model();
        QCOMPARE(import_error({f}, opt),
                 QString::fromStdString(f.string()) +
                     QStringLiteral(": step 0, layer 1, token 1: expert id is null (this format has no missing-route "
                                    "marker: null stands only for a whole dense layer)"));
        // Dense layers (null for the whole layer) stay legal: without the bad slot it imports.
        test::write_file(f, R"([{"0": null, "1": [[0, 1], [2, 3]], "2": [[1, 2], [3, 0]]}, )"
                            R"({"0": null, "1": [[3, 2]], "2": [[0, 1]]}])");
        ImportSummary s;
        const Trace t = import_trace_to_memory({f}, opt, &s);
        QCOMPARE(t.samples[0].id, std::string("req/7"));
        QCOMPARE(t.samples[0].routed_rows, std::int64_t(3));
        QCOMPARE(t.samples[0].length, std::int64_t(4));
        QCOMPARE(t.samples[0].prompt_len, std::optional<std::int64_t>(2));
        QCOMPARE(t.samples[0].missing_routes, std::int64_t(0));
        QCOMPARE(s.missing_routes, std::int64_t(0));
        const std::vector<std::uint32_t> expect{1, 1, 2, 2, 2, 2, 1, 1};
        QCOMPARE(std::vector<std::uint32_t>(t.counts.begin(), t.counts.end()), expect);
    }

    void stepJsonTrailingDenseLayers() {
        // Self-described layers: dense keys after the last MoE layer still belong to the model.
        const auto dir = test::temp_dir(QStringLiteral("steptail"));
        const auto f = dir / "req" / "1.json";
        test::write_file(f, R"([{"0": null, "1": [[0, 1]], "2": [[1, 2]], "3": null}])");
        ImportOptions opt;
        opt.model.experts = 4;
        opt.model.top_k = 2;
        const Trace t = import_trace_to_memory({f}, opt);
        QCOMPARE(t.model.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(t.model.num_hidden_layers, 4);
    }

    void byteOrderMarkIsSkipped() {
        const auto dir = test::temp_dir(QStringLiteral("bom"));
        const std::string bom = "\xEF\xBB\xBF";
        test::write_file(dir / "p.csv", bom + "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n"
                                              "2,0,a,\"[2, 3]\"\n");
        test::write_file(dir / "s" / "1.json", bom + R"([{"0": null, "1": [[0, 1]], "2": [[1, 2]]}])");
        test::write_file(dir / "agg.json", bom + R"({"counts": [[1, 2]], "num_layers": 1, "num_experts": 2})");
        ImportOptions opt;
        opt.model = tiny_model();
        Trace t = import_trace_to_memory({dir / "p.csv"}, opt);
        QCOMPARE(t.samples[0].id, std::string("p"));
        QCOMPARE(std::vector<std::uint32_t>(t.counts.begin(), t.counts.end()),
                 (std::vector<std::uint32_t>{1, 1, 0, 0, 0, 0, 1, 1}));
        ImportOptions flags; // self-described layers read past the BOM too
        flags.model.experts = 4;
        flags.model.top_k = 2;
        t = import_trace_to_memory({dir / "p.csv"}, flags);
        QCOMPARE(t.model.moe_layers, (std::vector<int>{1, 2}));
        t = import_trace_to_memory({dir / "s" / "1.json"}, opt);
        QCOMPARE(t.samples[0].id, std::string("s/1"));
        struct Sink : ImportSink {
            AggregateCounts agg;
            void begin(const ModelDescription&, TraceFormat) override {}
            void sample(SampleRecord&&) override {}
            void aggregate(AggregateCounts&& a) override { agg = std::move(a); }
        } sink;
        const auto s = import_trace({dir / "agg.json"}, ImportOptions{}, sink);
        QCOMPARE(s.format, TraceFormat::Aggregate);
        QCOMPARE(sink.agg.totals, (std::vector<std::uint64_t>{1, 2}));
    }

    void aggregateBadInput_data() {
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("error");
        QTest::newRow("shape") << QStringLiteral(R"({"counts": [[1, 2], [3]], "num_layers": 2, "num_experts": 2})")
                               << ": counts[1] must hold num_experts = 2 integers";
        QTest::newRow("layers") << QStringLiteral(R"({"counts": [[1, 2]], "num_layers": 2, "num_experts": 2})")
                                << ": counts must be a list of num_layers = 2 lists";
        QTest::newRow("negative") << QStringLiteral(R"({"counts": [[1, -2]], "num_layers": 1, "num_experts": 2})")
                                  << ": counts[0][1] is -2, not an integer in 0..9223372036854775807";
        QTest::newRow("missing") << QStringLiteral(R"({"counts": [[1, 2]], "num_experts": 2})")
                                 << ": num_layers is missing";
        // Breaker report: sizes never wrap (bugs 6/7) and are checked against the arrays before
        // anything is allocated from them (bug 4); raw library errors never escape (bug 14).
        QTest::newRow("layers wrap")
            << QStringLiteral(R"({"counts": [[1, 2], [3, 4]], "num_layers": 4294967298, "num_experts": 2})")
            << ": num_layers is 4294967298, not an integer in 1..100000";
        QTest::newRow("experts wrap") << QStringLiteral(
                                             R"({"counts": [[1, 2, 3]], "num_layers": 1, "num_experts": 4294967299})")
                                      << ": num_experts is 4294967299, not an integer in 1..1048576";
        QTest::newRow("experts uint64")
            << QStringLiteral(R"({"counts": [[1]], "num_layers": 1, "num_experts": 18446744073709551615})")
            << ": num_experts is 18446744073709551615, not an integer in 1..1048576";
        QTest::newRow("declared experts, short rows")
            << QStringLiteral(R"({"counts": [[1, 2, 3]], "num_layers": 1, "num_experts": 1000000})")
            << ": counts[0] must hold num_experts = 1000000 integers";
        QTest::newRow("layer sum overflows")
            << QStringLiteral(R"({"counts": [[9223372036854775807, 1], [1, 1]], "num_layers": 2, "num_experts": 2})")
            << ": counts[0] adds up to more than 9223372036854775807";
        QTest::newRow("src number") << QStringLiteral(
                                           R"({"counts": [[1, 2]], "num_layers": 1, "num_experts": 2, "src": 5})")
                                    << ": src is 5, not a string";
        QTest::newRow("src deep") << QStringLiteral(
                                         R"({"counts": [[1, 2]], "num_layers": 1, "num_experts": 2, "src": [[[]]]})")
                                  << ": src is a list, not a string";
        QTest::newRow("number overflow") << QStringLiteral(
                                                R"({"counts": [[1, 1e500]], "num_layers": 1, "num_experts": 2})")
                                         << ": malformed JSON: number overflow parsing '1e500' (field counts[0][1])";
    }
    void aggregateBadInput() {
        QFETCH(QString, body);
        QFETCH(QString, error);
        const auto dir = test::temp_dir(QStringLiteral("aggbad"));
        const auto f = dir / "agg.json";
        test::write_file(f, body.toStdString());
        ImportOptions opt;
        opt.format = TraceFormat::Aggregate;
        struct Sink : ImportSink {
            void begin(const ModelDescription&, TraceFormat) override {}
            void sample(SampleRecord&&) override {}
            void aggregate(AggregateCounts&&) override {}
        } sink;
        try {
            import_trace({f}, opt, sink);
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()), QString::fromStdString(f.string()) + error);
        }
    }

    void driverChecks() {
        const auto dir = test::temp_dir(QStringLiteral("driver"));
        const std::string csv =
            "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n2,0,a,\"[2, 3]\"\n";
        test::write_file(dir / "a" / "p.csv", csv);
        test::write_file(dir / "b" / "p.csv", csv);
        test::write_file(dir / "empty.csv", "");
        test::write_file(dir / "s.json", R"([{"0": null, "1": [[0, 1]], "2": [[1, 2]]}])");
        ImportOptions opt;
        opt.model = tiny_model();
        // Same stem in two folders: one-sample CSV ids are file stems, so they collide.
        QCOMPARE(import_error({dir / "a", dir / "b"}, opt),
                 QString::fromStdString((dir / "b" / "p.csv").string() + ": duplicate sample id 'p' (first seen in " +
                                        (dir / "a" / "p.csv").string() + ")"));
        QCOMPARE(import_error({dir / "empty.csv"}, opt),
                 QString::fromStdString((dir / "empty.csv").string() + ": empty file"));
        QCOMPARE(import_error({dir / "a" / "p.csv", dir / "s.json"}, opt),
                 QString::fromStdString((dir / "s.json").string() + ": format step-json differs from prompt-csv of " +
                                        (dir / "a" / "p.csv").string() +
                                        "; import different formats as separate traces"));
        QCOMPARE(import_error({dir / "nowhere"}, opt),
                 QString::fromStdString((dir / "nowhere").string() + ": no such file or folder"));
        ImportOptions nomodel;
        QCOMPARE(import_error({dir / "a" / "p.csv"}, nomodel),
                 QString::fromStdString("no model description for " + (dir / "a" / "p.csv").string() +
                                        ": give --model NAME, --model-config config.json, or --experts E --top-k K"));
        // Experts and top-k alone suffice for self-describing formats: the layers come from the file.
        ImportOptions flags;
        flags.model.experts = 4;
        flags.model.top_k = 2;
        const Trace t = import_trace_to_memory({dir / "a" / "p.csv"}, flags);
        QCOMPARE(t.model.moe_layers, (std::vector<int>{1, 2}));
        QCOMPARE(t.model.num_hidden_layers, 3);
        // Unknown --format names list the valid ones.
        try {
            parse_trace_format("pt");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()),
                     QStringLiteral("unknown format 'pt' (valid: auto, sglang, vllm, npy, npz, nested-json, nrlre1, "
                                    "megatron, step-json, prompt-csv, aggregate, loads)"));
        }
    }

    void driverHostileInputs() {
        const auto dir = test::temp_dir(QStringLiteral("hostile"));
        const std::string csv =
            "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n2,0,a,\"[2, 3]\"\n";
        test::write_file(dir / "p.csv", csv);
        ImportOptions opt;
        opt.model = tiny_model();
        // Sizes are checked before anything is allocated from them (bug 5).
        ImportOptions huge;
        huge.format = TraceFormat::NestedJson;
        huge.model.experts = 4;
        huge.model.top_k = 2;
        huge.model.num_hidden_layers = 1000000000;
        test::write_file(dir / "n.json", "[[[0, 1]]]");
        QCOMPARE(import_error({dir / "n.json"}, huge),
                 QStringLiteral("model: num_hidden_layers must be in 1..100000 (got 1000000000)"));
        huge.model.num_hidden_layers = 0;
        huge.model.moe_layers = {0};
        huge.model.experts = 20000000;
        QCOMPARE(import_error({dir / "n.json"}, huge),
                 QStringLiteral("model: experts must be in 1..1048576 (got 20000000)"));
        // Self-described layer ids stay bounded (bug 13): no overflow of num_hidden_layers.
        test::write_file(dir / "big.csv", "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n"
                                          "2147483647,0,a,\"[2, 3]\"\n");
        ImportOptions flags;
        flags.model.experts = 4;
        flags.model.top_k = 2;
        QCOMPARE(import_error({dir / "big.csv"}, flags),
                 QString::fromStdString((dir / "big.csv").string() +
                                        ": record 2: Layer ID 2147483647 is out of range 0..99999"));
        // Not a regular file, a folder that cannot be walked (bug 14).
        const auto fifo = dir / "pipe.json";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QCOMPARE(import_error({fifo}, opt),
                 QString::fromStdString(fifo.string() +
                                        ": not a regular file or folder (devices, pipes and sockets are "
                                        "not trace files)"));
        std::filesystem::remove(fifo);
        // A subfolder the user may not read: named, not skipped and not a raw filesystem_error.
        // As root (whom permissions do not stop) the walk runs in a child that drops to uid 65534.
        test::write_file(dir / "walk" / "a.csv", csv);
        test::write_file(dir / "walk" / "locked" / "b.csv", csv);
        std::filesystem::permissions(dir / "walk" / "locked", std::filesystem::perms::owner_all);
        std::filesystem::permissions(dir, std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
                                     std::filesystem::perm_options::add);
        int pipefd[2];
        QCOMPARE(::pipe(pipefd), 0);
        const pid_t pid = ::fork();
        QVERIFY(pid >= 0);
        if (pid == 0) {
            ::close(pipefd[0]);
            std::string out;
            if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) out = "cannot drop privileges: ";
            try {
                collect_trace_files({dir / "walk"});
                out += "(no error)";
            } catch (const std::exception& e) {
                out += e.what();
            }
            [[maybe_unused]] auto n = ::write(pipefd[1], out.data(), out.size());
            ::_exit(0);
        }
        ::close(pipefd[1]);
        std::string got;
        char buf[4096];
        for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;)
            got.append(buf, static_cast<std::size_t>(n));
        ::close(pipefd[0]);
        ::waitpid(pid, nullptr, 0);
        std::filesystem::permissions(dir / "walk" / "locked", std::filesystem::perms::all);
        QCOMPARE(QString::fromStdString(got), QString::fromStdString((dir / "walk" / "locked").string() +
                                                                     ": cannot read folder (Permission denied)"));
        // The fingerprint does not depend on the order of the files (bug 11).
        test::write_file(dir / "q.csv",
                         "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[1, 2]\"\n2,0,a,\"[2, 3]\"\n");
        ImportSummary ab, ba, a, again;
        import_trace_to_memory({dir / "p.csv", dir / "q.csv"}, opt, &ab);
        import_trace_to_memory({dir / "q.csv", dir / "p.csv"}, opt, &ba);
        import_trace_to_memory({dir / "p.csv"}, opt, &a);
        import_trace_to_memory({dir / "p.csv"}, opt, &again);
        QCOMPARE(hex64(ab.fingerprint), hex64(ba.fingerprint));
        QVERIFY(ab.fingerprint != a.fingerprint);
        QCOMPARE(hex64(a.fingerprint), hex64(fnv1a64(csv.data(), csv.size()))); // one file: its own hash
        QCOMPARE(hex64(a.fingerprint), hex64(again.fingerprint));
    }

    void cancellation() {
        ROUTEPACK_REQUIRE_SHARED(dir, "traces/deepseek-v2-lite");
        std::atomic<bool> cancel{false};
        struct Sink : ImportSink {
            std::atomic<bool>* cancel;
            int samples = 0;
            void begin(const ModelDescription&, TraceFormat) override {}
            void sample(SampleRecord&&) override {
                if (++samples == 10) cancel->store(true);
            }
            void aggregate(AggregateCounts&&) override {}
        } sink;
        sink.cancel = &cancel;
        ImportOptions opt;
        opt.model = known_model("deepseek-v2-lite");
        QVERIFY_THROWS_EXCEPTION(Cancelled, import_trace({dir}, opt, sink, {}, &cancel));
        QVERIFY(sink.samples < 599);
    }
};

QTEST_GUILESS_MAIN(TestImportReal)
#include "tst_import_real.moc"
