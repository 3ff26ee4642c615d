// End to end on the real traces, as a new user runs the CLI: import both
// sets with the shipped model descriptions, define the windows, plan with the shipped topologies,
// compare, validate, export expert maps, write a synthetic DeepSeek-V2-Lite-shaped checkpoint, rewrite it
// with the CSV window's plan, check its expert slots and invert it back to byte equality.
#include "tests/testutil.h"

#include <QProcess>
#include <QtTest>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

using Run = routepack::test::CliRun;
QString q(const fs::path& p) {
    return routepack::test::qpath(p);
}
Run cli(const QStringList& args) {
    return routepack::test::run_cli(args);
}
QString topology(const char* name) {
    return QStringLiteral(ROUTEPACK_SOURCE_DIR) + QStringLiteral("/resources/topologies/") + QLatin1String(name) +
           QStringLiteral(".json");
}

} // namespace

class TestEndToEnd : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void realTracesWalkThrough() {
        ROUTEPACK_REQUIRE_SHARED(ds, "traces/deepseek-v2-lite");
        ROUTEPACK_REQUIRE_SHARED(mav, "traces/llama4-maverick");
        const auto tmp = routepack::test::temp_dir(QStringLiteral("e2e"));
        const QString db = q(tmp / "lib.routepack");
        Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"),
                     QStringLiteral("ds"), QStringLiteral("--model"), QStringLiteral("deepseek-v2-lite"), q(ds)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"),
                 QStringLiteral("maverick"), QStringLiteral("--model"), QStringLiteral("llama4-maverick"), q(mav)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("step0"), QStringLiteral("--first"), QStringLiteral("512")});
        QVERIFY2(r.code == 0, qPrintable(r.err));

        struct Case {
            const char* trace;
            const char* window; // empty: the whole trace
            const char* topo;
            int samples;
        } cases[] = {{"ds", "step0", "deepseek-v2-lite-ep8-dp4", 512},
                     {"ds", "step0", "deepseek-v2-lite-ep16-dp8", 512},
                     {"maverick", "", "llama4-maverick-ep8-dp4", 235},
                     {"maverick", "", "llama4-maverick-ep16-dp8", 235}};
        for (const auto& c : cases) {
            const QString plan = q(tmp / (std::string(c.topo) + ".plan.json"));
            QStringList args{QStringLiteral("plan"),    QStringLiteral("--db"),       db,
                             QStringLiteral("--trace"), QString::fromLatin1(c.trace), QStringLiteral("--topology"),
                             topology(c.topo),          QStringLiteral("--out"),      plan,
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
        // Step 5: rewrite it with the CSV window's plan, verify the expert slots, invert back to byte equality.
        const QString dsplan = q(tmp / "deepseek-v2-lite-ep8-dp4.plan.json");
        r = cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), dsplan, QStringLiteral("--input"),
                 q(tmp / "ckpt"), QStringLiteral("--output"), q(tmp / "ckpt-physical"), QStringLiteral("--verify")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains(QStringLiteral("checkpoint: hf-per-expert, 2 shard(s), MoE layers 1-26, 64 experts")),
                 qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("verified: every output file equals its planned source bytes")),
                 qPrintable(r.out));
        r = cli({QStringLiteral("synth-checkpoint"), QStringLiteral("--check"), q(tmp / "ckpt-physical")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(
            r.out.contains(QStringLiteral(": 4992 routed-expert tensors checked: every slot holds the expected logical "
                                          "expert (physical order, placement ")),
            qPrintable(r.out));
        // The rewritten slots are not the logical order: the check against logical order must fail there.
        fs::remove(tmp / "ckpt-physical" / "routepack-rewrite.json");
        r = cli({QStringLiteral("synth-checkpoint"), QStringLiteral("--check"), q(tmp / "ckpt-physical")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains(QStringLiteral(", expected layer 1 expert ")), qPrintable(r.err));
        r = cli({QStringLiteral("rewrite"), QStringLiteral("--plan"), dsplan, QStringLiteral("--input"),
                 q(tmp / "ckpt-physical"), QStringLiteral("--output"), q(tmp / "ckpt-logical"),
                 QStringLiteral("--inverse"), QStringLiteral("--verify")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        int files = 0;
        for (const auto& de : fs::directory_iterator(tmp / "ckpt")) {
            QVERIFY2(routepack::test::read_file(de.path()) ==
                         routepack::test::read_file(tmp / "ckpt-logical" / de.path().filename()),
                     qPrintable(q(de.path().filename())));
            ++files;
        }
        QCOMPARE(files, 4); // 2 shards, index, config.json
        r = cli({QStringLiteral("synth-checkpoint"), QStringLiteral("--check"), q(tmp / "ckpt-logical")});
        QVERIFY2(r.code == 0 && r.out.contains(QStringLiteral("(logical order")), qPrintable(r.out + r.err));
        fs::remove_all(tmp);
    }
};

QTEST_GUILESS_MAIN(TestEndToEnd)
#include "tst_e2e.moc"
