#pragma once
// The one way the project replaces a file: readers see the old file or the whole new one, never a
// part, and an interrupted or failed write leaves no temporary behind.
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace routepack::util {

/// Why write_file_atomically failed: the step, the errno it met (0 when none) and the path of the
/// temporary file it had chosen (already removed). what() is "<step>: <strerror>" ("create: Permission
/// denied"), for callers that word their own message around it.
class AtomicWriteError : public std::runtime_error {
public:
    enum class Step { Create, Write, Flush, Rename };
    AtomicWriteError(Step step, int error, std::filesystem::path temp);
    Step step;
    int error;
    std::filesystem::path temp;
};

/// Writes `bytes` to `path` atomically (POSIX): a temporary "<path>.<pid>-<n>.tmp" beside it,
/// created with O_EXCL (unique per process and call, so two writers never share one), written in
/// full (EINTR retried), fsync'ed, closed, and rename(2)d over `path` (mode 0644 before umask). On
/// any failure the temporary is unlinked and AtomicWriteError thrown; `path` is then untouched.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

} // namespace routepack::util
