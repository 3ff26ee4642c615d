#include <cuda_runtime.h>

#include <string>

namespace routepack::gpu {

int cuda_device_count(std::string* name) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); // clear the sticky "no driver" error
        return 0;
    }
    if (n > 0 && name) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) *name = prop.name;
    }
    return n;
}

} // namespace routepack::gpu
