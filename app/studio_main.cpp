// The studio `routepack-studio`. Everything lives in routepack_views (views/studio_app.h):
// this file only hands over the command line, after refusing an output folder that cannot be one.
#include "views/studio_app.h"

#include "core/util/text.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

/// The --headless-out value (the last one given), or "" when absent.
std::string headless_out(int argc, char** argv) {
    std::string out;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--headless-out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (std::strncmp(argv[i], "--headless-out=", 15) == 0)
            out = argv[i] + 15;
    }
    return out;
}

/// True when the command line asks for a saved run (--db, --run, --trace or --window), not the demo.
bool renders_saved_run(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        for (const char* flag : {"--db", "--run", "--trace", "--window"})
            if (std::strcmp(argv[i], flag) == 0 ||
                (std::strncmp(argv[i], flag, std::strlen(flag)) == 0 && argv[i][std::strlen(flag)] == '='))
                return true;
    return false;
}

/// "" when `out` can be the headless output folder (a folder, or a path whose nearest existing
/// ancestor is a folder); else the error line's text: "<out>: is a file, not a folder (--headless-out
/// names the folder to write <what> into)" (`what`: "the demo" or "the saved run") or "<out>: cannot
/// be created (<ancestor> is not a folder)". Paths as echoed: escaped, never cut.
std::string output_folder_problem(const std::string& out, const char* what) {
    namespace fs = std::filesystem;
    const std::string shown = routepack::util::printable(out, out.size());
    std::error_code ec;
    const fs::file_status st = fs::status(out, ec);
    if (fs::exists(st)) {
        if (fs::is_directory(st)) return {};
        return shown + ": " + (fs::is_regular_file(st) ? "is a file" : "is not a folder") +
               ", not a folder (--headless-out names the folder to write " + what + " into)";
    }
    for (fs::path p = fs::path(out).lexically_normal().parent_path(); !p.empty(); p = p.parent_path()) {
        const fs::file_status a = fs::status(p, ec);
        if (fs::exists(a)) {
            if (fs::is_directory(a)) return {};
            return shown + ": cannot be created (" + routepack::util::printable(p.string(), p.string().size()) +
                   " is not a folder)";
        }
        if (p == p.parent_path()) break;
    }
    return {};
}

} // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--headless-out=") == 0 ||
            (std::strcmp(argv[i], "--headless-out") == 0 && i + 1 < argc && argv[i + 1][0] == '\0')) {
            std::fprintf(stderr, "routepack-studio: error: --headless-out must name a folder (got '')\n");
            return 1;
        }
    if (const std::string out = headless_out(argc, argv); !out.empty()) {
        const char* what = renders_saved_run(argc, argv) ? "the saved run" : "the demo";
        if (const std::string bad = output_folder_problem(out, what); !bad.empty()) {
            std::fprintf(stderr, "routepack-studio: error: %s\n", bad.c_str());
            return 1;
        }
    }
    try {
        return routepack::views::runStudio(argc, argv);
    } catch (const std::filesystem::filesystem_error& e) {
        // Last resort: a file system failure as one line naming its path, never raw.
        const std::string p = e.path1().empty() ? std::string() : e.path1().string();
        std::fprintf(stderr, "routepack-studio: error: %s%s%s\n", routepack::util::printable(p, p.size()).c_str(),
                     p.empty() ? "" : ": ", e.code().message().c_str());
        return 1;
    }
}
