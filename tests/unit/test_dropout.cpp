// The dropout mask (kiln/philox.h, docs/DROPOUT.md): Philox4x32-10 against
// Random123's published answers, and the mask's properties through the
// reference interpreter: the kept fraction, tensor-parallel column blocks
// drawing the single-process mask, the 64-bit offset's carry, and the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/reference/reference.h"
#include "kiln/philox.h"

namespace kiln::graph {
namespace {

// Random123 v1.14.0, tests/kat_vectors (github.com/DEShawResearch/random123),
// the three "philox4x32 10" lines: counter (4 words), key (2), expected (4).
TEST(Philox, Random123KnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], want[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    uint32_t out[4];
    kiln_philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.want[i]) << "word " << i << " of counter " << k.ctr[0];
  }
}

TEST(Philox, DropoutThresholdAndScale) {
  EXPECT_EQ(kiln_dropout_threshold(0.0), 0u);
  EXPECT_EQ(kiln_dropout_threshold(0.5), 8388608u);
  EXPECT_EQ(kiln_dropout_threshold(static_cast<double>(0.1f)), 1677722u);
  EXPECT_EQ(kiln_dropout_scale(0.5), 2.0f);
  EXPECT_EQ(kiln_dropout_scale(0.0), 1.0f);
  // Everything survives p = 0, even a word of zero bits.
  EXPECT_TRUE(kiln_dropout_keep(0u, 0u));
  EXPECT_FALSE(kiln_dropout_keep(0x7fffffffu, 8388608u));
  EXPECT_TRUE(kiln_dropout_keep(0x80000000u, 8388608u));
}

HostTensor key_tensor(uint32_t seed, uint32_t step, uint64_t offset) {
  HostTensor t = HostTensor::zeros(KILN_I32, {4});
  t.i32 = {static_cast<int32_t>(seed), static_cast<int32_t>(step), static_cast<int32_t>(static_cast<uint32_t>(offset)),
           static_cast<int32_t>(static_cast<uint32_t>(offset >> 32))};
  return t;
}

HostTensor ones(const Shape& s) {
  HostTensor t = HostTensor::zeros(KILN_F32, s);
  for (float& v : t.f32) v = 1.0f;
  return t;
}

// y = dropout(x) of one graph on the reference interpreter.
std::vector<float> dropout_of(const HostTensor& x, const HostTensor& key, float p, int64_t site, int64_t period,
                              int64_t stride) {
  Graph g;
  g.output("y", g.dropout(g.input("x", KILN_F32, x.shape), g.input("key", KILN_I32, {4}), p, site, period, stride));
  return run_reference(g, {{"x", x}, {"key", key}}).at("y").f32;
}

// Over 10^6 elements the kept count is binomial: within 5 sigma of (1 - p) n.
TEST(Dropout, KeptFractionIsOneMinusP) {
  const int64_t n = 1000000;
  for (float p : {0.1f, 0.5f, 0.9f}) {
    SCOPED_TRACE(p);
    const std::vector<float> y = dropout_of(ones({n}), key_tensor(1234, 7, 0), p, 3, n, n);
    const auto kept = static_cast<double>(std::count_if(y.begin(), y.end(), [](float v) { return v != 0.0f; }));
    const double q = 1.0 - static_cast<double>(p), sigma = std::sqrt(static_cast<double>(n) * q * (1.0 - q));
    EXPECT_LE(std::abs(kept - q * static_cast<double>(n)), 5.0 * sigma);
    for (float v : y) ASSERT_TRUE(v == 0.0f || v == kiln_dropout_scale(p));
  }
}

// Attention probabilities [B, H T T] under tensor parallelism: rank r holds
// heads [r H/R, (r+1) H/R), a column block, and with period H/R T T, stride
// H T T and offset r H/R T T draws exactly the single-process mask there.
TEST(Dropout, TensorParallelRanksDrawTheSingleProcessMask) {
  const int64_t B = 3, H = 4, T = 5, R = 2, cols = H * T * T, local = cols / R;
  HostTensor x = HostTensor::zeros(KILN_F32, {B, cols});
  for (size_t i = 0; i < x.f32.size(); ++i) x.f32[i] = 1.0f + static_cast<float>(i);
  const uint64_t base = 1000;  // the run's own offset, added to every rank's
  const std::vector<float> whole = dropout_of(x, key_tensor(42, 9, base), 0.5f, 1, B * cols, B * cols);
  for (int64_t r = 0; r < R; ++r) {
    SCOPED_TRACE(r);
    HostTensor part = HostTensor::zeros(KILN_F32, {B, local});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < local; ++j)
        part.f32[static_cast<size_t>(b * local + j)] = x.f32[static_cast<size_t>(b * cols + r * local + j)];
    const auto offset = base + static_cast<uint64_t>(r * local);
    const std::vector<float> y = dropout_of(part, key_tensor(42, 9, offset), 0.5f, 1, local, cols);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < local; ++j)
        ASSERT_EQ(y[static_cast<size_t>(b * local + j)], whole[static_cast<size_t>(b * cols + r * local + j)])
            << "row " << b << " column " << j;
  }
}

// The offset is 64-bit: a tensor straddling 2^32 draws, past the boundary,
// the mask of a tensor starting at 2^32 (the carry into offset_hi and into
// the counter's second word).
TEST(Dropout, OffsetCarriesPast32Bits) {
  const int64_t n = 37, before = 6;
  HostTensor x = HostTensor::zeros(KILN_F32, {n});
  for (size_t i = 0; i < x.f32.size(); ++i) x.f32[i] = 0.5f + static_cast<float>(i);
  HostTensor tail = HostTensor::zeros(KILN_F32, {n - before});
  std::copy(x.f32.begin() + before, x.f32.end(), tail.f32.begin());
  const uint64_t two32 = uint64_t{1} << 32;
  const std::vector<float> straddling = dropout_of(x, key_tensor(5, 1, two32 - before), 0.5f, 0, n, n);
  const std::vector<float> above = dropout_of(tail, key_tensor(5, 1, two32), 0.5f, 0, n - before, n - before);
  for (int64_t i = 0; i < n - before; ++i)
    EXPECT_EQ(straddling[static_cast<size_t>(before + i)], above[static_cast<size_t>(i)]) << i;
}

// Seed, step and site each change the mask; the same key repeats it.
TEST(Dropout, MaskDependsOnSeedStepAndSite) {
  const int64_t n = 4096;
  const HostTensor x = ones({n});
  const std::vector<float> base = dropout_of(x, key_tensor(1, 2, 0), 0.5f, 3, n, n);
  EXPECT_EQ(dropout_of(x, key_tensor(1, 2, 0), 0.5f, 3, n, n), base);
  EXPECT_NE(dropout_of(x, key_tensor(9, 2, 0), 0.5f, 3, n, n), base);
  EXPECT_NE(dropout_of(x, key_tensor(1, 9, 0), 0.5f, 3, n, n), base);
  EXPECT_NE(dropout_of(x, key_tensor(1, 2, 0), 0.5f, 9, n, n), base);
  // p = 0 is the identity.
  EXPECT_EQ(dropout_of(x, key_tensor(1, 2, 0), 0.0f, 3, n, n), x.f32);
}

}  // namespace
}  // namespace kiln::graph
