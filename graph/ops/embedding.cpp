// Table lookup by integer ids: EMBEDDING and its scatter-add gradient.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_embedding_ops at the bottom.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::embedding(ValueId table, ValueId ids) { return add_node(KILN_OP_EMBEDDING, {table, ids})[0]; }
ValueId Graph::embedding_grad(ValueId dy, ValueId ids, int64_t vocab) {
  return add_node(KILN_OP_EMBEDDING_GRAD, {dy, ids}, {vocab})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = table[ids]: dtable = scatter-add of dy rows; ids get nothing.
Grads vjp_embedding(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0]) d[0] = g.embedding_grad(a.dy[0], a.in(1), g.shape(a.in(0)).at(0));
  return d;
}

// ---------------------------------------------------------------- reference

void op_embedding(const ReferenceCtx& c) {
  const auto& table = c.f(0);
  const auto& ids = c.ids(1);
  int64_t V = c.shape_in(0)[0], C = c.shape_in(0)[1];
  HostTensor& y = c.out(0);
  for (size_t i = 0; i < ids.size(); ++i) {
    check_id(c, ids[i], V, i);
    std::copy_n(table.begin() + ids[i] * C, C, y.f32.begin() + static_cast<int64_t>(i) * C);
  }
}

void op_embedding_grad(const ReferenceCtx& c) {
  const auto& dy = c.f(0);
  const auto& ids = c.ids(1);
  int64_t V = c.ia(0);
  int64_t C = c.shape_in(0).back();
  std::vector<double> acc(static_cast<size_t>(V * C), 0.0);
  for (size_t i = 0; i < ids.size(); ++i) {
    check_id(c, ids[i], V, i);
    for (int64_t j = 0; j < C; ++j)
      acc[static_cast<size_t>(ids[i] * C + j)] += dy[i * static_cast<size_t>(C) + static_cast<size_t>(j)];
  }
  HostTensor& dt = c.out(0);
  for (size_t k = 0; k < acc.size(); ++k) dt.f32[k] = static_cast<float>(acc[k]);
}

}  // namespace

void register_embedding_ops(OpDefs& defs) {
  defs[KILN_OP_EMBEDDING] = {vjp_embedding, op_embedding};
  defs[KILN_OP_EMBEDDING_GRAD] = {nullptr, op_embedding_grad};
}

}  // namespace kiln::graph
