// Model descriptions, layer lists, natural id order, fingerprints, load CV, and the one JSON field
// reader (util::JsonField) with every error wording.
#include "core/model/model.h"
#include "core/model/trace.h"
#include "core/plan/budgets.h"
#include "core/util/atomic_file.h"
#include "core/util/errors.h"
#include "core/util/json_field.h"
#include "core/util/settings.h"
#include "tests/cli_error_of.h"
#include "tests/testutil.h"

#include <QtTest>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string_view>

using namespace routepack;
using routepack::test::error_of;

class TestCoreModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void settingTable() {
        // Every setting outside the budgets once, requests whole phrases in every front end's words.
        std::set<std::string> keys;
        for (const SettingRow& row : setting_table()) {
            QVERIFY2(keys.insert(row.key).second, row.key);
            QVERIFY2(!find_budget(row.key), row.key);
            QCOMPARE(find_setting(row.key), &row);
            QCOMPARE(row.request, std::string_view(row.key).starts_with("ask_"));
            if (row.request) QVERIFY2(row.flag && row.label && row.python, row.key);
        }
        QCOMPARE(keys.size(), std::size_t{35});
        QCOMPARE(find_setting(""), nullptr);
        QCOMPARE(find_setting("levels"), nullptr);
        // The CLI's words: the flag with the value the message quotes after it, a request's phrase
        // whole, the library's words where the CLI has no flag; a budget by its own table's flag.
        QCOMPARE(cli::cli_setting_text(Setting{"split", "40", "split 40"}), std::string("--split 40"));
        QCOMPARE(cli::cli_setting_text(Setting{"ask_format", "", "name the format"}), std::string("use --format"));
        QCOMPARE(cli::cli_setting_text(Setting{"run_name", "'x'", "run name 'x'"}), std::string("run name 'x'"));
        QCOMPARE(cli::cli_setting_text(Setting{"levels", "", "budget 'levels'"}), std::string("--levels"));
        QCOMPARE(cli::cli_setting_text(Setting{"", "", "the window"}), std::string("the window"));
    }

    void layerList_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expanded");
        QTest::addColumn<QString>("formatted");
        QTest::newRow("range") << "1-26"
                               << "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26"
                               << "1-26";
        QTest::newRow("step") << "1-9:2"
                              << "1,3,5,7,9"
                              << "1-9:2";
        QTest::newRow("mixed") << "0,3,5-7"
                               << "0,3,5,6,7"
                               << "0,3,5-7";
        QTest::newRow("single") << "4"
                                << "4"
                                << "4";
        QTest::newRow("pair") << "2,5"
                              << "2,5"
                              << "2,5";
    }
    void atomicWrite() {
        // Replaces the file whole, leaves no temporary behind, and two writes never share a
        // temporary name (the CLI once used a fixed "<out>.tmp").
        const QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::filesystem::path out = std::filesystem::path(dir.path().toStdString()) / "plan.json";
        routepack::util::write_file_atomically(out, "first\n");
        routepack::util::write_file_atomically(out, "second");
        std::ifstream in(out, std::ios::binary);
        const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QCOMPARE(QString::fromStdString(got), QStringLiteral("second"));
        int entries = 0;
        for (const auto& e : std::filesystem::directory_iterator(out.parent_path())) {
            (void)e;
            ++entries;
        }
        QCOMPARE(entries, 1);
        // A folder that does not exist: the create step fails with ENOENT, nothing is written.
        const std::filesystem::path missing = out.parent_path() / "no-such-folder" / "plan.json";
        try {
            routepack::util::write_file_atomically(missing, "x");
            QFAIL("no error");
        } catch (const routepack::util::AtomicWriteError& e) {
            QCOMPARE(int(e.step), int(routepack::util::AtomicWriteError::Step::Create));
            QCOMPARE(e.error, ENOENT);
            QCOMPARE(QString::fromStdString(e.what()), QStringLiteral("create: No such file or directory"));
            QVERIFY(e.temp.string().rfind(missing.string() + ".", 0) == 0);
            QVERIFY(e.temp.string().size() > 4 && e.temp.string().substr(e.temp.string().size() - 4) == ".tmp");
        }
        QVERIFY(!std::filesystem::exists(missing.parent_path()));
    }

    void layerList() {
        QFETCH(QString, text);
        QFETCH(QString, expanded);
        QFETCH(QString, formatted);
        const auto v = parse_layer_list(text.toStdString());
        QStringList parts;
        for (int x : v)
            parts << QString::number(x);
        QCOMPARE(parts.join(QLatin1Char(',')), expanded);
        QCOMPARE(QString::fromStdString(format_layer_list(v)), formatted);
    }
    void layerListErrors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("error");
        QTest::newRow("descending") << "5,3"
                                    << "--moe-layers: layers must be ascending and unique in '5,3'";
        QTest::newRow("garbage") << "1-x"
                                 << "--moe-layers: malformed layer list '1-x' (expected e.g. 1-26, 1-47:2 or 0,3,5)";
        QTest::newRow("empty") << ""
                               << "--moe-layers: empty layer list";
        QTest::newRow("backwards range") << "9-3"
                                         << "--moe-layers: bad range '9-3' in '9-3'";
        QTest::newRow("zero step") << "1-5:0"
                                   << "--moe-layers: step must be >= 1 in '1-5:0'";
        // Breaker report (bugs 5, 13): no int overflow, no list larger than any model.
        QTest::newRow("int max range") << "2147483600-2147483647:100"
                                       << "--moe-layers: layer id 2147483600 in '2147483600-2147483647:100' is larger "
                                          "than 1000000";
        QTest::newRow("range to int max")
            << "1-2147483647"
            << "--moe-layers: layer id 2147483647 in '1-2147483647' is larger than 1000000";
        QTest::newRow("beyond int64") << "99999999999999999999"
                                      << "--moe-layers: layer id 99999999999999999999 in '99999999999999999999' is "
                                         "larger than 1000000";
        QTest::newRow("huge step") << "1-5:99999999999"
                                   << "--moe-layers: layer id 99999999999 in '1-5:99999999999' is larger than 1000000";
        QTest::newRow("too many layers") << "0-999999"
                                         << "--moe-layers: '0-999999' lists more than 100000 layers";
        QTest::newRow("too many in pieces") << "0-60000,60001-120000"
                                            << "--moe-layers: '0-60000,60001-120000' lists more than 100000 layers";
        QTest::newRow("line break")
            << "1-\n2"
            << "--moe-layers: malformed layer list '1-\\n2' (expected e.g. 1-26, 1-47:2 or 0,3,5)";
    }
    void layerListErrors() {
        QFETCH(QString, text);
        QFETCH(QString, error);
        try {
            parse_layer_list(text.toStdString());
            QFAIL("no error");
        } catch (const InputError& e) {
            // The CLI names the setting by its flag; the library by its words.
            QCOMPARE(QString::fromStdString(cli::cli_error_text(e)), error);
            QVERIFY(e.setting() && e.setting()->key == "moe_layers");
            QCOMPARE(QString::fromStdString(e.what()), QStringLiteral("MoE layers") + error.mid(12));
        }
    }
    void knownModels() {
        const auto names = known_model_names();
        QVERIFY(std::find(names.begin(), names.end(), "deepseek-v2-lite") != names.end());
        const auto ds = known_model("deepseek-v2-lite");
        QCOMPARE(ds.num_hidden_layers, 27);
        QCOMPARE(ds.experts, 64);
        QCOMPARE(ds.top_k, 6);
        QCOMPARE(ds.num_moe_layers(), 26);
        QCOMPARE(ds.moe_layers.front(), 1);
        QCOMPARE(ds.moe_layers.back(), 26);
        const auto l4 = known_model("llama4-maverick");
        QCOMPARE(l4.num_moe_layers(), 24);
        QCOMPARE(l4.moe_layers.front(), 1);
        QCOMPARE(l4.moe_layers.back(), 47);
        QCOMPARE(l4.moe_index(47), 23);
        QCOMPARE(l4.moe_index(2), -1);
        QCOMPARE(l4.experts, 128);
        QCOMPARE(l4.top_k, 1);
        try {
            known_model("gpt-5");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()),
                     QStringLiteral("unknown model 'gpt-5' (known: deepseek-v2-lite, llama4-maverick, qwen2-57b-a14b, "
                                    "qwen3-30b-a3b)"));
        }
    }
    void hfConfig() {
        // DeepSeek-V2-Lite shape: first_k_dense_replace + moe_layer_freq.
        auto ds = model_from_hf_config(R"({"model_type":"deepseek_v2","num_hidden_layers":27,"n_routed_experts":64,
            "num_experts_per_tok":6,"first_k_dense_replace":1,"moe_layer_freq":1})",
                                       "config.json");
        QCOMPARE(ds.moe_layers, known_model("deepseek-v2-lite").moe_layers);
        QCOMPARE(ds.experts, 64);
        // Llama 4: MoE every interleave_moe_layer_step layers, inside text_config.
        auto l4 = model_from_hf_config(R"({"model_type":"llama4","text_config":{"num_hidden_layers":48,
            "num_local_experts":128,"num_experts_per_tok":1,"interleave_moe_layer_step":2}})",
                                       "config.json");
        QCOMPARE(l4.moe_layers, known_model("llama4-maverick").moe_layers);
        // Qwen2-MoE: decoder_sparse_step 2 and an mlp_only layer.
        auto qw = model_from_hf_config(R"({"num_hidden_layers":6,"num_experts":8,"num_experts_per_tok":2,
            "decoder_sparse_step":2,"mlp_only_layers":[3]})",
                                       "c.json");
        QCOMPARE(qw.moe_layers, (std::vector<int>{1, 5}));
        try {
            model_from_hf_config(R"({"num_hidden_layers":6,"num_experts_per_tok":2})", "c.json");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()),
                     QStringLiteral("c.json: no expert count (n_routed_experts, num_local_experts or num_experts)"));
        }
        try {
            model_from_hf_config(R"({"num_hidden_layers":6,"num_experts":4,"num_experts_per_tok":5})", "c.json");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()), QStringLiteral("c.json: model: top_k must be in 1..4 (got 5)"));
        }
        // A description read from a file names the file in the model's own checks.
        try {
            parse_model_description(R"({"name":"m","num_hidden_layers":4,"experts":8,"top_k":2,"moe_layers":[]})",
                                    "models/m.json");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()), QStringLiteral("models/m.json: model 'm': no MoE layers"));
        }
    }
    void modelBounds_data() {
        QTest::addColumn<int>("layers");
        QTest::addColumn<int>("experts");
        QTest::addColumn<int>("topK");
        QTest::addColumn<QString>("moe");
        QTest::addColumn<QString>("error"); // empty: valid
        QTest::newRow("experts 2e7") << 12 << 20000000 << 4 << "1-11"
                                     << "model: experts must be in 1..1048576 (got 20000000)";
        QTest::newRow("experts 2^20") << 12 << 1048576 << 4 << "1-11"
                                      << "";
        QTest::newRow("top_k above 1024") << 12 << 4096 << 2000 << "1-11"
                                          << "model: top_k must be in 1..1024 (got 2000)";
        QTest::newRow("top_k above experts") << 12 << 8 << 9 << "1-11"
                                             << "model: top_k must be in 1..8 (got 9)";
        QTest::newRow("layers 2e8") << 200000000 << 8 << 2 << "1-11"
                                    << "model: num_hidden_layers must be in 1..100000 (got 200000000)";
        QTest::newRow("counts per sample") << 100000 << 1048576 << 8 << "0-99999"
                                           << "model: 100000 MoE layers x 1048576 experts = 104857600000 counts per "
                                              "sample, more than 16777216";
        QTest::newRow("counts per sample at the bound") << 100000 << 167 << 8 << "0-99999"
                                                        << "";
        QTest::newRow("counts per sample above the bound")
            << 100000 << 168 << 8 << "0-99999"
            << "model: 100000 MoE layers x 168 experts = 16800000 counts "
               "per sample, more than 16777216";
    }
    void modelBounds() {
        QFETCH(int, layers);
        QFETCH(int, experts);
        QFETCH(int, topK);
        QFETCH(QString, moe);
        QFETCH(QString, error);
        ModelDescription m;
        m.num_hidden_layers = layers;
        m.experts = experts;
        m.top_k = topK;
        m.moe_layers = parse_layer_list(moe.toStdString());
        QString got;
        try {
            m.validate();
        } catch (const InputError& e) {
            got = QString::fromStdString(e.what());
        }
        QCOMPARE(got, error);
    }
    void hostileModelFiles_data() {
        QTest::addColumn<bool>("hf"); // config.json (true) or our model description (false)
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("error");
        const QString base = QStringLiteral(R"("num_experts": 8, "num_experts_per_tok": 2)");
        QTest::newRow("layers wrap") << true << R"({"num_hidden_layers": 4294967308, )" + base + "}"
                                     << "c.json: num_hidden_layers is 4294967308, not an integer in 1..100000";
        QTest::newRow("layers 2e8") << true << R"({"num_hidden_layers": 200000000, )" + base + "}"
                                    << "c.json: num_hidden_layers is 200000000, not an integer in 1..100000";
        QTest::newRow("experts uint64")
            << true << R"({"num_hidden_layers": 6, "num_experts": 18446744073709551615, "num_experts_per_tok": 2})"
            << "c.json: num_experts is 18446744073709551615, not an integer in 1..1048576";
        QTest::newRow("negative top-k") << true
                                        << R"({"num_hidden_layers": 6, "num_experts": 8, "num_experts_per_tok": -2})"
                                        << "c.json: num_experts_per_tok is -2, not an integer in 1..1024";
        QTest::newRow("mlp_only_layers strings")
            << true << R"({"num_hidden_layers": 6, "mlp_only_layers": ["a"], )" + base + "}"
            << "c.json: mlp_only_layers[0] is \"a\", not an integer in 0..99999";
        QTest::newRow("mlp_only_layers huge")
            << true << R"({"num_hidden_layers": 6, "mlp_only_layers": [4294967297], )" + base + "}"
            << "c.json: mlp_only_layers[0] is 4294967297, not an integer in 0..99999";
        QTest::newRow("moe_layers strings") << true << R"({"num_hidden_layers": 6, "moe_layers": ["1"], )" + base + "}"
                                            << "c.json: moe_layers[0] is \"1\", not an integer in 0..99999";
        QTest::newRow("model_type number") << true << R"({"num_hidden_layers": 6, "model_type": 5, )" + base + "}"
                                           << "c.json: model_type is 5, not a string";
        QTest::newRow("number overflow") << true << R"({"num_hidden_layers": 6, "x": 1e999, )" + base + "}"
                                         << "c.json: malformed JSON: number overflow parsing '1e999' (field x)";
        QTest::newRow("name number")
            << false << R"({"name": 5, "num_hidden_layers": 2, "experts": 4, "top_k": 2, "moe_layers": [1]})"
            << "c.json: name is 5, not a string";
        QTest::newRow("description layers wrap")
            << false << R"({"name": "x", "num_hidden_layers": 4294967298, "experts": 4, "top_k": 2, "moe_layers": [1]})"
            << "c.json: num_hidden_layers is 4294967298, not an integer in 1..100000";
        QTest::newRow("description layer id wraps")
            << false << R"({"name": "x", "num_hidden_layers": 2, "experts": 4, "top_k": 2, "moe_layers": [4294967297]})"
            << "c.json: moe_layers[0] is 4294967297, not an integer in 0..99999";
        QTest::newRow("description source list")
            << false
            << R"({"name": "x", "num_hidden_layers": 2, "experts": 4, "top_k": 2, "moe_layers": [1], "source": [[1]]})"
            << "c.json: source is a list, not a string";
    }
    void hostileModelFiles() {
        QFETCH(bool, hf);
        QFETCH(QString, json);
        QFETCH(QString, error);
        try {
            if (hf)
                model_from_hf_config(json.toStdString(), "c.json");
            else
                parse_model_description(json.toStdString(), "c.json");
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()), error);
        }
    }
    // Every wording of the one field reader, on hand cases: the value as written (never narrowed,
    // wrapped or rounded), then the whole rule; "is missing" for an absent field.
    void jsonFieldErrors_data() {
        QTest::addColumn<QString>("json"); // the document; the field read is {"a": {"b": [x]}}.a.b[0]
        QTest::addColumn<QString>("read");
        QTest::addColumn<QString>("error");
        auto row = [](const char* name, const char* value, const char* read, const char* error) {
            QTest::newRow(name) << QStringLiteral(R"({"a": {"b": [%1]}})").arg(QLatin1String(value))
                                << QString::fromLatin1(read) << QString::fromLatin1(error);
        };
        row("missing", "", "int", "f.json: a.b[0] is missing");
        row("string", "\"7\"", "int", "f.json: a.b[0] is \"7\", not an integer in 1..64");
        row("list", "[7]", "int", "f.json: a.b[0] is a list, not an integer in 1..64");
        row("null", "null", "int", "f.json: a.b[0] is null, not an integer in 1..64");
        row("boolean", "true", "int", "f.json: a.b[0] is true, not an integer in 1..64");
        row("fraction", "1.5", "int", "f.json: a.b[0] is 1.5, not an integer in 1..64");
        row("integral float refused", "2.0", "int", "f.json: a.b[0] is 2.0, not an integer in 1..64");
        row("fraction accepted kind", "1.5", "int-floats", "f.json: a.b[0] is 1.5, not an integer in 1..64");
        row("below", "0", "int", "f.json: a.b[0] is 0, not an integer in 1..64");
        row("negative", "-4", "int", "f.json: a.b[0] is -4, not an integer in 1..64");
        row("above", "65", "int", "f.json: a.b[0] is 65, not an integer in 1..64");
        row("2^32+1", "4294967297", "int", "f.json: a.b[0] is 4294967297, not an integer in 1..64");
        row("2^63", "9223372036854775808", "int64", "f.json: a.b[0] is 9223372036854775808, not an integer");
        row("2^64-1 as int64", "18446744073709551615", "int64",
            "f.json: a.b[0] is 18446744073709551615, not an integer");
        row("2^64", "18446744073709551616", "uint64",
            "f.json: a.b[0] is 1.8446744073709552e+19, not an integer in 0..18446744073709551615");
        row("float 2^63", "9223372036854775808.0", "int-floats",
            "f.json: a.b[0] is 9.223372036854776e+18, not an integer in 1..64");
        row("negative unsigned", "-1", "uint64", "f.json: a.b[0] is -1, not an integer in 0..18446744073709551615");
        row("number string", "\"x\"", "number", "f.json: a.b[0] is \"x\", not a finite number");
        row("number out of range", "1.5", "fraction", "f.json: a.b[0] is 1.5, not a number in (0, 1]");
        row("number at open end", "0", "fraction", "f.json: a.b[0] is 0, not a number in (0, 1]");
        row("number below", "-0.5", "at-least", "f.json: a.b[0] is -0.5, not a finite number >= 0");
        row("string wanted", "5", "string", "f.json: a.b[0] is 5, not a string");
        row("boolean wanted", "1", "bool", "f.json: a.b[0] is 1, not true or false");
        row("list wanted", "{\"k\": 1}", "list", "f.json: a.b[0] is an object, not a list");
        row("object wanted", "[1]", "object", "f.json: a.b[0] is a list, not an object");
        row("empty list", "[]", "object", "f.json: a.b[0] is [], not an object");
        row("empty object", "{}", "list", "f.json: a.b[0] is {}, not a list");
        row("unknown field", "{\"x\": 1, \"y\": 2}", "only", "f.json: a.b[0]: unknown field 'y' (known: x, z)");
    }
    void jsonFieldErrors() {
        QFETCH(QString, json);
        QFETCH(QString, read);
        QFETCH(QString, error);
        const nlohmann::json doc = util::parse_json_document(json.toStdString(), "f.json");
        const util::JsonField f = util::JsonField(doc, "f.json")["a"]["b"][0];
        const std::string r = read.toStdString();
        try {
            if (r == "int") (void)f.integer(1, 64);
            if (r == "int-floats") (void)f.integer(1, 64, util::IntegralFloats::Accept);
            if (r == "int64") (void)f.integer();
            if (r == "uint64") (void)f.unsigned_integer();
            if (r == "number") (void)f.number();
            if (r == "fraction") (void)f.number(0, 1, true, false);
            if (r == "at-least") (void)f.number(0, std::numeric_limits<double>::max());
            if (r == "string") (void)f.string();
            if (r == "bool") (void)f.boolean();
            if (r == "list") (void)f.list();
            if (r == "object") f.object();
            if (r == "only") f.only({"x", "z"});
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()), error);
        }
    }
    // Non-finite numbers reach the reader from values built in memory (JSON text has none): NaN
    // and infinities are refused by name, shown as nan / inf, never as JSON's null.
    void jsonFieldNonFinite() {
        const nlohmann::json doc = {{"x", std::nan("")}, {"y", -HUGE_VAL}, {"z", HUGE_VAL}};
        const util::JsonField f(doc, "run 3 metrics");
        QCOMPARE(QString::fromStdString(error_of<InputError>([&] { (void)f["x"].number(); })),
                 QStringLiteral("run 3 metrics: x is nan, not a finite number"));
        QCOMPARE(QString::fromStdString(error_of<InputError>([&] { (void)f["y"].number(-1, 1); })),
                 QStringLiteral("run 3 metrics: y is -inf, not a number in [-1, 1]"));
        QCOMPARE(QString::fromStdString(
                     error_of<InputError>([&] { (void)f["z"].integer(0, 10, util::IntegralFloats::Accept); })),
                 QStringLiteral("run 3 metrics: z is inf, not an integer in 0..10"));
    }
    // What the reader returns: exact integers across the whole 64-bit ranges, integral floats only
    // when asked, finite numbers, and the document itself named by its origin alone.
    void jsonFieldValues() {
        const nlohmann::json doc = nlohmann::json::parse(
            R"({"big": 4294967297, "max": 18446744073709551615, "min": -9223372036854775808, "f": 232795.0,
                "x": 0.25, "s": "name", "t": true, "l": [1, 2, 3], "n": null})");
        const util::JsonField f(doc, "f.json");
        QCOMPARE(f["big"].integer(0, INT64_MAX), std::int64_t(4294967297));
        QCOMPARE(f["max"].unsigned_integer(), std::numeric_limits<std::uint64_t>::max());
        QCOMPARE(f["min"].integer(), std::numeric_limits<std::int64_t>::min());
        QCOMPARE(f["f"].integer(0, 1 << 20, util::IntegralFloats::Accept), std::int64_t(232795));
        QCOMPARE(f["f"].unsigned_integer(1 << 20, util::IntegralFloats::Accept), std::uint64_t(232795));
        QCOMPARE(f["x"].number(0, 1, true, true), 0.25);
        QCOMPARE(f["s"].string(), std::string("name"));
        QVERIFY(f["t"].boolean());
        QCOMPARE(f["l"].list(), std::size_t(3));
        QCOMPARE(f["l"][2].integer(), std::int64_t(3));
        QVERIFY(f["n"].exists() && !f["n"].given());
        QVERIFY(!f["nope"].exists() && !f["l"][3].exists() && !f["s"]["k"].exists());
        QCOMPARE(f["l"][2].where(), std::string("f.json: l[2]"));
        QCOMPARE(f.where(), std::string("f.json"));
        QCOMPARE(QString::fromStdString(error_of<InputError>([&] { (void)f.string(); })),
                 QStringLiteral("f.json is an object, not a string"));
        // The importers' shorthand reads the same way, with the same words.
        QCOMPARE(util::json_int_value(doc["f"], "f.json", "f", 0, 1 << 20), std::int64_t(232795));
        QCOMPARE(QString::fromStdString(
                     error_of<InputError>([&] { (void)util::json_int_value(doc["x"], "f.json", "x", 0, 9); })),
                 QStringLiteral("f.json: x is 0.25, not an integer in 0..9"));
    }
    void realCheckpointConfigs_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("moeLayers");
        QTest::addColumn<int>("experts");
        QTest::addColumn<int>("topK");
        // Expected values from shared/checkpoints/README.md (dense layer 0 of qwen3_moe and deepseek_v3).
        QTest::newRow("qwen3_moe") << "qwen3_moe"
                                   << "1-2" << 16 << 4;
        QTest::newRow("mixtral") << "mixtral"
                                 << "0-1" << 8 << 2;
        QTest::newRow("olmoe") << "olmoe"
                               << "0-1" << 16 << 4;
        QTest::newRow("deepseek_v3") << "deepseek_v3"
                                     << "1-2" << 16 << 4;
        QTest::newRow("gpt_oss") << "gpt_oss"
                                 << "0-1" << 8 << 2;
    }
    void realCheckpointConfigs() {
        QFETCH(QString, folder);
        QFETCH(QString, moeLayers);
        QFETCH(int, experts);
        QFETCH(int, topK);
        ROUTEPACK_REQUIRE_SHARED(cfg, "checkpoints/" + folder.toStdString() + "/checkpoint/config.json");
        const auto m = model_from_hf_config(test::read_file(cfg), cfg.string());
        QCOMPARE(QString::fromStdString(format_layer_list(m.moe_layers)), moeLayers);
        QCOMPARE(m.experts, experts);
        QCOMPARE(m.top_k, topK);
    }
    void naturalOrder() {
        QVERIFY(natural_less("prompt_2_data", "prompt_10_data"));
        QVERIFY(!natural_less("prompt_10_data", "prompt_2_data"));
        QVERIFY(natural_less("a/9", "a/10"));
        QVERIFY(natural_less("x", "x1"));
        QVERIFY(!natural_less("x1", "x1"));
        QVERIFY(natural_less("s#2", "s#11"));
        std::vector<std::string> v{"prompt_100_data", "prompt_1_data", "prompt_20_data", "prompt_3_data"};
        std::sort(v.begin(), v.end(), natural_less);
        QCOMPARE(v, (std::vector<std::string>{"prompt_1_data", "prompt_3_data", "prompt_20_data", "prompt_100_data"}));
    }
    void fingerprint() {
        // FNV-1a 64 reference values.
        QCOMPARE(fnv1a64("", 0), 0xcbf29ce484222325ULL);
        QCOMPARE(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
        QCOMPARE(QString::fromStdString(hex64(0xaf63dc4c8601ec8cULL)), QStringLiteral("af63dc4c8601ec8c"));
    }
    void loadCv() {
        // Layer 0: loads 1,3 -> mean 2, std 1 -> CV 0.5; layer 1: empty -> 0.
        const std::vector<std::uint64_t> totals{1, 3, 0, 0};
        const auto cv = layer_load_cv(totals, 2, 2);
        QCOMPARE(cv.size(), std::size_t(2));
        QCOMPARE(cv[0], 0.5);
        QCOMPARE(cv[1], 0.0);
    }
};

QTEST_GUILESS_MAIN(TestCoreModel)
#include "tst_core_model.moc"
