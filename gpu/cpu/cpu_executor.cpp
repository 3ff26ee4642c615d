// CPU executor of the checkpoint rewriter (gpu/cpu/cpu_executor.h).
#include "gpu/cpu/cpu_executor.h"

#include "core/util/errors.h"
#include "gpu/io/posix_io.h"
#include "gpu/safetensors/safetensors.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>
#include <vector>

namespace routepack::gpu {
namespace fs = std::filesystem;
using io::Fd;
using io::open_read;

namespace {

constexpr std::uint64_t kPiece = 8ull << 20;   ///< largest single copy (bytes)
constexpr std::uint64_t kBatch = 256ull << 20; ///< bytes between progress reports / cancel checks

/// A piece of a segment, at most kPiece bytes.
struct Piece {
    std::uint64_t dst, src, len;
    int src_file;
};

std::vector<Piece> split_pieces(const OutputFile& f) {
    std::vector<Piece> out;
    for (const CopySegment& s : f.segments)
        for (std::uint64_t o = 0; o < s.len; o += kPiece)
            out.push_back({s.dst + o, s.src + o, std::min(kPiece, s.len - o), s.src_file});
    return out;
}

/// Runs `fn(piece)` over the pieces in batches of about kBatch bytes, in parallel within a batch;
/// reports progress and checks `cancel` between batches.
template <class Fn>
void for_pieces(const std::vector<Piece>& pieces, int workers, const std::string& stage, std::uint64_t& done,
                std::uint64_t total, const RewriteProgressFn& progress, const std::atomic<bool>* cancel, Fn&& fn) {
    tbb::task_arena arena(workers > 0 ? workers : tbb::task_arena::automatic);
    std::size_t i = 0;
    while (i < pieces.size()) {
        if (cancel && cancel->load()) throw Cancelled();
        std::size_t j = i;
        std::uint64_t bytes = 0;
        while (j < pieces.size() && (j == i || bytes + pieces[j].len <= kBatch))
            bytes += pieces[j++].len;
        arena.execute([&] {
            tbb::parallel_for(tbb::blocked_range<std::size_t>(i, j, 1), [&](const tbb::blocked_range<std::size_t>& r) {
                for (std::size_t k = r.begin(); k != r.end(); ++k) {
                    if (cancel && cancel->load(std::memory_order_relaxed)) return;
                    fn(pieces[k]);
                }
            });
        });
        if (cancel && cancel->load()) throw Cancelled();
        done += bytes;
        if (progress) progress(stage, done, total);
        i = j;
    }
}

std::atomic<bool> g_copy_range_ok{true};

/// Copies one piece: copy_file_range (in-kernel) when the file systems allow it, else pread + pwrite.
void copy_piece(int in, int out, const Piece& p, const fs::path& in_path, const fs::path& out_path) {
    std::uint64_t done = 0;
    if (g_copy_range_ok.load(std::memory_order_relaxed)) {
        while (done < p.len) {
            off_t ioff = static_cast<off_t>(p.src + done), ooff = static_cast<off_t>(p.dst + done);
            const ssize_t n = ::copy_file_range(in, &ioff, out, &ooff, p.len - done, 0);
            if (n > 0) {
                done += static_cast<std::uint64_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 &&
                (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF)) {
                g_copy_range_ok.store(false);
                break;
            }
            if (n == 0)
                throw InputError(in_path.string() + ": unexpected end of file at offset " +
                                 std::to_string(p.src + done));
            throw InputError(out_path.string() + ": write failed: " + std::strerror(errno));
        }
    }
    if (done == p.len) return;
    thread_local std::vector<char> buf;
    buf.resize(kPiece);
    while (done < p.len) {
        const std::uint64_t n = std::min<std::uint64_t>(kPiece, p.len - done);
        io::pread_exact(in, buf.data(), n, p.src + done, in_path);
        io::pwrite_exact(out, buf.data(), n, p.dst + done, out_path);
        done += n;
    }
}

} // namespace

std::uint64_t execute_rewrite_cpu(const RewritePlan& plan, const fs::path& dir, int workers,
                                  const RewriteProgressFn& progress, const std::atomic<bool>* cancel) {
    std::vector<Fd> src;
    for (const fs::path& p : plan.sources)
        src.push_back(open_read(p));
    std::uint64_t total = 0, done = 0, written = 0;
    for (const OutputFile& f : plan.outputs)
        total += f.size;
    long exit_after = -1;
    if (const char* e = std::getenv("ROUTEPACK_TEST_REWRITE_EXIT_AFTER_FILES")) exit_after = std::atol(e);
    long files_done = 0, raise_after = -1;
    if (const char* e = std::getenv("ROUTEPACK_TEST_REWRITE_SIGINT_AFTER_FILES")) raise_after = std::atol(e);
    for (const OutputFile& f : plan.outputs) {
        const fs::path out_path = dir / f.name;
        const Fd out = io::create_sized(out_path, f.size);
        const std::vector<Piece> pieces = split_pieces(f);
        for_pieces(pieces, workers, "write", done, total, progress, cancel, [&](const Piece& p) {
            copy_piece(src[static_cast<std::size_t>(p.src_file)].get(), out.get(), p,
                       plan.sources[static_cast<std::size_t>(p.src_file)], out_path);
        });
        io::sync_data(out.get(), out_path);
        written += f.size;
        ++files_done;
        if (exit_after >= 0 && files_done >= exit_after) ::_exit(3);        // test hook: a killed rewrite
        if (raise_after >= 0 && files_done == raise_after) ::raise(SIGINT); // test hook: Ctrl-C mid-rewrite
    }
    return written;
}

std::string verify_rewrite(const RewritePlan& plan, const fs::path& dir, const RewriteProgressFn& progress,
                           const std::atomic<bool>* cancel) {
    std::vector<Fd> src;
    for (const fs::path& p : plan.sources)
        src.push_back(open_read(p));
    std::uint64_t total = 0, done = 0;
    for (const OutputFile& f : plan.outputs)
        total += f.size;
    for (const OutputFile& f : plan.outputs) {
        const fs::path out_path = dir / f.name;
        std::error_code ec;
        const auto size = fs::file_size(out_path, ec);
        if (ec) return out_path.string() + ": missing";
        if (size != f.size)
            return out_path.string() + ": " + std::to_string(size) + " bytes, expected " + std::to_string(f.size);
        Fd out = open_read(out_path);
        std::atomic<std::uint64_t> first_bad{UINT64_MAX};
        const std::vector<Piece> pieces = split_pieces(f);
        for_pieces(pieces, 0, "verify", done, total, progress, cancel, [&](const Piece& p) {
            thread_local std::vector<char> a, b;
            a.resize(p.len);
            b.resize(p.len);
            io::pread_exact(out.get(), a.data(), p.len, p.dst, out_path);
            io::pread_exact(src[static_cast<std::size_t>(p.src_file)].get(), b.data(), p.len, p.src,
                            plan.sources[static_cast<std::size_t>(p.src_file)]);
            if (std::memcmp(a.data(), b.data(), p.len) != 0) {
                std::uint64_t k = 0;
                while (a[k] == b[k])
                    ++k;
                std::uint64_t cur = first_bad.load();
                while (p.dst + k < cur && !first_bad.compare_exchange_weak(cur, p.dst + k)) {
                }
            }
        });
        if (const std::uint64_t bad = first_bad.load(); bad != UINT64_MAX) {
            const SafetensorsFile sf = SafetensorsFile::open(out_path);
            std::string tensor = "header";
            for (const TensorInfo& t : sf.tensors())
                if (bad >= 8 + sf.header_size() + t.data_begin && bad < 8 + sf.header_size() + t.data_end)
                    tensor = t.name;
            return out_path.string() + ": byte " + std::to_string(bad) + " (" + tensor + ") differs from its source";
        }
    }
    return {};
}

} // namespace routepack::gpu
