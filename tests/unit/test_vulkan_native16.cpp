// The Vulkan plugin's native 16-bit shaders (backends/vulkan/shaders/io.glsl:
// bf16/f16 bindings loaded and stored by the op's own shader) against its
// staged path (KILN_VULKAN_STAGE16=1: every 16-bit value widened into an
// f32 copy by convert16.comp, the f32 shader, then rounded back), bit for
// bit (NaN as NaN): both compute in f32 and round once, to nearest even, with the same
// integer conversions, so every output must be identical. The inputs hold
// NaN, infinities and subnormals of each dtype. Covers the elementwise,
// GEMM, norm, softmax, column-sum, permute, concat and cast shaders.
// Skipped, saying why, without a Vulkan device with 16-bit storage.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/compiled_graph.h"
#include "graph/graph.h"
#include "kiln/half.h"
#include "shared_device.h"

namespace kiln::graph {
namespace {

struct Port {
  std::string name;
  int64_t count;
  kiln_dtype dtype;
};

// 16-bit values of dtype dt, mostly in [-4, 4), with specials sprinkled in.
std::vector<uint16_t> values16(kiln_dtype dt, size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  const bool bf = dt == KILN_BF16;
  const std::vector<uint16_t> specials = bf ? std::vector<uint16_t>{0x7FC0, 0xFF80, 0x7F80, 0x0001, 0x8000, 0x7F7F}
                                            : std::vector<uint16_t>{0x7E00, 0xFC00, 0x7C00, 0x0001, 0x8000, 0x7BFF};
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float f = u(gen);
    v[i] = i % 97 == 5 ? specials[(i / 97) % specials.size()] : bf ? kiln_f32_to_bf16(f) : kiln_f32_to_f16(f);
  }
  return v;
}

// A NaN's sign and payload from arithmetic on NaN or inf operands are the
// compiled code's choice (x86 gives a negative default NaN, an operand's NaN
// passes through), which the two pipelines may make differently: NaN is
// compared as NaN, every other value bit for bit.
bool is_nan(kiln_dtype dt, uint32_t bits) {
  if (dt == KILN_F32) return (bits & 0x7FFFFFFFu) > 0x7F800000u;
  if (dt == KILN_BF16) return (bits & 0x7FFFu) > 0x7F80u;
  return (bits & 0x7FFFu) > 0x7C00u;
}

// Every output's bytes after one run of g, lowered natively or staged.
std::vector<std::vector<uint8_t>> run(Device& device, const Graph& g, const std::vector<Port>& inputs,
                                      const std::vector<Port>& outputs, bool staged) {
  if (staged)
    setenv("KILN_VULKAN_STAGE16", "1", 1);
  else
    unsetenv("KILN_VULKAN_STAGE16");
  CompiledGraph exe(device, g);
  unsetenv("KILN_VULKAN_STAGE16");
  uint32_t seed = 1;
  for (const Port& p : inputs) {
    const std::vector<uint16_t> v = values16(p.dtype, static_cast<size_t>(p.count), seed++);
    exe.buffer(p.name)->write(v.data(), v.size() * 2);
  }
  exe.run();
  std::vector<std::vector<uint8_t>> out;
  for (const Port& p : outputs) {
    std::vector<uint8_t> bytes(static_cast<size_t>(p.count) * (p.dtype == KILN_F32 ? 4 : 2));
    exe.buffer(p.name)->read(bytes.data(), bytes.size());
    out.push_back(std::move(bytes));
  }
  return out;
}

// The first element where two outputs of `dt` differ (NaN equal to NaN), or
// their element count.
size_t first_difference(kiln_dtype dt, const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) {
  const size_t width = dt == KILN_F32 ? 4 : 2, count = x.size() / width;
  for (size_t e = 0; e < count; ++e) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, x.data() + e * width, width);
    std::memcpy(&b, y.data() + e * width, width);
    if (a != b && !(is_nan(dt, a) && is_nan(dt, b))) return e;
  }
  return count;
}

// Runs both ways and expects every output bit for bit the same.
void expect_native_matches_staged(Device& device, const Graph& g, const std::vector<Port>& inputs,
                                  const std::vector<Port>& outputs) {
  const auto native = run(device, g, inputs, outputs, false);
  const auto staged = run(device, g, inputs, outputs, true);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const size_t first = first_difference(outputs[i].dtype, native[i], staged[i]);
    EXPECT_EQ(first, static_cast<size_t>(outputs[i].count))
        << outputs[i].name << ": native and staged differ from element " << first;
  }
}

TEST(VulkanNative16, ShadersMatchTheStagedPathBitForBit) {
  std::string why;
  Device* device = test::vulkan_with_16bit_storage(&why);
  if (device == nullptr) GTEST_SKIP() << why;
  for (kiln_dtype dt : {KILN_BF16, KILN_F16}) {
    SCOPED_TRACE(dt == KILN_BF16 ? "bf16" : "f16");
    constexpr int64_t R = 67, C = 40, N = 24, T = 16;
    Graph g;
    const ValueId x = g.input("x", dt, {R, C}), bias = g.input("bias", dt, {C}), w = g.input("w", dt, {C, N});
    const ValueId gamma = g.input("gamma", dt, {C}), beta = g.input("beta", dt, {C});
    const ValueId s = g.input("s", dt, {3, T, T});
    const std::vector<Port> inputs{{"x", R * C, dt}, {"bias", C, dt}, {"w", C * N, dt},
                                   {"gamma", C, dt}, {"beta", C, dt}, {"s", 3 * T * T, dt}};
    g.output("add", g.add(x, bias));
    g.output("gelu_grad", g.gelu_grad(x, g.mul(x, x)));
    g.output("matmul", g.matmul(x, w));
    g.output("matmul_tt", g.matmul(w, x, true, true));
    g.output("layernorm", g.layernorm(x, gamma, beta, 1e-5f));
    const ValueId sm = g.causal_softmax(s, 0.25f);
    g.output("softmax", sm);
    g.output("softmax_grad", g.softmax_grad(sm, s, 0.25f));
    g.output("sum_to", g.sum_to(x, {C}));
    g.output("permute", g.permute(s, {2, 0, 1}));
    g.output("concat", g.concat({x, x}, 1));
    g.output("to_f32", g.cast(x, KILN_F32));
    g.output("to_other", g.cast(x, dt == KILN_BF16 ? KILN_F16 : KILN_BF16));
    const kiln_dtype other = dt == KILN_BF16 ? KILN_F16 : KILN_BF16;
    const std::vector<Port> outputs{{"add", R * C, dt},
                                    {"gelu_grad", R * C, dt},
                                    {"matmul", R * N, dt},
                                    {"matmul_tt", N * R, dt},
                                    {"layernorm", R * C, dt},
                                    {"softmax", 3 * T * T, dt},
                                    {"softmax_grad", 3 * T * T, dt},
                                    {"sum_to", C, dt},
                                    {"permute", 3 * T * T, dt},
                                    {"concat", R * 2 * C, dt},
                                    {"to_f32", R * C, KILN_F32},
                                    {"to_other", R * C, other}};
    expect_native_matches_staged(*device, g, inputs, outputs);
  }
}

// --fp16's weight gradients are f32 MATMULs of f16 values CAST to f32
// (graph/widen_gradients.h). Natively the plugin folds those CASTs into the
// GEMM's 16-bit loads (backends/vulkan/cast_folding.h); the staged path
// runs the CASTs and an f32 GEMM. Widening is exact and both sum in the
// same order, so the two agree bit for bit, whether or not the widened
// value is also a port (then it is written and not folded).
TEST(VulkanNative16, WideningCastsFoldedIntoTheGemmMatchTheStagedPath) {
  std::string why;
  Device* device = test::vulkan_with_16bit_storage(&why);
  if (device == nullptr) GTEST_SKIP() << why;
  for (kiln_dtype dt : {KILN_BF16, KILN_F16}) {
    SCOPED_TRACE(dt == KILN_BF16 ? "bf16" : "f16");
    constexpr int64_t T = 70, C = 24, N = 36;
    Graph g;
    const ValueId x = g.input("x", dt, {T, C}), dy = g.input("dy", dt, {T, N}), w = g.input("w", dt, {N, C});
    const ValueId xw = g.cast(x, KILN_F32), dyw = g.cast(dy, KILN_F32);
    g.output("wgrad", g.matmul(xw, dyw, true, false));      // [C, N] = x^T dy, as a weight's gradient
    g.output("dgrad", g.matmul(dyw, g.cast(w, KILN_F32)));  // [T, C]
    g.output("xw", xw);                                     // a port: this CAST runs
    g.output("xw_dy", g.matmul(xw, g.cast(dy, KILN_F32), true, false));
    const std::vector<Port> inputs{{"x", T * C, dt}, {"dy", T * N, dt}, {"w", N * C, dt}};
    const std::vector<Port> outputs{
        {"wgrad", C * N, KILN_F32}, {"dgrad", T * C, KILN_F32}, {"xw", T * C, KILN_F32}, {"xw_dy", C * N, KILN_F32}};
    expect_native_matches_staged(*device, g, inputs, outputs);
  }
}

}  // namespace
}  // namespace kiln::graph
