#pragma once
// The one way the project writes an output folder of several files: readers see the folder as it
// was or with every new file, never a part; an interrupted or failed run leaves nothing behind,
// and one killed outright leaves a hidden partial folder that the next run of the same output
// removes.
#include <filesystem>
#include <string>
#include <string_view>

namespace routepack::util {

/// Name of the marker file inside a partial folder: only folders holding it (or nothing, or only
/// the marker's temporary file of a process killed while writing it) are ever removed as stale.
inline constexpr const char* kPartialFolderMarker = ".routepack-partial";

/// Removes the partial folders ".<name>.routepack-partial-<pid>" beside `output` whose process is
/// gone and which hold the marker (or nothing, or only the marker's temporary files
/// "<marker>.<pid>-<n>.tmp"). Errors are ignored: a folder that cannot be removed
/// stays.
void remove_stale_partial_folders(const std::filesystem::path& output);

/// A staging folder for `output`: files are written into staging() and appear in `output` only at
/// commit(). Construction removes stale partial folders of dead processes (remove_stale_partial_folders)
/// and creates ".<name>.routepack-partial-<pid>" beside `output` with the marker inside (folders
/// missing above `output` are created, and removed again unless committed); InputError
/// "<staging>: cannot create the temporary output folder (<why>)". The destructor removes the
/// staging folder unless committed (a failure, a signal that unwinds, an exception).
class OutputFolder {
public:
    explicit OutputFolder(std::filesystem::path output);
    ~OutputFolder();
    OutputFolder(const OutputFolder&) = delete;
    OutputFolder& operator=(const OutputFolder&) = delete;

    const std::filesystem::path& staging() const { return staging_; }
    const std::filesystem::path& output() const { return output_; }
    /// Writes one file of the output (`name` a plain file name) into the staging folder, whole;
    /// InputError "<output>/<name>: cannot write <what> (<why>)".
    void write(const std::string& name, std::string_view bytes, const char* what);
    /// Moves the written files into place. When `output` is absent or an empty folder, the staging
    /// folder is renamed to it (one rename: the folder appears whole). When it is a folder holding
    /// other files, each written file is renamed over its namesake there (each file whole; files not
    /// written are kept). InputError "<output>: cannot move the finished output into place (<why>)".
    void commit();

private:
    std::filesystem::path output_, staging_;
    std::filesystem::path created_parent_; ///< the topmost folder above output_ this object created
    bool committed_ = false;
};

} // namespace routepack::util
