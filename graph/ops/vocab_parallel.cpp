// The vocab-parallel cross-entropy in its parts (Megatron's): ROW_MAX, the
// per-shard sums and their gradient, the loss from the group-summed sums and
// its gradient.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_vocab_parallel_ops at the bottom.
#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::row_max(ValueId x) { return add_node(KILN_OP_ROW_MAX, {x})[0]; }
ValueId Graph::cross_entropy_shard(ValueId logits, ValueId targets, ValueId rowmax) {
  return add_node(KILN_OP_CROSS_ENTROPY_SHARD, {logits, targets, rowmax})[0];
}
ValueId Graph::cross_entropy_shard_grad(ValueId logits, ValueId targets, ValueId rowmax, ValueId dsums) {
  return add_node(KILN_OP_CROSS_ENTROPY_SHARD_GRAD, {logits, targets, rowmax, dsums})[0];
}
ValueId Graph::cross_entropy_from_sums(ValueId sums) { return add_node(KILN_OP_CROSS_ENTROPY_FROM_SUMS, {sums})[0]; }
ValueId Graph::cross_entropy_from_sums_grad(ValueId sums, ValueId dloss) {
  return add_node(KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD, {sums, dloss})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// The vocab-parallel cross-entropy's parts. The loss does not depend on
// rowmax (it cancels), so it gets no gradient; the targets are integers.
Grads vjp_cross_entropy_shard(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0]) d[0] = g.cross_entropy_shard_grad(a.in(0), a.in(1), a.in(2), a.dy[0]);
  return d;
}

Grads vjp_cross_entropy_from_sums(Graph& g, const VjpArgs& a) {
  return {g.cross_entropy_from_sums_grad(a.in(0), a.dy[0])};
}

// ---------------------------------------------------------------- reference

// A target this vocab shard holds, or -1 for one that lives in another shard.
int64_t local_target(int32_t t, int64_t V) { return t >= 0 && t < V ? t : -1; }

// y[r] = max over the last dim of row r; a NaN anywhere in the row makes
// it NaN (as a max would that any NaN poisons, like a sum).
void op_row_max(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const int64_t V = c.shape_in(0).back();
  HostTensor& y = c.out(0);
  for (size_t r = 0; r < y.f32.size(); ++r) {
    const float* row = x.data() + static_cast<int64_t>(r) * V;
    float m = row[0];
    // !(a <= m): a is larger or NaN; once m is NaN it stays NaN.
    for (int64_t j = 1; j < V && !std::isnan(m); ++j)
      if (!(row[j] <= m)) m = row[j];
    y.f32[r] = m;
  }
}

// sums[i] = {sum_j exp(logits[i][j] - rowmax[i]), logits[i][t] - rowmax[i]}.
void op_cross_entropy_shard(const ReferenceCtx& c) {
  const auto& logits = c.f(0);
  const auto& targets = c.ids(1);
  const auto& rowmax = c.f(2);
  int64_t N = c.shape_in(0)[0], V = c.shape_in(0)[1];
  HostTensor& sums = c.out(0);
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits.data() + n * V;
    const double m = rowmax[static_cast<size_t>(n)];
    double s = 0.0;
    for (int64_t j = 0; j < V; ++j) s += std::exp(row[j] - m);
    const int64_t t = local_target(targets[static_cast<size_t>(n)], V);
    sums.f32[static_cast<size_t>(2 * n)] = static_cast<float>(s);
    sums.f32[static_cast<size_t>(2 * n + 1)] = t < 0 ? 0.0f : static_cast<float>(row[t] - m);
  }
}

// dlogits[i][j] = dsums[i][0] exp(logits[i][j] - rowmax[i]) + (j == t ? dsums[i][1] : 0).
void op_cross_entropy_shard_grad(const ReferenceCtx& c) {
  const auto& logits = c.f(0);
  const auto& targets = c.ids(1);
  const auto& rowmax = c.f(2);
  const auto& dsums = c.f(3);
  int64_t N = c.shape_in(0)[0], V = c.shape_in(0)[1];
  HostTensor& d = c.out(0);
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits.data() + n * V;
    const double m = rowmax[static_cast<size_t>(n)];
    const double d0 = dsums[static_cast<size_t>(2 * n)], d1 = dsums[static_cast<size_t>(2 * n + 1)];
    const int64_t t = local_target(targets[static_cast<size_t>(n)], V);
    for (int64_t j = 0; j < V; ++j)
      d.f32[static_cast<size_t>(n * V + j)] = static_cast<float>(d0 * std::exp(row[j] - m) + (j == t ? d1 : 0.0));
  }
}

// loss = mean over N of log(sums[i][0]) - sums[i][1].
void op_cross_entropy_from_sums(const ReferenceCtx& c) {
  const auto& sums = c.f(0);
  int64_t N = c.shape_in(0)[0];
  double total = 0.0;
  for (size_t n = 0; n < static_cast<size_t>(N); ++n)
    total += std::log(static_cast<double>(sums[2 * n])) - static_cast<double>(sums[2 * n + 1]);
  c.out(0).f32[0] = static_cast<float>(total / static_cast<double>(N));
}

// dsums[i] = {dloss / (N sums[i][0]), -dloss / N}.
void op_cross_entropy_from_sums_grad(const ReferenceCtx& c) {
  const auto& sums = c.f(0);
  double k = c.f(1).at(0) / static_cast<double>(c.shape_in(0)[0]);
  HostTensor& d = c.out(0);
  for (size_t n = 0; n < d.f32.size() / 2; ++n) {
    d.f32[2 * n] = static_cast<float>(k / static_cast<double>(sums[2 * n]));
    d.f32[2 * n + 1] = static_cast<float>(-k);
  }
}

}  // namespace

void register_vocab_parallel_ops(OpDefs& defs) {
  defs[KILN_OP_ROW_MAX] = {nullptr, op_row_max};
  defs[KILN_OP_CROSS_ENTROPY_SHARD] = {vjp_cross_entropy_shard, op_cross_entropy_shard};
  defs[KILN_OP_CROSS_ENTROPY_SHARD_GRAD] = {nullptr, op_cross_entropy_shard_grad};
  defs[KILN_OP_CROSS_ENTROPY_FROM_SUMS] = {vjp_cross_entropy_from_sums, op_cross_entropy_from_sums};
  defs[KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD] = {nullptr, op_cross_entropy_from_sums_grad};
}

}  // namespace kiln::graph
