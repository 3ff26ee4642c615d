#pragma once
// Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.cpp): every parser is fed through the same
// file path a user's input takes (a regular file read by the capped reader), so the harness writes
// each input to a file in a per-process scratch folder first.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace routepack::fuzz {

/// The harness's scratch folder ($TMPDIR or /tmp, "routepack-fuzz-<pid>"), created on first use.
inline const std::filesystem::path& scratch_dir() {
    static const std::filesystem::path dir = [] {
        const char* tmp = std::getenv("TMPDIR");
        std::filesystem::path d = std::filesystem::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                                  ("routepack-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

/// Writes `size` bytes at `data` to scratch_dir()/name (replacing it) and returns the path. Aborts
/// when the scratch file cannot be written: the harness cannot test anything then.
inline std::filesystem::path write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
    const std::filesystem::path path = scratch_dir() / name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || (size != 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
        std::perror(path.c_str());
        std::abort();
    }
    return path;
}

} // namespace routepack::fuzz
