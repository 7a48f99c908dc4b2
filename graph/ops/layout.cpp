// Data movement without arithmetic, any dtype: RESHAPE, PERMUTE, SPLIT, CONCAT.
// A bf16/f16 tensor moves as its 16-bit patterns, so even a NaN's payload
// arrives unchanged.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_layout_ops at the bottom.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::reshape(ValueId x, Shape shape) { return add_node(KILN_OP_RESHAPE, {x}, {}, {}, {std::move(shape)})[0]; }
ValueId Graph::permute(ValueId x, std::vector<int64_t> perm) {
  return add_node(KILN_OP_PERMUTE, {x}, std::move(perm))[0];
}
std::vector<ValueId> Graph::split(ValueId x, int64_t axis, int64_t parts) {
  return add_node(KILN_OP_SPLIT, {x}, {axis, parts});
}
ValueId Graph::concat(std::vector<ValueId> xs, int64_t axis) {
  return add_node(KILN_OP_CONCAT, std::move(xs), {axis})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

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
    parts.push_back(a.dy[i] != kNoGradient ? a.dy[i] : g.fill(Shape(g.shape(a.out(i))), 0.0f));
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
    autodiff_fail("cannot differentiate concat along axis " + std::to_string(axis) +
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

// ---------------------------------------------------------------- reference

void op_reshape(const ReferenceCtx& c) {
  const HostTensor& x = c.in(0);
  HostTensor& y = c.out(0);
  if (x.dtype != y.dtype) c.fail("dtype changes");
  y.f32 = x.f32;
  y.i32 = x.i32;
  y.bits = x.bits;
}

// Copies element-by-element from x into y with y.dims[i] = x.dims[perm[i]].
template <typename T>
void permute_into(const std::vector<T>& x, const Shape& xs, const std::vector<int64_t>& perm, std::vector<T>& y) {
  const size_t r = xs.size();
  std::vector<int64_t> xstride(r);  // row-major strides of x
  int64_t stride = 1;
  for (size_t i = r; i > 0; --i) {
    xstride[i - 1] = stride;
    stride *= xs[i - 1];
  }
  // For each element of y, peel its coordinates off the flat index (last
  // dim first); coordinate i of y is coordinate perm[i] of x.
  for (size_t k = 0; k < y.size(); ++k) {
    int64_t rest = static_cast<int64_t>(k), off = 0;
    for (size_t i = r; i > 0; --i) {
      size_t axis = static_cast<size_t>(perm[i - 1]);
      int64_t dim = xs[axis];  // = y.dims[i - 1]
      off += (rest % dim) * xstride[axis];
      rest /= dim;
    }
    y[k] = x[static_cast<size_t>(off)];
  }
}

void op_permute(const ReferenceCtx& c) {
  const HostTensor& x = c.in(0);
  HostTensor& y = c.out(0);
  if (x.dtype == KILN_F32) {
    permute_into(x.f32, x.shape, c.node.iattrs, y.f32);
  } else if (x.dtype == KILN_I32) {
    permute_into(x.i32, x.shape, c.node.iattrs, y.i32);
  } else {
    permute_into(x.bits, x.shape, c.node.iattrs, y.bits);
    y.widen_bits();
  }
}

// A tensor seen as [outer, dim(axis), inner].
struct AxisView {
  int64_t outer, dim, inner;
};

AxisView axis_view(const Shape& s, int64_t axis) {
  size_t a = static_cast<size_t>(axis);
  return {prod(s, 0, a), s[a], prod(s, a + 1, s.size())};
}

template <typename T>
void split_into(const ReferenceCtx& c, const std::vector<T>& x, std::vector<T> HostTensor::*field) {
  AxisView v = axis_view(c.shape_in(0), c.ia(0));
  int64_t parts = c.ia(1);
  int64_t d = v.dim / parts;
  for (int64_t p = 0; p < parts; ++p) {
    std::vector<T>& y = c.out(static_cast<size_t>(p)).*field;
    for (int64_t o = 0; o < v.outer; ++o)
      std::copy_n(x.begin() + (o * v.dim + p * d) * v.inner, d * v.inner, y.begin() + o * d * v.inner);
  }
}

void op_split(const ReferenceCtx& c) {
  const HostTensor& x = c.in(0);
  if (x.dtype == KILN_F32) {
    split_into(c, x.f32, &HostTensor::f32);
  } else if (x.dtype == KILN_I32) {
    split_into(c, x.i32, &HostTensor::i32);
  } else {
    split_into(c, x.bits, &HostTensor::bits);
    for (ValueId v : c.node.outputs) c.vals[static_cast<size_t>(v)].widen_bits();
  }
}

template <typename T>
void concat_into(const ReferenceCtx& c, std::vector<T> HostTensor::*field) {
  int64_t axis = c.ia(0);
  HostTensor& y = c.out(0);
  AxisView yv = axis_view(y.shape, axis);
  int64_t at = 0;  // running offset along the axis
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    const HostTensor& x = c.in(i);
    if (x.dtype != y.dtype) c.fail("input " + std::to_string(i) + " has a different dtype");
    AxisView xv = axis_view(x.shape, axis);
    for (int64_t o = 0; o < xv.outer; ++o)
      std::copy_n((x.*field).begin() + o * xv.dim * xv.inner, xv.dim * xv.inner,
                  (y.*field).begin() + (o * yv.dim + at) * yv.inner);
    at += xv.dim;
  }
}

void op_concat(const ReferenceCtx& c) {
  const kiln_dtype dtype = c.g.value(c.node.outputs.at(0)).dtype;
  if (dtype == KILN_F32) {
    concat_into(c, &HostTensor::f32);
  } else if (dtype == KILN_I32) {
    concat_into(c, &HostTensor::i32);
  } else {
    concat_into(c, &HostTensor::bits);
    c.vals[static_cast<size_t>(c.node.outputs.at(0))].widen_bits();
  }
}

}  // namespace

void register_layout_ops(OpDefs& defs) {
  defs[KILN_OP_RESHAPE] = {vjp_reshape, op_reshape};
  defs[KILN_OP_PERMUTE] = {vjp_permute, op_permute};
  defs[KILN_OP_SPLIT] = {vjp_split, op_split};
  defs[KILN_OP_CONCAT] = {vjp_concat, op_concat};
}

}  // namespace kiln::graph
