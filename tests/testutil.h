#pragma once
// Helpers shared by the test executables.
#include "core/model/trace.h"
#include "core/plan/score/score.h"

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QTest>

#include <filesystem>
#include <string>
#include <vector>

namespace routepack::test {

/// ../shared beside the checkout (compiled in), or $ROUTEPACK_SHARED_DIR.
std::filesystem::path shared_dir();
/// Path under shared/ when it exists. When absent: QSKIP-able message via `skip_reason` if CI is
/// unset; a failure (empty path + reason) when CI is set, because CI always has shared/.
std::filesystem::path shared_path(const std::string& rel, QString* skip_reason);
/// A fresh empty temporary folder for one test (removed by the caller's QTemporaryDir usually).
std::filesystem::path temp_dir(const QString& tag);
/// Writes bytes to a file (creating parent folders).
void write_file(const std::filesystem::path& p, const std::string& bytes);
std::string read_file(const std::filesystem::path& p);

/// One run of the `routepack` CLI binary: exit status (-1 when it crashed), stdout, stderr.
struct CliRun {
    int code = -1;
    QString out, err;
};
/// Runs the built CLI (ROUTEPACK_CLI) with `args` and waits up to 10 minutes.
CliRun run_cli(const QStringList& args);
/// what() of the expected exception type E thrown by f(), or a description of what happened instead.
template <typename E, typename F> std::string error_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<other exception: ") + e.what() + ">";
    }
    return "<no exception>";
}

/// A path as QString.
inline QString qpath(const std::filesystem::path& p) {
    return QString::fromStdString(p.string());
}

/// The cells of a well-formed layout as nested lists ([R*D], cell k = r*D + d, samples in cell order),
/// for tests that compare or rearrange whole cells (then Layout::from_cells builds the result).
/// Sample indices of `t` in numeric-aware id order (natural_less), the order `window --first` takes.
std::vector<std::size_t> natural_id_order(const Trace& t);

inline std::vector<std::vector<int>> cells_of(const Layout& x) {
    std::vector<std::vector<int>> out;
    out.reserve(static_cast<std::size_t>(x.cell_count()));
    for (int k = 0; k < x.cell_count(); ++k)
        out.emplace_back(x.cell(k).begin(), x.cell(k).end());
    return out;
}

} // namespace routepack::test

/// Resolves `rel` under shared/ into `var`, skipping (no CI) or failing (CI set) when absent.
// `var` is a declarator, which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ROUTEPACK_REQUIRE_SHARED(var, rel)                                                                             \
    QString var##_why;                                                                                                 \
    const std::filesystem::path var = routepack::test::shared_path(rel, &var##_why);                                   \
    if (var.empty()) {                                                                                                 \
        if (qEnvironmentVariableIsSet("CI")) QFAIL(qPrintable(var##_why));                                             \
        QSKIP(qPrintable(var##_why));                                                                                  \
    }
// NOLINTEND(bugprone-macro-parentheses)

namespace QTest {
/// Layouts print as "R x D: [cell 0's samples] [cell 1's] ..." in QCOMPARE failures (the raw offsets
/// when the layout is not well formed).
template <> inline char* toString(const routepack::Layout& t) {
    QByteArray s = QByteArray::number(t.rows) + " x " + QByteArray::number(t.dp_slots) + ":";
    if (!t.well_formed()) {
        s += " offsets";
        for (int o : t.offsets)
            s += " " + QByteArray::number(o);
        s += ", samples";
        for (int i : t.samples)
            s += " " + QByteArray::number(i);
        return qstrdup(s.constData());
    }
    for (int k = 0; k < t.cell_count(); ++k) {
        s += " [";
        for (std::size_t j = 0; j < t.cell(k).size(); ++j)
            s += (j ? " " : "") + QByteArray::number(t.cell(k)[j]);
        s += "]";
    }
    return qstrdup(s.constData());
}
/// Scores print as their three components with full precision in QCOMPARE failures.
template <> inline char* toString(const routepack::Score& t) {
    return qstrdup(QByteArray::number(t.max_u, 'g', 17) + " " + QByteArray::number(t.sum_u, 'g', 17) + " " +
                   QByteArray::number(t.max_j, 'g', 17));
}
} // namespace QTest
