#include "core/plan/planner.h"
#include "core/util/seeds.h"

#include "core/plan/budgets.h"
#include "core/plan/comm/comm_placement.h"
#include "core/plan/comm/grouter.h"
#include "core/plan/plan_stage.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/placement_refine.h"
#include "core/util/errors.h"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>

namespace routepack {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

MethodResult make_method(Method method, PlacementKind placement, Layout layout, const PackingProblem& p, double cv) {
    MethodResult m;
    m.method = method;
    m.placement = placement;
    m.layout = std::move(layout);
    m.metrics = layout_metrics(m.layout, p, cv);
    return m;
}

/// The best layout a search has seen and its exact score (improved: better than where it began).
struct BestLayout {
    Layout layout;
    Score score;
    bool improved = false;
    void keep(const Layout& x, const Score& s) {
        if (!(s < score)) return;
        layout = x;
        score = s;
        improved = true;
    }
};

/// Where a search reports: progress events and convergence levels (routepack's search), stage timings.
struct SearchHooks {
    PlanProgressFn progress;
    std::vector<LevelStats>* convergence = nullptr;
    std::map<std::string, double>* timings = nullptr;
};

/// Counts of one packing search (PlanSearch without the convergence, which goes to the hooks) and
/// how it stopped.
struct SearchStats {
    PlanSearch counts;
    bool cancelled = false, time_limit_hit = false;
    bool finished = true; ///< false when cancelled before annealing (the caller returns at once)
};

/// Passes of refine_placement per layer in one refinement (each pass visits every expert pair; the
/// real windows converge in 2-4).
constexpr int kRefinePasses = 8;
/// Largest refinement the final pass runs: row-shard updates of one pass over every layer's expert
/// pairs, L * E * (E - 1) / 2 * R * G. The real windows need 0.2-2.0 million (a refinement then takes
/// 1-9 ms); near 2e7 one took 0.8 s; the 8192-sample scale point (64 layers, 256 experts, 96
/// row-shards) would need 2e8, about as much as its whole search, for a plan already within 0.11% of
/// its bound after annealing: larger problems keep the LPT placement.
constexpr double kRefineMaxPassWork = 5e6;

/// A move budget's ladder (docs/migration.md "Budgets are monotone"). The search runs at the previous
/// placement; then, for each ladder budget b in ascending order, the best of the current plan and
/// the placements of the move sequence for b (move_sequence on `loads` toward `target`, trajectories
/// stopped at ladder_trajectory_moves(b)) within b moves, scored at the current layout, and
/// kLadderRounds rounds within b moves from there; at the first ladder budget above the plan's budget
/// only that pick, within the plan's budget. Nothing before the pick depends on the budget (only on
/// the ladder's budgets), so a larger budget passes through every smaller one's plan and is never
/// worse in the score.
struct MoveLadder {
    std::shared_ptr<MoveSequencer> sequencer; ///< on the window's (or the run's mean) aggregate loads
    std::vector<std::int64_t> points;         ///< ascending ladder budgets > 0, the last L x E
    std::int64_t budget = 0;                  ///< the plan's budget, at most L x E (unlimited: L x E)
};

/// What the final pass needs to adapt the placement to its layout (routepack's search only), and
/// what it found.
struct PlacementContext {
    const Trace* window = nullptr;
    const Topology* topology = nullptr;
    Placement placement;                   ///< in: the search problem's placement; out: best.layout's
    std::optional<PackingProblem> problem; ///< the problem at `placement` once a refinement was kept
    std::int64_t swaps = 0;
    int rounds_kept = 0;
    bool skipped = false; ///< the problem exceeds kRefineMaxPassWork
    /// With a previous placement under a budget or cost model: the moves' request (its previous, budget,
    /// cost); each refinement then stays within the budget, and a second candidate chooses the moves
    /// from previous again for the layout's row-shards (budgeted_placement).
    const MoveRequest* moves = nullptr;
    const MoveLadder* ladder = nullptr; ///< with a budget and no cost model: climb_ladder after the final pass
    /// The refinements' move trajectories, extended while a round's row-shard loads repeat the last
    /// round's (budgeted_placement with a TrajectoryCache: the same moves, sooner).
    TrajectoryCache* trajectories = nullptr;
};

/// The modelled step time of a placement and score with a cost model (seconds_per_U x max_g U plus the
/// materialization from previous), or 0 without one.
double modelled_seconds(const PlacementContext& pc, const Placement& pi, const Score& s) {
    if (!pc.moves || !pc.moves->cost) return 0;
    const MigrationCost& c = *pc.moves->cost;
    return c.seconds_per_U * s.max_u + step_overhead_seconds(c, migration_figures(pi, *pc.moves->previous, c).seconds);
}

/// Whether (pi, s) beats the context's current (placement, best): a lower modelled time with a cost
/// model (ties: the score), a lower score otherwise.
bool beats(const PlacementContext& pc, const Placement& pi, const Score& s, const Score& best) {
    if (pc.moves && pc.moves->cost) {
        const double a = modelled_seconds(pc, pi, s), b = modelled_seconds(pc, pc.placement, best);
        if (a != b) return a < b;
    }
    return s < best;
}

/// One packing search: problem `problem` from the length-only layout `ffd`, with `budgets`.
/// `streams` names the planner stages whose RNG streams seeding, annealing and the final pass draw
/// from; `extra_seed`, when given, replaces the population's worst member (same population size).
/// `stop` ends every stage early. With a placement context and budgets.placement_rounds > 0 the
/// final pass runs in rounds, each followed by refine_placement.
struct SearchSettings {
    const PackingProblem* problem = nullptr;
    const Layout* ffd = nullptr;
    const PlannerBudgets* budgets = nullptr;
    seeds::SearchStreams streams = seeds::kRoutepackSearch;
    std::optional<SeedMember> extra_seed;
    SearchHooks hooks;
    StopToken stop;
    PlacementContext* placement = nullptr;
};

/// The state one packing search shares between its stages.
struct Search {
    Search(const SearchSettings& settings, BestLayout& kept) : s(settings), best(kept) {}
    const SearchSettings& s;
    BestLayout& best;
    SearchStats st;
    /// The problem the final pass scores on: s.problem, then the problem of each kept refinement.
    const PackingProblem* cur = s.problem;
    std::function<void(const Score&)> on_improve; ///< progress of the final pass's new best scores
    std::mutex progress_mutex;

    bool cancelled() const { return s.stop.cancelled(); }
    /// The event that stage `k` starts (its name and fraction from kPlanStages).
    void emit(PlanStage k) const {
        if (s.hooks.progress)
            s.hooks.progress(PlanEvent{plan_stage(k).name, plan_stage(k).progress, std::nullopt, std::nullopt});
    }
    void time(PlanStage k, Clock::time_point t0) const {
        if (s.hooks.timings) (*s.hooks.timings)[plan_stage(k).name] = seconds_since(t0);
    }
    std::uint64_t stage(seeds::Stage k) const { return seeds::planner_stage(s.budgets->seed, k); }
};

/// Seeding (Algorithm 2): the population, its origins, and its best member into `best`.
std::vector<SeedMember> seed_population(Search& x) {
    const auto t0 = Clock::now();
    x.emit(PlanStage::Seeding);
    SeedingBudget sb;
    static_cast<SeedingSettings&>(sb) = x.s.budgets->seeding;
    sb.seed = x.stage(x.s.streams.seeding);
    auto population = diverse_population(*x.s.problem, *x.s.ffd, sb, x.s.stop);
    if (x.s.extra_seed && !population.empty()) {
        auto worst = std::max_element(population.begin(), population.end(),
                                      [](const SeedMember& a, const SeedMember& b) { return a.score < b.score; });
        *worst = *x.s.extra_seed;
    }
    for (const auto& m : population)
        x.st.counts.origins.push_back(m.origin);
    x.time(PlanStage::Seeding, t0);
    const SeedMember* best_seed = &population.front();
    for (const auto& m : population)
        if (m.score < best_seed->score) best_seed = &m;
    x.best.keep(best_seed->layout, best_seed->score);
    return population;
}

/// Population annealing (Algorithm 3) from the seeded population; its best into `best`.
void anneal(Search& x, const std::vector<SeedMember>& population) {
    const auto t0 = Clock::now();
    x.emit(PlanStage::Annealing);
    AnnealingBudget ab;
    static_cast<AnnealingSettings&>(ab) = x.s.budgets->annealing;
    ab.seed = x.stage(x.s.streams.annealing);
    const int levels = std::max(1, ab.levels);
    const SearchHooks& hooks = x.s.hooks;
    const auto res = population_anneal(
        *x.s.problem, population, ab,
        [&](const LevelStats& s) {
            if (hooks.convergence) hooks.convergence->push_back(s);
            if (hooks.progress)
                hooks.progress(PlanEvent{plan_stage(PlanStage::Annealing).name, 0.4 + 0.55 * (s.level + 1) / levels, s,
                                         std::nullopt});
        },
        x.s.stop);
    x.st.counts.proposals = res.proposals;
    x.st.counts.accepted = res.accepted;
    x.st.cancelled = res.cancelled && !res.time_limit_hit;
    x.st.time_limit_hit = res.time_limit_hit;
    x.best.keep(res.best, res.score);
    x.time(PlanStage::Annealing, t0);
}

/// One segment of the final pass (iterated_straggler_search: guided descent and kicks, one replica)
/// of `evaluations` on the current problem, with the RNG stream of round k.
void polish_segment(Search& x, std::int64_t evaluations, std::uint64_t k) {
    PolishSettings ps;
    ps.evaluations = evaluations;
    ps.kick_moves = x.s.budgets->polish_kick_moves;
    const PolishResult d = iterated_straggler_search(
        *x.cur, x.best.layout, ps, seeds::polish_round(x.stage(x.s.streams.polish), k), x.s.stop, x.on_improve);
    PlanSearch& c = x.st.counts;
    c.polish_evaluations += d.evaluations;
    c.polish_improvements += d.improvements;
    c.polish_kicks += d.kicks;
    c.polish_kicks_kept += d.kicks_kept;
    c.polish_local_optimum = d.local_optimum;
    if (d.cancelled) {
        if (x.cancelled())
            x.st.cancelled = true;
        else
            x.st.time_limit_hit = true;
    }
    x.best.keep(d.layout, d.score);
}

/// The row-shard r * G + g of each sample's cell ([n]).
std::vector<int> row_shards_of(const Layout& layout, const PackingProblem& p) {
    std::vector<int> row_shard(p.length.size());
    for (int k = 0; k < layout.cell_count(); ++k) {
        const int shard = (k / p.D) * p.G + p.shard_of_slot[k % p.D];
        for (const int i : layout.cell(k))
            row_shard[i] = shard;
    }
    return row_shard;
}

/// The placement adapted to the best layout (refine_placement); kept, with its problem, when the
/// exact score drops. The stop token ends it between passes (the placement so far is still valid). Adds its seconds to
/// `seconds`; returns whether it was kept.
bool refine_round(Search& x, double& seconds) {
    const auto t_refine = Clock::now();
    struct Add {
        double& total;
        Clock::time_point t;
        ~Add() { total += seconds_since(t); }
    } add{seconds, t_refine};
    PlacementContext& pc = *x.s.placement;
    if (pc.moves && pc.moves->max_moves == 0 && !pc.moves->cost) return false; // no move allowed
    const PackingProblem& cur = *x.cur;
    const Layout& layout = x.best.layout;
    const std::vector<int> row_shard = row_shards_of(layout, cur);
    const int RS = layout.rows * cur.G;
    const Trace& w = *pc.window;
    // Candidates: the current placement refined (within the budget), and with a move request the moves
    // chosen again from previous for this layout's row-shards, then refined within their own moves.
    std::vector<PlacementRefinement> candidates;
    auto limit_of = [&](const Placement& pi, bool own) {
        RefineMoveLimit lim;
        lim.previous = pc.moves->previous;
        lim.allowance = layer_move_allowance(layer_moves(pi, *pc.moves->previous), pc.moves->max_moves, pi.experts,
                                             own || pc.moves->cost != nullptr);
        return lim;
    };
    if (pc.moves) {
        const RefineMoveLimit lim = limit_of(pc.placement, false);
        candidates.push_back(refine_placement(w, pc.placement, row_shard, RS, kRefinePasses, x.s.stop, &lim));
        const GroupLoads gl =
            row_shard_group_loads(w.counts, w.size(), w.model.num_moe_layers(), w.model.experts, row_shard, RS);
        const MovePlan mp =
            pc.trajectories ? budgeted_placement(gl, *pc.moves, *pc.trajectories) : budgeted_placement(gl, *pc.moves);
        const RefineMoveLimit own = limit_of(mp.placement, true);
        candidates.push_back(refine_placement(w, mp.placement, row_shard, RS, kRefinePasses, x.s.stop, &own));
        candidates.back().swaps = std::max<std::int64_t>(1, candidates.back().swaps);
    } else {
        candidates.push_back(refine_placement(w, pc.placement, row_shard, RS, kRefinePasses, x.s.stop));
    }
    bool kept = false;
    for (PlacementRefinement& rf : candidates) {
        if (rf.swaps == 0 || rf.placement == pc.placement) continue;
        PackingProblem q = make_packing_problem(w, *pc.topology, rf.placement);
        const Score s = score_layout(layout, q);
        if (!beats(pc, rf.placement, s, x.best.score)) continue;
        pc.placement = std::move(rf.placement);
        pc.problem = std::move(q);
        x.cur = &*pc.problem;
        x.best.score = s;
        x.best.improved = true;
        pc.swaps += rf.swaps;
        kept = true;
    }
    if (!kept) return false;
    ++pc.rounds_kept;
    if (x.on_improve) x.on_improve(x.best.score);
    return true;
}

/// The final exact improvement pass on the straggler, on the annealing's best: one segment of
/// budgets.polish_evaluations, or `rounds` segments whose evaluations sum to it, each followed by a
/// placement refinement; anytime: until the deadline (more rounds with refinement).
void final_pass(Search& x) {
    const auto t0 = Clock::now();
    x.emit(PlanStage::Polish);
    if (x.s.hooks.progress)
        x.on_improve = [&x](const Score& s) {
            const std::lock_guard<std::mutex> lock(x.progress_mutex);
            x.s.hooks.progress(
                PlanEvent{plan_stage(PlanStage::Polish).name, plan_stage(PlanStage::Polish).progress, std::nullopt, s});
        };
    const PlannerBudgets& b = *x.s.budgets;
    PlacementContext* pc = x.s.placement;
    const PackingProblem& p = *x.s.problem;
    double refine_s = 0;
    const bool searching = !x.cancelled() && !x.st.time_limit_hit;
    const std::int64_t budget = b.polish_evaluations;
    const double pass_work = pc ? static_cast<double>(p.L) * pc->placement.experts * (pc->placement.experts - 1) / 2 *
                                      x.best.layout.rows * p.G
                                : 0.0;
    if (pc && b.placement_rounds > 0 && pass_work > kRefineMaxPassWork) pc->skipped = true;
    const int rounds = pc && pass_work <= kRefineMaxPassWork ? b.placement_rounds : 0;
    std::vector<FinalRound>& record = x.st.counts.final_rounds;
    if (searching && rounds == 0 && budget > 0) {
        polish_segment(x, b.anytime ? std::numeric_limits<std::int64_t>::max() : budget, 0);
        record.push_back({x.best.score.max_u, std::nullopt});
    } else if (searching && rounds > 0) {
        // `rounds` rounds whose evaluations sum to the budget; anytime: more rounds until the deadline.
        for (std::int64_t k = 0; b.anytime && budget > 0 ? true : k < rounds; ++k) {
            // Anytime runs the default's rounds first (the same trajectory, so never worse than the
            // default plan), then rounds of 2x, 4x, ... budget / rounds evaluations: early refinements
            // follow the layout closely, later rounds are long searches (each round restarts the
            // search's state).
            const std::int64_t base = budget > 0 ? std::max<std::int64_t>(1, budget / rounds) : 0;
            const int shift = static_cast<int>(std::clamp<std::int64_t>(k - rounds + 1, 0, 40));
            const std::int64_t share = k < rounds ? budget / rounds + (k < budget % rounds ? 1 : 0)
                                       : base > (std::numeric_limits<std::int64_t>::max() >> shift)
                                           ? std::numeric_limits<std::int64_t>::max()
                                           : base << shift;
            const Score before = x.best.score;
            if (share > 0) polish_segment(x, share, static_cast<std::uint64_t>(k));
            record.push_back({x.best.score.max_u, std::nullopt});
            if (x.cancelled() || x.st.time_limit_hit) break;
            if (x.s.stop.stop_requested()) { // no search in this round to notice it (polish 0)
                x.st.time_limit_hit = true;
                break;
            }
            const bool kept = refine_round(x, refine_s);
            record.back().refined_max_u = x.best.score.max_u;
            // Without kicks a round is a deterministic descent: once a round neither improved nor
            // refined anything, every later one would repeat it.
            if (b.anytime && b.polish_kick_moves == 0 && !kept && !(x.best.score < before)) break;
        }
    }
    if (rounds > 0 && x.s.hooks.timings) (*x.s.hooks.timings)["placement refinement"] = refine_s;
    x.time(PlanStage::Polish, t0);
}

/// The ladder's pick within `limit` moves (MoveLadder): the current plan or, when one scores lower at
/// the current layout, the sequence's placement after the fewest steps that does; adopted with its problem.
void ladder_pick(Search& x, const std::vector<MoveStep>& sequence, std::int64_t limit) {
    PlacementContext& pc = *x.s.placement;
    const Trace& w = *pc.window;
    const Layout& layout = x.best.layout;
    const GroupLoads gl = row_shard_group_loads(w.counts, w.size(), w.model.num_moe_layers(), w.model.experts,
                                                row_shards_of(layout, *x.cur), layout.rows * x.cur->G);
    const auto sums = sequence_peak_sums(gl, sequence, *pc.moves->previous, limit);
    std::size_t pick = 0;
    Score best = x.best.score;
    for (std::size_t k = 1; k < sums.size(); ++k) {
        const Score s = score_from_peak_sums(layout, *x.cur, sums[k]);
        if (s < best) best = s, pick = k;
    }
    if (pick == 0) return;
    pc.placement = sequence_placement(sequence, pick, *pc.moves->previous);
    pc.problem = make_packing_problem(w, *pc.topology, pc.placement);
    x.cur = &*pc.problem;
    x.best.score = best;
    x.best.improved = true;
}

/// Rounds of the ladder at each of its budgets: a refinement after a second polish segment finds
/// what the first left (on DeepSeek-V2-Lite EP8 it keeps 73% of full re-placement's gain at 10%
/// moved against 69% with one round, at the same polish evaluations).
constexpr int kLadderRounds = 2;

/// The move ladder after the final pass (MoveLadder): per ladder budget b up to the plan's, the pick
/// within b and kLadderRounds rounds (a polish segment of polish_evaluations / (4 x
/// placement_rounds), then a refinement within b moves, its own trajectories without relocation
/// chains and stopped as the sequence's); then the pick within the plan's budget.
void climb_ladder(Search& x) {
    PlacementContext& pc = *x.s.placement;
    const MoveLadder& lad = *pc.ladder;
    MoveRequest rq = *pc.moves;
    pc.moves = &rq;
    rq.relocation_chains = false;
    const PlannerBudgets& b = *x.s.budgets;
    const std::int64_t share = b.polish_evaluations / (4 * std::max(1, b.placement_rounds));
    const int L = pc.placement.layers;
    double refine_s = 0;
    std::uint64_t round = std::uint64_t{1} << 20; // the ladder's own polish streams
    std::vector<MoveStep> sequence;
    const int rounds_kept = pc.rounds_kept; // the final pass's rounds; the ladder's are its own
    for (const std::int64_t point : lad.points) {
        if (x.cancelled() || x.st.time_limit_hit || lad.budget == 0) break; // nothing to pick within 0 moves
        rq.trajectory_moves = ladder_trajectory_moves(point, L);
        sequence = lad.sequencer->sequence(rq.trajectory_moves);
        ladder_pick(x, sequence, std::min(point, lad.budget));
        if (point > lad.budget) break;
        rq.max_moves = point;
        for (int r = 0; r < kLadderRounds; ++r) {
            if (share > 0) polish_segment(x, share, round++);
            refine_round(x, refine_s);
        }
    }
    if (lad.budget >= lad.points.back() && !sequence.empty()) ladder_pick(x, sequence, lad.budget);
    pc.rounds_kept = rounds_kept;
    if (x.s.hooks.timings) (*x.s.hooks.timings)["placement refinement"] += refine_s;
}

/// RoutePack's packing search (SearchSettings): seeding (Algorithm 2), population annealing
/// (Algorithm 3) and the final exact pass on the straggler, keeping the best in `best`. With a
/// placement context, a refinement is kept when it lowers the exact score and the next round searches
/// at the new placement (`best` is then scored at placement->placement).
SearchStats packing_search(const SearchSettings& settings, BestLayout& best) {
    Search x(settings, best);
    const std::vector<SeedMember> population = seed_population(x);
    if (x.cancelled()) {
        x.st.cancelled = true;
        x.st.finished = false;
        return x.st;
    }
    anneal(x, population);
    final_pass(x);
    if (x.s.placement && x.s.placement->ladder) climb_ladder(x);
    return x.st;
}

/// Stage 6 of plan_window: communication figures of every method and the `grouter` and
/// `routepack+comm` methods (docs/topology-and-plan.md "Communication between nodes"), into r. Runs inside the
/// planner's arena.
void plan_communication(const Trace& w, const PlanInput& in, const std::vector<std::uint64_t>& loads, const Layout& ffd,
                        PlanResult& r, const StopToken& stop, const PlanProgressFn& progress) {
    const Topology& topo = in.topology;
    const std::vector<int> slot_node = topo.node_of_dp_slot();
    std::vector<std::int64_t> length(w.size());
    for (std::size_t i = 0; i < w.size(); ++i)
        length[i] = w.samples[i].length;
    PlanComm& c = r.comm;
    // grouter: the paper's expert grouping, each sample to the node with most local tokens, packed
    // into that node's DP slots at R* rows (cap and rectangle kept; the rest go elsewhere).
    GrouterOptions go;
    go.seed = seeds::planner_stage(in.budgets.seed, seeds::Stage::Grouter);
    GrouterGrouping gg = grouter_placement(w, topo, go, stop);

    // The placements known by now in one pass over the routes: identity, LPT, grouter's, routepack's.
    const Placement* placed[] = {&r.placement.identity, &r.placement.lpt, &gg.placement, &r.placement.routepack};
    const std::vector<CommDemand> d =
        make_comm_demands(w, topo, std::span<const Placement* const>(placed, r.placement_refined() ? 4 : 3));
    const CommDemand& d_id = d[0];
    const CommDemand& d_lpt = d[1];
    const CommDemand& d_g = d[2];
    r.baseline.comm = comm_cost(r.baseline.layout, d_id, slot_node);
    for (MethodResult* m : {&r.reorder, &r.karmarkar_karp})
        m->comm = comm_cost(m->layout, d_lpt, slot_node);
    r.routepack.comm = comm_cost(r.routepack.layout, r.placement_refined() ? d[3] : d_lpt, slot_node);
    c.grouter_home = grouter_sample_nodes(d_g);
    const PackingProblem p_g = make_packing_shape(w, topo, gg.placement); // one layout: figures from the counts
    NodePacking gp =
        pack_on_home_nodes(fitting_lengths(length, p_g.C, p_g.rules), p_g.C, r.rows.rows, slot_node, c.grouter_home);
    // The node packing knows the cap, not the batch rules' counts: a packing that breaks them is not used.
    if (gp.fitted && p_g.rules.counts() && !validate_layout(gp.layout, p_g).empty()) gp.fitted = false;
    c.grouter_fitted = gp.fitted;
    if (!gp.fitted) {
        gp.layout = ffd;
        gp.off_node.clear();
        for (int k = 0; k < ffd.cell_count(); ++k) {
            const int node = slot_node[k % ffd.dp_slots];
            for (int i : ffd.cell(k))
                if (node != c.grouter_home[i]) gp.off_node.push_back(i);
        }
        std::sort(gp.off_node.begin(), gp.off_node.end());
    }
    c.grouter_off_node = gp.off_node;
    c.grouter_placement = gg.placement;
    c.cv_grouter = cv_global(rank_loads(loads, gg.placement), gg.placement.layers, gg.placement.ep_ranks);
    MethodResult g;
    g.method = Method::Grouter;
    g.placement = PlacementKind::Grouter;
    g.layout = gp.layout;
    g.metrics = layout_metrics_from_counts(g.layout, p_g, w, gg.placement, c.cv_grouter);
    if (const std::string bad = validate_layout(g.layout, p_g); !bad.empty())
        throw std::logic_error("planner: grouter's layout is invalid: " + bad);
    g.comm = comm_cost(g.layout, d_g, slot_node);
    c.grouter = std::move(g);

    // routepack+comm: home nodes under capacity from Grouter's grouping, a placement within the load
    // tolerance of LPT that keeps the home nodes' tokens local (twice: the homes follow the
    // placement once), then RoutePack's search with the communication term of weight w in the row cost.
    std::vector<int> home = balanced_home_nodes(d_g, length, slot_node);
    Placement pi = comm_aware_placement(w, topo, r.placement.lpt, loads, home, topo.comm_load_tolerance, stop);
    home = balanced_home_nodes(make_comm_demand(w, topo, pi), length, slot_node);
    pi = comm_aware_placement(w, topo, r.placement.lpt, loads, home, topo.comm_load_tolerance, stop);
    const CommDemand d_c = make_comm_demand(w, topo, pi);
    const PackingProblem p_c = make_packing_problem(w, topo, pi);
    PackingProblem p_cw = p_c;
    set_comm_term(p_cw, d_c, slot_node, topo.comm_weight);
    BestLayout best{ffd, score_layout(ffd, p_cw)};
    SearchSettings ss;
    ss.problem = &p_cw;
    ss.ffd = &ffd;
    ss.budgets = &in.budgets;
    ss.streams = seeds::kCommSearch;
    ss.stop = stop;
    // routepack+comm's search reports as the communication stage: its annealing levels (LevelStats
    // of this search, not of routepack's convergence) carry the stage's own progress.
    if (progress)
        ss.hooks.progress = [&progress](const PlanEvent& e) {
            progress(PlanEvent{plan_stage(PlanStage::Communication).name, plan_stage(PlanStage::Communication).progress,
                               e.level, std::nullopt});
        };
    if (NodePacking hp =
            pack_on_home_nodes(fitting_lengths(length, p_c.C, p_c.rules), p_c.C, r.rows.rows, slot_node, home);
        hp.fitted && validate_layout(hp.layout, p_c).empty()) {
        ss.extra_seed = SeedMember{hp.layout, score_layout(hp.layout, p_cw), "home-nodes"};
        best.keep(ss.extra_seed->layout, ss.extra_seed->score);
    }
    const SearchStats st = packing_search(ss, best);
    r.cancelled = r.cancelled || st.cancelled;
    r.time_limit_hit = r.time_limit_hit || st.time_limit_hit;
    c.comm_placement = pi;
    c.cv_comm = cv_global(rank_loads(loads, pi), pi.layers, pi.ep_ranks);
    MethodResult rc = make_method(Method::RoutePackComm, PlacementKind::Comm, best.layout, p_c, c.cv_comm);
    if (const std::string bad = validate_layout(rc.layout, p_c); !bad.empty())
        throw std::logic_error("planner: routepack+comm's layout is invalid: " + bad);
    rc.comm_score = best.score;
    rc.comm = comm_cost(rc.layout, d_c, slot_node);
    c.routepack_comm = std::move(rc);
}

} // namespace

std::vector<const MethodResult*> PlanResult::methods() const {
    std::vector<const MethodResult*> out{&baseline, &reorder, &karmarkar_karp, &routepack};
    if (comm.grouter) out.push_back(&*comm.grouter);
    if (comm.routepack_comm) out.push_back(&*comm.routepack_comm);
    return out;
}

const MethodResult* PlanResult::method(Method m) const {
    switch (m) {
    case Method::Baseline:
        return &baseline;
    case Method::Reorder:
        return &reorder;
    case Method::KarmarkarKarp:
        return &karmarkar_karp;
    case Method::RoutePack:
        return &routepack;
    case Method::Grouter:
        return comm.grouter ? &*comm.grouter : nullptr;
    case Method::RoutePackComm:
        return comm.routepack_comm ? &*comm.routepack_comm : nullptr;
    }
    return nullptr;
}

const Placement& PlanResult::placement_of(PlacementKind k) const {
    switch (k) {
    case PlacementKind::Identity:
        return placement.identity;
    case PlacementKind::Lpt:
        return placement.lpt;
    case PlacementKind::Refined:
        return placement.routepack;
    case PlacementKind::Grouter:
        return comm.grouter_placement;
    case PlacementKind::Comm:
        return comm.comm_placement;
    }
    throw std::out_of_range("PlanResult::placement_of: not a placement kind");
}

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

namespace {

/// Refuses a window whose inputs the planner cannot pack (InputError): empty, without per-sample
/// counts, a topology that does not fit the model, or seeding candidates that would hold more than
/// kMaxSeedingBytes (checked before any work; R at most n / D).
void check_window(const PlanInput& in) {
    const Trace& w = in.trace();
    if (w.size() == 0) throw InputError("the window is empty");
    if (w.model.top_k <= 0 || w.stride() == 0 || w.counts.size() != w.size() * w.stride())
        throw InputError("the window has no per-sample routing counts (aggregate traces cannot be packed)");
    check_topology_for_model(in.topology, w.model);
    const double n = static_cast<double>(w.size());
    const double R = std::floor(n / std::max(1, in.topology.dp_slots));
    const double per =
        24 * n + 8 * R * (w.model.num_moe_layers() + in.budgets.seeding.projections) + 4 * R * in.topology.dp_slots;
    const double bytes = per * in.budgets.seeding.candidates;
    if (bytes > kMaxSeedingBytes) {
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "planner: budget 'seeds_M' = %d would hold about %.1f GiB of seeding candidates for %zu "
                      "samples (limit %.0f GiB); use seeds_M <= %lld for this window",
                      in.budgets.seeding.candidates, bytes / (1 << 30), w.size(), kMaxSeedingBytes / (1 << 30),
                      static_cast<long long>(std::max(1.0, std::floor(kMaxSeedingBytes / per))));
        throw InputError(buf);
    }
}

/// A run history must have the window's shape: InputError "previous plan: its history has 26 MoE layers
/// x 64 experts, the window 27 x 64".
void check_history(const RunHistory& h, const Trace& w) {
    const int L = w.model.num_moe_layers(), E = w.model.experts;
    if (h.layers != L || h.experts != E || h.loads.size() != static_cast<std::size_t>(L) * static_cast<std::size_t>(E))
        throw InputError("previous plan: its history has " + std::to_string(h.layers) + " MoE layers x " +
                         std::to_string(h.experts) + " experts, the window " + std::to_string(L) + " x " +
                         std::to_string(E));
}

/// A previous placement must have the window's shape: InputError "previous placement: 2 MoE layers x
/// 64 experts on 4 EP ranks; the window has 26 x 64 on 8" otherwise, or when it is not a permutation.
void check_previous(const Placement& prev, const Trace& w, const Topology& t) {
    const int L = w.model.num_moe_layers(), E = w.model.experts;
    if (prev.layers != L || prev.experts != E || prev.ep_ranks != t.ep_ranks ||
        prev.slot.size() != static_cast<std::size_t>(L) * E)
        throw InputError("previous placement: " + std::to_string(prev.layers) + " MoE layers x " +
                         std::to_string(prev.experts) + " experts on " + std::to_string(prev.ep_ranks) +
                         " EP ranks; the window has " + std::to_string(L) + " x " + std::to_string(E) + " on " +
                         std::to_string(t.ep_ranks));
    try {
        physical_to_logical(prev);
    } catch (const std::invalid_argument& e) {
        throw InputError(std::string("previous placement: ") + e.what());
    }
}

/// The planner's run of one window: its inputs, stop conditions and what the stages share.
struct WindowRun {
    const PlanInput& in;
    const PlanProgressFn& progress;
    StopToken stop;
    PlanResult& r;
    std::vector<std::uint64_t> loads; ///< L[l][e], [L][E]
    Layout ffd;                       ///< the length-only layout of baseline and reorder

    /// The event that stage `k` starts (its name and fraction from kPlanStages).
    void emit(PlanStage k) const { emit(plan_stage(k).name, plan_stage(k).progress); }
    void emit(const char* name, double f) const {
        if (progress) progress(PlanEvent{name, f, std::nullopt, std::nullopt});
    }
    void time(PlanStage k, Clock::time_point t0) const { r.timings[plan_stage(k).name] = seconds_since(t0); }
};

/// Stages 1-3 of plan_window: the placement comparison (Algorithm 1, layers in parallel) with the
/// lower bound at LPT, the row count R*, and the baselines on the same window and R*; routepack
/// starts as reorder. Returns the problem at LPT.
PackingProblem place_and_baselines(WindowRun& run) {
    const Trace& w = run.in.trace();
    PlanResult& r = run.r;
    const int L = w.model.num_moe_layers(), E = w.model.experts, P = run.in.topology.ep_ranks;

    // 1. Placement comparison (identity vs LPT) and the lower bound at LPT.
    auto t0 = Clock::now();
    run.emit(PlanStage::Placement);
    run.loads = aggregate_expert_loads(w.counts, w.size(), L, E);
    static_cast<PlacementComparison&>(r.placement) = compare_placements(run.loads, L, E, P);
    r.placement.routepack = r.placement.lpt;
    r.placement.rank_loads_routepack = r.placement.rank_loads_lpt;
    r.placement.cv_routepack = r.placement.cv_lpt;
    // The identity placement is measured on one layout only (the baseline): its figures are
    // formed from the counts directly, without an [n][L][P] demand array of its own.
    const PackingProblem p_id = make_packing_shape(w, run.in.topology, r.placement.identity);
    PackingProblem p_lpt = make_packing_problem(w, run.in.topology, r.placement.lpt);
    run.time(PlanStage::Placement, t0);
    t0 = Clock::now();
    std::vector<double> at_lpt;
    r.bound = max_u_lower_bound(p_lpt, &at_lpt);
    r.bound_any_placement = max_u_lower_bound_any_placement(p_lpt, w.counts, E, run.loads, at_lpt);
    r.timings["bound"] = seconds_since(t0);

    // 2. Row count R*.
    t0 = Clock::now();
    run.emit(PlanStage::RowCount);
    r.rows = minimum_rows_under_rules(p_lpt.length, p_lpt.C, run.in.topology, run.in.budgets.row_nodes, run.stop);
    run.time(PlanStage::RowCount, t0);

    // 3. Baselines on the same window and R*.
    t0 = Clock::now();
    run.emit(PlanStage::Baselines);
    const std::vector<std::int64_t> fit = fitting_lengths(p_lpt.length, p_lpt.C, p_lpt.rules);
    if (!fixed_row_ffd_counts(fit, p_lpt.C, r.rows.rows, p_lpt.D, p_lpt.rules, &run.ffd)) {
        run.ffd = r.rows.layout;
        r.baseline_not_ffd = true;
    }
    r.baseline.method = Method::Baseline;
    r.baseline.placement = PlacementKind::Identity;
    r.baseline.layout = run.ffd;
    r.baseline.metrics = layout_metrics_from_counts(run.ffd, p_id, w, r.placement.identity, r.placement.cv_identity);
    r.reorder = make_method(Method::Reorder, PlacementKind::Lpt, run.ffd, p_lpt, r.placement.cv_lpt);
    r.karmarkar_karp =
        make_method(Method::KarmarkarKarp, PlacementKind::Lpt,
                    karmarkar_karp_layout(p_lpt.length, r.rows.rows, p_lpt.D, p_lpt.rules), p_lpt, r.placement.cv_lpt);
    // routepack starts as reorder (the same layout on the same problem, so the same metrics); the
    // search keeps its best layout and exact score, and the metrics (one full pass) are formed once,
    // when the search ends, instead of after every stage that improves it.
    r.routepack = r.reorder;
    r.routepack.method = Method::RoutePack;
    run.time(PlanStage::Baselines, t0);
    return p_lpt;
}

/// Where routepack's search starts with a previous placement (PlanMigration's cases): the budgeted
/// placement from previous (budgeted_placement, LPT offered per layer), its problem and the refinement's
/// move allowance. Without a budget or cost model the search starts at LPT as without a previous
/// placement and only the final placement is relabeled (move_start stays unset).
struct MoveStart {
    std::optional<PackingProblem> problem;
    Placement placement;
    MoveRequest request;
    std::optional<MoveLadder> ladder; ///< a budget without a cost model: the search starts at previous
};

std::optional<MoveStart> move_start(WindowRun& run) {
    const PlanInput& in = run.in;
    PlanMigration& mg = run.r.migration;
    if (!in.previous) return std::nullopt;
    mg.has_previous = true;
    mg.previous = *in.previous;
    mg.previous_fingerprint = placement_fingerprint(mg.previous);
    mg.max_moves = in.budgets.max_moves;
    mg.seconds_per_U_derived = !(in.topology.migration.seconds_per_U > 0);
    if (in.topology.has_migration) {
        mg.costed = true;
        mg.cost = resolve_migration_cost(in.topology, in.trace().model);
    } else {
        try { // the default cost model, for the report only, when the model's expert size is known
            mg.cost = resolve_migration_cost(in.topology, in.trace().model);
        } catch (const InputError&) {
            mg.cost = MigrationCost{};
        }
    }
    MoveRequest rq;
    rq.previous = &mg.previous;
    rq.target = &run.r.placement.lpt;
    rq.max_moves = in.budgets.max_moves;
    rq.cost = mg.costed ? &mg.cost : nullptr;
    rq.tokens_per_U = static_cast<double>(in.topology.token_cap) * in.topology.shards();
    const int L = in.trace().model.num_moe_layers(), E = in.trace().model.experts;
    // Unlimited moves (max_moves -1) take the same path as a budget that cannot bind (every expert of
    // every layer): the greedy moves from the previous placement, LPT offered per layer, and the
    // refinement's candidates from both, so no finite budget can reach a placement it cannot.
    // Run-level base placement: the moves are chosen on the run's mean step loads, toward their LPT.
    std::vector<std::uint64_t> history_loads;
    if (run.r.history && run.r.history->steps > 1) {
        history_loads = history_mean_loads(*run.r.history);
        mg.base = lpt_placement(history_loads, L, E, in.topology.ep_ranks);
        rq.target = &*mg.base;
    }
    const GroupLoads gl = aggregate_group_loads(history_loads.empty() ? run.loads : history_loads, L, E);
    MoveStart ms;
    if (!rq.cost) {
        const std::int64_t experts = static_cast<std::int64_t>(L) * E;
        MoveLadder lad;
        lad.sequencer = std::make_shared<MoveSequencer>(gl, mg.previous, rq.target);
        lad.points = ladder_points(experts);
        lad.budget = rq.max_moves < 0 ? experts : std::min(rq.max_moves, experts);
        mg.peak_sum_previous = mg.peak_sum_start = row_shard_peak_sums(gl, mg.previous).front();
        rq.max_moves = 0;
        ms.request = rq;
        ms.ladder = std::move(lad);
        ms.problem = make_packing_problem(in.trace(), in.topology, mg.previous);
        ms.placement = mg.previous;
        return ms;
    }
    MovePlan mp = budgeted_placement(gl, rq);
    mg.peak_sum_previous = mp.peak_before;
    mg.peak_sum_start = mp.peak_after;
    ms.request = rq;
    ms.problem = make_packing_problem(in.trace(), in.topology, mp.placement);
    ms.placement = std::move(mp.placement);
    return ms;
}

/// routepack's final placement against the previous one, with the previous slots kept, and the moves'
/// figures; rank loads and CV follow the placement.
void finish_migration(WindowRun& run) {
    PlanResult& r = run.r;
    PlanMigration& mg = r.migration;
    PlanPlacements& pl = r.placement;
    pl.routepack = keep_previous_slots(pl.routepack, mg.previous);
    pl.rank_loads_routepack = rank_loads(run.loads, pl.routepack);
    pl.cv_routepack = cv_global(pl.rank_loads_routepack, pl.routepack.layers, pl.routepack.ep_ranks);
    mg.figures = migration_figures(pl.routepack, mg.previous, mg.cost);
    mg.compute_seconds = mg.cost.seconds_per_U * r.routepack.metrics.score.max_u;
}

/// Stage 4 of plan_window: routepack's search (packing_search with placement refinement) from the
/// baselines' layout, its outcome into r (placement, search counts, the routepack method), and
/// stage 5, validation and non-regression (never worse than reorder, one of its seeds; with a
/// previous placement under a budget or cost model, never worse than its own start). Returns
/// false when cancelled before annealing (the plan is then reorder's).
bool search_routepack(WindowRun& run, const PackingProblem& p_lpt) {
    PlanResult& r = run.r;
    std::optional<MoveStart> ms = move_start(run);
    const PackingProblem& p_start = ms ? *ms->problem : p_lpt;
    const Score start_score = ms ? score_layout(run.ffd, p_start) : r.reorder.metrics.score;
    BestLayout best{run.ffd, start_score};
    PlacementContext pc;
    pc.window = &run.in.trace();
    pc.topology = &run.in.topology;
    pc.placement = ms ? ms->placement : r.placement.lpt;
    pc.moves = ms ? &ms->request : nullptr;
    TrajectoryCache trajectories;
    pc.trajectories = &trajectories;
    pc.ladder = ms && ms->ladder ? &*ms->ladder : nullptr;
    SearchSettings ss;
    ss.problem = &p_start;
    ss.ffd = &run.ffd;
    ss.budgets = &run.in.budgets;
    ss.hooks.progress = run.progress;
    ss.hooks.convergence = &r.search.convergence;
    ss.hooks.timings = &r.timings;
    ss.stop = run.stop;
    ss.placement = &pc;
    const SearchStats st = packing_search(ss, best);
    const PackingProblem& p_final = pc.problem ? *pc.problem : p_start;
    if (pc.problem || ms) {
        // routepack runs on the refined (or moved) placement: its rank loads, CV and bound follow it.
        PlanPlacements& pl = r.placement;
        pl.routepack = pc.placement;
        pl.rank_loads_routepack = rank_loads(run.loads, pl.routepack);
        pl.cv_routepack = cv_global(pl.rank_loads_routepack, pl.routepack.layers, pl.routepack.ep_ranks);
        r.bound = max_u_lower_bound(p_final);
        pl.swaps = pc.swaps;
        pl.rounds_kept = pc.rounds_kept;
    }
    r.placement.refinement_skipped = pc.skipped;
    std::vector<LevelStats> convergence = std::move(r.search.convergence);
    r.search = st.counts;
    r.search.convergence = std::move(convergence);
    r.cancelled = st.cancelled;
    r.time_limit_hit = st.time_limit_hit;
    if (best.improved || ms)
        r.routepack = make_method(Method::RoutePack, pc.problem || ms ? PlacementKind::Refined : PlacementKind::Lpt,
                                  best.layout, p_final, r.placement.cv_routepack);
    if (r.migration.has_previous) finish_migration(run);
    if (r.cancelled && !st.finished) return false;

    // 5. Validation and non-regression.
    const auto t0 = Clock::now();
    run.emit(PlanStage::Validate);
    if (!(r.routepack.metrics.score == best.score))
        throw std::logic_error("planner: the search's score differs from the routepack layout's metrics");
    const std::string bad = validate_layout(r.routepack.layout, p_final);
    if (!bad.empty()) throw std::logic_error("planner produced an invalid layout: " + bad);
    if (!r.migration.costed && start_score < r.routepack.metrics.score)
        throw std::logic_error("planner regressed below its reorder seed");
    run.time(PlanStage::Validate, t0);
    return true;
}

} // namespace

PlanResult plan_window(const PlanInput& in, const PlanProgressFn& progress, const std::atomic<bool>* cancel) {
    check_planner_budgets(in.budgets, "planner");
    const auto t_start = Clock::now();
    const StopToken stop = StopToken::with_time_limit(cancel, in.budgets.time_limit_s, t_start);
    check_window(in);
    const Trace& w = in.trace();

    PlanResult r;
    r.model = w.model;
    r.topology = in.topology;
    r.budgets = in.budgets;
    r.trace_name = in.trace_name;
    r.window_name = in.window_name;
    r.samples = w.samples;
    r.comm.nodes = in.topology.nodes();
    r.comm.available = comm_available(w);
    if (!in.previous && (in.budgets.max_moves >= 0 || in.topology.has_migration))
        r.migration.note = "no previous placement: the move budget and the topology's migration section are ignored "
                           "(the plan is the paper's)";
    if (in.previous) check_previous(*in.previous, w, in.topology);
    if (in.history && in.budgets.history_decay > 0) check_history(*in.history, w);

    WindowRun run{in, progress, stop, r, {}, {}};
    const int workers = in.budgets.workers > 0 ? in.budgets.workers : tbb::this_task_arena::max_concurrency();
    tbb::task_arena arena(workers);
    arena.execute([&] {
        r.fingerprint = window_fingerprint(w);
        const PackingProblem p_lpt = place_and_baselines(run);
        if (in.budgets.history_decay > 0)
            r.history = fold_history(in.history ? &*in.history : nullptr, run.loads, w.model.num_moe_layers(),
                                     w.model.experts, in.budgets.history_decay);
        // Cancelled or out of time (in the row count, say): the plan is `reorder` on the R* found so far.
        if (stop.cancelled()) {
            r.cancelled = true;
            return;
        }
        if (stop.out_of_time()) {
            r.time_limit_hit = true;
            return;
        }
        // 4. RoutePack's search (seeding, annealing, final pass with placement refinement), 5. validation.
        if (!search_routepack(run, p_lpt)) return;

        // 6. Communication (more than one node): every method's inter-node traffic, and the two
        // communication-aware methods on the same window and R*.
        if (r.comm.nodes > 1 && r.comm.available && !r.cancelled) {
            const auto t0 = Clock::now();
            run.emit(PlanStage::Communication);
            plan_communication(w, in, run.loads, run.ffd, r, stop, progress);
            run.time(PlanStage::Communication, t0);
        }
    });
    r.timings["total"] = seconds_since(t_start);
    run.emit(kPlanDone, 1.0);
    return r;
}

std::vector<WindowPlan> plan_windows(const std::vector<PlanInput>& inputs, int workers,
                                     const std::function<void(std::size_t)>& on_done, const std::atomic<bool>* cancel) {
    std::vector<WindowPlan> out(inputs.size());
    const StopToken stop(cancel); // each window's own time limit is added by plan_window
    tbb::task_arena arena(workers > 0 ? workers : tbb::task_arena::automatic);
    arena.execute([&] {
        tbb::parallel_for(std::size_t{0}, inputs.size(), [&](std::size_t k) {
            if (stop.cancelled()) return; // not started: nothing planned for it
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

std::vector<WindowPlan> plan_chain(const std::vector<PlanInput>& inputs, int workers,
                                   const std::function<void(std::size_t, const WindowPlan&)>& on_done,
                                   const std::atomic<bool>* cancel,
                                   const std::function<void(std::size_t, const PlanEvent&)>& on_event) {
    std::vector<WindowPlan> out(inputs.size());
    const StopToken stop(cancel);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        if (stop.cancelled()) break;
        PlanInput in = inputs[k];
        in.budgets.workers = workers;
        out[k].started = true;
        try {
            if (k > 0) {
                in.previous = out[k - 1].plan.placement.routepack;
                in.history = out[k - 1].plan.history;
            } else if (!in.previous)
                in.previous = identity_placement(in.trace().model.num_moe_layers(), in.trace().model.experts,
                                                 in.topology.ep_ranks);
            PlanProgressFn events;
            if (on_event) events = [&on_event, k](const PlanEvent& e) { on_event(k, e); };
            out[k].plan = plan_window(in, events, cancel);
        } catch (const std::exception& e) {
            out[k].error = e.what();
        }
        if (on_done) on_done(k, out[k]);
        if (!out[k].error.empty() || out[k].plan.cancelled) break;
    }
    return out;
}

std::vector<std::vector<FrontierPoint>> move_frontier(const std::vector<PlanInput>& steps, int workers,
                                                      const std::atomic<bool>* cancel) {
    constexpr std::size_t F = std::size(kFrontierFractions);
    std::vector<PlanInput> all;
    all.reserve(steps.size() * F);
    for (const PlanInput& s : steps) {
        if (!s.previous) throw InputError("frontier: window '" + s.window_name + "' has no previous placement");
        const double experts = static_cast<double>(s.previous->layers) * s.previous->experts;
        for (const double f : kFrontierFractions) {
            PlanInput in = s;
            in.budgets.max_moves = std::llround(f * experts);
            all.push_back(std::move(in));
        }
    }
    const std::vector<WindowPlan> plans = plan_windows(all, workers, {}, cancel);
    std::vector<std::vector<FrontierPoint>> out(steps.size(), std::vector<FrontierPoint>(F));
    for (std::size_t k = 0; k < steps.size(); ++k)
        for (std::size_t j = 0; j < F; ++j) {
            const WindowPlan& w = plans[k * F + j];
            if (!w.error.empty()) throw InputError("frontier: window '" + steps[k].window_name + "': " + w.error);
            FrontierPoint& p = out[k][j];
            p.fraction = kFrontierFractions[j];
            p.max_moves = all[k * F + j].budgets.max_moves;
            p.max_u = w.plan.routepack.metrics.score.max_u;
            p.moves = w.plan.migration.figures.moved;
            p.planned_fraction = p.fraction;
            // The smaller budget's plan is within this budget too: keep it when it is better.
            if (j > 0 && out[k][j - 1].max_u < p.max_u) {
                p.max_u = out[k][j - 1].max_u;
                p.moves = out[k][j - 1].moves;
                p.planned_fraction = out[k][j - 1].planned_fraction;
            }
        }
    return out;
}

std::int64_t ladder_trajectory_moves(std::int64_t b, int layers) {
    return std::max<std::int64_t>(16, 4 * b / std::max(1, layers));
}

std::vector<std::int64_t> ladder_points(std::int64_t experts) {
    std::vector<std::int64_t> out;
    for (const double f : kFrontierFractions) {
        const std::int64_t b = std::llround(f * static_cast<double>(experts));
        if (b > 0 && (out.empty() || b > out.back())) out.push_back(b);
    }
    return out;
}

} // namespace routepack
