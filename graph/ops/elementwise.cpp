// Elementwise arithmetic: FILL, ADD and MUL (b broadcast as a suffix of a),
// SCALE, GELU (tanh), GELU_ERF (exact), SILU, CLAMP and their gradients.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_elementwise_ops at the bottom.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::fill(Shape shape, float value) { return add_node(KILN_OP_FILL, {}, {}, {value}, {std::move(shape)})[0]; }
ValueId Graph::add(ValueId a, ValueId b) { return add_node(KILN_OP_ADD, {a, b})[0]; }
ValueId Graph::mul(ValueId a, ValueId b) { return add_node(KILN_OP_MUL, {a, b})[0]; }
ValueId Graph::scale(ValueId x, float s) { return add_node(KILN_OP_SCALE, {x}, {}, {s})[0]; }
ValueId Graph::gelu(ValueId x) { return add_node(KILN_OP_GELU, {x})[0]; }
ValueId Graph::gelu_grad(ValueId x, ValueId dy) { return add_node(KILN_OP_GELU_GRAD, {x, dy})[0]; }
ValueId Graph::gelu_erf(ValueId x) { return add_node(KILN_OP_GELU_ERF, {x})[0]; }
ValueId Graph::gelu_erf_grad(ValueId x, ValueId dy) { return add_node(KILN_OP_GELU_ERF_GRAD, {x, dy})[0]; }
ValueId Graph::silu(ValueId x) { return add_node(KILN_OP_SILU, {x})[0]; }
ValueId Graph::silu_grad(ValueId x, ValueId dy) { return add_node(KILN_OP_SILU_GRAD, {x, dy})[0]; }

namespace {

// The shared SAME rule knows nothing of float attributes, so the builders
// check the bounds: with lo > hi (or a NaN bound) min(max(x, lo), hi) is no
// clamp to any interval, and PyTorch's backward mask would be empty.
void check_clamp_bounds(kiln_op op, float lo, float hi) {
  if (std::isnan(lo) || std::isnan(hi) || lo > hi)
    throw Error(
        fmt::format("graph: {}: bounds [{}, {}] are no interval (need lo <= hi, neither NaN)", op_name(op), lo, hi));
}

}  // namespace

ValueId Graph::clamp(ValueId x, float lo, float hi) {
  check_clamp_bounds(KILN_OP_CLAMP, lo, hi);
  return add_node(KILN_OP_CLAMP, {x}, {}, {lo, hi})[0];
}
ValueId Graph::clamp_grad(ValueId x, ValueId dy, float lo, float hi) {
  check_clamp_bounds(KILN_OP_CLAMP_GRAD, lo, hi);
  return add_node(KILN_OP_CLAMP_GRAD, {x, dy}, {}, {lo, hi})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = a + b (b a suffix of a): da = dy, db = sum_to(dy).
Grads vjp_add(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0]) d[0] = a.dy[0];
  if (a.need[1]) d[1] = reduce_to(g, a.dy[0], Shape(g.shape(a.in(1))));
  return d;
}

// y = a * b (b a suffix of a): da = dy * b, db = sum_to(dy * a).
Grads vjp_mul(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0]) d[0] = g.mul(a.dy[0], a.in(1));
  if (a.need[1]) d[1] = reduce_to(g, g.mul(a.dy[0], a.in(0)), Shape(g.shape(a.in(1))));
  return d;
}

// y = s * x: dx = s * dy.
Grads vjp_scale(Graph& g, const VjpArgs& a) { return {g.scale(a.dy[0], a.node.fattrs.at(0))}; }

// y = gelu(x): dx = gelu'(x) * dy.
Grads vjp_gelu(Graph& g, const VjpArgs& a) { return {g.gelu_grad(a.in(0), a.dy[0])}; }

// y = gelu_erf(x): dx = gelu_erf'(x) * dy.
Grads vjp_gelu_erf(Graph& g, const VjpArgs& a) { return {g.gelu_erf_grad(a.in(0), a.dy[0])}; }

// y = silu(x): dx = silu'(x) * dy.
Grads vjp_silu(Graph& g, const VjpArgs& a) { return {g.silu_grad(a.in(0), a.dy[0])}; }

// y = clamp(x, lo, hi): dx = dy inside [lo, hi], 0 outside.
Grads vjp_clamp(Graph& g, const VjpArgs& a) {
  return {g.clamp_grad(a.in(0), a.dy[0], a.node.fattrs.at(0), a.node.fattrs.at(1))};
}

// ---------------------------------------------------------------- reference

double gelu(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_derivative(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  double u = k * (x + 0.044715 * x * x * x);
  double t = std::tanh(u);
  double du = k * (1.0 + 3.0 * 0.044715 * x * x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
}

// Phi(x) = 0.5 (1 + erf(x / sqrt 2)), the standard normal CDF.
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }

// Phi(x) + x phi(x), phi the standard normal density.
double gelu_erf_derivative(double x) {
  const double cdf = 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2));
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return cdf + x * pdf;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Written as the table states it, so the special values follow the formula:
// silu(-inf) = -inf / inf = NaN, silu(+inf) = +inf.
double silu(double x) { return x / (1.0 + std::exp(-x)); }

// s (1 + x (1 - s)); NaN at both infinities (0 * inf), as the formula gives.
double silu_derivative(double x) {
  const double s = sigmoid(x);
  return s * (1.0 + x * (1.0 - s));
}

// Comparisons rather than std::min/max, so a NaN x falls through unchanged.
double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

void op_fill(const ReferenceCtx& c) {
  HostTensor& y = c.out(0);
  std::fill(y.f32.begin(), y.f32.end(), c.fa(0));
}

// ADD / MUL: b's shape is a suffix of a's, so b repeats every numel(b).
void op_binary(const ReferenceCtx& c, bool is_add) {
  const auto& a = c.f(0);
  const auto& b = c.f(1);
  HostTensor& y = c.out(0);
  size_t nb = b.size();
  if (nb == 0 || a.size() % nb != 0) c.fail("b does not broadcast over a");
  for (size_t k = 0; k < a.size(); ++k) {
    double av = a[k], bv = b[k % nb];
    y.f32[k] = static_cast<float>(is_add ? av + bv : av * bv);
  }
}

void op_scale(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  double s = c.fa(0);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = static_cast<float>(x[k] * s);
}

void op_gelu(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = static_cast<float>(gelu(x[k]));
}

void op_gelu_grad(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& dy = c.f(1);
  HostTensor& dx = c.out(0);
  for (size_t k = 0; k < x.size(); ++k)
    dx.f32[k] = static_cast<float>(static_cast<double>(dy[k]) * gelu_derivative(x[k]));
}

void op_gelu_erf(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = static_cast<float>(gelu_erf(x[k]));
}

void op_gelu_erf_grad(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& dy = c.f(1);
  HostTensor& dx = c.out(0);
  for (size_t k = 0; k < x.size(); ++k)
    dx.f32[k] = static_cast<float>(static_cast<double>(dy[k]) * gelu_erf_derivative(x[k]));
}

void op_silu(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = static_cast<float>(silu(x[k]));
}

void op_silu_grad(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& dy = c.f(1);
  HostTensor& dx = c.out(0);
  for (size_t k = 0; k < x.size(); ++k)
    dx.f32[k] = static_cast<float>(static_cast<double>(dy[k]) * silu_derivative(x[k]));
}

void op_clamp(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const double lo = c.fa(0), hi = c.fa(1);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = static_cast<float>(clamp(x[k], lo, hi));
}

// PyTorch's clamp backward: the bounds themselves pass the gradient; a NaN x
// fails both comparisons and gets 0.
void op_clamp_grad(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& dy = c.f(1);
  const double lo = c.fa(0), hi = c.fa(1);
  HostTensor& dx = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) {
    const double xk = x[k];
    dx.f32[k] = lo <= xk && xk <= hi ? dy[k] : 0.0f;
  }
}

void op_add(const ReferenceCtx& c) { op_binary(c, true); }
void op_mul(const ReferenceCtx& c) { op_binary(c, false); }

}  // namespace

void register_elementwise_ops(OpDefs& defs) {
  defs[KILN_OP_FILL] = {nullptr, op_fill};
  defs[KILN_OP_ADD] = {vjp_add, op_add};
  defs[KILN_OP_MUL] = {vjp_mul, op_mul};
  defs[KILN_OP_SCALE] = {vjp_scale, op_scale};
  defs[KILN_OP_GELU] = {vjp_gelu, op_gelu};
  defs[KILN_OP_GELU_GRAD] = {nullptr, op_gelu_grad};
  defs[KILN_OP_GELU_ERF] = {vjp_gelu_erf, op_gelu_erf};
  defs[KILN_OP_GELU_ERF_GRAD] = {nullptr, op_gelu_erf_grad};
  defs[KILN_OP_SILU] = {vjp_silu, op_silu};
  defs[KILN_OP_SILU_GRAD] = {nullptr, op_silu_grad};
  defs[KILN_OP_CLAMP] = {vjp_clamp, op_clamp};
  defs[KILN_OP_CLAMP_GRAD] = {nullptr, op_clamp_grad};
}

}  // namespace kiln::graph
