#include "graph/graph.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace kiln::graph {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string to_string(const Shape& s) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << ']';
  return o.str();
}

const char* op_name(kiln_op op) {
  switch (op) {
    case KILN_OP_FILL: return "fill";
    case KILN_OP_ADD: return "add";
    case KILN_OP_MUL: return "mul";
    case KILN_OP_SCALE: return "scale";
    case KILN_OP_GELU: return "gelu";
    case KILN_OP_GELU_GRAD: return "gelu_grad";
    case KILN_OP_MATMUL: return "matmul";
    case KILN_OP_EMBEDDING: return "embedding";
    case KILN_OP_EMBEDDING_GRAD: return "embedding_grad";
    case KILN_OP_LAYERNORM: return "layernorm";
    case KILN_OP_LAYERNORM_GRAD: return "layernorm_grad";
    case KILN_OP_CAUSAL_SOFTMAX: return "causal_softmax";
    case KILN_OP_SOFTMAX_GRAD: return "softmax_grad";
    case KILN_OP_CROSS_ENTROPY: return "cross_entropy";
    case KILN_OP_CROSS_ENTROPY_GRAD: return "cross_entropy_grad";
    case KILN_OP_SUM_TO: return "sum_to";
    case KILN_OP_RESHAPE: return "reshape";
    case KILN_OP_PERMUTE: return "permute";
    case KILN_OP_SPLIT: return "split";
    case KILN_OP_CONCAT: return "concat";
    case KILN_OP_SUM_SQUARES: return "sum_squares";
    case KILN_OP_ADAMW: return "adamw";
    case KILN_OP_ALL_REDUCE: return "all_reduce";
    case KILN_OP_ROW_MAX: return "row_max";
    case KILN_OP_CROSS_ENTROPY_SHARD: return "cross_entropy_shard";
    case KILN_OP_CROSS_ENTROPY_SHARD_GRAD: return "cross_entropy_shard_grad";
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS: return "cross_entropy_from_sums";
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD: return "cross_entropy_from_sums_grad";
    case KILN_OP_COUNT_: break;
  }
  return "unknown";
}

namespace {

[[noreturn]] void fail(kiln_op op, const std::string& why) {
  throw Error(std::string("graph: ") + op_name(op) + ": " + why);
}

void expect_arity(kiln_op op, const std::vector<TypedShape>& in, size_t n) {
  if (in.size() != n) fail(op, "expects " + std::to_string(n) + " inputs, got " + std::to_string(in.size()));
}

void expect_f32(kiln_op op, const TypedShape& t, const char* what) {
  if (t.dtype != KILN_F32) fail(op, std::string(what) + " must be f32");
}

bool is_suffix(const Shape& suffix, const Shape& s) {
  if (suffix.size() > s.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), s.end() - static_cast<long>(suffix.size()));
}

void expect_same(kiln_op op, const TypedShape& a, const TypedShape& b) {
  if (a.shape != b.shape) fail(op, "shape mismatch " + to_string(a.shape) + " vs " + to_string(b.shape));
}

}  // namespace

std::vector<TypedShape> infer(kiln_op op, const std::vector<TypedShape>& in, const std::vector<int64_t>& ia,
                              const std::vector<float>& fa, const std::vector<Shape>& out_shapes) {
  auto need_f = [&](size_t n) {
    if (fa.size() != n) fail(op, "expects " + std::to_string(n) + " float attributes");
  };
  auto need_i = [&](size_t n) {
    if (ia.size() != n) fail(op, "expects " + std::to_string(n) + " int attributes");
  };
  // The serialized form stores counts in one byte and ranks up to
  // KILN_IR_MAX_RANK; reject what it cannot represent here, where the graph
  // is built, rather than truncating later.
  if (in.size() > 255 || ia.size() > 255 || fa.size() > 255) fail(op, "more than 255 inputs or attributes");
  for (const auto& t : in) {
    if (t.shape.size() > KILN_IR_MAX_RANK) fail(op, "rank above " + std::to_string(KILN_IR_MAX_RANK));
    for (int64_t d : t.shape)
      if (d <= 0) fail(op, "input has non-positive dim in " + to_string(t.shape));
  }
  // Every op but the layout ones (which move any dtype) computes in f32,
  // apart from the integer ids/targets inputs checked per op below.
  auto all_f32_except = [&](std::initializer_list<size_t> int_inputs) {
    for (size_t i = 0; i < in.size(); ++i)
      if (std::find(int_inputs.begin(), int_inputs.end(), i) == int_inputs.end() && in[i].dtype != KILN_F32)
        fail(op, "input " + std::to_string(i) + " must be f32");
  };
  switch (op) {
    case KILN_OP_RESHAPE:
    case KILN_OP_PERMUTE:
    case KILN_OP_SPLIT:
    case KILN_OP_CONCAT: break;
    case KILN_OP_EMBEDDING:
    case KILN_OP_EMBEDDING_GRAD:
    case KILN_OP_CROSS_ENTROPY:
    case KILN_OP_CROSS_ENTROPY_GRAD:
    case KILN_OP_CROSS_ENTROPY_SHARD:
    case KILN_OP_CROSS_ENTROPY_SHARD_GRAD: all_f32_except({1}); break;
    default: all_f32_except({}); break;
  }
  if (op == KILN_OP_CONCAT)
    for (const auto& t : in)
      if (t.dtype != in[0].dtype) fail(op, "inputs have different dtypes");
  switch (op) {
    case KILN_OP_FILL:
      expect_arity(op, in, 0);
      need_f(1);
      if (out_shapes.size() != 1) fail(op, "needs its output shape");
      return {{KILN_F32, out_shapes[0]}};
    case KILN_OP_ADD:
    case KILN_OP_MUL:
      expect_arity(op, in, 2);
      expect_f32(op, in[0], "a");
      expect_f32(op, in[1], "b");
      if (!is_suffix(in[1].shape, in[0].shape))
        fail(op, "b " + to_string(in[1].shape) + " is not a suffix of a " + to_string(in[0].shape));
      return {in[0]};
    case KILN_OP_SCALE:
    case KILN_OP_GELU:
      expect_arity(op, in, 1);
      expect_f32(op, in[0], "x");
      if (op == KILN_OP_SCALE) need_f(1);
      return {in[0]};
    case KILN_OP_GELU_GRAD:
      expect_arity(op, in, 2);
      expect_same(op, in[0], in[1]);
      return {in[0]};
    case KILN_OP_MATMUL: {
      expect_arity(op, in, 2);
      need_i(2);
      const Shape& a = in[0].shape;
      const Shape& b = in[1].shape;
      expect_f32(op, in[0], "a");
      expect_f32(op, in[1], "b");
      if (a.size() < 2 || a.size() != b.size())
        fail(op, "needs equal ranks >= 2, got " + to_string(a) + " and " + to_string(b));
      size_t r = a.size();
      if (!std::equal(a.begin(), a.end() - 2, b.begin()))
        fail(op, "batch dims differ: " + to_string(a) + " vs " + to_string(b));
      int64_t m = ia[0] ? a[r - 1] : a[r - 2], ka = ia[0] ? a[r - 2] : a[r - 1];
      int64_t kb = ia[1] ? b[r - 1] : b[r - 2], n = ia[1] ? b[r - 2] : b[r - 1];
      if (ka != kb)
        fail(op,
             "inner dims differ: " + to_string(a) + (ia[0] ? "^T" : "") + " @ " + to_string(b) + (ia[1] ? "^T" : ""));
      Shape y(a.begin(), a.end() - 2);
      y.push_back(m);
      y.push_back(n);
      return {{KILN_F32, y}};
    }
    case KILN_OP_EMBEDDING: {
      expect_arity(op, in, 2);
      expect_f32(op, in[0], "table");
      if (in[0].shape.size() != 2) fail(op, "table must be [V, C]");
      if (in[1].dtype != KILN_I32) fail(op, "ids must be i32");
      Shape y = in[1].shape;
      y.push_back(in[0].shape[1]);
      return {{KILN_F32, y}};
    }
    case KILN_OP_EMBEDDING_GRAD: {
      expect_arity(op, in, 2);
      need_i(1);
      if (in[1].dtype != KILN_I32) fail(op, "ids must be i32");
      Shape ids = in[0].shape;
      if (ids.empty()) fail(op, "dy must have rank >= 1");
      int64_t c = ids.back();
      ids.pop_back();
      if (ids != in[1].shape)
        fail(op, "dy " + to_string(in[0].shape) + " does not match ids " + to_string(in[1].shape));
      if (ia[0] <= 0) fail(op, "vocab must be positive");
      return {{KILN_F32, {ia[0], c}}};
    }
    case KILN_OP_LAYERNORM:
    case KILN_OP_LAYERNORM_GRAD: {
      expect_arity(op, in, 3);
      need_f(1);
      if (in[0].shape.empty()) fail(op, "x must have rank >= 1");
      Shape c{in[0].shape.back()};
      if (in[1].shape != c) fail(op, "gamma must be " + to_string(c));
      if (op == KILN_OP_LAYERNORM) {
        if (in[2].shape != c) fail(op, "beta must be " + to_string(c));
        return {in[0]};
      }
      expect_same(op, in[0], in[2]);
      return {in[0], {KILN_F32, c}, {KILN_F32, c}};
    }
    case KILN_OP_CAUSAL_SOFTMAX:
      expect_arity(op, in, 1);
      need_f(1);
      if (in[0].shape.size() < 2 || in[0].shape.back() != in[0].shape[in[0].shape.size() - 2])
        fail(op, "x must be [..., T, T], got " + to_string(in[0].shape));
      return {in[0]};
    case KILN_OP_SOFTMAX_GRAD:
      expect_arity(op, in, 2);
      need_f(1);
      expect_same(op, in[0], in[1]);
      return {in[0]};
    case KILN_OP_CROSS_ENTROPY:
    case KILN_OP_CROSS_ENTROPY_GRAD: {
      expect_arity(op, in, op == KILN_OP_CROSS_ENTROPY ? 2 : 3);
      if (in[0].shape.size() != 2) fail(op, "logits must be [N, V]");
      if (in[1].dtype != KILN_I32 || in[1].shape != Shape{in[0].shape[0]}) fail(op, "targets must be i32 [N]");
      if (op == KILN_OP_CROSS_ENTROPY) return {{KILN_F32, {1}}};
      if (in[2].shape != Shape{1}) fail(op, "dloss must be [1]");
      return {in[0]};
    }
    case KILN_OP_SUM_TO:
      expect_arity(op, in, 1);
      if (out_shapes.size() != 1 || out_shapes[0].empty() || !is_suffix(out_shapes[0], in[0].shape))
        fail(op, "output must be a suffix of " + to_string(in[0].shape));
      return {{KILN_F32, out_shapes[0]}};
    case KILN_OP_RESHAPE:
      expect_arity(op, in, 1);
      if (out_shapes.size() != 1 || out_shapes[0].size() > KILN_IR_MAX_RANK ||
          numel(out_shapes[0]) != numel(in[0].shape))
        fail(op, "cannot reshape " + to_string(in[0].shape) +
                     (out_shapes.empty() ? std::string() : " to " + to_string(out_shapes[0])));
      return {{in[0].dtype, out_shapes[0]}};
    case KILN_OP_PERMUTE: {
      expect_arity(op, in, 1);
      const Shape& x = in[0].shape;
      if (ia.size() != x.size()) fail(op, "perm rank differs from input rank");
      std::vector<bool> seen(x.size(), false);
      Shape y;
      for (int64_t p : ia) {
        if (p < 0 || p >= static_cast<int64_t>(x.size()) || seen[static_cast<size_t>(p)])
          fail(op, "perm is not a permutation");
        seen[static_cast<size_t>(p)] = true;
        y.push_back(x[static_cast<size_t>(p)]);
      }
      return {{in[0].dtype, y}};
    }
    case KILN_OP_SPLIT: {
      expect_arity(op, in, 1);
      need_i(2);
      const Shape& x = in[0].shape;
      int64_t axis = ia[0], parts = ia[1];
      if (axis < 0 || axis >= static_cast<int64_t>(x.size())) fail(op, "axis out of range");
      if (parts <= 0 || parts > 255 || x[static_cast<size_t>(axis)] % parts != 0)
        fail(op, "dim " + std::to_string(x[static_cast<size_t>(axis)]) + " is not divisible into " +
                     std::to_string(parts) + " parts");
      Shape y = x;
      y[static_cast<size_t>(axis)] /= parts;
      return std::vector<TypedShape>(static_cast<size_t>(parts), {in[0].dtype, y});
    }
    case KILN_OP_CONCAT: {
      if (in.empty()) fail(op, "needs inputs");
      need_i(1);
      int64_t axis = ia[0];
      Shape y = in[0].shape;
      if (axis < 0 || axis >= static_cast<int64_t>(y.size())) fail(op, "axis out of range");
      for (size_t i = 1; i < in.size(); ++i) {
        Shape s = in[i].shape;
        if (s.size() != y.size()) fail(op, "ranks differ");
        int64_t d = s[static_cast<size_t>(axis)];
        s[static_cast<size_t>(axis)] = y[static_cast<size_t>(axis)];
        if (s != y) fail(op, "shapes differ outside the axis");
        y[static_cast<size_t>(axis)] += d;
      }
      return {{in[0].dtype, y}};
    }
    case KILN_OP_SUM_SQUARES:
      expect_arity(op, in, 1);
      expect_f32(op, in[0], "x");
      return {{KILN_F32, {1}}};
    case KILN_OP_ADAMW:
      expect_arity(op, in, 5);
      need_f(3);
      need_i(1);
      expect_same(op, in[0], in[1]);
      expect_same(op, in[0], in[2]);
      expect_same(op, in[0], in[3]);
      if (in[4].shape != Shape{5}) fail(op, "hparams must be [5]");
      return {in[0], in[0], in[0]};
    case KILN_OP_ALL_REDUCE:
      expect_arity(op, in, 1);
      need_i(1);
      if (ia[0] != 0 && ia[0] != 1) fail(op, "reduction must be 0 (sum) or 1 (max)");
      return {in[0]};
    case KILN_OP_ROW_MAX: {
      expect_arity(op, in, 1);
      if (in[0].shape.size() < 2) fail(op, "x must have rank >= 2, got " + to_string(in[0].shape));
      return {{KILN_F32, Shape(in[0].shape.begin(), in[0].shape.end() - 1)}};
    }
    case KILN_OP_CROSS_ENTROPY_SHARD:
    case KILN_OP_CROSS_ENTROPY_SHARD_GRAD: {
      expect_arity(op, in, op == KILN_OP_CROSS_ENTROPY_SHARD ? 3 : 4);
      if (in[0].shape.size() != 2) fail(op, "logits must be [N, V]");
      const int64_t n = in[0].shape[0];
      if (in[1].dtype != KILN_I32 || in[1].shape != Shape{n}) fail(op, "targets must be i32 [N]");
      if (in[2].shape != Shape{n}) fail(op, "rowmax must be [N]");
      if (op == KILN_OP_CROSS_ENTROPY_SHARD) return {{KILN_F32, {n, 2}}};
      if (in[3].shape != Shape{n, 2}) fail(op, "dsums must be [N, 2]");
      return {in[0]};
    }
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS:
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD:
      expect_arity(op, in, op == KILN_OP_CROSS_ENTROPY_FROM_SUMS ? 1 : 2);
      if (in[0].shape.size() != 2 || in[0].shape[1] != 2) fail(op, "sums must be [N, 2]");
      if (op == KILN_OP_CROSS_ENTROPY_FROM_SUMS) return {{KILN_F32, {1}}};
      if (in[1].shape != Shape{1}) fail(op, "dloss must be [1]");
      return {in[0]};
    case KILN_OP_COUNT_: break;
  }
  fail(op, "unknown op");
}

ValueId Graph::new_value(kiln_dtype dtype, Shape shape, int producer, int index) {
  values_.push_back(Value{dtype, std::move(shape), producer, index});
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Graph::input(const std::string& name, kiln_dtype dtype, Shape shape) {
  if (find_input(name)) throw Error("graph: duplicate input '" + name + "'");
  for (int64_t d : shape)
    if (d <= 0) throw Error("graph: input '" + name + "' has non-positive dim " + to_string(shape));
  ValueId v = new_value(dtype, std::move(shape), -1, 0);
  inputs_.push_back(Port{name, v, {}});
  return v;
}

void Graph::output(const std::string& name, ValueId v, const std::string& updates) {
  if (find_output(name)) throw Error("graph: duplicate output '" + name + "'");
  // Ports are bound to buffers by name: an output named like an input would
  // silently share the input's buffer.
  if (find_input(name))
    throw Error("graph: output '" + name +
                "' has the name of an input; name it apart (updates in place use `updates`)");
  if (!updates.empty()) {
    const Port* in = find_input(updates);
    if (!in) throw Error("graph: output '" + name + "' updates unknown input '" + updates + "'");
    if (value(in->value).shape != value(v).shape || value(in->value).dtype != value(v).dtype)
      throw Error("graph: output '" + name + "' does not match the input it updates");
  }
  outputs_.push_back(Port{name, v, updates});
}

const Port* Graph::find_input(const std::string& name) const {
  for (const auto& p : inputs_)
    if (p.name == name) return &p;
  return nullptr;
}

const Port* Graph::find_output(const std::string& name) const {
  for (const auto& p : outputs_)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<ValueId> Graph::add_node(kiln_op op, std::vector<ValueId> inputs, std::vector<int64_t> iattrs,
                                     std::vector<float> fattrs, const std::vector<Shape>& output_shapes) {
  std::vector<TypedShape> in;
  for (ValueId v : inputs) {
    if (v < 0 || static_cast<size_t>(v) >= values_.size())
      throw Error(std::string("graph: ") + op_name(op) + ": input id out of range");
    in.push_back({values_[static_cast<size_t>(v)].dtype, values_[static_cast<size_t>(v)].shape});
  }
  std::vector<TypedShape> out = infer(op, in, iattrs, fattrs, output_shapes);
  Node n{op, std::move(inputs), {}, std::move(iattrs), std::move(fattrs)};
  int idx = static_cast<int>(nodes_.size());
  for (size_t i = 0; i < out.size(); ++i)
    n.outputs.push_back(new_value(out[i].dtype, out[i].shape, idx, static_cast<int>(i)));
  nodes_.push_back(std::move(n));
  return nodes_.back().outputs;
}

void Graph::reindex() {
  for (auto& v : values_) v.producer = -1;
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (size_t o = 0; o < nodes_[i].outputs.size(); ++o) {
      auto& v = values_[static_cast<size_t>(nodes_[i].outputs[o])];
      v.producer = static_cast<int>(i);
      v.output_index = static_cast<int>(o);
    }
}

ValueId Graph::fill(Shape shape, float value) { return add_node(KILN_OP_FILL, {}, {}, {value}, {std::move(shape)})[0]; }
ValueId Graph::add(ValueId a, ValueId b) { return add_node(KILN_OP_ADD, {a, b})[0]; }
ValueId Graph::mul(ValueId a, ValueId b) { return add_node(KILN_OP_MUL, {a, b})[0]; }
ValueId Graph::scale(ValueId x, float s) { return add_node(KILN_OP_SCALE, {x}, {}, {s})[0]; }
ValueId Graph::gelu(ValueId x) { return add_node(KILN_OP_GELU, {x})[0]; }
ValueId Graph::gelu_grad(ValueId x, ValueId dy) { return add_node(KILN_OP_GELU_GRAD, {x, dy})[0]; }
ValueId Graph::matmul(ValueId a, ValueId b, bool ta, bool tb) {
  return add_node(KILN_OP_MATMUL, {a, b}, {ta ? 1 : 0, tb ? 1 : 0})[0];
}
ValueId Graph::embedding(ValueId table, ValueId ids) { return add_node(KILN_OP_EMBEDDING, {table, ids})[0]; }
ValueId Graph::embedding_grad(ValueId dy, ValueId ids, int64_t vocab) {
  return add_node(KILN_OP_EMBEDDING_GRAD, {dy, ids}, {vocab})[0];
}
ValueId Graph::layernorm(ValueId x, ValueId g, ValueId b, float eps) {
  return add_node(KILN_OP_LAYERNORM, {x, g, b}, {}, {eps})[0];
}
std::vector<ValueId> Graph::layernorm_grad(ValueId x, ValueId g, ValueId dy, float eps) {
  return add_node(KILN_OP_LAYERNORM_GRAD, {x, g, dy}, {}, {eps});
}
ValueId Graph::causal_softmax(ValueId x, float s) { return add_node(KILN_OP_CAUSAL_SOFTMAX, {x}, {}, {s})[0]; }
ValueId Graph::softmax_grad(ValueId y, ValueId dy, float s) {
  return add_node(KILN_OP_SOFTMAX_GRAD, {y, dy}, {}, {s})[0];
}
ValueId Graph::cross_entropy(ValueId logits, ValueId targets) {
  return add_node(KILN_OP_CROSS_ENTROPY, {logits, targets})[0];
}
ValueId Graph::cross_entropy_grad(ValueId logits, ValueId targets, ValueId dloss) {
  return add_node(KILN_OP_CROSS_ENTROPY_GRAD, {logits, targets, dloss})[0];
}
ValueId Graph::sum_to(ValueId x, Shape suffix) { return add_node(KILN_OP_SUM_TO, {x}, {}, {}, {std::move(suffix)})[0]; }
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
ValueId Graph::sum_squares(ValueId x) { return add_node(KILN_OP_SUM_SQUARES, {x})[0]; }
ValueId Graph::all_reduce(ValueId x, Reduction r) {
  return add_node(KILN_OP_ALL_REDUCE, {x}, {r == Reduction::Max ? 1 : 0})[0];
}
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
std::vector<ValueId> Graph::adamw(ValueId p, ValueId g, ValueId m, ValueId v, ValueId hp, float beta1, float beta2,
                                  float eps, bool wd) {
  return add_node(KILN_OP_ADAMW, {p, g, m, v, hp}, {wd ? 1 : 0}, {beta1, beta2, eps});
}

}  // namespace kiln::graph
