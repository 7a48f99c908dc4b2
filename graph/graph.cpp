#include "graph/graph.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "kiln/op_rules.hpp"

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

const char* op_name(kiln_op op) { return kiln_op_name(op); }

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
  std::vector<ir::TensorType> in;
  for (ValueId v : inputs) {
    if (v < 0 || static_cast<size_t>(v) >= values_.size())
      throw Error(std::string("graph: ") + op_name(op) + ": input id out of range");
    in.push_back({values_[static_cast<size_t>(v)].dtype, values_[static_cast<size_t>(v)].shape});
  }
  // The op's rule (kiln/op_rules.hpp, shared with every plugin) is the
  // constructor's check: a malformed node fails here, where it is built.
  std::vector<ir::TensorType> out;
  const std::string err = ir::infer(op, in, iattrs, fattrs, output_shapes, &out);
  if (!err.empty()) throw Error(std::string("graph: ") + op_name(op) + ": " + err);
  Node n{op, std::move(inputs), {}, std::move(iattrs), std::move(fattrs)};
  int idx = static_cast<int>(nodes_.size());
  for (size_t i = 0; i < out.size(); ++i)
    n.outputs.push_back(new_value(out[i].dtype, out[i].dims, idx, static_cast<int>(i)));
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
