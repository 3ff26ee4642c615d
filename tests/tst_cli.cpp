// The headless CLI as a user runs it: real processes, real library files, exact stdout/stderr lines
// and exit codes.
#include "tests/testutil.h"

#include <QProcess>
#include <QtTest>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using routepack::test::temp_dir;
using routepack::test::write_file;

namespace {

struct Run {
    int code = -1;
    QString out, err;
};

Run cli(const QStringList& args) {
    QProcess p;
    p.start(QStringLiteral(ROUTEPACK_CLI), args);
    p.waitForFinished(600000);
    Run r;
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

QString q(const fs::path& p) { return QString::fromStdString(p.string()); }

}  // namespace

class TestCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void help() {
        const Run r = cli({QStringLiteral("--help")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains(QStringLiteral("import")));
        QVERIFY(r.out.contains(QStringLiteral("window")));
        for (const char* sub : {"import", "info", "window", "synth", "demo"}) {
            const Run s = cli({QString::fromLatin1(sub), QStringLiteral("--help")});
            QCOMPARE(s.code, 0);
            QVERIFY2(s.out.contains(QStringLiteral("--")), sub);
        }
    }

    void commandLineErrors() {
        const Run none = cli({});
        QCOMPARE(none.code, 2);
        QCOMPARE(none.err.count(QLatin1Char('\n')), 1);
        QVERIFY(none.err.startsWith(QStringLiteral("routepack: error: ")));
        const Run missing = cli({QStringLiteral("info")});
        QCOMPARE(missing.code, 2);
        QCOMPARE(missing.err, QStringLiteral("routepack: error: --db is required (see routepack --help)\n"));
    }

    void realCsvSetEndToEnd() {
        ROUTEPACK_REQUIRE_SHARED(dir, "traces/deepseek-v2-lite");
        const auto tmp = temp_dir(QStringLiteral("cli-csv"));
        const QString db = q(tmp / "lib.routepack");
        Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"), QStringLiteral("ds"),
                     QStringLiteral("--model"), QStringLiteral("deepseek-v2-lite"), q(dir)});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith(QStringLiteral("imported trace 'ds' into ") + db + QStringLiteral(": 599 samples from 599 files")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("model    deepseek-v2-lite: 26 MoE layers (1-26 of 27), 64 experts, top-6")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("lengths  min 2  mean 93.4  max 2850 tokens (t_i rule: rows)")), qPrintable(r.out));

        // Importing the same files again is detected, and nothing is added.
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"), QStringLiteral("again"),
                 QStringLiteral("--model"), QStringLiteral("deepseek-v2-lite"), q(dir)});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: these files were already imported as trace 'ds'\n"));

        // First 512 in numeric-aware id order: prompt_1 .. prompt_513 (317 is absent upstream).
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("step0"), QStringLiteral("--first"), QStringLiteral("512")});
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out, QStringLiteral("window 'step0' of trace 'ds': 512 samples (first 512 in numeric id order)\n"));

        r = cli({QStringLiteral("info"), QStringLiteral("--db"), db, QStringLiteral("--json")});
        QCOMPARE(r.code, 0);
        const auto j = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(j["traces"].size(), std::size_t(1));
        const auto& t = j["traces"][0];
        QCOMPARE(t["samples"].get<int>(), 599);
        QCOMPARE(t["length"]["min"].get<int>(), 2);
        QCOMPARE(t["length"]["max"].get<int>(), 2850);
        QCOMPARE(t["length"]["total"].get<int>(), 55918);
        QCOMPARE(t["windows"][0]["samples"].get<int>(), 512);
        QVERIFY(t["layer_load_cv"]["mean"].get<double>() > 0.1);

        r = cli({QStringLiteral("info"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--json")});
        QCOMPARE(r.code, 0);
        const auto d = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(d["traces"][0]["layer_load_cv"]["per_layer"].size(), std::size_t(26));
        QCOMPARE(d["traces"][0]["layer_load_cv"]["per_layer"][0]["layer"].get<int>(), 1);

        // Random windows are reproducible from their seed.
        for (const char* name : {"r1", "r2"}) {
            r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                     QStringLiteral("--name"), QString::fromLatin1(name), QStringLiteral("--random"), QStringLiteral("64"),
                     QStringLiteral("--seed"), QStringLiteral("7")});
            QCOMPARE(r.code, 0);
        }
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains(QStringLiteral("window    r1: 64 samples (random 64 seed 7)")));

        // Window errors: unknown trace, too many samples, no mode.
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("nope"),
                 QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--first"), QStringLiteral("5")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: no trace named 'nope' in ") + db + QStringLiteral("\n"));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--first"), QStringLiteral("600")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: --first 600 but trace 'ds' has only 599 samples\n"));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("w")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: give exactly one of --ids FILE, --first N, --random N "
                                       "--seed S, --groups LIST\n"));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--groups"), QStringLiteral("g1")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: trace 'ds' has no GRPO groups\n"));
    }

    void idsWindowAndGroups() {
        const auto tmp = temp_dir(QStringLiteral("cli-synth"));
        const QString db = q(tmp / "lib.routepack");
        Run r = cli({QStringLiteral("synth"), QStringLiteral("--out"), q(tmp / "syn"), QStringLiteral("--groups"),
                     QStringLiteral("3"), QStringLiteral("--group-size"), QStringLiteral("4"), QStringLiteral("--seed"),
                     QStringLiteral("5")});
        QCOMPARE(r.code, 0);
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"), QStringLiteral("syn"),
                 QStringLiteral("--experts"), QStringLiteral("32"), QStringLiteral("--top-k"), QStringLiteral("4"),
                 QStringLiteral("--layers"), QStringLiteral("12"), QStringLiteral("--moe-layers"), QStringLiteral("1-11"),
                 q(tmp / "syn")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains(QStringLiteral(": 12 samples from 3 files")), qPrintable(r.out));
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), db, QStringLiteral("--json")});
        const auto j = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(j["traces"][0]["groups"].get<int>(), 3);
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--name"), QStringLiteral("g"), QStringLiteral("--groups"),
                 QStringLiteral("synth-group-0,synth-group-2")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(r.out, QStringLiteral("window 'g' of trace 'syn': 8 samples (groups synth-group-0,synth-group-2)\n"));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--name"), QStringLiteral("h"), QStringLiteral("--groups"), QStringLiteral("zzz")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: trace 'syn' has no group 'zzz'\n"));

        write_file(tmp / "ids.txt", "# chosen by hand\ngroup_1#2\n\ngroup_0#0\n");
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--name"), QStringLiteral("ids"), QStringLiteral("--ids"), q(tmp / "ids.txt")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.startsWith(QStringLiteral("window 'ids' of trace 'syn': 2 samples")));
        write_file(tmp / "bad.txt", "group_1#2\nnot-a-sample\n");
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--name"), QStringLiteral("bad"), QStringLiteral("--ids"), q(tmp / "bad.txt")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        QVERIFY2(r.err.contains(QStringLiteral("not-a-sample")), qPrintable(r.err));
    }

    void badDatabaseAndInputs() {
        const auto tmp = temp_dir(QStringLiteral("cli-bad"));
        write_file(tmp / "notdb.routepack", std::string(4096, 'x'));
        Run r = cli({QStringLiteral("info"), QStringLiteral("--db"), q(tmp / "notdb.routepack")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "notdb.routepack") +
                            QStringLiteral(": not a RoutePack library (file is not an SQLite database)\n"));
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(tmp / "a.routepack"), QStringLiteral("--name"),
                 QStringLiteral("x"), QStringLiteral("--model"), QStringLiteral("nope"), q(tmp)});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: unknown model 'nope' (known: deepseek-v2-lite, "
                                       "llama4-maverick, qwen2-57b-a14b, qwen3-30b-a3b)\n"));
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(tmp / "a.routepack"), QStringLiteral("--name"),
                 QStringLiteral("x"), QStringLiteral("--format"), QStringLiteral("pt"), q(tmp)});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.startsWith(QStringLiteral("routepack: error: unknown format 'pt' (valid: auto, sglang")));
        // A failed import leaves no trace behind.
        write_file(tmp / "in" / "p.csv", "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 99]\"\n");
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(tmp / "a.routepack"), QStringLiteral("--name"),
                 QStringLiteral("x"), QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"),
                 QStringLiteral("2"), q(tmp / "in")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "in" / "p.csv") +
                            QStringLiteral(": sample p: row 0, layer 1: expert id 99 out of range 0..3\n"));
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), q(tmp / "a.routepack")});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith(QStringLiteral("library ") + q(tmp / "a.routepack") + QStringLiteral(": 0 trace(s)")),
                 qPrintable(r.out));
    }

    void demo() {
        const auto tmp = temp_dir(QStringLiteral("cli-demo"));
        const Run r = cli({QStringLiteral("demo"), QStringLiteral("--out"), q(tmp / "d")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains(QStringLiteral("demo: imported 64 samples")));
        QVERIFY(fs::exists(tmp / "d" / "demo.routepack"));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
