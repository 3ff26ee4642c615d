// libFuzzer harness: one trace file imported by import_trace_to_memory with an explicit format (or
// auto-detection), the way `routepack import --format F` reads it. The harness is built once per
// importer with ROUTEPACK_FUZZ_FORMAT (a --format name) and ROUTEPACK_FUZZ_FILE (the file name,
// whose extension some formats require). The model is small and fixed (4 decoder layers, MoE
// layers 1-3, 8 experts, top-2), so the inputs stay short; the formats that name their own model
// (aggregate) or their MoE layers (step JSON, CSV) override parts of it. Only InputError may come out.
#include "core/import/import.h"
#include "core/util/errors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const routepack::ImportOptions options = [] {
        routepack::ImportOptions o;
        o.format = routepack::parse_trace_format(ROUTEPACK_FUZZ_FORMAT);
        o.model.name = "fuzz";
        o.model.num_hidden_layers = 4;
        o.model.experts = 8;
        o.model.top_k = 2;
        o.model.moe_layers = {1, 2, 3};
        o.model.source = "fuzz harness";
        return o;
    }();
    const auto path = routepack::fuzz::write_input(ROUTEPACK_FUZZ_FILE, data, size);
    try {
        routepack::ImportSummary summary;
        const auto trace = routepack::import_trace_to_memory({path}, options, &summary);
        (void)trace;
    } catch (const routepack::InputError&) {
    }
    return 0;
}
