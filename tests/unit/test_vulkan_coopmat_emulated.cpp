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

// Sets (or, given nullptr, unsets) an environment variable for its scope,
// restoring the old value.
std::vector<uint16_t> random_f16(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint16_t> v(n);
  for (uint16_t& h : v) h = kiln_f32_to_f16(u(gen));
  return v;
}

struct Product {
  int64_t m, n, k;
  bool ta, tb;
};

// C = op(cast(A)) @ op(cast(B)), A and B f16, C f32.
Graph widened_product(const Product& p) {
  Graph g;
  const ValueId a = g.input("a", KILN_F16, p.ta ? std::vector<int64_t>{p.k, p.m} : std::vector<int64_t>{p.m, p.k});
  const ValueId b = g.input("b", KILN_F16, p.tb ? std::vector<int64_t>{p.n, p.k} : std::vector<int64_t>{p.k, p.n});
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

TEST(VulkanCoopmatEmulated, KChunkedF16ProductsAccumulateIntoF32) {
  std::string why;
  Device* device = test::vulkan_with_16bit_storage(&why);
  if (device == nullptr) GTEST_SKIP() << why;
  const test::ScopedEnv gemm("KILN_VULKAN_GEMM", "coopmat-emulated");
  // 16384-element windows: B's 1500 rows of 45 come in K chunks of 364
  // (A transposed, its 1500 rows of 70 in chunks of 234), every chunk after
  // the first adding into C; with only B transposed K stays whole and m and
  // n come in bands of 10 rows. (Checked: writing C without the += fails
  // three of the four.)
  const test::ScopedEnv windows("KILN_VULKAN_MAX_BINDING_BYTES", "65536");
  for (const Product& p : {Product{70, 45, 1500, false, false}, Product{70, 45, 1500, true, false},
                           Product{70, 45, 1500, false, true}, Product{70, 45, 1500, true, true}}) {
    SCOPED_TRACE(std::string("trans_a ") + (p.ta ? "1" : "0") + " trans_b " + (p.tb ? "1" : "0"));
    const Graph g = widened_product(p);
    // The executable names the shaders it runs: the emulated tensor-core one.
    EXPECT_TRUE(holds(compile_bytes(*device, g), "gemm_coopmat_emulated16"));
    CompiledGraph exe(*device, g);
    const std::vector<uint16_t> a = random_f16(static_cast<size_t>(p.m * p.k), 1), b = random_f16(p.k * p.n, 2);
    exe.buffer("a")->write(a.data(), a.size() * 2);
    exe.buffer("b")->write(b.data(), b.size() * 2);
    exe.run();
    std::vector<float> c(static_cast<size_t>(p.m * p.n));
    exe.buffer("c")->read(c.data(), c.size() * 4);
    // Products of f16 values are exact in f32, so the only error is the
    // f32 sums' rounding: within K ulps of the sum of |terms|, far below.
    double worst = 0;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          const double x = kiln_f16_to_f32(a[static_cast<size_t>(p.ta ? k * p.m + i : i * p.k + k)]);
          const double y = kiln_f16_to_f32(b[static_cast<size_t>(p.tb ? j * p.k + k : k * p.n + j)]);
          ref += x * y;
          mag += std::fabs(x * y);
        }
        worst = std::max(worst, std::fabs(c[static_cast<size_t>(i * p.n + j)] - ref) / mag);
      }
    EXPECT_LT(worst, 1e-5) << "largest error relative to the sum of |terms|";
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
