// Safetensors header parse time against the tensor count: writes one file per count (n tensors of
// F32 shape [1], 4 bytes each, contiguous) into a temporary folder and times
// SafetensorsFile::open on it (best of 3). Linear cost means the per-tensor time stays flat as n
// grows. Usage: bench_safetensors_header [max_tensors, default 800000; 1.6M tensors pass the 100 MB header limit]
#include "gpu/safetensors/safetensors.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

void write_file(const std::filesystem::path& p, std::size_t n) {
    std::string header = "{";
    for (std::size_t i = 0; i < n; ++i) {
        header += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
                  std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
    }
    header += "}";
    std::ofstream f(p, std::ios::binary);
    std::uint64_t len = header.size();
    char le[8];
    for (int b = 0; b < 8; ++b)
        le[b] = static_cast<char>((len >> (8 * b)) & 0xff);
    f.write(le, 8);
    f << header;
    const std::string data(4 * n, '\0');
    f << data;
}

} // namespace

int main(int argc, char** argv) {
    const std::size_t max_n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 800000;
    const auto dir = std::filesystem::temp_directory_path() / "bench_safetensors_header";
    std::filesystem::create_directories(dir);
    std::printf("%10s %12s %12s %14s\n", "tensors", "header MB", "open s", "us per tensor");
    for (std::size_t n = 25000; n <= max_n; n *= 2) {
        const auto p = dir / ("h" + std::to_string(n) + ".safetensors");
        write_file(p, n);
        double best = 1e30;
        std::size_t got = 0;
        for (int rep = 0; rep < 3; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            const auto f = routepack::gpu::SafetensorsFile::open(p);
            got = f.tensors().size();
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::printf("%10zu %12.1f %12.3f %14.2f\n", got, static_cast<double>(std::filesystem::file_size(p)) / 1e6, best,
                    1e6 * best / static_cast<double>(n));
        std::filesystem::remove(p);
    }
    std::filesystem::remove_all(dir);
    return 0;
}
