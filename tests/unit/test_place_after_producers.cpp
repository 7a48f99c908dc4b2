// graph::place_after_producers: nodes from an index on move to just after
// the last maker of their inputs, into its compile unit; nodes reading only
// graph inputs stay at the end; a moved node reading another moved node's
// output follows it. Values are the reference interpreter's, bit for bit.
#include <gtest/gtest.h>

#include <vector>

#include "graph/passes.h"
#include "graph/reference/reference.h"

namespace kiln::graph {
namespace {

TEST(PlaceAfterProducers, SumsFollowTheirGradientIntoItsUnit) {
  Graph g;
  const ValueId x = g.input("x", KILN_F32, {4});
  const ValueId acc_a = g.input("acc_a", KILN_F32, {4}), acc_b = g.input("acc_b", KILN_F32, {4});
  g.set_unit(-1);
  const ValueId a = g.gelu(x);  // node 0, "layer 0's backward"
  g.set_unit(-2);
  const ValueId b = g.gelu(a);  // node 1, "layer 1's backward"
  g.set_unit(0);
  const size_t begin = g.nodes().size();
  const ValueId sum_b = g.add(acc_b, b);        // node 2: after node 1
  const ValueId sum_a = g.add(acc_a, a);        // node 3: after node 0
  const ValueId twice = g.add(sum_a, sum_a);    // node 4: after node 3, wherever that goes
  const ValueId inputs_only = g.add(x, acc_a);  // node 5: reads graph inputs only: stays last
  g.output("sum_b", sum_b);
  g.output("twice", twice);
  g.output("inputs_only", inputs_only);

  const Graph placed = place_after_producers(g, begin);
  ASSERT_EQ(placed.nodes().size(), g.nodes().size());
  const std::vector<ValueId> want = {a, sum_a, twice, b, sum_b, inputs_only};
  const std::vector<int32_t> units = {-1, -1, -1, -2, -2, 0};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(placed.nodes()[i].outputs[0], want[i]) << "node " << i;
    EXPECT_EQ(placed.nodes()[i].unit, units[i]) << "node " << i;
  }

  TensorMap in;
  in["x"] = HostTensor::from_f32(KILN_F32, {4}, {0.5f, -1.0f, 2.0f, 0.0f});
  in["acc_a"] = HostTensor::from_f32(KILN_F32, {4}, {1.0f, 2.0f, 3.0f, 4.0f});
  in["acc_b"] = HostTensor::from_f32(KILN_F32, {4}, {-1.0f, 0.25f, 8.0f, 1.5f});
  const TensorMap before = run_reference(g, in), after = run_reference(placed, in);
  for (const char* name : {"sum_b", "twice", "inputs_only"}) EXPECT_EQ(before.at(name).f32, after.at(name).f32) << name;
}

}  // namespace
}  // namespace kiln::graph
