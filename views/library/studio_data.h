#pragma once
// What the studio's window decides without widgets: which shipped topology preset fits a trace's
// model, and the placement views of a load-only trace. Plain C++ so that tests check them by hand.
#include "core/model/model.h"
#include "core/model/topology.h"
#include "core/plan/planner.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace routepack::views {

/// The shipped topology preset to offer for a trace of `model` when `current` cannot plan it:
/// std::nullopt when `current` fits (its experts per layer are 0, "from the trace", or the model's)
/// or the model has no name. Otherwise the first preset (known_topology_names order) whose name
/// starts with the model's name and whose experts per layer are 0 or the model's, preferring one with
/// the same EP ranks and DP slots as `current`; "" when no preset fits.
std::optional<std::string> preset_for_model(const routepack::ModelDescription& model,
                                            const routepack::Topology& current);

/// The placement-only "plan" of a load-only trace (per-layer expert totals `loads`, [L][E] of
/// `model`) on `topology`: model, topology and trace name set, `placement` = compare_placements
/// (identity against LPT), the planned placement = LPT; no rows, layouts or costs. The caller checks
/// that E is divisible by the topology's EP ranks; compare_placements throws otherwise.
std::shared_ptr<routepack::PlanResult> load_only_placement(const routepack::ModelDescription& model,
                                                           const routepack::Topology& topology,
                                                           const std::vector<std::uint64_t>& loads,
                                                           const std::string& trace);

} // namespace routepack::views
