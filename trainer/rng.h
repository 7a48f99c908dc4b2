// The trainer's one random number generator: xoshiro256** seeded through
// SplitMix64. Every draw is defined here in integer arithmetic (std::
// distributions are implementation-defined), so a seed means the same
// stream on every platform, and state() captures everything needed for a
// resumed run to continue the exact same stream.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::trainer {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  // An independent stream per (seed, stream) pair, e.g. one per data-parallel
  // rank or per purpose (init, dropout, shuffling), without the streams
  // overlapping the way seed+1, seed+2 would under a weak mixer.
  Rng(uint64_t seed, uint64_t stream);

  uint64_t next_u64();
  uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }
  // [0, 1) on the 2^-24 / 2^-53 grid: exact, so identical on every platform.
  float uniform();
  double uniform_double();
  // [0, n) without modulo bias; n must be > 0.
  uint64_t below(uint64_t n);
  // Standard normal by Box-Muller. The second value of each pair is kept for
  // the next call and is part of state(). Uses std::log/std::cos, so bit
  // equality across different libm implementations is not promised; on one
  // platform it is exact.
  double normal();

  // [s0, s1, s2, s3, has_spare, spare bits]: JSON-friendly for checkpoints.
  std::vector<uint64_t> state() const;
  // Throws kiln::Error on a state of the wrong length or an all-zero core
  // (which xoshiro can never leave).
  void set_state(const std::vector<uint64_t>& state);

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace kiln::trainer
