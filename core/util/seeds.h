#pragma once
// Every seed derivation of the project in one place: how one master seed becomes the independent
// random streams of the planner stages, the seeding trials (Algorithm 2), the annealing chains
// (Algorithm 3), Grouter's grouping, the window sampler and the synthetic traces. A stream depends only on (seed, its
// indices), never on thread count or scheduling, which is what makes plans identical for a seed whatever the worker
// count. The formulas are part of every golden value: changing one changes plans and synthetic traces.
// All are built from the splitmix64 output function (Steele, Lea, Flood 2014; core/util/rng.h).
#include <cstdint>

namespace routepack::seeds {

/// splitmix64 as a pure function: the output for state `x` (x + golden gamma, then the finalizer).
/// Bijective on 64 bits.
std::uint64_t mix64(std::uint64_t x);

/// Ids of the planner's random streams: the `stage` of planner_stage. Each id names exactly one
/// stream (kPlannerStages lists them all; tests/tst_seeding.cpp checks that no two share an id). The
/// values are part of every golden plan.
enum class Stage : std::uint64_t {
    Seeding = 1,        ///< routepack's seeding trials (Algorithm 2)
    Annealing = 2,      ///< routepack's annealing chains (Algorithm 3)
    Polish = 3,         ///< routepack's final pass (one stream per round: polish_round)
    Grouter = 4,        ///< Grouter's k-means++ seeding (one stream per MoE layer: grouter_layer)
    CommSeeding = 11,   ///< routepack+comm's seeding trials
    CommAnnealing = 12, ///< routepack+comm's annealing chains
    CommPolish = 13,    ///< routepack+comm's final pass
};

/// Every planner stage, in id order.
inline constexpr Stage kPlannerStages[] = {Stage::Seeding,     Stage::Annealing,     Stage::Polish,    Stage::Grouter,
                                           Stage::CommSeeding, Stage::CommAnnealing, Stage::CommPolish};

/// The three streams of one packing search (seeding, annealing, final pass).
struct SearchStreams {
    Stage seeding, annealing, polish;
};
/// The `routepack` method's search.
inline constexpr SearchStreams kRoutepackSearch{Stage::Seeding, Stage::Annealing, Stage::Polish};
/// The `routepack+comm` method's search.
inline constexpr SearchStreams kCommSearch{Stage::CommSeeding, Stage::CommAnnealing, Stage::CommPolish};

/// Seed of planner stage `stage` from the master seed: the (id + 1)-th splitmix64 output of `seed`.
std::uint64_t planner_stage(std::uint64_t seed, Stage stage);

/// Seed of Grouter's k-means++ stream at MoE layer `layer` from its stage seed
/// (planner_stage(seed, Stage::Grouter)): stage_seed + layer (wrapping).
std::uint64_t grouter_layer(std::uint64_t stage_seed, std::uint64_t layer);

/// Start state of the splitmix64 stream that draws `routepack window --random N --seed S` (and the
/// studio's random window): the seed itself, so a window's stored definition "random N seed S"
/// names its samples in every version.
std::uint64_t window_sampler(std::uint64_t seed);

/// Seed of round `round` of the final pass (the search segments between placement refinements):
/// `stage_seed` itself for round 0, mix64(stage_seed + round) after it.
std::uint64_t polish_round(std::uint64_t stage_seed, std::uint64_t round);

/// Seed of seeding trial `trial` (Algorithm 2; trial 0 is the pairing of the FFD seed):
/// splitmix64(seed) xor rotl(splitmix64(trial xor 0x6a09e667f3bcc909), 23), so neighbouring seeds and
/// neighbouring trials give unrelated streams.
std::uint64_t seeding_trial(std::uint64_t seed, std::uint64_t trial);

/// Seed of annealing chain `member` at level `level` (Algorithm 3); member UINT64_MAX is the level's
/// own stream (resampling). Three chained mix64 rounds over (seed, level, member).
std::uint64_t annealing_chain(std::uint64_t seed, std::uint64_t level, std::uint64_t member);

/// Seed of the seeding sketches' fixed projections (the ASCII of "SKETCH"): independent of the
/// master seed, so sketches of different runs are comparable.
inline constexpr std::uint64_t kSketchProjections = 0x534b45544348ULL;

/// Seed of a synthetic-trace stream for (`purpose` tag, a, b): a sample or group index and a layer.
std::uint64_t synth_stream(std::uint64_t seed, std::uint64_t purpose, std::uint64_t a, std::uint64_t b);

} // namespace routepack::seeds
