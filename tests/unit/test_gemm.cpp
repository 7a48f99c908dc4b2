// kiln::cpu::sgemm against a naive double-precision GEMM: every transpose
// combination, odd sizes on and across the kernel's tile and cache-block
// edges, alpha/beta variants, padded leading dimensions, 1 and 2 threads,
// and both kernel sets the machine can run (AVX2/FMA and the portable one).
//
// Accuracy: fp32 accumulation of k products has a worst-case error per
// element of about gamma_k * sum_p |a_ip b_pj| with gamma_k ~ k * 2^-24
// (Higham, Accuracy and Stability of Numerical Algorithms, 3.5). Each element
// is checked against that bound (with 2x margin and the alpha/beta roundings
// added), which any wrong index or missed term exceeds; the matrix as a whole
// must also have NMSE <= 1e-10 * k (typical NMSE is ~k * 2^-48 ~ 4e-15 * k).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gemm.h"
#include "gemm_kernels.h"
#include "thread_pool.h"

namespace {

using kiln::cpu::ThreadPool;
namespace gd = kiln::cpu::gemm_detail;

struct Shape {
  int64_t m, n, k;
};

struct GemmCase {
  bool ta, tb;
  Shape s;
  float alpha, beta;
  int64_t pad_a, pad_b, pad_c;  // extra row stride beyond the minimum
};

std::string describe(const GemmCase& r) {
  return "trans_a=" + std::to_string(r.ta) + " trans_b=" + std::to_string(r.tb) + " m=" + std::to_string(r.s.m) +
         " n=" + std::to_string(r.s.n) + " k=" + std::to_string(r.s.k) + " alpha=" + std::to_string(r.alpha) +
         " beta=" + std::to_string(r.beta) + " pads=" + std::to_string(r.pad_a) + "," + std::to_string(r.pad_b) + "," +
         std::to_string(r.pad_c);
}

// Runs one case through `ks` on `pool` and checks it; returns false (after
// recording a failure) if wrong.
bool check(const gd::KernelSet& ks, ThreadPool& pool, const GemmCase& r, uint32_t seed) {
  const int64_t m = r.s.m, n = r.s.n, k = r.s.k;
  const int64_t lda = (r.ta ? m : k) + r.pad_a;
  const int64_t ldb = (r.tb ? k : n) + r.pad_b;
  const int64_t ldc = n + r.pad_c;
  const int64_t arows = r.ta ? k : m, brows = r.tb ? n : k;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(std::max<int64_t>(1, arows * lda)));
  std::vector<float> b(static_cast<size_t>(std::max<int64_t>(1, brows * ldb)));
  std::vector<float> c(static_cast<size_t>(std::max<int64_t>(1, m * ldc)));
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  // beta == 0 must overwrite C without reading it: start from NaN there.
  for (float& x : c) x = r.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : u(rng);
  const std::vector<float> c0 = c;

  gd::sgemm_with(ks, r.ta, r.tb, m, n, k, r.alpha, a.data(), lda, b.data(), ldb, r.beta, c.data(), ldc, pool);

  const double unit = std::ldexp(1.0, -24);
  double err2 = 0, ref2 = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = r.ta ? a[p * lda + i] : a[i * lda + p];
        const double y = r.tb ? b[j * ldb + p] : b[p * ldb + j];
        dot += x * y;
        mag += std::fabs(x * y);
      }
      const double prior = r.beta == 0.0f ? 0.0 : static_cast<double>(c0[i * ldc + j]);
      const double want = r.alpha * dot + r.beta * prior;
      const double got = c[i * ldc + j];
      const double bound = 2.0 * (k + 3) * unit * (std::fabs(r.alpha) * mag + std::fabs(r.beta * prior)) + 1e-30;
      if (!(std::fabs(got - want) <= bound)) {
        ADD_FAILURE() << ks.name << " threads=" << pool.size() << " " << describe(r) << ": C(" << i << "," << j
                      << ") = " << got << ", want " << want << " (bound " << bound << ")";
        return false;
      }
      err2 += (got - want) * (got - want);
      ref2 += want * want;
    }
  }
  if (ref2 > 0 && !(err2 <= 1e-10 * static_cast<double>(std::max<int64_t>(k, 1)) * ref2)) {
    ADD_FAILURE() << ks.name << " threads=" << pool.size() << " " << describe(r) << ": NMSE " << err2 / ref2;
    return false;
  }
  // Padding between rows of C must be untouched.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < ldc; ++j) {
      const float before = c0[i * ldc + j], after = c[i * ldc + j];
      if (!(before == after || (std::isnan(before) && std::isnan(after)))) {
        ADD_FAILURE() << ks.name << " " << describe(r) << ": wrote C padding at (" << i << "," << j << ")";
        return false;
      }
    }
  return true;
}

std::vector<const gd::KernelSet*> kernel_sets() {
  std::vector<const gd::KernelSet*> sets{&gd::active_kernel_set()};
  if (&gd::active_kernel_set() != &gd::scalar_kernel_set()) sets.push_back(&gd::scalar_kernel_set());
  return sets;
}

class GemmTest : public ::testing::TestWithParam<int> {};  // param: threads

TEST_P(GemmTest, OddSizesAllTransposes) {
  ThreadPool pool(GetParam());
  const int64_t sizes[] = {1, 2, 3, 7, 17, 33, 65, 129};
  uint32_t seed = 1;
  for (const auto* ks : kernel_sets())
    for (int t = 0; t < 4; ++t)
      for (int64_t m : sizes)
        for (int64_t n : sizes)
          for (int64_t k : {int64_t{1}, int64_t{7}, int64_t{65}}) {
            // Walk the alpha/beta variants across the grid rather than
            // multiplying the run count by them.
            static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, 2.0f}, {-1.5f, 1.0f}, {1.0f, -0.5f}};
            const auto& v = ab[seed % 4];
            const GemmCase r{(t & 1) != 0, (t & 2) != 0, {m, n, k}, v[0], v[1], 0, 0, 0};
            if (!check(*ks, pool, r, seed++)) return;
          }
}

TEST_P(GemmTest, DeepAndPaddedStrides) {
  ThreadPool pool(GetParam());
  const Shape shapes[] = {{33, 129, 17}, {129, 33, 129}, {7, 65, 300}, {65, 7, 513}, {17, 17, 1000}};
  uint32_t seed = 100;
  for (const auto* ks : kernel_sets())
    for (int t = 0; t < 4; ++t)
      for (const Shape& s : shapes) {
        const GemmCase r{(t & 1) != 0, (t & 2) != 0, s, 0.75f, seed % 2 ? 0.0f : 1.25f, 3, 5, 7};
        if (!check(*ks, pool, r, seed++)) return;
      }
}

// Crosses every cache-block boundary (MC = 144, KC = 768, NC = 1024 at the
// time of writing; the driver evens blocks out, so these land on uneven
// splits) and the thread split, with edges in every dimension.
TEST_P(GemmTest, AcrossCacheBlocks) {
  ThreadPool pool(GetParam());
  const Shape shapes[] = {{151, 2085, 9}, {301, 37, 1601}, {29, 1043, 800}};
  uint32_t seed = 200;
  for (int t = 0; t < 4; ++t)
    for (const Shape& s : shapes) {
      const GemmCase r{(t & 1) != 0, (t & 2) != 0, s, 1.0f, t % 2 ? 0.0f : 0.5f, 1, 0, 2};
      if (!check(gd::active_kernel_set(), pool, r, seed++)) return;
    }
}

TEST_P(GemmTest, TrainingShapes) {
  ThreadPool pool(GetParam());
  // Small versions of the three linear-layer layouts and the attention GEMM.
  const GemmCase runs[] = {
      {false, true, {64, 192, 96}, 1.0f, 0.0f, 0, 0, 0},   // y = x W^T
      {false, false, {64, 96, 192}, 1.0f, 0.0f, 0, 0, 0},  // dx = dy W
      {true, false, {192, 96, 64}, 1.0f, 1.0f, 0, 0, 0},   // dW += dy^T x
      {false, true, {64, 64, 64}, 0.125f, 0.0f, 0, 0, 0},  // scores = q k^T / sqrt(d)
  };
  uint32_t seed = 300;
  for (const GemmCase& r : runs)
    if (!check(gd::active_kernel_set(), pool, r, seed++)) return;
}

TEST_P(GemmTest, EmptyAndDegenerate) {
  ThreadPool pool(GetParam());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto* ks : kernel_sets()) {
    // k == 0: C = beta * C; beta == 0 clears even NaN.
    std::vector<float> c(12, nan);
    gd::sgemm_with(*ks, false, false, 3, 4, 0, 1.0f, nullptr, 1, nullptr, 4, 0.0f, c.data(), 4, pool);
    for (float x : c) EXPECT_EQ(x, 0.0f) << ks->name;
    std::vector<float> d(12, 2.0f);
    gd::sgemm_with(*ks, true, true, 3, 4, 0, 1.0f, nullptr, 3, nullptr, 1, 1.5f, d.data(), 4, pool);
    for (float x : d) EXPECT_EQ(x, 3.0f) << ks->name;
    // alpha == 0: A and B are not read.
    std::vector<float> e(6, 4.0f);
    gd::sgemm_with(*ks, false, false, 2, 3, 5, 0.0f, nullptr, 5, nullptr, 3, 0.5f, e.data(), 3, pool);
    for (float x : e) EXPECT_EQ(x, 2.0f) << ks->name;
    // m == 0 or n == 0: nothing touched.
    std::vector<float> f(4, nan);
    gd::sgemm_with(*ks, false, false, 0, 4, 3, 1.0f, nullptr, 3, nullptr, 4, 0.0f, f.data(), 4, pool);
    gd::sgemm_with(*ks, false, false, 1, 0, 3, 1.0f, nullptr, 3, nullptr, 1, 0.0f, f.data(), 4, pool);
    for (float x : f) EXPECT_TRUE(std::isnan(x)) << ks->name;
  }
  // 1x1x1 through the public entry point.
  const float a = 3.0f, b = -2.0f;
  float c = nan;
  kiln::cpu::sgemm(false, false, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1, pool);
  EXPECT_EQ(c, -6.0f);
  c = 1.0f;
  kiln::cpu::sgemm(true, true, 1, 1, 1, 2.0f, &a, 1, &b, 1, 3.0f, &c, 1, pool);
  EXPECT_EQ(c, -9.0f);
}

INSTANTIATE_TEST_SUITE_P(Threads, GemmTest, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "thread";
                         });

}  // namespace
