#pragma once
// The one POSIX file I/O layer of gpu/: owned descriptors and whole-range reads and writes that retry
// EINTR and short transfers, with errors that name the file. Every gpu/ source that reads or writes
// shard bytes goes through it (replacing whole files atomically is core/util/atomic_file.h's job).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace routepack::gpu::io {

/// An owned file descriptor (-1 = none); closed on destruction. Move-only.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(o.release()) {}
    Fd& operator=(Fd&& o) noexcept;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    /// Closes the descriptor (if any).
    void reset() noexcept;
    /// Gives up ownership; returns the descriptor.
    int release() noexcept;

private:
    int fd_ = -1;
};

/// Opens `path` read-only (O_CLOEXEC). InputError "<path>: cannot open: <strerror>".
Fd open_read(const std::filesystem::path& path);

/// Creates or truncates `path` for writing (mode 0644 before umask) and sizes it to `size` bytes
/// (ftruncate). InputError "<path>: cannot create: <strerror>" or "<path>: cannot size to <size> bytes:
/// <strerror>".
Fd create_sized(const std::filesystem::path& path, std::uint64_t size);

/// Reads exactly `len` bytes at file offset `off` into `buf` (pread; EINTR and short reads retried).
/// InputError "<path>: read failed at offset <o>: unexpected end of file" or "...: <strerror>", where
/// <o> is the offset of the failing read.
void pread_exact(int fd, void* buf, std::uint64_t len, std::uint64_t off, const std::filesystem::path& path);

/// Writes exactly `len` bytes from `buf` at file offset `off` (pwrite; EINTR and short writes retried).
/// InputError "<path>: write failed at offset <o>: <strerror>" (EIO's text for a write of 0 bytes).
void pwrite_exact(int fd, const void* buf, std::uint64_t len, std::uint64_t off, const std::filesystem::path& path);

/// fdatasync(2). InputError "<path>: sync failed: <strerror>".
void sync_data(int fd, const std::filesystem::path& path);

/// Best-effort fsync(2) of a folder, so that the names created in it are durable; never throws.
void sync_folder(const std::filesystem::path& dir) noexcept;

/// Creates or truncates `path` and writes `bytes` in full (not atomic: for files inside a folder that is
/// itself renamed into place). InputError "<path>: cannot write: <strerror>" when it cannot be created or
/// closed, pwrite_exact's error otherwise.
void write_file(const std::filesystem::path& path, std::string_view bytes);

/// strerror(err) as a string.
std::string errno_text(int err);

} // namespace routepack::gpu::io
