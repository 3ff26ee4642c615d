#include "tests/testutil.h"

#include <QDir>
#include <QProcess>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>

namespace routepack::test {

std::vector<std::size_t> natural_id_order(const Trace& t) {
    std::vector<std::size_t> order(t.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return natural_less(t.samples[a].id, t.samples[b].id); });
    return order;
}

std::filesystem::path shared_dir() {
    const QByteArray env = qgetenv("ROUTEPACK_SHARED_DIR");
    if (!env.isEmpty()) return std::filesystem::path(env.toStdString());
    return std::filesystem::path(ROUTEPACK_SHARED_DIR);
}

std::filesystem::path shared_path(const std::string& rel, QString* skip_reason) {
    auto p = shared_dir() / rel;
    if (std::filesystem::exists(p)) return p;
    if (skip_reason)
        *skip_reason = QStringLiteral("shared data %1 is absent (expected ../shared beside the checkout)")
                           .arg(QString::fromStdString(p.string()));
    return {};
}

std::filesystem::path temp_dir(const QString& tag) {
    static int counter = 0;
    auto base = std::filesystem::temp_directory_path() / ("routepack-test-" + std::to_string(::getpid()) + "-" +
                                                          tag.toStdString() + "-" + std::to_string(counter++));
    std::filesystem::remove_all(base);
    std::filesystem::create_directories(base);
    return base;
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

CliRun run_cli(const QStringList& args) {
    QProcess p;
    p.start(QStringLiteral(ROUTEPACK_CLI), args);
    p.waitForFinished(600000);
    CliRun r;
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

} // namespace routepack::test
