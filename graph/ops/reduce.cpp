// Reductions: SUM_TO (over leading dims, the adjoint of suffix broadcasting)
// and SUM_SQUARES (to one scalar, for the gradient norm).
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_reduce_ops at the bottom.
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::sum_to(ValueId x, Shape suffix) { return add_node(KILN_OP_SUM_TO, {x}, {}, {}, {std::move(suffix)})[0]; }
ValueId Graph::sum_squares(ValueId x) { return add_node(KILN_OP_SUM_SQUARES, {x})[0]; }

namespace {

// ---------------------------------------------------------------- VJP rules

// y = sum_to(x): dx = dy broadcast over x's leading dims. ADD broadcasts
// its second operand as a suffix, so dx = 0 + dy with a zero of x's shape.
Grads vjp_sum_to(Graph& g, const VjpArgs& a) {
  Shape xs = g.shape(a.in(0));
  if (g.shape(a.dy[0]) == xs) return {a.dy[0]};
  return {g.add(g.fill(xs, 0.0f), a.dy[0])};
}

// y [1] = sum(x^2): dx = 2 * x * dy. dy is [1], which MUL can broadcast only
// over a last dim of 1, so x is viewed as [numel, 1] for the product.
Grads vjp_sum_squares(Graph& g, const VjpArgs& a) {
  Shape xs = g.shape(a.in(0));
  ValueId column = g.reshape(a.in(0), {numel(xs), 1});
  ValueId prod = g.mul(column, a.dy[0]);
  return {g.scale(g.reshape(prod, xs), 2.0f)};
}

// ---------------------------------------------------------------- reference

void op_sum_to(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  HostTensor& y = c.out(0);
  size_t S = y.f32.size();
  std::vector<double> acc(S, 0.0);
  for (size_t k = 0; k < x.size(); ++k) acc[k % S] += x[k];
  for (size_t k = 0; k < S; ++k) y.f32[k] = static_cast<float>(acc[k]);
}

void op_sum_squares(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  double s = 0.0;
  for (float v : x) s += static_cast<double>(v) * v;
  c.out(0).f32[0] = static_cast<float>(s);
}

}  // namespace

void register_reduce_ops(OpDefs& defs) {
  defs[KILN_OP_SUM_TO] = {vjp_sum_to, op_sum_to};
  defs[KILN_OP_SUM_SQUARES] = {vjp_sum_squares, op_sum_squares};
}

}  // namespace kiln::graph
