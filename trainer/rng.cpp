#include "trainer/rng.h"

#include <bit>
#include <cmath>
#include <numbers>
#include <string>

#include "core/error.h"

namespace kiln::trainer {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& s : s_) s = splitmix64(x);
}

Rng::Rng(uint64_t seed, uint64_t stream) {
  // Mix the stream id through SplitMix first so nearby (seed, stream) pairs
  // land on unrelated starting points.
  uint64_t x = stream;
  uint64_t mixed = seed ^ splitmix64(x);
  uint64_t y = mixed;
  for (uint64_t& s : s_) s = splitmix64(y);
}

uint64_t Rng::next_u64() {
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

float Rng::uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

double Rng::uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t n) {
  if (n == 0) throw Error("Rng::below(0): the range is empty");
  // Reject the lowest (2^64 mod n) values so every residue is equally likely.
  const uint64_t threshold = (0 - n) % n;
  for (;;) {
    const uint64_t r = next_u64();
    if (r >= threshold) return r % n;
  }
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // 1 - u lies in (0, 1], keeping log() finite.
  const double u1 = 1.0 - uniform_double();
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

std::vector<uint64_t> Rng::state() const {
  return {s_[0], s_[1], s_[2], s_[3], has_spare_ ? 1u : 0u, std::bit_cast<uint64_t>(spare_)};
}

void Rng::set_state(const std::vector<uint64_t>& state) {
  if (state.size() != 6)
    throw Error("RNG state has " + std::to_string(state.size()) +
                " values, expected 6; the checkpoint's RNG state is damaged");
  if ((state[0] | state[1] | state[2] | state[3]) == 0)
    throw Error(
        "RNG state is all zero, which the generator can never reach; the "
        "checkpoint's RNG state is damaged");
  if (state[4] > 1)
    throw Error("RNG state has a spare flag of " + std::to_string(state[4]) +
                ", expected 0 or 1; the checkpoint's RNG state is damaged");
  for (int i = 0; i < 4; ++i) s_[i] = state[i];
  has_spare_ = state[4] == 1;
  spare_ = std::bit_cast<double>(state[5]);
}

}  // namespace kiln::trainer
