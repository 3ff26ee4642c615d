// libFuzzer harness for the `rewrite --map` expert map (gpu::parse_expert_map_text,
// gpu/rewrite/request.h), the JSON file the CLI reads for a rewrite (the `place --loads` file is an
// importer format: fuzz_import_loads). Only InputError may come out; a map that parses must also
// turn into a request (rows given their absolute layer ids) without any other exception.
#include "core/util/errors.h"
#include "gpu/rewrite/request.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const routepack::gpu::ExpertMapFile m = routepack::gpu::parse_expert_map_text(text, "fuzz/map.json");
        if (!m.moe_layers.empty()) (void)routepack::gpu::request_from_map(m, "fuzz/map.json", "/nonexistent");
    } catch (const routepack::InputError&) {
    }
    return 0;
}
