// libFuzzer harness for the JSON documents read whole from text: the topology file
// (parse_topology), our model description and a Hugging Face config.json (model_from_hf_config),
// the plan file (parse_plan, format "routepack-plan" versions 1 to kPlanVersion), the measured step
// file (parse_measured) and a torch.profiler Chrome trace (fill_from_profiler, on a fixed one-row
// plan of three samples: window fingerprint 0123456789abcdef, plan "p", MoE layer 3, two EP ranks,
// two DP slots in two EDP shards). The harness is built once per parser (ROUTEPACK_FUZZ_PARSER = 1
// to 6). Only InputError may come out.
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/plan/measured.h"
#include "core/plan/plan_file.h"
#include "core/plan/profiler_trace.h"
#include "core/util/errors.h"

#include <cstddef>
#include <cstdint>
#include <string>

#if ROUTEPACK_FUZZ_PARSER == 6
namespace {

/// The plan the traces are read against: samples of 10, 20 and 30 tokens, cells {0, 1} and {2}.
routepack::MeasuredPlan fixed_plan(const routepack::Topology& topology) {
    routepack::Trace t;
    t.model.experts = 4;
    t.model.top_k = 2;
    t.model.num_hidden_layers = 4;
    t.model.moe_layers = {3};
    for (const std::int64_t length : {10, 20, 30}) {
        routepack::SampleInfo s;
        s.length = length;
        t.samples.push_back(s);
    }
    t.counts = {4, 0, 6, 0, 0, 0, 10, 10, 0, 0, 6, 24};
    return routepack::layout_pieces(t, routepack::Layout::from_cells(1, 2, {{0, 1}, {2}}),
                                    routepack::Placement{1, 4, 2, {0, 1, 2, 3}}, topology, "p");
}

} // namespace
#endif

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
#elif ROUTEPACK_FUZZ_PARSER == 5
        (void)routepack::parse_measured(text, "fuzz/measured.json");
#elif ROUTEPACK_FUZZ_PARSER == 6
        static const routepack::Topology topology = routepack::parse_topology(
            R"({"ep_ranks": 2, "dp_slots": 2, "edp_shards": [[0], [1]], "token_cap": 100, "attention_stages": [{"name": "attention", "alpha": 1.0, "beta": 1.0}]})",
            "fuzz");
        static const routepack::MeasuredPlan plan = fixed_plan(topology);
        routepack::MeasuredPlan p = plan;
        (void)routepack::fill_from_profiler(p, {{"fuzz/trace.json", text}}, "0123456789abcdef", topology, {3});
#else
#error "ROUTEPACK_FUZZ_PARSER must be 1 to 6"
#endif
    } catch (const routepack::InputError&) {
    }
    return 0;
}
