// CAST_FP8 and FP8_GRAD_CAST: Transformer Engine's per-tensor FP8 casts,
// computed in the tensor's own dtype (kiln/ops.h; every bit is kiln/fp8.h's).
//
// A linear layer under --fp8-format casts its input and weight with CAST_FP8
// before the GEMM and passes its output through FP8_GRAD_CAST, whose VJP
// casts the incoming gradient before the GEMM's VJP reads it: TE's fprop,
// dgrad and wgrad on FP8 operands, each cast once.
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"
#include "kiln/fp8.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

Graph::Fp8Cast Graph::cast_fp8(ValueId x, ValueId scale, kiln_fp8_format format, bool current) {
  const std::vector<ValueId> out = add_node(KILN_OP_CAST_FP8, {x, scale}, {format, current ? 1 : 0});
  return {out[0], out[1]};
}

ValueId Graph::fp8_grad_cast(ValueId x, ValueId scale, kiln_fp8_format format, bool current) {
  return add_node(KILN_OP_FP8_GRAD_CAST, {x, scale}, {format, current ? 1 : 0})[0];
}

namespace {

kiln_fp8_format format_of(int64_t attr) { return attr == 0 ? KILN_FP8_E4M3 : KILN_FP8_E5M2; }

// ---------------------------------------------------------------- VJP rules

// The straight-through estimator, as TE's: the rounding's derivative is
// taken as 1, so dx = dy; the scale and amax carry no gradient.
Grads vjp_cast_fp8(Graph&, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0] && a.dy[0] != kNoGradient) d[0] = a.dy[0];
  return d;
}

// y = x, and the gradient reaching y is cast on its way to x.
Grads vjp_fp8_grad_cast(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  const auto& ia = a.node.iattrs;
  if (a.need[0]) d[0] = g.cast_fp8(a.dy[0], a.in(1), format_of(ia.at(0)), ia.at(1) != 0).y;
  return d;
}

// ---------------------------------------------------------------- decomposition

// A RESHAPE to its own shape: a view of x, which no device runs.
std::vector<ValueId> decompose_fp8_grad_cast(Graph& g, const Node& n) {
  return {g.reshape(n.inputs[0], g.shape(n.inputs[0]))};
}

// ---------------------------------------------------------------- reference

void op_cast_fp8(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const kiln_fp8_format format = format_of(c.ia(0));
  float amax = 0.0f;
  for (float v : x) amax = kiln_fp8_amax(amax, v);
  const float scale = c.ia(1) != 0 ? kiln_fp8_current_scale(amax, format) : c.f(1).at(0);
  const float scale_inv = kiln_fp8_div(1.0f, scale);
  HostTensor& y = c.out(0);  // rounded to its dtype as the interpreter stores it
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = kiln_fp8_scaled_round(x[k], scale, scale_inv, format);
  c.out(1).f32[0] = amax;
}

void op_fp8_grad_cast(const ReferenceCtx& c) { c.out(0).f32 = c.f(0); }

}  // namespace

void register_fp8_ops(OpDefs& defs) {
  defs[KILN_OP_CAST_FP8] = {vjp_cast_fp8, op_cast_fp8};
  defs[KILN_OP_FP8_GRAD_CAST] = {vjp_fp8_grad_cast, op_fp8_grad_cast, decompose_fp8_grad_cast};
}

}  // namespace kiln::graph
