// Activations defined as composites: SQUARED_RELU and its gradient.
//
// Each carries a decomposition into table primitives beside its VJP and its
// reference (graph/ops/op_def.h). No backend has a kernel for them: the host
// expands them before it places nodes (graph/decompose.h), so every backend
// that runs the primitives runs them too, with no fallback to the cpu. A
// backend may still add a fused kernel later and list the op; the reference
// here stays the oracle for both.
#include <limits>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

ValueId Graph::squared_relu(ValueId x) { return add_node(KILN_OP_SQUARED_RELU, {x})[0]; }
ValueId Graph::squared_relu_grad(ValueId x, ValueId dy) { return add_node(KILN_OP_SQUARED_RELU_GRAD, {x, dy})[0]; }

namespace {

// relu(x) as CLAMP to [0, inf]: a selection, so exact in every dtype, and
// NaN stays NaN (as torch.relu).
ValueId relu(Graph& g, ValueId x) { return g.clamp(x, 0.0f, std::numeric_limits<float>::infinity()); }

// ---------------------------------------------------------------- VJP

// y = relu(x)^2: dx = 2 relu(x) dy, a composite of its own.
Grads vjp_squared_relu(Graph& g, const VjpArgs& a) { return {g.squared_relu_grad(a.in(0), a.dy[0])}; }

// ---------------------------------------------------------------- decompositions

// r = relu(x); y = r * r. r is exact, so the one rounding is the product's:
// the same value the reference rounds once (r * r in double is exact for
// float r), in f32, bf16 and f16.
std::vector<ValueId> decompose_squared_relu(Graph& g, const Node& n) {
  const ValueId r = relu(g, n.inputs[0]);
  return {g.mul(r, r)};
}

// dx = 2 (relu(x) dy): the product rounds once and doubling is exact (short
// of overflow), so this too equals the reference's single rounding.
std::vector<ValueId> decompose_squared_relu_grad(Graph& g, const Node& n) {
  return {g.scale(g.mul(relu(g, n.inputs[0]), n.inputs[1]), 2.0f)};
}

// ---------------------------------------------------------------- reference

// As clamp(x, 0, inf): a NaN x fails the comparison and stays NaN, and so
// does -0 (its square is +0 either way; its gradient's sign then matches the
// decomposition's bit for bit).
double relu(double x) { return x < 0.0 ? 0.0 : x; }

void op_squared_relu(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) {
    const double r = relu(x[k]);
    y.f32[k] = static_cast<float>(r * r);
  }
}

void op_squared_relu_grad(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& dy = c.f(1);
  HostTensor& dx = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) dx.f32[k] = static_cast<float>(2.0 * relu(x[k]) * dy[k]);
}

}  // namespace

void register_composite_activation_ops(OpDefs& defs) {
  defs[KILN_OP_SQUARED_RELU] = {vjp_squared_relu, op_squared_relu, decompose_squared_relu};
  defs[KILN_OP_SQUARED_RELU_GRAD] = {nullptr, op_squared_relu_grad, decompose_squared_relu_grad};
}

}  // namespace kiln::graph
