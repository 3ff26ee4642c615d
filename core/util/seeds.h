#pragma once
// Every seed derivation of the project in one place: how one master seed becomes the independent
// random streams of the planner stages, the seeding trials (Algorithm 2), the annealing chains
// (Algorithm 3) and the synthetic traces. A stream depends only on (seed, its indices), never on
// thread count or scheduling, which is what makes plans identical for a seed whatever the worker
// count. The formulas are part of every golden value: changing one changes plans and synthetic traces.
// All are built from the splitmix64 output function (Steele, Lea, Flood 2014; core/util/rng.h).
#include <cstdint>

namespace routepack::seeds {

/// splitmix64 as a pure function: the output for state `x` (x + golden gamma, then the finalizer).
/// Bijective on 64 bits.
std::uint64_t mix64(std::uint64_t x);

/// Seed of planner stage `stage` (1 = seeding, 2 = annealing, 3 = the final pass) from the master seed: the
/// (stage + 1)-th splitmix64 output of `seed`.
std::uint64_t planner_stage(std::uint64_t seed, std::uint64_t stage);

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

/// Seed of a synthetic-trace stream for (`purpose` tag, a, b): a sample or group index and a layer.
std::uint64_t synth_stream(std::uint64_t seed, std::uint64_t purpose, std::uint64_t a, std::uint64_t b);

} // namespace routepack::seeds
