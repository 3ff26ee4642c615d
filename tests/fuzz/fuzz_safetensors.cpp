// libFuzzer harness: a .safetensors file (8-byte little-endian header size, JSON header, data;
// huggingface/safetensors format 0.4) opened and validated by gpu::SafetensorsFile::open, then every
// tensor's bytes touched. Only InputError may come out: any other exception, crash or sanitizer
// report is a finding.
#include "core/util/errors.h"
#include "gpu/safetensors/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto path = routepack::fuzz::write_input("model.safetensors", data, size);
    try {
        const auto file = routepack::gpu::SafetensorsFile::open(path);
        unsigned sum = 0;
        for (const auto& tensor : file.tensors()) {
            for (const std::byte b : file.data(tensor))
                sum += static_cast<unsigned>(b);
        }
        (void)file.names();
        (void)file.metadata();
        return static_cast<int>(sum & 0U);
    } catch (const routepack::InputError&) {
        return 0;
    }
}
