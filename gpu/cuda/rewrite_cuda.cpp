// CUDA executor of the checkpoint rewriter: chunking, packing, double-buffered pipeline (see rewrite_cuda.h).
// The device side is gpu/cuda/cuda_gather.cu behind the C++17 interface gpu/cuda/cuda_gather.h.
#include "gpu/cuda/rewrite_cuda.h"

#include "core/util/errors.h"

#ifdef ROUTEPACK_HAVE_CUDA
#include "gpu/cuda/cuda_gather.h"
#include "gpu/io/posix_io.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <numeric>
#include <utility>
#include <vector>
#endif

namespace routepack::gpu {

#ifdef ROUTEPACK_HAVE_CUDA
namespace {

namespace fs = std::filesystem;

/// A piece of at least this many bytes whose source/destination alignment (mod 16) differs from its read
/// run's starts a read of its own, so that the kernel can move it with 16-byte vectors.
constexpr std::uint64_t kAlignSplit = 4096;
/// Largest single pread / pwrite of the parallel host I/O (bytes).
constexpr std::uint64_t kIoBytes = 4ull << 20;

/// A contiguous copy inside one chunk: chunk output bytes [out, out+len) come from source `src_file` at `src`.
struct Piece {
    std::uint64_t out = 0;
    std::uint64_t src = 0;
    std::uint64_t len = 0;
    int src_file = 0;
};

/// Output bytes [offset, offset+size) of output file `file`.
struct Chunk {
    std::size_t file = 0;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    bool last_of_file = false;
    std::vector<Piece> pieces; ///< in output order, covering [0, size)
};

/// What the writer task needs of a chunk (a copy: the chunk's slot is refilled meanwhile).
struct WriteJob {
    std::size_t file = 0;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    bool last_of_file = false;
    std::byte* data = nullptr; ///< the slot's pinned output buffer
};

/// Walks the outputs' segments in order and cuts them into chunks of at most `chunk_bytes` output bytes and
/// `max_pieces` pieces; adjacent segments contiguous in one source merge into one piece.
class ChunkCursor {
public:
    ChunkCursor(const RewritePlan& plan, std::uint64_t chunk_bytes, std::size_t max_pieces)
        : plan_(plan), chunk_bytes_(chunk_bytes), max_pieces_(max_pieces) {}

    /// Fills `c` with the next chunk; false when every output byte has been handed out.
    bool next(Chunk& c) {
        while (file_ < plan_.outputs.size() && (plan_.outputs[file_].size == 0 || pos_ >= plan_.outputs[file_].size)) {
            ++file_;
            seg_ = 0;
            used_ = 0;
            pos_ = 0;
        }
        if (file_ >= plan_.outputs.size()) return false;
        const OutputFile& f = plan_.outputs[file_];
        c.file = file_;
        c.offset = pos_;
        c.size = 0;
        c.pieces.clear();
        while (seg_ < f.segments.size() && c.size < chunk_bytes_) {
            const CopySegment& s = f.segments[seg_];
            const std::uint64_t take = std::min(s.len - used_, chunk_bytes_ - c.size);
            if (take > 0) {
                const Piece p{c.size, s.src + used_, take, s.src_file};
                Piece* last = c.pieces.empty() ? nullptr : &c.pieces.back();
                if (last && last->src_file == p.src_file && last->src + last->len == p.src &&
                    last->out + last->len == p.out) {
                    last->len += take;
                } else {
                    if (c.pieces.size() == max_pieces_) break;
                    c.pieces.push_back(p);
                }
                c.size += take;
                used_ += take;
            }
            if (used_ == s.len) {
                ++seg_;
                used_ = 0;
            }
        }
        pos_ += c.size;
        c.last_of_file = pos_ == f.size;
        return true;
    }

private:
    const RewritePlan& plan_;
    std::uint64_t chunk_bytes_;
    std::size_t max_pieces_;
    std::size_t file_ = 0, seg_ = 0;
    std::uint64_t used_ = 0; ///< bytes of segment seg_ already handed out
    std::uint64_t pos_ = 0;  ///< output bytes of file_ already handed out
};

/// Refuses a plan whose segments do not cover each output [0, size) in order or read beyond a source.
void check_plan(const RewritePlan& plan) {
    std::vector<std::uint64_t> sizes;
    for (const fs::path& p : plan.sources) {
        std::error_code ec;
        const auto n = fs::file_size(p, ec);
        if (ec) throw InputError(p.string() + ": cannot read the source: " + ec.message());
        sizes.push_back(n);
    }
    for (const OutputFile& f : plan.outputs) {
        std::uint64_t at = 0;
        for (const CopySegment& s : f.segments) {
            if (s.dst != at)
                throw InputError("rewrite plan: " + f.name + ": segment at byte " + std::to_string(s.dst) +
                                 ", expected " + std::to_string(at) + " (segments must cover [0, size) in order)");
            if (s.src_file < 0 || static_cast<std::size_t>(s.src_file) >= sizes.size())
                throw InputError("rewrite plan: " + f.name + ": segment at byte " + std::to_string(s.dst) +
                                 " names source file " + std::to_string(s.src_file) + " of " +
                                 std::to_string(sizes.size()));
            const std::uint64_t n = sizes[static_cast<std::size_t>(s.src_file)];
            if (s.src > n || s.len > n - s.src)
                throw InputError("rewrite plan: " + f.name + ": segment at byte " + std::to_string(s.dst) + " reads " +
                                 plan.sources[static_cast<std::size_t>(s.src_file)].string() + " bytes [" +
                                 std::to_string(s.src) + ", " + std::to_string(s.src + s.len) + ") beyond its " +
                                 std::to_string(n) + " bytes");
            at += s.len;
        }
        if (at != f.size)
            throw InputError("rewrite plan: " + f.name + ": segments cover " + std::to_string(at) + " of " +
                             std::to_string(f.size) + " bytes");
    }
}

/// One pread or pwrite of the parallel host I/O.
struct IoJob {
    int fd = -1;
    std::size_t path = 0; ///< index into the caller's path list (messages)
    std::uint64_t file_off = 0;
    std::byte* buf = nullptr; ///< in the pinned staging buffer
    std::uint64_t len = 0;
};

/// Splits [file_off, file_off+len) <-> buf into jobs of at most kIoBytes.
void add_io_jobs(std::vector<IoJob>& jobs, int fd, std::size_t path, std::uint64_t file_off, std::byte* buf,
                 std::uint64_t len) {
    for (std::uint64_t o = 0; o < len; o += kIoBytes)
        jobs.push_back(IoJob{fd, path, file_off + o, buf + o, std::min(kIoBytes, len - o)});
}

/// Runs the jobs (reads when `write` is false), in parallel when there is more than one.
void run_io(const std::vector<IoJob>& jobs, bool write, const std::vector<fs::path>& paths) {
    auto one = [&](const IoJob& j) {
        if (write)
            io::pwrite_exact(j.fd, j.buf, j.len, j.file_off, paths[j.path]);
        else
            io::pread_exact(j.fd, j.buf, j.len, j.file_off, paths[j.path]);
    };
    if (jobs.size() == 1) {
        one(jobs[0]);
        return;
    }
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, jobs.size()), [&](const tbb::blocked_range<std::size_t>& r) {
        for (std::size_t i = r.begin(); i != r.end(); ++i)
            one(jobs[i]);
    });
}

/// The staged executor's state for one rewrite.
class StagedExecutor {
public:
    StagedExecutor(const RewritePlan& plan, const fs::path& dir, const StagedRewriteOptions& opt)
        : plan_(plan), dir_(dir) {
        std::uint64_t largest = 0;
        std::size_t most_segments = 1;
        for (const OutputFile& f : plan.outputs) {
            largest = std::max(largest, f.size);
            most_segments = std::max(most_segments, f.segments.size());
            total_ += f.size;
        }
        chunk_bytes_ =
            std::max<std::uint64_t>(16, std::min<std::uint64_t>(std::max<std::uint64_t>(opt.chunk_bytes, 16), largest));
        max_pieces_ = std::max<std::size_t>(1, std::min(opt.max_pieces, most_segments));
        config_.output_bytes = static_cast<std::size_t>(chunk_bytes_);
        config_.input_bytes = static_cast<std::size_t>(chunk_bytes_ + 16 * static_cast<std::uint64_t>(max_pieces_));
        config_.max_entries = static_cast<std::size_t>(chunk_bytes_ / cuda::kTileBytes) + max_pieces_ + 1;
        config_.host_emulation = opt.host_emulation;
        if (const char* e = std::getenv("ROUTEPACK_TEST_REWRITE_EXIT_AFTER_FILES")) exit_after_ = std::atol(e);
    }

    std::uint64_t run(const RewriteProgressFn& progress, const std::atomic<bool>* cancel, std::string* device) {
        check_plan(plan_);
        for (const fs::path& p : plan_.sources) {
            sources_.push_back(io::open_read(p));
            ::posix_fadvise(sources_.back().get(), 0, 0, POSIX_FADV_SEQUENTIAL);
        }
        out_paths_.clear();
        for (const OutputFile& f : plan_.outputs)
            out_paths_.push_back(dir_ / f.name);
        // Empty outputs have no chunk: create them now.
        for (std::size_t i = 0; i < plan_.outputs.size(); ++i)
            if (plan_.outputs[i].size == 0) {
                open_output(i);
                finish_output(i);
            }

        cuda::Stager stager(config_);
        if (device) *device = stager.device();
        ChunkCursor cursor(plan_, chunk_bytes_, max_pieces_);
        Chunk chunks[cuda::Stager::kSlots];
        // Three stages overlap: the host reads chunk k (this thread), the device works on chunk k-1, and
        // a writer task writes chunk k-2 to its file. Slot k % 2 holds chunk k; its input buffer is free
        // once the device finished chunk k-2 (waited for in the previous iteration), its output buffer once
        // chunk k-2 is written (joined before chunk k is submitted). One writer at a time, chunks in order.
        // Declared after `stager`: a running writer finishes (the future's destructor waits) before the
        // buffers it reads are freed.
        std::future<void> writer;
        int writing = -1; // slot whose output the writer task is writing
        int in_gpu = -1;  // slot submitted to the device and not yet waited for
        std::uint64_t done = 0, writing_bytes = 0;
        auto join_writer = [&] {
            if (writing < 0) return;
            writing = -1;
            writer.get(); // rethrows the writer's error
            done += writing_bytes;
            if (progress) progress("write", done, total_);
        };
        for (std::uint64_t k = 0;; ++k) {
            if (cancel && cancel->load()) throw Cancelled();
            const int slot = static_cast<int>(k % cuda::Stager::kSlots);
            const bool more = cursor.next(chunks[slot]);
            if (more) {
                const auto [in_bytes, entries] = pack(chunks[slot], stager, slot);
                if (writing == slot) join_writer();
                stager.submit(slot, in_bytes, entries, static_cast<std::size_t>(chunks[slot].size));
            }
            if (in_gpu >= 0) {
                stager.wait(in_gpu);
                join_writer();
                const Chunk& c = chunks[in_gpu];
                const WriteJob job{c.file, c.offset, c.size, c.last_of_file, stager.output(in_gpu)};
                writing = in_gpu;
                writing_bytes = c.size;
                writer = std::async(std::launch::async, [this, job] { write_chunk(job); });
            }
            if (!more) break;
            in_gpu = slot;
        }
        join_writer();
        return total_;
    }

private:
    /// Reads the chunk's source bytes into the slot's input buffer (runs in source order) and fills its
    /// gather table. Returns (input bytes used, table entries).
    std::pair<std::size_t, std::size_t> pack(const Chunk& c, cuda::Stager& stager, int slot) {
        order_.resize(c.pieces.size());
        std::iota(order_.begin(), order_.end(), std::size_t{0});
        std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
            const Piece& x = c.pieces[a];
            const Piece& y = c.pieces[b];
            return x.src_file != y.src_file ? x.src_file < y.src_file : x.src != y.src ? x.src < y.src : x.out < y.out;
        });
        struct Run {
            int file;
            std::uint64_t src, end, base; // source bytes [src, end) land at input buffer offset base
        };
        reads_.clear();
        table_.clear();
        std::uint64_t in_pos = 0;
        std::vector<Run> runs;
        for (const std::size_t i : order_) {
            const Piece& p = c.pieces[i];
            std::uint64_t in_off = 0;
            bool extend = !runs.empty() && runs.back().file == p.src_file && p.src <= runs.back().end;
            if (extend) {
                in_off = runs.back().base + (p.src - runs.back().src);
                if (p.len >= kAlignSplit && ((in_off - p.out) & 15u) != 0) extend = false;
            }
            if (extend) {
                runs.back().end = std::max(runs.back().end, p.src + p.len);
            } else {
                // Start a read whose first byte sits at the piece's output alignment (mod 16).
                const std::uint64_t base = in_pos + ((p.out - in_pos) & 15u);
                runs.push_back(Run{p.src_file, p.src, p.src + p.len, base});
                in_off = base;
            }
            in_pos = runs.back().base + (runs.back().end - runs.back().src);
            cuda::append_tiles(table_, cuda::GatherEntry{p.out, in_off, p.len});
        }
        if (in_pos > config_.input_bytes || table_.size() > config_.max_entries)
            throw InputError("cuda: internal error: chunk needs " + std::to_string(in_pos) + " input bytes and " +
                             std::to_string(table_.size()) + " table entries (capacity " +
                             std::to_string(config_.input_bytes) + ", " + std::to_string(config_.max_entries) + ")");
        std::byte* in = stager.input(slot);
        for (const Run& r : runs)
            add_io_jobs(reads_, sources_[static_cast<std::size_t>(r.file)].get(), static_cast<std::size_t>(r.file),
                        r.src, in + r.base, r.end - r.src);
        run_io(reads_, false, plan_.sources);
        std::copy(table_.begin(), table_.end(), stager.table(slot));
        return {static_cast<std::size_t>(in_pos), table_.size()};
    }

    void open_output(std::size_t i) {
        const fs::path& p = out_paths_[i];
        out_ = io::create_sized(p, plan_.outputs[i].size);
        out_file_ = i;
    }

    void finish_output(std::size_t i) {
        io::sync_data(out_.get(), out_paths_[i]);
        out_.reset();
        if (exit_after_ >= 0 && ++files_done_ >= exit_after_) ::_exit(3); // test hook, as execute_rewrite_cpu
    }

    /// Writes one chunk's output (the writer task; one at a time, in chunk order).
    void write_chunk(const WriteJob& c) {
        if (c.offset == 0) open_output(c.file);
        if (out_file_ != c.file || out_.get() < 0)
            throw InputError("cuda: internal error: chunk of " + plan_.outputs[c.file].name + " out of order");
        writes_.clear();
        add_io_jobs(writes_, out_.get(), c.file, c.offset, c.data, c.size);
        run_io(writes_, true, out_paths_);
        if (c.last_of_file) finish_output(c.file);
    }

    const RewritePlan& plan_;
    fs::path dir_;
    std::uint64_t chunk_bytes_ = 0;
    std::size_t max_pieces_ = 0;
    std::uint64_t total_ = 0;
    cuda::StagerConfig config_;
    long exit_after_ = -1, files_done_ = 0;
    std::vector<io::Fd> sources_;
    std::vector<fs::path> out_paths_;
    io::Fd out_;
    std::size_t out_file_ = 0;
    // Scratch reused across chunks.
    std::vector<std::size_t> order_;
    std::vector<cuda::GatherEntry> table_;
    std::vector<IoJob> reads_, writes_;
};

} // namespace
#endif

bool cuda_rewrite_available(std::string* why) {
#ifdef ROUTEPACK_HAVE_CUDA
    return cuda::device_available(why, nullptr);
#else
    if (why) *why = "built without CUDA";
    return false;
#endif
}

std::uint64_t execute_rewrite_staged(const RewritePlan& plan, const std::filesystem::path& dir,
                                     const StagedRewriteOptions& options, const RewriteProgressFn& progress,
                                     const std::atomic<bool>* cancel, std::string* device) {
#ifdef ROUTEPACK_HAVE_CUDA
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) throw InputError(dir.string() + ": no such folder (rewrite output)");
    if (!options.host_emulation) {
        std::string why;
        if (!cuda::device_available(&why, nullptr)) throw InputError("cuda: not available: " + why);
    }
    try {
        StagedExecutor ex(plan, dir, options);
        return ex.run(progress, cancel, device);
    } catch (const cuda::Error& e) {
        throw InputError(e.what());
    }
#else
    (void)plan, (void)dir, (void)options, (void)progress, (void)cancel, (void)device;
    throw InputError("cuda: not available: built without CUDA");
#endif
}

std::uint64_t execute_rewrite_cuda(const RewritePlan& plan, const std::filesystem::path& dir,
                                   const RewriteProgressFn& progress, const std::atomic<bool>* cancel,
                                   std::string* device) {
    return execute_rewrite_staged(plan, dir, StagedRewriteOptions{}, progress, cancel, device);
}

CudaBandwidth measure_cuda_bandwidth(std::size_t bytes) {
#ifdef ROUTEPACK_HAVE_CUDA
    std::string why;
    if (!cuda::device_available(&why, nullptr)) throw InputError("cuda: not available: " + why);
    try {
        const cuda::Bandwidth b = cuda::measure_bandwidth(bytes);
        return CudaBandwidth{b.h2d_pinned_gbps, b.d2h_pinned_gbps, b.d2d_copy_gbps, b.gather_kernel_gbps, b.device};
    } catch (const cuda::Error& e) {
        throw InputError(e.what());
    }
#else
    (void)bytes;
    throw InputError("cuda: not available: built without CUDA");
#endif
}

} // namespace routepack::gpu
