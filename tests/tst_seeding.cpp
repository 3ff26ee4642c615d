// Diverse fixed-row seeding (core/plan/search/seeding.h, paper section 4.1.1, Algorithm 2): the xoshiro256** Rng
// (golden values, unbiased bounds), the seed derivations of core/util/seeds.h (every planner stage id
// once, Grouter's layers, the window sampler without modulo bias), WindowShuffle, Canonicalize, the sliced-Wasserstein
// sketch, EDPAwarePair on a hand case and as a cell permutation, and diverse_population's contract (validity on 100
// random windows, winner first and never worse than the FFD seed, canonical-distinct members, cyclic fill, determinism
// across runs and thread counts).
#include "core/model/window_select.h"
#include "core/plan/score/packing.h"
#include "core/plan/score/score.h"
#include "core/plan/search/rowcount.h"
#include "core/plan/search/seeding.h"
#include "core/util/seeds.h"
#include "tests/testutil.h"

#include <QtTest>

#include <tbb/global_control.h>

#include <algorithm>
#include <numeric>
#include <set>

using namespace routepack;

namespace {

/// Contiguous EDP shards: `sizes` slots each, in DP-slot order.
void set_shards(PackingProblem& p, const std::vector<int>& sizes) {
    p.shards.clear();
    p.shard_of_slot.assign(static_cast<std::size_t>(p.D), -1);
    int d = 0;
    for (int s : sizes) {
        std::vector<int> g;
        for (int j = 0; j < s; ++j) {
            p.shard_of_slot[static_cast<std::size_t>(d)] = static_cast<int>(p.shards.size());
            g.push_back(d++);
        }
        p.shards.push_back(g);
    }
    p.G = static_cast<int>(p.shards.size());
}

/// Random problem: lengths uniform in [lo, hi], top-2 routing with skewed, sample-correlated rank
/// popularity (q[i][l][.] sums to 2 t_i). Two attention stages (linear and quadratic).
PackingProblem random_problem(int n, int L, int P, int D, const std::vector<int>& shard_sizes, std::int64_t C,
                              std::int64_t lo, std::int64_t hi, std::uint64_t seed) {
    Rng rng(seed);
    PackingProblem p;
    p.n = n;
    p.L = L;
    p.P = P;
    p.D = D;
    p.C = C;
    set_shards(p, shard_sizes);
    p.stages = {AttentionStage{"kda", 1.0, 0.0}, AttentionStage{"mla", 0.5, 2.0}};
    p.length.resize(static_cast<std::size_t>(n));
    p.demand.assign(static_cast<std::size_t>(n) * L * P, 0);
    for (int i = 0; i < n; ++i) {
        const std::int64_t t = lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
        p.length[static_cast<std::size_t>(i)] = t;
        for (int l = 0; l < L; ++l) {
            const int hot = static_cast<int>(rng.below(static_cast<std::uint64_t>(P)));
            std::int32_t* q = p.demand.data() + (static_cast<std::size_t>(i) * L + l) * P;
            std::int64_t left = 2 * t;
            const std::int64_t h = left * (30 + static_cast<std::int64_t>(rng.below(50))) / 100;
            q[hot] += h;
            left -= h;
            for (int r = 0; r < P && left > 0; ++r) {
                const std::int64_t part =
                    r == P - 1 ? left : static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(left) + 1));
                q[r] += part;
                left -= part;
            }
            q[0] += left;
        }
    }
    return p;
}

/// FixedRowFFD at the smallest R for which it succeeds (the caller's R* in the planner).
Layout ffd_at_smallest_rows(const PackingProblem& p) {
    const std::int64_t total = std::accumulate(p.length.begin(), p.length.end(), std::int64_t{0});
    int R = static_cast<int>(std::max<std::int64_t>(1, (total + p.C * p.D - 1) / (p.C * p.D)));
    Layout x;
    for (; R * p.D <= p.n; ++R)
        if (fixed_row_ffd(p.length, p.C, R, p.D, &x)) return x;
    return {};
}

/// sum over row-shards and layers of max_p W[r][g][l][p] (tokens), computed independently here.
std::int64_t peak_sum(const Layout& x, const PackingProblem& p) {
    std::int64_t total = 0;
    std::vector<std::int64_t> W(static_cast<std::size_t>(p.L) * p.P);
    for (int r = 0; r < x.rows; ++r)
        for (const auto& slots : p.shards) {
            std::fill(W.begin(), W.end(), 0);
            for (int d : slots)
                for (int i : x.cell(r * x.dp_slots + d))
                    for (std::size_t k = 0; k < W.size(); ++k)
                        W[k] += p.q(i)[k];
            for (int l = 0; l < p.L; ++l)
                total += *std::max_element(W.begin() + l * p.P, W.begin() + (l + 1) * p.P);
        }
    return total;
}

std::multiset<std::vector<int>> cell_multiset(const Layout& x) {
    std::multiset<std::vector<int>> s;
    for (auto c : test::cells_of(x)) {
        std::sort(c.begin(), c.end());
        s.insert(c);
    }
    return s;
}

/// `x` with its cells (as nested lists, cell k = r*D + d) rearranged by `change`.
template <class F> Layout changed(const Layout& x, F&& change) {
    std::vector<std::vector<int>> cells = test::cells_of(x);
    change(cells);
    return Layout::from_cells(x.rows, x.dp_slots, cells);
}

QString describe(const Score& s) {
    return QStringLiteral("(%1, %2, %3)").arg(s.max_u, 0, 'g', 17).arg(s.sum_u, 0, 'g', 17).arg(s.max_j, 0, 'g', 17);
}

/// A 3 x 4 layout over 12+ samples with shards {0,1} and {2,3}.
PackingProblem small_problem() {
    return random_problem(20, 2, 2, 4, {2, 2}, 4096, 100, 1200, 99);
}
Layout small_layout() {
    return Layout::from_cells(
        3, 4, {{0, 12}, {1}, {2, 13, 14}, {3}, {4}, {5, 15}, {6}, {7, 16}, {8, 17}, {9}, {10, 18, 19}, {11}});
}

} // namespace

class TestSeeding : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rngGoldenValues() {
        Rng r(1);
        const std::uint64_t golden[] = {0xb3f2af6d0fc710c5ULL, 0x853b559647364ceaULL, 0x92f89756082a4514ULL,
                                        0x642e1c7bc266a3a7ULL, 0xb27a48e29a233673ULL};
        for (std::uint64_t g : golden)
            QCOMPARE(r.next(), g);
        Rng a(42), b(42), c(43);
        QCOMPARE(a.next(), b.next());
        QVERIFY(Rng(42).next() != c.next());
    }

    void rngBelowAndUniform() {
        Rng r(7);
        for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{7},
                                std::uint64_t{1000}, (std::uint64_t{1} << 63) + 1, ~std::uint64_t{0}}) {
            for (int k = 0; k < 2000; ++k)
                QVERIFY(r.below(n) < n);
        }
        QCOMPARE(r.below(0), std::uint64_t{0});
        std::vector<int> hist(6, 0);
        for (int k = 0; k < 60000; ++k)
            ++hist[r.below(6)];
        for (int h : hist)
            QVERIFY2(h > 9000 && h < 11000, qPrintable(QString::number(h)));
        for (int k = 0; k < 10000; ++k) {
            const double u = r.uniform();
            QVERIFY(u >= 0.0 && u < 1.0);
        }
    }

    /// Every planner stage with its id, each listed exactly once: kPlannerStages holds exactly these,
    /// no two stages share an id, and the two searches' streams are six different stages.
    void stageIdsUnique() {
        using seeds::Stage;
        const std::vector<std::pair<Stage, std::uint64_t>> listed = {
            {Stage::Seeding, 1},      {Stage::Annealing, 2},      {Stage::Polish, 3},      {Stage::Grouter, 4},
            {Stage::CommSeeding, 11}, {Stage::CommAnnealing, 12}, {Stage::CommPolish, 13},
        };
        QCOMPARE(std::size(seeds::kPlannerStages), listed.size());
        std::set<std::uint64_t> ids;
        for (std::size_t k = 0; k < listed.size(); ++k) {
            QCOMPARE(static_cast<std::uint64_t>(listed[k].first), listed[k].second);
            QVERIFY(seeds::kPlannerStages[k] == listed[k].first);
            QVERIFY2(ids.insert(listed[k].second).second, qPrintable(QString::number(listed[k].second)));
        }
        std::set<Stage> streams;
        for (const auto& s : {seeds::kRoutepackSearch, seeds::kCommSearch})
            streams.insert({s.seeding, s.annealing, s.polish});
        QCOMPARE(streams.size(), std::size_t{6});
        // The derivation: the (id + 1)-th splitmix64 output of the master seed.
        for (const auto& [stage, id] : listed) {
            std::uint64_t state = 7;
            std::uint64_t out = 0;
            for (std::uint64_t k = 0; k <= id; ++k)
                out = splitmix64(state);
            QCOMPARE(seeds::planner_stage(7, stage), out);
        }
        QCOMPARE(seeds::planner_stage(7, Stage::Grouter), std::uint64_t{0x73d33b666a1e21daULL});
        // Grouter's layer streams: the stage seed plus the layer, wrapping.
        QCOMPARE(seeds::grouter_layer(40, 3), std::uint64_t{43});
        QCOMPARE(seeds::grouter_layer(~std::uint64_t{0}, 2), std::uint64_t{1});
        QCOMPARE(seeds::window_sampler(12345), std::uint64_t{12345});
    }

    /// uniform_below against a scripted word source: 2^64 mod n raw values (the lowest) are
    /// rejected, so each result has exactly floor(2^64 / n) raw values; n a power of two rejects nothing.
    void uniformBelowRejectsTheRemainder() {
        auto scripted = [](std::vector<std::uint64_t> words, std::uint64_t n, int& used) {
            used = 0;
            return uniform_below(n, [&] { return words[static_cast<std::size_t>(used++)]; });
        };
        int used = 0;
        // n = 3: 2^64 mod 3 = 1, raw 0 is rejected (plain modulo would map it to 0).
        QCOMPARE(scripted({0, 7}, 3, used), std::uint64_t{1});
        QCOMPARE(used, 2);
        QCOMPARE(scripted({1}, 3, used), std::uint64_t{1});
        QCOMPARE(used, 1);
        // n = 2^63 + 1: 2^64 mod n = 2^63 - 1, so raw 0 .. 2^63 - 2 are rejected.
        const std::uint64_t big = (std::uint64_t{1} << 63) + 1, rem = (std::uint64_t{1} << 63) - 1;
        QCOMPARE(scripted({0, rem - 1, rem}, big, used), rem);
        QCOMPARE(used, 3);
        QCOMPARE(scripted({0}, std::uint64_t{1} << 40, used), std::uint64_t{0});
        QCOMPARE(used, 1);
        QCOMPARE(scripted({}, 1, used), std::uint64_t{0}); // the only value, no draw
        QCOMPARE(used, 0);
    }

    /// The bias that plain modulo has and uniform_below has not, measured on the window sampler's
    /// splitmix64 stream: for n = 3 * 2^62 the values below 2^62 have two raw preimages each under
    /// r mod n, so plain modulo lands there half the time; uniform_below a third of the time.
    void uniformBelowUnbiased() {
        const std::uint64_t n = std::uint64_t{3} << 62, low = std::uint64_t{1} << 62;
        std::uint64_t a = 1, b = 1;
        int unbiased = 0, plain = 0;
        const int draws = 30000;
        for (int k = 0; k < draws; ++k) {
            unbiased += uniform_below(n, [&] { return splitmix64(a); }) < low;
            plain += splitmix64(b) % n < low;
        }
        // Standard deviation of a count at p = 1/3: sqrt(30000 * 2/9) = 82.
        QVERIFY2(std::abs(unbiased - draws / 3) < 400, qPrintable(QString::number(unbiased)));
        QVERIFY2(std::abs(plain - draws / 2) < 400, qPrintable(QString::number(plain)));
    }

    /// `window --random N --seed S`: the samples of a fixed seed, held as values (import order); the
    /// same seed gives the same window, every size-1 window is uniform over the samples.
    void randomWindowSamples() {
        std::vector<SampleInfo> samples(40);
        for (std::size_t i = 0; i < samples.size(); ++i)
            samples[i].id = "s" + std::to_string(i);
        const WindowSelection w = select_random(samples, 10, 7, "t");
        // The list of an independent Python model of the documented draw (splitmix64 from the seed,
        // rejection of the lowest 2^64 mod m words).
        QCOMPARE(w.ids, (std::vector<std::string>{"s7", "s9", "s10", "s16", "s18", "s20", "s23", "s24", "s25", "s38"}));
        QCOMPARE(w.definition, std::string("random 10 seed 7"));
        QCOMPARE(select_random(samples, 10, 7, "t").ids, w.ids);
        QCOMPARE(select_random(samples, 40, 3, "t").ids.size(), std::size_t{40});
        std::vector<int> hist(5, 0);
        const std::vector<SampleInfo> five(samples.begin(), samples.begin() + 5);
        for (std::uint64_t seed = 0; seed < 5000; ++seed)
            ++hist[static_cast<std::size_t>(std::stoi(select_random(five, 1, seed, "t").ids[0].substr(1)))];
        for (int h : hist) // 1000 expected each; sd 28
            QVERIFY2(h > 880 && h < 1120, qPrintable(QString::number(h)));
    }

    void windowShuffle() {
        std::vector<int> order(200);
        std::iota(order.begin(), order.end(), 0);
        std::reverse(order.begin(), order.end());
        Rng r(3);
        QCOMPARE(window_shuffle(order, 1, r), order);
        QCOMPARE(window_shuffle(order, 0, r), order);
        for (int w : {2, 4, 8, 1000}) {
            for (int rep = 0; rep < 20; ++rep) {
                const auto s = window_shuffle(order, w, r);
                auto sorted = s;
                std::sort(sorted.begin(), sorted.end());
                std::vector<int> ident(order.size());
                std::iota(ident.begin(), ident.end(), 0);
                QCOMPARE(sorted, ident);
                // The h-th output comes from the first w remaining items: its index in `order` < h + w.
                for (std::size_t h = 0; h < s.size(); ++h)
                    QVERIFY(199 - s[h] < static_cast<int>(h) + w);
            }
        }
        QVERIFY(window_shuffle(order, 4, r) != order);
        QVERIFY(window_shuffle({}, 4, r).empty());
    }

    void canonicalSignature() {
        const PackingProblem p = small_problem();
        const Layout x = small_layout();
        QCOMPARE(validate_layout(x, p), std::string());
        const auto sig = canonical_signature(x, p);

        const Layout rows_permuted = changed(x, [](auto& c) { // rows 2, 0, 1
            std::rotate(c.begin(), c.begin() + 8, c.end());
        });
        QCOMPARE(canonical_signature(rows_permuted, p), sig);

        const Layout within_shard = changed(x, [](auto& c) { // exchange slots 0 <-> 1 of row 0 and 2 <-> 3 of row 2
            std::swap(c[0], c[1]);
            std::swap(c[10], c[11]);
        });
        QCOMPARE(canonical_signature(within_shard, p), sig);

        const Layout in_cell = changed(x, [](auto& c) {
            std::reverse(c[2].begin(), c[2].end());
            std::reverse(c[10].begin(), c[10].end());
        });
        QCOMPARE(canonical_signature(in_cell, p), sig);

        const Layout across_shards = changed(x, [](auto& c) { // slots 1 and 2 of row 0 are in different shards
            std::swap(c[1], c[2]);
        });
        QVERIFY(canonical_signature(across_shards, p) != sig);

        const Layout moved =
            changed(x, [](auto& c) { // sample 12 moves from cell (0,0) in shard 0 to cell (0,3) in shard 1
                c[0] = {0};
                c[3] = {3, 12};
            });
        QVERIFY(canonical_signature(moved, p) != sig);

        const Layout across_rows = changed(x, [](auto& c) { // cell contents swap between rows: different row grouping
            std::swap(c[0], c[4]);
        });
        QVERIFY(canonical_signature(across_rows, p) != sig);
    }

    void sketchInvariance() {
        const PackingProblem p = small_problem();
        const Layout x = small_layout();
        const Sketch s = sketch_layout(x, p, 8);
        QCOMPARE(s.phi.size(), std::size_t{8 * 3});
        QCOMPARE(sketch_distance(s, s, 8), 0.0);
        const Layout rows_permuted = changed(x, [](auto& c) { std::rotate(c.begin(), c.begin() + 4, c.end()); });
        const Sketch t = sketch_layout(rows_permuted, p, 8);
        QCOMPARE(t.phi, s.phi);
        QCOMPARE(sketch_distance(s, t, 8), 0.0);
        const Layout within_shard = changed(x, [](auto& c) { std::swap(c[4], c[5]); });
        QCOMPARE(sketch_distance(s, sketch_layout(within_shard, p, 8), 8), 0.0);
        const Layout moved = changed(x, [](auto& c) { // a long-ish sample moves to another row: row features change
            c[2] = {2, 13};
            c[7] = {7, 16, 14};
        });
        QCOMPARE(validate_layout(moved, p), std::string());
        const double d = sketch_distance(s, sketch_layout(moved, p, 8), 8);
        QVERIFY2(d > 0, qPrintable(QString::number(d)));
        QCOMPARE(sketch_distance(sketch_layout(moved, p, 8), s, 8), d);
    }

    void edpAwarePairHandCase() {
        // L = 1, P = 2, D = 2 (one shard), R = 2. Cells A, B load rank 0; C, D load rank 1.
        PackingProblem p;
        p.n = 4;
        p.L = 1;
        p.P = 2;
        p.D = 2;
        p.C = 100;
        set_shards(p, {2});
        p.stages = {AttentionStage{"mla", 1.0, 1.0}};
        p.length = {10, 10, 10, 10};
        p.demand = {10, 0, 10, 0, 0, 10, 0, 10};
        // rows {A, B}, {C, D}: both rows hot on one rank, peak sum 20 + 20
        const Layout length_only = Layout::from_cells(2, 2, {{0}, {1}, {2}, {3}});
        QCOMPARE(peak_sum(length_only, p), std::int64_t{40});
        Rng r(1);
        const Layout paired = edp_aware_pair(length_only, p, 1, r);
        QCOMPARE(validate_layout(paired, p), std::string());
        QCOMPARE(cell_multiset(paired), cell_multiset(length_only));
        QCOMPARE(peak_sum(paired, p), std::int64_t{20}); // each row pairs a rank-0 with a rank-1 cell
        // w = 1 is the deterministic greedy: A -> (0,0), B -> (1,0) (same increase, smaller peak),
        // C -> (0,1) (lowest slot among the two zero increases), D -> (1,1).
        const std::vector<std::vector<int>> expected{{0}, {2}, {1}, {3}};
        QCOMPARE(test::cells_of(paired), expected);

        // Randomized (w = 4) pairing on random problems: a permutation of the cells, never invalid.
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            const PackingProblem q = random_problem(60, 3, 4, 4, {2, 2}, 4096, 200, 2500, seed);
            const Layout x = ffd_at_smallest_rows(q);
            QVERIFY(x.rows > 0);
            Rng rr(seed);
            const Layout y = edp_aware_pair(x, q, 4, rr, seed % 2 ? 1 : 64);
            QCOMPARE(validate_layout(y, q), std::string());
            QCOMPARE(cell_multiset(y), cell_multiset(x));
        }
        // The cells must be a well-formed layout of D = p.D slots and at least one row.
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 edp_aware_pair(Layout::from_cells(1, 4, {{0}, {1}, {2}, {3}}), p, 1, r));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, edp_aware_pair(Layout::from_cells(0, 2, {}), p, 1, r));
        Layout short_offsets = length_only;
        short_offsets.offsets.pop_back();
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, edp_aware_pair(short_offsets, p, 1, r));
    }

    /// EDPAwarePair keeps its rank loads in int32 when sum_i max q[i] < 2^31 and in int64 otherwise;
    /// every key it compares scales with the demand, so multiplying every q by 2^20 (which forces the
    /// int64 path) must give the very same layout and the very same random draws.
    void edpAwarePairSameOnBothLoadWidths() {
        for (std::uint64_t seed = 1; seed <= 12; ++seed) {
            const PackingProblem q = random_problem(80, 3, 8, 4, {2, 2}, 4096, 100, 1000, seed);
            PackingProblem wide = q;
            std::int64_t bound = 0;
            for (int i = 0; i < q.n; ++i)
                bound += *std::max_element(q.q(i), q.q(i) + q.L * q.P) * (std::int64_t{1} << 20);
            for (auto& v : wide.demand) {
                QVERIFY(v < (1 << 11)); // v * 2^20 stays a valid int32 demand
                v *= 1 << 20;
            }
            QVERIFY(bound >= (std::int64_t{1} << 31)); // the scaled problem takes the int64 path
            const Layout x = ffd_at_smallest_rows(q);
            for (int width : {1, 4}) {
                for (int cap : {1, 3, 64}) {
                    Rng ra(seed), rb(seed);
                    const Layout a = edp_aware_pair(x, q, width, ra, cap);
                    const Layout b = edp_aware_pair(x, wide, width, rb, cap);
                    QCOMPARE(a, b);
                    QCOMPARE(ra.next(), rb.next());
                }
            }
        }
    }

    void populationValidOnRandomWindows() {
        int distinct_total = 0;
        for (std::uint64_t seed = 1; seed <= 100; ++seed) {
            Rng shape(seed * 7919);
            const int D = 2 + static_cast<int>(shape.below(3)); // 2..4
            std::vector<int> sizes;
            for (int left = D; left > 0;) {
                const int s = 1 + static_cast<int>(shape.below(static_cast<std::uint64_t>(left)));
                sizes.push_back(s);
                left -= s;
            }
            const int n = 16 + static_cast<int>(shape.below(64));
            const int L = 1 + static_cast<int>(shape.below(4));
            const int P = 2 << shape.below(2);
            PackingProblem p = random_problem(n, L, P, D, sizes, 4096, 64, 3000, seed);
            if (seed % 3 == 0) { // interleaved shards: slot d in shard d % 2
                p.shards = {{}, {}};
                for (int d = 0; d < D; ++d) {
                    p.shard_of_slot[static_cast<std::size_t>(d)] = d % 2;
                    p.shards[static_cast<std::size_t>(d % 2)].push_back(d);
                }
                p.G = 2;
            }
            const Layout ffd = ffd_at_smallest_rows(p);
            QVERIFY(ffd.rows > 0);
            SeedingBudget b;
            b.candidates = 12;
            b.population = 4;
            b.seed = seed;
            const auto members = diverse_population(p, ffd, b);
            QCOMPARE(static_cast<int>(members.size()), 4);
            const Score ffd_score = score_layout(ffd, p);
            Score best = members.front().score;
            std::vector<std::vector<int>> sigs;
            for (const auto& m : members) {
                const std::string why = validate_layout(m.layout, p);
                QVERIFY2(why.empty(), qPrintable(QString::fromStdString(why)));
                QCOMPARE(m.layout.rows, ffd.rows);
                QCOMPARE(m.layout.dp_slots, D);
                QCOMPARE(m.score, score_layout(m.layout, p));
                QVERIFY(!m.origin.empty());
                best = std::min(best, m.score);
                sigs.push_back(canonical_signature(m.layout, p));
            }
            QCOMPARE(best, members.front().score);
            QVERIFY2(members.front().score <= ffd_score,
                     qPrintable(describe(members.front().score) + " vs ffd " + describe(ffd_score)));
            // All selected canonical-distinct seeds before repetition, then cyclic.
            int k = 1;
            while (k < static_cast<int>(sigs.size()) &&
                   std::find(sigs.begin(), sigs.begin() + k, sigs[static_cast<std::size_t>(k)]) == sigs.begin() + k)
                ++k;
            for (std::size_t j = static_cast<std::size_t>(k); j < sigs.size(); ++j)
                QCOMPARE(sigs[j], sigs[j - static_cast<std::size_t>(k)]);
            distinct_total += k;
        }
        QVERIFY2(distinct_total > 300, qPrintable(QString::number(distinct_total))); // mostly 4 distinct of 4
    }

    void membersDistinctWhenSeedsAbound() {
        const PackingProblem p = random_problem(96, 4, 4, 4, {2, 2}, 8192, 200, 4000, 5);
        const Layout ffd = ffd_at_smallest_rows(p);
        SeedingBudget b;
        b.candidates = 32;
        b.population = 8;
        b.seed = 11;
        const auto members = diverse_population(p, ffd, b);
        QCOMPARE(members.size(), std::size_t{8});
        std::set<std::vector<int>> sigs;
        std::set<std::string> origins;
        for (const auto& m : members) {
            sigs.insert(canonical_signature(m.layout, p));
            origins.insert(m.origin);
        }
        QCOMPARE(sigs.size(), std::size_t{8});
        QCOMPARE(origins.size(), std::size_t{8});
        QVERIFY(members.front().score <= score_layout(ffd, p));
    }

    void deterministicAcrossRunsAndThreads() {
        const PackingProblem p = random_problem(120, 3, 4, 4, {1, 3}, 8192, 100, 5000, 17);
        const Layout ffd = ffd_at_smallest_rows(p);
        SeedingBudget b;
        b.candidates = 24;
        b.population = 6;
        b.seed = 123;
        auto run = [&](int threads) {
            tbb::global_control gc(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
            return diverse_population(p, ffd, b);
        };
        const auto a = run(2), c = run(2), one = run(1);
        QCOMPARE(a.size(), one.size());
        for (std::size_t j = 0; j < a.size(); ++j) {
            QCOMPARE(a[j].layout, c[j].layout);
            QCOMPARE(a[j].layout, one[j].layout);
            QCOMPARE(a[j].origin, one[j].origin);
            QCOMPARE(a[j].score, one[j].score);
        }
        SeedingBudget other = b;
        other.seed = 124;
        const auto d = diverse_population(p, ffd, other);
        bool differs = false;
        for (std::size_t j = 0; j < a.size(); ++j)
            differs = differs || !(a[j].layout == d[j].layout);
        QVERIFY(differs);
    }

    void cyclicFillWithOneDistinctSeed() {
        // n == D and R = 1 with one shard: every layout is the same row up to exchangeable slots.
        PackingProblem p = random_problem(4, 2, 2, 4, {4}, 1000, 100, 900, 3);
        Layout ffd = ffd_at_smallest_rows(p);
        QCOMPARE(ffd.rows, 1);
        SeedingBudget b;
        b.candidates = 10;
        b.population = 5;
        auto members = diverse_population(p, ffd, b);
        QCOMPARE(members.size(), std::size_t{5});
        for (const auto& m : members) {
            QCOMPARE(m.layout, members.front().layout);
            QCOMPARE(m.origin, std::string("ffd"));
            QCOMPARE(m.score, score_layout(ffd, p));
        }
        // D = 1, n == R: one sample per row, rows exchangeable; one signature.
        p = random_problem(6, 2, 2, 1, {1}, 1000, 600, 900, 4);
        ffd = ffd_at_smallest_rows(p);
        QCOMPARE(ffd.rows, 6);
        members = diverse_population(p, ffd, b);
        QCOMPARE(members.size(), std::size_t{5});
        const auto sig = canonical_signature(ffd, p);
        for (const auto& m : members) {
            QCOMPARE(canonical_signature(m.layout, p), sig);
            QCOMPARE(m.layout, members.front().layout);
            QVERIFY(m.score <= score_layout(ffd, p));
        }
    }

    void budgetsAndErrors() {
        const PackingProblem p = random_problem(40, 2, 4, 2, {1, 1}, 4096, 100, 2000, 8);
        const Layout ffd = ffd_at_smallest_rows(p);
        SeedingBudget b;
        b.candidates = 1; // FFD only
        b.population = 3;
        auto m = diverse_population(p, ffd, b);
        QCOMPARE(m.size(), std::size_t{3});
        for (const auto& x : m)
            QCOMPARE(x.layout, ffd);
        b.candidates = 20;
        std::atomic<bool> cancel{true}; // cancelled before any trial: still one valid member
        m = diverse_population(p, ffd, b, StopToken(&cancel));
        QCOMPARE(m.size(), std::size_t{3});
        QCOMPARE(m.front().layout, ffd);
        const Layout bad = changed(ffd, [](auto& c) { c.front().push_back(c.back().front()); });
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, diverse_population(p, bad, b));
    }
};

QTEST_GUILESS_MAIN(TestSeeding)
#include "tst_seeding.moc"
