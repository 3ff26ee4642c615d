// Seed derivations of the planner stages, seeding trials, annealing chains, Grouter's layers, the
// window sampler and synthetic traces.
// See seeds.h.
#include "core/util/seeds.h"

#include "core/util/rng.h"

namespace routepack::seeds {

std::uint64_t mix64(std::uint64_t x) {
    return splitmix64(x);
}

std::uint64_t polish_round(std::uint64_t stage_seed, std::uint64_t round) {
    return round == 0 ? stage_seed : mix64(stage_seed + round);
}

std::uint64_t planner_stage(std::uint64_t seed, Stage stage) {
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(stage) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t grouter_layer(std::uint64_t stage_seed, std::uint64_t layer) {
    return stage_seed + layer;
}

std::uint64_t window_sampler(std::uint64_t seed) {
    return seed;
}

std::uint64_t seeding_trial(std::uint64_t seed, std::uint64_t trial) {
    std::uint64_t a = seed, b = trial ^ 0x6a09e667f3bcc909ULL;
    const std::uint64_t ha = splitmix64(a);
    const std::uint64_t hb = splitmix64(b);
    return ha ^ ((hb << 23) | (hb >> 41));
}

std::uint64_t annealing_chain(std::uint64_t seed, std::uint64_t level, std::uint64_t member) {
    std::uint64_t h = mix64(seed);
    h = mix64(h ^ (0xd1b54a32d192ed03ULL * (level + 1)));
    return mix64(h ^ (0x8cb92ba72f3d8dd7ULL * (member + 1)));
}

std::uint64_t synth_stream(std::uint64_t seed, std::uint64_t purpose, std::uint64_t a, std::uint64_t b) {
    std::uint64_t h = mix64(seed ^ purpose);
    h = mix64(h ^ a);
    return mix64(h ^ (b * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL));
}

} // namespace routepack::seeds
