#include "gpu/cuda/device.h"

namespace routepack::gpu {

#ifdef ROUTEPACK_HAVE_CUDA
int cuda_device_count(std::string* name); // device_cuda.cu
#endif

bool cuda_compiled() {
#ifdef ROUTEPACK_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

DeviceInfo query_devices() {
    DeviceInfo info;
#ifdef ROUTEPACK_HAVE_CUDA
    std::string name;
    info.cuda_devices = cuda_device_count(&name);
    info.description = info.cuda_devices > 0
                           ? "CUDA: " + std::to_string(info.cuda_devices) + " device(s) (" + name + ")"
                           : "CPU only (built with CUDA, no device found)";
#else
    info.description = "CPU only (built without CUDA)";
#endif
    return info;
}

} // namespace routepack::gpu
