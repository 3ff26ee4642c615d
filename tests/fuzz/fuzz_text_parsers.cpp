// libFuzzer harness for the JSON documents read whole from text: the topology file
// (parse_topology), our model description and a Hugging Face config.json (model_from_hf_config),
// and the plan file (parse_plan, format "routepack-plan" versions 1 to kPlanVersion). The harness
// is built once per parser (ROUTEPACK_FUZZ_PARSER = 1, 2, 3 or 4). Only InputError may come out.
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/plan/plan_file.h"
#include "core/util/errors.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
#if ROUTEPACK_FUZZ_PARSER == 1
        (void)routepack::parse_topology(text, "fuzz/topology.json");
#elif ROUTEPACK_FUZZ_PARSER == 2
        (void)routepack::model_from_hf_config(text, "fuzz/config.json");
#elif ROUTEPACK_FUZZ_PARSER == 3
        (void)routepack::parse_model_description(text, "fuzz/model.json");
#elif ROUTEPACK_FUZZ_PARSER == 4
        (void)routepack::parse_plan(text, "fuzz/plan.json");
#else
#error "ROUTEPACK_FUZZ_PARSER must be 1 to 4"
#endif
    } catch (const routepack::InputError&) {
    }
    return 0;
}
