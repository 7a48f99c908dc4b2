// kiln/half.h, the bf16/f16 conversions the reference interpreter, the cpu
// plugin and the tests share: every one of the 65536 patterns of each format
// survives widening and narrowing again; f32 -> f16 rounds as numpy's
// float16 does (a committed golden set, tests/tools/gen_f16_rounding_golden.py);
// f32 -> bf16 rounds as an independent round-to-nearest-even written here
// in double arithmetic does, over edge cases and random patterns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "f16_rounding_golden.h"
#include "kiln/half.h"

namespace {

float from_bits(uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

bool f16_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }
bool bf16_is_nan(uint16_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0; }

TEST(Half, EveryF16PatternSurvivesARoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = kiln_f16_to_f32(h);
    const uint16_t back = kiln_f32_to_f16(f);
    if (f16_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      // Quieted, sign and payload kept (F16C's rule).
      ASSERT_EQ(back, h | 0x200) << std::hex << i;
    } else {
      ASSERT_EQ(back, h) << std::hex << i;
    }
  }
}

TEST(Half, EveryBf16PatternSurvivesARoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = kiln_bf16_to_f32(h);
    ASSERT_EQ(bits_of(f), i << 16);  // widening is the top half
    const uint16_t back = kiln_f32_to_bf16(f);
    if (bf16_is_nan(h))
      ASSERT_EQ(back, h | 0x40) << std::hex << i;
    else
      ASSERT_EQ(back, h) << std::hex << i;
  }
}

TEST(Half, F16WideningIsExact) {
  // Spot values with known f32 images: subnormals, normals, the extremes.
  EXPECT_EQ(kiln_f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(kiln_f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(kiln_f16_to_f32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(kiln_f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(kiln_f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(kiln_f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(kiln_f16_to_f32(0x7C00), INFINITY);
  EXPECT_EQ(bits_of(kiln_f16_to_f32(0x8000)), 0x80000000u);
}

TEST(Half, F32ToF16RoundsAsNumpyDoes) {
  size_t checked = 0;
  for (const auto& g : kiln::expected::kF16Rounding) {
    ASSERT_EQ(kiln_f32_to_f16(from_bits(g.f32_bits)), g.f16_bits)
        << "f32 bits 0x" << std::hex << g.f32_bits << " (" << from_bits(g.f32_bits) << ")";
    ++checked;
  }
  EXPECT_GT(checked, 10000u);
}

TEST(Half, F32ToF16KeepsNanAndItsSign) {
  EXPECT_EQ(kiln_f32_to_f16(from_bits(0x7FC00000)), 0x7E00);
  EXPECT_EQ(kiln_f32_to_f16(from_bits(0xFFC00000)), 0xFE00);
  // A signalling NaN whose payload lies only in the bits f16 drops is still
  // a NaN, not infinity.
  EXPECT_TRUE(f16_is_nan(kiln_f32_to_f16(from_bits(0x7F800001))));
  EXPECT_EQ(kiln_f32_to_f16(from_bits(0x7FA00000)), 0x7F00);
}

// An independent f32 -> bf16: the two bf16 neighbours of x found by
// truncation, the nearer one chosen by comparing distances in double
// (exact for these), ties to the even mantissa; overflow past the largest
// finite bf16 by half an ulp or more gives infinity.
uint16_t bf16_by_distance(float x) {
  const uint32_t u = bits_of(x);
  const auto down = static_cast<uint16_t>(u >> 16);  // toward zero
  const auto up = static_cast<uint16_t>(down + 1);   // away from zero (may reach inf)
  const double ax = std::fabs(static_cast<double>(x));
  const double d_down = ax - std::fabs(static_cast<double>(kiln_bf16_to_f32(down)));
  double up_mag = std::fabs(static_cast<double>(kiln_bf16_to_f32(up)));
  if ((up & 0x7FFF) == 0x7F80) up_mag = 0x1p128;  // one step past the largest finite bf16, 0x1.FEp127
  const double d_up = up_mag - ax;
  if (d_down < d_up) return down;
  if (d_up < d_down) return up;
  return (down & 1) == 0 ? down : up;
}

TEST(Half, F32ToBf16RoundsToNearestEven) {
  std::vector<uint32_t> cases = {
      0x00000000, 0x80000000, 0x3F800000, 0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x3F817FFF,
      0x3F818001, 0x00008000, 0x00018000, 0x00000001, 0x007FFFFF, 0x00800000, 0x7F7F7FFF, 0x7F7F8000,
      0x7F7FFFFF, 0x7F7F0000, 0xFF7F8000, 0x7F800000, 0xFF800000, 0x3FFFFFFF, 0xBF808000, 0xC0000001,
  };
  std::mt19937 gen(16);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = gen();
    if ((u & 0x7FFFFFFF) <= 0x7F800000) cases.push_back(u);
    cases.push_back((u & 0xFFFF0000u) | 0x8000u);  // an exact tie
  }
  for (uint32_t u : cases) {
    if ((u & 0x7FFFFFFF) > 0x7F800000 || (u & 0x7FFFFFFF) == 0x7F800000) {
      if ((u & 0x7FFFFFFF) == 0x7F800000) {
        ASSERT_EQ(kiln_f32_to_bf16(from_bits(u)), u >> 16);
      }
      continue;
    }
    ASSERT_EQ(kiln_f32_to_bf16(from_bits(u)), bf16_by_distance(from_bits(u))) << std::hex << u;
  }
}

TEST(Half, F32ToBf16KeepsNan) {
  EXPECT_EQ(kiln_f32_to_bf16(from_bits(0x7FC00000)), 0x7FC0);
  EXPECT_EQ(kiln_f32_to_bf16(from_bits(0xFF800001)), 0xFFC0);  // payload below bf16's bits: still NaN
  EXPECT_TRUE(bf16_is_nan(kiln_f32_to_bf16(from_bits(0x7F800001))));
}

}  // namespace
