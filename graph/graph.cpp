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
  Node n{op, std::move(inputs), {}, std::move(iattrs), std::move(fattrs), current_unit_};
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

// The builder helpers (Graph::add, Graph::layernorm, ...) live with the rest
// of each op in graph/ops/.

}  // namespace kiln::graph
