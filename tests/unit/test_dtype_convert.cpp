// f32 -> bf16 / f16 rounding for kiln export --dtype: round to nearest, ties
// to even, at the edges the trained weights of cli.hf_export_gpt2 never reach
// (ties, f16 subnormals, overflow to infinity, NaN), and every 16-bit value
// survives widening and narrowing again unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "trainer/checkpoint/dtype_convert.h"

using namespace kiln::trainer;

namespace {

float from_bits(uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t narrow(float f, const char* dtype) {
  const SafeTensor t = convert_f32_tensor(SafeTensor::from_f32({1}, {f}), dtype);
  EXPECT_EQ(t.dtype, dtype);
  return static_cast<uint16_t>(t.data[0] | (t.data[1] << 8));
}

SafeTensor every_16_bit_value(const char* dtype) {
  SafeTensor t;
  t.dtype = dtype;
  t.shape = {65536};
  for (uint32_t v = 0; v < 65536; ++v) {
    t.data.push_back(static_cast<uint8_t>(v & 0xFF));
    t.data.push_back(static_cast<uint8_t>(v >> 8));
  }
  return t;
}

}  // namespace

TEST(DtypeConvert, Bf16RoundsToNearestEven) {
  EXPECT_EQ(narrow(1.0f, "BF16"), 0x3F80);
  EXPECT_EQ(narrow(from_bits(0x3F808000), "BF16"), 0x3F80);  // tie, down to even
  EXPECT_EQ(narrow(from_bits(0x3F818000), "BF16"), 0x3F82);  // tie, up to even
  EXPECT_EQ(narrow(from_bits(0x3F808001), "BF16"), 0x3F81);  // above the tie
  EXPECT_EQ(narrow(-2.0f, "BF16"), 0xC000);
  EXPECT_EQ(narrow(from_bits(0x7F7FFFFF), "BF16"), 0x7F80);  // FLT_MAX rounds to infinity
  const uint16_t nan = narrow(std::nanf(""), "BF16");
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
}

TEST(DtypeConvert, F16RoundsToNearestEven) {
  EXPECT_EQ(narrow(1.0f, "F16"), 0x3C00);
  EXPECT_EQ(narrow(1.0f + std::ldexp(1.0f, -11), "F16"), 0x3C00);      // tie, down to even
  EXPECT_EQ(narrow(1.0f + 3 * std::ldexp(1.0f, -11), "F16"), 0x3C02);  // tie, up to even
  EXPECT_EQ(narrow(-2.0f, "F16"), 0xC000);
  EXPECT_EQ(narrow(65504.0f, "F16"), 0x7BFF);  // the largest f16
  EXPECT_EQ(narrow(65519.0f, "F16"), 0x7BFF);
  EXPECT_EQ(narrow(65520.0f, "F16"), 0x7C00);  // the tie above it goes to infinity
  EXPECT_EQ(narrow(INFINITY, "F16"), 0x7C00);
  EXPECT_EQ(narrow(std::ldexp(1.0f, -14), "F16"), 0x0400);      // smallest normal
  EXPECT_EQ(narrow(std::ldexp(1.0f, -24), "F16"), 0x0001);      // smallest subnormal
  EXPECT_EQ(narrow(std::ldexp(1.0f, -25), "F16"), 0x0000);      // tie, down to even (zero)
  EXPECT_EQ(narrow(3 * std::ldexp(1.0f, -25), "F16"), 0x0002);  // tie, up to even
  EXPECT_EQ(narrow(-std::ldexp(1.0f, -30), "F16"), 0x8000);     // underflow keeps the sign
  EXPECT_EQ(narrow(std::ldexp(1023.5f, -24), "F16"), 0x0400);   // subnormal rounding up into the normals
  const uint16_t nan = narrow(std::nanf(""), "F16");
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(DtypeConvert, EverySixteenBitValueRoundTrips) {
  for (const char* dtype : {"BF16", "F16"}) {
    const SafeTensor all = every_16_bit_value(dtype);
    const SafeTensor wide = widen_to_f32(all, "test");
    const std::vector<float> values = wide.to_f32();
    const SafeTensor back = convert_f32_tensor(wide, dtype);
    for (size_t v = 0; v < 65536; ++v) {
      if (std::isnan(values[v])) continue;  // NaN payloads may be quietened
      ASSERT_EQ(back.data[2 * v] | (back.data[2 * v + 1] << 8), static_cast<int>(v)) << dtype << " value " << v;
    }
  }
}

TEST(DtypeConvert, RefusesOtherDtypes) {
  EXPECT_THROW(convert_f32_tensor(SafeTensor::from_f32({1}, {1.0f}), "F8"), kiln::Error);
  EXPECT_THROW(widen_to_f32(SafeTensor::from_i32({1}, {1}), "tensor x"), kiln::Error);
}
