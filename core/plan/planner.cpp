#include "core/plan/planner.h"
#include "core/util/seeds.h"

#include "core/plan/budgets_json.h"
#include "core/plan/placement.h"
#include "core/util/errors.h"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>

namespace routepack {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

MethodResult make_method(const char* name, bool lpt, Layout layout, const PackingProblem& p, double cv) {
    MethodResult m;
    m.name = name;
    m.lpt = lpt;
    m.layout = std::move(layout);
    m.metrics = layout_metrics(m.layout, p, cv);
    return m;
}

} // namespace

double bound_gap(double max_u, double bound) {
    return bound > 0 ? max_u / bound - 1.0 : 0.0;
}

std::string window_fingerprint_fnv(const Trace& window) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const auto& s : window.samples)
        h = fnv1a64(&s.length, sizeof s.length, h);
    h = fnv1a64(window.counts.data(), window.counts.size() * sizeof(std::uint32_t), h);
    return hex64(h);
}

namespace {

/// Counts per fingerprint chunk (256 KiB): chunks are hashed in parallel and folded in order.
constexpr std::size_t kFingerprintChunk = std::size_t{1} << 16;

/// Hash of counts[0..n) of chunk `index`: four independent lanes, each folding one 64-bit word
/// (two counts) per step with h = (h ^ w) * odd, h ^= h >> 29 (a bijection of h for every w), so
/// the four multiply chains run side by side; the lanes and n are mixed at the end.
std::uint64_t chunk_hash(const std::uint32_t* v, std::size_t n, std::uint64_t index) {
    constexpr std::uint64_t kOdd = 0x9e3779b97f4a7c15ULL;
    std::uint64_t h[4];
    for (int j = 0; j < 4; ++j)
        h[j] = seeds::mix64(index * 4 + static_cast<std::uint64_t>(j) + 1);
    std::size_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int j = 0; j < 4; ++j) {
            const std::uint64_t w = v[k + 2 * j] | (static_cast<std::uint64_t>(v[k + 2 * j + 1]) << 32);
            h[j] = (h[j] ^ w) * kOdd;
            h[j] ^= h[j] >> 29;
        }
    for (; k < n; ++k) {
        h[0] = (h[0] ^ v[k]) * kOdd;
        h[0] ^= h[0] >> 29;
    }
    auto rotl = [](std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
    return seeds::mix64(h[0] ^ rotl(h[1], 16) ^ rotl(h[2], 32) ^ rotl(h[3], 48) ^ n);
}

} // namespace

std::string window_fingerprint(const Trace& window) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const auto& s : window.samples)
        h = fnv1a64(&s.length, sizeof s.length, h);
    const std::size_t n = window.counts.size();
    const std::size_t chunks = (n + kFingerprintChunk - 1) / kFingerprintChunk;
    std::vector<std::uint64_t> part(chunks);
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
        const std::size_t begin = c * kFingerprintChunk;
        part[c] = chunk_hash(window.counts.data() + begin, std::min(kFingerprintChunk, n - begin), c);
    });
    h = seeds::mix64(h ^ n);
    for (std::uint64_t x : part)
        h = seeds::mix64(h ^ x);
    return hex64(h);
}

PlanResult plan_window(const PlanInput& in, const PlanProgressFn& progress, const std::atomic<bool>* cancel) {
    check_planner_budgets(in.budgets, "planner", BudgetNames::Keys);
    const auto t_start = Clock::now();
    std::optional<Clock::time_point> deadline;
    if (in.budgets.time_limit_s > 0)
        deadline = t_start +
                   std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(in.budgets.time_limit_s));
    auto emit = [&](const char* stage, double f) {
        if (progress) progress(PlanEvent{stage, f, std::nullopt, std::nullopt});
    };
    auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };

    const Trace& w = in.window;
    if (w.size() == 0) throw InputError("the window is empty");
    if (w.model.top_k <= 0 || w.stride() == 0 || w.counts.size() != w.size() * w.stride())
        throw InputError("the window has no per-sample routing counts (aggregate traces cannot be packed)");
    check_topology_for_model(in.topology, w.model);

    PlanResult r;
    r.model = w.model;
    r.topology = in.topology;
    r.budgets = in.budgets;
    r.trace_name = in.trace_name;
    r.window_name = in.window_name;
    r.samples = w.samples;

    const int workers = in.budgets.workers > 0 ? in.budgets.workers : tbb::this_task_arena::max_concurrency();
    tbb::task_arena arena(workers);
    arena.execute([&] {
        r.fingerprint = window_fingerprint(w);
        const int L = w.model.num_moe_layers(), E = w.model.experts, P = in.topology.ep_ranks;

        // 1. Placement (Algorithm 1, layers in parallel).
        auto t0 = Clock::now();
        emit("placement", 0.0);
        const auto loads = aggregate_expert_loads(w.counts, w.size(), L, E);
        r.identity = identity_placement(L, E, P);
        r.lpt = lpt_placement(loads, L, E, P);
        r.rank_loads_identity = rank_loads(loads, r.identity);
        r.rank_loads_lpt = rank_loads(loads, r.lpt);
        r.cv_identity = cv_global(r.rank_loads_identity, L, P);
        r.cv_lpt = cv_global(r.rank_loads_lpt, L, P);
        const PackingProblem p_id = make_packing_problem(w, in.topology, r.identity);
        const PackingProblem p_lpt = make_packing_problem(w, in.topology, r.lpt);
        r.timings["placement"] = seconds_since(t0);
        t0 = Clock::now();
        r.bound = max_u_lower_bound(p_lpt);
        r.timings["bound"] = seconds_since(t0);

        // 2. Row count R*.
        t0 = Clock::now();
        emit("row count", 0.1);
        r.rows = minimum_rows(p_lpt.length, p_lpt.C, p_lpt.D, in.topology.min_rows, in.budgets.row_nodes,
                              in.topology.row_multiple);
        r.timings["row count"] = seconds_since(t0);

        // 3. Baselines on the same window and R*.
        t0 = Clock::now();
        emit("baselines", 0.2);
        Layout ffd;
        if (!fixed_row_ffd(p_lpt.length, p_lpt.C, r.rows.rows, p_lpt.D, &ffd)) {
            ffd = r.rows.layout;
            r.baseline_not_ffd = true;
        }
        r.baseline = make_method("baseline", false, ffd, p_id, r.cv_identity);
        r.reorder = make_method("reorder", true, ffd, p_lpt, r.cv_lpt);
        r.karmarkar_karp = make_method("karmarkar_karp", true,
                                       karmarkar_karp_layout(p_lpt.length, r.rows.rows, p_lpt.D), p_lpt, r.cv_lpt);
        // routepack starts as reorder (the same layout on the same problem, so the same metrics); the
        // search keeps its best layout and exact score, and the metrics (one full pass) are formed once,
        // when the search ends, instead of after every stage that improves it.
        r.routepack = r.reorder;
        r.routepack.name = "routepack";
        Layout best = ffd;
        Score best_score = r.reorder.metrics.score;
        bool improved = false;
        auto keep = [&](const Layout& x, const Score& s) {
            if (!(s < best_score)) return;
            best = x;
            best_score = s;
            improved = true;
        };
        auto finish_routepack = [&] {
            if (improved) r.routepack = make_method("routepack", true, best, p_lpt, r.cv_lpt);
            improved = false;
        };
        r.timings["baselines"] = seconds_since(t0);
        if (cancelled()) {
            r.cancelled = true;
            return;
        }

        // 4. Seeding (Algorithm 2).
        t0 = Clock::now();
        emit("seeding", 0.3);
        SeedingBudget sb;
        static_cast<SeedingSettings&>(sb) = in.budgets.seeding;
        sb.seed = seeds::planner_stage(in.budgets.seed, 1);
        const auto population = diverse_population(p_lpt, ffd, sb, cancel);
        for (const auto& m : population)
            r.population_origins.push_back(m.origin);
        r.timings["seeding"] = seconds_since(t0);
        const SeedMember* best_seed = &population.front();
        for (const auto& m : population)
            if (m.score < best_seed->score) best_seed = &m;
        keep(best_seed->layout, best_seed->score);
        if (cancelled()) {
            finish_routepack();
            r.cancelled = true;
            return;
        }

        // 5. Population annealing (Algorithm 3).
        t0 = Clock::now();
        emit("annealing", 0.4);
        AnnealingBudget ab;
        static_cast<AnnealingSettings&>(ab) = in.budgets.annealing;
        ab.seed = seeds::planner_stage(in.budgets.seed, 2);
        const int levels = std::max(1, ab.levels);
        const auto res = population_anneal(
            p_lpt, population, ab,
            [&](const LevelStats& s) {
                r.convergence.push_back(s);
                if (progress) progress(PlanEvent{"annealing", 0.4 + 0.55 * (s.level + 1) / levels, s, std::nullopt});
            },
            cancel, deadline);
        r.proposals = res.proposals;
        r.accepted = res.accepted;
        r.cancelled = res.cancelled && !res.time_limit_hit;
        r.time_limit_hit = res.time_limit_hit;
        keep(res.best, res.score);
        r.timings["annealing"] = seconds_since(t0);

        // 6. Final exact improvement pass on the straggler: guided descent and kicks (one replica,
        // RNG stream from the master seed; anytime until the deadline when there is one).
        t0 = Clock::now();
        emit("polish", 0.95);
        if (in.budgets.polish_evaluations > 0 && !cancelled() && !r.time_limit_hit) {
            PolishSettings ps;
            ps.evaluations =
                in.budgets.anytime ? std::numeric_limits<std::int64_t>::max() : in.budgets.polish_evaluations;
            ps.kick_moves = in.budgets.polish_kick_moves;
            std::mutex progress_mutex;
            std::function<void(const Score&)> on_improve;
            if (progress)
                on_improve = [&](const Score& s) {
                    const std::lock_guard<std::mutex> lock(progress_mutex);
                    progress(PlanEvent{"polish", 0.95, std::nullopt, s});
                };
            const PolishResult d = iterated_straggler_search(p_lpt, best, ps, seeds::planner_stage(in.budgets.seed, 3),
                                                             cancel, deadline, on_improve);
            r.polish_evaluations = d.evaluations;
            r.polish_improvements = d.improvements;
            r.polish_kicks = d.kicks;
            r.polish_kicks_kept = d.kicks_kept;
            r.polish_local_optimum = d.local_optimum;
            if (d.cancelled) {
                if (cancelled())
                    r.cancelled = true;
                else
                    r.time_limit_hit = true;
            }
            keep(d.layout, d.score);
        }
        r.timings["polish"] = seconds_since(t0);

        // 7. Validate + non-regression (the routepack layout is never worse than reorder, one of its seeds).
        t0 = Clock::now();
        emit("validate", 0.97);
        finish_routepack();
        if (!(r.routepack.metrics.score == best_score))
            throw std::logic_error("planner: the search's score differs from the routepack layout's metrics");
        const std::string bad = validate_layout(r.routepack.layout, p_lpt);
        if (!bad.empty()) throw std::logic_error("planner produced an invalid layout: " + bad);
        if (r.reorder.metrics.score < r.routepack.metrics.score)
            throw std::logic_error("planner regressed below its reorder seed");
        r.timings["validate"] = seconds_since(t0);
    });
    r.timings["total"] = seconds_since(t_start);
    emit("done", 1.0);
    return r;
}

std::vector<WindowPlan> plan_windows(const std::vector<PlanInput>& inputs, int workers,
                                     const std::function<void(std::size_t)>& on_done, const std::atomic<bool>* cancel) {
    std::vector<WindowPlan> out(inputs.size());
    tbb::task_arena arena(workers > 0 ? workers : tbb::task_arena::automatic);
    arena.execute([&] {
        tbb::parallel_for(std::size_t{0}, inputs.size(), [&](std::size_t k) {
            if (cancel && cancel->load()) return; // not started: nothing planned for it
            out[k].started = true;
            PlanInput in = inputs[k];
            in.budgets.workers = 1;
            try {
                out[k].plan = plan_window(in, {}, cancel);
            } catch (const std::exception& e) {
                out[k].error = e.what();
            }
            if (on_done) on_done(k);
        });
    });
    return out;
}

} // namespace routepack
