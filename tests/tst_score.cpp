// The exact score (core/plan/score/score.h, paper eqs. 11-15, DESIGN.md "The cost model, written out") and its
// incremental form: hand-computed tiny cases (stage order: max inside the shard per stage, then the
// stage sum), 64-bit overflow safety, feasibility rules, undo bit-for-bit, and incremental == full
// bitwise after 10^5 random feasible moves (swaps and relocations, same-row-shard moves, undos) on
// randomized problems, for every kernel ISA this CPU has; the lower bound on max_g U (core/plan/score/bound.h)
// by hand and against exhaustive search over every layout of tiny windows; the flat Layout
// (core/plan/score/packing.h): its builders, cell spans, equality and validate_layout's messages.
#include "core/plan/score/bound.h"
#include "core/plan/score/score.h"
#include "tests/testutil.h"

#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace routepack;
using i64 = std::int64_t;

namespace {

bool same_bits(double a, double b) {
    return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

bool same_score(const Score& a, const Score& b) {
    return same_bits(a.max_u, b.max_u) && same_bits(a.sum_u, b.sum_u) && same_bits(a.max_j, b.max_j);
}

QByteArray describe(const Score& s) {
    return QByteArray::number(s.max_u, 'g', 17) + ", " + QByteArray::number(s.sum_u, 'g', 17) + ", " +
           QByteArray::number(s.max_j, 'g', 17);
}

/// Skeleton problem: shards given as DP-slot lists; fills shard_of_slot.
PackingProblem skeleton(int n, int L, int P, int D, std::vector<std::vector<int>> shards, i64 C,
                        std::vector<AttentionStage> stages) {
    PackingProblem p;
    p.n = n;
    p.L = L;
    p.P = P;
    p.D = D;
    p.G = static_cast<int>(shards.size());
    p.C = C;
    p.length.assign(n, 0);
    p.demand.assign(static_cast<std::size_t>(n) * L * P, 0);
    p.shard_of_slot.assign(D, -1);
    for (int g = 0; g < p.G; ++g)
        for (int d : shards[g])
            p.shard_of_slot[d] = g;
    p.shards = std::move(shards);
    p.stages = std::move(stages);
    return p;
}

void set_q(PackingProblem& p, int i, int l, std::vector<i64> per_rank) {
    for (int r = 0; r < p.P; ++r)
        p.demand[(static_cast<std::size_t>(i) * p.L + l) * p.P + r] = per_rank[r];
}

/// Case B of the hand computations: 2 rows x 2 DP slots, shards g0 = {0}, g1 = {1}, L = 2, P = 2,
/// C = 16, stages s0 (alpha 1, beta 0: token-linear, KDA-like) and s1 (alpha 0.5, beta 2).
/// Samples (t_i; q[i][l0], q[i][l1]):
///   0: 8; (6,2) (1,7)    1: 4; (0,4) (4,0)    2: 12; (12,0) (5,7)
///   3: 6; (3,3) (0,6)    4: 2; (2,0) (1,1)    5: 8;  (0,8)  (8,0)
/// Cells: (0,0) = {0,1}, (0,1) = {2}, (1,0) = {3}, (1,1) = {4,5}.
PackingProblem case_b() {
    PackingProblem p = skeleton(6, 2, 2, 2, {{0}, {1}}, 16, {{"kda", 1.0, 0.0}, {"mla", 0.5, 2.0}});
    p.length = {8, 4, 12, 6, 2, 8};
    set_q(p, 0, 0, {6, 2});
    set_q(p, 0, 1, {1, 7});
    set_q(p, 1, 0, {0, 4});
    set_q(p, 1, 1, {4, 0});
    set_q(p, 2, 0, {12, 0});
    set_q(p, 2, 1, {5, 7});
    set_q(p, 3, 0, {3, 3});
    set_q(p, 3, 1, {0, 6});
    set_q(p, 4, 0, {2, 0});
    set_q(p, 4, 1, {1, 1});
    set_q(p, 5, 0, {0, 8});
    set_q(p, 5, 1, {8, 0});
    return p;
}

/// The expert invocation term on a problem whose demand q is set: E = P * H experts per layer, each
/// q[i][l][r] split over rank r's H experts as `split(i, l, r)` gives (H counts summing to q), and a
/// tokens per invocation; fills the expert lists as make_packing_problem does.
template <class Split> void add_invocations(PackingProblem& p, int H, i64 a, Split&& split) {
    p.E = p.P * H;
    p.invocation_tokens = a;
    p.slot_offsets.assign(1, 0);
    p.slot_index.clear();
    p.slot_count.clear();
    p.slot_rank.clear();
    for (int i = 0; i < p.n; ++i) {
        for (int l = 0; l < p.L; ++l)
            for (int r = 0; r < p.P; ++r) {
                const std::vector<i64> parts = split(i, l, r);
                i64 sum = 0;
                for (int h = 0; h < H; ++h) {
                    sum += parts[h];
                    if (parts[h] == 0) continue;
                    p.slot_index.push_back(l * p.E + r * H + h);
                    p.slot_count.push_back(static_cast<std::int32_t>(parts[h]));
                    p.slot_rank.push_back(l * p.P + r);
                }
                if (sum != p.demand[(static_cast<std::size_t>(i) * p.L + l) * p.P + r]) qFatal("split != q");
            }
        p.slot_offsets.push_back(static_cast<i64>(p.slot_index.size()));
    }
}

/// Case B with 2 experts per rank (E = 4) and a = 3 tokens per invocation; rank r's experts of a layer
/// are slots 2r and 2r + 1. Per sample, (layer, slot) -> tokens:
///   0: l0 s0 6, s2 2; l1 s0 1, s3 7        1: l0 s3 4; l1 s1 4
///   2: l0 s0 6, s1 6; l1 s0 5, s2 7        3: l0 s0 3, s3 3; l1 s2 6
///   4: l0 s1 2; l1 s0 1, s2 1              5: l0 s2 8; l1 s0 4, s1 4
PackingProblem case_b_invocations() {
    PackingProblem p = case_b();
    const std::vector<std::vector<std::vector<i64>>> slots = {
        {{6, 0, 2, 0}, {1, 0, 0, 7}}, {{0, 0, 0, 4}, {0, 4, 0, 0}}, {{6, 6, 0, 0}, {5, 0, 7, 0}},
        {{3, 0, 0, 3}, {0, 0, 6, 0}}, {{0, 2, 0, 0}, {1, 0, 1, 0}}, {{0, 0, 8, 0}, {4, 4, 0, 0}}};
    add_invocations(p, 2, 3, [&](int i, int l, int r) {
        return std::vector<i64>{slots[i][l][2 * r], slots[i][l][2 * r + 1]};
    });
    return p;
}

Layout layout_b() {
    return Layout::from_cells(2, 2, {{0, 1}, {2}, {3}, {4, 5}});
}

/// A randomized problem with a valid layout (every cell non-empty, under C) built by hand.
struct RandomCase {
    PackingProblem p;
    Layout x;
};

RandomCase random_case(std::uint64_t seed, int n, int L, int P, int D, std::vector<std::vector<int>> shards, int rows,
                       int n_stages, i64 max_len, int top_k) {
    std::mt19937_64 rng(seed);
    std::vector<AttentionStage> stages;
    stages.reserve(static_cast<std::size_t>(n_stages));
    std::uniform_real_distribution<double> coef(0.0, 3.0);
    for (int s = 0; s < n_stages; ++s)
        stages.push_back({"s" + std::to_string(s), coef(rng), s == 0 ? 0.0 : coef(rng)}); // stage 0: beta = 0
    RandomCase rc{skeleton(n, L, P, D, std::move(shards), 1, std::move(stages)), {}};
    PackingProblem& p = rc.p;
    std::uniform_int_distribution<i64> len(1, max_len);
    for (int i = 0; i < n; ++i) {
        p.length[i] = len(rng);
        for (int l = 0; l < L; ++l) {
            // t_i * top_k routed tokens spread over the ranks, a few ranks left empty.
            std::vector<double> wgt(P);
            double total = 0;
            for (auto& w : wgt)
                total += (w = (rng() % 4 == 0) ? 0.0 : std::uniform_real_distribution<double>(0, 1)(rng));
            i64 left = p.length[i] * top_k;
            for (int r = 0; r < P; ++r) {
                const i64 v = (r == P - 1 || total == 0)
                                  ? left
                                  : std::min<i64>(left, static_cast<i64>(p.length[i] * top_k * wgt[r] / total));
                p.demand[(static_cast<std::size_t>(i) * L + l) * P + r] = v;
                left -= v;
            }
        }
    }
    const int K = rows * D;
    std::vector<int> order(n), cell_of(n);
    for (int i = 0; i < n; ++i)
        order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (int h = 0; h < n; ++h)
        cell_of[h] = h < K ? h : static_cast<int>(rng() % K);
    rc.x = Layout::from_assignment(rows, D, order, cell_of);
    i64 worst = 0;
    for (int k = 0; k < K; ++k) {
        i64 s = 0;
        for (int i : rc.x.cell(k))
            s += p.length[i];
        worst = std::max(worst, s);
    }
    p.C = worst + max_len / 2; // some moves exceed the cap, many do not
    return rc;
}

/// Smallest max_g U over every valid layout of `p` with any row count R (1 <= R*D <= n): every
/// assignment of the n samples to R*D cells is enumerated (order inside a cell does not change the
/// score). Also returns how many valid layouts were scored.
double exhaustive_min_max_u(const PackingProblem& p, long* layouts) {
    double best = std::numeric_limits<double>::infinity();
    *layouts = 0;
    for (int R = 1; R * p.D <= p.n; ++R) {
        const int K = R * p.D;
        std::vector<int> cell(p.n, 0), samples(p.n);
        std::iota(samples.begin(), samples.end(), 0);
        for (;;) {
            const Layout x = Layout::from_assignment(R, p.D, samples, cell);
            if (validate_layout(x, p).empty()) {
                ++*layouts;
                best = std::min(best, score_layout(x, p).max_u);
            }
            int i = 0;
            while (i < p.n && ++cell[i] == K)
                cell[i++] = 0;
            if (i == p.n) break;
        }
    }
    return best;
}

/// Independent feasibility rules (cap and non-empty source) on the scorer's layout.
i64 cell_sum(const PackingProblem& p, std::span<const int> cell) {
    i64 s = 0;
    for (int i : cell)
        s += p.length[i];
    return s;
}

/// Checks the scorer against a full rescore: score bits always; every J, U and cell token sum when `all`.
bool matches_full(const IncrementalScorer& s, bool all, QByteArray* why) {
    const CostBreakdown b = cost_breakdown(s.layout(), s.problem());
    if (!same_score(s.score(), b.score)) {
        *why = "score " + describe(s.score()) + " vs full " + describe(b.score);
        return false;
    }
    if (!all) return true;
    for (int r = 0; r < b.rows; ++r)
        for (int g = 0; g < b.shards; ++g)
            if (!same_bits(s.row_shard_cost(r, g), b.J[static_cast<std::size_t>(r) * b.shards + g])) {
                *why = "J[" + QByteArray::number(r) + "][" + QByteArray::number(g) + "] differs";
                return false;
            }
    for (int g = 0; g < b.shards; ++g)
        if (!same_bits(s.shard_total(g), b.U[g])) {
            *why = "U[" + QByteArray::number(g) + "] differs";
            return false;
        }
    for (int k = 0; k < s.layout().cell_count(); ++k)
        if (s.cell_tokens(k) != cell_sum(s.problem(), s.cell(k))) {
            *why = "cell_tokens(" + QByteArray::number(k) + ") differs";
            return false;
        }
    for (int i = 0; i < s.problem().n; ++i) {
        const auto& c = s.cell(s.cell_of(i));
        if (std::find(c.begin(), c.end(), i) == c.end()) {
            *why = "cell_of(" + QByteArray::number(i) + ") is stale";
            return false;
        }
    }
    return true;
}

/// Everything observable about the scorer's state, for bit-for-bit undo checks.
struct Snapshot {
    Score score;
    std::vector<double> J, U;
    std::vector<i64> tokens;
    Layout layout;
    std::vector<int> cell_of;
};

Snapshot snapshot(const IncrementalScorer& s) {
    Snapshot sn;
    sn.score = s.score();
    sn.layout = s.layout();
    const int R = s.layout().rows, G = s.problem().G;
    for (int r = 0; r < R; ++r)
        for (int g = 0; g < G; ++g)
            sn.J.push_back(s.row_shard_cost(r, g));
    for (int g = 0; g < G; ++g)
        sn.U.push_back(s.shard_total(g));
    for (int k = 0; k < s.layout().cell_count(); ++k)
        sn.tokens.push_back(s.cell_tokens(k));
    for (int i = 0; i < s.problem().n; ++i)
        sn.cell_of.push_back(s.cell_of(i));
    return sn;
}

bool same_snapshot(const Snapshot& a, const Snapshot& b) {
    return same_score(a.score, b.score) && a.J.size() == b.J.size() &&
           std::memcmp(a.J.data(), b.J.data(), a.J.size() * sizeof(double)) == 0 && a.U.size() == b.U.size() &&
           std::memcmp(a.U.data(), b.U.data(), a.U.size() * sizeof(double)) == 0 && a.tokens == b.tokens &&
           a.layout == b.layout && a.cell_of == b.cell_of;
}

struct MoveStats {
    int swaps = 0, relocations = 0, same_row_shard = 0, undone = 0, infeasible = 0;
    std::vector<Score> trajectory; // score after every step (for cross-ISA comparison)
};

/// Applies `moves` random feasible moves to the scorer: proposals are half swaps, half relocations,
/// a quarter of them inside the source's row-shard; feasibility is checked against the independent
/// rule and infeasible proposals are skipped; 30% of the applied moves are undone.
/// Compares with a full rescore after every step (all J/U/tokens every `full_every` steps).
bool random_walk(IncrementalScorer& s, std::uint64_t seed, int moves, int full_every, MoveStats* st, QByteArray* why) {
    std::mt19937_64 rng(seed);
    const PackingProblem& p = s.problem();
    const int K = s.layout().cell_count(), D = p.D;
    auto cell_in_row_shard = [&](int k) {
        const int r = k / D, g = p.shard_of_slot[k % D];
        const auto& slots = p.shards[g];
        return r * D + slots[rng() % slots.size()];
    };
    int applied = 0;
    for (int step = 0; applied < moves; ++step) {
        if (step > 20 * moves) {
            *why = "too few feasible proposals";
            return false;
        }
        const int i = static_cast<int>(rng() % p.n);
        const bool local = rng() % 4 == 0;
        const bool swap = rng() % 2 == 0;
        const Snapshot before = (step % 7 == 0) ? snapshot(s) : Snapshot{};
        const Score prev = s.score();
        const int ki = s.cell_of(i);
        if (swap) {
            int j;
            if (local) {
                const auto& c = s.cell(cell_in_row_shard(ki));
                j = c[rng() % c.size()];
            } else {
                j = static_cast<int>(rng() % p.n);
            }
            const int kj = s.cell_of(j);
            const bool expect = ki != kj && cell_sum(p, s.cell(ki)) - p.length[i] + p.length[j] <= p.C &&
                                cell_sum(p, s.cell(kj)) - p.length[j] + p.length[i] <= p.C;
            if (s.swap_feasible(i, j) != expect) {
                *why = "swap_feasible disagrees at step " + QByteArray::number(step);
                return false;
            }
            if (!expect) {
                ++st->infeasible;
                st->trajectory.push_back(s.score());
                continue;
            }
            if (ki / D == kj / D && p.shard_of_slot[ki % D] == p.shard_of_slot[kj % D]) ++st->same_row_shard;
            s.apply_swap(i, j);
            ++st->swaps;
            ++applied;
        } else {
            const int k = local ? cell_in_row_shard(ki) : static_cast<int>(rng() % K);
            const bool expect = k != ki && s.cell(ki).size() > 1 && cell_sum(p, s.cell(k)) + p.length[i] <= p.C;
            if (s.relocate_feasible(i, k) != expect) {
                *why = "relocate_feasible disagrees at step " + QByteArray::number(step);
                return false;
            }
            if (!expect) {
                ++st->infeasible;
                st->trajectory.push_back(s.score());
                continue;
            }
            if (ki / D == k / D && p.shard_of_slot[ki % D] == p.shard_of_slot[k % D]) ++st->same_row_shard;
            s.apply_relocate(i, k);
            ++st->relocations;
            ++applied;
        }
        if (!matches_full(s, step % full_every == 0, why)) {
            *why += " after move at step " + QByteArray::number(step);
            return false;
        }
        if (rng() % 10 < 3) {
            s.undo();
            ++st->undone;
            if (!same_score(s.score(), prev)) {
                *why = "undo did not restore the score at step " + QByteArray::number(step);
                return false;
            }
            if (step % 7 == 0 && !same_snapshot(before, snapshot(s))) {
                *why = "undo did not restore the state at step " + QByteArray::number(step);
                return false;
            }
            if (!matches_full(s, step % full_every == 0, why)) {
                *why += " after undo at step " + QByteArray::number(step);
                return false;
            }
        }
        st->trajectory.push_back(s.score());
    }
    return matches_full(s, true, why);
}

struct Shape {
    const char* name;
    std::uint64_t seed;
    int n, L, P, D;
    std::vector<std::vector<int>> shards;
    int rows, stages;
    i64 max_len;
    int top_k;
};

std::vector<Shape> shapes() {
    return {
        {"one shard, P=5 (SIMD tails)", 11, 40, 3, 5, 4, {{0, 1, 2, 3}}, 3, 2, 900, 2},
        {"two uneven non-contiguous shards, P=12", 12, 48, 4, 12, 3, {{0, 2}, {1}}, 4, 3, 3000, 4},
        {"three shards, D=6, P=8", 13, 60, 2, 8, 6, {{0, 1}, {2, 3}, {4, 5}}, 3, 1, 5000, 1},
        {"shard per slot, P=19, long samples", 14, 36, 5, 19, 4, {{0}, {1}, {2}, {3}}, 2, 2, 200000, 8},
        {"L=11: 8-layer blocks + 3, P=16", 15, 64, 11, 16, 4, {{0, 1}, {2, 3}}, 4, 2, 2000, 8},
        {"L=16, P=3", 16, 48, 16, 3, 2, {{0, 1}}, 4, 2, 1500, 2},
    };
}

} // namespace

class TestScore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init() { QVERIFY(set_score_kernel_isa("auto")); }
    void cleanupTestCase() { set_score_kernel_isa("auto"); }

    /// The flat layout (core/plan/score/packing.h): from_cells and back, cell spans and sizes, empty cells,
    /// equality (shape, split and in-cell order all count), from_assignment's stable order, the
    /// builders' errors.
    void flatLayout() {
        const std::vector<std::vector<int>> cells{{0, 1}, {2}, {3}, {4, 5}};
        const Layout x = Layout::from_cells(2, 2, cells);
        QCOMPARE(x.rows, 2);
        QCOMPARE(x.dp_slots, 2);
        QCOMPARE(x.cell_count(), 4);
        QCOMPARE(x.samples, (std::vector<int>{0, 1, 2, 3, 4, 5}));
        QCOMPARE(x.offsets, (std::vector<int>{0, 2, 3, 4, 6}));
        QVERIFY(x.well_formed());
        QCOMPARE(test::cells_of(x), cells);
        QCOMPARE(x.cell_index(1, 0), 2);
        for (int k = 0; k < x.cell_count(); ++k) {
            const std::span<const int> c = x.cell(k);
            QCOMPARE(std::vector<int>(c.begin(), c.end()), cells[static_cast<std::size_t>(k)]);
            QCOMPARE(x.cell_size(k), static_cast<int>(cells[static_cast<std::size_t>(k)].size()));
        }
        QCOMPARE(x.cell(x.cell_index(1, 1)).data(), x.samples.data() + 4); // a view, not a copy

        // Empty cells (as karmarkar-karp leaves them): zero-length spans, offsets repeat.
        const std::vector<std::vector<int>> sparse{{}, {3, 1}, {}, {}, {0}, {}};
        const Layout e = Layout::from_cells(3, 2, sparse);
        QCOMPARE(e.offsets, (std::vector<int>{0, 0, 2, 2, 2, 3, 3}));
        QVERIFY(e.well_formed());
        QVERIFY(e.cell(0).empty());
        QCOMPARE(e.cell_size(3), 0);
        QCOMPARE(e.cell_size(1), 2);
        QCOMPARE(e.cell(1)[0], 3);
        QVERIFY(e.cell(5).empty());
        QCOMPARE(test::cells_of(e), sparse);
        QCOMPARE(Layout::from_cells(e.rows, e.dp_slots, test::cells_of(e)), e);
        const Layout none = Layout::from_cells(2, 2, {{}, {}, {}, {}});
        QVERIFY(none.samples.empty());
        QCOMPARE(none.offsets, (std::vector<int>{0, 0, 0, 0, 0}));
        QVERIFY(none.well_formed());
        // The default layout is the well-formed 0 x 0 one.
        QVERIFY(Layout{}.well_formed());
        QCOMPARE(Layout{}.cell_count(), 0);
        QCOMPARE(Layout{}, Layout::from_cells(0, 0, {}));

        // Equality: the same cells in the same order only.
        QCOMPARE(Layout::from_cells(2, 2, cells), x);
        QVERIFY(!(Layout::from_cells(2, 2, {{1, 0}, {2}, {3}, {4, 5}}) == x)); // in-cell order
        QVERIFY(!(Layout::from_cells(2, 2, {{0}, {1, 2}, {3}, {4, 5}}) == x)); // same samples, other split
        QVERIFY(!(Layout::from_cells(1, 4, cells) == x));                      // same cells, other shape
        QVERIFY(!(Layout::from_cells(2, 2, {{0, 1}, {2}, {4, 5}, {3}}) == x)); // cells at other positions

        // from_assignment: order[j] into cell_of[j], each cell in increasing j.
        const std::vector<int> order{5, 3, 0, 1, 4, 2}, cell_of{1, 0, 1, 3, 3, 2};
        const Layout a = Layout::from_assignment(2, 2, order, cell_of);
        QCOMPARE(a, Layout::from_cells(2, 2, {{3}, {5, 0}, {2}, {1, 4}}));
        QCOMPARE(Layout::from_assignment(1, 3, std::vector<int>{}, std::vector<int>{}),
                 Layout::from_cells(1, 3, {{}, {}, {}}));

        // Builder errors.
        using test::error_of;
        QCOMPARE(error_of<std::invalid_argument>([] { Layout::from_cells(2, 2, {{0}}); }),
                 std::string("Layout::from_cells: 1 cells, expected rows x dp_slots = 4"));
        QCOMPARE(error_of<std::invalid_argument>([] { Layout::from_cells(-1, 2, {}); }),
                 std::string("Layout::from_cells: rows and dp_slots must be >= 0 (got -1, 2)"));
        QCOMPARE(error_of<std::invalid_argument>([] {
                     Layout::from_assignment(1, 2, std::vector<int>{0, 1}, std::vector<int>{0});
                 }),
                 std::string("Layout::from_assignment: 2 samples but 1 cells"));
        QCOMPARE(error_of<std::invalid_argument>([] {
                     Layout::from_assignment(1, 2, std::vector<int>{0, 1}, std::vector<int>{0, 2});
                 }),
                 std::string("Layout::from_assignment: cell 2 outside 0..1"));
        QCOMPARE(error_of<std::invalid_argument>(
                     [] { Layout::from_assignment(2, -1, std::vector<int>{}, std::vector<int>{}); }),
                 std::string("Layout::from_assignment: rows and dp_slots must be >= 0 (got 2, -1)"));

        // Offsets that do not describe rows x dp_slots cells over the samples.
        Layout bad = x;
        bad.offsets[2] = 1; // decreasing
        QVERIFY(!bad.well_formed());
        bad = x;
        bad.offsets.back() = 5; // short of the samples
        QVERIFY(!bad.well_formed());
        bad = x;
        bad.offsets.front() = 1;
        QVERIFY(!bad.well_formed());
        bad = x;
        bad.offsets.pop_back(); // one cell short
        QVERIFY(!bad.well_formed());
        bad = x;
        bad.rows = 3; // more cells than offsets
        QVERIFY(!bad.well_formed());
    }

    /// validate_layout's verdicts word for word, each on a layout with exactly that fault (case B:
    /// n = 6, D = 2, C = 16, t = 8, 4, 12, 6, 2, 8).
    void validateLayoutMessages() {
        const PackingProblem p = case_b();
        auto check = [&](const Layout& x) { return validate_layout(x, p); };
        QCOMPARE(check(layout_b()), std::string());
        QCOMPARE(check(Layout::from_cells(1, 4, {{0, 1}, {2}, {3}, {4, 5}})),
                 std::string("layout has 4 DP slots, topology has 2"));
        QCOMPARE(check(Layout::from_cells(0, 2, {})), std::string("layout has no rows"));
        Layout short_offsets = layout_b();
        short_offsets.offsets.pop_back();
        QCOMPARE(check(short_offsets), std::string("layout has 3 cells, expected R x D = 4"));
        Layout no_offsets = layout_b();
        no_offsets.offsets.clear();
        QCOMPARE(check(no_offsets), std::string("layout has 0 cells, expected R x D = 4"));
        Layout decreasing = layout_b();
        decreasing.offsets[1] = 4;
        QCOMPARE(check(decreasing), std::string("layout's cell offsets do not split its 6 samples"));
        Layout extra = layout_b();
        extra.samples.push_back(3); // a sample beyond the last offset
        QCOMPARE(check(extra), std::string("layout's cell offsets do not split its 7 samples"));
        QCOMPARE(check(Layout::from_cells(2, 2, {{0, 1}, {2}, {}, {3, 4, 5}})), std::string("cell (1, 0) is empty"));
        QCOMPARE(check(Layout::from_cells(2, 2, {{0, 1}, {2}, {3}, {4, 6}})),
                 std::string("cell (1, 1) holds sample index 6, outside 0..5"));
        QCOMPARE(check(Layout::from_cells(2, 2, {{0, 1}, {2}, {3}, {-1, 4, 5}})),
                 std::string("cell (1, 1) holds sample index -1, outside 0..5"));
        QCOMPARE(check(Layout::from_cells(2, 2, {{0, 1}, {2, 0}, {3}, {4, 5}})), std::string("sample 0 appears twice"));
        QCOMPARE(check(Layout::from_cells(2, 2, {{0, 1, 3}, {2}, {4}, {5}})),
                 std::string("cell (0, 0) holds 18 tokens > cap 16"));
        QCOMPARE(check(Layout::from_cells(2, 2, {{0}, {2}, {3}, {4, 5}})), std::string("sample 1 is in no cell"));
    }

    /// The scorer writes its layout flat into the caller's Layout, reusing its storage once sized, and
    /// rebuilds it exactly from the per-sample placement.
    void scorerLayoutRoundTrip() {
        const PackingProblem p = case_b();
        IncrementalScorer s(p, layout_b());
        Layout out;
        s.copy_layout_to(out);
        QCOMPARE(out, layout_b());
        const int* samples = out.samples.data();
        const int* offsets = out.offsets.data();
        QVERIFY(s.swap_feasible(1, 4));
        s.apply_swap(1, 4);
        QVERIFY(!s.relocate_feasible(5, 1)); // 12 + 8 > 16
        QVERIFY(s.relocate_feasible(5, 2));
        s.apply_relocate(5, 2);
        s.copy_layout_to(out);
        QCOMPARE(out, Layout::from_cells(2, 2, {{0, 4}, {2}, {3, 5}, {1}}));
        QCOMPARE(out.samples.data(), samples); // no reallocation
        QCOMPARE(out.offsets.data(), offsets);
        QCOMPARE(s.layout(), out);
        SamplePlacement sp;
        s.copy_placement_to(sp);
        QCOMPARE(layout_from_placement(sp, 2, 2), out);
        QVERIFY(same_score(score_layout(out, p), s.score()));
        // layout_from_placement's errors.
        SamplePlacement twice = sp;
        twice.pos[0] = twice.pos[4]; // samples 0 and 4 share cell 0 and now position 1
        QCOMPARE(test::error_of<std::invalid_argument>([&] { layout_from_placement(twice, 2, 2); }),
                 std::string("layout_from_placement: sample 4 has no valid position"));
        SamplePlacement off = sp;
        off.cell[2] = 4;
        QCOMPARE(test::error_of<std::invalid_argument>([&] { layout_from_placement(off, 2, 2); }),
                 std::string("layout_from_placement: sample 2 has no valid cell"));
    }

    /// Attention order: per stage the maximum over the shard's cells of (alpha T + beta Q), then the
    /// sum over stages. One row, D = 2 in one shard, L = P = 1, C = 8 (C^2 = 64).
    void stageMaxInsideShardThenSum() {
        PackingProblem p = skeleton(3, 1, 1, 2, {{0, 1}}, 8, {{"kda", 1.0, 0.0}, {"gqa", 0.5, 4.0}});
        p.length = {4, 2, 5};
        p.demand = {4, 2, 5}; // top-1 onto the single rank: q = t
        const Layout x = Layout::from_cells(1, 2, {{0, 1}, {2}});
        // cell 0: tokens 6, squares 16 + 4 = 20 -> T = 6/8 = 0.75,  Q = 20/64 = 0.3125
        // cell 1: tokens 5, squares 25          -> T = 5/8 = 0.625, Q = 25/64 = 0.390625
        // stage kda (1, 0):   cell 0 0.75,                cell 1 0.625                 -> max 0.75 (cell 0)
        // stage gqa (0.5, 4): cell 0 0.375 + 1.25 = 1.625, cell 1 0.3125 + 1.5625 = 1.875 -> max 1.875 (cell 1)
        // A = 0.75 + 1.875 = 2.625. The wrong orders give other numbers: the max over cells of the
        // per-cell stage sums is max(0.75 + 1.625, 0.625 + 1.875) = 2.5; maxima of T and Q taken
        // separately give 1.5 * 0.75 + 4 * 0.390625 = 2.6875.
        // E: W = 4 + 2 + 5 = 11 tokens on the only rank -> E = 11/8 = 1.375. J = 4.0, U = 4.0.
        const CostBreakdown b = cost_breakdown(x, p);
        QCOMPARE(b.rows, 1);
        QCOMPARE(b.shards, 1);
        QCOMPARE(b.A[0], 2.625);
        QCOMPARE(b.E[0], 1.375);
        QCOMPARE(b.J[0], 4.0);
        QCOMPARE(b.U[0], 4.0);
        QCOMPARE(b.peak, std::vector<i64>{11});
        QVERIFY(same_score(b.score, Score{4.0, 4.0, 4.0}));
        QVERIFY(same_score(score_layout(x, p), b.score));
        IncrementalScorer s(p, x);
        QVERIFY(same_score(s.score(), b.score));
    }

    /// Case B (see case_b()): 2 rows x 2 slots, 2 shards, 2 layers, 2 ranks, 2 stages, by hand.
    void handComputedTwoShards() {
        const PackingProblem p = case_b();
        const Layout x = layout_b();
        // Cells (C = 16, C^2 = 256):
        //   (0,0) {0,1}: tokens 12, squares 64 + 16 = 80 -> T 0.75,  Q 0.3125
        //   (0,1) {2}:   tokens 12, squares 144           -> T 0.75,  Q 0.5625
        //   (1,0) {3}:   tokens 6,  squares 36            -> T 0.375, Q 0.140625
        //   (1,1) {4,5}: tokens 10, squares 4 + 64 = 68   -> T 0.625, Q 0.265625
        // One slot per shard, so A = T + (0.5 T + 2 Q):
        //   A(0,g0) = 0.75 + 0.375 + 0.625 = 1.75         A(0,g1) = 0.75 + 0.375 + 1.125 = 2.25
        //   A(1,g0) = 0.375 + 0.1875 + 0.28125 = 0.84375  A(1,g1) = 0.625 + 0.3125 + 0.53125 = 1.46875
        // W and per-layer peaks:
        //   (0,g0) = q0 + q1: l0 (6,6) -> 6, l1 (5,7) -> 7: 13 -> E = 13/16 = 0.8125
        //   (0,g1) = q2:      l0 (12,0) -> 12, l1 (5,7) -> 7: 19 -> E = 1.1875
        //   (1,g0) = q3:      l0 (3,3) -> 3, l1 (0,6) -> 6: 9 -> E = 0.5625
        //   (1,g1) = q4 + q5: l0 (2,8) -> 8, l1 (9,1) -> 9: 17 -> E = 1.0625 (max_p sum_l would be 11)
        // J: (0,g0) 2.5625, (0,g1) 3.4375, (1,g0) 1.40625, (1,g1) 2.53125
        // U: g0 = 2.5625 + 1.40625 = 3.96875, g1 = 3.4375 + 2.53125 = 5.96875
        // Score = (5.96875, 9.9375, 3.4375)
        const CostBreakdown b = cost_breakdown(x, p);
        QCOMPARE(b.A, (std::vector<double>{1.75, 2.25, 0.84375, 1.46875}));
        QCOMPARE(b.E, (std::vector<double>{0.8125, 1.1875, 0.5625, 1.0625}));
        QCOMPARE(b.J, (std::vector<double>{2.5625, 3.4375, 1.40625, 2.53125}));
        QCOMPARE(b.U, (std::vector<double>{3.96875, 5.96875}));
        QCOMPARE(b.peak, (std::vector<i64>{6, 7, 12, 7, 3, 6, 8, 9}));
        QVERIFY2(same_score(b.score, Score{5.96875, 9.9375, 3.4375}), describe(b.score));
        QCOMPARE(b.score.energy(), 5.96875 + 1e-6 * 9.9375 + 1e-9 * 3.4375);
        // The same score from the row-shard peak sums [R][G] = {13, 19, 9, 17} (a search that kept W).
        const std::vector<i64> peak_sums{13, 19, 9, 17};
        QVERIFY(same_score(score_from_peak_sums(x, p, peak_sums), b.score));
        // One more token of peak at row-shard (1, 1): E 17/16 -> 18/16, U g1 = 5.96875 + 0.0625.
        QVERIFY(same_score(score_from_peak_sums(x, p, std::vector<i64>{13, 19, 9, 18}), Score{6.03125, 10.0, 3.4375}));
        try {
            (void)score_from_peak_sums(x, p, std::vector<i64>{13, 19, 9});
            QFAIL("a peak-sum vector of the wrong size was accepted");
        } catch (const std::invalid_argument& e) {
            QCOMPARE(std::string(e.what()), std::string("score: peak sums hold 3 values, expected rows x G = 4"));
        }

        IncrementalScorer s(p, x);
        QVERIFY(same_score(s.score(), b.score));
        QCOMPARE(s.row_shard_cost(1, 1), 2.53125);
        QCOMPARE(s.shard_total(1), 5.96875);
        QCOMPARE(s.cell_tokens(3), i64{10});

        // Swap 1 (t 4, cell (0,0)) <-> 4 (t 2, cell (1,1)):
        //   (0,0) {0,4}: tokens 10, squares 68 -> A = 1.46875; W l0 (8,2) -> 8, l1 (2,8) -> 8: E = 16/16 = 1
        //   (1,1) {1,5}: tokens 12, squares 80 -> A = 1.75;    W l0 (0,12) -> 12, l1 (12,0) -> 12: E = 1.5
        //   J(0,g0) = 2.46875, J(1,g1) = 3.25; U g0 = 2.46875 + 1.40625 = 3.875, g1 = 3.4375 + 3.25 = 6.6875
        QVERIFY(s.swap_feasible(1, 4));
        const Score after = s.apply_swap(1, 4);
        QVERIFY2(same_score(after, Score{6.6875, 10.5625, 3.4375}), describe(after));
        QCOMPARE(s.row_shard_cost(0, 0), 2.46875);
        QCOMPARE(s.row_shard_cost(1, 1), 3.25);
        QVERIFY(same_score(after, score_layout(s.layout(), p)));
        s.undo();
        QVERIFY(same_score(s.score(), b.score));
        QCOMPARE(s.layout(), x);

        // Relocate 4 (t 2) from (1,1) to (1,0): (1,0) {3,4} tokens 8, squares 40 -> T 0.5, Q 0.15625,
        //   A = 0.5 + 0.25 + 0.3125 = 1.0625; W l0 (5,3) -> 5, l1 (1,7) -> 7: E = 12/16 = 0.75; J = 1.8125
        //   (1,1) {5} tokens 8, squares 64 -> T 0.5, Q 0.25, A = 0.5 + 0.25 + 0.5 = 1.25; W l0 (0,8), l1 (8,0):
        //   E = 1; J = 2.25. U g0 = 2.5625 + 1.8125 = 4.375, g1 = 3.4375 + 2.25 = 5.6875.
        QVERIFY(s.relocate_feasible(4, 2));
        const Score r = s.apply_relocate(4, 2);
        QVERIFY2(same_score(r, Score{5.6875, 10.0625, 3.4375}), describe(r));
        QVERIFY(same_score(r, score_layout(s.layout(), p)));
    }

    /// Case B with the expert invocation term (case_b_invocations, a = 3), by hand: W' = W + a K with
    /// K a rank's experts that hold tokens of the row-shard.
    void handComputedInvocations() {
        const PackingProblem p = case_b_invocations();
        const Layout x = layout_b();
        // (0,g0) {0,1}: l0 W (6,6), K (1,2) -> (9,12): 12; l1 W (5,7), K (2,1) -> (11,10): 11; E = 23/16
        // (0,g1) {2}:   l0 W (12,0), K (2,0) -> 18;      l1 W (5,7), K (1,1) -> (8,10): 10;  E = 28/16
        // (1,g0) {3}:   l0 W (3,3), K (1,1) -> 6;        l1 W (0,6), K (0,1) -> 9;          E = 15/16
        // (1,g1) {4,5}: l0 W (2,8), K (1,1) -> (5,11): 11; l1 W (9,1), K (2,1) -> (15,4): 15; E = 26/16
        // A as in case B: J = (3.1875, 4.0, 1.78125, 3.09375); U = (4.96875, 7.09375).
        const CostBreakdown b = cost_breakdown(x, p);
        QCOMPARE(b.peak, (std::vector<i64>{12, 11, 18, 10, 6, 9, 11, 15}));
        QCOMPARE(b.E, (std::vector<double>{1.4375, 1.75, 0.9375, 1.625}));
        QCOMPARE(b.J, (std::vector<double>{3.1875, 4.0, 1.78125, 3.09375}));
        QVERIFY2(same_score(b.score, Score{7.09375, 12.0625, 4.0}), describe(b.score));
        IncrementalScorer s(p, x);
        QVERIFY2(same_score(s.score(), b.score), describe(s.score()));
        // Swap 1 <-> 4: (0,g0) {0,4}: l0 W (8,2), K (2,1) -> (14,5); l1 W (2,8), K (1,2) -> (5,14): E = 28/16;
        // (1,g1) {1,5}: l0 W (0,12), K (0,2) -> 18; l1 W (12,0), K (2,0) -> 18: E = 36/16.
        // J(0,g0) = 1.46875 + 1.75, J(1,g1) = 1.75 + 2.25: U = (5.0, 8.0).
        const Score after = s.apply_swap(1, 4);
        QVERIFY2(same_score(after, Score{8.0, 13.0, 4.0}), describe(after));
        QVERIFY(same_score(after, score_layout(s.layout(), p)));
        s.undo();
        QVERIFY(same_score(s.score(), b.score));
        // Relocate 4 into (1,0) beside 3: (1,0) {3,4}: l0 W (5,3), K (2,1) -> (11,6); l1 W (1,7), K (1,1) ->
        // (4,10): E = 21/16; (1,1) {5}: l0 W (0,8), K (0,1) -> 11; l1 W (8,0), K (2,0) -> 14: E = 25/16.
        // A (1,g0) 1.0625, (1,g1) 1.25: J = 2.375, 2.8125; U = (3.1875 + 2.375, 4.0 + 2.8125).
        const Score r = s.apply_relocate(4, 2);
        QVERIFY2(same_score(r, Score{6.8125, 12.375, 4.0}), describe(r));
        QVERIFY(same_score(r, score_layout(s.layout(), p)));
        // Without the term (a = 0) the score is case B's, bit for bit, whatever the lists hold.
        PackingProblem off = case_b_invocations();
        off.invocation_tokens = 0;
        QVERIFY(same_score(score_layout(x, off), score_layout(x, case_b())));
        QVERIFY(same_score(IncrementalScorer(off, x).score(), score_layout(x, case_b())));
    }

    /// The incremental path equals the full rescore bitwise with the invocation term on random problems
    /// (experts split at random, many shared between samples), swaps, relocations and undos.
    void incrementalEqualsFullWithInvocations_data() {
        QTest::addColumn<int>("which");
        for (int w = 0; w < static_cast<int>(shapes().size()); ++w)
            QTest::newRow(shapes()[w].name) << w;
    }
    void incrementalEqualsFullWithInvocations() {
        QFETCH(int, which);
        const Shape sh = shapes()[which];
        RandomCase rc =
            random_case(sh.seed, sh.n, sh.L, sh.P, sh.D, sh.shards, sh.rows, sh.stages, sh.max_len, sh.top_k);
        std::mt19937_64 rng(sh.seed * 31 + 7);
        const int H = 3;
        add_invocations(rc.p, H, static_cast<i64>(sh.max_len / 10 + 1), [&](int i, int l, int r) {
            i64 left = rc.p.demand[(static_cast<std::size_t>(i) * rc.p.L + l) * rc.p.P + r];
            std::vector<i64> parts(H, 0);
            for (int h = 0; h < H && left > 0; ++h) {
                const i64 v = h == H - 1 ? left : static_cast<i64>(rng() % static_cast<std::uint64_t>(left + 1));
                if (rng() % 3 == 0 && h < H - 1) continue; // an expert without tokens
                parts[h] = v;
                left -= v;
            }
            parts[H - 1] += left;
            return parts;
        });
        IncrementalScorer s(rc.p, rc.x);
        QVERIFY(same_score(s.score(), score_layout(rc.x, rc.p)));
        QVERIFY(!same_score(score_layout(rc.x, rc.p), [&] {
            PackingProblem off = rc.p;
            off.invocation_tokens = 0;
            return score_layout(rc.x, off);
        }()));
        MoveStats st;
        QByteArray why;
        QVERIFY2(random_walk(s, 2000 + sh.seed, 20000, 97, &st, &why), why.constData());
        QVERIFY(st.swaps > 4000);
        QVERIFY(st.relocations > 2000);
    }

    void feasibilityRules() {
        const PackingProblem p = case_b();
        IncrementalScorer s(p, layout_b());
        // Swap 1 (t 4) <-> 2 (t 12): cell (0,0) would hold 8 + 12 = 20 > 16.
        QVERIFY(!s.swap_feasible(1, 2));
        // Same cell: not a move.
        QVERIFY(!s.swap_feasible(0, 1));
        // Swap 0 (t 8) <-> 3 (t 6): (0,0) 10, (1,0) 8.
        QVERIFY(s.swap_feasible(0, 3));
        // Relocating the only sample of a cell would empty it.
        QVERIFY(!s.relocate_feasible(2, 0));
        QVERIFY(!s.relocate_feasible(3, 1));
        // 4 (t 2) into (0,0): 12 + 2 = 14 <= 16; 5 (t 8) into (0,0): 20 > 16; exactly at the cap is allowed.
        QVERIFY(s.relocate_feasible(4, 0));
        QVERIFY(!s.relocate_feasible(5, 0));
        QVERIFY(s.relocate_feasible(1, 1)); // (0,1): 12 + 4 = 16 == C
        // Own cell and out-of-range cells.
        QVERIFY(!s.relocate_feasible(4, 3));
        QVERIFY(!s.relocate_feasible(4, 4));
        QVERIFY(!s.relocate_feasible(4, -1));
    }

    void rejectsMalformedLayouts() {
        const PackingProblem p = case_b();
        const Layout x = Layout::from_cells(2, 2, {{0, 1}, {2, 0}, {3}, {4, 5}}); // sample 0 twice
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, IncrementalScorer(p, x));
        Layout y = layout_b();
        y.dp_slots = 4;
        y.rows = 1;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, score_layout(y, p));
        const Layout z = Layout::from_cells(2, 2, {{0, 1, 9}, {2}, {3}, {4, 5}});
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cost_breakdown(z, p));
        // Offsets that do not split the samples: decreasing, short of the end, one cell missing.
        Layout w = layout_b();
        w.offsets[1] = 4;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, score_layout(w, p));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, IncrementalScorer(p, w));
        Layout u = layout_b();
        u.offsets.back() = 5;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, score_layout(u, p));
        Layout v = layout_b();
        v.offsets.pop_back();
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, IncrementalScorer(p, v));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, score_from_peak_sums(v, p, std::vector<i64>(4, 0)));
    }

    /// t = 10^6 (t^2 = 10^12), C = 2 * 10^6, demands near 2^31 summed over 16 samples per row-shard
    /// (2^35 per rank): everything must come out of 64-bit integers exactly.
    void noOverflowAtScale() {
        const int D = 8, R = 2, L = 3, P = 2, n = 2 * D * R;
        const i64 C = 2000000, t = 1000000, big = (i64{1} << 31) - 1;
        PackingProblem p = skeleton(n, L, P, D, {{0, 1, 2, 3, 4, 5, 6, 7}}, C, {{"lin", 1.0, 0.0}, {"quad", 0.0, 3.0}});
        std::vector<std::vector<int>> cells(R * D);
        for (int i = 0; i < n; ++i) {
            p.length[i] = t;
            for (int l = 0; l < L; ++l)
                set_q(p, i, l, {big - i, i64{1000} * i});
            cells[i / 2].push_back(i); // two samples per cell: 2 * 10^6 tokens = C
        }
        const Layout x = Layout::from_cells(R, D, cells);
        // Per cell: tokens 2e6 -> T = 1; squares 2e12 -> Q = 2e12 / 4e12 = 0.5. A = 1 + 3 * 0.5 = 2.5.
        // Row 0 holds samples 0..15: W[l][0] = 16 (2^31 - 1) - (0 + ... + 15) = 34359738352 - 120
        //   = 34359738232 (> 2^35 - 2^5, far beyond 32 bits); rank 1 = 1000 * 120 = 120000. Peak sum over 3
        //   layers = 103079214696 -> E = 103079214696 / 2e6.
        // Row 1 holds samples 16..31: W[l][0] = 34359738352 - (16 + ... + 31 = 376) = 34359737976,
        //   peak sum 103079213928.
        const i64 row0 = 3 * (16 * big - 120), row1 = 3 * (16 * big - 376);
        QCOMPARE(row0, i64{103079214696});
        QCOMPARE(row1, i64{103079213928});
        const double e0 = static_cast<double>(row0) / 2e6, e1 = static_cast<double>(row1) / 2e6;
        const CostBreakdown b = cost_breakdown(x, p);
        QCOMPARE(b.A, (std::vector<double>{2.5, 2.5}));
        QVERIFY(same_bits(b.E[0], e0));
        QVERIFY(same_bits(b.E[1], e1));
        QCOMPARE(b.peak[0], 16 * big - 120);
        QCOMPARE(b.peak[L], 16 * big - 376);
        QVERIFY(same_bits(b.J[0], 2.5 + e0));
        QVERIFY(same_bits(b.U[0], (2.5 + e0) + (2.5 + e1)));
        QVERIFY(same_bits(b.score.max_j, 2.5 + e0));

        IncrementalScorer s(p, x);
        QVERIFY(same_score(s.score(), b.score));
        QCOMPARE(s.cell_tokens(0), C);
        // Swap sample 0 (row 0) with sample 31 (row 1): rows exchange 31 - 0 on rank 0 per layer.
        QVERIFY(s.swap_feasible(0, 31));
        s.apply_swap(0, 31);
        const i64 row0b = 3 * (16 * big - 120 - 31), row1b = 3 * (16 * big - 376 + 31);
        const double j0 = 2.5 + static_cast<double>(row0b) / 2e6, j1 = 2.5 + static_cast<double>(row1b) / 2e6;
        QVERIFY(same_bits(s.row_shard_cost(0, 0), j0));
        QVERIFY(same_bits(s.row_shard_cost(1, 0), j1));
        QVERIFY(same_score(s.score(), score_layout(s.layout(), p)));
        // Every cell is at the cap, so no relocation fits anywhere.
        for (int k = 0; k < R * D; ++k)
            QVERIFY(!s.relocate_feasible(5, k));
        s.undo();
        QVERIFY(same_score(s.score(), b.score));
        QVERIFY(same_bits(s.row_shard_cost(0, 0), b.J[0]));
    }

    /// Undo restores the score, every J, U, cell token sum and the layout's cell order, bit for bit,
    /// for swaps, relocations (source's last sample and not), same-row-shard moves, and after a
    /// committed move; a second undo does nothing.
    void undoRestoresEveryBit() {
        RandomCase rc = random_case(5, 30, 3, 6, 4, {{0, 3}, {1, 2}}, 2, 2, 1000, 2);
        rc.p.C *= 2; // roomy: every move below is feasible
        IncrementalScorer s(rc.p, rc.x);
        const PackingProblem& p = rc.p;
        auto check = [&](auto&& move) {
            const Snapshot before = snapshot(s);
            move();
            QVERIFY(!same_snapshot(before, snapshot(s)));
            s.undo();
            QVERIFY(same_snapshot(before, snapshot(s)));
            s.undo(); // no-op
            QVERIFY(same_snapshot(before, snapshot(s)));
            QByteArray why;
            QVERIFY2(matches_full(s, true, &why), why);
        };
        // Swap across rows (cells (0,0) and (1,3), both in shard {0,3}).
        const int a = s.cell(0)[0], b = s.cell(7)[0];
        QVERIFY(s.swap_feasible(a, b));
        check([&] { s.apply_swap(a, b); });
        // Same row-shard swap (cells (0,0) and (0,3) are both in shard {0,3}): only attention changes.
        const int c = s.cell(3)[0];
        QVERIFY(s.swap_feasible(a, c));
        check([&] { s.apply_swap(a, c); });
        // Relocate the first (not last) sample of a multi-sample cell, and the last one.
        int k = 0;
        while (s.cell(k).size() < 2)
            ++k;
        const int first = s.cell(k).front(), last = s.cell(k).back();
        const int target = (k + 5) % s.layout().cell_count();
        QVERIFY(s.relocate_feasible(first, target));
        check([&] { s.apply_relocate(first, target); });
        QVERIFY(s.relocate_feasible(last, target));
        check([&] { s.apply_relocate(last, target); });
        // Same row-shard relocation: the other slot of k's shard, same row.
        const int kd = k % p.D;
        const auto& slots = p.shards[p.shard_of_slot[kd]];
        const int same = (k / p.D) * p.D + (slots[0] == kd ? slots[1] : slots[0]);
        QVERIFY(s.relocate_feasible(first, same));
        check([&] { s.apply_relocate(first, same); });
        // A kept move, then an undone one: only the last is undone, the first stays (W committed).
        s.apply_swap(a, b);
        const Snapshot kept = snapshot(s);
        int src = 0;
        while (s.cell(src).size() < 2)
            ++src;
        const int mover = s.cell(src)[0], dest = (src + 3) % s.layout().cell_count();
        QVERIFY(s.relocate_feasible(mover, dest));
        check([&] { s.apply_relocate(mover, dest); });
        QVERIFY(same_snapshot(kept, snapshot(s)));
        QByteArray why;
        QVERIFY2(matches_full(s, true, &why), why);
    }

    /// 10^5 random feasible moves per shape (swaps, relocations, a quarter inside the row-shard, 30%
    /// undone): incremental == full rescore bitwise after every step.
    void incrementalEqualsFullAfterRandomMoves_data() {
        QTest::addColumn<int>("which");
        for (int w = 0; w < static_cast<int>(shapes().size()); ++w)
            QTest::newRow(shapes()[w].name) << w;
    }
    void incrementalEqualsFullAfterRandomMoves() {
        QFETCH(int, which);
        const Shape sh = shapes()[which];
        RandomCase rc =
            random_case(sh.seed, sh.n, sh.L, sh.P, sh.D, sh.shards, sh.rows, sh.stages, sh.max_len, sh.top_k);
        IncrementalScorer s(rc.p, rc.x);
        MoveStats st;
        QByteArray why;
        QVERIFY2(random_walk(s, 1000 + sh.seed, 100000, 997, &st, &why), why.constData());
        qInfo("%d swaps, %d relocations (%d inside one row-shard), %d undone, %d infeasible proposals", st.swaps,
              st.relocations, st.same_row_shard, st.undone, st.infeasible);
        // The walk really exercised every path.
        QVERIFY(st.swaps > 20000);
        QVERIFY(st.relocations > 10000);
        bool multi_slot_shard = false;
        for (const auto& g : sh.shards)
            multi_slot_shard |= g.size() > 1;
        if (multi_slot_shard) QVERIFY(st.same_row_shard > 5000);
        QVERIFY(st.undone > 10000);
        QVERIFY(st.infeasible > 100);
    }

    /// The AVX-512, AVX2 and scalar kernels give the same trajectory and the same per-layer peaks,
    /// bit for bit (L = 11: the AVX-512 8-layer transposed reduction plus a 3-layer tail; P = 16).
    void everyKernelIsaAgrees() {
        const Shape sh = shapes()[4];
        std::vector<Score> reference;
        std::vector<i64> reference_peaks;
        QStringList tried;
        for (const char* isa : {"scalar", "avx2", "avx512"}) {
            if (!set_score_kernel_isa(isa)) continue;
            QCOMPARE(QByteArray(score_kernel_isa()), QByteArray(isa));
            tried << isa;
            RandomCase rc =
                random_case(sh.seed, sh.n, sh.L, sh.P, sh.D, sh.shards, sh.rows, sh.stages, sh.max_len, sh.top_k);
            IncrementalScorer s(rc.p, rc.x);
            MoveStats st;
            QByteArray why;
            QVERIFY2(random_walk(s, 77, 20000, 101, &st, &why), why.constData());
            const std::vector<i64> peaks = cost_breakdown(s.layout(), rc.p).peak;
            if (reference.empty()) {
                reference = st.trajectory;
                reference_peaks = peaks;
                continue;
            }
            QCOMPARE(st.trajectory.size(), reference.size());
            for (std::size_t x = 0; x < reference.size(); ++x)
                QVERIFY2(same_score(st.trajectory[x], reference[x]), isa);
            QCOMPARE(peaks, reference_peaks);
        }
        QVERIFY(!set_score_kernel_isa("sse9"));
        qInfo("kernel ISAs compared: %s", qPrintable(tried.join(", ")));
    }

    /// Per-layer peaks of cost_breakdown against a naive int64 computation, on shapes with L >= 8.
    void peaksMatchNaive_data() {
        QTest::addColumn<int>("which");
        QTest::newRow("L=11, P=16") << 4;
        QTest::newRow("L=16, P=3") << 5;
    }
    void peaksMatchNaive() {
        QFETCH(int, which);
        const Shape sh = shapes()[which];
        RandomCase rc =
            random_case(sh.seed, sh.n, sh.L, sh.P, sh.D, sh.shards, sh.rows, sh.stages, sh.max_len, sh.top_k);
        const PackingProblem& p = rc.p;
        const CostBreakdown b = cost_breakdown(rc.x, p);
        for (int r = 0; r < rc.x.rows; ++r)
            for (int g = 0; g < p.G; ++g) {
                i64 sum = 0;
                for (int l = 0; l < p.L; ++l) {
                    i64 peak = 0;
                    for (int q = 0; q < p.P; ++q) {
                        i64 w = 0;
                        for (int d : p.shards[g])
                            for (int i : rc.x.cell(r * p.D + d))
                                w += p.q(i)[l * p.P + q];
                        peak = std::max(peak, w);
                    }
                    QCOMPARE(b.peak[(static_cast<std::size_t>(r) * p.G + g) * p.L + l], peak);
                    sum += peak;
                }
                QVERIFY(same_bits(b.E[r * p.G + g], static_cast<double>(sum) / static_cast<double>(p.C)));
            }
    }

    /// Case B by hand: L[l0] = (23, 17), L[l1] = (19, 21) -> sum_l max_p L = 44, E part 44/16 = 2.75;
    /// sum t = 40 (T 2.5), sum t^2 = 328 (Q 1.28125): A part 2.5 + (1.25 + 2.5625) = 6.3125 over
    /// max |D_g| = 1; mean bound (2.75 + 6.3125) / G = 4.53125. Sample bound: sample 2 (t 12,
    /// peaks 12 + 7 = 19 -> 1.1875, A 0.75 + 0.375 + 1.125 = 2.25) = 3.4375, the largest.
    void lowerBoundByHand() {
        const PackingProblem p = case_b();
        const MaxULowerBound b = max_u_lower_bound(p);
        QCOMPARE(b.mean, 4.53125);
        QCOMPARE(b.sample, 3.4375);
        QCOMPARE(b.value, 4.53125 * (1.0 - 1e-12));
        QVERIFY(b.value < 4.53125);
        QVERIFY(b.value <= score_layout(layout_b(), p).max_u); // 5.96875
        // One shard, one slot, one row: the only layout's score is the mean bound itself.
        PackingProblem one = skeleton(3, 2, 2, 1, {{0}}, 100, {{"kda", 1.0, 0.0}, {"mla", 0.5, 2.0}});
        one.length = {8, 4, 12};
        for (int i = 0; i < 3; ++i)
            for (int l = 0; l < 2; ++l)
                set_q(one, i, l, {case_b().q(i)[l * 2], case_b().q(i)[l * 2 + 1]});
        const Layout x = Layout::from_cells(1, 1, {{0, 1, 2}});
        const double s = score_layout(x, one).max_u;
        const MaxULowerBound t = max_u_lower_bound(one);
        QVERIFY2(std::abs(t.mean - s) <= 1e-15 * s, describe(score_layout(x, one)));
        QVERIFY(t.value <= s);
        QVERIFY(t.value >= s * (1 - 2e-12));
        // Bad input is named.
        PackingProblem neg = case_b();
        neg.stages[1].beta = -1;
        QString what;
        try {
            max_u_lower_bound(neg);
        } catch (const std::invalid_argument& e) {
            what = QString::fromUtf8(e.what());
        }
        QCOMPARE(what, QStringLiteral("max_u_lower_bound: stage 'mla' has a negative alpha or beta"));
    }

    /// LB <= the optimum found by enumerating every layout (every row count) of tiny random windows,
    /// with equal and unequal shard sizes, one and several shards, tight and loose caps.
    void lowerBoundBelowExhaustiveOptimum_data() {
        QTest::addColumn<int>("seed");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("D");
        QTest::addColumn<int>("shape"); // 0: one slot per shard, 1: one shard, 2: shards {0,1} {2}
        QTest::addColumn<int>("loose"); // 1: C = sum t (every partition fits), 0: C = max(max t, sum t / 3)
        int row = 0;
        for (int seed = 1; seed <= 4; ++seed)
            for (const auto& [n, D, shape] : {std::tuple{6, 2, 0}, std::tuple{6, 2, 1}, std::tuple{6, 3, 2},
                                              std::tuple{6, 1, 0}, std::tuple{5, 4, 0}})
                for (int loose = 0; loose <= 1; ++loose)
                    QTest::addRow("%d", row++) << seed << n << D << shape << loose;
    }
    void lowerBoundBelowExhaustiveOptimum() {
        QFETCH(int, seed);
        QFETCH(int, n);
        QFETCH(int, D);
        QFETCH(int, shape);
        QFETCH(int, loose);
        std::vector<std::vector<int>> shards;
        if (shape == 0)
            for (int d = 0; d < D; ++d)
                shards.push_back({d});
        else if (shape == 1) {
            shards.emplace_back();
            for (int d = 0; d < D; ++d)
                shards[0].push_back(d);
        } else
            shards = {{0, 1}, {2}};
        RandomCase rc = random_case(static_cast<std::uint64_t>(seed) * 977 + n, n, 2, 3, D, shards, 1, 2, 40, 2);
        PackingProblem& p = rc.p;
        i64 total = 0, longest = 0;
        for (i64 t : p.length) {
            total += t;
            longest = std::max(longest, t);
        }
        p.C = loose ? total : std::max(longest, total / 3);
        long layouts = 0;
        const double best = exhaustive_min_max_u(p, &layouts);
        QVERIFY(layouts > 0);
        const MaxULowerBound b = max_u_lower_bound(p);
        // The certified value is below the optimum; its parts are, up to the rounding the margin
        // covers (one slot in one shard: the whole window in one cell is optimal and equals LB_mean
        // in exact arithmetic, so the computed parts may land an ulp above the computed score).
        QVERIFY2(b.value <= best,
                 QByteArray::number(b.value, 'g', 17) + " > optimum " + QByteArray::number(best, 'g', 17));
        QVERIFY(b.mean <= best * (1 + 1e-13) && b.sample <= best * (1 + 1e-13));
        QVERIFY(b.value > 0);
        QVERIFY(b.value >= std::max(b.mean, b.sample) * (1 - 2e-12));
    }

    /// The flat cells hold as many samples as a cell within C can: here two (C = 2, unit lengths);
    /// a relocation into a full cell is refused before anything changes.
    void flatCellCapacity() {
        PackingProblem p = skeleton(3, 1, 2, 2, {{0}, {1}}, 2, {{"kda", 1.0, 0.0}});
        p.length = {1, 1, 1};
        for (int i = 0; i < 3; ++i)
            set_q(p, i, 0, {i, 1});
        const Layout x = Layout::from_cells(1, 2, {{0, 1}, {2}});
        IncrementalScorer s(p, x);
        QVERIFY(s.relocate_feasible(0, 1));
        s.apply_relocate(0, 1);
        QCOMPARE(s.cell_size(1), 2);
        QCOMPARE(std::vector<int>(s.cell(1).begin(), s.cell(1).end()), (std::vector<int>{2, 0}));
        QVERIFY(same_score(s.score(), score_layout(s.layout(), p)));
        const Score before = s.score();
        QVERIFY(!s.relocate_feasible(1, 1));
        QString what;
        try {
            s.apply_relocate(1, 1);
        } catch (const std::logic_error& e) {
            what = QString::fromUtf8(e.what());
        }
        QCOMPARE(what,
                 QStringLiteral("IncrementalScorer: relocation of sample 1 into a full cell (the move is infeasible)"));
        QVERIFY(same_score(s.score(), before));
        s.undo(); // the relocation of sample 0 is still the one undone
        QCOMPARE(s.layout(), x);
    }

    /// A copied scorer (as chains copy their state) continues independently and exactly.
    void copiesAreIndependent() {
        RandomCase rc = random_case(21, 40, 2, 4, 4, {{0, 1}, {2, 3}}, 3, 2, 800, 2);
        IncrementalScorer a(rc.p, rc.x);
        MoveStats st;
        QByteArray why;
        QVERIFY2(random_walk(a, 5, 500, 50, &st, &why), why.constData());
        IncrementalScorer b = a; // may carry a pending (uncommitted) move
        QVERIFY2(random_walk(b, 6, 2000, 50, &st, &why), why.constData());
        // Assignment into an existing scorer of the same shape (how resampling hands states over).
        IncrementalScorer c(rc.p, rc.x);
        c = a;
        QVERIFY(same_score(c.score(), a.score()));
        QCOMPARE(c.layout(), a.layout());
        QVERIFY2(random_walk(c, 8, 2000, 50, &st, &why), why.constData());
        QVERIFY2(matches_full(a, true, &why), why.constData());
        QVERIFY2(random_walk(a, 7, 2000, 50, &st, &why), why.constData());
    }
};

QTEST_GUILESS_MAIN(TestScore)
#include "tst_score.moc"
