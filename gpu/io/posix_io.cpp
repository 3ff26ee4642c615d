#include "gpu/io/posix_io.h"

#include "core/util/errors.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

namespace routepack::gpu::io {

Fd& Fd::operator=(Fd&& o) noexcept {
    if (this != &o) {
        reset();
        fd_ = o.release();
    }
    return *this;
}

void Fd::reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

int Fd::release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
}

std::string errno_text(int err) {
    return std::strerror(err);
}

Fd open_read(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(path.string() + ": cannot open: " + errno_text(errno));
    return Fd(fd);
}

Fd create_sized(const std::filesystem::path& path, std::uint64_t size) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) throw InputError(path.string() + ": cannot create: " + errno_text(errno));
    if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
        throw InputError(path.string() + ": cannot size to " + std::to_string(size) + " bytes: " + errno_text(errno));
    return fd;
}

void pread_exact(int fd, void* buf, std::uint64_t len, std::uint64_t off, const std::filesystem::path& path) {
    auto* b = static_cast<char*>(buf);
    while (len > 0) {
        const ssize_t n = ::pread(fd, b, static_cast<std::size_t>(len), static_cast<off_t>(off));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw InputError(path.string() + ": read failed at offset " + std::to_string(off) + ": " +
                             (n == 0 ? std::string("unexpected end of file") : errno_text(errno)));
        b += n;
        off += static_cast<std::uint64_t>(n);
        len -= static_cast<std::uint64_t>(n);
    }
}

void pwrite_exact(int fd, const void* buf, std::uint64_t len, std::uint64_t off, const std::filesystem::path& path) {
    const auto* b = static_cast<const char*>(buf);
    while (len > 0) {
        const ssize_t n = ::pwrite(fd, b, static_cast<std::size_t>(len), static_cast<off_t>(off));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw InputError(path.string() + ": write failed at offset " + std::to_string(off) + ": " +
                             errno_text(n == 0 ? EIO : errno));
        b += n;
        off += static_cast<std::uint64_t>(n);
        len -= static_cast<std::uint64_t>(n);
    }
}

void sync_data(int fd, const std::filesystem::path& path) {
    if (::fdatasync(fd) != 0) throw InputError(path.string() + ": sync failed: " + errno_text(errno));
}

void sync_folder(const std::filesystem::path& dir) noexcept {
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd) ::fsync(fd.get());
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) throw InputError(path.string() + ": cannot write: " + errno_text(errno));
    pwrite_exact(fd.get(), bytes.data(), bytes.size(), 0, path);
    if (::close(fd.release()) != 0) throw InputError(path.string() + ": cannot write: " + errno_text(errno));
}

} // namespace routepack::gpu::io
