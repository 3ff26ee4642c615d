#include "views/run/run_series.h"

#include "core/model/trace.h"
#include "core/plan/plan_file.h"
#include "core/plan/run_steps.h"
#include "core/plan/score/placement.h"
#include "core/util/input_file.h"
#include "views/plan/measured_data.h"
#include "views/plan/plan_data.h"
#include "views/widgets/gui_text.h"
#include "views/widgets/nice_scale.h"

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

/// Appends the step of `plan` (window `window`) to `s`: every method's cost, R*, the table line and
/// routepack's placement; `st` brings what the plan file does not hold (run, status, planner time).
void add_step(RunSeries& s, const PlanFile& plan, RunStep st, const std::string& window, std::vector<int>& moe_layers) {
    st.window = window;
    st.nodes = plan.topology.nodes();
    for (const MethodRow& row : kMethodTable) {
        const Method m = row.method;
        st.has[m] = plan.has(m);
        st.cost[m] = st.has[m] ? plan.metrics_of(m).score.max_u : 0.0;
        if (const auto& f = plan.comm.figures[m]; st.has[m] && f) st.inter_copies[m] = f->inter;
    }
    st.rows = plan.row_count;
    st.certified = plan.row_count_certified;
    if (s.steps.empty()) {
        s.slots = static_cast<std::int64_t>(plan.placement.layers) * plan.placement.experts;
        moe_layers = plan.model.moe_layers;
    } else {
        st.previous = s.steps.back().window;
    }
    s.placements.push_back(plan.placement);
    s.table.push_back(sweep_line(plan, st.planner_s));
    s.table.back().run = st.run;
    s.steps.push_back(std::move(st));
}

/// Gains, churn, the table's links and the methods present, once every step of `s` is in.
void finish_series(RunSeries& s, const std::vector<int>& moe_layers) {
    summarize(s, s.placements, moe_layers);
    std::vector<const Placement*> at;
    for (const Placement& p : s.placements)
        at.push_back(&p);
    sweep_link(s.table, at, 0);
    for (const MethodRow& row : kMethodTable)
        if (std::any_of(s.steps.begin(), s.steps.end(), [m = row.method](const RunStep& st) { return st.has[m]; }))
            s.methods.push_back(row.method);
}

/// Thrown between steps when `cancel` is set.
struct SeriesCancelled {};

/// Chain `c` of a cluster run (`run`, its `steps`) read from its plan files; `any[position]` marks the
/// steps planned. Throws SeriesCancelled.
RunSeries cluster_chain_series(const storage::ClusterRunEntry& run, const std::vector<storage::ClusterRunStep>& steps,
                               std::size_t c, std::vector<bool>& any, const std::atomic<bool>* cancel) {
    RunSeries s;
    s.topology = run.chains[c].name;
    s.topology_value = run.chains[c].topology;
    std::vector<int> moe_layers;
    for (const storage::ClusterRunStep& step : steps) {
        if (step.chain != c) continue;
        if (cancel && cancel->load()) throw SeriesCancelled{};
        if (!step.planned) {
            s.failed.push_back(step.window + (step.stage.empty() ? "" : " (" + step.stage + ")") + ": " + step.error);
            continue;
        }
        const PlanFile plan = parse_plan(read_input_file(step.plan_file, input_files::kPlan), step.plan_file.string());
        RunStep st;
        st.samples = step.samples;
        st.runs = 1;
        st.status = "planned";
        st.planner_s = step.planner_seconds;
        add_step(s, plan, std::move(st), step.window, moe_layers);
        s.plan_files.push_back(step.plan_file.string());
        s.step_paths.push_back(step.step_path.string());
        if (step.position < any.size()) any[step.position] = true;
    }
    if (!s.steps.empty()) finish_series(s, moe_layers);
    return s;
}

/// `out` filled by `fill` (which may throw): a cancel (SeriesCancelled) or an error empties its
/// series and says why in RunSeriesSet::error.
template <class Fill> RunSeriesSet read_series(RunSeriesSet out, Fill&& fill) {
    try {
        fill(out);
    } catch (const SeriesCancelled&) {
        out.series.clear();
        out.error = "cancelled";
    } catch (const std::exception& e) {
        out.series.clear();
        out.error = guiErrorText(e).toStdString();
    }
    return out;
}

/// The steps of a sweep's or studio run's whole run: its saved runs in order (those with a plan).
/// Throws SeriesCancelled.
RunSeries saved_runs_series(const storage::Library& lib, const storage::WholeRunEntry& w,
                            const std::atomic<bool>* cancel) {
    RunSeries s;
    s.topology = w.topology;
    s.topology_value = w.topology_value;
    std::map<std::string, std::size_t> samples;
    for (const storage::WindowEntry& win : lib.windows(w.trace))
        samples[win.name] = win.samples;
    const std::vector<storage::MeasuredStepEntry> measured = lib.measured_steps(w.trace);
    std::vector<int> moe_layers;
    for (const std::int64_t id : w.runs) {
        if (cancel && cancel->load()) throw SeriesCancelled{};
        const storage::RunEntry r = lib.run(id);
        if (r.plan_id == 0) continue;
        const PlanFile plan = parse_plan(lib.run_plan_json(r.id), "run " + std::to_string(r.id));
        RunStep st;
        st.samples = samples.count(r.window) ? samples[r.window] : 0;
        st.run = r.id;
        st.run_name = r.name;
        st.runs = 1;
        st.status = r.status;
        if (const auto t = r.timings.find("total"); t != r.timings.end()) st.planner_s = t->second;
        st.measured = run_measured_seconds(measured, r.id);
        add_step(s, plan, std::move(st), r.window, moe_layers);
    }
    if (!s.steps.empty()) finish_series(s, moe_layers);
    return s;
}

} // namespace

bool has_migration_costs(const RunSeries& series) {
    return std::any_of(series.table.begin(), series.table.end(),
                       [](const SweepLine& l) { return l.compute_s && l.materialization_s; });
}

RunSeriesSet compute_whole_run_series(const storage::Library& lib, std::int64_t whole_run,
                                      const std::atomic<bool>* cancel) {
    RunSeriesSet init;
    init.whole_run = whole_run;
    return read_series(std::move(init), [&](RunSeriesSet& out) {
        const storage::WholeRunEntry w = lib.whole_run(whole_run);
        out.trace = w.trace;
        out.windows = w.steps;
        RunSeries s;
        if (w.cluster_run > 0) {
            const storage::ClusterRunEntry run = lib.cluster_run(w.cluster_run);
            out.cluster_run = w.cluster_run;
            out.cluster_out = run.out.string();
            std::vector<bool> any(run.steps, false);
            if (w.cluster_chain < run.chains.size())
                s = cluster_chain_series(run, lib.cluster_run_steps(w.cluster_run), w.cluster_chain, any, cancel);
        } else {
            s = saved_runs_series(lib, w, cancel);
        }
        out.windows_with_runs = s.steps.size();
        if (!s.steps.empty()) out.series.push_back(std::move(s));
    });
}

RunSeriesSet compute_cluster_run_series(const storage::Library& lib, std::int64_t cluster_run,
                                        const std::atomic<bool>* cancel) {
    RunSeriesSet init;
    init.cluster_run = cluster_run;
    return read_series(std::move(init), [&](RunSeriesSet& out) {
        const storage::ClusterRunEntry run = lib.cluster_run(cluster_run);
        const std::vector<storage::ClusterRunStep> steps = lib.cluster_run_steps(cluster_run);
        out.trace = run.trace;
        out.cluster_out = run.out.string();
        out.windows = run.steps;
        std::vector<bool> any(run.steps, false);
        for (std::size_t c = 0; c < run.chains.size(); ++c) {
            RunSeries s = cluster_chain_series(run, steps, c, any, cancel);
            if (!s.steps.empty()) out.series.push_back(std::move(s));
        }
        out.windows_with_runs = static_cast<std::size_t>(std::count(any.begin(), any.end(), true));
    });
}

StepFrontier compute_step_frontier(const storage::Library& lib, const std::string& trace, const RunSeries& series,
                                   int k, int workers, const std::atomic<bool>* cancel) {
    StepFrontier out;
    out.step = k;
    if (k < 0 || k >= static_cast<int>(series.steps.size())) {
        out.error = "no step " + std::to_string(k) + " in the run shown";
        return out;
    }
    const auto i = static_cast<std::size_t>(k);
    const RunStep& st = series.steps[i];
    out.window = st.window;
    out.saved_max_u = st.cost[Method::RoutePack];
    out.saved_moves = i < series.table.size() ? series.table[i].moves : 0;
    if (st.run <= 0) {
        out.error = "it plans the step again from its counts, kept in the step's file" +
                    (i < series.step_paths.size() && !series.step_paths[i].empty() ? " (" + series.step_paths[i] + ")"
                                                                                   : std::string()) +
                    ": import it (routepack import) first";
        return out;
    }
    try {
        const storage::RunEntry run = lib.run(st.run);
        PlanInput in;
        in.window = lib.load_window(trace, st.window, storage::routes_for(run.topology_value));
        in.trace_name = trace;
        in.window_name = st.window;
        in.topology = run.topology_value;
        in.budgets = run.budgets;
        const Placement& any = series.placements.at(i);
        out.experts = static_cast<std::int64_t>(any.layers) * any.experts;
        // As `routepack sweep --frontier`: each step from the placement the chain gave it.
        in.previous = i > 0 ? series.placements[i - 1] : identity_placement(any.layers, any.experts, any.ep_ranks);
        // With a run-level base placement, the run's history as the step before's saved plan recorded it.
        if (i > 0 && in.budgets.history_decay > 0 && series.steps[i - 1].run > 0)
            in.history =
                parse_plan(lib.run_plan_json(series.steps[i - 1].run), "run " + std::to_string(series.steps[i - 1].run))
                    .history;
        const auto points = move_frontier({in}, workers, cancel);
        if (cancel && cancel->load()) {
            out.error = "cancelled";
            return out;
        }
        out.points = points.front();
    } catch (const std::exception& e) {
        out.error = guiErrorText(e).toStdString();
    }
    return out;
}

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
        const std::vector<storage::MeasuredStepEntry> measured = lib.measured_steps(trace);
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
            std::vector<int> moe_layers; // the decoder layer of each MoE layer index
            for (const auto& [w, p] : picked) {
                if (cancel && cancel->load()) {
                    out.series.clear();
                    out.error = "cancelled";
                    return out;
                }
                const storage::RunEntry& r = *p.run;
                const PlanFile plan = parse_plan(lib.run_plan_json(r.id), "run " + std::to_string(r.id));
                RunStep st;
                st.samples = windows[w].samples;
                st.run = r.id;
                st.run_name = r.name;
                st.runs = p.runs;
                st.status = r.status;
                if (const auto t = r.timings.find("total"); t != r.timings.end()) st.planner_s = t->second;
                st.measured = run_measured_seconds(measured, r.id);
                if (s.steps.empty()) s.topology_value = r.topology_value;
                add_step(s, plan, std::move(st), windows[w].name, moe_layers);
            }
            finish_series(s, moe_layers);
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

MeasuredRunSummary summarize_measured(const RunSeries& series) {
    MeasuredRunSummary out;
    for (const RunStep& st : series.steps) {
        const std::optional<double>&base = st.measured[Method::Baseline], &rp = st.measured[Method::RoutePack];
        if (!base || !rp || *base <= 0) continue;
        ++out.steps;
        out.mean_measured_pct += 100.0 * (*rp - *base) / *base;
        out.mean_modelled_pct += st.gain_pct;
        out.measured_seconds += *rp;
        out.measured_base_seconds += *base;
    }
    if (out.steps > 0) {
        out.mean_measured_pct /= out.steps;
        out.mean_modelled_pct /= out.steps;
    }
    return out;
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
