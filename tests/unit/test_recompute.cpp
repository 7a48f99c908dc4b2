// Activation recomputation as an autodiff rewrite (graph/recompute.h): the
// gradients are bitwise those of the plain backward, dropout included; the
// replayed copies, not the originals, feed the segment's gradient rules;
// bad segments are refused; and the GPT builder marks Megatron's units, so a
// train step's planned arena shrinks.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/autodiff.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"
#include "graph/reference/reference.h"
#include "trainer/model/step_graphs.h"

namespace kiln::graph {
namespace {

// loss = sum((dropout(gelu(x W1)) W2)^2 / 2) over a [4, 8] batch; `segment`
// marks the GELU, the dropout and the second matmul as recomputed.
struct SmallNet {
  Graph g;
  TensorMap inputs;
  std::vector<ValueId> params;
  RecomputeSegment segment;
  ValueId loss = -1;

  SmallNet() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto input = [&](const std::string& name, const Shape& shape) {
      HostTensor t = HostTensor::zeros(KILN_F32, shape);
      for (float& v : t.f32) v = u(rng);
      inputs[name] = t;
      return g.input(name, KILN_F32, shape);
    };
    const ValueId x = input("x", {4, 8});
    const ValueId w1 = input("w1", {8, 8});
    const ValueId w2 = input("w2", {8, 8});
    const ValueId key = g.input("key", KILN_I32, {4});
    HostTensor k = HostTensor::zeros(KILN_I32, {4});
    k.i32 = {1234, 5, 0, 0};
    inputs["key"] = k;
    params = {x, w1, w2};
    const ValueId h = g.matmul(x, w1);
    segment.first_node = static_cast<int>(g.nodes().size());
    const ValueId d = g.dropout(g.gelu(h), key, 0.5f, 3);
    const ValueId y = g.matmul(d, w2);
    segment.end_node = static_cast<int>(g.nodes().size());
    loss = g.sum_to(g.reshape(g.scale(g.mul(y, y), 0.5f), {32, 1}), {1});
  }
};

std::vector<std::vector<float>> gradients(bool recompute, size_t* nodes = nullptr) {
  SmallNet net;
  std::vector<RecomputeSegment> segments;
  if (recompute) segments.push_back(net.segment);
  const std::vector<ValueId> grads = backward(net.g, net.loss, net.params, segments);
  const std::vector<std::string> names = {"dx", "dw1", "dw2"};  // of net.params
  for (size_t i = 0; i < grads.size(); ++i) net.g.output(names.at(i), grads[i]);
  if (nodes) *nodes = net.g.nodes().size();
  TensorMap out = run_reference(net.g, net.inputs);
  std::vector<std::vector<float>> result;
  for (const std::string& name : names) result.push_back(out.at(name).f32);
  return result;
}

TEST(Recompute, GradientsAreBitwiseThoseWithoutRecomputationDropoutIncluded) {
  size_t plain_nodes = 0, recomputed_nodes = 0;
  const auto plain = gradients(false, &plain_nodes);
  const auto recomputed = gradients(true, &recomputed_nodes);
  ASSERT_EQ(plain.size(), recomputed.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(plain[i].size(), recomputed[i].size());
    for (size_t k = 0; k < plain[i].size(); ++k)
      ASSERT_EQ(std::bit_cast<uint32_t>(plain[i][k]), std::bit_cast<uint32_t>(recomputed[i][k]))
          << "gradient " << i << " element " << k;
  }
  // The three segment nodes were replayed.
  EXPECT_EQ(recomputed_nodes, plain_nodes + 3);
}

TEST(Recompute, SegmentRulesReadTheCopiesSoOriginalsDieInTheForward) {
  SmallNet net;
  const int forward_nodes = static_cast<int>(net.g.nodes().size());
  backward(net.g, net.loss, net.params, {net.segment});
  // The values inside the segment (the GELU's and the dropout's outputs):
  // no backward node reads them. The segment's output is another matter:
  // the rule of MUL, outside the segment, reads it, as Megatron keeps a
  // checkpointed function's output.
  for (int i = net.segment.first_node; i + 1 < net.segment.end_node; ++i)
    for (ValueId v : net.g.nodes()[static_cast<size_t>(i)].outputs)
      for (size_t n = static_cast<size_t>(forward_nodes); n < net.g.nodes().size(); ++n)
        for (ValueId in : net.g.nodes()[n].inputs)
          EXPECT_NE(in, v) << "backward node " << n << " reads forward value " << v << " of node " << i;
}

TEST(Recompute, RefusesEmptyOverlappingOrOutOfRangeSegments) {
  for (const std::vector<RecomputeSegment>& bad :
       {std::vector<RecomputeSegment>{{2, 2}}, std::vector<RecomputeSegment>{{1, 3}, {2, 4}},
        std::vector<RecomputeSegment>{{0, 1000}}, std::vector<RecomputeSegment>{{-1, 1}}}) {
    SmallNet net;
    EXPECT_THROW(backward(net.g, net.loss, net.params, bad), Error);
  }
}

}  // namespace
}  // namespace kiln::graph

namespace kiln::trainer {
namespace {

GptConfig recompute_test_model(RecomputeGranularity granularity, RecomputeMethod method = RecomputeMethod::None,
                               int64_t layers = 0) {
  GptConfig c;
  c.num_layers = 3;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.seq_length = 64;
  c.hidden_dropout = 0.1f;
  c.attention_dropout = 0.1f;
  c.recompute_granularity = granularity;
  c.recompute_method = method;
  c.recompute_num_layers = layers;
  return c;
}

size_t segments(const GptConfig& c) {
  graph::Graph g;
  return build_gpt_forward(g, c, 2).recompute_segments.size();
}

// The arena a train step needs, as the executor plans it (dead copies pruned first).
uint64_t train_step_arena(const GptConfig& c) {
  return graph::plan_memory(graph::eliminate_dead_code(build_train_step(c, 2, GradMode::Overwrite))).arena_bytes;
}

TEST(RecomputeGpt, MarksMegatronsUnits) {
  EXPECT_EQ(segments(recompute_test_model(RecomputeGranularity::None)), 0u);
  EXPECT_EQ(segments(recompute_test_model(RecomputeGranularity::Selective)), 3u);  // one attention core per layer
  // Uniform groups of 2 of 3 layers: [0, 1], [2].
  EXPECT_EQ(segments(recompute_test_model(RecomputeGranularity::Full, RecomputeMethod::Uniform, 2)), 2u);
  EXPECT_EQ(segments(recompute_test_model(RecomputeGranularity::Full, RecomputeMethod::Uniform, 1)), 3u);
  // Block: the first 2 layers, each on its own; the third keeps its activations.
  EXPECT_EQ(segments(recompute_test_model(RecomputeGranularity::Full, RecomputeMethod::Block, 2)), 2u);
  // A pipeline stage counts its own layers from 0 (Megatron's block per
  // stage): layers 1 and 2 of 3, block 1 recomputes layer 1 only.
  GptConfig stage = recompute_test_model(RecomputeGranularity::Full, RecomputeMethod::Block, 1);
  stage.first_layer = 1;
  stage.pre_process = false;
  EXPECT_EQ(segments(stage), 1u);
  stage.recompute_method = RecomputeMethod::Uniform;
  EXPECT_EQ(segments(stage), 2u);
  EXPECT_NO_THROW(build_train_step(stage, 2, GradMode::Overwrite));
  // Full without a method is refused where the model is built.
  EXPECT_THROW(segments(recompute_test_model(RecomputeGranularity::Full)), Error);
}

TEST(RecomputeGpt, TrainStepArenaShrinks) {
  const uint64_t plain = train_step_arena(recompute_test_model(RecomputeGranularity::None));
  const uint64_t selective = train_step_arena(recompute_test_model(RecomputeGranularity::Selective));
  const uint64_t full = train_step_arena(recompute_test_model(RecomputeGranularity::Full, RecomputeMethod::Uniform, 1));
  EXPECT_LT(selective, plain);
  EXPECT_LT(full, selective);
}

}  // namespace
}  // namespace kiln::trainer
