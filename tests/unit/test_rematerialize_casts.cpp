// graph::rematerialize_input_casts: the 16-bit copies of f32 parameters are
// made just before they are read, again for the backward, with bitwise the
// same results and a smaller arena.
#include <gtest/gtest.h>

#include <random>

#include "graph/autodiff.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"
#include "graph/reference/reference.h"

namespace kiln::graph {
namespace {

// Two bf16 "layers" over f32 parameters (weights large, activations small,
// as in a micro-batch-1 step), differentiated with respect to the f32 params.
struct TwoLayers {
  Graph g;
  size_t backward_begin = 0;
};

TwoLayers two_layers() {
  TwoLayers t;
  Graph& g = t.g;
  const ValueId x = g.input("x", KILN_F32, {2, 64});
  const ValueId w1 = g.input("w1", KILN_F32, {64, 64});
  const ValueId w2 = g.input("w2", KILN_F32, {64, 64});
  const ValueId w1h = g.cast(w1, KILN_BF16), w2h = g.cast(w2, KILN_BF16);  // at the top, as gpt.cpp does
  ValueId h = g.gelu(g.matmul(g.cast(x, KILN_BF16), w1h));
  h = g.matmul(h, w2h);
  const ValueId loss = g.sum_squares(g.cast(h, KILN_F32));
  t.backward_begin = g.nodes().size();
  const std::vector<ValueId> d = backward(g, loss, {w1, w2});
  g.output("loss", loss);
  g.output("dw1", d[0]);
  g.output("dw2", d[1]);
  return t;
}

TensorMap random_inputs(const Graph& g) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  TensorMap in;
  for (const Port& p : g.inputs()) {
    HostTensor t = HostTensor::zeros(g.value(p.value).dtype, g.shape(p.value));
    for (float& v : t.f32) v = u(rng);
    in[p.name] = t;
  }
  return in;
}

size_t casts_of_inputs(const Graph& g) {
  size_t n = 0;
  for (const Node& node : g.nodes()) n += node.op == KILN_OP_CAST && g.value(node.inputs[0]).producer < 0 ? 1 : 0;
  return n;
}

TEST(RematerializeInputCasts, SameBitsFewerLiveBytes) {
  const TwoLayers t = two_layers();
  const Graph r = rematerialize_input_casts(t.g, t.backward_begin);
  // dw1 reads x's copy, dh reads w2's: those two casts get a second copy;
  // w1's copy has forward readers only.
  EXPECT_EQ(casts_of_inputs(t.g), 3u);
  EXPECT_EQ(casts_of_inputs(r), 5u);
  const TensorMap in = random_inputs(t.g);
  const TensorMap before = run_reference(t.g, in), after = run_reference(r, in);
  for (const char* name : {"loss", "dw1", "dw2"}) EXPECT_EQ(before.at(name).f32, after.at(name).f32) << name;
  EXPECT_LT(plan_memory(r).arena_bytes, plan_memory(t.g).arena_bytes);
}

TEST(RematerializeInputCasts, EveryCastPrecedesItsReaders) {
  const TwoLayers t = two_layers();
  const Graph r = rematerialize_input_casts(t.g, t.backward_begin);
  std::vector<bool> ready(r.values().size(), false);
  for (const Port& p : r.inputs()) ready[static_cast<size_t>(p.value)] = true;
  for (const Node& n : r.nodes()) {
    for (ValueId v : n.inputs) EXPECT_TRUE(ready[static_cast<size_t>(v)]) << "value " << v << " read before made";
    for (ValueId v : n.outputs) ready[static_cast<size_t>(v)] = true;
  }
}

TEST(RematerializeInputCasts, AGraphWithoutBackwardReadersIsUnchanged) {
  Graph g;
  const ValueId w = g.input("w", KILN_F32, {4});
  g.output("y", g.cast(g.gelu(g.cast(w, KILN_BF16)), KILN_F32));
  const Graph r = rematerialize_input_casts(g, g.nodes().size());
  ASSERT_EQ(r.nodes().size(), g.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i) EXPECT_EQ(r.nodes()[i].op, g.nodes()[i].op);
}

}  // namespace
}  // namespace kiln::graph
