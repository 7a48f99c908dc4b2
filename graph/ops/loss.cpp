// The language-model loss: CROSS_ENTROPY (mean over rows) and its gradient.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_loss_ops at the bottom.
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

ValueId Graph::cross_entropy(ValueId logits, ValueId targets) {
  return add_node(KILN_OP_CROSS_ENTROPY, {logits, targets})[0];
}
ValueId Graph::cross_entropy_grad(ValueId logits, ValueId targets, ValueId dloss) {
  return add_node(KILN_OP_CROSS_ENTROPY_GRAD, {logits, targets, dloss})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// loss = cross_entropy(logits, targets): dlogits scaled by dloss.
Grads vjp_cross_entropy(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0]) d[0] = g.cross_entropy_grad(a.in(0), a.in(1), a.dy[0]);
  return d;
}

// ---------------------------------------------------------------- reference

// log(sum_j exp(row[j])), computed stably.
double log_sum_exp(const float* row, int64_t V) {
  double mx = -INFINITY;
  for (int64_t j = 0; j < V; ++j) mx = std::max(mx, static_cast<double>(row[j]));
  double s = 0.0;
  for (int64_t j = 0; j < V; ++j) s += std::exp(row[j] - mx);
  return mx + std::log(s);
}

void op_cross_entropy(const ReferenceCtx& c) {
  const auto& logits = c.f(0);
  const auto& targets = c.ids(1);
  int64_t N = c.shape_in(0)[0], V = c.shape_in(0)[1];
  double total = 0.0;
  for (int64_t n = 0; n < N; ++n) {
    int32_t t = targets[static_cast<size_t>(n)];
    check_id(c, t, V, static_cast<size_t>(n));
    const float* row = logits.data() + n * V;
    total += log_sum_exp(row, V) - row[t];
  }
  c.out(0).f32[0] = static_cast<float>(total / static_cast<double>(N));
}

// dlogits = dloss / N * (softmax(logits) - onehot(target)).
void op_cross_entropy_grad(const ReferenceCtx& c) {
  const auto& logits = c.f(0);
  const auto& targets = c.ids(1);
  double dloss = c.f(2).at(0);
  int64_t N = c.shape_in(0)[0], V = c.shape_in(0)[1];
  HostTensor& d = c.out(0);
  double k = dloss / static_cast<double>(N);
  for (int64_t n = 0; n < N; ++n) {
    int32_t t = targets[static_cast<size_t>(n)];
    check_id(c, t, V, static_cast<size_t>(n));
    const float* row = logits.data() + n * V;
    double lse = log_sum_exp(row, V);
    for (int64_t j = 0; j < V; ++j) {
      double p = std::exp(row[j] - lse) - (j == t ? 1.0 : 0.0);
      d.f32[static_cast<size_t>(n * V + j)] = static_cast<float>(k * p);
    }
  }
}

}  // namespace

void register_loss_ops(OpDefs& defs) {
  defs[KILN_OP_CROSS_ENTROPY] = {vjp_cross_entropy, op_cross_entropy};
  defs[KILN_OP_CROSS_ENTROPY_GRAD] = {nullptr, op_cross_entropy_grad};
}

}  // namespace kiln::graph
