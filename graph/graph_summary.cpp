#include "graph/graph_summary.h"

#include "core/hash.h"

namespace kiln::graph {

nlohmann::json graph_summary(const Graph& g) {
  // Shapes stay out of the structure hash: a train step at micro-batch 4
  // and at 8 has the same structure, and the cache can then say that the
  // shape is what differs.
  std::string structure;
  for (const Node& n : g.nodes()) structure += std::to_string(static_cast<int>(n.op)) + ",";
  nlohmann::json ports = nlohmann::json::object();
  for (const auto* list : {&g.inputs(), &g.outputs()})
    for (const Port& p : *list) {
      structure += "|" + p.name;
      ports[p.name] = g.shape(p.value);
    }
  return {{"structure", sha256_hex(structure.data(), structure.size())}, {"nodes", g.nodes().size()}, {"ports", ports}};
}

}  // namespace kiln::graph
