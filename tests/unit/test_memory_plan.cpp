// Memory planning: live values never share bytes, dead ones do, reshapes
// alias their input, and in-place updates are refused when unsafe.
#include <gtest/gtest.h>

#include "core/error.h"
#include "graph/memory_plan.h"
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

TEST(MemoryPlan, TrainStepHasNoLiveOverlapAndReusesMemory) {
  trainer::GptConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 32;
  cfg.num_attention_heads = 4;
  cfg.seq_length = 16;
  Graph g = trainer::build_train_step(cfg, 2);
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

}  // namespace
}  // namespace kiln::graph
