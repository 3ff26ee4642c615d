#include "core/util/input_file.h"

#include "core/util/errors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace routepack {

namespace {

std::string a_what(const InputFileKind& kind) {
    return std::string(kind.article) + " " + kind.what;
}

[[noreturn]] void refuse_type(const std::filesystem::path& path, const InputFileKind& kind, mode_t mode) {
    const char* is = S_ISDIR(mode)                    ? "is a folder"
                     : S_ISFIFO(mode)                 ? "is a pipe (FIFO)"
                     : S_ISCHR(mode) || S_ISBLK(mode) ? "is a device"
                     : S_ISSOCK(mode)                 ? "is a socket"
                                                      : "is not a regular file";
    throw InputError(path.string() + ": " + is + ", not " + a_what(kind));
}

void check_size(const std::filesystem::path& path, const InputFileKind& kind, std::uint64_t size) {
    if (size > kind.max_bytes)
        throw InputError(path.string() + ": too large for " + a_what(kind) + ": " + std::to_string(size) +
                         " bytes, the limit is " + std::to_string(kind.max_bytes) + " bytes");
}

[[noreturn]] void refuse_open(const std::filesystem::path& path, const InputFileKind& kind, int err) {
    if (err == ENOENT) throw MissingFileError(path.string() + ": no such " + kind.what, path);
    throw InputError(path.string() + ": cannot open " + kind.what + ": " + std::strerror(err));
}

} // namespace

std::uint64_t check_input_file(const std::filesystem::path& path, const InputFileKind& kind) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) refuse_open(path, kind, errno);
    if (!S_ISREG(st.st_mode)) refuse_type(path, kind, st.st_mode);
    return static_cast<std::uint64_t>(st.st_size);
}

std::string read_input_file(const std::filesystem::path& path, const InputFileKind& kind) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) refuse_open(path, kind, errno);
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) refuse_open(path, kind, errno);
    if (!S_ISREG(st.st_mode)) refuse_type(path, kind, st.st_mode);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    check_size(path, kind, size);
    std::string bytes(static_cast<std::size_t>(size), '\0');
    std::size_t got = 0;
    for (;;) {
        if (got == bytes.size()) {
            // At the expected end: one more byte means the file grew; read on, within the cap. The
            // probe is read aside, so a file that did not grow is never copied into a larger buffer
            // (which would briefly hold it twice).
            char probe;
            const ssize_t n = ::read(fd, &probe, 1);
            if (n == 0) break;
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw InputError(path.string() + ": read error: " + std::strerror(errno));
            check_size(path, kind, bytes.size() + 1);
            bytes.push_back(probe);
            ++got;
            bytes.resize(std::min<std::uint64_t>(kind.max_bytes, bytes.size() + (std::uint64_t(1) << 16)));
            if (got == bytes.size()) continue;
        }
        const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw InputError(path.string() + ": read error: " + std::strerror(errno));
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    bytes.resize(got);
    return bytes;
}

} // namespace routepack
