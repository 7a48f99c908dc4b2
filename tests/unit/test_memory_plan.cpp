// Memory planning: live values never share bytes, dead ones do, reshapes
// alias their input, and in-place updates are refused when unsafe. The
// decoder's side of the same contract (ir.h): what the planner emits
// decodes, and a node writing over bytes it reads is refused.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "graph/memory_plan.h"
#include "graph/serialize.h"
#include "kiln/ir_decode.hpp"
#include "trainer/model/step_graphs.h"

namespace kiln::graph {
namespace {

// Checks the planner's core invariant on any graph: two arena values whose
// lifetimes overlap occupy disjoint bytes, unless one is a reshape alias of
// the other.
void expect_no_live_overlap(const Graph& g, const MemoryPlan& plan) {
  const auto& nodes = g.nodes();
  std::vector<int> first(g.values().size(), -1), last(g.values().size(), -1);
  std::vector<ValueId> alias_root(g.values().size());
  for (size_t v = 0; v < alias_root.size(); ++v) alias_root[v] = static_cast<ValueId>(v);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId v : nodes[i].outputs)
      first[static_cast<size_t>(v)] = last[static_cast<size_t>(v)] = static_cast<int>(i);
    for (ValueId v : nodes[i].inputs) last[static_cast<size_t>(v)] = static_cast<int>(i);
    if (nodes[i].op == KILN_OP_RESHAPE)
      alias_root[static_cast<size_t>(nodes[i].outputs[0])] = alias_root[static_cast<size_t>(nodes[i].inputs[0])];
  }
  std::vector<ValueId> arena;
  for (size_t v = 0; v < g.values().size(); ++v)
    if (first[v] >= 0 && plan.slot[v] == 0) arena.push_back(static_cast<ValueId>(v));
  for (size_t a = 0; a < arena.size(); ++a)
    for (size_t b = a + 1; b < arena.size(); ++b) {
      auto va = static_cast<size_t>(arena[a]), vb = static_cast<size_t>(arena[b]);
      if (alias_root[va] == alias_root[vb]) continue;
      bool live_together = first[va] <= last[vb] && first[vb] <= last[va];
      uint64_t ea = plan.offset[va] + static_cast<uint64_t>(numel(g.value(arena[a]).shape)) * 4;
      uint64_t eb = plan.offset[vb] + static_cast<uint64_t>(numel(g.value(arena[b]).shape)) * 4;
      bool bytes_overlap = plan.offset[va] < eb && plan.offset[vb] < ea;
      EXPECT_FALSE(live_together && bytes_overlap) << "values " << va << " and " << vb;
      EXPECT_LE(std::max(ea, eb), plan.arena_bytes);
    }
}

// A 2-layer GPT train step (hidden 32, 4 heads, seq 16, micro-batch 2).
Graph small_train_step() {
  trainer::GptConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 32;
  cfg.num_attention_heads = 4;
  cfg.seq_length = 16;
  return trainer::build_train_step(cfg, 2);
}

TEST(MemoryPlan, TrainStepHasNoLiveOverlapAndReusesMemory) {
  Graph g = small_train_step();
  MemoryPlan plan = plan_memory(g);
  expect_no_live_overlap(g, plan);
  uint64_t total = 0;
  for (const Node& n : g.nodes())
    for (ValueId v : n.outputs)
      if (plan.slot[static_cast<size_t>(v)] == 0) total += static_cast<uint64_t>(numel(g.value(v).shape)) * 4;
  EXPECT_LT(plan.arena_bytes, total / 2) << "liveness planning should reuse memory";
}

TEST(MemoryPlan, ReshapeAliasesItsInput) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4, 6});
  ValueId y = g.gelu(x);
  ValueId r = g.reshape(y, {24});
  g.output("out", g.scale(r, 2.0f));
  MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(plan.slot[static_cast<size_t>(y)], 0u);
  EXPECT_EQ(plan.offset[static_cast<size_t>(y)], plan.offset[static_cast<size_t>(r)]);
}

TEST(MemoryPlan, InPlaceUpdateSharesTheInputSlot) {
  Graph g;
  ValueId acc = g.input("acc", KILN_F32, {8});
  ValueId d = g.input("d", KILN_F32, {8});
  g.output("acc.out", g.add(acc, d), "acc");
  MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(plan.slot[static_cast<size_t>(g.find_output("acc.out")->value)], plan.slot[static_cast<size_t>(acc)]);
  EXPECT_EQ(plan.slot_ports.size(), 3u);  // arena, acc, d
}

TEST(MemoryPlan, RefusesInPlaceUpdateReadLater) {
  Graph g;
  ValueId p = g.input("p", KILN_F32, {8});
  ValueId q = g.scale(p, 2.0f);
  ValueId later = g.add(p, q);  // reads p after q would have overwritten it
  g.output("p.out", q, "p");
  g.output("later", later);
  EXPECT_THROW(plan_memory(g), Error);
}

TEST(MemoryPlan, RefusesInPlaceUpdateByNonElementwiseOp) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, {4, 4});
  ValueId b = g.input("b", KILN_F32, {4, 4});
  g.output("a.out", g.matmul(a, b), "a");
  EXPECT_THROW(plan_memory(g), Error);
}

// The IR of `g` with value `v` (a decoded id) moved to `slot` at offset 0.
std::vector<uint8_t> with_value_moved(const Graph& g, uint32_t v, uint32_t slot) {
  std::vector<uint8_t> bytes = serialize(g, plan_memory(g));
  ir::DecodedGraph d;
  EXPECT_EQ(ir::decode(bytes.data(), bytes.size(), &d), "");
  size_t pos = 32;  // the header
  for (uint32_t i = 0; i < v; ++i) pos += 16 + 8 * d.values[i].dims.size();
  const uint64_t zero = 0;
  std::memcpy(bytes.data() + pos + 4, &slot, sizeof slot);
  std::memcpy(bytes.data() + pos + 8, &zero, sizeof zero);
  return bytes;
}

std::string decode_error(const std::vector<uint8_t>& bytes) {
  ir::DecodedGraph d;
  return ir::decode(bytes.data(), bytes.size(), &d);
}

TEST(MemoryPlan, TrainStepIrKeepsTheAliasingContract) {
  Graph g = small_train_step();
  std::vector<uint8_t> bytes = serialize(g, plan_memory(g));
  EXPECT_EQ(decode_error(bytes), "");
}

TEST(DecodeAliasing, ElementwiseOpMayWriteExactlyOverItsInput) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, {8});
  ValueId b = g.input("b", KILN_F32, {8});
  g.output("y", g.add(a, b));
  // Values in order of appearance: a (slot 1), b (slot 2), y (slot 3).
  EXPECT_EQ(decode_error(with_value_moved(g, 2, 1)), "");
}

TEST(DecodeAliasing, RefusesANonElementwiseOpWritingOverItsInput) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, {4, 4});
  ValueId b = g.input("b", KILN_F32, {4, 4});
  g.output("y", g.matmul(a, b));
  EXPECT_EQ(decode_error(with_value_moved(g, 2, 2)),
            "IR node 0 (matmul): output 0 overlaps input 1 and the op cannot work in place");
}

TEST(DecodeAliasing, RefusesALossGradientWrittenOverItsTargets) {
  Graph g;
  ValueId logits = g.input("logits", KILN_F32, {3, 5});
  ValueId targets = g.input("targets", KILN_I32, {3});
  ValueId dloss = g.input("dloss", KILN_F32, {1});
  g.output("dlogits", g.cross_entropy_grad(logits, targets, dloss));
  EXPECT_EQ(decode_error(with_value_moved(g, 3, 2)),
            "IR node 0 (cross_entropy_grad): output 0 overlaps input 1 and the op cannot work in place");
}

TEST(DecodeAliasing, RefusesAPartialOverlapEvenForElementwiseOps) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, {8});
  ValueId b = g.input("b", KILN_F32, {2, 8});
  g.output("y", g.add(b, a));  // y is [2, 8]; moved onto a, it covers a and more
  EXPECT_EQ(decode_error(with_value_moved(g, 2, 1)),
            "IR node 0 (add): output 0 overlaps input 1 without occupying exactly its bytes");
}

}  // namespace
}  // namespace kiln::graph
