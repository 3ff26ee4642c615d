#pragma once
// Helpers for the GUI tests (Qt Widgets): one dark palette for every dark-mode screenshot and check,
// the screenshot folder and writer, the studio test's settings and scratch folder, a synthetic
// library, and the text of an expected error.
#include "core/synth/synth.h"
#include "storage/library.h"
#include "tests/testutil.h"
#include "views/studio_window.h"

#include <QColor>
#include <QCoreApplication>
#include <QDir>
#include <QPalette>
#include <QPixmap>
#include <QSettings>
#include <QStandardPaths>
#include <QString>
#include <QWidget>
#include <QtTest>

#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace routepack::test {

/// A dark palette (window #2d2d30, base #1e1e1e, text #e6e6e6, blue highlight, grey disabled text):
/// what a dark desktop theme hands a Qt application.
inline QPalette dark_palette() {
    QPalette p;
    const QColor window(0x2d, 0x2d, 0x30), base(0x1e, 0x1e, 0x1e), text(0xe6, 0xe6, 0xe6);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x2a, 0x2a, 0x2c));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x3a, 0x3a, 0x3d));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Mid, QColor(0x6a, 0x6a, 0x6a));
    p.setColor(QPalette::Highlight, QColor(0x2f, 0x65, 0xca));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::PlaceholderText, QColor(0x99, 0x99, 0x99));
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    for (const QPalette::ColorRole r : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, r, QColor(0x80, 0x80, 0x80));
    return p;
}

/// Where a GUI test writes its screenshots: $ROUTEPACK_SCREENSHOT_DIR when set, else `fallback`.
/// The folder is created and named in the test log.
inline QString screenshot_dir(const QString& fallback) {
    QString dir = qEnvironmentVariable("ROUTEPACK_SCREENSHOT_DIR");
    if (dir.isEmpty()) dir = fallback;
    QDir().mkpath(dir);
    qInfo("screenshots in %s", qPrintable(dir));
    return dir;
}

/// Saves what `w` paints (QWidget::grab) as dir/name.png; false when there is nothing to save or
/// the file could not be written.
inline bool save_screenshot(QWidget* w, const QString& dir, const QString& name) {
    if (!w) return false;
    const QPixmap pm = w->grab();
    const QString file = dir + QLatin1Char('/') + name + QStringLiteral(".png");
    if (pm.isNull() || !pm.save(file)) return false;
    qInfo("screenshot %s", qPrintable(file));
    return true;
}

/// What a studio GUI test starts from: QStandardPaths in test mode (settings and app data under
/// ~/.qttest), the studio's settings under organization "RoutePackTest" and application
/// "<binary>-<pid>" (so parallel test processes never share them), a fresh scratch folder and the
/// screenshot folder (screenshot_dir of <scratch>/screenshots).
struct StudioTestEnv {
    QString organization, application;
    std::filesystem::path tmp;
    QString shots;
};

inline StudioTestEnv studio_test_env(const QString& binary, const QString& tag) {
    QStandardPaths::setTestModeEnabled(true);
    StudioTestEnv env;
    env.organization = QStringLiteral("RoutePackTest");
    env.application = QStringLiteral("%1-%2").arg(binary).arg(QCoreApplication::applicationPid());
    env.tmp = temp_dir(tag);
    env.shots = screenshot_dir(qpath(env.tmp / "screenshots"));
    return env;
}

/// Base of the studio GUI test classes: the scratch folder `tmp_`, the screenshot folder `shots_`
/// and the studio options `options_` whose settings are isolated per test process.
class StudioTestBase : public QObject {
protected:
    std::filesystem::path tmp_;
    QString shots_;
    views::StudioOptions options_;

    /// Fills tmp_, shots_ and options_' settings names from studio_test_env(binary, tag); called
    /// from initTestCase.
    void initStudioTest(const QString& binary, const QString& tag) {
        const StudioTestEnv env = studio_test_env(binary, tag);
        options_.settingsOrganization = env.organization;
        options_.settingsApplication = env.application;
        tmp_ = env.tmp;
        shots_ = env.shots;
    }
    /// Clears the isolated settings; called from cleanupTestCase.
    void clearStudioSettings() const { QSettings(options_.settingsOrganization, options_.settingsApplication).clear(); }
    /// Saves a screenshot of `w` as shots_/name.png (a test failure when it cannot).
    void shot(QWidget* w, const QString& name) { QVERIFY2(save_screenshot(w, shots_, name), qPrintable(name)); }
};

/// A library at dir/lib.routepack holding trace "syn" (synthetic model, vLLM files written to
/// dir/syn; `groups` x `group_size` samples) and its window "all" of every sample. Returns the
/// library's path.
inline std::filesystem::path synth_library(const std::filesystem::path& dir, int groups, int group_size) {
    SynthConfig c;
    c.groups = groups;
    c.group_size = group_size;
    write_synth(c, TraceFormat::VLLM, dir / "syn");
    auto lib = storage::Library::open(dir / "lib.routepack");
    ImportOptions o;
    o.model = synth_model(c);
    lib->import_trace("syn", {dir / "syn"}, o);
    std::vector<std::string> ids;
    for (const auto& s : lib->samples("syn"))
        ids.push_back(s.id);
    lib->create_window("syn", "all", ids, "all samples");
    return dir / "lib.routepack";
}

/// what() of the std::exception `f` throws, "" when it throws none.
inline QString error_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace routepack::test
