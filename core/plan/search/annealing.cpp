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
#include "core/plan/search/annealing.h"
#include "core/util/seeds.h"

#include "core/util/errors.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace routepack {

namespace {

/// Proposals between two polls of the stop token inside a chain.
constexpr int kPollMask = 255;
/// Uniform row-shard draws whose smallest J is the guided target (tournament selection).
constexpr int kTargetDraws = 3;
/// Bound on the rejection draws of the guided source row-shard.
constexpr int kMaxRejections = 1024;

/// The member index used for the level's own stream (resampling u0); never a real member.
constexpr std::uint64_t kLevelStream = std::numeric_limits<std::uint64_t>::max();

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

/// A proposed move (Algorithm 3 line 5): sample i from cell `from` to cell `to`, a relocation or a
/// swap with a partner of `to` chosen when it is applied.
struct Move {
    int i = 0, from = 0, to = 0;
    bool relocate = false;
};

/// One fixed-temperature chain (run_chain) on its scorer, its own RNG stream and its outcome.
class Chain {
public:
    Chain(const PackingProblem& p, IncrementalScorer& sc, const ChainConfig& cfg, std::uint64_t seed, ChainOutcome& out)
        : p_(p), sc_(sc), cfg_(cfg), rng_(seed), out_(out), R_(sc.rows()), D_(p.D), G_(p.G), RG_(R_ * G_),
          cells_(R_ * D_) {}

    /// Lines 3-12: cfg.steps proposals (fewer when `stop` fires), the scorer left at z_j.
    void run(StopLatch& stop) {
        Score cur = sc_.score();
        sc_.copy_placement_to(out_.best);
        out_.best_score = cur;
        for (int step = 0; step < cfg_.steps; ++step) {
            if ((step & kPollMask) == kPollMask && stop.poll()) break;
            ++out_.proposals;
            Move mv;
            const bool feasible = rng_.uniform() < cfg_.p_guide ? guided(mv, cur) : uniform(mv);
            int j = -1;
            if (!feasible || (!mv.relocate && !swap_partner(mv, j))) {
                ++out_.infeasible;
                continue;
            }
            const Score next = mv.relocate ? sc_.apply_relocate(mv.i, mv.to) : sc_.apply_swap(mv.i, j);
            if (accept(next, cur)) {
                cur = next;
                ++out_.accepted;
                if (cur < out_.best_score) { // line 11: b_j <- minScore(b_j, y)
                    out_.best_score = cur;
                    sc_.copy_placement_to(out_.best);
                }
            } else {
                sc_.undo();
            }
        }
        out_.terminal_score = cur; // line 12: z_j is the scorer's state
    }

private:
    /// GuidedProposal: source row-shard, source cell, target cell, then the sample. False when the
    /// proposal is infeasible (target = source, nothing of the source fits the target).
    bool guided(Move& mv, const Score& cur) {
        const bool aim = G_ > 1 && cfg_.p_straggler > 0 && rng_.uniform() < cfg_.p_straggler;
        const int gs = aim ? sc_.straggler_shard() : -1;
        mv.from = source_cell(source_row_shard(aim, gs, cur));
        mv.to = target_cell(aim, gs);
        if (mv.to == mv.from) return false;
        const std::span<const int> src = sc_.cell(mv.from);
        mv.relocate = relocation_drawn();
        if (!mv.relocate) {
            mv.i = src[rng_.below(src.size())];
            return true;
        }
        if (!relocation_target(mv)) return false;
        // A sample of the source cell that fits the target cell's free room.
        if (src.size() < 2) return false;
        const std::int64_t room = p_.C - sc_.cell_tokens(mv.to);
        const std::int64_t* t = p_.length.data();
        std::uint64_t count = 0;
        for (int c : src)
            count += t[c] <= room;
        if (count == 0) return false;
        std::uint64_t pick = rng_.below(count);
        for (int c : src)
            if (t[c] <= room && pick-- == 0) {
                mv.i = c;
                break;
            }
        return true;
    }

    /// Whether the proposal is a relocation (probability rho); never with samples_per_cell, where a
    /// relocation would change two cells' counts (the draw is made all the same, so the stream stays
    /// the same).
    bool relocation_drawn() {
        const bool drawn = rng_.uniform() < cfg_.rho;
        return drawn && p_.rules.samples_per_cell == 0;
    }

    /// The batch rules on a relocation's target: with samples_per_dp_slot the target moves to the
    /// source's DP slot in the drawn row (a relocation across DP slots is never proposed); false when
    /// the move cannot keep every count (PackingProblem::relocation_keeps_counts).
    bool relocation_target(Move& mv) const {
        if (!p_.rules.counts()) return true;
        if (p_.rules.samples_per_dp_slot > 0) mv.to = (mv.to / D_) * D_ + mv.from % D_;
        if (mv.to == mv.from) return false;
        return p_.relocation_keeps_counts(mv.from % D_, sc_.cell_size(mv.from), mv.to % D_, sc_.cell_size(mv.to));
    }

    /// Source row-shard with probability J / sum J: rejection sampling against max J = s2 of the
    /// current score (expected max J / mean J draws, no per-move upkeep). Straggler branch (`aim`): a
    /// row of g* with probability J[r][g*] / U_{g*} (rejection against max_r J[r][g*]); only a move
    /// out of g*'s row-shards can lower s0. The draw count is bounded so that no cost vector can stall
    /// a chain; J = max J always accepts, so the bound is never reached in practice.
    int source_row_shard(bool aim, int gs, const Score& cur) {
        if (aim) {
            const double mj = sc_.shard_max_j(gs);
            int r = static_cast<int>(rng_.below(static_cast<std::uint64_t>(R_)));
            for (int t = 0; t < kMaxRejections && mj > 0 && !(rng_.uniform() * mj < sc_.row_shard_cost(r, gs)); ++t)
                r = static_cast<int>(rng_.below(static_cast<std::uint64_t>(R_)));
            return r * G_ + gs;
        }
        int rs = static_cast<int>(rng_.below(static_cast<std::uint64_t>(RG_)));
        for (int t = 0; t < kMaxRejections && cur.max_j > 0 &&
                        !(rng_.uniform() * cur.max_j < sc_.row_shard_cost(rs / G_, rs % G_));
             ++t)
            rs = static_cast<int>(rng_.below(static_cast<std::uint64_t>(RG_)));
        return rs;
    }

    /// The cell (r, d), d in D_g, of row-shard rs drawn with probability proportional to its token
    /// sum (the attention straggler of the shard maximum); uniform when the shard holds no tokens.
    int source_cell(int rs) {
        const int r = rs / G_;
        const auto& slots = p_.shards[static_cast<std::size_t>(rs % G_)];
        int d = slots[0];
        if (slots.size() > 1) {
            std::int64_t sum = 0;
            for (int s : slots)
                sum += sc_.cell_tokens(r * D_ + s);
            if (sum > 0) {
                auto x = static_cast<std::int64_t>(rng_.below(static_cast<std::uint64_t>(sum)));
                for (int s : slots) {
                    x -= sc_.cell_tokens(r * D_ + s);
                    if (x < 0) {
                        d = s;
                        break;
                    }
                }
            } else {
                d = slots[rng_.below(slots.size())];
            }
        }
        return r * D_ + d;
    }

    /// Target row-shard: the smallest J among kTargetDraws uniform draws (first wins ties); in the
    /// straggler branch the draws skip g* (uniform over the R (G-1) others). The target cell (r', d')
    /// has d' uniform in D_{g'}.
    int target_cell(bool aim, int gs) {
        auto draw = [&] {
            if (!aim) return static_cast<int>(rng_.below(static_cast<std::uint64_t>(RG_)));
            const int c =
                static_cast<int>(rng_.below(static_cast<std::uint64_t>(R_) * static_cast<std::uint64_t>(G_ - 1)));
            const int g = c % (G_ - 1);
            return (c / (G_ - 1)) * G_ + (g >= gs ? g + 1 : g);
        };
        int rt = draw();
        double jt = sc_.row_shard_cost(rt / G_, rt % G_);
        for (int t = 1; t < kTargetDraws; ++t) {
            const int c = draw();
            const double jc = sc_.row_shard_cost(c / G_, c % G_);
            if (jc < jt) {
                rt = c;
                jt = jc;
            }
        }
        const auto& tslots = p_.shards[static_cast<std::size_t>(rt % G_)];
        return (rt / G_) * D_ + tslots[rng_.below(tslots.size())];
    }

    /// Uniform branch: i uniform over the samples, the target cell uniform over the other R*D - 1
    /// cells, relocation with probability rho. False when infeasible.
    bool uniform(Move& mv) {
        if (cells_ < 2) return false;
        mv.i = static_cast<int>(rng_.below(static_cast<std::uint64_t>(p_.n)));
        mv.from = sc_.cell_of(mv.i);
        mv.to = static_cast<int>(rng_.below(static_cast<std::uint64_t>(cells_ - 1)));
        if (mv.to >= mv.from) ++mv.to;
        mv.relocate = relocation_drawn();
        if (mv.relocate && !relocation_target(mv)) return false;
        return !mv.relocate || sc_.relocate_feasible(mv.i, mv.to);
    }

    /// Swap partner: a uniform sample j of the target cell among those that keep both cells within
    /// C (t_j in [t_i - free(to), t_i + free(from)]); false when there is none.
    bool swap_partner(const Move& mv, int& j) {
        const std::span<const int> dst = sc_.cell(mv.to);
        const std::int64_t* t = p_.length.data();
        // With oversize Alone a single-sample cell takes any partner (PackingProblem::cell_fits).
        const bool alone = p_.rules.oversize == Oversize::Alone;
        constexpr std::int64_t kAny = std::numeric_limits<std::int64_t>::max();
        const std::int64_t lo = alone && sc_.cell_size(mv.to) == 1 ? -kAny : t[mv.i] - (p_.C - sc_.cell_tokens(mv.to));
        const std::int64_t hi =
            alone && sc_.cell_size(mv.from) == 1 ? kAny : t[mv.i] + (p_.C - sc_.cell_tokens(mv.from));
        std::uint64_t count = 0;
        for (int c : dst)
            count += t[c] >= lo && t[c] <= hi;
        if (count == 0) return false;
        std::uint64_t pick = rng_.below(count);
        for (int c : dst)
            if (t[c] >= lo && t[c] <= hi && pick-- == 0) {
                j = c;
                break;
            }
        return true;
    }

    /// Line 9-10: accept a strictly better tuple, else Metropolis on the normalized energy delta.
    bool accept(const Score& next, const Score& cur) {
        if (next < cur) return true;
        const double e = cur.energy();
        const double delta = (next.energy() - e) / std::max(std::abs(e), 1.0);
        return delta <= 0 || rng_.uniform() < std::exp(-delta * cfg_.inv_t);
    }

    const PackingProblem& p_;
    IncrementalScorer& sc_;
    const ChainConfig& cfg_;
    Rng rng_;
    ChainOutcome& out_;
    const int R_, D_, G_, RG_, cells_;
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
               StopLatch& stop, ChainOutcome& out) {
    Chain(p, sc, cfg, seed, out).run(stop);
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

namespace {

/// std::invalid_argument unless every member of `population` is a valid layout for p with the
/// first member's row count (and there is at least one).
void check_population(const PackingProblem& p, const std::vector<SeedMember>& population) {
    if (population.empty()) throw std::invalid_argument("population_anneal: empty population");
    for (std::size_t j = 0; j < population.size(); ++j) {
        const Layout& x = population[j].layout;
        const std::string why = validate_layout(x, p);
        if (!why.empty())
            throw std::invalid_argument("population_anneal: member " + std::to_string(j) + " (" + population[j].origin +
                                        ") is invalid: " + why);
        if (x.rows != population[0].layout.rows)
            throw std::invalid_argument("population_anneal: members have different row counts");
    }
}

/// `count` tasks body(0..count-1) on the caller's TBB arena (the planner owns the threads), one per
/// task: the result does not depend on the arena's size.
template <class Body> void parallel_tasks(int count, Body&& body) {
    if (count == 0) return;
    tbb::parallel_for(
        tbb::blocked_range<int>(0, count, 1),
        [&](const tbb::blocked_range<int>& range) {
            for (int c = range.begin(); c != range.end(); ++c)
                body(c);
        },
        tbb::simple_partitioner());
}

/// The chain state of every member of one run: one IncrementalScorer per member for the whole run
/// (member m at pool[obj[m]]); resampling moves objects between members and copies state only where
/// a terminal state is picked more than once (ResampleReuse).
struct MemberPool {
    std::vector<IncrementalScorer> pool;
    std::vector<int> obj;

    MemberPool(const PackingProblem& p, const std::vector<SeedMember>& population) {
        const int P = static_cast<int>(population.size());
        std::vector<std::optional<IncrementalScorer>> slots(population.size());
        parallel_tasks(P, [&](int j) {
            slots[static_cast<std::size_t>(j)].emplace(p, population[static_cast<std::size_t>(j)].layout);
        });
        pool.reserve(population.size());
        for (auto& x : slots)
            pool.push_back(std::move(*x));
        obj.resize(population.size());
        std::iota(obj.begin(), obj.end(), 0);
    }
    IncrementalScorer& of(std::size_t member) { return pool[static_cast<std::size_t>(obj[member])]; }

    /// Lines 14-18: P_{n+1} from the terminal states by systematic resampling at u0; returns the
    /// number of states copied.
    int resample(const std::vector<double>& terminal_energy, double t, double t_next, double u0, ResampleReuse& reuse) {
        const std::vector<int> pick = systematic_resample(terminal_energy, t, t_next, u0);
        plan_resample_reuse(pick, obj, reuse);
        parallel_tasks(static_cast<int>(reuse.copies.size()), [&](int c) {
            const auto [dst, src] = reuse.copies[static_cast<std::size_t>(c)];
            pool[static_cast<std::size_t>(dst)] = pool[static_cast<std::size_t>(src)];
        });
        obj.swap(reuse.obj);
        return static_cast<int>(reuse.copies.size());
    }
};

/// Line 13 of level n, serially in member order: x* <- minScore(x*, b_0..b_{P-1}) (first strict
/// improvement wins), the terminal energies, and the level's counts (acceptance still a count).
/// Trajectory bests are valid states even when a chain was stopped early, so they count toward x*
/// also for an interrupted level.
LevelStats reduce_level(const std::vector<ChainOutcome>& outcomes, int n, double t, int rows, int D,
                        std::vector<double>& terminal_energy, Layout& x_star, Score& x_star_score,
                        AnnealResult& result) {
    LevelStats st;
    st.level = n;
    st.temperature = t;
    double energy_sum = 0;
    const ChainOutcome* improved = nullptr;
    for (std::size_t j = 0; j < outcomes.size(); ++j) {
        const ChainOutcome& o = outcomes[j];
        if (o.best_score < x_star_score) {
            x_star_score = o.best_score;
            improved = &o;
        }
        terminal_energy[j] = o.terminal_score.energy();
        energy_sum += terminal_energy[j];
        st.proposals += o.proposals;
        st.infeasible += o.infeasible;
        result.accepted += o.accepted;
        st.acceptance += static_cast<double>(o.accepted);
    }
    if (improved) x_star = layout_from_placement(improved->best, rows, D);
    result.proposals += st.proposals;
    st.mean_energy = energy_sum / static_cast<double>(outcomes.size());
    st.best = x_star_score;
    return st;
}

} // namespace

AnnealResult population_anneal(const PackingProblem& p, const std::vector<SeedMember>& population,
                               const AnnealingBudget& b, const std::function<void(const LevelStats&)>& on_level,
                               const StopToken& stop_token) {
    check_budget(b);
    check_population(p, population);
    const int P = static_cast<int>(population.size());
    MemberPool members(p, population);

    // Line 1: x* <- argmin Score over P0 (exact rescoring: a new scorer's score is bitwise the full
    // score of eqs. 11-15; the members' stored scores are not trusted).
    int first = 0;
    for (int j = 1; j < P; ++j)
        if (members.pool[static_cast<std::size_t>(j)].score() < members.pool[static_cast<std::size_t>(first)].score())
            first = j;

    AnnealResult result;
    result.initial_best = members.pool[static_cast<std::size_t>(first)].score();
    Layout x_star = population[static_cast<std::size_t>(first)].layout;
    Score x_star_score = result.initial_best;

    std::vector<ChainOutcome> outcomes(static_cast<std::size_t>(P));
    for (auto& o : outcomes) {
        o.best.cell.reserve(static_cast<std::size_t>(p.n));
        o.best.pos.reserve(static_cast<std::size_t>(p.n));
    }
    std::vector<double> terminal_energy(static_cast<std::size_t>(P));
    ResampleReuse reuse;
    StopLatch stop(stop_token);

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
        parallel_tasks(P, [&](int j) {
            ChainOutcome& o = outcomes[static_cast<std::size_t>(j)];
            o.proposals = o.accepted = o.infeasible = 0;
            run_chain(p, members.of(static_cast<std::size_t>(j)), cfg,
                      seeds::annealing_chain(b.seed, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(j)),
                      stop, o);
        });
        LevelStats st =
            reduce_level(outcomes, n, t, members.pool[0].rows(), p.D, terminal_energy, x_star, x_star_score, result);
        // An interrupted level is not reported (its statistics would describe partial chains).
        if (stop.stopped()) break;
        st.acceptance = st.proposals > 0 ? st.acceptance / static_cast<double>(st.proposals) : 0.0;
        if (n + 1 < b.levels) {
            Rng level_rng(seeds::annealing_chain(b.seed, static_cast<std::uint64_t>(n), kLevelStream));
            const double u0 = level_rng.uniform() / P;
            st.state_copies = members.resample(terminal_energy, t, t * b.cooling, u0, reuse);
        }
        result.levels.push_back(st);
        if (on_level) on_level(st);
    }
    result.cancelled = stop.stopped();
    result.time_limit_hit = stop.reason() == StopReason::TimeLimit;

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
