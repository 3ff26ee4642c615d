#include "views/studio_app.h"

#include "storage/demo.h"
#include "views/gui_text.h"
#include "views/plan_views.h"
#include "views/studio_window.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <cstdio>

namespace routepack::views {

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

        PlanView view;
        view.resize(1200, 800);
        view.setPlan(plan, window);
        view.show();
        QApplication::processEvents(); // lay the shown widgets out once before grabbing them
        for (const QString& name : view.viewNames()) {
            // The demo plan is on one node: its communication view would only say so.
            if (name == QStringLiteral("communication") && plan->comm.nodes <= 1) continue;
            view.setCurrentWidget(view.viewWidget(name));
            QApplication::processEvents();
            const QString file = QStringLiteral("plan-%1.png").arg(name);
            if (!view.exportView(name, dir.filePath(file), &why)) throw std::runtime_error(why.toStdString());
            out.files << file;
        }
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

/// Prints the headless demo's comparison (comparison.csv, written by the CompareView) as a table.
void printComparison(const QString& csv) {
    QFile f(csv);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return;
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    std::printf("\n%-16s %4s %12s %12s %10s %8s %10s\n", "method", "rows", "max_g U", "sum_g U", "max J", "eta_EP",
                "vs reorder");
    for (int i = 1; i < lines.size(); ++i) {
        const QStringList c = lines[i].trimmed().split(QLatin1Char(','));
        if (c.size() < 14) continue;
        std::printf("%-16s %4s %12.4f %12.4f %10.4f %8.4f %+9.2f%%\n", qPrintable(c[1]), qPrintable(c[2]),
                    c[3].toDouble(), c[4].toDouble(), c[5].toDouble(), c[9].toDouble(), c[12].toDouble());
    }
}

} // namespace

int runStudio(int argc, char** argv) {
    bool headless = false;
    bool outGiven = false;
    QString out = QStringLiteral("routepack-demo");
    QString library;
    for (int i = 1; i < argc; ++i) {
        const QString a = QString::fromLocal8Bit(argv[i]);
        if (a == QStringLiteral("--headless")) {
            headless = true;
        } else if (a == QStringLiteral("--headless-out") && i + 1 < argc) {
            // An output folder is only written by the headless run, so asking for one means headless
            // whatever the platform (an invisible GUI that writes nothing would never end).
            out = QString::fromLocal8Bit(argv[++i]);
            outGiven = true;
        } else if (a.startsWith(QStringLiteral("--headless-out="))) {
            out = a.mid(15);
            outGiven = true;
        } else if (a == QStringLiteral("-h") || a == QStringLiteral("--help")) {
            std::printf("usage: routepack-studio [LIBRARY]\n"
                        "       routepack-studio --headless [--headless-out DIR]\n"
                        "Opens LIBRARY (else the last library, else the embedded demo library). Without a display,\n"
                        "with --headless, or with --headless-out DIR, runs the demo pipeline without a window and\n"
                        "writes plan.json, comparison.csv and PNG renderings of the plan views and the comparison\n"
                        "chart to DIR (default ./routepack-demo).\n");
            return 0;
        } else if (a.startsWith(QLatin1Char('-')) && !a.startsWith(QStringLiteral("-platform")) &&
                   a != QStringLiteral("-style")) {
            std::fprintf(stderr, "routepack-studio: error: unknown option '%s' (see routepack-studio --help)\n",
                         argv[i]);
            return 2;
        } else if (!a.startsWith(QLatin1Char('-'))) {
            library = a;
        }
    }
    const bool no_display = qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
                            !qEnvironmentVariableIsSet("QT_QPA_PLATFORM");
    if (no_display && !headless) {
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
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

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
