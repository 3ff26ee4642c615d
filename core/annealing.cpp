// Fixed-row population annealing (paper section 4.1.2-4.1.3, Algorithm 3).
//
// Control flow (line numbers of Algorithm 3):
//   1     x* <- the best seed by the exact score tuple (eq. 15), every seed rescored here.
//   2-12  per level n (T_n = t0 * cooling^n), all P_pop chains run in parallel on one TBB arena; a
//         chain owns an IncrementalScorer over its member and K proposals of GuidedProposal;
//         infeasible proposals are skipped (line 6-7) but counted as proposed; Metropolis acceptance
//         on the normalized energy delta (line 9-10, energy = eq. 16); the trajectory-best b_j is
//         kept (line 11) and the terminal state z_j returned (line 12).
//   13    x* <- minScore(x*, b_0..b_{P-1}) in member order (first strict improvement wins).
//   14-18 systematic resampling of the terminal states (systematic_resample below).
//   19    validate x* and assert non-regression against the best seed (std::logic_error).
//
// Determinism: chain j at level n draws from an Rng seeded by (seed, n, j) only, the level's u0 from
// an Rng seeded by (seed, n, <level tag>); chains write their results into slot j, and every
// reduction runs serially in member order on the calling thread. The result is therefore the same
// for every worker count (unless cancellation or the deadline stops the run).
#include "core/annealing.h"

#include "core/errors.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace routepack {

namespace {

using Clock = std::chrono::steady_clock;

/// Proposals between two polls of the cancel flag and the deadline inside a chain.
constexpr int kPollMask = 255;
/// Uniform row-shard draws whose smallest J is the guided target (tournament selection).
constexpr int kTargetDraws = 3;
/// Bound on the rejection draws of the guided source row-shard.
constexpr int kMaxRejections = 1024;

/// splitmix64 finalizer: a bijective 64-bit mixer.
std::uint64_t mix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// RNG stream seed from (seed, level, member) only: the determinism contract of the header.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t level, std::uint64_t member) {
    std::uint64_t h = mix64(seed);
    h = mix64(h ^ (0xd1b54a32d192ed03ULL * (level + 1)));
    return mix64(h ^ (0x8cb92ba72f3d8dd7ULL * (member + 1)));
}
/// The member index used for the level's own stream (resampling u0); never a real member.
constexpr std::uint64_t kLevelStream = std::numeric_limits<std::uint64_t>::max();

/// Shared stop state of one run: the caller's cancel flag, the deadline, and the flag that tells
/// every chain to finish immediately once one of them was seen.
struct StopState {
    const std::atomic<bool>* cancel = nullptr;
    std::optional<Clock::time_point> deadline;
    std::atomic<bool> stop{false};
    std::atomic<bool> cancelled{false};
    std::atomic<bool> time_limit{false};

    /// True when the run must stop (sets the reason flags the first time it sees one).
    bool poll() {
        if (stop.load(std::memory_order_relaxed)) return true;
        if (cancel && cancel->load(std::memory_order_relaxed)) {
            cancelled.store(true, std::memory_order_relaxed);
            stop.store(true, std::memory_order_relaxed);
            return true;
        }
        if (deadline && Clock::now() >= *deadline) {
            time_limit.store(true, std::memory_order_relaxed);
            stop.store(true, std::memory_order_relaxed);
            return true;
        }
        return false;
    }
};

/// Fixed per-level chain parameters.
struct ChainConfig {
    double inv_t = 1; ///< 1 / T_n
    int steps = 0;    ///< K
    double p_guide = 0;
    double rho = 0;
};

/// What a chain returns (Algorithm 3 lines 11-12): trajectory-best b_j and terminal z_j, plus counts.
struct ChainOutcome {
    Layout best;
    Score best_score;
    Layout terminal;
    Score terminal_score;
    std::int64_t proposals = 0;
    std::int64_t accepted = 0;
    std::int64_t infeasible = 0;
};

/// One fixed-temperature chain (Algorithm 3 lines 3-12) from `start`.
///
/// GuidedProposal (paper section 4.1.2), with probability p_guide:
///  - source row-shard (r, g) drawn with probability exactly proportional to J[r][g] (the straggler,
///    "in proportion to its current contribution"), by rejection sampling against max J, which is
///    s2 of the current score; within it, the cell (r, d), d in D_g, drawn with probability
///    proportional to its token sum (the attention straggler of the shard maximum);
///  - target row-shard: the smallest J among kTargetDraws = 3 uniform draws (tournament: biased
///    toward small J, every row-shard possible); the target cell (r', d') with d' uniform in D_{g'};
///  - a relocation (probability rho) moves a uniform sample of the source cell among those that fit
///    the target cell's free room; a swap moves a uniform sample i of the source cell;
/// otherwise (uniform branch) i is uniform over the samples and the target cell uniform over the
/// other R*D - 1 cells, then relocation with probability rho, else swap. The swap partner j is a
/// uniform sample of the target cell among those that keep both cells within C. A proposal whose
/// target is i's own cell, that would empty the source, or has no cap-feasible choice is skipped
/// (line 6-7) and counted as proposed and infeasible.
///
/// Both guided draws are O(1) expected and read only cached J values, so nothing needs upkeep per
/// accepted move beyond the scorer's own; nothing is allocated per proposal; b_j's layout is copied
/// (into reused capacity) only when the chain's score strictly improves on b_j.
void run_chain(const PackingProblem& p, const Layout& start, const ChainConfig& cfg, std::uint64_t seed,
               StopState& stop, ChainOutcome& out) {
    IncrementalScorer sc(p, start);
    Rng rng(seed);
    const int R = start.rows;
    const int D = p.D;
    const int G = p.G;
    const int RG = R * G;
    const int cells = R * D;
    Score cur = sc.score();
    out.best = start;
    out.best_score = cur;

    const auto& lay = sc.layout();
    for (int step = 0; step < cfg.steps; ++step) {
        if ((step & kPollMask) == kPollMask && stop.poll()) break;
        ++out.proposals;
        int i = 0, from = 0, to = 0;
        bool relocate = false;
        if (rng.uniform() < cfg.p_guide) {
            // Source row-shard with probability J / sum J: rejection sampling against max J = s2 of
            // the current score (expected max J / mean J draws, no per-move upkeep).
            // The draw count is bounded so that no cost vector can stall a chain; J = max J always
            // accepts, so the bound is never reached in practice.
            int rs = static_cast<int>(rng.below(static_cast<std::uint64_t>(RG)));
            for (int t = 0; t < kMaxRejections && cur.max_j > 0 &&
                            !(rng.uniform() * cur.max_j < sc.row_shard_cost(rs / G, rs % G));
                 ++t)
                rs = static_cast<int>(rng.below(static_cast<std::uint64_t>(RG)));
            const int r = rs / G;
            const auto& slots = p.shards[static_cast<std::size_t>(rs % G)];
            int d = slots[0];
            if (slots.size() > 1) {
                std::int64_t sum = 0;
                for (int s : slots)
                    sum += sc.cell_tokens(r * D + s);
                if (sum > 0) {
                    std::int64_t x = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(sum)));
                    for (int s : slots) {
                        x -= sc.cell_tokens(r * D + s);
                        if (x < 0) {
                            d = s;
                            break;
                        }
                    }
                } else {
                    d = slots[rng.below(slots.size())];
                }
            }
            from = r * D + d;
            // Target row-shard: the smallest J among kTargetDraws uniform draws (first wins ties).
            int rt = static_cast<int>(rng.below(static_cast<std::uint64_t>(RG)));
            double jt = sc.row_shard_cost(rt / G, rt % G);
            for (int t = 1; t < kTargetDraws; ++t) {
                const int c = static_cast<int>(rng.below(static_cast<std::uint64_t>(RG)));
                const double jc = sc.row_shard_cost(c / G, c % G);
                if (jc < jt) {
                    rt = c;
                    jt = jc;
                }
            }
            const auto& tslots = p.shards[static_cast<std::size_t>(rt % G)];
            to = (rt / G) * D + tslots[rng.below(tslots.size())];
            if (to == from) {
                ++out.infeasible;
                continue;
            }
            const auto& src = lay.cells[static_cast<std::size_t>(from)];
            relocate = rng.uniform() < cfg.rho;
            if (relocate) {
                // A sample of the source cell that fits the target cell's free room.
                if (src.size() < 2) {
                    ++out.infeasible;
                    continue;
                }
                const std::int64_t room = p.C - sc.cell_tokens(to);
                std::uint64_t count = 0;
                for (int c : src)
                    count += p.length[static_cast<std::size_t>(c)] <= room;
                if (count == 0) {
                    ++out.infeasible;
                    continue;
                }
                std::uint64_t pick = rng.below(count);
                for (int c : src)
                    if (p.length[static_cast<std::size_t>(c)] <= room && pick-- == 0) {
                        i = c;
                        break;
                    }
            } else {
                i = src[rng.below(src.size())];
            }
        } else {
            if (cells < 2) {
                ++out.infeasible;
                continue;
            }
            i = static_cast<int>(rng.below(static_cast<std::uint64_t>(p.n)));
            from = sc.cell_of(i);
            to = static_cast<int>(rng.below(static_cast<std::uint64_t>(cells - 1)));
            if (to >= from) ++to;
            relocate = rng.uniform() < cfg.rho;
            if (relocate && !sc.relocate_feasible(i, to)) {
                ++out.infeasible;
                continue;
            }
        }
        Score next;
        if (relocate) {
            next = sc.apply_relocate(i, to);
        } else {
            // Swap partner: a uniform sample j of the target cell among those that keep both cells
            // within C (t_j in [t_i - free(to), t_i + free(from)]); none -> infeasible.
            const auto& dst = lay.cells[static_cast<std::size_t>(to)];
            const std::int64_t ti = p.length[static_cast<std::size_t>(i)];
            const std::int64_t lo = ti - (p.C - sc.cell_tokens(to));
            const std::int64_t hi = ti + (p.C - sc.cell_tokens(from));
            std::uint64_t count = 0;
            for (int c : dst) {
                const std::int64_t tc = p.length[static_cast<std::size_t>(c)];
                count += tc >= lo && tc <= hi;
            }
            if (count == 0) {
                ++out.infeasible;
                continue;
            }
            std::uint64_t pick = rng.below(count);
            int j = -1;
            for (int c : dst) {
                const std::int64_t tc = p.length[static_cast<std::size_t>(c)];
                if (tc >= lo && tc <= hi && pick-- == 0) {
                    j = c;
                    break;
                }
            }
            next = sc.apply_swap(i, j);
        }
        // Line 9-10: accept a strictly better tuple, else Metropolis on the normalized energy delta.
        bool accept = next < cur;
        if (!accept) {
            const double e = cur.energy();
            const double delta = (next.energy() - e) / std::max(std::abs(e), 1.0);
            accept = delta <= 0 || rng.uniform() < std::exp(-delta * cfg.inv_t);
        }
        if (accept) {
            cur = next;
            ++out.accepted;
            if (cur < out.best_score) { // line 11: b_j <- minScore(b_j, y)
                out.best_score = cur;
                out.best = lay;
            }
        } else {
            sc.undo();
        }
    }
    out.terminal = lay; // line 12
    out.terminal_score = cur;
}

void check_budget(const AnnealingBudget& b) {
    auto bad = [](const std::string& what) { throw InputError("annealing budget: " + what); };
    if (b.levels < 0) bad("levels must be >= 0 (got " + std::to_string(b.levels) + ")");
    if (b.steps < 0) bad("steps must be >= 0 (got " + std::to_string(b.steps) + ")");
    if (!(b.t0 > 0) || !std::isfinite(b.t0)) bad("t0 must be a positive number (got " + std::to_string(b.t0) + ")");
    if (!(b.cooling > 0 && b.cooling <= 1)) bad("cooling must be in (0, 1] (got " + std::to_string(b.cooling) + ")");
    if (!(b.p_guide >= 0 && b.p_guide <= 1)) bad("p_guide must be in [0, 1] (got " + std::to_string(b.p_guide) + ")");
    if (!(b.rho >= 0 && b.rho <= 1)) bad("rho must be in [0, 1] (got " + std::to_string(b.rho) + ")");
    if (b.workers < 0) bad("workers must be >= 0 (got " + std::to_string(b.workers) + ")");
    if (b.levels > 0 && !(b.t0 * std::pow(b.cooling, b.levels - 1) > 0))
        bad("the last temperature t0 * cooling^(levels-1) underflows to 0");
}

} // namespace

std::vector<int> systematic_resample(const std::vector<double>& energies, double t_now, double t_next, double u0) {
    const std::size_t P = energies.size();
    if (P == 0) return {};
    if (!(t_now > 0) || !(t_next > 0)) throw std::invalid_argument("systematic_resample: temperatures must be > 0");
    const double step = 1.0 / static_cast<double>(P);
    if (!(u0 >= 0 && u0 <= step)) throw std::invalid_argument("systematic_resample: u0 outside [0, 1/P]");
    // Line 15: Normalize, Boltzmann weights for the temperature change.
    const double e_min = *std::min_element(energies.begin(), energies.end());
    const double norm = std::max(std::abs(e_min), 1.0);
    const double c = 1.0 / t_next - 1.0 / t_now;
    std::vector<double> w(P);
    double sum = 0;
    for (std::size_t j = 0; j < P; ++j) {
        w[j] = std::exp(-c * ((energies[j] - e_min) / norm)); // E~_min = 0: the minimum has weight 1
        sum += w[j];
    }
    // Line 16: normalized weights, cumulative F.
    double f = 0;
    for (std::size_t j = 0; j < P; ++j) {
        f += w[j] / sum;
        w[j] = f;
    }
    // Lines 17-18: u_m = u0 + m/P, P_{n+1}[m] = z_{min{j : F_j >= u_m}}.
    std::vector<int> out(P);
    std::size_t j = 0;
    for (std::size_t m = 0; m < P; ++m) {
        const double u = u0 + static_cast<double>(m) * step;
        while (j + 1 < P && w[j] < u)
            ++j;
        out[m] = static_cast<int>(j);
    }
    return out;
}

AnnealResult population_anneal(const PackingProblem& p, const std::vector<SeedMember>& population,
                               const AnnealingBudget& b, const std::function<void(const LevelStats&)>& on_level,
                               const std::atomic<bool>* cancel, std::optional<Clock::time_point> deadline) {
    check_budget(b);
    if (population.empty()) throw std::invalid_argument("population_anneal: empty population");
    const int P = static_cast<int>(population.size());
    for (int j = 0; j < P; ++j) {
        const Layout& x = population[static_cast<std::size_t>(j)].layout;
        const std::string why = validate_layout(x, p);
        if (!why.empty())
            throw std::invalid_argument("population_anneal: member " + std::to_string(j) + " (" +
                                        population[static_cast<std::size_t>(j)].origin + ") is invalid: " + why);
        if (x.rows != population[0].layout.rows)
            throw std::invalid_argument("population_anneal: members have different row counts");
    }

    tbb::task_arena arena(b.workers > 0 ? b.workers : tbb::task_arena::automatic);
    auto parallel_members = [&](auto&& body) {
        arena.execute([&] {
            tbb::parallel_for(
                tbb::blocked_range<int>(0, P, 1),
                [&](const tbb::blocked_range<int>& range) {
                    for (int j = range.begin(); j != range.end(); ++j)
                        body(j);
                },
                tbb::simple_partitioner());
        });
    };

    // Line 1: x* <- argmin Score over P0 (exact rescoring; the members' stored scores are not trusted).
    std::vector<Score> seed_scores(static_cast<std::size_t>(P));
    parallel_members([&](int j) {
        seed_scores[static_cast<std::size_t>(j)] = score_layout(population[static_cast<std::size_t>(j)].layout, p);
    });
    int first = 0;
    for (int j = 1; j < P; ++j)
        if (seed_scores[static_cast<std::size_t>(j)] < seed_scores[static_cast<std::size_t>(first)]) first = j;

    AnnealResult result;
    result.initial_best = seed_scores[static_cast<std::size_t>(first)];
    Layout x_star = population[static_cast<std::size_t>(first)].layout;
    Score x_star_score = result.initial_best;

    std::vector<Layout> members(static_cast<std::size_t>(P));
    for (int j = 0; j < P; ++j)
        members[static_cast<std::size_t>(j)] = population[static_cast<std::size_t>(j)].layout;
    std::vector<ChainOutcome> outcomes(static_cast<std::size_t>(P));
    std::vector<double> terminal_energy(static_cast<std::size_t>(P));

    StopState stop;
    stop.cancel = cancel;
    stop.deadline = deadline;

    double t = b.t0;
    for (int n = 0; n < b.levels; ++n, t *= b.cooling) {
        if (stop.poll()) break;
        ChainConfig cfg;
        cfg.inv_t = 1.0 / t;
        cfg.steps = b.steps;
        cfg.p_guide = b.p_guide;
        cfg.rho = b.rho;
        // Lines 3-12, one task per member.
        parallel_members([&](int j) {
            ChainOutcome& o = outcomes[static_cast<std::size_t>(j)];
            o.proposals = o.accepted = o.infeasible = 0;
            run_chain(p, members[static_cast<std::size_t>(j)], cfg,
                      stream_seed(b.seed, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(j)), stop, o);
        });

        // Line 13, serially in member order. Trajectory bests are valid states even when a chain was
        // stopped early, so they count toward x* also for an interrupted level.
        LevelStats st;
        st.level = n;
        st.temperature = t;
        double energy_sum = 0;
        for (int j = 0; j < P; ++j) {
            const ChainOutcome& o = outcomes[static_cast<std::size_t>(j)];
            if (o.best_score < x_star_score) {
                x_star_score = o.best_score;
                x_star = o.best;
            }
            terminal_energy[static_cast<std::size_t>(j)] = o.terminal_score.energy();
            energy_sum += terminal_energy[static_cast<std::size_t>(j)];
            st.proposals += o.proposals;
            st.infeasible += o.infeasible;
            result.accepted += o.accepted;
            st.acceptance += static_cast<double>(o.accepted);
        }
        result.proposals += st.proposals;
        // An interrupted level is not reported (its statistics would describe partial chains).
        if (stop.stop.load(std::memory_order_relaxed)) break;
        st.acceptance = st.proposals > 0 ? st.acceptance / static_cast<double>(st.proposals) : 0.0;
        st.mean_energy = energy_sum / P;
        st.best = x_star_score;
        result.levels.push_back(st);
        if (on_level) on_level(st);

        // Lines 14-18: systematic resampling of the terminal states into P_{n+1}.
        if (n + 1 < b.levels) {
            Rng level_rng(stream_seed(b.seed, static_cast<std::uint64_t>(n), kLevelStream));
            const double u0 = level_rng.uniform() / P;
            const std::vector<int> pick = systematic_resample(terminal_energy, t, t * b.cooling, u0);
            for (int m = 0; m < P; ++m)
                members[static_cast<std::size_t>(m)] =
                    outcomes[static_cast<std::size_t>(pick[static_cast<std::size_t>(m)])].terminal;
        }
    }
    result.cancelled = stop.cancelled.load() || stop.time_limit.load();
    result.time_limit_hit = stop.time_limit.load();

    // Line 19: validate and assert non-regression on a full rescoring of x*.
    const std::string why = validate_layout(x_star, p);
    if (!why.empty()) throw std::logic_error("population_anneal: result layout is invalid: " + why);
    result.score = score_layout(x_star, p);
    if (result.initial_best < result.score)
        throw std::logic_error("population_anneal: result is worse than the best seed (non-regression violated)");
    result.best = std::move(x_star);
    return result;
}

} // namespace routepack
