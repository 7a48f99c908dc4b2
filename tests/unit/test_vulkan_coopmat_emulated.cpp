// gemm_coopmat.comp's emulated build (KILN_VULKAN_GEMM=coopmat-emulated:
// the tensor-core shader's tiling, staging and write-out with the fragment
// operations in plain arithmetic) on the Vulkan device here, lavapipe in CI.
// What check-backend's f16 matmul cases cannot reach: f16 operands into an
// f32 C (an --fp16 weight gradient, its widening CASTs folded into the
// GEMM's loads) split into K chunks that accumulate into C, under 64 KiB
// binding windows. And the fingerprint: an executable compiled under one
// KILN_VULKAN_GEMM must not be served from the compile cache under another.
// Skipped, saying why, without a Vulkan device with 16-bit storage.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/compiled_graph.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"
#include "graph/serialize.h"
#include "kiln/half.h"
#include "scoped_env.h"
#include "shared_device.h"

namespace kiln::graph {
namespace {

struct Product {
  int64_t m, n, k;
  bool ta, tb;
};

// C = op(cast(A)) @ op(cast(B)), A and B 16-bit (`dt`), C f32.
Graph widened_product(const Product& p, kiln_dtype dt) {
  Graph g;
  const ValueId a = g.input("a", dt, p.ta ? std::vector<int64_t>{p.k, p.m} : std::vector<int64_t>{p.m, p.k});
  const ValueId b = g.input("b", dt, p.tb ? std::vector<int64_t>{p.n, p.k} : std::vector<int64_t>{p.k, p.n});
  g.output("c", g.matmul(g.cast(a, KILN_F32), g.cast(b, KILN_F32), p.ta, p.tb));
  return g;
}

std::vector<uint8_t> compile_bytes(Device& device, const Graph& graph) {
  Graph g = eliminate_dead_code(graph);
  const MemoryPlan plan = plan_memory(g);
  return device.plugin().compile(serialize(g, plan), device.index());
}

bool holds(const std::vector<uint8_t>& bytes, const std::string& text) {
  return std::search(bytes.begin(), bytes.end(), text.begin(), text.end()) != bytes.end();
}

// An operand's values as stored: row-major [rows][cols], element (r, c)
// uniform in [-2, 2) times 2^exponent(k), k the inner index (r or c).
template <class Exponent>
std::vector<uint16_t> operand(kiln_dtype dt, int64_t rows, int64_t cols, bool k_is_row, uint32_t seed,
                              Exponent exponent) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint16_t> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float x = std::ldexp(u(gen), exponent(k_is_row ? r : c));
      v[static_cast<size_t>(r * cols + c)] = dt == KILN_F16 ? kiln_f32_to_f16(x) : kiln_f32_to_bf16(x);
    }
  return v;
}

// Runs C = op(A) @ op(B) on the emulated tensor-core shader in 64 KiB
// windows (16384 elements: B's 1500 rows of 45 come in K chunks of 364, A
// transposed its 1500 rows of 70 in chunks of 234, every chunk after the
// first adding into C; with only B transposed K stays whole and m and n
// come in bands of 10 rows) and returns the largest error relative to the
// sum of |terms|, against sums in double. Products of 16-bit values are
// exact in f32, so only the f32 sums' rounding is allowed: within K ulps.
template <class ExpA, class ExpB>
double worst_error(Device& device, const Product& p, kiln_dtype dt, ExpA exp_a, ExpB exp_b) {
  const Graph g = widened_product(p, dt);
  // The executable names the shaders it runs: the emulated tensor-core
  // one, in 128 x 128 tiles where C fills one.
  const bool large = p.m >= 128 && p.n >= 128;
  EXPECT_TRUE(holds(compile_bytes(device, g), large ? "gemm_coopmat_large_emulated16" : "gemm_coopmat_emulated16"));
  CompiledGraph exe(device, g);
  // A is [m][k] or [k][m] (transposed), B [k][n] or [n][k].
  const std::vector<uint16_t> a = p.ta ? operand(dt, p.k, p.m, true, 1, exp_a) : operand(dt, p.m, p.k, false, 1, exp_a);
  const std::vector<uint16_t> b = p.tb ? operand(dt, p.n, p.k, false, 2, exp_b) : operand(dt, p.k, p.n, true, 2, exp_b);
  exe.buffer("a")->write(a.data(), a.size() * 2);
  exe.buffer("b")->write(b.data(), b.size() * 2);
  exe.run();
  std::vector<float> c(static_cast<size_t>(p.m * p.n));
  exe.buffer("c")->read(c.data(), c.size() * 4);
  auto widen = [dt](uint16_t h) -> double { return dt == KILN_F16 ? kiln_f16_to_f32(h) : kiln_bf16_to_f32(h); };
  double worst = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        const double x = widen(a[static_cast<size_t>(p.ta ? k * p.m + i : i * p.k + k)]);
        const double y = widen(b[static_cast<size_t>(p.tb ? j * p.k + k : k * p.n + j)]);
        ref += x * y;
        mag += std::fabs(x * y);
      }
      const double error = std::fabs(c[static_cast<size_t>(i * p.n + j)] - ref) / mag;
      worst = std::max(worst, std::isnan(error) ? INFINITY : error);  // a NaN C (inf - inf) fails too
    }
  return worst;
}

const Product kProducts[] = {
    {70, 45, 1500, false, false}, {70, 45, 1500, true, false}, {70, 45, 1500, false, true}, {70, 45, 1500, true, true}};

std::string trace(const Product& p) {
  return std::string("trans_a ") + (p.ta ? "1" : "0") + " trans_b " + (p.tb ? "1" : "0");
}

TEST(VulkanCoopmatEmulated, KChunkedF16ProductsAccumulateIntoF32) {
  std::string why;
  Device* device = test::vulkan_with_16bit_storage(&why);
  if (device == nullptr) GTEST_SKIP() << why;
  const test::ScopedEnv gemm("KILN_VULKAN_GEMM", "coopmat-emulated");
  const test::ScopedEnv windows("KILN_VULKAN_MAX_BINDING_BYTES", "65536");
  // (Checked: writing C without the += fails three of the four.)
  auto unit = [](int64_t) { return 0; };
  for (const Product& p : kProducts) {
    SCOPED_TRACE(trace(p));
    EXPECT_LT(worst_error(*device, p, KILN_F16, unit, unit), 1e-5) << "largest error relative to the sum of |terms|";
  }
}

// bf16 has f32's exponents; f16 fragments hold 2^-24 to 65504. The shader
// scales each 32-deep slice of a bf16 operand by a power of two (see
// gemm_coopmat.comp), so these products come out as exact as f16's: A's
// magnitudes step from 2^-60 up to 2^-20 along K and start again, every
// 32-deep slice another unit for the accumulators, against B's 2^70 (past
// f16's range); then A's 2^-90 (below it) against B stepping from 2^20 to
// 2^60. (Checked: staging without the scale fails
// every case; rescaling no accumulators when a slice's unit changes fails
// the stepped ones; and so does leaving C in the last slice's unit.)
TEST(VulkanCoopmatEmulated, BF16ProductsOfAnyScaleSumAsExactlyAsF16Ones) {
  std::string why;
  Device* device = test::vulkan_with_16bit_storage(&why);
  if (device == nullptr) GTEST_SKIP() << why;
  const test::ScopedEnv gemm("KILN_VULKAN_GEMM", "coopmat-emulated");
  const test::ScopedEnv windows("KILN_VULKAN_MAX_BINDING_BYTES", "65536");
  auto stepped = [](int64_t k) { return static_cast<int>((k / 32) % 9) * 5; };
  auto small_steps = [&](int64_t k) { return stepped(k) - 60; };
  auto large_steps = [&](int64_t k) { return stepped(k) + 20; };
  auto huge = [](int64_t) { return 70; };
  auto tiny = [](int64_t) { return -90; };
  // Attention's probabilities: slices of ordinary values, then of zeros
  // (the causal mask) and of values near bf16's smallest normal (exp far
  // below the row's max). Their slice scales would be 2^126; raising the
  // accumulators' unit to theirs overflowed what the ordinary slices had
  // summed (inf, then NaN: the unfused attention chain's P.V under --bf16).
  auto masked = [](int64_t k) { return std::array<int, 3>{0, -200, -120}[(k / 32) % 3]; };
  auto unit = [](int64_t) { return 0; };
  for (const Product& p : kProducts) {
    SCOPED_TRACE(trace(p));
    EXPECT_LT(worst_error(*device, p, KILN_BF16, small_steps, huge), 1e-5);
    EXPECT_LT(worst_error(*device, p, KILN_BF16, tiny, large_steps), 1e-5);
    EXPECT_LT(worst_error(*device, p, KILN_BF16, masked, unit), 1e-5);
  }
}

// Products in 128 x 128 tiles (gemm_coopmat_large), in one window each:
// every row stride a multiple of 8, so the slices come in 16-byte loads,
// and C's second tile is ragged both ways, as is K's last slice (8 deep).
// Each layout once (a pipeline compiles for seconds on lavapipe): f16 with
// both or neither operand transposed, bf16 stepping through scales with
// one. The 70 x 45 products above load element by element. (Checked:
// A's 16-byte loads from the next row fail every case here and none above;
// so do B's.)
TEST(VulkanCoopmatEmulated, LargeTilesWithSixteenByteLoads) {
  std::string why;
  Device* device = test::vulkan_with_16bit_storage(&why);
  if (device == nullptr) GTEST_SKIP() << why;
  const test::ScopedEnv gemm("KILN_VULKAN_GEMM", "coopmat-emulated");
  auto unit = [](int64_t) { return 0; };
  auto stepped = [](int64_t k) { return static_cast<int>((k / 32) % 9) * 5 - 60; };
  auto huge = [](int64_t) { return 70; };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const Product p{136, 144, 520, ta, tb};
      SCOPED_TRACE(trace(p));
      if (ta == tb)
        EXPECT_LT(worst_error(*device, p, KILN_F16, unit, unit), 1e-5);
      else
        EXPECT_LT(worst_error(*device, p, KILN_BF16, stepped, huge), 1e-5);
    }
}

TEST(VulkanCoopmatEmulated, TheGemmChoiceIsPartOfTheFingerprint) {
  std::string why;
  Device* device = test::vulkan_with_16bit_storage(&why);
  if (device == nullptr) GTEST_SKIP() << why;
  auto fingerprint = [&](const char* gemm) {
    const test::ScopedEnv env("KILN_VULKAN_GEMM", gemm);
    return std::string(device->plugin().device_properties(device->index()).fingerprint);
  };
  const std::string plain = fingerprint(nullptr);
  const std::string emulated = fingerprint("coopmat-emulated"), tiled = fingerprint("tiled");
  EXPECT_NE(plain, emulated);
  EXPECT_NE(plain, tiled);
  EXPECT_NE(emulated, tiled);
  EXPECT_EQ(plain, fingerprint(nullptr));
}

}  // namespace
}  // namespace kiln::graph
