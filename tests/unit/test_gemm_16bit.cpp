// The cpu backend's bf16/f16 paths against kiln/half.h and a double GEMM:
// - widen_row / narrow_row (F16C where the CPU has it) give kiln/half.h's
//   bits for every 16-bit pattern and for f32 values on rounding ties, in
//   f16's subnormal range, past its largest finite value, inf and NaN;
// - gemm_16bit (operands widened while packed, C accumulated in f32 a block
//   at a time and rounded once) matches the exact product of the stored
//   16-bit operands to within f32 accumulation error plus one rounding to
//   the 16-bit dtype, for every transpose, odd sizes, tiles of C far smaller
//   than C, 1 and 2 threads and both kernel sets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "convert16.h"
#include "gemm.h"
#include "gemm_kernels.h"
#include "kiln/half.h"
#include "thread_pool.h"

namespace {

using kiln::cpu::ThreadPool;
namespace gd = kiln::cpu::gemm_detail;

uint32_t bits(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

float from_bits(uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

float widen(kiln_dtype d, uint16_t h) { return d == KILN_BF16 ? kiln_bf16_to_f32(h) : kiln_f16_to_f32(h); }
uint16_t narrow(kiln_dtype d, float f) { return d == KILN_BF16 ? kiln_f32_to_bf16(f) : kiln_f32_to_f16(f); }

TEST(Convert16, WideningEveryPatternMatchesHalfH) {
  for (kiln_dtype d : {KILN_BF16, KILN_F16}) {
    std::vector<uint16_t> all(65536);
    for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
    std::vector<float> got(all.size());
    kiln::cpu::widen_row(d, all.data(), got.data(), static_cast<int64_t>(all.size()));
    for (uint32_t i = 0; i < 65536; ++i)
      ASSERT_EQ(bits(got[i]), bits(widen(d, all[i]))) << kiln_dtype_name(d) << " pattern " << i;
  }
}

TEST(Convert16, NarrowingMatchesHalfHOnTheEdges) {
  std::vector<float> x;
  // Every 16-bit value and the midpoints on either side of it (ties go to
  // even), widened from both formats so each is a tie or exact in one.
  for (kiln_dtype d : {KILN_BF16, KILN_F16})
    for (uint32_t i = 0; i < 65536; i += 7) {
      const float v = widen(d, static_cast<uint16_t>(i));
      x.push_back(v);
      const uint32_t half_ulp = d == KILN_BF16 ? 0x8000u : 0x1000u;
      x.push_back(from_bits(bits(v) + half_ulp));
      x.push_back(from_bits(bits(v) - half_ulp));
      x.push_back(from_bits(bits(v) + half_ulp + 1));
    }
  // f16's subnormals and the smallest f32 normals, its overflow edge, inf, NaN with payloads.
  for (float v : {5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 8.9406967e-8f, 6.0975552e-5f, 6.1035156e-5f,
                  1.1754944e-38f, 1e-45f, 65504.0f, 65519.99f, 65520.0f, 1e10f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::max()}) {
    x.push_back(v);
    x.push_back(-v);
  }
  for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FA12345u, 0xFFBFFFFFu}) x.push_back(from_bits(nan));
  for (kiln_dtype d : {KILN_BF16, KILN_F16}) {
    std::vector<uint16_t> got(x.size());
    kiln::cpu::narrow_row(d, x.data(), got.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(got[i], narrow(d, x[i])) << kiln_dtype_name(d) << " of f32 bits 0x" << std::hex << bits(x[i])
                                         << (kiln::cpu::f16c_in_use() ? " (F16C)" : " (portable)");
  }
}

struct Case16 {
  bool ta, tb;
  int64_t m, n, k, pad_c, tile;
};

void check_gemm(const gd::KernelSet& ks, ThreadPool& pool, kiln_dtype d, const Case16& r, uint32_t seed) {
  const int64_t lda = r.ta ? r.m : r.k, ldb = r.tb ? r.k : r.n, ldc = r.n + r.pad_c;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint16_t> a(static_cast<size_t>(r.m * r.k)), b(static_cast<size_t>(r.k * r.n));
  std::vector<uint16_t> c(static_cast<size_t>(r.m * ldc), 0x7FC0);  // NaN in either dtype's eyes: must be overwritten
  for (uint16_t& v : a) v = narrow(d, u(rng));
  for (uint16_t& v : b) v = narrow(d, u(rng));
  const std::vector<uint16_t> c0 = c;
  std::vector<float> tile(static_cast<size_t>(r.tile));
  gd::gemm_16bit_with(ks, d, r.ta, r.tb, r.m, r.n, r.k, a.data(), lda, b.data(), ldb, c.data(), ldc, tile.data(),
                      r.tile, pool);
  const double unit = std::ldexp(1.0, -24), rounding = d == KILN_BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  const std::string what = std::string(ks.name) + " " + kiln_dtype_name(d) + " threads=" + std::to_string(pool.size()) +
                           " ta=" + std::to_string(r.ta) + " tb=" + std::to_string(r.tb) + " m=" + std::to_string(r.m) +
                           " n=" + std::to_string(r.n) + " k=" + std::to_string(r.k) +
                           " tile=" + std::to_string(r.tile);
  for (int64_t i = 0; i < r.m; ++i) {
    for (int64_t j = 0; j < r.n; ++j) {
      double dot = 0, mag = 0;
      for (int64_t p = 0; p < r.k; ++p) {
        const double x = widen(d, r.ta ? a[p * lda + i] : a[i * lda + p]);
        const double y = widen(d, r.tb ? b[j * ldb + p] : b[p * ldb + j]);
        dot += x * y;
        mag += std::fabs(x * y);
      }
      const double got = widen(d, c[i * ldc + j]);
      const double bound = 2.0 * (r.k + 3) * unit * mag * (1 + rounding) + rounding * std::fabs(dot) + 1e-30;
      ASSERT_LE(std::fabs(got - dot), bound) << what << ": C(" << i << "," << j << ") = " << got << ", want " << dot;
    }
    for (int64_t j = r.n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]) << what << ": wrote C padding";
  }
}

std::vector<const gd::KernelSet*> kernel_sets() {
  std::vector<const gd::KernelSet*> sets{&gd::active_kernel_set()};
  if (&gd::active_kernel_set() != &gd::scalar_kernel_set()) sets.push_back(&gd::scalar_kernel_set());
  return sets;
}

TEST(Gemm16bit, MatchesTheExactProductOfTheStoredOperands) {
  const std::vector<Case16> cases = {
      {false, false, 1, 1, 1, 0, 1},     {false, false, 7, 17, 5, 3, 1 << 20}, {true, false, 13, 33, 70, 0, 1 << 20},
      {false, true, 29, 19, 31, 2, 64},  {true, true, 6, 16, 9, 0, 40},        {false, false, 50, 300, 40, 5, 1000},
      {true, true, 97, 41, 800, 1, 500}, {false, true, 64, 64, 1030, 0, 4096}, {true, false, 2, 600, 3, 0, 600},
  };
  uint32_t seed = 1;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (const gd::KernelSet* ks : kernel_sets())
      for (kiln_dtype d : {KILN_BF16, KILN_F16})
        for (const Case16& r : cases) check_gemm(*ks, pool, d, r, seed++);
  }
}

TEST(Gemm16bit, EmptyKGivesZeros) {
  ThreadPool pool(1);
  std::vector<uint16_t> c(12, 0x3F80);
  std::vector<float> tile(12);
  gd::gemm_16bit_with(gd::active_kernel_set(), KILN_BF16, false, false, 3, 4, 0, nullptr, 0, nullptr, 4, c.data(), 4,
                      tile.data(), 12, pool);
  for (uint16_t v : c) EXPECT_EQ(v, 0u);
}

}  // namespace
