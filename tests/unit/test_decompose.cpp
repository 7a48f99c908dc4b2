// Composite ops (graph/ops/op_def.h's decompose) and their expansion
// (graph/decompose.h): what the pass rewrites and what it leaves alone, each
// decomposition held to its op's reference on every built-in conformance
// case, and the executor expanding a composite the backend does not list
// before it places nodes, unless only the fallback runs it whole.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>

#include "core/fallback_device.h"
#include "core/registry.h"
#include "graph/conformance/compare.h"
#include "graph/conformance/suite.h"
#include "graph/decompose.h"
#include "graph/executor.h"
#include "graph/ops/op_def.h"
#include "graph/reference/reference.h"
#include "wrapped_cpu_plugin.h"

namespace kiln::graph {
namespace {

bool keep_none(const Graph&, const Node&) { return false; }
// A backend without SQUARED_RELU's pair but with every other op (the
// activations' fused kernels included), as the in-tree backends are.
bool keep_all_but_squared_relu(const Graph&, const Node& n) {
  return n.op != KILN_OP_SQUARED_RELU && n.op != KILN_OP_SQUARED_RELU_GRAD;
}
bool keep_all(const Graph&, const Node&) { return true; }

std::multiset<kiln_op> ops_of(const Graph& g) {
  std::multiset<kiln_op> ops;
  for (const Node& n : g.nodes()) ops.insert(n.op);
  return ops;
}

TEST(Decompose, ACompositeTheDeviceRefusesBecomesItsOpsInPlace) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4, 5});
  ValueId dy = g.input("dy", KILN_F32, {4, 5});
  ValueId pre = g.scale(x, 3.0f);
  g.set_unit(7);
  ValueId y = g.squared_relu(pre);
  ValueId dx = g.squared_relu_grad(pre, dy);
  g.set_unit(0);
  g.output("y", g.add(y, x));
  g.output("dx", dx);

  const Graph e = expand_composites(g, keep_all_but_squared_relu);
  EXPECT_EQ(ops_of(e), (std::multiset<kiln_op>{KILN_OP_SCALE, KILN_OP_CLAMP, KILN_OP_MUL, KILN_OP_CLAMP, KILN_OP_MUL,
                                               KILN_OP_SCALE, KILN_OP_ADD}));
  // The composite's outputs keep their ids: readers and ports are unchanged.
  EXPECT_EQ(e.find_output("dx")->value, dx);
  EXPECT_EQ(e.nodes().back().op, KILN_OP_ADD);
  EXPECT_EQ(e.nodes().back().inputs[0], y);
  EXPECT_EQ(e.value(y).producer, 2);  // clamp, mul: in the composite's place
  EXPECT_EQ(e.nodes()[2].op, KILN_OP_MUL);
  // The expansion stays in the composite's compile unit.
  for (size_t i = 1; i + 1 < e.nodes().size(); ++i) EXPECT_EQ(e.nodes()[i].unit, 7) << "node " << i;
}

TEST(Decompose, AListedCompositeAndAGraphWithoutOneAreLeftAlone) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {6});
  g.output("y", g.squared_relu(g.gelu(x)));
  const Graph kept = expand_composites(g, keep_all);
  ASSERT_EQ(kept.nodes().size(), 2u);
  EXPECT_EQ(kept.nodes()[1].op, KILN_OP_SQUARED_RELU);

  // Only the composite is asked about: the pass never touches a primitive.
  Graph plain;
  ValueId a = plain.input("a", KILN_F32, {6});
  plain.output("y", plain.mul(plain.exp(plain.scale(a, 2.0f)), a));
  const Graph same = expand_composites(plain, keep_none);
  ASSERT_EQ(same.nodes().size(), plain.nodes().size());
  ASSERT_EQ(same.values().size(), plain.values().size());
  for (size_t i = 0; i < plain.nodes().size(); ++i) {
    EXPECT_EQ(same.nodes()[i].op, plain.nodes()[i].op);
    EXPECT_EQ(same.nodes()[i].inputs, plain.nodes()[i].inputs);
    EXPECT_EQ(same.nodes()[i].outputs, plain.nodes()[i].outputs);
  }
}

// Every composite has built-in conformance cases, and on each of them its
// decomposition, run by the reference interpreter one primitive at a time,
// gives the op's reference result within the case's tolerance. (A backend
// without a kernel for the composite runs the same cases as the expansion.)
TEST(Decompose, EveryDecompositionMatchesItsReferenceOnTheConformanceCases) {
  const conformance::Suite suite = conformance::Suite::builtin();
  std::set<kiln_op> checked;
  for (const conformance::Case& c : suite.cases()) {
    bool composite = false;
    for (const Node& n : c.graph.nodes()) composite = composite || is_composite(n.op);
    if (!composite || c.expect_error || c.expected) continue;
    SCOPED_TRACE(c.name);
    const Graph expanded = expand_composites(c.graph, keep_none);
    for (const Node& n : expanded.nodes()) EXPECT_FALSE(is_composite(n.op)) << op_name(n.op) << " left after expansion";
    for (const Node& n : c.graph.nodes())
      if (is_composite(n.op)) checked.insert(n.op);
    const TensorMap want = run_reference(c.graph, c.inputs);
    const TensorMap got = run_reference(expanded, c.inputs);
    for (const Port& p : c.graph.outputs()) {
      const conformance::Comparison cmp = conformance::compare(want.at(p.name), got.at(p.name));
      EXPECT_LE(cmp.nmse, c.threshold) << p.name << ": " << cmp.where;
    }
  }
  for (const kiln_op_info& info : kiln_op_table) {
    if (is_composite(info.code)) {
      EXPECT_EQ(checked.count(info.code), 1u) << info.name << " has no case";
    }
  }
}

// The cpu plugin has no squared_relu kernel: the executor runs it as clamp
// and mul on the cpu itself, with no fallback, bit for bit the reference
// (one rounding, the product's).
TEST(DecomposeExecution, ACompositeRunsOnTheCpuWithoutFallback) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 0);
  ASSERT_FALSE(cpu->plugin().supports(KILN_OP_SQUARED_RELU));
  Graph g;
  ValueId x = g.input("x", KILN_F32, {9, 13});
  ValueId dy = g.input("dy", KILN_F32, {9, 13});
  g.output("y", g.squared_relu(x));
  g.output("dx", g.squared_relu_grad(x, dy));
  TensorMap in{{"x", HostTensor::zeros(KILN_F32, {9, 13})}, {"dy", HostTensor::zeros(KILN_F32, {9, 13})}};
  for (size_t k = 0; k < in["x"].f32.size(); ++k) {
    in["x"].f32[k] = static_cast<float>(static_cast<int>(k % 23) - 11) * 0.37f;
    in["dy"].f32[k] = static_cast<float>(static_cast<int>(k % 7) - 3) * 0.61f;
  }
  Executable exe(*cpu, g);
  EXPECT_TRUE(exe.split().fallback_ops.empty());
  for (const Port& p : g.inputs()) exe.buffer(p.name)->write(in.at(p.name).data(), in.at(p.name).bytes());
  exe.run();
  const TensorMap want = run_reference(g, in);
  for (const Port& p : g.outputs()) {
    HostTensor t = HostTensor::zeros(KILN_F32, g.shape(p.value));
    exe.buffer(p.name)->read(t.data(), t.bytes());
    EXPECT_EQ(std::memcmp(t.data(), want.at(p.name).data(), t.bytes()), 0) << p.name;
  }
}

// Whether a device would run every piece: gelu is tanh, mul, add and scale
// (graph/ops/composite_activations.cpp); squared_relu is clamp and mul, and
// clamp is two maxima, asked again when the device refuses clamp.
TEST(Decompose, RunsAllPiecesAsksEveryPieceOfTheFullExpansion) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4, 5});
  g.output("y", g.gelu(x));
  g.output("z", g.squared_relu(x));
  const Node& gelu = g.nodes()[0];
  const Node& squared_relu = g.nodes()[1];
  const KeepNode primitives = [](const Graph&, const Node& n) { return !is_composite(n.op); };
  const KeepNode no_tanh = [](const Graph&, const Node& n) { return !is_composite(n.op) && n.op != KILN_OP_TANH; };
  const KeepNode no_max = [](const Graph&, const Node& n) { return !is_composite(n.op) && n.op != KILN_OP_MAXIMUM; };
  const KeepNode clamp_no_max = [](const Graph&, const Node& n) {
    return n.op == KILN_OP_CLAMP || (!is_composite(n.op) && n.op != KILN_OP_MAXIMUM);
  };
  EXPECT_TRUE(runs_all_pieces(g, gelu, primitives));
  EXPECT_FALSE(runs_all_pieces(g, gelu, no_tanh));
  EXPECT_TRUE(runs_all_pieces(g, gelu, no_max));
  EXPECT_TRUE(runs_all_pieces(g, squared_relu, primitives));
  EXPECT_FALSE(runs_all_pieces(g, squared_relu, no_max));
  EXPECT_TRUE(runs_all_pieces(g, squared_relu, clamp_no_max));
}

// A backend that lacks a primitive of the decomposition too (the partial
// backend has mul, scale, add and fill, but neither clamp nor max): the
// composite is expanded on the primary (the cpu lists no squared_relu
// either), and clamp, whose pieces are all maxima, falls back whole to the
// cpu's clamp kernel rather than as two maxima.
TEST(DecomposeExecution, ACompositeThePrimaryRunsNoWholeExpansionOfFallsBackWhole) {
  std::unique_ptr<Device> partial = testing::open_wrapped_cpu();
  testing::wrapped_hooks().supported = [](kiln_op op) {
    return op == KILN_OP_MUL || op == KILN_OP_SCALE || op == KILN_OP_ADD || op == KILN_OP_FILL;
  };
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 0);
  FallbackDevice fallback(*cpu);
  Graph g;
  ValueId x = g.input("x", KILN_F32, {5, 3});
  g.output("y", g.squared_relu(g.scale(x, 2.0f)));
  Executable exe(*partial, g, &fallback);
  EXPECT_EQ(exe.split().fallback_ops, std::vector<kiln_op>{KILN_OP_CLAMP});
  EXPECT_EQ(exe.split().fallback_nodes, 1);

  // GELU with tanh missing: one node on the fallback, none of its pieces on
  // the primary, and the reference's result.
  Graph h;
  ValueId a = h.input("a", KILN_F32, {7, 11});
  h.output("y", h.add(h.gelu(a), a));
  Executable gelu(*partial, h, &fallback);
  EXPECT_EQ(gelu.split().fallback_ops, std::vector<kiln_op>{KILN_OP_GELU});
  EXPECT_EQ(gelu.split().fallback_nodes, 1);
  HostTensor in = HostTensor::zeros(KILN_F32, {7, 11});
  for (size_t k = 0; k < in.f32.size(); ++k) in.f32[k] = static_cast<float>(static_cast<int>(k % 19) - 9) * 0.43f;
  gelu.buffer("a")->write(in.data(), in.bytes());
  gelu.run();
  HostTensor y = HostTensor::zeros(KILN_F32, {7, 11});
  gelu.buffer("y")->read(y.data(), y.bytes());
  const TensorMap want = run_reference(h, TensorMap{{"a", in}});
  EXPECT_LE(conformance::compare(want.at("y"), y).nmse, 1e-10);
  testing::wrapped_hooks().supported = nullptr;

  // Without a fallback, the pieces the primary lacks are what it names.
  std::unique_ptr<Device> lacking = testing::open_wrapped_cpu();
  testing::wrapped_hooks().supported = [](kiln_op op) { return op != KILN_OP_TANH && op != KILN_OP_GELU; };
  try {
    Executable none(*lacking, h);
    ADD_FAILURE() << "compiled without a fallback";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tanh"), std::string::npos) << e.what();
  }
  testing::wrapped_hooks().supported = nullptr;
}

}  // namespace
}  // namespace kiln::graph
