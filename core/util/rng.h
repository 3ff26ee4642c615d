#pragma once
// The project's deterministic random numbers (same seed => same stream on every platform; no std::
// distributions): splitmix64 (Steele, Lea, Flood 2014) for seeding and stream derivation, and
// xoshiro256** 1.0 (Blackman & Vigna) for streams. Used by the synthetic traces, `window --random`,
// seeding (Algorithm 2) and annealing (Algorithm 3).
#include <cstdint>

namespace routepack {

/// splitmix64: advances `x` by the golden gamma and returns the next output.
std::uint64_t splitmix64(std::uint64_t& x);

/// xoshiro256**, its four state words the first four splitmix64 outputs of `seed` (golden values for
/// seed 1 frozen in tests/tst_seeding.cpp).
class Rng {
public:
    explicit Rng(std::uint64_t seed);
    std::uint64_t next();
    /// Uniform in [0, 1) from the top 53 bits of one draw.
    double uniform();
    /// Uniform integer in [0, n), unbiased: draws r until r >= 2^64 mod n, returns r mod n. n <= 1
    /// returns 0 without drawing.
    std::uint64_t below(std::uint64_t n);

private:
    std::uint64_t s_[4];
};

} // namespace routepack
