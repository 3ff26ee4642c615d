// Synthetic GRPO-window traces (core/synth/synth.h): determinism (bytes and thread count), the routing
// invariants every importer checks (k distinct per row, per-layer sums = rows x k, dense layers 0),
// GRPO structure (shared prompt routes and lengths per group), long-tailed lengths, skewed and
// sample-correlated popularity, config validation, a frozen golden value, and a round trip through
// every writable format and the real importers.
#include "core/import/import.h"
#include "core/synth/synth.h"
#include "core/util/errors.h"
#include "tests/cli_error_of.h"
#include "tests/testutil.h"

#include <QRegularExpression>
#include <QtTest>

#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>

using namespace routepack;

Q_DECLARE_METATYPE(routepack::TraceFormat)

namespace {

/// Small config used by most tests: 4 groups x 4, 6 decoder layers (layer 0 dense), 16 experts, top-4.
SynthConfig small_config() {
    SynthConfig c;
    c.groups = 4;
    c.group_size = 4;
    c.num_hidden_layers = 6;
    c.first_dense_layers = 1;
    c.experts = 16;
    c.top_k = 4;
    c.prompt_mean = 40;
    c.response_mean = 120;
    c.max_length = 512;
    c.seed = 7;
    return c;
}

QString error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const InputError& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("no error");
}

/// a[i][l][e] computed from the per-token routes (MoE layers only), [n][L][E].
std::vector<std::uint32_t> counts_from_routes(const std::vector<SynthSample>& samples, const SynthConfig& c) {
    const int L = c.num_hidden_layers - c.first_dense_layers, E = c.experts, K = c.top_k, H = c.num_hidden_layers;
    const std::size_t stride = static_cast<std::size_t>(L) * E;
    std::vector<std::uint32_t> out(samples.size() * stride, 0);
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const SynthSample& s = samples[i];
        for (std::int64_t r = 0; r < s.length - 1; ++r)
            for (int l = 0; l < L; ++l)
                for (int q = 0; q < K; ++q) {
                    const std::int32_t e =
                        s.routes[(static_cast<std::size_t>(r) * H + c.first_dense_layers + l) * K + q];
                    if (e >= 0 && e < E) ++out[i * stride + static_cast<std::size_t>(l) * E + e];
                }
    }
    return out;
}

std::uint64_t fnv(const void* data, std::size_t n, std::uint64_t h = 0xcbf29ce484222325ULL) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/// Largest per-layer share of one expert in the aggregate load L[l][e], averaged over layers.
double mean_top_share(const Trace& t) {
    const int L = t.model.num_moe_layers(), E = t.model.experts;
    double sum = 0;
    for (int l = 0; l < L; ++l) {
        std::vector<std::uint64_t> tot(E, 0);
        for (std::size_t i = 0; i < t.size(); ++i)
            for (int e = 0; e < E; ++e)
                tot[e] += t.count(i, l, e);
        const std::uint64_t all = std::accumulate(tot.begin(), tot.end(), std::uint64_t{0});
        sum += static_cast<double>(*std::max_element(tot.begin(), tot.end())) / static_cast<double>(all);
    }
    return sum / L;
}

/// Mean total-variation distance between each sample's layer distribution and the aggregate one.
double mean_sample_tv(const Trace& t) {
    const int L = t.model.num_moe_layers(), E = t.model.experts;
    double sum = 0;
    for (int l = 0; l < L; ++l) {
        std::vector<double> agg(E, 0);
        for (std::size_t i = 0; i < t.size(); ++i)
            for (int e = 0; e < E; ++e)
                agg[e] += t.count(i, l, e);
        const double all = std::accumulate(agg.begin(), agg.end(), 0.0);
        for (std::size_t i = 0; i < t.size(); ++i) {
            double n = 0, tv = 0;
            for (int e = 0; e < E; ++e)
                n += t.count(i, l, e);
            for (int e = 0; e < E; ++e)
                tv += std::abs(t.count(i, l, e) / n - agg[e] / all);
            sum += 0.5 * tv;
        }
    }
    return sum / (L * static_cast<double>(t.size()));
}

std::map<std::string, std::string> read_folder(const std::filesystem::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        out[entry.path().filename().string()] = test::read_file(entry.path());
    return out;
}

} // namespace

class TestSynth : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void modelDescription();
    void deterministicSamples();
    void deterministicAcrossThreadCounts();
    void traceMatchesSamples();
    void routingInvariants_data();
    void routingInvariants();
    void groupsSharePrompts();
    void lengthsLongTailed();
    void popularitySkewed();
    void samplesCorrelated();
    void seedChangesOutput();
    void stepsShareTheirRouter();
    void validation_data();
    void validation();
    void golden();
    void writeDeterministic_data();
    void writeDeterministic();
    void roundTrip_data();
    void roundTrip();
    void writeRefusesUnsupportedFormat();
};

void TestSynth::modelDescription() {
    const SynthConfig c = small_config();
    const ModelDescription m = synth_model(c);
    QCOMPARE(QString::fromStdString(m.name), QStringLiteral("synthetic"));
    QCOMPARE(m.num_hidden_layers, 6);
    QCOMPARE(m.experts, 16);
    QCOMPARE(m.top_k, 4);
    QVERIFY(m.moe_layers == (std::vector<int>{1, 2, 3, 4, 5}));
    m.validate();
    const Trace t = synth_trace(c);
    QVERIFY(t.model == m);
    QCOMPARE(t.size(), std::size_t{16});
    QCOMPARE(t.counts.size(), std::size_t{16} * 5 * 16);
}

void TestSynth::deterministicSamples() {
    const SynthConfig c = small_config();
    const auto a = synth_samples(c);
    const auto b = synth_samples(c);
    QCOMPARE(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(a[i].request_id, b[i].request_id);
        QCOMPARE(a[i].group, b[i].group);
        QCOMPARE(a[i].prompt_len, b[i].prompt_len);
        QCOMPARE(a[i].length, b[i].length);
        QVERIFY(a[i].routes == b[i].routes);
    }
    QVERIFY(synth_trace(c).counts == synth_trace(c).counts);
}

void TestSynth::deterministicAcrossThreadCounts() {
    SynthConfig c = small_config();
    c.groups = 16; // enough work for the scheduler to split it
    std::vector<std::uint32_t> one, two;
    std::vector<SynthSample> s1, s2;
    {
        tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 1);
        one = synth_trace(c).counts;
        s1 = synth_samples(c);
    }
    {
        tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 2);
        two = synth_trace(c).counts;
        s2 = synth_samples(c);
    }
    QVERIFY(one == two);
    QCOMPARE(s1.size(), s2.size());
    for (std::size_t i = 0; i < s1.size(); ++i)
        QVERIFY(s1[i].routes == s2[i].routes);
    QVERIFY(one == synth_trace(c).counts); // default parallelism
}

void TestSynth::traceMatchesSamples() {
    // The counts-only path draws exactly the routes synth_samples writes.
    const SynthConfig c = small_config();
    const Trace t = synth_trace(c);
    const auto samples = synth_samples(c);
    QVERIFY(t.counts == counts_from_routes(samples, c));
    QCOMPARE(t.size(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        QCOMPARE(t.samples[i].length, samples[i].length);
        QCOMPARE(t.samples[i].routed_rows, samples[i].length - 1);
        QCOMPARE(t.samples[i].prompt_len.value_or(-1), samples[i].prompt_len);
        QCOMPARE(t.samples[i].group, samples[i].group);
        QCOMPARE(t.samples[i].request_id, samples[i].request_id);
        QVERIFY(t.samples[i].length_rule == LengthRule::RowsPlusOne);
    }
}

void TestSynth::routingInvariants_data() {
    QTest::addColumn<int>("experts");
    QTest::addColumn<int>("top_k");
    QTest::addColumn<double>("skew");
    QTest::addColumn<double>("concentration");
    QTest::newRow("rejection") << 16 << 4 << 1.1 << 0.5;
    QTest::newRow("k close to E (race)") << 8 << 6 << 1.1 << 0.5;
    QTest::newRow("k == E") << 5 << 5 << 1.0 << 0.5;
    QTest::newRow("top-1") << 16 << 1 << 1.1 << 0.5;
    QTest::newRow("head-heavy (race by mass)") << 32 << 4 << 6.0 << 2.0;
    QTest::newRow("extreme concentration") << 32 << 8 << 2.0 << 100.0;
    QTest::newRow("uniform iid") << 16 << 4 << 0.0 << 0.0;
}

void TestSynth::routingInvariants() {
    QFETCH(int, experts);
    QFETCH(int, top_k);
    QFETCH(double, skew);
    QFETCH(double, concentration);
    SynthConfig c = small_config();
    c.experts = experts;
    c.top_k = top_k;
    c.skew = skew;
    c.sample_concentration = concentration;
    const int L = 5, H = 6, E = experts, K = top_k;
    const auto samples = synth_samples(c);
    QCOMPARE(samples.size(), std::size_t{16});
    for (const SynthSample& s : samples) {
        QCOMPARE(s.routes.size(), static_cast<std::size_t>(s.length - 1) * H * K);
        for (std::int64_t r = 0; r < s.length - 1; ++r) {
            for (int q = 0; q < K; ++q)
                QCOMPARE(s.routes[static_cast<std::size_t>(r) * H * K + q], 0); // dense layer 0
            for (int l = 1; l < H; ++l) {
                const std::int32_t* ids = s.routes.data() + (static_cast<std::size_t>(r) * H + l) * K;
                std::vector<std::int32_t> row(ids, ids + K);
                for (std::int32_t e : row)
                    QVERIFY(e >= 0 && e < E);
                std::sort(row.begin(), row.end());
                QVERIFY2(std::adjacent_find(row.begin(), row.end()) == row.end(), "expert twice in one row");
            }
        }
    }
    const Trace t = synth_trace(c);
    QVERIFY(t.counts == counts_from_routes(samples, c));
    for (std::size_t i = 0; i < t.size(); ++i)
        for (int l = 0; l < L; ++l) {
            std::uint64_t sum = 0;
            for (int e = 0; e < E; ++e)
                sum += t.count(i, l, e);
            QCOMPARE(sum, static_cast<std::uint64_t>(t.samples[i].length - 1) * K);
        }
}

void TestSynth::groupsSharePrompts() {
    const SynthConfig c = small_config();
    const auto samples = synth_samples(c);
    const std::size_t row_ints = static_cast<std::size_t>(c.num_hidden_layers) * c.top_k;
    int differing_responses = 0;
    for (int g = 0; g < c.groups; ++g) {
        const SynthSample& head = samples[static_cast<std::size_t>(g) * c.group_size];
        QCOMPARE(head.group, std::to_string(g));
        QVERIFY(head.prompt_len >= 1);
        for (int j = 0; j < c.group_size; ++j) {
            const SynthSample& s = samples[static_cast<std::size_t>(g) * c.group_size + j];
            QCOMPARE(s.group, head.group);
            QCOMPARE(s.request_id, "synth-" + std::to_string(g) + "-" + std::to_string(j));
            QCOMPARE(s.prompt_len, head.prompt_len);
            QVERIFY(s.length > s.prompt_len);
            const auto n = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(s.prompt_len) * row_ints);
            QVERIFY(std::equal(s.routes.begin(), s.routes.begin() + n, head.routes.begin()));
            if (j > 0) {
                const std::size_t m = std::min(s.routes.size(), head.routes.size());
                if (!std::equal(s.routes.begin() + n, s.routes.begin() + static_cast<std::ptrdiff_t>(m),
                                head.routes.begin() + n))
                    ++differing_responses;
            }
        }
    }
    QCOMPARE(differing_responses, c.groups * (c.group_size - 1));
    // Different groups have different prompts.
    QVERIFY(samples[0].prompt_len != samples[4].prompt_len ||
            samples[0].routes[row_ints] != samples[4].routes[row_ints] ||
            samples[0].routes[row_ints + 1] != samples[4].routes[row_ints + 1]);
}

void TestSynth::lengthsLongTailed() {
    SynthConfig c = small_config();
    c.groups = 32;
    c.group_size = 8;
    c.prompt_mean = 200;
    c.response_mean = 600;
    c.max_length = 4096;
    c.experts = 8;
    c.top_k = 2;
    c.num_hidden_layers = 2;
    const Trace t = synth_trace(c);
    std::vector<std::int64_t> len;
    double sum = 0;
    for (const SampleInfo& s : t.samples) {
        QVERIFY(s.length >= 2 && s.length <= c.max_length);
        len.push_back(s.length);
        sum += static_cast<double>(s.length);
    }
    std::sort(len.begin(), len.end());
    const double median = static_cast<double>(len[len.size() / 2]);
    QVERIFY2(static_cast<double>(len.back()) / median > 2.0,
             qPrintable(QStringLiteral("max %1 median %2").arg(len.back()).arg(median)));
    QVERIFY(sum / static_cast<double>(len.size()) > median); // right skew: mean above median
    const double mean = sum / static_cast<double>(len.size());
    QVERIFY2(mean > 500 && mean < 1100, qPrintable(QString::number(mean))); // about prompt_mean + response_mean

    // A tight cap holds everywhere, with the floor of 2 (one prompt token, one response token).
    c.max_length = 2;
    for (const SampleInfo& s : synth_trace(c).samples) {
        QCOMPARE(s.length, std::int64_t{2});
        QCOMPARE(s.prompt_len.value_or(-1), std::int64_t{1});
    }
    c.max_length = 300;
    for (const SampleInfo& s : synth_trace(c).samples)
        QVERIFY(s.length >= 2 && s.length <= 300);
}

void TestSynth::popularitySkewed() {
    SynthConfig c = small_config();
    c.experts = 32;
    c.top_k = 4;
    const double skewed = mean_top_share(synth_trace(c));
    QVERIFY2(skewed > 3.0 / 32, qPrintable(QString::number(skewed)));
    c.skew = 0;
    c.sample_concentration = 0;
    const double flat = mean_top_share(synth_trace(c));
    QVERIFY2(flat < 1.5 / 32, qPrintable(QString::number(flat)));
    // Different layers have different hot experts (per-layer permutations).
    c = small_config();
    c.experts = 32;
    const Trace t = synth_trace(c);
    std::vector<int> hottest;
    for (int l = 0; l < t.model.num_moe_layers(); ++l) {
        std::vector<std::uint64_t> tot(32, 0);
        for (std::size_t i = 0; i < t.size(); ++i)
            for (int e = 0; e < 32; ++e)
                tot[e] += t.count(i, l, e);
        hottest.push_back(static_cast<int>(std::max_element(tot.begin(), tot.end()) - tot.begin()));
    }
    std::sort(hottest.begin(), hottest.end());
    QVERIFY(std::unique(hottest.begin(), hottest.end()) - hottest.begin() >= 3);
}

void TestSynth::samplesCorrelated() {
    // Per-sample tilts make samples depart from the layer's popularity; 0 makes them iid.
    SynthConfig c = small_config();
    c.response_mean = 400;
    c.sample_concentration = 0;
    const double iid = mean_sample_tv(synth_trace(c));
    c.sample_concentration = 0.5;
    const double tilted = mean_sample_tv(synth_trace(c));
    c.sample_concentration = 2.0;
    const double strong = mean_sample_tv(synth_trace(c));
    QVERIFY2(tilted > 1.5 * iid && strong > tilted,
             qPrintable(QStringLiteral("%1 %2 %3").arg(iid).arg(tilted).arg(strong)));
}

void TestSynth::seedChangesOutput() {
    SynthConfig c = small_config();
    const Trace a = synth_trace(c);
    c.seed = 8;
    const Trace b = synth_trace(c);
    QVERIFY(a.counts != b.counts);
}

void TestSynth::stepsShareTheirRouter() {
    // The steps of one run: one popularity seed, a seed each. A popularity seed equal to the seed is
    // the config without one, byte for byte; steps sharing the router differ less from each other
    // than steps of their own routers, and more the further they drift.
    SynthConfig c = small_config();
    c.experts = 32;
    c.seed = 7;
    const Trace plain = synth_trace(c);
    c.popularity_seed = 7;
    QCOMPARE(synth_trace(c).counts, plain.counts);
    auto step_distance = [&](std::optional<std::uint64_t> router, double drift) {
        // Mean over MoE layers of the total variation between two steps' expert shares.
        SynthConfig a = c, b = c;
        a.popularity_seed = b.popularity_seed = router;
        a.drift = b.drift = drift;
        a.seed = 7;
        b.seed = 8;
        const Trace ta = synth_trace(a), tb = synth_trace(b);
        const int L = ta.model.num_moe_layers(), E = ta.model.experts;
        double sum = 0;
        for (int l = 0; l < L; ++l) {
            std::vector<double> sa(E, 0), sb(E, 0);
            for (std::size_t i = 0; i < ta.size(); ++i)
                for (int e = 0; e < E; ++e)
                    sa[e] += ta.count(i, l, e);
            for (std::size_t i = 0; i < tb.size(); ++i)
                for (int e = 0; e < E; ++e)
                    sb[e] += tb.count(i, l, e);
            const double na = std::accumulate(sa.begin(), sa.end(), 0.0),
                         nb = std::accumulate(sb.begin(), sb.end(), 0.0);
            double tv = 0;
            for (int e = 0; e < E; ++e)
                tv += std::abs(sa[e] / na - sb[e] / nb);
            sum += 0.5 * tv;
        }
        return sum / L;
    };
    const double shared = step_distance(5, 0), half = step_distance(5, 0.5), own = step_distance(std::nullopt, 0);
    QVERIFY2(shared < half && half < own && 2 * shared < own,
             qPrintable(QStringLiteral("%1 %2 %3").arg(shared).arg(half).arg(own)));
}

void TestSynth::validation_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("message");
    QTest::newRow("groups") << "groups" << 0.0 << "synth: groups must be >= 1 (got 0)";
    QTest::newRow("group_size") << "group_size" << -2.0 << "synth: group_size must be >= 1 (got -2)";
    QTest::newRow("too many") << "group_size" << 5000000.0
                              << "synth: groups x group_size 40000000 exceeds 16777216 samples";
    QTest::newRow("layers") << "num_hidden_layers" << 0.0 << "synth: num_hidden_layers must be in 1..65536 (got 0)";
    QTest::newRow("dense negative") << "first_dense_layers" << -1.0
                                    << "synth: first_dense_layers must be >= 0 (got -1)";
    QTest::newRow("dense all") << "first_dense_layers" << 12.0
                               << "synth: first_dense_layers 12 leaves no MoE layer (num_hidden_layers 12)";
    QTest::newRow("experts") << "experts" << 0.0 << "synth: experts must be in 1..1048576 (got 0)";
    QTest::newRow("top_k 0") << "top_k" << 0.0 << "synth: top_k must be >= 1 (got 0)";
    QTest::newRow("top_k > E") << "top_k" << 33.0 << "synth: top_k 33 exceeds experts 32";
    QTest::newRow("prompt_mean") << "prompt_mean" << 0.0 << "synth: prompt_mean must be >= 1 (got 0)";
    QTest::newRow("response_mean") << "response_mean" << -5.0 << "synth: response_mean must be >= 1 (got -5)";
    QTest::newRow("max_length") << "max_length" << 1.0 << "synth: max_length must be >= 2 (got 1)";
    QTest::newRow("skew negative") << "skew" << -1.0 << "synth: skew must be in [0, 100] (got -1)";
    QTest::newRow("skew nan") << "skew" << std::nan("") << "synth: skew must be in [0, 100] (got nan)";
    QTest::newRow("concentration") << "sample_concentration" << -0.5
                                   << "synth: sample_concentration must be in [0, 100] (got -0.5)";
    QTest::newRow("concentration inf") << "sample_concentration" << HUGE_VAL
                                       << "synth: sample_concentration must be in [0, 100] (got inf)";
    QTest::newRow("drift") << "drift" << 1.5 << "synth: drift must be in [0, 1] (got 1.5)";
    QTest::newRow("drift alone") << "drift" << 0.25
                                 << "synth: drift 0.25 needs a popularity seed (the router it drifts from)";
}

void TestSynth::validation() {
    QFETCH(QString, field);
    QFETCH(double, value);
    QFETCH(QString, message);
    SynthConfig c; // the demo defaults: 8 x 8, 12 layers, 32 experts, top-4
    // Only the integer fields' rows convert (NaN and infinity rows are double fields: converting
    // them to int would be undefined).
    const int i = std::isfinite(value) ? static_cast<int>(value) : 0;
    if (field == QLatin1String("groups"))
        c.groups = i;
    else if (field == QLatin1String("group_size"))
        c.group_size = i;
    else if (field == QLatin1String("num_hidden_layers"))
        c.num_hidden_layers = i;
    else if (field == QLatin1String("first_dense_layers"))
        c.first_dense_layers = i;
    else if (field == QLatin1String("experts"))
        c.experts = i;
    else if (field == QLatin1String("top_k"))
        c.top_k = i;
    else if (field == QLatin1String("prompt_mean"))
        c.prompt_mean = i;
    else if (field == QLatin1String("response_mean"))
        c.response_mean = i;
    else if (field == QLatin1String("max_length"))
        c.max_length = i;
    else if (field == QLatin1String("skew"))
        c.skew = value;
    else if (field == QLatin1String("sample_concentration"))
        c.sample_concentration = value;
    else if (field == QLatin1String("drift")) {
        c.drift = value;
        if (value == 0.25)
            c.popularity_seed.reset(); // a drift from no shared router
        else
            c.popularity_seed = 3;
    } else
        QFAIL("unknown field");
    QCOMPARE(error_of([&] { synth_model(c); }), message);
    QCOMPARE(error_of([&] { synth_samples(c); }), message);
    QCOMPARE(error_of([&] { synth_trace(c); }), message);
    const auto dir = test::temp_dir(QStringLiteral("synth-invalid"));
    QCOMPARE(error_of([&] { write_synth(c, TraceFormat::VLLM, dir); }), message);
    QVERIFY(std::filesystem::is_empty(dir));
    std::filesystem::remove_all(dir);
    // The CLI's wording: each field named by its `routepack synth` flag (sample_concentration has none).
    QString flags = message;
    const std::pair<const char*, const char*> to_flag[] = {{"group_size", "--group-size"},
                                                           {"groups", "--groups"},
                                                           {"num_hidden_layers", "--layers"},
                                                           {"first_dense_layers", "--dense-layers"},
                                                           {"experts", "--experts"},
                                                           {"top_k", "--top-k"},
                                                           {"prompt_mean", "--prompt-mean"},
                                                           {"response_mean", "--response-mean"},
                                                           {"max_length", "--max-length"},
                                                           {"skew", "--skew"},
                                                           {"drift", "--drift"}};
    for (const auto& [from, to] : to_flag)
        flags.replace(QRegularExpression(QStringLiteral("\\b%1\\b").arg(QLatin1String(from))), QLatin1String(to));
    QVERIFY(flags != message || field == QLatin1String("sample_concentration"));
    QCOMPARE(QString::fromStdString(test::cli_error_of([&] { check_synth_config(c); })), flags);
    QCOMPARE(error_of([&] { check_synth_config(c); }), message);
}

void TestSynth::golden() {
    // Frozen output of the generator. A change here means every synthetic trace (the embedded
    // demo, benchmarks, stored examples) changes: update the values only on purpose.
    const SynthConfig c = small_config();
    const Trace t = synth_trace(c);
    std::uint64_t lengths = 0xcbf29ce484222325ULL;
    for (const SampleInfo& s : t.samples)
        lengths = fnv(&s.length, sizeof s.length, lengths);
    const std::uint64_t counts = fnv(t.counts.data(), t.counts.size() * sizeof(std::uint32_t));
    QCOMPARE(QString::number(lengths, 16), QStringLiteral("8d0fe8bfd0921209"));
    QCOMPARE(QString::number(counts, 16), QStringLiteral("5ba575d163ee0e27"));
    std::uint64_t routes = 0xcbf29ce484222325ULL;
    for (const SynthSample& s : synth_samples(c))
        routes = fnv(s.routes.data(), s.routes.size() * sizeof(std::int32_t), routes);
    QCOMPARE(QString::number(routes, 16), QStringLiteral("a174c4bf44f9cdac"));
    // The demo defaults, counts only.
    const Trace demo = synth_trace(SynthConfig{});
    QCOMPARE(demo.size(), std::size_t{64});
    QCOMPARE(QString::number(fnv(demo.counts.data(), demo.counts.size() * sizeof(std::uint32_t)), 16),
             QStringLiteral("705bfddd2085fee5"));
}

void TestSynth::writeDeterministic_data() {
    QTest::addColumn<TraceFormat>("format");
    QTest::addColumn<QStringList>("files");
    QTest::newRow("vllm") << TraceFormat::VLLM
                          << QStringList{"group_0.json", "group_1.json", "group_2.json", "group_3.json"};
    QTest::newRow("sglang") << TraceFormat::SGLang << QStringList{"synth.jsonl"};
    QTest::newRow("npz") << TraceFormat::Npz << QStringList{"synth.npz"};
    QTest::newRow("nested") << TraceFormat::NestedJson << QStringList{"synth.jsonl"};
    QTest::newRow("nemo") << TraceFormat::NemoRL << QStringList{"synth.nrlre1"};
    QStringList npy;
    for (int i = 0; i < 16; ++i)
        npy << QStringLiteral("sample_%1.npy").arg(i);
    QTest::newRow("npy") << TraceFormat::Npy << npy;
}

void TestSynth::writeDeterministic() {
    QFETCH(TraceFormat, format);
    QFETCH(QStringList, files);
    const SynthConfig c = small_config();
    const auto a = test::temp_dir(QStringLiteral("synth-a"));
    const auto b = test::temp_dir(QStringLiteral("synth-b"));
    const auto written = write_synth(c, format, a);
    QCOMPARE(static_cast<qsizetype>(written.size()), files.size());
    for (qsizetype k = 0; k < files.size(); ++k) {
        QCOMPARE(QString::fromStdString(written[static_cast<std::size_t>(k)].filename().string()), files[k]);
        QCOMPARE(written[static_cast<std::size_t>(k)].parent_path(), a);
    }
    if (format == TraceFormat::Npz) QTest::qSleep(1100); // a later second: no zip timestamps in the bytes
    write_synth(c, format, b);
    const auto fa = read_folder(a), fb = read_folder(b);
    QCOMPARE(fa.size(), static_cast<std::size_t>(files.size())); // no temporaries left behind
    QVERIFY(fa == fb);
    for (const auto& [name, bytes] : fa)
        QVERIFY2(!bytes.empty(), name.c_str());
    // Overwriting in place gives the same bytes again.
    write_synth(c, format, a);
    QVERIFY(read_folder(a) == fb);
    std::filesystem::remove_all(a);
    std::filesystem::remove_all(b);
}

void TestSynth::roundTrip_data() {
    QTest::addColumn<TraceFormat>("format");
    QTest::addColumn<bool>("auto_detect");
    QTest::addColumn<bool>("explicit_prompt"); // the format carries prompt_tokens
    QTest::newRow("vllm") << TraceFormat::VLLM << false << true;
    QTest::newRow("vllm auto") << TraceFormat::VLLM << true << true;
    QTest::newRow("sglang") << TraceFormat::SGLang << false << true;
    QTest::newRow("sglang auto") << TraceFormat::SGLang << true << true;
    QTest::newRow("npz") << TraceFormat::Npz << false << false;
    QTest::newRow("npz auto") << TraceFormat::Npz << true << false;
    QTest::newRow("npy") << TraceFormat::Npy << false << false;
    QTest::newRow("nested") << TraceFormat::NestedJson << false << false;
    QTest::newRow("nemo") << TraceFormat::NemoRL << false << false;
    QTest::newRow("nemo auto") << TraceFormat::NemoRL << true << false;
}

void TestSynth::roundTrip() {
    QFETCH(TraceFormat, format);
    QFETCH(bool, auto_detect);
    QFETCH(bool, explicit_prompt);
    SynthConfig c = small_config();
    c.experts = 40; // ids above 31 exercise the int16 wire forms
    c.top_k = 6;
    const auto samples = synth_samples(c);
    const Trace expected = synth_trace(c);
    QVERIFY(expected.counts == counts_from_routes(samples, c));

    const auto dir = test::temp_dir(QStringLiteral("synth-roundtrip"));
    write_synth(c, format, dir);
    ImportOptions opt;
    opt.format = auto_detect ? TraceFormat::Auto : format;
    opt.model = synth_model(c);
    ImportSummary summary;
    const Trace got = import_trace_to_memory({dir}, opt, &summary);
    QCOMPARE(summary.format, format);
    QCOMPARE(summary.samples, samples.size());
    QCOMPARE(summary.missing_routes, std::int64_t{0});
    QVERIFY(got.model == opt.model);
    QCOMPARE(got.size(), samples.size());
    QVERIFY(got.counts == expected.counts);
    for (std::size_t i = 0; i < samples.size(); ++i) {
        QCOMPARE(got.samples[i].length, samples[i].length);
        QCOMPARE(got.samples[i].routed_rows, samples[i].length - 1);
        if (explicit_prompt) QCOMPARE(got.samples[i].prompt_len.value_or(-1), samples[i].prompt_len);
    }
    if (format == TraceFormat::SGLang)
        for (std::size_t i = 0; i < samples.size(); ++i) {
            QCOMPARE(got.samples[i].group, samples[i].group);
            QCOMPARE(got.samples[i].request_id, samples[i].request_id);
        }
    if (format == TraceFormat::VLLM) // the choices of one response form one group
        for (std::size_t i = 0; i < samples.size(); ++i)
            QCOMPARE(got.samples[i].group, "synth-group-" + samples[i].group);
    std::filesystem::remove_all(dir);
}

void TestSynth::writeRefusesUnsupportedFormat() {
    const auto dir = test::temp_dir(QStringLiteral("synth-unsupported"));
    for (TraceFormat f : {TraceFormat::StepJson, TraceFormat::PromptCsv, TraceFormat::Aggregate}) {
        const QString msg = error_of([&] { write_synth(small_config(), f, dir); });
        QVERIFY2(msg.startsWith(QStringLiteral("synth: cannot write format ") + QString::fromLatin1(to_string(f))),
                 qPrintable(msg));
    }
    QVERIFY(std::filesystem::is_empty(dir));
    // Auto means the demo's default, vLLM.
    const auto written = write_synth(small_config(), TraceFormat::Auto, dir);
    QCOMPARE(written.size(), std::size_t{4});
    QCOMPARE(QString::fromStdString(written[0].filename().string()), QStringLiteral("group_0.json"));
    std::filesystem::remove_all(dir);
}

QTEST_GUILESS_MAIN(TestSynth)
#include "tst_synth.moc"
