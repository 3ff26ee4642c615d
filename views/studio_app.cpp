#include "views/studio_app.h"

#include "core/plan/plan_file.h"
#include "core/util/errors.h"
#include "core/util/version.h"
#include "storage/demo.h"
#include "views/dialogs/exports.h"
#include "views/plan/measured_data.h"
#include "views/plan/plan_views.h"
#include "views/run/run_view.h"
#include "views/run/whole_runs_view.h"
#include "views/studio_window.h"
#include "views/widgets/gui_text.h"

#include <QApplication>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>

#include <cstdio>
#include <utility>
#include <vector>

namespace routepack::views {

namespace {

/// Writes plan-<view>.png into `folder` for every PlanView view of `plan` (the communication view
/// only on more than one node, the measured view only with `measured` plans); appends the file
/// names to `files`. Throws std::runtime_error with the export's error.
void renderPlanViews(const std::shared_ptr<const PlanResult>& plan, const std::shared_ptr<const Trace>& window,
                     const QString& folder, QStringList* files, std::vector<MeasuredChoice> measured = {}) {
    PlanView view;
    view.resize(1200, 800);
    view.setPlan(plan, window);
    const bool anyMeasured = !measured.empty();
    view.setMeasured(std::move(measured));
    view.show();
    QApplication::processEvents(); // lay the shown widgets out once before grabbing them
    const QDir dir(folder);
    QString why;
    for (const QString& name : view.viewNames()) {
        // On one node the communication view would only say so.
        if (name == QStringLiteral("communication") && plan->comm.nodes <= 1) continue;
        if (name == QStringLiteral("measured") && !anyMeasured) continue;
        view.setCurrentWidget(view.viewWidget(name));
        QApplication::processEvents();
        const QString file = QStringLiteral("plan-%1.png").arg(name);
        if (!view.exportView(name, dir.filePath(file), &why)) throw std::runtime_error(why.toStdString());
        *files << file;
    }
}

} // namespace

bool runHeadlessRun(const QString& folder, const HeadlessRun& what, HeadlessOutput* output, QString* error) {
    try {
        const QString abs = QDir(folder).absolutePath();
        if (!QDir().mkpath(abs)) throw InputError(abs.toStdString() + ": cannot create the folder");
        HeadlessOutput out;
        out.folder = abs;
        auto lib = storage::Library::open(what.library.toStdString(), storage::OpenMode::ReadOnly);
        std::int64_t id = what.run;
        if (id <= 0) {
            // The window's latest run with a plan (finished or cancelled).
            for (const auto& r : lib->runs(what.trace.toStdString(), what.window.toStdString()))
                if (r.plan_id != 0 && r.id > id) id = r.id;
            if (id <= 0)
                throw InputError("window '" + what.window.toStdString() + "' of trace '" + what.trace.toStdString() +
                                 "' has no saved run with a plan");
        }
        const storage::RunEntry run = lib->run(id);
        if (run.plan_id == 0) throw InputError("run " + std::to_string(id) + " has no plan (it " + run.status + ")");
        out.run = id;
        const std::string text = lib->run_plan_json(id);
        QString why;
        if (!writeTextFile(QDir(abs).filePath(QStringLiteral("plan.json")), text, &why))
            throw std::runtime_error(why.toStdString());
        out.files << QStringLiteral("plan.json");
        // The saved plan rebuilt against its window, as the studio shows a saved run (restore_plan).
        const std::string origin = "run " + std::to_string(id);
        auto window = std::make_shared<const Trace>(
            lib->load_window(run.trace, run.window, storage::routes_for(run.topology_value)));
        auto plan = std::make_shared<PlanResult>(restore_plan(parse_plan(text, origin), *window, origin));
        plan->budgets = run.budgets;
        plan->search.convergence = run.levels;
        plan->timings = run.timings;
        plan->cancelled = run.status == "cancelled";
        renderPlanViews(plan, window, abs, &out.files, run_measured_choices(*lib, run.trace, run.window, id));
        if (output) *output = out;
        return true;
    } catch (const std::exception& e) {
        if (error) *error = guiErrorText(e);
        return false;
    }
}

namespace {

/// Writes CSV text (CRLF-ended lines) as file `name` of folder `dir` and lists it in `out`; throws
/// std::runtime_error with writeTextFile's words when it cannot.
void writeCsvFile(const QString& dir, const QString& name, std::string csv, HeadlessOutput& out) {
    csv.pop_back(); // writeTextFile ends the text with "\n": the last line ends in "\r\n" like every other
    QString why;
    if (!writeTextFile(QDir(dir).filePath(name), csv, &why)) throw std::runtime_error(why.toStdString());
    out.files << name;
}

} // namespace

bool runHeadlessClusterRun(const QString& folder, const QString& library, qint64 clusterRun, HeadlessOutput* output,
                           QString* error) {
    try {
        const QString abs = QDir(folder).absolutePath();
        (void)storage::Library::open(library.toStdString(), storage::OpenMode::ReadOnly)->cluster_run(clusterRun);
        if (!QDir().mkpath(abs)) throw InputError(abs.toStdString() + ": cannot create the folder");
        RunView view;
        view.resize(1400, 900);
        view.show();
        QEventLoop wait;
        QObject::connect(&view, &RunView::updated, &wait, &QEventLoop::quit);
        view.setClusterSource(library, clusterRun);
        if (view.isLoading()) wait.exec();
        if (view.isEmptyState()) throw InputError(view.emptyText().toStdString());
        HeadlessOutput out;
        out.folder = abs;
        out.run = clusterRun;
        QString why;
        writeCsvFile(abs, QStringLiteral("run.csv"), view.tableCsv(), out);
        QApplication::processEvents(); // lay the charts out once before grabbing them
        for (const QString& name : RunView::chartNames()) {
            if (name == QStringLiteral("run-frontier") ||
                (name == QStringLiteral("run-apply") && !has_migration_costs(*view.currentSeries())))
                continue; // a frontier is computed on request; apply needs a migration cost model
            if (!view.exportChart(name, QDir(abs).filePath(name + QStringLiteral(".png")), &why))
                throw std::runtime_error(why.toStdString());
            out.files << name + QStringLiteral(".png");
        }
        if (output) *output = out;
        return true;
    } catch (const std::exception& e) {
        if (error) *error = guiErrorText(e);
        return false;
    }
}

bool runHeadlessCompareRuns(const QString& folder, const QString& library, const QList<qint64>& ids,
                            HeadlessOutput* output, QString* error) {
    try {
        const QString abs = QDir(folder).absolutePath();
        auto lib = storage::Library::open(library.toStdString(), storage::OpenMode::ReadOnly);
        auto c = std::make_shared<RunComparison>(
            compare_whole_runs(*lib, std::vector<std::int64_t>(ids.begin(), ids.end())));
        lib.reset();
        if (!c->error.empty()) throw InputError(c->error);
        if (!QDir().mkpath(abs)) throw InputError(abs.toStdString() + ": cannot create the folder");
        WholeRunsView view;
        view.resize(1400, 1000);
        view.show();
        view.showComparison(c);
        HeadlessOutput out;
        out.folder = abs;
        QString why;
        writeCsvFile(abs, QStringLiteral("compare-runs.csv"), view.comparisonCsv(), out);
        for (const CompareMetric m : kCompareMetrics) {
            if (std::none_of(c->runs.begin(), c->runs.end(), [m](const ComparedRun& r) { return compare_total(r, m); }))
                continue; // bytes and seconds need a migration cost model
            view.setMetric(m);
            for (int pass = 0; pass < 2; ++pass) // lay the charts out (and their text) before grabbing them
                QApplication::processEvents();
            QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
            for (const QString& chart : {QStringLiteral("overlay"), QStringLiteral("difference")}) {
                const QString name =
                    QStringLiteral("compare-%1-%2.png").arg(QLatin1String(compare_metric_key(m)), chart);
                if (!view.exportChart(chart, QDir(abs).filePath(name), &why))
                    throw std::runtime_error(why.toStdString());
                out.files << name;
            }
        }
        if (output) *output = out;
        return true;
    } catch (const std::exception& e) {
        if (error) *error = guiErrorText(e);
        return false;
    }
}

bool runHeadlessDemo(const QString& folder, HeadlessOutput* output, QString* error) {
    try {
        const QString abs = QDir(folder).absolutePath();
        HeadlessOutput out;
        out.folder = abs;
        const storage::DemoBuild d = storage::build_demo(abs.toStdString());
        out.files << QString::fromLatin1(storage::kDemoLibraryFile) << QStringLiteral("trace/")
                  << QFileInfo(QString::fromStdString(d.plan_file.string())).fileName();
        auto window = std::make_shared<const Trace>(storage::Library::open(d.library, storage::OpenMode::ReadOnly)
                                                        ->load_window(storage::kDemoTrace, storage::kDemoWindow));
        auto plan = std::make_shared<const PlanResult>(d.plan);

        CompareView compare;
        compare.resize(1100, 700);
        compare.setRuns({plan}, {QStringLiteral("demo run %1").arg(d.run.id)});
        compare.show();
        QString why;
        const QDir dir(abs);
        if (!compare.exportTableCsv(dir.filePath(QStringLiteral("comparison.csv")), &why))
            throw std::runtime_error(why.toStdString());
        out.files << QStringLiteral("comparison.csv");
        if (!compare.exportChart(dir.filePath(QStringLiteral("comparison-chart.png")), &why))
            throw std::runtime_error(why.toStdString());
        out.files << QStringLiteral("comparison-chart.png");

        renderPlanViews(plan, window, abs, &out.files);
        if (output) *output = out;
        return true;
    } catch (const std::exception& e) {
        if (error) *error = guiErrorText(e);
        return false;
    }
}

namespace {

/// The offscreen platform's notices about window hints are noise in a headless run.
void quietOffscreen(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    if (msg.contains(QStringLiteral("does not support propagateSizeHints")) ||
        msg.startsWith(QStringLiteral("QStandardPaths: XDG_RUNTIME_DIR not set")))
        return;
    qt_message_output(type, ctx, msg);
}

/// One CSV line's fields (RFC 4180: a quoted field may hold commas and doubled quotes).
QStringList csvFields(const QString& line) {
    QStringList out;
    QString cur;
    bool quoted = false;
    for (int i = 0; i < line.size(); ++i) {
        const QChar ch = line[i];
        if (quoted) {
            if (ch == QLatin1Char('"') && i + 1 < line.size() && line[i + 1] == QLatin1Char('"')) {
                cur += ch;
                ++i;
            } else if (ch == QLatin1Char('"')) {
                quoted = false;
            } else {
                cur += ch;
            }
        } else if (ch == QLatin1Char('"')) {
            quoted = true;
        } else if (ch == QLatin1Char(',')) {
            out << cur;
            cur.clear();
        } else {
            cur += ch;
        }
    }
    out << cur;
    return out;
}

/// Prints the headless demo's comparison (comparison.csv, written by the CompareView) as a table:
/// a header line starting "method", then one line per method starting with its CSV name; the columns
/// found by the CSV header's names (CompareTableModel's headers), percentages to 2 decimals.
void printComparison(const QString& csv) {
    QFile f(csv);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return;
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    if (lines.isEmpty()) return;
    const QStringList header = csvFields(lines[0].trimmed());
    // CSV header -> printed header, in printed order.
    const std::pair<const char*, const char*> columns[] = {
        {"method", "method"}, {"rows", "rows"},     {"max U (joint)", "max_g U"}, {"sum U", "sum_g U"},
        {"max J", "max J"},   {"eta_EP", "eta_EP"}, {"vs reorder", "vs reorder"}};
    std::vector<int> at;
    for (const auto& [name, shown] : columns) {
        at.push_back(static_cast<int>(header.indexOf(QString::fromLatin1(name))));
        if (at.back() < 0) {
            std::fprintf(stderr, "routepack-studio: %s has no column '%s'\n", qPrintable(csv), name);
            return;
        }
    }
    std::printf("\n%-16s %4s %12s %12s %10s %8s %10s\n", "method", "rows", "max_g U", "sum_g U", "max J", "eta_EP",
                "vs reorder");
    for (int i = 1; i < lines.size(); ++i) {
        const QStringList c = csvFields(lines[i].trimmed());
        auto cell = [&](int k) { return c.value(at[static_cast<std::size_t>(k)]); };
        auto number = [&](int k) { return cell(k).toDouble(); };
        const QString vs = cell(6).isEmpty() ? QStringLiteral("-") : QString::asprintf("%+.2f%%", number(6));
        std::printf("%-16s %4s %12.4f %12.4f %10.4f %8.4f %10s\n", qPrintable(cell(0)), qPrintable(cell(1)), number(2),
                    number(3), number(4), number(5), qPrintable(vs));
    }
}

/// The studio's command line.
struct StudioArgs {
    bool headless = false;
    bool outGiven = false;
    QString out = QStringLiteral("routepack-demo");
    QString library;
    HeadlessRun run;           ///< --db, --run, --trace, --window
    bool runAsked = false;     ///< one of them was given
    qint64 clusterRun = 0;     ///< --cluster-run
    QList<qint64> compareRuns; ///< --compare-runs A,B[,...]
};

/// Reads the command line into `args`; returns -1 to go on, else the exit status (help printed, or
/// an error line on stderr).
int parseStudioArgs(int argc, char** argv, StudioArgs& args) {
    auto fail = [](const QString& text, int status) {
        std::fprintf(stderr, "routepack-studio: error: %s\n", qPrintable(text));
        return status;
    };
    QString runText, clusterText, compareText;
    for (int i = 1; i < argc; ++i) {
        const QString a = QString::fromLocal8Bit(argv[i]);
        // The options that name a saved run take one value each.
        QString* value = a == QStringLiteral("--db")             ? &args.run.library
                         : a == QStringLiteral("--run")          ? &runText
                         : a == QStringLiteral("--trace")        ? &args.run.trace
                         : a == QStringLiteral("--window")       ? &args.run.window
                         : a == QStringLiteral("--cluster-run")  ? &clusterText
                         : a == QStringLiteral("--compare-runs") ? &compareText
                                                                 : nullptr;
        if (value) {
            if (i + 1 >= argc) return fail(QStringLiteral("%1 needs a value").arg(a), 2);
            *value = QString::fromLocal8Bit(argv[++i]);
            args.runAsked = true;
        } else if (a == QStringLiteral("--headless")) {
            args.headless = true;
        } else if (a == QStringLiteral("--headless-out") && i + 1 < argc) {
            // An output folder is only written by the headless run, so asking for one means headless
            // whatever the platform (an invisible GUI that writes nothing would never end).
            args.out = QString::fromLocal8Bit(argv[++i]);
            args.outGiven = true;
        } else if (a.startsWith(QStringLiteral("--headless-out="))) {
            args.out = a.mid(15);
            args.outGiven = true;
        } else if (a == QStringLiteral("-h") || a == QStringLiteral("--help")) {
            std::printf("usage: routepack-studio [LIBRARY]\n"
                        "       routepack-studio --headless [--headless-out DIR]\n"
                        "       routepack-studio --headless-out DIR --db LIBRARY (--run N | --trace T --window W)\n"
                        "       routepack-studio --headless-out DIR --db LIBRARY --cluster-run N\n"
                        "       routepack-studio --headless-out DIR --db LIBRARY --compare-runs A,B[,...]\n"
                        "Opens LIBRARY (else the last library, else the embedded demo library). Without a display,\n"
                        "with --headless, or with --headless-out DIR, runs the demo pipeline without a window and\n"
                        "writes plan.json, comparison.csv and PNG renderings of the plan views and the comparison\n"
                        "chart to DIR (default ./routepack-demo). With --db, renders saved run N of LIBRARY (or the\n"
                        "latest run of window W of trace T) instead: its plan.json and a PNG of every plan view;\n"
                        "with --cluster-run N, imported cluster run N: run.csv and a PNG of each Run view chart;\n"
                        "with --compare-runs A,B, whole runs A and B (routepack info lists them) side by side:\n"
                        "compare-runs.csv and a PNG of each overlay and difference chart.\n");
            return 0;
        } else if (a.startsWith(QLatin1Char('-')) && !a.startsWith(QStringLiteral("-platform")) &&
                   a != QStringLiteral("-style")) {
            return fail(QStringLiteral("unknown option '%1' (see routepack-studio --help)").arg(a), 2);
        } else if (!a.startsWith(QLatin1Char('-'))) {
            args.library = a;
        }
    }
    if (!args.runAsked) return -1;
    if (!args.outGiven)
        return fail(
            QStringLiteral("--db, --run, --trace and --window render a saved run: they need --headless-out DIR"), 2);
    if (args.run.library.isEmpty()) return fail(QStringLiteral("--run, --trace and --window need --db LIBRARY"), 2);
    if (!compareText.isEmpty()) {
        if (!runText.isEmpty() || !clusterText.isEmpty() || !args.run.trace.isEmpty() || !args.run.window.isEmpty())
            return fail(QStringLiteral("--compare-runs renders whole runs: give it without --run, --cluster-run, "
                                       "--trace and --window"),
                        2);
        for (const QString& part : compareText.split(QLatin1Char(','))) {
            bool ok = false;
            const qint64 id = part.trimmed().toLongLong(&ok);
            if (!ok || id <= 0)
                return fail(QStringLiteral("--compare-runs must list whole run ids, positive integers separated by "
                                           "commas (got '%1')")
                                .arg(compareText),
                            2);
            args.compareRuns << id;
        }
        if (args.compareRuns.size() < 2)
            return fail(QStringLiteral("--compare-runs needs at least two whole run ids (got '%1')").arg(compareText),
                        2);
        return -1;
    }
    if (!clusterText.isEmpty()) {
        if (!runText.isEmpty() || !args.run.trace.isEmpty() || !args.run.window.isEmpty())
            return fail(QStringLiteral("--cluster-run renders an imported cluster run: give it without --run, --trace "
                                       "and --window"),
                        2);
        bool ok = false;
        args.clusterRun = clusterText.toLongLong(&ok);
        if (!ok || args.clusterRun <= 0)
            return fail(QStringLiteral("--cluster-run must be a cluster run id, a positive integer (got '%1')")
                            .arg(clusterText),
                        2);
        return -1;
    }
    const bool byWindow = !args.run.trace.isEmpty() || !args.run.window.isEmpty();
    if (runText.isEmpty() == !byWindow || (byWindow && (args.run.trace.isEmpty() || args.run.window.isEmpty())))
        return fail(QStringLiteral("--db needs either --run N or both --trace T and --window W"), 2);
    if (!runText.isEmpty()) {
        bool ok = false;
        args.run.run = runText.toLongLong(&ok);
        if (!ok || args.run.run <= 0)
            return fail(QStringLiteral("--run must be a run id, a positive integer (got '%1')").arg(runText), 2);
    }
    return -1;
}

} // namespace

int runStudio(int argc, char** argv) {
    StudioArgs args;
    if (const int status = parseStudioArgs(argc, argv, args); status >= 0) return status;
    bool headless = args.headless;
    const bool outGiven = args.outGiven;
    const QString out = args.out;
    const QString library = args.library;
    const bool no_display = qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
                            !qEnvironmentVariableIsSet("QT_QPA_PLATFORM");
    if (no_display && !headless && !args.runAsked) {
        std::printf("routepack-studio: no display found; running the demo headless\n");
        std::fflush(stdout);
        headless = true;
    }
    headless = headless || outGiven;
    if (headless) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        qInstallMessageHandler(quietOffscreen);
    }

    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("RoutePack"));
    QApplication::setApplicationName(QStringLiteral("RoutePack Studio"));
    QApplication::setApplicationVersion(QString::fromLatin1(kVersion));

    if (args.runAsked) {
        HeadlessOutput result;
        QString error;
        const bool cluster = args.clusterRun > 0, compare = !args.compareRuns.isEmpty();
        const bool ok = compare   ? runHeadlessCompareRuns(out, args.run.library, args.compareRuns, &result, &error)
                        : cluster ? runHeadlessClusterRun(out, args.run.library, args.clusterRun, &result, &error)
                                  : runHeadlessRun(out, args.run, &result, &error);
        if (!ok) {
            std::fprintf(stderr, "routepack-studio: error: %s\n", qPrintable(error));
            return 1;
        }
        if (compare) {
            QStringList ids;
            for (const qint64 id : args.compareRuns)
                ids << QString::number(id);
            std::printf("routepack-studio: whole runs %s compared in %s\n", qPrintable(ids.join(QLatin1Char(','))),
                        qPrintable(result.folder));
        } else {
            std::printf("routepack-studio: %s %lld written to %s\n", cluster ? "cluster run" : "run",
                        static_cast<long long>(result.run), qPrintable(result.folder));
        }
        for (const QString& f : result.files)
            std::printf("  %s\n", qPrintable(f));
        return 0;
    }
    if (headless) {
        HeadlessOutput result;
        QString error;
        if (!runHeadlessDemo(out, &result, &error)) {
            std::fprintf(stderr, "routepack-studio: error: %s\n", qPrintable(error));
            return 1;
        }
        std::printf("routepack-studio: headless demo written to %s\n", qPrintable(result.folder));
        for (const QString& f : result.files)
            std::printf("  %s\n", qPrintable(f));
        printComparison(result.folder + QStringLiteral("/comparison.csv"));
        return 0;
    }

    StudioWindow window;
    window.show();
    const QString last = window.lastLibrary();
    if (!library.isEmpty()) {
        window.openLibrary(library, true);
    } else if (!last.isEmpty() && QFileInfo::exists(last)) {
        if (!window.openLibrary(last)) window.openDemoLibrary();
    } else {
        window.openDemoLibrary();
    }
    return app.exec();
}

} // namespace routepack::views
