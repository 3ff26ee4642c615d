// Planner benchmark (quality on real windows, speed per stage, the scale point).
//   bench_planner [--shared DIR] [--skip-real] [--skip-grid] [--skip-scale] [--skip-anytime] [--x100]
// (a) Table-4 columns of reorder vs routepack (and baseline, karmarkar-karp) on the real windows with
//     the shipped topologies; (b) time per stage, proposals/s per worker and total for 512-sample
//     synthetic windows across model/topology sizes, 1 and 2 workers; (c) the scale point 8192 samples
//     x 64 MoE layers x 256 experts x 64 EP ranks x 64 DP slots in 8 EDP shards, 1 and 2 workers,
//     each stage against the figures docs/performance.md states (which grew).
// (d) on the real windows: median over seeds 1, 2, 3 of max_g U with default budgets (and with 100x
//     the proposals when --x100; with --seeds N, seeds 1..N and the means over them), against the
//     previous default (24 levels, then a first-improvement straggler_descent of 100,000
//     evaluations) timed in the same process; the lower bound and the gap; (e) the anytime curve:
//     one run with a 5 s time limit (the final pass kicks and descends until the deadline), best
//     max_g U found by 0.05, 0.1, 0.5, 1 and 5 s (annealing levels and final-pass improvements as
//     reported by the progress events).
// Ratios are against `reorder` (same window, same R*) or the 1-worker run, measured in the same process.
#include "core/import/import.h"
#include "core/plan/planner.h"
#include "core/plan/score/placement.h"
#include "core/synth/synth.h"
#include "core/util/rng.h"

#include <tbb/task_arena.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace routepack;

namespace {

Topology read_topology(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_topology(ss.str(), p.string());
}

Topology make_topology(int P, int D, int G, std::int64_t C) {
    Topology t;
    t.ep_ranks = P;
    t.dp_slots = D;
    t.token_cap = C;
    t.edp_shards.assign(static_cast<std::size_t>(G), {});
    for (int d = 0; d < D; ++d)
        t.edp_shards[static_cast<std::size_t>(d * G / D)].push_back(d);
    t.attention_stages = {AttentionStage{"kda", 10.0, 0.0}, AttentionStage{"mla", 27.0, 27.0}};
    return t;
}

Trace first_n(const Trace& all, int n) {
    std::vector<std::size_t> order(all.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return natural_less(all.samples[a].id, all.samples[b].id); });
    Trace w;
    w.model = all.model;
    for (int k = 0; k < n && k < static_cast<int>(all.size()); ++k) {
        SampleRecord r;
        r.info = all.samples[order[static_cast<std::size_t>(k)]];
        const auto c = all.sample_counts(order[static_cast<std::size_t>(k)]);
        r.counts.assign(c.begin(), c.end());
        w.append(std::move(r));
    }
    return w;
}

double pct(double a, double b) {
    return a == 0 ? 0 : 100.0 * (b - a) / a;
}

void quality_row(const char* label, const PlanResult& r) {
    const auto& a = r.reorder.metrics;
    const auto& b = r.routepack.metrics;
    const auto& k = r.karmarkar_karp.metrics;
    std::printf(
        "| %-34s | %3d%s | %+7.2f%% | %+7.2f%% | %.3f -> %.3f | %+6.2f%% | %+7.2f%% | %+7.2f%% | %d | %.3f s |\n",
        label, r.rows.rows, r.rows.certified ? "c" : "?", pct(double(a.ep_peak_sum), double(b.ep_peak_sum)),
        pct(double(a.ep_tail_peak), double(b.ep_tail_peak)), a.ep_balance_efficiency, b.ep_balance_efficiency,
        pct(a.attention_sum, b.attention_sum), pct(a.joint, b.joint), pct(k.joint, b.joint), k.cap_violations,
        r.timings.at("total"));
}

/// Budgets every run starts from (defaults, or the command line's overrides).
PlannerBudgets g_budgets;
/// Seeds 1..g_seeds of section (d) (--seeds).
int g_seeds = 3;

double timing(const PlanResult& r, const char* k) {
    return r.timings.count(k) ? r.timings.at(k) : 0.0;
}

void speed_row(const char* label, const PlanResult& r, int workers) {
    const double t_anneal = timing(r, "annealing");
    std::printf(
        "| %-40s | %d | %6.3f | %6.3f | %6.3f | %6.3f | %6.3f | %7.3f | %8.0f | %6.3f | %6.3f | %7.3f | %.2f%% |\n",
        label, workers, timing(r, "placement"), timing(r, "bound"), timing(r, "row count"), timing(r, "baselines"),
        timing(r, "seeding"), t_anneal, t_anneal > 0 ? r.search.proposals / t_anneal / workers : 0.0,
        timing(r, "polish"), timing(r, "placement refinement"), timing(r, "total"),
        100.0 * bound_gap(r.routepack.metrics.score.max_u, r.bound.value));
}
const char* kSpeedHeader = "| window | workers | placement | bound | rows | baselines | seeding | annealing | "
                           "proposals/s/worker | polish | of it: placement refinement | total | gap to LB |\n"
                           "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

/// Peak resident set of this process so far (MiB).
/// Algorithm 1 on aggregated loads shaped like a 94-layer x 128-expert model (random loads), for
/// every EP count dividing 128: best of 20 calls, 1 worker, against rank_loads of the result (one
/// pass over the [L][E] loads, the floor any placement step costs) in the same process.
void placement_speed() {
    const int L = 94, E = 128;
    std::vector<std::uint64_t> loads(static_cast<std::size_t>(L) * E);
    Rng rng(3);
    for (auto& v : loads)
        v = rng.below(1u << 20);
    std::printf("\n(f) placement (Algorithm 1) of %d MoE layers x %d experts, loads aggregated, 1 worker, best of 20\n"
                "| EP ranks | lpt_placement | rank_loads (floor) | ratio |\n|---|---|---|---|\n",
                L, E);
    tbb::task_arena one(1);
    for (int P = 1; P <= E; P *= 2) {
        double best_lpt = 1e9, best_floor = 1e9;
        one.execute([&] {
            for (int rep = 0; rep < 20; ++rep) {
                auto t0 = std::chrono::steady_clock::now();
                const Placement pi = lpt_placement(loads, L, E, P);
                auto t1 = std::chrono::steady_clock::now();
                const auto G = rank_loads(loads, pi);
                auto t2 = std::chrono::steady_clock::now();
                if (G.empty()) std::abort();
                best_lpt = std::min(best_lpt, std::chrono::duration<double>(t1 - t0).count());
                best_floor = std::min(best_floor, std::chrono::duration<double>(t2 - t1).count());
            }
        });
        std::printf("| %d | %.3f ms | %.3f ms | x%.1f |\n", P, 1e3 * best_lpt, 1e3 * best_floor, best_lpt / best_floor);
    }
}

double peak_rss_mib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/// CPU seconds (user + system) of this process so far.
double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double median3(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// What the command line asks for.
struct Options {
    fs::path shared = ROUTEPACK_SHARED_DIR;
    bool real = true, grid = true, scale = true, anytime = true, x100 = false;
};

/// Reads the command line into `opt` and the budget globals; prints the usage and returns false on
/// an unknown argument.
bool parse_arguments(int argc, char** argv, Options& opt) {
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--shared") && i + 1 < argc)
            opt.shared = argv[++i];
        else if (!std::strcmp(argv[i], "--skip-real"))
            opt.real = false;
        else if (!std::strcmp(argv[i], "--skip-grid"))
            opt.grid = false;
        else if (!std::strcmp(argv[i], "--skip-scale"))
            opt.scale = false;
        else if (!std::strcmp(argv[i], "--skip-anytime"))
            opt.anytime = false;
        else if (!std::strcmp(argv[i], "--x100"))
            opt.x100 = true;
        else if (!std::strcmp(argv[i], "--p-straggler") && i + 1 < argc)
            g_budgets.annealing.p_straggler = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--polish") && i + 1 < argc)
            g_budgets.polish_evaluations = std::atoll(argv[++i]);
        else if (!std::strcmp(argv[i], "--placement-rounds") && i + 1 < argc)
            g_budgets.placement_rounds = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--polish-kicks") && i + 1 < argc)
            g_budgets.polish_kick_moves = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
            g_budgets.annealing.steps = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--levels") && i + 1 < argc)
            g_budgets.annealing.levels = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--t0") && i + 1 < argc)
            g_budgets.annealing.t0 = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--cooling") && i + 1 < argc)
            g_budgets.annealing.cooling = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc)
            g_seeds = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--population") && i + 1 < argc)
            g_budgets.seeding.population = std::atoi(argv[++i]);
        else {
            std::printf(
                "usage: bench_planner [--shared DIR] [--skip-real] [--skip-grid] [--skip-scale] [--skip-anytime] "
                "[--x100]"
                " [--p-straggler X] [--polish N] [--polish-kicks K] [--placement-rounds N] [--steps K] [--levels N] "
                "[--t0 T] [--cooling F] "
                "[--population P] [--seeds N]\n");
            return false;
        }
    }
    return true;
}

/// A set of real windows: the first `n` samples of the trace in `dir`, planned on each of `topos`.
struct RealSet {
    const char* dir;
    const char* model;
    int n;
    const char* topos[2];
};
const RealSet kRealSets[] = {
    {"traces/deepseek-v2-lite", "deepseek-v2-lite", 512, {"deepseek-v2-lite-ep8-dp4", "deepseek-v2-lite-ep16-dp8"}},
    {"traces/llama4-maverick", "llama4-maverick", 235, {"llama4-maverick-ep8-dp4", "llama4-maverick-ep16-dp8"}}};

/// The window of set `s` on its shipped topology `t`, with the default budgets and 2 workers.
PlanInput real_input(const Trace& all, const RealSet& s, const char* t, const fs::path& topo_dir) {
    PlanInput in;
    in.window = first_n(all, s.n);
    in.topology = read_topology(topo_dir / (std::string(t) + ".json"));
    in.budgets = g_budgets;
    in.budgets.workers = 2;
    return in;
}

/// (a): one quality row per real window and topology; returns the runs with their labels.
std::vector<std::pair<std::string, PlanResult>> real_quality(const fs::path& shared, const fs::path& topo_dir) {
    std::vector<std::pair<std::string, PlanResult>> real_runs;
    std::printf("(a) quality, routepack vs reorder (c = R* certified), default budgets, 2 workers\n");
    std::printf("| window / topology | R* | S_EP | T_EP | eta_EP | attention | joint | joint vs KK | KK cap "
                "viol. | planner |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& s : kRealSets) {
        ImportOptions o;
        o.model = known_model(s.model);
        const Trace all = import_trace_to_memory({shared / s.dir}, o);
        for (const char* t : s.topos) {
            const PlanInput in = real_input(all, s, t, topo_dir);
            const auto r = plan_window(in);
            const std::string label = std::string(s.model) + " " + std::to_string(s.n) + " / " + t;
            quality_row(label.c_str(), r);
            real_runs.emplace_back(label, r);
        }
    }
    return real_runs;
}

/// The runs of (a), seconds per stage.
void real_speed(const std::vector<std::pair<std::string, PlanResult>>& real_runs) {
    std::printf("\nthe same runs, seconds per stage\n%s", kSpeedHeader);
    for (const auto& [label, r] : real_runs)
        speed_row(label.c_str(), r, 2);
}

/// One row of (d) for the window of set `s` on topology `t`: the previous default and the current
/// one (and 100x the steps with `x100`) over seeds 1..g_seeds.
void seed_row(const RealSet& s, const char* t, PlanInput in, bool x100) {
    std::vector<double> u, secs, u100, secs100, u_old, secs_old;
    double lb = 0, reorder = 0, cpu_old = 0, cpu_now = 0;
    for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(g_seeds); ++seed) {
        in.budgets.seed = seed;
        in.budgets.annealing.steps = g_budgets.annealing.steps;
        {
            // The previous default: 24 levels, then straggler_descent(100,000).
            PlanInput old = in;
            old.budgets.annealing.levels = 24;
            old.budgets.polish_evaluations = 0;
            old.budgets.placement_rounds = 0;
            const double c0 = cpu_seconds();
            const auto t0 = std::chrono::steady_clock::now();
            const auto o = plan_window(old);
            const PackingProblem p = make_packing_problem(old.window, old.topology, o.placement.lpt);
            const DescentResult d = straggler_descent(p, o.routepack.layout, 100000);
            secs_old.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            cpu_old += cpu_seconds() - c0;
            u_old.push_back(std::min(d.score, o.routepack.metrics.score).max_u);
        }
        const double c0 = cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = plan_window(in);
        secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        cpu_now += cpu_seconds() - c0;
        u.push_back(r.routepack.metrics.score.max_u);
        lb = r.bound.value;
        reorder = r.reorder.metrics.score.max_u;
        if (x100) {
            in.budgets.annealing.steps = 100 * g_budgets.annealing.steps;
            const auto h = plan_window(in);
            u100.push_back(h.routepack.metrics.score.max_u);
            secs100.push_back(timing(h, "total"));
        }
    }
    const double m = median3(u);
    double ratio = 0;
    for (std::size_t k = 0; k < secs.size(); ++k)
        ratio += secs[k] / secs_old[k] / static_cast<double>(secs.size());
    std::printf("| %s %d / %s | %.3f | %.3f | %.3f s | %.3f | %.3f s | x%.2f | %.2f -> %.2f | %.2f%% |", s.model, s.n,
                t, reorder, median3(u_old), median3(secs_old), m, median3(secs), ratio, cpu_old, cpu_now,
                100.0 * bound_gap(m, lb));
    if (x100) std::printf(" %.3f | %.3f s |", median3(u100), median3(secs100));
    std::printf(" %.3f |", lb);
    if (g_seeds > 3) {
        const std::vector<double> u3(u.begin(), u.begin() + 3);
        std::printf(" median of seeds 1-3 %.3f, mean of %d %.3f (previous default %.3f) |", median3(u3), g_seeds,
                    std::accumulate(u.begin(), u.end(), 0.0) / u.size(),
                    std::accumulate(u_old.begin(), u_old.end(), 0.0) / u_old.size());
    }
    std::printf("\n");
}

/// (d): one seed_row per real window and topology. Returns the first of them (window and
/// topology) for the anytime curve.
std::pair<Trace, Topology> real_seeds(const fs::path& shared, const fs::path& topo_dir, bool x100) {
    std::printf("\n(d) max_g U, median over seeds 1, 2, 3 (2 workers): default budgets%s; lower bound LB and gap\n",
                x100 ? " and 100x steps per level" : "");
    std::printf("| window / topology | reorder | previous default | time | default | time | time ratio | "
                "CPU s (prev -> now) | gap to LB |%s LB |\n",
                x100 ? " 100x steps | time |" : "");
    std::printf("|---|---|---|---|---|---|---|---|---|%s---|\n", x100 ? "---|---|" : "");
    Trace anytime_window;
    Topology anytime_topology;
    for (const auto& s : kRealSets) {
        ImportOptions o;
        o.model = known_model(s.model);
        const Trace all = import_trace_to_memory({shared / s.dir}, o);
        for (const char* t : s.topos) {
            PlanInput in = real_input(all, s, t, topo_dir);
            if (anytime_window.size() == 0) {
                anytime_window = in.window;
                anytime_topology = in.topology;
            }
            seed_row(s, t, std::move(in), x100);
        }
    }
    return {std::move(anytime_window), std::move(anytime_topology)};
}

/// (e): one run with a 5 s time limit on `window`, the best max_g U found by each time.
void anytime_curve(const Trace& window, const Topology& topology) {
    std::printf("\n(e) anytime curve, %zu-sample DeepSeek window / first topology, seed 1, 2 workers: one run "
                "with a 5 s time limit, best max_g U found by each time\n",
                window.size());
    PlanInput in;
    in.window = window;
    in.topology = topology;
    in.budgets = g_budgets;
    in.budgets.workers = 2;
    in.budgets.time_limit_s = 5.0;
    in.budgets.anytime = true;
    std::vector<std::pair<double, double>> trace; // (seconds since start, best max_g U)
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = plan_window(in, [&](const PlanEvent& e) {
        const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (e.level) trace.emplace_back(at, e.level->best.max_u);
        if (e.best) trace.emplace_back(at, e.best->max_u);
    });
    std::printf("| time | best max_g U | gap to LB |\n|---|---|---|\n");
    for (double budget : {0.05, 0.1, 0.5, 1.0, 5.0}) {
        double best = 0;
        bool any = false;
        for (const auto& [at, v] : trace)
            if (at <= budget && (!any || v < best)) {
                best = v;
                any = true;
            }
        if (any)
            std::printf("| %.2f s | %.3f | %.2f%% |\n", budget, best, 100.0 * bound_gap(best, r.bound.value));
        else
            std::printf("| %.2f s | (no level finished yet) | |\n", budget);
    }
    std::printf("final plan %.3f after %.3f s (%d kicks, %d kept)\n", r.routepack.metrics.score.max_u,
                timing(r, "total"), r.search.polish_kicks, r.search.polish_kicks_kept);
}

/// (a), (d) and (e) on the real windows under `shared`/traces.
void real_windows(const Options& opt, const fs::path& topo_dir) {
    const auto real_runs = real_quality(opt.shared, topo_dir);
    real_speed(real_runs);
    const auto [anytime_window, anytime_topology] = real_seeds(opt.shared, topo_dir, opt.x100);
    if (opt.anytime && anytime_window.size() > 0) anytime_curve(anytime_window, anytime_topology);
}

/// (b): seconds per stage for synthetic 512-sample windows across model and topology sizes, 1 and
/// 2 workers.
void grid_speed() {
    std::printf("\n(b) speed, synthetic 512-sample windows (64 groups x 8), seconds per stage\n");
    std::printf("%s", kSpeedHeader);
    struct Point {
        int layers, experts, top_k, P, D, G;
    } points[] = {{26, 64, 6, 8, 4, 2}, {48, 128, 8, 16, 8, 2}, {64, 256, 8, 64, 16, 4}, {64, 256, 8, 64, 64, 8}};
    for (const auto& pt : points) {
        SynthConfig c;
        c.groups = 64;
        c.group_size = 8;
        c.num_hidden_layers = pt.layers + 1;
        c.experts = pt.experts;
        c.top_k = pt.top_k;
        c.prompt_mean = 256;
        c.response_mean = 768;
        c.max_length = 8192;
        const Trace w = synth_trace(c);
        for (int workers : {1, 2}) {
            PlanInput in;
            in.window = w;
            in.topology = make_topology(pt.P, pt.D, pt.G, 8192);
            in.budgets = g_budgets;
            in.budgets.workers = workers;
            const auto r = plan_window(in);
            char label[128];
            std::snprintf(label, sizeof label, "L%d E%d k%d P%d D%d G%d (R*=%d)", pt.layers, pt.experts, pt.top_k, pt.P,
                          pt.D, pt.G, r.rows.rows);
            speed_row(label, r, workers);
        }
    }
}

/// A figure of docs/performance.md's scale table: "0.34-0.58" or "0.19" seconds (lo, hi).
struct DocRange {
    double lo = 0, hi = 0;
};

/// The scale table of docs/performance.md (the one whose header begins "| workers | placement |
/// bound |"): per worker count, stage name -> its stated range. Empty when the page or table is
/// missing.
std::map<int, std::map<std::string, DocRange>> doc_scale_table(const fs::path& page) {
    std::map<int, std::map<std::string, DocRange>> out;
    std::ifstream f(page);
    std::string line;
    std::vector<std::string> header;
    auto cells = [](const std::string& row) {
        std::vector<std::string> v;
        std::stringstream ss(row);
        std::string c;
        std::getline(ss, c, '|');
        while (std::getline(ss, c, '|')) {
            const auto a = c.find_first_not_of(' '), b = c.find_last_not_of(' ');
            v.push_back(a == std::string::npos ? "" : c.substr(a, b - a + 1));
        }
        return v;
    };
    while (std::getline(f, line)) {
        if (line.rfind("| workers | placement | bound |", 0) == 0) {
            header = cells(line);
            continue;
        }
        if (header.empty() || line.rfind("| ---", 0) == 0) continue;
        if (line.rfind("| ", 0) != 0) {
            if (!out.empty()) break;
            continue;
        }
        const auto v = cells(line);
        const int workers = std::atoi(v[0].c_str());
        for (std::size_t k = 1; k < v.size() && k < header.size(); ++k) {
            std::string text = v[k];
            text.erase(std::remove(text.begin(), text.end(), ','), text.end()); // 304,206 -> 304206
            DocRange r;
            char* end = nullptr;
            r.lo = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || (*end != '\0' && *end != '-')) continue; // not a number or a range
            r.hi = *end == '-' ? std::strtod(end + 1, nullptr) : r.lo;
            out[workers][header[k]] = r;
        }
    }
    return out;
}

/// Each stage of the scale point's runs against the figures docs/performance.md states: the
/// measured seconds, the stated range, the ratio to its upper end, and which stages grew. A slower
/// machine lifts every stage, so the docs' figures are first scaled by this machine's speed against
/// the docs' one: the docs' lower annealing proposals/s/worker over the measured (at least 1). A
/// stage grew when it is above 1.25x the scaled upper figure and by more than 0.01 s.
void compare_with_docs(const std::map<int, PlanResult>& runs) {
    const auto doc = doc_scale_table(fs::path(ROUTEPACK_SOURCE_DIR) / "docs/performance.md");
    if (doc.empty()) {
        std::printf("docs/performance.md: no scale table found to compare with\n");
        return;
    }
    std::printf("\nstages against docs/performance.md's scale table (grew: above 1.25x its upper figure x the "
                "machine factor, and by more than 0.01 s)\n| stage | workers | docs | measured | x docs' upper | "
                "machine factor | |\n|---|---|---|---|---|---|---|\n");
    std::vector<std::string> grew;
    for (const auto& [workers, r] : runs) {
        const auto d = doc.find(workers);
        if (d == doc.end()) continue;
        const double t_anneal = timing(r, "annealing");
        const double rate = t_anneal > 0 ? r.search.proposals / t_anneal / workers : 0.0;
        const auto props = d->second.find("proposals/s/worker");
        const double factor = props != d->second.end() && rate > 0 ? std::max(1.0, props->second.lo / rate) : 1.0;
        for (const char* stage : {"placement", "bound", "baselines", "seeding", "annealing", "polish", "total"}) {
            const auto it = d->second.find(stage);
            if (it == d->second.end()) continue;
            const double m = timing(r, stage), hi = it->second.hi;
            const bool up = m > 1.25 * hi * factor && m - hi > 0.01;
            std::printf("| %s | %d | %.2f-%.2f | %.3f | x%.2f | x%.2f | %s |\n", stage, workers, it->second.lo, hi, m,
                        hi > 0 ? m / hi : 0.0, factor, up ? "grew" : "");
            if (up) grew.push_back(std::string(stage) + " (" + std::to_string(workers) + " workers)");
        }
    }
    std::string list;
    for (const auto& g : grew)
        list += (list.empty() ? "" : ", ") + g;
    std::printf("stages that grew: %s\n", grew.empty() ? "none" : list.c_str());
}

/// (c): the scale point with 1 and 2 workers, the peak RSS, the stages against the docs' figures,
/// then (f) the placement speed.
void scale_point() {
    std::printf("\n(c) scale point: 8192 samples x 64 MoE layers x 256 experts (top-8), 64 EP ranks, 64 DP "
                "slots in 8 EDP shards\n");
    SynthConfig c;
    c.groups = 1024;
    c.group_size = 8;
    c.num_hidden_layers = 65;
    c.experts = 256;
    c.top_k = 8;
    c.prompt_mean = 256;
    c.response_mean = 512;
    c.max_length = 8192;
    const auto t0 = std::chrono::steady_clock::now();
    PlanInput in; // one input for both runs: the window is held once, as a training job would
    in.window = synth_trace(c);
    in.topology = make_topology(64, 64, 8, 8192);
    const Trace& w = in.window;
    std::printf("synthetic trace generated in %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const double counts_mib = static_cast<double>(w.counts.size()) * sizeof(std::uint32_t) / (1 << 20);
    std::printf("%s", kSpeedHeader);
    double anneal[3] = {0, 0, 0};
    std::map<int, PlanResult> runs;
    for (int workers : {1, 2}) {
        in.budgets = g_budgets;
        in.budgets.workers = workers;
        const auto& r = runs[workers] = plan_window(in);
        anneal[workers] = timing(r, "annealing");
        char label[128];
        std::snprintf(label, sizeof label, "scale (R*=%d, joint %+.2f%% vs reorder)", r.rows.rows,
                      pct(r.reorder.metrics.joint, r.routepack.metrics.joint));
        speed_row(label, r, workers);
    }
    std::printf("annealing speed-up with 2 workers (same proposals): x%.2f\n",
                anneal[2] > 0 ? anneal[1] / anneal[2] : 0.0);
    std::printf("peak RSS %.0f MiB = x%.2f the uint32 [N][L][E] counts (%.0f MiB)\n", peak_rss_mib(),
                peak_rss_mib() / counts_mib, counts_mib);
    compare_with_docs(runs);
    placement_speed();
}

} // namespace

int main(int argc, char** argv) {
    Options opt;
    if (!parse_arguments(argc, argv, opt)) return 2;
    const fs::path topo_dir = fs::path(ROUTEPACK_SOURCE_DIR) / "resources/topologies";
    try {
        if (opt.real && fs::exists(opt.shared / "traces")) real_windows(opt, topo_dir);
        if (opt.grid) grid_speed();
        if (opt.scale) scale_point();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_planner: %s\n", e.what());
        return 1;
    }
    return 0;
}
