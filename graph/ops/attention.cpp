// Attention's softmax: CAUSAL_SOFTMAX (scaled, masked above the diagonal)
// and its gradient.
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
ValueId Graph::softmax_grad(ValueId y, ValueId dy, float s) {
  return add_node(KILN_OP_SOFTMAX_GRAD, {y, dy}, {}, {s})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = causal_softmax(x): dx = scale * y * (dy - sum(dy * y)), from y itself.
Grads vjp_causal_softmax(Graph& g, const VjpArgs& a) {
  return {g.softmax_grad(a.out(0), a.dy[0], a.node.fattrs.at(0))};
}

// ---------------------------------------------------------------- reference

void op_causal_softmax(const ReferenceCtx& c) {
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
      double mx = -INFINITY;
      for (int64_t j = 0; j <= i; ++j) mx = std::max(mx, scale * xr[j]);
      double sum = 0.0;
      for (int64_t j = 0; j <= i; ++j) {
        e[static_cast<size_t>(j)] = std::exp(scale * xr[j] - mx);
        sum += e[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j <= i; ++j) yr[j] = static_cast<float>(e[static_cast<size_t>(j)] / sum);
    }
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

}  // namespace

void register_attention_ops(OpDefs& defs) {
  defs[KILN_OP_CAUSAL_SOFTMAX] = {vjp_causal_softmax, op_causal_softmax};
  defs[KILN_OP_SOFTMAX_GRAD] = {nullptr, op_softmax_grad};
}

}  // namespace kiln::graph
