#include "views/run_series.h"

#include "core/model/trace.h"
#include "core/plan/placement.h"
#include "core/plan/plan_file.h"
#include "core/plan/run_steps.h"
#include "views/gui_text.h"
#include "views/nice_scale.h"
#include "views/plan_data.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace routepack::views {

namespace {

/// A saved run picked for one step, with its stored plan.
struct Picked {
    const storage::RunEntry* run = nullptr;
    int runs = 0;
};

/// Each step's gain and churn against the previous step (summarize_steps); the churn layer named
/// by its decoder layer.
void summarize(RunSeries& s, const std::vector<Placement>& placements, const std::vector<int>& moe_layers) {
    std::vector<RunStepInput> in(s.steps.size());
    for (std::size_t k = 0; k < in.size(); ++k)
        in[k] = {s.steps[k].cost[Method::Baseline], s.steps[k].cost[Method::RoutePack], &placements[k]};
    const std::vector<RunStepSummary> sum = summarize_steps(in);
    for (std::size_t k = 0; k < in.size(); ++k) {
        RunStep& st = s.steps[k];
        st.gain_pct = sum[k].gain_pct;
        st.churn = sum[k].churn_slots;
        st.moves = sum[k].moves;
        st.churn_layer_slots = sum[k].churn_layer_slots;
        const auto l = static_cast<std::size_t>(sum[k].churn_layer);
        st.churn_layer = sum[k].churn_layer < 0 ? -1 : l < moe_layers.size() ? moe_layers[l] : sum[k].churn_layer;
    }
}

} // namespace

RunSeriesSet compute_run_series(const storage::Library& lib, const std::string& trace,
                                const std::atomic<bool>* cancel) {
    RunSeriesSet out;
    out.trace = trace;
    try {
        (void)lib.trace(trace); // an unknown trace is refused by name
        std::vector<storage::WindowEntry> windows = lib.windows(trace);
        std::sort(windows.begin(), windows.end(), [](const storage::WindowEntry& a, const storage::WindowEntry& b) {
            return natural_less(a.name, b.name);
        });
        out.windows = windows.size();
        // Per topology name: per window (in run order) the newest usable run.
        std::vector<std::vector<storage::RunEntry>> runs(windows.size());
        std::map<std::string, std::map<std::size_t, Picked>> by_topology;
        for (std::size_t w = 0; w < windows.size(); ++w) {
            runs[w] = lib.runs(trace, windows[w].name);
            bool any = false;
            for (const auto& r : runs[w]) {
                if (r.plan_id == 0 || (r.status != "finished" && r.status != "cancelled")) continue;
                any = true;
                Picked& p = by_topology[r.topology][w];
                ++p.runs;
                if (!p.run || r.id > p.run->id) p.run = &r;
            }
            if (any) ++out.windows_with_runs;
        }
        for (const auto& [topology, picked] : by_topology) {
            if (picked.size() < 2) continue;
            RunSeries s;
            s.topology = topology;
            std::vector<Placement> placements; // routepack's placement of each step
            std::vector<int> moe_layers;       // the decoder layer of each MoE layer index
            for (const auto& [w, p] : picked) {
                if (cancel && cancel->load()) {
                    out.series.clear();
                    out.error = "cancelled";
                    return out;
                }
                const storage::RunEntry& r = *p.run;
                const PlanFile plan = parse_plan(lib.run_plan_json(r.id), "run " + std::to_string(r.id));
                RunStep st;
                st.window = windows[w].name;
                st.samples = windows[w].samples;
                st.run = r.id;
                st.runs = p.runs;
                st.status = r.status;
                st.nodes = plan.topology.nodes();
                for (const MethodRow& row : kMethodTable) {
                    const Method m = row.method;
                    const auto it = plan.metrics.find(row.key);
                    st.has[m] = it != plan.metrics.end();
                    st.cost[m] = st.has[m] ? it->second.score.max_u : 0.0;
                    const auto f = plan.comm.figures.find(row.key);
                    if (st.has[m] && f != plan.comm.figures.end()) st.inter_copies[m] = f->second.inter;
                }
                st.rows = plan.row_count;
                st.certified = plan.row_count_certified;
                if (const auto t = r.timings.find("total"); t != r.timings.end()) st.planner_s = t->second;
                if (s.steps.empty()) {
                    s.topology_value = r.topology_value;
                    s.slots = static_cast<std::int64_t>(plan.placement.layers) * plan.placement.experts;
                    moe_layers = plan.model.moe_layers;
                } else {
                    st.previous = s.steps.back().window;
                }
                placements.push_back(plan.placement);
                s.table.push_back(sweep_line(plan, st.planner_s));
                s.table.back().run = r.id;
                s.steps.push_back(std::move(st));
            }
            summarize(s, placements, moe_layers);
            std::vector<const Placement*> at;
            for (const Placement& p : placements)
                at.push_back(&p);
            sweep_link(s.table, at, 0);
            for (const MethodRow& row : kMethodTable)
                if (std::any_of(s.steps.begin(), s.steps.end(),
                                [m = row.method](const RunStep& st) { return st.has[m]; }))
                    s.methods.push_back(row.method);
            out.series.push_back(std::move(s));
        }
        std::stable_sort(out.series.begin(), out.series.end(), [](const RunSeries& a, const RunSeries& b) {
            if (a.steps.size() != b.steps.size()) return a.steps.size() > b.steps.size();
            auto newest = [](const RunSeries& s) {
                std::int64_t id = 0;
                for (const auto& st : s.steps)
                    id = std::max(id, st.run);
                return id;
            };
            return newest(a) > newest(b);
        });
    } catch (const std::exception& e) {
        out.series.clear();
        out.error = guiErrorText(e).toStdString();
    }
    return out;
}

std::vector<GainBin> gain_histogram(const RunSeries& series, int max_bins) {
    std::vector<GainBin> bins;
    if (series.steps.empty()) return bins;
    max_bins = std::max(1, max_bins);
    double lo = series.steps.front().gain_pct, hi = lo;
    for (const auto& st : series.steps) {
        lo = std::min(lo, st.gain_pct);
        hi = std::max(hi, st.gain_pct);
    }
    const auto s = round_step({1.0, 2.0, 5.0}, -1, 308,
                              [&](const RoundStep& r) { return bins_holding(lo, hi, r.step) <= max_bins; });
    if (!s) return bins; // a gain that is not finite
    const double width = s->step;
    const double first = std::floor(lo / width);
    const int n = static_cast<int>(std::floor(hi / width) - first) + 1;
    bins.resize(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
        bins[static_cast<std::size_t>(k)].lo = (first + k) * width;
        bins[static_cast<std::size_t>(k)].hi = (first + k + 1) * width;
    }
    for (std::size_t i = 0; i < series.steps.size(); ++i) {
        const int k = std::clamp(static_cast<int>(std::floor(series.steps[i].gain_pct / width) - first), 0, n - 1);
        bins[static_cast<std::size_t>(k)].steps.push_back(static_cast<int>(i));
    }
    return bins;
}

RunSeriesSummary summarize_series(const RunSeries& series) {
    RunSeriesSummary out;
    if (series.steps.empty()) return out;
    std::vector<double> g;
    for (const auto& st : series.steps) {
        g.push_back(st.gain_pct);
        out.most_changed = std::max({out.most_changed, st.churn, st.moves});
        out.churn_total += std::max<std::int64_t>(0, st.churn);
    }
    std::sort(g.begin(), g.end());
    double mean = 0;
    for (double v : g)
        mean += v;
    out.mean_gain_pct = mean / static_cast<double>(g.size());
    out.median_gain_pct = g.size() % 2 ? g[g.size() / 2] : 0.5 * (g[g.size() / 2 - 1] + g[g.size() / 2]);
    out.best_gain_pct = g.front();
    out.worst_gain_pct = g.back();
    return out;
}

} // namespace routepack::views
