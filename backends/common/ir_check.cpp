#include "ir_check.h"

#include <algorithm>
#include <sstream>

namespace kiln::backend {

const char* op_name(kiln_op op) { return kiln_op_name(op); }

void decode_ir(const uint8_t* bytes, size_t size, ir::DecodedGraph* g, const char* backend) {
  if (bytes == nullptr && size != 0) fail(KILN_ERR_INVALID_ARGUMENT, "compile: ir is NULL");
  std::string err = ir::decode(bytes, size, g);
  if (err.empty()) return;
  // An op code from a newer IR is a capability gap, not corruption.
  if (err.rfind("IR node has unknown op", 0) == 0)
    fail(KILN_ERR_UNSUPPORTED, err + " (not supported by the " + backend + " backend)");
  fail(KILN_ERR_CORRUPT, err);
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
  int32_t code = KILN_ERR_INVALID_ARGUMENT;  // KILN_ERR_UNSUPPORTED: a valid op these plugins lack
};

class Checker {
 public:
  Checker(const ir::DecodedGraph& g, const ir::DecodedNode& n) : g_(g), n_(n) {}

  [[noreturn]] void bad(const std::string& why) const { throw Invalid{why}; }
  void arity(size_t ins, size_t outs) const {
    if (n_.inputs.size() != ins)
      bad("expects " + std::to_string(ins) + " inputs, got " + std::to_string(n_.inputs.size()));
    if (n_.outputs.size() != outs)
      bad("expects " + std::to_string(outs) + " outputs, got " + std::to_string(n_.outputs.size()));
  }
  void attrs(size_t ints, size_t floats) const {
    if (n_.iattrs.size() != ints)
      bad("expects " + std::to_string(ints) + " int attributes, got " + std::to_string(n_.iattrs.size()));
    if (n_.fattrs.size() != floats)
      bad("expects " + std::to_string(floats) + " float attributes, got " + std::to_string(n_.fattrs.size()));
  }
  const ir::DecodedValue& in(size_t i) const { return g_.values[n_.inputs[i]]; }
  const ir::DecodedValue& out(size_t i) const { return g_.values[n_.outputs[i]]; }
  const Dims& din(size_t i) const { return in(i).dims; }
  const Dims& dout(size_t i) const { return out(i).dims; }
  void f32_in(size_t i, const char* what) const {
    if (in(i).dtype != KILN_F32) bad(std::string(what) + " must be f32");
  }
  void i32_in(size_t i, const char* what) const {
    if (in(i).dtype != KILN_I32) bad(std::string(what) + " must be i32");
  }
  void out_is(size_t i, kiln_dtype dt, const Dims& d) const {
    if (out(i).dtype != dt || dout(i) != d)
      bad("output " + std::to_string(i) + " is " + (out(i).dtype == KILN_F32 ? "f32 " : "i32 ") + str(dout(i)) +
          ", expected " + (dt == KILN_F32 ? "f32 " : "i32 ") + str(d));
  }
  void same(size_t i, size_t j) const {
    if (din(i) != din(j))
      bad("input " + std::to_string(j) + " " + str(din(j)) + " differs from input " + std::to_string(i) + " " +
          str(din(i)));
  }

 private:
  const ir::DecodedGraph& g_;
  const ir::DecodedNode& n_;
};

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

void analyze_node(const ir::DecodedGraph& g, const ir::DecodedNode& n, NodeInfo* p) {
  Checker c(g, n);
  p->op = n.op;
  switch (n.op) {
    case KILN_OP_FILL:
      c.arity(0, 1);
      c.attrs(0, 1);
      if (c.out(0).dtype != KILN_F32) c.bad("output must be f32");
      p->count = c.out(0).numel();
      return;
    case KILN_OP_ADD:
    case KILN_OP_MUL:
      c.arity(2, 1);
      c.attrs(0, 0);
      c.f32_in(0, "a");
      c.f32_in(1, "b");
      if (!is_suffix(c.din(1), c.din(0))) c.bad("b " + str(c.din(1)) + " is not a suffix of a " + str(c.din(0)));
      c.out_is(0, KILN_F32, c.din(0));
      p->count = c.in(0).numel();
      p->bcast = c.in(1).numel();
      return;
    case KILN_OP_SCALE:
    case KILN_OP_GELU:
      c.arity(1, 1);
      c.attrs(0, n.op == KILN_OP_SCALE ? 1 : 0);
      c.f32_in(0, "x");
      c.out_is(0, KILN_F32, c.din(0));
      p->count = c.in(0).numel();
      return;
    case KILN_OP_GELU_GRAD:
      c.arity(2, 1);
      c.attrs(0, 0);
      c.f32_in(0, "x");
      c.f32_in(1, "dy");
      c.same(0, 1);
      c.out_is(0, KILN_F32, c.din(0));
      p->count = c.in(0).numel();
      return;
    case KILN_OP_MATMUL: {
      c.arity(2, 1);
      c.attrs(2, 0);
      c.f32_in(0, "a");
      c.f32_in(1, "b");
      const Dims& a = c.din(0);
      const Dims& b = c.din(1);
      if (a.size() < 2 || a.size() != b.size()) c.bad("needs equal ranks >= 2, got " + str(a) + " and " + str(b));
      const size_t r = a.size();
      if (!std::equal(a.begin(), a.end() - 2, b.begin())) c.bad("batch dims differ: " + str(a) + " vs " + str(b));
      p->trans_a = n.iattrs[0] != 0;
      p->trans_b = n.iattrs[1] != 0;
      const int64_t m = p->trans_a ? a[r - 1] : a[r - 2], ka = p->trans_a ? a[r - 2] : a[r - 1];
      const int64_t kb = p->trans_b ? b[r - 1] : b[r - 2], nn = p->trans_b ? b[r - 2] : b[r - 1];
      if (ka != kb)
        c.bad("inner dims differ: " + str(a) + (p->trans_a ? "^T" : "") + " @ " + str(b) + (p->trans_b ? "^T" : ""));
      Dims y(a.begin(), a.end() - 2);
      y.push_back(m);
      y.push_back(nn);
      c.out_is(0, KILN_F32, y);
      p->batch = prod(a, 0, r - 2);
      p->m = m;
      p->n = nn;
      p->k = ka;
      return;
    }
    case KILN_OP_EMBEDDING: {
      c.arity(2, 1);
      c.attrs(0, 0);
      c.f32_in(0, "table");
      c.i32_in(1, "ids");
      if (c.din(0).size() != 2) c.bad("table must be [V, C], got " + str(c.din(0)));
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
      if (ids.empty()) c.bad("dy must have rank >= 1");
      const int64_t cols = ids.back();
      ids.pop_back();
      if (ids != c.din(1)) c.bad("dy " + str(c.din(0)) + " does not match ids " + str(c.din(1)));
      if (n.iattrs[0] <= 0) c.bad("vocab must be positive");
      if (n.iattrs[0] > (int64_t{1} << 31) - 2) c.bad("vocab too large");
      c.out_is(0, KILN_F32, {n.iattrs[0], cols});
      p->rows = c.in(1).numel();
      p->cols = cols;
      p->vocab = n.iattrs[0];
      if (p->rows > (int64_t{1} << 31) - 2) c.bad("too many ids");
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
      if (c.din(0).empty()) c.bad("x must have rank >= 1");
      const Dims cdim{c.din(0).back()};
      if (c.din(1) != cdim) c.bad("gamma must be " + str(cdim) + ", got " + str(c.din(1)));
      if (grad) {
        c.same(0, 2);
        c.out_is(0, KILN_F32, c.din(0));
        c.out_is(1, KILN_F32, cdim);
        c.out_is(2, KILN_F32, cdim);
      } else {
        if (c.din(2) != cdim) c.bad("beta must be " + str(cdim) + ", got " + str(c.din(2)));
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
      if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2]) c.bad("x must be [..., T, T], got " + str(x));
      c.out_is(0, KILN_F32, x);
      p->cols = x.back();
      p->rows = c.in(0).numel() / p->cols;
      return;
    }
    case KILN_OP_SOFTMAX_GRAD:
      c.arity(2, 1);
      c.attrs(0, 1);
      c.f32_in(0, "y");
      c.f32_in(1, "dy");
      c.same(0, 1);
      if (c.din(0).empty()) c.bad("y must have rank >= 1");
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
      if (c.din(0).size() != 2) c.bad("logits must be [N, V], got " + str(c.din(0)));
      if (c.din(1) != Dims{c.din(0)[0]})
        c.bad("targets must be [" + std::to_string(c.din(0)[0]) + "], got " + str(c.din(1)));
      if (grad) {
        c.f32_in(2, "dloss");
        if (c.din(2) != Dims{1}) c.bad("dloss must be [1], got " + str(c.din(2)));
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
        c.bad("output " + str(c.dout(0)) + " must be a non-empty f32 suffix of " + str(c.din(0)));
      p->cols = c.out(0).numel();
      p->rows = c.in(0).numel() / p->cols;
      return;
    case KILN_OP_RESHAPE:
      c.arity(1, 1);
      c.attrs(0, 0);
      if (c.out(0).dtype != c.in(0).dtype) c.bad("dtype changes");
      if (c.out(0).numel() != c.in(0).numel()) c.bad("cannot reshape " + str(c.din(0)) + " to " + str(c.dout(0)));
      p->count = c.in(0).numel();
      return;
    case KILN_OP_PERMUTE: {
      c.arity(1, 1);
      const Dims& x = c.din(0);
      if (n.iattrs.size() != x.size()) c.bad("perm rank differs from input rank");
      c.attrs(x.size(), 0);
      std::vector<bool> seen(x.size(), false);
      Dims y;
      for (int64_t q : n.iattrs) {
        if (q < 0 || q >= static_cast<int64_t>(x.size()) || seen[static_cast<size_t>(q)])
          c.bad("perm is not a permutation");
        seen[static_cast<size_t>(q)] = true;
        y.push_back(x[static_cast<size_t>(q)]);
      }
      c.out_is(0, c.in(0).dtype, y);
      p->count = c.in(0).numel();
      p->permute = plan_permute(x, n.iattrs);
      return;
    }
    case KILN_OP_SPLIT: {
      if (n.inputs.size() != 1) c.bad("expects 1 input");
      c.attrs(2, 0);
      const Dims& x = c.din(0);
      const int64_t axis = n.iattrs[0], parts = n.iattrs[1];
      if (axis < 0 || axis >= static_cast<int64_t>(x.size())) c.bad("axis out of range");
      const auto a = static_cast<size_t>(axis);
      if (parts <= 0 || x[a] % parts != 0)
        c.bad("dim " + std::to_string(x[a]) + " is not divisible into " + std::to_string(parts) + " parts");
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
      if (n.inputs.empty()) c.bad("needs inputs");
      if (n.outputs.size() != 1) c.bad("expects 1 output");
      c.attrs(1, 0);
      const int64_t axis = n.iattrs[0];
      Dims y = c.din(0);
      if (axis < 0 || axis >= static_cast<int64_t>(y.size())) c.bad("axis out of range");
      const auto a = static_cast<size_t>(axis);
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        Dims s = c.din(i);
        if (c.in(i).dtype != c.in(0).dtype) c.bad("input dtypes differ");
        if (s.size() != y.size()) c.bad("ranks differ");
        const int64_t d = s[a];
        s[a] = y[a];
        if (s != y) c.bad("shapes differ outside the axis");
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
      p->count = c.in(0).numel();
      return;
    case KILN_OP_ADAMW:
      c.arity(5, 3);
      c.attrs(1, 3);
      for (size_t i = 0; i < 5; ++i) c.f32_in(i, "every input");
      c.same(0, 1);
      c.same(0, 2);
      c.same(0, 3);
      if (c.din(4) != Dims{5}) c.bad("hparams must be [5], got " + str(c.din(4)));
      for (size_t i = 0; i < 3; ++i) c.out_is(i, KILN_F32, c.din(0));
      p->count = c.in(0).numel();
      p->weight_decay = n.iattrs[0] != 0;
      return;
    // Tensor parallelism: the collective is the host's (plugins never get
    // it) and the vocab-parallel cross-entropy pieces have no kernels in the
    // opencl and vulkan plugins; the host runs them on the cpu fallback.
    case KILN_OP_ALL_REDUCE:
    case KILN_OP_ROW_MAX:
    case KILN_OP_CROSS_ENTROPY_SHARD:
    case KILN_OP_CROSS_ENTROPY_SHARD_GRAD:
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS:
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD:
    case KILN_OP_COUNT_: break;
  }
  throw Invalid{"unsupported op", KILN_ERR_UNSUPPORTED};
}

}  // namespace

std::vector<NodeInfo> analyze(const ir::DecodedGraph& g) {
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ir::DecodedValue& val = g.values[v];
    for (int64_t d : val.dims)
      if (d <= 0) fail(KILN_ERR_INVALID_ARGUMENT, "value " + std::to_string(v) + " has an empty dim " + str(val.dims));
    // Kernels address tensors in 4-byte elements.
    if (val.offset % 4 != 0)
      fail(KILN_ERR_INVALID_ARGUMENT,
           "value " + std::to_string(v) + " is at an unaligned offset " + std::to_string(val.offset));
  }
  std::vector<NodeInfo> out(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::DecodedNode& n = g.nodes[i];
    try {
      analyze_node(g, n, &out[i]);
    } catch (const Invalid& e) {
      fail(e.code, "node " + std::to_string(i) + " (" + op_name(n.op) + "): " + e.message);
    }
  }
  return out;
}

}  // namespace kiln::backend
