// Reverse-mode automatic differentiation over the graph IR.
//
// backward() walks the forward nodes in reverse topological order, starting
// from the loss with a seed of 1, and for each node that (a) the loss
// depends on and (b) depends on something in `wrt`, appends the nodes of
// that op's vector-Jacobian product. A value with several consumers gets the
// sum (ADD) of their contributions. Everything else is pruned: no node is
// emitted for a branch the loss does not read or that no `wrt` value feeds.
//
// One rule per differentiable forward op (the vjp_* functions below). The
// ops that have no rule -- FILL (no inputs), ADAMW and the *_GRAD ops -- are
// an error only if the loss reaches a `wrt` value through them; integer
// values (ids, targets) never carry a gradient.
#include "graph/autodiff.h"

#include <numeric>
#include <set>
#include <string>

#include "core/error.h"

namespace kiln::graph {
namespace {

constexpr ValueId kNone = -1;

// What a rule sees: the node (a copy -- appending nodes may move the
// graph's storage), the gradient of each output (kNone if the loss does not
// depend on that output), and which inputs need a gradient.
struct VjpArgs {
  const Node& node;
  const std::vector<ValueId>& dy;
  const std::vector<bool>& need;

  ValueId in(size_t i) const { return node.inputs.at(i); }
  ValueId out(size_t i) const { return node.outputs.at(i); }
};
// A rule returns one entry per input: its gradient, or kNone.
using Grads = std::vector<ValueId>;

[[noreturn]] void fail(const std::string& why) { throw Error("autodiff: " + why); }

Grads none_for(const VjpArgs& a) { return Grads(a.node.inputs.size(), kNone); }

// Sums a gradient of `dy`'s shape down to `shape`, a suffix of it: the
// adjoint of suffix broadcasting.
ValueId reduce_to(Graph& g, ValueId dy, const Shape& shape) {
  if (g.shape(dy) == shape) return dy;
  return g.sum_to(dy, shape);
}

// ---------------------------------------------------------------- rules

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

// y = table[ids]: dtable = scatter-add of dy rows; ids get nothing.
Grads vjp_embedding(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0]) d[0] = g.embedding_grad(a.dy[0], a.in(1), g.shape(a.in(0)).at(0));
  return d;
}

// y = layernorm(x, gamma, beta): one LAYERNORM_GRAD gives all three.
Grads vjp_layernorm(Graph& g, const VjpArgs& a) {
  std::vector<ValueId> r = g.layernorm_grad(a.in(0), a.in(1), a.dy[0], a.node.fattrs.at(0));
  Grads d = none_for(a);
  for (size_t i = 0; i < 3; ++i)
    if (a.need[i]) d[i] = r[i];
  return d;
}

// y = causal_softmax(x): dx = scale * y * (dy - sum(dy * y)), from y itself.
Grads vjp_causal_softmax(Graph& g, const VjpArgs& a) {
  return {g.softmax_grad(a.out(0), a.dy[0], a.node.fattrs.at(0))};
}

// loss = cross_entropy(logits, targets): dlogits scaled by dloss.
Grads vjp_cross_entropy(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0]) d[0] = g.cross_entropy_grad(a.in(0), a.in(1), a.dy[0]);
  return d;
}

// y = sum_to(x): dx = dy broadcast over x's leading dims. ADD broadcasts
// its second operand as a suffix, so dx = 0 + dy with a zero of x's shape.
Grads vjp_sum_to(Graph& g, const VjpArgs& a) {
  Shape xs = g.shape(a.in(0));
  if (g.shape(a.dy[0]) == xs) return {a.dy[0]};
  return {g.add(g.fill(xs, 0.0f), a.dy[0])};
}

// y = reshape(x): dx = reshape(dy) back to x's shape.
Grads vjp_reshape(Graph& g, const VjpArgs& a) { return {g.reshape(a.dy[0], Shape(g.shape(a.in(0))))}; }

// y = permute(x, perm): dx = permute(dy, inverse(perm)).
Grads vjp_permute(Graph& g, const VjpArgs& a) {
  const std::vector<int64_t>& perm = a.node.iattrs;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {g.permute(a.dy[0], inverse)};
}

// (y_0..y_{n-1}) = split(x): dx = concat of the output gradients, with a
// zero for each part the loss does not depend on.
Grads vjp_split(Graph& g, const VjpArgs& a) {
  std::vector<ValueId> parts;
  for (size_t i = 0; i < a.node.outputs.size(); ++i)
    parts.push_back(a.dy[i] != kNone ? a.dy[i] : g.fill(Shape(g.shape(a.out(i))), 0.0f));
  if (parts.size() == 1) return {parts[0]};
  return {g.concat(parts, a.node.iattrs.at(0))};
}

// y = concat(x_0..x_{n-1}): dx_i = the slice of dy that x_i occupies. SPLIT
// makes equal parts only, so dy is split into chunks of gcd(part sizes) and
// each x_i's chunks are concatenated back (a no-op when parts are equal).
// A node holds at most 255 outputs (the serialized count is a u8), which
// bounds how fine the chunks can be.
Grads vjp_concat(Graph& g, const VjpArgs& a) {
  size_t n = a.node.inputs.size();
  size_t axis = static_cast<size_t>(a.node.iattrs.at(0));
  if (n == 1) return {a.dy[0]};
  std::vector<int64_t> sizes(n);
  int64_t chunk = 0, total = 0;
  for (size_t i = 0; i < n; ++i) {
    sizes[i] = g.shape(a.in(i)).at(axis);
    chunk = std::gcd(chunk, sizes[i]);
    total += sizes[i];
  }
  int64_t chunks = total / chunk;
  if (chunks > 255)
    fail("cannot differentiate concat along axis " + std::to_string(axis) +
         " of unequal parts: " + "it needs a split into " + std::to_string(chunks) +
         " equal chunks (gcd of part sizes " + std::to_string(chunk) +
         "), more than a node's 255 outputs; make the parts equal or of sizes with a larger common divisor");
  std::vector<ValueId> pieces = g.split(a.dy[0], static_cast<int64_t>(axis), chunks);
  Grads d = none_for(a);
  int64_t at = 0;  // chunk index where x_i starts
  for (size_t i = 0; i < n; ++i) {
    int64_t count = sizes[i] / chunk;
    if (a.need[i]) {
      std::vector<ValueId> mine(pieces.begin() + at, pieces.begin() + at + count);
      d[i] = mine.size() == 1 ? mine[0] : g.concat(mine, static_cast<int64_t>(axis));
    }
    at += count;
  }
  return d;
}

// y [1] = sum(x^2): dx = 2 * x * dy. dy is [1], which MUL can broadcast only
// over a last dim of 1, so x is viewed as [numel, 1] for the product.
Grads vjp_sum_squares(Graph& g, const VjpArgs& a) {
  Shape xs = g.shape(a.in(0));
  ValueId column = g.reshape(a.in(0), {numel(xs), 1});
  ValueId prod = g.mul(column, a.dy[0]);
  return {g.scale(g.reshape(prod, xs), 2.0f)};
}

// Tensor parallelism. y = sum over the group of x, where every rank goes on
// with the same y (Megatron's reduce-from-tensor-parallel-region): each
// rank's dy is already the whole gradient, so dx = dy. A max carries no
// gradient; it only ever feeds the stop-gradient rowmax below.
Grads vjp_all_reduce(Graph&, const VjpArgs& a) {
  if (a.node.iattrs.at(0) != 0) fail("the loss is differentiated through an all_reduce max, which has no gradient");
  return {a.dy[0]};
}

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

Grads vjp(Graph& g, const VjpArgs& a, int node_index) {
  switch (a.node.op) {
    case KILN_OP_ADD: return vjp_add(g, a);
    case KILN_OP_MUL: return vjp_mul(g, a);
    case KILN_OP_SCALE: return vjp_scale(g, a);
    case KILN_OP_GELU: return vjp_gelu(g, a);
    case KILN_OP_MATMUL: return vjp_matmul(g, a);
    case KILN_OP_EMBEDDING: return vjp_embedding(g, a);
    case KILN_OP_LAYERNORM: return vjp_layernorm(g, a);
    case KILN_OP_CAUSAL_SOFTMAX: return vjp_causal_softmax(g, a);
    case KILN_OP_CROSS_ENTROPY: return vjp_cross_entropy(g, a);
    case KILN_OP_SUM_TO: return vjp_sum_to(g, a);
    case KILN_OP_RESHAPE: return vjp_reshape(g, a);
    case KILN_OP_PERMUTE: return vjp_permute(g, a);
    case KILN_OP_SPLIT: return vjp_split(g, a);
    case KILN_OP_CONCAT: return vjp_concat(g, a);
    case KILN_OP_SUM_SQUARES: return vjp_sum_squares(g, a);
    case KILN_OP_ALL_REDUCE: return vjp_all_reduce(g, a);
    case KILN_OP_CROSS_ENTROPY_SHARD: return vjp_cross_entropy_shard(g, a);
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS: return vjp_cross_entropy_from_sums(g, a);
    case KILN_OP_ROW_MAX:
    case KILN_OP_CROSS_ENTROPY_SHARD_GRAD:
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD:
    case KILN_OP_FILL:
    case KILN_OP_GELU_GRAD:
    case KILN_OP_EMBEDDING_GRAD:
    case KILN_OP_LAYERNORM_GRAD:
    case KILN_OP_SOFTMAX_GRAD:
    case KILN_OP_CROSS_ENTROPY_GRAD:
    case KILN_OP_ADAMW:
    case KILN_OP_COUNT_: break;
  }
  fail(std::string("the loss depends on a value being differentiated through ") + op_name(a.node.op) + " (node " +
       std::to_string(node_index) + "), which has no gradient rule; differentiate before the backward/optimizer ops");
}

bool is_f32(const Graph& g, ValueId v) { return g.value(v).dtype == KILN_F32; }

}  // namespace

std::vector<ValueId> backward(Graph& g, ValueId loss, const std::vector<ValueId>& wrt,
                              const std::set<ValueId>& all_reduce_gradient_of) {
  const size_t num_values = g.values().size();
  const size_t num_nodes = g.nodes().size();  // only the forward nodes present now
  auto check_id = [&](ValueId v, const char* what) {
    if (v < 0 || static_cast<size_t>(v) >= num_values)
      fail(std::string(what) + " value id " + std::to_string(v) + " is not in the graph");
  };
  check_id(loss, "loss");
  if (!is_f32(g, loss) || g.shape(loss) != Shape{1})
    fail("the loss must be f32 [1], got " + std::string(is_f32(g, loss) ? "f32 " : "i32 ") + to_string(g.shape(loss)));
  for (ValueId w : wrt) check_id(w, "wrt");

  // depends[v]: v is an f32 value that some `wrt` value feeds (or is one).
  std::vector<bool> depends(num_values, false);
  for (ValueId w : wrt) depends[static_cast<size_t>(w)] = is_f32(g, w);
  for (size_t n = 0; n < num_nodes; ++n) {
    const Node& node = g.nodes()[n];
    bool any = false;
    for (ValueId v : node.inputs) any = any || depends[static_cast<size_t>(v)];
    if (any)
      for (ValueId v : node.outputs) depends[static_cast<size_t>(v)] = depends[static_cast<size_t>(v)] || is_f32(g, v);
  }

  // grad[v]: the value holding d(loss)/d(v), accumulated over consumers.
  std::vector<ValueId> grad(num_values, kNone);
  auto accumulate = [&](ValueId v, ValueId dv) {
    if (g.shape(dv) != g.shape(v))
      fail("internal: gradient " + to_string(g.shape(dv)) + " for value of shape " + to_string(g.shape(v)));
    ValueId& slot = grad[static_cast<size_t>(v)];
    slot = slot == kNone ? dv : g.add(slot, dv);
  };
  if (depends[static_cast<size_t>(loss)]) grad[static_cast<size_t>(loss)] = g.fill({1}, 1.0f);

  for (size_t n = num_nodes; n-- > 0;) {
    const Node node = g.nodes()[n];  // copy: rules append to g.nodes()
    std::vector<ValueId> dy;
    bool any_dy = false;
    for (ValueId v : node.outputs) {
      // Every consumer of v has added its part by now: v's gradient is whole.
      ValueId& dv = grad[static_cast<size_t>(v)];
      if (dv != kNone && all_reduce_gradient_of.count(v)) dv = g.all_reduce(dv);
      dy.push_back(dv);
      any_dy = any_dy || dy.back() != kNone;
    }
    if (!any_dy) continue;  // the loss does not depend on this node
    std::vector<bool> need;
    bool any_need = false;
    for (ValueId v : node.inputs) {
      need.push_back(depends[static_cast<size_t>(v)]);
      any_need = any_need || need.back();
    }
    if (!any_need) continue;  // no `wrt` value feeds this node
    Grads dx = vjp(g, VjpArgs{node, dy, need}, static_cast<int>(n));
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (need[i] && dx.at(i) != kNone) accumulate(node.inputs[i], dx[i]);
  }

  std::vector<ValueId> result;
  for (ValueId w : wrt) {
    ValueId d = grad[static_cast<size_t>(w)];
    result.push_back(d != kNone ? d : g.fill(Shape(g.shape(w)), 0.0f));
  }
  return result;
}

}  // namespace kiln::graph
