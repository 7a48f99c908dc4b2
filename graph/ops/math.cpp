// Math primitives: EXP, LOG, TANH, ERF, MAXIMUM and SELECT, the pieces the
// activations decompose into (graph/ops/composite_activations.cpp), so that a
// backend with these and the arithmetic ops runs every activation without a
// kernel of its own for it.
//
// For each op: its Graph builder, its VJP rule and its reference evaluation,
// registered in register_math_ops at the bottom.
#include <cmath>
#include <numbers>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::exp(ValueId x) { return add_node(KILN_OP_EXP, {x})[0]; }
ValueId Graph::log(ValueId x) { return add_node(KILN_OP_LOG, {x})[0]; }
ValueId Graph::tanh(ValueId x) { return add_node(KILN_OP_TANH, {x})[0]; }
ValueId Graph::erf(ValueId x) { return add_node(KILN_OP_ERF, {x})[0]; }
ValueId Graph::maximum(ValueId a, ValueId b) { return add_node(KILN_OP_MAXIMUM, {a, b})[0]; }
ValueId Graph::select(ValueId a, ValueId b, ValueId x, ValueId y) { return add_node(KILN_OP_SELECT, {a, b, x, y})[0]; }

namespace {

// A tensor of `like`'s shape and dtype holding `value`: FILL makes f32, so a
// bf16/f16 gradient gets its constant through a CAST.
ValueId constant_like(Graph& g, ValueId like, float value) {
  const ValueId c = g.fill(Shape(g.shape(like)), value);
  const kiln_dtype dtype = g.value(like).dtype;
  return dtype == KILN_F32 ? c : g.cast(c, dtype);
}

// ---------------------------------------------------------------- VJP rules

// y = e^x: dx = dy y.
Grads vjp_exp(Graph& g, const VjpArgs& a) { return {g.mul(a.dy[0], a.out(0))}; }

// y = ln x: dx = dy / x, written dy e^(-y) (the IR has no division; e^(-ln x)
// is 1/x to two roundings).
Grads vjp_log(Graph& g, const VjpArgs& a) { return {g.mul(a.dy[0], g.exp(g.scale(a.out(0), -1.0f)))}; }

// y = tanh x: dx = dy (1 - y^2), written dy - (dy y) y (no constant needed).
Grads vjp_tanh(Graph& g, const VjpArgs& a) {
  const ValueId y = a.out(0), dy = a.dy[0];
  return {g.add(dy, g.scale(g.mul(g.mul(dy, y), y), -1.0f))};
}

// y = erf x: dx = dy 2/sqrt(pi) e^(-x^2).
Grads vjp_erf(Graph& g, const VjpArgs& a) {
  const ValueId x = a.in(0);
  const float two_over_sqrt_pi = static_cast<float>(2.0 * std::numbers::inv_sqrtpi);
  return {g.scale(g.mul(a.dy[0], g.exp(g.scale(g.mul(x, x), -1.0f))), two_over_sqrt_pi)};
}

// y = max(a, b), b a suffix of a: the gradient goes to whichever was picked
// (a on a tie, as the forward picks it), b's summed down to its shape.
Grads vjp_maximum(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  const ValueId x = a.in(0), dy = a.dy[0];
  const ValueId zero = constant_like(g, x, 0.0f);
  const ValueId b = g.add(zero, a.in(1));  // b over a's whole shape
  if (a.need[0]) d[0] = g.select(b, x, dy, zero);
  if (a.need[1]) d[1] = reduce_to(g, g.select(b, x, zero, dy), Shape(g.shape(a.in(1))));
  return d;
}

// z = a <= b ? x : y: the comparison's inputs get no gradient (the choice is
// piecewise constant in them); x and y get dz where each was picked.
Grads vjp_select(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  const ValueId dz = a.dy[0];
  const ValueId zero = constant_like(g, dz, 0.0f);
  if (a.need[2]) d[2] = g.select(a.in(0), a.in(1), dz, zero);
  if (a.need[3]) d[3] = g.select(a.in(0), a.in(1), zero, dz);
  return d;
}

// ---------------------------------------------------------------- reference

// The unary ops: f of each widened element, in double, rounded once.
template <double (*F)(double)>
void op_unary(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = static_cast<float>(F(x[k]));
}

double exp_of(double x) { return std::exp(x); }
double log_of(double x) { return std::log(x); }
double tanh_of(double x) { return std::tanh(x); }
double erf_of(double x) { return std::erf(x); }

void op_maximum(const ReferenceCtx& c) {
  const auto& a = c.f(0);
  const auto& b = c.f(1);
  HostTensor& y = c.out(0);
  const size_t nb = b.size();
  if (nb == 0 || a.size() % nb != 0) c.fail("b does not broadcast over a");
  for (size_t k = 0; k < a.size(); ++k) {
    const float av = a[k], bv = b[k % nb];
    y.f32[k] = std::isnan(av) || std::isnan(bv) ? NAN : (av < bv ? bv : av);
  }
}

void op_select(const ReferenceCtx& c) {
  const auto& a = c.f(0);
  const auto& b = c.f(1);
  const auto& x = c.f(2);
  const auto& y = c.f(3);
  HostTensor& z = c.out(0);
  for (size_t k = 0; k < a.size(); ++k) z.f32[k] = a[k] <= b[k] ? x[k] : y[k];
}

}  // namespace

void register_math_ops(OpDefs& defs) {
  defs[KILN_OP_EXP] = {vjp_exp, op_unary<exp_of>};
  defs[KILN_OP_LOG] = {vjp_log, op_unary<log_of>};
  defs[KILN_OP_TANH] = {vjp_tanh, op_unary<tanh_of>};
  defs[KILN_OP_ERF] = {vjp_erf, op_unary<erf_of>};
  defs[KILN_OP_MAXIMUM] = {vjp_maximum, op_maximum};
  defs[KILN_OP_SELECT] = {vjp_select, op_select};
}

}  // namespace kiln::graph
