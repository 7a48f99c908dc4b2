// Rotary position embedding: ROPE and its gradient ROPE_GRAD.
//
// For each op: its Graph builder, its VJP rule (none for ROPE_GRAD, itself a
// gradient) and its reference evaluation, registered in register_rotary_ops
// at the bottom. The cos and sin tables are inputs the model computes on the
// host, so neither the reference nor any kernel evaluates a transcendental.
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::rope(ValueId x, ValueId cos, ValueId sin, bool interleaved) {
  return add_node(KILN_OP_ROPE, {x, cos, sin}, {interleaved ? 1 : 0})[0];
}
ValueId Graph::rope_grad(ValueId dy, ValueId cos, ValueId sin, bool interleaved) {
  return add_node(KILN_OP_ROPE_GRAD, {dy, cos, sin}, {interleaved ? 1 : 0})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = R(t) x, a rotation per position: dx = R(t)^T dy, the rotation by the
// negated angles. The tables are constants of the position, not parameters:
// a loss that reaches them through a differentiated value is refused rather
// than given a silent zero.
Grads vjp_rope(Graph& g, const VjpArgs& a) {
  if (a.need[1] || a.need[2])
    autodiff_fail(
        "rope's cos and sin are constant tables with no gradient, but the loss depends on them through a "
        "value being differentiated");
  Grads d = none_for(a);
  d[0] = g.rope_grad(a.dy[0], a.in(1), a.in(2), a.node.iattrs.at(0) != 0);
  return d;
}

// ---------------------------------------------------------------- reference

// Rotates every row of x [..., T, D] by the angles of its position, sin
// scaled by `sin_sign` (-1 for the gradient's inverse rotation).
void rotate(const ReferenceCtx& c, double sin_sign) {
  const auto& x = c.f(0);
  const auto& cos = c.f(1);
  const auto& sin = c.f(2);
  const bool interleaved = c.ia(0) != 0;
  const Shape& xs = c.shape_in(0);
  const int64_t features = xs.back(), positions = xs[xs.size() - 2], pairs = c.shape_in(1)[1];
  const int64_t rows = static_cast<int64_t>(x.size()) / features;
  HostTensor& y = c.out(0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = r % positions;
    const float* xr = x.data() + r * features;
    float* yr = y.f32.data() + r * features;
    for (int64_t j = 2 * pairs; j < features; ++j) yr[j] = xr[j];
    for (int64_t i = 0; i < pairs; ++i) {
      const int64_t ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + pairs;
      const auto at = static_cast<size_t>(t * pairs + i);
      const double co = cos[at], si = sin_sign * sin[at];
      const double xa = xr[ia], xb = xr[ib];
      yr[ia] = static_cast<float>(xa * co - xb * si);
      yr[ib] = static_cast<float>(xb * co + xa * si);
    }
  }
}

void op_rope(const ReferenceCtx& c) { rotate(c, 1.0); }
void op_rope_grad(const ReferenceCtx& c) { rotate(c, -1.0); }

}  // namespace

void register_rotary_ops(OpDefs& defs) {
  defs[KILN_OP_ROPE] = {vjp_rope, op_rope};
  defs[KILN_OP_ROPE_GRAD] = {nullptr, op_rope_grad};
}

}  // namespace kiln::graph
