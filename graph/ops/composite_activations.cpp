// Activations as composites: SQUARED_RELU and its gradient (composites
// only), and the decompositions of GELU, GELU_ERF, SILU and CLAMP and their
// gradients (ops whose builders, VJPs and references are in elementwise.cpp).
//
// Each decomposition is made of table primitives (the arithmetic ops and the
// math primitives of math.cpp). No backend needs a kernel for a composite:
// the host expands one a backend does not list before it places nodes
// (graph/decompose.h), so every backend that runs the primitives runs it
// too, with no fallback to the cpu. A backend keeps a fused kernel as an
// optimisation and lists the op (every in-tree backend does for GELU, SILU
// and CLAMP); the reference stays the oracle for both.
#include <limits>
#include <numbers>
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

// Runs `body` on f32 copies of n's inputs and casts its one output back to
// n's dtype. A bf16/f16 activation then rounds once, at the end, as the
// reference rounds it; decomposed step by step in bf16, every intermediate
// would round to 8 bits (1 + tanh would lose most of its digits).
template <class Body>
std::vector<ValueId> in_f32(Graph& g, const Node& n, Body body) {
  const kiln_dtype dtype = g.value(n.inputs[0]).dtype;
  std::vector<ValueId> in;
  for (ValueId v : n.inputs) in.push_back(dtype == KILN_F32 ? v : g.cast(v, KILN_F32));
  const ValueId y = body(in);
  return {dtype == KILN_F32 ? y : g.cast(y, dtype)};
}

// x + c: a FILL of x's last dimension, broadcast as a suffix.
ValueId plus(Graph& g, ValueId x, float c) {
  const Shape& s = g.shape(x);
  return g.add(x, g.fill(Shape{s.empty() ? 1 : s.back()}, c));
}

// sqrt(2/pi) and the cubic coefficient of GELU's tanh approximation.
constexpr float kGeluK = 0.7978845608028654f;
constexpr float kGeluC = 0.044715f;
constexpr float kInvSqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
constexpr float kInvSqrt2Pi = static_cast<float>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
// |x| beyond which GELU's tanh is +-1 in f32 (tanh(u) rounds to 1 from
// u = 9.1, x = 5.3); the derivative's polynomial is taken at x clamped
// here, where 1 - t^2 is exactly 0, so that x^2 cannot overflow to inf and
// turn 0 * inf into NaN where the reference gives a finite result.
constexpr float kGeluSaturated = 1e4f;

// u = k (x + c x^3).
ValueId gelu_u(Graph& g, ValueId x) { return g.scale(g.add(x, g.scale(g.mul(g.mul(x, x), x), kGeluC)), kGeluK); }

// 0.5 x (1 + tanh u): the table's formula, term for term.
std::vector<ValueId> decompose_gelu(Graph& g, const Node& n) {
  return in_f32(g, n, [&](const std::vector<ValueId>& in) {
    const ValueId x = in[0];
    return g.mul(g.scale(x, 0.5f), plus(g, g.tanh(gelu_u(g, x)), 1.0f));
  });
}

// dy (0.5 (1 + t) + 0.5 x (1 - t^2) u'), u' = k (1 + 3c x^2).
std::vector<ValueId> decompose_gelu_grad(Graph& g, const Node& n) {
  return in_f32(g, n, [&](const std::vector<ValueId>& in) {
    const ValueId x = in[0], dy = in[1];
    const ValueId t = g.tanh(gelu_u(g, x));
    const ValueId xs = g.clamp(x, -kGeluSaturated, kGeluSaturated);
    const ValueId du = g.scale(plus(g, g.scale(g.mul(xs, xs), 3.0f * kGeluC), 1.0f), kGeluK);
    const ValueId sech2 = plus(g, g.scale(g.mul(t, t), -1.0f), 1.0f);
    const ValueId d = g.add(g.scale(plus(g, t, 1.0f), 0.5f), g.mul(g.mul(g.scale(x, 0.5f), sech2), du));
    return g.mul(dy, d);
  });
}

// Phi(x) = 0.5 (1 + erf(x / sqrt 2)), the normal CDF.
ValueId normal_cdf(Graph& g, ValueId x) { return g.scale(plus(g, g.erf(g.scale(x, kInvSqrt2)), 1.0f), 0.5f); }

// x Phi(x).
std::vector<ValueId> decompose_gelu_erf(Graph& g, const Node& n) {
  return in_f32(g, n, [&](const std::vector<ValueId>& in) { return g.mul(in[0], normal_cdf(g, in[0])); });
}

// dy (Phi(x) + x phi(x)), phi(x) = e^(-x^2 / 2) / sqrt(2 pi).
std::vector<ValueId> decompose_gelu_erf_grad(Graph& g, const Node& n) {
  return in_f32(g, n, [&](const std::vector<ValueId>& in) {
    const ValueId x = in[0], dy = in[1];
    const ValueId pdf = g.scale(g.exp(g.scale(g.mul(x, x), -0.5f)), kInvSqrt2Pi);
    return g.mul(dy, g.add(normal_cdf(g, x), g.mul(x, pdf)));
  });
}

// sigmoid(x) = 0.5 (1 + tanh(x / 2)): no division in the IR, and no
// overflow (e^-x would be inf below x = -88).
ValueId sigmoid(Graph& g, ValueId t) { return g.scale(plus(g, t, 1.0f), 0.5f); }
ValueId half_tanh(Graph& g, ValueId x) { return g.tanh(g.scale(x, 0.5f)); }

// x sigmoid(x).
std::vector<ValueId> decompose_silu(Graph& g, const Node& n) {
  return in_f32(g, n, [&](const std::vector<ValueId>& in) { return g.mul(in[0], sigmoid(g, half_tanh(g, in[0]))); });
}

// dy s (1 + x (1 - s)), 1 - s = 0.5 (1 - t): no cancellation as s -> 1.
std::vector<ValueId> decompose_silu_grad(Graph& g, const Node& n) {
  return in_f32(g, n, [&](const std::vector<ValueId>& in) {
    const ValueId x = in[0], dy = in[1];
    const ValueId t = half_tanh(g, x);
    const ValueId one_minus_s = g.scale(plus(g, g.scale(t, -1.0f), 1.0f), 0.5f);
    return g.mul(dy, g.mul(sigmoid(g, t), plus(g, g.mul(x, one_minus_s), 1.0f)));
  });
}

// min(max(x, lo), hi), min(a, b) = -max(-a, -b): selections and negations,
// exact in every dtype; MAXIMUM keeps a NaN x NaN and a -0 x -0, as CLAMP does.
std::vector<ValueId> decompose_clamp(Graph& g, const Node& n) {
  return in_f32(g, n, [&](const std::vector<ValueId>& in) {
    const ValueId x = in[0];
    const Shape last{g.shape(x).empty() ? 1 : g.shape(x).back()};
    const ValueId above = g.maximum(x, g.fill(last, n.fattrs.at(0)));
    return g.scale(g.maximum(g.scale(above, -1.0f), g.fill(last, -n.fattrs.at(1))), -1.0f);
  });
}

// lo <= x <= hi ? dy : 0; a NaN x fails both comparisons and gets 0.
std::vector<ValueId> decompose_clamp_grad(Graph& g, const Node& n) {
  return in_f32(g, n, [&](const std::vector<ValueId>& in) {
    const ValueId x = in[0], dy = in[1];
    const Shape shape(g.shape(x));
    const ValueId zero = g.fill(shape, 0.0f);
    const ValueId below_hi = g.select(x, g.fill(shape, n.fattrs.at(1)), dy, zero);
    return g.select(g.fill(shape, n.fattrs.at(0)), x, below_hi, zero);
  });
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
  // Ops of their own with kernels in every in-tree backend, and a
  // decomposition for a backend without one.
  defs[KILN_OP_GELU].decompose = decompose_gelu;
  defs[KILN_OP_GELU_GRAD].decompose = decompose_gelu_grad;
  defs[KILN_OP_GELU_ERF].decompose = decompose_gelu_erf;
  defs[KILN_OP_GELU_ERF_GRAD].decompose = decompose_gelu_erf_grad;
  defs[KILN_OP_SILU].decompose = decompose_silu;
  defs[KILN_OP_SILU_GRAD].decompose = decompose_silu_grad;
  defs[KILN_OP_CLAMP].decompose = decompose_clamp;
  defs[KILN_OP_CLAMP_GRAD].decompose = decompose_clamp_grad;
}

}  // namespace kiln::graph
