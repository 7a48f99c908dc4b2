#include "graph/decompose.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "graph/ops/op_def.h"

namespace kiln::graph {

namespace {

// A decomposition deeper than this is a composite built from itself.
constexpr int kMaxDepth = 16;

[[noreturn]] void bad_decomposition(const Node& n, const std::string& why) {
  throw Error(fmt::format("graph: the decomposition of {} {}", op_name(n.op), why));
}

// Appends node `n`'s decomposition to `out` and returns its nodes, rewritten
// so that they produce n's own output values (the values the decomposition
// returned are dropped: nothing else refers to them yet).
std::vector<Node> expand(Graph& out, const Node& n) {
  const size_t first = out.nodes().size();
  out.set_unit(n.unit);
  const std::vector<ValueId> made = op_def(n.op).decompose(out, n);
  std::vector<Node> nodes(out.nodes().begin() + static_cast<long>(first), out.nodes().end());
  if (made.size() != n.outputs.size())
    bad_decomposition(n, fmt::format("gave {} values for {} outputs", made.size(), n.outputs.size()));
  for (size_t k = 0; k < made.size(); ++k) {
    const Value& want = out.value(n.outputs[k]);
    const Value& got = out.value(made[k]);
    if (got.producer < static_cast<int>(first) || std::count(made.begin(), made.end(), made[k]) != 1)
      bad_decomposition(n, fmt::format("must make output {} with a node of its own", k));
    if (got.dtype != want.dtype || got.shape != want.shape)
      bad_decomposition(n, fmt::format("gives output {} another dtype or shape", k));
    for (Node& m : nodes) {
      std::replace(m.inputs.begin(), m.inputs.end(), made[k], n.outputs[k]);
      std::replace(m.outputs.begin(), m.outputs.end(), made[k], n.outputs[k]);
    }
  }
  return nodes;
}

}  // namespace

bool is_composite(kiln_op op) { return op_def(op).decompose != nullptr; }

bool runs_all_pieces(const Graph& g, const Node& n, const KeepNode& keep) {
  // n alone in a graph of its own: its decomposition depends only on its
  // inputs' dtypes and shapes and its attributes, as do the plugin's answers.
  Graph alone;
  std::vector<ValueId> inputs;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Value& v = g.value(n.inputs[k]);
    inputs.push_back(alone.input("in" + std::to_string(k), v.dtype, v.shape));
  }
  std::vector<Shape> shapes;
  for (ValueId v : n.outputs) shapes.push_back(g.shape(v));
  alone.add_node(n.op, inputs, n.iattrs, n.fattrs, shapes);
  const Graph pieces = expand_composites(alone, keep);
  return std::all_of(pieces.nodes().begin(), pieces.nodes().end(), [&](const Node& m) { return keep(pieces, m); });
}

Graph expand_composites(const Graph& g, const KeepNode& keep) {
  Graph out = g;
  for (int depth = 0;; ++depth) {
    const std::vector<Node> nodes = out.nodes();
    std::vector<Node> order;
    bool expanded = false;
    for (const Node& n : nodes) {
      if (!is_composite(n.op) || keep(out, n)) {
        order.push_back(n);
        continue;
      }
      if (depth == kMaxDepth) bad_decomposition(n, "does not end (a composite made of itself?)");
      for (Node& m : expand(out, n)) order.push_back(std::move(m));
      expanded = true;
    }
    if (!expanded) return out;
    out.set_unit(g.unit());
    out.set_nodes(std::move(order));
  }
}

}  // namespace kiln::graph
