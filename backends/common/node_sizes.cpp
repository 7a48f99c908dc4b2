#include "node_sizes.h"

#include <algorithm>
#include <utility>

namespace kiln::backend {

namespace {

using Dims = std::vector<int64_t>;

int64_t prod(const Dims& d, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= d[i];
  return n;
}

PermutePlan plan_permute(const Dims& in_dims, const std::vector<int64_t>& perm) {
  // Size-1 dims move nothing: drop them.
  const size_t r = in_dims.size();
  std::vector<int> renum(r, -1);
  Dims d;
  for (size_t i = 0; i < r; ++i)
    if (in_dims[i] != 1) {
      renum[i] = static_cast<int>(d.size());
      d.push_back(in_dims[i]);
    }
  std::vector<int> p;
  for (int64_t src : perm)
    if (renum[static_cast<size_t>(src)] >= 0) p.push_back(renum[static_cast<size_t>(src)]);
  // Output dims that are consecutive input dims move together: merge them.
  std::vector<std::pair<int, int>> groups;  // input dim range [first, last]
  for (int src : p) {
    if (!groups.empty() && groups.back().second + 1 == src)
      groups.back().second = src;
    else
      groups.emplace_back(src, src);
  }
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return groups[a].first < groups[b].first; });
  std::vector<int64_t> gsize(groups.size()), gstride(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    gsize[i] = 1;
    for (int k = groups[i].first; k <= groups[i].second; ++k) gsize[i] *= d[static_cast<size_t>(k)];
  }
  int64_t stride = 1;
  for (size_t i = order.size(); i-- > 0;) {
    gstride[order[i]] = stride;
    stride *= gsize[order[i]];
  }
  PermutePlan plan;
  plan.rank = static_cast<int>(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    plan.out_dims[i] = gsize[i];
    plan.in_strides[i] = gstride[i];
  }
  return plan;
}

// The kernel sizes of a node whose shapes check_graph accepted, by the op's
// shape rule: every op of a rule kind gets the same sizes, so an op added
// with an existing rule needs nothing here.
void derive(const ir::DecodedGraph& g, const ir::DecodedNode& n, NodeInfo* p) {
  auto in = [&](size_t i) -> const ir::DecodedValue& { return g.values[n.inputs[i]]; };
  auto out = [&](size_t i) -> const ir::DecodedValue& { return g.values[n.outputs[i]]; };
  // Row-wise ops reduce over the last dim (a rank-0 value is one row of one).
  auto rows_by_last_dim = [&](const ir::DecodedValue& x) {
    p->cols = x.dims.empty() ? 1 : x.dims.back();
    p->rows = x.numel() / p->cols;
  };
  p->op = n.op;
  if (!n.inputs.empty()) p->x_dtype = in(0).dtype;
  if (!n.outputs.empty()) p->y_dtype = out(0).dtype;
  switch (kiln_op_table[n.op].rule) {
    case KILN_RULE_GIVEN_SHAPE: p->count = out(0).numel(); return;
    case KILN_RULE_BROADCAST:
      p->count = in(0).numel();
      p->bcast = in(1).numel();
      return;
    case KILN_RULE_SAME:  // elementwise, and SOFTMAX_GRAD's rows
      p->count = in(0).numel();
      rows_by_last_dim(in(0));
      return;
    case KILN_RULE_MATMUL: {
      const Dims& a = in(0).dims;
      const Dims& b = in(1).dims;
      const size_t r = a.size();
      p->trans_a = n.iattrs[0] != 0;
      p->trans_b = n.iattrs[1] != 0;
      p->batch = prod(a, 0, r - 2);
      p->m = p->trans_a ? a[r - 1] : a[r - 2];
      p->k = p->trans_a ? a[r - 2] : a[r - 1];
      p->n = p->trans_b ? b[r - 2] : b[r - 1];
      return;
    }
    case KILN_RULE_EMBEDDING:
      p->rows = in(1).numel();
      p->cols = in(0).dims[1];
      p->vocab = in(0).dims[0];
      return;
    case KILN_RULE_EMBEDDING_GRAD:
      p->rows = in(1).numel();
      p->cols = in(0).dims.back();
      p->vocab = n.iattrs[0];
      return;
    case KILN_RULE_NORM:
    case KILN_RULE_NORM_GRAD:
    case KILN_RULE_SQUARE_ROWS:
    case KILN_RULE_ROW_REDUCE: rows_by_last_dim(in(0)); return;
    case KILN_RULE_LOSS:
    case KILN_RULE_LOSS_GRAD:
    case KILN_RULE_SHARD_LOSS:
    case KILN_RULE_SHARD_LOSS_GRAD:
    case KILN_RULE_SUMS_LOSS:
    case KILN_RULE_SUMS_LOSS_GRAD:
      p->rows = in(0).dims[0];
      p->cols = in(0).dims[1];
      return;
    case KILN_RULE_SUM_TO_SUFFIX:
      p->cols = out(0).numel();
      p->rows = in(0).numel() / p->cols;
      return;
    case KILN_RULE_RESHAPE:
    case KILN_RULE_CAST:
    case KILN_RULE_TO_SCALAR:
    case KILN_RULE_ALL_REDUCE:
    case KILN_RULE_GATHER:   // host collectives: sized for completeness,
    case KILN_RULE_SCATTER:  // never compiled by a plugin
      p->count = in(0).numel();
      return;
    case KILN_RULE_ATTENTION:  // a row per query of every matrix, the head size as columns
    case KILN_RULE_ATTENTION_DROPOUT:
      rows_by_last_dim(in(0));
      p->count = in(0).numel();
      return;
    case KILN_RULE_CAST_FP8:
      p->count = in(0).numel();
      p->fp8_format = n.iattrs[0];
      p->fp8_current = n.iattrs[1] != 0;
      return;
    case KILN_RULE_PERMUTE:
      p->count = in(0).numel();
      p->permute = plan_permute(in(0).dims, n.iattrs);
      return;
    case KILN_RULE_SPLIT: {
      const Dims& x = in(0).dims;
      const auto a = static_cast<size_t>(n.iattrs[0]);
      p->rows = prod(x, 0, a);
      p->parts = n.iattrs[1];
      p->inner = x[a] / p->parts * prod(x, a + 1, x.size());
      return;
    }
    case KILN_RULE_CONCAT: {
      const Dims& y = out(0).dims;
      const auto a = static_cast<size_t>(n.iattrs[0]);
      const int64_t tail = prod(y, a + 1, y.size());
      p->rows = prod(y, 0, a);
      p->inner = y[a] * tail;
      for (size_t i = 0; i < n.inputs.size(); ++i) p->inners.push_back(in(i).dims[a] * tail);
      return;
    }
    case KILN_RULE_ALIBI:
      p->count = in(0).numel();
      rows_by_last_dim(in(0));
      p->heads = in(1).dims[0];
      return;
    case KILN_RULE_ADAMW:
      p->count = in(0).numel();
      p->weight_decay = n.iattrs[0] != 0;
      p->grad_dtype = in(1).dtype;
      return;
    case KILN_RULE_ROPE: {
      const Dims& x = in(0).dims;
      rows_by_last_dim(in(0));
      p->positions = x[x.size() - 2];
      p->pairs = in(1).dims[1];
      p->interleaved = n.iattrs[0] != 0;
      return;
    }
    case KILN_RULE_DROPOUT:
      p->count = in(0).numel();
      p->site = n.iattrs[0];
      p->period = n.iattrs[1];
      p->stride = n.iattrs[2];
      return;
    case KILN_RULE_DROPOUT_KEYED:  // its site is in the key, read at run time
      p->count = in(0).numel();
      p->site = -1;
      p->period = n.iattrs[0];
      p->stride = n.iattrs[1];
      return;
    case KILN_RULE_DOCUMENT_ROWS:  // the starts are [batch, T]
      rows_by_last_dim(in(0));
      p->batch = in(1).dims[0];
      return;
  }
}

}  // namespace

std::vector<NodeInfo> node_sizes(const ir::DecodedGraph& g) {
  std::vector<NodeInfo> out(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) derive(g, g.nodes[i], &out[i]);
  return out;
}

}  // namespace kiln::backend
