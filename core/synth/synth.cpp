// Deterministic synthetic GRPO-window traces (see synth.h).
//
// Generative model, per MoE layer l (index among MoE layers), group g and sample i = g * group_size + j:
//   popularity  base_l[perm_l[r]] = (r + 1)^-skew / Z          (Zipf over a per-layer random permutation,
//               drawn from popularity_seed; with drift D: base^(1-D) x own^D / Z, own drawn from seed)
//   group tilt  G[g][l][e] ~ Gamma(1/c) / (1/c)                (mean 1, variance c = sample_concentration)
//   sample tilt S[i][l][e] ~ Gamma(1/c) / (1/c)
//   prompt rows   (shared by the whole group):  w ~ base_l[e] * G[g][l][e]
//   response rows (sample i):                   w ~ base_l[e] * ((1 - lambda) S[i][l][e] + lambda G[g][l][e])
// Every routed row picks top_k distinct experts by sequential sampling without replacement from w
// (Plackett-Luce): alias draws with rejection of duplicates, or the exact exponential race
// (Gumbel-top-k) when duplicates would be frequent. Both give the same distribution.
// Lengths: prompt p_g log-normal (one per group), response r_i log-normal with a per-group factor
// (long tail), t_i = p_g + r_i capped at max_length; routed rows = t_i - 1 (p_g prompt rows, then
// r_i - 1 response rows: the last sampled token is never forwarded).
//
// Every random quantity comes from its own xoshiro256** stream seeded by (config seed, purpose,
// indices) through splitmix64, so results do not depend on thread count or scheduling.
#include "core/synth/synth.h"
#include "core/util/seeds.h"

#include "core/util/rng.h"

#include "core/import/npy.h"
#include "core/util/errors.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <zip.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

namespace routepack {

namespace {

// ---------------------------------------------------------------------------------------------
// Random numbers: splitmix64 (seeding), xoshiro256** (streams), own transforms.
constexpr double kTwoPi = 6.283185307179586476925286766559;

/// The project's xoshiro256** stream (core/util/rng.h) with the transforms the generator needs. A
/// Box-Muller spare is cached.
class SynthRng : public Rng {
public:
    explicit SynthRng(std::uint64_t seed) : Rng(seed) {}
    /// Uniform in (0, 1): never 0, safe for log.
    double uniform_open() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
    /// Standard normal by Box-Muller (both values used, the second cached).
    double normal() {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        const double u1 = uniform_open();
        const double u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(u1));
        const double theta = kTwoPi * u2;
        spare_ = r * std::sin(theta);
        has_spare_ = true;
        return r * std::cos(theta);
    }
    /// Gamma(shape a, scale 1) by Marsaglia-Tsang; a < 1 by the boost Gamma(a+1) * U^(1/a).
    double gamma(double a) {
        if (a < 1.0) {
            const double g = gamma(a + 1.0);
            return g * std::pow(uniform_open(), 1.0 / a);
        }
        const double d = a - 1.0 / 3.0;
        const double c = 1.0 / std::sqrt(9.0 * d);
        for (;;) {
            double x, v;
            do {
                x = normal();
                v = 1.0 + c * x;
            } while (v <= 0.0);
            v = v * v * v;
            const double u = uniform_open();
            const double x2 = x * x;
            if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
            if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v;
        }
    }

private:
    bool has_spare_ = false;
    double spare_ = 0.0;
};

/// Stream purposes (arbitrary distinct constants).
enum class Purpose : std::uint64_t {
    LayerPermutation = 0x5045524d55544531ULL,
    GroupLength = 0x47524f55504c454eULL,
    SampleLength = 0x53414d504c454e31ULL,
    GroupRouting = 0x47524f5550524f55ULL,
    SampleRouting = 0x53414d50524f5554ULL,
};

/// Independent stream for (seed, purpose, a, b).
SynthRng stream(std::uint64_t seed, Purpose purpose, std::uint64_t a, std::uint64_t b = 0) {
    return SynthRng(seeds::synth_stream(seed, static_cast<std::uint64_t>(purpose), a, b));
}

// ---------------------------------------------------------------------------------------------
// Generator constants (part of the output: changing one changes the golden values).

constexpr double kPromptSigma = 0.5;        ///< log-normal sigma of prompt lengths
constexpr double kGroupLengthSigma = 0.35;  ///< per-group log factor of response lengths
constexpr double kSampleLengthSigma = 0.9;  ///< per-sample log sigma of response lengths
constexpr double kGroupResponseMix = 0.25;  ///< lambda: weight of the group tilt in response routing
constexpr double kWeightFloor = 1e-300;     ///< keeps every expert drawable by the exact race
constexpr double kRejectionMassLimit = 0.9; ///< top-(k-1) mass above which the race is used

std::string fmt_double(double v) {
    std::ostringstream ss;
    ss << v;
    return ss.str();
}

/// A SynthConfig field as a Setting: its key and the library's words are the field's name; with a
/// value, the message quotes it after the name ("top_k 9").
Setting field(const char* key, const std::string& value = {}) {
    return Setting{key, value, value.empty() ? std::string(key) : key + (" " + value)};
}

void validate(const SynthConfig& c) {
    auto fail = [](const char* key, const std::string& after) { throw InputError("synth: ", field(key), after); };
    if (c.groups < 1) fail("groups", " must be >= 1 (got " + std::to_string(c.groups) + ")");
    if (c.group_size < 1) fail("group_size", " must be >= 1 (got " + std::to_string(c.group_size) + ")");
    constexpr std::int64_t kMaxSamples = std::int64_t{1} << 24;
    const std::int64_t n = std::int64_t{c.groups} * c.group_size;
    if (n > kMaxSamples)
        throw InputError("synth: ", {{field("groups"), " x "},
                                     {field("group_size"), " " + std::to_string(n) + " exceeds " +
                                                               std::to_string(kMaxSamples) + " samples"}});
    if (c.num_hidden_layers < 1 || c.num_hidden_layers > 65536)
        fail("num_hidden_layers", " must be in 1..65536 (got " + std::to_string(c.num_hidden_layers) + ")");
    if (c.first_dense_layers < 0)
        fail("first_dense_layers", " must be >= 0 (got " + std::to_string(c.first_dense_layers) + ")");
    if (c.first_dense_layers >= c.num_hidden_layers)
        throw InputError("synth: ",
                         {{field("first_dense_layers", std::to_string(c.first_dense_layers)), " leaves no MoE layer ("},
                          {field("num_hidden_layers", std::to_string(c.num_hidden_layers)), ")"}});
    if (c.experts < 1 || c.experts > (1 << 20))
        fail("experts", " must be in 1..1048576 (got " + std::to_string(c.experts) + ")");
    if (c.top_k < 1) fail("top_k", " must be >= 1 (got " + std::to_string(c.top_k) + ")");
    if (c.top_k > c.experts)
        throw InputError("synth: ", {{field("top_k", std::to_string(c.top_k)), " exceeds "},
                                     {field("experts", std::to_string(c.experts)), ""}});
    if (c.prompt_mean < 1) fail("prompt_mean", " must be >= 1 (got " + std::to_string(c.prompt_mean) + ")");
    if (c.response_mean < 1) fail("response_mean", " must be >= 1 (got " + std::to_string(c.response_mean) + ")");
    if (c.max_length < 2) fail("max_length", " must be >= 2 (got " + std::to_string(c.max_length) + ")");
    if (!std::isfinite(c.skew) || c.skew < 0.0 || c.skew > 100.0)
        fail("skew", " must be in [0, 100] (got " + fmt_double(c.skew) + ")");
    if (!std::isfinite(c.sample_concentration) || c.sample_concentration < 0.0 || c.sample_concentration > 100.0)
        fail("sample_concentration", " must be in [0, 100] (got " + fmt_double(c.sample_concentration) + ")");
    if (!std::isfinite(c.drift) || c.drift < 0.0 || c.drift > 1.0)
        fail("drift", " must be in [0, 1] (got " + fmt_double(c.drift) + ")");
    if (c.drift > 0.0 && !c.popularity_seed)
        fail("drift", " " + fmt_double(c.drift) + " needs a popularity seed (the router it drifts from)");
}

} // namespace

void check_synth_config(const SynthConfig& c) {
    validate(c);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Lengths.

struct Lengths {
    std::vector<std::int64_t> prompt;   ///< [groups]
    std::vector<std::int64_t> response; ///< [samples]
};

std::int64_t round_clamp(double x, std::int64_t lo, std::int64_t hi) {
    if (!(x >= static_cast<double>(lo))) return lo; // also NaN
    if (x >= static_cast<double>(hi)) return hi;
    return std::min(hi, std::max(lo, static_cast<std::int64_t>(std::floor(x + 0.5))));
}

Lengths make_lengths(const SynthConfig& c) {
    Lengths out;
    out.prompt.resize(static_cast<std::size_t>(c.groups));
    out.response.resize(static_cast<std::size_t>(c.groups) * c.group_size);
    const double mu_p = std::log(static_cast<double>(c.prompt_mean)) - 0.5 * kPromptSigma * kPromptSigma;
    const double var_r = kGroupLengthSigma * kGroupLengthSigma + kSampleLengthSigma * kSampleLengthSigma;
    const double mu_r = std::log(static_cast<double>(c.response_mean)) - 0.5 * var_r;
    for (int g = 0; g < c.groups; ++g) {
        SynthRng rg = stream(c.seed, Purpose::GroupLength, static_cast<std::uint64_t>(g));
        const std::int64_t p = round_clamp(std::exp(mu_p + kPromptSigma * rg.normal()), 1, c.max_length - 1);
        const double group_factor = kGroupLengthSigma * rg.normal();
        out.prompt[g] = p;
        for (int j = 0; j < c.group_size; ++j) {
            const std::size_t i = static_cast<std::size_t>(g) * c.group_size + j;
            SynthRng rs = stream(c.seed, Purpose::SampleLength, i);
            const double x = std::exp(mu_r + group_factor + kSampleLengthSigma * rs.normal());
            out.response[i] = round_clamp(x, 1, c.max_length - p);
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Popularity and tilts.

/// base[l][e] for every MoE layer of the router drawn from `seed`, normalized per layer.
std::vector<double> router_popularity(const SynthConfig& c, std::uint64_t seed, int moe_layers) {
    const int E = c.experts;
    std::vector<double> base(static_cast<std::size_t>(moe_layers) * E);
    std::vector<int> perm(E);
    for (int l = 0; l < moe_layers; ++l) {
        SynthRng r = stream(seed, Purpose::LayerPermutation, static_cast<std::uint64_t>(l));
        for (int e = 0; e < E; ++e)
            perm[e] = e;
        for (int e = E - 1; e > 0; --e) { // Fisher-Yates with multiply-shift bounded draws
            const auto j = static_cast<int>(((r.next() >> 32) * static_cast<std::uint64_t>(e + 1)) >> 32);
            std::swap(perm[e], perm[j]);
        }
        double* b = base.data() + static_cast<std::size_t>(l) * E;
        double sum = 0;
        for (int rank = 0; rank < E; ++rank) {
            const double w = std::pow(static_cast<double>(rank + 1), -c.skew);
            b[perm[rank]] = w;
            sum += w;
        }
        for (int e = 0; e < E; ++e)
            b[e] /= sum;
    }
    return base;
}

/// base[l][e] of the config: the router of popularity_seed (or seed), drifted toward seed's own by
/// `drift` (geometric mix per expert, normalized per layer).
std::vector<double> layer_popularity(const SynthConfig& c, int moe_layers) {
    std::vector<double> base = router_popularity(c, c.popularity_seed.value_or(c.seed), moe_layers);
    if (!(c.drift > 0.0)) return base;
    const std::vector<double> own = router_popularity(c, c.seed, moe_layers);
    const int E = c.experts;
    for (int l = 0; l < moe_layers; ++l) {
        double* b = base.data() + static_cast<std::size_t>(l) * E;
        const double* o = own.data() + static_cast<std::size_t>(l) * E;
        double sum = 0;
        for (int e = 0; e < E; ++e) {
            b[e] = std::pow(b[e], 1.0 - c.drift) * std::pow(o[e], c.drift);
            sum += b[e];
        }
        for (int e = 0; e < E; ++e)
            b[e] /= sum;
    }
    return base;
}

/// Mean-1 gamma tilt with variance `conc` (1 exactly when conc == 0).
inline double tilt(SynthRng& r, double conc) {
    if (conc <= 0.0) return 1.0;
    const double shape = 1.0 / conc;
    return r.gamma(shape) / shape;
}

// ---------------------------------------------------------------------------------------------
// Top-k sampling without replacement.

struct AliasCell {
    std::uint32_t threshold; ///< accept the column when the low 32 random bits are below it
    std::int32_t alias;
};

/// Per-thread scratch for one (sample or group, layer) routing pass.
struct Scratch {
    explicit Scratch(int E) : weights(E), table(E), marks(E, 0), small(E), large(E), keys(E) {}
    std::vector<double> weights; ///< normalized, all > 0
    std::vector<AliasCell> table;
    std::vector<std::uint32_t> marks;
    std::uint32_t stamp = 0;
    std::vector<int> small, large;
    std::vector<std::pair<double, int>> keys;
    std::vector<double> sorted;
    bool use_race = false;

    std::uint32_t next_stamp() {
        if (++stamp == 0) {
            std::fill(marks.begin(), marks.end(), 0u);
            stamp = 1;
        }
        return stamp;
    }
};

/// Normalizes weights (floored), builds the Vose alias table and decides rejection vs race.
void prepare_sampler(Scratch& s, int k) {
    const int E = static_cast<int>(s.weights.size());
    double sum = 0;
    for (double& w : s.weights) {
        w = std::max(w, kWeightFloor);
        sum += w;
    }
    double wmax = 0;
    for (double& w : s.weights) {
        w /= sum;
        wmax = std::max(wmax, w);
    }
    // Rejection of duplicates costs 1 / (1 - mass already taken) draws per pick; bound that mass by
    // the top-(k-1) weights and use the exact race when it is large or k is close to E.
    s.use_race = 2 * k > E;
    if (!s.use_race && k > 1 && (k - 1) * wmax > kRejectionMassLimit) {
        s.sorted.assign(s.weights.begin(), s.weights.end());
        std::partial_sort(s.sorted.begin(), s.sorted.begin() + (k - 1), s.sorted.end(), std::greater<>());
        double top = 0;
        for (int q = 0; q < k - 1; ++q)
            top += s.sorted[q];
        s.use_race = top > kRejectionMassLimit;
    }
    if (s.use_race) return;
    // Vose's alias method on q_e = w_e * E.
    int ns = 0, nl = 0;
    std::vector<double>& q = s.sorted;
    q.resize(E);
    for (int e = 0; e < E; ++e) {
        q[e] = s.weights[e] * E;
        if (q[e] < 1.0)
            s.small[ns++] = e;
        else
            s.large[nl++] = e;
    }
    auto threshold_of = [](double p) -> std::uint32_t {
        const double t = std::floor(p * 4294967296.0);
        if (t <= 0) return 0;
        if (t >= 4294967295.0) return 0xffffffffu;
        return static_cast<std::uint32_t>(t);
    };
    while (ns > 0 && nl > 0) {
        const int a = s.small[--ns];
        const int b = s.large[nl - 1];
        s.table[a] = {threshold_of(q[a]), b};
        q[b] = (q[b] + q[a]) - 1.0;
        if (q[b] < 1.0) {
            --nl;
            s.small[ns++] = b;
        }
    }
    // Leftovers (probability 1 up to rounding): always themselves.
    while (nl > 0) {
        const int b = s.large[--nl];
        s.table[b] = {0xffffffffu, b};
    }
    while (ns > 0) {
        const int a = s.small[--ns];
        s.table[a] = {0xffffffffu, a};
    }
}

/// Picks `need` further distinct experts (not marked with `stamp`) by the exponential race
/// (Gumbel-top-k): the `need` smallest -log(U_e) / w_e, in increasing order. Exact sequential
/// sampling without replacement.
void race_pick(SynthRng& rng, Scratch& s, std::uint32_t stamp, int need, std::int32_t* dst) {
    const int E = static_cast<int>(s.weights.size());
    int m = 0;
    for (int e = 0; e < E; ++e) {
        if (s.marks[e] == stamp) continue;
        s.keys[m++] = {-std::log(rng.uniform_open()) / s.weights[e], e};
    }
    auto first = s.keys.begin(), last = s.keys.begin() + m;
    std::partial_sort(first, first + need, last); // (key, expert) pairs: a strict total order
    for (int q = 0; q < need; ++q) {
        dst[q] = s.keys[q].second;
        s.marks[dst[q]] = stamp;
    }
}

/// Routes `tokens` rows: each gets k distinct experts written to dst_rows + t * stride (when
/// dst_rows is non-null) and counted into counts[E].
void route_rows(SynthRng& rng_ref, Scratch& s, int k, std::int64_t tokens, std::int32_t* dst_rows, std::size_t stride,
                std::uint32_t* counts) {
    const auto E = static_cast<std::uint64_t>(s.weights.size());
    std::int32_t tmp_row[64];
    std::vector<std::int32_t> tmp_big;
    if (!dst_rows && k > 64) tmp_big.resize(k);
    const AliasCell* const table = s.table.data();
    std::uint32_t* const marks = s.marks.data();
    const int attempt_limit = 64 * k + 256;
    // The draws use a splitmix64 sequence seeded from the (sample or group, layer) stream: one
    // addition of state per draw, the mixing is off the loop-carried path.
    std::uint64_t sm = rng_ref.next();
    for (std::int64_t t = 0; t < tokens; ++t) {
        std::int32_t* const dst =
            dst_rows ? dst_rows + static_cast<std::size_t>(t) * stride : (k > 64 ? tmp_big.data() : tmp_row);
        const std::uint32_t stamp = s.next_stamp();
        int got = 0;
        if (!s.use_race) {
            for (int attempts = 0; got < k && attempts < attempt_limit; ++attempts) {
                const std::uint64_t r = splitmix64(sm);
                const auto col = static_cast<std::uint32_t>(((r >> 32) * E) >> 32);
                const AliasCell cell = table[col];
                // Branch-free: both the alias choice and the duplicate test are unpredictable.
                const std::uint32_t keep =
                    0u - static_cast<std::uint32_t>(static_cast<std::uint32_t>(r) < cell.threshold);
                const std::uint32_t alias = static_cast<std::uint32_t>(cell.alias);
                const std::uint32_t e = alias ^ ((alias ^ col) & keep);
                const int fresh = marks[e] != stamp;
                marks[e] = stamp;
                dst[got] = static_cast<std::int32_t>(e); // overwritten next time when a duplicate
                got += fresh;
            }
        }
        if (got < k) race_pick(rng_ref, s, stamp, k - got, dst + got);
        for (int q = 0; q < k; ++q) {
            // dst[0, k) is written: the draw loop writes dst[got] before got grows by 0 or 1, race_pick
            // the rest. The analyzer does not bound `fresh` to 0..1, so it lets got jump past unwritten
            // entries. NOLINTNEXTLINE(clang-analyzer-core.uninitialized.ArraySubscript)
            ++counts[dst[q]];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The two generation passes shared by synth_samples and synth_trace.

struct Plan {
    SynthConfig c;
    int L = 0; ///< MoE layers
    int E = 0, K = 0, H = 0;
    std::int64_t n = 0;
    Lengths lengths;
    std::vector<double> base;      ///< [L][E]
    std::vector<float> group_tilt; ///< [groups][L][E]

    std::int64_t prompt_len(std::int64_t i) const { return lengths.prompt[i / c.group_size]; }
    std::int64_t length(std::int64_t i) const { return prompt_len(i) + lengths.response[i]; }
};

Plan make_plan(const SynthConfig& c) {
    validate(c);
    Plan p;
    p.c = c;
    p.L = c.num_hidden_layers - c.first_dense_layers;
    p.E = c.experts;
    p.K = c.top_k;
    p.H = c.num_hidden_layers;
    p.n = std::int64_t{c.groups} * c.group_size;
    p.lengths = make_lengths(c);
    p.base = layer_popularity(c, p.L);
    p.group_tilt.resize(static_cast<std::size_t>(c.groups) * p.L * p.E);
    return p;
}

/// Pass 1, one group: draws the group tilts (stored in plan.group_tilt) and routes the prompt rows
/// of every MoE layer; `routes` (rows [p][H][K], may be null) and/or `counts` ([L][E], may be null).
void group_pass(Plan& plan, int g, Scratch& s, std::int32_t* routes, std::uint32_t* counts) {
    const int E = plan.E, K = plan.K, L = plan.L;
    const std::int64_t p = plan.lengths.prompt[g];
    std::vector<std::uint32_t> local;
    if (!counts) {
        local.assign(static_cast<std::size_t>(E), 0);
    }
    for (int l = 0; l < L; ++l) {
        SynthRng rng =
            stream(plan.c.seed, Purpose::GroupRouting, static_cast<std::uint64_t>(g), static_cast<std::uint64_t>(l));
        float* tilt_row = plan.group_tilt.data() + (static_cast<std::size_t>(g) * L + l) * E;
        const double* base = plan.base.data() + static_cast<std::size_t>(l) * E;
        for (int e = 0; e < E; ++e) {
            tilt_row[e] = static_cast<float>(tilt(rng, plan.c.sample_concentration));
            s.weights[e] = base[e] * static_cast<double>(tilt_row[e]);
        }
        prepare_sampler(s, K);
        const int abs_layer = plan.c.first_dense_layers + l;
        std::int32_t* dst = routes ? routes + static_cast<std::size_t>(abs_layer) * K : nullptr;
        std::uint32_t* cnt = counts ? counts + static_cast<std::size_t>(l) * E : local.data();
        if (!counts) std::fill(local.begin(), local.end(), 0u);
        route_rows(rng, s, K, p, dst, static_cast<std::size_t>(plan.H) * K, cnt);
    }
}

/// Pass 2, one sample: routes the response rows (r_i - 1 of them) of every MoE layer.
/// `routes` points at the sample's first response row ([r_i - 1][H][K]) or is null; counts [L][E]
/// (accumulated into) or null.
void sample_pass(const Plan& plan, std::int64_t i, Scratch& s, std::int32_t* routes, std::uint32_t* counts) {
    const int E = plan.E, K = plan.K, L = plan.L;
    const std::int64_t g = i / plan.c.group_size;
    const std::int64_t rows = plan.lengths.response[i] - 1;
    if (rows <= 0) return; // every (sample, layer) has its own stream: skipping draws nothing else
    std::vector<std::uint32_t> local;
    if (!counts) local.assign(static_cast<std::size_t>(E), 0);
    const double lambda = kGroupResponseMix;
    for (int l = 0; l < L; ++l) {
        SynthRng rng =
            stream(plan.c.seed, Purpose::SampleRouting, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(l));
        const float* gt = plan.group_tilt.data() + (static_cast<std::size_t>(g) * L + l) * E;
        const double* base = plan.base.data() + static_cast<std::size_t>(l) * E;
        for (int e = 0; e < E; ++e) {
            const double st = tilt(rng, plan.c.sample_concentration);
            s.weights[e] = base[e] * ((1.0 - lambda) * st + lambda * static_cast<double>(gt[e]));
        }
        prepare_sampler(s, K);
        const int abs_layer = plan.c.first_dense_layers + l;
        std::int32_t* dst = routes ? routes + static_cast<std::size_t>(abs_layer) * K : nullptr;
        std::uint32_t* cnt = counts ? counts + static_cast<std::size_t>(l) * E : local.data();
        route_rows(rng, s, K, rows, dst, static_cast<std::size_t>(plan.H) * K, cnt);
    }
}

std::string group_name(std::int64_t g) {
    return std::to_string(g);
}
std::string request_id_of(std::int64_t g, std::int64_t j) {
    return "synth-" + std::to_string(g) + "-" + std::to_string(j);
}

// ---------------------------------------------------------------------------------------------
// Writers.

/// Files written to "<dir>/.<name>.tmp" first and renamed into place together at the end; on
/// failure every temporary is removed and no final file is touched.
class AtomicFiles {
public:
    explicit AtomicFiles(std::filesystem::path dir) : dir_(std::move(dir)) {}
    ~AtomicFiles() {
        if (committed_) return;
        std::error_code ec;
        for (const auto& [tmp, fin] : files_)
            std::filesystem::remove(tmp, ec);
    }
    AtomicFiles(const AtomicFiles&) = delete;
    AtomicFiles& operator=(const AtomicFiles&) = delete;

    /// Reserves a temporary path for final file `name`.
    std::filesystem::path reserve(const std::string& name) {
        files_.emplace_back(dir_ / ("." + name + ".tmp"), dir_ / name);
        return files_.back().first;
    }
    void write(const std::string& name, const std::string& bytes) {
        const auto tmp = reserve(name);
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw InputError("synth: cannot write " + tmp.string());
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out) throw InputError("synth: cannot write " + tmp.string());
    }
    std::vector<std::filesystem::path> commit() {
        std::vector<std::filesystem::path> out;
        for (const auto& [tmp, fin] : files_) {
            std::error_code ec;
            std::filesystem::rename(tmp, fin, ec);
            if (ec)
                throw InputError("synth: cannot rename " + tmp.string() + " to " + fin.string() + ": " + ec.message());
            out.push_back(fin);
        }
        committed_ = true;
        return out;
    }

private:
    std::filesystem::path dir_;
    std::vector<std::pair<std::filesystem::path, std::filesystem::path>> files_;
    bool committed_ = false;
};

/// Routes of the MoE layers only: [rows][L][K].
std::vector<std::int32_t> moe_only(const SynthSample& s, const Plan& p) {
    const std::int64_t rows = s.length - 1;
    std::vector<std::int32_t> out(static_cast<std::size_t>(rows) * p.L * p.K);
    for (std::int64_t r = 0; r < rows; ++r)
        for (int l = 0; l < p.L; ++l) {
            const std::int32_t* src =
                s.routes.data() + (static_cast<std::size_t>(r) * p.H + p.c.first_dense_layers + l) * p.K;
            std::copy(src, src + p.K, out.data() + (static_cast<std::size_t>(r) * p.L + l) * p.K);
        }
    return out;
}

std::string le_bytes_int32(const std::vector<std::int32_t>& v) {
    std::string out(v.size() * 4, '\0');
    for (std::size_t q = 0; q < v.size(); ++q) {
        const auto u = static_cast<std::uint32_t>(v[q]);
        out[4 * q + 0] = static_cast<char>(u & 0xff);
        out[4 * q + 1] = static_cast<char>((u >> 8) & 0xff);
        out[4 * q + 2] = static_cast<char>((u >> 16) & 0xff);
        out[4 * q + 3] = static_cast<char>((u >> 24) & 0xff);
    }
    return out;
}

std::string le_bytes_int16(const std::vector<std::int32_t>& v) {
    std::string out(v.size() * 2, '\0');
    for (std::size_t q = 0; q < v.size(); ++q) {
        const auto u = static_cast<std::uint16_t>(v[q]);
        out[2 * q + 0] = static_cast<char>(u & 0xff);
        out[2 * q + 1] = static_cast<char>((u >> 8) & 0xff);
    }
    return out;
}

std::string npy_descr(int experts) {
    return experts <= 32767 ? "<i2" : "<i4";
}

std::string sample_npy(const SynthSample& s, const Plan& p) {
    return detail::encode_npy({s.length - 1, p.H, p.K}, s.routes, npy_descr(p.E));
}

void write_zip(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::string>>& entries) {
    int err = 0;
    zip_t* za = zip_open(path.string().c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    if (!za) throw InputError("synth: cannot create " + path.string() + " (libzip error " + std::to_string(err) + ")");
    auto fail = [&](const std::string& what) {
        const std::string msg = "synth: " + what + " in " + path.string() + ": " + zip_strerror(za);
        zip_discard(za);
        throw InputError(msg);
    };
    for (const auto& [name, bytes] : entries) {
        zip_source_t* src = zip_source_buffer(za, bytes.data(), bytes.size(), 0);
        if (!src) fail("cannot add " + name);
        const zip_int64_t idx = zip_file_add(za, name.c_str(), src, ZIP_FL_ENC_UTF_8);
        if (idx < 0) {
            zip_source_free(src);
            fail("cannot add " + name);
        }
        // Stored entries with a fixed DOS time (1980-01-01 00:00): same config => same bytes.
        if (zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0) != 0 ||
            zip_file_set_dostime(za, static_cast<zip_uint64_t>(idx), 0, (1 << 5) | 1, 0) != 0)
            fail("cannot set attributes of " + name);
    }
    if (zip_close(za) != 0) fail("cannot write");
}

} // namespace

// ---------------------------------------------------------------------------------------------

ModelDescription synth_model(const SynthConfig& c) {
    validate(c);
    ModelDescription m;
    m.name = "synthetic";
    m.num_hidden_layers = c.num_hidden_layers;
    m.experts = c.experts;
    m.top_k = c.top_k;
    for (int l = c.first_dense_layers; l < c.num_hidden_layers; ++l)
        m.moe_layers.push_back(l);
    m.source = "synth (seed " + std::to_string(c.seed) + ")";
    return m;
}

std::vector<SynthSample> synth_samples(const SynthConfig& c) {
    Plan plan = make_plan(c);
    const std::size_t row_ints = static_cast<std::size_t>(plan.H) * plan.K;
    std::vector<SynthSample> out(static_cast<std::size_t>(plan.n));
    for (std::int64_t i = 0; i < plan.n; ++i) {
        const std::int64_t g = i / c.group_size, j = i % c.group_size;
        SynthSample& s = out[i];
        s.request_id = request_id_of(g, j);
        s.group = group_name(g);
        s.prompt_len = plan.prompt_len(i);
        s.length = plan.length(i);
    }
    // Pass 1: prompt rows per group, written into the group's first member and copied to the others.
    tbb::parallel_for(tbb::blocked_range<int>(0, c.groups), [&](const tbb::blocked_range<int>& range) {
        Scratch s(plan.E);
        for (int g = range.begin(); g != range.end(); ++g) {
            const std::size_t first = static_cast<std::size_t>(g) * c.group_size;
            for (int j = 0; j < c.group_size; ++j)
                out[first + j].routes.assign(static_cast<std::size_t>(out[first + j].length - 1) * row_ints, 0);
            group_pass(plan, g, s, out[first].routes.data(), nullptr);
            const std::size_t prompt_ints = static_cast<std::size_t>(plan.lengths.prompt[g]) * row_ints;
            for (int j = 1; j < c.group_size; ++j)
                std::copy(out[first].routes.begin(),
                          out[first].routes.begin() + static_cast<std::ptrdiff_t>(prompt_ints),
                          out[first + j].routes.begin());
        }
    });
    // Pass 2: response rows per sample.
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, plan.n), [&](const tbb::blocked_range<std::int64_t>& range) {
        Scratch s(plan.E);
        for (std::int64_t i = range.begin(); i != range.end(); ++i) {
            SynthSample& smp = out[i];
            std::int32_t* resp = smp.routes.data() + static_cast<std::size_t>(smp.prompt_len) * row_ints;
            sample_pass(plan, i, s, resp, nullptr);
        }
    });
    return out;
}

Trace synth_trace(const SynthConfig& c) {
    Plan plan = make_plan(c);
    Trace t;
    t.model = synth_model(c);
    t.format = "synthetic";
    const std::size_t stride = static_cast<std::size_t>(plan.L) * plan.E;
    t.samples.resize(static_cast<std::size_t>(plan.n));
    for (std::int64_t i = 0; i < plan.n; ++i) {
        const std::int64_t g = i / c.group_size, j = i % c.group_size;
        SampleInfo& info = t.samples[i];
        info.id = request_id_of(g, j);
        info.request_id = info.id;
        info.group = group_name(g);
        info.length = plan.length(i);
        info.routed_rows = info.length - 1;
        info.prompt_len = plan.prompt_len(i);
        info.source_file = "synthetic";
        info.length_rule = LengthRule::RowsPlusOne;
    }
    // Pass 1: prompt counts per group into the group's first sample, copied to the others.
    t.counts.assign(static_cast<std::size_t>(plan.n) * stride, 0);
    tbb::parallel_for(tbb::blocked_range<int>(0, c.groups), [&](const tbb::blocked_range<int>& range) {
        Scratch s(plan.E);
        for (int g = range.begin(); g != range.end(); ++g) {
            const std::size_t first = static_cast<std::size_t>(g) * c.group_size;
            std::uint32_t* head = t.counts.data() + first * stride;
            group_pass(plan, g, s, nullptr, head);
            for (int j = 1; j < c.group_size; ++j)
                std::copy(head, head + stride, head + static_cast<std::size_t>(j) * stride);
        }
    });
    // Pass 2: response counts per sample, added.
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, plan.n), [&](const tbb::blocked_range<std::int64_t>& range) {
        Scratch s(plan.E);
        for (std::int64_t i = range.begin(); i != range.end(); ++i)
            sample_pass(plan, i, s, nullptr, t.counts.data() + static_cast<std::size_t>(i) * stride);
    });
    return t;
}

std::vector<std::filesystem::path> write_synth(const SynthConfig& c, TraceFormat format,
                                               const std::filesystem::path& out_dir) {
    validate(c);
    if (format == TraceFormat::Auto) format = TraceFormat::VLLM;
    switch (format) {
    case TraceFormat::SGLang:
    case TraceFormat::VLLM:
    case TraceFormat::Npy:
    case TraceFormat::Npz:
    case TraceFormat::NestedJson:
    case TraceFormat::NemoRL:
        break;
    default:
        std::string names;
        for (TraceFormat f : {TraceFormat::SGLang, TraceFormat::VLLM, TraceFormat::Npy, TraceFormat::Npz,
                              TraceFormat::NestedJson, TraceFormat::NemoRL})
            names += (names.empty() ? "" : ", ") + std::string(to_string(f));
        throw InputError(std::string("synth: cannot write format ") + to_string(format) + " (writable: " + names + ")");
    }
    Plan plan = make_plan(c);
    const std::vector<SynthSample> samples = synth_samples(c);
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) throw InputError("synth: cannot create folder " + out_dir.string() + ": " + ec.message());
    AtomicFiles files(out_dir);
    using ojson = nlohmann::ordered_json;

    switch (format) {
    case TraceFormat::VLLM: {
        for (int g = 0; g < c.groups; ++g) {
            ojson doc;
            doc["id"] = "synth-group-" + std::to_string(g);
            doc["object"] = "text_completion";
            doc["created"] = 0;
            doc["model"] = "synthetic";
            ojson choices = ojson::array();
            std::int64_t completion = 0;
            for (int j = 0; j < c.group_size; ++j) {
                const SynthSample& s = samples[static_cast<std::size_t>(g) * c.group_size + j];
                completion += s.length - s.prompt_len;
                ojson ch;
                ch["index"] = j;
                ch["text"] = "";
                ch["routed_experts"] = util::base64_encode(sample_npy(s, plan));
                ch["finish_reason"] = "stop";
                choices.push_back(std::move(ch));
            }
            doc["choices"] = std::move(choices);
            const std::int64_t prompt = plan.lengths.prompt[g];
            doc["usage"] = {
                {"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
            files.write("group_" + std::to_string(g) + ".json", doc.dump() + "\n");
        }
        break;
    }
    case TraceFormat::SGLang: {
        std::string text;
        for (const SynthSample& s : samples) {
            ojson rec;
            rec["text"] = "";
            ojson meta;
            meta["id"] = s.request_id;
            meta["prompt_tokens"] = s.prompt_len;
            meta["completion_tokens"] = s.length - s.prompt_len;
            meta["routed_experts"] = util::base64_encode(le_bytes_int32(s.routes));
            rec["meta_info"] = std::move(meta);
            rec["group"] = s.group;
            text += rec.dump();
            text += '\n';
        }
        files.write("synth.jsonl", text);
        break;
    }
    case TraceFormat::Npy: {
        for (std::size_t i = 0; i < samples.size(); ++i)
            files.write("sample_" + std::to_string(i) + ".npy", sample_npy(samples[i], plan));
        break;
    }
    case TraceFormat::Npz: {
        std::vector<std::pair<std::string, std::string>> entries;
        entries.reserve(samples.size());
        for (std::size_t i = 0; i < samples.size(); ++i)
            entries.emplace_back("sample_" + std::to_string(i) + ".npy", sample_npy(samples[i], plan));
        write_zip(files.reserve("synth.npz"), entries);
        break;
    }
    case TraceFormat::NestedJson: {
        std::string text;
        for (const SynthSample& s : samples) {
            const std::vector<std::int32_t> ids = moe_only(s, plan);
            const std::int64_t rows = s.length - 1;
            text += '[';
            for (std::int64_t r = 0; r < rows; ++r) {
                if (r) text += ',';
                text += '[';
                for (int l = 0; l < plan.L; ++l) {
                    if (l) text += ',';
                    text += '[';
                    for (int q = 0; q < plan.K; ++q) {
                        if (q) text += ',';
                        text += std::to_string(ids[(static_cast<std::size_t>(r) * plan.L + l) * plan.K + q]);
                    }
                    text += ']';
                }
                text += ']';
            }
            text += "]\n";
        }
        files.write("synth.jsonl", text);
        break;
    }
    case TraceFormat::NemoRL: {
        const bool narrow = plan.E <= 32767;
        std::string text;
        for (const SynthSample& s : samples) {
            // NeMo-RL's layout: S = t_i rows, the last one the default route arange(top_k).
            std::vector<std::int32_t> ids = moe_only(s, plan);
            for (int l = 0; l < plan.L; ++l)
                for (int q = 0; q < plan.K; ++q)
                    ids.push_back(q);
            text += narrow ? "nrlre1:int16:" : "nrlre1:int32:";
            text += std::to_string(s.length) + "x" + std::to_string(plan.L) + "x" + std::to_string(plan.K) + ":";
            text += util::base64_encode(narrow ? le_bytes_int16(ids) : le_bytes_int32(ids));
            text += '\n';
        }
        files.write("synth.nrlre1", text);
        break;
    }
    default:
        break;
    }
    return files.commit();
}

} // namespace routepack
