#include "app/cli_report.h"

#include "app/cli_common.h"
#include "core/model/route_counts.h"
#include "core/plan/budgets.h"
#include "core/plan/plan_file.h"
#include "core/plan/score/bound.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <set>

namespace routepack::cli {

namespace {

double median(std::vector<std::int64_t> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? static_cast<double>(v[n / 2]) : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

nlohmann::json trace_json(const storage::Library& lib, const storage::TraceEntry& t, bool detail) {
    nlohmann::json j;
    j["name"] = t.name;
    j["format"] = t.format;
    j["load_only"] = t.load_only;
    j["samples"] = t.samples;
    j["model"] = {{"name", t.model.name},
                  {"num_hidden_layers", t.model.num_hidden_layers},
                  {"experts", t.model.experts},
                  {"top_k", t.model.top_k},
                  {"moe_layers", t.model.moe_layers}};
    j["fingerprint"] = t.fingerprint;
    j["imported_at"] = t.imported_at;
    if (!t.load_only) {
        std::vector<std::int64_t> lengths;
        std::int64_t sum = 0;
        std::set<std::string> groups;
        for (const auto& s : lib.samples(t.name)) {
            lengths.push_back(s.length);
            sum += s.length;
            if (!s.group.empty()) groups.insert(s.group);
        }
        if (!lengths.empty())
            j["length"] = {{"min", *std::min_element(lengths.begin(), lengths.end())},
                           {"mean", static_cast<double>(sum) / lengths.size()},
                           {"median", median(lengths)},
                           {"max", *std::max_element(lengths.begin(), lengths.end())},
                           {"total", sum}};
        j["groups"] = groups.size();
    }
    const auto totals = lib.layer_totals(t.name);
    const auto cv = layer_load_cv(totals, t.model.num_moe_layers(), t.model.experts);
    if (!cv.empty()) {
        j["layer_load_cv"] = {{"mean", std::accumulate(cv.begin(), cv.end(), 0.0) / cv.size()},
                              {"max", *std::max_element(cv.begin(), cv.end())}};
        if (detail) {
            nlohmann::json per = nlohmann::json::array();
            for (std::size_t l = 0; l < cv.size(); ++l)
                per.push_back({{"layer", t.model.moe_layers[l]}, {"cv", cv[l]}});
            j["layer_load_cv"]["per_layer"] = per;
        }
    }
    nlohmann::json wins = nlohmann::json::array();
    for (const auto& w : lib.windows(t.name))
        wins.push_back({{"name", w.name}, {"samples", w.samples}, {"definition", w.definition}});
    j["windows"] = wins;
    return j;
}

void print_trace_text(const nlohmann::json& j, bool detail) {
    const auto text = [&j](const char* key) { return shown(j[key].get<std::string>()); };
    std::cout << "trace " << text("name") << "  (" << text("format")
              << (j["load_only"].get<bool>() ? ", load-only" : "") << ")\n";
    const auto& m = j["model"];
    std::cout << "  model     " << (m["name"].get<std::string>().empty() ? "-" : shown(m["name"].get<std::string>()))
              << ": " << m["moe_layers"].size() << " MoE layers ("
              << format_layer_list(m["moe_layers"].get<std::vector<int>>()) << " of "
              << m["num_hidden_layers"].get<int>() << "), " << m["experts"].get<int>() << " experts, top-"
              << m["top_k"].get<int>() << "\n";
    std::cout << "  samples   " << j["samples"].get<std::size_t>();
    if (j.contains("groups") && j["groups"].get<std::size_t>() > 0) std::cout << " in " << j["groups"] << " groups";
    std::cout << "\n";
    if (j.contains("length")) {
        const auto& l = j["length"];
        std::cout << "  length    min " << l["min"] << "  mean " << fmt("%.1f", l["mean"].get<double>()) << "  median "
                  << fmt("%.1f", l["median"].get<double>()) << "  max " << l["max"] << "  total " << l["total"]
                  << " tokens\n";
    }
    if (j.contains("layer_load_cv")) {
        const auto& c = j["layer_load_cv"];
        std::cout << "  load CV   mean " << fmt("%.3f", c["mean"].get<double>()) << "  max "
                  << fmt("%.3f", c["max"].get<double>()) << "  (per MoE layer, over experts)\n";
        if (detail && c.contains("per_layer")) {
            int n = 0;
            for (const auto& p : c["per_layer"]) {
                std::cout << (n % 8 == 0 ? "    " : "  ") << "L" << p["layer"].get<int>() << " "
                          << fmt("%.3f", p["cv"].get<double>());
                if (++n % 8 == 0) std::cout << "\n";
            }
            if (n % 8) std::cout << "\n";
        }
    }
    for (const auto& w : j["windows"])
        std::cout << "  window    " << shown(w["name"].get<std::string>()) << ": " << w["samples"] << " samples ("
                  << shown(w["definition"].get<std::string>()) << ")\n";
}

std::string pct(double from, double to) {
    if (from == 0) return to == 0 ? "+0.00%" : "n/a";
    return fmt("%+.2f%%", 100.0 * (to - from) / from);
}

/// Why a plan on more than one node has no communication figures.
std::string comm_note(const PlanResult& r) {
    return r.comm.available ? "n/a (not computed: the plan was cancelled)" : kCommUnavailable;
}

nlohmann::json compare_json(const PlanResult& r) {
    nlohmann::json j;
    j["trace"] = r.trace_name;
    j["window"] = r.window_name;
    j["samples"] = r.samples.size();
    j["row_count"] = r.rows.rows;
    j["row_count_certified"] = r.rows.certified;
    j["row_lower_bound"] = r.rows.lower_bound;
    nlohmann::json methods;
    for (const MethodResult* m : r.methods()) {
        const auto& x = m->metrics;
        methods[m->key()] = {{"placement", placement_key(m->placement)},
                             {"score", {x.score.max_u, x.score.sum_u, x.score.max_j}},
                             {"cv_global", x.cv_global},
                             {"ep_peak_sum", x.ep_peak_sum},
                             {"ep_tail_peak", x.ep_tail_peak},
                             {"ep_balance_efficiency", x.ep_balance_efficiency},
                             {"attention_sum", x.attention_sum},
                             {"joint", x.joint},
                             {"cap_violations", x.cap_violations},
                             {"empty_cells", x.empty_cells}};
        if (r.comm.nodes > 1)
            methods[m->key()]["communication"] = m->comm
                                                     ? nlohmann::json{{"inter_node_copies", m->comm->inter_total},
                                                                      {"intra_node_copies", m->comm->intra_total},
                                                                      {"busiest_node_copies", m->comm->busiest_total}}
                                                     : nlohmann::json(comm_note(r));
    }
    j["methods"] = methods;
    j["nodes"] = r.comm.nodes;
    if (r.comm.grouter) {
        nlohmann::json off = nlohmann::json::array();
        for (int i : r.comm.grouter_off_node)
            off.push_back(r.samples[static_cast<std::size_t>(i)].id);
        j["grouter_off_node"] = off;
    }
    auto change = [](const LayoutMetrics& a, const LayoutMetrics& b) {
        auto rel = [](double x, double y) { return x == 0 ? 0.0 : 100.0 * (y - x) / x; };
        return nlohmann::json{{"joint_pct", rel(a.joint, b.joint)},
                              {"ep_peak_sum_pct", rel(double(a.ep_peak_sum), double(b.ep_peak_sum))},
                              {"ep_tail_peak_pct", rel(double(a.ep_tail_peak), double(b.ep_tail_peak))},
                              {"ep_balance_efficiency", {a.ep_balance_efficiency, b.ep_balance_efficiency}},
                              {"attention_pct", rel(a.attention_sum, b.attention_sum)}};
    };
    j["max_u_lower_bound"] = {{"value", r.bound.value},
                              {"mean", r.bound.mean},
                              {"sample", r.bound.sample},
                              {"gap", bound_gap(r.routepack.metrics.score.max_u, r.bound.value)}};
    if (r.bound_any_placement.value > 0)
        j["max_u_lower_bound_any_placement"] = {
            {"value", r.bound_any_placement.value},
            {"mean", r.bound_any_placement.mean},
            {"sample", r.bound_any_placement.sample},
            {"gap", bound_gap(r.routepack.metrics.score.max_u, r.bound_any_placement.value)}};
    if (r.migration.has_previous) j["migration"] = nlohmann::json::parse(plan_migration_json(r));
    if (!r.migration.note.empty()) j["migration_note"] = r.migration.note;
    j["routepack_vs_reorder"] = change(r.reorder.metrics, r.routepack.metrics);
    j["routepack_vs_baseline"] = change(r.baseline.metrics, r.routepack.metrics);
    j["routepack_vs_karmarkar_karp"] = change(r.karmarkar_karp.metrics, r.routepack.metrics);
    j["planner"] = {{"seconds", r.timings.count("total") ? r.timings.at("total") : 0.0},
                    {"proposals", r.search.proposals},
                    {"placement_refinement",
                     {{"refined", r.placement_refined()},
                      {"rounds_kept", r.placement.rounds_kept},
                      {"swaps", r.placement.swaps},
                      {"skipped", r.placement.refinement_skipped}}},
                    {"cancelled", r.cancelled},
                    {"time_limit_hit", r.time_limit_hit}};
    return j;
}

/// The batch rules for the comparison's first line: "" when free, else ("; samples_per_dp_slot 128,
/// oversize alone"); without a cap, the C that normalizes the cost model (effective_token_cap).
std::string batch_rules_text(const PlanResult& r) {
    const BatchRules& b = r.topology.batch;
    if (b.free()) return {};
    std::string out;
    auto add = [&](const std::string& part) { out += (out.empty() ? "; " : ", ") + part; };
    if (r.topology.token_cap == 0) {
        std::vector<std::int64_t> length;
        for (const auto& s : r.samples)
            length.push_back(s.length);
        add("no cap: C = " + std::to_string(effective_token_cap(r.topology, length)) + " (the " +
            std::to_string(b.samples_per_cell) + " longest samples)");
    }
    if (b.samples_per_dp_slot) add("samples_per_dp_slot " + std::to_string(b.samples_per_dp_slot));
    if (b.samples_per_cell) add("samples_per_cell " + std::to_string(b.samples_per_cell));
    if (b.max_samples_per_cell) add("max_samples_per_cell " + std::to_string(b.max_samples_per_cell));
    if (b.oversize == Oversize::Alone) add("oversize alone");
    return out;
}

/// The moves from the previous placement (PlanMigration) in two or three lines, or the note saying
/// why a budget or cost model was ignored.
void print_migration(const PlanResult& r) {
    const PlanMigration& m = r.migration;
    if (!m.note.empty()) std::cout << "note: " << m.note << "\n";
    if (!m.has_previous) return;
    const MigrationFigures& f = m.figures;
    const std::int64_t all = static_cast<std::int64_t>(m.previous.layers) * m.previous.experts;
    std::cout << "experts moved from the previous placement " << m.previous_fingerprint << ": " << f.moved << " of "
              << all << " (" << f.intra_moves << " within a node, " << f.inter_moves << " across nodes; budget "
              << (m.max_moves >= 0 ? std::to_string(m.max_moves) : std::string("unlimited")) << "; objective "
              << (m.costed ? "modelled step time" : "the paper's score") << ")\n";
    if (m.cost.expert_bytes <= 0) {
        std::cout << "  bytes and seconds unknown: the model's expert size is not known (give the topology a "
                     "migration section with expert_parameters)\n";
        return;
    }
    std::cout << "  " << fmt("%.3f", f.bytes / 1e9) << " GB moved (" << fmt("%.1f", m.cost.expert_bytes / 1e6)
              << " MB per expert); "
              << (f.busiest_rank >= 0 ? "busiest EP rank " + std::to_string(f.busiest_rank) + ": " +
                                            fmt("%.3f", f.busiest_intra_bytes / 1e9) + " GB in+out within its node, " +
                                            fmt("%.3f", f.busiest_inter_bytes / 1e9) + " GB across nodes, "
                                      : std::string("no EP rank sends or receives, "))
              << "materialization " << fmt("%.4f", f.seconds) << " s\n";
    std::cout << "  modelled step: compute " << fmt("%.4f", m.compute_seconds) << " s (seconds_per_U "
              << fmt("%.4g", m.cost.seconds_per_U) << (m.seconds_per_U_derived ? ", derived" : ", given")
              << ") + materialization " << fmt("%.4f", f.seconds) << " s"
              << (m.cost.plan_seconds > 0 ? std::string(m.cost.overlap_planning ? " overlapped with" : " +") +
                                                " planning " + fmt("%.4f", m.cost.plan_seconds) + " s"
                                          : std::string())
              << " = " << fmt("%.4f", m.compute_seconds + step_overhead_seconds(m.cost, f.seconds)) << " s"
              << (r.topology.has_migration ? "" : " (default cost model)") << "\n";
}

} // namespace

void print_comparison(const PlanResult& r) {
    const auto& t = r.topology;
    std::cout << "window " << (r.window_name.empty() ? std::string("(whole trace)") : "'" + shown(r.window_name) + "'")
              << " of '" << shown(r.trace_name) << "': " << r.samples.size() << " samples; " << t.ep_ranks
              << " EP ranks, " << t.dp_slots << " DP slots in " << t.shards() << " EDP shards, cap C = " << t.token_cap
              << batch_rules_text(r)
              << (t.expert_invocation_tokens > 0
                      ? ", " + std::to_string(t.expert_invocation_tokens) + " tokens per expert invocation"
                      : std::string())
              << "\n";
    std::cout << "rows: " << r.rows.how << "; lower bound " << r.rows.lower_bound << "\n";
    if (r.baseline_not_ffd)
        std::cout << "note: FixedRowFFD cannot fill R* rows; baseline and reorder use the row-count search's layout\n";
    std::cout << "CV_global: identity " << fmt("%.4f", r.placement.cv_identity) << " -> LPT "
              << fmt("%.4f", r.placement.cv_lpt);
    if (r.placement_refined())
        std::cout << " -> refined for routepack's layout " << fmt("%.4f", r.placement.cv_routepack) << " ("
                  << r.placement.swaps << " expert swaps)";
    if (r.placement.refinement_skipped) std::cout << " (refinement skipped: problem too large)";
    std::cout << "\n";
    std::printf("%-15s %9s %12s %12s %10s %12s %10s %8s %12s %5s\n", "method", "placement", "max_g U", "sum_g U",
                "max J", "S_EP", "T_EP", "eta_EP", "attention", "cap!");
    for (const MethodResult* m : r.methods()) {
        const auto& x = m->metrics;
        std::printf("%-15s %9s %12.4f %12.4f %10.4f %12lld %10lld %8.4f %12.4f %5d\n", m->key(),
                    placement_key(m->placement), x.score.max_u, x.score.sum_u, x.score.max_j,
                    static_cast<long long>(x.ep_peak_sum), static_cast<long long>(x.ep_tail_peak),
                    x.ep_balance_efficiency, x.attention_sum, x.cap_violations + x.empty_cells);
    }
    std::fflush(stdout);
    auto line = [&](const char* label, const LayoutMetrics& a, const LayoutMetrics& b) {
        std::cout << label << ": joint " << pct(a.joint, b.joint) << "  S_EP "
                  << pct(double(a.ep_peak_sum), double(b.ep_peak_sum)) << "  T_EP "
                  << pct(double(a.ep_tail_peak), double(b.ep_tail_peak)) << "  eta_EP "
                  << fmt("%.3f", a.ep_balance_efficiency) << " -> " << fmt("%.3f", b.ep_balance_efficiency)
                  << "  attention " << pct(a.attention_sum, b.attention_sum) << "\n";
    };
    std::cout << "lower bound on max_g U at this placement: " << fmt("%.4f", r.bound.value) << " (mean bound "
              << fmt("%.4f", r.bound.mean) << ", largest sample " << fmt("%.4f", r.bound.sample) << "); routepack is "
              << fmt("%.2f%%", 100.0 * bound_gap(r.routepack.metrics.score.max_u, r.bound.value)) << " above it\n";
    if (r.bound_any_placement.value > 0)
        std::cout << "lower bound on max_g U over every placement: " << fmt("%.4f", r.bound_any_placement.value)
                  << " (mean bound " << fmt("%.4f", r.bound_any_placement.mean) << ", largest sample "
                  << fmt("%.4f", r.bound_any_placement.sample) << "); routepack is "
                  << fmt("%.2f%%", 100.0 * bound_gap(r.routepack.metrics.score.max_u, r.bound_any_placement.value))
                  << " above it\n";
    line("routepack vs reorder       ", r.reorder.metrics, r.routepack.metrics);
    line("routepack vs baseline      ", r.baseline.metrics, r.routepack.metrics);
    line("routepack vs karmarkar_karp", r.karmarkar_karp.metrics, r.routepack.metrics);
    print_migration(r);
    if (r.comm.nodes > 1) {
        std::cout << "communication over " << r.comm.nodes
                  << " nodes (inter-node token copies, de-duplicated per node; "
                  << "comm_weight " << fmt("%g", r.topology.comm_weight) << "):\n";
        if (!r.routepack.comm) {
            std::cout << "  " << comm_note(r) << "\n";
        } else {
            const double ref = static_cast<double>(r.routepack.comm->inter_total);
            std::printf("  %-15s %14s %14s %14s %10s\n", "method", "inter-node", "intra-node", "busiest node",
                        "vs routepack");
            for (const MethodResult* m : r.methods())
                if (m->comm)
                    std::printf(
                        "  %-15s %14lld %14lld %14lld %10s\n", m->key(), static_cast<long long>(m->comm->inter_total),
                        static_cast<long long>(m->comm->intra_total), static_cast<long long>(m->comm->busiest_total),
                        pct(ref, static_cast<double>(m->comm->inter_total)).c_str());
            if (r.comm.grouter)
                std::cout << "  grouter: " << r.comm.grouter_off_node.size() << " of " << r.samples.size()
                          << " samples placed off their node"
                          << (r.comm.grouter_fitted ? "" : " (node packing failed; the FFD layout is used)") << "\n";
        }
    }
    if (r.karmarkar_karp.metrics.cap_violations > 0)
        std::cout << "note: karmarkar_karp puts " << r.karmarkar_karp.metrics.cap_violations
                  << " cell(s) over the cap C (reported, still scored)\n";
    std::cout << "planner: " << fmt("%.3f", r.timings.count("total") ? r.timings.at("total") : 0.0) << " s, "
              << r.search.proposals << " proposals, " << r.search.accepted << " accepted, polish "
              << r.search.polish_improvements << "/" << r.search.polish_evaluations << ", "
              << r.search.polish_kicks_kept << "/" << r.search.polish_kicks << " kicks kept"
              << (r.search.polish_local_optimum ? " (local optimum)" : "")
              << (r.cancelled ? ", CANCELLED (best valid plan so far)" : "")
              << (r.time_limit_hit ? ", time limit hit" : "") << "\n";
}

void print_comparison_json(const PlanResult& r) {
    std::cout << compare_json(r).dump(2) << "\n";
}

namespace {

/// An imported cluster run as `info --json` lists it.
nlohmann::json cluster_run_json(const storage::ClusterRunEntry& r) {
    nlohmann::json chains = nlohmann::json::array();
    for (const auto& c : r.chains)
        chains.push_back({{"name", c.name},
                          {"ep_ranks", c.topology.ep_ranks},
                          {"dp_slots", c.topology.dp_slots},
                          {"nodes", c.topology.nodes()}});
    return {{"id", r.id},
            {"trace", r.trace},
            {"out", r.out.string()},
            {"steps", r.steps},
            {"chains", chains},
            {"planned", r.planned},
            {"failed", r.failed},
            {"seed", r.seed},
            {"previous", r.previous},
            {"imported_at", r.imported_at}};
}

/// One line: "cluster run 1 'ds': 10 steps x 2 chains: ep8 (EP8/DP4), ep16 (EP16/DP8, 2 nodes); 20
/// planned, 0 failed; from OUT".
void print_cluster_run(const nlohmann::json& r) {
    std::cout << "cluster run " << r["id"] << " '" << shown(r["trace"].get<std::string>()) << "': " << r["steps"]
              << " steps x " << r["chains"].size() << " chains: ";
    bool first = true;
    for (const auto& c : r["chains"]) {
        std::cout << (first ? "" : ", ") << shown(c["name"].get<std::string>()) << " (EP" << c["ep_ranks"] << "/DP"
                  << c["dp_slots"];
        if (c["nodes"].get<int>() > 1) std::cout << ", " << c["nodes"] << " nodes";
        std::cout << ")";
        first = false;
    }
    std::cout << "; " << r["planned"] << " planned, " << r["failed"] << " failed; from "
              << shown_path(r["out"].get<std::string>()) << "\n";
}

/// The budgets of `b` that differ from PlannerBudgets{} (workers left out: a machine's setting, not the
/// run's), as the budgets JSON writes them: {"max_moves": 166, "levels": 40}.
nlohmann::json budgets_set(const PlannerBudgets& b) {
    const PlannerBudgets defaults;
    nlohmann::json out = nlohmann::json::object();
    for (const BudgetRow& row : budget_table()) {
        if (std::string(row.key) == "workers" || !budget_written(row, b)) continue;
        const std::string v = budget_value_text(row, b);
        if (budget_written(row, defaults) && v == budget_value_text(row, defaults)) continue;
        out[row.key] = nlohmann::json::parse(v);
    }
    return out;
}

/// A whole run as `info --json` lists it.
nlohmann::json whole_run_json(const storage::WholeRunEntry& w) {
    nlohmann::json j = {{"id", w.id},
                        {"name", w.name},
                        {"source", storage::whole_run_source_key(w.source)},
                        {"trace", w.trace},
                        {"topology", w.topology},
                        {"ep_ranks", w.topology_value.ep_ranks},
                        {"dp_slots", w.topology_value.dp_slots},
                        {"nodes", w.topology_value.nodes()},
                        {"steps", w.steps},
                        {"seed", w.settings.seed},
                        {"budgets", budgets_set(w.settings.budgets)},
                        {"start", w.settings.start},
                        {"chained", w.settings.chained},
                        {"runs", w.runs},
                        {"created_at", w.created_at}};
    if (w.cluster_run > 0) {
        j["cluster_run"] = w.cluster_run;
        j["cluster_chain"] = w.cluster_chain;
    }
    return j;
}

/// One line: "whole run 2 'b166': sweep of trace 'ds' on ds-ep8 (EP8/DP4), 5 steps, seed 7, max_moves
/// 166, chained from identity; runs 6..10" (a cluster chain: "; cluster run 1, chain ep8").
void print_whole_run(const nlohmann::json& w) {
    const std::string name = w["name"].get<std::string>();
    std::cout << "whole run " << w["id"] << (name.empty() ? std::string() : " '" + shown(name) + "'") << ": "
              << w["source"].get<std::string>() << " of trace '" << shown(w["trace"].get<std::string>()) << "' on "
              << shown(w["topology"].get<std::string>()) << " (EP" << w["ep_ranks"] << "/DP" << w["dp_slots"];
    if (w["nodes"].get<int>() > 1) std::cout << ", " << w["nodes"] << " nodes";
    std::cout << "), " << w["steps"] << (w["steps"].get<std::size_t>() == 1 ? " step" : " steps") << ", seed "
              << w["seed"];
    for (const auto& [key, value] : w["budgets"].items())
        std::cout << ", " << key << " " << value.dump();
    std::cout << ", " << (w["chained"].get<bool>() ? "chained" : "not chained") << " from "
              << shown(w["start"].get<std::string>());
    if (w.contains("cluster_run"))
        std::cout << "; cluster run " << w["cluster_run"] << ", chain " << w["cluster_chain"];
    else if (!w["runs"].empty())
        std::cout << "; runs " << w["runs"].front() << ".." << w["runs"].back();
    std::cout << "\n";
}

/// A measured step as `info --json` lists it.
nlohmann::json measured_step_json(const storage::MeasuredStepEntry& m) {
    nlohmann::json plans = nlohmann::json::array();
    for (const auto& p : m.plans)
        plans.push_back({{"name", p.name},
                         {"rows", p.rows},
                         {"step_seconds", p.step_seconds},
                         {"modelled_max_u", p.modelled_max_u ? nlohmann::json(*p.modelled_max_u) : nlohmann::json()},
                         {"run", p.run_id ? nlohmann::json(p.run_id) : nlohmann::json()},
                         {"method", p.run_id ? nlohmann::json(p.method) : nlohmann::json()}});
    return {{"id", m.id},       {"trace", m.trace}, {"window", m.window},          {"source", m.source},
            {"files", m.files}, {"plans", plans},   {"imported_at", m.imported_at}};
}

} // namespace

void print_library_info(const storage::Library& lib, const std::string& db,
                        const std::vector<storage::TraceEntry>& traces, bool detail, bool json) {
    nlohmann::json all = nlohmann::json::array(), clusters = nlohmann::json::array(),
                   measured = nlohmann::json::array(), whole = nlohmann::json::array();
    for (const auto& t : traces) {
        all.push_back(trace_json(lib, t, detail));
        for (const auto& m : lib.measured_steps(t.name))
            measured.push_back(measured_step_json(m));
    }
    if (!detail)
        for (const auto& r : lib.cluster_runs())
            clusters.push_back(cluster_run_json(r));
    std::set<std::string> shown_traces;
    for (const auto& t : traces)
        shown_traces.insert(t.name);
    for (const auto& w : lib.whole_runs())
        if (!detail || shown_traces.count(w.trace)) whole.push_back(whole_run_json(w));
    if (json) {
        std::cout << nlohmann::json{{"library", db},
                                    {"traces", all},
                                    {"cluster_runs", clusters},
                                    {"whole_runs", whole},
                                    {"measured_steps", measured}}
                         .dump(2)
                  << "\n";
        return;
    }
    std::cout << "library " << shown_path(db) << ": " << all.size() << " trace(s)\n";
    for (const auto& t : all)
        print_trace_text(t, detail);
    for (const auto& r : clusters)
        print_cluster_run(r);
    for (const auto& w : whole)
        print_whole_run(w);
    for (const auto& m : measured) {
        const auto linked = std::count_if(m["plans"].begin(), m["plans"].end(),
                                          [](const nlohmann::json& p) { return !p["run"].is_null(); });
        std::cout << "measured step " << m["id"] << " of " << shown(m["trace"].get<std::string>()) << "/"
                  << shown(m["window"].get<std::string>()) << " (" << m["source"].get<std::string>()
                  << "): " << m["plans"].size() << (m["plans"].size() == 1 ? " plan, " : " plans, ") << linked
                  << " linked to saved runs\n";
    }
}

void print_trace_detail(const storage::Library& lib, const storage::TraceEntry& trace) {
    print_trace_text(trace_json(lib, trace, true), true);
}

} // namespace routepack::cli
