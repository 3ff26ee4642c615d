// Fixed-row population annealing (core/plan/search/annealing.h; paper section 4.1.2-4.1.3, Algorithm 3):
// non-regression and validity on random windows, reaching a brute-forced optimum, determinism across
// runs and worker counts, cancellation and deadline, systematic resampling (lines 15-18) on a
// hand-computed case, acceptance at high and low temperature, budget and population checks; the
// resampling's state reuse by hand; the straggler descent's local optimum checked by brute force.
// Problems and seed populations are built here directly (no seeding or row-count stage involved).
#include "core/plan/search/annealing.h"
#include "core/plan/search/polish.h"
#include "core/util/errors.h"
#include "tests/testutil.h"

#include <QtTest>

#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>

using namespace routepack;

namespace {

/// A random window: lengths in [lo, hi], C fixed, per-(sample, layer) routed tokens t_i * k spread
/// over P ranks by a per-layer popularity plus per-sample noise; contiguous EDP shards; two stages.
PackingProblem random_problem(std::mt19937_64& g, int n, int L, int P, int D, int G, std::int64_t C, std::int64_t lo,
                              std::int64_t hi) {
    PackingProblem p;
    p.n = n;
    p.L = L;
    p.P = P;
    p.D = D;
    p.G = G;
    p.C = C;
    std::uniform_int_distribution<std::int64_t> len(lo, hi);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int i = 0; i < n; ++i)
        p.length.push_back(len(g));
    std::vector<double> pop(static_cast<std::size_t>(L) * P);
    for (double& w : pop)
        w = std::pow(u(g), 3.0);
    p.demand.assign(static_cast<std::size_t>(n) * L * P, 0);
    for (int i = 0; i < n; ++i)
        for (int l = 0; l < L; ++l) {
            std::vector<double> w(static_cast<std::size_t>(P));
            double sum = 0;
            for (int r = 0; r < P; ++r)
                sum += (w[static_cast<std::size_t>(r)] = pop[static_cast<std::size_t>(l) * P + r] + 0.5 * u(g));
            for (int r = 0; r < P; ++r)
                p.demand[(static_cast<std::size_t>(i) * L + l) * P + r] = static_cast<std::int32_t>(
                    std::floor(2.0 * p.length[static_cast<std::size_t>(i)] * w[static_cast<std::size_t>(r)] / sum));
        }
    p.shard_of_slot.resize(static_cast<std::size_t>(D));
    p.shards.assign(static_cast<std::size_t>(G), {});
    for (int d = 0; d < D; ++d) {
        const int s = d / (D / G);
        p.shard_of_slot[static_cast<std::size_t>(d)] = s;
        p.shards[static_cast<std::size_t>(s)].push_back(d);
    }
    p.stages = {AttentionStage{"mla", 1.0, 0.5}, AttentionStage{"kda", 0.3, 0.0}};
    return p;
}

/// First-fit packing of `order` into rows*D cells: the first K = rows*D samples seed the cells, each
/// later one goes to the first cell that fits (random_fit: a uniformly drawn fitting cell). False
/// when a sample fits nowhere or n < K.
bool first_fit(const PackingProblem& p, int rows, const std::vector<int>& order, std::mt19937_64* random_fit,
               Layout* out) {
    const int K = rows * p.D;
    if (p.n < K) return false;
    std::vector<int> cell_of(static_cast<std::size_t>(p.n)); // cell of order[h]
    std::vector<std::int64_t> tokens(static_cast<std::size_t>(K), 0);
    std::vector<int> fits;
    for (int h = 0; h < p.n; ++h) {
        const int i = order[static_cast<std::size_t>(h)];
        const std::int64_t t = p.length[static_cast<std::size_t>(i)];
        int k = h;
        if (h >= K) {
            fits.clear();
            for (int c = 0; c < K; ++c)
                if (tokens[static_cast<std::size_t>(c)] + t <= p.C) fits.push_back(c);
            if (fits.empty()) return false;
            k = random_fit ? fits[std::uniform_int_distribution<std::size_t>(0, fits.size() - 1)(*random_fit)]
                           : fits[0];
        }
        cell_of[static_cast<std::size_t>(h)] = k;
        tokens[static_cast<std::size_t>(k)] += t;
    }
    *out = Layout::from_assignment(rows, p.D, order, cell_of);
    return true;
}

/// `x` with its first cell emptied (an invalid layout: a cell is empty and its samples are in none).
Layout without_first_cell(const Layout& x) {
    std::vector<std::vector<int>> cells = test::cells_of(x);
    cells.front().clear();
    return Layout::from_cells(x.rows, x.dp_slots, cells);
}

std::vector<int> length_order(const PackingProblem& p) {
    std::vector<int> order(static_cast<std::size_t>(p.n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return p.length[static_cast<std::size_t>(a)] > p.length[static_cast<std::size_t>(b)];
    });
    return order;
}

/// Smallest R for which length-order first fit succeeds (0 when none).
int ffd_rows(const PackingProblem& p) {
    const std::int64_t total = std::accumulate(p.length.begin(), p.length.end(), std::int64_t{0});
    const int lo = static_cast<int>(std::max<std::int64_t>(1, (total + p.C * p.D - 1) / (p.C * p.D)));
    Layout x;
    for (int R = lo; R <= p.n / p.D; ++R)
        if (first_fit(p, R, length_order(p), nullptr, &x)) return R;
    return 0;
}

/// Population: length-order first fit, then `count - 1` shuffled-order random-fit layouts (a failed
/// attempt falls back to a copy of the first member).
std::vector<SeedMember> make_population(const PackingProblem& p, int rows, int count, std::uint64_t seed) {
    std::mt19937_64 g(seed);
    std::vector<SeedMember> pop;
    SeedMember ffd;
    [&] { QVERIFY(first_fit(p, rows, length_order(p), nullptr, &ffd.layout)); }();
    ffd.score = score_layout(ffd.layout, p);
    ffd.origin = "ffd";
    pop.push_back(ffd);
    for (int m = 1; m < count; ++m) {
        SeedMember s;
        std::vector<int> order = length_order(p);
        std::shuffle(order.begin(), order.end(), g);
        // Keep the longest samples first often enough that random fits succeed.
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
            return p.length[static_cast<std::size_t>(a)] / (p.C / 4 + 1) >
                   p.length[static_cast<std::size_t>(b)] / (p.C / 4 + 1);
        });
        if (first_fit(p, rows, order, &g, &s.layout)) {
            s.origin = "random#" + std::to_string(m);
        } else {
            s.layout = ffd.layout;
            s.origin = "ffd-copy";
        }
        s.score = score_layout(s.layout, p);
        pop.push_back(std::move(s));
    }
    return pop;
}

Score best_seed_score(const std::vector<SeedMember>& pop, const PackingProblem& p) {
    Score best = score_layout(pop[0].layout, p);
    for (const auto& m : pop)
        best = std::min(best, score_layout(m.layout, p));
    return best;
}

bool same_stats(const std::vector<LevelStats>& a, const std::vector<LevelStats>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k) {
        const LevelStats &x = a[k], &y = b[k];
        if (x.level != y.level || x.temperature != y.temperature || !(x.best == y.best) ||
            x.mean_energy != y.mean_energy || x.acceptance != y.acceptance || x.proposals != y.proposals ||
            x.infeasible != y.infeasible)
            return false;
    }
    return true;
}

/// The 512-sample-like shape in small: a standard test window.
PackingProblem standard_problem(std::uint64_t seed) {
    std::mt19937_64 g(seed);
    return random_problem(g, 48, 3, 4, 4, 2, 1000, 40, 600);
}

AnnealingBudget small_budget() {
    AnnealingBudget b;
    b.levels = 5;
    b.t0 = 0.02;
    b.cooling = 0.5;
    b.steps = 400;
    b.seed = 11;
    return b;
}

/// Brute force with full rescoring: no relocation or swap of a sample of the straggler shard (the
/// first shard with U = max U) improves the score tuple of `x` (whose exact score is `score`).
/// Returns "" when none does, else the first improving move in words.
std::string straggler_move_improving(const Layout& x, const Score& score, const PackingProblem& p) {
    const CostBreakdown cb = cost_breakdown(x, p);
    int gs = 0;
    for (int h = 1; h < p.G; ++h)
        if (cb.U[h] > cb.U[gs]) gs = h;
    const int K = x.cell_count();
    const std::vector<std::vector<int>> cells = test::cells_of(x);
    for (int k = 0; k < K; ++k) {
        if (p.shard_of_slot[static_cast<std::size_t>(k % p.D)] != gs) continue;
        for (std::size_t pos = 0; pos < cells[static_cast<std::size_t>(k)].size(); ++pos)
            for (int k2 = 0; k2 < K; ++k2) {
                if (k2 == k) continue;
                std::vector<std::vector<int>> moved = cells;
                auto& src = moved[static_cast<std::size_t>(k)];
                const int i = src[pos];
                src.erase(src.begin() + static_cast<std::ptrdiff_t>(pos));
                moved[static_cast<std::size_t>(k2)].push_back(i);
                const Layout y = Layout::from_cells(x.rows, x.dp_slots, moved);
                if (validate_layout(y, p).empty() && score_layout(y, p) < score)
                    return "relocating sample " + std::to_string(i) + " to cell " + std::to_string(k2) + " improves";
                for (std::size_t pos2 = 0; pos2 < cells[static_cast<std::size_t>(k2)].size(); ++pos2) {
                    std::vector<std::vector<int>> swapped = cells;
                    std::swap(swapped[static_cast<std::size_t>(k)][pos], swapped[static_cast<std::size_t>(k2)][pos2]);
                    const Layout z = Layout::from_cells(x.rows, x.dp_slots, swapped);
                    if (validate_layout(z, p).empty() && score_layout(z, p) < score)
                        return "swapping sample " + std::to_string(i) + " with cell " + std::to_string(k2) +
                               " position " + std::to_string(pos2) + " improves";
                }
            }
    }
    return {};
}

} // namespace

class TestAnnealing : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void systematicResampleHandComputed();
    void resampleReuseHandComputed();
    void neverWorseThanBestSeedOnRandomWindows();
    void reachesBruteForceOptimum();
    void deterministicAcrossRunsAndWorkers();
    void stopTokenReasons();
    void cancelFromOnLevel();
    void deadlineInThePast();
    void deadlineDuringRun();
    void acceptanceRateFollowsTemperature();
    void zeroLevelsReturnsBestSeed();
    void rejectsBadBudgetAndPopulation();
    void stragglerAimedProposalsDeterministic();
    void descentReachesLocalOptimum();
    void iteratedSearchInvariants();
    void iteratedSearchDeterministicAcrossWorkers();
    void guidedSearchWithoutPeakTable();
    void kickStopsWithinItsMoves();
    void iteratedSearchBudgetsAndStops();
};

void TestAnnealing::systematicResampleHandComputed() {
    // E = {1, 2, 1, 4}: E_min = 1, norm = 1, E~ = {0, 1, 0, 3}; T 1 -> 0.5 gives c = 1/0.5 - 1 = 1.
    // w^ = {1, e^-1, 1, e^-3} = {1, .367879, 1, .049787}, sum 2.417666;
    // w = {.413622, .152163, .413622, .020593}; F = {.413622, .565785, .979407, 1}.
    const std::vector<double> E{1.0, 2.0, 1.0, 4.0};
    // u0 = 0.1: u = {.1, .35, .6, .85} -> {0, 0, 2, 2} (member 1 and 3 die, 0 and 2 are cloned).
    QCOMPARE(systematic_resample(E, 1.0, 0.5, 0.1), (std::vector<int>{0, 0, 2, 2}));
    // u0 = 0.24: u = {.24, .49, .74, .99} -> {0, 1, 2, 3}.
    QCOMPARE(systematic_resample(E, 1.0, 0.5, 0.24), (std::vector<int>{0, 1, 2, 3}));
    // Equal temperatures: uniform weights, F = {.25, .5, .75, 1}, u0 = 0.1 -> identity.
    QCOMPARE(systematic_resample(E, 1.0, 1.0, 0.1), (std::vector<int>{0, 1, 2, 3}));
    // Normalization by |E_min| when it exceeds 1: E = {-10, -5}: norm 10, E~ = {0, .5}; c = 2 - 1 = 1:
    // w^ = {1, e^-.5 = .606531}, F = {.622459, 1}; u0 = 0.2: u = {.2, .7} -> {0, 1}; u0 = .49 -> {0, 1}.
    QCOMPARE(systematic_resample({-10.0, -5.0}, 1.0, 0.5, 0.2), (std::vector<int>{0, 1}));
    // Very cold: the minimum takes every descendant (weights of the others underflow to 0).
    QCOMPARE(systematic_resample({3.0, 1.0, 2.0}, 1.0, 1e-9, 0.3), (std::vector<int>{1, 1, 1}));
    QCOMPARE(systematic_resample({}, 1.0, 0.5, 0.0), std::vector<int>{});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, systematic_resample(E, 1.0, 0.5, 0.3));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, systematic_resample(E, 0.0, 0.5, 0.1));
}

void TestAnnealing::resampleReuseHandComputed() {
    using Copies = std::vector<std::pair<int, int>>;
    ResampleReuse r;
    // {0, 0, 2, 2}: members 0 and 2 keep their objects; 1 and 3 (picked by nobody) receive copies.
    plan_resample_reuse({0, 0, 2, 2}, {0, 1, 2, 3}, r);
    QCOMPARE(r.obj, (std::vector<int>{0, 1, 2, 3}));
    QCOMPARE(r.copies, (Copies{{1, 0}, {3, 2}}));
    // A member resampled to itself copies nothing: the identity moves no state.
    plan_resample_reuse({0, 1, 2, 3}, {2, 0, 3, 1}, r);
    QCOMPARE(r.obj, (std::vector<int>{2, 0, 3, 1}));
    QVERIFY(r.copies.empty());
    // {1, 1, 1, 3} with objects {3, 2, 1, 0}: member 1 keeps object 2, member 3 keeps object 0;
    // members 0 and 2 take the objects of non-sources 0 (object 3) and 2 (object 1), copied from 2.
    plan_resample_reuse({1, 1, 1, 3}, {3, 2, 1, 0}, r);
    QCOMPARE(r.obj, (std::vector<int>{3, 2, 1, 0}));
    QCOMPARE(r.copies, (Copies{{3, 2}, {1, 2}}));
    // {1, 2, 3, 3}: member 3 keeps object 3; members 0 and 1 take the objects of their sources 1 and 2
    // (moved, not copied); member 2 gets member 0's object with a copy of object 3: one copy in all.
    plan_resample_reuse({1, 2, 3, 3}, {0, 1, 2, 3}, r);
    QCOMPARE(r.obj, (std::vector<int>{1, 2, 0, 3}));
    QCOMPARE(r.copies, (Copies{{0, 3}}));
    // Everything from the coldest member: P - 1 copies.
    plan_resample_reuse({2, 2, 2}, {0, 1, 2}, r);
    QCOMPARE(r.obj, (std::vector<int>{0, 1, 2}));
    QCOMPARE(r.copies, (Copies{{0, 2}, {1, 2}}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, plan_resample_reuse({0, 4}, {0, 1}, r));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, plan_resample_reuse({0}, {0, 1}, r));
}

void TestAnnealing::neverWorseThanBestSeedOnRandomWindows() {
    int improved = 0;
    for (int w = 0; w < 50; ++w) {
        std::mt19937_64 g(1000 + static_cast<std::uint64_t>(w));
        const int D = (w % 3 == 0) ? 2 : 4;
        const int G = (w % 2 == 0) ? 1 : 2;
        const int n = 3 * D + static_cast<int>(g() % 40);
        const PackingProblem p = random_problem(g, n, 1 + static_cast<int>(g() % 4), 2 + 2 * static_cast<int>(g() % 2),
                                                D, G, 1000, 1 + static_cast<std::int64_t>(g() % 100), 700);
        const int rows = ffd_rows(p);
        QVERIFY2(rows > 0, "window without a first-fit layout");
        const auto pop = make_population(p, rows, 4, 77 + static_cast<std::uint64_t>(w));
        AnnealingBudget b = small_budget();
        b.levels = 4;
        b.steps = 300;
        b.seed = static_cast<std::uint64_t>(w);
        const AnnealResult r = population_anneal(p, pop, b);
        const QByteArray where = "window " + QByteArray::number(w);
        QVERIFY2(validate_layout(r.best, p).empty(), (where + ": " + validate_layout(r.best, p).c_str()).constData());
        QCOMPARE(r.best.rows, rows);
        QCOMPARE(r.best.dp_slots, D);
        QVERIFY2(r.initial_best == best_seed_score(pop, p), where.constData());
        QVERIFY2(!(r.initial_best < r.score), where.constData());
        QVERIFY2(r.score == score_layout(r.best, p), where.constData());
        QCOMPARE(static_cast<int>(r.levels.size()), b.levels);
        QVERIFY2(r.levels.back().best == r.score, where.constData());
        QVERIFY(!r.cancelled && !r.time_limit_hit);
        if (r.score < r.initial_best) ++improved;
    }
    // The search is not idle: most windows improve on the best seed.
    qInfo("%d of 50 windows improved on the best seed", improved);
    QVERIFY2(improved >= 25, qPrintable(QString("only %1 of 50 windows improved").arg(improved)));
}

void TestAnnealing::reachesBruteForceOptimum() {
    // 6 samples, R = 2 rows x D = 2 slots, G = 2 shards of one slot, 2 layers, 2 ranks, cap 7.
    std::mt19937_64 g(5);
    PackingProblem p = random_problem(g, 6, 2, 2, 2, 2, 7, 1, 5);
    p.length = {5, 4, 3, 3, 2, 1};
    for (int s = 0; s < 3; ++s) {
        // Brute force all 4^6 assignments; keep valid ones.
        std::vector<std::pair<Score, Layout>> all;
        for (int code = 0; code < 4096; ++code) {
            std::vector<std::vector<int>> cells(4);
            for (int i = 0, c = code; i < 6; ++i, c /= 4)
                cells[static_cast<std::size_t>(c % 4)].push_back(i);
            const Layout x = Layout::from_cells(2, 2, cells);
            if (!validate_layout(x, p).empty()) continue;
            all.emplace_back(score_layout(x, p), x);
        }
        QVERIFY(all.size() > 10);
        std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        const Score opt = all.front().first;
        // Seeds: the four worst layouts (none optimal).
        std::vector<SeedMember> pop;
        for (int m = 0; m < 4; ++m) {
            const auto& e = all[all.size() - 1 - static_cast<std::size_t>(m)];
            QVERIFY(opt < e.first);
            pop.push_back(SeedMember{e.second, e.first, "worst#" + std::to_string(m)});
        }
        AnnealingBudget b;
        b.levels = 8;
        b.t0 = 0.05;
        b.cooling = 0.6;
        b.steps = 300;
        b.seed = 3 + static_cast<std::uint64_t>(s);
        const AnnealResult r = population_anneal(p, pop, b);
        QVERIFY(validate_layout(r.best, p).empty());
        QVERIFY2(r.score == opt, qPrintable(QString("annealed (%1, %2, %3) vs optimum (%4, %5, %6)")
                                                .arg(r.score.max_u)
                                                .arg(r.score.sum_u)
                                                .arg(r.score.max_j)
                                                .arg(opt.max_u)
                                                .arg(opt.sum_u)
                                                .arg(opt.max_j)));
        // Another demand draw for the next round.
        p = random_problem(g, 6, 2, 2, 2, 2, 7, 1, 5);
        p.length = {5, 4, 3, 3, 2, 1};
    }
}

/// Runs `fn` on a TBB arena of `workers` threads (the planner's role in production).
template <class Fn> auto on_workers(int workers, Fn&& fn) {
    tbb::task_arena arena(workers);
    return arena.execute(std::forward<Fn>(fn));
}

void TestAnnealing::deterministicAcrossRunsAndWorkers() {
    const PackingProblem p = standard_problem(21);
    const int rows = ffd_rows(p);
    QVERIFY(rows > 0);
    const auto pop = make_population(p, rows, 6, 5);
    AnnealingBudget b = small_budget();
    // The chains run on the caller's arena: one, two and all cores.
    const AnnealResult a = on_workers(1, [&] { return population_anneal(p, pop, b); });
    const AnnealResult a2 = on_workers(1, [&] { return population_anneal(p, pop, b); });
    const AnnealResult c = on_workers(2, [&] { return population_anneal(p, pop, b); });
    const AnnealResult d = population_anneal(p, pop, b);
    for (const AnnealResult* r : {&a2, &c, &d}) {
        QVERIFY(r->best == a.best);
        QVERIFY(r->score == a.score);
        QVERIFY(same_stats(r->levels, a.levels));
        QCOMPARE(r->proposals, a.proposals);
        QCOMPARE(r->accepted, a.accepted);
    }
    QCOMPARE(a.proposals, static_cast<std::int64_t>(b.levels) * b.steps * 6);
    // Resampling copies at most P - 1 states per level, none after the last, the same for every
    // worker count.
    for (std::size_t n = 0; n < a.levels.size(); ++n) {
        QVERIFY(a.levels[n].state_copies >= 0 && a.levels[n].state_copies <= 5);
        QCOMPARE(c.levels[n].state_copies, a.levels[n].state_copies);
    }
    QCOMPARE(a.levels.back().state_copies, 0);
    // A different seed explores differently (statistics differ).
    b.seed = 12;
    const AnnealResult e = population_anneal(p, pop, b);
    QVERIFY(!same_stats(e.levels, a.levels));
}

void TestAnnealing::stopTokenReasons() {
    using Clock = StopToken::Clock;
    const auto past = Clock::now() - std::chrono::seconds(1), future = Clock::now() + std::chrono::hours(1);
    std::atomic<bool> flag{false};
    QCOMPARE(StopToken().reason(), StopReason::None);
    QVERIFY(!StopToken().stop_requested());
    QCOMPARE(StopToken(&flag, future).reason(), StopReason::None);
    QCOMPARE(StopToken(&flag, past).reason(), StopReason::TimeLimit);
    QCOMPARE(StopToken(nullptr, past).reason(), StopReason::TimeLimit);
    flag = true;
    QCOMPARE(StopToken(&flag).reason(), StopReason::Cancelled);
    QCOMPARE(StopToken(&flag, past).reason(), StopReason::Cancelled); // the flag wins over the deadline
    QVERIFY(StopToken(&flag).stop_requested());
    // The planner's token: time_limit_s seconds after the start, none for 0.
    const auto t = Clock::now();
    QVERIFY(!StopToken::with_time_limit(nullptr, 0, t).deadline());
    QVERIFY(!StopToken::with_time_limit(nullptr, -1, t).deadline());
    QVERIFY(*StopToken::with_time_limit(nullptr, 2.5, t).deadline() == t + std::chrono::milliseconds(2500));
    QCOMPARE(StopToken::with_time_limit(&flag, 3600, t).reason(), StopReason::Cancelled);
    // A latch keeps the first reason a poll saw, and answers true from then on.
    flag = false;
    StopLatch latch{StopToken(&flag, future)};
    QVERIFY(!latch.poll());
    QCOMPARE(latch.reason(), StopReason::None);
    flag = true;
    QVERIFY(latch.poll());
    flag = false;
    QVERIFY(latch.poll());
    QVERIFY(latch.stopped());
    QCOMPARE(latch.reason(), StopReason::Cancelled);
    StopLatch late{StopToken(&flag, past)};
    QVERIFY(late.poll());
    flag = true;
    QVERIFY(late.poll());
    QCOMPARE(late.reason(), StopReason::TimeLimit);
}

void TestAnnealing::cancelFromOnLevel() {
    const PackingProblem p = standard_problem(22);
    const auto pop = make_population(p, ffd_rows(p), 4, 6);
    std::atomic<bool> cancel{false};
    const auto caller = std::this_thread::get_id();
    bool on_caller = true;
    const AnnealResult r = population_anneal(
        p, pop, small_budget(),
        [&](const LevelStats& s) {
            on_caller = on_caller && std::this_thread::get_id() == caller;
            if (s.level == 0) cancel = true;
        },
        StopToken(&cancel));
    QVERIFY(on_caller);
    QVERIFY(r.cancelled);
    QVERIFY(!r.time_limit_hit);
    QCOMPARE(static_cast<int>(r.levels.size()), 1);
    QVERIFY(validate_layout(r.best, p).empty());
    QVERIFY(!(r.initial_best < r.score));
    QVERIFY(r.score == r.levels[0].best);
}

void TestAnnealing::deadlineInThePast() {
    const PackingProblem p = standard_problem(23);
    const auto pop = make_population(p, ffd_rows(p), 4, 7);
    const AnnealResult r = population_anneal(
        p, pop, small_budget(), {}, StopToken(nullptr, std::chrono::steady_clock::now() - std::chrono::seconds(1)));
    QVERIFY(r.time_limit_hit);
    QVERIFY(r.cancelled);
    QVERIFY(r.levels.empty());
    QCOMPARE(r.proposals, std::int64_t{0});
    QVERIFY(validate_layout(r.best, p).empty());
    QVERIFY(r.score == r.initial_best);
    QVERIFY(r.score == best_seed_score(pop, p));
}

void TestAnnealing::deadlineDuringRun() {
    // A budget far beyond the deadline: the chains stop within ~256 proposals of it.
    const PackingProblem p = standard_problem(24);
    const auto pop = make_population(p, ffd_rows(p), 4, 8);
    AnnealingBudget b = small_budget();
    b.steps = 1 << 30;
    const auto t0 = std::chrono::steady_clock::now();
    const AnnealResult r = population_anneal(p, pop, b, {}, StopToken(nullptr, t0 + std::chrono::milliseconds(100)));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QVERIFY(r.time_limit_hit);
    QVERIFY(r.cancelled);
    QVERIFY(r.levels.empty()); // the interrupted level is not reported
    QVERIFY(r.proposals > 0);
    QVERIFY2(secs < 5.0, qPrintable(QString("took %1 s").arg(secs)));
    QVERIFY(validate_layout(r.best, p).empty());
    QVERIFY(!(r.initial_best < r.score));
}

void TestAnnealing::acceptanceRateFollowsTemperature() {
    const PackingProblem p = standard_problem(25);
    const auto pop = make_population(p, ffd_rows(p), 4, 9);
    AnnealingBudget b = small_budget();
    b.levels = 1;
    b.steps = 2000;
    b.t0 = 1.0; // a 1 % worse energy is accepted with probability ~ 0.99
    const AnnealResult hot = population_anneal(p, pop, b);
    b.t0 = 1e-7;
    const AnnealResult cold = population_anneal(p, pop, b);
    const double a_hot = hot.levels[0].acceptance, a_cold = cold.levels[0].acceptance;
    QVERIFY2(a_hot > 0 && a_hot < 1, qPrintable(QString::number(a_hot)));
    QVERIFY2(a_cold >= 0 && a_cold < a_hot, qPrintable(QString("%1 vs %2").arg(a_cold).arg(a_hot)));
    // Nearly every feasible proposal is accepted when hot.
    const double feasible = static_cast<double>(hot.levels[0].proposals - hot.levels[0].infeasible);
    QVERIFY(feasible > 0);
    QVERIFY2(static_cast<double>(hot.accepted) / feasible > 0.8,
             qPrintable(QString::number(static_cast<double>(hot.accepted) / feasible)));
    QCOMPARE(hot.levels[0].temperature, 1.0);
    QCOMPARE(hot.levels[0].proposals, std::int64_t{2000 * 4});
}

void TestAnnealing::zeroLevelsReturnsBestSeed() {
    const PackingProblem p = standard_problem(26);
    const auto pop = make_population(p, ffd_rows(p), 3, 10);
    AnnealingBudget b = small_budget();
    b.levels = 0;
    const AnnealResult r = population_anneal(p, pop, b);
    QVERIFY(r.levels.empty());
    QVERIFY(r.score == best_seed_score(pop, p));
    QVERIFY(!r.cancelled);
    // Temperatures follow T_n = t0 * cooling^n.
    b.levels = 3;
    b.steps = 10;
    const AnnealResult r3 = population_anneal(p, pop, b);
    QCOMPARE(r3.levels.size(), std::size_t{3});
    QCOMPARE(r3.levels[2].temperature, b.t0 * b.cooling * b.cooling);
}

void TestAnnealing::rejectsBadBudgetAndPopulation() {
    const PackingProblem p = standard_problem(27);
    const auto pop = make_population(p, ffd_rows(p), 2, 11);
    auto with = [&](auto edit) {
        AnnealingBudget b = small_budget();
        edit(b);
        return b;
    };
    QVERIFY_THROWS_EXCEPTION(InputError, population_anneal(p, pop, with([](AnnealingBudget& b) { b.t0 = 0; })));
    QVERIFY_THROWS_EXCEPTION(InputError, population_anneal(p, pop, with([](AnnealingBudget& b) { b.cooling = 1.5; })));
    QVERIFY_THROWS_EXCEPTION(InputError, population_anneal(p, pop, with([](AnnealingBudget& b) { b.steps = -1; })));
    QVERIFY_THROWS_EXCEPTION(InputError, population_anneal(p, pop, with([](AnnealingBudget& b) { b.rho = 2; })));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, population_anneal(p, {}, small_budget()));
    auto broken = pop;
    broken[1].layout = without_first_cell(broken[1].layout);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, population_anneal(p, broken, small_budget()));
}

void TestAnnealing::stragglerAimedProposalsDeterministic() {
    const PackingProblem p = standard_problem(31);
    const auto pop = make_population(p, ffd_rows(p), 5, 9);
    AnnealingBudget b = small_budget();
    b.p_straggler = 0.7;
    const AnnealResult a = on_workers(1, [&] { return population_anneal(p, pop, b); });
    const AnnealResult c = on_workers(2, [&] { return population_anneal(p, pop, b); });
    QVERIFY(a.best == c.best);
    QVERIFY(a.score == c.score);
    QVERIFY(same_stats(a.levels, c.levels));
    QVERIFY(!(best_seed_score(pop, p) < a.score));
    QCOMPARE(validate_layout(a.best, p), std::string());
    // The branch draws differently: the run differs from the plain guided proposal.
    b.p_straggler = 0;
    const AnnealResult plain = population_anneal(p, pop, b);
    QVERIFY(!same_stats(plain.levels, a.levels));
    b.p_straggler = 1.5;
    QCOMPARE(QString::fromStdString([&] {
                 try {
                     population_anneal(p, pop, b);
                 } catch (const InputError& e) {
                     return std::string(e.what());
                 }
                 return std::string("<no error>");
             }()),
             QStringLiteral("annealing budget: p_straggler must be in [0, 1] (got 1.500000)"));
}

void TestAnnealing::descentReachesLocalOptimum() {
    for (std::uint64_t seed : {41, 42, 43}) {
        std::mt19937_64 g(seed);
        const PackingProblem p = random_problem(g, 24, 2, 3, 4, 2, 900, 40, 500);
        const int rows = ffd_rows(p);
        QVERIFY(rows > 0);
        const auto pop = make_population(p, rows, 1, seed);
        const Layout& x = pop[0].layout;
        const DescentResult d = straggler_descent(p, x, 10000000);
        QCOMPARE(validate_layout(d.layout, p), std::string());
        QVERIFY(d.local_optimum);
        QVERIFY(!d.cancelled);
        QVERIFY(d.improvements > 0);
        QVERIFY(d.score < score_layout(x, p));
        QVERIFY(d.score == score_layout(d.layout, p));
        // Brute force with full rescoring: no relocation or swap of a sample of the straggler shard
        // (the first shard with U = max U) improves the score tuple.
        QCOMPARE(straggler_move_improving(d.layout, d.score, p), std::string());
        // RNG-free: the same input gives the same layout; a budget stops it early, never worse.
        QVERIFY(straggler_descent(p, x, 10000000).layout == d.layout);
        const DescentResult short_run = straggler_descent(p, x, 3);
        QCOMPARE(short_run.evaluations, std::int64_t{3});
        QVERIFY(!short_run.local_optimum);
        QVERIFY(!(score_layout(x, p) < short_run.score));
        const DescentResult none = straggler_descent(p, x, 0);
        QVERIFY(none.layout == x);
        QCOMPARE(none.evaluations, std::int64_t{0});
    }
}

void TestAnnealing::iteratedSearchInvariants() {
    // Plain and guided descents, with and without kicks: valid, never worse than the start, the
    // reported score is the full rescoring of the reported layout, and the counts add up.
    for (std::uint64_t seed : {41, 42, 43}) {
        std::mt19937_64 g(seed);
        const PackingProblem p = random_problem(g, 40, 3, 4, 4, 2, 1500, 40, 500);
        const int rows = ffd_rows(p);
        QVERIFY(rows > 0);
        const Layout x = make_population(p, rows, 1, seed)[0].layout;
        const Score start = score_layout(x, p);
        for (int verify : {0, 1, 8}) {
            for (int kicks : {0, 3}) {
                PolishSettings s;
                s.evaluations = kicks ? 20000 : 10000000;
                s.kick_moves = kicks;
                s.verify = verify;
                const PolishResult r = iterated_straggler_search(p, x, s, seed);
                QCOMPARE(validate_layout(r.layout, p), std::string());
                QVERIFY(r.score == score_layout(r.layout, p));
                QVERIFY(!(start < r.score));
                QVERIFY(!r.cancelled);
                QVERIFY(r.kicks_kept <= r.kicks);
                if (kicks == 0) {
                    QCOMPARE(r.kicks, 0);
                    QVERIFY(r.local_optimum); // the budget is never reached on 40 samples
                    QVERIFY(r.improvements > 0);
                    QVERIFY(r.score < start);
                } else {
                    QVERIFY(r.kicks > 0);
                    QVERIFY(r.evaluations >= s.evaluations); // kicks run until the budget is spent
                    // Kicking only ever keeps better layouts: never worse than the kick-free run.
                    PolishSettings plain = s;
                    plain.kick_moves = 0;
                    plain.evaluations = 10000000;
                    QVERIFY(!(iterated_straggler_search(p, x, plain, seed).score < r.score));
                }
            }
        }
        // The plain descent at its local optimum: brute force with full rescoring finds no
        // relocation or swap of a straggler-shard sample that improves the tuple.
        PolishSettings plain;
        plain.evaluations = 10000000;
        plain.kick_moves = 0;
        plain.verify = 0;
        const PolishResult d = iterated_straggler_search(p, x, plain, seed);
        QCOMPARE(straggler_move_improving(d.layout, d.score, p), std::string());
    }
}

void TestAnnealing::kickStopsWithinItsMoves() {
    // A stop that fires while a kick of a million moves runs ends it within 256 moves: the cancel is
    // set at the first improvement, so the first kick starts with it set.
    std::mt19937_64 g(7);
    const PackingProblem p = random_problem(g, 40, 3, 4, 4, 2, 1500, 40, 500);
    const Layout x = make_population(p, ffd_rows(p), 1, 7)[0].layout;
    PolishSettings s;
    s.evaluations = 100000000;
    s.kick_moves = 1000000;
    std::atomic<bool> cancel{false};
    const PolishResult r =
        iterated_straggler_search(p, x, s, 7, StopToken(&cancel), [&](const Score&) { cancel.store(true); });
    QVERIFY(cancel.load());
    QVERIFY(r.cancelled);
    QVERIFY2(r.evaluations < 20000, qPrintable(QString::number(r.evaluations)));
    QCOMPARE(validate_layout(r.layout, p), std::string());
    QVERIFY(r.score == score_layout(r.layout, p));
    QVERIFY(!(score_layout(x, p) < r.score));
}

void TestAnnealing::guidedSearchWithoutPeakTable() {
    // The guided descent's [rows x shards][n] table of peak demands grows quadratically with the
    // window; without it (guide_table_bytes below its size) the values are formed when needed and the
    // search makes exactly the same moves: same layout, score and counts, kicks included.
    for (std::uint64_t seed : {5, 6}) {
        std::mt19937_64 g(seed);
        const PackingProblem p = random_problem(g, 60, 3, 4, 4, 2, 2000, 40, 500);
        const int rows = ffd_rows(p);
        QVERIFY(rows > 0);
        const Layout x = make_population(p, rows, 1, seed)[0].layout;
        PolishSettings s;
        s.evaluations = 20000;
        s.kick_moves = 3;
        const PolishResult table = iterated_straggler_search(p, x, s, seed);
        s.guide_table_bytes = 0;
        const PolishResult none = iterated_straggler_search(p, x, s, seed);
        QVERIFY(table.improvements > 0);
        QVERIFY(table.layout == none.layout);
        QVERIFY(table.score == none.score);
        QCOMPARE(table.evaluations, none.evaluations);
        QCOMPARE(table.improvements, none.improvements);
        QCOMPARE(table.kicks, none.kicks);
        QCOMPARE(table.kicks_kept, none.kicks_kept);
    }
}

void TestAnnealing::iteratedSearchDeterministicAcrossWorkers() {
    std::mt19937_64 g(7);
    const PackingProblem p = random_problem(g, 60, 3, 4, 4, 2, 2000, 40, 500);
    const int rows = ffd_rows(p);
    QVERIFY(rows > 0);
    const Layout x = make_population(p, rows, 1, 3)[0].layout;
    PolishSettings s;
    s.evaluations = 15000;
    s.replicas = 3;
    s.kick_moves = 3;
    const PolishResult a = on_workers(1, [&] { return iterated_straggler_search(p, x, s, 11); });
    const PolishResult b = on_workers(2, [&] { return iterated_straggler_search(p, x, s, 11); });
    QVERIFY(a.layout == b.layout);
    QVERIFY(a.score == b.score);
    QCOMPARE(a.evaluations, b.evaluations);
    QCOMPARE(a.improvements, b.improvements);
    QCOMPARE(a.kicks, b.kicks);
    QCOMPARE(a.kicks_kept, b.kicks_kept);
    // Three replicas spend three budgets; another seed draws other kicks.
    QVERIFY(a.evaluations >= 3 * s.evaluations);
    const PolishResult c = iterated_straggler_search(p, x, s, 12);
    QVERIFY(c.evaluations != a.evaluations || !(c.layout == a.layout));
    // The best of three replicas is never worse than replica 0 alone (the same stream).
    PolishSettings one = s;
    one.replicas = 1;
    QVERIFY(!(iterated_straggler_search(p, x, one, 11).score < a.score));
}

void TestAnnealing::iteratedSearchBudgetsAndStops() {
    std::mt19937_64 g(5);
    const PackingProblem p = random_problem(g, 30, 2, 3, 4, 2, 1200, 40, 500);
    const int rows = ffd_rows(p);
    QVERIFY(rows > 0);
    const Layout x = make_population(p, rows, 1, 2)[0].layout;
    auto error_of = [&](PolishSettings s) {
        try {
            iterated_straggler_search(p, x, s, 1);
        } catch (const InputError& e) {
            return QString::fromUtf8(e.what());
        }
        return QStringLiteral("<no error>");
    };
    PolishSettings s;
    s.evaluations = -1;
    QCOMPARE(error_of(s), QStringLiteral("polish budget: evaluations must be >= 0 (got -1)"));
    s = {};
    s.replicas = 0;
    QCOMPARE(error_of(s), QStringLiteral("polish budget: replicas must be >= 1 (got 0)"));
    s = {};
    s.kick_moves = -2;
    QCOMPARE(error_of(s), QStringLiteral("polish budget: kick_moves must be >= 0 (got -2)"));
    s = {};
    s.verify = -1;
    QCOMPARE(error_of(s), QStringLiteral("polish budget: verify must be >= 0 (got -1)"));
    const Layout broken = without_first_cell(x);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, iterated_straggler_search(p, broken, PolishSettings{}, 1));
    // A zero budget returns the start; a set cancel flag or a past deadline stops at once.
    s = {};
    s.evaluations = 0;
    const PolishResult none = iterated_straggler_search(p, x, s, 1);
    QVERIFY(none.layout == x);
    QCOMPARE(none.evaluations, std::int64_t{0});
    std::atomic<bool> cancel{true};
    const PolishResult c = iterated_straggler_search(p, x, PolishSettings{}, 1, StopToken(&cancel));
    QVERIFY(c.cancelled);
    QVERIFY(c.layout == x);
    const PolishResult d =
        iterated_straggler_search(p, x, PolishSettings{}, 1, StopToken(nullptr, std::chrono::steady_clock::now()));
    QVERIFY(d.cancelled);
    QVERIFY(d.layout == x);
    // Where nothing can move (one cell) the kicks still spend the budget and the run ends.
    {
        std::mt19937_64 g1(3);
        const PackingProblem one = random_problem(g1, 5, 2, 2, 1, 1, 100000, 40, 500);
        const Layout single = Layout::from_cells(1, 1, {{0, 1, 2, 3, 4}});
        PolishSettings k;
        k.evaluations = 50;
        const PolishResult r = iterated_straggler_search(one, single, k, 1);
        QVERIFY(r.layout == single);
        QCOMPARE(r.improvements, std::int64_t{0});
        QCOMPARE(r.evaluations, std::int64_t{50});
        QCOMPARE(r.kicks, 45); // five visits ranked nothing (a unit each), then a unit per empty kick
    }
    // on_improve reports strictly decreasing scores, the last one the result's.
    std::vector<Score> seen;
    const PolishResult e =
        iterated_straggler_search(p, x, PolishSettings{}, 1, {}, [&](const Score& sc) { seen.push_back(sc); });
    QVERIFY(!seen.empty());
    for (std::size_t k = 1; k < seen.size(); ++k)
        QVERIFY(seen[k] < seen[k - 1]);
    QVERIFY(seen.back() == e.score);
}

QTEST_GUILESS_MAIN(TestAnnealing)
#include "tst_annealing.moc"
