#include "graph/passes.h"

namespace kiln::graph {

Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live(g.values().size(), false);
  for (const Port& p : g.outputs()) live[static_cast<size_t>(p.value)] = true;
  std::vector<bool> keep(g.nodes().size(), false);
  for (size_t i = g.nodes().size(); i-- > 0;) {
    const Node& n = g.nodes()[i];
    for (ValueId v : n.outputs) keep[i] = keep[i] || live[static_cast<size_t>(v)];
    if (keep[i])
      for (ValueId v : n.inputs) live[static_cast<size_t>(v)] = true;
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (keep[i]) nodes.push_back(g.nodes()[i]);
  Graph out = g;
  out.set_nodes(std::move(nodes));
  return out;
}

}  // namespace kiln::graph
