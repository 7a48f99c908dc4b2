// Batched matrix product with transpose flags: MATMUL.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_matmul_ops at the bottom.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::matmul(ValueId a, ValueId b, bool ta, bool tb) {
  return add_node(KILN_OP_MATMUL, {a, b}, {ta ? 1 : 0, tb ? 1 : 0})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = op(A) @ op(B) with op(A) [M, K], op(B) [K, N] (batched over leading
// dims). d op(A) = dy @ op(B)^T and d op(B) = op(A)^T @ dy; when an operand
// is stored transposed its gradient is the transpose of that, which the
// MATMUL trans flags express without a PERMUTE:
//   ta=0: dA = dy @ op(B)^T      -> tb=0: matmul(dy, B, 0, 1)  tb=1: matmul(dy, B, 0, 0)
//   ta=1: dA = op(B) @ dy^T      -> tb=0: matmul(B, dy, 0, 1)  tb=1: matmul(B, dy, 1, 1)
//   tb=0: dB = op(A)^T @ dy      -> ta=0: matmul(A, dy, 1, 0)  ta=1: matmul(A, dy, 0, 0)
//   tb=1: dB = dy^T @ op(A)      -> ta=0: matmul(dy, A, 1, 0)  ta=1: matmul(dy, A, 1, 1)
Grads vjp_matmul(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  bool ta = a.node.iattrs.at(0) != 0, tb = a.node.iattrs.at(1) != 0;
  ValueId A = a.in(0), B = a.in(1), dy = a.dy[0];
  if (a.need[0]) d[0] = ta ? g.matmul(B, dy, tb, true) : g.matmul(dy, B, false, !tb);
  if (a.need[1]) d[1] = tb ? g.matmul(dy, A, true, ta) : g.matmul(A, dy, !ta, false);
  return d;
}

// ---------------------------------------------------------------- reference

// y[.., M, N] = op(a)[.., M, K] @ op(b)[.., K, N].
void op_matmul(const ReferenceCtx& c) {
  const auto& a = c.f(0);
  const auto& b = c.f(1);
  const Shape& as = c.shape_in(0);
  const Shape& bs = c.shape_in(1);
  bool ta = c.ia(0) != 0, tb = c.ia(1) != 0;
  size_t r = as.size();
  int64_t M = ta ? as[r - 1] : as[r - 2];
  int64_t K = ta ? as[r - 2] : as[r - 1];
  int64_t N = tb ? bs[r - 2] : bs[r - 1];
  int64_t batch = prod(as, 0, r - 2);
  HostTensor& y = c.out(0);
  std::vector<double> arow(static_cast<size_t>(K)), row(static_cast<size_t>(N));
  std::vector<float> bt(tb ? static_cast<size_t>(K * N) : 0);
  for (int64_t p = 0; p < batch; ++p) {
    const float* A = a.data() + p * M * K;
    const float* B = b.data() + p * K * N;
    float* Y = y.f32.data() + p * M * N;
    if (tb) {  // materialize op(b) = b^T as a row-major [K, N]
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) bt[static_cast<size_t>(k * N + n)] = B[n * K + k];
      B = bt.data();
    }
    for (int64_t i = 0; i < M; ++i) {
      // Row i of op(a), gathered once.
      for (int64_t k = 0; k < K; ++k) arow[static_cast<size_t>(k)] = ta ? A[k * M + i] : A[i * K + k];
      // i-k-j: row i of y accumulates arow[k] * (row k of op(b)).
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t k = 0; k < K; ++k) {
        double aik = arow[static_cast<size_t>(k)];
        const float* Bk = B + k * N;
        for (int64_t j = 0; j < N; ++j) row[static_cast<size_t>(j)] += aik * Bk[j];
      }
      for (int64_t j = 0; j < N; ++j) Y[i * N + j] = static_cast<float>(row[static_cast<size_t>(j)]);
    }
  }
}

}  // namespace

void register_matmul_ops(OpDefs& defs) { defs[KILN_OP_MATMUL] = {vjp_matmul, op_matmul}; }

}  // namespace kiln::graph
