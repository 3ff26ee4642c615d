#include "views/library/studio_data.h"

#include "core/plan/score/placement.h"

namespace routepack::views {

std::optional<std::string> preset_for_model(const ModelDescription& model, const Topology& current) {
    if (current.experts_per_layer == 0 || current.experts_per_layer == model.experts || model.name.empty())
        return std::nullopt;
    std::string pick;
    for (const auto& n : known_topology_names()) {
        if (n.rfind(model.name, 0) != 0) continue;
        const Topology k = known_topology(n);
        if (k.experts_per_layer != 0 && k.experts_per_layer != model.experts) continue;
        if (pick.empty()) pick = n;
        if (k.ep_ranks == current.ep_ranks && k.dp_slots == current.dp_slots) return n;
    }
    return pick;
}

std::shared_ptr<PlanResult> load_only_placement(const ModelDescription& model, const Topology& topology,
                                                const std::vector<std::uint64_t>& loads, const std::string& trace) {
    auto p = std::make_shared<PlanResult>();
    p->model = model;
    p->topology = topology;
    p->trace_name = trace;
    static_cast<PlacementComparison&>(p->placement) =
        compare_placements(loads, model.num_moe_layers(), model.experts, topology.ep_ranks);
    p->placement.routepack = p->placement.lpt;
    p->placement.rank_loads_routepack = p->placement.rank_loads_lpt;
    p->placement.cv_routepack = p->placement.cv_lpt;
    return p;
}

} // namespace routepack::views
