// Atomic file replacement through a unique temporary, fsync and rename(2). See atomic_file.h.
#include "core/util/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace routepack::util {

namespace {

const char* step_name(AtomicWriteError::Step s) {
    switch (s) {
    case AtomicWriteError::Step::Create:
        return "create";
    case AtomicWriteError::Step::Write:
        return "write";
    case AtomicWriteError::Step::Flush:
        return "flush";
    case AtomicWriteError::Step::Rename:
        return "rename";
    }
    return "write";
}

std::atomic<unsigned long> g_counter{0};

} // namespace

AtomicWriteError::AtomicWriteError(Step s, int e, std::filesystem::path t)
    : std::runtime_error(std::string(step_name(s)) + ": " + std::strerror(e)), step(s), error(e), temp(std::move(t)) {}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
    std::filesystem::path tmp = path;
    tmp += "." + std::to_string(::getpid()) + "-" + std::to_string(g_counter.fetch_add(1)) + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) throw AtomicWriteError(AtomicWriteError::Step::Create, errno, tmp);
    auto fail = [&](AtomicWriteError::Step step, int err, bool open) {
        if (open) ::close(fd);
        ::unlink(tmp.c_str());
        throw AtomicWriteError(step, err, tmp);
    };
    std::size_t done = 0;
    while (done < bytes.size()) {
        const auto w = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            fail(AtomicWriteError::Step::Write, errno, true);
        }
        done += static_cast<std::size_t>(w);
    }
    if (::fsync(fd) != 0) fail(AtomicWriteError::Step::Flush, errno, true);
    if (::close(fd) != 0) fail(AtomicWriteError::Step::Flush, errno, false);
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail(AtomicWriteError::Step::Rename, errno, false);
}

} // namespace routepack::util
