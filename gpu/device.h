#pragma once
// Accelerator discovery for the checkpoint rewriter (the executors build on it).
#include <string>

namespace routepack::gpu {

/// What the rewriter can run on in this build and on this machine.
struct DeviceInfo {
    bool cuda_built = false;   ///< compiled with nvcc (ROUTEPACK_HAVE_CUDA)
    int cuda_devices = 0;      ///< devices the CUDA runtime reports (0 without a driver)
    std::string description;   ///< one line, e.g. "CUDA: 1 device (NVIDIA H200)" or "CPU only (built without CUDA)"
};

/// Queries the CUDA runtime when built with it; never throws.
DeviceInfo query_devices();

}  // namespace routepack::gpu
