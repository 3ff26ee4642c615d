// rewrite_checkpoint (gpu/rewrite.h): plan, pick the executor, write into a temporary sibling folder,
// verify, rename into place.
#include "gpu/rewrite.h"

#include "core/util/errors.h"
#include "core/util/output_folder.h"
#include "gpu/cuda/rewrite_cuda.h"
#include "gpu/io/posix_io.h"

#include <chrono>
#include <string>
#include <unistd.h>

namespace routepack::gpu {
namespace fs = std::filesystem;

RewriteReport rewrite_checkpoint(const RewriteRequest& req, const RewriteProgressFn& progress,
                                 const std::atomic<bool>* cancel) {
    const RewritePlan plan = plan_rewrite(req);
    RewriteReport rep;
    rep.moved_bytes = plan.moved_bytes;
    rep.moved_tensors = plan.moved_tensors;
    rep.files = static_cast<int>(plan.outputs.size() + plan.other_files.size()) + 1;

    bool use_cuda = false;
    std::string why;
    if (req.device == RewriteDevice::Cuda) {
        if (!cuda_rewrite_available(&why)) throw InputError("", rewrite_setting("device", "cuda"), ": " + why);
        use_cuda = true;
    } else if (req.device == RewriteDevice::Auto) {
        use_cuda = cuda_rewrite_available(&why);
    }

    const fs::path output = output_path(req.output);
    const fs::path parent = output.parent_path(); // a folder (checked when planning)
    std::error_code ec;

    // Stale partial folders of killed rewrites of the same output.
    util::remove_stale_partial_folders(output);
    const std::string stem = "." + output.filename().string() + ".routepack-partial-";
    const fs::path tmp = parent / (stem + std::to_string(::getpid()));
    fs::remove_all(tmp, ec);
    if (!fs::create_directory(tmp, ec))
        throw InputError(tmp.string() + ": cannot create the temporary output folder: " + ec.message());
    try {
        io::write_file(tmp / util::kPartialFolderMarker,
                       "routepack rewrite in progress, pid " + std::to_string(::getpid()) + "\n");
        const auto t0 = std::chrono::steady_clock::now();
        if (use_cuda) {
            std::string dev;
            rep.bytes_written = execute_rewrite_cuda(plan, tmp, progress, cancel, &dev);
            rep.device = dev;
        } else {
            rep.bytes_written = execute_rewrite_cpu(plan, tmp, req.workers, progress, cancel);
            rep.device = "cpu";
        }
        for (const fs::path& p : plan.other_files) {
            fs::copy(p, tmp / p.filename(), fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
            if (ec) throw InputError(p.string() + ": cannot copy: " + ec.message());
            if (fs::is_regular_file(fs::symlink_status(p))) rep.bytes_written += fs::file_size(p);
        }
        {
            io::write_file(tmp / kRewriteSidecar, plan.sidecar_json);
            rep.bytes_written += plan.sidecar_json.size();
        }
        io::sync_folder(tmp);
        rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (req.verify) {
            const auto v0 = std::chrono::steady_clock::now();
            const std::string diff = verify_rewrite(plan, tmp, progress, cancel);
            if (!diff.empty()) throw InputError("", rewrite_setting("verify"), ": " + diff);
            rep.verified = true;
            rep.verify_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - v0).count();
        }
        fs::remove(tmp / util::kPartialFolderMarker, ec);
        if (fs::exists(output, ec)) fs::remove(output, ec); // an empty folder (checked when planning)
        fs::rename(tmp, output, ec);
        if (ec) throw InputError(output.string() + ": cannot move the finished output into place: " + ec.message());
    } catch (...) {
        std::error_code ec2;
        fs::remove_all(tmp, ec2);
        throw;
    }
    return rep;
}

} // namespace routepack::gpu
