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

std::optional<std::int64_t> SweepLine::copies_of(const std::string& name) const {
    for (const auto& [n, v] : inter_copies)
        if (n == name) return v;
    return std::nullopt;
}

SweepLine sweep_line(const PlanResult& p) {
    SweepLine l;
    l.window = p.window_name;
    l.samples = p.samples.size();
    l.rows = p.rows.rows;
    l.certified = p.rows.certified;
    l.baseline = p.baseline.metrics.score.max_u;
    l.reorder = p.reorder.metrics.score.max_u;
    l.karmarkar_karp = p.karmarkar_karp.metrics.score.max_u;
    l.routepack = p.routepack.metrics.score.max_u;
    l.lower_bound = p.bound.value;
    l.planner_s = p.timings.count("total") ? p.timings.at("total") : 0.0;
    l.time_limit_hit = p.time_limit_hit;
    const PlanMigration& mg = p.migration;
    l.moves = mg.figures.moved;
    if (mg.cost.expert_bytes > 0) {
        l.migration_bytes = mg.figures.bytes;
        l.materialization_s = mg.figures.seconds;
        l.compute_s = mg.compute_seconds;
    }
    l.multi_node = p.comm.nodes > 1;
    if (!l.multi_node) return l;
    if (p.comm.grouter) l.grouter = p.comm.grouter->metrics.score.max_u;
    if (p.comm.routepack_comm) l.routepack_comm = p.comm.routepack_comm->metrics.score.max_u;
    for (const MethodResult* m : p.methods())
        l.inter_copies.emplace_back(m->key(), m->comm ? std::optional(m->comm->inter_total) : std::nullopt);
    l.comm_unavailable = !p.routepack.comm;
    return l;
}

SweepLine sweep_line(const PlanFile& f, double planner_s) {
    SweepLine l;
    auto max_u = [&f](const char* method) -> std::optional<double> {
        const auto it = f.metrics.find(method);
        return it == f.metrics.end() ? std::nullopt : std::optional(it->second.score.max_u);
    };
    l.window = f.window_name;
    l.samples = f.sample_ids.size();
    l.rows = f.row_count;
    l.certified = f.row_count_certified;
    l.baseline = max_u("baseline").value_or(0);
    l.reorder = max_u("reorder").value_or(0);
    l.karmarkar_karp = max_u("karmarkar_karp").value_or(0);
    l.routepack = max_u("routepack").value_or(0);
    l.lower_bound = f.has_bound ? f.bound.value : 0;
    l.planner_s = planner_s;
    l.time_limit_hit = f.time_limit_hit;
    l.moves = f.migration.moves;
    if (f.migration.present && f.migration.seconds >= 0) {
        l.migration_bytes = f.migration.bytes;
        l.materialization_s = f.migration.seconds;
        l.compute_s = f.migration.compute_seconds;
    }
    l.multi_node = f.comm.nodes > 1;
    if (!l.multi_node) return l;
    l.grouter = max_u("grouter");
    l.routepack_comm = max_u("routepack+comm");
    for (const char* m : {"baseline", "reorder", "karmarkar_karp", "routepack", "grouter", "routepack+comm"}) {
        if (!f.metrics.count(m)) continue;
        const auto it = f.comm.figures.find(m);
        l.inter_copies.emplace_back(m, it == f.comm.figures.end() ? std::nullopt : std::optional(it->second.inter));
    }
    l.comm_unavailable = !f.comm.available;
    return l;
}

void sweep_link(std::vector<SweepLine>& lines, const std::vector<const Placement*>& placements,
                std::int64_t expert_bytes) {
    std::vector<RunStepInput> steps;
    for (std::size_t k = 0; k < lines.size(); ++k)
        steps.push_back({lines[k].baseline, lines[k].routepack, placements[k]});
    const std::vector<RunStepSummary> summary = summarize_steps(steps);
    for (std::size_t k = 0; k < lines.size(); ++k) {
        SweepLine& l = lines[k];
        l.vs_baseline_pct = summary[k].gain_pct;
        l.vs_reorder_pct = gain_pct(l.reorder, l.routepack);
        l.churn_slots = summary[k].churn_slots;
        l.moves_total = l.moves + (k > 0 ? lines[k - 1].moves_total : 0);
        if (l.compute_s) {
            const double prior = k > 0 && lines[k - 1].modelled_s_total ? *lines[k - 1].modelled_s_total : 0.0;
            l.modelled_s_total = prior + *l.compute_s + *l.materialization_s;
        }
        if (l.churn_slots >= 0 && expert_bytes > 0) l.churn_bytes = l.churn_slots * expert_bytes;
    }
}

std::string sweep_csv(const std::vector<SweepLine>& lines) {
    // RFC 4180 field: quoted (quotes doubled) when it holds a comma, quote, CR or LF.
    auto field = [](const std::string& v) {
        if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
        std::string out = "\"";
        for (char ch : v)
            out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        return out + "\"";
    };
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
        const std::string comm = !l.multi_node
                                     ? ",,,,,"
                                     : "," + cost(l.grouter) + "," + cost(l.routepack_comm) + "," +
                                           copies(l.copies_of("routepack")) + "," + copies(l.copies_of("grouter")) +
                                           "," + copies(l.copies_of("routepack+comm"));
        csv << field(l.window) << "," << l.samples << "," << l.rows << "," << (l.certified ? 1 : 0) << ","
            << num("%.17g", l.baseline) << "," << num("%.17g", l.reorder) << "," << num("%.17g", l.karmarkar_karp)
            << "," << num("%.17g", l.routepack) << "," << num("%.6f", l.vs_baseline_pct) << ","
            << num("%.6f", l.vs_reorder_pct) << "," << num("%.17g", l.lower_bound) << "," << num("%.6f", l.planner_s)
            << "," << (l.time_limit_hit ? 1 : 0) << "," << count(l.churn_slots) << "," << count(l.churn_bytes) << ","
            << l.run << comm << "," << l.moves << "," << cost(l.migration_bytes) << "," << cost(l.materialization_s)
            << "," << cost(l.compute_s) << ","
            << (l.compute_s ? num("%.17g", *l.compute_s + *l.materialization_s) : std::string()) << "," << l.moves_total
            << "," << cost(l.modelled_s_total) << "\r\n";
    }
    return csv.str();
}

} // namespace routepack
