// Fixed-row population annealing (paper section 4.1.2-4.1.3, Algorithm 3).
//
// Control flow (line numbers of Algorithm 3):
//   1     x* <- the best seed by the exact score tuple (eq. 15), every seed rescored here.
//   2-12  per level n (T_n = t0 * cooling^n), all P_pop chains run in parallel on the caller's TBB arena; a
//         chain runs K proposals of GuidedProposal on its member's IncrementalScorer, which lives
//         for the whole run (built once from P0; resampling hands objects over and copies state only
//         where a terminal state is picked twice, see ResampleReuse);
//         infeasible proposals are skipped (line 6-7) but counted as proposed; Metropolis acceptance
//         on the normalized energy delta (line 9-10, energy = eq. 16); the trajectory-best b_j is
//         kept (line 11) and the terminal state z_j returned (line 12).
//   13    x* <- minScore(x*, b_0..b_{P-1}) in member order (first strict improvement wins).
//   14-18 systematic resampling of the terminal states (systematic_resample below), applied to the
//         scorers by plan_resample_reuse.
//   19    validate x* and assert non-regression against the best seed (std::logic_error).
//
// Determinism: chain j at level n draws from an Rng seeded by (seed, n, j) only, the level's u0 from
// an Rng seeded by (seed, n, <level tag>); chains write their results into slot j, and every
// reduction runs serially in member order on the calling thread. The result is therefore the same
// for every worker count (unless cancellation or the deadline stops the run).
#include "core/plan/annealing.h"
#include "core/util/seeds.h"

#include "core/util/errors.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace routepack {

namespace {

using Clock = std::chrono::steady_clock;

/// Proposals between two polls of the cancel flag and the deadline inside a chain.
constexpr int kPollMask = 255;
/// Uniform row-shard draws whose smallest J is the guided target (tournament selection).
constexpr int kTargetDraws = 3;
/// Bound on the rejection draws of the guided source row-shard.
constexpr int kMaxRejections = 1024;

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
    double p_straggler = 0;
};

/// What a chain returns (Algorithm 3 lines 11-12): trajectory-best b_j (as a flat per-sample
/// placement, copied into reused storage) and the terminal score, plus counts. The terminal state
/// z_j itself stays in the chain's scorer.
struct ChainOutcome {
    SamplePlacement best;
    Score best_score;
    Score terminal_score;
    std::int64_t proposals = 0;
    std::int64_t accepted = 0;
    std::int64_t infeasible = 0;
};

/// One fixed-temperature chain (Algorithm 3 lines 3-12) from the scorer's current state, which it
/// leaves at the terminal state z_j.
///
/// GuidedProposal (paper section 4.1.2), with probability p_guide:
///  - source row-shard (r, g) drawn with probability exactly proportional to J[r][g] (the straggler,
///    "in proportion to its current contribution"), by rejection sampling against max J, which is
///    s2 of the current score; or, with probability p_straggler (G > 1), a row-shard (r, g*) of the
///    straggler shard g* (U_{g*} = s0) with probability J[r][g*] / U_{g*}, the target then drawn
///    among the other shards' row-shards only (a move that leaves g* untouched cannot lower s0);
///    within the source row-shard, the cell (r, d), d in D_g, drawn with probability
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
/// accepted move beyond the scorer's own; nothing is allocated per proposal (the scorer's cells are
/// flat); b_j is copied (2n ints, into reused storage) only when the chain's score strictly
/// improves on b_j.
void run_chain(const PackingProblem& p, IncrementalScorer& sc, const ChainConfig& cfg, std::uint64_t seed,
               StopState& stop, ChainOutcome& out) {
    Rng rng(seed);
    const int R = sc.rows();
    const int D = p.D;
    const int G = p.G;
    const int RG = R * G;
    const int cells = R * D;
    Score cur = sc.score();
    sc.copy_placement_to(out.best);
    out.best_score = cur;

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
            const bool aim = G > 1 && cfg.p_straggler > 0 && rng.uniform() < cfg.p_straggler;
            const int gs = aim ? sc.straggler_shard() : -1;
            int rs;
            if (aim) {
                // Straggler branch: a row of g* with probability J[r][g*] / U_{g*} (rejection against
                // max_r J[r][g*]); only a move out of g*'s row-shards can lower s0.
                const double mj = sc.shard_max_j(gs);
                int r = static_cast<int>(rng.below(static_cast<std::uint64_t>(R)));
                for (int t = 0; t < kMaxRejections && mj > 0 && !(rng.uniform() * mj < sc.row_shard_cost(r, gs)); ++t)
                    r = static_cast<int>(rng.below(static_cast<std::uint64_t>(R)));
                rs = r * G + gs;
            } else {
                rs = static_cast<int>(rng.below(static_cast<std::uint64_t>(RG)));
                for (int t = 0; t < kMaxRejections && cur.max_j > 0 &&
                                !(rng.uniform() * cur.max_j < sc.row_shard_cost(rs / G, rs % G));
                     ++t)
                    rs = static_cast<int>(rng.below(static_cast<std::uint64_t>(RG)));
            }
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
            // Target row-shard: the smallest J among kTargetDraws uniform draws (first wins ties);
            // in the straggler branch the draws skip g* (uniform over the R (G-1) others).
            auto draw_target = [&] {
                if (!aim) return static_cast<int>(rng.below(static_cast<std::uint64_t>(RG)));
                const int c =
                    static_cast<int>(rng.below(static_cast<std::uint64_t>(R) * static_cast<std::uint64_t>(G - 1)));
                const int g = c % (G - 1);
                return (c / (G - 1)) * G + (g >= gs ? g + 1 : g);
            };
            int rt = draw_target();
            double jt = sc.row_shard_cost(rt / G, rt % G);
            for (int t = 1; t < kTargetDraws; ++t) {
                const int c = draw_target();
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
            const std::span<const int> src = sc.cell(from);
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
            const std::span<const int> dst = sc.cell(to);
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
                sc.copy_placement_to(out.best);
            }
        } else {
            sc.undo();
        }
    }
    out.terminal_score = cur; // line 12: z_j is the scorer's state
}

void check_budget(const AnnealingBudget& b) {
    auto bad = [](const std::string& what) { throw InputError("annealing budget: " + what); };
    if (b.levels < 0) bad("levels must be >= 0 (got " + std::to_string(b.levels) + ")");
    if (b.steps < 0) bad("steps must be >= 0 (got " + std::to_string(b.steps) + ")");
    if (!(b.t0 > 0) || !std::isfinite(b.t0)) bad("t0 must be a positive number (got " + std::to_string(b.t0) + ")");
    if (!(b.cooling > 0 && b.cooling <= 1)) bad("cooling must be in (0, 1] (got " + std::to_string(b.cooling) + ")");
    if (!(b.p_guide >= 0 && b.p_guide <= 1)) bad("p_guide must be in [0, 1] (got " + std::to_string(b.p_guide) + ")");
    if (!(b.rho >= 0 && b.rho <= 1)) bad("rho must be in [0, 1] (got " + std::to_string(b.rho) + ")");
    if (!(b.p_straggler >= 0 && b.p_straggler <= 1))
        bad("p_straggler must be in [0, 1] (got " + std::to_string(b.p_straggler) + ")");
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

void plan_resample_reuse(const std::vector<int>& pick, const std::vector<int>& obj, ResampleReuse& out) {
    const std::size_t P = pick.size();
    if (obj.size() != P) throw std::invalid_argument("plan_resample_reuse: pick and obj differ in size");
    for (int k : pick)
        if (k < 0 || static_cast<std::size_t>(k) >= P)
            throw std::invalid_argument("plan_resample_reuse: pick out of range");
    out.obj.assign(P, -1);
    out.copies.clear();
    out.claimed.assign(P, 0); // source member k's object already taken by a member of P_{n+1}
    out.is_source.assign(P, 0);
    for (int k : pick)
        out.is_source[static_cast<std::size_t>(k)] = 1;
    // Members that keep their own state take their own object.
    for (std::size_t m = 0; m < P; ++m)
        if (pick[m] == static_cast<int>(m)) {
            out.obj[m] = obj[m];
            out.claimed[m] = 1;
        }
    // The first member picking an unclaimed source takes that source's object (no copy).
    for (std::size_t m = 0; m < P; ++m) {
        const auto k = static_cast<std::size_t>(pick[m]);
        if (out.obj[m] < 0 && !out.claimed[k]) {
            out.obj[m] = obj[k];
            out.claimed[k] = 1;
        }
    }
    // The rest copy their source's state into an object nobody picked (as many as they need).
    std::size_t free_member = 0;
    for (std::size_t m = 0; m < P; ++m) {
        if (out.obj[m] >= 0) continue;
        while (out.is_source[free_member])
            ++free_member;
        out.obj[m] = obj[free_member++];
        out.copies.emplace_back(out.obj[m], obj[static_cast<std::size_t>(pick[m])]);
    }
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

    // The chains run on the caller's TBB arena (the planner owns the threads); the result does not
    // depend on its size.
    auto parallel_members = [&](auto&& body) {
        tbb::parallel_for(
            tbb::blocked_range<int>(0, P, 1),
            [&](const tbb::blocked_range<int>& range) {
                for (int j = range.begin(); j != range.end(); ++j)
                    body(j);
            },
            tbb::simple_partitioner());
    };

    auto parallel_for_count = [&](int count, auto&& body) {
        if (count == 0) return;
        tbb::parallel_for(
            tbb::blocked_range<int>(0, count, 1),
            [&](const tbb::blocked_range<int>& range) {
                for (int c = range.begin(); c != range.end(); ++c)
                    body(c);
            },
            tbb::simple_partitioner());
    };

    // Every member's chain state lives in one IncrementalScorer for the whole run (`pool`, member m
    // at pool[obj[m]]); resampling moves objects between members and copies state only where a
    // terminal state is picked more than once (ResampleReuse).
    std::vector<std::optional<IncrementalScorer>> slots(static_cast<std::size_t>(P));
    parallel_members(
        [&](int j) { slots[static_cast<std::size_t>(j)].emplace(p, population[static_cast<std::size_t>(j)].layout); });
    std::vector<IncrementalScorer> pool;
    pool.reserve(static_cast<std::size_t>(P));
    for (auto& x : slots)
        pool.push_back(std::move(*x));
    slots.clear();
    std::vector<int> obj(static_cast<std::size_t>(P));
    for (int j = 0; j < P; ++j)
        obj[static_cast<std::size_t>(j)] = j;

    // Line 1: x* <- argmin Score over P0 (exact rescoring: a new scorer's score is bitwise the full
    // score of eqs. 11-15; the members' stored scores are not trusted).
    int first = 0;
    for (int j = 1; j < P; ++j)
        if (pool[static_cast<std::size_t>(j)].score() < pool[static_cast<std::size_t>(first)].score()) first = j;

    AnnealResult result;
    result.initial_best = pool[static_cast<std::size_t>(first)].score();
    Layout x_star = population[static_cast<std::size_t>(first)].layout;
    Score x_star_score = result.initial_best;

    std::vector<ChainOutcome> outcomes(static_cast<std::size_t>(P));
    for (auto& o : outcomes) {
        o.best.cell.reserve(static_cast<std::size_t>(p.n));
        o.best.pos.reserve(static_cast<std::size_t>(p.n));
    }
    std::vector<double> terminal_energy(static_cast<std::size_t>(P));
    ResampleReuse reuse;

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
        cfg.p_straggler = b.p_straggler;
        // Lines 3-12, one task per member.
        parallel_members([&](int j) {
            ChainOutcome& o = outcomes[static_cast<std::size_t>(j)];
            o.proposals = o.accepted = o.infeasible = 0;
            run_chain(p, pool[static_cast<std::size_t>(obj[static_cast<std::size_t>(j)])], cfg,
                      seeds::annealing_chain(b.seed, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(j)),
                      stop, o);
        });

        // Line 13, serially in member order. Trajectory bests are valid states even when a chain was
        // stopped early, so they count toward x* also for an interrupted level.
        LevelStats st;
        st.level = n;
        st.temperature = t;
        double energy_sum = 0;
        int improved = -1;
        for (int j = 0; j < P; ++j) {
            const ChainOutcome& o = outcomes[static_cast<std::size_t>(j)];
            if (o.best_score < x_star_score) {
                x_star_score = o.best_score;
                improved = j;
            }
            terminal_energy[static_cast<std::size_t>(j)] = o.terminal_score.energy();
            energy_sum += terminal_energy[static_cast<std::size_t>(j)];
            st.proposals += o.proposals;
            st.infeasible += o.infeasible;
            result.accepted += o.accepted;
            st.acceptance += static_cast<double>(o.accepted);
        }
        if (improved >= 0)
            x_star = layout_from_placement(outcomes[static_cast<std::size_t>(improved)].best, pool[0].rows(), p.D);
        result.proposals += st.proposals;
        // An interrupted level is not reported (its statistics would describe partial chains).
        if (stop.stop.load(std::memory_order_relaxed)) break;
        st.acceptance = st.proposals > 0 ? st.acceptance / static_cast<double>(st.proposals) : 0.0;
        st.mean_energy = energy_sum / P;
        st.best = x_star_score;

        // Lines 14-18: systematic resampling of the terminal states into P_{n+1}.
        if (n + 1 < b.levels) {
            Rng level_rng(seeds::annealing_chain(b.seed, static_cast<std::uint64_t>(n), kLevelStream));
            const double u0 = level_rng.uniform() / P;
            const std::vector<int> pick = systematic_resample(terminal_energy, t, t * b.cooling, u0);
            plan_resample_reuse(pick, obj, reuse);
            parallel_for_count(static_cast<int>(reuse.copies.size()), [&](int c) {
                const auto [dst, src] = reuse.copies[static_cast<std::size_t>(c)];
                pool[static_cast<std::size_t>(dst)] = pool[static_cast<std::size_t>(src)];
            });
            obj.swap(reuse.obj);
            st.state_copies = static_cast<int>(reuse.copies.size());
        }
        result.levels.push_back(st);
        if (on_level) on_level(st);
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
