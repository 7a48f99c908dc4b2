// kiln/fp8.h, the E4M3 and E5M2 conversions FP8 training's casts use:
// f32 -> FP8 rounds as an independent reference does (a committed golden
// set from tests/tools/gen_fp8_rounding_golden.py, which rounds by search
// over the values each format's definition gives), every code widens to
// that definition's value, and every FP8 value is exact in bf16 and f16,
// the dtypes the casts store them in.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fp8_rounding_golden.h"
#include "kiln/fp8.h"
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

bool is_nan_code(uint8_t c, kiln_fp8_format f) { return f == KILN_FP8_E4M3 ? (c & 0x7F) == 0x7F : (c & 0x7F) > 0x7C; }

TEST(Fp8, NarrowingRoundsAsTheReference) {
  size_t wrong4 = 0, wrong5 = 0;
  for (const Fp8RoundingCase& c : kFp8RoundingGolden) {
    const float x = from_bits(c.f32);
    const uint8_t e4 = kiln_f32_to_fp8(x, KILN_FP8_E4M3), e5 = kiln_f32_to_fp8(x, KILN_FP8_E5M2);
    if (e4 != c.e4m3 && wrong4++ < 5)
      ADD_FAILURE() << "E4M3 of " << x << " (0x" << std::hex << c.f32 << "): 0x" << +e4 << ", reference 0x" << +c.e4m3;
    if (e5 != c.e5m2 && wrong5++ < 5)
      ADD_FAILURE() << "E5M2 of " << x << " (0x" << std::hex << c.f32 << "): 0x" << +e5 << ", reference 0x" << +c.e5m2;
  }
  EXPECT_EQ(wrong4, 0u);
  EXPECT_EQ(wrong5, 0u);
  EXPECT_GT(std::size(kFp8RoundingGolden), 10000u);
}

TEST(Fp8, EveryCodeWidensToItsDefinedValue) {
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<uint8_t>(c);
    for (const auto& [format, values] :
         {std::pair{KILN_FP8_E4M3, kE4M3Values}, std::pair{KILN_FP8_E5M2, kE5M2Values}}) {
      const float v = kiln_fp8_to_f32(code, format);
      if (is_nan_code(code, format)) {
        EXPECT_TRUE(std::isnan(v)) << c;
      } else if (format == KILN_FP8_E5M2 && (c & 0x7F) == 0x7C) {
        EXPECT_TRUE(std::isinf(v) && std::signbit(v) == (c >= 0x80)) << c;
      } else {
        EXPECT_EQ(bits_of(v), values[c]) << "code 0x" << std::hex << c << " format " << format;
      }
    }
  }
}

TEST(Fp8, FiniteCodesSurviveNarrowingAndAreExactInBf16AndF16) {
  for (const kiln_fp8_format format : {KILN_FP8_E4M3, KILN_FP8_E5M2}) {
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<uint8_t>(c);
      const float v = kiln_fp8_to_f32(code, format);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(kiln_f32_to_fp8(v, format), code) << c;
      EXPECT_EQ(bits_of(kiln_bf16_to_f32(kiln_f32_to_bf16(v))), bits_of(v)) << c;
      EXPECT_EQ(bits_of(kiln_f16_to_f32(kiln_f32_to_f16(v))), bits_of(v)) << c;
    }
  }
}

TEST(Fp8, SaturatesAndKeepsNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(kiln_fp8_max(KILN_FP8_E4M3), 448.0f);
  EXPECT_EQ(kiln_fp8_max(KILN_FP8_E5M2), 57344.0f);
  EXPECT_EQ(kiln_f32_to_fp8(inf, KILN_FP8_E4M3), 0x7E);
  EXPECT_EQ(kiln_f32_to_fp8(-inf, KILN_FP8_E4M3), 0xFE);
  EXPECT_EQ(kiln_f32_to_fp8(inf, KILN_FP8_E5M2), 0x7B);
  EXPECT_EQ(kiln_f32_to_fp8(-inf, KILN_FP8_E5M2), 0xFB);
  EXPECT_EQ(kiln_fp8_round(1e9f, KILN_FP8_E4M3), 448.0f);
  EXPECT_EQ(kiln_fp8_round(-463.9f, KILN_FP8_E4M3), -448.0f);
  for (const float n : {nan, -nan, from_bits(0x7F800001u), from_bits(0xFFC01234u)}) {
    EXPECT_EQ(kiln_f32_to_fp8(n, KILN_FP8_E4M3), 0x7F);
    EXPECT_EQ(kiln_f32_to_fp8(n, KILN_FP8_E5M2), 0x7F);
    EXPECT_TRUE(std::isnan(kiln_fp8_round(n, KILN_FP8_E4M3)));
    EXPECT_TRUE(std::isnan(kiln_fp8_round(n, KILN_FP8_E5M2)));
  }
  // Signed zero, and the smallest subnormals' ties to zero (even) and up.
  EXPECT_EQ(kiln_f32_to_fp8(-0.0f, KILN_FP8_E4M3), 0x80);
  EXPECT_EQ(kiln_f32_to_fp8(std::ldexp(1.0f, -10), KILN_FP8_E4M3), 0x00);
  EXPECT_EQ(kiln_f32_to_fp8(std::ldexp(1.5f, -10), KILN_FP8_E4M3), 0x01);
  EXPECT_EQ(kiln_f32_to_fp8(std::ldexp(1.0f, -17), KILN_FP8_E5M2), 0x00);
  EXPECT_EQ(kiln_f32_to_fp8(std::ldexp(3.0f, -17), KILN_FP8_E5M2), 0x02);  // 1.5 units: tie to even
}

}  // namespace
