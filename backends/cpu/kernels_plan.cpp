// Validation and planning of decoded graphs (baseline build only; it runs
// once per compile/load, never per step). The checks mirror each op's
// definition in kiln/ir.h so a malformed graph is refused at compile with
// a message naming the node, instead of reading out of bounds at execute.
#include <algorithm>
#include <sstream>

#include "plan.h"

namespace kiln::cpu {

const char* op_name(kiln_op op) { return kiln_op_name(op); }

uint64_t NodePlan::scratch_bytes(int threads) const {
  const auto t = static_cast<uint64_t>(threads < 1 ? 1 : threads);
  switch (op) {
    case KILN_OP_LAYERNORM_GRAD: return t * 2 * static_cast<uint64_t>(cols) * sizeof(float);
    case KILN_OP_SUM_TO: return t * static_cast<uint64_t>(cols) * sizeof(float);
    case KILN_OP_CROSS_ENTROPY:
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS: return static_cast<uint64_t>(rows) * sizeof(double);
    case KILN_OP_SUM_SQUARES: return t * sizeof(double);
    default: return 0;
  }
}

namespace {

using Dims = std::vector<int64_t>;

std::string str(const Dims& d) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < d.size(); ++i) o << (i ? ", " : "") << d[i];
  o << ']';
  return o.str();
}

int64_t prod(const Dims& d, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= d[i];
  return n;
}

bool is_suffix(const Dims& suffix, const Dims& d) {
  return suffix.size() <= d.size() &&
         std::equal(suffix.begin(), suffix.end(), d.end() - static_cast<long>(suffix.size()));
}

struct Invalid {
  std::string message;
};

// Checks one node; throws Invalid with the reason.
class NodeChecker {
 public:
  NodeChecker(const ir::DecodedGraph& g, const ir::DecodedNode& n) : g_(g), n_(n) {}

  [[noreturn]] void fail(const std::string& why) const { throw Invalid{why}; }

  void arity(size_t ins, size_t outs) const {
    if (n_.inputs.size() != ins)
      fail("expects " + std::to_string(ins) + " inputs, got " + std::to_string(n_.inputs.size()));
    if (n_.outputs.size() != outs)
      fail("expects " + std::to_string(outs) + " outputs, got " + std::to_string(n_.outputs.size()));
  }
  void attrs(size_t ints, size_t floats) const {
    if (n_.iattrs.size() != ints)
      fail("expects " + std::to_string(ints) + " int attributes, got " + std::to_string(n_.iattrs.size()));
    if (n_.fattrs.size() != floats)
      fail("expects " + std::to_string(floats) + " float attributes, got " + std::to_string(n_.fattrs.size()));
  }
  const ir::DecodedValue& in(size_t i) const { return g_.values[n_.inputs[i]]; }
  const ir::DecodedValue& out(size_t i) const { return g_.values[n_.outputs[i]]; }
  const Dims& din(size_t i) const { return in(i).dims; }
  const Dims& dout(size_t i) const { return out(i).dims; }

  void f32_in(size_t i, const char* what) const {
    if (in(i).dtype != KILN_F32) fail(std::string(what) + " must be f32");
  }
  void i32_in(size_t i, const char* what) const {
    if (in(i).dtype != KILN_I32) fail(std::string(what) + " must be i32");
  }
  void out_is(size_t i, kiln_dtype dt, const Dims& d) const {
    if (out(i).dtype != dt || dout(i) != d)
      fail("output " + std::to_string(i) + " is " + (out(i).dtype == KILN_F32 ? "f32 " : "i32 ") + str(dout(i)) +
           ", expected " + (dt == KILN_F32 ? "f32 " : "i32 ") + str(d));
  }
  void same(size_t i, size_t j) const {
    if (din(i) != din(j))
      fail("input " + std::to_string(j) + " " + str(din(j)) + " differs from input " + std::to_string(i) + " " +
           str(din(i)));
  }

 private:
  const ir::DecodedGraph& g_;
  const ir::DecodedNode& n_;
};

PermutePlan plan_permute(const Dims& in_dims, const std::vector<int64_t>& perm) {
  // Drop size-1 dims: they move nothing.
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
  // Merge runs of output dims that are consecutive input dims.
  std::vector<std::pair<int, int>> groups;  // input dim range [first, last] per output group
  for (int src : p) {
    if (!groups.empty() && groups.back().second + 1 == src)
      groups.back().second = src;
    else
      groups.emplace_back(src, src);
  }
  // Collapsed input: groups ordered by where they start in the input.
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

void plan_node(const ir::DecodedGraph& g, const ir::DecodedNode& n, NodePlan* p) {
  NodeChecker c(g, n);
  p->op = n.op;
  p->in = n.inputs;
  p->out = n.outputs;
  p->fattrs = n.fattrs;
  switch (n.op) {
    case KILN_OP_FILL:
      c.arity(0, 1);
      c.attrs(0, 1);
      if (c.out(0).dtype != KILN_F32) c.fail("output must be f32");
      p->n = c.out(0).numel();
      return;
    case KILN_OP_ADD:
    case KILN_OP_MUL:
      c.arity(2, 1);
      c.attrs(0, 0);
      c.f32_in(0, "a");
      c.f32_in(1, "b");
      if (!is_suffix(c.din(1), c.din(0))) c.fail("b " + str(c.din(1)) + " is not a suffix of a " + str(c.din(0)));
      c.out_is(0, KILN_F32, c.din(0));
      p->n = c.in(0).numel();
      p->inner = c.in(1).numel();
      return;
    case KILN_OP_SCALE:
    case KILN_OP_GELU:
      c.arity(1, 1);
      c.attrs(0, n.op == KILN_OP_SCALE ? 1 : 0);
      c.f32_in(0, "x");
      c.out_is(0, KILN_F32, c.din(0));
      p->n = c.in(0).numel();
      return;
    case KILN_OP_GELU_GRAD:
      c.arity(2, 1);
      c.attrs(0, 0);
      c.f32_in(0, "x");
      c.f32_in(1, "dy");
      c.same(0, 1);
      c.out_is(0, KILN_F32, c.din(0));
      p->n = c.in(0).numel();
      return;
    case KILN_OP_MATMUL: {
      c.arity(2, 1);
      c.attrs(2, 0);
      c.f32_in(0, "a");
      c.f32_in(1, "b");
      const Dims& a = c.din(0);
      const Dims& b = c.din(1);
      if (a.size() < 2 || a.size() != b.size()) c.fail("needs equal ranks >= 2, got " + str(a) + " and " + str(b));
      const size_t r = a.size();
      if (!std::equal(a.begin(), a.end() - 2, b.begin())) c.fail("batch dims differ: " + str(a) + " vs " + str(b));
      p->trans_a = n.iattrs[0] != 0;
      p->trans_b = n.iattrs[1] != 0;
      const int64_t m = p->trans_a ? a[r - 1] : a[r - 2], ka = p->trans_a ? a[r - 2] : a[r - 1];
      const int64_t kb = p->trans_b ? b[r - 1] : b[r - 2], nn = p->trans_b ? b[r - 2] : b[r - 1];
      if (ka != kb)
        c.fail("inner dims differ: " + str(a) + (p->trans_a ? "^T" : "") + " @ " + str(b) + (p->trans_b ? "^T" : ""));
      Dims y(a.begin(), a.end() - 2);
      y.push_back(m);
      y.push_back(nn);
      c.out_is(0, KILN_F32, y);
      p->batch = prod(a, 0, r - 2);
      p->m = m;
      p->cols = nn;
      p->k = ka;
      return;
    }
    case KILN_OP_EMBEDDING: {
      c.arity(2, 1);
      c.attrs(0, 0);
      c.f32_in(0, "table");
      c.i32_in(1, "ids");
      if (c.din(0).size() != 2) c.fail("table must be [V, C], got " + str(c.din(0)));
      Dims y = c.din(1);
      y.push_back(c.din(0)[1]);
      c.out_is(0, KILN_F32, y);
      p->rows = c.in(1).numel();
      p->cols = c.din(0)[1];
      p->vocab = c.din(0)[0];
      return;
    }
    case KILN_OP_EMBEDDING_GRAD: {
      c.arity(2, 1);
      c.attrs(1, 0);
      c.f32_in(0, "dy");
      c.i32_in(1, "ids");
      Dims ids = c.din(0);
      if (ids.empty()) c.fail("dy must have rank >= 1");
      const int64_t cols = ids.back();
      ids.pop_back();
      if (ids != c.din(1)) c.fail("dy " + str(c.din(0)) + " does not match ids " + str(c.din(1)));
      if (n.iattrs[0] <= 0) c.fail("vocab must be positive");
      c.out_is(0, KILN_F32, {n.iattrs[0], cols});
      p->rows = c.in(1).numel();
      p->cols = cols;
      p->vocab = n.iattrs[0];
      return;
    }
    case KILN_OP_LAYERNORM:
    case KILN_OP_LAYERNORM_GRAD: {
      const bool grad = n.op == KILN_OP_LAYERNORM_GRAD;
      c.arity(3, grad ? 3 : 1);
      c.attrs(0, 1);
      c.f32_in(0, "x");
      c.f32_in(1, "gamma");
      c.f32_in(2, grad ? "dy" : "beta");
      if (c.din(0).empty()) c.fail("x must have rank >= 1");
      const Dims cdim{c.din(0).back()};
      if (c.din(1) != cdim) c.fail("gamma must be " + str(cdim) + ", got " + str(c.din(1)));
      if (grad) {
        c.same(0, 2);
        c.out_is(0, KILN_F32, c.din(0));
        c.out_is(1, KILN_F32, cdim);
        c.out_is(2, KILN_F32, cdim);
      } else {
        if (c.din(2) != cdim) c.fail("beta must be " + str(cdim) + ", got " + str(c.din(2)));
        c.out_is(0, KILN_F32, c.din(0));
      }
      p->cols = cdim[0];
      p->rows = c.in(0).numel() / p->cols;
      return;
    }
    case KILN_OP_CAUSAL_SOFTMAX: {
      c.arity(1, 1);
      c.attrs(0, 1);
      c.f32_in(0, "x");
      const Dims& x = c.din(0);
      if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2]) c.fail("x must be [..., T, T], got " + str(x));
      c.out_is(0, KILN_F32, x);
      p->cols = x.back();
      p->batch = c.in(0).numel() / (p->cols * p->cols);
      return;
    }
    case KILN_OP_SOFTMAX_GRAD:
      c.arity(2, 1);
      c.attrs(0, 1);
      c.f32_in(0, "y");
      c.f32_in(1, "dy");
      c.same(0, 1);
      if (c.din(0).empty()) c.fail("y must have rank >= 1");
      c.out_is(0, KILN_F32, c.din(0));
      p->cols = c.din(0).back();
      p->rows = c.in(0).numel() / p->cols;
      return;
    case KILN_OP_CROSS_ENTROPY:
    case KILN_OP_CROSS_ENTROPY_GRAD: {
      const bool grad = n.op == KILN_OP_CROSS_ENTROPY_GRAD;
      c.arity(grad ? 3 : 2, 1);
      c.attrs(0, 0);
      c.f32_in(0, "logits");
      c.i32_in(1, "targets");
      if (c.din(0).size() != 2) c.fail("logits must be [N, V], got " + str(c.din(0)));
      if (c.din(1) != Dims{c.din(0)[0]})
        c.fail("targets must be [" + std::to_string(c.din(0)[0]) + "], got " + str(c.din(1)));
      if (grad) {
        c.f32_in(2, "dloss");
        if (c.din(2) != Dims{1}) c.fail("dloss must be [1], got " + str(c.din(2)));
        c.out_is(0, KILN_F32, c.din(0));
      } else {
        c.out_is(0, KILN_F32, {1});
      }
      p->rows = c.din(0)[0];
      p->cols = c.din(0)[1];
      return;
    }
    case KILN_OP_SUM_TO:
      c.arity(1, 1);
      c.attrs(0, 0);
      c.f32_in(0, "x");
      if (c.out(0).dtype != KILN_F32 || c.dout(0).empty() || !is_suffix(c.dout(0), c.din(0)))
        c.fail("output " + str(c.dout(0)) + " must be a non-empty f32 suffix of " + str(c.din(0)));
      p->cols = c.out(0).numel();
      p->rows = c.in(0).numel() / p->cols;
      return;
    case KILN_OP_RESHAPE:
      c.arity(1, 1);
      c.attrs(0, 0);
      if (c.out(0).dtype != c.in(0).dtype) c.fail("dtype changes");
      if (c.out(0).numel() != c.in(0).numel()) c.fail("cannot reshape " + str(c.din(0)) + " to " + str(c.dout(0)));
      p->n = c.in(0).numel();
      return;
    case KILN_OP_PERMUTE: {
      c.arity(1, 1);
      const Dims& x = c.din(0);
      if (n.iattrs.size() != x.size()) c.fail("perm rank differs from input rank");
      c.attrs(x.size(), 0);
      std::vector<bool> seen(x.size(), false);
      Dims y;
      for (int64_t q : n.iattrs) {
        if (q < 0 || q >= static_cast<int64_t>(x.size()) || seen[static_cast<size_t>(q)])
          c.fail("perm is not a permutation");
        seen[static_cast<size_t>(q)] = true;
        y.push_back(x[static_cast<size_t>(q)]);
      }
      c.out_is(0, c.in(0).dtype, y);
      p->n = c.in(0).numel();
      p->permute = plan_permute(x, n.iattrs);
      return;
    }
    case KILN_OP_SPLIT: {
      if (n.inputs.size() != 1) c.fail("expects 1 input");
      c.attrs(2, 0);
      const Dims& x = c.din(0);
      const int64_t axis = n.iattrs[0], parts = n.iattrs[1];
      if (axis < 0 || axis >= static_cast<int64_t>(x.size())) c.fail("axis out of range");
      const auto a = static_cast<size_t>(axis);
      if (parts <= 0 || x[a] % parts != 0)
        c.fail("dim " + std::to_string(x[a]) + " is not divisible into " + std::to_string(parts) + " parts");
      c.arity(1, static_cast<size_t>(parts));
      Dims y = x;
      y[a] /= parts;
      for (size_t i = 0; i < n.outputs.size(); ++i) c.out_is(i, c.in(0).dtype, y);
      p->rows = prod(x, 0, a);
      p->parts = parts;
      p->inner = y[a] * prod(x, a + 1, x.size());
      return;
    }
    case KILN_OP_CONCAT: {
      if (n.inputs.empty()) c.fail("needs inputs");
      if (n.outputs.size() != 1) c.fail("expects 1 output");
      c.attrs(1, 0);
      const int64_t axis = n.iattrs[0];
      Dims y = c.din(0);
      if (axis < 0 || axis >= static_cast<int64_t>(y.size())) c.fail("axis out of range");
      const auto a = static_cast<size_t>(axis);
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        Dims s = c.din(i);
        if (c.in(i).dtype != c.in(0).dtype) c.fail("input dtypes differ");
        if (s.size() != y.size()) c.fail("ranks differ");
        const int64_t d = s[a];
        s[a] = y[a];
        if (s != y) c.fail("shapes differ outside the axis");
        y[a] += d;
      }
      c.out_is(0, c.in(0).dtype, y);
      const int64_t tail = prod(y, a + 1, y.size());
      p->rows = prod(y, 0, a);
      p->inner = y[a] * tail;
      for (size_t i = 0; i < n.inputs.size(); ++i) p->inners.push_back(c.din(i)[a] * tail);
      return;
    }
    case KILN_OP_SUM_SQUARES:
      c.arity(1, 1);
      c.attrs(0, 0);
      c.f32_in(0, "x");
      c.out_is(0, KILN_F32, {1});
      p->n = c.in(0).numel();
      return;
    case KILN_OP_ADAMW:
      c.arity(5, 3);
      c.attrs(1, 3);
      for (size_t i = 0; i < 5; ++i) c.f32_in(i, "every input");
      c.same(0, 1);
      c.same(0, 2);
      c.same(0, 3);
      if (c.din(4) != Dims{5}) c.fail("hparams must be [5], got " + str(c.din(4)));
      for (size_t i = 0; i < 3; ++i) c.out_is(i, KILN_F32, c.din(0));
      p->n = c.in(0).numel();
      p->flag = n.iattrs[0] != 0;
      return;
    case KILN_OP_ROW_MAX: {
      c.arity(1, 1);
      c.attrs(0, 0);
      c.f32_in(0, "x");
      const Dims& x = c.din(0);
      if (x.size() < 2) c.fail("x must have rank >= 2, got " + str(x));
      c.out_is(0, KILN_F32, Dims(x.begin(), x.end() - 1));
      p->cols = x.back();
      p->rows = c.in(0).numel() / p->cols;
      return;
    }
    case KILN_OP_CROSS_ENTROPY_SHARD:
    case KILN_OP_CROSS_ENTROPY_SHARD_GRAD: {
      const bool grad = n.op == KILN_OP_CROSS_ENTROPY_SHARD_GRAD;
      c.arity(grad ? 4 : 3, 1);
      c.attrs(0, 0);
      c.f32_in(0, "logits");
      c.i32_in(1, "targets");
      c.f32_in(2, "rowmax");
      if (c.din(0).size() != 2) c.fail("logits must be [N, V], got " + str(c.din(0)));
      const int64_t rows = c.din(0)[0];
      if (c.din(1) != Dims{rows}) c.fail("targets must be [" + std::to_string(rows) + "], got " + str(c.din(1)));
      if (c.din(2) != Dims{rows}) c.fail("rowmax must be [" + std::to_string(rows) + "], got " + str(c.din(2)));
      if (grad) {
        c.f32_in(3, "dsums");
        if (c.din(3) != Dims{rows, 2}) c.fail("dsums must be [" + std::to_string(rows) + ", 2], got " + str(c.din(3)));
        c.out_is(0, KILN_F32, c.din(0));
      } else {
        c.out_is(0, KILN_F32, {rows, 2});
      }
      p->rows = rows;
      p->cols = c.din(0)[1];
      return;
    }
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS:
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD: {
      const bool grad = n.op == KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD;
      c.arity(grad ? 2 : 1, 1);
      c.attrs(0, 0);
      c.f32_in(0, "sums");
      if (c.din(0).size() != 2 || c.din(0)[1] != 2) c.fail("sums must be [N, 2], got " + str(c.din(0)));
      if (grad) {
        c.f32_in(1, "dloss");
        if (c.din(1) != Dims{1}) c.fail("dloss must be [1], got " + str(c.din(1)));
        c.out_is(0, KILN_F32, c.din(0));
      } else {
        c.out_is(0, KILN_F32, {1});
      }
      p->rows = c.din(0)[0];
      return;
    }
    case KILN_OP_ALL_REDUCE:  // plan_graph refuses it before we get here
    case KILN_OP_COUNT_: break;
  }
  throw Invalid{"unsupported op"};
}

}  // namespace

PlanError plan_graph(const ir::DecodedGraph& g, std::vector<NodePlan>* plans) {
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ir::DecodedValue& val = g.values[v];
    for (int64_t d : val.dims)
      if (d <= 0)
        return {KILN_ERR_INVALID_ARGUMENT, "value " + std::to_string(v) + " has an empty dim " + str(val.dims)};
    if (val.offset % 4 != 0)
      return {KILN_ERR_INVALID_ARGUMENT,
              "value " + std::to_string(v) + " is at an unaligned offset " + std::to_string(val.offset)};
  }
  plans->assign(g.nodes.size(), {});
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::DecodedNode& n = g.nodes[i];
    if (static_cast<int>(n.op) >= KILN_OP_COUNT_)
      return {KILN_ERR_UNSUPPORTED, "node " + std::to_string(i) + ": op " + std::to_string(static_cast<int>(n.op)) +
                                        " is not supported by the cpu backend"};
    // A collective spans the ranks of a group: the host runs it over MPI
    // between compiled pieces of a graph, so no plugin ever executes one.
    if (n.op == KILN_OP_ALL_REDUCE)
      return {KILN_ERR_UNSUPPORTED,
              "node " + std::to_string(i) + ": all_reduce is a host collective, not supported by the cpu backend"};
    try {
      plan_node(g, n, &(*plans)[i]);
    } catch (const Invalid& e) {
      return {KILN_ERR_INVALID_ARGUMENT, "node " + std::to_string(i) + " (" + op_name(n.op) + "): " + e.message};
    }
  }
  return {};
}

}  // namespace kiln::cpu
