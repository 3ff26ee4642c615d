// End to end on the real traces, as a new user runs the CLI (issue 6 steps 1-5 so far): import both
// sets with the shipped model descriptions, define the windows, plan with the shipped topologies,
// compare, validate, export expert maps, write a synthetic DeepSeek-V2-Lite-shaped checkpoint.
#include "tests/testutil.h"

#include <QProcess>
#include <QtTest>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

using Run = routepack::test::CliRun;
QString q(const fs::path& p) { return routepack::test::qpath(p); }
Run cli(const QStringList& args) { return routepack::test::run_cli(args); }
QString topology(const char* name) {
    return QStringLiteral(ROUTEPACK_SOURCE_DIR) + QStringLiteral("/resources/topologies/") + QLatin1String(name) +
           QStringLiteral(".json");
}

}  // namespace

class TestEndToEnd : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void realTracesWalkThrough() {
        ROUTEPACK_REQUIRE_SHARED(ds, "traces/deepseek-v2-lite");
        ROUTEPACK_REQUIRE_SHARED(mav, "traces/llama4-maverick");
        const auto tmp = routepack::test::temp_dir(QStringLiteral("e2e"));
        const QString db = q(tmp / "lib.routepack");
        Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"), QStringLiteral("ds"),
                     QStringLiteral("--model"), QStringLiteral("deepseek-v2-lite"), q(ds)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"), QStringLiteral("maverick"),
                 QStringLiteral("--model"), QStringLiteral("llama4-maverick"), q(mav)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("step0"), QStringLiteral("--first"), QStringLiteral("512")});
        QVERIFY2(r.code == 0, qPrintable(r.err));

        struct Case {
            const char* trace;
            const char* window;  // empty: the whole trace
            const char* topo;
            int samples;
        } cases[] = {{"ds", "step0", "deepseek-v2-lite-ep8-dp4", 512},
                     {"ds", "step0", "deepseek-v2-lite-ep16-dp8", 512},
                     {"maverick", "", "llama4-maverick-ep8-dp4", 235},
                     {"maverick", "", "llama4-maverick-ep16-dp8", 235}};
        for (const auto& c : cases) {
            const QString plan = q(tmp / (std::string(c.topo) + ".plan.json"));
            QStringList args{QStringLiteral("plan"),     QStringLiteral("--db"),       db,
                             QStringLiteral("--trace"),  QString::fromLatin1(c.trace), QStringLiteral("--topology"),
                             topology(c.topo),           QStringLiteral("--out"),      plan,
                             QStringLiteral("--json")};
            if (*c.window) args << QStringLiteral("--window") << QString::fromLatin1(c.window);
            r = cli(args);
            QVERIFY2(r.code == 0, qPrintable(r.err));
            const auto j = nlohmann::json::parse(r.out.toStdString());
            QCOMPARE(j["samples"].get<int>(), c.samples);
            QVERIFY(j["row_count_certified"].get<bool>());
            // RoutePack beats reorder and karmarkar-karp on the primary score at default budgets.
            QVERIFY2(j["routepack_vs_reorder"]["joint_pct"].get<double>() < 0, c.topo);
            QVERIFY2(j["routepack_vs_karmarkar_karp"]["joint_pct"].get<double>() < 0, c.topo);
            r = cli({QStringLiteral("validate"), plan, QStringLiteral("--db"), db});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            QVERIFY(r.out.contains(QStringLiteral("identical score")));
            r = cli({QStringLiteral("export-map"), QStringLiteral("--plan"), plan, QStringLiteral("--format"),
                     QStringLiteral("vllm"), QStringLiteral("--out"), plan + QStringLiteral(".map.json")});
            QVERIFY2(r.code == 0, qPrintable(r.err));
        }
        r = cli({QStringLiteral("synth-checkpoint"), QStringLiteral("--out"), q(tmp / "ckpt")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(fs::exists(tmp / "ckpt" / "model.safetensors.index.json"));
        QVERIFY(r.out.contains(QStringLiteral("64 experts x 26 MoE layers (1-26 of 27)")));
        fs::remove_all(tmp);
    }
};

QTEST_GUILESS_MAIN(TestEndToEnd)
#include "tst_e2e.moc"
