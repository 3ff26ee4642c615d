#pragma once
// Accelerator discovery for the checkpoint rewriter (the executors build on it). Qt-free.
#include <string>

namespace routepack::gpu {

/// What the rewriter can run on in this build and on this machine.
struct DeviceInfo {
    int cuda_devices = 0;    ///< devices the CUDA runtime reports (0 without a driver)
    std::string description; ///< one line, e.g. "CUDA: 1 device (NVIDIA H200)" or "CPU only (built without CUDA)"
};

/// True when this build compiled the CUDA part (gpu/cuda with nvcc): the CUDA executor and its host
/// emulation exist, a device may still be missing (query_devices). The one way code outside gpu/cuda asks;
/// the compile definition behind it is private to gpu/cuda. Never throws.
bool cuda_compiled();

/// Queries the CUDA runtime when built with it; never throws.
DeviceInfo query_devices();

} // namespace routepack::gpu
