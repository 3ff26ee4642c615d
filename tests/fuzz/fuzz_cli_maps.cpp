// libFuzzer harness for the two JSON files the CLI reads for placement: the `place --loads` file
// (cli::parse_loads_text, app/cli_loads.h; ROUTEPACK_FUZZ_PARSER=1) and the `rewrite --map` expert
// map (gpu::parse_expert_map_text, gpu/rewrite/request.h; ROUTEPACK_FUZZ_PARSER=2). Only
// InputError may come out; a map that parses must also turn into a request (rows given their
// absolute layer ids) without any other exception.
#include "core/util/errors.h"

#if ROUTEPACK_FUZZ_PARSER == 1
#include "app/cli_loads.h"
#elif ROUTEPACK_FUZZ_PARSER == 2
#include "gpu/rewrite/request.h"
#else
#error "ROUTEPACK_FUZZ_PARSER must be 1 or 2"
#endif

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
#if ROUTEPACK_FUZZ_PARSER == 1
        const routepack::cli::LoadsFile f = routepack::cli::parse_loads_text(text, "fuzz/loads.json", "", 0);
        if (f.loads.size() != static_cast<std::size_t>(f.model.num_moe_layers()) * f.model.experts) std::abort();
#else
        const routepack::gpu::ExpertMapFile m = routepack::gpu::parse_expert_map_text(text, "fuzz/map.json");
        if (!m.moe_layers.empty()) (void)routepack::gpu::request_from_map(m, "fuzz/map.json", "/nonexistent");
#endif
    } catch (const routepack::InputError&) {
    }
    return 0;
}
