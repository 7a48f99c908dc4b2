// graph::first_non_finite (graph/nonfinite.h), what the skip line of an
// overflowed step names: the first value of a graph that holds an inf or a
// NaN, described by its op, layer and the parameters it reads; the probes
// change no value of the graph.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/registry.h"
#include "graph/executor.h"
#include "graph/nonfinite.h"
#include "kiln/half.h"
#include "trainer/model/gpt.h"
#include "trainer/model/step_graphs.h"

namespace kiln::graph {
namespace {

std::unique_ptr<Device> cpu() { return Registry::instance().open("cpu", 0, 1); }

void write(Executable& exe, const std::string& port, const std::vector<float>& values) {
  exe.buffer(port)->write(values.data(), values.size() * sizeof(float));
}

// x -> f16 -> x 1000 -> gelu: 100 x 1000 is beyond f16's 65504, so the
// scale is where the inf begins; gelu only passes it on.
TEST(NonFinite, NamesTheNodeWhereTheOverflowBegins) {
  Graph g;
  const ValueId x = g.input("x", KILN_F32, {4});
  g.output("y", g.cast(g.gelu(g.scale(g.cast(x, KILN_F16), 1000.0f)), KILN_F32));
  std::unique_ptr<Device> device = cpu();
  Executable exe(*device, g);
  write(exe, "x", {1, 2, 3, 4});
  EXPECT_EQ(first_non_finite(exe, *device, nullptr, nullptr), "");
  write(exe, "x", {1, 2, 100, 4});
  EXPECT_EQ(first_non_finite(exe, *device, nullptr, nullptr), "outside the layers: scale (f16 [4], reading x)");
}

trainer::GptConfig tiny_f16_model() {
  trainer::GptConfig c;
  c.num_layers = 2;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.seq_length = 8;
  c.vocab_size = 64;
  c.compute_dtype = KILN_F16;
  return c;
}

// Every input of a train step: small random parameters, tokens and
// targets, a loss scale of 1.
void feed_inputs(Executable& exe, const trainer::GptConfig& c) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (const Port& p : exe.graph().inputs()) {
    const Value& v = exe.graph().value(p.value);
    const auto n = static_cast<size_t>(numel(v.shape));
    if (v.dtype == KILN_I32) {
      std::vector<int32_t> ids(n);
      for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7 + 3) % static_cast<size_t>(c.vocab_size));
      exe.buffer(p.name)->write(ids.data(), n * sizeof(int32_t));
    } else {
      std::vector<float> values(n);
      for (float& f : values) f = normal(rng);
      write(exe, p.name, values);
    }
  }
  write(exe, trainer::kLossScaleInput, {1.0f});
}

float loss_of(Executable& exe) {
  float loss = 0;
  exe.buffer("loss")->read(&loss, sizeof loss);
  return loss;
}

// The injected overflow: an inf in one named parameter of layer 1. The
// first value it reaches is its 16-bit copy, which names it; the rest of
// layer 1 and everything after it are downstream.
TEST(NonFinite, AGptStepNamesTheParameterAnInfWasInjectedInto) {
  const trainer::GptConfig c = tiny_f16_model();
  std::string target;
  for (const trainer::ParamSpec& p : trainer::gpt_parameters(c))
    if (p.name.starts_with("decoder.layers.1.") && p.full_shape.size() == 2) target = p.name;
  ASSERT_FALSE(target.empty());
  std::unique_ptr<Device> device = cpu();
  Executable exe(*device, trainer::build_train_step(c, 2, trainer::GradMode::Overwrite));
  feed_inputs(exe, c);
  exe.run();
  const float loss = loss_of(exe);
  EXPECT_EQ(first_non_finite(exe, *device, nullptr, nullptr), "");
  // The probed graph wrote the same outputs, bit for bit.
  const float again = loss_of(exe);
  EXPECT_EQ(std::bit_cast<uint32_t>(loss), std::bit_cast<uint32_t>(again));

  const float inf = std::numeric_limits<float>::infinity();
  exe.buffer(target)->write(&inf, sizeof inf);
  const std::string first = first_non_finite(exe, *device, nullptr, nullptr);
  EXPECT_NE(first.find("layer 1 forward: cast (f16 ["), std::string::npos) << first;
  EXPECT_NE(first.find("reading " + target + ")"), std::string::npos) << first;
}

// An overflow in the backward: a loss scale far beyond f16's range makes
// the loss gradient, the backward's first 16-bit value, infinite.
TEST(NonFinite, AHugeLossScaleOverflowsTheLossGradientFirst) {
  const trainer::GptConfig c = tiny_f16_model();
  std::unique_ptr<Device> device = cpu();
  Executable exe(*device, trainer::build_train_step(c, 2, trainer::GradMode::Overwrite));
  feed_inputs(exe, c);
  write(exe, trainer::kLossScaleInput, {1e30f});
  const std::string first = first_non_finite(exe, *device, nullptr, nullptr);
  EXPECT_EQ(first.rfind("outside the layers: cross_entropy_grad (f16 [16, 64], reading targets", 0), 0u) << first;
}

}  // namespace
}  // namespace kiln::graph
