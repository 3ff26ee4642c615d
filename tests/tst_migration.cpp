// Placement across the steps of a run (core/plan/search/migration.h and the planner's previous placement):
// the moves that pay on a hand case, the cost of moves against a brute-force recount, the four
// cases of PlanMigration, budget 0, the chain of a run against planning the steps one by one, and
// plans identical for a seed whatever the worker count.
#include "core/model/topology.h"
#include "core/plan/plan_file.h"
#include "core/plan/planner.h"
#include "core/plan/score/bound.h"
#include "core/plan/search/migration.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "tests/plan_file_testutil.h"
#include "tests/testutil.h"

#include <QtTest>

#include <tbb/task_arena.h>

#include <algorithm>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

using namespace routepack;

namespace {

/// One layer of loads per row, E = row size, as GroupLoads of one group.
GroupLoads one_group(const std::vector<std::vector<std::uint64_t>>& rows) {
    std::vector<std::uint64_t> flat;
    for (const auto& r : rows)
        flat.insert(flat.end(), r.begin(), r.end());
    return aggregate_group_loads(flat, static_cast<int>(rows.size()), static_cast<int>(rows.front().size()));
}

Topology topo8() {
    Topology t;
    t.ep_ranks = 8;
    t.dp_slots = 4;
    t.edp_shards = {{0, 1}, {2, 3}};
    t.token_cap = 4096;
    t.attention_stages = {AttentionStage{"mla", 27.0, 27.0}};
    return t;
}

/// An empty window of a one-MoE-layer model of 4 experts, top-1, and a topology of 2 EP ranks, one
/// DP slot, C = 100 and no attention cost: the bound's hand cases.
Trace tiny_window() {
    Trace w;
    w.model.name = "tiny";
    w.model.num_hidden_layers = 1;
    w.model.experts = 4;
    w.model.top_k = 1;
    w.model.moe_layers = {0};
    return w;
}

Topology tiny_topology() {
    Topology t;
    t.ep_ranks = 2;
    t.dp_slots = 1;
    t.edp_shards = {{0}};
    t.token_cap = 100;
    t.attention_stages = {AttentionStage{"none", 0.0, 0.0}};
    return t;
}

/// A synthetic window (Zipf-skewed experts, 32 per layer, 11 MoE layers) planned on EP8 / DP4.
PlanInput synth_input(int groups, std::uint64_t seed) {
    SynthConfig c;
    c.groups = groups;
    c.group_size = 8;
    c.seed = seed;
    PlanInput in;
    in.window = synth_trace(c);
    in.trace_name = "synth";
    in.window_name = "w" + std::to_string(seed);
    in.topology = topo8();
    in.budgets.annealing.levels = 4;
    in.budgets.annealing.steps = 300;
    in.budgets.seeding.candidates = 8;
    in.budgets.seeding.population = 4;
    in.budgets.workers = 2;
    return in;
}

/// The plan file text without its timings (the only part allowed to differ between runs).
nlohmann::json plan_json(const PlanResult& r) {
    auto j = nlohmann::json::parse(plan_to_json(r));
    j.erase("timings");
    return j;
}

} // namespace

class TestMigration : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void handCaseRightMoves();
    void budgetGoesWhereItBuysMost();
    void relocationChainWhereNoSwapHelps();
    void figuresAgainstRecount();
    void relabelKeepsRanksAndScore();
    void topologySectionAndCost();
    void noPreviousIsThePapersPlan();
    void previousAloneIsUnlimited();
    void budgetZeroKeepsEverySlot();
    void budgetBoundsMoves();
    void costModelChoosesModelledTime();
    void planningOverlapsTheMoves();
    void chainEqualsStepByStep();
    void sameForEveryWorkerCount();
    void boundOverEveryPlacement();
    void anyPlacementBoundEqualsAFullScan();
    void frontierIsBestOfSmallerBudgets();
    void budgetsAreMonotone();
    void sequencerExtendsTrajectories();
    void ladderBudgetsByHand();
    void prunedScanEqualsEveryPair();
    void trajectoryCacheEqualsFreshCalls();
    void historyFoldsDecayedLoads();
    void historyChoosesTheMoves();
    void historyChainEqualsStepByStep();
    void historyInThePlanFile();
};

void TestMigration::handCaseRightMoves() {
    // E = 6, P = 2 (H = 3): rank 0 holds e0 (10), e1 (8), e2 (6), rank 1 e3 (2), e4 (1), e5 (0): busiest
    // 24 of 27. The best single swap moves x = L[e] - L[f] from rank 0 to rank 1 with max(24 - x, 3 + x)
    // least: e0 <-> e5 (x = 10: 14 and 13); the next best, e0 <-> e4 and e1 <-> e5, leave 15 and 16.
    // One move alone is impossible (every rank keeps its three slots): a budget of 1 keeps previous.
    const Placement prev = identity_placement(1, 6, 2);
    MoveRequest rq;
    rq.previous = &prev;
    rq.max_moves = 1;
    const GroupLoads g = one_group({{10, 8, 6, 2, 1, 0}});
    MovePlan one = budgeted_placement(g, rq);
    QCOMPARE(one.placement, prev);
    QCOMPARE(one.peak_before, std::int64_t{24});
    QCOMPARE(one.peak_after, std::int64_t{24});
    rq.max_moves = 2;
    const MovePlan two = budgeted_placement(g, rq);
    // e0 takes e5's slot 5, e5 takes e0's slot 0; the others keep theirs.
    QCOMPARE(two.placement.slot, (std::vector<int>{5, 1, 2, 3, 4, 0}));
    QCOMPARE(two.peak_after, std::int64_t{14});
    QCOMPARE(two.layer_moves, (std::vector<std::int64_t>{2}));
    QCOMPARE(placement_moves(two.placement, prev)[0], (std::vector<ExpertMove>{{0, 0, 1, 0, 5}, {5, 1, 0, 5, 0}}));
}

void TestMigration::relocationChainWhereNoSwapHelps() {
    // E = 6, P = 3 (H = 2): rank 0 holds e0 (8), e1 (9), rank 1 e2 (7), e3 (10), rank 2 e4 (1), e5 (8):
    // 17, 17, 9. Every swap leaves one of the two busiest ranks at 17 or above, so no swap lowers the
    // peak; the chain e0 -> rank 2, e4 -> rank 1, e2 -> rank 0 gives 16, 11, 16 (three moves; the best
    // gain, 1, first in (e1, e2, e3) order among the chains leaving rank 0, its busiest). Each moved
    // expert takes the slot its rank freed: e0 slot 4, e4 slot 2, e2 slot 0.
    const Placement prev = identity_placement(1, 6, 3);
    const GroupLoads g = one_group({{8, 9, 7, 10, 1, 8}});
    MoveRequest rq;
    rq.previous = &prev;
    rq.max_moves = 2;
    const MovePlan two = budgeted_placement(g, rq);
    QCOMPARE(two.placement, prev);
    QCOMPARE(two.peak_before, std::int64_t{17});
    QCOMPARE(two.peak_after, std::int64_t{17});
    rq.max_moves = 3;
    const MovePlan three = budgeted_placement(g, rq);
    QCOMPARE(three.peak_after, std::int64_t{16});
    QCOMPARE(three.layer_moves, (std::vector<std::int64_t>{3}));
    QCOMPARE(three.placement.slot, (std::vector<int>{4, 1, 0, 3, 2, 5}));
    QCOMPARE(three.placement.rank_of(0, 0), 2);
    QCOMPARE(three.placement.rank_of(0, 4), 1);
    QCOMPARE(three.placement.rank_of(0, 2), 0);
    // Without relocation chains, or with the trajectory stopped before its first step, no move helps.
    rq.relocation_chains = false;
    QCOMPARE(budgeted_placement(g, rq).placement, prev);
    QCOMPARE(budgeted_placement(g, rq).peak_after, std::int64_t{17});
    rq.relocation_chains = true;
    rq.trajectory_moves = 0;
    QCOMPARE(budgeted_placement(g, rq).placement, prev);
}

void TestMigration::budgetGoesWhereItBuysMost() {
    // Layer 0 as above (one swap lowers its busiest rank by 9); layer 1 (5, 5, 4, 4): ranks 10 and 8,
    // its best swap e0 <-> e2 gives 9 and 9, a gain of 1. Two moves go to layer 0; four buy both.
    const Placement prev = identity_placement(2, 4, 2);
    const GroupLoads g = one_group({{10, 9, 1, 0}, {5, 5, 4, 4}});
    MoveRequest rq;
    rq.previous = &prev;
    rq.max_moves = 2;
    MovePlan p = budgeted_placement(g, rq);
    QCOMPARE(p.layer_moves, (std::vector<std::int64_t>{2, 0}));
    QCOMPARE(p.peak_before, std::int64_t{29});
    QCOMPARE(p.peak_after, std::int64_t{20});
    rq.max_moves = 4;
    p = budgeted_placement(g, rq);
    QCOMPARE(p.layer_moves, (std::vector<std::int64_t>{2, 2}));
    QCOMPARE(p.peak_after, std::int64_t{19});
    QCOMPARE(moved_experts(p.placement, prev), std::int64_t{4});
    // The leftover of a budget is shared over the layers for the refinement, in layer order.
    QCOMPARE(layer_move_allowance({2, 0}, 5, 4, false), (std::vector<std::int64_t>{4, 1}));
    QCOMPARE(layer_move_allowance({2, 0}, 5, 4, true), (std::vector<std::int64_t>{2, 0}));
    QCOMPARE(layer_move_allowance({2, 0}, -1, 4, false), (std::vector<std::int64_t>{-1, -1}));
    // A budget of every expert of every layer (2 x 4) cannot bind: unlimited; one less shares.
    QCOMPARE(layer_move_allowance({2, 0}, 8, 4, false), (std::vector<std::int64_t>{-1, -1}));
    QCOMPARE(layer_move_allowance({2, 0}, 7, 4, false), (std::vector<std::int64_t>{5, 2}));
}

void TestMigration::figuresAgainstRecount() {
    // Random placements on 4 ranks over 2 nodes (ranks 0-1 on node 0): the figures against a recount
    // of every expert of every layer.
    std::mt19937_64 rng(5);
    MigrationCost c;
    c.expert_bytes = 1e6;
    c.intra_node_GBps = 400;
    c.inter_node_GBps = 50;
    c.seconds_per_U = 1;
    c.node_of_rank = {0, 0, 1, 1};
    for (int round = 0; round < 20; ++round) {
        const int L = 1 + static_cast<int>(rng() % 3), E = 8;
        Placement a = identity_placement(L, E, 4), b = a;
        for (int l = 0; l < L; ++l) {
            std::shuffle(a.slot.begin() + l * E, a.slot.begin() + (l + 1) * E, rng);
            std::shuffle(b.slot.begin() + l * E, b.slot.begin() + (l + 1) * E, rng);
        }
        const MigrationFigures f = migration_figures(b, a, c);
        std::int64_t moved = 0, inter = 0;
        std::vector<double> in_out_intra(4, 0), in_out_inter(4, 0);
        for (int l = 0; l < L; ++l)
            for (int e = 0; e < E; ++e) {
                const int from = a.slot[l * E + e] / 2, to = b.slot[l * E + e] / 2;
                if (from == to) continue;
                ++moved;
                const bool across = c.node_of_rank[from] != c.node_of_rank[to];
                inter += across ? 1 : 0;
                auto& side = across ? in_out_inter : in_out_intra;
                side[from] += 1e6;
                side[to] += 1e6;
            }
        double busiest = 0;
        for (int p = 0; p < 4; ++p)
            busiest = std::max(busiest, in_out_intra[p] / 400e9 + in_out_inter[p] / 50e9);
        QCOMPARE(f.moved, moved);
        QCOMPARE(f.inter_moves, inter);
        QCOMPARE(f.intra_moves, moved - inter);
        QCOMPARE(f.bytes, 1e6 * static_cast<double>(moved));
        QCOMPARE(f.seconds, busiest);
        if (moved > 0) QCOMPARE(f.seconds, f.busiest_intra_bytes / 400e9 + f.busiest_inter_bytes / 50e9);
    }
    // Hand case: one expert from rank 0 to rank 2 (across nodes): 2 MB at 50 GB/s on both ranks.
    Placement a = identity_placement(1, 8, 4), b = a;
    std::swap(b.slot[0], b.slot[4]);
    const MigrationFigures f = migration_figures(b, a, c);
    QCOMPARE(f.moved, std::int64_t{2});
    QCOMPARE(f.inter_moves, std::int64_t{2});
    QCOMPARE(f.busiest_rank, 0);
    QCOMPARE(f.busiest_inter_bytes, 2e6);
    QCOMPARE(f.seconds, 2e6 / 50e9);
}

void TestMigration::relabelKeepsRanksAndScore() {
    // Next = previous with ranks 0 and 1 exchanged wholesale plus a swap of e0 and e4: as written 5
    // experts move; relabeled (the groups {e2, e3}, {e1, e4}, {e0, e5} kept) only 2 do.
    const Placement prev = identity_placement(1, 6, 3);
    Placement next = prev;
    next.slot = {2, 3, 0, 1, 4, 5};        // ranks 0 and 1 exchanged: 4 moves as written
    std::swap(next.slot[0], next.slot[4]); // e0 <-> e4 across ranks
    QCOMPARE(moved_experts(next, prev), std::int64_t{5});
    const Placement r = relabel_to_previous(next, prev);
    QCOMPARE(moved_experts(r, prev), std::int64_t{2});
    // Rank sets of `next` up to their labels: {e1, e4} (was rank 1), {e2, e3}, {e0, e5}.
    QCOMPARE(r.rank_of(0, 1), r.rank_of(0, 4));
    QCOMPARE(r.rank_of(0, 2), r.rank_of(0, 3));
    QCOMPARE(r.rank_of(0, 0), r.rank_of(0, 5));
    QCOMPARE(r.rank_of(0, 2), 1); // the group that was wholly on rank 1 goes back to it
    QCOMPARE(r.at(0, 2), 2);      // in its previous slots
    QCOMPARE(r.at(0, 3), 3);
}

void TestMigration::topologySectionAndCost() {
    const std::string base = R"({"ep_ranks": 8, "dp_slots": 4, "token_cap": 4096,
        "attention_stages": [{"name": "mla", "alpha": 27, "beta": 27}])";
    Topology t = parse_topology(base + "}", "t.json");
    QVERIFY(!t.has_migration);
    t = parse_topology(base + R"(, "migration": {"inter_node_GBps": 25}})", "t.json");
    QVERIFY(t.has_migration);
    QCOMPARE(t.migration.inter_node_GBps, 25.0);
    QCOMPARE(t.migration.state_bytes_per_param, 14.0);
    QCOMPARE(parse_topology(topology_to_json(t), "again"), t);
    QCOMPARE(
        test::error_of<InputError>([&] { parse_topology(base + R"(, "migration": {"intra_GBps": 1}})", "t.json"); }),
        std::string("t.json: migration: unknown field 'intra_GBps' (known: state_bytes_per_param, "
                    "expert_parameters, intra_node_GBps, inter_node_GBps, seconds_per_U, achieved_TFLOPs, "
                    "plan_seconds, planning)"));
    // The planning a step waits for: written when set, read back equal; other words refused.
    Topology planned =
        parse_topology(base + R"(, "migration": {"plan_seconds": 0.25, "planning": "serial"}})", "t.json");
    QCOMPARE(planned.migration.plan_seconds, 0.25);
    QVERIFY(!planned.migration.overlap_planning);
    QCOMPARE(parse_topology(topology_to_json(planned), "again"), planned);
    QVERIFY(topology_to_json(t).find("planning") == std::string::npos); // the defaults are not written
    QCOMPARE(test::error_of<InputError>(
                 [&] { parse_topology(base + R"(, "migration": {"planning": "later"}})", "t.json"); }),
             std::string("t.json: migration.planning is \"later\", not \"overlapped\" or \"serial\""));
    QCOMPARE(
        test::error_of<InputError>([&] { parse_topology(base + R"(, "migration": {"plan_seconds": -1}})", "t.json"); }),
        std::string("t.json: migration.plan_seconds is -1, not a number in [0, 1e+15]"));
    QCOMPARE(test::error_of<InputError>(
                 [&] { parse_topology(base + R"(, "migration": {"inter_node_GBps": 0}})", "t.json"); }),
             std::string("t.json: migration.inter_node_GBps is 0, not a number in [1e-06, 1e+15]"));
    // A denormal bandwidth or TFLOP rate (each once accepted as > 0) would make the seconds infinite.
    QCOMPARE(test::error_of<InputError>(
                 [&] { parse_topology(base + R"(, "migration": {"intra_node_GBps": 5e-324}})", "t.json"); }),
             std::string("t.json: migration.intra_node_GBps is 5e-324, not a number in [1e-06, 1e+15]"));
    QCOMPARE(test::error_of<InputError>(
                 [&] { parse_topology(base + R"(, "migration": {"achieved_TFLOPs": 1e-7}})", "t.json"); }),
             std::string("t.json: migration.achieved_TFLOPs is 1e-07, not a number in [1e-06, 1e+15]"));
    {
        Topology tiny = t;
        tiny.migration.achieved_TFLOPs = 5e-324; // past the reader: the derivation still refuses
        QCOMPARE(QString::fromStdString(test::error_of<InputError>(
                     [&] { resolve_migration_cost(tiny, known_model("deepseek-v2-lite")); })),
                 QStringLiteral("topology: migration: seconds_per_U derived as 6 x token_cap 4096 x expert parameters "
                                "8650752 / (achieved_TFLOPs x 1e12) is not a finite number > 0; give "
                                "migration.seconds_per_U"));
    }
    // DeepSeek-V2-Lite: 3 x 2048 x 1408 = 8,650,752 parameters per expert, 14 bytes each; seconds
    // per U derived as 6 x C x params / (TFLOPs x 1e12) = 6 x 4096 x 8650752 / 400e12.
    const ModelDescription m = known_model("deepseek-v2-lite");
    QCOMPARE(m.expert_params, std::int64_t{8650752});
    const MigrationCost c = resolve_migration_cost(t, m);
    QCOMPARE(c.expert_bytes, 14.0 * 8650752);
    QCOMPARE(c.seconds_per_U, 6.0 * 4096 * 8650752 / 400e12);
    QCOMPARE(c.node_of_rank, std::vector<int>(8, 0));
    ModelDescription unknown = m;
    unknown.name = "mine";
    unknown.expert_params = 0;
    QCOMPARE(test::error_of<InputError>([&] { resolve_migration_cost(t, unknown); }),
             std::string("topology: migration: the expert parameters of model 'mine' are unknown; give "
                         "migration.expert_parameters"));
}

void TestMigration::noPreviousIsThePapersPlan() {
    // Without a previous placement the budget and the migration section change nothing but the note
    // (and the budget and section recorded where they are written).
    PlanInput in = synth_input(4, 1);
    const PlanResult plain = plan_window(in);
    in.budgets.max_moves = 3;
    in.topology.has_migration = true;
    const PlanResult noted = plan_window(in);
    QCOMPARE(noted.placement.routepack, plain.placement.routepack);
    QCOMPARE(noted.routepack.layout, plain.routepack.layout);
    QCOMPARE(noted.routepack.metrics.score, plain.routepack.metrics.score);
    QVERIFY(!noted.migration.has_previous);
    QCOMPARE(noted.migration.note, std::string("no previous placement: the move budget and the topology's "
                                               "migration section are ignored (the plan is the paper's)"));
    QVERIFY(plain.migration.note.empty());
    QVERIFY(!plan_json(plain).contains("migration"));
    QVERIFY(!plan_json(plain)["planner"]["budgets"].contains("max_moves"));
}

void TestMigration::previousAloneIsUnlimited() {
    // Previous alone: unlimited moves, the same plan as a budget that cannot bind (every expert of
    // every layer, L x E, or more), and at least as good in max_g U as every finite budget tried.
    PlanInput in = synth_input(4, 2);
    const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
    Placement prev = identity_placement(L, E, 8);
    std::mt19937_64 rng(11);
    for (int l = 0; l < L; ++l)
        std::shuffle(prev.slot.begin() + l * E, prev.slot.begin() + (l + 1) * E, rng);
    in.previous = prev;
    const PlanResult alone = plan_window(in);
    QVERIFY(alone.migration.has_previous);
    QCOMPARE(alone.migration.max_moves, std::int64_t{-1});
    QCOMPARE(alone.migration.figures.moved, moved_experts(alone.placement.routepack, *in.previous));
    nlohmann::json unlimited = plan_json(alone);
    for (const std::int64_t budget : {static_cast<std::int64_t>(L) * E, std::int64_t{1000000}}) {
        in.budgets.max_moves = budget;
        nlohmann::json j = plan_json(plan_window(in));
        QCOMPARE(j["migration"]["max_moves"].get<std::int64_t>(), budget);
        j["migration"]["max_moves"] = nullptr;
        j["planner"]["budgets"].erase("max_moves");
        QCOMPARE(j, unlimited);
    }
    for (const std::int64_t budget : {0, 4, 16, 64, L * E / 2}) {
        in.budgets.max_moves = budget;
        const PlanResult b = plan_window(in);
        QVERIFY2(alone.routepack.metrics.score.max_u <= b.routepack.metrics.score.max_u,
                 qPrintable(QStringLiteral("budget %1: %2 < unlimited %3")
                                .arg(budget)
                                .arg(b.routepack.metrics.score.max_u)
                                .arg(alone.routepack.metrics.score.max_u)));
    }
    // The plan file carries the migration section and reads back, every field and byte of it.
    const std::string text = plan_to_json(alone);
    const PlanFile f = parse_plan(text, "p.json");
    QVERIFY(f.migration.present);
    QCOMPARE(f.migration.moves, alone.migration.figures.moved);
    QCOMPARE(f.migration.intra_node_moves + f.migration.inter_node_moves, f.migration.moves);
    QCOMPARE(f.migration.previous_fingerprint, placement_fingerprint(*in.previous));
    QCOMPARE(f.migration.max_moves, std::int64_t{-1});
    QCOMPARE(f.migration.peak_sum_previous, alone.migration.peak_sum_previous);
    QCOMPARE(f.migration.peak_sum_start, alone.migration.peak_sum_start);
    QCOMPARE(test::plan_file_difference(plan_file_of(alone), f), std::string());
    QCOMPARE(plan_file_to_json(f), text);
    QCOMPARE(plan_migration_json(f.migration), plan_migration_json(alone));
}

void TestMigration::budgetZeroKeepsEverySlot() {
    PlanInput in = synth_input(4, 3);
    const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
    Placement prev = identity_placement(L, E, 8);
    std::mt19937_64 rng(3);
    for (int l = 0; l < L; ++l)
        std::shuffle(prev.slot.begin() + l * E, prev.slot.begin() + (l + 1) * E, rng);
    in.previous = prev;
    in.budgets.max_moves = 0;
    const PlanResult r = plan_window(in);
    QCOMPARE(r.placement.routepack, prev);
    QCOMPARE(r.migration.figures.moved, std::int64_t{0});
    for (const auto& layer : placement_slot_changes(r.placement.routepack, prev))
        QVERIFY(layer.empty());
    // Its score is the score of its layout at the previous placement (nothing else moved).
    QCOMPARE(r.routepack.metrics.score,
             score_layout(r.routepack.layout, make_packing_problem(in.window, in.topology, prev)));
}

void TestMigration::budgetBoundsMoves() {
    PlanInput in = synth_input(4, 4);
    const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
    in.previous = identity_placement(L, E, 8);
    double last = 0;
    for (const std::int64_t budget : {0, 4, 16, 64}) {
        in.budgets.max_moves = budget;
        const PlanResult r = plan_window(in);
        QVERIFY(r.migration.figures.moved <= budget);
        QCOMPARE(r.migration.figures.moved, moved_experts(r.placement.routepack, *in.previous));
        // Every expert that stays on its rank keeps its previous slot.
        for (int l = 0; l < L; ++l)
            for (int e = 0; e < E; ++e)
                if (r.placement.routepack.rank_of(l, e) == in.previous->rank_of(l, e))
                    QCOMPARE(r.placement.routepack.at(l, e), in.previous->at(l, e));
        if (budget > 0) QVERIFY(r.migration.peak_sum_start <= r.migration.peak_sum_previous);
        last = r.routepack.metrics.score.max_u;
    }
    QVERIFY(last > 0);
}

void TestMigration::costModelChoosesModelledTime() {
    // With the migration section: moves that cost far more than they save are not made, and with
    // compute far dearer than moving the planner moves experts.
    PlanInput in = synth_input(4, 5);
    const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
    in.previous = identity_placement(L, E, 8);
    in.topology.has_migration = true;
    in.topology.migration.expert_parameters = 1000000;
    in.topology.migration.seconds_per_U = 1e-9; // compute nearly free: never move
    PlanResult r = plan_window(in);
    QVERIFY(r.migration.costed);
    QCOMPARE(r.migration.figures.moved, std::int64_t{0});
    in.topology.migration.seconds_per_U = 1e3; // compute dear: move
    r = plan_window(in);
    QVERIFY(r.migration.figures.moved > 0);
    QCOMPARE(r.migration.compute_seconds, 1e3 * r.routepack.metrics.score.max_u);
    QCOMPARE(nlohmann::json::parse(plan_migration_json(r))["objective"], nlohmann::json("modelled time"));
    in.budgets.max_moves = 2; // a budget bounds it too
    QVERIFY(plan_window(in).migration.figures.moved <= 2);
}

void TestMigration::planningOverlapsTheMoves() {
    // eq. 19: overlapped, the step waits for the longer of planning and moving; serial, for both.
    MigrationCost c;
    c.plan_seconds = 0.5;
    QCOMPARE(step_overhead_seconds(c, 0.3), 0.5);
    QCOMPARE(step_overhead_seconds(c, 0.8), 0.8);
    c.overlap_planning = false;
    QCOMPARE(step_overhead_seconds(c, 0.3), 0.8);
    // Compute cheap against moving: no move pays. Planned serially, planning changes no move; overlapped
    // with a planner slower than any move, every move hides under the planning and the paper's score
    // chooses them.
    PlanInput in = synth_input(4, 5);
    const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
    in.previous = identity_placement(L, E, 8);
    in.topology.has_migration = true;
    in.topology.migration.expert_parameters = 1000000;
    in.topology.migration.seconds_per_U = 1e-6;
    const PlanResult none = plan_window(in);
    QCOMPARE(none.migration.figures.moved, std::int64_t{0});
    in.topology.migration.plan_seconds = 1000;
    in.topology.migration.overlap_planning = false;
    const PlanResult serial = plan_window(in);
    QCOMPARE(serial.placement.routepack, none.placement.routepack);
    const auto sj = nlohmann::json::parse(plan_migration_json(serial));
    QCOMPARE(sj["modelled_seconds"].get<double>(), serial.migration.compute_seconds + 1000);
    QCOMPARE(sj["cost_model"]["planning"].get<std::string>(), std::string("serial"));
    in.topology.migration.overlap_planning = true;
    const PlanResult overlapped = plan_window(in);
    QVERIFY(overlapped.migration.figures.moved > 0);
    QVERIFY(overlapped.migration.figures.seconds < 1000);
    QVERIFY(overlapped.routepack.metrics.score.max_u < none.routepack.metrics.score.max_u);
    const auto oj = nlohmann::json::parse(plan_migration_json(overlapped));
    QCOMPARE(oj["modelled_seconds"].get<double>(), overlapped.migration.compute_seconds + 1000);
    QCOMPARE(oj["cost_model"]["plan_seconds"].get<double>(), 1000.0);
    const PlanFile back = parse_plan(plan_to_json(overlapped), "p.json");
    QCOMPARE(back.migration.cost->plan_seconds, 1000.0);
    QVERIFY(back.migration.cost->overlap_planning);
    QCOMPARE(plan_file_to_json(back), plan_to_json(overlapped));
    QCOMPARE(plan_modelled_seconds(back.migration), overlapped.migration.compute_seconds + 1000);
    PlanFileMigration uncosted = back.migration;
    uncosted.cost.reset();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, plan_modelled_seconds(uncosted));
}

void TestMigration::chainEqualsStepByStep() {
    std::vector<PlanInput> steps = {synth_input(4, 11), synth_input(4, 12), synth_input(4, 13)};
    for (auto& s : steps)
        s.budgets.max_moves = 20;
    const auto chain = plan_chain(steps, 2);
    QCOMPARE(chain.size(), std::size_t{3});
    Placement prev = identity_placement(steps[0].window.model.num_moe_layers(), steps[0].window.model.experts, 8);
    for (std::size_t k = 0; k < steps.size(); ++k) {
        QVERIFY2(chain[k].error.empty(), chain[k].error.c_str());
        PlanInput one = steps[k];
        one.previous = prev;
        const PlanResult r = plan_window(one);
        QCOMPARE(plan_json(chain[k].plan), plan_json(r));
        QVERIFY(r.migration.figures.moved <= 20);
        prev = r.placement.routepack;
    }
}

void TestMigration::sameForEveryWorkerCount() {
    std::vector<PlanInput> steps = {synth_input(4, 21), synth_input(4, 22)};
    for (auto& s : steps)
        s.budgets.max_moves = 12;
    const auto one = plan_chain(steps, 1);
    const auto three = plan_chain(steps, 3);
    for (std::size_t k = 0; k < steps.size(); ++k) {
        auto a = plan_json(one[k].plan), b = plan_json(three[k].plan);
        a["planner"].erase("workers");
        b["planner"].erase("workers");
        QCOMPARE(a, b);
    }
}

void TestMigration::boundOverEveryPlacement() {
    // One sample of 12 tokens, one MoE layer, E = 4 on P = 2 (H = 2), counts (6, 3, 2, 1), C = 100,
    // no attention cost: any placement's busiest rank holds at least max(ceil(12 / 2), 6 + 1) = 7.
    Trace w = tiny_window();
    SampleInfo s;
    s.id = "s0";
    s.length = 12;
    s.routed_rows = 12;
    w.samples.push_back(s);
    w.counts = {6, 3, 2, 1};
    const PackingProblem p = make_packing_problem(w, tiny_topology(), identity_placement(1, 4, 2));
    const MaxULowerBound any = max_u_lower_bound_any_placement(p, w.counts, 4);
    QCOMPARE(any.mean, 0.07);
    QCOMPARE(any.sample, 0.07);
    // At the identity placement the busiest rank holds 6 + 3 = 9.
    QCOMPARE(max_u_lower_bound(p).mean, 0.09);
    // On a planned window: below the bound at the plan's placement and below the plan.
    const PlanResult r = plan_window(synth_input(4, 31));
    QVERIFY(r.bound_any_placement.value > 0);
    QVERIFY(r.bound_any_placement.value <= r.bound.value);
    QVERIFY(r.bound_any_placement.value <= r.routepack.metrics.score.max_u);
}

void TestMigration::anyPlacementBoundEqualsAFullScan() {
    // The bound over every placement against a plain scan (every sample and layer sorted), on a
    // synthetic window of 512 samples (8 blocks of the evaluation order) x 11 MoE layers x 32 experts
    // at H - 1 = 15 (P = 2, past the sorted run), 3 (P = 8) and 0 (P = 32): the same doubles, with and
    // without the problem's demand (the samples' order by their bound at LPT), on 1 and 2 workers.
    const PlanInput in = synth_input(64, 5);
    const Trace& w = in.window;
    const int L = w.model.num_moe_layers(), E = w.model.experts;
    for (const int P : {2, 8, 32}) {
        Topology t = topo8();
        t.ep_ranks = P;
        const Placement lpt = lpt_placement(aggregate_expert_loads(w.counts, w.size(), L, E), L, E, P);
        const PackingProblem p = make_packing_problem(w, t, lpt);
        const double c = static_cast<double>(p.C);
        auto attention = [&](std::int64_t tokens, std::int64_t squares) {
            double a = 0;
            for (const auto& st : p.stages)
                a += st.alpha * static_cast<double>(tokens) / c + st.beta * static_cast<double>(squares) / (c * c);
            return a;
        };
        auto peak = [&](std::vector<std::uint64_t> x) {
            std::sort(x.begin(), x.end());
            std::uint64_t sum = 0, light = 0;
            for (std::size_t k = 0; k < x.size(); ++k) {
                sum += x[k];
                if (static_cast<int>(k) < E / P - 1) light += x[k];
            }
            return static_cast<std::int64_t>(std::max((sum + P - 1) / P, x.back() + light));
        };
        double sample = 0;
        std::int64_t tokens = 0, squares = 0, mean_peaks = 0;
        std::vector<std::uint64_t> loads(static_cast<std::size_t>(L) * E, 0);
        for (std::size_t i = 0; i < w.size(); ++i) {
            std::int64_t peaks = 0;
            for (int l = 0; l < L; ++l) {
                const std::uint32_t* a = w.counts.data() + (i * L + l) * E;
                peaks += peak(std::vector<std::uint64_t>(a, a + E));
                for (int e = 0; e < E; ++e)
                    loads[static_cast<std::size_t>(l) * E + e] += a[e];
            }
            const std::int64_t len = p.length[i];
            tokens += len;
            squares += len * len;
            sample = std::max(sample, static_cast<double>(peaks) / c + attention(len, len * len));
        }
        for (int l = 0; l < L; ++l)
            mean_peaks += peak(std::vector<std::uint64_t>(loads.begin() + l * E, loads.begin() + (l + 1) * E));
        const double mean = (static_cast<double>(mean_peaks) / c + attention(tokens, squares) / 2.0) / 2.0;
        const PackingProblem shape = make_packing_shape(w, t, lpt);
        for (const int workers : {1, 2}) {
            tbb::task_arena arena(workers);
            for (const PackingProblem* q : {&p, &shape}) {
                const MaxULowerBound b =
                    arena.execute([&] { return max_u_lower_bound_any_placement(*q, w.counts, E); });
                QCOMPARE(b.sample, sample);
                QCOMPARE(b.mean, mean);
                QCOMPARE(b.value, std::max(mean, sample) * (1.0 - 1e-12));
            }
        }
    }
    // Ordered by the bound at the problem's placement, evaluated until none left can win: 100 samples
    // of 15 tokens (8 to expert 0, 7 to expert 1: 15 on rank 0 at the identity placement, E = 4 on
    // P = 2, but max(ceil(15 / 2), 8 + 0) = 8 at any placement) come before one of 10 tokens all to
    // expert 0 (10 at any placement), which decides the sample bound from past the first block.
    Trace h = tiny_window();
    for (int i = 0; i <= 100; ++i) {
        SampleInfo s;
        s.id = "s" + std::to_string(i);
        s.length = s.routed_rows = i < 100 ? 15 : 10;
        h.samples.push_back(s);
        const std::vector<std::uint32_t> row =
            i < 100 ? std::vector<std::uint32_t>{8, 7, 0, 0} : std::vector<std::uint32_t>{10, 0, 0, 0};
        h.counts.insert(h.counts.end(), row.begin(), row.end());
    }
    const PackingProblem hp = make_packing_problem(h, tiny_topology(), identity_placement(1, 4, 2));
    QCOMPARE(max_u_lower_bound(hp).sample, 0.15);
    QCOMPARE(max_u_lower_bound_any_placement(hp, h.counts, 4).sample, 0.1);
}

void TestMigration::frontierIsBestOfSmallerBudgets() {
    // Each point is the lowest max_g U of the plans at its budget and every smaller one, each plan
    // exactly plan_window's single-worker plan at that budget.
    PlanInput in = synth_input(4, 31);
    const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
    in.previous = identity_placement(L, E, 8);
    const auto frontier = move_frontier({in}, 2);
    QCOMPARE(frontier.size(), std::size_t{1});
    const auto& points = frontier[0];
    QCOMPARE(points.size(), std::size(kFrontierFractions));
    double best = 0;
    std::int64_t best_moves = 0;
    double best_fraction = 0;
    for (std::size_t j = 0; j < points.size(); ++j) {
        PlanInput one = in;
        one.budgets.workers = 1;
        one.budgets.max_moves = std::llround(kFrontierFractions[j] * L * E);
        const PlanResult r = plan_window(one);
        if (j == 0 || r.routepack.metrics.score.max_u <= best) {
            best = r.routepack.metrics.score.max_u;
            best_moves = r.migration.figures.moved;
            best_fraction = kFrontierFractions[j];
        }
        QCOMPARE(points[j].fraction, kFrontierFractions[j]);
        QCOMPARE(points[j].max_moves, one.budgets.max_moves);
        QCOMPARE(points[j].max_u, best);
        QCOMPARE(points[j].moves, best_moves);
        QCOMPARE(points[j].planned_fraction, best_fraction);
        QVERIFY(points[j].moves <= points[j].max_moves);
        if (j > 0) QVERIFY(points[j].max_u <= points[j - 1].max_u);
    }
    QCOMPARE(points[0].moves, std::int64_t{0});
    in.previous.reset();
    try {
        move_frontier({in}, 1);
        QFAIL("a step without a previous placement was planned");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()), std::string("frontier: window 'w31' has no previous placement"));
    }
}

void TestMigration::budgetsAreMonotone() {
    // Separate plans: a larger budget never plans a higher max_g U than a smaller one, every budget
    // is kept, and every budget of at least L x E plans what unlimited moves plan.
    for (const std::uint64_t seed : {5, 6}) {
        PlanInput in = synth_input(4, seed);
        const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
        in.previous = identity_placement(L, E, 8);
        std::vector<std::int64_t> budgets;
        for (std::int64_t b = 0; b <= 24; ++b)
            budgets.push_back(b);
        for (std::int64_t b = 32; b < std::int64_t{L} * E; b += 16)
            budgets.push_back(b);
        budgets.push_back(std::int64_t{L} * E);
        double last = std::numeric_limits<double>::infinity(), first = 0;
        for (const std::int64_t b : budgets) {
            in.budgets.max_moves = b;
            const PlanResult r = plan_window(in);
            QVERIFY2(r.migration.figures.moved <= b, qPrintable(QString("budget %1").arg(b)));
            const double u = r.routepack.metrics.score.max_u;
            QVERIFY2(u <= last,
                     qPrintable(QString("seed %1 budget %2: %3 above %4").arg(seed).arg(b).arg(u).arg(last)));
            if (b == 0) first = u;
            last = u;
        }
        QVERIFY(last < first); // the moves pay on this window: the test can fail
        in.budgets.max_moves = -1;
        const PlanResult unlimited = plan_window(in);
        QCOMPARE(unlimited.routepack.metrics.score.max_u, last);
        in.budgets.max_moves = 10 * std::int64_t{L} * E;
        QCOMPARE(plan_window(in).routepack.metrics.score.max_u, last);
    }
}

void TestMigration::sequencerExtendsTrajectories() {
    // The sequence for a trajectory length is the same whether the trajectories were extended from a
    // shorter run or started afresh, in any order of lengths; its moves count as placement_moves does
    // and its peak sums follow the placement after each prefix.
    PlanInput in = synth_input(4, 7);
    const int L = in.window.model.num_moe_layers(), E = in.window.model.experts;
    const Placement prev = identity_placement(L, E, 8);
    const std::vector<std::uint64_t> loads = aggregate_expert_loads(in.window.counts, in.window.size(), L, E);
    const GroupLoads g = aggregate_group_loads(loads, L, E);
    const Placement lpt = lpt_placement(loads, L, E, 8);
    MoveSequencer seq(g, prev, &lpt);
    for (const std::int64_t m : {4, 16, 2, -1, 8}) {
        const std::vector<MoveStep> a = seq.sequence(m), b = move_sequence(g, prev, &lpt, m);
        QCOMPARE(a.size(), b.size());
        for (std::size_t k = 0; k < a.size(); ++k) {
            QCOMPARE(a[k].layer, b[k].layer);
            QCOMPARE(a[k].moves, b[k].moves);
            QCOMPARE(a[k].rank, b[k].rank);
        }
        QVERIFY(!a.empty());
        const auto sums = sequence_peak_sums(g, a, prev, a.back().moves);
        QCOMPARE(sums.size(), a.size() + 1);
        for (std::size_t k = 0; k <= a.size(); k += std::max<std::size_t>(1, a.size() / 5)) {
            const Placement pi = sequence_placement(a, k, prev);
            QCOMPARE(moved_experts(pi, prev), k == 0 ? std::int64_t{0} : a[k - 1].moves);
            QCOMPARE(sums[k], row_shard_peak_sums(g, pi));
            if (k > 0) QVERIFY(sums[k][0] < sums[k - 1][0]); // every step of the hull gains
        }
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sequence_placement(move_sequence(g, prev, nullptr, 4), 1000, prev));
}

void TestMigration::ladderBudgetsByHand() {
    // DeepSeek-V2-Lite (26 x 64 = 1,664 experts): 1%, 2%, 5%, 10%, 25%, 50%, 100% rounded. L x E = 48:
    // 0.48 rounds to 0 (dropped), 0.96 to 1, 2.4 to 2, 4.8 to 5, 12, 24, 48.
    QCOMPARE(ladder_points(1664), (std::vector<std::int64_t>{17, 33, 83, 166, 416, 832, 1664}));
    QCOMPARE(ladder_points(48), (std::vector<std::int64_t>{1, 2, 5, 12, 24, 48}));
    QCOMPARE(ladder_points(0), std::vector<std::int64_t>{});
    // Four times an even share over the layers, at least 16: 4 x 1664 / 26 = 256, 4 x 166 / 26 = 25.5
    // (truncated), 4 x 31 / 24 = 5.2 -> 16.
    QCOMPARE(ladder_trajectory_moves(1664, 26), std::int64_t{256});
    QCOMPARE(ladder_trajectory_moves(166, 26), std::int64_t{25});
    QCOMPARE(ladder_trajectory_moves(31, 24), std::int64_t{16});
}

void TestMigration::prunedScanEqualsEveryPair() {
    // The trajectories' pruned scan (rank pairs bounded, best bound first) takes the same swaps as the
    // scan of every expert pair: budgeted_placement and the move sequences are identical on random
    // loads of 1 to 8 groups, 2 to 8 EP ranks, 8 to 32 experts, previous placements shuffled (experts
    // leave and come home, so every added-move class occurs), loads of 0..3 tokens (ties everywhere)
    // and of 0..10^6.
    std::mt19937_64 rng(20261206);
    int cases = 0, moved_cases = 0;
    std::int64_t moves_seen = 0;
    for (const int P : {2, 4, 8})
        for (const int E : {8, 16, 32})
            for (const int groups : {1, 3, 8})
                for (const std::uint64_t top : {std::uint64_t{3}, std::uint64_t{1000000}}) {
                    if (E < P) continue;
                    const int L = 3;
                    GroupLoads g{L, E, groups, std::vector<std::int64_t>(static_cast<std::size_t>(L) * groups * E)};
                    std::uniform_int_distribution<std::uint64_t> load(0, top);
                    for (std::int64_t& x : g.w)
                        x = static_cast<std::int64_t>(load(rng));
                    Placement prev = identity_placement(L, E, P);
                    for (int l = 0; l < L; ++l)
                        std::shuffle(prev.slot.begin() + l * E, prev.slot.begin() + (l + 1) * E, rng);
                    std::vector<std::uint64_t> totals(static_cast<std::size_t>(L) * E, 0);
                    for (int l = 0; l < L; ++l)
                        for (int k = 0; k < groups; ++k)
                            for (int e = 0; e < E; ++e)
                                totals[static_cast<std::size_t>(l * E + e)] +=
                                    static_cast<std::uint64_t>(g.w[static_cast<std::size_t>((l * groups + k) * E + e)]);
                    const Placement lpt = lpt_placement(totals, L, E, P);
                    for (const bool chains : {true, false})
                        for (const std::int64_t budget : {std::int64_t{-1}, std::int64_t{3}, std::int64_t{E / 2}}) {
                            MoveRequest rq;
                            rq.previous = &prev;
                            rq.target = budget == 3 ? nullptr : &lpt;
                            rq.max_moves = budget;
                            rq.relocation_chains = chains;
                            const MovePlan pruned = budgeted_placement(g, rq);
                            rq.exhaustive_scan = true;
                            const MovePlan every = budgeted_placement(g, rq);
                            QCOMPARE(pruned.placement.slot, every.placement.slot);
                            QCOMPARE(pruned.layer_moves, every.layer_moves);
                            QCOMPARE(pruned.peak_after, every.peak_after);
                            ++cases;
                            const std::int64_t m = moved_experts(pruned.placement, prev);
                            moved_cases += m > 0 ? 1 : 0;
                            moves_seen += m;
                        }
                    MoveSequencer a(g, prev, &lpt), b(g, prev, &lpt, true);
                    for (const std::int64_t m : {2, -1}) {
                        const std::vector<MoveStep> x = a.sequence(m), y = b.sequence(m);
                        QCOMPARE(x.size(), y.size());
                        for (std::size_t k = 0; k < x.size(); ++k) {
                            QCOMPARE(x[k].layer, y[k].layer);
                            QCOMPARE(x[k].moves, y[k].moves);
                            QCOMPARE(x[k].rank, y[k].rank);
                        }
                    }
                }
    QCOMPARE(cases, 3 * 3 * 3 * 2 * 2 * 3);
    QVERIFY2(moved_cases > cases * 3 / 4, qPrintable(QString::number(moved_cases)));
    QVERIFY(moves_seen > 1000);
}

void TestMigration::trajectoryCacheEqualsFreshCalls() {
    // budgeted_placement with a TrajectoryCache returns what a fresh call returns, whether the call
    // extends the kept trajectories (same loads, previous, target, chains) or starts again (any of
    // them changed), in an order of budgets and trajectory lengths that grows, shrinks and grows.
    std::mt19937_64 rng(7);
    const int L = 4, E = 16, P = 4, groups = 2;
    auto random_loads = [&] {
        GroupLoads g{L, E, groups, std::vector<std::int64_t>(static_cast<std::size_t>(L) * groups * E)};
        std::uniform_int_distribution<std::int64_t> load(0, 50);
        for (std::int64_t& x : g.w)
            x = load(rng);
        return g;
    };
    const GroupLoads g1 = random_loads(), g2 = random_loads();
    Placement prev = identity_placement(L, E, P);
    for (int l = 0; l < L; ++l)
        std::shuffle(prev.slot.begin() + l * E, prev.slot.begin() + (l + 1) * E, rng);
    const Placement lpt = lpt_placement(std::vector<std::uint64_t>(static_cast<std::size_t>(L) * E, 1), L, E, P);
    struct Call {
        const GroupLoads* loads;
        const Placement* target;
        std::int64_t max_moves, trajectory_moves;
        bool chains, reuses;
    };
    const std::vector<Call> calls = {
        {&g1, &lpt, 4, 4, false, false},   {&g1, &lpt, 12, 8, false, true},    {&g1, &lpt, 2, 2, false, true},
        {&g1, &lpt, -1, -1, false, true},  {&g2, &lpt, 6, 4, false, false},    {&g2, nullptr, 6, 4, false, false},
        {&g2, nullptr, 6, 4, true, false}, {&g2, nullptr, 20, -1, true, true}, {&g1, nullptr, 20, -1, true, false},
    };
    TrajectoryCache cache;
    std::int64_t reused = 0, moved = 0;
    for (const Call& c : calls) {
        MoveRequest rq;
        rq.previous = &prev;
        rq.target = c.target;
        rq.max_moves = c.max_moves;
        rq.trajectory_moves = c.trajectory_moves;
        rq.relocation_chains = c.chains;
        const MovePlan fresh = budgeted_placement(*c.loads, rq);
        const MovePlan kept = budgeted_placement(*c.loads, rq, cache);
        QCOMPARE(kept.placement.slot, fresh.placement.slot);
        QCOMPARE(kept.layer_moves, fresh.layer_moves);
        QCOMPARE(kept.peak_before, fresh.peak_before);
        QCOMPARE(kept.peak_after, fresh.peak_after);
        reused += c.reuses ? 1 : 0;
        QCOMPARE(cache.reused(), reused);
        moved += moved_experts(fresh.placement, prev);
    }
    QCOMPARE(cache.calls(), static_cast<std::int64_t>(calls.size()));
    QVERIFY(moved > 20);
    MoveRequest none;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, budgeted_placement(g1, none, cache));
}

void TestMigration::historyFoldsDecayedLoads() {
    // One layer of two experts, decay 0.5: H_0 = (4, 2), W_0 = 1; H_1 = 0.5 H_0 + (0, 6) = (2, 7),
    // W_1 = 1.5, the mean step (1.33, 4.67) rounds to (1, 5); H_2 = 0.5 H_1 + (3, 3) = (4, 6.5),
    // W_2 = 1.75, mean (2.29, 3.71) -> (2, 4).
    const std::vector<std::uint64_t> g0{4, 2}, g1{0, 6}, g2{3, 3};
    const RunHistory h0 = fold_history(nullptr, g0, 1, 2, 0.5);
    QCOMPARE(h0.steps, std::int64_t{1});
    QCOMPARE(h0.weight, 1.0);
    QCOMPARE(h0.loads, (std::vector<double>{4, 2}));
    const RunHistory h1 = fold_history(&h0, g1, 1, 2, 0.5);
    QCOMPARE(h1.steps, std::int64_t{2});
    QCOMPARE(h1.weight, 1.5);
    QCOMPARE(h1.loads, (std::vector<double>{2, 7}));
    QCOMPARE(history_mean_loads(h1), (std::vector<std::uint64_t>{1, 5}));
    const RunHistory h2 = fold_history(&h1, g2, 1, 2, 0.5);
    QCOMPARE(h2.weight, 1.75);
    QCOMPARE(h2.loads, (std::vector<double>{4, 6.5}));
    QCOMPARE(history_mean_loads(h2), (std::vector<std::uint64_t>{2, 4}));
    // Decay 0 forgets the run (the step's own loads); decay 1 weighs every step alike (the plain mean).
    QCOMPARE(history_mean_loads(fold_history(&h1, g2, 1, 2, 0.0)), g2);
    const RunHistory all = fold_history(&h1, g2, 1, 2, 1.0);
    QCOMPARE(all.weight, 2.5);
    QCOMPARE(all.loads, (std::vector<double>{5, 10}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fold_history(&h1, g2, 1, 2, 1.5));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fold_history(&h1, std::vector<std::uint64_t>{1, 2, 3}, 1, 3, 0.5));
}

void TestMigration::historyChoosesTheMoves() {
    // A second step with history: the moves are measured on the run's mean step loads (peak_sum_previous
    // is their busiest-rank sum at the previous placement), toward their LPT placement (migration.base).
    PlanInput first = synth_input(4, 41), second = synth_input(4, 42);
    first.budgets.history_decay = second.budgets.history_decay = 0.75;
    first.budgets.max_moves = second.budgets.max_moves = 16;
    first.previous = identity_placement(first.window.model.num_moe_layers(), first.window.model.experts, 8);
    const PlanResult r0 = plan_window(first);
    QVERIFY(r0.history.has_value());
    QVERIFY(!r0.migration.base.has_value()); // a first step has no run before it
    second.previous = r0.placement.routepack;
    second.history = r0.history;
    const PlanResult r1 = plan_window(second);
    QVERIFY(r1.history.has_value());
    QCOMPARE(r1.history->steps, std::int64_t{2});
    QCOMPARE(r1.history->weight, 1.75);
    const int L = second.window.model.num_moe_layers(), E = second.window.model.experts;
    const std::vector<std::uint64_t> g0 = aggregate_expert_loads(first.window.counts, first.window.size(), L, E),
                                     g1 = aggregate_expert_loads(second.window.counts, second.window.size(), L, E);
    for (std::size_t i = 0; i < g0.size(); ++i)
        QCOMPARE(r1.history->loads[i], 0.75 * static_cast<double>(g0[i]) + static_cast<double>(g1[i]));
    const std::vector<std::uint64_t> mean = history_mean_loads(*r1.history);
    QVERIFY(mean != g1);
    QVERIFY(r1.migration.base.has_value());
    QCOMPARE(*r1.migration.base, lpt_placement(mean, L, E, 8));
    auto peak_sum = [&](const std::vector<std::uint64_t>& loads, const Placement& pi) {
        const std::vector<std::uint64_t> g = rank_loads(loads, pi);
        std::int64_t sum = 0;
        for (int l = 0; l < L; ++l)
            sum += static_cast<std::int64_t>(*std::max_element(g.begin() + l * 8, g.begin() + (l + 1) * 8));
        return sum;
    };
    QCOMPARE(r1.migration.peak_sum_previous, peak_sum(mean, r0.placement.routepack));
    QVERIFY(peak_sum(mean, r0.placement.routepack) != peak_sum(g1, r0.placement.routepack));
    QVERIFY(r1.migration.figures.moved <= 16);
    // Without history the same step measures its own loads.
    second.budgets.history_decay = 0;
    const PlanResult step = plan_window(second);
    QVERIFY(!step.history.has_value());
    QCOMPARE(step.migration.peak_sum_previous, peak_sum(g1, r0.placement.routepack));
}

void TestMigration::historyChainEqualsStepByStep() {
    std::vector<PlanInput> steps = {synth_input(4, 51), synth_input(4, 52), synth_input(4, 53)};
    for (auto& s : steps) {
        s.budgets.max_moves = 20;
        s.budgets.history_decay = 0.5;
    }
    const auto chain = plan_chain(steps, 2);
    Placement prev = identity_placement(steps[0].window.model.num_moe_layers(), steps[0].window.model.experts, 8);
    std::optional<RunHistory> history;
    for (std::size_t k = 0; k < steps.size(); ++k) {
        QVERIFY2(chain[k].error.empty(), chain[k].error.c_str());
        PlanInput one = steps[k];
        one.previous = prev;
        one.history = history;
        const PlanResult r = plan_window(one);
        QCOMPARE(plan_json(chain[k].plan), plan_json(r));
        QCOMPARE(r.history->steps, static_cast<std::int64_t>(k + 1));
        prev = r.placement.routepack;
        history = r.history;
    }
    QCOMPARE(history->weight, 1.75);
    // A history of another shape is refused, naming the previous plan.
    PlanInput bad = steps[0];
    bad.previous = prev;
    bad.history = history;
    bad.history->experts = 16;
    QCOMPARE(test::error_of<InputError>([&] { plan_window(bad); }),
             std::string("previous plan: its history has 11 MoE layers x 16 experts, the window 11 x 32"));
}

void TestMigration::historyInThePlanFile() {
    PlanInput in = synth_input(4, 61);
    in.budgets.history_decay = 0.25;
    const PlanResult r = plan_window(in);
    const std::string text = plan_to_json(r);
    const auto j = nlohmann::json::parse(text);
    QCOMPARE(j["version"].get<int>(), 10);
    QCOMPARE(j["planner"]["budgets"]["history_decay"].get<double>(), 0.25);
    QCOMPARE(j["history"]["steps"].get<int>(), 1);
    QCOMPARE(j["history"]["loads"].size(), std::size_t{11});
    QCOMPARE(j["history"]["loads"][3].size(), std::size_t{32});
    const PlanFile f = parse_plan(text, "p.json");
    QVERIFY(f.history.has_value());
    QCOMPARE(f.history->loads, r.history->loads);
    QCOMPARE(plan_file_to_json(f), text); // byte for byte
    // Decay 0 writes neither the budget nor the section.
    in.budgets.history_decay = 0;
    const auto plain = nlohmann::json::parse(plan_to_json(plan_window(in)));
    QVERIFY(!plain.contains("history"));
    QVERIFY(!plain["planner"]["budgets"].contains("history_decay"));
    auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json bad = j;
        edit(bad);
        return test::error_of<InputError>([&] { parse_plan(bad.dump(), "p.json"); });
    };
    QCOMPARE(refused([](nlohmann::json& b) { b["history"]["weight"] = 2; }),
             std::string("p.json: history.weight is 2, not a number in [1, 1]"));
    QCOMPARE(refused([](nlohmann::json& b) { b["history"]["loads"].erase(0); }),
             std::string("p.json: history.loads has 10 rows, not 11 (one per MoE layer)"));
    QCOMPARE(refused([](nlohmann::json& b) { b["history"]["loads"][2].push_back(1); }),
             std::string("p.json: history.loads[2] has 33 loads, not 32 (one per expert)"));
    QCOMPARE(refused([](nlohmann::json& b) { b["history"]["loads"][1][5] = -1; }),
             std::string("p.json: history.loads[1][5] is -1, not a number in [0, 1e+18]"));
    QCOMPARE(refused([](nlohmann::json& b) { b["history"]["decay"] = 0.5; }),
             std::string("p.json: history.decay is 0.5, not the plan's planner.budgets.history_decay 0.25"));
    QCOMPARE(refused([](nlohmann::json& b) { b["planner"]["budgets"]["history_decay"] = 2; }),
             std::string("p.json: planner.budgets: history_decay is 2, not a number in [0, 1]"));
}

QTEST_GUILESS_MAIN(TestMigration)
#include "tst_migration.moc"
