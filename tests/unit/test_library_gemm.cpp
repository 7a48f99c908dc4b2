// The cpu backend's oneDNN GEMM (library_gemm.h) and its per-shape choice
// (gemm_choice.h), against a double-precision product of the stored
// operands:
// - f32 and bf16, every transpose, sizes that leave remainder blocks in both
//   dimensions, on this machine's highest ISA path;
// - results are bitwise the same with 1, 2 and 3 threads (the fixed block
//   grid: the data-parallel equality rests on it);
// - the policies: kiln never measures or picks the library, library picks
//   it wherever oneDNN has an implementation, batched products stay on kiln;
// - KILN_CPU_ISA parsing and its refusals.
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gemm_choice.h"
#include "isa.h"
#include "kiln/half.h"
#include "library_gemm.h"
#include "scoped_env.h"
#include "thread_pool.h"

namespace {

using kiln::cpu::CpuIsa;
using kiln::cpu::GemmShape;
using kiln::cpu::LibraryGemm;
using kiln::cpu::ThreadPool;

struct Problem {
  GemmShape s;
  std::vector<float> a, b;         // the values as stored (already rounded for 16-bit)
  std::vector<uint16_t> a16, b16;  // 16-bit storage
};

Problem make_problem(const GemmShape& s, uint32_t seed) {
  Problem p{s, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  p.a.resize(static_cast<size_t>(s.m * s.k));
  p.b.resize(static_cast<size_t>(s.k * s.n));
  for (float& v : p.a) v = dist(rng);
  for (float& v : p.b) v = dist(rng);
  if (s.dtype == KILN_BF16) {
    for (float& v : p.a) p.a16.push_back(kiln_f32_to_bf16(v)), v = kiln_bf16_to_f32(p.a16.back());
    for (float& v : p.b) p.b16.push_back(kiln_f32_to_bf16(v)), v = kiln_bf16_to_f32(p.b16.back());
  }
  return p;
}

// op(A)(i, p) and op(B)(p, j) as stored, in double.
std::vector<double> reference(const Problem& p) {
  const GemmShape& s = p.s;
  std::vector<double> c(static_cast<size_t>(s.m * s.n), 0.0);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t q = 0; q < s.k; ++q) {
      const double av = p.a[static_cast<size_t>(s.trans_a ? q * s.m + i : i * s.k + q)];
      for (int64_t j = 0; j < s.n; ++j)
        c[static_cast<size_t>(i * s.n + j)] += av * p.b[static_cast<size_t>(s.trans_b ? j * s.k + q : q * s.n + j)];
    }
  return c;
}

// C from the library as f32 values, on `threads` threads.
std::vector<float> run(const LibraryGemm& lib, const Problem& p, int threads) {
  ThreadPool pool(threads);
  const auto count = static_cast<size_t>(p.s.m * p.s.n);
  std::vector<float> c(count, std::nanf(""));
  if (p.s.dtype == KILN_F32) {
    lib.run(p.a.data(), p.b.data(), c.data(), pool);
    return c;
  }
  std::vector<uint16_t> c16(count, 0xFFFF);
  lib.run(p.a16.data(), p.b16.data(), c16.data(), pool);
  for (size_t i = 0; i < count; ++i) c[i] = kiln_bf16_to_f32(c16[i]);
  return c;
}

class LibraryGemmTest : public ::testing::TestWithParam<kiln_dtype> {};

// oneDNN's instruction limit is process-wide and fixed by the first device
// that uses it (library_gemm.cpp). When an earlier test in this process
// (the asan preset runs the unit tests as shards) opened a device on the
// AVX2 path, the limit excludes AVX512-BF16 and bf16 has no matmul here.
bool library_limited_below_bf16(CpuIsa isa) {
  if (isa != CpuIsa::kAvx512 && isa != CpuIsa::kAmx) return false;
  const auto want = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & want) != want;
}

TEST_P(LibraryGemmTest, MatchesTheExactProductAndIsTheSameOnAnyThreadCount) {
  const CpuIsa isa = kiln::cpu::detected_isa();
  if (isa == CpuIsa::kBaseline) GTEST_SKIP() << "this CPU has no AVX2: the baseline path uses no library";
  const kiln_dtype dtype = GetParam();
  // 600 x 560: two uneven row blocks (304, 296) and two uneven column blocks
  // (288, 272) of C.
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const auto& mnk : {std::vector<int64_t>{600, 560, 65}, {7, 5, 3}, {64, 1030, 513}}) {
        const GemmShape s{dtype, ta, tb, mnk[0], mnk[1], mnk[2]};
        std::string why;
        auto lib = LibraryGemm::create(s, isa, &why);
        if (lib == nullptr && dtype != KILN_F32 && library_limited_below_bf16(isa))
          GTEST_SKIP() << "oneDNN's instruction limit in this process was fixed below AVX512-BF16 by an earlier "
                          "device on a lower path; in a process of its own (ctest's default) this test runs";
        if (lib == nullptr && dtype != KILN_F32 && isa == CpuIsa::kAvx2)
          GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU's AVX2 path (" << why
                       << "): the cpu backend runs bf16 GEMMs on its own kernels here";
        ASSERT_NE(lib, nullptr) << why;
        const Problem p = make_problem(s, static_cast<uint32_t>(s.m + s.n + s.k + ta * 2 + tb));
        const std::vector<double> want = reference(p);
        const std::vector<float> one = run(*lib, p, 1);
        // f32: accumulation error; bf16: that plus one rounding of C.
        const double rel = dtype == KILN_F32 ? 2e-6 * std::sqrt(static_cast<double>(s.k)) : 1.0 / 256;
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(one[i], want[i], rel * (1.0 + std::fabs(want[i])))
              << kiln_dtype_name(dtype) << " ta=" << ta << " tb=" << tb << " " << s.m << "x" << s.n << "x" << s.k
              << " element " << i << " (" << lib->implementation() << ")";
        for (int threads : {2, 3}) {
          const std::vector<float> many = run(*lib, p, threads);
          ASSERT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
              << threads << " threads differ from 1, " << s.m << "x" << s.n << "x" << s.k;
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LibraryGemmTest, ::testing::Values(KILN_F32, KILN_BF16),
                         [](const ::testing::TestParamInfo<kiln_dtype>& i) { return kiln_dtype_name(i.param); });

TEST(LibraryGemm, BaselinePathUsesNoLibrary) {
  std::string why;
  EXPECT_EQ(LibraryGemm::create({KILN_F32, false, false, 64, 64, 64}, CpuIsa::kBaseline, &why), nullptr);
  EXPECT_NE(why.find("baseline"), std::string::npos) << why;
}

TEST(GemmChoice, PoliciesDecideWithoutMeasuringWhereTheySay) {
  const CpuIsa isa = kiln::cpu::detected_isa();
  // bf16 where oneDNN has a bf16 matmul on this path (not on AVX2), else f32.
  GemmShape s{KILN_BF16, false, true, 256, 256, 256};
  std::string why;
  if (isa == CpuIsa::kAvx2 && LibraryGemm::create(s, isa, &why) == nullptr) s.dtype = KILN_F32;
  const kiln::cpu::GemmDecision kiln = kiln::cpu::choose_gemm(s, 1, isa, kiln::cpu::GemmPolicy::kKiln);
  EXPECT_EQ(kiln.kernel, kiln::cpu::GemmKernel::kKiln);
  EXPECT_EQ(kiln.kiln_seconds, 0.0);
  const kiln::cpu::GemmDecision batched = kiln::cpu::choose_gemm(s, 8, isa, kiln::cpu::GemmPolicy::kLibrary);
  EXPECT_EQ(batched.kernel, kiln::cpu::GemmKernel::kKiln);
  EXPECT_FALSE(batched.why.empty());
  if (isa == CpuIsa::kBaseline) return;
  const kiln::cpu::GemmDecision lib = kiln::cpu::choose_gemm(s, 1, isa, kiln::cpu::GemmPolicy::kLibrary);
  EXPECT_EQ(lib.kernel, kiln::cpu::GemmKernel::kLibrary) << lib.why;
  // Measured: both timed, and the faster (by the margin) is the choice.
  const kiln::cpu::GemmDecision m = kiln::cpu::choose_gemm(s, 1, isa, kiln::cpu::GemmPolicy::kMeasure);
  ASSERT_GT(m.kiln_seconds, 0.0);
  ASSERT_GT(m.library_seconds, 0.0);
  EXPECT_EQ(m.kernel == kiln::cpu::GemmKernel::kLibrary,
            m.library_seconds * kiln::cpu::kLibraryMargin <= m.kiln_seconds);
}

TEST(CpuIsa, ForcedPathsAndTheirRefusals) {
  for (CpuIsa i : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAmx}) {
    CpuIsa back = CpuIsa::kBaseline;
    ASSERT_TRUE(kiln::cpu::parse_isa(kiln::cpu::isa_name(i), &back));
    EXPECT_EQ(back, i);
  }
  kiln::test::ScopedEnv no_legacy("KILN_CPU_DISABLE_AVX2", nullptr);
  {
    kiln::test::ScopedEnv e("KILN_CPU_ISA", nullptr);
    EXPECT_EQ(kiln::cpu::chosen_isa().isa, kiln::cpu::detected_isa());
  }
  {
    kiln::test::ScopedEnv e("KILN_CPU_ISA", "baseline");
    const kiln::cpu::IsaChoice c = kiln::cpu::chosen_isa();
    EXPECT_TRUE(c.error.empty()) << c.error;
    EXPECT_EQ(c.isa, CpuIsa::kBaseline);
  }
  {
    kiln::test::ScopedEnv e("KILN_CPU_ISA", "sse9");
    EXPECT_NE(kiln::cpu::chosen_isa().error.find("use baseline, avx2, avx512 or amx"), std::string::npos);
  }
  if (kiln::cpu::detected_isa() != CpuIsa::kAmx) {
    kiln::test::ScopedEnv e("KILN_CPU_ISA", "amx");
    const std::string err = kiln::cpu::chosen_isa().error;
    EXPECT_NE(err.find("this CPU runs at most the " + std::string(kiln::cpu::isa_name(kiln::cpu::detected_isa()))),
              std::string::npos)
        << err;
  }
  {
    kiln::test::ScopedEnv e("KILN_CPU_DISABLE_AVX2", "1");
    EXPECT_EQ(kiln::cpu::chosen_isa().isa, CpuIsa::kBaseline);
  }
}

}  // namespace
