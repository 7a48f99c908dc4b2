// ADAMW_CLIP on the cpu plugin, on each kernel set: the clipped gradient is
// the f32 product rounded once to the gradient's dtype (Megatron's in-place
// clip of bf16 main grads), bit for bit, and the whole update equals the
// graph it replaced in the optimizer step (widen, multiply, round, widen,
// ADAMW) bit for bit, so --main-grads-dtype bf16 trains exactly as before.
// The conformance suite checks the op's numerics against the reference on
// every backend; its tolerance cannot see a rounding of the gradient.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cpu_isa_device.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"
#include "kiln/half.h"

namespace kiln::graph {
namespace {

Device* device(const std::string& isa) { return test::cpu_isa_device(isa); }

constexpr int64_t kN = 5000;  // several stack blocks per worker, and a tail
constexpr float kClip = 0.3713f;

float round_to(kiln_dtype dtype, float x) {
  return dtype == KILN_BF16 ? kiln_bf16_to_f32(kiln_f32_to_bf16(x)) : kiln_f16_to_f32(kiln_f32_to_f16(x));
}

// The step's inputs, the gradient already in `dtype` (its values exact there).
TensorMap inputs(kiln_dtype dtype, float beta_scale) {
  TensorMap in;
  auto filled = [](kiln_dtype d, float lo, float hi, uint32_t seed) {
    HostTensor t = HostTensor::zeros(d, {kN});
    uint32_t s = seed;
    for (float& x : t.f32) {
      s = s * 1664525u + 1013904223u;
      x = lo + (hi - lo) * static_cast<float>(s >> 8) / 16777216.0f;
    }
    if (d != KILN_F32) t.round_from_f32();
    return t;
  };
  in["p"] = filled(KILN_F32, -1, 1, 1);
  in["g"] = filled(dtype, -2, 2, 2);
  in["m"] = filled(KILN_F32, -0.1f, 0.1f, 3);
  in["v"] = filled(KILN_F32, 0, 0.01f, 4);
  in["hparams"] = HostTensor::zeros(KILN_F32, {5});
  in["hparams"].f32 = {1e-3f, 0.1f, 1.0f / (1.0f - 0.729f), 1.0f / (1.0f - 0.997003f), beta_scale};
  in["clip"] = HostTensor::zeros(KILN_F32, {1});
  in["clip"].f32 = {kClip};
  return in;
}

// ADAMW_CLIP, or the same step as the graph built it before the op existed.
Graph step_graph(kiln_dtype dtype, float beta1, bool composed) {
  Graph g;
  ValueId p = g.input("p", KILN_F32, {kN}), gr = g.input("g", dtype, {kN});
  ValueId m = g.input("m", KILN_F32, {kN}), v = g.input("v", KILN_F32, {kN});
  ValueId hp = g.input("hparams", KILN_F32, {5}), clip = g.input("clip", KILN_F32, {1});
  std::vector<ValueId> out;
  if (composed) {
    ValueId column = g.reshape(g.cast(gr, KILN_F32), {kN, 1});
    ValueId clipped = g.reshape(g.cast(g.mul(column, clip), dtype), {kN});
    out = g.adamw(p, g.cast(clipped, KILN_F32), m, v, hp, beta1, 0.999f, 1e-8f, true);
  } else {
    out = g.adamw_clip(p, gr, m, v, hp, clip, beta1, 0.999f, 1e-8f, true);
  }
  g.output("p_out", out[0], "p");
  g.output("m_out", out[1], "m");
  g.output("v_out", out[2], "v");
  return g;
}

std::map<std::string, std::vector<float>> run_on(Device& dev, const Graph& g, const TensorMap& in) {
  Executable exe(dev, g);
  for (const auto& [name, t] : in) {
    const uint64_t bytes = static_cast<uint64_t>(t.f32.size()) * kiln_dtype_size(t.dtype);
    if (t.dtype == KILN_F32)
      exe.buffer(name)->write(t.f32.data(), bytes);
    else
      exe.buffer(name)->write(t.bits.data(), bytes);
  }
  exe.run();
  std::map<std::string, std::vector<float>> out;
  for (const char* port : {"p", "m", "v"}) {
    std::vector<float> values(kN);
    exe.buffer(port)->read(values.data(), values.size() * sizeof(float));
    out[port] = values;
  }
  return out;
}

class AdamwClip : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (device(GetParam()) == nullptr) GTEST_SKIP() << "this CPU has no " << GetParam() << " path";
  }
};

// beta1 = 0 and grad_scale = 1 make m' the clipped gradient itself.
TEST_P(AdamwClip, ClippedGradientIsTheProductRoundedOnceToItsDtype) {
  for (kiln_dtype dtype : {KILN_BF16, KILN_F16}) {
    const TensorMap in = inputs(dtype, 1.0f);
    const auto got = run_on(*device(GetParam()), step_graph(dtype, 0.0f, false), in);
    const TensorMap ref = run_reference(step_graph(dtype, 0.0f, false), in);
    int64_t rounded = 0;
    for (int64_t k = 0; k < kN; ++k) {
      const float product = in.at("g").f32[static_cast<size_t>(k)] * kClip;
      const float want = round_to(dtype, product);
      rounded += want != product ? 1 : 0;
      ASSERT_EQ(got.at("m")[static_cast<size_t>(k)], want) << kiln_dtype_name(dtype) << " element " << k;
      ASSERT_EQ(ref.at("m_out").f32[static_cast<size_t>(k)], want) << "reference, element " << k;
    }
    // The test can tell: most products are not exact in 16 bits.
    EXPECT_GT(rounded, kN / 2) << kiln_dtype_name(dtype);
  }
}

TEST_P(AdamwClip, EqualsTheComposedGraphBitForBit) {
  for (kiln_dtype dtype : {KILN_BF16, KILN_F16}) {
    const TensorMap in = inputs(dtype, 0.25f);
    const auto fused = run_on(*device(GetParam()), step_graph(dtype, 0.9f, false), in);
    const auto composed = run_on(*device(GetParam()), step_graph(dtype, 0.9f, true), in);
    for (const char* port : {"p", "m", "v"})
      for (int64_t k = 0; k < kN; ++k)
        ASSERT_EQ(fused.at(port)[static_cast<size_t>(k)], composed.at(port)[static_cast<size_t>(k)])
            << kiln_dtype_name(dtype) << " " << port << " element " << k;
  }
}

// An f32 gradient: round() is the identity, so ADAMW_CLIP is ADAMW of grad * clip.
TEST_P(AdamwClip, F32GradientIsTheUnroundedProduct) {
  const TensorMap in = inputs(KILN_F32, 1.0f);
  const auto got = run_on(*device(GetParam()), step_graph(KILN_F32, 0.0f, false), in);
  for (int64_t k = 0; k < kN; ++k)
    ASSERT_EQ(got.at("m")[static_cast<size_t>(k)], in.at("g").f32[static_cast<size_t>(k)] * kClip) << k;
}

INSTANTIATE_TEST_SUITE_P(Isa, AdamwClip, ::testing::Values("avx512", "avx2", "baseline"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln::graph
