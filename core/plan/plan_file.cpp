#include "core/plan/plan_file.h"

#include "core/model/limits.h"

#include "core/plan/budgets.h"
#include "core/plan/score/metrics_json.h"
#include "core/plan/score/packing.h"
#include "core/plan/score/placement.h"
#include "core/util/errors.h"
#include "core/util/json.h"
#include "core/util/json_field.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace routepack {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

/// The plan file's planner.budgets: every row of budget_table() but the run settings (workers),
/// in table order.
ojson budgets_ojson(const PlannerBudgets& b) {
    ojson out = ojson::object();
    PlannerBudgets copy = b;
    for (const BudgetRow& row : budget_table())
        if (!row.run_setting && budget_written(row, b))
            std::visit([&](const auto* p) { out[row.key] = *p; }, row.field(copy));
    return out;
}

ojson score_json(const Score& s) {
    return ojson::array({s.max_u, s.sum_u, s.max_j});
}

ojson placement_ojson(const Placement& pi) {
    ojson placement = ojson::array();
    for (int l = 0; l < pi.layers; ++l) {
        ojson layer = ojson::array();
        for (int e = 0; e < pi.experts; ++e)
            layer.push_back(pi.at(l, e));
        placement.push_back(std::move(layer));
    }
    return placement;
}

ojson rows_ojson(const Layout& x, const std::vector<std::string>& ids) {
    ojson rows = ojson::array();
    for (int rr = 0; rr < x.rows; ++rr) {
        ojson row = ojson::array();
        for (int d = 0; d < x.dp_slots; ++d) {
            ojson cell = ojson::array();
            for (int i : x.cell(x.cell_index(rr, d)))
                cell.push_back(ids[static_cast<std::size_t>(i)]);
            row.push_back(std::move(cell));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

ojson comm_figures_ojson(const CommFigures& c) {
    return {{"inter_node_copies", c.inter},
            {"intra_node_copies", c.intra},
            {"busiest_node_copies", c.busiest},
            {"inter_node_per_layer", c.inter_per_layer}};
}

/// The "communication" section (version 5): null on one node; else the node map, the weight and
/// tolerance, and when the window has routes every method's figures and the two communication
/// methods' placements and rows.
ojson communication_ojson(const PlanFile& f) {
    const PlanFileComm& fc = f.comm;
    if (fc.nodes <= 1) return nullptr;
    ojson c;
    c["nodes"] = fc.nodes;
    c["ep_rank_nodes"] = f.topology.node_of_rank();
    c["dp_slot_nodes"] = f.topology.node_of_dp_slot();
    c["weight"] = fc.weight;
    c["load_tolerance"] = fc.load_tolerance;
    c["available"] = fc.available;
    if (!fc.available) {
        c["note"] = fc.note;
        return c;
    }
    ojson methods;
    for (const MethodRow& m : kMethodTable)
        if (const auto& figures = fc.figures[m.method]) methods[m.key] = comm_figures_ojson(*figures);
    c["methods"] = std::move(methods);
    if (fc.has_grouter) {
        ojson off = ojson::array();
        for (int i : fc.grouter_off_node)
            off.push_back(f.sample_ids[static_cast<std::size_t>(i)]);
        c["grouter"] = {{"placement", placement_ojson(fc.grouter_placement)},
                        {"rows", rows_ojson(fc.grouter_layout, f.sample_ids)},
                        {"node_packing_fitted", fc.grouter_fitted},
                        {"off_node", std::move(off)}};
    }
    if (fc.has_comm_method)
        c["routepack+comm"] = {{"placement", placement_ojson(fc.comm_placement)},
                               {"rows", rows_ojson(fc.comm_layout, f.sample_ids)},
                               {"search_score", score_json(fc.comm_search_score)}};
    return c;
}

/// The routepack layout's cells over C (oversize Alone), ascending; empty otherwise.
std::vector<int> oversize_cells_of(const PlanResult& r) {
    if (r.topology.batch.oversize != Oversize::Alone) return {};
    PackingProblem shape;
    shape.length.reserve(r.samples.size());
    for (const auto& s : r.samples)
        shape.length.push_back(s.length);
    shape.C = effective_token_cap(r.topology, shape.length);
    return oversize_cells(r.routepack.layout, shape);
}

/// The plan file's "migration" section (PlanFileMigration), null without a previous placement.
ojson migration_ojson(const PlanFileMigration& m) {
    if (!m.present) return nullptr;
    ojson j;
    j["previous_fingerprint"] = m.previous_fingerprint;
    j["max_moves"] = m.max_moves >= 0 ? ojson(m.max_moves) : ojson(nullptr);
    j["objective"] = m.costed ? "modelled time" : "score";
    if (m.cost) {
        const PlanFileCostModel& c = *m.cost;
        j["cost_model"] = {{"expert_parameters", c.expert_parameters},
                           {"state_bytes_per_param", c.state_bytes_per_param},
                           {"expert_bytes", c.expert_bytes},
                           {"intra_node_GBps", c.intra_node_GBps},
                           {"inter_node_GBps", c.inter_node_GBps},
                           {"seconds_per_U", c.seconds_per_U},
                           {"seconds_per_U_derived", c.seconds_per_U_derived},
                           {"from_topology", c.from_topology},
                           {"plan_seconds", c.plan_seconds},
                           {"planning", c.overlap_planning ? "overlapped" : "serial"}};
    } else {
        j["cost_model"] = nullptr;
    }
    j["moves"] = m.moves;
    j["intra_node_moves"] = m.intra_node_moves;
    j["inter_node_moves"] = m.inter_node_moves;
    j["layer_moves"] = m.layer_moves;
    j["bytes"] = m.bytes;
    j["busiest_rank"] = m.busiest_rank;
    j["busiest_intra_node_bytes"] = m.busiest_intra_bytes;
    j["busiest_inter_node_bytes"] = m.busiest_inter_bytes;
    j["materialization_seconds"] = m.cost ? ojson(m.seconds) : ojson(nullptr);
    j["compute_seconds"] = m.cost ? ojson(m.compute_seconds) : ojson(nullptr);
    j["modelled_seconds"] = m.cost ? ojson(plan_modelled_seconds(m)) : ojson(nullptr);
    j["peak_sum_previous"] = m.peak_sum_previous;
    j["peak_sum_start"] = m.peak_sum_start;
    return j;
}

ojson topology_ojson(const Topology& t) {
    return ojson::parse(topology_to_json(t));
}

/// The "planner" section: seed, workers, budgets, the search's record and placement refinement.
ojson planner_ojson(const PlanFile& f) {
    const PlanFileSearch& s = f.search;
    ojson conv = ojson::array();
    for (const LevelStats& l : s.convergence)
        conv.push_back({{"level", l.level},
                        {"temperature", l.temperature},
                        {"best", score_json(l.best)},
                        {"mean_energy", l.mean_energy},
                        {"acceptance", l.acceptance},
                        {"proposals", l.proposals}});
    return {{"seed", f.seed},
            {"workers", f.workers},
            {"budgets", budgets_ojson(f.budgets)},
            {"population", s.population},
            {"proposals", s.proposals},
            {"accepted", s.accepted},
            {"polish",
             {{"evaluations", s.polish_evaluations},
              {"improvements", s.polish_improvements},
              {"kicks", s.polish_kicks},
              {"kicks_kept", s.polish_kicks_kept},
              {"local_optimum", s.polish_local_optimum}}},
            {"placement_refinement",
             {{"refined", f.placement_refined},
              {"rounds_kept", f.placement_rounds_kept},
              {"swaps", f.placement_swaps},
              {"skipped", f.placement_refinement_skipped}}},
            {"cancelled", f.cancelled},
            {"time_limit_hit", f.time_limit_hit},
            {"convergence", std::move(conv)}};
}

} // namespace

std::string plan_migration_json(const PlanFileMigration& m) {
    return migration_ojson(m).dump();
}

double plan_modelled_seconds(const PlanFileMigration& m) {
    if (!m.cost) throw std::invalid_argument("plan_modelled_seconds: the migration section has no cost model");
    MigrationCost c;
    c.plan_seconds = m.cost->plan_seconds;
    c.overlap_planning = m.cost->overlap_planning;
    return m.compute_seconds + step_overhead_seconds(c, m.seconds);
}

namespace {

/// The "history" section (version 10): the run's decayed loads, one array of E numbers per MoE layer.
ojson history_ojson(const RunHistory& h) {
    ojson loads = ojson::array();
    for (int l = 0; l < h.layers; ++l) {
        const auto first = h.loads.begin() + static_cast<std::ptrdiff_t>(l) * h.experts;
        loads.push_back(std::vector<double>(first, first + h.experts));
    }
    return {{"decay", h.decay}, {"steps", h.steps}, {"weight", h.weight}, {"loads", std::move(loads)}};
}

} // namespace

std::string plan_file_to_json(const PlanFile& f) {
    ojson j;
    j["format"] = "routepack-plan";
    j["version"] = kPlanVersion;
    j["inputs"] = {{"trace", f.trace_name},
                   {"window", f.window_name},
                   {"fingerprint", f.fingerprint},
                   {"samples", f.sample_ids.size()}};
    j["model"] = {{"name", f.model.name},
                  {"num_hidden_layers", f.model.num_hidden_layers},
                  {"top_k", f.model.top_k},
                  {"experts", f.model.experts}};
    j["topology"] = topology_ojson(f.topology);
    j["topology"]["row_multiple"] = f.topology.row_multiple; // version 4: always written
    j["moe_layers"] = f.model.moe_layers;
    j["placement"] = placement_ojson(f.placement);
    ojson samples = ojson::array();
    for (std::size_t i = 0; i < f.sample_ids.size(); ++i)
        samples.push_back({{"id", f.sample_ids[i]}, {"index", i}, {"length", f.lengths[i]}});
    j["samples"] = std::move(samples);
    j["row_count"] = f.row_count;
    j["row_count_certified"] = f.row_count_certified;
    j["row_lower_bound"] = f.row_lower_bound;
    j["row_count_how"] = f.row_count_how;
    j["baseline_is_fixed_row_ffd"] = f.baseline_is_fixed_row_ffd;
    j["rows"] = rows_ojson(f.layout, f.sample_ids);
    if (!f.oversize_cells.empty()) {
        ojson over = ojson::array();
        const int D = f.layout.dp_slots;
        for (int k : f.oversize_cells)
            over.push_back({k / D, k % D});
        j["oversize_cells"] = std::move(over);
    }
    j["score"] = score_json(f.score);
    j["max_u_lower_bound"] = {{"value", f.bound.value},
                              {"mean", f.bound.mean},
                              {"sample", f.bound.sample},
                              {"gap", bound_gap(f.score.max_u, f.bound.value)}};
    ojson metrics;
    for (const MethodRow& m : kMethodTable)
        if (const auto& x = f.metrics[m.method]) {
            ojson one;
            one["placement"] = placement_key(x->placement);
            one["score"] = score_json(x->metrics.score);
            write_layout_metrics(x->metrics, one);
            metrics[m.key] = std::move(one);
        }
    j["metrics"] = std::move(metrics);
    j["communication"] = communication_ojson(f);
    if (f.migration.present) j["migration"] = migration_ojson(f.migration);
    if (f.history) j["history"] = history_ojson(*f.history);
    j["planner"] = planner_ojson(f);
    ojson timings;
    for (const auto& [k, v] : f.timings)
        timings[k] = v;
    j["timings"] = std::move(timings);
    return j.dump(2);
}

std::string plan_to_json(const PlanResult& r) {
    return plan_file_to_json(plan_file_of(r));
}

const LayoutMetrics& PlanFile::metrics_of(Method m) const {
    if (!metrics[m]) throw InputError(std::string("plan: no metrics of method '") + method_key(m) + "'");
    return metrics[m]->metrics;
}

namespace {

/// The "communication" section of plan_file_of, as parse_communication reads communication_ojson.
PlanFileComm plan_file_comm(const PlanResult& r) {
    PlanFileComm c;
    if (r.comm.nodes <= 1) return c;
    c.nodes = r.comm.nodes;
    c.weight = r.topology.comm_weight;
    c.load_tolerance = r.topology.comm_load_tolerance;
    c.available = r.comm.available && r.routepack.comm.has_value();
    if (!c.available) {
        c.note = r.comm.available ? "not computed (the plan was cancelled)" : kCommUnavailable;
        return c;
    }
    for (const MethodResult* m : r.methods())
        if (m->comm)
            c.figures[m->method] = CommFigures{m->comm->inter_total, m->comm->intra_total, m->comm->busiest_total,
                                               m->comm->inter_per_layer};
    if (r.comm.grouter) {
        c.has_grouter = true;
        c.grouter_fitted = r.comm.grouter_fitted;
        c.grouter_placement = r.comm.grouter_placement;
        c.grouter_layout = r.comm.grouter->layout;
        c.grouter_off_node = r.comm.grouter_off_node;
    }
    if (r.comm.routepack_comm) {
        c.has_comm_method = true;
        c.comm_placement = r.comm.comm_placement;
        c.comm_layout = r.comm.routepack_comm->layout;
        c.comm_search_score = r.comm.routepack_comm->comm_score.value_or(Score{});
    }
    return c;
}

/// The "migration" section of plan_file_of (PlanMigration); not present without a previous placement.
PlanFileMigration plan_file_migration(const PlanResult& r) {
    const PlanMigration& m = r.migration;
    PlanFileMigration f;
    if (!m.has_previous) return f;
    const MigrationFigures& fig = m.figures;
    f.present = true;
    f.previous_fingerprint = m.previous_fingerprint;
    f.max_moves = m.max_moves >= 0 ? m.max_moves : -1;
    f.costed = m.costed;
    if (m.cost.expert_bytes > 0) {
        const MigrationModel& mm = r.topology.migration;
        f.cost = PlanFileCostModel{static_cast<std::int64_t>(m.cost.expert_bytes / mm.state_bytes_per_param + 0.5),
                                   mm.state_bytes_per_param,
                                   m.cost.expert_bytes,
                                   m.cost.intra_node_GBps,
                                   m.cost.inter_node_GBps,
                                   m.cost.seconds_per_U,
                                   m.seconds_per_U_derived,
                                   r.topology.has_migration,
                                   m.cost.plan_seconds,
                                   m.cost.overlap_planning};
        f.seconds = fig.seconds;
        f.compute_seconds = m.cost.seconds_per_U * r.routepack.metrics.score.max_u;
    }
    f.moves = fig.moved;
    f.intra_node_moves = fig.intra_moves;
    f.inter_node_moves = fig.inter_moves;
    f.layer_moves = layer_moves(r.placement.routepack, m.previous);
    f.bytes = fig.bytes;
    f.busiest_rank = fig.busiest_rank;
    f.busiest_intra_bytes = fig.busiest_intra_bytes;
    f.busiest_inter_bytes = fig.busiest_inter_bytes;
    f.peak_sum_previous = m.peak_sum_previous;
    f.peak_sum_start = m.peak_sum_start;
    return f;
}

/// The search record of plan_file_of (PlanSearch).
PlanFileSearch plan_file_search(const PlanSearch& s) {
    PlanFileSearch f;
    f.population = s.origins;
    f.proposals = s.proposals;
    f.accepted = s.accepted;
    f.polish_evaluations = s.polish_evaluations;
    f.polish_improvements = s.polish_improvements;
    f.polish_kicks = s.polish_kicks;
    f.polish_kicks_kept = s.polish_kicks_kept;
    f.polish_local_optimum = s.polish_local_optimum;
    f.convergence = s.convergence;
    for (LevelStats& l : f.convergence) { // not in the file
        l.infeasible = 0;
        l.state_copies = 0;
    }
    return f;
}

} // namespace

std::string plan_migration_json(const PlanResult& r) {
    return plan_migration_json(plan_file_migration(r));
}

PlanFile plan_file_of(const PlanResult& r) {
    PlanFile f;
    f.trace_name = r.trace_name;
    f.window_name = r.window_name;
    f.fingerprint = r.fingerprint;
    f.model.name = r.model.name;
    f.model.num_hidden_layers = r.model.num_hidden_layers;
    f.model.experts = r.model.experts;
    f.model.top_k = r.model.top_k;
    f.model.moe_layers = r.model.moe_layers;
    f.topology = r.topology;
    f.placement = r.placement.routepack;
    f.sample_ids.reserve(r.samples.size());
    f.lengths.reserve(r.samples.size());
    for (const auto& s : r.samples) {
        f.sample_ids.push_back(s.id);
        f.lengths.push_back(s.length);
    }
    f.row_count = r.rows.rows;
    f.row_count_certified = r.rows.certified;
    f.row_lower_bound = r.rows.lower_bound;
    f.row_count_how = r.rows.how;
    f.baseline_is_fixed_row_ffd = !r.baseline_not_ffd;
    f.layout = r.routepack.layout;
    f.oversize_cells = oversize_cells_of(r);
    f.score = r.routepack.metrics.score;
    f.has_bound = true;
    f.bound = r.bound;
    for (const MethodResult* m : r.methods())
        f.metrics[m->method] = PlanFileMethod{m->placement, m->metrics};
    f.comm = plan_file_comm(r);
    f.seed = r.budgets.seed;
    f.workers = r.budgets.workers;
    f.budgets = r.budgets;
    f.time_limit_hit = r.time_limit_hit;
    f.placement_refined = r.placement_refined();
    f.placement_rounds_kept = r.placement.rounds_kept;
    f.placement_swaps = r.placement.swaps;
    f.placement_refinement_skipped = r.placement.refinement_skipped;
    f.migration = plan_file_migration(r);
    f.history = r.history;
    f.search = plan_file_search(r.search);
    f.cancelled = r.cancelled;
    f.timings = r.timings;
    return f;
}

namespace {

using util::JsonField;

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

/// An optional string field ("" when absent or null).
std::string string_or_empty(const JsonField& f) {
    return f.given() ? f.string() : std::string();
}

/// A list of exactly n elements: InputError "<where> must hold <what>" otherwise.
void need_list(const JsonField& f, std::size_t n, const std::string& what) {
    if (!f.json().is_array() || f.json().size() != n) throw InputError(f.where() + " must hold " + what);
}

Score parse_score(const JsonField& f) {
    if (!f.json().is_array() || f.json().size() != 3)
        throw InputError(f.where() + " must be [max_g U_g, sum_g U_g, max J]");
    return Score{f[0].number(), f[1].number(), f[2].number()};
}

/// A placement list [L][E] of physical slots, each layer a permutation of 0..E-1.
Placement parse_placement(const JsonField& pl, const ModelDescription& model, int P) {
    const int L = model.num_moe_layers(), E = model.experts;
    need_list(pl, static_cast<std::size_t>(L), "one list per MoE layer (" + std::to_string(L) + ")");
    Placement out;
    out.layers = L;
    out.experts = E;
    out.ep_ranks = P;
    auto layer_where = [&](int l) {
        return pl[static_cast<std::size_t>(l)].where() + " (layer " + std::to_string(model.moe_layers[l]) + ")";
    };
    // The shape first: the [L][E] table is allocated only for a file that really holds it.
    for (int l = 0; l < L; ++l) {
        const auto& layer = pl.json()[static_cast<std::size_t>(l)];
        if (!layer.is_array() || static_cast<int>(layer.size()) != E)
            throw InputError(layer_where(l) + " must list the slot of each of the " + std::to_string(E) + " experts");
    }
    out.slot.assign(static_cast<std::size_t>(L) * E, -1);
    for (int l = 0; l < L; ++l) {
        const auto& layer = pl.json()[static_cast<std::size_t>(l)];
        std::vector<char> used(static_cast<std::size_t>(E), 0);
        for (int e = 0; e < E; ++e) {
            const auto& v = layer[static_cast<std::size_t>(e)];
            auto s = util::json_integer_of(v, 0, E - 1, util::IntegralFloats::Refuse);
            if (!s) pl[static_cast<std::size_t>(l)][static_cast<std::size_t>(e)].integer(0, E - 1); // throws
            if (used[static_cast<std::size_t>(*s)])
                throw InputError(layer_where(l) + ": slot " + std::to_string(*s) + " used twice");
            used[static_cast<std::size_t>(*s)] = 1;
            out.slot[static_cast<std::size_t>(l) * E + e] = static_cast<int>(*s);
        }
    }
    return out;
}

/// Rows of sample ids [R][D][...] into a Layout of sample indices.
Layout parse_rows(const JsonField& rows, const std::unordered_map<std::string, int>& index, int row_count, int D) {
    need_list(rows, static_cast<std::size_t>(row_count), "row_count = " + std::to_string(row_count) + " rows");
    // The shape first: the cell offsets are allocated only for a file that really holds row_count x D cells.
    for (int r = 0; r < row_count; ++r)
        need_list(rows[static_cast<std::size_t>(r)], static_cast<std::size_t>(D),
                  "D = " + std::to_string(D) + " cells");
    Layout x;
    x.rows = row_count;
    x.dp_slots = D;
    x.offsets.reserve(static_cast<std::size_t>(row_count) * D + 1);
    for (int r = 0; r < row_count; ++r) {
        const auto& row = rows.json()[static_cast<std::size_t>(r)];
        for (int d = 0; d < D; ++d) {
            const auto& cell = row[static_cast<std::size_t>(d)];
            if (!cell.is_array())
                rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(d)].list("a list of sample ids");
            for (const auto& v : cell) {
                auto it = v.is_string() ? index.find(v.get<std::string>()) : index.end();
                if (it == index.end())
                    throw InputError(rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(d)].where() +
                                     " names " + util::json_brief(v) + ", not a sample of the plan");
                x.samples.push_back(it->second);
            }
            x.offsets.push_back(static_cast<int>(x.samples.size()));
        }
    }
    return x;
}

CommFigures parse_figures(const JsonField& f, int L) {
    CommFigures c;
    c.inter = f["inter_node_copies"].integer(0);
    c.intra = f["intra_node_copies"].integer(0);
    c.busiest = f["busiest_node_copies"].integer(0);
    const JsonField per = f["inter_node_per_layer"];
    need_list(per, static_cast<std::size_t>(L), "one count per MoE layer (" + std::to_string(L) + ")");
    std::int64_t sum = 0;
    for (std::size_t l = 0; l < static_cast<std::size_t>(L); ++l) {
        c.inter_per_layer.push_back(per[l].integer(0));
        if (__builtin_add_overflow(sum, c.inter_per_layer.back(), &sum))
            throw InputError(per.where() + " sums above 2^63 - 1");
    }
    if (sum != c.inter)
        throw InputError(per.where() + " sums to " + std::to_string(sum) + ", not inter_node_copies " +
                         std::to_string(c.inter));
    return c;
}

/// "oversize_cells" (version 7, optional) into f.oversize_cells, checked against the cells of f.layout
/// whose token sum exceeds C (shape.C).
void parse_oversize_cells(const JsonField& v, PlanFile& f, const PackingProblem& shape) {
    const std::vector<int> over = oversize_cells(f.layout, shape);
    const int D = f.layout.dp_slots;
    std::vector<int> listed;
    if (v.exists()) {
        const std::size_t n = v.list("a list of [row, dp_slot] pairs");
        for (std::size_t k = 0; k < n; ++k) {
            const JsonField c = v[k];
            if (c.list("a [row, dp_slot] pair") != 2) c.fail("a [row, dp_slot] pair");
            const auto r = static_cast<int>(c[std::size_t{0}].integer(0, f.layout.rows - 1));
            const auto d = static_cast<int>(c[std::size_t{1}].integer(0, D - 1));
            listed.push_back(r * D + d);
        }
    }
    if (listed != over) {
        auto text = [&](const std::vector<int>& cells) {
            std::string out = "[";
            for (std::size_t k = 0; k < cells.size(); ++k)
                out += (k ? ", [" : "[") + std::to_string(cells[k] / D) + ", " + std::to_string(cells[k] % D) + "]";
            return out + "]";
        };
        throw InputError(v.where() + " lists " + text(listed) + " but the cells over C are " + text(over));
    }
    f.oversize_cells = over;
}

/// The version-5 "communication" section into f.comm (f's model, topology and samples already read).
void parse_communication(const JsonField& c, PlanFile& f, const std::unordered_map<std::string, int>& index,
                         const PackingProblem& shape) {
    const int nodes = f.topology.nodes();
    if (c.json().is_null()) {
        if (nodes > 1)
            throw InputError(c.where() + " is null but the topology has " + std::to_string(nodes) + " nodes");
        return;
    }
    if (nodes == 1) throw InputError(c.where() + " must be null: the topology has one node");
    c.object("null or an object");
    f.comm.nodes = static_cast<int>(c["nodes"].integer(1, kIntMax));
    if (f.comm.nodes != nodes)
        throw InputError(c.where() + ": nodes " + std::to_string(f.comm.nodes) + " differs from the topology's " +
                         std::to_string(nodes));
    f.comm.weight = c["weight"].number();
    f.comm.load_tolerance = c["load_tolerance"].number();
    f.comm.available = c["available"].boolean();
    if (!f.comm.available) {
        f.comm.note = string_or_empty(c["note"]);
        return;
    }
    const int L = f.model.num_moe_layers();
    const JsonField methods = c["methods"];
    methods.object();
    for (const auto& [name, v] : methods.json().items()) {
        const std::optional<Method> m = method_from_key(name);
        if (!m || !f.has(*m))
            throw InputError(methods.where() + ": '" + util::printable(name) +
                             "' is not a method of the plan's metrics");
        f.comm.figures[*m] = parse_figures(methods[name], L);
    }
    const int R = f.row_count, D = f.topology.dp_slots;
    if (const JsonField g = c["grouter"]; g.exists()) {
        f.comm.grouter_placement = parse_placement(g["placement"], f.model, f.topology.ep_ranks);
        f.comm.grouter_layout = parse_rows(g["rows"], index, R, D);
        if (const std::string bad = validate_layout(f.comm.grouter_layout, shape); !bad.empty())
            throw InputError(g["rows"].where() + ": " + bad);
        f.comm.grouter_fitted = g["node_packing_fitted"].boolean();
        const JsonField off = g["off_node"];
        const std::size_t n = off.list("a list of sample ids");
        for (std::size_t k = 0; k < n; ++k) {
            const auto& v = off.json()[k];
            auto it = v.is_string() ? index.find(v.get<std::string>()) : index.end();
            if (it == index.end())
                throw InputError(off.where() + " names " + util::json_brief(v) + ", not a sample of the plan");
            f.comm.grouter_off_node.push_back(it->second);
        }
        f.comm.has_grouter = true;
    }
    if (const JsonField m = c["routepack+comm"]; m.exists()) {
        f.comm.comm_placement = parse_placement(m["placement"], f.model, f.topology.ep_ranks);
        f.comm.comm_layout = parse_rows(m["rows"], index, R, D);
        if (const std::string bad = validate_layout(f.comm.comm_layout, shape); !bad.empty())
            throw InputError(m["rows"].where() + ": " + bad);
        f.comm.comm_search_score = parse_score(m["search_score"]);
        f.comm.has_comm_method = true;
    }
}

/// format, version, inputs, model and moe_layers into f.
void parse_header(const JsonField& j, PlanFile& f) {
    const std::string& origin = j.origin();
    const JsonField format = j["format"];
    if (!format.exists() || !format.json().is_string() || format.string() != "routepack-plan")
        throw InputError(origin + ": not a RoutePack plan (format must be \"routepack-plan\")");
    const std::int64_t version = j["version"].integer();
    if (version < 1 || version > kPlanVersion)
        throw InputError(origin + ": plan version " + j["version"].json().dump() + " is not supported (expected 1 to " +
                         std::to_string(kPlanVersion) + ")");
    f.version = static_cast<int>(version);
    const JsonField in = j["inputs"];
    in.object();
    f.trace_name = string_or_empty(in["trace"]);
    f.window_name = string_or_empty(in["window"]);
    f.fingerprint = string_or_empty(in["fingerprint"]);
    const JsonField m = j["model"];
    m.object();
    f.model.name = string_or_empty(m["name"]);
    f.model.num_hidden_layers = static_cast<int>(m["num_hidden_layers"].integer(0, kIntMax));
    f.model.experts = static_cast<int>(m["experts"].integer(0, kIntMax));
    f.model.top_k = static_cast<int>(m["top_k"].integer(0, kIntMax));
    const JsonField ml = j["moe_layers"];
    const std::size_t n = ml.list("a list of layer ids");
    for (std::size_t i = 0; i < n; ++i)
        f.model.moe_layers.push_back(static_cast<int>(ml[i].integer(0, kIntMax)));
    try {
        f.model.validate();
    } catch (const InputError& e) {
        throw InputError(origin + ": " + e.what());
    }
}

/// samples into f.sample_ids / f.lengths; returns the index of each sample id.
std::unordered_map<std::string, int> parse_samples(const JsonField& samples, PlanFile& f) {
    const std::size_t n = samples.json().is_array() ? samples.json().size() : 0;
    if (n == 0) throw InputError(samples.where() + " must be a non-empty list");
    std::unordered_map<std::string, int> index;
    for (std::size_t i = 0; i < n; ++i) {
        const JsonField s = samples[i];
        const std::string id = s["id"].string();
        const JsonField index_field = s["index"];
        if (index_field.integer() != static_cast<std::int64_t>(i))
            throw InputError(index_field.where() + " must be " + std::to_string(i));
        // Without a cap (samples_per_cell) or with oversize samples alone a length may exceed token_cap.
        const bool capped = f.topology.token_cap > 0 && f.topology.batch.oversize == Oversize::Refuse;
        const auto len = s["length"].integer(1, capped ? f.topology.token_cap : kMaxTokens);
        if (!index.emplace(id, static_cast<int>(i)).second)
            throw InputError(s.where() + ": duplicate sample id '" + id + "'");
        f.sample_ids.push_back(id);
        f.lengths.push_back(len);
    }
    return index;
}

/// metrics, and (version 2 on) max_u_lower_bound, into f (f.score read).
void parse_metrics_and_bound(const JsonField& j, PlanFile& f) {
    const JsonField metrics = j["metrics"];
    metrics.object();
    auto method = [&](const MethodRow& row) {
        const JsonField one = metrics[row.key];
        PlanFileMethod x;
        x.metrics = read_layout_metrics(one);
        x.metrics.score = parse_score(one["score"]);
        x.placement = default_placement(row.method);
        if (one["placement"].exists()) {
            const std::string key = one["placement"].string();
            const std::optional<PlacementKind> kind = placement_from_key(key);
            if (!kind)
                throw InputError(one["placement"].where() + " is '" + util::printable(key) +
                                 "', not identity, lpt, refined, grouter or comm");
            x.placement = *kind;
        }
        f.metrics[row.method] = x;
    };
    for (const MethodRow& row : kMethodTable)
        if (!is_comm_method(row.method) || (f.version >= 5 && metrics[row.key].exists())) method(row);
    if (!(f.metrics_of(Method::RoutePack).score == f.score))
        throw InputError(j.origin() + ": score differs from metrics.routepack.score");
    if (f.version < 2) return;
    const JsonField b = j["max_u_lower_bound"];
    b.object();
    f.bound.value = b["value"].number();
    f.bound.mean = b["mean"].number();
    f.bound.sample = b["sample"].number();
    const double gap = b["gap"].number();
    if (!(f.bound.value <= f.score.max_u))
        throw InputError(b.where() + ": value " + b["value"].json().dump() + " is above the plan's max_g U " +
                         nlohmann::json(f.score.max_u).dump());
    if (gap != bound_gap(f.score.max_u, f.bound.value))
        throw InputError(b.where() + ": gap " + b["gap"].json().dump() + " differs from score[0] / value - 1");
    f.has_bound = true;
}

/// The "migration" section (version 7) into a PlanFileMigration; InputError naming the field.
PlanFileMigration parse_plan_migration(const JsonField& m) {
    m.object();
    PlanFileMigration f;
    f.present = true;
    f.previous_fingerprint = m["previous_fingerprint"].string();
    f.max_moves = m["max_moves"].given() ? m["max_moves"].integer(0) : -1;
    f.costed = m["objective"].string() == "modelled time";
    f.moves = m["moves"].integer(0);
    const std::size_t L = m["layer_moves"].list();
    for (std::size_t l = 0; l < L; ++l)
        f.layer_moves.push_back(m["layer_moves"][l].integer(0));
    f.bytes = m["bytes"].number();
    f.seconds = m["materialization_seconds"].given() ? m["materialization_seconds"].number() : -1;
    f.compute_seconds = m["compute_seconds"].given() ? m["compute_seconds"].number() : -1;
    if (const JsonField c = m["cost_model"]; c.given()) {
        c.object();
        f.cost = PlanFileCostModel{c["expert_parameters"].integer(0),    c["state_bytes_per_param"].number(),
                                   c["expert_bytes"].number(),           c["intra_node_GBps"].number(),
                                   c["inter_node_GBps"].number(),        c["seconds_per_U"].number(),
                                   c["seconds_per_U_derived"].boolean(), c["from_topology"].boolean()};
        if (c["plan_seconds"].exists()) f.cost->plan_seconds = c["plan_seconds"].number(0, 1e15);
        if (const JsonField p = c["planning"]; p.exists())
            f.cost->overlap_planning = planning_overlapped(p.string(), p.where());
    }
    auto count = [&m](const char* key) { return m[key].exists() ? m[key].integer(0) : std::int64_t{0}; };
    auto bytes = [&m](const char* key) { return m[key].exists() ? m[key].number() : 0.0; };
    f.intra_node_moves = count("intra_node_moves");
    f.inter_node_moves = count("inter_node_moves");
    f.busiest_rank = m["busiest_rank"].exists() ? static_cast<int>(m["busiest_rank"].integer(-1, kIntMax)) : -1;
    f.busiest_intra_bytes = bytes("busiest_intra_node_bytes");
    f.busiest_inter_bytes = bytes("busiest_inter_node_bytes");
    f.peak_sum_previous = count("peak_sum_previous");
    f.peak_sum_start = count("peak_sum_start");
    return f;
}

/// Largest history load: 1e18 tokens (a run's decayed sum of one expert's tokens per step).
constexpr double kMaxHistoryLoad = 1e18;

/// The "history" section (version 10) of a plan of model `model` into a RunHistory; InputError naming the
/// field: "<origin>: history.weight is 7, not a number in [1, 3]", "<origin>: history.loads has 2 rows,
/// not 26 (one per MoE layer)".
RunHistory parse_history(const JsonField& h, const ModelDescription& model) {
    h.object();
    RunHistory out;
    out.layers = model.num_moe_layers();
    out.experts = model.experts;
    out.decay = h["decay"].number(0, 1);
    out.steps = h["steps"].integer(1, std::numeric_limits<std::int64_t>::max());
    out.weight = h["weight"].number(1, static_cast<double>(out.steps));
    const JsonField loads = h["loads"];
    if (loads.list() != static_cast<std::size_t>(out.layers))
        throw InputError(loads.where() + " has " + std::to_string(loads.list()) + " rows, not " +
                         std::to_string(out.layers) + " (one per MoE layer)");
    out.loads.reserve(static_cast<std::size_t>(out.layers) * static_cast<std::size_t>(out.experts));
    for (int l = 0; l < out.layers; ++l) {
        const JsonField row = loads[static_cast<std::size_t>(l)];
        if (row.list() != static_cast<std::size_t>(out.experts))
            throw InputError(row.where() + " has " + std::to_string(row.list()) + " loads, not " +
                             std::to_string(out.experts) + " (one per expert)");
        for (int e = 0; e < out.experts; ++e)
            out.loads.push_back(row[static_cast<std::size_t>(e)].number(0, kMaxHistoryLoad));
    }
    return out;
}

/// The search record of "planner" (population, proposals, accepted, polish, cancelled, convergence)
/// into f; absent fields (older versions) keep their defaults.
void parse_search(const JsonField& planner, PlanFile& f) {
    PlanFileSearch& s = f.search;
    auto count = [](const JsonField& v) { return v.exists() ? v.integer(0) : std::int64_t{0}; };
    if (const JsonField pop = planner["population"]; pop.exists()) {
        const std::size_t n = pop.list("a list of origins");
        for (std::size_t i = 0; i < n; ++i)
            s.population.push_back(pop[i].string());
    }
    s.proposals = count(planner["proposals"]);
    s.accepted = count(planner["accepted"]);
    if (const JsonField p = planner["polish"]; p.exists()) {
        p.object();
        s.polish_evaluations = count(p["evaluations"]);
        s.polish_improvements = count(p["improvements"]);
        s.polish_kicks = p["kicks"].exists() ? static_cast<int>(p["kicks"].integer(0, kIntMax)) : 0;
        s.polish_kicks_kept = p["kicks_kept"].exists() ? static_cast<int>(p["kicks_kept"].integer(0, kIntMax)) : 0;
        s.polish_local_optimum = p["local_optimum"].exists() && p["local_optimum"].boolean();
    }
    if (planner["cancelled"].exists()) f.cancelled = planner["cancelled"].boolean();
    if (const JsonField conv = planner["convergence"]; conv.exists()) {
        const std::size_t n = conv.list("a list of annealing levels");
        for (std::size_t i = 0; i < n; ++i) {
            const JsonField c = conv[i];
            LevelStats l;
            l.level = static_cast<int>(c["level"].integer(0, kIntMax));
            l.temperature = c["temperature"].number();
            l.best = parse_score(c["best"]);
            l.mean_energy = c["mean_energy"].number();
            l.acceptance = c["acceptance"].number();
            l.proposals = c["proposals"].integer(0);
            s.convergence.push_back(l);
        }
    }
}

/// "timings" (seconds per planner stage) into f.timings; absent in plans that never held them.
void parse_timings(const JsonField& t, PlanFile& f) {
    if (!t.given()) return;
    t.object();
    for (const auto& [name, v] : t.json().items()) {
        const double s = t[name].number();
        if (!(s >= 0)) throw InputError(t[name].where() + " is " + util::json_brief(v) + ", not seconds >= 0");
        f.timings[name] = s;
    }
}

/// planner: seed, workers, budgets and (version 6) placement_refinement into f.
void parse_planner(const JsonField& planner, PlanFile& f) {
    planner.object();
    f.seed = planner["seed"].unsigned_integer();
    f.workers = static_cast<int>(planner["workers"].integer(0, 4096));
    {
        // The budget reader's own ranges (core/plan/budgets.h), the one definition of them.
        const JsonField b = planner["budgets"];
        b.object();
        util::check_json_depth(b.json(), b.where()); // printed back to text for parse_planner_budgets
        if (b.json().contains("seed") || b.json().contains("workers"))
            throw InputError(b.where() + ": field '" + std::string(b.json().contains("seed") ? "seed" : "workers") +
                             "' belongs to planner, not planner.budgets");
        if (f.version >= 6) (void)b["placement_rounds"].json(); // "is missing"
        f.budgets = parse_planner_budgets(b.json().dump(), b.where());
        f.budgets.seed = f.seed;
        f.budgets.workers = f.workers;
    }
    if (planner["time_limit_hit"].exists()) f.time_limit_hit = planner["time_limit_hit"].boolean();
    parse_search(planner, f);
    if (f.version < 6) return;
    const JsonField pr = planner["placement_refinement"];
    pr.only({"refined", "rounds_kept", "swaps", "skipped"});
    f.placement_refined = pr["refined"].boolean();
    f.placement_refinement_skipped = pr["skipped"].boolean();
    f.placement_rounds_kept = static_cast<int>(pr["rounds_kept"].integer(0, kIntMax));
    f.placement_swaps = pr["swaps"].integer(0);
    // A refined placement came from kept refinements; a skipped refinement kept none.
    // With a previous placement (version 8) the placement is not LPT whatever the rounds did.
    if ((f.placement_refined && !f.migration.present && (f.placement_rounds_kept == 0 || f.placement_swaps == 0)) ||
        (f.placement_refinement_skipped && (f.placement_refined || f.placement_rounds_kept > 0)))
        throw InputError(pr.where() + ": refined " + pr["refined"].json().dump() + ", rounds_kept " +
                         pr["rounds_kept"].json().dump() + ", swaps " + pr["swaps"].json().dump() + " and skipped " +
                         pr["skipped"].json().dump() + " disagree");
    // Each kept refinement followed one round of the final pass: placement_rounds of them, or
    // more under anytime, which adds rounds until the time limit when there are rounds and a
    // search budget at all.
    const bool more_rounds = f.budgets.anytime && f.budgets.placement_rounds > 0 && f.budgets.polish_evaluations > 0;
    if (!more_rounds && f.placement_rounds_kept > f.budgets.placement_rounds)
        throw InputError(pr.where() + ": rounds_kept " + std::to_string(f.placement_rounds_kept) +
                         " is more than planner.budgets.placement_rounds " +
                         std::to_string(f.budgets.placement_rounds));
}

/// The top-level fields a plan file may hold (plan_to_json writes them; older versions a subset).
constexpr std::array<std::string_view, 23> kPlanFields = {"format",
                                                          "version",
                                                          "inputs",
                                                          "model",
                                                          "moe_layers",
                                                          "topology",
                                                          "planner",
                                                          "placement",
                                                          "samples",
                                                          "row_count",
                                                          "row_count_certified",
                                                          "row_lower_bound",
                                                          "row_count_how",
                                                          "rows",
                                                          "oversize_cells",
                                                          "score",
                                                          "metrics",
                                                          "max_u_lower_bound",
                                                          "baseline_is_fixed_row_ffd",
                                                          "communication",
                                                          "migration",
                                                          "history",
                                                          "timings"};

/// InputError "<origin>: unknown field 'pad' (a plan holds format, version, ...)" for a top-level key
/// no plan writes, found by a scan that does not build the document.
void check_plan_fields(const std::string& text, const std::string& origin) {
    static const std::vector<std::string_view> known(kPlanFields.begin(), kPlanFields.end());
    // Stops at the first unknown key: its value (a pad of any size) is never read.
    const util::JsonTopLevel top = util::json_top_level(text, {}, known);
    if (!top.unknown) return;
    std::string list;
    for (std::string_view k : kPlanFields)
        list += (list.empty() ? "" : ", ") + std::string(k);
    throw InputError(origin + ": unknown field '" + util::printable(*top.unknown) + "' (a plan holds " + list + ")");
}

} // namespace

std::span<const std::string_view> plan_file_fields() {
    return kPlanFields;
}

PlanFile parse_plan(const std::string& text, const std::string& origin) {
    check_plan_fields(text, origin); // before the document is built: an unknown field costs no memory
    const json doc = util::parse_json_document(text, origin);
    if (!doc.is_object()) throw InputError(origin + ": a plan must be a JSON object");
    const JsonField j(doc, origin);
    PlanFile f;
    parse_header(j, f);
    const JsonField topology = j["topology"];
    util::check_json_depth(topology.json(), topology.where()); // printed back to text for parse_topology
    f.topology = parse_topology(topology.json().dump(), topology.where());
    try {
        check_topology_for_model(f.topology, f.model);
    } catch (const InputError& e) {
        throw InputError(origin + ": " + e.what());
    }
    f.placement = parse_placement(j["placement"], f.model, f.topology.ep_ranks);
    const std::unordered_map<std::string, int> index = parse_samples(j["samples"], f);
    // Every row holds D non-empty cells, so there are at most as many rows as samples.
    f.row_count = static_cast<int>(j["row_count"].integer(1, static_cast<std::int64_t>(f.sample_ids.size())));
    if (f.row_count % f.topology.row_multiple != 0)
        throw InputError(origin + ": row_count " + std::to_string(f.row_count) +
                         " is not a multiple of topology.row_multiple " + std::to_string(f.topology.row_multiple));
    f.row_count_certified = j["row_count_certified"].boolean();
    f.row_lower_bound = static_cast<int>(j["row_lower_bound"].integer(0, kIntMax));
    f.row_count_how = string_or_empty(j["row_count_how"]);
    if (j["baseline_is_fixed_row_ffd"].exists()) f.baseline_is_fixed_row_ffd = j["baseline_is_fixed_row_ffd"].boolean();
    if (f.row_lower_bound > f.row_count)
        throw InputError(origin + ": row_lower_bound " + std::to_string(f.row_lower_bound) +
                         " is more than row_count " + std::to_string(f.row_count) +
                         " (a lower bound on the row count cannot exceed a row count that exists)");
    const int D = f.topology.dp_slots;
    f.layout = parse_rows(j["rows"], index, f.row_count, D);
    // Structure: coverage, cap, non-empty, rectangle — with the plan's own lengths.
    PackingProblem shape;
    shape.n = static_cast<int>(f.lengths.size());
    shape.D = D;
    shape.C = effective_token_cap(f.topology, f.lengths);
    shape.length = f.lengths;
    shape.rules = f.topology.batch;
    const std::string bad = validate_layout(f.layout, shape);
    if (!bad.empty()) throw InputError(origin + ": rows: " + bad);
    parse_oversize_cells(j["oversize_cells"], f, shape);
    f.score = parse_score(j["score"]);
    parse_metrics_and_bound(j, f);
    if (f.version >= 5) parse_communication(j["communication"], f, index, shape);
    if (f.version >= 7 && j["migration"].given()) f.migration = parse_plan_migration(j["migration"]);
    if (f.version >= 10 && j["history"].given()) f.history = parse_history(j["history"], f.model);
    parse_planner(j["planner"], f);
    if (f.history && f.history->decay != f.budgets.history_decay)
        throw InputError(j["history"]["decay"].where() + " is " + j["history"]["decay"].json().dump() +
                         ", not the plan's planner.budgets.history_decay " +
                         nlohmann::json(f.budgets.history_decay).dump());
    // Files from before metrics named their placement: routepack's is the refined one when refined.
    if (!j["metrics"]["routepack"]["placement"].exists() && f.placement_refined)
        f.metrics[Method::RoutePack]->placement = PlacementKind::Refined;
    parse_timings(j["timings"], f);
    return f;
}

namespace {

/// The planner's deterministic stages 1-3 (placement, R*, the three baselines) on the plan's window
/// with the plan's seed, workers and row_nodes: a planner cancelled before it starts stops right
/// after the baselines.
PlanResult plan_baselines(const PlanFile& plan, const Trace& window) {
    PlanInput in;
    in.window = window;
    in.trace_name = plan.trace_name;
    in.window_name = plan.window_name;
    in.topology = plan.topology;
    in.budgets = plan.budgets;
    in.budgets.seed = plan.seed;
    in.budgets.workers = std::max(1, plan.workers);
    in.budgets.time_limit_s = 0;
    in.budgets.anytime = false;
    const std::atomic<bool> stop{true};
    PlanResult r = plan_window(in, {}, &stop);
    r.cancelled = false;
    r.timings.clear();
    return r;
}

/// The first field of `got` (recomputed) that differs from `want` (stored), as "metrics.<name>.<field>
/// is <stored> in the plan, <recomputed> recomputed"; "" when all are equal.
std::string metrics_difference(const std::string& name, const LayoutMetrics& want, const LayoutMetrics& got) {
    const auto num = [](double v) { return nlohmann::json(v).dump(); };
    const auto diff = [&](const char* field, const std::string& a, const std::string& b) {
        return "metrics." + name + "." + field + " is " + a + " in the plan, " + b + " recomputed";
    };
    if (!(want.score == got.score)) return diff("score", score_json(want.score).dump(), score_json(got.score).dump());
    if (want.cv_global != got.cv_global) return diff("cv_global", num(want.cv_global), num(got.cv_global));
    if (want.ep_peak_sum != got.ep_peak_sum)
        return diff("ep_peak_sum", std::to_string(want.ep_peak_sum), std::to_string(got.ep_peak_sum));
    if (want.ep_tail_peak != got.ep_tail_peak)
        return diff("ep_tail_peak", std::to_string(want.ep_tail_peak), std::to_string(got.ep_tail_peak));
    if (want.ep_balance_efficiency != got.ep_balance_efficiency)
        return diff("ep_balance_efficiency", num(want.ep_balance_efficiency), num(got.ep_balance_efficiency));
    if (want.attention_sum != got.attention_sum)
        return diff("attention_sum", num(want.attention_sum), num(got.attention_sum));
    if (want.joint != got.joint) return diff("joint", num(want.joint), num(got.joint));
    if (want.cap_violations != got.cap_violations)
        return diff("cap_violations", std::to_string(want.cap_violations), std::to_string(got.cap_violations));
    if (want.empty_cells != got.empty_cells)
        return diff("empty_cells", std::to_string(want.empty_cells), std::to_string(got.empty_cells));
    return {};
}

/// rescore_plan, handing the recomputed baselines (plan_baselines) to `baselines` when it got that far.
std::string rescore_plan_with(const PlanFile& plan, const Trace& window, PlanResult* baselines) {
    if (window.size() != plan.sample_ids.size())
        return "window has " + std::to_string(window.size()) + " samples, plan has " +
               std::to_string(plan.sample_ids.size());
    for (std::size_t i = 0; i < window.size(); ++i) {
        if (window.samples[i].id != plan.sample_ids[i])
            return "sample " + std::to_string(i) + " is '" + window.samples[i].id + "' in the trace, '" +
                   plan.sample_ids[i] + "' in the plan";
        if (window.samples[i].length != plan.lengths[i])
            return "sample '" + plan.sample_ids[i] + "' has length " + std::to_string(window.samples[i].length) +
                   " in the trace, " + std::to_string(plan.lengths[i]) + " in the plan";
    }
    if (window.model.experts != plan.model.experts || window.model.moe_layers != plan.model.moe_layers)
        return "the trace's model (experts, MoE layers) differs from the plan's";
    const std::string fp = plan.version >= 3 ? window_fingerprint(window) : window_fingerprint_fnv(window);
    if (!plan.fingerprint.empty() && fp != plan.fingerprint)
        return "routing counts differ from the plan's inputs (fingerprint " + fp + " != " + plan.fingerprint + ")";
    const auto loads =
        aggregate_expert_loads(window.counts, window.size(), window.model.num_moe_layers(), window.model.experts);
    const bool lpt =
        lpt_placement(loads, plan.placement.layers, plan.placement.experts, plan.placement.ep_ranks) == plan.placement;
    if (plan.migration.present) {
        // A placement from a previous one (version 7) is neither LPT nor LPT refined.
    } else if (plan.version >= 6) {
        // Version 6 says whether its placement is LPT's (Algorithm 1, recomputed here) or refined.
        if (lpt == plan.placement_refined)
            return std::string("placement_refinement.refined is ") + (plan.placement_refined ? "true" : "false") +
                   " but the placement " + (lpt ? "is" : "is not") + " the window's LPT placement";
    } else if (!lpt) {
        return "the placement is not the window's LPT placement (plan version " + std::to_string(plan.version) +
               " has no refined placement; refined placements came with version 6)";
    }
    const PackingProblem p = make_packing_problem(window, plan.topology, plan.placement);
    std::string bad = validate_layout(plan.layout, p);
    if (!bad.empty()) return bad;
    const LayoutMetrics& want = plan.metrics_of(Method::RoutePack);
    const double cv = cv_global(rank_loads(loads, plan.placement), plan.placement.layers, plan.placement.ep_ranks);
    if (cv != want.cv_global) return "rescored CV_global differs from the plan's";
    const LayoutMetrics got = layout_metrics(plan.layout, p, cv);
    auto same = [](double a, double b) { return a == b; };
    if (!(got.score == plan.score))
        return "rescored score differs from the plan's (" + std::to_string(got.score.max_u) + " vs " +
               std::to_string(plan.score.max_u) + ")";
    if (got.ep_peak_sum != want.ep_peak_sum || got.ep_tail_peak != want.ep_tail_peak ||
        !same(got.attention_sum, want.attention_sum) || !same(got.ep_balance_efficiency, want.ep_balance_efficiency))
        return "rescored metrics differ from the plan's";
    if (plan.has_bound) {
        const MaxULowerBound b = max_u_lower_bound(p);
        if (b.value != plan.bound.value || b.mean != plan.bound.mean || b.sample != plan.bound.sample)
            return "recomputed max_u_lower_bound differs from the plan's (" + std::to_string(b.value) + " vs " +
                   std::to_string(plan.bound.value) + ")";
    }
    // The baselines, on the same window and R* (DESIGN.md "Baselines").
    PlanResult r = plan_baselines(plan, window);
    if (r.rows.rows != plan.row_count)
        return "the recomputed row count R* is " + std::to_string(r.rows.rows) + ", the plan's row_count " +
               std::to_string(plan.row_count);
    for (const MethodResult* m : {&r.baseline, &r.reorder, &r.karmarkar_karp})
        if (const auto& stored = plan.metrics[m->method])
            if (std::string d = metrics_difference(m->key(), stored->metrics, m->metrics); !d.empty()) return d;
    if (baselines) *baselines = std::move(r);
    return {};
}

} // namespace

std::string rescore_plan(const PlanFile& plan, const Trace& window) {
    return rescore_plan_with(plan, window, nullptr);
}

PlanResult restore_plan(const PlanFile& plan, const Trace& window, const std::string& origin) {
    // The planner's stages 1-3 (placement, R*, the three baselines), recomputed while rescoring:
    // exactly the deterministic part a saved plan needs around its own layout.
    PlanResult r;
    if (const std::string bad = rescore_plan_with(plan, window, &r); !bad.empty())
        throw InputError(origin + ": the saved plan does not match its window (" + bad + ")");
    if (!(r.placement.routepack == plan.placement)) {
        // The saved placement is routepack's (the LPT placement, refined for its layout from plan
        // version 6); the rank loads, CV and bound follow it. LPT itself is recomputed above.
        r.placement.routepack = plan.placement;
        const auto loads =
            aggregate_expert_loads(window.counts, window.size(), window.model.num_moe_layers(), window.model.experts);
        r.placement.rank_loads_routepack = rank_loads(loads, r.placement.routepack);
        r.placement.cv_routepack =
            cv_global(r.placement.rank_loads_routepack, r.placement.routepack.layers, r.placement.routepack.ep_ranks);
        r.bound = max_u_lower_bound(make_packing_problem(window, plan.topology, r.placement.routepack));
    }
    r.rows.rows = plan.row_count;
    r.rows.certified = plan.row_count_certified;
    r.rows.lower_bound = plan.row_lower_bound;
    r.routepack.layout = plan.layout;
    r.routepack.placement = r.placement_refined() ? PlacementKind::Refined : PlacementKind::Lpt;
    r.placement.swaps = plan.placement_swaps;
    r.placement.rounds_kept = plan.placement_rounds_kept;
    r.placement.refinement_skipped = plan.placement_refinement_skipped;
    auto method = [&](Method name, PlacementKind placement, const Layout& x) {
        MethodResult m;
        m.method = name;
        m.placement = placement;
        m.layout = x;
        return m;
    };
    const PlanFileComm& c = plan.comm;
    if (c.has_grouter) {
        r.comm.grouter = method(Method::Grouter, PlacementKind::Grouter, c.grouter_layout);
        r.comm.grouter_placement = c.grouter_placement;
        r.comm.grouter_off_node = c.grouter_off_node;
        r.comm.grouter_fitted = c.grouter_fitted;
    }
    if (c.has_comm_method) {
        r.comm.routepack_comm = method(Method::RoutePackComm, PlacementKind::Comm, c.comm_layout);
        r.comm.routepack_comm->comm_score = c.comm_search_score;
        r.comm.comm_placement = c.comm_placement;
    }
    // Communication figures are recomputed from the routes (exact integers, deterministic); a
    // window without routes keeps them unset (shown as n/a).
    if (r.comm.nodes > 1 && r.comm.available) {
        const std::vector<int> slot_node = plan.topology.node_of_dp_slot();
        // Every method's placement in one pass over the routes: identity, LPT, routepack's, then
        // grouter's and routepack+comm's when the plan has them.
        std::vector<const Placement*> placed = {&r.placement.identity, &r.placement.lpt, &r.placement.routepack};
        if (r.comm.grouter) placed.push_back(&r.comm.grouter_placement);
        if (r.comm.routepack_comm) placed.push_back(&r.comm.comm_placement);
        const std::vector<CommDemand> d = make_comm_demands(window, plan.topology, placed);
        r.baseline.comm = comm_cost(r.baseline.layout, d[0], slot_node);
        for (MethodResult* m : {&r.reorder, &r.karmarkar_karp})
            m->comm = comm_cost(m->layout, d[1], slot_node);
        r.routepack.comm = comm_cost(r.routepack.layout, d[2], slot_node);
        std::size_t next = 3;
        if (r.comm.grouter) r.comm.grouter->comm = comm_cost(r.comm.grouter->layout, d[next++], slot_node);
        if (r.comm.routepack_comm)
            r.comm.routepack_comm->comm = comm_cost(r.comm.routepack_comm->layout, d[next++], slot_node);
    }
    for (MethodResult* m : {&r.baseline, &r.reorder, &r.karmarkar_karp, &r.routepack})
        if (const auto& stored = plan.metrics[m->method]) m->metrics = stored->metrics;
    for (auto* m : {&r.comm.grouter, &r.comm.routepack_comm})
        if (*m)
            if (const auto& stored = plan.metrics[(*m)->method]) (*m)->metrics = stored->metrics;
    return r;
}

} // namespace routepack

namespace routepack {

PlanResult plan_of_file(const PlanFile& plan) {
    PlanResult r;
    r.model = plan.model;
    r.topology = plan.topology;
    r.budgets = plan.budgets;
    r.budgets.seed = plan.seed;
    r.budgets.workers = plan.workers;
    r.trace_name = plan.trace_name;
    r.window_name = plan.window_name;
    r.fingerprint = plan.fingerprint;
    r.samples.resize(plan.sample_ids.size());
    for (std::size_t i = 0; i < r.samples.size(); ++i) {
        r.samples[i].id = plan.sample_ids[i];
        r.samples[i].length = plan.lengths[i];
    }
    r.rows.rows = plan.row_count;
    r.rows.certified = plan.row_count_certified;
    r.rows.lower_bound = plan.row_lower_bound;
    r.rows.how = "read from the plan file";
    if (plan.has_bound) r.bound = plan.bound;
    const Placement& p = plan.placement;
    r.placement.identity = identity_placement(p.layers, p.experts, p.ep_ranks);
    r.placement.routepack = p;
    if (!plan.placement_refined) r.placement.lpt = p;
    r.placement.swaps = plan.placement_swaps;
    r.placement.rounds_kept = plan.placement_rounds_kept;
    r.placement.refinement_skipped = plan.placement_refinement_skipped;
    auto method = [&](MethodResult& m, Method name, PlacementKind kind) {
        m.method = name;
        m.placement = kind;
        if (const auto& stored = plan.metrics[name]) m.metrics = stored->metrics;
    };
    method(r.baseline, Method::Baseline, PlacementKind::Identity);
    method(r.reorder, Method::Reorder, PlacementKind::Lpt);
    method(r.karmarkar_karp, Method::KarmarkarKarp, PlacementKind::Lpt);
    method(r.routepack, Method::RoutePack, plan.placement_refined ? PlacementKind::Refined : PlacementKind::Lpt);
    r.routepack.layout = plan.layout;
    const PlanFileComm& c = plan.comm;
    r.comm.nodes = plan.topology.nodes();
    r.comm.available = false;
    if (c.has_grouter) {
        r.comm.grouter.emplace();
        method(*r.comm.grouter, Method::Grouter, PlacementKind::Grouter);
        r.comm.grouter->layout = c.grouter_layout;
        r.comm.grouter_placement = c.grouter_placement;
        r.comm.grouter_off_node = c.grouter_off_node;
        r.comm.grouter_fitted = c.grouter_fitted;
    }
    if (c.has_comm_method) {
        r.comm.routepack_comm.emplace();
        method(*r.comm.routepack_comm, Method::RoutePackComm, PlacementKind::Comm);
        r.comm.routepack_comm->layout = c.comm_layout;
        r.comm.routepack_comm->comm_score = c.comm_search_score;
        r.comm.comm_placement = c.comm_placement;
    }
    r.time_limit_hit = plan.time_limit_hit;
    return r;
}

} // namespace routepack
