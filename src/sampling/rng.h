// The sampling random generator: xoshiro256** seeded through splitmix64. Written out here (not
// std::mt19937 + std distributions) so a seed gives the same stream with every compiler and
// standard library.
#pragma once

#include <cstdint>

namespace ridge::sampling {

class Rng {
 public:
  explicit Rng(uint64_t seed) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& word : s_) word = splitmix64(x);
  }

  // Sets the raw xoshiro state (for the published test vectors); not all zero.
  void set_state(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3) {
    s_[0] = s0;
    s_[1] = s1;
    s_[2] = s2;
    s_[3] = s3;
  }

  // Next 64 random bits.
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // splitmix64 step: advances `state` and returns the mixed value.
  static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4] = {};
};

}  // namespace ridge::sampling
