// The host-side op registry (graph/ops/op_def.h) against the op table
// (kiln/ops.h): every op has a reference function, every op autodiff could
// differentiate before the registry still has its VJP rule, and ops that
// are themselves gradients or optimizer steps have none.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/reference/reference.h"
#include "kiln/ops.h"

namespace kiln::graph {
namespace {

std::vector<kiln_op> all_ops() {
  std::vector<kiln_op> ops;
  for (int code = 0; code < KILN_OP_COUNT_; ++code) ops.push_back(static_cast<kiln_op>(code));
  return ops;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(OpRegistry, EveryOpHasAReferenceFunction) {
  // Host collectives included: the reference runs them as a group of one.
  for (kiln_op op : all_ops())
    EXPECT_NE(op_def(op).reference, nullptr) << kiln_op_name(op) << " has no reference function in graph/ops/";
}

TEST(OpRegistry, EveryForwardOpDifferentiableBeforeTheRegistryKeepsItsVjp) {
  const std::set<kiln_op> differentiable = {KILN_OP_ADD,
                                            KILN_OP_MUL,
                                            KILN_OP_SCALE,
                                            KILN_OP_GELU,
                                            KILN_OP_MATMUL,
                                            KILN_OP_EMBEDDING,
                                            KILN_OP_LAYERNORM,
                                            KILN_OP_RMSNORM,
                                            KILN_OP_CAUSAL_SOFTMAX,
                                            KILN_OP_CROSS_ENTROPY,
                                            KILN_OP_SUM_TO,
                                            KILN_OP_RESHAPE,
                                            KILN_OP_PERMUTE,
                                            KILN_OP_SPLIT,
                                            KILN_OP_CONCAT,
                                            KILN_OP_SUM_SQUARES,
                                            KILN_OP_ALL_REDUCE,
                                            KILN_OP_CROSS_ENTROPY_SHARD,
                                            KILN_OP_CROSS_ENTROPY_FROM_SUMS,
                                            KILN_OP_SILU,
                                            KILN_OP_CLAMP,
                                            KILN_OP_ROPE,
                                            KILN_OP_DROPOUT,
                                            KILN_OP_ALIBI,
                                            KILN_OP_GELU_ERF,
                                            KILN_OP_SQUARED_RELU,
                                            KILN_OP_EXP,
                                            KILN_OP_LOG,
                                            KILN_OP_TANH,
                                            KILN_OP_ERF,
                                            KILN_OP_MAXIMUM,
                                            KILN_OP_SELECT,
                                            KILN_OP_DROPOUT_KEYED,
                                            KILN_OP_DOCUMENT_SOFTMAX};
  EXPECT_EQ(differentiable.size(), 34u);
  for (kiln_op op : differentiable) EXPECT_NE(op_def(op).vjp, nullptr) << kiln_op_name(op) << " lost its VJP rule";
}

TEST(OpRegistry, GradientAndOptimizerOpsHaveNoVjp) {
  // autodiff.h promises an error, not a second derivative, for a loss that
  // reaches a wrt value through a *_GRAD op or an in-place optimizer step.
  for (kiln_op op : all_ops()) {
    const std::string name = kiln_op_name(op);
    if (ends_with(name, "_grad") || kiln_op_has(op, KILN_OPP_IN_PLACE)) {
      EXPECT_EQ(op_def(op).vjp, nullptr) << name << " has a VJP rule";
    }
  }
}

TEST(OpRegistry, ACodeOutsideTheTableIsAnErrorNamingIt) {
  try {
    op_def(static_cast<kiln_op>(KILN_OP_COUNT_));
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(KILN_OP_COUNT_)), std::string::npos) << e.what();
  }
}

TEST(OpRegistry, ReferenceRejectsANodeOfAnUnknownOp) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2});
  g.output("y", g.scale(x, 2.0f));
  std::vector<Node> nodes = g.nodes();
  nodes[0].op = static_cast<kiln_op>(KILN_OP_COUNT_);  // a newer host's op
  g.set_nodes(nodes);
  HostTensor t = HostTensor::zeros(KILN_F32, {2});
  try {
    run_reference(g, {{"x", t}});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op " + std::to_string(KILN_OP_COUNT_)), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln::graph
