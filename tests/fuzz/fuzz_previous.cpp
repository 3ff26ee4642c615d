// libFuzzer harness for the previous placement as `--previous` and Python's previous= read it
// (core/plan/expert_map.h previous_placement_from_text: a plan file or any expert map shape, checked
// against the window's model and EP ranks). Only InputError may come out; a placement that is
// returned must be a permutation per layer of the window's shape.
#include "core/model/model.h"
#include "core/plan/expert_map.h"
#include "core/plan/score/placement.h"
#include "core/util/errors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    routepack::ModelDescription model; // the seed plan's: MoE layers 1-3 of 4, 8 experts
    model.num_hidden_layers = 4;
    model.moe_layers = {1, 2, 3};
    model.experts = 8;
    model.top_k = 2;
    for (const int ep_ranks : {2, 4}) {
        try {
            const routepack::Placement pi =
                routepack::previous_placement_from_text(text, "fuzz/previous.json", model, ep_ranks);
            if (pi.layers != 3 || pi.experts != 8 || pi.ep_ranks != ep_ranks) std::abort();
            (void)routepack::physical_to_logical(pi); // throws std::invalid_argument unless permutations
        } catch (const routepack::InputError&) {
        }
    }
    return 0;
}
