// The headless CLI as a user runs it: real processes, real library files, exact stdout/stderr lines
// and exit codes.
#include "app/cli_errors.h"
#include "core/plan/budgets.h"
#include "core/plan/plan_file.h"
#include "core/plan/score/placement.h"
#include "storage/library.h"
#include "tests/testutil.h"

#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include <CLI/CLI.hpp>

#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <unistd.h>

namespace fs = std::filesystem;
using routepack::test::read_file;
using routepack::test::temp_dir;
using routepack::test::write_file;

namespace {

using Run = routepack::test::CliRun;
QString q(const fs::path& p) {
    return routepack::test::qpath(p);
}
Run cli(const QStringList& args) {
    return routepack::test::run_cli(args);
}

/// One entry of a `--help` list: its names ("-h,--help", "--seeds", "import"), the type of its value
/// ("INT", "TEXT"; empty for a flag or a subcommand) and its line as printed.
struct HelpEntry {
    QString names, type, line;
};

/// The entries of section `title` ("Options", "Subcommands") of `help`, in CLI11's layout: two
/// spaces, the names and the value's type, then the description from column 30 (a line of its own
/// when the names reach that column).
QList<HelpEntry> help_section(const QString& help, const QString& title) {
    QList<HelpEntry> out;
    const QStringList lines = help.split(QLatin1Char('\n'));
    const qsizetype at = lines.indexOf(title + QLatin1Char(':'));
    for (qsizetype i = at + 1; at >= 0 && i < lines.size() && !lines[i].isEmpty(); ++i) {
        if (lines[i].startsWith(QString(30, QLatin1Char(' ')))) continue; // a description's own line
        const QStringList words = lines[i].left(30).split(QLatin1Char(' '), Qt::SkipEmptyParts);
        HelpEntry e{words.value(0), QString(), lines[i]};
        const QString second = words.value(1);
        if (!second.isEmpty() && second == second.toUpper() && second.at(0).isLetter()) e.type = second;
        out.push_back(e);
    }
    return out;
}

/// The commands `routepack --help` lists, in its order.
QStringList cli_commands() {
    QStringList out;
    for (const HelpEntry& e : help_section(cli({QStringLiteral("--help")}).out, QStringLiteral("Subcommands")))
        out.push_back(e.names);
    return out;
}

/// The usage errors and one failure of the work of a `routepack` command, for the exit-status walk:
/// a malformed value of a typed flag and a value out of its flag's range (each empty for a command
/// without such a flag), and a failure of the work; each with its exact error line after
/// "routepack: error: ".
struct UsageCases {
    QStringList malformed;
    QString malformed_err;
    QStringList out_of_range;
    QString out_of_range_err;
    QStringList failure;
    QString failure_err;
};

/// UsageCases of every command, with files under `t` (none of which exists).
std::map<QString, UsageCases> usage_cases(const fs::path& t) {
    const QString lib = q(t / "none.routepack"), none = q(t / "none.json"), out = q(t / "m.json");
    const QStringList import{QStringLiteral("import"), QStringLiteral("--db"), lib,
                             QStringLiteral("--name"), QStringLiteral("t"),    q(t / "nowhere")};
    const QStringList window{QStringLiteral("window"),  QStringLiteral("--db"), lib,
                             QStringLiteral("--trace"), QStringLiteral("t"),    QStringLiteral("--name"),
                             QStringLiteral("w")};
    auto planner = [&](const QString& command) {
        QStringList a{command,
                      QStringLiteral("--db"),
                      lib,
                      QStringLiteral("--trace"),
                      QStringLiteral("t"),
                      QStringLiteral("--topology"),
                      QStringLiteral("synthetic-demo-ep8-dp4")};
        if (command == QStringLiteral("plan")) a += QStringList{QStringLiteral("--out"), q(t / "p.json")};
        return a;
    };
    const QStringList place{QStringLiteral("place"), QStringLiteral("--loads"), none, QStringLiteral("--out"), out};
    const QStringList rewrite{QStringLiteral("rewrite"),
                              QStringLiteral("--map"),
                              none,
                              QStringLiteral("--input"),
                              q(t / "ck"),
                              QStringLiteral("--output"),
                              q(t / "out")};
    const QString no_library = lib + QStringLiteral(": no such library");
    const QString no_plan = none + QStringLiteral(": no such plan file");
    auto s = [](const char* text) { return QString::fromUtf8(text); };
    std::map<QString, UsageCases> c;
    c[s("import")] = {import + QStringList{s("--experts"), s("abc")},
                      s("import: --experts must be an integer in 1..1048576 (got 'abc')"),
                      import + QStringList{s("--experts"), s("-4")},
                      s("import: --experts must be an integer in 1..1048576 (got '-4')"),
                      import + QStringList{s("--experts"), s("4"), s("--top-k"), s("2")},
                      q(t / "nowhere") + s(": no such file or folder")};
    c[s("import-run")] = {
        {s("import-run"), q(t / "nowhere"), s("--db"), QString()}, s("--db must be a file path (got '')"),  {}, {},
        {s("import-run"), q(t / "nowhere"), s("--db"), lib},       q(t / "nowhere") + s(": no such folder")};
    c[s("import-measured")] = {
        {s("import-measured"), none, s("--db"), QString()}, s("--db must be a file path (got '')"),  {}, {},
        {s("import-measured"), none, s("--db"), lib},       none + s(": no such measured step file")};
    c[s("info")] = {{s("info"), s("--db"), lib, s("--json=bogus")},
                    s("--json must be given alone, or as --json=true or --json=false (got 'bogus') (see routepack "
                      "info --help)"),
                    {},
                    {},
                    {s("info"), s("--db"), lib},
                    no_library};
    c[s("window")] = {
        window + QStringList{s("--first"), s("0x10")}, s("window: --first must be a decimal integer (got '0x10')"),
        window + QStringList{s("--first"), s("0")},    s("window: --first must be >= 1 (got 0)"),
        window + QStringList{s("--first"), s("1")},    no_library};
    c[s("synth")] = {{s("synth"), s("--out"), q(t / "s"), s("--skew"), s("abc")},
                     s("synth: --skew must be a decimal number (got 'abc')"),
                     {s("synth"), s("--out"), q(t / "s"), s("--groups"), s("0")},
                     s("synth: --groups must be >= 1 (got 0)"),
                     {s("synth"), s("--out"), q(t / "nodir" / "x")},
                     q(t / "nodir" / "x") + s(": cannot create the folder (") + q(t / "nodir") +
                         s(" is not a folder)")};
    c[s("synth-checkpoint")] = {{s("synth-checkpoint"), s("--out"), q(t / "ck"), s("--hidden"), s("abc")},
                                s("synth-checkpoint: --hidden must be an integer in 1..65536 (got 'abc')"),
                                {s("synth-checkpoint"), s("--out"), q(t / "ck"), s("--hidden"), s("65537")},
                                s("synth-checkpoint: --hidden must be an integer in 1..65536 (got '65537')"),
                                {s("synth-checkpoint"), s("--check"), q(t / "ck")},
                                q(t / "ck") + s(": No such file or directory")};
    c[s("demo")] = {{s("demo"), s("--out"), QString()},
                    s("demo: --out must name a folder (got '')"),
                    {},
                    {},
                    {s("demo"), s("--out"), s("/dev/null/x")},
                    s("/dev/null/x: Not a directory")};
    c[s("plan")] = {planner(s("plan")) + QStringList{s("--seeds"), s("abc")},
                    s("plan: --seeds must be an integer in 1..4096 (got 'abc')"),
                    planner(s("plan")) + QStringList{s("--seeds"), s("99999")},
                    s("plan: --seeds must be in 1..4096 (got 99999)"),
                    planner(s("plan")),
                    no_library};
    c[s("compare")] = {planner(s("compare")) + QStringList{s("--seed"), s("abc")},
                       s("compare: --seed must be an integer in 0..18446744073709551615 (got 'abc')"),
                       planner(s("compare")) + QStringList{s("--cooling"), s("1.5")},
                       s("compare: --cooling must be in (0, 1] (got 1.5)"),
                       planner(s("compare")),
                       no_library};
    c[s("sweep")] = {planner(s("sweep")) + QStringList{s("--time-limit"), s("abc")},
                     s("sweep: --time-limit must be a decimal number (got 'abc')"),
                     planner(s("sweep")) + QStringList{s("--expert-bytes"), s("-1")},
                     s("sweep: --expert-bytes must be in 0..1099511627776 (1 TiB; got -1)"),
                     planner(s("sweep")),
                     no_library};
    c[s("validate")] = {{s("validate"), none, s("--input"), q(t / "in"), s("--experts"), s("abc")},
                        s("validate: --experts must be an integer in 1..1048576 (got 'abc')"),
                        {s("validate"), none, s("--input"), q(t / "in"), s("--top-k"), s("2000")},
                        s("validate: --top-k must be an integer in 1..1024 (got '2000')"),
                        {s("validate"), none},
                        no_plan};
    c[s("export-map")] = {{s("export-map"), s("--plan"), none, s("--out"), out, s("--format"), s("bogus")},
                          s("unknown expert-map format 'bogus' (valid: routepack, sglang, vllm)"),
                          {},
                          {},
                          {s("export-map"), s("--plan"), none, s("--out"), out},
                          no_plan};
    c[s("calibrate")] = {{},
                         {},
                         {},
                         {},
                         {s("calibrate"), none, s("--topology"), s("deepseek-v2-lite-ep8-dp4"), s("--out"), out},
                         none + s(": no such measured step file")};
    c[s("place")] = {place + QStringList{s("--ep-ranks"), s("abc")},
                     s("place: --ep-ranks must be an integer in 1..1048576 (got 'abc')"),
                     place + QStringList{s("--ep-ranks"), s("0")},
                     s("place: --ep-ranks must be an integer in 1..1048576 (got '0')"),
                     place + QStringList{s("--ep-ranks"), s("2")},
                     none + s(": no such loads file")};
    c[s("rewrite")] = {rewrite + QStringList{s("--workers"), s("abc")},
                       s("rewrite: --workers must be an integer in 0..1024 (got 'abc')"),
                       rewrite + QStringList{s("--workers"), s("1025")},
                       s("rewrite: --workers must be an integer in 0..1024 (got '1025')"),
                       rewrite,
                       none + s(": no such expert map file")};
    return c;
}

/// The flags of the commands that take text, not a number (paths, names, formats, lists); --help
/// shows them as TEXT.
const std::set<QString>& text_flags() {
    static const std::set<QString> flags = {QStringLiteral("--db"),
                                            QStringLiteral("--name"),
                                            QStringLiteral("--format"),
                                            QStringLiteral("--model"),
                                            QStringLiteral("--model-config"),
                                            QStringLiteral("--moe-layers"),
                                            QStringLiteral("--trace"),
                                            QStringLiteral("--ids"),
                                            QStringLiteral("--groups"),
                                            QStringLiteral("--out"),
                                            QStringLiteral("--check"),
                                            QStringLiteral("--window"),
                                            QStringLiteral("--input"),
                                            QStringLiteral("--topology"),
                                            QStringLiteral("--oversize"),
                                            QStringLiteral("--previous"),
                                            QStringLiteral("--windows"),
                                            QStringLiteral("--plan"),
                                            QStringLiteral("--input-format"),
                                            QStringLiteral("--loads"),
                                            QStringLiteral("--map"),
                                            QStringLiteral("--output"),
                                            QStringLiteral("--layer-map"),
                                            QStringLiteral("--device"),
                                            QStringLiteral("--router-layer-base"),
                                            QStringLiteral("--method"),
                                            QStringLiteral("--step")};
    return flags;
}

} // namespace

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

    /// Every CLI flag of the budget table exists on plan, compare and sweep (listed by --help), and
    /// each integer or number flag just past its upper bound is refused naming the flag and the range,
    /// before anything is read: a usage error, exit status 2.
    void budgetTableFlags() {
        const QStringList commands[] = {
            {QStringLiteral("plan"), QStringLiteral("--out"), QStringLiteral("o.json")},
            {QStringLiteral("compare")},
            {QStringLiteral("sweep"), QStringLiteral("--db"), QStringLiteral("/nonexistent/x.routepack"),
             QStringLiteral("--trace"), QStringLiteral("t")},
        };
        for (const QStringList& command : commands) {
            const Run help = cli({command[0], QStringLiteral("--help")});
            QCOMPARE(help.code, 0);
            for (const routepack::BudgetRow& row : routepack::budget_table()) {
                if (!row.flag) continue;
                const QString flag = QString::fromLatin1(row.flag);
                QVERIFY2(help.out.contains(QStringLiteral("  ") + flag + QLatin1Char(' ')),
                         qPrintable(command[0] + QLatin1Char(' ') + flag));
                if (row.kind == routepack::BudgetKind::Bool || row.hi >= 1e300) continue;
                const bool integer = row.kind != routepack::BudgetKind::Double;
                const QString above = integer ? QString::number(static_cast<qint64>(row.hi) + 1)
                                              : QString::number(row.hi * 2 + 1, 'g', 17);
                const Run r =
                    cli(command + QStringList{QStringLiteral("--topology"), QStringLiteral("x"), flag, above});
                QCOMPARE(r.code, 2);
                const QString want = QStringLiteral("routepack: error: ") + command[0] + QStringLiteral(": ") + flag +
                                     QStringLiteral(" must be ");
                QVERIFY2(r.err.startsWith(want) && r.err.contains(above), qPrintable(r.err));
            }
        }
    }

    void commandLineErrors() {
        const Run none = cli({});
        QCOMPARE(none.code, 2);
        QCOMPARE(none.err, QStringLiteral("routepack: error: a command is required (see routepack --help)\n"));
        const Run missing = cli({QStringLiteral("info")});
        QCOMPARE(missing.code, 2);
        QCOMPARE(missing.err, QStringLiteral("routepack: error: --db is required (see routepack info --help)\n"));
    }

    /// Every command `routepack --help` lists (a new one cannot escape: without its row it fails
    /// here) separates usage errors (2) from failures of the work (1): an unknown flag names itself
    /// and the command's help; a malformed value of a typed flag and a value out of its range exit 2
    /// (a command without a numeric flag, by its --help, has none to give); a missing input exits 1.
    void everyCommandSeparatesUsageFromFailure_data() {
        QTest::addColumn<QString>("command");
        QTest::addColumn<bool>("known");
        QTest::addColumn<QStringList>("malformed");
        QTest::addColumn<QString>("malformedErr");
        QTest::addColumn<QStringList>("outOfRange");
        QTest::addColumn<QString>("outOfRangeErr");
        QTest::addColumn<QStringList>("failure");
        QTest::addColumn<QString>("failureErr");
        const auto cases = usage_cases(temp_dir(QStringLiteral("cli-usage")));
        QStringList commands = cli_commands();
        if (commands.isEmpty()) commands.push_back(QStringLiteral("(routepack --help lists no command)"));
        for (const QString& command : commands) {
            const auto it = cases.find(command);
            const UsageCases c = it == cases.end() ? UsageCases{} : it->second;
            QTest::newRow(qPrintable(command)) << command << (it != cases.end()) << c.malformed << c.malformed_err
                                               << c.out_of_range << c.out_of_range_err << c.failure << c.failure_err;
        }
    }

    void everyCommandSeparatesUsageFromFailure() {
        QFETCH(QString, command);
        QFETCH(bool, known);
        QFETCH(QStringList, malformed);
        QFETCH(QString, malformedErr);
        QFETCH(QStringList, outOfRange);
        QFETCH(QString, outOfRangeErr);
        QFETCH(QStringList, failure);
        QFETCH(QString, failureErr);
        QVERIFY2(known,
                 qPrintable(QStringLiteral("routepack %1: no usage cases; add its row to usage_cases()").arg(command)));
        const QString e = QStringLiteral("routepack: error: ");
        Run r = cli({command, QStringLiteral("--bogus")});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, e + QStringLiteral("the following argument was not expected: --bogus (see routepack ") +
                            command + QStringLiteral(" --help)\n"));
        const Run help = cli({command, QStringLiteral("--help")});
        QCOMPARE(help.code, 0);
        bool numeric = false;
        for (const HelpEntry& o : help_section(help.out, QStringLiteral("Options")))
            numeric = numeric || o.type == QStringLiteral("INT") || o.type == QStringLiteral("UINT") ||
                      o.type == QStringLiteral("FLOAT");
        QCOMPARE(!outOfRange.isEmpty(), numeric);
        QVERIFY(!numeric || !malformed.isEmpty());
        if (!malformed.isEmpty()) {
            r = cli(malformed);
            QCOMPARE(r.err, e + malformedErr + QStringLiteral("\n"));
            QCOMPARE(r.code, 2);
        }
        if (!outOfRange.isEmpty()) {
            r = cli(outOfRange);
            QCOMPARE(r.err, e + outOfRangeErr + QStringLiteral("\n"));
            QCOMPARE(r.code, 2);
        }
        r = cli(failure);
        QCOMPARE(r.err, e + failureErr + QStringLiteral("\n"));
        QCOMPARE(r.code, 1);
    }

    /// Every CLI11 error that reaches the user, in the house style: one lower-case line pointing at
    /// the help of the command it is about; an argument the command does not take named first.
    void parseErrorsInHouseStyle() {
        const std::pair<QStringList, QString> cases[] = {
            {{}, QStringLiteral("a command is required (see routepack --help)")},
            {{QStringLiteral("frobnicate")}, QStringLiteral("unknown command 'frobnicate' (see routepack --help)")},
            {{QStringLiteral("frobnicate"), QStringLiteral("--db"), QStringLiteral("x")},
             QStringLiteral("unknown command 'frobnicate' (see routepack --help)")},
            {{QStringLiteral("--bogus")},
             QStringLiteral("the following argument was not expected: --bogus (see routepack --help)")},
            {{QStringLiteral("info")}, QStringLiteral("--db is required (see routepack info --help)")},
            {{QStringLiteral("import"), QStringLiteral("--db"), QStringLiteral("x"), QStringLiteral("--name"),
              QStringLiteral("t")},
             QStringLiteral("paths is required (see routepack import --help)")},
            {{QStringLiteral("info"), QStringLiteral("extra"), QStringLiteral("--db"), QStringLiteral("x")},
             QStringLiteral("the following argument was not expected: extra (see routepack info --help)")},
            // A misspelt flag is named, not the required one it leaves missing.
            {{QStringLiteral("plan"), QStringLiteral("--topolgy"), QStringLiteral("x")},
             QStringLiteral("the following arguments were not expected: --topolgy x (see routepack plan --help)")},
            {{QStringLiteral("plan"), QStringLiteral("--seeds"), QStringLiteral("abc"), QStringLiteral("--bogus")},
             QStringLiteral("the following argument was not expected: --bogus (see routepack plan --help)")},
            {{QStringLiteral("info"), QStringLiteral("--db")},
             QStringLiteral("--db needs a value (TEXT) (see routepack info --help)")},
            {{QStringLiteral("plan"), QStringLiteral("--topology"), QStringLiteral("x"), QStringLiteral("--seeds")},
             QStringLiteral("--seeds needs a value (INT) (see routepack plan --help)")},
            {{QStringLiteral("info"), QStringLiteral("--db"), QStringLiteral("a"), QStringLiteral("--db"),
              QStringLiteral("b")},
             QStringLiteral("--db may be given once (got 2) (see routepack info --help)")},
            {{QStringLiteral("info"), QStringLiteral("--db"), QStringLiteral("x"), QStringLiteral("--json=bogus")},
             QStringLiteral("--json must be given alone, or as --json=true or --json=false (got 'bogus') (see "
                            "routepack info --help)")},
        };
        for (const auto& [args, err] : cases) {
            const Run r = cli(args);
            QCOMPARE(r.err, QStringLiteral("routepack: error: ") + err + QStringLiteral("\n"));
            QCOMPARE(r.code, 2);
        }
        // The kinds no command line of routepack raises today (no validators, exclusions or
        // requirements between options are declared to CLI11), worded all the same.
        const auto text = [](const CLI::Error& e) {
            return QString::fromStdString(routepack::cli::cli11_error_text(e));
        };
        QCOMPARE(text(CLI::RequiredError::Subcommand(1)), QStringLiteral("a command is required"));
        QCOMPARE(text(CLI::RequiredError("--db")), QStringLiteral("--db is required"));
        QCOMPARE(text(CLI::RequiredError::Option(1, 1, 0, "--a,--b")),
                 QStringLiteral("exactly 1 option from [--a,--b] is required"));
        QCOMPARE(text(CLI::ExtrasError(std::vector<std::string>{"--a"})),
                 QStringLiteral("the following argument was not expected: --a"));
        QCOMPARE(text(CLI::ConversionError("--json", std::vector<std::string>{"bo\ngus"})),
                 QStringLiteral("--json must be given alone, or as --json=true or --json=false (got 'bo\\ngus')"));
        QCOMPARE(text(CLI::ConversionError::TrueFalse("--json")),
                 QStringLiteral("--json must be given alone, or as --json=true or --json=false"));
        QCOMPARE(text(CLI::ConversionError::TooManyInputsFlag("--json")),
                 QStringLiteral("--json must be given alone, or as --json=true or --json=false"));
        QCOMPARE(text(CLI::ConversionError("x", "--y")), QStringLiteral("the value x is not an allowed value for --y"));
        QCOMPARE(text(CLI::ArgumentMismatch::TypedAtLeast("--db", 1, "TEXT")),
                 QStringLiteral("--db needs a value (TEXT)"));
        QCOMPARE(text(CLI::ArgumentMismatch::TypedAtLeast("--pair", 2, "INT")),
                 QStringLiteral("--pair needs 2 values (INT)"));
        QCOMPARE(text(CLI::ArgumentMismatch::AtMost("--db", 1, 2)), QStringLiteral("--db may be given once (got 2)"));
        QCOMPARE(text(CLI::ArgumentMismatch::AtMost("--x", 3, 4)),
                 QStringLiteral("--x takes at most 3 values (got 4)"));
        QCOMPARE(text(CLI::ArgumentMismatch::AtLeast("--x", 2, 1)),
                 QStringLiteral("--x needs at least 2 values (got 1)"));
        QCOMPARE(text(CLI::ArgumentMismatch("--x", 2, 1)), QStringLiteral("--x needs exactly 2 values (got 1)"));
        QCOMPARE(text(CLI::ArgumentMismatch("--x", -2, 1)), QStringLiteral("--x needs at least 2 values (got 1)"));
        QCOMPARE(text(CLI::ArgumentMismatch::FlagOverride("--json")), QStringLiteral("--json takes no value"));
        QCOMPARE(text(CLI::ExcludesError("--ep-ranks", "--topology")),
                 QStringLiteral("give either --ep-ranks or --topology, not both"));
        QCOMPARE(text(CLI::RequiresError("--random", "--seed")), QStringLiteral("--random needs --seed"));
        QCOMPARE(text(CLI::ValidationError("--threads", "Value 9 not in range 0 to 4")),
                 QStringLiteral("--threads: value 9 not in range 0 to 4"));
        QCOMPARE(text(CLI::ConfigError::Extras("x")), QStringLiteral("INI was not able to parse x"));
        QCOMPARE(text(CLI::FileError::Missing("a.ini")), QStringLiteral("a.ini was not readable (missing?)"));
    }

    /// Every budget flag's --help line is the budget table's help, default and range (budget_rule,
    /// budget_value_text of a default PlannerBudgets), with the type of its value; --seed's shows
    /// its default and range as UINT.
    void budgetHelpLinesAreTheTable() {
        const auto line = [](const QString& names, const QString& description) {
            return (QStringLiteral("  ") + names).leftJustified(30) + description;
        };
        for (const QString& command : {QStringLiteral("plan"), QStringLiteral("compare"), QStringLiteral("sweep")}) {
            const Run help = cli({command, QStringLiteral("--help")});
            QCOMPARE(help.code, 0);
            std::map<QString, QString> lines;
            for (const HelpEntry& o : help_section(help.out, QStringLiteral("Options")))
                lines[o.names] = o.line;
            for (const routepack::BudgetRow& row : routepack::budget_table()) {
                if (!row.flag) continue;
                const QString flag = QString::fromLatin1(row.flag);
                const QString type = row.kind == routepack::BudgetKind::Bool     ? QString()
                                     : row.kind == routepack::BudgetKind::Double ? QStringLiteral(" FLOAT")
                                                                                 : QStringLiteral(" INT");
                const QString want =
                    line(flag + type,
                         QString::fromUtf8(row.help) + QStringLiteral("; default ") +
                             QString::fromStdString(routepack::budget_value_text(row, routepack::PlannerBudgets{})) +
                             QStringLiteral(", ") + QString::fromStdString(routepack::budget_rule(row)));
                QCOMPARE(lines[flag], want);
            }
            QCOMPARE(lines[QStringLiteral("--seed")],
                     line(QStringLiteral("--seed UINT"),
                          QStringLiteral("random seed (same inputs + seed + threads => same plan); default %1, in "
                                         "0..18446744073709551615")
                              .arg(routepack::PlannerBudgets{}.seed)));
        }
        // Two spot checks by hand: the default and the range as docs/budgets.md shows them.
        const Run plan = cli({QStringLiteral("plan"), QStringLiteral("--help")});
        QVERIFY(plan.out.contains(
            QStringLiteral("  --seeds INT                 M: fixed-row seed candidates; default 32, in "
                           "1..4096\n")));
        QVERIFY(
            plan.out.contains(QStringLiteral("  --cooling FLOAT             geometric cooling factor; default 0.5, in "
                                             "(0, 1]\n")));
    }

    /// No command shows a number flag as TEXT: every TEXT option is one of the flags that take text
    /// (paths, names, formats, lists), and every --seed is UINT.
    void numberFlagsShowTheirType() {
        for (const QString& command : cli_commands()) {
            const Run help = cli({command, QStringLiteral("--help")});
            QCOMPARE(help.code, 0);
            for (const HelpEntry& o : help_section(help.out, QStringLiteral("Options"))) {
                const QString where = QStringLiteral("routepack ") + command + QLatin1Char(' ') + o.names;
                if (o.names == QStringLiteral("--seed")) QVERIFY2(o.type == QStringLiteral("UINT"), qPrintable(where));
                if (o.type == QStringLiteral("TEXT"))
                    QVERIFY2(text_flags().count(o.names),
                             qPrintable(where + QStringLiteral(" shows TEXT: give a number flag its type (INT, UINT, "
                                                               "FLOAT), or list a text flag in text_flags()")));
            }
        }
    }

    void realCsvSetEndToEnd() {
        ROUTEPACK_REQUIRE_SHARED(dir, "traces/deepseek-v2-lite");
        const auto tmp = temp_dir(QStringLiteral("cli-csv"));
        const QString db = q(tmp / "lib.routepack");
        Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"),
                     QStringLiteral("ds"), QStringLiteral("--model"), QStringLiteral("deepseek-v2-lite"), q(dir)});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith(QStringLiteral("imported trace 'ds' into ") + db +
                                  QStringLiteral(": 599 samples from 599 files")),
                 qPrintable(r.out));
        QVERIFY2(
            r.out.contains(QStringLiteral("model    deepseek-v2-lite: 26 MoE layers (1-26 of 27), 64 experts, top-6")),
            qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("lengths  min 2  mean 93.4  max 2850 tokens (t_i rule: rows)")),
                 qPrintable(r.out));

        // Importing the same files again is detected, and nothing is added.
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"),
                 QStringLiteral("again"), QStringLiteral("--model"), QStringLiteral("deepseek-v2-lite"), q(dir)});
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
            r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"),
                     QStringLiteral("ds"), QStringLiteral("--name"), QString::fromLatin1(name),
                     QStringLiteral("--random"), QStringLiteral("64"), QStringLiteral("--seed"), QStringLiteral("7")});
            QCOMPARE(r.code, 0);
        }
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains(QStringLiteral("window    r1: 64 samples (random 64 seed 7)")));

        // Window errors: unknown trace, too many samples, no mode.
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"),
                 QStringLiteral("nope"), QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--first"),
                 QStringLiteral("5")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: no trace named 'nope' in ") + db + QStringLiteral("\n"));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--first"), QStringLiteral("600")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: --first 600 but trace 'ds' has only 599 samples\n"));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("w")});
        QCOMPARE(r.code, 2); // no selector: a usage error
        QCOMPARE(r.err,
                 QStringLiteral("routepack: error: window: give exactly one of --ids FILE, --first N, --random N "
                                "--seed S, --groups LIST, --split N, --split-groups G\n"));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("ds"),
                 QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--groups"), QStringLiteral("g1")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: trace 'ds' has no GRPO groups\n"));
    }

    void idsWindowAndGroups() {
        const auto tmp = temp_dir(QStringLiteral("cli-synth"));
        const QString db = q(tmp / "lib.routepack");
        importSynthGroupsAndWindowByGroup(tmp, db);
        if (QTest::currentTestFailed()) return;
        const QStringList split = {QStringLiteral("window"),  QStringLiteral("--db"), db,
                                   QStringLiteral("--trace"), QStringLiteral("syn"),  QStringLiteral("--name")};
        splitWindowsOfTheRun(db, split);
        if (QTest::currentTestFailed()) return;
        sweepPlansEachWindowFromThePrevious(tmp, db);
        if (QTest::currentTestFailed()) return;
        sweepOnTwoNodes(tmp, db);
        if (QTest::currentTestFailed()) return;
        sweepPlanFileNamesAndRefusals(tmp, db, split);
        if (QTest::currentTestFailed()) return;
        loadOnlyTraceHasNoWindows(tmp, db, split);
        if (QTest::currentTestFailed()) return;
        windowFromIdsFile(tmp, db);
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
        QCOMPARE(r.code, 2); // a flag's value: a usage error
        QCOMPARE(r.err, QStringLiteral("routepack: error: unknown model 'nope' (known: deepseek-v2-lite, "
                                       "llama4-maverick, qwen2-57b-a14b, qwen3-30b-a3b)\n"));
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(tmp / "a.routepack"), QStringLiteral("--name"),
                 QStringLiteral("x"), QStringLiteral("--format"), QStringLiteral("pt"), q(tmp)});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.startsWith(QStringLiteral("routepack: error: unknown format 'pt' (valid: auto, sglang")));
        // A failed import leaves no trace behind.
        write_file(tmp / "in" / "p.csv", "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 99]\"\n");
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(tmp / "a.routepack"), QStringLiteral("--name"),
                 QStringLiteral("x"), QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"),
                 QStringLiteral("2"), q(tmp / "in")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "in" / "p.csv") +
                            QStringLiteral(": sample p: row 0, layer 1: expert id 99 out of range 0..3\n"));
        // The library file did not exist before this failed import: it is removed again, with its
        // -wal/-shm files, instead of staying behind as an empty schema-only library.
        QVERIFY(!fs::exists(tmp / "a.routepack"));
        QVERIFY(!fs::exists(tmp / "a.routepack-wal"));
        QVERIFY(!fs::exists(tmp / "a.routepack-shm"));
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), q(tmp / "a.routepack")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err,
                 QStringLiteral("routepack: error: ") + q(tmp / "a.routepack") + QStringLiteral(": no such library\n"));
    }

    void failedImportKeepsAnExistingLibrary() {
        const auto tmp = temp_dir(QStringLiteral("cli-keep"));
        const QString db = q(tmp / "lib.routepack");
        write_file(tmp / "good" / "p.csv",
                   "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n2,0,a,\"[2, 3]\"\n");
        write_file(tmp / "bad" / "q.csv",
                   "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 9]\"\n2,0,a,\"[2, 3]\"\n");
        const QStringList model = {QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"),
                                   QStringLiteral("2")};
        Run r = cli(QStringList{QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"),
                                QStringLiteral("good")} +
                    model + QStringList{q(tmp / "good")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli(QStringList{QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"),
                            QStringLiteral("bad")} +
                model + QStringList{q(tmp / "bad")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "bad" / "q.csv") +
                            QStringLiteral(": sample q: row 0, layer 1: expert id 9 out of range 0..3\n"));
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), db});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith(QStringLiteral("library ") + db + QStringLiteral(": 1 trace(s)")), qPrintable(r.out));
        // A failure before anything is read (a missing input) does not create the file either.
        const QString fresh = q(tmp / "fresh.routepack");
        r = cli(QStringList{QStringLiteral("import"), QStringLiteral("--db"), fresh, QStringLiteral("--name"),
                            QStringLiteral("x")} +
                model + QStringList{q(tmp / "nowhere")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "nowhere") +
                            QStringLiteral(": no such file or folder\n"));
        QVERIFY(!fs::exists(tmp / "fresh.routepack"));
    }

    void libraryPathChecks() {
        const auto tmp = temp_dir(QStringLiteral("cli-memory"));
        write_file(tmp / "p.csv",
                   "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n2,0,a,\"[2, 3]\"\n");
        const QString expected = QStringLiteral("routepack: error: --db must be a file path (got ':memory:')\n");
        Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), QStringLiteral(":memory:"),
                     QStringLiteral("--name"), QStringLiteral("t"), QStringLiteral("--experts"), QStringLiteral("4"),
                     QStringLiteral("--top-k"), QStringLiteral("2"), q(tmp / "p.csv")});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, expected);
        r = cli({QStringLiteral("info"), QStringLiteral("--db"), QStringLiteral(":memory:")});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, expected);
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), QStringLiteral(":memory:"),
                 QStringLiteral("--trace"), QStringLiteral("t"), QStringLiteral("--name"), QStringLiteral("w"),
                 QStringLiteral("--first"), QStringLiteral("1")});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, expected);
    }

    void windowFlagChecks() {
        const auto tmp = temp_dir(QStringLiteral("cli-winflags"));
        const QString db = q(tmp / "lib.routepack");
        write_file(tmp / "in" / "p.csv",
                   "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n2,0,a,\"[2, 3]\"\n");
        write_file(tmp / "in" / "q.csv",
                   "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[1, 2]\"\n2,0,a,\"[2, 3]\"\n");
        Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"),
                     QStringLiteral("t"), QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"),
                     QStringLiteral("2"), q(tmp / "in")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QStringList w = {QStringLiteral("window"),  QStringLiteral("--db"), db,
                               QStringLiteral("--trace"), QStringLiteral("t"),    QStringLiteral("--name"),
                               QStringLiteral("w")};
        // A flag's value is a usage error (2), a bad id list a failure of the work (1).
        auto check = [&](const QStringList& extra, const QString& error, int status = 1) {
            const Run x = cli(w + extra);
            QCOMPARE(x.code, status);
            QCOMPARE(x.err, QStringLiteral("routepack: error: ") + error + QStringLiteral("\n"));
        };
        check({QStringLiteral("--first"), QStringLiteral("0")}, QStringLiteral("window: --first must be >= 1 (got 0)"),
              2);
        check({QStringLiteral("--first"), QStringLiteral("-1")},
              QStringLiteral("window: --first must be >= 1 (got -1)"), 2);
        check({QStringLiteral("--random"), QStringLiteral("-3"), QStringLiteral("--seed"), QStringLiteral("1")},
              QStringLiteral("window: --random must be >= 1 (got -3)"), 2);
        check({QStringLiteral("--random"), QStringLiteral("1"), QStringLiteral("--seed"), QStringLiteral("-5")},
              QStringLiteral("window: --seed must be an integer in 0..18446744073709551615 (got '-5')"), 2);
        check({QStringLiteral("--random"), QStringLiteral("1")},
              QStringLiteral("window: --random needs --seed S (plans must be reproducible)"), 2);
        check({QStringLiteral("--first"), QStringLiteral("1"), QStringLiteral("--split"), QStringLiteral("2")},
              QStringLiteral("window: give exactly one of --ids FILE, --first N, --random N --seed S, --groups LIST, "
                             "--split N, --split-groups G"),
              2);
        check({QStringLiteral("--ids"), q(tmp / "in")},
              q(tmp / "in") + QStringLiteral(": is a folder, not an id list"));
        // Seeds use the whole unsigned 64-bit range.
        Run ok = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"),
                      QStringLiteral("t"), QStringLiteral("--name"), QStringLiteral("r"), QStringLiteral("--random"),
                      QStringLiteral("1"), QStringLiteral("--seed"), QStringLiteral("18446744073709551615")});
        QVERIFY2(ok.code == 0, qPrintable(ok.err));
        QVERIFY2(ok.out.contains(QStringLiteral("(random 1 seed 18446744073709551615)")), qPrintable(ok.out));
        // Id lists: a BOM, indentation and trailing blanks around ids are not part of them.
        write_file(tmp / "ids.txt", "\xEF\xBB\xBF  p \t\r\n\t q\n   # comment\n");
        ok = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("t"),
                  QStringLiteral("--name"), QStringLiteral("ids"), QStringLiteral("--ids"), q(tmp / "ids.txt")});
        QVERIFY2(ok.code == 0, qPrintable(ok.err));
        QVERIFY2(ok.out.startsWith(QStringLiteral("window 'ids' of trace 't': 2 samples")), qPrintable(ok.out));
        // Unknown ids are echoed on one line.
        write_file(tmp / "bad.txt", std::string("p\nx\x01\xff") + std::string(300, 'y') + "\n");
        check({QStringLiteral("--ids"), q(tmp / "bad.txt")},
              QStringLiteral("window 'w': trace 't' has no sample 'x\\x01\\xff") + QString(77, QLatin1Char('y')) +
                  QStringLiteral("...'"));
    }

    void hostileImportFlagsAndInputs() {
        const auto tmp = temp_dir(QStringLiteral("cli-hostile"));
        write_file(tmp / "n.json", "[[[0, 1]]]");
        const QString db = q(tmp / "lib.routepack");
        auto import = [&](const QStringList& extra, const QString& input) {
            return cli(QStringList{QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"),
                                   QStringLiteral("t")} +
                       extra + QStringList{input});
        };
        // Model sizes are checked before anything is allocated from them: the model flags'
        // ranges while the command line is parsed (usage errors, 2).
        Run r = import({QStringLiteral("--format"), QStringLiteral("nested-json"), QStringLiteral("--experts"),
                        QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("2"), QStringLiteral("--layers"),
                        QStringLiteral("1000000000")},
                       q(tmp / "n.json"));
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, QStringLiteral(
                            "routepack: error: import: --layers must be an integer in 1..100000 (got '1000000000')\n"));
        r = import({QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("2"),
                    QStringLiteral("--moe-layers"), QStringLiteral("0-2147483647")},
                   q(tmp / "n.json"));
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err,
                 QStringLiteral("routepack: error: --moe-layers: layer id 2147483647 in '0-2147483647' is larger "
                                "than 1000000\n"));
        r = import({QStringLiteral("--experts"), QStringLiteral("-4"), QStringLiteral("--top-k"), QStringLiteral("2")},
                   q(tmp / "n.json"));
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, QStringLiteral("routepack: error: import: --experts must be an integer in 1..1048576 (got "
                                       "'-4')\n"));
        // 0, the default, leaves the model's own value; a top-k above the model's expert count is the
        // model's check (with the trace), a failure of the work.
        r = import({QStringLiteral("--format"), QStringLiteral("nested-json"), QStringLiteral("--experts"),
                    QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("5"), QStringLiteral("--layers"),
                    QStringLiteral("1")},
                   q(tmp / "n.json"));
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: model: top_k must be in 1..4 (got 5)\n"));
        write_file(tmp / "cfg.json",
                   R"({"num_hidden_layers": 4294967308, "num_experts": 8, "num_experts_per_tok": 2})");
        r = import({QStringLiteral("--model-config"), q(tmp / "cfg.json")}, q(tmp / "n.json"));
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "cfg.json") +
                            QStringLiteral(": num_hidden_layers is 4294967308, not an integer in 1..100000\n"));
        r = import({QStringLiteral("--model-config"), q(tmp)}, q(tmp / "n.json"));
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp) +
                            QStringLiteral(": is a folder, not a model config (config.json)\n"));
        QVERIFY(!fs::exists(tmp / "lib.routepack"));
        // Every error is one line, whatever the input holds (bugs 16/17): a field with a line
        // break, and a file whose very name holds one.
        write_file(tmp / "h" / "p.csv", "\"Layer\nID\",Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n");
        r = import({QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("2")},
                   q(tmp / "h" / "p.csv"));
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "h" / "p.csv") +
                            QStringLiteral(": header column 1 is 'Layer\\nID', expected 'Layer ID'\n"));
        write_file(tmp / "a\nb.json", "[[[0, 9]]]");
        r = import({QStringLiteral("--format"), QStringLiteral("nested-json"), QStringLiteral("--experts"),
                    QStringLiteral("4"), QStringLiteral("--top-k"), QStringLiteral("2"), QStringLiteral("--layers"),
                    QStringLiteral("1")},
                   q(tmp / "a\nb.json"));
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err,
                 QStringLiteral("routepack: error: ") + q(tmp) +
                     QStringLiteral("/a\\nb.json: sample a\\nb: row 0, layer 0: expert id 9 out of range 0..3\n"));
        QVERIFY(!fs::exists(tmp / "lib.routepack"));
    }

    void readOnlyLibrary() {
        // A library in a folder the user cannot write: reads work, writes get one clear line, and
        // no -wal/-shm files appear. As root the commands run as uid 65534 through setpriv.
        const auto tmp = temp_dir(QStringLiteral("cli-ro"));
        write_file(tmp / "in" / "p.csv",
                   "Layer ID,Batch Number,Token,Activated Expert IDs\n1,0,a,\"[0, 1]\"\n2,0,a,\"[2, 3]\"\n");
        const fs::path lib = tmp / "ro" / "lib.routepack";
        fs::create_directories(lib.parent_path());
        Run r = cli({QStringLiteral("import"), QStringLiteral("--db"), q(lib), QStringLiteral("--name"),
                     QStringLiteral("t"), QStringLiteral("--experts"), QStringLiteral("4"), QStringLiteral("--top-k"),
                     QStringLiteral("2"), q(tmp / "in")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto rx = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec;
        fs::permissions(lib.parent_path(), rx);
        fs::permissions(lib, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
        fs::permissions(tmp, fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
        QStringList prefix;
        QString program = QStringLiteral(ROUTEPACK_CLI);
        if (::geteuid() == 0) {
            if (QStandardPaths::findExecutable(QStringLiteral("setpriv")).isEmpty())
                QSKIP("running as root without setpriv: cannot drop privileges to test permissions");
            prefix = {QStringLiteral("--reuid=65534"), QStringLiteral("--regid=65534"),
                      QStringLiteral("--clear-groups"), program};
            program = QStandardPaths::findExecutable(QStringLiteral("setpriv"));
        }
        auto run_as_user = [&](const QStringList& args) {
            QProcess p;
            p.start(program, prefix + args);
            p.waitForFinished(600000);
            Run x;
            x.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
            x.out = QString::fromUtf8(p.readAllStandardOutput());
            x.err = QString::fromUtf8(p.readAllStandardError());
            return x;
        };
        r = run_as_user({QStringLiteral("info"), QStringLiteral("--db"), q(lib)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("library ") + q(lib) + QStringLiteral(": 1 trace(s)")),
                 qPrintable(r.out));
        r = run_as_user({QStringLiteral("window"), QStringLiteral("--db"), q(lib), QStringLiteral("--trace"),
                         QStringLiteral("t"), QStringLiteral("--name"), QStringLiteral("w"), QStringLiteral("--first"),
                         QStringLiteral("1")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(lib) +
                            QStringLiteral(": library is read-only (cannot write)\n"));
        r = run_as_user({QStringLiteral("import"), QStringLiteral("--db"), q(lib), QStringLiteral("--name"),
                         QStringLiteral("u"), QStringLiteral("--experts"), QStringLiteral("4"),
                         QStringLiteral("--top-k"), QStringLiteral("2"), q(tmp / "in")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(lib) +
                            QStringLiteral(": library is read-only (cannot write)\n"));
        QVERIFY(!fs::exists(lib.string() + "-wal"));
        QVERIFY(!fs::exists(lib.string() + "-shm"));
        fs::permissions(lib.parent_path(), fs::perms::all);
        fs::permissions(lib, fs::perms::owner_read | fs::perms::owner_write);
    }

    void planCompareValidate() {
        // A synthetic GRPO window: import, plan to a file, validate it structurally and by rescoring,
        // compare as JSON, and the errors for bad topologies and tampered plans.
        const auto tmp = temp_dir(QStringLiteral("cli-plan"));
        const QString db = q(tmp / "lib.routepack");
        Run r = cli({QStringLiteral("synth"), QStringLiteral("--out"), q(tmp / "syn"), QStringLiteral("--groups"),
                     QStringLiteral("8"), QStringLiteral("--seed"), QStringLiteral("3")});
        QCOMPARE(r.code, 0);
        // The router of --popularity-seed 3 is the one --seed 3 draws: the same files, byte for byte.
        r = cli({QStringLiteral("synth"), QStringLiteral("--out"), q(tmp / "syn-router"), QStringLiteral("--groups"),
                 QStringLiteral("8"), QStringLiteral("--seed"), QStringLiteral("3"),
                 QStringLiteral("--popularity-seed"), QStringLiteral("3")});
        QCOMPARE(r.code, 0);
        for (const auto& f : fs::directory_iterator(tmp / "syn"))
            QCOMPARE(routepack::test::read_file(tmp / "syn-router" / f.path().filename()),
                     routepack::test::read_file(f.path()));
        // A drift needs the router it drifts from: a usage error, nothing written.
        r = cli({QStringLiteral("synth"), QStringLiteral("--out"), q(tmp / "syn-drift"), QStringLiteral("--drift"),
                 QStringLiteral("0.3")});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, QStringLiteral("routepack: error: synth: --drift 0.3 needs a popularity seed (the router it "
                                       "drifts from)\n"));
        QVERIFY(!fs::exists(tmp / "syn-drift"));
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"), QStringLiteral("syn"),
                 QStringLiteral("--experts"), QStringLiteral("32"), QStringLiteral("--top-k"), QStringLiteral("4"),
                 QStringLiteral("--layers"), QStringLiteral("12"), QStringLiteral("--moe-layers"),
                 QStringLiteral("1-11"), q(tmp / "syn")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString topo =
            QStringLiteral(ROUTEPACK_SOURCE_DIR) + QStringLiteral("/resources/topologies/synthetic-demo-ep8-dp4.json");
        const QString plan = q(tmp / "plan.json");
        const QStringList common{QStringLiteral("--db"),       db,
                                 QStringLiteral("--trace"),    QStringLiteral("syn"),
                                 QStringLiteral("--topology"), topo,
                                 QStringLiteral("--levels"),   QStringLiteral("4"),
                                 QStringLiteral("--steps"),    QStringLiteral("200"),
                                 QStringLiteral("--threads"),  QStringLiteral("1")};
        r = cli(QStringList{QStringLiteral("plan")} + common + QStringList{QStringLiteral("--out"), plan});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains(QStringLiteral("routepack vs reorder")), qPrintable(r.out));
        {
            // The summary states the plan's lower bound and gap with the numbers of the plan file.
            const auto pj = nlohmann::json::parse(routepack::test::read_file(tmp / "plan.json"));
            const auto& b = pj["max_u_lower_bound"];
            const QString want = QString::asprintf(
                "lower bound on max_g U at this placement: %.4f (mean bound %.4f, largest sample %.4f); "
                "routepack is %.2f%% above it\n",
                b["value"].get<double>(), b["mean"].get<double>(), b["sample"].get<double>(),
                100.0 * b["gap"].get<double>());
            QVERIFY2(r.out.contains(want), qPrintable(r.out + QStringLiteral("\nwanted: ") + want));
            QVERIFY(b["value"].get<double>() > 0);
            QVERIFY(b["value"].get<double>() <= pj["score"][0].get<double>());
        }
        QVERIFY(r.out.endsWith(QStringLiteral("plan written to ") + plan + QStringLiteral("\n")));
        r = cli({QStringLiteral("validate"), plan, QStringLiteral("--db"), db});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains(QStringLiteral(": rescored against trace 'syn': identical score")), qPrintable(r.out));

        // compare --json gives the same routepack score as the plan file (same seed, threads, budgets).
        r = cli(QStringList{QStringLiteral("compare")} + common + QStringList{QStringLiteral("--json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto cmp = nlohmann::json::parse(r.out.toStdString());
        const auto pj = nlohmann::json::parse(routepack::test::read_file(tmp / "plan.json"));
        QCOMPARE(cmp["methods"]["routepack"]["score"].dump(), pj["score"].dump());
        QCOMPARE(cmp["max_u_lower_bound"].dump(), pj["max_u_lower_bound"].dump());
        QVERIFY(cmp["routepack_vs_reorder"]["joint_pct"].get<double>() <= 0.0);

        // The placement exports as SGLang (absolute layers: 12 rows) and vLLM (MoE layers: 11 rows) maps.
        r = cli({QStringLiteral("export-map"), QStringLiteral("--plan"), plan, QStringLiteral("--format"),
                 QStringLiteral("sglang"), QStringLiteral("--out"), q(tmp / "sglang.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(r.out, QStringLiteral("expert map (sglang, rows = all 12 decoder layers, 32 experts) written to ") +
                            q(tmp / "sglang.json") + QStringLiteral("\n"));
        const auto sg = nlohmann::json::parse(routepack::test::read_file(tmp / "sglang.json"));
        QCOMPARE(sg["physical_to_logical_map"].size(), std::size_t(12));
        for (int l = 0; l < 11; ++l)
            for (int e = 0; e < 32; ++e)
                QCOMPARE(sg["physical_to_logical_map"][l + 1][pj["placement"][l][e].get<int>()].get<int>(), e);

        // A tampered plan fails validation against its trace.
        auto bad = pj;
        std::swap(bad["placement"][0][0], bad["placement"][0][1]);
        routepack::test::write_file(tmp / "bad.json", bad.dump());
        r = cli({QStringLiteral("validate"), q(tmp / "bad.json"), QStringLiteral("--db"), db});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        QVERIFY2(r.err.startsWith(QStringLiteral("routepack: error: ") + q(tmp / "bad.json") +
                                  QStringLiteral(": does not match its trace: ")),
                 qPrintable(r.err));

        // --row-multiple replaces the topology's row_multiple: R is the smallest multiple >= the plain R*,
        // recorded in the plan, which validates; out-of-range values are refused before anything is read.
        {
            const int plain = pj["row_count"].get<int>();
            r = cli(QStringList{QStringLiteral("plan")} + common +
                    QStringList{QStringLiteral("--row-multiple"), QStringLiteral("3"), QStringLiteral("--out"),
                                q(tmp / "rm3.json")});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            const auto rm = nlohmann::json::parse(routepack::test::read_file(tmp / "rm3.json"));
            QCOMPARE(rm["row_count"].get<int>(), (plain + 2) / 3 * 3);
            QCOMPARE(rm["topology"]["row_multiple"].get<int>(), 3);
            QCOMPARE(rm["row_count_certified"].get<bool>(), true);
            r = cli({QStringLiteral("validate"), q(tmp / "rm3.json"), QStringLiteral("--db"), db});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            for (const char* bad_m : {"0", "1048577", "-2"}) {
                r = cli(QStringList{QStringLiteral("plan")} + common +
                        QStringList{QStringLiteral("--row-multiple"), QString::fromLatin1(bad_m),
                                    QStringLiteral("--out"), q(tmp / "x.json")});
                QCOMPARE(r.code, 2);
                QCOMPARE(r.err,
                         QStringLiteral("routepack: error: plan: --row-multiple must be in 1..1048576 (got %1)\n")
                             .arg(QString::fromLatin1(bad_m)));
            }
            routepack::test::write_file(tmp / "tmin.json", R"({"ep_ranks": 8, "dp_slots": 4, "token_cap": 8192,
                "min_rows": 1073741824, "attention_stages": [{"name": "mla", "alpha": 1, "beta": 1}]})");
            r = cli({QStringLiteral("plan"), QStringLiteral("--db"), db, QStringLiteral("--trace"),
                     QStringLiteral("syn"), QStringLiteral("--topology"), q(tmp / "tmin.json"),
                     QStringLiteral("--row-multiple"), QStringLiteral("3"), QStringLiteral("--out"),
                     q(tmp / "x.json")});
            QCOMPARE(r.code, 1);
            QCOMPARE(r.err,
                     QStringLiteral("routepack: error: plan: --row-multiple: min_rows 1073741824 rounded up to a "
                                    "multiple of row_multiple 3 is 1073741826 rows, above the largest row count "
                                    "1073741824\n"));
            QVERIFY(!fs::exists(tmp / "x.json"));
        }

        // Bad topology: E not divisible by P; and an aggregate-only trace cannot be planned.
        routepack::test::write_file(tmp / "t6.json", R"({"ep_ranks": 6, "dp_slots": 4, "token_cap": 8192,
            "attention_stages": [{"name": "mla", "alpha": 1, "beta": 1}]})");
        r = cli({QStringLiteral("plan"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--topology"), q(tmp / "t6.json"), QStringLiteral("--out"), q(tmp / "x.json")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "t6.json") +
                            QStringLiteral(": 32 experts are not divisible by 6 EP ranks\n"));
        QVERIFY(!fs::exists(tmp / "x.json"));
    }

    void demo() {
        const auto tmp = temp_dir(QStringLiteral("cli-demo"));
        const Run r = cli({QStringLiteral("demo"), QStringLiteral("--out"), q(tmp / "d")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains(QStringLiteral("demo: imported 64 samples")));
        QVERIFY(fs::exists(tmp / "d" / "demo.routepack"));
    }

private:
    /// idsWindowAndGroups: a synthetic trace of 3 GRPO groups imported into `db`, a window of two of its
    /// groups and an unknown group refused.
    static void importSynthGroupsAndWindowByGroup(const fs::path& tmp, const QString& db) {
        Run r = cli({QStringLiteral("synth"), QStringLiteral("--out"), q(tmp / "syn"), QStringLiteral("--groups"),
                     QStringLiteral("3"), QStringLiteral("--group-size"), QStringLiteral("4"), QStringLiteral("--seed"),
                     QStringLiteral("5")});
        QCOMPARE(r.code, 0);
        r = cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"), QStringLiteral("syn"),
                 QStringLiteral("--experts"), QStringLiteral("32"), QStringLiteral("--top-k"), QStringLiteral("4"),
                 QStringLiteral("--layers"), QStringLiteral("12"), QStringLiteral("--moe-layers"),
                 QStringLiteral("1-11"), q(tmp / "syn")});
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
    }

    /// idsWindowAndGroups: the trace cut into consecutive windows by samples and by groups; bad splits
    /// refused.
    static void splitWindowsOfTheRun(const QString& db, const QStringList& split) {
        // A whole run: consecutive windows of 5 samples (the last one shorter, marked), and of 2 GRPO
        // groups (4 samples each); a second split under a used name changes nothing.
        Run r = cli(split + QStringList{QStringLiteral("step"), QStringLiteral("--split"), QStringLiteral("5")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(r.out, QStringLiteral("window 'step-000' of trace 'syn': 5 samples (split 5: samples 1-5 of 12)\n"
                                       "window 'step-001' of trace 'syn': 5 samples (split 5: samples 6-10 of 12)\n"
                                       "window 'step-002' of trace 'syn': 2 samples (split 5: samples 11-12 of 12, "
                                       "remainder of 2)\n"));
        r = cli(split + QStringList{QStringLiteral("grp"), QStringLiteral("--split-groups"), QStringLiteral("2")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(r.out, QStringLiteral("window 'grp-000' of trace 'syn': 8 samples (split-groups 2: groups 1-2 of 3)\n"
                                       "window 'grp-001' of trace 'syn': 4 samples (split-groups 2: groups 3-3 of 3, "
                                       "remainder of 1)\n"));
        r = cli(split + QStringList{QStringLiteral("step"), QStringLiteral("--split"), QStringLiteral("4")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err,
                 QStringLiteral("routepack: error: window: trace 'syn' already has a window named 'step-000' (no "
                                "window was created)\n"));
        r = cli(split + QStringList{QStringLiteral("x"), QStringLiteral("--split"), QStringLiteral("13")});
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: --split 13 but trace 'syn' has only 12 samples\n"));
        r = cli(split + QStringList{QStringLiteral("x"), QStringLiteral("--split"), QStringLiteral("0")});
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: --split must be >= 1 (got 0)\n"));
        r = cli(split + QStringList{QStringLiteral("x"), QStringLiteral("--split-groups"), QStringLiteral("4")});
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: --split-groups 4 but trace 'syn' has only 3 GRPO "
                                       "groups\n"));
        {
            auto lib = routepack::storage::Library::open(db.toStdString(), routepack::storage::OpenMode::ReadOnly);
            const auto all = lib->samples("syn");
            std::vector<std::string> want;
            for (std::size_t i = 5; i < 10; ++i)
                want.push_back(all[i].id);
            QCOMPARE(lib->window_sample_ids("syn", "step-001"), want); // import order, consecutive
            QCOMPARE(lib->windows("syn").size(), std::size_t(6));      // g + 3 + 2: the refused split added none
        }
    }

    /// idsWindowAndGroups: sweep plans the split windows as a chain, each as `plan --previous` would.
    static void sweepPlansEachWindowFromThePrevious(const fs::path& tmp, const QString& db) {
        // sweep: every window of the run planned and saved, one line each; each plan is the one `plan
        // --threads 1 --previous <the window before's plan>` gives that window (the first window's, the
        // one without --previous); churn recounted from the two plan files' placements.
        Run r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"),
                     QStringLiteral("syn"), QStringLiteral("--windows"), QStringLiteral("grp-*"),
                     QStringLiteral("--topology"), QStringLiteral("synthetic-demo-ep8-dp4"), QStringLiteral("--seed"),
                     QStringLiteral("3"), QStringLiteral("--expert-bytes"), QStringLiteral("1000"),
                     QStringLiteral("--out"), q(tmp / "sweep"), QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto sj = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(sj.size(), std::size_t(2));
        QCOMPARE(sj[0]["window"].get<std::string>(), std::string("grp-000"));
        QCOMPARE(sj[1]["window"].get<std::string>(), std::string("grp-001"));
        QCOMPARE(sj[0]["samples"].get<int>(), 8);
        QVERIFY(sj[0]["churn_slots"].is_null());
        QVERIFY(sj[1]["run"].get<std::int64_t>() > sj[0]["run"].get<std::int64_t>());
        const routepack::PlanFile p0 = routepack::parse_plan(read_file(tmp / "sweep" / "grp-000.plan.json"), "p0");
        const routepack::PlanFile p1 = routepack::parse_plan(read_file(tmp / "sweep" / "grp-001.plan.json"), "p1");
        const std::vector<int> m0 = routepack::physical_to_logical(p0.placement),
                               m1 = routepack::physical_to_logical(p1.placement);
        std::int64_t churn = 0;
        for (std::size_t v = 0; v < m0.size(); ++v)
            churn += m0[v] != m1[v];
        QCOMPARE(sj[1]["churn_slots"].get<std::int64_t>(), churn);
        QCOMPARE(sj[1]["churn_bytes"].get<std::int64_t>(), 1000 * churn);
        QCOMPARE(sj[1]["routepack"].get<double>(), p1.score.max_u);
        const double base = sj[1]["baseline"].get<double>();
        QCOMPARE(sj[1]["routepack_vs_baseline_pct"].get<double>(), 100.0 * (p1.score.max_u - base) / base);
        r = cli({QStringLiteral("plan"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--window"), QStringLiteral("grp-001"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4"), QStringLiteral("--seed"), QStringLiteral("3"),
                 QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--quiet"),
                 QStringLiteral("--previous"), q(tmp / "sweep" / "grp-000.plan.json"), QStringLiteral("--out"),
                 q(tmp / "grp-001.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const routepack::PlanFile direct = routepack::parse_plan(read_file(tmp / "grp-001.json"), "direct");
        QCOMPARE(direct.score, p1.score);
        QCOMPARE(direct.layout, p1.layout);
        QCOMPARE(direct.placement, p1.placement);
        const QString csv = QString::fromStdString(read_file(tmp / "sweep" / "sweep.csv"));
        QCOMPARE(csv.count(QStringLiteral("\r\n")), 3); // header + two windows
        QVERIFY(csv.startsWith(QStringLiteral("window,samples,rows,certified,baseline,")));
        // The sweep is a chain: with a move budget, window grp-001's plan is the one `plan --previous
        // <grp-000's plan> --max-moves 6` gives, and it moves at most 6 experts.
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--windows"), QStringLiteral("grp-*"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4"), QStringLiteral("--seed"), QStringLiteral("3"),
                 QStringLiteral("--max-moves"), QStringLiteral("6"), QStringLiteral("--out"), q(tmp / "sweep-budget"),
                 QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto bj = nlohmann::json::parse(r.out.toStdString());
        QVERIFY(bj[1]["experts_moved"].get<std::int64_t>() <= 6);
        r = cli({QStringLiteral("plan"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--window"), QStringLiteral("grp-001"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4"), QStringLiteral("--seed"), QStringLiteral("3"),
                 QStringLiteral("--max-moves"), QStringLiteral("6"), QStringLiteral("--previous"),
                 q(tmp / "sweep-budget" / "grp-000.plan.json"), QStringLiteral("--quiet"), QStringLiteral("--out"),
                 q(tmp / "grp-001-chained.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const routepack::PlanFile chained = routepack::parse_plan(read_file(tmp / "grp-001-chained.json"), "c");
        const routepack::PlanFile swept =
            routepack::parse_plan(read_file(tmp / "sweep-budget" / "grp-001.plan.json"), "s");
        QCOMPARE(chained.placement, swept.placement);
        QCOMPARE(chained.layout, swept.layout);
        QCOMPARE(chained.score, swept.score);
        QVERIFY(chained.migration.present);
        QCOMPARE(chained.migration.moves, bj[1]["experts_moved"].get<std::int64_t>());
        QCOMPARE(chained.migration.previous_fingerprint,
                 routepack::placement_fingerprint(
                     routepack::parse_plan(read_file(tmp / "sweep-budget" / "grp-000.plan.json"), "p").placement));
        // Run-level base placement: the sweep's window grp-001 is `plan --previous <grp-000's plan>
        // --history-decay 0.5` (the history travels in the plan file), and its history holds two steps.
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--windows"), QStringLiteral("grp-*"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4"), QStringLiteral("--seed"), QStringLiteral("3"),
                 QStringLiteral("--max-moves"), QStringLiteral("6"), QStringLiteral("--history-decay"),
                 QStringLiteral("0.5"), QStringLiteral("--out"), q(tmp / "sweep-history"), QStringLiteral("--quiet")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({QStringLiteral("plan"),
                 QStringLiteral("--db"),
                 db,
                 QStringLiteral("--trace"),
                 QStringLiteral("syn"),
                 QStringLiteral("--window"),
                 QStringLiteral("grp-001"),
                 QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4"),
                 QStringLiteral("--seed"),
                 QStringLiteral("3"),
                 QStringLiteral("--max-moves"),
                 QStringLiteral("6"),
                 QStringLiteral("--history-decay"),
                 QStringLiteral("0.5"),
                 QStringLiteral("--previous"),
                 q(tmp / "sweep-history" / "grp-000.plan.json"),
                 QStringLiteral("--quiet"),
                 QStringLiteral("--out"),
                 q(tmp / "grp-001-history.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const routepack::PlanFile h_step = routepack::parse_plan(read_file(tmp / "grp-001-history.json"), "h");
        const routepack::PlanFile h_swept =
            routepack::parse_plan(read_file(tmp / "sweep-history" / "grp-001.plan.json"), "s");
        QCOMPARE(h_step.placement, h_swept.placement);
        QCOMPARE(h_step.layout, h_swept.layout);
        QVERIFY(h_step.history.has_value() && h_swept.history.has_value());
        QCOMPARE(h_swept.history->steps, std::int64_t{2});
        QCOMPARE(h_step.history->loads, h_swept.history->loads);
        QCOMPARE(h_swept.history->weight, 1.5);
        QVERIFY(h_swept.migration.moves <= 6);
    }

    /// idsWindowAndGroups: sweep on a two-node topology adds the communication-aware methods.
    static void sweepOnTwoNodes(const fs::path& tmp, const QString& db) {
        // On two nodes (the demo topology with 4 GPUs per node) the sweep adds grouter and
        // routepack+comm and every method's inter-node copies, equal to the window's plan file;
        // every CSV line has the header's number of fields.
        routepack::Topology two = routepack::known_topology("synthetic-demo-ep8-dp4");
        two.gpus_per_node = 4;
        { std::ofstream(tmp / "two-nodes.json") << routepack::topology_to_json(two); }
        Run r =
            cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--windows"), QStringLiteral("grp-*"), QStringLiteral("--topology"),
                 q(tmp / "two-nodes.json"), QStringLiteral("--seed"), QStringLiteral("3"), QStringLiteral("--out"),
                 q(tmp / "sweep2"), QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto sj = nlohmann::json::parse(r.out.toStdString());
        const routepack::PlanFile p1 = routepack::parse_plan(read_file(tmp / "sweep2" / "grp-001.plan.json"), "p1");
        QCOMPARE(p1.comm.nodes, 2);
        QVERIFY(p1.comm.available);
        for (const char* m : {"baseline", "reorder", "karmarkar_karp", "routepack", "grouter", "routepack+comm"})
            QCOMPARE(sj[1]["inter_node_copies"][m].get<std::int64_t>(),
                     p1.comm.figures[routepack::method_from_key(m).value()].value().inter);
        QCOMPARE(sj[1]["grouter"].get<double>(), p1.metrics_of(routepack::Method::Grouter).score.max_u);
        QCOMPARE(sj[1]["routepack+comm"].get<double>(), p1.metrics_of(routepack::Method::RoutePackComm).score.max_u);
        const QStringList lines = QString::fromStdString(read_file(tmp / "sweep2" / "sweep.csv"))
                                      .split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 3);
        for (const QString& line : lines)
            QCOMPARE(line.count(QLatin1Char(',')), lines[0].count(QLatin1Char(',')));
        const int copies_field = static_cast<int>(
            lines[0].split(QLatin1Char(',')).indexOf(QStringLiteral("routepack+comm_inter_node_copies")));
        QCOMPARE(lines[2].split(QLatin1Char(','))[copies_field],
                 QString::number(p1.comm.figures[routepack::Method::RoutePackComm].value().inter));
        const QStringList one = QString::fromStdString(read_file(tmp / "sweep" / "sweep.csv"))
                                    .split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(one[1].count(QLatin1Char(',')), one[0].count(QLatin1Char(',')));
    }

    /// idsWindowAndGroups: plan file names stay inside --out; bad sweeps are refused before planning.
    static void sweepPlanFileNamesAndRefusals(const fs::path& tmp, const QString& db, const QStringList& split) {
        // A window name is free text: its plan file stays inside --out ("../up-000" -> "_.._up-000").
        Run r =
            cli(split + QStringList{QStringLiteral("../up"), QStringLiteral("--split-groups"), QStringLiteral("3")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--windows"), QStringLiteral("../up-*"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4"), QStringLiteral("--out"), q(tmp / "sw2" / "out"),
                 QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(nlohmann::json::parse(r.out.toStdString())[0]["plan_file"].get<std::string>(),
                 std::string("_.._up-000.plan.json"));
        QVERIFY(std::filesystem::exists(tmp / "sw2" / "out" / "_.._up-000.plan.json"));
        QVERIFY(!std::filesystem::exists(tmp / "sw2" / "up-000.plan.json"));
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--windows"), QStringLiteral("nope*"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: sweep: trace 'syn' has no window matching 'nope*'\n"));
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--expert-bytes"), QStringLiteral("-1"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4")});
        QCOMPARE(r.err,
                 QStringLiteral("routepack: error: sweep: --expert-bytes must be in 0..1099511627776 (1 TiB; got "
                                "-1)\n"));
        // Bytes that would overflow the churn product are refused up front.
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--expert-bytes"), QStringLiteral("6000000000000000"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4")});
        QCOMPARE(r.err,
                 QStringLiteral("routepack: error: sweep: --expert-bytes must be in 0..1099511627776 (1 TiB; got "
                                "6000000000000000)\n"));
        // Without --expert-bytes the churn in bytes is unknown (null), not zero.
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--windows"), QStringLiteral("grp-*"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4"), QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(nlohmann::json::parse(r.out.toStdString())[1]["churn_bytes"].is_null());
        // A target in --out that cannot be written is found before planning: nothing is written.
        std::filesystem::create_directories(tmp / "sw3" / "grp-001.plan.json");
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
                 QStringLiteral("--windows"), QStringLiteral("grp-*"), QStringLiteral("--topology"),
                 QStringLiteral("synthetic-demo-ep8-dp4"), QStringLiteral("--out"), q(tmp / "sw3"),
                 QStringLiteral("--quiet")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QStringLiteral("routepack: error: ") + q(tmp / "sw3" / "grp-001.plan.json") +
                            QStringLiteral(": exists and is not a regular file; nothing was planned\n"));
        QVERIFY(!std::filesystem::exists(tmp / "sw3" / "sweep.csv"));
        QVERIFY(!std::filesystem::exists(tmp / "sw3" / "grp-000.plan.json"));
    }

    /// idsWindowAndGroups: an aggregate trace can be placed but not cut into windows or swept; an empty
    /// window name is refused.
    static void loadOnlyTraceHasNoWindows(const fs::path& tmp, const QString& db, const QStringList& split) {
        // A load-only (aggregate) trace has no samples to cut or plan: both commands say so.
        write_file(tmp / "agg.json", R"({"counts": [[1, 2, 3, 4], [4, 3, 2, 1]], "num_layers": 2, "num_experts": 4})");
        Run r =
            cli({QStringLiteral("import"), QStringLiteral("--db"), db, QStringLiteral("--name"), QStringLiteral("agg"),
                 QStringLiteral("--format"), QStringLiteral("aggregate"), q(tmp / "agg.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        // It can be placed, from the library or read straight from the file: the same expert map.
        r = cli({QStringLiteral("place"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("agg"),
                 QStringLiteral("--ep-ranks"), QStringLiteral("2"), QStringLiteral("--out"),
                 q(tmp / "agg-db.map.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({QStringLiteral("place"), QStringLiteral("--input"), q(tmp / "agg.json"),
                 QStringLiteral("--input-format"), QStringLiteral("aggregate"), QStringLiteral("--ep-ranks"),
                 QStringLiteral("2"), QStringLiteral("--out"), q(tmp / "agg-file.map.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("placement of ") + q(tmp / "agg.json") +
                                  QStringLiteral(": 2 MoE layers x 4 experts on 2 EP ranks")),
                 qPrintable(r.out));
        QCOMPARE(read_file(tmp / "agg-file.map.json"), read_file(tmp / "agg-db.map.json"));
        r = cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("agg"),
                 QStringLiteral("--name"), QStringLiteral("a"), QStringLiteral("--split"), QStringLiteral("1")});
        QCOMPARE(r.err,
                 QStringLiteral("routepack: error: window: trace 'agg' is load-only (per-layer expert totals, no "
                                "samples): windows need samples\n"));
        r = cli({QStringLiteral("sweep"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("agg"),
                 QStringLiteral("--topology"), QStringLiteral("synthetic-demo-ep8-dp4")});
        QCOMPARE(r.err, QStringLiteral("routepack: error: sweep: trace 'agg' is load-only (per-layer expert totals, no "
                                       "samples): sweeps need windows of samples\n"));
        r = cli(split + QStringList{QString(), QStringLiteral("--split"), QStringLiteral("5")});
        QCOMPARE(r.err, QStringLiteral("routepack: error: window: --name must not be empty (it prefixes the split "
                                       "windows' names)\n"));
        // The library's error about the window name (storage create_window: Setting "window_name"),
        // in the CLI's words: the flag that gives it.
        r = cli(split + QStringList{QString(), QStringLiteral("--first"), QStringLiteral("1")});
        QCOMPARE(r.err, QStringLiteral("routepack: error: --name must not be empty (trace 'syn')\n"));
        QCOMPARE(r.code, 1);
    }

    /// idsWindowAndGroups: a window from a file of sample ids; an unknown id is refused.
    static void windowFromIdsFile(const fs::path& tmp, const QString& db) {
        write_file(tmp / "ids.txt", "# chosen by hand\ngroup_1#2\n\ngroup_0#0\n");
        Run r =
            cli({QStringLiteral("window"), QStringLiteral("--db"), db, QStringLiteral("--trace"), QStringLiteral("syn"),
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
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
