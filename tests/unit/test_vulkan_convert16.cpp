// The Vulkan plugin's bf16/f16 conversions (backends/vulkan/shaders/
// half.glsl, which every 16-bit load and store on that backend goes
// through; here as CASTs, copy2d's converting copies) against kiln/half.h,
// the reference's, bit for bit: narrowing every bf16
// value, the ties around it and the values just beside them, the same for
// f16 (subnormal ties included), plus random f32 patterns (NaN, infinities, subnormals included);
// widening every one of the 65536 patterns of each dtype; bf16 -> f16.
// Skipped, saying why, without a Vulkan device.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/compiled_graph.h"
#include "graph/graph.h"
#include "kiln/half.h"
#include "shared_device.h"

namespace kiln::graph {
namespace {

Device* vulkan_device(std::string* why) { return test::shared_device("vulkan", why); }

// f32 bit patterns where rounding to bf16 or f16 can go wrong.
std::vector<uint32_t> narrowing_inputs() {
  std::vector<uint32_t> bits;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t b = h << 16;                                                         // a bf16 value: kept exactly
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u}) bits.push_back(b | low);  // below, on, above a tie
    uint32_t f;
    const float widened = kiln_f16_to_f32(static_cast<uint16_t>(h));
    std::memcpy(&f, &widened, 4);
    // For normal f16 values, 13 mantissa bits are dropped: 0x1000 is a tie.
    for (uint32_t delta : {0u, 0xFFFu, 0x1000u, 0x1001u}) bits.push_back(f + delta);
    // For zero and subnormal f16 values the unit is 2^-24: halfway to the
    // next is (n + 1/2) * 2^-24, exact in f32, and the f32 values beside it.
    const uint32_t em = h & 0x7FFFu;
    if (em < 0x0400u) {
      const float tie = (static_cast<float>(em) + 0.5f) * 5.9604644775390625e-8f;
      uint32_t t;
      std::memcpy(&t, &tie, 4);
      t |= (h & 0x8000u) << 16;
      for (uint32_t v : {t - 1u, t, t + 1u}) bits.push_back(v);
    }
  }
  std::mt19937 gen(16);
  for (int i = 0; i < 65536; ++i) bits.push_back(static_cast<uint32_t>(gen()));
  return bits;
}

TEST(VulkanConvert16, CastsMatchKilnHalfBitForBit) {
  std::string why;
  Device* device = vulkan_device(&why);
  if (device == nullptr) GTEST_SKIP() << "no Vulkan device: " << why;
  if ((device->properties().low_precision & KILN_LOWP_16BIT_STORAGE) == 0)
    GTEST_SKIP() << "the Vulkan device has no 16-bit storage";

  const std::vector<uint32_t> x = narrowing_inputs();
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);

  Graph g;
  const ValueId xf = g.input("x", KILN_F32, {n});
  const ValueId b = g.input("b", KILN_BF16, {65536}), h = g.input("h", KILN_F16, {65536});
  g.output("to_bf16", g.cast(xf, KILN_BF16));
  g.output("to_f16", g.cast(xf, KILN_F16));
  g.output("from_bf16", g.cast(b, KILN_F32));
  g.output("from_f16", g.cast(h, KILN_F32));
  g.output("bf16_to_f16", g.cast(b, KILN_F16));
  CompiledGraph exe(*device, g);
  exe.buffer("x")->write(x.data(), x.size() * 4);
  exe.buffer("b")->write(all.data(), all.size() * 2);
  exe.buffer("h")->write(all.data(), all.size() * 2);
  exe.run();

  auto read16 = [&](const char* port, size_t count) {
    std::vector<uint16_t> v(count);
    exe.buffer(port)->read(v.data(), count * 2);
    return v;
  };
  auto read32 = [&](const char* port) {
    std::vector<uint32_t> v(65536);
    exe.buffer(port)->read(v.data(), v.size() * 4);
    return v;
  };
  auto f32_of = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  auto bits_of = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };

  const std::vector<uint16_t> to_bf16 = read16("to_bf16", x.size()), to_f16 = read16("to_f16", x.size());
  int bad = 0;
  for (size_t i = 0; i < x.size() && bad < 8; ++i) {
    const uint16_t want_b = kiln_f32_to_bf16(f32_of(x[i])), want_h = kiln_f32_to_f16(f32_of(x[i]));
    if (to_bf16[i] != want_b || to_f16[i] != want_h) {
      ++bad;
      ADD_FAILURE() << std::hex << "f32 0x" << x[i] << ": bf16 0x" << to_bf16[i] << " (want 0x" << want_b << "), f16 0x"
                    << to_f16[i] << " (want 0x" << want_h << ")";
    }
  }
  const std::vector<uint32_t> from_bf16 = read32("from_bf16"), from_f16 = read32("from_f16");
  const std::vector<uint16_t> bf16_to_f16 = read16("bf16_to_f16", 65536);
  for (uint32_t p = 0; p < 65536 && bad < 8; ++p) {
    const auto h16 = static_cast<uint16_t>(p);
    const uint32_t want_b = bits_of(kiln_bf16_to_f32(h16)), want_h = bits_of(kiln_f16_to_f32(h16));
    const uint16_t want_bh = kiln_f32_to_f16(kiln_bf16_to_f32(h16));
    if (from_bf16[p] != want_b || from_f16[p] != want_h || bf16_to_f16[p] != want_bh) {
      ++bad;
      ADD_FAILURE() << std::hex << "pattern 0x" << p << ": bf16 -> f32 0x" << from_bf16[p] << " (want 0x" << want_b
                    << "), f16 -> f32 0x" << from_f16[p] << " (want 0x" << want_h << "), bf16 -> f16 0x"
                    << bf16_to_f16[p] << " (want 0x" << want_bh << ")";
    }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace kiln::graph
