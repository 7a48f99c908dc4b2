// Attention's softmax: CAUSAL_SOFTMAX (scaled, masked above the diagonal)
// and its gradient; DOCUMENT_SOFTMAX, masked before each query's document
// too; ALIBI, the per-head linear position bias added to the
// scores before it (MPT).
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_attention_ops at the bottom.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::causal_softmax(ValueId x, float s) { return add_node(KILN_OP_CAUSAL_SOFTMAX, {x}, {}, {s})[0]; }
ValueId Graph::document_softmax(ValueId x, ValueId starts, float s) {
  return add_node(KILN_OP_DOCUMENT_SOFTMAX, {x, starts}, {}, {s})[0];
}
ValueId Graph::softmax_grad(ValueId y, ValueId dy, float s) {
  return add_node(KILN_OP_SOFTMAX_GRAD, {y, dy}, {}, {s})[0];
}
ValueId Graph::alibi(ValueId x, ValueId slopes) { return add_node(KILN_OP_ALIBI, {x, slopes})[0]; }

namespace {

// ---------------------------------------------------------------- VJP rules

// y = causal_softmax(x): dx = scale * y * (dy - sum(dy * y)), from y itself.
Grads vjp_causal_softmax(Graph& g, const VjpArgs& a) {
  return {g.softmax_grad(a.out(0), a.dy[0], a.node.fattrs.at(0))};
}

// The same for DOCUMENT_SOFTMAX: its masked entries of y are 0 too. The
// starts are positions, with no gradient.
Grads vjp_document_softmax(Graph& g, const VjpArgs& a) {
  Grads dx = none_for(a);
  dx[0] = g.softmax_grad(a.out(0), a.dy[0], a.node.fattrs.at(0));
  return dx;
}

// y = x + bias(slopes): dx = dy. The slopes are constants of the model
// (computed on the host from the head count), so they get no gradient.
Grads vjp_alibi(Graph&, const VjpArgs& a) {
  Grads dx = none_for(a);
  dx[0] = a.dy[0];
  return dx;
}

// ---------------------------------------------------------------- reference

// Row i of matrix m: the softmax over first(m, i) <= j <= i.
template <typename First>
void masked_softmax_rows(const ReferenceCtx& c, First first) {
  const auto& x = c.f(0);
  double scale = c.fa(0);
  int64_t T = c.shape_in(0).back();
  int64_t mats = static_cast<int64_t>(x.size()) / (T * T);
  HostTensor& y = c.out(0);  // zero-initialized: masked entries stay exactly 0
  std::vector<double> e(static_cast<size_t>(T));
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < T; ++i) {
      const float* xr = x.data() + (m * T + i) * T;
      float* yr = y.f32.data() + (m * T + i) * T;
      const int64_t j0 = first(m, i);
      double mx = -INFINITY;
      for (int64_t j = j0; j <= i; ++j) mx = std::max(mx, scale * xr[j]);
      double sum = 0.0;
      for (int64_t j = j0; j <= i; ++j) {
        e[static_cast<size_t>(j)] = std::exp(scale * xr[j] - mx);
        sum += e[static_cast<size_t>(j)];
      }
      for (int64_t j = j0; j <= i; ++j) yr[j] = static_cast<float>(e[static_cast<size_t>(j)] / sum);
    }
}

void op_causal_softmax(const ReferenceCtx& c) {
  masked_softmax_rows(c, [](int64_t, int64_t) { return int64_t{0}; });
}

// Sample b's matrices are the b-th 1/B of them; a start is clamped to [0, i].
void op_document_softmax(const ReferenceCtx& c) {
  const auto& starts = c.ids(1);
  const int64_t B = c.shape_in(1)[0], T = c.shape_in(1)[1];
  const int64_t mats_per_sample = static_cast<int64_t>(c.f(0).size()) / (T * T) / B;
  masked_softmax_rows(c, [&](int64_t m, int64_t i) {
    const int64_t s = starts[static_cast<size_t>(m / mats_per_sample * T + i)];
    return std::clamp<int64_t>(s, 0, i);
  });
}

// dx = scale * y * (dy - sum_j dy*y), rows over the last dim.
void op_softmax_grad(const ReferenceCtx& c) {
  const auto& y = c.f(0);
  const auto& dy = c.f(1);
  double scale = c.fa(0);
  int64_t T = c.shape_in(0).back();
  int64_t rows = static_cast<int64_t>(y.size()) / T;
  HostTensor& dx = c.out(0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y.data() + r * T;
    const float* dr = dy.data() + r * T;
    double dot = 0.0;
    for (int64_t j = 0; j < T; ++j) dot += static_cast<double>(dr[j]) * yr[j];
    for (int64_t j = 0; j < T; ++j)
      dx.f32[static_cast<size_t>(r * T + j)] = static_cast<float>(scale * yr[j] * (dr[j] - dot));
  }
}

// y[..., h, i, j] = x[..., h, i, j] + bias, the sum in double. The op
// defines bias = slopes[h] * (j - i) rounded to f32 (so a bias beyond the f32
// range is infinite, as on every backend): the double product of a float
// and an integer below 2^29 is exact, so one rounding gives it.
void op_alibi(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& slopes = c.f(1);
  const Shape& s = c.shape_in(0);
  const int64_t T = s.back();
  const int64_t H = s[s.size() - 3];
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) {
    const auto e = static_cast<int64_t>(k);
    const int64_t j = e % T, i = e / T % T, h = e / (T * T) % H;
    const auto bias =
        static_cast<float>(static_cast<double>(slopes[static_cast<size_t>(h)]) * static_cast<double>(j - i));
    y.f32[k] = static_cast<float>(static_cast<double>(x[k]) + static_cast<double>(bias));
  }
}

}  // namespace

void register_attention_ops(OpDefs& defs) {
  defs[KILN_OP_CAUSAL_SOFTMAX] = {vjp_causal_softmax, op_causal_softmax};
  defs[KILN_OP_DOCUMENT_SOFTMAX] = {vjp_document_softmax, op_document_softmax};
  defs[KILN_OP_SOFTMAX_GRAD] = {nullptr, op_softmax_grad};
  defs[KILN_OP_ALIBI] = {vjp_alibi, op_alibi};
}

}  // namespace kiln::graph
