// Output folders written whole: a staging folder beside the output, renamed into place. See
// output_folder.h.
#include "core/util/output_folder.h"

#include "core/util/atomic_file.h"
#include "core/util/errors.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <unistd.h>

namespace routepack::util {

namespace fs = std::filesystem;

namespace {

std::string partial_stem(const fs::path& output) {
    return "." + output.filename().string() + ".routepack-partial-";
}

bool pid_alive(long pid) {
    return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

fs::path lexically_absolute(const fs::path& p) {
    std::error_code ec;
    fs::path a = fs::absolute(p, ec);
    if (ec) a = p;
    a = a.lexically_normal();
    if (!a.has_filename()) a = a.parent_path(); // "out/" names the folder "out"
    return a;
}

/// True when `folder` holds nothing but temporary files of its marker (write_file_atomically's
/// "<marker>.<pid>-<n>.tmp", regular files) or nothing at all.
bool only_marker_temporaries(const fs::path& folder) {
    const std::string stem = std::string(kPartialFolderMarker) + ".";
    std::error_code ec;
    for (const auto& de : fs::directory_iterator(folder, ec)) {
        const std::string n = de.path().filename().string();
        if (n.compare(0, stem.size(), stem) != 0 || !n.ends_with(".tmp") ||
            !fs::is_regular_file(fs::symlink_status(de.path(), ec)))
            return false;
    }
    return !ec;
}

} // namespace

void remove_stale_partial_folders(const fs::path& output) {
    const fs::path out = lexically_absolute(output);
    const std::string stem = partial_stem(out);
    std::error_code ec;
    for (const auto& de : fs::directory_iterator(out.parent_path(), ec)) {
        const std::string n = de.path().filename().string();
        if (n.compare(0, stem.size(), stem) != 0 || n.size() == stem.size() || n.size() - stem.size() > 9) continue;
        if (n.find_first_not_of("0123456789", stem.size()) != std::string::npos) continue;
        const long pid = std::atol(n.c_str() + stem.size());
        // Only our own folders (marker inside), only of processes that are gone. An empty one, or
        // one holding only the marker's temporary file, is a run killed between creating its folder
        // and writing the marker: nothing to lose.
        std::error_code e2;
        if (pid > 1 && !pid_alive(pid) && fs::is_directory(fs::symlink_status(de.path(), e2)) &&
            (fs::is_regular_file(fs::symlink_status(de.path() / kPartialFolderMarker, e2)) ||
             only_marker_temporaries(de.path())))
            fs::remove_all(de.path(), e2);
    }
}

OutputFolder::OutputFolder(fs::path output) : output_(lexically_absolute(output)) {
    std::error_code ec;
    // Missing folders above the output are made now and removed again when nothing is committed.
    for (fs::path p = output_.parent_path(); !p.empty() && !fs::exists(fs::symlink_status(p, ec));
         p = p.parent_path()) {
        created_parent_ = p;
        if (p == p.parent_path()) break;
    }
    if (!created_parent_.empty()) {
        fs::create_directories(output_.parent_path(), ec);
        if (ec) {
            fs::remove_all(created_parent_, ec);
            throw InputError(output_.string() + ": cannot create the folder (" + ec.message() + ")");
        }
    }
    remove_stale_partial_folders(output_);
    staging_ = output_.parent_path() / (partial_stem(output_) + std::to_string(::getpid()));
    fs::remove_all(staging_, ec);
    if (!fs::create_directory(staging_, ec)) {
        const std::string why = ec ? ec.message() : std::string("it exists");
        if (!created_parent_.empty()) fs::remove_all(created_parent_, ec);
        throw InputError(staging_.string() + ": cannot create the temporary output folder (" + why + ")");
    }
    try {
        write_file_atomically(staging_ / kPartialFolderMarker,
                              "routepack output in progress, pid " + std::to_string(::getpid()) + "\n");
    } catch (const AtomicWriteError& e) {
        fs::remove_all(staging_, ec);
        if (!created_parent_.empty()) fs::remove_all(created_parent_, ec);
        throw InputError(staging_.string() + ": cannot create the temporary output folder (" + e.what() + ")");
    }
}

OutputFolder::~OutputFolder() {
    if (committed_) return;
    std::error_code ec;
    fs::remove_all(staging_, ec);
    if (!created_parent_.empty()) fs::remove_all(created_parent_, ec); // held nothing but the staging folder
}

void OutputFolder::write(const std::string& name, std::string_view bytes, const char* what) {
    try {
        write_file_atomically(staging_ / name, bytes);
    } catch (const AtomicWriteError& e) {
        throw InputError((output_ / name).string() + ": cannot write " + what + " (" + e.what() + ")");
    }
}

void OutputFolder::commit() {
    std::error_code ec;
    fs::remove(staging_ / kPartialFolderMarker, ec);
    const auto st = fs::symlink_status(output_, ec);
    const bool whole = !fs::exists(st) || (fs::is_directory(st) && fs::is_empty(output_, ec));
    if (whole) {
        if (fs::exists(st)) fs::remove(output_, ec); // an empty folder
        fs::rename(staging_, output_, ec);
        if (ec)
            throw InputError(output_.string() + ": cannot move the finished output into place (" + ec.message() + ")");
        committed_ = true;
        return;
    }
    // Every target is checked before anything moves: a folder (or link, or device) where a
    // written file should go fails the commit with the output as it was.
    if (!fs::is_directory(fs::status(output_, ec))) // a folder, or a link to one
        throw InputError(output_.string() + ": cannot move the finished output into place (not a folder)");
    for (const auto& de : fs::directory_iterator(staging_, ec)) {
        const auto target = fs::symlink_status(output_ / de.path().filename(), ec);
        if (fs::exists(target) && !fs::is_regular_file(target))
            throw InputError((output_ / de.path().filename()).string() +
                             ": cannot move the finished output into place (exists and is not a regular file)");
    }
    for (const auto& de : fs::directory_iterator(staging_, ec)) {
        fs::rename(de.path(), output_ / de.path().filename(), ec);
        if (ec)
            throw InputError(output_.string() + ": cannot move the finished output into place (" + ec.message() + ")");
    }
    fs::remove(staging_, ec);
    committed_ = true;
}

} // namespace routepack::util
