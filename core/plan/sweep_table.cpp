#include "core/plan/sweep_table.h"

#include "core/plan/run_steps.h"

#include <cstdio>
#include <sstream>

namespace routepack {

namespace {

std::string num(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

} // namespace

SweepLine sweep_line(const PlanFile& f, double planner_s) {
    SweepLine l;
    l.window = f.window_name;
    l.samples = f.sample_ids.size();
    l.rows = f.row_count;
    l.certified = f.row_count_certified;
    for (const MethodRow& m : kMethodTable)
        if (const auto& x = f.metrics[m.method]) l.max_u[m.method] = x->metrics.score.max_u;
    l.lower_bound = f.has_bound ? f.bound.value : 0;
    l.planner_s = planner_s;
    l.time_limit_hit = f.time_limit_hit;
    l.moves = f.migration.moves;
    if (f.migration.present && f.migration.cost) {
        l.migration_bytes = f.migration.bytes;
        l.materialization_s = f.migration.seconds;
        l.compute_s = f.migration.compute_seconds;
        l.modelled_s = plan_modelled_seconds(f.migration);
    }
    l.multi_node = f.comm.nodes > 1;
    if (!l.multi_node) return l;
    l.inter_copies = PerMethod<std::optional<std::int64_t>>{};
    for (const MethodRow& m : kMethodTable)
        if (const auto& c = f.comm.figures[m.method]) l.inter_copies[m.method] = c->inter;
    l.comm_unavailable = !f.comm.available;
    return l;
}

SweepLine sweep_line(const PlanResult& p) {
    return sweep_line(plan_file_of(p), p.timings.count("total") ? p.timings.at("total") : 0.0);
}

void sweep_link(std::vector<SweepLine>& lines, const std::vector<const Placement*>& placements,
                std::int64_t expert_bytes) {
    std::vector<RunStepInput> steps;
    for (std::size_t k = 0; k < lines.size(); ++k)
        steps.push_back({lines[k].cost(Method::Baseline), lines[k].cost(Method::RoutePack), placements[k]});
    const std::vector<RunStepSummary> summary = summarize_steps(steps);
    for (std::size_t k = 0; k < lines.size(); ++k) {
        SweepLine& l = lines[k];
        l.vs_baseline_pct = summary[k].gain_pct;
        l.vs_reorder_pct = gain_pct(l.cost(Method::Reorder), l.cost(Method::RoutePack));
        l.churn_slots = summary[k].churn_slots;
        l.moves_total = l.moves + (k > 0 ? lines[k - 1].moves_total : 0);
        if (l.compute_s) {
            const double prior = k > 0 && lines[k - 1].modelled_s_total ? *lines[k - 1].modelled_s_total : 0.0;
            l.modelled_s_total = prior + *l.modelled_s;
        }
        if (l.churn_slots >= 0 && expert_bytes > 0) l.churn_bytes = l.churn_slots * expert_bytes;
    }
}

std::string csv_field(const std::string& v) {
    if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
    std::string out = "\"";
    for (char ch : v)
        out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
}

std::string sweep_csv(const std::vector<SweepLine>& lines) {
    const auto field = csv_field;
    auto count = [](std::int64_t v) { return v >= 0 ? std::to_string(v) : std::string(); };
    auto copies = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string(); };
    auto cost = [](const std::optional<double>& v) { return v ? num("%.17g", *v) : std::string(); };
    std::ostringstream csv;
    csv << "window,samples,rows,certified,baseline,reorder,karmarkar_karp,routepack,routepack_vs_baseline_pct,"
           "routepack_vs_reorder_pct,lower_bound,planner_s,time_limit_hit,churn_slots,churn_bytes,run,grouter,"
           "routepack+comm,"
           "routepack_inter_node_copies,grouter_inter_node_copies,routepack+comm_inter_node_copies,experts_moved,"
           "migration_bytes,materialization_seconds,compute_seconds,modelled_seconds,experts_moved_total,"
           "modelled_seconds_total\r\n";
    for (const SweepLine& l : lines) {
        // Five empty fields on one node.
        const std::string comm =
            !l.multi_node
                ? ",,,,,"
                : "," + cost(l.max_u[Method::Grouter]) + "," + cost(l.max_u[Method::RoutePackComm]) + "," +
                      copies(l.inter_copies[Method::RoutePack]) + "," + copies(l.inter_copies[Method::Grouter]) + "," +
                      copies(l.inter_copies[Method::RoutePackComm]);
        csv << field(l.window) << "," << l.samples << "," << l.rows << "," << (l.certified ? 1 : 0) << ","
            << num("%.17g", l.cost(Method::Baseline)) << "," << num("%.17g", l.cost(Method::Reorder)) << ","
            << num("%.17g", l.cost(Method::KarmarkarKarp)) << "," << num("%.17g", l.cost(Method::RoutePack)) << ","
            << num("%.6f", l.vs_baseline_pct) << "," << num("%.6f", l.vs_reorder_pct) << ","
            << num("%.17g", l.lower_bound) << "," << num("%.6f", l.planner_s) << "," << (l.time_limit_hit ? 1 : 0)
            << "," << count(l.churn_slots) << "," << count(l.churn_bytes) << "," << l.run << comm << "," << l.moves
            << "," << cost(l.migration_bytes) << "," << cost(l.materialization_s) << "," << cost(l.compute_s) << ","
            << (l.modelled_s ? num("%.17g", *l.modelled_s) : std::string()) << "," << l.moves_total << ","
            << cost(l.modelled_s_total) << "\r\n";
    }
    return csv.str();
}

} // namespace routepack
