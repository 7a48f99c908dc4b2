// bf16 and f16 values in the IR and the reference interpreter: they
// serialize with their dtype and element size, change the graph's hash,
// are rounded once when an op stores them (the definition every backend is
// judged against), move bit for bit through layout ops, and CAST converts
// between the float dtypes with a gradient that comes back in x's dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "graph/autodiff.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/reference/reference.h"
#include "graph/serialize.h"
#include "kiln/half.h"
#include "kiln/op_rules.hpp"

namespace {

using kiln::graph::Graph;
using kiln::graph::HostTensor;
using kiln::graph::ValueId;

float from_bits(uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

Graph cast_chain(kiln_dtype from) {
  Graph g;
  const ValueId x = g.input("x", from, {3, 5});
  g.output("y", g.cast(g.cast(x, KILN_F16), KILN_F32));
  return g;
}

TEST(LowPrecisionIr, SerializesDtypesAndElementSizes) {
  const Graph g = cast_chain(KILN_BF16);
  const std::vector<uint8_t> bytes = kiln::graph::serialize(g, kiln::graph::plan_memory(g));
  kiln::ir::DecodedGraph d;
  ASSERT_EQ(kiln::ir::decode(bytes.data(), bytes.size(), &d), "");
  ASSERT_EQ(d.values.size(), 3u);
  EXPECT_EQ(d.values[0].dtype, KILN_BF16);
  EXPECT_EQ(d.values[1].dtype, KILN_F16);
  EXPECT_EQ(d.values[2].dtype, KILN_F32);
  EXPECT_EQ(d.values[0].bytes(), 30u);  // 15 elements of 2 bytes
  EXPECT_EQ(d.values[1].bytes(), 30u);
  EXPECT_EQ(d.values[2].bytes(), 60u);
  EXPECT_EQ(kiln::ir::check_graph(d), "");
}

TEST(LowPrecisionIr, TheHashChangesWithDtype) {
  EXPECT_NE(kiln::graph::graph_hash(cast_chain(KILN_BF16)), kiln::graph::graph_hash(cast_chain(KILN_F32)));
  EXPECT_NE(kiln::graph::graph_hash(cast_chain(KILN_BF16)), kiln::graph::graph_hash(cast_chain(KILN_F16)));
}

TEST(LowPrecisionIr, AnUnknownDtypeIsRefusedByName) {
  const Graph g = cast_chain(KILN_BF16);
  std::vector<uint8_t> bytes = kiln::graph::serialize(g, kiln::graph::plan_memory(g));
  bytes[32] = 4;  // the first value's dtype byte, just past the 32-byte header
  kiln::ir::DecodedGraph d;
  EXPECT_EQ(kiln::ir::decode(bytes.data(), bytes.size(), &d), "IR value has unknown dtype 4");
}

TEST(LowPrecisionReference, CastRoundsToNearestEvenWithIeeeEdges) {
  Graph g;
  const ValueId x = g.input("x", KILN_F32, {8});
  g.output("b", g.cast(x, KILN_BF16));
  g.output("h", g.cast(x, KILN_F16));
  const std::vector<float> in = {
      from_bits(0x3F808000),  // 1 + 2^-8: a bf16 tie, to the even 1.0 (exact in f16)
      from_bits(0x3F818000),  // 1 + 3 * 2^-8: a bf16 tie, to the even 1 + 2^-6 (exact in f16)
      1.0f + 0x1p-11f,        // an f16 tie, to the even 1.0
      65520.0f,               // f16's overflow threshold: inf
      0x1p-25f,               // half the smallest f16 subnormal: a tie, to 0
      0x1.8p-25f,             // above it: the smallest subnormal
      -INFINITY,
      NAN,
  };
  HostTensor t = HostTensor::zeros(KILN_F32, {8});
  t.f32 = in;
  const auto out = kiln::graph::run_reference(g, {{"x", t}});
  const std::vector<uint16_t> want_b = {0x3F80, 0x3F82, 0x3F80, 0x4780, 0x3300, 0x3340, 0xFF80, 0x7FC0};
  const std::vector<uint16_t> want_h = {0x3C04, 0x3C0C, 0x3C00, 0x7C00, 0x0000, 0x0001, 0xFC00, 0x7E00};
  EXPECT_EQ(out.at("b").bits, want_b);
  EXPECT_EQ(out.at("h").bits, want_h);
  EXPECT_EQ(out.at("h").f32[2], 1.0f);  // f32 holds the stored values
  EXPECT_TRUE(std::isnan(out.at("h").f32[7]));
}

TEST(LowPrecisionReference, WideningIsExact) {
  Graph g;
  g.output("y", g.cast(g.input("x", KILN_F16, {3}), KILN_F32));
  HostTensor x = HostTensor::zeros(KILN_F16, {3});
  x.bits = {0x0001, 0x7BFF, 0xC000};  // bits are what a 16-bit input holds
  const auto out = kiln::graph::run_reference(g, {{"x", x}});
  EXPECT_EQ(out.at("y").f32, (std::vector<float>{0x1p-24f, 65504.0f, -2.0f}));
}

TEST(LowPrecisionReference, AnOpRoundsOnceWhenItStores) {
  // 1 + 2^-8 is a tie between bf16's 1 and 1 + 2^-7: the sum computed in
  // f32 is stored as the even one.
  Graph g;
  g.output("y", g.add(g.input("a", KILN_BF16, {2}), g.input("b", KILN_BF16, {2})));
  const auto out = kiln::graph::run_reference(g, {{"a", HostTensor::from_f32(KILN_BF16, {2}, {1.0f, 3.0f})},
                                                  {"b", HostTensor::from_f32(KILN_BF16, {2}, {0x1p-8f, 0x1p-7f})}});
  EXPECT_EQ(out.at("y").bits, (std::vector<uint16_t>{0x3F80, 0x4040}));
  EXPECT_EQ(out.at("y").f32, (std::vector<float>{1.0f, 3.0f}));
}

TEST(LowPrecisionReference, LayoutOpsMoveBitsExactly) {
  Graph g;
  g.output("y", g.permute(g.input("x", KILN_BF16, {2, 2}), {1, 0}));
  HostTensor x = HostTensor::zeros(KILN_BF16, {2, 2});
  x.bits = {0x7F81, 0x3F80, 0xFFA5, 0x0001};  // a signalling NaN keeps its payload
  const auto out = kiln::graph::run_reference(g, {{"x", x}});
  EXPECT_EQ(out.at("y").bits, (std::vector<uint16_t>{0x7F81, 0xFFA5, 0x3F80, 0x0001}));
}

TEST(LowPrecisionReference, CastGradientComesBackInTheInputsDtype) {
  Graph g;
  const ValueId x = g.input("x", KILN_BF16, {3});
  const ValueId loss = g.sum_squares(g.cast(x, KILN_F32));
  const std::vector<ValueId> grads = kiln::graph::backward(g, loss, {x});
  ASSERT_EQ(g.value(grads[0]).dtype, KILN_BF16);
  g.output("dx", grads[0]);
  const auto out = kiln::graph::run_reference(g, {{"x", HostTensor::from_f32(KILN_BF16, {3}, {1.5f, -0.25f, 3.0f})}});
  EXPECT_EQ(out.at("dx").f32, (std::vector<float>{3.0f, -0.5f, 6.0f}));
}

}  // namespace
