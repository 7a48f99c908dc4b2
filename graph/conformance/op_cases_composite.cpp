// Built-in cases for the composite ops (graph/ops/op_def.h's decompose).
// A backend that lists a composite runs its own kernel on them; any other
// runs the decomposition the executor expands, so the same cases hold the
// decomposition to the reference on every backend that lacks the kernel
// (tests/unit/test_decompose.cpp holds it to the reference on the host too).
#include <cmath>
#include <string>
#include <vector>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::Shape;
using graph::ValueId;

namespace {

// SQUARED_RELU and its gradient: sizes off every vector width, in place,
// special values, and the MLP chain it sits in (bias add, then activation).
void squared_relu_cases(CaseMaker& m) {
  for (kiln_op op : {KILN_OP_SQUARED_RELU, KILN_OP_SQUARED_RELU_GRAD}) {
    const bool grad = op == KILN_OP_SQUARED_RELU_GRAD;
    auto build = [&](Graph& g, const Shape& s) {
      ValueId x = g.input("x", KILN_F32, s);
      return grad ? g.squared_relu_grad(x, g.input("dy", KILN_F32, s)) : g.squared_relu(x);
    };
    auto inputs = [&](const Shape& s) {
      graph::TensorMap in{{"x", m.rng.uniform(s, -4.0f, 4.0f)}};
      if (grad) in["dy"] = m.rng.uniform(s);
      return in;
    };
    for (const Shape& s : {Shape{1}, Shape{3}, Shape{17}, Shape{33, 65}, Shape{127, 129}, Shape{70001}}) {
      Graph g;
      g.output("y", build(g, s));
      m.add(op, str(s), std::move(g), inputs(s));
    }
    {
      Graph g;
      g.output("y", build(g, {33, 65}), "x");
      m.add(op, "[33, 65] in place", std::move(g), inputs({33, 65}));
    }
    // NaN stays NaN; +inf squares to +inf; -inf, -0 and the negatives give
    // 0; 1e20 squares past the float range; the smallest positive floats.
    const float nan = std::nanf(""), inf = INFINITY;
    graph::TensorMap in = inputs({3, 33});
    std::vector<float>& x = in["x"].f32;
    x[0] = nan, x[1] = inf, x[2] = -inf, x[3] = -0.0f, x[4] = 0.0f, x[5] = 1e20f, x[6] = -1e20f;
    x[7] = 1e-20f, x[8] = std::nextafter(0.0f, 1.0f);
    Graph g;
    g.output("y", build(g, {3, 33}));
    m.add(op, "[3, 33] with NaN, infinities, zeros and overflow", std::move(g), in);
  }
  // Megatron's MLP with --squared-relu: fc1's bias add, the activation, and
  // its backward through the same pre-activation.
  Graph g;
  ValueId h = g.input("h", KILN_F32, {37, 96}), bias = g.input("bias", KILN_F32, {96});
  ValueId dy = g.input("dy", KILN_F32, {37, 96});
  ValueId pre = g.add(h, bias);
  g.output("act", g.squared_relu(pre));
  g.output("grad", g.squared_relu_grad(pre, dy));
  m.add(KILN_OP_SQUARED_RELU_GRAD, "after a bias add, with its forward", std::move(g),
        {{"h", m.rng.uniform({37, 96}, -3.0f, 3.0f)}, {"bias", m.rng.uniform({96})}, {"dy", m.rng.uniform({37, 96})}});
}

}  // namespace

void add_composite_cases(Suite& suite) {
  CaseMaker m(suite, 4401);
  squared_relu_cases(m);
}

}  // namespace kiln::conformance
