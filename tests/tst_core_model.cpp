// Model descriptions, layer lists, natural id order, fingerprints, load CV.
#include "core/errors.h"
#include "core/model.h"
#include "core/trace.h"
#include "tests/testutil.h"

#include <QtTest>

using namespace routepack;

class TestCoreModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void layerList_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expanded");
        QTest::addColumn<QString>("formatted");
        QTest::newRow("range") << "1-26" << "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26"
                               << "1-26";
        QTest::newRow("step") << "1-9:2" << "1,3,5,7,9" << "1-9:2";
        QTest::newRow("mixed") << "0,3,5-7" << "0,3,5,6,7" << "0,3,5-7";
        QTest::newRow("single") << "4" << "4" << "4";
        QTest::newRow("pair") << "2,5" << "2,5" << "2,5";
    }
    void layerList() {
        QFETCH(QString, text);
        QFETCH(QString, expanded);
        QFETCH(QString, formatted);
        const auto v = parse_layer_list(text.toStdString());
        QStringList parts;
        for (int x : v) parts << QString::number(x);
        QCOMPARE(parts.join(QLatin1Char(',')), expanded);
        QCOMPARE(QString::fromStdString(format_layer_list(v)), formatted);
    }
    void layerListErrors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("error");
        QTest::newRow("descending") << "5,3" << "--moe-layers: layers must be ascending and unique in '5,3'";
        QTest::newRow("garbage") << "1-x"
                                 << "--moe-layers: malformed layer list '1-x' (expected e.g. 1-26, 1-47:2 or 0,3,5)";
        QTest::newRow("empty") << "" << "--moe-layers: empty layer list";
        QTest::newRow("backwards range") << "9-3" << "--moe-layers: bad range '9-3' in '9-3'";
        QTest::newRow("zero step") << "1-5:0" << "--moe-layers: step must be >= 1 in '1-5:0'";
    }
    void layerListErrors() {
        QFETCH(QString, text);
        QFETCH(QString, error);
        try {
            parse_layer_list(text.toStdString());
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()), error);
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
            QCOMPARE(QString::fromStdString(e.what()), QStringLiteral("model: top_k must be in 1..4 (got 5)"));
        }
    }
    void realCheckpointConfigs_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("moeLayers");
        QTest::addColumn<int>("experts");
        QTest::addColumn<int>("topK");
        // Expected values from shared/checkpoints/README.md (dense layer 0 of qwen3_moe and deepseek_v3).
        QTest::newRow("qwen3_moe") << "qwen3_moe" << "1-2" << 16 << 4;
        QTest::newRow("mixtral") << "mixtral" << "0-1" << 8 << 2;
        QTest::newRow("olmoe") << "olmoe" << "0-1" << 16 << 4;
        QTest::newRow("deepseek_v3") << "deepseek_v3" << "1-2" << 16 << 4;
        QTest::newRow("gpt_oss") << "gpt_oss" << "0-1" << 8 << 2;
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
