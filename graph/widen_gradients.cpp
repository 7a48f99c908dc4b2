#include "graph/widen_gradients.h"

#include <algorithm>
#include <vector>

namespace kiln::graph {

namespace {
bool reduces_over_tokens(kiln_op op) {
  return op == KILN_OP_MATMUL || op == KILN_OP_SUM_TO || op == KILN_OP_EMBEDDING_GRAD;
}
}  // namespace

Graph widen_f16_parameter_gradients(const Graph& g) {
  const std::vector<Node>& nodes = g.nodes();
  std::vector<int> readers(g.values().size(), 0);
  for (const Node& n : nodes)
    for (ValueId v : n.inputs) ++readers[static_cast<size_t>(v)];
  for (const Port& p : g.outputs()) ++readers[static_cast<size_t>(p.value)];

  Graph out = g;
  std::vector<Node> order;
  std::vector<bool> replaced(nodes.size(), false);
  std::vector<std::vector<Node>> widened(nodes.size());  // by the index of the op it replaces
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& cast = nodes[i];
    if (cast.op != KILN_OP_CAST || g.value(cast.outputs[0]).dtype != KILN_F32) continue;
    const Value& narrow = g.value(cast.inputs[0]);
    if (narrow.dtype != KILN_F16 || narrow.producer < 0 || readers[static_cast<size_t>(cast.inputs[0])] != 1) continue;
    const Node& op = nodes[static_cast<size_t>(narrow.producer)];
    if (!reduces_over_tokens(op.op) || op.outputs.size() != 1) continue;
    Node wide = op;
    for (ValueId& in : wide.inputs) {
      if (!kiln_dtype_is_float(g.value(in).dtype)) continue;
      out.set_unit(op.unit);
      in = out.cast(in, KILN_F32);  // appended at the end; moved below
      widened[static_cast<size_t>(narrow.producer)].push_back(out.nodes().back());
    }
    wide.outputs = {cast.outputs[0]};
    widened[static_cast<size_t>(narrow.producer)].push_back(wide);
    replaced[i] = replaced[static_cast<size_t>(narrow.producer)] = true;
  }
  out.set_unit(g.unit());
  // The widened op runs where the 16-bit one ran, in its unit; the CAST's
  // readers all came after it.
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (Node& n : widened[i]) order.push_back(std::move(n));
    if (!replaced[i]) order.push_back(nodes[i]);
  }
  out.set_nodes(std::move(order));
  return out;
}

}  // namespace kiln::graph
