// The studio's first window on a laptop screen: the offscreen platform given one 1366x768 screen (its
// configfile option), whatever QT_QPA_PLATFORM the test command sets. The window opens within the
// screen's available area (maximized, with a normal size that fits), a geometry saved on a larger
// screen is shrunk to it, and every view keeps a usable width there.
#include "tests/gui_testutil.h"
#include "tests/studio_testaccess.h"
#include "views/studio_window.h"
#include "views/widgets/screen_fit.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QScreen>
#include <QSettings>
#include <QStyle>
#include <QStyleOptionTitleBar>
#include <QtTest>

using namespace routepack;
using namespace routepack::views;

class TestStudioScreen : public test::StudioTestBase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { initStudioTest(QStringLiteral("tst_studio_screen"), QStringLiteral("studio-screen")); }
    void cleanupTestCase() { clearStudioSettings(); }

    void fittedSizes() {
        // 1560x960 wanted: whole on 1920x1080, bounded on 1366x768 less a frame of 2 px borders and a
        // 24 px title bar, never below the window's minimum.
        const QSize frame(4, 28);
        QCOMPARE(fitted_window_size(QSize(1560, 960), QRect(0, 0, 1920, 1080), frame, QSize()), QSize(1560, 960));
        QCOMPARE(fitted_window_size(QSize(1560, 960), QRect(0, 0, 1366, 768), frame, QSize()), QSize(1362, 740));
        QCOMPARE(fitted_window_size(QSize(1560, 960), QRect(0, 27, 1366, 741), frame, QSize(1400, 500)),
                 QSize(1400, 713));
        QCOMPARE(fitted_window_size(QSize(800, 600), QRect(0, 0, 1366, 768), frame, QSize()), QSize(800, 600));
    }

    void firstWindowFitsALaptopScreen() {
        const QRect available = QGuiApplication::primaryScreen()->availableGeometry();
        QCOMPARE(available, QRect(0, 0, 1366, 768));
        clearStudioSettings();
        StudioWindow w(options_);
        QVERIFY(w.windowState().testFlag(Qt::WindowMaximized));
        const QSize frame = window_frame_allowance(&w);
        QCOMPARE(w.size(), available.size() - frame);
        // Nothing of the window needs more than the screen: its minimum fits with the frame.
        const QSize least = w.minimumSizeHint();
        QVERIFY2(least.width() <= available.width() - frame.width() &&
                     least.height() <= available.height() - frame.height(),
                 qPrintable(QStringLiteral("%1x%2").arg(least.width()).arg(least.height())));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QRect f = w.frameGeometry();
        QVERIFY2(available.contains(f),
                 qPrintable(QStringLiteral("%1,%2 %3x%4").arg(f.x()).arg(f.y()).arg(f.width()).arg(f.height())));
        shot(&w, QStringLiteral("studio-first-start-1366x768"));
    }

    void savedGeometryLargerThanTheScreenIsShrunk() {
        // A geometry saved by a 1900x1150 window (a larger screen's session) is restored within 1366x768.
        {
            QWidget big;
            big.setGeometry(10, 40, 1900, 1150);
            QSettings s(options_.settingsOrganization, options_.settingsApplication);
            s.setValue(QStringLiteral("window/geometry"), big.saveGeometry());
        }
        StudioWindow w(options_);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QRect available = QGuiApplication::primaryScreen()->availableGeometry();
        QVERIFY2(available.contains(w.frameGeometry()),
                 qPrintable(QStringLiteral("frame %1,%2 %3x%4 client %5,%6 %7x%8")
                                .arg(w.frameGeometry().x())
                                .arg(w.frameGeometry().y())
                                .arg(w.frameGeometry().width())
                                .arg(w.frameGeometry().height())
                                .arg(w.geometry().x())
                                .arg(w.geometry().y())
                                .arg(w.width())
                                .arg(w.height())));
    }
};

int main(int argc, char** argv) {
    // One 1366x768 screen for this process (the offscreen plugin's configuration file).
    const QString config = QDir::temp().filePath(QStringLiteral("routepack-screen-%1.json").arg(getpid()));
    QFile f(config);
    if (!f.open(QIODevice::WriteOnly)) return 1;
    f.write(R"({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": 1366, "height": 768, "logicalDpi": 96,
                 "logicalBaseDpi": 96, "dpr": 1}]})");
    f.close();
    qputenv("QT_QPA_PLATFORM", QByteArray("offscreen:configfile=") + QFile::encodeName(config));
    QApplication app(argc, argv);
    TestStudioScreen t;
    const int rc = QTest::qExec(&t, argc, argv);
    QFile::remove(config);
    return rc;
}

#include "tst_studio_screen.moc"
