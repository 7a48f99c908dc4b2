// CAST_FP8 (kiln/ops.h) against an independent NumPy reference
// (tests/tools/gen_fp8_cast_golden.py: float32 division and multiplies,
// FP8 rounding by search over each format's values): kiln/fp8.h's integer
// division gives IEEE's quotients, and the op, in the reference interpreter
// and on every plugin (each cpu kernel set, OpenCL and Vulkan where their
// drivers are installed), gives the reference's bits for y and amax. The
// conformance suite's cast_fp8 cases hold every backend to the interpreter
// on more shapes and on f16 too.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cpu_isa_device.h"
#include "fp8_cast_golden.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"
#include "kiln/fp8.h"
#include "kiln/half.h"
#include "shared_device.h"

namespace {

using kiln::graph::Executable;
using kiln::graph::Graph;
using kiln::graph::HostTensor;

float from_bits(uint32_t u) { return kiln_f32_from_bits_(u); }
uint32_t bits_of(float f) { return kiln_f32_bits_(f); }

TEST(Fp8Cast, IntegerDivisionGivesIeeeQuotients) {
  for (const auto& row : kFp8DivGolden) {
    const float b = from_bits(row[0]);
    EXPECT_EQ(bits_of(kiln_fp8_div(1.0f, b)), row[1]) << "1 / " << b;
    EXPECT_EQ(bits_of(kiln_fp8_div(448.0f, b)), row[2]) << "448 / " << b;
    EXPECT_EQ(bits_of(kiln_fp8_div(57344.0f, b)), row[3]) << "57344 / " << b;
  }
  // Zero, infinity and NaN divisors, and the host's own division.
  EXPECT_EQ(bits_of(kiln_fp8_div(1.0f, 0.0f)), 0x7F800000u);
  EXPECT_EQ(bits_of(kiln_fp8_div(1.0f, -0.0f)), 0xFF800000u);
  EXPECT_EQ(bits_of(kiln_fp8_div(1.0f, INFINITY)), 0u);
  EXPECT_TRUE(std::isnan(kiln_fp8_div(1.0f, NAN)));
  for (float b : {-3.0f, 5e-39f, 0.75f, 1e30f}) EXPECT_EQ(kiln_fp8_div(1.0f, b), 1.0f / b) << b;
}

// The graph of one case, and its inputs.
struct OneCast {
  Graph g;
  kiln::graph::TensorMap inputs;
};
OneCast one_cast(const Fp8CastCase& c) {
  OneCast o;
  const kiln_dtype dtype = c.bf16 ? KILN_BF16 : KILN_F32;
  const auto f = static_cast<kiln_fp8_format>(c.format);
  const Graph::Fp8Cast out = o.g.cast_fp8(o.g.input("x", dtype, {96}), o.g.input("s", KILN_F32, {1}), f, c.current);
  o.g.output("y", out.y);
  o.g.output("amax", out.amax);
  std::vector<float> x;
  for (uint32_t u : c.x) x.push_back(from_bits(u));
  o.inputs["x"] = HostTensor::from_f32(dtype, {96}, x);
  o.inputs["s"] = HostTensor::from_f32(KILN_F32, {1}, {from_bits(c.scale)});
  return o;
}

// y's values and amax against the case, NaN matching NaN.
void expect_matches(const Fp8CastCase& c, const kiln::graph::TensorMap& out, const std::string& where) {
  const std::vector<float>& y = out.at("y").f32;
  int wrong = 0;
  for (size_t k = 0; k < 96; ++k) {
    const float want = from_bits(c.y[k]);
    const bool same = std::isnan(want) ? std::isnan(y[k]) : bits_of(y[k]) == c.y[k];
    if (!same && wrong++ < 3)
      ADD_FAILURE() << where << ": element " << k << " of x = " << from_bits(c.x[k]) << ": " << y[k] << ", NumPy "
                    << want;
  }
  EXPECT_EQ(wrong, 0) << where;
  EXPECT_EQ(bits_of(out.at("amax").f32[0]), c.amax) << where;
}

std::string name_of(const Fp8CastCase& c) {
  return std::string(c.format == 0 ? "e4m3" : "e5m2") + (c.bf16 ? " bf16" : " f32") +
         (c.current ? " tensorwise" : " scale " + std::to_string(from_bits(c.scale)));
}

TEST(Fp8Cast, ReferenceMatchesNumpy) {
  for (const Fp8CastCase& c : kFp8CastGolden) {
    OneCast o = one_cast(c);
    expect_matches(c, kiln::graph::run_reference(o.g, o.inputs), "reference " + name_of(c));
  }
}

// One case on a cpu kernel set, read back as the reference's outputs.
kiln::graph::TensorMap run_on(kiln::Device& dev, const OneCast& o) {
  Executable exe(dev, o.g);
  const HostTensor& x = o.inputs.at("x");
  if (x.dtype == KILN_F32)
    exe.buffer("x")->write(x.f32.data(), x.bytes());
  else
    exe.buffer("x")->write(x.bits.data(), x.bytes());
  exe.buffer("s")->write(o.inputs.at("s").f32.data(), sizeof(float));
  exe.run();
  kiln::graph::TensorMap out;
  std::vector<float> y(96);
  if (x.dtype == KILN_F32) {
    exe.buffer("y")->read(y.data(), y.size() * sizeof(float));
  } else {
    std::vector<uint16_t> bits(96);
    exe.buffer("y")->read(bits.data(), bits.size() * sizeof(uint16_t));
    for (size_t k = 0; k < y.size(); ++k) y[k] = kiln_bf16_to_f32(bits[k]);
  }
  out["y"] = HostTensor::from_f32(KILN_F32, {96}, y);
  std::vector<float> amax(1);
  exe.buffer("amax")->read(amax.data(), sizeof(float));
  out["amax"] = HostTensor::from_f32(KILN_F32, {1}, amax);
  return out;
}

class Fp8CastCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp8CastCpu, MatchesNumpy) {
  kiln::Device* dev = kiln::test::cpu_isa_device(GetParam());
  if (dev == nullptr) GTEST_SKIP() << "this CPU has no " << GetParam() << " path";
  for (const Fp8CastCase& c : kFp8CastGolden)
    expect_matches(c, run_on(*dev, one_cast(c)), GetParam() + " " + name_of(c));
}

INSTANTIATE_TEST_SUITE_P(KernelSets, Fp8CastCpu, ::testing::Values("avx512", "avx2", "baseline"));

class Fp8CastDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp8CastDevice, MatchesNumpy) {
  std::string why;
  kiln::Device* dev = kiln::test::shared_device(GetParam(), &why);
  if (dev == nullptr) GTEST_SKIP() << "no " << GetParam() << " device: " << why;
  for (const Fp8CastCase& c : kFp8CastGolden)
    expect_matches(c, run_on(*dev, one_cast(c)), GetParam() + " " + name_of(c));
}

INSTANTIATE_TEST_SUITE_P(Backends, Fp8CastDevice, ::testing::Values("opencl", "vulkan"));

}  // namespace
