#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "trainer/rng.h"

using kiln::trainer::Rng;

namespace {

std::vector<uint64_t> draw(Rng& r, int n) {
  std::vector<uint64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(r.next_u64());
  return v;
}

}  // namespace

// Known answers from the reference C implementations, so the stream is the
// published algorithm and not merely self-consistent.
TEST(Rng, MatchesReferenceXoshiroAndSplitMix) {
  Rng r;
  r.set_state({1, 2, 3, 4, 0, 0});
  EXPECT_EQ(draw(r, 4), (std::vector<uint64_t>{11520u, 0u, 1509978240u, 1215971899390074240u}));
  EXPECT_EQ(Rng(0).state()[0], 0xe220a8397b1dcdafULL);
  EXPECT_EQ(Rng(0).state()[1], 0x6e789e6aa1b965f4ULL);
}

TEST(Rng, SameSeedSameStreamDifferentSeedOrStreamDiffers) {
  Rng a(42), b(42), c(43), d(42, 1), e(42, 2);
  const auto va = draw(a, 16);
  EXPECT_EQ(va, draw(b, 16));
  EXPECT_NE(va, draw(c, 16));
  EXPECT_NE(draw(d, 16), draw(e, 16));
}

TEST(Rng, UniformIsInRangeAndCentered) {
  Rng r(7);
  double sum = 0, sumd = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = r.uniform();
    const double d = r.uniform_double();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum += u;
    sumd += d;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
  EXPECT_NEAR(sumd / n, 0.5, 0.01);
}

TEST(Rng, BelowCoversRangeEvenly) {
  Rng r(9);
  std::vector<int> hist(10, 0);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = r.below(10);
    ASSERT_LT(v, 10u);
    ++hist[v];
  }
  for (int h : hist) EXPECT_NEAR(h, 10000, 600);
  EXPECT_EQ(r.below(1), 0u);
  // A range just over 2^63 is where a modulo would be most biased.
  const uint64_t big = (uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 100; ++i) EXPECT_LT(r.below(big), big);
  EXPECT_THROW(r.below(0), kiln::Error);
}

TEST(Rng, NormalHasUnitMoments) {
  Rng r(11);
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = r.normal();
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.02);
}

TEST(Rng, StateRestoreContinuesExactlyIncludingSpareNormal) {
  Rng r(123);
  draw(r, 5);
  r.normal();  // leaves the pair's second value cached
  const auto saved = r.state();
  // Through JSON, as a checkpoint stores it.
  const nlohmann::json j = saved;
  const auto restored_state = nlohmann::json::parse(j.dump()).get<std::vector<uint64_t>>();

  std::vector<double> expected;
  for (int i = 0; i < 5; ++i) expected.push_back(r.normal());
  expected.push_back(static_cast<double>(r.next_u64()));

  Rng other(999);
  other.set_state(restored_state);
  std::vector<double> got;
  for (int i = 0; i < 5; ++i) got.push_back(other.normal());
  got.push_back(static_cast<double>(other.next_u64()));
  EXPECT_EQ(got, expected);
}

TEST(Rng, RejectsDamagedState) {
  Rng r;
  EXPECT_THROW(r.set_state({1, 2, 3}), kiln::Error);
  EXPECT_THROW(r.set_state({0, 0, 0, 0, 0, 0}), kiln::Error);
  EXPECT_THROW(r.set_state({1, 2, 3, 4, 7, 0}), kiln::Error);
}
